//! `toolhost serve` driven by the official Python MCP SDK (`tests/mcp/drive.py`)
//! over stdio and streamable HTTP, and proxying a third-party MCP server
//! (`@modelcontextprotocol/server-everything`) whose `echo` tool the
//! `fixture_shout` enricher adapts.
//!
//! Needs `make venv upstream host` (the Makefile's `test` runs them); a
//! missing piece fails with that instruction.

use std::path::{Path, PathBuf};
use std::process::Command;

use toolhost_tests::plugin_dir;

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

fn drive(transport: &str, upstream: bool) {
    let python = need(repo().join("build/venv/bin/python"), "venv");
    let toolhost = need(repo().join("target/release/toolhost"), "host");
    let plugins = plugin_dir(&[
        ("10-shout", "fixture_shout", None),
        ("20-text-tools", "text_tools", None),
    ]);
    let mut command = Command::new(python);
    command
        .arg(repo().join("tests/mcp/drive.py"))
        .arg("--toolhost")
        .arg(toolhost)
        .arg("--plugins")
        .arg(plugins.path())
        .args(["--transport", transport]);
    if upstream {
        let server = "tests/upstream/node_modules/@modelcontextprotocol/server-everything/dist/index.js";
        command
            .arg("--upstream")
            .arg(need(repo().join(server), "upstream"));
    }
    let out = command.output().expect("run drive.py");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "drive.py --transport {transport} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains(&format!("ok: {transport}")), "{stdout}");
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
