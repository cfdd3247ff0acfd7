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

use wasmtime::component::Component;
use wasmtime::component::types::ComponentItem;

use super::bindings::{enricher, tool};
use super::host_api::PluginIdentity;
use super::http::HttpGrant;
use super::instance::Instances;
use super::manifest::Manifest;
use super::{PACKAGE, PACKAGE_VERSION, Plugin, Runtime, Worlds};

/// A file that could not be loaded, and why.
#[derive(Debug, Clone, serde::Serialize)]
pub struct LoadError {
    pub path: PathBuf,
    pub message: String,
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.message)
    }
}

/// The result of loading a directory.
#[derive(Default)]
pub struct LoadReport {
    /// Loaded plugins, in registration order.
    pub plugins: Vec<Arc<Plugin>>,
    pub errors: Vec<LoadError>,
    /// Files whose manifest says `enabled = false`.
    pub disabled: Vec<PathBuf>,
}

/// Decides, before a file's code is compiled or run, whether it may load
/// (the supply-chain checks of `crate::supply`). `Err` is the reason,
/// reported for the file like any load error.
pub trait Admission: Sync {
    fn admit(&self, path: &Path, name: &str, manifest: &Manifest) -> Result<(), String>;
}

/// Admits every file: a directory loaded without supply-chain checks.
struct AdmitAll;

impl Admission for AdmitAll {
    fn admit(&self, _: &Path, _: &str, _: &Manifest) -> Result<(), String> {
        Ok(())
    }
}

/// A `.wasm` file found, with its manifest.
struct Candidate {
    path: PathBuf,
    manifest: Result<Manifest, String>,
}

impl Runtime {
    /// Load every `*.wasm` in `dir`, in registration order. Fails only if
    /// the directory cannot be read.
    pub async fn load_dir(&self, dir: &Path) -> anyhow::Result<LoadReport> {
        self.load_dir_admitting(dir, &AdmitAll).await
    }

    /// [`Runtime::load_dir`], loading only the files `admission` admits
    /// (disabled ones are not asked about); the others are load errors.
    pub async fn load_dir_admitting(
        &self,
        dir: &Path,
        admission: &dyn Admission,
    ) -> anyhow::Result<LoadReport> {
        let entries = std::fs::read_dir(dir)
            .map_err(|e| anyhow::anyhow!("cannot read the plugin directory {}: {e}", dir.display()))?;
        let mut candidates = Vec::new();
        let mut report = LoadReport::default();
        for entry in entries {
            let path = entry?.path();
            if path.extension().is_none_or(|e| e != "wasm") {
                continue;
            }
            // Named like a plugin but not one: said, as for any file that
            // does not load, not skipped in silence.
            if !path.is_file() {
                let what = if path.is_dir() {
                    "a directory"
                } else {
                    "not a regular file"
                };
                let message = format!("is {what}, not a plugin: a plugin is one .wasm file");
                report.errors.push(LoadError { path, message });
                continue;
            }
            let manifest =
                Manifest::read(&path.with_extension("toml"), self.settings_for(&path)).and_then(|m| match m
                    .enabled
                {
                    true => admission.admit(&path, &plugin_name(&path), &m).map(|()| m),
                    false => Ok(m),
                });
            candidates.push(Candidate { path, manifest });
        }
        // A `[plugin.NAME]` that matches no file is most likely a typo, and
        // its settings (a grant, a limit) would silently not apply.
        for name in self.plugin_settings.keys() {
            if !candidates.iter().any(|c| *plugin_name(&c.path) == **name) {
                report.errors.push(LoadError {
                    path: dir.to_owned(),
                    message: format!(
                        "toolhost.toml has settings for plugin `{name}`, which is not in this directory"
                    ),
                });
            }
        }
        candidates.sort_by(|a, b| {
            let order = |c: &Candidate| c.manifest.as_ref().ok().and_then(|m| m.order);
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
                Ok(m) if !m.enabled => None,
                Ok(m) => Some(self.load(&candidate.path, m).await),
                Err(message) => Some(Err(message)),
            };
            (candidate.path, loaded)
        });
        for (path, loaded) in futures::future::join_all(loads).await {
            match loaded {
                None => report.disabled.push(path),
                Some(Err(message)) => report.errors.push(LoadError { path, message }),
                Some(Ok(plugin)) if report.plugins.iter().any(|p| p.name == plugin.name) => {
                    let message = format!("another file already loaded a plugin named `{}`", plugin.name);
                    report.errors.push(LoadError { path, message });
                }
                Some(Ok(plugin)) => report.plugins.push(Arc::new(plugin)),
            }
        }
        Ok(report)
    }

    /// Load one file with its manifest (`NAME.toml` beside it, if any).
    pub async fn load_file(&self, path: &Path) -> Result<Plugin, LoadError> {
        let manifest =
            Manifest::read(&path.with_extension("toml"), self.settings_for(path)).map_err(|message| {
                LoadError {
                    path: path.to_owned(),
                    message,
                }
            })?;
        self.load(path, manifest).await.map_err(|message| LoadError {
            path: path.to_owned(),
            message,
        })
    }

    fn settings_for(&self, path: &Path) -> Option<&toml::Table> {
        self.plugin_settings.get(&*plugin_name(path))
    }

    async fn load(&self, path: &Path, manifest: Manifest) -> Result<Plugin, String> {
        let start = Instant::now();
        let size = read_header(path)?;
        let limits = manifest
            .limits
            .resolve(size)
            .map_err(|e| format!("manifest: {e}"))?;

        // Reading and compiling take seconds for language runtimes: keep
        // them off the async workers.
        let (engine, cache, file) = (self.engine.clone(), self.cache.clone(), path.to_owned());
        let loaded = tokio::task::spawn_blocking(move || cache.load_file(&engine, &file))
            .await
            .map_err(|e| format!("compilation crashed: {e}"))?
            .map_err(|e| format!("not a valid component: {e:#}"))?;
        let component = loaded.component;

        let worlds = exported_worlds(&self.engine, &component)?;
        let imports = component
            .component_type()
            .imports(&self.engine)
            .map(|(name, _)| name.to_owned())
            .collect::<Vec<_>>();
        let pre = self
            .linker
            .instantiate_pre(&component)
            .map_err(|e| unsupported_import(&e, &imports))?;
        let enricher = worlds
            .enricher
            .then(|| enricher::GuestIndices::new(&pre))
            .transpose()
            .map_err(|e| format!("bad enricher export: {e:#}"))?;
        let tool = worlds
            .tool
            .then(|| tool::GuestIndices::new(&pre))
            .transpose()
            .map_err(|e| format!("bad tool export: {e:#}"))?;

        let name = plugin_name(path);
        let http = HttpGrant::new(name.clone(), &manifest.grants).map_err(|e| format!("manifest: {e}"))?;
        let identity = Arc::new(PluginIdentity {
            name: name.clone(),
            config_json: manifest.config_json(),
            limits,
            http: Arc::new(http),
            log: self.log.clone(),
        });
        let instances = Instances::new(
            self.engine.clone(),
            self.ticker.clone(),
            pre,
            enricher,
            tool,
            identity,
        );
        let mut plugin = Plugin {
            name,
            path: path.to_owned(),
            manifest,
            worlds,
            categories: Vec::new(),
            tools: Vec::new(),
            size_bytes: size,
            code_source: loaded.source,
            load_time: loaded.elapsed,
            imports,
            instances,
        };
        if worlds.enricher {
            plugin.categories = plugin
                .call_supported_categories()
                .await
                .map_err(|e| e.to_string())?;
        }
        if worlds.tool {
            plugin.tools = plugin.call_list_tools().await.map_err(|e| e.to_string())?;
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
fn read_header(path: &Path) -> Result<usize, String> {
    use std::io::Read;
    let cannot = |e: std::io::Error| format!("cannot read: {e}");
    let file = std::fs::File::open(path).map_err(cannot)?;
    let size = file.metadata().map_err(cannot)?.len();
    let mut header = Vec::with_capacity(8);
    file.take(8).read_to_end(&mut header).map_err(cannot)?;
    check_header(&header)?;
    Ok(usize::try_from(size).unwrap_or(usize::MAX))
}

fn check_header(bytes: &[u8]) -> Result<(), String> {
    const CORE_VERSION: [u8; 4] = [1, 0, 0, 0];
    if bytes.len() < 8 || &bytes[..4] != b"\0asm" {
        return Err("not a WebAssembly file".into());
    }
    if bytes[4..8] == CORE_VERSION {
        return Err(
            "a core WebAssembly module, not a component: build for wasm32-wasip2, \
                    or wrap it with `wasm-tools component new`"
                .into(),
        );
    }
    Ok(())
}

/// Which toolhost interfaces the component exports, refusing other
/// versions of the package with a clear message.
fn exported_worlds(engine: &wasmtime::Engine, component: &Component) -> Result<Worlds, String> {
    let mut worlds = Worlds {
        enricher: false,
        tool: false,
    };
    let mut names = Vec::new();
    for (name, item) in component.component_type().exports(engine) {
        names.push(name.to_owned());
        let Some(rest) = name.strip_prefix(&format!("{PACKAGE}/")) else {
            continue;
        };
        let (interface, version) = rest.split_once('@').unwrap_or((rest, ""));
        if !version_compatible(version) {
            return Err(format!(
                "exports {name}, for {PACKAGE}@{version}; this host implements {PACKAGE}@{PACKAGE_VERSION}"
            ));
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
    if !(worlds.enricher || worlds.tool) {
        return Err(format!(
            "exports no toolhost world: expected {PACKAGE}/enricher@{PACKAGE_VERSION} or \
             {PACKAGE}/tool@{PACKAGE_VERSION}, found [{}]",
            names.join(", ")
        ));
    }
    Ok(worlds)
}

/// `0.1.x` is compatible with `0.1.0` (semver for 0.x: same minor).
fn version_compatible(version: &str) -> bool {
    let ours: Vec<&str> = PACKAGE_VERSION.split('.').collect();
    let theirs: Vec<&str> = version.split('.').collect();
    theirs.len() == 3 && theirs[..2] == ours[..2]
}

/// The linker's refusal, rephrased when it is an import the host lacks.
fn unsupported_import(error: &wasmtime::Error, imports: &[String]) -> String {
    let text = format!("{error:#}");
    match imports.iter().find(|i| text.contains(i.as_str())) {
        Some(import) if import.starts_with(PACKAGE) => format!(
            "imports {import}, which this host does not provide (it implements {PACKAGE}@{PACKAGE_VERSION}): {text}"
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
        assert!(check_header(b"hello").unwrap_err().contains("not a WebAssembly"));
        assert!(
            check_header(b"\0asm\x01\0\0\0")
                .unwrap_err()
                .contains("core WebAssembly module")
        );
        assert!(check_header(b"\0asm\x0d\0\x01\0").is_ok());
    }

    #[test]
    fn versions_match_on_minor() {
        assert!(version_compatible("0.1.0"));
        assert!(version_compatible("0.1.7"));
        assert!(!version_compatible("0.2.0"));
        assert!(!version_compatible(""));
    }
}
