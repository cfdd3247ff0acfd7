//! What an upstream server says that rmcp's types drop, carried through
//! rmcp to the host. rmcp 3.11 models MCP 2026-07-28; what 2025-11-25 has
//! beside it is lost when rmcp parses a message: a tool's `execution`, and
//! the answers of the experimental tasks (`CreateTaskResult`, `tasks/get`,
//! `tasks/cancel`, `tasks/list`). Before rmcp parses a message (on the
//! stdio line, `bounded`; over HTTP, each event of a response stream, and
//! the plain JSON answer of a request the host posts itself, `post`, as
//! [`Carrying`] says):
//!
//! - each listed tool's `execution` is moved into its `_meta` under
//!   [`EXECUTION_KEY`], which rmcp keeps; [`take_execution`] moves it out
//!   again into the host's own [`Execution`];
//! - an answer with a task's fields at its top level (`task`, `tasks`,
//!   `taskId`) is moved whole into an otherwise empty result's `_meta`
//!   under [`ANSWER_KEY`]; [`take_answer`] reads it back.
//!
//! The keys are the host's: whatever a server put under them itself is
//! removed first, and what is read back is checked by its reader (an
//! `execution` must name one of the three `taskSupport`s; an answer is
//! read only where a task answer is awaited), so a server can at most say
//! of its own tools and tasks what the protocol lets it. Not here: the
//! session, the lists' bounds (`listing`), what the front serves (`mcp`).

use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

use futures::StreamExt;
use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, ServerResult};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use serde_json::Value;
use sse_stream::Sse;
use tokio_util::sync::{CancellationToken, DropGuard};

use crate::json_structure::Names;
use crate::output::Meta;
use crate::tool::Execution;

use super::{drain, post};

/// Where a tool's `execution` rides in its `_meta` between the transport
/// and the host: a name no server has a reason to use.
pub(super) const EXECUTION_KEY: &str = "toolhost.internal/execution";

/// Where an answer rmcp has no type for rides, whole, in `_meta`.
const ANSWER_KEY: &str = "toolhost.internal/answer";

/// The top-level fields of the tasks' answers (2025-11-25).
const TASK_FIELDS: [&str; 3] = ["task", "tasks", "taskId"];

/// What a message that has something to carry names: every answer is
/// looked through for them, in one pass, before any is parsed.
static CARRIED_NAMES: LazyLock<Names> = LazyLock::new(|| {
    Names::new(&[
        "\"execution\"",
        EXECUTION_KEY,
        "\"task\"",
        "\"tasks\"",
        "\"taskId\"",
        ANSWER_KEY,
    ])
});

/// `message` (one JSON-RPC message) with each listed tool's `execution`
/// carried in its `_meta`; `None` when there is nothing to carry, so the
/// message passes as it came. Only a message that names either key is
/// parsed.
pub(super) fn carry(message: &[u8]) -> Option<Vec<u8>> {
    if !CARRIED_NAMES.may_be_in(message) {
        return None;
    }
    let mut value: Value = serde_json::from_slice(message).ok()?;
    let result = value.get_mut("result")?.as_object_mut()?;
    // Written again only if something moved: the message as the server
    // sent it is what rmcp parses otherwise.
    let mut changed = result
        .get_mut("_meta")
        .and_then(Value::as_object_mut)
        .is_some_and(|meta| meta.remove(ANSWER_KEY).is_some());
    if TASK_FIELDS.iter().any(|f| result.contains_key(*f)) {
        let answer = Value::Object(std::mem::take(result));
        result.insert("_meta".to_owned(), serde_json::json!({ ANSWER_KEY: answer }));
        changed = true;
    } else if let Some(tools) = result.get_mut("tools").and_then(Value::as_array_mut) {
        for tool in tools.iter_mut().filter_map(Value::as_object_mut) {
            if let Some(meta) = tool.get_mut("_meta").and_then(Value::as_object_mut) {
                changed |= meta.remove(EXECUTION_KEY).is_some();
            }
            let Some(execution) = tool.remove("execution") else {
                continue;
            };
            let meta = tool
                .entry("_meta")
                .or_insert_with(|| Value::Object(Default::default()));
            if let Some(meta) = meta.as_object_mut() {
                meta.insert(EXECUTION_KEY.to_owned(), execution);
            }
            changed = true;
        }
    }
    changed.then(|| serde_json::to_vec(&value).ok()).flatten()
}

/// The `execution` [`carry`] put in `meta`, taken out of it (a `_meta`
/// left empty goes too); `None` if it carried none, or one that is not an
/// `execution`.
pub(super) fn take_execution(meta: &mut Option<Meta>) -> Option<Execution> {
    let carried = meta.as_mut()?.remove(EXECUTION_KEY);
    if meta.as_ref().is_some_and(Meta::is_empty) {
        *meta = None;
    }
    serde_json::from_value(carried?).ok()
}

/// The answer [`carry`] put in `answer`'s `_meta`, whole; `None` if it
/// carried none (the server answered in a shape rmcp knows).
pub(super) fn take_answer(answer: &ServerResult) -> Option<Value> {
    match answer {
        // A call's result is looked into where it is, not copied.
        ServerResult::CallToolResult(result) => result.meta.as_ref()?.get(ANSWER_KEY).cloned(),
        ServerResult::CustomResult(custom) => custom.0.get("_meta")?.get(ANSWER_KEY).cloned(),
        other => serde_json::to_value(other)
            .ok()?
            .get_mut("_meta")?
            .as_object_mut()?
            .remove(ANSWER_KEY),
    }
}

/// rmcp's HTTP client, with each event of a response stream carried
/// ([`carry`]) before rmcp parses it. A request whose answer rmcp has no
/// type for (a `tools/list`, and the tasks' requests, which the host sends
/// as custom requests) is posted by the host itself (`post`), so that its
/// answer is carried in plain JSON too. A request's event stream is read
/// to its end even once rmcp lets go of it (`drain`).
#[derive(Clone)]
pub(super) struct Carrying {
    http: reqwest::Client,
    /// Cancelled when the session's opening is given up (its
    /// `connect_timeout_s` over, the host closing): rmcp's transport
    /// worker awaits the answer to `initialize` without heeding its own
    /// cancellation, so a server that never answers held the request, its
    /// connection and the worker for as long as the host lived, one more
    /// with each try.
    opening: CancellationToken,
}

impl Carrying {
    /// The client, and the guard that gives up its opening when dropped;
    /// disarmed once the session is open.
    pub(super) fn new(http: reqwest::Client) -> (Self, DropGuard) {
        let opening = CancellationToken::new();
        let guard = opening.clone().drop_guard();
        (Self { http, opening }, guard)
    }
}

/// `message` is a request whose answer rmcp has no type for.
fn untyped_answer(message: &ClientJsonRpcMessage) -> bool {
    matches!(message, ClientJsonRpcMessage::Request(request)
        if matches!(request.request, ClientRequest::ListToolsRequest(_) | ClientRequest::CustomRequest(_)))
}

pub(super) type Events = BoxStream<'static, Result<Sse, SseError>>;

pub(super) fn carried(events: Events) -> Events {
    events
        .map(|event| {
            event.map(|mut sse| {
                if let Some(data) = sse.data.as_deref().and_then(|d| carry(d.as_bytes())) {
                    sse.data = String::from_utf8(data).ok().or(sse.data);
                }
                sse
            })
        })
        .boxed()
}

impl StreamableHttpClient for Carrying {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let limits = StreamableHttpResponseLimits::default();
        self.post_message_with_response_limits(uri, message, session_id, auth_header, custom_headers, limits)
            .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let initialize = matches!(&message, ClientJsonRpcMessage::Request(request)
            if matches!(request.request, ClientRequest::InitializeRequest(_)));
        let response = if untyped_answer(&message) {
            let session = (session_id.as_deref(), auth_header.as_deref());
            post::post(&self.http, &uri, &message, session, custom_headers, &limits).await?
        } else {
            let posting = self.http.post_message_with_response_limits(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                limits,
            );
            let response = if initialize {
                tokio::select! {
                    response = posting => response?,
                    () = self.opening.cancelled() => return Err(StreamableHttpError::TransportChannelClosed),
                }
            } else {
                posting.await?
            };
            post_carried(response)
        };
        // The stream answering `initialize` ends with the opening too.
        let response = match response {
            StreamableHttpPostResponse::Sse(events, session) if initialize => {
                let given_up = self.opening.clone().cancelled_owned();
                StreamableHttpPostResponse::Sse(events.take_until(given_up).boxed(), session)
            }
            other => other,
        };
        Ok(drain::drained(response))
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        self.http
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<Events, StreamableHttpError<Self::Error>> {
        let events = self
            .http
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
            .await?;
        Ok(carried(events))
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<Events, StreamableHttpError<Self::Error>> {
        let events = self
            .http
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await?;
        Ok(carried(events))
    }
}

fn post_carried(response: StreamableHttpPostResponse) -> StreamableHttpPostResponse {
    match response {
        StreamableHttpPostResponse::Sse(events, session) => {
            StreamableHttpPostResponse::Sse(carried(events), session)
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tool::TaskSupport;

    fn carried(message: Value) -> Value {
        serde_json::from_slice(&carry(message.to_string().as_bytes()).unwrap()).unwrap()
    }

    #[test]
    fn a_tools_execution_rides_in_its_meta_and_comes_back() {
        let listed = carried(json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": [
            {"name": "a", "inputSchema": {}, "execution": {"taskSupport": "optional"}},
            {"name": "b", "inputSchema": {}, "_meta": {"k": 1}},
        ]}}));
        let a = &listed["result"]["tools"][0];
        assert!(a.get("execution").is_none());
        let mut meta = a["_meta"].as_object().cloned();
        let execution = take_execution(&mut meta).unwrap();
        assert_eq!(execution.task_support, Some(TaskSupport::Optional));
        assert_eq!(meta, None, "a _meta the host made is gone with what it carried");
        assert_eq!(listed["result"]["tools"][1]["_meta"], json!({"k": 1}));
    }

    #[test]
    fn a_servers_own_use_of_the_key_is_removed_and_a_bad_execution_is_none() {
        let listed = carried(json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": [
            {"name": "a", "inputSchema": {}, "_meta": {EXECUTION_KEY: {"taskSupport": "required"}}},
            {"name": "b", "inputSchema": {}, "execution": {"taskSupport": "always"}},
        ]}}));
        assert_eq!(listed["result"]["tools"][0]["_meta"], json!({}));
        let mut meta = listed["result"]["tools"][1]["_meta"].as_object().cloned();
        assert_eq!(take_execution(&mut meta), None);
    }

    #[test]
    fn a_task_answer_rides_whole_and_a_servers_own_key_is_removed() {
        let answer = json!({"task": {"taskId": "t1", "status": "working"}, "_meta": {"k": 1}});
        let line = carried(json!({"jsonrpc": "2.0", "id": 3, "result": answer}));
        assert_eq!(
            line["result"].as_object().unwrap().len(),
            1,
            "only _meta is left: {line}"
        );
        let read = |result: &Value| take_answer(&serde_json::from_value(result.clone()).unwrap());
        assert_eq!(read(&line["result"]), Some(answer));
        let forged = carried(json!({"jsonrpc": "2.0", "id": 4, "result": {
            "content": [], "_meta": {ANSWER_KEY: {"taskId": "x"}}}}));
        assert_eq!(read(&forged["result"]), None);
    }

    /// The keys spelled with JSON's escapes are the same keys: moved or
    /// removed as written plainly.
    #[test]
    fn keys_spelled_with_escapes_are_carried_and_removed_as_keys() {
        let text =
            |line: &str| -> Value { serde_json::from_slice(&carry(line.as_bytes()).unwrap()).unwrap() };
        let listed = text(
            r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[
                {"name":"a","inputSchema":{},"_meta":{"toolhost.internal\/execution":{"taskSupport":"required"}}},
                {"name":"b","inputSchema":{},"\u0065xecution":{"taskSupport":"optional"}}]}}"#,
        );
        assert_eq!(listed["result"]["tools"][0]["_meta"], json!({}));
        let mut meta = listed["result"]["tools"][1]["_meta"].as_object().cloned();
        assert_eq!(
            take_execution(&mut meta).and_then(|e| e.task_support),
            Some(TaskSupport::Optional)
        );
        let read = |result: &Value| take_answer(&serde_json::from_value(result.clone()).unwrap());
        let task =
            text(r#"{"jsonrpc":"2.0","id":2,"result":{"t\u0061sk":{"taskId":"t1","status":"working"}}}"#);
        assert_eq!(read(&task["result"]).unwrap()["task"]["taskId"], "t1");
        let forged = text(
            r#"{"jsonrpc":"2.0","id":3,"result":{"content":[],"_meta":{"toolhost.intern\u0061l/answer":{"taskId":"x"}}}}"#,
        );
        assert_eq!(read(&forged["result"]), None);
    }

    #[test]
    fn other_messages_pass_as_they_came() {
        let call = json!({"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": "\"execution\""}]}});
        assert_eq!(carry(call.to_string().as_bytes()), None);
        let named =
            json!({"jsonrpc": "2.0", "id": 5, "result": {"structuredContent": {"task": 1, "tasks": []}}});
        assert_eq!(carry(named.to_string().as_bytes()), None);
        assert_eq!(
            carry(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}"),
            None
        );
    }
}
