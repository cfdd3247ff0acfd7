//! Typed calls into a plugin's exports, whichever version of the contract
//! it speaks (`wit` dispatches): the host types go in, the host types
//! come out, and everything the guest returns is checked (sizes, counts,
//! names, JSON shape; the caps are in `bounds`) before the rest of the host
//! sees it. A tool definition outside the contract fails the plugin's load;
//! an error text (a refusal, a block reason, a tool error) is cut to
//! [`bounds::MAX_ERROR_TEXT`] or the plugin's output cap, whichever is less.
//!
//! Failure policy is not applied here: each method returns the plugin's
//! failure as a [`PluginError`] and the caller (the enricher chain, the call
//! pipeline) decides whether it fails open or closed.

use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use serde_json::{Map, Value, json};
use tokio_util::sync::CancellationToken;
use wasmtime::component::Resource;

use super::definition::{
    AfterCallOverride, Answer, BeforeCallDecision, Question, RenderOptions, Texts, ToolDefinition,
};
use super::host_api::{CallContext, ProgressFn};
use super::http::CallSecrets;
use super::instance::Instance;
use super::redact::Redactor;
use super::rerun;
use super::wit::{self, latest};
use super::{Plugin, PluginError};
use crate::args_edit::ArgsEdit;
use crate::bounds::{self, encoded_len, shown};
use crate::output::{Block, CallOutput, ToolError};
use crate::priority::Background;
use crate::schema::{SchemaEdit, ToolSchema};
use crate::tool::ToolAnnotations;
use crate::value_model::{FollowUpLink, ValueModel};

/// What an enricher did to one tool's schema.
pub struct Enrichment {
    /// The edited schema and the journal of its changes.
    pub edit: SchemaEdit,
    /// Whether calls to the tool need the plugin's `transform-args` (always,
    /// for a 0.1 plugin).
    pub transforms_args: bool,
}

impl Plugin {
    // Each export as the rest of the host calls it: observed (`rerun`:
    // recorded, compared with a shadow candidate) around the
    // `*_unobserved` method below, which runs the export in an instance
    // and checks its answer.

    pub(super) async fn call_supported_categories(&self) -> Result<Vec<String>, PluginError> {
        let input = self.observing().then(|| json!({}));
        self.observed(
            "supported-categories",
            input,
            |c| json!(c),
            pin!(self.supported_categories_unobserved()),
        )
        .await
    }

    /// Let the plugin edit `schema` of `tool`. On failure, or on the
    /// plugin's own error (`Rejected`: an answer, not a crash, so its health
    /// is untouched), nothing the plugin did is kept.
    pub async fn enrich_schema(&self, tool: &str, schema: ToolSchema) -> Result<Enrichment, PluginError> {
        let input = self.observing().then(|| rerun::schema_input(tool, &schema));
        self.observed(
            "enrich-schema",
            input,
            rerun::enrichment_json,
            pin!(self.enrich_schema_unobserved(tool, schema)),
        )
        .await
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
        let input = self
            .observing()
            .then(|| json!({"tool": tool, "args": &args, "room": room}));
        self.observed(
            "transform-args",
            input,
            |(args, room)| rerun::transformed_json(args, *room),
            pin!(self.transform_args_unobserved(tool, args, room)),
        )
        .await
    }

    /// The plugin's value model of `tool` (`value-model`), if it has one.
    pub async fn value_model(&self, tool: &str) -> Result<Option<ValueModel>, PluginError> {
        let input = self.observing().then(|| json!({"tool": tool}));
        self.observed(
            "value-model",
            input,
            |m| json!(m),
            pin!(self.value_model_unobserved(tool)),
        )
        .await
    }

    /// Argument objects for follow-up calls, or `None` for no opinion.
    pub async fn project_args(
        &self,
        prev_tool: &str,
        prev_result: &Value,
        link: &FollowUpLink,
    ) -> Result<Option<Vec<Map<String, Value>>>, PluginError> {
        let input = self
            .observing()
            .then(|| json!({"prev_tool": prev_tool, "prev_result": prev_result, "link": link}));
        self.observed(
            "project-args",
            input,
            |p| json!(p),
            pin!(self.project_args_unobserved(prev_tool, prev_result, link)),
        )
        .await
    }

    /// The host `tool`'s calls are rate-limited as, if the plugin names one (`rate-limit-host`).
    pub async fn rate_limit_host(
        &self,
        tool: &str,
        args: &Map<String, Value>,
    ) -> Result<Option<String>, PluginError> {
        let input = self.observing().then(|| json!({"tool": tool, "args": args}));
        self.observed(
            "rate-limit-host",
            input,
            |h| json!(h),
            pin!(self.rate_limit_host_unobserved(tool, args)),
        )
        .await
    }

    pub(super) async fn call_list_tools(&self) -> Result<Vec<ToolDefinition>, PluginError> {
        let input = self.observing().then(|| json!({}));
        self.observed(
            "list-tools",
            input,
            |t| rerun::definitions_json(t),
            pin!(self.list_tools_unobserved()),
        )
        .await
    }

    /// The tool's `prepare-arguments` hook: the arguments it is to be called with.
    pub async fn prepare_arguments(
        &self,
        tool: &str,
        args: Map<String, Value>,
    ) -> Result<Map<String, Value>, PluginError> {
        let input = self.observing().then(|| json!({"tool": tool, "args": &args}));
        self.observed(
            "prepare-arguments",
            input,
            |a| json!(a),
            pin!(self.prepare_arguments_unobserved(tool, args)),
        )
        .await
    }

    /// The tool's `before-call` hook: whether the call runs.
    pub async fn before_call(
        &self,
        tool: &str,
        args: &Map<String, Value>,
    ) -> Result<BeforeCallDecision, PluginError> {
        let input = self.observing().then(|| json!({"tool": tool, "args": args}));
        self.observed(
            "before-call",
            input,
            rerun::decision_json,
            pin!(self.before_call_unobserved(tool, args)),
        )
        .await
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
        self.execute_as(tool, args, call_id, cancelled, progress, None, None, None)
            .await
    }

    /// [`Plugin::execute`], as a prefetch behind the real calls when
    /// `background` says so, with the values of its per-caller secrets
    /// the pipeline resolved for the call's caller (`secrets`). `cancel`,
    /// when the call is cancelled, ends the plugin's waits on its requests
    /// (the plugin itself sees `cancelled`, which it polls).
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn execute_as(
        &self,
        tool: &str,
        args: &Map<String, Value>,
        call_id: String,
        cancelled: Arc<AtomicBool>,
        progress: Option<ProgressFn>,
        background: Option<Background>,
        secrets: Option<Arc<CallSecrets>>,
        cancel: Option<CancellationToken>,
    ) -> Result<Result<CallOutput, ToolError>, PluginError> {
        let input = self.observing().then(|| json!({"tool": tool, "args": args}));
        self.observed(
            rerun::EXECUTE,
            input,
            rerun::execution_json,
            pin!(self.execute_unobserved(
                tool, args, call_id, cancelled, progress, background, secrets, cancel,
            )),
        )
        .await
    }

    /// The tool's `after-call` hook: the output, possibly replaced.
    pub async fn after_call(
        &self,
        tool: &str,
        result: &CallOutput,
        is_error: bool,
    ) -> Result<Option<AfterCallOverride>, PluginError> {
        let input = self
            .observing()
            .then(|| json!({"tool": tool, "result": rerun::output_json(result), "is_error": is_error}));
        self.observed(
            "after-call",
            input,
            |o| json!(o.as_ref().map(rerun::override_json)),
            pin!(self.after_call_unobserved(tool, result, is_error)),
        )
        .await
    }

    /// The tool's `render-call` hook: how a user interface shows the call.
    pub async fn render_call(
        &self,
        tool: &str,
        args: &Value,
        width: u32,
    ) -> Result<Option<String>, PluginError> {
        let input = self
            .observing()
            .then(|| json!({"tool": tool, "args": args, "width": width}));
        self.observed(
            "render-call",
            input,
            |t| json!(t),
            pin!(self.render_call_unobserved(tool, args, width)),
        )
        .await
    }

    /// The tool's `render-result` hook: how a user interface shows the output.
    pub async fn render_result(
        &self,
        tool: &str,
        result: &CallOutput,
        options: RenderOptions,
    ) -> Result<Option<String>, PluginError> {
        let input = self.observing().then(|| {
            json!({"tool": tool, "result": rerun::output_json(result), "options": rerun::options_json(&options)})
        });
        self.observed(
            "render-result",
            input,
            |t| json!(t),
            pin!(self.render_result_unobserved(tool, result, options)),
        )
        .await
    }
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

    /// Refuse content (and `strings` more bytes beside it) that holds more
    /// blocks than a result may, or more bytes than the plugin's output
    /// cap, before any copy of it is made (see [`wit::extent`]).
    fn within(
        &self,
        method: &'static str,
        content: &[latest::tool::Content],
        strings: usize,
    ) -> Result<(), PluginError> {
        let (blocks, bytes) = wit::extent(content);
        if blocks > bounds::MAX_RESULT_BLOCKS {
            self.instances.health.failure();
            return Err(self.invalid(
                method,
                format!(
                    "it has {blocks} content blocks, more than the {} a result may hold",
                    bounds::MAX_RESULT_BLOCKS
                ),
            ));
        }
        self.cap(method, bytes.saturating_add(strings))
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
    pub(super) fn redactor(&self) -> &Redactor {
        self.instances.identity().http.redactor()
    }

    async fn supported_categories_unobserved(&self) -> Result<Vec<String>, PluginError> {
        const M: &str = "supported-categories";
        self.require_enricher(M)?;
        let answer = self
            .instances
            .run(M, async |i: &mut Instance| {
                let (g, store) = i.enricher();
                g.supported_categories(store).await
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

    async fn enrich_schema_unobserved(
        &self,
        tool: &str,
        schema: ToolSchema,
    ) -> Result<Enrichment, PluginError> {
        const M: &str = "enrich-schema";
        self.require_enricher(M)?;
        let (name, cap) = (self.name.clone(), self.limits().max_output_bytes);
        let (answer, mut edit) = self
            .instances
            .run(M, async |i: &mut Instance| {
                let handle = i
                    .store
                    .data_mut()
                    .table
                    .push(SchemaEdit::new(schema, name, cap))?;
                let lent = Resource::new_borrow(handle.rep());
                let answer = {
                    let (g, store) = i.enricher();
                    g.enrich_schema(store, tool, lent).await
                }?;
                Ok((answer, i.store.data_mut().table.delete(handle)?))
            })
            .await?;
        let enriched = answer.map_err(|message| self.rejected(M, &message))?;
        // The model reads the schema: no secret of this plugin in it.
        let (description, object) = edit.schema.parts_mut();
        self.redactor().string(description);
        self.redactor().map(object);
        Ok(Enrichment {
            edit,
            transforms_args: enriched.transforms_args,
        })
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

    async fn transform_args_unobserved(
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
                    // Boxed: wasmtime's call future is large, and inline it
                    // was copied with each enclosing future, a quarter of
                    // a guest entry's cost in a profile.
                    Box::pin(g.transform_args(store, tool, lent)).await
                })
                .await
            })
            .await?;
        answer.map_err(|message| self.rejected(M, &message))?;
        let room = edit.room();
        // The arguments go to another tool's backend, and may come back in
        // its answer: no secret of this plugin in them.
        let mut args = edit.args;
        self.redactor().map(&mut args);
        Ok((args, room))
    }

    async fn value_model_unobserved(&self, tool: &str) -> Result<Option<ValueModel>, PluginError> {
        const M: &str = "value-model";
        self.require_enricher(M)?;
        let model = self
            .instances
            .run(M, async |i: &mut Instance| {
                let (g, store) = i.enricher();
                g.value_model(store, tool).await
            })
            .await?;
        let Some(model) = model else { return Ok(None) };
        let model = ValueModel::from(model);
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

    async fn project_args_unobserved(
        &self,
        prev_tool: &str,
        prev_result: &Value,
        link: &FollowUpLink,
    ) -> Result<Option<Vec<Map<String, Value>>>, PluginError> {
        const M: &str = "project-args";
        self.require_enricher(M)?;
        let prev_result = prev_result.to_string();
        let link = latest::value_model_types::FollowUpLink::from(link);
        let answer = self
            .instances
            .run(M, async |i: &mut Instance| {
                let (g, store) = i.enricher();
                g.project_args(store, prev_tool, &prev_result, &link).await
            })
            .await?;
        let Some(items) = answer else { return Ok(None) };
        self.cap(M, items.iter().map(String::len).sum())?;
        items
            .iter()
            .map(|text| match serde_json::from_str(text) {
                Ok(Value::Object(mut map)) => {
                    self.redactor().map(&mut map);
                    Ok(map)
                }
                Ok(_) => Err(self.invalid(M, "each projected item must be a JSON object")),
                Err(e) => Err(self.invalid(M, format!("projected item is not JSON: {e}"))),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }

    async fn rate_limit_host_unobserved(
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
                    g.rate_limit_host(store, tool, lent).await
                })
                .await
            })
            .await?
            .0
            .map(|h| self.redactor().text(&h).into_owned());
        match host {
            Some(h) if h.is_empty() || h.len() > 253 || h.contains(char::is_whitespace) => {
                Err(self.invalid(M, format!("`{h}` is not a host name")))
            }
            other => Ok(other),
        }
    }

    async fn list_tools_unobserved(&self) -> Result<Vec<ToolDefinition>, PluginError> {
        const M: &str = "list-tools";
        self.require_tool(M)?;
        let answer = self
            .instances
            .run(M, async |i: &mut Instance| {
                let (g, store) = i.tool();
                g.list_tools(store).await
            })
            .await?;
        let mut tools = answer.map_err(|message| self.rejected(M, &message))?;
        if tools.len() > bounds::MAX_TOOLS {
            return Err(self.invalid(
                M,
                format!("{} tools, more than {}", tools.len(), bounds::MAX_TOOLS),
            ));
        }
        let size = tools.iter().map(definition_size).sum();
        let r = self.redactor();
        for t in &mut tools {
            for text in [&mut t.description, &mut t.parameters_schema]
                .into_iter()
                .chain(t.title.as_mut())
                .chain(t.output_schema.as_mut())
                .chain(t.snippet.as_mut())
                .chain(t.guidelines.iter_mut())
            {
                r.string(text);
            }
        }
        // Each definition first, so the error names the field at fault.
        let mut names = std::collections::HashSet::new();
        let mut definitions = Vec::with_capacity(tools.len());
        for tool in tools {
            if !names.insert(tool.name.clone()) {
                return Err(self.invalid(M, format!("tool `{}` is listed twice", tool.name)));
            }
            definitions.push(definition(tool).map_err(|e| self.invalid(M, e))?);
        }
        self.cap(M, size)?;
        Ok(definitions)
    }

    async fn prepare_arguments_unobserved(
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
                    g.prepare_arguments(store, tool, lent).await
                })
                .await
            })
            .await?;
        answer.map_err(|message| self.rejected(M, &message))?;
        // A validation error quotes arguments back to the model.
        let mut args = edit.args;
        self.redactor().map(&mut args);
        Ok(args)
    }

    async fn before_call_unobserved(
        &self,
        tool: &str,
        args: &Map<String, Value>,
    ) -> Result<BeforeCallDecision, PluginError> {
        const M: &str = "before-call";
        self.require_tool(M)?;
        let (args, cap) = (args.clone(), self.limits().max_output_bytes);
        let mut decision = BeforeCallDecision::from(
            self.instances
                .run(M, async |i: &mut Instance| {
                    i.lend_args(ArgsEdit::new(args, true, cap), async |i, lent| {
                        let (g, store) = i.tool();
                        g.before_call(store, tool, lent).await
                    })
                    .await
                })
                .await?
                .0,
        );
        match &mut decision {
            BeforeCallDecision::Allow => {}
            BeforeCallDecision::Block(reason) => *reason = self.error_text(reason),
            BeforeCallDecision::Ask(question) => {
                check_question(question).map_err(|e| self.invalid(M, e))?;
                // All the user is shown is scrubbed, as any text a plugin
                // hands over: the options as well as the message.
                question.message = self.error_text(&question.message);
                for option in question.options.iter_mut().flatten() {
                    *option = self.redactor().text(option).into_owned();
                }
            }
        }
        Ok(decision)
    }

    /// The tool's `after-ask` hook, with the user's answer to the question
    /// its `before-call` asked: whether the call runs. Asking again is
    /// refused (one question per call), as is a plugin that cannot ask.
    pub async fn after_ask(
        &self,
        tool: &str,
        args: &Map<String, Value>,
        answer: Answer,
    ) -> Result<BeforeCallDecision, PluginError> {
        let input = self
            .observing()
            .then(|| json!({"tool": tool, "args": args, "answer": rerun::answer_json(&answer)}));
        self.observed(
            rerun::AFTER_ASK,
            input,
            rerun::decision_json,
            pin!(self.after_ask_unobserved(tool, args, answer)),
        )
        .await
    }

    async fn after_ask_unobserved(
        &self,
        tool: &str,
        args: &Map<String, Value>,
        answer: Answer,
    ) -> Result<BeforeCallDecision, PluginError> {
        const M: &str = rerun::AFTER_ASK;
        self.require_tool(M)?;
        let (args, cap) = (args.clone(), self.limits().max_output_bytes);
        let answer = latest::tool::AskAnswer::from(answer);
        let decision = self
            .instances
            .run(M, async |i: &mut Instance| {
                i.lend_args(ArgsEdit::new(args, true, cap), async |i, lent| {
                    let (g, store) = i.tool();
                    g.after_ask(store, tool, lent, &answer).await
                })
                .await
            })
            .await?
            .0
            .ok_or_else(|| self.invalid(M, "a plugin of this contract version cannot ask"))?;
        match BeforeCallDecision::from(decision) {
            BeforeCallDecision::Ask(_) => {
                Err(self.invalid(M, "it asked again: a call asks the user one question at most"))
            }
            BeforeCallDecision::Block(reason) => Ok(BeforeCallDecision::Block(self.error_text(&reason))),
            BeforeCallDecision::Allow => Ok(BeforeCallDecision::Allow),
        }
    }

    #[allow(clippy::too_many_arguments)]
    async fn execute_unobserved(
        &self,
        tool: &str,
        args: &Map<String, Value>,
        call_id: String,
        cancelled: Arc<AtomicBool>,
        progress: Option<ProgressFn>,
        background: Option<Background>,
        secrets: Option<Arc<CallSecrets>>,
        cancel: Option<CancellationToken>,
    ) -> Result<Result<CallOutput, ToolError>, PluginError> {
        const M: &str = "execute";
        self.require_tool(M)?;
        let args = serde_json::to_string(args).expect("a JSON map always serialises");
        // Waiting for the real calls must never make the call late.
        if let Some(background) = &background {
            background.limit(self.limits().wall / 2);
        }
        let answer = self
            .instances
            .run(M, async |i: &mut Instance| {
                i.store.data_mut().background = background;
                i.store.data_mut().lend_secrets(secrets.clone());
                i.store.data_mut().cancel = cancel;
                let ctx = i.store.data_mut().table.push(CallContext {
                    call_id,
                    cancelled,
                    progress,
                })?;
                let lent = Resource::new_borrow(ctx.rep());
                let answer = {
                    let (g, store) = i.tool();
                    g.execute(store, tool, &args, lent).await
                }?;
                i.store.data_mut().table.delete(ctx)?;
                Ok(answer)
            })
            .await?;
        match answer {
            Ok(mut result) => {
                let strings = [&result.structured, &result.details];
                self.within(
                    M,
                    &result.content,
                    strings.iter().map(|s| s.as_ref().map_or(0, String::len)).sum(),
                )?;
                self.redactor().result(&mut result);
                if let Some(secrets) = &secrets {
                    secrets.redactor().result(&mut result);
                }
                Ok(Ok(self.output(M, result)?))
            }
            Err(error) => {
                let mut error = ToolError::from(error);
                if let ToolError::Failed(m) | ToolError::NotFound(m) | ToolError::InvalidArgs(m) = &mut error
                {
                    *m = self.error_text(m);
                    if let Some(secrets) = &secrets {
                        secrets.redactor().string(m);
                    }
                }
                Ok(Err(error))
            }
        }
    }

    /// A result the plugin handed over (redacted already): converted,
    /// within the plugin's output cap and the caps of its blocks.
    fn output(
        &self,
        method: &'static str,
        result: latest::tool::ToolResult,
    ) -> Result<CallOutput, PluginError> {
        let output = wit::convert_output(result).map_err(|e| self.invalid(method, e))?;
        self.cap(method, output.size())?;
        check_blocks(&output.content).map_err(|e| self.invalid(method, e))?;
        Ok(output)
    }

    async fn after_call_unobserved(
        &self,
        tool: &str,
        result: &CallOutput,
        is_error: bool,
    ) -> Result<Option<AfterCallOverride>, PluginError> {
        const M: &str = "after-call";
        self.require_tool(M)?;
        let result = &wit::output_to_wit(result);
        let answer = self
            .instances
            .run(M, async |i: &mut Instance| {
                let (g, store) = i.tool();
                g.after_call(store, tool, result, is_error).await
            })
            .await?;
        let Some(mut answer) = answer else { return Ok(None) };
        let strings = [&answer.wit.structured, &answer.wit.details];
        self.within(
            M,
            answer.wit.content.as_deref().unwrap_or_default(),
            strings.iter().map(|s| s.as_ref().map_or(0, String::len)).sum(),
        )?;
        self.redactor().after_call(&mut answer.wit);
        let over = wit::convert_after_call(answer).map_err(|e| self.invalid(M, e))?;
        let size = over.content.iter().flatten().map(Block::size).sum::<usize>()
            + over.structured.iter().flatten().map(encoded_len).sum::<usize>()
            + over.details.as_ref().map_or(0, encoded_len);
        self.cap(M, size)?;
        if let Some(content) = &over.content {
            check_blocks(content).map_err(|e| self.invalid(M, e))?;
        }
        Ok(Some(over))
    }

    async fn render_call_unobserved(
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
                g.render_call(store, tool, &args, width).await
            })
            .await?;
        self.cap(M, text.as_ref().map_or(0, String::len))?;
        Ok(text.map(|t| self.redactor().text(&t).into_owned()))
    }

    async fn render_result_unobserved(
        &self,
        tool: &str,
        result: &CallOutput,
        options: RenderOptions,
    ) -> Result<Option<String>, PluginError> {
        const M: &str = "render-result";
        self.require_tool(M)?;
        let result = &wit::output_to_wit(result);
        let text = self
            .instances
            .run(M, async |i: &mut Instance| {
                let (g, store) = i.tool();
                g.render_result(store, tool, result, options.into()).await
            })
            .await?;
        self.cap(M, text.as_ref().map_or(0, String::len))?;
        Ok(text.map(|t| self.redactor().text(&t).into_owned()))
    }
}

/// Every byte of a tool definition, for the plugin's output cap.
fn definition_size(t: &latest::tool::ToolDefinition) -> usize {
    t.name.len()
        + t.title.as_ref().map_or(0, String::len)
        + t.description.len()
        + t.parameters_schema.len()
        + t.output_schema.as_ref().map_or(0, String::len)
        + t.snippet.as_ref().map_or(0, String::len)
        + t.guidelines.iter().map(String::len).sum::<usize>()
        + t.category.as_ref().map_or(0, String::len)
}

/// A tool definition within the contract and the caps of `bounds`, as the
/// host's own, or what is wrong with it.
fn definition(t: latest::tool::ToolDefinition) -> Result<ToolDefinition, String> {
    Texts {
        name: &t.name,
        title: t.title.as_deref(),
        description: &t.description,
        snippet: t.snippet.as_deref(),
        guidelines: &t.guidelines,
    }
    .check()?;
    let name = &t.name;
    if let Some(category) = t.category.as_deref().filter(|c| !is_category(c)) {
        return Err(format!("tool `{name}`: {} is not a category", shown(category)));
    }
    let input_schema = object_schema(
        name,
        "input schema",
        &t.parameters_schema,
        bounds::MAX_SCHEMA_BYTES,
    )?;
    // The enricher chain edits input schemas; this is where one that is
    // not an object of `"type": "object"` (with valid properties) is refused.
    ToolSchema::new(String::new(), input_schema.clone()).map_err(|e| format!("tool `{name}`: {e}"))?;
    let output_schema = t
        .output_schema
        .as_deref()
        .map(|s| object_schema(name, "output schema", s, bounds::MAX_OUTPUT_SCHEMA_BYTES))
        .transpose()?;
    let a = &t.annotations;
    Ok(ToolDefinition {
        title: t.title.map(|l| l.trim().to_owned()).filter(|l| !l.is_empty()),
        description: t.description,
        input_schema,
        output_schema,
        annotations: ToolAnnotations {
            title: None,
            read_only_hint: a.read_only_hint,
            destructive_hint: a.destructive_hint,
            idempotent_hint: a.idempotent_hint,
            open_world_hint: a.open_world_hint,
        },
        snippet: t.snippet,
        guidelines: t.guidelines,
        category: t.category,
        hooks: t.hooks.into(),
        name: t.name,
    })
}

/// A schema a tool definition gives: at most `max` bytes of JSON, an
/// object whose `type` is `"object"`.
fn object_schema(tool: &str, what: &str, text: &str, max: usize) -> Result<Value, String> {
    if text.len() > max {
        return Err(format!(
            "tool `{tool}`: its {what} has {} bytes, more than {max}",
            text.len()
        ));
    }
    let value: Value =
        serde_json::from_str(text).map_err(|e| format!("tool `{tool}`: its {what} is not JSON: {e}"))?;
    match value.get("type") {
        Some(Value::String(t)) if t == "object" => Ok(value),
        _ => Err(format!(
            "tool `{tool}`: its {what} is not a JSON object of \"type\": \"object\""
        )),
    }
}

/// The caps on what a result's blocks name (URIs, names, MIME types) and
/// their annotations; their sizes count toward the plugin's output cap.
fn check_blocks(blocks: &[Block]) -> Result<(), String> {
    let field = |what: &str, text: &str, max: usize| {
        if text.len() > max {
            Err(format!(
                "a result's {what} has {} bytes, more than {max}",
                text.len()
            ))
        } else if text.chars().any(bounds::is_control) {
            Err(format!(
                "a result's {what} {} has control characters",
                shown(text)
            ))
        } else {
            Ok(())
        }
    };
    let annotations = |a: &Option<crate::output::ContentAnnotations>| -> Result<(), String> {
        let Some(a) = a else { return Ok(()) };
        if let Some(p) = a.priority.filter(|p| !(0.0..=1.0).contains(p)) {
            return Err(format!("a result's block has priority {p}, outside 0..1"));
        }
        match &a.last_modified {
            Some(stamp) => field("last-modified", stamp, bounds::MAX_RESULT_LABEL),
            None => Ok(()),
        }
    };
    for block in blocks {
        match block {
            Block::Text(t) => annotations(&t.annotations)?,
            Block::Image(m) | Block::Audio(m) => {
                field("MIME type", &m.mime_type, bounds::MAX_RESULT_LABEL)?;
                annotations(&m.annotations)?;
            }
            Block::ResourceLink(l) => {
                field("resource URI", &l.uri, bounds::MAX_URI)?;
                field("resource name", &l.name, bounds::MAX_RESULT_LABEL)?;
                if let Some(title) = &l.title {
                    field("resource title", title, bounds::MAX_RESULT_LABEL)?;
                }
                if let Some(mime) = &l.mime_type {
                    field("MIME type", mime, bounds::MAX_RESULT_LABEL)?;
                }
                annotations(&l.annotations)?;
            }
            Block::Resource(e) => {
                field("resource URI", &e.resource.uri, bounds::MAX_URI)?;
                if let Some(mime) = &e.resource.mime_type {
                    field("MIME type", mime, bounds::MAX_RESULT_LABEL)?;
                }
                annotations(&e.annotations)?;
            }
        }
    }
    Ok(())
}

/// A plugin's question within its bounds: the message and each option
/// non-empty, short, and free of control characters (the message may break
/// lines), the options 1 to [`bounds::MAX_QUESTION_OPTIONS`], none twice.
fn check_question(q: &Question) -> Result<(), String> {
    let controls = |s: &str, newline: bool| {
        s.chars()
            .any(|c| bounds::is_control(c) && !(newline && c == '\n'))
    };
    if q.message.trim().is_empty() || q.message.len() > bounds::MAX_QUESTION {
        return Err(format!(
            "its question is {} bytes: 1 to {} are shown to the user",
            q.message.len(),
            bounds::MAX_QUESTION
        ));
    }
    if controls(&q.message, true) {
        return Err("its question holds a control character".into());
    }
    if let Some(options) = &q.options {
        if options.is_empty() || options.len() > bounds::MAX_QUESTION_OPTIONS {
            return Err(format!(
                "its question offers {} options: 1 to {} are shown",
                options.len(),
                bounds::MAX_QUESTION_OPTIONS
            ));
        }
        for (i, option) in options.iter().enumerate() {
            if option.trim().is_empty()
                || option.len() > bounds::MAX_QUESTION_OPTION
                || controls(option, false)
            {
                return Err(format!(
                    "option {} of its question is not 1 to {} bytes without control characters",
                    i + 1,
                    bounds::MAX_QUESTION_OPTION
                ));
            }
            if options[..i].contains(option) {
                return Err(format!("option {} of its question is offered twice", i + 1));
            }
        }
    }
    Ok(())
}

fn is_category(c: &str) -> bool {
    !c.is_empty()
        && c.len() <= 64
        && c.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}
