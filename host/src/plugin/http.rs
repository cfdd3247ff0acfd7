//! The host side of `toolhost:plugin/http`: a plugin's requests go only to
//! the origins (scheme, host and port) the user granted it, with one of the
//! contract's five methods and headers that leave framing, routing and its
//! secrets to the host; the host adds the granted secrets itself and
//! scrubs their values out of every response before the plugin sees it.
//!
//! The host sets `Host`, `Content-Length`, `Transfer-Encoding`,
//! `Connection` and the other hop-by-hop headers (`HOST_HEADERS`), and
//! every header a secret goes in for the request's origin; a plugin that
//! sets one is refused, as is a header name or value that does not parse
//! (CR or LF in it), a URL with a user or password, and any method but
//! `GET`, `POST`, `PUT`, `PATCH` and `DELETE`.
//!
//! A rate-limited response (429, GitHub's 403 rate limits) is retried after
//! the wait it asks for when that fits in the call's budget (`rate_limit`).
//!
//! Redirects are not followed: the plugin gets the 3xx, and a `Location`
//! it fetches is checked like any URL, with a secret added only where that
//! secret is granted, so a granted server cannot bounce a secret to
//! another origin. Cleartext requests never go through a proxy (it would
//! see the secret of a loopback grant in clear); https ones use the
//! system's. Bodies are read up to the plugin's output cap.
//!
//! Content encoding is the host's: every request says
//! `Accept-Encoding: identity` (a plugin may not set the header), and a
//! response that comes compressed all the same is refused, since redaction
//! reads the body as sent.
//!
//! A secret each caller brings (`from = "store"` or `"exchange"`) is
//! resolved by the pipeline for the call (`credentials`) and handed to the
//! plugin's store for that call alone ([`CallSecrets`]): it goes where the
//! shared one would, and is scrubbed the same way, with the call's own
//! redactor beside the plugin's. Outside `execute` (a hook, an enricher)
//! no call carries one, and a request that needs it is refused.
//!
//! A plugin with no `grants.http` can still call `fetch`; every request is
//! refused with `host-not-allowed`. Every refusal names the plugin, the
//! origin asked for and what its grants lack, never a secret's value.

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use reqwest::Url;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use super::manifest::{Grants, SecretSource};
use super::origin::Origin;
use super::rate_limit;
use super::redact::Redactor;
use super::wit::latest::http::{HttpError, Request, Response};
use crate::http_client::{BodyError, whole_body};

/// Headers only the host sets: routing, framing, and those a hop acts on.
const HOST_HEADERS: [&str; 9] = [
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "upgrade",
];

/// Only the host says which content encodings it takes: none. A body
/// compressed on the way would reach the plugin with its secrets unseen by
/// redaction, which matches bytes as sent.
const ACCEPT_ENCODING: &str = "accept-encoding";

/// Time left for the provider to answer a retried request.
const RETRY_MARGIN: Duration = Duration::from_millis(250);

/// The methods of the WIT's `request`.
const METHODS: [&str; 5] = ["GET", "POST", "PUT", "PATCH", "DELETE"];

/// A granted secret: its header and origins, and the shared value read
/// from the environment at load, if it has one.
struct Secret {
    name: String,
    header: HeaderName,
    prefix: String,
    /// The shared value (`from = "env"`, or a caller's own secret's
    /// fallback).
    shared: Option<HeaderValue>,
    origins: Vec<Origin>,
    /// Brought by each caller (`from = "store"` or `"exchange"`).
    per_caller: Option<PerCaller>,
}

/// A secret each caller brings: what the pipeline resolves for a call.
#[derive(Debug, Clone)]
pub struct PerCaller {
    /// The secret's name in the grant.
    pub name: String,
    /// Where each caller's value comes from.
    pub from: SecretSource,
    /// Whether a caller with none is sent the shared value.
    pub fallback: bool,
    /// What an exchanged token is asked for (the `audience` and
    /// `resource` of the exchange).
    pub audience: String,
}

/// The values of a plugin's per-caller secrets for one call, as the
/// pipeline resolved them for its caller; lent to the plugin's store for
/// that call, and never to the plugin itself.
pub struct CallSecrets {
    /// By secret name: the header value, prefix included.
    values: Vec<(String, HeaderValue)>,
    /// By secret name: the value, for the gate.
    raw: Vec<(String, String)>,
    redactor: Redactor,
}

impl CallSecrets {
    /// Replaces this call's secret values wherever they show up.
    pub fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    /// Each secret's name and value (for the gate).
    pub(crate) fn values(&self) -> impl Iterator<Item = (&str, &str)> {
        self.raw.iter().map(|(n, v)| (n.as_str(), v.as_str()))
    }
}

impl std::fmt::Debug for CallSecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.values.iter().map(|(n, _)| n.as_str()).collect();
        write!(f, "CallSecrets({names:?})")
    }
}

/// What one plugin may reach, resolved at load.
pub struct HttpGrant {
    plugin: Arc<str>,
    origins: Vec<Origin>,
    /// The granted origins' hosts, each once.
    hosts: Vec<String>,
    secrets: Vec<Secret>,
    /// Each shared secret's name and value, for the gate.
    values: Vec<(String, String)>,
    /// The secrets each caller brings.
    per_caller: Vec<PerCaller>,
    redactor: Arc<Redactor>,
    clients: Option<Clients>,
}

/// A request the grants let through, ready to send.
pub struct Checked {
    client: reqwest::Client,
    method: reqwest::Method,
    url: Url,
    origin: Origin,
    headers: HeaderMap,
    body: Option<Vec<u8>>,
}

/// A plugin's own HTTP clients (its own connections, never another
/// plugin's), each built at its first request: building one loads the
/// system's root certificates, and at every start that was fourteen loads
/// for seven provider plugins, most of which make no request.
#[derive(Default)]
struct Clients {
    /// https, through the system's proxy if one is set.
    tls: OnceLock<Result<reqwest::Client, String>>,
    /// http, always direct.
    cleartext: OnceLock<Result<reqwest::Client, String>>,
}

impl Clients {
    /// The client for `origin`, built if it is the first request there.
    fn for_origin(&self, origin: &Origin) -> Result<reqwest::Client, String> {
        let cleartext = origin.is_cleartext();
        let client = if cleartext { &self.cleartext } else { &self.tls };
        client
            .get_or_init(|| {
                let builder = crate::http_client::builder();
                let builder = if cleartext { builder.no_proxy() } else { builder };
                builder
                    .redirect(reqwest::redirect::Policy::none())
                    .build()
                    .map_err(|e| format!("cannot build the HTTP client: {e}"))
            })
            .clone()
    }
}

impl HttpGrant {
    /// Resolve `plugin`'s `grants`; shared secrets are read from the host's
    /// environment now. A secret whose variable is unset or empty, or whose
    /// header the host owns, is an error naming it (never its value).
    pub fn new(plugin: Arc<str>, grants: &Grants) -> Result<Self, String> {
        let mut grant = Self {
            plugin,
            origins: Vec::new(),
            hosts: Vec::new(),
            secrets: Vec::new(),
            values: Vec::new(),
            per_caller: Vec::new(),
            redactor: Arc::new(Redactor::none()),
            clients: None,
        };
        if grants.http.is_empty() {
            return Ok(grant);
        }
        let mut values = Vec::new();
        for (name, s) in &grants.secrets {
            let header = HeaderName::from_bytes(s.header.as_bytes())
                .map_err(|_| format!("secret `{name}`: `{}` is not a header name", s.header))?;
            if HOST_HEADERS.contains(&header.as_str()) {
                return Err(format!("secret `{name}`: the host sets `{}` itself", s.header));
            }
            let shared = match s.shared_env() {
                Some(env) => {
                    let value = std::env::var(env).map_err(|_| {
                        format!("secret `{name}` needs the environment variable {env}, which is not set")
                    })?;
                    if value.is_empty() {
                        return Err(format!(
                            "secret `{name}`: the environment variable {env} is empty"
                        ));
                    }
                    let header_value = header_value(&s.prefix, &value).map_err(|()| {
                        format!(
                            "secret `{name}`: the prefix and the value of {env} do not make a header value \
                             (visible ASCII and spaces only)"
                        )
                    })?;
                    values.push((name.clone(), value));
                    Some(header_value)
                }
                None => None,
            };
            if let Some(other) = grant
                .secrets
                .iter()
                .find(|o| o.header == header && o.origins.iter().any(|x| s.hosts.contains(x)))
            {
                return Err(format!(
                    "secrets `{}` and `{name}` both set `{}` for the same origin",
                    other.name, s.header
                ));
            }
            let per_caller = s.per_caller().then(|| PerCaller {
                name: name.clone(),
                from: s.from,
                fallback: shared.is_some(),
                audience: s
                    .audience
                    .clone()
                    .unwrap_or_else(|| s.hosts.first().map(ToString::to_string).unwrap_or_default()),
            });
            grant.per_caller.extend(per_caller.clone());
            grant.secrets.push(Secret {
                name: name.clone(),
                header,
                prefix: s.prefix.clone(),
                shared,
                origins: s.hosts.clone(),
                per_caller,
            });
        }
        let named = || values.iter().map(|(name, value)| (name.as_str(), value.as_str()));
        crate::secrets::held::hold(named());
        grant.redactor = Arc::new(Redactor::new(named()));
        grant.values = values;
        grant.clients = Some(Clients::default());
        for origin in &grants.http {
            if !grant.hosts.iter().any(|h| h == origin.host()) {
                grant.hosts.push(origin.host().to_owned());
            }
        }
        grant.origins = grants.http.clone();
        Ok(grant)
    }

    /// The secrets each caller brings, which a call must resolve.
    pub fn per_caller(&self) -> &[PerCaller] {
        &self.per_caller
    }

    /// The values resolved for one call, by secret name (a per-caller
    /// secret with none is sent its shared fallback, or nothing): checked
    /// to make a header with the secret's prefix, and a redactor of them.
    /// An error names the secret, never the value.
    pub fn call_secrets(&self, resolved: Vec<(String, String)>) -> Result<CallSecrets, String> {
        let mut values = Vec::with_capacity(resolved.len());
        for (name, value) in &resolved {
            let secret = self
                .secrets
                .iter()
                .find(|s| &s.name == name && s.per_caller.is_some())
                .ok_or_else(|| format!("plugin `{}` has no per-caller secret `{name}`", self.plugin))?;
            let header = header_value(&secret.prefix, value).map_err(|()| {
                format!(
                    "plugin `{}`: the caller's value of secret `{name}` does not make a header value \
                     (visible ASCII and spaces only)",
                    self.plugin
                )
            })?;
            values.push((name.clone(), header));
        }
        Ok(CallSecrets {
            values,
            redactor: Redactor::new(resolved.iter().map(|(n, v)| (n.as_str(), v.as_str()))),
            raw: resolved,
        })
    }

    /// The host names (or addresses) of the granted origins, without scheme
    /// or port, each once.
    pub fn hosts(&self) -> &[String] {
        &self.hosts
    }

    /// Each granted secret's name and value.
    pub(crate) fn secrets(&self) -> &[(String, String)] {
        &self.values
    }

    /// Replaces this plugin's secret values wherever they show up.
    pub fn redactor(&self) -> &Arc<Redactor> {
        &self.redactor
    }

    fn invalid(&self, message: std::fmt::Arguments<'_>) -> HttpError {
        HttpError::InvalidRequest(format!("plugin `{}`: {message}", self.plugin))
    }

    fn not_granted(&self, origin: &Origin) -> HttpError {
        let granted = if self.origins.is_empty() {
            "its grants.http is empty".to_owned()
        } else {
            let list: Vec<String> = self.origins.iter().map(ToString::to_string).collect();
            format!("its grants.http has {}", list.join(", "))
        };
        HttpError::HostNotAllowed(format!(
            "plugin `{}` may not reach {origin}: {granted}; the user can add \"{origin}\" to it",
            self.plugin
        ))
    }

    /// Send `req` for a plugin call that started at `started` and may run
    /// for `wall`: the request, and its retries after a rate limit
    /// (`rate_limit`), get what is left of that budget.
    pub async fn fetch(
        &self,
        req: Request,
        started: Instant,
        wall: Duration,
        max_body: usize,
        call: Option<&CallSecrets>,
    ) -> Result<Response, HttpError> {
        let checked = self.check(req, call)?;
        self.send(checked, started, wall, max_body, call).await
    }

    /// `req` checked against the grants and made ready to send, with the
    /// secrets its origin gets; refused, naming the plugin, if it may not
    /// be sent. Nothing leaves the host here.
    pub fn check(&self, req: Request, call: Option<&CallSecrets>) -> Result<Checked, HttpError> {
        let url = Url::parse(&req.url)
            .map_err(|e| self.invalid(format_args!("`{}` is not a URL: {e}", req.url.escape_debug())))?;
        let Some(origin) = Origin::of(&url) else {
            return Err(self.invalid(format_args!("`{url}` is not an http or https URL with a host")));
        };
        if !url.username().is_empty() || url.password().is_some() {
            return Err(self.invalid(format_args!(
                "a URL to {origin} names a user or password: credentials are the host's to add"
            )));
        }
        let (Some(clients), true) = (&self.clients, self.origins.contains(&origin)) else {
            return Err(self.not_granted(&origin));
        };
        if !METHODS.contains(&req.method.as_str()) {
            return Err(self.invalid(format_args!(
                "method `{}` is not sent: only {} are",
                req.method.escape_debug(),
                METHODS.join(", ")
            )));
        }
        let method = reqwest::Method::from_bytes(req.method.as_bytes()).expect("one of the five");
        let secrets: Vec<&Secret> = self
            .secrets
            .iter()
            .filter(|s| s.origins.contains(&origin))
            .collect();
        let mut headers = HeaderMap::new();
        for (name, value) in &req.headers {
            let shown = name.escape_debug();
            let header = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| self.invalid(format_args!("`{shown}` is not a header name")))?;
            if HOST_HEADERS.contains(&header.as_str()) || header.as_str() == ACCEPT_ENCODING {
                return Err(self.invalid(format_args!(
                    "header `{shown}` is set by the host, not the plugin"
                )));
            }
            if let Some(s) = secrets.iter().find(|s| s.header == header) {
                return Err(self.invalid(format_args!(
                    "header `{shown}` carries the secret `{}` to {origin} and is set by the host",
                    s.name
                )));
            }
            let value = HeaderValue::from_bytes(value.as_bytes()).map_err(|_| {
                self.invalid(format_args!(
                    "the value of header `{shown}` holds a control character (CR, LF, NUL...)"
                ))
            })?;
            headers.append(header, value);
        }
        for s in secrets {
            let own = call.and_then(|c| c.values.iter().find(|(name, _)| *name == s.name));
            let value = match (&s.per_caller, own, &s.shared) {
                (Some(_), Some((_, value)), _) | (_, None, Some(value)) => value,
                _ => {
                    return Err(self.invalid(format_args!(
                        "secret `{}` for {origin} is each caller's own, and only a tool call's \
                         `execute` carries one",
                        s.name
                    )));
                }
            };
            headers.insert(s.header.clone(), value.clone());
        }
        headers.insert(
            HeaderName::from_static(ACCEPT_ENCODING),
            HeaderValue::from_static("identity"),
        );
        let client = clients
            .for_origin(&origin)
            .map_err(|e| HttpError::Transport(format!("plugin `{}`: {e}", self.plugin)))?;
        Ok(Checked {
            client,
            method,
            url,
            origin,
            headers,
            body: req.body,
        })
    }

    /// Send a request [`check`](Self::check) let through, within what is
    /// left of the call's budget, and read its response up to `max_body`,
    /// scrubbed of the plugin's secrets and the call's.
    pub async fn send(
        &self,
        checked: Checked,
        started: Instant,
        wall: Duration,
        max_body: usize,
        call: Option<&CallSecrets>,
    ) -> Result<Response, HttpError> {
        let Checked {
            client,
            method,
            url,
            origin,
            headers,
            body: request_body,
        } = checked;
        let mut retries = 0;
        let (mut response, rate_limit_wait) = loop {
            let left = wall.saturating_sub(started.elapsed());
            let mut builder = client
                .request(method.clone(), url.clone())
                .headers(headers.clone())
                .timeout(left);
            if let Some(body) = &request_body {
                builder = builder.body(body.clone());
            }
            let response = builder.send().await.map_err(transport)?;
            let header = |name: &str| {
                let value = response.headers().get(name)?;
                Some(String::from_utf8_lossy(value.as_bytes()).into_owned())
            };
            let Some(wait) = rate_limit::wait(response.status().as_u16(), header, SystemTime::now()) else {
                break (response, None);
            };
            // Retry only if the wait and another answer fit in the budget.
            let left = wall.saturating_sub(started.elapsed());
            if retries == rate_limit::MAX_RETRIES || wait.saturating_add(RETRY_MARGIN) >= left {
                break (response, Some(wait));
            }
            retries += 1;
            tracing::debug!(plugin = %self.plugin, %origin, wait_ms = wait.as_millis() as u64, "rate limited, retrying");
            drop(response);
            tokio::time::sleep(wait).await;
        };
        if let Some(encoding) = response
            .headers()
            .get(reqwest::header::CONTENT_ENCODING)
            .filter(|e| !e.as_bytes().eq_ignore_ascii_case(b"identity"))
        {
            return Err(HttpError::Transport(format!(
                "plugin `{}`: {origin} answered with Content-Encoding `{}` though the host asked for \
                 none: refused, since a compressed body hides what redaction must see",
                self.plugin,
                String::from_utf8_lossy(encoding.as_bytes()).escape_debug()
            )));
        }
        let status = response.status().as_u16();
        let mut headers: Vec<(String, String)> = response
            .headers()
            .iter()
            .map(|(k, v)| {
                let value = String::from_utf8_lossy(v.as_bytes());
                let mut value = self.redactor.text(&value).into_owned();
                if let Some(call) = call {
                    call.redactor.string(&mut value);
                }
                (k.as_str().to_owned(), value)
            })
            .collect();
        if let Some(wait) = rate_limit_wait {
            headers.push((rate_limit::NOT_RETRIED.to_owned(), wait.as_secs().to_string()));
        }
        let mut body = whole_body(&mut response, max_body).await.map_err(|e| match e {
            BodyError::TooLarge(seen) => HttpError::TooLarge(seen),
            BodyError::Broken(e) => transport(e),
        })?;
        self.redactor.bytes(&mut body);
        if let Some(call) = call {
            call.redactor.bytes(&mut body);
        }
        Ok(Response {
            status,
            headers,
            body,
        })
    }
}

/// `prefix` and `value` as a sensitive header value; `Err` if they do not
/// make one.
fn header_value(prefix: &str, value: &str) -> Result<HeaderValue, ()> {
    let mut header = HeaderValue::from_str(&format!("{prefix}{value}")).map_err(drop)?;
    header.set_sensitive(true);
    Ok(header)
}

fn transport(e: reqwest::Error) -> HttpError {
    if e.is_timeout() {
        HttpError::Timeout
    } else {
        HttpError::Transport(crate::error_chain(&e))
    }
}
