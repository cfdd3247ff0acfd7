//! Every integration test, one module per concern, in one binary (see
//! `Cargo.toml`). Run one concern with `cargo test -p toolhost-tests --test
//! integration -- NAME::`.

mod ask_user;
mod cli;
mod cluster;
mod contract;
mod enrichment;
mod gate;
mod http_concurrency;
mod http_grants;
mod languages;
mod loading;
mod mcp_python;
mod mcp_upstreams;
mod native;
mod pin;
mod pipeline;
mod providers;
mod record;
mod registry;
mod sandbox;
mod speculation;
mod supply;
mod templates;
mod tool_js;
mod tool_plugins;
mod trace_replay;
mod upstream_names;
