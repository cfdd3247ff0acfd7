//! [`ToolhostBuilder`]: the one way a [`Toolhost`] is assembled from its
//! sources (the native tools, a plugin directory, upstream servers, catalog
//! bindings) and its options (value models, speculation). Each method
//! states the default it changes; the plugin directory passes the trust
//! checks unless [`ToolhostBuilder::trust_unchecked_plugins`] says
//! otherwise.
//!
//! What stops a build is a [`BuildError`] naming the directory or file at
//! fault. What is only left out (a plugin that does not load, a server that
//! cannot be reached, a tool whose name another source owns) is said in the
//! [`BuildReport`] beside the host; the rest is served.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use futures::future::BoxFuture;

use super::audit::Audit;
use super::catalog::{CatalogError, Options, Sources};
use super::policy::Policy;
use super::toolhost::Toolhost;
use crate::credentials::Credentials;
use crate::ownership::{self, Refusal};
use crate::plugin::{LoadError, LoadReport, LogSink, Runtime, tracing_sink};
use crate::speculation;
use crate::supply::{self, SupplyError, TrustSettings};
use crate::tools::{NativeTools, Root, WebSettings};
use crate::upstream::{Upstream, UpstreamConfig, UpstreamError};
use crate::value_model::ValueModel;

/// Assembles a [`Toolhost`]; made by [`Toolhost::builder`].
///
/// With no method called, [`ToolhostBuilder::build`] makes a host that
/// serves nothing: every source is opt-in.
///
/// `'r` is the borrow of the plugins' [`Runtime`], which only loading needs:
/// the host built does not hold it.
#[must_use = "a builder does nothing until `build` is awaited"]
pub struct ToolhostBuilder<'r> {
    root: Option<PathBuf>,
    writable: bool,
    web: WebSettings,
    plugins: Option<(&'r Runtime, PathBuf)>,
    trust: Trust,
    upstreams: Vec<UpstreamConfig>,
    upstream_wait: Option<Duration>,
    log: Option<LogSink>,
    options: Options,
    bindings: BTreeMap<String, String>,
    credentials: Option<Credentials>,
}

/// What the replicas' shared key is derived by for the credential
/// partitions.
const PARTITION_KEY_LABEL: &str = "toolhost credential partitions";

/// How the plugin directory is let in.
enum Trust {
    /// Through the checks of `crate::supply`, under these settings.
    Checked(TrustSettings),
    /// Every file, unchecked.
    Unchecked,
}

impl Default for ToolhostBuilder<'_> {
    fn default() -> Self {
        Self {
            root: None,
            writable: false,
            web: WebSettings::default(),
            plugins: None,
            trust: Trust::Checked(TrustSettings::default()),
            upstreams: Vec::new(),
            upstream_wait: None,
            log: None,
            options: Options::default(),
            bindings: BTreeMap::new(),
            credentials: None,
        }
    }
}

impl<'r> ToolhostBuilder<'r> {
    /// Serve the native tools (`read`, `glob`, `grep`, `ls`, `web_fetch`),
    /// confined to the directory `dir`: no path they are given reaches
    /// outside it. The directory must exist when the host is built.
    ///
    /// Default: no native tools.
    pub fn root(mut self, dir: impl Into<PathBuf>) -> Self {
        self.root = Some(dir.into());
        self
    }

    /// Serve `write` and `edit` under the root too.
    ///
    /// Default: `false`, the root is read-only. Without
    /// [`ToolhostBuilder::root`] this does nothing.
    pub fn writable(mut self, on: bool) -> Self {
        self.writable = on;
        self
    }

    /// What `web_fetch` may reach.
    ///
    /// Default: [`WebSettings::default`]: no host allowed (so every fetch
    /// is refused), bodies cut at 512 KiB, a 20 s timeout.
    pub fn web(mut self, settings: WebSettings) -> Self {
        self.web = settings;
        self
    }

    /// Load the plugins of `dir` (`*.wasm`, each with an optional
    /// `NAME.toml` beside it) with `runtime`, whose options set their
    /// compiled-code cache, their log sink and the user's per-plugin
    /// settings. They pass the trust checks of [`ToolhostBuilder::trust`]
    /// first; a file that fails them, or does not load, is left out and
    /// named in [`BuildReport::plugins`].
    ///
    /// Default: no plugins.
    pub fn plugins(mut self, runtime: &'r Runtime, dir: impl Into<PathBuf>) -> Self {
        self.plugins = Some((runtime, dir.into()));
        self
    }

    /// The trust checks the plugin directory passes (see
    /// [`crate::supply`]).
    ///
    /// Default: [`TrustSettings::default`]: each plugin file, its manifest
    /// and every directory above them writable by no one but the user (or
    /// root); if `plugins.lock` exists in the directory, only the plugins it
    /// records load, with the digests and authority it records; no approval
    /// and no signature required, and no trusted key.
    pub fn trust(mut self, settings: TrustSettings) -> Self {
        self.trust = Trust::Checked(settings);
        self
    }

    /// Load the plugin directory **with no trust checks at all**: any file
    /// in it runs, whoever could write it, locked or not. For tests and for
    /// directories the embedder has vouched for itself; undone by
    /// [`ToolhostBuilder::trust`].
    ///
    /// Default: off, the checks apply.
    pub fn trust_unchecked_plugins(mut self) -> Self {
        self.trust = Trust::Unchecked;
        self
    }

    /// Serve the tools of the upstream MCP server `config` (started or
    /// reached when the host is built); may be called once per server. A
    /// server that cannot be reached is left out and named in
    /// [`BuildReport::upstreams`].
    ///
    /// Default: no upstream server.
    pub fn upstream(mut self, config: UpstreamConfig) -> Self {
        self.upstreams.push(config);
        self
    }

    /// Build the host once every upstream server has answered, or after
    /// `wait`, whichever comes first. A server still starting then goes
    /// on starting, and its tools are served when it answers (those
    /// serving the host are told the tool list changed); a call meanwhile
    /// of a tool it may serve waits for it. It is named in
    /// [`BuildReport::late`]. A server with no such bound keeps the build
    /// waiting for up to its `connect_timeout_s`; a client waiting on the
    /// host's first answer may give up sooner (some do after 10 s).
    ///
    /// Default: no bound, the build waits for every server.
    pub fn upstream_wait(mut self, wait: Duration) -> Self {
        self.upstream_wait = Some(wait);
        self
    }

    /// Where the upstream servers' log lines go. (The plugins' go to the
    /// sink of their [`Runtime`].)
    ///
    /// Default: [`tracing_sink`], the `tracing` events of the host.
    pub fn log(mut self, sink: LogSink) -> Self {
        self.log = Some(sink);
        self
    }

    /// Serve the base-catalog tool `tool` by `backend`, a tool plugin or an
    /// upstream server, by name; may be called once per tool. A binding to a
    /// name no source has fails the build ([`CatalogError`]).
    ///
    /// Default: no binding, so no base-catalog tool is listed but those a
    /// full plugin binds itself.
    pub fn bind(mut self, tool: impl Into<String>, backend: impl Into<String>) -> Self {
        self.bindings.insert(tool.into(), backend.into());
        self
    }

    /// The user's value model of `tool` (its side effects and freshness,
    /// what speculation may do with it), laid last over the one its owner
    /// gives; may be called once per tool.
    ///
    /// Default: none, each tool's owner's value model holds.
    pub fn value_model(mut self, tool: impl Into<String>, model: ValueModel) -> Self {
        self.options.value_models.insert(tool.into(), model);
        self
    }

    /// How speculative prefetch runs: the calls an agent is likely to make
    /// next are made ahead and their results served from a cache.
    ///
    /// Default: [`speculation::Settings::default`]: on, for the native
    /// tools only (a cached file read again ahead when it changes), no
    /// network host, 8 prefetches in flight (4 per host), each cancelled
    /// after 10 s, a 16 MiB cache whose results live 30 s unless a value
    /// model says otherwise, no cluster. [`speculation::Settings::off`]
    /// switches it off.
    pub fn speculation(mut self, settings: speculation::Settings) -> Self {
        self.options.speculation = settings;
        self
    }

    /// Record every call of [`Toolhost::call_tool`] in `audit`: who called
    /// which tool, how it ended, the arguments' shape (see
    /// [`Audit`]).
    ///
    /// Default: no audit.
    pub fn audit(mut self, audit: Audit) -> Self {
        self.options.audit = Some(Arc::new(audit));
        self
    }

    /// Decide every call, and what each caller's tool list shows, by
    /// `policy` (see [`Policy`]); [`Toolhost::replace_policy`] replaces it
    /// while serving.
    ///
    /// Default: no policy; every call is allowed.
    pub fn policy(mut self, policy: Policy) -> Self {
        self.options.policy = Some(Arc::new(policy));
        self
    }

    /// Resolve the secrets each caller brings (`from = "store"` or
    /// `"exchange"` in a plugin's grant) with `credentials`; with a
    /// cluster, their partitions are keyed alike on every replica.
    ///
    /// Default: none; a plugin with such a secret does not build.
    pub fn credentials(mut self, credentials: Credentials) -> Self {
        self.credentials = Some(credentials);
        self
    }

    /// Keep the served tool list pinned to the file of `settings`: while
    /// it exists, a tool whose definition differs from it is served as
    /// pinned or not at all, and a new one not at all (see
    /// [`crate::pin`]).
    ///
    /// Default: no pin, every tool served as its source and enrichers
    /// make it.
    pub fn pin(mut self, settings: crate::pin::Settings) -> Self {
        self.options.pin = Some(settings);
        self
    }

    /// Load, start and reach every source given, and build the host over
    /// what came up, with what was left out beside it. Must run inside a
    /// Tokio runtime.
    pub async fn build(self) -> Result<(Toolhost, BuildReport), BuildError> {
        let loaded = match &self.plugins {
            None => LoadReport::default(),
            Some((runtime, dir)) => match &self.trust {
                Trust::Checked(settings) => supply::load_dir(runtime, settings, dir).await?,
                Trust::Unchecked => runtime.load_dir(dir).await.map_err(SupplyError::from)?,
            },
        };
        let native = match self.root {
            Some(dir) => {
                let root = Root::new(&dir).map_err(|source| BuildError::Root { dir, source })?;
                let native = NativeTools::new(root, self.web).map_err(BuildError::WebClient)?;
                Some(Arc::new(native.writable(self.writable)))
            }
            None => None,
        };
        let mut report = BuildReport {
            plugins: loaded.errors,
            ..BuildReport::default()
        };
        let log = self.log.unwrap_or_else(tracing_sink);
        // Every server's secrets held before any starts, so what a stdio
        // server is not given does not depend on which started first.
        for config in &self.upstreams {
            config.hold_secrets();
        }
        // All at once: each may take seconds to start (`npx` fetching a
        // package) or to time out, and none waits on another. Their tools
        // keep the configuration's order.
        let upstreams: Vec<Arc<Upstream>> = self
            .upstreams
            .into_iter()
            .map(|config| Upstream::configured(config, log.clone()))
            .collect();
        let mut starts: Vec<Start> = upstreams
            .iter()
            .map(|server| {
                let server = server.clone();
                Start::Going(Box::pin(async move { server.start().await }))
            })
            .collect();
        let all_ended = futures::future::poll_fn(|cx| {
            let mut ended = true;
            for start in &mut starts {
                if let Start::Going(going) = start {
                    match going.as_mut().poll(cx) {
                        Poll::Ready(result) => *start = Start::Ended(result),
                        Poll::Pending => ended = false,
                    }
                }
            }
            if ended { Poll::Ready(()) } else { Poll::Pending }
        });
        match self.upstream_wait {
            Some(wait) => {
                let _ = tokio::time::timeout(wait, all_ended).await;
            }
            None => all_ended.await,
        }
        for (server, start) in upstreams.iter().zip(starts) {
            match start {
                Start::Ended(Ok(())) => report.upstream_tools.extend(server.refused()),
                // Kept, and tried again while the host lives: a server
                // started after toolhost (a compose file) joins when it
                // answers.
                Start::Ended(Err(e)) => report.upstreams.push(e),
                Start::Going(start) => {
                    server.start_late(start);
                    report.late.push(server.config.name.clone());
                }
            }
        }
        let sources = Sources {
            native,
            plugins: loaded.plugins,
            upstreams,
            bindings: self.bindings,
        };
        let mut options = self.options;
        options.credentials = self.credentials.map(|c| {
            Arc::new(match &options.speculation.cluster {
                Some(cluster) => c.keyed(cluster.derived_key(PARTITION_KEY_LABEL)),
                None => c,
            })
        });
        let host = Toolhost::with_options(sources, options).await?;
        host.count_refused_loads(&report.plugins);
        report.refusals = host.refusals();
        Ok((host, report))
    }
}

/// An upstream server's first start, as the build waits on it.
enum Start {
    Going(BoxFuture<'static, Result<(), UpstreamError>>),
    Ended(Result<(), UpstreamError>),
}

/// What stopped a [`ToolhostBuilder::build`]: nothing was served.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The native tools' root is not a directory that can be opened.
    #[error("tool root {}: {source}", dir.display())]
    Root {
        /// The directory given to [`ToolhostBuilder::root`].
        dir: PathBuf,
        /// Why it could not be opened.
        source: std::io::Error,
    },
    /// The HTTP client of `web_fetch` could not be built.
    #[error("the HTTP client of web_fetch: {0}")]
    WebClient(#[source] reqwest::Error),
    /// The plugin directory could not be listed, or a file the trust checks
    /// rest on (the lock file, the approvals, a key) is unsafe, unreadable
    /// or malformed; the error names it.
    #[error(transparent)]
    Plugins(#[from] SupplyError),
    /// The catalog could not be built: a binding names a tool or a backend
    /// that does not exist, or a value model allows unsafe speculation.
    #[error(transparent)]
    Catalog(#[from] CatalogError),
}

/// What a [`ToolhostBuilder::build`] left out, each entry naming what is at
/// fault; everything else is served.
#[derive(Debug, Default)]
pub struct BuildReport {
    /// The plugin files that did not load (refused by the trust checks,
    /// broken, or refusing to start), each with its path and why.
    pub plugins: Vec<LoadError>,
    /// The upstream servers that could not be started or reached, by name;
    /// each is tried again while the host lives (`Toolhost::gateway`).
    pub upstreams: Vec<UpstreamError>,
    /// The upstream servers still starting when the build stopped waiting
    /// ([`ToolhostBuilder::upstream_wait`]), by name: each is served when
    /// it answers, or tried again if its start fails.
    pub late: Vec<String>,
    /// The tools the upstream servers listed and that are not served, each
    /// line naming the server, the tool and why.
    pub upstream_tools: Vec<String>,
    /// The tools left out because another source owns their name (see
    /// [`crate::ownership`]).
    pub refusals: Vec<Refusal>,
}

impl BuildReport {
    /// Whether everything given was served.
    pub fn is_empty(&self) -> bool {
        self.plugins.is_empty()
            && self.upstreams.is_empty()
            && self.late.is_empty()
            && self.upstream_tools.is_empty()
            && self.refusals.is_empty()
    }

    /// One line per thing left out, for a terminal or a log; the refusals
    /// are counted a line per source.
    pub fn lines(&self) -> Vec<String> {
        let plugins = self.plugins.iter().map(ToString::to_string);
        let upstreams = self.upstreams.iter().map(ToString::to_string);
        plugins
            .chain(upstreams)
            .chain(self.upstream_tools.iter().cloned())
            .chain(ownership::summary(&self.refusals))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::{CallControl, ToolError};

    #[tokio::test]
    async fn a_builder_with_a_root_serves_the_native_tools_and_names_what_fails() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("notes.txt"), "one\ntwo\n").unwrap();
        let (host, report) = Toolhost::builder()
            .root(dir.path())
            .speculation(speculation::Settings::off())
            .build()
            .await
            .unwrap();
        assert!(report.is_empty(), "{report:?}");
        let listed = host.list_tools();
        assert!(listed.tools.iter().any(|t| t.name == "read"));
        assert!(
            !listed.tools.iter().any(|t| t.name == "write"),
            "read-only by default"
        );
        let ctx = CallControl::new("t");
        let out = host
            .call_tool("read", json!({"path": "notes.txt"}), &ctx)
            .await
            .unwrap();
        assert!(out.text().contains("two"), "{}", out.text());
        let err = host.call_tool("nope", json!({}), &ctx).await.unwrap_err();
        assert_eq!((err.tool.as_str(), err.plugin.as_deref()), ("nope", None));
        assert!(matches!(err.error, ToolError::NotFound(_)), "{err:?}");
    }

    /// Every task that runs a call holds this future, and each layer above
    /// it copies it: an upstream request's future inline (rmcp's are
    /// several KB) made it 12.9 KB in this profile, against 4.2 KB boxed.
    #[tokio::test]
    async fn a_call_future_stays_small() {
        let (host, _) = Toolhost::builder().build().await.unwrap();
        let ctx = CallControl::new("t");
        let call = host.call_tool("read", json!({}), &ctx);
        let size = std::mem::size_of_val(&call);
        assert!(size <= 8 << 10, "a call's future is {size} bytes");
    }

    #[tokio::test]
    async fn a_missing_root_or_plugin_directory_is_named_by_the_error() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing");
        let err = Toolhost::builder().root(&missing).build().await.err().unwrap();
        assert!(
            matches!(&err, BuildError::Root { dir, .. } if *dir == missing),
            "{err:?}"
        );
        let runtime = Runtime::new(crate::plugin::RuntimeOptions {
            cache_dir: None,
            ..Default::default()
        })
        .unwrap();
        let err = Toolhost::builder()
            .plugins(&runtime, &missing)
            .trust_unchecked_plugins()
            .build()
            .await
            .err()
            .unwrap();
        let named = matches!(&err, BuildError::Plugins(SupplyError::Dir(d)) if d.dir == missing);
        assert!(named, "{err:?}");
    }

    #[tokio::test]
    async fn a_binding_to_nothing_fails_the_build() {
        let err = Toolhost::builder()
            .bind("no_such_tool", "nobody")
            .build()
            .await
            .err()
            .unwrap();
        let named = matches!(&err, BuildError::Catalog(CatalogError::UnknownCatalogTool { tool }) if tool == "no_such_tool");
        assert!(named, "{err:?}");
    }
}
