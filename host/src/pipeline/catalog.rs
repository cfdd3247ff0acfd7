//! One build of the catalog ([`Generation`]): every source's tools gathered,
//! each name given to one source, the listing enriched, the value models
//! layered, and the speculation that runs on this build.
//!
//! Two sources naming one tool never fail a build: the `ownership` rule
//! gives the name to one (native names are reserved, and base-catalog names
//! are the catalog's when it is provided; otherwise the first registered
//! wins) and the other's tool is refused, with a [`Refusal`] kept beside
//! the catalog (`Toolhost::refusals`). An upstream server's tool named like
//! a catalog tool no backend and enricher provide is served as the
//! server's own, and the catalog tool is then not built at all.
//!
//! A base-catalog tool bound to a tool plugin that also lists a tool of that
//! name is served with the catalog's schema and the plugin's hooks (one
//! tool, not a duplicate).
//!
//! Speculation is per build: a rebuilt catalog starts with an empty cache,
//! and carries over only what the previous one learned (fan-out) and
//! counted. The build also starts the watch on the files a native read
//! keeps whole (`tools::read_cache`) and the task that reads them again when
//! they change ([`Engine::changed`]).
//!
//! This file owns the build's types and all their impls: the catalog's
//! own questions ([`Core`]: which plugin serves a tool, the most a result
//! may hold) and running a tool on its backend ([`Backend::execute`]).
//! Not here: when a build happens (`toolhost`), the steps of a call
//! (`call`), the catalog as speculation's target (`prefetch`). It imports
//! neither.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

use serde_json::{Map, Value};
use tokio::sync::mpsc;

use super::audit::Audit;
use super::caller::Caller;
use super::control::CallControl;
use super::policy::{Origin, Policy, ToolFacts};
use crate::catalog::{base_catalog, base_tool};
use crate::credentials::{CredentialError, Credentials, Lent, Resolved};
use crate::enrich::{EnrichedTool, Enrichers, Hidden, Listing, Owner};
use crate::gate::Gate;
use crate::output::{CallOutput, ToolError};
use crate::ownership::{self, Binding, Claim, Names, Refusal};
use crate::pin;
use crate::plugin::{Hooks, Plugin, ToolDefinition};
use crate::speculation::{self, Engine};
use crate::tool::{ToolAnnotations, ToolMeta, ToolSpec};
use crate::tools::facts::WHOLE_FILE;
use crate::tools::{NativeTools, read_cache};
use crate::upstream::Upstream;
use crate::value_model::{SideEffect, UnsafeSpeculation, ValueModel, ValueModels};

/// Where the tools come from, loaded and reached already: what
/// [`Toolhost::with_options`](super::Toolhost::with_options) merges.
/// [`Toolhost::builder`](super::Toolhost::builder) loads and reaches them.
#[derive(Default)]
pub struct Sources {
    /// The native tools, if served.
    pub native: Option<Arc<NativeTools>>,
    /// Loaded plugins in registration order: enrichers and tool plugins.
    pub plugins: Vec<Arc<Plugin>>,
    /// The upstream MCP servers, connected.
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
    /// Speculative prefetch.
    pub speculation: speculation::Settings,
    /// Where each call is recorded, if anywhere.
    pub audit: Option<Arc<Audit>>,
    /// Who may call which tool, at start (`Toolhost::replace_policy`
    /// replaces it); `None` allows every call.
    pub policy: Option<Arc<Policy>>,
    /// The pinned tool list, if one is kept.
    pub pin: Option<pin::Settings>,
    /// Where callers' own credentials come from, if any plugin's secret
    /// is each caller's own.
    pub credentials: Option<Arc<Credentials>>,
}

/// A catalog that cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    /// A binding names a tool the base catalog does not have.
    #[error("binding of `{tool}`: no base-catalog tool has that name")]
    UnknownCatalogTool {
        /// The tool the binding names.
        tool: String,
    },
    /// A binding names a backend that is neither a loaded tool plugin nor
    /// a connected upstream server.
    #[error("binding of `{tool}`: `{backend}` is neither a loaded tool plugin nor an upstream server")]
    UnknownBackend {
        /// The tool bound.
        tool: String,
        /// The backend it is bound to.
        backend: String,
    },
    /// A value model lets speculation call a tool that may change things.
    #[error(transparent)]
    UnsafeSpeculation(#[from] UnsafeSpeculation),
    /// A plugin's secret is each caller's own, and nothing configured
    /// resolves it.
    #[error(transparent)]
    Credentials(#[from] CredentialError),
}

#[derive(Clone)]
pub(super) enum Backend {
    Native(Arc<NativeTools>),
    Plugin(Arc<Plugin>, Hooks),
    /// The server and the tool's name there.
    Upstream(Arc<Upstream>, String),
}

impl Backend {
    /// Run `name` on this backend, as it is called: cancelled by `ctx`;
    /// with `lent`, the caller's own credential ([`Core::resolve`]): a
    /// plugin's requests carry its per-caller secrets, an upstream's call
    /// goes over the caller's session.
    pub(super) async fn execute(
        &self,
        name: &str,
        args: Map<String, Value>,
        ctx: &CallControl,
        lent: Option<Lent>,
    ) -> Result<CallOutput, ToolError> {
        match self {
            Backend::Native(native) => {
                tokio::select! {
                    biased;
                    _ = ctx.cancel.cancelled() => Err(ToolError::Cancelled),
                    r = async {
                        ctx.wait_turn().await;
                        native.execute(name, &args, ctx.urgency()).await
                    } => r,
                }
            }
            Backend::Upstream(server, remote) => {
                tokio::select! {
                    biased;
                    _ = ctx.cancel.cancelled() => Err(ToolError::Cancelled),
                    r = async {
                        ctx.wait_turn().await;
                        let token = lent.as_ref().and_then(Lent::upstream);
                        let trace = ctx.trace.as_ref();
                        server.call(remote, args, ctx.client.clone(), ctx.progress.clone(), token, trace).await
                    } => r,
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
                    .execute_as(
                        name,
                        &args,
                        ctx.call_id.clone(),
                        flag,
                        ctx.progress.clone(),
                        ctx.background.clone(),
                        lent.as_ref().and_then(Lent::plugin),
                        Some(ctx.cancel.clone()),
                    )
                    .await;
                watcher.abort();
                answer.unwrap_or_else(|e| Err(ToolError::Failed(e.to_string())))
            }
        }
    }
}

pub(super) struct Bound {
    pub(super) category: Option<String>,
    /// A base-catalog tool, bound to a tool plugin or an upstream server.
    pub(super) catalog: bool,
    /// The enrichers whose transform-args its calls enter, in order.
    pub(super) transformers: Vec<Arc<Plugin>>,
    /// The enriched input schema arguments are validated against.
    pub(super) schema: Value,
    /// What a successful call's structured result is checked against.
    pub(super) output_schema: Option<Value>,
    pub(super) backend: Backend,
}

/// One build of the catalog, with the speculation that runs on it.
pub(super) struct Generation {
    pub(super) core: Arc<Core>,
    pub(super) speculation: Option<Arc<Engine<Core>>>,
}

/// The catalog and every step of a call but speculation; what prefetches
/// run through.
pub(super) struct Core {
    pub(super) listing: Arc<Listing>,
    pub(super) tools: HashMap<String, Bound>,
    pub(super) models: Arc<ValueModels>,
    pub(super) settings: speculation::Settings,
    /// Tools left out because another source owns their name.
    pub(super) refused: Vec<Refusal>,
    /// The files read that speculation follows, to read them again when
    /// they change.
    pub(super) changes: Option<crate::tools::Changes>,
    /// What every result, error and definition served passes last.
    pub(super) gate: Arc<Gate>,
    /// The enrichers the listing went through, for its provenance.
    pub(super) enrichers: Enrichers,
    /// Where callers' own credentials come from.
    pub(super) credentials: Option<Arc<Credentials>>,
}

impl Core {
    /// The credentials a call of `tool` by `caller` runs with: a plugin's
    /// per-caller secrets resolved for the caller, or (every other tool,
    /// and a call for the host itself) the host's own, shared.
    pub(super) async fn resolve(
        &self,
        tool: &str,
        caller: Option<&Caller>,
    ) -> Result<Resolved, CredentialError> {
        let (Some(bound), Some(caller)) = (self.tools.get(tool), caller) else {
            return Ok(Resolved::shared());
        };
        let configured = |source: String| {
            self.credentials.as_deref().ok_or_else(|| {
                CredentialError(format!(
                    "{source} acts as each caller, and no [credentials] are configured"
                ))
            })
        };
        match &bound.backend {
            Backend::Plugin(plugin, _) if !plugin.http_grant().per_caller().is_empty() => {
                configured(format!("plugin `{}`", plugin.name))?
                    .resolve(&plugin.name, plugin.http_grant(), caller.asker())
                    .await
            }
            Backend::Upstream(server, _) => {
                let Some(per_caller) = &server.config.per_caller else {
                    return Ok(Resolved::shared());
                };
                let name = &server.config.name;
                let (token, partition) = configured(format!("upstream `{name}`"))?
                    .upstream_token(name, &per_caller.audience, caller.asker())
                    .await?;
                Ok(Resolved::upstream(token, partition))
            }
            _ => Ok(Resolved::shared()),
        }
    }

    /// The plugin that serves `tool`, if a plugin does (its own tool, or a
    /// catalog tool bound to it).
    pub(super) fn plugin(&self, tool: &str) -> Option<&Arc<Plugin>> {
        match &self.tools.get(tool)?.backend {
            Backend::Plugin(plugin, _) => Some(plugin),
            _ => None,
        }
    }

    /// The most bytes a result of `name` may hold: its plugin's output cap,
    /// or the host's for every other source.
    pub(super) fn max_output(&self, name: &str) -> usize {
        match self.tools.get(name).map(|b| &b.backend) {
            Some(Backend::Plugin(plugin, _)) => plugin.limits().max_output_bytes,
            _ => crate::bounds::MAX_RESULT_BYTES,
        }
    }

    /// The most a result of `tool` may hold when its backend answers it
    /// here, for the tools whose results replicas share (none for a native
    /// tool).
    pub(super) fn output_cap(&self, tool: &str) -> Option<usize> {
        match &self.tools.get(tool)?.backend {
            Backend::Native(_) => None,
            Backend::Plugin(plugin, _) => Some(plugin.limits().max_output_bytes),
            Backend::Upstream(server, _) => Some(server.config.max_message_bytes),
        }
    }
}

impl Core {
    /// Where a listed tool comes from, for the pin: its backend (a
    /// plugin's with its digest) and each enricher that edited it, with
    /// its digest, in the order they first did.
    /// What the policy knows of the served tool `name`.
    pub(super) fn facts<'a>(&'a self, name: &'a str) -> Option<ToolFacts<'a>> {
        let bound = self.tools.get(name)?;
        let origin = match &bound.backend {
            Backend::Native(_) => Origin::Native,
            Backend::Plugin(plugin, _) if bound.catalog => Origin::Catalog(&plugin.name),
            Backend::Upstream(server, _) if bound.catalog => Origin::Catalog(&server.config.name),
            Backend::Plugin(plugin, _) => Origin::Plugin(&plugin.name),
            Backend::Upstream(server, _) => Origin::Upstream(&server.config.name),
        };
        Some(ToolFacts {
            name,
            origin,
            category: bound.category.as_deref(),
            side_effect: self
                .models
                .get(name)
                .map_or(SideEffect::default(), |m| m.side_effect()),
        })
    }

    pub(super) fn source(&self, tool: &EnrichedTool) -> pin::Source {
        let digest = |name: &str| {
            let plugin = self.enrichers.plugins().iter().find(|p| &*p.name == name);
            format!("`{name}` {}", plugin.map_or("(unloaded)", |p| p.digest()))
        };
        let backend = match self.tools.get(&tool.name).map(|b| &b.backend) {
            Some(Backend::Native(_)) | None => "native".to_owned(),
            Some(Backend::Plugin(plugin, _)) => format!("plugin `{}` {}", plugin.name, plugin.digest()),
            Some(Backend::Upstream(server, _)) => format!("upstream `{}`", server.config.name),
        };
        let mut enrichers: Vec<String> = Vec::new();
        for change in &tool.changes {
            let named = digest(&change.plugin);
            if !enrichers.contains(&named) {
                enrichers.push(named);
            }
        }
        pin::Source { backend, enrichers }
    }
}

impl Generation {
    /// Merge the sources, enrich the listing and layer the value models; a
    /// rebuild's speculation carries over what the previous one learned.
    pub(super) async fn build(
        sources: &Sources,
        options: &Options,
        previous: Option<&Engine<Core>>,
    ) -> Result<Self, CatalogError> {
        for plugin in &sources.plugins {
            Credentials::check(options.credentials.as_deref(), &plugin.name, plugin.http_grant())?;
        }
        for server in sources.upstreams.iter().filter(|u| u.config.per_caller.is_some()) {
            Credentials::check_upstream(options.credentials.as_deref(), &server.config.name)?;
        }
        let (specs, refused) = gather(sources)?;
        let enrichers = Enrichers::new(&sources.plugins);
        let only_specs: Vec<ToolSpec> = specs.iter().map(|(s, ..)| s.clone()).collect();
        let mut listing = enrichers.list(&only_specs).await;
        listing.hidden.extend(unserved(&only_specs, &enrichers));
        // Before anything is bound: a tool the gate hides cannot be called.
        let gate = Arc::new(gate(sources));
        gate.listing(&mut listing);
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
            // A base-catalog tool is the host's, served by another backend.
            let catalog = matches!(owner, Owner::Host) && !matches!(backend, Backend::Native(_));
            let bound = Bound {
                category: spec.category.clone(),
                catalog,
                transformers: enrichers.transformers(t),
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
            Some(native) if spec.enabled && spec.native && spec.reread_changed => {
                read_cache::watch(native.root())
            }
            _ => None,
        };
        let (changes, changed) = watch.unzip();
        let core = Arc::new(Core {
            listing: Arc::new(listing),
            tools,
            models: Arc::new(models),
            settings: options.speculation.clone(),
            refused,
            changes,
            gate,
            enrichers: enrichers.clone(),
            credentials: options.credentials.clone(),
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
            refresh(Arc::downgrade(engine), changed);
        }
        Ok(Self { core, speculation })
    }
}

/// Tell `engine` of each file that changed, in settled batches, until the
/// watch or the engine is gone.
fn refresh(engine: Weak<Engine<Core>>, mut changed: mpsc::Receiver<String>) {
    tokio::spawn(async move {
        while let Some(paths) = read_cache::settled(&mut changed).await {
            let Some(engine) = engine.upgrade() else {
                return;
            };
            for path in paths {
                let args = Map::from_iter([("path".to_owned(), Value::String(path))]);
                engine.changed(WHOLE_FILE, args).await;
            }
        }
    });
}

/// The gate over every secret the sources hold: each plugin's granted
/// secrets and each upstream server's configured header values.
fn gate(sources: &Sources) -> Gate {
    let upstreams: Vec<(String, String)> = sources
        .upstreams
        .iter()
        .flat_map(|u| u.config.secrets())
        .collect();
    let plugins = sources.plugins.iter().flat_map(|p| p.secrets());
    Gate::new(plugins.chain(&upstreams).map(|(n, v)| (n.as_str(), v.as_str())))
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
            // `[bind]` is suggested only where it would serve the tool.
            reason: if enrichers.lists(t) {
                format!(
                    "a base-catalog tool with no backend: bind it to an upstream server or a tool plugin with `[bind] {} = \"NAME\"`",
                    t.name
                )
            } else {
                format!(
                    "a base-catalog tool with no backend, of category `{}`, which no loaded enricher claims",
                    t.category.as_deref().unwrap_or_default()
                )
            },
        });
    unclaimed.chain(unbound).collect()
}

/// What a tool plugin says of a tool it serves beside its schema: the
/// definition's title, snippet, guidelines and output schema (if it defines
/// the tool), and its annotations as far as they are believed.
///
/// A plugin's annotations are its claim. Of `readOnlyHint`,
/// `destructiveHint` and `idempotentHint`, only a claim that makes the tool
/// look no safer than the host treats it is served (read-only `false`,
/// destructive `true`, idempotent `false`); the effective value model
/// (the owner's, then the user's `[tools.X]`) then sets what it knows
/// (`ValueModel::annotate`), so a tool is served as read-only exactly when
/// its value model says it is. `openWorldHint` is the host's to know: true
/// whenever the plugin has an HTTP grant, whatever it says, and otherwise
/// only if it says so.
fn plugin_meta(plugin: &Plugin, definition: Option<&ToolDefinition>) -> ToolMeta {
    let claim = definition.map(|t| t.annotations.clone()).unwrap_or_default();
    let annotations = ToolAnnotations {
        title: None,
        read_only_hint: claim.read_only_hint.filter(|r| !r),
        destructive_hint: claim.destructive_hint.filter(|d| *d),
        idempotent_hint: claim.idempotent_hint.filter(|i| !i),
        open_world_hint: Some(!plugin.http_hosts().is_empty() || claim.open_world_hint == Some(true)),
    };
    ToolMeta {
        annotations,
        ..definition.map(|t| ToolSpec::from(t).meta).unwrap_or_default()
    }
}

/// Tools with the backend that serves each and the owner whose word sets
/// its side effect.
type Specs = Vec<(ToolSpec, Backend, Owner)>;

/// Every source's tools with their backends and owners, each name given to
/// one source by the ownership rule; the tools refused are returned beside
/// them. A base-catalog tool is the host's, whatever backend serves it.
fn gather(sources: &Sources) -> Result<(Specs, Vec<Refusal>), CatalogError> {
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
    let enriched = ownership::enriched_categories(&sources.plugins);
    let mut names = Names::new(&bindings, &enriched);
    for (plugin, t) in names.plugin_tools(&sources.plugins) {
        let spec = ToolSpec {
            meta: plugin_meta(plugin, Some(t)),
            ..ToolSpec::from(t)
        };
        specs.push((
            spec,
            Backend::Plugin(plugin.clone(), t.hooks),
            Owner::Plugin(plugin.clone()),
        ));
    }
    for server in &sources.upstreams {
        let name = &server.config.name;
        for (spec, remote) in server.specs() {
            if names.claim_upstream(name, &server.config.prefix, &remote) == Claim::Serve {
                let trusted = server.config.trust_annotations;
                let annotated = trusted.then(|| ValueModel::from_annotations(&spec.meta.annotations));
                let owner = Owner::Upstream(server.config.name.clone(), annotated.flatten());
                specs.push((spec, Backend::Upstream(server.clone(), remote), owner));
            }
        }
    }
    for (tool, Binding { backend, .. }) in &bindings {
        let spec = base_tool(tool).ok_or_else(|| CatalogError::UnknownCatalogTool { tool: tool.clone() })?;
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
                return Err(CatalogError::UnknownBackend {
                    tool: tool.clone(),
                    backend: backend.clone(),
                });
            }
        };
        // An upstream server's own tool took the name: the catalog tool
        // would not be listed (no enricher claims its category).
        if !names.yielded(tool) {
            specs.push((ToolSpec { meta, ..spec.clone() }, bound, Owner::Host));
        }
    }
    Ok((specs, names.into_refused()))
}
