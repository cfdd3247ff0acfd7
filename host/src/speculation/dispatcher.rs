//! Runs prefetches in the background within caps: a global cap on
//! prefetches in flight (across every dispatch, so calls in quick
//! succession cannot each start a full batch) and a cap per network host, a timeout per prefetch, and cancellation of all of them on
//! shutdown.
//!
//! It knows nothing of tools: it runs futures it is given and says why it
//! refused one.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// Why a prefetch was not started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    GlobalCap,
    HostCap(String),
    ShutDown,
}

pub struct Dispatcher {
    global: Arc<Semaphore>,
    global_cap: usize,
    per_host_cap: usize,
    hosts: Arc<Mutex<HashMap<String, usize>>>,
    timeout: Duration,
    cancel: CancellationToken,
    tasks: Mutex<JoinSet<()>>,
}

/// A place within the caps, held until the prefetch that runs in it ends.
pub struct Reserved {
    _permit: OwnedSemaphorePermit,
    _slot: Option<HostSlot>,
}

/// Releases a host slot when the prefetch ends, however it ends.
struct HostSlot {
    hosts: Arc<Mutex<HashMap<String, usize>>>,
    host: String,
}

impl Drop for HostSlot {
    fn drop(&mut self) {
        let mut hosts = self.hosts.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = hosts.get_mut(&self.host) {
            *n -= 1;
            if *n == 0 {
                hosts.remove(&self.host);
            }
        }
    }
}

impl Dispatcher {
    pub fn new(global_cap: usize, per_host_cap: usize, timeout: Duration) -> Self {
        Self {
            global: Arc::new(Semaphore::new(global_cap)),
            global_cap,
            per_host_cap,
            hosts: Arc::default(),
            timeout,
            cancel: CancellationToken::new(),
            tasks: Mutex::new(JoinSet::new()),
        }
    }

    /// Reserve a place for one prefetch (against `host`, if it has one)
    /// within the caps, or say why not. The place is given back when the
    /// reservation, or the prefetch [spawned](Dispatcher::spawn) on it, ends.
    pub fn reserve(&self, host: Option<&str>) -> Result<Reserved, Refused> {
        if self.cancel.is_cancelled() {
            return Err(Refused::ShutDown);
        }
        let permit: OwnedSemaphorePermit = self
            .global
            .clone()
            .try_acquire_owned()
            .map_err(|_| Refused::GlobalCap)?;
        let slot = match host {
            Some(host) => {
                let mut hosts = self.hosts.lock().unwrap_or_else(|p| p.into_inner());
                let n = hosts.entry(host.to_owned()).or_default();
                if *n >= self.per_host_cap {
                    return Err(Refused::HostCap(host.to_owned()));
                }
                *n += 1;
                Some(HostSlot {
                    hosts: self.hosts.clone(),
                    host: host.to_owned(),
                })
            }
            None => None,
        };
        Ok(Reserved {
            _permit: permit,
            _slot: slot,
        })
    }

    /// Run `prefetch` in its reserved place. It is dropped (cancelled) at
    /// its timeout or on shutdown.
    pub fn spawn(&self, reserved: Reserved, prefetch: impl Future<Output = ()> + Send + 'static) {
        let (cancel, timeout) = (self.cancel.clone(), self.timeout);
        let mut tasks = self.tasks.lock().unwrap_or_else(|p| p.into_inner());
        // Reap finished tasks so the set does not grow with history.
        while tasks.try_join_next().is_some() {}
        tasks.spawn(async move {
            let _held = reserved;
            tokio::select! {
                _ = cancel.cancelled() => {}
                _ = tokio::time::timeout(timeout, prefetch) => {}
            }
        });
    }

    /// Prefetches running now.
    pub fn in_flight(&self) -> usize {
        self.global_cap - self.global.available_permits()
    }

    /// Cancel every prefetch and wait for them to stop.
    pub async fn shutdown(&self) {
        self.cancel.cancel();
        let mut tasks = std::mem::take(&mut *self.tasks.lock().unwrap_or_else(|p| p.into_inner()));
        while tasks.join_next().await.is_some() {}
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    impl Dispatcher {
        /// Reserve and spawn at once.
        fn dispatch(
            &self,
            host: Option<&str>,
            prefetch: impl Future<Output = ()> + Send + 'static,
        ) -> Result<(), Refused> {
            let reserved = self.reserve(host)?;
            self.spawn(reserved, prefetch);
            Ok(())
        }
    }

    /// 50 candidates over 3 hosts with a global cap of 6 and 2 per host:
    /// never more than the caps in flight, and the caps free up after.
    #[tokio::test(flavor = "multi_thread")]
    async fn global_and_per_host_caps_hold_under_load() {
        let d = Dispatcher::new(6, 2, Duration::from_secs(10));
        let release = CancellationToken::new();
        let running: Arc<Mutex<HashMap<String, usize>>> = Arc::default();
        let peak_total = Arc::new(AtomicUsize::new(0));
        let mut started = 0;
        let mut refused = Vec::new();
        for i in 0..50 {
            let host = format!("h{}", i % 3);
            let (release, running, peak) = (release.clone(), running.clone(), peak_total.clone());
            let h = host.clone();
            let task = async move {
                {
                    let mut r = running.lock().unwrap();
                    *r.entry(h.clone()).or_default() += 1;
                    assert!(r[&h] <= 2, "per-host cap broken");
                    let total: usize = r.values().sum();
                    peak.fetch_max(total, Ordering::SeqCst);
                }
                release.cancelled().await;
                *running.lock().unwrap().get_mut(&h).unwrap() -= 1;
            };
            match d.dispatch(Some(&host), task) {
                Ok(()) => started += 1,
                Err(e) => refused.push(e),
            }
        }
        assert_eq!(started, 6, "3 hosts × 2 = 6 = the global cap");
        assert_eq!(d.in_flight(), 6);
        assert!(
            refused
                .iter()
                .all(|r| matches!(r, Refused::GlobalCap | Refused::HostCap(_)))
        );
        release.cancel();
        while d.in_flight() > 0 {
            tokio::task::yield_now().await;
        }
        assert!(peak_total.load(Ordering::SeqCst) <= 6);
        // Slots are free again after the drain.
        assert!(d.dispatch(Some("h0"), async {}).is_ok());
    }

    #[tokio::test]
    async fn a_per_host_cap_refuses_the_extra_call_and_other_hosts_proceed() {
        let d = Dispatcher::new(10, 1, Duration::from_secs(10));
        d.dispatch(Some("api.github.com"), std::future::pending())
            .unwrap();
        assert_eq!(
            d.dispatch(Some("api.github.com"), async {}),
            Err(Refused::HostCap("api.github.com".into()))
        );
        assert!(d.dispatch(Some("api.clickup.com"), async {}).is_ok());
        assert!(d.dispatch(None, async {}).is_ok(), "no host, no host cap");
        d.shutdown().await;
        assert_eq!(d.in_flight(), 0, "shutdown cancels the pending prefetch");
        assert_eq!(d.dispatch(None, async {}), Err(Refused::ShutDown));
    }

    #[tokio::test]
    async fn a_prefetch_is_dropped_at_its_timeout() {
        let d = Dispatcher::new(1, 1, Duration::from_millis(20));
        d.dispatch(None, std::future::pending()).unwrap();
        while d.in_flight() > 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert!(d.dispatch(None, async {}).is_ok(), "the slot was released");
    }
}
