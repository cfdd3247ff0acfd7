//! A POST's event stream sent in one write when its answer comes soon.
//!
//! rmcp answers a POST within a session with an event stream that opens
//! with a priming event (an event id and a `retry`, no message: what a
//! client resumes a broken stream from), and hyper writes whatever it has
//! each time the body has nothing more ready. So every call answered over
//! HTTP left in two writes: the response head with the priming event at
//! once, then the answer and the stream's end. Over loopback a write costs
//! the sender the receiver's TCP processing, and wakes the client once more:
//! the two writes were a third of the host's CPU on a call.
//!
//! [`hold_for_answer`] holds the response until its stream's answer has come
//! and the stream has ended after it, or [`HOLD`] has passed, and then hands
//! on what it holds ahead of the rest: a call answered within [`HOLD`] leaves
//! with its head in one write, so the client's connection is free for its
//! next request at once. If the answer was all the stream held for the
//! client (the priming event aside), it leaves as a plain JSON body, which
//! MCP lets a server answer a POST with and every client takes: the client
//! reads one body of known length instead of running an event-stream reader
//! (rmcp's client spawns a task for each stream). A stream with no
//! answer by then (a long call, a stream kept open for notifications) is
//! sent its head and priming event then, so a long call's stream can still
//! be resumed. A message that is not an answer (a progress notification, a
//! request to the client) ends the hold at once: nothing the client is to
//! see or answer waits on it.
//!
//! Not here: which answers are held (`connections::answer`: a POST's event
//! stream, nothing else).

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use hyper::body::{Body as HttpBody, Frame};

/// The longest an event stream's head waits for its answer.
pub(super) const HOLD: Duration = Duration::from_millis(20);

type Framed = Result<Frame<Bytes>, axum::Error>;

/// `response` (an event stream) once its answer has come and its stream
/// ended, a message that is not an answer has come, or `hold` ([`HOLD`])
/// has passed, with what came meanwhile sent first.
pub(super) async fn hold_for_answer(response: Response, hold: Duration) -> Response {
    let (parts, mut body) = response.into_parts();
    let mut held = VecDeque::new();
    let (mut answered, mut ended) = (false, false);
    let hold = tokio::time::sleep(hold);
    tokio::pin!(hold);
    loop {
        let next = std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx));
        tokio::select! {
            biased;
            frame = next => {
                let Some(frame) = frame else {
                    ended = true;
                    break;
                };
                let message = match &frame {
                    Ok(frame) => message_in(frame),
                    Err(_) => Some(Message::Other),
                };
                held.push_back(frame);
                match message {
                    _ if answered => break,
                    Some(Message::Answer) => answered = true,
                    Some(Message::Other) => break,
                    None => {}
                }
            }
            () = &mut hold => break,
        }
    }
    if answered
        && ended
        && let Some(answer) = sole_answer(&held)
    {
        return as_json(parts, answer);
    }
    let rest = (!ended).then_some(body);
    Response::from_parts(parts, Body::new(Held { held, rest }))
}

/// The answer's JSON, if the stream held nothing else that a client would
/// see: no other message, only the priming event or comments.
fn sole_answer(held: &VecDeque<Framed>) -> Option<Bytes> {
    let mut answer = None;
    for frame in held {
        let frame = frame.as_ref().ok()?;
        match message_in(frame) {
            None => {}
            Some(Message::Answer) if answer.is_none() => answer = Some(data_of(frame.data_ref()?)?),
            Some(_) => return None,
        }
    }
    answer
}

/// An event's data if it is on one line (rmcp writes a message on one);
/// `None` for data over several, which is left a stream.
fn data_of(event: &Bytes) -> Option<Bytes> {
    let mut lines = event
        .split(|b| *b == b'\n')
        .filter_map(|line| line.strip_prefix(b"data:"));
    let value = lines.next()?;
    if lines.next().is_some() {
        return None;
    }
    let value = value.strip_prefix(b" ").unwrap_or(value);
    Some(event.slice_ref(value.strip_suffix(b"\r").unwrap_or(value)))
}

/// The answer alone, as the JSON body MCP lets a server give a POST in
/// place of an event stream: every client takes both, and one body of a
/// known length spares the client an event-stream reader (rmcp's spawns a
/// task for each), and hyper the chunked framing.
fn as_json(mut parts: http::response::Parts, answer: Bytes) -> Response {
    parts.headers.insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    parts.headers.remove(http::header::CACHE_CONTROL);
    parts.headers.remove("x-accel-buffering");
    Response::from_parts(parts, Body::from(answer))
}

/// What an event carries.
#[derive(Debug, PartialEq)]
enum Message {
    /// A response: the last message of a POST's stream.
    Answer,
    /// A notification or a request.
    Other,
}

/// The message an event stream's frame carries, if any: a `data` field
/// with something in it (rmcp's priming event has an empty one, a
/// keep-alive comment none). An answer is told by its first key after
/// `jsonrpc` and `id`: `"result":` or `"error":` comes before any
/// `"method":`. Nothing earlier in the text can look like a key: the two
/// values before it are a string and a scalar id, and a value is never
/// followed by a colon. Told wrong, a stream is handed on sooner or later,
/// never changed.
fn message_in(frame: &Frame<Bytes>) -> Option<Message> {
    let data = frame.data_ref()?;
    let json = data.split(|b| *b == b'\n').find_map(|line| {
        let value = line.strip_prefix(b"data:")?;
        let value = value.strip_prefix(b" ").unwrap_or(value);
        (!value.is_empty() && value != b"\r").then_some(value)
    })?;
    let first_key = (0..json.len()).filter(|at| json[*at] == b'"').find_map(|at| {
        let rest = &json[at..];
        [
            (&b"\"result\":"[..], Message::Answer),
            (b"\"error\":", Message::Answer),
            (b"\"method\":", Message::Other),
        ]
        .into_iter()
        .find_map(|(key, message)| rest.starts_with(key).then_some(message))
    });
    Some(first_key.unwrap_or(Message::Other))
}

/// The frames taken while the head was held, then the rest of the stream
/// (none once it has ended: a stream is not polled past its end).
struct Held {
    held: VecDeque<Framed>,
    rest: Option<Body>,
}

impl HttpBody for Held {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Framed>> {
        let this = self.get_mut();
        if let Some(frame) = this.held.pop_front() {
            return Poll::Ready(Some(frame));
        }
        match &mut this.rest {
            Some(rest) => Pin::new(rest).poll_frame(cx),
            None => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.held.is_empty() && self.rest.as_ref().is_none_or(HttpBody::is_end_stream)
    }
}

#[cfg(test)]
mod tests {
    use std::task::Waker;

    use futures::StreamExt;
    use futures::channel::mpsc;

    use super::*;

    const PRIMING: &str = "data: \nid: 0/0\nretry: 3000\n\n";
    const MESSAGE: &str = "data: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\nid: 1/0\n\n";
    const PROGRESS: &str =
        "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":1}}\n\n";
    /// A hold no test outlasts: what ends it is the stream.
    const FOREVER: Duration = Duration::from_secs(3600);

    /// An event stream fed by hand, and the sender that feeds it.
    fn stream() -> (mpsc::UnboundedSender<&'static str>, Response) {
        let (send, receive) = mpsc::unbounded();
        let events = receive.map(|event: &'static str| Ok::<_, std::convert::Infallible>(Bytes::from(event)));
        (send, Response::new(Body::from_stream(events)))
    }

    /// Every frame the body has ready now, as text, and whether it ended.
    fn ready_now(body: &mut Body) -> (Vec<String>, bool) {
        let mut cx = Context::from_waker(Waker::noop());
        let mut frames = Vec::new();
        loop {
            match Pin::new(&mut *body).poll_frame(&mut cx) {
                Poll::Ready(Some(frame)) => {
                    let data = frame.unwrap().into_data().unwrap();
                    frames.push(String::from_utf8(data.to_vec()).unwrap());
                }
                Poll::Ready(None) => return (frames, true),
                Poll::Pending => return (frames, false),
            }
        }
    }

    #[test]
    fn a_message_is_a_data_field_with_something_in_it_and_an_answer_has_a_result_or_an_error() {
        let frame = |s: &'static str| Frame::data(Bytes::from(s));
        assert_eq!(message_in(&frame(MESSAGE)), Some(Message::Answer));
        assert_eq!(message_in(&frame(PROGRESS)), Some(Message::Other));
        let refused = "data:{\"jsonrpc\":\"2.0\",\"id\":\"a\\\"method\\\":\",\"error\":{}}\n\n";
        assert_eq!(message_in(&frame(refused)), Some(Message::Answer));
        let asks = "data: {\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"elicitation/create\",\"params\":{\"result\":1}}\n\n";
        assert_eq!(message_in(&frame(asks)), Some(Message::Other));
        assert_eq!(message_in(&frame(PRIMING)), None);
        assert_eq!(message_in(&frame("data:\r\nid: 3\n\n")), None);
        assert_eq!(message_in(&frame(": keep-alive\n\n")), None);
    }

    /// The head waits for the answer and the stream's end, and then the
    /// answer alone is the body, as JSON: hyper writes it with the head.
    #[tokio::test]
    async fn an_answer_leaves_with_its_head_as_json() {
        let (send, response) = stream();
        send.unbounded_send(PRIMING).unwrap();
        let held = tokio::spawn(hold_for_answer(response, FOREVER));
        let settle = || async {
            for _ in 0..100 {
                tokio::task::yield_now().await;
            }
        };
        settle().await;
        assert!(!held.is_finished(), "the head waits for the answer");
        send.unbounded_send(MESSAGE).unwrap();
        settle().await;
        assert!(!held.is_finished(), "and for the stream's end");
        drop(send);
        let response = held.await.unwrap();
        assert_eq!(response.headers()[http::header::CONTENT_TYPE], "application/json");
        let mut body = response.into_body();
        let answer = "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}";
        assert_eq!(ready_now(&mut body), (vec![answer.to_owned()], true));
    }

    /// The answer's JSON is its event's data, whatever the order and line
    /// ends of the event's fields; a stream holding any other message, or
    /// one not told an answer, stays a stream.
    #[test]
    fn only_a_sole_answer_is_taken_and_its_data_whole() {
        let held = |events: &[&'static str]| -> VecDeque<Framed> {
            events.iter().map(|e| Ok(Frame::data(Bytes::from(*e)))).collect()
        };
        let crlf = "id: 4\r\ndata:{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\r\n\r\n";
        assert_eq!(
            sole_answer(&held(&[PRIMING, crlf])).unwrap(),
            "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}"
        );
        // Data over two lines stays a stream, told an answer or not.
        for split in [
            "data: {\"jsonrpc\":\"2.0\",\ndata: \"id\":2,\"result\":{}}\n\n",
            "data: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\ndata: }}\n\n",
        ] {
            assert_eq!(sole_answer(&held(&[PRIMING, split])), None, "{split}");
        }
        assert_eq!(sole_answer(&held(&[PRIMING, PROGRESS, MESSAGE])), None);
        assert_eq!(sole_answer(&held(&[MESSAGE, MESSAGE])), None);
        assert_eq!(sole_answer(&held(&[PRIMING])), None);
    }

    /// A notification before the answer is handed on at once.
    #[tokio::test]
    async fn progress_ends_the_hold_at_once() {
        let (send, response) = stream();
        send.unbounded_send(PRIMING).unwrap();
        send.unbounded_send(PROGRESS).unwrap();
        let mut body = hold_for_answer(response, FOREVER).await.into_body();
        assert_eq!(
            ready_now(&mut body),
            (vec![PRIMING.to_owned(), PROGRESS.to_owned()], false)
        );
        send.unbounded_send(MESSAGE).unwrap();
        drop(send);
        assert_eq!(ready_now(&mut body), (vec![MESSAGE.to_owned()], true));
    }

    /// A stream with no answer within the hold gets its head and priming
    /// event then, and the rest as it comes.
    #[tokio::test]
    async fn a_long_call_gets_its_priming_event_after_the_hold() {
        let (send, response) = stream();
        send.unbounded_send(PRIMING).unwrap();
        let mut body = hold_for_answer(response, Duration::from_millis(1))
            .await
            .into_body();
        assert_eq!(ready_now(&mut body), (vec![PRIMING.to_owned()], false));
        send.unbounded_send(MESSAGE).unwrap();
        drop(send);
        assert_eq!(ready_now(&mut body), (vec![MESSAGE.to_owned()], true));
    }

    /// Over a real connection: a call's answer arrives with its head, whole,
    /// in the first read of a client waiting on the socket, where it used
    /// to find the head and priming event alone and wait again.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_call_over_http_is_answered_in_one_write() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};

        // A hold no call outlasts on a loaded machine: the call's answer,
        // not the hold's end, is what sends the head.
        let front = crate::mcp::loopback::Front::bounded(crate::mcp::connections::Bounds {
            answer_hold: FOREVER,
            ..crate::mcp::connections::Bounds::for_this_process()
        })
        .await;
        let session = front.open().await;
        let mut tcp = tokio::net::TcpStream::connect(front.addr).await.unwrap();
        tcp.set_nodelay(true).unwrap();
        for id in 2..5 {
            let call = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "read", "arguments": {"path": "a.txt"}}})
            .to_string();
            let post = format!(
                "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
                 Accept: application/json, text/event-stream\r\nMcp-Session-Id: {session}\r\n\
                 Mcp-Protocol-Version: 2025-06-18\r\nContent-Length: {}\r\n\r\n{call}",
                call.len()
            );
            tcp.write_all(post.as_bytes()).await.unwrap();
            let mut first = vec![0; 64 << 10];
            let n = tokio::time::timeout(crate::mcp::loopback::ANSWER, tcp.read(&mut first))
                .await
                .unwrap()
                .unwrap();
            let first = String::from_utf8_lossy(&first[..n]);
            assert!(first.starts_with("HTTP/1.1 200"), "{first}");
            assert!(first.contains("content-type: application/json\r\n"), "{first}");
            let (head, body) = first.split_once("\r\n\r\n").unwrap();
            assert!(
                head.contains(&format!("content-length: {}\r\n", body.len())),
                "{first}"
            );
            let answer: serde_json::Value = serde_json::from_str(body).unwrap();
            assert_eq!(answer["id"], id, "{first}");
            assert!(answer["result"].is_object(), "{first}");
        }
    }

    /// A stream that ends before any message is handed on at once, whole,
    /// and is not polled past its end.
    #[tokio::test]
    async fn a_stream_ended_early_is_handed_on_whole() {
        let (send, response) = stream();
        send.unbounded_send(PRIMING).unwrap();
        drop(send);
        let mut body = hold_for_answer(response, FOREVER).await.into_body();
        assert_eq!(ready_now(&mut body), (vec![PRIMING.to_owned()], true));
        assert!(body.is_end_stream());
    }
}
