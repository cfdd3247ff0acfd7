//! Replaying public agent trajectories through the host: the traces in
//! tests/replay/traces (converted by its convert.py from trajectories other
//! people published; SOURCES.md cites each), each run against a copy of its
//! task repository's tree (build/replay/trees, from `make replay-trees`)
//! behind the native tools with the modelled latency, with the agent's file
//! edits applied between calls behind the host's back, as its shell made
//! them.
//!
//! Every answer is compared with a direct execution of the same call on the
//! same files at that moment (a stale answer is one that differs), and each
//! read is classed as predictable when an earlier glob, grep or ls answer of
//! the session listed its file. This module owns the trace format and one
//! session's replay; summing runs and printing belong to the `replay` bench.

use std::collections::{BTreeMap, HashSet};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use toolhost::CallOutput;
use toolhost::WebSettings;
use toolhost::internals::{NativeTools, Root, Urgency};
use toolhost::speculation::{Settings, Snapshot};
use toolhost::{CallControl, Toolhost, error_text};

use crate::backend::{backdate, native_latency};

/// Where the committed traces are.
pub fn traces_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("replay/traces")
}

/// Where `make replay-trees` unpacks the task repositories.
pub fn trees_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../build/replay/trees")
}

/// Where a trajectory was published, by whom it was run.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Source {
    pub repository: String,
    pub path: String,
    pub commit: String,
    pub agent: String,
    pub model: String,
    pub task: String,
}

/// What the converter checked of the agent's observations against the tree.
#[derive(Debug, Clone, Deserialize)]
pub struct Verified {
    pub checked: u64,
    pub matched: u64,
}

/// One converted trajectory.
#[derive(Debug, Clone)]
pub struct Trace {
    pub id: String,
    pub source: Source,
    /// The directory below [`trees_dir`] holding the task repository.
    pub tree: String,
    pub verified: Verified,
    /// The agent's commands that were no file tool (running code, git), by program.
    pub skipped: BTreeMap<String, u64>,
    pub steps: Vec<Step>,
}

/// One step of the agent: a tool call, or a change its shell made to a file.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    Call {
        tool: String,
        args: Map<String, Value>,
    },
    /// Line hunks (first line, lines removed, new text), last first.
    Edit {
        path: String,
        hunks: Vec<(usize, usize, String)>,
    },
    Write {
        path: String,
        content: String,
    },
    Delete {
        path: String,
    },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TraceFile {
    id: String,
    source: Source,
    tree: String,
    verified: Verified,
    skipped: BTreeMap<String, u64>,
    steps: Vec<Map<String, Value>>,
}

/// The tools a trace may call: the native file tools that only read.
const TOOLS: [&str; 4] = ["read", "grep", "glob", "ls"];

impl Trace {
    /// Parse one trace file, naming the file and step of any fault.
    pub fn load(path: &Path) -> Result<Self> {
        let name = path.display();
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {name}"))?;
        let file: TraceFile = serde_json::from_str(&text).with_context(|| format!("{name}: not a trace"))?;
        let steps = file
            .steps
            .iter()
            .enumerate()
            .map(|(n, s)| step(s).with_context(|| format!("{name}: step {n}")))
            .collect::<Result<_>>()?;
        Ok(Self {
            id: file.id,
            source: file.source,
            tree: file.tree,
            verified: file.verified,
            skipped: file.skipped,
            steps,
        })
    }

    /// Every trace in `dir` (its `*.json` files), by name.
    pub fn load_all(dir: &Path) -> Result<Vec<Self>> {
        let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
            .with_context(|| format!("listing {}", dir.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect();
        paths.sort();
        paths.iter().map(|p| Self::load(p)).collect()
    }

    pub fn calls(&self) -> usize {
        self.steps
            .iter()
            .filter(|s| matches!(s, Step::Call { .. }))
            .count()
    }
}

fn step(s: &Map<String, Value>) -> Result<Step> {
    let text = |key: &str| -> Result<String> {
        s.get(key)
            .and_then(Value::as_str)
            .map(str::to_owned)
            .with_context(|| format!("`{key}` must be a string"))
    };
    let only = |keys: &[&str]| -> Result<()> {
        match s.keys().find(|k| !keys.contains(&k.as_str())) {
            Some(k) => bail!("unexpected key `{k}`"),
            None => Ok(()),
        }
    };
    if s.contains_key("tool") {
        only(&["tool", "args"])?;
        let tool = text("tool")?;
        if !TOOLS.contains(&tool.as_str()) {
            bail!("tool `{tool}` is not one of {TOOLS:?}");
        }
        let args = s
            .get("args")
            .and_then(Value::as_object)
            .cloned()
            .context("`args` must be an object")?;
        return Ok(Step::Call { tool, args });
    }
    if s.contains_key("edit") {
        only(&["edit", "hunks"])?;
        let hunks = serde_json::from_value(s.get("hunks").cloned().unwrap_or_default())
            .context("`hunks` must be [[first line, lines removed, text], ...]")?;
        return Ok(Step::Edit {
            path: text("edit")?,
            hunks,
        });
    }
    if s.contains_key("write") {
        only(&["write", "content"])?;
        return Ok(Step::Write {
            path: text("write")?,
            content: text("content")?,
        });
    }
    if s.contains_key("delete") {
        only(&["delete"])?;
        return Ok(Step::Delete {
            path: text("delete")?,
        });
    }
    bail!("neither a call (`tool`) nor an edit, write or delete")
}

/// How one session is replayed.
#[derive(Debug, Clone, Copy)]
pub struct Replay {
    pub speculate: bool,
    /// Multiplies every latency and think time.
    pub scale: f64,
    pub seed: u64,
    /// Make every read whole-file (drop its offset and limit): what a cache
    /// serving any slice of a file it holds could at best achieve.
    pub whole_reads: bool,
}

/// What one replayed session did and met.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Figures {
    pub calls: u64,
    pub reads: u64,
    /// Reads of a file an earlier glob, grep or ls answer listed.
    pub predictable: u64,
    /// Calls answered from a prefetch (cached or joined in flight).
    pub served: u64,
    pub served_reads: u64,
    pub served_predictable: u64,
    /// Calls answered from what an earlier real read left in the cache
    /// (not prefetched, so not counted in `served`).
    pub reused: u64,
    pub reused_predictable: u64,
    /// Tool executions that reached the backend, prefetches included.
    pub backend_calls: u64,
    /// Answers that differed from a direct execution at that moment.
    pub stale: u64,
    /// Time the agent waited on its calls, measured (CPU time of greps and
    /// walks included, so it varies with the machine's load).
    pub waited_ms: f64,
    /// The same by the latency model alone: a call that ran costs its
    /// modelled latency, one served from the cache nothing, one that joined
    /// a prefetch in flight what it waited (at most its latency).
    pub modelled_wait_ms: f64,
    pub edits: u64,
    /// The host's own counters at the end of the session.
    pub host: Option<Snapshot>,
}

/// A fresh copy of a trace's task tree, to replay the trace on once.
pub struct Workspace {
    dir: tempfile::TempDir,
}

impl Workspace {
    /// Copy the tree of `trace` below `trees` (so that no session pays for
    /// another's copying while it runs).
    pub fn new(trace: &Trace, trees: &Path) -> Result<Self> {
        let source = trees.join(&trace.tree);
        if !source.is_dir() {
            bail!(
                "{}: the tree {} is missing: run `make replay-trees` first",
                trace.id,
                source.display()
            );
        }
        let dir = tempfile::tempdir()?;
        copy_tree(&source, dir.path()).with_context(|| format!("copying {}", source.display()))?;
        Ok(Self { dir })
    }
}

/// Replay `trace` once in `work`, which it changes as the agent did.
pub async fn replay(trace: &Trace, work: Workspace, how: Replay) -> Result<Figures> {
    let work = work.dir;
    let backend_calls = Arc::new(AtomicU64::new(0));
    let (counter, scale) = (backend_calls.clone(), how.scale);
    let native = NativeTools::new(Root::new(work.path())?, WebSettings::default())?.with_latency(Arc::new(
        move |tool, args| {
            counter.fetch_add(1, Ordering::Relaxed);
            native_latency(tool, args, scale)
        },
    ));
    // The ground truth: the same tools on the same files, without delay.
    let direct = NativeTools::new(Root::new(work.path())?, WebSettings::default())?;
    let speculation = if how.speculate {
        Settings::default()
    } else {
        Settings::off()
    };
    let host = Toolhost::native(native, speculation)
        .await
        .context("building the host")?;
    let mut rng = fastrand::Rng::with_seed(how.seed);
    let mut figures = Figures::default();
    let mut listed: HashSet<String> = HashSet::new();
    let ctx = CallControl::new("trace-replay");
    for step in &trace.steps {
        let (tool, args) = match step {
            Step::Call { tool, args } => {
                let mut args = args.clone();
                if how.whole_reads && tool == "read" {
                    args.remove("offset");
                    args.remove("limit");
                }
                (tool, args)
            }
            edit => {
                apply(work.path(), edit).with_context(|| format!("{}: applying {edit:?}", trace.id))?;
                figures.edits += 1;
                continue;
            }
        };
        // The agent thinks between calls (the model's turn).
        let think = 300 + rng.u64(0..1200);
        tokio::time::sleep(Duration::from_secs_f64(think as f64 * how.scale / 1000.0)).await;
        let before = served(&host);
        let started = Instant::now();
        let answer = match host.call_tool(tool, Value::Object(args.clone()), &ctx).await {
            Ok(out) => out,
            Err(e) => CallOutput::error(error_text(&e)),
        };
        let waited = started.elapsed();
        figures.waited_ms += waited.as_secs_f64() * 1000.0;
        let after = served(&host);
        let (hit, joined, reused) = (after.0 > before.0, after.1 > before.1, after.2 > before.2);
        let was_served = hit || joined;
        let latency = native_latency(tool, &args, how.scale);
        figures.modelled_wait_ms += 1000.0
            * match (hit || reused, joined) {
                (true, _) => 0.0,
                (false, true) => waited.min(latency).as_secs_f64(),
                (false, false) => latency.as_secs_f64(),
            };
        let truth = match direct.execute(tool, &args, Urgency::Call).await {
            Ok(out) => out,
            Err(e) => CallOutput::error(error_text(&e)),
        };
        figures.calls += 1;
        figures.served += u64::from(was_served);
        figures.reused += u64::from(reused);
        if !same(&answer, &truth) {
            figures.stale += 1;
        }
        if tool == "read" {
            figures.reads += 1;
            figures.served_reads += u64::from(was_served);
            let path = args.get("path").and_then(Value::as_str).map(normal);
            if path.is_some_and(|p| listed.contains(&p)) {
                figures.predictable += 1;
                figures.served_predictable += u64::from(was_served);
                figures.reused_predictable += u64::from(reused);
            }
        }
        if let Some(found) = &truth.structured_content {
            listed.extend(listing(tool, found));
        }
    }
    host.settle().await;
    // After shutdown, so that prefetches never served count as wasted.
    host.shutdown().await;
    figures.host = host.stats();
    figures.backend_calls = backend_calls.load(Ordering::Relaxed);
    Ok(figures)
}

/// Real calls answered so far from a prefetch cached, by joining one in
/// flight, and from what an earlier real read cached.
fn served(host: &Toolhost) -> (u64, u64, u64) {
    host.stats().map_or((0, 0, 0), |s| (s.hits, s.joins, s.reused))
}

/// Whether the host's answer is what a direct execution answers.
fn same(answer: &CallOutput, truth: &CallOutput) -> bool {
    answer.is_error == truth.is_error
        && if truth.is_error {
            answer.text() == truth.text()
        } else {
            answer.structured_content == truth.structured_content
        }
}

/// The files an answer lists (root-relative, normalised).
fn listing(tool: &str, found: &Value) -> Vec<String> {
    let strings = |v: &Value, key: &str| -> Vec<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .filter_map(|i| i[key].as_str().map(normal))
            .collect()
    };
    match tool {
        "glob" => found["paths"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p.as_str().map(normal))
            .collect(),
        "grep" => strings(&found["matches"], "path"),
        "ls" => {
            let dir = found["path"].as_str().unwrap_or_default();
            found["entries"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|e| e["type"] == "file")
                .filter_map(|e| e["name"].as_str().map(|n| normal(&format!("{dir}/{n}"))))
                .collect()
        }
        _ => Vec::new(),
    }
}

/// A path as the same file however it is spelt (`./a/../b` is `b`).
fn normal(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for c in Path::new(path).components() {
        match c {
            Component::Normal(p) => parts.push(p.to_str().unwrap_or_default()),
            Component::ParentDir => {
                parts.pop();
            }
            _ => {}
        }
    }
    parts.join("/")
}

/// Make one change of the agent's shell to the files, unseen by the host.
fn apply(root: &Path, edit: &Step) -> Result<()> {
    match edit {
        Step::Write { path, content } => {
            let file = root.join(path);
            if let Some(dir) = file.parent() {
                std::fs::create_dir_all(dir)?;
            }
            std::fs::write(file, content)?;
        }
        Step::Delete { path } => std::fs::remove_file(root.join(path))?,
        Step::Edit { path, hunks } => {
            let file = root.join(path);
            let text = std::fs::read_to_string(&file)?;
            let mut lines: Vec<String> = text.split_inclusive('\n').map(str::to_owned).collect();
            for (first, removed, new) in hunks {
                let start = first.saturating_sub(1);
                if start + removed > lines.len() {
                    bail!(
                        "hunk at line {first} removing {removed} is past the end ({} lines)",
                        lines.len()
                    );
                }
                lines.splice(
                    start..start + removed,
                    new.split_inclusive('\n').map(str::to_owned),
                );
            }
            std::fs::write(file, lines.concat())?;
        }
        Step::Call { tool, .. } => bail!("a call of {tool} is no edit"),
    }
    Ok(())
}

/// Copy the tree's directories and regular files, dated an hour back.
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            std::fs::create_dir(&target)?;
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target)?;
            backdate(&target)?;
        }
    }
    Ok(())
}
