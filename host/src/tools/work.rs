//! Where the file tools' blocking work runs: off the async workers, on at
//! most [`MAX_FILE_WORKERS`] threads at once per host, each call answered by
//! [`FILE_WORK_DEADLINE`] whether or not its thread is done.
//!
//! Opens do not block ([`open_regular`](super::root::open_regular)) and
//! walks stop at [`FILE_WORK_BUDGET`]; this is what holds when the disk
//! itself stalls (a hung network mount): a stuck thread keeps its place
//! until it returns, so stuck work can take the file tools' share of the
//! blocking pool and no more, and a call that finds every place taken is
//! refused at the deadline instead of queueing forever.
//!
//! It owns when and where file work runs, not what it does.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;

use super::ToolError;
use crate::bounds::native::{FILE_WORK_BUDGET, FILE_WORK_DEADLINE, MAX_FILE_WORKERS};

/// The threads file work may take, and how long a call waits for it.
pub(super) struct FileWork {
    places: Arc<Semaphore>,
    budget: Duration,
    deadline: Duration,
}

impl FileWork {
    pub fn new() -> Self {
        Self::bounded(MAX_FILE_WORKERS, FILE_WORK_BUDGET, FILE_WORK_DEADLINE)
    }

    fn bounded(workers: usize, budget: Duration, deadline: Duration) -> Self {
        Self {
            places: Arc::new(Semaphore::new(workers)),
            budget,
            deadline,
        }
    }

    /// Run `work` on a blocking thread once one of the places is free; it is
    /// given the instant by which a walk should answer what it has. `tool`
    /// names the call in the errors.
    pub async fn run<T: Send + 'static>(
        &self,
        tool: &str,
        work: impl FnOnce(Instant) -> Result<T, ToolError> + Send + 'static,
    ) -> Result<T, ToolError> {
        let started = tokio::time::Instant::now();
        let deadline = started + self.deadline;
        let place = tokio::time::timeout_at(deadline, self.places.clone().acquire_owned())
            .await
            .map_err(|_| {
                ToolError::Failed(format!(
                    "{tool}: the file tools are all busy (for {} s); try again later",
                    self.deadline.as_secs()
                ))
            })?
            .expect("the semaphore is never closed");
        let budget = Instant::now() + self.budget;
        let task = tokio::task::spawn_blocking(move || {
            // The place is given back when the work returns, not when the
            // caller stops waiting.
            let _place = place;
            work(budget)
        });
        match tokio::time::timeout_at(deadline, task).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(e)) => Err(ToolError::Failed(format!("{tool}: native tool panicked: {e}"))),
            Err(_) => Err(ToolError::Failed(format!(
                "{tool}: the file system did not answer within {} s",
                self.deadline.as_secs()
            ))),
        }
    }
}
