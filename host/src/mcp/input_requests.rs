//! An upstream server's question, as MCP 2026-07-28 carries it to a client
//! that has no server-to-client requests: an input request embedded in a
//! result (a task's `inputRequests`, a call's `input_required`), and the
//! client's answer back as the result the server waits for. Owns the
//! conversion both ways and the client as the relay sees it
//! ([`Embedded`]); not where a question waits for its answer
//! (`task_extension`, `round_trips`).

// rmcp marks sampling and roots deprecated (SEP-2577); servers still use them.
#![allow(deprecated)]

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use rmcp::model::{
    ClientCapabilities, ClientResult, CreateMessageResult, ElicitResult, InputRequest, ListRootsResult,
    ServerRequest,
};
use serde_json::Value;
use tokio::sync::Semaphore;

use crate::gate::Gate;
use crate::pipeline::Toolhost;
use crate::upstream::{Asked, Downstream, Unanswered, session_slots};

/// The client's answer to a question, once it comes.
pub(super) type Waiting<'a> = Pin<Box<dyn Future<Output = Result<Value, Unanswered>> + Send + 'a>>;

/// Where a question waits for the client's answer, under its key.
pub(super) trait Waits: Send + Sync {
    fn wait(&self, key: String, shown: InputRequest) -> Waiting<'_>;
}

/// A 2026-07-28 client as the server's questions reach it: each shown
/// through the gate, keyed, and waited on where `W` keeps it, within the
/// relay's deadline.
pub(super) struct Embedded<W> {
    /// What the client declared on its request.
    capabilities: Option<ClientCapabilities>,
    /// Its questions in flight.
    slots: Arc<Semaphore>,
    next: AtomicU64,
    host: Weak<Toolhost>,
    waits: W,
}

impl<W> Embedded<W> {
    pub(super) fn new(host: &Arc<Toolhost>, capabilities: Option<ClientCapabilities>, waits: W) -> Self {
        Self {
            capabilities,
            slots: session_slots(),
            next: AtomicU64::new(1),
            host: Arc::downgrade(host),
            waits,
        }
    }
}

impl<W: Waits> Downstream for Embedded<W> {
    fn capabilities(&self) -> Option<ClientCapabilities> {
        self.capabilities.clone()
    }

    fn slots(&self) -> &Arc<Semaphore> {
        &self.slots
    }

    fn ask(&self, request: ServerRequest, deadline: Duration) -> Asked<'_> {
        Box::pin(async move {
            let host = self
                .host
                .upgrade()
                .ok_or_else(|| Unanswered::Failed("the host stopped".into()))?;
            let shown = shown(&host.gate(), &request)?;
            let key = format!("q{}", self.next.fetch_add(1, Ordering::Relaxed));
            let answer = tokio::time::timeout(deadline, self.waits.wait(key, shown))
                .await
                .map_err(|_| Unanswered::Late(deadline))??;
            answered(&request, answer)
        })
    }
}

/// Where a 2025-11-25 server names the task a message is about.
pub(super) const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// `request` as the client is shown it: through `gate`, with no word of
/// the server's own task.
pub(super) fn shown(gate: &Gate, request: &ServerRequest) -> Result<InputRequest, Unanswered> {
    let mut asked = serde_json::to_value(request).map_err(|e| Unanswered::Failed(e.to_string()))?;
    if let Some(meta) = asked.pointer_mut("/params/_meta").and_then(Value::as_object_mut) {
        meta.remove(RELATED_TASK);
    }
    let asked = gate
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
        ServerRequest::ListRootsRequest(_) => {
            serde_json::from_value::<ListRootsResult>(answer).map(ClientResult::ListRootsResult)
        }
        // The relay passes on only the three questions above.
        _ => return Err(Unanswered::Failed("it is not a question a client answers".into())),
    };
    parsed.map_err(|e| Unanswered::Failed(format!("its answer does not parse: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server's question that names a secret the host holds, and its own
    /// task: the client is shown neither.
    #[test]
    fn a_question_is_shown_through_the_gate_without_the_servers_task() {
        const SECRET: &str = "sk-live-0123456789abcdef";
        let gate = Gate::new([("X-Api-Key", SECRET)]);
        let request: ServerRequest = serde_json::from_value(serde_json::json!({
            "method": "elicitation/create",
            "params": {
                "message": format!("Is {SECRET} your key?"),
                "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}},
                "_meta": {RELATED_TASK: {"taskId": "t-9"}, "kept": 1},
            },
        }))
        .unwrap();
        let shown = serde_json::to_value(shown(&gate, &request).unwrap()).unwrap();
        let text = shown.to_string();
        assert!(!text.contains(SECRET) && !text.contains("t-9"), "{text}");
        assert!(
            shown["params"]["message"].as_str().unwrap().starts_with("Is "),
            "{text}"
        );
        assert_eq!(shown["method"], "elicitation/create", "{text}");
    }

    /// An answer that does not fit what was asked is an error, not a guess.
    #[test]
    fn an_answer_of_another_kind_is_refused() {
        let request: ServerRequest = serde_json::from_value(serde_json::json!({
            "method": "elicitation/create",
            "params": {"message": "ok?", "requestedSchema": {"type": "object", "properties": {}}},
        }))
        .unwrap();
        assert!(answered(&request, serde_json::json!({"action": "accept", "content": {}})).is_ok());
        let wrong = answered(&request, serde_json::json!({"roots": []}));
        assert!(matches!(wrong, Err(Unanswered::Failed(why)) if why.contains("does not parse")));
    }
}
