//! Three `toolhost serve --http` replicas on loopback sharing a real
//! `redis-server`, behind a balancer that sends each request of one MCP
//! session to the next replica: what one replica prefetched answers calls
//! on the others, with the same answers and the same backend requests as
//! one replica alone; a write on one replica is seen on every other; a
//! replica killed loses no call the client retries; Redis killed leaves
//! every call answered, from each replica's own cache, and is logged; what
//! each replica counted and learned is summed.
//!
//! The engine's side (generations, confirmation of local entries) is
//! unit-tested in `host/src/speculation/`; this is the whole: processes,
//! HTTP, Redis.

use std::time::Duration;

use serde_json::json;
use toolhost_tests::cluster::{Balancer, Client, KEY, KEY_ENV, Layout, Redis, Tracker, title};
use toolhost_tests::needs;
use toolhost_tests::served::Served;
use toolhost_tests::{body_of, expect_driver_ok, python_driver, run_within, toolhost_binary};

/// Prefetched by `get_issues` with two issues: each issue and its comments.
const PREFETCHES: usize = 4;

/// Replicas of `layout` and a client whose requests go round robin to them.
async fn cluster(layout: &Layout, n: usize) -> (Vec<Served>, Balancer, Client) {
    let replicas = layout.replicas(n).expect("replicas");
    let balancer = Balancer::start(replicas.iter().map(|r| r.addr).collect())
        .await
        .unwrap();
    let client = Client::connect(balancer.addr).await.unwrap();
    (replicas, balancer, client)
}

/// One agent's session: list the issues, read what was prefetched, write
/// one, read it again. The answers, in order.
async fn session(client: &Client, settled: impl AsyncFn()) -> Vec<String> {
    let mut answers = Vec::new();
    client.call("get_issues", json!({})).await.unwrap();
    settled().await;
    for (tool, args) in [
        ("get_issue", json!({"key": "WEB-1"})),
        ("get_issue_comments", json!({"key": "WEB-1"})),
        ("get_issue", json!({"key": "WEB-2"})),
        ("update_issue", json!({"key": "WEB-2", "title": "renamed"})),
        ("get_issue", json!({"key": "WEB-2"})),
        ("get_issue", json!({"key": "WEB-1"})),
        ("get_issue", json!({"key": "WEB-2"})),
    ] {
        answers.push(title(&client.call(tool, args).await.unwrap()));
    }
    answers
}

/// Two replicas sharing a Redis, a client of each, and A's prefetches of
/// the tracker's two issues in Redis.
struct Prefetched {
    tracker: Tracker,
    redis: Redis,
    layout: Layout,
    replicas: Vec<Served>,
    a: Client,
    b: Client,
}

impl Prefetched {
    async fn on_a() -> Self {
        let tracker = Tracker::start(2, Duration::ZERO).await;
        let redis = Redis::start().unwrap();
        let layout = Layout::new(&tracker, Some(&redis)).await.unwrap();
        let replicas = layout.replicas(2).expect("replicas");
        let a = Client::connect(replicas[0].addr).await.unwrap();
        let b = Client::connect(replicas[1].addr).await.unwrap();
        a.call("get_issues", json!({})).await.unwrap();
        redis.await_prefetches(PREFETCHES).await;
        Self {
            tracker,
            redis,
            layout,
            replicas,
            a,
            b,
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn three_replicas_answer_and_hit_as_one_and_see_each_others_writes() {
    needs!(Redis);
    // One replica alone, no Redis: the baseline.
    let alone = Tracker::start(2, Duration::ZERO).await;
    let layout = Layout::new(&alone, None).await.unwrap();
    let (_replica, _balancer, client) = cluster(&layout, 1).await;
    let baseline = session(&client, async || {
        // Its prefetches reached the tracker; a call still in flight joins.
        while alone.reads().len() < 1 + PREFETCHES {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;

    let tracker = Tracker::start(2, Duration::ZERO).await;
    let redis = Redis::start().unwrap();
    let layout = Layout::new(&tracker, Some(&redis)).await.unwrap();
    let (replicas, balancer, client) = cluster(&layout, 3).await;
    let answers = session(&client, async || redis.await_prefetches(PREFETCHES).await).await;
    assert!(
        balancer.sent().iter().all(|&n| n >= 3),
        "the session's requests went to every replica: {:?}",
        balancer.sent()
    );

    assert_eq!(answers, baseline, "the same answers as one replica");
    assert_eq!(answers[3..], ["renamed", "renamed", "title 1", "renamed"]);
    // Issue reads only: a real call's own follow-ups (the comments of the
    // issue it read) may still be on their way.
    let issues = |t: &Tracker| {
        let mut reads = t.reads();
        reads.retain(|path, _| !path.ends_with("/comments"));
        reads
    };
    assert_eq!(
        issues(&tracker),
        issues(&alone),
        "the same backend reads: every prefetch served, wherever it was made"
    );
    for replica in &replicas {
        assert!(
            !replica.log_text().contains("unreachable"),
            "{}",
            replica.log_text()
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_prefetch_serves_another_replica_and_a_write_there_is_seen_where_it_was_made() {
    needs!(Redis);
    // A prefetched both issues and holds them in its own cache too.
    // (Bound whole: a field left out of a pattern would be dropped here.)
    let two = Prefetched::on_a().await;
    let (tracker, a, b) = (&two.tracker, &two.a, &two.b);
    let read = b.call("get_issue", json!({"key": "WEB-2"})).await.unwrap();
    assert_eq!(title(&read), "title 2");
    assert_eq!(
        tracker.reads()["/issues/WEB-2"],
        1,
        "b was answered by a's prefetch"
    );
    b.call("update_issue", json!({"key": "WEB-1", "title": "changed on b"}))
        .await
        .unwrap();
    let read = a.call("get_issue", json!({"key": "WEB-1"})).await.unwrap();
    assert_eq!(
        title(&read),
        "changed on b",
        "never the prefetch made before the write"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_replica_killed_mid_run_loses_no_call_the_client_retries() {
    needs!(Redis);
    let tracker = Tracker::start(4, Duration::ZERO).await;
    let redis = Redis::start().unwrap();
    let layout = Layout::new(&tracker, Some(&redis)).await.unwrap();
    let (mut replicas, _balancer, client) = cluster(&layout, 3).await;
    for n in 0..30 {
        if n == 10 {
            replicas[2].kill();
        }
        let key = format!("WEB-{}", n % 4 + 1);
        let read = client
            .call_retrying("get_issue", json!({ "key": key }), 3)
            .await
            .unwrap_or_else(|e| panic!("call {n} lost: {e}"));
        assert_eq!(title(&read), format!("title {}", n % 4 + 1), "call {n}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn redis_going_away_leaves_every_call_answered_and_is_logged() {
    needs!(Redis);
    let tracker = Tracker::start(2, Duration::ZERO).await;
    let mut redis = Redis::start().unwrap();
    let port = redis.port;
    let layout = Layout::new(&tracker, Some(&redis)).await.unwrap();
    let (replicas, _balancer, client) = cluster(&layout, 3).await;
    client.call("get_issues", json!({})).await.unwrap();
    redis.await_prefetches(PREFETCHES).await;
    redis.kill();
    for n in 0..12 {
        let key = format!("WEB-{}", n % 2 + 1);
        let read = client.call("get_issue", json!({ "key": key })).await.unwrap();
        assert_eq!(title(&read), format!("title {}", n % 2 + 1), "call {n}");
    }
    let write = client
        .call("update_issue", json!({"key": "WEB-1", "title": "while away"}))
        .await
        .unwrap();
    assert_eq!(title(&write), "while away");
    let logged = |text: &str| replicas.iter().filter(|r| r.log_text().contains(text)).count();
    // What a replica logs reaches this test through its stderr pipe: waited for.
    for replica in &replicas {
        replica.wait_for("unreachable");
    }
    assert_eq!(logged("unreachable"), 3, "each replica logs the loss once");
    for replica in &replicas {
        assert_eq!(
            replica.log_text().matches("unreachable").count(),
            1,
            "{}",
            replica.log_text()
        );
    }

    // Back on the same port: each replica says so once it reaches it again.
    let _redis = Redis::on(port).unwrap();
    while logged("is back") < 3 {
        client.call("get_issue", json!({"key": "WEB-2"})).await.unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn metrics_count_calls_errors_latency_and_speculation_and_health_answers() {
    needs!(Redis);
    let tracker = Tracker::start(2, Duration::ZERO).await;
    let redis = Redis::start().unwrap();
    let layout = Layout::new(&tracker, Some(&redis)).await.unwrap();
    let (replicas, _balancer, client) = cluster(&layout, 1).await;
    client.call("get_issues", json!({})).await.unwrap();
    redis.await_prefetches(PREFETCHES).await;
    for key in ["WEB-1", "WEB-2", "WEB-9"] {
        client.call("get_issue", json!({ "key": key })).await.unwrap();
    }
    let _ = client.call("no_such_tool", json!({})).await;
    let http = toolhost::internals::http_client::builder().build().unwrap();
    let base = format!("http://{}", replicas[0].addr);
    let health = http.get(format!("{base}/healthz")).send().await.unwrap();
    assert_eq!(health.text().await.unwrap(), "ok\n");
    let text = body_of(http.get(format!("{base}/metrics"))).await;
    for line in [
        "toolhost_calls_total{tool=\"get_issue\"} 3",
        "toolhost_calls_total{tool=\"get_issues\"} 1",
        "toolhost_call_errors_total{tool=\"get_issue\"} 1",
        "toolhost_call_seconds_count{tool=\"get_issue\"} 3",
        "toolhost_speculation_total{kind=\"prefetches\"} 4",
        "toolhost_speculation_total{kind=\"hits\"} 2",
    ] {
        assert!(text.lines().any(|l| l == line), "no `{line}` in:\n{text}");
    }
    assert!(
        !text.contains("no_such_tool"),
        "made-up names are not labels:\n{text}"
    );
    // Per plugin: the tracker's tools are the tracker plugin's calls (the
    // made-up tool is no plugin's); every plugin loaded has its failure,
    // quarantine and refusal counters. (A hostile name's escaping is
    // unit-tested in host/src/mcp/metrics.rs.)
    let per_plugin = |family: &str| -> Vec<&str> {
        text.lines()
            .filter(|l| l.starts_with(&format!("toolhost_{family}{{plugin=")))
            .collect()
    };
    let calls = per_plugin("plugin_calls_total");
    assert_eq!(calls.len(), 1, "{text}");
    assert!(calls[0].ends_with("} 4"), "{text}");
    assert!(
        per_plugin("plugin_call_errors_total")[0].ends_with("} 1"),
        "{text}"
    );
    assert!(!per_plugin("plugin_call_seconds_count").is_empty(), "{text}");
    for family in [
        "plugin_traps_total",
        "plugin_quarantines_total",
        "plugin_refusals_total",
    ] {
        let lines = per_plugin(family);
        assert_eq!(lines.len(), 2, "one per plugin loaded: {text}");
        assert!(lines.iter().all(|l| l.ends_with("} 0")), "{text}");
    }
}

/// `toolhost stats` (with `--json` if `json`) with the replicas'
/// configuration: the totals every replica added to Redis.
fn cluster_stats(layout: &Layout, json: bool) -> String {
    let out = std::process::Command::new(toolhost_binary())
        .env(KEY_ENV, KEY)
        .arg("--config")
        .arg(layout.dir.path().join("toolhost.toml"))
        .arg("--plugins")
        .arg(layout.plugins.path())
        .arg("stats")
        .args(json.then_some("--json"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// A replica's `/metrics`, as text.
async fn metrics(replica: &Served) -> String {
    let http = toolhost::internals::http_client::builder().build().unwrap();
    body_of(http.get(format!("http://{}/metrics", replica.addr))).await
}

/// The value of the sample `name` (the whole name with its labels) in
/// `text`, 0 if absent.
fn sample(text: &str, name: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread")]
async fn stats_sum_every_replica_and_a_prefetch_served_elsewhere_is_not_wasted() {
    needs!(Redis);
    // A prefetched; B is answered by every one of its prefetches.
    let two = Prefetched::on_a().await;
    let (redis, layout, replicas, a, b) = (&two.redis, &two.layout, &two.replicas, &two.a, &two.b);
    for key in ["WEB-1", "WEB-2"] {
        b.call("get_issue", json!({ "key": key })).await.unwrap();
        b.call("get_issue_comments", json!({ "key": key })).await.unwrap();
    }
    // Each replica counted its own share; `toolhost stats` sums them once
    // both have flushed.
    // The ranks B used count as used where A offered them: B's word
    // reached A, whose fan-out flushes them.
    let used = |summed: &serde_json::Value| -> u64 {
        summed["stats"]["ranks"].as_array().map_or(0, |ranks| {
            ranks.iter().map(|r| r["used"].as_u64().unwrap_or(0)).sum()
        })
    };
    let mut summed = serde_json::Value::Null;
    for _ in 0..600 {
        summed = serde_json::from_str(&cluster_stats(layout, true)).unwrap();
        // Each replica flushes on its own clock: wait for A's dispatches
        // as well as B's hits.
        let stats = &summed["stats"];
        if stats["hits"] == PREFETCHES
            && stats["dispatched"] == PREFETCHES
            && used(&summed) == PREFETCHES as u64
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(used(&summed), PREFETCHES as u64, "{summed:#}");
    assert_eq!(summed["stats"]["dispatched"], PREFETCHES, "{summed:#}");
    assert_eq!(summed["stats"]["cluster_hits"], PREFETCHES, "{summed:#}");
    // The budget too: A's one call and B's four, and no prefetch unused.
    assert_eq!(
        summed["stats"]["budget"],
        json!({ "real_calls": 1 + PREFETCHES, "unused": 0 }),
        "{summed:#}"
    );
    assert!(
        summed["cluster"]
            .as_str()
            .unwrap()
            .contains(&redis.port.to_string()),
        "says where it read: {summed:#}"
    );
    let a_says = metrics(&replicas[0]).await;
    let b_says = metrics(&replicas[1]).await;
    assert_eq!(
        sample(&a_says, "toolhost_speculation_total{kind=\"prefetches\"}"),
        4
    );
    assert_eq!(sample(&a_says, "toolhost_speculation_total{kind=\"hits\"}"), 0);
    assert_eq!(
        sample(&b_says, "toolhost_speculation_total{kind=\"cluster_hits\"}"),
        4
    );
    // A write on A drops A's own copies of what B used: used, so not
    // wasted.
    a.call("update_issue", json!({"key": "WEB-1", "title": "renamed"}))
        .await
        .unwrap();
    let a_says = metrics(&replicas[0]).await;
    assert_eq!(
        sample(&a_says, "toolhost_speculation_total{kind=\"wasted\"}"),
        0,
        "{a_says}"
    );
    // The text rendering says where the figures come from.
    let text = cluster_stats(layout, false);
    assert!(text.starts_with("summed over every replica"), "{text}");
}

/// How often `toolhost stats` on the cluster says the agents followed
/// the learned link `get_issues → get_issue`.
fn seen_summed(layout: &Layout) -> u64 {
    let summed: serde_json::Value = serde_json::from_str(&cluster_stats(layout, true)).unwrap();
    let learned = summed["stats"]["learned"].as_array().cloned().unwrap_or_default();
    learned
        .iter()
        .filter(|l| l["from"] == "get_issues" && l["to"] == "get_issue")
        .map(|l| l["seen"].as_u64().unwrap_or(0))
        .sum()
}

/// Wait until `toolhost stats` shows the link followed at least `n` times;
/// whether it did within `polls` polls.
async fn await_seen(layout: &Layout, n: u64, polls: usize) -> bool {
    for _ in 0..polls {
        if seen_summed(layout) >= n {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

#[tokio::test(flavor = "multi_thread")]
async fn a_link_followed_once_on_each_of_two_replicas_is_summed() {
    needs!(Redis);
    // A listed the issues (its prefetches are in Redis: the listing was
    // learned from), and an agent there reads the first.
    let two = Prefetched::on_a().await;
    let (layout, a, b) = (&two.layout, &two.a, &two.b);
    a.call("get_issue", json!({"key": "WEB-1"})).await.unwrap();
    assert!(await_seen(layout, 1, 600).await, "A's flush reached Redis");
    // An agent on B lists them and reads the second: B learns the link
    // once on its own (once more if its listing was not yet read when the
    // call came), and the totals hold both replicas' counts.
    for _ in 0..5 {
        b.call("get_issues", json!({})).await.unwrap();
        b.call("get_issue", json!({"key": "WEB-2"})).await.unwrap();
        if await_seen(layout, 2, 100).await {
            break;
        }
    }
    assert!(seen_summed(layout) >= 2, "{}", cluster_stats(layout, false));
    let text = cluster_stats(layout, false);
    assert!(text.contains("get_issues -> get_issue ["), "{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_catalog_change_on_one_replica_reaches_a_client_listening_on_another() {
    needs!(Redis, Python);
    let tracker = Tracker::start(2, Duration::ZERO).await;
    let redis = Redis::start().unwrap();
    let layout = Layout::new(&tracker, Some(&redis)).await.unwrap();
    // A watches the shared plugin directory; B does not, so its client can
    // hear of the change only through Redis.
    let a = layout.replica(&["--watch"]).unwrap();
    let b = layout.replica(&[]).unwrap();
    let ready = layout.dir.path().join("listening");
    let mut driver = python_driver("listen.py");
    driver.arg("--url").arg(&b.url).arg("--ready").arg(&ready);
    let listener = std::thread::spawn(move || expect_driver_ok(&mut driver, "listen"));
    for _ in 0..1200 {
        if ready.exists() || listener.is_finished() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        ready.exists(),
        "the client on B never listened:\n{}",
        b.log_text()
    );
    std::fs::remove_file(layout.plugins.path().join("10-jira.wasm")).unwrap();
    let heard = tokio::task::spawn_blocking(move || listener.join())
        .await
        .unwrap();
    assert!(
        heard.is_ok(),
        "the client on B was not told\nA:\n{}\nB:\n{}",
        a.log_text(),
        b.log_text()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_message_published_by_anyone_but_a_replica_is_dropped_unread() {
    needs!(Redis);
    let tracker = Tracker::start(1, Duration::ZERO).await;
    let redis = Redis::start().unwrap();
    let layout = Layout::new(&tracker, Some(&redis)).await.unwrap();
    let replica = layout.replica(&[]).unwrap();
    // What a replica published before messages were sealed: every replica
    // would have told its clients the tool list changed.
    let forged = json!({"event": "catalog", "replica": "forged-by-PUBLISH"}).to_string();
    let dropped = "a message on 127.0.0.1";
    for _ in 0..200 {
        // Published until the replica (subscribing as it starts) hears one.
        redis.cli(&["PUBLISH", "toolhost:events", &forged]).unwrap();
        if replica.log_text().contains(dropped) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let log = replica.log_text();
    assert!(
        log.contains("dropped: not sealed by a replica for this channel"),
        "{log}"
    );
    assert!(!log.contains("forged-by-PUBLISH"), "{log}");
}

/// How many entries in Redis `replica` refused rather than served.
async fn refused(replica: &Served) -> u64 {
    sample(
        &metrics(replica).await,
        "toolhost_speculation_total{kind=\"cluster_refused\"}",
    )
}

/// B read `key` from the tracker itself, not from what Redis held: the
/// tracker was asked twice (A's prefetch, B's call), B counted the entry
/// refused and logged why, without the entry's text.
async fn b_refused(two: &Prefetched, key: &str, forged: &str) {
    let b = &two.replicas[1];
    assert_eq!(
        two.tracker.reads()[&format!("/issues/{key}")],
        2,
        "{}",
        b.log_text()
    );
    assert_eq!(refused(b).await, 1, "{}", b.log_text());
    // The log is read from the replica's stderr as it comes: waited for.
    b.wait_for("shared result of `get_issue` in Redis was refused");
    let log = b.log_text();
    assert!(!log.contains(forged), "{log}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_entry_forged_in_redis_is_not_served() {
    needs!(Redis);
    let two = Prefetched::on_a().await;
    // Whoever reaches Redis edits what a replica stored there.
    let (key, value) = two.redis.entry_with("get_issue", "title 1");
    let forged = value.replace("title 1", "forged by SET");
    two.redis.cli(&["SET", &key, &forged]).unwrap();
    let read = two.b.call("get_issue", json!({"key": "WEB-1"})).await.unwrap();
    assert_eq!(title(&read), "title 1");
    b_refused(&two, "WEB-1", "forged by SET").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_valid_entry_moved_to_another_key_is_not_served() {
    needs!(Redis);
    let two = Prefetched::on_a().await;
    let (one, _) = two.redis.entry_with("get_issue", "title 1");
    let (_, other) = two.redis.entry_with("get_issue", "title 2");
    two.redis.cli(&["SET", &one, &other]).unwrap();
    let read = two.b.call("get_issue", json!({"key": "WEB-1"})).await.unwrap();
    assert_eq!(title(&read), "title 1");
    b_refused(&two, "WEB-1", "title 2").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_entry_over_its_tools_output_cap_is_not_served() {
    needs!(Redis);
    // A's tracker may answer 1 MiB (the default), B's 64 KiB: an entry
    // A sealed, valid, still holds more than B's tool could answer.
    let tracker = Tracker::start(2, Duration::ZERO).await;
    let big = "x".repeat(300 << 10);
    tracker.titles.lock().unwrap().insert("WEB-1".into(), big.clone());
    let redis = Redis::start().unwrap();
    let layout = Layout::new(&tracker, Some(&redis)).await.unwrap();
    let a = layout.replica(&[]).unwrap();
    let capped = format!("[plugin.{}.limits]\nmax_output_kb = 64\n", layout.tracker);
    let b = layout.replica_with(&capped, &[]).unwrap();
    Client::connect(a.addr)
        .await
        .unwrap()
        .call("get_issues", json!({}))
        .await
        .unwrap();
    redis.await_prefetches(PREFETCHES).await;
    assert!(redis.entry_with("get_issue", &big).1.len() > 300 << 10);
    let read = Client::connect(b.addr)
        .await
        .unwrap()
        .call("get_issue", json!({"key": "WEB-1"}))
        .await
        .unwrap();
    let answer = serde_json::to_string(&read).unwrap();
    assert!(answer.len() < 64 << 10, "B answered {} bytes", answer.len());
    assert_eq!(read.is_error, Some(true), "{answer}");
    assert_eq!(refused(&b).await, 1, "{}", b.log_text());
    b.wait_for("over the tool's output cap of 65536");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cluster_does_not_start_without_its_shared_key_and_never_shows_it() {
    needs!(Redis);
    let tracker = Tracker::start(1, Duration::ZERO).await;
    let redis = Redis::start().unwrap();
    let layout = Layout::new(&tracker, Some(&redis)).await.unwrap();
    for (key, expect) in [
        (None, "`TOOLHOST_CLUSTER_KEY` (`key_env`) is not set"),
        (Some("hunter2"), "has 7 bytes, fewer than 32"),
    ] {
        let mut command = std::process::Command::new(toolhost_binary());
        command
            .env_remove(KEY_ENV)
            .arg("--config")
            .arg(layout.dir.path().join("toolhost.toml"))
            .arg("--plugins")
            .arg(layout.plugins.path())
            .args(["serve", "--http", "127.0.0.1:0"]);
        if let Some(key) = key {
            command.env(KEY_ENV, key);
        }
        // It must refuse by itself: one that serves is stopped after a
        // minute, and fails the test.
        let (status, _, stderr) = run_within(&mut command, Duration::from_secs(60));
        assert!(
            status.is_some_and(|s| !s.success()),
            "a replica served without a key: {stderr}"
        );
        assert!(stderr.contains(expect), "{stderr}");
        assert!(!stderr.contains("hunter2"), "{stderr}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_command_redis_refuses_is_logged_as_refused_not_as_redis_unreachable() {
    needs!(Redis);
    // An ACL without the scripts the replicas read the shared totals with,
    // as a deployment that missed `+eval` in docs/deploy.md has.
    let tracker = Tracker::start(2, Duration::ZERO).await;
    let redis = Redis::start().unwrap();
    redis
        .cli(&["ACL", "SETUSER", "default", "-eval", "-evalsha"])
        .unwrap();
    let layout = Layout::new(&tracker, Some(&redis)).await.unwrap();
    let replica = layout.replica(&[]).unwrap();
    let read = Client::connect(replica.addr)
        .await
        .unwrap()
        .call("get_issues", json!({}))
        .await
        .unwrap();
    assert_ne!(read.is_error, Some(true), "{read:?}");
    replica.wait_for("refused");
    let log = replica.log_text();
    assert!(log.contains("no permissions to run the 'eval' command"), "{log}");
    assert!(!log.contains("unreachable"), "{log}");
}
