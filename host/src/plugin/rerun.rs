//! The JSON form of every export's inputs and answers, the one place a
//! call into a plugin is observed (recorded, shadowed), and running an
//! observed call again from its JSON form (`toolhost replay`, a shadow's
//! candidate).
//!
//! Every typed call of `calls` goes through [`Plugin::observed`]: with no
//! recorder and no shadow it is the call itself, nothing is built. With
//! either, the inputs are put in JSON before the call (as the plugin sees
//! them: a schema, arguments, a result) and the answer after it (the
//! checked, redacted answer the host goes on with, or the error).
//!
//! Inputs by export (`tool` is the tool's name):
//! `supported-categories`, `list-tools`: `{}`;
//! `enrich-schema`: `{tool, description, schema}`;
//! `transform-args`: `{tool, args, room}`;
//! `value-model`: `{tool}`;
//! `project-args`: `{prev_tool, prev_result, link}`;
//! `rate-limit-host`, `prepare-arguments`, `before-call`, `execute`:
//! `{tool, args}`;
//! `after-call`: `{tool, result, is_error}`;
//! `render-call`: `{tool, args, width}`;
//! `render-result`: `{tool, result, options}`.
//! A result is `{mcp, details}`: the MCP `CallToolResult` and the
//! plugin's details.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use serde_json::{Map, Value, json};

use super::definition::{AfterCallOverride, Answer, BeforeCallDecision, RenderOptions, ToolDefinition};
use super::record::{Call, Outcome};
use super::{Plugin, PluginError};
use crate::bounds;
use crate::output::{CallOutput, ToolError, mcp};
use crate::schema::ToolSchema;
use crate::value_model::FollowUpLink;

/// A recorded call that could not be run again: its input is not the
/// export's, or the export is not one this host calls.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct RerunError {
    /// The plugin asked to run it.
    pub plugin: String,
    /// The export recorded.
    pub export: String,
    /// What is wrong with the recorded call.
    pub message: String,
}

/// What running a recorded call again gave.
#[derive(Debug, Clone, PartialEq)]
pub enum Rerun {
    /// Run: what it gave now.
    Done(Outcome),
    /// Not run: `execute` without `--execute` (it may reach HTTP).
    Skipped(&'static str),
}

/// The exports a rerun runs unless told to run `execute` too: every other
/// export is a pure hook of what the host hands it.
pub const EXECUTE: &str = "execute";

impl Plugin {
    /// Whether a call's JSON form is wanted: calls are recorded, or run
    /// again on a shadow.
    pub(super) fn observing(&self) -> bool {
        self.recording.is_some() || self.shadow.is_some()
    }

    /// Run `call` of `export`; with `input` (built only when
    /// [`Plugin::observing`]), record it and hand it to the shadow. The
    /// caller pins `call` in its own frame: a plugin call's future is a few
    /// KB, and taken by value it would be copied into this one's.
    pub(super) async fn observed<T>(
        &self,
        export: &'static str,
        input: Option<Value>,
        answer: impl FnOnce(&T) -> Value,
        call: Pin<&mut impl Future<Output = Result<T, PluginError>>>,
    ) -> Result<T, PluginError> {
        let Some(input) = input else { return call.await };
        let started = Instant::now();
        let result = call.await;
        let took = started.elapsed();
        let outcome = match &result {
            Ok(value) => Outcome::Ok(answer(value)),
            Err(e) => Outcome::Error(e.to_string()),
        };
        if let Some(shadow) = &self.shadow {
            shadow.compare(self, export, &input, &outcome);
        }
        if let Some((recorder, digest)) = &self.recording {
            let call = Call {
                plugin: self.name.to_string(),
                digest: digest.clone(),
                export: export.to_owned(),
                input,
                output: outcome,
                micros: took.as_micros() as u64,
            };
            recorder.call(self.redactor(), call);
        }
        result
    }

    /// Run a recorded call of `export` with `input` again. `execute` runs
    /// only when `execute` is set. An input that is not the export's, or
    /// an export this host does not call, is an error naming it.
    pub async fn rerun(&self, export: &str, input: &Value, execute: bool) -> Result<Rerun, RerunError> {
        self.rerun_or_reason(export, input, execute)
            .await
            .map_err(|message| RerunError {
                plugin: self.name.to_string(),
                export: export.to_owned(),
                message,
            })
    }

    /// [`Plugin::rerun`], its `Err` the reason alone.
    pub(crate) async fn rerun_or_reason(
        &self,
        export: &str,
        input: &Value,
        execute: bool,
    ) -> Result<Rerun, String> {
        let tool = || str_field(input, "tool");
        let args = || map_field(input, "args");
        let done = Rerun::Done;
        Ok(match export {
            "supported-categories" => done(outcome(self.call_supported_categories().await, |c| json!(c))),
            "list-tools" => done(outcome(self.call_list_tools().await, |t| definitions_json(t))),
            "enrich-schema" => {
                let description = str_field(input, "description")?;
                let schema = ToolSchema::new(description, field(input, "schema")?.clone())
                    .map_err(|e| format!("the recorded schema: {e}"))?;
                done(outcome(
                    self.enrich_schema(&tool()?, schema).await,
                    enrichment_json,
                ))
            }
            "transform-args" => {
                let room = input
                    .get("room")
                    .and_then(Value::as_u64)
                    .map_or(bounds::MAX_ARGS_GROWTH, |r| r as usize);
                done(outcome(
                    self.transform_args_within(&tool()?, args()?, room).await,
                    |(args, room)| transformed_json(args, *room),
                ))
            }
            "value-model" => done(outcome(self.value_model(&tool()?).await, |m| json!(m))),
            "project-args" => {
                let link: FollowUpLink = serde_json::from_value(field(input, "link")?.clone())
                    .map_err(|e| format!("the recorded link: {e}"))?;
                let prev = str_field(input, "prev_tool")?;
                let result = field(input, "prev_result")?;
                done(outcome(self.project_args(&prev, result, &link).await, |p| {
                    json!(p)
                }))
            }
            "rate-limit-host" => done(outcome(self.rate_limit_host(&tool()?, &args()?).await, |h| {
                json!(h)
            })),
            "prepare-arguments" => done(outcome(self.prepare_arguments(&tool()?, args()?).await, |a| {
                json!(a)
            })),
            "before-call" => done(outcome(self.before_call(&tool()?, &args()?).await, decision_json)),
            AFTER_ASK => {
                let answer = answer_from_json(field(input, "answer")?)?;
                done(outcome(
                    self.after_ask(&tool()?, &args()?, answer).await,
                    decision_json,
                ))
            }
            EXECUTE if !execute => Rerun::Skipped("execute runs only with --execute: it may reach HTTP"),
            EXECUTE => {
                let cancelled = Arc::new(AtomicBool::new(false));
                let answer = self
                    .execute(&tool()?, &args()?, "replay".into(), cancelled, None)
                    .await;
                done(outcome(answer, execution_json))
            }
            "after-call" => {
                let result = output_from_json(field(input, "result")?)?;
                let is_error = input.get("is_error").and_then(Value::as_bool).unwrap_or(false);
                done(outcome(self.after_call(&tool()?, &result, is_error).await, |o| {
                    json!(o.as_ref().map(override_json))
                }))
            }
            "render-call" => {
                let width = input.get("width").and_then(Value::as_u64).unwrap_or(80) as u32;
                let args = field(input, "args")?;
                done(outcome(self.render_call(&tool()?, args, width).await, |t| {
                    json!(t)
                }))
            }
            "render-result" => {
                let result = output_from_json(field(input, "result")?)?;
                let options = options_from_json(field(input, "options")?)?;
                done(outcome(
                    self.render_result(&tool()?, &result, options).await,
                    |t| json!(t),
                ))
            }
            other => return Err(format!("`{other}` is not an export this host calls")),
        })
    }
}

fn outcome<T>(result: Result<T, PluginError>, answer: impl FnOnce(&T) -> Value) -> Outcome {
    match result {
        Ok(value) => Outcome::Ok(answer(&value)),
        Err(e) => Outcome::Error(e.to_string()),
    }
}

fn field<'v>(input: &'v Value, name: &str) -> Result<&'v Value, String> {
    input
        .get(name)
        .ok_or_else(|| format!("the recorded input has no `{name}`"))
}

fn str_field(input: &Value, name: &str) -> Result<String, String> {
    field(input, name)?
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("the recorded `{name}` is not a string"))
}

fn map_field(input: &Value, name: &str) -> Result<Map<String, Value>, String> {
    match field(input, name)? {
        Value::Object(map) => Ok(map.clone()),
        _ => Err(format!("the recorded `{name}` is not an object")),
    }
}

pub(super) fn schema_input(tool: &str, schema: &ToolSchema) -> Value {
    json!({"tool": tool, "description": schema.description(), "schema": schema.to_value()})
}

pub(super) fn enrichment_json(e: &super::Enrichment) -> Value {
    json!({
        "description": e.edit.schema.description(),
        "schema": e.edit.schema.to_value(),
        "transforms_args": e.transforms_args,
        "changes": e.edit.changes,
    })
}

pub(super) fn transformed_json(args: &Map<String, Value>, room: usize) -> Value {
    json!({"args": args, "room": room})
}

pub(super) fn decision_json(d: &BeforeCallDecision) -> Value {
    match d {
        BeforeCallDecision::Allow => json!("allow"),
        BeforeCallDecision::Block(reason) => json!({"block": reason}),
        BeforeCallDecision::Ask(q) => json!({"ask": {"message": q.message, "options": q.options}}),
    }
}

/// The export a plugin's question is answered through.
pub(super) const AFTER_ASK: &str = "after-ask";

pub(super) fn answer_json(a: &Answer) -> Value {
    match a {
        Answer::Accepted(choice) => json!({"accepted": choice}),
        Answer::Declined => json!("declined"),
        Answer::Cancelled => json!("cancelled"),
    }
}

fn answer_from_json(v: &Value) -> Result<Answer, String> {
    match v {
        Value::String(s) if s == "declined" => Ok(Answer::Declined),
        Value::String(s) if s == "cancelled" => Ok(Answer::Cancelled),
        Value::Object(o) if o.len() == 1 && o.contains_key("accepted") => match &o["accepted"] {
            Value::Null => Ok(Answer::Accepted(None)),
            Value::String(choice) => Ok(Answer::Accepted(Some(choice.clone()))),
            _ => Err("the recorded answer's choice is not a string".into()),
        },
        _ => Err("the recorded answer is not accepted, declined or cancelled".into()),
    }
}

pub(super) fn definitions_json(tools: &[ToolDefinition]) -> Value {
    tools
        .iter()
        .map(|t| {
            json!({
                "name": t.name,
                "title": t.title,
                "description": t.description,
                "input_schema": t.input_schema,
                "output_schema": t.output_schema,
                "annotations": t.annotations,
                "snippet": t.snippet,
                "guidelines": t.guidelines,
                "category": t.category,
                "hooks": t.hooks.bits(),
            })
        })
        .collect()
}

pub(super) fn output_json(o: &CallOutput) -> Value {
    let mcp = serde_json::to_value(mcp::to_mcp(o.clone())).expect("a result serialises");
    json!({"mcp": mcp, "details": o.details})
}

fn output_from_json(v: &Value) -> Result<CallOutput, String> {
    let result =
        serde_json::from_value(field(v, "mcp")?.clone()).map_err(|e| format!("the recorded result: {e}"))?;
    let mut output = mcp::from_mcp(result);
    output.details = v.get("details").filter(|d| !d.is_null()).cloned();
    Ok(output)
}

pub(super) fn execution_json(answer: &Result<CallOutput, ToolError>) -> Value {
    match answer {
        Ok(output) => json!({"result": output_json(output)}),
        Err(e) => json!({"tool_error": e.to_string()}),
    }
}

pub(super) fn override_json(o: &AfterCallOverride) -> Value {
    let content = o
        .content
        .as_ref()
        .map(|blocks| output_json(&CallOutput::new(blocks.clone()))["mcp"]["content"].clone());
    json!({
        "content": content,
        "structured": o.structured,
        "details": o.details,
        "is_error": o.is_error,
    })
}

pub(super) fn options_json(o: &RenderOptions) -> Value {
    json!({"expanded": o.expanded, "is_partial": o.is_partial, "is_error": o.is_error, "width": o.width})
}

fn options_from_json(v: &Value) -> Result<RenderOptions, String> {
    let flag = |name: &str| {
        v.get(name)
            .and_then(Value::as_bool)
            .ok_or_else(|| format!("the recorded options have no `{name}`"))
    };
    Ok(RenderOptions {
        expanded: flag("expanded")?,
        is_partial: flag("is_partial")?,
        is_error: flag("is_error")?,
        width: v.get("width").and_then(Value::as_u64).unwrap_or(80) as u32,
    })
}
