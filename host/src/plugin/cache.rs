//! On-disk cache of compiled plugin code.
//!
//! A component compiled once is stored as a `.cwasm` file named by the
//! SHA-256 of the component's bytes and of the engine's compatibility hash
//! (wasmtime version, target, and every codegen setting), so a changed
//! plugin or a changed engine never loads stale code. Later starts load
//! the file instead of compiling: milliseconds instead of seconds for
//! JavaScript and Python components.
//!
//! Trust: an entry is native code the host runs as it stands (wasmtime's
//! `deserialize` is unsafe because it trusts the bytes), so an entry runs
//! only if this cache wrote it, for the component now being loaded:
//! - The directory is created with mode 0700 and checked at every load,
//!   as a plugin's path is (`plugin_file::check_safe_dir`: owned by this user or
//!   root, writable by nobody else, nor is any directory above it unless
//!   sticky). A directory that fails is not used at all: a warning says
//!   why, and plugins are compiled.
//! - Beside each entry, its tag file holds the digest of the component it
//!   was compiled from and the keyed BLAKE3 hash of the entry's bytes,
//!   under a key derived from the cache's key, the engine and that digest.
//!   The key is 32 random bytes in the directory (mode 0600, readable by
//!   this user alone). A planted, swapped, truncated or foreign entry never
//!   runs; it is compiled again and replaced.
//! - An entry is mapped, not read: wasmtime runs its code from the file's
//!   pages and copies the guest's initial memory from them on write. The
//!   tag is checked on one mapping and wasmtime maps the file again by its
//!   path. Only a writer of the directory could change the file in
//!   between, and that is this user, who can read the key anyway: the tag
//!   keeps out entries this cache did not write, not this user.
//! - Hashing the entries of a JavaScript and a Python plugin (70 MB) was
//!   most of a cached start. An entry found sound is recorded by its
//!   metadata, as plugin files are (below), and is not hashed again until
//!   its file changes: a planted or rewritten entry has a new inode or
//!   change time, so it is hashed, and refused.
//! - BLAKE3 rather than HMAC-SHA-256: it authenticates a language
//!   runtime's entry several times faster, at every start.
//! - Where the supply checks read and verified a component, the loader
//!   hands over those bytes and their digest ([`CodeCache::load`]): the
//!   entry looked up, and the code compiled on a miss, are those of the
//!   component verified, not of whatever is at its path later.
//!
//! Entries are written to a temporary name and renamed, so a crash never
//! leaves a torn entry.
//!
//! Loads of one component under way at once (a directory holding it under
//! several names, each configured its own way: its plugins load together)
//! share one compile and its outcome, with the cache on or off, rather than
//! each compiling the same code on a core of its own.
//!
//! The cache holds at most [`MAX_BYTES`] of entries. A vendor rebuilding a
//! 35 MB JavaScript plugin all day adds an entry each build, and so does
//! every host upgrade: storing an entry removes those loaded least recently
//! (a load renews its entry's stamp, at most hourly) until the rest fit,
//! and the records of files not seen for [`INDEX_DAYS`] days.
//!
//! Reading and hashing a plugin costs a cached start as much for a language
//! runtime (18 MB for Python): without supply checks that read it,
//! [`CodeCache::load_file`] also records (tagged as entries are) which
//! digest a plugin file had, keyed by its path and its metadata (device,
//! inode, size, modification and change times, to the nanosecond; any write
//! or replacement changes one), so a file unchanged since is neither read
//! nor hashed again. A record is made only of a file that last changed
//! [`SETTLED`] ago: a write in the same tick of the filesystem's clock
//! could leave its metadata as it was.

use std::collections::HashMap;
use std::fs;
use std::hash::{Hash, Hasher};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use sha2::{Digest, Sha256};
use wasmtime::Engine;
use wasmtime::component::Component;

use super::compile::{CompileStopped, Compiler};

/// How a component was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CodeSource {
    /// Compiled now (and stored, if the cache is enabled).
    Compiled,
    /// Loaded from the cache without compiling.
    Cached,
}

/// A loaded component, the SHA-256 of the component it was compiled from,
/// and how long it took.
pub(crate) struct Loaded {
    pub component: Component,
    pub sha: Sha,
    pub source: CodeSource,
    pub elapsed: Duration,
}

/// The SHA-256 of a component's bytes.
pub(crate) type Sha = [u8; 32];

/// What an entry's tag file holds: this format's magic, the digest of the
/// component compiled, and the tag of the entry's bytes.
const MAGIC: &[u8; 8] = b"thcwasm2";
const TAG_FILE: usize = MAGIC.len() + 32 + 32;
/// The most the entries may take on disk, all engines and layouts
/// together.
const MAX_BYTES: u64 = 2 << 30;
/// A load renews its entry's stamp when it is older than this, so a start
/// writes nothing in the common case.
const RENEW_AFTER: Duration = Duration::from_secs(3600);
/// A record of a plugin file's digest not rewritten for this many days is
/// removed when an entry is stored (the next load reads the file again).
const INDEX_DAYS: u64 = 30;
/// The cache's key, in its directory.
const KEY_FILE: &str = "key";
const KEY_BYTES: usize = 32;

#[derive(Clone)]
pub(crate) struct CodeCache {
    dir: Option<PathBuf>,
    engine_key: String,
    /// How code not found here is compiled.
    compiler: Compiler,
    /// The last reason the directory was not used, so one bad directory
    /// is one warning, not one per plugin.
    warned: Arc<Mutex<Option<String>>>,
    /// The compiles under way, by the digest of the component compiled,
    /// each shared by every load of that component meanwhile.
    compiling: Arc<Mutex<HashMap<Sha, Arc<OnceLock<Compiled>>>>>,
}

/// A compile's outcome, as each load sharing it is given it.
type Compiled = Result<Component, Failed>;

/// Why a compile failed: a `wasmtime::Error` is not `Clone`, so its text,
/// and whether it was stopped for its time (which the loader names apart).
#[derive(Clone)]
struct Failed {
    stopped: Option<CompileStopped>,
    message: String,
}

impl Failed {
    fn of(error: &wasmtime::Error) -> Self {
        Self {
            stopped: error.downcast_ref::<CompileStopped>().cloned(),
            message: format!("{error:#}"),
        }
    }

    fn error(&self) -> wasmtime::Error {
        match &self.stopped {
            Some(stopped) => wasmtime::Error::new(stopped.clone()),
            None => wasmtime::Error::msg(self.message.clone()),
        }
    }
}

/// The cache directory as checked for one load, with its key.
struct Open {
    dir: PathBuf,
    key: Key,
}

/// A key of the cache, or one derived from it, for keyed BLAKE3.
type Key = [u8; KEY_BYTES];

impl CodeCache {
    /// A cache in `dir`, or none (always compile) if `dir` is `None`.
    pub fn new(engine: &Engine, dir: Option<PathBuf>, compiler: Compiler) -> Self {
        let mut hasher = ShaHasher(Sha256::new());
        engine.precompile_compatibility_hash().hash(&mut hasher);
        // Entries of an older layout are never opened.
        MAGIC.hash(&mut hasher);
        let engine_key = hex::encode(&hasher.0.finalize()[..8]);
        Self {
            dir,
            engine_key,
            compiler,
            warned: Arc::default(),
            compiling: Arc::default(),
        }
    }

    /// Whether compiled code is kept (a directory was given).
    pub fn is_on(&self) -> bool {
        self.dir.is_some()
    }

    /// The default location: `$XDG_CACHE_HOME/toolhost/code`, else
    /// `~/.cache/toolhost/code`.
    pub fn default_dir() -> Option<PathBuf> {
        let base = std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache")))?;
        Some(base.join("toolhost").join("code"))
    }

    /// Load the component in the file at `path`, which nothing verified:
    /// from the cache without reading the file if it is unchanged since it
    /// was last loaded, else as [`CodeCache::load`] does.
    pub fn load_file(&self, engine: &Engine, path: &Path) -> wasmtime::Result<Loaded> {
        let start = Instant::now();
        let open = self.open();
        let record = open
            .as_ref()
            .and_then(|open| record_of(open, path, SystemTime::now()));
        let recorded = open
            .as_ref()
            .zip(record.as_ref())
            .and_then(|(open, record)| recall(open, Fact::Digest, &record.path));
        if let (Some(open), Some(sha)) = (&open, recorded)
            && let Some(component) = self.cached(engine, open, &sha)
        {
            return Ok(Loaded {
                component,
                sha,
                source: CodeSource::Cached,
                elapsed: start.elapsed(),
            });
        }
        let bytes = crate::plugin_file::COMPONENT.read(path)?;
        let sha: Sha = Sha256::digest(&bytes).into();
        // The entry of the recorded digest was refused just above (and said
        // so): it is not hashed and refused a second time.
        let look_up = recorded != Some(sha);
        let (component, source) = self.load_in(engine, open.as_ref(), &bytes, &sha, look_up)?;
        if let (Some(open), Some(record)) = (&open, &record)
            && let Err(e) = remember(open, Fact::Digest, record, &sha)
        {
            tracing::debug!(path = %path.display(), "plugin digest not recorded: {e:#}");
        }
        Ok(Loaded {
            component,
            sha,
            source,
            elapsed: start.elapsed(),
        })
    }

    /// Load the component `bytes`, whose SHA-256 is `sha` (as the supply
    /// checks verified them): its own entry if the cache holds a sound
    /// one, else compiled from `bytes` and stored.
    pub fn load(&self, engine: &Engine, bytes: &[u8], sha: &Sha) -> wasmtime::Result<Loaded> {
        let start = Instant::now();
        let (component, source) = self.load_in(engine, self.open().as_ref(), bytes, sha, true)?;
        Ok(Loaded {
            component,
            sha: *sha,
            source,
            elapsed: start.elapsed(),
        })
    }

    /// The entry for `sha` if `look_up` and the cache holds a sound one,
    /// else `bytes` compiled, and stored.
    fn load_in(
        &self,
        engine: &Engine,
        open: Option<&Open>,
        bytes: &[u8],
        sha: &Sha,
        look_up: bool,
    ) -> wasmtime::Result<(Component, CodeSource)> {
        if look_up && let Some(component) = open.and_then(|open| self.cached(engine, open, sha)) {
            return Ok((component, CodeSource::Cached));
        }
        let compiling = || self.compiling.lock().unwrap_or_else(|e| e.into_inner());
        let shared = compiling().entry(*sha).or_default().clone();
        // The first load compiles; the others wait for its outcome.
        let compiled =
            shared.get_or_init(|| self.compile(engine, open, bytes, sha).map_err(|e| Failed::of(&e)));
        // A load starting from now finds the stored entry, or compiles anew.
        let mut under_way = compiling();
        if under_way.get(sha).is_some_and(|slot| Arc::ptr_eq(slot, &shared)) {
            under_way.remove(sha);
        }
        drop(under_way);
        match compiled {
            Ok(component) => Ok((component.clone(), CodeSource::Compiled)),
            Err(failed) => Err(failed.error()),
        }
    }

    /// `bytes` compiled, and stored if the cache is open.
    fn compile(
        &self,
        engine: &Engine,
        open: Option<&Open>,
        bytes: &[u8],
        sha: &Sha,
    ) -> wasmtime::Result<Component> {
        let component = self.compiler.compile(engine, bytes)?;
        prepare_memory(&component)?;
        if let Some(open) = open {
            let path = self.entry_path(open, sha);
            if let Err(e) = self.store(open, &path, sha, &component) {
                tracing::warn!(path = %path.display(), "could not write compiled-code cache: {e:#}");
            }
        }
        Ok(component)
    }

    /// The directory, if the cache is on and it is safe, with its key; a
    /// warning (once per reason) if it is on and not usable.
    fn open(&self) -> Option<Open> {
        let dir = self.dir.as_ref()?;
        match open_dir(dir) {
            Ok(key) => Some(Open {
                dir: dir.clone(),
                key,
            }),
            Err(why) => {
                let mut warned = self.warned.lock().unwrap_or_else(|e| e.into_inner());
                if warned.as_deref() != Some(why.as_str()) {
                    tracing::warn!(
                        "not using the compiled-code cache {}: {why}; plugins are compiled instead",
                        dir.display()
                    );
                    *warned = Some(why);
                }
                None
            }
        }
    }

    /// The component of the sound entry for `sha`, if there is one. An
    /// entry that is there and not sound is said, and left to be replaced.
    fn cached(&self, engine: &Engine, open: &Open, sha: &Sha) -> Option<Component> {
        let path = self.entry_path(open, sha);
        // One byte past a tag's size is enough to tell it is not one.
        let read_tag = |tag: &Path| -> std::io::Result<Vec<u8>> {
            let mut bytes = Vec::with_capacity(TAG_FILE + 1);
            fs::File::open(tag)?
                .take(TAG_FILE as u64 + 1)
                .read_to_end(&mut bytes)?;
            Ok(bytes)
        };
        let tag = match read_tag(&path.with_extension("tag")) {
            Ok(tag) => tag,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => {
                tracing::warn!(path = %path.display(), "recompiling: cannot read the cache entry's tag: {e}");
                return None;
            }
        };
        let not_ours = || {
            tracing::warn!(
                path = %path.display(),
                "recompiling: the cache entry was not written by this cache for this component"
            );
        };
        let Some(entry_tag) = entry_tag(&tag, sha) else {
            not_ours();
            return None;
        };
        // Hashing a language runtime's entry was most of a cached start:
        // an entry found sound once, and unchanged since, is not hashed
        // again.
        let record = record_of(open, &path, SystemTime::now());
        let known = record
            .as_ref()
            .and_then(|record| recall(open, Fact::EntryTag, &record.path))
            .is_some_and(|known| known == *entry_tag);
        if !known {
            let code = match map(&path) {
                Ok(code) => code,
                Err(e) => {
                    tracing::warn!(path = %path.display(), "recompiling: cannot map the cache entry: {e}");
                    return None;
                }
            };
            if !verify(&self.entry_key(open, sha), &code, entry_tag) {
                not_ours();
                return None;
            }
            if let Some(record) = &record
                && let Err(e) = remember(open, Fact::EntryTag, record, entry_tag)
            {
                tracing::debug!(path = %path.display(), "sound cache entry not recorded: {e:#}");
            }
        }
        // SAFETY: the file's bytes, checked above, are the output of
        // `Component::serialize` by this cache (only its key makes the tag)
        // for this engine configuration and this component; only this user
        // can write them (see the module's doc). wasmtime still checks
        // their header and version.
        match unsafe { Component::deserialize_file(engine, &path) } {
            Ok(component) => {
                renew(&path.with_extension("tag"), SystemTime::now());
                Some(component)
            }
            Err(e) => {
                tracing::warn!(path = %path.display(), "recompiling unusable cache entry: {e:#}");
                None
            }
        }
    }

    /// Store `component`'s code at `path`, then its tag beside it: a reader
    /// between the two sees an entry whose tag does not hold, and compiles.
    fn store(&self, open: &Open, path: &Path, sha: &Sha, component: &Component) -> anyhow::Result<()> {
        let code = component.serialize()?;
        let tag = blake3::keyed_hash(&self.entry_key(open, sha), &code);
        write_private(&open.dir, path, &[&code])?;
        write_private(
            &open.dir,
            &path.with_extension("tag"),
            &[MAGIC, sha, tag.as_bytes()],
        )?;
        prune(&open.dir, path, MAX_BYTES, SystemTime::now());
        Ok(())
    }

    /// The key that tags the entry of component `sha` for this engine: an
    /// entry's tag holds for it alone.
    fn entry_key(&self, open: &Open, sha: &Sha) -> Key {
        let mut derive = blake3::Hasher::new_keyed(&open.key);
        derive.update(b"entry\0");
        derive.update(self.engine_key.as_bytes());
        derive.update(b"\0");
        derive.update(sha);
        derive.finalize().into()
    }

    fn entry_path(&self, open: &Open, sha: &Sha) -> PathBuf {
        open.dir
            .join(format!("{}-{}.cwasm", hex::encode(sha), self.engine_key))
    }
}

/// The tag of the entry of component `sha` that the tag file's bytes
/// `tag` hold, if they are a tag file of this layout for that component.
fn entry_tag<'a>(tag: &'a [u8], sha: &Sha) -> Option<&'a [u8; 32]> {
    let rest = tag.strip_prefix(MAGIC.as_slice())?.strip_prefix(sha.as_slice())?;
    rest.try_into().ok()
}

/// Write a compiled component's initial guest memory into the sealed
/// in-memory file its instances map, now rather than at its first
/// instantiation (an entry from the cache maps its own file instead).
///
/// Sealing that file against writes fails with `EBUSY` while the kernel
/// still holds a reference to a page just written (the other core's
/// batch of new pages not yet drained): a transient of a loaded machine,
/// seen loading a 12 MB JavaScript component under a busy test run. It is
/// tried again a few times, so that it is not a plugin's failed load.
fn prepare_memory(component: &Component) -> wasmtime::Result<()> {
    let mut wait = Duration::from_millis(5);
    loop {
        match component.initialize_copy_on_write_image() {
            Err(e) if is_busy(&e) && wait < Duration::from_millis(200) => {
                tracing::debug!("sealing a compiled component's memory image: {e:#}; trying again");
                std::thread::sleep(wait);
                wait *= 2;
            }
            done => return done,
        }
    }
}

/// Whether `error` comes of a resource the kernel said was busy.
fn is_busy(error: &wasmtime::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::ResourceBusy)
    })
}

/// Create `dir` (mode 0700) if need be, check it, and read its key
/// (making one if it has none).
fn open_dir(dir: &Path) -> Result<Key, String> {
    create_private_dir(dir).map_err(|e| format!("cannot create it: {e}"))?;
    crate::plugin_file::check_safe_dir(dir).map_err(|e| e.message)?;
    let path = dir.join(KEY_FILE);
    let key = match read_key(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            new_key(dir, &path).and_then(|()| read_key(&path))
        }
        read => read,
    };
    key.map_err(|e| format!("its key {}: {e}", path.display()))
}

/// The key at `path`: this user's file of 32 bytes, readable by no one else.
fn read_key(path: &Path) -> std::io::Result<Key> {
    use std::os::unix::fs::MetadataExt;
    let invalid = |what: String| std::io::Error::new(std::io::ErrorKind::InvalidData, what);
    let mut file = fs::File::open(path)?;
    let meta = file.metadata()?;
    if meta.uid() != rustix::process::geteuid().as_raw() || meta.mode() & 0o077 != 0 {
        return Err(invalid(format!(
            "must be this user's and readable by no one else (uid {}, mode {:04o}): \
             remove it and a new key is made",
            meta.uid(),
            meta.mode() & 0o7777
        )));
    }
    let mut key = Vec::with_capacity(KEY_BYTES);
    Read::by_ref(&mut file)
        .take(KEY_BYTES as u64 + 1)
        .read_to_end(&mut key)?;
    let held = key.len();
    key.try_into().map_err(|_| {
        invalid(format!(
            "holds {held} bytes, not {KEY_BYTES}: remove it and a new key is made"
        ))
    })
}

/// Make a key at `path`, unless another process just did.
fn new_key(dir: &Path, path: &Path) -> std::io::Result<()> {
    use ring::rand::SecureRandom;
    let mut key = [0u8; KEY_BYTES];
    ring::rand::SystemRandom::new()
        .fill(&mut key)
        .map_err(|_| std::io::Error::other("no random bytes for the key"))?;
    let (tmp, mut file) = temp_file(dir)?;
    // A link never replaces: the first process's key stands.
    let written = file
        .write_all(&key)
        .and_then(|()| match fs::hard_link(&tmp, path) {
            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => Err(e),
            _ => Ok(()),
        });
    let _ = fs::remove_file(&tmp);
    written
}

/// Where the cache records what it found of a file, named by the file's
/// path and metadata, and whether the file has settled enough for a record
/// to be made of it.
struct Record {
    path: PathBuf,
    /// The file last changed at least [`SETTLED`] ago.
    settled: bool,
}

/// A file must have last changed this long ago before what was read of it
/// is recorded by its metadata. A write within the same tick of the
/// filesystem's clock as the one recorded would leave the metadata as it
/// was (the kernel stamps files from a clock that moves a tick of up to
/// 10 ms at a time, some filesystems a second); once this long has passed,
/// any later write gets a change time of its own.
const SETTLED: Duration = Duration::from_secs(2);

/// The record of the file at `path` as it is `now`.
fn record_of(open: &Open, path: &Path, now: SystemTime) -> Option<Record> {
    use std::os::unix::fs::MetadataExt;
    let meta = fs::metadata(path).ok()?;
    let path = fs::canonicalize(path).ok()?;
    let mut name = Sha256::new();
    name.update(path.as_os_str().as_encoded_bytes());
    name.update(format!(
        "\0{}\0{}\0{}\0{}.{}\0{}.{}",
        meta.len(),
        meta.dev(),
        meta.ino(),
        meta.mtime(),
        meta.mtime_nsec(),
        meta.ctime(),
        meta.ctime_nsec()
    ));
    // A change time before 1970 or past what the clock holds is never
    // settled.
    let changed = u64::try_from(meta.ctime()).ok().and_then(|secs| {
        SystemTime::UNIX_EPOCH.checked_add(Duration::new(
            secs,
            meta.ctime_nsec().clamp(0, 999_999_999) as u32,
        ))
    });
    Some(Record {
        path: open.dir.join("files").join(hex::encode(&name.finalize()[..16])),
        settled: changed
            .and_then(|changed| now.duration_since(changed).ok())
            .is_some_and(|age| age >= SETTLED),
    })
}

/// What a record says of its file.
#[derive(Clone, Copy)]
enum Fact {
    /// The SHA-256 of a plugin file.
    Digest,
    /// The tag a cache entry's bytes were found to have.
    EntryTag,
}

/// What the tag of the record at `path`, saying `value` is its file's
/// `fact`, is made over.
fn record_message(fact: Fact, path: &Path, value: &[u8; 32]) -> Vec<u8> {
    let fact: &[u8] = match fact {
        Fact::Digest => b"file\0",
        Fact::EntryTag => b"entry\0",
    };
    [fact, path.as_os_str().as_encoded_bytes(), b"\0", value].concat()
}

/// The `fact` the record at `path` holds, if this cache tagged it.
fn recall(open: &Open, fact: Fact, path: &Path) -> Option<[u8; 32]> {
    // A record is two hex digests and a space: one byte past that is
    // enough to tell a file is not one.
    const RECORD: u64 = 64 + 1 + 64;
    let mut text = String::new();
    fs::File::open(path)
        .ok()?
        .take(RECORD + 1)
        .read_to_string(&mut text)
        .ok()?;
    let (value, tag) = text.split_once(' ')?;
    let value: [u8; 32] = hex::decode(value).ok()?.try_into().ok()?;
    let tag = hex::decode(tag).ok()?;
    verify(&open.key, &record_message(fact, path, &value), &tag).then_some(value)
}

/// Record `value` as the `fact` of `record`'s file, if it has settled
/// (else a later write might leave its metadata, and so `record`, as is).
fn remember(open: &Open, fact: Fact, record: &Record, value: &[u8; 32]) -> anyhow::Result<()> {
    if !record.settled {
        return Ok(());
    }
    let dir = record.path.parent().expect("records live in a directory");
    create_private_dir(dir)?;
    let tag = blake3::keyed_hash(&open.key, &record_message(fact, &record.path, value));
    let line = format!("{} {}", hex::encode(value), tag.to_hex());
    write_private(dir, &record.path, &[line.as_bytes()])
}

/// Stamp the entry whose tag is at `tag` as used `now`, if its stamp is
/// older than [`RENEW_AFTER`]. Best effort: a stamp not renewed only makes
/// the entry an earlier candidate for removal.
fn renew(tag: &Path, now: SystemTime) {
    let stale = fs::metadata(tag)
        .and_then(|m| m.modified())
        .is_ok_and(|used| now.duration_since(used).is_ok_and(|age| age > RENEW_AFTER));
    if stale
        && let Err(e) = fs::File::options()
            .write(true)
            .open(tag)
            .and_then(|f| f.set_modified(now))
    {
        tracing::debug!(path = %tag.display(), "cache entry's use not recorded: {e}");
    }
}

/// Remove from `dir` the entries loaded least recently, never `kept`,
/// until the entries take at most `max_bytes`; and the records of files not
/// rewritten for [`INDEX_DAYS`] days. An entry's use is its tag's stamp (a
/// tagless entry, of an older layout, its own). Best effort: another process
/// may be pruning or storing at the same time.
fn prune(dir: &Path, kept: &Path, max_bytes: u64, now: SystemTime) {
    let stamp = |path: &Path| fs::symlink_metadata(path).and_then(|m| m.modified()).ok();
    let mut entries = Vec::new();
    let mut total = 0;
    for path in fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
    {
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        if path.extension().is_none_or(|e| e != "cwasm") || !meta.is_file() {
            continue;
        }
        let used = stamp(&path.with_extension("tag")).or(meta.modified().ok());
        total += meta.len();
        entries.push((used.unwrap_or(SystemTime::UNIX_EPOCH), meta.len(), path));
    }
    entries.sort();
    for (_, size, path) in entries {
        if total <= max_bytes {
            break;
        }
        if path != kept && fs::remove_file(&path).is_ok() {
            let _ = fs::remove_file(path.with_extension("tag"));
            total -= size;
        }
    }
    let oldest = now - Duration::from_secs(INDEX_DAYS * 24 * 3600);
    for path in fs::read_dir(dir.join("files"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
    {
        if stamp(&path).is_some_and(|written| written < oldest) {
            let _ = fs::remove_file(path);
        }
    }
}

/// The file at `path`, mapped read-only.
fn map(path: &Path) -> std::io::Result<memmap2::Mmap> {
    let file = fs::File::open(path)?;
    // SAFETY: the mapping is only read, to hash it. Its bytes change under
    // it only if the file is written in place, which this cache never does
    // (it renames a new file over an entry), and the directory's only
    // writer is this user.
    unsafe { memmap2::Mmap::map(&file) }
}

/// Whether `tag` is the keyed hash of `message` under `key` (compared in
/// constant time, as `blake3::Hash`'s equality is).
fn verify(key: &Key, message: &[u8], tag: &[u8]) -> bool {
    <[u8; 32]>::try_from(tag).is_ok_and(|tag| blake3::keyed_hash(key, message) == blake3::Hash::from(tag))
}

/// Write `parts` to `path` whole: to a new private file in `dir`, renamed.
fn write_private(dir: &Path, path: &Path, parts: &[&[u8]]) -> anyhow::Result<()> {
    let (tmp, mut file) = temp_file(dir)?;
    let written = parts
        .iter()
        .try_for_each(|part| file.write_all(part))
        .and_then(|()| fs::rename(&tmp, path));
    if written.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    Ok(written?)
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// A new file of mode 0600 in `dir`, under a name no other writer uses.
fn temp_file(dir: &Path) -> std::io::Result<(PathBuf, fs::File)> {
    use std::os::unix::fs::OpenOptionsExt;
    use std::sync::atomic::{AtomicU64, Ordering};
    // Plugins load on several threads at once.
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nonce: u64 = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or_default();
    let count = NEXT.fetch_add(1, Ordering::Relaxed);
    let path = dir.join(format!(".tmp-{}-{nonce}-{count}", std::process::id()));
    let file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)?;
    Ok((path, file))
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

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: Duration = Duration::from_secs(24 * 3600);

    /// Set the modification time of the file at `path`.
    fn stamp(path: &Path, time: SystemTime) {
        fs::File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(time)
            .unwrap();
    }

    /// An entry of `bytes` bytes named `name`, last used `used`.
    fn entry(dir: &Path, name: &str, bytes: usize, used: SystemTime) -> PathBuf {
        let path = dir.join(format!("{name}.cwasm"));
        fs::write(&path, vec![0; bytes]).unwrap();
        fs::write(path.with_extension("tag"), b"tag").unwrap();
        stamp(&path.with_extension("tag"), used);
        path
    }

    /// The kernel's busy answer is found beneath the errors wrapping it, as
    /// the memory image's sealing reports it; any other is not retried.
    #[test]
    fn a_busy_kernel_is_told_from_other_failures() {
        #[derive(Debug, thiserror::Error)]
        #[error("cannot add seals to the memfd")]
        struct Sealing(#[source] std::io::Error);
        let busy =
            wasmtime::Error::new(Sealing(std::io::Error::from_raw_os_error(16))).context("instantiating");
        assert!(is_busy(&busy), "{busy:#}");
        let denied = wasmtime::Error::new(Sealing(std::io::ErrorKind::PermissionDenied.into()));
        assert!(!is_busy(&denied) && !is_busy(&wasmtime::Error::msg("busy")));
    }

    #[test]
    fn the_entries_used_least_recently_go_first_and_the_one_stored_stays() {
        let dir = tempfile::tempdir().unwrap();
        let now = SystemTime::now();
        let stored = entry(dir.path(), "stored", 100, now - 9 * DAY);
        let old = entry(dir.path(), "old", 100, now - 5 * DAY);
        let recent = entry(dir.path(), "recent", 100, now - DAY);
        let newest = entry(dir.path(), "newest", 100, now);
        // An entry of an older layout, without a tag: its own stamp counts.
        let tagless = dir.path().join("tagless.cwasm");
        fs::write(&tagless, vec![0; 100]).unwrap();
        stamp(&tagless, now - 3 * DAY);

        prune(dir.path(), &stored, 300, now);
        assert!(stored.exists() && recent.exists() && newest.exists());
        assert!(!old.exists() && !old.with_extension("tag").exists());
        assert!(!tagless.exists());
    }

    #[test]
    fn under_the_cap_nothing_goes_but_records_of_files_long_unseen() {
        let dir = tempfile::tempdir().unwrap();
        let now = SystemTime::now();
        let stored = entry(dir.path(), "stored", 100, now);
        let old = entry(dir.path(), "old", 100, now - 400 * DAY);
        fs::create_dir(dir.path().join("files")).unwrap();
        let (fresh, stale) = (dir.path().join("files/fresh"), dir.path().join("files/stale"));
        fs::write(&fresh, b"x").unwrap();
        fs::write(&stale, b"x").unwrap();
        stamp(&stale, now - Duration::from_secs((INDEX_DAYS + 1) * 24 * 3600));

        prune(dir.path(), &stored, 200, now);
        assert!(stored.exists() && old.exists());
        assert!(fresh.exists() && !stale.exists());
    }

    /// A record is made only of a file that last changed [`SETTLED`] ago;
    /// one made is recalled for that file as it is, under that fact alone.
    #[test]
    fn only_a_settled_file_is_recorded_and_a_record_holds_for_its_fact() {
        let dir = tempfile::tempdir().unwrap();
        let open = Open {
            dir: dir.path().to_owned(),
            key: [7; KEY_BYTES],
        };
        let file = dir.path().join("plugin.wasm");
        fs::write(&file, b"code").unwrap();
        let now = SystemTime::now();
        let fresh = record_of(&open, &file, now).unwrap();
        assert!(!fresh.settled);
        remember(&open, Fact::Digest, &fresh, &[1; 32]).unwrap();
        assert_eq!(recall(&open, Fact::Digest, &fresh.path), None);

        let later = record_of(&open, &file, now + SETTLED).unwrap();
        assert!(later.settled);
        assert_eq!(later.path, fresh.path);
        remember(&open, Fact::Digest, &later, &[1; 32]).unwrap();
        assert_eq!(recall(&open, Fact::Digest, &later.path), Some([1; 32]));
        assert_eq!(recall(&open, Fact::EntryTag, &later.path), None);
        let other_key = Open {
            dir: dir.path().to_owned(),
            key: [8; KEY_BYTES],
        };
        assert_eq!(recall(&other_key, Fact::Digest, &later.path), None);
        // Nor does a record with anything after it, or of another shape.
        let sound = fs::read_to_string(&later.path).unwrap();
        for planted in [format!("{sound}\n"), sound.replace(' ', "\t"), String::new()] {
            fs::write(&later.path, planted).unwrap();
            assert_eq!(recall(&open, Fact::Digest, &later.path), None);
        }
    }

    #[test]
    fn a_load_renews_a_stale_stamp_and_leaves_a_fresh_one() {
        let dir = tempfile::tempdir().unwrap();
        let now = SystemTime::now();
        let used = |p: &Path| fs::metadata(p.with_extension("tag")).unwrap().modified().unwrap();
        let stale = entry(dir.path(), "stale", 1, now - DAY);
        let fresh = entry(dir.path(), "fresh", 1, now - RENEW_AFTER / 2);
        let before = used(&fresh);
        renew(&stale.with_extension("tag"), now);
        renew(&fresh.with_extension("tag"), now);
        assert_eq!(used(&stale), now);
        assert_eq!(used(&fresh), before);
    }
}
