//! Value models: what the host knows about a tool's cost, value and side
//! effects, for speculative prefetch.
//!
//! A model is a [`ValueModel`] whose every field is optional, so that layers
//! merge field by field: built-in defaults < plugin value models (in
//! registration order) < the user's configuration, the right side winning.
//! Unlike the reference, which replaced whole entries, a user who sets only
//! `cost.freshness_ttl_s` keeps everything else a plugin said. The planner
//! that reads these models lives elsewhere; this module owns the types, the
//! layering, and the rule that only `pure` and `read-only` tools are ever
//! speculated.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::catalog::Annotations;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SideEffect {
    Pure,
    ReadOnly,
    MutatesLocal,
    MutatesExternal,
    #[default]
    Indeterminate,
}

impl SideEffect {
    /// Only tools that change nothing may be called ahead of time.
    pub fn is_speculatable(self) -> bool {
        matches!(self, Self::Pure | Self::ReadOnly)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ValueClass {
    #[default]
    Critical,
    Supporting,
    Optional,
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

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FollowUpLink {
    pub tool: String,
    #[serde(default = "half")]
    pub probability: f32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub projection: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub projection_arg: Option<String>,
}

/// A tool's value model. Every field is optional so that layers merge field
/// by field; the effective values of unset fields come from the accessors.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValueModel {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value_class: Option<ValueClass>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub side_effect: Option<SideEffect>,
    #[serde(default, skip_serializing_if = "is_default")]
    pub cost: CostModel,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field_groups: Option<BTreeMap<String, FieldGroup>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub follow_ups: Option<Vec<FollowUpLink>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub invalidates: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fail_fast_after_n: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_limit_host: Option<String>,
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

    pub fn side_effect(&self) -> SideEffect {
        self.side_effect.unwrap_or_default()
    }

    pub fn value_class(&self) -> ValueClass {
        self.value_class.unwrap_or_default()
    }

    pub fn typical_kb(&self) -> f32 {
        self.cost.typical_kb.unwrap_or(1.0)
    }

    /// Whether the tool may be called ahead of time: only if its side effect
    /// is `pure` or `read-only`, and `speculate` does not say no. Unlike the
    /// reference, `speculate = true` can never turn it on for a mutating tool.
    pub fn is_speculatable(&self) -> bool {
        self.side_effect().is_speculatable() && self.speculate != Some(false)
    }

    /// Lay the MCP hints this model's side effect says over `hints`: pure
    /// and read-only tools are read-only, pure ones idempotent too, mutating
    /// ones destructive. An unset or indeterminate side effect says nothing.
    pub fn annotate(&self, hints: &mut Annotations) {
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
    BuiltIn,
    Plugin(String),
    User,
}

/// The effective value models of all tools, with the layers each was built from.
#[derive(Debug, Clone, Default)]
pub struct ValueModels {
    models: BTreeMap<String, (ValueModel, Vec<Layer>)>,
}

impl ValueModels {
    /// Start from the built-in defaults.
    pub fn with_builtins() -> Self {
        let mut models = Self::default();
        for (tool, model) in builtin_models() {
            models.add(&tool, Layer::BuiltIn, &model);
        }
        models
    }

    /// Layer `model` over what `tool` has so far.
    pub fn add(&mut self, tool: &str, layer: Layer, model: &ValueModel) {
        let (current, layers) = self.models.entry(tool.to_owned()).or_default();
        current.layer(model);
        layers.push(layer);
    }

    pub fn get(&self, tool: &str) -> Option<&ValueModel> {
        self.models.get(tool).map(|(m, _)| m)
    }

    pub fn layers(&self, tool: &str) -> &[Layer] {
        self.models
            .get(tool)
            .map(|(_, l)| l.as_slice())
            .unwrap_or_default()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &ValueModel)> {
        self.models.iter().map(|(k, (m, _))| (k.as_str(), m))
    }

    /// Layer the user's overrides last, refusing any that would speculate
    /// a tool that is not pure or read-only.
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
        Ok(())
    }
}

/// An override that asks to speculate a tool that changes things.
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "[tools.{tool}] sets speculate = true, but {tool} is {effect:?}: only pure and read-only tools are ever called ahead of time"
)]
pub struct UnsafeSpeculation {
    pub tool: String,
    pub effect: SideEffect,
}

/// Built-in models for the host's native tools, from the reference's corpus
/// of 3,185 sessions: glob → read 0.32, grep → read 0.35, read is pure.
/// Writes invalidate what they can change.
fn builtin_models() -> Vec<(String, ValueModel)> {
    let link = |tool: &str, probability: f32, projection: &str, arg: &str| FollowUpLink {
        tool: tool.into(),
        probability,
        projection: Some(projection.into()),
        projection_arg: Some(arg.into()),
    };
    let model = |class, effect, kb, ttl, follow_ups: Vec<FollowUpLink>| ValueModel {
        value_class: Some(class),
        side_effect: Some(effect),
        cost: CostModel {
            typical_kb: Some(kb),
            freshness_ttl_s: ttl,
            ..CostModel::default()
        },
        follow_ups: (!follow_ups.is_empty()).then_some(follow_ups),
        ..ValueModel::default()
    };
    use SideEffect::*;
    use ValueClass::*;
    vec![
        ("read".into(), model(Critical, Pure, 2.5, Some(300), vec![])),
        (
            "glob".into(),
            model(
                Supporting,
                ReadOnly,
                1.0,
                Some(60),
                vec![link("read", 0.32, "path", "path")],
            ),
        ),
        (
            "grep".into(),
            model(
                Critical,
                Pure,
                1.0,
                Some(60),
                vec![link("read", 0.35, "path", "path")],
            ),
        ),
        ("ls".into(), model(Supporting, ReadOnly, 1.0, Some(60), vec![])),
        (
            "web_search".into(),
            model(
                Supporting,
                ReadOnly,
                3.0,
                Some(3600),
                vec![link("web_fetch", 0.19, "url", "url")],
            ),
        ),
        (
            "web_fetch".into(),
            model(Critical, ReadOnly, 8.0, Some(900), vec![]),
        ),
        (
            "write".into(),
            ValueModel {
                side_effect: Some(MutatesLocal),
                invalidates: Some(vec!["read".into(), "grep".into(), "glob".into(), "ls".into()]),
                ..ValueModel::default()
            },
        ),
        (
            "edit".into(),
            ValueModel {
                side_effect: Some(MutatesLocal),
                invalidates: Some(vec!["read".into(), "grep".into()]),
                ..ValueModel::default()
            },
        ),
    ]
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

    #[test]
    fn side_effects_become_mcp_hints() {
        let hints = |effect| {
            let mut h = Annotations {
                open_world_hint: Some(false),
                ..Annotations::default()
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

    #[test]
    fn builtins_carry_the_corpus_chains() {
        let models = ValueModels::with_builtins();
        let glob = models.get("glob").unwrap();
        assert_eq!(glob.follow_ups.as_ref().unwrap()[0].probability, 0.32);
        assert!(models.get("read").unwrap().is_speculatable());
        assert!(!models.get("write").unwrap().is_speculatable());
    }
}
