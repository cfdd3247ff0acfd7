//! The MCP sessions of the HTTP front, bounded in count: rmcp's
//! [`LocalSessionManager`] behind a cap of [`MAX_HTTP_SESSIONS`] open at
//! once, so that clients that open sessions and never close them cannot
//! grow the host without bound.
//!
//! A session ends on `DELETE`, when it has been idle for
//! [`HTTP_SESSION_IDLE`], or when its service stops; rmcp then closes it
//! here, which frees its place. What the front keeps per session
//! (`McpServer`'s session map, its resource subscriptions) is freed when
//! that session's server is dropped, as its service stops. An `initialize`
//! while the cap is reached is refused: rmcp answers `500` with the reason
//! ([`SessionsError::Full`]). Each session's transport adds what rmcp
//! cannot say to what it sends (`wire`).
//!
//! A request under the id of one the session has not been answered yet is
//! refused (`Invalid Request`, naming the id), as over stdio (`lines`).
//! rmcp routes an answer to its POST by the id alone, and keeps one
//! cancellation token per id: a second request under a busy id took the
//! first one's route, one of the two answers was dropped, and its POST
//! stayed open, its connection held, until the session expired. An id is
//! busy from its POST until its answer is handed to the session's stream,
//! or the client cancels it (rmcp answers a cancelled request with
//! nothing). Owns the count and the ids in use; not the sessions' contents.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use futures::Stream;
use futures::future::Either;
use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage, RequestId, ServerJsonRpcMessage};
use rmcp::service::{RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::streamable_http_server::session::ServerSseMessage;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::{SessionId, SessionManager};

use super::wire::{Executions, Wire};
use crate::bounds::MAX_HTTP_SESSIONS;
use crate::lines::{Side, id_in_use};

/// How long a session may go without a request before it is closed.
pub(super) const HTTP_SESSION_IDLE: Duration = Duration::from_secs(300);

#[derive(Debug, thiserror::Error)]
pub(super) enum SessionsError {
    #[error(
        "toolhost holds {MAX_HTTP_SESSIONS} open MCP sessions, the most it keeps: close one \
         (HTTP DELETE with its Mcp-Session-Id) or try again once an idle one has expired"
    )]
    Full,
    #[error(transparent)]
    Local(#[from] LocalSessionManagerError),
}

/// rmcp's session manager, with the open sessions counted and capped.
pub(super) struct CappedSessions {
    local: LocalSessionManager,
    open: Mutex<Open>,
    executions: Executions,
}

/// The sessions open (each with the ids of its requests not yet
/// answered), and the places taken by sessions being made.
#[derive(Default)]
struct Open {
    ids: HashMap<SessionId, Answering>,
    reserved: usize,
}

impl Open {
    fn count(&self) -> usize {
        self.ids.len() + self.reserved
    }
}

/// The ids of one session's requests not yet answered.
#[derive(Clone, Default)]
struct Answering(Arc<Mutex<HashSet<RequestId>>>);

impl Answering {
    fn ids(&self) -> MutexGuard<'_, HashSet<RequestId>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Take `id` for a request, unless one not yet answered has it.
    fn take(&self, id: &RequestId) -> bool {
        self.ids().insert(id.clone())
    }

    fn free(&self, id: &RequestId) {
        self.ids().remove(id);
    }
}

/// A session's transport that frees each request's id as its answer is
/// handed on.
pub(super) struct Answered<T> {
    inner: T,
    answering: Answering,
}

impl<T: Transport<RoleServer>> Transport<RoleServer> for Answered<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let answered = match &item {
            JsonRpcMessage::Response(r) => Some(r.id.clone()),
            JsonRpcMessage::Error(e) => e.id.clone(),
            _ => None,
        };
        let sent = self.inner.send(item);
        let answering = self.answering.clone();
        // Freed once handed on, not before: rmcp's session takes the answer
        // and a later request under its id in turn, so the answer cannot
        // take the later request's route.
        async move {
            let sent = sent.await;
            if let Some(id) = answered {
                answering.free(&id);
            }
            sent
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<RxJsonRpcMessage<RoleServer>>> + Send {
        self.inner.receive()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}

impl CappedSessions {
    /// Sessions whose tool lists carry `executions` (`wire`).
    pub(super) fn new(executions: Executions) -> Arc<Self> {
        let mut local = LocalSessionManager::default();
        local.session_config.keep_alive = Some(HTTP_SESSION_IDLE);
        Arc::new(Self {
            local,
            open: Mutex::default(),
            executions,
        })
    }

    fn open(&self) -> MutexGuard<'_, Open> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How many sessions are open (or being made).
    #[cfg(test)]
    pub(super) fn count(&self) -> usize {
        self.open().count()
    }
}

impl SessionManager for CappedSessions {
    type Error = SessionsError;
    type Transport = Wire<Answered<<LocalSessionManager as SessionManager>::Transport>>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        // The place is taken before the session exists, so that requests
        // racing for the last one cannot both have it.
        {
            let mut open = self.open();
            if open.count() >= MAX_HTTP_SESSIONS {
                return Err(SessionsError::Full);
            }
            open.reserved += 1;
        }
        let created = self.local.create_session().await;
        let mut open = self.open();
        open.reserved -= 1;
        let (id, inner) = created?;
        let answering = Answering::default();
        open.ids.insert(id.clone(), answering.clone());
        let transport = Answered { inner, answering };
        Ok((id, Wire::new(transport, self.executions.clone())))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        Ok(self.local.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.local.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        let closed = self.local.close_session(id).await;
        self.open().ids.remove(id);
        Ok(closed?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let taken = match (&message, self.open().ids.get(id)) {
            (JsonRpcMessage::Request(request), Some(answering)) => {
                if !answering.take(&request.id) {
                    let refused =
                        ServerJsonRpcMessage::error(id_in_use(&request.id), Some(request.id.clone()));
                    let answer = ServerSseMessage::from_message(refused);
                    return Ok(Either::Left(futures::stream::iter([answer])));
                }
                Some((answering.clone(), request.id.clone()))
            }
            _ => None,
        };
        match self.local.create_stream(id, message).await {
            Ok(stream) => Ok(Either::Right(stream)),
            Err(e) => {
                if let Some((answering, request)) = taken {
                    answering.free(&request);
                }
                Err(e.into())
            }
        }
    }

    async fn accept_message(&self, id: &SessionId, message: ClientJsonRpcMessage) -> Result<(), Self::Error> {
        if let JsonRpcMessage::Notification(n) = &message
            && let Some(cancelled) = RoleServer::cancelled(&n.notification)
            && let Some(answering) = self.open().ids.get(id)
        {
            answering.free(cancelled);
        }
        Ok(self.local.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.local.create_standalone_stream(id).await?)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.local.resume(id, last_event_id).await?)
    }
}

#[cfg(test)]
mod tests {
    use super::super::loopback::{Front, answer_of};
    use super::*;

    /// Sessions closed with `DELETE` leave nothing behind: neither rmcp's
    /// session nor the server's record of it (which holds the client's
    /// `initialize` parameters).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_closed_session_keeps_nothing() {
        let front = Front::start().await;
        let mut ids = Vec::new();
        for _ in 0..40 {
            ids.push(front.open().await);
        }
        assert!(
            front.until(|f| f.initialized_count() == 40).await,
            "{} sessions initialized",
            front.initialized_count()
        );
        assert_eq!(front.sessions.count(), 40);
        for id in &ids {
            assert_eq!(front.close(id).await, 204, "DELETE {id}");
        }
        let freed = front
            .until(|f| f.initialized_count() == 0 && f.sessions.count() == 0)
            .await;
        assert!(
            freed,
            "after 40 sessions closed, the server still keeps {} (rmcp: {})",
            front.initialized_count(),
            front.sessions.count()
        );
        // A closed session is gone, not half there.
        let ping = serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "ping"});
        assert_eq!(front.post(Some(&ids[0]), &ping).await.status().as_u16(), 404);
    }

    /// At most [`MAX_HTTP_SESSIONS`] are open at once: one more is refused
    /// with the reason, and a closed one frees its place.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sessions_are_capped_and_a_closed_one_frees_its_place() {
        let front = Front::start().await;
        let mut ids = Vec::new();
        for _ in 0..MAX_HTTP_SESSIONS {
            ids.push(front.initialize().await.unwrap());
        }
        let (status, text) = front.initialize().await.unwrap_err();
        assert!(status >= 500, "{status}: {text}");
        assert!(
            text.contains(&format!("toolhost holds {MAX_HTTP_SESSIONS} open MCP sessions")),
            "{text}"
        );
        assert_eq!(front.sessions.count(), MAX_HTTP_SESSIONS);
        assert_eq!(front.close(&ids[0]).await, 204);
        assert!(front.until(|f| f.sessions.count() < MAX_HTTP_SESSIONS).await);
        front.initialize().await.unwrap();
    }

    fn call(id: i64) -> ClientJsonRpcMessage {
        serde_json::from_value(
            serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "read", "arguments": {"path": "a.txt"}}}),
        )
        .unwrap()
    }

    /// The first message `stream` holds now (past rmcp's priming event),
    /// or none if it holds none yet.
    fn ready(
        stream: &mut (impl Stream<Item = ServerSseMessage> + Unpin),
    ) -> Option<Arc<ServerJsonRpcMessage>> {
        use futures::{FutureExt, StreamExt};
        loop {
            match stream.next().now_or_never() {
                Some(Some(ServerSseMessage { message: Some(m), .. })) => return Some(m),
                Some(Some(_)) => continue,
                _ => return None,
            }
        }
    }

    /// The next message `stream` sends, past rmcp's priming event.
    async fn next_message(
        stream: &mut (impl Stream<Item = ServerSseMessage> + Unpin),
    ) -> Arc<ServerJsonRpcMessage> {
        use futures::StreamExt;
        while let Some(event) = stream.next().await {
            if let Some(m) = event.message {
                return m;
            }
        }
        panic!("the stream ended without a message")
    }

    fn refused_as_in_use(answer: Option<Arc<ServerJsonRpcMessage>>, id: i64) {
        let answer = serde_json::to_value(answer.expect("an answer at once")).unwrap();
        assert_eq!(answer["id"], id, "{answer}");
        assert_eq!(answer["error"]["code"], -32600, "{answer}");
        let text = answer["error"]["message"].as_str().unwrap();
        assert!(text.contains(&format!("the id {id} is already used")), "{text}");
    }

    /// A session's id is busy from its request until its answer is handed
    /// to the session or the client cancels it; meanwhile a request under it
    /// is refused at once, naming it, and never reaches rmcp. Nothing
    /// serves this session, so only the test answers.
    #[tokio::test]
    async fn a_request_under_a_busy_id_is_refused_until_it_is_answered_or_cancelled() {
        let sessions = CappedSessions::new(Arc::new(HashMap::new));
        let (session, mut transport) = sessions.create_session().await.unwrap();
        // rmcp's session takes requests once initialized: the test answers
        // its `initialize` as a server would.
        let initialize = serde_json::from_value(serde_json::json!({"jsonrpc": "2.0", "id": 1,
            "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}}))
        .unwrap();
        let initializing = tokio::spawn({
            let (sessions, session) = (sessions.clone(), session.clone());
            async move { sessions.initialize_session(&session, initialize).await }
        });
        assert!(matches!(
            transport.receive().await,
            Some(JsonRpcMessage::Request(_))
        ));
        let initialized = rmcp::model::ServerResult::InitializeResult(Default::default());
        transport
            .send(ServerJsonRpcMessage::response(initialized, RequestId::Number(1)))
            .await
            .unwrap();
        initializing.await.unwrap().unwrap();
        let mut first = Box::pin(sessions.create_stream(&session, call(5)).await.unwrap());
        assert!(ready(&mut first).is_none(), "the first call is left to rmcp");
        let mut again = Box::pin(sessions.create_stream(&session, call(5)).await.unwrap());
        refused_as_in_use(ready(&mut again), 5);
        let mut other = Box::pin(sessions.create_stream(&session, call(6)).await.unwrap());
        assert!(ready(&mut other).is_none(), "another id is taken");

        let answer =
            ServerJsonRpcMessage::response(rmcp::model::ServerResult::empty(()), RequestId::Number(5));
        transport.send(answer).await.unwrap();
        let answered = serde_json::to_value(next_message(&mut first).await).unwrap();
        assert_eq!(
            answered["id"], 5,
            "the first call's answer is its own: {answered}"
        );
        let mut reused = Box::pin(sessions.create_stream(&session, call(5)).await.unwrap());
        assert!(ready(&mut reused).is_none(), "an answered id is free again");

        refused_as_in_use(
            ready(&mut Box::pin(
                sessions.create_stream(&session, call(6)).await.unwrap(),
            )),
            6,
        );
        let cancel = serde_json::from_value(serde_json::json!({"jsonrpc": "2.0",
            "method": "notifications/cancelled", "params": {"requestId": 6}}))
        .unwrap();
        sessions.accept_message(&session, cancel).await.unwrap();
        let mut after_cancel = Box::pin(sessions.create_stream(&session, call(6)).await.unwrap());
        assert!(ready(&mut after_cancel).is_none(), "a cancelled id is free again");
    }

    /// The attack as a stranger makes it: twenty calls posted at once in
    /// one session, all under one id. Each POST is answered, with its
    /// call's result or the refusal naming the id; before, rmcp dropped
    /// some of the answers and those POSTs stayed open until the session
    /// expired.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn calls_posted_at_once_under_one_id_are_each_answered_or_refused() {
        let front = Front::start().await;
        let session = front.open().await;
        let call = serde_json::json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "read", "arguments": {"path": "a.txt"}}});
        let posts = (0..20).map(|_| async {
            // Within `ANSWER` (the client's timeout), or the POST fails.
            let body = front.post(Some(&session), &call).await.text().await;
            let body = body.expect("every POST answered");
            answer_of(&body).unwrap_or_else(|| panic!("no message in {body:?}"))
        });
        let answers = futures::future::join_all(posts).await;
        let mut results = 0;
        for answer in &answers {
            assert_eq!(answer["id"], 7, "{answer}");
            if answer.get("result").is_some() {
                results += 1;
            } else {
                let text = answer["error"]["message"].as_str().unwrap_or_default();
                assert!(text.contains("the id 7 is already used"), "{answer}");
            }
        }
        assert!(results >= 1, "no call was served: {answers:?}");
    }
}
