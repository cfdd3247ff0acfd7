//! What replicas tell each other on `PREFIX:events`, relayed to this
//! replica's listeners ([`Cluster::events`]) by a task that holds its own
//! Redis connection and opens it again whenever it is lost:
//!
//! - invalidations: a write made the results of some tools stale;
//! - a prefetch served: a replica answered a call from a prefetch another
//!   made (in Redis), so that the one that made it does not count its own
//!   copy as wasted when it drops it unused;
//! - a catalog change: a replica rebuilt its catalog (its plugin directory
//!   reloaded, an upstream's tool list changed), so that every replica
//!   tells its own clients to list the tools again.
//!
//! A message can be late, or lost while Redis is away: correctness does
//! not rest on it (an entry in Redis is checked against its tool's
//! generation when read, and a local entry against the generation it was
//! made under before it is served); it drops the local copies early, so
//! that they stop taking room and a replica that only serves from its own
//! cache (Redis gone) has dropped what it heard of. A lost "served" is a
//! prefetch counted wasted that was not; a lost catalog change is a client
//! of another replica that lists the tools again only when its own replica
//! rebuilds.

use std::sync::Weak;
use std::time::Duration;

use futures::StreamExt;
use serde::{Deserialize, Serialize};
use tokio::sync::broadcast;

use super::Cluster;

/// The channel, under the cluster's prefix.
pub(super) const CHANNEL: &str = "events";

/// How long to wait before subscribing again after losing Redis.
const RETRY: Duration = Duration::from_millis(500);

/// The canonical arguments a "served" message carries at most: longer ones
/// are not published (their maker counts them wasted, nothing worse).
pub(super) const MAX_SERVED_ARGS: usize = 16 * 1024;

/// A tool whose results a write may have changed, and its generation since.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Invalidation {
    pub tool: String,
    pub generation: u64,
}

/// One message between replicas.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    Invalidated {
        done: Vec<Invalidation>,
    },
    /// A call of `tool` with `args` (canonical) was answered from the
    /// prefetch in Redis.
    Served {
        tool: String,
        args: String,
    },
    /// The replica `replica` rebuilt its catalog.
    Catalog {
        replica: String,
    },
}

/// Relay the published events until the cluster is dropped.
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
                            if let Ok(event) = serde_json::from_slice::<Event>(message.get_payload_bytes()) {
                                let _ = cluster.events.send(event);
                            }
                        }
                    }
                }
                Err(e) => tracing::debug!("cluster: cannot listen for events: {e}"),
            }
            tokio::time::sleep(RETRY).await;
        }
    });
}

impl Cluster {
    /// Tell every replica (this one too) of `event`; lost if Redis is away.
    pub(super) async fn publish(&self, event: &Event) {
        let Ok(message) = serde_json::to_string(event) else {
            return;
        };
        let mut conn = self.conn.clone();
        let channel = self.key(&[CHANNEL]);
        let _: Option<usize> = self
            .run("PUBLISH", async move {
                redis::AsyncCommands::publish(&mut conn, channel, message).await
            })
            .await;
    }

    /// A call of `tool` with `args` (canonical) was answered here from a
    /// prefetch another replica made.
    pub async fn served(&self, tool: &str, args: &str) {
        if args.len() > MAX_SERVED_ARGS {
            return;
        }
        let event = Event::Served {
            tool: tool.to_owned(),
            args: args.to_owned(),
        };
        self.publish(&event).await;
    }

    /// This replica rebuilt its catalog: every other replica's clients
    /// should list the tools again.
    pub async fn catalog_changed(&self) {
        let event = Event::Catalog {
            replica: self.replica.clone(),
        };
        self.publish(&event).await;
    }

    /// Call `changed` on each catalog change another replica publishes,
    /// until it returns false or the cluster is dropped.
    pub fn follow_catalog(&self, changed: impl Fn() -> bool + Send + 'static) {
        let me = self.replica.clone();
        let mut events = self.events();
        tokio::spawn(async move {
            loop {
                match events.recv().await {
                    Ok(Event::Catalog { replica }) if replica != me => {
                        if !changed() {
                            return;
                        }
                    }
                    Ok(_) => {}
                    // A change missed among many: tell the clients anyway.
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        if !changed() {
                            return;
                        }
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                }
            }
        });
    }
}
