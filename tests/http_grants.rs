//! HTTP for tool plugins: only granted origins are reached, granted secrets
//! are added by the host without the plugin seeing them, and a secret never
//! reaches the model or the logs.
//!
//! The attacks are `fixture_attack_http`, a tool plugin built with plain
//! wit-bindgen, whose manifest `config` picks the request it sends and where
//! it leaks the answer; servers are [`LoopbackServer`]s.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use serde_json::{Map, Value, json};
use toolhost::plugin::{Plugin, PluginError};
use toolhost::{CallOutput, ToolError};
use toolhost_tests::{Logs, LoopbackServer, SeenRequest, args, joined_text, load, plugin_dir, runtime};

/// The value of the secret `tracker`, injected by the host.
const TOKEN: &str = "tok-4f9c1e7a2b";
/// What the host writes in its place.
const REDACTED: &str = "[redacted:tracker]";

/// Set the secrets' variables once, before any plugin (or HTTP client)
/// reads the environment: every test calls this first.
fn secret_env() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    // SAFETY: inside `call_once`, which every test of this binary passes
    // before it reads the environment, so no other thread reads it now.
    ONCE.call_once(|| unsafe {
        std::env::set_var("TOOLHOST_TEST_TRACKER_TOKEN", "s3cret");
        std::env::set_var("TOOLHOST_TEST_ATTACK_TOKEN", TOKEN);
    });
}

/// How a grant names cleartext HTTP to the loopback address `addr`.
fn loopback(addr: SocketAddr) -> String {
    format!("http://{addr}")
}

/// The secret `tracker`, read from `env`, sent to `origins` as a bearer
/// token (allowed over cleartext: the test servers are loopback ones).
fn secret(env: &str, origins: &[String]) -> String {
    format!(
        "[grants.secrets.tracker]\nenv = \"{env}\"\nheader = \"Authorization\"\nprefix = \"Bearer \"\n\
         hosts = {origins:?}\nallow_loopback_http = true\n"
    )
}

/// `[grants]` giving cleartext HTTP to the loopback address `addr`, and with
/// `secret_env` the secret `tracker` sent there.
fn loopback_grant(addr: SocketAddr, secret_env: Option<&str>) -> String {
    let origin = loopback(addr);
    let mut text = format!("[grants]\nhttp = [{origin:?}]\n");
    if let Some(env) = secret_env {
        text += &secret(env, &[origin]);
    }
    text
}

async fn tracker(manifest: &str) -> (Arc<Plugin>, tempfile::TempDir) {
    let (report, _, dir) = load(&[("30-tracker", "tracker_tools", Some(manifest))]).await;
    (report.plugins[0].clone(), dir)
}

async fn get_issue(p: &Plugin, key: &str) -> Result<Value, ToolError> {
    let result = p
        .execute(
            "get_issue",
            &args(json!({"key": key})),
            "c".into(),
            Arc::new(AtomicBool::new(false)),
            None,
        )
        .await
        .unwrap()?;
    Ok(result.structured().expect("a structured result"))
}

/// The attack plugin, loaded with `grants` and the `[config]` lines `config`.
struct Attack {
    plugin: Arc<Plugin>,
    logs: Logs,
    _dir: tempfile::TempDir,
}

impl Attack {
    async fn load(grants: &str, config: &str) -> Self {
        secret_env();
        let manifest = format!("{grants}[config]\n{config}\n");
        let (report, logs, dir) = load(&[("40-attack", "fixture_attack_http", Some(&manifest))]).await;
        Self {
            plugin: report.plugins[0].clone(),
            logs,
            _dir: dir,
        }
    }

    async fn call(&self) -> Result<CallOutput, ToolError> {
        self.plugin
            .execute(
                "attack",
                &Map::new(),
                "c".into(),
                Arc::new(AtomicBool::new(false)),
                None,
            )
            .await
            .unwrap()
    }

    /// What the plugin saw of its request: `{"status", "headers", "body"}`
    /// or `{"error"}`.
    async fn report(&self) -> Value {
        let result = self.call().await.expect("report mode always succeeds");
        serde_json::from_str(&result.text()).unwrap_or_else(|e| panic!("{e}: {result:?}"))
    }

    /// The error the plugin got for its request.
    async fn refusal(&self) -> String {
        let report = self.report().await;
        report["error"]
            .as_str()
            .unwrap_or_else(|| panic!("the request was sent: {report}"))
            .to_owned()
    }
}

async fn server() -> LoopbackServer {
    LoopbackServer::start(Duration::ZERO, |_| (200, "{}".into())).await
}

fn seen(server: &LoopbackServer) -> Vec<SeenRequest> {
    server.seen.lock().unwrap().clone()
}

fn header<'a>(request: &'a SeenRequest, name: &str) -> Vec<&'a str> {
    request
        .headers
        .iter()
        .filter(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn granted_hosts_are_reached_with_injected_secrets() {
    secret_env();
    let server = LoopbackServer::start(Duration::ZERO, |r| {
        (
            200,
            json!({"key": r.path.trim_start_matches("/issues/")}).to_string(),
        )
    })
    .await;
    let host = server.addr;
    let manifest = format!(
        "{}[config]\nbase_url = \"http://{host}\"\n",
        loopback_grant(host, Some("TOOLHOST_TEST_TRACKER_TOKEN"))
    );
    let (p, _dir) = tracker(&manifest).await;
    assert_eq!(get_issue(&p, "WEB-7").await.unwrap(), json!({"key": "WEB-7"}));
    let seen = seen(&server);
    assert_eq!(seen[0].path, "/issues/WEB-7");
    assert_eq!(header(&seen[0], "authorization"), ["Bearer s3cret"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn ungranted_hosts_are_refused() {
    secret_env();
    let server = server().await;
    let host = server.addr;
    // Granted a different port of the same address: still refused.
    let manifest = format!(
        "{}[config]\nbase_url = \"http://{host}\"\n",
        loopback_grant("127.0.0.1:1".parse().unwrap(), None)
    );
    let (p, _dir) = tracker(&manifest).await;
    let err = get_issue(&p, "WEB-7").await.unwrap_err();
    assert!(
        matches!(&err, ToolError::Failed(m) if m.contains("HostNotAllowed")),
        "{err:?}"
    );
    // No grant at all.
    let (p, _dir) = tracker(&format!("[config]\nbase_url = \"http://{host}\"\n")).await;
    let err = get_issue(&p, "WEB-7").await.unwrap_err();
    assert!(
        matches!(&err, ToolError::Failed(m) if m.contains("HostNotAllowed")),
        "{err:?}"
    );
    assert!(seen(&server).is_empty(), "nothing reached the server");
}

/// A granted origin where nothing listens: the plugin is told why (the
/// connection refused), not only that the request could not be sent.
#[tokio::test(flavor = "multi_thread")]
async fn a_request_that_cannot_connect_says_why() {
    secret_env();
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let manifest = format!(
        "{}[config]\nbase_url = \"http://{closed}\"\n",
        loopback_grant(closed, None)
    );
    let (p, _dir) = tracker(&manifest).await;
    let err = get_issue(&p, "WEB-7").await.unwrap_err();
    assert!(
        matches!(&err, ToolError::Failed(m) if m.to_lowercase().contains("connection refused")),
        "{err:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_missing_secret_is_a_load_error_naming_it() {
    secret_env();
    let manifest = format!(
        "{}[config]\nbase_url = \"http://127.0.0.1:1\"\n",
        loopback_grant(
            "127.0.0.1:1".parse().unwrap(),
            Some("TOOLHOST_TEST_UNSET_VARIABLE")
        )
    );
    let dir = plugin_dir(&[("30-tracker", "tracker_tools", Some(&manifest))]);
    let (rt, _) = runtime();
    let report = rt.load_dir(dir.path()).await.unwrap();
    assert!(
        report.errors[0].message.contains("TOOLHOST_TEST_UNSET_VARIABLE"),
        "{:?}",
        report.errors
    );
}

// ---- origins: scheme, host and port ----

/// The issue's first finding: a secret granted for a bare loopback address
/// went to a plaintext listener. A bare host means https on 443 (or the
/// port written), so `http://` to it is refused and the secret stays home.
#[tokio::test(flavor = "multi_thread")]
async fn a_secret_never_goes_over_cleartext_to_a_host_granted_bare() {
    let server = server().await;
    let addr = server.addr;
    let grants = format!(
        "[grants]\nhttp = [\"{addr}\"]\n{}",
        secret("TOOLHOST_TEST_ATTACK_TOKEN", &[addr.to_string()])
    );
    let attack = Attack::load(&grants, &format!("url = \"http://{addr}/\"")).await;
    let error = attack.refusal().await;
    assert!(error.starts_with("host-not-allowed"), "{error}");
    assert!(!error.contains(TOKEN), "{error}");
    assert!(seen(&server).is_empty(), "{:?}", seen(&server));
}

#[tokio::test(flavor = "multi_thread")]
async fn http_to_a_host_granted_only_https_is_refused() {
    let server = server().await;
    let addr = server.addr;
    let attack = Attack::load(
        &format!("[grants]\nhttp = [\"{addr}\"]\n"),
        &format!("url = \"http://{addr}/\""),
    )
    .await;
    let error = attack.refusal().await;
    assert!(
        error.contains(&format!("http://{addr}")) && error.contains(&format!("https://{addr}")),
        "names the origin asked for and the one granted: {error}"
    );
    assert!(seen(&server).is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_wrong_port_is_refused_naming_plugin_origin_and_missing_grant() {
    let (granted, other) = (server().await, server().await);
    let attack = Attack::load(
        &loopback_grant(granted.addr, None),
        &format!("url = \"http://{}/x\"", other.addr),
    )
    .await;
    let error = attack.refusal().await;
    let origin = format!("http://{}", other.addr);
    assert!(
        error.contains("`attack`") && error.contains(&origin) && error.contains("grants.http"),
        "{error}"
    );
    assert!(seen(&other).is_empty() && seen(&granted).is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn credentials_in_the_url_are_refused() {
    let server = server().await;
    let attack = Attack::load(
        &loopback_grant(server.addr, Some("TOOLHOST_TEST_ATTACK_TOKEN")),
        &format!("url = \"http://user:pw@{}/\"", server.addr),
    )
    .await;
    let error = attack.refusal().await;
    assert!(error.starts_with("invalid-request"), "{error}");
    assert!(seen(&server).is_empty(), "{:?}", seen(&server));
}

// ---- headers the host owns ----

/// Send `name: value` (and `body`) as the plugin, to a loopback server
/// holding the secret: refused by name, and nothing reaches the server.
async fn refused_header(name: &str, value: &str, body: Option<&str>) {
    let server = server().await;
    let mut config = format!(
        "method = \"POST\"\nurl = \"http://{}/\"\nheaders = [[{}, {}]]\n",
        server.addr,
        json!(name),
        json!(value)
    );
    if let Some(body) = body {
        config += &format!("body = {}\n", json!(body));
    }
    let attack = Attack::load(
        &loopback_grant(server.addr, Some("TOOLHOST_TEST_ATTACK_TOKEN")),
        &config,
    )
    .await;
    let error = attack.refusal().await;
    assert!(error.starts_with("invalid-request"), "{name}: {error}");
    let shown = name.trim().split(['\r', '\n']).next().unwrap();
    assert!(error.contains(shown), "names the header {shown:?}: {error}");
    assert!(!error.contains(TOKEN), "{error}");
    assert!(seen(&server).is_empty(), "{name}: {:?}", seen(&server));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plugin_set_host_header_is_refused() {
    refused_header("Host", "evil.example", None).await;
    refused_header("host", "127.0.0.1", None).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn content_length_smuggling_is_refused() {
    let smuggled = "GET /smuggled HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    refused_header("Content-Length", "0", Some(smuggled)).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn transfer_encoding_smuggling_is_refused() {
    let smuggled = "0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    refused_header("Transfer-Encoding", "chunked", Some(smuggled)).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn connection_headers_are_refused() {
    // `Connection: Authorization` asks a proxy to drop the secret's header.
    refused_header("Connection", "keep-alive, Authorization", None).await;
    for name in ["Keep-Alive", "Upgrade", "TE", "Trailer", "Proxy-Connection"] {
        refused_header(name, "h2c", None).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn overriding_the_secret_header_is_refused() {
    refused_header("Authorization", "Bearer attacker", None).await;
    refused_header("AUTHORIZATION", "Basic YTpi", None).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn crlf_in_a_header_is_refused_by_name() {
    refused_header("X-Note", "a\r\nX-Injected: 1", None).await;
    refused_header("X-Note\r\nX-Injected", "1", None).await;
}

// ---- methods ----

async fn refused_method(method: &str) {
    let server = server().await;
    let attack = Attack::load(
        &loopback_grant(server.addr, Some("TOOLHOST_TEST_ATTACK_TOKEN")),
        &format!("method = \"{method}\"\nurl = \"http://{}/\"", server.addr),
    )
    .await;
    let error = attack.refusal().await;
    assert!(
        error.starts_with("invalid-request") && error.contains(method),
        "{method}: {error}"
    );
    assert!(seen(&server).is_empty(), "{method}: {:?}", seen(&server));
}

#[tokio::test(flavor = "multi_thread")]
async fn trace_is_not_sent() {
    refused_method("TRACE").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unknown_method_is_not_sent() {
    refused_method("FOO").await;
    refused_method("CONNECT").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_five_methods_are_sent() {
    let server = server().await;
    for method in ["GET", "POST", "PUT", "PATCH", "DELETE"] {
        let attack = Attack::load(
            &loopback_grant(server.addr, None),
            &format!("method = \"{method}\"\nurl = \"http://{}/\"", server.addr),
        )
        .await;
        assert_eq!(attack.report().await["status"], 200, "{method}");
    }
    let methods: Vec<String> = seen(&server).into_iter().map(|r| r.method).collect();
    assert_eq!(methods, ["GET", "POST", "PUT", "PATCH", "DELETE"]);
}

// ---- redirects ----

/// The client follows no redirect: the plugin gets the 3xx, and a Location
/// it follows itself is checked like any URL, with the secret added only
/// where the secret is granted.
#[tokio::test(flavor = "multi_thread")]
async fn a_redirect_does_not_carry_the_secret_elsewhere() {
    let elsewhere = server().await;
    let location = format!("http://{}/steal", elsewhere.addr);
    let granted = LoopbackServer::start_with_headers(move |_| {
        (302, vec![("location".into(), location.clone())], "{}".into())
    })
    .await;
    let grants = loopback_grant(granted.addr, Some("TOOLHOST_TEST_ATTACK_TOKEN"));
    let url = format!("url = \"http://{}/\"\n", granted.addr);

    // Not followed by the host.
    let attack = Attack::load(&grants, &url).await;
    let report = attack.report().await;
    assert_eq!(report["status"], 302, "{report}");
    assert!(seen(&elsewhere).is_empty());

    // Followed by the plugin to an ungranted origin: refused.
    let attack = Attack::load(&grants, &format!("{url}follow = true")).await;
    assert!(attack.refusal().await.starts_with("host-not-allowed"));
    assert!(seen(&elsewhere).is_empty());

    // Followed to an origin granted without the secret: sent without it.
    let (a, b) = (loopback(granted.addr), loopback(elsewhere.addr));
    let both = format!(
        "[grants]\nhttp = [{a:?}, {b:?}]\n{}",
        secret("TOOLHOST_TEST_ATTACK_TOKEN", std::slice::from_ref(&a))
    );
    let attack = Attack::load(&both, &format!("{url}follow = true")).await;
    assert_eq!(attack.report().await["status"], 200);
    let stolen = seen(&elsewhere);
    assert_eq!(stolen.len(), 1);
    assert!(header(&stolen[0], "authorization").is_empty(), "{stolen:?}");
    assert_eq!(
        header(&seen(&granted)[0], "authorization"),
        [format!("Bearer {TOKEN}")]
    );
}

// ---- secrets stay out of what the model sees ----

/// A vendor server that echoes the request's headers back: in its body and
/// a response header, or only in its body and reversed, which no scrubbing
/// of the response recognises, so what the host redacts there it redacts
/// on the way out.
async fn echo_server() -> LoopbackServer {
    LoopbackServer::start_with_headers(|r| {
        let body = json!({"headers": r.headers}).to_string();
        if r.path == "/reversed" {
            return (200, Vec::new(), body.chars().rev().collect());
        }
        let echoed = header(r, "authorization").join(", ");
        (200, vec![("x-echo-authorization".into(), echoed)], body)
    })
    .await
}

/// The attack plugin leaking what the echo server sent it through `leak`.
async fn echo_attack(server: &LoopbackServer, leak: &str, reversed: bool) -> Attack {
    let path = if reversed { "reversed" } else { "plain" };
    let config = format!(
        "url = \"http://{}/{path}\"\nleak = \"{leak}\"\nreversed = {reversed}",
        server.addr
    );
    Attack::load(
        &loopback_grant(server.addr, Some("TOOLHOST_TEST_ATTACK_TOKEN")),
        &config,
    )
    .await
}

/// Assert `what` holds no trace of the secret and the host's mark instead.
fn redacted(what: &str, context: &str) {
    assert!(!what.contains(TOKEN), "{context}: the secret leaked: {what}");
    assert!(what.contains(REDACTED), "{context}: {what}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_plugin_never_sees_an_echoed_secret() {
    let server = echo_server().await;
    let report = echo_attack(&server, "report", false).await.report().await;
    assert_eq!(report["status"], 200);
    redacted(&report["body"].to_string(), "response body");
    redacted(&report["headers"].to_string(), "response headers");
    assert_eq!(
        header(&seen(&server)[0], "authorization"),
        [format!("Bearer {TOKEN}")],
        "the server itself got the secret"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_echoed_secret_never_reaches_the_result_text() {
    let server = echo_server().await;
    for reversed in [false, true] {
        let result = echo_attack(&server, "text", reversed).await.call().await.unwrap();
        redacted(&format!("{result:?}"), &format!("text, reversed {reversed}"));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_echoed_secret_never_reaches_structured_content() {
    let server = echo_server().await;
    for reversed in [false, true] {
        let result = echo_attack(&server, "json", reversed).await.call().await.unwrap();
        let value = result.structured().expect("still valid JSON");
        redacted(&value.to_string(), &format!("json, reversed {reversed}"));
    }
}

/// Every text and byte of a result's blocks, binary data decoded.
fn block_texts(result: &toolhost::CallOutput) -> String {
    use base64::Engine as _;
    use toolhost::{Block, Body};
    let decode = |b64: &str| {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .expect("valid base64");
        String::from_utf8_lossy(&bytes).into_owned()
    };
    let mut all = Vec::new();
    for block in &result.content {
        match block {
            Block::Text(t) => all.push(t.text.clone()),
            Block::Image(m) | Block::Audio(m) => all.push(decode(&m.data)),
            Block::ResourceLink(l) => {
                all.extend([l.uri.clone(), l.name.clone()]);
                all.extend(l.title.clone().into_iter().chain(l.description.clone()));
            }
            Block::Resource(e) => {
                all.push(e.resource.uri.clone());
                all.push(match &e.resource.body {
                    Body::Text(t) => t.clone(),
                    Body::Blob(b) => decode(b),
                });
            }
        }
    }
    all.join("\n")
}

#[tokio::test(flavor = "multi_thread")]
async fn an_echoed_secret_never_reaches_the_0_2_content_kinds() {
    let server = echo_server().await;
    for leak in ["link", "embedded", "audio"] {
        for reversed in [false, true] {
            let result = echo_attack(&server, leak, reversed).await.call().await.unwrap();
            assert!(!result.content.is_empty(), "{leak}");
            redacted(&block_texts(&result), &format!("{leak}, reversed {reversed}"));
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_echoed_secret_never_reaches_the_details() {
    let server = echo_server().await;
    for reversed in [false, true] {
        let result = echo_attack(&server, "details", reversed)
            .await
            .call()
            .await
            .unwrap();
        let details = result.details.expect("details, still valid JSON");
        redacted(&details.to_string(), &format!("details, reversed {reversed}"));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_echoed_secret_never_reaches_the_tool_error() {
    let server = echo_server().await;
    for reversed in [false, true] {
        let error = echo_attack(&server, "error", reversed)
            .await
            .call()
            .await
            .unwrap_err();
        redacted(&format!("{error:?}"), &format!("error, reversed {reversed}"));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_echoed_secret_never_reaches_a_refusal() {
    let server = echo_server().await;
    let args = Map::new();
    for reversed in [false, true] {
        let attack = echo_attack(&server, "refusal", reversed).await;
        let error = attack
            .plugin
            .prepare_arguments("attack", args.clone())
            .await
            .unwrap_err();
        assert!(matches!(error, PluginError::Rejected { .. }), "{error:?}");
        redacted(&error.to_string(), &format!("refusal, reversed {reversed}"));
        let attack = echo_attack(&server, "block", reversed).await;
        let decision = attack.plugin.before_call("attack", &args).await.unwrap();
        redacted(&format!("{decision:?}"), &format!("block, reversed {reversed}"));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_echoed_secret_never_reaches_the_log() {
    let server = echo_server().await;
    for leak in ["log", "stdout", "stderr"] {
        for reversed in [false, true] {
            let attack = echo_attack(&server, leak, reversed).await;
            attack.call().await.unwrap();
            let lines: Vec<String> = attack.logs.lines().into_iter().map(|l| l.message).collect();
            redacted(&lines.join("\n"), &format!("{leak}, reversed {reversed}"));
        }
    }
}

/// An enricher that learnt its secret (echoed reversed) writes it into the
/// arguments of another plugin's tool, which answers them back, and into
/// the schema the model reads: the host redacts both edits with the
/// enricher's secrets, so neither the tool, its answer nor the listing
/// holds the secret.
#[tokio::test(flavor = "multi_thread")]
async fn an_enricher_never_hands_its_secret_on_in_arguments_or_schemas() {
    secret_env();
    let server = echo_server().await;
    let manifest = format!(
        "{}[config]\nurl = \"http://{}/reversed\"\n",
        loopback_grant(server.addr, Some("TOOLHOST_TEST_ATTACK_TOKEN")),
        server.addr
    );
    let tool = "[config]\nrole = \"tool\"\ntrap_every = 1000000\n";
    let (report, _, _dir) = load(&[
        ("10-attack-args", "fixture_attack_args", Some(&manifest)),
        ("20-mix", "fixture_trap_every", Some(tool)),
    ])
    .await;
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    let host = toolhost::Toolhost::new(toolhost::internals::Sources {
        plugins: report.plugins,
        ..Default::default()
    })
    .await
    .unwrap();
    let listing = host.list_tools();
    let mix = listing
        .tools
        .iter()
        .find(|t| t.name == "mix")
        .expect("mix is served");
    redacted(mix.schema.description(), "the listed description");
    redacted(
        &mix.schema.property("n").unwrap().to_string(),
        "the listed parameter",
    );
    let answer = toolhost_tests::call_ok(&host, "mix", json!({"n": 1})).await;
    redacted(&answer.text(), "the tool's answer of its arguments");
    assert!(
        seen(&server)
            .iter()
            .all(|r| header(r, "authorization") == [format!("Bearer {TOKEN}")]),
        "the enricher's requests carried the secret: it was there to leak"
    );
}

// ---- the gate: what a client gets, whatever the plugin encodes ----

impl Attack {
    /// The attack plugin served by a host, as a client reaches it: every
    /// result passes the host's gate.
    async fn served(&self) -> toolhost::Toolhost {
        toolhost::Toolhost::new(toolhost::internals::Sources {
            plugins: vec![self.plugin.clone()],
            ..Default::default()
        })
        .await
        .unwrap()
    }

    /// One call of `attack` as a client makes it.
    async fn served_call(&self) -> CallOutput {
        toolhost_tests::call_ok(&self.served().await, "attack", json!({})).await
    }
}

/// Whether an outsider reading `text` gets the secret back: as written or
/// reversed, in any case, or by decoding percent-escapes, hex or base64
/// (any run of it, at any offset, either alphabet).
fn recovers_secret(text: &str) -> bool {
    use base64::Engine as _;
    use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
    let token = TOKEN.to_lowercase();
    let reversed: String = token.chars().rev().collect();
    let holds = |bytes: &[u8]| {
        let s = String::from_utf8_lossy(bytes).to_lowercase();
        s.contains(&token) || s.contains(&reversed)
    };
    let runs = |ok: fn(&u8) -> bool| {
        text.as_bytes()
            .split(move |b| !ok(b))
            .filter(|r| r.len() >= 8)
            .collect::<Vec<_>>()
    };
    let hex = |r: &[u8]| -> Vec<u8> {
        r.chunks_exact(2)
            .filter_map(|p| u8::from_str_radix(std::str::from_utf8(p).ok()?, 16).ok())
            .collect()
    };
    let mut percent = Vec::new();
    let mut rest = text.as_bytes();
    while let Some((&b, tail)) = rest.split_first() {
        match (b, tail.get(..2).map(hex)) {
            (b'%', Some(d)) if d.len() == 1 => {
                percent.push(d[0]);
                rest = &tail[2..];
            }
            _ => {
                percent.push(b);
                rest = tail;
            }
        }
    }
    let lenient = GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        GeneralPurposeConfig::new()
            .with_decode_padding_mode(DecodePaddingMode::Indifferent)
            .with_decode_allow_trailing_bits(true),
    );
    let base64 = |r: &[u8]| {
        let std: Vec<u8> = r
            .iter()
            .map(|b| match b {
                b'-' => b'+',
                b'_' => b'/',
                b => *b,
            })
            .collect();
        (0..4).any(|at| {
            let s = &std[at..];
            lenient.decode(&s[..s.len() / 4 * 4]).is_ok_and(|d| holds(&d))
        })
    };
    holds(text.as_bytes())
        || holds(&percent)
        || runs(u8::is_ascii_hexdigit)
            .into_iter()
            .any(|r| holds(&hex(r)) || holds(&hex(&r[1..])))
        || runs(|b| b.is_ascii_alphanumeric() || b"+/-_".contains(b))
            .into_iter()
            .any(base64)
}

/// Every string a client is served of `result`, joined as a client joins
/// its blocks (with nothing between them).
fn served_text(result: &CallOutput) -> String {
    let structured = result.structured().map(|v| v.to_string()).unwrap_or_default();
    format!("{}{}{structured}", joined_text(result), block_texts(result))
}

/// A vendor server that echoes the request's headers, gzip-compressed
/// when the request accepts gzip (or, at `/always`, whatever it accepts).
async fn gzip_echo_server() -> LoopbackServer {
    LoopbackServer::start_with_bytes(|r| {
        let body = json!({"headers": r.headers}).to_string();
        let accepts = header(r, "accept-encoding").iter().any(|v| v.contains("gzip"));
        if !(accepts || r.path == "/always") {
            return (200, Vec::new(), body.into_bytes());
        }
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut gz, body.as_bytes()).unwrap();
        let encoding = vec![("content-encoding".to_owned(), "gzip".to_owned())];
        (200, encoding, gz.finish().unwrap())
    })
    .await
}

/// The plugin asks a granted server that echoes request headers for gzip,
/// inflates the answer in the sandbox (redaction saw only compressed
/// bytes) and returns it base64-encoded: the host never lets the plugin
/// choose an encoding, and the gate finds the secret in base64 anyway.
#[tokio::test(flavor = "multi_thread")]
async fn a_secret_inflated_from_a_gzip_echo_never_reaches_the_client() {
    let server = gzip_echo_server().await;
    let config = format!(
        "url = \"http://{}/plain\"\nheaders = [[\"Accept-Encoding\", \"gzip\"]]\ninflate = true\n\
         encode = \"base64\"\nleak = \"text\"",
        server.addr
    );
    let attack = Attack::load(
        &loopback_grant(server.addr, Some("TOOLHOST_TEST_ATTACK_TOKEN")),
        &config,
    )
    .await;
    let result = attack.served_call().await;
    let text = served_text(&result);
    assert!(!recovers_secret(&text), "the secret leaked: {text}");
}

/// The host owns content encoding: it asks for none, a plugin may not ask
/// for one, and a server that compresses all the same is refused.
#[tokio::test(flavor = "multi_thread")]
async fn content_encoding_is_the_hosts() {
    refused_header("Accept-Encoding", "gzip", None).await;
    let server = gzip_echo_server().await;
    let grants = loopback_grant(server.addr, Some("TOOLHOST_TEST_ATTACK_TOKEN"));
    let attack = Attack::load(&grants, &format!("url = \"http://{}/plain\"", server.addr)).await;
    assert_eq!(attack.report().await["status"], 200);
    assert_eq!(header(&seen(&server)[0], "accept-encoding"), ["identity"]);
    let attack = Attack::load(&grants, &format!("url = \"http://{}/always\"", server.addr)).await;
    let error = attack.refusal().await;
    assert!(
        error.contains("Content-Encoding") && error.contains("gzip") && error.contains("`attack`"),
        "{error}"
    );
}

/// The plugin writes the learnt secret into its structured result with
/// every character a `\uXXXX` escape: the client must not get it clear.
#[tokio::test(flavor = "multi_thread")]
async fn a_secret_escaped_in_structured_content_never_reaches_the_client() {
    let server = echo_server().await;
    let result = echo_attack(&server, "escaped", true).await.served_call().await;
    let structured = result.structured().expect("the structured result");
    assert!(!recovers_secret(&structured.to_string()), "{structured}");
    assert!(structured.to_string().contains(REDACTED), "{structured}");
}

/// The plugin splits the learnt secret across two text blocks, each of
/// which alone holds no secret.
#[tokio::test(flavor = "multi_thread")]
async fn a_secret_split_across_two_blocks_never_reaches_the_client() {
    let server = echo_server().await;
    let result = echo_attack(&server, "split", true).await.served_call().await;
    assert_eq!(result.content.len(), 2, "{result:?}");
    let joined = served_text(&result);
    assert!(!recovers_secret(&joined), "{joined}");
    assert!(joined.contains(REDACTED), "{joined}");
}

/// During `list-tools` the plugin fetches the echo and writes the learnt
/// secret, escaped, into a parameter's description: no client's
/// `tools/list` may show it.
#[tokio::test(flavor = "multi_thread")]
async fn a_secret_escaped_into_a_listed_description_never_reaches_tools_list() {
    let server = echo_server().await;
    let config = format!("list_url = \"http://{}/reversed\"\nreversed = true", server.addr);
    let attack = Attack::load(
        &loopback_grant(server.addr, Some("TOOLHOST_TEST_ATTACK_TOKEN")),
        &config,
    )
    .await;
    let host = attack.served().await;
    let listing = host.list_tools();
    let tool = listing.tools.iter().find(|t| t.name == "attack").expect("served");
    let q = tool.schema.property("q").expect("the leaking parameter")["description"].to_string();
    assert!(!recovers_secret(&q), "{q}");
    assert!(q.contains(REDACTED), "{q}");
    assert!(!recovers_secret(&tool.schema.to_value().to_string()));
}

/// The learnt secret written hex (either case), percent-escaped, reversed
/// in capitals and in base64 of both alphabets at another alignment.
#[tokio::test(flavor = "multi_thread")]
async fn an_encoded_secret_never_reaches_the_client() {
    let server = echo_server().await;
    for encode in ["hex", "HEX", "url", "reversed-upper", "base64", "base64url"] {
        let config = format!(
            "url = \"http://{}/reversed\"\nreversed = true\nencode = \"{encode}\"\nleak = \"text\"",
            server.addr
        );
        let attack = Attack::load(
            &loopback_grant(server.addr, Some("TOOLHOST_TEST_ATTACK_TOKEN")),
            &config,
        )
        .await;
        let text = served_text(&attack.served_call().await);
        assert!(!recovers_secret(&text), "{encode}: {text}");
        assert!(text.contains(REDACTED), "{encode}: {text}");
    }
}
