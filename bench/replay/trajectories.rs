//! `replay --traces`: the public agent trajectories of tests/replay/traces
//! replayed with speculation off and then on (every session of a mode at
//! once, each on its own copy of its tree and its own host), and the issue's
//! figures: predictable reads served from prefetch, wasted prefetches, extra
//! backend calls, stale answers and tool wait.
//!
//! Each trace runs on the PyPI release of its task's package nearest to the
//! task's commit, not on the commit itself (no repository host is reachable
//! here): tests/replay/traces/SOURCES.md says which release, how the agent's
//! observations were checked against it, and where they differ.
//!
//! Tool wait is given twice: measured, and by the latency model alone (a
//! call that ran costs its modelled latency, a cache hit nothing, a join
//! what it waited), which the machine's load does not move.
//!
//! Reads answered from a file an earlier real read left in the cache are
//! reported apart from those served from prefetch, which they never count
//! in.
//!
//! Wasted prefetches are counted from the backend, not from the host's own
//! counters: a run that served no real call is wasted whether it expired,
//! was evicted or was still cached when the session ended. With speculation
//! on, the real calls that reached the backend are those of the run with it
//! off less those served (from prefetch or a cached real read), so every
//! other execution was a prefetch.

use std::path::PathBuf;

use anyhow::{Result, bail};
use serde::Serialize;
use toolhost_tests::traces::{Figures, Replay, Trace, Workspace, replay, traces_dir, trees_dir};

pub struct Options {
    pub only: Option<String>,
    pub trees: Option<PathBuf>,
    pub scale: f64,
    pub seed: u64,
    pub whole_reads: bool,
    pub json: bool,
}

#[derive(Serialize)]
struct Session {
    trace: String,
    agent: String,
    model: String,
    off: Figures,
    on: Figures,
}

#[derive(Serialize, Default)]
struct Totals {
    sessions: usize,
    calls: u64,
    reads: u64,
    predictable_reads: u64,
    predictable_served: u64,
    predictable_served_pct: f64,
    reads_served: u64,
    predictable_reused: u64,
    predictable_reused_pct: f64,
    reads_reused: u64,
    backend_off: u64,
    backend_on: u64,
    extra_backend_pct: f64,
    prefetch_runs: u64,
    prefetches_wasted: u64,
    host_dispatched: u64,
    host_wasted: u64,
    stale: u64,
    wait_off_s: f64,
    wait_on_s: f64,
    wait_change_pct: f64,
    modelled_wait_off_s: f64,
    modelled_wait_on_s: f64,
    modelled_wait_change_pct: f64,
}

fn pct(part: f64, whole: f64) -> f64 {
    if whole == 0.0 { 0.0 } else { part / whole * 100.0 }
}

/// Prefetch runs of the session with speculation on, and how many served
/// no real call.
fn prefetches(off: &Figures, on: &Figures) -> (u64, u64) {
    let real = off.backend_calls.saturating_sub(on.served + on.reused);
    let runs = on.backend_calls.saturating_sub(real);
    (runs, runs.saturating_sub(on.served))
}

pub async fn run(options: &Options) -> Result<()> {
    let mut traces = Trace::load_all(&traces_dir())?;
    if let Some(only) = &options.only {
        traces.retain(|t| t.id.contains(only.as_str()));
    }
    if traces.is_empty() {
        bail!("no trace in {} matches", traces_dir().display());
    }
    let trees = options.trees.clone().unwrap_or_else(trees_dir);
    let mut runs = Vec::new();
    for speculate in [false, true] {
        if !options.json {
            eprintln!(
                "replaying {} traces ({} calls), speculation {}…",
                traces.len(),
                traces.iter().map(Trace::calls).sum::<usize>(),
                if speculate { "on" } else { "off" }
            );
        }
        let how = |n: usize| Replay {
            speculate,
            scale: options.scale,
            seed: options.seed.wrapping_add(n as u64),
            whole_reads: options.whole_reads,
        };
        let mut sessions = Vec::new();
        for (n, t) in traces.iter().enumerate() {
            let work = Workspace::new(t, &trees)?;
            sessions.push(replay(t, work, how(n)));
        }
        runs.push(futures::future::try_join_all(sessions).await?);
    }
    let on = runs.pop().unwrap_or_default();
    let off = runs.pop().unwrap_or_default();
    let sessions: Vec<Session> = traces
        .iter()
        .zip(off)
        .zip(on)
        .map(|((t, off), on)| Session {
            trace: t.id.clone(),
            agent: t.source.agent.clone(),
            model: t.source.model.clone(),
            off,
            on,
        })
        .collect();
    let totals = totals(&sessions);
    if options.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({"sessions": sessions, "totals": totals}))?
        );
    } else {
        print(&sessions, &totals);
    }
    Ok(())
}

fn totals(sessions: &[Session]) -> Totals {
    let mut t = Totals {
        sessions: sessions.len(),
        ..Totals::default()
    };
    for s in sessions {
        let (runs, wasted) = prefetches(&s.off, &s.on);
        t.calls += s.on.calls;
        t.reads += s.on.reads;
        t.predictable_reads += s.on.predictable;
        t.predictable_served += s.on.served_predictable;
        t.reads_served += s.on.served_reads;
        t.predictable_reused += s.on.reused_predictable;
        t.reads_reused += s.on.reused;
        t.backend_off += s.off.backend_calls;
        t.backend_on += s.on.backend_calls;
        t.prefetch_runs += runs;
        t.prefetches_wasted += wasted;
        if let Some(h) = &s.on.host {
            t.host_dispatched += h.dispatched;
            t.host_wasted += h.wasted;
        }
        t.stale += s.off.stale + s.on.stale;
        t.wait_off_s += s.off.waited_ms / 1000.0;
        t.wait_on_s += s.on.waited_ms / 1000.0;
        t.modelled_wait_off_s += s.off.modelled_wait_ms / 1000.0;
        t.modelled_wait_on_s += s.on.modelled_wait_ms / 1000.0;
    }
    t.predictable_served_pct = pct(t.predictable_served as f64, t.predictable_reads as f64);
    t.predictable_reused_pct = pct(t.predictable_reused as f64, t.predictable_reads as f64);
    t.extra_backend_pct = pct(t.backend_on as f64 - t.backend_off as f64, t.backend_off as f64);
    t.wait_change_pct = pct(t.wait_on_s - t.wait_off_s, t.wait_off_s);
    t.modelled_wait_change_pct = pct(
        t.modelled_wait_on_s - t.modelled_wait_off_s,
        t.modelled_wait_off_s,
    );
    t
}

fn print(sessions: &[Session], t: &Totals) {
    println!(
        "{:<26} {:<18} {:>5} {:>5} {:>5} {:>7} {:>6} {:>7} {:>7} {:>6} {:>6} {:>8} {:>8}",
        "trace",
        "model",
        "calls",
        "reads",
        "pred",
        "served",
        "reused",
        "backend",
        "+calls",
        "wasted",
        "stale",
        "wait off",
        "wait on"
    );
    for s in sessions {
        let (_, wasted) = prefetches(&s.off, &s.on);
        println!(
            "{:<26} {:<18} {:>5} {:>5} {:>5} {:>7} {:>6} {:>7} {:>6.1}% {:>6} {:>6} {:>7.2}s {:>7.2}s",
            s.trace,
            s.model.rsplit('/').next().unwrap_or_default(),
            s.on.calls,
            s.on.reads,
            s.on.predictable,
            format!("{}/{}", s.on.served_predictable, s.on.served),
            format!("{}/{}", s.on.reused_predictable, s.on.reused),
            s.on.backend_calls,
            pct(
                s.on.backend_calls as f64 - s.off.backend_calls as f64,
                s.off.backend_calls as f64
            ),
            wasted,
            s.off.stale + s.on.stale,
            s.off.modelled_wait_ms / 1000.0,
            s.on.modelled_wait_ms / 1000.0,
        );
    }
    println!(
        "(served: predictable reads served / all calls served from prefetch; reused: the same from a \
         cached real read; wait: by the latency model)"
    );
    println!();
    println!(
        "{} sessions, {} calls, {} reads, {} predictable (an earlier glob, grep or ls listed the file)",
        t.sessions, t.calls, t.reads, t.predictable_reads
    );
    println!(
        "predictable reads served from prefetch: {} of {} ({:.1} %; target >= 60 %); all reads served: {} of {}",
        t.predictable_served, t.predictable_reads, t.predictable_served_pct, t.reads_served, t.reads
    );
    println!(
        "served from a cached real read instead (not prefetch): {} predictable ({:.1} %), {} of all reads",
        t.predictable_reused, t.predictable_reused_pct, t.reads_reused
    );
    println!(
        "backend calls: {} off, {} on ({:+.1} %; target <= +25 %)",
        t.backend_off, t.backend_on, t.extra_backend_pct
    );
    println!(
        "prefetches: {} run, {} wasted (served no call); the host counted {} dispatched, {} wasted",
        t.prefetch_runs, t.prefetches_wasted, t.host_dispatched, t.host_wasted
    );
    println!("stale answers: {} (target 0)", t.stale);
    println!(
        "tool wait by the latency model: {:.2} s off, {:.2} s on ({:+.1} %)",
        t.modelled_wait_off_s, t.modelled_wait_on_s, t.modelled_wait_change_pct
    );
    println!(
        "tool wait measured (with the greps' CPU time, so the machine's load): {:.2} s off, {:.2} s on ({:+.1} %)",
        t.wait_off_s, t.wait_on_s, t.wait_change_pct
    );
}
