//! The fake vendor server: an MCP server over streamable HTTP on loopback
//! (rmcp, as toolhost serves) that lists the tools of one vendor's traces
//! and answers each call with what the real server answered, under a model
//! of the world's state, after a latency; it logs every request it gets.
//!
//! The world's state: each trajectory is cut into epochs at its writes. A
//! read of (tool, canonical arguments) in epoch e answers the recorded
//! result of the first call with that key in epoch e, else of the closest
//! earlier epoch that has one, else of the closest later one; a read no
//! one made is answered "not found" (an error result). The real call the
//! driver waits on answers its own recording, since the world also changes
//! without the agent's writes (a CI run progresses between two identical
//! reads), and an answer held from the first would be stale. A write answers its
//! own recorded result. The driver says which trajectory and call are
//! current ([`Fake::set`]), so the epoch is the one in force when the
//! request arrives: a prefetch made before a write and served after it is
//! the previous epoch's answer, as a real server's would be.
//!
//! Tools are annotated as the real GitHub server does: reads
//! `readOnlyHint`, writes `destructiveHint`; each takes any object.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use axum::serve::ListenerExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
use rmcp::{ErrorData, ServerHandler};
use serde_json::{Map, Value, json};

use super::{Trajectory, canonical};

/// Where the driver is: the trajectory, the call it is at (the next one it
/// makes while thinking), and whether that call has been made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cursor {
    pub trajectory: usize,
    pub call: usize,
    pub calling: bool,
}

/// One request the fake received.
#[derive(Debug, Clone)]
pub struct Request {
    pub tool: String,
    pub key: String,
    /// Since the fake started.
    pub at: Duration,
    /// Where the driver was when it arrived.
    pub cursor: Cursor,
    /// Whether it matched no recorded call (answered "not found").
    pub unknown: bool,
}

/// The recorded answers of one trajectory, by key.
struct Answers {
    /// (tool, canonical arguments) → the calls with that key, in order.
    reads: HashMap<(String, String), Vec<usize>>,
    /// Per call, the writes before it; one more entry for after the last.
    epochs: Vec<usize>,
    results: Vec<Option<CallToolResult>>,
    tools: Vec<String>,
}

pub struct Fake {
    trajectories: Vec<Answers>,
    tools: Vec<(String, bool)>,
    latency: Duration,
    started: Instant,
    cursor: Mutex<Cursor>,
    log: Mutex<Vec<Request>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The recorded result as the server sent it: its content, its structured
/// content, and `isError` only where the server set it (`error_from:
/// "isError"`). Errors recognised by their text (the Notion API's error
/// object, GitHub's `failed to ...`) came without it, and a harness error
/// is MCPMark's client failing, not the server.
fn recorded(call: &super::Call) -> Result<Option<CallToolResult>> {
    let Some(result) = &call.result else {
        return Ok(None);
    };
    let content: Vec<ContentBlock> = serde_json::from_value(result["content"].clone())
        .with_context(|| format!("the recorded content of {}", call.tool))?;
    let mut out = if call.error_from.as_deref() == Some("isError") {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    out.structured_content = result.get("structuredContent").filter(|v| !v.is_null()).cloned();
    Ok(Some(out))
}

impl Fake {
    pub fn new(trajectories: &[Trajectory], latency: Duration) -> Result<Self> {
        let mut tools: Vec<(String, bool)> = Vec::new();
        let mut answers = Vec::new();
        for t in trajectories {
            let mut a = Answers {
                reads: HashMap::new(),
                epochs: Vec::new(),
                results: Vec::new(),
                tools: Vec::new(),
            };
            for (i, c) in t.calls.iter().enumerate() {
                if !tools.iter().any(|(name, _)| *name == c.tool) {
                    tools.push((c.tool.clone(), c.read));
                }
                if c.read {
                    a.reads
                        .entry((c.tool.clone(), c.key.clone()))
                        .or_default()
                        .push(i);
                }
                a.results.push(recorded(c).with_context(|| t.id.clone())?);
                a.tools.push(c.tool.clone());
            }
            a.epochs = epochs(t);
            answers.push(a);
        }
        tools.sort();
        Ok(Self {
            trajectories: answers,
            tools,
            latency,
            started: Instant::now(),
            cursor: Mutex::default(),
            log: Mutex::default(),
        })
    }

    /// Serve it over streamable HTTP on loopback: its `/mcp` URL.
    pub async fn serve(self: &Arc<Self>) -> Result<String> {
        let fake = Handler(self.clone());
        let service = StreamableHttpService::new(
            move || Ok(fake.clone()),
            Arc::new(LocalSessionManager::default()),
            StreamableHttpServerConfig::default(),
        );
        let router = axum::Router::new().nest_service("/mcp", service);
        Ok(format!("{}/mcp", listen(router).await?))
    }

    pub fn set(&self, cursor: Cursor) {
        *lock(&self.cursor) = cursor;
    }

    pub fn requests(&self) -> Vec<Request> {
        lock(&self.log).clone()
    }

    /// The answer to `tool` with `key` when the driver is at `at`, or
    /// `None` when no recorded call answers it.
    fn answer(&self, tool: &str, key: &str, at: Cursor, read: bool) -> Option<CallToolResult> {
        let a = self.trajectories.get(at.trajectory)?;
        if !read {
            // A write is never made ahead: it is the current call.
            return (a.tools.get(at.call)? == tool)
                .then(|| a.results[at.call].clone())
                .flatten();
        }
        let calls = a.reads.get(&(tool.to_owned(), key.to_owned()))?;
        // The agent's own call gets what the server gave it: a repeat in
        // one epoch may differ from the first (a CI run progressed, a
        // workflow opened an issue: changes no write of the agent's made).
        if at.calling && calls.contains(&at.call) {
            return a.results[at.call].clone();
        }
        a.results[closest(calls, &a.epochs, at.call)?].clone()
    }
}

/// Per call of `t`, the writes before it (its epoch); one more entry for
/// after the last call.
pub fn epochs(t: &Trajectory) -> Vec<usize> {
    let mut writes = 0;
    let mut out = Vec::with_capacity(t.calls.len() + 1);
    for c in &t.calls {
        out.push(writes);
        writes += usize::from(!c.read);
    }
    out.push(writes);
    out
}

/// Of `calls` (one read's recorded calls, in order), the one that answers
/// it when the driver is at call `at`: the first in `at`'s epoch, else the
/// first of the closest earlier epoch, else of the closest later one.
pub fn closest(calls: &[usize], epochs: &[usize], at: usize) -> Option<usize> {
    let epoch = *epochs.get(at)?;
    let of = |i: &usize| epochs[*i];
    calls
        .iter()
        .find(|i| of(i) == epoch)
        .or_else(|| {
            let earlier = calls.iter().filter(|i| of(i) < epoch).map(of).max();
            earlier
                .and_then(|e| calls.iter().find(|i| of(i) == e))
                .or_else(|| calls.iter().find(|i| of(i) > epoch))
        })
        .copied()
}

/// Serve `router` on a free loopback port: its `http://` origin.
pub async fn listen(router: axum::Router) -> Result<String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let origin = format!("http://{}", listener.local_addr()?);
    // Without it, Nagle's algorithm and the client's delayed ACK add 40 ms
    // to each answer (written in pieces), more than a scaled vendor
    // latency.
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    tokio::spawn(async move { axum::serve(listener, router).await });
    Ok(origin)
}

#[derive(Clone)]
struct Handler(Arc<Fake>);

impl ServerHandler for Handler {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema: Map<String, Value> = json!({"type": "object"}).as_object().cloned().unwrap_or_default();
        let schema = Arc::new(schema);
        let tools = self
            .0
            .tools
            .iter()
            .map(|(name, read)| {
                let hints = if *read {
                    ToolAnnotations::new().read_only(true)
                } else {
                    ToolAnnotations::new().read_only(false).destructive(true)
                };
                Tool::new(name.clone(), format!("{name}, as recorded"), schema.clone()).annotate(hints)
            })
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let fake = &self.0;
        let tool = request.name.to_string();
        let key = canonical(&Value::Object(request.arguments.unwrap_or_default()));
        let cursor = *lock(&fake.cursor);
        let read = fake.tools.iter().any(|(name, read)| *name == tool && *read);
        let answer = fake.answer(&tool, &key, cursor, read);
        lock(&fake.log).push(Request {
            tool,
            key,
            at: fake.started.elapsed(),
            cursor,
            unknown: answer.is_none(),
        });
        tokio::time::sleep(fake.latency).await;
        let answer = answer.unwrap_or_else(|| CallToolResult::error(vec![ContentBlock::text("not found")]));
        Ok(answer.into())
    }
}
