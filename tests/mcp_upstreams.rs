//! `toolhost serve` over upstream MCP servers, driven by the official Python
//! MCP SDK (`tests/mcp/upstreams.py`): the real
//! `@modelcontextprotocol/server-everything` reached by URL (streamable
//! HTTP) beside a URL with nothing listening, and a server whose tool list
//! changes at run time (`tests/mcp/changing_server.py`), with toolhost
//! serving stdio and streamable HTTP to two sessions.
//!
//! Needs `make venv upstream host` (the Makefile's `test` runs them); a
//! missing piece fails with that instruction.

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn need(path: PathBuf, make: &str) -> PathBuf {
    assert!(
        path.exists(),
        "{} is missing: run `make {make}` first",
        path.display()
    );
    path
}

fn drive(scenario: &str) {
    let python = need(repo().join("build/venv/bin/python"), "venv");
    let toolhost = need(repo().join("target/release/toolhost"), "host");
    let mut command = Command::new(python);
    command
        .arg(repo().join("tests/mcp/upstreams.py"))
        .arg("--toolhost")
        .arg(toolhost)
        .args(["--scenario", scenario]);
    if scenario == "http" {
        let server = "tests/upstream/node_modules/@modelcontextprotocol/server-everything/dist/index.js";
        command
            .arg("--everything")
            .arg(need(repo().join(server), "upstream"));
    }
    let out = command.output().expect("run upstreams.py");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "upstreams.py --scenario {scenario} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains(&format!("ok: {scenario}")), "{stdout}");
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
