//! The operator's credential store: one TOML file of caller subject →
//! plugin → secret name → value, e.g.
//!
//! ```toml
//! [alice.github]
//! token = "ghp_..."
//! ["auth0|5f2c".github]
//! token = "ghp_..."
//! ```
//!
//! It is checked as the plugin directory is (`plugin_file::safe_path`: no
//! other user may change it or a directory above it) and, since it holds
//! secrets, readable by its owner alone (mode 0600): anything else is
//! refused, naming the file and the fix. It is read again when it changes
//! (its size, modification time, change time or inode), at most
//! [`MAX_STORE_BYTES`] of it; a file that has become unsafe or does not
//! parse is refused until fixed, so no call falls back to what it held
//! before. A parse error gives its line, never the text around it (the
//! text is secrets).

use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::CredentialError;
use crate::plugin_file::check_safe_path;

/// The largest store read: far more than any team's tokens.
const MAX_STORE_BYTES: u64 = 1 << 20;

/// Subject → plugin → secret name → value.
type Entries = BTreeMap<String, BTreeMap<String, BTreeMap<String, String>>>;

/// What a file was when it was read: a change to any is a new file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    len: u64,
    mtime_ns: i128,
    ctime_ns: i128,
    ino: u64,
}

impl Stamp {
    fn of(meta: &std::fs::Metadata) -> Self {
        let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
        Self {
            len: meta.len(),
            mtime_ns: ns(meta.mtime(), meta.mtime_nsec()),
            ctime_ns: ns(meta.ctime(), meta.ctime_nsec()),
            ino: meta.ino(),
        }
    }
}

/// The store, as last read.
#[derive(Debug)]
pub(super) struct Store {
    path: PathBuf,
    read: Mutex<(Option<Stamp>, Result<Entries, CredentialError>)>,
}

impl Store {
    /// Check and read `path` now: an unsafe or broken store stops the
    /// start.
    pub(super) fn open(path: &Path) -> Result<Self, CredentialError> {
        let (stamp, entries) = read(path)?;
        Ok(Self {
            path: path.to_owned(),
            read: Mutex::new((Some(stamp), Ok(entries))),
        })
    }

    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// `subject`'s value of `plugin`'s secret `name`, from the file as it
    /// is now; `Ok(None)` if it holds none.
    pub(super) fn lookup(
        &self,
        subject: &str,
        plugin: &str,
        name: &str,
    ) -> Result<Option<String>, CredentialError> {
        let now = std::fs::metadata(&self.path).map(|m| Stamp::of(&m)).ok();
        let mut read = self.read.lock().unwrap_or_else(|e| e.into_inner());
        if now.is_none() || now != read.0 {
            *read = match self::read(&self.path) {
                Ok((stamp, entries)) => (Some(stamp), Ok(entries)),
                Err(e) => {
                    tracing::warn!("{e}");
                    (now, Err(e))
                }
            };
        }
        let entries = read.1.as_ref().map_err(Clone::clone)?;
        Ok(entries
            .get(subject)
            .and_then(|plugins| plugins.get(plugin))
            .and_then(|secrets| secrets.get(name))
            .cloned())
    }
}

/// Check `path`, then read and parse it.
fn read(path: &Path) -> Result<(Stamp, Entries), CredentialError> {
    let refused = |why: String| {
        CredentialError(format!(
            "the credential store {} is refused: {why}",
            path.display()
        ))
    };
    check_safe_path(path).map_err(|e| refused(e.message))?;
    let file = std::fs::File::open(path).map_err(|e| refused(format!("cannot open it: {e}")))?;
    let meta = file
        .metadata()
        .map_err(|e| refused(format!("cannot inspect it: {e}")))?;
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(refused(format!(
            "it holds secrets and is open to other users (mode {mode:04o}); fix: `chmod 600 {}`",
            path.display()
        )));
    }
    if !meta.is_file() {
        return Err(refused("it is not a regular file".into()));
    }
    let mut text = String::new();
    file.take(MAX_STORE_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| refused(format!("cannot read it as UTF-8 text: {}", e.kind())))?;
    if text.len() as u64 > MAX_STORE_BYTES {
        return Err(refused(format!("it holds more than {MAX_STORE_BYTES} bytes")));
    }
    let entries: Entries = toml::from_str(&text).map_err(|e| {
        // The message alone, with its line: the error's own rendering
        // quotes the line, which is a secret.
        let line = e.span().map(|s| text[..s.start].lines().count().max(1));
        let at = line.map_or_else(String::new, |l| format!(" at line {l}"));
        refused(format!(
            "it is not caller → plugin → secret = \"value\" TOML{at}: {}",
            e.message()
        ))
    })?;
    for (subject, plugins) in &entries {
        for (plugin, secrets) in plugins {
            if let Some((name, _)) = secrets.iter().find(|(_, v)| v.is_empty()) {
                return Err(refused(format!(
                    "[\"{}\".{}] {} is empty",
                    crate::bounds::shown(subject),
                    crate::bounds::shown(plugin),
                    crate::bounds::shown(name)
                )));
            }
        }
    }
    Ok((Stamp::of(&meta), entries))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(text: &str, mode: u32) -> (tempfile::TempDir, Result<Store, CredentialError>) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("credentials.toml");
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        let opened = Store::open(&path);
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
