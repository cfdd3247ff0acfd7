//! The directory the native file tools are confined to.
//!
//! Every file and directory the tools touch is opened through a cap-std
//! [`Dir`] on the root, which resolves a path one step at a time below it
//! (`openat2` with `RESOLVE_BENEATH` on Linux): `..` past the root, absolute
//! symlinks and symlinks that lead out are refused when the file is opened,
//! so no check made earlier can be raced by a directory swapped for a
//! symlink. A path the model gives is first made relative to the root by its
//! text alone (`.` and `..` applied; an absolute path only if it is below the
//! root), which lets an escape be reported as one before the disk is
//! touched. A symlink inside the root is followed while it stays inside
//! (through relative targets); walks and listings never follow one.
//!
//! Every file the tools read is opened here ([`open_regular`]): without
//! blocking, and only if it is a regular file, judged on the open file, so a
//! named pipe, a socket or a device (or one swapped in since a listing)
//! never holds a thread; reads stop at [`MAX_FILE_BYTES`].
//!
//! Writes replace a file whole through its directory's handle (a temporary
//! file renamed over it), so a reader never sees half of it; a write to a
//! path whose last step is a symlink, or is not a regular file, is refused
//! rather than replace it.

use std::io::{Read, Write};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use cap_fs_ext::{FollowSymlinks, OpenOptionsFollowExt};
use cap_std::ambient_authority;
use cap_std::fs::{Dir, File, FileType, FileTypeExt, Metadata, OpenOptions, OpenOptionsExt, Permissions};

use super::ToolError;
use crate::bounds::native::MAX_FILE_BYTES;

/// A directory the native tools may read (and write) below.
#[derive(Debug, Clone)]
pub struct Root {
    dir: PathBuf,
    handle: Arc<Dir>,
}

/// What a write did.
pub struct Written {
    /// The path written, relative to the root.
    pub path: PathBuf,
    pub created: bool,
}

impl Root {
    /// `dir`, canonicalised and opened; it must exist and be a directory.
    pub fn new(dir: &Path) -> std::io::Result<Self> {
        let dir = dir.canonicalize()?;
        if !dir.is_dir() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotADirectory,
                format!("{} is not a directory", dir.display()),
            ));
        }
        let handle = Arc::new(Dir::open_ambient_dir(&dir, ambient_authority())?);
        Ok(Self { dir, handle })
    }

    /// The root directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The handle everything below the root is opened through.
    pub(super) fn handle(&self) -> &Dir {
        &self.handle
    }

    /// `path` relative to the root, `.` and `..` applied textually; refused
    /// if that leaves the root. The empty path is the root itself.
    pub fn relative(&self, path: &str) -> Result<PathBuf, ToolError> {
        let given = Path::new(path);
        let inside = if given.is_absolute() {
            given.strip_prefix(&self.dir).map_err(|_| outside(path))?
        } else {
            given
        };
        let mut parts: Vec<Component> = Vec::new();
        for c in inside.components() {
            match c {
                Component::CurDir => {}
                Component::ParentDir => {
                    parts.pop().ok_or_else(|| outside(path))?;
                }
                Component::Normal(_) => parts.push(c),
                Component::RootDir | Component::Prefix(_) => return Err(outside(path)),
            }
        }
        Ok(parts.iter().collect())
    }

    /// The regular file `path` names, opened for reading ([`open_regular`]),
    /// with its metadata and its path relative to the root.
    pub fn open_file(&self, path: &str) -> Result<(File, Metadata, PathBuf), ToolError> {
        let rel = self.relative(path)?;
        let (file, meta) =
            open_regular(&self.handle, at(&rel), FollowSymlinks::Yes).map_err(|e| match e {
                Unopened::Io(e) => error(path, e),
                Unopened::Not(kind) => not_regular(path, kind),
            })?;
        Ok((file, meta, rel))
    }

    /// The whole content of the regular file `path` names, refused if it is
    /// over [`MAX_FILE_BYTES`], with the metadata it had before it was read
    /// and its path relative to the root.
    pub(super) fn read(&self, path: &str) -> Result<(Vec<u8>, Metadata, PathBuf), ToolError> {
        let (file, meta, rel) = self.open_file(path)?;
        let too_big = |len: u64| {
            ToolError::Failed(format!(
                "{path}: {len} bytes is over the {} MiB read limit",
                MAX_FILE_BYTES >> 20
            ))
        };
        if meta.len() > MAX_FILE_BYTES {
            return Err(too_big(meta.len()));
        }
        let mut bytes = Vec::new();
        // The cap holds even if the file grows after the check.
        file.take(MAX_FILE_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| ToolError::Failed(format!("{path}: {e}")))?;
        if bytes.len() as u64 > MAX_FILE_BYTES {
            return Err(too_big(bytes.len() as u64));
        }
        Ok((bytes, meta, rel))
    }

    /// The directory `path` names, opened, with its path relative to the root.
    pub fn open_dir(&self, path: &str) -> Result<(Dir, PathBuf), ToolError> {
        let rel = self.relative(path)?;
        let dir = self.handle.open_dir(at(&rel)).map_err(|e| error(path, e))?;
        Ok((dir, rel))
    }

    /// What `path` names (a symlink inside the root is followed).
    pub fn metadata(&self, path: &str) -> Result<Metadata, ToolError> {
        let rel = self.relative(path)?;
        self.handle.metadata(at(&rel)).map_err(|e| error(path, e))
    }

    /// The whole content of the text file `path` names ([`Root::read`]).
    pub fn read_to_string(&self, path: &str) -> Result<String, ToolError> {
        let (bytes, _, _) = self.read(path)?;
        String::from_utf8(bytes).map_err(|_| ToolError::Failed(format!("{path}: not UTF-8 text")))
    }

    /// Replace the file `path` names with `bytes` (creating it and missing
    /// directories), through the handle of its directory. The file keeps the
    /// mode of the one it replaces, or gets the usual 0644. No more than
    /// [`MAX_FILE_BYTES`] are written: a file the tools make is one they read.
    pub fn write(&self, path: &str, bytes: &[u8]) -> Result<Written, ToolError> {
        let rel = self.relative(path)?;
        if bytes.len() as u64 > MAX_FILE_BYTES {
            return Err(ToolError::InvalidArgs(format!(
                "{path}: {} bytes is over the {} MiB file limit",
                bytes.len(),
                MAX_FILE_BYTES >> 20
            )));
        }
        let name = rel
            .file_name()
            .ok_or_else(|| ToolError::InvalidArgs(format!("path: `{path}` is a directory")))?;
        let parent_rel = rel.parent().unwrap_or(Path::new(""));
        let failed = |e: std::io::Error| error(path, e);
        let parent = match self.handle.open_dir(at(parent_rel)) {
            Ok(dir) => dir,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                self.handle.create_dir_all(parent_rel).map_err(failed)?;
                self.handle.open_dir(at(parent_rel)).map_err(failed)?
            }
            Err(e) => return Err(failed(e)),
        };
        let mode = match parent.symlink_metadata(name) {
            Ok(meta) if meta.is_symlink() => {
                // Where it leads, through the root: out is an escape.
                parent.metadata(name).map_err(failed)?;
                return Err(ToolError::InvalidArgs(format!(
                    "path: `{path}` is a symbolic link; write to the file it leads to"
                )));
            }
            Ok(meta) if meta.is_dir() => {
                return Err(ToolError::InvalidArgs(format!("path: `{path}` is a directory")));
            }
            Ok(meta) if !meta.is_file() => return Err(not_regular(path, meta.file_type())),
            Ok(meta) => Some(meta.permissions()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(failed(e)),
        };
        let created = mode.is_none();
        let mode = mode
            .unwrap_or_else(|| Permissions::from_std(std::os::unix::fs::PermissionsExt::from_mode(0o644)));
        let mut tmp = cap_tempfile::TempFile::new(&parent).map_err(failed)?;
        tmp.as_file_mut().write_all(bytes).map_err(failed)?;
        tmp.as_file().set_permissions(mode).map_err(failed)?;
        tmp.replace(name).map_err(failed)?;
        Ok(Written { path: rel, created })
    }

    /// A path relative to the root, with `/` separators, for results.
    pub fn display(rel: &Path) -> String {
        let text = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/");
        if text.is_empty() { ".".into() } else { text }
    }
}

/// Why [`open_regular`] opened nothing.
pub(super) enum Unopened {
    Io(std::io::Error),
    /// It is there, but not a regular file.
    Not(FileType),
}

/// `path` in `dir`, opened for reading if it is a regular file, with its
/// metadata. It is looked at first, so a device is not even opened; opened
/// non-blocking, so a named pipe swapped in since then (whose open would
/// wait for a writer) does not hold the thread; and judged again on the open
/// file, which is what is read.
pub(super) fn open_regular(
    dir: &Dir,
    path: &Path,
    follow: FollowSymlinks,
) -> Result<(File, Metadata), Unopened> {
    let seen = match follow {
        FollowSymlinks::Yes => dir.metadata(path),
        FollowSymlinks::No => dir.symlink_metadata(path),
    }
    .map_err(Unopened::Io)?;
    if !seen.is_file() {
        return Err(Unopened::Not(seen.file_type()));
    }
    let mut options = OpenOptions::new();
    options
        .read(true)
        .follow(follow)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32);
    let file = dir.open_with(path, &options).map_err(Unopened::Io)?;
    let meta = file.metadata().map_err(Unopened::Io)?;
    if !meta.is_file() {
        return Err(Unopened::Not(meta.file_type()));
    }
    Ok((file, meta))
}

/// The refusal of `path`, which is a `kind` and not a regular file.
fn not_regular(path: &str, kind: FileType) -> ToolError {
    let kind = if kind.is_dir() {
        "a directory"
    } else if kind.is_symlink() {
        "a symbolic link"
    } else if kind.is_fifo() {
        "a named pipe"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_block_device() || kind.is_char_device() {
        "a device"
    } else {
        "something"
    };
    ToolError::InvalidArgs(format!("path: `{path}` is {kind}, not a regular file"))
}

/// The root itself is `.` to the handle.
pub(super) fn at(rel: &Path) -> &Path {
    if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    }
}

fn outside(path: &str) -> ToolError {
    ToolError::InvalidArgs(format!("path: `{path}` is outside the tool root"))
}

/// An error opening `path` through the root, as the model reads it.
pub(super) fn error(path: &str, e: std::io::Error) -> ToolError {
    if is_escape(&e) {
        return outside(path);
    }
    match e.kind() {
        std::io::ErrorKind::NotFound => ToolError::NotFound(format!("{path}: no such file or directory")),
        _ => ToolError::Failed(format!("{path}: {e}")),
    }
}

/// Whether cap-std refused `e` because resolution would have left the root
/// (it says so only in the message, with kind `PermissionDenied`).
fn is_escape(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::PermissionDenied && e.to_string().contains("outside of the filesystem")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_are_refused_and_inside_paths_resolve() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("a")).unwrap();
        std::fs::write(dir.path().join("a/f.txt"), "x").unwrap();
        let root = Root::new(dir.path()).unwrap();
        assert_eq!(root.read_to_string("a/../a/f.txt").unwrap(), "x");
        assert_eq!(Root::display(&root.relative("./a//f.txt").unwrap()), "a/f.txt");
        assert_eq!(Root::display(&root.relative("").unwrap()), ".");
        for bad in ["..", "a/../../etc", "/etc/passwd", "../nonexistent"] {
            assert!(
                matches!(root.open_file(bad), Err(ToolError::InvalidArgs(_))),
                "{bad} was not refused"
            );
            assert!(
                matches!(root.write(bad, b"x"), Err(ToolError::InvalidArgs(_))),
                "{bad} was not refused for writing"
            );
        }
    }

    #[test]
    fn writes_land_inside_and_links_that_lead_out_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let outside_dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("a")).unwrap();
        std::os::unix::fs::symlink(outside_dir.path(), dir.path().join("out")).unwrap();
        std::os::unix::fs::symlink("a", dir.path().join("in")).unwrap();
        std::os::unix::fs::symlink(outside_dir.path().join("f"), dir.path().join("a/link")).unwrap();
        let root = Root::new(dir.path()).unwrap();
        let wrote = root.write("a/new/deep.txt", b"1").unwrap();
        assert!(wrote.created);
        assert_eq!(std::fs::read(dir.path().join("a/new/deep.txt")).unwrap(), b"1");
        // A relative link that stays inside is followed.
        assert!(root.write("in/x.txt", b"2").unwrap().created);
        assert_eq!(std::fs::read(dir.path().join("a/x.txt")).unwrap(), b"2");
        assert!(!root.write("a/x.txt", b"3").unwrap().created);
        for bad in ["out/x.txt", "out/sub/x.txt", "a/link"] {
            assert!(
                matches!(root.write(bad, b"pwned"), Err(ToolError::InvalidArgs(m)) if m.contains("outside")),
                "{bad} was not refused"
            );
        }
        assert_eq!(std::fs::read_dir(outside_dir.path()).unwrap().count(), 0);
    }
}
