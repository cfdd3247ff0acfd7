//! Plugins from an OCI registry (`toolhost publish`, `add`, `update`),
//! against a real `docker-registry` on loopback started by each test: the
//! layout of the wasm-on-OCI convention, signatures checked against
//! `[trust] keys`, updates shown and held until approved, and every failed
//! pull (tampered blob, unsigned component, registry killed, silent,
//! answering a byte at a time, or down, another kind of artifact, a layer
//! or a manifest over its cap, refused credentials) leaving the plugin
//! directory as it was, and what a killed pull left swept by the next.
//! Every `toolhost` run here has its own `HOME` and `DOCKER_CONFIG`: never
//! the user's credentials.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, SystemTime};

use base64::Engine;
use serde_json::{Value, json};
use toolhost_tests::registry::{FakeAnswer, REGISTRY_PASSWORD, REGISTRY_USER, Registry, fake_registry};
use toolhost_tests::{free_port, guest, needs, run, run_within, stdio_client, toolhost, toolhost_binary};

/// A working directory with `plugins/`, a vendor's and a stranger's keys,
/// `toolhost.toml` trusting the vendor's, and a registry.
struct Setup {
    top: tempfile::TempDir,
    registry: Registry,
}

impl Setup {
    fn new() -> Self {
        Self::with(Registry::start().unwrap())
    }

    fn with(registry: Registry) -> Self {
        let top = tempfile::tempdir().unwrap();
        let plugins = top.path().join("plugins");
        std::fs::create_dir(&plugins).unwrap();
        std::fs::set_permissions(&plugins, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::create_dir(top.path().join("vendor")).unwrap();
        std::fs::create_dir(top.path().join("keys")).unwrap();
        std::fs::create_dir(top.path().join("docker")).unwrap();
        std::fs::write(
            top.path().join("toolhost.toml"),
            "plugins = \"plugins\"\n[trust]\nkeys = { vendor = \"keys/vendor.pub\" }\n",
        )
        .unwrap();
        let s = Self { top, registry };
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
        run(self.command().args(args))
    }

    /// `toolhost` in the working directory, its home and Docker config in
    /// it too (`docker/config.json`).
    fn command(&self) -> std::process::Command {
        self.within(toolhost())
    }

    /// `toolhost ARGS` as [`Self::toolhost`], with the compiled-code cache
    /// on (in `cache/` here), where every other run has it off.
    fn cached(&self, args: &[&str]) -> (std::process::Output, String, String) {
        let mut command = std::process::Command::new(toolhost_binary());
        command
            .env_remove("TOOLHOST_PLUGINS")
            .env("XDG_CACHE_HOME", self.top.path().join("cache"));
        run(self.within(command).args(args))
    }

    /// `command` in the working directory, its home and Docker config in
    /// it too.
    fn within(&self, mut command: std::process::Command) -> std::process::Command {
        command
            .current_dir(self.top.path())
            .env("HOME", self.top.path())
            .env("DOCKER_CONFIG", self.top.path().join("docker"))
            .env_remove("TOOLHOST_REGISTRY_USERNAME")
            .env_remove("TOOLHOST_REGISTRY_PASSWORD");
        command
    }

    /// Write the Docker config `config.json`.
    fn docker_config(&self, config: &Value) {
        std::fs::write(self.top.path().join("docker/config.json"), config.to_string()).unwrap();
    }

    /// The staging directories in the plugin directory.
    fn staging(&self) -> Vec<PathBuf> {
        let mut found: Vec<_> = std::fs::read_dir(self.plugins())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with(".toolhost-staging-")
            })
            .collect();
        found.sort();
        found
    }

    /// `toolhost publish` of guest crate `crate_name` (with `manifest` as
    /// its NAME.toml) to `name` (`REPO:TAG`), signed with `key` if given.
    fn publish(&self, crate_name: &str, manifest: Option<&str>, name: &str, key: Option<&str>) {
        let (out, stdout, stderr) = self.try_publish(crate_name, manifest, name, key);
        assert!(out.status.success(), "{stdout}{stderr}");
        assert!(stdout.contains("published vendor/text.wasm"), "{stdout}");
    }

    fn try_publish(
        &self,
        crate_name: &str,
        manifest: Option<&str>,
        name: &str,
        key: Option<&str>,
    ) -> (std::process::Output, String, String) {
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
        self.toolhost(&args)
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
    let mut command = tokio::process::Command::from(toolhost());
    command.current_dir(s.top.path()).arg("serve");
    let client = stdio_client(command).await;
    let tools = client.peer().list_all_tools().await.unwrap();
    client.cancel().await.unwrap();
    let names: Vec<_> = tools.iter().map(|t| t.name.to_string()).collect();
    assert!(names.iter().any(|n| n == "word_count"), "{names:?}");
}

/// `add` compiles the plugin it shows for approval into the code cache,
/// as loading it to serve would: the first start after it takes the code
/// from the cache rather than compiling it again (for a JavaScript or
/// Python plugin, tens of seconds the client waits for its first answer).
#[test]
fn an_added_plugin_is_served_from_the_code_cache() {
    needs!(Registry);
    let s = Setup::new();
    s.publish("text_tools", None, "acme/text:1", Some("vendor"));
    let reference = s.registry.reference("acme/text:1");
    let (out, stdout, stderr) = s.cached(&["add", &reference, "--yes"]);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("compiling text for the next start"), "{stdout}");
    let (out, stdout, stderr) = s.cached(&["plugins", "--json"]);
    assert!(out.status.success(), "{stdout}{stderr}");
    let listed: Value = serde_json::from_str(&stdout).unwrap();
    let text = listed["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "text")
        .unwrap_or_else(|| panic!("{stdout}"));
    assert_eq!(text["code"], "cached", "{text}");
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
        stdout.contains("asks for more: imports toolhost:plugin/http@")
            && stdout.contains(", may reach http://127.0.0.1:9"),
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
        &["acme/text:1", "cannot reach the registry"],
    );
    // The kernel accepts the connection (the listener's backlog); nobody
    // ever reads it or answers.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let reference = format!("http://{}/acme/text:1", silent.local_addr().unwrap());
    let (status, stdout, stderr) = run_within(
        s.command()
            .env("TOOLHOST_REGISTRY_TIMEOUT", "1")
            .args(["add", &reference, "--yes"]),
        Duration::from_secs(60),
    );
    assert!(status.is_some_and(|s| !s.success()), "{stdout}{stderr}");
    assert!(
        stderr.contains(&format!("{reference}: the registry did not answer within 1 s")),
        "{stderr}"
    );
    assert_eq!(s.snapshot(), before);

    // One that answers, a byte at a time, without end: each read is
    // prompt, the whole is bounded.
    let trickle = fake_registry(|_| FakeAnswer::Trickle);
    let reference = format!("http://{trickle}/acme/text:1");
    let (status, stdout, stderr) = run_within(
        s.command()
            .env("TOOLHOST_REGISTRY_DEADLINE", "2")
            .args(["add", &reference, "--yes"]),
        Duration::from_secs(60),
    );
    assert!(status.is_some_and(|s| !s.success()), "{stdout}{stderr}");
    assert!(
        stderr.contains(&format!("{reference}: resolving took over 2 s")),
        "{stderr}"
    );
    assert_eq!(s.snapshot(), before);
}

/// A Docker config's `auths` entry for the test registry.
fn auths(s: &Setup, entry: Value) -> Value {
    json!({"auths": {format!("127.0.0.1:{}", s.registry.port): entry}})
}

fn basic(user: &str, password: &str) -> Value {
    json!({"auth": base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))})
}

#[test]
fn publish_and_add_take_the_registrys_credentials_from_the_docker_config() {
    needs!(Registry);
    let s = Setup::with(Registry::start_with_password().unwrap());
    // Without credentials for it (only another registry's), the registry
    // refuses: it does check them.
    s.docker_config(&json!({"auths": {"ghcr.io": basic(REGISTRY_USER, REGISTRY_PASSWORD)}}));
    let (out, _, stderr) = s.try_publish("text_tools", None, "acme/text:1", Some("vendor"));
    assert!(!out.status.success());
    assert!(
        stderr.contains("the registry refused anonymous access (no credentials for 127.0.0.1:"),
        "{stderr}"
    );

    // `auth`, base64 of USER:PASSWORD, as `docker login` writes it.
    s.docker_config(&auths(&s, basic(REGISTRY_USER, REGISTRY_PASSWORD)));
    s.publish("text_tools", None, "acme/text:1", Some("vendor"));
    // `username` and `password`, as some tools write it.
    s.docker_config(&auths(
        &s,
        json!({"username": REGISTRY_USER, "password": REGISTRY_PASSWORD}),
    ));
    let (out, stdout, stderr) = s.add("acme/text:1");
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(s.tools().contains(&"word_count".to_owned()));
}

#[test]
fn a_credential_helper_on_path_gives_the_credentials() {
    needs!(Registry);
    let s = Setup::with(Registry::start_with_password().unwrap());
    let registry = format!("127.0.0.1:{}", s.registry.port);
    // Docker's helper protocol: `get`, the registry on stdin, a JSON
    // answer, or "credentials not found" for a registry it does not hold.
    let bin = s.top.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    let asked = s.top.path().join("asked");
    let helper = bin.join("docker-credential-test");
    std::fs::write(
        &helper,
        format!(
            "#!/bin/sh\n[ \"$1\" = get ] || exit 2\nregistry=$(cat)\necho \"$registry\" >> '{asked}'\n\
             if [ \"$registry\" = '{registry}' ]; then\n\
             printf '{{\"ServerURL\":\"%s\",\"Username\":\"{REGISTRY_USER}\",\"Secret\":\"{REGISTRY_PASSWORD}\"}}' \"$registry\"\n\
             else echo 'credentials not found in native keychain'; exit 1; fi\n",
            asked = asked.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&helper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let with_helper = |args: &[&str]| run(s.command().env("PATH", &path).args(args));

    s.docker_config(&json!({"credHelpers": {registry.clone(): "test"}}));
    let file = s.top.path().join("vendor/text.wasm");
    std::fs::copy(guest("text_tools"), &file).unwrap();
    let reference = s.registry.reference("acme/text:1");
    let (out, stdout, stderr) = with_helper(&[
        "publish",
        "vendor/text.wasm",
        &reference,
        "--key",
        "keys/vendor.key",
    ]);
    assert!(out.status.success(), "{stdout}{stderr}");
    // The config's store serves every registry without a helper of its own.
    s.docker_config(&json!({"credsStore": "test"}));
    let (out, stdout, stderr) = with_helper(&["add", &reference, "--yes"]);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert_eq!(
        std::fs::read_to_string(&asked).unwrap(),
        format!("{registry}\n{registry}\n")
    );
    assert!(s.tools().contains(&"word_count".to_owned()));

    // Without the helper on PATH, the error says which one is missing.
    let (out, _, stderr) = s.toolhost(&["update", "--check"]);
    assert!(!out.status.success());
    assert!(stderr.contains("cannot run docker-credential-test"), "{stderr}");
}

#[test]
fn wrong_credentials_are_refused_naming_the_registry_and_never_printed() {
    needs!(Registry);
    let s = Setup::with(Registry::start_with_password().unwrap());
    s.docker_config(&auths(&s, basic(REGISTRY_USER, REGISTRY_PASSWORD)));
    s.publish("text_tools", None, "acme/text:1", Some("vendor"));

    let wrong = "wrong-password-never-printed";
    s.docker_config(&auths(&s, basic(REGISTRY_USER, wrong)));
    let before = s.snapshot();
    let reference = s.registry.reference("acme/text:1");
    let config = s.top.path().join("docker/config.json");
    for (args, refused) in [
        (
            vec!["add", reference.as_str(), "--yes"],
            format!("{reference}: the registry refused the credentials of `127.0.0.1:"),
        ),
        (
            vec!["publish", "vendor/text.wasm", reference.as_str()],
            format!("{reference}: the registry refused the credentials of `127.0.0.1:"),
        ),
    ] {
        let (out, stdout, stderr) = s.toolhost(&args);
        assert!(!out.status.success(), "{stdout}");
        assert!(stderr.contains(&refused), "{stderr}");
        assert!(stderr.contains(&config.display().to_string()), "{stderr}");
        assert!(
            !stdout.contains(wrong) && !stderr.contains(wrong),
            "{stdout}{stderr}"
        );
        assert_eq!(s.snapshot(), before);
    }

    // The environment's credentials come first, and are named so.
    let (out, stdout, stderr) = run(s
        .command()
        .env("TOOLHOST_REGISTRY_USERNAME", REGISTRY_USER)
        .env("TOOLHOST_REGISTRY_PASSWORD", wrong)
        .args(["add", &reference, "--yes"]));
    assert!(!out.status.success());
    assert!(
        stderr.contains("the registry refused the credentials of TOOLHOST_REGISTRY_USERNAME"),
        "{stderr}"
    );
    assert!(
        !stdout.contains(wrong) && !stderr.contains(wrong),
        "{stdout}{stderr}"
    );
    assert_eq!(s.snapshot(), before);
}

#[test]
fn a_giant_manifest_a_foreign_layer_an_endless_error_a_cleartext_redirect_or_another_digest_is_refused() {
    needs!(Registry);
    let s = Setup::new();
    // A fake registry: no real one serves a manifest without end.
    let before = s.snapshot();
    let endless = fake_registry(|_| FakeAnswer::Endless(200));
    let reference = format!("http://{endless}/acme/text:1");
    let (status, stdout, stderr) = run_within(
        s.command().args(["add", &reference, "--yes"]),
        Duration::from_secs(60),
    );
    assert!(status.is_some_and(|s| !s.success()), "{stdout}{stderr}");
    assert!(
        stderr.contains(&format!(
            "{reference}: its manifest is over its cap of 4194304 bytes"
        )),
        "{stderr}"
    );
    assert_eq!(s.snapshot(), before);

    // A component's layer to be fetched from another host, over any
    // scheme: refused before any fetch.
    let component = b"\0asm";
    let manifest = |urls: Value| {
        json!({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {"mediaType": "application/vnd.wasm.config.v0+json", "digest": toolhost::supply::Digest::of(b"{}").to_string(), "size": 2},
            "layers": [{"mediaType": "application/wasm", "digest": toolhost::supply::Digest::of(component).to_string(), "size": component.len(), "urls": urls}],
        })
        .to_string()
        .into_bytes()
    };
    let foreign = manifest(json!(["http://10.0.0.1/blob"]));
    let elsewhere = fake_registry(move |_| FakeAnswer::Bytes(foreign.clone()));
    let reference = format!("http://{elsewhere}/acme/text:1");
    let (out, _, stderr) = s.toolhost(&["add", &reference, "--yes"]);
    assert!(!out.status.success());
    assert!(
        stderr.contains(&format!(
            "{reference}: its application/wasm layer names URLs to fetch it from elsewhere"
        )),
        "{stderr}"
    );
    assert_eq!(s.snapshot(), before);

    // An error without end in answer to the layer: its body is not read.
    let plain = manifest(Value::Null);
    let failing = fake_registry(move |path| match path.contains("/manifests/") {
        true => FakeAnswer::Bytes(plain.clone()),
        false => FakeAnswer::Endless(500),
    });
    let reference = format!("http://{failing}/acme/text:1");
    let (status, stdout, stderr) = run_within(
        s.command().args(["add", &reference, "--yes"]),
        Duration::from_secs(60),
    );
    assert!(status.is_some_and(|s| !s.success()), "{stdout}{stderr}");
    assert!(
        stderr.contains(&format!(
            "{reference}: the registry answered HTTP 500 for its application/wasm layer"
        )),
        "{stderr}"
    );
    assert_eq!(s.snapshot(), before);

    // The layer's GET sent on to cleartext HTTP off loopback: not
    // followed.
    let plain = manifest(Value::Null);
    let redirecting = fake_registry(move |path| match path.contains("/manifests/") {
        true => FakeAnswer::Bytes(plain.clone()),
        false => FakeAnswer::Redirect("http://10.0.0.1/blob".to_owned()),
    });
    let reference = format!("http://{redirecting}/acme/text:1");
    let (out, _, stderr) = s.toolhost(&["add", &reference, "--yes"]);
    assert!(!out.status.success());
    assert!(
        stderr.contains(&reference) && stderr.contains("a redirect to plain HTTP off loopback"),
        "{stderr}"
    );
    assert_eq!(s.snapshot(), before);

    // Asked for by digest, a manifest that is not the one named.
    let other = fake_registry(|_| FakeAnswer::Bytes(br#"{"schemaVersion":2}"#.to_vec()));
    let reference = format!("http://{other}/acme/text@sha256:{}", "1".repeat(64));
    let (out, _, stderr) = s.toolhost(&["add", &reference, "--yes"]);
    assert!(!out.status.success());
    assert!(
        stderr.contains(&reference) && stderr.contains("not the one asked for"),
        "{stderr}"
    );
    assert_eq!(s.snapshot(), before);
}

/// `toolhost add REF` without `--yes`, stopped at its question: the child,
/// its stdin still open.
fn add_waiting_for_approval(s: &Setup, reference: &str) -> std::process::Child {
    let mut child = s
        .command()
        .args(["add", reference])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let mut said = Vec::new();
    let mut buf = [0u8; 1024];
    while !String::from_utf8_lossy(&said).contains("[y/N]") {
        let n = stderr.read(&mut buf).unwrap();
        assert!(n > 0, "{}", String::from_utf8_lossy(&said));
        said.extend_from_slice(&buf[..n]);
    }
    child
}

/// Set `dir`'s modification time `ago` back.
fn backdate(dir: &Path, ago: Duration) {
    std::fs::File::open(dir)
        .unwrap()
        .set_modified(SystemTime::now() - ago)
        .unwrap();
}

#[tokio::test]
async fn a_killed_pulls_staging_is_swept_by_the_next_and_never_served() {
    needs!(Registry);
    let s = Setup::new();
    s.publish("text_tools", None, "acme/text:1", Some("vendor"));
    let reference = s.registry.reference("acme/text:1");

    // Killed (SIGKILL) while it waits for approval: its staging stays.
    let mut killed = add_waiting_for_approval(&s, &reference);
    let left = s.staging();
    assert_eq!(left.len(), 1, "{left:?}");
    killed.kill().unwrap();
    killed.wait().unwrap();
    assert_eq!(s.staging(), left);
    // A live pull, held by its process. Both ten minutes old: past any
    // grace.
    let mut waiting = add_waiting_for_approval(&s, &reference);
    let held: Vec<_> = s.staging().into_iter().filter(|p| *p != left[0]).collect();
    assert_eq!(held.len(), 1, "{held:?}");
    for dir in [&left[0], &held[0]] {
        backdate(dir, Duration::from_secs(600));
    }
    assert!(held[0].join("text.wasm").is_file());

    // `serve` loads neither: a staged component is no plugin.
    let mut command = tokio::process::Command::from(toolhost());
    command
        .current_dir(s.top.path())
        .env("HOME", s.top.path())
        .arg("serve");
    let client = stdio_client(command).await;
    let tools = client.peer().list_all_tools().await.unwrap();
    client.cancel().await.unwrap();
    assert!(!tools.iter().any(|t| t.name == "word_count"), "{tools:?}");

    // Reporting only changes nothing; the next run sweeps the dead pull's,
    // not the live one's.
    let (out, stdout, stderr) = s.toolhost(&["update", "--check"]);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert_eq!(s.staging().len(), 2);
    let (out, stdout, stderr) = s.toolhost(&["update"]);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(
        stderr.contains(&format!(
            "removed plugins/{}, left by a pull that was killed",
            left[0].file_name().unwrap().display()
        )),
        "{stderr}"
    );
    assert_eq!(s.staging(), held);

    // Approved, the live pull lands and leaves nothing behind.
    waiting.stdin.take().unwrap().write_all(b"y\n").unwrap();
    assert!(waiting.wait().unwrap().success());
    assert!(s.staging().is_empty());
    assert!(s.tools().contains(&"word_count".to_owned()));
}
