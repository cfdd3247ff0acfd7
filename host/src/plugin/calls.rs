//! Typed calls into a plugin's exports: the host types go in, the host types
//! come out, and everything the guest returns is checked (sizes, counts,
//! names, JSON shape; the caps are in `bounds`) before the rest of the host
//! sees it. A tool definition outside the contract fails the plugin's load;
//! an error text (a refusal, a block reason, a tool error) is cut to
//! [`bounds::MAX_ERROR_TEXT`] or the plugin's output cap, whichever is less.
//!
//! Failure policy is not applied here: each method returns the plugin's
//! failure as a [`PluginError`] and the caller (the enricher chain, the call
//! pipeline) decides whether it fails open or closed.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use serde_json::{Map, Value};
use wasmtime::component::Resource;

use super::bindings::{tool, value_model_types as wit};
use super::host_api::{CallContext, ProgressFn};
use super::instance::Instance;
use super::redact::Redactor;
use super::{Plugin, PluginError};
use crate::bounds::{self, shown};
use crate::schema::{ArgsEdit, SchemaEdit, ToolSchema};
use crate::value_model::{CostModel, FieldGroup, FollowUpLink, SideEffect, ValueClass, ValueModel};

use super::results::{content_from_wit, to_wit};
use crate::output::{Block, CallOutput, ToolError};
use tool::Content;
pub use tool::{BeforeCallDecision, Hooks, RenderOptions, ToolDefinition};

/// What an after-call hook replaces; each field set replaces the old one
/// whole, unset fields are kept.
#[derive(Debug, Clone, PartialEq)]
pub struct AfterCallOverride {
    /// New content and structured result (a plugin's content list holds
    /// both).
    pub content: Option<(Vec<Block>, Option<Value>)>,
    pub details: Option<Value>,
    pub is_error: Option<bool>,
}

impl Plugin {
    fn require_enricher(&self, method: &'static str) -> Result<(), PluginError> {
        if self.worlds.enricher {
            Ok(())
        } else {
            Err(self.not_exported(method, "enricher"))
        }
    }

    fn require_tool(&self, method: &'static str) -> Result<(), PluginError> {
        if self.worlds.tool {
            Ok(())
        } else {
            Err(self.not_exported(method, "tool"))
        }
    }

    fn not_exported(&self, method: &'static str, interface: &str) -> PluginError {
        PluginError::Invalid {
            plugin: self.name.clone(),
            method,
            message: format!("the plugin does not export the {interface} interface"),
        }
    }

    fn cap(&self, method: &'static str, bytes: usize) -> Result<(), PluginError> {
        let limit = self.limits().max_output_bytes;
        if bytes > limit {
            self.instances.health.failure();
            return Err(PluginError::TooLarge {
                plugin: self.name.clone(),
                method,
                bytes,
                limit,
            });
        }
        Ok(())
    }

    /// An error text from the plugin: its secrets redacted, then cut to the
    /// error cap (in that order, so no cut leaves part of a secret).
    fn error_text(&self, text: &str) -> String {
        bounds::cut(self.redactor().text(text).into_owned(), self.error_cap())
    }

    /// The longest error text this plugin may hand over.
    fn error_cap(&self) -> usize {
        bounds::MAX_ERROR_TEXT.min(self.limits().max_output_bytes)
    }

    fn invalid(&self, method: &'static str, message: impl Into<String>) -> PluginError {
        PluginError::Invalid {
            plugin: self.name.clone(),
            method,
            message: self.redactor().text(&message.into()).into_owned(),
        }
    }

    /// The plugin's own refusal, with its secrets redacted, cut to the
    /// error cap.
    fn rejected(&self, method: &'static str, message: &str) -> PluginError {
        PluginError::Rejected {
            plugin: self.name.clone(),
            method,
            message: self.error_text(message),
        }
    }

    /// Replaces the plugin's secret values in all it hands over (results,
    /// tool definitions, refusals, renderings); its log has its own pass.
    fn redactor(&self) -> &Redactor {
        self.instances.identity().http.redactor()
    }

    pub(super) async fn call_supported_categories(&self) -> Result<Vec<String>, PluginError> {
        const M: &str = "supported-categories";
        self.require_enricher(M)?;
        let answer = self
            .instances
            .run(M, async |i: &mut Instance| {
                let (g, store) = i.enricher();
                g.call_supported_categories(store).await
            })
            .await?;
        let categories = answer.map_err(|message| self.rejected(M, &message))?;
        self.cap(M, categories.iter().map(String::len).sum())?;
        if categories.len() > bounds::MAX_CATEGORIES {
            return Err(self.invalid(
                M,
                format!(
                    "{} categories, more than {}",
                    categories.len(),
                    bounds::MAX_CATEGORIES
                ),
            ));
        }
        if let Some(bad) = categories.iter().find(|c| !is_category(c)) {
            return Err(self.invalid(
                M,
                format!(
                    "{} is not a category (lower-case letters, digits and `_`)",
                    shown(bad)
                ),
            ));
        }
        Ok(categories)
    }

    /// Let the plugin edit `schema` of `tool`; returns the edited schema and
    /// the journal of its changes. On failure nothing the plugin did is kept.
    pub async fn enrich_schema(&self, tool: &str, schema: ToolSchema) -> Result<SchemaEdit, PluginError> {
        const M: &str = "enrich-schema";
        self.require_enricher(M)?;
        let (name, cap) = (self.name.clone(), self.limits().max_output_bytes);
        self.instances
            .run(M, async |i: &mut Instance| {
                let handle = i
                    .store
                    .data_mut()
                    .table
                    .push(SchemaEdit::new(schema, name, cap))?;
                let lent = Resource::new_borrow(handle.rep());
                {
                    let (g, store) = i.enricher();
                    g.call_enrich_schema(store, tool, lent).await
                }?;
                Ok(i.store.data_mut().table.delete(handle)?)
            })
            .await
    }

    /// Let the plugin transform `args` of `tool`. `Rejected` carries the
    /// plugin's own refusal.
    pub async fn transform_args(
        &self,
        tool: &str,
        args: Map<String, Value>,
    ) -> Result<Map<String, Value>, PluginError> {
        Ok(self
            .transform_args_within(tool, args, bounds::MAX_ARGS_GROWTH)
            .await?
            .0)
    }

    /// [`Plugin::transform_args`] with `room` bytes the plugin may still
    /// write into the arguments; returns the room left, for the next
    /// enricher of the chain.
    pub(crate) async fn transform_args_within(
        &self,
        tool: &str,
        args: Map<String, Value>,
        room: usize,
    ) -> Result<(Map<String, Value>, usize), PluginError> {
        const M: &str = "transform-args";
        self.require_enricher(M)?;
        let lent = ArgsEdit::new(args, false, self.limits().max_output_bytes).within(room);
        let (answer, edit) = self
            .instances
            .run(M, async |i: &mut Instance| {
                i.lend_args(lent, async |i, lent| {
                    let (g, store) = i.enricher();
                    g.call_transform_args(store, tool, lent).await
                })
                .await
            })
            .await?;
        answer.map_err(|message| self.rejected(M, &message))?;
        let room = edit.room();
        Ok((edit.args, room))
    }

    pub async fn value_model(&self, tool: &str) -> Result<Option<ValueModel>, PluginError> {
        const M: &str = "value-model";
        self.require_enricher(M)?;
        let model = self
            .instances
            .run(M, async |i: &mut Instance| {
                let (g, store) = i.enricher();
                g.call_value_model(store, tool).await
            })
            .await?;
        let Some(model) = model else { return Ok(None) };
        let model = from_wit(model);
        self.cap(M, serde_json::to_string(&model).map(|s| s.len()).unwrap_or(0))?;
        if let Some(link) = model
            .follow_ups
            .iter()
            .flatten()
            .find(|l| !(0.0..=1.0).contains(&l.probability))
        {
            return Err(self.invalid(
                M,
                format!(
                    "follow-up to `{}` has probability {} outside 0..1",
                    link.tool, link.probability
                ),
            ));
        }
        Ok(Some(model))
    }

    /// Argument objects for follow-up calls, or `None` for no opinion.
    pub async fn project_args(
        &self,
        prev_tool: &str,
        prev_result: &Value,
        link: &FollowUpLink,
    ) -> Result<Option<Vec<Map<String, Value>>>, PluginError> {
        const M: &str = "project-args";
        self.require_enricher(M)?;
        let prev_result = prev_result.to_string();
        let link = wit::FollowUpLink {
            tool: link.tool.clone(),
            probability: link.probability,
            projection: link.projection.clone(),
            projection_arg: link.projection_arg.clone(),
        };
        let answer = self
            .instances
            .run(M, async |i: &mut Instance| {
                let (g, store) = i.enricher();
                g.call_project_args(store, prev_tool, &prev_result, &link).await
            })
            .await?;
        let Some(items) = answer else { return Ok(None) };
        self.cap(M, items.iter().map(String::len).sum())?;
        items
            .iter()
            .map(|text| match serde_json::from_str(text) {
                Ok(Value::Object(map)) => Ok(map),
                Ok(_) => Err(self.invalid(M, "each projected item must be a JSON object")),
                Err(e) => Err(self.invalid(M, format!("projected item is not JSON: {e}"))),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }

    pub async fn rate_limit_host(
        &self,
        tool: &str,
        args: &Map<String, Value>,
    ) -> Result<Option<String>, PluginError> {
        const M: &str = "rate-limit-host";
        self.require_enricher(M)?;
        let (args, cap) = (args.clone(), self.limits().max_output_bytes);
        let host = self
            .instances
            .run(M, async |i: &mut Instance| {
                i.lend_args(ArgsEdit::new(args, true, cap), async |i, lent| {
                    let (g, store) = i.enricher();
                    g.call_rate_limit_host(store, tool, lent).await
                })
                .await
            })
            .await?
            .0;
        match host {
            Some(h) if h.is_empty() || h.len() > 253 || h.contains(char::is_whitespace) => {
                Err(self.invalid(M, format!("`{h}` is not a host name")))
            }
            other => Ok(other),
        }
    }

    pub(super) async fn call_list_tools(&self) -> Result<Vec<ToolDefinition>, PluginError> {
        const M: &str = "list-tools";
        self.require_tool(M)?;
        let answer = self
            .instances
            .run(M, async |i: &mut Instance| {
                let (g, store) = i.tool();
                g.call_list_tools(store).await
            })
            .await?;
        let mut tools = answer.map_err(|message| self.rejected(M, &message))?;
        if tools.len() > bounds::MAX_TOOLS {
            return Err(self.invalid(
                M,
                format!("{} tools, more than {}", tools.len(), bounds::MAX_TOOLS),
            ));
        }
        // Each definition first, so the error names the field at fault.
        let mut names = std::collections::HashSet::new();
        for tool in &tools {
            check_definition(tool).map_err(|e| self.invalid(M, e))?;
            if !names.insert(tool.name.as_str()) {
                return Err(self.invalid(M, format!("tool `{}` is listed twice", tool.name)));
            }
        }
        self.cap(M, tools.iter().map(definition_size).sum())?;
        for t in &mut tools {
            let r = self.redactor();
            for text in [&mut t.label, &mut t.description, &mut t.parameters_schema]
                .into_iter()
                .chain(t.snippet.as_mut())
                .chain(t.guidelines.iter_mut())
            {
                r.string(text);
            }
        }
        Ok(tools)
    }

    pub async fn prepare_arguments(
        &self,
        tool: &str,
        args: Map<String, Value>,
    ) -> Result<Map<String, Value>, PluginError> {
        const M: &str = "prepare-arguments";
        self.require_tool(M)?;
        let cap = self.limits().max_output_bytes;
        let (answer, edit) = self
            .instances
            .run(M, async |i: &mut Instance| {
                i.lend_args(ArgsEdit::new(args, false, cap), async |i, lent| {
                    let (g, store) = i.tool();
                    g.call_prepare_arguments(store, tool, lent).await
                })
                .await
            })
            .await?;
        answer.map_err(|message| self.rejected(M, &message))?;
        Ok(edit.args)
    }

    pub async fn before_call(
        &self,
        tool: &str,
        args: &Map<String, Value>,
    ) -> Result<BeforeCallDecision, PluginError> {
        const M: &str = "before-call";
        self.require_tool(M)?;
        let (args, cap) = (args.clone(), self.limits().max_output_bytes);
        let mut decision = self
            .instances
            .run(M, async |i: &mut Instance| {
                i.lend_args(ArgsEdit::new(args, true, cap), async |i, lent| {
                    let (g, store) = i.tool();
                    g.call_before_call(store, tool, lent).await
                })
                .await
            })
            .await?
            .0;
        if let BeforeCallDecision::Block(reason) = &mut decision {
            *reason = self.error_text(reason);
        }
        Ok(decision)
    }

    /// Run a tool. The outer error is the plugin failing; the inner one is
    /// the tool's own answer.
    pub async fn execute(
        &self,
        tool: &str,
        args: &Map<String, Value>,
        call_id: String,
        cancelled: Arc<AtomicBool>,
        progress: Option<ProgressFn>,
    ) -> Result<Result<CallOutput, ToolError>, PluginError> {
        const M: &str = "execute";
        self.require_tool(M)?;
        let args = serde_json::to_string(args).expect("a JSON map always serialises");
        let mut answer = self
            .instances
            .run(M, async |i: &mut Instance| {
                let ctx = i.store.data_mut().table.push(CallContext {
                    call_id,
                    cancelled,
                    progress,
                })?;
                let lent = Resource::new_borrow(ctx.rep());
                let answer = {
                    let (g, store) = i.tool();
                    g.call_execute(store, tool, &args, lent).await
                }?;
                i.store.data_mut().table.delete(ctx)?;
                Ok(answer)
            })
            .await?;
        match &mut answer {
            Ok(result) => {
                self.redactor().result(result);
            }
            Err(error) => {
                self.redactor().tool_error(error);
                if let tool::ToolError::Failed(m)
                | tool::ToolError::NotFound(m)
                | tool::ToolError::InvalidArgs(m) = error
                {
                    *m = bounds::cut(std::mem::take(m), self.error_cap());
                }
            }
        }
        let answer = answer.map(CallOutput::from).map_err(ToolError::from);
        if let Ok(output) = &answer {
            self.cap(M, output.size())?;
        }
        Ok(answer)
    }

    pub async fn after_call(
        &self,
        tool: &str,
        result: &CallOutput,
        is_error: bool,
    ) -> Result<Option<AfterCallOverride>, PluginError> {
        const M: &str = "after-call";
        self.require_tool(M)?;
        let result = &to_wit(result);
        let mut answer = self
            .instances
            .run(M, async |i: &mut Instance| {
                let (g, store) = i.tool();
                g.call_after_call(store, tool, result, is_error).await
            })
            .await?;
        if let Some(o) = &mut answer {
            if let Some(content) = &mut o.content {
                self.redactor().content(content);
            }
            if let Some(details) = &mut o.details {
                self.redactor().string(details);
            }
            let size = o.content.as_ref().map(|c| content_size(c)).unwrap_or(0)
                + o.details.as_ref().map_or(0, String::len);
            self.cap(M, size)?;
        }
        Ok(answer.map(|o| AfterCallOverride {
            content: o.content.map(content_from_wit),
            details: o.details.as_deref().and_then(|d| serde_json::from_str(d).ok()),
            is_error: o.is_error,
        }))
    }

    pub async fn render_call(
        &self,
        tool: &str,
        args: &Value,
        width: u32,
    ) -> Result<Option<String>, PluginError> {
        const M: &str = "render-call";
        self.require_tool(M)?;
        let args = args.to_string();
        let text = self
            .instances
            .run(M, async |i: &mut Instance| {
                let (g, store) = i.tool();
                g.call_render_call(store, tool, &args, width).await
            })
            .await?;
        self.cap(M, text.as_ref().map_or(0, String::len))?;
        Ok(text.map(|t| self.redactor().text(&t).into_owned()))
    }

    pub async fn render_result(
        &self,
        tool: &str,
        result: &CallOutput,
        options: RenderOptions,
    ) -> Result<Option<String>, PluginError> {
        const M: &str = "render-result";
        self.require_tool(M)?;
        let result = &to_wit(result);
        let text = self
            .instances
            .run(M, async |i: &mut Instance| {
                let (g, store) = i.tool();
                g.call_render_result(store, tool, result, options).await
            })
            .await?;
        self.cap(M, text.as_ref().map_or(0, String::len))?;
        Ok(text.map(|t| self.redactor().text(&t).into_owned()))
    }
}

/// Every byte of a tool definition, for the plugin's output cap.
fn definition_size(t: &ToolDefinition) -> usize {
    t.name.len()
        + t.label.len()
        + t.description.len()
        + t.parameters_schema.len()
        + t.snippet.as_ref().map_or(0, String::len)
        + t.guidelines.iter().map(String::len).sum::<usize>()
        + t.category.as_ref().map_or(0, String::len)
}

/// A tool definition within the contract and the caps of `bounds`, or
/// what is wrong with it.
fn check_definition(t: &ToolDefinition) -> Result<(), String> {
    if !bounds::is_tool_name(&t.name) {
        return Err(format!(
            "tool name {} is not 1 to {} characters of [A-Za-z0-9_-]",
            shown(&t.name),
            bounds::MAX_TOOL_NAME
        ));
    }
    let name = &t.name;
    let line = |what: &str, text: &str, max: usize| {
        if text.len() > max {
            Err(format!(
                "tool `{name}`: its {what} has {} bytes, more than {max}",
                text.len()
            ))
        } else if text.chars().any(bounds::is_control) {
            Err(format!(
                "tool `{name}`: its {what} {} has control characters",
                shown(text)
            ))
        } else {
            Ok(())
        }
    };
    line("label", &t.label, bounds::MAX_LABEL)?;
    if let Some(snippet) = &t.snippet {
        line("snippet", snippet, bounds::MAX_PROMPT_LINE)?;
    }
    if t.guidelines.len() > bounds::MAX_GUIDELINES {
        return Err(format!(
            "tool `{name}`: {} guidelines, more than {}",
            t.guidelines.len(),
            bounds::MAX_GUIDELINES
        ));
    }
    for guideline in &t.guidelines {
        line("guideline", guideline, bounds::MAX_PROMPT_LINE)?;
    }
    if t.description.len() > bounds::MAX_DESCRIPTION {
        return Err(format!(
            "tool `{name}`: its description has {} bytes, more than {}",
            t.description.len(),
            bounds::MAX_DESCRIPTION
        ));
    }
    if t.description
        .chars()
        .any(|c| bounds::is_control(c) && !matches!(c, '\n' | '\r' | '\t'))
    {
        return Err(format!("tool `{name}`: its description has control characters"));
    }
    if let Some(category) = t.category.as_deref().filter(|c| !is_category(c)) {
        return Err(format!("tool `{name}`: {} is not a category", shown(category)));
    }
    if t.parameters_schema.len() > bounds::MAX_SCHEMA_BYTES {
        return Err(format!(
            "tool `{name}`: its schema has {} bytes, more than {}",
            t.parameters_schema.len(),
            bounds::MAX_SCHEMA_BYTES
        ));
    }
    let schema = serde_json::from_str(&t.parameters_schema)
        .map_err(|e| format!("tool `{name}`: its schema is not JSON: {e}"))?;
    ToolSchema::new(String::new(), schema).map_err(|e| format!("tool `{name}`: {e}"))?;
    Ok(())
}

fn is_category(c: &str) -> bool {
    !c.is_empty()
        && c.len() <= 64
        && c.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

fn content_size(content: &[Content]) -> usize {
    content
        .iter()
        .map(|c| match c {
            Content::Text(t) | Content::Json(t) => t.len(),
            Content::Image(i) => i.data.len() + i.mime_type.len(),
        })
        .sum()
}

fn from_wit(m: wit::ToolValueModel) -> ValueModel {
    ValueModel {
        value_class: m.value_class.map(|c| match c {
            wit::ValueClass::Critical => ValueClass::Critical,
            wit::ValueClass::Supporting => ValueClass::Supporting,
            wit::ValueClass::Optional => ValueClass::Optional,
            wit::ValueClass::AuditOnly => ValueClass::AuditOnly,
        }),
        side_effect: m.side_effect.map(|s| match s {
            wit::SideEffect::Pure => SideEffect::Pure,
            wit::SideEffect::ReadOnly => SideEffect::ReadOnly,
            wit::SideEffect::MutatesLocal => SideEffect::MutatesLocal,
            wit::SideEffect::MutatesExternal => SideEffect::MutatesExternal,
            wit::SideEffect::Indeterminate => SideEffect::Indeterminate,
        }),
        cost: m
            .cost
            .map(|c| CostModel {
                typical_kb: c.typical_kb,
                max_kb: c.max_kb,
                latency_ms_p50: c.latency_ms_p50,
                dollars: c.dollars,
                freshness_ttl_s: c.freshness_ttl_s,
            })
            .unwrap_or_default(),
        field_groups: m.field_groups.map(|groups| {
            groups
                .into_iter()
                .map(|g| {
                    let group = FieldGroup {
                        fields: g.fields,
                        estimated_value: g.estimated_value,
                        default_include: g.default_include,
                    };
                    (g.name, group)
                })
                .collect()
        }),
        follow_ups: m.follow_ups.map(|links| {
            links
                .into_iter()
                .map(|l| FollowUpLink {
                    tool: l.tool,
                    probability: l.probability,
                    projection: l.projection,
                    projection_arg: l.projection_arg,
                })
                .collect()
        }),
        invalidates: m.invalidates,
        fail_fast_after_n: m.fail_fast_after_n,
        rate_limit_host: m.rate_limit_host,
        speculate: m.speculate,
    }
}
