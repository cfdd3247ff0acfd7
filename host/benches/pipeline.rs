//! A native `read` of a small file: called directly, through the pipeline
//! with no plugins, and through the pipeline with eight enrichers loaded
//! (eight copies of the `fixture_shout` guest, built by `make plugins`).
//! Run with `make bench`; compare the three medians.

use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Map, Value, json};
use toolhost::WebSettings;
use toolhost::internals::Sources;
use toolhost::internals::{NativeTools, Root, Urgency};
use toolhost::plugin::{Runtime, RuntimeOptions};
use toolhost::{CallControl, Toolhost};

// The allocator the `toolhost` binary ships with (cli/src/main.rs).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn native(dir: &Path) -> Arc<NativeTools> {
    Arc::new(NativeTools::new(Root::new(dir).unwrap(), WebSettings::default()).unwrap())
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let root = tempfile::tempdir().unwrap();
    let text: String = (1..=200).map(|i| format!("line {i} of the file\n")).collect();
    std::fs::write(root.path().join("file.txt"), text).unwrap();
    let args = json!({"path": "file.txt", "offset": 10, "limit": 50});
    let Value::Object(map) = args.clone() else {
        unreachable!()
    };
    let map: Map<String, Value> = map;

    let direct = native(root.path());
    let bare = rt
        .block_on(Toolhost::new(Sources {
            native: Some(native(root.path())),
            ..Sources::default()
        }))
        .unwrap();
    let guest = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../guest-plugins/target/wasm32-wasip2/release/fixture_shout.wasm");
    let plugins = tempfile::tempdir().unwrap();
    for i in 1..=8 {
        std::fs::copy(&guest, plugins.path().join(format!("{i}0-shout{i}.wasm")))
            .expect("fixture_shout.wasm: run `make plugins` first");
    }
    let runtime = Runtime::new(RuntimeOptions {
        cache_dir: None,
        ..RuntimeOptions::default()
    })
    .unwrap();
    let report = rt.block_on(runtime.load_dir(plugins.path())).unwrap();
    assert_eq!(report.plugins.len(), 8, "{:?}", report.errors);
    let enriched = rt
        .block_on(Toolhost::new(Sources {
            native: Some(native(root.path())),
            plugins: report.plugins,
            ..Sources::default()
        }))
        .unwrap();

    let ctx = CallControl::new("bench");
    let mut group = c.benchmark_group("read");
    group.bench_function("direct", |b| {
        b.iter(|| {
            rt.block_on(direct.execute("read", black_box(&map), Urgency::Call))
                .unwrap()
        })
    });
    group.bench_function("pipeline", |b| {
        b.iter(|| {
            rt.block_on(bare.call_tool("read", black_box(args.clone()), &ctx))
                .unwrap()
        })
    });
    group.bench_function("pipeline_8_enrichers", |b| {
        b.iter(|| {
            rt.block_on(enriched.call_tool("read", black_box(args.clone()), &ctx))
                .unwrap()
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
