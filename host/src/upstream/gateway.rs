//! The upstream MCP servers' features besides tools, served as toolhost's
//! own: prompts, resources, resource templates, completions, resource
//! subscriptions and instructions. Owns the routing from a name or URI to
//! the server that serves it; not the sessions (the MCP front keeps who
//! subscribed to what) nor the servers' connections (`upstream`).
//!
//! - Prompt names get the server's prefix, as its tools do (`ev_` +
//!   `simple-prompt`); `prompts/get` and prompt completions strip it.
//! - Resource URIs and URI templates are identifiers a model copies from
//!   one place to another (a tool's resource link, a prompt's embedded
//!   resource), so they are served unchanged. A URI is routed to the
//!   server that listed it, else to the server with a template whose text
//!   before its first `{` is the longest start of the URI, else, when only
//!   one server serves resources, to that one. Two servers listing one URI:
//!   the first configured keeps it.
//! - Each server's list changes are re-listed here and announced as a
//!   [`Notice`]; its resource updates are passed on for the front to relay
//!   to the sessions that subscribed.
//! - Instructions: [`merge_instructions`] puts toolhost's own first, then
//!   each server's under a heading with its name.
//! - Everything a server hands over leaves through the catalog's gate, as a
//!   call's result does, whoever asks (the MCP front or an embedder): a
//!   server given a secret (a plugin's, by its `env`) could quote it in a
//!   prompt, a resource, a completion or an error. What cannot pass
//!   redacted is withheld.
//!
//! Part of `upstream` rather than of the MCP front (`mcp`): the library's
//! `Toolhost` carries the gateway of its upstream servers (rebuilt with its
//! catalog), and the front serves what it routes.

use std::sync::{Arc, Weak};

use rmcp::model::{
    CompleteRequestParams, CompleteResult, GetPromptRequestParams, GetPromptResult, Prompt,
    ReadResourceRequestParams, ReadResourceResult, Reference, Resource, ResourceTemplate,
};
use tokio::sync::broadcast;

use super::{Downstream, Event, Upstream, UpstreamError};
use crate::bounds::label;
use crate::gate::Gate;

/// What changed, for the MCP front to tell its sessions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    PromptsChanged,
    ResourcesChanged,
    ResourceUpdated(String),
}

/// A request this gateway cannot route, or the server's failure.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    #[error("no prompt named `{0}`")]
    UnknownPrompt(String),
    #[error("no upstream server serves resource `{0}`")]
    UnknownResource(String),
    #[error("not supported: {0}")]
    Unsupported(String),
    #[error("upstream `{0}` does not take resource subscriptions")]
    NoSubscriptions(String),
    #[error(transparent)]
    Upstream(UpstreamError),
    #[error("withheld: it held a secret value the host holds")]
    Withheld,
}

/// The gate as of now (the catalog's, which a reload replaces); `None`
/// once the host is gone, which withholds everything.
pub(crate) type GateNow = Box<dyn Fn() -> Option<Arc<Gate>> + Send + Sync>;

/// The upstream servers, in configuration order, and the task per server
/// that follows its changes.
pub struct Gateway {
    servers: Vec<Arc<Upstream>>,
    notices: broadcast::Sender<Notice>,
    followers: Vec<tokio::task::JoinHandle<()>>,
    gate: GateNow,
}

/// Notices sent faster than a session takes them before the oldest drop.
const NOTICE_BACKLOG: usize = 256;

impl Gateway {
    /// Must run inside a Tokio runtime: it starts following the servers.
    pub(crate) fn new(servers: Vec<Arc<Upstream>>, gate: GateNow) -> Self {
        let (notices, _) = broadcast::channel(NOTICE_BACKLOG);
        let followers = servers
            .iter()
            .map(|server| tokio::spawn(follow(server.clone(), notices.clone())))
            .collect();
        Self {
            servers,
            notices,
            followers,
            gate,
        }
    }

    /// `what` through the gate; withheld if it cannot pass redacted.
    fn gated<T: serde::Serialize + serde::de::DeserializeOwned>(&self, what: T) -> Result<T, GatewayError> {
        (self.gate)()
            .and_then(|gate| gate.message(what))
            .ok_or(GatewayError::Withheld)
    }

    /// A server's answer through the gate, its error's text too.
    fn passed<T: serde::Serialize + serde::de::DeserializeOwned>(
        &self,
        answer: Result<T, UpstreamError>,
    ) -> Result<T, GatewayError> {
        match answer {
            Ok(answer) => self.gated(answer),
            Err(UpstreamError { name, message }) => match (self.gate)() {
                Some(gate) => Err(GatewayError::Upstream(UpstreamError {
                    name,
                    message: gate.text(&message),
                })),
                None => Err(GatewayError::Withheld),
            },
        }
    }

    /// `client` is the only client the host serves (over stdio): a
    /// server's `roots/list` outside any call goes to it, as it would from
    /// a client connected to the server directly. Where the host serves
    /// many, such a request is refused: whose roots it asks for cannot be
    /// told.
    pub(crate) fn serve_alone(&self, client: Weak<dyn Downstream>) {
        for server in &self.servers {
            server.serve_alone(client.clone());
        }
    }

    /// The sole client's roots changed, or it has just come: each server
    /// reached is told (`notifications/roots/list_changed`), and one that
    /// keeps them asks for them again. Servers that asked as they started,
    /// before the client came, were refused and fell back on their own.
    pub(crate) async fn roots_changed(&self) {
        futures::future::join_all(self.servers.iter().map(|s| s.roots_changed())).await;
    }

    /// Changes from now on.
    pub fn notices(&self) -> broadcast::Receiver<Notice> {
        self.notices.subscribe()
    }

    fn with(&self, feature: impl Fn(&rmcp::model::ServerCapabilities) -> bool) -> bool {
        self.servers
            .iter()
            .any(|s| s.info().is_some_and(|i| feature(&i.capabilities)))
    }

    /// Whether a server reached serves prompts, or one not reached yet may:
    /// a session that begins before it answers is told when its prompts
    /// come (`notifications/prompts/list_changed`), which a client heeds
    /// only if the capability was declared.
    pub fn has_prompts(&self) -> bool {
        self.with(|c| c.prompts.is_some()) || self.any_unreached()
    }

    /// Whether a server reached serves resources, or one not reached yet
    /// may (as [`Self::has_prompts`]).
    pub fn has_resources(&self) -> bool {
        self.with(|c| c.resources.is_some()) || self.any_unreached()
    }

    fn any_unreached(&self) -> bool {
        self.servers.iter().any(|s| !s.reached())
    }

    pub fn has_subscriptions(&self) -> bool {
        self.servers.iter().any(|s| s.takes_subscriptions())
    }

    pub fn has_completions(&self) -> bool {
        self.with(|c| c.completions.is_some())
    }

    /// The servers not reached yet, by name: each is tried again until it
    /// answers, and its tools, prompts and resources served then.
    pub fn unreached(&self) -> Vec<&str> {
        self.servers
            .iter()
            .filter(|s| !s.reached())
            .map(|s| s.config.name.as_str())
            .collect()
    }

    /// The server not reached yet that may serve `tool`, as (name,
    /// prefix): where a call of an unknown tool may have been meant to go.
    /// One whose prefix the tool has is named before one with none.
    pub fn unreached_owner_of(&self, tool: &str) -> Option<(&str, &str)> {
        let unreached = || self.servers.iter().filter(|s| !s.reached());
        unreached()
            .find(|s| !s.config.prefix.is_empty() && tool.starts_with(&s.config.prefix))
            .or_else(|| unreached().find(|s| s.config.prefix.is_empty()))
            .map(|s| (s.config.name.as_str(), s.config.prefix.as_str()))
    }

    /// Once every server still starting that may serve `tool` (its prefix
    /// the tool's) has ended its start with what it listed served
    /// ([`Upstream::until_joined`]); whether there was one to wait for.
    pub async fn until_joined(&self, tool: &str) -> bool {
        let starting: Vec<_> = self
            .servers
            .iter()
            .filter(|s| s.is_joining() && tool.starts_with(&s.config.prefix))
            .map(|s| s.until_joined())
            .collect();
        let waited = !starting.is_empty();
        futures::future::join_all(starting).await;
        waited
    }

    /// Each server's instructions, as (server name, prefix, instructions).
    pub fn instructions(&self) -> Vec<(String, String, String)> {
        let Some(gate) = (self.gate)() else {
            return Vec::new();
        };
        self.servers
            .iter()
            .filter_map(|s| {
                let text = gate.text(&s.instructions()?);
                Some((s.config.name.clone(), s.config.prefix.clone(), text))
            })
            .collect()
    }

    /// Every server's prompts, names prefixed.
    pub fn list_prompts(&self) -> Result<Vec<Prompt>, GatewayError> {
        let prompts: Vec<Prompt> = self
            .servers
            .iter()
            .flat_map(|s| {
                let prompts = s.prompts();
                prompts
                    .iter()
                    .cloned()
                    .map(|mut p| {
                        p.name = format!("{}{}", s.config.prefix, p.name);
                        p
                    })
                    .collect::<Vec<_>>()
            })
            .collect();
        self.gated(prompts)
    }

    /// The server of prefixed prompt `name`, and its name there.
    fn prompt_route(&self, name: &str) -> Result<(&Arc<Upstream>, String), GatewayError> {
        self.servers
            .iter()
            .find_map(|s| {
                let own = name.strip_prefix(s.config.prefix.as_str())?;
                s.prompts()
                    .iter()
                    .any(|p| p.name == own)
                    .then(|| (s, own.to_owned()))
            })
            .ok_or_else(|| GatewayError::UnknownPrompt(label(name).into_owned()))
    }

    pub async fn get_prompt(
        &self,
        mut params: GetPromptRequestParams,
    ) -> Result<GetPromptResult, GatewayError> {
        let (server, own) = self.prompt_route(&params.name)?;
        params.name = own;
        self.passed(server.get_prompt(params).await)
    }

    /// Every server's resources; a URI listed twice is kept once.
    pub fn list_resources(&self) -> Result<Vec<Resource>, GatewayError> {
        let mut seen = std::collections::HashSet::new();
        let resources: Vec<Resource> = self
            .servers
            .iter()
            .flat_map(|s| s.resources().iter().cloned().collect::<Vec<_>>())
            .filter(|r| seen.insert(r.uri.clone()))
            .collect();
        self.gated(resources)
    }

    pub fn list_resource_templates(&self) -> Result<Vec<ResourceTemplate>, GatewayError> {
        let templates: Vec<ResourceTemplate> = self
            .servers
            .iter()
            .flat_map(|s| s.resource_templates().iter().cloned().collect::<Vec<_>>())
            .collect();
        self.gated(templates)
    }

    /// The server that serves `uri` (see the module doc).
    fn resource_route(&self, uri: &str) -> Result<&Arc<Upstream>, GatewayError> {
        if let Some(listed) = self
            .servers
            .iter()
            .find(|s| s.resources().iter().any(|r| r.uri == uri))
        {
            return Ok(listed);
        }
        let mut best: Option<(&Arc<Upstream>, usize)> = None;
        for server in &self.servers {
            for template in server.resource_templates().iter() {
                let start = literal_start(&template.uri_template);
                if !start.is_empty() && uri.starts_with(start) && best.is_none_or(|(_, n)| start.len() > n) {
                    best = Some((server, start.len()));
                }
            }
        }
        if let Some((server, _)) = best {
            return Ok(server);
        }
        let mut serving = self
            .servers
            .iter()
            .filter(|s| s.info().is_some_and(|i| i.capabilities.resources.is_some()));
        match (serving.next(), serving.next()) {
            (Some(only), None) => Ok(only),
            _ => Err(GatewayError::UnknownResource(label(uri).into_owned())),
        }
    }

    pub async fn read_resource(
        &self,
        params: ReadResourceRequestParams,
    ) -> Result<ReadResourceResult, GatewayError> {
        let server = self.resource_route(&params.uri)?;
        self.passed(server.read_resource(params).await)
    }

    /// `completion/complete` for a prompt's or a resource template's
    /// argument, sent to the server that serves it.
    pub async fn complete(&self, mut params: CompleteRequestParams) -> Result<CompleteResult, GatewayError> {
        let server = match &mut params.r#ref {
            Reference::Prompt(prompt) => {
                let (server, own) = self.prompt_route(&prompt.name)?;
                prompt.name = own;
                server
            }
            Reference::Resource(template) => self
                .servers
                .iter()
                .find(|s| {
                    s.resource_templates()
                        .iter()
                        .any(|t| t.uri_template == template.uri)
                })
                .map_or_else(|| self.resource_route(&template.uri), Ok)?,
            other => {
                return Err(GatewayError::Unsupported(format!("completion of {other:?}")));
            }
        };
        self.passed(server.complete(params).await)
    }

    /// Forward a subscription to `uri` to the server that serves it; its
    /// updates then arrive as [`Notice::ResourceUpdated`].
    pub async fn subscribe(&self, uri: &str) -> Result<(), GatewayError> {
        let server = self.resource_route(uri)?;
        if !server.takes_subscriptions() {
            return Err(GatewayError::NoSubscriptions(server.config.name.clone()));
        }
        self.passed(server.subscribe_resource(uri).await)
    }

    pub async fn unsubscribe(&self, uri: &str) -> Result<(), GatewayError> {
        let server = self.resource_route(uri)?;
        self.passed(server.unsubscribe_resource(uri).await)
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        for follower in &self.followers {
            follower.abort();
        }
    }
}

/// A URI template's text before its first expression.
fn literal_start(template: &str) -> &str {
    template.split('{').next().unwrap_or_default()
}

/// Re-list what `server` says changed and announce it, until its session
/// ends. A failed re-list keeps the previous list, with the error logged.
async fn follow(server: Arc<Upstream>, notices: broadcast::Sender<Notice>) {
    let mut events = server.events();
    loop {
        let event = match events.recv().await {
            Ok(event) => event,
            // Missed some: re-list both, which covers whatever they were.
            Err(broadcast::error::RecvError::Lagged(_)) => Event::ResourcesChanged,
            Err(broadcast::error::RecvError::Closed) => return,
        };
        let notice = match event {
            Event::PromptsChanged => server.refresh_prompts().await.map(|()| Notice::PromptsChanged),
            Event::ResourcesChanged => server
                .refresh_resources()
                .await
                .map(|()| Notice::ResourcesChanged),
            Event::ResourceUpdated(uri) => Ok(Notice::ResourceUpdated(uri)),
        };
        match notice {
            Ok(notice) => {
                let _ = notices.send(notice);
            }
            Err(e) => tracing::error!("{e}: serving its previous list"),
        }
    }
}

/// toolhost's own instructions, then each upstream server's under a
/// heading with its name (and the prefix its names carry here); `None`
/// when there are none at all.
pub fn merge_instructions(own: Option<&str>, upstreams: &[(String, String, String)]) -> Option<String> {
    let mut parts: Vec<String> = own
        .map(str::trim)
        .filter(|o| !o.is_empty())
        .map(str::to_owned)
        .into_iter()
        .collect();
    for (name, prefix, text) in upstreams {
        let served = if prefix.is_empty() {
            String::new()
        } else {
            format!("\n\nIts tool and prompt names carry the prefix `{prefix}` here.")
        };
        parts.push(format!("## {name}{served}\n\n{}", text.trim()));
    }
    (!parts.is_empty()).then(|| parts.join("\n\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instructions_are_merged_under_each_servers_name() {
        let upstreams = vec![
            (
                "everything".to_owned(),
                "ev_".to_owned(),
                "Use echo.\n".to_owned(),
            ),
            ("files".to_owned(), String::new(), "Read first.".to_owned()),
        ];
        assert_eq!(
            merge_instructions(Some("toolhost's own."), &upstreams).unwrap(),
            "toolhost's own.\n\n## everything\n\nIts tool and prompt names carry the prefix `ev_` here.\n\n\
             Use echo.\n\n## files\n\nRead first."
        );
        assert_eq!(merge_instructions(None, &[]), None);
        assert_eq!(merge_instructions(Some("  "), &[]), None);
    }

    #[test]
    fn a_templates_literal_start_routes_its_uris() {
        assert_eq!(
            literal_start("demo://resource/dynamic/text/{id}"),
            "demo://resource/dynamic/text/"
        );
        assert_eq!(literal_start("{+path}"), "");
    }
}
