//! What the front adds to the messages rmcp sends that rmcp's types cannot
//! say. Today that is a tool's `execution` (MCP 2025-11-25), which rmcp's
//! `Tool` lacks: on its way out, a `tools/list` answer gets each tool's
//! `execution` as its source said it (`ToolMeta::execution`, read past
//! rmcp by `upstream`).
//!
//! It wraps a session's transport ([`Wire`]), so every request still goes
//! through rmcp's handler whole (its protocol checks included) and only the
//! answer on its way out is added to: over stdio and in each HTTP session
//! (`sessions`). A stateless HTTP answer (a cluster replica, a 2026-07-28
//! client, whose revision has no `execution`) is written by rmcp with no
//! transport between, and goes without. Not here: what is served
//! (`McpServer`), how a source's `execution` is read (`upstream`).

use std::collections::HashMap;
use std::sync::{Arc, Weak};

use rmcp::model::{CustomResult, JsonRpcMessage, ListToolsResult, ServerResult};
use rmcp::service::{RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde_json::Value;

use crate::pipeline::Toolhost;
use crate::tool::Execution;

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
                if let ServerResult::ListToolsResult(list) = response.result {
                    response.result = with_execution(list, &(self.executions)());
                }
                JsonRpcMessage::Response(response)
            }
            other => other,
        };
        self.inner.send(item)
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleServer>>> + Send {
        self.inner.receive()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
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
