//! `toolhost:plugin@0.2.0` (`wit/0.2`, frozen): its bindings, its values
//! converted to and from the latest version's, and its host imports, each
//! delegating to the latest's implementation.
//!
//! 0.3 added to 0.2 only concurrent HTTP (`http.start`, `pending`), so every
//! type the two share has the same shape and converts field by field
//! ([`Same`]); a 0.2 plugin just cannot start requests. The one type that
//! differs is `http-error`: a refusal 0.2 cannot name (`too-many-in-flight`,
//! which only `start` gives) would reach a 0.2 plugin as `transport`. 0.3
//! also lets `before-call` ask the user (`after-ask`), which a 0.2 plugin
//! never does.

use wasmtime::component::Resource;

use super::convert::Override;
use super::latest;
use crate::args_edit::ArgsEdit;
use crate::plugin::host_api::{CallContext, HostState};
use crate::schema::SchemaEdit;

wasmtime::component::bindgen!({
    path: "../wit/0.2",
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

use latest::enricher as new_enricher;
use latest::tool as new;
use latest::types as lt;
use latest::value_model_types as new_vm;

/// A value of one version as the same value of the other, where the two
/// versions' types have one shape.
pub(super) trait Same<T> {
    fn same(self) -> T;
}

impl<A: Same<B>, B> Same<Option<B>> for Option<A> {
    fn same(self) -> Option<B> {
        self.map(Same::same)
    }
}

impl<A: Same<B>, B> Same<Vec<B>> for Vec<A> {
    fn same(self) -> Vec<B> {
        self.into_iter().map(Same::same).collect()
    }
}

impl<A: Same<C>, B: Same<D>, C, D> Same<(C, D)> for (A, B) {
    fn same(self) -> (C, D) {
        (self.0.same(), self.1.same())
    }
}

macro_rules! itself {
    ($($t:ty),*) => {$(
        impl Same<$t> for $t {
            fn same(self) -> $t {
                self
            }
        }
    )*};
}

itself!(String, bool, u8, u16, u32, u64, f32, f64);

/// A record of the same fields in both versions, converted both ways.
macro_rules! record {
    (@one $from:ty, $to:ty { $($field:ident),* }) => {
        impl Same<$to> for $from {
            fn same(self) -> $to {
                type B = $to;
                B { $($field: self.$field.same()),* }
            }
        }
    };
    ($a:ty, $b:ty { $($field:ident),* $(,)? }) => {
        record!(@one $a, $b { $($field),* });
        record!(@one $b, $a { $($field),* });
    };
}

/// An enum or variant of the same cases in both versions, converted both
/// ways: the cases without a payload, then those with one.
macro_rules! cases {
    (@one $from:ty, $to:ty { $($unit:ident),* ; $($data:ident),* }) => {
        impl Same<$to> for $from {
            fn same(self) -> $to {
                type A = $from;
                type B = $to;
                match self {
                    $(A::$unit => B::$unit,)*
                    $(A::$data(x) => B::$data(x.same()),)*
                }
            }
        }
    };
    ($a:ty, $b:ty { $($unit:ident),* ; $($data:ident),* $(,)? }) => {
        cases!(@one $a, $b { $($unit),* ; $($data),* });
        cases!(@one $b, $a { $($unit),* ; $($data),* });
    };
}

cases!(vm::ValueClass, new_vm::ValueClass { Critical, Supporting, Optional, AuditOnly ; });
cases!(vm::SideEffect, new_vm::SideEffect {
    Pure, ReadOnly, MutatesLocal, MutatesExternal, Indeterminate ;
});
record!(
    vm::CostModel,
    new_vm::CostModel {
        typical_kb,
        max_kb,
        latency_ms_p50,
        dollars,
        freshness_ttl_s
    }
);
record!(
    vm::FieldGroup,
    new_vm::FieldGroup {
        name,
        fields,
        estimated_value,
        default_include
    }
);
record!(
    vm::FollowUpLink,
    new_vm::FollowUpLink {
        tool,
        probability,
        projection,
        projection_arg
    }
);
record!(
    vm::ToolValueModel,
    new_vm::ToolValueModel {
        value_class,
        side_effect,
        cost,
        field_groups,
        follow_ups,
        invalidates,
        fail_fast_after_n,
        rate_limit_host,
        speculate,
    }
);
record!(enricher::Enriched, new_enricher::Enriched { transforms_args });
record!(
    tool::ToolAnnotations,
    new::ToolAnnotations {
        read_only_hint,
        destructive_hint,
        idempotent_hint,
        open_world_hint
    }
);
record!(
    tool::ToolDefinition,
    new::ToolDefinition {
        name,
        title,
        description,
        parameters_schema,
        output_schema,
        annotations,
        snippet,
        guidelines,
        category,
        hooks,
    }
);
cases!(tool::Role, new::Role { User, Assistant ; });
record!(
    tool::Annotations,
    new::Annotations {
        audience,
        priority,
        last_modified
    }
);
record!(
    tool::Media,
    new::Media {
        data,
        mime_type,
        annotations
    }
);
record!(
    tool::ResourceLink,
    new::ResourceLink {
        uri,
        name,
        title,
        description,
        mime_type,
        size,
        annotations
    }
);
cases!(tool::ResourceBody, new::ResourceBody { ; Text, Blob });
record!(
    tool::EmbeddedResource,
    new::EmbeddedResource {
        uri,
        mime_type,
        body,
        annotations
    }
);
cases!(tool::Content, new::Content { ; Text, Image, Audio, ResourceLink, Resource });
record!(
    tool::ToolResult,
    new::ToolResult {
        content,
        structured,
        details
    }
);
cases!(tool::ToolError, new::ToolError { Cancelled ; Failed, NotFound, InvalidArgs });
// 0.3's decision may also ask, which 0.2's cannot: one way only.
cases!(@one tool::BeforeCallDecision, new::BeforeCallDecision { Allow ; Block });
record!(
    tool::AfterCallOverride,
    new::AfterCallOverride {
        content,
        structured,
        details,
        is_error
    }
);
record!(
    tool::RenderOptions,
    new::RenderOptions {
        expanded,
        is_partial,
        is_error,
        width
    }
);
cases!(types::EditError, lt::EditError {
    ReadOnly ; NoSuchField, InvalidJson, InvalidSchema, TooLarge
});
cases!(host::LogLevel, latest::host::LogLevel { Trace, Debug, Info, Warn, Error ; });
record!(
    http::Request,
    latest::http::Request {
        method,
        url,
        headers,
        body
    }
);
record!(
    http::Response,
    latest::http::Response {
        status,
        headers,
        body
    }
);

impl Same<new::Hooks> for tool::Hooks {
    fn same(self) -> new::Hooks {
        [
            (tool::Hooks::PREPARE_ARGUMENTS, new::Hooks::PREPARE_ARGUMENTS),
            (tool::Hooks::BEFORE_CALL, new::Hooks::BEFORE_CALL),
            (tool::Hooks::AFTER_CALL, new::Hooks::AFTER_CALL),
            (tool::Hooks::RENDER_CALL, new::Hooks::RENDER_CALL),
            (tool::Hooks::RENDER_RESULT, new::Hooks::RENDER_RESULT),
        ]
        .into_iter()
        .filter(|(old, _)| self.contains(*old))
        .fold(new::Hooks::empty(), |all, (_, flag)| all | flag)
    }
}

impl Same<tool::Hooks> for new::Hooks {
    fn same(self) -> tool::Hooks {
        [
            (new::Hooks::PREPARE_ARGUMENTS, tool::Hooks::PREPARE_ARGUMENTS),
            (new::Hooks::BEFORE_CALL, tool::Hooks::BEFORE_CALL),
            (new::Hooks::AFTER_CALL, tool::Hooks::AFTER_CALL),
            (new::Hooks::RENDER_CALL, tool::Hooks::RENDER_CALL),
            (new::Hooks::RENDER_RESULT, tool::Hooks::RENDER_RESULT),
        ]
        .into_iter()
        .filter(|(new, _)| self.contains(*new))
        .fold(tool::Hooks::empty(), |all, (_, flag)| all | flag)
    }
}

impl Same<http::HttpError> for latest::http::HttpError {
    fn same(self) -> http::HttpError {
        use latest::http::HttpError as E;
        match self {
            E::HostNotAllowed(h) => http::HttpError::HostNotAllowed(h),
            E::InvalidRequest(m) => http::HttpError::InvalidRequest(m),
            E::Timeout => http::HttpError::Timeout,
            E::TooLarge(n) => http::HttpError::TooLarge(n),
            E::Transport(m) | E::TooManyInFlight(m) => http::HttpError::Transport(m),
        }
    }
}

impl From<tool::AfterCallOverride> for Override {
    fn from(o: tool::AfterCallOverride) -> Self {
        Override::from(Same::<new::AfterCallOverride>::same(o))
    }
}

// The host imports: each delegates to the latest version's.

type R<T> = wasmtime::Result<T>;
type Edit<T> = R<Result<T, types::EditError>>;

fn edit<T>(r: R<Result<T, lt::EditError>>) -> Edit<T> {
    Ok(r?.map_err(Same::same))
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
        latest::host::Host::log(self, level.same(), message)
    }

    fn config(&mut self) -> R<String> {
        latest::host::Host::config(self)
    }
}

impl vm::Host for HostState {}

impl http::Host for HostState {
    async fn fetch(&mut self, req: http::Request) -> R<Result<http::Response, http::HttpError>> {
        Ok(match latest::http::Host::fetch(self, req.same()).await? {
            Ok(r) => Ok(r.same()),
            Err(e) => Err(e.same()),
        })
    }
}
