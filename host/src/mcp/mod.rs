//! The MCP front, on the official Rust SDK (`rmcp`): `tools/list` is the
//! enriched listing (with each tool's title, output schema and
//! annotations), `tools/call` runs the pipeline. The system-prompt sections
//! of the tools are the initialize result's `instructions` and the
//! `system-prompt` prompt, beside the upstream servers' instructions and
//! prompts.
//!
//! A client's `notifications/cancelled` cancels the call's token; progress
//! a tool reports is sent as `notifications/progress` when the request
//! carried a progress token, bounded per call (`progress`). Tool
//! failures are results with `isError` (the model reads them); only
//! malformed requests are protocol errors.
//! Serves stdio ([`serve_stdio`]) and streamable HTTP at `/mcp`
//! ([`serve_http`]). Owns the protocol mapping, not the pipeline.
//!
//! Protocol revisions up to 2026-07-28 are served (`revision` says what
//! differs). `tools/list_changed`: up to 2025-11-25, every client session
//! that has sent `initialized` is remembered (one over stdio, one per HTTP
//! session) until it ends, when its server is dropped; each time the host
//! rebuilds its catalog every session still open is sent the notification.
//! HTTP sessions are capped in count (`sessions`). A 2026-07-28 client
//! has no session: it is told on the `subscriptions/listen` stream it
//! opens.
//!
//! Upstream servers pass through whole: tools with every field, results
//! with every content kind (`output::mcp` maps them), and their prompts,
//! resources, templates, completions and instructions (routed by
//! `upstream`'s gateway). Prompt and resource list changes go to every open session;
//! a resource update goes to the sessions subscribed to it: a URI's first
//! subscriber forwards the subscription upstream, and it is withdrawn when
//! its last subscriber unsubscribes or an update finds every subscribed
//! session closed.
//!
//! An upstream server's elicitation, sampling and roots requests during a
//! call are relayed to the session that made it: each call carries that
//! session (`asked`), and `upstream`'s relay decides who is asked. A
//! 2026-07-28 client, which takes no requests, is asked through its
//! call's `input_required` result and answers by calling again
//! (`round_trips`).
//!
//! MCP 2025-11-25's tasks of upstream tools are served where sessions are
//! (stdio, HTTP sessions): a task-augmented `tools/call` starts one, and
//! `tasks/*` reach the server owning each of the session's tasks (`tasks`).
//! There too, 2026-07-28's tasks extension: a declaring client's call of a
//! task tool becomes a task of the host's, bound to its caller
//! (`task_extension`).
//!
//! Each call carries its [`Caller`]: over HTTP, the one `auth` put on the
//! request once its token was verified (anonymous without `[auth]`); on
//! stdio, the local user.
//!
//! `tools/list` serves a caller only the tools the policy could let them
//! call, if one decides (`Toolhost::lists`); a call it denies is a tool
//! error naming the rule, as any refused call is. rmcp's lookup of one
//! tool (`get_tool`) answers the same way, for the caller of the HTTP
//! request in scope (`request_caller`).
//!
//! `tools/list` serves the tools under the pin, if one is kept
//! (`Toolhost::served_tools`, `crate::pin`): each difference it newly holds
//! back is a warning in the clients' logs, under the logger `toolhost`.
//!
//! Logging: each session is sent the plugin and upstream log lines of a
//! [`ClientLog`] at the level it set with `logging/setLevel` (see
//! `client_log`). Over HTTP, requests pass `auth` first;
//! `/metrics` (`metrics`) counts the calls, and `/healthz` answers
//! probes. A call's log span carries the `traceparent` of its `_meta`.
//!
//! The front is this directory: the server, its transports (`stdio`,
//! `sessions`), what it bounds and counts (`progress`, `metrics`), the
//! calling session as upstream servers' requests reach it (`asked`; on
//! 2026-07-28, `round_trips` and `input_requests`), the revisions it
//! speaks (`revision`), who may call it over HTTP (`auth`), the log lines
//! it sends its clients (`client_log`), each session's tasks
//! (`tasks`), the host's tasks of the 2026-07-28 extension
//! (`task_extension`), what rmcp's types cannot say, carried on a session's
//! transport (`wire`), and its spans' OTLP export (`otlp`). What it serves
//! but does not own lives with its owner: requests MCP cannot read are
//! refused as `crate::malformed` says, the upstream servers' prompts and
//! resources are routed by `upstream`'s gateway, and a result's MCP form is
//! its type's (`output::mcp`, which the upstream client reads with too).

mod asked;
mod auth;
mod client_log;
mod connections;
mod first_write;
mod input_requests;
mod lines;
mod metrics;
mod otlp;
mod progress;
mod request_caller;
mod revision;
mod round_trips;
mod sessions;
mod stdio;
mod task_extension;
mod tasks;
mod telemetry;
mod wire;

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CompleteRequestParams, CompleteResult,
    ContentBlock, CustomRequest, CustomResult, ErrorCode, GetPromptRequestParams, GetPromptResponse,
    GetPromptResult, Implementation, InitializeRequestParams, InitializeResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams, Prompt,
    PromptMessage, PromptsCapability, ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse,
    ResourceUpdatedNotificationParam, ResourcesCapability, Role, ServerCapabilities, ServerConfig,
    SubscribeRequestParams, SubscriptionFilter, Tool, UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, Peer, RequestContext, RoleServer, SubscriptionContext};
use rmcp::transport::streamable_http_server::StreamableHttpService;
use rmcp::{ErrorData as McpError, ServerHandler, ServiceExt};
use serde_json::Value;
use tokio::sync::{broadcast, watch};
use tracing::Instrument;

use crate::bounds::label;
use crate::output::{ToolError, mcp};
use crate::pipeline::{CallControl, Caller, Toolhost, error_text};
use crate::plugin::{LogLevel, LogLine};
use crate::prompt::PROMPT_NAME;
use crate::upstream::{Downstream, GatewayError, Notice, merge_instructions, session_slots};
use client_log::SessionLog;
use sessions::CappedSessions;

pub use auth::{AuthConfig, HttpAccess};
pub use client_log::ClientLog;
pub use otlp::{OtlpError, OtlpSettings, SpanExport};

/// The sessions that have sent `initialized`, by session number.
type SessionList = Mutex<HashMap<u64, Peer<RoleServer>>>;
type Sessions = Arc<SessionList>;
/// URI → the sessions subscribed to it, by session number.
type SubscriptionMap = Mutex<HashMap<String, HashMap<u64, Peer<RoleServer>>>>;
type Subscriptions = Arc<SubscriptionMap>;

/// The MCP server over one [`Toolhost`]; its copies (one per HTTP
/// session, [`McpServer::session`]) share the sessions told of changes,
/// each with its own log level.
pub struct McpServer {
    host: Arc<Toolhost>,
    sessions: Sessions,
    subscriptions: Subscriptions,
    /// This session's number, for its resource subscriptions.
    session: u64,
    next_session: Arc<AtomicU64>,
    log: ClientLog,
    session_log: SessionLog,
    metrics: Arc<metrics::CallMetrics>,
    /// Where the requests' spans are exported, with `[telemetry]`.
    spans: Option<Arc<SpanExport>>,
    /// Who calls when a request carries no verified caller: the local
    /// user on stdio, nobody known over HTTP without `[auth]`.
    caller: Caller,
    /// The differences the pin holds that the clients' logs were told of.
    held_told: Arc<Mutex<BTreeSet<String>>>,
    /// This session's upstream requests in flight (`asked`).
    relayed: Arc<tokio::sync::Semaphore>,
    /// Whether tasks are served: only where a session's transport carries
    /// what rmcp's types lack (`wire`).
    serves_tasks: bool,
    /// This session's tasks (`tasks`).
    tasks: Arc<tasks::Tasks>,
    /// The host's tasks of 2026-07-28's extension, for every session and
    /// request (`task_extension`).
    host_tasks: Arc<task_extension::HostTasks>,
    /// The calls of 2026-07-28 clients parked on a question
    /// (`round_trips`).
    round_trips: Arc<round_trips::RoundTrips>,
    /// Serving the host's only client (stdio): once it has initialized,
    /// the session as the upstream servers' `roots/list` reaches it. Held
    /// here: the relays keep it weakly, since it holds the host that holds
    /// them.
    sole: Option<OnceLock<Arc<dyn Downstream>>>,
}

impl McpServer {
    /// Must run inside a Tokio runtime: it starts the tasks that tell the
    /// sessions of changes, which end with the last copy. Clients are sent
    /// the lines of `log`.
    pub fn new(host: Arc<Toolhost>, log: ClientLog) -> Self {
        let sessions: Sessions = Arc::default();
        let subscriptions: Subscriptions = Arc::default();
        tokio::spawn(announce(host.subscribe(), Arc::downgrade(&sessions)));
        tokio::spawn(relay(
            host.gateway().notices(),
            Arc::downgrade(&host),
            Arc::downgrade(&sessions),
            Arc::downgrade(&subscriptions),
        ));
        let session_log = log.session();
        let metrics = metrics::CallMetrics::new();
        Self {
            host,
            sessions,
            subscriptions,
            session: 0,
            next_session: Arc::new(AtomicU64::new(1)),
            log,
            session_log,
            metrics: metrics.clone(),
            spans: None,
            caller: Caller::unauthenticated(),
            held_told: Arc::default(),
            relayed: session_slots(),
            serves_tasks: false,
            tasks: Arc::new(tasks::Tasks::new(metrics.clone())),
            host_tasks: Arc::new(task_extension::HostTasks::new(metrics)),
            round_trips: Arc::default(),
            sole: None,
        }
    }

    /// The same server, serving the host's only client: what the upstream
    /// servers ask of their client outside any call (their roots) is its.
    fn serving_alone(mut self) -> Self {
        self.sole = Some(OnceLock::new());
        self
    }

    /// The same server, serving tasks (its transports carry them: `wire`).
    fn serving_tasks(mut self) -> Self {
        self.serves_tasks = true;
        self
    }

    /// The same server, exporting its requests' spans to `spans`.
    fn exporting(mut self, spans: Option<Arc<SpanExport>>) -> Self {
        self.spans = spans;
        self
    }

    /// The same server, whose callers are `caller` unless a request's
    /// verified token says otherwise.
    fn called_by(mut self, caller: Caller) -> Self {
        self.caller = caller;
        self
    }

    /// The server for one more client session, sharing everything else.
    pub fn session(&self) -> Self {
        Self {
            host: self.host.clone(),
            sessions: self.sessions.clone(),
            subscriptions: self.subscriptions.clone(),
            session: self.next_session.fetch_add(1, Ordering::Relaxed),
            next_session: self.next_session.clone(),
            log: self.log.clone(),
            session_log: self.log.session(),
            metrics: self.metrics.clone(),
            spans: self.spans.clone(),
            caller: self.caller.clone(),
            held_told: self.held_told.clone(),
            relayed: session_slots(),
            serves_tasks: self.serves_tasks,
            tasks: Arc::new(tasks::Tasks::new(self.metrics.clone())),
            host_tasks: self.host_tasks.clone(),
            round_trips: self.round_trips.clone(),
            sole: None,
        }
    }

    /// The tools served to `caller` (under the pin, if one is kept, and
    /// the policy, if one decides); each difference the pin newly holds
    /// back is told to the clients' logs.
    fn tools(&self, caller: &Caller) -> Vec<Tool> {
        let served = self.host.served_tools();
        let held: BTreeSet<String> = served.held().map(|d| d.summary()).collect();
        let mut told = self.held_told.lock().unwrap_or_else(PoisonError::into_inner);
        for difference in served.held().filter(|d| !told.contains(&d.summary())) {
            self.log.tell(LogLine {
                plugin: "toolhost".into(),
                level: LogLevel::Warn,
                stream: "log",
                message: format!("held back by the pin (`toolhost pin --review`): {difference}"),
            });
        }
        *told = held;
        drop(told);
        let mut tools = served.tools.clone();
        tools.retain(|t| self.host.lists(caller, &t.name));
        tools
    }

    /// The caller `auth` established for this HTTP request, else the
    /// session's: never anything the request says of itself.
    fn caller(&self, context: &RequestContext<RoleServer>) -> Caller {
        context
            .extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Caller>())
            .unwrap_or(&self.caller)
            .clone()
    }

    /// The session of the request `context`, as an upstream server's
    /// requests during it reach it (`asked`).
    fn calling(&self, context: &RequestContext<RoleServer>) -> Arc<asked::CallingClient> {
        Arc::new(asked::CallingClient {
            peer: context.peer.clone(),
            call: Some(context.id.clone()),
            slots: self.relayed.clone(),
            host: self.host.clone(),
        })
    }

    /// A task-augmented `tools/call` (`task` its `params.task`): a place in
    /// the session's tasks taken first, then the call started as a task of
    /// its upstream server, answered with its `CreateTaskResult` (`wire`
    /// sends it as that) under the session's own task id.
    async fn start_task(
        &self,
        request: CallToolRequestParams,
        task: Value,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let place = self.tasks.place()?;
        let mut ctx = CallControl::new(context.id.to_string())
            .with_caller(self.caller(&context))
            .from_client(self.calling(&context));
        ctx.cancel = context.ct.clone();
        let args = request.arguments.map(Value::Object).unwrap_or(Value::Null);
        let (server, created) = self
            .host
            .start_task(&request.name, args, task, &ctx)
            .await
            .map_err(|e| McpError::invalid_request(error_text(&e), None))?;
        let created = self.tasks.keep(
            place,
            (server, &request.name),
            (&self.host, context.peer.clone()),
            created,
        )?;
        let mut result = CallToolResult::default();
        result.meta = Some(rmcp::model::MetaObject(serde_json::Map::from_iter([(
            wire::CREATED_KEY.to_owned(),
            created,
        )])));
        Ok(result.into())
    }

    /// A `tools/call` of a 2026-07-28 client that declared the tasks
    /// extension, of an upstream tool that may run as a task: started as
    /// a task of its server, checked as any call is, and answered with the
    /// host's task driving it (`task_extension`).
    async fn start_extension_task(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let caller = self.caller(&context);
        let room = self.host_tasks.room_for(&caller)?;
        let mut ctx = CallControl::new(context.id.to_string())
            .with_caller(caller.clone())
            .from_client(self.calling(&context));
        ctx.cancel = context.ct.clone();
        let args = request.arguments.map(Value::Object).unwrap_or(Value::Null);
        // The server's task lives as long as the host's may.
        let task = serde_json::json!({"ttl": tasks::MAX_TASK_TTL.as_millis() as u64});
        let (server, created) = self
            .host
            .start_task(&request.name, args, task, &ctx)
            .await
            .map_err(|e| McpError::invalid_request(error_text(&e), None))?;
        let started = task_extension::Started {
            server,
            tool: request.name.to_string(),
            created,
            capabilities: context.client_capabilities(),
        };
        Ok(self.host_tasks.start(&self.host, room, started)?.into())
    }

    /// Whether the extension's tasks are served: where sessions are (as
    /// 2025-11-25's), and while a tool served may run as a task.
    fn serves_extension_tasks(&self) -> bool {
        self.serves_tasks && wire::tasks_served(&wire::executions(&self.host)())
    }

    /// How tool `name` may run as a task, as its upstream server says.
    fn task_support(&self, name: &str) -> Option<crate::tool::TaskSupport> {
        let tools = self.host.list_tools();
        let tool = tools.tools.iter().find(|t| t.name == name)?;
        tool.meta.execution?.task_support
    }

    /// toolhost's own prompt: the system-prompt sections of its tools.
    fn system_prompt(&self) -> Prompt {
        let mut prompt = Prompt::new(
            PROMPT_NAME,
            Some("The tools available and the guidelines for them, for an agent's system prompt"),
            None,
        );
        prompt.title = Some("toolhost system prompt".into());
        prompt
    }

    /// The instructions served in `initialize`: toolhost's system-prompt
    /// sections, then each upstream server's instructions. They are built
    /// before any request of the session is seen, so under a policy they
    /// name only what the session's default caller may be listed (over
    /// HTTP, the unauthenticated one): the prompt names the rest to each.
    /// Both parts have passed the gate: the sections are made of the gated
    /// listing, and the gateway gates what the servers say.
    pub fn instructions(&self) -> Option<String> {
        merge_instructions(
            Some(&self.host.system_prompt_for(&self.caller)),
            &self.host.gateway().instructions(),
        )
    }
}

/// A request the gateway could not serve, as a protocol error (its text
/// passed the gate in the gateway).
fn gateway_error(e: GatewayError) -> McpError {
    let code = match e {
        GatewayError::UnknownPrompt(_) | GatewayError::UnknownResource(_) => ErrorCode::INVALID_PARAMS,
        GatewayError::NoSubscriptions(_) | GatewayError::Unsupported(_) => ErrorCode::METHOD_NOT_FOUND,
        GatewayError::Upstream(_) | GatewayError::Withheld => ErrorCode::INTERNAL_ERROR,
    };
    McpError::new(code, e.to_string(), None)
}

/// A session's server is dropped when its session ends (`DELETE`, idle
/// expiry, closed transport): what was kept for it goes with it, so a
/// closed session holds no memory until the next catalog rebuild.
impl Drop for McpServer {
    fn drop(&mut self) {
        self.sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.session);
        let abandoned: Vec<String> = {
            let mut all = self.subscriptions.lock().unwrap_or_else(PoisonError::into_inner);
            let mut abandoned = Vec::new();
            all.retain(|uri, peers| {
                let left = peers.remove(&self.session).is_none() || !peers.is_empty();
                if !left {
                    abandoned.push(uri.clone());
                }
                left
            });
            abandoned
        };
        // A URI this session was the last to follow is withdrawn upstream.
        if !abandoned.is_empty()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            let host = Arc::downgrade(&self.host);
            runtime.spawn(async move {
                let Some(host) = host.upgrade() else { return };
                for uri in abandoned {
                    if let Err(e) = host.gateway().unsubscribe(&uri).await {
                        tracing::debug!("{uri}: not unsubscribed: {e}");
                    }
                }
            });
        }
    }
}

/// Tell the sessions of the gateway's changes: list changes to every open
/// session, a resource update to those subscribed to it. A URI whose
/// subscribers have all gone is unsubscribed upstream.
async fn relay(
    mut notices: broadcast::Receiver<Notice>,
    host: Weak<Toolhost>,
    sessions: Weak<SessionList>,
    subscriptions: Weak<SubscriptionMap>,
) {
    loop {
        let notice = match notices.recv().await {
            Ok(notice) => notice,
            Err(broadcast::error::RecvError::Lagged(n)) => {
                tracing::warn!("{n} upstream notices dropped: clients were too slow");
                continue;
            }
            Err(broadcast::error::RecvError::Closed) => return,
        };
        let (Some(sessions), Some(subscriptions)) = (sessions.upgrade(), subscriptions.upgrade()) else {
            return;
        };
        match notice {
            Notice::PromptsChanged => {
                for peer in open_sessions(&sessions) {
                    let _ = peer.notify_prompt_list_changed().await;
                }
            }
            Notice::ResourcesChanged => {
                for peer in open_sessions(&sessions) {
                    let _ = peer.notify_resource_list_changed().await;
                }
            }
            Notice::ResourceUpdated(uri) => {
                let (subscribed, abandoned) = {
                    let mut all = subscriptions.lock().unwrap_or_else(PoisonError::into_inner);
                    match all.get_mut(&uri) {
                        Some(peers) => {
                            peers.retain(|_, peer| !peer.is_transport_closed());
                            let subscribed: Vec<_> = peers.values().cloned().collect();
                            if subscribed.is_empty() {
                                all.remove(&uri);
                            }
                            (subscribed.clone(), subscribed.is_empty())
                        }
                        None => (Vec::new(), false),
                    }
                };
                for peer in subscribed {
                    let _ = peer
                        .notify_resource_updated(ResourceUpdatedNotificationParam::new(uri.clone()))
                        .await;
                }
                if abandoned
                    && let Some(host) = host.upgrade()
                    && let Err(e) = host.gateway().unsubscribe(&uri).await
                {
                    tracing::debug!("{uri}: not unsubscribed: {e}");
                }
            }
        }
    }
}

/// The sessions whose transport is open.
fn open_sessions(all: &SessionList) -> Vec<Peer<RoleServer>> {
    let mut all = all.lock().unwrap_or_else(PoisonError::into_inner);
    all.retain(|_, peer| !peer.is_transport_closed());
    all.values().cloned().collect()
}

/// Send `tools/list_changed` to every open session on each rebuild.
async fn announce(mut rebuilt: watch::Receiver<u64>, sessions: Weak<SessionList>) {
    while rebuilt.changed().await.is_ok() {
        let Some(sessions) = sessions.upgrade() else {
            return;
        };
        for peer in open_sessions(&sessions) {
            if let Err(e) = peer.notify_tool_list_changed().await {
                tracing::debug!("tools/list_changed not sent: {e}");
            }
        }
    }
}

impl ServerHandler for McpServer {
    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        // Log lines leave through the gate of the catalog current as each
        // is sent.
        let host = Arc::downgrade(&self.host);
        let gate = move |text: &str| host.upgrade().map(|h| h.gate().text(text)).unwrap_or_default();
        self.session_log.follow(context.peer.clone(), Arc::new(gate));
        self.sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(self.session, context.peer.clone());
        if let Some(sole) = &self.sole {
            let declares_roots = context
                .peer
                .peer_info()
                .is_some_and(|info| info.capabilities.roots.is_some());
            let client: Arc<dyn Downstream> = Arc::new(asked::CallingClient {
                peer: context.peer,
                call: None,
                slots: self.relayed.clone(),
                host: self.host.clone(),
            });
            let client = sole.get_or_init(|| client);
            self.host.gateway().serve_alone(Arc::downgrade(client));
            // The servers asked as they started, before the client came.
            if declares_roots {
                self.host.gateway().roots_changed().await;
            }
        }
    }

    /// The sole client's roots changed: its servers are told. Where the
    /// host serves many clients, no server keeps one client's roots.
    async fn on_roots_list_changed(&self, _context: NotificationContext<RoleServer>) {
        if self.sole.is_some() {
            self.host.gateway().roots_changed().await;
        }
    }

    /// The instructions are the system-prompt sections as of the session's
    /// start; the `system-prompt` prompt is rebuilt on each request.
    #[allow(deprecated)] // rmcp marks MCP logging deprecated (SEP-2577); clients still use it.
    fn get_info(&self) -> ServerConfig {
        let gateway = self.host.gateway();
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_prompts()
            .enable_logging()
            .build();
        if gateway.has_prompts() {
            let mut prompts = PromptsCapability::default();
            prompts.list_changed = Some(true);
            capabilities.prompts = Some(prompts);
        }
        if gateway.has_resources() {
            let mut resources = ResourcesCapability::default();
            resources.list_changed = Some(true);
            resources.subscribe = gateway.has_subscriptions().then_some(true);
            capabilities.resources = Some(resources);
        }
        if gateway.has_completions() {
            capabilities.completions = Some(serde_json::Map::new());
        }
        if self.serves_extension_tasks() {
            capabilities
                .extensions
                .get_or_insert_default()
                .insert(rmcp::model::TASKS_EXTENSION_ID.to_owned(), serde_json::Map::new());
        }
        let mut config = ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("toolhost", env!("CARGO_PKG_VERSION")));
        config.instructions = self.instructions();
        config
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        telemetry::Request::start("prompts/list", None, &context, self.spans.as_ref())
            .run(&self.metrics, async move {
                let mut prompts = vec![self.system_prompt()];
                prompts.extend(self.host.gateway().list_prompts().map_err(gateway_error)?);
                Ok(ListPromptsResult::with_all_items(prompts))
            })
            .await
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        telemetry::Request::start("prompts/get", None, &context, self.spans.as_ref())
            .run(&self.metrics, async move {
            if request.name != PROMPT_NAME {
                let name = label(&request.name).into_owned();
                return match self.host.gateway().get_prompt(request).await {
                    Ok(result) => Ok(result.into()),
                    Err(GatewayError::UnknownPrompt(_)) => Err(McpError::invalid_params(
                        format!(
                            "no prompt named `{name}`: toolhost serves `{PROMPT_NAME}` and its upstreams' prompts"
                        ),
                        None,
                    )),
                    Err(e) => Err(gateway_error(e)),
                };
            }
            let text = self.host.system_prompt_for(&self.caller(&context));
            let description = self.system_prompt().description.unwrap_or_default();
            Ok(
                GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)])
                    .with_description(description)
                    .into(),
            )
            })
            .await
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        telemetry::Request::start("initialize", None, &context, self.spans.as_ref())
            .run(&self.metrics, async move {
                // rmcp's own initialize, which this one only traces.
                context.peer.set_peer_info(request.clone());
                self.negotiate_initialize(&request)
            })
            .await
    }

    async fn ping(&self, context: RequestContext<RoleServer>) -> Result<(), McpError> {
        telemetry::Request::start("ping", None, &context, self.spans.as_ref())
            .run(&self.metrics, async { Ok(()) })
            .await
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        revision::supported()
    }

    fn accepted_subscription_filter(&self, requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        revision::accepted(requested)
    }

    async fn listen(&self, subscription: SubscriptionContext) -> Result<(), McpError> {
        revision::listen(self.host.subscribe(), subscription).await
    }

    /// The served tool, against whose input schema rmcp checks a 2026-07-28
    /// HTTP request's `Mcp-Param-*` headers, if the request's caller may
    /// be listed it (as `tools/list` would): a tool hidden from a caller is
    /// not found for them either. rmcp asks on every HTTP `tools/call` of
    /// a 2026-07-28 client: only that one tool is converted, not the list.
    fn get_tool(&self, name: &str) -> Option<Tool> {
        let caller = request_caller::current().unwrap_or_else(|| self.caller.clone());
        if !self.host.lists(&caller, name) {
            return None;
        }
        if self.host.pin_settings().is_some() {
            let served = self.host.served_tools();
            return served.tools.iter().find(|t| t.name == name).cloned();
        }
        self.host
            .list_tools()
            .tools
            .iter()
            .find(|t| t.name == name)
            .map(|t| t.to_mcp())
    }

    #[allow(deprecated)] // rmcp marks MCP logging deprecated (SEP-2577); clients still use it.
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        telemetry::Request::start("logging/setLevel", None, &context, self.spans.as_ref())
            .run(&self.metrics, async move {
                self.session_log.set_level(request.level);
                Ok(())
            })
            .await
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        telemetry::Request::start("resources/list", None, &context, self.spans.as_ref())
            .run(&self.metrics, async move {
                Ok(ListResourcesResult::with_all_items(
                    self.host.gateway().list_resources().map_err(gateway_error)?,
                ))
            })
            .await
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        telemetry::Request::start("resources/templates/list", None, &context, self.spans.as_ref())
            .run(&self.metrics, async move {
                Ok(ListResourceTemplatesResult::with_all_items(
                    self.host
                        .gateway()
                        .list_resource_templates()
                        .map_err(gateway_error)?,
                ))
            })
            .await
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        telemetry::Request::start("resources/read", None, &context, self.spans.as_ref())
            .run(&self.metrics, async move {
                let result = self
                    .host
                    .gateway()
                    .read_resource(request)
                    .await
                    .map_err(gateway_error)?;
                Ok(result.into())
            })
            .await
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        telemetry::Request::start("completion/complete", None, &context, self.spans.as_ref())
            .run(&self.metrics, async move {
                self.host.gateway().complete(request).await.map_err(gateway_error)
            })
            .await
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        telemetry::Request::start("resources/subscribe", None, &context, self.spans.as_ref())
            .run(&self.metrics, async move {
                let uri = request.uri;
                let first = {
                    let mut all = self.subscriptions.lock().unwrap_or_else(PoisonError::into_inner);
                    let peers = all.entry(uri.clone()).or_default();
                    peers.retain(|_, peer| !peer.is_transport_closed());
                    let first = peers.is_empty();
                    peers.insert(self.session, context.peer);
                    first
                };
                if first && let Err(e) = self.host.gateway().subscribe(&uri).await {
                    let mut all = self.subscriptions.lock().unwrap_or_else(PoisonError::into_inner);
                    if let Some(peers) = all.get_mut(&uri) {
                        peers.remove(&self.session);
                        if peers.is_empty() {
                            all.remove(&uri);
                        }
                    }
                    return Err(gateway_error(e));
                }
                Ok(())
            })
            .await
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        telemetry::Request::start("resources/unsubscribe", None, &context, self.spans.as_ref())
            .run(&self.metrics, async move {
                let uri = request.uri;
                let last = {
                    let mut all = self.subscriptions.lock().unwrap_or_else(PoisonError::into_inner);
                    match all.get_mut(&uri) {
                        Some(peers) => {
                            peers.remove(&self.session);
                            peers.retain(|_, peer| !peer.is_transport_closed());
                            let last = peers.is_empty();
                            if last {
                                all.remove(&uri);
                            }
                            last
                        }
                        None => false,
                    }
                };
                if last {
                    self.host
                        .gateway()
                        .unsubscribe(&uri)
                        .await
                        .map_err(gateway_error)?;
                }
                Ok(())
            })
            .await
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        telemetry::Request::start("tools/list", None, &context, self.spans.as_ref())
            .run(&self.metrics, async move {
                let all = ListToolsResult::with_all_items(self.tools(&self.caller(&context)));
                Ok(revision::tools_list(all, context.protocol_version().as_ref()))
            })
            .await
    }

    /// 2025-11-25's `tasks/get`, `tasks/cancel`, `tasks/result` and
    /// `tasks/list`, of this session's tasks (`tasks`).
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, McpError> {
        let params = request.params.unwrap_or(Value::Null);
        // 2026-07-28 has its tasks extension instead, without `tasks/result`
        // and `tasks/list`.
        let legacy = !revision::sessionless(context.protocol_version().as_ref());
        let answer = match request.method.as_str() {
            "tasks/get" | "tasks/cancel" if self.serves_tasks && legacy => {
                self.tasks.status(&self.host, &request.method, &params).await
            }
            "tasks/result" if self.serves_tasks && legacy => {
                self.tasks
                    .result(&self.host, &params, self.calling(&context))
                    .await
            }
            "tasks/list" if self.serves_tasks && legacy => self.tasks.list(&self.host).await,
            method => match crate::malformed::invalid_params(method, &params) {
                Some(message) => Err(McpError::invalid_params(message, None)),
                None => Err(McpError::new(
                    ErrorCode::METHOD_NOT_FOUND,
                    format!("method {} is not served", label(method)),
                    None,
                )),
            },
        };
        answer.map(CustomResult)
    }

    async fn get_task(
        &self,
        request: rmcp::model::GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetTaskResult, McpError> {
        telemetry::Request::start("tasks/get", None, &context, self.spans.as_ref())
            .run(&self.metrics, async {
                let task = self.host_tasks.get(&self.caller(&context), &request.task_id)?;
                Ok(rmcp::model::GetTaskResult::new(task))
            })
            .await
    }

    async fn update_task(
        &self,
        request: rmcp::model::UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        telemetry::Request::start("tasks/update", None, &context, self.spans.as_ref())
            .run(&self.metrics, async {
                let caller = self.caller(&context);
                self.host_tasks
                    .update(&caller, &request.task_id, request.input_responses)
            })
            .await
    }

    async fn cancel_task(
        &self,
        request: rmcp::model::CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        telemetry::Request::start("tasks/cancel", None, &context, self.spans.as_ref())
            .run(&self.metrics, async {
                self.host_tasks.cancel(&self.caller(&context), &request.task_id)
            })
            .await
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let sessionless = revision::sessionless(context.protocol_version().as_ref());
        if sessionless && self.serves_tasks {
            // 2026-07-28 ignores a `params.task`: the server decides, for a
            // client that declared the extension.
            use crate::tool::TaskSupport;
            match self.task_support(&request.name) {
                Some(TaskSupport::Optional | TaskSupport::Required)
                    if context.client_capabilities().is_some_and(|c| c.supports_tasks()) =>
                {
                    return self.start_extension_task(request, context).await;
                }
                Some(TaskSupport::Required) => {
                    return Err(McpError::missing_required_client_capability(
                        rmcp::model::ClientCapabilities::builder().enable_tasks().build(),
                    ));
                }
                _ => {}
            }
        } else if !sessionless
            && self.serves_tasks
            && let Some(task) = context.meta.get(wire::TASK_KEY).cloned()
        {
            return self.start_task(request, task, context).await;
        }
        let caller = self.caller(&context);
        if sessionless && let Some(state) = request.request_state.as_deref() {
            let answers = request.input_responses.clone().unwrap_or_default();
            return self
                .round_trips
                .resume(&caller, &request.name, state, answers, &context.ct)
                .await;
        }
        // A 2026-07-28 client is asked the server's questions by the end of
        // its request (`round_trips`); an earlier one, on its session.
        let (client, questions): (Arc<dyn Downstream>, _) = if sessionless {
            let (asking, questions) = round_trips::asking(&self.host, context.client_capabilities());
            (asking, Some(questions))
        } else {
            (self.calling(&context), None)
        };
        let served =
            telemetry::Request::start("tools/call", Some(&request.name), &context, self.spans.as_ref());
        let mut ctx = CallControl::new(context.id.to_string())
            .with_caller(caller.clone())
            .from_client(client)
            .in_trace(served.trace());
        // A call parked on a question outlives its request: its own token,
        // cancelled by the client's only while a request of it is in hand.
        ctx.cancel = match questions {
            Some(_) => tokio_util::sync::CancellationToken::new(),
            None => context.ct.clone(),
        };
        let mut forwarder = None;
        if let Some(token) = context.meta.get_progress_token() {
            let (sink, sender) = progress::relay(context.peer.clone(), token, self.host.gate());
            ctx = ctx.with_progress(sink);
            forwarder = Some(sender);
        }
        let args = request.arguments.map(Value::Object).unwrap_or(Value::Null);
        let call = Call {
            host: self.host.clone(),
            metrics: self.metrics.clone(),
            served,
            forwarder,
            id: context.id.to_string(),
            name: request.name.to_string(),
        };
        let Some(questions) = questions else {
            return Ok(call.run(args, ctx).await.into());
        };
        let cancel = ctx.cancel.clone();
        let running = Box::pin(call.run(args, ctx));
        self.round_trips
            .run(&caller, &request.name, (running, cancel), questions, &context.ct)
            .await
    }
}

/// A `tools/call` in hand: what it is served with, and what it reports.
struct Call {
    host: Arc<Toolhost>,
    metrics: Arc<metrics::CallMetrics>,
    served: telemetry::Request,
    forwarder: Option<tokio::task::JoinHandle<()>>,
    id: String,
    name: String,
}

impl Call {
    /// Run it under `ctx`: its result as the client reads it, counted in
    /// the metrics and its span ended.
    async fn run(self, args: Value, ctx: CallControl) -> CallToolResult {
        let Call {
            host,
            metrics,
            served,
            forwarder,
            id,
            name,
        } = self;
        let started = std::time::Instant::now();
        let outcome = host
            .call_tool(&name, args, &ctx)
            .instrument(served.span().clone())
            .await;
        // Send the final progress notification before the result, which
        // ends the request: dropping the context closes the channel.
        drop(ctx);
        if let Some(forwarder) = forwarder {
            let _ = forwarder.await;
        }
        let mut result = match outcome {
            Ok(output) => mcp::to_mcp(output),
            Err(e) => {
                if matches!(e.error, ToolError::Cancelled) {
                    tracing::info!("call {id}: {} cancelled", label(&name));
                }
                CallToolResult::error(vec![ContentBlock::text(error_text(&e))])
            }
        };
        // The key is the handler's, for the tasks it starts: a result
        // carrying it would be sent as a task (`wire`).
        if let Some(meta) = result.meta.as_mut() {
            meta.remove(wire::CREATED_KEY);
        }
        // Labelled by name only for tools served: a client's made-up names
        // would grow the metrics without bound.
        let known = host.list_tools().tools.iter().any(|t| t.name == name);
        // The conventions' name for any other value of a bounded label,
        // the same in the host's counters and the conventions' histogram.
        let tool = if known { name.as_str() } else { "_OTHER" };
        let plugin = known.then(|| host.tool_plugin(&name)).flatten();
        let failed = result.is_error == Some(true);
        metrics.call(tool, plugin.as_deref(), started.elapsed(), failed);
        served.end(&metrics, Some(tool), failed.then_some(telemetry::TOOL_ERROR));
        result
    }
}

/// What the front reports besides its answers: the log lines sent to its
/// clients, and its requests' spans, exported with `[telemetry]`.
#[derive(Default)]
pub struct Reports {
    /// The log lines clients are sent.
    pub log: ClientLog,
    /// Where spans are exported; none, only logged.
    pub spans: Option<Arc<SpanExport>>,
}

/// Serve MCP on stdin and stdout until the client disconnects.
pub async fn serve_stdio(host: Arc<Toolhost>, reports: Reports) -> Result<(), ServeError> {
    let (reader, writer) = stdio::streams();
    let transport = wire::Wire::new(
        crate::lines::Lines::new(reader, writer, lines::ClientLines::default()),
        wire::executions(&host),
    );
    let running = McpServer::new(host, reports.log)
        .exporting(reports.spans)
        .called_by(Caller::local_user())
        .serving_tasks()
        .serving_alone()
        // rmcp spawns a task per request holding its handler's future, the
        // largest of all the handlers', and copies it whole as the task
        // finishes: boxed, the task holds a pointer. Those copies were 5 % of
        // a proxied call's host CPU (`memmove` 11 % -> 7 % in a perf profile
        // of `front --proxy-only`). The HTTP front cannot: rmcp wants a
        // `ServerHandler` there.
        .into_dyn()
        .serve(transport)
        .await
        .map_err(|e| ServeError::Initialize(Box::new(e)))?;
    running
        .waiting()
        .await
        .map_err(|e| ServeError::Session(Box::new(e)))?;
    Ok(())
}

/// Serving MCP over stdio ended other than by the client disconnecting.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The client never completed the MCP handshake.
    #[error("the MCP session did not start: {0}")]
    Initialize(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The task serving the session failed.
    #[error("the MCP session failed: {0}")]
    Session(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// Serve streamable HTTP at `http://ADDR/mcp` on `listener` (bound by the
/// caller, so that an address in use is told before anything is loaded)
/// until `shutdown` completes, behind `access` (its authorization and
/// accepted `Host` names), with `/metrics` behind the same, and `ok` at
/// `/healthz` to anyone. On shutdown, calls being answered are let finish
/// (for up to 20 s), and then the event streams are ended.
///
/// `stateless` (a replica of a cluster): no MCP session is kept, so that
/// any replica answers any request. It costs clients before 2026-07-28
/// every message sent outside a request's own response: `tools/list_changed`
/// and the other list changes, resource updates (so no `resources/subscribe`
/// is kept), and log lines outside a call; and `logging/setLevel` lasts for
/// its own request only. A call's progress still reaches its client, on its
/// response stream, and clients on 2026-07-28 are told of changes on the
/// `subscriptions/listen` stream they open on any replica.
pub async fn serve_http(
    host: Arc<Toolhost>,
    reports: Reports,
    listener: tokio::net::TcpListener,
    access: HttpAccess,
    stateless: bool,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let mut server = McpServer::new(host.clone(), reports.log).exporting(reports.spans);
    if !stateless {
        server = server.serving_tasks();
    }
    let drain = connections::Drain::default();
    let router = http_router(
        server,
        &access,
        stateless,
        CappedSessions::new(wire::executions(&host)),
        &drain,
    );
    connections::serve(listener, router, access.connections(), drain, shutdown).await;
}

/// The routes of `serve --http`: MCP at `/mcp` (its sessions kept in
/// `sessions`) and `/metrics`, both behind `access`, and `/healthz`.
fn http_router(
    server: McpServer,
    access: &HttpAccess,
    stateless: bool,
    sessions: Arc<CappedSessions>,
    drain: &connections::Drain,
) -> axum::Router {
    let (metrics, host) = (server.metrics.clone(), server.host.clone());
    let scrape = move || {
        let (metrics, host) = (metrics.clone(), host.clone());
        async move {
            (
                [(http::header::CONTENT_TYPE, metrics::CONTENT_TYPE)],
                metrics.render(&host).await,
            )
        }
    };
    let mut config = access.service_config();
    config.legacy_session_mode = !stateless;
    config.cancellation_token = drain.streams();
    let limit = config.max_request_body_bytes;
    let serves_tasks = server.serves_tasks;
    let service = StreamableHttpService::new(move || Ok(server.session()), sessions, config);
    let mcp = axum::Router::new()
        .nest_service("/mcp", service)
        // Inside `auth`'s check, which puts the caller on the request.
        .layer(axum::middleware::from_fn(move |request, next| {
            mcp_request(limit, serves_tasks, request, next)
        }));
    // `/healthz` answers without authorization: a balancer or an
    // orchestrator's probe asks whether the process serves, nothing more.
    access
        .protect(mcp.route("/metrics", access.guard_host(axum::routing::get(scrape))))
        .route("/healthz", axum::routing::get(|| async { "ok\n" }))
}

/// What toolhost adds to rmcp's answer of an `/mcp` request, in one layer
/// (each axum layer boxes the request's future and clones the service
/// behind it, on every request):
/// - it is served in the scope of its caller (`request_caller`);
/// - a POST's body is read once, its `params.task` carried, and a body that
///   is no message answered as one (`wire::read_post_body`);
/// - a session ended by the client's `DELETE` is answered 204 No Content,
///   where rmcp answers 202 Accepted: the session is gone when the answer
///   leaves, nothing is pending, and clients (the official Python SDK
///   among them) take only 200 or 204 as a session ended and warn
///   otherwise.
async fn mcp_request(
    limit: usize,
    carries_tasks: bool,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let ends = request.method() == http::Method::DELETE;
    let caller = request_caller::of(&request);
    let answered = wire::read_post_body(limit, carries_tasks, request, next);
    let mut response = request_caller::within(caller, answered).await;
    if ends && response.status() == http::StatusCode::ACCEPTED {
        *response.status_mut() = http::StatusCode::NO_CONTENT;
    }
    response
}

#[cfg(test)]
mod fuzz;
#[cfg(test)]
mod http_fuzz;
#[cfg(test)]
mod loopback;
