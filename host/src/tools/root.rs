//! The directory the native file tools are confined to.
//!
//! Every path a model gives is resolved against the root and then
//! canonicalised, so `..`, absolute paths and symlinks are judged by where
//! they really lead: anything that does not end up inside the root is
//! refused; a write to a path that does not exist yet is judged by its
//! deepest existing ancestor. Walks (glob, grep, ls) never follow symlinks, and grep reads only
//! regular files, so a link inside the root cannot expose a file outside it.

use std::path::{Component, Path, PathBuf};

use super::ToolError;

/// A canonical directory the native tools may read below.
#[derive(Debug, Clone)]
pub struct Root {
    dir: PathBuf,
}

impl Root {
    /// `dir`, canonicalised; it must exist and be a directory.
    pub fn new(dir: &Path) -> std::io::Result<Self> {
        let dir = dir.canonicalize()?;
        if !dir.is_dir() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotADirectory,
                format!("{} is not a directory", dir.display()),
            ));
        }
        Ok(Self { dir })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The real path `path` names, if it exists inside the root.
    pub fn resolve(&self, path: &str) -> Result<PathBuf, ToolError> {
        let joined = self.join(path)?;
        let real = joined.canonicalize().map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => ToolError::NotFound(format!("{path}: no such file or directory")),
            _ => ToolError::Failed(format!("{path}: {e}")),
        })?;
        if real.starts_with(&self.dir) {
            Ok(real)
        } else {
            Err(outside(path))
        }
    }

    /// Where a write to `path` lands: its real location if it exists, else
    /// below its deepest existing ancestor, which must really be inside the
    /// root (a symlinked directory is judged by where it leads).
    pub fn resolve_for_write(&self, path: &str) -> Result<PathBuf, ToolError> {
        let joined = self.join(path)?;
        let mut existing = joined.as_path();
        while existing.symlink_metadata().is_err() {
            existing = existing.parent().ok_or_else(|| outside(path))?;
        }
        let real = existing
            .canonicalize()
            .map_err(|e| ToolError::Failed(format!("{path}: {e}")))?;
        if !real.starts_with(&self.dir) {
            return Err(outside(path));
        }
        match joined.strip_prefix(existing) {
            Ok(rest) if !rest.as_os_str().is_empty() => Ok(real.join(rest)),
            // Joining "" would add a trailing separator.
            _ => Ok(real),
        }
    }

    /// `path` joined to the root with `.` and `..` applied, refused if that
    /// leaves the root, before touching the disk (so a missing path outside
    /// the root is reported as outside, not as missing).
    fn join(&self, path: &str) -> Result<PathBuf, ToolError> {
        let given = Path::new(path);
        let joined = if given.is_absolute() {
            given.to_path_buf()
        } else {
            self.dir.join(given)
        };
        lexically_inside(&self.dir, &joined).ok_or_else(|| outside(path))
    }

    /// `path` relative to the root, with `/` separators, for results.
    pub fn display(&self, path: &Path) -> String {
        let rel = path.strip_prefix(&self.dir).unwrap_or(path);
        let text = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/");
        if text.is_empty() { ".".into() } else { text }
    }
}

fn outside(path: &str) -> ToolError {
    ToolError::InvalidArgs(format!("path: `{path}` is outside the tool root"))
}

/// `path` with `.` and `..` applied textually, if that stays below `root`.
fn lexically_inside(root: &Path, path: &Path) -> Option<PathBuf> {
    let mut parts: Vec<Component> = Vec::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                parts.pop()?;
            }
            other => parts.push(other),
        }
    }
    let normal: PathBuf = parts.iter().collect();
    normal.starts_with(root).then_some(normal)
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
        assert!(root.resolve("a/../a/f.txt").is_ok());
        assert_eq!(root.display(&root.resolve("a/f.txt").unwrap()), "a/f.txt");
        for bad in ["..", "a/../../etc", "/etc/passwd", "../nonexistent"] {
            assert!(
                matches!(root.resolve(bad), Err(ToolError::InvalidArgs(_))),
                "{bad} was not refused"
            );
            assert!(
                matches!(root.resolve_for_write(bad), Err(ToolError::InvalidArgs(_))),
                "{bad} was not refused for writing"
            );
        }
    }

    #[test]
    fn writes_land_inside_and_symlinked_dirs_are_judged_by_their_target() {
        let dir = tempfile::tempdir().unwrap();
        let outside_dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("a")).unwrap();
        std::os::unix::fs::symlink(outside_dir.path(), dir.path().join("out")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("a"), dir.path().join("in")).unwrap();
        let root = Root::new(dir.path()).unwrap();
        assert_eq!(
            root.resolve_for_write("a/new/deep.txt").unwrap(),
            root.dir().join("a/new/deep.txt")
        );
        assert_eq!(
            root.resolve_for_write("in/x.txt").unwrap(),
            root.dir().join("a/x.txt")
        );
        std::fs::write(dir.path().join("a/f.txt"), "x").unwrap();
        assert_eq!(
            root.resolve_for_write("in/f.txt").unwrap(),
            root.dir().join("a/f.txt")
        );
        for bad in ["out/x.txt", "out/sub/x.txt"] {
            assert!(
                matches!(root.resolve_for_write(bad), Err(ToolError::InvalidArgs(_))),
                "{bad} was not refused"
            );
        }
    }
}
