//! Calling a provider's HTTP API from a tool: the base URL from the
//! plugin's config, requests through the host's `http` import (the host
//! adds the token and retries rate limits), and one error vocabulary for
//! every provider.
//!
//! Errors name the provider and the tool and carry the provider's own
//! message, never a token (the plugin never has it; the host also scrubs it
//! from every response):
//! - 401 and 403 say which secret (`grants.secrets`) is missing or lacks a
//!   scope;
//! - 404 is [`ToolError::NotFound`];
//! - 400 and 422 are [`ToolError::InvalidArgs`];
//! - a rate limit the host did not wait out says how long the provider
//!   asked to wait.
//!
//! It owns no provider's paths or shapes: each plugin says what to request
//! and what to keep of the answer.

use toolhost_sdk::http::{self, HttpError, Request, Response};
use toolhost_sdk::{ToolAnnotations, ToolDefinition, ToolError, ToolResult, Value, json, serde_json};

/// What the host adds to a rate-limited response it did not retry.
pub(crate) const NOT_RETRIED: &str = "toolhost-rate-limit-wait-s";

/// Redirects a GET follows.
const MAX_REDIRECTS: usize = 3;

/// Longest provider message quoted in an error.
const MAX_MESSAGE: usize = 500;

/// One provider's API, as configured.
#[derive(Clone, Debug)]
pub struct Api {
    /// The provider's name for people: `GitHub`, `Jira`...
    pub provider: &'static str,
    /// The API root, without a trailing slash.
    pub base: String,
    /// The `grants.secrets` entry holding the token, named in auth errors.
    pub secret: &'static str,
    /// What the token needs, for auth errors: `a token with the repo scope`.
    pub needs: &'static str,
    /// Headers every request carries (`Accept`, an API version).
    pub headers: Vec<(String, String)>,
}

/// A successful answer.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    /// The body as JSON (`Null` for an empty body).
    pub body: Value,
    /// The body as text, for endpoints that answer plain text (logs, diffs).
    pub text: String,
    /// The body as received, for endpoints that answer files.
    pub bytes: Vec<u8>,
}

impl Reply {
    /// The first header named `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The `rel="next"` URL of an RFC 8288 `Link` header, if any.
    pub fn next_link(&self) -> Option<String> {
        next_link(self.header("link")?)
    }
}

/// A request body.
#[derive(Clone, Copy, Debug)]
pub enum Body<'a> {
    /// JSON, sent as `application/json`.
    Json(&'a Value),
    /// Bytes of a content type (a multipart upload, see `files`).
    Bytes { content_type: &'a str, data: &'a [u8] },
}

/// A page-numbered list request: which items, how many a page, which to
/// keep.
pub struct Listing<'a> {
    /// The path with its fixed query (`per_page` and `page` are added).
    pub path: &'a str,
    pub query: &'a [(&'a str, String)],
    /// Where the items are in each page: the answer itself (`None`) or
    /// one of its fields (a search API's `items`).
    pub field: Option<&'a str>,
    /// Items `[offset, offset+limit)`, counted after `keep`.
    pub offset: u64,
    pub limit: u64,
    /// The provider's largest page.
    pub max_per_page: u64,
}

/// The base URL in `config` (`base_url`), else `default`: an http(s) URL.
pub fn base_url(provider: &str, config: &Value, default: &str) -> Result<String, String> {
    let url = match config.get("base_url") {
        None => default,
        Some(Value::String(url)) => url.as_str(),
        Some(other) => {
            return Err(format!(
                "{provider}: config `base_url` must be a string, not {other}"
            ));
        }
    };
    if !(url.starts_with("https://") || url.starts_with("http://")) {
        return Err(format!(
            "{provider}: config `base_url` must be an http(s) URL, not `{}`",
            url.escape_debug()
        ));
    }
    Ok(url.trim_end_matches('/').to_owned())
}

/// The host of a URL (`https://api.github.com/x` → `api.github.com`), for
/// rate-limit hosts: they must be a host the plugin is granted, so they
/// follow the configured base URL.
pub fn host_of(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(v6).to_owned(),
        None => host.split(':').next().unwrap_or(host).to_ascii_lowercase(),
    }
}

/// Percent-encode a path segment or a query value (RFC 3986 unreserved
/// characters are kept).
pub fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => out.push(b as char),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// A `Location` against the URL that answered it: absolute, or a path on
/// the same origin.
fn resolve(from: &str, location: &str) -> String {
    if location.starts_with("https://") || location.starts_with("http://") {
        return location.to_owned();
    }
    let scheme_end = from.find("://").map_or(0, |i| i + 3);
    let origin_end = from[scheme_end..]
        .find('/')
        .map_or(from.len(), |i| scheme_end + i);
    format!("{}/{}", &from[..origin_end], location.trim_start_matches('/'))
}

/// `path?k=v&...` with the values encoded; pairs with an empty value are
/// left out.
pub fn with_query(path: &str, query: &[(&str, String)]) -> String {
    let pairs: Vec<String> = query
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| format!("{k}={}", encode(v)))
        .collect();
    if pairs.is_empty() {
        path.to_owned()
    } else {
        let sep = if path.contains('?') { '&' } else { '?' };
        format!("{path}{sep}{}", pairs.join("&"))
    }
}

impl Api {
    /// `GET base + path` (`path` may carry a query).
    pub fn get(&self, tool: &str, path: &str) -> Result<Reply, ToolError> {
        self.send(tool, "GET", path, None)
    }

    /// A request with an optional JSON body, answered 2xx.
    pub fn send(
        &self,
        tool: &str,
        method: &str,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Reply, ToolError> {
        self.request(tool, method, path, &[], body.map(Body::Json))
    }

    /// A request with extra headers (`X-Atlassian-Token`) and any body,
    /// answered 2xx; GETs follow redirects.
    pub fn request(
        &self,
        tool: &str,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<Body<'_>>,
    ) -> Result<Reply, ToolError> {
        let url = if path.starts_with("https://") || path.starts_with("http://") {
            path.to_owned()
        } else {
            format!("{}{path}", self.base)
        };
        self.fetch_with(tool, method, &url, headers, body)
    }

    /// The items a [`Listing`] asks for, kept by `keep`, following `Link:
    /// rel="next"` headers (GitHub, GitLab); and whether more remain.
    pub fn list(
        &self,
        tool: &str,
        listing: &Listing<'_>,
        keep: impl Fn(&Value) -> bool,
    ) -> Result<(Vec<Value>, bool), ToolError> {
        let first = self.get(tool, &Self::first_page(listing))?;
        self.list_from(tool, listing, first, keep)
    }

    /// The path of a [`Listing`]'s first page, to fetch it beside other
    /// requests ([`Api::get_all`]) and go on with [`Api::list_from`].
    pub fn first_page(listing: &Listing<'_>) -> String {
        let window = Window::new(listing.offset, listing.limit, listing.max_per_page);
        let mut query = listing.query.to_vec();
        query.push(("per_page", window.per_page.to_string()));
        query.push(("page", window.first_page.to_string()));
        with_query(listing.path, &query)
    }

    /// [`Api::list`] from its first page, already fetched.
    pub fn list_from(
        &self,
        tool: &str,
        listing: &Listing<'_>,
        first: Reply,
        keep: impl Fn(&Value) -> bool,
    ) -> Result<(Vec<Value>, bool), ToolError> {
        let window = Window::new(listing.offset, listing.limit, listing.max_per_page);
        let mut reply = first;
        let mut items: Vec<Value> = Vec::new();
        let mut skip = window.skip;
        loop {
            let body = match listing.field {
                Some(f) => reply.body.get(f).cloned().unwrap_or_default(),
                None => std::mem::take(&mut reply.body),
            };
            let page = match body {
                Value::Array(page) => page,
                _ => Vec::new(),
            };
            for item in page.into_iter().filter(|i| keep(i)) {
                if skip > 0 {
                    skip -= 1;
                } else if items.len() < window.take {
                    items.push(item);
                } else {
                    return Ok((items, true));
                }
            }
            match reply.next_link() {
                Some(next) if items.len() < window.take => reply = self.fetch(tool, "GET", &next, None)?,
                next => return Ok((items, next.is_some())),
            }
        }
    }

    /// `GET base + path` of every path at once (`http::fetch_all`): the
    /// answers in order, each checked as [`Api::get`]'s is. For reads of
    /// the provider's API, which answer without redirects.
    pub fn get_all(&self, tool: &str, paths: &[String]) -> Vec<Result<Reply, ToolError>> {
        let urls: Vec<String> = paths.iter().map(|path| format!("{}{path}", self.base)).collect();
        let requests = urls.iter().map(|url| self.build("GET", url, &[], None));
        http::fetch_all(requests)
            .into_iter()
            .zip(&urls)
            .map(|(answer, url)| {
                let response = answer.map_err(|e| self.transport(tool, &e))?;
                self.check(tool, "GET", url, response)
            })
            .collect()
    }

    /// A request to an absolute URL (a `Link` header's next page).
    pub fn fetch(
        &self,
        tool: &str,
        method: &str,
        url: &str,
        body: Option<&Value>,
    ) -> Result<Reply, ToolError> {
        self.fetch_with(tool, method, url, &[], body.map(Body::Json))
    }

    fn fetch_with(
        &self,
        tool: &str,
        method: &str,
        url: &str,
        headers: &[(&str, &str)],
        body: Option<Body<'_>>,
    ) -> Result<Reply, ToolError> {
        let mut response = self.exchange_with(tool, method, url, headers, body)?;
        // GETs follow redirects (GitHub answers job logs with a 302 to
        // signed storage): the host checks each target against the grants
        // and adds a secret only where it is granted.
        let mut url = url.to_owned();
        for _ in 0..MAX_REDIRECTS {
            let location = match (method, response.status) {
                ("GET", 301..=303 | 307 | 308) => response.header("location").map(str::to_owned),
                _ => None,
            };
            let Some(location) = location else { break };
            url = resolve(&url, &location);
            response = self.exchange_with(tool, "GET", &url, headers, None)?;
        }
        self.check(tool, method, &url, response)
    }

    /// Send a request and return the answer whatever its status: for
    /// protocols whose errors are in the body (GraphQL).
    pub(crate) fn exchange(
        &self,
        tool: &str,
        method: &str,
        url: &str,
        body: Option<&Value>,
    ) -> Result<Response, ToolError> {
        self.exchange_with(tool, method, url, &[], body.map(Body::Json))
    }

    fn exchange_with(
        &self,
        tool: &str,
        method: &str,
        url: &str,
        headers: &[(&str, &str)],
        body: Option<Body<'_>>,
    ) -> Result<Response, ToolError> {
        let request = self.build(method, url, headers, body);
        http::fetch(&request).map_err(|e| self.transport(tool, &e))
    }

    /// A request with the provider's headers, then `headers`, and `body`.
    fn build(&self, method: &str, url: &str, headers: &[(&str, &str)], body: Option<Body<'_>>) -> Request {
        let mut request = Request::new(method, url);
        for (name, value) in &self.headers {
            request = request.header(name, value);
        }
        for (name, value) in headers {
            request = request.header(name, value);
        }
        match body {
            Some(Body::Json(json)) => request
                .header("content-type", "application/json")
                .body(json.to_string().into_bytes()),
            Some(Body::Bytes { content_type, data }) => {
                request.header("content-type", content_type).body(data.to_vec())
            }
            None => request,
        }
    }

    fn transport(&self, tool: &str, error: &HttpError) -> ToolError {
        let why = match error {
            HttpError::HostNotAllowed(m) => format!("the plugin is not granted this host: {m}"),
            HttpError::InvalidRequest(m) => format!("the request was refused: {m}"),
            HttpError::Timeout => "no answer within the call's time budget".to_owned(),
            HttpError::TooLarge(n) => {
                format!(
                    "the answer ({n} bytes so far) is over the plugin's size limit (limits.max_output_kb)"
                )
            }
            HttpError::Transport(m) => format!("cannot reach {}: {m}", self.base),
            HttpError::TooManyInFlight(m) => format!("too many requests at once: {m}"),
        };
        ToolError::Failed(format!("{} {tool}: {why}", self.provider))
    }

    fn check(&self, tool: &str, method: &str, url: &str, response: Response) -> Result<Reply, ToolError> {
        let text = response.text();
        let status = response.status;
        if (200..300).contains(&status) {
            let body = if text.trim().is_empty() {
                Value::Null
            } else {
                serde_json::from_str(&text).unwrap_or(Value::Null)
            };
            return Ok(Reply {
                status,
                headers: response.headers,
                body,
                text,
                bytes: response.body,
            });
        }
        let waited = response.header(NOT_RETRIED).map(str::to_owned);
        Err(self.status_error(
            tool,
            method,
            url,
            status,
            &provider_message(&text),
            waited.as_deref(),
        ))
    }

    /// The error for an answer with HTTP status `status` (or the status a
    /// GraphQL error stands for), quoting what the provider `said`;
    /// `waited` is how long a rate limit the host did not wait out asked
    /// for.
    pub fn status_error(
        &self,
        tool: &str,
        method: &str,
        url: &str,
        status: u16,
        said: &str,
        waited: Option<&str>,
    ) -> ToolError {
        let said = if said.is_empty() {
            String::new()
        } else {
            format!(": {said}")
        };
        let (p, path) = (self.provider, url.strip_prefix(&self.base).unwrap_or(url));
        match status {
            401 => ToolError::Failed(format!(
                "{p} {tool}: 401 Unauthorized{said}. The token in secret `{}` is missing, expired or \
                 invalid; {p} needs {}",
                self.secret, self.needs
            )),
            403 if waited.is_none() => ToolError::Failed(format!(
                "{p} {tool}: 403 Forbidden{said}. The token in secret `{}` lacks the permission for \
                 {method} {path}; {p} needs {}",
                self.secret, self.needs
            )),
            404 => ToolError::NotFound(format!("{p} {tool}: not found ({method} {path}){said}")),
            400 | 409 | 422 => {
                ToolError::InvalidArgs(format!("{p} {tool}: invalid arguments ({status}){said}"))
            }
            429 | 403 => ToolError::Failed(match waited {
                Some(wait) => format!(
                    "{p} {tool}: rate limited ({status}); {p} asks to wait {wait} s, longer than this call \
                     may take. Try again later{said}"
                ),
                None => format!("{p} {tool}: rate limited ({status}); try again later{said}"),
            }),
            _ => ToolError::Failed(format!("{p} {tool}: {method} {path} answered {status}{said}")),
        }
    }
}

/// The message a provider put in an error body: `message` (GitHub,
/// GitLab), `errorMessages` and `errors` (Jira), GraphQL's `errors[].message`,
/// `title` (Confluence), `err` (ClickUp), else the text itself. Bounded.
pub fn provider_message(text: &str) -> String {
    let Ok(body) = serde_json::from_str::<Value>(text) else {
        return bounded(text.trim());
    };
    let mut parts: Vec<String> = Vec::new();
    for key in ["message", "error_description", "error", "err", "title", "detail"] {
        if let Some(Value::String(s)) = body.get(key) {
            parts.push(s.clone());
        }
    }
    if let Some(Value::Array(list)) = body.get("errorMessages") {
        parts.extend(list.iter().filter_map(Value::as_str).map(str::to_owned));
    }
    match body.get("errors") {
        Some(Value::Object(fields)) => parts.extend(
            fields
                .iter()
                .map(|(k, v)| format!("{k}: {}", v.as_str().unwrap_or(&v.to_string()))),
        ),
        Some(Value::Array(list)) => parts.extend(list.iter().map(|e| {
            match e {
                Value::String(s) => s.clone(),
                other => {
                    let said = other
                        .get("message")
                        .or_else(|| other.get("title"))
                        .and_then(Value::as_str)
                        .map_or_else(|| other.to_string(), str::to_owned);
                    // Confluence v2 puts the specifics in `detail`.
                    match other.get("detail").and_then(Value::as_str) {
                        Some(detail) if !detail.is_empty() => format!("{said}: {detail}"),
                        _ => said,
                    }
                }
            }
        })),
        _ => {}
    }
    if parts.is_empty() {
        return bounded(text.trim());
    }
    bounded(&parts.join("; "))
}

fn bounded(s: &str) -> String {
    if s.len() <= MAX_MESSAGE {
        return s.to_owned();
    }
    let mut end = MAX_MESSAGE;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// The `rel="next"` target of a `Link` header value.
pub fn next_link(link: &str) -> Option<String> {
    link.split(',').find_map(|part| {
        let (target, params) = part.split_once(';')?;
        let next = params
            .split(';')
            .any(|p| matches!(p.trim(), "rel=\"next\"" | "rel=next"));
        next.then(|| {
            target
                .trim()
                .trim_start_matches('<')
                .trim_end_matches('>')
                .to_owned()
        })
    })
}

/// Which pages of a page-numbered API hold items `[offset, offset+limit)`,
/// with pages of `per_page` items (1-based pages).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    pub first_page: u64,
    pub per_page: u64,
    /// Items to drop from the first page.
    pub skip: usize,
    pub take: usize,
}

impl Window {
    /// Pages as large as `limit` (at most `max_per_page`), starting at the
    /// page holding `offset`.
    pub fn new(offset: u64, limit: u64, max_per_page: u64) -> Self {
        let per_page = limit.clamp(1, max_per_page);
        Window {
            first_page: offset / per_page + 1,
            per_page,
            skip: (offset % per_page) as usize,
            take: limit as usize,
        }
    }
}

/// A tool's answer: a short summary for the model and the structured
/// result (what the value models' projections read).
pub fn result(summary: impl Into<String>, value: Value) -> ToolResult {
    ToolResult::text(summary).with_structured(value)
}

/// The definition of a base-catalog tool this plugin implements. The host
/// serves the catalog's schema for it (enriched), so the definition names
/// it, its category and what this provider does with it, with a title from
/// its name (`get_issue_comments`: "Get issue comments") and annotations
/// that say what every provider's implementation does: a tool that does not
/// write ([`crate::is_write`]) only reads, one that deletes or removes may
/// destroy, and all of them reach the provider's service.
pub fn catalog_tool(name: &str, category: &str, description: &str) -> ToolDefinition {
    let annotations = if crate::is_write(name) {
        ToolAnnotations {
            read_only: Some(false),
            destructive: Some(name.starts_with("delete_") || name.starts_with("remove_")),
            ..ToolAnnotations::default()
        }
    } else {
        ToolAnnotations::READ_ONLY
    };
    ToolDefinition::new(name, description, json!({"type": "object"}))
        .title(title_of(name))
        .category(category)
        .annotations(annotations.open_world(true))
}

/// `get_issue_comments` as "Get issue comments".
fn title_of(name: &str) -> String {
    let words = name.replace('_', " ");
    let mut chars = words.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => words,
    }
}

/// The output schema of `get_available_statuses` for providers whose
/// answer is `{"statuses": [{"name", "category", ...}]}`.
pub fn statuses_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "statuses": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "category": {"type": "string"}
                    },
                    "required": ["name", "category"]
                }
            }
        },
        "required": ["statuses"]
    })
}

/// An integer argument, or `default` when absent.
pub fn uint(args: &Value, name: &str, default: u64) -> Result<u64, ToolError> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(default),
        Some(v) => v
            .as_u64()
            .ok_or_else(|| ToolError::InvalidArgs(format!("`{name}` must be a non-negative integer"))),
    }
}

/// A required string argument.
pub fn required(args: &Value, name: &str) -> Result<String, ToolError> {
    match args.get(name) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        Some(Value::Number(n)) => Ok(n.to_string()),
        _ => Err(ToolError::InvalidArgs(format!("`{name}` is required (a string)"))),
    }
}

/// An optional list of strings (`labels`, `assignees`); `None` when absent,
/// so "not given" and "set to none" (`[]`) stay apart.
pub fn strings(args: &Value, name: &str) -> Result<Option<Vec<String>>, ToolError> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Array(list)) => list
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| ToolError::InvalidArgs(format!("`{name}` must be a list of strings")))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(_) => Err(ToolError::InvalidArgs(format!(
            "`{name}` must be a list of strings"
        ))),
    }
}

/// An optional boolean argument.
pub fn flag(args: &Value, name: &str) -> Result<Option<bool>, ToolError> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(ToolError::InvalidArgs(format!("`{name}` must be true or false"))),
    }
}

/// An optional string argument (numbers spelled as strings).
pub fn optional(args: &Value, name: &str) -> Option<String> {
    crate::field(args, name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_links_are_found_among_others() {
        let link =
            r#"<https://api.github.com/x?page=1>; rel="prev", <https://api.github.com/x?page=3>; rel="next""#;
        assert_eq!(
            next_link(link).as_deref(),
            Some("https://api.github.com/x?page=3")
        );
        assert_eq!(next_link(r#"<https://a/x?page=1>; rel="first""#), None);
    }

    #[test]
    fn windows_cover_offsets_inside_a_page() {
        assert_eq!(
            Window::new(0, 30, 100),
            Window {
                first_page: 1,
                per_page: 30,
                skip: 0,
                take: 30
            }
        );
        assert_eq!(
            Window::new(25, 10, 100),
            Window {
                first_page: 3,
                per_page: 10,
                skip: 5,
                take: 10
            }
        );
        assert_eq!(Window::new(0, 500, 100).per_page, 100);
    }

    #[test]
    fn provider_messages_are_found_in_every_shape() {
        assert_eq!(
            provider_message(r#"{"message":"Bad credentials"}"#),
            "Bad credentials"
        );
        assert_eq!(
            provider_message(r#"{"errorMessages":["Issue does not exist"],"errors":{"summary":"required"}}"#),
            "Issue does not exist; summary: required"
        );
        assert_eq!(
            provider_message(r#"{"errors":[{"message":"Entity not found"}]}"#),
            "Entity not found"
        );
        assert_eq!(
            provider_message(
                r#"{"errors":[{"status":404,"title":"Not Found","detail":"Page 9 does not exist"}]}"#
            ),
            "Not Found: Page 9 does not exist"
        );
        assert_eq!(provider_message("plain text"), "plain text");
        assert!(provider_message(&"x".repeat(2000)).len() < 600);
    }

    #[test]
    fn queries_and_hosts() {
        assert_eq!(
            with_query(
                "/issues",
                &[
                    ("state", "open".into()),
                    ("labels", "".into()),
                    ("q", "a b".into())
                ]
            ),
            "/issues?state=open&q=a%20b"
        );
        assert_eq!(host_of("https://API.github.com/repos"), "api.github.com");
        assert_eq!(resolve("http://h:1/a/b?c", "/logs/2"), "http://h:1/logs/2");
        assert_eq!(resolve("http://h:1/a", "https://blob/x"), "https://blob/x");
        assert_eq!(host_of("http://127.0.0.1:8080/api"), "127.0.0.1");
        assert_eq!(host_of("http://[::1]:80/"), "::1");
        assert_eq!(uint(&json!({"limit": 5}), "limit", 30).unwrap(), 5);
        assert!(uint(&json!({"limit": -1}), "limit", 30).is_err());
    }

    #[test]
    fn catalog_tools_get_a_title_and_say_what_they_do() {
        let read = catalog_tool("get_issue_comments", "issue_tracker", "d");
        assert_eq!(read.title.as_deref(), Some("Get issue comments"));
        assert_eq!(read.category.as_deref(), Some("issue_tracker"));
        assert_eq!(read.annotations, ToolAnnotations::READ_ONLY.open_world(true));
        let write = catalog_tool("update_issue", "issue_tracker", "d").annotations;
        assert_eq!(
            (write.read_only, write.destructive, write.open_world),
            (Some(false), Some(false), Some(true))
        );
        let delete = catalog_tool("delete_asset", "issue_tracker", "d").annotations;
        assert_eq!((delete.read_only, delete.destructive), (Some(false), Some(true)));
    }
}
