//! The data of one plugin instance's store: the resource table, the empty
//! WASI context (no files, environment, sockets or arguments), the memory
//! limiter, the plugin's identity and log, and the CPU budget of the call
//! in progress.
//!
//! Time spent inside the host's own imports (the schema, argument, call
//! context, log and config functions) is charged to the call's CPU budget:
//! the epoch ticks only count while guest code runs, and an import that
//! takes 100 ms would otherwise cost one tick. Each import spends the
//! budget's ticks that pass while it runs ([`HostState::charged`]), trapping
//! the call once they are spent. `http.fetch` is not charged: it
//! waits on the network, bounded by the wall clock, like the WASI waits;
//! nor are `http.start` and `pending.wait`, for the same reason.

use std::sync::Arc;
use std::time::Instant;

use tokio_util::sync::CancellationToken;
use wasmtime::component::ResourceTable;
use wasmtime::{StoreLimits, StoreLimitsBuilder, UpdateDeadline};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use super::log::{LogBudget, LogLevel, LogSink};
use super::pending::CallRequests;
use super::stdout::LogStream;
use crate::plugin::engine::{TICK, TickClock};
use crate::plugin::http::CallSecrets;
use crate::plugin::manifest::Limits;
use crate::priority::Background;

/// What a plugin is, as its imports need to know it.
pub struct PluginIdentity {
    pub name: Arc<str>,
    pub config_json: String,
    pub limits: Limits,
    pub http: Arc<crate::plugin::http::HttpGrant>,
    pub log: LogSink,
    /// The plugin's started requests in flight, over all its instances
    /// (`limits.requests_in_flight` permits).
    pub requests_in_flight: Arc<tokio::sync::Semaphore>,
}

/// The data of one plugin instance's store.
pub struct HostState {
    pub(crate) table: ResourceTable,
    wasi: WasiCtx,
    pub(crate) limits: StoreLimits,
    pub(crate) identity: Arc<PluginIdentity>,
    pub(crate) log: Arc<LogBudget>,
    /// The CPU budget of one call, in epoch ticks.
    cpu_ticks: u64,
    /// Epoch ticks the current call may still run for.
    cpu_ticks_left: u64,
    /// The epoch ticks, which imports are charged by.
    clock: TickClock,
    /// When the current call began: its wall-clock budget counts from here.
    pub(crate) call_started: Instant,
    /// The current call's place behind the real calls, if it is a prefetch.
    pub(crate) background: Option<Background>,
    /// The values of the per-caller secrets the current call runs with.
    pub(crate) call_secrets: Option<Arc<CallSecrets>>,
    /// The requests the current call started (`http.start`).
    pub(crate) requests: CallRequests,
    /// The current call's cancellation, which ends its waits on requests.
    pub(crate) cancel: Option<CancellationToken>,
}

impl HostState {
    pub fn new(identity: Arc<PluginIdentity>, clock: TickClock) -> Self {
        let log = Arc::new(LogBudget::new(identity.clone()));
        let wasi = WasiCtx::builder()
            .stdout(LogStream::new(log.clone(), "stdout", LogLevel::Info))
            .stderr(LogStream::new(log.clone(), "stderr", LogLevel::Warn))
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .build();
        let limits = StoreLimitsBuilder::new()
            .memory_size(identity.limits.memory_bytes)
            .table_elements(1_000_000)
            .instances(64)
            .tables(64)
            .memories(8)
            .trap_on_grow_failure(true)
            .build();
        let tick = TICK.as_micros().max(1);
        let requests = CallRequests::new(identity.limits.requests_per_call);
        let cpu_ticks = (identity.limits.cpu.as_micros() / tick).max(1) as u64;
        Self {
            table: ResourceTable::new(),
            wasi,
            limits,
            identity,
            log,
            cpu_ticks,
            cpu_ticks_left: 0,
            clock,
            call_started: Instant::now(),
            background: None,
            call_secrets: None,
            requests,
            cancel: None,
        }
    }

    /// Arm the CPU budget and log cap for one call.
    pub fn begin_call(&mut self) {
        self.call_started = Instant::now();
        self.cpu_ticks_left = self.cpu_ticks;
        self.background = None;
        self.call_secrets = None;
        self.cancel = None;
        self.end_call();
        self.log.reset();
    }

    /// Abort every request the call started that is still in flight: none
    /// outlives its call, whatever handles the plugin keeps.
    pub fn end_call(&mut self) {
        self.requests.end(self.identity.limits.requests_per_call);
    }

    /// Lend the current call its caller's secrets: its requests carry
    /// them, and its responses and log lines are scrubbed of them.
    pub(crate) fn lend_secrets(&mut self, secrets: Option<Arc<CallSecrets>>) {
        self.log.lend(secrets.clone());
        self.call_secrets = secrets;
    }

    /// Run one import and charge the ticks that passed meanwhile to the
    /// call's CPU budget. Traps (as [`CpuExhausted`]) once it is spent.
    ///
    /// Counting ticks rather than reading the system clock twice is what
    /// keeps this cheap: these imports are the per-key hot path of every
    /// transform, and two clock reads were a sixth of one's cost.
    pub(crate) fn charged<T>(&mut self, import: impl FnOnce(&mut Self) -> R<T>) -> R<T> {
        let start = self.clock.now();
        let out = import(self)?;
        let ticks = self.clock.now().wrapping_sub(start);
        if ticks > self.cpu_ticks_left {
            self.cpu_ticks_left = 0;
            return Err(wasmtime::Error::msg(CpuExhausted));
        }
        self.cpu_ticks_left -= ticks;
        Ok(out)
    }

    /// Called by wasmtime each tick the guest is running: yield to the
    /// executor (so wall-clock deadlines and cancellation can fire), or trap
    /// once the call's CPU budget is spent. A prefetch yields until the
    /// real calls in flight are done (within its pause budget).
    pub fn on_epoch(&mut self) -> wasmtime::Result<UpdateDeadline> {
        if self.cpu_ticks_left == 0 {
            return Err(wasmtime::Error::msg(CpuExhausted));
        }
        self.cpu_ticks_left -= 1;
        Ok(match self.background.as_ref().and_then(Background::pause) {
            Some(pause) => UpdateDeadline::YieldCustom(1, Box::pin(pause)),
            None => UpdateDeadline::Yield(1),
        })
    }
}

/// `request` (a wait on the network), ended early with `cancelled` if
/// `cancel` (the current call's, [`HostState::cancel`]) fires first: the
/// plugin cannot poll its call context while it waits.
pub(crate) async fn unless_cancelled<T>(
    cancel: Option<CancellationToken>,
    request: impl Future<Output = T>,
    cancelled: impl FnOnce() -> T,
) -> T {
    match cancel {
        Some(cancel) => tokio::select! {
            biased;
            () = cancel.cancelled() => cancelled(),
            answer = request => answer,
        },
        None => request.await,
    }
}

/// The trap raised when a call runs out of CPU budget.
#[derive(Debug)]
pub struct CpuExhausted;

impl std::fmt::Display for CpuExhausted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ran past its CPU budget")
    }
}

impl std::error::Error for CpuExhausted {}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

type R<T> = wasmtime::Result<T>;
