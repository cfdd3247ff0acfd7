//! The operator's credential store, in one of two forms:
//!
//! - one TOML file of caller subject → plugin → secret name → value
//!   (`[credentials] file`), e.g.
//!
//!   ```toml
//!   [alice.github]
//!   token = "ghp_..."
//!   ["auth0|5f2c".github]
//!   token = "ghp_..."
//!   ```
//!
//! - a directory of one TOML file per caller (`[credentials] dir`), of
//!   plugin → secret name → value, named from the caller's subject
//!   (`dir`: the subject percent-encoded, so no subject names a file
//!   outside the directory or another caller's file).
//!
//! Each file is checked as the plugin directory is (`plugin_file::safe_path`:
//! no other user may change it or a directory above it) and, since it holds
//! secrets, readable by its owner alone (mode 0600, a directory 0700):
//! anything else is refused, naming the file and the fix. A file is read
//! again when it changes (its size, times, inode, owner or mode), at most a
//! bounded size of it; a file that has become unsafe or does not parse is
//! refused until fixed, so no call falls back to what it held before. A
//! parse error gives its line, never the text around it (the text is
//! secrets).
//!
//! Every value read is leased to the set of secrets kept out of the log
//! (`secrets::held`) for as long as it is kept here: it goes into requests
//! whose refusals the libraries below may log whole.
//!
//! Owns reading and checking the store. Not here: which secrets a call
//! needs, nor what is done with a value (`credentials`).

mod dir;

use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::de::DeserializeOwned;

use super::CredentialError;
use crate::plugin_file::check_safe_path;
use crate::secrets::held::Lease;

/// The largest single-file store read: far more than any team's tokens.
const MAX_STORE_BYTES: u64 = 1 << 20;

/// Plugin → secret name → value: one caller's entries.
type Secrets = BTreeMap<String, BTreeMap<String, String>>;

/// Subject → plugin → secret name → value.
type Entries = BTreeMap<String, Secrets>;

/// The store, in the form configured.
#[derive(Debug)]
pub(super) enum Store {
    /// One file holding every caller.
    File(OneFile),
    /// A directory of one file per caller.
    Dir(dir::Dir),
}

impl Store {
    /// Check and read the single-file store at `path` now: an unsafe or
    /// broken store stops the start.
    pub(super) fn file(path: &Path) -> Result<Self, CredentialError> {
        let (stamp, entries, held) = OneFile::read(path)?;
        Ok(Self::File(OneFile {
            path: path.to_owned(),
            read: Mutex::new((Some(stamp), Ok(entries), held)),
        }))
    }

    /// Check the directory store at `path` now (each caller's file is read
    /// at their first call): an unsafe directory stops the start.
    pub(super) fn dir(path: &Path) -> Result<Self, CredentialError> {
        dir::Dir::open(path).map(Self::Dir)
    }

    /// `subject`'s value of `plugin`'s secret `name`, from the store as it
    /// is now; `Ok(None)` if it holds none.
    pub(super) fn lookup(
        &self,
        subject: &str,
        plugin: &str,
        name: &str,
    ) -> Result<Option<String>, CredentialError> {
        match self {
            Self::File(file) => file.lookup(subject, plugin, name),
            Self::Dir(dir) => dir.lookup(subject, plugin, name),
        }
    }

    /// What the operator does to give `subject` a value of `plugin`'s
    /// secret `name`.
    pub(super) fn to_add(&self, subject: &str, plugin: &str, name: &str) -> String {
        match self {
            Self::File(file) => format!(
                "the operator adds it to {} as [{}.{plugin}] {name} = \"...\"",
                file.path.display(),
                crate::bounds::shown(subject),
            ),
            Self::Dir(dir) => dir.to_add(subject, plugin, name),
        }
    }
}

/// The single-file store, as last read.
#[derive(Debug)]
pub(super) struct OneFile {
    path: PathBuf,
    read: Mutex<LastRead<Option<Stamp>, Entries>>,
}

/// A file as last read: its stamp, what it held (or why it was refused),
/// and the leases of its values.
type LastRead<S, T> = (S, Result<T, CredentialError>, Vec<Lease>);

impl OneFile {
    /// The file at `path`, checked and read, and the leases of its values.
    fn read(path: &Path) -> Result<(Stamp, Entries, Vec<Lease>), CredentialError> {
        let (stamp, entries) = read_checked::<Entries>(path, Follow::Links, MAX_STORE_BYTES, ENTRIES_SHAPE)?;
        entries
            .iter()
            .try_for_each(|(subject, secrets)| no_empty_value(path, Some(subject), secrets))?;
        let held = entries.values().flat_map(leases).collect();
        Ok((stamp, entries, held))
    }

    fn lookup(&self, subject: &str, plugin: &str, name: &str) -> Result<Option<String>, CredentialError> {
        let now = std::fs::metadata(&self.path).map(|m| Stamp::of(&m)).ok();
        let mut read = self.read.lock().unwrap_or_else(|e| e.into_inner());
        if now.is_none() || now != read.0 {
            *read = match Self::read(&self.path) {
                Ok((stamp, entries, held)) => (Some(stamp), Ok(entries), held),
                Err(e) => {
                    tracing::warn!("{e}");
                    (now, Err(e), Vec::new())
                }
            };
        }
        let entries = read.1.as_ref().map_err(Clone::clone)?;
        Ok(entries.get(subject).and_then(|s| value(s, plugin, name)))
    }
}

/// One caller's values, each leased under its secret's name.
fn leases(secrets: &Secrets) -> Vec<Lease> {
    secrets
        .values()
        .flat_map(|named| named.iter())
        .filter_map(|(name, value)| crate::secrets::held::lease(name, value))
        .collect()
}

/// `plugin`'s secret `name` among one caller's `secrets`.
fn value(secrets: &Secrets, plugin: &str, name: &str) -> Option<String> {
    secrets.get(plugin).and_then(|s| s.get(name)).cloned()
}

/// What a file was when it was read: a change to any is a new file. The
/// owner and mode are in it so that a `chmod` is seen even within the
/// clock tick of the write before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    len: u64,
    mtime_ns: i128,
    ctime_ns: i128,
    ino: u64,
    uid: u32,
    mode: u32,
}

impl Stamp {
    fn of(meta: &std::fs::Metadata) -> Self {
        let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
        Self {
            len: meta.len(),
            mtime_ns: ns(meta.mtime(), meta.mtime_nsec()),
            ctime_ns: ns(meta.ctime(), meta.ctime_nsec()),
            ino: meta.ino(),
            uid: meta.uid(),
            mode: meta.mode(),
        }
    }
}

/// Whether the last component of a path may be a symbolic link: the
/// operator's own store file may (the safe-path check follows it), a
/// caller's file in the store directory may not (it could lead anywhere).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Follow {
    Links,
    NoLinks,
}

/// What the single file holds, for its parse error.
const ENTRIES_SHAPE: &str = "caller → plugin → secret = \"value\" TOML";

/// The error refusing the store file `path`.
fn refused(path: &Path, why: impl std::fmt::Display) -> CredentialError {
    CredentialError(format!(
        "the credential store {} is refused: {why}",
        path.display()
    ))
}

/// Check `path` (safe, owner-only, a regular file of at most `max` bytes),
/// then read and parse it as `shape`.
fn read_checked<T: DeserializeOwned>(
    path: &Path,
    follow: Follow,
    max: u64,
    shape: &str,
) -> Result<(Stamp, T), CredentialError> {
    // Non-blocking, so a named pipe put in its place is refused below
    // rather than waited on for ever; not through a final symbolic link
    // where none is allowed.
    let mut flags = rustix::fs::OFlags::NONBLOCK;
    if follow == Follow::NoLinks {
        flags |= rustix::fs::OFlags::NOFOLLOW;
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags.bits() as i32)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(code) if code == rustix::io::Errno::LOOP.raw_os_error() => refused(
                path,
                "it is a symbolic link, and a caller's file must be the directory's own regular file",
            ),
            _ => refused(path, format_args!("cannot open it: {e}")),
        })?;
    check_safe_path(path).map_err(|e| refused(path, e.message))?;
    let meta = file
        .metadata()
        .map_err(|e| refused(path, format_args!("cannot inspect it: {e}")))?;
    if !meta.is_file() {
        return Err(refused(path, "it is not a regular file"));
    }
    owner_only(path, &meta, "it holds secrets", "600")?;
    let mut text = String::new();
    file.take(max + 1)
        .read_to_string(&mut text)
        .map_err(|e| refused(path, format_args!("cannot read it as UTF-8 text: {}", e.kind())))?;
    if text.len() as u64 > max {
        return Err(refused(path, format_args!("it holds more than {max} bytes")));
    }
    let parsed: T = toml::from_str(&text).map_err(|e| {
        // The message alone, with its line: the error's own rendering
        // quotes the line, which is a secret.
        let line = e.span().map(|s| text[..s.start].lines().count().max(1));
        let at = line.map_or_else(String::new, |l| format!(" at line {l}"));
        refused(path, format_args!("it is not {shape}{at}: {}", e.message()))
    })?;
    Ok((Stamp::of(&meta), parsed))
}

/// Refuse `path` (of `meta`) if anyone but its owner may read it, saying
/// why it must not be (`holds`) and the `chmod` mode that fixes it.
fn owner_only(path: &Path, meta: &std::fs::Metadata, holds: &str, fix: &str) -> Result<(), CredentialError> {
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o077 == 0 {
        return Ok(());
    }
    Err(refused(
        path,
        format_args!(
            "{holds} and is open to other users (mode {mode:04o}); fix: `chmod {fix} {}`",
            path.display()
        ),
    ))
}

/// Refuse `path` if a value of `secrets` (those of `subject`, in a file
/// holding every caller) is empty: an empty token is a mistake, never a
/// credential.
fn no_empty_value(path: &Path, subject: Option<&str>, secrets: &Secrets) -> Result<(), CredentialError> {
    for (plugin, values) in secrets {
        if let Some((name, _)) = values.iter().find(|(_, v)| v.is_empty()) {
            let table = match subject {
                Some(subject) => format!(
                    "[{}.{}]",
                    crate::bounds::shown(subject),
                    crate::bounds::shown(plugin)
                ),
                None => format!("[{}]", crate::bounds::shown(plugin)),
            };
            return Err(refused(
                path,
                format_args!("{table} {} is empty", crate::bounds::shown(name)),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(text: &str, mode: u32) -> (tempfile::TempDir, Result<Store, CredentialError>) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("credentials.toml");
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        let opened = Store::file(&path);
        (dir, opened)
    }

    #[test]
    fn a_callers_value_is_found_by_subject_plugin_and_name() {
        let (_dir, s) = store(
            "[alice.tracker]\ntoken = \"tok-a\"\n[\"auth0|b\".tracker]\ntoken = \"tok-b\"\n",
            0o600,
        );
        let s = s.unwrap();
        assert_eq!(
            s.lookup("alice", "tracker", "token").unwrap().as_deref(),
            Some("tok-a")
        );
        assert_eq!(
            s.lookup("auth0|b", "tracker", "token").unwrap().as_deref(),
            Some("tok-b")
        );
        assert_eq!(s.lookup("alice", "other", "token").unwrap(), None);
        assert_eq!(s.lookup("carol", "tracker", "token").unwrap(), None);
    }

    #[test]
    fn a_store_open_to_others_is_refused_by_name() {
        for mode in [0o644, 0o640, 0o604] {
            let (dir, s) = store("[alice.tracker]\ntoken = \"tok-a\"\n", mode);
            let err = s.unwrap_err().to_string();
            let path = dir.path().join("credentials.toml");
            assert!(
                err.contains(&path.display().to_string()) && err.contains("chmod 600"),
                "{err}"
            );
        }
    }

    #[test]
    fn a_broken_store_names_its_line_and_never_its_text() {
        let (_dir, s) = store(
            "[alice.tracker]\ntoken = \"tok-secret-value\"\noops tok-other-secret\n",
            0o600,
        );
        let err = s.unwrap_err().to_string();
        assert!(err.contains("line 3"), "{err}");
        assert!(!err.contains("tok-"), "{err}");
        let (_dir, s) = store("[alice.tracker]\ntoken = \"\"\n", 0o600);
        let err = s.unwrap_err().to_string();
        assert!(
            err.contains("[\"alice\".\"tracker\"] \"token\" is empty"),
            "{err}"
        );
    }

    #[test]
    fn a_named_pipe_in_place_of_the_store_is_refused_not_waited_on() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("credentials.toml");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &path,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let err = Store::file(&path).unwrap_err().to_string();
        assert!(err.contains("not a regular file"), "{err}");
    }

    /// Each value read is held out of the log while the store keeps it:
    /// one the operator removes is let go at the next read.
    #[test]
    fn a_value_kept_is_held_out_of_the_log_until_it_is_removed() {
        use crate::secrets::held::{found_in, redact};
        const KEPT: &str = "store-value-kept-4e81c2";
        const REMOVED: &str = "store-value-removed-93af07";
        let (dir, s) = store(
            &format!("[alice.tracker]\ntoken = \"{KEPT}\"\n[bob.tracker]\ntoken = \"{REMOVED}\"\n"),
            0o600,
        );
        let s = s.unwrap();
        assert_eq!(redact(&format!("sent {KEPT}")), "sent [redacted:token]");
        assert!(found_in(REMOVED));
        let path = dir.path().join("credentials.toml");
        std::fs::write(&path, format!("[alice.tracker]\ntoken = \"{KEPT}\"\n")).unwrap();
        assert_eq!(s.lookup("bob", "tracker", "token").unwrap(), None);
        assert!(found_in(KEPT));
        assert!(!found_in(REMOVED));
        drop(s);
        assert!(!found_in(KEPT));
    }

    #[test]
    fn a_change_is_read_again_and_an_unsafe_one_refused_until_fixed() {
        let (dir, s) = store("[alice.tracker]\ntoken = \"tok-a\"\n", 0o600);
        let s = s.unwrap();
        let path = dir.path().join("credentials.toml");
        std::fs::write(
            &path,
            "[alice.tracker]\ntoken = \"tok-a2\"\n[bob.tracker]\ntoken = \"tok-b\"\n",
        )
        .unwrap();
        assert_eq!(
            s.lookup("alice", "tracker", "token").unwrap().as_deref(),
            Some("tok-a2")
        );
        assert_eq!(
            s.lookup("bob", "tracker", "token").unwrap().as_deref(),
            Some("tok-b")
        );
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(
            s.lookup("alice", "tracker", "token")
                .unwrap_err()
                .to_string()
                .contains("0644")
        );
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(
            s.lookup("alice", "tracker", "token").unwrap().as_deref(),
            Some("tok-a2")
        );
    }
}
