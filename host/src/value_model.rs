//! Value models: what the host knows about a tool's cost, value and side
//! effects, for speculative prefetch.
//!
//! A model is a [`ValueModel`] whose every field is optional, so that layers
//! merge field by field: the owner's model < other plugins' claims (in
//! registration order) < the user's configuration, the right side winning.
//! Layers merge rather than replace whole entries, so a user who sets only
//! `cost.freshness_ttl_s` keeps everything else a plugin said. The planner
//! that reads these models lives elsewhere, and so do the native tools'
//! own models (`tools::facts`, which layers them as built-ins); this module owns the types, the layering,
//! and the trust rules:
//!
//! - only `pure` and `read-only` tools are ever speculated;
//! - a tool's side effect and `speculate` come from its owner (who that is
//!   for each tool is the caller's business) and from the user; a claim by
//!   any other plugin may only make the tool more conservative (a more
//!   dangerous side effect, `speculate = false`, more tools invalidated),
//!   and anything else it says about them is refused and recorded;
//! - a follow-up link a plugin declares may point only to a tool whose
//!   final model allows speculation; others are dropped and recorded.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::tool::ToolAnnotations;

/// What calling a tool does to the world, and so whether it may be called ahead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SideEffect {
    /// No effect and the same answer every time.
    Pure,
    /// Reads, changes nothing.
    ReadOnly,
    /// Changes files on this machine.
    MutatesLocal,
    /// Changes something elsewhere.
    MutatesExternal,
    /// Not known: treated as changing something.
    #[default]
    Indeterminate,
}

impl SideEffect {
    /// Only tools that change nothing may be called ahead of time.
    pub fn is_speculatable(self) -> bool {
        matches!(self, Self::Pure | Self::ReadOnly)
    }

    /// How much a call may change: a claim by a plugin that does not own the
    /// tool is taken only if it does not lower this. Not knowing counts as
    /// the worst.
    fn name(self) -> &'static str {
        match self {
            Self::Pure => "pure",
            Self::ReadOnly => "read-only",
            Self::MutatesLocal => "mutates-local",
            Self::MutatesExternal => "mutates-external",
            Self::Indeterminate => "indeterminate",
        }
    }

    fn danger(self) -> u8 {
        match self {
            Self::Pure => 0,
            Self::ReadOnly => 1,
            Self::MutatesLocal => 2,
            Self::MutatesExternal | Self::Indeterminate => 3,
        }
    }
}

/// How much the model needs a tool's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ValueClass {
    /// The task cannot go on without it.
    #[default]
    Critical,
    /// It helps.
    Supporting,
    /// Nice to have.
    Optional,
    /// Kept for the record, not for the model.
    AuditOnly,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CostModel {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub typical_kb: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_kb: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_ms_p50: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dollars: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub freshness_ttl_s: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FieldGroup {
    #[serde(default)]
    pub fields: Vec<String>,
    #[serde(default = "half")]
    pub estimated_value: f32,
    #[serde(default = "yes")]
    pub default_include: bool,
}

fn half() -> f32 {
    0.5
}
fn yes() -> bool {
    true
}

/// A tool likely called after this one, and how to build its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FollowUpLink {
    /// The tool called next.
    pub tool: String,
    /// How likely it is (0 to 1).
    #[serde(default = "half")]
    pub probability: f32,
    /// Where in this tool's result its arguments are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub projection: Option<String>,
    /// The argument the projected value fills.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub projection_arg: Option<String>,
}

/// A tool's value model. Every field is optional so that layers merge field
/// by field; the effective values of unset fields come from the accessors.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValueModel {
    /// How much the model needs its result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value_class: Option<ValueClass>,
    /// What calling it does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub side_effect: Option<SideEffect>,
    /// What a call costs.
    #[serde(default, skip_serializing_if = "is_default")]
    pub cost: CostModel,
    /// Named groups of the result's fields.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field_groups: Option<BTreeMap<String, FieldGroup>>,
    /// Tools likely called after it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub follow_ups: Option<Vec<FollowUpLink>>,
    /// Tools whose cached results a call of it makes stale.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub invalidates: Option<Vec<String>>,
    /// Stop prefetching it after this many failures in a row.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fail_fast_after_n: Option<u32>,
    /// The host its calls are rate-limited as.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_limit_host: Option<String>,
    /// Whether it may be called ahead at all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speculate: Option<bool>,
}

fn is_default(c: &CostModel) -> bool {
    *c == CostModel::default()
}

impl ValueModel {
    /// Merge `over` onto `self`: every field `over` sets wins.
    pub fn layer(&mut self, over: &ValueModel) {
        fn set<T: Clone>(dst: &mut Option<T>, src: &Option<T>) {
            if src.is_some() {
                dst.clone_from(src);
            }
        }
        set(&mut self.value_class, &over.value_class);
        set(&mut self.side_effect, &over.side_effect);
        set(&mut self.cost.typical_kb, &over.cost.typical_kb);
        set(&mut self.cost.max_kb, &over.cost.max_kb);
        set(&mut self.cost.latency_ms_p50, &over.cost.latency_ms_p50);
        set(&mut self.cost.dollars, &over.cost.dollars);
        set(&mut self.cost.freshness_ttl_s, &over.cost.freshness_ttl_s);
        set(&mut self.field_groups, &over.field_groups);
        set(&mut self.follow_ups, &over.follow_ups);
        set(&mut self.invalidates, &over.invalidates);
        set(&mut self.fail_fast_after_n, &over.fail_fast_after_n);
        set(&mut self.rate_limit_host, &over.rate_limit_host);
        set(&mut self.speculate, &over.speculate);
    }

    /// What calling it does (unset: indeterminate).
    pub fn side_effect(&self) -> SideEffect {
        self.side_effect.unwrap_or_default()
    }

    /// How much the model needs its result (unset: supporting).
    pub fn value_class(&self) -> ValueClass {
        self.value_class.unwrap_or_default()
    }

    /// The typical size of its result, in KiB.
    pub fn typical_kb(&self) -> f32 {
        self.cost.typical_kb.unwrap_or(1.0)
    }

    /// Whether the tool may be called ahead of time: only if its side effect
    /// is `pure` or `read-only`, and `speculate` does not say no;
    /// `speculate = true` can never turn it on for a mutating tool.
    pub fn is_speculatable(&self) -> bool {
        self.side_effect().is_speculatable() && self.speculate != Some(false)
    }

    /// Lay the MCP hints this model's side effect says over `hints`: pure
    /// and read-only tools are read-only, pure ones idempotent too, mutating
    /// ones destructive. An unset or indeterminate side effect says nothing.
    pub fn annotate(&self, hints: &mut ToolAnnotations) {
        let (read_only, destructive, idempotent) = match self.side_effect {
            Some(SideEffect::Pure) => (true, None, Some(true)),
            Some(SideEffect::ReadOnly) => (true, None, None),
            Some(SideEffect::MutatesLocal | SideEffect::MutatesExternal) => (false, Some(true), None),
            Some(SideEffect::Indeterminate) | None => return,
        };
        hints.read_only_hint = Some(read_only);
        if destructive.is_some() {
            hints.destructive_hint = destructive;
        }
        if idempotent.is_some() {
            hints.idempotent_hint = idempotent;
        }
    }

    /// The side effect MCP hints declare, as a model: `readOnlyHint` makes
    /// a tool read-only; hints without it describe a tool that changes
    /// things (MCP's default), locally if `openWorldHint` is false. No hints
    /// at all say nothing.
    pub fn from_annotations(hints: &ToolAnnotations) -> Option<ValueModel> {
        if hints.is_empty() {
            return None;
        }
        let effect = match (hints.read_only_hint, hints.open_world_hint) {
            (Some(true), _) => SideEffect::ReadOnly,
            (_, Some(false)) => SideEffect::MutatesLocal,
            _ => SideEffect::MutatesExternal,
        };
        Some(ValueModel {
            side_effect: Some(effect),
            ..ValueModel::default()
        })
    }

    /// The user asked to speculate a tool that must never be: a configuration
    /// error the loader reports with the tool's name.
    pub fn forces_unsafe_speculation(&self) -> bool {
        self.speculate == Some(true) && !self.side_effect().is_speculatable()
    }
}

/// Where one layer of a tool's model came from, for `toolhost tools --explain`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "name")]
pub enum Layer {
    /// The host's built-in model.
    BuiltIn,
    /// A plugin's, by name.
    Plugin(String),
    /// An upstream server's tool annotations, trusted by its `[[upstream]]`.
    Upstream(String),
    /// The user's `[value_model]` table.
    User,
}

/// A claim about a tool that was not taken, naming the plugin that made it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("plugin `{plugin}` about tool `{tool}`: {what}")]
pub struct Refusal {
    pub plugin: String,
    pub tool: String,
    /// What was refused, and why.
    pub what: String,
}

#[derive(Debug, Clone, Default)]
struct Entry {
    model: ValueModel,
    layers: Vec<Layer>,
    /// The plugin whose follow-up links the model holds, if a plugin set
    /// them last (links of the host or the user are not checked).
    links_by: Option<String>,
    /// Whether the user set `rate_limit_host` last (the user vouches for it).
    host_by_user: bool,
}

/// The effective value models of all tools, with the layers each was built
/// from and the claims refused on the way.
#[derive(Debug, Clone, Default)]
pub struct ValueModels {
    models: BTreeMap<String, Entry>,
    refused: Vec<Refusal>,
}

impl ValueModels {
    /// Layer `model` over what `tool` has so far, trusted whole: from the
    /// tool's owner (the host, the plugin providing it, a trusted upstream)
    /// or the user.
    pub fn add(&mut self, tool: &str, layer: Layer, model: &ValueModel) {
        let entry = self.models.entry(tool.to_owned()).or_default();
        entry.model.layer(model);
        if model.follow_ups.is_some() {
            entry.links_by = match &layer {
                Layer::Plugin(name) => Some(name.clone()),
                _ => None,
            };
        }
        if model.rate_limit_host.is_some() {
            entry.host_by_user = layer == Layer::User;
        }
        entry.layers.push(layer);
    }

    /// Layer a claim by `plugin`, which does not own `tool`: taken only as
    /// far as it makes the tool more conservative. A lower side effect and
    /// `speculate = true` are refused; `invalidates` is added to what the
    /// tool already invalidates (`neighbours`, its category, where nothing
    /// named them), never narrowing it. Everything else layers as usual.
    pub fn claim(&mut self, tool: &str, plugin: &str, model: &ValueModel, neighbours: &[String]) {
        let current = self.get(tool).cloned().unwrap_or_default();
        let mut taken = model.clone();
        let mut refused = Vec::new();
        if let Some(effect) = model.side_effect
            && effect.danger() < current.side_effect().danger()
        {
            refused.push(format!(
                "side effect `{}` refused: only its owner or the user may declare it less conservative than `{}`",
                effect.name(),
                current.side_effect().name()
            ));
            taken.side_effect = None;
        }
        if model.speculate == Some(true) {
            refused.push(
                "`speculate = true` refused: only its owner or the user may allow calling it ahead of time"
                    .into(),
            );
            taken.speculate = None;
        }
        if let Some(claimed) = &model.invalidates {
            let mut all = current.invalidates.unwrap_or_else(|| neighbours.to_vec());
            for t in claimed {
                if !all.contains(t) {
                    all.push(t.clone());
                }
            }
            taken.invalidates = Some(all);
        }
        for what in refused {
            self.refuse(plugin, tool, what);
        }
        self.add(tool, Layer::Plugin(plugin.to_owned()), &taken);
    }

    fn refuse(&mut self, plugin: &str, tool: &str, what: String) {
        let refusal = Refusal {
            plugin: plugin.to_owned(),
            tool: tool.to_owned(),
            what,
        };
        tracing::warn!("value model: {refusal}");
        self.refused.push(refusal);
    }

    /// The model of `tool`.
    pub fn get(&self, tool: &str) -> Option<&ValueModel> {
        self.models.get(tool).map(|e| &e.model)
    }

    /// Where the model of `tool` came from, layer by layer.
    pub fn layers(&self, tool: &str) -> &[Layer] {
        self.models
            .get(tool)
            .map(|e| e.layers.as_slice())
            .unwrap_or_default()
    }

    /// The `rate_limit_host` of `tool` if the user's `[tools.X]` set it: a
    /// host the user vouches for, unlike a plugin's claim.
    pub fn user_host(&self, tool: &str) -> Option<&str> {
        let entry = self.models.get(tool)?;
        entry
            .host_by_user
            .then_some(entry.model.rate_limit_host.as_deref())
            .flatten()
    }

    /// The claims not taken, in the order they were made.
    pub fn refused(&self) -> &[Refusal] {
        &self.refused
    }

    /// Every tool's model.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &ValueModel)> {
        self.models.iter().map(|(k, e)| (k.as_str(), &e.model))
    }

    /// Layer the user's overrides last, refusing any that would speculate
    /// a tool that is not pure or read-only; then, with every model final,
    /// drop each follow-up link a plugin declared to a tool that may not be
    /// called ahead of time.
    pub fn apply_overrides<'a>(
        &mut self,
        overrides: impl IntoIterator<Item = (&'a String, &'a ValueModel)>,
    ) -> Result<(), UnsafeSpeculation> {
        for (tool, over) in overrides {
            self.add(tool, Layer::User, over);
            let effective = self.get(tool).expect("just added");
            if over.speculate == Some(true) && effective.forces_unsafe_speculation() {
                return Err(UnsafeSpeculation {
                    tool: tool.clone(),
                    effect: effective.side_effect(),
                });
            }
        }
        self.check_links();
        Ok(())
    }

    fn check_links(&mut self) {
        let speculatable = |models: &BTreeMap<String, Entry>, tool: &str| {
            models.get(tool).is_some_and(|e| e.model.is_speculatable())
        };
        let mut dropped = Vec::new();
        for (tool, entry) in &self.models {
            let (Some(plugin), Some(links)) = (&entry.links_by, &entry.model.follow_ups) else {
                continue;
            };
            for link in links.iter().filter(|l| !speculatable(&self.models, &l.tool)) {
                dropped.push((plugin.clone(), tool.clone(), link.tool.clone()));
            }
        }
        for (plugin, tool, target) in dropped {
            if let Some(links) = self
                .models
                .get_mut(&tool)
                .and_then(|e| e.model.follow_ups.as_mut())
            {
                links.retain(|l| l.tool != target);
            }
            self.refuse(
                &plugin,
                &tool,
                format!("follow-up link to `{target}` dropped: `{target}` may not be called ahead of time"),
            );
        }
    }
}

/// An override that asks to speculate a tool that changes things.
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "[tools.{tool}] sets speculate = true, but {tool} is {effect:?}: only pure and read-only tools are ever called ahead of time"
)]
pub struct UnsafeSpeculation {
    /// The tool.
    pub tool: String,
    /// What calling it does.
    pub effect: SideEffect,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layers_merge_field_by_field() {
        let mut models = ValueModels::default();
        let plugin = ValueModel {
            value_class: Some(ValueClass::Supporting),
            side_effect: Some(SideEffect::ReadOnly),
            cost: CostModel {
                typical_kb: Some(4.0),
                freshness_ttl_s: Some(60),
                ..CostModel::default()
            },
            ..ValueModel::default()
        };
        let user: ValueModel = toml::from_str("cost = { freshness_ttl_s = 5 }").unwrap();
        models.add("get_issues", Layer::Plugin("jira".into()), &plugin);
        models.add("get_issues", Layer::User, &user);
        let m = models.get("get_issues").unwrap();
        assert_eq!(m.value_class(), ValueClass::Supporting);
        assert_eq!(m.cost.typical_kb, Some(4.0));
        assert_eq!(m.cost.freshness_ttl_s, Some(5));
        assert_eq!(
            models.layers("get_issues"),
            [Layer::Plugin("jira".into()), Layer::User]
        );
    }

    #[test]
    fn speculate_true_never_enables_a_mutating_tool() {
        let m = ValueModel {
            side_effect: Some(SideEffect::MutatesExternal),
            speculate: Some(true),
            ..ValueModel::default()
        };
        assert!(!m.is_speculatable());
        assert!(m.forces_unsafe_speculation());
        let unknown = ValueModel {
            speculate: Some(true),
            ..ValueModel::default()
        };
        assert!(!unknown.is_speculatable());
    }

    fn effect(effect: SideEffect) -> ValueModel {
        ValueModel {
            side_effect: Some(effect),
            ..ValueModel::default()
        }
    }

    #[test]
    fn a_claim_may_only_make_a_tool_more_conservative() {
        use SideEffect::*;
        let mut models = ValueModels::default();
        models.add("get", Layer::Plugin("owner".into()), &effect(ReadOnly));
        models.claim("get", "other", &effect(Pure), &[]);
        assert_eq!(models.get("get").unwrap().side_effect(), ReadOnly);
        let forced = ValueModel {
            speculate: Some(true),
            ..ValueModel::default()
        };
        models.claim("unknown", "other", &effect(MutatesLocal), &[]);
        models.claim("unknown", "other", &forced, &[]);
        assert_eq!(models.get("unknown").unwrap().speculate, None);
        assert_eq!(models.get("unknown").unwrap().side_effect(), Indeterminate);
        let refused: Vec<(&str, &str)> = models
            .refused()
            .iter()
            .map(|r| (r.plugin.as_str(), r.tool.as_str()))
            .collect();
        assert_eq!(
            refused,
            [("other", "get"), ("other", "unknown"), ("other", "unknown")]
        );
        // More conservative is always taken.
        models.claim("get", "other", &effect(MutatesExternal), &[]);
        models.claim(
            "get",
            "other",
            &ValueModel {
                speculate: Some(false),
                ..ValueModel::default()
            },
            &[],
        );
        assert!(!models.get("get").unwrap().is_speculatable());
        assert_eq!(models.refused().len(), 3);
    }

    #[test]
    fn a_claim_adds_to_what_a_tool_invalidates() {
        let mut models = ValueModels::default();
        let narrow = ValueModel {
            invalidates: Some(vec!["c".into()]),
            ..ValueModel::default()
        };
        let neighbours = ["a".to_owned(), "b".to_owned()];
        models.claim("write", "other", &narrow, &neighbours);
        assert_eq!(
            models.get("write").unwrap().invalidates,
            Some(vec!["a".into(), "b".into(), "c".into()])
        );
        let none = ValueModel {
            invalidates: Some(Vec::new()),
            ..ValueModel::default()
        };
        models.add("edit", Layer::Plugin("owner".into()), &narrow);
        models.claim("edit", "other", &none, &neighbours);
        assert_eq!(models.get("edit").unwrap().invalidates, Some(vec!["c".into()]));
    }

    #[test]
    fn plugin_links_to_tools_that_may_not_be_speculated_are_dropped() {
        use SideEffect::*;
        let link = |tool: &str| FollowUpLink {
            tool: tool.into(),
            probability: 1.0,
            projection: None,
            projection_arg: None,
        };
        let links = |tools: &[&str]| ValueModel {
            follow_ups: Some(tools.iter().map(|t| link(t)).collect()),
            ..effect(ReadOnly)
        };
        let mut models = ValueModels::default();
        models.add(
            "list",
            Layer::Plugin("p".into()),
            &links(&["get", "delete", "missing"]),
        );
        models.add("get", Layer::BuiltIn, &effect(ReadOnly));
        models.add("delete", Layer::BuiltIn, &effect(MutatesExternal));
        models.add("user_list", Layer::User, &links(&["delete"]));
        models.apply_overrides([]).unwrap();
        let kept: Vec<&str> = models
            .get("list")
            .unwrap()
            .follow_ups
            .iter()
            .flatten()
            .map(|l| l.tool.as_str())
            .collect();
        assert_eq!(kept, ["get"]);
        assert_eq!(models.refused().len(), 2);
        assert!(
            models.refused()[0]
                .to_string()
                .contains("plugin `p` about tool `list`")
        );
        // The user's own links are the user's business (the planner still
        // never calls a mutating tool ahead of time).
        assert_eq!(
            models
                .get("user_list")
                .unwrap()
                .follow_ups
                .as_ref()
                .unwrap()
                .len(),
            1
        );
    }

    #[test]
    fn only_a_host_the_user_set_is_vouched_for() {
        let host = |h: &str| ValueModel {
            rate_limit_host: Some(h.into()),
            ..ValueModel::default()
        };
        let mut models = ValueModels::default();
        models.add("a", Layer::User, &host("api.example.com"));
        models.add("b", Layer::User, &host("api.example.com"));
        models.claim("b", "p", &host("evil.example.com"), &[]);
        assert_eq!(models.user_host("a"), Some("api.example.com"));
        assert_eq!(models.user_host("b"), None);
    }

    #[test]
    fn side_effects_become_mcp_hints() {
        let hints = |effect| {
            let mut h = ToolAnnotations {
                open_world_hint: Some(false),
                ..ToolAnnotations::default()
            };
            let model = ValueModel {
                side_effect: effect,
                ..ValueModel::default()
            };
            model.annotate(&mut h);
            (
                h.read_only_hint,
                h.destructive_hint,
                h.idempotent_hint,
                h.open_world_hint,
            )
        };
        assert_eq!(
            hints(Some(SideEffect::Pure)),
            (Some(true), None, Some(true), Some(false))
        );
        assert_eq!(
            hints(Some(SideEffect::ReadOnly)),
            (Some(true), None, None, Some(false))
        );
        assert_eq!(
            hints(Some(SideEffect::MutatesExternal)),
            (Some(false), Some(true), None, Some(false))
        );
        assert_eq!(hints(None), (None, None, None, Some(false)));
    }
}
