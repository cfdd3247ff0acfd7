//! Property test of the MCP front over a real transport: the rmcp server
//! of `toolhost serve` (stdio's line-delimited JSON-RPC, here over an
//! in-process duplex pipe) with the native tools, fed arbitrary messages —
//! bytes that are not JSON, JSON that is not JSON-RPC, requests for any
//! method with any parameters and ids, tool calls with any arguments. After
//! each one the server must still answer a `ping`; every line it writes is
//! JSON-RPC 2.0; a request (a JSON object with `jsonrpc`, a `method` that
//! is not a notification's and a string or integer `id`) is answered, with
//! its id or, when it could not be read as a request, with an
//! `Invalid Request` error.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use proptest::prelude::*;
use rmcp::ServiceExt;
use serde_json::{Map, Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, ReadHalf, WriteHalf};

use super::McpServer;
use super::loopback::native_host;
use crate::fuzzing::{config, hostile_string, json_value};

/// How long the server may take to answer; only a dead server takes it.
const ANSWER: Duration = Duration::from_secs(5);

/// One message the client sends, and the request id it must be answered
/// with (if it is a request).
#[derive(Debug, Clone)]
pub(super) enum Message {
    Request {
        id: Value,
        method: String,
        params: Option<Value>,
    },
    Notification {
        method: String,
        params: Option<Value>,
    },
    Json(Value),
    Bytes(Vec<u8>),
}

impl Message {
    pub(super) fn line(&self) -> Vec<u8> {
        let object = |id: Option<&Value>, method: &str, params: &Option<Value>| {
            let mut m = Map::new();
            m.insert("jsonrpc".into(), json!("2.0"));
            if let Some(id) = id {
                m.insert("id".into(), id.clone());
            }
            m.insert("method".into(), json!(method));
            if let Some(params) = params {
                m.insert("params".into(), params.clone());
            }
            Value::Object(m).to_string().into_bytes()
        };
        match self {
            Message::Request { id, method, params } => object(Some(id), method, params),
            Message::Notification { method, params } => object(None, method, params),
            Message::Json(value) => value.to_string().into_bytes(),
            // One line: the test's own framing must stay intact.
            Message::Bytes(bytes) => bytes.iter().copied().filter(|b| *b != b'\n').collect(),
        }
    }
}

fn method() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => prop::sample::select(vec![
            "tools/call", "tools/call", "tools/list", "ping", "initialize", "notifications/initialized",
            "notifications/cancelled", "notifications/progress", "resources/list", "prompts/get",
            "completion/complete", "logging/setLevel", "tasks/get", "",
        ])
        .prop_map(str::to_owned),
        1 => hostile_string(),
    ]
}

/// Parameters: a tool call (a native tool or not, any arguments, maybe a
/// progress token), or any JSON.
fn params() -> impl Strategy<Value = Option<Value>> {
    let tool = prop_oneof![
        4 => prop::sample::select(vec!["read", "glob", "grep", "ls", "web_fetch", "write", "nope"]).prop_map(str::to_owned),
        1 => hostile_string(),
    ];
    let arguments = prop_oneof![
        3 => prop::collection::vec(
            (
                prop::sample::select(vec!["path", "pattern", "limit", "offset", "url", "glob", "x"]).prop_map(str::to_owned),
                prop_oneof![json_value(), Just(json!("a.txt")), Just(json!(".")), Just(json!("../..")), Just(json!(3))],
            ),
            0..4,
        )
        .prop_map(|entries| Value::Object(entries.into_iter().collect())),
        1 => json_value(),
    ];
    let call = (tool, arguments, prop::option::of(json_value())).prop_map(|(name, arguments, token)| {
        let mut params = json!({"name": name, "arguments": arguments});
        if let Some(token) = token {
            params["_meta"] = json!({"progressToken": token});
        }
        params
    });
    prop::option::of(prop_oneof![3 => call, 1 => json_value()])
}

fn id() -> impl Strategy<Value = Value> {
    prop_oneof![
        3 => any::<i64>().prop_map(Value::from),
        2 => hostile_string().prop_map(Value::from),
        1 => json_value(),
    ]
}

pub(super) fn message() -> impl Strategy<Value = Message> {
    prop_oneof![
        6 => (id(), method(), params()).prop_map(|(id, method, params)| Message::Request { id, method, params }),
        2 => (method(), params()).prop_map(|(method, params)| Message::Notification { method, params }),
        1 => json_value().prop_map(Message::Json),
        1 => prop::collection::vec(any::<u8>(), 0..200).prop_map(Message::Bytes),
    ]
}

/// The client's end of one MCP session with an initialised server.
struct Session {
    lines: Lines<BufReader<ReadHalf<DuplexStream>>>,
    writer: WriteHalf<DuplexStream>,
    probes: u64,
}

impl Session {
    async fn start() -> Self {
        let host = native_host().await;
        let (client, server) = tokio::io::duplex(1 << 16);
        let mcp = McpServer::new(Arc::new(host), Default::default());
        tokio::spawn(async move {
            let (read, write) = tokio::io::split(server);
            if let Ok(running) = mcp
                .serve(crate::lines::Lines::new(
                    read,
                    write,
                    super::lines::ClientLines::default(),
                ))
                .await
            {
                let _ = running.waiting().await;
            }
        });
        let (reader, writer) = tokio::io::split(client);
        let mut session = Self {
            lines: BufReader::new(reader).lines(),
            writer,
            probes: 0,
        };
        let init = json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "fuzz", "version": "0"}}});
        session.send(init.to_string().as_bytes()).await;
        session.answered(vec![vec![json!("init")]]).await.unwrap();
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        session.send(initialized.to_string().as_bytes()).await;
        session
    }

    async fn send(&mut self, line: &[u8]) {
        self.writer.write_all(line).await.unwrap();
        self.writer.write_all(b"\n").await.unwrap();
        self.writer.flush().await.unwrap();
    }

    /// Read until each of `wanted` was answered, by a response with one of
    /// its ids. Every line must be JSON-RPC 2.0.
    async fn answered(&mut self, mut wanted: Vec<Vec<Value>>) -> Result<(), String> {
        while !wanted.is_empty() {
            let line = match tokio::time::timeout(ANSWER, self.lines.next_line()).await {
                Ok(Ok(Some(line))) => line,
                Ok(Ok(None)) => return Err("the server closed the session".into()),
                Ok(Err(e)) => return Err(format!("reading from the server: {e}")),
                Err(_) => return Err(format!("no answer within {ANSWER:?} for {wanted:?}")),
            };
            let message: Value = serde_json::from_str(&line)
                .map_err(|e| format!("the server wrote non-JSON ({e}): {line}"))?;
            if message.get("jsonrpc") != Some(&json!("2.0")) {
                return Err(format!("the server wrote a non-JSON-RPC line: {line}"));
            }
            // rmcp writes its `Invalid Request` answer with no `id` at all
            // where JSON-RPC says `"id": null`: counted as the null id.
            let id = match message.get("id") {
                Some(id) => id,
                None if message.get("error").is_some() => &Value::Null,
                None => continue, // a notification (progress, list changed)
            };
            if message.get("result").is_none() == message.get("error").is_none() {
                return Err(format!("a response needs a result or an error: {line}"));
            }
            if let Some(at) = wanted.iter().position(|ids| ids.contains(id)) {
                wanted.remove(at);
            }
        }
        Ok(())
    }

    /// Send `message`, then a ping; both must be answered, in any order.
    async fn exchange(&mut self, message: &Message) -> Result<(), String> {
        self.send(&message.line()).await;
        self.probes += 1;
        let probe = json!(format!("probe-{}", self.probes));
        self.send(
            json!({"jsonrpc": "2.0", "id": probe, "method": "ping"})
                .to_string()
                .as_bytes(),
        )
        .await;
        let mut wanted = vec![vec![probe]];
        // A request whose parameters do not fit its method is answered
        // `Invalid Request` with a null id. rmcp drops unanswered, like
        // unparsable input, one whose id is neither a string nor an integer
        // and one for a notification's method.
        if let Message::Request { id, method, .. } = message
            && (id.is_string() || id.is_i64())
            && !method.starts_with("notifications/")
        {
            wanted.push(vec![id.clone(), Value::Null]);
        }
        self.answered(wanted).await
    }
}

/// One server for every case: a runtime and a session that live as long as
/// the test process.
fn session() -> &'static (tokio::runtime::Runtime, Mutex<Session>) {
    static SESSION: OnceLock<(tokio::runtime::Runtime, Mutex<Session>)> = OnceLock::new();
    SESSION.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let session = runtime.block_on(Session::start());
        (runtime, Mutex::new(session))
    })
}

proptest! {
    // Few shrink steps: the session is shared, so shrinking replays on a
    // server that has seen the failing case, and an unanswered message
    // costs ANSWER each time.
    #![proptest_config(ProptestConfig { max_shrink_iters: 16, ..config(512) })]

    #[test]
    fn any_message_is_answered_or_ignored_and_the_server_keeps_serving(message in message()) {
        let (runtime, session) = session();
        let mut session = session.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let outcome = runtime.block_on(session.exchange(&message));
        prop_assert!(outcome.is_ok(), "after {:?}: {}", message, outcome.unwrap_err());
    }
}
