//! Loading a plugin directory: registration order, bad files, manifests,
//! and the compiled-code cache.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use toolhost::catalog::base_tool;
use toolhost::enrich::Enrichers;

use toolhost::plugin::{CodeSource, LoadErrorKind};
use toolhost::supply::{self, Lock, TrustSettings, signature};
use toolhost_tests::{guest, load, plugin_dir, runtime, runtime_with_cache};

fn names(report: &toolhost::plugin::LoadReport) -> Vec<String> {
    report.plugins.iter().map(|p| p.name.to_string()).collect()
}

/// The directory `dir` loaded without the trust checks, then with them
/// (the defaults: neither a lock nor approvals asked for).
async fn both_ways(rt: &toolhost::plugin::Runtime, dir: &Path) -> [toolhost::plugin::LoadReport; 2] {
    [
        rt.load_dir(dir).await.unwrap(),
        supply::load_dir(rt, &TrustSettings::default(), dir)
            .await
            .unwrap(),
    ]
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
    let (report, _, _dir) = load(&[
        ("20-b", "fixture_chain_b", None),
        ("10-a", "fixture_chain_a", None),
    ])
    .await;
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

/// A component whose import name carries a terminal's escape codes and a
/// line of its own (it does not validate, and the validator quotes the
/// name): the load error shows the codes escaped and the line indented,
/// through the trust checks and without, so a file cannot colour
/// toolhost's output or forge a line of it. The names read from the file
/// before any compile (`toolhost approve` shows them, the lock keeps
/// them) refuse it, quoting the name escaped.
#[tokio::test(flavor = "multi_thread")]
async fn a_name_quoted_from_a_file_that_does_not_validate_is_escaped() {
    let dir = plugin_dir(&[("10-format", "format_pipeline", None)]);
    let name = "evil\x1b[31mRED\x1b[0m\nerror: a forged line";
    // `(component (import NAME (func)))`: a type section of one function
    // type, then an import section of one function import.
    let mut import = vec![1, 0x00, name.len() as u8];
    import.extend_from_slice(name.as_bytes());
    import.extend_from_slice(&[0x01, 0x00]);
    let mut bytes = b"\0asm\x0d\0\x01\0".to_vec();
    bytes.extend_from_slice(&[0x07, 0x05, 0x01, 0x40, 0x00, 0x01, 0x00, 0x0a, import.len() as u8]);
    bytes.extend_from_slice(&import);
    std::fs::write(dir.path().join("20-escape.wasm"), &bytes).unwrap();
    // The names read from the file before it is compiled (shown by
    // `toolhost approve`, written to the lock and the approvals, read from
    // a registry's layer): the file is refused, the name shown escaped.
    let refused = supply::interfaces(&bytes).err().expect("refused");
    assert_eq!(
        refused,
        r#"has an import named "evil\u{1b}[31mRED\u{1b}[0m\nerror: a forged line", which is no name the component model allows"#
    );

    let shown = |report: &toolhost::plugin::LoadReport| {
        assert_eq!(names(report), ["format"]);
        let [error] = &report.errors[..] else {
            panic!("{:?}", report.errors)
        };
        let text = error.to_string();
        assert!(!text.contains('\x1b'), "{text:?}");
        assert!(
            text.contains("evil\\u{1b}[31mRED\\u{1b}[0m\n  error: a forged line"),
            "{text}"
        );
        assert!(text.lines().skip(1).all(|line| line.starts_with("  ")), "{text}");
    };
    let (rt, _) = runtime();
    for report in both_ways(&rt, dir.path()).await {
        shown(&report);
    }
    let survey = supply::survey(&rt, &TrustSettings::default(), dir.path())
        .await
        .unwrap();
    let [error] = &survey.errors[..] else {
        panic!("{:?}", survey.errors)
    };
    assert!(error.message.contains(r#"named "evil\u{1b}[31mRED"#), "{error}");
}

/// A component file of gigabytes (a custom section the host never needs,
/// sparse on disk here) is refused from its size, unread, by every way a
/// file is loaded: the directory with and without the trust checks, and
/// one file alone (`toolhost check`). Read whole, it held as much memory
/// and seconds of reading before it was found to be no plugin. A sidecar
/// manifest of a gigabyte is refused likewise.
#[tokio::test(flavor = "multi_thread")]
async fn a_component_file_over_the_cap_is_refused_unread() {
    let dir = plugin_dir(&[("10-format", "format_pipeline", None)]);
    let huge = dir.path().join("20-huge.wasm");
    let name = b"padding";
    let payload: u64 = 2 << 30;
    let mut head = b"\0asm\x0d\0\x01\0\0".to_vec();
    let mut length = name.len() as u64 + 1 + payload;
    // The custom section's length, LEB128.
    loop {
        let byte = (length & 0x7f) as u8;
        length >>= 7;
        head.push(if length == 0 { byte } else { byte | 0x80 });
        if length == 0 {
            break;
        }
    }
    head.push(name.len() as u8);
    head.extend_from_slice(name);
    let file = std::fs::File::create(&huge).unwrap();
    std::io::Write::write_all(&mut &file, &head).unwrap();
    file.set_len(head.len() as u64 + payload).unwrap();

    let refused = |report: &toolhost::plugin::LoadReport| {
        assert_eq!(names(report), ["format"]);
        let [error] = &report.errors[..] else {
            panic!("{:?}", report.errors)
        };
        assert_eq!(error.kind, LoadErrorKind::TooLarge);
        assert!(error.path.ends_with("20-huge.wasm"), "{error}");
        assert!(
            error
                .message
                .contains("2049 MiB, over the 128 MiB a plugin component may be"),
            "{error}"
        );
    };
    let (rt, _) = runtime();
    for report in both_ways(&rt, dir.path()).await {
        refused(&report);
    }
    let alone = rt.load_file(&huge).await.err().expect("refused");
    assert_eq!(alone.kind, LoadErrorKind::TooLarge);

    // The manifest that comes with a plugin is capped the same way.
    std::fs::copy(guest("format_pipeline"), dir.path().join("30-fat.wasm")).unwrap();
    std::fs::File::create(dir.path().join("30-fat.toml"))
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    let report = rt.load_dir(dir.path()).await.unwrap();
    let fat = report
        .errors
        .iter()
        .find(|e| e.path.ends_with("30-fat.wasm"))
        .unwrap_or_else(|| panic!("{:?}", report.errors));
    assert_eq!(fat.kind, LoadErrorKind::Manifest);
    assert!(
        fat.message
            .ends_with("30-fat.toml: the file is 1024 MiB, over the 256 KiB a manifest may be"),
        "{fat}"
    );
}

/// A component shaped to take the compiler minutes (valid, 1.9 MB) is
/// compiled in a worker process (the `toolhost` binary, as the command line
/// compiles every plugin), which is stopped past its CPU time: the plugin is
/// refused naming why, and the plugin beside it, compiled by a worker too,
/// loads. In process, the load waited more than ten minutes. A copy of it
/// under another name shares its compile, and is refused the same way.
#[tokio::test(flavor = "multi_thread")]
async fn a_component_that_takes_the_compiler_minutes_is_stopped_past_its_cpu_time() {
    toolhost_tests::needs!(Python);
    let dir = plugin_dir(&[("10-format", "format_pipeline", None)]);
    toolhost_tests::compile_bomb(&dir.path().join("20-bomb.wasm"));
    std::fs::copy(
        dir.path().join("20-bomb.wasm"),
        dir.path().join("30-bomb-again.wasm"),
    )
    .unwrap();
    let runtime = compiling_in(toolhost_tests::toolhost_binary(), 3);
    // Bounded, so that a load waiting on the compile fails the test.
    let load = runtime.load_dir(dir.path());
    let report = tokio::time::timeout(std::time::Duration::from_secs(120), load)
        .await
        .expect("the load did not wait on the compile")
        .unwrap();
    assert_eq!(names(&report), ["format"]);
    let [bomb, again] = &report.errors[..] else {
        panic!("{:?}", report.errors)
    };
    assert!(bomb.path.ends_with("20-bomb.wasm"), "{bomb}");
    assert!(again.path.ends_with("30-bomb-again.wasm"), "{again}");
    for error in [bomb, again] {
        assert_eq!(error.kind, LoadErrorKind::CompileStopped);
        assert!(
            error
                .message
                .starts_with("its compile took over 3 s of CPU, and was stopped"),
            "{error}"
        );
    }
}

/// One component under three names, loaded at once with no cache, is
/// compiled once: the loads share the compile under way. Each compile is
/// counted by the worker it runs in (a script that notes it, then runs the
/// `toolhost` worker).
#[tokio::test(flavor = "multi_thread")]
async fn a_component_under_several_names_is_compiled_once() {
    let dir = plugin_dir(&[
        ("10-text", "text_tools", None),
        ("20-again", "text_tools", None),
        ("30-third", "text_tools", None),
        ("40-format", "format_pipeline", None),
    ]);
    let work = tempfile::tempdir().unwrap();
    let (script, count) = (work.path().join("worker.sh"), work.path().join("compiles"));
    let toolhost = toolhost_tests::toolhost_binary();
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho compiled >> '{}'\nexec '{}' \"$@\"\n",
            count.display(),
            toolhost.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let runtime = compiling_in(script, 60);
    let report = runtime.load_dir(dir.path()).await.unwrap();
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    assert_eq!(report.plugins.len(), 4);
    let compiles = std::fs::read_to_string(&count).unwrap().lines().count();
    assert_eq!(compiles, 2, "text_tools and format_pipeline, each once");
}

/// A runtime with no code cache that compiles in worker processes of
/// `program` (run as `toolhost __compile-plugin` is), each stopped past
/// `cpu_s` seconds of CPU or a minute more of wall time.
fn compiling_in(program: std::path::PathBuf, cpu_s: u64) -> toolhost::plugin::Runtime {
    toolhost::plugin::Runtime::new(toolhost::plugin::RuntimeOptions {
        cache_dir: None,
        compiler: toolhost::plugin::Compiler::Worker {
            program,
            args: vec!["__compile-plugin".into()],
            cpu: std::time::Duration::from_secs(cpu_s),
            wall: std::time::Duration::from_secs(cpu_s + 60),
        },
        ..Default::default()
    })
    .unwrap()
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
    };
    let expected = [
        ("20-text.wasm", LoadErrorKind::NotWebAssembly),
        ("30-core.wasm", LoadErrorKind::CoreModule),
        ("40-foreign.wasm", LoadErrorKind::NoToolhostWorld),
        ("50-future.wasm", LoadErrorKind::UnsupportedVersion),
        ("60-badmanifest.wasm", LoadErrorKind::Manifest),
        ("70-refuses.wasm", LoadErrorKind::Failed),
    ];
    let kinds: Vec<(&str, LoadErrorKind)> = expected
        .iter()
        .map(|&(file, _)| (file, error(file).kind))
        .collect();
    assert_eq!(kinds, expected);
    // The messages say what to do about it, naming the file's own facts.
    let future = &error("50-future.wasm").message;
    assert!(
        future.contains("toolhost:plugin@0.4.0")
            && future
                .contains("implements toolhost:plugin@0.1.0, toolhost:plugin@0.2.0, toolhost:plugin@0.3.0"),
        "{future}"
    );
    let manifest = &error("60-badmanifest.wasm").message;
    assert!(
        manifest.contains("60-badmanifest.toml") && manifest.contains("line 1"),
        "{manifest}"
    );
    let refused = &error("70-refuses.wasm").message;
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
    assert!(report.errors.is_empty(), "{:?}", report.errors);
}

/// A plugin's digest is that of the code that runs, loaded from the cache
/// without reading its file: replacing the file afterwards does not change
/// what the plugin says it is.
#[tokio::test(flavor = "multi_thread")]
async fn a_cached_plugin_is_named_by_the_digest_of_the_code_it_runs() {
    let cache = tempfile::tempdir().unwrap();
    let dir = plugin_dir(&[("10-text", "text_tools", None)]);
    let path = dir.path().join("10-text.wasm");
    let digest = supply::Digest::of(&std::fs::read(&path).unwrap()).to_string();
    let mut reports = Vec::new();
    for source in [CodeSource::Compiled, CodeSource::Cached] {
        let (rt, _) = runtime_with_cache(Some(cache.path().to_owned()));
        let report = rt.load_dir(dir.path()).await.unwrap();
        assert_eq!(sources(&report), [source]);
        assert_eq!(report.plugins[0].digest(), digest);
        reports.push(report);
    }
    std::fs::copy(guest("format_pipeline"), dir.path().join("other.wasm")).unwrap();
    std::fs::rename(dir.path().join("other.wasm"), &path).unwrap();
    for report in &reports {
        assert_eq!(report.plugins[0].digest(), digest);
    }
}

/// The entry of `cache` compiled from the component at `path`: named by
/// the component's digest.
fn cache_entry(cache: &Path, path: &Path) -> PathBuf {
    let digest = supply::Digest::of(&std::fs::read(path).unwrap()).to_string();
    let hex = digest.strip_prefix("sha256:").unwrap().to_owned();
    std::fs::read_dir(cache)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.starts_with(&hex) && name.ends_with(".cwasm")
        })
        .unwrap_or_else(|| panic!("no cache entry for {}", path.display()))
}

fn sources(report: &toolhost::plugin::LoadReport) -> Vec<CodeSource> {
    report.plugins.iter().map(|p| p.code_source).collect()
}

/// The tool names of plugin `name` in `report`.
fn tools_of(report: &toolhost::plugin::LoadReport, name: &str) -> Vec<String> {
    let plugin = report.plugins.iter().find(|p| &*p.name == name).unwrap();
    plugin.tools.iter().map(|t| t.name.clone()).collect()
}

/// Another plugin's valid compiled code, planted in the cache under a
/// signed and locked plugin's entry, never runs: the entry is checked at
/// every load, and the plugin is compiled again from its verified file.
#[tokio::test(flavor = "multi_thread")]
async fn a_planted_cache_entry_is_not_run_for_a_signed_locked_plugin() {
    let cache = tempfile::tempdir().unwrap();
    let dir = plugin_dir(&[
        ("10-text", "text_tools", None),
        ("20-format", "format_pipeline", None),
    ]);
    let keys = tempfile::tempdir().unwrap();
    let (secret, public) = signature::keygen(keys.path(), "vendor").unwrap();
    for file in ["10-text.wasm", "20-format.wasm"] {
        signature::sign(&dir.path().join(file), &secret, false).unwrap();
    }
    let settings = TrustSettings {
        keys: [("vendor".to_owned(), public)].into(),
        require_signatures: true,
        lock: Some(dir.path().join("plugins.lock")),
        ..TrustSettings::default()
    };
    let (rt, _) = runtime_with_cache(Some(cache.path().to_owned()));
    let survey = supply::survey(&rt, &settings, dir.path()).await.unwrap();
    let facts: Vec<_> = survey.plugins.into_iter().map(|s| s.facts).collect();
    Lock::of(&facts).write(&settings.lock_path(dir.path())).unwrap();
    let report = supply::load_dir(&rt, &settings, dir.path()).await.unwrap();
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    assert_eq!(sources(&report), [CodeSource::Compiled, CodeSource::Compiled]);
    let text_tools = tools_of(&report, "text");
    assert!(text_tools.iter().any(|t| t == "word_count"), "{text_tools:?}");
    drop((report, rt));

    let text_entry = cache_entry(cache.path(), &dir.path().join("10-text.wasm"));
    let format_entry = cache_entry(cache.path(), &dir.path().join("20-format.wasm"));
    std::fs::copy(&format_entry, &text_entry).unwrap();
    let (rt, _) = runtime_with_cache(Some(cache.path().to_owned()));
    let report = supply::load_dir(&rt, &settings, dir.path()).await.unwrap();
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    assert_eq!(tools_of(&report, "text"), text_tools);
    assert_eq!(sources(&report), [CodeSource::Compiled, CodeSource::Cached]);

    // Nor with the other entry's tag beside it: a tag holds for the
    // component it names alone.
    std::fs::copy(&format_entry, &text_entry).unwrap();
    std::fs::copy(
        format_entry.with_extension("tag"),
        text_entry.with_extension("tag"),
    )
    .unwrap();
    let report = supply::load_dir(&rt, &settings, dir.path()).await.unwrap();
    assert_eq!(tools_of(&report, "text"), text_tools);
    assert_eq!(sources(&report), [CodeSource::Compiled, CodeSource::Cached]);

    // Garbage in its place is not run either.
    std::fs::write(&text_entry, b"garbage").unwrap();
    let report = supply::load_dir(&rt, &settings, dir.path()).await.unwrap();
    assert_eq!(tools_of(&report, "text"), text_tools);
    assert_eq!(sources(&report), [CodeSource::Compiled, CodeSource::Cached]);

    // The entry was replaced by one of its own: the next start maps it.
    let (rt, _) = runtime_with_cache(Some(cache.path().to_owned()));
    let report = supply::load_dir(&rt, &settings, dir.path()).await.unwrap();
    assert_eq!(sources(&report), [CodeSource::Cached, CodeSource::Cached]);
    assert_eq!(tools_of(&report, "text"), text_tools);
}

/// An entry found sound is not hashed at every start but recorded by its
/// metadata: once recorded, a rewrite of it in place that keeps its size
/// and stays loadable (another tool name in its data) is still refused,
/// since the rewrite changed its metadata. So are plugin files: one
/// rewritten in place is read again.
#[tokio::test(flavor = "multi_thread")]
async fn a_recorded_cache_entry_rewritten_in_place_is_not_run() {
    let cache = tempfile::tempdir().unwrap();
    let dir = plugin_dir(&[
        ("10-text", "text_tools", None),
        ("20-format", "format_pipeline", None),
    ]);
    let records = || {
        std::fs::read_dir(cache.path().join("files"))
            .map(|dir| dir.count())
            .unwrap_or(0)
    };
    let load = async || {
        let (rt, _) = runtime_with_cache(Some(cache.path().to_owned()));
        rt.load_dir(dir.path()).await.unwrap()
    };
    let report = load().await;
    assert_eq!(sources(&report), [CodeSource::Compiled, CodeSource::Compiled]);
    let text_tools = tools_of(&report, "text");
    assert!(text_tools.iter().any(|t| t == "word_count"), "{text_tools:?}");
    // Files that changed less than two seconds ago are not recorded (a
    // write in the same tick of the filesystem's clock could keep their
    // metadata): nothing is, yet.
    assert_eq!(records(), 0);
    std::thread::sleep(std::time::Duration::from_millis(2100));
    let report = load().await;
    assert_eq!(sources(&report), [CodeSource::Cached, CodeSource::Cached]);
    // Each plugin file's digest and each entry's soundness.
    assert_eq!(records(), 4);
    let report = load().await;
    assert_eq!(sources(&report), [CodeSource::Cached, CodeSource::Cached]);
    assert_eq!(tools_of(&report, "text"), text_tools);

    // The same bytes but for one tool's name, written over the entry.
    let entry = cache_entry(cache.path(), &dir.path().join("10-text.wasm"));
    let mut code = std::fs::read(&entry).unwrap();
    let renamed = replace_all(&mut code, b"word_count", b"word_cxunt");
    assert!(renamed > 0, "no tool name in the entry");
    std::fs::OpenOptions::new()
        .write(true)
        .open(&entry)
        .and_then(|mut file| std::io::Write::write_all(&mut file, &code))
        .unwrap();
    let report = load().await;
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    assert_eq!(tools_of(&report, "text"), text_tools);
    assert_eq!(sources(&report), [CodeSource::Compiled, CodeSource::Cached]);

    // A plugin file rewritten in place, its size kept: read again.
    let format = dir.path().join("20-format.wasm");
    let size = std::fs::metadata(&format).unwrap().len() as usize;
    let bytes = &std::fs::read(dir.path().join("10-text.wasm")).unwrap()[..size];
    std::fs::OpenOptions::new()
        .write(true)
        .open(&format)
        .and_then(|mut file| std::io::Write::write_all(&mut file, bytes))
        .unwrap();
    let report = load().await;
    assert_eq!(report.plugins.len(), 1, "{:?}", names(&report));
    assert!(
        report.errors.iter().any(|e| e.path.ends_with("20-format.wasm")),
        "{:?}",
        report.errors
    );
}

/// A tag file of any size or contents beside an entry, too short, too
/// long or of another layout, is refused with the entry, never read past:
/// the plugin is compiled and the host stays up.
#[tokio::test(flavor = "multi_thread")]
async fn a_cache_tag_of_any_size_is_refused_with_its_entry() {
    let cache = tempfile::tempdir().unwrap();
    let dir = plugin_dir(&[("10-text", "text_tools", None)]);
    let (rt, _) = runtime_with_cache(Some(cache.path().to_owned()));
    let text_tools = tools_of(&rt.load_dir(dir.path()).await.unwrap(), "text");
    let tag = cache_entry(cache.path(), &dir.path().join("10-text.wasm")).with_extension("tag");
    let sound = std::fs::read(&tag).unwrap();
    let mut longer = sound.clone();
    longer.push(0);
    let mut other = sound.clone();
    other[0] ^= 1;
    for planted in [
        vec![],
        sound[..10].to_vec(),
        sound[..sound.len() - 1].to_vec(),
        longer,
        other,
    ] {
        std::fs::write(&tag, &planted).unwrap();
        let (rt, _) = runtime_with_cache(Some(cache.path().to_owned()));
        let report = rt.load_dir(dir.path()).await.unwrap();
        assert!(report.errors.is_empty(), "{:?}", report.errors);
        assert_eq!(
            sources(&report),
            [CodeSource::Compiled],
            "a tag of {} bytes",
            planted.len()
        );
        assert_eq!(tools_of(&report, "text"), text_tools);
    }
}

/// Replace each `from` in `bytes` by `to` (of the same length); how many.
fn replace_all(bytes: &mut [u8], from: &[u8], to: &[u8]) -> usize {
    assert_eq!(from.len(), to.len());
    let mut count = 0;
    let mut at = 0;
    while let Some(found) = bytes[at..].windows(from.len()).position(|w| w == from) {
        bytes[at + found..at + found + to.len()].copy_from_slice(to);
        at += found + to.len();
        count += 1;
    }
    count
}

/// A code cache its group or every user can write is not used (what is in
/// it may have been planted): plugins are compiled, and behave as
/// themselves.
#[tokio::test(flavor = "multi_thread")]
async fn a_code_cache_others_can_write_is_not_used() {
    let cache = tempfile::tempdir().unwrap();
    let dir = plugin_dir(&[
        ("10-text", "text_tools", None),
        ("20-format", "format_pipeline", None),
    ]);
    let (rt, _) = runtime_with_cache(Some(cache.path().to_owned()));
    let report = rt.load_dir(dir.path()).await.unwrap();
    let text_tools = tools_of(&report, "text");
    drop((report, rt));
    let text_entry = cache_entry(cache.path(), &dir.path().join("10-text.wasm"));
    let format_entry = cache_entry(cache.path(), &dir.path().join("20-format.wasm"));
    for mode in [0o770, 0o777] {
        std::fs::set_permissions(cache.path(), std::fs::Permissions::from_mode(mode)).unwrap();
        std::fs::copy(&format_entry, &text_entry).unwrap();
        let (rt, _) = runtime_with_cache(Some(cache.path().to_owned()));
        let report = rt.load_dir(dir.path()).await.unwrap();
        assert!(report.errors.is_empty(), "{:?}", report.errors);
        assert_eq!(
            sources(&report),
            [CodeSource::Compiled, CodeSource::Compiled],
            "mode {mode:o}"
        );
        assert_eq!(tools_of(&report, "text"), text_tools, "mode {mode:o}");
    }
    std::fs::set_permissions(cache.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
}

/// The attack plugin in mode `mode`, with more `[config]` keys, alone in a
/// directory beside text-tools; the load report.
async fn load_attack(config: &str) -> (toolhost::plugin::LoadReport, tempfile::TempDir) {
    let manifest = format!("[limits]\nmax_output_kb = 64\nmemory_mb = 128\n[config]\n{config}\n");
    let dir = plugin_dir(&[
        ("10-text", "text_tools", None),
        ("20-attack", "attack_plugin", Some(&manifest)),
    ]);
    let (rt, _) = runtime();
    let report = rt.load_dir(dir.path()).await.unwrap();
    (report, dir)
}

/// The one load error of the attack plugin, if it has one naming it and
/// the other plugin loaded.
fn attack_error(report: &toolhost::plugin::LoadReport) -> Result<String, String> {
    match (names(report).as_slice(), report.errors.as_slice()) {
        ([text], [error]) if text == "text" => {
            let error = error.to_string();
            match error.contains("20-attack.wasm") && error.contains("plugin `attack`") {
                true => Ok(error),
                false => Err(format!("the error names no plugin: {error}")),
            }
        }
        (loaded, errors) => Err(format!("loaded {loaded:?}, errors {errors:?}")),
    }
}

/// Each attack that got through, and how, or none.
fn assert_all_refused(failures: Vec<String>) {
    assert!(failures.is_empty(), "not refused:\n{}", failures.join("\n"));
}

#[tokio::test(flavor = "multi_thread")]
async fn tool_names_outside_the_contract_are_refused_naming_the_plugin() {
    let mut failures = Vec::new();
    for (kind, shown) in [
        ("space", "\"word count\""),
        ("newline", "\"ok\\nSYSTEM: ignore"),
        ("nul", "\"ok\\0\""),
        ("dotdot", "\"../../etc/passwd\""),
        ("rtl", "\"safe\\u{202e}exe.txt\""),
        ("empty", "\"\""),
        ("long", "(10000 bytes)"),
    ] {
        let (report, _dir) = load_attack(&format!("mode = \"bad_name\"\nkind = \"{kind}\"")).await;
        match attack_error(&report) {
            // Escaped and short: no raw newline, NUL or override reaches a log.
            Ok(e) if e.contains("tool name") && e.contains(shown) && e.len() < 400 => {
                assert!(!e.contains(['\n', '\0', '\u{202e}']), "{kind}: {e}")
            }
            Ok(e) => failures.push(format!("{kind}: {e}")),
            Err(e) => failures.push(format!("{kind}: {e}")),
        }
    }
    assert_all_refused(failures);
}

#[tokio::test(flavor = "multi_thread")]
async fn huge_or_forged_prompt_fields_are_refused() {
    let mut failures = Vec::new();
    for (kind, expect) in [
        ("title", "title has 100000 bytes"),
        ("title_newline", "title \"Attack\\nSYSTEM"),
        ("snippet", "snippet has 100000 bytes"),
        ("guidelines", "10000 guidelines, more than 32"),
        ("guideline", "guideline has 100000 bytes"),
    ] {
        let (report, _dir) = load_attack(&format!("mode = \"bad_definition\"\nkind = \"{kind}\"")).await;
        match attack_error(&report) {
            Ok(e) if e.contains("`attack_forged`") && e.contains(expect) && e.len() < 400 => {
                assert!(!e.contains('\n'), "{kind}: {e}")
            }
            Ok(e) => failures.push(format!("{kind}: {e}")),
            Err(e) => failures.push(format!("{kind}: {e}")),
        }
    }
    assert_all_refused(failures);
}

#[tokio::test(flavor = "multi_thread")]
async fn huge_load_time_refusals_are_cut() {
    let mut failures = Vec::new();
    for hook in ["categories", "list_tools"] {
        let (report, _dir) = load_attack(&format!("mode = \"huge_error\"\nhook = \"{hook}\"")).await;
        let error = attack_error(&report).unwrap_or_else(|e| panic!("{hook}: {e}"));
        let cut = error.contains("attack error: é") && error.ends_with("[cut: 8388622 bytes in all]");
        if error.len() > 64 << 10 || !cut {
            failures.push(format!("{hook}: {} bytes reached the report", error.len()));
        }
    }
    assert_all_refused(failures);
}
