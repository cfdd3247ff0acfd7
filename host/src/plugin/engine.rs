//! The one wasmtime `Engine` every plugin runs on, and the clock that bounds
//! their CPU time.
//!
//! Owns the engine configuration (component model, async, epoch
//! interruption, pooling allocator) and the epoch ticker thread. A call's CPU
//! budget is counted in ticks seen while the guest runs (see
//! `host_api::HostState::on_epoch`), not in wall time, so a call parked in an
//! async host import is not charged for the wait.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
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

    let mut config = Config::new();
    config
        .wasm_component_model(true)
        .epoch_interruption(true)
        .allocation_strategy(InstanceAllocationStrategy::Pooling(pool))
        .memory_init_cow(true);
    Engine::new(&config)
}

/// Advances the engine's epoch every [`TICK`] until dropped, and counts
/// the ticks for [`TickClock`].
pub struct EpochTicker {
    stop: Arc<AtomicBool>,
    ticks: Arc<AtomicU64>,
    thread: Option<JoinHandle<()>>,
}

impl EpochTicker {
    pub fn start(engine: &Engine) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let ticks = Arc::new(AtomicU64::new(0));
        let engine = engine.weak();
        let (flag, count) = (stop.clone(), ticks.clone());
        let thread = std::thread::Builder::new()
            .name("toolhost-epoch".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    std::thread::sleep(TICK);
                    match engine.upgrade() {
                        Some(engine) => engine.increment_epoch(),
                        None => break,
                    }
                    count.fetch_add(1, Ordering::Relaxed);
                }
            })
            .expect("spawning the epoch thread");
        Self {
            stop,
            ticks,
            thread: Some(thread),
        }
    }

    /// The ticks this ticker has counted, as a clock to read.
    pub fn clock(&self) -> TickClock {
        TickClock(self.ticks.clone())
    }
}

/// The epoch ticks counted so far: a clock of [`TICK`] resolution that costs
/// one atomic load to read, where `Instant::now` costs a system clock read.
/// Host imports are charged by it (`HostState::charged`): an import that
/// spans a tick boundary is charged the tick, so an import of duration `d`
/// is charged `d / TICK` ticks on average, however short it is.
#[derive(Clone)]
pub struct TickClock(Arc<AtomicU64>);

impl TickClock {
    pub fn now(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

impl Drop for EpochTicker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
