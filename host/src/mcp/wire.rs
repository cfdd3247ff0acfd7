//! What the front adds to the messages rmcp sends, and keeps of those it
//! receives, that rmcp's types cannot say. rmcp 3.11 models MCP
//! 2026-07-28; MCP 2025-11-25 has besides a tool's `execution` and the
//! experimental tasks (`params.task` on `tools/call`, `CreateTaskResult`,
//! `tasks/get` and `tasks/cancel` in their 2025-11-25 form):
//!
//! - on its way out, a `tools/list` answer gets each tool's `execution` as
//!   its source said it (`ToolMeta::execution`, read past rmcp by
//!   `upstream`), and `initialize`'s the `tasks` capability when a tool
//!   served may run as a task;
//! - a client's `params.task` is moved into the request's `_meta` under
//!   [`TASK_KEY`] before rmcp parses it (the stdio line, `lines`; the
//!   HTTP body, [`read_post_body`]), and a task started is answered as
//!   the `CreateTaskResult` the handler put under [`CREATED_KEY`];
//! - `tasks/get` and `tasks/cancel`, which rmcp would take as 2026-07-28's
//!   and refuse to a client without that revision's tasks extension, reach
//!   the handler as the 2025-11-25 requests they are (`tasks`), their
//!   `_meta` kept; those a 2026-07-28 client sends (its revision in their
//!   `_meta`) are left to rmcp, which answers them as it does over HTTP;
//! - an HTTP body that is no message, which rmcp answers `415`, is
//!   answered `400` with the JSON-RPC error, under its id if it has one
//!   ([`read_post_body`]; the stdio transport answers its own).
//!
//! It wraps a session's transport ([`Wire`]), so every request still goes
//! through rmcp's handler whole (its protocol checks included): over stdio
//! and in each HTTP session (`sessions`). A stateless HTTP answer (a
//! cluster replica, a 2026-07-28 client, whose revision has neither) is
//! written by rmcp with no transport between, and goes without; so the
//! front declares tasks only where it serves sessions. Not here: what is
//! served (`McpServer`), the tasks themselves (`tasks`), how a source's
//! `execution` is read (`upstream`).

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Weak};

use axum::response::IntoResponse;
use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, CustomRequest, CustomResult, GetExtensions, GetMeta, JsonRpcMessage,
    ListToolsResult, ServerJsonRpcMessage, ServerResult,
};
use rmcp::service::{RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::{Value, json};

use crate::json_structure::Names;
use crate::malformed;
use crate::pipeline::Toolhost;
use crate::tool::{Execution, TaskSupport};

/// Where a client's `params.task` rides in its request's `_meta`.
pub(super) const TASK_KEY: &str = "toolhost.internal/task";

/// Where the handler puts the `CreateTaskResult` a task-augmented call is
/// answered with, in its result's `_meta`.
pub(super) const CREATED_KEY: &str = "toolhost.internal/created-task";

/// What a message that has something to carry names: every request is
/// looked through for them, in one pass, before any is parsed.
static CARRIED_NAMES: LazyLock<Names> = LazyLock::new(|| Names::new(&["\"task\"", TASK_KEY]));

/// The longest stdio line looked into for a `params.task`: a task-augmented
/// call is a short message, and a longer line passes as it came.
pub(super) const MAX_CARRIED_LINE: usize = 1 << 20;

/// Each served tool's `execution`, by name, as of now.
pub(super) type Executions = Arc<dyn Fn() -> HashMap<String, Execution> + Send + Sync>;

/// The executions of `host`'s current catalog (a tool served as pinned is
/// called on its current backend, whose `execution` this is); none once
/// the host is gone.
pub(super) fn executions(host: &Arc<Toolhost>) -> Executions {
    let host: Weak<Toolhost> = Arc::downgrade(host);
    Arc::new(move || {
        let Some(host) = host.upgrade() else {
            return HashMap::new();
        };
        host.list_tools()
            .tools
            .iter()
            .filter_map(|t| Some((t.name.clone(), t.meta.execution?)))
            .collect()
    })
}

/// A session's transport, with what rmcp cannot say added to what it sends.
pub(super) struct Wire<T> {
    inner: T,
    executions: Executions,
}

impl<T> Wire<T> {
    pub(super) fn new(inner: T, executions: Executions) -> Self {
        Self { inner, executions }
    }
}

impl<T: Transport<RoleServer>> Transport<RoleServer> for Wire<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let item = match item {
            JsonRpcMessage::Response(mut response) => {
                response.result = match response.result {
                    ServerResult::ListToolsResult(list) => with_execution(list, &(self.executions)()),
                    ServerResult::InitializeResult(init) if tasks_served(&(self.executions)()) => {
                        with_tasks(init)
                    }
                    ServerResult::CallToolResult(mut result) => {
                        match result.meta.as_mut().and_then(|m| m.remove(CREATED_KEY)) {
                            Some(created) => ServerResult::CustomResult(CustomResult(created)),
                            None => ServerResult::CallToolResult(result),
                        }
                    }
                    other => other,
                };
                JsonRpcMessage::Response(response)
            }
            other => other,
        };
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        let message = self.inner.receive().await?;
        Some(match message {
            JsonRpcMessage::Request(mut request) => {
                request.request = as_2025_task_request(request.request);
                JsonRpcMessage::Request(request)
            }
            other => other,
        })
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

/// `tasks/get` and `tasks/cancel` of a 2025-11-25 session as the requests
/// the handler answers (`tasks`), rather than 2026-07-28's, which rmcp
/// would refuse to a client without that revision's tasks extension. A
/// 2026-07-28 client's are its own revision's: left as they are.
fn as_2025_task_request(request: ClientRequest) -> ClientRequest {
    if request
        .get_meta()
        .protocol_version()
        .is_some_and(|revision| !revision.has_initialize())
    {
        return request;
    }
    let (method, params) = match &request {
        ClientRequest::GetTaskRequest(r) => ("tasks/get", serde_json::to_value(&r.params)),
        ClientRequest::CancelTaskRequest(r) => ("tasks/cancel", serde_json::to_value(&r.params)),
        _ => return request,
    };
    match params {
        Ok(params) => {
            let mut custom = CustomRequest::new(method, Some(params));
            *custom.extensions_mut() = request.extensions().clone();
            ClientRequest::CustomRequest(custom)
        }
        Err(_) => request,
    }
}

/// Whether a tool served may run as a task, so that the front serves tasks.
pub(super) fn tasks_served(executions: &HashMap<String, Execution>) -> bool {
    executions
        .values()
        .any(|e| e.task_support.is_some_and(|s| s != TaskSupport::Forbidden))
}

/// `initialize`'s answer with the tasks capability of MCP 2025-11-25:
/// task-augmented `tools/call`, `tasks/list` and `tasks/cancel`; and
/// without 2026-07-28's tasks extension, which that revision has not.
fn with_tasks(init: rmcp::model::InitializeResult) -> ServerResult {
    let Ok(mut value) = serde_json::to_value(&init) else {
        return ServerResult::InitializeResult(init);
    };
    let Some(capabilities) = value.get_mut("capabilities").and_then(Value::as_object_mut) else {
        return ServerResult::InitializeResult(init);
    };
    capabilities.insert(
        "tasks".to_owned(),
        json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}),
    );
    if let Some(extensions) = capabilities.get_mut("extensions").and_then(Value::as_object_mut) {
        extensions.remove(rmcp::model::TASKS_EXTENSION_ID);
        if extensions.is_empty() {
            capabilities.remove("extensions");
        }
    }
    ServerResult::CustomResult(CustomResult(value))
}

/// `message` (one JSON-RPC message) with a `tools/call`'s `params.task`
/// carried in its `_meta` under [`TASK_KEY`]; `None` when there is nothing
/// to carry, so it passes as it came. Whatever the client put under the
/// key itself is removed first: only `params.task` asks for a task.
pub(super) fn carry_task(message: &[u8]) -> Option<Vec<u8>> {
    if !CARRIED_NAMES.may_be_in(message) {
        return None;
    }
    let mut value: Value = serde_json::from_slice(message).ok()?;
    if value.get("method").and_then(Value::as_str) != Some("tools/call") {
        return None;
    }
    let params = value.get_mut("params")?.as_object_mut()?;
    let forged = params
        .get_mut("_meta")
        .and_then(Value::as_object_mut)
        .is_some_and(|meta| meta.remove(TASK_KEY).is_some());
    let task = params.remove("task");
    if let Some(task) = task {
        let meta = params.entry("_meta").or_insert_with(|| json!({}));
        meta.as_object_mut()?.insert(TASK_KEY.to_owned(), task);
    } else if !forged {
        // Nothing moved: the request passes as the client sent it.
        return None;
    }
    serde_json::to_vec(&value).ok()
}

/// A POST to the MCP endpoint, its body read once within `limit` (rmcp's
/// own):
/// - its `params.task` carried ([`carry_task`]) where the front serves
///   tasks (`carries_tasks`);
/// - if it is sent as JSON but is no message (or no JSON at all), which
///   rmcp answers `415 Unsupported Media Type` as though the content type
///   were wrong, answered `400` with the JSON-RPC error
///   [`malformed::refusal`] gives. The body is parsed again only when rmcp
///   refused it.
pub(super) async fn read_post_body(
    limit: usize,
    carries_tasks: bool,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    if request.method() != http::Method::POST {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, limit).await else {
        let refused = format!("the request's body is over {limit} bytes, or was not read whole");
        return (http::StatusCode::PAYLOAD_TOO_LARGE, refused).into_response();
    };
    let sent_as_json = parts
        .headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split(';').next())
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"));
    let body = match carries_tasks.then(|| carry_task(&bytes)).flatten() {
        Some(carried) => axum::body::Body::from(carried),
        None => axum::body::Body::from(bytes.clone()),
    };
    let response = next.run(axum::extract::Request::from_parts(parts, body)).await;
    if response.status() != http::StatusCode::UNSUPPORTED_MEDIA_TYPE
        || !sent_as_json
        || serde_json::from_slice::<ClientJsonRpcMessage>(&bytes).is_ok()
    {
        return response;
    }
    let (id, error) = malformed::refusal(&bytes);
    let answer = serde_json::to_vec(&ServerJsonRpcMessage::error(error, id)).unwrap_or_default();
    let json = [(http::header::CONTENT_TYPE, "application/json")];
    (http::StatusCode::BAD_REQUEST, json, answer).into_response()
}

/// `list` as sent, each tool of `executions` with its `execution`; the list
/// as rmcp's type says it when no tool has one.
fn with_execution(list: ListToolsResult, executions: &HashMap<String, Execution>) -> ServerResult {
    let named = |tool: &rmcp::model::Tool| executions.contains_key(tool.name.as_ref());
    if !list.tools.iter().any(named) {
        return ServerResult::ListToolsResult(list);
    }
    let Ok(mut value) = serde_json::to_value(&list) else {
        return ServerResult::ListToolsResult(list);
    };
    let tools = value.get_mut("tools").and_then(Value::as_array_mut);
    for tool in tools.into_iter().flatten().filter_map(Value::as_object_mut) {
        let execution = tool
            .get("name")
            .and_then(Value::as_str)
            .and_then(|name| executions.get(name));
        if let Some(execution) = execution.and_then(|e| serde_json::to_value(e).ok()) {
            tool.insert("execution".to_owned(), execution);
        }
    }
    ServerResult::CustomResult(CustomResult(value))
}

#[cfg(test)]
mod tests {
    use rmcp::model::Tool;
    use serde_json::json;

    use super::*;
    use crate::tool::TaskSupport;

    #[test]
    fn a_calls_task_rides_in_its_meta_and_a_clients_own_key_is_removed() {
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "t", "arguments": {}, "task": {"ttl": 5}}});
        let carried: Value =
            serde_json::from_slice(&carry_task(call.to_string().as_bytes()).unwrap()).unwrap();
        assert!(carried["params"].get("task").is_none());
        assert_eq!(carried["params"]["_meta"][TASK_KEY], json!({"ttl": 5}));
        let forged = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "t", "_meta": {TASK_KEY: {}}}});
        let carried: Value =
            serde_json::from_slice(&carry_task(forged.to_string().as_bytes()).unwrap()).unwrap();
        assert_eq!(carried["params"]["_meta"], json!({}));
        let other = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {"task": 1}});
        assert_eq!(carry_task(other.to_string().as_bytes()), None);
        let argument = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
            "params": {"name": "t", "arguments": {"task": "write the report"}}});
        assert_eq!(
            carry_task(argument.to_string().as_bytes()),
            None,
            "passes as the client sent it"
        );
    }

    /// The key and `task` spelled with JSON's escapes are the same names: a
    /// client's own use of the host's key is removed however it is written.
    #[test]
    fn names_spelled_with_escapes_are_carried_and_removed_as_names() {
        let carried =
            |line: &str| -> Value { serde_json::from_slice(&carry_task(line.as_bytes()).unwrap()).unwrap() };
        let call = carried(
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","t\u0061sk":{"ttl":5}}}"#,
        );
        assert_eq!(call["params"]["_meta"][TASK_KEY], json!({"ttl": 5}));
        let forged = carried(
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t","_meta":{"toolhost.internal\/task":{}}}}"#,
        );
        assert_eq!(forged["params"]["_meta"], json!({}));
        let plain = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"t","arguments":{"text":"caf\u00e9"}}}"#;
        assert_eq!(carry_task(plain.as_bytes()), None, "parsed, and passed as sent");
    }

    #[test]
    fn each_tool_with_an_execution_is_listed_with_it() {
        let list = ListToolsResult::with_all_items(vec![
            Tool::new("a", "A", serde_json::Map::new()),
            Tool::new("b", "B", serde_json::Map::new()),
        ]);
        let executions = HashMap::from([(
            "a".to_owned(),
            Execution {
                task_support: Some(TaskSupport::Required),
            },
        )]);
        let sent = serde_json::to_value(with_execution(list.clone(), &executions)).unwrap();
        assert_eq!(sent["tools"][0]["execution"], json!({"taskSupport": "required"}));
        assert!(sent["tools"][1].get("execution").is_none());
        assert_eq!(sent["tools"][1]["name"], "b");
        let unchanged = with_execution(list, &HashMap::new());
        assert!(matches!(unchanged, ServerResult::ListToolsResult(_)));
    }
}
