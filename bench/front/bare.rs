//! The bare MCP server: the front bench's floor for each transport, and
//! for proxying.
//!
//! Owns one process serving with the MCP library toolhost serves with
//! (rmcp: stdio, or its stateful streamable HTTP service on axum), on the
//! runtime toolhost gives that transport and the allocator it ships with,
//! and nothing else: either a `read` tool answering from memory, or every
//! call passed to an upstream server it starts, through rmcp's client, as
//! the least proxy on rmcp. What the front bench's client waits for from it
//! is the client's, the transport's and the library's cost alone, with no
//! pipeline, tool or gate behind them, against which toolhost's own share
//! is told apart. It does not own the measuring (that is `main`'s).

use std::ffi::OsString;

use anyhow::{Context, Result};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::{Peer, RequestContext, RoleClient, RoleServer};
use rmcp::transport::TokioChildProcess;
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde_json::json;
use toolhost_cli::serve::runtime;
use toolhost_tests::upstream::{ToolServer, tool};

/// The first argument that runs this binary as the bare server; the
/// second is `stdio`, `http`, or `proxy` followed by the upstream's
/// command (served over stdio).
pub const ARG: &str = "--bare-server";

/// Serve until the client goes (stdio) or the process is killed (HTTP).
pub fn run(args: &[OsString]) -> Result<()> {
    // On toolhost's runtime for each transport (`runtime(http)`).
    match args.split_first() {
        Some((transport, [])) if transport == "stdio" => runtime(false)?.block_on(stdio(from_memory())),
        Some((transport, [])) if transport == "http" => runtime(true)?.block_on(async {
            let url = toolhost_tests::mcp_on_loopback(from_memory()).await;
            // The line toolhost announces itself with, which `Served` reads.
            eprintln!("toolhost: serving MCP at {url}");
            std::future::pending().await
        }),
        Some((proxy, [program, args @ ..])) if proxy == "proxy" => runtime(false)?.block_on(async {
            let mut command = tokio::process::Command::new(program);
            command.args(args);
            let transport = TokioChildProcess::builder(command)
                .stderr(std::process::Stdio::null())
                .spawn()
                .with_context(|| format!("cannot start {}", program.display()))?
                .0;
            let upstream = ().serve(transport).await?;
            stdio(Proxy(upstream.peer().clone())).await
        }),
        _ => anyhow::bail!("{ARG} takes `stdio`, `http` or `proxy COMMAND...`, not {args:?}"),
    }
}

/// `read`, answered with the bench's small file as it reads, from memory.
fn from_memory() -> ToolServer {
    let read = tool(
        "read",
        "the bench's small file, from memory",
        json!({"type": "object"}),
    );
    ToolServer::new(vec![read], |_, _| {
        CallToolResult::success(vec![ContentBlock::text("one\ntwo\nthree\n")])
    })
}

async fn stdio(server: impl ServerHandler) -> Result<()> {
    server.serve(rmcp::transport::stdio()).await?.waiting().await?;
    Ok(())
}

/// Every call passed to this upstream, and its answer passed back.
#[derive(Clone)]
struct Proxy(Peer<RoleClient>);

impl ServerHandler for Proxy {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.0.list_tools(request).await.map_err(upstream_error)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        Ok(self.0.call_tool(request).await.map_err(upstream_error)?.into())
    }
}

fn upstream_error(error: rmcp::ServiceError) -> ErrorData {
    ErrorData::internal_error(format!("the upstream failed: {error}"), None)
}
