//! [`ValueModel`] and its parts: what an enricher tells the host about a tool
//! for speculative prefetch (`Enricher::value_model`), and the
//! [`FollowUpLink`] handed to `Enricher::project_args`.
//!
//! Every field is optional: an unset field keeps the value of the layer below
//! (built-in defaults < plugin value models in registration order < user
//! configuration). The builder methods set one field each:
//!
//! ```
//! use toolhost_sdk::{FollowUpLink, ValueModel};
//! let model = ValueModel::read_only()
//!     .supporting()
//!     .typical_kb(4.0)
//!     .ttl_s(60)
//!     .follow_up(FollowUpLink::new("get_issue", 0.55).projecting("key", "key"))
//!     .rate_limit_host("tracker.example");
//! assert_eq!(model.cost.unwrap().freshness_ttl_s, Some(60));
//! ```

use crate::bindings::shared::toolhost::plugin::value_model_types as wit;

/// What a call to the tool may change. Only `Pure` and `ReadOnly` tools are
/// ever called ahead of time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SideEffect {
    /// Same arguments, same result, no effect (within its freshness TTL).
    Pure,
    /// Reads state; changes nothing.
    ReadOnly,
    /// Changes local state.
    MutatesLocal,
    /// Changes state elsewhere.
    MutatesExternal,
    /// Not known; treated as mutating.
    Indeterminate,
}

/// How much a tool's result is worth to the agent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueClass {
    /// The agent needs it (weight 1.0).
    Critical,
    /// It helps (weight 0.5).
    Supporting,
    /// It may help (weight 0.2).
    Optional,
    /// Bookkeeping: costs no budget.
    AuditOnly,
}

/// What a call costs. Unset fields keep the layer below.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CostModel {
    /// Typical result size in KB.
    pub typical_kb: Option<f32>,
    /// Largest expected result size in KB.
    pub max_kb: Option<f32>,
    /// Median latency in milliseconds.
    pub latency_ms_p50: Option<u32>,
    /// US dollars per call.
    pub dollars: Option<f32>,
    /// How long a result stays fresh, in seconds.
    pub freshness_ttl_s: Option<u32>,
}

/// A named group of result fields (`must_have`, `nice_to_have`, `debug`).
#[derive(Clone, Debug, PartialEq)]
pub struct FieldGroup {
    /// The group's name.
    pub name: String,
    /// Field paths such as `author.email`; empty means "the rest".
    pub fields: Vec<String>,
    /// How valuable the group is, 0.0 to 1.0.
    pub estimated_value: f32,
    /// Whether the group is included unless asked otherwise.
    pub default_include: bool,
}

/// A call that often follows a tool's call.
#[derive(Clone, Debug, PartialEq)]
pub struct FollowUpLink {
    /// The follow-up tool's name.
    pub tool: String,
    /// How often the agent makes this call next, 0.0 to 1.0.
    pub probability: f32,
    /// A field to read from the previous result (`key`, `id`, `path`).
    pub projection: Option<String>,
    /// The follow-up tool's argument that receives each value read.
    pub projection_arg: Option<String>,
}

impl FollowUpLink {
    /// A link to `tool` taken with `probability`, with no projection.
    pub fn new(tool: impl Into<String>, probability: f32) -> Self {
        FollowUpLink {
            tool: tool.into(),
            probability,
            projection: None,
            projection_arg: None,
        }
    }

    /// Read `field` from the previous result into the argument `arg`.
    pub fn projecting(mut self, field: impl Into<String>, arg: impl Into<String>) -> Self {
        self.projection = Some(field.into());
        self.projection_arg = Some(arg.into());
        self
    }
}

/// What the host should know about a tool, for speculative prefetch. Every
/// field is optional (see the module docs).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ValueModel {
    /// How much the result is worth.
    pub value_class: Option<ValueClass>,
    /// What a call may change.
    pub side_effect: Option<SideEffect>,
    /// What a call costs.
    pub cost: Option<CostModel>,
    /// Named groups of result fields.
    pub field_groups: Option<Vec<FieldGroup>>,
    /// Calls that often follow this one.
    pub follow_ups: Option<Vec<FollowUpLink>>,
    /// Tools whose cached results become stale when this tool runs.
    pub invalidates: Option<Vec<String>>,
    /// Stop prefetching after this many empty results in a row.
    pub fail_fast_after_n: Option<u32>,
    /// The network host the tool's calls hit, for per-host caps.
    pub rate_limit_host: Option<String>,
    /// `Some(false)` never prefetches; `Some(true)` allows it for pure and
    /// read-only tools only.
    pub speculate: Option<bool>,
}

impl ValueModel {
    /// An empty model: no opinion on any field.
    pub fn new() -> Self {
        Self::default()
    }

    /// A model with only `side_effect = ReadOnly` set.
    pub fn read_only() -> Self {
        Self::new().side_effect(SideEffect::ReadOnly)
    }

    /// A model with only `side_effect = Pure` set.
    pub fn pure() -> Self {
        Self::new().side_effect(SideEffect::Pure)
    }

    /// Set the side effect.
    pub fn side_effect(mut self, side_effect: SideEffect) -> Self {
        self.side_effect = Some(side_effect);
        self
    }

    /// Set the value class.
    pub fn value_class(mut self, value_class: ValueClass) -> Self {
        self.value_class = Some(value_class);
        self
    }

    /// `value_class = Critical`.
    pub fn critical(self) -> Self {
        self.value_class(ValueClass::Critical)
    }

    /// `value_class = Supporting`.
    pub fn supporting(self) -> Self {
        self.value_class(ValueClass::Supporting)
    }

    /// `value_class = Optional`.
    pub fn optional(self) -> Self {
        self.value_class(ValueClass::Optional)
    }

    /// `value_class = AuditOnly`.
    pub fn audit_only(self) -> Self {
        self.value_class(ValueClass::AuditOnly)
    }

    fn with_cost(mut self, set: impl FnOnce(&mut CostModel)) -> Self {
        set(self.cost.get_or_insert_with(CostModel::default));
        self
    }

    /// `cost.typical_kb`.
    pub fn typical_kb(self, kb: f32) -> Self {
        self.with_cost(|c| c.typical_kb = Some(kb))
    }

    /// `cost.max_kb`.
    pub fn max_kb(self, kb: f32) -> Self {
        self.with_cost(|c| c.max_kb = Some(kb))
    }

    /// `cost.latency_ms_p50`.
    pub fn latency_ms_p50(self, ms: u32) -> Self {
        self.with_cost(|c| c.latency_ms_p50 = Some(ms))
    }

    /// `cost.dollars`.
    pub fn dollars(self, dollars: f32) -> Self {
        self.with_cost(|c| c.dollars = Some(dollars))
    }

    /// `cost.freshness_ttl_s`: how long a result stays fresh.
    pub fn ttl_s(self, seconds: u32) -> Self {
        self.with_cost(|c| c.freshness_ttl_s = Some(seconds))
    }

    /// Add a field group.
    pub fn field_group(mut self, group: FieldGroup) -> Self {
        self.field_groups.get_or_insert_with(Vec::new).push(group);
        self
    }

    /// Add a follow-up link.
    pub fn follow_up(mut self, link: FollowUpLink) -> Self {
        self.follow_ups.get_or_insert_with(Vec::new).push(link);
        self
    }

    /// Add a tool whose cached results this tool's calls make stale.
    pub fn invalidates(mut self, tool: impl Into<String>) -> Self {
        self.invalidates.get_or_insert_with(Vec::new).push(tool.into());
        self
    }

    /// Stop prefetching after `n` empty results in a row.
    pub fn fail_fast_after(mut self, n: u32) -> Self {
        self.fail_fast_after_n = Some(n);
        self
    }

    /// The network host the calls hit.
    pub fn rate_limit_host(mut self, host: impl Into<String>) -> Self {
        self.rate_limit_host = Some(host.into());
        self
    }

    /// Allow (`true`, pure/read-only tools only) or forbid prefetch.
    pub fn speculate(mut self, speculate: bool) -> Self {
        self.speculate = Some(speculate);
        self
    }
}

// ---- conversions to and from the generated WIT types ----

impl From<SideEffect> for wit::SideEffect {
    fn from(s: SideEffect) -> Self {
        match s {
            SideEffect::Pure => wit::SideEffect::Pure,
            SideEffect::ReadOnly => wit::SideEffect::ReadOnly,
            SideEffect::MutatesLocal => wit::SideEffect::MutatesLocal,
            SideEffect::MutatesExternal => wit::SideEffect::MutatesExternal,
            SideEffect::Indeterminate => wit::SideEffect::Indeterminate,
        }
    }
}

impl From<ValueClass> for wit::ValueClass {
    fn from(v: ValueClass) -> Self {
        match v {
            ValueClass::Critical => wit::ValueClass::Critical,
            ValueClass::Supporting => wit::ValueClass::Supporting,
            ValueClass::Optional => wit::ValueClass::Optional,
            ValueClass::AuditOnly => wit::ValueClass::AuditOnly,
        }
    }
}

impl From<CostModel> for wit::CostModel {
    fn from(c: CostModel) -> Self {
        wit::CostModel {
            typical_kb: c.typical_kb,
            max_kb: c.max_kb,
            latency_ms_p50: c.latency_ms_p50,
            dollars: c.dollars,
            freshness_ttl_s: c.freshness_ttl_s,
        }
    }
}

impl From<FieldGroup> for wit::FieldGroup {
    fn from(g: FieldGroup) -> Self {
        wit::FieldGroup {
            name: g.name,
            fields: g.fields,
            estimated_value: g.estimated_value,
            default_include: g.default_include,
        }
    }
}

impl From<FollowUpLink> for wit::FollowUpLink {
    fn from(l: FollowUpLink) -> Self {
        wit::FollowUpLink {
            tool: l.tool,
            probability: l.probability,
            projection: l.projection,
            projection_arg: l.projection_arg,
        }
    }
}

impl From<wit::FollowUpLink> for FollowUpLink {
    fn from(l: wit::FollowUpLink) -> Self {
        FollowUpLink {
            tool: l.tool,
            probability: l.probability,
            projection: l.projection,
            projection_arg: l.projection_arg,
        }
    }
}

fn map_vec<A, B: From<A>>(v: Option<Vec<A>>) -> Option<Vec<B>> {
    v.map(|v| v.into_iter().map(B::from).collect())
}

impl From<ValueModel> for wit::ToolValueModel {
    fn from(m: ValueModel) -> Self {
        wit::ToolValueModel {
            value_class: m.value_class.map(Into::into),
            side_effect: m.side_effect.map(Into::into),
            cost: m.cost.map(Into::into),
            field_groups: map_vec(m.field_groups),
            follow_ups: map_vec(m.follow_ups),
            invalidates: m.invalidates,
            fail_fast_after_n: m.fail_fast_after_n,
            rate_limit_host: m.rate_limit_host,
            speculate: m.speculate,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builder_sets_only_what_is_asked() {
        let m = ValueModel::new().latency_ms_p50(450).critical();
        assert_eq!(m.value_class, Some(ValueClass::Critical));
        assert_eq!(m.side_effect, None);
        let cost = m.cost.clone().unwrap();
        assert_eq!(cost.latency_ms_p50, Some(450));
        assert_eq!(cost.typical_kb, None);
        let w: wit::ToolValueModel = m.into();
        assert!(w.follow_ups.is_none());
        assert_eq!(w.cost.unwrap().latency_ms_p50, Some(450));
    }

    #[test]
    fn follow_up_projection() {
        let l = FollowUpLink::new("get_issue", 0.55).projecting("key", "key");
        assert_eq!(l.projection.as_deref(), Some("key"));
        assert_eq!(l.projection_arg.as_deref(), Some("key"));
        let back: FollowUpLink = wit::FollowUpLink::from(l.clone()).into();
        assert_eq!(back, l);
    }
}
