//! Jira enricher: adapts the issue-tracker (and, when structures exist,
//! jira-structure) tools to one Jira instance, from metadata in the plugin's
//! config (projects, issue types, priorities, components, custom fields,
//! link types, structures), which a user writes by hand or a tool generates.
//!
//! Schema: removes `points` (and `stateCategory` on `get_issues`); one
//! project removes `projectId`, several make it a required enum of keys;
//! enums for issue types (no sub-task types, sorted), priorities (sorted,
//! then the aliases urgent, high, normal, low whose Jira name the site has:
//! arguments are validated before they are transformed), components and link types; custom
//! fields become typed `cf_*` parameters on create and update, except the
//! well-known Epic Link (`epicKey`), Sprint (`sprintId`) and Epic Name
//! (`epicName`). A field whose shape differs between projects is `anyOf`.
//!
//! Arguments: on create and update, priority aliases become Jira names, and
//! `cf_*` and alias parameters go back to `customFields {customfield_N: v}`
//! for the project named in the arguments (else the first), with option
//! names turned into `{id}` (and arrays into `[{id}]`). An unknown option is
//! refused with the options there are.

use std::collections::BTreeMap;

mod agile;
mod assets;
mod epics;
mod structure;
mod tools;

use provider_kit::api::{self, Api};
use provider_kit::{field, is_write, items, project, write_model};
use serde::Deserialize;
use toolhost_sdk::{
    Args, EditError, Enricher, FollowUpLink, Plugin, Schema, Value, ValueModel, json, sanitize_field_name,
    serde_json,
};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    #[serde(default)]
    host: Option<String>,
    #[serde(default)]
    base_url: Option<Value>,
    projects: Vec<Project>,
    #[serde(default)]
    priorities: Vec<String>,
    #[serde(default)]
    link_types: Vec<String>,
    #[serde(default)]
    structures: Vec<Structure>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Project {
    key: String,
    #[serde(default)]
    issue_types: Vec<IssueType>,
    #[serde(default)]
    components: Vec<String>,
    #[serde(default)]
    custom_fields: Vec<CustomField>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct IssueType {
    name: String,
    #[serde(default)]
    subtask: bool,
}

#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields)]
struct CustomField {
    id: String,
    name: String,
    #[serde(rename = "type")]
    kind: FieldKind,
    #[serde(default)]
    options: Vec<FieldOption>,
}

#[derive(Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
enum FieldKind {
    Select,
    MultiSelect,
    Number,
    Date,
    Datetime,
    Text,
}

#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields)]
struct FieldOption {
    id: String,
    name: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Structure {
    id: i64,
    name: String,
    #[serde(default)]
    description: String,
}

/// Jira names behind the priority aliases models use.
const PRIORITY_ALIASES: [(&str, &str); 4] = [
    ("urgent", "Highest"),
    ("high", "High"),
    ("normal", "Medium"),
    ("low", "Low"),
];

struct Jira {
    config: Config,
    /// The site's API; `None` when neither `base_url` nor `host` is set (the
    /// enricher still works, the tools say what is missing).
    api: Option<Api>,
    /// The site's host, for per-host prefetch caps.
    host: Option<String>,
}

impl Plugin for Jira {
    fn new(config: &Value) -> Result<Self, String> {
        let config: Config = serde_json::from_value(config.clone()).map_err(|e| format!("config: {e}"))?;
        if config.projects.is_empty() {
            return Err("config: `projects` must list at least one project".into());
        }
        for f in config.projects.iter().flat_map(|p| &p.custom_fields) {
            let needs_options = matches!(f.kind, FieldKind::Select | FieldKind::MultiSelect);
            if needs_options && f.options.is_empty() {
                return Err(format!(
                    "config: custom field `{}` ({}) is a select without options",
                    f.name, f.id
                ));
            }
        }
        let base = match (&config.base_url, &config.host) {
            (Some(url), _) => Some(api::base_url("Jira", &json!({"base_url": url}), "")?),
            (None, Some(host)) => Some(format!("https://{host}")),
            (None, None) => None,
        };
        let host = base.as_deref().map(api::host_of);
        if let (Some(named), Some(site)) = (&config.host, &host)
            && !named.eq_ignore_ascii_case(site)
        {
            return Err(format!(
                "config: `host` ({named}) is not the host of `base_url` ({site}); leave `host` out"
            ));
        }
        let api = base.map(|base| Api {
            provider: "Jira",
            base,
            secret: "jira",
            needs: "an API token of a user who may browse (and, to write, edit) the project: \
                    the secret holds base64(email:api_token) after the `Basic ` prefix (Cloud), or a \
                    personal access token after `Bearer ` (Data Center)",
            headers: vec![("accept".into(), "application/json".into())],
        });
        Ok(Jira { config, api, host })
    }
}

/// The parameter a custom field becomes: a well-known alias, else `cf_*`.
fn param_name(field: &CustomField) -> String {
    match field.name.as_str() {
        "Epic Link" => "epicKey".into(),
        "Sprint" => "sprintId".into(),
        "Epic Name" => "epicName".into(),
        name => sanitize_field_name(name),
    }
}

fn param_schema(field: &CustomField) -> Value {
    let names: Vec<&str> = field.options.iter().map(|o| o.name.as_str()).collect();
    let description = field.name.clone();
    match (param_name(field).as_str(), field.kind) {
        ("sprintId", _) => json!({"type": "integer", "description": "Sprint id"}),
        (_, FieldKind::Select) => json!({"type": "string", "enum": names, "description": description}),
        (_, FieldKind::MultiSelect) => {
            json!({"type": "array", "items": {"type": "string", "enum": names}, "description": description})
        }
        (_, FieldKind::Number) => json!({"type": "number", "description": description}),
        (_, FieldKind::Date) => json!({"type": "string", "format": "date", "description": description}),
        (_, FieldKind::Datetime) => {
            json!({"type": "string", "format": "date-time", "description": description})
        }
        (_, FieldKind::Text) => json!({"type": "string", "description": description}),
    }
}

fn sorted_union<'a>(values: impl Iterator<Item = &'a String>) -> Vec<String> {
    let mut all: Vec<String> = values.cloned().collect();
    all.sort();
    all.dedup();
    all
}

impl Jira {
    fn enrich_issue_tool(&self, tool: &str, schema: &mut Schema<'_>) -> Result<(), EditError> {
        let projects = &self.config.projects;
        schema.remove_params(&["points"]);
        if tool == "get_issues" {
            schema.remove_params(&["stateCategory"]);
        }
        if schema.has_property("projectId") {
            if projects.len() == 1 {
                schema.remove_params(&["projectId"]);
            } else {
                let keys: Vec<&str> = projects.iter().map(|p| p.key.as_str()).collect();
                schema.set_enum("projectId", &keys)?;
                schema.set_required("projectId", true)?;
            }
        }
        let types = sorted_union(
            projects
                .iter()
                .flat_map(|p| p.issue_types.iter().filter(|t| !t.subtask).map(|t| &t.name)),
        );
        if !types.is_empty() && schema.has_property("issueType") {
            schema.set_enum("issueType", &types)?;
        }
        if !self.config.priorities.is_empty() && schema.has_property("priority") {
            let mut priorities = self.config.priorities.clone();
            priorities.sort();
            // The host validates arguments against this schema before
            // `transform_args` maps an alias to its Jira name, so the
            // aliases whose name the site has are in the enum too.
            let known = |name: &str| self.config.priorities.iter().any(|p| p == name);
            let accepted: Vec<&(&str, &str)> = PRIORITY_ALIASES.iter().filter(|(_, n)| known(n)).collect();
            priorities.extend(accepted.iter().map(|(a, _)| (*a).to_owned()));
            schema.set_enum("priority", &priorities)?;
            let aliases: Vec<String> = accepted.iter().map(|(a, n)| format!("{a}→{n}")).collect();
            schema.set_description(
                "priority",
                &format!("Issue priority. Aliases: {}", aliases.join(", ")),
            )?;
        }
        let components = sorted_union(projects.iter().flat_map(|p| &p.components));
        if !components.is_empty() && schema.has_property("components") {
            schema.set_enum("components", &components)?;
        }
        if tool == "link_issues" && !self.config.link_types.is_empty() && schema.has_property("link_type") {
            schema.set_enum("link_type", &self.config.link_types)?;
        }
        if matches!(tool, "create_issue" | "update_issue") {
            schema.remove_params(&["customFields"]);
            self.add_custom_fields(schema)?;
        }
        Ok(())
    }

    /// One parameter per custom field name; `anyOf` when projects disagree.
    fn add_custom_fields(&self, schema: &mut Schema<'_>) -> Result<(), EditError> {
        let mut shapes: BTreeMap<String, Vec<Value>> = BTreeMap::new();
        let mut order = Vec::new();
        for field in self.config.projects.iter().flat_map(|p| &p.custom_fields) {
            let name = param_name(field);
            let variants = shapes.entry(name.clone()).or_default();
            if variants.is_empty() {
                order.push(name);
            }
            let shape = param_schema(field);
            if !variants.contains(&shape) {
                variants.push(shape);
            }
        }
        for name in order {
            let variants = &shapes[&name];
            let schema_value = match variants.as_slice() {
                [one] => one.clone(),
                many => json!({"anyOf": many, "description": many[0]["description"]}),
            };
            schema.add_property(&name, &schema_value)?;
        }
        Ok(())
    }

    fn structure_description(&self) -> String {
        let known: Vec<String> = self
            .config
            .structures
            .iter()
            .map(|s| {
                if s.description.is_empty() {
                    format!("{} ({})", s.id, s.name)
                } else {
                    format!("{} ({}) — {}", s.id, s.name, s.description)
                }
            })
            .collect();
        format!("Structure id. Known structures: {}", known.join("; "))
    }

    /// The project the arguments name, else the first.
    fn project_for(&self, args: &Args<'_>) -> &Project {
        let named = args.get_str("projectId");
        self.config
            .projects
            .iter()
            .find(|p| Some(&p.key) == named.as_ref())
            .unwrap_or(&self.config.projects[0])
    }
}

fn option_id(field: &CustomField, name: &Value) -> Result<Value, String> {
    let name = name
        .as_str()
        .ok_or_else(|| format!("{}: expected an option name, got {name}", field.name))?;
    match field.options.iter().find(|o| o.name == name) {
        Some(o) => Ok(json!({"id": o.id})),
        None => {
            let names: Vec<&str> = field.options.iter().map(|o| o.name.as_str()).collect();
            Err(format!(
                "{}: unknown option '{name}' (expected {})",
                field.name,
                names.join(", ")
            ))
        }
    }
}

fn provider_value(field: &CustomField, value: Value) -> Result<Value, String> {
    match field.kind {
        FieldKind::Select => option_id(field, &value),
        FieldKind::MultiSelect => match value {
            Value::Array(names) => names
                .iter()
                .map(|n| option_id(field, n))
                .collect::<Result<Vec<_>, _>>()
                .map(Value::Array),
            single => Ok(json!([option_id(field, &single)?])),
        },
        _ => Ok(value),
    }
}

impl Enricher for Jira {
    fn supported_categories(&self) -> Vec<String> {
        let mut categories = vec!["issue_tracker".to_owned(), "epics".to_owned()];
        if !self.config.structures.is_empty() {
            categories.push("jira_structure".into());
        }
        categories
    }

    fn enrich_schema(&self, tool: &str, schema: &mut Schema<'_>) -> Result<(), String> {
        if tool.ends_with("_epic") || tool == "get_epics" {
            // Epics are plain issues in Jira: their tools take the catalog's shape.
            return Ok(());
        }
        if schema.has_property("structureId") {
            schema.set_description("structureId", &self.structure_description())?;
        } else {
            self.enrich_issue_tool(tool, schema)?;
        }
        Ok(())
    }

    // Only these map arguments back: priority aliases and custom fields.
    fn transforms_args(&self, tool: &str) -> bool {
        matches!(tool, "create_issue" | "update_issue")
    }

    fn transform_args(&self, tool: &str, args: &mut Args<'_>) -> Result<(), String> {
        if !matches!(tool, "create_issue" | "update_issue") {
            return Ok(());
        }
        if let Some(priority) = args.get_str("priority")
            && let Some((_, name)) = PRIORITY_ALIASES
                .iter()
                .find(|(alias, _)| alias.eq_ignore_ascii_case(&priority))
        {
            args.set("priority", &json!(name))?;
        }
        let fields = self.project_for(args).custom_fields.clone();
        let mut custom = match args.remove("customFields")? {
            Some(Value::Object(map)) => map,
            _ => Default::default(),
        };
        for field in &fields {
            if let Some(value) = args.remove(&param_name(field))? {
                custom.insert(field.id.clone(), provider_value(field, value)?);
            }
        }
        if !custom.is_empty() {
            args.set("customFields", &Value::Object(custom))?;
        }
        Ok(())
    }

    fn value_model(&self, tool: &str) -> Option<ValueModel> {
        let read = || {
            let model = ValueModel::read_only();
            match &self.host {
                Some(h) => model.rate_limit_host(h.clone()),
                None => model,
            }
        };
        let write = |stale: &[&str]| {
            let model = stale.iter().fold(write_model(), |m, t| m.invalidates(*t));
            match &self.host {
                Some(h) => model.rate_limit_host(h.clone()),
                None => model,
            }
        };
        let link = |to: &str, p: f32| FollowUpLink::new(to, p).projecting("key", "key");
        Some(match tool {
            "get_issues" => read()
                .supporting()
                .typical_kb(4.0)
                .max_kb(40.0)
                .latency_ms_p50(450)
                .follow_up(link("get_issue", 0.55))
                .follow_up(link("get_issue_comments", 0.45)),
            "get_issue" => read().critical().follow_up(link("get_issue_comments", 0.50)),
            "get_issue_comments" => read().critical(),
            "get_issue_relations" | "get_assets" | "download_asset" => read().critical(),
            "get_available_statuses" | "get_custom_fields" | "get_users" => read().supporting().ttl_s(300),
            "get_board_sprints" | "list_project_versions" => read().supporting().ttl_s(60),
            "create_issue" => write(&["get_issues", "get_issue_relations"]),
            "update_issue" => write(&["get_issues", "get_issue"]),
            "add_issue_comment" => write(&["get_issue_comments", "get_issue"]),
            "link_issues" | "unlink_issues" => write(&["get_issue_relations", "get_issue"]),
            "assign_to_sprint" => write(&["get_issues", "get_issue", "get_board_sprints"]),
            "upsert_project_version" => write(&["list_project_versions"]),
            "get_epics" => read()
                .supporting()
                .typical_kb(3.0)
                .follow_up(link("get_epic", 0.50)),
            "get_epic" => read().critical(),
            "get_structure_forest" => read().critical().typical_kb(6.0),
            "get_structures" => read().supporting().ttl_s(60),
            "get_structure_values" => read().critical(),
            "create_structure" => write(&["get_structures"]),
            "add_structure_rows" | "move_structure_rows" | "remove_structure_row" => {
                write(&["get_structure_forest", "get_structure_values"])
            }
            "create_epic" => write(&["get_epics", "get_issues"]),
            "update_epic" => write(&["get_epics", "get_epic", "get_issues", "get_issue"]),
            "delete_asset" | "upload_asset" => write(&["get_assets", "get_issue", "download_asset"]),
            t if is_write(t) => write(&[]),
            _ => return None,
        })
    }

    fn project_args(&self, prev_tool: &str, prev_result: &Value, link: &FollowUpLink) -> Option<Vec<Value>> {
        match (prev_tool, link.tool.as_str()) {
            ("get_issues", "get_issue" | "get_issue_comments") => {
                Some(project(items(prev_result, &["issues", "items"]), "key", |i| {
                    field(i, "key")
                }))
            }
            ("get_issue", "get_issue_comments") => Some(vec![json!({"key": field(prev_result, "key")?})]),
            ("get_epics", "get_epic") => Some(project(items(prev_result, &["epics"]), "key", |i| {
                field(i, "key")
            })),
            _ => None,
        }
    }

    fn rate_limit_host(&self, _tool: &str, _args: &Args<'_>) -> Option<String> {
        self.host.clone()
    }
}

toolhost_sdk::export_plugin!(Jira);
