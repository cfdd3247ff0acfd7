//! The MCP front bench, in one run: a direct in-process
//! `Toolhost::call_tool`, then the same cheap native call (`read` of a small
//! file) through `toolhost serve` over stdio and over streamable HTTP (real
//! transports, rmcp's client), one call after another and many at once; the
//! cost of proxying an upstream server (`server-everything`'s `echo` direct,
//! through a bare byte-copying relay process as the peer baseline, and
//! through toolhost, called in turn in rounds, as stdio and HTTP are for
//! their ratio); and the time from process start to the first
//! `tools/list` answer with eleven cached plugins (nine Rust, one JavaScript,
//! one Python), in turn with the same start with none. Each target is
//! printed with its baseline from the same rounds and their ratio (HTTP
//! against stdio, proxied against direct and against the bare relay, many
//! sessions against one, eleven plugins against none), and `--targets`
//! writes them for `make bench`'s one table. The calls one after another
//! also count the host process's CPU time per call (from `/proc`): the
//! host's own side of each transport, apart from the client's.
//!
//! The same clients also call a bare rmcp server answering from memory
//! over each transport (`bare`), in the same interleaved rounds: the floor
//! of each transport with this client and library, so that what toolhost
//! itself adds to a call over stdio and over HTTP is told apart from what
//! any server on rmcp would cost.
//!
//! The SDK clients agents run on, Python's and TypeScript's, make the same
//! call over stdio and over HTTP too, and over HTTP to the bare server
//! (`sdks`): what their users wait for, and what toolhost adds to it.
//!
//! Every process this bench starts (but the SDK clients) runs on the
//! allocator the `toolhost` binary ships with (mimalloc), clients and
//! relays included.
//!
//! The clients run on one thread, as the MCP clients agents use do (Node's
//! and Python's event loops): a client on a worker per core woke its own
//! tasks across threads and added about 115 µs to each HTTP call, its own
//! cost and not the server's.
//!
//! Needs `make host plugins lang-plugins upstream venv` (`make bench` runs
//! them first: this binary times the `toolhost` built there).
//! `cargo run --release -p toolhost-bench --bin front -- --help`

mod bare;
mod sdks;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Parser;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService, ServiceExt};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use serde::Serialize;
use serde_json::{Value, json};
use toolhost::CallControl;
use toolhost::plugin::{Runtime, RuntimeOptions};
use toolhost_cli::config::Config;
use toolhost_tests::served::Served;
use toolhost_tests::{everything_server, guest, reference, toolhost_binary};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(about = "Latency and throughput of toolhost's MCP front")]
struct Args {
    /// Calls per sequential measurement.
    #[arg(long, default_value_t = 2000, value_parser = at_least_one())]
    calls: usize,
    /// Calls in flight at once on one session.
    #[arg(long, default_value_t = 16, value_parser = at_least_one())]
    in_flight: usize,
    /// Concurrent HTTP sessions, each calling one call after another.
    #[arg(long, default_value_t = 64, value_parser = at_least_one())]
    sessions: usize,
    /// Calls per session in the many-sessions measurement.
    #[arg(long, default_value_t = 100, value_parser = at_least_one())]
    calls_per_session: usize,
    /// Rounds of the many-sessions measurement; its rate is their median.
    #[arg(long, default_value_t = 5, value_parser = at_least_one())]
    session_rounds: usize,
    /// Rounds of each interleaved comparison (stdio against HTTP, an
    /// upstream directly against through toolhost): each round calls both
    /// in turn, and a figure is the median of the rounds' own.
    #[arg(long, default_value_t = 100, value_parser = at_least_one())]
    rounds: usize,
    /// Calls of each kind per round.
    #[arg(long, default_value_t = 20, value_parser = at_least_one())]
    round_calls: usize,
    /// Calls of each SDK client (Python, TypeScript) per transport and
    /// round.
    #[arg(long, default_value_t = 300, value_parser = at_least_one())]
    sdk_calls: usize,
    /// Rounds of the SDK clients, each taking stdio, HTTP and the bare
    /// server over HTTP in turn; a figure is the median of the rounds'.
    #[arg(long, default_value_t = 3, value_parser = at_least_one())]
    sdk_rounds: usize,
    /// Process starts timed to the first `tools/list` answer.
    #[arg(long, default_value_t = 10, value_parser = at_least_one())]
    starts: usize,
    /// Print the figures as JSON.
    #[arg(long)]
    json: bool,
    /// Measure the proxy hop alone (direct, bare relay, toolhost), for a
    /// short run or a profile of it.
    #[arg(long)]
    proxy_only: bool,
    /// Also write the targets, each with its baseline, as JSON to this
    /// file (what `make bench`'s table reads).
    #[arg(long)]
    targets: Option<PathBuf>,
}

/// A count of calls, rounds or sessions: none would leave nothing to
/// measure, refused as the option's error rather than a panic.
fn at_least_one() -> clap::builder::RangedU64ValueParser<usize> {
    clap::builder::RangedU64ValueParser::new().range(1..)
}

type Client = RunningService<RoleClient, ()>;

/// Latencies of one measurement, in microseconds.
#[derive(Serialize)]
struct Figures {
    name: String,
    calls: usize,
    p50_us: f64,
    p99_us: f64,
    calls_per_s: f64,
    /// The host process's CPU time per call, where it was measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    host_cpu_us: Option<f64>,
    /// This process's (the client's) CPU time per call, where the host's
    /// was measured.
    #[serde(skip_serializing_if = "Option::is_none")]
    client_cpu_us: Option<f64>,
}

impl Figures {
    fn new(name: &str, mut samples: Vec<Duration>, wall: Duration) -> Self {
        samples.sort();
        let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize].as_secs_f64() * 1e6;
        Self {
            name: name.to_owned(),
            calls: samples.len(),
            p50_us: at(0.50),
            p99_us: at(0.99),
            calls_per_s: samples.len() as f64 / wall.as_secs_f64(),
            host_cpu_us: None,
            client_cpu_us: None,
        }
    }
}

/// A target: a figure beside its baseline measured in the same rounds,
/// their ratio, and the bound it is held to. `make bench` prints these
/// rows, with the other benches', in one table (`--bin table`).
#[derive(Serialize)]
struct Target {
    what: &'static str,
    measured: f64,
    baseline_what: &'static str,
    baseline: f64,
    unit: &'static str,
    /// `measured / baseline`.
    ratio: f64,
    /// The bound, in words.
    target: String,
    met: bool,
}

impl Target {
    fn new(what: &'static str, measured: f64, unit: &'static str, baseline: (&'static str, f64)) -> Self {
        Self {
            what,
            measured,
            baseline_what: baseline.0,
            baseline: baseline.1,
            unit,
            ratio: measured / baseline.1,
            target: String::new(),
            met: true,
        }
    }

    /// Held to `ratio <= limit`.
    fn ratio_at_most(mut self, limit: f64) -> Self {
        self.target = format!("ratio <= {limit}");
        self.met = self.ratio <= limit;
        self
    }

    /// Held to `measured <= limit`.
    fn at_most(mut self, limit: f64) -> Self {
        self.target = format!("<= {limit} {}", self.unit);
        self.met = self.measured <= limit;
        self
    }

    /// Held to `measured >= limit`.
    fn at_least(mut self, limit: f64) -> Self {
        self.target = format!(">= {limit} {}", self.unit);
        self.met = self.measured >= limit;
        self
    }

    /// Held to `measured <= baseline + limit`.
    fn within_baseline_plus(mut self, limit: f64) -> Self {
        self.target = format!("<= baseline + {limit} {}", self.unit);
        self.met = self.measured <= self.baseline + limit;
        self
    }
}

/// A tool root with one small file, and a configuration serving it.
struct Workspace {
    dir: tempfile::TempDir,
}

impl Workspace {
    fn new(extra: &str) -> Result<Self> {
        let dir = tempfile::tempdir()?;
        std::fs::create_dir(dir.path().join("root"))?;
        std::fs::create_dir(dir.path().join("plugins"))?;
        std::fs::write(dir.path().join("root/small.txt"), "one\ntwo\nthree\n")?;
        std::fs::write(
            dir.path().join("toolhost.toml"),
            format!("root = \"root\"\nplugins = \"plugins\"\ncache = \"cache\"\n{extra}"),
        )?;
        Ok(Self { dir })
    }

    fn config(&self) -> PathBuf {
        self.dir.path().join("toolhost.toml")
    }

    /// `toolhost --config ... serve`.
    fn command(&self) -> std::process::Command {
        let mut command = std::process::Command::new(toolhost_binary());
        command.arg("--config").arg(self.config()).arg("serve");
        command
    }

    /// `toolhost serve` over stdio, and its process id.
    async fn stdio(&self) -> Result<(Client, u32)> {
        over_stdio(tokio::process::Command::from(self.command())).await
    }

    /// Start `toolhost serve --http`.
    fn http_server(&self) -> Result<Served> {
        let mut command = self.command();
        command.args(["--http", "127.0.0.1:0"]);
        Ok(Served::start(command)?)
    }
}

async fn http_client(url: &str) -> Result<Client> {
    let http = toolhost::internals::http_client::builder().build()?;
    let transport =
        StreamableHttpClientTransport::with_client(http, StreamableHttpClientTransportConfig::with_uri(url));
    Ok(().serve(transport).await?)
}

fn read_call() -> CallToolRequestParams {
    let args = json!({"path": "small.txt"});
    CallToolRequestParams::new("read").with_arguments(args.as_object().cloned().unwrap_or_default())
}

async fn call(client: &Client, params: CallToolRequestParams) -> Result<Duration> {
    let start = Instant::now();
    let result = client.peer().call_tool(params).await?;
    let took = start.elapsed();
    if result.is_error == Some(true) {
        bail!("the call failed: {:?}", result.content);
    }
    Ok(took)
}

/// A client of the MCP server `command` starts, over its stdio (its
/// stderr dropped), and the server's process id.
async fn over_stdio(command: tokio::process::Command) -> Result<(Client, u32)> {
    let program = command.as_std().get_program().to_owned();
    let transport = TokioChildProcess::builder(command)
        .stderr(Stdio::null())
        .spawn()?
        .0;
    let pid = transport
        .id()
        .with_context(|| format!("{} exited as it started", program.display()))?;
    let client = ().serve(transport).await?;
    Ok((client, pid))
}

/// The median of `values` (the upper one of an even count).
fn median_of(values: &[f64]) -> f64 {
    let mut values = values.to_vec();
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// This binary run as `args` (the relay, the bare server), more may follow.
fn this_binary(args: &[&str]) -> Result<tokio::process::Command> {
    let mut command = tokio::process::Command::new(std::env::current_exe()?);
    command.args(args);
    Ok(command)
}

/// The bare server over stdio (`bare`), and its process id.
async fn bare_stdio() -> Result<(Client, u32)> {
    over_stdio(this_binary(&[bare::ARG, "stdio"])?).await
}

/// The bare server over streamable HTTP (`bare`).
fn bare_http() -> Result<Served> {
    let command = this_binary(&[bare::ARG, "http"])?;
    Ok(Served::start(command.into_std())?)
}

/// `n` calls, one after another, to the host whose process is `host`,
/// with its CPU time per call and the client's.
async fn sequential(
    name: &str,
    client: &Client,
    params: &CallToolRequestParams,
    n: usize,
    host: u32,
) -> Result<Figures> {
    // Warm the connection and the caches first.
    for _ in 0..n / 10 {
        call(client, params.clone()).await?;
    }
    let me = std::process::id();
    let (start, cpu, own) = (Instant::now(), cpu_time(host)?, cpu_time(me)?);
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        samples.push(call(client, params.clone()).await?);
    }
    let (cpu, own) = (cpu_time(host)? - cpu, cpu_time(me)? - own);
    let mut figures = Figures::new(name, samples, start.elapsed());
    figures.host_cpu_us = Some(cpu.as_secs_f64() * 1e6 / n as f64);
    figures.client_cpu_us = Some(own.as_secs_f64() * 1e6 / n as f64);
    Ok(figures)
}

/// The CPU time (user and system, every thread) process `pid` has used,
/// from `/proc`, to within a clock tick (10 ms): what the host spends on
/// its side of a call, apart from the client's.
fn cpu_time(pid: u32) -> Result<Duration> {
    let path = format!("/proc/{pid}/stat");
    let stat = std::fs::read_to_string(&path).with_context(|| format!("cannot read {path}"))?;
    // The fields after the command's name, which is in parentheses and
    // may hold spaces: utime and stime are the 12th and 13th.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let tick = |i: usize| -> Result<u64> {
        let field = fields.get(i).with_context(|| format!("{path} is cut short"))?;
        Ok(field.parse()?)
    };
    // In clock ticks of USER_HZ, which Linux fixes at 100 for user space
    // whatever the kernel's own HZ.
    Ok(Duration::from_millis((tick(11)? + tick(12)?) * 10))
}

/// `n` calls on one session, `in_flight` at a time.
async fn concurrent(name: &str, client: &Client, n: usize, in_flight: usize) -> Result<Figures> {
    let per_lane = n.div_ceil(in_flight);
    let start = Instant::now();
    let lanes = (0..in_flight).map(|_| async move {
        let mut samples = Vec::with_capacity(per_lane);
        for _ in 0..per_lane {
            samples.push(call(client, read_call()).await?);
        }
        anyhow::Ok(samples)
    });
    let samples = futures::future::try_join_all(lanes).await?.concat();
    Ok(Figures::new(name, samples, start.elapsed()))
}

/// `sessions` HTTP sessions at once, each making `calls` calls in turn,
/// `rounds` times over the same sessions: the figures of the round with the
/// median rate, and the lowest and highest rates. One round on this busy
/// machine swings with whatever else runs; the median of several does not.
async fn many_sessions(
    url: &str,
    sessions: usize,
    calls: usize,
    rounds: usize,
) -> Result<(Figures, f64, f64)> {
    let mut clients = Vec::new();
    for _ in 0..sessions {
        clients.push(http_client(url).await?);
    }
    let mut results = Vec::with_capacity(rounds);
    // The first round warms every session and is not counted.
    for round in 0..=rounds.max(1) {
        let start = Instant::now();
        let lanes = clients.iter().map(|client| async move {
            let mut samples = Vec::with_capacity(calls);
            for _ in 0..calls {
                samples.push(call(client, read_call()).await?);
            }
            anyhow::Ok(samples)
        });
        let samples = futures::future::try_join_all(lanes).await?.concat();
        if round > 0 {
            results.push(Figures::new(
                &format!("http, {sessions} sessions (median of {rounds} rounds)"),
                samples,
                start.elapsed(),
            ));
        }
    }
    for client in clients {
        client.cancel().await?;
    }
    results.sort_by(|a, b| a.calls_per_s.total_cmp(&b.calls_per_s));
    let (low, high) = (results[0].calls_per_s, results[results.len() - 1].calls_per_s);
    let median = results.swap_remove(results.len() / 2);
    Ok((median, low, high))
}

async fn direct(workspace: &Workspace, n: usize) -> Result<Figures> {
    let config = Config::read(&workspace.config())?;
    let runtime = Runtime::new(RuntimeOptions::default())?;
    let (host, errors) = toolhost_cli::setup::build(&runtime, &config, None, None).await?;
    if !errors.is_empty() {
        bail!("{errors:?}");
    }
    let one = || async {
        let start = Instant::now();
        let out = host
            .call_tool("read", json!({"path": "small.txt"}), &CallControl::new("bench"))
            .await
            .map_err(|e| anyhow::anyhow!("{}", toolhost::error_text(&e)))?;
        let took = start.elapsed();
        if out.is_error {
            bail!("read failed: {}", out.text());
        }
        anyhow::Ok(took)
    };
    for _ in 0..n / 10 {
        one().await?;
    }
    let start = Instant::now();
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        samples.push(one().await?);
    }
    host.shutdown().await;
    Ok(Figures::new(
        "direct Toolhost::call_tool",
        samples,
        start.elapsed(),
    ))
}

/// Ways of making a call, compared in turn: `rounds` rounds of `calls`
/// calls of each, rotating which goes first, so that whatever else loads
/// the machine weighs on every side of a round alike. Each way after the
/// first is compared with the first: the median over rounds of each
/// round's difference of medians, and the same over the first
/// and the second half of the rounds (how steady they are within one run).
struct Interleaved {
    figures: Vec<Figures>,
    /// For each way after the first.
    against_first: Vec<Against>,
}

struct Against {
    /// Median over rounds of (its p50 - the first's p50), in µs.
    added_p50_us: f64,
    halves_added_us: (f64, f64),
}

type Way<'a> = (&'a str, &'a Client, &'a CallToolRequestParams);

async fn interleaved(ways: &[Way<'_>], rounds: usize, calls: usize) -> Result<Interleaved> {
    let (rounds, calls, n) = (rounds.max(1), calls.max(1), ways.len());
    // Warm every path (caches, connections, a node upstream's JIT) first.
    for _ in 0..rounds * calls / 10 {
        for (_, client, params) in ways {
            call(client, (*params).clone()).await?;
        }
    }
    let median = |mut v: Vec<Duration>| {
        v.sort();
        v[v.len() / 2].as_secs_f64() * 1e6
    };
    let mut all: Vec<Vec<Duration>> = vec![Vec::new(); n];
    let mut added = vec![Vec::new(); n];
    for round in 0..rounds {
        let mut samples: Vec<Vec<Duration>> = vec![Vec::with_capacity(calls); n];
        for i in 0..calls {
            for k in 0..n {
                let way = (round + i + k) % n;
                let (_, client, params) = ways[way];
                samples[way].push(call(client, params.clone()).await?);
            }
        }
        let p50: Vec<f64> = samples.iter().map(|s| median(s.clone())).collect();
        for way in 1..n {
            added[way].push(p50[way] - p50[0]);
        }
        for (way, s) in samples.into_iter().enumerate() {
            all[way].extend(s);
        }
    }
    let half = rounds / 2;
    let against_first = (1..n)
        .map(|way| Against {
            added_p50_us: median_of(&added[way]),
            halves_added_us: (
                median_of(&added[way][..half.max(1)]),
                median_of(&added[way][half..]),
            ),
        })
        .collect();
    let figures = ways
        .iter()
        .zip(all)
        .map(|((name, _, _), samples)| {
            let wall = samples.iter().sum();
            Figures::new(name, samples, wall)
        })
        .collect();
    Ok(Interleaved {
        figures,
        against_first,
    })
}

/// What proxying costs: server-everything's `echo` called directly,
/// through a bare relay process, through toolhost, and through the bare
/// rmcp proxy (`bare`; each of the last three runs its own
/// server-everything), all four clients open at once and called in turn.
/// The relay is the peer baseline: a process that copies bytes both ways
/// and parses nothing, the least any proxy on its own process hop adds on
/// this machine. The bare rmcp proxy is the least a proxy that reads each
/// message, on the library toolhost is built on, adds.
async fn upstream(rounds: usize, calls: usize) -> Result<Interleaved> {
    let server = everything_server();
    let mut node = tokio::process::Command::new("node");
    node.arg(&server).arg("stdio");
    let (everything, _) = over_stdio(node).await?;
    let upstream = [OsStr::new("node"), server.as_os_str(), OsStr::new("stdio")];
    let mut relay = this_binary(&[RELAY])?;
    relay.args(upstream);
    let (relayed, _) = over_stdio(relay).await?;
    let mut bare_proxy = this_binary(&[bare::ARG, "proxy"])?;
    bare_proxy.args(upstream);
    let (bare_proxied, _) = over_stdio(bare_proxy).await?;
    let workspace = Workspace::new(&format!(
        "[speculation]\nenabled = false\n[[upstream]]\nname = \"everything\"\ncommand = \"node\"\nargs = [{}, \"stdio\"]\nprefix = \"ev_\"\n",
        Value::String(server.display().to_string())
    ))?;
    let (proxied, _) = workspace.stdio().await?;
    let echo = |name: &'static str| {
        CallToolRequestParams::new(name)
            .with_arguments(json!({"message": "hi"}).as_object().cloned().unwrap_or_default())
    };
    let (direct, through) = (echo("echo"), echo("ev_echo"));
    let figures = interleaved(
        &[
            ("upstream echo, direct (stdio, interleaved)", &everything, &direct),
            ("upstream echo, through a bare relay", &relayed, &direct),
            ("upstream echo, through toolhost", &proxied, &through),
            ("upstream echo, through a bare rmcp proxy", &bare_proxied, &direct),
        ],
        rounds,
        calls,
    )
    .await;
    for client in [everything, relayed, proxied, bare_proxied] {
        client.cancel().await?;
    }
    figures
}

/// What proxying an upstream may add over what a bare relay process adds
/// (the process hop alone), in µs: the front's own work on a proxied call.
const PROXY_OVER_RELAY_US: f64 = 50.0;

/// An HTTP call may take this many times a stdio call.
const HTTP_RATIO_BOUND: f64 = 1.5;

/// The first argument that runs this binary as the bare relay.
const RELAY: &str = "--relay-to";

/// Run `command`, copying stdin to its stdin and its stdout to stdout
/// until either side closes. Blocking threads: a read returns as soon as
/// bytes arrive, with no reactor in between.
fn relay(command: &[std::ffi::OsString]) -> Result<()> {
    let (program, args) = command.split_first().context("nothing to relay to")?;
    let mut child = std::process::Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot start {}", program.display()))?;
    let mut to_child = child.stdin.take().context("stdin")?;
    let mut from_child = child.stdout.take().context("stdout")?;
    std::thread::spawn(move || std::io::copy(&mut std::io::stdin().lock(), &mut to_child));
    std::io::copy(&mut from_child, &mut std::io::stdout().lock())?;
    let _ = child.kill();
    Ok(())
}

fn eleven_plugins(dir: &Path) -> Result<()> {
    let rust = [
        ("10-format-pipeline", "format_pipeline", None),
        ("15-text-tools", "text_tools", None),
        (
            "20-github",
            "github",
            Some("[config]\nowner = \"acme\"\nrepo = \"widgets\"\n"),
        ),
        (
            "25-gitlab",
            "gitlab",
            Some("[config]\nhost = \"gitlab.example.com\"\n"),
        ),
        (
            "30-jira",
            "jira",
            Some("[config]\nhost = \"acme.atlassian.net\"\n[[config.projects]]\nkey = \"WEB\"\n"),
        ),
        ("35-clickup", "clickup", None),
        ("40-confluence", "confluence", None),
        ("45-fireflies", "fireflies", None),
        ("50-linear", "linear", None),
    ];
    for (stem, crate_name, manifest) in rust {
        std::fs::copy(guest(crate_name), dir.join(format!("{stem}.wasm")))?;
        if let Some(text) = manifest {
            std::fs::write(dir.join(format!("{stem}.toml")), text)?;
        }
    }
    for lang in ["js", "py"] {
        let wasm = reference(lang);
        std::fs::copy(&wasm, dir.join(format!("60-reference-{lang}.wasm")))?;
        std::fs::copy(
            wasm.with_extension("toml"),
            dir.join(format!("60-reference-{lang}.toml")),
        )?;
    }
    Ok(())
}

/// One start of `workspace`'s `toolhost serve` to its first `tools/list`
/// answer, which must list `at_least` tools.
async fn once(workspace: &Workspace, at_least: usize) -> Result<Duration> {
    let start = Instant::now();
    let (client, _) = workspace.stdio().await?;
    let tools = client.peer().list_tools(None).await?;
    let took = start.elapsed();
    client.cancel().await?;
    if tools.tools.len() < at_least {
        bail!("only {} tools listed", tools.tools.len());
    }
    Ok(took)
}

/// From spawning `toolhost serve` (stdio) to the first `tools/list` answer,
/// with eleven cached plugins and, in turn in the same rounds, with none
/// (the baseline: the process, the runtime and the native tools alone).
async fn start_up(starts: usize) -> Result<(Figures, Figures)> {
    let loaded = Workspace::new("")?;
    eleven_plugins(&loaded.dir.path().join("plugins"))?;
    let bare = Workspace::new("")?;
    // The first start compiles into the workspace's code cache. The cache
    // records an entry it found sound only once its file is two seconds
    // old, so the next start after that records them all, as a user's
    // start does long after the compile, and the timed starts hash none.
    once(&loaded, 6).await?;
    tokio::time::sleep(Duration::from_millis(2100)).await;
    once(&loaded, 6).await?;
    let (mut with, mut without) = (Vec::with_capacity(starts), Vec::with_capacity(starts));
    for round in 0..starts {
        if round % 2 == 0 {
            with.push(once(&loaded, 6).await?);
            without.push(once(&bare, 1).await?);
        } else {
            without.push(once(&bare, 1).await?);
            with.push(once(&loaded, 6).await?);
        }
    }
    let wall = |s: &[Duration]| -> Duration { s.iter().sum() };
    let (with_wall, without_wall) = (wall(&with), wall(&without));
    Ok((
        Figures::new("start to first tools/list, 11 cached plugins", with, with_wall),
        Figures::new("start to first tools/list, no plugin", without, without_wall),
    ))
}

fn main() -> Result<()> {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if argv.get(1).is_some_and(|a| a == RELAY) {
        return relay(&argv[2..]);
    }
    if argv.get(1).is_some_and(|a| a == bare::ARG) {
        return bare::run(&argv[2..]);
    }
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(bench(Args::parse()))
}

async fn bench(args: Args) -> Result<()> {
    if args.proxy_only {
        let proxying = upstream(args.rounds, args.round_calls).await?;
        for f in &proxying.figures {
            println!(
                "{:<48} {:>7} p50 {:>9.1} µs  p99 {:>9.1} µs",
                f.name, f.calls, f.p50_us, f.p99_us
            );
        }
        let (relay, proxy, bare) = (
            &proxying.against_first[0],
            &proxying.against_first[1],
            &proxying.against_first[2],
        );
        println!(
            "a bare relay adds {:.1} µs at p50, a bare rmcp proxy {:.1} µs, toolhost {:.1} µs: \
             {:.1} µs more than the relay",
            relay.added_p50_us,
            bare.added_p50_us,
            proxy.added_p50_us,
            proxy.added_p50_us - relay.added_p50_us
        );
        return Ok(());
    }
    let workspace = Workspace::new("[speculation]\nenabled = false\n")?;
    let mut figures = Vec::new();

    let direct = direct(&workspace, args.calls).await?;
    let (stdio, stdio_pid) = workspace.stdio().await?;
    let stdio_seq = sequential("stdio, sequential", &stdio, &read_call(), args.calls, stdio_pid).await?;
    let stdio_conc = concurrent(
        &format!("stdio, {} in flight", args.in_flight),
        &stdio,
        args.calls,
        args.in_flight,
    )
    .await?;

    let server = workspace.http_server()?;
    let url = server.url.clone();
    let http = http_client(&url).await?;
    let http_seq = sequential("http, sequential", &http, &read_call(), args.calls, server.pid()).await?;
    let http_conc = concurrent(
        &format!("http, one session, {} in flight", args.in_flight),
        &http,
        args.calls,
        args.in_flight,
    )
    .await?;
    let (bare_stdio, bare_stdio_pid) = bare_stdio().await?;
    let bare_http_server = bare_http()?;
    let bare_http = http_client(&bare_http_server.url).await?;
    let bare_stdio_seq = sequential(
        "bare rmcp server, stdio, sequential",
        &bare_stdio,
        &read_call(),
        args.calls,
        bare_stdio_pid,
    )
    .await?;
    let bare_http_seq = sequential(
        "bare rmcp server, http, sequential",
        &bare_http,
        &read_call(),
        args.calls,
        bare_http_server.pid(),
    )
    .await?;
    let read = read_call();
    let front = interleaved(
        &[
            ("stdio, interleaved with http", &stdio, &read),
            ("http, interleaved with stdio", &http, &read),
            ("bare rmcp server, stdio, interleaved", &bare_stdio, &read),
            ("bare rmcp server, http, interleaved", &bare_http, &read),
        ],
        args.rounds,
        args.round_calls,
    )
    .await?;
    let http_vs_stdio = &front.against_first[0];
    for client in [stdio, http, bare_stdio, bare_http] {
        client.cancel().await?;
    }
    let sdk_calls = sdks::measure(
        &workspace.config(),
        &url,
        &bare_http_server.url,
        args.sdk_calls,
        args.sdk_rounds,
    )?;
    drop(bare_http_server);
    let (sessions, sessions_low, sessions_high) =
        many_sessions(&url, args.sessions, args.calls_per_session, args.session_rounds).await?;

    let proxying = upstream(args.rounds, args.round_calls).await?;
    let (relay, proxy, bare_proxy) = (
        &proxying.against_first[0],
        &proxying.against_first[1],
        &proxying.against_first[2],
    );
    let (start, bare_start) = start_up(args.starts).await?;

    // p50s over every call of the interleaved rounds.
    let p50 = |figures: &[Figures], i: usize| figures[i].p50_us;
    let mut targets = vec![
        Target::new(
            "HTTP call p50 (interleaved with stdio)",
            p50(&front.figures, 1),
            "µs",
            ("stdio call p50", p50(&front.figures, 0)),
        )
        .ratio_at_most(HTTP_RATIO_BOUND),
        Target::new(
            "HTTP call p50, bare rmcp server (interleaved)",
            p50(&front.figures, 3),
            "µs",
            ("its stdio call p50", p50(&front.figures, 2)),
        ),
        Target::new(
            "HTTP call p50 (interleaved)",
            p50(&front.figures, 1),
            "µs",
            ("the bare rmcp server's", p50(&front.figures, 3)),
        ),
        Target::new(
            "stdio call p50 (interleaved)",
            p50(&front.figures, 0),
            "µs",
            ("the bare rmcp server's", p50(&front.figures, 2)),
        ),
        Target::new(
            "calls/s over HTTP, many sessions (median round)",
            sessions.calls_per_s,
            "calls/s",
            ("one session, one call at a time", http_seq.calls_per_s),
        )
        .at_least(5000.0),
        // Each the median over rounds of that round's p50 less the direct
        // call's p50 in the same round.
        Target::new(
            "µs proxying an upstream adds (echo)",
            proxy.added_p50_us,
            "µs",
            ("µs a bare relay process adds", relay.added_p50_us),
        )
        .within_baseline_plus(PROXY_OVER_RELAY_US),
        Target::new(
            "µs a bare rmcp proxy adds (echo)",
            bare_proxy.added_p50_us,
            "µs",
            ("µs a bare relay process adds", relay.added_p50_us),
        ),
        Target::new(
            "upstream echo p50 through toolhost (interleaved)",
            p50(&proxying.figures, 2),
            "µs",
            ("direct echo p50", p50(&proxying.figures, 0)),
        ),
        Target::new(
            "upstream echo p50 through a bare relay (interleaved)",
            p50(&proxying.figures, 1),
            "µs",
            ("direct echo p50", p50(&proxying.figures, 0)),
        ),
        Target::new(
            "start to first tools/list, 11 plugins (p50)",
            start.p50_us / 1000.0,
            "ms",
            ("the same start with no plugin", bare_start.p50_us / 1000.0),
        )
        .at_most(50.0),
    ];
    // What the clients agents run on wait for, each against itself and
    // against the bare server over HTTP.
    targets.extend(sdk_calls.iter().flat_map(|s| {
        [
            Target::new(s.row, s.http_p50_us, "µs", ("its stdio call p50", s.stdio_p50_us)),
            Target::new(
                s.bare_row,
                s.http_p50_us,
                "µs",
                ("the same client, the bare rmcp server", s.bare_http_p50_us),
            ),
        ]
    }));
    let base = direct.p50_us;
    // Where a transport's cost lies: the server's side of a call and the
    // client's, for toolhost and for the bare server; each (stdio, HTTP).
    let cpu = |f: &[&Figures; 2], side: fn(&Figures) -> Option<f64>| f.map(|f| side(f).unwrap_or_default());
    let (host_cpu, bare_cpu) = (
        cpu(&[&stdio_seq, &http_seq], |f| f.host_cpu_us),
        cpu(&[&bare_stdio_seq, &bare_http_seq], |f| f.host_cpu_us),
    );
    let (client_cpu, bare_client_cpu) = (
        cpu(&[&stdio_seq, &http_seq], |f| f.client_cpu_us),
        cpu(&[&bare_stdio_seq, &bare_http_seq], |f| f.client_cpu_us),
    );
    let spread = json!({
        "host_cpu_us_per_call_stdio_http": host_cpu,
        "client_cpu_us_per_call_stdio_http": client_cpu,
        "bare_server_cpu_us_per_call_stdio_http": bare_cpu,
        "client_of_bare_cpu_us_per_call_stdio_http": bare_client_cpu,
        "calls_per_s_many_sessions_low_high": [sessions_low, sessions_high],
        "http_added_over_stdio_p50_us_halves": [http_vs_stdio.halves_added_us.0, http_vs_stdio.halves_added_us.1],
        "proxying_added_p50_us_halves": [proxy.halves_added_us.0, proxy.halves_added_us.1],
        "relay_added_p50_us_halves": [relay.halves_added_us.0, relay.halves_added_us.1],
        "bare_proxy_added_p50_us_halves": [bare_proxy.halves_added_us.0, bare_proxy.halves_added_us.1],
    });
    let (relay_added, proxy_added) = (relay.halves_added_us, proxy.halves_added_us);
    let front_halves = http_vs_stdio.halves_added_us;
    figures.extend([
        direct,
        stdio_seq,
        stdio_conc,
        http_seq,
        http_conc,
        bare_stdio_seq,
        bare_http_seq,
    ]);
    figures.extend(front.figures);
    figures.push(sessions);
    figures.extend(proxying.figures);
    figures.extend([start, bare_start]);

    if let Some(path) = &args.targets {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(path, serde_json::to_string_pretty(&json!({"targets": targets}))?)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({"figures": figures, "targets": targets, "spread": spread}))?
        );
        return Ok(());
    }
    println!(
        "{:<48} {:>7} {:>11} {:>11} {:>10} {:>9}",
        "measurement", "calls", "p50 µs", "p99 µs", "calls/s", "p50/direct"
    );
    for f in &figures {
        println!(
            "{:<48} {:>7} {:>11.1} {:>11.1} {:>10.0} {:>9.1}x",
            f.name,
            f.calls,
            f.p50_us,
            f.p99_us,
            f.calls_per_s,
            f.p50_us / base
        );
    }
    println!();
    println!(
        "many sessions: rounds ranged {sessions_low:.0} to {sessions_high:.0} calls/s; \
         HTTP added {:.1} µs over stdio in the first half of its rounds, {:.1} µs in the second; \
         proxying added {:.1} µs, then {:.1} µs; a bare relay {:.1} µs, then {:.1} µs",
        front_halves.0, front_halves.1, proxy_added.0, proxy_added.1, relay_added.0, relay_added.1
    );
    for (server, [stdio, http], [client_stdio, client_http]) in [
        ("toolhost", host_cpu, client_cpu),
        ("the bare rmcp server", bare_cpu, bare_client_cpu),
    ] {
        println!(
            "CPU time per call, one call at a time, of {server}: {stdio:.1} µs over stdio, {http:.1} µs \
             over HTTP ({:.2}x); of its client: {client_stdio:.1} µs, {client_http:.1} µs",
            http / stdio
        );
    }
    println!(
        "proxying: a bare relay process adds {:.1} µs at p50 (the process hop alone), a bare rmcp \
         proxy {:.1} µs; toolhost adds {:.1} µs, {:.1} µs more than the relay",
        relay.added_p50_us,
        bare_proxy.added_p50_us,
        proxy.added_p50_us,
        proxy.added_p50_us - relay.added_p50_us
    );
    println!();
    for t in &targets {
        println!(
            "{:<48} {:>10.2} {:<8} baseline {:>10.2} ({}), ratio {:>6.2}  {} {}",
            t.what,
            t.measured,
            t.unit,
            t.baseline,
            t.baseline_what,
            t.ratio,
            t.target,
            match (t.target.is_empty(), t.met) {
                (true, _) => "",
                (false, true) => "met",
                (false, false) => "MISSED",
            }
        );
    }
    Ok(())
}
