//! Shared setup for the integration tests: where the built guest plugins
//! and the `toolhost` binary are, plugin directories assembled from them
//! and loaded, a runtime whose plugin log is captured, and calls through a
//! host's pipeline.
//!
//! The Rust guest plugins are built from source by this crate's build
//! script (`build.rs`, as `make plugins` does), and the `toolhost` binary
//! by cargo beside the tests ([`toolhost_binary`]), so `cargo test` needs
//! nothing else. What other tests need (the Python venv, plugins in other
//! languages, npm upstreams, Redis) is in [`toolchains`]: without it they
//! skip, unless `TOOLHOST_TEST_ALL=1`.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};
use toolhost::catalog::base_tool;
use toolhost::plugin::{LoadReport, LogLine, Plugin, Runtime, RuntimeOptions};
use toolhost::{CallControl, Toolhost};
use toolhost::{CallOutput, ToolError};

pub mod backend;
pub mod cluster;
pub mod load;
pub mod providers;
pub mod registry;
pub mod served;
pub mod stdio;
pub mod toolchains;
pub mod traces;
pub mod upstream;

/// Serve the MCP server `server` (a fresh copy per session) over
/// streamable HTTP on loopback, for the life of the runtime: its `/mcp` URL.
pub async fn mcp_on_loopback<S>(server: S) -> String
where
    S: rmcp::ServerHandler + Clone + Send + Sync + 'static,
{
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    mcp_on(listener, server)
}

/// [`mcp_on_loopback`] on `listener`, for a server that comes up on an
/// address given out before.
pub fn mcp_on<S>(listener: tokio::net::TcpListener, server: S) -> String
where
    S: rmcp::ServerHandler + Clone + Send + Sync + 'static,
{
    mcp_sessions_on(listener, server).0
}

/// The sessions an MCP server served by [`mcp_sessions_on`] holds: those
/// its clients opened and have not ended (`DELETE`).
pub type McpSessions = Arc<rmcp::transport::streamable_http_server::session::local::LocalSessionManager>;

/// [`mcp_on`], and the sessions the server holds.
pub fn mcp_sessions_on<S>(listener: tokio::net::TcpListener, server: S) -> (String, McpSessions)
where
    S: rmcp::ServerHandler + Clone + Send + Sync + 'static,
{
    use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
    let sessions = McpSessions::default();
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        sessions.clone(),
        StreamableHttpServerConfig::default(),
    );
    let router = axum::Router::new().nest_service("/mcp", service);
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    // As toolhost serves: rmcp writes an answer's stream in pieces, which
    // Nagle's algorithm and the client's delayed ACK would hold back.
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        let _ = tcp.set_nodelay(true);
    });
    tokio::spawn(async move { axum::serve(listener, router).await });
    (url, sessions)
}

/// A free loopback port (bound, then let go).
pub fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    listener.local_addr().expect("address").port()
}

/// The directory holding the built guest components.
pub fn guest_dir() -> PathBuf {
    match std::env::var_os("TOOLHOST_GUEST_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../guest-plugins/target/wasm32-wasip2/release"),
    }
}

/// The built component of guest crate `crate_name`.
pub fn guest(crate_name: &str) -> PathBuf {
    let path = guest_dir().join(format!("{crate_name}.wasm"));
    assert!(
        path.is_file(),
        "{} is missing: this crate's build script builds it, unless TOOLHOST_GUEST_DIR names \
         another directory (then `make plugins` there)",
        path.display()
    );
    path
}

/// A plugin directory: each entry is (file stem, guest crate, manifest text).
pub fn plugin_dir(entries: &[(&str, &str, Option<&str>)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    fill_plugin_dir(dir.path(), entries);
    dir
}

/// Copy plugins into the existing directory `dir`, as [`plugin_dir`] does.
pub fn fill_plugin_dir(dir: &Path, entries: &[(&str, &str, Option<&str>)]) {
    for (stem, crate_name, manifest) in entries {
        std::fs::copy(guest(crate_name), dir.join(format!("{stem}.wasm"))).expect("copy plugin");
        if let Some(text) = manifest {
            std::fs::write(dir.join(format!("{stem}.toml")), text).expect("write manifest");
        }
    }
}

/// The binary under test ([`toolhost_binary`]), without a cache directory
/// or a plugin directory from the environment: its compiled code is kept
/// in [`code_cache`].
pub fn toolhost() -> std::process::Command {
    let mut cmd = std::process::Command::new(toolhost_binary());
    cmd.arg("--no-cache")
        .env_remove("TOOLHOST_PLUGINS")
        .env(CODE_CACHE_VAR, code_cache());
    cmd
}

/// The variable naming the directory `toolhost` keeps compiled plugin
/// code in, whatever its configuration says (`--code-cache`).
pub const CODE_CACHE_VAR: &str = "TOOLHOST_CODE_CACHE";

/// The code cache the tests' runtimes and `toolhost` processes share, in
/// cargo's directory for the tests' files (`target/tmp`): the suite loads
/// the same few plugins hundreds of times, and compiled each (the seven
/// providers: 7 s of CPU) every time. A test of the cache itself, or of
/// compiling, names a directory of its own.
pub fn code_cache() -> PathBuf {
    let (profile, _) = profile_dir();
    profile
        .parent()
        .expect("the profile's directory is in the target directory")
        .join("tmp/toolhost-code-cache")
}

/// The directory of cargo's profile this binary was built in, and whether
/// it is a test's (in `target/PROFILE/deps/`) rather than a bench's (in
/// `target/PROFILE/`).
fn profile_dir() -> (PathBuf, bool) {
    let exe = std::env::current_exe().expect("the running binary's path");
    let dir = exe.parent().expect("a binary is in a directory");
    match dir.file_name() {
        Some(name) if name == "deps" => (
            dir.parent()
                .expect("deps is in the profile's directory")
                .to_owned(),
            true,
        ),
        _ => (dir.to_owned(), false),
    }
}

/// An rmcp client of `toolhost ... serve` over stdio: `command` (the
/// binary under test, with its directory, environment and arguments up to
/// `serve`), its stderr dropped.
pub async fn stdio_client(
    command: tokio::process::Command,
) -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
    use rmcp::ServiceExt;
    let transport = rmcp::transport::TokioChildProcess::builder(command)
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("toolhost serve starts")
        .0;
    ().serve(transport).await.expect("an MCP session over stdio")
}

/// Run `cmd` to its end: its output, stdout and stderr.
///
/// A binary a test has just copied can be refused for a moment as busy
/// (`ETXTBSY`): a child another test forks meanwhile holds the copy's
/// descriptor, opened for writing, until that child execs. So it is tried
/// again, for up to a second.
pub fn run(cmd: &mut std::process::Command) -> (std::process::Output, String, String) {
    let mut tries = 0;
    let out = loop {
        match cmd.output() {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy && tries < 50 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            out => break out.unwrap(),
        }
    };
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    (out, stdout, stderr)
}

/// A sidecar manifest for the bundled `jira` plugin: two priorities, one
/// project with one component.
pub const JIRA_SIDECAR: &str = "[config]\npriorities = [\"Low\", \"High\"]\n[[config.projects]]\nkey = \"WEB\"\ncomponents = [\"checkout\"]\n";

/// `toolhost --config CONFIG --plugins PLUGINS ARGS`, CONFIG written with
/// `toml` first: its output, stdout and stderr.
pub fn run_configured(
    config: &Path,
    plugins: &Path,
    toml: &str,
    args: &[&str],
) -> (std::process::Output, String, String) {
    std::fs::write(config, toml).expect("write the configuration");
    run(toolhost()
        .arg("--config")
        .arg(config)
        .arg("--plugins")
        .arg(plugins)
        .args(args))
}

/// Run `cmd` for at most `limit`: its status (`None` if it was still
/// running and was killed), stdout and stderr. A command that should end by
/// itself and does not fails its test instead of hanging it.
pub fn run_within(
    cmd: &mut std::process::Command,
    limit: std::time::Duration,
) -> (Option<std::process::ExitStatus>, String, String) {
    use std::io::Read;
    use std::process::Stdio;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read both pipes as they fill, or a chatty child blocks on a full one.
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut text = Vec::new();
            let _ = pipe.read_to_end(&mut text);
            String::from_utf8_lossy(&text).into_owned()
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let deadline = std::time::Instant::now() + limit;
    // Every way out reaps the child (clippy's `zombie_processes`).
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if std::time::Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    (status, stdout.join().unwrap(), stderr.join().unwrap())
}

/// A plugin directory of `entries` (as [`plugin_dir`]) loaded by a fresh
/// [`runtime`], every plugin of it: a load error fails the test, naming
/// the plugin. The directory lives as long as the returned handle.
pub async fn load(entries: &[(&str, &str, Option<&str>)]) -> (LoadReport, Logs, tempfile::TempDir) {
    let dir = plugin_dir(entries);
    let (runtime, logs) = runtime();
    let report = runtime
        .load_dir(dir.path())
        .await
        .expect("read the plugin directory");
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    (report, logs, dir)
}

/// A test's JSON object as the argument map the host takes.
pub fn args(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("test arguments must be a JSON object, not {other}"),
    }
}

/// One call through `host`'s pipeline; an error as the tool or the
/// pipeline said it.
pub async fn call(host: &Toolhost, tool: &str, args: Value) -> Result<CallOutput, ToolError> {
    host.call_tool(tool, args, &CallControl::new("t"))
        .await
        .map_err(|e| e.error)
}

/// One call through `host`'s pipeline that must reach execution (its
/// result may still be an error result).
pub async fn call_ok(host: &Toolhost, tool: &str, args: Value) -> CallOutput {
    call(host, tool, args)
        .await
        .unwrap_or_else(|e| panic!("{tool}: {e:?}"))
}

/// Every text block of `result`, joined as a client joins them: with
/// nothing between.
pub fn joined_text(result: &CallOutput) -> String {
    result
        .content
        .iter()
        .map(|b| match b {
            toolhost::Block::Text(t) => t.text.as_str(),
            _ => "",
        })
        .collect()
}

/// The body of the answer to `request`, which must be answered.
pub async fn body_of(request: reqwest::RequestBuilder) -> String {
    request.send().await.unwrap().text().await.unwrap()
}

/// `[bind]` of every base-catalog tool `plugin` lists to it: a catalog name
/// is served only through a binding (see `toolhost::ownership`).
pub fn catalog_bindings(plugin: &Plugin) -> std::collections::BTreeMap<String, String> {
    plugin
        .tools
        .iter()
        .filter(|t| base_tool(&t.name).is_some())
        .map(|t| (t.name.clone(), plugin.name.to_string()))
        .collect()
}

/// Plugin log lines captured by a test runtime.
#[derive(Clone, Default)]
pub struct Logs(Arc<Mutex<Vec<LogLine>>>);

impl Logs {
    pub fn lines(&self) -> Vec<LogLine> {
        self.0.lock().unwrap().clone()
    }

    /// Whether `plugin` logged a line on `stream` containing `text`.
    pub fn has(&self, plugin: &str, stream: &str, text: &str) -> bool {
        self.lines()
            .iter()
            .any(|l| &*l.plugin == plugin && l.stream == stream && l.message.contains(text))
    }
}

/// A runtime whose plugin log is captured, its compiled code kept in
/// [`code_cache`].
pub fn runtime() -> (Runtime, Logs) {
    runtime_with_cache(Some(code_cache()))
}

pub fn runtime_with_cache(cache_dir: Option<PathBuf>) -> (Runtime, Logs) {
    let logs = Logs::default();
    let sink = logs.0.clone();
    let runtime = Runtime::new(RuntimeOptions {
        cache_dir,
        log: Arc::new(move |line| sink.lock().unwrap().push(line)),
        ..RuntimeOptions::default()
    })
    .expect("runtime");
    (runtime, logs)
}

/// A request seen by a [`LoopbackServer`].
#[derive(Debug, Clone)]
pub struct SeenRequest {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
    /// The body as sent, for a binary one (`body` is it read as UTF-8).
    pub raw: Vec<u8>,
}

/// A tiny HTTP/1.1 server on loopback, for plugins granted HTTP. Each
/// request gets `handler`'s (status, JSON body) after `delay`. It counts
/// the requests open (received, not yet answered), the most open at once,
/// and those whose client went away before their answer.
pub struct LoopbackServer {
    pub addr: std::net::SocketAddr,
    pub seen: Arc<Mutex<Vec<SeenRequest>>>,
    open: Arc<OpenRequests>,
    accept: tokio::task::AbortHandle,
}

#[derive(Default)]
struct OpenRequests {
    now: std::sync::atomic::AtomicUsize,
    most: std::sync::atomic::AtomicUsize,
    abandoned: std::sync::atomic::AtomicUsize,
}

/// One request open, from its last header until it is answered or its
/// client goes away.
struct Open(Arc<OpenRequests>);

impl Open {
    fn enter(counts: &Arc<OpenRequests>) -> Self {
        use std::sync::atomic::Ordering::SeqCst;
        let now = counts.now.fetch_add(1, SeqCst) + 1;
        counts.most.fetch_max(now, SeqCst);
        Self(counts.clone())
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.0.now.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Resolves when the client closes the connection (an HTTP/1.1 client sends
/// nothing more while it waits for its answer).
async fn client_gone(reader: &mut (impl tokio::io::AsyncRead + Unpin)) {
    use tokio::io::AsyncReadExt;
    match reader.read(&mut [0; 1]).await {
        Ok(0) | Err(_) => {}
        Ok(_) => std::future::pending().await,
    }
}

impl LoopbackServer {
    pub async fn start(
        delay: std::time::Duration,
        handler: impl Fn(&SeenRequest) -> (u16, String) + Send + Sync + 'static,
    ) -> Self {
        Self::start_with_delays(move |_| delay, handler).await
    }

    /// Like [`LoopbackServer::start`], with a delay chosen per request.
    pub async fn start_with_delays(
        delay: impl Fn(&SeenRequest) -> std::time::Duration + Send + Sync + 'static,
        handler: impl Fn(&SeenRequest) -> (u16, String) + Send + Sync + 'static,
    ) -> Self {
        Self::serve(delay, move |r| {
            let (status, body) = handler(r);
            (status, Vec::new(), body.into_bytes())
        })
        .await
    }

    /// Like [`LoopbackServer::start`], answering with headers of the
    /// handler's choice too: (status, headers, body).
    pub async fn start_with_headers(
        handler: impl Fn(&SeenRequest) -> (u16, Vec<(String, String)>, String) + Send + Sync + 'static,
    ) -> Self {
        Self::start_with_bytes(move |r| {
            let (status, headers, body) = handler(r);
            (status, headers, body.into_bytes())
        })
        .await
    }

    /// Like [`LoopbackServer::start_with_headers`], with a delay chosen per
    /// request.
    pub async fn start_with_headers_and_delays(
        delay: impl Fn(&SeenRequest) -> std::time::Duration + Send + Sync + 'static,
        handler: impl Fn(&SeenRequest) -> (u16, Vec<(String, String)>, String) + Send + Sync + 'static,
    ) -> Self {
        Self::serve(delay, move |r| {
            let (status, headers, body) = handler(r);
            (status, headers, body.into_bytes())
        })
        .await
    }

    /// Like [`LoopbackServer::start_with_headers`], with a body of any bytes
    /// (a compressed one).
    pub async fn start_with_bytes(
        handler: impl Fn(&SeenRequest) -> (u16, Vec<(String, String)>, Vec<u8>) + Send + Sync + 'static,
    ) -> Self {
        Self::serve(|_| std::time::Duration::ZERO, handler).await
    }

    async fn serve(
        delay: impl Fn(&SeenRequest) -> std::time::Duration + Send + Sync + 'static,
        handler: impl Fn(&SeenRequest) -> (u16, Vec<(String, String)>, Vec<u8>) + Send + Sync + 'static,
    ) -> Self {
        use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind loopback");
        let addr = listener.local_addr().unwrap();
        let seen: Arc<Mutex<Vec<SeenRequest>>> = Arc::default();
        let open: Arc<OpenRequests> = Arc::default();
        let (log, handler, delay, counts) = (seen.clone(), Arc::new(handler), Arc::new(delay), open.clone());
        let accept = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (log, handler, delay, counts) =
                    (log.clone(), handler.clone(), delay.clone(), counts.clone());
                tokio::spawn(async move {
                    let mut reader = BufReader::new(stream);
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).await.unwrap_or(0) == 0 {
                            return;
                        }
                        let mut parts = line.split_whitespace();
                        let (method, path) = (
                            parts.next().unwrap_or("").to_owned(),
                            parts.next().unwrap_or("").to_owned(),
                        );
                        let mut headers = Vec::new();
                        loop {
                            let mut h = String::new();
                            reader.read_line(&mut h).await.unwrap_or(0);
                            let h = h.trim_end();
                            if h.is_empty() {
                                break;
                            }
                            if let Some((k, v)) = h.split_once(':') {
                                headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
                            }
                        }
                        let len = headers
                            .iter()
                            .find(|(k, _)| k == "content-length")
                            .and_then(|(_, v)| v.parse().ok())
                            .unwrap_or(0);
                        let mut body = vec![0; len];
                        reader.read_exact(&mut body).await.ok();
                        let request = SeenRequest {
                            method,
                            path,
                            headers,
                            body: String::from_utf8_lossy(&body).into_owned(),
                            raw: body,
                        };
                        log.lock().unwrap().push(request.clone());
                        let open = Open::enter(&counts);
                        tokio::select! {
                            () = tokio::time::sleep(delay(&request)) => {}
                            () = client_gone(&mut reader) => {
                                counts.abandoned.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                                return;
                            }
                        }
                        drop(open);
                        let (status, headers, body) = handler(&request);
                        // JSON unless the handler says what it answers.
                        let typed = headers
                            .iter()
                            .any(|(k, _)| k.eq_ignore_ascii_case("content-type"));
                        let json = if typed {
                            ""
                        } else {
                            "content-type: application/json\r\n"
                        };
                        let headers: String = headers.iter().map(|(k, v)| format!("{k}: {v}\r\n")).collect();
                        let head = format!(
                            "HTTP/1.1 {status} X\r\n{json}{headers}content-length: {}\r\n\r\n",
                            body.len()
                        );
                        let response = [head.into_bytes(), body].concat();
                        if reader.get_mut().write_all(&response).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        Self {
            addr,
            seen,
            open,
            accept: accept.abort_handle(),
        }
    }

    /// The most requests that were open at once.
    pub fn most_open(&self) -> usize {
        self.open.most.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Requests whose client went away before their answer.
    pub fn abandoned(&self) -> usize {
        self.open.abandoned.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Wait until no request is open, within `limit`: false if some still
    /// are then.
    pub async fn until_none_open(&self, limit: std::time::Duration) -> bool {
        let idle = async {
            while self.open.now.load(std::sync::atomic::Ordering::SeqCst) > 0 {
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
        };
        tokio::time::timeout(limit, idle).await.is_ok()
    }

    /// Stop listening: new connections are refused from now on (ones
    /// already open are served until their client closes them).
    pub fn stop(&self) {
        self.accept.abort();
    }
}

/// The languages the reference enricher is written in, as in
/// `build/reference/reference-LANG.wasm`.
pub const REFERENCE_LANGS: [&str; 5] = ["rust", "js", "py", "c", "go"];

/// The built reference enricher in `lang` (with its manifest beside it),
/// copied there by `make lang-plugins`.
pub fn reference(lang: &str) -> PathBuf {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../build/reference/reference-{lang}.wasm"));
    assert!(
        path.is_file() && path.with_extension("toml").is_file(),
        "{} (or its .toml) is missing: run `make lang-plugins` first",
        path.display()
    );
    path
}

/// A built plugin in another language, copied to `build/plugins-lang/` by
/// `make lang-plugins`.
pub fn lang_plugin(stem: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../build/plugins-lang/{stem}.wasm"));
    assert!(
        path.is_file(),
        "{} is missing: run `make lang-plugins` first",
        path.display()
    );
    path
}

/// A Python MCP driver script under `tests/mcp/`: the Python interpreter of
/// the Makefile's venv with the script and the release `toolhost` as
/// `--toolhost`. Missing pieces fail with the `make` target that builds them.
pub fn python_driver(script: &str) -> std::process::Command {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let need = |path: PathBuf, make: &str| {
        assert!(
            path.exists(),
            "{} is missing: run `make {make}` first",
            path.display()
        );
        path
    };
    let mut command = std::process::Command::new(need(repo.join("build/venv/bin/python"), "venv"));
    command
        .arg(repo.join("tests/mcp").join(script))
        .arg("--toolhost")
        .arg(toolhost_binary())
        .env(CODE_CACHE_VAR, code_cache());
    command
}

/// The `toolhost` binary the tests run: `toolhost-under-test`, which cargo
/// builds from the command line's own `main.rs` for the profile under test
/// (an integration test runs from `target/PROFILE/deps/`, the binary is in
/// `target/PROFILE/`); for a bench binary (in `target/release/`), the
/// `toolhost` that `make host` builds beside it.
pub fn toolhost_binary() -> PathBuf {
    let path = match profile_dir() {
        (profile, true) => profile.join("toolhost-under-test"),
        (profile, false) => profile.join("toolhost"),
    };
    assert!(
        path.is_file(),
        "{} is missing: build it with `cargo test` (tests) or `make host` (benches)",
        path.display()
    );
    path
}

/// The reference MCP server `@modelcontextprotocol/server-everything`, as
/// installed by `make upstream`.
pub fn everything_server() -> PathBuf {
    npm_server("server-everything")
}

/// The reference MCP server `@modelcontextprotocol/server-filesystem`, which
/// allows its client's roots, as installed by `make upstream`.
pub fn filesystem_server() -> PathBuf {
    npm_server("server-filesystem")
}

/// The script of the MCP server `@modelcontextprotocol/NAME`.
fn npm_server(name: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/upstream/node_modules/@modelcontextprotocol")
        .join(name)
        .join("dist/index.js");
    assert!(
        path.exists(),
        "{} is missing: run `make upstream` first",
        path.display()
    );
    path
}

/// Run a driver and check it ended with `ok: LABEL`, showing its output if not.
pub fn expect_driver_ok(command: &mut std::process::Command, label: &str) {
    let out = command.output().expect("run the Python driver");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "driver {label} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains(&format!("ok: {label}")), "{stdout}");
}

/// A component that takes Cranelift's register allocator minutes to compile,
/// written to `path`: a valid enricher of contract 0.2 (every export a
/// stub, as `wasm-tools component embed --dummy` makes them) with one more
/// function, a loop that keeps 40,000 locals live across its back edge.
/// 1.9 MB; still compiling after ten minutes on a 2-core machine. Built
/// with the venv's `wasm-tools` (`make venv`).
pub fn compile_bomb(path: &Path) {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let (wasm_tools, wit) = (repo.join("build/venv/bin/wasm-tools"), repo.join("wit/0.2"));
    let dir = tempfile::tempdir().unwrap();
    // In `dir`, where the files between the steps are.
    let step = |args: &[&str]| {
        let (out, _, stderr) = run(std::process::Command::new(&wasm_tools)
            .current_dir(dir.path())
            .args(args));
        assert!(out.status.success(), "wasm-tools {args:?}: {stderr}");
        out.stdout
    };
    let wit = wit.to_str().expect("a UTF-8 path");
    step(&[
        "component",
        "embed",
        "--dummy",
        wit,
        "-w",
        "enricher-plugin",
        "-o",
        "dummy.wasm",
    ]);
    let module = String::from_utf8(step(&["print", "dummy.wasm"])).unwrap();
    const LOCALS: usize = 40_000;
    let mut body = String::new();
    for round in 0..4 {
        for i in 0..LOCALS {
            let (a, b) = ((i * 7 + round) % LOCALS + 1, (i * 13 + round) % LOCALS + 1);
            body.push_str(&format!(
                "local.get {a} local.get {} i32.add local.set {b}\n",
                i + 1
            ));
        }
    }
    let function = format!(
        "(func (param i32) (result i32) (local {}) (loop $again {body} local.get 0 br_if $again) local.get 1)",
        "i32 ".repeat(LOCALS)
    );
    let module = module
        .trim_end()
        .strip_suffix(')')
        .expect("a module ends with `)`");
    std::fs::write(dir.path().join("bomb.wat"), format!("{module}{function})\n")).unwrap();
    step(&["parse", "bomb.wat", "-o", "bomb.wasm"]);
    step(&[
        "component",
        "new",
        "bomb.wasm",
        "-o",
        path.to_str().expect("a UTF-8 path"),
    ]);
}

/// The host's log lines (`tracing`, at debug and above, without colour),
/// as this thread writes them until the guard drops: a test on a
/// single-threaded runtime sees those of every task it spawns.
pub fn capture_log() -> (Arc<Mutex<Vec<u8>>>, tracing::subscriber::DefaultGuard) {
    #[derive(Clone)]
    struct Into(Arc<Mutex<Vec<u8>>>);
    impl std::io::Write for Into {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let written = Arc::new(Mutex::new(Vec::new()));
    let into = Into(written.clone());
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_ansi(false)
        .with_writer(move || into.clone())
        .finish();
    (written, tracing::subscriber::set_default(subscriber))
}
