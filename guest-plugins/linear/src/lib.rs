//! Linear enricher: adapts the issue-tracker tools to Linear.
//!
//! Schema: create and update lose `issueType` and gain a priority enum and
//! descriptions for Linear's conventions (a project is a UUID; `status`
//! takes precedence over `state`; `parentId: "none"` detaches the parent);
//! `get_issues` loses tracker queries and gains `stateCategory` and
//! `labelsOperator`. With the team's workflow states in config
//! (`states = ["Backlog", "Todo", ...]`), `status` becomes an enum of them.
//! Arguments pass through unchanged.
//!
//! Value models: issue list → issue → comments are read-only and prefetched
//! (the list's `key`s, Linear identifiers like `ENG-12`, projected into the
//! follow-ups' `key`); each write names the reads it makes stale. Every call
//! goes to the configured API, whose host is the rate-limit host.
//!
//! The same component runs the tools (`tools`). Config: `base_url` (default
//! `https://api.linear.app`), `team` (a team key such as `ENG`: where issues
//! are created, and the scope of lists, statuses and cycles), `states`.

mod tools;

use std::cell::RefCell;

use provider_kit::api::{self, Api};
use provider_kit::{field, is_write, items, project, write_model};
use serde::Deserialize;
use toolhost_sdk::{Args, Enricher, FollowUpLink, Plugin, Schema, Value, ValueModel, json, serde_json};

const PUBLIC_API: &str = "https://api.linear.app";

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Config {
    #[serde(default)]
    states: Vec<String>,
    #[serde(default)]
    team: Option<String>,
}

struct Linear {
    config: Config,
    api: Api,
    /// The API's host, for per-host prefetch caps.
    host: String,
    /// The configured team's id, looked up once (team ids never change).
    team_id: RefCell<Option<String>>,
}

impl Plugin for Linear {
    fn new(config: &Value) -> Result<Self, String> {
        let base = api::base_url("Linear", config, PUBLIC_API)?;
        let mut rest = config.clone();
        if let Some(map) = rest.as_object_mut() {
            map.remove("base_url");
        }
        let config: Config = serde_json::from_value(rest).map_err(|e| format!("Linear: config: {e}"))?;
        if config.team.as_deref().is_some_and(|t| t.trim().is_empty()) {
            return Err("Linear: config `team` must be a team key such as `ENG`".into());
        }
        Ok(Linear {
            config,
            host: api::host_of(&base),
            api: Api {
                provider: "Linear",
                base,
                secret: "linear",
                needs: "a personal API key (Settings → Security & access) with read and write access, \
                        sent as `Authorization: <key>`",
                headers: Vec::new(),
            },
            team_id: RefCell::new(None),
        })
    }
}

impl Enricher for Linear {
    fn supported_categories(&self) -> Vec<String> {
        vec!["issue_tracker".into()]
    }

    fn enrich_schema(&self, tool: &str, schema: &mut Schema<'_>) -> Result<(), String> {
        let states = &self.config.states;
        match tool {
            "create_issue" | "update_issue" => {
                schema.remove_params(&["issueType"]);
                // An enricher before this one (GitHub's, ClickUp's) may have
                // removed any of these: only what is still there is adapted.
                if schema.has_property("priority") {
                    schema.set_enum("priority", ["urgent", "high", "medium", "low", "none"])?;
                    schema
                        .set_description("priority", "Linear priority: urgent, high, medium, low, or none")?;
                }
                if schema.has_property("projectId") {
                    schema.set_description("projectId", "Linear project id (a UUID)")?;
                }
                if schema.has_property("parentId") {
                    schema.set_description(
                        "parentId",
                        "Parent issue identifier (e.g. ENG-12); \"none\" detaches the parent",
                    )?;
                }
                if schema.has_property("status") {
                    schema.set_description("status", "Workflow state name; takes precedence over `state`")?;
                    if !states.is_empty() {
                        schema.set_enum("status", states)?;
                    }
                }
            }
            "get_issues" => {
                schema.remove_params(&["projectKey", "nativeQuery"]);
                let categories = ["backlog", "unstarted", "started", "completed", "canceled"];
                schema.add_enum_param("stateCategory", "Filter by workflow state type", categories)?;
                schema.add_enum_param(
                    "labelsOperator",
                    "Match all labels (and) or any (or)",
                    ["and", "or"],
                )?;
                if !states.is_empty() && schema.has_property("status") {
                    schema.set_description(
                        "status",
                        &format!("Workflow state name, one of: {}", states.join(", ")),
                    )?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    // Linear takes the catalog's arguments as they are.
    fn transforms_args(&self, _tool: &str) -> bool {
        false
    }

    fn value_model(&self, tool: &str) -> Option<ValueModel> {
        let link = |to: &str, p: f32| FollowUpLink::new(to, p).projecting("key", "key");
        let read = || ValueModel::read_only().rate_limit_host(&self.host);
        let write = |stale: &[&str]| {
            stale
                .iter()
                .fold(write_model().supporting().rate_limit_host(&self.host), |m, t| {
                    m.invalidates(*t)
                })
        };
        Some(match tool {
            "get_issues" => read()
                .supporting()
                .typical_kb(3.0)
                .ttl_s(60)
                .follow_up(link("get_issue", 0.50))
                .follow_up(link("get_issue_comments", 0.40)),
            "get_issue" => read()
                .critical()
                .typical_kb(1.2)
                .follow_up(link("get_issue_comments", 0.50)),
            "get_issue_comments" => read().critical().typical_kb(2.0).max_kb(20.0),
            "create_issue" => write(&["get_issues"]),
            "update_issue" => write(&["get_issues", "get_issue", "get_issue_relations"]),
            "add_issue_comment" => write(&["get_issue_comments", "get_issue"]),
            "link_issues" | "unlink_issues" => write(&["get_issue_relations", "get_issue"]),
            "assign_to_sprint" => write(&["get_issues", "get_issue", "get_board_sprints"]),
            t if is_write(t) => write_model().rate_limit_host(&self.host),
            t if t.starts_with("get_") => read(),
            _ => return None,
        })
    }

    fn project_args(&self, prev_tool: &str, prev_result: &Value, link: &FollowUpLink) -> Option<Vec<Value>> {
        if !link.tool.starts_with("get_") {
            return None;
        }
        match prev_tool {
            "get_issues" => Some(project(items(prev_result, &["issues", "items"]), "key", |i| {
                field(i, "key").or_else(|| field(i, "identifier"))
            })),
            "get_issue" => Some(vec![json!({"key": field(prev_result, "key")?})]),
            _ => None,
        }
    }

    fn rate_limit_host(&self, _tool: &str, _args: &Args<'_>) -> Option<String> {
        Some(self.host.clone())
    }
}

toolhost_sdk::export_plugin!(Linear);
