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
//! cannot say to what it sends (`wire`). Owns the count; not the sessions'
//! contents.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use futures::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::ServerSseMessage;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::{SessionId, SessionManager};

use super::wire::{Executions, Wire};
use crate::bounds::MAX_HTTP_SESSIONS;

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

/// The sessions open, and the places taken by sessions being made.
#[derive(Default)]
struct Open {
    ids: HashSet<SessionId>,
    reserved: usize,
}

impl Open {
    fn count(&self) -> usize {
        self.ids.len() + self.reserved
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
    type Transport = Wire<<LocalSessionManager as SessionManager>::Transport>;

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
        let (id, transport) = created?;
        open.ids.insert(id.clone());
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
        Ok(self.local.create_stream(id, message).await?)
    }

    async fn accept_message(&self, id: &SessionId, message: ClientJsonRpcMessage) -> Result<(), Self::Error> {
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
    use super::super::loopback::Front;
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
}
