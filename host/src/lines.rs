//! JSON-RPC over a reader and a writer, one message a line: the stdio
//! transport of both the host's sides, the front's client and each
//! upstream server it starts.
//!
//! rmcp reads each message as its untagged `JsonRpcMessage`, whose request
//! and result types are unions tried variant after variant until one fits:
//! a `tools/call` is the fourteenth request type, a call's result the
//! sixteenth result type, and every variant that fails builds an error on
//! the way. That was about an eighth of the host's CPU on a stdio call and
//! again on a proxied one. So each side reads the lines it sees most as the
//! one type they are ([`ReadLines`]): the front a client's `tools/call`,
//! the upstream side a server's answer to one. A line's [`Shape`] (its
//! keys, whether its method is `tools/call`, its id) is read first,
//! without building anything else. Every other line, and any the fast
//! path cannot read, goes through rmcp's own codec ([`by_rmcp`]), so its
//! compatibility rules stay its own: a leading byte order mark is skipped,
//! notifications outside MCP are ignored, a line that is not JSON is
//! dropped, and JSON that is no message is answered `Invalid Request`.
//!
//! A line over the transport's bound is dropped, as rmcp's transport
//! drops it, and the session goes on.
//!
//! The peer's requests are bounded too. rmcp reads on while its handlers
//! work, and holds each answer the peer has not read yet in a task of its
//! own, so a client writing calls without reading their answers had the
//! host hold all of them (311 MB for 20,000). While [`MAX_UNANSWERED`] of
//! the peer's requests are unanswered (their answers not yet written),
//! answers and notifications are still read (a cancellation frees its
//! request's place), but the next request is held, and nothing after it
//! is read until a place is free: a peer that does not read is not read
//! either, and its writes stall, as a pipe's would. The price: a peer
//! that sends a further request before what its unanswered ones wait on
//! (its answer to the host's own request, a cancellation) waits with
//! them, until the calls' deadlines. A request under the id of one not
//! yet answered is refused (`Invalid Request`): a peer's ids must be
//! unique, and rmcp would work on both, the second outside the bound.
//!
//! Not here: what each side reads on its fast path (the front's `mcp`,
//! `upstream`), the pipes themselves.

use std::collections::HashMap;
use std::io;
use std::marker::PhantomData;
use std::sync::Arc;

use futures::{SinkExt, StreamExt};
use rmcp::model::{ClientNotification, ErrorData, JsonRpcMessage, RequestId, ServerNotification};
use rmcp::service::{RoleClient, RoleServer, RxJsonRpcMessage, ServiceRole, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::async_rw::{DEFAULT_MAX_LINE_LENGTH, JsonRpcMessageCodec, JsonRpcMessageCodecError};
use serde::Deserialize;
use serde::de::{IgnoredAny, MapAccess, Visitor};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{Mutex, OwnedSemaphorePermit, Semaphore};
use tokio_util::bytes::{Buf, BytesMut};
use tokio_util::codec::{Decoder, FramedRead, FramedWrite};

/// One line read, as the session takes it: a message, or JSON that is no
/// message, which is refused.
pub(crate) type Line<Role> = Result<RxJsonRpcMessage<Role>, NoMessage>;

/// A line that was JSON but no JSON-RPC message: its refusal, under its id
/// if it is a request whose id can be read.
#[derive(Debug)]
pub(crate) struct NoMessage(Option<RequestId>, ErrorData);

impl NoMessage {
    /// Request `id` refused with `error`, before its side reads it.
    pub(crate) fn refused(id: RequestId, error: ErrorData) -> Self {
        Self(Some(id), error)
    }
}

/// The most requests of the peer's worked on at once: at this many, the
/// next is held, and nothing after it read, until one is answered.
pub(crate) const MAX_UNANSWERED: usize = 1024;

/// A side of a session, told apart by what its peer may send.
pub(crate) trait Side: ServiceRole {
    /// The request the peer gives up on, if `notification` says it does:
    /// rmcp sends no answer to it then.
    fn cancelled(notification: &Self::PeerNot) -> Option<&RequestId>;
}

impl Side for RoleServer {
    fn cancelled(notification: &ClientNotification) -> Option<&RequestId> {
        match notification {
            ClientNotification::CancelledNotification(n) => n.params.request_id.as_ref(),
            _ => None,
        }
    }
}

impl Side for RoleClient {
    fn cancelled(notification: &ServerNotification) -> Option<&RequestId> {
        match notification {
            ServerNotification::CancelledNotification(n) => n.params.request_id.as_ref(),
            _ => None,
        }
    }
}

/// How one side reads its peer's lines.
pub(crate) trait ReadLines<Role: ServiceRole>: Send + 'static {
    /// `line` (one whole line, its newline included) as the session takes
    /// it; `None` for a line to skip. The lines a side sees most are read
    /// as their own type; the rest with [`by_rmcp`].
    fn read(&mut self, line: &[u8]) -> Option<Line<Role>>;

    /// Told of each message as it is sent, before the peer can answer it.
    fn sent(&mut self, _message: &TxJsonRpcMessage<Role>) {}
}

/// `line` as rmcp's own codec reads it, with its compatibility rules.
pub(crate) fn by_rmcp<Role: ServiceRole>(line: &[u8]) -> Option<Line<Role>> {
    let mut buf = BytesMut::from(line);
    if !line.ends_with(b"\n") {
        buf.extend_from_slice(b"\n");
    }
    match JsonRpcMessageCodec::<RxJsonRpcMessage<Role>>::default().decode(&mut buf) {
        Ok(message) => message.map(Ok),
        Err(JsonRpcMessageCodecError::Serde(e)) if !e.is_syntax() && !e.is_eof() => {
            let (id, error) = crate::malformed::refusal(without_bom(line));
            Some(Err(NoMessage(id, error)))
        }
        // Not JSON: no id to answer, and an answer could start an error
        // storm with a peer that echoes it back.
        Err(e) => {
            tracing::debug!("ignoring an unreadable line: {e}");
            None
        }
    }
}

/// The refusal of a request under the id of one of the same peer's not
/// yet answered: over stdio (here) and in an HTTP session (`mcp`'s
/// sessions) alike.
pub(crate) fn id_in_use(id: &RequestId) -> ErrorData {
    ErrorData::invalid_request(
        format!("Invalid request: the id {id} is already used by a request not yet answered"),
        None,
    )
}

/// `line` without a leading byte order mark, which JSON allows a reader to
/// skip.
pub(crate) fn without_bom(line: &[u8]) -> &[u8] {
    line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line)
}

type Writer<Role, W> = FramedWrite<W, JsonRpcMessageCodec<TxJsonRpcMessage<Role>>>;

/// A session's transport over a reader and a writer, one message a line.
pub(crate) struct Lines<Role: ServiceRole, R, W, P> {
    read: FramedRead<R, Framing<Role, P>>,
    /// Shared with each `send`'s future, which must own what it writes to;
    /// `None` once closed.
    write: Arc<Mutex<Option<Writer<Role, W>>>>,
    refusal: Refusal,
    /// A permit for each of the peer's requests being worked on.
    unanswered: Arc<Semaphore>,
    /// Each such request's permit, by its id, until its answer is written.
    answering: HashMap<RequestId, OwnedSemaphorePermit>,
    /// A request read while none was free, delivered when one is.
    held: Option<RxJsonRpcMessage<Role>>,
}

/// Where an answer the transport gives itself stands (to a line that was
/// JSON but no message, or to a request under an id already in use), kept
/// across a `receive` cancelled while writing it, so it is sent once.
enum Refusal {
    None,
    ToWrite(ErrorData, Option<RequestId>),
    ToFlush,
}

impl<Role: ServiceRole, R: AsyncRead, W: AsyncWrite, P: ReadLines<Role>> Lines<Role, R, W, P> {
    /// Lines of at most rmcp's own bound ([`DEFAULT_MAX_LINE_LENGTH`]),
    /// read with `reading`, a request taken on while fewer than
    /// [`MAX_UNANSWERED`] are worked on.
    pub(crate) fn new(read: R, write: W, reading: P) -> Self {
        let framing = Framing {
            reading,
            max: DEFAULT_MAX_LINE_LENGTH,
            searched: 0,
            dropping: false,
            _role: PhantomData,
        };
        Self {
            read: FramedRead::new(read, framing),
            write: Arc::new(Mutex::new(Some(FramedWrite::new(
                write,
                JsonRpcMessageCodec::default(),
            )))),
            refusal: Refusal::None,
            unanswered: Arc::new(Semaphore::new(MAX_UNANSWERED)),
            answering: HashMap::new(),
            held: None,
        }
    }

    /// The same, each line at most `max` bytes.
    pub(crate) fn with_max_line(mut self, max: usize) -> Self {
        self.read.decoder_mut().max = max;
        self
    }

    /// Takes `message` on, `permit` being a free place if one was: a
    /// request keeps it until its answer is written, or is held without
    /// one, or is refused if its id is in use (`None` returned for both); a
    /// cancellation frees its request's place, which rmcp will not answer.
    fn take_on(
        &mut self,
        message: RxJsonRpcMessage<Role>,
        permit: Option<OwnedSemaphorePermit>,
    ) -> Option<RxJsonRpcMessage<Role>>
    where
        Role: Side,
    {
        match (&message, permit) {
            // rmcp would work on a second request under the id of one it is
            // answering, outside the bound, where the id's one place is
            // taken: a peer reusing one id read everything. The peer's ids
            // must be unique, so it is refused.
            (JsonRpcMessage::Request(request), _) if self.answering.contains_key(&request.id) => {
                self.refusal = Refusal::ToWrite(id_in_use(&request.id), Some(request.id.clone()));
                return None;
            }
            (JsonRpcMessage::Request(request), Some(permit)) => {
                self.answering.insert(request.id.clone(), permit);
            }
            (JsonRpcMessage::Request(_), None) => {
                tracing::debug!("{MAX_UNANSWERED} requests unanswered: the next waits for an answer");
                self.held = Some(message);
                return None;
            }
            (JsonRpcMessage::Notification(n), _) => {
                if let Some(id) = Role::cancelled(&n.notification) {
                    self.answering.remove(id);
                }
            }
            (JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_), _) => {}
        }
        Some(message)
    }
}

impl<Role, R, W, P> Transport<Role> for Lines<Role, R, W, P>
where
    Role: Side,
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
    P: ReadLines<Role>,
{
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<Role>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.read.decoder_mut().reading.sent(&item);
        let answered = match &item {
            JsonRpcMessage::Response(response) => Some(&response.id),
            JsonRpcMessage::Error(error) => error.id.as_ref(),
            _ => None,
        };
        let permit = answered.and_then(|id| self.answering.remove(id));
        let write = self.write.clone();
        async move {
            let _written_or_dropped = permit;
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
    // its other work): a partial line stays in `FramedRead`'s buffer, a
    // refusal being written in `refusal`, a request waiting for a place in
    // `held`, and a permit not yet used goes back.
    async fn receive(&mut self) -> Option<RxJsonRpcMessage<Role>> {
        loop {
            if !matches!(self.refusal, Refusal::None) {
                let mut write = self.write.lock().await;
                let framed = write.as_mut()?;
                if let Refusal::ToWrite(refused, id) = &self.refusal {
                    framed
                        .feed(TxJsonRpcMessage::<Role>::error(refused.clone(), id.clone()))
                        .await
                        .ok()?;
                    self.refusal = Refusal::ToFlush;
                }
                framed.flush().await.ok()?;
                self.refusal = Refusal::None;
            }
            if self.held.is_some() {
                let permit = self.unanswered.clone().acquire_owned().await.ok()?;
                let held = self.held.take()?;
                if let Some(message) = self.take_on(held, Some(permit)) {
                    return Some(message);
                }
                continue;
            }
            let permit = self.unanswered.clone().try_acquire_owned().ok();
            match self.read.next().await? {
                Ok(Ok(message)) => {
                    if let Some(message) = self.take_on(message, permit) {
                        return Some(message);
                    }
                }
                Ok(Err(NoMessage(id, error))) => self.refusal = Refusal::ToWrite(error, id),
                Err(e) => {
                    tracing::error!("reading the peer's lines: {e}");
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

/// Splits the peer's bytes into lines within `max` and reads each.
struct Framing<Role, P> {
    reading: P,
    max: usize,
    /// Where the search for the next newline resumes.
    searched: usize,
    /// Set while the rest of a line over the bound is dropped.
    dropping: bool,
    _role: PhantomData<fn() -> Role>,
}

impl<Role: ServiceRole, P: ReadLines<Role>> Decoder for Framing<Role, P> {
    type Item = Line<Role>;
    type Error = io::Error;

    fn decode(&mut self, buf: &mut BytesMut) -> io::Result<Option<Line<Role>>> {
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
            let within = buf.len().min(self.max.saturating_add(1));
            match buf[self.searched..within].iter().position(|b| *b == b'\n') {
                Some(at) => {
                    let line = buf.split_to(self.searched + at + 1);
                    self.searched = 0;
                    if let Some(line) = self.reading.read(&line) {
                        return Ok(Some(line));
                    }
                }
                None if buf.len() > self.max => {
                    tracing::error!(max = self.max, "a message over the longest line read was dropped");
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
    fn decode_eof(&mut self, buf: &mut BytesMut) -> io::Result<Option<Line<Role>>> {
        let line = self.decode(buf)?;
        buf.clear();
        Ok(line)
    }
}

/// What a message's top-level keys say of it, read without building the
/// message: which keys are there, whether its method is `tools/call`, and
/// its id.
#[derive(Default)]
pub(crate) struct Shape {
    tool_call: bool,
    method: bool,
    id: Option<RequestId>,
    result: bool,
    error: bool,
}

impl Shape {
    /// `line`'s shape, if it is a JSON object with at most one of each of
    /// these keys, and an id that is a JSON-RPC id.
    pub(crate) fn of(line: &[u8]) -> Option<Self> {
        serde_json::from_slice(without_bom(line)).ok()
    }

    /// A request (a method and an id, and no result or error: what rmcp
    /// takes for one) to call a tool.
    pub(crate) fn is_tool_call(&self) -> bool {
        self.tool_call && self.id.is_some() && !self.result && !self.error
    }

    /// The id of a response (a result, and no method or error), if it is one.
    pub(crate) fn response_id(&self) -> Option<&RequestId> {
        (self.result && !self.method && !self.error).then_some(self.id.as_ref())?
    }

    /// The id of an answer, a result or an error, if it is one.
    pub(crate) fn answer_id(&self) -> Option<&RequestId> {
        (!self.method && (self.result || self.error)).then_some(self.id.as_ref())?
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
        use serde::de::Error;
        let mut shape = Shape::default();
        let once = |seen: bool, key: &'static str| match seen {
            true => Err(A::Error::duplicate_field(key)),
            false => Ok(true),
        };
        while let Some(key) = map.next_key::<Key>()? {
            match key {
                Key::Method => {
                    shape.method = once(shape.method, "method")?;
                    shape.tool_call = map.next_value::<Method>()? == Method::ToolsCall;
                }
                Key::Id => {
                    once(shape.id.is_some(), "id")?;
                    shape.id = Some(map.next_value()?);
                }
                Key::Result => {
                    (shape.result, _) = (once(shape.result, "result")?, map.next_value::<IgnoredAny>()?)
                }
                Key::Error => {
                    (shape.error, _) = (once(shape.error, "error")?, map.next_value::<IgnoredAny>()?)
                }
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
pub(crate) mod tests {
    use super::*;

    /// `line` as `reading` reads it, through the transport's framing.
    pub(crate) fn as_read<Role: ServiceRole>(
        reading: impl ReadLines<Role>,
        line: &[u8],
    ) -> Option<Line<Role>> {
        let mut framing = Framing {
            reading,
            max: DEFAULT_MAX_LINE_LENGTH,
            searched: 0,
            dropping: false,
            _role: PhantomData,
        };
        let mut buf = BytesMut::from(line);
        buf.extend_from_slice(b"\n");
        framing.decode(&mut buf).unwrap()
    }

    /// A line read, as text to compare: what it was taken for, every
    /// variant and field of the message it became.
    pub(crate) fn as_debug(line: Option<impl std::fmt::Debug>) -> String {
        format!("{line:?}")
    }

    #[test]
    fn a_shape_is_read_from_the_keys_once_each() {
        let call = Shape::of(br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}"#).unwrap();
        assert!(call.is_tool_call() && call.response_id().is_none());
        let answer = Shape::of(br#"{"id":"a","result":{"content":[]},"jsonrpc":"2.0"}"#).unwrap();
        assert_eq!(answer.response_id(), Some(&RequestId::String("a".into())));
        let error = Shape::of(br#"{"id":2,"error":{}}"#).unwrap();
        assert!(error.response_id().is_none() && error.answer_id().is_some());
        assert!(
            Shape::of(br#"{"id":1,"id":2,"result":{}}"#).is_none(),
            "a key twice"
        );
        assert!(
            Shape::of(br#"{"id":null,"result":{}}"#).is_none(),
            "an id no request has"
        );
        assert!(Shape::of(b"[1]").is_none());
    }
}
