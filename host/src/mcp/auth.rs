//! Who may call the MCP endpoint over HTTP: the `[auth]` table of
//! `toolhost.toml`, the rule that a non-loopback address is served only
//! with it (or `--insecure`), and the check of each request.
//!
//! Two ways, either or both:
//! - a bearer token shared with the clients, read from an environment
//!   variable or a file, compared in constant time;
//! - OAuth 2.1, as a resource server: JWTs signed RS256 or ES256 by a key of
//!   the configured JWKS (a file, or a URL fetched at start and again when a
//!   token names a key it does not have, at most once a minute), with the
//!   configured issuer, the
//!   resource's URL as audience, an expiry in the future and a `nbf` (if
//!   any) in the past, both within a few seconds of clock skew. The RFC 9728
//!   protected-resource metadata is served at
//!   `/.well-known/oauth-protected-resource` (and under the resource's path),
//!   and every 401 points to it in `WWW-Authenticate`. A JWKS URL that
//!   cannot be fetched at start stops the server; one that cannot be
//!   fetched later, for a key the host lacks, is a 503: the token may be
//!   good, the host cannot tell.
//!
//! The client's `Authorization` header is removed once checked, so nothing
//! behind this layer (the MCP service, tools, upstream servers) ever sees
//! it: upstream servers get only the headers configured for them. In its
//! place the request carries the [`Caller`] the token established: a JWT's
//! `sub` (required, at most 255 bytes, as OpenID Connect caps it) and the
//! claims `identity_claims` names; the shared token's holder, who is no one
//! in particular. The MCP front reads it from there and nowhere else.
//!
//! Owns the decision and the 401s; not the routes behind it. The token is
//! never logged, and not kept beyond the digest it is compared with.

use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use http::{HeaderValue, StatusCode, header};
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, JwkSet, KeyAlgorithm};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use rmcp::transport::streamable_http_server::StreamableHttpServerConfig;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use tokio::time::Instant;

use super::connections::Bounds;
use crate::pipeline::{Caller, check_claim_names};

/// The path of the RFC 9728 metadata.
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";
/// How often a JWKS URL may be fetched again for a key it did not have.
const JWKS_REFETCH: Duration = Duration::from_secs(60);
/// How long fetching a JWKS may take.
const JWKS_TIMEOUT: Duration = Duration::from_secs(10);
/// The clock skew forgiven on a JWT's `exp` and `nbf`, in seconds: a few
/// seconds between the issuer's clock and this one, not the library's
/// default minute, which would take a token a minute after it expired.
const JWT_LEEWAY_S: u64 = 5;

/// The names of loopback a server on it answers to, whatever is allowed
/// besides.
const LOOPBACK_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// The `[auth]` table.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthConfig {
    /// The environment variable holding the bearer token.
    pub bearer_token_env: Option<String>,
    /// A file holding the bearer token (surrounding whitespace ignored).
    pub bearer_token_file: Option<PathBuf>,
    /// OAuth 2.1 resource-server validation.
    pub oauth: Option<OAuthConfig>,
    /// `Host` names accepted besides loopback ones when serving a
    /// non-loopback address (the resource URL's host is accepted too).
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
    /// Browser origins accepted besides those of the accepted `Host` names
    /// (`https://app.example.com`, `http://localhost:*` for any port).
    #[serde(default)]
    pub allowed_origins: Vec<String>,
    /// The claims of a verified JWT kept with its caller besides `sub`
    /// (`email`, `groups`): at most 8, each value within 1 KiB of JSON.
    #[serde(default)]
    pub identity_claims: Vec<String>,
    /// Connections one IP address may hold open at once (default 256).
    /// Behind a reverse proxy every client is the proxy's address: raise
    /// it to what the proxy's pool needs.
    pub connections_per_address: Option<NonZeroUsize>,
}

/// The `[auth.oauth]` table.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OAuthConfig {
    /// This server's URL as clients reach it (`https://mcp.example.com/mcp`):
    /// the audience tokens must be issued for.
    pub resource: String,
    /// The `iss` tokens must carry.
    pub issuer: String,
    /// The authorization servers named in the metadata (default: `issuer`).
    #[serde(default)]
    pub authorization_servers: Vec<String>,
    /// The issuer's public keys, as a JWKS file ...
    pub jwks_file: Option<PathBuf>,
    /// ... or a JWKS URL.
    pub jwks_url: Option<String>,
    /// Scopes listed in the metadata.
    #[serde(default)]
    pub scopes_supported: Vec<String>,
}

impl AuthConfig {
    /// Resolve the file paths against the configuration file's directory.
    pub fn resolve_paths(&mut self, base: &Path) {
        self.bearer_token_file = self.bearer_token_file.take().map(|p| base.join(p));
        if let Some(oauth) = &mut self.oauth {
            oauth.jwks_file = oauth.jwks_file.take().map(|p| base.join(p));
        }
    }

    /// Whether any way of authorizing is configured.
    pub fn is_set(&self) -> bool {
        self.bearer_token_env.is_some() || self.bearer_token_file.is_some() || self.oauth.is_some()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error(
        "refusing to serve MCP on {addr} without authorization: {addr} is not a loopback address, \
         so anyone who can reach it could call every tool. Set `[auth] bearer_token_env` (or \
         `bearer_token_file`, or `[auth.oauth]`) in toolhost.toml, listen on a loopback address \
         (127.0.0.1), or pass --insecure to serve it without authorization"
    )]
    Unprotected { addr: SocketAddr },
    #[error("[auth] {0}")]
    Config(String),
}

/// Refuse a non-loopback address with no authorization unless `insecure`.
fn check_bind(addr: SocketAddr, authorized: bool, insecure: bool) -> Result<(), AuthError> {
    if authorized || insecure || is_loopback(addr) {
        Ok(())
    } else {
        Err(AuthError::Unprotected { addr })
    }
}

/// 127.0.0.0/8, ::1 and IPv4-mapped loopback.
fn is_loopback(addr: SocketAddr) -> bool {
    addr.ip().to_canonical().is_loopback()
}

/// The checks of one server, built from [`AuthConfig`].
struct Authorizer {
    /// SHA-256 of the bearer token: compared digest to digest, so neither
    /// the token's bytes nor its length shape the comparison's time.
    bearer: Option<[u8; 32]>,
    oauth: Option<OAuth>,
    /// The claims kept with a JWT's caller, besides `sub`.
    identity_claims: Vec<String>,
}

struct OAuth {
    resource: String,
    issuer: String,
    /// The metadata document, as served.
    metadata: String,
    /// Where the metadata is, for `WWW-Authenticate`.
    metadata_url: String,
    /// Read by every request; replaced only by a refetch.
    keys: std::sync::RwLock<Arc<[Key]>>,
    jwks_url: Option<String>,
    /// Held only by requests naming a key the host lacks, so a slow or
    /// dead JWKS server never delays tokens signed by a known key.
    refetch: tokio::sync::Mutex<Refetch>,
}

#[derive(Default)]
struct Refetch {
    /// The last refetch (the fetch at start does not count, so a key
    /// rotated in just after the start is found at once).
    last: Option<Instant>,
    /// Whether the last refetch failed.
    failed: bool,
}

/// Why a JWT is not accepted.
enum Refusal {
    /// The token is bad (or for another server): 401.
    Invalid(String),
    /// The token names a key the host lacks and the JWKS URL cannot be
    /// fetched: 503.
    KeysUnavailable(String),
}

struct Key {
    kid: Option<String>,
    alg: Algorithm,
    key: DecodingKey,
}

impl Authorizer {
    /// Read the token or fetch the keys; `None` when `[auth]` sets neither.
    async fn new(config: &AuthConfig) -> Result<Option<Self>, AuthError> {
        check_claim_names(&config.identity_claims).map_err(AuthError::Config)?;
        if !config.is_set() {
            return Ok(None);
        }
        let token = match (&config.bearer_token_env, &config.bearer_token_file) {
            (Some(_), Some(_)) => {
                return Err(AuthError::Config(
                    "set `bearer_token_env` or `bearer_token_file`, not both".into(),
                ));
            }
            (Some(var), None) => Some(std::env::var(var).map_err(|_| {
                AuthError::Config(format!("`bearer_token_env` names {var}, which is not set"))
            })?),
            (None, Some(path)) => Some(std::fs::read_to_string(path).map_err(|e| {
                AuthError::Config(format!("cannot read `bearer_token_file` {}: {e}", path.display()))
            })?),
            (None, None) => None,
        };
        let bearer = match token.as_deref().map(str::trim) {
            Some("") => {
                return Err(AuthError::Config(
                    "the bearer token is empty (from `bearer_token_env` or `bearer_token_file`)".into(),
                ));
            }
            Some(token) => {
                crate::secrets::held::hold([("bearer-token", token)]);
                Some(Sha256::digest(token.as_bytes()).into())
            }
            None => None,
        };
        let oauth = match &config.oauth {
            Some(oauth) => Some(OAuth::new(oauth).await?),
            None => None,
        };
        Ok(Some(Self {
            bearer,
            oauth,
            identity_claims: config.identity_claims.clone(),
        }))
    }

    /// The metadata document, if OAuth is configured.
    fn metadata(&self) -> Option<&str> {
        self.oauth.as_ref().map(|o| o.metadata.as_str())
    }

    /// The caller when `token` is the bearer token or a valid JWT, else
    /// the answer to send.
    async fn check(&self, token: &str) -> Result<Caller, Response> {
        if let Some(expected) = &self.bearer {
            let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
            if bool::from(digest.ct_eq(expected)) {
                return Ok(Caller::shared_token());
            }
        }
        let Some(oauth) = &self.oauth else {
            return Err(self.unauthorized(Some("invalid_token")));
        };
        match oauth.validate(token, &self.identity_claims).await {
            Ok(caller) => Ok(caller),
            Err(Refusal::Invalid(why)) => {
                tracing::debug!("a bearer JWT was refused: {why}");
                Err(self.unauthorized(Some("invalid_token")))
            }
            Err(Refusal::KeysUnavailable(why)) => {
                // The failed fetch itself is warned about, once a minute at
                // most; the tokens that find it failed are not.
                tracing::debug!("a bearer JWT could not be checked: {why}");
                let mut response = Response::new(Body::from(
                    "the keys that sign this token cannot be fetched now; try again later\n",
                ));
                *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
                response
                    .headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(JWKS_REFETCH.as_secs()));
                Err(response)
            }
        }
    }

    /// The 401, pointing to the metadata if there is any.
    fn unauthorized(&self, error: Option<&str>) -> Response {
        let mut challenge = String::from("Bearer");
        let mut params = Vec::new();
        match &self.oauth {
            Some(oauth) => params.push(format!("resource_metadata=\"{}\"", oauth.metadata_url)),
            None => params.push("realm=\"toolhost\"".to_owned()),
        }
        if let Some(error) = error {
            params.push(format!("error=\"{error}\""));
        }
        challenge.push(' ');
        challenge.push_str(&params.join(", "));
        let mut response = Response::new(Body::from("unauthorized: send `Authorization: Bearer <token>`\n"));
        *response.status_mut() = StatusCode::UNAUTHORIZED;
        if let Ok(value) = HeaderValue::from_str(&challenge) {
            response.headers_mut().insert(header::WWW_AUTHENTICATE, value);
        }
        response
    }
}

/// What `toolhost serve --http` puts in front of the MCP service: the
/// accepted `Host` names and, if configured, the `Authorizer`.
pub struct HttpAccess {
    auth: Option<Arc<Authorizer>>,
    allowed_hosts: Vec<String>,
    allowed_origins: Vec<String>,
    /// Served on a loopback address without `[auth]`: only a page that
    /// rebinds its name to loopback could reach it from elsewhere.
    open_loopback: bool,
    connections: Bounds,
}

impl HttpAccess {
    /// Check `[auth]` and the address together: a non-loopback `addr` is
    /// refused without authorization unless `insecure`.
    pub async fn new(config: &AuthConfig, addr: SocketAddr, insecure: bool) -> Result<Self, AuthError> {
        let auth = Authorizer::new(config).await?;
        check_bind(addr, auth.is_some(), insecure)?;
        let mut allowed_hosts = config.allowed_hosts.clone();
        // A specific address is a name clients may use (127.0.0.2, say).
        if !addr.ip().is_unspecified() {
            allowed_hosts.push(addr.ip().to_string());
        }
        if let Some(host) = config.oauth.as_ref().and_then(|o| url_host(&o.resource)) {
            allowed_hosts.push(host);
        }
        let allowed_origins = allowed_origins(config, &allowed_hosts)?;
        let mut connections = Bounds::for_this_process();
        if let Some(per_address) = config.connections_per_address {
            connections.per_address = per_address.get().min(connections.total);
        }
        Ok(Self {
            open_loopback: auth.is_none() && is_loopback(addr),
            auth: auth.map(Arc::new),
            allowed_hosts,
            allowed_origins,
            connections,
        })
    }

    /// What bounds the connections taken (`connections`).
    pub(super) fn connections(&self) -> Bounds {
        self.connections
    }

    /// The service's settings: rmcp's loopback `Host` names (its guard
    /// against DNS rebinding) plus the configured ones, and the browser
    /// origins allowed to call (a request with another `Origin` is
    /// answered `403`; one with none, as non-browser clients send, passes).
    pub fn service_config(&self) -> StreamableHttpServerConfig {
        // A stateless request whose handler sends nothing before its result
        // is answered as plain JSON, not as a one-event SSE stream; one that
        // sends progress or log lines first still gets the stream.
        let mut config = StreamableHttpServerConfig::default().with_json_response(true);
        config.allowed_hosts.extend(self.allowed_hosts.iter().cloned());
        config
            .with_allowed_origins(self.allowed_origins.iter().cloned())
            .enforce_origin_validation()
    }

    /// `route` refused `403` when its `Host` is not one the server answers
    /// to, if it is served open on loopback: there a page that rebinds its
    /// name to loopback could read it, as rmcp's own check stops it doing
    /// on `/mcp`. Elsewhere a token guards it, or the operator chose to
    /// serve it open (`--insecure`), and a scraper names the server by
    /// whatever address reaches it.
    pub fn guard_host(&self, route: axum::routing::MethodRouter) -> axum::routing::MethodRouter {
        if !self.open_loopback {
            return route;
        }
        let hosts = Arc::new(self.allowed_hosts.clone());
        route.layer(axum::middleware::from_fn_with_state(hosts, named_host))
    }

    /// `router` behind the check, with the metadata routes if OAuth is set.
    pub fn protect(&self, mut router: axum::Router) -> axum::Router {
        let Some(auth) = &self.auth else {
            return router;
        };
        if let Some(metadata) = auth.metadata() {
            let metadata = metadata.to_owned();
            let serve = move || {
                let metadata = metadata.clone();
                async move {
                    let mut response = Response::new(Body::from(metadata));
                    response
                        .headers_mut()
                        .insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
                    response
                }
            };
            router = router
                .route(METADATA_PATH, axum::routing::get(serve.clone()))
                .route(
                    &format!("{METADATA_PATH}/{{*resource}}"),
                    axum::routing::get(serve),
                );
        }
        router.layer(axum::middleware::from_fn_with_state(auth.clone(), require))
    }
}

/// The check: the metadata is public; any other request needs a valid
/// token, and the `Authorization` header is removed before it goes on,
/// the [`Caller`] it established in its place.
async fn require(State(auth): State<Arc<Authorizer>>, mut request: Request, next: Next) -> Response {
    let path = request.uri().path();
    if path == METADATA_PATH || path.starts_with(&format!("{METADATA_PATH}/")) {
        return next.run(request).await;
    }
    let Some(value) = request.headers_mut().remove(header::AUTHORIZATION) else {
        return auth.unauthorized(None);
    };
    let token = value
        .to_str()
        .ok()
        .and_then(|v| v.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| token.trim());
    let Some(token) = token else {
        return auth.unauthorized(Some("invalid_token"));
    };
    match auth.check(token).await {
        Ok(caller) => {
            request.extensions_mut().insert(caller);
            next.run(request).await
        }
        Err(response) => response,
    }
}

impl OAuth {
    async fn new(config: &OAuthConfig) -> Result<Self, AuthError> {
        let resource_url = reqwest::Url::parse(&config.resource)
            .map_err(|e| AuthError::Config(format!("oauth.resource `{}`: {e}", config.resource)))?;
        let (keys, jwks_url) = match (&config.jwks_file, &config.jwks_url) {
            (Some(path), None) => {
                let text = std::fs::read_to_string(path).map_err(|e| {
                    AuthError::Config(format!("cannot read oauth.jwks_file {}: {e}", path.display()))
                })?;
                let keys = parse_jwks(&text)
                    .map_err(|e| AuthError::Config(format!("oauth.jwks_file {}: {e}", path.display())))?;
                (keys, None)
            }
            (None, Some(url)) => (
                fetch_jwks(url).await.map_err(AuthError::Config)?,
                Some(url.clone()),
            ),
            _ => {
                return Err(AuthError::Config(
                    "oauth: set `jwks_file` or `jwks_url` (one of them)".into(),
                ));
            }
        };
        let servers = if config.authorization_servers.is_empty() {
            vec![config.issuer.clone()]
        } else {
            config.authorization_servers.clone()
        };
        let mut metadata = serde_json::json!({
            "resource": config.resource,
            "authorization_servers": servers,
            "bearer_methods_supported": ["header"],
            "resource_signing_alg_values_supported": ["RS256", "ES256"],
        });
        if !config.scopes_supported.is_empty() {
            metadata["scopes_supported"] = serde_json::json!(config.scopes_supported);
        }
        // RFC 9728 section 3.1: the well-known path goes between the host
        // and the resource's own path.
        let path = resource_url.path().trim_end_matches('/');
        let metadata_url = format!(
            "{}{METADATA_PATH}{path}",
            resource_url.origin().ascii_serialization()
        );
        Ok(Self {
            resource: config.resource.clone(),
            issuer: config.issuer.clone(),
            metadata: metadata.to_string(),
            metadata_url,
            keys: std::sync::RwLock::new(keys.into()),
            jwks_url,
            refetch: Default::default(),
        })
    }

    /// The keys as they are now.
    fn keys(&self) -> Arc<[Key]> {
        // A poisoned lock still holds a whole key set: it is only ever
        // replaced, never edited in place.
        self.keys.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The caller `token` names, with the claims of `wanted` it carries,
    /// if it is valid.
    async fn validate(&self, token: &str, wanted: &[String]) -> Result<Caller, Refusal> {
        let head =
            jsonwebtoken::decode_header(token).map_err(|e| Refusal::Invalid(format!("not a JWT: {e}")))?;
        if !matches!(head.alg, Algorithm::RS256 | Algorithm::ES256) {
            return Err(Refusal::Invalid(format!(
                "algorithm {:?} is not RS256 or ES256",
                head.alg
            )));
        }
        let known = |keys: &[Key]| keys.iter().any(|k| head.kid.is_none() || k.kid == head.kid);
        let mut keys = self.keys();
        if !known(&keys)
            && let Some(url) = &self.jwks_url
        {
            let mut refetch = self.refetch.lock().await;
            // Another request may have refetched while this one waited.
            keys = self.keys();
            if !known(&keys) && refetch.last.is_none_or(|last| last.elapsed() >= JWKS_REFETCH) {
                refetch.last = Some(Instant::now());
                match fetch_jwks(url).await {
                    Ok(fresh) => {
                        keys = fresh.into();
                        *self.keys.write().unwrap_or_else(|e| e.into_inner()) = keys.clone();
                        refetch.failed = false;
                    }
                    Err(e) => {
                        tracing::warn!("[auth] {e}");
                        refetch.failed = true;
                    }
                }
            }
            if !known(&keys) && refetch.failed {
                return Err(Refusal::KeysUnavailable(format!(
                    "no key {} in the JWKS, and {url} cannot be fetched",
                    kid_shown(head.kid.as_deref())
                )));
            }
        }
        let mut validation = Validation::new(head.alg);
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&[&self.resource]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        // `nbf` is checked when a token has one: it is not valid before.
        validation.validate_nbf = true;
        validation.leeway = JWT_LEEWAY_S;
        let mut last = format!(
            "no key of the JWKS matches kid {} and {:?}",
            kid_shown(head.kid.as_deref()),
            head.alg
        );
        for key in keys
            .iter()
            .filter(|k| k.alg == head.alg && (head.kid.is_none() || k.kid == head.kid))
        {
            // Signature, issuer, audience, expiry and not-before are all
            // that is checked; of the other claims, only `sub` and those
            // named are read, for the caller.
            type Claims = serde_json::Map<String, serde_json::Value>;
            match jsonwebtoken::decode::<Claims>(token, &key.key, &validation) {
                Ok(data) => {
                    return Caller::verified(data.claims, wanted)
                        .map(|caller| caller.with_token(token))
                        .map_err(Refusal::Invalid);
                }
                Err(e) => last = e.to_string(),
            }
        }
        Err(Refusal::Invalid(last))
    }
}

/// A token's `kid` as logged: the client's text, escaped and shortened.
fn kid_shown(kid: Option<&str>) -> String {
    kid.map_or_else(|| "(none)".to_owned(), crate::bounds::shown)
}

/// The RS256 and ES256 keys of a JWKS; other keys are skipped.
fn parse_jwks(text: &str) -> Result<Vec<Key>, String> {
    let set: JwkSet = serde_json::from_str(text).map_err(|e| format!("not a JWKS: {e}"))?;
    let mut keys = Vec::new();
    for jwk in &set.keys {
        let alg = match (&jwk.algorithm, jwk.common.key_algorithm) {
            (AlgorithmParameters::RSA(_), None | Some(KeyAlgorithm::RS256)) => Algorithm::RS256,
            (AlgorithmParameters::EllipticCurve(ec), None | Some(KeyAlgorithm::ES256))
                if ec.curve == EllipticCurve::P256 =>
            {
                Algorithm::ES256
            }
            _ => continue,
        };
        let key = DecodingKey::from_jwk(jwk).map_err(|e| format!("key {:?}: {e}", jwk.common.key_id))?;
        keys.push(Key {
            kid: jwk.common.key_id.clone(),
            alg,
            key,
        });
    }
    if keys.is_empty() {
        return Err("no RS256 or ES256 (P-256) key in it".into());
    }
    Ok(keys)
}

async fn fetch_jwks(url: &str) -> Result<Vec<Key>, String> {
    let fail = |e: &dyn std::fmt::Display| format!("oauth.jwks_url {url}: {e}");
    let client = crate::http_client::builder()
        .timeout(JWKS_TIMEOUT)
        .build()
        .map_err(|e| fail(&e))?;
    let response = client
        .get(url)
        .send()
        .await
        .and_then(reqwest::Response::error_for_status)
        .map_err(|e| fail(&crate::error_chain(&e)))?;
    let text = response.text().await.map_err(|e| fail(&e))?;
    parse_jwks(&text).map_err(|e| fail(&e))
}

/// A request whose `Host` names loopback or one of `hosts`, else `403`.
async fn named_host(State(hosts): State<Arc<Vec<String>>>, request: Request, next: Next) -> Response {
    let named = request
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .is_some_and(|host| host_is_one_of(host, &hosts));
    if named {
        return next.run(request).await;
    }
    let mut refused = Response::new(Body::from("Forbidden: Host header is not allowed\n"));
    *refused.status_mut() = StatusCode::FORBIDDEN;
    refused
}

/// Whether the authority `host` (`name`, `name:port`, `[v6]:port`) is a
/// loopback name or one of `allowed` (an entry with a port matches only it).
fn host_is_one_of(host: &str, allowed: &[String]) -> bool {
    let split = |authority: &str| -> (String, Option<String>) {
        let (name, port) = match authority.strip_prefix('[') {
            Some(rest) => match rest.split_once(']') {
                Some((name, port)) => (name, port.strip_prefix(':')),
                None => (authority, None),
            },
            None => match authority.split_once(':') {
                Some((name, port)) if !port.contains(':') => (name, Some(port)),
                _ => (authority, None),
            },
        };
        (name.to_ascii_lowercase(), port.map(str::to_owned))
    };
    let (name, port) = split(host.trim());
    LOOPBACK_NAMES.contains(&name.as_str())
        || allowed.iter().any(|entry| {
            let (allowed_name, allowed_port) = split(entry);
            allowed_name == name && allowed_port.is_none_or(|p| Some(p) == port)
        })
}

/// The browser origins that may call: those of every `Host` name the
/// server answers to, on either scheme (a page the server's own host
/// serves, or a local client's page on loopback), and the configured
/// ones, each checked to be an origin. A page of any other origin is
/// refused even on loopback: a browser sends its `Origin` with every
/// cross-origin request, so a web page cannot drive the user's server.
fn allowed_origins(config: &AuthConfig, allowed_hosts: &[String]) -> Result<Vec<String>, AuthError> {
    let hosts = LOOPBACK_NAMES
        .into_iter()
        .chain(allowed_hosts.iter().map(String::as_str));
    let mut origins: Vec<String> = hosts
        .flat_map(|host| {
            // `host` or `host:port`; a bare IPv6 address is bracketed.
            let authority = match host.parse::<std::net::Ipv6Addr>() {
                Ok(_) => format!("[{host}]:*"),
                Err(_) if host.contains(':') => host.to_owned(),
                Err(_) => format!("{host}:*"),
            };
            ["http", "https"].map(|scheme| format!("{scheme}://{authority}"))
        })
        .collect();
    for origin in &config.allowed_origins {
        if !is_origin(origin) {
            return Err(AuthError::Config(format!(
                "allowed_origins: `{origin}` is not an origin: give a scheme and a host, and a port \
                 or `:*` for any (`https://app.example.com`, `http://localhost:*`), or `null`"
            )));
        }
        origins.push(origin.clone());
    }
    Ok(origins)
}

/// `scheme://host[:port]`, `scheme://host:*` or `null`: what a browser
/// sends as `Origin`, with nothing after the authority.
fn is_origin(entry: &str) -> bool {
    if entry == "null" {
        return true;
    }
    let base = entry.strip_suffix(":*").unwrap_or(entry);
    let Ok(url) = reqwest::Url::parse(base) else {
        return false;
    };
    url.origin().is_tuple()
        && url.username().is_empty()
        && url.password().is_none()
        && url.path() == "/"
        && url.query().is_none()
        && url.fragment().is_none()
}

/// The host of a URL, with its port if it has one.
fn url_host(url: &str) -> Option<String> {
    let url = reqwest::Url::parse(url).ok()?;
    let host = url.host_str()?;
    Some(match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_are_those_of_the_served_hosts_and_the_configured_ones() {
        let config = AuthConfig {
            allowed_origins: vec!["https://app.example.com".into(), "null".into()],
            ..AuthConfig::default()
        };
        let hosts = [
            "mcp.example.com".to_owned(),
            "mcp.example.com:8443".to_owned(),
            "fd00::1".to_owned(),
        ];
        let origins = allowed_origins(&config, &hosts).unwrap();
        for origin in [
            "http://localhost:*",
            "https://127.0.0.1:*",
            "http://[::1]:*",
            "https://mcp.example.com:*",
            "https://mcp.example.com:8443",
            "http://[fd00::1]:*",
            "https://app.example.com",
            "null",
        ] {
            assert!(origins.iter().any(|o| o == origin), "{origin}: {origins:?}");
        }
        for bad in [
            "*",
            "app.example.com",
            "https://app.example.com/ui",
            "https://u@app.example.com",
            "file:///x",
        ] {
            let config = AuthConfig {
                allowed_origins: vec![bad.into()],
                ..AuthConfig::default()
            };
            let error = allowed_origins(&config, &[]).unwrap_err().to_string();
            assert!(error.contains(&format!("`{bad}` is not an origin")), "{error}");
        }
    }

    #[test]
    fn a_host_is_a_loopback_name_or_an_allowed_one() {
        let allowed = [
            "mcp.example.com".to_owned(),
            "fd00::1".to_owned(),
            "other.example:8443".to_owned(),
        ];
        for host in [
            "127.0.0.1:8765",
            "LOCALHOST:1",
            "[::1]:8765",
            "localhost",
            "mcp.example.com:9",
            "[fd00::1]:5",
            "other.example:8443",
        ] {
            assert!(host_is_one_of(host, &allowed), "{host}");
        }
        for host in [
            "evil.example:8765",
            "127.0.0.1.evil.example",
            "other.example:8444",
            "[::2]:1",
            "",
        ] {
            assert!(!host_is_one_of(host, &allowed), "{host}");
        }
    }

    #[test]
    fn loopback_addresses_need_no_authorization() {
        for addr in ["127.0.0.1:1", "127.0.0.2:1", "[::1]:1", "[::ffff:127.0.0.1]:1"] {
            check_bind(addr.parse().unwrap(), false, false).unwrap();
        }
        let open: SocketAddr = "0.0.0.0:8080".parse().unwrap();
        let err = check_bind(open, false, false).unwrap_err().to_string();
        assert!(
            err.contains("0.0.0.0:8080") && err.contains("--insecure") && err.contains("[auth]"),
            "{err}"
        );
        check_bind(open, true, false).unwrap();
        check_bind(open, false, true).unwrap();
    }

    #[test]
    fn a_jwks_without_a_usable_key_is_an_error() {
        let err = parse_jwks(r#"{"keys": [{"kty": "oct", "k": "c2VjcmV0"}]}"#)
            .err()
            .unwrap();
        assert!(err.contains("no RS256 or ES256"), "{err}");
        assert!(parse_jwks("[]").err().unwrap().contains("not a JWKS"));
    }

    #[tokio::test]
    async fn connections_per_address_is_configured_and_zero_is_refused() {
        let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let default = HttpAccess::new(&AuthConfig::default(), addr, false)
            .await
            .unwrap();
        let bounds = default.connections();
        assert_eq!(bounds.per_address, 256.min(bounds.total));
        let config: AuthConfig = toml::from_str("connections_per_address = 3").unwrap();
        let access = HttpAccess::new(&config, addr, false).await.unwrap();
        assert_eq!(access.connections().per_address, 3);
        let zero = toml::from_str::<AuthConfig>("connections_per_address = 0").unwrap_err();
        assert!(zero.to_string().contains("connections_per_address"), "{zero}");
    }
}
