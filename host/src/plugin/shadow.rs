//! Shadow runs: a candidate version of a plugin (`[plugin.NAME] shadow =
//! "candidate.wasm"`) run beside the current one on real traffic, its
//! answers compared with the current one's and never served.
//!
//! Owns the [`Shadow`] a plugin carries and the [`ShadowTally`] of
//! differences the runtime keeps (for `toolhost stats`). Observing a call
//! is `rerun`'s; loading the candidate is the loader's.
//!
//! Decisions:
//! - The candidate gets the calls of [`SHADOWED`] (those of them the
//!   contract has): the hooks whose answer is a function of what the host
//!   hands them. Never `execute`, `after-call` or the renderings.
//! - Never HTTP, no secrets: the candidate is loaded with the current
//!   plugin's manifest (config, limits), or its own sidecar manifest if it
//!   has one, with every grant removed. A request it makes is refused as
//!   for any origin not granted; it is counted as a difference if the
//!   current plugin answered otherwise.
//! - Never in front of the answer: the current plugin answers, the host
//!   goes on with that answer, and the candidate's call is spawned after
//!   it, at most [`MAX_IN_FLIGHT`] at a time per plugin (a call that finds
//!   none free is counted as skipped, not queued). A candidate that traps,
//!   spins or hangs spends its own instances and budgets; it has its own
//!   health and quarantine.
//! - Each difference is counted per plugin and export, and logged at warn
//!   (current and candidate answers cut to [`LOGGED_BYTES`], passed through
//!   the current plugin's redactor): the first [`LOGGED_EACH`] of each
//!   plugin and export, then every [`LOG_EVERY`]th.
//! - Promotion is moving the candidate's file into place: it is then the
//!   plugin, and the lock file (`toolhost lock`) records its digest.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::{Notify, Semaphore};

use super::Plugin;
use super::http::HttpGrant;
use super::record::Outcome;
use super::rerun::Rerun;
use crate::bounds;

/// The exports a candidate is called with.
pub const SHADOWED: [&str; 7] = [
    "enrich-schema",
    "transform-args",
    "value-model",
    "project-args",
    "rate-limit-host",
    "prepare-arguments",
    "before-call",
];

/// Candidate calls running at once, per plugin.
pub const MAX_IN_FLIGHT: usize = 4;
/// Differences logged in full per plugin and export, before thinning out.
pub const LOGGED_EACH: u64 = 10;
/// After [`LOGGED_EACH`], one difference logged in this many.
pub const LOG_EVERY: u64 = 100;
/// Of each answer, in a log line.
pub const LOGGED_BYTES: usize = 300;

/// A candidate beside one plugin.
pub struct Shadow {
    candidate: Arc<Plugin>,
    tally: Arc<ShadowTally>,
    in_flight: Arc<Semaphore>,
}

/// Shadow calls of one plugin's export.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShadowCount {
    /// The plugin whose candidate is compared.
    pub plugin: String,
    /// The export compared.
    pub export: String,
    /// Calls the candidate answered (or failed).
    pub compared: u64,
    /// Calls where the candidate answered the same.
    pub same: u64,
    /// Calls where it answered otherwise.
    pub differ: u64,
    /// Calls not given to the candidate: `MAX_IN_FLIGHT` were running.
    pub skipped: u64,
}

/// The shadow counts of every plugin of a runtime, kept across reloads.
#[derive(Default)]
pub struct ShadowTally {
    counts: Mutex<BTreeMap<(String, String), ShadowCount>>,
    running: AtomicUsize,
    done: Notify,
}

impl ShadowTally {
    /// Every count, by plugin then export.
    pub fn counts(&self) -> Vec<ShadowCount> {
        self.lock().values().cloned().collect()
    }

    /// Wait until no candidate call is running.
    pub async fn settle(&self) {
        loop {
            let done = self.done.notified();
            if self.running.load(Ordering::Acquire) == 0 {
                return;
            }
            done.await;
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<(String, String), ShadowCount>> {
        self.counts.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Count one call of `plugin`'s `export`; the count after it.
    fn count(&self, plugin: &str, export: &str, f: impl FnOnce(&mut ShadowCount)) -> ShadowCount {
        let mut counts = self.lock();
        let entry = counts
            .entry((plugin.to_owned(), export.to_owned()))
            .or_insert_with(|| ShadowCount {
                plugin: plugin.to_owned(),
                export: export.to_owned(),
                ..ShadowCount::default()
            });
        f(entry);
        entry.clone()
    }
}

impl Shadow {
    pub(super) fn new(candidate: Plugin, tally: Arc<ShadowTally>) -> Self {
        Self {
            candidate: Arc::new(candidate),
            tally,
            in_flight: Arc::new(Semaphore::new(MAX_IN_FLIGHT)),
        }
    }

    /// The candidate's file.
    pub fn candidate_path(&self) -> &std::path::Path {
        &self.candidate.path
    }

    /// Hand `current`'s call of `export` with `input`, which answered
    /// `answered`, to the candidate, after the fact.
    pub(super) fn compare(&self, current: &Plugin, export: &'static str, input: &Value, answered: &Outcome) {
        if !SHADOWED.contains(&export) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let Ok(permit) = self.in_flight.clone().try_acquire_owned() else {
            self.tally.count(&current.name, export, |c| c.skipped += 1);
            return;
        };
        let (candidate, tally) = (self.candidate.clone(), self.tally.clone());
        let (input, answered) = (input.clone(), answered.clone());
        let grant: Arc<HttpGrant> = current.instances.identity().http.clone();
        let name = current.name.clone();
        let running = Running::new(tally.clone());
        runtime.spawn(async move {
            let (_permit, _running) = (permit, running);
            let now = match candidate.rerun_or_reason(export, &input, false).await {
                Ok(Rerun::Done(outcome)) => outcome,
                Ok(Rerun::Skipped(why)) => Outcome::Error(why.to_owned()),
                Err(e) => Outcome::Error(e),
            };
            let same = now == answered;
            let count = tally.count(&name, export, |c| {
                c.compared += 1;
                if same {
                    c.same += 1;
                } else {
                    c.differ += 1;
                }
            });
            if !same && (count.differ <= LOGGED_EACH || count.differ.is_multiple_of(LOG_EVERY)) {
                let shown = |o: &Outcome| {
                    let text = serde_json::to_string(o).expect("an outcome serialises");
                    bounds::cut(grant.redactor().text(&text).into_owned(), LOGGED_BYTES)
                };
                tracing::warn!(
                    plugin = %name,
                    export,
                    differences = count.differ,
                    "shadow candidate differs: current {}, candidate {}",
                    shown(&answered),
                    shown(&now)
                );
            }
        });
    }
}

/// One candidate call running, for [`ShadowTally::settle`]: counted out
/// when dropped, however the call ended.
struct Running(Arc<ShadowTally>);

impl Running {
    fn new(tally: Arc<ShadowTally>) -> Self {
        tally.running.fetch_add(1, Ordering::AcqRel);
        Self(tally)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if self.0.running.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.done.notify_waiters();
        }
    }
}
