//! An upstream server's question, as MCP 2026-07-28 carries it to a client
//! that has no server-to-client requests: an input request embedded in a
//! result (a task's `inputRequests`, a call's `input_required`), and the
//! client's answer back as the result the server waits for. Owns the
//! conversion both ways; not where the question waits (`task_extension`,
//! `round_trips`).

// rmcp marks sampling and roots deprecated (SEP-2577); servers still use them.
#![allow(deprecated)]

use rmcp::model::{
    ClientResult, CreateMessageResult, ElicitResult, InputRequest, ListRootsResult, ServerRequest,
};
use serde_json::Value;

use crate::pipeline::Toolhost;
use crate::upstream::Unanswered;

/// Where a 2025-11-25 server names the task a message is about.
pub(super) const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// `request` as the client is shown it: through the gate, with no word of
/// the server's own task.
pub(super) fn shown(host: &Toolhost, request: &ServerRequest) -> Result<InputRequest, Unanswered> {
    let mut asked = serde_json::to_value(request).map_err(|e| Unanswered::Failed(e.to_string()))?;
    if let Some(meta) = asked.pointer_mut("/params/_meta").and_then(Value::as_object_mut) {
        meta.remove(RELATED_TASK);
    }
    let asked = host
        .gate()
        .message(asked)
        .ok_or_else(|| Unanswered::Failed("withheld: it held a secret value the host holds".into()))?;
    serde_json::from_value(asked).map_err(|e| Unanswered::Failed(e.to_string()))
}

/// The client's `answer` to `request`, as the server reads it.
pub(super) fn answered(request: &ServerRequest, answer: Value) -> Result<ClientResult, Unanswered> {
    let parsed = match request {
        ServerRequest::ElicitRequest(_) => {
            serde_json::from_value::<ElicitResult>(answer).map(ClientResult::ElicitResult)
        }
        ServerRequest::CreateMessageRequest(_) => serde_json::from_value::<CreateMessageResult>(answer)
            .map(|r| ClientResult::CreateMessageResult(Box::new(r))),
        _ => serde_json::from_value::<ListRootsResult>(answer).map(ClientResult::ListRootsResult),
    };
    parsed.map_err(|e| Unanswered::Failed(format!("its answer does not parse: {e}")))
}
