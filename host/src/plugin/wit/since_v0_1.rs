//! `toolhost:plugin@0.1.0` (`wit/0.1`, frozen): its bindings, its values
//! converted to and from the latest version's, and its host imports, each
//! delegating to the latest's implementation.
//!
//! What 0.1 lacks, it gets the latest's default for: a tool's title is its
//! label (none when the label is blank), it has no output schema and no
//! annotations, and its enrichers transform every tool they enrich. Its
//! content has a JSON block where the latest has a structured result: the
//! first JSON block that parses is the structured result, any other JSON
//! block stays text. Going back to a 0.1 plugin (after-call,
//! render-result), the structured result is a JSON block at the end and
//! the kinds 0.1 has no variant for (audio, resource links, embedded
//! resources) become text describing them.

use wasmtime::component::Resource;

use super::convert::Override;
use super::latest;
use crate::args_edit::ArgsEdit;
use crate::plugin::host_api::{CallContext, HostState};
use crate::schema::SchemaEdit;

wasmtime::component::bindgen!({
    path: "../wit/0.1",
    world: "full-plugin",
    imports: {
        "toolhost:plugin/http.fetch": async | trappable,
        default: trappable,
    },
    exports: { default: async },
    with: {
        "toolhost:plugin/types.tool-schema": crate::schema::SchemaEdit,
        "toolhost:plugin/types.tool-args": crate::args_edit::ArgsEdit,
        "toolhost:plugin/types.call-context": crate::plugin::host_api::CallContext,
    },
});

pub use exports::toolhost::plugin::{enricher, tool};
// `self::`: in doctests the crate `toolhost` is in scope too, and a bare
// `toolhost` in a `use` would be ambiguous with the generated module.
use self::toolhost::plugin::{host, http, types, value_model_types as vm};

use latest::tool as new;
use latest::value_model_types as new_vm;

impl From<vm::ToolValueModel> for new_vm::ToolValueModel {
    fn from(m: vm::ToolValueModel) -> Self {
        Self {
            value_class: m.value_class.map(|c| match c {
                vm::ValueClass::Critical => new_vm::ValueClass::Critical,
                vm::ValueClass::Supporting => new_vm::ValueClass::Supporting,
                vm::ValueClass::Optional => new_vm::ValueClass::Optional,
                vm::ValueClass::AuditOnly => new_vm::ValueClass::AuditOnly,
            }),
            side_effect: m.side_effect.map(|s| match s {
                vm::SideEffect::Pure => new_vm::SideEffect::Pure,
                vm::SideEffect::ReadOnly => new_vm::SideEffect::ReadOnly,
                vm::SideEffect::MutatesLocal => new_vm::SideEffect::MutatesLocal,
                vm::SideEffect::MutatesExternal => new_vm::SideEffect::MutatesExternal,
                vm::SideEffect::Indeterminate => new_vm::SideEffect::Indeterminate,
            }),
            cost: m.cost.map(|c| new_vm::CostModel {
                typical_kb: c.typical_kb,
                max_kb: c.max_kb,
                latency_ms_p50: c.latency_ms_p50,
                dollars: c.dollars,
                freshness_ttl_s: c.freshness_ttl_s,
            }),
            field_groups: m.field_groups.map(|groups| {
                groups
                    .into_iter()
                    .map(|g| new_vm::FieldGroup {
                        name: g.name,
                        fields: g.fields,
                        estimated_value: g.estimated_value,
                        default_include: g.default_include,
                    })
                    .collect()
            }),
            follow_ups: m.follow_ups.map(|links| {
                links
                    .into_iter()
                    .map(|l| new_vm::FollowUpLink {
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
}

impl From<new_vm::FollowUpLink> for vm::FollowUpLink {
    fn from(l: new_vm::FollowUpLink) -> Self {
        Self {
            tool: l.tool,
            probability: l.probability,
            projection: l.projection,
            projection_arg: l.projection_arg,
        }
    }
}

impl From<tool::Hooks> for new::Hooks {
    fn from(h: tool::Hooks) -> Self {
        [
            (tool::Hooks::PREPARE_ARGUMENTS, new::Hooks::PREPARE_ARGUMENTS),
            (tool::Hooks::BEFORE_CALL, new::Hooks::BEFORE_CALL),
            (tool::Hooks::AFTER_CALL, new::Hooks::AFTER_CALL),
            (tool::Hooks::RENDER_CALL, new::Hooks::RENDER_CALL),
            (tool::Hooks::RENDER_RESULT, new::Hooks::RENDER_RESULT),
        ]
        .into_iter()
        .filter(|(old, _)| h.contains(*old))
        .fold(new::Hooks::empty(), |all, (_, flag)| all | flag)
    }
}

impl From<tool::ToolDefinition> for new::ToolDefinition {
    fn from(t: tool::ToolDefinition) -> Self {
        Self {
            name: t.name,
            title: Some(t.label).filter(|l| !l.trim().is_empty()),
            description: t.description,
            parameters_schema: t.parameters_schema,
            output_schema: None,
            annotations: new::ToolAnnotations {
                read_only_hint: None,
                destructive_hint: None,
                idempotent_hint: None,
                open_world_hint: None,
            },
            snippet: t.snippet,
            guidelines: t.guidelines,
            category: t.category,
            hooks: t.hooks.into(),
        }
    }
}

impl From<tool::BeforeCallDecision> for new::BeforeCallDecision {
    fn from(d: tool::BeforeCallDecision) -> Self {
        match d {
            tool::BeforeCallDecision::Allow => Self::Allow,
            tool::BeforeCallDecision::Block(reason) => Self::Block(reason),
        }
    }
}

impl From<tool::ToolError> for new::ToolError {
    fn from(e: tool::ToolError) -> Self {
        match e {
            tool::ToolError::Failed(m) => Self::Failed(m),
            tool::ToolError::NotFound(m) => Self::NotFound(m),
            tool::ToolError::InvalidArgs(m) => Self::InvalidArgs(m),
            tool::ToolError::Cancelled => Self::Cancelled,
        }
    }
}

/// 0.1 content as the latest's: the blocks, and the first JSON block that
/// parses as the structured result.
fn content(content: Vec<tool::Content>) -> (Vec<new::Content>, Option<String>) {
    let mut structured = None;
    let blocks = content
        .into_iter()
        .filter_map(|c| match c {
            tool::Content::Text(t) => Some(new::Content::Text(t)),
            tool::Content::Image(i) => Some(new::Content::Image(new::Media {
                data: i.data,
                mime_type: i.mime_type,
                annotations: None,
            })),
            tool::Content::Json(j) => {
                if structured.is_none() && serde_json::from_str::<serde::de::IgnoredAny>(&j).is_ok() {
                    structured = Some(j);
                    None
                } else {
                    Some(new::Content::Text(j))
                }
            }
        })
        .collect();
    (blocks, structured)
}

impl From<tool::ToolResult> for new::ToolResult {
    fn from(r: tool::ToolResult) -> Self {
        let (content, structured) = content(r.content);
        Self {
            content,
            structured,
            details: r.details,
        }
    }
}

impl From<tool::AfterCallOverride> for Override {
    /// A 0.1 content list holds the structured result too, so replacing
    /// the content replaces it: with none if the new list has no JSON block.
    fn from(o: tool::AfterCallOverride) -> Self {
        let replaced = o.content.is_some();
        let (content, structured) = match o.content {
            Some(c) => {
                let (blocks, structured) = content(c);
                (Some(blocks), structured)
            }
            None => (None, None),
        };
        Self {
            clears_structured: replaced && structured.is_none(),
            wit: new::AfterCallOverride {
                content,
                structured,
                details: o.details,
                is_error: o.is_error,
            },
        }
    }
}

impl From<new::ToolResult> for tool::ToolResult {
    fn from(r: new::ToolResult) -> Self {
        let mut content: Vec<tool::Content> = r
            .content
            .into_iter()
            .map(|c| match c {
                new::Content::Text(t) => tool::Content::Text(t),
                new::Content::Image(i) => tool::Content::Image(tool::Image {
                    data: i.data,
                    mime_type: i.mime_type,
                }),
                new::Content::Audio(a) => tool::Content::Text(format!("[audio, {}]", a.mime_type)),
                new::Content::ResourceLink(l) => tool::Content::Text(format!("[resource link: {}]", l.uri)),
                new::Content::Resource(e) => match e.body {
                    new::ResourceBody::Text(text) => tool::Content::Text(text),
                    new::ResourceBody::Blob(_) => tool::Content::Text(format!("[resource: {}]", e.uri)),
                },
            })
            .collect();
        content.extend(r.structured.map(tool::Content::Json));
        Self {
            content,
            details: r.details,
        }
    }
}

impl From<new::RenderOptions> for tool::RenderOptions {
    fn from(o: new::RenderOptions) -> Self {
        Self {
            expanded: o.expanded,
            is_partial: o.is_partial,
            is_error: o.is_error,
            width: o.width,
        }
    }
}

// The host imports: each delegates to the latest version's.

type R<T> = wasmtime::Result<T>;
type Edit<T> = R<Result<T, types::EditError>>;
use latest::types as lt;

impl From<lt::EditError> for types::EditError {
    fn from(e: lt::EditError) -> Self {
        match e {
            lt::EditError::NoSuchField(s) => Self::NoSuchField(s),
            lt::EditError::InvalidJson(s) => Self::InvalidJson(s),
            lt::EditError::InvalidSchema(s) => Self::InvalidSchema(s),
            lt::EditError::TooLarge(n) => Self::TooLarge(n),
            lt::EditError::ReadOnly => Self::ReadOnly,
        }
    }
}

fn edit<T>(r: R<Result<T, lt::EditError>>) -> Edit<T> {
    Ok(r?.map_err(Into::into))
}

impl types::Host for HostState {}

impl types::HostToolSchema for HostState {
    fn description(&mut self, s: Resource<SchemaEdit>) -> R<String> {
        lt::HostToolSchema::description(self, s)
    }

    fn set_tool_description(&mut self, s: Resource<SchemaEdit>, description: String) -> Edit<()> {
        edit(lt::HostToolSchema::set_tool_description(self, s, description))
    }

    fn property_names(&mut self, s: Resource<SchemaEdit>) -> R<Vec<String>> {
        lt::HostToolSchema::property_names(self, s)
    }

    fn get_property(&mut self, s: Resource<SchemaEdit>, name: String) -> R<Option<String>> {
        lt::HostToolSchema::get_property(self, s, name)
    }

    fn set_property(&mut self, s: Resource<SchemaEdit>, name: String, schema: String) -> Edit<bool> {
        edit(lt::HostToolSchema::set_property(self, s, name, schema))
    }

    fn remove_params(&mut self, s: Resource<SchemaEdit>, names: Vec<String>) -> R<u32> {
        lt::HostToolSchema::remove_params(self, s, names)
    }

    fn required(&mut self, s: Resource<SchemaEdit>) -> R<Vec<String>> {
        lt::HostToolSchema::required(self, s)
    }

    fn set_required(&mut self, s: Resource<SchemaEdit>, name: String, required: bool) -> Edit<()> {
        edit(lt::HostToolSchema::set_required(self, s, name, required))
    }

    fn set_enum(&mut self, s: Resource<SchemaEdit>, name: String, values: Vec<String>) -> Edit<()> {
        edit(lt::HostToolSchema::set_enum(self, s, name, values))
    }

    fn add_enum_param(
        &mut self,
        s: Resource<SchemaEdit>,
        name: String,
        description: String,
        values: Vec<String>,
    ) -> Edit<()> {
        edit(lt::HostToolSchema::add_enum_param(
            self,
            s,
            name,
            description,
            values,
        ))
    }

    fn set_description(&mut self, s: Resource<SchemaEdit>, name: String, description: String) -> Edit<()> {
        edit(lt::HostToolSchema::set_description(self, s, name, description))
    }

    fn set_default(&mut self, s: Resource<SchemaEdit>, name: String, value: String) -> Edit<()> {
        edit(lt::HostToolSchema::set_default(self, s, name, value))
    }

    fn to_json(&mut self, s: Resource<SchemaEdit>) -> R<String> {
        lt::HostToolSchema::to_json(self, s)
    }

    fn drop(&mut self, s: Resource<SchemaEdit>) -> R<()> {
        lt::HostToolSchema::drop(self, s)
    }
}

impl types::HostToolArgs for HostState {
    fn keys(&mut self, a: Resource<ArgsEdit>) -> R<Vec<String>> {
        lt::HostToolArgs::keys(self, a)
    }

    fn get(&mut self, a: Resource<ArgsEdit>, key: String) -> R<Option<String>> {
        lt::HostToolArgs::get(self, a, key)
    }

    fn set(&mut self, a: Resource<ArgsEdit>, key: String, value: String) -> Edit<()> {
        edit(lt::HostToolArgs::set(self, a, key, value))
    }

    fn remove(&mut self, a: Resource<ArgsEdit>, key: String) -> Edit<Option<String>> {
        edit(lt::HostToolArgs::remove(self, a, key))
    }

    fn to_json(&mut self, a: Resource<ArgsEdit>) -> R<String> {
        lt::HostToolArgs::to_json(self, a)
    }

    fn drop(&mut self, a: Resource<ArgsEdit>) -> R<()> {
        lt::HostToolArgs::drop(self, a)
    }
}

impl types::HostCallContext for HostState {
    fn call_id(&mut self, c: Resource<CallContext>) -> R<String> {
        lt::HostCallContext::call_id(self, c)
    }

    fn is_cancelled(&mut self, c: Resource<CallContext>) -> R<bool> {
        lt::HostCallContext::is_cancelled(self, c)
    }

    fn report_progress(
        &mut self,
        c: Resource<CallContext>,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    ) -> R<()> {
        lt::HostCallContext::report_progress(self, c, progress, total, message)
    }

    fn drop(&mut self, c: Resource<CallContext>) -> R<()> {
        lt::HostCallContext::drop(self, c)
    }
}

impl host::Host for HostState {
    fn log(&mut self, level: host::LogLevel, message: String) -> R<()> {
        use latest::host::LogLevel as L;
        let level = match level {
            host::LogLevel::Trace => L::Trace,
            host::LogLevel::Debug => L::Debug,
            host::LogLevel::Info => L::Info,
            host::LogLevel::Warn => L::Warn,
            host::LogLevel::Error => L::Error,
        };
        latest::host::Host::log(self, level, message)
    }

    fn config(&mut self) -> R<String> {
        latest::host::Host::config(self)
    }
}

impl vm::Host for HostState {}

impl http::Host for HostState {
    async fn fetch(&mut self, req: http::Request) -> R<Result<http::Response, http::HttpError>> {
        use latest::http as lh;
        let req = lh::Request {
            method: req.method,
            url: req.url,
            headers: req.headers,
            body: req.body,
        };
        Ok(match lh::Host::fetch(self, req).await? {
            Ok(r) => Ok(http::Response {
                status: r.status,
                headers: r.headers,
                body: r.body,
            }),
            Err(e) => Err(match e {
                lh::HttpError::HostNotAllowed(h) => http::HttpError::HostNotAllowed(h),
                lh::HttpError::InvalidRequest(m) => http::HttpError::InvalidRequest(m),
                lh::HttpError::Timeout => http::HttpError::Timeout,
                lh::HttpError::TooLarge(n) => http::HttpError::TooLarge(n),
                lh::HttpError::Transport(m) | lh::HttpError::TooManyInFlight(m) => {
                    http::HttpError::Transport(m)
                }
            }),
        })
    }
}
