//! Speculation through the real pipeline: native tools on real files, the
//! HTTP-backed tracker plugin with the Jira enricher against a loopback
//! server, the text-tools plugin's before-call, and `toolhost serve` over
//! stdio with `toolhost stats` after it.
//!
//! The engine's rules on their own (TTL expiry, caps with 50 candidates,
//! mutating follow-ups never planned, learned fan-out) are unit-tested in
//! `host/src/speculation/`.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};
use toolhost::Toolhost;
use toolhost::ValueModel;
use toolhost::WebSettings;
use toolhost::internals::{NativeTools, Root};
use toolhost::internals::{Options, Sources};
use toolhost::speculation::Settings;
use toolhost_tests::stdio::StdioServe;
use toolhost_tests::{LoopbackServer, call_ok, catalog_bindings, load, toolhost, toolhost_binary};

#[path = "speculation/trust.rs"]
mod trust;

/// A file last modified an hour ago, so its stamp is trusted.
fn old_file(dir: &Path, name: &str, content: &str) {
    let path = dir.join(name);
    std::fs::write(&path, content).unwrap();
    let hour_ago = SystemTime::now() - Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(hour_ago)
        .unwrap();
}

async fn native_host(root: &Path, speculation: Settings) -> Toolhost {
    let native = NativeTools::new(Root::new(root).unwrap(), WebSettings::default())
        .unwrap()
        .writable(true);
    Toolhost::native(native, speculation).await.unwrap()
}

/// Speculation that does not read changed files again ahead, so that a
/// change behind the host's back meets the freshness check.
fn no_reread() -> Settings {
    Settings {
        reread_changed: false,
        ..Settings::default()
    }
}

fn files() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    old_file(dir.path(), "a.rs", "fn needle() {}\n");
    old_file(dir.path(), "b.rs", "fn other() {}\n");
    dir
}

#[tokio::test(flavor = "multi_thread")]
async fn a_read_after_grep_is_served_from_its_prefetch_as_a_direct_read_would_be() {
    let dir = files();
    let host = native_host(dir.path(), Settings::default()).await;
    call_ok(&host, "grep", json!({"pattern": "needle"})).await;
    host.settle().await;
    assert_eq!(host.stats().unwrap().dispatched, 1, "only a.rs matched");
    let served = call_ok(&host, "read", json!({"path": "a.rs"})).await;
    let stats = host.stats().unwrap();
    assert_eq!((stats.hits, stats.joins), (1, 0));

    let direct_host = native_host(dir.path(), Settings::off()).await;
    let direct = call_ok(&direct_host, "read", json!({"path": "a.rs"})).await;
    assert_eq!(served.text(), direct.text());
    assert_eq!(served.structured(), direct.structured());
    assert_eq!(served.is_error, direct.is_error);
    assert!(direct_host.stats().is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_write_through_the_host_after_the_prefetch_is_seen() {
    let dir = files();
    let host = native_host(dir.path(), no_reread()).await;
    call_ok(&host, "grep", json!({"pattern": "needle"})).await;
    host.settle().await;
    let wrote = call_ok(
        &host,
        "write",
        json!({"path": "a.rs", "content": "fn needle2() {}\n"}),
    )
    .await;
    assert!(!wrote.is_error, "{}", wrote.text());
    let read = call_ok(&host, "read", json!({"path": "a.rs"})).await;
    assert_eq!(read.structured().unwrap()["content"], "fn needle2() {}");
    assert_eq!(host.stats().unwrap().hits, 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_change_behind_the_hosts_back_is_seen() {
    let dir = files();
    let host = native_host(dir.path(), no_reread()).await;
    call_ok(&host, "grep", json!({"pattern": "needle"})).await;
    host.settle().await;
    // The agent's own editor changes the file: no call goes through the host.
    std::fs::write(dir.path().join("a.rs"), "fn changed() {}\n").unwrap();
    let read = call_ok(&host, "read", json!({"path": "a.rs"})).await;
    assert_eq!(read.structured().unwrap()["content"], "fn changed() {}");
    let stats = host.stats().unwrap();
    assert_eq!((stats.hits, stats.stale), (0, 1));
}

/// Replace `path`'s bytes with `content` (of the same length), then give it
/// back its access and modification times, as `cp -p`, `rsync -t` or
/// `touch -r` do: in place, or as a new file renamed over it.
fn edit_keeping_times(path: &Path, content: &str, in_place: bool) {
    let before = std::fs::metadata(path).unwrap();
    assert_eq!(before.len(), content.len() as u64, "a same-length edit");
    if in_place {
        std::fs::write(path, content).unwrap();
    } else {
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, content).unwrap();
        std::fs::rename(&tmp, path).unwrap();
    }
    let stamp = |t: SystemTime| {
        let since = t.duration_since(SystemTime::UNIX_EPOCH).unwrap();
        rustix::fs::Timespec {
            tv_sec: since.as_secs() as i64,
            tv_nsec: since.subsec_nanos().into(),
        }
    };
    let times = rustix::fs::Timestamps {
        last_access: stamp(before.accessed().unwrap()),
        last_modification: stamp(before.modified().unwrap()),
    };
    rustix::fs::utimensat(rustix::fs::CWD, path, &times, rustix::fs::AtFlags::empty()).unwrap();
    let after = std::fs::metadata(path).unwrap();
    assert_eq!(
        (after.len(), after.modified().unwrap()),
        (before.len(), before.modified().unwrap()),
        "length and mtime are as they were"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_edit_that_restores_the_mtime_is_never_served_stale() {
    for (in_place, settled) in [(true, false), (true, true), (false, false), (false, true)] {
        let dir = files();
        if settled {
            // Past the window in which a ctime may be shared by a later
            // write: the stamp alone is trusted, without a digest.
            std::thread::sleep(Duration::from_millis(250));
        }
        let host = native_host(dir.path(), no_reread()).await;
        call_ok(&host, "grep", json!({"pattern": "needle"})).await;
        host.settle().await;
        assert_eq!(host.stats().unwrap().dispatched, 1);
        edit_keeping_times(&dir.path().join("a.rs"), "fn NEEDLE() {}\n", in_place);
        let read = call_ok(&host, "read", json!({"path": "a.rs"})).await;
        let case = format!("in place {in_place}, settled {settled}");
        assert_eq!(read.structured().unwrap()["content"], "fn NEEDLE() {}", "{case}");
        let stats = host.stats().unwrap();
        assert_eq!((stats.hits, stats.stale), (0, 1), "{case}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn spellings_of_one_path_share_its_prefetch_and_none_leaves_the_root() {
    let dir = files();
    let host = native_host(dir.path(), Settings::default()).await;
    call_ok(&host, "grep", json!({"pattern": "needle"})).await;
    host.settle().await;
    let absolute = dir.path().canonicalize().unwrap().join("a.rs");
    for (n, path) in [
        "./a.rs",
        "a.rs",
        ".//a.rs",
        "b/../a.rs",
        absolute.to_str().unwrap(),
    ]
    .into_iter()
    .enumerate()
    {
        let read = call_ok(&host, "read", json!({"path": path})).await;
        assert_eq!(read.structured().unwrap()["content"], "fn needle() {}", "{path}");
        assert_eq!(host.stats().unwrap().hits, n as u64 + 1, "{path} was not served");
    }
    let escape = call_ok(&host, "read", json!({"path": "../a.rs"})).await;
    assert!(
        escape.is_error && escape.text().contains("outside the tool root"),
        "{}",
        escape.text()
    );
    assert_eq!(host.stats().unwrap().dispatched, 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn grep_matches_and_ls_entries_are_read_ahead_and_their_slices_served() {
    let dir = files();
    let long: String = (1..=300)
        .map(|n| format!("line {n}{}\n", if n == 150 { " needle" } else { "" }))
        .collect();
    std::fs::create_dir(dir.path().join("lib")).unwrap();
    old_file(&dir.path().join("lib"), "long.rs", &long);
    let host = native_host(dir.path(), Settings::default()).await;
    call_ok(&host, "grep", json!({"pattern": "needle", "path": "lib"})).await;
    host.settle().await;
    // The slice an agent asks around the match, and one the window left out.
    for (n, (offset, limit)) in [(140, 20), (280, 50)].into_iter().enumerate() {
        let read = call_ok(
            &host,
            "read",
            json!({"path": "lib/long.rs", "offset": offset, "limit": limit}),
        )
        .await;
        let got = read.structured().unwrap();
        assert_eq!(got["total_lines"], 300);
        assert_eq!(got["lines"], json!([offset, (offset + limit - 1).min(300)]));
        assert_eq!(host.stats().unwrap().hits, n as u64 + 1);
    }
    call_ok(&host, "ls", json!({})).await;
    host.settle().await;
    let stats = host.stats().unwrap();
    assert_eq!(
        stats.dispatched, 3,
        "long.rs, then a.rs and b.rs from the listing"
    );
    let read = call_ok(&host, "read", json!({"path": "b.rs", "offset": 1})).await;
    assert_eq!(read.structured().unwrap()["content"], "fn other() {}");
    let stats = host.stats().unwrap();
    assert_eq!(stats.hits, 3);
    let ls_rank = stats
        .ranks
        .iter()
        .find(|r| r.from == "ls" && r.rank == 1)
        .unwrap();
    assert_eq!(
        (ls_rank.offered, ls_rank.used),
        (1, 1),
        "the slice read credited its offer"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn prefetches_never_read_are_wasted_when_the_session_ends() {
    let dir = files();
    let host = native_host(dir.path(), Settings::default()).await;
    call_ok(&host, "grep", json!({"pattern": "fn"})).await;
    host.settle().await;
    call_ok(&host, "read", json!({"path": "a.rs"})).await;
    let during = host.stats().unwrap();
    assert_eq!(
        (during.dispatched, during.hits, during.wasted, during.unserved),
        (2, 1, 0, 1)
    );
    host.shutdown().await;
    let after = host.stats().unwrap();
    assert_eq!((after.wasted, after.unserved), (1, 0), "b.rs was never read");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_real_read_answers_the_slices_and_re_reads_that_follow_until_the_file_changes() {
    let dir = files();
    let host = native_host(dir.path(), Settings::default()).await;
    let direct_host = native_host(dir.path(), Settings::off()).await;
    let first = call_ok(&host, "read", json!({"path": "a.rs", "offset": 1, "limit": 1})).await;
    assert_eq!(first.structured().unwrap()["content"], "fn needle() {}");
    for args in [json!({"path": "./a.rs"}), json!({"path": "a.rs", "offset": 2})] {
        let served = call_ok(&host, "read", args.clone()).await;
        let direct = call_ok(&direct_host, "read", args.clone()).await;
        assert_eq!(served, direct, "{args}");
    }
    let stats = host.stats().unwrap();
    assert_eq!(
        (stats.reused, stats.hits, stats.dispatched, stats.unserved),
        (2, 0, 0, 0),
        "served from the real read, which is no prefetch"
    );
    // Changed behind the host's back: never served from the old read.
    std::fs::write(dir.path().join("a.rs"), "fn changed() {}\n").unwrap();
    let read = call_ok(&host, "read", json!({"path": "a.rs"})).await;
    assert_eq!(read.structured().unwrap()["content"], "fn changed() {}");
}

/// Wait until `host` has dispatched `n` prefetches and they have landed.
async fn dispatched(host: &Toolhost, n: u64) {
    let reached = tokio::time::timeout(Duration::from_secs(30), async {
        while host.stats().unwrap().dispatched < n {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    });
    assert!(reached.await.is_ok(), "{n} prefetches were dispatched");
    host.settle().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_file_read_then_edited_behind_the_hosts_back_is_read_again_ahead() {
    let dir = files();
    let host = native_host(dir.path(), Settings::default()).await;
    call_ok(&host, "read", json!({"path": "a.rs"})).await;
    // The agent's shell edits it, in place and then by a rename (`sed -i`).
    std::fs::write(dir.path().join("a.rs"), "fn edited() {}\n").unwrap();
    dispatched(&host, 1).await;
    let read = call_ok(&host, "read", json!({"path": "a.rs", "offset": 1})).await;
    assert_eq!(read.structured().unwrap()["content"], "fn edited() {}");
    assert_eq!(host.stats().unwrap().hits, 1, "served from the read ahead");
    std::fs::write(dir.path().join("a.tmp"), "fn renamed() {}\n").unwrap();
    std::fs::rename(dir.path().join("a.tmp"), dir.path().join("a.rs")).unwrap();
    dispatched(&host, 2).await;
    let read = call_ok(&host, "read", json!({"path": "a.rs"})).await;
    assert_eq!(read.structured().unwrap()["content"], "fn renamed() {}");
    let stats = host.stats().unwrap();
    assert_eq!((stats.hits, stats.stale), (2, 0));
    let changed = stats.ranks.iter().find(|r| r.from == "(changed)").unwrap();
    assert_eq!((changed.offered, changed.used), (2, 2));
    // b.rs is not held: its change fetches nothing.
    std::fs::write(dir.path().join("b.rs"), "fn b() {}\n").unwrap();
    std::fs::write(dir.path().join("a.rs"), "fn last() {}\n").unwrap();
    dispatched(&host, 3).await;
    host.shutdown().await;
    let stats = host.stats().unwrap();
    assert_eq!(
        (stats.dispatched, stats.wasted),
        (3, 1),
        "a.rs's last edit, never read"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn native_speculation_can_be_switched_off() {
    let dir = files();
    let off = Settings {
        native: false,
        ..Settings::default()
    };
    let host = native_host(dir.path(), off).await;
    call_ok(&host, "grep", json!({"pattern": "needle"})).await;
    host.settle().await;
    call_ok(&host, "read", json!({"path": "a.rs"})).await;
    std::fs::write(dir.path().join("a.rs"), "fn edited() {}\n").unwrap();
    call_ok(&host, "read", json!({"path": "a.rs"})).await;
    let stats = host.stats().unwrap();
    assert_eq!(stats.dispatched, 0);
    assert_eq!(stats.reused, 0, "nor are real reads kept");
    assert_eq!(stats.declined.get("not_enabled"), Some(&1));
}

/// An issue tracker on loopback: issues whose titles can be changed.
struct Tracker {
    server: LoopbackServer,
    titles: Arc<Mutex<BTreeMap<String, String>>>,
}

impl Tracker {
    async fn start(delay: Duration) -> Self {
        Self::start_with_delays(move |_| delay).await
    }

    /// Each request answered after `delay(path)`.
    async fn start_with_delays(delay: impl Fn(&str) -> Duration + Send + Sync + 'static) -> Self {
        let titles: Arc<Mutex<BTreeMap<String, String>>> = Arc::new(Mutex::new(
            [("WEB-1", "first"), ("WEB-2", "second")]
                .map(|(k, t)| (k.to_owned(), t.to_owned()))
                .into(),
        ));
        let state = titles.clone();
        let server = LoopbackServer::start_with_delays(
            move |r| delay(&r.path),
            move |r| {
                let mut titles = state.lock().unwrap();
                let path = r.path.split('?').next().unwrap();
                if path == "/issues" {
                    // Each issue names its parent: a generic walk for `key`
                    // would find WEB-0 too; the Jira enricher's projection not.
                    let issues: Vec<Value> = titles
                        .keys()
                        .map(|k| json!({"key": k, "parent": {"key": "WEB-0"}}))
                        .collect();
                    return (200, json!({ "issues": issues }).to_string());
                }
                let rest = path.trim_start_matches("/issues/");
                if let Some(key) = rest.strip_suffix("/comments") {
                    return (200, json!({"key": key, "comments": ["looks good"]}).to_string());
                }
                if r.method == "POST" {
                    let patch: Value = serde_json::from_str(&r.body).unwrap();
                    if let Some(title) = patch["title"].as_str() {
                        titles.insert(rest.to_owned(), title.to_owned());
                    }
                }
                match titles.get(rest) {
                    Some(title) => (200, json!({"key": rest, "title": title}).to_string()),
                    None => (404, "{}".into()),
                }
            },
        )
        .await;
        Self { server, titles }
    }

    fn requests(&self, path: &str) -> usize {
        self.server
            .seen
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r.method == "GET" && r.path == path)
            .count()
    }

    /// The tracker plugin granted this server, and the Jira enricher.
    async fn host(&self, speculation: Settings) -> (Toolhost, tempfile::TempDir) {
        let addr = self.server.addr;
        let tracker =
            format!("[grants]\nhttp = [\"http://{addr}\"]\n[config]\nbase_url = \"http://{addr}\"\n");
        let jira = "[config]\nhost = \"jira.test\"\n[[config.projects]]\nkey = \"WEB\"\n";
        let (report, _, dir) = load(&[
            ("10-jira", "jira", Some(jira)),
            ("20-tracker", "tracker_tools", Some(&tracker)),
        ])
        .await;
        let sources = Sources {
            bindings: catalog_bindings(&report.plugins[1]),
            plugins: report.plugins,
            ..Sources::default()
        };
        // The tracker plugin owns its tools and says nothing of them (it is
        // no enricher): the user vouches that its reads are reads, behind
        // the host the Jira enricher names.
        let read = model(json!({"side_effect": "read-only", "rate_limit_host": "jira.test"}));
        let options = Options {
            value_models: ["get_issues", "get_issue", "get_issue_comments"]
                .map(|t| (t.to_owned(), read.clone()))
                .into(),
            speculation,
            ..Options::default()
        };
        (Toolhost::with_options(sources, options).await.unwrap(), dir)
    }
}

fn jira_on() -> Settings {
    Settings {
        hosts: vec!["jira.test".into()],
        per_host: 8,
        ..Settings::default()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn issues_are_prefetched_by_the_enrichers_projection_and_writes_are_seen() {
    let tracker = Tracker::start(Duration::ZERO).await;
    let (host, _dir) = tracker.host(jira_on()).await;
    call_ok(&host, "get_issues", json!({})).await;
    host.settle().await;
    for key in ["WEB-1", "WEB-2"] {
        assert_eq!(tracker.requests(&format!("/issues/{key}")), 1, "{key} prefetched");
        assert_eq!(tracker.requests(&format!("/issues/{key}/comments")), 1);
    }
    assert_eq!(
        tracker.requests("/issues/WEB-0"),
        0,
        "project-args answered, so the generic projection was not used"
    );

    let issue = call_ok(&host, "get_issue", json!({"key": "WEB-1"})).await;
    assert_eq!(issue.structured().unwrap()["title"], "first");
    assert_eq!(
        tracker.requests("/issues/WEB-1"),
        1,
        "served without a second request"
    );
    assert_eq!(host.stats().unwrap().hits, 1);

    // A write through the host: the issue tracker's cached reads go.
    call_ok(&host, "update_issue", json!({"key": "WEB-2", "title": "renamed"})).await;
    assert_eq!(tracker.titles.lock().unwrap()["WEB-2"], "renamed");
    let issue = call_ok(&host, "get_issue", json!({"key": "WEB-2"})).await;
    assert_eq!(issue.structured().unwrap()["title"], "renamed");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_real_call_joins_the_prefetch_in_flight() {
    let tracker = Tracker::start(Duration::from_millis(300)).await;
    let (host, _dir) = tracker.host(jira_on()).await;
    call_ok(&host, "get_issues", json!({})).await;
    // Wait until the prefetch reached the server, then ask for it for real.
    while tracker.requests("/issues/WEB-1") == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let issue = call_ok(&host, "get_issue", json!({"key": "WEB-1"})).await;
    assert_eq!(issue.structured().unwrap()["title"], "first");
    assert_eq!(tracker.requests("/issues/WEB-1"), 1);
    assert_eq!(host.stats().unwrap().joins, 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn prefetches_wait_until_the_real_call_in_flight_is_answered() {
    const SLOW: &str = "/issues/WEB-9/comments";
    let tracker =
        Tracker::start_with_delays(|path| Duration::from_secs(if path == SLOW { 3 } else { 0 })).await;
    let (host, _dir) = tracker.host(jira_on()).await;
    let host = Arc::new(host);
    let slow = tokio::spawn({
        let host = host.clone();
        async move { call_ok(&host, "get_issue_comments", json!({"key": "WEB-9"})).await }
    });
    while tracker.requests(SLOW) == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Its follow-ups are planned while the slow call still runs.
    call_ok(&host, "get_issues", json!({})).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!slow.is_finished());
    assert_eq!(
        tracker.requests("/issues/WEB-1"),
        0,
        "no prefetch reaches the vendor while a real call waits on it"
    );
    slow.await.unwrap();
    host.settle().await;
    assert_eq!(
        tracker.requests("/issues/WEB-1"),
        1,
        "made once the real call was answered"
    );
    call_ok(&host, "get_issue", json!({"key": "WEB-1"})).await;
    assert_eq!(host.stats().unwrap().hits, 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_host_not_switched_on_is_never_prefetched() {
    let tracker = Tracker::start(Duration::ZERO).await;
    let (host, _dir) = tracker.host(Settings::default()).await;
    call_ok(&host, "get_issues", json!({})).await;
    host.settle().await;
    assert_eq!(tracker.server.seen.lock().unwrap().len(), 1, "only the real call");
    assert!(host.stats().unwrap().declined["not_enabled"] >= 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn before_call_stops_a_prefetch_and_after_call_still_runs_on_a_served_one() {
    let dir = tempfile::tempdir().unwrap();
    old_file(dir.path(), "ok.txt", "two words\n");
    old_file(dir.path(), "bad.txt", "a FORBIDDEN word\n");
    let (report, _, _dir) = load(&[("20-text-tools", "text_tools", None)]).await;
    // read → word_count of the file's content, on a host switched on.
    let read = model(json!({"side_effect": "pure", "follow_ups": [
        {"tool": "word_count", "probability": 0.9, "projection": "content", "projection_arg": "text"}
    ]}));
    let word_count = model(json!({"side_effect": "pure", "rate_limit_host": "text.local"}));
    let native = NativeTools::new(Root::new(dir.path()).unwrap(), WebSettings::default()).unwrap();
    let sources = Sources {
        native: Some(Arc::new(native)),
        plugins: report.plugins,
        ..Sources::default()
    };
    let options = Options {
        value_models: [("read".into(), read), ("word_count".into(), word_count)].into(),
        speculation: Settings {
            hosts: vec!["text.local".into()],
            ..Settings::default()
        },
        ..Options::default()
    };
    let host = Toolhost::with_options(sources, options).await.unwrap();

    call_ok(&host, "read", json!({"path": "bad.txt"})).await;
    host.settle().await;
    let stats = host.stats().unwrap();
    assert_eq!((stats.dispatched, stats.declined.get("refused")), (0, Some(&1)));

    call_ok(&host, "read", json!({"path": "ok.txt"})).await;
    host.settle().await;
    assert_eq!(host.stats().unwrap().dispatched, 1);
    let counted = call_ok(&host, "word_count", json!({"text": "two words"})).await;
    assert_eq!(host.stats().unwrap().hits, 1);
    let direct = {
        let off = Options {
            speculation: Settings::off(),
            ..Options::default()
        };
        let plugins = load(&[("20-text-tools", "text_tools", None)]).await.0.plugins;
        let host = Toolhost::with_options(
            Sources {
                plugins,
                ..Sources::default()
            },
            off,
        )
        .await
        .unwrap();
        call_ok(&host, "word_count", json!({"text": "two words"})).await
    };
    assert_eq!(counted.text(), direct.text());
    assert_eq!(
        counted.details, direct.details,
        "after-call ran on the served result"
    );
    assert!(counted.details.is_some());
}

fn model(value: Value) -> ValueModel {
    serde_json::from_value(value).unwrap()
}

/// `toolhost serve` over stdio with `config`, initialised.
fn serve_stdio(config: &Path) -> StdioServe {
    let mut server = StdioServe::spawn(toolhost().arg("--config").arg(config).arg("serve"));
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"},
    }});
    server.initialize(&initialize);
    server
}

/// A tool call over stdio that must succeed.
fn stdio_call(server: &mut StdioServe, id: u64, tool: &str, arguments: Value) -> Value {
    let reply = server.request(id, "tools/call", json!({"name": tool, "arguments": arguments}));
    assert_eq!(reply["result"]["isError"], json!(false), "{reply}");
    reply
}

/// The server stopped by closing its input, as a client does.
fn stop(server: StdioServe) -> std::process::Output {
    let out = server.end();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    out
}

/// A configuration serving `dir`, whose statistics go to `stats_file`.
fn stats_config(dir: &Path, stats_file: &Path) -> std::path::PathBuf {
    let config = dir.join("toolhost.toml");
    std::fs::create_dir_all(dir.join("plugins")).unwrap();
    let text = format!(
        "root = \".\"\nplugins = \"plugins\"\n[speculation]\nstats_file = \"{}\"\n",
        stats_file.display()
    );
    std::fs::write(&config, text).unwrap();
    config
}

/// `toolhost` with `config` and `args`: its standard output.
fn toolhost_with(config: &Path, args: &[&str]) -> String {
    let out = Command::new(toolhost_binary())
        .arg("--config")
        .arg(config)
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn serve_over_stdio_then_stats_reports_the_hit() {
    let dir = files();
    let stats_file = dir.path().join("state/stats.json");
    let config = stats_config(dir.path(), &stats_file);
    let mut server = serve_stdio(&config);
    stdio_call(&mut server, 2, "grep", json!({"pattern": "needle"}));
    // Give the prefetch time to land: a hit, not a join, is asserted below.
    std::thread::sleep(Duration::from_millis(500));
    let read = stdio_call(&mut server, 3, "read", json!({"path": "a.rs"}));
    assert_eq!(read["result"]["structuredContent"]["content"], "fn needle() {}");
    // b.rs is prefetched and never read: wasted when the server stops.
    stdio_call(&mut server, 4, "grep", json!({"pattern": "other"}));
    std::thread::sleep(Duration::from_millis(500));
    let out = stop(server);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("1 hits"), "the log has the figures: {stderr}");

    let recorded: Value = serde_json::from_str(&toolhost_with(&config, &["stats", "--json"])).unwrap();
    assert_eq!(recorded["stats"]["hits"], 1, "{recorded}");
    assert_eq!(recorded["stats"]["dispatched"], 2);
    assert_eq!(recorded["stats"]["wasted"], 1);
    assert_eq!(recorded["stats"]["unserved"], 0);
    let text = toolhost_with(&config, &["stats"]);
    assert!(text.contains("grep -> read #1: 2, 1"), "{text}");
}

/// A link no one declared (an `ls` listing, then a read of a file it
/// listed, twice) is learned, written to the statistics file, resumed by
/// the next server (which writes it again, having seen nothing new) and
/// shown by `tools --explain`.
#[test]
fn a_link_learned_by_one_server_lasts_into_the_next_and_is_explained() {
    let dir = files();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    old_file(dir.path(), "src/c.rs", "fn c() {}\n");
    let stats_file = dir.path().join("stats.json");
    let config = stats_config(dir.path(), &stats_file);
    let mut server = serve_stdio(&config);
    let mut id = 1;
    for (listed, path) in [(".", "b.rs"), ("src", "src/c.rs")] {
        id += 2;
        stdio_call(
            &mut server,
            id,
            "glob",
            json!({"pattern": "*.rs", "path": listed}),
        );
        std::thread::sleep(Duration::from_millis(200));
        stdio_call(&mut server, id + 1, "read", json!({"path": path}));
        std::thread::sleep(Duration::from_millis(200));
    }
    stop(server);
    let learned = |stats: &Value| -> Vec<String> {
        let links = stats["stats"]["learned"].as_array().cloned().unwrap_or_default();
        links
            .iter()
            .filter(|l| l["seen"].as_u64() >= Some(2))
            .map(|l| {
                format!(
                    "{} -> {} [{}]",
                    l["from"].as_str().unwrap(),
                    l["to"].as_str().unwrap(),
                    l["projection"].as_str().unwrap()
                )
            })
            .collect()
    };
    let first: Value = serde_json::from_str(&toolhost_with(&config, &["stats", "--json"])).unwrap();
    let links = learned(&first);
    assert!(
        links.len() == 1 && links[0].starts_with("glob -> read [path ← paths[*]"),
        "{first:#}"
    );

    // The next server makes no call: what it writes is what it resumed.
    stop(serve_stdio(&config));
    let second: Value = serde_json::from_str(&toolhost_with(&config, &["stats", "--json"])).unwrap();
    assert_eq!(learned(&second), learned(&first));
    let explained = toolhost_with(&config, &["tools", "--explain", "read"]);
    assert!(explained.contains(&format!("{}: 2,", links[0])), "{explained}");
}
