//! The POST of a request whose answer rmcp has no type for (a `tools/list`,
//! whose tools' `execution` it drops; a task's request), made whole by the
//! host so that the answer is carried (`carried::carry`) before rmcp parses
//! it, in plain JSON or as an event stream alike. rmcp's own client parses a
//! plain JSON answer inside itself, where those fields are lost, and such a
//! request cannot be asked again through it: a call is not safe to send
//! twice.
//!
//! It answers rmcp's worker as rmcp's client does for the same response,
//! within the same limits: `Accepted` for 202 and 204, `SessionExpired` for
//! a 404 on a session (the worker starts a new one and posts again), an
//! HTTP status error for 429 and 5xx, a JSON-RPC error in any other failed
//! response passed on as the server's answer, and every event of a stream
//! bounded by the event cap. Not here: which requests are posted so
//! (`carried::Carrying`), the session and its headers (rmcp's worker, which
//! hands them over).

use std::borrow::Cow;
use std::collections::HashMap;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::{Stream, StreamExt};
use http::header::{ACCEPT, CONTENT_TYPE, RETRY_AFTER, WWW_AUTHENTICATE};
use http::{HeaderName, HeaderValue, StatusCode};
use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, HttpStatusError, InsufficientScopeError, StreamableHttpError,
    StreamableHttpPostResponse, StreamableHttpResponseLimits,
};
use sse_stream::SseStream;

use super::carried;
use crate::http_client::{BodyError, whole_body};

type Failed = StreamableHttpError<reqwest::Error>;

/// `message` posted to `uri` in `session` with `token` and the worker's
/// `headers`, and the server's answer with every message carried.
pub(super) async fn post(
    http: &reqwest::Client,
    uri: &str,
    message: &ClientJsonRpcMessage,
    (session, token): (Option<&str>, Option<&str>),
    headers: HashMap<HeaderName, HeaderValue>,
    limits: &StreamableHttpResponseLimits,
) -> Result<StreamableHttpPostResponse, Failed> {
    let mut post = http
        .post(uri)
        .header(ACCEPT, "text/event-stream, application/json")
        .json(message);
    if let Some(token) = token {
        post = post.bearer_auth(token);
    }
    // The worker's headers: the configured ones passed rmcp's check of
    // reserved names when rmcp posted `initialize` with them.
    for (name, value) in headers {
        post = post.header(name, value);
    }
    if let Some(session) = session {
        post = post.header("mcp-session-id", session);
    }
    let response = post.send().await.map_err(StreamableHttpError::Client)?;
    let status = response.status();
    let header = |name: &str| response.headers().get(name).and_then(|v| v.to_str().ok());
    let challenge = header(WWW_AUTHENTICATE.as_str()).map(str::to_owned);
    let kind = header(CONTENT_TYPE.as_str()).map(str::to_owned);
    let is = |expected: &str| kind.as_deref().is_some_and(|k| media_type_is(k, expected));
    let answered_in = header("mcp-session-id").map(str::to_owned);
    match (status, challenge) {
        (StatusCode::UNAUTHORIZED, Some(challenge)) => {
            return Err(StreamableHttpError::AuthRequired(AuthRequiredError::new(
                challenge,
            )));
        }
        (StatusCode::FORBIDDEN, Some(challenge)) => {
            return Err(StreamableHttpError::InsufficientScope(
                InsufficientScopeError::new(challenge, None),
            ));
        }
        (StatusCode::ACCEPTED | StatusCode::NO_CONTENT, _) => {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        (StatusCode::NOT_FOUND, _) if session.is_some() => return Err(StreamableHttpError::SessionExpired),
        (status, _) if status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error() => {
            let retry_after = header(RETRY_AFTER.as_str()).map(str::to_owned);
            return Err(HttpStatusError::new(status.as_u16(), retry_after).into());
        }
        _ => {}
    }
    if !status.is_success() {
        // A JSON-RPC error is the server's answer to the request; anything
        // else is reported by its status alone (its body is not read).
        if is("application/json") {
            let body = read(response, limits.max_json_response_size).await?;
            if let Ok(error @ JsonRpcMessage::Error(_)) =
                serde_json::from_slice::<ServerJsonRpcMessage>(&body)
            {
                return Ok(StreamableHttpPostResponse::Json(error, answered_in));
            }
        }
        return Err(StreamableHttpError::UnexpectedServerResponse(Cow::Owned(
            format!("HTTP {status}"),
        )));
    }
    if is("text/event-stream") {
        let events =
            SseStream::from_bytes_stream(Bounded::new(response.bytes_stream(), limits.max_sse_event_size));
        return Ok(StreamableHttpPostResponse::Sse(
            carried::carried(events.boxed()),
            answered_in,
        ));
    }
    if !is("application/json") {
        return Err(StreamableHttpError::UnexpectedContentType(kind));
    }
    let body = read(response, limits.max_json_response_size).await?;
    let body = carried::carry(&body).unwrap_or(body);
    serde_json::from_slice(&body)
        .map(|message| StreamableHttpPostResponse::Json(message, answered_in))
        .map_err(StreamableHttpError::Deserialize)
}

/// `value` (a `Content-Type`) names the media type `expected`, whatever its
/// case and parameters.
fn media_type_is(value: &str, expected: &str) -> bool {
    value
        .split(';')
        .next()
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case(expected))
}

/// `response`'s whole body, as rmcp's client fails one past `cap`.
async fn read(mut response: reqwest::Response, cap: usize) -> Result<Vec<u8>, Failed> {
    whole_body(&mut response, cap).await.map_err(|e| match e {
        BodyError::TooLarge(_) => StreamableHttpError::ResponseBodyTooLarge { max_size: cap },
        BodyError::Broken(e) => StreamableHttpError::Client(e),
    })
}

/// An event stream's bytes, ended with an error once one event passes
/// `cap` bytes: the parser would otherwise hold an endless event whole.
struct Bounded<S> {
    bytes: S,
    cap: usize,
    /// Bytes of the event being read, and of its line.
    event: usize,
    line: usize,
    over: bool,
}

/// Why a [`Bounded`] stream ended.
#[derive(Debug, thiserror::Error)]
enum Unread<E> {
    #[error(transparent)]
    Source(E),
    #[error("an event of the server's stream passed {0} bytes")]
    TooLarge(usize),
}

impl<S> Bounded<S> {
    fn new(bytes: S, cap: usize) -> Self {
        Self {
            bytes,
            cap,
            event: 0,
            line: 0,
            over: false,
        }
    }

    /// Count `chunk`; false once an event is over the cap. An event ends at
    /// an empty line (`\n\n`, `\r\n\r\n`).
    fn tally(&mut self, chunk: &[u8]) -> bool {
        for &byte in chunk {
            match byte {
                b'\n' if self.line == 0 => self.event = 0,
                b'\n' => self.line = 0,
                b'\r' => {}
                _ => {
                    self.line += 1;
                    self.event += 1;
                }
            }
            if self.event > self.cap {
                return false;
            }
        }
        true
    }
}

impl<S, D, E> Stream for Bounded<S>
where
    S: Stream<Item = Result<D, E>> + Unpin,
    D: AsRef<[u8]>,
{
    type Item = Result<D, Unread<E>>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.over {
            return Poll::Ready(None);
        }
        match self.bytes.poll_next_unpin(cx) {
            Poll::Ready(Some(Ok(chunk))) if !self.tally(chunk.as_ref()) => {
                self.over = true;
                Poll::Ready(Some(Err(Unread::TooLarge(self.cap))))
            }
            Poll::Ready(Some(chunk)) => Poll::Ready(Some(chunk.map_err(Unread::Source))),
            other => other.map(|_| None),
        }
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::{ClientRequest, ListToolsRequest, NumberOrString};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// `post` of a `tools/list` to a loopback server that answers every
    /// request with `status`, `headers` and `body`, in `session`.
    async fn answered(
        status: &str,
        headers: &str,
        body: String,
        session: Option<&str>,
    ) -> Result<StreamableHttpPostResponse, Failed> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let response = format!(
            "HTTP/1.1 {status}\r\n{headers}content-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        tokio::spawn(async move {
            let (mut stream, _) = listener.accept().await.unwrap();
            // The whole request (headers, then the body they announce).
            let mut request = Vec::new();
            let mut buf = [0u8; 4096];
            loop {
                let n = stream.read(&mut buf).await.unwrap();
                request.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&request);
                if let Some(end) = text.find("\r\n\r\n") {
                    let length = text[..end]
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length:")
                                .map(|v| v.trim().parse::<usize>().unwrap())
                        })
                        .unwrap_or(0);
                    if request.len() >= end + 4 + length {
                        break;
                    }
                }
            }
            stream.write_all(response.as_bytes()).await.unwrap();
        });
        let http = crate::http_client::builder().build().unwrap();
        let list = ClientRequest::ListToolsRequest(ListToolsRequest::default());
        let message = ClientJsonRpcMessage::request(list, NumberOrString::Number(1));
        let mut limits = StreamableHttpResponseLimits::default();
        limits.max_json_response_size = 1024;
        let uri = format!("http://{addr}/mcp");
        post(&http, &uri, &message, (session, None), HashMap::new(), &limits).await
    }

    const JSON: &str = "content-type: application/json\r\n";

    #[tokio::test]
    async fn a_plain_json_list_is_carried_and_keeps_its_session() {
        let body = r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","inputSchema":{},"execution":{"taskSupport":"optional"}}]}}"#;
        let headers = format!("{JSON}mcp-session-id: s1\r\n");
        let Ok(StreamableHttpPostResponse::Json(message, Some(session))) =
            answered("200 OK", &headers, body.into(), None).await
        else {
            panic!("not a JSON answer with its session")
        };
        assert_eq!(session, "s1");
        let text = serde_json::to_string(&message).unwrap();
        assert!(text.contains(carried::EXECUTION_KEY), "{text}");
    }

    #[tokio::test]
    async fn each_failure_is_answered_as_rmcps_client_answers_it() {
        let error = r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"no such task"}}"#;
        let answer = answered("400 Bad Request", JSON, error.into(), Some("s1")).await;
        let Ok(StreamableHttpPostResponse::Json(JsonRpcMessage::Error(e), _)) = answer else {
            panic!("a JSON-RPC error under 400 is not passed on: {answer:?}")
        };
        assert_eq!(e.error.message, "no such task");

        let expired = answered("404 Not Found", "", String::new(), Some("s1")).await;
        assert!(
            matches!(expired, Err(StreamableHttpError::SessionExpired)),
            "{expired:?}"
        );
        let busy = answered(
            "503 Service Unavailable",
            "retry-after: 2\r\n",
            String::new(),
            None,
        )
        .await;
        assert!(
            matches!(&busy, Err(StreamableHttpError::HttpStatus(e)) if e.status == 503 && e.retry_after.as_deref() == Some("2")),
            "{busy:?}"
        );
        let accepted = answered("202 Accepted", "", String::new(), None).await;
        assert!(
            matches!(accepted, Ok(StreamableHttpPostResponse::Accepted)),
            "{accepted:?}"
        );
        let giant = answered(
            "200 OK",
            JSON,
            format!("{{\"x\":\"{}\"}}", "x".repeat(2048)),
            None,
        )
        .await;
        assert!(
            matches!(
                giant,
                Err(StreamableHttpError::ResponseBodyTooLarge { max_size: 1024 })
            ),
            "{giant:?}"
        );
        let html = answered("200 OK", "content-type: text/html\r\n", "<p>".into(), None).await;
        assert!(
            matches!(html, Err(StreamableHttpError::UnexpectedContentType(Some(_)))),
            "{html:?}"
        );
    }

    fn events(chunks: &[&str], cap: usize) -> Vec<Result<String, String>> {
        let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
            chunks.iter().map(|c| Ok(c.as_bytes().to_vec())).collect();
        let stream = Bounded::new(futures::stream::iter(chunks), cap);
        futures::executor::block_on(
            stream
                .map(|r| {
                    r.map(|d| String::from_utf8(d).unwrap())
                        .map_err(|e| e.to_string())
                })
                .collect(),
        )
    }

    #[test]
    fn events_within_the_cap_pass_whatever_their_number_or_chunking() {
        let many = "data: 12345\n\n".repeat(100);
        assert!(events(&[&many], 11).iter().all(Result::is_ok));
        let split = events(&["data: 123", "45\r\n", "\r\ndata: 1\n\n"], 11);
        assert!(split.iter().all(Result::is_ok), "{split:?}");
    }

    #[test]
    fn an_event_past_the_cap_ends_the_stream_with_an_error() {
        let got = events(&["data: 1\n\n", "data: 12345", "6789012\n", "data: 1\n\n"], 16);
        assert_eq!(got.len(), 3, "{got:?}");
        assert!(got[0].is_ok() && got[1].is_ok());
        assert_eq!(
            got[2].as_ref().unwrap_err(),
            "an event of the server's stream passed 16 bytes"
        );
    }
}
