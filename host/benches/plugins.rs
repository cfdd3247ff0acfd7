//! Plugin-boundary costs, each against its native baseline in the same run:
//!
//! - `transform_args`: remap two keys of a ~1 KB argument object, natively on
//!   a `serde_json` map and through the Rust guest `fixture_remap` (on a
//!   reused instance, the default, and on a fresh instance per call), and
//!   the same call for a tool the guest leaves alone (`wasm_reused_untouched`:
//!   the fixed cost of entering the guest, without the handle calls);
//! - `transform_chain`: the transform-args chain of one call to a tool that
//!   none of 8 enrichers transforms (`get_issue`, claimed by all 8): 8 of
//!   `fixture_remap_v2` (0.2, which say so at enrich time, so the chain
//!   enters none), 8 of `fixture_remap` (0.1, which cannot say, so the
//!   chain enters each), against the chain with no enricher at all;
//! - `instantiate`: the cost of one fresh instance;
//! - `tools_list`: enriching 60 tools through four plugins.
//!
//! Needs the guest plugins (`make plugins`, or `TOOLHOST_GUEST_DIR` naming
//! a directory of them). Run with `make bench`; ratios are printed at the
//! end, and the targets written to `build/bench/plugins.json` for the one
//! table `make bench` prints. Every side runs on the allocator the
//! `toolhost` binary ships with (mimalloc). The peer, the same transform
//! in Extism, is measured by `bench/peers/extism` (outside the workspace:
//! it brings its own wasmtime), on the same arguments and allocator.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group};
use serde_json::{Map, Value, json};
use toolhost::catalog::ToolSpec;
use toolhost::catalog::base_catalog;
use toolhost::enrich::Enrichers;
use toolhost::plugin::{Plugin, Runtime, RuntimeOptions};

// The allocator the `toolhost` binary ships with (cli/src/main.rs): the
// boundary is measured as it runs there, and the native baseline beside it.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn guest(name: &str) -> PathBuf {
    let dir = std::env::var_os("TOOLHOST_GUEST_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../guest-plugins/target/wasm32-wasip2/release"),
        PathBuf::from,
    );
    let path = dir.join(format!("{name}.wasm"));
    assert!(
        path.is_file(),
        "{} is missing: run `make plugins` first",
        path.display()
    );
    path
}

/// A realistic ~1 KB create_issue argument object, the one the Extism peer
/// transforms too.
fn args_1kb() -> Map<String, Value> {
    let map: Map<String, Value> = serde_json::from_str(include_str!("create_issue.json")).unwrap();
    let size = Value::Object(map.clone()).to_string().len();
    assert!((950..1100).contains(&size), "argument object is {size} bytes");
    map
}

/// The guest's logic, natively.
fn remap_native(args: &mut Map<String, Value>) {
    if let Some(Value::String(name)) = args.shift_remove("priority") {
        let id = match name.as_str() {
            "urgent" => 1,
            "high" => 2,
            "low" => 4,
            _ => 3,
        };
        args.insert("priorityId".into(), json!(id));
    }
    if let Some(Value::String(user)) = args.shift_remove("assignee") {
        args.insert("assigneeId".into(), json!(format!("user:{user}")));
    }
}

struct Setup {
    rt: tokio::runtime::Runtime,
    _dir: tempfile::TempDir,
    _runtime: Runtime,
    fresh: std::sync::Arc<Plugin>,
    reused: std::sync::Arc<Plugin>,
    enrichers: Enrichers,
    /// 8 enrichers of 0.2 that do not transform `get_issue`.
    declared: Enrichers,
    /// 8 enrichers of 0.1, which are entered for every tool.
    legacy: Enrichers,
}

fn setup() -> Setup {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let copy = |from: &str, to: &str, manifest: Option<&str>| {
        std::fs::copy(guest(from), dir.path().join(format!("{to}.wasm"))).unwrap();
        if let Some(m) = manifest {
            std::fs::write(dir.path().join(format!("{to}.toml")), m).unwrap();
        }
    };
    copy("format_pipeline", "10-format", None);
    copy("fixture_chain_a", "20-a", None);
    copy("fixture_chain_b", "30-b", None);
    copy(
        "fixture_remap",
        "40-remap",
        Some("[limits]\ninstances = \"fresh\"\n"),
    );
    copy(
        "fixture_remap",
        "50-remap-reused",
        Some("[limits]\nmax_uses = 1000000\n"),
    );
    for i in 0..8 {
        let reused = Some("[limits]\nmax_uses = 1000000\n");
        copy("fixture_remap_v2", &format!("6{i}-declared-{i}"), reused);
        copy("fixture_remap", &format!("7{i}-legacy-{i}"), reused);
    }
    let runtime = Runtime::new(RuntimeOptions {
        cache_dir: None,
        ..RuntimeOptions::default()
    })
    .unwrap();
    let report = rt.block_on(runtime.load_dir(dir.path())).unwrap();
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    let find = |name: &str| report.plugins.iter().find(|p| &*p.name == name).unwrap().clone();
    let (fresh, reused) = (find("remap"), find("remap-reused"));
    let enrichers = Enrichers::new(&report.plugins[..4]);
    let named = |prefix: &str| {
        let plugins: Vec<_> = report
            .plugins
            .iter()
            .filter(|p| p.name.starts_with(prefix))
            .cloned()
            .collect();
        assert_eq!(plugins.len(), 8, "{prefix}");
        Enrichers::new(&plugins)
    };
    Setup {
        rt,
        _dir: dir,
        _runtime: runtime,
        fresh,
        reused,
        enrichers,
        declared: named("declared-"),
        legacy: named("legacy-"),
    }
}

/// 60 tools: the base catalog plus uncategorised ones to make up the count.
fn sixty_tools() -> Vec<ToolSpec> {
    let mut tools = base_catalog().to_vec();
    let mut i = 0;
    while tools.len() < 60 {
        tools.push(ToolSpec {
            name: format!("local_tool_{i}"),
            description: "A local tool".into(),
            category: None,
            input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
            ..ToolSpec::default()
        });
        i += 1;
    }
    tools.truncate(60);
    tools
}

fn bench(c: &mut Criterion) {
    let s = setup();
    let args = args_1kb();
    let expected = {
        let mut a = args.clone();
        remap_native(&mut a);
        a
    };
    assert_eq!(
        s.rt.block_on(s.fresh.transform_args("create_issue", args.clone()))
            .unwrap(),
        expected
    );

    let mut g = c.benchmark_group("transform_args");
    // The same loop as the guest's below: a fresh copy of the arguments,
    // made just before the call (so it is in cache, as arguments parsed
    // from a request are) and out of the time, which counts the call and
    // dropping what it returns. `iter_batched` would make every copy of a
    // batch first, and the native side would pay for cache misses the
    // guest's side does not.
    g.bench_function("native", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let mut a = args.clone();
                let start = Instant::now();
                remap_native(&mut a);
                std::hint::black_box(a);
                total += start.elapsed();
            }
            total
        })
    });
    for (name, plugin, tool) in [
        ("wasm_reused_instance", &s.reused, "create_issue"),
        ("wasm_reused_untouched", &s.reused, "get_issue"),
        ("wasm_fresh_instance", &s.fresh, "create_issue"),
    ] {
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                s.rt.block_on(async {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let a = args.clone();
                        let start = Instant::now();
                        std::hint::black_box(plugin.transform_args(tool, a).await.unwrap());
                        total += start.elapsed();
                    }
                    total
                })
            })
        });
    }
    g.finish();

    // The chain each set of enrichers leaves for `get_issue` once the tool
    // list is built: who said at enrich time that they transform it.
    let get_issue = base_catalog()
        .iter()
        .find(|t| t.name == "get_issue")
        .unwrap()
        .clone();
    let chain = |enrichers: &Enrichers| {
        let listing = s.rt.block_on(enrichers.list(std::slice::from_ref(&get_issue)));
        enrichers.transformers(&listing.tools[0])
    };
    let (declared, legacy) = (chain(&s.declared), chain(&s.legacy));
    assert_eq!((declared.len(), legacy.len()), (0, 8));
    let mut g = c.benchmark_group("transform_chain");
    for (name, plugins) in [
        ("no_enricher", &[][..]),
        ("8_enrichers_none_transforms", &declared[..]),
        ("8_enrichers_of_0_1", &legacy[..]),
    ] {
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                s.rt.block_on(async {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let a = args.clone();
                        let start = Instant::now();
                        let out = Enrichers::transform_chain(plugins, "get_issue", a).await;
                        std::hint::black_box(out.unwrap());
                        total += start.elapsed();
                    }
                    total
                })
            })
        });
    }
    g.finish();

    c.bench_function("instantiate/fresh_instance", |b| {
        b.iter_custom(|iters| {
            s.rt.block_on(async {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    total += s.fresh.time_instantiation().await.unwrap();
                }
                total
            })
        })
    });

    let tools = sixty_tools();
    c.bench_function("tools_list/60_tools_4_plugins", |b| {
        b.iter_custom(|iters| {
            s.rt.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    std::hint::black_box(s.enrichers.list(&tools).await);
                }
                start.elapsed()
            })
        })
    });
}

/// Medians from criterion's own estimates, as ratios to each group's
/// baseline (native code; the chain with no enricher); the targets written
/// for `make bench`'s table.
fn summary() {
    // Where criterion writes: under the target directory it was built in.
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"),
        PathBuf::from,
    );
    let root = target.join("criterion");
    let median = |id: &str| -> Option<f64> {
        // Criterion keeps a group's benchmarks under `group/name`, and a
        // lone benchmark whose id has a `/` under `group_name`.
        let text = [id.to_owned(), id.replace('/', "_")]
            .iter()
            .find_map(|dir| std::fs::read_to_string(root.join(dir).join("new/estimates.json")).ok())?;
        let v: Value = serde_json::from_str(&text).ok()?;
        v["median"]["point_estimate"].as_f64()
    };
    let native = median("transform_args/native");
    let no_enricher = median("transform_chain/no_enricher");
    println!("\nsummary (medians):");
    for id in [
        "transform_args/native",
        "transform_args/wasm_reused_instance",
        "transform_args/wasm_reused_untouched",
        "transform_args/wasm_fresh_instance",
        "transform_chain/no_enricher",
        "transform_chain/8_enrichers_none_transforms",
        "transform_chain/8_enrichers_of_0_1",
        "instantiate/fresh_instance",
        "tools_list/60_tools_4_plugins",
    ] {
        let Some(ns) = median(id) else { continue };
        let ratio = match id.split('/').next() {
            Some("transform_args") => native.map(|n| format!("  ({:.1}x native)", ns / n)),
            Some("transform_chain") => no_enricher.map(|n| format!("  ({:.1}x no enricher)", ns / n)),
            _ => None,
        };
        println!("  {id:<44} {:>10.3} µs{}", ns / 1e3, ratio.unwrap_or_default());
    }
    let (Some(native), Some(wasm)) = (native, median("transform_args/wasm_reused_instance")) else {
        return;
    };
    let ratio = wasm / native;
    let targets = json!({"targets": [{
        "what": "transform_args on a reused instance",
        "measured": wasm / 1e3,
        "baseline_what": "the same transform natively",
        "baseline": native / 1e3,
        "unit": "µs",
        "ratio": ratio,
        "target": "ratio <= 2",
        "met": ratio <= 2.0,
    }]});
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("../build/bench");
    let written = std::fs::create_dir_all(&out)
        .and_then(|()| std::fs::write(out.join("plugins.json"), targets.to_string()));
    if let Err(e) = written {
        eprintln!("cannot write {}: {e}", out.join("plugins.json").display());
    }
}

criterion_group!(benches, bench);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    summary();
}
