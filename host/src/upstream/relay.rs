//! What an upstream server asks of its client while one of its tools runs
//! (`elicitation/create`, form or URL; `sampling/createMessage`;
//! `roots/list`), relayed to the client session whose call caused it, and
//! that client's answer (accept, decline or cancel; a completion; its
//! roots) relayed back. Owns the attribution of each request to one calling
//! session and the bounds of each round trip; not the client sessions (the
//! MCP front implements [`Downstream`]) nor the connection (`upstream`).
//! The server's progress notifications on a call go the same way, to the
//! call's progress sink, matched by the progress token our request carried
//! ([`Relay::progress`]).
//!
//! Attribution. Each call in flight on the server is registered with its
//! caller ([`Relay::enter`]): a client session, or none (the host itself:
//! a prefetch, `toolhost call`, an embedder). A request that arrives on the
//! HTTP response stream of one of those calls (rmcp marks it with the
//! stream's `InboundStreamOrigin`) is that call's caller's; one naming a
//! task of the server's (MCP 2025-11-25's related-task `_meta`) whose
//! `tasks/result` a call waits on is that call's caller's (the server
//! names its own task, whose caller it could tell anything in the result
//! as well). Otherwise
//! (stdio cannot tell one call's requests from another's; a request on the
//! server's own stream) it is the one caller's that has calls in flight on
//! the server. With none, with calls of two callers in flight, or with the
//! host's own call, it is refused with an error naming why: sent to a
//! guess, one session would be shown another's question, or answer it.
//! An answer is taken only from the session asked: rmcp matches it to the
//! request by its id within that session.
//!
//! Roots are the exception: they belong to the client's session, not to a
//! call, and servers ask for them outside any (as they start, and when told
//! they changed). A `roots/list` no call explains goes to the host's sole
//! client, where it serves one ([`Relay::serve_alone`]: over stdio), and is
//! refused as above where it serves many.
//!
//! Bounds: each request and each answer within [`MAX_RELAYED_MESSAGE`]
//! (and the server's `max_message_kb`); [`MAX_RELAYED_PER_SESSION`] round
//! trips in flight per client session, over every server, one more refused
//! at once; each answered within the server's `relay_timeout_s` (the client
//! is then sent a cancellation). A client that did not declare the
//! capability a request needs is never asked: the server is answered at
//! once that it did not.

// rmcp marks sampling and roots deprecated (SEP-2577); servers still use them.
#![allow(deprecated)]

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock, Weak};
use std::time::Duration;

use rmcp::ErrorData as McpError;
use rmcp::model::{
    ClientCapabilities, ClientResult, CreateMessageRequest, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequest, ElicitRequestParams, ElicitResult, ErrorCode, ListRootsRequest, ListRootsResult,
    ProgressNotificationParam, ProgressToken, RequestId, ServerRequest,
};
use rmcp::service::{InboundStreamOrigin, RequestContext, RoleClient};
use tokio::sync::Semaphore;

use crate::bounds::{MAX_RELAYED_MESSAGE, MAX_RELAYED_PER_SESSION, encoded_len};
use crate::plugin::ProgressFn;

/// The client's answer to a relayed request, or why there is none.
pub type Asked<'a> = Pin<Box<dyn Future<Output = Result<ClientResult, Unanswered>> + Send + 'a>>;

/// Why a client gave no answer: the asker names its own deadline's setting.
#[derive(Debug, thiserror::Error)]
pub enum Unanswered {
    #[error("no answer within {} s", .0.as_secs())]
    Late(Duration),
    #[error("{0}")]
    Failed(String),
}

/// A client session whose calls may reach upstream servers, as their
/// requests reach it.
pub trait Downstream: Send + Sync {
    /// What the client declared in `initialize`, if it has.
    fn capabilities(&self) -> Option<ClientCapabilities>;
    /// The session's round trips in flight, shared by every server
    /// ([`session_slots`]): one per session, so it also tells sessions
    /// apart (by address, which no other session's takes while a call of
    /// this one holds it).
    fn slots(&self) -> &Arc<Semaphore>;
    /// Send `request` to the client: its answer within `deadline`.
    fn ask(&self, request: ServerRequest, deadline: Duration) -> Asked<'_>;
}

/// The round trips one client session may have in flight.
pub fn session_slots() -> Arc<Semaphore> {
    Arc::new(Semaphore::new(MAX_RELAYED_PER_SESSION))
}

/// One server's calls in flight and what it may relay.
pub(super) struct Relay {
    server: Arc<str>,
    deadline: Duration,
    max_bytes: usize,
    calls: Mutex<HashMap<u64, Call>>,
    next: AtomicU64,
    /// The only client the host serves, if it serves one (over stdio).
    sole: RwLock<Option<Weak<dyn Downstream>>>,
}

struct Call {
    /// Our `tools/call` request's id and progress token, once sent.
    request: Option<(RequestId, ProgressToken)>,
    /// The server's task a `tasks/result` waits on, if it is one.
    task: Option<String>,
    caller: Option<Arc<dyn Downstream>>,
    /// Where the call's progress goes, if its caller asked for it.
    report: Option<ProgressFn>,
}

/// A call in flight, registered until dropped.
pub(super) struct Entered<'a> {
    relay: &'a Relay,
    key: u64,
}

impl Entered<'_> {
    /// The call is `tasks/result` of the server's task `id`: what the
    /// server asks naming that task is for this call's caller.
    pub(super) fn waits_on_task(&self, id: &str) {
        if let Some(call) = self.relay.lock().get_mut(&self.key) {
            call.task = Some(id.to_owned());
        }
    }

    /// The call went out as request `id`, with progress token `token`.
    pub(super) fn sent(&self, id: RequestId, token: ProgressToken) {
        if let Some(call) = self.relay.lock().get_mut(&self.key) {
            call.request = Some((id, token));
        }
    }
}

impl Drop for Entered<'_> {
    fn drop(&mut self) {
        self.relay.lock().remove(&self.key);
    }
}

impl Relay {
    pub(super) fn new(server: &str, deadline: Duration, max_message_bytes: usize) -> Self {
        Self {
            server: server.into(),
            deadline,
            max_bytes: max_message_bytes.min(MAX_RELAYED_MESSAGE),
            calls: Mutex::default(),
            next: AtomicU64::new(0),
            sole: RwLock::default(),
        }
    }

    /// `client` is the only client the host serves: the `roots/list` no
    /// call explains is its.
    pub(super) fn serve_alone(&self, client: Weak<dyn Downstream>) {
        *self.sole.write().unwrap_or_else(PoisonError::into_inner) = Some(client);
    }

    fn sole_client(&self) -> Option<Arc<dyn Downstream>> {
        self.sole
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()?
            .upgrade()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Call>> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A call of `caller` (`None`: the host's own) starts; its progress
    /// goes to `report`.
    pub(super) fn enter(
        &self,
        caller: Option<Arc<dyn Downstream>>,
        report: Option<ProgressFn>,
    ) -> Entered<'_> {
        let key = self.next.fetch_add(1, Ordering::Relaxed);
        let call = Call {
            request: None,
            task: None,
            caller,
            report,
        };
        self.lock().insert(key, call);
        Entered { relay: self, key }
    }

    /// The server's progress on one of the calls in flight, to that call's
    /// sink (`message` already made fit to pass on); progress for no call
    /// in flight is dropped.
    pub(super) fn progress(&self, params: &ProgressNotificationParam, message: Option<String>) {
        let report = self
            .lock()
            .values()
            .find(|c| {
                c.request
                    .as_ref()
                    .is_some_and(|(_, token)| *token == params.progress_token)
            })
            .and_then(|c| c.report.clone());
        if let Some(report) = report {
            report(params.progress, params.total, message);
        }
    }

    /// The session a request of the server's is for (see the module doc);
    /// `task` is the server's task the request names, if it names one.
    fn attribute(
        &self,
        origin: Option<&InboundStreamOrigin>,
        task: Option<&str>,
    ) -> Result<Arc<dyn Downstream>, String> {
        let calls = self.lock();
        let on_stream = match origin {
            Some(InboundStreamOrigin::OutboundRequest(id)) => calls
                .values()
                .find(|c| c.request.as_ref().is_some_and(|(sent, _)| sent == id)),
            _ => None,
        };
        let for_task = || task.and_then(|t| calls.values().find(|c| c.task.as_deref() == Some(t)));
        let call = match on_stream.or_else(for_task) {
            Some(call) => call,
            None => {
                let session = |c: &Call| c.caller.as_ref().map(|d| Arc::as_ptr(d.slots()));
                let mut all = calls.values();
                let first = all
                    .next()
                    .ok_or("it came while none of the server's tools was being called")?;
                if all.any(|c| session(c) != session(first)) {
                    return Err(format!(
                        "calls of several callers are in flight on the server ({} calls): \
                         which one it is for cannot be told",
                        calls.len()
                    ));
                }
                first
            }
        };
        call.caller.clone().ok_or_else(|| {
            "the call in flight is the host's own (a prefetch, `toolhost call`), with no client to ask".into()
        })
    }

    /// The session `request` goes to: the one its call is attributed to,
    /// else for `roots/list` the sole client, if the host serves one.
    fn addressee(
        &self,
        request: &ServerRequest,
        origin: Option<&InboundStreamOrigin>,
        task: Option<&str>,
    ) -> Result<Arc<dyn Downstream>, String> {
        self.attribute(origin, task).or_else(|why| {
            let roots = matches!(request, ServerRequest::ListRootsRequest(_));
            self.sole_client().filter(|_| roots).ok_or(why)
        })
    }

    /// Relay `request` (the server's, which arrived with `context`) to the
    /// client whose call caused it; its answer, or an error for the server.
    async fn relay(
        &self,
        request: ServerRequest,
        context: &RequestContext<RoleClient>,
    ) -> Result<ClientResult, McpError> {
        let what = method(&request);
        // Servers ask for the roots on their own, right after they start:
        // routine, not worth a warning on every start.
        let routine = matches!(request, ServerRequest::ListRootsRequest(_));
        let refuse = |code: ErrorCode, why: String| {
            if routine {
                tracing::debug!("upstream `{}`: {what} not relayed: {why}", self.server);
            } else {
                tracing::warn!("upstream `{}`: {what} not relayed: {why}", self.server);
            }
            McpError::new(code, format!("toolhost did not relay {what}: {why}"), None)
        };
        let client = self
            .addressee(
                &request,
                context.extensions.get::<InboundStreamOrigin>(),
                related_task(&context.meta),
            )
            .map_err(|why| refuse(ErrorCode::INVALID_REQUEST, why))?;
        if let Some(missing) = undeclared(&request, client.capabilities().as_ref()) {
            return Err(refuse(
                ErrorCode::METHOD_NOT_FOUND,
                format!("the calling client did not declare the {missing} capability"),
            ));
        }
        let size = encoded_len(&request);
        if size > self.max_bytes {
            return Err(refuse(
                ErrorCode::INVALID_PARAMS,
                format!("it has {size} bytes, more than the cap of {}", self.max_bytes),
            ));
        }
        let _slot = client.slots().clone().try_acquire_owned().map_err(|_| {
            refuse(
                ErrorCode::INTERNAL_ERROR,
                format!("{MAX_RELAYED_PER_SESSION} requests to the calling client are in flight already"),
            )
        })?;
        let answer = client.ask(request, self.deadline).await.map_err(|why| {
            let setting = match why {
                Unanswered::Late(_) => " (`relay_timeout_s`)",
                Unanswered::Failed(_) => "",
            };
            refuse(
                ErrorCode::INTERNAL_ERROR,
                format!("the calling client: {why}{setting}"),
            )
        })?;
        let size = encoded_len(&answer);
        if size > self.max_bytes {
            return Err(refuse(
                ErrorCode::INTERNAL_ERROR,
                format!(
                    "the client's answer has {size} bytes, more than the cap of {}",
                    self.max_bytes
                ),
            ));
        }
        Ok(answer)
    }

    pub(super) async fn elicit(
        &self,
        params: ElicitRequestParams,
        context: &RequestContext<RoleClient>,
    ) -> Result<ElicitResult, McpError> {
        match self
            .relay(ServerRequest::ElicitRequest(ElicitRequest::new(params)), context)
            .await?
        {
            ClientResult::ElicitResult(answer) => Ok(answer),
            _ => Err(self.unexpected("elicitation/create")),
        }
    }

    pub(super) async fn sample(
        &self,
        params: CreateMessageRequestParams,
        context: &RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, McpError> {
        let request = ServerRequest::CreateMessageRequest(CreateMessageRequest::new(params));
        match self.relay(request, context).await? {
            ClientResult::CreateMessageResult(answer) => Ok(*answer),
            _ => Err(self.unexpected("sampling/createMessage")),
        }
    }

    pub(super) async fn roots(
        &self,
        context: &RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, McpError> {
        match self
            .relay(
                ServerRequest::ListRootsRequest(ListRootsRequest::default()),
                context,
            )
            .await?
        {
            ClientResult::ListRootsResult(answer) => Ok(answer),
            _ => Err(self.unexpected("roots/list")),
        }
    }

    fn unexpected(&self, what: &str) -> McpError {
        tracing::warn!(
            "upstream `{}`: {what}: the calling client answered with another kind of result",
            self.server
        );
        McpError::internal_error(
            format!("toolhost did not relay {what}: the calling client answered with another kind of result"),
            None,
        )
    }
}

/// The server's task a request of its names in its `_meta` (`meta`; MCP
/// 2025-11-25's related task), if one.
fn related_task(meta: &serde_json::Map<String, serde_json::Value>) -> Option<&str> {
    meta.get("io.modelcontextprotocol/related-task")?
        .get("taskId")?
        .as_str()
}

fn method(request: &ServerRequest) -> &'static str {
    match request {
        ServerRequest::ElicitRequest(_) => "elicitation/create",
        ServerRequest::CreateMessageRequest(_) => "sampling/createMessage",
        ServerRequest::ListRootsRequest(_) => "roots/list",
        _ => "a request",
    }
}

/// The capability `request` needs that `declared` lacks, if one.
fn undeclared(request: &ServerRequest, declared: Option<&ClientCapabilities>) -> Option<&'static str> {
    let Some(declared) = declared else {
        return Some("any");
    };
    let elicitation = declared.elicitation.as_ref();
    let (lacks, capability) = match request {
        ServerRequest::ElicitRequest(r) => match r.params {
            ElicitRequestParams::UrlElicitationParams { .. } => (
                elicitation.and_then(|e| e.url.as_ref()).is_none(),
                "URL elicitation",
            ),
            // An empty `elicitation` declares forms (MCP 2025-11-25).
            _ => (
                elicitation.is_none_or(|e| e.form.is_none() && e.url.is_some()),
                "elicitation",
            ),
        },
        ServerRequest::CreateMessageRequest(_) => (declared.sampling.is_none(), "sampling"),
        ServerRequest::ListRootsRequest(_) => (declared.roots.is_none(), "roots"),
        _ => (true, "matching"),
    };
    lacks.then_some(capability)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Session(Arc<Semaphore>);

    impl Downstream for Session {
        fn capabilities(&self) -> Option<ClientCapabilities> {
            None
        }
        fn slots(&self) -> &Arc<Semaphore> {
            &self.0
        }
        fn ask(&self, _: ServerRequest, _: Duration) -> Asked<'_> {
            Box::pin(async { Err(Unanswered::Failed("not asked here".into())) })
        }
    }

    /// Sessions 1 and 2.
    fn sessions() -> [Arc<dyn Downstream>; 2] {
        [
            Arc::new(Session(session_slots())),
            Arc::new(Session(session_slots())),
        ]
    }

    fn attributed(
        relay: &Relay,
        origin: Option<&InboundStreamOrigin>,
        sessions: &[Arc<dyn Downstream>; 2],
    ) -> Result<usize, String> {
        let asked = relay.attribute(origin, None)?;
        Ok(1 + sessions
            .iter()
            .position(|s| Arc::ptr_eq(s.slots(), asked.slots()))
            .unwrap())
    }

    #[test]
    fn a_request_goes_to_the_only_caller_in_flight_or_nowhere() {
        let relay = Relay::new("srv", Duration::from_secs(1), 1 << 20);
        let s = sessions();
        assert!(
            attributed(&relay, None, &s)
                .unwrap_err()
                .contains("none of the server's tools")
        );
        let a = relay.enter(Some(s[0].clone()), None);
        let a2 = relay.enter(Some(s[0].clone()), None);
        assert_eq!(attributed(&relay, None, &s), Ok(1), "two calls of one session");
        let b = relay.enter(Some(s[1].clone()), None);
        assert!(
            attributed(&relay, None, &s)
                .unwrap_err()
                .contains("several callers")
        );
        drop((a, a2));
        assert_eq!(attributed(&relay, None, &s), Ok(2));
        let own = relay.enter(None, None);
        assert!(
            attributed(&relay, None, &s)
                .unwrap_err()
                .contains("several callers")
        );
        drop(b);
        assert!(
            attributed(&relay, None, &s)
                .unwrap_err()
                .contains("the host's own")
        );
        drop(own);
        assert!(attributed(&relay, None, &s).is_err());
    }

    #[test]
    fn a_request_on_a_calls_stream_goes_to_that_calls_session() {
        let relay = Relay::new("srv", Duration::from_secs(1), 1 << 20);
        let s = sessions();
        let token = |n: i64| ProgressToken(rmcp::model::NumberOrString::Number(n));
        let a = relay.enter(Some(s[0].clone()), None);
        a.sent(RequestId::Number(7), token(1));
        let b = relay.enter(Some(s[1].clone()), None);
        b.sent(RequestId::Number(8), token(2));
        let on = |id| InboundStreamOrigin::OutboundRequest(RequestId::Number(id));
        assert_eq!(attributed(&relay, Some(&on(7)), &s), Ok(1));
        assert_eq!(attributed(&relay, Some(&on(8)), &s), Ok(2));
        // On no call's stream: the coarse rule, which two callers defeat.
        assert!(attributed(&relay, Some(&on(9)), &s).is_err());
        assert!(attributed(&relay, Some(&InboundStreamOrigin::Unassociated), &s).is_err());
        drop(a);
        assert_eq!(
            attributed(&relay, Some(&InboundStreamOrigin::Unassociated), &s),
            Ok(2)
        );
    }

    /// On stdio, where no stream tells calls apart, a request naming the
    /// server's task goes to the caller waiting on that task's result,
    /// whoever else has calls in flight; naming no task waited on, the
    /// coarse rule.
    #[test]
    fn a_request_naming_a_task_goes_to_the_caller_waiting_on_it() {
        let relay = Relay::new("srv", Duration::from_secs(1), 1 << 20);
        let s = sessions();
        let a = relay.enter(Some(s[0].clone()), None);
        a.waits_on_task("t-a");
        let b = relay.enter(Some(s[1].clone()), None);
        b.waits_on_task("t-b");
        let by_task = |task: &str| -> Result<usize, String> {
            let asked = relay.attribute(None, Some(task))?;
            Ok(1 + s
                .iter()
                .position(|x| Arc::ptr_eq(x.slots(), asked.slots()))
                .unwrap())
        };
        assert_eq!(by_task("t-a"), Ok(1));
        assert_eq!(by_task("t-b"), Ok(2));
        assert!(by_task("t-other").unwrap_err().contains("several callers"));
        let meta = serde_json::json!({"io.modelcontextprotocol/related-task": {"taskId": "t-b"}});
        assert_eq!(related_task(meta.as_object().unwrap()), Some("t-b"));
    }

    /// Outside any call, the sole client is asked for its roots, and
    /// nothing else; where the host serves many clients, no one is.
    #[test]
    fn roots_no_call_explains_go_to_the_sole_client() {
        let relay = Relay::new("srv", Duration::from_secs(1), 1 << 20);
        let s = sessions();
        let roots = ServerRequest::ListRootsRequest(ListRootsRequest::default());
        let sampling = ServerRequest::CreateMessageRequest(CreateMessageRequest::new(
            serde_json::from_value(serde_json::json!({"messages": [], "maxTokens": 1})).unwrap(),
        ));
        let asked = |request: &ServerRequest| -> Result<usize, String> {
            let asked = relay.addressee(request, None, None)?;
            Ok(1 + s
                .iter()
                .position(|x| Arc::ptr_eq(x.slots(), asked.slots()))
                .unwrap())
        };
        assert!(asked(&roots).unwrap_err().contains("none of the server's tools"));
        relay.serve_alone(Arc::downgrade(&s[1]));
        assert_eq!(asked(&roots), Ok(2));
        assert!(
            asked(&sampling)
                .unwrap_err()
                .contains("none of the server's tools")
        );
        // A call in flight is still asked what it causes.
        let call = relay.enter(Some(s[0].clone()), None);
        assert_eq!(asked(&roots), Ok(1));
        assert_eq!(asked(&sampling), Ok(1));
        drop(call);
        // The host's own call: its roots are the sole client's still.
        let own = relay.enter(None, None);
        assert_eq!(asked(&roots), Ok(2));
        drop(own);
        // Gone with its session.
        let [_, sole] = s;
        drop(sole);
        assert!(relay.addressee(&roots, None, None).is_err());
    }

    #[test]
    fn a_capability_not_declared_is_named() {
        use rmcp::model::{ElicitationCapability, UrlElicitationCapability};
        let url =
            ServerRequest::ElicitRequest(ElicitRequest::new(ElicitRequestParams::UrlElicitationParams {
                meta: None,
                message: "sign in".into(),
                url: "https://example.com".into(),
                elicitation_id: "e1".into(),
            }));
        let roots = ServerRequest::ListRootsRequest(ListRootsRequest::default());
        assert_eq!(undeclared(&roots, None), Some("any"));
        let mut declared = ClientCapabilities::default();
        assert_eq!(undeclared(&roots, Some(&declared)), Some("roots"));
        assert_eq!(undeclared(&url, Some(&declared)), Some("URL elicitation"));
        declared.elicitation = Some(ElicitationCapability::new());
        assert_eq!(undeclared(&url, Some(&declared)), Some("URL elicitation"));
        declared.elicitation = Some(ElicitationCapability::new().with_url(UrlElicitationCapability::new()));
        assert_eq!(undeclared(&url, Some(&declared)), None);
    }
}
