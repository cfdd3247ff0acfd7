//! A loopback upstream MCP server of fixed tools, served by rmcp as a real
//! server is ([`ToolServer`]): the tests say what it lists and how it
//! answers a call, and nothing else of rmcp's handler.

use std::sync::Arc;

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
        }
    }

    /// Served over streamable HTTP on loopback: its `/mcp` URL.
    pub async fn serve(self) -> String {
        crate::mcp_on_loopback(self).await
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

