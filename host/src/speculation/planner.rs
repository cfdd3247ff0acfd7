//! Which follow-up calls to make ahead of time after a tool call.
//!
//! Candidates are the follow-up links of the tool that just ran. Each is
//! declined with a recorded reason or admitted:
//!
//! - below the probability floor (default 0.3: the native chains glob → read
//!   0.32 and grep → read 0.35 sit just above it);
//! - a self-loop whose arguments are not read from the result (the next
//!   query of a search cannot be guessed; a tree walk's next node can);
//! - a target that is not `pure` or `read-only`, or says `speculate = false`:
//!   never, whatever an override says;
//! - over the token budget, by greedy admission in order of density =
//!   value (critical 1, supporting 0.5, optional 0.2) × intent boost (capped
//!   at 2.5×) × cost penalty ÷ estimated tokens; audit-only targets are free.
//!
//! A target the agent already called earlier is not skipped: whether it is
//! already cached is the cache's call. The planner is
//! pure: it reads value models and returns a plan.

use serde::Serialize;

use crate::value_model::{FollowUpLink, ValueClass, ValueModel, ValueModels};

/// Planner settings.
#[derive(Debug, Clone)]
pub struct PlannerOptions {
    pub min_probability: f32,
    pub budget_tokens: u32,
    pub bytes_per_token: f32,
    /// Latency at or above which a candidate's density is halved.
    pub latency_knee_ms: Option<u32>,
    /// Cost per call at or above which a candidate's density is halved.
    pub dollar_knee: Option<f32>,
}

impl Default for PlannerOptions {
    fn default() -> Self {
        Self {
            min_probability: 0.3,
            budget_tokens: 8000,
            bytes_per_token: 4.0,
            latency_knee_ms: None,
            dollar_knee: None,
        }
    }
}

/// Why a candidate was not planned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DeclineReason {
    BelowFloor,
    SelfLoop,
    NotSpeculatable,
    BudgetExceeded,
    /// Set by the engine, not the planner: no arguments could be projected.
    NoArguments,
    /// Set by the engine: the global or per-host in-flight cap was reached.
    Capped,
    /// Set by the engine: before-call, validation or a transform refused it.
    Refused,
    /// Set by the engine: the configuration does not switch speculation on
    /// for this tool or its host.
    NotEnabled,
    /// Set by the engine: this candidate's rank is rarely called (its
    /// learned probability is under the floor).
    Unlikely,
    /// Set by the engine: the host claimed for the call is not one the
    /// tool's plugin is granted, so the claim is not believed.
    NotGranted,
    /// Set by the engine: the prefetches not used yet already add their
    /// share of backend calls (`max_extra_calls`).
    ExtraCalls,
    /// Set by the engine: its expected saving (the chance it is called ×
    /// its tool's latency) is below its cost (`call_cost_ms`, raised as the
    /// budget of extra calls fills).
    NotWorthIt,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Declined {
    pub tool: String,
    pub reason: DeclineReason,
}

/// One call to make ahead of time.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedCall {
    pub link: FollowUpLink,
    pub tokens: u32,
    pub density: f64,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Plan {
    pub calls: Vec<PlannedCall>,
    pub declined: Vec<Declined>,
}

fn value_score(class: ValueClass) -> f64 {
    match class {
        ValueClass::Critical => 1.0,
        ValueClass::Supporting => 0.5,
        ValueClass::Optional => 0.2,
        ValueClass::AuditOnly => 0.0,
    }
}

/// 1 + the value of each opt-in field group whose fields mention an intent
/// keyword, capped at 2.5.
fn intent_boost(model: &ValueModel, intent: &[String]) -> f64 {
    let mut boost = 1.0;
    for group in model.field_groups.iter().flat_map(|g| g.values()) {
        let hit = !group.default_include
            && group.fields.iter().any(|f| {
                intent
                    .iter()
                    .any(|k| f.to_lowercase().contains(&k.to_lowercase()))
            });
        if hit {
            boost += f64::from(group.estimated_value);
        }
    }
    boost.min(2.5)
}

/// Plan the follow-ups of `tool`, which just ran.
pub fn plan(models: &ValueModels, tool: &str, intent: &[String], opts: &PlannerOptions) -> Plan {
    let mut plan = Plan::default();
    let Some(links) = models.get(tool).and_then(|m| m.follow_ups.as_ref()) else {
        return plan;
    };
    let mut candidates = Vec::new();
    for link in links {
        let decline = |reason| Declined {
            tool: link.tool.clone(),
            reason,
        };
        let target = models.get(&link.tool).cloned().unwrap_or_default();
        if link.probability < opts.min_probability {
            plan.declined.push(decline(DeclineReason::BelowFloor));
        } else if link.tool == tool && link.projection.is_none() {
            plan.declined.push(decline(DeclineReason::SelfLoop));
        } else if !target.is_speculatable() {
            plan.declined.push(decline(DeclineReason::NotSpeculatable));
        } else {
            candidates.push((link.clone(), target));
        }
    }
    let mut scored: Vec<PlannedCall> = candidates
        .into_iter()
        .map(|(link, target)| {
            let tokens = ((target.typical_kb() * 1024.0) / opts.bytes_per_token)
                .round()
                .max(1.0) as u32;
            let density = if target.value_class() == ValueClass::AuditOnly {
                f64::INFINITY
            } else {
                let mut penalty = 1.0;
                if opts
                    .latency_knee_ms
                    .zip(target.cost.latency_ms_p50)
                    .is_some_and(|(knee, l)| l >= knee)
                {
                    penalty *= 0.5;
                }
                if opts
                    .dollar_knee
                    .zip(target.cost.dollars)
                    .is_some_and(|(knee, d)| d >= knee)
                {
                    penalty *= 0.5;
                }
                value_score(target.value_class()) * intent_boost(&target, intent) * penalty
                    / f64::from(tokens)
            };
            let tokens = if target.value_class() == ValueClass::AuditOnly {
                0
            } else {
                tokens
            };
            PlannedCall {
                link,
                tokens,
                density,
            }
        })
        .collect();
    // Stable: equal densities keep the links' declared order.
    scored.sort_by(|a, b| b.density.total_cmp(&a.density));
    let mut left = opts.budget_tokens;
    for call in scored {
        if call.tokens <= left {
            left -= call.tokens;
            plan.calls.push(call);
        } else {
            plan.declined.push(Declined {
                tool: call.link.tool.clone(),
                reason: DeclineReason::BudgetExceeded,
            });
        }
    }
    plan
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::value_model::{CostModel, FieldGroup, Layer, SideEffect};

    fn model(class: ValueClass, effect: SideEffect, kb: f32, links: &[(&str, f32)]) -> ValueModel {
        ValueModel {
            value_class: Some(class),
            side_effect: Some(effect),
            cost: CostModel {
                typical_kb: Some(kb),
                ..CostModel::default()
            },
            follow_ups: Some(
                links
                    .iter()
                    .map(|(t, p)| FollowUpLink {
                        tool: (*t).into(),
                        probability: *p,
                        projection: None,
                        projection_arg: None,
                    })
                    .collect(),
            ),
            ..ValueModel::default()
        }
    }

    fn models(entries: Vec<(&str, ValueModel)>) -> ValueModels {
        let mut m = ValueModels::default();
        for (tool, model) in entries {
            m.add(tool, Layer::BuiltIn, &model);
        }
        m
    }

    fn planned(p: &Plan) -> Vec<&str> {
        p.calls.iter().map(|c| c.link.tool.as_str()).collect()
    }

    fn declined(p: &Plan, reason: DeclineReason) -> Vec<&str> {
        p.declined
            .iter()
            .filter(|d| d.reason == reason)
            .map(|d| d.tool.as_str())
            .collect()
    }

    #[test]
    fn the_native_chains_fire() {
        let m = crate::tools::facts::value_models();
        assert_eq!(
            planned(&plan(&m, "glob", &[], &PlannerOptions::default())),
            ["read"]
        );
        assert_eq!(
            planned(&plan(&m, "grep", &[], &PlannerOptions::default())),
            ["read"]
        );
        // The chains sit just above the default floor: one a little higher
        // declines glob → read (0.32).
        let higher = PlannerOptions {
            min_probability: 0.33,
            ..PlannerOptions::default()
        };
        let p = plan(&m, "glob", &[], &higher);
        assert_eq!(declined(&p, DeclineReason::BelowFloor), ["read"]);
    }

    #[test]
    fn unsafe_targets_are_never_planned_even_if_forced() {
        use SideEffect::*;
        let mut forced = model(ValueClass::Critical, MutatesExternal, 1.0, &[]);
        forced.speculate = Some(true);
        let m = models(vec![
            (
                "list",
                model(
                    ValueClass::Critical,
                    ReadOnly,
                    1.0,
                    &[("create", 0.9), ("unknown", 0.9), ("list", 0.9)],
                ),
            ),
            ("create", forced),
        ]);
        let p = plan(&m, "list", &[], &PlannerOptions::default());
        assert!(p.calls.is_empty());
        assert_eq!(
            declined(&p, DeclineReason::NotSpeculatable),
            ["create", "unknown"]
        );
        assert_eq!(declined(&p, DeclineReason::SelfLoop), ["list"]);
    }

    #[test]
    fn a_tree_walk_reads_its_next_node_from_the_result_and_is_planned() {
        let mut walk = model(
            ValueClass::Critical,
            SideEffect::ReadOnly,
            1.0,
            &[("children", 0.6)],
        );
        let link = &mut walk.follow_ups.as_mut().unwrap()[0];
        link.projection = Some("id".into());
        link.projection_arg = Some("block_id".into());
        let p = plan(
            &models(vec![("children", walk)]),
            "children",
            &[],
            &PlannerOptions::default(),
        );
        assert_eq!(planned(&p), ["children"]);
    }

    #[test]
    fn greedy_admission_by_density_within_budget() {
        use SideEffect::*;
        let m = models(vec![
            (
                "a",
                model(
                    ValueClass::Critical,
                    ReadOnly,
                    1.0,
                    &[("big", 0.9), ("small", 0.5), ("audit", 0.4)],
                ),
            ),
            ("big", model(ValueClass::Critical, ReadOnly, 30.0, &[])),
            ("small", model(ValueClass::Supporting, ReadOnly, 2.0, &[])),
            ("audit", model(ValueClass::AuditOnly, Pure, 50.0, &[])),
        ]);
        let opts = PlannerOptions {
            budget_tokens: 4000,
            ..PlannerOptions::default()
        };
        let p = plan(&m, "a", &[], &opts);
        assert_eq!(
            planned(&p),
            ["audit", "small"],
            "audit-only first and free; big does not fit after small"
        );
        assert_eq!(p.calls[0].tokens, 0);
        assert_eq!(declined(&p, DeclineReason::BudgetExceeded), ["big"]);
        let zero = PlannerOptions {
            budget_tokens: 0,
            ..PlannerOptions::default()
        };
        assert_eq!(planned(&plan(&m, "a", &[], &zero)), ["audit"]);
    }

    #[test]
    fn intent_boost_and_cost_penalty_reorder() {
        use SideEffect::*;
        let mut slow = model(ValueClass::Critical, ReadOnly, 1.0, &[]);
        slow.cost.latency_ms_p50 = Some(6000);
        let mut detailed = model(ValueClass::Critical, ReadOnly, 1.0, &[]);
        let group = FieldGroup {
            fields: vec!["author.email".into()],
            estimated_value: 3.0,
            default_include: false,
        };
        detailed.field_groups = Some(BTreeMap::from([("nice_to_have".into(), group)]));
        let m = models(vec![
            (
                "a",
                model(
                    ValueClass::Critical,
                    ReadOnly,
                    1.0,
                    &[("slow", 0.5), ("fast", 0.5), ("detailed", 0.5)],
                ),
            ),
            ("slow", slow),
            ("fast", model(ValueClass::Critical, ReadOnly, 1.0, &[])),
            ("detailed", detailed),
        ]);
        let cost_aware = PlannerOptions {
            latency_knee_ms: Some(5000),
            ..PlannerOptions::default()
        };
        let p = plan(&m, "a", &["email".into()], &cost_aware);
        assert_eq!(planned(&p), ["detailed", "fast", "slow"]);
        assert!(
            (p.calls[0].density / p.calls[1].density - 2.5).abs() < 1e-9,
            "the boost is capped at 2.5x"
        );
        assert!(
            (p.calls[1].density / p.calls[2].density - 2.0).abs() < 1e-9,
            "slow is halved"
        );
    }
}
