//! The cluster bench: the same agent sessions against one replica and
//! against three sharing a real `redis-server` (`make redis`), on
//! loopback, over an issue tracker that answers after `--delay-ms`.
//!
//! Each round lists the issues on one replica (its prefetches go to Redis),
//! reads every issue and its comments on the *other* replicas (with one
//! replica, on it), then writes one issue, which invalidates the tracker's
//! reads on every replica. Reported for each: calls/s (calls over the time
//! spent in calls, one at a time), p50 and p99 latency, and the hit rate
//! of the reads (answered without a tracker request); with three replicas
//! every read lands on a replica other than the one that prefetched it, so
//! that is the cross-replica hit rate. The figures are compared as ratios
//! to the one-replica run of the same invocation.

use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use clap::Parser;
use serde::Serialize;
use serde_json::json;
use toolhost_tests::cluster::{Client, Layout, Redis, Tracker, title};

#[derive(Parser)]
#[command(about = "One toolhost replica against three sharing Redis")]
struct Args {
    #[arg(long, default_value_t = 30)]
    rounds: usize,
    /// The tracker's latency, what a hit saves.
    #[arg(long, default_value_t = 20)]
    delay_ms: u64,
}

/// Issues listed each round: each prefetched with its comments.
const ISSUES: usize = 2;

#[derive(Debug, Serialize)]
struct Report {
    replicas: usize,
    calls: usize,
    calls_per_s: f64,
    p50_ms: f64,
    p99_ms: f64,
    reads: usize,
    reads_served: usize,
    hit_rate: f64,
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1000.0
}

async fn run(replicas: usize, args: &Args) -> Result<Report> {
    let tracker = Tracker::start(ISSUES, Duration::from_millis(args.delay_ms)).await;
    let redis = Redis::start()?;
    let layout = Layout::new(&tracker, Some(&redis)).await?;
    let servers = layout.replicas(replicas)?;
    let mut clients = Vec::new();
    for server in &servers {
        clients.push(Client::connect(server.addr).await?);
    }
    let mut latencies = Vec::new();
    let (mut reads, mut backend_reads) = (0usize, 0usize);
    let issue_reads = |t: &Tracker| -> usize {
        t.reads()
            .iter()
            .filter(|(path, _)| path.starts_with("/issues/"))
            .map(|(_, n)| n)
            .sum()
    };
    for round in 0..args.rounds {
        let lister = round % replicas;
        let others: Vec<usize> = (0..replicas).filter(|&r| r != lister || replicas == 1).collect();
        let sent = Instant::now();
        clients[lister].call("get_issues", json!({})).await?;
        latencies.push(sent.elapsed());
        redis.await_prefetches(2 * ISSUES).await;
        let before = issue_reads(&tracker);
        for i in 0..ISSUES {
            let key = format!("WEB-{}", i + 1);
            for (j, tool) in ["get_issue", "get_issue_comments"].into_iter().enumerate() {
                let client = &clients[others[(i * 2 + j) % others.len()]];
                let sent = Instant::now();
                let result = client.call(tool, json!({ "key": key })).await?;
                latencies.push(sent.elapsed());
                if result.is_error == Some(true) {
                    bail!("{tool} {key}: {}", title(&result));
                }
                reads += 1;
            }
        }
        backend_reads += issue_reads(&tracker) - before;
        let sent = Instant::now();
        clients[lister]
            .call(
                "update_issue",
                json!({"key": "WEB-1", "title": format!("round {round}")}),
            )
            .await?;
        latencies.push(sent.elapsed());
        // What the write made unreachable is let go now, so that the next
        // round waits for its own prefetches (not timed).
        for key in redis.cli(&["--scan", "--pattern", "toolhost:p:*"])?.lines() {
            redis.cli(&["DEL", key])?;
        }
    }
    let in_calls: Duration = latencies.iter().sum();
    latencies.sort();
    let served = reads.saturating_sub(backend_reads);
    Ok(Report {
        replicas,
        calls: latencies.len(),
        calls_per_s: latencies.len() as f64 / in_calls.as_secs_f64(),
        p50_ms: percentile(&latencies, 0.5),
        p99_ms: percentile(&latencies, 0.99),
        reads,
        reads_served: served,
        hit_rate: served as f64 / reads as f64,
    })
}

#[tokio::main]
async fn main() -> Result<()> {
    let args = Args::parse();
    let one = run(1, &args).await?;
    let three = run(3, &args).await?;
    println!(
        "{}",
        serde_json::to_string_pretty(&json!({"one": one, "three": three}))?
    );
    println!(
        "three replicas / one: calls/s x{:.2}, p50 x{:.2}, p99 x{:.2}; hit rate {:.0}% (one) vs {:.0}% cross-replica (three)",
        three.calls_per_s / one.calls_per_s,
        three.p50_ms / one.p50_ms,
        three.p99_ms / one.p99_ms,
        one.hit_rate * 100.0,
        three.hit_rate * 100.0
    );
    Ok(())
}
