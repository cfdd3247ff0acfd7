//! Safe locations: a plugin, its manifest, the lock and approval files are
//! used only if no other user can change them, as ssh refuses a key file
//! others can write.
//!
//! A path is safe when the file and every directory above it (the
//! resolved path, symbolic links followed) are owned by the user running
//! the host or by root, and none is writable by group or others; a
//! directory above may be writable by others if it is sticky (`/tmp`), as
//! then nobody else can rename or remove what is in it. The directory that
//! holds the file itself may not be (sticky or not, others could add
//! a plugin to it). An error advises `chmod go-w` only on a path the user
//! owns that is not sticky, and else to move what was checked: a shared
//! directory such as `/tmp` is never theirs to change. Owns these checks;
//! not what is refused because of them.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

const GROUP_OR_OTHER_WRITE: u32 = 0o022;
const STICKY: u32 = 0o1000;

/// A path another user could change, or that could not be inspected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct UnsafePath {
    /// The file or directory at fault: the path checked, or one above it.
    pub at: PathBuf,
    /// What is unsafe about it and how to fix it, naming it.
    pub message: String,
}

impl UnsafePath {
    fn new(at: &Path, message: String) -> Self {
        Self {
            at: at.to_owned(),
            message,
        }
    }
}

/// Check `path` (which must exist) and the directories above it. The
/// error says what is unsafe and how to fix it.
pub fn check(path: &Path) -> Result<(), UnsafePath> {
    check_from(path, 2)
}

/// Check the directory `dir` (which must exist) and those above it, for a
/// directory the host itself keeps files in (the code cache): as
/// [`check`], but the directory holding it may be sticky (`/tmp`), as
/// then nobody else can rename or replace `dir`.
pub fn check_dir(dir: &Path) -> Result<(), UnsafePath> {
    check_from(dir, 1)
}

/// The check, tolerating a sticky world-writable directory from `depth`
/// ancestors up.
fn check_from(path: &Path, sticky_from: usize) -> Result<(), UnsafePath> {
    let resolved = std::fs::canonicalize(path)
        .map_err(|e| UnsafePath::new(path, format!("cannot resolve {}: {e}", path.display())))?;
    let me = rustix::process::geteuid().as_raw();
    for (depth, at) in resolved.ancestors().enumerate() {
        let meta = std::fs::metadata(at)
            .map_err(|e| UnsafePath::new(at, format!("cannot inspect {}: {e}", at.display())))?;
        let mode = meta.permissions().mode();
        let what = match depth {
            0 if meta.is_dir() => "directory",
            0 => "file",
            _ => "directory",
        };
        if meta.uid() != me && meta.uid() != 0 {
            let message = format!(
                "the {what} {} is owned by another user (uid {}): they could change what runs; \
                 fix: {}",
                at.display(),
                meta.uid(),
                move_fix(path)
            );
            return Err(UnsafePath::new(at, message));
        }
        // The file and the directory holding it: no writer but the owner.
        // Directories further up: a sticky one lets nobody else rename
        // what is in it.
        let tolerated = depth >= sticky_from && mode & STICKY != 0;
        if mode & GROUP_OR_OTHER_WRITE != 0 && !tolerated {
            let who = if mode & 0o002 != 0 {
                "every user"
            } else {
                "its group"
            };
            // Only what the user owns, and is no shared sticky directory
            // (`/tmp`), is theirs to chmod: opening up or locking down a
            // system directory breaks the system.
            let fix = if meta.uid() == me && mode & STICKY == 0 {
                format!("`chmod go-w {}`", at.display())
            } else {
                move_fix(path)
            };
            let message = format!(
                "the {what} {} is writable by {who} (mode {:04o}): they could change what runs; fix: {fix}",
                at.display(),
                mode & 0o7777,
            );
            return Err(UnsafePath::new(at, message));
        }
    }
    Ok(())
}

/// The fix when the unsafe directory is not the user's to change: move
/// what was checked (a plugin directory with its lock and approvals, a
/// credential store).
fn move_fix(path: &Path) -> String {
    format!(
        "move {} (and the files kept beside it) to a directory only you can write",
        path.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chmod(path: &Path, mode: u32) {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn writable_by_others_is_refused_with_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("p.wasm");
        std::fs::write(&file, b"x").unwrap();
        chmod(dir.path(), 0o755);
        chmod(&file, 0o644);
        check(&file).unwrap();
        chmod(&file, 0o666);
        let err = check(&file).unwrap_err();
        assert_eq!(err.at, file.canonicalize().unwrap());
        let err = err.message;
        assert!(
            err.contains("file") && err.contains("every user") && err.contains("chmod go-w"),
            "{err}"
        );
        chmod(&file, 0o644);
        // The plugin directory: sticky does not make it safe.
        chmod(dir.path(), 0o1777);
        let err = check(&file).unwrap_err().message;
        assert!(err.contains("directory") && err.contains("1777"), "{err}");
        // A shared sticky directory is never the user's to chmod.
        assert!(
            !err.contains("chmod") && err.contains(&format!("fix: move {}", file.display())),
            "{err}"
        );
        chmod(dir.path(), 0o775);
        assert!(check(&file).unwrap_err().message.contains("its group"));
        chmod(dir.path(), 0o755);
    }

    #[test]
    fn a_sticky_directory_above_is_tolerated() {
        // A directory in a sticky, world-writable one (the temporary
        // directory is usually such).
        let outer = tempfile::tempdir().unwrap();
        chmod(outer.path(), 0o1777);
        let inner = outer.path().join("plugins");
        std::fs::create_dir(&inner).unwrap();
        chmod(&inner, 0o755);
        let file = inner.join("p.wasm");
        std::fs::write(&file, b"x").unwrap();
        chmod(&file, 0o644);
        check(&file).unwrap();
        chmod(outer.path(), 0o777);
        assert!(
            check(&file)
                .unwrap_err()
                .message
                .contains(&outer.path().display().to_string())
        );
        chmod(outer.path(), 0o755);
    }

    #[test]
    fn a_directory_in_a_sticky_one_is_safe_and_one_others_can_write_is_not() {
        let outer = tempfile::tempdir().unwrap();
        chmod(outer.path(), 0o1777);
        let inner = outer.path().join("cache");
        std::fs::create_dir(&inner).unwrap();
        chmod(&inner, 0o700);
        check_dir(&inner).unwrap();
        chmod(&inner, 0o777);
        let err = check_dir(&inner).unwrap_err().message;
        assert!(
            err.contains("writable by every user") && err.contains("chmod go-w"),
            "{err}"
        );
        chmod(&inner, 0o700);
        chmod(outer.path(), 0o755);
    }
}
