//! `toolhost:plugin@0.3.0` (`wit/0.3`), the latest version: its types are
//! the form every version's values take at the boundary, and its host
//! imports are the ones implemented (`host_api`); older versions' imports
//! delegate to them.
//!
//! The imports are implemented here, on the store's [`HostState`]; every
//! one but `http.fetch` is charged to the call's CPU budget
//! ([`HostState::charged`]).
//!
//! One world, `full-plugin`, covers every plugin: an enricher-only or
//! tool-only component simply lacks one of the exports, and the loader looks
//! each export up on its own. Host imports are synchronous (they only touch
//! host memory) except `http.fetch` and `pending.wait`, which wait on the
//! network. `http.start` checks the request while the plugin waits and
//! sends it on a task of its own (`host_api::pending`).

wasmtime::component::bindgen!({
    path: "../wit/0.3",
    world: "full-plugin",
    imports: {
        "toolhost:plugin/http.fetch": async | trappable,
        "toolhost:plugin/http.[static]pending.wait": async | trappable,
        default: trappable,
    },
    exports: { default: async },
    with: {
        "toolhost:plugin/types.tool-schema": crate::schema::SchemaEdit,
        "toolhost:plugin/types.tool-args": crate::args_edit::ArgsEdit,
        "toolhost:plugin/types.call-context": crate::plugin::host_api::CallContext,
        "toolhost:plugin/http.pending": crate::plugin::host_api::Pending,
    },
});

pub use exports::toolhost::plugin::{enricher, tool};
// `self::`: in doctests the crate `toolhost` is in scope too, and a bare
// `toolhost` in a `use` would be ambiguous with the generated module.
pub use self::toolhost::plugin::{host, http, types, value_model_types};

use std::sync::atomic::Ordering;

use wasmtime::component::Resource;

use crate::args_edit::ArgsEdit;
use crate::bounds::{MAX_LOG_LINE, cut};
use crate::plugin::host_api::{CallContext, HostState, LogLevel, Pending, start_request, unless_cancelled};
use crate::schema::{EditError, SchemaEdit};

impl From<EditError> for types::EditError {
    fn from(e: EditError) -> Self {
        match e {
            EditError::NoSuchField(s) => Self::NoSuchField(s),
            EditError::InvalidJson(s) => Self::InvalidJson(s),
            EditError::InvalidSchema(s) => Self::InvalidSchema(s),
            EditError::TooLarge(n) => Self::TooLarge(n),
            EditError::ReadOnly => Self::ReadOnly,
        }
    }
}

type R<T> = wasmtime::Result<T>;
type Edit<T> = R<Result<T, types::EditError>>;

impl HostState {
    fn schema(&mut self, r: &Resource<SchemaEdit>) -> R<&mut SchemaEdit> {
        Ok(self.table.get_mut(r)?)
    }

    fn args(&mut self, r: &Resource<ArgsEdit>) -> R<&mut ArgsEdit> {
        Ok(self.table.get_mut(r)?)
    }
}

fn edit<T>(result: Result<T, EditError>) -> Edit<T> {
    Ok(result.map_err(Into::into))
}

impl types::Host for HostState {}

impl types::HostToolSchema for HostState {
    fn description(&mut self, s: Resource<SchemaEdit>) -> R<String> {
        self.charged(|h| Ok(h.schema(&s)?.schema.description().to_owned()))
    }

    fn set_tool_description(&mut self, s: Resource<SchemaEdit>, description: String) -> Edit<()> {
        self.charged(|h| edit(h.schema(&s)?.set_tool_description(description)))
    }

    fn property_names(&mut self, s: Resource<SchemaEdit>) -> R<Vec<String>> {
        self.charged(|h| Ok(h.schema(&s)?.schema.property_names()))
    }

    fn get_property(&mut self, s: Resource<SchemaEdit>, name: String) -> R<Option<String>> {
        self.charged(|h| Ok(h.schema(&s)?.schema.property(&name).map(|v| v.to_string())))
    }

    fn set_property(&mut self, s: Resource<SchemaEdit>, name: String, schema: String) -> Edit<bool> {
        self.charged(|h| edit(h.schema(&s)?.set_property(&name, &schema)))
    }

    fn remove_params(&mut self, s: Resource<SchemaEdit>, names: Vec<String>) -> R<u32> {
        self.charged(|h| Ok(h.schema(&s)?.remove_params(&names)))
    }

    fn required(&mut self, s: Resource<SchemaEdit>) -> R<Vec<String>> {
        self.charged(|h| Ok(h.schema(&s)?.schema.required()))
    }

    fn set_required(&mut self, s: Resource<SchemaEdit>, name: String, required: bool) -> Edit<()> {
        self.charged(|h| edit(h.schema(&s)?.set_required(&name, required)))
    }

    fn set_enum(&mut self, s: Resource<SchemaEdit>, name: String, values: Vec<String>) -> Edit<()> {
        self.charged(|h| edit(h.schema(&s)?.set_enum(&name, values)))
    }

    fn add_enum_param(
        &mut self,
        s: Resource<SchemaEdit>,
        name: String,
        description: String,
        values: Vec<String>,
    ) -> Edit<()> {
        self.charged(|h| edit(h.schema(&s)?.add_enum_param(&name, description, values)))
    }

    fn set_description(&mut self, s: Resource<SchemaEdit>, name: String, description: String) -> Edit<()> {
        self.charged(|h| edit(h.schema(&s)?.set_description(&name, description)))
    }

    fn set_default(&mut self, s: Resource<SchemaEdit>, name: String, value: String) -> Edit<()> {
        self.charged(|h| edit(h.schema(&s)?.set_default(&name, &value)))
    }

    fn to_json(&mut self, s: Resource<SchemaEdit>) -> R<String> {
        self.charged(|h| {
            let edit = h.schema(&s)?;
            let mut value = edit.schema.to_value();
            value["description"] = edit.schema.description().into();
            Ok(value.to_string())
        })
    }

    fn drop(&mut self, s: Resource<SchemaEdit>) -> R<()> {
        // Lent handles are owned by the host, which takes them back itself.
        let _ = s;
        Ok(())
    }
}

impl types::HostToolArgs for HostState {
    fn keys(&mut self, a: Resource<ArgsEdit>) -> R<Vec<String>> {
        self.charged(|h| Ok(h.args(&a)?.args.keys().cloned().collect()))
    }

    fn get(&mut self, a: Resource<ArgsEdit>, key: String) -> R<Option<String>> {
        self.charged(|h| Ok(h.args(&a)?.get(&key)))
    }

    fn set(&mut self, a: Resource<ArgsEdit>, key: String, value: String) -> Edit<()> {
        // The size caps are the handle's own (`ArgsEdit` was lent with the
        // plugin's output limit and the room left to write), checked there.
        self.charged(|h| edit(h.args(&a)?.set(key, &value)))
    }

    fn remove(&mut self, a: Resource<ArgsEdit>, key: String) -> Edit<Option<String>> {
        self.charged(|h| edit(h.args(&a)?.remove(&key)))
    }

    fn to_json(&mut self, a: Resource<ArgsEdit>) -> R<String> {
        self.charged(|h| Ok(serde_json::to_string(&h.args(&a)?.args)?))
    }

    fn drop(&mut self, a: Resource<ArgsEdit>) -> R<()> {
        let _ = a;
        Ok(())
    }
}

impl types::HostCallContext for HostState {
    fn call_id(&mut self, c: Resource<CallContext>) -> R<String> {
        self.charged(|h| Ok(h.table.get(&c)?.call_id.clone()))
    }

    fn is_cancelled(&mut self, c: Resource<CallContext>) -> R<bool> {
        self.charged(|h| Ok(h.table.get(&c)?.cancelled.load(Ordering::Relaxed)))
    }

    fn report_progress(
        &mut self,
        c: Resource<CallContext>,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    ) -> R<()> {
        self.charged(|h| {
            let redactor = h.identity.http.redactor();
            let message = message.map(|m| cut(redactor.text(&m).into_owned(), MAX_LOG_LINE));
            if let Some(report) = &h.table.get(&c)?.progress {
                report(progress, total, message);
            }
            Ok(())
        })
    }

    fn drop(&mut self, c: Resource<CallContext>) -> R<()> {
        let _ = c;
        Ok(())
    }
}

impl host::Host for HostState {
    fn log(&mut self, level: host::LogLevel, message: String) -> R<()> {
        let level = match level {
            host::LogLevel::Trace => LogLevel::Trace,
            host::LogLevel::Debug => LogLevel::Debug,
            host::LogLevel::Info => LogLevel::Info,
            host::LogLevel::Warn => LogLevel::Warn,
            host::LogLevel::Error => LogLevel::Error,
        };
        self.charged(|h| {
            h.log.emit(level, "log", message);
            Ok(())
        })
    }

    fn config(&mut self) -> R<String> {
        self.charged(|h| Ok(h.identity.config_json.clone()))
    }
}

impl value_model_types::Host for HostState {}

/// A request given up because its call was cancelled (and aborted with it).
fn cancelled() -> Result<http::Response, http::HttpError> {
    Err(http::HttpError::Transport("the call was cancelled".into()))
}

impl http::HostPending for HostState {
    async fn wait(&mut self, this: Resource<Pending>) -> R<Result<http::Response, http::HttpError>> {
        let pending = self.table.delete(this)?;
        Ok(unless_cancelled(self.cancel.clone(), pending.wait(), cancelled).await)
    }

    fn drop(&mut self, this: Resource<Pending>) -> R<()> {
        // Dropping the request aborts it.
        self.table.delete(this)?;
        Ok(())
    }
}

impl http::Host for HostState {
    fn start(&mut self, req: http::Request) -> R<Result<Resource<Pending>, http::HttpError>> {
        let grant = self.identity.http.clone();
        let call = self.call_secrets.clone();
        let checked = match grant.check(req, call.as_deref()) {
            Ok(checked) => checked,
            Err(e) => return Ok(Err(e)),
        };
        let (started, limits) = (self.call_started, &self.identity.limits);
        let (wall, max_body) = (limits.wall, limits.max_output_bytes);
        let caps = (limits.requests_per_call, limits.requests_in_flight);
        // A prefetch's request waits for the real calls to the vendor.
        let background = self.background.clone();
        let send = async move {
            if let Some(background) = &background {
                background.wait_turn().await;
            }
            grant
                .send(checked, started, wall, max_body, call.as_deref())
                .await
        };
        let identity = self.identity.clone();
        match start_request(
            &identity.name,
            &mut self.requests,
            &identity.requests_in_flight,
            caps,
            send,
        ) {
            Ok(pending) => Ok(Ok(self.table.push(pending)?)),
            Err(refused) => Ok(Err(refused)),
        }
    }

    async fn fetch(&mut self, req: http::Request) -> R<Result<http::Response, http::HttpError>> {
        // A prefetch's request waits for the real calls to the vendor.
        if let Some(background) = &self.background {
            background.wait_turn().await;
        }
        let grant = self.identity.http.clone();
        let call = self.call_secrets.clone();
        let limits = &self.identity.limits;
        let request = grant.fetch(
            req,
            self.call_started,
            limits.wall,
            limits.max_output_bytes,
            call.as_deref(),
        );
        Ok(unless_cancelled(self.cancel.clone(), request, cancelled).await)
    }
}
