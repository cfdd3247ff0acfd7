//! Every integration test, one module per concern, in one binary (see
//! `Cargo.toml`). Run one concern with `cargo test -p toolhost-tests --test
//! integration -- NAME::`.

mod loading;
mod enrichment;
mod sandbox;
mod tool_plugins;
mod cli;
mod providers;
mod http_grants;
mod native;
mod pipeline;
mod mcp_python;
mod mcp_upstreams;
mod languages;
mod templates;
mod tool_js;
mod speculation;
mod trace_replay;
