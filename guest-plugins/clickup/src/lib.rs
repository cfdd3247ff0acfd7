//! ClickUp enricher: adapts the issue-tracker and epics tools to one ClickUp
//! list, from metadata in the plugin's config (its statuses and custom
//! fields).
//!
//! Schema: removes issue types, components and projects (and tracker queries
//! on `get_issues`, which gains `stateCategory` and `labelsOperator`);
//! `status` becomes an enum of the list's statuses; `priority` becomes
//! urgent | high | normal | low on the tools that take a priority (the
//! reference injected it into every tool); link types; custom fields become
//! typed `cf_*` parameters on create and update.
//!
//! Arguments: priority names become ClickUp's 1..4 (unknown → 3), epic
//! tools copy `goalId` into `cf_goals`, and `cf_*` parameters go back to
//! `customFields [{id, value}]`, with dropdown names turned into their
//! `orderindex` and label names into their ids.
//!
//! The same component runs the tools (`tools`) against ClickUp's API v2.
//! Config: `list_id` (the list whose tasks are the issues), `base_url`
//! (default `https://api.clickup.com/api/v2`), `statuses`, `custom_fields`,
//! `sprint_folder_id` (the folder whose lists are the sprints),
//! `epics_list_id` (the list whose tasks are the epics).
//! Every call goes to the configured API, whose host is the rate-limit host.

mod assets;
mod sprints;
mod tools;

use provider_kit::api::{self, Api};
use provider_kit::{field, is_write, items, project, write_model};
use serde::Deserialize;
use toolhost_sdk::{
    Args, Enricher, FollowUpLink, Plugin, Schema, Value, ValueModel, json, sanitize_field_name, serde_json,
};

const PUBLIC_API: &str = "https://api.clickup.com/api/v2";
const PRIORITIES: [&str; 4] = ["urgent", "high", "normal", "low"];

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    #[serde(default)]
    statuses: Vec<String>,
    #[serde(default)]
    custom_fields: Vec<CustomField>,
    #[serde(default)]
    list_id: Option<String>,
    /// The Sprints ClickApp's folder, whose lists are the sprints.
    #[serde(default)]
    sprint_folder_id: Option<String>,
    /// The list whose tasks are the epics.
    #[serde(default)]
    epics_list_id: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CustomField {
    id: String,
    name: String,
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    options: Vec<FieldOption>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FieldOption {
    #[serde(default)]
    id: Option<String>,
    name: String,
    #[serde(default)]
    orderindex: Option<u32>,
}

/// How a ClickUp field type is offered to the model; `None` skips fields of
/// types it cannot fill.
fn param_schema(f: &CustomField) -> Option<Value> {
    let names: Vec<&str> = f.options.iter().map(|o| o.name.as_str()).collect();
    let d = &f.name;
    Some(match f.kind.as_str() {
        "drop_down" => json!({"type": "string", "enum": names, "description": d}),
        "labels" => json!({"type": "array", "items": {"type": "string", "enum": names}, "description": d}),
        "number" | "currency" => json!({"type": "number", "description": d}),
        "checkbox" => json!({"type": "boolean", "description": d}),
        "unknown" | "" => return None,
        _ => json!({"type": "string", "description": d}),
    })
}

struct ClickUp {
    config: Config,
    api: Api,
    /// The API's host, for per-host prefetch caps.
    host: String,
}

impl Plugin for ClickUp {
    fn new(config: &Value) -> Result<Self, String> {
        let base = api::base_url("ClickUp", config, PUBLIC_API)?;
        let mut rest = config.clone();
        if let Some(map) = rest.as_object_mut() {
            map.remove("base_url");
        }
        let config: Config = serde_json::from_value(rest).map_err(|e| format!("config: {e}"))?;
        for f in &config.custom_fields {
            match f.kind.as_str() {
                "drop_down" if f.options.iter().any(|o| o.orderindex.is_none()) => {
                    return Err(format!(
                        "config: dropdown `{}` needs an `orderindex` on every option",
                        f.name
                    ));
                }
                "labels" if f.options.iter().any(|o| o.id.is_none()) => {
                    return Err(format!(
                        "config: labels field `{}` needs an `id` on every option",
                        f.name
                    ));
                }
                _ => {}
            }
        }
        Ok(ClickUp {
            config,
            host: api::host_of(&base),
            api: Api {
                provider: "ClickUp",
                base,
                secret: "clickup",
                needs: "a personal API token (`pk_...`, Settings → Apps) of a member of the list's \
                        workspace, sent as `Authorization: <token>`",
                headers: Vec::new(),
            },
        })
    }
}

impl ClickUp {
    fn provider_value(&self, f: &CustomField, value: Value) -> Result<Value, String> {
        let find = |name: &Value| -> Result<&FieldOption, String> {
            let name = name.as_str().unwrap_or_default();
            f.options.iter().find(|o| o.name == name).ok_or_else(|| {
                let names: Vec<&str> = f.options.iter().map(|o| o.name.as_str()).collect();
                format!(
                    "{}: unknown option '{name}' (expected {})",
                    f.name,
                    names.join(", ")
                )
            })
        };
        Ok(match f.kind.as_str() {
            "drop_down" => json!(find(&value)?.orderindex),
            "labels" => {
                let names = match value {
                    Value::Array(names) => names,
                    single => vec![single],
                };
                Value::Array(
                    names
                        .iter()
                        .map(|n| find(n).map(|o| json!(o.id)))
                        .collect::<Result<_, _>>()?,
                )
            }
            _ => value,
        })
    }
}

impl Enricher for ClickUp {
    fn supported_categories(&self) -> Vec<String> {
        vec!["issue_tracker".into(), "epics".into()]
    }

    fn enrich_schema(&self, tool: &str, schema: &mut Schema<'_>) -> Result<(), String> {
        schema.remove_params(&["issueType", "components", "projectId"]);
        if tool == "get_issues" {
            schema.remove_params(&["projectKey", "nativeQuery"]);
            let categories = ["backlog", "todo", "in_progress", "done", "cancelled"];
            schema.add_enum_param("stateCategory", "Filter by the status category", categories)?;
            schema.add_enum_param(
                "labelsOperator",
                "Match all labels (and) or any (or)",
                ["and", "or"],
            )?;
        }
        if !self.config.statuses.is_empty() && schema.has_property("status") {
            schema.set_enum("status", &self.config.statuses)?;
        }
        if schema.has_property("priority") {
            schema.set_enum("priority", PRIORITIES)?;
        }
        if matches!(tool, "link_issues" | "unlink_issues") && schema.has_property("link_type") {
            schema.set_enum("link_type", ["blocks", "blocked_by", "relates_to", "subtask"])?;
        }
        if matches!(tool, "create_issue" | "update_issue") {
            schema.remove_params(&["customFields"]);
            for f in &self.config.custom_fields {
                if let Some(s) = param_schema(f) {
                    schema.add_property(&sanitize_field_name(&f.name), &s)?;
                }
            }
        }
        Ok(())
    }

    /// Epics carry their goal as a custom field; issues take the priority
    /// as a level and the custom fields `enrich_schema` added as one list.
    /// No other tool's arguments are touched.
    fn transforms_args(&self, tool: &str) -> bool {
        matches!(
            tool,
            "create_epic" | "update_epic" | "create_issue" | "update_issue"
        )
    }

    fn transform_args(&self, tool: &str, args: &mut Args<'_>) -> Result<(), String> {
        if !self.transforms_args(tool) {
            return Ok(());
        }
        if matches!(tool, "create_epic" | "update_epic")
            && let Some(goal) = args.get("goalId")
        {
            args.set("cf_goals", &goal)?;
        }
        if let Some(priority) = args.get("priority")
            && priority.is_string()
        {
            let name = priority.as_str().unwrap_or_default().to_ascii_lowercase();
            let level = PRIORITIES.iter().position(|p| *p == name).map_or(3, |i| i + 1);
            args.set("priority", &json!(level))?;
        }
        let mut custom = Vec::new();
        for f in &self.config.custom_fields {
            if let Some(value) = args.remove(&sanitize_field_name(&f.name))? {
                custom.push(json!({"id": f.id, "value": self.provider_value(f, value)?}));
            }
        }
        if !custom.is_empty() {
            args.set("customFields", &Value::Array(custom))?;
        }
        Ok(())
    }

    fn value_model(&self, tool: &str) -> Option<ValueModel> {
        let read = || ValueModel::read_only().rate_limit_host(&self.host);
        let write = |stale: &[&str]| {
            stale
                .iter()
                .fold(write_model().rate_limit_host(&self.host), |m, t| {
                    m.invalidates(*t)
                })
        };
        let link = |to: &str, p: f32| FollowUpLink::new(to, p).projecting("id", "key");
        Some(match tool {
            "get_issues" => read()
                .supporting()
                .follow_up(link("get_issue", 0.50))
                .follow_up(link("get_issue_comments", 0.40)),
            "get_issue" => read().critical().follow_up(link("get_issue_comments", 0.50)),
            "get_issue_comments" => read().critical(),
            "create_issue" => write(&["get_issues"]),
            "update_issue" => write(&["get_issues", "get_issue"]),
            "add_issue_comment" => write(&["get_issue_comments"]),
            "link_issues" | "unlink_issues" => write(&["get_issue_relations", "get_issue"]),
            "upload_asset" => write(&["get_assets", "get_issue"]),
            "download_asset" => read().critical(),
            "assign_to_sprint" => write(&["get_board_sprints", "get_issue", "get_issues"]),
            "create_epic" => write(&["get_epics"]),
            "update_epic" => write(&["get_epics", "get_epic"]),
            t if is_write(t) => write_model().rate_limit_host(&self.host),
            t if t.starts_with("get_") => read(),
            _ => return None,
        })
    }

    fn project_args(&self, prev_tool: &str, prev_result: &Value, link: &FollowUpLink) -> Option<Vec<Value>> {
        let key = |i: &Value| field(i, "key").or_else(|| field(i, "id"));
        match (prev_tool, link.tool.as_str()) {
            ("get_issues", "get_issue" | "get_issue_comments") => Some(project(
                items(prev_result, &["issues", "tasks", "items"]),
                "key",
                key,
            )),
            ("get_issue", "get_issue_comments") => Some(vec![json!({"key": key(prev_result)?})]),
            _ => None,
        }
    }

    fn rate_limit_host(&self, _tool: &str, _args: &Args<'_>) -> Option<String> {
        Some(self.host.clone())
    }
}

toolhost_sdk::export_plugin!(ClickUp);
