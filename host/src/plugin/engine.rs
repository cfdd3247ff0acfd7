//! The one wasmtime `Engine` every plugin runs on, and the clock that bounds
//! their CPU time.
//!
//! Owns the engine configuration (component model, async, epoch
//! interruption, pooling allocator) and the epoch ticker thread. A call's CPU
//! budget is counted in ticks seen while the guest runs (see
//! `host_api::HostState::on_epoch`), not in wall time, so a call parked in an
//! async host import is not charged for the wait.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

/// One epoch tick. CPU budgets are whole ticks, so this is their resolution.
pub const TICK: Duration = Duration::from_millis(5);

/// Largest linear memory any plugin may be granted; per-plugin limits are
/// enforced below this by the store's resource limiter.
pub const MAX_MEMORY_BYTES: usize = 1 << 30;

/// Instances the pool keeps slots for: concurrent calls beyond this fail to
/// instantiate (and say so) rather than exhaust the host.
const POOL_INSTANCES: u32 = 512;

pub fn new_engine() -> wasmtime::Result<Engine> {
    let mut pool = PoolingAllocationConfig::default();
    pool.total_component_instances(POOL_INSTANCES)
        .total_core_instances(POOL_INSTANCES * 8)
        .total_memories(POOL_INSTANCES * 2)
        .total_tables(POOL_INSTANCES * 8)
        .total_stacks(POOL_INSTANCES)
        .max_memory_size(MAX_MEMORY_BYTES)
        // Language runtimes (componentize-py, componentize-js) link many core
        // modules with large tables into one component.
        .max_core_instance_size(4 << 20)
        .max_component_instance_size(4 << 20)
        .table_elements(100_000)
        .linear_memory_keep_resident(64 << 10)
        .table_keep_resident(64 << 10);

    let mut config = code_config();
    config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    Engine::new(&config)
}

/// An engine that compiles code for [`new_engine`]'s and runs none: a
/// compile worker's (`compile`). The pooling allocator is left out, as it
/// reserves gigabytes the worker has no use for and does not change the
/// code, which wasmtime checks as it loads it.
pub fn compile_engine() -> wasmtime::Result<Engine> {
    Engine::new(&code_config())
}

/// What decides the compiled code, the same for both engines.
fn code_config() -> Config {
    let mut config = Config::new();
    config
        .wasm_component_model(true)
        .epoch_interruption(true)
        .memory_init_cow(true);
    config
}

/// Advances the engine's epoch every [`TICK`] while a guest runs, and
/// counts the ticks for [`TickClock`]; dropped, it stops.
///
/// With no guest running for [`IDLE_TICKS`] it rests (the thread parks),
/// so an idle host wakes nobody 200 times a second; the next guest to
/// enter ([`EpochTicker::enter`]) wakes it. Deadlines are set relative to
/// the epoch when a call enters, so a pause between calls changes none.
pub struct EpochTicker {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

/// Ticks with no guest running after which the ticker rests.
const IDLE_TICKS: u32 = 200;

#[derive(Default)]
struct Shared {
    stop: AtomicBool,
    ticks: AtomicU64,
    /// Guests running (instantiating or in a call), by [`Running`] guards.
    running: AtomicUsize,
    /// The thread rests, or is about to: an entering guest wakes it.
    resting: AtomicBool,
}

impl EpochTicker {
    pub fn start(engine: &Engine) -> Self {
        let shared = Arc::new(Shared::default());
        let engine = engine.weak();
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name("toolhost-epoch".into())
            .spawn(move || {
                let mut idle = 0;
                while !s.stop.load(Ordering::SeqCst) {
                    idle = if s.running.load(Ordering::SeqCst) == 0 {
                        idle + 1
                    } else {
                        0
                    };
                    if idle > IDLE_TICKS {
                        // Said before the last look at `running`, which a
                        // guest raises before it looks at `resting`: one of
                        // the two sees the other.
                        s.resting.store(true, Ordering::SeqCst);
                        if s.running.load(Ordering::SeqCst) == 0 && !s.stop.load(Ordering::SeqCst) {
                            std::thread::park();
                        }
                        s.resting.store(false, Ordering::SeqCst);
                        idle = 0;
                        continue;
                    }
                    std::thread::sleep(TICK);
                    match engine.upgrade() {
                        Some(engine) => engine.increment_epoch(),
                        None => break,
                    }
                    s.ticks.fetch_add(1, Ordering::Relaxed);
                }
            })
            .expect("spawning the epoch thread");
        Self {
            shared,
            thread: Some(thread),
        }
    }

    /// The ticks this ticker has counted, as a clock to read.
    pub fn clock(&self) -> TickClock {
        TickClock(self.shared.clone())
    }

    /// A guest is about to run: the ticker ticks until the guard is dropped.
    pub fn enter(&self) -> Running<'_> {
        self.shared.running.fetch_add(1, Ordering::SeqCst);
        if self.shared.resting.load(Ordering::SeqCst)
            && let Some(thread) = &self.thread
        {
            thread.thread().unpark();
        }
        Running(&self.shared)
    }
}

/// A guest running, from [`EpochTicker::enter`] until dropped.
pub struct Running<'a>(&'a Shared);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The epoch ticks counted so far: a clock of [`TICK`] resolution that costs
/// one atomic load to read, where `Instant::now` costs a system clock read.
/// Host imports are charged by it (`HostState::charged`): an import that
/// spans a tick boundary is charged the tick, so an import of duration `d`
/// is charged `d / TICK` ticks on average, however short it is.
#[derive(Clone)]
pub struct TickClock(Arc<Shared>);

impl TickClock {
    pub fn now(&self) -> u64 {
        self.0.ticks.load(Ordering::Relaxed)
    }
}

impl Drop for EpochTicker {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            thread.thread().unpark();
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;

    fn eventually(what: &str, done: impl Fn() -> bool) {
        let start = Instant::now();
        while !done() {
            assert!(start.elapsed() < Duration::from_secs(30), "never: {what}");
            std::thread::sleep(TICK);
        }
    }

    /// With no guest running the ticker rests and its clock stands still;
    /// a guest entering wakes it, and it ticks until the guest is done.
    #[test]
    fn the_ticker_rests_while_no_guest_runs_and_ticks_while_one_does() {
        let engine = new_engine().unwrap();
        let ticker = EpochTicker::start(&engine);
        let clock = ticker.clock();
        eventually("rests", || ticker.shared.resting.load(Ordering::SeqCst));
        let rested = clock.now();
        std::thread::sleep(10 * TICK);
        assert_eq!(clock.now(), rested, "it ticked while resting");
        let running = ticker.enter();
        eventually("ticks again", || clock.now() > rested + 2);
        drop(running);
        eventually("rests again", || ticker.shared.resting.load(Ordering::SeqCst));
        drop(ticker);
    }
}
