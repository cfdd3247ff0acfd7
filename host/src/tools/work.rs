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
//! Quick work (a `read`, an `ls`) for a call runs in place instead while
//! the root is on a local file system with nothing mounted beneath it
//! (`locality`): there, the hand-off to a thread would cost more than the
//! work. A prefetch's never does: in place, a large file's read would hold
//! the thread a real call is served on.
//!
//! It owns when and where file work runs, not what it does.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;

use super::ToolError;
use super::locality::Locality;
use crate::bounds::native::{FILE_WORK_BUDGET, FILE_WORK_DEADLINE, MAX_FILE_WORKERS};

/// Who is waiting for file work, which decides whether quick work may run
/// in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Urgency {
    /// A call: its caller waits, so quick work may run where it is.
    Call,
    /// A prefetch: nobody waits yet, so its work always takes a blocking
    /// thread and never the one a real call is served on.
    Prefetch,
}

/// The threads file work may take, and how long a call waits for it.
pub(super) struct FileWork {
    places: Arc<Semaphore>,
    budget: Duration,
    deadline: Duration,
    locality: Arc<Locality>,
}

impl FileWork {
    /// File work under the root `root`.
    pub fn new(root: &Path) -> Self {
        Self::bounded(root, MAX_FILE_WORKERS, FILE_WORK_BUDGET, FILE_WORK_DEADLINE)
    }

    fn bounded(root: &Path, workers: usize, budget: Duration, deadline: Duration) -> Self {
        Self {
            places: Arc::new(Semaphore::new(workers)),
            budget,
            deadline,
            locality: Arc::new(Locality::new(root)),
        }
    }

    /// Run quick `work` (a read, a listing) for a call in place if the
    /// root is local and whole, as last checked; else as [`FileWork::run`]
    /// does, checking again first on the blocking thread if the last check
    /// is due.
    pub async fn run_quick<T: Send + 'static>(
        &self,
        tool: &str,
        urgency: Urgency,
        work: impl FnOnce(Instant) -> Result<T, ToolError> + Send + 'static,
    ) -> Result<T, ToolError> {
        if urgency == Urgency::Call && self.locality.in_place() == Some(true) {
            let budget = Instant::now() + self.budget;
            // A panic is the call's error here as on a thread, never the
            // caller's task's.
            return std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(budget)))
                .unwrap_or_else(|_| Err(panicked(tool)));
        }
        let locality = self.locality.clone();
        self.run(tool, move |budget| {
            if locality.in_place().is_none() {
                locality.check();
            }
            work(budget)
        })
        .await
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
            Ok(Err(_)) => Err(panicked(tool)),
            Err(_) => Err(ToolError::Failed(format!(
                "{tool}: the file system did not answer within {} s",
                self.deadline.as_secs()
            ))),
        }
    }
}

fn panicked(tool: &str) -> ToolError {
    ToolError::Failed(format!("{tool}: native tool panicked"))
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use super::*;

    const SHORT: Duration = Duration::from_millis(200);

    fn failed(answer: Result<(), ToolError>) -> String {
        match answer {
            Err(ToolError::Failed(m)) => m,
            other => panic!("not a failure: {other:?}"),
        }
    }

    #[tokio::test]
    async fn stuck_work_keeps_its_place_and_callers_are_answered() {
        let work = FileWork::bounded(Path::new("/"), 1, SHORT, SHORT);
        let (release, stuck) = mpsc::channel::<()>();
        // The disk stalls: the call is answered at the deadline anyway.
        let first = work.run("read", move |_| {
            let _ = stuck.recv();
            Ok(())
        });
        let why = failed(first.await);
        assert!(why.starts_with("read: the file system did not answer"), "{why}");
        // Its thread still holds the only place: no second thread is taken.
        let why = failed(work.run("grep", |_| Ok(())).await);
        assert!(why.starts_with("grep: the file tools are all busy"), "{why}");
        // Once the stalled read returns, its place serves the next call.
        release.send(()).unwrap();
        let mut answered = Err(ToolError::Failed("never tried".into()));
        for _ in 0..100 {
            answered = work.run("ls", |_| Ok(())).await;
            if answered.is_ok() {
                break;
            }
        }
        answered.unwrap();
    }

    #[tokio::test]
    async fn work_is_given_its_budget_and_a_panic_is_an_error_not_a_crash() {
        let work = FileWork::bounded(
            Path::new("/"),
            2,
            Duration::from_secs(3600),
            Duration::from_secs(3600),
        );
        let before = Instant::now();
        let budget = work.run("glob", Ok).await.unwrap();
        assert!(budget >= before + Duration::from_secs(3599), "{budget:?}");
        let why = failed(work.run("glob", |_| panic!("walked off a cliff")).await);
        assert!(why.starts_with("glob: native tool panicked"), "{why}");
    }

    /// The thread quick work ran on.
    async fn quick_on(work: &FileWork, urgency: Urgency) -> std::thread::ThreadId {
        work.run_quick("read", urgency, |_| Ok(std::thread::current().id()))
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn quick_work_runs_in_place_only_once_the_root_is_found_local() {
        let here = std::thread::current().id();
        // Never on a root that is not on a local file system.
        let proc = FileWork::new(Path::new("/proc"));
        for _ in 0..3 {
            assert_ne!(quick_on(&proc, Urgency::Call).await, here);
        }
        // On a local root, the first call checks (on a blocking thread),
        // and the next run in place; a prefetch's never does.
        let dir = tempfile::tempdir().unwrap();
        let local = FileWork::new(dir.path());
        assert_ne!(quick_on(&local, Urgency::Call).await, here);
        if Locality::new(dir.path()).check() {
            assert_eq!(quick_on(&local, Urgency::Call).await, here);
            assert_ne!(quick_on(&local, Urgency::Prefetch).await, here);
            let read = local.run_quick("read", Urgency::Call, |_| panic!("read off a cliff"));
            assert_eq!(failed(read.await), "read: native tool panicked");
        }
    }
}
