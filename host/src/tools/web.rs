//! `web_fetch`: HTTP(S) GET of a text page from a host the configuration
//! allows. Redirects are followed only to allowed hosts, the body is cut at
//! a size cap, and non-text content types are refused. No host is allowed
//! unless configured.

use std::time::Duration;

use serde::Deserialize;
use serde_json::json;

use super::{CallOutput, ToolError, result};

/// What `web_fetch` may reach (the `[web]` table of `toolhost.toml`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WebSettings {
    /// Host names allowed (exact match, or `*.example.com` for subdomains).
    pub allowed_hosts: Vec<String>,
    /// Body bytes kept; the rest is cut.
    pub max_bytes: usize,
    /// Whole-request timeout, in seconds.
    pub timeout_s: u64,
}

impl Default for WebSettings {
    fn default() -> Self {
        Self {
            allowed_hosts: Vec::new(),
            max_bytes: 512 << 10,
            timeout_s: 20,
        }
    }
}

impl WebSettings {
    fn allows(&self, host: &str) -> bool {
        self.allowed_hosts
            .iter()
            .any(|allowed| match allowed.strip_prefix("*.") {
                Some(domain) => host.strip_suffix(domain).is_some_and(|sub| sub.ends_with('.')),
                None => allowed.eq_ignore_ascii_case(host),
            })
    }
}

pub struct Fetcher {
    settings: WebSettings,
    client: reqwest::Client,
}

impl Fetcher {
    pub fn new(settings: WebSettings) -> Result<Self, reqwest::Error> {
        let policy = settings.clone();
        let client = crate::http_client::builder()
            .timeout(Duration::from_secs(settings.timeout_s))
            .redirect(reqwest::redirect::Policy::custom(move |attempt| {
                let allowed = attempt.url().host_str().is_some_and(|h| policy.allows(h));
                if attempt.previous().len() >= 5 {
                    attempt.error("too many redirects")
                } else if allowed {
                    attempt.follow()
                } else {
                    attempt.error("redirect to a host that is not allowed")
                }
            }))
            .build()?;
        Ok(Self { settings, client })
    }

    pub async fn fetch(&self, url: &str) -> Result<CallOutput, ToolError> {
        let parsed =
            reqwest::Url::parse(url).map_err(|e| ToolError::InvalidArgs(format!("url: `{url}`: {e}")))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(ToolError::InvalidArgs(format!(
                "url: only http and https are fetched, not `{}`",
                parsed.scheme()
            )));
        }
        let host = parsed.host_str().unwrap_or_default();
        if !self.settings.allows(host) {
            return Err(ToolError::InvalidArgs(format!(
                "url: host `{host}` is not allowed (configure [web] allowed_hosts)"
            )));
        }
        let mut response = self
            .client
            .get(parsed)
            .send()
            .await
            .map_err(|e| ToolError::Failed(format!("GET {url}: {}", crate::error_chain(&e))))?;
        let status = response.status();
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        if !is_text(&content_type) {
            return Err(ToolError::Failed(format!(
                "GET {url}: `{content_type}` is not a text page"
            )));
        }
        let mut body = Vec::new();
        let mut truncated = false;
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| ToolError::Failed(format!("GET {url}: {e}")))?
        {
            let room = self.settings.max_bytes - body.len();
            if chunk.len() > room {
                body.extend_from_slice(&chunk[..room]);
                truncated = true;
                break;
            }
            body.extend_from_slice(&chunk);
        }
        let content = String::from_utf8_lossy(&body).into_owned();
        let mut text = format!("HTTP {}\n\n{content}", status.as_u16());
        if truncated {
            text.push_str(&format!("\n[cut at {} bytes]", self.settings.max_bytes));
        }
        let structured = json!({"url": url, "status": status.as_u16(), "content_type": content_type,
                                "content": content, "truncated": truncated});
        if status.is_success() {
            Ok(result(text, structured))
        } else {
            Err(ToolError::Failed(text))
        }
    }
}

fn is_text(content_type: &str) -> bool {
    let mime = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    mime.is_empty()
        || mime.starts_with("text/")
        || mime.ends_with("json")
        || mime.ends_with("xml")
        || mime == "application/javascript"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_match_exactly_or_by_subdomain() {
        let s = WebSettings {
            allowed_hosts: vec!["example.com".into(), "*.docs.rs".into()],
            ..WebSettings::default()
        };
        assert!(s.allows("example.com") && s.allows("a.docs.rs"));
        assert!(!s.allows("evilexample.com") && !s.allows("docs.rs") && !s.allows("xdocs.rs"));
    }
}
