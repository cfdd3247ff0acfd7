//! Property test of the HTTP front over real HTTP on loopback (the router
//! of `serve --http`, in-process): arbitrary requests — any method and
//! path, missing, wrong or made-up headers (content type, accept, session
//! id, protocol version, any other), and bodies that are one JSON-RPC
//! message of any kind (`mcp::fuzz`'s), a batch of them, bytes that are not
//! JSON, nothing, or more than the body limit. Each request is answered
//! within a bounded wait, with a well-formed answer (a JSON body that is
//! JSON, an event stream whose events are JSON-RPC) or a clean HTTP error
//! with its reason; the server never drops the connection (a panic would)
//! and keeps serving: after each request a new session still opens, answers
//! a ping and closes, and the session the request was sent in still
//! answers unless the request closed it.

use std::sync::{Mutex, OnceLock};

use http::Method;
use proptest::prelude::*;
use serde_json::{Value, json};

use super::fuzz::{Message, message};
use super::loopback::Front;
use crate::fuzzing::{config, hostile_string};

/// The session header a request carries.
#[derive(Debug, Clone)]
enum Session {
    None,
    /// The session opened for this request.
    Open,
    /// One that does not exist.
    Made(String),
}

#[derive(Debug, Clone)]
enum Body {
    /// One message, or a batch (a JSON array) of them.
    Messages {
        batch: bool,
        messages: Vec<Message>,
    },
    Bytes(Vec<u8>),
    /// Just over the body limit, as a `ping` with a long parameter.
    Oversize,
}

#[derive(Debug, Clone)]
struct Case {
    method: Method,
    path: String,
    content_type: Option<String>,
    accept: Option<String>,
    session: Session,
    version: Option<String>,
    headers: Vec<(String, String)>,
    body: Body,
}

/// A header value a client can send: visible ASCII and spaces.
fn header_value() -> impl Strategy<Value = String> {
    "[ -~]{0,40}".prop_map(|v| v.trim().to_owned())
}

fn pick(options: &[&str]) -> impl Strategy<Value = String> + use<> {
    prop::sample::select(options.iter().map(|o| (*o).to_owned()).collect::<Vec<_>>())
}

fn case() -> impl Strategy<Value = Case> {
    let method = prop_oneof![
        8 => Just(Method::POST),
        2 => Just(Method::GET),
        2 => Just(Method::DELETE),
        1 => prop::sample::select(vec![Method::PUT, Method::PATCH, Method::OPTIONS, Method::HEAD]),
    ];
    let path = prop_oneof![
        8 => Just("/mcp".to_owned()),
        2 => pick(&["/mcp/", "/mcp/x", "/mcp?x=1", "/metrics", "/healthz", "/", "/.well-known/oauth-protected-resource", "/mcp/../metrics"]),
        1 => "[a-zA-Z0-9/%._~-]{0,30}".prop_map(|p| format!("/{p}")),
    ];
    let content_type = prop::option::weighted(
        0.9,
        prop_oneof![
            6 => Just("application/json".to_owned()),
            1 => pick(&["application/json; charset=utf-8", "text/plain", "application/jsonx", "", "text/event-stream"]),
            1 => header_value(),
        ],
    );
    let accept = prop::option::weighted(
        0.9,
        prop_oneof![
            6 => Just("application/json, text/event-stream".to_owned()),
            1 => pick(&["text/event-stream", "application/json", "*/*", "text/event-stream;q=0, application/json"]),
            1 => header_value(),
        ],
    );
    let session = prop_oneof![
        3 => Just(Session::Open),
        2 => Just(Session::None),
        1 => header_value().prop_map(Session::Made),
    ];
    let version = prop::option::of(prop_oneof![
        4 => pick(&["2025-06-18", "2025-03-26", "2025-11-25", "2026-07-28", "2024-11-05"]),
        1 => header_value(),
    ]);
    // Names that would change the request's framing or target are left
    // to the client.
    let headers = prop::collection::vec(
        (
            prop_oneof![
                2 => pick(&["mcp-session-id", "mcp-protocol-version", "last-event-id", "origin", "authorization", "mcp-method", "mcp-name"]),
                1 => "x-[a-z0-9-]{1,20}",
            ],
            header_value(),
        ),
        0..3,
    );
    let body = prop_oneof![
        12 => (any::<bool>(), prop::collection::vec(message(), 1..4))
            .prop_map(|(batch, messages)| Body::Messages { batch, messages }),
        2 => prop::collection::vec(any::<u8>(), 0..200).prop_map(Body::Bytes),
        1 => hostile_string().prop_map(|s| Body::Bytes(s.into_bytes())),
        1 => Just(Body::Oversize),
    ];
    (
        method,
        path,
        content_type,
        accept,
        session,
        version,
        headers,
        body,
    )
        .prop_map(
            |(method, path, content_type, accept, session, version, headers, body)| Case {
                method,
                path,
                content_type,
                accept,
                session,
                version,
                headers,
                body,
            },
        )
}

impl Body {
    fn bytes(&self) -> Vec<u8> {
        match self {
            Body::Messages {
                batch: false,
                messages,
            } => messages[0].line(),
            Body::Messages {
                batch: true,
                messages,
            } => {
                let lines: Vec<Vec<u8>> = messages.iter().map(Message::line).collect();
                [b"[".as_slice(), &lines.join(b",".as_slice()), b"]"].concat()
            }
            Body::Bytes(bytes) => bytes.clone(),
            Body::Oversize => json!({"jsonrpc": "2.0", "id": 1, "method": "ping",
                "params": {"pad": "p".repeat(5 << 20)}})
            .to_string()
            .into_bytes(),
        }
    }
}

/// Send `case` in session `open`; `Err` says how the answer was wrong.
async fn exchange(front: &Front, case: &Case, open: &str) -> Result<(), String> {
    let mut request = front.request(case.method.clone(), &case.path);
    for (name, value) in [("content-type", &case.content_type), ("accept", &case.accept)] {
        if let Some(value) = value {
            request = request.header(name, value.as_str());
        }
    }
    match &case.session {
        Session::None => {}
        Session::Open => request = request.header("mcp-session-id", open),
        Session::Made(id) => request = request.header("mcp-session-id", id.as_str()),
    }
    if let Some(version) = &case.version {
        request = request.header("mcp-protocol-version", version.as_str());
    }
    for (name, value) in &case.headers {
        request = request.header(name.as_str(), value.as_str());
    }
    if case.method != Method::GET && case.method != Method::HEAD {
        request = request.body(case.body.bytes());
    }
    let response = match request.send().await {
        Ok(response) => response,
        // A body over the limit is refused before it is all read (`413`,
        // or `404` off `/mcp`), and the connection closed after the answer:
        // the client, still sending, may see the reset instead. Whether
        // the front still serves is checked after every case.
        Err(_) if matches!(case.body, Body::Oversize) => return Ok(()),
        Err(e) => {
            return Err(format!(
                "no answer (the server dropped the request or is stuck): {e}"
            ));
        }
    };
    let status = response.status();
    let kind = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    // A session this request opened is closed, so that the cases do not
    // fill the sessions up.
    if let Some(id) = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
    {
        front.close(id).await;
    }
    // A GET's event stream is the session's standalone stream: it stays
    // open, so only its head is read.
    if case.method == Method::GET && kind.starts_with("text/event-stream") {
        return if status.is_success() {
            Ok(())
        } else {
            Err(format!("an event stream with {status}"))
        };
    }
    let body = response
        .text()
        .await
        .map_err(|e| format!("{status}: the body broke off: {e}"))?;
    if status.is_server_error() {
        return Err(format!("{status}: {body}"));
    }
    if status.is_client_error() {
        return Ok(());
    }
    if kind.starts_with("application/json") {
        serde_json::from_str::<Value>(&body)
            .map_err(|e| format!("{status}: a JSON body that is not JSON ({e}): {body}"))?;
    } else if kind.starts_with("text/event-stream") {
        for data in body
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(str::trim)
        {
            if data.is_empty() {
                continue;
            }
            let event: Value = serde_json::from_str(data)
                .map_err(|e| format!("{status}: an event that is not JSON ({e}): {data}"))?;
            if event.get("jsonrpc") != Some(&json!("2.0")) {
                return Err(format!("{status}: an event that is not JSON-RPC: {data}"));
            }
        }
    }
    Ok(())
}

/// Whether session `id` answers a ping.
async fn answers(front: &Front, id: &str) -> Result<bool, String> {
    let ping = json!({"jsonrpc": "2.0", "id": "probe", "method": "ping"});
    let response = front.post(Some(id), &ping).await;
    let status = response.status().as_u16();
    let body = response.text().await.map_err(|e| e.to_string())?;
    match status {
        200 if body.contains("\"id\":\"probe\"") && body.contains("\"result\"") => Ok(true),
        404 => Ok(false),
        _ => Err(format!("ping answered {status}: {body}")),
    }
}

/// One case: in a session of its own, then the server must still serve.
async fn run(front: &Front, case: &Case) -> Result<(), String> {
    let open = front.open().await;
    exchange(front, case, &open).await?;
    let closed_it = case.method == Method::DELETE
        && (matches!(case.session, Session::Open)
            || case
                .headers
                .iter()
                .any(|(name, value)| name == "mcp-session-id" && value == &open));
    match answers(front, &open).await? {
        true => {
            front.close(&open).await;
        }
        false if closed_it => {}
        false => return Err("the session it was sent in no longer answers".into()),
    }
    let fresh = front.open().await;
    if !answers(front, &fresh).await? {
        return Err("a new session does not answer".into());
    }
    front.close(&fresh).await;
    let health = front
        .request(Method::GET, "/healthz")
        .send()
        .await
        .map_err(|e| e.to_string())?;
    if !health.status().is_success() {
        return Err(format!("/healthz answered {}", health.status()));
    }
    Ok(())
}

/// One front for every case, on a runtime that lives as long as the test
/// process.
fn front() -> &'static (tokio::runtime::Runtime, Mutex<Front>) {
    static FRONT: OnceLock<(tokio::runtime::Runtime, Mutex<Front>)> = OnceLock::new();
    FRONT.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let front = runtime.block_on(Front::start());
        (runtime, Mutex::new(front))
    })
}

proptest! {
    // Few shrink steps: the front is shared, and a stuck request costs
    // the whole answer wait each time.
    #![proptest_config(ProptestConfig { max_shrink_iters: 16, ..config(256) })]

    #[test]
    fn any_request_is_answered_cleanly_and_the_front_keeps_serving(case in case()) {
        let (runtime, front) = front();
        let front = front.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let outcome = runtime.block_on(run(&front, &case));
        prop_assert!(outcome.is_ok(), "after {:?}: {}", case, outcome.unwrap_err());
    }
}
