//! The speculation counters and the learned fan-out of every replica,
//! summed in Redis: `PREFIX:stats` (a hash of counter → total) and
//! `PREFIX:fanout:offered`, `:used` (hashes of rank → total) with
//! `:prior` (the link's declared probability, for the estimate).
//!
//! A replica adds what it counted since its last flush, in one pipeline
//! that also reads the fan-out totals back ([`Cluster::add`]), so that it
//! learns from every replica's calls; nothing here is on a call's path.
//! A rank is named by the JSON array `[from, to, rank]`, so that no tool
//! name can run into another.

use std::collections::{BTreeMap, HashMap};

use super::Cluster;

/// What one replica counted since its last flush.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Delta {
    /// Counter → increment.
    pub counters: BTreeMap<String, u64>,
    pub ranks: Vec<Rank>,
}

impl Delta {
    pub fn is_empty(&self) -> bool {
        self.counters.values().all(|&n| n == 0) && self.ranks.is_empty()
    }
}

/// One rank of a link's candidates: offers and uses (an increment in a
/// [`Delta`], a total in [`Totals`]), and the link's declared probability.
#[derive(Debug, Clone, PartialEq)]
pub struct Rank {
    pub from: String,
    pub to: String,
    pub rank: usize,
    pub offered: u64,
    pub used: u64,
    pub prior: f32,
}

/// What every replica counted.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Totals {
    pub counters: BTreeMap<String, u64>,
    pub ranks: Vec<Rank>,
}

fn field(from: &str, to: &str, rank: usize) -> String {
    serde_json::json!([from, to, rank]).to_string()
}

/// What `Cluster::totals` reads back, as Redis returns it: the counters,
/// then the fan-out's offered and used counts and priors, each by edge.
type TotalsReply = (
    BTreeMap<String, u64>,
    HashMap<String, u64>,
    HashMap<String, u64>,
    HashMap<String, String>,
);

fn ranks(
    offered: HashMap<String, u64>,
    used: HashMap<String, u64>,
    priors: HashMap<String, String>,
) -> Vec<Rank> {
    let mut out: Vec<Rank> = offered
        .into_iter()
        .filter_map(|(name, offered)| {
            let (from, to, rank): (String, String, usize) = serde_json::from_str(&name).ok()?;
            Some(Rank {
                used: used.get(&name).copied().unwrap_or(0),
                prior: priors.get(&name).and_then(|p| p.parse().ok()).unwrap_or(0.5),
                from,
                to,
                rank,
                offered,
            })
        })
        .collect();
    out.sort_by(|a, b| (&a.from, &a.to, a.rank).cmp(&(&b.from, &b.to, b.rank)));
    out
}

impl Cluster {
    fn fanout_keys(&self) -> [String; 3] {
        ["offered", "used", "prior"].map(|part| self.key(&["fanout", part]))
    }

    fn read_fanout(&self, pipe: &mut redis::Pipeline) {
        for key in self.fanout_keys() {
            pipe.hgetall(key);
        }
    }

    /// Add `delta` to the totals and read the fan-out totals back (this
    /// flush included); `None` if Redis could not be reached, and then
    /// nothing was added.
    pub async fn add(&self, delta: &Delta) -> Option<Vec<Rank>> {
        let mut pipe = redis::pipe();
        pipe.atomic();
        let stats = self.key(&["stats"]);
        for (counter, n) in delta.counters.iter().filter(|(_, n)| **n > 0) {
            pipe.hincr(&stats, counter, (*n).min(i64::MAX as u64) as i64)
                .ignore();
        }
        let [offered, used, prior] = self.fanout_keys();
        for r in &delta.ranks {
            let name = field(&r.from, &r.to, r.rank);
            pipe.hincr(&offered, &name, r.offered.min(i64::MAX as u64) as i64)
                .ignore();
            pipe.hincr(&used, &name, r.used.min(i64::MAX as u64) as i64)
                .ignore();
            pipe.hset(&prior, &name, r.prior.to_string()).ignore();
        }
        self.read_fanout(&mut pipe);
        let mut conn = self.conn.clone();
        let (offered, used, priors) = self
            .run("HINCRBY", async move { pipe.query_async(&mut conn).await })
            .await?;
        Some(ranks(offered, used, priors))
    }

    /// What every replica counted so far; `None` if Redis could not say.
    pub async fn totals(&self) -> Option<Totals> {
        let mut pipe = redis::pipe();
        pipe.hgetall(self.key(&["stats"]));
        self.read_fanout(&mut pipe);
        let mut conn = self.conn.clone();
        let (counters, offered, used, priors): TotalsReply = self
            .run("HGETALL", async move { pipe.query_async(&mut conn).await })
            .await?;
        Some(Totals {
            counters,
            ranks: ranks(offered, used, priors),
        })
    }
}
