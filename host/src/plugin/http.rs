//! The host side of `toolhost:plugin/http`: outgoing requests limited to
//! the hosts the user granted a plugin, with granted secrets added as
//! headers by the host.
//!
//! A plugin with no `grants.http` can still call `fetch`; every request is
//! refused with `host-not-allowed`. Redirects are not followed (a granted
//! host could otherwise bounce a request, and its secret headers, to an
//! ungranted one). Bodies are read up to the plugin's output cap.

use std::time::Duration;

use super::bindings::http::{HttpError, Request, Response};
use super::manifest::Grants;
use crate::redact::Redactor;

/// What one plugin may reach, resolved at load.
pub struct HttpGrant {
    hosts: Vec<String>,
    /// (header, value, hosts) for each secret whose variable is set.
    secrets: Vec<(String, String, Vec<String>)>,
    /// Replaces the secret values in what the plugin logs.
    redactor: Redactor,
    client: Option<reqwest::Client>,
}

impl HttpGrant {
    pub fn none() -> Self {
        Self {
            hosts: Vec::new(),
            secrets: Vec::new(),
            redactor: Redactor::default(),
            client: None,
        }
    }

    /// Resolve `grants`; secrets are read from the host's environment now.
    /// A secret whose variable is unset is an error naming it.
    pub fn new(grants: &Grants) -> Result<Self, String> {
        if grants.http.is_empty() {
            return Ok(Self::none());
        }
        let mut secrets = Vec::new();
        let mut values = Vec::new();
        for (name, s) in &grants.secrets {
            let value = std::env::var(&s.env).map_err(|_| {
                format!(
                    "secret `{name}` needs the environment variable {}, which is not set",
                    s.env
                )
            })?;
            secrets.push((s.header.clone(), format!("{}{value}", s.prefix), s.hosts.clone()));
            values.push(value);
        }
        let client = crate::http_client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
        Ok(Self {
            hosts: grants.http.clone(),
            secrets,
            redactor: Redactor::new(values),
            client: Some(client),
        })
    }

    pub fn hosts(&self) -> &[String] {
        &self.hosts
    }

    /// Replaces this plugin's secret values (a granted host may echo them
    /// back, so the plugin can know them).
    pub fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    pub async fn fetch(
        &self,
        req: Request,
        deadline: Duration,
        max_body: usize,
    ) -> Result<Response, HttpError> {
        let url = reqwest::Url::parse(&req.url)
            .map_err(|e| HttpError::InvalidRequest(format!("{}: {e}", req.url)))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(HttpError::InvalidRequest(format!(
                "unsupported scheme `{}`",
                url.scheme()
            )));
        }
        let authority = match (url.host_str(), url.port()) {
            (Some(h), Some(p)) => format!("{h}:{p}"),
            (Some(h), None) => h.to_owned(),
            (None, _) => {
                return Err(HttpError::InvalidRequest(format!("{} has no host", req.url)));
            }
        };
        let (Some(client), true) = (&self.client, self.hosts.contains(&authority)) else {
            return Err(HttpError::HostNotAllowed(authority));
        };
        let method = reqwest::Method::from_bytes(req.method.as_bytes())
            .map_err(|_| HttpError::InvalidRequest(format!("bad method `{}`", req.method)))?;
        let mut builder = client.request(method, url).timeout(deadline);
        for (name, value) in &req.headers {
            builder = builder.header(name, value);
        }
        for (header, value, hosts) in &self.secrets {
            if hosts.contains(&authority) {
                builder = builder.header(header, value);
            }
        }
        if let Some(body) = req.body {
            builder = builder.body(body);
        }
        let mut response = builder.send().await.map_err(transport)?;
        let status = response.status().as_u16();
        let headers = response
            .headers()
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_owned(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect();
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(transport)? {
            if body.len() + chunk.len() > max_body {
                return Err(HttpError::TooLarge((body.len() + chunk.len()) as u64));
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Response {
            status,
            headers,
            body,
        })
    }
}

fn transport(e: reqwest::Error) -> HttpError {
    if e.is_timeout() {
        HttpError::Timeout
    } else {
        HttpError::Transport(e.to_string())
    }
}
