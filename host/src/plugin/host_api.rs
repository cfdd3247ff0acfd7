//! What a plugin's store holds and what its imports do: the empty WASI
//! context, the memory limiter, the CPU budget, the plugin's log and config,
//! and the host side of the `tool-schema`, `tool-args` and `call-context`
//! handles and of `toolhost:plugin/http`.
//!
//! Every value a plugin hands the host is size-checked here; logging is
//! capped per call so a chatty or hostile plugin cannot flood the host log
//! (the caps are in `bounds`).
//!
//! Time spent inside the host's own imports (the schema, argument, call
//! context, log and config functions) is charged to the call's CPU budget:
//! the epoch ticks only count while guest code runs, and an import that
//! takes 100 ms would otherwise cost one tick. Each import measures its
//! wall time and spends the budget's ticks for it, trapping the call once
//! they are spent. `http.fetch` is not charged: it waits on the network,
//! bounded by the wall clock, like the WASI waits.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::io::AsyncWrite;
use wasmtime::component::{Resource, ResourceTable};
use wasmtime::{StoreLimits, StoreLimitsBuilder, UpdateDeadline};
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use super::bindings::{host, http, types, value_model_types};
use super::engine::TICK;
use super::manifest::Limits;
use crate::bounds::{MAX_LOG_LINE, MAX_LOG_LINES_PER_CALL, cut};
use crate::schema::{ArgsEdit, EditError, SchemaEdit};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    Trace,
    Debug,
    Info,
    Warn,
    Error,
}

/// One line a plugin logged, through `log()` or its stdout or stderr.
#[derive(Debug, Clone, serde::Serialize)]
pub struct LogLine {
    pub plugin: Arc<str>,
    pub level: LogLevel,
    /// `log`, `stdout` or `stderr`.
    pub stream: &'static str,
    pub message: String,
}

/// Where plugin log lines go. The default sends them to `tracing`.
pub type LogSink = Arc<dyn Fn(LogLine) + Send + Sync>;

pub fn tracing_sink() -> LogSink {
    Arc::new(|line: LogLine| {
        let (plugin, stream, msg) = (&*line.plugin, line.stream, &line.message);
        match line.level {
            LogLevel::Trace => tracing::trace!(target: "plugin", plugin, stream, "{msg}"),
            LogLevel::Debug => tracing::debug!(target: "plugin", plugin, stream, "{msg}"),
            LogLevel::Info => tracing::info!(target: "plugin", plugin, stream, "{msg}"),
            LogLevel::Warn => tracing::warn!(target: "plugin", plugin, stream, "{msg}"),
            LogLevel::Error => tracing::error!(target: "plugin", plugin, stream, "{msg}"),
        }
    })
}

/// What a plugin is, as its imports need to know it.
pub struct PluginIdentity {
    pub name: Arc<str>,
    pub config_json: String,
    pub limits: Limits,
    pub http: Arc<super::http::HttpGrant>,
    pub log: LogSink,
}

/// Shared between a store's log streams and its `log()` import, so the
/// per-call line cap and the redaction of secrets cover all three.
struct LogBudget {
    identity: Arc<PluginIdentity>,
    lines: std::sync::atomic::AtomicU32,
}

impl LogBudget {
    fn emit(&self, level: LogLevel, stream: &'static str, mut message: String) {
        let n = self.lines.fetch_add(1, Ordering::Relaxed);
        if n > MAX_LOG_LINES_PER_CALL {
            return;
        }
        if n == MAX_LOG_LINES_PER_CALL {
            message =
                format!("(log cap of {MAX_LOG_LINES_PER_CALL} lines per call reached; dropping the rest)");
        }
        // Before the cut, so no part of a secret survives it.
        self.identity.http.redactor().string(&mut message);
        (self.identity.log)(LogLine {
            plugin: self.identity.name.clone(),
            level,
            stream,
            message: cut(message, MAX_LOG_LINE),
        });
    }
}

/// The data of one plugin instance's store.
pub struct HostState {
    pub(crate) table: ResourceTable,
    wasi: WasiCtx,
    pub(crate) limits: StoreLimits,
    pub(crate) identity: Arc<PluginIdentity>,
    log: Arc<LogBudget>,
    /// The CPU budget of one call, in epoch ticks.
    cpu_ticks: u64,
    /// Epoch ticks the current call may still run for.
    cpu_ticks_left: u64,
    /// Time spent in imports during this call not yet charged (under a tick).
    import_time: Duration,
    /// When the current call began: its wall-clock budget counts from here.
    call_started: Instant,
}

impl HostState {
    pub fn new(identity: Arc<PluginIdentity>) -> Self {
        let log = Arc::new(LogBudget {
            identity: identity.clone(),
            lines: Default::default(),
        });
        let wasi = WasiCtx::builder()
            .stdout(LogStream {
                log: log.clone(),
                stream: "stdout",
                level: LogLevel::Info,
            })
            .stderr(LogStream {
                log: log.clone(),
                stream: "stderr",
                level: LogLevel::Warn,
            })
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
        let cpu_ticks = (identity.limits.cpu.as_micros() / tick).max(1) as u64;
        Self {
            table: ResourceTable::new(),
            wasi,
            limits,
            identity,
            log,
            cpu_ticks,
            cpu_ticks_left: 0,
            import_time: Duration::ZERO,
            call_started: Instant::now(),
        }
    }

    /// Arm the CPU budget and log cap for one call.
    pub fn begin_call(&mut self) {
        self.call_started = Instant::now();
        self.cpu_ticks_left = self.cpu_ticks;
        self.import_time = Duration::ZERO;
        self.log.lines.store(0, Ordering::Relaxed);
    }

    /// Run one import and charge its wall time to the call's CPU budget:
    /// a whole tick for each tick's worth of time, the rest carried over.
    /// Traps (as [`CpuExhausted`]) once the budget is spent.
    fn charged<T>(&mut self, import: impl FnOnce(&mut Self) -> R<T>) -> R<T> {
        let start = Instant::now();
        let out = import(self)?;
        self.import_time += start.elapsed();
        let ticks = (self.import_time.as_nanos() / TICK.as_nanos()) as u64;
        if ticks > 0 {
            self.import_time -= TICK * ticks as u32;
            if ticks > self.cpu_ticks_left {
                self.cpu_ticks_left = 0;
                return Err(wasmtime::Error::msg(CpuExhausted));
            }
            self.cpu_ticks_left -= ticks;
        }
        Ok(out)
    }

    /// Called by wasmtime each tick the guest is running: yield to the
    /// executor (so wall-clock deadlines and cancellation can fire), or trap
    /// once the call's CPU budget is spent.
    pub fn on_epoch(&mut self) -> wasmtime::Result<UpdateDeadline> {
        if self.cpu_ticks_left == 0 {
            return Err(wasmtime::Error::msg(CpuExhausted));
        }
        self.cpu_ticks_left -= 1;
        Ok(UpdateDeadline::Yield(1))
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

/// A guest's stdout or stderr, cut into lines for the host log.
#[derive(Clone)]
struct LogStream {
    log: Arc<LogBudget>,
    stream: &'static str,
    level: LogLevel,
}

impl IsTerminal for LogStream {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for LogStream {
    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(LineWriter {
            sink: self.clone(),
            pending: Vec::new(),
        })
    }
}

struct LineWriter {
    sink: LogStream,
    pending: Vec<u8>,
}

impl LineWriter {
    fn flush_lines(&mut self, all: bool) {
        while let Some(end) = self.pending.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=end).collect();
            self.emit(&line[..line.len() - 1]);
        }
        if all || self.pending.len() > MAX_LOG_LINE {
            let rest = std::mem::take(&mut self.pending);
            if !rest.is_empty() {
                self.emit(&rest);
            }
        }
    }

    fn emit(&self, bytes: &[u8]) {
        let text = String::from_utf8_lossy(bytes).trim_end_matches('\r').to_owned();
        self.sink.log.emit(self.sink.level, self.sink.stream, text);
    }
}

impl AsyncWrite for LineWriter {
    fn poll_write(mut self: Pin<&mut Self>, _: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        self.pending.extend_from_slice(buf);
        self.flush_lines(false);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        self.flush_lines(true);
        Poll::Ready(Ok(()))
    }
}

impl Drop for LineWriter {
    fn drop(&mut self) {
        self.flush_lines(true);
    }
}

/// A running tool call, lent to a tool plugin's `execute`.
pub struct CallContext {
    pub call_id: String,
    pub cancelled: Arc<AtomicBool>,
    pub progress: Option<ProgressFn>,
}

/// Receives a tool's progress reports: (progress, total, message).
pub type ProgressFn = Arc<dyn Fn(f64, Option<f64>, Option<String>) + Send + Sync>;

impl From<EditError> for types::EditError {
    fn from(e: EditError) -> Self {
        match e {
            EditError::NoSuchField(s) => Self::NoSuchField(s),
            EditError::InvalidJson(s) => Self::InvalidJson(s),
            EditError::InvalidSchema(s) => Self::InvalidSchema(s),
            EditError::TooLarge(n) => Self::TooLarge(n),
            EditError::ReadOnly => Self::ReadOnly,
        }
    }
}

type R<T> = wasmtime::Result<T>;
type Edit<T> = R<Result<T, types::EditError>>;

impl HostState {
    fn schema(&mut self, r: &Resource<SchemaEdit>) -> R<&mut SchemaEdit> {
        Ok(self.table.get_mut(r)?)
    }

    fn args(&mut self, r: &Resource<ArgsEdit>) -> R<&mut ArgsEdit> {
        Ok(self.table.get_mut(r)?)
    }
}

fn edit<T>(result: Result<T, EditError>) -> Edit<T> {
    Ok(result.map_err(Into::into))
}

impl types::Host for HostState {}

impl types::HostToolSchema for HostState {
    fn description(&mut self, s: Resource<SchemaEdit>) -> R<String> {
        self.charged(|h| Ok(h.schema(&s)?.schema.description().to_owned()))
    }

    fn set_tool_description(&mut self, s: Resource<SchemaEdit>, description: String) -> Edit<()> {
        self.charged(|h| edit(h.schema(&s)?.set_tool_description(description)))
    }

    fn property_names(&mut self, s: Resource<SchemaEdit>) -> R<Vec<String>> {
        self.charged(|h| Ok(h.schema(&s)?.schema.property_names()))
    }

    fn get_property(&mut self, s: Resource<SchemaEdit>, name: String) -> R<Option<String>> {
        self.charged(|h| Ok(h.schema(&s)?.schema.property(&name).map(|v| v.to_string())))
    }

    fn set_property(&mut self, s: Resource<SchemaEdit>, name: String, schema: String) -> Edit<bool> {
        self.charged(|h| edit(h.schema(&s)?.set_property(&name, &schema)))
    }

    fn remove_params(&mut self, s: Resource<SchemaEdit>, names: Vec<String>) -> R<u32> {
        self.charged(|h| Ok(h.schema(&s)?.remove_params(&names)))
    }

    fn required(&mut self, s: Resource<SchemaEdit>) -> R<Vec<String>> {
        self.charged(|h| Ok(h.schema(&s)?.schema.required()))
    }

    fn set_required(&mut self, s: Resource<SchemaEdit>, name: String, required: bool) -> Edit<()> {
        self.charged(|h| edit(h.schema(&s)?.set_required(&name, required)))
    }

    fn set_enum(&mut self, s: Resource<SchemaEdit>, name: String, values: Vec<String>) -> Edit<()> {
        self.charged(|h| edit(h.schema(&s)?.set_enum(&name, values)))
    }

    fn add_enum_param(
        &mut self,
        s: Resource<SchemaEdit>,
        name: String,
        description: String,
        values: Vec<String>,
    ) -> Edit<()> {
        self.charged(|h| edit(h.schema(&s)?.add_enum_param(&name, description, values)))
    }

    fn set_description(&mut self, s: Resource<SchemaEdit>, name: String, description: String) -> Edit<()> {
        self.charged(|h| edit(h.schema(&s)?.set_description(&name, description)))
    }

    fn set_default(&mut self, s: Resource<SchemaEdit>, name: String, value: String) -> Edit<()> {
        self.charged(|h| edit(h.schema(&s)?.set_default(&name, &value)))
    }

    fn to_json(&mut self, s: Resource<SchemaEdit>) -> R<String> {
        self.charged(|h| {
            let edit = h.schema(&s)?;
            let mut value = edit.schema.to_value();
            value["description"] = edit.schema.description().into();
            Ok(value.to_string())
        })
    }

    fn drop(&mut self, s: Resource<SchemaEdit>) -> R<()> {
        // Lent handles are owned by the host, which takes them back itself.
        let _ = s;
        Ok(())
    }
}

impl types::HostToolArgs for HostState {
    fn keys(&mut self, a: Resource<ArgsEdit>) -> R<Vec<String>> {
        self.charged(|h| Ok(h.args(&a)?.args.keys().cloned().collect()))
    }

    fn get(&mut self, a: Resource<ArgsEdit>, key: String) -> R<Option<String>> {
        self.charged(|h| Ok(h.args(&a)?.get(&key)))
    }

    fn set(&mut self, a: Resource<ArgsEdit>, key: String, value: String) -> Edit<()> {
        // The size caps are the handle's own (`ArgsEdit` was lent with the
        // plugin's output limit and the room left to write), checked there.
        self.charged(|h| edit(h.args(&a)?.set(key, &value)))
    }

    fn remove(&mut self, a: Resource<ArgsEdit>, key: String) -> Edit<Option<String>> {
        self.charged(|h| edit(h.args(&a)?.remove(&key)))
    }

    fn to_json(&mut self, a: Resource<ArgsEdit>) -> R<String> {
        self.charged(|h| Ok(serde_json::to_string(&h.args(&a)?.args)?))
    }

    fn drop(&mut self, a: Resource<ArgsEdit>) -> R<()> {
        let _ = a;
        Ok(())
    }
}

impl types::HostCallContext for HostState {
    fn call_id(&mut self, c: Resource<CallContext>) -> R<String> {
        self.charged(|h| Ok(h.table.get(&c)?.call_id.clone()))
    }

    fn is_cancelled(&mut self, c: Resource<CallContext>) -> R<bool> {
        self.charged(|h| Ok(h.table.get(&c)?.cancelled.load(Ordering::Relaxed)))
    }

    fn report_progress(
        &mut self,
        c: Resource<CallContext>,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    ) -> R<()> {
        self.charged(|h| {
            let redactor = h.identity.http.redactor();
            let message = message.map(|m| cut(redactor.text(&m).into_owned(), MAX_LOG_LINE));
            if let Some(report) = &h.table.get(&c)?.progress {
                report(progress, total, message);
            }
            Ok(())
        })
    }

    fn drop(&mut self, c: Resource<CallContext>) -> R<()> {
        let _ = c;
        Ok(())
    }
}

impl host::Host for HostState {
    fn log(&mut self, level: host::LogLevel, message: String) -> R<()> {
        let level = match level {
            host::LogLevel::Trace => LogLevel::Trace,
            host::LogLevel::Debug => LogLevel::Debug,
            host::LogLevel::Info => LogLevel::Info,
            host::LogLevel::Warn => LogLevel::Warn,
            host::LogLevel::Error => LogLevel::Error,
        };
        self.charged(|h| {
            h.log.emit(level, "log", message);
            Ok(())
        })
    }

    fn config(&mut self) -> R<String> {
        self.charged(|h| Ok(h.identity.config_json.clone()))
    }
}

impl value_model_types::Host for HostState {}

impl http::Host for HostState {
    async fn fetch(&mut self, req: http::Request) -> R<Result<http::Response, http::HttpError>> {
        let grant = self.identity.http.clone();
        let limits = &self.identity.limits;
        Ok(grant
            .fetch(req, self.call_started, limits.wall, limits.max_output_bytes)
            .await)
    }
}
