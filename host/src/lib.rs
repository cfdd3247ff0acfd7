//! toolhost: a host for AI-agent tools whose behaviour vendors extend with
//! sandboxed WebAssembly components, served over MCP or called directly.
//!
//! # Embedding, in four steps
//!
//! 1. **Build a host** with [`Toolhost::builder`]: every source is opt-in
//!    (the native tools over a root, a plugin directory, upstream MCP
//!    servers) and each method of [`ToolhostBuilder`] says its default.
//!    Plugins pass the trust checks of [`supply`] unless you say otherwise.
//!    What could not be loaded or reached is left out and named in the
//!    [`BuildReport`]; what stops the build is a [`BuildError`].
//! 2. **List the tools** with [`Toolhost::list_tools`]: names, schemas and
//!    descriptions as the model is to see them.
//! 3. **Call one** with [`Toolhost::call_tool`], its [`CallControl`]
//!    naming the call and its [`Caller`] and holding its cancellation and
//!    progress; with an [`Audit`], each call is recorded.
//! 4. **Read the output**: a [`CallOutput`] of content [`Block`]s and
//!    structured content. A tool that ran and failed is an output with
//!    `is_error` set, which the model reads like any other; a call that got
//!    no result (an unknown tool, bad arguments, cancelled) is a
//!    [`CallError`] naming the tool and the plugin serving it.
//!
//! ```
//! use serde_json::json;
//! use toolhost::{CallControl, Toolhost};
//!
//! # #[tokio::main]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // The directory the native tools are confined to: the agent's project.
//! let project = tempfile::tempdir()?;
//! std::fs::write(project.path().join("notes.md"), "# Notes\nship on Friday\n")?;
//!
//! // 1. Build a host: the native tools over `project`, nothing else.
//! let (host, report) = Toolhost::builder().root(project.path()).build().await?;
//! assert!(report.is_empty(), "{:?}", report.lines());
//!
//! // 2. List the tools.
//! for tool in &host.list_tools().tools {
//!     println!("{}: {}", tool.name, tool.schema.description());
//! }
//!
//! // 3. Call one.
//! let call = CallControl::new("call-1");
//! let output = host.call_tool("grep", json!({"pattern": "Friday"}), &call).await?;
//!
//! // 4. Read its output.
//! assert!(!output.is_error);
//! assert!(output.text().contains("ship on Friday"));
//! # Ok(())
//! # }
//! ```
//!
//! With plugins, a [`Runtime`] (the WebAssembly engine, its code cache and
//! where plugin log lines go) loads them:
//!
//! ```no_run
//! use toolhost::{Runtime, RuntimeOptions, Toolhost};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let runtime = Runtime::new(RuntimeOptions::default())?;
//! let (host, report) = Toolhost::builder()
//!     .root(".")
//!     .plugins(&runtime, "plugins") // through the trust checks
//!     .build()
//!     .await?;
//! for line in report.lines() {
//!     eprintln!("left out: {line}");
//! }
//! # Ok(())
//! # }
//! ```
//!
//! To serve the host over MCP instead, see [`mcp`] (feature `mcp-server`,
//! on by default). The command line (`toolhost serve`, `call`, `check`,
//! `new`, `stats`) and its configuration file are the `toolhost-cli` crate,
//! built on this one; `host/examples/embed.rs` is the walkthrough above as
//! a program.
//!
//! # The modules
//!
//! The types above, re-exported here, are all an embedder needs; the
//! modules holding them are private. A few modules are public, each a
//! concept the `toolhost` command is built on:
//!
//! - [`mcp`]: serving a [`Toolhost`] over MCP, on stdio or streamable HTTP
//!   with its authorization (feature `mcp-server`, on by default).
//! - [`supply`]: knowing what runs: the lock file, approvals of each
//!   component's authority, vendors' signatures.
//! - [`plugin`]: one plugin, loaded and called directly (as `toolhost
//!   check` does), its log lines, and the recordings `toolhost replay`
//!   runs again.
//! - [`catalog`]: the base catalog of provider tools.
//! - [`enrich`]: the enricher chain (listing, provenance, value models).
//! - [`ownership`]: who serves a tool name when sources clash.
//! - [`pin`]: the served tool list pinned against silent change.
//! - [`speculation`]: speculative prefetch: its settings and statistics.
//! - [`bounds`]: every cap on what a plugin hands the host, in one place.
//! - [`atomic_file`]: replacing a file whole.
//! - [`error_chain`]: an error and its causes as one line, as a user is
//!   shown it.
//!
//! The modules depend on each other in one direction, with no cycle (the
//! test in `layering` fails naming one): the leaves (`bounds`, `output`,
//! `tool`, `schema`, `args_edit`, `http_client`, `json_structure`, `lines`,
//! `atomic_file`, `plugin_file`, `pin`, `trace_context`, `error_chain`, `malformed`, `secrets`) at the bottom; the tool sources (`tools`,
//! `plugin`, `upstream`) above the vocabulary they speak (`value_model`, `catalog`);
//! `supply` above the loader it admits for; `pipeline` above them all but
//! `mcp`, the front, at the top.
//!
//! The WIT contract the plugins implement is in `wit/` at the repository root.

#![deny(missing_docs)]

// The front door: what an embedder needs, re-exported from the private
// modules below. Not inlined, so the crate's page lists them as its first
// section (re-exports come before modules), each linking to its page.
#[doc(no_inline)]
pub use cluster::{Cluster, ClusterConfig};
#[doc(no_inline)]
pub use credentials::{CredentialError, CredentialSettings, Credentials, ExchangeSettings};
pub use error_chain::error_chain;
#[doc(no_inline)]
pub use output::{Block, Body, CallOutput, ToolError};
#[doc(no_inline)]
pub use pipeline::{
    Audit, AuditError, BuildError, BuildReport, CallControl, CallError, Caller, CatalogError, Decision,
    Policy, PolicyError, Toolhost, ToolhostBuilder, Verdict, Via, error_text,
};
#[doc(no_inline)]
pub use plugin::{LogLevel, LogLine, LogSink, Runtime, RuntimeError, RuntimeOptions, tracing_sink};
#[doc(no_inline)]
pub use schema::ToolSchema;
pub use secrets::held::redact as redact_secrets;
#[doc(no_inline)]
pub use supply::TrustSettings;
#[doc(no_inline)]
pub use tools::WebSettings;
#[doc(no_inline)]
pub use upstream::{Transport, UpstreamConfig};
#[doc(no_inline)]
pub use value_model::{FollowUpLink, UnsafeSpeculation, ValueModel, ValueModels};

// The concepts the `toolhost` command is built on, each a module.
pub mod atomic_file;
pub mod bounds;
pub mod catalog;
pub mod enrich;
#[cfg(feature = "mcp-server")]
pub mod mcp;
pub mod ownership;
pub mod pin;
pub mod plugin;
pub mod speculation;
pub mod supply;

// Generators of hostile input, for the property tests of crates built on
// this one (feature `fuzzing`).
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzzing;

mod args_edit;
mod cluster;
mod credentials;
mod error_chain;
mod gate;
mod http_client;
mod json_structure;
mod lines;
mod malformed;
mod output;
mod pipeline;
mod plugin_file;
mod priority;
mod prompt;
mod schema;
mod secrets;
mod tool;
mod tools;
mod trace_context;
mod upstream;
mod value_model;

#[cfg(test)]
mod layering;

/// What the workspace's own tests and benches reach past the API for.
///
/// Not API: no stability promise, hidden from the documentation (as serde's
/// `__private`). It re-exports exactly what `tests/` and `bench/` use.
#[doc(hidden)]
pub mod internals {
    pub use crate::output::mcp::to_mcp;
    pub use crate::pipeline::{Options, Sources};
    pub use crate::plugin::{BeforeCallDecision, CodeSource, LoadErrorKind, ProgressFn, Status, Version};
    pub use crate::schema::Action;
    pub use crate::tools::facts::value_models as native_value_models;
    pub use crate::tools::{NativeTools, Root, Urgency};
    pub use crate::upstream::Upstream;
    pub use crate::value_model::{Layer, SideEffect, ValueClass};

    /// The HTTP client stack the host uses.
    pub mod http_client {
        pub use crate::http_client::{BodyError, builder, whole_body};
    }
}
