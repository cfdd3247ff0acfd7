//! The fault-and-load run: `toolhost serve --http --watch` over eight
//! enrichers and a tool plugin that traps on every Nth call, driven by Rust
//! MCP clients (rmcp, streamable HTTP) at a fixed concurrency while the
//! plugin directory is replaced twice. Shared by the `mcp_python` test (a
//! small count) and the `load` bench (the full count).
//!
//! The plugins are all `fixture_trap_every`: enrichers `a` to `h` (in that
//! registration order) each append their tag to the `trail` argument of
//! `mix`; the tool answers `mix N abcdefgh VALUE`, VALUE a hash of N, and
//! traps when N is a multiple of `trap_every`. Call N sends `{"n": N}`, so
//! the right answer to each call is computed here directly:
//!
//! - N not a multiple: a success whose text is exactly that line;
//! - N a multiple: an error result naming the plugin and its trap
//!   (`plugin `trap-every` trapped in execute`). That is the host's answer
//!   for a call whose plugin failed: the call is answered, the failure
//!   contained to it.
//!
//! "Answered" means a JSON-RPC response to the `tools/call` arrived within
//! [`CALL_LIMIT`]; a transport error or no response is unanswered. Any
//! answer other than the expected one is wrong.
//!
//! The trapping plugin's `quarantine_after` is set out of reach: with one
//! call in ten trapping, three traps can finish in a row under concurrency,
//! and quarantine (tested on its own in `sandbox`) would then refuse the
//! calls between them, which this run does not test.
//!
//! Each replacement copies every file of the directory to a staging
//! directory and renames it into place, as a deployment would. The first
//! starts after a third of the calls were issued; the second after two
//! thirds, once the client was told of the first reload
//! (`tools/list_changed`). Calls are
//! issued throughout; only if a reload has not been announced by the time
//! the calls it should overlap run out (two thirds, then nine tenths of
//! them) are the remaining calls paced, so that calls stay in flight while
//! it happens.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use futures::StreamExt;
use rmcp::ClientHandler;
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ContentBlock};
use rmcp::service::{NotificationContext, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde::Serialize;
use serde_json::json;

use crate::served::Served;

/// The enrichers' tags, in registration order: the `trail` every answer has.
pub const TAGS: [&str; 8] = ["a", "b", "c", "d", "e", "f", "g", "h"];

/// How long one call may take before it counts as unanswered.
pub const CALL_LIMIT: Duration = Duration::from_secs(60);

/// How long a reload may take to be announced.
const RELOAD_LIMIT: Duration = Duration::from_secs(120);

/// What to run.
#[derive(Debug, Clone)]
pub struct LoadSpec {
    pub calls: u64,
    pub concurrency: usize,
    pub trap_every: u64,
    /// MCP sessions the calls are spread over.
    pub sessions: usize,
}

/// What happened. `wrong_examples` holds the first few wrong answers.
#[derive(Debug, Serialize)]
pub struct LoadReport {
    pub calls: u64,
    pub concurrency: usize,
    pub sessions: usize,
    /// Calls answered with the expected success.
    pub ok: u64,
    /// Calls answered with the expected error naming the trapping plugin.
    pub trapped: u64,
    /// Answers other than the expected one.
    pub wrong: u64,
    pub wrong_examples: Vec<String>,
    /// Calls with no answer (transport error or past [`CALL_LIMIT`]).
    pub unanswered: u64,
    /// `tools/list_changed` notifications the first session received.
    pub reloads_announced: u64,
    /// Calls in flight when each reload was announced.
    pub in_flight_at_reload: Vec<usize>,
    /// Reloads the host logged ("reloaded (...)").
    pub reloads_logged: usize,
    pub wall_ms: u64,
    pub calls_per_s: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    /// The host's peak resident set (VmHWM of /proc/PID/status), in KiB.
    pub peak_rss_kib: u64,
}

impl LoadReport {
    fn example(&mut self, why: String) {
        if self.wrong_examples.len() < 5 {
            self.wrong_examples.push(why);
        }
    }

    /// Every call answered, none wrong, both reloads announced.
    pub fn check(&self) -> Result<()> {
        if self.unanswered > 0 || self.wrong > 0 || self.ok + self.trapped != self.calls {
            bail!("calls not all answered right: {self:#?}");
        }
        if self.reloads_announced < 2 {
            bail!("the two replacements were not both reloaded: {self:#?}");
        }
        Ok(())
    }
}

/// The answer to `mix {"n": n}` after the enrichers, when it succeeds.
pub fn expected(n: u64) -> String {
    format!(
        "mix {n} {} {}",
        TAGS.concat(),
        n.wrapping_mul(2_654_435_761) % (1 << 32)
    )
}

/// Counts `tools/list_changed` and remembers how many calls were in flight.
#[derive(Clone)]
struct Listener {
    changed: Arc<AtomicU64>,
    in_flight: Arc<AtomicUsize>,
    at_reload: Arc<Mutex<Vec<usize>>>,
    record: bool,
}

impl ClientHandler for Listener {
    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        if self.record {
            let in_flight = self.in_flight.load(Ordering::SeqCst);
            self.at_reload.lock().unwrap().push(in_flight);
            self.changed.fetch_add(1, Ordering::SeqCst);
        }
    }
}

/// Start `toolhost serve --http 127.0.0.1:0 --watch` on the laid-out `top`.
fn serve(toolhost: &Path, top: &Path) -> Result<Served> {
    let mut command = Command::new(toolhost);
    command
        .arg("--config")
        .arg(top.join("toolhost.toml"))
        .arg("--plugins")
        .arg(top.join("plugins"))
        .args(["serve", "--http", "127.0.0.1:0", "--watch"])
        .current_dir(top.join("root"));
    Ok(Served::start(command)?)
}

/// The peak resident set of process `pid`, in KiB.
fn peak_rss_kib(pid: u32) -> Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .context("no VmHWM in /proc/PID/status")
}

/// Lay out the top directory: plugins (8 enrichers and the tool), the
/// served root, the code cache and the configuration.
fn lay_out(top: &Path, component: &Path, trap_every: u64) -> Result<()> {
    let plugins = top.join("plugins");
    for dir in ["plugins", "root", "staging"] {
        std::fs::create_dir_all(top.join(dir))?;
    }
    for (i, tag) in TAGS.iter().enumerate() {
        let stem = format!("1{i}-enrich-{tag}");
        std::fs::copy(component, plugins.join(format!("{stem}.wasm")))?;
        std::fs::write(
            plugins.join(format!("{stem}.toml")),
            format!("[config]\nrole = \"enricher\"\ntag = \"{tag}\"\n"),
        )?;
    }
    std::fs::copy(component, plugins.join("20-trap-every.wasm"))?;
    std::fs::write(
        plugins.join("20-trap-every.toml"),
        format!(
            "[limits]\nquarantine_after = {}\n[config]\nrole = \"tool\"\ntrap_every = {trap_every}\n",
            u32::MAX
        ),
    )?;
    std::fs::write(
        top.join("toolhost.toml"),
        format!("cache = {}\n", json!(top.join("cache"))),
    )?;
    Ok(())
}

/// Replace every file of the plugin directory by a copy renamed into place.
fn replace_plugins(top: &Path, round: u32) -> Result<()> {
    let plugins = top.join("plugins");
    let staging = top.join("staging");
    let mut names: Vec<PathBuf> = std::fs::read_dir(&plugins)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    names.sort();
    for path in &names {
        let name = path.file_name().expect("a file");
        let staged = staging.join(format!("{round}-{}", name.to_string_lossy()));
        std::fs::copy(path, &staged)?;
        std::fs::rename(&staged, path)?;
    }
    Ok(())
}

fn text(result: &rmcp::model::CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

enum Outcome {
    Ok,
    Trapped,
    Wrong(String),
    Unanswered(String),
}

fn judge(n: u64, trap_every: u64, answer: Result<rmcp::model::CallToolResult, String>) -> Outcome {
    let result = match answer {
        Ok(result) => result,
        Err(e) => return Outcome::Unanswered(format!("call {n}: {e}")),
    };
    let (is_error, text) = (result.is_error == Some(true), text(&result));
    if n.is_multiple_of(trap_every) {
        if is_error && text.contains("plugin `trap-every` trapped in execute") {
            Outcome::Trapped
        } else {
            Outcome::Wrong(format!(
                "call {n}: expected the trap, got error={is_error} {text:?}"
            ))
        }
    } else if !is_error && text == expected(n) {
        Outcome::Ok
    } else {
        Outcome::Wrong(format!(
            "call {n}: expected {:?}, got error={is_error} {text:?}",
            expected(n)
        ))
    }
}

/// Replace the plugin directory in a task (`round` names the staged
/// copies), once `after` (if given) counts one announced reload.
fn start_replacement(
    tasks: &Mutex<Vec<tokio::task::JoinHandle<Result<()>>>>,
    top: PathBuf,
    round: u32,
    after: Option<Arc<AtomicU64>>,
) {
    tasks.lock().unwrap().push(tokio::spawn(async move {
        if let Some(changed) = after
            && !announced(&changed, 1).await
        {
            bail!("the first replacement was never reloaded");
        }
        tokio::task::spawn_blocking(move || replace_plugins(&top, round)).await?
    }));
}

/// Wait (bounded) until `counter` reaches `at_least`.
async fn announced(counter: &AtomicU64, at_least: u64) -> bool {
    let deadline = Instant::now() + RELOAD_LIMIT;
    while counter.load(Ordering::SeqCst) < at_least {
        if Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    true
}

/// Run the fault-and-load run against the `toolhost` binary, with
/// `component` (the built `fixture_trap_every`) as every plugin.
pub async fn run(toolhost: &Path, component: &Path, spec: &LoadSpec) -> Result<LoadReport> {
    let top = tempfile::tempdir()?;
    lay_out(top.path(), component, spec.trap_every)?;
    let server = serve(toolhost, top.path())?;
    let url = server.url.clone();

    let changed = Arc::new(AtomicU64::new(0));
    let in_flight = Arc::new(AtomicUsize::new(0));
    let at_reload: Arc<Mutex<Vec<usize>>> = Arc::default();
    let mut sessions: Vec<RunningService<RoleClient, Listener>> = Vec::new();
    for i in 0..spec.sessions.max(1) {
        let listener = Listener {
            changed: changed.clone(),
            in_flight: in_flight.clone(),
            at_reload: at_reload.clone(),
            record: i == 0,
        };
        let http = toolhost::internals::http_client::builder().build()?;
        let transport = StreamableHttpClientTransport::with_client(
            http,
            StreamableHttpClientTransportConfig::with_uri(url.as_str()),
        );
        let client = listener
            .serve(transport)
            .await
            .with_context(|| format!("cannot connect to {url}:\n{}", server.log_text()))?;
        sessions.push(client);
    }
    let tools = sessions[0].peer().list_all_tools().await?;
    if !tools.iter().any(|t| t.name == "mix") {
        bail!("`mix` is not served:\n{}", server.log_text());
    }

    let peers: Vec<_> = sessions.iter().map(|s| s.peer().clone()).collect();
    let (first, second, last) = (spec.calls / 3, spec.calls * 2 / 3, spec.calls * 9 / 10);
    let replacing: Arc<Mutex<Vec<tokio::task::JoinHandle<Result<()>>>>> = Arc::default();
    let top_path = top.path().to_owned();
    let started = Instant::now();
    let latencies = Arc::new(Mutex::new(Vec::with_capacity(spec.calls as usize)));
    let outcomes: Vec<Outcome> = futures::stream::iter(1..=spec.calls)
        .then(|n| {
            let (changed, replacing, top) = (changed.clone(), replacing.clone(), top_path.clone());
            async move {
                if n == first + 1 {
                    start_replacement(&replacing, top, 1, None);
                } else if n == second + 1 {
                    start_replacement(&replacing, top, 2, Some(changed.clone()));
                }
                // Keep calls in flight, slowly, until the reload they
                // should overlap is announced.
                let want = if n > last {
                    2
                } else if n > second {
                    1
                } else {
                    0
                };
                if changed.load(Ordering::SeqCst) < want {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                n
            }
        })
        .map(|n| {
            let peer = peers[(n as usize) % peers.len()].clone();
            let (in_flight, latencies) = (in_flight.clone(), latencies.clone());
            async move {
                let mut params = CallToolRequestParams::new("mix");
                params.arguments = Some(json!({"n": n}).as_object().cloned().expect("an object"));
                in_flight.fetch_add(1, Ordering::SeqCst);
                let sent = Instant::now();
                let answer = match tokio::time::timeout(CALL_LIMIT, peer.call_tool(params)).await {
                    Ok(Ok(result)) => Ok(result),
                    Ok(Err(e)) => Err(e.to_string()),
                    Err(_) => Err(format!("no answer within {CALL_LIMIT:?}")),
                };
                latencies.lock().unwrap().push(sent.elapsed());
                in_flight.fetch_sub(1, Ordering::SeqCst);
                judge(n, spec.trap_every, answer)
            }
        })
        .buffer_unordered(spec.concurrency)
        .collect()
        .await;
    let wall = started.elapsed();
    let tasks: Vec<_> = replacing.lock().unwrap().drain(..).collect();
    for task in tasks {
        task.await??;
    }
    let reloads_done = announced(&changed, 2).await;
    let peak_rss_kib = peak_rss_kib(server.pid())?;
    let reloads_logged = server
        .log_text()
        .lines()
        .filter(|l| l.contains("reloaded ("))
        .count();

    let mut report = LoadReport {
        calls: spec.calls,
        concurrency: spec.concurrency,
        sessions: peers.len(),
        ok: 0,
        trapped: 0,
        wrong: 0,
        wrong_examples: Vec::new(),
        unanswered: 0,
        reloads_announced: changed.load(Ordering::SeqCst),
        in_flight_at_reload: at_reload.lock().unwrap().clone(),
        reloads_logged,
        wall_ms: wall.as_millis() as u64,
        calls_per_s: spec.calls as f64 / wall.as_secs_f64(),
        p50_ms: 0.0,
        p99_ms: 0.0,
        peak_rss_kib,
    };
    for outcome in outcomes {
        match outcome {
            Outcome::Ok => report.ok += 1,
            Outcome::Trapped => report.trapped += 1,
            Outcome::Wrong(why) => {
                report.wrong += 1;
                report.example(why);
            }
            Outcome::Unanswered(why) => {
                report.unanswered += 1;
                report.example(why);
            }
        }
    }
    let mut latencies = latencies.lock().unwrap().clone();
    latencies.sort();
    let at = |q: f64| {
        latencies
            .get(((latencies.len() as f64 - 1.0) * q) as usize)
            .map_or(0.0, |d| d.as_secs_f64() * 1e3)
    };
    (report.p50_ms, report.p99_ms) = (at(0.50), at(0.99));
    if !reloads_done {
        report.example(format!(
            "a reload was not announced; host log:\n{}",
            server.log_text()
        ));
    }
    for session in sessions {
        let _ = session.cancel().await;
    }
    Ok(report)
}
