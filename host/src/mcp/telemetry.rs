//! The server side of the OpenTelemetry MCP semantic conventions
//! ([`Request`]): each MCP request the server answers runs in a `tracing`
//! span `mcp.server` (`otel.name` is the conventions' span name,
//! `{mcp.method.name} {target}`; `otel.kind` is `server`) holding their
//! attributes: `mcp.method.name`, `jsonrpc.request.id`, `mcp.session.id`
//! (over HTTP with a session), `network.transport` (`pipe` on stdio, `tcp`
//! over HTTP), `gen_ai.tool.name` and `gen_ai.operation.name` for
//! `tools/call`, and on failure `error.type` (`tool_error` for a tool's
//! error result, the JSON-RPC error code for a protocol error). Its
//! `trace_id`, `span_id` and `parent_span_id` place it in the trace its
//! client named in `params._meta.traceparent` when that is well-formed
//! (`trace_context`), else in a new one; a call passes the span on to its
//! upstream requests. Its end is logged (at info) with its duration, and
//! observed in `mcp.server.operation.duration` (`metrics`).
//!
//! Every request the server handles itself is traced, `initialize` and
//! `ping` included; not `subscriptions/listen`, a stream open as long as
//! its client stays, whose duration says nothing of an operation.
//!
//! With `[telemetry]`, each span is also handed to the OTLP export as it
//! ends (`otlp`), with the same attributes; a trace the host starts is then
//! sampled, since the host records it.
//!
//! What the client sends is bounded before it is recorded (`label`). Not
//! here: how spans are sent (`otlp`).

use std::sync::Arc;
use std::time::{Instant, SystemTime};

use rmcp::ErrorData as McpError;
use rmcp::service::{RequestContext, RoleServer};
use tracing::{Instrument, Span};

use super::metrics::CallMetrics;
use super::otlp::{Ended, SpanExport};
use crate::bounds::label;
use crate::trace_context::TraceParent;

/// `error.type` of a tool call answered with an error result.
pub(super) const TOOL_ERROR: &str = "tool_error";

/// One MCP request's server span, from its receipt.
pub(super) struct Request {
    span: Span,
    trace: TraceParent,
    method: &'static str,
    started: Instant,
    /// What is exported when it ends, with `[telemetry]`.
    export: Option<Export>,
}

/// A span's export, from its start.
struct Export {
    to: Arc<SpanExport>,
    name: String,
    parent: Option<TraceParent>,
    start: SystemTime,
    attributes: Vec<(&'static str, String)>,
}

impl Request {
    /// The span of the request `context` carries, of `method` (on `tool`,
    /// for `tools/call`), exported to `spans` if given.
    pub(super) fn start(
        method: &'static str,
        tool: Option<&str>,
        context: &RequestContext<RoleServer>,
        spans: Option<&Arc<SpanExport>>,
    ) -> Self {
        let http = context.extensions.get::<http::request::Parts>();
        let session = http
            .and_then(|parts| parts.headers.get("mcp-session-id"))
            .and_then(|id| id.to_str().ok())
            .map(label);
        let parent = context.meta.get_traceparent().and_then(TraceParent::parse);
        let trace = parent
            .as_ref()
            .map_or_else(|| TraceParent::root(spans.is_some()), TraceParent::child);
        let tool = tool.map(label);
        let name = match &tool {
            Some(tool) => format!("{method} {tool}"),
            None => method.to_owned(),
        };
        let request_id = label(&context.id.to_string()).into_owned();
        let transport = if http.is_some() { "tcp" } else { "pipe" };
        let export = spans.map(|to| {
            let mut attributes = vec![
                ("mcp.method.name", method.to_owned()),
                ("jsonrpc.request.id", request_id.clone()),
                ("network.transport", transport.to_owned()),
            ];
            if let Some(session) = &session {
                attributes.push(("mcp.session.id", session.to_string()));
            }
            if let Some(tool) = &tool {
                attributes.push(("gen_ai.tool.name", tool.to_string()));
                attributes.push(("gen_ai.operation.name", "execute_tool".to_owned()));
            }
            Export {
                to: to.clone(),
                name: name.clone(),
                parent,
                start: SystemTime::now(),
                attributes,
            }
        });
        let span = tracing::info_span!(
            "mcp.server",
            "otel.name" = %name,
            "otel.kind" = "server",
            "mcp.method.name" = method,
            "jsonrpc.request.id" = %request_id,
            "mcp.session.id" = session.as_deref(),
            "network.transport" = transport,
            "gen_ai.tool.name" = tool.as_deref(),
            "gen_ai.operation.name" = tool.as_ref().map(|_| "execute_tool"),
            "error.type" = tracing::field::Empty,
            trace_id = %trace.trace_id(),
            span_id = %trace.span_id(),
            parent_span_id = parent.map(|p| p.span_id()).as_deref(),
        );
        Self {
            span,
            trace,
            method,
            started: Instant::now(),
            export,
        }
    }

    /// The request's span, for the work it runs.
    pub(super) fn span(&self) -> &Span {
        &self.span
    }

    /// The request's place in its trace, which its upstream requests
    /// take as their parent.
    pub(super) fn trace(&self) -> TraceParent {
        self.trace
    }

    /// Run `work` in the span, and end it with its outcome.
    ///
    /// `work` is boxed: taken by an async fn, it was stored twice in its
    /// future (as the argument and as what is awaited), and the task rmcp
    /// spawns for each request is as large as the largest handler's future,
    /// copied whole at every request, a `tools/call` too.
    pub(super) fn run<'a, T: 'a>(
        self,
        metrics: &'a CallMetrics,
        work: impl Future<Output = Result<T, McpError>> + Send + 'a,
    ) -> impl Future<Output = Result<T, McpError>> + Send + 'a {
        let work = Box::pin(work.instrument(self.span.clone()));
        async move {
            let result = work.await;
            let error = result.as_ref().err().map(|e| e.code.0.to_string());
            self.end(metrics, None, error.as_deref());
            result
        }
    }

    /// End the request: `tool` is the metric's label of the tool called,
    /// `error` the error type of a failure.
    pub(super) fn end(self, metrics: &CallMetrics, tool: Option<&str>, error: Option<&str>) {
        let took = self.started.elapsed();
        if let Some(error) = error {
            self.span.record("error.type", error);
        }
        self.span
            .in_scope(|| tracing::info!(seconds = took.as_secs_f64(), "answered"));
        metrics.operation(self.method, tool, error, took);
        if let Some(export) = self.export {
            export.to.record(Ended {
                name: export.name,
                trace: self.trace,
                parent: export.parent,
                start: export.start,
                took,
                attributes: export.attributes,
                error: error.map(str::to_owned),
            });
        }
    }
}
