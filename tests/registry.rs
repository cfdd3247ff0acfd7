//! Plugins from an OCI registry (`toolhost publish`, `add`, `update`),
//! against a real `docker-registry` on loopback started by each test: the
//! layout of the wasm-on-OCI convention, signatures checked against
//! `[trust] keys`, updates shown and held until approved, and every failed
//! pull (tampered blob, unsigned component, registry killed, slow or down,
//! another kind of artifact, a layer over its cap) leaving the plugin
//! directory as it was.

use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};
use toolhost_tests::registry::Registry;
use toolhost_tests::{free_port, guest, needs, run, run_within, stdio_client, toolhost, toolhost_binary};

/// A working directory with `plugins/`, a vendor's and a stranger's keys,
/// `toolhost.toml` trusting the vendor's, and a registry.
struct Setup {
    top: tempfile::TempDir,
    registry: Registry,
}

impl Setup {
    fn new() -> Self {
        let top = tempfile::tempdir().unwrap();
        let plugins = top.path().join("plugins");
        std::fs::create_dir(&plugins).unwrap();
        std::fs::set_permissions(&plugins, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::create_dir(top.path().join("vendor")).unwrap();
        std::fs::create_dir(top.path().join("keys")).unwrap();
        std::fs::write(
            top.path().join("toolhost.toml"),
            "plugins = \"plugins\"\n[trust]\nkeys = { vendor = \"keys/vendor.pub\" }\n",
        )
        .unwrap();
        let s = Self {
            top,
            registry: Registry::start().unwrap(),
        };
        for name in ["vendor", "stranger"] {
            let (out, stdout, stderr) = s.toolhost(&["keygen", name, "--dir", "keys"]);
            assert!(out.status.success(), "{stdout}{stderr}");
        }
        s
    }

    fn plugins(&self) -> PathBuf {
        self.top.path().join("plugins")
    }

    /// `toolhost ARGS` in the working directory, with nothing on stdin.
    fn toolhost(&self, args: &[&str]) -> (std::process::Output, String, String) {
        run(toolhost().current_dir(self.top.path()).args(args))
    }

    /// `toolhost publish` of guest crate `crate_name` (with `manifest` as
    /// its NAME.toml) to `name` (`REPO:TAG`), signed with `key` if given.
    fn publish(&self, crate_name: &str, manifest: Option<&str>, name: &str, key: Option<&str>) {
        let file = self.top.path().join("vendor/text.wasm");
        std::fs::copy(guest(crate_name), &file).unwrap();
        let sidecar = file.with_extension("toml");
        match manifest {
            Some(text) => std::fs::write(&sidecar, text).unwrap(),
            None => {
                let _ = std::fs::remove_file(&sidecar);
            }
        }
        let reference = self.registry.reference(name);
        let mut args = vec!["publish", "vendor/text.wasm", &reference];
        let key_file = key.map(|k| format!("keys/{k}.key"));
        if let Some(key_file) = &key_file {
            args.extend(["--key", key_file]);
        }
        let (out, stdout, stderr) = self.toolhost(&args);
        assert!(out.status.success(), "{stdout}{stderr}");
        assert!(stdout.contains("published vendor/text.wasm"), "{stdout}");
    }

    fn add(&self, name: &str) -> (std::process::Output, String, String) {
        self.toolhost(&["add", &self.registry.reference(name), "--yes"])
    }

    /// Every entry of the plugin directory, hidden ones included, with the
    /// content of each file.
    fn snapshot(&self) -> Vec<(String, Vec<u8>)> {
        let mut entries: Vec<_> = std::fs::read_dir(self.plugins())
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                let name = e.file_name().to_string_lossy().into_owned();
                (name, std::fs::read(e.path()).unwrap_or_default())
            })
            .collect();
        entries.sort();
        entries
    }

    fn lock(&self) -> String {
        std::fs::read_to_string(self.plugins().join("plugins.lock")).unwrap_or_default()
    }

    /// The tools plugin `text` lists, as `toolhost plugins --json` loads it.
    fn tools(&self) -> Vec<String> {
        let (_, stdout, stderr) = self.toolhost(&["plugins", "--json"]);
        let v: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"));
        let plugins = v["plugins"].as_array().unwrap();
        let text = plugins.iter().find(|p| p["name"] == "text");
        let tools = text
            .map(|p| p["tools"].as_array().unwrap().clone())
            .unwrap_or_default();
        tools.iter().map(|t| t.as_str().unwrap().to_owned()).collect()
    }
}

/// A tracker plugin's manifest: it reaches a loopback API, granted here.
const TRACKER: &str =
    "[config]\nbase_url = \"http://127.0.0.1:9\"\n[grants]\nhttp = [\"http://127.0.0.1:9\"]\n";

#[tokio::test]
async fn a_published_plugin_is_added_locked_and_served_with_the_registry_gone() {
    needs!(Registry);
    let s = Setup::new();
    s.publish("text_tools", None, "acme/text:1", Some("vendor"));
    let (out, stdout, stderr) = s.add("acme/text:1");
    assert!(out.status.success(), "{stdout}{stderr}");
    let reference = s.registry.reference("acme/text:1");
    assert!(
        stdout.contains(&format!("text from {reference} (sha256:")) && stdout.contains("signed by `vendor`"),
        "{stdout}"
    );
    assert!(
        stdout.contains("  imports: ") && stdout.contains("toolhost:plugin/host@"),
        "{stdout}"
    );
    assert!(s.plugins().join("text.wasm").is_file());
    let lock = s.lock();
    assert!(
        lock.contains(&format!("reference = \"{reference}\"")) && lock.contains("digest = \"sha256:"),
        "{lock}"
    );
    let approvals = std::fs::read_to_string(s.plugins().join("plugins.approvals")).unwrap();
    assert!(approvals.contains("[plugins.text"), "{approvals}");
    // Locking the directory again keeps where the plugin came from.
    let (out, stdout, stderr) = s.toolhost(&["lock"]);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert_eq!(s.lock(), lock);

    // Offline: with the registry gone, `serve` serves what was pulled.
    s.registry.kill();
    let mut command = tokio::process::Command::new(toolhost_binary());
    command.current_dir(s.top.path()).args(["--no-cache", "serve"]);
    let client = stdio_client(command).await;
    let tools = client.peer().list_all_tools().await.unwrap();
    client.cancel().await.unwrap();
    let names: Vec<_> = tools.iter().map(|t| t.name.to_string()).collect();
    assert!(names.iter().any(|n| n == "word_count"), "{names:?}");
}

#[test]
fn a_signed_update_that_adds_an_import_is_shown_and_not_loaded_until_approved() {
    needs!(Registry);
    let s = Setup::new();
    s.publish("text_tools", None, "acme/text:1", Some("vendor"));
    let (out, stdout, stderr) = s.add("acme/text:1");
    assert!(out.status.success(), "{stdout}{stderr}");
    let before = (std::fs::read(s.plugins().join("text.wasm")).unwrap(), s.lock());
    assert!(s.tools().contains(&"word_count".to_owned()));

    // The vendor moves the tag to a build that reaches an HTTP API.
    s.publish("tracker_tools", Some(TRACKER), "acme/text:1", Some("vendor"));
    let (out, stdout, _) = s.toolhost(&["update", "--check"]);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("text: ") && stdout.contains(" is now sha256:"),
        "{stdout}"
    );

    // Shown, not approved (nothing on stdin): nothing changes.
    let (out, stdout, stderr) = s.toolhost(&["update"]);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(
        stdout.contains("imports added: ") && stdout.contains("toolhost:plugin/http@"),
        "{stdout}"
    );
    assert!(
        stdout.contains("asks for more: imports toolhost:plugin/http@0.2.0, may reach http://127.0.0.1:9"),
        "{stdout}"
    );
    assert!(
        stdout.contains("tools removed: ") && stdout.contains("word_count"),
        "{stdout}"
    );
    assert!(stdout.contains("tools added: "), "{stdout}");
    assert!(stdout.contains("text: not updated"), "{stdout}");
    assert_eq!(
        (std::fs::read(s.plugins().join("text.wasm")).unwrap(), s.lock()),
        before
    );
    assert!(s.tools().contains(&"word_count".to_owned()));
    assert!(!s.plugins().join("text.toml").exists());

    // Approved: it lands, whole.
    let (out, stdout, stderr) = s.toolhost(&["update", "text", "--yes"]);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("text: updated to sha256:"), "{stdout}");
    assert_eq!(
        std::fs::read_to_string(s.plugins().join("text.toml")).unwrap(),
        TRACKER
    );
    let tools = s.tools();
    assert!(
        !tools.is_empty() && !tools.contains(&"word_count".to_owned()),
        "{tools:?}"
    );
    assert_ne!(s.lock(), before.1);
    let (out, stdout, _) = s.toolhost(&["update", "--check"]);
    assert!(
        out.status.success() && stdout.contains("text: up to date"),
        "{stdout}"
    );
}

#[tokio::test]
async fn a_tampered_blob_is_refused_and_nothing_is_written() {
    needs!(Registry);
    let s = Setup::new();
    s.publish("text_tools", None, "acme/text:1", Some("vendor"));
    let manifest = s.registry.manifest("acme/text:1").await;
    let blob = s
        .registry
        .blob_path(manifest["layers"][0]["digest"].as_str().unwrap());
    let mut bytes = std::fs::read(&blob).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x01;
    std::fs::write(&blob, bytes).unwrap();

    let before = s.snapshot();
    let (out, stdout, stderr) = s.add("acme/text:1");
    assert!(!out.status.success(), "{stdout}");
    assert!(
        stderr.contains("acme/text:1") && stderr.contains("digest"),
        "{stderr}"
    );
    assert_eq!(s.snapshot(), before);
}

#[test]
fn a_tag_moved_to_an_unsigned_component_is_refused() {
    needs!(Registry);
    let s = Setup::new();
    s.publish("text_tools", None, "acme/text:1", Some("vendor"));
    let (out, stdout, stderr) = s.add("acme/text:1");
    assert!(out.status.success(), "{stdout}{stderr}");

    s.publish("text_tools", None, "acme/text:1", None);
    let before = s.snapshot();
    let (out, stdout, stderr) = s.toolhost(&["update", "--yes"]);
    assert_eq!(out.status.code(), Some(2), "{stdout}");
    assert!(
        stderr.contains("error: text: ") && stderr.contains("refused: it is not signed"),
        "{stderr}"
    );
    assert_eq!(s.snapshot(), before);

    // Signed, but by a key the user does not trust.
    s.publish("text_tools", None, "acme/text:1", Some("stranger"));
    let (out, _, stderr) = s.toolhost(&["update", "--yes"]);
    assert!(!out.status.success());
    assert!(
        stderr.contains("verifies with no key in [trust] keys"),
        "{stderr}"
    );
    assert_eq!(s.snapshot(), before);
}

#[tokio::test]
async fn a_registry_killed_mid_pull_leaves_nothing_behind() {
    needs!(Registry);
    let s = Setup::new();
    s.publish("text_tools", None, "acme/text:1", Some("vendor"));
    let manifest = s.registry.manifest("acme/text:1").await;
    let digest = manifest["layers"][0]["digest"].as_str().unwrap();
    let proxy = s.registry.killed_at(&format!("/blobs/{digest}"));

    let before = s.snapshot();
    let reference = format!("http://{proxy}/acme/text:1");
    let (out, stdout, stderr) = s.toolhost(&["add", &reference, "--yes"]);
    assert!(!out.status.success(), "{stdout}");
    assert!(stderr.contains(&reference), "{stderr}");
    assert_eq!(s.snapshot(), before);
    // It was killed mid-pull, not before: it answers no more.
    let (out, _, _) = s.add("acme/text:1");
    assert!(!out.status.success());
    assert_eq!(s.snapshot(), before);
}

#[tokio::test]
async fn the_layout_is_the_wasm_oci_conventions_field_by_field() {
    needs!(Registry);
    let s = Setup::new();
    s.publish("tracker_tools", Some(TRACKER), "acme/text:1", Some("vendor"));
    let manifest = s.registry.manifest("acme/text:1").await;
    assert_eq!(manifest["schemaVersion"], 2);
    assert_eq!(
        manifest["mediaType"],
        "application/vnd.oci.image.manifest.v1+json"
    );
    assert_eq!(
        manifest["config"]["mediaType"],
        "application/vnd.wasm.config.v0+json"
    );
    let layers = manifest["layers"].as_array().unwrap();
    assert_eq!(layers.len(), 2, "{manifest:#}");
    assert_eq!(layers[0]["mediaType"], "application/wasm");
    assert_eq!(
        layers[1]["mediaType"],
        "application/vnd.toolhost.plugin.manifest.v1+toml"
    );

    let config = s
        .registry
        .blob("acme/text", manifest["config"]["digest"].as_str().unwrap())
        .await;
    let config: Value = serde_json::from_slice(&config).unwrap();
    assert_eq!(config["architecture"], "wasm");
    assert_eq!(config["os"], "wasip2");
    assert_eq!(
        config["layerDigests"],
        json!([layers[0]["digest"], layers[1]["digest"]])
    );
    assert!(config["created"].as_str().unwrap().ends_with('Z'), "{config:#}");
    let imports = config["component"]["imports"].as_array().unwrap();
    assert!(
        imports
            .iter()
            .any(|i| i.as_str().unwrap().starts_with("toolhost:plugin/http@")),
        "{config:#}"
    );
    assert!(
        !config["component"]["exports"].as_array().unwrap().is_empty(),
        "{config:#}"
    );

    // What `add` installs is exactly those layers.
    let (out, stdout, stderr) = s.add("acme/text:1");
    assert!(out.status.success(), "{stdout}{stderr}");
    let wasm = std::fs::read(s.plugins().join("text.wasm")).unwrap();
    assert_eq!(
        toolhost::supply::Digest::of(&wasm).to_string(),
        layers[0]["digest"].as_str().unwrap()
    );
    assert_eq!(
        std::fs::read_to_string(s.plugins().join("text.toml")).unwrap(),
        TRACKER
    );
}

#[tokio::test]
async fn what_is_not_a_signed_plugin_in_reach_is_refused_clearly_and_changes_nothing() {
    needs!(Registry);
    let s = Setup::new();
    s.publish("text_tools", None, "acme/text:1", Some("vendor"));
    let before = s.snapshot();
    let refused = |reference: &str, why: &[&str]| {
        let (out, stdout, stderr) = s.toolhost(&["add", reference, "--yes"]);
        assert!(!out.status.success(), "{reference}: {stdout}");
        for text in why {
            assert!(stderr.contains(text), "{reference}: {stderr}");
        }
        assert_eq!(s.snapshot(), before, "{reference}");
    };
    // An unknown tag, a digest the registry does not hold.
    refused(
        &s.registry.reference("acme/text:nope"),
        &["acme/text:nope", "unknown"],
    );
    let zeros = format!("acme/text@sha256:{}", "0".repeat(64));
    refused(&s.registry.reference(&zeros), &[&zeros]);
    // Plain HTTP to a name, not a loopback address.
    refused(
        "http://localhost:5000/acme/text:1",
        &["only for a registry on a loopback address"],
    );

    // A container image, not a component.
    let config = br#"{"architecture":"amd64","os":"linux"}"#;
    let layer = b"not a tarball";
    let descriptor = |media_type: &str, bytes: &[u8]| json!({"mediaType": media_type, "digest": toolhost::supply::Digest::of(bytes).to_string(), "size": bytes.len()});
    let image = json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": descriptor("application/vnd.oci.image.config.v1+json", config),
        "layers": [descriptor("application/vnd.oci.image.layer.v1.tar", layer)],
    });
    s.registry
        .push_raw("acme/image", "1", &[config, layer], &image)
        .await;
    refused(
        &s.registry.reference("acme/image:1"),
        &["is not a Wasm component"],
    );

    // A manifest layer over its cap.
    let huge = format!("# {}\n", "x".repeat(300 << 10));
    s.publish("text_tools", Some(&huge), "acme/huge:1", Some("vendor"));
    refused(&s.registry.reference("acme/huge:1"), &["over the cap"]);

    // A registry that is down, and one that never answers.
    refused(
        &format!("http://127.0.0.1:{}/acme/text:1", free_port()),
        &["acme/text:1"],
    );
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let reference = format!("http://{}/acme/text:1", silent.local_addr().unwrap());
    let (status, stdout, stderr) = run_within(
        toolhost()
            .current_dir(s.top.path())
            .env("TOOLHOST_REGISTRY_TIMEOUT", "1")
            .args(["add", &reference, "--yes"]),
        Duration::from_secs(60),
    );
    assert!(status.is_some_and(|s| !s.success()), "{stdout}{stderr}");
    assert!(stderr.contains(&reference), "{stderr}");
    assert_eq!(s.snapshot(), before);
}
