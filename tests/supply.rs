//! Knowing what runs (`toolhost::supply`), through the `toolhost` command
//! line over real plugin files, keys and directories made in each test:
//! unsafe paths, the lock file, approvals of what each component imports
//! and is granted, vendors' signatures, and a file written while
//! `serve --watch` reloads.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::Value;
use toolhost_tests::served::Served;
use toolhost_tests::{fill_plugin_dir, guest, run, toolhost};

/// A working directory holding `plugins/` (mode 0755) with `entries`, and
/// `toolhost.toml` with `config`: the lock and approvals go in `plugins/`.
struct Setup {
    top: tempfile::TempDir,
}

impl Setup {
    fn new(entries: &[(&str, &str, Option<&str>)], config: &str) -> Self {
        let top = tempfile::tempdir().unwrap();
        let dir = top.path().join("plugins");
        std::fs::create_dir(&dir).unwrap();
        chmod(&dir, 0o755);
        fill_plugin_dir(&dir, entries);
        std::fs::write(
            top.path().join("toolhost.toml"),
            format!("plugins = \"plugins\"\n{config}"),
        )
        .unwrap();
        Self { top }
    }

    fn dir(&self) -> PathBuf {
        self.top.path().join("plugins")
    }

    fn file(&self, name: &str) -> PathBuf {
        self.dir().join(name)
    }

    /// `toolhost ARGS` in the working directory.
    fn toolhost(&self, args: &[&str]) -> (std::process::Output, String, String) {
        run(toolhost().current_dir(self.top.path()).args(args))
    }

    /// `toolhost serve --http --watch` in the working directory, serving.
    fn serve_watching(&self) -> Served {
        let mut command = toolhost();
        command
            .current_dir(self.top.path())
            .args(["serve", "--http", "127.0.0.1:0", "--watch"]);
        Served::start(command).unwrap_or_else(|e| panic!("{e}"))
    }

    /// The names of the plugins `toolhost plugins` loads, and its stderr.
    fn loaded(&self) -> (Vec<String>, String) {
        let (_, stdout, stderr) = self.toolhost(&["plugins", "--json"]);
        let v: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"));
        let names = v["plugins"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap().to_owned())
            .collect();
        (names, stderr)
    }
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Change one byte of the file, in the middle.
fn tamper(path: &Path) {
    let mut bytes = std::fs::read(path).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x01;
    std::fs::write(path, bytes).unwrap();
}

/// Append a custom section: a new build of the same component (another
/// digest, the same imports and exports).
fn rebuild(path: &Path) {
    let name = b"build-id";
    let payload = b"second build";
    let mut section = vec![name.len() as u8];
    section.extend_from_slice(name);
    section.extend_from_slice(payload);
    let mut bytes = std::fs::read(path).unwrap();
    bytes.push(0);
    bytes.push(section.len() as u8);
    bytes.extend_from_slice(&section);
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn a_plugin_others_can_write_is_refused_with_the_fix_and_the_others_load() {
    let s = Setup::new(
        &[
            ("10-text", "text_tools", None),
            ("20-format", "format_pipeline", None),
        ],
        "",
    );
    assert_eq!(s.loaded().0, ["text", "format"]);

    chmod(&s.file("20-format.wasm"), 0o666);
    let (loaded, stderr) = s.loaded();
    assert_eq!(loaded, ["text"], "{stderr}");
    assert!(
        stderr.contains("20-format.wasm: the file")
            && stderr.contains("is writable by every user (mode 0666)")
            && stderr.contains("fix: `chmod go-w"),
        "{stderr}"
    );
    chmod(&s.file("20-format.wasm"), 0o644);

    // A manifest others can write grants authority as much as the code.
    std::fs::write(s.file("10-text.toml"), "order = 1\n").unwrap();
    chmod(&s.file("10-text.toml"), 0o664);
    let (loaded, stderr) = s.loaded();
    assert_eq!(loaded, ["format"], "{stderr}");
    assert!(
        stderr.contains("10-text.toml is writable by its group"),
        "{stderr}"
    );
    chmod(&s.file("10-text.toml"), 0o644);

    // A world-writable directory: anyone could add a plugin to it.
    chmod(&s.dir(), 0o777);
    let (loaded, stderr) = s.loaded();
    assert!(loaded.is_empty(), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "the directory {} is writable by every user (mode 0777)",
            s.dir().display()
        )),
        "{stderr}"
    );
    chmod(&s.dir(), 0o755);
    assert_eq!(s.loaded().0, ["text", "format"]);
}

#[test]
fn with_a_lock_file_only_what_it_records_loads_and_a_mismatch_says_what_changed() {
    let s = Setup::new(
        &[
            ("10-text", "text_tools", None),
            ("20-format", "format_pipeline", None),
        ],
        "",
    );
    let (out, stdout, stderr) = s.toolhost(&["lock"]);
    assert!(out.status.success(), "{stdout}{stderr}");
    let lock = s.dir().join("plugins.lock");
    assert!(
        stdout.contains(&format!("wrote {} (2 plugins)", lock.display())),
        "{stdout}"
    );
    let text = std::fs::read_to_string(&lock).unwrap();
    assert!(
        text.contains("[plugins.text]") && text.contains("wasm = \"sha256:"),
        "{text}"
    );
    assert_eq!(s.loaded().0, ["text", "format"]);

    // One byte changed.
    let original = std::fs::read(s.file("20-format.wasm")).unwrap();
    tamper(&s.file("20-format.wasm"));
    let (loaded, stderr) = s.loaded();
    assert_eq!(loaded, ["text"], "{stderr}");
    assert!(
        stderr.contains("20-format.wasm: does not match")
            && stderr.contains("plugins.lock: its component changed (locked sha256:"),
        "{stderr}"
    );
    // `tools` (and so `serve` and `call`, built the same way) holds to it too.
    let (_, stdout, stderr) = s.toolhost(&["tools", "--json"]);
    assert!(stderr.contains("20-format.wasm: does not match"), "{stderr}");
    assert!(stdout.contains("word_count"), "{stdout}");
    std::fs::write(s.file("20-format.wasm"), original).unwrap();

    // A grant widened in the manifest.
    std::fs::write(s.file("10-text.toml"), "[grants]\nhttp = [\"api.example.com\"]\n").unwrap();
    let (loaded, stderr) = s.loaded();
    assert_eq!(loaded, ["format"], "{stderr}");
    assert!(
        stderr.contains("its manifest or its [plugin] settings in toolhost.toml changed")
            && stderr.contains("it is now wider: it may reach https://api.example.com:443")
            && stderr.contains("run `toolhost lock`"),
        "{stderr}"
    );
    // A plugin the lock does not know.
    std::fs::remove_file(s.file("10-text.toml")).unwrap();
    std::fs::copy(guest("text_tools"), s.file("30-other.wasm")).unwrap();
    let (loaded, stderr) = s.loaded();
    assert_eq!(loaded, ["text", "format"], "{stderr}");
    assert!(stderr.contains("plugin `other` is not in"), "{stderr}");

    // Locking again accepts the directory as it now is.
    let (out, stdout, _) = s.toolhost(&["lock"]);
    assert!(out.status.success() && stdout.contains("(3 plugins)"), "{stdout}");
    assert_eq!(s.loaded().0, ["text", "format", "other"]);

    // A lock file others can write is no lock: nothing loads.
    chmod(&lock, 0o666);
    let (out, _, stderr) = s.toolhost(&["plugins"]);
    assert!(
        !out.status.success() && stderr.contains("plugins.lock is writable by every user"),
        "{stderr}"
    );
}

#[test]
fn an_unapproved_plugin_does_not_load_and_an_upgrade_that_imports_more_needs_approval_again() {
    let s = Setup::new(
        &[("10-tool", "text_tools", None)],
        "[trust]\nrequire_approval = true\n",
    );
    let (loaded, stderr) = s.loaded();
    assert!(loaded.is_empty(), "{stderr}");
    assert!(
        stderr.contains("require_approval = true, and plugin `tool` is not approved")
            && stderr.contains("`toolhost approve tool`"),
        "{stderr}"
    );
    // What it imports, read from the component, and what it is granted.
    let (_, stdout, _) = s.toolhost(&["plugins", "--grants"]);
    assert!(stdout.contains("tool (10-tool.wasm, sha256:"), "{stdout}");
    assert!(
        stdout.contains("  imports: ") && stdout.contains("toolhost:plugin/host@"),
        "{stdout}"
    );
    assert!(!stdout.contains("toolhost:plugin/http"), "{stdout}");
    assert!(
        stdout.contains("  http: none") && stdout.contains("  approval: plugin `tool` is not approved"),
        "{stdout}"
    );

    let (out, stdout, stderr) = s.toolhost(&["approve", "tool"]);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("approved tool (sha256:"), "{stdout}");
    assert_eq!(s.loaded().0, ["tool"]);

    // A new build that imports and is granted nothing more: still approved.
    rebuild(&s.file("10-tool.wasm"));
    assert_eq!(s.loaded().0, ["tool"]);

    // An upgrade that imports `http`.
    std::fs::copy(guest("github"), s.file("10-tool.wasm")).unwrap();
    std::fs::write(
        s.file("10-tool.toml"),
        "[config]\nowner = \"octo\"\nrepo = \"demo\"\n",
    )
    .unwrap();
    let (_, stdout, _) = s.toolhost(&["plugins", "--grants"]);
    assert!(stdout.contains("toolhost:plugin/http@"), "{stdout}");
    let (loaded, stderr) = s.loaded();
    assert!(loaded.is_empty(), "{stderr}");
    assert!(
        stderr.contains("plugin `tool` needs approval again: since its approval (of sha256:")
            && stderr.contains("it imports toolhost:plugin/http@")
            && stderr.contains("`toolhost approve tool`"),
        "{stderr}"
    );
    s.toolhost(&["approve", "tool"]);
    assert_eq!(s.loaded().0, ["tool"]);

    // Granted more: needs approval again too.
    std::fs::write(
        s.top.path().join("toolhost.toml"),
        "plugins = \"plugins\"\n[trust]\nrequire_approval = true\n[plugin.tool.grants]\nhttp = [\"api.github.com\"]\n",
    )
    .unwrap();
    let (loaded, stderr) = s.loaded();
    assert!(loaded.is_empty(), "{stderr}");
    assert!(
        stderr.contains("it may reach https://api.github.com:443"),
        "{stderr}"
    );
}

/// The place in the registration order decides who serves a tool name
/// (and whose hooks see a call's arguments first): an approved plugin that
/// moves ahead, by `order` or by its file name, needs approval again.
#[test]
fn an_approved_plugin_moved_ahead_in_the_order_needs_approval_again() {
    let s = Setup::new(
        &[("10-text", "text_tools", None), ("20-copy", "text_tools", None)],
        "[trust]\nrequire_approval = true\n",
    );
    for name in ["text", "copy"] {
        let (out, stdout, stderr) = s.toolhost(&["approve", name]);
        assert!(out.status.success(), "{stdout}{stderr}");
    }
    assert_eq!(s.loaded().0, ["text", "copy"]);

    std::fs::write(s.file("20-copy.toml"), "order = -5\n").unwrap();
    let (loaded, stderr) = s.loaded();
    assert_eq!(loaded, ["text"], "{stderr}");
    assert!(
        stderr.contains("plugin `copy` needs approval again")
            && stderr.contains("it has order = -5 (was none)")
            && stderr.contains("`toolhost approve copy`"),
        "{stderr}"
    );
    let (_, stdout, _) = s.toolhost(&["plugins", "--grants"]);
    assert!(stdout.contains("  order: -5"), "{stdout}");
    s.toolhost(&["approve", "copy"]);
    assert_eq!(s.loaded().0, ["copy", "text"]);

    // Among plugins of one order, the file name decides.
    std::fs::rename(s.file("10-text.wasm"), s.file("01-text.wasm")).unwrap();
    let (loaded, stderr) = s.loaded();
    assert_eq!(loaded, ["copy"], "{stderr}");
    assert!(
        stderr.contains("plugin `text` needs approval again")
            && stderr.contains("it is now the file 01-text.wasm (was 10-text.wasm)"),
        "{stderr}"
    );
}

/// The lock lives in the plugin directory. One beside it, where an older
/// toolhost put it, still holds if only the user can have written it; in
/// a shared sticky directory (as `/tmp`) anyone could have: it is ignored,
/// blocks nothing, and no advice says to chmod that directory.
#[test]
fn the_lock_lives_in_the_plugin_directory_and_one_planted_beside_it_blocks_nothing() {
    let s = Setup::new(&[("10-text", "text_tools", None)], "");
    let (out, stdout, stderr) = s.toolhost(&["lock"]);
    assert!(out.status.success(), "{stdout}{stderr}");
    let lock = s.dir().join("plugins.lock");
    assert!(
        stdout.contains(&format!("wrote {} (1 plugins)", lock.display())),
        "{stdout}"
    );
    std::fs::copy(guest("format_pipeline"), s.file("20-format.wasm")).unwrap();
    let (loaded, stderr) = s.loaded();
    assert_eq!(loaded, ["text"], "{stderr}");
    assert!(stderr.contains("plugin `format` is not in"), "{stderr}");

    let beside = s.top.path().join("plugins.lock");
    std::fs::rename(&lock, &beside).unwrap();
    let (loaded, stderr) = s.loaded();
    assert_eq!(loaded, ["text"], "{stderr}");
    assert!(
        stderr.contains(&format!("move it to {}", lock.display())),
        "{stderr}"
    );

    chmod(s.top.path(), 0o1777);
    let (loaded, stderr) = s.loaded();
    chmod(s.top.path(), 0o700);
    assert_eq!(loaded, ["text", "format"], "{stderr}");
    assert!(
        stderr.contains(&format!("ignored {}", beside.display())) && !stderr.contains("chmod"),
        "{stderr}"
    );
}

#[test]
fn with_required_signatures_only_files_a_trusted_key_signed_load() {
    let s = Setup::new(
        &[
            ("10-signed", "text_tools", None),
            ("20-detached", "format_pipeline", None),
            ("30-stranger", "text_tools", None),
            ("40-unsigned", "text_tools", None),
        ],
        "[trust]\nrequire_signatures = true\nkeys = { vendor = \"keys/vendor.pub\" }\n",
    );
    let keys = s.top.path().join("keys");
    std::fs::create_dir(&keys).unwrap();
    let keys_arg = keys.to_str().unwrap();
    for name in ["vendor", "stranger"] {
        let (out, stdout, stderr) = s.toolhost(&["keygen", name, "--dir", keys_arg]);
        assert!(out.status.success(), "{stdout}{stderr}");
    }
    assert_eq!(
        std::fs::metadata(keys.join("vendor.key"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o600
    );
    let sign = |file: &str, key: &str, detached: bool| {
        let file = s.file(file);
        let key = keys.join(format!("{key}.key"));
        let mut args = vec!["sign", file.to_str().unwrap(), "--key", key.to_str().unwrap()];
        if detached {
            args.push("--detached");
        }
        let (out, stdout, stderr) = s.toolhost(&args);
        assert!(out.status.success(), "{stdout}{stderr}");
    };
    sign("10-signed.wasm", "vendor", false);
    sign("20-detached.wasm", "vendor", true);
    sign("30-stranger.wasm", "stranger", false);
    assert!(s.file("20-detached.wasm.sig").is_file());

    let (loaded, stderr) = s.loaded();
    assert_eq!(loaded, ["signed", "detached"], "{stderr}");
    assert!(
        stderr.contains("30-stranger.wasm: its signature verifies with no key in [trust] keys"),
        "{stderr}"
    );
    assert!(stderr.contains("40-unsigned.wasm: is not signed"), "{stderr}");
    // The embedded signature leaves a component that works.
    let (out, stdout, stderr) = s.toolhost(&["call", "word_count", r#"{"text":"one two three"}"#, "--json"]);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("3 words"), "{stdout}");
    let (_, stdout, _) = s.toolhost(&["plugins", "--grants"]);
    assert!(stdout.contains("signature: signed by `vendor`"), "{stdout}");

    // Signed, then changed.
    tamper(&s.file("10-signed.wasm"));
    let (loaded, stderr) = s.loaded();
    assert_eq!(loaded, ["detached"], "{stderr}");
    assert!(
        stderr.contains("10-signed.wasm: its signature verifies with no key"),
        "{stderr}"
    );

    // A shadow candidate runs code too: unsigned, it does not load (the
    // plugin serves without it); signed by the vendor, it does.
    let candidates = s.top.path().join("candidates");
    std::fs::create_dir(&candidates).unwrap();
    chmod(&candidates, 0o755);
    let candidate = candidates.join("detached-next.wasm");
    std::fs::copy(guest("format_pipeline"), &candidate).unwrap();
    let config = s.top.path().join("toolhost.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str("[plugin.detached]\nshadow = \"candidates/detached-next.wasm\"\n");
    std::fs::write(&config, text).unwrap();
    let (loaded, stderr) = s.loaded();
    assert_eq!(loaded, ["detached"], "{stderr}");
    assert!(
        stderr.lines().any(|l| l.contains("the shadow candidate")
            && l.contains("detached-next.wasm")
            && l.contains("is not signed")),
        "{stderr}"
    );
    let key = keys.join("vendor.key");
    let (out, stdout, stderr) = s.toolhost(&[
        "sign",
        candidate.to_str().unwrap(),
        "--key",
        key.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{stdout}{stderr}");
    let (loaded, stderr) = s.loaded();
    assert_eq!(loaded, ["detached"], "{stderr}");
    assert!(!stderr.contains("shadow candidate"), "{stderr}");
}

#[test]
fn a_file_being_written_is_not_loaded_by_the_watch_until_it_is_closed() {
    let s = Setup::new(&[("10-text", "text_tools", None)], "");
    let served = s.serve_watching();
    // A first reload.
    std::fs::write(s.file("10-text.toml"), "order = 1\n").unwrap();
    served.wait_for("reloaded (plugins text)");

    // Half of a component, written and flushed, the file still open.
    let bytes = std::fs::read(guest("format_pipeline")).unwrap();
    let mut file = std::fs::File::create(s.file("20-format.wasm")).unwrap();
    file.write_all(&bytes[..bytes.len() / 2]).unwrap();
    file.flush().unwrap();
    let waiting = "waiting for 20-format.wasm to be closed by its writer";
    served.wait_for(waiting);
    file.write_all(&bytes[bytes.len() / 2..]).unwrap();
    drop(file);
    for line in served.wait_for("reloaded (plugins text, format)") {
        assert!(
            line.contains(waiting) || !line.contains("20-format.wasm"),
            "the half-written file was loaded: {line}"
        );
    }
}

/// `toolhost lock` while serving with `--watch` reloads at once: the lock
/// file alone changed, nothing in the plugin directory.
#[test]
fn a_new_lock_file_alone_reloads_the_watch() {
    let s = Setup::new(&[("10-text", "text_tools", None)], "");
    let served = s.serve_watching();
    let (out, _, err) = s.toolhost(&["lock"]);
    assert!(out.status.success(), "{err}");
    assert!(s.dir().join("plugins.lock").is_file());
    served.wait_for("reloaded (plugins text)");
}

/// `/metrics` of `served`, as text.
async fn metrics(served: &Served) -> String {
    let http = toolhost::internals::http_client::builder().build().unwrap();
    let response = http.get(format!("http://{}/metrics", served.addr)).send().await;
    response.unwrap().text().await.unwrap()
}

/// The sample `name{plugin="PLUGIN"}` of `text`, 0 if absent.
fn plugin_sample(text: &str, name: &str, plugin: &str) -> u64 {
    let prefix = format!("toolhost_{name}{{plugin=\"{plugin}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix)?.parse().ok())
        .unwrap_or(0)
}

/// A plugin file the lock file refuses is counted at each load; a reload
/// brings new plugins counting from zero, and the counters of their names
/// go on from where they were.
#[tokio::test(flavor = "multi_thread")]
async fn refused_loads_are_counted_and_plugin_counters_go_on_across_a_reload() {
    let trap = "[limits]\nquarantine_after = 1\n[config]\nrole = \"tool\"\ntrap_every = 1\n";
    let enrich = "[config]\nrole = \"enricher\"\ntag = \"a\"\n";
    let s = Setup::new(
        &[
            ("10-enrich", "fixture_trap_every", Some(enrich)),
            ("20-trap", "fixture_trap_every", Some(trap)),
            ("30-extra", "text_tools", None),
        ],
        "",
    );
    let (out, _, err) = s.toolhost(&["lock"]);
    assert!(out.status.success(), "{err}");
    tamper(&s.file("30-extra.wasm"));
    let served = s.serve_watching();
    let client = toolhost_tests::cluster::Client::connect(served.addr)
        .await
        .unwrap();
    // Two calls: the first traps, and so quarantines; the second is
    // refused. Then every counter of `trap`, and `extra`'s refused loads,
    // stand at `n`.
    let trap_twice_and_count = async |n: u64| {
        for _ in 0..2 {
            let result = client.call("mix", serde_json::json!({"n": 1})).await.unwrap();
            assert_eq!(result.is_error, Some(true), "{result:?}");
        }
        let text = metrics(&served).await;
        for (family, plugin) in [
            ("plugin_traps_total", "trap"),
            ("plugin_quarantines_total", "trap"),
            ("plugin_refusals_total", "trap"),
            ("plugin_refused_loads_total", "extra"),
        ] {
            assert_eq!(plugin_sample(&text, family, plugin), n, "{family}:\n{text}");
        }
    };
    trap_twice_and_count(1).await;
    // Changed again: reloaded, refused again, and `trap` loaded anew.
    rebuild(&s.file("30-extra.wasm"));
    served.wait_for("reloaded (plugins enrich, trap)");
    trap_twice_and_count(2).await;
}
