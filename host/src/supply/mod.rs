//! Knowing exactly what runs: the checks a plugin file passes before its
//! code is compiled or run.
//!
//! - safe paths (`plugin_file`): no other user can write the file, its
//!   manifest, or a directory above them (as ssh requires of keys).
//! - `lock`: when `plugins.lock` exists, only the plugins it records,
//!   with the digests and authority it records, load.
//!
//! The lock and the approvals live in the plugin directory, which only
//! its owner can write (else nothing in it loads). An older toolhost kept
//! them beside it: such a file is still read if only the user can have
//! written it there, with a warning to move it, and ignored (with a
//! warning) in a directory others can write, such as `/tmp`, where anyone
//! could have put it.
//! - `approval`: with `require_approval = true`, only plugins within the
//!   authority the user approved load.
//! - [`signature`]: with `require_signatures = true`, only plugins signed
//!   by a key of `[trust] keys` load.
//!
//! [`Supply`] is the loader's `Admission`: a file refused is reported by
//! name with the reason and the command that fixes it, the other plugins
//! load. The facts they rest on (`Facts`: digests, and [`Consent`], the
//! imports read from the component itself and the grants in effect) are
//! read from the file once, whole; with no lock and nothing required only
//! the paths are checked, so a plain start reads no file twice.
//!
//! When the checks read the file, the loader compiles (or finds in the
//! code cache, by digest) exactly the bytes they checked, not whatever is
//! at the path by then; when they read nothing, the path is one nobody
//! but the user (or root) can change, as the safe-path check made sure.
//!
//! Supply sits above the loader: it is the loader's `Admission` and
//! drives [`Runtime::load_dir_admitting`]; the loader knows the trait,
//! never these checks. Both read a file through `plugin_file`.

mod approval;
mod consent;
mod facts;
mod lock;
pub mod signature;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::Deserialize;

use crate::plugin::{Admission, LoadError, LoadErrorKind, LoadReport, Manifest, Runtime, UnreadableDir};
use crate::plugin_file::check_safe_dir;

pub(crate) use crate::plugin_file::{ComponentFile, UnsafePath, check_safe_path};
pub use crate::plugin_file::{Digest, Interfaces, interfaces};
pub use approval::Approvals;
pub use consent::Consent;
pub(crate) use facts::Facts;
pub use lock::{Lock, Source};
pub(crate) use signature::TrustedKeys;

/// `[trust]` of toolhost.toml.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrustSettings {
    /// Vendors' public keys, by a name of the user's choosing.
    #[serde(default)]
    pub keys: BTreeMap<String, PathBuf>,
    /// Load only plugins signed by one of `keys`.
    #[serde(default)]
    pub require_signatures: bool,
    /// Load only plugins within their approval (`toolhost approve`).
    #[serde(default)]
    pub require_approval: bool,
    /// The lock file (default: `plugins.lock` in the plugin directory).
    pub lock: Option<PathBuf>,
    /// The approvals (default: `plugins.approvals` in the plugin directory).
    pub approvals: Option<PathBuf>,
}

impl TrustSettings {
    /// Resolve the paths in it against `base`, the configuration's directory.
    pub fn resolve_paths(&mut self, base: &Path) {
        for path in self.keys.values_mut() {
            *path = base.join(&*path);
        }
        self.lock = self.lock.as_ref().map(|p| base.join(p));
        self.approvals = self.approvals.as_ref().map(|p| base.join(p));
    }

    /// Where `toolhost lock` writes the lock file.
    pub fn lock_path(&self, plugin_dir: &Path) -> PathBuf {
        self.lock.clone().unwrap_or_else(|| inside(plugin_dir, LOCK))
    }

    /// Where `toolhost approve` writes the approvals.
    pub fn approvals_path(&self, plugin_dir: &Path) -> PathBuf {
        self.approvals
            .clone()
            .unwrap_or_else(|| inside(plugin_dir, APPROVALS))
    }

    /// Where the lock file is read from: [`TrustSettings::lock_path`], or
    /// an older toolhost's beside the plugin directory, if only the user
    /// can have written it there.
    pub fn lock_source(&self, plugin_dir: &Path) -> PathBuf {
        located(self.lock.as_deref(), plugin_dir, LOCK)
    }

    /// Where the approvals are read from, as [`TrustSettings::lock_source`].
    pub fn approvals_source(&self, plugin_dir: &Path) -> PathBuf {
        located(self.approvals.as_deref(), plugin_dir, APPROVALS)
    }
}

/// `name` in `plugin_dir`, as an absolute path.
fn inside(plugin_dir: &Path, name: &str) -> PathBuf {
    std::path::absolute(plugin_dir)
        .unwrap_or_else(|_| plugin_dir.to_owned())
        .join(name)
}

const LOCK: &str = "plugins.lock";
const APPROVALS: &str = "plugins.approvals";

/// The file `name` of `plugin_dir`: the path `[trust]` gives, else the one
/// in the directory if it exists, else one an older toolhost kept beside
/// the directory if only the user can have written it there (a directory
/// others can write, sticky or not, proves nothing of who wrote it).
fn located(configured: Option<&Path>, plugin_dir: &Path, name: &str) -> PathBuf {
    if let Some(path) = configured {
        return path.to_owned();
    }
    let inside = inside(plugin_dir, name);
    let Some(holder) = inside.parent().and_then(Path::parent) else {
        return inside;
    };
    let beside = holder.join(name);
    if inside.exists() || !beside.exists() {
        return inside;
    }
    match check_safe_dir(holder) {
        Ok(()) => {
            tracing::warn!(
                "using {}, where an older toolhost kept it: move it to {}",
                beside.display(),
                inside.display()
            );
            beside
        }
        Err(_) => {
            tracing::warn!(
                "ignored {}: {} is not yours alone to write, so anyone could have put it \
                 there; it belongs in the plugin directory, {}",
                beside.display(),
                holder.display(),
                inside.display()
            );
            inside
        }
    }
}

/// A file the checks rest on is unsafe, unreadable or malformed, or the
/// plugin directory cannot be listed: nothing loads, as nothing could be
/// checked.
#[derive(Debug, thiserror::Error)]
pub enum SupplyError {
    /// A file the checks rest on is one others could change.
    #[error(transparent)]
    Unsafe(#[from] UnsafePath),
    /// A file the checks rest on could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The lock file or the approvals could not be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The lock file or the approvals do not parse.
    #[error("{path}: {message}")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What is wrong in it.
        message: String,
    },
    /// A trusted key of `[trust] keys` cannot be used.
    #[error("key `{name}` ({path}): {message}")]
    Key {
        /// The key's name in `[trust] keys`.
        name: String,
        /// Its file.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// A vendor's plugin could not be signed.
    #[error("cannot sign {path}: {message}")]
    Sign {
        /// The plugin file.
        path: PathBuf,
        /// Why.
        message: String,
    },
    /// The plugin directory itself could not be listed.
    #[error(transparent)]
    Dir(#[from] UnreadableDir),
}

/// The text of `path` if it exists and is safe; `None` if it does not exist.
fn read_optional(path: &Path) -> Result<Option<String>, SupplyError> {
    match std::fs::read_to_string(path) {
        Ok(text) => {
            check_safe_path(path)?;
            Ok(Some(text))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(SupplyError::Read {
            path: path.into(),
            source,
        }),
    }
}

/// The checks of one plugin directory under the user's `[trust]`.
pub struct Supply {
    require_signatures: bool,
    keys: TrustedKeys,
    lock: Option<(PathBuf, Lock)>,
    /// Read when approval is required.
    approvals: Option<Approvals>,
}

/// One file's verdicts, for `toolhost plugins --grants`.
pub struct Verdicts {
    /// The trusted key that signed it, or why none did; `None` with no
    /// keys and no requirement.
    pub signature: Option<Result<String, String>>,
    /// Whether it matches the lock file; `None` with no lock file.
    pub lock: Option<Result<(), String>>,
    /// Whether it is within its approval.
    pub approval: Result<(), String>,
}

impl Supply {
    /// The checks for `plugin_dir`: its lock file (if any), the approvals
    /// (if required) and the trusted keys, read now.
    pub fn open(settings: &TrustSettings, plugin_dir: &Path) -> Result<Self, SupplyError> {
        let lock_path = settings.lock_source(plugin_dir);
        let lock = Lock::read(&lock_path)?.map(|lock| (lock_path, lock));
        let approvals = settings
            .require_approval
            .then(|| Approvals::read(&settings.approvals_source(plugin_dir)))
            .transpose()?;
        Ok(Self {
            require_signatures: settings.require_signatures,
            keys: TrustedKeys::load(&settings.keys)?,
            lock,
            approvals,
        })
    }

    fn reads_contents(&self) -> bool {
        self.require_signatures || self.lock.is_some() || self.approvals.is_some()
    }

    /// The paths a plugin's code and authority come from are safe.
    fn check_paths(path: &Path) -> Result<(), UnsafePath> {
        check_safe_path(path)?;
        let manifest = path.with_extension("toml");
        if manifest.exists() {
            check_safe_path(&manifest)?;
        }
        Ok(())
    }

    /// Every verdict on a file read, none short-circuiting.
    fn verdicts(&self, facts: &Facts, bytes: &[u8], approvals: &Approvals) -> Verdicts {
        let signature =
            (self.require_signatures || !self.keys.is_empty()).then(|| self.keys.verify(&facts.path, bytes));
        Verdicts {
            signature,
            lock: self.lock.as_ref().map(|(path, lock)| lock.check(path, facts)),
            approval: approvals.check(facts),
        }
    }
}

impl Admission for Supply {
    fn admit(&self, path: &Path, name: &str, manifest: &Manifest) -> Result<Option<ComponentFile>, String> {
        Self::check_paths(path).map_err(|e| e.message)?;
        if !self.reads_contents() {
            return Ok(None);
        }
        let (facts, file) = Facts::gather(path, name, manifest)?;
        if self.require_signatures {
            self.keys.verify(path, &file.bytes)?;
        }
        if let Some((lock_path, lock)) = &self.lock {
            lock.check(lock_path, &facts)?;
        }
        if let Some(approvals) = &self.approvals {
            approvals
                .check(&facts)
                .map_err(|e| format!("require_approval = true, and {e}"))?;
        }
        Ok(Some(file))
    }

    /// Safe paths, and with `require_signatures` a trusted key's signature:
    /// a candidate runs code too. No lock or approval: it has not been
    /// locked yet, and it runs with no grant.
    fn admit_candidate(&self, path: &Path) -> Result<Option<ComponentFile>, String> {
        Self::check_paths(path).map_err(|e| e.message)?;
        if !self.require_signatures {
            return Ok(None);
        }
        let file = ComponentFile::read(path)?;
        self.keys.verify(path, &file.bytes)?;
        Ok(Some(file))
    }
}

/// Load `dir` as `runtime` does, admitting only what passes the checks. A
/// file refused is a [`LoadErrorKind::NotAdmitted`] error of the report;
/// only a directory that cannot be listed, or a file the checks rest on
/// that is unsafe or malformed, fails the whole load.
pub async fn load_dir(
    runtime: &Runtime,
    settings: &TrustSettings,
    dir: &Path,
) -> Result<LoadReport, SupplyError> {
    let supply = Supply::open(settings, dir)?;
    Ok(runtime.load_dir_admitting(dir, &supply).await?)
}

/// A plugin file found by [`survey`], with its facts and verdicts.
pub struct Surveyed {
    /// What the file is and asks for.
    pub facts: Facts,
    /// What each trust check says of it.
    pub verdicts: Verdicts,
}

/// What [`survey`] found.
pub struct Survey {
    /// In registration order.
    pub plugins: Vec<Surveyed>,
    /// Files whose facts could not be read, or whose paths are unsafe,
    /// and the directory's own load errors (a malformed manifest).
    pub errors: Vec<LoadError>,
}

/// The facts and verdicts of every enabled plugin of `dir`, found and
/// with their manifests layered exactly as loading finds them, but
/// running none: for `toolhost lock`, `approve` and `plugins --grants`.
pub async fn survey(runtime: &Runtime, settings: &TrustSettings, dir: &Path) -> Result<Survey, SupplyError> {
    /// Records each file and refuses it, so nothing is compiled or run.
    struct Recorder<'a> {
        supply: &'a Supply,
        approvals: Approvals,
        found: Mutex<Vec<Result<Surveyed, LoadError>>>,
    }
    const SURVEYED: &str = "surveyed";
    impl Admission for Recorder<'_> {
        fn admit(
            &self,
            path: &Path,
            name: &str,
            manifest: &Manifest,
        ) -> Result<Option<ComponentFile>, String> {
            let found = Supply::check_paths(path)
                .map_err(|e| e.message)
                .and_then(|()| Facts::gather(path, name, manifest))
                .map(|(facts, file)| {
                    let verdicts = self.supply.verdicts(&facts, &file.bytes, &self.approvals);
                    Surveyed { facts, verdicts }
                })
                .map_err(|message| LoadError {
                    path: path.to_owned(),
                    kind: LoadErrorKind::NotAdmitted,
                    message: crate::bounds::escape_controls(message),
                });
            self.found.lock().expect("survey lock").push(found);
            Err(SURVEYED.into())
        }
    }
    let supply = Supply::open(settings, dir)?;
    let recorder = Recorder {
        supply: &supply,
        approvals: Approvals::read(&settings.approvals_source(dir))?,
        found: Mutex::default(),
    };
    let report = runtime.load_dir_admitting(dir, &recorder).await?;
    let mut found = recorder.found.into_inner().expect("survey lock");
    let mut survey = Survey {
        plugins: Vec::new(),
        errors: Vec::new(),
    };
    // The loader reports its refusals in registration order.
    for error in report.errors {
        let at = found.iter().position(|f| match f {
            Ok(s) => s.facts.path == error.path,
            Err(e) => e.path == error.path,
        });
        match at.filter(|_| error.message == SURVEYED).map(|i| found.remove(i)) {
            Some(Ok(surveyed)) => survey.plugins.push(surveyed),
            Some(Err(error)) => survey.errors.push(error),
            None => survey.errors.push(error),
        }
    }
    Ok(survey)
}
