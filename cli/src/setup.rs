//! Building a [`Toolhost`] from the configuration: the plugin directory,
//! the native tools' root and web policy, upstream servers and catalog
//! bindings. Shared by `toolhost serve` and `toolhost call`; the library
//! user who wants other sources builds [`Sources`] directly.
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
use std::sync::Arc;

use anyhow::Context;

use crate::config::Config;
use toolhost::cluster::Cluster;
use toolhost::ownership;
use toolhost::pipeline::{Options, Sources, Toolhost};
use toolhost::plugin::{LoadReport, Runtime};
use toolhost::tools::{NativeTools, Root};
use toolhost::upstream::Upstream;

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
    // target/release/toolhost → build/plugins of the same tree.
    let exe = std::env::current_exe().ok()?;
    let bundled = exe.parent()?.parent()?.parent()?.join("build/plugins");
    bundled.is_dir().then_some(bundled)
}

/// Load the plugins of `plugin_dir` (if any) that pass the supply checks
/// of `[trust]` (see `toolhost::supply`), start the upstream servers and
/// assemble the catalog. What could not be loaded or reached is returned
/// beside the host, each error naming its plugin or server.
pub async fn build(
    runtime: &Runtime,
    config: &Config,
    plugin_dir: Option<&Path>,
) -> anyhow::Result<(Toolhost, Vec<String>)> {
    let report = match plugin_dir {
        Some(dir) => toolhost::supply::load_dir(runtime, &config.trust, dir).await?,
        None => LoadReport::default(),
    };
    let root_dir = match &config.root {
        Some(dir) => dir.clone(),
        None => std::env::current_dir()?,
    };
    let root = Root::new(&root_dir).with_context(|| format!("tool root {}", root_dir.display()))?;
    let native = NativeTools::new(root, config.web.clone())?.writable(config.writable);
    let mut errors: Vec<String> = report.errors.iter().map(ToString::to_string).collect();
    let load_errors = report.errors;
    let mut upstreams = Vec::new();
    for server in &config.upstream {
        match Upstream::connect(server.clone(), runtime.log_sink()).await {
            Ok(upstream) => {
                errors.extend(upstream.refused());
                upstreams.push(upstream);
            }
            Err(e) => errors.push(e.to_string()),
        }
    }
    let sources = Sources {
        native: Some(Arc::new(native)),
        plugins: report.plugins,
        upstreams,
        bindings: config.bind.clone(),
    };
    let mut speculation = config.speculation.clone();
    if let Some(cluster) = &config.cluster {
        speculation.cluster = Some(Cluster::connect(&cluster.redis, &cluster.prefix, cluster.key()?)?);
    }
    let options = Options {
        value_models: config.tools.clone(),
        speculation,
    };
    let host = Toolhost::with_options(sources, options).await?;
    host.count_refused_loads(&load_errors);
    errors.extend(ownership::summary(&host.refusals()));
    Ok((host, errors))
}
