//! `[speculation]` in `toolhost.toml`: whether and how far the host calls
//! tools ahead of time. Every key is optional.
//!
//! What may be prefetched at all is decided by value models (only `pure`
//! and `read-only` tools, never more). These settings then say where it is
//! switched on: the native local file tools by default (`native`), network
//! hosts by name (`hosts`, for `web_fetch` and tool plugins, whose host
//! comes from the enrichers' `rate-limit-host` or the value model, and must
//! be one the tool's plugin is granted), and each upstream MCP server by its
//! own `speculate` key. Hosts are compared by name ([`hostname`]).
//! `reread_changed` reads a cached file again when the agent edits it.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use super::planner::PlannerOptions;
use crate::cluster::Cluster;

/// `[speculation]` of toolhost.toml: whether and how far the host calls tools ahead of the model.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Settings {
    /// The master switch.
    pub enabled: bool,
    /// Prefetch the native local tools (read, glob, grep, ls).
    pub native: bool,
    /// With `native`: read a file the cache holds again, ahead of the
    /// agent, when it changes behind the host's back (a watch on its
    /// directory sees the agent's own edits).
    pub reread_changed: bool,
    /// Learn follow-up links from the values that flow between calls, and
    /// plan them (off: only declared links are planned).
    pub learn: bool,
    /// Network hosts whose tools may be prefetched; `"*"` allows any.
    pub hosts: Vec<String>,
    /// Follow-ups less likely than this are not made.
    pub probability_floor: f32,
    /// Estimated tokens of prefetched results per call that ran.
    pub budget_tokens: u32,
    /// Prefetches in flight at once, over all tools.
    pub max_in_flight: usize,
    /// Backend calls that prefetches may add, as a share of the real
    /// calls: prefetches made and not used yet count against it.
    pub max_extra_calls: f32,
    /// What one backend call that no real call uses costs, in milliseconds
    /// of the agent's wait: a prefetch is made only when its chance of
    /// being called × its tool's latency exceeds the other outcome × this
    /// (raised as `max_extra_calls` fills). Fast reads are rarely worth
    /// it, 300 ms vendor calls mostly are. 0 switches this gate off.
    pub call_cost_ms: f32,
    /// Prefetches in flight at once against one host.
    pub per_host: usize,
    /// A prefetch still running after this is cancelled.
    pub timeout_ms: u64,
    /// Bytes of prefetched results kept, in MiB.
    pub cache_mb: usize,
    /// Lifetime of a result whose value model sets no freshness TTL.
    pub default_ttl_s: u64,
    /// Where `toolhost serve` writes its statistics for `toolhost stats`
    /// (default: `stats.json` in the cache directory).
    pub stats_file: Option<PathBuf>,
    /// The replicas prefetches are shared with (`[cluster]` in the
    /// configuration, connected by the embedder), if any.
    #[serde(skip)]
    pub cluster: Option<Arc<Cluster>>,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            enabled: true,
            native: true,
            reread_changed: true,
            learn: true,
            hosts: Vec::new(),
            probability_floor: PlannerOptions::default().min_probability,
            budget_tokens: PlannerOptions::default().budget_tokens,
            max_in_flight: 8,
            max_extra_calls: 0.25,
            call_cost_ms: 10.0,
            per_host: 4,
            timeout_ms: 10_000,
            cache_mb: 16,
            default_ttl_s: 30,
            stats_file: None,
            cluster: None,
        }
    }
}

impl Settings {
    /// Speculation switched off.
    pub fn off() -> Self {
        Self {
            enabled: false,
            ..Self::default()
        }
    }

    pub(crate) fn planner(&self) -> PlannerOptions {
        PlannerOptions {
            min_probability: self.probability_floor,
            budget_tokens: self.budget_tokens,
            ..PlannerOptions::default()
        }
    }

    /// How long a prefetch may run.
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms)
    }

    pub(crate) fn default_ttl(&self) -> Duration {
        Duration::from_secs(self.default_ttl_s)
    }

    pub(crate) fn cache_bytes(&self) -> usize {
        self.cache_mb.saturating_mul(1 << 20)
    }

    /// Whether prefetches against `host` are switched on.
    pub fn allows_host(&self, host: &str) -> bool {
        let host = hostname(host);
        self.hosts.iter().any(|h| h == "*" || hostname(h) == host)
    }
}

/// The host name in `s` (a bare host, `host:port`, or a URL), lower-cased,
/// without port or trailing dot: what hosts are compared by, so that
/// `API.github.com.:443` is one host (one per-host cap) with `api.github.com`.
pub fn hostname(s: &str) -> String {
    let rest = s.split_once("://").map_or(s, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let authority = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => authority.split(':').next().unwrap_or_default(),
    };
    host.trim_end_matches('.').to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_compare_by_name_alone() {
        for same in [
            "api.github.com",
            "API.GitHub.com.",
            "api.github.com:443",
            "https://api.github.com/x",
        ] {
            assert_eq!(hostname(same), "api.github.com", "{same}");
        }
        assert_eq!(hostname("[::1]:8080"), "::1");
        assert_eq!(hostname("http://user@127.0.0.1:1/"), "127.0.0.1");
        let on = Settings {
            hosts: vec!["Api.GitHub.com".into()],
            ..Settings::default()
        };
        assert!(on.allows_host("api.github.com:443"));
        assert!(!on.allows_host("api.github.com.evil.test"));
    }
}
