//! One call as its caller holds it: its identity, who makes it, the token
//! that cancels it, where its progress goes and the client session an
//! upstream server's questions go to ([`CallControl`]), a call that produced
//! no result ([`CallError`]) and such an error as the model reads it
//! ([`error_text`]). Not here: the steps a call goes through (`call`), nor
//! the call-context resource a plugin is lent during `execute` (`plugin`),
//! which is built from this.

use std::fmt::Display;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::caller::Caller;
use crate::bounds::{MAX_ERROR_TEXT, cut};
use crate::output::ToolError;
use crate::plugin::ProgressFn;
use crate::priority::Background;
use crate::tools::Urgency;
use crate::trace_context::TraceParent;
use crate::upstream::Downstream;

/// One call's identity, caller, cancellation and progress sink, held by
/// its caller.
#[derive(Clone)]
pub struct CallControl {
    /// Names the call in the plugins' call context and in logs.
    pub call_id: String,
    /// Who makes the call: the host's to know (its audit), never passed to
    /// a plugin.
    pub(crate) caller: Caller,
    /// Cancelling it ends the call: a native or upstream call at once, a
    /// plugin's at its next check ([`ToolError::Cancelled`]).
    pub cancel: CancellationToken,
    /// Where the progress the tool reports goes; `None` drops it.
    pub progress: Option<ProgressFn>,
    /// A prefetch's place behind the real calls; `None` for a real call.
    pub(crate) background: Option<Background>,
    /// The client session that made the call, which an upstream server's
    /// questions during it are relayed to; `None` for the host's own calls.
    pub(crate) client: Option<Arc<dyn Downstream>>,
    /// The span the call runs in, if it joins a trace: the upstream
    /// requests it makes carry it as their parent (`_meta.traceparent`).
    pub(crate) trace: Option<TraceParent>,
}

impl CallControl {
    /// A call named `call_id`, made by the embedder ([`Caller::embedder`]),
    /// not cancelled, whose progress is dropped.
    pub fn new(call_id: impl Into<String>) -> Self {
        Self {
            call_id: call_id.into(),
            caller: Caller::embedder(),
            cancel: CancellationToken::new(),
            progress: None,
            background: None,
            client: None,
            trace: None,
        }
    }

    /// The same call, made ahead of time: it waits for the real calls.
    pub(crate) fn in_background(mut self, background: Background) -> Self {
        self.background = Some(background);
        self
    }

    /// Whether a caller waits on this call or it is made ahead of time.
    pub(crate) fn urgency(&self) -> Urgency {
        match self.background {
            Some(_) => Urgency::Prefetch,
            None => Urgency::Call,
        }
    }

    /// Before a prefetch takes a backend: its wait for the real calls.
    pub(crate) async fn wait_turn(&self) {
        if let Some(background) = &self.background {
            background.wait_turn().await;
        }
    }

    /// The same call, made by `caller`.
    pub fn with_caller(mut self, caller: Caller) -> Self {
        self.caller = caller;
        self
    }

    /// The same call, made from `client`'s session.
    pub fn from_client(mut self, client: Arc<dyn Downstream>) -> Self {
        self.client = Some(client);
        self
    }

    /// The same call, run in the span `trace`.
    pub(crate) fn in_trace(mut self, trace: TraceParent) -> Self {
        self.trace = Some(trace);
        self
    }

    /// The same call, its progress sent to `progress`.
    pub fn with_progress(mut self, progress: ProgressFn) -> Self {
        self.progress = Some(progress);
        self
    }
}

/// Room past [`MAX_ERROR_TEXT`] for the words a [`ToolError`] wraps around
/// a text already cut to it (the tool's name, the step that failed), so that
/// text is not cut twice and its marker still counts what the source sent.
const WRAPPING: usize = 1 << 10;

/// A call that produced no result: the tool called, the plugin that serves
/// it if one does, and what went wrong. Its text is the [`ToolError`]'s, as
/// the model is to read it (through [`error_text`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{error}")]
pub struct CallError {
    /// The tool called, as the caller named it.
    pub tool: String,
    /// The plugin that serves the tool (its own, or a base-catalog tool
    /// bound to it), if a plugin does.
    pub plugin: Option<Arc<str>>,
    /// What went wrong, already redacted of every secret the host knows.
    pub error: ToolError,
}

/// An error ([`CallError`], [`ToolError`]) as the model reads it, within
/// [`MAX_ERROR_TEXT`] (and the words wrapped around it) whatever built it.
pub fn error_text(e: &impl Display) -> String {
    cut(e.to_string(), MAX_ERROR_TEXT + WRAPPING)
}
