//! Attacks on speculation trust, by `fixture_attack_trust` (plain
//! wit-bindgen, see its module doc): a victim plugin owning tools on a
//! loopback server, and an attacking enricher claiming their category that
//! lies about them. Each test would see the host call a tool ahead of time
//! that it must not (a POST to the victim's server, a host outside the
//! victim's grants, a stale result) if the attacker's claim were believed.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use toolhost::Toolhost;
use toolhost::internals::{Options, Sources};
use toolhost::speculation::Settings;
use toolhost_tests::{LoopbackServer, call_ok, load};

/// The victim's backend: `/list` and `/issues` list three items, `/item/ID`
/// says whether ID was deleted by a `POST /delete/ID`.
struct Backend {
    server: LoopbackServer,
}

impl Backend {
    async fn start(delay: Duration) -> Self {
        let deleted: Arc<Mutex<BTreeSet<String>>> = Arc::default();
        let server = LoopbackServer::start(delay, move |r| {
            let mut deleted = deleted.lock().unwrap();
            let body = match (r.method.as_str(), r.path.as_str()) {
                (_, "/list") => json!({"items": [{"id": "1"}, {"id": "2"}, {"id": "3"}]}),
                (_, "/issues") => json!({"issues": [{"key": "WEB-1"}, {"key": "WEB-2"}]}),
                ("POST", p) if p.starts_with("/delete/") => {
                    deleted.insert(p["/delete/".len()..].to_owned());
                    json!({"ok": true})
                }
                (_, p) if p.starts_with("/item/") => {
                    let id = &p["/item/".len()..];
                    json!({"id": id, "deleted": deleted.contains(id)})
                }
                (_, p) => json!({"path": p}),
            };
            (200, body.to_string())
        })
        .await;
        Self { server }
    }

    fn addr(&self) -> String {
        self.server.addr.to_string()
    }

    /// Requests seen, as `METHOD /path`.
    fn seen(&self) -> Vec<String> {
        let seen = self.server.seen.lock().unwrap();
        seen.iter().map(|r| format!("{} {}", r.method, r.path)).collect()
    }

    fn posts(&self) -> Vec<String> {
        self.seen()
            .into_iter()
            .filter(|r| r.starts_with("POST"))
            .collect()
    }

    fn count(&self, request: &str) -> usize {
        self.seen().iter().filter(|r| *r == request).count()
    }
}

/// How one test sets the two plugins up.
struct Setup<'a> {
    /// The attacker's `attack` (`None`: no attacker).
    attack: Option<&'a str>,
    /// `claim_host` of the victim and of the attacker.
    victim_host: Option<&'a str>,
    attacker_host: Option<&'a str>,
    /// Base-catalog tools bound to the victim.
    bind: &'a [&'a str],
    speculation: Settings,
}

impl Default for Setup<'_> {
    fn default() -> Self {
        Self {
            attack: None,
            victim_host: Some("127.0.0.1"),
            attacker_host: Some("127.0.0.1"),
            bind: &[],
            speculation: on(&["127.0.0.1"]),
        }
    }
}

fn on(hosts: &[&str]) -> Settings {
    Settings {
        hosts: hosts.iter().map(|h| (*h).to_owned()).collect(),
        per_host: 8,
        ..Settings::default()
    }
}

fn claim(host: Option<&str>) -> String {
    host.map(|h| format!("claim_host = \"{h}\"\n"))
        .unwrap_or_default()
}

async fn host(backend: &Backend, setup: Setup<'_>) -> (Toolhost, tempfile::TempDir) {
    let addr = backend.addr();
    let catalog = !setup.bind.is_empty();
    let victim = format!(
        "[grants]\nhttp = [\"http://{addr}\"]\n[config]\nrole = \"victim\"\nbase_url = \"http://{addr}\"\ncatalog_tools = {catalog}\n{}",
        claim(setup.victim_host)
    );
    let attacker = setup.attack.map(|attack| {
        format!(
            "[config]\nrole = \"attack\"\nattack = \"{attack}\"\ncategories = [\"attack_zone\", \"issue_tracker\"]\n{}",
            claim(setup.attacker_host)
        )
    });
    let mut entries = vec![("10-victim", "fixture_attack_trust", Some(victim.as_str()))];
    if let Some(attacker) = &attacker {
        entries.push(("20-attack", "fixture_attack_trust", Some(attacker.as_str())));
    }
    let (report, _, dir) = load(&entries).await;
    let bindings: BTreeMap<String, String> = setup
        .bind
        .iter()
        .map(|t| ((*t).to_owned(), "victim".to_owned()))
        .collect();
    let sources = Sources {
        plugins: report.plugins,
        bindings,
        ..Sources::default()
    };
    let options = Options {
        speculation: setup.speculation,
        ..Options::default()
    };
    (Toolhost::with_options(sources, options).await.unwrap(), dir)
}

/// The claims the host refused, as (plugin, tool, what).
fn refused(host: &Toolhost) -> Vec<(String, String, String)> {
    host.value_models()
        .refused()
        .iter()
        .map(|r| (r.plugin.clone(), r.tool.clone(), r.what.clone()))
        .collect()
}

fn has_refusal(host: &Toolhost, plugin: &str, tool: &str, text: &str) -> bool {
    refused(host)
        .iter()
        .any(|(p, t, w)| p == plugin && t == tool && w.contains(text))
}

#[tokio::test(flavor = "multi_thread")]
async fn the_owners_read_only_tools_are_still_prefetched() {
    let backend = Backend::start(Duration::ZERO).await;
    let (host, _dir) = host(&backend, Setup::default()).await;
    call_ok(&host, "v_list", json!({})).await;
    host.settle().await;
    assert_eq!(backend.count("GET /item/1"), 1, "{:?}", backend.seen());
    let item = call_ok(&host, "v_get", json!({"id": "1"})).await;
    assert_eq!(item.structured().unwrap()["id"], "1");
    assert_eq!(backend.count("GET /item/1"), 1, "served from the prefetch");
    assert!(refused(&host).is_empty(), "{:?}", refused(&host));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_enricher_cannot_declare_another_plugins_mutating_tool_pure() {
    let backend = Backend::start(Duration::ZERO).await;
    let setup = Setup {
        attack: Some("pure"),
        ..Setup::default()
    };
    let (host, _dir) = host(&backend, setup).await;
    call_ok(&host, "v_list", json!({})).await;
    host.settle().await;
    assert_eq!(
        backend.posts(),
        Vec::<String>::new(),
        "v_delete was called ahead of time"
    );
    assert!(has_refusal(
        &host,
        "attack",
        "v_delete",
        "side effect `pure` refused"
    ));
    assert!(has_refusal(
        &host,
        "attack",
        "v_list",
        "link to `v_delete` dropped"
    ));
    let model = host.value_models();
    assert!(!model.get("v_delete").unwrap().is_speculatable());
}

#[tokio::test(flavor = "multi_thread")]
async fn an_enricher_cannot_override_the_owners_speculate_false() {
    let backend = Backend::start(Duration::ZERO).await;
    let setup = Setup {
        attack: Some("speculate"),
        ..Setup::default()
    };
    let (host, _dir) = host(&backend, setup).await;
    call_ok(&host, "v_list", json!({})).await;
    host.settle().await;
    let quota: Vec<String> = backend
        .seen()
        .into_iter()
        .filter(|r| r.contains("/quota/"))
        .collect();
    assert_eq!(quota, Vec::<String>::new(), "the owner said speculate = false");
    assert!(has_refusal(
        &host,
        "attack",
        "v_quota",
        "`speculate = true` refused"
    ));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_enricher_cannot_declare_a_tool_its_owner_left_undeclared_read_only() {
    let backend = Backend::start(Duration::ZERO).await;
    let setup = Setup {
        attack: Some("undeclared"),
        ..Setup::default()
    };
    let (host, _dir) = host(&backend, setup).await;
    call_ok(&host, "v_list", json!({})).await;
    host.settle().await;
    assert_eq!(backend.posts(), Vec::<String>::new());
    assert!(has_refusal(
        &host,
        "attack",
        "v_undeclared",
        "less conservative than `indeterminate`"
    ));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_enricher_cannot_make_a_base_catalog_write_read_only() {
    let backend = Backend::start(Duration::ZERO).await;
    let setup = Setup {
        attack: Some("catalog"),
        bind: &["get_issues", "update_issue"],
        ..Setup::default()
    };
    let (host, _dir) = host(&backend, setup).await;
    call_ok(&host, "get_issues", json!({})).await;
    host.settle().await;
    assert_eq!(
        backend.posts(),
        Vec::<String>::new(),
        "update_issue was called ahead of time"
    );
    assert!(has_refusal(
        &host,
        "attack",
        "update_issue",
        "less conservative than `mutates-external`"
    ));
    assert!(has_refusal(
        &host,
        "attack",
        "update_issue",
        "`speculate = true` refused"
    ));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_enricher_cannot_narrow_what_a_write_invalidates() {
    let backend = Backend::start(Duration::ZERO).await;
    let setup = Setup {
        attack: Some("invalidates"),
        ..Setup::default()
    };
    let (host, _dir) = host(&backend, setup).await;
    call_ok(&host, "v_list", json!({})).await;
    host.settle().await;
    assert_eq!(backend.count("GET /item/1"), 1, "prefetched");
    call_ok(&host, "v_delete", json!({"id": "1"})).await;
    let item = call_ok(&host, "v_get", json!({"id": "1"})).await;
    assert_eq!(
        item.structured().unwrap()["deleted"],
        true,
        "a result from before the write was served"
    );
}

/// The victim claims no host; the attacker's claim is the only one.
async fn false_host(attack: &str) -> (Backend, Toolhost, tempfile::TempDir) {
    let backend = Backend::start(Duration::ZERO).await;
    let setup = Setup {
        attack: Some(attack),
        victim_host: None,
        attacker_host: None,
        speculation: on(&["api.github.com"]),
        ..Setup::default()
    };
    let (host, dir) = host(&backend, setup).await;
    call_ok(&host, "v_list", json!({})).await;
    host.settle().await;
    (backend, host, dir)
}

/// Only the list call reached the backend: its follow-up, claimed under a
/// host the plugin is not granted, was declined as `not_granted`.
fn refused_as_not_granted(backend: &Backend, host: &Toolhost) {
    assert_eq!(
        backend.seen(),
        ["GET /list"],
        "v_get was prefetched under a false host"
    );
    let declined = host.stats().unwrap().declined.get("not_granted").copied();
    assert!(
        declined.is_some_and(|n| n >= 1),
        "declined as not granted: {declined:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rate_limit_host_in_an_enrichers_value_model_must_be_granted() {
    let (backend, host, _dir) = false_host("model-host").await;
    refused_as_not_granted(&backend, &host);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rate_limit_host_answered_by_an_enricher_must_be_granted() {
    let (backend, host, _dir) = false_host("export-host").await;
    refused_as_not_granted(&backend, &host);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_owner_cannot_claim_a_host_it_is_not_granted() {
    let backend = Backend::start(Duration::ZERO).await;
    let setup = Setup {
        victim_host: Some("api.github.com"),
        speculation: on(&["api.github.com"]),
        ..Setup::default()
    };
    let (host, _dir) = host(&backend, setup).await;
    call_ok(&host, "v_list", json!({})).await;
    host.settle().await;
    refused_as_not_granted(&backend, &host);
}

#[tokio::test(flavor = "multi_thread")]
async fn spellings_of_one_host_share_its_per_host_cap() {
    // Slow answers: the first prefetch is still running when the next come.
    let backend = Backend::start(Duration::from_millis(400)).await;
    let setup = Setup {
        attack: Some("rotate-host"),
        speculation: Settings {
            per_host: 1,
            ..on(&["*"])
        },
        ..Setup::default()
    };
    let (host, _dir) = host(&backend, setup).await;
    call_ok(&host, "v_list", json!({})).await;
    host.settle().await;
    let stats = host.stats().unwrap();
    assert_eq!(
        (stats.dispatched, stats.declined.get("capped")),
        (1, Some(&2)),
        "127.0.0.1:1, :2 and :3 are one host: {stats:?}"
    );
    assert_eq!(stats.declined.get("not_granted"), None);
}
