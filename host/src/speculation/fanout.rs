//! How many of a link's projected candidates to prefetch, learned from what
//! the agent really calls.
//!
//! A projection offers up to three candidates per link (the top three
//! results cover most cited follow-ups), but the agent usually reads one of
//! them: prefetching all three triples the backend calls for one hit. So
//! each candidate is judged on its own estimated probability of being
//! called, per (tool that ran, follow-up tool, rank of the candidate).
//!
//! The estimate is a Beta posterior. Its prior is the link's declared
//! probability shared out over the ranks, `prior / (rank + 1)`: a link's
//! probability is that of *a* follow-up, and agents open the first of a
//! list's results far more often than the later ones. It is worth
//! [`PRIOR_WEIGHT`] pseudo-observations (`a = W × prior`,
//! `b = W × (1 − prior)`), and each candidate offered adds one observation,
//! used or not. A candidate is dispatched while its rank *could* still be
//! worth it: while the posterior mean plus one standard deviation reaches
//! the planner's floor. The deviation shrinks as observations grow, so the
//! benefit of the doubt the prior gives decays with evidence instead of
//! being spent at the first miss: a link declared at 0.32 over a floor of
//! 0.3 survives one unused offer (mean 0.27, but ± 0.17) and a run of them
//! turns it off, while a rank the agent opens about as often as the floor
//! stays on.
//!
//! Every candidate offered is remembered until its TTL ends, dispatched or
//! not, so a real call that matches a candidate that was *not* dispatched
//! still counts as used for its rank: an estimate that fell under the floor
//! recovers when the agent's habits change, without spending backend calls
//! to find out. The tuning is online and per rank, rather than a tool
//! switched off offline once its hit rate falls: a rank the agent stopped
//! opening stops costing calls within the run, and one it opens again
//! comes back.
//!
//! With a cluster, every replica learns from all of them: the counts are
//! the totals in Redis as of the last flush plus what this replica counted
//! since ([`FanOut::unflushed`], [`FanOut::adopt`], driven by `tally`).
//!
//! It owns the counters and the memory of offered candidates, not the
//! decision to plan a link (the planner) or the cache.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::cache::Key;
use super::planner::DeclineReason;
use crate::cluster::Rank;

/// Pseudo-observations the declared probability is worth.
pub const PRIOR_WEIGHT: f64 = 5.0;
/// Ranks taken from an earlier run's record.
pub const MAX_RESUMED: usize = 10_000;
/// Offered candidates remembered at most; the oldest are forgotten first.
const MAX_REMEMBERED: usize = 4096;

/// Where a candidate came from, the unit the fan-out learns by: the tool
/// that ran, the follow-up tool and the candidate's rank in the projection.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FollowUpRank {
    pub from: String,
    pub to: String,
    pub rank: usize,
}

#[derive(Default)]
struct Counts {
    offered: u64,
    used: u64,
    /// Of these, what was not flushed to the cluster yet.
    new_offered: u64,
    new_used: u64,
}

struct Offered {
    origin: FollowUpRank,
    until: Instant,
    /// Why it was not dispatched, if it was not.
    declined: Option<DeclineReason>,
}

/// What became of a candidate a real call matched: why a call that was
/// offered still ran (`toolhost stats`' misses).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// It was prefetched: a call that still runs found it gone (expired,
    /// evicted, invalidated) or failed.
    Dispatched,
    /// It was offered and not prefetched, for this reason.
    Declined(DeclineReason),
}

#[derive(Default)]
struct Inner {
    counts: BTreeMap<FollowUpRank, Counts>,
    /// Each link's declared probability as last asked, for the cluster.
    priors: HashMap<FollowUpRank, f32>,
    offered: HashMap<Key, Offered>,
}

impl Inner {
    /// The counts of one rank of one link, made empty if new.
    fn counts_of(&mut self, from: String, to: String, rank: usize) -> &mut Counts {
        self.counts.entry(FollowUpRank { from, to, rank }).or_default()
    }
}

/// One rank's record, for `toolhost stats`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankStats {
    /// The tool that ran.
    pub from: String,
    /// The follow-up tool.
    pub to: String,
    /// The candidate's rank among the link's, from 0.
    pub rank: usize,
    /// Candidates of this rank offered.
    pub offered: u64,
    /// Of these, those the agent called.
    pub used: u64,
    /// The estimated probability the agent calls a candidate of this rank.
    pub estimate: f64,
}

#[derive(Default)]
pub struct FanOut {
    inner: Mutex<Inner>,
}

impl FanOut {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether a candidate of `origin` is still worth dispatching at
    /// `floor` (see the module doc).
    pub fn likely(&self, origin: &FollowUpRank, prior: f32, floor: f32) -> bool {
        let mut inner = self.lock();
        let (offered, used) = inner.counts.get(origin).map_or((0, 0), |c| (c.offered, c.used));
        inner.priors.insert(origin.clone(), prior);
        let posterior = Posterior::new(offered, used, prior, origin.rank);
        posterior.mean + posterior.deviation >= f64::from(floor)
    }

    /// The estimated probability that the agent calls a candidate of
    /// `origin` (the posterior mean).
    pub fn chance(&self, origin: &FollowUpRank, prior: f32) -> f64 {
        let inner = self.lock();
        let (offered, used) = inner.counts.get(origin).map_or((0, 0), |c| (c.offered, c.used));
        Posterior::new(offered, used, prior, origin.rank).mean
    }

    /// Remember that `key` was offered by `origin` (dispatched unless
    /// [`FanOut::declined`] says otherwise), for `ttl`. An offer of a key
    /// already remembered is not counted twice, but its fate is this one's.
    pub fn offer(&self, key: Key, origin: FollowUpRank, ttl: Duration) {
        let mut inner = self.lock();
        let now = Instant::now();
        if let Some(o) = inner.offered.get_mut(&key).filter(|o| o.until > now) {
            o.declined = None;
            return;
        }
        if inner.offered.len() >= MAX_REMEMBERED {
            inner.offered.retain(|_, o| o.until > now);
            if inner.offered.len() >= MAX_REMEMBERED
                && let Some(oldest) = inner
                    .offered
                    .iter()
                    .min_by_key(|(_, o)| o.until)
                    .map(|(k, _)| k.clone())
            {
                inner.offered.remove(&oldest);
            }
        }
        let counts = inner.counts.entry(origin.clone()).or_default();
        counts.offered = counts.offered.saturating_add(1);
        counts.new_offered += 1;
        inner.offered.insert(
            key,
            Offered {
                origin,
                until: now + ttl,
                declined: None,
            },
        );
    }

    /// The prefetch made for `key` is gone unused (a write invalidated
    /// it, or it expired): its offer is forgotten, so that offering `key`
    /// again counts as a new offer. Agents write in runs (a page's blocks
    /// appended one call at a time), each write drops what its neighbours
    /// held, and a read planned after each of them is prefetched anew and
    /// dropped by the next: counted once, the record would show one unused
    /// offer for dozens of calls made. An offer declined is kept: it made
    /// no call.
    pub fn gone(&self, key: &Key) {
        let mut inner = self.lock();
        if inner.offered.get(key).is_some_and(|o| o.declined.is_none()) {
            inner.offered.remove(key);
        }
    }

    /// The candidate offered for `key` was not dispatched, for `reason`.
    pub fn declined(&self, key: &Key, reason: DeclineReason) {
        if let Some(o) = self.lock().offered.get_mut(key) {
            o.declined = Some(reason);
        }
    }

    /// A real call for `key` arrived: credit the candidate it matches,
    /// once, and say what became of it (`None`: nothing offered it).
    pub fn called(&self, key: &Key) -> Option<Fate> {
        let mut inner = self.lock();
        let offered = inner.offered.remove(key)?;
        if offered.until <= Instant::now() {
            return None;
        }
        if let Some(c) = inner.counts.get_mut(&offered.origin) {
            c.used = c.used.saturating_add(1);
            c.new_used += 1;
        }
        Some(offered.declined.map_or(Fate::Dispatched, Fate::Declined))
    }

    /// What was counted since the last flush, taken: to be added to the
    /// cluster's totals, or given back ([`FanOut::restore`]) if that fails.
    /// A rank is offered only after its link's prior was asked
    /// ([`FanOut::likely`]), so each carries it.
    pub(super) fn unflushed(&self) -> Vec<Rank> {
        let mut inner = self.lock();
        let Inner { counts, priors, .. } = &mut *inner;
        counts
            .iter_mut()
            .filter(|(_, c)| c.new_offered + c.new_used > 0)
            .map(|(o, c)| Rank {
                from: o.from.clone(),
                to: o.to.clone(),
                rank: o.rank,
                offered: std::mem::take(&mut c.new_offered),
                used: std::mem::take(&mut c.new_used),
                prior: priors.get(o).copied().unwrap_or(0.5),
            })
            .collect()
    }

    /// `taken` ([`FanOut::unflushed`]) did not reach the cluster.
    pub(super) fn restore(&self, taken: Vec<Rank>) {
        let mut inner = self.lock();
        for r in taken {
            let c = inner.counts_of(r.from, r.to, r.rank);
            c.new_offered += r.offered;
            c.new_used += r.used;
        }
    }

    /// The cluster's totals, read after this replica's flush: the counts
    /// become them, plus what was counted here since.
    pub(super) fn adopt(&self, totals: Vec<Rank>) {
        let mut inner = self.lock();
        for r in totals {
            let c = inner.counts_of(r.from, r.to, r.rank);
            // Redis is not trusted: a forged total saturates.
            c.offered = r.offered.saturating_add(c.new_offered);
            c.used = r.used.min(r.offered).saturating_add(c.new_used);
        }
    }

    /// Start from the record of an earlier run (its [`FanOut::table`]):
    /// each rank counts at least what it counted then. At most
    /// [`MAX_RESUMED`] ranks are taken, so a file cannot grow the table
    /// past what a run would.
    pub fn resume(&self, rows: &[RankStats]) {
        let mut inner = self.lock();
        for r in rows.iter().take(MAX_RESUMED) {
            let c = inner.counts_of(r.from.clone(), r.to.clone(), r.rank);
            c.offered = c.offered.max(r.offered);
            c.used = c.used.max(r.used.min(r.offered));
        }
    }

    /// Every rank seen so far, with its estimate under `priors` (the
    /// declared probability of each (from, to) link; 0.5 if unknown).
    pub fn table(&self, prior: impl Fn(&str, &str) -> f32) -> Vec<RankStats> {
        let inner = self.lock();
        inner
            .counts
            .iter()
            .map(|(o, c)| RankStats {
                from: o.from.clone(),
                to: o.to.clone(),
                rank: o.rank,
                offered: c.offered,
                used: c.used,
                estimate: estimate(c.offered, c.used, prior(&o.from, &o.to), o.rank),
            })
            .collect()
    }
}

/// The estimated probability that a candidate of `rank` is called, after
/// `offered` offers of which `used` were (the posterior mean).
pub fn estimate(offered: u64, used: u64, prior: f32, rank: usize) -> f64 {
    Posterior::new(offered, used, prior, rank).mean
}

/// The Beta posterior of a rank's probability of being called.
struct Posterior {
    mean: f64,
    deviation: f64,
}

impl Posterior {
    fn new(offered: u64, used: u64, prior: f32, rank: usize) -> Self {
        let prior = f64::from(prior).clamp(0.0, 1.0) / (rank as f64 + 1.0);
        let used = used.min(offered) as f64;
        let a = used + PRIOR_WEIGHT * prior;
        let b = (offered as f64 - used) + PRIOR_WEIGHT * (1.0 - prior);
        let n = a + b;
        Self {
            mean: a / n,
            deviation: (a * b / (n * n * (n + 1.0))).sqrt(),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn key(path: &str) -> Key {
        Key::of("read", json!({"path": path}))
    }

    fn origin(rank: usize) -> FollowUpRank {
        FollowUpRank {
            from: "grep".into(),
            to: "read".into(),
            rank,
        }
    }

    const MINUTE: Duration = Duration::from_secs(60);

    fn mean(fan: &FanOut, origin: &FollowUpRank, prior: f32) -> f64 {
        let inner = fan.lock();
        let (offered, used) = inner.counts.get(origin).map_or((0, 0), |c| (c.offered, c.used));
        Posterior::new(offered, used, prior, origin.rank).mean
    }

    #[test]
    fn a_prefetch_gone_unused_counts_its_next_offer_anew() {
        let fan = FanOut::default();
        fan.offer(key("a"), origin(0), MINUTE);
        fan.offer(key("a"), origin(0), MINUTE);
        assert_eq!(fan.table(|_, _| 0.5)[0].offered, 1, "held: offered once");
        fan.gone(&key("a"));
        fan.offer(key("a"), origin(0), MINUTE);
        assert_eq!(fan.table(|_, _| 0.5)[0].offered, 2, "gone: offered again");
        fan.declined(&key("a"), DeclineReason::Unlikely);
        fan.gone(&key("a"));
        fan.offer(key("a"), origin(0), MINUTE);
        assert_eq!(
            fan.table(|_, _| 0.5)[0].offered,
            2,
            "a declined offer made no call"
        );
        assert_eq!(fan.called(&key("a")), Some(Fate::Dispatched));
    }

    #[test]
    fn unused_ranks_fall_under_the_floor_and_used_ones_stay() {
        let fan = FanOut::default();
        assert!(
            (mean(&fan, &origin(0), 0.35) - 0.35).abs() < 1e-6,
            "the prior alone"
        );
        assert!(
            (mean(&fan, &origin(2), 0.35) - 0.35 / 3.0).abs() < 1e-6,
            "shared out over the ranks"
        );
        for i in 0..10 {
            fan.offer(key(&format!("a{i}")), origin(0), MINUTE);
            fan.offer(key(&format!("c{i}")), origin(2), MINUTE);
            fan.called(&key(&format!("a{i}")));
        }
        assert!(mean(&fan, &origin(0), 0.35) > 0.7);
        assert!(mean(&fan, &origin(2), 0.35) < 0.15);
        assert!(fan.likely(&origin(0), 0.35, 0.3));
        assert!(!fan.likely(&origin(2), 0.35, 0.3));
    }

    /// The case that made a flip of the old estimate: glob → read is
    /// declared at 0.32 over a floor of 0.3, and the mean after one unused
    /// offer, (0 + 5 × 0.32) / 6 = 0.27, is under it.
    #[test]
    fn one_unused_offer_does_not_turn_a_rank_off_but_a_run_of_them_does() {
        let fan = FanOut::default();
        fan.offer(key("a"), origin(0), MINUTE);
        assert!((mean(&fan, &origin(0), 0.32) - 1.6 / 6.0).abs() < 1e-6);
        assert!(
            fan.likely(&origin(0), 0.32, 0.3),
            "one miss is not evidence enough"
        );
        for i in 0..5 {
            fan.offer(key(&format!("m{i}")), origin(0), MINUTE);
        }
        assert!(!fan.likely(&origin(0), 0.32, 0.3), "six misses in a row are");
        // And the doubt shrinks with evidence: a rank called at 0.25 over
        // many offers falls under a floor of 0.3 that a few offers at that
        // rate would not have.
        let few = Posterior::new(8, 2, 0.32, 0);
        let many = Posterior::new(400, 100, 0.32, 0);
        assert!(few.mean + few.deviation >= 0.3);
        assert!(many.mean + many.deviation < 0.3);
    }

    #[test]
    fn a_call_counts_once_and_only_within_the_ttl() {
        let fan = FanOut::default();
        fan.offer(key("a"), origin(0), MINUTE);
        fan.offer(key("a"), origin(0), MINUTE);
        fan.called(&key("a"));
        fan.called(&key("a"));
        fan.offer(key("b"), origin(1), Duration::ZERO);
        fan.called(&key("b"));
        let table = fan.table(|_, _| 0.5);
        let counts: Vec<(usize, u64, u64)> = table.iter().map(|r| (r.rank, r.offered, r.used)).collect();
        assert_eq!(counts, vec![(0, 1, 1), (1, 1, 0)]);
    }

    /// With a cluster: what is taken for a flush is given back if it fails,
    /// and the totals read back become the counts, plus what came since.
    #[test]
    fn flushes_take_restore_and_adopt_the_clusters_totals() {
        let fan = FanOut::default();
        assert!(fan.likely(&origin(0), 0.4, 0.3));
        fan.offer(key("a"), origin(0), MINUTE);
        fan.called(&key("a"));
        let taken = fan.unflushed();
        assert_eq!(
            taken
                .iter()
                .map(|r| (r.offered, r.used, r.prior))
                .collect::<Vec<_>>(),
            vec![(1, 1, 0.4)]
        );
        assert!(fan.unflushed().is_empty(), "taken once");
        fan.restore(taken);
        fan.offer(key("b"), origin(0), MINUTE);
        let taken = fan.unflushed();
        assert_eq!((taken[0].offered, taken[0].used), (2, 1));
        // Another replica offered 10 and saw 6 used; this one offered one
        // more since its flush.
        fan.offer(key("c"), origin(0), MINUTE);
        fan.adopt(vec![Rank {
            offered: 12,
            used: 7,
            ..taken[0].clone()
        }]);
        let table = fan.table(|_, _| 0.4);
        assert_eq!((table[0].offered, table[0].used), (13, 7));
        assert_eq!(fan.unflushed()[0].offered, 1, "only what came since");
    }

    #[test]
    fn memory_is_bounded() {
        let fan = FanOut::default();
        for i in 0..MAX_REMEMBERED + 10 {
            fan.offer(key(&i.to_string()), origin(0), MINUTE);
        }
        assert!(fan.lock().offered.len() <= MAX_REMEMBERED);
    }
}
