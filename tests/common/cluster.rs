//! A cluster on loopback, for the `cluster` tests and the `cluster` bench:
//! a real `redis-server` (Debian's, installed by `make redis`) on a free
//! port, `toolhost serve --http` replicas sharing it, a round-robin
//! balancer in front of them that sends each HTTP request to the next
//! replica alive, and an issue tracker on loopback whose reads the
//! replicas prefetch (the tracker plugin behind the Jira enricher).

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};

use crate::served::Served;
use crate::{
    CODE_CACHE_VAR, LoopbackServer, catalog_bindings, code_cache, free_port, plugin_dir, runtime,
    toolhost_binary,
};

/// The replicas' shared key (`[cluster] key_env`'s default variable).
pub const KEY_ENV: &str = "TOOLHOST_CLUSTER_KEY";
/// The key every replica of these tests seals what it shares with.
pub const KEY: &str = "a test key, 32 bytes or more, never a real one";

/// A `redis-server` on loopback, without persistence.
pub struct Redis {
    child: Option<Child>,
    pub port: u16,
}

impl Redis {
    pub fn start() -> Result<Self> {
        Self::on(free_port())
    }

    /// On `port`, to bring one back where it was.
    pub fn on(port: u16) -> Result<Self> {
        let child = Command::new("redis-server")
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("cannot start redis-server: run `make redis` first")?;
        let redis = Self {
            child: Some(child),
            port,
        };
        for _ in 0..500 {
            if redis.cli(&["PING"]).is_ok_and(|out| out.trim() == "PONG") {
                return Ok(redis);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        bail!("redis-server on port {port} did not answer PING")
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// What `redis-cli` prints for `args`.
    pub fn cli(&self, args: &[&str]) -> Result<String> {
        let out = Command::new("redis-cli")
            .args(["-p", &self.port.to_string()])
            .args(args)
            .stdin(Stdio::null())
            .output()
            .context("cannot run redis-cli")?;
        if !out.status.success() {
            bail!("redis-cli {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// The keys of the prefetched results of `tool` Redis holds, with
    /// their values as stored.
    pub fn entries(&self, tool: &str) -> Vec<(String, String)> {
        let keys = self
            .cli(&["--scan", "--pattern", &format!("toolhost:p:{tool}:*")])
            .unwrap_or_default();
        keys.lines()
            .filter(|k| !k.is_empty())
            .map(|k| {
                let value = self.cli(&["GET", k]).unwrap_or_default();
                (k.to_owned(), value.trim_end_matches('\n').to_owned())
            })
            .collect()
    }

    /// The key and value of `tool`'s entry whose value holds `text`.
    pub fn entry_with(&self, tool: &str, text: &str) -> (String, String) {
        self.entries(tool)
            .into_iter()
            .find(|(_, value)| value.contains(text))
            .unwrap_or_else(|| panic!("no entry of {tool} holds {text:?}: {:?}", self.entries(tool)))
    }

    /// How many prefetched results Redis holds.
    pub fn prefetches(&self) -> usize {
        self.cli(&["--scan", "--pattern", "toolhost:p:*"])
            .map_or(0, |out| out.lines().filter(|l| !l.is_empty()).count())
    }

    /// Wait until Redis holds `n` prefetched results; panics if it does
    /// not within a minute (the replicas stopped prefetching).
    pub async fn await_prefetches(&self, n: usize) {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while self.prefetches() < n {
            assert!(
                std::time::Instant::now() < deadline,
                "Redis holds {} prefetched results, not {n}, after a minute",
                self.prefetches()
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Kill it (SIGKILL: it goes away as a crashed server does).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.kill();
    }
}

/// An issue tracker on loopback: `GET /issues`, `GET /issues/KEY`,
/// `GET /issues/KEY/comments`, `POST /issues/KEY` (a new title).
pub struct Tracker {
    pub server: LoopbackServer,
    pub titles: Arc<Mutex<std::collections::BTreeMap<String, String>>>,
}

impl Tracker {
    /// With `issues` issues, answering after `delay`.
    pub async fn start(issues: usize, delay: Duration) -> Self {
        let titles: Arc<Mutex<std::collections::BTreeMap<String, String>>> = Arc::new(Mutex::new(
            (1..=issues)
                .map(|i| (format!("WEB-{i}"), format!("title {i}")))
                .collect(),
        ));
        let state = titles.clone();
        let server = LoopbackServer::start(delay, move |r| {
            let mut titles = state.lock().unwrap();
            let path = r.path.split('?').next().unwrap_or_default();
            if path == "/issues" {
                let issues: Vec<Value> = titles.keys().map(|k| json!({"key": k})).collect();
                return (200, json!({ "issues": issues }).to_string());
            }
            let rest = path.trim_start_matches("/issues/");
            if let Some(key) = rest.strip_suffix("/comments") {
                return (200, json!({"key": key, "comments": ["looks good"]}).to_string());
            }
            if r.method == "POST"
                && let Ok(patch) = serde_json::from_str::<Value>(&r.body)
                && let Some(title) = patch["title"].as_str()
            {
                titles.insert(rest.to_owned(), title.to_owned());
            }
            match titles.get(rest) {
                Some(title) => (200, json!({"key": rest, "title": title}).to_string()),
                None => (404, "{}".into()),
            }
        })
        .await;
        Self { server, titles }
    }

    /// `GET` requests the tracker answered, by path.
    pub fn reads(&self) -> std::collections::BTreeMap<String, usize> {
        let mut reads = std::collections::BTreeMap::new();
        for r in self
            .server
            .seen
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r.method == "GET")
        {
            *reads.entry(r.path.clone()).or_default() += 1;
        }
        reads
    }
}

/// What the replicas serve: the tracker plugin and the Jira enricher, with
/// `toolhost.toml` switching speculation on for the tracker's reads.
pub struct Layout {
    pub dir: tempfile::TempDir,
    pub plugins: tempfile::TempDir,
    /// The tracker plugin's name, for `[plugin.NAME]`.
    pub tracker: String,
}

impl Layout {
    /// For `tracker`, sharing `redis` if given.
    pub async fn new(tracker: &Tracker, redis: Option<&Redis>) -> Result<Self> {
        let addr = tracker.server.addr;
        let manifest =
            format!("[grants]\nhttp = [\"http://{addr}\"]\n[config]\nbase_url = \"http://{addr}\"\n");
        let jira = "[config]\nhost = \"jira.test\"\n[[config.projects]]\nkey = \"WEB\"\n";
        let plugins = plugin_dir(&[
            ("10-jira", "jira", Some(jira)),
            ("20-tracker", "tracker_tools", Some(&manifest)),
        ]);
        let (rt, _) = runtime();
        let report = rt.load_dir(plugins.path()).await?;
        if !report.errors.is_empty() {
            bail!("plugins did not load: {:?}", report.errors);
        }
        let mut toml = String::from("cache = false\n[speculation]\nhosts = [\"jira.test\"]\nper_host = 8\n");
        for tool in ["get_issues", "get_issue", "get_issue_comments"] {
            toml.push_str(&format!(
                "[tools.{tool}]\nside_effect = \"read-only\"\nrate_limit_host = \"jira.test\"\n"
            ));
        }
        toml.push_str("[bind]\n");
        for (tool, plugin) in catalog_bindings(&report.plugins[1]) {
            toml.push_str(&format!("{tool} = {}\n", json!(plugin)));
        }
        if let Some(redis) = redis {
            toml.push_str(&format!("[cluster]\nredis = {}\n", json!(redis.url())));
        }
        let dir = tempfile::tempdir()?;
        std::fs::write(dir.path().join("toolhost.toml"), toml)?;
        let tracker = report.plugins[1].name.to_string();
        Ok(Self {
            dir,
            plugins,
            tracker,
        })
    }
}

impl Layout {
    /// One replica: `toolhost serve --http` on loopback with this layout,
    /// and `extra` arguments after `serve`.
    pub fn replica(&self, extra: &[&str]) -> Result<Served> {
        self.replica_with("", extra)
    }

    /// A replica as [`Layout::replica`] starts one, with `toml` added to
    /// its configuration (a replica configured apart from the others).
    pub fn replica_with(&self, toml: &str, extra: &[&str]) -> Result<Served> {
        let mut config = self.dir.path().join("toolhost.toml");
        if !toml.is_empty() {
            let text = std::fs::read_to_string(&config)? + toml;
            config = self.dir.path().join(format!("replica-{}.toml", free_port()));
            std::fs::write(&config, text)?;
        }
        let mut command = Command::new(toolhost_binary());
        command
            .env(KEY_ENV, KEY)
            .env(CODE_CACHE_VAR, code_cache())
            .arg("--config")
            .arg(config)
            .arg("--plugins")
            .arg(self.plugins.path())
            .args(["serve", "--http", "127.0.0.1:0"])
            .args(extra)
            .current_dir(self.dir.path())
            .env("RUST_LOG", "warn");
        Ok(Served::start(command)?)
    }

    /// `n` replicas, as [`Layout::replica`] starts them.
    pub fn replicas(&self, n: usize) -> Result<Vec<Served>> {
        (0..n).map(|_| self.replica(&[])).collect()
    }
}

/// A TCP balancer on loopback: each connection goes to the next backend
/// that accepts it, round robin. A client that opens a connection per
/// request ([`Client`]) so has its requests spread over every replica.
pub struct Balancer {
    pub addr: SocketAddr,
    /// Connections sent to each backend.
    sent: Arc<Vec<AtomicUsize>>,
    accept: tokio::task::AbortHandle,
}

impl Balancer {
    pub async fn start(backends: Vec<SocketAddr>) -> Result<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let next = Arc::new(AtomicUsize::new(0));
        let sent: Arc<Vec<AtomicUsize>> = Arc::new(backends.iter().map(|_| AtomicUsize::new(0)).collect());
        let counts = sent.clone();
        let accept = tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                let (backends, next, counts) = (backends.clone(), next.clone(), counts.clone());
                tokio::spawn(async move {
                    for _ in 0..backends.len() {
                        let i = next.fetch_add(1, Ordering::Relaxed) % backends.len();
                        if let Ok(mut outbound) = tokio::net::TcpStream::connect(backends[i]).await {
                            counts[i].fetch_add(1, Ordering::Relaxed);
                            let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                            return;
                        }
                    }
                });
            }
        })
        .abort_handle();
        Ok(Self { addr, sent, accept })
    }

    /// Connections sent to each backend so far.
    pub fn sent(&self) -> Vec<usize> {
        self.sent.iter().map(|n| n.load(Ordering::Relaxed)).collect()
    }
}

impl Drop for Balancer {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// An MCP client (rmcp, streamable HTTP) that opens a new connection for
/// every request, so that a balancer can send each to another replica.
pub struct Client {
    service: RunningService<RoleClient, ()>,
}

impl Client {
    pub async fn connect(addr: SocketAddr) -> Result<Self> {
        let http = toolhost::internals::http_client::builder()
            .pool_max_idle_per_host(0)
            .build()?;
        let transport = StreamableHttpClientTransport::with_client(
            http,
            StreamableHttpClientTransportConfig::with_uri(format!("http://{addr}/mcp")),
        );
        let service = ().serve(transport).await.with_context(|| format!("cannot connect to {addr}"))?;
        Ok(Self { service })
    }

    pub async fn call(&self, tool: &str, args: Value) -> Result<CallToolResult> {
        let mut params = CallToolRequestParams::new(tool.to_owned());
        params.arguments = args.as_object().cloned();
        let call = self.service.peer().call_tool(params);
        match tokio::time::timeout(crate::load::CALL_LIMIT, call).await {
            Ok(Ok(result)) => Ok(result),
            Ok(Err(e)) => bail!("{tool}: {e}"),
            Err(_) => bail!("{tool}: no answer within {:?}", crate::load::CALL_LIMIT),
        }
    }

    /// [`Client::call`], tried again up to `tries` times on a transport
    /// error (the replica that had it went away).
    pub async fn call_retrying(&self, tool: &str, args: Value, tries: usize) -> Result<CallToolResult> {
        let mut last = None;
        for _ in 0..tries.max(1) {
            match self.call(tool, args.clone()).await {
                Ok(result) => return Ok(result),
                Err(e) => last = Some(e),
            }
        }
        Err(last.expect("tried once"))
    }
}

/// The structured result's `title`, or the text of an error.
pub fn title(result: &CallToolResult) -> String {
    match result.structured_content.as_ref().and_then(|s| s.get("title")) {
        Some(Value::String(title)) => title.clone(),
        _ => format!("{:?}", result.content),
    }
}
