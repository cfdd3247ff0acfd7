//! The session with an upstream server (rmcp's client and, for a stdio
//! server, its process), and its replacement once it has ended: a stdio
//! server that exited (crashed, was killed, ran out of memory) is started
//! again, and a session rmcp gave up on is opened again, by the next
//! request that needs it. Without this every later call of the server's
//! tools failed with `Transport closed` until toolhost was restarted. A
//! server not reached at start (a gateway started before its servers) has
//! no session until one opens.
//!
//! The request in flight when the session ended fails, naming how it ended
//! (the process's exit status): a call is not safe to send twice. A server
//! that keeps dying is started again at most once every
//! [`RESTART_INTERVAL`]; the requests between are refused saying so. Not
//! here: what is sent over the session, nor how one is opened, nor when an
//! unreached server is tried (`upstream`).

use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use rmcp::service::{Peer, RoleClient, RunningService};

use super::Listener;

/// The least time between two starts of one server's session.
pub const RESTART_INTERVAL: Duration = Duration::from_secs(2);

/// How long a closed stdio session waits for its process's exit status.
const EXIT_WAIT: Duration = Duration::from_millis(200);

/// How long a stdio server has to exit once its input is closed, then
/// once it is sent `SIGTERM`, and its stderr to be copied to its end, as
/// the host shuts down; and how long a URL server's session has to end.
pub(super) const CLOSE_WAIT: Duration = Duration::from_secs(2);

/// Whether `client`'s session has ended: its transport closed (a stdio
/// server's output ended, an HTTP session given up) or rmcp's service
/// loop stopped.
pub(super) fn ended(client: &RunningService<RoleClient, Listener>) -> bool {
    client.peer().is_transport_closed() || client.is_closed()
}

/// End `client`'s session, waiting up to `limit` for rmcp to end it with
/// the server: over HTTP its `DELETE`, so the server does not hold the
/// session (and, for a server acting as each caller, one a caller) until
/// it gives it up. A dropped session is only cancelled, and a process
/// that exits meanwhile never sends it.
pub(super) async fn close_within(mut client: RunningService<RoleClient, Listener>, limit: Duration) {
    if let Ok(None) = client.close_with_timeout(limit).await {
        tracing::debug!("an upstream session did not end within {} s", limit.as_secs());
    }
}

/// One session with the server.
pub(super) struct Session {
    peer: Peer<RoleClient>,
    /// Taken out to be closed ([`Self::close`]).
    client: Mutex<Option<RunningService<RoleClient, Listener>>>,
    /// A stdio server's process.
    process: Option<tokio::sync::Mutex<Process>>,
}

/// A stdio server's process, killed when the session is dropped, and the
/// task copying its stderr to the host's.
pub(super) struct Process {
    pub child: tokio::process::Child,
    pub stderr: Option<tokio::task::JoinHandle<()>>,
}

impl Session {
    pub fn new(client: RunningService<RoleClient, Listener>, process: Option<Process>) -> Self {
        Self {
            peer: client.peer().clone(),
            client: Mutex::new(Some(client)),
            process: process.map(tokio::sync::Mutex::new),
        }
    }

    /// End the session as the MCP spec asks a stdio client to: the
    /// server's input closed and its exit waited for, then `SIGTERM` and a
    /// wait, then `SIGKILL`, each wait [`CLOSE_WAIT`]; what it wrote on its
    /// stderr meanwhile is copied out to the end, so a server's last words
    /// reach the log. A URL server's session is ended with `DELETE`, waited
    /// for up to [`CLOSE_WAIT`] ([`close_within`]).
    pub async fn close(&self) {
        let client = self.client.lock().unwrap_or_else(PoisonError::into_inner).take();
        let Some(process) = &self.process else {
            if let Some(client) = client {
                close_within(client, CLOSE_WAIT).await;
            }
            return;
        };
        if let Some(client) = client {
            client.cancellation_token().cancel();
        }
        let Process { child, stderr } = &mut *process.lock().await;
        let exits = async |child: &mut tokio::process::Child| {
            tokio::time::timeout(CLOSE_WAIT, child.wait()).await.is_ok()
        };
        if !exits(child).await {
            let pid = child
                .id()
                .and_then(|id| rustix::process::Pid::from_raw(id.cast_signed()));
            if let Some(pid) = pid {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
            }
            if !exits(child).await {
                let _ = child.kill().await;
            }
        }
        if let Some(copying) = stderr.take() {
            let _ = tokio::time::timeout(CLOSE_WAIT, copying).await;
        }
    }

    pub fn peer(&self) -> &Peer<RoleClient> {
        &self.peer
    }

    /// Whether the session has ended ([`ended`]).
    pub fn ended(&self) -> bool {
        self.client
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .is_none_or(ended)
    }

    /// How the session ended, as an error says it: a stdio server's exit
    /// status, once the process has gone.
    pub async fn why_ended(&self) -> String {
        let Some(process) = &self.process else {
            return "its session ended".into();
        };
        let mut process = process.lock().await;
        match tokio::time::timeout(EXIT_WAIT, process.child.wait()).await {
            Ok(Ok(status)) => format!("its process exited ({status})"),
            Ok(Err(e)) => format!("its process ended its output, and its status cannot be read: {e}"),
            Err(_) => "its process closed its output and is still running".into(),
        }
    }

    /// `message`, a request's failure over this session, with how the
    /// session ended if it has.
    pub async fn failed(&self, message: String) -> String {
        match self.ended() {
            // Boxed: rare, and inline it would size every call's future.
            true => format!("{message}: {}", Box::pin(self.why_ended()).await),
            false => message,
        }
    }
}

/// What a session [`Sessions::replace`] opened took the place of.
pub(super) enum Opened {
    /// In place of one that ended, for the reason given.
    Again(String),
    /// The first: the server was not reached before.
    First,
}

/// The server's current session, replaced when it has ended; or why
/// none has opened yet, for a server not started or not reached yet (a
/// failed first try is tried again no sooner than [`RESTART_INTERVAL`]
/// on, as a failed restart is).
pub(super) struct Sessions {
    current: RwLock<Result<Arc<Session>, String>>,
    /// Held while a new session is opened, so that one opens at a time;
    /// when the last try ended.
    reopened: tokio::sync::Mutex<Option<Instant>>,
}

impl Sessions {
    /// No session yet: the server has not been started, and the first
    /// [`Self::replace`] tries at once.
    pub fn starting() -> Self {
        Self {
            current: RwLock::new(Err("it has not answered yet".to_owned())),
            reopened: tokio::sync::Mutex::default(),
        }
    }

    /// The current session, whether or not it has ended; none if the
    /// server has not been reached yet.
    pub fn current(&self) -> Option<Arc<Session>> {
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
            .ok()
            .cloned()
    }

    /// A new session from `open` in place of the current one, which has
    /// ended (or never opened), and which of the two; or, if another
    /// request opened one meanwhile, that one. Refused when one was tried
    /// less than [`RESTART_INTERVAL`] ago.
    pub async fn replace(
        &self,
        open: impl AsyncFnOnce() -> Result<Session, String>,
    ) -> Result<(Arc<Session>, Option<Opened>), String> {
        let mut reopened = self.reopened.lock().await;
        let current = self
            .current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let (why, reached_before) = match current {
            Ok(session) if !session.ended() => return Ok((session, None)),
            Ok(session) => (session.why_ended().await, true),
            Err(why) => (why, false),
        };
        let retried = if reached_before {
            "started again"
        } else {
            "tried again"
        };
        if reopened.is_some_and(|at| at.elapsed() < RESTART_INTERVAL) {
            return Err(format!(
                "{why}; it is {retried} at most once every {} s",
                RESTART_INTERVAL.as_secs()
            ));
        }
        let opening = open().await;
        // From the end of the try: a server slow to start (a loaded
        // machine, `npx`) that dies at once still waits the interval. A
        // first session that opens is no try again: the server's first
        // crash is started again at once.
        if reached_before || opening.is_err() {
            *reopened = Some(Instant::now());
        }
        let fresh = match (opening, reached_before) {
            (Ok(fresh), _) => Arc::new(fresh),
            (Err(e), true) => return Err(format!("{why}, and starting it again failed: {e}")),
            (Err(e), false) => {
                *self.current.write().unwrap_or_else(PoisonError::into_inner) = Err(e.clone());
                return Err(e);
            }
        };
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = Ok(fresh.clone());
        let opened = match reached_before {
            true => Opened::Again(why),
            false => Opened::First,
        };
        Ok((fresh, Some(opened)))
    }
}
