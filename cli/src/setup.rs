//! Building a [`Toolhost`] from the configuration: the plugin directory,
//! the native tools' root and web policy, upstream servers, catalog
//! bindings, the audit, the policy and callers' credentials. Shared by `toolhost serve`, `call` and `tools`: the
//! configuration read into a [`toolhost::ToolhostBuilder`], the one way a
//! host is assembled.
//!
//! With no configuration at all the host still serves: the native tools
//! confined to the working directory, and the bundled plugins if a plugin
//! directory is found (`./plugins`, else `build/plugins` of the source tree
//! the binary was built in).
//!
//! A plugin that does not load, an upstream server that cannot be started
//! or reached, and a tool whose name another source owns (see `ownership`)
//! are reported by name and left out; the rest is served (a binding to
//! what was left out is still an error).

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::config::Config;
use toolhost::Audit;
use toolhost::Cluster;
use toolhost::Credentials;
use toolhost::Policy;
use toolhost::Toolhost;
use toolhost::plugin::Runtime;

/// The argument that runs this program as a plugin compiler
/// ([`toolhost::plugin::run_worker`]) instead of as the command line.
pub const COMPILE_WORKER_ARG: &str = "__compile-plugin";

/// How this program compiles plugins: in a worker process of its own, so
/// that a component shaped to take the compiler minutes is stopped and
/// named, not waited for; in this process only if it cannot find itself.
pub fn compiler() -> toolhost::plugin::Compiler {
    match std::env::current_exe() {
        Ok(program) => toolhost::plugin::Compiler::Worker {
            program,
            args: vec![COMPILE_WORKER_ARG.into()],
            cpu: toolhost::plugin::COMPILE_CPU,
            wall: toolhost::plugin::COMPILE_WALL,
        },
        Err(e) => {
            tracing::warn!("plugins are compiled in this process: this program cannot find itself ({e})");
            toolhost::plugin::Compiler::InProcess
        }
    }
}

/// The plugin directory every command uses: the one named on the command
/// line, else the configuration's `plugins`, else [`default_plugin_dir`].
/// A directory that is named must exist (loading it says so); only the
/// default is looked for.
pub fn plugin_dir(named: Option<&Path>, config: &Config) -> Option<PathBuf> {
    named
        .map(Path::to_owned)
        .or_else(|| config.plugins.clone())
        .or_else(default_plugin_dir)
}

/// The plugin directory to use when neither the command line nor the
/// configuration names one, if any exists.
fn default_plugin_dir() -> Option<PathBuf> {
    let local = PathBuf::from("plugins");
    if local.is_dir() {
        return Some(local);
    }
    let bundled = build_tree()?.join("build/plugins");
    bundled.is_dir().then_some(bundled)
}

/// The SDK of the source tree this binary was built in, if it is one
/// (`sdk/` holding `toolhost-sdk`): what `new` builds a Rust plugin on.
pub fn sdk_of_this_build() -> Option<PathBuf> {
    let sdk = build_tree()?.join("sdk");
    let manifest = std::fs::read_to_string(sdk.join("Cargo.toml")).ok()?;
    manifest.contains("name = \"toolhost-sdk\"").then_some(sdk)
}

/// The source tree of this binary: `target/release/toolhost` → the
/// directory holding `target`.
fn build_tree() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    Some(exe.parent()?.parent()?.parent()?.to_owned())
}

/// Load the plugins of `plugin_dir` (if any) that pass the supply checks
/// of `[trust]` (see `toolhost::supply`), start the upstream servers and
/// assemble the catalog, with [`Toolhost::builder`]. What could not be
/// loaded or reached is returned beside the host, each error naming its
/// plugin or server. With `upstream_wait`, servers slower than that to
/// start are served once they answer; without, the build waits for them.
pub async fn build(
    runtime: &Runtime,
    config: &Config,
    plugin_dir: Option<&Path>,
    upstream_wait: Option<Duration>,
) -> anyhow::Result<(Toolhost, Vec<String>)> {
    // Opened first: a file that cannot be written stops the start before
    // anything is loaded, naming it.
    let audit = config.audit.as_ref().map(|a| Audit::open(&a.file)).transpose()?;
    // Read before anything is loaded too: a broken policy names its file
    // and line, and nothing is served unguarded.
    let policy = config
        .policy
        .as_ref()
        .map(|p| Policy::read(&p.file))
        .transpose()?;
    // Checked and read before anything is loaded: an unsafe store names
    // its file.
    let credentials = config
        .credentials
        .as_ref()
        .map(|c| Credentials::open(&c.settings()))
        .transpose()?;
    let root = match &config.root {
        Some(dir) => dir.clone(),
        None => std::env::current_dir()?,
    };
    let mut speculation = config.speculation.clone();
    if let Some(cluster) = &config.cluster {
        speculation.cluster = Some(Cluster::connect(&cluster.redis, &cluster.prefix, cluster.key()?)?);
    }
    let mut builder = Toolhost::builder()
        .root(root)
        .writable(config.writable)
        .web(config.web.clone())
        .trust(config.trust.clone())
        .log(runtime.log_sink())
        .speculation(speculation)
        .pin(config.pin_settings());
    if let Some(dir) = plugin_dir {
        builder = builder.plugins(runtime, dir);
    }
    if let Some(audit) = audit {
        builder = builder.audit(audit);
    }
    if let Some(policy) = policy {
        builder = builder.policy(policy);
    }
    if let Some(credentials) = credentials {
        builder = builder.credentials(credentials);
    }
    for server in &config.upstream {
        builder = builder.upstream(server.clone());
    }
    if let Some(wait) = upstream_wait {
        builder = builder.upstream_wait(wait);
    }
    for (tool, backend) in &config.bind {
        builder = builder.bind(tool, backend);
    }
    for (tool, model) in &config.tools {
        builder = builder.value_model(tool, model.clone());
    }
    let (host, report) = builder.build().await?;
    let mut errors = report.lines();
    if plugin_dir.is_none() {
        errors.extend(config.plugin_settings_unused());
    }
    Ok((host, errors))
}
