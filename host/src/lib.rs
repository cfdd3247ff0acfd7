//! toolhost: a host for AI-agent tools whose behaviour vendors extend with
//! sandboxed WebAssembly components.
//!
//! - [`plugin`]: the WASM runtime: loading, sandboxing, calling plugins.
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
//! - [`tools`]: the native tools (read, glob, grep, ls, web_fetch; write and
//!   edit when the root is writable).
//! - [`gate`]: the one check everything served passes: caps and secrets.
//! - [`output`]: tool results as the host owns them (every MCP content
//!   kind), and their conversions to and from rmcp's.
//! - [`pipeline`]: the call pipeline and [`pipeline::Toolhost`], the library API.
//! - [`prompt`]: the system-prompt sections of the listed tools.
//! - [`mcp`]: the MCP server front (feature `mcp-server`, on by default).
//! - [`auth`]: who may call the MCP endpoint over HTTP (bearer token, OAuth;
//!   feature `mcp-server`).
//! - [`client_log`]: plugin and upstream log lines sent to MCP clients.
//! - [`upstream`]: upstream MCP servers, a tool source: their connections,
//!   tools and calls.
//! - [`gateway`]: upstream servers' prompts, resources, completions and
//!   instructions, routed for the MCP front.
//! - [`http_client`]: the HTTP client stack (reqwest on rustls with ring).
//! - [`supply`]: knowing what runs: safe plugin paths, the lock file,
//!   approvals of each component's authority, vendors' signatures.
//! - [`atomic_file`]: replacing a file whole (write, edit, statistics).
//! - [`cluster`]: replicas sharing prefetches and invalidations on Redis.
//!
//! The command line (`toolhost serve`, `call`, `check`, `new`, `stats`) and
//! the configuration file are the `toolhost-cli` crate, built on this one.
//!
//! The WIT contract the plugins implement is in `wit/` at the repository root.

pub mod args_edit;
pub mod atomic_file;
#[cfg(feature = "mcp-server")]
pub mod auth;
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
pub mod prompt;
pub mod schema;
pub mod speculation;
pub mod supply;
pub mod tools;
pub mod upstream;
pub mod value_model;
