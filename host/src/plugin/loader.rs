//! Finding and loading plugins: a directory of `*.wasm` files, each with an
//! optional sidecar manifest `NAME.toml`, loaded in registration order.
//!
//! Registration order: plugins with an explicit `order` first, lowest
//! first; then the rest; ties and the rest by file name (so `10-github.wasm`
//! comes before `20-jira.wasm`). A plugin's name is its file stem without a
//! leading number and dash (`10-github.wasm` is `github`).
//!
//! One bad file never stops the others: each failure becomes a
//! [`LoadError`] naming the file and saying what is wrong (not WebAssembly,
//! a core module rather than a component, no toolhost export, an
//! unsupported package version, an import the host does not provide, a
//! malformed manifest, or the plugin's own refusal to start).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use sha2::{Digest, Sha256};
use wasmtime::component::Component;
use wasmtime::component::types::ComponentItem;

use super::cache::CodeSource;
use super::host_api::PluginIdentity;
use super::http::HttpGrant;
use super::instance::Instances;
use super::manifest::{Manifest, Overlay};
use super::shadow::Shadow;
use super::wit::{Indices, PACKAGE, Version};
use super::{Plugin, PluginError, Runtime, Worlds};
use crate::plugin_file::ComponentFile;

/// A file that could not be loaded, and why.
#[derive(Debug, Clone, serde::Serialize)]
pub struct LoadError {
    /// The file (or, for settings of a plugin not there, the directory).
    pub path: PathBuf,
    /// What kind of thing is wrong.
    pub kind: LoadErrorKind,
    /// What is wrong, for a person.
    pub message: String,
}

/// What kind of thing is wrong with a file that did not load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LoadErrorKind {
    /// A directory or special file named like a plugin.
    NotAFile,
    /// The file could not be read.
    Unreadable,
    /// Not WebAssembly at all.
    NotWebAssembly,
    /// A core module, not a component.
    CoreModule,
    /// WebAssembly that does not compile or validate as a component.
    InvalidComponent,
    /// No toolhost enricher or tool export.
    NoToolhostWorld,
    /// Built against a version of the contract this host does not implement.
    UnsupportedVersion,
    /// Exports of more than one version of the contract.
    MixedVersions,
    /// An import the host does not provide.
    UnsupportedImport,
    /// An export whose types are not the contract's.
    BadExport,
    /// The sidecar manifest, or the user's settings for the plugin.
    Manifest,
    /// `toolhost.toml` has settings for a plugin not in the directory.
    UnknownPlugin,
    /// Another file already loaded a plugin of the same name.
    DuplicateName,
    /// The plugin's own refusal to start (its error from
    /// `supported-categories` or `list-tools`).
    Refused,
    /// The plugin handed over something outside the contract or its caps
    /// (a tool definition, a category).
    Invalid,
    /// The plugin trapped, or ran out of CPU or time, while loading.
    Failed,
    /// Refused before any of its code ran (an `Admission`: a path others
    /// can write, a lock file it does not match, no approval, no valid
    /// signature).
    NotAdmitted,
    /// Its compile took longer than a worker's CPU or wall time
    /// ([`crate::plugin::Compiler::Worker`]), and was stopped.
    CompileStopped,
    /// A file over the host's cap on a component
    /// ([`crate::bounds::MAX_COMPONENT_BYTES`]), refused unread.
    TooLarge,
}

/// A failure while loading one file, before it is given the file's path.
type Fail = (LoadErrorKind, String);

impl LoadError {
    /// The name the plugin would have had: `10-github.wasm` → `github`.
    pub fn plugin(&self) -> Arc<str> {
        plugin_name(&self.path)
    }

    /// The one way a load error is made: its message may quote the file
    /// (a name in a component that does not validate, a manifest's line)
    /// or the plugin, so its control characters are escaped here.
    fn new(path: &Path, (kind, message): Fail) -> Self {
        Self {
            path: path.to_owned(),
            kind,
            message: crate::bounds::escape_controls(message),
        }
    }
}

impl From<PluginError> for Fail {
    fn from(e: PluginError) -> Self {
        let kind = match &e {
            PluginError::Rejected { .. } => LoadErrorKind::Refused,
            PluginError::Invalid { .. } | PluginError::TooLarge { .. } => LoadErrorKind::Invalid,
            PluginError::Trap { .. }
            | PluginError::Cpu { .. }
            | PluginError::Timeout { .. }
            | PluginError::Quarantined { .. } => LoadErrorKind::Failed,
        };
        (kind, e.to_string())
    }
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let path = crate::bounds::escape_controls(self.path.display().to_string());
        write!(f, "{path}: {}", self.message)
    }
}

/// The result of loading a directory.
#[derive(Default)]
pub struct LoadReport {
    /// Loaded plugins, in registration order.
    pub plugins: Vec<Arc<Plugin>>,
    /// The files that did not load, and why.
    pub errors: Vec<LoadError>,
    /// Files whose manifest says `enabled = false`.
    pub disabled: Vec<PathBuf>,
}

/// Decides, before a file's code is compiled or run, whether it may load
/// (the supply-chain checks of `crate::supply`). `Err` is the reason,
/// reported for the file like any load error. `Ok(Some(file))` is the
/// component as read and checked: those bytes are what is compiled (or
/// found in the code cache by their digest) and run.
pub trait Admission: Sync {
    fn admit(&self, path: &Path, name: &str, manifest: &Manifest) -> Result<Option<ComponentFile>, String>;

    /// Whether a plugin's shadow candidate (`shadow = "FILE"`) may load. It
    /// is never locked or approved (it is what may replace the plugin, and
    /// it runs with no grant), but its file must be as safe as a plugin's.
    fn admit_candidate(&self, path: &Path) -> Result<Option<ComponentFile>, String> {
        crate::plugin_file::check_safe_path(path)
            .map(|()| None)
            .map_err(|e| e.message)
    }
}

/// Admits every file: a directory loaded without supply-chain checks.
struct AdmitAll;

impl Admission for AdmitAll {
    fn admit(&self, _: &Path, _: &str, _: &Manifest) -> Result<Option<ComponentFile>, String> {
        Ok(None)
    }
}

/// A `.wasm` file found, with its manifest and, if the admission read it,
/// its component as checked.
struct Candidate {
    path: PathBuf,
    manifest: Result<(Manifest, Option<ComponentFile>), Fail>,
}

/// A plugin directory that could not be listed: nothing in it loads. (A
/// file in it that does not load is a [`LoadError`] of the report instead.)
#[derive(Debug, thiserror::Error)]
#[error("cannot read the plugin directory {}: {source}", dir.display())]
pub struct UnreadableDir {
    /// The directory.
    pub dir: PathBuf,
    /// Why it could not be listed.
    pub source: std::io::Error,
}

impl Runtime {
    /// Load every `*.wasm` in `dir`, in registration order, **without the
    /// trust checks** (safe paths, the lock file, approvals, signatures):
    /// for tests and tools that vouch for the directory themselves. An
    /// embedder loads through [`crate::ToolhostBuilder::plugins`] (or
    /// [`crate::supply::load_dir`]), which apply them. Fails only if the
    /// directory cannot be read.
    pub async fn load_dir(&self, dir: &Path) -> Result<LoadReport, UnreadableDir> {
        self.load_dir_admitting(dir, &AdmitAll).await
    }

    /// [`Runtime::load_dir`], loading only the files `admission` admits
    /// (disabled ones are not asked about); the others are load errors.
    pub async fn load_dir_admitting(
        &self,
        dir: &Path,
        admission: &dyn Admission,
    ) -> Result<LoadReport, UnreadableDir> {
        let unreadable = |source| UnreadableDir {
            dir: dir.to_owned(),
            source,
        };
        let entries = std::fs::read_dir(dir).map_err(unreadable)?;
        let mut candidates = Vec::new();
        let mut report = LoadReport::default();
        for entry in entries {
            let path = entry.map_err(unreadable)?.path();
            if path.extension().is_none_or(|e| e != "wasm") {
                continue;
            }
            // Named like a plugin but not one: said, as for any file that
            // does not load, not skipped in silence.
            let metadata = std::fs::metadata(&path);
            if !metadata.as_ref().is_ok_and(std::fs::Metadata::is_file) {
                let what = if path.is_dir() {
                    "a directory"
                } else {
                    "not a regular file"
                };
                let message = format!("is {what}, not a plugin: a plugin is one .wasm file");
                report
                    .errors
                    .push(LoadError::new(&path, (LoadErrorKind::NotAFile, message)));
                continue;
            }
            // Told before an admission reads it whole.
            if let Some(message) = metadata
                .ok()
                .and_then(|m| crate::plugin_file::COMPONENT.refusal(m.len()))
            {
                report
                    .errors
                    .push(LoadError::new(&path, (LoadErrorKind::TooLarge, message)));
                continue;
            }
            let manifest = Manifest::read(&path.with_extension("toml"), self.settings_for(&path))
                .map_err(|message| (LoadErrorKind::Manifest, message))
                .and_then(|m| match m.enabled {
                    true => admission
                        .admit(&path, &plugin_name(&path), &m)
                        .map(|code| (m, code))
                        .map_err(|message| (LoadErrorKind::NotAdmitted, message)),
                    false => Ok((m, None)),
                });
            candidates.push(Candidate { path, manifest });
        }
        // A `[plugin.NAME]` that matches no file is most likely a typo, and
        // its settings (a grant, a limit) would silently not apply.
        for name in self.plugin_settings.tables.keys() {
            if !candidates.iter().any(|c| *plugin_name(&c.path) == **name) {
                let message = format!(
                    "{} has settings for plugin `{name}`, which is not in this directory",
                    self.plugin_settings.file.display()
                );
                report
                    .errors
                    .push(LoadError::new(dir, (LoadErrorKind::UnknownPlugin, message)));
            }
        }
        candidates.sort_by(|a, b| {
            let order = |c: &Candidate| c.manifest.as_ref().ok().and_then(|(m, _)| m.order);
            let key = |c: &Candidate| {
                (
                    order(c).is_none(),
                    order(c),
                    c.path.file_name().map(|n| n.to_owned()),
                )
            };
            key(a).cmp(&key(b))
        });

        // Loaded all at once (reading and compiling or mapping the code runs
        // on blocking threads, one core each), registered in order.
        let loads = candidates.into_iter().map(|candidate| async move {
            let loaded = match candidate.manifest {
                Ok((m, _)) if !m.enabled => None,
                Ok((m, code)) => Some(self.load(&candidate.path, m, code, admission).await),
                Err(fail) => Some(Err(fail)),
            };
            (candidate.path, loaded)
        });
        for (path, loaded) in futures::future::join_all(loads).await {
            match loaded {
                None => report.disabled.push(path),
                Some(Err(fail)) => report.errors.push(LoadError::new(&path, fail)),
                Some(Ok(plugin)) if report.plugins.iter().any(|p| p.name == plugin.name) => {
                    let message = format!("another file already loaded a plugin named `{}`", plugin.name);
                    report
                        .errors
                        .push(LoadError::new(&path, (LoadErrorKind::DuplicateName, message)));
                }
                Some(Ok(plugin)) => report.plugins.push(Arc::new(plugin)),
            }
        }
        Ok(report)
    }

    /// Whether compiled code is kept in a cache across starts.
    pub fn keeps_code(&self) -> bool {
        self.cache.is_on()
    }

    /// Compile `component`, one the user has approved, into the code cache
    /// ([`Runtime::keeps_code`]), running none of it, and whether it was
    /// there already: what `toolhost add` and `update` do once a plugin is
    /// installed, so that the next start takes its code from the cache
    /// (compiling a JavaScript or Python plugin takes tens of seconds,
    /// which a client would wait for).
    pub async fn precompile(&self, component: Vec<u8>) -> Result<CodeSource, String> {
        let (engine, cache) = (self.engine.clone(), self.cache.clone());
        let compiled = tokio::task::spawn_blocking(move || {
            let sha = Sha256::digest(&component).into();
            cache.load(&engine, &component, &sha)
        })
        .await;
        match compiled {
            Ok(Ok(loaded)) => Ok(loaded.source),
            Ok(Err(e)) => Err(format!("{e:#}")),
            Err(e) => Err(format!("compilation crashed: {e}")),
        }
    }

    /// Load one file with its manifest (`NAME.toml` beside it, if any).
    pub async fn load_file(&self, path: &Path) -> Result<Plugin, LoadError> {
        let manifest = Manifest::read(&path.with_extension("toml"), self.settings_for(path))
            .map_err(|message| LoadError::new(path, (LoadErrorKind::Manifest, message)))?;
        self.load(path, manifest, None, &AdmitAll)
            .await
            .map_err(|fail| LoadError::new(path, fail))
    }

    fn settings_for(&self, path: &Path) -> Option<Overlay<'_>> {
        let table = self.plugin_settings.tables.get(&*plugin_name(path))?;
        Some(Overlay {
            file: &self.plugin_settings.file,
            table,
        })
    }

    /// Load the plugin at `path` (from `code`, its component as admitted,
    /// if the admission read it) and, if its manifest names one, its
    /// shadow candidate. A candidate that does not load is logged, naming
    /// both, and the plugin serves without it.
    async fn load(
        &self,
        path: &Path,
        manifest: Manifest,
        code: Option<ComponentFile>,
        admission: &dyn Admission,
    ) -> Result<Plugin, Fail> {
        let name = plugin_name(path);
        let shadow = manifest
            .shadow
            .as_ref()
            .map(|p| path.parent().unwrap_or(Path::new(".")).join(p));
        let mut plugin = self
            .load_plugin(path, name.clone(), manifest.clone(), code, true)
            .await?;
        if let Some(candidate) = shadow {
            match self.load_candidate(&candidate, name, manifest, admission).await {
                Ok(candidate) => plugin.shadow = Some(Shadow::new(candidate, self.shadows.clone())),
                Err((_, message)) => tracing::error!(
                    plugin = %plugin.name,
                    "the shadow candidate {} does not load, the plugin serves without it: {message}",
                    candidate.display()
                ),
            }
        }
        Ok(plugin)
    }

    /// A shadow candidate of plugin `name`: named as the plugin, with its
    /// own sidecar manifest or the plugin's, every grant removed (no HTTP
    /// origin, no secret), never recorded, admitted as a candidate
    /// ([`Admission::admit_candidate`]).
    async fn load_candidate(
        &self,
        path: &Path,
        name: Arc<str>,
        current: Manifest,
        admission: &dyn Admission,
    ) -> Result<Plugin, Fail> {
        let code = admission
            .admit_candidate(path)
            .map_err(|m| (LoadErrorKind::NotAdmitted, m))?;
        let sidecar = path.with_extension("toml");
        let mut manifest = if sidecar.is_file() {
            Manifest::read(&sidecar, None).map_err(|m| (LoadErrorKind::Manifest, m))?
        } else {
            current
        };
        manifest.grants = Default::default();
        manifest.shadow = None;
        self.load_plugin(path, name, manifest, code, false).await
    }

    async fn load_plugin(
        &self,
        path: &Path,
        name: Arc<str>,
        mut manifest: Manifest,
        code: Option<ComponentFile>,
        recorded: bool,
    ) -> Result<Plugin, Fail> {
        use LoadErrorKind as K;
        // The one gate of an offline runtime: with no grant, `fetch` is
        // refused and no secret is read from the environment.
        if self.offline {
            manifest.grants = Default::default();
        }
        let start = Instant::now();
        let size = match &code {
            Some(file) => check_header(&file.bytes).map(|()| file.bytes.len())?,
            None => read_header(path)?,
        };
        let limits = manifest
            .limits
            .resolve(size)
            .map_err(|e| (K::Manifest, format!("manifest: {e}")))?;

        // Reading and compiling take seconds for language runtimes: keep
        // them off the async workers.
        let (engine, cache, file) = (self.engine.clone(), self.cache.clone(), path.to_owned());
        let loaded = tokio::task::spawn_blocking(move || match code {
            Some(code) => cache.load(&engine, &code.bytes, &code.sha256),
            None => cache.load_file(&engine, &file),
        })
        .await
        .map_err(|e| (K::InvalidComponent, format!("compilation crashed: {e}")))?
        .map_err(|e| match e.downcast_ref::<super::compile::CompileStopped>() {
            Some(stopped) => (K::CompileStopped, stopped.to_string()),
            None => (K::InvalidComponent, format!("not a valid component: {e:#}")),
        })?;
        let component = loaded.component;
        // The digest of the component whose code runs (from the admission's
        // read, or the code cache's record of this file): never read again.
        let digest = crate::plugin_file::Digest::of_sha256(&loaded.sha).to_string();

        let (worlds, version) = exported_worlds(&self.engine, &component)?;
        let imports = component
            .component_type()
            .imports(&self.engine)
            .map(|(name, _)| name.to_owned())
            .collect::<Vec<_>>();
        let pre = self
            .linker
            .instantiate_pre(&component)
            .map_err(|e| (K::UnsupportedImport, unsupported_import(&e, &imports)))?;
        let exports =
            Indices::new(version, &pre, worlds.enricher, worlds.tool).map_err(|e| (K::BadExport, e))?;

        let http = HttpGrant::new(name.clone(), &manifest.grants)
            .map_err(|e| (K::Manifest, format!("manifest: {e}")))?;
        let identity = Arc::new(PluginIdentity {
            requests_in_flight: Arc::new(tokio::sync::Semaphore::new(limits.requests_in_flight)),
            name: name.clone(),
            config_json: manifest.config_json(),
            limits,
            http: Arc::new(http),
            log: self.log.clone(),
        });
        let instances = Instances::new(self.engine.clone(), self.ticker.clone(), pre, exports, identity);
        let mut plugin = Plugin {
            name,
            path: path.to_owned(),
            manifest,
            worlds,
            version,
            categories: Vec::new(),
            tools: Vec::new(),
            size_bytes: size,
            code_source: loaded.source,
            load_time: loaded.elapsed,
            imports,
            instances,
            recording: None,
            shadow: None,
            digest: digest.clone(),
        };
        if recorded && let Some(recorder) = &self.recorder {
            plugin.recording = Some((recorder.clone(), digest));
        }
        if worlds.enricher {
            plugin.categories = plugin.call_supported_categories().await?;
        }
        if worlds.tool {
            plugin.tools = plugin.call_list_tools().await?;
        }
        plugin.load_time = start.elapsed();
        Ok(plugin)
    }
}

/// `10-github.wasm` → `github`.
fn plugin_name(path: &Path) -> Arc<str> {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let trimmed = stem.trim_start_matches(|c: char| c.is_ascii_digit());
    let name = match trimmed.strip_prefix(['-', '_']) {
        Some(rest) if trimmed.len() < stem.len() && !rest.is_empty() => rest,
        _ => &stem,
    };
    name.into()
}

/// Check the file's header (the rest is read only if its code is not
/// cached) and return its size.
fn read_header(path: &Path) -> Result<usize, Fail> {
    use std::io::Read;
    let cannot = |e: std::io::Error| (LoadErrorKind::Unreadable, format!("cannot read: {e}"));
    let file = std::fs::File::open(path).map_err(cannot)?;
    let size = file.metadata().map_err(cannot)?.len();
    if let Some(message) = crate::plugin_file::COMPONENT.refusal(size) {
        return Err((LoadErrorKind::TooLarge, message));
    }
    let mut header = Vec::with_capacity(8);
    file.take(8).read_to_end(&mut header).map_err(cannot)?;
    check_header(&header)?;
    Ok(usize::try_from(size).unwrap_or(usize::MAX))
}

fn check_header(bytes: &[u8]) -> Result<(), Fail> {
    const CORE_VERSION: [u8; 4] = [1, 0, 0, 0];
    if bytes.len() < 8 || &bytes[..4] != b"\0asm" {
        return Err((LoadErrorKind::NotWebAssembly, "not a WebAssembly file".into()));
    }
    if bytes[4..8] == CORE_VERSION {
        return Err((
            LoadErrorKind::CoreModule,
            "a core WebAssembly module, not a component: build for wasm32-wasip2, \
             or wrap it with `wasm-tools component new`"
                .into(),
        ));
    }
    Ok(())
}

/// Which toolhost interfaces the component exports, and the version of
/// the contract it speaks: one this host implements, the same for every
/// toolhost export (a component built half against one version and half
/// against another is refused, not guessed at).
fn exported_worlds(engine: &wasmtime::Engine, component: &Component) -> Result<(Worlds, Version), Fail> {
    let mut worlds = Worlds {
        enricher: false,
        tool: false,
    };
    let mut names = Vec::new();
    let mut version: Option<(Version, String)> = None;
    for (name, item) in component.component_type().exports(engine) {
        names.push(name.to_owned());
        let Some(rest) = name.strip_prefix(&format!("{PACKAGE}/")) else {
            continue;
        };
        let (interface, asked) = rest.split_once('@').unwrap_or((rest, ""));
        let Some(found) = Version::of_export(asked) else {
            return Err((
                LoadErrorKind::UnsupportedVersion,
                format!(
                    "exports {name}, for {PACKAGE}@{asked}; this host implements {}",
                    Version::supported()
                ),
            ));
        };
        match &version {
            Some((first, first_name)) if *first != found => {
                return Err((
                    LoadErrorKind::MixedVersions,
                    format!(
                        "mixes versions of the contract: it exports {first_name} and {name}; \
                         a plugin is built against one of {}",
                        Version::supported()
                    ),
                ));
            }
            Some(_) => {}
            None => version = Some((found, name.to_owned())),
        }
        if !matches!(item.ty, ComponentItem::ComponentInstance(_)) {
            continue;
        }
        match interface {
            "enricher" => worlds.enricher = true,
            "tool" => worlds.tool = true,
            _ => {}
        }
    }
    match version {
        Some((version, _)) if worlds.enricher || worlds.tool => Ok((worlds, version)),
        _ => Err((
            LoadErrorKind::NoToolhostWorld,
            format!(
                "exports no toolhost world: expected {PACKAGE}/enricher or {PACKAGE}/tool of {}, found [{}]",
                Version::supported(),
                names.join(", ")
            ),
        )),
    }
}

/// The linker's refusal, rephrased when it is an import the host lacks.
fn unsupported_import(error: &wasmtime::Error, imports: &[String]) -> String {
    let text = format!("{error:#}");
    match imports.iter().find(|i| text.contains(i.as_str())) {
        Some(import) if import.starts_with(PACKAGE) => format!(
            "imports {import}, which this host does not provide (it implements {}): {text}",
            Version::supported()
        ),
        Some(import) => format!(
            "imports {import}, which toolhost does not provide to plugins \
             (plugins get WASI 0.2 CLI interfaces with no authority, and {PACKAGE}/http for granted hosts): {text}"
        ),
        None => format!("cannot be linked: {text}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_drop_the_order_prefix() {
        assert_eq!(&*plugin_name(Path::new("d/10-github.wasm")), "github");
        assert_eq!(&*plugin_name(Path::new("d/jira.wasm")), "jira");
        assert_eq!(&*plugin_name(Path::new("d/2024.wasm")), "2024");
        assert_eq!(&*plugin_name(Path::new("d/7_x.wasm")), "x");
    }

    #[test]
    fn headers_are_told_apart() {
        assert_eq!(
            check_header(b"hello").unwrap_err().0,
            LoadErrorKind::NotWebAssembly
        );
        let (kind, message) = check_header(b"\0asm\x01\0\0\0").unwrap_err();
        assert_eq!(kind, LoadErrorKind::CoreModule);
        assert!(message.contains("wasm32-wasip2"), "{message}");
        assert!(check_header(b"\0asm\x0d\0\x01\0").is_ok());
    }
}
