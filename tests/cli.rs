//! The `toolhost` command line over real plugin directories.

use std::process::{Command, Output};

use serde_json::{Value, json};
use toolhost_tests::providers::BUNDLE;
use toolhost_tests::stdio::StdioServe;
use toolhost_tests::{
    JIRA_SIDECAR, guest, needs, plugin_dir, run, run_configured, toolhost, toolhost_binary,
};

#[path = "audit.rs"]
mod audit;
#[path = "credentials.rs"]
mod credentials;
#[path = "http_auth.rs"]
mod http_auth;
#[path = "http_front.rs"]
mod http_front;
#[path = "policy.rs"]
mod policy;
#[path = "task_extension.rs"]
mod task_extension;
#[path = "telemetry.rs"]
mod telemetry;

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
    // Not served (nothing is bound to it), but what the enrichers make of
    // it is still shown, after why.
    let (out, stdout, stderr) =
        run(toolhost()
            .arg("--plugins")
            .arg(dir.path())
            .args(["tools", "--explain", "create_issue"]));
    assert!(out.status.success(), "{stderr}");
    assert!(
        stdout.starts_with("create_issue: not served: a base-catalog tool with no backend"),
        "{stdout}"
    );
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
    assert_eq!(names(&v["tools"]), NATIVE, "only what serve serves");
    let hidden = names(&v["hidden"]);
    assert!(
        hidden.contains(&"create_issue") && hidden.contains(&"get_merge_request"),
        "{hidden:?}"
    );

    let (out, stdout, stderr) =
        run(toolhost()
            .arg("--plugins")
            .arg(dir.path())
            .args(["tools", "--explain", "get_merge_request"]));
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.starts_with("get_merge_request: not served"), "{stdout}");
    let (out, _, stderr) =
        run(toolhost()
            .arg("--plugins")
            .arg(dir.path())
            .args(["tools", "--explain", "no_such_tool"]));
    assert!(
        !out.status.success() && stderr.contains("`no_such_tool` is unknown"),
        "{stderr}"
    );
}

/// The native tools `serve` offers with no configuration.
const NATIVE: [&str; 5] = ["read", "glob", "grep", "ls", "web_fetch"];

/// The `name` of each entry of a JSON list.
fn names(list: &Value) -> Vec<&str> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect()
}

/// `toolhost tools` lists what `serve` serves: the native tools and the
/// tool plugins' tools, not base-catalog tools with no backend; those are
/// shown, with why, under `--all`.
#[test]
fn tools_lists_what_serve_serves() {
    let dir = plugin_dir(&[("10-a", "fixture_chain_a", None), ("20-text", "text_tools", None)]);
    let (out, stdout, stderr) = run(toolhost()
        .arg("--plugins")
        .arg(dir.path())
        .args(["tools", "--json"]));
    assert!(out.status.success(), "{stderr}");
    let v: Value = serde_json::from_str(&stdout).unwrap();
    let mut expected = NATIVE.to_vec();
    expected.extend(["word_count", "slow_count", "fail"]);
    assert_eq!(names(&v["tools"]), expected);

    let (out, stdout, _) = run(toolhost().arg("--plugins").arg(dir.path()).arg("tools"));
    assert!(out.status.success());
    assert!(!stdout.contains("get_issues"), "{stdout}");
    assert!(stdout.contains("--all shows why"), "{stdout}");
    let (out, stdout, _) = run(toolhost()
        .arg("--plugins")
        .arg(dir.path())
        .args(["tools", "--all"]));
    assert!(out.status.success());
    assert!(
        stdout.contains("hidden: get_issues: a base-catalog tool with no backend")
            && stdout.contains("`[bind] get_issues = \"NAME\"`"),
        "{stdout}"
    );
    assert!(
        stdout.contains("hidden: get_merge_request: a base-catalog tool with no backend"),
        "{stdout}"
    );
}

/// A reader that goes before the end (`toolhost tools | head -1`) ends the
/// command quietly, as `cat` would: no `Broken pipe` error and no panic.
/// Each command writes after its reader has gone, through `writeln!`
/// (`tools`, `plugins`) and through the `println!` it replaced (`call`).
#[test]
fn a_reader_closing_standard_output_early_ends_the_command_quietly() {
    let dir = plugin_dir(&[("10-text", "text_tools", None)]);
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("big.txt"), "line\n".repeat(50_000)).unwrap();
    let commands: [&[&str]; 5] = [
        &["tools"],
        &["tools", "--json"],
        &["tools", "--explain", "read"],
        &["plugins"],
        &["call", "read", r#"{"path": "big.txt"}"#],
    ];
    for args in commands {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = toolhost()
            .arg("--plugins")
            .arg(dir.path())
            .arg("--root")
            .arg(root.path())
            .args(args)
            .stdout(writer)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {stderr}");
        assert!(
            !stderr.contains("Broken pipe") && !stderr.contains("panicked"),
            "{args:?}: {stderr}"
        );
    }
}

/// With no --plugins, no configuration and no ./plugins, `plugins` takes
/// the directory `serve` takes: build/plugins of the tree the binary was
/// built in (`TREE/target/PROFILE/toolhost`). The tree is made here around
/// a copy of the binary, so that the test holds wherever cargo's target
/// directory is (`CARGO_TARGET_DIR` may put it outside the source tree).
#[test]
fn with_no_plugin_directory_the_bundle_of_the_build_tree_is_taken() {
    let tree = tempfile::tempdir().unwrap();
    let toolhost = toolhost_in_a_tree(tree.path());
    let bundle = tree.path().join("build/plugins");
    std::fs::create_dir_all(&bundle).unwrap();
    std::fs::copy(guest("format_pipeline"), bundle.join("10-format-pipeline.wasm")).unwrap();
    let top = tempfile::tempdir().unwrap();
    let (out, stdout, stderr) = run(Command::new(toolhost)
        .current_dir(top.path())
        .env_remove("TOOLHOST_PLUGINS")
        .args(["--no-cache", "plugins", "--json"]));
    assert!(out.status.success(), "{stderr}");
    let v: Value = serde_json::from_str(&stdout).unwrap();
    let taken = v["directory"].as_str().map(|d| std::fs::canonicalize(d).unwrap());
    assert_eq!(taken, Some(std::fs::canonicalize(&bundle).unwrap()), "{stdout}");
    assert_eq!(names(&v["plugins"]), ["format-pipeline"]);
}

/// An upstream server that cannot be reached is named with the reason
/// (the command not found, the connection refused), and the rest serves.
#[test]
fn an_upstream_that_cannot_be_reached_is_named_with_why() {
    let dir = tempfile::tempdir().unwrap();
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let toml = format!(
        "[[upstream]]\nname = \"gone\"\ncommand = \"toolhost-no-such-command\"\n\
         [[upstream]]\nname = \"down\"\nurl = \"http://{closed}/mcp\"\n"
    );
    let (out, stdout, stderr) =
        run_configured(&dir.path().join("toolhost.toml"), dir.path(), &toml, &["tools"]);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stdout.contains("read"), "the native tools are served: {stdout}");
    let line = |name: &str| {
        stderr
            .lines()
            .find(|l| l.starts_with(&format!("error: upstream `{name}`: ")))
            .unwrap_or_else(|| panic!("no line for {name}: {stderr}"))
            .to_owned()
    };
    assert!(
        line("gone").contains("cannot start `toolhost-no-such-command`: No such file"),
        "{stderr}"
    );
    let down = line("down");
    assert!(down.contains("Connection refused"), "{down}");
    assert!(!down.contains("rmcp::"), "no Rust type names: {down}");
}

/// An upstream server that echoes the header it was sent, or answers at
/// length, in its refusal of `initialize`: its error names the server with
/// the secret redacted and is cut to the error cap.
#[test]
fn an_upstream_echoing_its_secret_in_a_refusal_is_reported_redacted_and_bounded() {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let (mut sent, mut length) = (String::new(), 0);
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                let lower = line.to_ascii_lowercase();
                if let Some(value) = lower.strip_prefix("authorization:") {
                    sent = line[line.len() - value.len()..].trim().to_owned();
                }
                if let Some(value) = lower.strip_prefix("content-length:") {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let id = serde_json::from_slice::<Value>(&body)
                .map(|b| b["id"].clone())
                .unwrap_or_default();
            let refusal = format!("you sent {sent}; {}", "x".repeat(100_000));
            let answer = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32000, "message": refusal}})
                .to_string();
            let mut stream = stream;
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
                answer.len()
            );
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let toml = format!(
        "[[upstream]]\nname = \"echo\"\nurl = \"http://{addr}/mcp\"\n\
         headers = {{ Authorization = \"Bearer sekrit-token-123\" }}\n"
    );
    let (out, _, stderr) = run_configured(&dir.path().join("toolhost.toml"), dir.path(), &toml, &["tools"]);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let line = stderr
        .lines()
        .find(|l| l.starts_with("error: upstream `echo`: "))
        .unwrap_or_else(|| panic!("no line for the server: {stderr}"));
    assert!(line.contains("you sent "), "{line}");
    assert!(!stderr.contains("sekrit-token-123"), "{line}");
    assert!(line.len() < 20_000, "{} bytes", line.len());
}

/// The log a client keeps of `serve`'s stderr (a pipe, here) has no
/// terminal colour codes around its lines.
#[test]
fn the_log_on_a_pipe_is_plain_text() {
    let dir = tempfile::tempdir().unwrap();
    let (_, _, stderr) = run(toolhost()
        .current_dir(dir.path())
        .env_remove("NO_COLOR")
        .args(["--plugins", "."])
        .arg("serve")
        .stdin(std::process::Stdio::null()));
    assert!(stderr.contains("speculation: 0 prefetched"), "{stderr}");
    assert!(!stderr.contains('\x1b'), "{stderr:?}");
}

/// A copy of the command line in `tree`'s `target/debug`, where it takes
/// `tree`'s `build/plugins` when no plugin directory is named.
fn toolhost_in_a_tree(tree: &std::path::Path) -> std::path::PathBuf {
    let bin = tree.join("target/debug");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::copy(toolhost_binary(), bin.join("toolhost")).unwrap();
    bin.join("toolhost")
}

/// `new --lang rust` from a binary built in a source tree builds on that
/// tree's SDK, with nothing to edit; from one elsewhere, on the registry's,
/// and says how to name a copy.
#[test]
fn a_rust_plugin_scaffolded_by_a_built_tree_builds_on_its_sdk() {
    let tree = tempfile::tempdir().unwrap();
    let toolhost = toolhost_in_a_tree(tree.path());
    let new = |name: &str| {
        let work = tempfile::tempdir().unwrap();
        let (out, stdout, stderr) = run(Command::new(&toolhost)
            .current_dir(work.path())
            .args(["new", "--lang", "rust", name]));
        assert!(out.status.success(), "{stderr}");
        let cargo = std::fs::read_to_string(work.path().join(name).join("Cargo.toml")).unwrap();
        (stdout, cargo)
    };
    let (stdout, cargo) = new("from-registry");
    assert!(cargo.contains("toolhost-sdk = \"0.3\""), "{cargo}");
    assert!(stdout.contains("path = \"...\""), "{stdout}");

    let sdk = tree.path().join("sdk");
    std::fs::create_dir_all(&sdk).unwrap();
    std::fs::write(sdk.join("Cargo.toml"), "[package]\nname = \"toolhost-sdk\"\n").unwrap();
    let (stdout, cargo) = new("from-tree");
    let path = format!("path = {:?}", sdk.display().to_string());
    assert!(cargo.contains(&path), "{cargo}");
    assert!(stdout.contains(&sdk.display().to_string()), "{stdout}");
}

/// `[plugin.NAME]` settings when no plugin directory is in use (none
/// named, no `./plugins`, no bundle) apply to nothing: an error naming the
/// file and the table from the commands that load, not silence.
#[test]
fn plugin_settings_with_no_plugin_directory_are_an_error() {
    let tree = tempfile::tempdir().unwrap();
    let toolhost = toolhost_in_a_tree(tree.path());
    let config = tree.path().join("toolhost.toml");
    std::fs::write(&config, "[plugin.github.limits]\nmemory_mb = 64\n").unwrap();
    for args in [&["plugins"][..], &["tools", "--json"]] {
        let (out, _, stderr) = run(Command::new(&toolhost)
            .current_dir(tree.path())
            .env_remove("TOOLHOST_PLUGINS")
            .arg("--no-cache")
            .arg("--config")
            .arg(&config)
            .args(args));
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains("toolhost.toml: [plugin.github] applies to no plugin"),
            "{args:?}: {stderr}"
        );
    }
}

/// A code cache entry rewritten after the cache recorded it is refused
/// once at a start, said in one warning, and its plugin compiled and
/// listed: the start neither hashes it twice nor warns twice.
#[test]
fn a_refused_cache_entry_is_said_once_and_its_plugin_compiled() {
    let dir = plugin_dir(&[("10-text", "text_tools", None)]);
    let cache = tempfile::tempdir().unwrap();
    let list = || {
        run(Command::new(toolhost_binary())
            .env("XDG_CACHE_HOME", cache.path())
            .env_remove("TOOLHOST_PLUGINS")
            .arg("--plugins")
            .arg(dir.path())
            .args(["plugins", "--json"]))
    };
    assert!(list().0.status.success());
    // Recorded once the entry and the plugin file are two seconds old.
    std::thread::sleep(std::time::Duration::from_millis(2100));
    assert!(list().0.status.success());
    let entry = std::fs::read_dir(cache.path().join("toolhost/code"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "cwasm"))
        .unwrap();
    let mut code = std::fs::read(&entry).unwrap();
    let middle = code.len() / 2;
    code[middle] ^= 0xff;
    std::fs::OpenOptions::new()
        .write(true)
        .open(&entry)
        .and_then(|mut file| std::io::Write::write_all(&mut file, &code))
        .unwrap();
    let (out, stdout, stderr) = list();
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stderr.matches("recompiling").count(), 1, "{stderr}");
    let v: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["plugins"][0]["tools"][0], "word_count", "{stdout}");
}

/// `--code-cache DIR` (or `TOOLHOST_CODE_CACHE`) keeps compiled code in DIR
/// even with `--no-cache`, which then writes nothing else: the first run
/// compiles, the next loads the code DIR holds.
#[test]
fn the_code_cache_named_is_used_with_no_cache_and_holds_only_code() {
    use toolhost_tests::CODE_CACHE_VAR;
    let dir = plugin_dir(&[("10-text", "text_tools", None)]);
    let cache = tempfile::tempdir().unwrap();
    let code = cache.path().join("code");
    let top = tempfile::tempdir().unwrap();
    // How the run names the code cache: by its option, its variable, or not.
    let list = |named: Option<&str>| {
        let mut command = Command::new(toolhost_binary());
        command
            .current_dir(top.path())
            .env_remove(CODE_CACHE_VAR)
            .env("XDG_CACHE_HOME", cache.path().join("xdg"));
        match named {
            Some("option") => command.arg("--code-cache").arg(&code),
            Some(_) => command.env(CODE_CACHE_VAR, &code),
            None => &mut command,
        };
        let (out, stdout, stderr) =
            run(command
                .arg("--plugins")
                .arg(dir.path())
                .args(["--no-cache", "plugins", "--json"]));
        assert!(out.status.success(), "{stderr}");
        let v: Value = serde_json::from_str(&stdout).unwrap();
        v["plugins"][0]["code"].as_str().unwrap().to_owned()
    };
    assert_eq!(list(Some("option")), "compiled");
    assert_eq!(list(Some("variable")), "cached");
    assert_eq!(list(None), "compiled", "--no-cache alone used a cache");
    let entries: Vec<String> = std::fs::read_dir(&code)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(entries.iter().any(|n| n.ends_with(".cwasm")), "{entries:?}");
    assert!(!entries.iter().any(|n| n.starts_with("stats")), "{entries:?}");
    assert!(
        !cache.path().join("xdg").exists(),
        "the default cache was written"
    );
    assert_eq!(std::fs::read_dir(top.path()).unwrap().count(), 0);
}

/// What `make bundled` puts in build/plugins, which `make run` serves: the
/// format pipeline, and no test fixture.
#[test]
fn the_bundle_holds_no_test_fixture() {
    needs!(Bundled);
    let bundle = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../build/plugins");
    let mut files: Vec<String> = std::fs::read_dir(&bundle)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert_eq!(files, ["10-format-pipeline.wasm"], "{}", bundle.display());
}

/// A ./plugins directory is what `plugins` and `tools` take, as `serve`
/// does, before the bundle.
#[test]
fn plugins_and_tools_find_the_plugin_directory_as_serve_does() {
    let top = tempfile::tempdir().unwrap();
    let local = top.path().join("plugins");
    std::fs::create_dir(&local).unwrap();
    std::fs::copy(guest("text_tools"), local.join("20-text.wasm")).unwrap();
    let (out, stdout, stderr) = run(toolhost().current_dir(top.path()).args(["plugins", "--json"]));
    assert!(out.status.success(), "{stderr}");
    let v: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["directory"], "plugins");
    assert_eq!(names(&v["plugins"]), ["text"]);
    let (out, stdout, stderr) = run(toolhost().current_dir(top.path()).args(["tools", "--json"]));
    assert!(out.status.success(), "{stderr}");
    let v: Value = serde_json::from_str(&stdout).unwrap();
    assert!(names(&v["tools"]).contains(&"word_count"), "{stdout}");
}

/// A directory named like a plugin is reported like a file that does not
/// load; the others load.
/// Named once with its reason: the error's message says its cause, which
/// was printed a second time as the cause.
#[test]
fn an_unreadable_plugin_directory_is_named_with_its_reason_once() {
    let out = toolhost()
        .args(["--plugins", "/nonexistent/plugins", "tools"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    let reason = std::io::Error::from_raw_os_error(2).to_string();
    assert!(
        stderr.contains(&format!(
            "cannot read the plugin directory /nonexistent/plugins: {reason}"
        )),
        "{stderr}"
    );
    assert_eq!(stderr.matches(&reason).count(), 1, "{stderr}");
}

#[test]
fn a_directory_named_like_a_plugin_is_reported() {
    let dir = plugin_dir(&[("20-text", "text_tools", None)]);
    std::fs::create_dir(dir.path().join("10-x.wasm")).unwrap();
    let (out, stdout, stderr) = run(toolhost()
        .arg("--plugins")
        .arg(dir.path())
        .args(["plugins", "--json"]));
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("10-x.wasm: is a directory, not a plugin"),
        "{stderr}"
    );
    let v: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(names(&v["plugins"]), ["text"]);
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
    let dir = plugin_dir(&[
        ("10-a", "fixture_chain_a", None),
        ("20-b", "fixture_chain_b", None),
        ("30-jira", "jira", Some(JIRA_SIDECAR)),
        ("40-format", "format_pipeline", None),
        ("50-text", "text_tools", None),
    ]);
    // Jira's full plugin implements the catalog tools it lists: no `[bind]`.
    // A file of another name than toolhost.toml, which errors name.
    let config = dir.path().join("team.toml");
    // `toolhost --config … --plugins … ARGS` with `toml` as the file.
    let with_config = |toml: &str, args: &[&str]| run_configured(&config, dir.path(), toml, args);
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
    // The site's names, then the aliases the enricher maps onto them.
    assert_eq!(
        before["priority"]["enum"],
        serde_json::json!(["High", "Low", "high", "low"])
    );
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
    assert!(
        stderr.contains("team.toml has settings for plugin `jria`, which is not in this directory"),
        "{stderr}"
    );

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

/// An address another process listens on is named, with why, before any
/// plugin is loaded (the broken one here would be reported) and with no
/// figures of a serve that never began.
#[test]
fn serve_http_on_an_address_in_use_names_it_before_loading_anything() {
    let top = tempfile::tempdir().unwrap();
    std::fs::write(top.path().join("broken.wasm"), b"not a component").unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let (out, _, stderr) = run(toolhost()
        .current_dir(top.path())
        .arg("--plugins")
        .arg(top.path())
        .args(["serve", "--http", &addr]));
    assert!(!out.status.success());
    assert!(
        stderr.contains(&format!("cannot listen on {addr}")) && stderr.contains("Address already in use"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("broken") && !stderr.contains("speculation:") && !stderr.contains("serving MCP"),
        "{stderr}"
    );
}
/// Plugins listing names that are taken: a native tool's, text-tools'
/// `word_count`, and a base-catalog tool's; each also lists a tool of its own.
/// Plugins whose tools clash with a native tool, another plugin's tool and
/// the base-catalog tool `catalog_tool` (the `catalog` plugin claims
/// `issue_tracker`: it implements a catalog tool of that category).
fn clashing_plugins(catalog_tool: &str) -> tempfile::TempDir {
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
            Some(&clash("catalog_ok", catalog_tool)),
        ),
    ])
}

const NATIVE_CLASH: &str = "error: plugin `native` lists tool `read`, but the name is reserved for the native tools: \
                            that tool is refused, the others are served";
const PLUGIN_CLASH: &str = "error: plugin `copycat` lists tool `word_count`, but plugin `text` (registered first) \
                            provides it: that tool is refused, the others are served";
const CATALOG_CLASH: &str = "error: plugin `catalog` lists tool `get_meeting_notes`, but the name is reserved \
                             for the base-catalog tool";

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
    let mut serve = StdioServe::spawn(cmd);
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "cli-test", "version": "1"},
    }});
    assert!(serve.initialize(&initialize)["result"]["serverInfo"].is_object());
    let listed = serve.request(2, "tools/list", json!({}));
    let out = serve.end();
    let served = names(&listed["result"]["tools"])
        .into_iter()
        .map(str::to_owned)
        .collect();
    (served, String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn a_clashing_tool_is_refused_and_everything_else_is_served_by_every_command() {
    // A catalog tool of a category the plugin does not claim.
    let dir = clashing_plugins("get_meeting_notes");
    let cwd = tempfile::tempdir().unwrap();
    let all = [NATIVE_CLASH, PLUGIN_CLASH, CATALOG_CLASH];
    let with_plugins = || {
        let mut cmd = toolhost();
        cmd.current_dir(cwd.path()).arg("--plugins").arg(dir.path());
        cmd
    };

    // serve: up, listing each name once, the refused tools left out.
    let (served, stderr) = served_tools(with_plugins().arg("serve"));
    assert_refused("serve", &stderr, &all);
    for tool in ["read", "word_count", "native_ok", "copycat_ok", "catalog_ok"] {
        assert_eq!(
            served.iter().filter(|n| *n == tool).count(),
            1,
            "{tool} in {served:?}"
        );
    }
    assert!(
        !served.contains(&"create_issue".to_owned()),
        "unbound: {served:?}"
    );

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
    let listed = names(&v["tools"]);
    for tool in ["read", "word_count", "native_ok", "copycat_ok", "catalog_ok"] {
        assert_eq!(
            listed.iter().filter(|n| **n == tool).count(),
            1,
            "{tool} in {listed:?}"
        );
    }
    assert!(!listed.contains(&"create_issue"), "unbound: {listed:?}");
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
    let dir = clashing_plugins("create_issue");
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
    let listed = names(&v["tools"]);
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

/// Run `cmd` on a pseudo-terminal `columns` wide (`tests/common/on_terminal.py`);
/// what it wrote there (stdout and stderr) is the second value.
fn on_terminal(columns: u16, cmd: &Command) -> (Output, String, String) {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("common/on_terminal.py");
    let mut python = Command::new("python3");
    python
        .arg(script)
        .arg(columns.to_string())
        .arg(cmd.get_program())
        .args(cmd.get_args());
    for (key, value) in cmd.get_envs() {
        match value {
            Some(value) => python.env(key, value),
            None => python.env_remove(key),
        };
    }
    if let Some(dir) = cmd.get_current_dir() {
        python.current_dir(dir);
    }
    run(&mut python)
}

/// `toolhost call` on a terminal shows the call and its result as the
/// tool plugin renders them, cut to the terminal's width, or plainly; with
/// --json, or when stdout is not a terminal, the JSON result.
#[test]
fn call_on_a_terminal_renders_the_call_and_its_result() {
    let dir = plugin_dir(&[("20-text", "text_tools", None)]);
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("a.txt"), "hello from a\n").unwrap();
    let call = |args: &[&str]| {
        let mut cmd = toolhost();
        cmd.arg("--plugins")
            .arg(dir.path())
            .arg("--root")
            .arg(root.path())
            .arg("call")
            .args(args);
        cmd
    };

    let (out, shown, _) = on_terminal(80, &call(&["word_count", r#"{"text": "one two three"}"#]));
    assert!(out.status.success(), "{shown}");
    let lines: Vec<&str> = shown.lines().collect();
    assert_eq!(lines, ["word_count(one two three)", "3 words"], "{shown}");

    // The plugin's call view is 33 columns: cut to the terminal's 20.
    let long = r#"{"text": "a text far longer than twenty characters"}"#;
    let (out, shown, _) = on_terminal(20, &call(&["word_count", long]));
    assert!(out.status.success(), "{shown}");
    assert_eq!(shown.lines().next(), Some("word_count(a text f…"), "{shown}");

    // No renderer: the call as given, the result's text.
    let (out, shown, _) = on_terminal(80, &call(&["read", r#"{"path": "a.txt"}"#]));
    assert!(out.status.success(), "{shown}");
    assert!(
        shown.starts_with("read {\"path\":\"a.txt\"}\n") && shown.contains("hello from a"),
        "{shown}"
    );
    let (out, shown, _) = on_terminal(80, &call(&["fail", r#"{"kind": "failed"}"#]));
    assert!(out.status.success(), "{shown}");
    assert!(shown.contains("\nerror: fail: asked to fail"), "{shown}");

    // --json on the terminal, and a pipe without it: JSON.
    let (out, shown, _) = on_terminal(80, &call(&["--json", "word_count", r#"{"text": "a b"}"#]));
    assert!(out.status.success(), "{shown}");
    let v: Value = serde_json::from_str(&shown).unwrap();
    assert_eq!(v["structured"]["words"], 2);
    let (out, stdout, stderr) = run(&mut call(&["word_count", r#"{"text": "a b"}"#]));
    assert!(out.status.success(), "{stderr}");
    let v: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["content"], "2 words");
}

/// Two vendors of one category: the first registered full plugin implements
/// the catalog tools it lists, the other's are refused saying how to
/// choose, and `[bind]` chooses the other.
#[test]
fn the_first_vendor_implements_a_catalog_tool_and_bind_picks_another() {
    let dir = plugin_dir(&[
        (
            "10-github",
            "github",
            Some("[config]\nowner = \"acme\"\nrepo = \"widgets\"\n[grants]\nhttp = [\"api.github.com\"]\n"),
        ),
        (
            "20-gitlab",
            "gitlab",
            Some("[config]\nproject = \"acme/widgets\"\n[grants]\nhttp = [\"gitlab.com\"]\n"),
        ),
    ]);
    let cwd = tempfile::tempdir().unwrap();
    let serve = |config: &str| {
        std::fs::write(cwd.path().join("toolhost.toml"), config).unwrap();
        let mut cmd = toolhost();
        cmd.current_dir(cwd.path())
            .arg("--plugins")
            .arg(dir.path())
            .arg("serve");
        served_tools(&mut cmd)
    };

    let (served, stderr) = serve("");
    assert!(served.contains(&"get_issues".to_owned()), "{served:?}");
    assert_refused(
        "serve",
        &stderr,
        &[
            "error: plugin `gitlab`: 23 tools not offered, their names are taken (23 provided by plugin `github`): \
           get_issues,",
        ],
    );
    assert_eq!(
        served.iter().filter(|t| *t == "get_issues").count(),
        1,
        "{served:?}"
    );

    let (served, stderr) = serve("[bind]\nget_issues = \"gitlab\"\n");
    assert_eq!(
        served.iter().filter(|t| *t == "get_issues").count(),
        1,
        "{served:?}"
    );
    assert_refused(
        "serve",
        &stderr,
        &[
            "error: plugin `github` lists tool `get_issues`, but the name is the base-catalog tool's, \
           bound to `gitlab` by `[bind]`",
        ],
    );
}

/// The seven providers together clash on every catalog tool a vendor
/// registered before them implements: each command sums that up in one line
/// per plugin, the counts adding up to every refusal, and
/// `tools --explain NAME` gives each refusal of that tool in full.
#[test]
fn the_provider_bundle_reports_its_clashes_in_one_line_per_plugin() {
    let dir = plugin_dir(&BUNDLE);
    let cwd = tempfile::tempdir().unwrap();
    let with_plugins = || {
        let mut cmd = toolhost();
        cmd.current_dir(cwd.path()).arg("--plugins").arg(dir.path());
        cmd
    };
    let (_, stdout, _) = run(with_plugins().args(["plugins", "--json"]));
    let v: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["plugins"].as_array().unwrap().len(), 7, "{stdout}");
    let refused = v["refused"].as_array().unwrap().len();
    assert!(
        refused > 40,
        "the vendors share the issue-tracker tools: {refused}"
    );

    let (served, stderr) = served_tools(with_plugins().arg("serve"));
    assert!(served.contains(&"get_issues".to_owned()), "{served:?}");
    let errors: Vec<&str> = stderr.lines().filter(|l| l.starts_with("error: ")).collect();
    let plugins: Vec<&str> = errors.iter().map(|l| l.split('`').nth(1).unwrap_or(l)).collect();
    assert_eq!(plugins, ["gitlab", "jira", "clickup", "linear"], "{stderr}");
    // Each vendor edits only what the vendors before it left: GitHub takes
    // `link_issues`' fields away, and the others' enums for them are not
    // failed edits.
    assert!(!stderr.contains("skipping enrichment"), "{stderr}");
    let mut counted = 0;
    for line in &errors {
        let (_, rest) = line.split_once("`: ").expect(line);
        let (count, rest) = rest
            .split_once(" tools not offered, their names are taken (")
            .expect(line);
        assert!(
            rest.contains("provided by plugin `github`") && rest.contains(" more; "),
            "{line}"
        );
        assert!(line.len() < 400, "bounded: {line}");
        counted += count.parse::<usize>().unwrap();
    }
    assert_eq!(counted, refused, "{stderr}");

    let (out, stdout, _) = run(with_plugins().args(["tools", "--explain", "get_issues"]));
    assert_eq!(out.status.code(), Some(2), "refusals are errors");
    let explained: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("not offered: "))
        .collect();
    assert_eq!(explained.len(), 4, "{stdout}");
    for (line, plugin) in explained.iter().zip(["gitlab", "jira", "clickup", "linear"]) {
        assert!(
            line.starts_with(&format!(
                "not offered: plugin `{plugin}` lists tool `get_issues`, but the name is the base-catalog \
                 tool's, implemented by plugin `github` (registered first; choose another with `[bind] get_issues"
            )),
            "{line}"
        );
    }
}

/// A client that writes calls without reading their answers: the host
/// works on a bounded number at once and reads nothing more while they
/// are unanswered, so the client's writes stall instead of the host
/// holding every call. Once the client reads, every call is answered, once.
#[test]
fn a_client_writing_calls_without_reading_is_held_to_the_unanswered_bound() {
    let answers = flood_unread(|n| n + 2);
    let mut answered = vec![false; FLOOD + 2];
    for answer in answers {
        let id = answer["id"].as_u64().unwrap() as usize;
        assert!(!std::mem::replace(&mut answered[id], true), "{id} answered twice");
        let text = &answer["result"]["content"][0]["text"];
        assert!(text.as_str().is_some_and(|t| t.contains("flooded")), "{answer}");
    }
}

/// The same flood under one id: the host would work on every call under an
/// id already being answered, outside its bound, so each such call is
/// refused, and the writes stall on the refusals the client does not read.
#[test]
fn a_client_flooding_calls_under_one_id_is_refused_each_one_the_id_is_busy() {
    let answers = flood_unread(|_| 7);
    let (mut results, mut refused) = (0, 0);
    for answer in answers {
        assert_eq!(answer["id"], 7, "{answer}");
        if answer["error"]["code"] == -32600 {
            let message = answer["error"]["message"].as_str().unwrap_or_default();
            assert!(message.contains("id 7 is already used"), "{answer}");
            refused += 1;
        } else {
            let text = &answer["result"]["content"][0]["text"];
            assert!(text.as_str().is_some_and(|t| t.contains("flooded")), "{answer}");
            results += 1;
        }
    }
    assert!(
        results > 0 && refused > 0,
        "{results} answered, {refused} refused"
    );
}

/// How many calls [`flood_unread`] writes.
const FLOOD: usize = 20_000;

/// Writes [`FLOOD`] `read` calls to `toolhost serve`, the `n`th under
/// `id(n)`, without reading an answer; checks the host stopped reading
/// before the last, then reads every answer.
fn flood_unread(id: fn(usize) -> usize) -> Vec<Value> {
    use std::io::Write;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("a.txt"), "flooded\n").unwrap();
    let plugins = tempfile::tempdir().unwrap();
    let mut serve = StdioServe::spawn(
        toolhost()
            .current_dir(root.path())
            .arg("--plugins")
            .arg(plugins.path())
            .arg("serve"),
    );
    serve.initialize(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "flood", "version": "1"},
        }}),
    );
    let mut stdin = serve.take_stdin();
    let written = Arc::new(AtomicUsize::new(0));
    let writer = std::thread::spawn({
        let written = written.clone();
        move || {
            for n in 0..FLOOD {
                let call = json!({"jsonrpc": "2.0", "id": id(n), "method": "tools/call",
                    "params": {"name": "read", "arguments": {"path": "a.txt"}}});
                writeln!(stdin, "{call}").unwrap();
                written.fetch_add(1, Ordering::Relaxed);
            }
            stdin
        }
    });
    // Until the writer is done, or has written nothing for a second.
    let mut before = usize::MAX;
    while !writer.is_finished() && written.load(Ordering::Relaxed) != before {
        before = written.load(Ordering::Relaxed);
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
    assert!(
        !writer.is_finished(),
        "the host read all {FLOOD} calls while none of their answers was read"
    );
    // Read on a thread, so a host that stops answering fails the test
    // rather than hanging it.
    let (answered, answers) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        for _ in 0..FLOOD {
            let _ = answered.send(serve.message());
        }
        serve
    });
    let answers = (0..FLOOD)
        .map(
            |n| match answers.recv_timeout(std::time::Duration::from_secs(60)) {
                Ok(Some(answer)) => answer,
                _ => panic!("the host stopped answering after {n} of {FLOOD} calls"),
            },
        )
        .collect();
    drop(writer.join().unwrap());
    let out = reader.join().unwrap().end();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    answers
}
