//! `toolhost call TOOL ARGS`: one call through the pipeline, rendered for a
//! terminal or printed as JSON.

use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use serde_json::{Value, json};
use toolhost::plugin::Runtime;
use toolhost::{CallControl, Caller, error_text};

use crate::config::Config;
use crate::{render, setup};

/// Exit status 1 when the call failed, 0 when it ran (even with `isError`
/// set by the tool, which is in the output). JSON unless stdout is a
/// terminal and `--json` is not given: scripts that pipe it get JSON.
pub async fn run(
    runtime: &Runtime,
    config: &Config,
    plugins: Option<&Path>,
    tool: &str,
    args: &str,
    as_json: bool,
) -> Result<ExitCode> {
    let args: Value = serde_json::from_str(args).context("the arguments are not JSON")?;
    let width = (!as_json && std::io::stdout().is_terminal()).then(terminal_width);
    let (host, errors) = setup::build(runtime, config, plugins, None).await?;
    for error in &errors {
        eprintln!("error: {error}");
    }
    // The user at the terminal makes the call, as a stdio client's are.
    let ctx = CallControl::new("cli-1").with_caller(Caller::local_user());
    let cancel = ctx.cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            cancel.cancel();
        }
    });
    let (shown, code) = match width {
        Some(width) => {
            crate::say!("{}", render::call_view(&host, tool, &args, width).await)?;
            match host.call_tool(tool, args, &ctx).await {
                Ok(out) => (
                    render::result_view(&host, tool, &out, width).await,
                    ExitCode::SUCCESS,
                ),
                Err(e) => (format!("error: {}", error_text(&e)), ExitCode::FAILURE),
            }
        }
        None => {
            let (value, code) = match host.call_tool(tool, args, &ctx).await {
                Ok(out) => (
                    json!({"content": out.text(), "structured": out.structured(), "details": out.details, "isError": out.is_error}),
                    ExitCode::SUCCESS,
                ),
                Err(e) => (
                    json!({"error": error_text(&e), "isError": true}),
                    ExitCode::FAILURE,
                ),
            };
            (serde_json::to_string_pretty(&value)?, code)
        }
    };
    let said = crate::say!("{shown}");
    // After the answer is shown: the upstream servers are let stop, and
    // what they say as they end reaches the log.
    host.shutdown().await;
    said?;
    Ok(code)
}

/// The columns of the terminal on stdout; 80 if it does not say.
fn terminal_width() -> u32 {
    terminal_size::terminal_size()
        .map(|(w, _)| u32::from(w.0))
        .filter(|&w| w > 0)
        .unwrap_or(80)
}
