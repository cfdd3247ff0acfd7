//! How the stdio front reads its client's lines (`crate::lines` is the
//! transport): each line's `params.task` carried into its `_meta` first
//! (`wire`), then a well-formed `tools/call`, the line a client sends most,
//! parsed as rmcp's `CallToolRequest` directly; every other line, and a
//! `tools/call` that is not well-formed, as rmcp reads it. A test holds the
//! two reads equal line by line.
//!
//! Until the session says which revision it speaks (an `initialize`, or a
//! 2026-07-28 request, whose `params._meta` names its revision), a request
//! that says neither is refused here, saying to initialize: rmcp took it
//! for a 2026-07-28 request and answered that `_meta` lacked fields, which
//! a 2025 client that forgot `initialize` could not make sense of.

use rmcp::ErrorData;
use rmcp::model::{CallToolRequest, ClientRequest, JsonRpcMessage, JsonRpcRequest, RequestId};
use rmcp::service::{RoleServer, RxJsonRpcMessage};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::wire::{MAX_CARRIED_LINE, carry_task};
use crate::lines::{Line, NoMessage, ReadLines, Shape, by_rmcp, without_bom};

/// Where a 2026-07-28 request names its revision, in `params._meta`.
const REVISION_KEY: &str = "io.modelcontextprotocol/protocolVersion";

/// The front's reading of a client's lines.
#[derive(Default)]
pub(super) struct ClientLines {
    /// Whether the session has said its revision.
    opened: bool,
}

impl ReadLines<RoleServer> for ClientLines {
    fn read(&mut self, line: &[u8]) -> Option<Line<RoleServer>> {
        if !self.opened
            && let Some(refused) = self.unopened(line)
        {
            return Some(Err(refused));
        }
        let carried = (line.len() <= MAX_CARRIED_LINE)
            .then(|| carry_task(line))
            .flatten();
        let line = carried.as_deref().unwrap_or(line);
        match tool_call(line) {
            Some(call) => Some(Ok(call)),
            None => by_rmcp::<RoleServer>(line),
        }
    }
}

impl ClientLines {
    /// The refusal of `line` if it is a request, other than a `ping`, sent
    /// before the session said its revision and saying none itself; marks
    /// the session opened by one that says it.
    fn unopened(&mut self, line: &[u8]) -> Option<NoMessage> {
        #[derive(Deserialize)]
        struct Opening {
            method: Option<String>,
            id: Option<RequestId>,
            params: Option<Params>,
        }
        #[derive(Deserialize)]
        struct Params {
            #[serde(rename = "_meta")]
            meta: Option<Map<String, Value>>,
        }
        let opening: Opening = serde_json::from_slice(without_bom(line)).ok()?;
        let method = opening.method?;
        let names_revision = opening
            .params
            .and_then(|p| p.meta)
            .is_some_and(|meta| meta.contains_key(REVISION_KEY));
        if method == "initialize" || names_revision {
            self.opened = true;
            return None;
        }
        let id = opening.id.filter(|_| method != "ping")?;
        let why = format!(
            "`{}` before `initialize`: open the session with `initialize` first (MCP 2025-11-25 and \
             earlier), or name the revision in each request's `params._meta` ({REVISION_KEY} and \
             io.modelcontextprotocol/clientCapabilities, MCP 2026-07-28)",
            crate::bounds::label(&method)
        );
        Some(NoMessage::refused(id, ErrorData::invalid_request(why, None)))
    }
}

/// `line` as a `tools/call` request, if it is one that parses as such. In
/// rmcp's union of request types, each variant before `CallToolRequest`
/// takes only its own method, and the catch-all `CustomRequest` comes
/// after it: so a line this reads is one rmcp reads the same.
fn tool_call(line: &[u8]) -> Option<RxJsonRpcMessage<RoleServer>> {
    if !Shape::of(line)?.is_tool_call() {
        return None;
    }
    let request: JsonRpcRequest<CallToolRequest> = serde_json::from_slice(without_bom(line)).ok()?;
    Some(JsonRpcMessage::Request(JsonRpcRequest {
        jsonrpc: request.jsonrpc,
        id: request.id,
        request: ClientRequest::CallToolRequest(request.request),
    }))
}

#[cfg(test)]
mod tests {
    use rmcp::transport::Transport;
    use serde_json::{Value, json};
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf};

    use super::*;
    use crate::lines::Lines;
    use crate::lines::tests::{as_debug, as_read};
    use crate::mcp::wire::TASK_KEY;

    /// A reading of a session that has said its revision.
    fn opened() -> ClientLines {
        ClientLines { opened: true }
    }

    /// A 2025 client that forgets `initialize` is told to send it, not that
    /// `_meta` lacks 2026-07-28's fields; a `ping`, a notification or an
    /// answer is read as ever. `initialize`, or a request naming its
    /// revision in `_meta`, opens the session, and then every line reads as
    /// rmcp reads it.
    #[test]
    fn a_request_before_the_session_says_its_revision_is_told_to_initialize() {
        let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string() + "\n";
        for opening in [
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}}),
            json!({"jsonrpc": "2.0", "id": 0, "method": "tools/list", "params": {"_meta": {
                REVISION_KEY: "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}}}),
        ] {
            let mut reading = ClientLines::default();
            let Some(Err(refused)) = reading.read(list.as_bytes()) else {
                panic!("{list} is refused");
            };
            let refused = format!("{refused:?}");
            assert!(
                refused
                    .contains("`tools/list` before `initialize`: open the session with `initialize` first"),
                "{refused}"
            );
            for read_as_ever in [
                json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}),
                json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}),
                json!({"jsonrpc": "2.0", "id": 3, "result": {}}),
            ] {
                let line = read_as_ever.to_string() + "\n";
                assert_eq!(
                    as_debug(reading.read(line.as_bytes())),
                    as_debug(by_rmcp::<RoleServer>(line.as_bytes())),
                    "{line}"
                );
            }
            let opening = opening.to_string() + "\n";
            assert!(
                matches!(reading.read(opening.as_bytes()), Some(Ok(_))),
                "{opening}"
            );
            assert_eq!(
                as_debug(reading.read(list.as_bytes())),
                as_debug(by_rmcp::<RoleServer>(list.as_bytes())),
            );
        }
    }

    /// The front's transport over an in-memory pipe.
    type Front = Lines<RoleServer, ReadHalf<DuplexStream>, WriteHalf<DuplexStream>, ClientLines>;

    /// A [`Front`] over a pipe of `capacity` bytes, with the client's
    /// reading and writing ends.
    fn session(capacity: usize) -> (Front, ReadHalf<DuplexStream>, WriteHalf<DuplexStream>) {
        let (client, server) = tokio::io::duplex(capacity);
        let (read, write) = tokio::io::split(server);
        let (client_read, client_write) = tokio::io::split(client);
        (Lines::new(read, write, opened()), client_read, client_write)
    }

    #[test]
    fn every_line_reads_as_rmcp_reads_it() {
        let lines = [
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "read", "arguments": {"path": "a"}}}).to_string(),
            json!({"jsonrpc": "2.0", "id": "x", "method": "tools/call", "params": {"name": "read", "arguments": {"n": 1.5, "big": 18446744073709551615u64, "neg": -3, "l": [null, true]}, "_meta": {"progressToken": 7, "other": {"a": 1}}}}).to_string(),
            json!({"id": 2, "jsonrpc": "2.0", "params": {"name": "read"}, "method": "tools/call", "extra": 1}).to_string(),
            // Not well-formed calls: rmcp takes them for custom requests,
            // or refuses them; the fast path leaves them to it.
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"arguments": {}}}).to_string(),
            json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call"}).to_string(),
            json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": 5}}).to_string(),
            json!({"jsonrpc": "1.0", "id": 6, "method": "tools/call", "params": {"name": "read"}}).to_string(),
            json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "read"}, "result": null}).to_string(),
            json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "read"}, "error": {}}).to_string(),
            json!({"jsonrpc": "2.0", "id": null, "method": "tools/call", "params": {"name": "read"}}).to_string(),
            json!({"jsonrpc": "2.0", "id": 9.5, "method": "tools/call", "params": {"name": "read"}}).to_string(),
            json!({"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "read"}}).to_string(),
            r#"{"jsonrpc":"2.0","id":10,"method":"tools\/call","params":{"name":"re\u0061d"}}"#.to_owned(),
            r#"{"jsonrpc":"2.0","id":11,"method":"tools/call","method":"tools/list","params":{"name":"read"}}"#.to_owned(),
            r#"{"jsonrpc":"2.0","id":11,"method":"tools/list","method":"tools/call","params":{"name":"read"}}"#.to_owned(),
            "\u{feff}{\"jsonrpc\":\"2.0\",\"id\":12,\"method\":\"tools/call\",\"params\":{\"name\":\"read\"}}\r".to_owned(),
            json!({"jsonrpc": "2.0", "id": 13, "method": "tools/call", "params": {"name": "t", "task": {"ttl": 5}}}).to_string(),
            // Everything else is rmcp's own parse.
            json!({"jsonrpc": "2.0", "id": 14, "method": "tools/list"}).to_string(),
            json!({"jsonrpc": "2.0", "id": 15, "method": "ping"}).to_string(),
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}).to_string(),
            json!({"jsonrpc": "2.0", "method": "notifications/vendor/thing"}).to_string(),
            json!({"jsonrpc": "2.0", "method": "textDocument/didOpen"}).to_string(),
            json!({"jsonrpc": "2.0", "id": 16, "result": {}}).to_string(),
            json!({"jsonrpc": "2.0", "id": 17, "error": {"code": -1, "message": "no"}}).to_string(),
            json!({"jsonrpc": "2.0", "id": 18, "method": "vendor/custom", "params": {"a": 1}}).to_string(),
            json!([1, 2]).to_string(),
            json!({"jsonrpc": "2.0"}).to_string(),
            "{\"jsonrpc\": \"2.0\", \"id\": 19, \"method\": \"tools/call\", ".to_owned(),
            "not json".to_owned(),
            "\"tools/call\"".to_owned(),
        ];
        for line in &lines {
            let carried = carry_task(line.as_bytes()).unwrap_or_else(|| line.as_bytes().to_vec());
            assert_eq!(
                as_debug(as_read(opened(), line.as_bytes())),
                as_debug(by_rmcp::<RoleServer>(&carried)),
                "{line}"
            );
        }
        assert!(
            tool_call(lines[0].as_bytes()).is_some(),
            "a call is read on the fast path"
        );
        assert!(
            tool_call(lines[3].as_bytes()).is_none(),
            "a call without a name is rmcp's to read"
        );
    }

    #[tokio::test]
    async fn a_session_reads_its_lines_carries_a_task_drops_a_long_line_and_answers_one_that_is_no_message() {
        let (mut lines, client_read, mut client_write) = session(1 << 16);
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "t", "task": {"ttl": 5}}});
        let long = format!(
            "{{\"task\": \"{}\"}}",
            "x".repeat(rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH)
        );
        let input = format!(
            "{call}\n\n{long}\n[1]\n{{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}}\n{{\"id\":3"
        );
        let writing = tokio::spawn(async move {
            client_write.write_all(input.as_bytes()).await.unwrap();
            client_write.shutdown().await.unwrap();
            client_write
        });
        let Some(JsonRpcMessage::Request(first)) = lines.receive().await else {
            panic!("the call is read");
        };
        let ClientRequest::CallToolRequest(first) = first.request else {
            panic!("as a call");
        };
        let meta = serde_json::to_value(&first).unwrap()["params"]["_meta"].take();
        assert_eq!(meta[TASK_KEY], json!({"ttl": 5}), "{meta}");
        let Some(JsonRpcMessage::Request(ping)) = lines.receive().await else {
            panic!("the line after the long one is read");
        };
        assert_eq!(ping.request.method(), "ping");
        assert!(
            lines.receive().await.is_none(),
            "the unfinished last line is not delivered"
        );
        drop(writing.await.unwrap());
        lines.close().await.unwrap();
        let mut answers = BufReader::new(client_read).lines();
        let refusal: Value = serde_json::from_str(&answers.next_line().await.unwrap().unwrap()).unwrap();
        assert_eq!(refusal["error"]["code"], -32600, "{refusal}");
    }

    #[tokio::test]
    async fn a_request_under_an_id_not_yet_answered_is_refused_and_the_id_is_free_once_answered() {
        use rmcp::model::{RequestId, ServerJsonRpcMessage, ServerResult};

        let (mut lines, client_read, mut client_write) = session(1 << 16);
        let ping = |id: u32| format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"ping\"}}\n");
        let id_of = |message: Option<RxJsonRpcMessage<RoleServer>>| match message {
            Some(JsonRpcMessage::Request(request)) => request.id.to_string(),
            other => format!("{other:?}"),
        };
        let input = [ping(1), ping(1), ping(2)].concat();
        client_write.write_all(input.as_bytes()).await.unwrap();

        assert_eq!(id_of(lines.receive().await), "1");
        assert_eq!(id_of(lines.receive().await), "2", "the second 1 is not worked on");
        let answer = ServerJsonRpcMessage::response(ServerResult::empty(()), RequestId::Number(1));
        lines.send(answer).await.unwrap();
        client_write.write_all(ping(1).as_bytes()).await.unwrap();
        assert_eq!(id_of(lines.receive().await), "1", "an id answered is free again");

        let mut written = BufReader::new(client_read).lines();
        let refusal: Value = serde_json::from_str(&written.next_line().await.unwrap().unwrap()).unwrap();
        assert_eq!(refusal["id"], 1, "{refusal}");
        assert_eq!(refusal["error"]["code"], -32600, "{refusal}");
        assert!(
            refusal["error"]["message"]
                .as_str()
                .unwrap()
                .contains("already used"),
            "{refusal}"
        );
        let answer: Value = serde_json::from_str(&written.next_line().await.unwrap().unwrap()).unwrap();
        assert_eq!(
            (answer["id"].clone(), answer["result"].clone()),
            (json!(1), json!({}))
        );
    }

    #[tokio::test]
    async fn at_the_unanswered_bound_one_request_is_held_and_answers_and_cancellations_are_still_read() {
        use futures::FutureExt;
        use rmcp::model::{RequestId, ServerJsonRpcMessage, ServerResult};

        use crate::lines::MAX_UNANSWERED;

        async fn next(lines: &mut impl Transport<RoleServer>) -> String {
            match lines.receive().await {
                Some(JsonRpcMessage::Request(request)) => request.id.to_string(),
                Some(JsonRpcMessage::Notification(n)) => format!("{:?}", n.notification),
                Some(JsonRpcMessage::Response(r)) => format!("answer {}", r.id),
                other => format!("{other:?}"),
            }
        }
        let (mut lines, client_read, mut client_write) = session(1 << 20);
        let ping = |id: usize| format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"ping\"}}\n");
        let cancel = |id: usize| {
            format!(
                "{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{{\"requestId\":{id}}}}}\n"
            )
        };
        let answer = "{\"jsonrpc\":\"2.0\",\"id\":\"h-1\",\"result\":{}}\n";
        let mut input: String = (1..=MAX_UNANSWERED).map(ping).collect();
        input += answer;
        input += &cancel(1);
        input += &ping(MAX_UNANSWERED + 1);
        input += &ping(MAX_UNANSWERED + 2);
        input += &cancel(3);
        input += &ping(MAX_UNANSWERED + 3);
        input += &ping(MAX_UNANSWERED + 4);
        client_write.write_all(input.as_bytes()).await.unwrap();

        for id in 1..=MAX_UNANSWERED {
            assert_eq!(next(&mut lines).await, id.to_string());
        }
        assert_eq!(
            next(&mut lines).await,
            "answer h-1",
            "an answer to the host is read at the bound"
        );
        assert!(
            next(&mut lines).await.starts_with("CancelledNotification"),
            "a cancellation is read at the bound"
        );
        assert_eq!(
            next(&mut lines).await,
            (MAX_UNANSWERED + 1).to_string(),
            "the cancelled request's place is taken"
        );
        assert!(
            lines.receive().now_or_never().is_none(),
            "the next request is held, and the cancellation behind it not read"
        );
        let answered = ServerJsonRpcMessage::response(ServerResult::empty(()), RequestId::Number(2));
        lines.send(answered).await.unwrap();
        assert_eq!(
            next(&mut lines).await,
            (MAX_UNANSWERED + 2).to_string(),
            "an answer written, the held request takes its place"
        );
        assert!(next(&mut lines).await.starts_with("CancelledNotification"));
        assert_eq!(next(&mut lines).await, (MAX_UNANSWERED + 3).to_string());
        assert!(
            lines.receive().now_or_never().is_none(),
            "and the bound holds again"
        );

        let mut written = BufReader::new(client_read).lines();
        let answer: Value = serde_json::from_str(&written.next_line().await.unwrap().unwrap()).unwrap();
        assert_eq!(answer["id"], 2, "{answer}");
    }
}
