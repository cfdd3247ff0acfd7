//! Prefetched results in Redis, and the generation of each tool they are
//! stored under.
//!
//! A tool's generation (`PREFIX:g:TOOL`) is a counter every write that may
//! change the tool's results increments ([`Cluster::invalidate`]). An entry
//! (`PREFIX:p:TOOL:DIGEST`, the digest of its canonical arguments, set with
//! the entry's TTL) records the generation its prefetch read *before* it
//! ran, and is served only while that is still the tool's generation, read
//! in the same `MGET`: so a prefetch that began before a write, wherever
//! it ran and however late it lands, is never served after the write, and
//! no replica needs to have heard of the write for that.

use std::time::Duration;

use redis::AsyncCommands;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::Cluster;
use super::events::{Event, Invalidation};

/// A prefetched result as stored in Redis.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// The tool's generation when its prefetch began.
    pub generation: u64,
    /// How long the prefetch took: what serving it saves.
    pub took_us: u64,
    /// The result, as the speculation target encodes it.
    pub body: Value,
}

impl Entry {
    pub fn took(&self) -> Duration {
        Duration::from_micros(self.took_us)
    }
}

impl Cluster {
    fn generation_key(&self, tool: &str) -> String {
        self.key(&["g", tool])
    }

    fn entry_key(&self, tool: &str, args: &str) -> String {
        let digest = hex::encode(Sha256::digest(args.as_bytes()));
        self.key(&["p", tool, &digest])
    }

    /// `tool`'s generation now; `None` if Redis could not say.
    pub async fn generation(&self, tool: &str) -> Option<u64> {
        let mut conn = self.conn.clone();
        let key = self.generation_key(tool);
        let got: Option<u64> = self.run("GET", async move { conn.get(key).await }).await?;
        Some(got.unwrap_or(0))
    }

    /// `tool`'s generation now and the entry for `args` (its canonical
    /// arguments) if one is stored under it; `None` if Redis could not say.
    /// An entry that does not parse is treated as absent.
    pub async fn fetch(&self, tool: &str, args: &str) -> Option<(u64, Option<Entry>)> {
        let mut conn = self.conn.clone();
        let keys = [self.generation_key(tool), self.entry_key(tool, args)];
        let (generation, entry): (Option<u64>, Option<String>) =
            self.run("MGET", async move { conn.mget(&keys).await }).await?;
        let generation = generation.unwrap_or(0);
        let entry = entry
            .and_then(|text| serde_json::from_str::<Entry>(&text).ok())
            .filter(|e| e.generation == generation);
        Some((generation, entry))
    }

    /// Store `entry` for `args` of `tool` for `ttl`. A store that fails is
    /// a prefetch the other replicas do not get, nothing more.
    pub async fn store(&self, tool: &str, args: &str, entry: &Entry, ttl: Duration) {
        let ms = ttl.as_millis().min(u128::from(u64::MAX)) as u64;
        if ms == 0 {
            return;
        }
        let Ok(text) = serde_json::to_string(entry) else {
            return;
        };
        let mut conn = self.conn.clone();
        let key = self.entry_key(tool, args);
        let _: Option<()> = self
            .run("PSETEX", async move { conn.pset_ex(key, text, ms).await })
            .await;
    }

    /// A write may have changed the results of `tools`: increment their
    /// generations (so no replica serves what was stored before) and tell
    /// every replica to drop its own copies. The new generations, or `None`
    /// if Redis could not be reached.
    pub async fn invalidate(&self, tools: &[String]) -> Option<Vec<Invalidation>> {
        if tools.is_empty() {
            return Some(Vec::new());
        }
        let mut pipe = redis::pipe();
        for tool in tools {
            pipe.incr(self.generation_key(tool), 1u64);
        }
        let mut conn = self.conn.clone();
        let generations: Vec<u64> = self
            .run("INCR", async move { pipe.query_async(&mut conn).await })
            .await?;
        let done: Vec<Invalidation> = tools
            .iter()
            .zip(generations)
            .map(|(tool, generation)| Invalidation {
                tool: tool.clone(),
                generation,
            })
            .collect();
        self.publish(&Event::Invalidated { done: done.clone() }).await;
        Some(done)
    }
}
