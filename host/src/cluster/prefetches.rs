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
//!
//! Nothing read from Redis is served on its word: a generation is read at
//! most 21 bytes of it, and an entry at most
//! [`bounds::MAX_SHARED_ENTRY`] bytes of it (`GETRANGE`, so a larger one is
//! never even transferred whole), must carry the seal of the replicas' key
//! for its own Redis key (`seal`), and must not have outlived the expiry
//! sealed in it (a replayed old entry, whatever TTL Redis gives it). One
//! that fails is [`Stored::Refused`], never an entry; the caller counts and
//! logs it, and bounds what it decodes by its tool's own output cap.

use std::time::Duration;

use redis::AsyncCommands;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::events::{Event, Invalidation};
use super::{Cluster, now_ms};
use crate::bounds;

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

/// An entry as sealed in Redis: with when it expires, so that the seal
/// covers its lifetime too.
#[derive(Serialize, Deserialize)]
struct Sealed {
    /// Milliseconds since the Unix epoch.
    expires_ms: u64,
    entry: Entry,
}

/// What Redis holds for a call, as far as this replica believes it.
#[derive(Debug, Clone, PartialEq)]
pub enum Stored {
    /// Nothing servable: no entry, or one made under another generation.
    Absent,
    Entry(Entry),
    /// An entry that is not what a replica sealed for this key, or too
    /// large, or expired: never served. Why, for the log.
    Refused(String),
}

/// The most bytes of a generation read: a `u64` has at most 20 digits, so
/// one byte more tells a value that is not one, however long it is.
const GENERATION_BYTES: isize = 20;

/// The generation a generation key holds (0 if none); `None` if it holds
/// what no `INCR` writes, which is then no answer at all.
fn generation_of(raw: &[u8]) -> Option<u64> {
    if raw.is_empty() {
        return Some(0);
    }
    std::str::from_utf8(raw).ok()?.parse().ok()
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
        let raw: Vec<u8> = self
            .run("GETRANGE", async move {
                conn.getrange(key, 0, GENERATION_BYTES).await
            })
            .await?;
        generation_of(&raw)
    }

    /// `tool`'s generation now and what is stored for `args` (its canonical
    /// arguments) under it; `None` if Redis could not say.
    pub async fn fetch(&self, tool: &str, args: &str) -> Option<(u64, Stored)> {
        let mut conn = self.conn.clone();
        let key = self.entry_key(tool, args);
        let mut pipe = redis::pipe();
        // One byte more than the cap: enough to tell a value over it.
        pipe.getrange(self.generation_key(tool), 0, GENERATION_BYTES)
            .getrange(&key, 0, bounds::MAX_SHARED_ENTRY as isize);
        let (generation, sealed): (Vec<u8>, Vec<u8>) = self
            .run("GETRANGE", async move { pipe.query_async(&mut conn).await })
            .await?;
        let generation = generation_of(&generation)?;
        Some((generation, self.open(&key, &sealed, generation)))
    }

    /// The entry `sealed` (read from `key`) holds, if it is to be believed
    /// and was made under `generation`.
    fn open(&self, key: &str, sealed: &[u8], generation: u64) -> Stored {
        if sealed.is_empty() {
            return Stored::Absent;
        }
        if sealed.len() > bounds::MAX_SHARED_ENTRY {
            return Stored::Refused(format!("over {} bytes", bounds::MAX_SHARED_ENTRY));
        }
        let Some(text) = self.key.open(key, sealed) else {
            return Stored::Refused("not sealed by a replica for this key".into());
        };
        let Ok(Sealed { expires_ms, entry }) = serde_json::from_slice::<Sealed>(text) else {
            return Stored::Refused("sealed, yet not an entry".into());
        };
        if expires_ms < now_ms() {
            return Stored::Refused("expired: an old entry stored again".into());
        }
        if entry.generation != generation {
            return Stored::Absent;
        }
        Stored::Entry(entry)
    }

    /// Store `entry` for `args` of `tool` for `ttl`, sealed. A store that
    /// fails is a prefetch the other replicas do not get, nothing more.
    pub async fn store(&self, tool: &str, args: &str, entry: Entry, ttl: Duration) {
        let ms = ttl.as_millis().min(u128::from(u64::MAX)) as u64;
        if ms == 0 {
            return;
        }
        let sealed = Sealed {
            expires_ms: now_ms().saturating_add(ms),
            entry,
        };
        let Ok(text) = serde_json::to_string(&sealed) else {
            return;
        };
        let key = self.entry_key(tool, args);
        let text = self.key.seal(&key, &text);
        // Another replica would refuse it: not worth the round trip.
        if text.len() > bounds::MAX_SHARED_ENTRY {
            return;
        }
        let mut conn = self.conn.clone();
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::{ClusterKey, MIN_KEY_BYTES};
    use super::*;

    /// What a replica stores for `entry`, expiring at `expires_ms`.
    fn sealed(cluster: &Cluster, key: &str, entry: &Entry, expires_ms: u64) -> String {
        let text = serde_json::to_string(&Sealed {
            expires_ms,
            entry: entry.clone(),
        })
        .unwrap();
        cluster.key.seal(key, &text)
    }

    #[test]
    fn a_generation_is_a_number_of_at_most_twenty_digits_or_no_answer() {
        assert_eq!(generation_of(b""), Some(0));
        assert_eq!(generation_of(b"42"), Some(42));
        assert_eq!(generation_of(b"18446744073709551615"), Some(u64::MAX));
        // What GETRANGE leaves of a longer value, and what INCR never writes.
        assert_eq!(generation_of(b"184467440737095516159"), None);
        assert_eq!(generation_of(b"forged"), None);
    }

    #[tokio::test]
    async fn only_a_sealed_unexpired_entry_of_the_generation_now_opens() {
        let key = ClusterKey::new(&[9; MIN_KEY_BYTES]).unwrap();
        // Nothing listens there: nothing here reaches Redis.
        let cluster = Cluster::connect("redis://127.0.0.1:1", "t", key).unwrap();
        let entry = Entry {
            generation: 3,
            took_us: 10,
            body: json!({"result": "r"}),
        };
        let at = cluster.entry_key("get_issue", "{\"key\":\"A\"}");
        let later = now_ms() + 60_000;
        let good = sealed(&cluster, &at, &entry, later);
        assert_eq!(
            cluster.open(&at, good.as_bytes(), 3),
            Stored::Entry(entry.clone())
        );
        assert_eq!(
            cluster.open(&at, good.as_bytes(), 4),
            Stored::Absent,
            "another generation"
        );
        assert_eq!(cluster.open(&at, b"", 3), Stored::Absent);
        let refused = |stored: Stored| matches!(stored, Stored::Refused(_));
        let elsewhere = cluster.entry_key("get_issue", "{\"key\":\"B\"}");
        assert!(refused(cluster.open(&elsewhere, good.as_bytes(), 3)), "moved");
        let edited = good.replace("\"r\"", "\"forged\"");
        assert!(refused(cluster.open(&at, edited.as_bytes(), 3)), "edited");
        let unsealed = serde_json::to_string(&Sealed {
            expires_ms: later,
            entry: entry.clone(),
        })
        .unwrap();
        assert!(refused(cluster.open(&at, unsealed.as_bytes(), 3)), "unsealed");
        let expired = sealed(&cluster, &at, &entry, now_ms() - 1);
        assert!(
            refused(cluster.open(&at, expired.as_bytes(), 3)),
            "stored again after it expired"
        );
        let over = vec![b'0'; bounds::MAX_SHARED_ENTRY + 1];
        assert!(refused(cluster.open(&at, &over, 3)), "over the cap");
    }
}
