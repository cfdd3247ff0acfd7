//! How long each tool's calls take, as the host sees them run: what a
//! prefetch of that tool would save the agent if it is used.
//!
//! A real call that runs (not served) is timed from the moment it reaches
//! the backend to its answer. Prefetches are not timed: they wait behind
//! real calls (`priority`), so their time is not what the agent would
//! wait. Each tool keeps a moving average, so a vendor that slows down is priced
//! as it is now, not as it was. The tools kept are bounded: a host that
//! sees more forgets the least recently timed.
//!
//! Owns the observed latencies. Not: what they are weighed against (the
//! engine's expected-saving gate), nor any timing of the agent's wait.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

/// Tools whose latency is kept.
const MAX_TOOLS: usize = 1024;
/// The weight of each new observation in the moving average.
const WEIGHT: f64 = 0.25;

#[derive(Default)]
pub struct Latencies {
    /// Per tool: the average in milliseconds, and when it was last timed.
    inner: Mutex<HashMap<String, (f64, u64)>>,
    clock: std::sync::atomic::AtomicU64,
}

impl Latencies {
    /// A call of `tool` took `took`.
    pub fn observe(&self, tool: &str, took: Duration) {
        let ms = took.as_secs_f64() * 1000.0;
        let now = self.clock.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((average, last)) = inner.get_mut(tool) {
            *average += WEIGHT * (ms - *average);
            *last = now;
            return;
        }
        if inner.len() >= MAX_TOOLS
            && let Some(oldest) = inner
                .iter()
                .min_by_key(|(_, (_, last))| *last)
                .map(|(t, _)| t.clone())
        {
            inner.remove(&oldest);
        }
        inner.insert(tool.to_owned(), (ms, now));
    }

    /// The average time a call of `tool` takes, in milliseconds, if any
    /// was timed.
    pub fn of(&self, tool: &str) -> Option<f64> {
        let inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        inner.get(tool).map(|(average, _)| *average)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_average_follows_the_latest_calls_and_the_tools_kept_are_bounded() {
        let l = Latencies::default();
        assert_eq!(l.of("a"), None);
        l.observe("a", Duration::from_millis(100));
        assert_eq!(l.of("a"), Some(100.0));
        for _ in 0..40 {
            l.observe("a", Duration::from_millis(300));
        }
        assert!((l.of("a").unwrap() - 300.0).abs() < 1.0, "{:?}", l.of("a"));
        for i in 0..MAX_TOOLS + 10 {
            l.observe(&format!("t{i}"), Duration::from_millis(1));
        }
        assert_eq!(l.inner.lock().unwrap().len(), MAX_TOOLS);
        assert_eq!(l.of("a"), None, "the least recently timed is forgotten");
        assert_eq!(l.of(&format!("t{}", MAX_TOOLS + 9)), Some(1.0));
    }
}
