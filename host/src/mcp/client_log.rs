//! Plugin and upstream log lines sent to MCP clients as
//! `notifications/message`, with `logger` the plugin's or upstream
//! server's name.
//!
//! [`ClientLog`] is the hub: its [`ClientLog::sink`] is the runtime's log
//! sink (and the upstream servers'), so every line still reaches the host's
//! own log as well. Each client session ([`SessionLog`]) has its own level,
//! set by `logging/setLevel` and [`DEFAULT_LEVEL`] until then, and its own
//! token bucket ([`BURST`] lines, refilled at [`RATE_PER_S`] a second): the
//! lines over the rate are dropped, and one summary line per run of drops
//! says how many. A session whose client reads too slowly misses lines the
//! same way, counted in the same summary.
//!
//! Owns the delivery, not the content: lines arrive redacted (each source
//! redacts its own secrets, see `plugin::redact`) and already cut to length,
//! and each leaves through the [`Redact`] its session follows with (the
//! host's gate, `crate::gate`), which knows every source's secrets.
//!
//! The upstream servers' connections log through [`ClientLog::sink`] too,
//! as any [`LogSink`]: they know the sink, not this hub.

#![allow(deprecated)] // rmcp marks MCP logging deprecated (SEP-2577); clients still use it.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
use rmcp::service::{Peer, RoleServer};
use serde_json::Value;
use tokio::sync::broadcast;
use tokio::time::Instant;

use crate::plugin::{LogLevel, LogLine, LogSink};

/// The level a session gets until it sends `logging/setLevel`: warnings and
/// errors, so a client that never asks is not flooded with debug output.
pub const DEFAULT_LEVEL: LoggingLevel = LoggingLevel::Warning;
/// Lines a session may be sent at once.
pub const BURST: f64 = 50.0;
/// Lines a second a session is sent over time.
pub const RATE_PER_S: f64 = 20.0;
/// Lines held for sessions that have not read them yet.
const BACKLOG: usize = 1024;
/// How often an idle session checks that its client is still there.
const CLOSED_CHECK: Duration = Duration::from_secs(5);
/// The logger of the lines toolhost itself adds (the drop summaries).
const OWN_LOGGER: &str = "toolhost";

/// What a line's text passes last on its way to a client.
pub type Redact = Arc<dyn Fn(&str) -> String + Send + Sync>;

/// The hub every log line passes through on its way to the sessions.
#[derive(Clone)]
pub struct ClientLog {
    lines: broadcast::Sender<Arc<LogLine>>,
}

impl Default for ClientLog {
    fn default() -> Self {
        Self {
            lines: broadcast::channel(BACKLOG).0,
        }
    }
}

impl ClientLog {
    /// A sink that hands each line to `next` (the host's own log) and to
    /// every session following this hub.
    pub fn sink(&self, next: LogSink) -> LogSink {
        let lines = self.lines.clone();
        Arc::new(move |line: LogLine| {
            let line = Arc::new(line);
            // No session is following: nobody to tell.
            let _ = lines.send(line.clone());
            next(Arc::unwrap_or_clone(line));
        })
    }

    /// Send `line`, toolhost's own, to every session following this hub
    /// (the host's own log has it already).
    pub(crate) fn tell(&self, line: LogLine) {
        // No session is following: nobody to tell.
        let _ = self.lines.send(Arc::new(line));
    }

    /// The state of one new client session, at `DEFAULT_LEVEL`. It
    /// holds the lines logged from now on: a client may call a tool the
    /// moment it has sent `notifications/initialized`, before the server
    /// has handled that notification, and the call's lines are its own.
    pub fn session(&self) -> SessionLog {
        SessionLog {
            lines: Mutex::new(Some(self.lines.subscribe())),
            level: Arc::new(AtomicU8::new(rank(DEFAULT_LEVEL))),
        }
    }
}

/// One client session's level and the lines held for it until
/// [`SessionLog::follow`] starts sending them.
pub struct SessionLog {
    lines: Mutex<Option<broadcast::Receiver<Arc<LogLine>>>>,
    level: Arc<AtomicU8>,
}

impl SessionLog {
    /// `logging/setLevel`: lines below `level` are no longer sent.
    pub fn set_level(&self, level: LoggingLevel) {
        self.level.store(rank(level), Ordering::Relaxed);
    }

    /// Send this session its lines, from its start on, each through
    /// `redact`, until its client goes away; once only. Must run inside a
    /// Tokio runtime.
    pub fn follow(&self, peer: Peer<RoleServer>, redact: Redact) {
        let lines = self.lines.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(lines) = lines {
            tokio::spawn(forward(lines, peer, self.level.clone(), redact));
        }
    }
}

/// The MCP level of a plugin's level (MCP has no trace).
fn mcp_level(level: LogLevel) -> LoggingLevel {
    match level {
        LogLevel::Trace | LogLevel::Debug => LoggingLevel::Debug,
        LogLevel::Info => LoggingLevel::Info,
        LogLevel::Warn => LoggingLevel::Warning,
        LogLevel::Error => LoggingLevel::Error,
    }
}

/// Severity order (`LoggingLevel` has none).
fn rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

/// A token bucket: [`BURST`] tokens, refilled at [`RATE_PER_S`].
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Bucket {
    fn full() -> Self {
        Self {
            tokens: BURST,
            at: Instant::now(),
        }
    }

    fn refill(&mut self) {
        let now = Instant::now();
        self.tokens = (self.tokens + (now - self.at).as_secs_f64() * RATE_PER_S).min(BURST);
        self.at = now;
    }

    fn take(&mut self) -> bool {
        self.refill();
        let ok = self.tokens >= 1.0;
        if ok {
            self.tokens -= 1.0;
        }
        ok
    }

    /// When the next token is there.
    fn next_token(&self) -> Instant {
        self.at + Duration::from_secs_f64(((1.0 - self.tokens) / RATE_PER_S).max(0.0))
    }
}

/// Lines dropped since the last summary, and the most severe of them.
#[derive(Default)]
struct Dropped {
    count: u64,
    worst: u8,
}

impl Dropped {
    fn add(&mut self, count: u64, level: LoggingLevel) {
        self.count += count;
        self.worst = self.worst.max(rank(level));
    }

    /// The summary line, at the level of the worst line dropped so that a
    /// session that asked for those lines sees it.
    fn summary(&mut self) -> LoggingMessageNotificationParam {
        let level = [
            LoggingLevel::Debug,
            LoggingLevel::Info,
            LoggingLevel::Notice,
            LoggingLevel::Warning,
            LoggingLevel::Error,
            LoggingLevel::Critical,
            LoggingLevel::Alert,
            LoggingLevel::Emergency,
        ][usize::from(self.worst)];
        let text = format!(
            "{} log lines dropped: over the rate of {RATE_PER_S} lines a second (bursts of {BURST})",
            self.count
        );
        *self = Self::default();
        notification(level, OWN_LOGGER, text)
    }
}

fn notification(level: LoggingLevel, logger: &str, text: String) -> LoggingMessageNotificationParam {
    let mut note = LoggingMessageNotificationParam::new(level, Value::String(text));
    note.logger = Some(logger.to_owned());
    note
}

/// Send one session its lines: filtered by its level, limited by its bucket.
async fn forward(
    mut lines: broadcast::Receiver<Arc<LogLine>>,
    peer: Peer<RoleServer>,
    level: Arc<AtomicU8>,
    redact: Redact,
) {
    let mut bucket = Bucket::full();
    let mut dropped = Dropped::default();
    loop {
        let summary_at = (dropped.count > 0).then(|| bucket.next_token());
        let note = tokio::select! {
            line = lines.recv() => match line {
                Ok(line) => {
                    let line_level = mcp_level(line.level);
                    if rank(line_level) < level.load(Ordering::Relaxed) {
                        continue;
                    }
                    if !bucket.take() {
                        dropped.add(1, line_level);
                        continue;
                    }
                    if dropped.count > 0 && peer.notify_logging_message(dropped.summary()).await.is_err() {
                        return;
                    }
                    notification(line_level, &line.plugin, redact(&line.message))
                }
                // Lines this session fell behind on, of unknown level.
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    dropped.count += n;
                    continue;
                }
                Err(broadcast::error::RecvError::Closed) => return,
            },
            () = tokio::time::sleep_until(summary_at.unwrap_or_else(Instant::now)), if summary_at.is_some() => {
                bucket.refill();
                dropped.summary()
            }
            () = tokio::time::sleep(CLOSED_CHECK) => {
                if peer.is_transport_closed() {
                    return;
                }
                continue;
            }
        };
        if peer.notify_logging_message(note).await.is_err() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bucket_allows_a_burst_then_the_rate() {
        let mut bucket = Bucket::full();
        let taken = (0..200).filter(|_| bucket.take()).count();
        // The burst, plus what refilled while taking (a few µs' worth).
        assert!((50..=51).contains(&taken), "{taken}");
        assert!(bucket.next_token() > bucket.at);
    }

    #[test]
    fn the_summary_counts_and_takes_the_worst_level() {
        let mut dropped = Dropped::default();
        dropped.add(3, LoggingLevel::Info);
        dropped.add(2, LoggingLevel::Error);
        let note = dropped.summary();
        assert_eq!(note.level, LoggingLevel::Error);
        assert_eq!(note.logger.as_deref(), Some("toolhost"));
        assert!(
            note.data.as_str().unwrap().starts_with("5 log lines dropped"),
            "{:?}",
            note.data
        );
        assert_eq!(dropped.count, 0);
    }

    #[test]
    fn levels_map_both_ways() {
        assert_eq!(mcp_level(LogLevel::Trace), LoggingLevel::Debug);
        assert_eq!(mcp_level(LogLevel::Warn), LoggingLevel::Warning);
        assert!(rank(LoggingLevel::Warning) > rank(LoggingLevel::Info));
    }
}
