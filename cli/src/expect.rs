//! `toolhost check --expect FILE`: a vendor's golden cases for one plugin,
//! run through the host beside the generic checks of `check`. This module
//! owns the file format and the comparison; `check` owns loading and the
//! report.
//!
//! The file is TOML; every section is optional and may repeat:
//!
//! ```toml
//! [[enrich-schema]]            # enrich a base-catalog tool's schema
//! tool = "create_issue"
//! has = ["cf_team"]            # properties that must exist
//! lacks = ["points"]           # properties that must not
//! required = ["projectId"]     # names that must be in `required`
//! [enrich-schema.properties]   # property schemas that must be equal
//! cf_team = { type = "string", enum = ["Red", "Blue"], description = "Team" }
//!
//! [[transform-args]]           # transform `args`: `expect` or `error`
//! tool = "create_issue"
//! args = { cf_team = "Blue" }
//! expect = { customFields = { customfield_200 = { id = "2" } } }
//!
//! [[value-model]]              # fields that must be equal; `none = true`
//! tool = "get_issues"          # for no model
//! expect = { side_effect = "read_only", cost = { freshness_ttl_s = 60 } }
//!
//! [[project-args]]             # `expect` list, or `none = true`
//! prev_tool = "get_issues"
//! prev_result = { issues = [{ key = "WEB-1" }] }
//! link = { tool = "get_issue", projection = "key", projection_arg = "key" }
//! expect = [{ key = "WEB-1" }]
//!
//! [[rate-limit-host]]          # `expect` host, or `none = true`
//! tool = "get_issue"
//! expect = "tracker.acme.test"
//! ```
//!
//! Comparison: `transform-args` and `project-args` results must equal
//! `expect` exactly; a `value-model` must contain `expect` (a subset of its
//! fields). Numbers compare with a relative tolerance of 1e-6, because the
//! WIT carries some of them as `f32` (`probability = 0.55`).

use std::path::Path;

use serde::Deserialize;
use serde_json::{Map, Value};

use toolhost::FollowUpLink;
use toolhost::ToolSchema;
use toolhost::catalog::base_tool;
use toolhost::plugin::{Plugin, PluginError};

/// The golden cases of one expectations file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Expectations {
    #[serde(default)]
    enrich_schema: Vec<SchemaCase>,
    #[serde(default)]
    transform_args: Vec<TransformCase>,
    #[serde(default)]
    value_model: Vec<ModelCase>,
    #[serde(default)]
    project_args: Vec<ProjectCase>,
    #[serde(default)]
    rate_limit_host: Vec<HostCase>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SchemaCase {
    tool: String,
    #[serde(default)]
    has: Vec<String>,
    #[serde(default)]
    lacks: Vec<String>,
    #[serde(default)]
    required: Vec<String>,
    #[serde(default)]
    properties: Map<String, Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TransformCase {
    tool: String,
    args: Map<String, Value>,
    expect: Option<Map<String, Value>>,
    error: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ModelCase {
    tool: String,
    expect: Option<Value>,
    #[serde(default)]
    none: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ProjectCase {
    prev_tool: String,
    prev_result: Value,
    link: FollowUpLink,
    expect: Option<Vec<Value>>,
    #[serde(default)]
    none: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct HostCase {
    tool: String,
    #[serde(default)]
    args: Map<String, Value>,
    expect: Option<String>,
    #[serde(default)]
    none: bool,
}

/// Why an expectations file cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {message}")]
pub struct ExpectError {
    path: String,
    message: String,
}

/// One golden case's outcome: its name and `Err` with what differed.
pub type CaseResult = (String, Result<String, String>);

impl Expectations {
    pub fn read(path: &Path) -> Result<Self, ExpectError> {
        let fail = |message: String| ExpectError {
            path: path.display().to_string(),
            message,
        };
        let text = std::fs::read_to_string(path).map_err(|e| fail(e.to_string()))?;
        let parsed: Self = toml::from_str(&text).map_err(|e| fail(e.to_string()))?;
        if let Some(c) = parsed
            .transform_args
            .iter()
            .find(|c| c.expect.is_some() == c.error.is_some())
        {
            return Err(fail(format!(
                "transform-args {}: set exactly one of `expect` and `error`",
                c.tool
            )));
        }
        Ok(parsed)
    }

    /// Run every case against `plugin`, in file order by section.
    pub async fn run(&self, plugin: &Plugin) -> Vec<CaseResult> {
        let mut out = Vec::new();
        for c in &self.enrich_schema {
            out.push((
                format!("expect enrich-schema {}", c.tool),
                schema_case(plugin, c).await,
            ));
        }
        for (i, c) in self.transform_args.iter().enumerate() {
            let name = format!("expect transform-args {} #{}", c.tool, i + 1);
            out.push((name, transform_case(plugin, c).await));
        }
        for c in &self.value_model {
            let result = match plugin.value_model(&c.tool).await {
                Err(e) => Err(e.to_string()),
                Ok(model) => {
                    let actual = serde_json::to_value(model).unwrap_or(Value::Null);
                    match (&c.expect, c.none) {
                        (_, true) if actual.is_null() => Ok("none".into()),
                        (_, true) => Err(format!("expected none, got {actual}")),
                        (Some(expect), false) if matches(expect, &actual, true) => Ok("as expected".into()),
                        (Some(expect), false) => Err(format!("expected (at least) {expect}, got {actual}")),
                        (None, false) => Err("set `expect` or `none = true`".into()),
                    }
                }
            };
            out.push((format!("expect value-model {}", c.tool), result));
        }
        for c in &self.project_args {
            let name = format!("expect project-args {} → {}", c.prev_tool, c.link.tool);
            let result = match plugin.project_args(&c.prev_tool, &c.prev_result, &c.link).await {
                Err(e) => Err(e.to_string()),
                Ok(items) => {
                    let actual = serde_json::to_value(&items).unwrap_or(Value::Null);
                    let expect = if c.none {
                        Value::Null
                    } else {
                        Value::Array(c.expect.clone().unwrap_or_default())
                    };
                    compare(&expect, &actual)
                }
            };
            out.push((name, result));
        }
        for c in &self.rate_limit_host {
            let result = match plugin.rate_limit_host(&c.tool, &c.args).await {
                Err(e) => Err(e.to_string()),
                Ok(host) if host == c.expect && c.none == c.expect.is_none() => {
                    Ok(host.unwrap_or_else(|| "none".into()))
                }
                Ok(host) => Err(format!("expected {:?}, got {host:?}", c.expect)),
            };
            out.push((format!("expect rate-limit-host {}", c.tool), result));
        }
        out
    }
}

async fn schema_case(plugin: &Plugin, c: &SchemaCase) -> Result<String, String> {
    let tool = base_tool(&c.tool).ok_or_else(|| format!("`{}` is not a base-catalog tool", c.tool))?;
    let schema =
        ToolSchema::new(tool.description.clone(), tool.input_schema.clone()).map_err(|e| e.to_string())?;
    let edit = plugin
        .enrich_schema(&c.tool, schema)
        .await
        .map_err(|e| e.to_string())?
        .edit;
    let schema = &edit.schema;
    let mut problems = Vec::new();
    for name in &c.has {
        if schema.property(name).is_none() {
            problems.push(format!("lacks `{name}`"));
        }
    }
    for name in &c.lacks {
        if schema.property(name).is_some() {
            problems.push(format!("still has `{name}`"));
        }
    }
    let required = schema.required();
    for name in &c.required {
        if !required.contains(name) {
            problems.push(format!("`{name}` is not required"));
        }
    }
    for (name, expect) in &c.properties {
        match schema.property(name) {
            Some(actual) if matches(expect, actual, false) => {}
            Some(actual) => problems.push(format!("`{name}` is {actual}, expected {expect}")),
            None => problems.push(format!("lacks `{name}`")),
        }
    }
    if problems.is_empty() {
        Ok(format!("{} changes as expected", edit.changes.len()))
    } else {
        Err(problems.join("; "))
    }
}

async fn transform_case(plugin: &Plugin, c: &TransformCase) -> Result<String, String> {
    match (plugin.transform_args(&c.tool, c.args.clone()).await, &c.error) {
        (Ok(actual), None) => compare(
            &Value::Object(c.expect.clone().unwrap_or_default()),
            &Value::Object(actual),
        ),
        (Ok(actual), Some(error)) => Err(format!(
            "expected the error {error:?}, got {}",
            Value::Object(actual)
        )),
        (Err(PluginError::Rejected { message, .. }), Some(error)) if &message == error => {
            Ok(format!("refused: {message}"))
        }
        (Err(PluginError::Rejected { message, .. }), _) => Err(format!("refused: {message}")),
        (Err(e), _) => Err(e.to_string()),
    }
}

fn compare(expect: &Value, actual: &Value) -> Result<String, String> {
    if matches(expect, actual, false) {
        Ok("as expected".into())
    } else {
        Err(format!("expected {expect}, got {actual}"))
    }
}

/// Whether `actual` equals `expect` (numbers within 1e-6 relative; with
/// `subset`, objects in `actual` may have extra keys).
fn matches(expect: &Value, actual: &Value, subset: bool) -> bool {
    match (expect, actual) {
        (Value::Number(e), Value::Number(a)) => match (e.as_f64(), a.as_f64()) {
            (Some(e), Some(a)) => (e - a).abs() <= 1e-6 * e.abs().max(a.abs()).max(1.0),
            _ => e == a,
        },
        (Value::Array(e), Value::Array(a)) => {
            e.len() == a.len() && e.iter().zip(a).all(|(e, a)| matches(e, a, subset))
        }
        (Value::Object(e), Value::Object(a)) => {
            (subset || e.len() == a.len())
                && e.iter()
                    .all(|(k, ev)| a.get(k).is_some_and(|av| matches(ev, av, subset)))
        }
        _ => expect == actual,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_compare_with_f32_tolerance() {
        assert!(matches(&json!(0.55), &json!(0.55_f32 as f64), false));
        assert!(!matches(&json!(0.55), &json!(0.56), false));
        assert!(matches(&json!({"a": 1}), &json!({"a": 1, "b": 2}), true));
        assert!(!matches(&json!({"a": 1}), &json!({"a": 1, "b": 2}), false));
    }

    #[test]
    fn a_transform_case_needs_exactly_one_outcome() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("e.toml");
        std::fs::write(&path, "[[transform-args]]\ntool = \"x\"\nargs = {}\n").unwrap();
        let err = Expectations::read(&path).unwrap_err().to_string();
        assert!(err.contains("exactly one of `expect` and `error`"), "{err}");
        std::fs::write(
            &path,
            "[[transform-args]]\ntool = \"x\"\nargs = {}\nexpect = {}\n",
        )
        .unwrap();
        assert_eq!(Expectations::read(&path).unwrap().transform_args.len(), 1);
    }
}
