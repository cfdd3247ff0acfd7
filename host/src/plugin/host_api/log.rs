//! A plugin's log: the lines it writes through `log()`, stdout and stderr,
//! where they go, and the per-call cap and redaction every line passes.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use super::state::PluginIdentity;
use crate::bounds::{MAX_LOG_LINE, MAX_LOG_LINES_PER_CALL, cut};
use crate::plugin::http::CallSecrets;

/// The level of a plugin's log line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// Finest detail.
    Trace,
    /// Detail for debugging.
    Debug,
    /// Normal operation.
    Info,
    /// Something looks wrong.
    Warn,
    /// Something failed.
    Error,
}

/// One line a plugin logged, through `log()` or its stdout or stderr.
#[derive(Debug, Clone, serde::Serialize)]
pub struct LogLine {
    /// The plugin that wrote it.
    pub plugin: Arc<str>,
    /// Its level.
    pub level: LogLevel,
    /// `log`, `stdout` or `stderr`.
    pub stream: &'static str,
    /// Its text.
    pub message: String,
}

/// Where plugin log lines go. The default sends them to `tracing`.
pub type LogSink = Arc<dyn Fn(LogLine) + Send + Sync>;

/// A sink that writes plugin log lines to `tracing`, under the target `plugin`.
pub fn tracing_sink() -> LogSink {
    Arc::new(|line: LogLine| {
        let (plugin, stream, msg) = (&*line.plugin, line.stream, &line.message);
        match line.level {
            LogLevel::Trace => tracing::trace!(target: "plugin", plugin, stream, "{msg}"),
            LogLevel::Debug => tracing::debug!(target: "plugin", plugin, stream, "{msg}"),
            LogLevel::Info => tracing::info!(target: "plugin", plugin, stream, "{msg}"),
            LogLevel::Warn => tracing::warn!(target: "plugin", plugin, stream, "{msg}"),
            LogLevel::Error => tracing::error!(target: "plugin", plugin, stream, "{msg}"),
        }
    })
}

/// Shared between a store's log streams and its `log()` import, so the
/// per-call line cap and the redaction of secrets cover all three.
pub(crate) struct LogBudget {
    identity: Arc<PluginIdentity>,
    lines: AtomicU32,
    /// The per-caller secrets of the call in progress, redacted too.
    call: std::sync::Mutex<Option<Arc<CallSecrets>>>,
}

impl LogBudget {
    pub fn new(identity: Arc<PluginIdentity>) -> Self {
        Self {
            identity,
            lines: AtomicU32::new(0),
            call: std::sync::Mutex::new(None),
        }
    }

    /// A new call: its lines count from zero, and no caller's secret is
    /// lent to it yet.
    pub fn reset(&self) {
        self.lines.store(0, Ordering::Relaxed);
        self.lend(None);
    }

    /// The per-caller secrets of the call in progress, scrubbed from its
    /// lines like the shared ones.
    pub fn lend(&self, secrets: Option<Arc<CallSecrets>>) {
        *self.call.lock().unwrap_or_else(|e| e.into_inner()) = secrets;
    }

    pub fn emit(&self, level: LogLevel, stream: &'static str, mut message: String) {
        let n = self.lines.fetch_add(1, Ordering::Relaxed);
        if n > MAX_LOG_LINES_PER_CALL {
            return;
        }
        if n == MAX_LOG_LINES_PER_CALL {
            message =
                format!("(log cap of {MAX_LOG_LINES_PER_CALL} lines per call reached; dropping the rest)");
        }
        // Before the cut, so no part of a secret survives it.
        self.identity.http.redactor().string(&mut message);
        if let Some(call) = &*self.call.lock().unwrap_or_else(|e| e.into_inner()) {
            call.redactor().string(&mut message);
        }
        (self.identity.log)(LogLine {
            plugin: self.identity.name.clone(),
            level,
            stream,
            message: cut(message, MAX_LOG_LINE),
        });
    }
}
