//! How many of a link's projected candidates to prefetch, learned from what
//! the agent really calls.
//!
//! A projection offers up to three candidates per link (the top three
//! results cover most cited follow-ups), but the agent usually reads one of
//! them: prefetching all three triples the backend calls for one hit. So
//! each candidate is judged on its own estimated probability of being
//! called, per (tool that ran, follow-up tool, rank of the candidate), and
//! dispatched only when that estimate reaches the planner's floor:
//!
//! `estimate = (used + W × prior) / (offered + W)`, with the link's declared
//! probability as the prior and `W` = [`PRIOR_WEIGHT`] pseudo-observations.
//!
//! Every candidate offered is remembered until its TTL ends, dispatched or
//! not, so a real call that matches a candidate that was *not* dispatched
//! still counts as used for its rank: an estimate that fell under the floor
//! recovers when the agent's habits change, without spending backend calls
//! to find out. This plays the part of the reference's offline auto-tuning
//! (a tool under 50 % hits turned off), online and per rank.
//!
//! It owns the counters and the memory of offered candidates, not the
//! decision to plan a link (the planner) or the cache.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::cache::Key;

/// Pseudo-observations the declared probability is worth.
pub const PRIOR_WEIGHT: f64 = 5.0;
/// Offered candidates remembered at most; the oldest are forgotten first.
const MAX_REMEMBERED: usize = 4096;

/// Where a candidate came from: the tool that ran, the follow-up tool and
/// the candidate's rank in the projection.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Origin {
    pub from: String,
    pub to: String,
    pub rank: usize,
}

#[derive(Default)]
struct Counts {
    offered: u64,
    used: u64,
}

struct Offered {
    origin: Origin,
    until: Instant,
}

#[derive(Default)]
struct Inner {
    counts: BTreeMap<Origin, Counts>,
    offered: HashMap<Key, Offered>,
}

/// One rank's record, for `toolhost stats`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RankStats {
    pub from: String,
    pub to: String,
    pub rank: usize,
    pub offered: u64,
    pub used: u64,
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

    /// The estimated probability that a candidate of `origin` is called.
    pub fn estimate(&self, origin: &Origin, prior: f32) -> f64 {
        let inner = self.lock();
        let (offered, used) = inner.counts.get(origin).map_or((0, 0), |c| (c.offered, c.used));
        estimate(offered, used, prior)
    }

    /// Remember that `key` was offered by `origin` (dispatched or not),
    /// for `ttl`. An offer of a key already remembered is not counted twice.
    pub fn offer(&self, key: Key, origin: Origin, ttl: Duration) {
        let mut inner = self.lock();
        let now = Instant::now();
        if inner.offered.get(&key).is_some_and(|o| o.until > now) {
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
        inner.counts.entry(origin.clone()).or_default().offered += 1;
        inner.offered.insert(
            key,
            Offered {
                origin,
                until: now + ttl,
            },
        );
    }

    /// A real call for `key` arrived: credit the candidate it matches, once.
    pub fn called(&self, key: &Key) {
        let mut inner = self.lock();
        let Some(offered) = inner.offered.remove(key) else {
            return;
        };
        if offered.until > Instant::now()
            && let Some(c) = inner.counts.get_mut(&offered.origin)
        {
            c.used += 1;
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
                estimate: estimate(c.offered, c.used, prior(&o.from, &o.to)),
            })
            .collect()
    }
}

fn estimate(offered: u64, used: u64, prior: f32) -> f64 {
    (used as f64 + PRIOR_WEIGHT * f64::from(prior)) / (offered as f64 + PRIOR_WEIGHT)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn key(path: &str) -> Key {
        Key::new("read", json!({"path": path}).as_object().unwrap())
    }

    fn origin(rank: usize) -> Origin {
        Origin {
            from: "grep".into(),
            to: "read".into(),
            rank,
        }
    }

    const MINUTE: Duration = Duration::from_secs(60);

    #[test]
    fn unused_ranks_fall_under_the_floor_and_used_ones_stay() {
        let fan = FanOut::default();
        assert!(
            (fan.estimate(&origin(2), 0.35) - 0.35).abs() < 1e-6,
            "the prior alone"
        );
        for i in 0..10 {
            fan.offer(key(&format!("a{i}")), origin(0), MINUTE);
            fan.offer(key(&format!("c{i}")), origin(2), MINUTE);
            fan.called(&key(&format!("a{i}")));
        }
        assert!(fan.estimate(&origin(0), 0.35) > 0.7);
        assert!(fan.estimate(&origin(2), 0.35) < 0.15);
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

    #[test]
    fn memory_is_bounded() {
        let fan = FanOut::default();
        for i in 0..MAX_REMEMBERED + 10 {
            fan.offer(key(&i.to_string()), origin(0), MINUTE);
        }
        assert!(fan.lock().offered.len() <= MAX_REMEMBERED);
    }
}
