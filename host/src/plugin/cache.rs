//! On-disk cache of compiled plugin code.
//!
//! A component compiled once is stored as a `.cwasm` file named by the
//! SHA-256 of the component's bytes and of the engine's compatibility hash
//! (wasmtime version, target, and every codegen setting), so a changed
//! plugin or a changed engine never loads stale code. Later starts mmap the
//! file instead of compiling: milliseconds instead of seconds for JavaScript
//! and Python components.
//!
//! Trust: loading a `.cwasm` runs native code it contains, so the cache
//! directory must be writable only by the user running the host. It is
//! created with mode 0700, and files are written to a temporary name and
//! renamed, so a crash never leaves a torn entry. A file that fails to load
//! (truncated, or from another build) is recompiled and replaced.
//!
//! Reading and hashing a plugin is most of a cached start for a language
//! runtime (18 MB for Python): [`CodeCache::load_file`] also records which
//! digest a plugin file had, keyed by its path and its metadata (device,
//! inode, size, modification and change times, to the nanosecond; any write
//! or replacement changes one), so a file unchanged since is neither read
//! nor hashed again.

use std::fs;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

/// How a component was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CodeSource {
    /// Compiled now (and stored, if the cache is enabled).
    Compiled,
    /// Loaded from the cache without compiling.
    Cached,
}

/// A loaded component and how long it took.
pub struct Loaded {
    pub component: Component,
    pub source: CodeSource,
    pub elapsed: Duration,
}

#[derive(Clone)]
pub struct CodeCache {
    dir: Option<PathBuf>,
    engine_key: String,
}

impl CodeCache {
    /// A cache in `dir`, or none (always compile) if `dir` is `None`.
    pub fn new(engine: &Engine, dir: Option<PathBuf>) -> Self {
        let mut hasher = ShaHasher(Sha256::new());
        engine.precompile_compatibility_hash().hash(&mut hasher);
        let engine_key = hex::encode(&hasher.0.finalize()[..8]);
        Self { dir, engine_key }
    }

    /// The default location: `$XDG_CACHE_HOME/toolhost/code`, else
    /// `~/.cache/toolhost/code`.
    pub fn default_dir() -> Option<PathBuf> {
        let base = std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache")))?;
        Some(base.join("toolhost").join("code"))
    }

    /// Load the component in the file at `path`: from the cache without
    /// reading the file if it is unchanged since it was last loaded, else
    /// as [`CodeCache::load`] does.
    pub fn load_file(&self, engine: &Engine, path: &Path) -> wasmtime::Result<Loaded> {
        let start = Instant::now();
        let key = self.file_key(path);
        let entry = key
            .as_deref()
            .and_then(known_digest)
            .and_then(|digest| self.entry_for(&digest))
            .filter(|entry| entry.exists());
        if let Some(entry) = entry {
            // SAFETY: as in `load`: written by `store` for this engine
            // configuration, in a directory only this user can write.
            if let Ok(component) = unsafe { Component::deserialize_file(engine, &entry) } {
                return Ok(Loaded {
                    component,
                    source: CodeSource::Cached,
                    elapsed: start.elapsed(),
                });
            }
        }
        let bytes = fs::read(path)?;
        let mut loaded = self.load(engine, &bytes)?;
        if let Some(key) = key
            && let Err(e) = remember(&key, &hex::encode(Sha256::digest(&bytes)))
        {
            tracing::debug!(path = %path.display(), "plugin digest not recorded: {e:#}");
        }
        loaded.elapsed = start.elapsed();
        Ok(loaded)
    }

    /// The index entry of the file at `path` as it is now, if the cache is on.
    fn file_key(&self, path: &Path) -> Option<PathBuf> {
        let dir = self.dir.as_ref()?;
        let meta = fs::metadata(path).ok()?;
        let path = fs::canonicalize(path).ok()?;
        let mut stamp = Sha256::new();
        stamp.update(path.as_os_str().as_encoded_bytes());
        stamp.update(format!("\0{}", meta.len()));
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            stamp.update(format!(
                "\0{}\0{}\0{}.{}\0{}.{}",
                meta.dev(),
                meta.ino(),
                meta.mtime(),
                meta.mtime_nsec(),
                meta.ctime(),
                meta.ctime_nsec()
            ));
        }
        #[cfg(not(unix))]
        stamp.update(format!("\0{:?}", meta.modified().ok()));
        Some(dir.join("files").join(hex::encode(&stamp.finalize()[..16])))
    }

    /// Load `bytes` as a component, from the cache if it holds it.
    pub fn load(&self, engine: &Engine, bytes: &[u8]) -> wasmtime::Result<Loaded> {
        let start = Instant::now();
        let Some(path) = self.entry_path(bytes) else {
            let component = Component::new(engine, bytes)?;
            return Ok(Loaded {
                component,
                source: CodeSource::Compiled,
                elapsed: start.elapsed(),
            });
        };
        if path.exists() {
            // SAFETY: the file was written by `store` below from
            // `Component::serialize` of this engine configuration (its name
            // carries the compatibility hash), in a directory only this user
            // can write. wasmtime still checks its header and version.
            match unsafe { Component::deserialize_file(engine, &path) } {
                Ok(component) => {
                    return Ok(Loaded {
                        component,
                        source: CodeSource::Cached,
                        elapsed: start.elapsed(),
                    });
                }
                Err(e) => {
                    tracing::warn!(path = %path.display(), "recompiling unusable cache entry: {e:#}")
                }
            }
        }
        let component = Component::new(engine, bytes)?;
        if let Err(e) = store(&path, &component) {
            tracing::warn!(path = %path.display(), "could not write compiled-code cache: {e:#}");
        }
        Ok(Loaded {
            component,
            source: CodeSource::Compiled,
            elapsed: start.elapsed(),
        })
    }

    fn entry_path(&self, bytes: &[u8]) -> Option<PathBuf> {
        self.entry_for(&hex::encode(Sha256::digest(bytes)))
    }

    fn entry_for(&self, digest: &str) -> Option<PathBuf> {
        let dir = self.dir.as_ref()?;
        Some(dir.join(format!("{digest}-{}.cwasm", self.engine_key)))
    }
}

/// The digest recorded in an index entry, if it holds one.
fn known_digest(key: &Path) -> Option<String> {
    let digest = fs::read_to_string(key).ok()?;
    (digest.len() == 64 && digest.bytes().all(|b| b.is_ascii_hexdigit())).then_some(digest)
}

fn remember(key: &Path, digest: &str) -> anyhow::Result<()> {
    let dir = key.parent().expect("index entries live in a directory");
    create_private_dir(dir)?;
    let tmp = tempfile_in(dir)?;
    fs::write(&tmp, digest)?;
    fs::rename(&tmp, key)?;
    Ok(())
}

fn store(path: &Path, component: &Component) -> anyhow::Result<()> {
    let dir = path.parent().expect("cache entries live in a directory");
    create_private_dir(dir)?;
    let tmp = tempfile_in(dir)?;
    fs::write(&tmp, component.serialize()?)?;
    fs::rename(&tmp, path)?;
    Ok(())
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

fn tempfile_in(dir: &Path) -> std::io::Result<PathBuf> {
    let nonce: u64 = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or_default();
    Ok(dir.join(format!(".tmp-{}-{nonce}", std::process::id())))
}

/// Feeds `Hash` output into SHA-256, so the key is stable across runs
/// (unlike `DefaultHasher`, whose algorithm is unspecified).
struct ShaHasher(Sha256);

impl Hasher for ShaHasher {
    fn finish(&self) -> u64 {
        let digest = self.0.clone().finalize();
        u64::from_le_bytes(digest[..8].try_into().expect("SHA-256 has 32 bytes"))
    }
    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
}
