//! Each provider's plugin end to end: `toolhost serve` with the provider's
//! one `.wasm` (enricher and tools in the `full-plugin` world), driven by
//! the Python MCP client against a loopback fake of the provider's API
//! (`tests/mcp/vendors/`). The fake checks every request exactly (method,
//! path, query, body, the token the host injected); the client checks every
//! result and error, the rate-limit retries, and prefetch on the real chains.

use toolhost_tests::{expect_driver_ok, guest, needs, python_driver};

/// Run `tests/mcp/vendors/NAME.py` against the built `CRATE.wasm`.
fn provider(name: &str, crate_name: &str) {
    let mut command = python_driver(&format!("vendors/{name}.py"));
    command.arg("--plugin").arg(guest(crate_name));
    expect_driver_ok(&mut command, name);
}

#[test]
fn github() {
    needs!(Python);
    provider("github", "github");
}

#[test]
fn jira() {
    needs!(Python);
    provider("jira", "jira");
}

#[test]
fn confluence() {
    needs!(Python);
    provider("confluence", "confluence");
}

/// The replayed GitHub session (`replay.py`, the bench's figures) with
/// speculation off and on: no answer is stale after a write, no write is
/// prefetched. It times nothing; `make bench` prints the times.
#[test]
fn github_replay() {
    needs!(Python);
    let mut command = python_driver("vendors/replay.py");
    command.arg("--plugin").arg(guest("github")).arg("--check");
    expect_driver_ok(&mut command, "replay");
}

#[test]
fn gitlab() {
    needs!(Python);
    provider("gitlab", "gitlab");
}

#[test]
fn linear() {
    needs!(Python);
    provider("linear", "linear");
}

#[test]
fn fireflies() {
    needs!(Python);
    provider("fireflies", "fireflies");
}

#[test]
fn clickup() {
    needs!(Python);
    provider("clickup", "clickup");
}
