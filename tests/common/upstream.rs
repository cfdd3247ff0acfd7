//! A loopback upstream MCP server of fixed tools, served by rmcp as a real
//! server is ([`ToolServer`]): the tests say what it lists and how it
//! answers a call, and nothing else of rmcp's handler.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::{ErrorData, ServerHandler};
use serde_json::Value;

/// How a [`ToolServer`] answers a call.
type Answer = dyn Fn(CallToolRequestParams, &RequestContext<RoleServer>) -> CallToolResult + Send + Sync;

/// An MCP server with tools only: it lists `tools` and answers each call
/// with what its `answer` makes of the request (and its context: the HTTP
/// request's parts, the `_meta`).
#[derive(Clone)]
pub struct ToolServer {
    tools: Vec<Tool>,
    answer: Arc<Answer>,
    /// Listings still to be refused ([`Self::refusing_lists`]).
    refusals: Arc<AtomicUsize>,
}

impl ToolServer {
    pub fn new(
        tools: Vec<Tool>,
        answer: impl Fn(CallToolRequestParams, &RequestContext<RoleServer>) -> CallToolResult
        + Send
        + Sync
        + 'static,
    ) -> Self {
        Self {
            tools,
            answer: Arc::new(answer),
            refusals: Arc::default(),
        }
    }

    /// The same, answering its first `count` `tools/list` requests with an
    /// error, as a server still loading its tools may.
    pub fn refusing_lists(self, count: usize) -> Self {
        self.refusals.store(count, Ordering::SeqCst);
        self
    }

    /// Served over streamable HTTP on loopback: its `/mcp` URL.
    pub async fn serve(self) -> String {
        crate::mcp_on_loopback(self).await
    }

    /// [`Self::serve`], and the sessions it holds.
    pub async fn serve_keeping_sessions(self) -> (String, crate::McpSessions) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        crate::mcp_sessions_on(listener, self)
    }
}

/// A tool named `name`, described by `description`, taking `schema` (a
/// JSON object).
pub fn tool(name: &str, description: impl Into<String>, schema: Value) -> Tool {
    let Value::Object(schema) = schema else {
        panic!("a tool's schema is an object: {schema}");
    };
    Tool::new(name.to_owned(), description.into(), Arc::new(schema))
}

impl ServerHandler for ToolServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let refused = self
            .refusals
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if refused {
            return Err(ErrorData::internal_error("still loading its tools", None));
        }
        Ok(ListToolsResult::with_all_items(self.tools.clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        Ok((self.answer)(request, &context).into())
    }
}

/// How a [`TaskServer`] sends its answers: each as one event of an SSE
/// stream, or as a plain JSON body.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Answering {
    Sse,
    Json,
}

/// A streamable HTTP MCP server written by hand, since rmcp's types have
/// no MCP 2025-11-25 tasks. It lists two tools:
/// - `long_job`, with `execution.taskSupport` `optional`: a task-augmented
///   call starts task `t1` (`working`), which `tasks/get` finds
///   `completed` and `tasks/result` answers `done`; a plain call answers
///   `ran plainly`;
/// - a task's status message and result name the `X-Api-Key` header the
///   request carried, if one (`done for KEY`), as a leaky server would;
/// - `held_job`, `required`: its task `t2` stays `working` until
///   `tasks/cancel` (then `cancelled`), and `tasks/result` of it answers
///   only after [`HELD_FOR`].
///
/// Every request is kept in `server.seen`.
/// How long [`TaskServer`] holds `tasks/result` of its `held_job`'s task.
pub const HELD_FOR: std::time::Duration = std::time::Duration::from_secs(120);

pub struct TaskServer {
    pub server: crate::LoopbackServer,
}

impl TaskServer {
    pub async fn start(answering: Answering) -> Self {
        let held_cancelled = std::sync::atomic::AtomicBool::new(false);
        let holds = |request: &crate::SeenRequest| {
            let message: Value = serde_json::from_str(&request.body).unwrap_or_default();
            let held = message["method"] == "tasks/result" && message["params"]["taskId"] == "t2";
            if held { HELD_FOR } else { std::time::Duration::ZERO }
        };
        let server = crate::LoopbackServer::start_with_headers_and_delays(holds, move |request| {
            use std::sync::atomic::Ordering::Relaxed;
            if request.method != "POST" {
                return (405, Vec::new(), String::new());
            }
            let message: Value = serde_json::from_str(&request.body).unwrap_or_default();
            let (Some(id), Some(method)) = (message.get("id"), message["method"].as_str()) else {
                return (202, Vec::new(), String::new());
            };
            let params = &message["params"];
            let held = params["taskId"] == "t2" || params["name"] == "held_job";
            // The key the host was configured to send, told back.
            let key = request
                .headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case("x-api-key"));
            let told = key.map(|(_, key)| format!(" for {key}")).unwrap_or_default();
            let task = |status: &str| {
                serde_json::json!({"taskId": if held { "t2" } else { "t1" }, "status": status, "ttl": 60_000,
                    "statusMessage": format!("{status}{told}"),
                    "createdAt": "2026-01-01T00:00:00Z", "lastUpdatedAt": "2026-01-01T00:00:00Z"})
            };
            let result = match method {
                "initialize" => serde_json::json!({
                    "protocolVersion": params["protocolVersion"],
                    "capabilities": {"tools": {},
                        "tasks": {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}},
                    "serverInfo": {"name": "task-server", "version": "1"},
                }),
                "tools/list" => serde_json::json!({"tools": [{
                    "name": "long_job",
                    "description": "A job that may run as a task",
                    "inputSchema": {"type": "object", "properties": {}},
                    "execution": {"taskSupport": "optional"},
                }, {
                    "name": "held_job",
                    "description": "A job that runs only as a task, until cancelled",
                    "inputSchema": {"type": "object", "properties": {}},
                    "execution": {"taskSupport": "required"},
                }]}),
                "tools/call" if params.get("task").is_some() => serde_json::json!({"task": task("working")}),
                "tools/call" => serde_json::json!({"content": [{"type": "text", "text": "ran plainly"}]}),
                "tasks/cancel" if held => {
                    held_cancelled.store(true, Relaxed);
                    task("cancelled")
                }
                "tasks/get" if held => task(if held_cancelled.load(Relaxed) {
                    "cancelled"
                } else {
                    "working"
                }),
                "tasks/get" | "tasks/cancel" => task("completed"),
                "tasks/result" if held => serde_json::json!({"content": [{"type": "text", "text": "late"}]}),
                "tasks/result" => {
                    serde_json::json!({"content": [{"type": "text", "text": format!("done{told}")}]})
                }
                _ => serde_json::json!({}),
            };
            let answer = serde_json::json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string();
            let mut headers = vec![("mcp-session-id".to_owned(), "task-session".to_owned())];
            match answering {
                Answering::Json => (200, headers, answer),
                Answering::Sse => {
                    headers.push(("content-type".to_owned(), "text/event-stream".to_owned()));
                    (200, headers, format!("event: message\ndata: {answer}\n\n"))
                }
            }
        })
        .await;
        Self { server }
    }

    /// Its `/mcp` URL.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.server.addr)
    }

    /// The methods of the requests it was sent, in order, with whether
    /// each asked for a task.
    pub fn methods(&self) -> Vec<(String, bool)> {
        self.server
            .seen
            .lock()
            .unwrap()
            .iter()
            .filter_map(|r| serde_json::from_str::<Value>(&r.body).ok())
            .filter_map(|m| {
                let method = m["method"].as_str()?.to_owned();
                Some((method, m["params"].get("task").is_some()))
            })
            .collect()
    }
}
