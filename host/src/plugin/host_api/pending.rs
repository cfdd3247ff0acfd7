//! Requests a plugin started and has not waited for yet (`http.start`,
//! contract 0.3), and the caps on how many may be in flight.
//!
//! A started request runs on a task of its own, on the same path as
//! `fetch` (`HttpGrant::check` while the plugin waits, so a refused request
//! is refused at `start`; `HttpGrant::send` on the task). It holds two
//! permits while it runs: one of its call's (`limits.requests_per_call`)
//! and one of its plugin's, shared by all the plugin's instances
//! (`limits.requests_in_flight`). A `start` that finds either spent is
//! refused at once, never queued, so a plugin starting requests in a loop
//! reaches no server past its caps.
//!
//! A request is aborted when its handle is dropped (by the plugin, or with
//! the store when a call is cut off or its instance discarded), and every
//! request of a call is aborted when the call ends, so none outlives the
//! call that started it, whatever the plugin keeps. This module does not
//! check or send requests: that is `plugin::http`'s.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::{AbortHandle, JoinHandle};

use crate::plugin::wit::latest::http::{HttpError, Response};

/// A started request: its task, aborted when this is dropped.
pub struct Pending {
    task: JoinHandle<Result<Response, HttpError>>,
}

impl Pending {
    /// The request's response, once it has one.
    pub async fn wait(mut self) -> Result<Response, HttpError> {
        match (&mut self.task).await {
            Ok(answer) => answer,
            Err(e) if e.is_cancelled() => Err(HttpError::Transport(
                "the request was aborted: the call that started it ended".into(),
            )),
            Err(_) => Err(HttpError::Transport("the request's task failed".into())),
        }
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The requests one call of one instance has started: their cap, and a
/// handle on each to abort them when the call ends.
pub struct CallRequests {
    permits: Arc<Semaphore>,
    started: Vec<AbortHandle>,
}

impl CallRequests {
    pub fn new(cap: usize) -> Self {
        Self {
            permits: Arc::new(Semaphore::new(cap)),
            started: Vec::new(),
        }
    }

    /// Abort every request this call started and start counting afresh.
    /// A call that started none (most calls: every enricher hook) costs
    /// nothing here.
    pub fn end(&mut self, cap: usize) {
        if self.started.is_empty() {
            return;
        }
        for task in self.started.drain(..) {
            task.abort();
        }
        // An aborted task gives its permit back only when the runtime drops
        // it, which may be after the next call begins: that call counts
        // afresh.
        self.permits = Arc::new(Semaphore::new(cap));
    }
}

impl Drop for CallRequests {
    fn drop(&mut self) {
        for task in &self.started {
            task.abort();
        }
    }
}

/// Spawn `send` as a started request of `plugin`, if both caps allow one
/// more: `call` (this call's) and `in_flight` (the plugin's).
pub fn start<F>(
    plugin: &str,
    call: &mut CallRequests,
    in_flight: &Arc<Semaphore>,
    caps: (usize, usize),
    send: F,
) -> Result<Pending, HttpError>
where
    F: Future<Output = Result<Response, HttpError>> + Send + 'static,
{
    let (per_call, per_plugin) = caps;
    let refused = |cap: usize, key: &str, whose: &str| {
        HttpError::TooManyInFlight(format!(
            "plugin `{plugin}` has {cap} requests in flight {whose}, its cap \
             (limits.{key} = {cap}): wait for one before starting another"
        ))
    };
    let call_permit = call
        .permits
        .clone()
        .try_acquire_owned()
        .map_err(|_| refused(per_call, "max_requests_per_call", "in this call"))?;
    let plugin_permit = in_flight
        .clone()
        .try_acquire_owned()
        .map_err(|_| refused(per_plugin, "max_requests_in_flight", "over all its calls"))?;
    let task = tokio::spawn(async move {
        let _permits: (OwnedSemaphorePermit, OwnedSemaphorePermit) = (call_permit, plugin_permit);
        send.await
    });
    // Handles of requests already done are let go, so a call that starts
    // and waits in a loop holds at most its cap of them.
    call.started.retain(|t| !t.is_finished());
    call.started.push(task.abort_handle());
    Ok(Pending { task })
}
