//! The reference enricher in each language (`make lang-plugins` builds
//! them into `build/reference/`), measured through the real host in one
//! run: component size, compile time, cached load time, instantiation
//! time, the instance policy the host picked, and the median time of one
//! call of each enricher method.
//!
//! `make bench` (or `cargo bench -p toolhost --bench languages`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};
use toolhost::FollowUpLink;
use toolhost::ToolSchema;
use toolhost::catalog::base_tool;
use toolhost::plugin::{CodeSource, Plugin, Runtime, RuntimeOptions};

// The allocator the `toolhost` binary ships with (cli/src/main.rs).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const LANGS: [&str; 5] = ["rust", "js", "py", "c", "go"];
const CALLS: usize = 300;

fn runtime(cache: &Path) -> Runtime {
    Runtime::new(RuntimeOptions {
        cache_dir: Some(cache.to_owned()),
        log: Arc::new(|_| {}),
        ..RuntimeOptions::default()
    })
    .expect("runtime")
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn us(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e6)
}

/// Median time of `CALLS` runs of `call`.
async fn time<F, Fut>(mut call: F) -> Duration
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    call().await; // warm: the first call builds the plugin's state
    let mut samples = Vec::with_capacity(CALLS);
    for _ in 0..CALLS {
        let start = Instant::now();
        call().await;
        samples.push(start.elapsed());
    }
    median(samples)
}

async fn calls(plugin: &Plugin) -> Vec<(&'static str, Duration)> {
    let create = base_tool("create_issue").expect("catalog tool");
    let schema = ToolSchema::new(create.description.clone(), create.input_schema.clone()).expect("schema");
    let args: Map<String, Value> = serde_json::from_value(
        json!({"title": "t", "projectId": "WEB", "cf_story_points": 5, "cf_team": "Blue"}),
    )
    .expect("object");
    let result = json!({"issues": [{"key": "WEB-1"}, {"key": "WEB-2"}, {"key": "API-9"}]});
    let link = FollowUpLink {
        tool: "get_issue".into(),
        probability: 0.55,
        projection: Some("key".into()),
        projection_arg: Some("key".into()),
    };
    vec![
        (
            "enrich-schema",
            time(|| async {
                plugin
                    .enrich_schema("create_issue", schema.clone())
                    .await
                    .expect("enrich");
            })
            .await,
        ),
        (
            "transform-args",
            time(|| async {
                plugin
                    .transform_args("create_issue", args.clone())
                    .await
                    .expect("transform");
            })
            .await,
        ),
        (
            "value-model",
            time(|| async {
                plugin.value_model("get_issues").await.expect("model");
            })
            .await,
        ),
        (
            "project-args",
            time(|| async {
                plugin
                    .project_args("get_issues", &result, &link)
                    .await
                    .expect("project");
            })
            .await,
        ),
        (
            "rate-limit-host",
            time(|| async {
                plugin.rate_limit_host("get_issue", &args).await.expect("host");
            })
            .await,
        ),
    ]
}

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../build/reference");
    let rt = tokio::runtime::Runtime::new().expect("tokio");
    println!(
        "{:<5} {:>9} {:>11} {:>11} {:>10} {:<22} method medians (µs)",
        "lang", "size KB", "compile ms", "cached ms", "inst µs", "instances"
    );
    for lang in LANGS {
        let path = root.join(format!("reference-{lang}.wasm"));
        if !path.is_file() {
            println!("{lang:<5} missing: run `make lang-plugins`");
            continue;
        }
        rt.block_on(async {
            let cache = tempfile::tempdir().expect("temp dir");
            let compiled = runtime(cache.path()).load_file(&path).await.expect("load");
            assert_eq!(compiled.code_source, CodeSource::Compiled);
            // A new runtime over the same cache: the second start of a host.
            let cached = runtime(cache.path()).load_file(&path).await.expect("load");
            assert_eq!(
                cached.code_source,
                CodeSource::Cached,
                "{lang}: not served from the cache"
            );
            let mut inst = Vec::new();
            for _ in 0..20 {
                inst.push(cached.time_instantiation().await.expect("instantiate"));
            }
            let methods = calls(&cached).await;
            let methods: Vec<String> = methods.iter().map(|(m, d)| format!("{m} {}", us(*d))).collect();
            println!(
                "{lang:<5} {:>9} {:>11.1} {:>11.2} {:>10} {:<22} {}",
                cached.size_bytes / 1000,
                compiled.load_time.as_secs_f64() * 1e3,
                cached.load_time.as_secs_f64() * 1e3,
                us(median(inst)),
                format!("{:?}", cached.limits().instances),
                methods.join(", ")
            );
        });
    }
}
