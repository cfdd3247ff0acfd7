//! Speculation statistics outside the process: the file a running server
//! keeps up to date for `toolhost stats`, the one-line summary it logs, and
//! the human rendering of both.
//!
//! The file is rewritten whole ([`toolhost::atomic_file`], so a reader never
//! sees half of it) whenever the figures change, at most every
//! [`INTERVAL`], and once more when the server stops. Each configuration
//! file has its own by default; with several servers sharing one the last
//! writer wins, so give each its own `[speculation] stats_file`.
//!
//! The next `toolhost serve` starts from the follow-up links and the
//! per-rank record the file holds, so what agents taught one run lasts.
//!
//! With `[cluster]` configured, `toolhost stats` reads the totals every
//! replica adds to Redis instead (`toolhost::speculation` keeps them), and
//! says so.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use toolhost::Toolhost;
use toolhost::plugin::{ShadowCount, ShadowTally};
use toolhost::speculation::Snapshot;

use crate::config::Config;

/// The most of a statistics file read: the links learned are bounded, so
/// a bigger file is not one a server wrote.
const MAX_FILE_BYTES: u64 = 64 << 20;

/// How often a running server looks for new figures.
pub const INTERVAL: Duration = Duration::from_secs(5);

/// What the file holds.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Recorded {
    pub pid: u32,
    /// Seconds since the Unix epoch.
    pub updated: u64,
    pub stats: Snapshot,
    /// What each shadow candidate did, by plugin and export.
    #[serde(default)]
    pub shadows: Vec<ShadowCount>,
}

#[derive(Debug, thiserror::Error)]
pub enum StatsError {
    #[error("no statistics at {0}: start `toolhost serve` (with speculation on) first")]
    Missing(PathBuf),
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}: not a statistics file: {source}")]
    Parse {
        path: PathBuf,
        source: serde_json::Error,
    },
}

pub fn read(path: &Path) -> Result<Recorded, StatsError> {
    let io = |source: std::io::Error| match source.kind() {
        std::io::ErrorKind::NotFound => StatsError::Missing(path.into()),
        _ => StatsError::Io {
            path: path.into(),
            source,
        },
    };
    let mut text = String::new();
    std::fs::File::open(path)
        .map_err(io)?
        .take(MAX_FILE_BYTES)
        .read_to_string(&mut text)
        .map_err(io)?;
    serde_json::from_str(&text).map_err(|source| StatsError::Parse {
        path: path.into(),
        source,
    })
}

pub fn write(path: &Path, stats: &Snapshot, shadows: &[ShadowCount]) -> Result<(), StatsError> {
    let io = |source| StatsError::Io {
        path: path.into(),
        source,
    };
    let recorded = Recorded {
        pid: std::process::id(),
        updated: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        stats: stats.clone(),
        shadows: shadows.to_vec(),
    };
    let text = serde_json::to_string_pretty(&recorded).expect("statistics serialise");
    toolhost::atomic_file::replace(path, text.as_bytes()).map_err(io)
}

/// One line for the server's log.
pub fn summary(s: &Snapshot) -> String {
    format!(
        "speculation: {} prefetched, {} hits, {} joins ({:.0}% used), {} from real calls kept, {} wasted, {} stale, ~{} ms saved",
        s.dispatched,
        s.hits,
        s.joins,
        s.hit_rate() * 100.0,
        s.reused,
        s.wasted,
        s.stale,
        s.saved_ms
    )
}

/// The full report of `toolhost stats`.
pub fn render(r: &Recorded) -> String {
    let s = &r.stats;
    let mut out = format!("server pid {}, updated at {} (Unix time)\n", r.pid, r.updated);
    out.push_str(&format!(
        "prefetches dispatched {:>8}\nserved from prefetch  {:>8}  ({} from the cache, {} joined in flight)\n",
        s.dispatched,
        s.hits + s.joins,
        s.hits,
        s.joins
    ));
    out.push_str(&format!(
        "served from real calls{:>8}  (a file read or a remote read an earlier real call left; not prefetched)\n",
        s.reused
    ));
    out.push_str(&format!(
        "used per prefetch     {:>7.0}%\nwasted (unused)       {:>8}\nstale (not served)    {:>8}\ntime saved (est.)     {:>6} ms\n",
        s.hit_rate() * 100.0,
        s.wasted,
        s.stale,
        s.saved_ms
    ));
    let budget = &s.budget;
    if budget.real_calls > 0 {
        out.push_str(&format!(
            "extra backend calls   {:>8}  ({:.0}% of {} real calls: prefetches unused yet or ever, since the first run resumed)\n",
            budget.unused,
            budget.unused as f64 * 100.0 / budget.real_calls as f64,
            budget.real_calls
        ));
    }
    if s.waited > 0 {
        out.push_str(&format!(
            "waits behind real calls{:>7}  (prefetches held back while a real call ran)\n",
            s.waited
        ));
    }
    if !s.declined.is_empty() {
        out.push_str("declined:\n");
        for (reason, n) in &s.declined {
            out.push_str(&format!("  {reason:<20} {n:>8}\n"));
        }
    }
    if !s.missed.is_empty() {
        out.push_str("calls not served, by what became of their candidate:\n");
        for (why, n) in &s.missed {
            out.push_str(&format!("  {why:<20} {n:>8}\n"));
        }
    }
    if !r.shadows.is_empty() {
        out.push_str("shadow candidates (compared, same, differ, skipped):\n");
        for c in &r.shadows {
            out.push_str(&format!(
                "  {} {}: {}, {}, {}, {}\n",
                c.plugin, c.export, c.compared, c.same, c.differ, c.skipped
            ));
        }
    }
    if !s.ranks.is_empty() {
        out.push_str("follow-ups by rank (offered, called, estimate):\n");
        for k in &s.ranks {
            out.push_str(&format!(
                "  {} -> {} #{}: {}, {}, {:.2}\n",
                k.from,
                k.to,
                k.rank + 1,
                k.offered,
                k.used,
                k.estimate
            ));
        }
    }
    if !s.learned.is_empty() {
        out.push_str("links learned from values between calls (seen, planned):\n");
        for l in &s.learned {
            out.push_str(&format!(
                "  {} -> {} [{}]: {}, {}\n",
                l.from, l.to, l.projection, l.seen, l.planned
            ));
        }
    }
    out
}

/// Keep `path` (if any) and the log up to date with `host`'s figures and
/// the shadow candidates' counts until the task is aborted; the caller
/// writes the last figures itself ([`last`]).
pub fn spawn_reporter(
    host: Arc<Toolhost>,
    shadows: Arc<ShadowTally>,
    path: Option<PathBuf>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut last = None;
        loop {
            tokio::time::sleep(INTERVAL).await;
            let Some(now) = figures(&host, &shadows) else {
                continue;
            };
            if last.as_ref() == Some(&now) {
                continue;
            }
            if let Some(stats) = host.stats() {
                tracing::info!(target: "toolhost_cli::stats", "{}", summary(&stats));
            }
            if let Some(path) = &path
                && let Err(e) = write(path, &now.0, &now.1)
            {
                tracing::warn!("cannot write statistics: {e}");
            }
            last = Some(now);
        }
    })
}

/// The figures worth writing: speculation's (if on) and the shadows'
/// (if any); `None` with neither.
pub fn figures(host: &Toolhost, shadows: &ShadowTally) -> Option<(Snapshot, Vec<ShadowCount>)> {
    let (stats, shadows) = (host.stats(), shadows.counts());
    if stats.is_none() && shadows.is_empty() {
        return None;
    }
    Some((stats.unwrap_or_default(), shadows))
}

/// What every replica of a cluster counted, as `toolhost stats --json`
/// prints it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Summed {
    /// Where the totals were read (never the URL: it may hold a password).
    pub cluster: String,
    pub stats: Snapshot,
}

/// The full report of `toolhost stats` for a cluster.
pub fn render_summed(s: &Summed) -> String {
    let recorded = Recorded {
        pid: 0,
        updated: 0,
        stats: s.stats.clone(),
        shadows: Vec::new(),
    };
    let text = render(&recorded);
    let body = text.split_once('\n').map_or("", |(_, rest)| rest);
    format!("summed over every replica of the cluster ({})\n{body}", s.cluster)
}

/// Print what the last server recorded of speculation, or with a cluster
/// what every replica counted.
pub async fn run(config: &Config, as_json: bool) -> Result<ExitCode> {
    if let Some(cluster) = &config.cluster {
        let shared = toolhost::Cluster::connect(&cluster.redis, &cluster.prefix, cluster.key()?)?;
        let totals = shared
            .totals()
            .await
            .with_context(|| format!("cannot read the cluster's statistics from {}", shared.describe()))?;
        let summed = Summed {
            cluster: shared.describe(),
            stats: Snapshot::summed(&totals),
        };
        if as_json {
            crate::say!("{}", serde_json::to_string_pretty(&summed)?)?;
        } else {
            crate::say_part!("{}", render_summed(&summed))?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    let path = config
        .stats_file()
        .context("no statistics file: set [speculation] stats_file or enable the cache directory")?;
    let recorded = read(&path)?;
    if as_json {
        crate::say!("{}", serde_json::to_string_pretty(&recorded)?)?;
    } else {
        crate::say_part!("{}", render(&recorded))?;
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_round_trips_and_a_missing_one_says_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/stats.json");
        let err = read(&path).unwrap_err().to_string();
        assert!(err.contains("toolhost serve"), "{err}");
        let stats = Snapshot {
            dispatched: 4,
            hits: 3,
            reused: 5,
            waited: 2,
            missed: [("not_offered".to_owned(), 3)].into(),
            budget: toolhost::speculation::Spent {
                real_calls: 10,
                unused: 1,
            },
            ..Snapshot::default()
        };
        write(&path, &stats, &[]).unwrap();
        let back = read(&path).unwrap();
        assert_eq!(back.stats, stats);
        let text = render(&back);
        assert!(text.contains("75%"), "reuse is not counted as used: {text}");
        assert!(text.contains("served from real calls       5"), "{text}");
        assert!(text.contains("  not_offered                 3"), "{text}");
        assert!(
            text.contains("extra backend calls          1  (10% of 10 real calls"),
            "{text}"
        );
        assert!(text.contains("waits behind real calls      2"), "{text}");
        std::fs::write(&path, "{").unwrap();
        assert!(matches!(read(&path), Err(StatsError::Parse { .. })));
    }
}
