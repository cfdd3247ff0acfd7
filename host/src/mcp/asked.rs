//! The client session of one `tools/call`, as an upstream server's
//! requests during that call reach it ([`Downstream`]), or of the host's
//! sole client (stdio), as a server's `roots/list` outside any call
//! reaches it: what the client declared, its share of relayed round trips,
//! and the request sent on the call's own stream, through the catalog's
//! gate: a server given a secret of another source's could put it in the
//! message shown to the user or in what the client's model is asked. Owns
//! the sending; not the attribution, bounds or capability checks, which
//! are the upstream relay's (`upstream::relay`).

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{ClientCapabilities, GetExtensions, RequestId, ServerRequest};
use rmcp::service::{OriginatingRequestId, Peer, PeerRequestOptions, RoleServer, ServiceError};
use tokio::sync::Semaphore;

use crate::Toolhost;
use crate::bounds::{MAX_ERROR_TEXT, cut};
use crate::upstream::{Asked, Downstream, Unanswered};

/// The session that made call `call`, or the host's sole client.
pub(super) struct CallingClient {
    pub(super) peer: Peer<RoleServer>,
    /// The call's request id: over HTTP, what is asked goes out on its
    /// response stream (the one the client reads while it waits, and the
    /// only one a stateless server has). None for the sole client, asked
    /// outside any call (over stdio, its only stream).
    pub(super) call: Option<RequestId>,
    /// The session's, shared by its calls.
    pub(super) slots: Arc<Semaphore>,
    /// Whose gate what is asked passes, as of the asking.
    pub(super) host: Arc<Toolhost>,
}

impl Downstream for CallingClient {
    fn capabilities(&self) -> Option<ClientCapabilities> {
        self.peer.peer_info().map(|info| info.capabilities.clone())
    }

    fn slots(&self) -> &Arc<Semaphore> {
        &self.slots
    }

    fn ask(&self, request: ServerRequest, deadline: Duration) -> Asked<'_> {
        let Some(mut request) = self.host.gate().message(request) else {
            let withheld = "withheld: it held a secret value the host holds".to_owned();
            return Box::pin(async move { Err(Unanswered::Failed(withheld)) });
        };
        if let Some(call) = &self.call {
            request
                .extensions_mut()
                .insert(OriginatingRequestId(call.clone()));
        }
        let mut options = PeerRequestOptions::no_options();
        // On the deadline rmcp tells the client the request is cancelled.
        options.timeout = Some(deadline);
        Box::pin(async move {
            let failed = |e: ServiceError| Unanswered::Failed(e.to_string());
            let handle = self
                .peer
                .send_request_with_option(request, options)
                .await
                .map_err(failed)?;
            handle.await_response().await.map_err(|e| match e {
                ServiceError::Timeout { timeout } => Unanswered::Late(timeout),
                ServiceError::McpError(e) => Unanswered::Failed(format!(
                    "it answered with an error: {}",
                    cut(e.message.into(), MAX_ERROR_TEXT)
                )),
                other => failed(other),
            })
        })
    }
}
