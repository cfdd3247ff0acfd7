//! `toolhost serve`: the pipeline served over MCP, on stdio or streamable
//! HTTP, with the plugin directory and the policy file watched on request. Building the host is
//! `crate::setup`; the protocol is `toolhost::mcp`.

use std::net::SocketAddr;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use crate::config::Config;
use crate::watch::{PluginWatch, PolicyWatch};
use crate::{setup, stats};
use anyhow::{Context, Result, bail};
use toolhost::mcp;
use toolhost::mcp::ClientLog;
use toolhost::mcp::HttpAccess;
use toolhost::plugin::Runtime;

/// The async runtime `serve` runs on, over HTTP if `http`, else stdio.
///
/// Over stdio it answers one client on one pipe: a single-threaded runtime
/// takes each message from the pipe to its handler and back without waking
/// a second worker thread, which cut a stdio call's latency by about a
/// third on a 2-core machine (`front` bench). Plugin loading and file
/// reads still run on the blocking pool.
///
/// Over HTTP it serves many sessions at once, on one worker fewer than the
/// cores ([`http_workers`]), unless `TOKIO_WORKER_THREADS` says otherwise.
pub fn runtime(http: bool) -> std::io::Result<tokio::runtime::Runtime> {
    if !http {
        return tokio::runtime::Builder::new_current_thread().enable_all().build();
    }
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    // Tokio's own setting, where the user gave one, is theirs.
    if std::env::var_os("TOKIO_WORKER_THREADS").is_none() {
        builder.worker_threads(http_workers());
    }
    builder.enable_all().build()
}

/// Workers of `serve --http`: a core is left to what runs beside the
/// async workers (upstream servers the host started, the blocking pool
/// that loads plugins, the kernel's network stack), at least one. A worker
/// per core had each call's tasks (the connection, the session, the
/// handler) woken across threads: on 2 cores, one worker answered a call
/// over HTTP in 349 µs where two took 471 µs, and 64 sessions at 9,356
/// calls/s against 10,256 (`front` bench, its client on two threads).
fn http_workers() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().saturating_sub(1).max(1))
}

/// How long a stopping server waits for shadow candidates' calls.
const SHADOW_SETTLE: std::time::Duration = std::time::Duration::from_secs(5);

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
    // Refuse an unprotected address, and one that cannot be listened on,
    // before loading anything.
    let access = match front.http {
        Some(addr) => {
            let access = HttpAccess::new(&config.auth, addr, front.insecure).await?;
            let listener = tokio::net::TcpListener::bind(addr)
                .await
                .with_context(|| format!("cannot listen on {addr} (--http)"))?;
            Some((listener, access))
        }
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
    let policy_watch = match (watch, &config.policy) {
        (true, Some(policy)) => Some(PolicyWatch::new(&policy.file)?),
        _ => None,
    };
    let watch = match (watch, plugins) {
        (false, _) => None,
        (true, Some(dir)) => Some(PluginWatch::new(dir, &config.trust)?),
        (true, None) => {
            bail!("--watch needs a plugin directory: pass --plugins DIR or set `plugins` in toolhost.toml")
        }
    };
    // Checked before loading: a wrong endpoint or a missing header
    // variable stops the start rather than losing every span.
    let spans = match &config.telemetry {
        Some(telemetry) => Some(Arc::new(mcp::SpanExport::start(&telemetry.settings())?)),
        None => None,
    };
    let reports = mcp::Reports {
        log: front.log,
        spans: spans.clone(),
    };
    let (host, errors) = setup::build(runtime, config, plugins, Some(config.upstream_wait())).await?;
    for error in &errors {
        eprintln!("error: {error}");
    }
    for name in host.gateway().unreached() {
        eprintln!("toolhost: upstream `{name}` has not answered yet; its tools are served when it does");
    }
    let host = Arc::new(host);
    let policy_watch = policy_watch.map(|w| tokio::spawn(w.run(host.clone())));
    let stats_file = config.stats_file();
    if let Some(path) = &stats_file {
        // What an earlier run learned of the agents' follow-ups lasts.
        match stats::read(path) {
            Ok(earlier) => host.resume(&earlier.stats),
            Err(stats::StatsError::Missing(_)) => {}
            Err(e) => tracing::warn!("{e}: starting with no follow-up links learned"),
        }
    }
    let reporter = stats::spawn_reporter(host.clone(), runtime.shadows().clone(), stats_file.clone());
    let serving = async {
        match access {
            Some((listener, access)) => {
                // Tests and scripts read the address from this line: the
                // port the system chose, if the one asked for was 0.
                let bound = listener.local_addr()?;
                eprintln!("toolhost: serving MCP at http://{bound}/mcp");
                // Ctrl-C, or a service manager's `SIGTERM` (systemd,
                // Kubernetes), which would otherwise end the process with
                // its calls unanswered.
                let interrupted = async {
                    let terminated = async {
                        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                            Ok(mut terminate) => drop(terminate.recv().await),
                            Err(_) => std::future::pending().await,
                        }
                    };
                    tokio::select! {
                        _ = tokio::signal::ctrl_c() => {}
                        () = terminated => {}
                    }
                };
                let stateless = config.cluster.is_some();
                mcp::serve_http(host.clone(), reports, listener, access, stateless, interrupted).await;
                Ok(())
            }
            None => mcp::serve_stdio(host.clone(), reports)
                .await
                .map_err(anyhow::Error::from),
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
    if let Some(policy_watch) = policy_watch {
        policy_watch.abort();
    }
    host.shutdown().await;
    if let Some(spans) = &spans {
        spans.shutdown().await;
    }
    // Candidate calls still running are let finish, so their counts are
    // in, for a while: a hanging candidate does not hold the exit up.
    let _ = tokio::time::timeout(SHADOW_SETTLE, runtime.shadows().settle()).await;
    if let Some((last, shadows)) = stats::figures(&host, runtime.shadows()) {
        if host.stats().is_some() {
            tracing::info!(target: "toolhost_cli::stats", "{}", stats::summary(&last));
        }
        if let Some(path) = &stats_file {
            stats::write(path, &last, &shadows)?;
        }
    }
    served?;
    Ok(ExitCode::SUCCESS)
}
