//! The HTTP front of `serve --http` in-process, on a loopback port, for
//! the tests that attack it over real HTTP (`sessions`, `http_fuzz`): the
//! native tools over a temporary root, no authorization. The host itself
//! ([`native_host`]) serves the stdio fuzz too.

use std::sync::{Arc, PoisonError};
use std::time::Duration;

use serde_json::{Value, json};

use super::connections::{self, Bounds};
use super::sessions::CappedSessions;
use super::{McpServer, Sessions, http_router};
use crate::mcp::auth::{AuthConfig, HttpAccess};
use crate::pipeline::{Sources, Toolhost};
use crate::tools::{NativeTools, Root, WebSettings};

/// A host serving the native tools alone, read-only, over the crate's
/// `testdata/root` (which holds `a.txt`). A directory of the source tree,
/// not a temporary one: the fuzz tests keep their host in a static, which
/// is never dropped, and each run left a temporary root behind.
pub(super) async fn native_host() -> Toolhost {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/root");
    let native = NativeTools::new(Root::new(&root).unwrap(), WebSettings::default()).unwrap();
    Toolhost::new(Sources {
        native: Some(Arc::new(native)),
        ..Sources::default()
    })
    .await
    .unwrap()
}

/// The JSON-RPC message of a POST's answer: its JSON body, or the message
/// of its event stream.
pub(super) fn answer_of(body: &str) -> Option<Value> {
    std::iter::once(body)
        .chain(body.lines().filter_map(|l| l.strip_prefix("data:")))
        .find_map(|text| serde_json::from_str::<Value>(text.trim()).ok())
        .filter(|v| v.get("jsonrpc").is_some())
}

/// How long one answer may take; only a dead or stuck server takes it.
pub(super) const ANSWER: Duration = Duration::from_secs(10);

/// A running front and the state the tests look into.
pub(super) struct Front {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// `127.0.0.1:PORT`.
    pub addr: std::net::SocketAddr,
    /// The sessions that sent `initialized`, as the server keeps them.
    pub initialized: Sessions,
    /// rmcp's sessions, counted.
    pub sessions: Arc<CappedSessions>,
    client: reqwest::Client,
}

impl Front {
    /// Serve on `127.0.0.1:0` until the runtime ends, within the bounds
    /// `serve --http` has.
    pub async fn start() -> Self {
        Self::bounded(Bounds::for_this_process()).await
    }

    /// The same, within `bounds`.
    pub async fn bounded(bounds: Bounds) -> Self {
        Self::serving(bounds, std::future::pending()).await.0
    }

    /// The same, until `shutdown` completes; and the serving task.
    pub async fn serving(
        bounds: Bounds,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> (Self, tokio::task::JoinHandle<()>) {
        let host = Arc::new(native_host().await);
        let server = McpServer::new(host.clone(), Default::default());
        let initialized = server.sessions.clone();
        let sessions = CappedSessions::new(super::wire::executions(&host));
        let addr = "127.0.0.1:0".parse().unwrap();
        let access = HttpAccess::new(&AuthConfig::default(), addr, false)
            .await
            .unwrap();
        let drain = connections::Drain::default();
        let router = http_router(server, &access, false, sessions.clone(), &drain);
        let listener = tokio::net::TcpListener::bind(addr).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let served = tokio::spawn(connections::serve(listener, router, bounds, drain, shutdown));
        let front = Self {
            base: format!("http://{addr}"),
            addr,
            initialized,
            sessions,
            client: crate::http_client::builder().timeout(ANSWER).build().unwrap(),
        };
        (front, served)
    }

    /// A request to `path` of the front.
    pub fn request(&self, method: http::Method, path: &str) -> reqwest::RequestBuilder {
        self.client.request(method, format!("{}{path}", self.base))
    }

    /// POST one JSON-RPC message to `/mcp`, as a client of 2025-06-18 does.
    pub async fn post(&self, session: Option<&str>, message: &Value) -> reqwest::Response {
        let mut request = self
            .request(http::Method::POST, "/mcp")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(message.to_string());
        if let Some(session) = session {
            request = request
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", "2025-06-18");
        }
        request.send().await.unwrap()
    }

    /// `initialize` alone: the session's id, or the refusal's status and
    /// text.
    pub async fn initialize(&self) -> Result<String, (u16, String)> {
        let message = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "loopback-test", "version": "1"}}});
        let response = self.post(None, &message).await;
        let status = response.status().as_u16();
        let id = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let text = response.text().await.unwrap();
        match id {
            Some(id) if status == 200 => Ok(id),
            _ => Err((status, text)),
        }
    }

    /// A session through its handshake (`initialize`, `initialized`).
    pub async fn open(&self) -> String {
        let id = self
            .initialize()
            .await
            .unwrap_or_else(|e| panic!("initialize: {e:?}"));
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(self.post(Some(&id), &initialized).await.status().as_u16(), 202);
        id
    }

    /// `DELETE /mcp` of session `id`: its status.
    pub async fn close(&self, id: &str) -> u16 {
        self.request(http::Method::DELETE, "/mcp")
            .header("mcp-session-id", id)
            .header("mcp-protocol-version", "2025-06-18")
            .send()
            .await
            .unwrap()
            .status()
            .as_u16()
    }

    /// How many initialized sessions the server keeps.
    pub fn initialized_count(&self) -> usize {
        self.initialized
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Wait (up to [`ANSWER`]) until `done` holds; whether it did.
    pub async fn until(&self, done: impl Fn(&Self) -> bool) -> bool {
        let deadline = tokio::time::Instant::now() + ANSWER;
        while !done(self) {
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        true
    }
}
