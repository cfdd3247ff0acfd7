//! toolhost: a host for AI-agent tools whose behaviour vendors extend with
//! sandboxed WebAssembly components.
//!
//! - [`plugin`]: the WASM runtime: loading, sandboxing, calling plugins.
//! - [`bounds`]: every cap on what a plugin hands the host, in one place.
//! - [`ownership`]: who serves a tool name when sources clash.
//! - [`schema`]: tool schemas and arguments as the host owns them, and the
//!   checked edits plugins make.
//! - [`enrich`]: the enricher chain (listing, provenance, argument transforms,
//!   value models).
//! - [`value_model`]: value models and their layering.
//! - [`catalog`]: the base catalog of provider tools.
//! - [`speculation`]: speculative prefetch (planner, projection, fan-out,
//!   cache, dispatcher, engine).
//! - [`tools`]: the native tools (read, glob, grep, ls, web_fetch; write and
//!   edit when the root is writable).
//! - [`output`]: tool results as the host owns them (every MCP content
//!   kind), and their conversions to and from rmcp's.
//! - [`pipeline`]: the call pipeline and [`pipeline::Toolhost`], the library API.
//! - [`prompt`]: the system-prompt sections of the listed tools.
//! - [`mcp`]: the MCP server front.
//! - [`auth`]: who may call the MCP endpoint over HTTP (bearer token, OAuth).
//! - [`client_log`]: plugin and upstream log lines sent to MCP clients.
//! - [`gateway`]: upstream servers' prompts, resources, completions and
//!   instructions, routed for the MCP front.
//! - [`render`]: terminal views of a call and its result (`toolhost call`).
//! - [`setup`]: a [`pipeline::Toolhost`] built from the configuration.
//! - [`watch`]: the plugin directory reloaded while serving (`serve --watch`).
//! - [`config`]: the user's configuration file, `toolhost.toml`.
//! - [`http_client`]: the HTTP client stack (reqwest on rustls with ring).
//! - [`atomic_file`]: replacing a file whole (write, edit, statistics).
//! - [`stats`]: speculation figures on disk and in the log (`toolhost stats`).
//! - [`check`]: `toolhost check`, the generic checks of one plugin.
//! - [`expect`]: `toolhost check --expect`, a vendor's golden cases.
//! - [`scaffold`]: `toolhost new`, plugin templates in five languages.
//!
//! The WIT contract the plugins implement is in `wit/` at the repository root.

pub mod atomic_file;
pub mod auth;
pub mod bounds;
pub mod catalog;
pub mod check;
pub mod client_log;
pub mod config;
pub mod enrich;
pub mod expect;
#[cfg(test)]
mod fuzzing;
pub mod gateway;
pub mod http_client;
pub mod mcp;
pub mod output;
pub mod ownership;
pub mod pipeline;
pub mod plugin;
pub mod prompt;
pub mod render;
pub mod scaffold;
pub mod schema;
pub mod setup;
pub mod speculation;
pub mod stats;
pub mod tools;
pub mod value_model;
pub mod watch;
