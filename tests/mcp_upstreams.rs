//! `toolhost serve` over upstream MCP servers, driven by the official Python
//! MCP SDK (`tests/mcp/upstreams.py`): the real
//! `@modelcontextprotocol/server-everything` reached by URL (streamable
//! HTTP) beside a URL with nothing listening, and a server whose tool list
//! changes at run time (`tests/mcp/changing_server.py`), with toolhost
//! serving stdio and streamable HTTP to two sessions.
//!
//! toolhost as a gateway (`tests/mcp/gateway.py`): one test for each kind
//! of tool, content and server feature, each asserting that a client sees
//! through toolhost what it sees connected to the server directly, the
//! prefix aside.
//!
//! Needs `make venv upstream host` (the Makefile's `test` runs them); a
//! missing piece fails with that instruction.

use toolhost_tests::{everything_server, expect_driver_ok, python_driver};

fn drive(scenario: &str) {
    let mut command = python_driver("upstreams.py");
    command.args(["--scenario", scenario]);
    if scenario == "http" {
        command.arg("--everything").arg(everything_server());
    }
    expect_driver_ok(&mut command, scenario);
}

#[test]
fn an_upstream_reached_by_url_is_served_and_a_dead_one_is_named() {
    drive("http");
}

#[test]
fn an_upstreams_tool_list_change_reaches_the_client() {
    drive("list-changed");
}

#[test]
fn every_http_session_is_told_of_a_tool_list_change() {
    drive("list-changed-http");
}

/// One gateway scenario of `tests/mcp/gateway.py`.
fn gateway(scenario: &str) {
    let mut command = python_driver("gateway.py");
    command
        .args(["--scenario", scenario])
        .arg("--everything")
        .arg(everything_server());
    expect_driver_ok(&mut command, scenario);
}

#[test]
fn gateway_tools_keep_every_field() {
    gateway("tools");
}

#[test]
fn gateway_text_content_is_unchanged() {
    gateway("text");
}

#[test]
fn gateway_image_content_is_unchanged() {
    gateway("image");
}

#[test]
fn gateway_content_keeps_its_annotations() {
    gateway("annotations");
}

#[test]
fn gateway_two_resource_links_stay_two_resource_links() {
    gateway("resource-links");
}

#[test]
fn gateway_embedded_resources_stay_embedded() {
    gateway("embedded-resource");
}

#[test]
fn gateway_structured_content_is_the_tools_own() {
    gateway("structured");
}

#[test]
fn gateway_audio_content_is_unchanged() {
    gateway("audio");
}

#[test]
fn gateway_serves_the_upstreams_prompts() {
    gateway("prompts");
}

#[test]
fn gateway_serves_the_upstreams_resources() {
    gateway("resources");
}

#[test]
fn gateway_serves_the_upstreams_resource_templates() {
    gateway("templates");
}

#[test]
fn gateway_forwards_completions() {
    gateway("completions");
}

#[test]
fn gateway_relays_resource_subscriptions() {
    gateway("subscriptions");
}

#[test]
fn gateway_relays_resource_list_changes() {
    gateway("resources-changed");
}

#[test]
fn gateway_relays_prompt_list_changes() {
    gateway("prompts-changed");
}

#[test]
fn gateway_merges_the_upstreams_instructions() {
    gateway("instructions");
}
