//! `toolhost serve`, `toolhost call` and `toolhost stats`: the command-line
//! edges of the pipeline. Building the host is `crate::setup`; the protocol is
//! `toolhost::mcp`.

use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use toolhost::auth::HttpAccess;
use toolhost::client_log::ClientLog;
use crate::config::Config;
use toolhost::pipeline::{CallContext, error_text};
use toolhost::plugin::Runtime;
use crate::watch::PluginWatch;
use crate::{render, setup, stats};
use toolhost::mcp;

/// How `serve` meets its clients.
pub struct Front {
    /// Streamable HTTP at this address, else stdio.
    pub http: Option<SocketAddr>,
    /// Serve a non-loopback address without `[auth]`.
    pub insecure: bool,
    /// The log lines clients are sent (the runtime's sink feeds it).
    pub log: ClientLog,
}

pub async fn serve(
    runtime: &Runtime,
    config: &Config,
    plugins: Option<&Path>,
    front: Front,
    watch: bool,
) -> Result<ExitCode> {
    // Refuse an unprotected address before loading anything.
    let access = match front.http {
        Some(addr) => Some((addr, HttpAccess::new(&config.auth, addr, front.insecure).await?)),
        None => {
            // The client that started this process owns its stdio: there is
            // nobody else to authorise. Say so rather than look protected.
            let auth = &config.auth;
            if auth.bearer_token_env.is_some() || auth.bearer_token_file.is_some() || auth.oauth.is_some() {
                tracing::warn!(
                    "[auth] applies to `serve --http` only: over stdio the client that started toolhost is the only one"
                );
            }
            None
        }
    };
    // Watch before loading, so a change made while loading is not missed.
    let watch = match (watch, plugins) {
        (false, _) => None,
        (true, Some(dir)) => Some(PluginWatch::new(dir)?),
        (true, None) => {
            bail!("--watch needs a plugin directory: pass --plugins DIR or set `plugins` in toolhost.toml")
        }
    };
    let (host, errors) = setup::build(runtime, config, plugins).await?;
    for error in &errors {
        eprintln!("error: {error}");
    }
    let host = Arc::new(host);
    let stats_file = config.stats_file();
    let reporter = stats::spawn_reporter(host.clone(), stats_file.clone());
    let serving = async {
        match access {
            Some((addr, access)) => mcp::serve_http(host.clone(), front.log, addr, access).await,
            None => mcp::serve_stdio(host.clone(), front.log).await,
        }
    };
    let served = match watch {
        // The watch runs as long as the server and is dropped with it.
        Some(watch) => {
            let mut serving = std::pin::pin!(serving);
            tokio::select! {
                served = &mut serving => served,
                () = watch.run(runtime, &host) => {
                    tracing::warn!("the plugin directory is no longer watched");
                    serving.await
                }
            }
        }
        None => serving.await,
    };
    reporter.abort();
    host.shutdown().await;
    if let Some(last) = host.stats() {
        tracing::info!(target: "crate::stats", "{}", stats::summary(&last));
        if let Some(path) = &stats_file {
            stats::write(path, &last)?;
        }
    }
    served?;
    Ok(ExitCode::SUCCESS)
}

/// Exit status 1 when the call failed, 0 when it ran (even with `isError`
/// set by the tool, which is in the output). JSON unless stdout is a
/// terminal and `--json` is not given: scripts that pipe it get JSON.
pub async fn call(
    runtime: &Runtime,
    config: &Config,
    plugins: Option<&Path>,
    tool: &str,
    args: &str,
    as_json: bool,
) -> Result<ExitCode> {
    let args: Value = serde_json::from_str(args).context("the arguments are not JSON")?;
    let width = (!as_json && std::io::stdout().is_terminal()).then(terminal_width);
    let (host, errors) = setup::build(runtime, config, plugins).await?;
    for error in &errors {
        eprintln!("error: {error}");
    }
    let ctx = CallContext::new("cli-1");
    let cancel = ctx.cancel.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            cancel.cancel();
        }
    });
    if let Some(width) = width {
        println!("{}", render::call_view(&host, tool, &args, width).await);
        let (view, code) = match host.call_tool(tool, args, &ctx).await {
            Ok(out) => (
                render::result_view(&host, tool, &out, width).await,
                ExitCode::SUCCESS,
            ),
            Err(e) => (format!("error: {}", error_text(&e)), ExitCode::FAILURE),
        };
        println!("{view}");
        return Ok(code);
    }
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
    println!("{}", serde_json::to_string_pretty(&value)?);
    Ok(code)
}

/// The columns of the terminal on stdout; 80 if it does not say.
fn terminal_width() -> u32 {
    terminal_size::terminal_size()
        .map(|(w, _)| u32::from(w.0))
        .filter(|&w| w > 0)
        .unwrap_or(80)
}

/// Print what the last server recorded of speculation.
pub fn stats(config: &Config, as_json: bool) -> Result<ExitCode> {
    let path = config
        .stats_file()
        .context("no statistics file: set [speculation] stats_file or enable the cache directory")?;
    let recorded = stats::read(&path)?;
    if as_json {
        println!("{}", serde_json::to_string_pretty(&recorded)?);
    } else {
        print!("{}", stats::render(&recorded));
    }
    Ok(ExitCode::SUCCESS)
}
