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
//!    naming the call and holding its cancellation and progress.
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
//! The types above are all an embedder needs to start; the modules hold
//! the rest.
//!
//! - [`pipeline`]: the call pipeline and [`Toolhost`], the library API.
//! - [`plugin`]: the WASM runtime: loading, sandboxing, calling plugins.
//! - [`plugin_file`]: a plugin file as checked before its code runs: a
//!   safe path, its bytes read once, their digest.
//! - [`supply`]: knowing what runs: safe plugin paths, the lock file,
//!   approvals of each component's authority, vendors' signatures.
//! - [`tools`]: the native tools (read, glob, grep, ls, web_fetch; write and
//!   edit when the root is writable), and their reads kept whole for
//!   speculation.
//! - [`tool`]: the vocabulary of tools: a tool before enrichment and what
//!   the agent is told of it (title, annotations, icons, ...).
//! - [`upstream`]: upstream MCP servers, a tool source: their connections,
//!   tools and calls.
//! - [`output`]: tool results as the host owns them (every MCP content
//!   kind), and their conversions to and from rmcp's.
//! - [`mcp`]: the MCP server front, with who may call it over HTTP
//!   (`mcp::auth`) (feature `mcp-server`, on by default).
//! - [`bounds`]: every cap on what a plugin hands the host, in one place.
//! - [`ownership`]: who serves a tool name when sources clash.
//! - [`schema`]: tool schemas as the host owns them, and the checked edits
//!   plugins make.
//! - [`args_edit`]: call arguments lent to a plugin, and the checked edits
//!   it makes.
//! - [`enrich`]: the enricher chain (listing, provenance, argument transforms,
//!   value models).
//! - [`value_model`]: value models and their layering.
//! - [`catalog`]: the base catalog of provider tools.
//! - [`speculation`]: speculative prefetch (planner, projection, fan-out,
//!   cache, dispatcher, engine).
//! - [`gate`]: the one check everything served passes: caps and secrets.
//! - [`prompt`]: the system-prompt sections of the listed tools.
//! - [`client_log`]: plugin and upstream log lines sent to MCP clients.
//! - [`gateway`]: upstream servers' prompts, resources, completions and
//!   instructions, routed for the MCP front.
//! - [`http_client`]: the HTTP client stack (reqwest on rustls with ring).
//! - [`atomic_file`]: replacing a file whole (write, edit, statistics).
//! - [`cluster`]: replicas sharing prefetches and invalidations on Redis.
//!
//! The modules depend on each other in one direction, with no cycle (the
//! test in `layering` fails naming one): the leaves (`bounds`, `output`,
//! `tool`, `schema`, `args_edit`, `http_client`, `atomic_file`,
//! `plugin_file`) at the bottom; the tool sources (`tools`, `plugin`,
//! `upstream`) above the vocabulary they speak (`value_model`, `catalog`);
//! `supply` above the loader it admits for; `pipeline` above them all but
//! `mcp`, the front, at the top.
//!
//! The WIT contract the plugins implement is in `wit/` at the repository root.

// The front door. Not inlined, so the crate's page lists them as its first
// section (re-exports come before modules), each linking to its page.
#[doc(no_inline)]
pub use output::{Block, CallOutput, ToolError};
#[doc(no_inline)]
pub use pipeline::{
    BuildError, BuildReport, CallControl, CallError, CatalogError, Toolhost, ToolhostBuilder,
};
#[doc(no_inline)]
pub use plugin::{Runtime, RuntimeOptions};
#[doc(no_inline)]
pub use supply::TrustSettings;

pub mod args_edit;
pub mod atomic_file;
pub mod bounds;
pub mod catalog;
pub mod client_log;
pub mod cluster;
pub mod enrich;
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzzing;
pub mod gate;
pub mod gateway;
pub mod http_client;
#[cfg(feature = "mcp-server")]
pub mod mcp;
pub mod output;
pub mod ownership;
pub mod pipeline;
pub mod plugin;
pub mod plugin_file;
pub mod prompt;
pub mod schema;
pub mod speculation;
pub mod supply;
pub mod tool;
pub mod tools;
pub mod upstream;
pub mod value_model;

#[cfg(test)]
mod layering;
