//! The invalidations replicas publish on `PREFIX:invalidate`, relayed to
//! this replica's listeners ([`Cluster::invalidations`]) by a task that
//! holds its own Redis connection and opens it again whenever it is lost.
//!
//! A message can be late, or lost while Redis is away: correctness does
//! not rest on it (an entry in Redis is checked against its tool's
//! generation when read, and a local entry against the generation it was
//! made under before it is served); it drops the local copies early, so
//! that they stop taking room and a replica that only serves from its own
//! cache (Redis gone) has dropped what it heard of.

use std::sync::Weak;
use std::time::Duration;

use futures::StreamExt;
use serde::{Deserialize, Serialize};

use super::Cluster;

/// The channel, under the cluster's prefix.
pub(super) const CHANNEL: &str = "invalidate";

/// How long to wait before subscribing again after losing Redis.
const RETRY: Duration = Duration::from_millis(500);

/// A tool whose results a write may have changed, and its generation since.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Invalidation {
    pub tool: String,
    pub generation: u64,
}

/// Relay the published invalidations until the cluster is dropped.
pub(super) fn listen(client: redis::Client, cluster: Weak<Cluster>) {
    tokio::spawn(async move {
        loop {
            let Some(channel) = cluster.upgrade().map(|c| c.key(&[CHANNEL])) else {
                return;
            };
            match client.get_async_pubsub().await {
                Ok(mut pubsub) => {
                    if let Err(e) = pubsub.subscribe(&channel).await {
                        tracing::debug!("cluster: not subscribed to {channel}: {e}");
                    } else {
                        let mut messages = pubsub.on_message();
                        while let Some(message) = messages.next().await {
                            let Some(cluster) = cluster.upgrade() else {
                                return;
                            };
                            let Ok(done) =
                                serde_json::from_slice::<Vec<Invalidation>>(message.get_payload_bytes())
                            else {
                                continue;
                            };
                            for invalidation in done {
                                let _ = cluster.invalidations.send(invalidation);
                            }
                        }
                    }
                }
                Err(e) => tracing::debug!("cluster: cannot listen for invalidations: {e}"),
            }
            tokio::time::sleep(RETRY).await;
        }
    });
}
