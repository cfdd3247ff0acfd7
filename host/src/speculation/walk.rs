//! The lists an agent walks item by item, and the next item of each.
//!
//! Agents open a list's items in order (the commits of a listing, a
//! block's children, the files of a directory), one after another, and
//! often stop after the first. Prefetching the first three items of every
//! list at once wastes the second and third on every list the agent stops
//! in, and cannot reach the fourth of one it walks on. So a learned link
//! offers only its first item when its source's result comes back, and
//! the next item once the agent calls the one before it: the record of
//! rank `k` is then the chance the agent goes on to item `k` having
//! called item `k - 1`, which is far higher than the chance of item `k`
//! on its own, and a walk goes as far as the agent does ([`MAX_ITEMS`]).
//!
//! A step is remembered by the key of the candidate offered (the tool,
//! its arguments as cached and the credential's partition), dispatched or
//! declined alike, and by the key each item not offered yet would have,
//! until its TTL ends: a call that matches one, answered from the cache or
//! not, queues the item after it (an agent that skips items goes on from
//! where it is), which the engine offers when it next plans
//! ([`Walks::advanced`]). The next item is made for the caller whose call
//! began the walk, under the same admission, as the first was. The fan-out
//! learns the first item as rank 0 and every next one as rank 1.
//!
//! Owns: the walks and their steps. Not: whether an item is worth
//! prefetching (the fan-out's record and the engine's gates), projecting
//! a result into items (`learned`), or the cache.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use super::cache::Key;
use super::engine::Admit;

/// Items of one list a walk may reach.
pub const MAX_ITEMS: usize = 16;
/// Steps remembered at most; the first to end are forgotten first.
const MAX_STEPS: usize = 4096;
/// Walks advanced and not offered yet, at most.
const MAX_ADVANCED: usize = 256;

/// One list the agent may walk: the calls of a link's items in the order
/// they are offered, and for whom and under what admission they are made.
pub struct Walk<P> {
    pub from: String,
    pub to: String,
    pub items: Vec<Map<String, Value>>,
    pub who: P,
    pub admit: Option<Admit>,
}

struct Step<P> {
    walk: Arc<Walk<P>>,
    place: usize,
    until: Instant,
}

struct Inner<P> {
    steps: HashMap<Key, Step<P>>,
    advanced: Vec<(Arc<Walk<P>>, usize)>,
}

pub struct Walks<P> {
    inner: Mutex<Inner<P>>,
}

impl<P> Default for Walks<P> {
    fn default() -> Self {
        Self {
            inner: Mutex::new(Inner {
                steps: HashMap::new(),
                advanced: Vec::new(),
            }),
        }
    }
}

impl<P> Walks<P> {
    fn lock(&self) -> MutexGuard<'_, Inner<P>> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Item `place` of `walk` was offered as `key`, for `ttl`.
    pub fn offered(&self, key: Key, walk: Arc<Walk<P>>, place: usize, ttl: Duration) {
        let mut inner = self.lock();
        let now = Instant::now();
        if inner.steps.len() >= MAX_STEPS {
            inner.steps.retain(|_, s| s.until > now);
            if inner.steps.len() >= MAX_STEPS
                && let Some(first) = inner
                    .steps
                    .iter()
                    .min_by_key(|(_, s)| s.until)
                    .map(|(k, _)| k.clone())
            {
                inner.steps.remove(&first);
            }
        }
        let until = now + ttl;
        inner.steps.insert(key, Step { walk, place, until });
    }

    /// A real call for `key` arrived: if it is an item of a walk, the next
    /// item (if the list has one) is queued for [`Walks::advanced`].
    pub fn called(&self, key: &Key) {
        let mut inner = self.lock();
        let Some(step) = inner.steps.remove(key) else {
            return;
        };
        let next = step.place + 1;
        if step.until > Instant::now() && next < step.walk.items.len() && inner.advanced.len() < MAX_ADVANCED
        {
            inner.advanced.push((step.walk, next));
        }
    }

    /// The walks advanced since last asked, each with the place of its item
    /// to offer next.
    pub fn advanced(&self) -> Vec<(Arc<Walk<P>>, usize)> {
        std::mem::take(&mut self.lock().advanced)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn key(sha: &str) -> Key {
        Key::of("get_commit", json!({"sha": sha}))
    }

    fn walk(n: usize) -> Arc<Walk<()>> {
        Arc::new(Walk {
            from: "list_commits".into(),
            to: "get_commit".into(),
            items: (0..n)
                .map(|i| json!({"sha": format!("c{i}")}).as_object().unwrap().clone())
                .collect(),
            who: (),
            admit: None,
        })
    }

    #[test]
    fn a_called_item_queues_the_next_once_and_the_last_queues_nothing() {
        let walks = Walks::default();
        let w = walk(2);
        walks.offered(key("c0"), w.clone(), 0, Duration::from_secs(60));
        walks.called(&key("c9"));
        assert!(walks.advanced().is_empty(), "a call of no item advances nothing");
        walks.called(&key("c0"));
        walks.called(&key("c0"));
        let next = walks.advanced();
        assert_eq!(next.len(), 1, "an item advances its walk once");
        assert_eq!(next[0].1, 1);
        walks.offered(key("c1"), w, 1, Duration::from_secs(60));
        walks.called(&key("c1"));
        assert!(walks.advanced().is_empty(), "the last item has no next");
    }

    #[test]
    fn a_step_past_its_ttl_advances_nothing() {
        let walks = Walks::default();
        walks.offered(key("c0"), walk(3), 0, Duration::ZERO);
        walks.called(&key("c0"));
        assert!(walks.advanced().is_empty());
    }
}
