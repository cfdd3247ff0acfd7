//! The speculation replay bench: agent sessions generated with a fixed seed
//! from the value models' transition probabilities, run against backends with
//! realistic latency (native tools with injected delay, an issue tracker and
//! knowledge base on loopback HTTP through a WASM tool plugin), once with
//! speculation off and once on, on identical fresh backends. It reports the
//! time agents waited on tools, how many calls reached a backend, what
//! speculation served, and how many results were stale (must be none).
//!
//! With `--traces`, it replays public agent trajectories instead (see
//! `trajectories` and tests/replay/traces/SOURCES.md). With `--vendor`,
//! real agent trajectories against GitHub's and Notion's MCP servers,
//! through a host whose upstream is a fake of each (see `vendor` and
//! tests/replay/vendor/SOURCES.md); with `--vendor --through provider`,
//! the GitHub ones through toolhost's GitHub provider plugin against a fake
//! of GitHub's REST API instead (`vendor::provider`).
//!
//! `cargo run --release -p toolhost-bench --bin replay -- --help`

mod agent;
mod trajectories;
mod vendor;
mod world;

use std::path::PathBuf;

use std::time::Instant;

use anyhow::Result;
use clap::Parser;
use serde::Serialize;
use toolhost::speculation::Snapshot;

use agent::{Agent, CHAIN_HEAVY, CORPUS, Mix, Tally};
use world::World;

#[derive(Parser)]
#[command(about = "Replay agent sessions with speculation off and on")]
#[command(group(clap::ArgGroup::new("replays").args(["traces", "vendor"])))]
struct Args {
    /// Concurrent agent sessions per run.
    #[arg(long, default_value_t = 8)]
    sessions: usize,
    /// Tool calls per session.
    #[arg(long, default_value_t = 40)]
    calls: usize,
    #[arg(long, default_value_t = 7)]
    seed: u64,
    /// Multiplies every latency and think time (0.1 runs ten times faster).
    #[arg(long, default_value_t = 1.0)]
    scale: f64,
    /// Print the figures as JSON.
    #[arg(long)]
    json: bool,
    /// Replay the public agent trajectories of tests/replay/traces instead
    /// of generated sessions (`make replay-trees` fetches their trees).
    #[arg(long)]
    traces: bool,
    /// Replay the vendor agent trajectories of tests/replay/vendor (GitHub,
    /// Notion) through a host over a fake of each server.
    #[arg(long)]
    vendor: bool,
    /// With --traces or --vendor: only the traces whose name contains this.
    #[arg(long, requires = "replays")]
    only: Option<String>,
    /// With --vendor: what the calls go through to the vendor: its MCP
    /// server (a fake of it, as the host's upstream), or toolhost's GitHub
    /// provider plugin against a fake of GitHub's REST API (GitHub's
    /// trajectories only; calls it has no tool for are counted as not
    /// covered).
    #[arg(long, requires = "vendor", value_enum, default_value_t = vendor::Through::Server)]
    through: vendor::Through,
    /// With --vendor: only this server's trajectories.
    #[arg(long, requires = "vendor", value_parser = vendor::SERVERS)]
    server: Option<String>,
    /// With --vendor: where github.jsonl and notion.jsonl are (default
    /// tests/replay/vendor; convert.py --all writes the full set elsewhere).
    #[arg(long, requires = "vendor")]
    vendor_dir: Option<PathBuf>,
    /// With --vendor: MCPMark's runs 2–4 too (153 trajectories more, after
    /// run 1's 51; tests/replay/vendor/runs-2-4).
    #[arg(long, requires = "vendor")]
    all_runs: bool,
    /// With --vendor: the fake server's latency per call, in ms (scaled).
    #[arg(long, requires = "vendor", default_value_t = 300)]
    vendor_latency_ms: u64,
    /// With --vendor: think time before each call whose trace records none
    /// (none of the committed traces does), in ms (scaled).
    #[arg(long, requires = "vendor", default_value_t = 1000)]
    vendor_think_ms: u64,
    /// With --traces: where the task trees are (default build/replay/trees).
    #[arg(long, requires = "traces")]
    trees: Option<PathBuf>,
    /// With --traces: make every read whole-file, the most a cache serving
    /// slices of the files it holds could be offered.
    #[arg(long, requires = "traces")]
    whole_reads: bool,
}

#[derive(Serialize)]
struct Run {
    mix: &'static str,
    speculation: bool,
    calls: u64,
    waited_ms: u64,
    backend_calls: u64,
    stale: u64,
    wall_ms: u64,
    stats: Option<Snapshot>,
}

/// Each session is one agent with its own host (as over MCP stdio); the
/// backends are shared.
async fn run(args: &Args, mix: Mix, speculate: bool) -> Result<Run> {
    let world = World::new(args.sessions, args.scale).await?;
    let mut hosts = Vec::new();
    for _ in 0..args.sessions {
        hosts.push(world.host(speculate).await?);
    }
    let before = world.backend_calls();
    let started = Instant::now();
    let sessions = hosts.iter().enumerate().map(|(session, host)| {
        let agent = Agent {
            host,
            world: &world,
            session,
            mix,
            rng: fastrand::Rng::with_seed(args.seed.wrapping_mul(1000).wrapping_add(session as u64)),
            scale: args.scale,
            tally: Tally::default(),
        };
        agent.run(args.calls)
    });
    let mut total = Tally::default();
    for tally in futures::future::join_all(sessions).await {
        total.add(tally?);
    }
    let wall = started.elapsed();
    let mut stats: Option<Snapshot> = None;
    for host in &hosts {
        host.settle().await;
        // After shutdown, so that prefetches never served count as wasted.
        host.shutdown().await;
        if let Some(s) = host.stats() {
            let total = stats.get_or_insert_with(Snapshot::default);
            total.dispatched += s.dispatched;
            total.hits += s.hits;
            total.joins += s.joins;
            total.reused += s.reused;
            total.wasted += s.wasted;
            total.stale += s.stale;
            total.saved_ms += s.saved_ms;
            for (reason, n) in s.declined {
                *total.declined.entry(reason).or_default() += n;
            }
        }
    }
    Ok(Run {
        mix: mix.name,
        speculation: speculate,
        calls: total.calls,
        waited_ms: total.waited.as_millis() as u64,
        backend_calls: world.backend_calls() - before,
        stale: total.stale,
        wall_ms: wall.as_millis() as u64,
        stats,
    })
}

fn pct(new: u64, old: u64) -> f64 {
    if old == 0 {
        0.0
    } else {
        (new as f64 - old as f64) / old as f64 * 100.0
    }
}

fn print(runs: &[Run]) {
    println!(
        "{:<12} {:<4} {:>6} {:>11} {:>9} {:>8} {:>6} {:>6} {:>6} {:>7} {:>6}",
        "mix",
        "spec",
        "calls",
        "waited (s)",
        "ms/call",
        "backend",
        "hits",
        "joins",
        "reused",
        "wasted",
        "stale"
    );
    for r in runs {
        let s = r.stats.clone().unwrap_or_default();
        println!(
            "{:<12} {:<4} {:>6} {:>11.1} {:>9.1} {:>8} {:>6} {:>6} {:>6} {:>7} {:>6}",
            r.mix,
            if r.speculation { "on" } else { "off" },
            r.calls,
            r.waited_ms as f64 / 1000.0,
            r.waited_ms as f64 / r.calls.max(1) as f64,
            r.backend_calls,
            s.hits,
            s.joins,
            s.reused,
            s.wasted,
            r.stale
        );
    }
    println!();
    for pair in runs.chunks(2) {
        let [off, on] = pair else { continue };
        let served = on.stats.as_ref().map_or(0, |s| s.hits + s.joins);
        let reused = on.stats.as_ref().map_or(0, |s| s.reused);
        println!(
            "{}: waiting {:+.1}%, backend calls {:+.1}%, {} of {} calls served by speculation \
             ({} more from cached real reads), stale results {}",
            on.mix,
            pct(on.waited_ms, off.waited_ms),
            pct(on.backend_calls, off.backend_calls),
            served,
            on.calls,
            reused,
            off.stale + on.stale
        );
    }
}

fn vendor_options(args: &Args) -> vendor::Options {
    vendor::Options {
        through: args.through,
        only: args.only.clone(),
        server: args.server.clone(),
        dir: args.vendor_dir.clone(),
        all_runs: args.all_runs,
        scale: args.scale,
        latency_ms: args.vendor_latency_ms,
        think_ms: args.vendor_think_ms,
        json: args.json,
    }
}

#[tokio::main]
async fn main() -> Result<()> {
    let args = Args::parse();
    if args.vendor {
        return vendor::run(&vendor_options(&args)).await;
    }
    if args.traces {
        return trajectories::run(&trajectories::Options {
            only: args.only,
            trees: args.trees,
            scale: args.scale,
            seed: args.seed,
            whole_reads: args.whole_reads,
            json: args.json,
        })
        .await;
    }
    let mut runs = Vec::new();
    for mix in [CORPUS, CHAIN_HEAVY] {
        for speculate in [false, true] {
            if !args.json {
                eprintln!(
                    "replaying {} sessions × {} calls, {} mix, speculation {}…",
                    args.sessions,
                    args.calls,
                    mix.name,
                    if speculate { "on" } else { "off" }
                );
            }
            runs.push(run(&args, mix, speculate).await?);
        }
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&runs)?);
    } else {
        print(&runs);
    }
    Ok(())
}

/// The bench runs: a change that breaks it fails `cargo test` (the figures
/// themselves are `make bench`'s, measured at full scale).
#[cfg(test)]
mod smoke {
    use super::*;

    #[tokio::test(flavor = "multi_thread")]
    async fn the_replay_bench_runs_and_no_result_is_ever_stale() {
        let args = Args::parse_from(["replay", "--sessions", "2", "--calls", "16", "--scale", "0.05"]);
        for mix in [CORPUS, CHAIN_HEAVY] {
            for speculate in [false, true] {
                let run = run(&args, mix, speculate).await.unwrap();
                let stats = run.stats.clone().unwrap_or_default();
                assert_eq!(run.stale, 0, "{}", mix.name);
                assert!(run.calls >= 30, "{}: {} calls", mix.name, run.calls);
                assert_eq!(speculate, stats.hits + stats.joins > 0, "{}: {stats:?}", mix.name);
            }
        }
    }

    /// One short GitHub and one short Notion trajectory (each with writes
    /// and reads after them): with speculation off every real call reaches
    /// the fake exactly once and nothing else does, and no answer is stale
    /// whether speculation is off or on.
    #[tokio::test(flavor = "multi_thread")]
    async fn the_vendor_replay_runs_and_no_answer_is_ever_stale() {
        for (server, only) in [
            ("github", "easyr1__qwen3_issue_management"),
            ("notion", "toronto_guide__weekend_adventure_planner"),
        ] {
            let args = Args::parse_from(["replay", "--vendor", "--scale", "0.01", "--only", only]);
            let options = vendor_options(&args);
            let mut trajectories = vendor::Trajectory::load(&vendor::vendor_dir(), server).unwrap();
            trajectories.retain(|t| t.id.contains(only));
            assert_eq!(trajectories.len(), 1, "{only}");
            let calls = trajectories[0].calls.len() as u64;
            let off = vendor::replay(server, &trajectories, false, &options)
                .await
                .unwrap();
            assert_eq!(off.figures.stale, 0, "{server}: {:?}", off.figures);
            assert_eq!(off.figures.failed, 0, "{server}: {:?}", off.figures);
            assert!(
                off.reached.iter().flatten().all(|n| *n == 1),
                "{server}: {:?}",
                off.reached
            );
            assert_eq!(off.figures.backend_calls, calls, "{server}: {:?}", off.figures);
            assert!(off.figures.predictable > 0, "{server}: {:?}", off.figures);
            let on = vendor::replay(server, &trajectories, true, &options)
                .await
                .unwrap();
            assert_eq!(on.figures.stale, 0, "{server}: {:?}", on.figures);
            assert_eq!(on.figures.calls, calls, "{server}");
            // Every miss has the host's word on why, or is a tool the
            // host never looks up.
            assert!(on.missed.iter().all(|m| m.why != "other"), "{server}");
        }
    }

    /// Runs 2–4, committed compressed, load after run 1: every task of
    /// MCPMark's standard sets four times.
    #[test]
    fn the_vendor_traces_of_all_four_runs_load() {
        for (server, tasks) in [("github", 23), ("notion", 28)] {
            let all = vendor::Trajectory::load_runs(&vendor::vendor_dir(), server, true).unwrap();
            assert_eq!(all.len(), 4 * tasks, "{server}");
            assert!(all[..tasks].iter().all(|t| t.id.contains("/run-1/")), "{server}");
            assert!(all[tasks..].iter().all(|t| !t.id.contains("/run-1/")), "{server}");
        }
    }

    /// Two GitHub trajectories through the GitHub provider against the
    /// fake REST API: one of commit reads (list → commit), one of writes
    /// with a read after them and writes the provider has no tool for
    /// (passed to the server's fake). With speculation off every covered
    /// call reaches the fake API, some calls are covered and the others
    /// counted, and no answer is stale whether speculation is off or on.
    #[tokio::test(flavor = "multi_thread")]
    async fn the_provider_replay_runs_and_no_answer_is_ever_stale() {
        let args = Args::parse_from(["replay", "--vendor", "--through", "provider", "--scale", "0.01"]);
        let options = vendor_options(&args);
        let mut trajectories = vendor::Trajectory::load(&vendor::vendor_dir(), "github").unwrap();
        trajectories.retain(|t| {
            [
                "claude-code__feature_commit_tracking",
                "claude-code__critical_issue_hotfix_workflow",
            ]
            .iter()
            .any(|only| t.id.contains(only))
        });
        assert_eq!(trajectories.len(), 2);
        let calls: usize = trajectories.iter().map(|t| t.calls.len()).sum();
        let (off, on) = vendor::provider::replay(&trajectories, &options).await.unwrap();
        let f = &off.figures;
        assert!(f.calls > 0 && f.not_covered > 0, "{f:?}");
        assert_eq!(f.calls + f.not_covered, calls as u64, "{f:?}");
        assert_eq!((f.stale, f.failed, f.prefetches, f.served), (0, 0, 0, 0), "{f:?}");
        assert!(f.backend_calls >= f.calls, "{f:?}");
        assert!(f.predictable > 0, "{f:?}");
        assert_eq!(on.not_covered.values().sum::<u64>(), f.not_covered);
        assert_eq!(on.figures.stale, 0, "{:?}", on.figures);
        assert_eq!(on.figures.calls, f.calls);
    }
}
