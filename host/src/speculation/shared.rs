//! The engine's side of a cluster (`crate::cluster`): which generation of
//! each tool this replica's own cache entries were made under, so that an
//! entry is served only while its tool has not been written since, on any
//! replica.
//!
//! A replica learns a tool's generation when it prefetches it, when it
//! confirms a local entry before serving it (one `GET`), when it reads
//! Redis on a miss, and from the invalidations other replicas publish;
//! whenever the generation it learns differs from the one its entries were
//! made under, it drops them (and discards the tool's prefetches in
//! flight, as a local write would). While Redis is unreachable nothing can
//! be confirmed, and the local cache serves alone, as one machine does.
//!
//! A prefetch this replica made that another served from Redis is marked
//! used here when that replica says so, so that it is not also counted
//! wasted here when it expires, and so that the rank of the follow-up it
//! was offered at counts as used: a replica that never learned of the
//! others' hits would find its prefetches unused and stop making them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use tokio::sync::broadcast::error::RecvError;

use super::cache::{Key, SpecCache};
use super::fanout::FanOut;
use crate::cluster::{Cluster, Event};

pub(super) struct Shared<V> {
    cluster: Arc<Cluster>,
    cache: Arc<SpecCache<V>>,
    fanout: Arc<FanOut>,
    /// The generation of each tool this replica's entries were made under.
    observed: Mutex<HashMap<String, u64>>,
}

impl<V: Clone + Send + Sync + 'static> Shared<V> {
    /// The cluster's side of `cache`; follows the invalidations published
    /// until it is dropped.
    pub(super) fn new(cluster: Arc<Cluster>, cache: Arc<SpecCache<V>>, fanout: Arc<FanOut>) -> Arc<Self> {
        let shared = Arc::new(Self {
            cluster,
            cache,
            fanout,
            observed: Mutex::default(),
        });
        let mut published = shared.cluster.events();
        let weak: Weak<Self> = Arc::downgrade(&shared);
        tokio::spawn(async move {
            loop {
                let event = match published.recv().await {
                    Ok(event) => event,
                    // Missed ones are caught when entries are confirmed.
                    Err(RecvError::Lagged(_)) => continue,
                    Err(RecvError::Closed) => return,
                };
                let Some(shared) = weak.upgrade() else {
                    return;
                };
                match event {
                    Event::Invalidated { done } => {
                        for invalidation in done {
                            shared.observe(&invalidation.tool, invalidation.generation);
                        }
                    }
                    Event::Served { tool, args } => {
                        if let Some(key) = Key::from_shared(tool, args) {
                            shared.cache.served_elsewhere(&key);
                            shared.fanout.called(&key);
                        }
                    }
                    Event::Catalog { .. } => {}
                }
            }
        });
        shared
    }

    pub(super) fn cluster(&self) -> &Arc<Cluster> {
        &self.cluster
    }

    /// `tool` is at `generation`: drop this replica's entries of it if they
    /// were made under another.
    pub(super) fn observe(&self, tool: &str, generation: u64) {
        let stale = {
            let mut observed = self.observed.lock().unwrap_or_else(|p| p.into_inner());
            match observed.insert(tool.to_owned(), generation) {
                // Nothing of the tool was made under a generation unseen.
                None => false,
                Some(before) => before != generation,
            }
        };
        if stale {
            self.cache.invalidate(&[tool.to_owned()]);
        }
    }

    /// `tool`'s generation now, learned; `None` while Redis is unreachable.
    pub(super) async fn generation(&self, tool: &str) -> Option<u64> {
        let generation = self.cluster.generation(tool).await?;
        self.observe(tool, generation);
        Some(generation)
    }

    /// Whether this replica's entries of `tool` may still be served: no
    /// replica wrote it since they were made, or Redis cannot say; if not,
    /// they are dropped.
    pub(super) async fn confirm(&self, tool: &str) -> bool {
        let before = self
            .observed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(tool)
            .copied();
        match (self.generation(tool).await, before) {
            (None, _) => true,
            (Some(now), Some(before)) => now == before,
            // Made while Redis was unreachable: a write elsewhere may have
            // been missed.
            (Some(_), None) => {
                self.cache.invalidate(&[tool.to_owned()]);
                false
            }
        }
    }

    /// A write made the results of `tools` stale (their local entries are
    /// already dropped): tell every replica.
    pub(super) async fn invalidate(&self, tools: &[String]) {
        if let Some(done) = self.cluster.invalidate(tools).await {
            for invalidation in done {
                self.observe(&invalidation.tool, invalidation.generation);
            }
        }
    }
}
