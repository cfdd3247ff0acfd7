//! More than one machine: replicas of `toolhost serve --http` that share a
//! Redis (`[cluster] redis = "redis://..."`), so that a prefetch one
//! replica made answers a call another replica receives, and a write on
//! any replica drops what it made stale on all of them. Without a cluster
//! configured nothing here runs and no Redis is needed.
//!
//! - [`Cluster`] (this file): the connection, and whether Redis is
//!   reachable: every operation is bounded by [`OP_TIMEOUT`], and a failure
//!   is a miss, never a failed call. Redis going away is logged once, and so
//!   is its return; meanwhile each replica serves from its own cache alone.
//! - `prefetches`: prefetched results and the tools' generations in Redis.
//! - `seal`: the replicas' shared key, and the seal every entry carries:
//!   Redis is a store, not a witness, so nothing read from it is served
//!   on its word.
//! - `events`: what replicas tell each other (invalidations, prefetches
//!   served elsewhere, catalog changes), sealed too, relayed to this
//!   replica.
//! - `counters`: the speculation counters, the learned fan-out and the
//!   links learned from value flow of every replica, summed in Redis.
//!
//! Not here: what is cached and when (`speculation`), how results are
//! encoded (the speculation target's).

mod counters;
mod events;
mod prefetches;
mod seal;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use tokio::sync::broadcast;

pub use counters::{Delta, LinkCount, Rank, Totals};
pub use events::Event;
pub use prefetches::{Entry, Stored};
pub use seal::{ClusterKey, MIN_KEY_BYTES};

/// How long one Redis operation may take before it counts as failed (and
/// the call goes on without Redis): a prefetch that could be in Redis is
/// worth a round trip on a healthy network, not a stalled call.
pub const OP_TIMEOUT: Duration = Duration::from_millis(250);

/// `[cluster]` in the configuration.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterConfig {
    /// The shared Redis: `redis://[:PASSWORD@]HOST[:PORT][/DB]`.
    pub redis: String,
    /// Namespaces the keys and channels, for deployments sharing a Redis.
    #[serde(default = "default_prefix")]
    pub prefix: String,
    /// The environment variable holding the key every replica seals what it
    /// shares with (the same on every replica; see `ClusterKey`).
    #[serde(default = "default_key_env")]
    pub key_env: String,
}

fn default_prefix() -> String {
    "toolhost".into()
}

fn default_key_env() -> String {
    "TOOLHOST_CLUSTER_KEY".into()
}

impl ClusterConfig {
    /// The replicas' shared key, from the environment: a cluster does not
    /// start without one.
    pub fn key(&self) -> Result<ClusterKey, ClusterError> {
        ClusterKey::from_env(&self.key_env)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("[cluster] redis: {0}")]
    Url(String),
    #[error(
        "[cluster]: no shared key: the environment variable `{var}` (`key_env`) is not set; \
         set it on every replica to the same random secret of at least {min} bytes \
         (`openssl rand -hex 32`)",
        min = MIN_KEY_BYTES
    )]
    NoKey { var: String },
    #[error("[cluster]: the shared key has {bytes} bytes, fewer than {min}", min = MIN_KEY_BYTES)]
    ShortKey { bytes: usize },
    #[error(
        "[cluster]: the shared key in `{var}` has {bytes} bytes, fewer than {min} \
         (`openssl rand -hex 32` makes one)",
        min = MIN_KEY_BYTES
    )]
    ShortEnvKey { var: String, bytes: usize },
}

/// Milliseconds since the Unix epoch: what sealed entries and messages
/// carry, so that an old one stored or published again is told apart.
fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis().min(u128::from(u64::MAX)) as u64)
}

/// Whether a log line stamped in `last` may be written now: at most once a
/// minute, so that a cause that repeats on every operation, or whoever
/// floods the channel, does not flood the log too.
fn once_a_minute(last: &AtomicU64) -> bool {
    let now = now_ms();
    let then = last.load(Ordering::Relaxed);
    now.saturating_sub(then) >= 60_000
        && last
            .compare_exchange(then, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
}

/// The replicas' shared Redis.
pub struct Cluster {
    conn: ConnectionManager,
    /// `host:port` of the server, for log lines (never the URL: it may hold
    /// a password).
    server: String,
    /// Whether the last operation reached Redis.
    up: AtomicBool,
    /// Namespaces every key and channel, so deployments can share a Redis.
    prefix: String,
    /// This replica among those sharing the Redis: tells its own catalog
    /// changes from the others'.
    replica: String,
    events: broadcast::Sender<Event>,
    /// Seals what this replica stores, and opens what it reads.
    key: ClusterKey,
    /// When a dropped message was last logged ([`now_ms`]).
    event_refused_ms: AtomicU64,
    /// When an operation Redis refused was last logged ([`now_ms`]).
    op_refused_ms: AtomicU64,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster")
            .field("server", &self.server)
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

impl Cluster {
    /// A cluster on the Redis at `url`, keys under `prefix`, entries sealed
    /// with `key`. Connects lazily: a Redis down at start is the same as
    /// one lost later. Must run inside a Tokio runtime (it starts listening
    /// for invalidations).
    pub fn connect(url: &str, prefix: &str, key: ClusterKey) -> Result<Arc<Self>, ClusterError> {
        let client = redis::Client::open(url).map_err(|e| ClusterError::Url(e.to_string()))?;
        let info = client.get_connection_info();
        if let Some(password) = info.redis_settings().password() {
            crate::secrets::held::hold([("redis-password", password)]);
        }
        let server = info.addr().to_string();
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(OP_TIMEOUT))
            .set_response_timeout(Some(OP_TIMEOUT))
            .set_number_of_retries(1)
            .set_max_delay(Duration::from_secs(1));
        let conn = client
            .get_connection_manager_lazy(config)
            .map_err(|e| ClusterError::Url(e.to_string()))?;
        let (events, _) = broadcast::channel(1024);
        let since = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let replica = format!("{}-{since:x}", std::process::id());
        let cluster = Arc::new(Self {
            conn,
            server,
            up: AtomicBool::new(true),
            prefix: prefix.to_owned(),
            replica,
            events,
            key,
            event_refused_ms: AtomicU64::new(0),
            op_refused_ms: AtomicU64::new(0),
        });
        events::listen(client, Arc::downgrade(&cluster));
        Ok(cluster)
    }

    /// A key every replica derives alike from their shared one, for
    /// `label`'s use (the credential partitions).
    pub(crate) fn derived_key(&self, label: &str) -> [u8; 32] {
        self.key.derive(label)
    }

    /// The events published by every replica (this one's too).
    pub fn events(&self) -> broadcast::Receiver<Event> {
        self.events.subscribe()
    }

    /// Where the Redis is, `host:port` (never the URL: it may hold a
    /// password), and the prefix of the keys: for `toolhost stats`.
    pub fn describe(&self) -> String {
        format!("redis at {}, prefix {:?}", self.server, self.prefix)
    }

    /// Whether the last operation reached Redis.
    pub fn is_up(&self) -> bool {
        self.up.load(Ordering::Relaxed)
    }

    fn key(&self, parts: &[&str]) -> String {
        let mut key = self.prefix.clone();
        for part in parts {
            key.push(':');
            key.push_str(part);
        }
        key
    }

    /// Run one operation against Redis, within [`OP_TIMEOUT`]; `None` if it
    /// failed, logged only when Redis was reachable until then.
    async fn run<T, F>(&self, what: &str, op: F) -> Option<T>
    where
        F: Future<Output = redis::RedisResult<T>>,
    {
        let outcome = match tokio::time::timeout(OP_TIMEOUT, op).await {
            Ok(Ok(value)) => Ok(value),
            // Redis answered, with an error of its own (`NOPERM` from an ACL
            // that lacks a command, say): reachable, but misconfigured.
            Ok(Err(e)) if e.code().is_some() => {
                self.reached();
                self.refused(what, &e);
                return None;
            }
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err(format!("no answer within {} ms", OP_TIMEOUT.as_millis())),
        };
        match outcome {
            Ok(value) => {
                self.reached();
                Some(value)
            }
            Err(e) => {
                self.lost(&format!("{what}: {e}"));
                None
            }
        }
    }

    fn reached(&self) {
        if !self.up.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                "cluster: redis at {} is back: prefetches and invalidations are shared again",
                self.server
            );
        }
    }

    /// Redis refused an operation: logged at most once a minute, since the
    /// cause (a permission, a command renamed away) stays until an operator
    /// mends it.
    fn refused(&self, what: &str, e: &redis::RedisError) {
        if once_a_minute(&self.op_refused_ms) {
            tracing::warn!(
                "cluster: redis at {} refused {what}: {e} (check the replicas' Redis user may run it; see docs/deploy.md)",
                self.server
            );
        }
    }

    fn lost(&self, why: &str) {
        if self.up.swap(false, Ordering::Relaxed) {
            tracing::warn!(
                "cluster: redis at {} unreachable ({why}): serving from this replica's own cache until it is back",
                self.server
            );
        }
    }
}
