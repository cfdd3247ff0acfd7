//! Upstream MCP servers, reached over stdio (a child process) or streamable
//! HTTP (a URL), whose tools join the catalog (optionally renamed with a
//! prefix, under the category configured for the server) and whose calls
//! the pipeline forwards. Owns the client connection and the server's
//! current lists: tools (with every MCP field: title, annotations, output
//! schema, icons, `_meta`, and `execution`, which rmcp's types drop and
//! `carried` carries past them), prompts, resources and resource templates. Not
//! the pipeline's hooks. [`Gateway`] routes the servers' prompts,
//! resources and completions (`gateway`); the MCP front serves them.
//!
//! A server's `notifications/tools/list_changed` is only recorded here
//! ([`Upstream::subscribe`]); whoever serves the catalog re-lists the tools
//! ([`Upstream::refresh`]) and rebuilds. Its prompt and resource list
//! changes and resource updates are passed on as [`Event`]s
//! ([`Upstream::events`]). Results pass through whole: every content block
//! with its annotations, the structured content and `_meta` as the server
//! sent them, and an error result stays a result (`is_error`); an
//! `isError` the server left out stays out. Over HTTP,
//! redirects are not followed: the configured headers (credentials,
//! typically) go to the configured origin only. The server's log lines
//! (`notifications/message`) go to the log sink given at connect, the
//! header values redacted.
//!
//! Nothing a server says is served on its word. Each tool it lists passes
//! the checks a plugin's definitions pass (`plugin::Texts`: its name under
//! the configured prefix, title, description); one that fails is refused
//! with an error naming the server and the tool ([`Upstream::refused`],
//! logged when a list changes), and the rest are served. Every
//! call has a deadline (`call_timeout_s`), and every message the server
//! sends is bounded (`max_message_kb`): over stdio, by [`bounded`], which
//! answers a call whose answer is over the cap with an error at once; over
//! HTTP, by the client's response limits. A call is answered, whatever the
//! server does. Over HTTP a request's event stream is read to its end even
//! once its answer is in (`drain`), so its connection is used again. A stdio server's answer to a call is read as a call's
//! result directly ([`lines`]), not as each of rmcp's result types in turn.
//!
//! What the server asks of its client during a call (elicitation,
//! sampling, roots) is relayed to the client session that made the call,
//! or refused when that session cannot be told (`relay`). Its tasks (MCP
//! 2025-11-25) are started, asked about and answered here, their answers
//! read past rmcp (`carried`), and their status notifications go to the
//! session holding each (`owners`).

mod bounded;
mod callers;
mod carried;
mod drain;
mod gateway;
mod lines;
mod listing;
mod owners;
mod post;
mod relay;
mod session;

pub use gateway::{Gateway, GatewayError, Notice, merge_instructions};
pub use owners::TaskWatcher;
pub use relay::{Asked, Downstream, Unanswered, session_slots};

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, PoisonError, RwLock, Weak};
use std::time::Duration;

// rmcp marks sampling and roots deprecated (SEP-2577); servers still use them.
#[allow(deprecated)]
use rmcp::model::{
    CallToolRequest, CallToolResult, CancelledNotificationParam, ClientCapabilities, ClientConfig,
    ClientRequest, CreateMessageRequestParams, CreateMessageResult, CustomRequest, ElicitRequestParams,
    ElicitResult, ElicitationCapability, FormElicitationCapability, ListRootsResult,
    ProgressNotificationParam, RootsCapabilities, SamplingCapability, ServerResult, UrlElicitationCapability,
};
use rmcp::model::{
    CallToolRequestParams, CompleteRequestParams, CompleteResult, Cursor, GetPromptRequestParams,
    GetPromptResult, MetaObject, PaginatedRequestParams, Prompt, ReadResourceRequestParams,
    ReadResourceResult, Resource, ResourceTemplate, ResourceUpdatedNotificationParam, ServerPeerInfo,
    SubscribeRequestParams, Tool, UnsubscribeRequestParams,
};
use rmcp::service::{
    NotificationContext, PeerRequestOptions, RequestContext, RoleClient, ServiceError, ServiceExt,
};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ErrorData as McpError};
use serde::Deserialize;
use serde_json::{Map, Value};
use tokio::sync::{broadcast, watch};
use tokio_util::sync::DropGuard;
use tokio_util::task::AbortOnDropHandle;

use crate::bounds::{self, shown};
use crate::error_chain::error_chain;
use crate::output::{CallOutput, ToolError, mcp};
use crate::plugin::redact::Redactor;
use crate::plugin::{LogLevel, LogLine, LogSink, ProgressFn, Texts};
use crate::tool::ToolSpec;
use crate::trace_context::TraceParent;

/// One `[[upstream]]` table of `toolhost.toml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(try_from = "RawConfig")]
pub struct UpstreamConfig {
    /// Names the server in errors and in backend bindings.
    pub name: String,
    /// How to reach the server.
    pub transport: Transport,
    /// Category given to every tool of the server.
    pub category: Option<String>,
    /// Prepended to each tool's name in the catalog (`fs_` + `read_file`).
    pub prefix: String,
    /// Let the host call this server's read-only tools ahead of time. On by
    /// default: this switch only hides tools, it never lets a call through.
    /// What decides is each tool's value model, which must say `pure` or
    /// `read-only`, and an upstream tool has one only from the user's
    /// `[tools.X]` or, with `trust_annotations`, from the server's own
    /// `readOnlyHint` (else it is `indeterminate`, never called ahead of
    /// time). `false` keeps every tool of the server out of speculation
    /// whatever its value model says.
    pub speculate: bool,
    /// Take the server's tool annotations (`readOnlyHint`) as the owner's
    /// word on what each tool changes. Off by default: a server's hints are
    /// its own claim, and without them its tools are `indeterminate` (never
    /// called ahead of time) unless the user's `[tools.X]` says otherwise.
    pub trust_annotations: bool,
    /// How long the server has to start, answer `initialize` and list its
    /// tools: one that hangs must not hold up the host's start.
    pub connect_timeout: Duration,
    /// How long one call may wait for the server's answer.
    pub call_timeout: Duration,
    /// How long the calling client has to answer a request of the server's
    /// relayed to it (an elicitation, a sampling request: `relay`).
    pub relay_timeout: Duration,
    /// The largest message the server may send, and so the largest result
    /// of one of its tools, and the most bytes of each of its lists (tools,
    /// prompts, resources), over all their pages.
    pub max_message_bytes: usize,
    /// The most tools the server may list: the rest are not served.
    pub max_tools: usize,
    /// `credential = "exchange"`: each caller's calls go over a session of
    /// their own, with their bearer token exchanged for one meant for this
    /// server (`audience`) as its `Authorization` (`callers`). Only for a
    /// `url` server: a stdio server is one process, one identity.
    pub per_caller: Option<PerCallerUpstream>,
}

/// What an upstream acting as each caller asks the token exchange for.
#[derive(Debug, Clone)]
pub struct PerCallerUpstream {
    /// The `audience` (and `resource`) of the exchange: by default the
    /// server's origin.
    pub audience: String,
}

impl UpstreamConfig {
    /// An error of this server's: `message`, often quoting the server's own
    /// words, with the secrets sent to it redacted (a server may echo the
    /// header it was sent) and cut to the error cap.
    pub(crate) fn error(&self, message: String) -> UpstreamError {
        UpstreamError {
            name: self.name.clone(),
            message: bounds::cut(
                self.redactor().text(&message).into_owned(),
                bounds::MAX_ERROR_TEXT,
            ),
        }
    }

    /// Hold the secrets sent to the server process-wide
    /// ([`crate::secrets::held`]), before anything is sent: the libraries
    /// below log a refusal whole, and the server may quote the header it
    /// was sent in it.
    pub(crate) fn hold_secrets(&self) {
        let secrets = self.secrets();
        crate::secrets::held::hold(secrets.iter().map(|(n, v)| (n.as_str(), v.as_str())));
    }

    /// Replaces the secrets sent to the server ([`Self::secrets`]).
    fn redactor(&self) -> Redactor {
        let secrets = self.secrets();
        Redactor::new(secrets.iter().map(|(n, v)| (n.as_str(), v.as_str())))
    }

    /// The secrets sent to the server, by header name: each configured
    /// header value, and the token of a `Bearer TOKEN` value.
    pub(crate) fn secrets(&self) -> Vec<(String, String)> {
        match &self.transport {
            Transport::Http { headers, .. } => headers
                .iter()
                .filter_map(|(name, v)| Some((name.as_str(), v.to_str().ok()?)))
                .flat_map(|(name, v)| [(name, v), (name, v.rsplit(' ').next().unwrap_or(v))])
                .filter(|(_, v)| !v.is_empty())
                .map(|(name, v)| (name.to_owned(), v.to_owned()))
                .collect(),
            Transport::Stdio { .. } => Vec::new(),
        }
    }
}

/// The default of `connect_timeout_s`: time enough for `npx` to fetch a
/// package on first use.
const DEFAULT_CONNECT_TIMEOUT_S: u64 = 60;
/// The default of `call_timeout_s`: a call may be slow, never endless.
const DEFAULT_CALL_TIMEOUT_S: u64 = 60;
/// The default of `relay_timeout_s`: a person filling in a form takes a
/// while; the call's own deadline bounds it anyway.
const DEFAULT_RELAY_TIMEOUT_S: u64 = 60;

/// How the server is reached.
#[derive(Debug, Clone)]
pub enum Transport {
    /// A program speaking MCP on its stdin and stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables of toolhost's environment passed on to the program
        /// even though their values hold secrets toolhost keeps for another
        /// use (a plugin's grant, the endpoint's bearer token), which are
        /// otherwise withheld. Every other variable is passed on.
        env: Vec<String>,
    },
    /// A streamable-HTTP endpoint, with headers sent on every request
    /// (their values are marked sensitive, so they are not logged).
    Http {
        /// The endpoint's URL.
        url: String,
        /// Headers sent on every request (an `Authorization`, say).
        headers: HashMap<http::HeaderName, http::HeaderValue>,
    },
}

/// The default of `speculate`: the value models are the gate (see
/// [`UpstreamConfig::speculate`]).
fn speculate_by_default() -> bool {
    true
}

/// The table as written; checked into [`UpstreamConfig`].
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    name: String,
    command: Option<Program>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: Passed,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    category: Option<String>,
    #[serde(default)]
    prefix: String,
    #[serde(default = "speculate_by_default")]
    speculate: bool,
    #[serde(default)]
    trust_annotations: bool,
    connect_timeout_s: Option<u64>,
    call_timeout_s: Option<u64>,
    relay_timeout_s: Option<u64>,
    max_message_kb: Option<u64>,
    max_tools: Option<usize>,
    credential: Option<String>,
    audience: Option<String>,
}

/// `command` as written. Other MCP clients' configurations write the
/// program and its arguments as one list, so that form is read too, to be
/// refused with the form toolhost takes rather than as a type mismatch.
#[derive(Deserialize)]
#[serde(untagged, expecting = "a string, the program to start")]
enum Program {
    Name(String),
    Words(Vec<String>),
}

/// `env` as written: the names of the variables passed on. Other clients
/// take a table of values, which is read too, to be refused with where
/// the values go instead.
#[derive(Deserialize)]
#[serde(untagged, expecting = "a list of environment variable names")]
enum Passed {
    Names(Vec<String>),
    Values(BTreeMap<String, serde::de::IgnoredAny>),
}

impl Default for Passed {
    fn default() -> Self {
        Self::Names(Vec::new())
    }
}

impl TryFrom<RawConfig> for UpstreamConfig {
    type Error = String;

    fn try_from(raw: RawConfig) -> Result<Self, String> {
        let name = raw.name;
        let fail = |message: String| format!("upstream `{name}`: {message}");
        let env = match raw.env {
            Passed::Names(names) => names,
            // `env = {}`, as other clients write for none: nothing to move.
            Passed::Values(values) if values.is_empty() => Vec::new(),
            Passed::Values(values) => {
                let names: Vec<String> = values.keys().map(|name| shown(name)).collect();
                return Err(fail(format!(
                    "`env` is a list of names, not a table of values: the server is given toolhost's \
                     own environment, so set {} there (a value written in this file would be kept in \
                     it in clear); list a name only to pass a variable toolhost would withhold as \
                     holding a secret",
                    names.join(", ")
                )));
            }
        };
        let transport = match (raw.command, raw.url) {
            (Some(Program::Words(words)), None) => {
                // The arguments are not repeated: one may be a token.
                let program = words
                    .first()
                    .map_or_else(|| "\"program\"".to_owned(), |p| shown(p));
                return Err(fail(format!(
                    "`command` is the program alone, a string, and its arguments are `args`: \
                     write command = {program} and args = [...]"
                )));
            }
            (Some(Program::Name(command)), None) => {
                if !raw.headers.is_empty() {
                    return Err(fail("`headers` are for `url`, not `command`".into()));
                }
                Transport::Stdio {
                    command,
                    args: raw.args,
                    env,
                }
            }
            (None, Some(url)) => {
                if !raw.args.is_empty() {
                    return Err(fail("`args` are for `command`, not `url`".into()));
                }
                if !env.is_empty() {
                    return Err(fail("`env` is for `command`, not `url`".into()));
                }
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(fail(format!("url `{url}` is not http:// or https://")));
                }
                let mut headers = HashMap::new();
                for (key, value) in raw.headers {
                    let header = http::HeaderName::from_bytes(key.as_bytes())
                        .map_err(|_| fail(format!("`{key}` is not a valid header name")))?;
                    let mut value = http::HeaderValue::from_str(&value)
                        .map_err(|_| fail(format!("the value of header `{key}` is not valid in HTTP")))?;
                    value.set_sensitive(true);
                    headers.insert(header, value);
                }
                Transport::Http { url, headers }
            }
            (Some(_), Some(_)) => return Err(fail("set `command` or `url`, not both".into())),
            (None, None) => {
                return Err(fail(
                    "set `command` (a program speaking MCP on stdio) or `url` (a streamable-HTTP endpoint)"
                        .into(),
                ));
            }
        };
        let connect_timeout = match raw.connect_timeout_s {
            Some(0) => return Err(fail("`connect_timeout_s` must be at least 1".into())),
            seconds => Duration::from_secs(seconds.unwrap_or(DEFAULT_CONNECT_TIMEOUT_S)),
        };
        let call_timeout = match raw.call_timeout_s {
            Some(0) => return Err(fail("`call_timeout_s` must be at least 1".into())),
            seconds => Duration::from_secs(seconds.unwrap_or(DEFAULT_CALL_TIMEOUT_S)),
        };
        let relay_timeout = match raw.relay_timeout_s {
            Some(0) => return Err(fail("`relay_timeout_s` must be at least 1".into())),
            seconds => Duration::from_secs(seconds.unwrap_or(DEFAULT_RELAY_TIMEOUT_S)),
        };
        let most = (bounds::MAX_UPSTREAM_MESSAGE >> 10) as u64;
        let max_message_bytes = match raw.max_message_kb {
            None => bounds::DEFAULT_UPSTREAM_MESSAGE,
            Some(kb) if (1..=most).contains(&kb) => (kb << 10) as usize,
            Some(kb) => return Err(fail(format!("`max_message_kb` is {kb}, not 1 to {most}"))),
        };
        let max_tools = match raw.max_tools {
            None => bounds::DEFAULT_UPSTREAM_TOOLS,
            Some(n) if (1..=bounds::MAX_UPSTREAM_ITEMS).contains(&n) => n,
            Some(n) => {
                return Err(fail(format!(
                    "`max_tools` is {n}, not 1 to {}",
                    bounds::MAX_UPSTREAM_ITEMS
                )));
            }
        };
        let per_caller = match (raw.credential.as_deref(), &transport, raw.audience) {
            (None, _, None) => None,
            (None, _, Some(_)) => return Err(fail("`audience` is for `credential = \"exchange\"`".into())),
            (Some("exchange"), Transport::Stdio { .. }, _) => {
                return Err(fail(
                    "`credential = \"exchange\"` needs a `url` server: a stdio server is one process, \
                     serving every caller with one identity, so it cannot act as each caller"
                        .into(),
                ));
            }
            (Some("exchange"), Transport::Http { url, .. }, audience) => Some(PerCallerUpstream {
                audience: match audience {
                    Some(audience) => audience,
                    None => origin_of(url).ok_or_else(|| fail(format!("url `{url}` has no host")))?,
                },
            }),
            (Some(other), ..) => {
                return Err(fail(format!(
                    "`credential = \"{}\"`: the only per-caller credential of an upstream is \"exchange\"",
                    shown(other)
                )));
            }
        };
        Ok(Self {
            per_caller,
            name,
            transport,
            category: raw.category,
            prefix: raw.prefix,
            speculate: raw.speculate,
            trust_annotations: raw.trust_annotations,
            connect_timeout,
            call_timeout,
            relay_timeout,
            max_message_bytes,
            max_tools,
        })
    }
}

/// `scheme://host[:port]` of `url`.
fn origin_of(url: &str) -> Option<String> {
    let url = reqwest::Url::parse(url).ok()?;
    Some(url.origin().ascii_serialization()).filter(|o| o != "null")
}

/// An upstream server that could not be started, reached or called.
#[derive(Debug, thiserror::Error)]
#[error("upstream `{name}`: {message}")]
pub struct UpstreamError {
    /// The server, by its configured name.
    pub name: String,
    /// What went wrong.
    pub message: String,
}

/// What a server said besides its tool list changing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    PromptsChanged,
    ResourcesChanged,
    /// A resource a subscription was forwarded for changed.
    ResourceUpdated(String),
}

/// The client side of the session: records the server's list changes,
/// passes its log lines on, with the configured header values redacted
/// (a server may echo the credentials it was sent), and relays its
/// elicitation, sampling and roots requests to the calling client (`relay`).
#[derive(Clone)]
struct Listener {
    relay: Arc<relay::Relay>,
    owners: Arc<owners::Owners>,
    changed: watch::Sender<u64>,
    events: broadcast::Sender<Event>,
    name: Arc<str>,
    log: LogSink,
    redactor: Redactor,
}

impl Listener {
    /// The listener of the host's own sessions with the server `config`
    /// names, its log lines going to `log`.
    fn new(config: &UpstreamConfig, log: LogSink) -> Self {
        Self {
            relay: Arc::new(relay::Relay::new(
                &config.name,
                config.relay_timeout,
                config.max_message_bytes,
            )),
            owners: Arc::default(),
            changed: watch::channel(0).0,
            events: broadcast::channel(EVENT_BACKLOG).0,
            name: config.name.as_str().into(),
            log,
            redactor: config.redactor(),
        }
    }
}

#[allow(deprecated)] // rmcp marks sampling and roots deprecated (SEP-2577); servers still use them.
impl ClientHandler for Listener {
    /// Every capability whose requests are relayed: whether the calling
    /// client has it is checked per request (`relay`).
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation = Some(
            ElicitationCapability::new()
                .with_form(FormElicitationCapability::new())
                .with_url(UrlElicitationCapability::new()),
        );
        capabilities.sampling = Some(SamplingCapability::default());
        // Told when its sole client's roots change (`Gateway::roots_changed`).
        let mut roots = RootsCapabilities::default();
        roots.list_changed = Some(true);
        capabilities.roots = Some(roots);
        let mut info = ClientConfig::default();
        info.capabilities = capabilities;
        info
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, McpError> {
        self.relay.elicit(request, &context).await
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, McpError> {
        self.relay.sample(params, &context).await
    }

    async fn list_roots(&self, context: RequestContext<RoleClient>) -> Result<ListRootsResult, McpError> {
        self.relay.roots(&context).await
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.changed.send_modify(|n| *n += 1);
    }

    #[allow(deprecated)] // rmcp marks MCP logging deprecated (SEP-2577); servers still use it.
    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let text = match &params.data {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        let text = match &params.logger {
            Some(logger) => format!("{logger}: {text}"),
            None => text,
        };
        (self.log)(LogLine {
            plugin: self.name.clone(),
            level: host_level(params.level),
            stream: "upstream",
            message: self.redactor.text(&text).into_owned(),
        });
    }

    /// The server's progress on a call: to the call's client, as a
    /// plugin's progress goes (its message cut, the header values redacted).
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let message = params
            .message
            .as_deref()
            .map(|m| bounds::cut(self.redactor.text(m).into_owned(), bounds::MAX_LOG_LINE));
        self.relay.progress(&params, message);
    }

    /// A task's status (MCP 2025-11-25, which rmcp has no type for): to
    /// the session holding the task (`owners`).
    async fn on_custom_notification(
        &self,
        notification: rmcp::model::CustomNotification,
        _context: NotificationContext<RoleClient>,
    ) {
        if notification.method == "notifications/tasks/status"
            && let Some(status) = notification.params
        {
            self.owners.status(status);
        }
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.events.send(Event::PromptsChanged);
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.events.send(Event::ResourcesChanged);
    }

    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.events.send(Event::ResourceUpdated(params.uri));
    }
}

/// The level of an upstream server's line, as the host's log knows levels.
#[allow(deprecated)] // rmcp marks MCP logging deprecated (SEP-2577); servers still use it.
fn host_level(level: rmcp::model::LoggingLevel) -> LogLevel {
    use rmcp::model::LoggingLevel;
    match level {
        LoggingLevel::Debug => LogLevel::Debug,
        LoggingLevel::Info | LoggingLevel::Notice => LogLevel::Info,
        LoggingLevel::Warning => LogLevel::Warn,
        LoggingLevel::Error | LoggingLevel::Critical | LoggingLevel::Alert | LoggingLevel::Emergency => {
            LogLevel::Error
        }
    }
}

/// A connected upstream server and what it listed last.
pub struct Upstream {
    /// How the server was reached.
    pub config: UpstreamConfig,
    sessions: session::Sessions,
    tools: RwLock<Arc<Vec<Tool>>>,
    /// Why each tool of the last list that is not served was refused.
    refused: RwLock<Vec<String>>,
    prompts: RwLock<Arc<Vec<Prompt>>>,
    resources: RwLock<Arc<Vec<Resource>>>,
    templates: RwLock<Arc<Vec<ResourceTemplate>>>,
    /// What each new session of the host's own listens with: its relay,
    /// its tasks' owners, the tool-list watch (told of list changes and of
    /// a new session), the events and the log sink, which the callers'
    /// sessions share.
    listener: Listener,
    /// With `credential = "exchange"`: each caller's session.
    callers: Option<callers::Callers>,
    /// The resources subscribed to, forwarded again over a new session.
    subscribed: std::sync::Mutex<BTreeSet<String>>,
    /// Whether its tools have been listed since it started: a start that
    /// opened a session but failed to list them leaves that to the
    /// follower ([`Self::listed`]).
    listed: std::sync::atomic::AtomicBool,
    /// A first start the host stopped waiting for ([`Self::start_late`]).
    late_start: std::sync::Mutex<Option<AbortOnDropHandle<Result<(), UpstreamError>>>>,
    /// Whether that start has yet to end with what it listed served
    /// ([`Self::joined`]): a call of a tool it may serve waits for it.
    joining: watch::Sender<bool>,
}

/// Events a server may send faster than they are handled before the
/// oldest are dropped (a list change is re-listed whole anyway).
const EVENT_BACKLOG: usize = 64;

/// The longest wait between two tries of a server not reached at start.
pub const REACH_INTERVAL_MAX: Duration = Duration::from_secs(30);

/// The waits between tries of what failed: [`session::RESTART_INTERVAL`]
/// first, then twice the last, up to [`REACH_INTERVAL_MAX`].
#[derive(Debug)]
pub(crate) struct Backoff(Duration);

impl Default for Backoff {
    fn default() -> Self {
        Self(session::RESTART_INTERVAL)
    }
}

impl Backoff {
    /// Wait out the next wait; the one after is twice as long.
    pub(crate) async fn wait(&mut self) {
        tokio::time::sleep(self.0).await;
        self.0 = (self.0 * 2).min(REACH_INTERVAL_MAX);
    }

    /// The next wait.
    pub(crate) fn next(&self) -> Duration {
        self.0
    }
}

impl Upstream {
    /// Start or reach the server, initialise the session and list what it
    /// serves ([`Self::start`]). The server's log lines go to `log`.
    pub async fn connect(config: UpstreamConfig, log: LogSink) -> Result<Arc<Self>, UpstreamError> {
        let server = Self::configured(config, log);
        server.start().await?;
        Ok(server)
    }

    /// The server `config` names, not started yet: it lists nothing until
    /// [`Self::start`] (or, after a failed start, [`Self::reach`]) reaches
    /// it. The server's log lines go to `log`.
    pub fn configured(config: UpstreamConfig, log: LogSink) -> Arc<Self> {
        let listener = Listener::new(&config, log);
        Self::new(config, listener, session::Sessions::starting())
    }

    /// Start or reach the server, initialise the session and list its
    /// tools, prompts and resources, all within `connect_timeout_s`. On
    /// failure the server is kept unreached, and [`Self::reach`] tries it
    /// again. A start that outlives the host's own wait goes on in the
    /// background ([`Self::start_late`]).
    pub async fn start(&self) -> Result<(), UpstreamError> {
        let limit = self.config.connect_timeout;
        let deadline = tokio::time::Instant::now() + limit;
        self.sessions
            .replace(async || self.open_before(deadline).await)
            .await
            .map_err(|message| UpstreamError {
                name: self.config.name.clone(),
                message,
            })?;
        // Its session stays if its lists fail: whoever follows the server
        // lists them again ([`Self::listed`]).
        tokio::time::timeout_at(deadline, async {
            self.refresh().await?;
            self.refresh_other_lists().await;
            Ok(())
        })
        .await
        .unwrap_or_else(|_| Err(self.config.error(format!("tools/list: {}", unanswered(limit)))))
    }

    /// Let `start`, the server's first start still under way when the host
    /// stopped waiting for it, go on in the background; whoever follows
    /// the server's tools takes it ([`Self::take_late_start`]) and serves
    /// them once it ends. Stopped if the server is closed first.
    pub fn start_late(&self, start: impl Future<Output = Result<(), UpstreamError>> + Send + 'static) {
        // The task holds the server while it runs, and the server its
        // handle: a cycle that ends with the start, within
        // `connect_timeout_s`.
        let task = AbortOnDropHandle::new(tokio::spawn(start));
        *self.late_start.lock().unwrap_or_else(PoisonError::into_inner) = Some(task);
        self.joining.send_replace(true);
    }

    /// The start [`Self::start_late`] left going has ended and what it
    /// listed is served, or it failed: calls waiting for it go on.
    pub fn joined(&self) {
        self.joining.send_replace(false);
    }

    /// Whether a start the host stopped waiting for has yet to end
    /// ([`Self::joined`]).
    pub fn is_joining(&self) -> bool {
        *self.joining.borrow()
    }

    /// Once the start the host stopped waiting for has ended and what it
    /// listed is served, or at once if none is under way; at most its
    /// `connect_timeout_s`, the start's own bound, in case nobody follows
    /// it to the end.
    pub async fn until_joined(&self) {
        let mut joining = self.joining.subscribe();
        let _ = tokio::time::timeout(self.config.connect_timeout, joining.wait_for(|j| !j)).await;
    }

    /// The first start [`Self::start_late`] left going, if any: aborted
    /// when dropped.
    pub fn take_late_start(&self) -> Option<AbortOnDropHandle<Result<(), UpstreamError>>> {
        self.late_start
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    fn new(config: UpstreamConfig, listener: Listener, sessions: session::Sessions) -> Arc<Self> {
        Arc::new(Self {
            callers: config.per_caller.as_ref().map(|_| callers::Callers::default()),
            config,
            sessions,
            tools: RwLock::default(),
            refused: RwLock::default(),
            prompts: RwLock::default(),
            resources: RwLock::default(),
            templates: RwLock::default(),
            listener,
            subscribed: std::sync::Mutex::default(),
            listed: std::sync::atomic::AtomicBool::new(false),
            late_start: std::sync::Mutex::default(),
            joining: watch::Sender::new(false),
        })
    }

    /// Until the server is reached, try again, waiting twice as long after
    /// each failure (from [`session::RESTART_INTERVAL`] up to
    /// [`REACH_INTERVAL_MAX`]); at once if it has been. Reaching it tells
    /// [`Self::subscribe`], as a new session does: a gateway started before
    /// its servers (a compose file) serves their tools once they answer.
    pub async fn reach(&self) {
        let mut backoff = Backoff::default();
        while !self.reached() {
            backoff.wait().await;
            if let Err(e) = self.session().await {
                tracing::debug!(
                    "upstream `{}`: {e}; tried again in {} s",
                    self.config.name,
                    backoff.next().as_secs()
                );
            }
        }
    }

    /// Until the server's tools are to be listed again: it said they
    /// changed (`changes`, from [`Self::subscribe`]), or they have not been
    /// listed since it started ([`Self::listed`]: a listing failed) and
    /// `backoff` has passed. `false` once `changes` is closed.
    pub(crate) async fn until_relist(
        &self,
        changes: &mut watch::Receiver<u64>,
        backoff: &mut Backoff,
    ) -> bool {
        if self.listed() {
            *backoff = Backoff::default();
            return changes.changed().await.is_ok();
        }
        tokio::select! {
            changed = changes.changed() => changed.is_ok(),
            () = backoff.wait() => true,
        }
    }

    /// The server's prompts and resources listed again; its tools are
    /// served even if these fail.
    async fn refresh_other_lists(&self) {
        for listed in [self.refresh_prompts().await, self.refresh_resources().await] {
            if let Err(e) = listed {
                tracing::warn!("{e}");
            }
        }
    }

    /// The session requests go over: the current one while it lives, else
    /// a new one ([`Self::reopen`]). A new session's tool list is read
    /// again and the catalog rebuilt (`subscribe`), as for a list change.
    async fn session(&self) -> Result<Arc<session::Session>, String> {
        if let Some(session) = self.sessions.current()
            && !session.ended()
        {
            return Ok(session);
        }
        // Boxed: a new session is rare, and opening one (rmcp's future is
        // several KB) inline would size every call's future.
        Box::pin(self.reopen()).await
    }

    /// A new session in place of the one that ended (`session::Sessions`).
    async fn reopen(&self) -> Result<Arc<session::Session>, String> {
        let (session, replaced) = self
            .sessions
            .replace(async || {
                let deadline = tokio::time::Instant::now() + self.config.connect_timeout;
                self.open_before(deadline).await
            })
            .await?;
        if let Some(opened) = replaced {
            let name = &self.config.name;
            match opened {
                session::Opened::Again(why) => tracing::warn!("upstream `{name}`: {why}; started again"),
                session::Opened::First => {
                    tracing::warn!("upstream `{name}`: reached at last; its tools are served")
                }
            }
            self.subscribe_again(&session).await;
            // Its lists are read again, and the clients told, as for
            // the server's own list changes: the gateway follows these.
            self.listener.changed.send_modify(|n| *n += 1);
            self.other_lists_changed();
        }
        Ok(session)
    }

    /// Tell whoever serves the server's prompts and resources to list them
    /// again, as for the server's own list changes: it was reached, or
    /// started again, since they were last listed.
    pub fn other_lists_changed(&self) {
        let Some(info) = self.info() else { return };
        let events = &self.listener.events;
        if info.capabilities.prompts.is_some() {
            let _ = events.send(Event::PromptsChanged);
        }
        if info.capabilities.resources.is_some() {
            let _ = events.send(Event::ResourcesChanged);
        }
    }

    /// A new session, opened before `deadline`. Its error is kept and
    /// logged as well as returned: redacted and cut as every error of the
    /// server's (a server may echo a header).
    async fn open_before(&self, deadline: tokio::time::Instant) -> Result<session::Session, String> {
        tokio::time::timeout_at(deadline, open(&self.config, self.listener.clone()))
            .await
            .unwrap_or_else(|_| Err(unanswered(self.config.connect_timeout)))
            .map_err(|e| self.config.error(e).message)
    }

    /// Forward the subscriptions again over `session`, which replaced the
    /// one they were made over, before any request of the clients' goes
    /// over it; all within `connect_timeout_s`.
    #[allow(deprecated)] // As `subscribe_resource`.
    async fn subscribe_again(&self, session: &session::Session) {
        let uris: Vec<String> = self
            .subscribed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .cloned()
            .collect();
        let name = &self.config.name;
        let mut made = 0;
        let making = async {
            for uri in &uris {
                let subscribing = session
                    .peer()
                    .subscribe(SubscribeRequestParams::new(uri.as_str()));
                match subscribing.await {
                    Ok(()) => made += 1,
                    Err(e) => tracing::warn!(
                        "{}; its updates are lost",
                        self.config.error(format!(
                            "resources/subscribe `{}` again: {}",
                            bounds::label(uri),
                            service_failure(&e)
                        ))
                    ),
                }
            }
        };
        if tokio::time::timeout(self.config.connect_timeout, making)
            .await
            .is_err()
        {
            tracing::warn!(
                "upstream `{name}`: {made} of {} subscriptions made again within {} s (`connect_timeout_s`); the updates of the rest are lost",
                uris.len(),
                self.config.connect_timeout.as_secs()
            );
        }
    }

    /// Whether the server has been reached: false while one not reached
    /// at start is still tried ([`Self::reach`]).
    pub fn reached(&self) -> bool {
        self.sessions.current().is_some()
    }

    /// `client` is the only client the host serves: the server's
    /// `roots/list` that no call explains goes to it (`relay`).
    fn serve_alone(&self, client: Weak<dyn Downstream>) {
        self.listener.relay.serve_alone(client);
    }

    /// Tell the server, over its session if it has one, that its client's
    /// roots changed: one that keeps them asks again. A server started
    /// later asks as it starts.
    async fn roots_changed(&self) {
        let Some(session) = self.sessions.current().filter(|s| !s.ended()) else {
            return;
        };
        let told = session.peer().notify_roots_list_changed();
        match tokio::time::timeout(self.config.call_timeout, told).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::debug!(
                "upstream `{}`: roots/list_changed not sent: {e}",
                self.config.name
            ),
            Err(_) => tracing::debug!(
                "upstream `{}`: roots/list_changed not taken in time",
                self.config.name
            ),
        }
    }

    /// End the host's session with the server, and each caller's, as the
    /// host shuts down (`session::Session::close`): a stdio server is let
    /// exit on its own and its stderr copied to the end, rather than killed
    /// mid-line; a URL server's sessions are ended with `DELETE`. A start
    /// still under way is stopped.
    pub async fn close(&self) {
        drop(self.take_late_start());
        self.joined();
        let callers = async {
            if let Some(callers) = &self.callers {
                callers.close().await;
            }
        };
        let own = async {
            if let Some(session) = self.sessions.current() {
                session.close().await;
            }
        };
        futures::join!(callers, own);
    }

    /// What the server said of itself when the session started.
    pub fn info(&self) -> Option<Arc<ServerPeerInfo>> {
        self.sessions.current()?.peer().peer_info()
    }

    /// The server's instructions for the model, if it gave any.
    pub fn instructions(&self) -> Option<String> {
        self.info()?.instructions.clone().filter(|i| !i.trim().is_empty())
    }

    /// The server's prompt list changes, resource list changes and
    /// resource updates, from now on.
    pub fn events(&self) -> broadcast::Receiver<Event> {
        self.listener.events.subscribe()
    }

    fn error(&self, what: &str, e: &ServiceError) -> UpstreamError {
        self.config.error(format!("{what}: {}", service_failure(e)))
    }

    /// A request of the host's over the session (`session`): `what`, named
    /// in its error, and `request`, sent with the peer it is given.
    async fn over<T, Fut>(
        &self,
        what: &str,
        request: impl FnOnce(rmcp::Peer<RoleClient>) -> Fut,
    ) -> Result<T, UpstreamError>
    where
        Fut: Future<Output = Result<T, ServiceError>>,
    {
        let fail = |message: String| self.config.error(format!("{what}: {message}"));
        let session = self.session().await.map_err(fail)?;
        match request(session.peer().clone()).await {
            Ok(answer) => Ok(answer),
            Err(e) => Err(fail(session.failed(service_failure(&e)).await)),
        }
    }

    /// The server's `what` (prompts, resources), read page by page within
    /// [`bounds::MAX_UPSTREAM_ITEMS`] items and the message cap; what is
    /// over them is logged and not served.
    async fn list<T, Fut>(
        &self,
        what: &str,
        page: impl FnMut(Option<PaginatedRequestParams>) -> Fut,
    ) -> Result<Vec<T>, ServiceError>
    where
        T: serde::Serialize,
        Fut: Future<Output = Result<(Vec<T>, Option<Cursor>), ServiceError>>,
    {
        let within = listing::Bounds {
            items: bounds::MAX_UPSTREAM_ITEMS,
            bytes: self.config.max_message_bytes,
        };
        let listed = listing::list(what, within, page).await?;
        if let Some(cut) = listed.cut {
            tracing::warn!("upstream `{}`: {what}: {cut}", self.config.name);
        }
        Ok(listed.items)
    }

    /// List the server's prompts again (none if it has no prompts).
    pub async fn refresh_prompts(&self) -> Result<(), UpstreamError> {
        if self.info().is_none_or(|i| i.capabilities.prompts.is_none()) {
            return Ok(());
        }
        let Some(session) = self.sessions.current() else {
            return Ok(());
        };
        let peer = session.peer();
        let prompts = self
            .list("prompts", |p| {
                let peer = peer.clone();
                async move {
                    let page = peer.list_prompts(p).await?;
                    Ok((page.prompts, page.next_cursor))
                }
            })
            .await
            .map_err(|e| self.error("prompts/list", &e))?;
        *self.prompts.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(prompts);
        Ok(())
    }

    /// List the server's resources and resource templates again.
    pub async fn refresh_resources(&self) -> Result<(), UpstreamError> {
        if self.info().is_none_or(|i| i.capabilities.resources.is_none()) {
            return Ok(());
        }
        let Some(session) = self.sessions.current() else {
            return Ok(());
        };
        let peer = session.peer();
        let resources = self
            .list("resources", |p| {
                let peer = peer.clone();
                async move {
                    let page = peer.list_resources(p).await?;
                    Ok((page.resources, page.next_cursor))
                }
            })
            .await
            .map_err(|e| self.error("resources/list", &e))?;
        let templates = self
            .list("resource templates", |p| {
                let peer = peer.clone();
                async move {
                    let page = peer.list_resource_templates(p).await?;
                    Ok((page.resource_templates, page.next_cursor))
                }
            })
            .await
            .map_err(|e| self.error("resources/templates/list", &e))?;
        *self.resources.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(resources);
        *self.templates.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(templates);
        Ok(())
    }

    /// The prompts as the server listed them last (names unprefixed).
    pub fn prompts(&self) -> Arc<Vec<Prompt>> {
        self.prompts
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The server's resources.
    pub fn resources(&self) -> Arc<Vec<Resource>> {
        self.resources
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub(crate) fn resource_templates(&self) -> Arc<Vec<ResourceTemplate>> {
        self.templates
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// `prompts/get` of the server's own prompt name.
    pub async fn get_prompt(&self, params: GetPromptRequestParams) -> Result<GetPromptResult, UpstreamError> {
        self.over("prompts/get", async |peer| peer.get_prompt(params).await)
            .await
    }

    /// Read resource `params.uri` from the server.
    pub async fn read_resource(
        &self,
        params: ReadResourceRequestParams,
    ) -> Result<ReadResourceResult, UpstreamError> {
        self.over("resources/read", async |peer| peer.read_resource(params).await)
            .await
    }

    /// Ask the server to complete an argument.
    pub async fn complete(&self, params: CompleteRequestParams) -> Result<CompleteResult, UpstreamError> {
        self.over("completion/complete", async |peer| peer.complete(params).await)
            .await
    }

    /// Whether the server takes resource subscriptions.
    pub fn takes_subscriptions(&self) -> bool {
        self.info()
            .and_then(|i| i.capabilities.resources.as_ref()?.subscribe)
            .unwrap_or(false)
    }

    /// Forward `resources/subscribe`; its updates arrive as
    /// [`Event::ResourceUpdated`]. (rmcp marks the 2025-11-25
    /// subscriptions legacy; they are what these servers speak.)
    #[allow(deprecated)]
    pub async fn subscribe_resource(&self, uri: &str) -> Result<(), UpstreamError> {
        // Taken before it is forwarded: subscriptions arrive at once.
        let taken = {
            let mut subscribed = self.subscribed.lock().unwrap_or_else(PoisonError::into_inner);
            let held = subscribed.len();
            if held >= bounds::MAX_UPSTREAM_SUBSCRIPTIONS && !subscribed.contains(uri) {
                return Err(self.config.error(format!(
                    "resources/subscribe: it holds {held} subscriptions, the most toolhost keeps for one server"
                )));
            }
            subscribed.insert(uri.to_owned())
        };
        let forwarded = self
            .over("resources/subscribe", async |peer| {
                peer.subscribe(SubscribeRequestParams::new(uri)).await
            })
            .await;
        if forwarded.is_err() && taken {
            self.subscribed
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(uri);
        }
        forwarded
    }

    /// Withdraw the subscription to `uri`.
    #[allow(deprecated)]
    pub async fn unsubscribe_resource(&self, uri: &str) -> Result<(), UpstreamError> {
        self.subscribed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(uri);
        self.over("resources/unsubscribe", async |peer| {
            peer.unsubscribe(UnsubscribeRequestParams::new(uri)).await
        })
        .await
    }

    /// Changes whenever the server says its tool list changed, and when a
    /// session replaces one that ended; closed when the upstream is dropped.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.listener.changed.subscribe()
    }

    /// List the server's tools again, and whether they differ from the
    /// last list (a server started again mostly lists the same).
    pub async fn refresh(&self) -> Result<bool, UpstreamError> {
        let session = self
            .session()
            .await
            .map_err(|e| self.config.error(format!("tools/list: {e}")))?;
        let tools = list_tools(&self.config, session.peer())
            .await
            .map_err(|e| self.error("tools/list", &e))?;
        let (tools, refused) = admit(&self.config, tools);
        self.listed.store(true, std::sync::atomic::Ordering::Release);
        let same = **self.tools.read().unwrap_or_else(PoisonError::into_inner) == tools
            && *self.refused.read().unwrap_or_else(PoisonError::into_inner) == refused;
        if same {
            return Ok(false);
        }
        for why in &refused {
            tracing::error!("{why}");
        }
        *self.tools.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(tools);
        *self.refused.write().unwrap_or_else(PoisonError::into_inner) = refused;
        Ok(true)
    }

    /// Whether the server's tools have been listed: not yet if it was never
    /// reached, or its start failed after opening its session.
    pub fn listed(&self) -> bool {
        self.listed.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Why each tool the server listed last and that is not served was
    /// refused, each naming the server and the tool.
    pub fn refused(&self) -> Vec<String> {
        self.refused
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The catalog entries, as (spec under our name, the server's name).
    pub fn specs(&self) -> Vec<(ToolSpec, String)> {
        let tools = self.tools.read().unwrap_or_else(PoisonError::into_inner).clone();
        tools
            .iter()
            .map(|t| {
                let mut spec = ToolSpec {
                    name: format!("{}{}", self.config.prefix, t.name),
                    description: t.description.as_deref().unwrap_or_default().to_owned(),
                    category: self.config.category.clone(),
                    input_schema: Value::Object((*t.input_schema).clone()),
                    meta: crate::tool::tool_meta_from_mcp(t),
                };
                spec.meta.execution = carried::take_execution(&mut spec.meta.wire_meta);
                (spec, t.name.to_string())
            })
            .collect()
    }

    /// Forward a call of `caller`'s (`None`: the host's own), within the
    /// server's deadline and message cap; what the server asks of its
    /// client meanwhile is relayed to `caller`, and the progress it reports
    /// to `progress` (`relay`). A call in the span `trace` (the host's own,
    /// under its client's) passes it on as the parent, in the request's
    /// `_meta.traceparent`. Dropping the future
    /// cancels the request upstream.
    pub async fn call(
        &self,
        remote: &str,
        args: Map<String, Value>,
        caller: Option<Arc<dyn Downstream>>,
        progress: Option<ProgressFn>,
        token: Option<&str>,
        trace: Option<&TraceParent>,
    ) -> Result<CallOutput, ToolError> {
        let name = &self.config.name;
        let fail =
            |message: String| ToolError::Failed(format!("upstream `{name}`, tool `{remote}`: {message}"));
        let mut params = CallToolRequestParams::new(remote.to_owned());
        params.arguments = Some(args);
        if let Some(trace) = trace {
            let mut meta = MetaObject::new();
            meta.set_traceparent(trace.to_string());
            params.meta = Some(meta.into());
        }
        // The host's session, when the call goes over it (not a caller's).
        let mut host = None;
        let (peer, relay) = match (&self.callers, token) {
            (None, _) => {
                let session = host.insert(self.session().await.map_err(&fail)?);
                (session.peer().clone(), self.listener.relay.clone())
            }
            (Some(callers), Some(token)) => callers
                .peer(token, async || self.caller_session(token).await)
                .await
                .map_err(&fail)?,
            (Some(_), None) => {
                return Err(fail(
                    "it acts as each caller (`credential = \"exchange\"`), and this call carries no \
                     exchanged token"
                        .into(),
                ));
            }
        };
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let answer = match self
            .within(self.send((&peer, &relay), request, caller, progress))
            .await
        {
            Ok(answer) => answer,
            Err(message) => match host {
                Some(session) => return Err(fail(session.failed(message).await)),
                None => return Err(fail(message)),
            },
        };
        if carried::take_answer(&answer).is_some() {
            return Err(fail(
                "it answered with a task, which the call did not ask for".into(),
            ));
        }
        let answer = match answer {
            ServerResult::CallToolResult(result) => result,
            other => {
                contentless(other).ok_or_else(|| fail(error_chain(&ServiceError::UnexpectedResponse)))?
            }
        };
        self.output(answer).map_err(fail)
    }

    /// A result of the server's within its message cap, as the host owns it.
    fn output(&self, answer: CallToolResult) -> Result<CallOutput, String> {
        let cap = self.config.max_message_bytes;
        let output = mcp::from_mcp(answer);
        if output.size() > cap {
            return Err(format!(
                "its result has {} bytes, more than the cap of {cap} (`max_message_kb`)",
                output.size()
            ));
        }
        Ok(output)
    }

    /// Start a call of `remote` as a task (MCP 2025-11-25: `params.task`
    /// is `task`, the client's), as `call` does otherwise: the server's
    /// `CreateTaskResult`, whole, for the caller to check.
    pub async fn start_task(
        &self,
        remote: &str,
        args: Map<String, Value>,
        task: Value,
        caller: Option<Arc<dyn Downstream>>,
    ) -> Result<Value, ToolError> {
        let fail =
            |m: String| ToolError::Failed(format!("upstream `{}`, tool `{remote}`: {m}", self.config.name));
        // Tasks go over the host's session, which acts as nobody in
        // particular: a server that must act as each caller runs none.
        if self.callers.is_some() {
            return Err(fail(
                "it acts as each caller (`credential = \"exchange\"`), and its tasks would run as the host: \
                 call the tool without `task`"
                    .into(),
            ));
        }
        let params = serde_json::json!({"name": remote, "arguments": args, "task": task});
        let request = ClientRequest::CustomRequest(CustomRequest::new("tools/call", Some(params)));
        let answer = self.on_host_session(request, caller).await.map_err(fail)?;
        carried::take_answer(&answer).ok_or_else(|| fail("it did not answer the call with a task".into()))
    }

    /// A `tasks/get`, `tasks/cancel` or `tasks/list` of the server's (MCP
    /// 2025-11-25), its answer whole, for the caller to check.
    pub async fn task_request(&self, method: &str, params: Value) -> Result<Value, UpstreamError> {
        let request = ClientRequest::CustomRequest(CustomRequest::new(method, Some(params)));
        let fail = |message: String| self.config.error(format!("{method}: {message}"));
        let answer = self.on_host_session(request, None).await.map_err(fail)?;
        carried::take_answer(&answer).ok_or_else(|| fail("its answer is not a task's".into()))
    }

    /// Send the server's status notifications of its task `id` to
    /// `watcher`, until [`Upstream::disown_task`].
    pub fn own_task(&self, id: &str, watcher: Arc<dyn TaskWatcher>) {
        self.listener.owners.own(id, watcher);
    }

    /// No longer send the status of task `id` anywhere.
    pub fn disown_task(&self, id: &str) {
        self.listener.owners.disown(id);
    }

    /// `tasks/result` of task `id` (MCP 2025-11-25): the call's result, which
    /// the server sends once the task ends, as `call` reads one; what the
    /// server asks meanwhile is relayed to `caller`.
    pub async fn task_result(
        &self,
        id: &str,
        caller: Option<Arc<dyn Downstream>>,
    ) -> Result<CallOutput, ToolError> {
        let params = serde_json::json!({"taskId": id});
        let request = ClientRequest::CustomRequest(CustomRequest::new("tasks/result", Some(params)));
        let fail =
            |m: String| ToolError::Failed(format!("upstream `{}`, tasks/result: {m}", self.config.name));
        let answer = self.on_host_session(request, caller).await.map_err(fail)?;
        let answer = match answer {
            ServerResult::CallToolResult(result) => result,
            other => contentless(other).ok_or_else(|| fail("its answer is not a tool's result".into()))?,
        };
        self.output(answer).map_err(fail)
    }

    /// `request` sent over the host's own session to the server (every
    /// task goes over it), within the call deadline; its error says how
    /// the session ended, if it did.
    async fn on_host_session(
        &self,
        request: ClientRequest,
        caller: Option<Arc<dyn Downstream>>,
    ) -> Result<ServerResult, String> {
        let session = self.session().await?;
        let sent = self.send((session.peer(), &self.listener.relay), request, caller, None);
        match self.within(sent).await {
            Ok(answer) => Ok(answer),
            Err(message) => Err(session.failed(message).await),
        }
    }

    /// `send` within the server's call deadline.
    ///
    /// The request's future is boxed here, once: rmcp's are several KB,
    /// and inline they made every future that awaits a server (a call's,
    /// and the request task that runs it) as large, copied at each step.
    fn within<'a>(
        &self,
        sent: impl Future<Output = Result<ServerResult, ServiceError>> + Send + 'a,
    ) -> impl Future<Output = Result<ServerResult, String>> + Send + 'a {
        let limit = self.config.call_timeout;
        let sent = Box::pin(sent);
        async move {
            match tokio::time::timeout(limit, sent).await {
                Ok(answer) => answer.map_err(|e| service_failure(&e)),
                Err(_) => Err(format!(
                    "no answer within {} s (`call_timeout_s`)",
                    limit.as_secs()
                )),
            }
        }
    }

    /// `request`, registered with the relay as `caller`'s while in flight,
    /// under the request id that ties the server's requests on its HTTP
    /// response stream to it.
    async fn send(
        &self,
        (peer, relay): (&rmcp::Peer<RoleClient>, &relay::Relay),
        request: ClientRequest,
        caller: Option<Arc<dyn Downstream>>,
        progress: Option<ProgressFn>,
    ) -> Result<ServerResult, ServiceError> {
        let entered = relay.enter(caller, progress);
        if let ClientRequest::CustomRequest(custom) = &request
            && custom.method == "tasks/result"
            && let Some(task) = custom.params.as_ref().and_then(|p| p.get("taskId")?.as_str())
        {
            entered.waits_on_task(task);
        }
        let handle = peer
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await?;
        entered.sent(handle.id.clone(), handle.progress_token.clone());
        let abandoned = Abandoned(Some((peer.clone(), handle.id.clone())));
        let answer = handle.await_response().await;
        abandoned.disarm();
        answer
    }
}

impl Upstream {
    /// A new session to this server as the holder of `token` (its
    /// `Authorization`, over the configured headers), within
    /// `connect_timeout_s`; its requests and log lines go where the host's
    /// session's do, the token redacted from them.
    async fn caller_session(&self, token: &str) -> Result<callers::Opened, String> {
        let Transport::Http { url, headers } = &self.config.transport else {
            return Err("a stdio server has no caller's session".into());
        };
        let mut headers = headers.clone();
        let mut bearer = http::HeaderValue::from_str(&format!("Bearer {token}"))
            .map_err(|_| "the exchanged token does not make a header value".to_owned())?;
        bearer.set_sensitive(true);
        headers.insert(http::header::AUTHORIZATION, bearer);
        let mut secrets = self.config.secrets();
        secrets.push(("authorization".into(), token.to_owned()));
        let relay = Arc::new(relay::Relay::new(
            &self.config.name,
            self.config.relay_timeout,
            self.config.max_message_bytes,
        ));
        let listener = Listener {
            relay: relay.clone(),
            owners: self.listener.owners.clone(),
            // The host's session follows the lists; a caller's is for calls.
            changed: watch::channel(0).0,
            events: self.listener.events.clone(),
            name: self.config.name.as_str().into(),
            log: self.listener.log.clone(),
            redactor: Redactor::new(secrets.iter().map(|(n, v)| (n.as_str(), v.as_str()))),
        };
        // The server may echo the caller's token in a refusal.
        let redactor = Redactor::new(secrets.iter().map(|(n, v)| (n.as_str(), v.as_str())));
        let (transport, opening) = http_transport(url, headers, self.config.max_message_bytes)?;
        let limit = self.config.connect_timeout;
        match tokio::time::timeout(limit, listener.serve(transport)).await {
            Ok(Ok(client)) => {
                opening.disarm();
                Ok((client, relay))
            }
            Ok(Err(e)) => Err(format!(
                "cannot open the caller's session at {url}: {}",
                bounds::cut(
                    redactor.text(&initialize_failure(&e)).into_owned(),
                    bounds::MAX_ERROR_TEXT
                )
            )),
            Err(_) => Err(format!(
                "no answer to the caller's session within {} s (`connect_timeout_s`)",
                limit.as_secs()
            )),
        }
    }
}

/// The variables of this process's environment a stdio server is not
/// given: each whose value holds a secret held for another use
/// ([`crate::secrets::held`]), whole or within it (a database URL with
/// its password), unless the server's `env` names it. A server
/// started by toolhost runs as the user and could read the user's files
/// anyway; this keeps a secret granted to one source from being handed to
/// another by default, as the gate does for what is served.
fn withheld_env(passed: &[String]) -> Vec<String> {
    std::env::vars_os()
        .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
        .filter(|(name, value)| !passed.contains(name) && crate::secrets::held::found_in(value))
        .map(|(name, _)| name)
        .collect()
}

/// The longest line of a stdio server's stderr written whole; a longer one
/// is written in pieces of this size.
const MAX_STDERR_LINE: u64 = 64 * 1024;

/// A stdio server's stderr, on toolhost's own, a line at a time with every
/// secret held redacted: what the server prints is the user's to read, but
/// a secret it was given (its `env`) or came by is not, as in the log.
async fn stderr_redacted(stderr: tokio::process::ChildStderr) {
    use std::io::Write;
    use tokio::io::{AsyncBufReadExt, AsyncReadExt};
    let mut reader = tokio::io::BufReader::new(stderr);
    let mut line = Vec::new();
    loop {
        line.clear();
        match (&mut reader)
            .take(MAX_STDERR_LINE)
            .read_until(b'\n', &mut line)
            .await
        {
            Ok(0) | Err(_) => return,
            Ok(_) => {
                let text = crate::secrets::held::redact(&String::from_utf8_lossy(&line));
                // A closed stderr loses the line, as it lost it before.
                let _ = std::io::stderr().lock().write_all(text.as_bytes());
            }
        }
    }
}

/// A server's silence for `limit`, as an error says it.
fn unanswered(limit: Duration) -> String {
    format!("no answer within {} s (`connect_timeout_s`)", limit.as_secs())
}

/// A session with the server `config` names: its process started (stdio)
/// or its URL reached (HTTP), and initialised, its requests and
/// notifications going to `listener`.
async fn open(config: &UpstreamConfig, listener: Listener) -> Result<session::Session, String> {
    config.hold_secrets();
    let cap = config.max_message_bytes;
    let mut process = None;
    let client = match &config.transport {
        Transport::Stdio { command, args, env } => {
            use std::process::Stdio;
            let mut program = tokio::process::Command::new(command);
            let withheld = withheld_env(env);
            if !withheld.is_empty() {
                let (each, it) = if withheld.len() == 1 {
                    ("it", "it")
                } else {
                    ("each", "one")
                };
                tracing::warn!(
                    "upstream `{}`: started without {} from the environment: {each} holds a secret \
                     toolhost keeps for another use; name {it} in the server's `env` to pass it on",
                    config.name,
                    withheld.join(", ")
                );
            }
            for name in &withheld {
                program.env_remove(name);
            }
            let mut child = program
                .args(args)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .kill_on_drop(true)
                .spawn()
                .map_err(|e| format!("cannot start `{command}`: {e}"))?;
            let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
                return Err(format!("`{command}` started without its pipes"));
            };
            let stderr = child
                .stderr
                .take()
                .map(|stderr| tokio::spawn(stderr_redacted(stderr)));
            process = Some(session::Process { child, stderr });
            // Lines over the cap are answered by `bounded`; what passes
            // it is within the transport's own cap, which drops a line.
            // Carrying a tool's `execution` (`carried`) adds fewer bytes
            // than the tool takes, so a line passed on is under twice
            // the cap.
            let bounded = bounded::BoundedLines::new(stdout, cap, &config.name);
            let transport = crate::lines::Lines::new(bounded, stdin, lines::ServerLines::default())
                .with_max_line(2 * cap + 1);
            listener
                .serve(transport)
                .await
                .map_err(|e| format!("initialise: {}", initialize_failure(&e)))?
        }
        Transport::Http { url, headers } => {
            let (transport, opening) = http_transport(url, headers.clone(), cap)?;
            let client = listener
                .serve(transport)
                .await
                .map_err(|e| format!("cannot connect to {url}: {}", initialize_failure(&e)))?;
            opening.disarm();
            client
        }
    };
    Ok(session::Session::new(client, process))
}

/// Why an upstream session did not start. A transport's failure is said
/// by its own causes (`tcp connect error: Connection refused`): rmcp's
/// wrappers name the transport's Rust type, and pass no cause on.
fn initialize_failure(e: &rmcp::service::ClientInitializeError) -> String {
    match e {
        rmcp::service::ClientInitializeError::TransportError { error, context } => {
            format!("{}, when {context}", transport_failure(error))
        }
        _ => error_chain(e),
    }
}

/// Why a request to a server failed, its transport's failure said as
/// [`initialize_failure`] says it.
fn service_failure(e: &ServiceError) -> String {
    match e {
        ServiceError::TransportSend(error) => transport_failure(error),
        ServiceError::TransportClosed => "its session closed".into(),
        _ => error_chain(e),
    }
}

/// A transport's failure by its own causes.
fn transport_failure(error: &rmcp::transport::DynamicTransportError) -> String {
    use rmcp::transport::streamable_http_client::StreamableHttpError;
    match error.error.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
        Some(StreamableHttpError::Client(e)) => error_chain(e),
        _ => error_chain(&*error.error),
    }
}

/// A streamable-HTTP client transport to `url` sending `headers`, its
/// messages within `cap` bytes, redirects not followed; and the guard
/// that, dropped before it is disarmed, gives up its `initialize`.
fn http_transport(
    url: &str,
    headers: HashMap<http::HeaderName, http::HeaderValue>,
    cap: usize,
) -> Result<(StreamableHttpClientTransport<carried::Carrying>, DropGuard), String> {
    let http = crate::http_client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
    let (client, opening) = carried::Carrying::new(http);
    let transport = StreamableHttpClientTransport::with_client(
        client,
        StreamableHttpClientTransportConfig::with_uri(url)
            .custom_headers(headers)
            .max_json_response_size(cap)
            .max_sse_event_size(cap),
    );
    Ok((transport, opening))
}

/// A `tools/call` answer without content, as servers send it: `{}`, a task
/// acknowledgement (`resultType` alone), or `_meta` alone.
fn contentless(answer: ServerResult) -> Option<CallToolResult> {
    let mut result = CallToolResult::default();
    match answer {
        ServerResult::EmptyResult(_) => {}
        ServerResult::TaskAckResult(ack) => {
            result.result_type = Some(ack.result_type);
            result.meta = ack.meta;
        }
        ServerResult::CustomResult(custom) => {
            let Value::Object(mut fields) = custom.0 else {
                return None;
            };
            let meta = fields.remove("_meta")?;
            if !fields.is_empty() {
                return None;
            }
            result.meta = Some(serde_json::from_value(meta).ok()?);
        }
        _ => return None,
    }
    Some(result)
}

/// A `tools/call` whose answer is no longer awaited (its caller cancelled
/// it, or its deadline passed): the server is told, so it stops.
struct Abandoned(Option<(rmcp::Peer<RoleClient>, rmcp::model::RequestId)>);

impl Abandoned {
    fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for Abandoned {
    fn drop(&mut self) {
        let Some((peer, id)) = self.0.take() else { return };
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let reason = Some("request abandoned by the caller".to_owned());
                let _ = peer
                    .notify_cancelled(CancelledNotificationParam::new(Some(id), reason))
                    .await;
            });
        }
    }
}

/// The server's tools, page by page within its `max_tools` and its message
/// cap; when it lists more, the first are kept and why the rest are not is
/// the first of the refusals [`admit`] reports.
async fn list_tools(config: &UpstreamConfig, peer: &rmcp::Peer<RoleClient>) -> Result<Listed, ServiceError> {
    let within = listing::Bounds {
        items: config.max_tools,
        bytes: config.max_message_bytes,
    };
    listing::list("tools", within, |p| {
        let peer = peer.clone();
        async move {
            let page = peer.list_tools(p).await?;
            Ok((page.tools, page.next_cursor))
        }
    })
    .await
}

type Listed = listing::Listed<Tool>;

/// The tools of `listed` that pass the checks a plugin's tools pass
/// (`plugin::Texts`), under the name they are served by (the prefix and
/// the server's name, each checked), and why each other one is refused,
/// naming the server and the tool.
fn admit(config: &UpstreamConfig, listed: Listed) -> (Vec<Tool>, Vec<String>) {
    let check = |t: &Tool| -> Result<(), String> {
        let texts = Texts {
            name: &t.name,
            title: t.title.as_deref(),
            description: t.description.as_deref().unwrap_or_default(),
            snippet: None,
            guidelines: &[],
        };
        texts.check()?;
        if let Some(title) = t.annotations.as_ref().and_then(|a| a.title.as_deref()) {
            texts.line("title", title, bounds::MAX_TITLE)?;
        }
        let served = format!("{}{}", config.prefix, t.name);
        if !bounds::is_tool_name(&served) {
            return Err(format!(
                "tool name {} (with the prefix) is not 1 to {} characters of [A-Za-z0-9_-]",
                shown(&served),
                bounds::MAX_TOOL_NAME
            ));
        }
        Ok(())
    };
    let mut refused: Vec<String> = listed
        .cut
        .map(|cut| {
            format!(
                "upstream `{}`: {cut} (`max_tools`, `max_message_kb`)",
                config.name
            )
        })
        .into_iter()
        .collect();
    let admitted = listed
        .items
        .into_iter()
        .filter(|t| match check(t) {
            Ok(()) => true,
            Err(e) => {
                refused.push(format!("upstream `{}`: {e}: not served", config.name));
                false
            }
        })
        .collect();
    (admitted, refused)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(deprecated)]
    fn a_server_s_levels_fold_into_the_host_s() {
        use rmcp::model::LoggingLevel;
        assert_eq!(host_level(LoggingLevel::Critical), LogLevel::Error);
        assert_eq!(host_level(LoggingLevel::Notice), LogLevel::Info);
        assert_eq!(host_level(LoggingLevel::Warning), LogLevel::Warn);
    }

    #[test]
    fn only_a_url_server_acts_as_each_caller_its_audience_its_origin_by_default() {
        use serde_json::json;
        let parse = |table: Value| serde_json::from_value::<UpstreamConfig>(table).map_err(|e| e.to_string());
        let http =
            parse(json!({"name": "a", "url": "https://mcp.example:8443/mcp", "credential": "exchange"}))
                .unwrap();
        assert_eq!(http.per_caller.unwrap().audience, "https://mcp.example:8443");
        let named = parse(
            json!({"name": "a", "url": "https://mcp.example/mcp", "credential": "exchange",
                                 "audience": "api://mcp"}),
        )
        .unwrap();
        assert_eq!(named.per_caller.unwrap().audience, "api://mcp");
        assert!(
            parse(json!({"name": "a", "url": "https://mcp.example/mcp"}))
                .unwrap()
                .per_caller
                .is_none()
        );
        for (table, says) in [
            (
                json!({"name": "a", "command": "srv", "credential": "exchange"}),
                "stdio server is one process",
            ),
            (
                json!({"name": "a", "url": "https://m.example", "credential": "store"}),
                "only per-caller",
            ),
            (
                json!({"name": "a", "url": "https://m.example", "audience": "x"}),
                "`audience` is for",
            ),
        ] {
            let err = parse(table).unwrap_err();
            assert!(err.contains("upstream `a`") && err.contains(says), "{err}");
        }
    }

    #[test]
    fn the_forms_other_clients_write_are_refused_with_the_one_toolhost_takes() {
        let parse = |text: &str| toml::from_str::<UpstreamConfig>(text).map_err(|e| e.to_string());
        let err =
            parse("name = \"a\"\ncommand = [\"python\", \"server.py\", \"--token\", \"t0k\"]").unwrap_err();
        assert!(
            err.contains("upstream `a`") && err.contains("write command = \"python\" and args = [...]"),
            "{err}"
        );
        assert!(!err.contains("t0k"), "an argument is repeated: {err}");
        let err = parse("name = \"a\"\ncommand = \"srv\"\nenv = { API_KEY = \"s3cret\" }").unwrap_err();
        assert!(
            err.contains("a list of names") && err.contains("set \"API_KEY\" there"),
            "{err}"
        );
        assert!(!err.contains("s3cret"), "a value is repeated: {err}");
        let err = parse("name = \"a\"\ncommand = 7").unwrap_err();
        assert!(err.contains("a string, the program to start"), "{err}");
        let none = parse("name = \"a\"\ncommand = \"srv\"\nenv = {}").unwrap();
        assert!(matches!(none.transport, Transport::Stdio { env, .. } if env.is_empty()));
        let named = parse("name = \"a\"\ncommand = \"srv\"\nenv = [\"API_KEY\"]").unwrap();
        assert!(matches!(named.transport, Transport::Stdio { env, .. } if env == ["API_KEY"]));
    }

    #[test]
    fn answers_without_content_are_results_and_others_are_not() {
        let read = |answer: Value| contentless(serde_json::from_value(answer).unwrap());
        assert_eq!(read(serde_json::json!({})), Some(CallToolResult::default()));
        let meta = read(serde_json::json!({"_meta": {"k": 1}})).unwrap();
        assert_eq!(meta.meta.unwrap().get("k"), Some(&serde_json::json!(1)));
        let ack = read(serde_json::json!({"resultType": "complete"})).unwrap();
        assert!(ack.result_type.is_some());
        assert_eq!(read(serde_json::json!({"_meta": {}, "other": 1})), None);
        assert_eq!(read(serde_json::json!({"tools": []})), None);
    }
}
