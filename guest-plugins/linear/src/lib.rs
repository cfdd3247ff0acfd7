//! Linear enricher: adapts the issue-tracker tools to Linear.
//!
//! Schema: create and update lose `issueType` and gain a priority enum and
//! descriptions for Linear's conventions (a project is a UUID; `status`
//! takes precedence over `state`; `parentId: "none"` detaches the parent);
//! `get_issues` loses tracker queries and gains `stateCategory` and
//! `labelsOperator`. With the team's workflow states in config
//! (`states = ["Backlog", "Todo", ...]`), `status` becomes an enum of them.
//! Arguments pass through unchanged.

use provider_kit::{is_write, write_model};
use serde::Deserialize;
use toolhost_sdk::{Enricher, Plugin, Schema, Value, ValueModel, serde_json};

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Config {
    #[serde(default)]
    states: Vec<String>,
}

struct Linear {
    config: Config,
}

impl Plugin for Linear {
    fn new(config: &Value) -> Result<Self, String> {
        let config: Config = serde_json::from_value(config.clone()).map_err(|e| format!("config: {e}"))?;
        Ok(Linear { config })
    }
}

impl Enricher for Linear {
    fn supported_categories(&self) -> Vec<String> {
        vec!["issue_tracker".into()]
    }

    fn enrich_schema(&self, tool: &str, schema: &mut Schema<'_>) {
        let states = &self.config.states;
        match tool {
            "create_issue" | "update_issue" => {
                schema.remove_params(&["issueType"]);
                let _ = schema.set_enum("priority", ["urgent", "high", "medium", "low", "none"]);
                let _ =
                    schema.set_description("priority", "Linear priority: urgent, high, medium, low, or none");
                let _ = schema.set_description("projectId", "Linear project id (a UUID)");
                let _ = schema.set_description(
                    "parentId",
                    "Parent issue identifier (e.g. ENG-12); \"none\" detaches the parent",
                );
                let _ =
                    schema.set_description("status", "Workflow state name; takes precedence over `state`");
                if !states.is_empty() {
                    let _ = schema.set_enum("status", states);
                }
            }
            "get_issues" => {
                schema.remove_params(&["projectKey", "nativeQuery"]);
                let categories = ["backlog", "unstarted", "started", "completed", "canceled"];
                let _ = schema.add_enum_param("stateCategory", "Filter by workflow state type", categories);
                let _ = schema.add_enum_param(
                    "labelsOperator",
                    "Match all labels (and) or any (or)",
                    ["and", "or"],
                );
                if !states.is_empty() {
                    let _ = schema.set_description(
                        "status",
                        &format!("Workflow state name, one of: {}", states.join(", ")),
                    );
                }
            }
            _ => {}
        }
    }

    fn value_model(&self, tool: &str) -> Option<ValueModel> {
        if is_write(tool) {
            Some(write_model())
        } else {
            tool.starts_with("get_").then(ValueModel::read_only)
        }
    }
}

toolhost_sdk::export_enricher!(Linear);
