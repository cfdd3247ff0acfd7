//! The fault-and-load bench: the full count of the fault-and-load run
//! (`toolhost_tests::load`): 10,000 `tools/call`s at concurrency 64 over
//! streamable HTTP, through eight enrichers, one plugin trapping on every
//! 10th call, the plugin directory replaced twice. Prints calls, answers,
//! errors, wrong answers, calls/s, p50/p99 latency and the host's peak RSS;
//! exits 1 if any call went unanswered or was answered wrong.
//!
//! `cargo run --release -p toolhost-bench --bin load -- --help`
//! (needs `make host plugins`).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::Parser;
use toolhost_tests::load::{LoadSpec, run};
use toolhost_tests::{guest, toolhost_binary};

#[derive(Parser)]
#[command(about = "Fault-and-load run of toolhost serve --http")]
struct Args {
    #[arg(long, default_value_t = 10_000)]
    calls: u64,
    #[arg(long, default_value_t = 64)]
    concurrency: usize,
    #[arg(long, default_value_t = 10)]
    trap_every: u64,
    /// MCP sessions the calls are spread over.
    #[arg(long, default_value_t = 4)]
    sessions: usize,
    /// The toolhost binary (default: this tree's target/release/toolhost).
    #[arg(long)]
    toolhost: Option<PathBuf>,
    /// Print the figures as JSON.
    #[arg(long)]
    json: bool,
}

#[tokio::main]
async fn main() -> Result<ExitCode> {
    let args = Args::parse();
    let toolhost = args.toolhost.unwrap_or_else(toolhost_binary);
    let spec = LoadSpec {
        calls: args.calls,
        concurrency: args.concurrency,
        trap_every: args.trap_every,
        sessions: args.sessions,
    };
    let report = run(&toolhost, &guest("fixture_trap_every"), &spec).await?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!(
            "calls {} at concurrency {} over {} sessions: {} ok, {} trapped (error naming the plugin), \
             {} wrong, {} unanswered",
            report.calls,
            report.concurrency,
            report.sessions,
            report.ok,
            report.trapped,
            report.wrong,
            report.unanswered
        );
        println!(
            "reloads: {} announced, {} logged, calls in flight at each: {:?}",
            report.reloads_announced, report.reloads_logged, report.in_flight_at_reload
        );
        println!(
            "{:.0} calls/s over {} ms; latency p50 {:.2} ms, p99 {:.2} ms; host peak RSS {} KiB",
            report.calls_per_s, report.wall_ms, report.p50_ms, report.p99_ms, report.peak_rss_kib
        );
        for example in &report.wrong_examples {
            println!("  {example}");
        }
    }
    Ok(match report.check() {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::FAILURE,
    })
}
