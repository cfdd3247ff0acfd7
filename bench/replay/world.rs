//! The backends the replayed agents work against: a source tree on disk
//! behind the native tools with injected latency, and an issue tracker and
//! knowledge base on a loopback HTTP server behind the `tracker-tools`
//! plugin (with the Jira and Confluence enrichers for their value models
//! and projections). Each session owns its own files, issues and pages, so
//! the ground truth a result is checked against is never changed by
//! another session.
//!
//! Latencies are drawn from per-tool ranges by a hash of the call, so the
//! same call costs the same with speculation off and on.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::{Value, json};
use toolhost::Toolhost;
use toolhost::ValueModel;
use toolhost::WebSettings;
use toolhost::internals::{NativeTools, Root};
use toolhost::internals::{Options, Sources};
use toolhost::speculation::Settings;
use toolhost_tests::backend::{backdate, latency, native_latency};
use toolhost_tests::{LoopbackServer, SeenRequest, catalog_bindings, plugin_dir, runtime};

/// Files per session, and words that several of them contain (grep
/// patterns with three or more matching files).
pub const FILES: usize = 12;
pub const WORDS: [&str; 4] = ["alpha", "beta", "gamma", "delta"];
pub const GLOBS: [&str; 4] = ["**/*.rs", "**/mod1*.rs", "**/mod[0-4].rs", "**/*[13579].rs"];
pub const ISSUES: usize = 6;
pub const PAGES: usize = 5;

/// Host names the enrichers' value models are rate-limited under.
pub const JIRA_HOST: &str = "jira.test";
pub const WIKI_HOST: &str = "wiki.test";

#[derive(Default)]
struct Remote {
    titles: BTreeMap<String, String>,
    pages: BTreeMap<String, String>,
}

pub struct World {
    pub root: tempfile::TempDir,
    server: LoopbackServer,
    remote: Arc<Mutex<Remote>>,
    native_calls: Arc<AtomicU64>,
    scale: f64,
    _plugins: tempfile::TempDir,
    plugin_files: PathBuf,
}

fn http_latency(r: &SeenRequest, scale: f64) -> Duration {
    let path = r.path.split('?').next().unwrap_or_default();
    let (lo, hi) = match (r.method.as_str(), path) {
        ("POST", _) => (150, 300),
        (_, "/issues" | "/kb/search") => (200, 400),
        (_, p) if p.ends_with("/comments") => (80, 200),
        (_, p) if p.starts_with("/kb/pages/") => (100, 300),
        _ => (100, 250),
    };
    latency(&(r.method.as_str(), r.path.as_str()), lo, hi, scale)
}

impl World {
    pub async fn new(sessions: usize, scale: f64) -> Result<Self> {
        let root = tempfile::tempdir()?;
        let mut remote = Remote::default();
        for s in 0..sessions {
            let dir = root.path().join(format!("s{s}/src"));
            std::fs::create_dir_all(&dir)?;
            for i in 0..FILES {
                let words: Vec<&str> = WORDS
                    .iter()
                    .enumerate()
                    .filter(|(w, _)| (i + w) % 3 != 0)
                    .map(|(_, w)| *w)
                    .collect();
                let body = format!(
                    "// module {i} of session {s}\nfn f{i}() {{ /* {} */ }}\n",
                    words.join(" ")
                );
                write_old(&dir.join(format!("mod{i}.rs")), &body)?;
            }
            for n in 1..=ISSUES {
                remote
                    .titles
                    .insert(format!("S{s}-{n}"), format!("issue {n} of session {s}"));
            }
            for n in 1..=PAGES {
                remote
                    .pages
                    .insert(format!("s{s}p{n}"), format!("page {n} of session {s}"));
            }
        }
        let remote = Arc::new(Mutex::new(remote));
        let state = remote.clone();
        let server =
            LoopbackServer::start_with_delays(move |r| http_latency(r, scale), move |r| answer(&state, r))
                .await;
        let addr = server.addr;
        let tracker =
            format!("[grants]\nhttp = [\"http://{addr}\"]\n[config]\nbase_url = \"http://{addr}\"\n");
        let jira = format!("[config]\nhost = \"{JIRA_HOST}\"\n[[config.projects]]\nkey = \"S0\"\n");
        let plugins = plugin_dir(&[
            ("10-jira", "jira", Some(&jira)),
            ("11-confluence", "confluence", None),
            ("20-tracker", "tracker_tools", Some(&tracker)),
        ]);
        let plugin_files = plugins.path().to_owned();
        Ok(Self {
            root,
            server,
            remote,
            native_calls: Arc::default(),
            scale,
            _plugins: plugins,
            plugin_files,
        })
    }

    /// A fresh host over these backends, with speculation on or off.
    pub async fn host(&self, speculate: bool) -> Result<Toolhost> {
        let (rt, _logs) = runtime();
        let report = rt.load_dir(&self.plugin_files).await?;
        anyhow::ensure!(report.errors.is_empty(), "plugins: {:?}", report.errors);
        let (calls, scale) = (self.native_calls.clone(), self.scale);
        let native = NativeTools::new(Root::new(self.root.path())?, WebSettings::default())?
            .writable(true)
            .with_latency(Arc::new(move |tool, args| {
                calls.fetch_add(1, Ordering::Relaxed);
                native_latency(tool, args, scale)
            }));
        let tracker = report.plugins.iter().find(|p| &*p.name == "tracker");
        let sources = Sources {
            native: Some(Arc::new(native)),
            bindings: tracker.map(|p| catalog_bindings(p)).unwrap_or_default(),
            plugins: report.plugins,
            ..Sources::default()
        };
        // The tracker plugin owns its tools and, being no enricher, says
        // nothing of them: the user vouches that its reads are reads, behind
        // the host the Jira enricher names; Confluence's models name no
        // host, so the user gives its tools one.
        let reads = |host: &str| -> Result<ValueModel> {
            Ok(serde_json::from_value(
                json!({"side_effect": "read-only", "rate_limit_host": host}),
            )?)
        };
        let (jira, wiki) = (reads(JIRA_HOST)?, reads(WIKI_HOST)?);
        let value_models = [
            ("get_issues", &jira),
            ("get_issue", &jira),
            ("get_issue_comments", &jira),
            ("search_knowledge_base", &wiki),
            ("get_knowledge_base_page", &wiki),
        ]
        .map(|(t, m)| (t.to_owned(), m.clone()))
        .into();
        let speculation = if speculate {
            Settings {
                hosts: vec![JIRA_HOST.into(), WIKI_HOST.into()],
                ..Settings::default()
            }
        } else {
            Settings::off()
        };
        let options = Options {
            value_models,
            speculation,
            ..Options::default()
        };
        Toolhost::with_options(sources, options)
            .await
            .context("building the host")
    }

    /// Calls that reached a backend so far: native executions and HTTP requests.
    pub fn backend_calls(&self) -> u64 {
        self.native_calls.load(Ordering::Relaxed) + self.server.seen.lock().unwrap().len() as u64
    }

    pub fn title(&self, key: &str) -> Option<String> {
        self.remote.lock().unwrap().titles.get(key).cloned()
    }

    pub fn page(&self, id: &str) -> Option<String> {
        self.remote.lock().unwrap().pages.get(id).cloned()
    }

    /// The file's text as `read` shows it: lines joined, no final newline.
    pub fn file(&self, path: &str) -> Option<String> {
        let text = std::fs::read_to_string(self.root.path().join(path)).ok()?;
        Some(text.lines().collect::<Vec<_>>().join("\n"))
    }

    /// Change a file behind the host's back, as the agent's own editor does.
    pub fn edit_behind(&self, path: &str, text: &str) -> Result<()> {
        std::fs::write(self.root.path().join(path), text)?;
        Ok(())
    }
}

/// A file whose stamp the host can trust (not modified a moment ago).
fn write_old(path: &Path, body: &str) -> Result<()> {
    std::fs::write(path, body)?;
    backdate(path)?;
    Ok(())
}

/// The tracker and knowledge-base API `tracker-tools` expects.
fn answer(state: &Mutex<Remote>, r: &SeenRequest) -> (u16, String) {
    let mut remote = state.lock().unwrap();
    let (path, query) = r.path.split_once('?').unwrap_or((&r.path, ""));
    let param = |name: &str| {
        query
            .split('&')
            .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
            .unwrap_or_default()
            .to_owned()
    };
    let body: Value = serde_json::from_str(&r.body).unwrap_or(Value::Null);
    if path == "/issues" {
        let prefix = format!("{}-", param("search"));
        let issues: Vec<Value> = remote
            .titles
            .iter()
            .filter(|(k, _)| k.starts_with(&prefix))
            .map(|(k, t)| json!({"key": k, "title": t}))
            .collect();
        return (200, json!({ "issues": issues }).to_string());
    }
    if path == "/kb/search" {
        let prefix = format!("{}p", param("q").to_lowercase());
        let pages: Vec<Value> = remote
            .pages
            .keys()
            .filter(|id| id.starts_with(&prefix))
            .map(|id| json!({"id": id, "title": id}))
            .collect();
        return (200, json!({ "results": pages }).to_string());
    }
    if let Some(id) = path.strip_prefix("/kb/pages/") {
        if r.method == "POST"
            && let Some(content) = body["content"].as_str()
        {
            remote.pages.insert(id.to_owned(), content.to_owned());
        }
        return match remote.pages.get(id) {
            Some(content) => (200, json!({"id": id, "content": content}).to_string()),
            None => (404, "{}".into()),
        };
    }
    let rest = path.trim_start_matches("/issues/");
    if let Some(key) = rest.strip_suffix("/comments") {
        return (
            200,
            json!({"key": key, "comments": [format!("a comment on {key}")]}).to_string(),
        );
    }
    if r.method == "POST"
        && let Some(title) = body["title"].as_str()
    {
        remote.titles.insert(rest.to_owned(), title.to_owned());
    }
    match remote.titles.get(rest) {
        Some(title) => (200, json!({"key": rest, "title": title}).to_string()),
        None => (404, "{}".into()),
    }
}
