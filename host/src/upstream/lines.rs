//! How the host reads a stdio server's lines (`crate::lines` is the
//! transport; `bounded` has bounded them and carried what rmcp would drop):
//! the answer to a `tools/call` the host sent, the line a server sends
//! most, is parsed as rmcp's `CallToolResult` directly; every other line,
//! and an answer that is no call's result, as rmcp reads it.
//!
//! rmcp reads an answer as the first of its result types that fits, the
//! call's result sixteenth; the answer to a call is read here as the
//! call's result it is. The two agree on every answer a call's result can
//! be (a test holds them equal); one that also has another type's
//! required keys (a `tools` list beside its `content`, say) rmcp takes for
//! that other type, which the host then refuses as a call's answer, and
//! is read here as the call's result.

use std::collections::HashSet;

use rmcp::model::{
    CallToolResult, ClientNotification, ClientRequest, JsonRpcMessage, JsonRpcResponse, RequestId,
    ServerResult,
};
use rmcp::service::{RoleClient, TxJsonRpcMessage};

use crate::lines::{Line, ReadLines, Shape, by_rmcp, without_bom};

/// The calls awaiting their answer that are tracked: one its server never
/// answers stays tracked until the host abandons it, and past this many
/// the answers to newer calls are read as rmcp reads them.
const MAX_CALLS: usize = 1024;

/// The host's reading of one server's lines.
#[derive(Default)]
pub(super) struct ServerLines {
    /// The ids of the calls sent and neither answered nor abandoned yet.
    calls: HashSet<RequestId>,
}

impl ReadLines<RoleClient> for ServerLines {
    fn read(&mut self, line: &[u8]) -> Option<Line<RoleClient>> {
        if let Some(shape) = Shape::of(line)
            && let Some(id) = shape.answer_id()
            && self.calls.remove(id)
            && shape.response_id().is_some()
            && let Ok(answer) = serde_json::from_slice::<JsonRpcResponse<CallToolResult>>(without_bom(line))
        {
            return Some(Ok(JsonRpcMessage::Response(JsonRpcResponse {
                jsonrpc: answer.jsonrpc,
                id: answer.id,
                result: ServerResult::CallToolResult(answer.result),
            })));
        }
        by_rmcp::<RoleClient>(line)
    }

    fn sent(&mut self, message: &TxJsonRpcMessage<RoleClient>) {
        match message {
            JsonRpcMessage::Request(request)
                if matches!(request.request, ClientRequest::CallToolRequest(_))
                    && self.calls.len() < MAX_CALLS =>
            {
                self.calls.insert(request.id.clone());
            }
            // A call abandoned (its caller gone, its deadline passed) may
            // never be answered: it is no longer awaited either.
            JsonRpcMessage::Notification(notification) => {
                if let ClientNotification::CancelledNotification(cancelled) = &notification.notification
                    && let Some(id) = &cancelled.params.request_id
                {
                    self.calls.remove(id);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::{
        CallToolRequest, CallToolRequestParams, CancelledNotification, CancelledNotificationParam,
        ClientRequest, JsonRpcNotification, JsonRpcRequest, JsonRpcVersion2_0, NumberOrString,
    };
    use serde_json::json;

    use super::*;
    use crate::lines::tests::{as_debug, as_read};

    fn after_calls(ids: &[i64]) -> ServerLines {
        let mut lines = ServerLines::default();
        for id in ids {
            let call = CallToolRequest::new(CallToolRequestParams::new("echo"));
            let request =
                JsonRpcRequest::new(NumberOrString::Number(*id), ClientRequest::CallToolRequest(call));
            lines.sent(&JsonRpcMessage::Request(request));
        }
        lines
    }

    #[test]
    fn every_answer_to_a_call_reads_as_rmcp_reads_it() {
        let answers = [
            json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "hi"}]}}),
            json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "hi", "annotations": {"priority": 0.5}}], "isError": false, "_meta": {"k": [1, 2.5]}}}),
            json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [], "structuredContent": {"n": 18446744073709551615u64}}}),
            json!({"jsonrpc": "2.0", "id": 1, "result": {"structuredContent": null}}),
            json!({"jsonrpc": "2.0", "id": 1, "result": {"isError": true, "content": [{"type": "image", "data": "AAAA", "mimeType": "image/png"}]}}),
            json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "resource_link", "uri": "file:///a", "name": "a"}], "resultType": "complete"}}),
            json!({"result": {"content": [{"type": "text", "text": "keys in any order"}]}, "id": 1, "jsonrpc": "2.0"}),
            // Answers that are no call's result: rmcp's to read.
            json!({"jsonrpc": "2.0", "id": 1, "result": {}}),
            json!({"jsonrpc": "2.0", "id": 1, "result": {"_meta": {"toolhost.internal/answer": {"task": {}}}}}),
            json!({"jsonrpc": "2.0", "id": 1, "result": {"resultType": "input_required", "inputRequests": {}}}),
            json!({"jsonrpc": "2.0", "id": 1, "result": {"content": "not a list"}}),
            json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "no such tool"}}),
            json!({"jsonrpc": "2.0", "id": 1, "result": {"content": []}, "error": {"code": 1, "message": "both"}}),
            json!({"jsonrpc": "1.0", "id": 1, "result": {"content": []}}),
        ];
        for answer in &answers {
            let line = answer.to_string();
            let read = as_read(after_calls(&[1]), line.as_bytes());
            assert_eq!(
                as_debug(read),
                as_debug(by_rmcp::<RoleClient>(line.as_bytes())),
                "{line}"
            );
        }
        let line = answers[0].to_string();
        let mut lines = after_calls(&[1]);
        assert!(matches!(
            lines.read(line.as_bytes()),
            Some(Ok(JsonRpcMessage::Response(_)))
        ));
        assert!(lines.calls.is_empty(), "an answered call is no longer tracked");
        let unasked = json!({"jsonrpc": "2.0", "id": 2, "result": {"content": []}}).to_string();
        assert_eq!(
            as_debug(as_read(after_calls(&[1]), unasked.as_bytes())),
            as_debug(by_rmcp::<RoleClient>(unasked.as_bytes())),
            "an answer to no call is rmcp's to read"
        );
    }

    #[test]
    fn calls_are_tracked_up_to_the_bound_and_until_abandoned() {
        let ids: Vec<i64> = (0..MAX_CALLS as i64 + 10).collect();
        assert_eq!(after_calls(&ids).calls.len(), MAX_CALLS);
        let mut lines = after_calls(&[1, 2]);
        let cancel = |id| {
            let params = CancelledNotificationParam::new(Some(NumberOrString::Number(id)), None);
            JsonRpcMessage::Notification(JsonRpcNotification {
                jsonrpc: JsonRpcVersion2_0,
                notification: ClientNotification::CancelledNotification(CancelledNotification::new(params)),
            })
        };
        lines.sent(&cancel(1));
        lines.sent(&cancel(7));
        assert_eq!(lines.calls, HashSet::from([NumberOrString::Number(2)]));
    }
}
