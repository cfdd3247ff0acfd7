//! Glue between the generated `Guest` traits and the SDK's traits (hidden;
//! used by the export macros only).
//!
//! - The plugin value is built once per component instance, lazily on the
//!   first export call, from the `config()` import parsed as JSON, and kept
//!   for the instance's life. A failed `Plugin::new` is kept too: the load
//!   exports (`supported-categories`, `list-tools`) return its message, so the
//!   host shows it as the load error; any other export panics with it (a
//!   trap the host contains).
//! - [`EnricherExport<T>`] implements the generated `enricher` `Guest` for
//!   any `T: Enricher`, [`ToolsExport<T>`] the `tool` `Guest` for any
//!   `T: Tools`; the export macros name them through a type alias because
//!   wit-bindgen's macros take an identifier.
//!
//! Wasm components are single-threaded, so the instance lives in a
//! `thread_local!` registry keyed by `TypeId` (no `Send`/`Sync` bound on
//! plugins; a plugin may keep `RefCell`s).

use core::any::{Any, TypeId};
use core::cell::RefCell;
use core::marker::PhantomData;

use serde_json::Value;

use crate::bindings::enricher_plugin::exports::toolhost::plugin::enricher as wit_enricher;
use crate::bindings::shared::toolhost::plugin::host;
use crate::bindings::shared::toolhost::plugin::types::{CallContext as WitCallContext, ToolArgs, ToolSchema};
use crate::bindings::shared::toolhost::plugin::value_model_types as wit_vm;
use crate::bindings::tool_plugin::exports::toolhost::plugin::tool as wit_tool;
use crate::schema::parse;
use crate::{Args, CallContext, Enricher, Plugin, Schema, ToolResult, Tools};

pub use crate::bindings::enricher_plugin;
pub use crate::bindings::tool_plugin;

thread_local! {
    static INSTANCES: RefCell<Vec<(TypeId, &'static dyn Any)>> = const { RefCell::new(Vec::new()) };
}

/// The instance's plugin value, or why it could not be built.
pub fn instance<T: Plugin>() -> &'static Result<T, String> {
    let id = TypeId::of::<T>();
    let found = INSTANCES.with_borrow(|all| all.iter().find(|(k, _)| *k == id).map(|(_, v)| *v));
    let any = match found {
        Some(any) => any,
        None => {
            // Built outside the borrow: `T::new` may call host imports.
            let built: &'static Result<T, String> = Box::leak(Box::new(construct::<T>()));
            INSTANCES.with_borrow_mut(|all| all.push((id, built)));
            built
        }
    };
    any.downcast_ref()
        .expect("instance registry holds the type of its key")
}

fn construct<T: Plugin>() -> Result<T, String> {
    let text = host::config();
    let config: Value =
        serde_json::from_str(&text).map_err(|e| format!("plugin configuration is not valid JSON: {e}"))?;
    T::new(&config)
}

/// The plugin value; panics (a trap for the host) if it could not be built.
pub fn plugin<T: Plugin>() -> &'static T {
    match instance::<T>() {
        Ok(plugin) => plugin,
        Err(message) => panic!("plugin failed to initialise: {message}"),
    }
}

/// Implements the generated `enricher` `Guest` for any `T: Enricher`.
pub struct EnricherExport<T>(PhantomData<T>);

impl<T: Enricher> wit_enricher::Guest for EnricherExport<T> {
    fn supported_categories() -> Result<Vec<String>, String> {
        match instance::<T>() {
            Ok(plugin) => Ok(plugin.supported_categories()),
            Err(message) => Err(message.clone()),
        }
    }

    fn enrich_schema(tool: String, schema: &ToolSchema) -> Result<wit_enricher::Enriched, String> {
        let plugin = plugin::<T>();
        plugin.enrich_schema(&tool, &mut Schema::from_handle(schema))?;
        Ok(wit_enricher::Enriched {
            transforms_args: plugin.transforms_args(&tool),
        })
    }

    fn transform_args(tool: String, args: &ToolArgs) -> Result<(), String> {
        plugin::<T>().transform_args(&tool, &mut Args::from_handle(args))
    }

    fn value_model(tool: String) -> Option<wit_vm::ToolValueModel> {
        plugin::<T>().value_model(&tool).map(Into::into)
    }

    fn project_args(
        prev_tool: String,
        prev_result: String,
        link: wit_vm::FollowUpLink,
    ) -> Option<Vec<String>> {
        let prev_result = parse(&prev_result);
        let projected = plugin::<T>().project_args(&prev_tool, &prev_result, &link.into())?;
        Some(projected.iter().map(Value::to_string).collect())
    }

    fn rate_limit_host(tool: String, args: &ToolArgs) -> Option<String> {
        plugin::<T>().rate_limit_host(&tool, &Args::from_handle(args))
    }
}

/// Implements the generated `tool` `Guest` for any `T: Tools`.
pub struct ToolsExport<T>(PhantomData<T>);

impl<T: Tools> wit_tool::Guest for ToolsExport<T> {
    fn list_tools() -> Result<Vec<wit_tool::ToolDefinition>, String> {
        match instance::<T>() {
            Ok(plugin) => Ok(plugin.tools().into_iter().map(Into::into).collect()),
            Err(message) => Err(message.clone()),
        }
    }

    fn prepare_arguments(tool: String, args: &ToolArgs) -> Result<(), String> {
        plugin::<T>().prepare_arguments(&tool, &mut Args::from_handle(args))
    }

    fn before_call(tool: String, args: &ToolArgs) -> wit_tool::BeforeCallDecision {
        plugin::<T>().before_call(&tool, &Args::from_handle(args)).into()
    }

    fn after_ask(tool: String, args: &ToolArgs, answer: wit_tool::AskAnswer) -> wit_tool::BeforeCallDecision {
        plugin::<T>()
            .after_ask(&tool, &Args::from_handle(args), answer.into())
            .into()
    }

    fn execute(
        tool: String,
        args: String,
        ctx: &WitCallContext,
    ) -> Result<wit_tool::ToolResult, wit_tool::ToolError> {
        let args: Value = serde_json::from_str(&args)
            .map_err(|e| wit_tool::ToolError::InvalidArgs(format!("arguments are not valid JSON: {e}")))?;
        plugin::<T>()
            .execute(&tool, args, &CallContext::from_handle(ctx))
            .map(Into::into)
            .map_err(Into::into)
    }

    fn after_call(
        tool: String,
        outcome: wit_tool::ToolResult,
        is_error: bool,
    ) -> Option<wit_tool::AfterCallOverride> {
        let outcome: ToolResult = outcome.into();
        plugin::<T>()
            .after_call(&tool, &outcome, is_error)
            .map(Into::into)
    }

    fn render_call(tool: String, args: String, width: u32) -> Option<String> {
        plugin::<T>().render_call(&tool, &parse(&args), width)
    }

    fn render_result(
        tool: String,
        outcome: wit_tool::ToolResult,
        options: wit_tool::RenderOptions,
    ) -> Option<String> {
        let outcome: ToolResult = outcome.into();
        plugin::<T>().render_result(&tool, &outcome, &options.into())
    }
}
