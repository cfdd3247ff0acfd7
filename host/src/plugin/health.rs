//! Quarantine with backoff: a plugin that keeps failing (traps, runs out of
//! CPU, misses its deadline) is not called again until its backoff ends.
//!
//! After `quarantine_after` failures in a row the plugin is quarantined for
//! its backoff. When the backoff ends it is on probation: the next call is a
//! trial. A success restores it fully (and resets the backoff); a failure
//! quarantines it again at once, for twice as long, up to the maximum.
//! Refusals a plugin returns on purpose (an error from `transform-args`) are
//! answers, not failures, and do not count.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::manifest::Limits;

/// A plugin's health: whether it is called, after the failures it had.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "state")]
pub enum Status {
    /// Called as usual.
    Healthy,
    /// Not called until the backoff ends.
    Quarantined {
        /// Milliseconds until the next call is let through.
        retry_in_ms: u64,
    },
    /// The backoff ended; the next call is a trial.
    Probation,
}

pub struct Health {
    threshold: u32,
    base: Duration,
    max: Duration,
    /// Nothing to track: no failures in a row, no quarantine, no probation.
    /// `admit` and `success` run on every call, so while this holds they
    /// return without taking the lock. Only ever set under the lock.
    clear: AtomicBool,
    state: Mutex<State>,
    /// Failures since load (traps, CPU or deadline exhausted, output too
    /// large), for `/metrics`.
    failures: AtomicU64,
    /// Calls refused since load because the plugin was quarantined.
    refused: AtomicU64,
}

struct State {
    consecutive: u32,
    until: Option<Instant>,
    backoff: Duration,
    probation: bool,
    /// Times the plugin was quarantined since load.
    trips: u32,
}

impl Health {
    pub fn new(limits: &Limits) -> Self {
        Self {
            threshold: limits.quarantine_after,
            base: limits.backoff,
            max: limits.max_backoff.max(limits.backoff),
            clear: AtomicBool::new(true),
            state: Mutex::new(State {
                consecutive: 0,
                until: None,
                backoff: limits.backoff,
                probation: false,
                trips: 0,
            }),
            failures: AtomicU64::new(0),
            refused: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // The state stays consistent even if a holder panicked.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// May the plugin be called now? `Err` carries the time left.
    pub fn admit(&self) -> Result<(), Duration> {
        if self.clear.load(Ordering::Acquire) {
            return Ok(());
        }
        let mut s = self.lock();
        match s.until {
            Some(until) if Instant::now() < until => {
                self.refused.fetch_add(1, Ordering::Relaxed);
                Err(until - Instant::now())
            }
            Some(_) => {
                s.until = None;
                s.probation = true;
                Ok(())
            }
            None => Ok(()),
        }
    }

    pub fn success(&self) {
        if self.clear.load(Ordering::Acquire) {
            return;
        }
        let mut s = self.lock();
        s.consecutive = 0;
        if s.probation {
            s.probation = false;
            s.backoff = self.base;
        }
        self.clear.store(s.until.is_none(), Ordering::Release);
    }

    /// Record a failure; returns true if it put the plugin in quarantine.
    pub fn failure(&self) -> bool {
        self.failures.fetch_add(1, Ordering::Relaxed);
        let mut s = self.lock();
        // Cleared before the state changes, so a lock-free `success` that
        // still sees `clear` is ordered before this failure.
        self.clear.store(false, Ordering::Release);
        s.consecutive += 1;
        if !(s.probation || s.consecutive >= self.threshold) {
            return false;
        }
        if s.probation {
            s.backoff = (s.backoff * 2).min(self.max);
        }
        s.until = Some(Instant::now() + s.backoff);
        s.probation = false;
        s.consecutive = 0;
        s.trips += 1;
        true
    }

    pub fn status(&self) -> Status {
        let s = self.lock();
        match s.until {
            Some(until) if Instant::now() < until => Status::Quarantined {
                retry_in_ms: (until - Instant::now()).as_millis() as u64,
            },
            Some(_) => Status::Probation,
            None if s.probation => Status::Probation,
            None => Status::Healthy,
        }
    }

    pub fn trips(&self) -> u32 {
        self.lock().trips
    }

    /// Failures since load.
    pub fn failures(&self) -> u64 {
        self.failures.load(Ordering::Relaxed)
    }

    /// Calls refused while quarantined, since load.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugin::manifest::LimitsSpec;

    fn health(backoff_ms: u64) -> Health {
        let spec = LimitsSpec {
            quarantine_after: Some(2),
            backoff_ms: Some(backoff_ms),
            ..LimitsSpec::default()
        };
        Health::new(&spec.resolve(0).unwrap())
    }

    #[test]
    fn trips_after_threshold_and_recovers_after_backoff() {
        let h = health(0);
        assert!(!h.failure());
        assert!(h.failure());
        assert_eq!(h.trips(), 1);
        assert_eq!(h.failures(), 2);
        // A zero backoff has already ended: the next call is a trial.
        assert!(h.admit().is_ok());
        assert_eq!(h.status(), Status::Probation);
        h.success();
        assert_eq!(h.status(), Status::Healthy);
    }

    #[test]
    fn a_success_resets_the_count_of_failures() {
        let h = health(60_000);
        assert!(!h.failure());
        h.success();
        assert!(!h.failure(), "the success in between reset the count");
        assert!(h.admit().is_ok());
        h.success();
        assert_eq!(h.status(), Status::Healthy);
    }

    #[test]
    fn quarantine_refuses_calls_until_backoff_ends() {
        let h = health(60_000);
        h.failure();
        h.failure();
        assert!(h.admit().is_err());
        assert!(matches!(h.status(), Status::Quarantined { .. }));
    }

    #[test]
    fn a_failed_trial_requarantines_with_a_longer_backoff() {
        let h = health(0);
        h.failure();
        h.failure();
        h.admit().unwrap();
        assert!(h.failure(), "one failure on probation trips again");
        assert_eq!(h.trips(), 2);
    }
}
