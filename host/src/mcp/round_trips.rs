//! MCP 2026-07-28's multi-round-trip requests, for an upstream server's
//! questions during a client's plain `tools/call`: that revision has no
//! server-to-client requests, so a question the server asks (an
//! elicitation, a sampling request, roots) ends the client's request with
//! `resultType: "input_required"`, the question as an input request and a
//! `requestState` naming the call, which keeps running, parked, waiting
//! for the answer. The client answers by calling again with
//! `inputResponses` and that `requestState`: the answers go to the server,
//! and the retry waits for what comes next, the result or another question.
//! A parked call runs on its own task, so its deadlines still pass; a
//! parked call let go is cancelled.
//!
//! A call is parked host-wide (the revision has no session), bound to its
//! caller and its tool: a `requestState` of another caller, or for another
//! tool, names nothing. Its id is 128 random bits. Bounds: 16 calls parked
//! per caller, 1,024 for the host; each question waits the server's
//! `relay_timeout_s` for its answer (then the server is told there is
//! none), and a parked call is let go once its questions are answered or
//! out of time, and its result read or its call ended.
//!
//! Not here: which client a question is for (`upstream::relay`), what a
//! question looks like to the client (`input_requests`), the tasks
//! extension's questions (`task_extension`).

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use rmcp::ErrorData as McpError;
use rmcp::model::{
    CallToolResponse, CallToolResult, ClientCapabilities, ContentBlock, InputRequest, InputRequiredResult,
    InputResponses,
};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::{CancellationToken, DropGuard};

use super::input_requests::{Embedded, Waiting, Waits};
use super::task_extension::{Owner, owner};
use crate::bounds::{MAX_RELAYED_PER_SESSION, label};
use crate::pipeline::{Caller, Toolhost};
use crate::upstream::Unanswered;

/// The most calls one caller has parked at once.
const MAX_PARKED: usize = 16;

/// The most calls the host keeps parked at once.
const MAX_HOST_PARKED: usize = 1024;

/// The longest a call is kept parked: its questions and the call itself
/// end sooner (`relay_timeout_s`, `call_timeout_s`), and a client that
/// never comes back for it leaves it this long at most.
const MAX_PARKED_FOR: Duration = Duration::from_secs(600);

/// A call running while its client is asked something, and what cancels
/// it.
pub(super) type Running = (
    Pin<Box<dyn Future<Output = CallToolResult> + Send>>,
    CancellationToken,
);

/// A call in flight: in the request's own future until it first asks
/// something, then on a task of its own, so that its deadlines still pass
/// while it is parked. It moves to its task once, however many times it
/// is parked.
enum Flight {
    Here(Pin<Box<dyn Future<Output = CallToolResult> + Send>>),
    Away(oneshot::Receiver<CallToolResult>),
}

impl Flight {
    /// The call's result, once its own task has it.
    fn away(self) -> oneshot::Receiver<CallToolResult> {
        match self {
            Flight::Here(call) => {
                let (done, result) = oneshot::channel();
                tokio::spawn(async move {
                    let _ = done.send(call.await);
                });
                result
            }
            Flight::Away(result) => result,
        }
    }
}

impl Future for Flight {
    type Output = CallToolResult;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<CallToolResult> {
        match self.get_mut() {
            Flight::Here(call) => call.as_mut().poll(cx),
            Flight::Away(result) => Pin::new(result).poll(cx).map(|r| {
                r.unwrap_or_else(|_| {
                    CallToolResult::error(vec![ContentBlock::text("the call ended without a result")])
                })
            }),
        }
    }
}

/// A question of the server's, for the client, and where its answer goes.
pub(super) struct Question {
    key: String,
    shown: InputRequest,
    answer: oneshot::Sender<Value>,
}

/// Where a call's questions arrive.
pub(super) type Questions = mpsc::Receiver<Question>;

/// A call's questions, handed to the request in hand ([`Questions`]).
pub(super) struct ToRequest(mpsc::Sender<Question>);

impl Waits for ToRequest {
    fn wait(&self, key: String, shown: InputRequest) -> Waiting<'_> {
        Box::pin(async move {
            let gone = || Unanswered::Failed("the client's request ended".into());
            let (answer, answered) = oneshot::channel();
            self.0
                .send(Question { key, shown, answer })
                .await
                .map_err(|_| gone())?;
            answered.await.map_err(|_| gone())
        })
    }
}

/// The client of one call (declaring `capabilities` on it), and where its
/// questions arrive.
pub(super) fn asking(
    host: &Arc<Toolhost>,
    capabilities: Option<ClientCapabilities>,
) -> (Arc<Embedded<ToRequest>>, Questions) {
    let (questions, arrive) = mpsc::channel(MAX_RELAYED_PER_SESSION);
    (
        Arc::new(Embedded::new(host, capabilities, ToRequest(questions))),
        arrive,
    )
}

/// The calls parked on a question, host-wide.
#[derive(Default)]
pub(super) struct RoundTrips {
    parked: Mutex<HashMap<String, Parked>>,
}

/// A call parked: whose, of which tool, its questions unanswered, and the
/// call itself.
struct Parked {
    owner: Owner,
    tool: String,
    pending: BTreeMap<String, Question>,
    questions: Questions,
    /// The call's result, once its task has it.
    result: oneshot::Receiver<CallToolResult>,
    /// Cancels the call if the entry is let go.
    cancel: DropGuard,
    until: Instant,
}

impl RoundTrips {
    fn parked(&self) -> std::sync::MutexGuard<'_, HashMap<String, Parked>> {
        self.parked.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Run `call` until it ends or asks something: its result, or the
    /// question(s) the client is to answer, the call parked meanwhile. The
    /// client cancelling its request (`request`) cancels the call.
    pub(super) async fn run(
        &self,
        caller: &Caller,
        tool: &str,
        call: Running,
        questions: Questions,
        request: &CancellationToken,
    ) -> Result<CallToolResponse, McpError> {
        let (call, cancel) = call;
        let flight = (Flight::Here(call), cancel);
        self.go_on(owner(caller), tool, BTreeMap::new(), questions, flight, request)
            .await
    }

    /// Go on with the call `state` names, if it is `caller`'s and of
    /// `tool`: `answers` to its questions, then its result or its next
    /// question.
    pub(super) async fn resume(
        &self,
        caller: &Caller,
        tool: &str,
        state: &str,
        answers: InputResponses,
        request: &CancellationToken,
    ) -> Result<CallToolResponse, McpError> {
        let who = owner(caller);
        let found = {
            let mut parked = self.parked();
            let now = Instant::now();
            parked.retain(|_, p| p.until > now);
            match parked.get(state) {
                Some(p) if p.owner == who && p.tool == tool => parked.remove(state),
                _ => None,
            }
        };
        let Some(Parked {
            mut pending,
            questions,
            result,
            cancel,
            ..
        }) = found
        else {
            return Err(McpError::invalid_params(
                format!(
                    "no call of tool {} waits on requestState {}",
                    label(tool),
                    label(state)
                ),
                None,
            ));
        };
        for (key, answer) in answers {
            if let Some(question) = pending.remove(&key) {
                let _ = question.answer.send(answer);
            }
        }
        // Questions no longer waited on (out of time) are not asked again.
        pending.retain(|_, q| !q.answer.is_closed());
        let flight = (Flight::Away(result), cancel.disarm());
        self.go_on(who, tool, pending, questions, flight, request).await
    }

    /// With `pending` unanswered, park the call at once; otherwise wait for
    /// its result or its next question.
    async fn go_on(
        &self,
        owner: Owner,
        tool: &str,
        mut pending: BTreeMap<String, Question>,
        mut questions: Questions,
        (mut call, cancel): (Flight, CancellationToken),
        request: &CancellationToken,
    ) -> Result<CallToolResponse, McpError> {
        if pending.is_empty() {
            tokio::select! {
                result = &mut call => return Ok(result.into()),
                Some(question) = questions.recv() => {
                    pending.insert(question.key.clone(), question);
                }
                () = request.cancelled() => {
                    cancel.cancel();
                    return Ok(call.await.into());
                }
            }
        }
        self.park(owner, tool, pending, questions, (call, cancel))
    }

    /// Keep `call` under a new `requestState` until the client answers
    /// `pending`: the `input_required` result that asks it.
    fn park(
        &self,
        owner: Owner,
        tool: &str,
        mut pending: BTreeMap<String, Question>,
        mut questions: Questions,
        (call, cancel): (Flight, CancellationToken),
    ) -> Result<CallToolResponse, McpError> {
        // Questions asked at the same moment go out together.
        while let Ok(question) = questions.try_recv() {
            pending.insert(question.key.clone(), question);
        }
        let inputs: BTreeMap<String, InputRequest> = pending
            .iter()
            .map(|(k, q)| (k.clone(), q.shown.clone()))
            .collect();
        let state = format!("{:032x}", rand::random::<u128>());
        let mut parked = self.parked();
        let now = Instant::now();
        parked.retain(|_, p| p.until > now);
        let mine = parked.values().filter(|p| p.owner == owner).count();
        if mine >= MAX_PARKED || parked.len() >= MAX_HOST_PARKED {
            cancel.cancel();
            return Err(McpError::invalid_request(
                format!(
                    "toolhost keeps {MAX_PARKED} of your calls waiting on an answer ({MAX_HOST_PARKED} in all), \
                     the most it keeps: answer or abandon one first"
                ),
                None,
            ));
        }
        // The call runs on while parked, so that its own deadlines (the
        // upstream's, a plugin's question's) still pass.
        let result = call.away();
        parked.insert(
            state.clone(),
            Parked {
                owner,
                tool: tool.to_owned(),
                pending,
                questions,
                result,
                cancel: cancel.drop_guard(),
                until: now + MAX_PARKED_FOR,
            },
        );
        Ok(InputRequiredResult::new(Some(inputs), Some(state)).into())
    }
}

#[cfg(test)]
mod tests {
    // rmcp marks roots deprecated (SEP-2577); it is the simplest question.
    #![allow(deprecated)]

    use rmcp::model::ListRootsRequest;

    use super::*;

    /// A call that asks one question (`q1`) and answers with what it was
    /// told; the questions' receiver and what cancels it.
    async fn asking_call() -> (Running, Questions, CancellationToken) {
        let (questions, arrive) = mpsc::channel(4);
        let (answer, answered) = oneshot::channel::<Value>();
        let shown = InputRequest::ListRoots(ListRootsRequest::default());
        questions
            .send(Question {
                key: "q1".into(),
                shown,
                answer,
            })
            .await
            .unwrap();
        let call = Box::pin(async move {
            let told = answered.await.map(|v| v.to_string()).unwrap_or_default();
            CallToolResult::success(vec![ContentBlock::text(told)])
        });
        let cancel = CancellationToken::new();
        ((call, cancel.clone()), arrive, cancel)
    }

    /// The questions `response` asks, and its `requestState`.
    fn asked(response: Result<CallToolResponse, McpError>) -> (BTreeMap<String, InputRequest>, String) {
        match response {
            Ok(CallToolResponse::InputRequired(asked)) => (
                asked.input_requests.unwrap_or_default(),
                asked.request_state.unwrap_or_default(),
            ),
            other => panic!("not asked: {other:?}"),
        }
    }

    /// The text of the result `response` completes with.
    fn completed(response: Result<CallToolResponse, McpError>) -> String {
        match response {
            Ok(CallToolResponse::Complete(done)) => done.content[0].as_text().unwrap().text.clone(),
            other => panic!("not done: {other:?}"),
        }
    }

    /// A parked call is resumed only by its caller, for its tool: anyone
    /// else's retry names nothing and leaves it parked; its own answers
    /// and gets the result.
    #[tokio::test]
    async fn a_parked_call_is_its_callers_and_its_tools_alone() {
        let trips = RoundTrips::default();
        let (call, questions, _) = asking_call().await;
        let (alice, mallory) = (
            Caller::named_by_embedder("alice"),
            Caller::named_by_embedder("mallory"),
        );
        let request = CancellationToken::new();
        let (inputs, state) = asked(trips.run(&alice, "roots", call, questions, &request).await);
        assert!(inputs.contains_key("q1"));
        let answers = || InputResponses::from([("q1".to_owned(), serde_json::json!(42))]);
        for (who, tool) in [(&mallory, "roots"), (&alice, "other")] {
            let refused = trips.resume(who, tool, &state, answers(), &request).await;
            assert!(refused.unwrap_err().message.contains("no call of tool"));
        }
        let done = trips.resume(&alice, "roots", &state, answers(), &request).await;
        assert_eq!(completed(done), "42");
        assert!(trips.parked().is_empty());
    }

    /// A call that asks again after its first answer is parked again
    /// under a new `requestState`, the old one spent, and its result
    /// reaches the retry that answers the second question.
    #[tokio::test]
    async fn a_call_that_asks_twice_is_parked_twice() {
        let trips = RoundTrips::default();
        let (questions, arrive) = mpsc::channel(4);
        let call = Box::pin(async move {
            let mut told = Vec::new();
            for key in ["q1", "q2"] {
                let (answer, answered) = oneshot::channel::<Value>();
                let shown = InputRequest::ListRoots(ListRootsRequest::default());
                let question = Question {
                    key: key.into(),
                    shown,
                    answer,
                };
                questions.send(question).await.unwrap();
                told.push(answered.await.unwrap().to_string());
            }
            CallToolResult::success(vec![ContentBlock::text(told.join(","))])
        });
        let alice = Caller::named_by_embedder("alice");
        let request = CancellationToken::new();
        let running = (
            call as Pin<Box<dyn Future<Output = CallToolResult> + Send>>,
            CancellationToken::new(),
        );
        let (inputs, state) = asked(trips.run(&alice, "roots", running, arrive, &request).await);
        assert!(inputs.contains_key("q1"));
        let answer = |key: &str, value| InputResponses::from([(key.to_owned(), serde_json::json!(value))]);
        let (inputs, again) = asked(
            trips
                .resume(&alice, "roots", &state, answer("q1", 1), &request)
                .await,
        );
        assert!(inputs.contains_key("q2"));
        assert_ne!(again, state);
        let spent = trips
            .resume(&alice, "roots", &state, answer("q2", 2), &request)
            .await;
        assert!(spent.unwrap_err().message.contains("no call of tool"));
        let done = trips
            .resume(&alice, "roots", &again, answer("q2", 2), &request)
            .await;
        assert_eq!(completed(done), "1,2");
        assert!(trips.parked().is_empty());
    }

    /// A caller parks at most [`MAX_PARKED`] calls: one more is refused
    /// naming the cap (and is not kept); another caller's share is their own.
    #[tokio::test]
    async fn a_caller_parks_a_bounded_number_of_calls() {
        let trips = RoundTrips::default();
        let (alice, bob) = (
            Caller::named_by_embedder("alice"),
            Caller::named_by_embedder("bob"),
        );
        let request = CancellationToken::new();
        for _ in 0..MAX_PARKED {
            let (call, questions, _) = asking_call().await;
            let asked = trips.run(&alice, "roots", call, questions, &request).await;
            assert!(matches!(asked, Ok(CallToolResponse::InputRequired(_))));
        }
        let (call, questions, cancel) = asking_call().await;
        let refused = trips.run(&alice, "roots", call, questions, &request).await;
        assert!(refused.unwrap_err().message.contains("keeps 16 of your calls"));
        assert!(cancel.is_cancelled(), "the refused call runs on");
        assert_eq!(trips.parked().len(), MAX_PARKED);
        let (call, questions, _) = asking_call().await;
        let asked = trips.run(&bob, "roots", call, questions, &request).await;
        assert!(matches!(asked, Ok(CallToolResponse::InputRequired(_))));
    }

    /// A parked call let go (its time out, the host stopping) is cancelled.
    #[tokio::test]
    async fn a_parked_call_let_go_is_cancelled() {
        let trips = RoundTrips::default();
        let (call, questions, cancel) = asking_call().await;
        let caller = Caller::named_by_embedder("alice");
        let asked = trips
            .run(&caller, "roots", call, questions, &CancellationToken::new())
            .await;
        assert!(matches!(asked, Ok(CallToolResponse::InputRequired(_))));
        assert!(!cancel.is_cancelled());
        trips.parked().clear();
        assert!(cancel.is_cancelled());
    }
}
