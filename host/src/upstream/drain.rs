//! A request's event stream read to its end after rmcp lets go of it, so
//! that its HTTP/1.1 connection goes back to the pool.
//!
//! rmcp's client stops reading a request's event stream once the answer is
//! in. It means to read on for a moment, so the connection can be kept, but
//! the request's end cancels that. When the stream's last chunk comes in a
//! TCP segment after the answer's, the connection is dropped half-read and
//! the next call to the server opens a new one (over TLS, with a new
//! handshake): 358 of 505 calls proxied to a Python SDK server on loopback
//! did. A stream dropped before its end is read on here, on a task of its
//! own, for at most [`DRAIN`], and what it still says is thrown away, as
//! rmcp would: the request is answered. Not here: what the events carry
//! (`carried`), the posts the host makes itself (`post`).

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::{Stream, StreamExt};
use rmcp::transport::streamable_http_client::{SseError, StreamableHttpPostResponse};
use sse_stream::Sse;

use super::carried::Events;

/// How long a stream let go of is read on: its end follows its answer at
/// once from a server that ends it; one that does not is dropped then.
const DRAIN: Duration = Duration::from_secs(1);

/// `response`, its event stream (if it is one) read to its end once
/// dropped.
pub(super) fn drained(response: StreamableHttpPostResponse) -> StreamableHttpPostResponse {
    match response {
        StreamableHttpPostResponse::Sse(events, session) => {
            StreamableHttpPostResponse::Sse(Drained(Some(events)).boxed(), session)
        }
        other => other,
    }
}

/// An event stream that, dropped before its end, is read on.
struct Drained(Option<Events>);

impl Stream for Drained {
    type Item = Result<Sse, SseError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let Some(events) = self.0.as_mut() else {
            return Poll::Ready(None);
        };
        let next = std::task::ready!(events.poll_next_unpin(cx));
        if next.is_none() {
            self.0 = None;
        }
        Poll::Ready(next)
    }
}

impl Drop for Drained {
    fn drop(&mut self) {
        let Some(mut events) = self.0.take() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        runtime.spawn(async move {
            let read_on = async { while events.next().await.is_some() {} };
            let _ = tokio::time::timeout(DRAIN, read_on).await;
        });
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use rmcp::model::ClientJsonRpcMessage;
    use rmcp::transport::streamable_http_client::StreamableHttpClient;
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

    use super::*;
    use crate::upstream::carried::Carrying;

    /// A server on loopback answering every POST with an event stream whose
    /// last chunk follows its answer's a moment later, as a server's does
    /// when they go in two TCP segments; and how many connections it took.
    async fn ending_late() -> (String, Arc<AtomicUsize>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let connections = Arc::new(AtomicUsize::new(0));
        let counted = connections.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                counted.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(async move {
                    let mut reader = BufReader::new(stream);
                    loop {
                        let (mut line, mut length) = (String::new(), 0);
                        loop {
                            line.clear();
                            if reader.read_line(&mut line).await.unwrap_or(0) == 0 {
                                return;
                            }
                            if line.trim().is_empty() {
                                break;
                            }
                            if let Some((name, value)) = line.split_once(':')
                                && name.eq_ignore_ascii_case("content-length")
                            {
                                length = value.trim().parse().unwrap_or(0);
                            }
                        }
                        let mut body = vec![0; length];
                        reader.read_exact(&mut body).await.unwrap();
                        let event = "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[]}}\n\n";
                        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                                    transfer-encoding: chunked\r\n\r\n";
                        let answer = format!("{head}{:x}\r\n{event}\r\n", event.len());
                        let stream = reader.get_mut();
                        stream.write_all(answer.as_bytes()).await.unwrap();
                        tokio::time::sleep(Duration::from_millis(5)).await;
                        stream.write_all(b"0\r\n\r\n").await.unwrap();
                    }
                });
            }
        });
        (url, connections)
    }

    /// Calls whose event streams are let go of at their answer, as rmcp's
    /// client does, share one connection: before, each opened its own.
    #[tokio::test]
    async fn a_stream_let_go_of_at_its_answer_leaves_its_connection_to_the_next_call() {
        let (url, connections) = ending_late().await;
        let (client, _opening) = Carrying::new(crate::http_client::builder().build().unwrap());
        let call: ClientJsonRpcMessage = serde_json::from_value(serde_json::json!({"jsonrpc": "2.0",
            "id": 1, "method": "tools/call", "params": {"name": "t", "arguments": {}}}))
        .unwrap();
        const CALLS: usize = 5;
        for _ in 0..CALLS {
            let response = client
                .post_message(url.as_str().into(), call.clone(), None, None, HashMap::new())
                .await
                .unwrap();
            let StreamableHttpPostResponse::Sse(mut events, _) = response else {
                panic!("an event stream was sent");
            };
            let answer = events.next().await.unwrap().unwrap();
            assert!(answer.data.unwrap().contains("\"result\""));
            drop(events);
            // The agent thinks before its next call: long enough for the
            // stream's end, 5 ms away, to be read on a loaded machine.
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        assert_eq!(
            connections.load(Ordering::SeqCst),
            1,
            "{CALLS} calls, each stream let go of at its answer"
        );
    }
}
