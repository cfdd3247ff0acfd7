//! Text tools: a tool plugin that exercises the whole tool interface, for
//! the host's tests and as an example.
//!
//! - `word_count {text, unique?}`: every hook. `prepare_arguments` folds a
//!   legacy `input` key into `text`; `before_call` blocks texts containing
//!   `FORBIDDEN`; `after_call` marks successful results as checked;
//!   `render_call` / `render_result` give one-line terminal views.
//! - `slow_count {n}`: counts to `n` at about 1 ms a step, reporting progress
//!   and honouring cancellation each step (a long call the host can cancel).
//! - `fail {kind}`: returns the `ToolError` variant named by `kind`.
//!
//! No category (always listed), no configuration.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use toolhost_sdk::{
    AfterCallOverride, Args, BeforeCall, CallContext, Hooks, Plugin, RenderOptions, ToolAnnotations,
    ToolDefinition, ToolError, ToolResult, Tools, Value, json,
};

struct TextTools;

impl Plugin for TextTools {
    fn new(_config: &Value) -> Result<Self, String> {
        Ok(TextTools)
    }
}

/// The `text` argument, or `invalid-args`.
fn text_arg(args: &Value) -> Result<&str, ToolError> {
    args.get("text")
        .and_then(Value::as_str)
        .ok_or_else(|| ToolError::InvalidArgs("`text` must be a string".into()))
}

fn word_count(args: &Value) -> Result<ToolResult, ToolError> {
    let text = text_arg(args)?;
    let words: Vec<&str> = text.split_whitespace().collect();
    let mut structured = json!({ "words": words.len() });
    if args.get("unique").and_then(Value::as_bool) == Some(true) {
        let distinct: HashSet<String> = words.iter().map(|w| w.to_ascii_lowercase()).collect();
        structured["unique"] = json!(distinct.len());
    }
    Ok(ToolResult::text(format!("{} words", words.len()))
        .with_structured(structured)
        .with_details(json!({ "chars": text.chars().count() })))
}

fn slow_count(args: &Value, ctx: &CallContext<'_>) -> Result<ToolResult, ToolError> {
    let n = args
        .get("n")
        .and_then(Value::as_u64)
        .filter(|n| *n >= 1)
        .ok_or_else(|| ToolError::InvalidArgs("`n` must be an integer >= 1".into()))?;
    for i in 1..=n {
        if ctx.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        // Busy-wait about 1 ms on the monotonic clock (wasi:clocks): the call
        // stays CPU-bound and long, so the host has something to cancel.
        let start = Instant::now();
        while start.elapsed() < Duration::from_millis(1) {
            std::hint::spin_loop();
        }
        ctx.report_progress(i as f64, Some(n as f64), None);
    }
    Ok(ToolResult::text(format!("counted to {n}")))
}

fn fail(args: &Value) -> Result<ToolResult, ToolError> {
    match args.get("kind").and_then(Value::as_str) {
        Some("failed") => Err(ToolError::Failed("fail: asked to fail".into())),
        Some("not_found") => Err(ToolError::NotFound(
            "fail: the thing asked for does not exist".into(),
        )),
        Some("invalid_args") => Err(ToolError::InvalidArgs("kind: asked for invalid arguments".into())),
        other => Err(ToolError::InvalidArgs(format!(
            "kind: unknown kind `{}`",
            other.unwrap_or("")
        ))),
    }
}

/// The first `max` characters of `s`, with `…` if it was longer.
fn preview(s: &str, max: usize) -> String {
    let mut chars = s.chars();
    let head: String = chars.by_ref().take(max).collect();
    if chars.next().is_some() {
        format!("{head}…")
    } else {
        head
    }
}

impl Tools for TextTools {
    fn tools(&self) -> Vec<ToolDefinition> {
        vec![
            ToolDefinition::new(
                "word_count",
                "Count the words of a text (optionally also the distinct words).",
                json!({
                    "type": "object",
                    "properties": {
                        "text": { "type": "string", "description": "The text to count." },
                        "unique": { "type": "boolean", "description": "Also count distinct words (case-insensitive)." }
                    },
                    "required": ["text"]
                }),
            )
            .title("Word count")
            .output_schema(json!({
                "type": "object",
                "properties": {
                    "words": { "type": "integer", "minimum": 0 },
                    "unique": { "type": "integer", "minimum": 0 }
                },
                "required": ["words"]
            }))
            .annotations(ToolAnnotations::READ_ONLY.open_world(false))
            .snippet("word_count: count the words of a text")
            .guideline("Use word_count instead of counting words yourself.")
            .hooks(Hooks::ALL),
            ToolDefinition::new(
                "slow_count",
                "Count from 1 to n, about 1 ms per step, reporting progress.",
                json!({
                    "type": "object",
                    "properties": {
                        "n": { "type": "integer", "minimum": 1, "description": "Where to count to." }
                    },
                    "required": ["n"]
                }),
            )
            .title("Slow count")
            .annotations(ToolAnnotations::READ_ONLY.open_world(false)),
            ToolDefinition::new(
                "fail",
                "Fail on purpose with the error kind given.",
                json!({
                    "type": "object",
                    "properties": {
                        "kind": { "type": "string", "enum": ["failed", "not_found", "invalid_args"] }
                    },
                    "required": ["kind"]
                }),
            )
            .title("Fail"),
        ]
    }

    fn execute(&self, tool: &str, args: Value, ctx: &CallContext<'_>) -> Result<ToolResult, ToolError> {
        match tool {
            "word_count" => word_count(&args),
            "slow_count" => slow_count(&args, ctx),
            "fail" => fail(&args),
            other => Err(ToolError::NotFound(format!("no tool named {other}"))),
        }
    }

    /// Fold the legacy `input` key into `text`. Both present is ambiguous and
    /// rejected; neither is left to schema validation (`text` is required).
    fn prepare_arguments(&self, tool: &str, args: &mut Args<'_>) -> Result<(), String> {
        if tool != "word_count" || !args.contains("input") {
            return Ok(());
        }
        if args.contains("text") {
            return Err("give either `text` or the legacy `input`, not both".into());
        }
        if let Some(input) = args.remove("input")? {
            args.set("text", &input)?;
        }
        Ok(())
    }

    fn before_call(&self, tool: &str, args: &Args<'_>) -> BeforeCall {
        match args.get_str("text") {
            Some(text) if tool == "word_count" && text.contains("FORBIDDEN") => {
                BeforeCall::Block("text mentions a forbidden word".into())
            }
            _ => BeforeCall::Allow,
        }
    }

    fn after_call(&self, tool: &str, result: &ToolResult, is_error: bool) -> Option<AfterCallOverride> {
        if tool != "word_count" || is_error {
            return None;
        }
        let chars = result
            .details
            .as_ref()
            .and_then(|d| d.get("chars"))
            .cloned()
            .unwrap_or(Value::Null);
        Some(AfterCallOverride {
            details: Some(json!({ "chars": chars, "checked": true })),
            ..Default::default()
        })
    }

    fn render_call(&self, tool: &str, args: &Value, _width: u32) -> Option<String> {
        let text = args.get("text").and_then(Value::as_str)?;
        (tool == "word_count").then(|| format!("word_count({})", preview(text, 20)))
    }

    fn render_result(&self, tool: &str, result: &ToolResult, _opts: &RenderOptions) -> Option<String> {
        if tool != "word_count" {
            return None;
        }
        let words = result.structured.as_ref()?.get("words")?.as_u64()?;
        Some(format!("{words} words"))
    }
}

toolhost_sdk::export_tools!(TextTools);
