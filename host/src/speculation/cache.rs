//! The request-keyed cache of prefetched results.
//!
//! Keyed by (tool, canonical arguments, credential partition): the
//! arguments a call has once the pipeline has prepared, validated and
//! transformed them, with object keys sorted, so a real call finds the
//! prefetch made for it; and the [`Partition`] of the credential the
//! answer was fetched with, so an answer fetched with one caller's
//! credential is never served to, nor joined by, a call made with
//! another's. Prefetches fill
//! it, and so may a real call whose result is checked against its source
//! before every use ([`SpecCache::keep`]: a native read's whole file), for
//! the calls that follow it; such an entry is told apart when it serves
//! ([`Lookup::Kept`]), so what prefetching achieved is counted alone, and
//! it is never wasted (nothing ran for it that would not have run anyway).
//!
//! - An entry lives for its value model's freshness TTL and is never served
//!   after it.
//! - The cache is bounded in bytes; the least recently used entry goes first.
//! - A real call that arrives while its prefetch is still running joins it
//!   instead of running again.
//! - Invalidating a tool (a mutating call named it) drops its entries and
//!   bumps its generation: a prefetch of that tool still in flight is
//!   discarded when it lands, and calls that joined it run for real, so the
//!   write's effect is always seen.
//!
//! Every prefetch dispatched ends served or wasted: an entry dropped
//! without ever being served (expired, evicted, invalidated, or still held
//! when the session ends, [`SpecCache::flush`]) is counted as wasted, and so
//! is a dispatched prefetch that never stored its result (it failed, timed
//! out, was cancelled or invalidated while running). The count goes to a
//! counter the caller gives, so it survives the cache. An entry found
//! stale is neither: the metrics count it as stale.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::watch;

/// Which credential an answer was fetched with: [`Partition::SHARED`]
/// for the host's own (native tools, upstream servers, a plugin's secrets
/// from the environment, the same for every caller), else an opaque id
/// derived from the values a caller's call used (a keyed hash, never the
/// values). Answers are served only within their partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Partition(Option<[u8; PARTITION_BYTES]>);

/// The bytes of a partition id: 128 bits, as collision-free as need be.
pub const PARTITION_BYTES: usize = 16;

impl Partition {
    /// The host's own credential, shared by every caller.
    pub const SHARED: Self = Self(None);

    /// The partition of a caller's own credential, by its id.
    pub fn of(id: [u8; PARTITION_BYTES]) -> Self {
        Self(Some(id))
    }
}

/// (tool, canonical arguments, partition).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Key {
    pub tool: String,
    args: String,
    partition: Partition,
}

impl Key {
    pub fn new(tool: &str, args: &serde_json::Map<String, Value>, partition: Partition) -> Self {
        let mut text = String::new();
        canonical(&Value::Object(args.clone()), &mut text);
        Self {
            tool: tool.to_owned(),
            args: text,
            partition,
        }
    }

    /// The key of `tool` whose [`Key::shared`] text is `shared`; `None` if
    /// it is not one.
    pub(crate) fn from_shared(tool: String, shared: String) -> Option<Self> {
        // Canonical arguments are a JSON object: they start with `{`.
        if shared.starts_with('{') {
            return Some(Self {
                tool,
                args: shared,
                partition: Partition::SHARED,
            });
        }
        let (id, args) = shared.split_once(':')?;
        let id: [u8; PARTITION_BYTES] = hex::decode(id).ok()?.try_into().ok()?;
        Some(Self {
            tool,
            args: args.to_owned(),
            partition: Partition::of(id),
        })
    }

    /// What names this entry among the replicas (its Redis key, the
    /// messages saying it was served): the canonical arguments, behind the
    /// partition's id when it is a caller's own.
    pub(crate) fn shared(&self) -> String {
        match &self.partition.0 {
            None => self.args.clone(),
            Some(id) => format!("{}:{}", hex::encode(id), self.args),
        }
    }
}

/// JSON with object keys sorted at every level.
fn canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                canonical(&map[k], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(v, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// A prefetched result and what it cost to get.
#[derive(Debug, Clone)]
pub struct Prefetched<V> {
    pub value: V,
    /// How long the prefetch took to execute: the time a hit saves.
    pub took: Duration,
}

enum Slot<V> {
    Ready {
        item: Prefetched<V>,
        bytes: usize,
        expires: Instant,
        used: bool,
        /// Left by a real call, not a prefetch.
        kept: bool,
        last_use: u64,
    },
    InFlight {
        rx: watch::Receiver<Option<Prefetched<V>>>,
    },
}

struct Inner<V> {
    slots: HashMap<Key, Slot<V>>,
    generations: HashMap<String, u64>,
    bytes: usize,
    clock: u64,
    wasted: Arc<AtomicU64>,
}

pub struct SpecCache<V> {
    inner: Mutex<Inner<V>>,
    max_bytes: usize,
    wasted: Arc<AtomicU64>,
}

/// What a real call finds.
pub enum Lookup<V> {
    Hit(Prefetched<V>),
    /// What a real call before it left ([`SpecCache::keep`]).
    Kept(Prefetched<V>),
    /// Its prefetch is running: wait for it with [`Join::wait`].
    Pending(Join<V>),
    Miss,
}

/// A real call waiting on a prefetch in flight.
pub struct Join<V> {
    rx: watch::Receiver<Option<Prefetched<V>>>,
}

impl<V: Clone> Join<V> {
    /// The prefetch's result, or `None` if it failed, timed out or was
    /// invalidated: the caller then runs the call itself.
    pub async fn wait(mut self) -> Option<Prefetched<V>> {
        loop {
            if let Some(v) = self.rx.borrow_and_update().clone() {
                return Some(v);
            }
            // The sender is dropped without a value when the prefetch fails.
            self.rx.changed().await.ok()?;
        }
    }
}

/// The right to fill one key, held by the prefetch that runs for it. If it
/// is dropped without [`SpecCache::complete`] storing its result, joined
/// calls run for real, and once [armed](Ticket::arm) (its prefetch was
/// dispatched) it counts as wasted.
pub struct Ticket<V> {
    key: Key,
    generation: u64,
    tx: watch::Sender<Option<Prefetched<V>>>,
    armed: bool,
    wasted: Arc<AtomicU64>,
}

impl<V> Ticket<V> {
    /// Its prefetch is dispatched: from now on it is served or wasted.
    pub fn arm(&mut self) {
        self.armed = true;
    }
}

impl<V> Drop for Ticket<V> {
    fn drop(&mut self) {
        if self.armed {
            self.wasted.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl<V: Clone> SpecCache<V> {
    /// A cache of `max_bytes` that counts what it wastes into `wasted`.
    pub fn new(max_bytes: usize, wasted: Arc<AtomicU64>) -> Self {
        let inner = Inner {
            slots: HashMap::new(),
            generations: HashMap::new(),
            bytes: 0,
            clock: 0,
            wasted: wasted.clone(),
        };
        Self {
            inner: Mutex::new(inner),
            max_bytes,
            wasted,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner<V>> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn lookup(&self, key: &Key) -> Lookup<V> {
        let mut inner = self.lock();
        inner.drop_abandoned(key);
        inner.clock += 1;
        let now = inner.clock;
        match inner.slots.get_mut(key) {
            Some(Slot::Ready { expires, .. }) if *expires <= Instant::now() => {
                inner.remove(key);
                Lookup::Miss
            }
            Some(Slot::Ready {
                item,
                used,
                kept,
                last_use,
                ..
            }) => {
                *used = true;
                *last_use = now;
                if *kept {
                    Lookup::Kept(item.clone())
                } else {
                    Lookup::Hit(item.clone())
                }
            }
            Some(Slot::InFlight { rx }) => Lookup::Pending(Join { rx: rx.clone() }),
            None => Lookup::Miss,
        }
    }

    /// Another replica answered a call from the copy of `key`'s prefetch it
    /// found in Redis: the entry held here was used, and is not wasted.
    pub fn served_elsewhere(&self, key: &Key) {
        if let Some(Slot::Ready { used, .. }) = self.lock().slots.get_mut(key) {
            *used = true;
        }
    }

    /// Claim `key` for a prefetch; `None` if it is fresh or already running.
    pub fn begin(&self, key: Key) -> Option<Ticket<V>> {
        let mut inner = self.lock();
        inner.drop_abandoned(&key);
        match inner.slots.get(&key) {
            Some(Slot::Ready { expires, .. }) if *expires > Instant::now() => return None,
            Some(Slot::InFlight { .. }) => return None,
            Some(Slot::Ready { .. }) => inner.remove(&key),
            None => {}
        }
        let generation = inner.generations.get(&key.tool).copied().unwrap_or(0);
        let (tx, rx) = watch::channel(None);
        inner.slots.insert(key.clone(), Slot::InFlight { rx });
        Some(Ticket {
            key,
            generation,
            tx,
            armed: false,
            wasted: self.wasted.clone(),
        })
    }

    /// Store a prefetch's result for `ttl`. A result for a tool invalidated
    /// since the prefetch began is discarded.
    pub fn complete(&self, mut ticket: Ticket<V>, item: Prefetched<V>, bytes: usize, ttl: Duration) {
        let mut inner = self.lock();
        let current = inner.generations.get(&ticket.key.tool).copied().unwrap_or(0);
        let mine = ticket.tx.subscribe();
        let still_ours =
            matches!(inner.slots.get(&ticket.key), Some(Slot::InFlight { rx }) if rx.same_channel(&mine));
        if current != ticket.generation || !still_ours || bytes > self.max_bytes {
            if still_ours {
                inner.slots.remove(&ticket.key);
            }
            return; // dropping the ticket releases joined calls to run for real
        }
        // Stored: the entry is now what is served or wasted.
        ticket.armed = false;
        inner.slots.remove(&ticket.key);
        inner.clock += 1;
        let last_use = inner.clock;
        let expires = Instant::now() + ttl;
        let slot = Slot::Ready {
            item: item.clone(),
            bytes,
            expires,
            used: false,
            kept: false,
            last_use,
        };
        inner.slots.insert(ticket.key.clone(), slot);
        inner.bytes += bytes;
        inner.evict_to(self.max_bytes);
        drop(inner);
        let _ = ticket.tx.send(Some(item));
    }

    /// Keep a real call's result under `key` for `ttl`, for the calls that
    /// follow; only for results checked against their source before each
    /// use, since writers do not drop them. A prefetch running for `key`
    /// is left to land (the real call did not join it, so it is newer only
    /// if it began later, and either is checked when served).
    pub fn keep(&self, key: Key, item: Prefetched<V>, bytes: usize, ttl: Duration) {
        if bytes > self.max_bytes {
            return;
        }
        let mut inner = self.lock();
        inner.drop_abandoned(&key);
        if matches!(inner.slots.get(&key), Some(Slot::InFlight { .. })) {
            return;
        }
        inner.remove(&key);
        inner.clock += 1;
        let last_use = inner.clock;
        let slot = Slot::Ready {
            item,
            bytes,
            expires: Instant::now() + ttl,
            used: true,
            kept: true,
            last_use,
        };
        inner.slots.insert(key, slot);
        inner.bytes += bytes;
        inner.evict_to(self.max_bytes);
    }

    /// Drop every entry of `tools` and discard their prefetches in flight.
    pub fn invalidate(&self, tools: &[String]) {
        let mut inner = self.lock();
        for tool in tools {
            *inner.generations.entry(tool.clone()).or_default() += 1;
        }
        let doomed: Vec<Key> = inner
            .slots
            .keys()
            .filter(|k| tools.contains(&k.tool))
            .cloned()
            .collect();
        for key in doomed {
            inner.remove(&key);
        }
    }

    /// Whether `key` is held (ready and unexpired) or being prefetched.
    pub fn holds(&self, key: &Key) -> bool {
        match self.lock().slots.get(key) {
            Some(Slot::Ready { expires, .. }) => *expires > Instant::now(),
            Some(Slot::InFlight { .. }) => true,
            None => false,
        }
    }

    /// What `key`'s entry holds, if one is ready and unexpired.
    pub fn held(&self, key: &Key) -> Option<V> {
        match self.lock().slots.get(key) {
            Some(Slot::Ready { item, expires, .. }) if *expires > Instant::now() => Some(item.value.clone()),
            _ => None,
        }
    }

    /// Drop `key`'s entry, to fetch it again: wasted if nothing used it.
    pub fn drop_entry(&self, key: &Key) {
        self.lock().remove(key);
    }

    /// Drop `key`'s entry: what it holds is no longer current. Not counted
    /// as wasted (the metrics count it as stale).
    pub fn discard(&self, key: &Key) {
        let mut inner = self.lock();
        if let Some(Slot::Ready { used, .. }) = inner.slots.get_mut(key) {
            *used = true;
            inner.remove(key);
        }
    }

    /// Drop expired entries now (they are also dropped when looked up).
    pub fn sweep(&self) {
        let mut inner = self.lock();
        let now = Instant::now();
        let expired: Vec<Key> = inner
            .slots
            .iter()
            .filter(|(_, s)| matches!(s, Slot::Ready { expires, .. } if *expires <= now))
            .map(|(k, _)| k.clone())
            .collect();
        for key in expired {
            inner.remove(&key);
        }
    }

    /// The session ends: drop every entry, counting those never served as
    /// wasted. Prefetches still running are not waited for (their tickets
    /// count themselves when they are dropped) and store nothing after this.
    pub fn flush(&self) {
        let mut inner = self.lock();
        let keys: Vec<Key> = inner.slots.keys().cloned().collect();
        for key in &keys {
            inner.remove(key);
        }
        // A prefetch in flight finds its slot gone and stores nothing.
        inner.slots.clear();
    }

    /// Prefetches not served yet, held or still running: wasted unless a
    /// call comes for them in time.
    pub fn unserved(&self) -> u64 {
        let inner = self.lock();
        let unserved = |slot: &&Slot<V>| match slot {
            Slot::Ready { used, .. } => !used,
            // Unless its prefetch gave up (its ticket counted itself).
            Slot::InFlight { rx } => rx.has_changed().is_ok(),
        };
        inner.slots.values().filter(unserved).count() as u64
    }

    #[cfg(test)]
    pub fn bytes(&self) -> usize {
        self.lock().bytes
    }
}

impl<V> Inner<V> {
    /// A prefetch whose ticket was dropped (it failed or timed out) leaves
    /// its slot behind; clear it so the key can be fetched again.
    fn drop_abandoned(&mut self, key: &Key) {
        if let Some(Slot::InFlight { rx }) = self.slots.get(key)
            && rx.has_changed().is_err()
        {
            self.slots.remove(key);
        }
    }

    fn remove(&mut self, key: &Key) {
        if let Some(Slot::Ready { bytes, used, .. }) = self.slots.remove(key) {
            self.bytes -= bytes;
            if !used {
                self.wasted.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    fn evict_to(&mut self, max_bytes: usize) {
        while self.bytes > max_bytes {
            let oldest = self
                .slots
                .iter()
                .filter_map(|(k, s)| match s {
                    Slot::Ready { last_use, .. } => Some((*last_use, k)),
                    Slot::InFlight { .. } => None,
                })
                .min_by_key(|(t, _)| *t)
                .map(|(_, k)| k.clone());
            match oldest {
                Some(key) => self.remove(&key),
                None => break,
            }
        }
    }
}

#[cfg(test)]
impl Key {
    /// The shared key of `tool` called with `args`, a JSON object.
    pub(crate) fn of(tool: &str, args: Value) -> Self {
        Self::new(
            tool,
            args.as_object().expect("arguments are an object"),
            Partition::SHARED,
        )
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn key(tool: &str, args: Value) -> Key {
        Key::of(tool, args)
    }

    /// A cache and its wasted counter.
    fn cache(max_bytes: usize) -> (SpecCache<String>, Arc<AtomicU64>) {
        let wasted = Arc::new(AtomicU64::new(0));
        (SpecCache::new(max_bytes, wasted.clone()), wasted)
    }

    fn wasted(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }

    fn item(v: &str) -> Prefetched<String> {
        Prefetched {
            value: v.to_owned(),
            took: Duration::from_millis(100),
        }
    }

    #[test]
    fn keys_ignore_argument_order() {
        assert_eq!(
            key("t", json!({"a": 1, "b": {"y": 2, "x": 1}})),
            key("t", json!({"b": {"x": 1, "y": 2}, "a": 1}))
        );
        assert_ne!(key("t", json!({"a": 1})), key("u", json!({"a": 1})));
        assert_ne!(key("t", json!({"a": 1})), key("t", json!({"a": "1"})));
    }

    #[test]
    fn keys_of_two_credentials_differ_and_read_back_from_what_replicas_share() {
        let args = json!({"id": 7});
        let args = args.as_object().unwrap();
        let (alice, bob) = (
            Partition::of([1; PARTITION_BYTES]),
            Partition::of([2; PARTITION_BYTES]),
        );
        let shared = Key::new("get", args, Partition::SHARED);
        let of_alice = Key::new("get", args, alice);
        assert_ne!(of_alice, Key::new("get", args, bob));
        assert_ne!(of_alice, shared);
        for key in [shared, of_alice] {
            assert_eq!(Key::from_shared("get".into(), key.shared()), Some(key));
        }
        assert_eq!(Key::from_shared("get".into(), "zz:{}".into()), None);
    }

    #[test]
    fn ttl_is_enforced() {
        let (cache, counter) = cache(1 << 20);
        let k = key("read", json!({"path": "a"}));
        let t = cache.begin(k.clone()).unwrap();
        cache.complete(t, item("body"), 4, Duration::ZERO);
        assert!(
            matches!(cache.lookup(&k), Lookup::Miss),
            "an expired entry is never served"
        );
        assert_eq!(wasted(&counter), 1);

        let t = cache.begin(k.clone()).unwrap();
        cache.complete(t, item("body"), 4, Duration::from_secs(60));
        assert!(matches!(cache.lookup(&k), Lookup::Hit(p) if p.value == "body"));
        assert!(cache.begin(k).is_none(), "a fresh entry is not prefetched again");
    }

    #[test]
    fn bounded_in_bytes_least_recently_used_first() {
        let (cache, counter) = cache(10);
        let (a, b, c) = (
            key("t", json!({"k": "a"})),
            key("t", json!({"k": "b"})),
            key("t", json!({"k": "c"})),
        );
        for k in [&a, &b] {
            let t = cache.begin(k.clone()).unwrap();
            cache.complete(t, item("x"), 4, Duration::from_secs(60));
        }
        assert!(matches!(cache.lookup(&a), Lookup::Hit(_)));
        let t = cache.begin(c.clone()).unwrap();
        cache.complete(t, item("x"), 4, Duration::from_secs(60));
        assert!(
            matches!(cache.lookup(&b), Lookup::Miss),
            "b was least recently used"
        );
        assert!(matches!(cache.lookup(&a), Lookup::Hit(_)));
        assert_eq!(cache.bytes(), 8);
        assert_eq!(wasted(&counter), 1);
    }

    #[tokio::test]
    async fn a_real_call_joins_the_prefetch_in_flight() {
        let cache = Arc::new(cache(1 << 20).0);
        let k = key("get_issue", json!({"key": "A-1"}));
        let ticket = cache.begin(k.clone()).unwrap();
        let Lookup::Pending(join) = cache.lookup(&k) else {
            panic!("expected a join")
        };
        let waiter = tokio::spawn(join.wait());
        cache.complete(ticket, item("issue"), 5, Duration::from_secs(60));
        assert_eq!(waiter.await.unwrap().unwrap().value, "issue");
    }

    #[tokio::test]
    async fn invalidation_discards_a_prefetch_in_flight_and_releases_joiners() {
        let (cache, counter) = cache(1 << 20);
        let k = key("read", json!({"path": "a"}));
        let mut ticket = cache.begin(k.clone()).unwrap();
        ticket.arm();
        let Lookup::Pending(join) = cache.lookup(&k) else {
            panic!("expected a join")
        };
        cache.invalidate(&["read".into()]);
        cache.complete(ticket, item("stale"), 5, Duration::from_secs(60));
        assert!(join.wait().await.is_none(), "the joined call must run for real");
        assert!(matches!(cache.lookup(&k), Lookup::Miss));
        assert_eq!(wasted(&counter), 1, "the discarded prefetch was wasted");
    }

    #[tokio::test]
    async fn a_dropped_ticket_releases_joiners() {
        let (cache, counter) = cache(1 << 20);
        let k = key("read", json!({"path": "a"}));
        let ticket = cache.begin(k.clone()).unwrap();
        let Lookup::Pending(join) = cache.lookup(&k) else {
            panic!("expected a join")
        };
        drop(ticket);
        assert!(join.wait().await.is_none());
        assert_eq!(wasted(&counter), 0, "never dispatched, so not wasted");
        let mut ticket = cache.begin(k).unwrap();
        ticket.arm();
        drop(ticket);
        assert_eq!(wasted(&counter), 1, "dispatched and failed: wasted");
    }

    #[test]
    fn a_kept_real_result_is_told_apart_and_never_wasted() {
        let (cache, counter) = cache(1 << 20);
        let k = key("read", json!({"path": "a"}));
        cache.keep(k.clone(), item("whole"), 5, Duration::from_secs(60));
        assert_eq!(cache.unserved(), 0, "no prefetch waits to be served");
        assert!(matches!(cache.lookup(&k), Lookup::Kept(p) if p.value == "whole"));
        assert!(
            cache.begin(k.clone()).is_none(),
            "what is kept is not prefetched again"
        );
        // A newer real result replaces it.
        cache.keep(k.clone(), item("newer"), 5, Duration::from_secs(60));
        assert!(matches!(cache.lookup(&k), Lookup::Kept(p) if p.value == "newer"));
        assert_eq!(cache.bytes(), 5);
        cache.flush();
        assert_eq!(wasted(&counter), 0);

        // Expired like any entry; a prefetch running for the key is let be.
        cache.keep(k.clone(), item("x"), 1, Duration::ZERO);
        assert!(matches!(cache.lookup(&k), Lookup::Miss));
        let mut running = cache.begin(k.clone()).unwrap();
        running.arm();
        cache.keep(k.clone(), item("real"), 1, Duration::from_secs(60));
        assert!(matches!(cache.lookup(&k), Lookup::Pending(_)));
        cache.complete(running, item("prefetched"), 1, Duration::from_secs(60));
        assert!(matches!(cache.lookup(&k), Lookup::Hit(p) if p.value == "prefetched"));
        assert_eq!(wasted(&counter), 0);
    }

    #[test]
    fn the_end_of_the_session_counts_every_unserved_prefetch_as_wasted() {
        let (cache, counter) = cache(1 << 20);
        let (used, unused, running) = (
            key("read", json!({"path": "used"})),
            key("read", json!({"path": "unused"})),
            key("read", json!({"path": "running"})),
        );
        for k in [&used, &unused] {
            let mut t = cache.begin(k.clone()).unwrap();
            t.arm();
            cache.complete(t, item("x"), 1, Duration::from_secs(60));
        }
        assert!(matches!(cache.lookup(&used), Lookup::Hit(_)));
        let mut in_flight = cache.begin(running.clone()).unwrap();
        in_flight.arm();
        assert_eq!((cache.unserved(), wasted(&counter)), (2, 0));
        cache.flush();
        assert_eq!(wasted(&counter), 1, "the unused entry");
        cache.complete(in_flight, item("late"), 1, Duration::from_secs(60));
        assert_eq!(wasted(&counter), 2, "the prefetch that landed after the end");
        assert!(matches!(cache.lookup(&running), Lookup::Miss));
        assert_eq!((cache.unserved(), cache.bytes()), (0, 0));
    }
}
