//! One call as its caller holds it: its identity, the token that cancels
//! it and where its progress goes ([`CallControl`]), and a failed call as
//! the model reads it ([`error_text`]). Not here: the steps a call goes
//! through (`steps`), nor the call-context resource a plugin is lent
//! during `execute` (`plugin`), which is built from this.

use tokio_util::sync::CancellationToken;

use crate::bounds::{MAX_ERROR_TEXT, cut};
use crate::output::ToolError;
use crate::plugin::ProgressFn;

/// One call's identity, cancellation and progress sink, held by its caller.
#[derive(Clone)]
pub struct CallControl {
    pub call_id: String,
    pub cancel: CancellationToken,
    pub progress: Option<ProgressFn>,
}

impl CallControl {
    pub fn new(call_id: impl Into<String>) -> Self {
        Self {
            call_id: call_id.into(),
            cancel: CancellationToken::new(),
            progress: None,
        }
    }

    pub fn with_progress(mut self, progress: ProgressFn) -> Self {
        self.progress = Some(progress);
        self
    }
}

/// Room past [`MAX_ERROR_TEXT`] for the words a [`ToolError`] wraps around
/// a text already cut to it (the tool's name, the step that failed), so that
/// text is not cut twice and its marker still counts what the source sent.
const WRAPPING: usize = 1 << 10;

/// A tool error as the model reads it, within [`MAX_ERROR_TEXT`] (and the
/// words wrapped around it) whatever built it.
pub fn error_text(e: &ToolError) -> String {
    cut(e.to_string(), MAX_ERROR_TEXT + WRAPPING)
}
