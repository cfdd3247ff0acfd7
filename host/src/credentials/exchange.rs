//! OAuth 2.0 Token Exchange (RFC 8693): a caller's verified bearer token
//! exchanged at the configured token endpoint for one meant for a plugin's
//! origin, cached per caller token and audience until it expires.
//!
//! The request is a form POST of `grant_type=urn:ietf:params:oauth:grant-type:token-exchange`,
//! the caller's token as `subject_token` (an access token), and the
//! audience as `audience` and, when it is a URL, as `resource` too (an
//! identity provider of the Keycloak kind reads the first, one of the
//! Entra kind the second); the host authenticates as its client with HTTP
//! Basic when a client secret is configured. Bounded: 10 s a request, 64 KiB
//! of answer, 1,024 tokens cached (the soonest to expire dropped first), each
//! kept until `expires_in` less a minute's margin (5 minutes when the answer
//! gives none). A failed exchange is an error naming the endpoint and the
//! OAuth `error` code (checked to be one: printable ASCII, 64 bytes at
//! most); the answer's description and any token are never shown.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use reqwest::Url;
use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::CredentialError;
use crate::http_client::{BodyError, whole_body};

/// What the host asks for and names as the caller's token.
const GRANT_TYPE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
const ACCESS_TOKEN: &str = "urn:ietf:params:oauth:token-type:access_token";
/// The longest an exchange may take.
const TIMEOUT: Duration = Duration::from_secs(10);
/// The most of an answer read.
const MAX_ANSWER_BYTES: usize = 64 << 10;
/// The most exchanged tokens kept.
const MAX_CACHED: usize = 1024;
/// Dropped this long before the token endpoint says it expires, so no
/// request leaves with a token about to lapse.
const MARGIN: Duration = Duration::from_secs(60);
/// How long a token whose answer says nothing of its lifetime is kept.
const UNSTATED_LIFETIME: Duration = Duration::from_secs(300);
/// The longest OAuth `error` code shown.
const MAX_ERROR_CODE: usize = 64;

/// A caller's verified bearer token, kept host-side to be exchanged: never
/// shown, logged or serialised.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct SubjectToken(Arc<str>);

impl SubjectToken {
    pub(crate) fn new(token: &str) -> Self {
        Self(token.into())
    }
}

impl std::fmt::Debug for SubjectToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SubjectToken(..)")
    }
}

/// `[credentials.exchange]`.
#[derive(Debug, Clone)]
pub struct ExchangeSettings {
    /// The token endpoint: https, or http to a loopback address.
    pub token_endpoint: String,
    /// The host's client id at the identity provider.
    pub client_id: Option<String>,
    /// The environment variable holding the client's secret, sent with
    /// `client_id` as HTTP Basic.
    pub client_secret_env: Option<String>,
}

/// The token endpoint and the tokens it gave.
pub(super) struct Exchange {
    endpoint: Url,
    /// `(client_id, client_secret)`.
    client: Option<(String, Option<String>)>,
    http: reqwest::Client,
    cache: Mutex<HashMap<CacheKey, Cached>>,
}

/// (SHA-256 of the caller's token, audience): what an exchanged token is
/// kept under.
type CacheKey = ([u8; 32], String);

/// An exchanged token, until when it is used, and its lease in the set of
/// secrets kept out of the log: an upstream refusing it may quote it, and
/// the library below logs the refusal whole.
struct Cached {
    token: String,
    until: Instant,
    _held: Option<crate::secrets::held::Lease>,
}

/// A successful answer (RFC 8693 §2.2.1).
#[derive(Deserialize)]
struct Issued {
    access_token: String,
    expires_in: Option<u64>,
}

/// An error answer (RFC 6749 §5.2).
#[derive(Deserialize)]
struct Refused {
    error: String,
}

impl Exchange {
    pub(super) fn new(settings: &ExchangeSettings) -> Result<Self, CredentialError> {
        let bad = |why: &str| {
            CredentialError(format!(
                "[credentials.exchange] token_endpoint `{}`: {why}",
                crate::bounds::shown(&settings.token_endpoint)
            ))
        };
        let endpoint = Url::parse(&settings.token_endpoint).map_err(|_| bad("not a URL"))?;
        match endpoint.scheme() {
            "https" => {}
            "http" if crate::http_client::is_loopback(&endpoint) => {}
            _ => {
                return Err(bad(
                    "callers' tokens are sent over https, or http to a loopback address only",
                ));
            }
        }
        if !endpoint.username().is_empty() || endpoint.password().is_some() {
            return Err(bad(
                "credentials go in client_id and client_secret_env, not the URL",
            ));
        }
        let secret = match &settings.client_secret_env {
            Some(var) => Some(std::env::var(var).ok().filter(|v| !v.is_empty()).ok_or_else(|| {
                CredentialError(format!(
                    "[credentials.exchange] client_secret_env: the environment variable {var} is not set"
                ))
            })?),
            None => None,
        };
        crate::secrets::held::hold(secret.as_deref().map(|s| ("client_secret", s)));
        let client = match (&settings.client_id, secret) {
            (Some(id), secret) => Some((id.clone(), secret)),
            (None, Some(_)) => {
                return Err(CredentialError(
                    "[credentials.exchange] client_secret_env needs client_id".into(),
                ));
            }
            (None, None) => None,
        };
        let mut builder = crate::http_client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(TIMEOUT);
        if endpoint.scheme() == "http" {
            // A caller's token in clear never goes through a proxy.
            builder = builder.no_proxy();
        }
        let http = builder
            .build()
            .map_err(|e| CredentialError(format!("cannot build the token exchange's HTTP client: {e}")))?;
        Ok(Self {
            endpoint,
            client,
            http,
            cache: Mutex::new(HashMap::new()),
        })
    }

    /// The token endpoint, as errors name it.
    pub(super) fn endpoint(&self) -> &str {
        self.endpoint.as_str()
    }

    /// A token for `audience` in exchange for `subject`: cached, else asked
    /// of the token endpoint. The error names the endpoint and the OAuth
    /// error code, never a token.
    pub(super) async fn token(&self, subject: &SubjectToken, audience: &str) -> Result<String, String> {
        let key: CacheKey = (Sha256::digest(subject.0.as_bytes()).into(), audience.to_owned());
        {
            let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(cached) = cache.get(&key)
                && Instant::now() < cached.until
            {
                return Ok(cached.token.clone());
            }
        }
        let (token, lifetime) = self.ask(subject, audience).await?;
        let until = Instant::now() + lifetime;
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        cache.retain(|_, cached| cached.until > now);
        if cache.len() >= MAX_CACHED
            && let Some(soonest) = cache.iter().min_by_key(|(_, c)| c.until).map(|(k, _)| k.clone())
        {
            cache.remove(&soonest);
        }
        let cached = Cached {
            _held: crate::secrets::held::lease("exchanged-token", &token),
            token: token.clone(),
            until,
        };
        cache.insert(key, cached);
        Ok(token)
    }

    async fn ask(&self, subject: &SubjectToken, audience: &str) -> Result<(String, Duration), String> {
        let at = self.endpoint.as_str();
        let form = {
            let mut form = form_urlencoded::Serializer::new(String::new());
            form.append_pair("grant_type", GRANT_TYPE)
                .append_pair("subject_token", &subject.0)
                .append_pair("subject_token_type", ACCESS_TOKEN)
                .append_pair("requested_token_type", ACCESS_TOKEN)
                .append_pair("audience", audience);
            if Url::parse(audience).is_ok() {
                form.append_pair("resource", audience);
            }
            form.finish()
        };
        let mut request = self
            .http
            .post(self.endpoint.clone())
            .header(reqwest::header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(reqwest::header::ACCEPT, "application/json");
        if let Some((id, secret)) = &self.client {
            request = request.basic_auth(id, secret.as_deref());
        }
        let mut response = request.body(form).send().await.map_err(|e| {
            let why = if e.is_timeout() {
                format!("no answer within {} s", TIMEOUT.as_secs())
            } else if e.is_connect() {
                "cannot connect".to_owned()
            } else {
                "the request failed".to_owned()
            };
            format!("token exchange at {at} failed: {why}")
        })?;
        let status = response.status();
        let body = whole_body(&mut response, MAX_ANSWER_BYTES)
            .await
            .map_err(|e| match e {
                BodyError::TooLarge(_) => {
                    format!("token exchange at {at} failed: its answer is over {MAX_ANSWER_BYTES} bytes")
                }
                BodyError::Broken(_) => format!("token exchange at {at} failed: its answer broke off"),
            })?;
        if !status.is_success() {
            let code = serde_json::from_slice::<Refused>(&body)
                .ok()
                .map(|r| r.error)
                .filter(|c| {
                    !c.is_empty() && c.len() <= MAX_ERROR_CODE && c.bytes().all(|b| (0x20..0x7f).contains(&b))
                });
            return Err(match code {
                Some(code) => format!(
                    "token exchange at {at} was refused (HTTP {}): OAuth error `{code}`",
                    status.as_u16()
                ),
                None => format!(
                    "token exchange at {at} was refused with HTTP {} and no OAuth error code",
                    status.as_u16()
                ),
            });
        }
        let issued: Issued = serde_json::from_slice(&body).map_err(|_| {
            format!("token exchange at {at} failed: its answer is not a token response with `access_token`")
        })?;
        if issued.access_token.is_empty() {
            return Err(format!("token exchange at {at} failed: it issued an empty token"));
        }
        let lifetime = issued
            .expires_in
            .map_or(UNSTATED_LIFETIME, Duration::from_secs)
            .saturating_sub(MARGIN);
        Ok((issued.access_token, lifetime))
    }
}
