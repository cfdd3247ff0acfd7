//! `toolhost serve` over upstream MCP servers, driven by the official Python
//! MCP SDK (`tests/mcp/upstreams.py`): the real
//! `@modelcontextprotocol/server-everything` reached by URL (streamable
//! HTTP) beside a URL with nothing listening, and a server whose tool list
//! changes at run time (`tests/mcp/changing_server.py`), with toolhost
//! serving stdio and streamable HTTP to two sessions.
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
