//! What an upstream server says that rmcp's types drop, carried through
//! rmcp to the host: a tool's `execution` (MCP 2025-11-25), which rmcp's
//! `Tool` has no field for. Before rmcp parses a message (on the stdio
//! line, `bounded`; on the HTTP response's event, [`Carrying`]), each
//! listed tool's `execution` is moved into its `_meta` under
//! [`EXECUTION_KEY`], which rmcp keeps; [`take_execution`] moves it out
//! again into the host's own [`Execution`].
//!
//! The key is the host's: whatever a server put under it itself is removed
//! first, and what is read back must be an `execution` (a `taskSupport` of
//! the three the protocol names), so a server can at most say of its own
//! tool what its `execution` says. Not here: the session, the lists' bounds
//! (`listing`), what the front serves (`mcp`).

use std::collections::HashMap;
use std::sync::Arc;

use futures::StreamExt;
use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use serde_json::Value;
use sse_stream::Sse;

use crate::output::Meta;
use crate::tool::Execution;

/// Where a tool's `execution` rides in its `_meta` between the transport
/// and the host: a name no server has a reason to use.
pub(super) const EXECUTION_KEY: &str = "toolhost.internal/execution";

/// `message` (one JSON-RPC message) with each listed tool's `execution`
/// carried in its `_meta`; `None` when there is nothing to carry, so the
/// message passes as it came. Only a message that names either key is
/// parsed.
pub(super) fn carry(message: &[u8]) -> Option<Vec<u8>> {
    let names = |needle: &[u8]| message.windows(needle.len()).any(|w| w == needle);
    if !names(b"\"execution\"") && !names(EXECUTION_KEY.as_bytes()) {
        return None;
    }
    let mut value: Value = serde_json::from_slice(message).ok()?;
    let tools = value.get_mut("result")?.get_mut("tools")?.as_array_mut()?;
    for tool in tools.iter_mut().filter_map(Value::as_object_mut) {
        let meta = tool.get_mut("_meta").and_then(Value::as_object_mut);
        if let Some(meta) = meta {
            meta.remove(EXECUTION_KEY);
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
    }
    serde_json::to_vec(&value).ok()
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

/// rmcp's HTTP client, with each event of a response stream carried
/// ([`carry`]) before rmcp parses it. A response sent as plain JSON is
/// parsed inside rmcp's client, so its tools' `execution` is not kept.
#[derive(Clone)]
pub(super) struct Carrying(pub(super) reqwest::Client);

type Events = BoxStream<'static, Result<Sse, SseError>>;

fn carried(events: Events) -> Events {
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
        let response = self
            .0
            .post_message(uri, message, session_id, auth_header, custom_headers)
            .await?;
        Ok(post_carried(response))
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
        let response = self
            .0
            .post_message_with_response_limits(uri, message, session_id, auth_header, custom_headers, limits)
            .await?;
        Ok(post_carried(response))
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        self.0
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
            .0
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
            .0
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
    fn other_messages_pass_as_they_came() {
        let call = json!({"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": "\"execution\""}]}});
        assert_eq!(carry(call.to_string().as_bytes()), None);
        assert_eq!(
            carry(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}"),
            None
        );
    }
}
