//! The `toolhost` command line over real plugin directories.

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;
use toolhost_tests::{guest, plugin_dir};

/// The release binary beside this test (`make test` builds it first).
fn toolhost() -> Command {
    let exe = std::env::current_exe().unwrap();
    let bin: PathBuf = exe.parent().unwrap().parent().unwrap().join("toolhost");
    assert!(
        bin.is_file(),
        "{} is missing: build it with `cargo build --release -p toolhost`",
        bin.display()
    );
    let mut cmd = Command::new(bin);
    cmd.arg("--no-cache").env_remove("TOOLHOST_PLUGINS");
    cmd
}

fn run(cmd: &mut Command) -> (Output, String, String) {
    let out = cmd.output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    (out, stdout, stderr)
}

#[test]
fn plugins_lists_order_worlds_and_errors() {
    let dir = plugin_dir(&[
        ("20-text", "text_tools", None),
        ("10-format", "format_pipeline", None),
    ]);
    std::fs::write(dir.path().join("30-junk.wasm"), "junk").unwrap();
    let (out, stdout, stderr) = run(toolhost()
        .arg("--plugins")
        .arg(dir.path())
        .args(["plugins", "--json"]));
    assert_eq!(out.status.code(), Some(2), "load errors give exit code 2");
    assert!(
        stderr.contains("30-junk.wasm") && stderr.contains("not a WebAssembly file"),
        "{stderr}"
    );
    let v: Value = serde_json::from_str(&stdout).unwrap();
    let plugins = v["plugins"].as_array().unwrap();
    assert_eq!(plugins[0]["name"], "format");
    assert_eq!(plugins[0]["world"], "enricher-plugin");
    assert_eq!(plugins[1]["world"], "tool-plugin");
    assert_eq!(plugins[1]["tools"][0], "word_count");
    assert_eq!(plugins[0]["status"]["state"], "healthy");
}

#[test]
fn tools_explain_shows_provenance_and_conflicts() {
    let dir = plugin_dir(&[
        ("10-a", "fixture_chain_a", None),
        ("20-b", "fixture_chain_b", None),
    ]);
    let (out, stdout, stderr) =
        run(toolhost()
            .arg("--plugins")
            .arg(dir.path())
            .args(["tools", "--explain", "create_issue"]));
    assert!(out.status.success(), "{stderr}");
    assert!(
        stdout.contains("conflict: priority changed by a then b (last wins)"),
        "{stdout}"
    );
    assert!(
        stdout
            .lines()
            .any(|l| l.contains("a") && l.contains("added") && l.contains("`chain_marker`")),
        "{stdout}"
    );

    let (out, stdout, _) = run(toolhost()
        .arg("--plugins")
        .arg(dir.path())
        .args(["tools", "--json"]));
    assert!(out.status.success());
    let v: Value = serde_json::from_str(&stdout).unwrap();
    let names: Vec<&str> = v["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"create_issue") && !names.contains(&"get_merge_request"),
        "only claimed categories"
    );

    let (out, _, stderr) =
        run(toolhost()
            .arg("--plugins")
            .arg(dir.path())
            .args(["tools", "--explain", "get_merge_request"]));
    assert!(!out.status.success() && stderr.contains("not listed"), "{stderr}");
}

#[test]
fn check_reports_each_export_and_fails_a_hostile_plugin() {
    let (out, stdout, _) = run(toolhost().arg("check").arg(guest("format_pipeline")));
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.contains("enrich-schema get_issues") && stdout.contains("passed"),
        "{stdout}"
    );

    let (out, stdout, _) = run(toolhost().args(["check", "--json"]).arg(guest("fixture_loop")));
    assert!(!out.status.success());
    let v: Value = serde_json::from_str(&stdout).unwrap();
    let failed: Vec<&Value> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["verdict"] == "fail")
        .collect();
    assert!(
        failed
            .iter()
            .any(|f| f["detail"].as_str().unwrap().contains("CPU budget")),
        "{stdout}"
    );

    let (out, _, stderr) = run(toolhost().arg("check").arg("/nonexistent/x.wasm"));
    assert!(
        !out.status.success() && stderr.contains("/nonexistent/x.wasm"),
        "{stderr}"
    );
}

/// `[plugin.NAME]` in toolhost.toml lays the user's settings over the
/// sidecar manifest: order, enabled and the plugin's own config, key by key.
#[test]
fn toolhost_toml_settings_layer_over_the_sidecar() {
    let sidecar = "[config]\npriorities = [\"Low\", \"High\"]\n[[config.projects]]\nkey = \"WEB\"\ncomponents = [\"checkout\"]\n";
    let dir = plugin_dir(&[
        ("10-a", "fixture_chain_a", None),
        ("20-b", "fixture_chain_b", None),
        ("30-jira", "jira", Some(sidecar)),
        ("40-format", "format_pipeline", None),
    ]);
    let config = dir.path().join("toolhost.toml");
    // `toolhost --config … --plugins … ARGS` with `toml` as the file.
    let with_config = |toml: &str, args: &[&str]| {
        std::fs::write(&config, toml).unwrap();
        run(toolhost()
            .arg("--config")
            .arg(&config)
            .arg("--plugins")
            .arg(dir.path())
            .args(args))
    };
    let tools = |toml: &str| {
        let (out, stdout, stderr) = with_config(toml, &["tools", "--json"]);
        assert!(out.status.success(), "{stderr}");
        let v: Value = serde_json::from_str(&stdout).unwrap();
        let props = |tool: &str| {
            v["tools"]
                .as_array()
                .unwrap()
                .iter()
                .find(|t| t["name"] == tool)
                .unwrap()["inputSchema"]["properties"]
                .clone()
        };
        (props("create_issue"), props("get_issues"))
    };

    let (before, listing) = tools("");
    assert_eq!(before["priority"]["enum"], serde_json::json!(["High", "Low"]));
    assert_eq!(before["chain_marker"]["description"], "A+B");
    assert!(listing.get("format").is_some());

    let (after, listing) = tools(
        "[plugin.a]\norder = 2\n[plugin.b]\norder = 1\n\
         [plugin.jira.config]\npriorities = [\"P1\", \"P2\"]\n\
         [plugin.format]\nenabled = false\n",
    );
    assert_eq!(
        after["priority"]["enum"],
        serde_json::json!(["P1", "P2"]),
        "the user's list replaces the vendor's"
    );
    assert_eq!(
        after["components"]["items"]["enum"],
        serde_json::json!(["checkout"]),
        "the sidecar's other config keys stay"
    );
    assert_eq!(after["chain_marker"]["description"], "A", "b now runs before a");
    assert!(listing.get("format").is_none(), "format is disabled");

    // A name that matches no plugin is an error naming it; the rest load.
    let (out, _, stderr) = with_config("[plugin.jria.config]\npriorities = [\"P1\"]\n", &["plugins"]);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("plugin `jria`"), "{stderr}");

    // A bad key is refused with the table and its line, before any loading.
    let (out, _, stderr) = with_config(
        "root = \".\"\n\n[plugin.jira.limits]\nmemroy_mb = 3\n",
        &["plugins"],
    );
    assert!(!out.status.success());
    assert!(
        stderr.contains("[plugin.jira]") && stderr.contains("memroy_mb") && stderr.contains("line 3"),
        "{stderr}"
    );
}

#[test]
fn serve_watch_refuses_a_directory_it_cannot_watch() {
    let top = tempfile::tempdir().unwrap();
    let missing = top.path().join("no-such-plugins");
    let (out, _, stderr) = run(toolhost()
        .current_dir(top.path())
        .arg("--plugins")
        .arg(&missing)
        .args(["serve", "--watch"]));
    assert!(!out.status.success());
    assert!(
        stderr.contains("cannot watch the plugin directory") && stderr.contains("no-such-plugins"),
        "{stderr}"
    );
}

/// Plugins listing names that are taken: a native tool's, text-tools'
/// `word_count`, and a base-catalog tool's; each also lists a tool of its own.
fn clashing_plugins() -> tempfile::TempDir {
    let clash =
        |ok: &str, name: &str| format!("[config]\nmode = \"clash\"\nok = \"{ok}\"\nname = \"{name}\"\n");
    plugin_dir(&[
        ("10-text", "text_tools", None),
        ("20-native", "attack_plugin", Some(&clash("native_ok", "read"))),
        (
            "30-copycat",
            "attack_plugin",
            Some(&clash("copycat_ok", "word_count")),
        ),
        (
            "40-catalog",
            "attack_plugin",
            Some(&clash("catalog_ok", "create_issue")),
        ),
    ])
}

const NATIVE_CLASH: &str = "error: plugin `native` lists tool `read`, but the name is reserved for the native tools: \
                            that tool is refused, the others are served";
const PLUGIN_CLASH: &str = "error: plugin `copycat` lists tool `word_count`, but plugin `text` (registered first) \
                            provides it: that tool is refused, the others are served";
const CATALOG_CLASH: &str = "error: plugin `catalog` lists tool `create_issue`, but the name is reserved for the \
                             base-catalog tool";

/// Every refusal is reported, on its own line, the same way by each command.
fn assert_refused(command: &str, stderr: &str, expected: &[&str]) {
    for refusal in expected {
        assert!(
            stderr.lines().any(|l| l.starts_with(refusal)),
            "{command} did not report `{refusal}`:\n{stderr}"
        );
    }
}

/// The tools a `toolhost serve` on stdio lists to an MCP client: initialize,
/// initialized, tools/list, over its real stdin and stdout.
fn served_tools(cmd: &mut Command) -> (Vec<String>, String) {
    use std::io::{BufRead, BufReader, Write};
    let mut child = cmd
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut answer = |id: u64| -> Value {
        let mut line = String::new();
        loop {
            line.clear();
            assert!(
                stdout.read_line(&mut line).unwrap() > 0,
                "serve ended before answering {id}"
            );
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                return message;
            }
        }
    };
    let initialize = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"cli-test","version":"1"}}}"#;
    writeln!(stdin, "{initialize}").unwrap();
    assert!(answer(1)["result"]["serverInfo"].is_object());
    writeln!(
        stdin,
        r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
    )
    .unwrap();
    writeln!(stdin, r#"{{"jsonrpc":"2.0","id":2,"method":"tools/list"}}"#).unwrap();
    let listed = answer(2);
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let names = listed["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("{listed}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    (names, String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn a_clashing_tool_is_refused_and_everything_else_is_served_by_every_command() {
    let dir = clashing_plugins();
    let cwd = tempfile::tempdir().unwrap();
    let all = [NATIVE_CLASH, PLUGIN_CLASH, CATALOG_CLASH];
    let with_plugins = || {
        let mut cmd = toolhost();
        cmd.current_dir(cwd.path()).arg("--plugins").arg(dir.path());
        cmd
    };

    // serve: up, listing each name once, the refused tools left out.
    let (names, stderr) = served_tools(with_plugins().arg("serve"));
    assert_refused("serve", &stderr, &all);
    for tool in ["read", "word_count", "native_ok", "copycat_ok", "catalog_ok"] {
        assert_eq!(
            names.iter().filter(|n| *n == tool).count(),
            1,
            "{tool} in {names:?}"
        );
    }
    assert!(!names.contains(&"create_issue".to_owned()), "unbound: {names:?}");

    // call: the other tools answer, the native one is the host's.
    let (out, stdout, stderr) = run(with_plugins().args(["call", "word_count", r#"{"text": "one two"}"#]));
    assert!(out.status.success(), "{stderr}");
    assert_refused("call", &stderr, &all);
    let v: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["isError"], false, "{stdout}");
    std::fs::write(cwd.path().join("notes.txt"), "native answer\n").unwrap();
    let (out, stdout, _) = run(with_plugins().args(["call", "read", r#"{"path": "notes.txt"}"#]));
    assert!(
        out.status.success() && stdout.contains("native answer"),
        "{stdout}"
    );

    // tools and plugins: the same lines, and exit code 2 as for load errors.
    let (out, stdout, stderr) = run(with_plugins().args(["tools", "--json"]));
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_refused("tools", &stderr, &all);
    let v: Value = serde_json::from_str(&stdout).unwrap();
    let listed: Vec<&str> = v["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for tool in [
        "word_count",
        "native_ok",
        "copycat_ok",
        "catalog_ok",
        "create_issue",
    ] {
        assert_eq!(
            listed.iter().filter(|n| **n == tool).count(),
            1,
            "{tool} in {listed:?}"
        );
    }
    let (out, stdout, stderr) = run(with_plugins().args(["plugins", "--json"]));
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_refused("plugins", &stderr, &all);
    let v: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["plugins"].as_array().unwrap().len(), 4, "every plugin loaded");
    assert_eq!(v["refused"].as_array().unwrap().len(), 3, "{stdout}");
    let (_, stdout, _) = run(with_plugins().arg("plugins"));
    assert!(
        stdout.contains("tools: copycat_ok, word_count (refused)"),
        "{stdout}"
    );
}

#[test]
fn a_bound_catalog_tool_its_plugin_lists_is_one_tool() {
    let dir = clashing_plugins();
    let config = dir.path().join("toolhost.toml");
    std::fs::write(&config, "[bind]\ncreate_issue = \"catalog\"\n").unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let with_config = || {
        let mut cmd = toolhost();
        cmd.current_dir(cwd.path())
            .arg("--config")
            .arg(&config)
            .arg("--plugins")
            .arg(dir.path());
        cmd
    };
    let (_, stdout, stderr) = run(with_config().args(["tools", "--json"]));
    assert_refused("tools", &stderr, &[NATIVE_CLASH, PLUGIN_CLASH]);
    assert!(!stderr.contains("`create_issue`"), "{stderr}");
    let v: Value = serde_json::from_str(&stdout).unwrap();
    let listed: Vec<&str> = v["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        listed.iter().filter(|n| **n == "create_issue").count(),
        1,
        "{listed:?}"
    );

    let (names, stderr) = served_tools(with_config().arg("serve"));
    assert!(!stderr.contains("`create_issue`"), "{stderr}");
    assert_eq!(
        names.iter().filter(|n| *n == "create_issue").count(),
        1,
        "{names:?}"
    );
}
