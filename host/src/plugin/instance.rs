//! Component instances of one plugin, and the bounded way every call runs
//! on one.
//!
//! Owns the instance policy (a fresh instance per call, or reuse up to
//! `max_uses` calls), the idle pool, and [`Instances::run`], which applies
//! the CPU budget, the wall-clock deadline, quarantine, and the rule that an
//! instance that trapped or was interrupted is never entered again.
//! Concurrent calls never wait on one another: each takes its own instance,
//! and the pool's lock is held only to pop or push one.
//!
//! # Every call is async, in both worlds
//!
//! Every export, of the enricher world as of the tool world, is called with
//! `call_async` on a fiber, and both limits are enforced the same way:
//!
//! - the CPU budget by epoch interruption: at each tick the guest is running,
//!   the store's deadline callback (`HostState::on_epoch`) yields to the
//!   executor, and traps with `CpuExhausted` once the call's ticks are spent;
//!   time in the host's own imports spends the same ticks (`host_api`);
//! - the wall-clock deadline by a timer around the call
//!   ([`deadline::within`]), armed only if the call waits (a yield at a tick,
//!   an async import); a call cut off is dropped with its instance.
//!
//! Synchronous calls for the CPU-bound enricher exports (no fiber; budget and
//! deadline both as epoch traps) were measured and rejected:
//!
//! - the fiber costs about 0.2 µs per call, 0.3 µs of the 4-import
//!   `transform-args` benchmark (under a tenth of it): the time goes to the
//!   host imports and the guest's own work, not to entering the guest;
//! - wasmtime 48 calls a store synchronously only if none of the imports it
//!   instantiated is async, and every Rust guest imports WASI streams. That
//!   needs wasmtime-wasi's synchronous bindings, which block on tokio
//!   (`in_tokio`) and panic on an executor thread: in the experiment, a
//!   guest's `println!` took the host down. Avoiding it means re-implementing
//!   WASI's blocking stream and poll functions, or handing each call to
//!   another thread, which costs more than the fiber;
//! - a synchronous call cannot yield, so a plugin spinning up to its CPU
//!   budget (500 ms by default) would hold an executor thread for all of it,
//!   where an async call gives the thread back at every tick.

use std::pin::pin;
use std::sync::{Arc, Mutex};

use wasmtime::component::{InstancePre, Resource};
use wasmtime::{Engine, Store};

use super::PluginError;
use super::deadline;
use super::engine::EpochTicker;
use super::health::Health;
use super::host_api::{CpuExhausted, HostState, PluginIdentity};
use super::manifest::InstancePolicy;
use super::wit::{Enricher, Indices, Tool};
use crate::args_edit::ArgsEdit;

/// Idle instances kept per plugin under the reuse policy.
const MAX_IDLE: usize = 16;

/// One live instance and its store.
pub struct Instance {
    pub store: Store<HostState>,
    enricher: Option<Enricher>,
    tool: Option<Tool>,
    uses: u32,
}

impl Instance {
    /// The enricher export and the store to call it with.
    pub fn enricher(&mut self) -> (&Enricher, &mut Store<HostState>) {
        let guest = self
            .enricher
            .as_ref()
            .expect("callers check the plugin exports the enricher interface");
        (guest, &mut self.store)
    }

    /// The tool export and the store to call it with.
    pub fn tool(&mut self) -> (&Tool, &mut Store<HostState>) {
        let guest = self
            .tool
            .as_ref()
            .expect("callers check the plugin exports the tool interface");
        (guest, &mut self.store)
    }

    /// Lend `args` to the guest as a borrowed `tool-args` handle for the
    /// length of `call`, then take the (possibly edited) handle back.
    pub async fn lend_args<T>(
        &mut self,
        args: ArgsEdit,
        call: impl AsyncFnOnce(&mut Instance, Resource<ArgsEdit>) -> wasmtime::Result<T>,
    ) -> wasmtime::Result<(T, ArgsEdit)> {
        let handle = self.store.data_mut().table.push(args)?;
        let answer = call(self, Resource::new_borrow(handle.rep())).await?;
        Ok((answer, self.store.data_mut().table.delete(handle)?))
    }
}

pub struct Instances {
    engine: Engine,
    ticker: Arc<EpochTicker>,
    pre: InstancePre<HostState>,
    exports: Indices,
    identity: Arc<PluginIdentity>,
    policy: InstancePolicy,
    /// Boxed: an instance is hundreds of bytes (its exports' handles), and
    /// each call moves it out of here, through its future and back.
    #[allow(clippy::vec_box)]
    idle: Mutex<Vec<Box<Instance>>>,
    pub health: Health,
}

impl Instances {
    pub fn new(
        engine: Engine,
        ticker: Arc<EpochTicker>,
        pre: InstancePre<HostState>,
        exports: Indices,
        identity: Arc<PluginIdentity>,
    ) -> Self {
        let policy = identity.limits.instances;
        let health = Health::new(&identity.limits);
        Self {
            engine,
            ticker,
            pre,
            exports,
            identity,
            policy,
            idle: Mutex::new(Vec::new()),
            health,
        }
    }

    pub fn identity(&self) -> &PluginIdentity {
        &self.identity
    }

    /// A new instance, ready for calls.
    pub async fn instantiate(&self) -> wasmtime::Result<Instance> {
        let _running = self.ticker.enter();
        let mut store = Store::new(
            &self.engine,
            HostState::new(self.identity.clone(), self.ticker.clock()),
        );
        store.limiter(|state| &mut state.limits);
        store.epoch_deadline_callback(|mut ctx| ctx.data_mut().on_epoch());
        store.data_mut().begin_call();
        store.set_epoch_deadline(1);
        let instance = self.pre.instantiate_async(&mut store).await?;
        let (enricher, tool) = self.exports.load(&mut store, &instance)?;
        Ok(Instance {
            store,
            enricher,
            tool,
            uses: 0,
        })
    }

    fn take_idle(&self) -> Option<Box<Instance>> {
        self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop()
    }

    fn give_back(&self, mut instance: Box<Instance>) {
        instance.uses += 1;
        if let InstancePolicy::Reuse { max_uses } = self.policy {
            let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
            if instance.uses < max_uses && idle.len() < MAX_IDLE {
                idle.push(instance);
            }
        }
    }

    /// Run `call` on an instance, within the plugin's limits. `method` names
    /// the export for error messages.
    ///
    /// `call` is an async closure rather than a boxed future so that a call
    /// costs no allocation here and may borrow its inputs (the tool name,
    /// the arguments) instead of copying them: this is the per-call path of
    /// every enricher in the chain.
    pub async fn run<T>(
        &self,
        method: &'static str,
        call: impl AsyncFnOnce(&mut Instance) -> wasmtime::Result<T>,
    ) -> Result<T, PluginError> {
        if let Err(left) = self.health.admit() {
            return Err(PluginError::Quarantined {
                plugin: self.identity.name.clone(),
                retry_in_ms: left.as_millis() as u64,
            });
        }
        let wall = self.identity.limits.wall;
        let work = pin!(async {
            let _running = self.ticker.enter();
            let mut instance = match self.take_idle() {
                Some(instance) => instance,
                // Boxed: an instantiation's future is several KB, and inline
                // it would size (and be copied with) every call's future.
                None => Box::new(Box::pin(self.instantiate()).await?),
            };
            instance.store.data_mut().begin_call();
            instance.store.set_epoch_deadline(1);
            let value = call(&mut instance).await?;
            Ok::<_, wasmtime::Error>((instance, value))
        });
        let result = deadline::within(wall, work).await;
        match result {
            Ok(Ok((mut instance, value))) => {
                instance.store.data_mut().end_call();
                self.health.success();
                self.give_back(instance);
                Ok(value)
            }
            // The instance is dropped with the future: a trapped or
            // interrupted instance is never entered again.
            Ok(Err(error)) => {
                self.fail();
                let plugin = self.identity.name.clone();
                Err(
                    if error.downcast_ref::<CpuExhausted>().is_some() || is_cpu_trap(&error) {
                        PluginError::Cpu {
                            plugin,
                            method,
                            cpu_ms: self.identity.limits.cpu.as_millis() as u64,
                        }
                    } else {
                        PluginError::Trap {
                            plugin,
                            method,
                            message: trap_message(&error),
                        }
                    },
                )
            }
            Err(_) => {
                self.fail();
                Err(PluginError::Timeout {
                    plugin: self.identity.name.clone(),
                    method,
                    wall_ms: wall.as_millis() as u64,
                })
            }
        }
    }

    fn fail(&self) {
        if self.health.failure() {
            tracing::warn!(plugin = %self.identity.name, "quarantined after repeated failures");
        }
    }
}

fn is_cpu_trap(error: &wasmtime::Error) -> bool {
    error.chain().any(|e| e.downcast_ref::<CpuExhausted>().is_some())
}

/// The trap's own words (its root cause), without wasmtime's backtrace.
fn trap_message(error: &wasmtime::Error) -> String {
    let root = error.root_cause().to_string();
    root.lines()
        .next()
        .unwrap_or_default()
        .chars()
        .take(500)
        .collect()
}
