//! A stdio server's output, one message a line, bounded: a line over the
//! server's message cap is never handed on whole. If it was the answer to a
//! request (a JSON-RPC response: an `id`, no `method`), the request is
//! answered at once with an error saying so, in its place; anything else
//! over the cap (a request or notification of the server's own) is dropped.
//! Without this the MCP client drops such a line and its request waits for
//! an answer that never comes. A line within the cap is handed on with
//! what rmcp would drop carried (`carried`).
//!
//! The `id` is found by a streaming scan of the line's top-level keys
//! ([`Scan`]), so the line is never held past the cap. Not here: the MCP
//! session over these lines (rmcp), and the call's deadline (`upstream`).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, ReadBuf};

/// Bytes read from the server at a time.
const CHUNK: usize = 64 << 10;

/// Longest `id` kept: JSON-RPC ids are short numbers or strings.
const MAX_ID: usize = 256;

/// The server's stdout, each line passed on whole once it is complete and
/// within `cap` bytes.
pub(super) struct BoundedLines<R> {
    inner: R,
    cap: usize,
    /// The server's name, for the error and the log.
    server: String,
    /// The line being read, while within the cap.
    line: Vec<u8>,
    /// Set while the rest of a line over the cap is read and dropped.
    over: Option<Scan>,
    /// Whole lines ready for the reader, from `at`.
    ready: Vec<u8>,
    at: usize,
    chunk: Box<[u8]>,
}

impl<R> BoundedLines<R> {
    pub(super) fn new(inner: R, cap: usize, server: &str) -> Self {
        Self {
            inner,
            cap,
            server: server.to_owned(),
            line: Vec::new(),
            over: None,
            ready: Vec::new(),
            at: 0,
            chunk: vec![0; CHUNK].into_boxed_slice(),
        }
    }

    /// Take in `bytes` read from the server.
    fn take(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let end = bytes.iter().position(|b| *b == b'\n');
            let (part, rest) = match end {
                Some(i) => (&bytes[..i], &bytes[i + 1..]),
                None => (bytes, &[][..]),
            };
            bytes = rest;
            if let Some(scan) = &mut self.over {
                scan.feed(part);
            } else if self.line.len() + part.len() > self.cap {
                let mut scan = Scan::default();
                scan.feed(&self.line);
                scan.feed(part);
                self.line = Vec::new();
                self.over = Some(scan);
            } else {
                self.line.extend_from_slice(part);
            }
            if end.is_some() {
                self.end_line();
            }
        }
    }

    /// A newline: the line read is ready, or the one over the cap answered.
    fn end_line(&mut self) {
        match self.over.take() {
            None => {
                match super::carried::carry(&self.line) {
                    Some(carried) => {
                        self.line.clear();
                        self.ready.extend_from_slice(&carried);
                    }
                    None => self.ready.append(&mut self.line),
                }
                self.ready.push(b'\n');
            }
            Some(scan) => match scan.response_id() {
                Some(id) => {
                    let message = format!(
                        "its answer is over the cap of {} bytes (`max_message_kb`): refused",
                        self.cap
                    );
                    tracing::warn!("upstream `{}`: {message}", self.server);
                    let error = serde_json::json!({
                        "jsonrpc": "2.0",
                        "id": id,
                        "error": {"code": -32603, "message": message},
                    });
                    self.ready.extend_from_slice(error.to_string().as_bytes());
                    self.ready.push(b'\n');
                }
                None => tracing::warn!(
                    "upstream `{}` sent a message over its cap of {} bytes that answers no request: dropped",
                    self.server,
                    self.cap
                ),
            },
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for BoundedLines<R> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            if this.at < this.ready.len() {
                let n = buf.remaining().min(this.ready.len() - this.at);
                buf.put_slice(&this.ready[this.at..this.at + n]);
                this.at += n;
                if this.at == this.ready.len() {
                    this.ready.clear();
                    this.at = 0;
                }
                return Poll::Ready(Ok(()));
            }
            let mut chunk = ReadBuf::new(&mut this.chunk);
            ready!(Pin::new(&mut this.inner).poll_read(cx, &mut chunk))?;
            let read = chunk.filled().len();
            if read == 0 {
                // The end: a last line without its newline is no message.
                return Poll::Ready(Ok(()));
            }
            let chunk = std::mem::take(&mut this.chunk);
            this.take(&chunk[..read]);
            this.chunk = chunk;
        }
    }
}

/// What a streaming look at one JSON object's top level finds: its `id`
/// and whether it has a `method`. Strings are followed (with their
/// escapes), so a brace or a key inside one counts for nothing.
#[derive(Default)]
struct Scan {
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// At the top level, a key comes next (after `{` or `,`).
    key_next: bool,
    /// The top-level key being read, up to a few bytes.
    key: Option<Vec<u8>>,
    /// The key just read, until its `:`.
    last_key: Option<Vec<u8>>,
    /// The `id`'s value being read.
    value: Option<Vec<u8>>,
    id: Option<Vec<u8>>,
    method: bool,
}

impl Scan {
    fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.byte(b);
        }
    }

    fn byte(&mut self, b: u8) {
        if self.in_string {
            if let Some(key) = &mut self.key
                && (b != b'"' || self.escaped)
                && key.len() < 8
            {
                key.push(b);
            }
            self.keep(b);
            match (self.escaped, b) {
                (true, _) => self.escaped = false,
                (false, b'\\') => self.escaped = true,
                (false, b'"') => {
                    self.in_string = false;
                    if let Some(key) = self.key.take() {
                        self.method |= key == b"method";
                        self.last_key = Some(key);
                    }
                }
                _ => {}
            }
            return;
        }
        match b {
            b'"' => {
                self.in_string = true;
                if self.depth == 1 && self.key_next {
                    self.key_next = false;
                    self.key = Some(Vec::new());
                }
                self.keep(b);
            }
            b'{' | b'[' => {
                self.depth += 1;
                if self.depth == 1 {
                    self.key_next = b == b'{';
                } else if self.depth == 2 {
                    // An object or array is no id.
                    self.value = None;
                }
            }
            b'}' | b']' => {
                if self.depth == 1 {
                    self.end_value();
                }
                self.depth = self.depth.saturating_sub(1);
            }
            b',' if self.depth == 1 => {
                self.end_value();
                self.key_next = true;
            }
            b':' if self.depth == 1 => {
                if self.last_key.take().is_some_and(|k| k == b"id") {
                    self.value = Some(Vec::new());
                }
            }
            b' ' | b'\t' | b'\r' => {}
            _ => self.keep(b),
        }
    }

    /// A byte of the `id`'s value, if one is being read.
    fn keep(&mut self, b: u8) {
        if let Some(value) = &mut self.value {
            if value.len() < MAX_ID {
                value.push(b);
            } else {
                self.value = None;
            }
        }
    }

    fn end_value(&mut self) {
        if let Some(value) = self.value.take() {
            self.id = Some(value);
        }
    }

    /// The `id` of a response (a number or a string; no `method`).
    fn response_id(self) -> Option<serde_json::Value> {
        if self.method {
            return None;
        }
        let id: serde_json::Value = serde_json::from_slice(&self.id?).ok()?;
        (id.is_number() || id.is_string()).then_some(id)
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt;

    use super::*;

    fn scan(text: &str) -> Option<serde_json::Value> {
        let mut scan = Scan::default();
        // Byte by byte and whole: the scan does not care how it is fed.
        for chunk in text.as_bytes().chunks(3) {
            scan.feed(chunk);
        }
        scan.response_id()
    }

    #[test]
    fn the_id_of_a_response_is_found_wherever_it_is() {
        use serde_json::json;
        assert_eq!(
            scan(r#"{"jsonrpc":"2.0","id":7,"result":{"x":"}"}}"#),
            Some(json!(7))
        );
        // The TypeScript SDK writes the id last.
        assert_eq!(
            scan(r#"{"result":{"id":1,"a":[1,{"id":2}]},"jsonrpc":"2.0","id":"r-9"}"#),
            Some(json!("r-9"))
        );
        assert_eq!(scan(r#"{ "id" : 12 , "error": {"code": 1}}"#), Some(json!(12)));
        // Keys and braces inside strings are text.
        assert_eq!(scan(r#"{"result":"\"id\": 5, {","id":3}"#), Some(json!(3)));
        // A request or notification of the server's is answered by no one.
        assert_eq!(
            scan(r#"{"id":4,"method":"sampling/createMessage","params":{}}"#),
            None
        );
        assert_eq!(
            scan(r#"{"method":"notifications/message","params":{"id":1}}"#),
            None
        );
        assert_eq!(scan(r#"{"id":{"x":1},"result":{}}"#), None);
        assert_eq!(scan(r#"{"result":{}}"#), None);
    }

    #[tokio::test]
    async fn a_line_over_the_cap_is_answered_in_its_place_and_the_rest_pass() {
        let big = format!(
            r#"{{"jsonrpc":"2.0","result":{{"t":"{}"}},"id":2}}"#,
            "x".repeat(1000)
        );
        let input = format!("{{\"id\":1}}\n{big}\n{{\"id\":3}}\n");
        let mut lines = BoundedLines::new(input.as_bytes(), 100, "srv");
        let mut out = String::new();
        lines.read_to_string(&mut out).await.unwrap();
        let out: Vec<serde_json::Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(out.len(), 3, "{out:?}");
        assert_eq!(out[0]["id"], 1);
        assert_eq!(out[1]["id"], 2);
        let message = out[1]["error"]["message"].as_str().unwrap();
        assert!(message.contains("over the cap of 100 bytes"), "{message}");
        assert_eq!(out[2]["id"], 3);
    }
}
