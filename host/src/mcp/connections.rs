//! The TCP connections `serve --http` takes, and what bounds them.
//!
//! A stranger needs no token to open a connection and send half a request
//! head. `axum::serve` keeps such a connection for as long as it stays open
//! and takes every one offered, so a thousand of them held the process at
//! its file limit and locked every client out, for good. Here:
//!
//! - a request head must arrive whole within [`Bounds::request_timeout`] of the
//!   connection starting to wait for it (hyper's header-read timeout): a
//!   connection that sends nothing is closed then, whether it never sent a
//!   request or sits idle between two;
//! - a request's body must then arrive whole within the same time of the
//!   server first waiting for more of it ([`Timed`]): one trickled a byte at
//!   a time is answered `408 Request Timeout` and its connection closed;
//! - at most [`Bounds::per_address`] connections are open from one IP
//!   address, so one stranger cannot take all the others' room;
//! - at most [`Bounds::total`] are open in all, below the process's file
//!   limit, so the listener and the upstream servers' pipes still get
//!   theirs. When all are taken, a new connection takes the place of the
//!   one idle the longest ([`Activity`]): strangers spread over many
//!   addresses, each holding a few half-sent heads, lock no client out;
//!   only connections answering requests can fill the server.
//!
//! A connection over a bound is closed as soon as it is accepted, and the
//! refusal logged (at most once per [`WARN_EVERY`]). A response in flight
//! is never cut: a long call's event stream waits on no head, and a
//! connection answering keeps its place.
//!
//! On shutdown no connection is taken any more, idle ones close, and the
//! POSTs whose answers are still being sent are waited for, up to
//! [`GRACE`] ([`Drain`]). Then the event streams that would never end on
//! their own (a session's GET stream, which every capable client holds)
//! are ended, and the server returns. Before, one open stream kept the
//! process from ever exiting on Ctrl-C. Not here: the routes
//! (`http_router`), authorization (`auth`), MCP sessions (`sessions`).

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use hyper::body::{Body as HttpBody, Frame, SizeHint};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, watch};
use tokio::time::Sleep;
use tokio_util::sync::CancellationToken;
use tower::Service;

use super::first_write;

/// How long shutdown waits for the answers being sent.
const GRACE: Duration = Duration::from_secs(20);

/// How long shutdown then waits for the connections to close.
const LINGER: Duration = Duration::from_secs(2);

/// The refusals of connections over a bound are logged once per this.
const WARN_EVERY: Duration = Duration::from_secs(10);

/// How long accepting pauses after the system refused a connection for
/// lack of file descriptors, so the loop does not spin while they last.
const OUT_OF_FILES_PAUSE: Duration = Duration::from_millis(50);

/// How many connections `serve --http` keeps, how long a request head
/// may take, and how long an answer's head waits for the answer.
#[derive(Debug, Clone, Copy)]
pub(super) struct Bounds {
    /// Connections open at once, in all.
    pub(super) total: usize,
    /// Connections open at once from one IP address. A reverse proxy in
    /// front of toolhost is one address: its pool must fit.
    pub(super) per_address: usize,
    /// The longest a connection may take to send a whole request head,
    /// counted from when it starts waiting for one; and then its body,
    /// counted from when the server first waits for more of it.
    pub(super) request_timeout: Duration,
    /// The longest a POST's event stream waits for its answer before its
    /// head is sent ([`first_write::HOLD`]).
    pub(super) answer_hold: Duration,
}

impl Bounds {
    /// The bounds for this process: half its file limit in all (at most
    /// 4,096, at least 64), 256 from one address, 30 s for a head and 30 s
    /// for a body (hyper's own default for a head once it has a timer, and
    /// about what nginx and Node give). The file limit is first raised to
    /// the most the system lets this process have, as Go's runtime does for
    /// every server: the soft default (often 1,024) is there for old
    /// `select` loops, which a server on epoll is not.
    pub(super) fn for_this_process() -> Self {
        use rustix::process::{Resource, getrlimit, setrlimit};
        let mut limit = getrlimit(Resource::Nofile);
        if limit.current < limit.maximum {
            let raised = rustix::process::Rlimit {
                current: limit.maximum,
                ..limit
            };
            if setrlimit(Resource::Nofile, raised).is_ok() {
                limit = raised;
            }
        }
        let files = limit.current.unwrap_or(u64::MAX);
        let total = usize::try_from(files / 2).unwrap_or(usize::MAX).clamp(64, 4096);
        Self {
            total,
            per_address: 256.min(total),
            request_timeout: Duration::from_secs(30),
            answer_hold: first_write::HOLD,
        }
    }
}

/// What shutdown waits for and then ends: the POSTs whose answers are
/// still being sent (counted by [`answer`] until their body is done), and
/// the event streams, which end when [`Drain::streams`] is cancelled
/// (rmcp's server ends every stream it serves with it).
#[derive(Clone, Default)]
pub(super) struct Drain {
    posts: Posts,
    streams: CancellationToken,
}

/// How many POSTs are being answered.
type Posts = Arc<watch::Sender<usize>>;

impl Drain {
    /// The token that ends every event stream when cancelled.
    pub(super) fn streams(&self) -> CancellationToken {
        self.streams.clone()
    }

    /// Wait until no POST is being answered, or [`GRACE`] has passed; then
    /// end the event streams.
    async fn settle(&self) {
        let mut open = self.posts.subscribe();
        if tokio::time::timeout(GRACE, open.wait_for(|n| *n == 0))
            .await
            .is_err()
        {
            tracing::warn!(
                "{} answers were still being sent {} s into shutdown; they are cut",
                *open.borrow(),
                GRACE.as_secs()
            );
        }
        self.streams.cancel();
    }
}

/// One POST being answered; counted off when dropped.
struct Sent(Posts);

impl Sent {
    fn new(posts: &Posts) -> Self {
        posts.send_modify(|n| *n += 1);
        Self(posts.clone())
    }
}

impl Drop for Sent {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n -= 1);
    }
}

/// Serve `router` over HTTP/1 on `listener` within `bounds` until `shutdown`
/// completes; then let the answers being sent finish and end the event
/// streams (`drain`), and return once the connections have closed (or
/// [`LINGER`] has passed).
pub(super) async fn serve(
    listener: TcpListener,
    router: axum::Router,
    bounds: Bounds,
    drain: Drain,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let open = Open::new(bounds);
    let (stop, stopping) = watch::channel(());
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
        };
        let (tcp, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(e) => {
                pause_after(&e).await;
                continue;
            }
        };
        let Some(slot) = open.take(peer.ip()) else {
            drop(tcp);
            continue;
        };
        let posts = drain.posts.clone();
        tokio::spawn(connection(
            tcp,
            router.clone(),
            posts,
            bounds,
            slot,
            stopping.clone(),
        ));
    }
    drop(listener);
    drop(stopping);
    // Idle connections close; those answering finish their answer.
    stop.send_replace(());
    drain.settle().await;
    // Every connection holds a receiver until it ends.
    if tokio::time::timeout(LINGER, stop.closed()).await.is_err() {
        tracing::debug!("connections still open at shutdown are dropped");
    }
}

/// One connection, served until it closes; asked to end gracefully once
/// `stopping` changes.
async fn connection(
    tcp: TcpStream,
    router: axum::Router,
    posts: Posts,
    bounds: Bounds,
    slot: Slot,
    mut stopping: watch::Receiver<()>,
) {
    // A response may go out in several writes (a long call's priming
    // event, then its result): with Nagle's algorithm on, the second waits
    // for the client's delayed ACK, about 40 ms.
    if let Err(e) = tcp.set_nodelay(true) {
        tracing::debug!("TCP_NODELAY not set on an accepted connection: {e}");
    }
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(bounds.request_timeout);
    // Requests on an HTTP/1 connection come one after another, and one
    // whose body came too late ends it: one flag serves them all.
    let late = Arc::new(AtomicBool::new(false));
    let activity = slot.activity.clone();
    let service = hyper::service::service_fn(move |request| {
        let timed = |body| Timed::new(body, bounds.request_timeout, late.clone(), activity.clone());
        let request = request.map(|body| Body::new(timed(body)));
        let hold = bounds.answer_hold;
        answer(
            router.clone(),
            request,
            &posts,
            hold,
            activity.clone(),
            late.clone(),
        )
    });
    let conn = builder.serve_connection(TokioIo::new(tcp), service);
    let mut conn = std::pin::pin!(conn);
    let mut asked_to_end = false;
    loop {
        tokio::select! {
            result = conn.as_mut() => {
                if let Err(e) = result {
                    tracing::debug!("connection ended: {e}");
                }
                return;
            }
            changed = stopping.changed(), if !asked_to_end => {
                asked_to_end = true;
                if changed.is_ok() {
                    conn.as_mut().graceful_shutdown();
                }
            }
            // Its place was given to a new connection ([`Open::take`]). Idle,
            // it is dropped: hyper's graceful end would wait for a head
            // begun to be sent whole. `idle_since` is set only while `conn`
            // is polled, on this task, so no request starts meanwhile; one
            // that started since its place was given is answered first.
            () = slot.activity.close.notified(), if !asked_to_end => {
                if slot.activity.idle_since.load(Ordering::Relaxed) != 0 {
                    return;
                }
                asked_to_end = true;
                conn.as_mut().graceful_shutdown();
            }
        }
    }
}

/// `router`'s answer to `request`, counted in `posts` while it is being
/// sent if it is a POST's (whose event stream waits up to `hold` for its
/// answer, [`first_write`]), and the connection's `activity` busy until it
/// is; `408 Request Timeout` if the body came too late. The connection
/// turns busy once the request is whole ([`Timed`]) or answered, not at
/// its head: a body being trickled is as idle as a half-sent head, and
/// gives its place as one does.
///
/// A request refused with its body unread (over the limit, or sent to no
/// route) leaves that body in the connection, so hyper closes it. The
/// answer says so: a client that pooled the connection would otherwise send
/// its next request into the close, and lose it.
///
/// All where the connection's requests enter, rather than as axum
/// middleware (`from_fn`), which boxes the router's future and clones its
/// inner service on every request.
fn answer(
    mut router: axum::Router,
    request: http::Request<Body>,
    posts: &Posts,
    hold: Duration,
    activity: Arc<Activity>,
    late: Arc<AtomicBool>,
) -> impl Future<Output = Result<Response, Infallible>> + use<> {
    let sent = (request.method() == http::Method::POST).then(|| Sent::new(posts));
    let carries_body = request
        .headers()
        .get(http::header::CONTENT_LENGTH)
        .is_some_and(|length| length != "0")
        || request.headers().contains_key(http::header::TRANSFER_ENCODING);
    let answered = router.call(request);
    async move {
        let mut response = answered.await?;
        let busy = Busy::new(activity);
        if late.load(Ordering::Relaxed) {
            return Ok(too_late());
        }
        if carries_body && response.status().is_client_error() {
            response
                .headers_mut()
                .insert(http::header::CONNECTION, http::HeaderValue::from_static("close"));
        }
        // An answer in one piece (JSON, a refusal) is whole once returned,
        // and keeps its length; an event stream is being sent until it ends.
        let streams = response
            .headers()
            .get(http::header::CONTENT_TYPE)
            .is_some_and(|t| t.as_bytes().starts_with(b"text/event-stream"));
        let sent = sent.filter(|_| streams);
        let response = match sent {
            Some(_) => first_write::hold_for_answer(response, hold).await,
            None => response,
        };
        Ok(response.map(|body| {
            Body::new(Sending {
                body,
                _sent: sent,
                _busy: busy,
            })
        }))
    }
}

/// The answer to a request whose body did not arrive in time; the
/// connection closes after it, with the rest of that body unread.
fn too_late() -> Response {
    let mut response = Response::new(Body::from(
        "Request Timeout: the request body did not arrive in time\n",
    ));
    *response.status_mut() = http::StatusCode::REQUEST_TIMEOUT;
    response
        .headers_mut()
        .insert(http::header::CONNECTION, http::HeaderValue::from_static("close"));
    response
}

/// A request body that must arrive within `limit` of the first wait for
/// more of it. Almost every body comes with its head, so the timer is armed
/// only on that first wait (as a plugin call's deadline is). Past it, the
/// body ends in [`TooLate`] and `late` is set, for [`answer`]. Once it has
/// come whole, its connection's `activity` is busy.
struct Timed<B> {
    body: B,
    limit: Duration,
    timer: Option<Pin<Box<Sleep>>>,
    late: Arc<AtomicBool>,
    activity: Arc<Activity>,
}

/// A request body not sent in time.
#[derive(Debug, thiserror::Error)]
#[error("the request body did not arrive in time")]
struct TooLate;

impl<B> Timed<B> {
    fn new(body: B, limit: Duration, late: Arc<AtomicBool>, activity: Arc<Activity>) -> Self {
        Self {
            body,
            limit,
            timer: None,
            late,
            activity,
        }
    }
}

impl<B> HttpBody for Timed<B>
where
    B: HttpBody<Data = Bytes> + Unpin,
    B::Error: Into<axum::BoxError>,
{
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = self.get_mut();
        if let Poll::Ready(frame) = Pin::new(&mut this.body).poll_frame(cx) {
            if frame.is_none() || this.body.is_end_stream() {
                this.activity.busy_now();
            }
            return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
        }
        let limit = this.limit;
        let timer = this
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        ready!(timer.as_mut().poll(cx));
        this.late.store(true, Ordering::Relaxed);
        Poll::Ready(Some(Err(TooLate.into())))
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// An answer's body: its connection busy until it is sent whole or dropped,
/// and if it is an event stream answering a POST, that POST counted.
/// Its size is the body's own, so an answer in one piece keeps its length.
struct Sending {
    body: Body,
    _sent: Option<Sent>,
    _busy: Busy,
}

impl HttpBody for Sending {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// An accept that failed: a connection reset before it was taken costs
/// nothing; running out of file descriptors pauses accepting a moment.
async fn pause_after(error: &std::io::Error) {
    use std::io::ErrorKind;
    match error.kind() {
        ErrorKind::ConnectionAborted | ErrorKind::ConnectionReset | ErrorKind::Interrupted => {}
        _ => {
            tracing::warn!("accepting a connection failed: {error}");
            tokio::time::sleep(OUT_OF_FILES_PAUSE).await;
        }
    }
}

/// The connections open, counted in all and by address, each with its
/// [`Activity`].
#[derive(Clone)]
struct Open {
    bounds: Bounds,
    counts: Arc<Mutex<Counts>>,
    /// What [`Activity::idle_since`] counts from.
    epoch: Instant,
}

#[derive(Default)]
struct Counts {
    by_address: HashMap<IpAddr, usize>,
    held: HashMap<u64, Held>,
    next: u64,
    warned: Option<Instant>,
}

/// One open connection, as the accept loop knows it.
struct Held {
    address: IpAddr,
    activity: Arc<Activity>,
}

/// Whether a connection is answering a request, or since when it has been
/// idle (waiting for a request head, or for its first). Set by the
/// connection's requests without the accept loop's lock.
struct Activity {
    /// Milliseconds from [`Open::epoch`] plus one to when the connection
    /// became idle; 0 while it answers.
    idle_since: AtomicU64,
    epoch: Instant,
    /// Notified when the connection's place is given to another.
    close: Notify,
}

impl Activity {
    fn busy_now(&self) {
        self.idle_since.store(0, Ordering::Relaxed);
    }

    fn idle_now(&self) {
        let since = self.epoch.elapsed().as_millis() as u64 + 1;
        self.idle_since.store(since, Ordering::Relaxed);
    }
}

/// One request being answered on a connection; the connection is idle
/// again once it is dropped (with the answer's body, once sent).
struct Busy(Arc<Activity>);

impl Busy {
    fn new(activity: Arc<Activity>) -> Self {
        activity.busy_now();
        Self(activity)
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.idle_now();
    }
}

impl Counts {
    /// Forget connection `id`: its place is free.
    fn release(&mut self, id: u64) -> Option<Held> {
        let held = self.held.remove(&id)?;
        if let Some(n) = self.by_address.get_mut(&held.address) {
            *n -= 1;
            if *n == 0 {
                self.by_address.remove(&held.address);
            }
        }
        Some(held)
    }

    /// Close the connection idle the longest, and free its place; none if
    /// every connection is answering.
    fn close_longest_idle(&mut self) -> Option<IpAddr> {
        let (&id, _) = self
            .held
            .iter()
            .map(|(id, held)| (id, held.activity.idle_since.load(Ordering::Relaxed)))
            .filter(|&(_, since)| since != 0)
            // Of those idle since the same millisecond, the one taken first.
            .min_by_key(|&(id, since)| (since, *id))?;
        let held = self.release(id)?;
        held.activity.close.notify_one();
        Some(held.address)
    }

    /// Log `what` happened, at most once per [`WARN_EVERY`].
    fn warn(&mut self, what: impl FnOnce() -> String) {
        let now = Instant::now();
        if self.warned.is_none_or(|at| now.duration_since(at) >= WARN_EVERY) {
            self.warned = Some(now);
            tracing::warn!("{} (further ones unlogged for a while)", what());
        }
    }
}

impl Open {
    fn new(bounds: Bounds) -> Self {
        Self {
            bounds,
            counts: Arc::default(),
            epoch: Instant::now(),
        }
    }

    /// A place for a connection from `address`, or none (and the refusal
    /// logged) if the address holds its most. When all places are taken,
    /// the connection idle the longest is closed for it: idle connections
    /// (a stranger's half-sent heads among them) never lock a new client
    /// out; only connections answering requests can fill the server.
    fn take(&self, address: IpAddr) -> Option<Slot> {
        let address = holder(address);
        let mut counts = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        let from_address = counts.by_address.get(&address).copied().unwrap_or(0);
        if from_address >= self.bounds.per_address {
            counts.warn(|| {
                format!(
                    "refused a connection from {address}: {from_address} connections are open \
                     from that address, the most one address may hold"
                )
            });
            return None;
        }
        if counts.held.len() >= self.bounds.total {
            let total = counts.held.len();
            let Some(closed) = counts.close_longest_idle() else {
                counts.warn(|| {
                    format!(
                        "refused a connection from {address}: {total} connections are open and \
                         answering, the most the server keeps"
                    )
                });
                return None;
            };
            counts.warn(|| {
                format!(
                    "closed the connection from {closed} idle the longest, for one from {address}: \
                     {total} connections are open, the most the server keeps"
                )
            });
        }
        let activity = Arc::new(Activity {
            idle_since: AtomicU64::new(0),
            epoch: self.epoch,
            close: Notify::new(),
        });
        activity.idle_now();
        let id = counts.next;
        counts.next += 1;
        counts.held.insert(
            id,
            Held {
                address,
                activity: activity.clone(),
            },
        );
        *counts.by_address.entry(address).or_default() += 1;
        Some(Slot {
            counts: self.counts.clone(),
            id,
            activity,
        })
    }
}

/// Who holds a connection from `address`, for the per-address bound: an
/// IPv4 address (mapped into IPv6 or not), or an IPv6 address's /64, which
/// one host is given whole and picks from at will.
fn holder(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V4(_) => address,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6((u128::from(v6) & !u128::from(u64::MAX)).into()),
        },
    }
}

/// One connection's place among those open; given back when dropped,
/// unless it was given to another connection first.
struct Slot {
    counts: Arc<Mutex<Counts>>,
    id: u64,
    activity: Arc<Activity>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut counts = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        counts.release(self.id);
    }
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;

    use serde_json::json;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpSocket;

    use super::*;
    use crate::mcp::loopback::{ANSWER, Front};

    fn closes(response: &reqwest::Response) -> bool {
        response.headers().get(http::header::CONNECTION) == Some(&http::HeaderValue::from_static("close"))
    }

    /// A body refused unread closes its connection and says so; answers
    /// that read theirs keep the connection for the next request.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_request_refused_with_its_body_unread_closes_its_connection() {
        let front = Front::start().await;
        let refused = front
            .request(http::Method::POST, "/nowhere")
            .body("{}")
            .send()
            .await
            .unwrap();
        assert_eq!(refused.status().as_u16(), 404);
        assert!(closes(&refused), "{:?}", refused.headers());
        let bodiless = front.request(http::Method::GET, "/nowhere").send().await.unwrap();
        assert_eq!(bodiless.status().as_u16(), 404);
        assert!(!closes(&bodiless), "{:?}", bodiless.headers());
        let id = front.open().await;
        let ping = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
        let answered = front.post(Some(&id), &ping).await;
        assert_eq!(answered.status().as_u16(), 200);
        assert!(!closes(&answered), "{:?}", answered.headers());
    }

    #[test]
    fn an_ipv6_host_is_held_to_its_64_and_a_mapped_ipv4_address_is_itself() {
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:ffff::9".parse().unwrap();
        let other: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(holder(a), holder(b));
        assert_ne!(holder(a), holder(other));
        let mapped: IpAddr = "::ffff:192.0.2.7".parse().unwrap();
        assert_eq!(holder(mapped), "192.0.2.7".parse::<IpAddr>().unwrap());
    }

    /// A connection to `server` from `source` (another loopback address).
    async fn connect_from(source: &str, server: SocketAddr) -> TcpStream {
        let socket = TcpSocket::new_v4().unwrap();
        socket.bind(format!("{source}:0").parse().unwrap()).unwrap();
        socket.connect(server).await.unwrap()
    }

    /// The head of an MCP POST whose body is `length` bytes.
    fn post_head(length: usize) -> String {
        format!(
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {length}\r\n\r\n"
        )
    }

    /// A stranger's connection from `source` that sends half a request
    /// head and nothing more.
    async fn half_a_head(source: &str, server: SocketAddr) -> TcpStream {
        let mut tcp = connect_from(source, server).await;
        tcp.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            .await
            .unwrap();
        tcp
    }

    /// A stranger's connection from `source` that sends a whole request
    /// head and the first bytes of its body, and nothing more.
    async fn half_a_body(source: &str, server: SocketAddr) -> TcpStream {
        let mut tcp = connect_from(source, server).await;
        tcp.write_all(format!("{}{{\"jsonrpc\"", post_head(100)).as_bytes())
            .await
            .unwrap();
        tcp
    }

    /// `n` such connections from `source`.
    async fn holding(front: &Front, source: &str, n: usize) -> Vec<TcpStream> {
        let mut held = Vec::with_capacity(n);
        for _ in 0..n {
            held.push(half_a_head(source, front.addr).await);
        }
        held
    }

    /// Session `id`'s standalone event stream, open.
    async fn event_stream(front: &Front, id: &str) -> reqwest::Response {
        let stream = front
            .request(http::Method::GET, "/mcp")
            .header("accept", "text/event-stream")
            .header("mcp-session-id", id)
            .header("mcp-protocol-version", "2025-06-18")
            .send()
            .await
            .unwrap();
        assert_eq!(stream.status(), http::StatusCode::OK);
        stream
    }

    /// Read `stream` to its end: how it ended.
    async fn to_the_end(stream: &mut reqwest::Response) -> reqwest::Result<()> {
        while stream.chunk().await?.is_some() {}
        Ok(())
    }

    /// Whether the server closes `tcp` (within the tests' answer time),
    /// having sent nothing or an error status.
    async fn closed(tcp: &mut TcpStream) -> bool {
        let mut buf = Vec::new();
        match tokio::time::timeout(ANSWER, tcp.read_to_end(&mut buf)).await {
            Ok(Ok(_)) => buf.is_empty() || !buf.starts_with(b"HTTP/1.1 2"),
            Ok(Err(_)) => true,
            Err(_) => false,
        }
    }

    #[tokio::test]
    async fn one_address_holding_connections_locks_no_other_address_out() {
        let front = Front::bounded(Bounds {
            total: 64,
            per_address: 4,
            request_timeout: ANSWER * 10,
            answer_hold: first_write::HOLD,
        })
        .await;
        let held = holding(&front, "127.0.0.2", 4).await;
        let mut over = half_a_head("127.0.0.2", front.addr).await;
        assert!(
            closed(&mut over).await,
            "a fifth connection from one address was kept"
        );
        let id = front.open().await;
        assert!(!id.is_empty(), "another address was not served");
        drop(held);
    }

    #[tokio::test]
    async fn idle_connections_over_the_total_give_their_place_to_a_new_one() {
        let front = Front::bounded(Bounds {
            total: 3,
            per_address: 64,
            request_timeout: ANSWER * 10,
            answer_hold: first_write::HOLD,
        })
        .await;
        // Three strangers from addresses of their own: a whole head and a
        // body being trickled (the oldest), then two half-sent heads.
        let mut held = vec![half_a_body("127.0.0.2", front.addr).await];
        for source in ["127.0.0.3", "127.0.0.4"] {
            held.push(half_a_head(source, front.addr).await);
        }
        let response = front.request(http::Method::GET, "/healthz").send().await.unwrap();
        assert_eq!(response.status(), http::StatusCode::OK);
        assert!(
            closed(&mut held[0]).await,
            "the connection idle the longest was kept"
        );
    }

    #[tokio::test]
    async fn connections_answering_keep_their_place_and_one_more_is_refused() {
        let front = Front::bounded(Bounds {
            total: 2,
            per_address: 64,
            request_timeout: ANSWER * 10,
            answer_hold: first_write::HOLD,
        })
        .await;
        // Two sessions' event streams: two connections, both answering.
        let first = front.open().await;
        let _first = event_stream(&front, &first).await;
        let second = front.open().await;
        let second = event_stream(&front, &second).await;
        let mut over = half_a_head("127.0.0.2", front.addr).await;
        assert!(
            closed(&mut over).await,
            "a connection over the total was kept while all answered"
        );
        // An ended stream frees its connection's place.
        drop(second);
        let served = tokio::time::timeout(ANSWER, async {
            loop {
                if let Ok(response) = front.request(http::Method::GET, "/healthz").send().await {
                    return response.status();
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .expect("no place was given back");
        assert_eq!(served, http::StatusCode::OK);
    }

    #[tokio::test]
    async fn a_head_not_sent_in_time_closes_its_connection() {
        let front = Front::bounded(Bounds {
            total: 64,
            per_address: 64,
            request_timeout: Duration::from_millis(100),
            answer_hold: first_write::HOLD,
        })
        .await;
        let mut stalled = half_a_head("127.0.0.2", front.addr).await;
        assert!(closed(&mut stalled).await, "a stalled head kept its connection");
        // A connection that sent its request whole is answered as ever.
        let response = front.request(http::Method::GET, "/healthz").send().await.unwrap();
        assert_eq!(response.status(), http::StatusCode::OK);
    }

    #[tokio::test]
    async fn a_body_not_sent_in_time_is_answered_408_and_its_connection_closed() {
        let front = Front::bounded(Bounds {
            total: 64,
            per_address: 64,
            request_timeout: Duration::from_millis(300),
            answer_hold: first_write::HOLD,
        })
        .await;
        let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "trickle", "version": "1"}}})
        .to_string();
        let mut stalled = half_a_body("127.0.0.2", front.addr).await;
        let mut answer = Vec::new();
        tokio::time::timeout(ANSWER, stalled.read_to_end(&mut answer))
            .await
            .expect("a stalled body kept its connection open")
            .unwrap();
        let answer = String::from_utf8_lossy(&answer);
        assert!(answer.starts_with("HTTP/1.1 408 "), "{answer}");
        assert!(
            answer.to_ascii_lowercase().contains("connection: close"),
            "{answer}"
        );
        // A body sent in two parts, the second well within the time, is
        // answered as ever.
        let mut slow = connect_from("127.0.0.2", front.addr).await;
        slow.write_all(post_head(initialize.len()).as_bytes())
            .await
            .unwrap();
        slow.write_all(&initialize.as_bytes()[..10]).await.unwrap();
        tokio::time::sleep(Duration::from_millis(30)).await;
        slow.write_all(&initialize.as_bytes()[10..]).await.unwrap();
        let mut status = [0; 12];
        tokio::time::timeout(ANSWER, slow.read_exact(&mut status))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(&status, b"HTTP/1.1 200");
    }

    /// A session's standalone event stream sends no head while it is open:
    /// the request timeout does not end it.
    #[tokio::test]
    async fn an_open_event_stream_outlives_the_request_timeout() {
        let request_timeout = Duration::from_millis(50);
        let front = Front::bounded(Bounds {
            total: 64,
            per_address: 64,
            request_timeout,
            answer_hold: first_write::HOLD,
        })
        .await;
        let id = front.open().await;
        let mut stream = event_stream(&front, &id).await;
        // Read what comes for ten head timeouts: the stream must not end.
        let watched = tokio::time::timeout(request_timeout * 10, to_the_end(&mut stream)).await;
        assert!(watched.is_err(), "the event stream ended: {watched:?}");
    }

    /// Every capable client holds a session's event stream open: shutdown
    /// ends it, after the answers being sent, and returns.
    #[tokio::test]
    async fn shutdown_ends_an_open_event_stream_and_returns() {
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let (front, served) = Front::serving(Bounds::for_this_process(), async {
            let _ = stopped.await;
        })
        .await;
        let id = front.open().await;
        let mut stream = event_stream(&front, &id).await;
        let call = serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "read", "arguments": {"path": "a.txt"}}});
        let answer = front.post(Some(&id), &call).await.text().await.unwrap();
        assert!(answer.contains("one"), "{answer}");
        stop.send(()).unwrap();
        tokio::time::timeout(ANSWER, served)
            .await
            .expect("shutdown waited on the open event stream")
            .unwrap();
        // Within half the client's own timeout, which would end it too.
        let ended = tokio::time::timeout(ANSWER / 2, to_the_end(&mut stream)).await;
        assert!(
            matches!(&ended, Ok(Ok(())) | Ok(Err(_))),
            "the event stream outlived the server: {ended:?}"
        );
    }
}
