//! Recording plugin calls (`serve --record`), replaying them
//! (`toolhost replay`), and shadow candidates (`[plugin.NAME] shadow`),
//! through the release `toolhost` served to a real MCP client (rmcp over
//! stdio) with plugins built from source.
//!
//! The session: `create_issue` bound to text-tools, enriched and
//! transformed by fixture_chain_a (`a`); chain_b, which enriches and
//! transforms `create_issue` otherwise, is the changed plugin and the
//! differing candidate, fixture_trap the trapping one.
//!
//! Replay is run on recordings from anyone: forged ones whose hooks fetch
//! (fixture_attack_http, granted a [`LoopbackServer`] that counts what it
//! receives, with a secret), that name another plugin directory or
//! another component, or that are absurd.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};
use toolhost::supply::Digest;
use toolhost_tests::{LoopbackServer, fill_plugin_dir, guest, run, stdio_client, toolhost};

const TOKEN_ENV: &str = "RECORD_TEST_TOKEN";
const TOKEN: &str = "rec-s3cret-7f1d";

/// text-tools granted a secret (sent nowhere it could be reached): its
/// redactor knows the value.
const TEXT_TOOLS_MANIFEST: &str = "[grants]\nhttp = [\"http://127.0.0.1:9\"]\n\
    [grants.secrets.tracker]\nenv = \"RECORD_TEST_TOKEN\"\nheader = \"Authorization\"\n\
    hosts = [\"http://127.0.0.1:9\"]\nallow_loopback_http = true\n";

/// A working directory: `plugins/` with `a` and text-tools, and a
/// toolhost.toml binding `create_issue` to text-tools, with `extra`.
struct Session {
    top: tempfile::TempDir,
}

impl Session {
    fn new(extra: &str) -> Self {
        let top = tempfile::tempdir().unwrap();
        let plugins = top.path().join("plugins");
        std::fs::create_dir(&plugins).unwrap();
        fill_plugin_dir(
            &plugins,
            &[
                ("10-a", "fixture_chain_a", None),
                ("20-text-tools", "text_tools", Some(TEXT_TOOLS_MANIFEST)),
            ],
        );
        std::fs::write(
            top.path().join("toolhost.toml"),
            format!(
                "plugins = \"plugins\"\n[bind]\ncreate_issue = \"text-tools\"\n\
                 [speculation]\nstats_file = \"stats.json\"\n{extra}"
            ),
        )
        .unwrap();
        Self { top }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.top.path().join(name)
    }

    /// Serve (`serve ARGS`) to an rmcp client: list the tools, call
    /// `create_issue` and `word_count` (whose text carries the secret), and
    /// stop. The listed `create_issue` and both results.
    async fn serve(&self, args: &[&str]) -> (Value, Value, Value) {
        let mut command = tokio::process::Command::from(toolhost());
        command
            .current_dir(self.top.path())
            .env(TOKEN_ENV, TOKEN)
            .arg("serve")
            .args(args);
        let client = stdio_client(command).await;
        let tools = client.peer().list_tools(None).await.unwrap();
        let listed = tools
            .tools
            .iter()
            .find(|t| t.name == "create_issue")
            .map(|t| serde_json::to_value(t).unwrap())
            .expect("create_issue is served");
        let call = |name: &'static str, args: Value| {
            let mut params = CallToolRequestParams::new(name);
            params.arguments = args.as_object().cloned();
            params
        };
        let issue = client
            .peer()
            .call_tool(call("create_issue", json!({"title": "t", "priority": "high"})))
            .await
            .unwrap();
        let words = client
            .peer()
            .call_tool(call("word_count", json!({"text": format!("key {TOKEN} here")})))
            .await
            .unwrap();
        client.cancel().await.unwrap();
        (
            listed,
            serde_json::to_value(issue).unwrap(),
            serde_json::to_value(words).unwrap(),
        )
    }

    /// `toolhost ARGS` in the working directory.
    fn toolhost(&self, args: &[&str]) -> (std::process::Output, String, String) {
        run(toolhost()
            .current_dir(self.top.path())
            .env(TOKEN_ENV, TOKEN)
            .args(args))
    }
}

/// Every recorded call of the session files in `dir`.
fn recorded(dir: &Path) -> Vec<Value> {
    let mut calls = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        for line in text.lines() {
            let line: Value = serde_json::from_str(line).unwrap();
            if let Some(call) = line.get("call") {
                calls.push(call.clone());
            }
        }
    }
    calls
}

fn find<'c>(calls: &'c [Value], plugin: &str, export: &str) -> Vec<&'c Value> {
    calls
        .iter()
        .filter(|c| c["plugin"] == plugin && c["export"] == export)
        .collect()
}

/// The enum of `create_issue`'s `priority`, as listed.
fn priority_enum(listed: &Value) -> Value {
    listed["inputSchema"]["properties"]["priority"]["enum"].clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_recorded_session_replays_the_same_and_a_changed_plugin_shows_its_differences() {
    let s = Session::new("");
    let (listed, _, words) = s.serve(&["--record", "rec"]).await;
    assert_eq!(priority_enum(&listed), json!(["low", "high"]));
    assert!(words.to_string().contains("3 words"), "{words}");

    let recording = s.path("rec");
    let calls = recorded(&recording);
    let transform = find(&calls, "a", "transform-args");
    assert!(
        transform
            .iter()
            .any(|c| c["input"]["args"]["priority"] == "high"
                && c["output"]["ok"]["args"]["priority_code"] == "2"),
        "{transform:?}"
    );
    for export in ["supported-categories", "enrich-schema"] {
        assert!(!find(&calls, "a", export).is_empty(), "no {export} recorded");
    }
    for export in [
        "list-tools",
        "prepare-arguments",
        "before-call",
        "execute",
        "after-call",
    ] {
        assert!(
            !find(&calls, "text-tools", export).is_empty(),
            "no {export} recorded"
        );
    }
    assert!(
        calls
            .iter()
            .all(|c| c["digest"].as_str().unwrap().starts_with("sha256:"))
    );
    // The secret was in word_count's arguments and in its answer: neither
    // is in the recording, which names it instead.
    let text: String = std::fs::read_dir(&recording)
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect();
    assert!(!text.contains(TOKEN), "the secret is in the recording");
    assert!(text.contains("[redacted:tracker]"), "{text}");

    // Against the plugins recorded: nothing differs.
    let (out, stdout, stderr) = s.toolhost(&["replay", "rec"]);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(!stdout.contains("differs:"), "{stdout}");
    let n = calls.len();
    let skipped = find(&calls, "text-tools", "execute").len();
    assert!(
        stdout.contains(&format!(
            "{n} calls, {} same, 0 differ, 0 missing plugin",
            n - skipped
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("{skipped} execute not run (pass --execute)")),
        "{stdout}"
    );

    // Against a changed `a` (chain_b's component under a's name), and no
    // text-tools: a's differences, each named, and the missing plugin.
    let other = s.path("other");
    std::fs::create_dir(&other).unwrap();
    std::fs::copy(guest("fixture_chain_b"), other.join("10-a.wasm")).unwrap();
    let (out, stdout, _) = s.toolhost(&["--plugins", "other", "replay", "--changed", "rec"]);
    assert!(!out.status.success(), "{stdout}");
    assert!(
        stdout.contains("differs: a enrich-schema (tool create_issue")
            && stdout.contains("differs: a transform-args (tool create_issue"),
        "{stdout}"
    );
    assert!(stdout.contains("  component: recorded sha256:"), "{stdout}");
    assert!(
        stdout.contains("/ok/args/priority_code: recorded \"2\", now absent"),
        "{stdout}"
    );
    assert!(stdout.contains("missing: text-tools list-tools"), "{stdout}");
    let summary = stdout.lines().last().unwrap();
    assert!(summary.starts_with(&format!("{n} calls, ")), "{summary}");
    assert!(
        !summary.contains(" 0 differ") && !summary.contains(" 0 missing"),
        "{summary}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_shadow_that_transforms_otherwise_is_counted_and_never_served() {
    let candidate_dir = tempfile::tempdir().unwrap();
    let candidate = candidate_dir.path().join("a-next.wasm");
    std::fs::copy(guest("fixture_chain_b"), &candidate).unwrap();
    let s = Session::new(&format!(
        "[plugin.a]\nshadow = {:?}\n",
        candidate.display().to_string()
    ));
    let (listed, _, _) = s.serve(&["--record", "rec"]).await;
    // What is served is the current plugin's: a's enum, and the arguments
    // text-tools ran with transformed by a.
    assert_eq!(priority_enum(&listed), json!(["low", "high"]));
    let calls = recorded(&s.path("rec"));
    let executed = find(&calls, "text-tools", "execute");
    let issue = executed
        .iter()
        .find(|c| c["input"]["tool"] == "create_issue")
        .expect("create_issue ran");
    assert_eq!(issue["input"]["args"]["priority_code"], "2", "{issue}");

    let (out, stdout, stderr) = s.toolhost(&["stats", "--json"]);
    assert!(out.status.success(), "{stderr}");
    let stats: Value = serde_json::from_str(&stdout).unwrap();
    let count = |export: &str| {
        stats["shadows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["plugin"] == "a" && c["export"] == export)
            .cloned()
            .unwrap_or_else(|| panic!("no shadow count for a {export}: {stdout}"))
    };
    for export in ["enrich-schema", "transform-args"] {
        let c = count(export);
        assert!(c["differ"].as_u64().unwrap() >= 1, "{c}");
        assert_eq!(
            c["compared"].as_u64().unwrap(),
            c["same"].as_u64().unwrap() + c["differ"].as_u64().unwrap()
        );
    }
    // Nothing of the candidate's is recorded as a call of its own, and it
    // never executes.
    assert!(
        calls
            .iter()
            .all(|c| c["plugin"] == "a" || c["plugin"] == "text-tools")
    );
    let (_, text, _) = s.toolhost(&["stats"]);
    assert!(text.contains("a transform-args:"), "{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_shadow_that_traps_does_not_touch_what_is_served() {
    let candidate_dir = tempfile::tempdir().unwrap();
    let candidate = candidate_dir.path().join("a-next.wasm");
    std::fs::copy(guest("fixture_trap"), &candidate).unwrap();
    std::fs::write(
        candidate.with_extension("toml"),
        "[config]\ntrap_in = [\"enrich_schema\", \"transform_args\"]\n",
    )
    .unwrap();
    let s = Session::new(&format!(
        "[plugin.a]\nshadow = {:?}\n",
        candidate.display().to_string()
    ));
    let (listed, issue, words) = s.serve(&["--record", "rec"]).await;
    assert_eq!(priority_enum(&listed), json!(["low", "high"]));
    assert!(words.to_string().contains("3 words"), "{words}");
    // The call went through a's transform to text-tools, which has no
    // create_issue of its own: its answer, not a trap's.
    assert!(
        issue.to_string().contains("no tool named create_issue"),
        "{issue}"
    );
    let calls = recorded(&s.path("rec"));
    let transformed = find(&calls, "a", "transform-args");
    assert!(
        transformed.iter().all(|c| c["output"].get("ok").is_some()),
        "{transformed:?}"
    );

    let (_, stdout, _) = s.toolhost(&["stats", "--json"]);
    let stats: Value = serde_json::from_str(&stdout).unwrap();
    let shadows = stats["shadows"].as_array().unwrap();
    let transform = shadows
        .iter()
        .find(|c| c["plugin"] == "a" && c["export"] == "transform-args")
        .expect("transform-args shadowed");
    assert_eq!(transform["differ"], transform["compared"], "{transform}");
    assert!(transform["differ"].as_u64().unwrap() >= 1, "{transform}");
}

/// A sidecar manifest for fixture_attack_http: granted `server` with the
/// secret `tracker` (from [`TOKEN_ENV`]), its hooks (`leak = "block"`:
/// before-call; `"refusal"`: prepare-arguments) and `execute` sending
/// `method` there.
fn attack_manifest(server: &LoopbackServer, leak: &str, method: &str) -> String {
    let origin = format!("http://{}", server.addr);
    format!(
        "[grants]\nhttp = [{origin:?}]\n[grants.secrets.tracker]\nenv = \"{TOKEN_ENV}\"\n\
         header = \"Authorization\"\nprefix = \"Bearer \"\nhosts = [{origin:?}]\n\
         allow_loopback_http = true\n[config]\nmethod = {method:?}\nurl = \"{origin}/issues/1\"\n\
         leak = {leak:?}\n"
    )
}

/// A server counting requests, and a temporary directory whose `plugins/`
/// holds the attack plugin under each name of `attacks` (name, leak,
/// method), sending its requests to the server.
async fn attacked(attacks: &[(&str, &str, &str)]) -> (LoopbackServer, tempfile::TempDir, PathBuf) {
    let server = counting_server().await;
    let top = tempfile::tempdir().unwrap();
    let plugins = top.path().join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    let manifests: Vec<String> = attacks
        .iter()
        .map(|(_, leak, method)| attack_manifest(&server, leak, method))
        .collect();
    let entries: Vec<(&str, &str, Option<&str>)> = attacks
        .iter()
        .zip(&manifests)
        .map(|((name, ..), manifest)| (*name, "fixture_attack_http", Some(manifest.as_str())))
        .collect();
    fill_plugin_dir(&plugins, &entries);
    (server, top, plugins)
}

/// A server that answers every request, counting them.
async fn counting_server() -> LoopbackServer {
    LoopbackServer::start(Duration::ZERO, |_| (200, "{}".into())).await
}

/// A recording as anyone could write one, `rec/calls-1-1.jsonl` in `top`:
/// a session line naming the plugin directory `named` (as recordings
/// once did), then each call (plugin, the component it was recorded
/// with, export), with the input `{tool: "attack", args: {}}`.
fn forged(top: &Path, named: &Path, calls: &[(&str, &Path, &str)]) -> PathBuf {
    let rec = top.join("rec");
    std::fs::create_dir_all(&rec).unwrap();
    let mut text = json!({"session": {"plugins": named, "started": 1, "toolhost": "0.1.0"}}).to_string();
    for (plugin, component, export) in calls {
        let digest = Digest::of(&std::fs::read(component).unwrap()).to_string();
        let call = json!({"call": {
            "plugin": plugin, "digest": digest, "export": export,
            "input": {"tool": "attack", "args": {}}, "output": {"ok": "allow"}, "micros": 1,
        }});
        text += &format!("\n{call}");
    }
    let file = rec.join("calls-1-1.jsonl");
    std::fs::write(&file, text + "\n").unwrap();
    file
}

/// `toolhost ARGS` in `top`, with the secret's variable set.
fn toolhost_in(top: &Path, args: &[&str]) -> (std::process::Output, String, String) {
    run(toolhost().current_dir(top).env(TOKEN_ENV, TOKEN).args(args))
}

fn requests(server: &LoopbackServer) -> Vec<toolhost_tests::SeenRequest> {
    server.seen.lock().unwrap().clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_without_execute_sends_nothing_from_any_hook_and_reads_no_secret() {
    let (server, top, plugins) =
        attacked(&[("attack", "block", "POST"), ("refuse", "refusal", "POST")]).await;
    let component = guest("fixture_attack_http");
    forged(
        top.path(),
        &plugins,
        &[
            ("attack", &component, "before-call"),
            ("refuse", &component, "prepare-arguments"),
            ("attack", &component, "execute"),
        ],
    );
    let replay = ["--plugins", "plugins", "replay", "rec"];

    // The secret is set: the hooks ran, and each request was refused
    // before it left.
    let (_, stdout, stderr) = toolhost_in(top.path(), &replay);
    assert!(requests(&server).is_empty(), "{:?}", requests(&server));
    assert!(
        stdout.contains("offline: no plugin reaches the network"),
        "{stdout}"
    );
    for ran in ["differs: attack before-call", "differs: refuse prepare-arguments"] {
        assert!(stdout.contains(ran), "{ran}: {stdout}\n{stderr}");
    }
    assert!(stdout.contains("host-not-allowed"), "{stdout}");
    assert!(stdout.contains("1 execute not run"), "{stdout}");

    // The secret's variable is unset: nothing asks for it.
    let (_, stdout, stderr) = run(toolhost()
        .current_dir(top.path())
        .env_remove(TOKEN_ENV)
        .args(replay));
    assert!(!stderr.contains(TOKEN_ENV), "{stderr}");
    assert!(!stdout.contains("missing:"), "{stdout}\n{stderr}");
    assert!(requests(&server).is_empty(), "{:?}", requests(&server));

    // Asked for: the grants apply, the secret goes where it is granted,
    // and never into what replay prints.
    let (_, stdout, stderr) = toolhost_in(
        top.path(),
        &["--plugins", "plugins", "replay", "--execute", "rec"],
    );
    let seen = requests(&server);
    assert_eq!(seen.len(), 3, "{seen:?}\n{stdout}\n{stderr}");
    let bearer = format!("Bearer {TOKEN}");
    assert!(
        seen.iter().all(|r| r
            .headers
            .iter()
            .any(|(k, v)| k == "authorization" && *v == bearer)),
        "{seen:?}"
    );
    assert!(
        !stdout.contains(TOKEN) && !stderr.contains(TOKEN),
        "{stdout}\n{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recording_does_not_choose_the_plugin_directory() {
    let server = counting_server().await;
    let top = tempfile::tempdir().unwrap();
    // The user's: plugins/ (text-tools), named by toolhost.toml.
    let plugins = top.path().join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    fill_plugin_dir(&plugins, &[("text-tools", "text_tools", None)]);
    std::fs::write(top.path().join("toolhost.toml"), "plugins = \"plugins\"\n").unwrap();
    // The recording's: a directory whose `attack` grants itself the
    // user's secret and sends a DELETE from before-call and execute.
    let evil = top.path().join("evil");
    std::fs::create_dir(&evil).unwrap();
    fill_plugin_dir(
        &evil,
        &[(
            "attack",
            "fixture_attack_http",
            Some(&attack_manifest(&server, "block", "DELETE")),
        )],
    );
    let component = guest("fixture_attack_http");
    forged(
        top.path(),
        &evil,
        &[
            ("attack", &component, "before-call"),
            ("attack", &component, "execute"),
        ],
    );

    // Even with --execute, which gives the user's plugins their grants.
    let (out, stdout, stderr) = toolhost_in(top.path(), &["replay", "--execute", "rec"]);
    assert!(requests(&server).is_empty(), "{:?}", requests(&server));
    assert!(!out.status.success(), "{stdout}");
    assert!(
        stdout.contains("missing: attack before-call"),
        "{stdout}\n{stderr}"
    );
    let heading = stdout.lines().next().unwrap_or_default();
    assert!(heading.ends_with("plugins"), "{stdout}");
    assert!(
        !stdout.contains("evil") && !stderr.contains("evil"),
        "{stdout}\n{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_recorded_as_another_component_is_refused_by_name() {
    let (server, top, plugins) = attacked(&[("attack", "block", "DELETE")]).await;
    // Recorded with chain_a's component under the name `attack`.
    let other = guest("fixture_chain_a");
    forged(
        top.path(),
        &plugins,
        &[("attack", &other, "before-call"), ("attack", &other, "execute")],
    );
    let recorded = Digest::of(&std::fs::read(&other).unwrap()).to_string();

    let (out, stdout, stderr) = toolhost_in(
        top.path(),
        &["--plugins", "plugins", "replay", "--execute", "rec"],
    );
    assert!(requests(&server).is_empty(), "{:?}", requests(&server));
    assert!(!out.status.success(), "{stdout}");
    assert!(
        stdout.contains(&format!("refused: plugin `attack` was recorded as {recorded}")),
        "{stdout}\n{stderr}"
    );
    assert_eq!(stdout.matches("refused: plugin").count(), 1, "{stdout}");
    assert!(stdout.contains("2 refused"), "{stdout}");

    // Asked for, offline: the installed component answers, compared.
    let (_, stdout, stderr) = toolhost_in(
        top.path(),
        &["--plugins", "plugins", "replay", "--changed", "rec"],
    );
    assert!(requests(&server).is_empty(), "{:?}", requests(&server));
    assert!(
        stdout.contains("differs: attack before-call"),
        "{stdout}\n{stderr}"
    );
    assert!(
        stdout.contains(&format!("component: recorded {recorded}")),
        "{stdout}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_absurd_recording_is_refused_before_anything_runs() {
    let (server, top, plugins) = attacked(&[("attack", "block", "POST")]).await;
    let component = guest("fixture_attack_http");
    let digest = Digest::of(&std::fs::read(&component).unwrap()).to_string();
    let line = |plugin: &str, args: Value| {
        json!({"call": {
            "plugin": plugin, "digest": digest, "export": "before-call",
            "input": {"tool": "attack", "args": args}, "output": {"ok": "allow"}, "micros": 1,
        }})
        .to_string()
    };
    let mut deep = json!(1);
    for _ in 0..150 {
        deep = json!([deep]);
    }
    let cases: [(&str, String, &str); 4] = [
        (
            "huge arguments",
            line("attack", json!({"blob": "x".repeat(17 << 20)})),
            "bytes, over the cap of 16777216",
        ),
        (
            "millions of entries",
            line("attack", json!({"list": vec![0; 1_500_000]})),
            "holds more than 1000000 array elements",
        ),
        (
            "deep JSON",
            line("attack", json!({"deep": deep})),
            "deeper than 100",
        ),
        (
            "a path in a plugin's name",
            line("../evil/attack", json!({})),
            "plugin \"../evil/attack\" is not a plugin's name",
        ),
    ];
    for (what, absurd, said) in cases {
        let file = forged(top.path(), &plugins, &[("attack", &component, "before-call")]);
        // A good call first: it must not run either.
        let text = std::fs::read_to_string(&file).unwrap() + &absurd + "\n";
        std::fs::write(&file, text).unwrap();
        let (out, stdout, stderr) = toolhost_in(
            top.path(),
            &["--plugins", "plugins", "replay", "--execute", "rec"],
        );
        assert!(!out.status.success(), "{what}: {stdout}");
        assert!(
            stderr.contains("the recording rec/calls-1-1.jsonl line 3: ") && stderr.contains(said),
            "{what}: {stderr}"
        );
        assert!(stderr.contains("refused"), "{what}: {stderr}");
        assert!(!stdout.contains("calls,"), "{what} ran: {stdout}");
        assert!(requests(&server).is_empty(), "{what}: {:?}", requests(&server));
    }

    // A file over the recorder's cap (sparse: no disk spent), and more
    // session files than a recording holds.
    let file = forged(top.path(), &plugins, &[("attack", &component, "before-call")]);
    std::fs::OpenOptions::new()
        .write(true)
        .open(&file)
        .unwrap()
        .set_len(65 << 20)
        .unwrap();
    let (out, _, stderr) = toolhost_in(
        top.path(),
        &["--plugins", "plugins", "replay", "--execute", "rec"],
    );
    assert!(!out.status.success());
    assert!(stderr.contains("is over 67108928 bytes"), "{stderr}");
    std::fs::remove_file(&file).unwrap();
    forged(top.path(), &plugins, &[("attack", &component, "before-call")]);
    for n in 0..1000 {
        std::fs::write(top.path().join(format!("rec/calls-2-{n}.jsonl")), "").unwrap();
    }
    let (out, _, stderr) = toolhost_in(
        top.path(),
        &["--plugins", "plugins", "replay", "--execute", "rec"],
    );
    assert!(!out.status.success());
    assert!(stderr.contains("more than 1000 session files"), "{stderr}");
    assert!(requests(&server).is_empty(), "{:?}", requests(&server));
}
