//! Real calls go first. While any real call is running, a prefetch waits
//! at each point where it would take something that call may need:
//! - a plugin's guest code, at each epoch tick (the CPU);
//! - a plugin's HTTP request, before it is sent (the vendor's connections
//!   and its rate limit);
//! - an upstream or native call, before it starts.
//!
//! A prefetch only ever waits for calls the agents are already waiting on,
//! and an agent makes its next call only after the one in flight returns,
//! so the wait costs its own agent nothing. It is bounded all the same: in
//! all, a prefetch waits at most its pause budget (and a plugin's, half its
//! wall clock, so that waiting never makes it late), then runs as any call
//! does. A real call that joins a prefetch in flight is not counted as
//! running (it waits on the prefetch, which must not wait on it).
//!
//! Owns the count of real calls in flight and the waits. Not: where the
//! waits are taken (the pipeline, the plugin host), nor which calls are
//! prefetched (`speculation`).

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::watch;

/// The real calls in flight, which prefetches wait for.
#[derive(Debug)]
pub(crate) struct Foreground {
    running: watch::Sender<usize>,
    /// Waits begun by prefetches (shared with the speculation's counters).
    pauses: Arc<AtomicU64>,
}

impl Foreground {
    /// Counting each wait of a prefetch in `pauses`.
    pub(crate) fn new(pauses: Arc<AtomicU64>) -> Arc<Self> {
        Arc::new(Self {
            running: watch::Sender::new(0),
            pauses,
        })
    }

    /// A real call runs until the guard is dropped.
    pub(crate) fn enter(self: &Arc<Self>) -> Running {
        self.running.send_modify(|n| *n += 1);
        Running(self.clone())
    }

    fn busy(&self) -> bool {
        *self.running.borrow() > 0
    }
}

/// One real call in flight.
#[must_use = "the call counts as running only while this is held"]
pub(crate) struct Running(Arc<Foreground>);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.running.send_modify(|n| *n -= 1);
    }
}

/// One prefetch's place behind the real calls: what it waits for, and how
/// long it may still wait. Its clones share the budget.
#[derive(Debug, Clone)]
pub(crate) struct Background {
    foreground: Arc<Foreground>,
    left_ns: Arc<AtomicU64>,
}

impl Background {
    /// A prefetch that waits at most `budget` in all.
    pub(crate) fn new(foreground: Arc<Foreground>, budget: Duration) -> Self {
        Self {
            foreground,
            left_ns: Arc::new(AtomicU64::new(nanos(budget))),
        }
    }

    /// Wait at most `most` from now on, if that is less than what is left.
    pub(crate) fn limit(&self, most: Duration) {
        self.left_ns.fetch_min(nanos(most), Ordering::Relaxed);
    }

    /// A wait until no real call is running, within what is left of the
    /// budget; `None` when none is running or the budget is spent.
    pub(crate) fn pause(&self) -> Option<impl Future<Output = ()> + Send + 'static> {
        let left = self.left_ns.load(Ordering::Relaxed);
        if left == 0 || !self.foreground.busy() {
            return None;
        }
        self.foreground.pauses.fetch_add(1, Ordering::Relaxed);
        let mut running = self.foreground.running.subscribe();
        let left_ns = self.left_ns.clone();
        Some(async move {
            let start = tokio::time::Instant::now();
            let idle = running.wait_for(|n| *n == 0);
            // Err: the wait ran out, or the host is going away; both end it.
            let _ = tokio::time::timeout(Duration::from_nanos(left), idle).await;
            let waited = nanos(start.elapsed());
            let _ = left_ns.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |l| {
                Some(l.saturating_sub(waited))
            });
        })
    }

    /// Take [`Background::pause`]'s wait, if there is one.
    pub(crate) async fn wait_turn(&self) {
        if let Some(pause) = self.pause() {
            pause.await;
        }
    }
}

fn nanos(d: Duration) -> u64 {
    d.as_nanos().min(u128::from(u64::MAX)) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_prefetch_waits_for_the_real_calls_then_runs() {
        let fg = Foreground::new(Arc::default());
        let bg = Background::new(fg.clone(), Duration::from_secs(60));
        assert!(bg.pause().is_none(), "nothing running, nothing to wait for");
        let (first, second) = (fg.enter(), fg.enter());
        let waiting = tokio::spawn({
            let bg = bg.clone();
            async move { bg.wait_turn().await }
        });
        while fg.pauses.load(Ordering::Relaxed) == 0 {
            tokio::task::yield_now().await;
        }
        drop(first);
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "one real call is still running");
        drop(second);
        waiting.await.unwrap();
        assert!(bg.pause().is_none());
    }

    #[tokio::test]
    async fn the_waits_of_one_prefetch_are_bounded_in_all() {
        let fg = Foreground::new(Arc::default());
        let _stuck = fg.enter();
        let bg = Background::new(fg.clone(), Duration::from_secs(3600));
        bg.limit(Duration::from_millis(20));
        bg.limit(Duration::from_secs(60));
        // Returns though the real call never ends: the tighter limit holds.
        bg.wait_turn().await;
        // Its clones share what is left: none.
        assert!(bg.clone().pause().is_none());
        assert_eq!(fg.pauses.load(Ordering::Relaxed), 1);
    }
}
