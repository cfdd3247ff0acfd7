//! `toolhost serve` driven by the official Python MCP SDK (`tests/mcp/drive.py`)
//! over stdio and streamable HTTP, and proxying a third-party MCP server
//! (`@modelcontextprotocol/server-everything`) whose `echo` tool the
//! `fixture_shout` enricher adapts; and `toolhost serve --watch` while its
//! plugin directory changes (`tests/mcp/watch.py`); what the agent is
//! told of the tools, `serve --root` (`tests/mcp/agent.py`); and the client
//! pinned to each protocol revision toolhost serves, over each transport
//! (`tests/mcp/revisions.py`); and the log lines a client is sent
//! (`tests/mcp/logs.py`).
//!
//! Also the fault-and-load run (`toolhost_tests::load`) at a small count:
//! `toolhost serve --http --watch` driven by Rust MCP clients (rmcp), every
//! answer checked. `--bin load` runs the full count and prints its figures.
//!
//! Needs the Python venv and the npm upstreams (`make venv upstream`): a
//! test skips without them, unless `TOOLHOST_TEST_ALL=1` (`toolchains`).

use toolhost_tests::load::{LoadSpec, run};
use toolhost_tests::{
    everything_server, expect_driver_ok, guest, needs, plugin_dir, python_driver, toolhost_binary,
};

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
    needs!(Python, Upstream);
    drive("stdio", false);
}

#[test]
fn streamable_http() {
    needs!(Python, Upstream);
    drive("http", false);
}

#[test]
fn stdio_proxying_an_upstream_server_with_an_enricher() {
    needs!(Python, Upstream);
    drive("stdio", true);
}

/// Plugin and upstream log lines as `notifications/message`: levels, the
/// rate limit, redaction (`tests/mcp/logs.py`).
fn logs(transport: &str) {
    let mut command = python_driver("logs.py");
    command
        .arg("--plugin")
        .arg(guest("fixture_attack_logs"))
        .args(["--transport", transport]);
    expect_driver_ok(&mut command, &format!("logs over {transport}"));
}

#[test]
fn log_lines_reach_a_stdio_client_filtered_limited_and_redacted() {
    needs!(Python);
    logs("stdio");
}

#[test]
fn log_lines_reach_an_http_client_filtered_limited_and_redacted() {
    needs!(Python);
    logs("http");
}

#[test]
fn a_watched_plugin_directory_is_reloaded_and_the_client_told() {
    needs!(Python);
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
    needs!(Python);
    agent("stdio");
}

#[test]
fn the_agent_is_told_of_the_tools_over_http() {
    needs!(Python);
    agent("http");
}

/// `tests/mcp/revisions.py`: the Python client pinned to one protocol
/// revision, over one transport.
fn revision(transport: &str, mode: &str) {
    let mut command = python_driver("revisions.py");
    command
        .arg("--tool-plugin")
        .arg(guest("text_tools"))
        .args(["--transport", transport, "--mode", mode]);
    expect_driver_ok(&mut command, &format!("{transport} {mode}"));
}

#[test]
fn protocol_2025_11_25_over_stdio() {
    needs!(Python);
    revision("stdio", "legacy");
}

#[test]
fn protocol_2025_11_25_over_http() {
    needs!(Python);
    revision("http", "legacy");
}

#[test]
fn protocol_2026_07_28_over_stdio() {
    needs!(Python);
    revision("stdio", "2026-07-28");
}

#[test]
fn protocol_2026_07_28_over_http() {
    needs!(Python);
    revision("http", "2026-07-28");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fault_and_load_over_streamable_http() {
    needs!(Python);
    let spec = LoadSpec {
        calls: 1_000,
        concurrency: 16,
        trap_every: 10,
        sessions: 2,
    };
    let report = run(&toolhost_binary(), &guest("fixture_trap_every"), &spec)
        .await
        .unwrap();
    report.check().unwrap();
    assert_eq!(report.trapped, 100, "{report:#?}");
}
