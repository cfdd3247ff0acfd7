//! Origins as `grants.http` and a secret's `hosts` name them: a scheme, a
//! host and a port, compared exactly.
//!
//! A bare `api.github.com` is `https://api.github.com:443`, and
//! `api.github.com:8443` is https on 8443: cleartext is never implied.
//! `http://127.0.0.1:8080` grants cleartext HTTP, and only where a grant
//! says `http://`. A grant names an origin, never a path, user or query,
//! and has no wildcards. Parsing is the URL standard's (`url`, through
//! reqwest), the same parser a request's URL goes through, so `127.1`,
//! `LOCALHOST` and `[0::1]` compare as the URL does.

use std::fmt;
use std::net::IpAddr;

use reqwest::Url;
use serde::{Deserialize, Serialize};

/// One origin: scheme, host and port.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Origin {
    https: bool,
    /// As the URL standard serialises it (lower case; IPv6 in brackets).
    host: String,
    port: u16,
}

impl Origin {
    /// Parse a grant: `host`, `host:port`, or `https://` / `http://` with
    /// either.
    pub fn parse(grant: &str) -> Result<Self, String> {
        let bad = |why: &str| format!("`{grant}` is not an origin: {why}");
        if grant.contains('*') {
            return Err(bad("wildcards are not supported; list each host"));
        }
        let url = if grant.contains("://") {
            Url::parse(grant)
        } else {
            Url::parse(&format!("https://{grant}"))
        }
        .map_err(|e| bad(&e.to_string()))?;
        if !url.username().is_empty() || url.password().is_some() {
            return Err(bad("it names a user"));
        }
        if url.path() != "/" || url.query().is_some() || url.fragment().is_some() {
            return Err(bad("write only the scheme, host and port"));
        }
        Self::of(&url).ok_or_else(|| bad("the scheme must be https or http"))
    }

    /// The origin a request to `url` goes to; `None` unless it is an
    /// `http` or `https` URL with a host.
    pub fn of(url: &Url) -> Option<Self> {
        let https = match url.scheme() {
            "https" => true,
            "http" => false,
            _ => return None,
        };
        Some(Self {
            https,
            host: url.host_str()?.to_owned(),
            port: url.port_or_known_default()?,
        })
    }

    /// The host name or address, without scheme or port.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// Cleartext HTTP.
    pub fn is_cleartext(&self) -> bool {
        !self.https
    }

    /// A loopback address written as one (`127.0.0.0/8`, `[::1]`). A name
    /// such as `localhost` is not: what it resolves to is not the grant's.
    pub fn is_loopback(&self) -> bool {
        self.host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = if self.https { "https" } else { "http" };
        write!(f, "{scheme}://{}:{}", self.host, self.port)
    }
}

impl Serialize for Origin {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Origin {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Self::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin(grant: &str) -> String {
        Origin::parse(grant).unwrap().to_string()
    }

    #[test]
    fn a_bare_host_is_https_on_its_default_port() {
        assert_eq!(origin("api.github.com"), "https://api.github.com:443");
        assert_eq!(origin("API.GitHub.com:8443"), "https://api.github.com:8443");
        assert_eq!(origin("https://api.github.com/"), "https://api.github.com:443");
        assert_eq!(origin("http://127.1:8080"), "http://127.0.0.1:8080");
        assert_eq!(origin("http://[0::1]"), "http://[::1]:80");
    }

    #[test]
    fn only_origins_parse() {
        for bad in [
            "*.github.com",
            "ftp://example.com",
            "https://example.com/path",
            "https://u:p@example.com",
            "example.com?q",
            "",
        ] {
            assert!(Origin::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn loopback_is_an_address() {
        assert!(Origin::parse("http://127.0.0.2:1").unwrap().is_loopback());
        assert!(Origin::parse("http://[::1]:1").unwrap().is_loopback());
        assert!(!Origin::parse("http://localhost:1").unwrap().is_loopback());
        assert!(!Origin::parse("http://10.0.0.1").unwrap().is_loopback());
    }
}
