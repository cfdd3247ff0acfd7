//! The MCP front, on the official Rust SDK (`rmcp`): `tools/list` is the
//! enriched listing (with each tool's title, output schema and
//! annotations), `tools/call` runs the pipeline. The system-prompt sections
//! of the tools are the initialize result's `instructions` and the
//! `system-prompt` prompt.
//!
//! A client's `notifications/cancelled` cancels the call's token; progress
//! a tool reports is sent as `notifications/progress` when the request
//! carried a progress token. Tool failures are results with `isError`
//! (the model reads them); only malformed requests are protocol errors.
//! Serves stdio ([`serve_stdio`]) and streamable HTTP at `/mcp`
//! ([`serve_http`]). Owns the protocol mapping, not the pipeline.
//!
//! Protocol revisions up to 2026-07-28 are served ([`revision`] says what
//! differs). `tools/list_changed`: up to 2025-11-25, every client session
//! that has sent `initialized` is remembered (one over stdio, one per HTTP
//! session); each time the host rebuilds its catalog every session still
//! open is sent the notification, and sessions that closed are forgotten
//! then. A 2026-07-28 client has no session: it is told on the
//! `subscriptions/listen` stream it opens.

mod revision;

use std::borrow::Cow;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use axum::serve::ListenerExt;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, GetPromptRequestParams,
    GetPromptResponse, GetPromptResult, Implementation, ListPromptsResult, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, Prompt, PromptMessage, ProtocolVersion, Role,
    ServerCapabilities, ServerConfig, SubscriptionFilter, Tool, ToolAnnotations,
};
use rmcp::service::{NotificationContext, Peer, RequestContext, RoleServer, SubscriptionContext};
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
use rmcp::{ErrorData as McpError, ServerHandler, ServiceExt};
use serde_json::Value;
use tokio::sync::watch;

use crate::enrich::EnrichedTool;
use crate::pipeline::{CallContext, CallOutput, Toolhost, error_text};
use crate::plugin::{Content, ToolError};
use crate::prompt::PROMPT_NAME;

/// The MCP server over one [`Toolhost`]; its clones (one per HTTP
/// session) share the sessions told of catalog changes.
#[derive(Clone)]
pub struct McpServer {
    host: Arc<Toolhost>,
    sessions: Arc<Mutex<Vec<Peer<RoleServer>>>>,
}

impl McpServer {
    /// Must run inside a Tokio runtime: it starts the task that tells the
    /// sessions of catalog changes, which ends with the last clone.
    pub fn new(host: Arc<Toolhost>) -> Self {
        let sessions: Arc<Mutex<Vec<Peer<RoleServer>>>> = Arc::default();
        tokio::spawn(announce(host.subscribe(), Arc::downgrade(&sessions)));
        Self { host, sessions }
    }

    fn tools(&self) -> Vec<Tool> {
        self.host.list_tools().tools.iter().map(to_tool).collect()
    }

    /// toolhost's own prompt: the system-prompt sections of its tools.
    fn system_prompt(&self) -> Prompt {
        let mut prompt = Prompt::new(
            PROMPT_NAME,
            Some("The tools available and the guidelines for them, for an agent's system prompt"),
            None,
        );
        prompt.title = Some("toolhost system prompt".into());
        prompt
    }
}

/// An enriched tool as MCP lists it: title, output schema and annotations
/// from its metadata.
fn to_tool(t: &EnrichedTool) -> Tool {
    let object = |value: Value| match value {
        Value::Object(map) => map,
        _ => serde_json::Map::new(),
    };
    let mut tool = Tool::new(
        t.name.clone(),
        t.schema.description().to_owned(),
        object(t.schema.to_value()),
    );
    tool.title.clone_from(&t.meta.title);
    tool.output_schema = t.meta.output_schema.clone().map(|s| Arc::new(object(s)));
    let hints = t.meta.annotations;
    if !hints.is_empty() {
        let mut annotations = ToolAnnotations::default();
        annotations.read_only_hint = hints.read_only_hint;
        annotations.destructive_hint = hints.destructive_hint;
        annotations.idempotent_hint = hints.idempotent_hint;
        annotations.open_world_hint = hints.open_world_hint;
        tool.annotations = Some(annotations);
    }
    tool
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
        self.sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(context.peer);
    }

    /// The instructions are the system-prompt sections as of the session's
    /// start; the `system-prompt` prompt is rebuilt on each request.
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_prompts()
            .build();
        let config = ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("toolhost", env!("CARGO_PKG_VERSION")));
        let instructions = self.host.system_prompt();
        if instructions.is_empty() {
            config
        } else {
            config.with_instructions(instructions)
        }
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        Ok(ListPromptsResult::with_all_items(vec![self.system_prompt()]))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        if request.name != PROMPT_NAME {
            return Err(McpError::invalid_params(
                format!(
                    "no prompt named `{}`: toolhost serves `{PROMPT_NAME}`",
                    request.name
                ),
                None,
            ));
        }
        let text = self.host.system_prompt();
        let description = self.system_prompt().description.unwrap_or_default();
        Ok(
            GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)])
                .with_description(description)
                .into(),
        )
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        revision::supported()
    }

    fn accepted_subscription_filter(&self, requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        revision::accepted(requested)
    }

    async fn listen(&self, subscription: SubscriptionContext) -> Result<(), McpError> {
        revision::listen(self.host.subscribe(), subscription).await
    }

    /// The served tool, against whose input schema rmcp checks a 2026-07-28
    /// HTTP request's `Mcp-Param-*` headers.
    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools().into_iter().find(|t| t.name == name)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let all = ListToolsResult::with_all_items(self.tools());
        Ok(revision::tools_list(all, context.protocol_version().as_ref()))
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
            Content::Image(i) => Some(ContentBlock::image(STANDARD.encode(&i.data), i.mime_type.clone())),
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

/// Serve MCP on stdin and stdout until the client disconnects.
pub async fn serve_stdio(host: Arc<Toolhost>) -> anyhow::Result<()> {
    let running = McpServer::new(host).serve(rmcp::transport::stdio()).await?;
    running.waiting().await?;
    Ok(())
}

/// Serve streamable HTTP at `http://ADDR/mcp` until interrupted.
pub async fn serve_http(host: Arc<Toolhost>, addr: SocketAddr) -> anyhow::Result<()> {
    let server = McpServer::new(host);
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(addr).await?;
    eprintln!("toolhost: serving MCP at http://{}/mcp", listener.local_addr()?);
    // A response goes out in several writes (the SSE priming event, then
    // the result): with Nagle's algorithm on, the second waits for the
    // client's delayed ACK, about 40 ms on every call.
    let listener = listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!("TCP_NODELAY not set on an accepted connection: {e}");
        }
    });
    axum::serve(listener, router)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugin::Image;

    #[test]
    fn images_travel_as_standard_base64() {
        let output = CallOutput {
            content: vec![Content::Image(Image {
                data: b"Ma".to_vec(),
                mime_type: "image/png".into(),
            })],
            details: None,
            is_error: false,
        };
        let block = serde_json::to_value(&to_mcp(output).content[0]).unwrap();
        assert_eq!(block["data"], "TWE=");
        assert_eq!(block["mimeType"], "image/png");
    }
}
