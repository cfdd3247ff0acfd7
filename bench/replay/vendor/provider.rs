//! `replay --vendor --through provider`: the GitHub trajectories replayed
//! through toolhost's GitHub provider plugin (guest-plugins/github, its
//! catalog tools) against a loopback fake of GitHub's REST API (`rest`)
//! that answers with the recorded data, with speculation off and then on;
//! the same figures as through the server, over the calls the provider
//! covers (`mapping`).
//!
//! Each trajectory runs in a host of its own, resumed from the one before
//! it (as through the server), that loads `github.wasm` configured for the
//! trajectory's repository with its API pointed at the fake as the
//! provider tests point it (tests/mcp/vendors/fake.py): `base_url` and the
//! `http` grant name the fake's loopback origin. No token is granted: the
//! fake checks none. Speculation may reach that host (`127.0.0.1`).
//!
//! The calls the provider does not cover are still made, in their place,
//! through the same host to the fake of GitHub's MCP server (`fake`) as an
//! upstream whose tools are served as `mcp_TOOL` and never prefetched: the
//! agent's session stays whole, and the host sees every write, so a file
//! pushed or a pull request merged drops what it cached (an upstream tool
//! that writes and names nothing it `invalidates` drops everything). They
//! are counted as not covered, by tool and why, and left out of the other
//! figures. Both fakes cut the world's state into the same epochs. Every
//! request to either takes the vendor latency: a provider call that needs
//! two requests (a pull request's labels, then the pull request) waits
//! twice, as it would on GitHub.
//!
//! A call was served when no request for it reached the fake API while the
//! agent waited on it: for a read, a GET of its route; for a write, any
//! request to a path it writes. An answer is stale when it differs (as
//! compared by `vendor::comparable`) from the answer the same call got with
//! speculation off, where every call reached the fake in the state of its
//! moment: so with speculation off none is, by definition, and how close
//! that truth is to the recording is `diverged` (an error where the
//! recording had none, or the reverse).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result, ensure};
use serde_json::{Value, json};
use toolhost::speculation::{Settings, Snapshot};
use toolhost::{CallControl, Runtime, Toolhost, UpstreamConfig};
use toolhost_tests::{plugin_dir, runtime};

use super::fake::{Cursor, Fake};
use super::mapping::{Mapped, map, repository};
use super::rest::Rest;
use super::{Logged, Options, Run, Seen, Trajectory, account, announce, finish, step};

/// The name the upstream's tools are served under: `mcp_` + theirs.
const UPSTREAM_PREFIX: &str = "mcp_";

/// Each trajectory's repository and its calls as the provider makes them.
struct Plan {
    repo: String,
    calls: Vec<Mapped>,
}

/// Replay `trajectories` (GitHub's) with speculation off, then on: their
/// runs.
pub async fn replay(trajectories: &[Trajectory], o: &Options) -> Result<(Run, Run)> {
    let plans: Vec<Plan> = trajectories
        .iter()
        .map(|t| {
            let repo = t
                .calls
                .iter()
                .find_map(|c| repository(&c.args))
                .unwrap_or_default();
            let calls = t.calls.iter().map(|c| map(&repo, c)).collect();
            Plan { repo, calls }
        })
        .collect();
    announce(o, "github/provider", trajectories, false);
    let (off, truth) = run(trajectories, &plans, false, None, o).await?;
    announce(o, "github/provider", trajectories, true);
    let (on, _) = run(trajectories, &plans, true, Some(&truth), o).await?;
    Ok((off, on))
}

/// The provider's manifest for `repo` with its API at `origin`.
fn manifest(repo: &str, origin: &str) -> Result<String> {
    let (owner, name) = repo.split_once('/').context("a trajectory names no repository")?;
    Ok(format!(
        "[config]\nowner = {owner:?}\nrepo = {name:?}\nbase_url = {origin:?}\n[grants]\nhttp = [{origin:?}]\n"
    ))
}

/// A host with the provider of `plugins` and the server's fake at `mcp`.
async fn host(rt: &Runtime, plugins: &Path, mcp: &str, speculate: bool) -> Result<Toolhost> {
    let upstream: UpstreamConfig = serde_json::from_value(json!({
        "name": "github-mcp",
        "url": mcp,
        "prefix": UPSTREAM_PREFIX,
        "speculate": false,
        "trust_annotations": true,
    }))
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    let speculation = if speculate {
        Settings {
            hosts: vec!["127.0.0.1".into()],
            ..Settings::default()
        }
    } else {
        Settings::off()
    };
    let (host, report) = Toolhost::builder()
        .plugins(rt, plugins)
        .trust_unchecked_plugins()
        .upstream(upstream)
        .speculation(speculation)
        .build()
        .await?;
    ensure!(report.is_empty(), "github provider: {:?}", report.lines());
    Ok(host)
}

/// Per trajectory and call, a covered call's answer (as compared).
type Answers = Vec<Vec<Option<Value>>>;

/// One run: its figures and the answers it got.
async fn run(
    trajectories: &[Trajectory],
    plans: &[Plan],
    speculate: bool,
    truth: Option<&Answers>,
    o: &Options,
) -> Result<(Run, Answers)> {
    let latency = o.scaled(o.latency_ms);
    let mapped: Vec<Vec<Mapped>> = plans.iter().map(|p| p.calls.clone()).collect();
    let rest = Arc::new(Rest::new(trajectories, &mapped, latency));
    let origin = rest.serve().await?;
    let server = Arc::new(Fake::new(trajectories, latency)?);
    let mcp = server.serve().await?;
    let set = |c: Cursor| {
        rest.set(c);
        server.set(c);
    };
    let ctx = CallControl::new("vendor-provider-replay");
    let (rt, _logs) = runtime();
    let (mut seen, mut answers) = (Vec::new(), Vec::new());
    let mut not_covered: BTreeMap<String, u64> = BTreeMap::new();
    let mut failed = 0;
    let mut stats: Option<Snapshot> = None;
    for (t, (trajectory, plan)) in trajectories.iter().zip(plans).enumerate() {
        let plugins = plugin_dir(&[("github", "github", Some(&manifest(&plan.repo, &origin)?))]);
        let host = host(&rt, plugins.path(), &mcp, speculate).await?;
        if let Some(earlier) = &stats {
            host.resume(earlier);
        }
        let (mut t_seen, mut t_answers) = (Vec::new(), Vec::new());
        for (i, (call, mapped)) in trajectory.calls.iter().zip(&plan.calls).enumerate() {
            let think = o.scaled(call.think_ms.unwrap_or(o.think_ms));
            match mapped {
                Mapped::Covered(c) => {
                    let a = step(&host, &set, (t, i), think, (c.tool, c.args.clone()), &ctx).await?;
                    failed += u64::from(a.failed);
                    let stale = truth.is_some_and(|truth| truth[t][i].as_ref() != Some(&a.got));
                    t_seen.push(Some(Seen {
                        waited: a.waited,
                        stale,
                        diverged: a.is_error != call.error_from.is_some(),
                        why: a.why,
                        linked_from: a.linked_from,
                    }));
                    t_answers.push(Some(a.got));
                }
                Mapped::Uncovered(why) => {
                    let tool = format!("{UPSTREAM_PREFIX}{}", call.tool);
                    step(&host, &set, (t, i), think, (&tool, call.args.clone()), &ctx).await?;
                    *not_covered.entry(format!("{} ({why})", call.tool)).or_default() += 1;
                    t_seen.push(None);
                    t_answers.push(None);
                }
            }
        }
        seen.push(t_seen);
        answers.push(t_answers);
        stats = finish(host, stats).await;
    }
    let requests: Vec<Logged> = rest
        .requests()
        .into_iter()
        .map(|r| {
            let Cursor {
                trajectory: t,
                call: i,
                calling,
            } = r.cursor;
            let current = plans.get(t).and_then(|p| p.calls.get(i));
            let real = calling
                && match current {
                    Some(Mapped::Covered(c)) if c.method == "GET" => r.method == "GET" && r.route == c.route,
                    // A write is never prefetched: a request to a path it
                    // writes is its own.
                    Some(Mapped::Covered(c)) => {
                        r.route.path == c.route.path
                            || c.also
                                .iter()
                                .any(|p| super::mapping::Route::parse(p).0.path == r.route.path)
                    }
                    _ => false,
                };
            Logged {
                cursor: r.cursor,
                real,
                tool: r.method,
                args: r.target,
                at: r.at,
                unknown: r.unknown,
            }
        })
        .collect();
    let mut run = account(trajectories, &seen, &requests, stats);
    run.figures.failed = failed;
    run.not_covered = not_covered;
    Ok((run, answers))
}
