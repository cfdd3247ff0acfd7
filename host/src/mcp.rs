//! The MCP front (DESIGN decision 9), on the official Rust SDK (`rmcp`):
//! `tools/list` is the enriched listing, `tools/call` runs the pipeline.
//!
//! A client's `notifications/cancelled` cancels the call's token; progress
//! a tool reports is sent as `notifications/progress` when the request
//! carried a progress token. Tool failures are results with `isError`
//! (the model reads them); only malformed requests are protocol errors.
//! Serves stdio ([`serve_stdio`]) and streamable HTTP at `/mcp`
//! ([`serve_http`]). Owns the protocol mapping, not the pipeline.
//!
//! `tools/list_changed`: every client session that has sent `initialized`
//! is remembered (one over stdio, one per HTTP session); each time the
//! host rebuilds its catalog every session still open is sent the
//! notification. Sessions that closed are forgotten then.
//!
//! Logging: each session is sent the plugin and upstream log lines of a
//! [`ClientLog`] at the level it set with `logging/setLevel` (see
//! `crate::client_log`). Over HTTP, requests pass `crate::auth` first.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{NotificationContext, Peer, RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::{StreamableHttpService, session::local::LocalSessionManager};
use rmcp::{ErrorData as McpError, ServerHandler, ServiceExt};
use serde_json::Value;
use tokio::sync::watch;

use crate::auth::HttpAccess;
use crate::client_log::{ClientLog, SessionLog};
use crate::pipeline::{CallContext, CallOutput, Toolhost, error_text};
use crate::plugin::{Content, ToolError};

/// The MCP server over one [`Toolhost`]; its copies (one per HTTP
/// session, [`McpServer::for_session`]) share the sessions told of catalog
/// changes, each with its own log level.
pub struct McpServer {
    host: Arc<Toolhost>,
    sessions: Arc<Mutex<Vec<Peer<RoleServer>>>>,
    log: ClientLog,
    session_log: SessionLog,
}

impl McpServer {
    /// Must run inside a Tokio runtime: it starts the task that tells the
    /// sessions of catalog changes, which ends with the last copy. Clients
    /// are sent the lines of `log`.
    pub fn new(host: Arc<Toolhost>, log: ClientLog) -> Self {
        let sessions: Arc<Mutex<Vec<Peer<RoleServer>>>> = Arc::default();
        tokio::spawn(announce(host.subscribe(), Arc::downgrade(&sessions)));
        let session_log = log.session();
        Self {
            host,
            sessions,
            log,
            session_log,
        }
    }

    /// A copy for one more client session.
    pub fn for_session(&self) -> Self {
        Self {
            host: self.host.clone(),
            sessions: self.sessions.clone(),
            log: self.log.clone(),
            session_log: self.log.session(),
        }
    }

    fn tools(&self) -> Vec<Tool> {
        self.host
            .list_tools()
            .tools
            .iter()
            .map(|t| {
                let schema = match t.schema.to_value() {
                    Value::Object(map) => map,
                    _ => serde_json::Map::new(),
                };
                Tool::new(t.name.clone(), t.schema.description().to_owned(), schema)
            })
            .collect()
    }
}

/// Send `tools/list_changed` to every open session on each rebuild.
async fn announce(mut rebuilt: watch::Receiver<u64>, sessions: Weak<Mutex<Vec<Peer<RoleServer>>>>) {
    while rebuilt.changed().await.is_ok() {
        let Some(sessions) = sessions.upgrade() else {
            return;
        };
        let open: Vec<Peer<RoleServer>> = {
            let mut all = sessions.lock().unwrap_or_else(PoisonError::into_inner);
            all.retain(|peer| !peer.is_transport_closed());
            all.clone()
        };
        for peer in open {
            if let Err(e) = peer.notify_tool_list_changed().await {
                tracing::debug!("tools/list_changed not sent: {e}");
            }
        }
    }
}

impl ServerHandler for McpServer {
    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.session_log.follow(context.peer.clone());
        self.sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(context.peer);
    }

    #[allow(deprecated)] // rmcp marks MCP logging deprecated (SEP-2577); clients still use it.
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_logging()
            .build();
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("toolhost", env!("CARGO_PKG_VERSION")))
    }

    #[allow(deprecated)] // rmcp marks MCP logging deprecated (SEP-2577); clients still use it.
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.session_log.set_level(request.level);
        Ok(())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let mut ctx = CallContext::new(context.id.to_string());
        ctx.cancel = context.ct.clone();
        let mut forwarder = None;
        if let Some(token) = context.meta.get_progress_token() {
            // Progress is reported synchronously from inside the call; a
            // channel hands it to a task that sends the notifications.
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<ProgressNotificationParam>();
            let peer = context.peer.clone();
            forwarder = Some(tokio::spawn(async move {
                while let Some(note) = rx.recv().await {
                    if peer.notify_progress(note).await.is_err() {
                        break;
                    }
                }
            }));
            ctx = ctx.with_progress(Arc::new(move |progress, total, message| {
                let mut note = ProgressNotificationParam::new(token.clone(), progress);
                note.total = total;
                note.message = message;
                let _ = tx.send(note);
            }));
        }
        let args = request.arguments.map(Value::Object).unwrap_or(Value::Null);
        let outcome = self.host.call_tool(&request.name, args, &ctx).await;
        // Send every progress notification before the result, which ends
        // the request: dropping the context closes the channel.
        drop(ctx);
        if let Some(forwarder) = forwarder {
            let _ = forwarder.await;
        }
        let result = match outcome {
            Ok(output) => to_mcp(output),
            Err(e) => {
                if matches!(e, ToolError::Cancelled) {
                    tracing::info!("call {}: {} cancelled", context.id, request.name);
                }
                CallToolResult::error(vec![ContentBlock::text(error_text(&e))])
            }
        };
        Ok(result.into())
    }
}

fn to_mcp(output: CallOutput) -> CallToolResult {
    let structured = output.structured();
    let content: Vec<ContentBlock> = output
        .content
        .iter()
        .filter_map(|c| match c {
            Content::Text(t) => Some(ContentBlock::text(t.clone())),
            // JSON blocks travel as structuredContent, not repeated as text.
            Content::Json(_) => None,
            Content::Image(i) => Some(ContentBlock::image(base64(&i.data), i.mime_type.clone())),
        })
        .collect();
    let mut result = if output.is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    result.structured_content = structured;
    result
}

/// Standard base64 with padding, for image blocks.
fn base64(data: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Serve MCP on stdin and stdout until the client disconnects.
pub async fn serve_stdio(host: Arc<Toolhost>, log: ClientLog) -> anyhow::Result<()> {
    let running = McpServer::new(host, log).serve(rmcp::transport::stdio()).await?;
    running.waiting().await?;
    Ok(())
}

/// Serve streamable HTTP at `http://ADDR/mcp` until interrupted, behind
/// `access` (its authorization and accepted `Host` names).
pub async fn serve_http(
    host: Arc<Toolhost>,
    log: ClientLog,
    addr: SocketAddr,
    access: HttpAccess,
) -> anyhow::Result<()> {
    let server = McpServer::new(host, log);
    let service = StreamableHttpService::new(
        move || Ok(server.for_session()),
        Arc::new(LocalSessionManager::default()),
        access.service_config(),
    );
    let router = access.protect(axum::Router::new().nest_service("/mcp", service));
    let listener = tokio::net::TcpListener::bind(addr).await?;
    eprintln!("toolhost: serving MCP at http://{}/mcp", listener.local_addr()?);
    axum::serve(listener, router)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn base64_matches_the_standard() {
        assert_eq!(super::base64(b"Man"), "TWFu");
        assert_eq!(super::base64(b"Ma"), "TWE=");
        assert_eq!(super::base64(b"M"), "TQ==");
    }
}
