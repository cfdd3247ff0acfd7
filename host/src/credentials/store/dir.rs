//! The store as a directory of one file per caller: `NAME.toml`, of plugin
//! → secret name → value, where `NAME` is the caller's subject
//! percent-encoded (`file_name`).
//!
//! A subject is whatever the identity provider put in `sub` (or the local
//! user's name), so it is never used as a path: every byte but a lowercase
//! ASCII letter, a digit, `-`, `_` and a `.` that does not lead is written
//! `%XX`. No subject can then name a path outside the directory (`/` and
//! `..` are encoded) nor a hidden file, and no two subjects name one file,
//! even on a file system that folds case or normalises Unicode (capitals
//! and every non-ASCII byte are encoded too): `auth0|5f2C` is
//! `auth0%7C5f2%43.toml`. A subject whose name would be longer than a file
//! name may be has no file, and is told so.
//!
//! A caller's file is read at their first call and again when it changes;
//! it must be the directory's own regular file (a symbolic link is refused,
//! it could lead anywhere), mode 0600, and the directory must pass the
//! safe-path check and be its owner's alone (0700), as the names in it say
//! who the callers are. A change to the directory's owner or mode drops
//! every file read, so each is checked again.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::{
    CredentialError, Follow, LastRead, Secrets, Stamp, leases, no_empty_value, owner_only, read_checked,
    refused, value,
};
use crate::plugin_file::check_safe_path;

/// The largest caller's file read: a caller's tokens are a few lines.
const MAX_CALLER_BYTES: u64 = 64 << 10;

/// The callers' files kept as read; past it, all are dropped and read
/// again as their callers call (subjects come from verified tokens, but
/// an identity provider can mint any number of them).
const MAX_KEPT: usize = 4096;

/// The longest file name most file systems take (`NAME_MAX`).
const MAX_NAME_BYTES: usize = 255;

/// What a caller's file holds, for its parse error.
const SECRETS_SHAPE: &str = "plugin → secret = \"value\" TOML";

/// The directory store: its callers' files as last read.
#[derive(Debug)]
pub(in crate::credentials) struct Dir {
    path: PathBuf,
    read: Mutex<Kept>,
}

/// The directory's stamp when its files were read, and each file read.
#[derive(Debug)]
struct Kept {
    dir: Option<Stamp>,
    files: HashMap<String, LastRead<Stamp, Secrets>>,
}

impl Dir {
    /// Check the directory now.
    pub(super) fn open(path: &Path) -> Result<Self, CredentialError> {
        let stamp = check_dir(path)?;
        Ok(Self {
            path: path.to_owned(),
            read: Mutex::new(Kept {
                dir: Some(stamp),
                files: HashMap::new(),
            }),
        })
    }

    pub(super) fn lookup(
        &self,
        subject: &str,
        plugin: &str,
        name: &str,
    ) -> Result<Option<String>, CredentialError> {
        let file = file_name(subject).map_err(|why| {
            CredentialError(format!(
                "the credential directory {} has no file for this caller: {why}",
                self.path.display()
            ))
        })?;
        let path = self.path.join(&file);
        let dir_now = std::fs::metadata(&self.path).map(|m| Stamp::of(&m)).ok();
        let mut kept = self.read.lock().unwrap_or_else(|e| e.into_inner());
        if dir_now.is_none() || dir_now != kept.dir {
            kept.files.clear();
            kept.dir = Some(check_dir(&self.path)?);
        }
        let now = match std::fs::symlink_metadata(&path) {
            Ok(meta) => Stamp::of(&meta),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                kept.files.remove(&file);
                return Ok(None);
            }
            Err(e) => return Err(refused(&path, format_args!("cannot inspect it: {e}"))),
        };
        if kept.files.get(&file).is_none_or(|(stamp, ..)| *stamp != now) {
            let fresh = read_checked::<Secrets>(&path, Follow::NoLinks, MAX_CALLER_BYTES, SECRETS_SHAPE)
                .and_then(|(stamp, secrets)| {
                    no_empty_value(&path, None, &secrets)?;
                    Ok((stamp, secrets))
                });
            let entry = match fresh {
                Ok((stamp, secrets)) => {
                    let held = leases(&secrets);
                    (stamp, Ok(secrets), held)
                }
                Err(e) => {
                    tracing::warn!("{e}");
                    (now, Err(e), Vec::new())
                }
            };
            if kept.files.len() >= MAX_KEPT {
                kept.files.clear();
            }
            kept.files.insert(file.clone(), entry);
        }
        let secrets = kept.files[&file].1.as_ref().map_err(Clone::clone)?;
        Ok(value(secrets, plugin, name))
    }

    /// The file to write, and the line to put in it.
    pub(super) fn to_add(&self, subject: &str, plugin: &str, name: &str) -> String {
        match file_name(subject) {
            Ok(file) => format!(
                "the operator adds [{plugin}] {name} = \"...\" to {} (mode 0600)",
                self.path.join(file).display()
            ),
            Err(why) => format!("the credential directory cannot hold it: {why}; use a store file"),
        }
    }
}

/// The directory's stamp, once it is checked: safe, and its owner's alone.
fn check_dir(path: &Path) -> Result<Stamp, CredentialError> {
    check_safe_path(path).map_err(|e| refused(path, e.message))?;
    let meta = std::fs::metadata(path).map_err(|e| refused(path, format_args!("cannot inspect it: {e}")))?;
    if !meta.is_dir() {
        return Err(refused(path, "it is not a directory"));
    }
    owner_only(path, &meta, "its file names say who the callers are", "700")?;
    Ok(Stamp::of(&meta))
}

/// The file of `subject`: its bytes percent-encoded, then `.toml`.
fn file_name(subject: &str) -> Result<String, String> {
    if subject.is_empty() {
        return Err("an empty subject has no file".into());
    }
    let mut name = String::with_capacity(subject.len() + 5);
    for (i, byte) in subject.bytes().enumerate() {
        let kept = byte.is_ascii_lowercase()
            || byte.is_ascii_digit()
            || byte == b'-'
            || byte == b'_'
            || (byte == b'.' && i > 0);
        if kept {
            name.push(char::from(byte));
        } else {
            name.push_str(&format!("%{byte:02X}"));
        }
    }
    name.push_str(".toml");
    if name.len() > MAX_NAME_BYTES {
        return Err(format!(
            "caller {}'s file name would be {} bytes, over the {MAX_NAME_BYTES} a file name may be",
            crate::bounds::shown(subject),
            name.len()
        ));
    }
    Ok(name)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn chmod(path: &Path, mode: u32) {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    /// A store directory (mode 0700) with `files`, each 0600.
    fn store(files: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf) {
        let top = tempfile::tempdir().unwrap();
        let dir = top.path().join("credentials.d");
        std::fs::create_dir(&dir).unwrap();
        chmod(&dir, 0o700);
        for (name, text) in files {
            write(&dir.join(name), text);
        }
        (top, dir)
    }

    fn write(path: &Path, text: &str) {
        std::fs::write(path, text).unwrap();
        chmod(path, 0o600);
    }

    #[test]
    fn a_subject_is_encoded_so_it_names_only_its_own_file_in_the_directory() {
        for (subject, file) in [
            ("alice", "alice.toml"),
            ("alice.smith", "alice.smith.toml"),
            ("auth0|5f2C", "auth0%7C5f2%43.toml"),
            ("../bob", "%2E.%2Fbob.toml"),
            ("/etc/passwd", "%2Fetc%2Fpasswd.toml"),
            (".hidden", "%2Ehidden.toml"),
            ("50%", "50%25.toml"),
            ("Zoë", "%5Ao%C3%AB.toml"),
            ("a\0b", "a%00b.toml"),
        ] {
            assert_eq!(file_name(subject).unwrap(), file, "{subject:?}");
        }
        // Case never folds two subjects onto one name.
        assert_ne!(file_name("Alice").unwrap(), file_name("alice").unwrap());
        // One byte of a subject is at most three of its name.
        assert!(file_name(&"a".repeat(250)).is_ok());
        let err = file_name(&"A".repeat(100)).unwrap_err();
        assert!(err.contains("305 bytes"), "{err}");
        assert!(file_name("").is_err());
    }

    #[test]
    fn each_caller_is_read_from_their_own_file_and_a_traversal_finds_nothing() {
        let (top, dir) = store(&[
            ("alice.toml", "[tracker]\ntoken = \"tok-a\"\n"),
            ("auth0%7Cb.toml", "[tracker]\ntoken = \"tok-b\"\n"),
        ]);
        // A file beside the directory that a traversal would reach.
        write(
            &top.path().join("bob.toml"),
            "[tracker]\ntoken = \"tok-outside\"\n",
        );
        let s = super::super::Store::dir(&dir).unwrap();
        let token = |subject: &str| s.lookup(subject, "tracker", "token").unwrap();
        assert_eq!(token("alice").as_deref(), Some("tok-a"));
        assert_eq!(token("auth0|b").as_deref(), Some("tok-b"));
        assert_eq!(token("Alice"), None);
        assert_eq!(token("../bob"), None);
        assert_eq!(token("carol"), None);
        assert_eq!(s.lookup("alice", "other", "token").unwrap(), None);
        // What carol is told names her file.
        let told = s.to_add("carol", "tracker", "token");
        assert!(
            told.contains(&dir.join("carol.toml").display().to_string()) && told.contains("[tracker] token"),
            "{told}"
        );
        // She is added: read at her next call.
        write(&dir.join("carol.toml"), "[tracker]\ntoken = \"tok-c\"\n");
        assert_eq!(token("carol").as_deref(), Some("tok-c"));
        // Changed, then removed.
        write(&dir.join("carol.toml"), "[tracker]\ntoken = \"tok-c22\"\n");
        assert_eq!(token("carol").as_deref(), Some("tok-c22"));
        std::fs::remove_file(dir.join("carol.toml")).unwrap();
        assert_eq!(token("carol"), None);
    }

    #[test]
    fn a_link_an_open_file_or_directory_and_a_broken_file_are_refused_by_name() {
        let (top, dir) = store(&[("alice.toml", "[tracker]\ntoken = \"tok-a\"\n")]);
        let s = super::super::Store::dir(&dir).unwrap();
        let lookup = |subject: &str| s.lookup(subject, "tracker", "token");

        // A symbolic link, even to a safe file of the operator's.
        let outside = top.path().join("outside.toml");
        write(&outside, "[tracker]\ntoken = \"tok-outside\"\n");
        std::os::unix::fs::symlink(&outside, dir.join("mallory.toml")).unwrap();
        let err = lookup("mallory").unwrap_err().to_string();
        assert!(
            err.contains(&dir.join("mallory.toml").display().to_string()) && err.contains("symbolic link"),
            "{err}"
        );
        assert!(!err.contains("tok-"), "{err}");

        // A file others can read.
        write(&dir.join("bob.toml"), "[tracker]\ntoken = \"tok-b\"\n");
        chmod(&dir.join("bob.toml"), 0o644);
        let err = lookup("bob").unwrap_err().to_string();
        assert!(err.contains("bob.toml") && err.contains("chmod 600"), "{err}");
        chmod(&dir.join("bob.toml"), 0o600);
        assert_eq!(lookup("bob").unwrap().as_deref(), Some("tok-b"));

        // A file that does not parse: its line, never its text.
        write(
            &dir.join("dan.toml"),
            "[tracker]\ntoken = \"tok-d\"\noops tok-more\n",
        );
        let err = lookup("dan").unwrap_err().to_string();
        assert!(
            err.contains("dan.toml") && err.contains("line 3") && !err.contains("tok-"),
            "{err}"
        );

        // Over its size.
        let big = format!(
            "[tracker]\ntoken = \"{}\"\n",
            "x".repeat(MAX_CALLER_BYTES as usize)
        );
        write(&dir.join("eve.toml"), &big);
        assert!(lookup("eve").unwrap_err().to_string().contains("more than"));

        // The directory opened to others refuses everyone, even a file
        // already read, until it is closed again.
        chmod(&dir, 0o755);
        let err = lookup("alice").unwrap_err().to_string();
        assert!(err.contains("0755") && err.contains("chmod 700"), "{err}");
        chmod(&dir, 0o700);
        assert_eq!(lookup("alice").unwrap().as_deref(), Some("tok-a"));
    }

    #[test]
    fn an_unsafe_directory_stops_the_start_by_name() {
        let (_top, dir) = store(&[]);
        chmod(&dir, 0o750);
        let err = super::super::Store::dir(&dir).unwrap_err().to_string();
        assert!(
            err.contains(&dir.display().to_string()) && err.contains("chmod 700"),
            "{err}"
        );
        chmod(&dir, 0o770);
        let err = super::super::Store::dir(&dir).unwrap_err().to_string();
        assert!(err.contains("writable by its group"), "{err}");
        let file = dir.join("alice.toml");
        chmod(&dir, 0o700);
        write(&file, "");
        assert!(
            super::super::Store::dir(&file)
                .unwrap_err()
                .to_string()
                .contains("not a directory")
        );
    }
}
