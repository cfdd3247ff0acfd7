//! The `call-context` resource: a running tool call as lent to a tool
//! plugin's `execute` (its id, whether it was cancelled, where its progress
//! goes).

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// A running tool call, lent to a tool plugin's `execute`.
pub struct CallContext {
    pub call_id: String,
    pub cancelled: Arc<AtomicBool>,
    pub progress: Option<ProgressFn>,
}

/// Receives a tool's progress reports: (progress, total, message).
pub type ProgressFn = Arc<dyn Fn(f64, Option<f64>, Option<String>) + Send + Sync>;
