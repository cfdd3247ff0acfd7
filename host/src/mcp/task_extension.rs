//! MCP 2026-07-28's tasks extension (`io.modelcontextprotocol/tasks`),
//! served over the 2025-11-25 tasks upstream servers run: a `tools/call`
//! of a client that declares the extension, of an upstream tool that may
//! run as a task, starts it as a task of its server and is answered with
//! a task of the host's; the client polls `tasks/get`, answers the
//! server's questions with `tasks/update`, and may `tasks/cancel`.
//!
//! The host drives each task to its end itself ([`HostTasks::start`]):
//! it polls the server's task, holds its `tasks/result` only once the
//! task asks something or has ended (so running tasks take none of the
//! server's connections from other calls), turns what the server asks
//! (elicitation, sampling, roots) into the task's `inputRequests`, and
//! keeps the result, through the gate, for `tasks/get`. rmcp's
//! `TaskManager` keeps the state the client polls.
//!
//! The revision has no session: one table serves the whole host, and each
//! task is bound to the caller who started it. Another caller naming it
//! is answered as for an id that names nothing. Ids are random (122 bits)
//! and the host's own, never the server's.
//!
//! Bounds: a caller holds at most [`MAX_LIVE_TASKS`] running tasks and
//! [`MAX_KEPT_TASKS`] in all (ended ones are kept for one more time to
//! live, for the client to read), the host [`MAX_HOST_TASKS`]; a task
//! lives at most [`MAX_TASK_TTL`] whatever its server says, and its
//! upstream task is cancelled when the host gives it up before it ends.
//! Each question is bounded as every relayed round trip is
//! (`upstream::relay`): its size, [`crate::bounds::MAX_RELAYED_PER_SESSION`]
//! at once per task, `relay_timeout_s` to be answered.
//!
//! Not here: the 2025-11-25 tasks a session proxies (`tasks`), the checks
//! a call goes through before it starts (the pipeline's), how the
//! server's answers are read past rmcp (`upstream::carried`). Status
//! notifications are not pushed (rmcp routes no `notifications/tasks`):
//! clients poll, as the extension lets them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};
use std::time::{Duration, Instant};

use rmcp::ErrorData as McpError;
use rmcp::model::{CallToolResult, ClientCapabilities, CreateTaskResult, DetailedTask, InputRequest};
use rmcp::task_manager::{TaskContext, TaskExit, TaskManager, TaskOptions};
use serde_json::{Value, json};

use super::input_requests::{Embedded, RELATED_TASK, Waiting, Waits};
use super::metrics::{CallMetrics, task_status};
use super::tasks::{MAX_LIVE_TASKS, MAX_TASK_TTL};
use crate::bounds::label;
use crate::output::mcp;
use crate::pipeline::{Caller, Toolhost, Via};
use crate::upstream::{Unanswered, Upstream};

/// The most tasks one caller has kept at once, running or ended.
pub(super) const MAX_KEPT_TASKS: usize = 64;

/// The most tasks the host keeps at once, over every caller.
pub(super) const MAX_HOST_TASKS: usize = 1024;

/// How often a client is told to poll when the server says nothing.
const DEFAULT_POLL: Duration = Duration::from_secs(1);

/// The server's polls left unanswered in a row that fail a task.
const MAX_UNANSWERED_POLLS: u32 = 3;

/// The longest status message passed on from a server.
const MAX_STATUS_MESSAGE: usize = 1024;

/// Who a task (or a parked call) is bound to: how the caller was known,
/// and as whom.
pub(super) type Owner = (Via, String);

pub(super) fn owner(caller: &Caller) -> Owner {
    (caller.via(), caller.subject().to_owned())
}

/// The host's tasks of the extension, shared by every request.
pub(super) struct HostTasks {
    manager: TaskManager,
    table: Mutex<Table>,
    metrics: Arc<CallMetrics>,
}

/// Whose each task is, and the places taken by tasks being started.
#[derive(Default)]
struct Table {
    tasks: HashMap<String, Kept>,
    starting: HashMap<Owner, usize>,
}

/// A task as the table keeps it.
struct Kept {
    owner: Owner,
    /// Set when it ends (its operation finished or was dropped).
    ended: Arc<OnceLock<Instant>>,
    ttl: Duration,
}

impl Table {
    /// Let go of the tasks the manager has let go of: an ended task is
    /// kept for one more time to live.
    fn expire(&mut self) {
        let now = Instant::now();
        self.tasks
            .retain(|_, kept| kept.ended.get().is_none_or(|at| *at + kept.ttl > now));
    }
}

/// A place taken for one task of `owner` before its server hears of it,
/// released when the task is kept or not started.
pub(super) struct Room<'a> {
    tasks: &'a HostTasks,
    owner: Owner,
}

impl Drop for Room<'_> {
    fn drop(&mut self) {
        let mut table = self.tasks.table();
        if let Some(n) = table.starting.get_mut(&self.owner) {
            *n -= 1;
            if *n == 0 {
                table.starting.remove(&self.owner);
            }
        }
    }
}

/// Marks its task ended when its operation is dropped, however it ends.
struct Ends(Arc<OnceLock<Instant>>);

impl Drop for Ends {
    fn drop(&mut self) {
        let _ = self.0.set(Instant::now());
    }
}

/// A task a server started for a call, to be made the host's.
pub(super) struct Started {
    pub(super) server: Arc<Upstream>,
    /// The tool called, for the gate's cap on its result.
    pub(super) tool: String,
    /// The server's `CreateTaskResult` (its id of the task, its ttl and
    /// poll interval).
    pub(super) created: Value,
    /// What the client declared on the call, for the questions it may be
    /// asked.
    pub(super) capabilities: Option<ClientCapabilities>,
}

impl HostTasks {
    pub(super) fn new(metrics: Arc<CallMetrics>) -> Self {
        Self {
            manager: TaskManager::new(),
            table: Mutex::default(),
            metrics,
        }
    }

    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A place for one more task of `caller`'s, or why there is none:
    /// taken before the server hears of the task, so neither a refusal nor
    /// a flood of calls at once starts more than the caps.
    pub(super) fn room_for(&self, caller: &Caller) -> Result<Room<'_>, McpError> {
        let mut table = self.table();
        table.expire();
        let who = owner(caller);
        let starting = table.starting.get(&who).copied().unwrap_or(0);
        let (mut live, mut kept) = (starting, starting);
        for task in table.tasks.values().filter(|t| t.owner == who) {
            kept += 1;
            live += usize::from(task.ended.get().is_none());
        }
        let all = table.tasks.len() + table.starting.values().sum::<usize>();
        let refuse = |why: String| Err(McpError::invalid_request(why, None));
        if live >= MAX_LIVE_TASKS {
            return refuse(format!(
                "you have {MAX_LIVE_TASKS} tasks running, the most toolhost runs for one caller: \
                 wait for one to end or cancel one"
            ));
        }
        if kept >= MAX_KEPT_TASKS {
            return refuse(format!(
                "toolhost keeps {MAX_KEPT_TASKS} of your tasks, the most it keeps for one caller: \
                 ended ones are let go once their time to live ends"
            ));
        }
        if all >= MAX_HOST_TASKS {
            return refuse(format!(
                "toolhost keeps {MAX_HOST_TASKS} tasks, the most it keeps: try again later"
            ));
        }
        *table.starting.entry(who.clone()).or_default() += 1;
        Ok(Room {
            tasks: self,
            owner: who,
        })
    }

    /// Make the server's task `started` the task of `room`'s caller,
    /// driven to its end by the host: the task the client is answered with.
    pub(super) fn start(
        &self,
        host: &Arc<Toolhost>,
        room: Room<'_>,
        started: Started,
    ) -> Result<CreateTaskResult, McpError> {
        let Started {
            server,
            tool,
            created,
            capabilities,
        } = started;
        let remote = created
            .pointer("/task/taskId")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty() && id.len() <= crate::bounds::MAX_TOOL_NAME * 4)
            .ok_or_else(|| not_a_task(&server))?
            .to_owned();
        let said = |key: &str| created.pointer(&format!("/task/{key}")).and_then(Value::as_u64);
        let ttl = said("ttl").map_or(MAX_TASK_TTL, |ms| {
            Duration::from_millis(ms).clamp(Duration::from_secs(1), MAX_TASK_TTL)
        });
        let poll = said("pollInterval")
            .map_or(DEFAULT_POLL, Duration::from_millis)
            .clamp(Duration::from_millis(100), Duration::from_secs(60));
        let options = TaskOptions::new()
            .with_ttl_ms(ttl.as_millis() as u64)
            .with_poll_interval_ms(poll.as_millis() as u64);
        let running = Running {
            host: Arc::downgrade(host),
            server,
            remote,
            tool,
            poll,
        };
        let metrics = self.metrics.clone();
        let ended = Arc::new(OnceLock::new());
        let ends = Ends(ended.clone());
        let task = self.manager.spawn(options, move |ctx| {
            let inputs = Arc::new(Embedded::new(host, capabilities, TaskInputs(ctx.clone())));
            Box::pin(async move {
                let _ends = ends;
                let ended = tokio::time::timeout(ttl, running.drive(&ctx, inputs)).await;
                let ended = ended.unwrap_or_else(|_| {
                    Err(TaskExit::Error(McpError::internal_error(
                        format!(
                            "the task did not end within its time to live ({} s)",
                            ttl.as_secs()
                        ),
                        None,
                    )))
                });
                metrics.task(match &ended {
                    Ok(_) => "completed",
                    Err(TaskExit::Cancelled) => "cancelled",
                    Err(TaskExit::Error(_)) => "failed",
                });
                ended
            })
        });
        self.metrics.task(task_status(Some("working")));
        let kept = Kept {
            owner: room.owner.clone(),
            ended,
            ttl,
        };
        self.table().tasks.insert(task.task_id.clone(), kept);
        drop(room);
        Ok(CreateTaskResult::new(task))
    }

    /// `tasks/get` of task `id`, if it is `caller`'s.
    pub(super) fn get(&self, caller: &Caller, id: &str) -> Result<DetailedTask, McpError> {
        self.owned(caller, id)?;
        self.manager.get_task(id).map_err(|_| unknown(id))
    }

    /// `tasks/update` of task `id`, if it is `caller`'s: answers to its
    /// questions, those it does not hold ignored.
    pub(super) fn update(
        &self,
        caller: &Caller,
        id: &str,
        answers: impl IntoIterator<Item = (String, Value)>,
    ) -> Result<(), McpError> {
        self.owned(caller, id)?;
        self.manager.update_task(id, answers).map_err(|_| unknown(id))
    }

    /// `tasks/cancel` of task `id`, if it is `caller`'s: the host cancels
    /// the server's task, which may still end otherwise.
    pub(super) fn cancel(&self, caller: &Caller, id: &str) -> Result<(), McpError> {
        self.owned(caller, id)?;
        self.manager.cancel_task(id).map_err(|_| unknown(id))
    }

    /// Task `id` is `caller`'s; otherwise the answer is the one an id that
    /// names nothing gets, so an id is not confirmed to exist.
    fn owned(&self, caller: &Caller, id: &str) -> Result<(), McpError> {
        match self.table().tasks.get(id) {
            Some(task) if task.owner == owner(caller) => Ok(()),
            _ => Err(unknown(id)),
        }
    }
}

/// Stopping a host drops its table: the tasks still running stop, and
/// each cancels its server's task as it is dropped ([`Following`]).
impl Drop for HostTasks {
    fn drop(&mut self) {
        self.manager.shutdown();
    }
}

fn unknown(id: &str) -> McpError {
    McpError::invalid_params(format!("no task {}", label(id)), None)
}

fn not_a_task(server: &Upstream) -> McpError {
    McpError::internal_error(
        format!(
            "upstream `{}` answered the call with something other than its task",
            server.config.name
        ),
        None,
    )
}

/// A server's task the host drives to its end.
struct Running {
    host: Weak<Toolhost>,
    server: Arc<Upstream>,
    remote: String,
    tool: String,
    poll: Duration,
}

impl Running {
    /// Poll the server's task, and hold its `tasks/result` once it asks
    /// the client something or has ended; cancel it if the client does.
    /// A running task holds none of the server's connections between
    /// polls: a caller's tasks cannot take every request the server
    /// serves at once.
    async fn drive(
        &self,
        ctx: &TaskContext,
        inputs: Arc<Embedded<TaskInputs>>,
    ) -> Result<CallToolResult, TaskExit> {
        let mut following = Following {
            server: self.server.clone(),
            remote: self.remote.clone(),
            cancel: true,
        };
        let mut unanswered = 0;
        let ended = loop {
            let status = tokio::select! {
                () = ctx.cancelled() => break Err(TaskExit::Cancelled),
                status = self.status(ctx) => status,
            };
            let status = match status {
                Ok(status) => {
                    unanswered = 0;
                    status
                }
                // A server that stops answering fails the task, not a
                // moment's silence.
                Err(e) => {
                    unanswered += 1;
                    if unanswered >= MAX_UNANSWERED_POLLS {
                        break Err(TaskExit::Error(self.failed(&e)));
                    }
                    "working".to_owned()
                }
            };
            match status.as_str() {
                "working" => {}
                "cancelled" => break Err(TaskExit::Cancelled),
                // `input_required`, or ended: its questions and its end come
                // with `tasks/result`.
                _ => {
                    let asked = tokio::select! {
                        () = ctx.cancelled() => break Err(TaskExit::Cancelled),
                        asked = self.server.task_result(&self.remote, Some(inputs.clone())) => asked,
                    };
                    match asked {
                        Ok(output) => break Ok(self.result(output)),
                        Err(e) if status != "input_required" => {
                            break Err(TaskExit::Error(self.failed(&e.to_string())));
                        }
                        // The server's deadline for one answer passed while
                        // the client was asked: ask again.
                        Err(_) => {}
                    }
                }
            }
            tokio::select! {
                () = ctx.cancelled() => break Err(TaskExit::Cancelled),
                () = tokio::time::sleep(self.poll) => {}
            }
        };
        // Ended by the server: nothing to cancel there.
        following.cancel = matches!(ended, Err(TaskExit::Cancelled));
        ended
    }

    /// The server's status of the task now; its status message, through
    /// the gate, becomes the host's task's.
    async fn status(&self, ctx: &TaskContext) -> Result<String, String> {
        let task = self
            .server
            .task_request("tasks/get", json!({"taskId": self.remote}))
            .await
            .map_err(|e| e.to_string())?;
        if let (Some(message), Some(host)) = (
            task.get("statusMessage").and_then(Value::as_str),
            self.host.upgrade(),
        ) {
            ctx.set_status_message(crate::bounds::cut(host.gate().text(message), MAX_STATUS_MESSAGE));
        }
        task.get("status")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| {
                format!(
                    "upstream `{}` answered tasks/get without a status",
                    self.server.config.name
                )
            })
    }

    /// The server's result as the client reads it: through the gate, under
    /// the host's cap for the tool, with no word of the server's task.
    fn result(&self, output: crate::output::CallOutput) -> CallToolResult {
        let output = match self.host.upgrade() {
            Some(host) => host
                .gate()
                .result(&self.tool, crate::bounds::MAX_RESULT_BYTES, output),
            None => crate::output::CallOutput::default(),
        };
        let mut result: CallToolResult = mcp::to_mcp(output);
        if let Some(meta) = result.meta.as_mut() {
            meta.remove(RELATED_TASK);
        }
        result
    }

    fn failed(&self, why: &str) -> McpError {
        let text = self
            .host
            .upgrade()
            .map(|h| h.gate().text(why))
            .unwrap_or_default();
        McpError::internal_error(text, None)
    }
}

/// A server's task the host follows: cancelled on the server too when the
/// host's is given up (cancelled, out of time, the host stopped) before
/// the server ended it.
struct Following {
    server: Arc<Upstream>,
    remote: String,
    cancel: bool,
}

impl Drop for Following {
    fn drop(&mut self) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        if !self.cancel {
            return;
        }
        let (server, remote) = (self.server.clone(), std::mem::take(&mut self.remote));
        runtime.spawn(async move {
            if let Err(e) = server
                .task_request("tasks/cancel", json!({"taskId": remote}))
                .await
            {
                tracing::debug!("a task given up was not cancelled upstream: {e}");
            }
        });
    }
}

/// Where a task's questions wait: its `inputRequests`, until the client
/// answers them with `tasks/update`.
struct TaskInputs(TaskContext);

impl Waits for TaskInputs {
    fn wait(&self, key: String, shown: InputRequest) -> Waiting<'_> {
        Box::pin(async move {
            self.0
                .request_input(key, shown)
                .await
                .map_err(|_| Unanswered::Failed("the task was cancelled".into()))
        })
    }
}
