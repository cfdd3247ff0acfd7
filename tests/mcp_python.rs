//! `toolhost serve` driven by the official Python MCP SDK (`tests/mcp/drive.py`)
//! over stdio and streamable HTTP, and proxying a third-party MCP server
//! (`@modelcontextprotocol/server-everything`) whose `echo` tool the
//! `fixture_shout` enricher adapts; and `toolhost serve --watch` while its
//! plugin directory changes (`tests/mcp/watch.py`); and what the agent is
//! told of the tools, `serve --root` (`tests/mcp/agent.py`).
//!
//! Needs `make venv upstream host` (the Makefile's `test` runs them); a
//! missing piece fails with that instruction.

use toolhost_tests::{everything_server, expect_driver_ok, guest, plugin_dir, python_driver};

fn drive(transport: &str, upstream: bool) {
    let plugins = plugin_dir(&[
        ("10-shout", "fixture_shout", None),
        ("20-text-tools", "text_tools", None),
    ]);
    let mut command = python_driver("drive.py");
    command
        .arg("--plugins")
        .arg(plugins.path())
        .args(["--transport", transport]);
    if upstream {
        command.arg("--upstream").arg(everything_server());
    }
    expect_driver_ok(&mut command, transport);
}

#[test]
fn stdio() {
    drive("stdio", false);
}

#[test]
fn streamable_http() {
    drive("http", false);
}

#[test]
fn stdio_proxying_an_upstream_server_with_an_enricher() {
    drive("stdio", true);
}

#[test]
fn a_watched_plugin_directory_is_reloaded_and_the_client_told() {
    let mut command = python_driver("watch.py");
    command.arg("--tool-plugin").arg(guest("text_tools"));
    expect_driver_ok(&mut command, "watch");
}

/// Instructions, the `system-prompt` prompt, titles, annotations and
/// output schemas, over text_tools and an annotated upstream server.
fn agent(transport: &str) {
    let plugins = plugin_dir(&[("20-text-tools", "text_tools", None)]);
    let mut command = python_driver("agent.py");
    command
        .arg("--plugins")
        .arg(plugins.path())
        .args(["--transport", transport]);
    expect_driver_ok(&mut command, &format!("agent over {transport}"));
}

#[test]
fn the_agent_is_told_of_the_tools_over_stdio() {
    agent("stdio");
}

#[test]
fn the_agent_is_told_of_the_tools_over_http() {
    agent("http");
}
