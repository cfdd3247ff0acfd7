//! MCP 2025-11-25's experimental tasks, proxied: a task-augmented
//! `tools/call` of an upstream tool that may run as a task starts it on
//! its server (`Toolhost::start_task`), and the session's `tasks/get`,
//! `tasks/result`, `tasks/cancel` and `tasks/list` go to the server that
//! owns each task.
//!
//! A session reaches only the tasks it started: each is kept in the
//! session's own table ([`Tasks`]) under an id the host makes (128 random
//! bits), never the server's, so an id from another session, or a server's
//! id guessed, names nothing here and is refused. Every task id in what is
//! sent back (the task, a result's related-task `_meta`) is the session's.
//! A server's `notifications/tasks/status` of a task reach the session
//! holding it, under the session's id and through the gate, one at a time
//! per task: a status sent while the one before is still going out
//! replaces any other waiting, so a server flooding statuses to a client
//! that does not read holds one per task, not a queue ([`Watcher`]).
//!
//! Each status a task is seen reach (its server's answer to the call, to
//! `tasks/get` and `tasks/cancel`, its status notifications) is counted
//! once in `/metrics` ([`Seen`]).
//!
//! A session holds at most [`MAX_LIVE_TASKS`] tasks, each until its time
//! to live (the server's `ttl`, at most [`MAX_TASK_TTL`]) ends: a task
//! beyond is refused before it starts, so a client cannot make the servers
//! hold work without bound through toolhost. What the servers answer
//! passes the gate, as a call's result does.
//!
//! Not here: the checks a call goes through before it starts (the
//! pipeline's), how the server's answers are read past rmcp
//! (`upstream::carried`), how the client's `params.task` is read past rmcp
//! (`wire`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use rmcp::ErrorData as McpError;
use rmcp::model::{CallToolResult, CustomNotification, ServerNotification};
use rmcp::service::{Peer, RoleServer};
use serde_json::{Value, json};

use super::metrics::{CallMetrics, task_status};
use crate::bounds::label;
use crate::output::mcp;
use crate::pipeline::Toolhost;
use crate::upstream::{Downstream, TaskWatcher, Upstream};

/// The most tasks one session holds at once.
pub(super) const MAX_LIVE_TASKS: usize = 16;

/// The longest a task is held for its session, whatever its server says.
pub(super) const MAX_TASK_TTL: Duration = Duration::from_secs(3600);

/// Where the related task of a result is named (MCP 2025-11-25).
const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// One task a session started.
struct Task {
    server: Arc<Upstream>,
    /// The server's id of it.
    remote: String,
    /// The tool it runs, for the gate's caps on its result.
    tool: String,
    until: Instant,
    seen: Arc<Seen>,
}

/// The status a task was last seen in, counted as it changes.
struct Seen {
    metrics: Arc<CallMetrics>,
    last: Mutex<&'static str>,
}

impl Seen {
    /// The task is in the status `task` (a `Task` object) says: counted if
    /// that is new.
    fn saw(&self, task: &Value) {
        let status = task_status(task.get("status").and_then(Value::as_str));
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        if std::mem::replace(&mut *last, status) != status {
            self.metrics.task(status);
        }
    }
}

/// The tasks of one session, by the id the session knows each by.
pub(super) struct Tasks {
    held: Mutex<Held>,
    metrics: Arc<CallMetrics>,
}

#[derive(Default)]
struct Held {
    tasks: HashMap<String, Task>,
    /// Places taken by tasks being started.
    starting: usize,
}

impl Held {
    /// Let go of the tasks whose time to live has ended.
    fn expire(&mut self) {
        let now = Instant::now();
        self.tasks.retain(|_, task| {
            let live = task.until > now;
            if !live {
                task.server.disown_task(&task.remote);
            }
            live
        });
    }
}

/// A session that ends lets go of its tasks: their statuses go nowhere.
impl Drop for Tasks {
    fn drop(&mut self) {
        for task in self.held().tasks.values() {
            task.server.disown_task(&task.remote);
        }
    }
}

/// Where a server's status of one task goes: its session, under the
/// session's id, one at a time.
struct Watcher {
    local: String,
    peer: Peer<RoleServer>,
    /// Weak: the host holds the servers that hold this.
    host: Weak<Toolhost>,
    /// The status waiting to be sent, and whether one is being sent.
    slot: Mutex<(Option<Value>, bool)>,
    seen: Arc<Seen>,
}

impl TaskWatcher for Watcher {
    fn status(self: Arc<Self>, mut status: Value) {
        self.seen.saw(&status);
        status["taskId"] = Value::String(self.local.clone());
        let mut slot = self.slot.lock().unwrap_or_else(PoisonError::into_inner);
        slot.0 = Some(status);
        if std::mem::replace(&mut slot.1, true) {
            return;
        }
        drop(slot);
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        runtime.spawn(async move {
            loop {
                let next = {
                    let mut slot = self.slot.lock().unwrap_or_else(PoisonError::into_inner);
                    let next = slot.0.take();
                    slot.1 = next.is_some();
                    next
                };
                let Some(status) = next else { return };
                let Some(status) = self.host.upgrade().and_then(|h| h.gate().message(status)) else {
                    continue;
                };
                let notification = CustomNotification::new("notifications/tasks/status", Some(status));
                let _ = self
                    .peer
                    .send_notification(ServerNotification::CustomNotification(notification))
                    .await;
            }
        });
    }
}

/// A place in a session's table, taken before its task starts and
/// released if it does not.
pub(super) struct Place<'a> {
    tasks: &'a Tasks,
    taken: bool,
}

impl Drop for Place<'_> {
    fn drop(&mut self) {
        if self.taken {
            self.tasks.held().starting -= 1;
        }
    }
}

impl Tasks {
    /// A session's table, its tasks counted in `metrics`.
    pub(super) fn new(metrics: Arc<CallMetrics>) -> Self {
        Self {
            held: Mutex::default(),
            metrics,
        }
    }

    fn held(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A place for one more task, or why there is none.
    pub(super) fn place(&self) -> Result<Place<'_>, McpError> {
        let mut held = self.held();
        held.expire();
        if held.tasks.len() + held.starting >= MAX_LIVE_TASKS {
            return Err(McpError::invalid_request(
                format!(
                    "this session holds {MAX_LIVE_TASKS} tasks, the most toolhost keeps: \
                     wait for one to end (its ttl) or cancel one"
                ),
                None,
            ));
        }
        held.starting += 1;
        Ok(Place {
            tasks: self,
            taken: true,
        })
    }

    /// Keep the task `created` (the server's `CreateTaskResult`) in
    /// `place`, and answer it under the session's own id.
    pub(super) fn keep(
        &self,
        mut place: Place<'_>,
        (server, tool): (Arc<Upstream>, &str),
        (host, peer): (&Arc<Toolhost>, Peer<RoleServer>),
        mut created: Value,
    ) -> Result<Value, McpError> {
        let task = created
            .get_mut("task")
            .ok_or_else(|| not_a_task(&server, "tools/call"))?;
        let remote = remote_id(task).ok_or_else(|| not_a_task(&server, "tools/call"))?;
        let ttl = task.get("ttl").and_then(Value::as_u64).map(Duration::from_millis);
        let local = new_id()?;
        task["taskId"] = Value::String(local.clone());
        let seen = Arc::new(Seen {
            metrics: self.metrics.clone(),
            last: Mutex::new(""),
        });
        seen.saw(task);
        server.own_task(
            &remote,
            Arc::new(Watcher {
                local: local.clone(),
                peer,
                host: Arc::downgrade(host),
                slot: Mutex::default(),
                seen: seen.clone(),
            }),
        );
        let mut held = self.held();
        place.taken = false;
        held.starting -= 1;
        held.tasks.insert(
            local,
            Task {
                server,
                remote,
                tool: tool.to_owned(),
                until: Instant::now() + ttl.map_or(MAX_TASK_TTL, |t| t.min(MAX_TASK_TTL)),
                seen,
            },
        );
        Ok(created)
    }

    /// The task the session knows as `params.taskId`.
    fn find(&self, params: &Value) -> Result<Found, McpError> {
        let local = params
            .get("taskId")
            .and_then(Value::as_str)
            .ok_or_else(|| McpError::invalid_params("`taskId` is missing", None))?;
        let held = self.held();
        let task = held
            .tasks
            .get(local)
            .filter(|task| task.until > Instant::now())
            .ok_or_else(|| {
                McpError::invalid_params(format!("no task {} in this session", label(local)), None)
            })?;
        Ok(Found {
            local: local.to_owned(),
            server: task.server.clone(),
            remote: task.remote.clone(),
            tool: task.tool.clone(),
            seen: task.seen.clone(),
        })
    }

    /// Answer `tasks/get` or `tasks/cancel` (`method`) of one of the
    /// session's tasks.
    pub(super) async fn status(
        &self,
        host: &Toolhost,
        method: &str,
        params: &Value,
    ) -> Result<Value, McpError> {
        let Found {
            local,
            server,
            remote,
            seen,
            ..
        } = self.find(params)?;
        let mut answer = server
            .task_request(method, json!({"taskId": remote}))
            .await
            .map_err(|e| McpError::internal_error(host.gate().text(&e.to_string()), None))?;
        if remote_id(&answer).as_deref() != Some(remote.as_str()) {
            return Err(not_a_task(&server, method));
        }
        seen.saw(&answer);
        answer["taskId"] = Value::String(local);
        gated(host, answer)
    }

    /// Answer `tasks/result` of one of the session's tasks: the call's
    /// result through the gate, its related task the session's id.
    pub(super) async fn result(
        &self,
        host: &Toolhost,
        params: &Value,
        caller: Arc<dyn Downstream>,
    ) -> Result<Value, McpError> {
        let Found {
            local,
            server,
            remote,
            tool,
            ..
        } = self.find(params)?;
        let output = server
            .task_result(&remote, Some(caller))
            .await
            .map_err(|e| McpError::internal_error(host.gate().text(&e.to_string()), None))?;
        // An upstream tool's result: the host's cap, as for its calls.
        let output = host.gate().result(&tool, crate::bounds::MAX_RESULT_BYTES, output);
        let mut result: CallToolResult = mcp::to_mcp(output);
        if let Some(related) = result.meta.as_mut().and_then(|m| m.get_mut(RELATED_TASK)) {
            *related = json!({"taskId": local});
        }
        serde_json::to_value(result).map_err(|e| McpError::internal_error(e.to_string(), None))
    }

    /// Answer `tasks/list`: the session's own tasks, each as its server
    /// says it is now (one that it no longer knows is left out).
    pub(super) async fn list(&self, host: &Toolhost) -> Result<Value, McpError> {
        let ids: Vec<String> = {
            let mut held = self.held();
            held.expire();
            held.tasks.keys().cloned().collect()
        };
        // Asked at once, so the list waits for the slowest server's
        // deadline, not the sum of them.
        let params: Vec<Value> = ids.iter().map(|id| json!({ "taskId": id })).collect();
        let asked = params.iter().map(|p| self.status(host, "tasks/get", p));
        let tasks: Vec<Value> = futures::future::join_all(asked)
            .await
            .into_iter()
            .filter_map(Result::ok)
            .collect();
        Ok(json!({ "tasks": tasks }))
    }
}

/// A task of the session, as a request about it needs it.
struct Found {
    local: String,
    server: Arc<Upstream>,
    remote: String,
    tool: String,
    seen: Arc<Seen>,
}

/// The server's task id in `task` (a `Task` object), if it is one (ids are
/// short: one of over 256 bytes is no id, and would be held per task).
fn remote_id(task: &Value) -> Option<String> {
    let id = task.get("taskId")?.as_str()?;
    (!id.is_empty() && id.len() <= crate::bounds::MAX_TOOL_NAME * 4).then(|| id.to_owned())
}

fn not_a_task(server: &Upstream, method: &str) -> McpError {
    McpError::internal_error(
        format!(
            "upstream `{}` answered {method} with something other than its task",
            server.config.name
        ),
        None,
    )
}

fn gated(host: &Toolhost, answer: Value) -> Result<Value, McpError> {
    host.gate()
        .message(answer)
        .ok_or_else(|| McpError::internal_error("withheld: it held a secret value the host holds", None))
}

/// A task id no one can guess: 128 random bits, in hex.
fn new_id() -> Result<String, McpError> {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 16];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| McpError::internal_error("the system's random source failed", None))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
