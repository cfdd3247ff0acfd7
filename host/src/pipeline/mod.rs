//! The call pipeline and [`Toolhost`], the library API
//! over it.
//!
//! Tools come from four sources merged into one catalog, each tool with an
//! optional category: native tools, tool plugins' tools, upstream MCP
//! servers' tools, and base-catalog tools bound by configuration to a
//! backend (an upstream server or a tool plugin; an unbound catalog tool is
//! not listed). The listing is enriched when the `Toolhost` is built; a
//! tool hidden by the enrichers cannot be called either.
//!
//! The catalog is rebuilt (gathered and enriched again, value models
//! layered again) when an upstream server sends `tools/list_changed` or the
//! plugins are replaced ([`Toolhost::replace_plugins`], used by
//! `toolhost serve --watch`), and swapped in whole: each call reads the
//! current catalog once and runs to its end on it, so a call in flight when
//! its tool disappears still completes (an upstream server answers for its
//! own tools, a replaced plugin lives until its last call ends). Speculation
//! is per catalog: the rebuilt one starts with an empty cache, and the
//! old one's prefetches are cancelled and its results never served, so
//! nothing computed against the old tool set reaches a call; what it
//! learned (fan-out) and counted carries over. A rebuild that fails (a
//! `[bind]` whose backend is gone) keeps the previous catalog and logs
//! why. [`Toolhost::subscribe`] marks each rebuild for the MCP front.
//!
//! Two sources naming one tool never fail a build: the `ownership` rule
//! gives the name to one (native and base-catalog names are reserved,
//! otherwise the first registered wins) and the other's tool is refused,
//! with a [`Refusal`] kept beside the catalog ([`Toolhost::refusals`]).
//!
//! A call runs: resolve → prepare-arguments (tool plugins) → coerce and
//! validate against the enriched schema → before-call → the enrichers'
//! transform-args (categorised tools only) → execute → after-call. Errors
//! before execute are returned as `Err` and skip after-call; a failed
//! execution is a result with `is_error` that after-call may still rewrite.
//! Cancellation ends a native or upstream call at once; a plugin is told
//! through its call context and returns `cancelled` at its next check.
//! Plugin failures in prepare-arguments, before-call and transform-args fail
//! closed (naming the plugin); a failed after-call is logged and skipped.
//!
//! With speculation on, execute is preceded by a look in the prefetch cache
//! (keyed by the final arguments, so a prefetch that went through the same
//! steps is found) and followed, in the background, by planning the call's
//! follow-ups from its structured result; a call that may change anything
//! invalidates before and after it runs. A served result still goes through
//! after-call, so the agent sees what a direct call would have given.
//!
//! A successful result of a tool that declares an output schema (native
//! tools, upstream tools whose server gives one) is checked against it
//! after after-call: one that does not match, or has no structured block,
//! becomes an error result naming the fields, since an MCP client rejects
//! it anyway.
//!
//! A base-catalog tool bound to a tool plugin that also lists a tool of that
//! name is served with the catalog's schema and the plugin's hooks (one
//! tool, not a duplicate).
//!
//! Not here: the MCP protocol (`mcp`), the speculation machinery
//! (`speculation`, reached through `prefetch`), the tools themselves.

mod prefetch;
mod upstream;
mod validate;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, PoisonError, RwLock, Weak};

use serde_json::{Map, Value};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::catalog::{Annotations, ToolMeta, ToolSpec, base_catalog, base_tool};
use crate::enrich::{Enrichers, Hidden, Listing, Owner};
use crate::gateway::Gateway;
pub use crate::output::{CallOutput, ToolError};
use crate::ownership::{self, Binding, Claim, Names, Refusal};
use crate::plugin::{BeforeCallDecision, Hooks, Plugin, ProgressFn, ToolDefinition};
use crate::prompt::SystemPrompt;
use crate::speculation::{self, Engine, Served};
use crate::tools::NativeTools;
use crate::value_model::{UnsafeSpeculation, ValueModel, ValueModels};
pub use upstream::{Event, Transport, Upstream, UpstreamConfig, UpstreamError};

/// One call's identity, cancellation and progress sink.
#[derive(Clone)]
pub struct CallContext {
    pub call_id: String,
    pub cancel: CancellationToken,
    pub progress: Option<ProgressFn>,
}

impl CallContext {
    pub fn new(call_id: impl Into<String>) -> Self {
        Self {
            call_id: call_id.into(),
            cancel: CancellationToken::new(),
            progress: None,
        }
    }

    pub fn with_progress(mut self, progress: ProgressFn) -> Self {
        self.progress = Some(progress);
        self
    }
}

/// Where the tools come from.
#[derive(Default)]
pub struct Sources {
    pub native: Option<Arc<NativeTools>>,
    /// Loaded plugins in registration order: enrichers and tool plugins.
    pub plugins: Vec<Arc<Plugin>>,
    pub upstreams: Vec<Arc<Upstream>>,
    /// `[bind]`: base-catalog tool name → backend name (a tool plugin or an
    /// upstream). Full plugins bind the catalog tools they list on top of
    /// these (`ownership::bindings`).
    pub bindings: BTreeMap<String, String>,
}

/// What the configuration adds to the sources.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The user's value-model overrides, layered last.
    pub value_models: BTreeMap<String, ValueModel>,
    pub speculation: speculation::Settings,
}

/// A catalog that cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("binding of `{tool}`: no base-catalog tool has that name")]
    UnknownCatalogTool { tool: String },
    #[error("binding of `{tool}`: `{backend}` is neither a loaded tool plugin nor an upstream server")]
    UnknownBackend { tool: String, backend: String },
    #[error(transparent)]
    UnsafeSpeculation(#[from] UnsafeSpeculation),
}

#[derive(Clone)]
enum Backend {
    Native(Arc<NativeTools>),
    Plugin(Arc<Plugin>, Hooks),
    /// The server and the tool's name there.
    Upstream(Arc<Upstream>, String),
}

struct Bound {
    category: Option<String>,
    /// The enriched input schema arguments are validated against.
    schema: Value,
    /// What a successful call's structured result is checked against.
    output_schema: Option<Value>,
    backend: Backend,
}

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
}

/// One build of the catalog, with the speculation that runs on it.
struct Generation {
    core: Arc<Core>,
    speculation: Option<Arc<Engine<Core>>>,
}

/// The catalog and every step of a call but speculation; what prefetches
/// run through.
struct Core {
    enrichers: Enrichers,
    listing: Arc<Listing>,
    tools: HashMap<String, Bound>,
    models: Arc<ValueModels>,
    settings: speculation::Settings,
    /// Tools left out because another source owns their name.
    refused: Vec<Refusal>,
    /// The files read that speculation follows, to read them again when
    /// they change.
    changes: Option<crate::tools::Changes>,
}

impl Toolhost {
    /// Merge the sources and enrich the listing, with default options.
    pub async fn new(sources: Sources) -> Result<Self, BuildError> {
        Self::with_options(sources, Options::default()).await
    }

    /// A host serving the native tools alone, with `speculation`: the
    /// smallest embedding (and what the speculation tests and the replay of
    /// agent trajectories run).
    pub async fn native(native: NativeTools, speculation: speculation::Settings) -> Result<Self, BuildError> {
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

    /// Merge the sources, enrich the listing, layer the value models and
    /// start speculation if it is on. Must run inside a Tokio runtime: it
    /// starts following the upstream servers' tool lists.
    pub async fn with_options(sources: Sources, options: Options) -> Result<Self, BuildError> {
        let generation = Generation::build(&sources, &options, None).await?;
        let upstreams = sources.upstreams.clone();
        let gateway = Gateway::new(upstreams.clone());
        let shared = Arc::new(Shared {
            sources: tokio::sync::Mutex::new(sources),
            options,
            current: RwLock::new(Arc::new(generation)),
            rebuilt: watch::Sender::new(0),
        });
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

    /// The upstream servers' features besides tools.
    pub fn gateway(&self) -> &Gateway {
        &self.gateway
    }

    /// The enriched tool list, as of now, and every tool known but not
    /// served with why (hidden by a failed enrichment, a category no
    /// enricher claims, a base-catalog tool with no backend).
    pub fn list_tools(&self) -> Arc<Listing> {
        self.shared.current().core.listing.clone()
    }

    /// The tools left out of the catalog because another source owns their
    /// name (see `ownership`), as of now.
    pub fn refusals(&self) -> Vec<Refusal> {
        self.shared.current().core.refused.clone()
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
    pub async fn replace_plugins(&self, plugins: Vec<Arc<Plugin>>) -> Result<(), BuildError> {
        self.shared.rebuild(Some(plugins)).await
    }

    /// Marks a change each time the catalog is rebuilt (an upstream
    /// server's tool list changed, the plugins were replaced); a client
    /// should list the tools again.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.shared.rebuilt.subscribe()
    }

    /// What speculation has done so far, if it is on.
    pub fn stats(&self) -> Option<speculation::Snapshot> {
        self.shared.current().speculation.as_ref().map(|e| e.stats())
    }

    /// Wait until no follow-up is being planned or prefetched.
    pub async fn settle(&self) {
        if let Some(engine) = &self.shared.current().speculation {
            engine.idle().await;
        }
    }

    /// Stop following the upstream servers and cancel every prefetch in
    /// flight.
    pub async fn shutdown(&self) {
        for follower in &self.followers {
            follower.abort();
        }
        let _no_rebuild = self.shared.sources.lock().await;
        if let Some(engine) = &self.shared.current().speculation {
            engine.shutdown().await;
        }
    }

    /// Run one call through the pipeline.
    pub async fn call_tool(
        &self,
        name: &str,
        args: Value,
        ctx: &CallContext,
    ) -> Result<CallOutput, ToolError> {
        let generation = self.shared.current();
        let (bound, args) = generation.core.prepare(name, args).await?;
        if ctx.cancel.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        let engine = generation.speculation.as_ref();
        if let Some(engine) = engine {
            engine.invalidate_for(name).await;
        }
        let served = match engine {
            Some(engine) => tokio::select! {
                biased;
                _ = ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
                served = engine.serve(name, &args) => served,
            },
            None => Served::Run,
        };
        let ran = match (served, engine) {
            (Served::Prefetched(answer), _) => Ok(answer),
            (Served::Run, Some(engine)) if engine.keeps(name) => {
                prefetch::run_kept(engine, &bound.backend, name, args, ctx).await
            }
            (Served::Run, _) => execute(&bound.backend, name, args, ctx).await,
        };
        let mut result = match ran {
            Ok(result) => result,
            Err(ToolError::Cancelled) => return Err(ToolError::Cancelled),
            Err(e) => CallOutput::error(error_text(&e)),
        };
        if let Some(engine) = engine {
            engine.invalidate_for(name).await;
            if !result.is_error
                && engine.follows_up(name)
                && let Some(structured) = &result.structured_content
            {
                engine.plan_after(name, structured.clone());
            }
        }
        if let Backend::Plugin(plugin, hooks) = &bound.backend
            && hooks.contains(Hooks::AFTER_CALL)
        {
            match plugin.after_call(name, &result, result.is_error).await {
                Ok(Some(over)) => {
                    // Each field set replaces the old one whole (no merge).
                    if let Some((content, structured)) = over.content {
                        result.content = content;
                        result.structured_content = structured;
                    }
                    if let Some(details) = over.details {
                        result.details = Some(details);
                    }
                    if let Some(flag) = over.is_error {
                        result.is_error = flag;
                    }
                }
                Ok(None) => {}
                Err(e) => tracing::warn!(tool = name, "after-call skipped: {e}"),
            }
        }
        if !result.is_error
            && let Some(schema) = &bound.output_schema
            && let Err(message) = validate::check_output(name, schema, result.structured_content.as_ref())
        {
            tracing::warn!(tool = name, "{message}");
            result = CallOutput {
                details: result.details,
                ..CallOutput::error(message)
            };
        }
        Ok(result)
    }

    /// The tool plugin serving `name`, if one does and implements `hook`
    /// for it (the renderers: `render-call`, `render-result`).
    pub fn renderer(&self, name: &str, hook: Hooks) -> Option<Arc<Plugin>> {
        match &self.shared.current().core.tools.get(name)?.backend {
            Backend::Plugin(plugin, hooks) if hooks.contains(hook) => Some(plugin.clone()),
            _ => None,
        }
    }

    /// The system-prompt sections ("Available tools", "Guidelines") of the
    /// listed tools, as of now: toolhost's part of an agent's system prompt.
    pub fn system_prompt(&self) -> String {
        SystemPrompt::new(&self.list_tools().tools).render()
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
    async fn rebuild(&self, plugins: Option<Vec<Arc<Plugin>>>) -> Result<(), BuildError> {
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
        for refusal in &next.core.refused {
            tracing::error!("{refusal}");
        }
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(next);
        self.rebuilt.send_modify(|n| *n += 1);
        if let Some(engine) = &previous.speculation {
            engine.shutdown().await;
        }
        Ok(())
    }
}

/// Rebuild the catalog each time `server` says its tool list changed, until
/// its session or the host ends. A failed re-list or rebuild keeps the
/// catalog as it was, with the error logged.
async fn follow(shared: Weak<Shared>, server: Arc<Upstream>) {
    let mut changes = server.subscribe();
    while changes.changed().await.is_ok() {
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let name = &server.config.name;
        if let Err(e) = server.refresh().await {
            tracing::error!("{e}: serving its previous tools");
            continue;
        }
        match shared.rebuild(None).await {
            Ok(()) => tracing::info!("upstream `{name}` changed its tools: catalog rebuilt"),
            Err(e) => {
                tracing::error!("upstream `{name}` changed its tools, but {e}: serving the previous catalog")
            }
        }
    }
}

impl Generation {
    /// Merge the sources, enrich the listing and layer the value models; a
    /// rebuild's speculation carries over what the previous one learned.
    async fn build(
        sources: &Sources,
        options: &Options,
        previous: Option<&Engine<Core>>,
    ) -> Result<Self, BuildError> {
        let (specs, refused) = gather(sources)?;
        let enrichers = Enrichers::new(&sources.plugins);
        let only_specs: Vec<ToolSpec> = specs.iter().map(|(s, ..)| s.clone()).collect();
        let mut listing = enrichers.list(&only_specs).await;
        listing.hidden.extend(unserved(&only_specs, &enrichers));
        let mut backends: HashMap<String, (ToolSpec, Backend, Owner)> = specs
            .into_iter()
            .map(|(s, b, o)| (s.name.clone(), (s, b, o)))
            .collect();
        let mut listed = Vec::new();
        let mut tools = HashMap::new();
        for t in &listing.tools {
            let Some((spec, backend, owner)) = backends.remove(&t.name) else {
                continue;
            };
            let bound = Bound {
                category: spec.category.clone(),
                schema: t.schema.to_value(),
                output_schema: spec.meta.output_schema.clone(),
                backend,
            };
            listed.push((spec, owner));
            tools.insert(t.name.clone(), bound);
        }
        let mut models = enrichers.value_models(listed.iter().map(|(s, o)| (s, o))).await;
        models.apply_overrides(&options.value_models)?;
        // The hints the value models give, over the source's own.
        for tool in &mut listing.tools {
            if let Some(model) = models.get(&tool.name) {
                model.annotate(&mut tool.meta.annotations);
            }
        }
        let spec = &options.speculation;
        let watch = match &sources.native {
            Some(native) if spec.enabled && spec.native && spec.reread_changed => prefetch::watch(native),
            _ => None,
        };
        let (changes, changed) = watch.unzip();
        let core = Arc::new(Core {
            enrichers: enrichers.clone(),
            listing: Arc::new(listing),
            tools,
            models: Arc::new(models),
            settings: options.speculation.clone(),
            refused,
            changes,
        });
        let speculation = options.speculation.enabled.then(|| {
            Arc::new(match previous {
                Some(engine) => engine.renew(core.clone(), core.models.clone()),
                None => Engine::new(
                    core.clone(),
                    core.models.clone(),
                    enrichers,
                    options.speculation.clone(),
                )
                .with_cluster(options.speculation.cluster.clone()),
            })
        });
        if let (Some(engine), Some(changed)) = (&speculation, changed) {
            prefetch::refresh(Arc::downgrade(engine), changed);
        }
        Ok(Self { core, speculation })
    }
}

/// The tools known but not served, with why: a categorised tool no
/// enricher claims, a base-catalog tool with no backend bound to it. (A
/// tool whose closed enrichment failed is hidden by the enrichers.)
fn unserved(specs: &[ToolSpec], enrichers: &Enrichers) -> Vec<Hidden> {
    let unclaimed = specs.iter().filter(|s| !enrichers.lists(s)).map(|s| Hidden {
        name: s.name.clone(),
        reason: format!(
            "no loaded enricher claims its category `{}`",
            s.category.as_deref().unwrap_or_default()
        ),
    });
    let unbound = base_catalog()
        .iter()
        .filter(|t| !specs.iter().any(|s| s.name == t.name))
        .map(|t| Hidden {
            name: t.name.clone(),
            reason: format!(
                "a base-catalog tool with no backend: bind it to an upstream server or a tool plugin with `[bind] {} = \"NAME\"`",
                t.name
            ),
        });
    unclaimed.chain(unbound).collect()
}

/// What a tool plugin says of a tool it serves beside its schema: the
/// definition's label, snippet and guidelines (if it defines the tool),
/// and whether it can reach the network (only through its HTTP grant).
fn plugin_meta(plugin: &Plugin, definition: Option<&ToolDefinition>) -> ToolMeta {
    let mut meta = ToolMeta {
        annotations: Annotations {
            open_world_hint: Some(!plugin.http_hosts().is_empty()),
            ..Annotations::default()
        },
        ..ToolMeta::default()
    };
    if let Some(t) = definition {
        meta.title = Some(t.label.trim().to_owned()).filter(|l| !l.is_empty());
        meta.snippet.clone_from(&t.snippet);
        meta.guidelines.clone_from(&t.guidelines);
    }
    meta
}

/// Tools with the backend that serves each and the owner whose word sets
/// its side effect.
type Specs = Vec<(ToolSpec, Backend, Owner)>;

/// Every source's tools with their backends and owners, each name given to
/// one source by the ownership rule; the tools refused are returned beside
/// them. A base-catalog tool is the host's, whatever backend serves it.
fn gather(sources: &Sources) -> Result<(Specs, Vec<Refusal>), BuildError> {
    let mut specs: Specs = Vec::new();
    if let Some(native) = &sources.native {
        specs.extend(
            native
                .specs()
                .into_iter()
                .map(|s| (s, Backend::Native(native.clone()), Owner::Host)),
        );
    }
    // A bound catalog tool of a plugin's (or a server's) tool name takes
    // that tool's place: the claim says `Bound` and the binding serves it.
    let bindings = ownership::bindings(&sources.bindings, &sources.plugins);
    let mut names = Names::new(&bindings);
    for (plugin, t) in names.plugin_tools(&sources.plugins) {
        let spec = ToolSpec {
            name: t.name.clone(),
            description: t.description.clone(),
            category: t.category.clone(),
            // The loader checked the schema is a JSON object.
            input_schema: serde_json::from_str(&t.parameters_schema).unwrap_or(Value::Null),
            meta: plugin_meta(plugin, Some(t)),
        };
        specs.push((
            spec,
            Backend::Plugin(plugin.clone(), t.hooks),
            Owner::Plugin(plugin.clone()),
        ));
    }
    for server in &sources.upstreams {
        let (name, source) = (&server.config.name, format!("upstream `{}`", server.config.name));
        for (spec, remote) in server.specs() {
            if names.claim(&spec.name, name, &source) == Claim::Serve {
                let trusted = server.config.trust_annotations;
                let annotated = trusted.then(|| ValueModel::from_annotations(&spec.meta.annotations));
                let owner = Owner::Upstream(server.config.name.clone(), annotated.flatten());
                specs.push((spec, Backend::Upstream(server.clone(), remote), owner));
            }
        }
    }
    for (tool, Binding { backend, .. }) in &bindings {
        let spec = base_tool(tool).ok_or_else(|| BuildError::UnknownCatalogTool { tool: tool.clone() })?;
        let plugin = sources
            .plugins
            .iter()
            .find(|p| p.worlds.tool && &*p.name == backend.as_str());
        let (bound, meta) = match (
            plugin,
            sources.upstreams.iter().find(|u| &u.config.name == backend),
        ) {
            (Some(p), _) => {
                let definition = p.tools.iter().find(|t| &t.name == tool);
                let hooks = definition.map_or(Hooks::empty(), |t| t.hooks);
                (Backend::Plugin(p.clone(), hooks), plugin_meta(p, definition))
            }
            (None, Some(u)) => (Backend::Upstream(u.clone(), tool.clone()), ToolMeta::default()),
            (None, None) => {
                return Err(BuildError::UnknownBackend {
                    tool: tool.clone(),
                    backend: backend.clone(),
                });
            }
        };
        specs.push((ToolSpec { meta, ..spec.clone() }, bound, Owner::Host));
    }
    Ok((specs, names.into_refused()))
}

impl Core {
    /// A call up to execution: resolve, prepare-arguments, validate,
    /// before-call, transform-args.
    async fn prepare(&self, name: &str, args: Value) -> Result<(&Bound, Map<String, Value>), ToolError> {
        let bound = self
            .tools
            .get(name)
            .ok_or_else(|| ToolError::NotFound(format!("Tool {name} not found")))?;
        let mut args = match args {
            Value::Object(map) => map,
            Value::Null => Map::new(),
            other => {
                return Err(ToolError::InvalidArgs(format!(
                    "the arguments of tool \"{name}\" must be a JSON object, received {other}"
                )));
            }
        };
        let hooks = match &bound.backend {
            Backend::Plugin(_, hooks) => *hooks,
            _ => Hooks::empty(),
        };
        if let Backend::Plugin(plugin, _) = &bound.backend
            && hooks.contains(Hooks::PREPARE_ARGUMENTS)
        {
            args = plugin.prepare_arguments(name, args).await.map_err(|e| match e {
                crate::plugin::PluginError::Rejected { message, .. } => ToolError::InvalidArgs(message),
                other => ToolError::Failed(other.to_string()),
            })?;
        }
        validate::check(name, &bound.schema, &mut args).map_err(ToolError::InvalidArgs)?;
        if let Backend::Plugin(plugin, _) = &bound.backend
            && hooks.contains(Hooks::BEFORE_CALL)
        {
            match plugin.before_call(name, &args).await {
                Ok(BeforeCallDecision::Allow) => {}
                Ok(BeforeCallDecision::Block(reason)) if reason.is_empty() => {
                    return Err(ToolError::Failed(format!("Tool {name} execution was blocked")));
                }
                Ok(BeforeCallDecision::Block(reason)) => return Err(ToolError::Failed(reason)),
                Err(e) => return Err(ToolError::Failed(e.to_string())),
            }
        }
        if bound.category.is_some() {
            args = self
                .enrichers
                .transform_args(name, bound.category.as_deref(), args)
                .await
                .map_err(|e| ToolError::Failed(e.to_string()))?;
        }
        Ok((bound, args))
    }
}

/// A tool error as the model reads it.
pub fn error_text(e: &ToolError) -> String {
    e.to_string()
}

async fn execute(
    backend: &Backend,
    name: &str,
    args: Map<String, Value>,
    ctx: &CallContext,
) -> Result<CallOutput, ToolError> {
    match backend {
        Backend::Native(native) => {
            tokio::select! {
                biased;
                _ = ctx.cancel.cancelled() => Err(ToolError::Cancelled),
                r = native.execute(name, &args) => r,
            }
        }
        Backend::Upstream(server, remote) => {
            tokio::select! {
                biased;
                _ = ctx.cancel.cancelled() => Err(ToolError::Cancelled),
                r = server.call(remote, args) => r,
            }
        }
        Backend::Plugin(plugin, _) => {
            // A wasm call is not dropped half-way (the instance would be
            // lost); the plugin polls this flag through its call context.
            let flag = Arc::new(AtomicBool::new(false));
            let watcher = {
                let (flag, token) = (flag.clone(), ctx.cancel.clone());
                tokio::spawn(async move {
                    token.cancelled().await;
                    flag.store(true, Ordering::SeqCst);
                })
            };
            let answer = plugin
                .execute(name, &args, ctx.call_id.clone(), flag, ctx.progress.clone())
                .await;
            watcher.abort();
            answer.unwrap_or_else(|e| Err(ToolError::Failed(e.to_string())))
        }
    }
}
