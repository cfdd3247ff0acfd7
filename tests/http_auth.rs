//! `toolhost serve --http` with `[auth]`: real HTTP requests against the
//! release binary on loopback. A bearer token from a file; OAuth JWTs
//! checked against a JWKS file, with ES256 keys generated here, and against
//! a JWKS URL served by the test, with the RS256 test keys of `keys/`; and
//! the refusal to serve a non-loopback address without either.

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use ring::rand::SystemRandom;
use ring::rsa::PublicKeyComponents;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair, RsaKeyPair};
use serde_json::{Value, json};
use toolhost_tests::LoopbackServer;
use toolhost_tests::served::Served;

use super::toolhost;

/// A `toolhost serve --http` child, and where to reach it.
pub(super) struct Running {
    pub(super) served: Served,
    /// `http://127.0.0.1:PORT`: traffic goes to loopback whatever address
    /// it was bound to.
    pub(super) base: String,
}

impl Running {
    pub(super) fn log(&self) -> String {
        self.served.log_text()
    }

    /// `SIGTERM`, then its exit status within `within` (`Served::terminate`).
    pub(super) fn terminate(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        self.served.terminate(within)
    }

    /// Its log up to the first line holding `needle`, waited for.
    pub(super) fn wait_for(&self, needle: &str) -> Vec<String> {
        self.served.wait_for(needle)
    }
}

/// Start `toolhost serve --http ADDR` in `dir` with `config` as its
/// configuration and wait for its address; `Err(stderr)` if it exits.
pub(super) fn serve(dir: &Path, config: &str, addr: &str, extra: &[&str]) -> Result<Running, String> {
    serve_with_env(dir, config, addr, extra, &[])
}

/// [`serve`], with `env` set in the child's environment (a replica's
/// cluster key).
pub(super) fn serve_with_env(
    dir: &Path,
    config: &str,
    addr: &str,
    extra: &[&str],
    env: &[(&str, &str)],
) -> Result<Running, String> {
    let config_path = dir.join("toolhost.toml");
    std::fs::create_dir_all(dir.join("plugins")).unwrap();
    std::fs::write(&config_path, config).unwrap();
    let mut command = toolhost();
    command
        .current_dir(dir)
        .arg("--config")
        .arg(&config_path)
        .arg("--plugins")
        .arg(dir.join("plugins"))
        .args(["serve", "--http", addr])
        .args(extra)
        .envs(env.iter().copied());
    match Served::start(command) {
        Ok(served) => Ok(Running {
            base: format!("http://127.0.0.1:{}", served.addr.port()),
            served,
        }),
        Err(e) if e.exited => Err(e.log),
        Err(e) => panic!("{e}"),
    }
}

pub(super) fn client() -> reqwest::Client {
    toolhost::internals::http_client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

/// POST one JSON-RPC message to `/mcp`; the status, the headers and the
/// JSON-RPC message of the answer (from an SSE or a JSON body).
pub(super) async fn post(
    base: &str,
    token: Option<&str>,
    session: Option<&str>,
    body: Value,
) -> (u16, reqwest::header::HeaderMap, Option<Value>) {
    let mut request = client()
        .post(format!("{base}/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_string());
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    if let Some(session) = session {
        request = request
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", "2025-06-18");
    }
    let response = request.send().await.unwrap();
    let (status, headers) = (response.status().as_u16(), response.headers().clone());
    let text = response.text().await.unwrap();
    (status, headers, jsonrpc_in(&text))
}

/// The JSON-RPC message of an answer's body, an SSE stream's or a JSON
/// one.
pub(super) fn jsonrpc_in(text: &str) -> Option<Value> {
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .chain(std::iter::once(text))
        .find_map(|d| {
            serde_json::from_str::<Value>(d.trim())
                .ok()
                .filter(|v| v.get("jsonrpc").is_some())
        })
}

pub(super) fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "auth-test", "version": "1"}}})
}

/// Initialize, then list the tools: the MCP calls work with `token`.
async fn mcp_works(base: &str, token: Option<&str>) {
    let (status, headers, message) = post(base, token, None, initialize()).await;
    assert_eq!(status, 200, "initialize: {message:?}");
    let message = message.expect("an initialize result");
    assert_eq!(message["result"]["serverInfo"]["name"], "toolhost", "{message}");
    let session = headers["mcp-session-id"].to_str().unwrap().to_owned();
    let (status, _, _) = post(
        base,
        token,
        Some(&session),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await;
    assert_eq!(status, 202);
    let (status, _, message) = post(
        base,
        token,
        Some(&session),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
    )
    .await;
    assert_eq!(status, 200);
    let tools = message.unwrap()["result"]["tools"].clone();
    assert!(
        tools.as_array().unwrap().iter().any(|t| t["name"] == "read"),
        "{tools}"
    );
}

/// The status and `WWW-Authenticate` of an initialize sent with `token`.
async fn refused(base: &str, token: Option<&str>) -> (u16, String) {
    let (status, headers, _) = post(base, token, None, initialize()).await;
    let challenge = headers
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    (status, challenge)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bearer_token_from_a_file_is_required_on_loopback_too() {
    let dir = tempfile::tempdir().unwrap();
    let token = "tok-9f2c0a7d1e6b4c38";
    std::fs::write(dir.path().join("token"), format!("{token}\n")).unwrap();
    let served = serve(
        dir.path(),
        "root = \".\"\n[auth]\nbearer_token_file = \"token\"\n",
        "127.0.0.1:0",
        &["-vv"],
    )
    .unwrap();
    let (status, challenge) = refused(&served.base, None).await;
    assert_eq!(status, 401);
    assert_eq!(challenge, "Bearer realm=\"toolhost\"");
    let (status, challenge) = refused(&served.base, Some("tok-wrong")).await;
    assert_eq!(status, 401);
    assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");
    // A prefix of the token is not the token.
    assert_eq!(refused(&served.base, Some(&token[..8])).await.0, 401);
    mcp_works(&served.base, Some(token)).await;
    assert!(
        !served.log().contains(token),
        "the token was logged:\n{}",
        served.log()
    );
}

/// An ES256 key pair: the signing key and its public JWK under `kid`.
pub(super) fn es256_key(kid: &str) -> (EncodingKey, Value) {
    let rng = SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
    let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng).unwrap();
    // An uncompressed point: 0x04, then x and y.
    let point = pair.public_key().as_ref();
    let jwk = json!({
        "kty": "EC", "crv": "P-256", "alg": "ES256", "use": "sig", "kid": kid,
        "x": URL_SAFE_NO_PAD.encode(&point[1..33]), "y": URL_SAFE_NO_PAD.encode(&point[33..65]),
    });
    (EncodingKey::from_ec_der(pkcs8.as_ref()), jwk)
}

/// A JWT of `sub`'s signed with `key` (kid `k1`), for this server's
/// resource and issuer, valid for ten minutes.
pub(super) fn caller_jwt(key: &EncodingKey, sub: &str) -> String {
    let exp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 600;
    jwt(
        key,
        "k1",
        json!({"sub": sub, "aud": RESOURCE, "iss": ISSUER, "exp": exp}),
    )
}

pub(super) fn jwt(key: &EncodingKey, kid: &str, claims: Value) -> String {
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some(kid.into());
    jsonwebtoken::encode(&header, &claims, key).unwrap()
}

pub(super) const RESOURCE: &str = "https://mcp.toolhost.test/mcp";
pub(super) const ISSUER: &str = "https://login.toolhost.test";

#[tokio::test(flavor = "multi_thread")]
async fn oauth_jwts_are_checked_for_signature_issuer_audience_expiry_and_not_before() {
    let dir = tempfile::tempdir().unwrap();
    let (key, jwk) = es256_key("k1");
    // Another key under the same kid: a forger's.
    let (forged, _) = es256_key("k1");
    std::fs::write(dir.path().join("jwks.json"), json!({"keys": [jwk]}).to_string()).unwrap();
    let served = serve(
        dir.path(),
        &format!(
            "root = \".\"\n[auth.oauth]\nresource = \"{RESOURCE}\"\nissuer = \"{ISSUER}\"\n\
             jwks_file = \"jwks.json\"\nscopes_supported = [\"tools\"]\n"
        ),
        "127.0.0.1:0",
        &[],
    )
    .unwrap();

    // RFC 9728 metadata, at the well-known path and under the resource's.
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let response = client()
            .get(format!("{}{path}", served.base))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 200, "{path}");
        let metadata: Value = response.json().await.unwrap();
        assert_eq!(metadata["resource"], RESOURCE);
        assert_eq!(metadata["authorization_servers"], json!([ISSUER]));
        assert_eq!(metadata["scopes_supported"], json!(["tools"]));
    }

    let (status, challenge) = refused(&served.base, None).await;
    assert_eq!(status, 401);
    assert_eq!(
        challenge,
        "Bearer resource_metadata=\"https://mcp.toolhost.test/.well-known/oauth-protected-resource/mcp\""
    );

    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
    let claims = |aud: &str, iss: &str, exp: u64| json!({"sub": "agent", "aud": aud, "iss": iss, "exp": exp});
    let good = jwt(&key, "k1", claims(RESOURCE, ISSUER, now + 600));
    for (what, token) in [
        (
            "another audience",
            jwt(&key, "k1", claims("https://other.test/mcp", ISSUER, now + 600)),
        ),
        (
            "another issuer",
            jwt(&key, "k1", claims(RESOURCE, "https://evil.test", now + 600)),
        ),
        (
            "expired an hour ago",
            jwt(&key, "k1", claims(RESOURCE, ISSUER, now - 3600)),
        ),
        // No leeway worth a replay: the library's default is 60 s.
        (
            "expired 55 s ago",
            jwt(&key, "k1", claims(RESOURCE, ISSUER, now - 55)),
        ),
        (
            "not valid before a month from now",
            jwt(
                &key,
                "k1",
                with_nbf(claims(RESOURCE, ISSUER, now + 600), now + 30 * 86_400),
            ),
        ),
        (
            "not valid before a minute from now",
            jwt(
                &key,
                "k1",
                with_nbf(claims(RESOURCE, ISSUER, now + 600), now + 60),
            ),
        ),
        (
            "signed with another key",
            jwt(&forged, "k1", claims(RESOURCE, ISSUER, now + 600)),
        ),
        (
            "a key the JWKS lacks",
            jwt(&key, "k2", claims(RESOURCE, ISSUER, now + 600)),
        ),
        ("not a JWT", "abc.def.ghi".to_owned()),
    ] {
        let (status, challenge) = refused(&served.base, Some(&token)).await;
        assert_eq!(status, 401, "{what}");
        assert!(
            challenge.contains("error=\"invalid_token\"") && challenge.contains("resource_metadata="),
            "{what}: {challenge}"
        );
    }
    mcp_works(&served.base, Some(&good)).await;
    // A token whose `nbf` has passed is good.
    let started = jwt(
        &key,
        "k1",
        with_nbf(claims(RESOURCE, ISSUER, now + 600), now - 60),
    );
    mcp_works(&served.base, Some(&started)).await;
}

/// `claims` with a `nbf` (not before) of `nbf`.
fn with_nbf(mut claims: Value, nbf: u64) -> Value {
    claims["nbf"] = json!(nbf);
    claims
}

/// An RS256 test key of `tests/keys/` (generated once with `openssl genrsa
/// -traditional 2048`; ring cannot generate RSA keys): the signing key and
/// its public JWK under `kid`.
fn rs256_key(name: &str, kid: &str) -> (EncodingKey, Value) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("keys/rs256-{name}.pem"));
    let pem = std::fs::read_to_string(&path).unwrap();
    let base64: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    let der = base64::engine::general_purpose::STANDARD.decode(base64).unwrap();
    let pair = RsaKeyPair::from_der(&der).unwrap();
    let public = PublicKeyComponents::<Vec<u8>>::from(pair.public());
    let jwk = json!({
        "kty": "RSA", "alg": "RS256", "use": "sig", "kid": kid,
        "n": URL_SAFE_NO_PAD.encode(&public.n), "e": URL_SAFE_NO_PAD.encode(&public.e),
    });
    (EncodingKey::from_rsa_der(&der), jwk)
}

fn rs256_jwt(key: &EncodingKey, kid: &str, claims: Value) -> String {
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some(kid.into());
    jsonwebtoken::encode(&header, &claims, key).unwrap()
}

/// A JWKS served on loopback, at `/jwks`, whose keys the test may change.
struct JwksServer {
    server: LoopbackServer,
    keys: std::sync::Arc<std::sync::Mutex<Vec<Value>>>,
}

impl JwksServer {
    async fn start(keys: Vec<Value>) -> Self {
        let keys = std::sync::Arc::new(std::sync::Mutex::new(keys));
        let served = keys.clone();
        let server = LoopbackServer::start(Duration::ZERO, move |request| match request.path.as_str() {
            "/jwks" => (200, json!({"keys": *served.lock().unwrap()}).to_string()),
            _ => (404, "{}".into()),
        })
        .await;
        Self { server, keys }
    }

    fn url(&self) -> String {
        format!("http://{}/jwks", self.server.addr)
    }

    /// How many times the JWKS was fetched.
    fn fetches(&self) -> usize {
        self.server.seen.lock().unwrap().len()
    }
}

fn jwks_url_config(url: &str) -> String {
    format!(
        "root = \".\"\n[auth.oauth]\nresource = \"{RESOURCE}\"\nissuer = \"{ISSUER}\"\njwks_url = \"{url}\"\n"
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn oauth_rs256_jwts_are_checked_against_a_jwks_url() {
    let dir = tempfile::tempdir().unwrap();
    let (key, jwk) = rs256_key("issuer", "r1");
    // The forger's key under the issuer's kid; later the issuer's next key.
    let (forged, _) = rs256_key("forger", "r1");
    let (next, next_jwk) = rs256_key("forger", "r2");
    let jwks = JwksServer::start(vec![jwk]).await;
    let served = serve(dir.path(), &jwks_url_config(&jwks.url()), "127.0.0.1:0", &["-vv"]).unwrap();
    assert_eq!(jwks.fetches(), 1, "the JWKS is fetched at start");

    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
    let claims = |aud: &str, exp: u64| json!({"sub": "agent", "aud": aud, "iss": ISSUER, "exp": exp});
    let good = rs256_jwt(&key, "r1", claims(RESOURCE, now + 600));
    mcp_works(&served.base, Some(&good)).await;
    for (what, token) in [
        (
            "signed by another key",
            rs256_jwt(&forged, "r1", claims(RESOURCE, now + 600)),
        ),
        (
            "for another audience",
            rs256_jwt(&key, "r1", claims("https://other.test/mcp", now + 600)),
        ),
        (
            "expired an hour ago",
            rs256_jwt(&key, "r1", claims(RESOURCE, now - 3600)),
        ),
        (
            // The JWKS is reachable: refetched for the unknown kid, which
            // it still lacks.
            "signed by a key the JWKS lacks",
            rs256_jwt(&next, "r2", claims(RESOURCE, now + 600)),
        ),
    ] {
        let (status, challenge) = refused(&served.base, Some(&token)).await;
        assert_eq!(status, 401, "{what}");
        assert!(
            challenge.contains("error=\"invalid_token\""),
            "{what}: {challenge}"
        );
    }
    assert_eq!(jwks.fetches(), 2, "refetched once for the unknown kid");

    // The issuer rotates in r2: not refetched within the minute, so r2
    // stays unknown; the known key still works meanwhile.
    jwks.keys.lock().unwrap().push(next_jwk);
    let rotated = rs256_jwt(&next, "r2", claims(RESOURCE, now + 600));
    assert_eq!(refused(&served.base, Some(&rotated)).await.0, 401);
    assert_eq!(jwks.fetches(), 2, "a refetch at most once a minute");
    mcp_works(&served.base, Some(&good)).await;

    let log = served.log();
    for token in [&good, &rotated] {
        assert!(!log.contains(token.as_str()), "a token was logged:\n{log}");
    }
    assert!(!log.contains("panicked"), "{log}");
}

#[tokio::test(flavor = "multi_thread")]
async fn oauth_with_an_unreachable_jwks_url_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    // A port nobody listens on: bound, then let go.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let url = format!("http://{closed}/jwks");
    let err = serve(dir.path(), &jwks_url_config(&url), "127.0.0.1:0", &[])
        .err()
        .expect("served with a JWKS it could not fetch");
    assert!(err.contains(&url) && !err.contains("panicked"), "{err}");

    // Reachable at start, unreachable later: a token naming a key the
    // host lacks is a 503 (it may be good), one signed by a known key is
    // still accepted, and neither token is logged.
    let (key, jwk) = rs256_key("issuer", "r1");
    let (next, _) = rs256_key("forger", "r2");
    let jwks = JwksServer::start(vec![jwk]).await;
    let served = serve(dir.path(), &jwks_url_config(&jwks.url()), "127.0.0.1:0", &["-vv"]).unwrap();
    jwks.server.stop();
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
    let claims = json!({"sub": "agent", "aud": RESOURCE, "iss": ISSUER, "exp": now + 600});
    let unknown = rs256_jwt(&next, "r2", claims.clone());
    let response = client()
        .post(format!("{}/mcp", served.base))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .bearer_auth(&unknown)
        .body(initialize().to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 503);
    assert_eq!(response.headers()["retry-after"], "60");
    let body = response.text().await.unwrap();
    assert!(body.contains("cannot be fetched"), "{body}");
    // Within the minute the answer stays a 503, without another fetch.
    assert_eq!(refused(&served.base, Some(&unknown)).await.0, 503);
    let good = rs256_jwt(&key, "r1", claims);
    mcp_works(&served.base, Some(&good)).await;
    let log = served.log();
    assert_eq!(
        log.matches(&format!("oauth.jwks_url {}", jwks.url())).count(),
        1,
        "the failed refetch is warned about once:\n{log}"
    );
    for token in [&good, &unknown] {
        assert!(!log.contains(token.as_str()), "a token was logged:\n{log}");
    }
    assert!(!log.contains("panicked"), "{log}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_non_loopback_address_needs_authorization_or_insecure() {
    let dir = tempfile::tempdir().unwrap();
    // The unspecified address is every interface, so not loopback; traffic
    // is only ever sent to 127.0.0.1.
    let err = serve(dir.path(), "root = \".\"\n", "0.0.0.0:0", &[])
        .err()
        .expect("an open non-loopback address was served");
    assert!(
        err.contains("refusing to serve MCP on 0.0.0.0:0")
            && err.contains("--insecure")
            && err.contains("bearer_token_env"),
        "{err}"
    );
    let served = serve(dir.path(), "root = \".\"\n", "0.0.0.0:0", &["--insecure"]).unwrap();
    mcp_works(&served.base, None).await;
    drop(served);
    // With a token it is served, and the token is required.
    // SAFETY: set before the child is spawned; no other test reads it.
    unsafe { std::env::set_var("TOOLHOST_TEST_AUTH_TOKEN", "tok-env-51c7") };
    let served = serve(
        dir.path(),
        "root = \".\"\n[auth]\nbearer_token_env = \"TOOLHOST_TEST_AUTH_TOKEN\"\n",
        "0.0.0.0:0",
        &[],
    )
    .unwrap();
    assert_eq!(refused(&served.base, None).await.0, 401);
    mcp_works(&served.base, Some("tok-env-51c7")).await;
    drop(served);
    // Any 127/8 address is loopback.
    let served = serve(dir.path(), "root = \".\"\n", "127.0.0.2:0", &[]).unwrap();
    drop(served);
    // An unset variable is an error naming it.
    let err = serve(
        dir.path(),
        "root = \".\"\n[auth]\nbearer_token_env = \"TOOLHOST_TEST_UNSET_TOKEN\"\n",
        "127.0.0.1:0",
        &[],
    )
    .err()
    .unwrap();
    assert!(err.contains("TOOLHOST_TEST_UNSET_TOKEN"), "{err}");
}

/// The status of an initialize sent with `headers`.
async fn initialize_status(base: &str, headers: &[(&str, &str)]) -> u16 {
    let mut request = client()
        .post(format!("{base}/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(initialize().to_string());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.send().await.unwrap().status().as_u16()
}

/// A web page cannot drive the user's server. Through DNS rebinding its
/// requests name the attacker's host, refused, for the metrics too; from
/// its own origin they carry that `Origin`, refused with `403` even on
/// loopback. A client that sends no `Origin` (every non-browser one), a
/// page on loopback (a local client's UI) and a configured origin are
/// served; a configured entry that is not an origin stops the start,
/// naming it.
#[tokio::test(flavor = "multi_thread")]
async fn a_web_page_of_another_origin_or_host_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let config = "root = \".\"\n[auth]\nallowed_origins = [\"https://app.example.com\"]\n";
    let served = serve(dir.path(), config, "127.0.0.1:0", &[]).unwrap();
    let port = served.base.rsplit(':').next().unwrap().to_owned();
    let rebound = format!("evil.example:{port}");
    for headers in [
        &[("host", rebound.as_str()), ("origin", "http://evil.example")][..],
        &[("origin", "http://evil.example")],
        &[("origin", "https://app.example.com.evil.example")],
        &[("origin", "not an origin")],
    ] {
        assert_eq!(initialize_status(&served.base, headers).await, 403, "{headers:?}");
    }
    let local_ui = format!("http://localhost:{port}");
    for headers in [
        &[][..],
        &[("origin", "http://localhost:6274")],
        &[("origin", local_ui.as_str())],
        &[("origin", "http://127.0.0.1:3000")],
        &[("origin", "https://app.example.com")],
    ] {
        assert_eq!(initialize_status(&served.base, headers).await, 200, "{headers:?}");
    }
    mcp_works(&served.base, None).await;
    // The metrics, served beside `/mcp`, to the same rebinding page.
    let metrics = |host: Option<String>| {
        let mut request = client().get(format!("{}/metrics", served.base));
        if let Some(host) = host {
            request = request.header("host", host);
        }
        async move { request.send().await.unwrap().status().as_u16() }
    };
    assert_eq!(metrics(Some(rebound.clone())).await, 403);
    assert_eq!(metrics(None).await, 200);
    assert_eq!(metrics(Some(format!("localhost:{port}"))).await, 200);
    drop(served);
    let err = serve(
        dir.path(),
        "root = \".\"\n[auth]\nallowed_origins = [\"*\"]\n",
        "127.0.0.1:0",
        &[],
    )
    .err()
    .expect("a wildcard origin was taken");
    assert!(err.contains("allowed_origins: `*` is not an origin"), "{err}");
}
