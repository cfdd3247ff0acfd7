//! [`Toolhost`], the library API: the catalog current now, and how it is
//! replaced.
//!
//! The catalog is rebuilt (gathered and enriched again, value models
//! layered again) when an upstream server sends `tools/list_changed` or the
//! plugins are replaced ([`Toolhost::replace_plugins`], used by
//! `toolhost serve --watch`), and swapped in whole: each call reads the
//! current catalog once and runs to its end on it, so a call in flight when
//! its tool disappears still completes (an upstream server answers for its
//! own tools, a replaced plugin lives until its last call ends). The old
//! catalog's prefetches are cancelled and its results never served, so
//! nothing computed against the old tool set reaches a call. A rebuild that
//! fails (a `[bind]` whose backend is gone) keeps the previous catalog and
//! logs why. [`Toolhost::subscribe`] marks each rebuild for the MCP front.
//!
//! With a cluster (`[cluster]`), each rebuild is published to the other
//! replicas, and theirs mark this one's [`Toolhost::subscribe`] as a
//! rebuild would, so that every replica's clients list the tools again.
//! A replica does not rebuild on another's word: each loads its plugin
//! directory and follows its upstream servers itself (the replicas of a
//! deployment share one plugin directory, each `serve --watch` on it), and
//! a rebuild it was told of but has not made yet is announced again when it
//! makes it.
//!
//! Not here: what a build does (`catalog`), the steps of a call (`call`).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, PoisonError, RwLock, Weak};
use std::time::{Instant, SystemTime};

use serde_json::Value;
use tokio::sync::watch;

use super::audit::{Audit, Noted, Record, ServedBy, shape_of};
use super::builder::ToolhostBuilder;
use super::caller::Caller;
use super::catalog::{Backend, CatalogError, Generation, Options, Sources};
use super::control::{CallControl, CallError};
use super::pinned::{self, Pinned};
use super::policy::Policy;
use crate::enrich::Listing;
use crate::output::{CallOutput, ToolError};
use crate::ownership::{self, Refusal};
use crate::pin;
use crate::plugin::{Hooks, LoadError, LoadErrorKind, Plugin};
use crate::prompt::SystemPrompt;
use crate::speculation;
use crate::tools::NativeTools;
use crate::upstream::Gateway;
use crate::upstream::{Backoff, Upstream};
use crate::value_model::ValueModels;

/// The merged, enriched catalog and the pipeline that calls it.
pub struct Toolhost {
    shared: Arc<Shared>,
    /// One task per upstream server, rebuilding the catalog when the
    /// server's tool list changes.
    followers: Vec<tokio::task::JoinHandle<()>>,
    /// The upstream servers' prompts, resources and instructions.
    gateway: Gateway,
}

/// What the followers share with the `Toolhost`.
struct Shared {
    /// Held while the catalog is rebuilt: one rebuild at a time, and the
    /// plugins are swapped only with the catalog built from them.
    sources: tokio::sync::Mutex<Sources>,
    options: Options,
    /// Read once per call: the call runs on the catalog it started with.
    current: RwLock<Arc<Generation>>,
    /// Counts rebuilds, for the MCP front's `tools/list_changed`.
    rebuilt: watch::Sender<u64>,
    /// By plugin name: how many loads refused its file before any of its
    /// code ran (the trust checks), since this host started.
    refused_loads: Mutex<BTreeMap<Arc<str>, u64>>,
    /// The served list under the pin, as last compared.
    pinned: Pinned,
    /// Who may call which tool, as of now; `None` allows every call.
    policy: RwLock<Option<Arc<Policy>>>,
}

impl Toolhost {
    /// The way to build a host: every source and option, each default
    /// stated on its method; the plugins pass the trust checks.
    pub fn builder() -> ToolhostBuilder<'static> {
        ToolhostBuilder::default()
    }

    /// Merge sources already loaded and reached, and enrich the listing,
    /// with default options. Hidden with its `Sources` (the workspace's
    /// tests assemble hosts from parts): embedders use [`Toolhost::builder`].
    #[doc(hidden)]
    pub async fn new(sources: Sources) -> Result<Self, CatalogError> {
        Self::with_options(sources, Options::default()).await
    }

    /// A host serving the native tools alone, with `speculation`: the
    /// smallest embedding (and what the speculation tests and the replay of
    /// agent trajectories run).
    pub async fn native(
        native: NativeTools,
        speculation: speculation::Settings,
    ) -> Result<Self, CatalogError> {
        let sources = Sources {
            native: Some(Arc::new(native)),
            ..Sources::default()
        };
        let options = Options {
            speculation,
            ..Options::default()
        };
        Self::with_options(sources, options).await
    }

    /// Merge sources already loaded and reached, enrich the listing, layer
    /// the value models and start speculation if it is on; what
    /// [`ToolhostBuilder::build`] ends with. Must run inside a Tokio
    /// runtime: it starts following the upstream servers' tool lists.
    /// Hidden as [`Toolhost::new`] is.
    #[doc(hidden)]
    pub async fn with_options(sources: Sources, options: Options) -> Result<Self, CatalogError> {
        let generation = Generation::build(&sources, &options, None).await?;
        let upstreams = sources.upstreams.clone();
        let shared = Arc::new(Shared {
            sources: tokio::sync::Mutex::new(sources),
            policy: RwLock::new(options.policy.clone()),
            options,
            current: RwLock::new(Arc::new(generation)),
            rebuilt: watch::Sender::new(0),
            refused_loads: Mutex::default(),
            pinned: Pinned::default(),
        });
        if let Some(cluster) = &shared.options.speculation.cluster {
            let weak = Arc::downgrade(&shared);
            cluster.follow_catalog(move || {
                weak.upgrade()
                    .map(|shared| shared.rebuilt.send_modify(|n| *n += 1))
                    .is_some()
            });
        }
        let weak = Arc::downgrade(&shared);
        let gate = move || weak.upgrade().map(|shared| shared.current().core.gate.clone());
        let gateway = Gateway::new(upstreams.clone(), Box::new(gate));
        let followers = upstreams
            .into_iter()
            .map(|server| tokio::spawn(follow(Arc::downgrade(&shared), server)))
            .collect();
        Ok(Self {
            shared,
            followers,
            gateway,
        })
    }

    /// The upstream servers' features besides tools, each answer through
    /// the same gate as a call's result.
    pub fn gateway(&self) -> &Gateway {
        &self.gateway
    }

    /// The enriched tool list, as of now, and every tool known but not
    /// served with why (hidden by a failed enrichment, a category no
    /// enricher claims, a base-catalog tool with no backend).
    pub fn list_tools(&self) -> Arc<Listing> {
        self.shared.current().core.listing.clone()
    }

    /// The tools as the model is shown them, as of now, in MCP's form:
    /// the listing, under the pin if one is kept (`crate::pin`: a changed
    /// tool as pinned or not at all, a new or renamed one not at all), with
    /// every difference from the pin.
    pub fn served_tools(&self) -> Arc<pin::Served> {
        let generation = self.shared.current();
        match &self.shared.options.pin {
            Some(settings) => self.shared.pinned.served(generation, settings),
            None => Arc::new(pin::Served {
                tools: generation.core.listing.tools.iter().map(|t| t.to_mcp()).collect(),
                differences: Vec::new(),
            }),
        }
    }

    /// Each listed tool as it would be served with no pin, with its
    /// source: what `toolhost pin` records and compares.
    pub fn pin_entries(&self) -> Vec<pin::Entry> {
        pinned::entries(&self.shared.current())
            .into_iter()
            .map(|(_, entry)| entry)
            .collect()
    }

    /// Where the pin is kept, if one is.
    pub fn pin_settings(&self) -> Option<&pin::Settings> {
        self.shared.options.pin.as_ref()
    }

    /// The tools left out of the catalog because another source owns their
    /// name (see `ownership`), as of now.
    pub fn refusals(&self) -> Vec<Refusal> {
        self.shared.current().core.refused.clone()
    }

    /// Count the plugin files a load of the plugin directory refused before
    /// any of their code ran (`errors` of that load; other errors are not
    /// refusals and are not counted).
    pub fn count_refused_loads(&self, errors: &[LoadError]) {
        let mut counts = self
            .shared
            .refused_loads
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        for error in errors.iter().filter(|e| e.kind == LoadErrorKind::NotAdmitted) {
            *counts.entry(error.plugin()).or_default() += 1;
        }
    }

    /// By plugin name, the loads that refused its file, since start.
    pub fn refused_loads(&self) -> Vec<(Arc<str>, u64)> {
        let counts = self
            .shared
            .refused_loads
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        counts.iter().map(|(name, n)| (name.clone(), *n)).collect()
    }

    /// The loaded plugins the catalog was built from, as of now.
    pub async fn plugins(&self) -> Vec<Arc<Plugin>> {
        self.shared.sources.lock().await.plugins.clone()
    }

    /// The layered value models of the listed tools, as of now.
    pub fn value_models(&self) -> Arc<ValueModels> {
        self.shared.current().core.models.clone()
    }

    /// Replace the plugins (a reloaded plugin directory) and rebuild the
    /// catalog with them. If the catalog does not build with them (a
    /// `[bind]` to a tool plugin that is gone), the previous plugins and
    /// catalog stay, and the error says why. Tools refused by the ownership
    /// rule are logged and left out; the rest is served.
    pub async fn replace_plugins(&self, plugins: Vec<Arc<Plugin>>) -> Result<(), CatalogError> {
        self.shared.rebuild(Some(plugins)).await
    }

    /// Marks a change each time the catalog is rebuilt (an upstream
    /// server's tool list changed, the plugins were replaced); a client
    /// should list the tools again.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.shared.rebuilt.subscribe()
    }

    /// The plugin that runs `tool`, if a plugin does (its own tool, or a
    /// catalog tool bound to it), as of now.
    pub fn tool_plugin(&self, tool: &str) -> Option<String> {
        self.shared
            .current()
            .core
            .plugin(tool)
            .map(|p| p.name.to_string())
    }

    /// What speculation has done so far, if it is on.
    pub fn stats(&self) -> Option<speculation::Snapshot> {
        self.shared.current().speculation.as_ref().map(|e| e.stats())
    }

    /// Start from what an earlier run learned (its last
    /// [`stats`](Toolhost::stats)): the follow-up links, and how often the
    /// agent called each rank of their candidates, so that what agents
    /// taught one run lasts across restarts. Nothing happens with
    /// speculation off.
    pub fn resume(&self, earlier: &speculation::Snapshot) {
        if let Some(engine) = &self.shared.current().speculation {
            engine.resume(earlier);
        }
    }

    /// Wait until no follow-up is being planned or prefetched.
    pub async fn settle(&self) {
        if let Some(engine) = &self.shared.current().speculation {
            engine.idle().await;
        }
    }

    /// Stop following the upstream servers, cancel every prefetch in
    /// flight, and end the session with each upstream server: a stdio
    /// server's input is closed and it has 2 s to exit, then `SIGTERM` and
    /// 2 s more, then it is killed; its last stderr lines are copied to the
    /// host's. A URL server's sessions, the host's own and each caller's,
    /// are ended with `DELETE`, each given 2 s.
    pub async fn shutdown(&self) {
        for follower in &self.followers {
            follower.abort();
        }
        let sources = self.shared.sources.lock().await;
        if let Some(engine) = &self.shared.current().speculation {
            engine.shutdown().await;
        }
        futures::future::join_all(sources.upstreams.iter().map(|server| server.close())).await;
    }

    /// Start `name` as a task of its upstream server (MCP 2025-11-25's
    /// task-augmented `tools/call`, `task` its `params.task`): checked as
    /// [`Toolhost::call_tool`] checks a call (the pin, the policy, every
    /// step up to execute) and audited as one; the server, for the task's
    /// later requests, and its `CreateTaskResult` through the gate.
    pub async fn start_task(
        &self,
        name: &str,
        args: Value,
        task: Value,
        ctx: &CallControl,
    ) -> Result<(Arc<Upstream>, Value), CallError> {
        let (mut call, mut noted) = (self.begin(name, &args).await, Noted::default());
        let result = match call.held.take() {
            Some(held) => Err(held),
            None => {
                let policy = call.policy.as_ref();
                super::call::start_task(&call.catalog, name, args, task, ctx, policy, &mut noted).await
            }
        };
        let backend = result
            .as_ref()
            .ok()
            .map(|(server, _)| ServedBy::Upstream(server.config.name.clone()));
        let outcome = result
            .as_ref()
            .map(|_| CallOutput::default())
            .map_err(Clone::clone);
        call.finish(name, ctx, backend, &outcome, &noted);
        result.map_err(|error| CallError {
            tool: name.to_owned(),
            plugin: None,
            error,
        })
    }

    /// A call of `name` as it starts: the catalog and the policy it runs
    /// under, whether the pin holds the tool back, and what its audit
    /// record needs from before the call takes its arguments.
    async fn begin(&self, name: &str, args: &Value) -> Begun<'_> {
        let started = (SystemTime::now(), Instant::now());
        let mut catalog = self.shared.current();
        // A server still starting may serve it: the call waits for it, as
        // it would for the server connected directly.
        if !catalog.core.tools.contains_key(name) && self.gateway.until_joined(name).await {
            catalog = self.shared.current();
        }
        Begun {
            held: self.held(&catalog, name),
            catalog,
            policy: self.policy(),
            audited: self
                .shared
                .options
                .audit
                .as_deref()
                .map(|audit| (audit, shape_of(args))),
            started,
        }
    }

    /// Why `name` is not callable, if the pin holds it back: a tool the pin
    /// holds back is not served, so not callable either.
    fn held(&self, catalog: &Arc<Generation>, name: &str) -> Option<ToolError> {
        let settings = self.shared.options.pin.as_ref()?;
        let held = catalog.core.tools.contains_key(name)
            && !self
                .shared
                .pinned
                .served(catalog.clone(), settings)
                .tools
                .iter()
                .any(|t| t.name == name);
        held.then(|| {
            ToolError::NotFound(format!(
                "Tool {} is held back by the pin: see `toolhost pin --review`",
                crate::bounds::label(name)
            ))
        })
    }

    /// Run one call of the tool `name` with `args` (a JSON object, or null
    /// for none) through the pipeline, on the catalog as it is when the
    /// call starts; with an audit ([`ToolhostBuilder::audit`]), the call is
    /// recorded under its caller ([`CallControl::with_caller`]). Under a
    /// policy ([`Toolhost::replace_policy`]), a call it denies is `Err`,
    /// naming the rule.
    ///
    /// A tool that ran and failed is `Ok` with [`CallOutput::is_error`]
    /// set: the model reads it as any result. `Err` is a call that got no
    /// result: an unknown tool, arguments that do not fit its schema, a
    /// call a plugin's hook refused, a cancelled call.
    pub async fn call_tool(
        &self,
        name: &str,
        args: Value,
        ctx: &CallControl,
    ) -> Result<CallOutput, CallError> {
        let (mut call, mut noted) = (self.begin(name, &args).await, Noted::default());
        let result = match call.held.take() {
            Some(held) => Err(held),
            None => {
                let policy = call.policy.as_ref();
                super::call::call(&call.catalog, name, args, ctx, policy, &mut noted).await
            }
        };
        let backend = call
            .catalog
            .core
            .tools
            .get(name)
            .map(|bound| match &bound.backend {
                Backend::Native(_) => ServedBy::Native,
                Backend::Plugin(plugin, _) => ServedBy::Plugin(plugin.name.to_string()),
                Backend::Upstream(server, _) => ServedBy::Upstream(server.config.name.clone()),
            });
        // A server not reached yet lists nothing: its tool is unknown
        // until it answers, and the caller is told so, not only that.
        let result = match result {
            Err(ToolError::NotFound(message)) if backend.is_none() => {
                Err(ToolError::NotFound(match self.gateway.unreached_owner_of(name) {
                    Some((server, "")) => format!(
                        "{message}: upstream `{server}` has not answered yet, and its tools are not known until it does; it is tried again"
                    ),
                    Some((server, prefix)) => format!(
                        "{message}: upstream `{server}`, whose tools are named `{prefix}…`, has not answered yet; it is tried again"
                    ),
                    None => message,
                }))
            }
            other => other,
        };
        let catalog = call.finish(name, ctx, backend, &result, &noted);
        result.map_err(|error| CallError {
            tool: name.to_owned(),
            plugin: catalog.core.plugin(name).map(|p| p.name.clone()),
            error,
        })
    }

    /// Who may call which tool, as of now (`None`: every call is allowed).
    pub fn policy(&self) -> Option<Arc<Policy>> {
        self.shared
            .policy
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Decide calls by `policy` from now on (`None`: allow every call).
    /// Calls already decided run on; the MCP clients are told the tool
    /// list changed, since what each caller is shown may have.
    pub fn replace_policy(&self, policy: Option<Policy>) {
        *self.shared.policy.write().unwrap_or_else(PoisonError::into_inner) = policy.map(Arc::new);
        self.shared.rebuilt.send_modify(|n| *n += 1);
    }

    /// Whether `tool` is shown to `caller`: with no policy, every tool;
    /// under one, a tool some call of which it could allow (a rule on the
    /// arguments is decided per call). A tool not served is not.
    pub fn lists(&self, caller: &Caller, tool: &str) -> bool {
        let Some(policy) = self.policy() else {
            return true;
        };
        let catalog = self.shared.current();
        catalog
            .core
            .facts(tool)
            .is_some_and(|facts| policy.lists(caller, &facts))
    }

    /// The tool plugin serving `name`, if one does and implements `hook`
    /// for it (the renderers: `render-call`, `render-result`).
    pub fn renderer(&self, name: &str, hook: Hooks) -> Option<Arc<Plugin>> {
        match &self.shared.current().core.tools.get(name)?.backend {
            Backend::Plugin(plugin, hooks) if hooks.contains(hook) => Some(plugin.clone()),
            _ => None,
        }
    }

    /// The gate of the catalog as of now, for what the MCP front serves
    /// besides tools and calls (instructions, prompts, resources).
    pub(crate) fn gate(&self) -> Arc<crate::gate::Gate> {
        self.shared.current().core.gate.clone()
    }

    /// The system-prompt sections ("Available tools", "Guidelines") of the
    /// listed tools, as of now: toolhost's part of an agent's system prompt.
    /// Under a pin, a tool whose change it holds back is left out, so that
    /// its new text does not reach the model by the prompt instead.
    pub fn system_prompt(&self) -> String {
        self.prompt_where(|_| true)
    }

    /// [`Toolhost::system_prompt`] of the tools the policy lists to
    /// `caller` ([`Toolhost::lists`]): a tool hidden from their `tools/list`
    /// is not named to them by the prompt either.
    pub fn system_prompt_for(&self, caller: &Caller) -> String {
        self.prompt_where(|tool| self.lists(caller, tool))
    }

    fn prompt_where(&self, listed: impl Fn(&str) -> bool) -> String {
        let listing = self.list_tools();
        let held: BTreeSet<String> = match self.shared.options.pin {
            None => BTreeSet::new(),
            Some(_) => self.served_tools().held().map(|d| d.tool.clone()).collect(),
        };
        SystemPrompt::new(
            listing
                .tools
                .iter()
                .filter(|t| !held.contains(t.name.as_str()) && listed(&t.name)),
        )
        .render()
    }
}

impl Drop for Toolhost {
    fn drop(&mut self) {
        for follower in &self.followers {
            follower.abort();
        }
    }
}

impl Shared {
    fn current(&self) -> Arc<Generation> {
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Build the catalog again from the sources as they are now, with
    /// `plugins` in place of the current ones if given, and make it current.
    /// Calls in flight finish on the one they started with; its speculation
    /// is shut down, so nothing it cached or is prefetching is ever served
    /// from the new one. On failure nothing changes.
    async fn rebuild(&self, plugins: Option<Vec<Arc<Plugin>>>) -> Result<(), CatalogError> {
        let mut sources = self.sources.lock().await;
        let replaced = plugins.map(|p| std::mem::replace(&mut sources.plugins, p));
        let previous = self.current();
        let next = match Generation::build(&sources, &self.options, previous.speculation.as_deref()).await {
            Ok(next) => next,
            Err(e) => {
                if let Some(old) = replaced {
                    sources.plugins = old;
                }
                return Err(e);
            }
        };
        for line in ownership::summary(&next.core.refused) {
            tracing::error!("{line}");
        }
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(next);
        self.rebuilt.send_modify(|n| *n += 1);
        if let Some(cluster) = &self.options.speculation.cluster {
            cluster.catalog_changed().await;
        }
        if let Some(engine) = &previous.speculation {
            engine.shutdown().await;
        }
        Ok(())
    }
}

/// Rebuild the catalog each time `server` says its tool list changed, or
/// is reached having not been at start (or not listed its tools then), or
/// ends a start the build stopped waiting for, until its session or the
/// host ends. A failed re-list or
/// rebuild keeps the catalog as it was, with the error logged.
async fn follow(shared: Weak<Shared>, server: Arc<Upstream>) {
    let mut changes = server.subscribe();
    if let Some(start) = server.take_late_start() {
        let name = &server.config.name;
        match start.await {
            // Listed by the start itself: the catalog, built without
            // them, is rebuilt whether or not a list change came meanwhile.
            Ok(Ok(())) => {
                server.other_lists_changed();
                let Some(shared) = shared.upgrade() else { return };
                match shared.rebuild(None).await {
                    Ok(()) => tracing::info!("upstream `{name}` answered: its tools are served"),
                    Err(e) => {
                        tracing::error!("upstream `{name}` answered, but {e}: its tools are not served")
                    }
                }
            }
            Ok(Err(e)) => tracing::error!("{e}; tried again while toolhost runs"),
            Err(e) => tracing::error!(
                "upstream `{name}`: its start ended with {e}; tried again while toolhost runs"
            ),
        }
        server.joined();
    }
    server.reach().await;
    if !server.listed() {
        changes.mark_changed();
    }
    let mut backoff = Backoff::default();
    // Failed listings in a row: the first is an error in the log, the
    // tries after it (up to every 30 s, for as long as it fails) are not.
    let mut failing = 0u32;
    while server.until_relist(&mut changes, &mut backoff).await {
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let name = &server.config.name;
        match server.refresh().await {
            Ok(true) => {}
            // Nothing to rebuild, nor to tell the clients.
            Ok(false) => {
                tracing::info!("upstream `{name}` listed the same tools again: catalog kept");
                failing = 0;
                continue;
            }
            Err(e) => {
                failing += 1;
                let again = if server.listed() {
                    "when it says they changed".to_owned()
                } else {
                    format!(
                        "in {} s, then less often while it fails",
                        backoff.next().as_secs()
                    )
                };
                if failing == 1 {
                    tracing::error!("{e}: serving its previous tools; listed again {again}");
                } else {
                    tracing::debug!(
                        "{e}: serving its previous tools ({failing} failures in a row); listed again {again}"
                    );
                }
                continue;
            }
        }
        if failing > 0 {
            let tries = if failing == 1 { "try" } else { "tries" };
            tracing::info!("upstream `{name}` listed its tools after {failing} failed {tries}");
            failing = 0;
        }
        match shared.rebuild(None).await {
            Ok(()) => tracing::info!("upstream `{name}` changed its tools: catalog rebuilt"),
            Err(e) => {
                tracing::error!("upstream `{name}` changed its tools, but {e}: serving the previous catalog")
            }
        }
    }
}

/// A call begun by [`Toolhost::begin`], to be recorded by
/// [`Begun::finish`] once it ends.
struct Begun<'a> {
    catalog: Arc<Generation>,
    policy: Option<Arc<Policy>>,
    held: Option<ToolError>,
    audited: Option<(&'a Audit, Value)>,
    started: (SystemTime, Instant),
}

impl Begun<'_> {
    /// Record the call's `outcome` in the audit, if there is one; the
    /// catalog it ran on, for its error.
    fn finish(
        self,
        name: &str,
        ctx: &CallControl,
        backend: Option<ServedBy>,
        outcome: &Result<CallOutput, ToolError>,
        noted: &Noted,
    ) -> Arc<Generation> {
        if let Some((audit, shape)) = self.audited {
            let timing = (self.started.0, self.started.1.elapsed());
            let record = Record::new(&ctx.caller, name, shape, backend, outcome, timing, noted);
            audit.append(&record, &self.catalog.core.gate);
        }
        self.catalog
    }
}
