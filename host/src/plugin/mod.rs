//! The WebAssembly plugin runtime: loading components from a directory and
//! calling them inside a sandbox with no ambient authority (no files,
//! environment, sockets or arguments) where every call is bounded in memory,
//! CPU, wall-clock time and output size.
//!
//! [`Runtime`] owns the engine, the linker of host imports, the compiled-code
//! cache and the log sink. [`Plugin`] is one loaded component: its manifest,
//! limits, health, instances and typed calls (`calls.rs`). This module does
//! not decide what plugins are used for: the enricher chain is `enrich`, the
//! call pipeline is elsewhere.

mod cache;
mod calls;
mod compile;
mod deadline;
mod definition;
mod engine;
mod health;
mod host_api;
mod http;
mod instance;
mod loader;
pub(crate) mod manifest;
mod origin;
mod rate_limit;
pub mod record;
pub(crate) mod redact;
mod rerun;
pub(crate) mod shadow;
mod wit;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use wasmtime::Engine;
use wasmtime::component::Linker;

pub use cache::CodeSource;
pub(crate) use calls::Enrichment;
pub use compile::{COMPILE_CPU, COMPILE_WALL, COMPILE_WORKERS, Compiler, WORKER_MEMORY, run_worker};
pub(crate) use definition::Texts;
pub(crate) use definition::ToolDefinition;
pub use definition::{Answer, BeforeCallDecision, Hooks, Question, RenderOptions};
pub use health::Status;
pub use host_api::{LogLevel, LogLine, LogSink, ProgressFn, tracing_sink};
pub(crate) use http::{CallSecrets, HttpGrant};
pub(crate) use loader::{Admission, UnreadableDir};
pub use loader::{LoadError, LoadErrorKind, LoadReport};
pub(crate) use manifest::{Limits, Method, Policy};
pub use manifest::{Manifest, ManifestError};
pub use record::Recorder;
pub use rerun::{Rerun, RerunError};
pub use shadow::{ShadowCount, ShadowTally};

use host_api::HostState;
use instance::Instances;

pub use wit::Version;

/// The WebAssembly engine could not be set up on this machine.
#[derive(Debug, Clone, thiserror::Error)]
#[error("the WebAssembly engine could not be set up: {message}")]
pub struct RuntimeError {
    /// Why, as wasmtime tells it.
    pub message: String,
}

/// A plugin failed, or refused, while serving one call.
#[derive(Debug, Clone, thiserror::Error)]
pub enum PluginError {
    /// The plugin trapped (panicked, or broke the sandbox's rules).
    #[error("plugin `{plugin}` trapped in {method}: {message}")]
    Trap {
        /// The plugin at fault.
        plugin: Arc<str>,
        /// The export called.
        method: &'static str,
        /// The trap, as wasmtime tells it.
        message: String,
    },
    /// The plugin ran out of CPU time.
    #[error("plugin `{plugin}` ran past its CPU budget of {cpu_ms} ms in {method}")]
    Cpu {
        /// The plugin at fault.
        plugin: Arc<str>,
        /// The export called.
        method: &'static str,
        /// Its CPU cap, in milliseconds.
        cpu_ms: u64,
    },
    /// The plugin ran out of wall-clock time.
    #[error("plugin `{plugin}` did not finish {method} within {wall_ms} ms")]
    Timeout {
        /// The plugin at fault.
        plugin: Arc<str>,
        /// The export called.
        method: &'static str,
        /// Its time cap, in milliseconds.
        wall_ms: u64,
    },
    /// The plugin failed too often lately and is not called until its
    /// backoff ends.
    #[error("plugin `{plugin}` is quarantined after repeated failures; retry in {retry_in_ms} ms")]
    Quarantined {
        /// The plugin at fault.
        plugin: Arc<str>,
        /// Milliseconds until it is called again.
        retry_in_ms: u64,
    },
    /// The plugin handed over more than the host takes.
    #[error("plugin `{plugin}` returned {bytes} bytes from {method}, over its limit of {limit}")]
    TooLarge {
        /// The plugin at fault.
        plugin: Arc<str>,
        /// The export called.
        method: &'static str,
        /// The size handed over.
        bytes: usize,
        /// The cap.
        limit: usize,
    },
    /// The plugin handed over something malformed.
    #[error("plugin `{plugin}` returned something invalid from {method}: {message}")]
    Invalid {
        /// The plugin at fault.
        plugin: Arc<str>,
        /// The export called.
        method: &'static str,
        /// What is wrong with it.
        message: String,
    },
    /// The plugin refused the call (its own error).
    #[error("plugin `{plugin}` refused in {method}: {message}")]
    Rejected {
        /// The plugin that refused.
        plugin: Arc<str>,
        /// The export called.
        method: &'static str,
        /// The plugin's reason.
        message: String,
    },
}

impl PluginError {
    /// The plugin at fault.
    pub fn plugin(&self) -> &str {
        match self {
            Self::Trap { plugin, .. }
            | Self::Cpu { plugin, .. }
            | Self::Timeout { plugin, .. }
            | Self::Quarantined { plugin, .. }
            | Self::TooLarge { plugin, .. }
            | Self::Invalid { plugin, .. }
            | Self::Rejected { plugin, .. } => plugin,
        }
    }
}

/// Which interfaces a component exports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Worlds {
    /// It exports the enricher world.
    pub enricher: bool,
    /// It exports the tool world.
    pub tool: bool,
}

impl Worlds {
    /// The worlds' name, as `check` reports them.
    pub fn name(self) -> &'static str {
        match (self.enricher, self.tool) {
            (true, true) => "full-plugin",
            (true, false) => "enricher-plugin",
            (false, true) => "tool-plugin",
            (false, false) => "none",
        }
    }
}

/// Settings of a [`Runtime`].
pub struct RuntimeOptions {
    /// Where compiled code is cached; `None` compiles on every start.
    pub cache_dir: Option<PathBuf>,
    /// How a plugin is compiled where the cache has no code for it: in this
    /// process by default; a host loading plugins from strangers names a
    /// worker process, which is killed if a compile takes too long.
    pub compiler: Compiler,
    /// Where plugin log lines go.
    pub log: LogSink,
    /// The user's per-plugin settings (`[plugin.NAME]` of `toolhost.toml`),
    /// laid over each plugin's sidecar manifest.
    pub plugin_settings: PluginSettings,
    /// Where every call into a plugin is recorded (`serve --record`).
    pub record: Option<Arc<Recorder>>,
    /// Load every plugin with no grant, whatever its manifest and the
    /// user's settings say: no request leaves, no secret is read (a
    /// `toolhost replay` that was not asked to reach the network).
    pub offline: bool,
}

impl Default for RuntimeOptions {
    fn default() -> Self {
        Self {
            cache_dir: cache::CodeCache::default_dir(),
            compiler: Compiler::default(),
            log: tracing_sink(),
            plugin_settings: PluginSettings::default(),
            record: None,
            offline: false,
        }
    }
}

/// The user's `[plugin.NAME]` tables, by plugin name, and the file they
/// were read from, which errors about them name.
#[derive(Debug, Clone)]
pub struct PluginSettings {
    /// The file the tables were read from; `toolhost.toml` by default.
    pub file: PathBuf,
    /// Each plugin's table, by plugin name.
    pub tables: BTreeMap<String, toml::Table>,
}

impl Default for PluginSettings {
    fn default() -> Self {
        Self {
            file: PathBuf::from("toolhost.toml"),
            tables: BTreeMap::new(),
        }
    }
}

/// The engine, linker and code cache every plugin shares.
pub struct Runtime {
    engine: Engine,
    linker: Linker<HostState>,
    cache: cache::CodeCache,
    log: LogSink,
    plugin_settings: PluginSettings,
    /// Shared with every plugin, so CPU budgets hold as long as any plugin lives.
    ticker: Arc<engine::EpochTicker>,
    recorder: Option<Arc<Recorder>>,
    offline: bool,
    /// The differences of every shadow candidate, across reloads.
    shadows: Arc<ShadowTally>,
}

impl Runtime {
    /// The engine and linker every plugin of this runtime shares, and its
    /// code cache. Fails if the engine cannot be configured on this machine.
    pub fn new(options: RuntimeOptions) -> Result<Self, RuntimeError> {
        let error = |e: wasmtime::Error| RuntimeError {
            message: format!("{e:#}"),
        };
        let engine = engine::new_engine().map_err(error)?;
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker).map_err(error)?;
        wit::add_to_linker(&mut linker).map_err(error)?;
        let cache = cache::CodeCache::new(&engine, options.cache_dir, options.compiler);
        let ticker = Arc::new(engine::EpochTicker::start(&engine));
        Ok(Self {
            engine,
            linker,
            cache,
            log: options.log,
            plugin_settings: options.plugin_settings,
            ticker,
            recorder: options.record,
            offline: options.offline,
            shadows: Arc::default(),
        })
    }

    /// What the shadow candidates of this runtime's plugins did.
    pub fn shadows(&self) -> &Arc<ShadowTally> {
        &self.shadows
    }

    /// Where plugin log lines go; upstream servers' lines go there too.
    pub fn log_sink(&self) -> LogSink {
        self.log.clone()
    }
}

/// One loaded plugin.
pub struct Plugin {
    /// The plugin's name (its file's stem).
    pub name: Arc<str>,
    /// Its component file.
    pub path: PathBuf,
    /// Its manifest, with the user's table laid over it.
    pub manifest: Manifest,
    /// The worlds it exports.
    pub worlds: Worlds,
    /// The version of the contract the component was built against.
    pub version: Version,
    /// Categories claimed (enrichers), from `supported-categories`.
    pub categories: Vec<String>,
    /// Tools provided (tool plugins), from `list-tools`.
    pub tools: Vec<ToolDefinition>,
    /// The component's size.
    pub size_bytes: usize,
    /// Where its compiled code came from.
    pub code_source: CodeSource,
    /// How long it took to load.
    pub load_time: Duration,
    /// Interfaces the component imports (WASI and toolhost), for `check`.
    pub imports: Vec<String>,
    instances: Instances,
    /// Where its calls are recorded, with the file's digest.
    recording: Option<(Arc<Recorder>, String)>,
    shadow: Option<shadow::Shadow>,
    /// The digest (`sha256:…`) of the component whose code runs.
    digest: String,
}

impl Plugin {
    /// The digest (`sha256:…`) of the component it was loaded from: the
    /// code that runs, whatever is at its path now.
    pub fn digest(&self) -> &str {
        &self.digest
    }

    /// Its resolved caps.
    pub fn limits(&self) -> &Limits {
        &self.instances.identity().limits
    }

    /// Its health now.
    pub fn status(&self) -> Status {
        self.instances.health.status()
    }

    /// How often it has been quarantined.
    pub fn quarantine_trips(&self) -> u32 {
        self.instances.health.trips()
    }

    /// Traps, and other failures (CPU, deadline, output too large), since
    /// load.
    pub fn traps(&self) -> u64 {
        self.instances.health.failures()
    }

    /// Calls refused since load because the plugin was quarantined.
    pub fn refused_calls(&self) -> u64 {
        self.instances.health.refused()
    }

    pub(crate) fn policy(&self, method: Method) -> Policy {
        self.manifest.failure.policy(method)
    }

    /// Whether it claims `category` (an enricher's `supported-categories`).
    pub fn claims(&self, category: &str) -> bool {
        self.categories.iter().any(|c| c == category)
    }

    /// The host names (or addresses) of the origins the plugin may reach
    /// over HTTP, without scheme or port, each once.
    pub fn http_hosts(&self) -> &[String] {
        self.instances.identity().http.hosts()
    }

    /// What the plugin may reach over HTTP, and with which secrets.
    pub(crate) fn http_grant(&self) -> &HttpGrant {
        &self.instances.identity().http
    }

    /// The plugin's granted secrets, by name and value (for the gate).
    pub(crate) fn secrets(&self) -> &[(String, String)] {
        self.instances.identity().http.secrets()
    }

    /// The candidate run beside this plugin, if any.
    pub fn shadow(&self) -> Option<&shadow::Shadow> {
        self.shadow.as_ref()
    }

    /// Time to create one fresh instance, for `check` and benchmarks.
    pub async fn time_instantiation(&self) -> Result<Duration, PluginError> {
        let start = std::time::Instant::now();
        let instance = self
            .instances
            .instantiate()
            .await
            .map_err(|e| PluginError::Trap {
                plugin: self.name.clone(),
                method: "instantiate",
                message: format!("{e:#}"),
            })?;
        drop(instance);
        Ok(start.elapsed())
    }
}
