//! An upstream server acting as each caller (`credential = "exchange"`):
//! one MCP session per caller's exchanged token, so the server sees each
//! caller as themself and no session carries two callers' calls.
//!
//! Bounded: at most [`MAX_SESSIONS`] are open; one idle for [`IDLE`] is
//! closed at the next call, one that ended is replaced by the next, and
//! when all are taken the least recently used goes. Sessions are keyed by
//! a SHA-256 of the token, never the token, which is leased to the set of
//! secrets kept out of the log for as long as its session lives; a caller
//! whose token is refreshed gets a new session, and the old one idles out. The server's lists (tools, prompts, resources) are read over
//! the host's own session, not these: only calls go over a caller's.
//! Owns the pool; not the exchange (`credentials`), nor the session's
//! set-up (`upstream`, which connects one for a token).

use std::sync::Arc;
use std::time::{Duration, Instant};

use rmcp::Peer;
use rmcp::service::{RoleClient, RunningService};
use sha2::{Digest, Sha256};

use super::Listener;
use super::relay::Relay;

/// A caller's session, and the relay of the server's requests during its
/// calls (its own: request ids are per session).
pub(super) type Opened = (RunningService<RoleClient, Listener>, Arc<Relay>);

/// The most callers' sessions open to one server.
pub(super) const MAX_SESSIONS: usize = 64;
/// A caller's session unused this long is closed.
pub(super) const IDLE: Duration = Duration::from_secs(300);

struct Session {
    key: [u8; 32],
    client: RunningService<RoleClient, Listener>,
    relay: Arc<Relay>,
    used: Instant,
    /// The token kept out of the log while its session lives: the server
    /// may quote it refusing a later request, after the exchange's cache
    /// has let it go.
    _held: Option<crate::secrets::held::Lease>,
}

/// The callers' sessions to one server.
#[derive(Default)]
pub(super) struct Callers {
    sessions: tokio::sync::Mutex<Vec<Session>>,
}

impl Callers {
    /// The session of `token`'s holder: the one open, else one `connect`
    /// opens now.
    pub(super) async fn peer(
        &self,
        token: &str,
        connect: impl AsyncFnOnce() -> Result<Opened, String>,
    ) -> Result<(Peer<RoleClient>, Arc<Relay>), String> {
        let key: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        let mut sessions = self.sessions.lock().await;
        let now = Instant::now();
        // Dropping a session closes it. One that ended (the server gave
        // it up) would fail every call of its caller until it idled out.
        sessions.retain(|s| now.duration_since(s.used) < IDLE && !super::session::ended(&s.client));
        if let Some(session) = sessions.iter_mut().find(|s| s.key == key) {
            session.used = now;
            return Ok((session.client.peer().clone(), session.relay.clone()));
        }
        if sessions.len() >= MAX_SESSIONS
            && let Some(oldest) = (0..sessions.len()).min_by_key(|&i| sessions[i].used)
        {
            sessions.swap_remove(oldest);
        }
        let held = crate::secrets::held::lease("authorization", token);
        // Boxed: opening a session is rare and its future is several KB,
        // which inline would size every call's future that asks for a peer.
        let (client, relay) = Box::pin(connect()).await?;
        let peer = client.peer().clone();
        sessions.push(Session {
            key,
            client,
            relay: relay.clone(),
            used: Instant::now(),
            _held: held,
        });
        Ok((peer, relay))
    }

    /// End every caller's session with the server, as the host shuts down
    /// (`session::close_within`).
    pub(super) async fn close(&self) {
        let sessions = std::mem::take(&mut *self.sessions.lock().await);
        futures::future::join_all(
            sessions
                .into_iter()
                .map(|s| super::session::close_within(s.client, super::session::CLOSE_WAIT)),
        )
        .await;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use rmcp::{ServerHandler, ServiceExt};

    use super::*;
    use crate::upstream::UpstreamConfig;

    #[derive(Clone)]
    struct Quiet;
    impl ServerHandler for Quiet {}

    /// A caller's session whose server ended it is replaced by the caller's
    /// next call, not kept (failing each call) until it idles out; one that
    /// lives is kept.
    #[tokio::test]
    async fn a_callers_session_that_ended_is_opened_again() {
        let config: UpstreamConfig =
            serde_json::from_value(serde_json::json!({"name": "up", "url": "http://127.0.0.1:9/mcp"}))
                .unwrap();
        let listener = Listener::new(&config, crate::plugin::tracing_sink());
        let callers = Callers::default();
        let opened = AtomicUsize::new(0);
        let servers = std::sync::Mutex::new(Vec::new());
        let connect = async || -> Result<Opened, String> {
            opened.fetch_add(1, Ordering::SeqCst);
            let (ours, theirs) = tokio::io::duplex(64 * 1024);
            servers.lock().unwrap().push(tokio::spawn(async move {
                Quiet.serve(theirs).await.unwrap().waiting().await
            }));
            let client = listener.clone().serve(ours).await.map_err(|e| e.to_string())?;
            Ok((client, Arc::new(Relay::new("up", IDLE, 1024))))
        };
        let (peer, _) = callers.peer("token", connect).await.unwrap();
        callers.peer("token", connect).await.unwrap();
        assert_eq!(opened.load(Ordering::SeqCst), 1, "a live session is kept");

        let server = servers.lock().unwrap().pop().unwrap();
        server.abort();
        let _ = server.await;
        // Bounded, so a session that never sees its end fails the test.
        let closing = async {
            while !peer.is_transport_closed() {
                tokio::task::yield_now().await;
            }
        };
        tokio::time::timeout(std::time::Duration::from_secs(30), closing)
            .await
            .expect("the session saw its server go");
        let (peer, _) = callers.peer("token", connect).await.unwrap();
        assert_eq!(opened.load(Ordering::SeqCst), 2, "an ended session is replaced");
        assert!(!peer.is_transport_closed());
    }
}
