//! `reference_rust`: the reference enricher for "acme", a fictional issue
//! tracker, written with the Rust SDK. `reference-js`, `reference-py`,
//! `reference-c` and `reference-go` implement exactly the same behaviour (the
//! integration test `tests/languages.rs` compares all five through the host);
//! the behaviour is specified in `docs/plugins/reference.md`.
//!
//! Config (`guest-plugins/reference.toml`): `host`, `projects` and
//! `custom_fields` (`id`, `name`, `type` number|select|text, `options` for a
//! select). Each custom field becomes a `cf_*` parameter on create/update and
//! is mapped back into `customFields` by `transform_args`.

use toolhost_sdk::{
    Args, Enricher, FollowUpLink, Plugin, Schema, SideEffect, Value, ValueModel, json, log,
    sanitize_field_name, serde_json::Map,
};

/// The kind of one custom field; a select carries its options (id, name).
enum FieldKind {
    Number,
    Select(Vec<(String, String)>),
    Text,
}

struct CustomField {
    id: String,
    name: String,
    /// `sanitize_field_name(name)`: the parameter the agent sees.
    param: String,
    kind: FieldKind,
}

struct Acme {
    host: String,
    projects: Vec<String>,
    fields: Vec<CustomField>,
}

fn string_at<'a>(v: &'a Value, key: &str, at: &str) -> Result<&'a str, String> {
    v.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("config: {at}.{key} must be a string"))
}

fn parse_field(v: &Value, at: &str) -> Result<CustomField, String> {
    let id = string_at(v, "id", at)?;
    let name = string_at(v, "name", at)?;
    let kind = match v.get("type").and_then(Value::as_str) {
        Some("number") => FieldKind::Number,
        Some("text") => FieldKind::Text,
        Some("select") => {
            let bad = || format!("config: {at}.options must be a non-empty array of {{id, name}} strings");
            let options = v.get("options").and_then(Value::as_array).ok_or_else(bad)?;
            if options.is_empty() {
                return Err(bad());
            }
            let mut parsed = Vec::with_capacity(options.len());
            for o in options {
                match (
                    o.get("id").and_then(Value::as_str),
                    o.get("name").and_then(Value::as_str),
                ) {
                    (Some(id), Some(name)) => parsed.push((id.to_owned(), name.to_owned())),
                    _ => return Err(bad()),
                }
            }
            FieldKind::Select(parsed)
        }
        _ => return Err(format!("config: {at}.type must be number, select or text")),
    };
    Ok(CustomField {
        id: id.to_owned(),
        name: name.to_owned(),
        param: sanitize_field_name(name),
        kind,
    })
}

impl Plugin for Acme {
    fn new(config: &Value) -> Result<Self, String> {
        let host = config
            .get("host")
            .and_then(Value::as_str)
            .ok_or("config: host must be a string")?
            .to_owned();
        let projects: Vec<String> = match config.get("projects").and_then(Value::as_array) {
            Some(list) if !list.is_empty() && list.iter().all(Value::is_string) => list
                .iter()
                .filter_map(|p| p.as_str().map(str::to_owned))
                .collect(),
            _ => return Err("config: projects must be a non-empty array of strings".into()),
        };
        let fields = match config.get("custom_fields") {
            None => Vec::new(),
            Some(Value::Array(list)) => list
                .iter()
                .enumerate()
                .map(|(i, f)| parse_field(f, &format!("custom_fields[{i}]")))
                .collect::<Result<_, _>>()?,
            Some(_) => return Err("config: custom_fields must be an array".into()),
        };
        log::info(&format!(
            "acme: {} custom fields, {} projects",
            fields.len(),
            projects.len()
        ));
        Ok(Acme {
            host,
            projects,
            fields,
        })
    }
}

impl Acme {
    fn enrich_issue(&self, tool: &str, schema: &mut Schema<'_>) -> Result<(), toolhost_sdk::EditError> {
        schema.remove_params(&["points", "customFields", "components"]);
        if schema.has_property("projectId") {
            schema.set_enum("projectId", &self.projects)?;
            if tool == "create_issue" {
                schema.set_required("projectId", true)?;
            }
        }
        for f in &self.fields {
            let prop = match &f.kind {
                FieldKind::Number => json!({"type": "number", "description": f.name}),
                FieldKind::Select(options) => {
                    let names: Vec<&str> = options.iter().map(|(_, n)| n.as_str()).collect();
                    json!({"type": "string", "enum": names, "description": f.name})
                }
                FieldKind::Text => json!({"type": "string", "description": f.name}),
            };
            schema.add_property(&f.param, &prop)?;
        }
        Ok(())
    }
}

impl Enricher for Acme {
    fn supported_categories(&self) -> Vec<String> {
        vec!["issue_tracker".into()]
    }

    fn enrich_schema(&self, tool: &str, schema: &mut Schema<'_>) -> Result<(), String> {
        let result = match tool {
            "create_issue" | "update_issue" => self.enrich_issue(tool, schema),
            "get_issues" => {
                schema.remove_params(&["nativeQuery"]);
                schema.add_enum_param(
                    "stateCategory",
                    "Workflow state category",
                    ["todo", "in_progress", "done"],
                )
            }
            _ => Ok(()),
        };
        Ok(result?)
    }

    // Custom fields are mapped back for the two tools that get them.
    fn transforms_args(&self, tool: &str) -> bool {
        matches!(tool, "create_issue" | "update_issue")
    }

    fn transform_args(&self, tool: &str, args: &mut Args<'_>) -> Result<(), String> {
        if tool != "create_issue" && tool != "update_issue" {
            return Ok(());
        }
        let mut collected = Map::new();
        for f in &self.fields {
            let Some(value) = args.remove(&f.param)? else {
                continue;
            };
            let value = match &f.kind {
                FieldKind::Select(options) => {
                    let wanted = match &value {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    match options.iter().find(|(_, name)| *name == wanted) {
                        Some((id, _)) => json!({"id": id}),
                        None => {
                            let names: Vec<&str> = options.iter().map(|(_, n)| n.as_str()).collect();
                            return Err(format!(
                                "{}: unknown option '{wanted}' (expected {})",
                                f.name,
                                names.join(", ")
                            ));
                        }
                    }
                }
                FieldKind::Number | FieldKind::Text => value,
            };
            collected.insert(f.id.clone(), value);
        }
        if collected.is_empty() {
            return Ok(());
        }
        let mut merged = match args.get("customFields") {
            Some(Value::Object(existing)) => existing,
            _ => Map::new(),
        };
        merged.extend(collected);
        args.set("customFields", &Value::Object(merged))?;
        Ok(())
    }

    fn value_model(&self, tool: &str) -> Option<ValueModel> {
        match tool {
            "get_issues" => Some(
                ValueModel::read_only()
                    .supporting()
                    .typical_kb(4.0)
                    .max_kb(40.0)
                    .latency_ms_p50(450)
                    .ttl_s(60)
                    .follow_up(FollowUpLink::new("get_issue", 0.55).projecting("key", "key")),
            ),
            "get_issue" => Some(
                ValueModel::read_only()
                    .critical()
                    .typical_kb(2.0)
                    .ttl_s(60)
                    .follow_up(FollowUpLink::new("get_issue_comments", 0.5).projecting("key", "key")),
            ),
            "create_issue" | "update_issue" => Some(
                ValueModel::new()
                    .side_effect(SideEffect::MutatesExternal)
                    .invalidates("get_issues")
                    .invalidates("get_issue"),
            ),
            _ => None,
        }
    }

    fn project_args(&self, prev_tool: &str, prev_result: &Value, link: &FollowUpLink) -> Option<Vec<Value>> {
        if prev_tool != "get_issues" || (link.tool != "get_issue" && link.tool != "get_issue_comments") {
            return None;
        }
        let mut keys: Vec<&str> = Vec::new();
        for issue in prev_result
            .get("issues")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(key) = issue.get("key").and_then(Value::as_str)
                && !keys.contains(&key)
            {
                keys.push(key);
                if keys.len() == 3 {
                    break;
                }
            }
        }
        Some(keys.into_iter().map(|k| json!({"key": k})).collect())
    }

    fn rate_limit_host(&self, _tool: &str, _args: &Args<'_>) -> Option<String> {
        Some(self.host.clone())
    }
}

toolhost_sdk::export_enricher!(Acme);
