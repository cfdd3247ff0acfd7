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
//! Every message is sealed with the replicas' key for the channel, with the
//! time it was sent (`seal`), and bounded ([`bounds::MAX_SHARED_EVENT`]):
//! one that anyone else publishes, or that is older than [`MAX_AGE`] (an
//! old one published again), is dropped unread. Within that minute a
//! message seen on the channel can be published again; what it then does
//! is what it did the first time.
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

use super::{Cluster, now_ms, once_a_minute};
use crate::bounds;

/// The channel, under the cluster's prefix.
pub(super) const CHANNEL: &str = "events";

/// How long to wait before subscribing again after losing Redis.
const RETRY: Duration = Duration::from_millis(500);

/// How old a message may be when it arrives (its sender's clock against
/// this replica's, either way): enough for a late delivery and clocks a
/// little apart, not for a message recorded and published again later.
pub(super) const MAX_AGE: Duration = Duration::from_secs(60);

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
    /// A call of `tool` with `args` (canonical, behind the id of the
    /// credential partition if any) was answered from the prefetch in Redis.
    Served {
        tool: String,
        args: String,
    },
    /// The replica `replica` rebuilt its catalog.
    Catalog {
        replica: String,
    },
}

/// An event as published: sealed with when it was sent.
#[derive(Serialize, Deserialize)]
struct Message {
    /// Milliseconds since the Unix epoch, by the sender's clock.
    sent_ms: u64,
    event: Event,
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
                            match cluster.open_event(&channel, message.get_payload_bytes()) {
                                Ok(event) => {
                                    let _ = cluster.events.send(event);
                                }
                                Err(why) => cluster.refused_event(why),
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
        let channel = self.key(&[CHANNEL]);
        let Some(message) = self.seal_event(&channel, event) else {
            return;
        };
        let mut conn = self.conn.clone();
        let _: Option<usize> = self
            .run("PUBLISH", async move {
                redis::AsyncCommands::publish(&mut conn, channel, message).await
            })
            .await;
    }

    /// `event` sealed for `channel`, now; `None` if no replica would take
    /// it (over [`bounds::MAX_SHARED_EVENT`]).
    fn seal_event(&self, channel: &str, event: &Event) -> Option<String> {
        let message = Message {
            sent_ms: now_ms(),
            event: event.clone(),
        };
        let text = serde_json::to_string(&message).ok()?;
        let sealed = self.key.seal(channel, &text);
        (sealed.len() <= bounds::MAX_SHARED_EVENT).then_some(sealed)
    }

    /// The event `payload` (received on `channel`) holds, if a replica
    /// sealed it for that channel within the last [`MAX_AGE`]; else why not.
    fn open_event(&self, channel: &str, payload: &[u8]) -> Result<Event, &'static str> {
        if payload.len() > bounds::MAX_SHARED_EVENT {
            return Err("too large");
        }
        let text = self
            .key
            .open(channel, payload)
            .ok_or("not sealed by a replica for this channel")?;
        let Message { sent_ms, event } =
            serde_json::from_slice(text).map_err(|_| "sealed, yet not an event")?;
        let age = now_ms().abs_diff(sent_ms);
        if u128::from(age) > MAX_AGE.as_millis() {
            return Err("sent over a minute away from now: an old message published again");
        }
        Ok(event)
    }

    /// A message on the channel was dropped: logged at most once a minute.
    fn refused_event(&self, why: &str) {
        if once_a_minute(&self.event_refused_ms) {
            tracing::warn!(
                "cluster: a message on {}'s channel was dropped: {why} (is something besides the replicas publishing there?)",
                self.server
            );
        }
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

#[cfg(test)]
mod tests {
    use super::super::{ClusterKey, MIN_KEY_BYTES};
    use super::*;

    fn cluster(byte: u8) -> std::sync::Arc<Cluster> {
        let key = ClusterKey::new(&[byte; MIN_KEY_BYTES]).unwrap();
        // Nothing listens there: nothing here reaches Redis.
        Cluster::connect("redis://127.0.0.1:1", "t", key).unwrap()
    }

    #[tokio::test]
    async fn only_a_recent_message_sealed_for_the_channel_by_a_replica_is_taken() {
        let (replica, stranger) = (cluster(1), cluster(2));
        let channel = replica.key(&[CHANNEL]);
        let event = Event::Catalog {
            replica: "other".into(),
        };
        let sealed = replica.seal_event(&channel, &event).unwrap();
        assert_eq!(replica.open_event(&channel, sealed.as_bytes()), Ok(event.clone()));

        let forged = serde_json::to_string(&Message {
            sent_ms: now_ms(),
            event: event.clone(),
        })
        .unwrap();
        assert!(
            replica.open_event(&channel, forged.as_bytes()).is_err(),
            "unsealed"
        );
        let theirs = stranger.seal_event(&channel, &event).unwrap();
        assert!(
            replica.open_event(&channel, theirs.as_bytes()).is_err(),
            "another key"
        );
        assert!(
            replica.open_event("t:other", sealed.as_bytes()).is_err(),
            "another channel"
        );
        let old = Message {
            sent_ms: now_ms() - MAX_AGE.as_millis() as u64 - 1_000,
            event,
        };
        let replayed = replica.key.seal(&channel, &serde_json::to_string(&old).unwrap());
        let why = replica.open_event(&channel, replayed.as_bytes()).unwrap_err();
        assert!(why.contains("old message"), "{why}");
        let huge = vec![b'0'; bounds::MAX_SHARED_EVENT + 1];
        assert_eq!(replica.open_event(&channel, &huge), Err("too large"));
    }

    #[tokio::test]
    async fn an_event_too_large_for_the_others_is_not_published() {
        let replica = cluster(1);
        let done = (0..bounds::MAX_SHARED_EVENT / 16)
            .map(|i| Invalidation {
                tool: format!("tool_{i}"),
                generation: 1,
            })
            .collect();
        let event = Event::Invalidated { done };
        assert_eq!(replica.seal_event("t:events", &event), None);
    }
}
