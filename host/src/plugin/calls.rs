//! Typed calls into a plugin's exports: the host types go in, the host types
//! come out, and everything the guest returns is checked (sizes, JSON shape)
//! before the rest of the host sees it.
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
use super::{Plugin, PluginError};
use crate::schema::{ArgsEdit, SchemaEdit, ToolSchema};
use crate::value_model::{CostModel, FieldGroup, FollowUpLink, SideEffect, ValueClass, ValueModel};

use super::results::{content_from_wit, to_wit};
use crate::output::{Block, CallOutput, ToolError};
pub use tool::{BeforeCallDecision, Hooks, RenderOptions, ToolDefinition};
use tool::{Content, ToolResult};

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

    fn invalid(&self, method: &'static str, message: impl Into<String>) -> PluginError {
        PluginError::Invalid {
            plugin: self.name.clone(),
            method,
            message: message.into(),
        }
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
        let categories = answer.map_err(|message| PluginError::Rejected {
            plugin: self.name.clone(),
            method: M,
            message,
        })?;
        self.cap(M, categories.iter().map(String::len).sum())?;
        if let Some(bad) = categories.iter().find(|c| !is_category(c)) {
            return Err(self.invalid(
                M,
                format!("`{bad}` is not a category (lower-case letters, digits and `_`)"),
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
        const M: &str = "transform-args";
        self.require_enricher(M)?;
        let cap = self.limits().max_output_bytes;
        let (answer, args) = self
            .instances
            .run(M, async |i: &mut Instance| {
                i.lend_args(ArgsEdit::new(args, false, cap), async |i, lent| {
                    let (g, store) = i.enricher();
                    g.call_transform_args(store, tool, lent).await
                })
                .await
            })
            .await?;
        answer.map_err(|message| PluginError::Rejected {
            plugin: self.name.clone(),
            method: M,
            message,
        })?;
        Ok(args)
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
        let tools = answer.map_err(|message| PluginError::Rejected {
            plugin: self.name.clone(),
            method: M,
            message,
        })?;
        self.cap(
            M,
            tools
                .iter()
                .map(|t| t.parameters_schema.len() + t.description.len())
                .sum(),
        )?;
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
        let (answer, args) = self
            .instances
            .run(M, async |i: &mut Instance| {
                i.lend_args(ArgsEdit::new(args, false, cap), async |i, lent| {
                    let (g, store) = i.tool();
                    g.call_prepare_arguments(store, tool, lent).await
                })
                .await
            })
            .await?;
        answer.map_err(|message| PluginError::Rejected {
            plugin: self.name.clone(),
            method: M,
            message,
        })?;
        Ok(args)
    }

    pub async fn before_call(
        &self,
        tool: &str,
        args: &Map<String, Value>,
    ) -> Result<BeforeCallDecision, PluginError> {
        const M: &str = "before-call";
        self.require_tool(M)?;
        let (args, cap) = (args.clone(), self.limits().max_output_bytes);
        let decision = self
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
        if let BeforeCallDecision::Block(reason) = &decision {
            self.cap(M, reason.len())?;
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
        let answer = self
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
        if let Ok(result) = &answer {
            self.cap(M, result_size(result))?;
        }
        Ok(answer.map(CallOutput::from).map_err(ToolError::from))
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
        let answer = self
            .instances
            .run(M, async |i: &mut Instance| {
                let (g, store) = i.tool();
                g.call_after_call(store, tool, result, is_error).await
            })
            .await?;
        if let Some(o) = &answer {
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
        Ok(text)
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
        Ok(text)
    }
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

fn result_size(result: &ToolResult) -> usize {
    content_size(&result.content) + result.details.as_ref().map_or(0, String::len)
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
