//! Per-caller credentials (`[credentials]`, a plugin secret's `from`): over
//! streamable HTTP with OAuth, two callers' JWTs signed by the test key, the
//! tracker plugin behind the Jira enricher, and a loopback vendor that
//! answers each bearer token with its owner's data. Alice and Bob each see
//! their own issues, from the operator's credential store or by token
//! exchange at a loopback RFC 8693 token endpoint; Bob is never served what
//! was prefetched with Alice's credential; a caller with none gets a tool
//! error naming the plugin while their other tools work; a store open to
//! others stops the start, by name. Hostile: a plugin that echoes its
//! request back learns neither the caller nor their credential, and a
//! caller naming another in headers, `_meta` or arguments gets their own.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jsonwebtoken::EncodingKey;
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Value, json};
use toolhost_tests::cluster::{KEY, KEY_ENV, Redis};
use toolhost_tests::upstream::{Answering, TaskServer, ToolServer, tool};
use toolhost_tests::{LoopbackServer, SeenRequest, catalog_bindings, fill_plugin_dir, needs, runtime};

use super::http_auth::{ISSUER, RESOURCE, caller_jwt, client, es256_key, jwt, post, serve, serve_with_env};
use super::policy::Session;

/// Each caller's own token at the vendor, as the store holds it.
const ALICE_TOKEN: &str = "tok-a1f3e9c07d";
const BOB_TOKEN: &str = "tok-b7c2d4e815";
/// What the token endpoint exchanges each caller's JWT for.
const ALICE_EXCHANGED: &str = "xtok-5e0c9a7731";
const BOB_EXCHANGED: &str = "xtok-62dd18f4b0";

/// The vendor's data is its owner's: `/issues` lists WEB-1 and WEB-2,
/// `/issues/KEY` is titled `OWNER's KEY` for the token's owner, and any
/// other token is a 401. `tokens` maps token → owner.
async fn vendor(tokens: &[(&str, &str)]) -> LoopbackServer {
    let owners: Vec<(String, String)> = tokens
        .iter()
        .map(|(t, o)| (format!("Bearer {t}"), (*o).to_owned()))
        .collect();
    LoopbackServer::start(Duration::ZERO, move |r| {
        let auth = header(r, "authorization");
        let Some((_, owner)) = owners.iter().find(|(t, _)| Some(t.as_str()) == auth) else {
            return (401, json!({"message": "bad credentials"}).to_string());
        };
        let path = r.path.split('?').next().unwrap_or_default();
        if path == "/issues" {
            return (
                200,
                json!({"issues": [{"key": "WEB-1"}, {"key": "WEB-2"}]}).to_string(),
            );
        }
        let rest = path.trim_start_matches("/issues/");
        if let Some(key) = rest.strip_suffix("/comments") {
            return (
                200,
                json!({"key": key, "comments": [format!("{owner} was here")]}).to_string(),
            );
        }
        (
            200,
            json!({"key": rest, "title": format!("{owner}'s {rest}")}).to_string(),
        )
    })
    .await
}

fn header<'a>(request: &'a SeenRequest, name: &str) -> Option<&'a str> {
    request
        .headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// The `GET`s of `path` the vendor saw, by the bearer token they carried.
fn gets(server: &LoopbackServer, path: &str) -> Vec<String> {
    server
        .seen
        .lock()
        .unwrap()
        .iter()
        .filter(|r| r.method == "GET" && r.path == path)
        .map(|r| header(r, "authorization").unwrap_or_default().to_owned())
        .collect()
}

/// Wait until the vendor has seen a `GET` of `path` with `token`.
async fn seen(server: &LoopbackServer, path: &str, token: &str) {
    let bearer = format!("Bearer {token}");
    for _ in 0..1000 {
        if gets(server, path).contains(&bearer) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!(
        "the vendor never saw {path} with the token: {:?}",
        gets(server, path)
    );
}

/// A team's host: the Jira enricher and the tracker plugin, whose secret
/// `tracker` (`secret`: its `from` and what goes with it) is sent to the
/// vendor as a bearer token; `toolhost.toml` with OAuth, speculation on for
/// the tracker's reads, and `extra`.
struct Team {
    dir: tempfile::TempDir,
    key: EncodingKey,
    config: String,
}

impl Team {
    async fn new(vendor: &LoopbackServer, secret: &str, extra: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let origin = format!("http://{}", vendor.addr);
        let tracker = format!(
            "[grants]\nhttp = [\"{origin}\"]\n[grants.secrets.tracker]\n{secret}\nheader = \"Authorization\"\n\
             prefix = \"Bearer \"\nhosts = [\"{origin}\"]\nallow_loopback_http = true\n\
             [config]\nbase_url = \"{origin}\"\n"
        );
        let jira = "[config]\nhost = \"jira.test\"\n[[config.projects]]\nkey = \"WEB\"\n";
        let plugins = dir.path().join("plugins");
        std::fs::create_dir_all(&plugins).unwrap();
        fill_plugin_dir(
            &plugins,
            &[
                ("10-jira", "jira", Some(jira)),
                ("20-tracker", "tracker_tools", Some(&tracker)),
            ],
        );
        std::fs::write(dir.path().join("notes.txt"), "native reads are the host's\n").unwrap();
        let (key, jwk) = es256_key("k1");
        std::fs::write(dir.path().join("jwks.json"), json!({"keys": [jwk]}).to_string()).unwrap();
        let mut config = format!(
            "root = \".\"\n[auth]\n[auth.oauth]\nresource = \"{RESOURCE}\"\nissuer = \"{ISSUER}\"\n\
             jwks_file = \"jwks.json\"\n[speculation]\nhosts = [\"jira.test\"]\nper_host = 8\n"
        );
        for tool in ["get_issues", "get_issue", "get_issue_comments"] {
            config +=
                &format!("[tools.{tool}]\nside_effect = \"read-only\"\nrate_limit_host = \"jira.test\"\n");
        }
        // The plugins as the host will load them, for their catalog tools.
        let (rt, _) = runtime();
        let report = rt.load_dir(&plugins).await.unwrap();
        assert!(report.errors.is_empty(), "{:?}", report.errors);
        config += "[bind]\n";
        for (tool, plugin) in catalog_bindings(&report.plugins[1]) {
            config += &format!("{tool} = {}\n", json!(plugin));
        }
        config += extra;
        Self { dir, key, config }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The operator's credential store, `text`, with `mode`.
    fn store(&self, text: &str, mode: u32) {
        let path = self.path().join("credentials.toml");
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    /// A JWT for `sub`, signed by the test key.
    fn token(&self, sub: &str) -> String {
        let exp = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() + 600;
        jwt(
            &self.key,
            "k1",
            json!({"sub": sub, "aud": RESOURCE, "iss": ISSUER, "exp": exp}),
        )
    }
}

/// `tool` called with `args` in `session`: the result.
async fn call(session: &mut Session<'_>, tool: &str, args: Value) -> Value {
    session
        .request("tools/call", json!({"name": tool, "arguments": args}))
        .await
}

/// A result's structured title, or its text.
fn title(result: &Value) -> String {
    match result["structuredContent"]["title"].as_str() {
        Some(title) => title.to_owned(),
        None => result["content"].to_string(),
    }
}

const STORE: &str =
    "[alice.tracker]\ntracker = \"tok-a1f3e9c07d\"\n[bob.tracker]\ntracker = \"tok-b7c2d4e815\"\n";

#[tokio::test(flavor = "multi_thread")]
async fn each_caller_sees_their_own_and_never_what_was_prefetched_with_anothers_credential() {
    let vendor = vendor(&[(ALICE_TOKEN, "alice"), (BOB_TOKEN, "bob")]).await;
    let audit = "[audit]\nfile = \"audit.jsonl\"\n";
    let team = Team::new(
        &vendor,
        "from = \"store\"",
        &format!("[credentials]\nfile = \"credentials.toml\"\n{audit}"),
    )
    .await;
    team.store(STORE, 0o600);
    let served = serve(team.path(), &team.config, "127.0.0.1:0", &[]).unwrap();
    let (alice_jwt, bob_jwt) = (team.token("alice"), team.token("bob"));
    let mut alice = Session::open(&served.base, alice_jwt.clone()).await;
    let mut bob = Session::open(&served.base, bob_jwt.clone()).await;

    // Alice's listing plans the reads of its issues, made with her token.
    let listed = call(&mut alice, "get_issues", json!({})).await;
    assert_ne!(listed["isError"], true, "{listed}");
    seen(&vendor, "/issues/WEB-1", ALICE_TOKEN).await;
    // Served to her from what was prefetched: no second read of hers.
    let hers = call(&mut alice, "get_issue", json!({"key": "WEB-1"})).await;
    assert_eq!(title(&hers), "alice's WEB-1");
    assert_eq!(gets(&vendor, "/issues/WEB-1"), [format!("Bearer {ALICE_TOKEN}")]);

    // Bob asks for the same issue: the prefetch made with Alice's token is
    // not his; it runs with his, and he sees his own.
    let his = call(&mut bob, "get_issue", json!({"key": "WEB-1"})).await;
    assert_eq!(title(&his), "bob's WEB-1", "{his}");
    assert_eq!(
        gets(&vendor, "/issues/WEB-1"),
        [format!("Bearer {ALICE_TOKEN}"), format!("Bearer {BOB_TOKEN}")]
    );
    // Neither value reaches anything served.
    for result in [&listed, &hers, &his] {
        let text = result.to_string();
        assert!(!text.contains(ALICE_TOKEN) && !text.contains(BOB_TOKEN), "{text}");
    }
    // The audit says who called, with no credential nor token of theirs.
    let lines = std::fs::read_to_string(team.path().join("audit.jsonl")).unwrap();
    let subjects: Vec<Value> = lines
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["caller"]["subject"].clone())
        .collect();
    assert_eq!(subjects, ["alice", "alice", "bob"], "{lines}");
    for secret in [ALICE_TOKEN, BOB_TOKEN, &alice_jwt, &bob_jwt] {
        assert!(!lines.contains(secret), "{lines}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn replicas_sharing_redis_serve_a_callers_prefetch_to_that_caller_alone() {
    needs!(Redis);
    let vendor = vendor(&[(ALICE_TOKEN, "alice"), (BOB_TOKEN, "bob")]).await;
    let redis = Redis::start().unwrap();
    let cluster = format!(
        "[credentials]\nfile = \"credentials.toml\"\n[cluster]\nredis = {}\n",
        json!(redis.url())
    );
    let team = Team::new(&vendor, "from = \"store\"", &cluster).await;
    team.store(STORE, 0o600);
    let replica =
        || serve_with_env(team.path(), &team.config, "127.0.0.1:0", &[], &[(KEY_ENV, KEY)]).unwrap();
    let (a, b) = (replica(), replica());

    // Alice's listing on A: her issues and their comments, prefetched with
    // her token and shared in Redis.
    let mut alice_on_a = Session::open(&a.base, team.token("alice")).await;
    call(&mut alice_on_a, "get_issues", json!({})).await;
    redis.await_prefetches(4).await;
    // On B, Alice is served what A prefetched for her: the replicas agree
    // on her partition.
    let mut alice_on_b = Session::open(&b.base, team.token("alice")).await;
    let hers = call(&mut alice_on_b, "get_issue", json!({"key": "WEB-1"})).await;
    assert_eq!(title(&hers), "alice's WEB-1");
    assert_eq!(gets(&vendor, "/issues/WEB-1"), [format!("Bearer {ALICE_TOKEN}")]);
    // Bob on B is not: his call runs with his own token.
    let mut bob_on_b = Session::open(&b.base, team.token("bob")).await;
    let his = call(&mut bob_on_b, "get_issue", json!({"key": "WEB-1"})).await;
    assert_eq!(title(&his), "bob's WEB-1", "{his}");
    assert_eq!(
        gets(&vendor, "/issues/WEB-1"),
        [format!("Bearer {ALICE_TOKEN}"), format!("Bearer {BOB_TOKEN}")]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_caller_with_no_credential_gets_a_named_tool_error_and_their_other_tools_work() {
    let vendor = vendor(&[(ALICE_TOKEN, "alice"), (BOB_TOKEN, "bob")]).await;
    let team = Team::new(
        &vendor,
        "from = \"store\"",
        "[credentials]\nfile = \"credentials.toml\"\n",
    )
    .await;
    team.store(STORE, 0o600);
    let served = serve(team.path(), &team.config, "127.0.0.1:0", &[]).unwrap();
    let mut carol = Session::open(&served.base, team.token("carol")).await;
    let refused = call(&mut carol, "get_issue", json!({"key": "WEB-1"})).await;
    assert_eq!(refused["isError"], true, "{refused}");
    let text = refused["content"][0]["text"].as_str().unwrap();
    for needed in ["plugin `tracker`", "carol", "`tracker`", "credentials.toml"] {
        assert!(text.contains(needed), "{needed}: {text}");
    }
    assert!(!text.contains(ALICE_TOKEN) && !text.contains(BOB_TOKEN), "{text}");
    // No request went out without a credential.
    assert!(gets(&vendor, "/issues/WEB-1").is_empty());
    let read = call(&mut carol, "read", json!({"path": "notes.txt"})).await;
    assert_ne!(read["isError"], true, "{read}");
    assert!(read.to_string().contains("native reads are the host's"), "{read}");

    // The operator adds her: the store is read again, and she is served.
    team.store(
        &format!("{STORE}[carol.tracker]\ntracker = \"{ALICE_TOKEN}\"\n"),
        0o600,
    );
    let now = call(&mut carol, "get_issue", json!({"key": "WEB-1"})).await;
    assert_eq!(title(&now), "alice's WEB-1", "{now}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_store_open_to_others_stops_the_start_by_name() {
    let vendor = vendor(&[]).await;
    let team = Team::new(
        &vendor,
        "from = \"store\"",
        "[credentials]\nfile = \"credentials.toml\"\n",
    )
    .await;
    team.store(STORE, 0o644);
    let log = serve(team.path(), &team.config, "127.0.0.1:0", &[])
        .err()
        .expect("the start is refused");
    let file = team.path().join("credentials.toml");
    assert!(log.contains(&file.display().to_string()), "{log}");
    assert!(log.contains("0644") && log.contains("chmod 600"), "{log}");
    assert!(!log.contains(ALICE_TOKEN), "{log}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_store_directory_serves_each_caller_from_their_own_file_and_no_subject_escapes_it() {
    let vendor = vendor(&[(ALICE_TOKEN, "alice"), (BOB_TOKEN, "bob")]).await;
    let team = Team::new(
        &vendor,
        "from = \"store\"",
        "[credentials]\ndir = \"credentials.d\"\n",
    )
    .await;
    let dir = team.path().join("credentials.d");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let put = |name: &str, token: &str| {
        let file = dir.join(name);
        std::fs::write(&file, format!("[tracker]\ntracker = \"{token}\"\n")).unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
    };
    put("alice.toml", ALICE_TOKEN);
    // `auth0|bob`, percent-encoded.
    put("auth0%7Cbob.toml", BOB_TOKEN);
    // Beside the directory, where `../carol` would lead if taken as a path.
    put("../carol.toml", ALICE_TOKEN);
    let served = serve(team.path(), &team.config, "127.0.0.1:0", &[]).unwrap();

    let mut alice = Session::open(&served.base, team.token("alice")).await;
    let hers = call(&mut alice, "get_issue", json!({"key": "WEB-1"})).await;
    assert_eq!(title(&hers), "alice's WEB-1", "{hers}");
    let mut bob = Session::open(&served.base, team.token("auth0|bob")).await;
    let his = call(&mut bob, "get_issue", json!({"key": "WEB-2"})).await;
    assert_eq!(title(&his), "bob's WEB-2", "{his}");

    // A subject shaped as a path reaches no file but its own, encoded one,
    // which the error names.
    let mut mallory = Session::open(&served.base, team.token("../carol")).await;
    let refused = call(&mut mallory, "get_issue", json!({"key": "WEB-1"})).await;
    assert_eq!(refused["isError"], true, "{refused}");
    let text = refused["content"][0]["text"].as_str().unwrap();
    let own = dir.join("%2E.%2Fcarol.toml");
    for needed in [
        "plugin `tracker`",
        &own.display().to_string(),
        "[tracker] tracker",
    ] {
        assert!(text.contains(needed), "{needed}: {text}");
    }
    assert!(!text.contains(ALICE_TOKEN) && !text.contains(BOB_TOKEN), "{text}");
    assert_eq!(gets(&vendor, "/issues/WEB-1"), [format!("Bearer {ALICE_TOKEN}")]);

    // A caller's file added while serving is read at their next call.
    let mut carol = Session::open(&served.base, team.token("carol")).await;
    let before = call(&mut carol, "get_issue", json!({"key": "WEB-3"})).await;
    assert_eq!(before["isError"], true, "{before}");
    put("carol.toml", BOB_TOKEN);
    let after = call(&mut carol, "get_issue", json!({"key": "WEB-3"})).await;
    assert_eq!(title(&after), "bob's WEB-3", "{after}");

    // Opened to others, the directory refuses every caller, by name.
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let open = call(&mut alice, "get_issue", json!({"key": "WEB-4"})).await;
    assert_eq!(open["isError"], true, "{open}");
    let text = open["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains(&dir.display().to_string()) && text.contains("chmod 700"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_secret_from_the_store_without_a_store_stops_the_start_naming_it() {
    let vendor = vendor(&[]).await;
    let team = Team::new(&vendor, "from = \"store\"", "").await;
    let log = serve(team.path(), &team.config, "127.0.0.1:0", &[])
        .err()
        .expect("the start is refused");
    assert!(
        log.contains("plugin `tracker`") && log.contains("[credentials] file"),
        "{log}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_caller_cannot_pick_anothers_credential_through_headers_meta_or_arguments() {
    let vendor = vendor(&[(ALICE_TOKEN, "alice"), (BOB_TOKEN, "bob")]).await;
    let team = Team::new(
        &vendor,
        "from = \"store\"",
        "[credentials]\nfile = \"credentials.toml\"\n",
    )
    .await;
    team.store(STORE, 0o600);
    let served = serve(team.path(), &team.config, "127.0.0.1:0", &[]).unwrap();
    let bob = team.token("bob");
    let mut session = Session::open(&served.base, bob.clone()).await;
    // Bob's call, naming Alice every way a request can besides its token.
    let send = async |arguments: Value| {
        let message = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
            "name": "get_issue", "arguments": arguments,
            "_meta": {"subject": "alice", "caller": "alice", "credential": ALICE_TOKEN}}});
        client()
            .post(format!("{}/mcp", served.base))
            .bearer_auth(&bob)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", session.id())
            .header("mcp-protocol-version", "2025-06-18")
            .header("x-toolhost-caller", "alice")
            .header("x-forwarded-user", "alice")
            .header("x-auth-request-user", "alice")
            .body(message.to_string())
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    };
    let answer = send(json!({"key": "WEB-2"})).await;
    assert!(
        answer.contains("bob's WEB-2") && !answer.contains("alice's"),
        "{answer}"
    );
    // Arguments the schema does not name are refused or passed on, never
    // read as a caller.
    let answer = send(json!({"key": "WEB-2", "subject": "alice", "caller": "alice"})).await;
    assert!(!answer.contains("alice's"), "{answer}");
    for token in gets(&vendor, "/issues/WEB-2") {
        assert_eq!(token, format!("Bearer {BOB_TOKEN}"));
    }
    let plain = call(&mut session, "get_issue", json!({"key": "WEB-2"})).await;
    assert_eq!(title(&plain), "bob's WEB-2", "{plain}");
}

/// An RFC 8693 token endpoint on loopback: it exchanges each known JWT
/// (`subjects`: JWT → token issued) for its token, and refuses any other
/// with `invalid_grant` and a description quoting the token it was sent.
async fn token_endpoint(subjects: Vec<(String, &'static str)>) -> LoopbackServer {
    LoopbackServer::start(Duration::ZERO, move |r| {
        let form: Vec<(String, String)> = form_urlencoded::parse(r.body.as_bytes()).into_owned().collect();
        let field = |name: &str| form.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
        if field("grant_type").as_deref() != Some("urn:ietf:params:oauth:grant-type:token-exchange")
            || field("subject_token_type").as_deref() != Some("urn:ietf:params:oauth:token-type:access_token")
            || field("audience").is_none()
        {
            return (400, json!({"error": "invalid_request"}).to_string());
        }
        let subject = field("subject_token").unwrap_or_default();
        match subjects.iter().find(|(jwt, _)| *jwt == subject) {
            Some((_, issued)) => (
                200,
                json!({"access_token": issued, "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
                       "token_type": "Bearer", "expires_in": 600})
                .to_string(),
            ),
            None => (
                400,
                json!({"error": "invalid_grant", "error_description": format!("bad token {subject}")}).to_string(),
            ),
        }
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn exchanged_tokens_are_each_callers_own_cached_and_a_failed_exchange_is_named() {
    let vendor = vendor(&[(ALICE_EXCHANGED, "alice"), (BOB_EXCHANGED, "bob")]).await;
    let team = Team::new(&vendor, "from = \"exchange\"", "").await;
    let (alice_jwt, bob_jwt, mallory_jwt) = (team.token("alice"), team.token("bob"), team.token("mallory"));
    let endpoint = token_endpoint(vec![
        (alice_jwt.clone(), ALICE_EXCHANGED),
        (bob_jwt.clone(), BOB_EXCHANGED),
    ])
    .await;
    let config = format!(
        "{}[credentials.exchange]\ntoken_endpoint = \"http://{}/token\"\nclient_id = \"toolhost\"\n",
        team.config, endpoint.addr
    );
    let served = serve(team.path(), &config, "127.0.0.1:0", &[]).unwrap();

    let mut alice = Session::open(&served.base, alice_jwt.clone()).await;
    let mut bob = Session::open(&served.base, bob_jwt.clone()).await;
    assert_eq!(
        title(&call(&mut alice, "get_issue", json!({"key": "WEB-1"})).await),
        "alice's WEB-1"
    );
    assert_eq!(
        title(&call(&mut bob, "get_issue", json!({"key": "WEB-1"})).await),
        "bob's WEB-1"
    );
    assert_eq!(
        title(&call(&mut alice, "get_issue", json!({"key": "WEB-2"})).await),
        "alice's WEB-2"
    );
    // One exchange per caller: the second call of Alice's used the cache.
    let exchanges = endpoint.seen.lock().unwrap().clone();
    assert_eq!(exchanges.len(), 2, "{exchanges:?}");
    for request in &exchanges {
        assert_eq!(request.method, "POST");
        assert_eq!(header(request, "authorization"), Some("Basic dG9vbGhvc3Q6"));
        let form: Vec<(String, String)> = form_urlencoded::parse(request.body.as_bytes())
            .into_owned()
            .collect();
        let origin = format!("http://{}", vendor.addr);
        assert!(
            form.contains(&("audience".to_owned(), origin.clone())),
            "{form:?}"
        );
        assert!(form.contains(&("resource".to_owned(), origin)), "{form:?}");
    }
    // The vendor never saw a caller's JWT, only the tokens issued for it.
    for request in vendor.seen.lock().unwrap().iter() {
        let auth = header(request, "authorization").unwrap_or_default();
        assert!(
            auth == format!("Bearer {ALICE_EXCHANGED}") || auth == format!("Bearer {BOB_EXCHANGED}"),
            "{auth}"
        );
    }

    // Mallory's token is refused at the endpoint: a tool error naming it
    // and the OAuth error code, never a token; her other tools work.
    let mut mallory = Session::open(&served.base, mallory_jwt.clone()).await;
    let refused = call(&mut mallory, "get_issue", json!({"key": "WEB-1"})).await;
    assert_eq!(refused["isError"], true, "{refused}");
    let text = refused["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains(&format!("http://{}/token", endpoint.addr)),
        "{text}"
    );
    assert!(
        text.contains("`invalid_grant`") && text.contains("plugin `tracker`"),
        "{text}"
    );
    assert!(
        !text.contains(&mallory_jwt) && !text.contains("bad token"),
        "{text}"
    );
    let read = call(&mut mallory, "read", json!({"path": "notes.txt"})).await;
    assert_ne!(read["isError"], true, "{read}");
}

/// An echo server: each answer is the request's headers, as JSON.
async fn echo() -> LoopbackServer {
    LoopbackServer::start(Duration::ZERO, |r| {
        (200, json!({"headers": r.headers}).to_string())
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_plugin_echoing_its_request_learns_neither_the_caller_nor_their_credential() {
    let echo = echo().await;
    let dir = tempfile::tempdir().unwrap();
    let origin = format!("http://{}", echo.addr);
    let plugins = dir.path().join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    let (key, jwk) = es256_key("k1");
    std::fs::write(dir.path().join("jwks.json"), json!({"keys": [jwk]}).to_string()).unwrap();
    let store = dir.path().join("credentials.toml");
    std::fs::write(&store, format!("[alice.attack]\ntracker = \"{ALICE_TOKEN}\"\n")).unwrap();
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o600)).unwrap();
    let config = format!(
        "[auth]\n[auth.oauth]\nresource = \"{RESOURCE}\"\nissuer = \"{ISSUER}\"\njwks_file = \"jwks.json\"\n\
         [credentials]\nfile = \"credentials.toml\"\n"
    );
    let exp = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() + 600;
    let alice_jwt = jwt(
        &key,
        "k1",
        json!({"sub": "alice", "aud": RESOURCE, "iss": ISSUER, "exp": exp}),
    );
    // Each way out the plugin has: its result's text, its structured
    // content, its error, its log.
    for leak in ["text", "json", "error", "log"] {
        let manifest = format!(
            "[grants]\nhttp = [\"{origin}\"]\n[grants.secrets.tracker]\nfrom = \"store\"\nheader = \"Authorization\"\n\
             prefix = \"Bearer \"\nhosts = [\"{origin}\"]\nallow_loopback_http = true\n\
             [config]\nurl = \"{origin}/echo\"\nleak = \"{leak}\"\n"
        );
        for old in std::fs::read_dir(&plugins).unwrap() {
            std::fs::remove_file(old.unwrap().path()).unwrap();
        }
        fill_plugin_dir(&plugins, &[("40-attack", "fixture_attack_http", Some(&manifest))]);
        let served = serve(dir.path(), &config, "127.0.0.1:0", &[]).unwrap();
        let mut alice = Session::open(&served.base, alice_jwt.clone()).await;
        let result = call(&mut alice, "attack", json!({})).await.to_string();
        let context = format!("leak {leak}");
        if leak == "log" {
            // What the plugin logs goes to the host's log, redacted too.
            let log = served.wait_for("[redacted:tracker]").join("\n");
            assert!(
                !log.contains(ALICE_TOKEN) && !log.contains(&alice_jwt),
                "{context}: {log}"
            );
            continue;
        }
        assert!(
            !result.contains(ALICE_TOKEN),
            "{context}: the credential leaked: {result}"
        );
        assert!(
            !result.contains(&alice_jwt),
            "{context}: the caller's JWT leaked: {result}"
        );
        assert!(
            !result.to_lowercase().contains("alice"),
            "{context}: the caller leaked: {result}"
        );
        assert!(result.contains("[redacted:tracker]"), "{context}: {result}");
    }
    // The vendor got the credential, and nothing of who asked.
    for request in echo.seen.lock().unwrap().iter() {
        assert_eq!(
            header(request, "authorization"),
            Some(format!("Bearer {ALICE_TOKEN}").as_str())
        );
        let text = format!("{:?}", request.headers);
        assert!(!text.contains(&alice_jwt) && !text.contains("alice"), "{text}");
    }
}

/// Each call an upstream got: its `Authorization` and MCP session.
type Calls = Arc<Mutex<Vec<(String, String)>>>;

/// An upstream MCP server over streamable HTTP that answers `whoami` with
/// the owner of the bearer token it was called with (`owners`: token →
/// owner), and records each call's token and MCP session in `calls`.
fn account(owners: Vec<(String, String)>, calls: Calls) -> ToolServer {
    let whoami = tool(
        "whoami",
        "Who the server is talking to",
        json!({"type": "object", "properties": {}}),
    );
    ToolServer::new(vec![whoami], move |_, context| {
        let parts = context
            .extensions
            .get::<axum::http::request::Parts>()
            .expect("an HTTP request");
        let header = |name: &str| {
            parts
                .headers
                .get(name)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned()
        };
        let auth = header("authorization");
        calls
            .lock()
            .unwrap()
            .push((auth.clone(), header("mcp-session-id")));
        match owners.iter().find(|(t, _)| format!("Bearer {t}") == auth) {
            Some((_, owner)) => CallToolResult::success(vec![ContentBlock::text(format!("you are {owner}"))]),
            None => CallToolResult::error(vec![ContentBlock::text("who are you?")]),
        }
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn an_upstream_acting_as_each_caller_gets_their_exchanged_token_over_a_session_of_their_own() {
    let calls = Calls::default();
    let owners = vec![
        (ALICE_EXCHANGED.to_owned(), "alice".to_owned()),
        (BOB_EXCHANGED.to_owned(), "bob".to_owned()),
    ];
    let (url, upstream_sessions) = account(owners, calls.clone()).serve_keeping_sessions().await;
    let dir = tempfile::tempdir().unwrap();
    let (key, jwk) = es256_key("k1");
    std::fs::write(dir.path().join("jwks.json"), json!({"keys": [jwk]}).to_string()).unwrap();
    let token = |sub: &str| caller_jwt(&key, sub);
    let (alice_jwt, bob_jwt, mallory_jwt) = (token("alice"), token("bob"), token("mallory"));
    let endpoint = token_endpoint(vec![
        (alice_jwt.clone(), ALICE_EXCHANGED),
        (bob_jwt.clone(), BOB_EXCHANGED),
    ])
    .await;
    let config = |upstream: &str| {
        format!(
            "root = \".\"\n[auth]\n[auth.oauth]\nresource = \"{RESOURCE}\"\nissuer = \"{ISSUER}\"\n\
             jwks_file = \"jwks.json\"\n[credentials.exchange]\ntoken_endpoint = \"http://{}/token\"\n\
             [[upstream]]\nname = \"acct\"\n{upstream}\ncredential = \"exchange\"\n",
            endpoint.addr
        )
    };
    // A stdio server is one process with one identity: refused at start.
    let log = serve(dir.path(), &config("command = \"cat\""), "127.0.0.1:0", &[])
        .err()
        .expect("the start is refused");
    assert!(
        log.contains("upstream `acct`") && log.contains("stdio server is one process"),
        "{log}"
    );

    let served = serve(
        dir.path(),
        &config(&format!("url = \"{url}\"")),
        "127.0.0.1:0",
        &[],
    )
    .unwrap();
    let mut alice = Session::open(&served.base, alice_jwt.clone()).await;
    let mut bob = Session::open(&served.base, bob_jwt.clone()).await;
    let whoami = async |session: &mut Session<'_>| {
        let result = call(session, "whoami", json!({})).await;
        result["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    assert_eq!(whoami(&mut alice).await, "you are alice");
    assert_eq!(whoami(&mut bob).await, "you are bob");
    assert_eq!(whoami(&mut alice).await, "you are alice");
    // One exchange and one session per caller: Alice's two calls went over
    // one session, Bob's over another.
    assert_eq!(endpoint.seen.lock().unwrap().len(), 2);
    let seen = calls.lock().unwrap().clone();
    let auth: Vec<&str> = seen.iter().map(|(a, _)| a.as_str()).collect();
    let bearer = |t: &str| format!("Bearer {t}");
    assert_eq!(
        auth,
        [
            bearer(ALICE_EXCHANGED),
            bearer(BOB_EXCHANGED),
            bearer(ALICE_EXCHANGED)
        ]
    );
    assert_eq!(seen[0].1, seen[2].1, "{seen:?}");
    assert_ne!(seen[0].1, seen[1].1, "{seen:?}");
    // A refused exchange is Mallory's tool error, naming the upstream, the
    // endpoint and the code, never a token.
    let mut mallory = Session::open(&served.base, mallory_jwt.clone()).await;
    let refused = call(&mut mallory, "whoami", json!({})).await;
    assert_eq!(refused["isError"], true, "{refused}");
    let text = refused["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("upstream `acct`") && text.contains("`invalid_grant`"),
        "{text}"
    );
    assert!(!text.contains(&mallory_jwt), "{text}");
    assert_eq!(calls.lock().unwrap().len(), 3, "no call went without a token");

    // Stopped as a service manager stops it, toolhost ends every session
    // it opened (`DELETE`): the host's own, Alice's and Bob's. Left open,
    // each restart would leave the server a session per caller to hold
    // until it gave them up.
    let held = async || upstream_sessions.sessions.read().await.len();
    assert_eq!(held().await, 3);
    let mut served = served;
    let status = served.served.terminate(Duration::from_secs(20));
    assert!(
        status.is_some_and(|s| s.success()),
        "{status:?}\n{}",
        served.served.log_text()
    );
    assert_eq!(held().await, 0, "sessions left open upstream");
}

/// A task-augmented call of an upstream acting as each caller would run on
/// the host's session, as nobody: it is refused, naming the server and
/// why, before the server hears of it; the same tool called plainly runs
/// as the caller.
#[tokio::test(flavor = "multi_thread")]
async fn a_task_of_an_upstream_acting_as_each_caller_is_refused_before_the_server_hears_of_it() {
    let upstream = TaskServer::start(Answering::Sse).await;
    let dir = tempfile::tempdir().unwrap();
    let (key, jwk) = es256_key("k1");
    std::fs::write(dir.path().join("jwks.json"), json!({"keys": [jwk]}).to_string()).unwrap();
    let exp = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() + 600;
    let alice_jwt = jwt(
        &key,
        "k1",
        json!({"sub": "alice", "aud": RESOURCE, "iss": ISSUER, "exp": exp}),
    );
    let endpoint = token_endpoint(vec![(alice_jwt.clone(), ALICE_EXCHANGED)]).await;
    let config = format!(
        "root = \".\"\n[auth]\n[auth.oauth]\nresource = \"{RESOURCE}\"\nissuer = \"{ISSUER}\"\n\
         jwks_file = \"jwks.json\"\n[credentials.exchange]\ntoken_endpoint = \"http://{}/token\"\n\
         [[upstream]]\nname = \"jobs\"\nurl = \"{}\"\ncredential = \"exchange\"\n",
        endpoint.addr,
        upstream.url()
    );
    let served = serve(dir.path(), &config, "127.0.0.1:0", &[]).unwrap();
    let mut alice = Session::open(&served.base, alice_jwt.clone()).await;

    let params = json!({"name": "long_job", "arguments": {}, "task": {"ttl": 60_000}});
    let message = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": params});
    let (_, _, answer) = post(&served.base, Some(&alice_jwt), Some(alice.id()), message).await;
    let answer = answer.unwrap();
    let error = answer["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("not refused: {answer}"));
    for needed in ["upstream `jobs`", "acts as each caller", "without `task`"] {
        assert!(error.contains(needed), "{needed}: {error}");
    }
    assert!(
        !error.contains(ALICE_EXCHANGED) && !error.contains(&alice_jwt),
        "{error}"
    );
    assert!(
        !upstream
            .methods()
            .iter()
            .any(|(method, task)| method == "tools/call" || *task),
        "{:?}",
        upstream.methods()
    );

    // Called plainly, it runs as Alice, with her exchanged token.
    let plain = call(&mut alice, "long_job", json!({})).await;
    assert_eq!(plain["content"][0]["text"], "ran plainly", "{plain}");
    let calls: Vec<Option<String>> = upstream
        .server
        .seen
        .lock()
        .unwrap()
        .iter()
        .filter(|r| r.body.contains("\"tools/call\""))
        .map(|r| header(r, "authorization").map(str::to_owned))
        .collect();
    assert_eq!(calls, [Some(format!("Bearer {ALICE_EXCHANGED}"))]);
}

/// An upstream acting as each caller that refuses a caller's exchanged
/// token, quoting it in its `WWW-Authenticate` header: the token is that
/// caller's, held for as long as their session lives, so rmcp's line at
/// `-v` leaves redacted, as do the caller's tool error and every other log
/// line; the caller's own bearer token (a JWT) is in none of them either.
#[tokio::test(flavor = "multi_thread")]
async fn an_upstream_quoting_a_callers_exchanged_token_in_a_refusal_leaves_it_in_no_log_line() {
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
    };
    // The host's own session (no token) lists the tools; every caller's
    // session is refused, its token quoted.
    let account = account(Vec::new(), Calls::default());
    let service = StreamableHttpService::new(
        move || Ok(account.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let refuse_tokens = async |request: axum::extract::Request, next: axum::middleware::Next| {
        let Some(sent) = request.headers().get("authorization").cloned() else {
            return next.run(request).await;
        };
        let sent = sent.to_str().unwrap_or_default().to_owned();
        let challenge = format!("Bearer error=\"invalid_token\", error_description=\"{sent} has expired\"");
        let refusal = (
            axum::http::StatusCode::UNAUTHORIZED,
            [("www-authenticate", challenge)],
            format!("you sent {sent}"),
        );
        axum::response::IntoResponse::into_response(refusal)
    };
    let app = axum::Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn(refuse_tokens));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });

    let dir = tempfile::tempdir().unwrap();
    let (key, jwk) = es256_key("k1");
    std::fs::write(dir.path().join("jwks.json"), json!({"keys": [jwk]}).to_string()).unwrap();
    let alice_jwt = caller_jwt(&key, "alice");
    let endpoint = token_endpoint(vec![(alice_jwt.clone(), ALICE_EXCHANGED)]).await;
    let config = format!(
        "root = \".\"\n[auth]\n[auth.oauth]\nresource = \"{RESOURCE}\"\nissuer = \"{ISSUER}\"\n\
         jwks_file = \"jwks.json\"\n[credentials.exchange]\ntoken_endpoint = \"http://{}/token\"\n\
         [[upstream]]\nname = \"acct\"\nurl = \"{url}\"\ncredential = \"exchange\"\n",
        endpoint.addr
    );
    let mut served = serve(dir.path(), &config, "127.0.0.1:0", &["-v"]).unwrap();
    let mut alice = Session::open(&served.base, alice_jwt.clone()).await;
    let refused = call(&mut alice, "whoami", json!({})).await;
    assert_eq!(refused["isError"], true, "{refused}");
    let text = refused.to_string();
    assert!(text.contains("upstream `acct`"), "{text}");
    served.terminate(Duration::from_secs(10));
    let log = served.log();
    let rmcp = log
        .lines()
        .find(|l| l.contains("rmcp") && l.contains("www_authenticate"));
    assert!(
        rmcp.is_some_and(|l| l.contains("[redacted:") && l.contains("has expired")),
        "{log}"
    );
    let reversed: String = ALICE_EXCHANGED.chars().rev().collect();
    for (what, shown) in [("the tool error", &text), ("the log", &log)] {
        for secret in [ALICE_EXCHANGED, &reversed, &alice_jwt] {
            assert!(!shown.contains(secret), "{what} holds {secret}: {shown}");
        }
    }
}
