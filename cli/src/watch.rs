//! `toolhost serve --watch`: the plugin directory reloaded while serving,
//! so a vendor sees a rebuilt plugin without restarting the agent's host.
//!
//! Owns the file-system watch (notify) and the reload; swapping the plugins
//! and the catalog is [`Toolhost::replace_plugins`], and telling the MCP
//! clients (`tools/list_changed`) is the MCP front's, as for any rebuild.
//!
//! Decisions:
//! - Any change of a `*.wasm` or `*.toml` in the directory reloads the whole
//!   directory, not just the file: registration order (file names, `order`)
//!   and the `[plugin.NAME]` settings are properties of the directory.
//!   Components that did not change come from the code cache, so a reload
//!   costs a compile only for what changed.
//! - Events are let settle for [`SETTLE`] first: copying a file is several
//!   writes. Then a reload waits while any plugin or manifest is open for
//!   writing (created or written to, and not yet closed by its writer): a
//!   half-written file is never loaded, however slowly it is written. A
//!   file renamed into the directory is complete (`mv`, or a download
//!   tool's rename), and loads at once. Should a file still change while it
//!   is read, the supply checks refuse it for that reload (see
//!   `toolhost::supply`).
//! - Each reload reads the lock file, approvals and keys afresh
//!   ([`supply::load_dir`]), and a change of the lock file or the approvals
//!   alone reloads too (their directory is watched as well, for those two
//!   files only): `toolhost lock` or `approve` while serving takes effect
//!   at once.
//! - A reload is all or nothing for the catalog: if the directory cannot be
//!   read, or the catalog does not build with the new plugins (a `[bind]`
//!   to a tool plugin that is gone), the previous plugins keep serving and
//!   the error is logged. A plugin that fails to load is left out, the
//!   others load, as at start.
//! - Reloaded plugins start afresh (new instances, health, quarantine);
//!   calls in flight finish on the plugins they started with.
//! - The policy file (`[policy] file`) is watched too ([`PolicyWatch`]),
//!   through its directory, so an editor's save by rename is seen: each
//!   change settles as above and is read whole; a policy that does not
//!   parse keeps the last good one deciding, and the error is logged with
//!   the file and line.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use notify::event::{AccessKind, AccessMode, ModifyKind};
use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use tokio::sync::mpsc;

use toolhost::plugin::Runtime;
use toolhost::supply::{self, TrustSettings};
use toolhost::{Policy, Toolhost};

/// How long the directory must be quiet before it is reloaded.
pub const SETTLE: Duration = Duration::from_millis(300);

/// A watch on one plugin directory.
pub struct PluginWatch {
    dir: PathBuf,
    trust: TrustSettings,
    changes: Changes,
    /// Plugins and manifests open for writing: created or written to, and
    /// not yet closed, removed or renamed away.
    writing: Arc<Mutex<BTreeSet<PathBuf>>>,
}

impl PluginWatch {
    /// Start watching `dir`. Fails (naming the directory) if it cannot be
    /// watched, so `serve --watch` does not start without its watch.
    pub fn new(dir: &Path, trust: &TrustSettings) -> anyhow::Result<Self> {
        let cannot = || format!("cannot watch the plugin directory {}", dir.display());
        // notify's own error for a missing path names no cause.
        std::fs::read_dir(dir).with_context(cannot)?;
        let writing = Arc::new(Mutex::new(BTreeSet::new()));
        let open = writing.clone();
        let plugin_dir = std::path::absolute(dir).with_context(cannot)?;
        let supply_files =
            [trust.lock_path(dir), trust.approvals_path(dir)].map(|p| std::path::absolute(&p).unwrap_or(p));
        // The lock file and the approvals live beside the directory (or
        // where `[trust]` says): their directories are watched too.
        let mut watched = BTreeSet::from([plugin_dir.clone()]);
        watched.extend(
            supply_files
                .iter()
                .filter_map(|file| file.parent())
                .filter(|parent| parent.is_dir())
                .map(Path::to_owned),
        );
        let relevant = Relevant {
            plugin_dir,
            supply_files: supply_files.to_vec(),
        };
        let changes = Changes::watch("the plugin directory", &watched, move |event| {
            let change = relevant.is_change(event);
            if change {
                track_writers(event, &mut open.lock().expect("writers lock"));
            }
            change
        })
        .with_context(cannot)?;
        Ok(Self {
            dir: dir.to_owned(),
            trust: trust.clone(),
            changes,
            writing,
        })
    }

    /// Reload the directory into `host` after each change, until the watch
    /// ends (it is dropped with the future).
    pub async fn run(mut self, runtime: &Runtime, host: &Toolhost) {
        while self.changes.settled().await {
            let writing = self.still_writing();
            if !writing.is_empty() {
                tracing::info!(
                    "plugin directory {} changed; waiting for {} to be closed by its writer before reloading",
                    self.dir.display(),
                    writing.join(", ")
                );
                continue;
            }
            self.reload(runtime, host).await;
        }
    }

    /// The files still open for writing (a file gone meanwhile is not:
    /// its close may never be seen).
    fn still_writing(&self) -> Vec<String> {
        let mut writing = self.writing.lock().expect("writers lock");
        writing.retain(|path| path.exists());
        writing
            .iter()
            .map(|p| {
                p.file_name()
                    .unwrap_or(p.as_os_str())
                    .to_string_lossy()
                    .into_owned()
            })
            .collect()
    }

    async fn reload(&self, runtime: &Runtime, host: &Toolhost) {
        let dir = self.dir.display();
        let report = match supply::load_dir(runtime, &self.trust, &self.dir).await {
            Ok(report) => report,
            Err(e) => {
                tracing::error!("plugin directory changed, but {e:#}: serving the previous plugins");
                return;
            }
        };
        for error in &report.errors {
            tracing::error!("{error}");
        }
        host.count_refused_loads(&report.errors);
        let loaded = match report.plugins.len() {
            0 => "no plugins".to_owned(),
            _ => {
                let names: Vec<&str> = report.plugins.iter().map(|p| &*p.name).collect();
                format!("plugins {}", names.join(", "))
            }
        };
        match host.replace_plugins(report.plugins).await {
            Ok(()) => tracing::info!("plugin directory {dir} reloaded ({loaded}): catalog rebuilt"),
            Err(e) => {
                tracing::error!("plugin directory {dir} changed, but {e}: serving the previous plugins")
            }
        }
    }
}

/// A watch on the policy file.
pub struct PolicyWatch {
    file: PathBuf,
    changes: Changes,
}

impl PolicyWatch {
    /// Start watching the policy `file` (through its directory). Fails,
    /// naming it, if it cannot be watched.
    pub fn new(file: &Path) -> anyhow::Result<Self> {
        let cannot = || format!("cannot watch the policy file {}", file.display());
        let file = std::path::absolute(file).with_context(cannot)?;
        let dir = file.parent().with_context(cannot)?.to_owned();
        let watched = file.clone();
        let changes = Changes::watch("the policy file", &BTreeSet::from([dir]), move |event| {
            !matches!(event.kind, EventKind::Access(_)) && event.paths.contains(&watched)
        })
        .with_context(cannot)?;
        Ok(Self { file, changes })
    }

    /// Read the policy file into `host` after each change, until the watch
    /// ends (it is dropped with the future).
    pub async fn run(mut self, host: Arc<Toolhost>) {
        while self.changes.settled().await {
            match Policy::read(&self.file) {
                Ok(policy) => {
                    tracing::info!(
                        "policy file {} reloaded: {} rules",
                        self.file.display(),
                        policy.rules()
                    );
                    host.replace_policy(Some(policy));
                }
                Err(e) => tracing::error!("{e}: the last good policy still decides"),
            }
        }
    }
}

/// Directories watched through notify, seen as a stream of settled
/// bursts of the changes a filter accepts.
struct Changes {
    changes: mpsc::UnboundedReceiver<()>,
    /// Stops watching when dropped.
    _watcher: RecommendedWatcher,
}

impl Changes {
    /// Watch each of `dirs` (not recursively); `accept` sees every event
    /// and says whether it is a change. `what` names the watch in logs.
    fn watch(
        what: &'static str,
        dirs: &BTreeSet<PathBuf>,
        mut accept: impl FnMut(&Event) -> bool + Send + 'static,
    ) -> notify::Result<Self> {
        let (tx, changes) = mpsc::unbounded_channel();
        let mut watcher = notify::recommended_watcher(move |event: notify::Result<Event>| match event {
            Ok(event) if accept(&event) => {
                let _ = tx.send(());
            }
            Ok(_) => {}
            Err(e) => tracing::warn!("watching {what}: {e}"),
        })?;
        for dir in dirs {
            watcher.watch(dir, RecursiveMode::NonRecursive)?;
        }
        Ok(Self {
            changes,
            _watcher: watcher,
        })
    }

    /// Wait for a change, then for [`SETTLE`] of quiet after it. False
    /// once the watch has ended.
    async fn settled(&mut self) -> bool {
        if self.changes.recv().await.is_none() {
            return false;
        }
        loop {
            match tokio::time::timeout(SETTLE, self.changes.recv()).await {
                Ok(Some(())) => continue,
                Ok(None) => return false,
                Err(_quiet) => return true,
            }
        }
    }
}

/// The files whose changes may alter what loads.
struct Relevant {
    /// Absolute, as notify names the paths of a directory watched by an
    /// absolute path.
    plugin_dir: PathBuf,
    /// The lock file and the approvals, absolute.
    supply_files: Vec<PathBuf>,
}

impl Relevant {
    /// A change that may alter what loads: a component or a manifest of
    /// the directory, the lock file or the approvals created, written,
    /// renamed or removed. Reads (the reload's own) are not changes.
    fn is_change(&self, event: &Event) -> bool {
        let relevant_path = event.paths.iter().any(|p| {
            let plugin_file = p.parent() == Some(self.plugin_dir.as_path())
                && p.extension().is_some_and(|e| e == "wasm" || e == "toml");
            plugin_file || self.supply_files.contains(p)
        });
        let relevant_kind = match event.kind {
            EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
            EventKind::Access(_) => false,
            _ => true,
        };
        relevant_path && relevant_kind
    }
}

/// Keep `writing` (the files open for writing) up to date with `event`.
fn track_writers(event: &Event, writing: &mut BTreeSet<PathBuf>) {
    match event.kind {
        EventKind::Create(_) | EventKind::Modify(ModifyKind::Data(_) | ModifyKind::Any) => {
            writing.extend(event.paths.iter().cloned());
        }
        // Closed after writing, gone, or renamed (away, or in: complete).
        EventKind::Access(AccessKind::Close(AccessMode::Write))
        | EventKind::Remove(_)
        | EventKind::Modify(ModifyKind::Name(_)) => {
            for path in &event.paths {
                writing.remove(path);
            }
        }
        _ => {}
    }
}
