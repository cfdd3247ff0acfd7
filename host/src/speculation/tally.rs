//! The engine's counters, learned fan-out and links learned from value
//! flow added to the cluster's totals in Redis (`crate::cluster`), so that
//! `toolhost stats` sums every replica and every replica learns from all
//! calls.
//!
//! Counting stays in process, on the call's path; a task adds what was
//! counted to Redis every [`FLUSH_EVERY`] in one pipelined round trip,
//! then reads what every replica learned back. A flush that fails (Redis
//! away: the cluster logs it once) is kept and added with the next one, so
//! nothing counted is lost and no call waits on it.

use std::sync::{Arc, Weak};
use std::time::Duration;

use super::fanout::FanOut;
use super::learned::Learned;
use super::metrics::Metrics;
use crate::cluster::{Cluster, Delta};

/// How often what was counted is added to the cluster's totals.
pub const FLUSH_EVERY: Duration = Duration::from_millis(200);
/// How many flushes with nothing to add before one reads the other
/// replicas' learning anyway.
const IDLE_READS: u32 = 5;

pub(super) struct Tally {
    cluster: Arc<Cluster>,
    metrics: Arc<Metrics>,
    fanout: Arc<FanOut>,
    learned: Arc<Learned>,
    /// One flush at a time: two would add the same counts twice.
    flushing: tokio::sync::Mutex<()>,
}

impl Tally {
    /// Flush `metrics`, `fanout` and `learned` to `cluster` until the tally
    /// is dropped.
    pub(super) fn start(
        cluster: Arc<Cluster>,
        metrics: Arc<Metrics>,
        fanout: Arc<FanOut>,
        learned: Arc<Learned>,
    ) -> Arc<Self> {
        let tally = Arc::new(Self {
            cluster,
            metrics,
            fanout,
            learned,
            flushing: tokio::sync::Mutex::new(()),
        });
        let weak: Weak<Self> = Arc::downgrade(&tally);
        tokio::spawn(async move {
            let mut idle = 0;
            loop {
                tokio::time::sleep(FLUSH_EVERY).await;
                let Some(tally) = weak.upgrade() else {
                    return;
                };
                idle += 1;
                if tally.flush(idle >= IDLE_READS).await {
                    idle = 0;
                }
            }
        });
        tally
    }

    /// Add what was counted since the last flush; with nothing to add, read
    /// what was learned only if `anyway`. Whether Redis was asked.
    pub(super) async fn flush(&self, anyway: bool) -> bool {
        let _one = self.flushing.lock().await;
        let delta = Delta {
            counters: self.metrics.unflushed(),
            ranks: self.fanout.unflushed(),
            links: self.learned.unflushed(),
        };
        if delta.is_empty() && !anyway {
            return false;
        }
        match self.cluster.add(&delta).await {
            Some(totals) => {
                self.metrics.flushed(&delta.counters);
                self.fanout.adopt(totals.ranks);
                self.learned.adopt_totals(totals.links);
            }
            None => {
                self.fanout.restore(delta.ranks);
                self.learned.restore(delta.links);
            }
        }
        true
    }
}
