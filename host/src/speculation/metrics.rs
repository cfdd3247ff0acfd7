//! Counters of what speculation did, for `toolhost stats` and the server's
//! logs: prefetches dispatched, real calls served from the cache (hits) or
//! by joining a prefetch in flight (joins), or from what an earlier real
//! call of theirs left in the cache (reused: counted apart, since no
//! prefetch earned it), prefetches wasted (never served:
//! see `cache`), those not served yet, results not served because they
//! were stale, declines by reason, the time hits and joins saved, and the
//! learned fan-out.
//!
//! With a cluster, what each replica counted is also added to the totals in
//! Redis (`tally`); these counters stay this replica's own (what its
//! `/metrics` says: a scraper sums the replicas), and [`Snapshot::summed`]
//! reads the totals back, with the fan-out and the links every replica
//! learned.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;

use super::fanout::Fate;
use super::fanout::RankStats;
use super::learned::LinkStats;
use super::planner::DeclineReason;

#[derive(Default)]
pub struct Metrics {
    /// The agent's calls, served or not: the backend calls it would make
    /// with speculation off, which what prefetches add is measured against.
    real_calls: AtomicU64,
    dispatched: AtomicU64,
    hits: AtomicU64,
    cluster_hits: AtomicU64,
    cluster_refused: AtomicU64,
    joins: AtomicU64,
    reused: AtomicU64,
    saved_us: AtomicU64,
    stale: AtomicU64,
    /// Shared with the caches, which count what they waste.
    wasted: Arc<AtomicU64>,
    /// Shared with the real calls in flight, which prefetches wait behind.
    waited: Arc<AtomicU64>,
    declined: Mutex<BTreeMap<DeclineReason, u64>>,
    /// Real calls not served, by what became of their candidate.
    missed: Mutex<BTreeMap<String, u64>>,
    /// The counters as last added to the cluster's totals.
    flushed: Mutex<BTreeMap<String, u64>>,
}

/// A point-in-time copy of the counters.
#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct Snapshot {
    /// Prefetches started.
    pub dispatched: u64,
    /// Real calls answered from a prefetch.
    pub hits: u64,
    /// Of the hits, those answered from a prefetch in Redis that another
    /// replica made (`[cluster]`).
    #[serde(default)]
    pub cluster_hits: u64,
    /// Entries in Redis refused rather than served: not sealed by a
    /// replica for their key, expired, or over their tool's output cap.
    #[serde(default)]
    pub cluster_refused: u64,
    /// Real calls that joined a prefetch still running.
    pub joins: u64,
    /// Real calls answered from what an earlier real call left in the
    /// cache (a re-read, or another slice, of a file read whole before);
    /// not counted in `hits`.
    #[serde(default)]
    pub reused: u64,
    /// Prefetches never served: dropped unused (expired, evicted,
    /// invalidated, or held when the session ended) or that stored nothing.
    pub wasted: u64,
    /// Prefetches held or running that nothing has used yet: wasted unless
    /// a call comes for them before they expire or the session ends (0
    /// once it has ended).
    #[serde(default)]
    pub unserved: u64,
    /// Cached results not served because their source had changed.
    pub stale: u64,
    /// Times a prefetch waited for the real calls in flight before it took
    /// the CPU, a vendor's connection or a backend.
    #[serde(default)]
    pub waited: u64,
    /// Prefetches not started, by reason.
    pub declined: BTreeMap<String, u64>,
    /// Real calls of tools that may be called ahead of time that no
    /// prefetch served, by what became of the candidate they matched:
    /// `not_offered` (no link planned these arguments), `prefetched` (it
    /// was made, and was gone or failed by the call: expired, evicted,
    /// invalidated, stale), or the reason it was declined (`unlikely`,
    /// `extra_calls`, `capped`). Where the follow-ups missed, and why.
    #[serde(default)]
    pub missed: BTreeMap<String, u64>,
    /// Time the hits saved the model, in milliseconds.
    pub saved_ms: u64,
    /// What the agent did with each rank of each link's candidates.
    pub ranks: Vec<RankStats>,
    /// The links learned from the values that flowed between calls.
    #[serde(default)]
    pub learned: Vec<LinkStats>,
    /// What `[speculation] max_extra_calls` is measured on, over this run
    /// and every earlier run it resumed from.
    #[serde(default)]
    pub budget: Spent,
}

/// The agent's calls and the prefetches none of them used: the backend
/// calls with speculation off, and those prefetches added to them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Spent {
    /// Real calls, served or not.
    pub real_calls: u64,
    /// Prefetches made that no real call used (yet, or ever).
    pub unused: u64,
}

impl Spent {
    /// The budget of `real_calls`, with `dispatched` prefetches of which
    /// `used` served a call (a hit or a join).
    fn of(real_calls: u64, dispatched: u64, used: u64) -> Spent {
        Spent {
            real_calls,
            unused: dispatched.saturating_sub(used),
        }
    }

    /// These counts and `later`'s, added.
    pub fn plus(self, later: Spent) -> Spent {
        Spent {
            real_calls: self.real_calls + later.real_calls,
            unused: self.unused + later.unused,
        }
    }
}

impl Snapshot {
    /// Real calls served by speculation per prefetch dispatched.
    pub fn hit_rate(&self) -> f64 {
        if self.dispatched == 0 {
            0.0
        } else {
            (self.hits + self.joins) as f64 / self.dispatched as f64
        }
    }
}

/// The name of a decline reason, as `toolhost stats` shows it.
fn reason_name(reason: &DeclineReason) -> String {
    serde_json::to_value(reason)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// The prefix of a decline reason's counter in the cluster's totals.
const DECLINED: &str = "declined:";
/// The prefix of a miss's counter in the cluster's totals.
const MISSED: &str = "missed:";

/// The counters of the cluster's `totals` under `prefix`, without it.
fn prefixed(totals: &crate::cluster::Totals, prefix: &str) -> BTreeMap<String, u64> {
    totals
        .counters
        .iter()
        .filter_map(|(k, n)| Some((k.strip_prefix(prefix)?.to_owned(), *n)))
        .collect()
}

impl Snapshot {
    /// The figures of every replica, from the cluster's totals: what
    /// nothing sums (prefetches not served yet) is 0.
    pub fn summed(totals: &crate::cluster::Totals) -> Self {
        let get = |name: &str| totals.counters.get(name).copied().unwrap_or(0);
        Self {
            dispatched: get("dispatched"),
            hits: get("hits"),
            cluster_hits: get("cluster_hits"),
            cluster_refused: get("cluster_refused"),
            joins: get("joins"),
            reused: get("reused"),
            wasted: get("wasted"),
            unserved: 0,
            stale: get("stale"),
            waited: get("waited"),
            declined: prefixed(totals, DECLINED),
            missed: prefixed(totals, MISSED),
            saved_ms: get("saved_us") / 1000,
            ranks: totals
                .learning
                .ranks
                .iter()
                .map(|r| RankStats {
                    from: r.from.clone(),
                    to: r.to.clone(),
                    rank: r.rank,
                    offered: r.offered,
                    used: r.used,
                    estimate: super::fanout::estimate(r.offered, r.used, r.prior, r.rank),
                })
                .collect(),
            learned: super::learned::summed(&totals.learning.links),
            budget: Spent::of(get("real_calls"), get("dispatched"), get("hits") + get("joins")),
        }
    }
}

impl Metrics {
    /// Every counter by name, as the cluster's totals hold them.
    fn counts(&self) -> BTreeMap<String, u64> {
        let mut counts: BTreeMap<String, u64> = [
            ("real_calls", &self.real_calls),
            ("dispatched", &self.dispatched),
            ("hits", &self.hits),
            ("cluster_hits", &self.cluster_hits),
            ("cluster_refused", &self.cluster_refused),
            ("joins", &self.joins),
            ("reused", &self.reused),
            ("saved_us", &self.saved_us),
            ("stale", &self.stale),
            ("wasted", &*self.wasted),
            ("waited", &*self.waited),
        ]
        .into_iter()
        .map(|(name, n)| (name.to_owned(), n.load(Ordering::Relaxed)))
        .collect();
        let declined = self.declined.lock().unwrap_or_else(|p| p.into_inner());
        for (reason, n) in declined.iter() {
            counts.insert(format!("{DECLINED}{}", reason_name(reason)), *n);
        }
        let missed = self.missed.lock().unwrap_or_else(|p| p.into_inner());
        for (why, n) in missed.iter() {
            counts.insert(format!("{MISSED}{why}"), *n);
        }
        counts
    }

    /// What was counted since the last [`Metrics::flushed`].
    pub(super) fn unflushed(&self) -> BTreeMap<String, u64> {
        let flushed = self.flushed.lock().unwrap_or_else(|p| p.into_inner());
        self.counts()
            .into_iter()
            .map(|(name, n)| {
                let before = flushed.get(&name).copied().unwrap_or(0);
                (name, n.saturating_sub(before))
            })
            .filter(|(_, n)| *n > 0)
            .collect()
    }

    /// `sent` ([`Metrics::unflushed`]) was added to the cluster's totals.
    pub(super) fn flushed(&self, sent: &BTreeMap<String, u64>) {
        let mut flushed = self.flushed.lock().unwrap_or_else(|p| p.into_inner());
        for (name, n) in sent {
            *flushed.entry(name.clone()).or_default() += n;
        }
    }

    /// A call of the agent's, served or not.
    pub fn real_call(&self) {
        self.real_calls.fetch_add(1, Ordering::Relaxed);
    }

    pub fn dispatched(&self) {
        self.dispatched.fetch_add(1, Ordering::Relaxed);
    }

    /// A real call served from the cache, saving the prefetch's run time.
    pub fn hit(&self, saved: Duration) {
        self.hits.fetch_add(1, Ordering::Relaxed);
        self.saved_us
            .fetch_add(saved.as_micros() as u64, Ordering::Relaxed);
    }

    /// A real call served from a prefetch another replica made.
    pub fn cluster_hit(&self, saved: Duration) {
        self.cluster_hits.fetch_add(1, Ordering::Relaxed);
        self.hit(saved);
    }

    /// An entry in Redis refused rather than served.
    pub fn cluster_refused(&self) {
        self.cluster_refused.fetch_add(1, Ordering::Relaxed);
    }

    /// A real call that waited on a prefetch in flight, saving `saved`.
    pub fn join(&self, saved: Duration) {
        self.joins.fetch_add(1, Ordering::Relaxed);
        self.saved_us
            .fetch_add(saved.as_micros() as u64, Ordering::Relaxed);
    }

    /// A real call answered from what an earlier real call left.
    pub fn reused(&self) {
        self.reused.fetch_add(1, Ordering::Relaxed);
    }

    /// The counter the caches count their waste into.
    pub fn wasted_counter(&self) -> Arc<AtomicU64> {
        self.wasted.clone()
    }

    /// The counter prefetches count their waits behind real calls into.
    pub fn waited_counter(&self) -> Arc<AtomicU64> {
        self.waited.clone()
    }

    pub fn stale(&self) {
        self.stale.fetch_add(1, Ordering::Relaxed);
    }

    pub fn declined(&self, reason: DeclineReason) {
        *self
            .declined
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(reason)
            .or_default() += 1;
    }

    /// A real call no prefetch served, whose candidate met `fate`.
    pub fn missed(&self, fate: Option<Fate>) {
        let why = match fate {
            None => "not_offered".to_owned(),
            Some(Fate::Dispatched) => "prefetched".to_owned(),
            Some(Fate::Declined(reason)) => reason_name(&reason),
        };
        *self
            .missed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(why)
            .or_default() += 1;
    }

    /// This run's part of the budget: the agent's calls, and the
    /// prefetches made that none of them has used (yet, or ever).
    pub fn spent(&self) -> Spent {
        let used = self.hits.load(Ordering::Relaxed) + self.joins.load(Ordering::Relaxed);
        Spent::of(
            self.real_calls.load(Ordering::Relaxed),
            self.dispatched.load(Ordering::Relaxed),
            used,
        )
    }

    pub fn snapshot(
        &self,
        unserved: u64,
        ranks: Vec<RankStats>,
        learned: Vec<LinkStats>,
        budget: Spent,
    ) -> Snapshot {
        let declined = self.declined.lock().unwrap_or_else(|p| p.into_inner());
        Snapshot {
            dispatched: self.dispatched.load(Ordering::Relaxed),
            hits: self.hits.load(Ordering::Relaxed),
            cluster_hits: self.cluster_hits.load(Ordering::Relaxed),
            cluster_refused: self.cluster_refused.load(Ordering::Relaxed),
            joins: self.joins.load(Ordering::Relaxed),
            reused: self.reused.load(Ordering::Relaxed),
            wasted: self.wasted.load(Ordering::Relaxed),
            unserved,
            stale: self.stale.load(Ordering::Relaxed),
            waited: self.waited.load(Ordering::Relaxed),
            declined: declined.iter().map(|(r, n)| (reason_name(r), *n)).collect(),
            missed: self.missed.lock().unwrap_or_else(|p| p.into_inner()).clone(),
            saved_ms: self.saved_us.load(Ordering::Relaxed) / 1000,
            ranks,
            learned,
            budget,
        }
    }
}
