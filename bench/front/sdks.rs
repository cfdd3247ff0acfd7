//! The SDK clients agents run on, calling through toolhost over each
//! transport: the Python SDK (`mcp`, `tests/mcp/sdk_calls.py`) and the
//! official TypeScript client (`@modelcontextprotocol/client`,
//! `tests/upstream/sdk_calls.mjs`), each making the same `read` calls one
//! after another over stdio (starting the server itself, as a client that
//! launches it does) and over streamable HTTP, and over HTTP to the bare
//! rmcp server too. What a user of such a client waits for on each
//! transport, and whether toolhost's HTTP front costs them more than the
//! least server on rmcp; rmcp's client, which the rest of the bench uses,
//! is the lightest of them.
//!
//! Needs `make venv upstream` (which `make bench` runs first).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde::Deserialize;
use toolhost_tests::{python_driver, toolhost_binary};

use super::median_of;

/// One SDK's median call over each transport, and over HTTP to the bare
/// rmcp server.
pub struct SdkCalls {
    /// The row of its HTTP call, against its stdio call.
    pub row: &'static str,
    /// The row of its HTTP call, against the same to the bare server.
    pub bare_row: &'static str,
    pub stdio_p50_us: f64,
    pub http_p50_us: f64,
    pub bare_http_p50_us: f64,
}

/// What a client script prints.
#[derive(Deserialize)]
struct Printed {
    p50_us: f64,
}

/// Each SDK's `calls` calls over stdio (to `toolhost --config config
/// serve`), over HTTP (to `url`) and over HTTP to the bare server (at
/// `bare_url`), in `rounds` rounds that take the three in turn; each
/// figure is the median of the rounds' medians.
pub fn measure(
    config: &Path,
    url: &str,
    bare_url: &str,
    calls: usize,
    rounds: usize,
) -> Result<Vec<SdkCalls>> {
    let typescript = repo().join("tests/upstream/node_modules/@modelcontextprotocol/client");
    if !typescript.is_dir() {
        bail!("the TypeScript SDK is missing: run `make upstream` first");
    }
    SDKS.iter()
        .map(|sdk| {
            let (mut stdio, mut http, mut bare_http) = (Vec::new(), Vec::new(), Vec::new());
            for _ in 0..rounds {
                stdio.push(median_call(sdk, config, calls, None)?);
                http.push(median_call(sdk, config, calls, Some(url))?);
                bare_http.push(median_call(sdk, config, calls, Some(bare_url))?);
            }
            Ok(SdkCalls {
                row: sdk.row,
                bare_row: sdk.bare_row,
                stdio_p50_us: median_of(&stdio),
                http_p50_us: median_of(&http),
                bare_http_p50_us: median_of(&bare_http),
            })
        })
        .collect()
}

/// One run of `sdk`'s client: its median of `calls` calls, over HTTP to
/// `url` if given, else over stdio to a `toolhost` it starts.
fn median_call(sdk: &Sdk, config: &Path, calls: usize, url: Option<&str>) -> Result<f64> {
    let mut command = (sdk.client)();
    command
        .arg("--config")
        .arg(config)
        .arg("--calls")
        .arg(calls.to_string());
    if let Some(url) = url {
        command.arg("--url").arg(url);
    }
    let name = sdk.name;
    let out = command
        .output()
        .with_context(|| format!("running the {name} client"))?;
    if !out.status.success() {
        bail!(
            "the {name} client failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let printed: Printed = serde_json::from_slice(&out.stdout).with_context(|| {
        format!(
            "the {name} client printed {:?}",
            String::from_utf8_lossy(&out.stdout)
        )
    })?;
    Ok(printed.p50_us)
}

/// An SDK: its name, the rows of its HTTP call, and its client script.
struct Sdk {
    name: &'static str,
    row: &'static str,
    bare_row: &'static str,
    client: fn() -> Command,
}

const SDKS: [Sdk; 2] = [
    Sdk {
        name: "Python SDK",
        row: "HTTP call p50, Python SDK client (sequential)",
        bare_row: "Python SDK over HTTP, against the bare server",
        client: python_client,
    },
    Sdk {
        name: "TypeScript SDK",
        row: "HTTP call p50, TypeScript SDK client (sequential)",
        bare_row: "TypeScript SDK over HTTP, against the bare server",
        client: node_client,
    },
];

fn python_client() -> Command {
    python_driver("sdk_calls.py")
}

fn node_client() -> Command {
    let mut command = Command::new("node");
    command
        .arg(repo().join("tests/upstream/sdk_calls.mjs"))
        .arg("--toolhost")
        .arg(toolhost_binary());
    command
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}
