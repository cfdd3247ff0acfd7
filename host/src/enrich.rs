//! The enricher chain, with its rules made explicit.
//!
//! - A tool with a category is listed only if some loaded enricher claims
//!   that category; a tool without one is always listed.
//! - `enrich-schema` and `transform-args` run in registration order, each
//!   enricher only on the categories it claims, each over the previous one's
//!   output.
//! - Every schema change is recorded with the plugin that made it; a
//!   property changed by two plugins is reported as a conflict (the later
//!   one wins, and the conflict is shown).
//! - `transform-args` runs only for the enrichers whose `enrich-schema`
//!   said the tool's calls need it (a 0.1 enricher cannot say, so it is
//!   entered for every tool it enriches; so is one whose enrichment of the
//!   tool failed, as it never answered). An enricher that only documents or
//!   narrows a schema therefore costs a call nothing.
//! - A plugin's own `enrich-schema` error is an answer, not a crash: its
//!   edits to that tool are undone and the message logged under the
//!   plugin's and the tool's names, as for a failure, without counting
//!   against the plugin's health.
//! - Failures follow each plugin's policy: by default a failed
//!   `enrich-schema` is skipped and its changes rolled back (open), and a
//!   failed `transform-args` rejects the call naming the plugin (closed). A
//!   closed `enrich-schema` hides the tool rather than show it unadapted.
//!
//! Value models are collected here too. Each tool's [`Owner`] gives the
//! trusted layer (the host's model of a native or base-catalog tool, the
//! providing plugin's own `value-model` if it is also an enricher, a trusted
//! upstream's annotations); the enrichers claiming its category then add
//! claims, which may only make it more conservative (see `value_model`).
//! The user's layer is added by the caller.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::bounds;
use crate::catalog::base_side_effect;
use crate::plugin::{Method, Plugin, PluginError, Policy};
use crate::schema::{Change, ToolSchema};
use crate::tool::{ToolMeta, ToolSpec};
use crate::tools::facts;
use crate::value_model::{Layer, ValueModel, ValueModels};

/// Why a tool is hidden rather than listed: its input schema is invalid,
/// or an enricher whose `enrich-schema` policy is closed failed on it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct EnrichError {
    /// The tool hidden.
    pub tool: String,
    /// Why, as [`Listing::hidden`] names it (with the plugin at fault).
    pub reason: String,
}

/// The loaded enrichers, in registration order.
#[derive(Clone, Default)]
pub struct Enrichers {
    plugins: Vec<Arc<Plugin>>,
}

/// A property that more than one plugin changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Conflict {
    /// `None` for the tool's description.
    pub property: Option<String>,
    /// The plugins, in the order they changed it; the last one won.
    pub plugins: Vec<Arc<str>>,
}

/// A tool after every enricher that claims its category ran.
#[derive(Debug, Clone, Serialize)]
pub struct EnrichedTool {
    /// The tool's name.
    pub name: String,
    /// The category it was enriched for, if any.
    pub category: Option<String>,
    /// Its schema after every enricher's edits.
    #[serde(skip)]
    pub schema: ToolSchema,
    /// Every change, in order, with the plugin that made it.
    pub changes: Vec<Change>,
    /// Edits of the same field by more than one enricher (the last one wins).
    pub conflicts: Vec<Conflict>,
    /// Plugins whose enrichment of this tool failed and was skipped.
    pub skipped: Vec<String>,
    /// The enrichers whose `transform-args` calls to this tool enter, in
    /// registration order.
    pub transformers: Vec<Arc<str>>,
    /// From the tool's source, unchanged by enrichers.
    #[serde(skip)]
    pub meta: ToolMeta,
}

impl EnrichedTool {
    /// The tool as MCP lists it: title, output schema, annotations, icons
    /// and `_meta` from its metadata.
    pub fn to_mcp(&self) -> rmcp::model::Tool {
        let object = match self.schema.to_value() {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        let mut tool =
            rmcp::model::Tool::new(self.name.clone(), self.schema.description().to_owned(), object);
        crate::tool::set_tool_meta(&self.meta, &mut tool);
        tool
    }
}

#[cfg(test)]
impl EnrichedTool {
    /// A tool as its source lists it, no enricher having changed it.
    pub(crate) fn listed(name: &str, schema: ToolSchema, meta: ToolMeta) -> Self {
        Self {
            name: name.into(),
            category: None,
            schema,
            changes: Vec::new(),
            conflicts: Vec::new(),
            skipped: Vec::new(),
            transformers: Vec::new(),
            meta,
        }
    }
}

/// Who may say how a tool changes the world (its side effect, `speculate`
/// and what it invalidates).
#[derive(Clone)]
pub enum Owner {
    /// A native or base-catalog tool: the host's own model.
    Host,
    /// A tool plugin's own tool: its `value-model`, if it is an enricher too.
    Plugin(Arc<Plugin>),
    /// An upstream server's tool: its name, and the model read from the
    /// tool's annotations if the server's `[[upstream]]` trusts them.
    Upstream(String, Option<ValueModel>),
}

/// A tool left out of the list, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Hidden {
    /// The tool hidden.
    pub name: String,
    /// Why it is hidden, naming the plugin at fault.
    pub reason: String,
}

/// The enriched tool list.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Listing {
    /// The tools listed, enriched.
    pub tools: Vec<EnrichedTool>,
    /// The tools left out, each with its reason.
    pub hidden: Vec<Hidden>,
}

impl Enrichers {
    /// The enrichers among `plugins`, keeping their order.
    pub fn new(plugins: &[Arc<Plugin>]) -> Self {
        Self {
            plugins: plugins.iter().filter(|p| p.worlds.enricher).cloned().collect(),
        }
    }

    /// The enrichers of the chain, in the order they run.
    pub fn plugins(&self) -> &[Arc<Plugin>] {
        &self.plugins
    }

    /// The enrichers that claim `category`, in order.
    pub fn for_category<'a>(
        &'a self,
        category: Option<&'a str>,
    ) -> impl Iterator<Item = &'a Arc<Plugin>> + 'a {
        self.plugins
            .iter()
            .filter(move |p| category.is_some_and(|c| p.claims(c)))
    }

    /// Whether `tool` is listed at all (before enrichment can hide it).
    pub fn lists(&self, tool: &ToolSpec) -> bool {
        match &tool.category {
            None => true,
            Some(c) => self.plugins.iter().any(|p| p.claims(c)),
        }
    }

    /// Enrich one tool; `Err` says why it is hidden.
    pub async fn enrich(&self, tool: &ToolSpec) -> Result<EnrichedTool, EnrichError> {
        self.enrich_or_reason(tool).await.map_err(|reason| EnrichError {
            tool: tool.name.clone(),
            reason,
        })
    }

    /// [`Enrichers::enrich`], its `Err` the reason as listed.
    async fn enrich_or_reason(&self, tool: &ToolSpec) -> Result<EnrichedTool, String> {
        let mut schema = ToolSchema::new(tool.description.clone(), tool.input_schema.clone())
            .map_err(|e| format!("its input schema is invalid: {e}"))?;
        let mut changes = Vec::new();
        let mut skipped = Vec::new();
        let mut transformers = Vec::new();
        for plugin in self.for_category(tool.category.as_deref()) {
            match plugin.enrich_schema(&tool.name, schema.clone()).await {
                Ok(enrichment) => {
                    schema = enrichment.edit.schema;
                    changes.extend(enrichment.edit.changes);
                    if enrichment.transforms_args {
                        transformers.push(plugin.name.clone());
                    }
                }
                Err(e) if plugin.policy(Method::EnrichSchema) == Policy::Closed => {
                    return Err(format!("{e} (its enrich-schema policy is closed)"));
                }
                Err(e) => {
                    tracing::warn!(plugin = %plugin.name, tool = %tool.name, "skipping enrichment: {e}");
                    skipped.push(e.to_string());
                    transformers.push(plugin.name.clone());
                }
            }
        }
        let conflicts = conflicts(&changes);
        Ok(EnrichedTool {
            name: tool.name.clone(),
            category: tool.category.clone(),
            schema,
            changes,
            conflicts,
            skipped,
            transformers,
            meta: tool.meta.clone(),
        })
    }

    /// Enrich every listed tool of `tools`, keeping their order.
    pub async fn list(&self, tools: &[ToolSpec]) -> Listing {
        let mut listing = Listing::default();
        for tool in tools {
            // A rebuild of thousands of tools runs beside the calls being
            // served, on the same threads (one, over stdio): it gives way.
            tokio::task::coop::consume_budget().await;
            if !self.lists(tool) {
                continue;
            }
            match self.enrich_or_reason(tool).await {
                Ok(enriched) => listing.tools.push(enriched),
                Err(reason) => listing.hidden.push(Hidden {
                    name: tool.name.clone(),
                    reason,
                }),
            }
        }
        listing
    }

    /// Run the transform-args chain of every enricher claiming `category`
    /// for one call (what a tool gets before it is enriched).
    pub async fn transform_args(
        &self,
        tool: &str,
        category: Option<&str>,
        args: Map<String, Value>,
    ) -> Result<Map<String, Value>, PluginError> {
        let plugins: Vec<Arc<Plugin>> = self.for_category(category).cloned().collect();
        Self::transform_chain(&plugins, tool, args).await
    }

    /// The enrichers among these that `tool`'s calls enter
    /// ([`EnrichedTool::transformers`]), in order.
    pub fn transformers(&self, tool: &EnrichedTool) -> Vec<Arc<Plugin>> {
        self.plugins
            .iter()
            .filter(|p| tool.transformers.contains(&p.name))
            .cloned()
            .collect()
    }

    /// Run the transform-args chain of `plugins`, in order, for one call.
    /// The enrichers of the chain share one budget of bytes to write into
    /// the arguments ([`bounds::MAX_ARGS_GROWTH`]), so together they cannot
    /// grow them past it.
    pub async fn transform_chain(
        plugins: &[Arc<Plugin>],
        tool: &str,
        mut args: Map<String, Value>,
    ) -> Result<Map<String, Value>, PluginError> {
        let mut room = bounds::MAX_ARGS_GROWTH;
        for plugin in plugins {
            let open = plugin.policy(Method::TransformArgs) == Policy::Open;
            // Keep a copy only when a failure must be rolled back.
            let before = open.then(|| args.clone());
            match plugin.transform_args_within(tool, args, room).await {
                Ok((next, left)) => (args, room) = (next, left),
                Err(e @ PluginError::Rejected { .. }) => return Err(e),
                Err(e) => match before {
                    Some(before) => {
                        tracing::warn!(plugin = %plugin.name, tool, "skipping argument transform: {e}");
                        args = before;
                    }
                    None => return Err(e),
                },
            }
        }
        Ok(args)
    }

    /// The value models of `tools`: each owner's model, then the claims of
    /// every other enricher claiming the tool's category, in registration
    /// order. A plugin whose value-model policy is closed and which fails
    /// turns speculation off for that tool.
    pub async fn value_models<'a>(
        &self,
        tools: impl IntoIterator<Item = (&'a ToolSpec, &'a Owner)>,
    ) -> ValueModels {
        let tools: Vec<(&ToolSpec, &Owner)> = tools.into_iter().collect();
        // Each category's tools, gathered once: asked per tool, this was a
        // pass over every tool for each one, quadratic in their number.
        let mut by_category: HashMap<Option<&str>, Vec<String>> = HashMap::new();
        for (t, _) in &tools {
            by_category
                .entry(t.category.as_deref())
                .or_default()
                .push(t.name.clone());
        }
        let mut models = ValueModels::default();
        for &(tool, owner) in &tools {
            tokio::task::coop::consume_budget().await;
            let name = tool.name.as_str();
            let owning = match owner {
                Owner::Host => {
                    let host = facts::value_model(name).or_else(|| {
                        base_side_effect(name).map(|effect| ValueModel {
                            side_effect: Some(effect),
                            ..ValueModel::default()
                        })
                    });
                    if let Some(model) = host {
                        models.add(name, Layer::BuiltIn, &model);
                    }
                    None
                }
                Owner::Upstream(server, annotated) => {
                    if let Some(model) = annotated {
                        models.add(name, Layer::Upstream(server.clone()), model);
                    }
                    None
                }
                Owner::Plugin(plugin) => {
                    if plugin.worlds.enricher
                        && let Some(model) = self.ask(plugin, name).await
                    {
                        models.add(name, Layer::Plugin(plugin.name.to_string()), &model);
                    }
                    Some(plugin)
                }
            };
            let neighbours = by_category
                .get(&tool.category.as_deref())
                .map_or(&[][..], Vec::as_slice);
            for plugin in self.for_category(tool.category.as_deref()) {
                if owning.is_some_and(|o| Arc::ptr_eq(o, plugin)) {
                    continue;
                }
                if let Some(model) = self.ask(plugin, name).await {
                    models.claim(name, &plugin.name, &model, neighbours);
                }
            }
        }
        models
    }

    /// `plugin`'s value model of `tool`; on a failure, none, or one that
    /// turns speculation off if its value-model policy is closed.
    async fn ask(&self, plugin: &Plugin, tool: &str) -> Option<ValueModel> {
        match plugin.value_model(tool).await {
            Ok(model) => model,
            Err(e) => {
                tracing::warn!(tool, "value model skipped: {e}");
                (plugin.policy(Method::ValueModel) == Policy::Closed).then(|| ValueModel {
                    speculate: Some(false),
                    ..ValueModel::default()
                })
            }
        }
    }
}

/// Properties (or the description) changed by more than one plugin.
fn conflicts(changes: &[Change]) -> Vec<Conflict> {
    let mut by_property: BTreeMap<Option<&str>, Vec<Arc<str>>> = BTreeMap::new();
    for change in changes {
        let plugins = by_property.entry(change.property.as_deref()).or_default();
        if plugins.last() != Some(&change.plugin) && !plugins.contains(&change.plugin) {
            plugins.push(change.plugin.clone());
        }
    }
    by_property
        .into_iter()
        .filter(|(_, plugins)| plugins.len() > 1)
        .map(|(property, plugins)| Conflict {
            property: property.map(str::to_owned),
            plugins,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::Action;

    #[test]
    fn conflicts_name_every_plugin_in_order() {
        let change = |plugin: &str, property: &str| Change {
            plugin: plugin.into(),
            property: Some(property.into()),
            action: Action::SetEnum,
        };
        let changes = [
            change("a", "priority"),
            change("a", "x"),
            change("b", "priority"),
            change("a", "priority"),
        ];
        let found = conflicts(&changes);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].property.as_deref(), Some("priority"));
        assert_eq!(
            found[0].plugins,
            vec![Arc::<str>::from("a"), Arc::<str>::from("b")]
        );
    }
}
