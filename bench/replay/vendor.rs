//! `replay --vendor`: real agent trajectories against vendor MCP servers
//! (GitHub's and Notion's, from MCPMark: tests/replay/vendor/SOURCES.md)
//! replayed through a host whose one upstream is a fake of that server on
//! loopback (`fake`), with speculation off and then on, and the figures of
//! speculation that learns from agent traffic: predictable calls served,
//! prefetches made, their precision, extra backend calls, stale answers and
//! wait.
//!
//! Per server, the trajectories run in file order, one after another, each
//! in a host of its own (a task is a session, against a world the harness
//! reset), which starts from what the host before it learned
//! (`Toolhost::resume`, as `toolhost serve` does from its statistics file).
//! The fake is each host's one `[[upstream]]`, over streamable HTTP, with
//! its tools under their own names and its annotations trusted; no link is
//! declared and no plugin is loaded. Each call is made after its think time
//! with the recorded arguments.
//!
//! A call was served when its real call never reached the fake: told from
//! the fake's request log (a request for the current call's key arriving
//! while the agent waits on it), not from timing. Every other request was a
//! prefetch. A call is predictable by value flow (`flow`, analyze.py's
//! definition) when one of its argument values is in one of the results
//! before it, and novel when that value is one only a result held (not in
//! the task's text or an earlier call's arguments: an id, a sha, a path the
//! agent read). The headline is the share of novel reads served: the
//! follow-ups value flow predicts (40 % of reads, as analyze.py counts).
//! The share of every predictable read is printed beside it; it also holds
//! the reads whose only value from a result is the owner or repository the
//! task named, which every GitHub result repeats.
//!
//! An answer is stale when it differs from the call's recorded result
//! after per-request noise is removed: text items are compared as the JSON
//! they parse to (as text when they do not parse), and every object key
//! `request_id` (the Notion API's id of one HTTP request) is dropped; the
//! content items' `annotations` and `_meta` are left out. With speculation
//! off every answer is the fake's recording of that call, or of the same
//! read earlier in its epoch, so none may be stale: that validates the
//! comparison.
//!
//! With `--through provider` (`provider`), GitHub's trajectories go instead
//! through toolhost's GitHub provider plugin, each recorded call as the
//! catalog call that asks the same (`mapping`), against a fake of GitHub's
//! REST API (`rest`); the calls it has no equivalent for are counted as not
//! covered. The driver's step ([`step`]) and the figures ([`account`],
//! [`Figures`], the printing) are the same for both.

mod fake;
mod flow;
mod mapping;
pub mod provider;
mod rest;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use toolhost::speculation::{Settings, Snapshot};
use toolhost::{CallControl, Toolhost, UpstreamConfig, error_text};

use fake::{Cursor, Fake};

pub const SERVERS: [&str; 2] = ["github", "notion"];

/// What the trajectories go through to their vendor.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Through {
    /// The vendor's MCP server (a fake of it), as the host's upstream.
    #[default]
    Server,
    /// toolhost's GitHub provider plugin, against a fake of GitHub's REST
    /// API (GitHub's trajectories only).
    Provider,
}

pub struct Options {
    pub through: Through,
    pub only: Option<String>,
    pub server: Option<String>,
    /// Where github.jsonl and notion.jsonl are (default tests/replay/vendor).
    pub dir: Option<PathBuf>,
    /// Runs 2–4 too, after run 1.
    pub all_runs: bool,
    pub scale: f64,
    /// Per vendor call, before `scale`.
    pub latency_ms: u64,
    /// Think time of a call whose trace records none, before `scale`.
    pub think_ms: u64,
    pub json: bool,
}

impl Options {
    /// `ms` of the latency model, scaled.
    pub fn scaled(&self, ms: u64) -> Duration {
        Duration::from_secs_f64(ms as f64 * self.scale / 1000.0)
    }
}

/// Where, under the traces' directory, runs 2–4 are, compressed.
const RUNS_2_4: &str = "runs-2-4";

/// Where the committed traces are.
pub fn vendor_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/replay/vendor")
}

/// Whether `tool` reads: analyze.py's `READ`, by tool name.
pub fn is_read(tool: &str) -> bool {
    [
        "get_",
        "list_",
        "search_",
        "download_",
        "API-get-",
        "API-retrieve-",
    ]
    .iter()
    .any(|p| tool.starts_with(p))
        || matches!(tool, "API-post-search" | "API-post-database-query")
}

/// `v` with every object's keys sorted, written compactly: one call's key.
pub fn canonical(v: &Value) -> String {
    fn sorted(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                Value::Object(keys.into_iter().map(|k| (k.clone(), sorted(&m[k]))).collect())
            }
            Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
            _ => v.clone(),
        }
    }
    sorted(v).to_string()
}

/// One line of github.jsonl or notion.jsonl (convert.py's format), with
/// only what the replay uses.
#[derive(Deserialize)]
struct Line {
    id: String,
    #[serde(default)]
    prompt: Option<String>,
    calls: Vec<LineCall>,
}

#[derive(Deserialize)]
struct LineCall {
    tool: String,
    args: Value,
    result: Option<Value>,
    is_error: Option<bool>,
    error_from: Option<String>,
    think_ms: Option<u64>,
}

pub struct Trajectory {
    pub id: String,
    pub calls: Vec<Call>,
}

pub struct Call {
    pub tool: String,
    pub args: Value,
    pub key: String,
    pub read: bool,
    pub result: Option<Value>,
    pub error_from: Option<String>,
    pub think_ms: Option<u64>,
    /// Value-flow predictable (`flow`), and of those, novel.
    pub predictable: bool,
    pub novel: bool,
}

impl Trajectory {
    /// The trajectories of `server`'s file in `dir` (run 1), in file order;
    /// with `all_runs`, those of runs 2–4 after them
    /// (`RUNS_2_4/SERVER.jsonl.gz`).
    pub fn load_runs(dir: &Path, server: &str, all_runs: bool) -> Result<Vec<Self>> {
        let mut out = Self::load(dir, server)?;
        if all_runs {
            let path = dir.join(RUNS_2_4).join(format!("{server}.jsonl.gz"));
            let file = std::fs::File::open(&path).with_context(|| format!("opening {}", path.display()))?;
            let mut text = String::new();
            std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(file), &mut text)
                .with_context(|| format!("reading {}", path.display()))?;
            out.extend(Self::parse(&text, &path)?);
        }
        Ok(out)
    }

    /// The trajectories of `server`'s file in `dir`, in file order.
    pub fn load(dir: &Path, server: &str) -> Result<Vec<Self>> {
        let path = dir.join(format!("{server}.jsonl"));
        let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
        Self::parse(&text, &path)
    }

    /// The trajectories of `text`, convert.py's lines read from `path`.
    fn parse(text: &str, path: &Path) -> Result<Vec<Self>> {
        let mut out = Vec::new();
        for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let line: Line =
                serde_json::from_str(line).with_context(|| format!("{}:{}", path.display(), n + 1))?;
            let steps: Vec<flow::Step> = line
                .calls
                .iter()
                .map(|c| flow::Step {
                    args: &c.args,
                    result: c.result.as_ref(),
                    is_error: c.is_error == Some(true),
                })
                .collect();
            let flows = flow::predictable(line.prompt.as_deref().unwrap_or_default(), &steps);
            let calls = line
                .calls
                .into_iter()
                .zip(flows)
                .map(|(c, (predictable, novel))| Call {
                    key: canonical(&c.args),
                    read: is_read(&c.tool),
                    tool: c.tool,
                    args: c.args,
                    result: c.result,
                    error_from: c.error_from,
                    think_ms: c.think_ms,
                    predictable,
                    novel,
                })
                .collect();
            out.push(Self { id: line.id, calls });
        }
        Ok(out)
    }
}

/// What one run (one server, speculation off or on) did and met.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Figures {
    pub calls: u64,
    pub reads: u64,
    pub predictable: u64,
    pub novel: u64,
    /// Predictable reads: the most speculation could serve (a write is
    /// never made ahead).
    pub predictable_reads: u64,
    pub novel_reads: u64,
    /// Calls whose real call never reached the fake.
    pub served: u64,
    pub served_predictable: u64,
    pub served_novel: u64,
    /// Requests the fake received, and of them the real calls.
    pub backend_calls: u64,
    pub real_calls: u64,
    pub prefetches: u64,
    /// Requests no recorded call answers ("not found").
    pub unknown: u64,
    pub stale: u64,
    /// Calls the host answered with no result (`CallError`).
    pub failed: u64,
    /// Calls left out: the provider has no equivalent (`--through
    /// provider`); not in `calls`.
    pub not_covered: u64,
    /// Answers that were errors where the recording was none, or the
    /// reverse (`--through provider`: how closely the provider and its
    /// fake API give what the server gave).
    pub diverged: u64,
    pub waited_ms: f64,
}

impl Figures {
    fn add(&mut self, o: &Figures) {
        self.calls += o.calls;
        self.reads += o.reads;
        self.predictable += o.predictable;
        self.novel += o.novel;
        self.predictable_reads += o.predictable_reads;
        self.novel_reads += o.novel_reads;
        self.served += o.served;
        self.served_predictable += o.served_predictable;
        self.served_novel += o.served_novel;
        self.backend_calls += o.backend_calls;
        self.real_calls += o.real_calls;
        self.prefetches += o.prefetches;
        self.unknown += o.unknown;
        self.stale += o.stale;
        self.failed += o.failed;
        self.not_covered += o.not_covered;
        self.diverged += o.diverged;
        self.waited_ms += o.waited_ms;
    }
}

/// One server replayed with speculation off or on.
pub struct Run {
    pub figures: Figures,
    pub trajectories: Vec<(String, Figures)>,
    /// Per trajectory and call: how many times its real call reached the
    /// fake (the smoke test's check).
    #[cfg_attr(not(test), allow(dead_code))]
    pub reached: Vec<Vec<usize>>,
    /// Every request that was not a real call, in order.
    pub prefetched: Vec<Prefetched>,
    /// The predictable reads whose real call reached the fake.
    pub missed: Vec<Missed>,
    pub stats: Option<Snapshot>,
    /// The calls left out, by recorded tool and why.
    pub not_covered: BTreeMap<String, u64>,
}

/// A predictable read speculation did not serve (for `--json`): where the
/// gap between what was served and what could be is.
#[derive(Debug, Clone, Serialize)]
pub struct Missed {
    pub trajectory: String,
    pub call: usize,
    /// The tool called before it.
    pub after: Option<String>,
    pub tool: String,
    pub args: String,
    pub novel: bool,
    /// Why it was not served ([`why_missed`]).
    pub why: &'static str,
}

/// Why predictable read `i` of trajectory `t`, whose real call reached the
/// backend, was not served: the host's word ([`Seen::why`]) where it has
/// one, told apart with what the backend logged where it has not.
/// - `not_speculatable`: the host never looked it up (its tool may not be
///   called ahead of time);
/// - `not_learned`: no link offered it, and none is learned (seen
///   [`toolhost::speculation::MIN_SEEN`] times) to its tool from the tools
///   of the `flow::WINDOW` calls before it;
/// - `not_projected`: a link to its tool from one of them is learned, but
///   offered other arguments, or none;
/// - `wrong_arguments`: no link offered it, but its tool was fetched since
///   the call before it with other arguments;
/// - `planned_late`: no link had offered it when the call came, and it was
///   fetched while the agent waited on it;
/// - `prefetched_gone`: it was fetched, and was gone (expired, evicted,
///   invalidated, stale) or had failed when the call came;
/// - `declined_REASON`: it was offered and not fetched (`unlikely`,
///   `extra_calls`, `capped`, `not_worth_it`).
fn why_missed(
    seen: &Seen,
    trajectory: &Trajectory,
    (t, i): (usize, usize),
    requests: &[Logged],
) -> &'static str {
    let call = &trajectory.calls[i];
    let prefetches = || {
        requests
            .iter()
            .filter(move |r| !r.real && r.cursor.trajectory == t && r.tool == call.tool)
    };
    match seen.why.as_deref() {
        None => "not_speculatable",
        Some("prefetched") => "prefetched_gone",
        Some("unlikely") => "declined_unlikely",
        Some("extra_calls") => "declined_extra_calls",
        Some("capped") => "declined_capped",
        Some("not_worth_it") => "declined_not_worth_it",
        Some("not_offered") => {
            if prefetches().any(|r| r.args == call.key && r.cursor.call == i && r.cursor.calling) {
                "planned_late"
            } else if prefetches().any(|r| {
                (r.cursor.call == i && !r.cursor.calling) || (r.cursor.call + 1 == i && r.cursor.calling)
            }) {
                "wrong_arguments"
            } else if trajectory.calls[i.saturating_sub(flow::WINDOW)..i]
                .iter()
                .any(|source| seen.linked_from.contains(&source.tool))
            {
                "not_projected"
            } else {
                "not_learned"
            }
        }
        Some(_) => "other",
    }
}

/// A request the fake got that no real call made: what the host fetched
/// ahead, and when (for `--json`).
#[derive(Debug, Clone, Serialize)]
pub struct Prefetched {
    pub tool: String,
    pub args: String,
    pub at_ms: u64,
    pub trajectory: String,
    /// The call the agent was at (thinking before it, or waiting on it).
    pub call: usize,
    /// No recorded call answers it.
    pub unknown: bool,
}

/// The host over `url`: its only source, speculation on or off.
async fn host(server: &str, url: &str, speculate: bool) -> Result<Toolhost> {
    let config: UpstreamConfig = serde_json::from_value(json!({
        "name": server,
        "url": url,
        "trust_annotations": true,
    }))
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    let speculation = if speculate {
        Settings::default()
    } else {
        Settings::off()
    };
    let (host, report) = Toolhost::builder()
        .upstream(config)
        .speculation(speculation)
        .build()
        .await?;
    ensure!(report.is_empty(), "{server}: {:?}", report.lines());
    Ok(host)
}

/// The counters of the sessions so far and of the one that just ended,
/// added; what was learned is the last session's, which started from the
/// earlier ones'.
fn summed(earlier: Option<&Snapshot>, now: Snapshot) -> Snapshot {
    let Some(e) = earlier else { return now };
    let mut declined = e.declined.clone();
    for (reason, n) in &now.declined {
        *declined.entry(reason.clone()).or_default() += n;
    }
    Snapshot {
        dispatched: e.dispatched + now.dispatched,
        hits: e.hits + now.hits,
        joins: e.joins + now.joins,
        reused: e.reused + now.reused,
        wasted: e.wasted + now.wasted,
        stale: e.stale + now.stale,
        waited: e.waited + now.waited,
        saved_ms: e.saved_ms + now.saved_ms,
        declined,
        ..now
    }
}

/// What the agent gets as compared (see the module doc).
fn comparable(result: &Value, is_error: bool) -> Value {
    fn quiet(v: &mut Value) {
        match v {
            Value::Object(m) => {
                m.remove("request_id");
                m.values_mut().for_each(quiet);
            }
            Value::Array(a) => a.iter_mut().for_each(quiet),
            _ => {}
        }
    }
    let content: Vec<Value> = result["content"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|item| match item["type"].as_str() {
            Some("text") => {
                let text = item["text"].as_str().unwrap_or_default();
                let mut v = flow::parse_json_text(text).unwrap_or_else(|| Value::String(text.into()));
                quiet(&mut v);
                v
            }
            Some("resource") => json!({"resource": item["resource"]}),
            _ => {
                let mut item = item.clone();
                if let Some(m) = item.as_object_mut() {
                    m.remove("annotations");
                    m.remove("_meta");
                }
                item
            }
        })
        .collect();
    let mut structured = result.get("structuredContent").cloned().unwrap_or(Value::Null);
    quiet(&mut structured);
    json!({"content": content, "structured": structured, "is_error": is_error})
}

/// What the agent of one call got and waited.
pub struct Answered {
    /// The answer, as compared ([`comparable`]).
    pub got: Value,
    pub is_error: bool,
    pub waited: Duration,
    /// The host answered with no result (`CallError`).
    pub failed: bool,
    /// Why no prefetch served it, as the host counted it
    /// (`Snapshot::missed`); `None` if it was served, or never looked up
    /// (a tool that may not be called ahead of time).
    pub why: Option<String>,
    /// The tools with a link learned (and planned) to this call's tool
    /// when it was made.
    pub linked_from: Vec<String>,
}

/// The host's count of calls not served, by why.
fn misses(host: &Toolhost) -> BTreeMap<String, u64> {
    host.stats().map(|s| s.missed).unwrap_or_default()
}

/// The tools from which the host plans a learned link to `tool`.
fn linked_to(host: &Toolhost, tool: &str) -> Vec<String> {
    let learned = host.stats().map(|s| s.learned).unwrap_or_default();
    learned
        .into_iter()
        .filter(|l| l.to == tool && l.seen >= toolhost::speculation::MIN_SEEN)
        .map(|l| l.from)
        .collect()
}

/// Make call `i` of trajectory `t` as its agent did: think `think`, then
/// call `tool`, timed; `set` tells the fakes where the driver is.
pub async fn step(
    host: &Toolhost,
    set: &dyn Fn(Cursor),
    (t, i): (usize, usize),
    think: Duration,
    (tool, args): (&str, Value),
    ctx: &CallControl,
) -> Result<Answered> {
    let at = |call, calling| Cursor {
        trajectory: t,
        call,
        calling,
    };
    set(at(i, false));
    tokio::time::sleep(think).await;
    let before = misses(host);
    let linked_from = linked_to(host, tool);
    set(at(i, true));
    let started = Instant::now();
    let answer = host.call_tool(tool, args, ctx).await;
    let waited = started.elapsed();
    set(at(i + 1, false));
    let why = misses(host)
        .into_iter()
        .find(|(why, n)| before.get(why).is_none_or(|b| n > b))
        .map(|(why, _)| why);
    Ok(match answer {
        Ok(out) => {
            let is_error = out.is_error;
            let mcp = serde_json::to_value(toolhost::internals::to_mcp(out))?;
            Answered {
                got: comparable(&mcp, is_error),
                is_error,
                waited,
                failed: false,
                why,
                linked_from,
            }
        }
        Err(e) => {
            let text = error_text(&e);
            Answered {
                got: comparable(&json!({"content": [{"type": "text", "text": text}]}), true),
                is_error: true,
                waited,
                failed: true,
                why,
                linked_from,
            }
        }
    })
}

/// A request a fake got, as the figures count it.
pub struct Logged {
    pub cursor: Cursor,
    /// Whether it was the real call of the call the driver waited on.
    pub real: bool,
    pub tool: String,
    pub args: String,
    pub at: Duration,
    pub unknown: bool,
}

/// What a replay saw of one call it counts.
pub struct Seen {
    pub waited: Duration,
    pub stale: bool,
    /// Its answer was an error where the recording was none, or the reverse.
    pub diverged: bool,
    /// The host's word on why no prefetch served it ([`Answered::why`]).
    pub why: Option<String>,
    /// [`Answered::linked_from`].
    pub linked_from: Vec<String>,
}

/// The figures of one run from what the driver saw (per trajectory and
/// call; `None` for a call the run does not count) and what the backend
/// logged.
pub fn account(
    trajectories: &[Trajectory],
    seen: &[Vec<Option<Seen>>],
    requests: &[Logged],
    stats: Option<Snapshot>,
) -> Run {
    let mut reached: Vec<Vec<usize>> = trajectories.iter().map(|t| vec![0; t.calls.len()]).collect();
    let mut per: Vec<Figures> = vec![Figures::default(); trajectories.len()];
    let mut prefetched = Vec::new();
    for r in requests {
        let (t, i) = (r.cursor.trajectory, r.cursor.call);
        if let Some(f) = per.get_mut(t) {
            f.backend_calls += 1;
            f.unknown += u64::from(r.unknown);
        }
        if r.real {
            reached[t][i] += 1;
        } else {
            prefetched.push(Prefetched {
                tool: r.tool.clone(),
                args: r.args.clone(),
                at_ms: r.at.as_millis() as u64,
                trajectory: trajectories.get(t).map(|tr| tr.id.clone()).unwrap_or_default(),
                call: i,
                unknown: r.unknown,
            });
        }
    }
    let mut figures = Figures::default();
    let mut rows = Vec::new();
    let mut missed = Vec::new();
    for (t, trajectory) in trajectories.iter().enumerate() {
        let f = &mut per[t];
        for (i, call) in trajectory.calls.iter().enumerate() {
            let Some(s) = &seen[t][i] else {
                f.not_covered += 1;
                continue;
            };
            let served = reached[t][i] == 0;
            if !served && call.predictable && call.read {
                missed.push(Missed {
                    trajectory: trajectory.id.clone(),
                    call: i,
                    after: i.checked_sub(1).map(|p| trajectory.calls[p].tool.clone()),
                    tool: call.tool.clone(),
                    args: call.key.clone(),
                    novel: call.novel,
                    why: why_missed(s, trajectory, (t, i), requests),
                });
            }
            f.calls += 1;
            f.reads += u64::from(call.read);
            f.predictable += u64::from(call.predictable);
            f.novel += u64::from(call.novel);
            f.predictable_reads += u64::from(call.predictable && call.read);
            f.novel_reads += u64::from(call.novel && call.read);
            f.served += u64::from(served);
            f.served_predictable += u64::from(served && call.predictable);
            f.served_novel += u64::from(served && call.novel);
            f.real_calls += reached[t][i] as u64;
            f.stale += u64::from(s.stale);
            f.diverged += u64::from(s.diverged);
            f.waited_ms += s.waited.as_secs_f64() * 1000.0;
        }
        f.prefetches = f.backend_calls.saturating_sub(f.real_calls);
        figures.add(f);
        rows.push((trajectory.id.clone(), f.clone()));
    }
    Run {
        figures,
        trajectories: rows,
        reached,
        prefetched,
        missed,
        stats,
        not_covered: BTreeMap::new(),
    }
}

/// Replay `trajectories` of `server` through one host, speculation on or off.
pub async fn replay(server: &str, trajectories: &[Trajectory], speculate: bool, o: &Options) -> Result<Run> {
    let fake = Arc::new(Fake::new(trajectories, o.scaled(o.latency_ms))?);
    let url = fake.serve().await?;
    let ctx = CallControl::new("vendor-replay");
    let mut seen = Vec::new();
    let mut failed = 0;
    let mut stats: Option<Snapshot> = None;
    for (t, trajectory) in trajectories.iter().enumerate() {
        // Each task is a session of its own, against a world the harness
        // reset: a new host, which starts from what the last one learned.
        let host = host(server, &url, speculate).await?;
        if let Some(earlier) = &stats {
            host.resume(earlier);
        }
        let mut t_seen = Vec::new();
        for (i, call) in trajectory.calls.iter().enumerate() {
            let think = o.scaled(call.think_ms.unwrap_or(o.think_ms));
            let set = |c| fake.set(c);
            let answered = step(&host, &set, (t, i), think, (&call.tool, call.args.clone()), &ctx).await?;
            failed += u64::from(answered.failed);
            let want = call.result.as_ref().map(|r| {
                let is_error = call.error_from.as_deref() == Some("isError");
                comparable(r, is_error)
            });
            t_seen.push(Some(Seen {
                waited: answered.waited,
                stale: want.is_some_and(|w| w != answered.got),
                diverged: false,
                why: answered.why,
                linked_from: answered.linked_from,
            }));
        }
        seen.push(t_seen);
        stats = finish(host, stats).await;
    }
    let requests: Vec<Logged> = fake
        .requests()
        .into_iter()
        .map(|r| {
            let call = trajectories
                .get(r.cursor.trajectory)
                .and_then(|tr| tr.calls.get(r.cursor.call));
            // Args a host coerced may differ from the recording: a write is
            // never prefetched, so any request for its tool is the real call.
            let real =
                call.is_some_and(|c| r.cursor.calling && r.tool == c.tool && (!c.read || r.key == c.key));
            Logged {
                cursor: r.cursor,
                real,
                tool: r.tool,
                args: r.key,
                at: r.at,
                unknown: r.unknown,
            }
        })
        .collect();
    let mut run = account(trajectories, &seen, &requests, stats);
    run.figures.failed = failed;
    Ok(run)
}

/// End a session's host: settled, then shut down (so that prefetches never
/// served count as wasted); the counters so far, with its own added.
pub async fn finish(host: Toolhost, earlier: Option<Snapshot>) -> Option<Snapshot> {
    host.settle().await;
    host.shutdown().await;
    host.stats().map(|now| summed(earlier.as_ref(), now))
}

fn pct(part: f64, whole: f64) -> f64 {
    if whole == 0.0 { 0.0 } else { part / whole * 100.0 }
}

/// Speculation off against on, for one server or all.
#[derive(Serialize)]
struct Pair {
    server: String,
    trajectories: usize,
    off: Figures,
    on: Figures,
    /// Of the reads fed a value only a result held (an id, a sha, a path
    /// the agent read in one of the calls before): the follow-ups value
    /// flow predicts, the share served.
    served_of_novel_reads_pct: f64,
    /// Of the reads any of whose argument values a result held, the
    /// owner and repository the task named included: the share served.
    served_of_predictable_reads_pct: f64,
    extra_backend_pct: f64,
    /// Calls served per prefetch made.
    precision: f64,
    /// Prefetches never served, as the host counted them.
    wasted: u64,
    wait_ratio: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    stats_on: Option<Snapshot>,
    /// What the host fetched ahead, speculation on.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    prefetched: Vec<Prefetched>,
    /// The predictable reads it did not serve, counted by why
    /// ([`why_missed`]), and each of them.
    missed_by_why: BTreeMap<&'static str, u64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    missed: Vec<Missed>,
    /// The calls left out, by recorded tool and why.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    not_covered: BTreeMap<String, u64>,
}

impl Pair {
    fn new(server: &str, trajectories: usize, off: Figures, on: Figures, stats_on: Option<Snapshot>) -> Self {
        Self {
            server: server.into(),
            trajectories,
            served_of_novel_reads_pct: pct(on.served_novel as f64, on.novel_reads as f64),
            served_of_predictable_reads_pct: pct(on.served_predictable as f64, on.predictable_reads as f64),
            extra_backend_pct: pct(
                on.backend_calls as f64 - off.backend_calls as f64,
                off.backend_calls as f64,
            ),
            precision: if on.prefetches == 0 {
                0.0
            } else {
                on.served as f64 / on.prefetches as f64
            },
            wait_ratio: if off.waited_ms == 0.0 {
                0.0
            } else {
                on.waited_ms / off.waited_ms
            },
            wasted: stats_on.as_ref().map_or(0, |s| s.wasted),
            off,
            on,
            stats_on,
            prefetched: Vec::new(),
            missed_by_why: BTreeMap::new(),
            missed: Vec::new(),
            not_covered: BTreeMap::new(),
        }
    }

    /// Its misses, with their count by why.
    fn with_missed(mut self, missed: Vec<Missed>) -> Self {
        self.missed_by_why = by_why(&missed);
        self.missed = missed;
        self
    }
}

fn by_why(missed: &[Missed]) -> BTreeMap<&'static str, u64> {
    let mut counts = BTreeMap::new();
    for m in missed {
        *counts.entry(m.why).or_default() += 1;
    }
    counts
}

/// Say, unless the output is JSON, which run starts.
pub fn announce(o: &Options, label: &str, trajectories: &[Trajectory], speculate: bool) {
    if !o.json {
        eprintln!(
            "replaying {} {label} trajectories ({} calls), speculation {}…",
            trajectories.len(),
            trajectories.iter().map(|t| t.calls.len()).sum::<usize>(),
            if speculate { "on" } else { "off" }
        );
    }
}

pub async fn run(o: &Options) -> Result<()> {
    let dir = o.dir.clone().unwrap_or_else(vendor_dir);
    let servers: &[&str] = match o.through {
        Through::Server => &SERVERS,
        Through::Provider => &["github"],
    };
    if let Some(s) = o.server.as_deref().filter(|s| !servers.contains(s)) {
        bail!("--through provider replays GitHub's trajectories, not {s}'s");
    }
    let mut pairs = Vec::new();
    let mut sessions = Vec::new();
    for &server in servers {
        if o.server.as_deref().is_some_and(|s| s != server) {
            continue;
        }
        let mut trajectories = Trajectory::load_runs(&dir, server, o.all_runs)?;
        if let Some(only) = &o.only {
            trajectories.retain(|t| t.id.contains(only.as_str()));
        }
        if trajectories.is_empty() {
            continue;
        }
        let (label, off, on) = match o.through {
            Through::Server => {
                let mut runs = Vec::new();
                for speculate in [false, true] {
                    announce(o, server, &trajectories, speculate);
                    runs.push(replay(server, &trajectories, speculate, o).await?);
                }
                let (on, off) = (runs.pop().unwrap_or_else(empty), runs.pop().unwrap_or_else(empty));
                (server.to_owned(), off, on)
            }
            Through::Provider => {
                let (off, on) = provider::replay(&trajectories, o).await?;
                (format!("{server}/provider"), off, on)
            }
        };
        for ((id, f_off), (_, f_on)) in off.trajectories.iter().zip(&on.trajectories) {
            sessions.push(json!({"trajectory": id, "off": f_off, "on": f_on}));
        }
        let mut pair =
            Pair::new(&label, trajectories.len(), off.figures, on.figures, on.stats).with_missed(on.missed);
        pair.prefetched = on.prefetched;
        pair.not_covered = on.not_covered;
        pairs.push(pair);
    }
    if pairs.is_empty() {
        bail!("no trajectory in {} matches", dir.display());
    }
    let (mut off, mut on) = (Figures::default(), Figures::default());
    for p in &pairs {
        off.add(&p.off);
        on.add(&p.on);
    }
    let count = pairs.iter().map(|p| p.trajectories).sum();
    let mut all = Pair::new("all", count, off, on, None);
    for p in &pairs {
        all.wasted += p.wasted;
        for (why, n) in &p.missed_by_why {
            *all.missed_by_why.entry(why).or_default() += n;
        }
    }
    if o.json {
        let out = json!({"servers": pairs, "all": all, "trajectories": sessions});
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        print(&pairs, &all);
    }
    Ok(())
}

fn empty() -> Run {
    Run {
        figures: Figures::default(),
        trajectories: Vec::new(),
        reached: Vec::new(),
        prefetched: Vec::new(),
        missed: Vec::new(),
        stats: None,
        not_covered: BTreeMap::new(),
    }
}

fn print(pairs: &[Pair], all: &Pair) {
    println!(
        "{:<15} {:<4} {:>5} {:>5} {:>8} {:>8} {:>14} {:>7} {:>6} {:>7} {:>6} {:>6} {:>9}",
        "server",
        "spec",
        "calls",
        "reads",
        "pred/rd",
        "novel/rd",
        "served p/n/all",
        "backend",
        "pref",
        "unknown",
        "stale",
        "failed",
        "wait (s)"
    );
    for p in pairs.iter().chain([all]) {
        for (mode, f) in [("off", &p.off), ("on", &p.on)] {
            println!(
                "{:<15} {:<4} {:>5} {:>5} {:>8} {:>8} {:>14} {:>7} {:>6} {:>7} {:>6} {:>6} {:>9.2}",
                p.server,
                mode,
                f.calls,
                f.reads,
                format!("{}/{}", f.predictable, f.predictable_reads),
                format!("{}/{}", f.novel, f.novel_reads),
                format!("{}/{}/{}", f.served_predictable, f.served_novel, f.served),
                f.backend_calls,
                f.prefetches,
                f.unknown,
                f.stale,
                f.failed,
                f.waited_ms / 1000.0
            );
        }
    }
    println!(
        "(pred: value-flow predictable calls / of them reads, novel: of them fed a value only a result \
         held (analyze.py); \
         served: calls whose real call never reached the server; pref: prefetches, requests less real calls; \
         unknown: requests no recorded call answers)"
    );
    println!();
    for p in pairs.iter().chain([all]) {
        println!(
            "{}: served {} of {} reads fed a value only a result held ({:.1} %), {} of {} reads with any \
             value a result held ({:.1} %), {} calls in all; {} prefetches ({} wasted), precision {:.2}; backend calls {} off, {} on ({:+.1} %); stale {} off, {} on; \
             wait {:.2} s off, {:.2} s on (ratio {:.3})",
            p.server,
            p.on.served_novel,
            p.on.novel_reads,
            p.served_of_novel_reads_pct,
            p.on.served_predictable,
            p.on.predictable_reads,
            p.served_of_predictable_reads_pct,
            p.on.served,
            p.on.prefetches,
            p.wasted,
            p.precision,
            p.off.backend_calls,
            p.on.backend_calls,
            p.extra_backend_pct,
            p.off.stale,
            p.on.stale,
            p.off.waited_ms / 1000.0,
            p.on.waited_ms / 1000.0,
            p.wait_ratio
        );
        let why: Vec<String> = p
            .missed_by_why
            .iter()
            .map(|(why, n)| format!("{why} {n}"))
            .collect();
        println!(
            "{}: predictable reads not served, by why: {}",
            p.server,
            if why.is_empty() {
                "none".to_owned()
            } else {
                why.join(", ")
            }
        );
    }
    for p in pairs.iter().filter(|p| !p.not_covered.is_empty()) {
        let tools: Vec<String> = p
            .not_covered
            .iter()
            .map(|(why, n)| format!("{why} ×{n}"))
            .collect();
        println!(
            "{}: {} calls not covered (left out of the figures above); {} answers diverged from the \
             recording (error against success) with speculation off; by tool and why: {}",
            p.server,
            p.on.not_covered,
            p.off.diverged,
            tools.join(", ")
        );
    }
    for p in pairs {
        if let Some(s) = &p.stats_on {
            println!(
                "\n{} host statistics, speculation on: {}",
                p.server,
                serde_json::to_string(s).unwrap_or_default()
            );
        }
    }
}
