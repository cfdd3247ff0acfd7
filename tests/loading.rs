//! Loading a plugin directory: registration order, bad files, manifests,
//! and the compiled-code cache.

use toolhost::catalog::base_tool;
use toolhost::enrich::Enrichers;
use toolhost::plugin::CodeSource;
use toolhost_tests::{guest, plugin_dir, runtime, runtime_with_cache};

fn names(report: &toolhost::plugin::LoadReport) -> Vec<String> {
    report.plugins.iter().map(|p| p.name.to_string()).collect()
}

async fn chain_marker(report: &toolhost::plugin::LoadReport) -> String {
    let enrichers = Enrichers::new(&report.plugins);
    let tool = enrichers
        .enrich(base_tool("create_issue").unwrap())
        .await
        .unwrap();
    tool.schema.property("chain_marker").unwrap()["description"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn order_follows_file_names() {
    let dir = plugin_dir(&[
        ("20-b", "fixture_chain_b", None),
        ("10-a", "fixture_chain_a", None),
    ]);
    let (rt, _) = runtime();
    let report = rt.load_dir(dir.path()).await.unwrap();
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    assert_eq!(names(&report), ["a", "b"]);
    assert_eq!(chain_marker(&report).await, "A+B");
}

#[tokio::test(flavor = "multi_thread")]
async fn explicit_order_beats_file_names() {
    let dir = plugin_dir(&[
        ("10-a", "fixture_chain_a", Some("order = 2\n")),
        ("20-b", "fixture_chain_b", Some("order = 1\n")),
        ("00-format", "format_pipeline", None),
    ]);
    let (rt, _) = runtime();
    let report = rt.load_dir(dir.path()).await.unwrap();
    // Explicit orders first (lowest first), then the rest by file name.
    assert_eq!(names(&report), ["b", "a", "format"]);
    // B ran before A added the marker, so only A's part is left.
    assert_eq!(chain_marker(&report).await, "A");
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_files_are_named_and_the_rest_still_load() {
    let dir = plugin_dir(&[
        ("10-format", "format_pipeline", None),
        ("40-foreign", "fixture_foreign", None),
        ("50-future", "fixture_future", None),
        ("60-badmanifest", "fixture_chain_a", Some("order = \"first\"\n")),
        (
            "70-refuses",
            "fixture_trap",
            Some("[config]\ntrap_in = [\"supported_categories\"]\n"),
        ),
    ]);
    std::fs::write(dir.path().join("20-text.wasm"), "this is not wasm").unwrap();
    // The smallest valid core module: a module, not a component.
    std::fs::write(dir.path().join("30-core.wasm"), b"\0asm\x01\0\0\0").unwrap();
    std::fs::write(
        dir.path().join("80-disabled.wasm"),
        std::fs::read(guest("format_pipeline")).unwrap(),
    )
    .unwrap();
    std::fs::write(dir.path().join("80-disabled.toml"), "enabled = false\n").unwrap();

    let (rt, _) = runtime();
    let report = rt.load_dir(dir.path()).await.unwrap();
    assert_eq!(names(&report), ["format"]);
    assert_eq!(report.disabled.len(), 1);
    let error = |file: &str| {
        report
            .errors
            .iter()
            .find(|e| e.path.file_name().unwrap() == file)
            .unwrap_or_else(|| panic!("no error for {file}: {:?}", report.errors))
            .message
            .clone()
    };
    assert!(error("20-text.wasm").contains("not a WebAssembly file"));
    assert!(error("30-core.wasm").contains("core WebAssembly module, not a component"));
    assert!(error("40-foreign.wasm").contains("exports no toolhost world"));
    let future = error("50-future.wasm");
    assert!(
        future.contains("0.2.0") && future.contains("implements toolhost:plugin@0.1.0"),
        "{future}"
    );
    let manifest = error("60-badmanifest.wasm");
    assert!(
        manifest.contains("60-badmanifest.toml") && manifest.contains("line 1"),
        "{manifest}"
    );
    let refused = error("70-refuses.wasm");
    assert!(
        refused.contains("`refuses`") && refused.contains("supported-categories"),
        "{refused}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn second_start_compiles_nothing() {
    let cache = tempfile::tempdir().unwrap();
    let dir = plugin_dir(&[
        ("10-format", "format_pipeline", None),
        ("20-text", "text_tools", None),
    ]);
    let sources = |report: &toolhost::plugin::LoadReport| {
        report.plugins.iter().map(|p| p.code_source).collect::<Vec<_>>()
    };

    let (first, _) = runtime_with_cache(Some(cache.path().to_owned()));
    let report = first.load_dir(dir.path()).await.unwrap();
    assert_eq!(sources(&report), [CodeSource::Compiled, CodeSource::Compiled]);
    drop((report, first));

    let (second, _) = runtime_with_cache(Some(cache.path().to_owned()));
    let report = second.load_dir(dir.path()).await.unwrap();
    assert_eq!(sources(&report), [CodeSource::Cached, CodeSource::Cached]);

    // A changed component is a different entry: compiled again, even when
    // rewritten in place (what the cache recorded of the old file is stale).
    std::fs::copy(guest("fixture_chain_a"), dir.path().join("10-format.wasm")).unwrap();
    let report = second.load_dir(dir.path()).await.unwrap();
    assert_eq!(sources(&report), [CodeSource::Compiled, CodeSource::Cached]);
    let (third, _) = runtime_with_cache(Some(cache.path().to_owned()));
    let again = third.load_dir(dir.path()).await.unwrap();
    assert_eq!(sources(&again), [CodeSource::Cached, CodeSource::Cached]);
    assert_eq!(again.plugins[0].categories, report.plugins[0].categories);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_corrupt_cache_entry_is_recompiled() {
    let cache = tempfile::tempdir().unwrap();
    let dir = plugin_dir(&[("10-format", "format_pipeline", None)]);
    let (rt, _) = runtime_with_cache(Some(cache.path().to_owned()));
    rt.load_dir(dir.path()).await.unwrap();
    let entries = std::fs::read_dir(cache.path())
        .unwrap()
        .map(|e| e.unwrap().path());
    for entry in entries.filter(|p| p.extension().is_some_and(|e| e == "cwasm")) {
        std::fs::write(entry, b"garbage").unwrap();
    }
    let (rt, _) = runtime_with_cache(Some(cache.path().to_owned()));
    let report = rt.load_dir(dir.path()).await.unwrap();
    assert_eq!(report.plugins[0].code_source, CodeSource::Compiled);
    assert!(report.errors.is_empty());
}
