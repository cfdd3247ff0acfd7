//! The stdio transport: one JSON-RPC message a line, each read within a
//! bound, a client's `tools/call` parsed as the one type it is.
//!
//! rmcp reads a message as its untagged `JsonRpcMessage` of `ClientRequest`
//! variants, tried one after another until one fits; a `tools/call` is the
//! fourteenth, and every failed variant builds an error on the way. That was
//! about an eighth of the host's CPU for a stdio call. Here the line's shape
//! and method are read first, without allocating, and a well-formed
//! `tools/call` is parsed directly as rmcp's `CallToolRequest`: the same value
//! rmcp's own parse gives (a test holds the two equal). Every other line,
//! and a `tools/call` that is not well-formed, goes through rmcp's codec, so
//! its compatibility rules stay its own: a leading byte order mark is
//! skipped, notifications outside MCP are ignored, a line that is not JSON
//! is dropped, and JSON that is not a message is answered `Invalid Request`.
//!
//! Each line's `params.task` is carried into its `_meta` first (`wire`).
//! A line over [`MAX_LINE`] is dropped, as rmcp's transport drops it, and
//! the session goes on. Not here: the pipes themselves (`stdio`), what the
//! front adds to its answers (`wire::Wire`).

use std::io;
use std::sync::Arc;

use futures::{SinkExt, StreamExt};
use rmcp::model::{CallToolRequest, ClientRequest, ErrorData, JsonRpcMessage, JsonRpcRequest};
use rmcp::service::{RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::{DEFAULT_MAX_LINE_LENGTH, JsonRpcMessageCodec, JsonRpcMessageCodecError};
use serde::Deserialize;
use serde::de::{IgnoredAny, MapAccess, Visitor};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::Mutex;
use tokio_util::bytes::{Buf, BytesMut};
use tokio_util::codec::{Decoder, FramedRead, FramedWrite};

use super::wire::{MAX_CARRIED_LINE, carry_task};

/// The longest line read as a message: rmcp's own bound, so that what is
/// accepted over HTTP is accepted over stdio.
pub(super) const MAX_LINE: usize = DEFAULT_MAX_LINE_LENGTH;

type Writer<W> = FramedWrite<W, JsonRpcMessageCodec<TxJsonRpcMessage<RoleServer>>>;

/// A client's session over a reader and a writer, one message a line.
pub(super) struct Lines<R, W> {
    read: FramedRead<R, ClientLines>,
    /// Shared with each `send`'s future, which must own what it writes to;
    /// `None` once closed.
    write: Arc<Mutex<Option<Writer<W>>>>,
    refusal: Refusal,
}

/// Where the answer to a line that was JSON but no message stands, kept
/// across a `receive` cancelled while writing it, so it is sent once.
#[derive(Clone, Copy, PartialEq)]
enum Refusal {
    None,
    ToWrite,
    ToFlush,
}

impl<R: AsyncRead, W: AsyncWrite> Lines<R, W> {
    pub(super) fn new(read: R, write: W) -> Self {
        Self {
            read: FramedRead::new(read, ClientLines::default()),
            write: Arc::new(Mutex::new(Some(FramedWrite::new(
                write,
                JsonRpcMessageCodec::default(),
            )))),
            refusal: Refusal::None,
        }
    }
}

impl<R, W> Transport<RoleServer> for Lines<R, W>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let write = self.write.clone();
        async move {
            match write.lock().await.as_mut() {
                Some(framed) => framed.send(item).await.map_err(io::Error::from),
                None => Err(io::Error::new(
                    io::ErrorKind::NotConnected,
                    "the transport is closed",
                )),
            }
        }
    }

    // Cancel-safe, as rmcp's service loop needs (it polls `receive` against
    // its other work): a partial line stays in `FramedRead`'s buffer, and
    // a refusal being written in `refusal`.
    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            if self.refusal != Refusal::None {
                let mut write = self.write.lock().await;
                let framed = write.as_mut()?;
                if self.refusal == Refusal::ToWrite {
                    let refused = ErrorData::invalid_request("Invalid request", None);
                    framed
                        .feed(TxJsonRpcMessage::<RoleServer>::error(refused, None))
                        .await
                        .ok()?;
                    self.refusal = Refusal::ToFlush;
                }
                framed.flush().await.ok()?;
                self.refusal = Refusal::None;
            }
            match self.read.next().await? {
                Ok(Ok(message)) => return Some(message),
                Ok(Err(NoMessage)) => self.refusal = Refusal::ToWrite,
                Err(e) => {
                    tracing::error!("reading the client's stdin: {e}");
                    return None;
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.write.lock().await.take();
        Ok(())
    }
}

/// One line read, as the session takes it: a message, or JSON that is no
/// message, which is answered `Invalid Request`.
type Line = Result<RxJsonRpcMessage<RoleServer>, NoMessage>;

#[derive(Debug)]
struct NoMessage;

/// Splits the client's bytes into lines within [`MAX_LINE`] and reads each.
#[derive(Default)]
struct ClientLines {
    /// Where the search for the next newline resumes.
    searched: usize,
    /// Set while the rest of a line over the bound is dropped.
    dropping: bool,
    rmcp: JsonRpcMessageCodec<RxJsonRpcMessage<RoleServer>>,
}

impl Decoder for ClientLines {
    type Item = Line;
    type Error = io::Error;

    fn decode(&mut self, buf: &mut BytesMut) -> io::Result<Option<Line>> {
        loop {
            if self.dropping {
                match buf.iter().position(|b| *b == b'\n') {
                    Some(at) => {
                        buf.advance(at + 1);
                        self.dropping = false;
                    }
                    None => {
                        buf.clear();
                        return Ok(None);
                    }
                }
            }
            let within = buf.len().min(MAX_LINE + 1);
            match buf[self.searched..within].iter().position(|b| *b == b'\n') {
                Some(at) => {
                    let line = buf.split_to(self.searched + at + 1);
                    self.searched = 0;
                    if let Some(line) = self.read(&line) {
                        return Ok(Some(line));
                    }
                }
                None if buf.len() > MAX_LINE => {
                    tracing::error!(max = MAX_LINE, "a message over the longest line read was dropped");
                    buf.advance(within);
                    self.searched = 0;
                    self.dropping = true;
                }
                None => {
                    self.searched = buf.len();
                    return Ok(None);
                }
            }
        }
    }

    /// A last line without its newline is incomplete: nothing to deliver.
    fn decode_eof(&mut self, buf: &mut BytesMut) -> io::Result<Option<Line>> {
        let line = self.decode(buf)?;
        buf.clear();
        Ok(line)
    }
}

impl ClientLines {
    /// `line` (with its newline) as the session takes it; `None` for a line
    /// to skip.
    fn read(&mut self, line: &[u8]) -> Option<Line> {
        let carried = (line.len() <= MAX_CARRIED_LINE)
            .then(|| carry_task(line))
            .flatten();
        let line = carried.as_deref().unwrap_or(line);
        if let Some(call) = tool_call(line) {
            return Some(Ok(call));
        }
        let mut buf = BytesMut::from(line);
        if !line.ends_with(b"\n") {
            buf.extend_from_slice(b"\n");
        }
        match self.rmcp.decode(&mut buf) {
            Ok(message) => message.map(Ok),
            Err(JsonRpcMessageCodecError::Serde(e)) if !e.is_syntax() && !e.is_eof() => Some(Err(NoMessage)),
            // Not JSON: no id to answer, and an answer could start an error
            // storm with a peer that echoes it back.
            Err(e) => {
                tracing::debug!("ignoring an unreadable line from the client: {e}");
                None
            }
        }
    }
}

/// `line` as a `tools/call` request, if it is one that parses as such: a
/// JSON object with `method` and `id` and neither `result` nor `error` (the
/// shape rmcp takes for a request), whose method is `tools/call`.
fn tool_call(line: &[u8]) -> Option<RxJsonRpcMessage<RoleServer>> {
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    let shape: Shape = serde_json::from_slice(line).ok()?;
    if !shape.is_call() {
        return None;
    }
    let request: JsonRpcRequest<CallToolRequest> = serde_json::from_slice(line).ok()?;
    Some(JsonRpcMessage::Request(JsonRpcRequest {
        jsonrpc: request.jsonrpc,
        id: request.id,
        request: ClientRequest::CallToolRequest(request.request),
    }))
}

/// Which of a message's keys are there, and whether its method is
/// `tools/call`; read without allocating.
#[derive(Default)]
struct Shape {
    call: bool,
    id: bool,
    result: bool,
    error: bool,
}

impl Shape {
    fn is_call(&self) -> bool {
        self.call && self.id && !self.result && !self.error
    }
}

impl<'de> Deserialize<'de> for Shape {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(ShapeVisitor)
    }
}

struct ShapeVisitor;

impl<'de> Visitor<'de> for ShapeVisitor {
    type Value = Shape;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON-RPC message")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Shape, A::Error> {
        let mut shape = Shape::default();
        while let Some(key) = map.next_key::<Key>()? {
            match key {
                Key::Method => shape.call = map.next_value::<Method>()? == Method::ToolsCall,
                Key::Id => (shape.id, _) = (true, map.next_value::<IgnoredAny>()?),
                Key::Result => (shape.result, _) = (true, map.next_value::<IgnoredAny>()?),
                Key::Error => (shape.error, _) = (true, map.next_value::<IgnoredAny>()?),
                Key::Other => _ = map.next_value::<IgnoredAny>()?,
            }
        }
        Ok(shape)
    }
}

#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "lowercase")]
enum Key {
    Method,
    Id,
    Result,
    Error,
    #[serde(other)]
    Other,
}

#[derive(Deserialize, PartialEq)]
#[serde(field_identifier)]
enum Method {
    #[serde(rename = "tools/call")]
    ToolsCall,
    #[serde(other)]
    Other,
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    use super::*;
    use crate::mcp::wire::TASK_KEY;

    /// A line as rmcp's own codec reads it: the reference the fast path is
    /// held to.
    fn as_rmcp_reads(line: &[u8]) -> Option<Line> {
        let mut buf = BytesMut::from(line);
        buf.extend_from_slice(b"\n");
        match JsonRpcMessageCodec::<RxJsonRpcMessage<RoleServer>>::default().decode(&mut buf) {
            Ok(message) => message.map(Ok),
            Err(JsonRpcMessageCodecError::Serde(e)) if !e.is_syntax() && !e.is_eof() => Some(Err(NoMessage)),
            Err(_) => None,
        }
    }

    fn as_read(line: &[u8]) -> Option<Line> {
        let mut buf = BytesMut::from(line);
        buf.extend_from_slice(b"\n");
        ClientLines::default().decode(&mut buf).unwrap()
    }

    fn value(line: Option<Line>) -> Value {
        match line {
            None => json!("skipped"),
            Some(Err(NoMessage)) => json!("invalid request"),
            Some(Ok(message)) => json!({
                "variant": match &message {
                    JsonRpcMessage::Request(r) => r.request.method().to_owned(),
                    other => format!("{:?}", std::mem::discriminant(other)),
                },
                "message": serde_json::to_value(&message).unwrap(),
            }),
        }
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
            // Everything else is rmcp's own parse.
            json!({"jsonrpc": "2.0", "id": 13, "method": "tools/list"}).to_string(),
            json!({"jsonrpc": "2.0", "id": 14, "method": "ping"}).to_string(),
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}).to_string(),
            json!({"jsonrpc": "2.0", "method": "notifications/vendor/thing"}).to_string(),
            json!({"jsonrpc": "2.0", "method": "textDocument/didOpen"}).to_string(),
            json!({"jsonrpc": "2.0", "id": 15, "result": {}}).to_string(),
            json!({"jsonrpc": "2.0", "id": 16, "error": {"code": -1, "message": "no"}}).to_string(),
            json!({"jsonrpc": "2.0", "id": 17, "method": "vendor/custom", "params": {"a": 1}}).to_string(),
            json!([1, 2]).to_string(),
            json!({"jsonrpc": "2.0"}).to_string(),
            "{\"jsonrpc\": \"2.0\", \"id\": 18, \"method\": \"tools/call\", ".to_owned(),
            "not json".to_owned(),
            "\"tools/call\"".to_owned(),
        ];
        for line in &lines {
            assert_eq!(
                value(as_read(line.as_bytes())),
                value(as_rmcp_reads(line.as_bytes())),
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
        let (client, server) = tokio::io::duplex(1 << 16);
        let (read, write) = tokio::io::split(server);
        let mut lines = Lines::new(read, write);
        let (client_read, mut client_write) = tokio::io::split(client);
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "t", "task": {"ttl": 5}}});
        let long = format!("{{\"task\": \"{}\"}}", "x".repeat(MAX_LINE));
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
}
