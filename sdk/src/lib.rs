//! Write toolhost plugins in Rust: an enricher or a set of tools is a plain
//! trait impl, exported as a WebAssembly component by one macro.
//!
//! ```ignore
//! use toolhost_sdk::{Enricher, Plugin, Schema, json};
//!
//! struct Labels;
//!
//! impl Plugin for Labels {
//!     fn new(_config: &toolhost_sdk::Value) -> Result<Self, String> {
//!         Ok(Labels)
//!     }
//! }
//!
//! impl Enricher for Labels {
//!     fn supported_categories(&self) -> Vec<String> {
//!         vec!["issue_tracker".into()]
//!     }
//!     fn enrich_schema(&self, tool: &str, schema: &mut Schema<'_>) -> Result<(), String> {
//!         if tool == "create_issue" {
//!             schema.add_enum_param("label", "Issue label", ["bug", "feature"])?;
//!         }
//!         Ok(())
//!     }
//!
//!     // Nothing to map back: the host never enters this plugin for a call.
//!     fn transforms_args(&self, _tool: &str) -> bool {
//!         false
//!     }
//! }
//!
//! toolhost_sdk::export_enricher!(Labels);
//! ```
//!
//! Build with `cargo build --release --target wasm32-wasip2` (crate type
//! `cdylib`): the output is a component of contract `toolhost:plugin@0.3.0`
//! (the WIT is in the crate, under `wit/`).
//!
//! What lives where:
//! - the traits [`Plugin`], [`Enricher`], [`Tools`] and the export macros:
//!   here;
//! - [`Schema`] (`schema`), [`Args`] (`args`), [`EditError`] (`error`): the
//!   host-owned values lent to hooks;
//! - [`ValueModel`] and friends (`value_model`): speculation metadata;
//! - [`ToolDefinition`], [`ToolResult`], [`CallContext`], ... (`tool`): the
//!   tool-plugin side;
//! - [`log`], [`http`]: host imports;
//! - [`sanitize_field_name`] (`sanitize`): `cf_*` parameter names;
//! - `bindings` and `__private` (hidden): generated code and the glue from
//!   generated `Guest` traits to these traits.
//!
//! Each component instance builds its plugin value once, on the first call,
//! with [`Plugin::new`] from the plugin's `config` table (JSON). Calls into
//! one instance never overlap, so `&self` methods may use `Cell`/`RefCell`.

mod args;
#[doc(hidden)]
pub mod bindings;
mod error;
mod export;
pub mod http;
pub mod log;
mod sanitize;
mod schema;
mod tool;
mod value_model;

pub use args::Args;
pub use error::EditError;
pub use sanitize::{MAX_FIELD_NAME_LEN, fnv1a32, sanitize_field_name};
pub use schema::Schema;
pub use serde_json::{self, Value, json};
pub use tool::{
    AfterCallOverride, Annotations, Answer, BeforeCall, CallContext, Content, EmbeddedResource, Hooks, Media,
    Question, RenderOptions, ResourceBody, ResourceLink, Role, ToolAnnotations, ToolDefinition, ToolError,
    ToolResult,
};
pub use value_model::{CostModel, FieldGroup, FollowUpLink, SideEffect, ValueClass, ValueModel};

/// Glue used by the export macros. Not a stable API.
#[doc(hidden)]
pub mod __private {
    pub use crate::export::*;
}

/// A plugin value, built once per component instance from the plugin's
/// configuration.
pub trait Plugin: Sized + 'static {
    /// Build the plugin from its `config` table (a JSON object, `{}` if the
    /// manifest has none). An error stops the plugin from loading; the host
    /// shows the message.
    fn new(config: &Value) -> Result<Self, String>;
}

/// An enricher: adapts the tools of the categories it claims to one
/// provider. Export it with [`export_enricher!`] (or [`export_plugin!`] if it
/// also provides tools).
///
/// Every method but `supported_categories` has the reference's default (no
/// change, no opinion).
pub trait Enricher: Plugin {
    /// The categories this enricher claims (`issue_tracker`, ...). Called
    /// once, at load.
    fn supported_categories(&self) -> Vec<String>;

    /// Change `tool`'s input schema while the host builds the tool list.
    /// Pass a refused edit on with `?` (an [`EditError`] becomes the
    /// message): on an error or a panic the host rolls back this plugin's
    /// changes to the tool and logs the message under the plugin's and the
    /// tool's names.
    fn enrich_schema(&self, _tool: &str, _schema: &mut Schema<'_>) -> Result<(), String> {
        Ok(())
    }

    /// Whether calls to `tool` need [`transform_args`](Enricher::transform_args).
    /// Asked once per tool, after `enrich_schema` succeeded for it; the host
    /// enters this plugin for no other tool's calls.
    ///
    /// The default, `true`, is the safe answer: a wrong `true` costs a call
    /// into a `transform_args` that changes nothing, a wrong `false` would
    /// send the backend arguments it does not take. Return `false` for the
    /// tools whose arguments you leave alone.
    fn transforms_args(&self, _tool: &str) -> bool {
        true
    }

    /// Change a call's arguments before `tool` runs (map the parameters
    /// `enrich_schema` added back to what the backend takes). Called only
    /// for tools [`transforms_args`](Enricher::transforms_args) said `true`
    /// for. An error rejects the call with the message.
    fn transform_args(&self, _tool: &str, _args: &mut Args<'_>) -> Result<(), String> {
        Ok(())
    }

    /// `tool`'s value model for speculative prefetch, or `None` for no
    /// opinion. Called at load for each tool of a claimed category.
    fn value_model(&self, _tool: &str) -> Option<ValueModel> {
        None
    }

    /// Argument objects for calls to make ahead of time after `prev_tool`
    /// returned `prev_result` (its [`ToolResult::structured`]), following `link`; one
    /// prefetch per item. `None` lets the host use `link.projection`.
    fn project_args(
        &self,
        _prev_tool: &str,
        _prev_result: &Value,
        _link: &FollowUpLink,
    ) -> Option<Vec<Value>> {
        None
    }

    /// The network host a call to `tool` with `args` will hit, for per-host
    /// caps on prefetches. `None` uses the value model's `rate_limit_host`.
    fn rate_limit_host(&self, _tool: &str, _args: &Args<'_>) -> Option<String> {
        None
    }
}

/// A tool plugin: provides one or more tools the host runs. Export it with
/// [`export_tools!`] (or [`export_plugin!`] if it is also an enricher).
///
/// The host calls a hook only for tools whose [`ToolDefinition::hooks`] flag
/// for it is set; the defaults do nothing.
pub trait Tools: Plugin {
    /// The tools this plugin provides. Called once, at load.
    fn tools(&self) -> Vec<ToolDefinition>;

    /// Run `tool` with its final (validated, transformed) arguments.
    fn execute(&self, tool: &str, args: Value, ctx: &CallContext<'_>) -> Result<ToolResult, ToolError>;

    /// Normalise the model's raw arguments before validation (for example
    /// fold a legacy field into the current one). An error rejects the call
    /// as invalid arguments.
    fn prepare_arguments(&self, _tool: &str, _args: &mut Args<'_>) -> Result<(), String> {
        Ok(())
    }

    /// Decide, after validation, whether the call may run.
    fn before_call(&self, _tool: &str, _args: &Args<'_>) -> BeforeCall {
        BeforeCall::Allow
    }

    /// Decide, with the user's answer to the question `before_call` asked
    /// ([`BeforeCall::Ask`]), whether the call may run. The default runs it
    /// only if the user said yes. Asking again fails the call.
    fn after_ask(&self, _tool: &str, _args: &Args<'_>, answer: Answer) -> BeforeCall {
        match answer {
            Answer::Accepted(_) => BeforeCall::Allow,
            Answer::Declined => BeforeCall::Block("the user declined".into()),
            Answer::Cancelled => BeforeCall::Block("the user did not answer".into()),
        }
    }

    /// Look at a call's result and optionally replace parts of it.
    fn after_call(&self, _tool: &str, _result: &ToolResult, _is_error: bool) -> Option<AfterCallOverride> {
        None
    }

    /// Text for a terminal showing the call, or `None` for the host's
    /// default.
    fn render_call(&self, _tool: &str, _args: &Value, _width: u32) -> Option<String> {
        None
    }

    /// Text for a terminal showing the result, or `None` for the host's
    /// default.
    fn render_result(&self, _tool: &str, _result: &ToolResult, _opts: &RenderOptions) -> Option<String> {
        None
    }
}

/// Export a type implementing [`Enricher`] as this component's `enricher`
/// (world `enricher-plugin`). Use once, in a `cdylib` crate.
#[macro_export]
macro_rules! export_enricher {
    ($ty:ty) => {
        const _: () = {
            type __ToolhostEnricherExport = $crate::__private::EnricherExport<$ty>;
            $crate::__private::enricher_plugin::export_enricher_world!(
                __ToolhostEnricherExport with_types_in $crate::__private::enricher_plugin
            );
        };
    };
}

/// Export a type implementing [`Tools`] as this component's `tool` (world
/// `tool-plugin`). Use once, in a `cdylib` crate.
#[macro_export]
macro_rules! export_tools {
    ($ty:ty) => {
        const _: () = {
            type __ToolhostToolsExport = $crate::__private::ToolsExport<$ty>;
            $crate::__private::tool_plugin::export_tool_world!(
                __ToolhostToolsExport with_types_in $crate::__private::tool_plugin
            );
        };
    };
}

/// Export a type implementing both [`Enricher`] and [`Tools`] (world
/// `full-plugin`). Both exports share one plugin value.
#[macro_export]
macro_rules! export_plugin {
    ($ty:ty) => {
        $crate::export_enricher!($ty);
        $crate::export_tools!($ty);
    };
}
