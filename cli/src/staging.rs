//! The staging directory of a pull: `.toolhost-staging-*` inside the plugin
//! directory, where `install` writes and surveys what it pulled before any
//! of it becomes a plugin, and which goes when the pull ends, however it
//! ends, but for a process killed outright.
//!
//! Those are swept by the next `add` or `update` (but `update --check`,
//! which changes nothing). A pull may wait on the user's approval for as
//! long as the user takes, so a directory's age says nothing of whether
//! its pull is alive; instead each pull holds an exclusive lock on a file
//! in its directory (`flock`, which the kernel lets go when the process
//! dies, even by SIGKILL), and a directory whose lock can be taken is an
//! orphan. Only one older than [`GRACE`] is removed: a directory is
//! created an instant before its lock is taken.
//!
//! The loader never reads a staging directory (it loads the plugin
//! directory's own `*.wasm` files) and `serve --watch` does not watch
//! inside it. Not here: what is staged, which is `install`'s.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result};

const PREFIX: &str = ".toolhost-staging-";
/// The file a live pull holds locked.
const HELD: &str = ".held";
/// Older than this, a staging directory nobody holds is an orphan.
const GRACE: Duration = Duration::from_secs(60);

/// A staging directory, held for as long as this lives, removed when
/// dropped.
pub struct Staging {
    dir: tempfile::TempDir,
    /// Locked: dropped after `dir` (fields drop in order), so the
    /// directory is gone before the lock is let go.
    _held: File,
}

impl Staging {
    pub fn new(plugin_dir: &Path) -> Result<Self> {
        let cannot = || format!("cannot stage in {}", plugin_dir.display());
        let dir = tempfile::Builder::new()
            .prefix(PREFIX)
            .tempdir_in(plugin_dir)
            .with_context(cannot)?;
        let held = File::create(dir.path().join(HELD)).with_context(cannot)?;
        held.try_lock()
            .map_err(std::io::Error::from)
            .with_context(cannot)?;
        Ok(Self { dir, _held: held })
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// Remove the staging directories in `plugin_dir` of pulls that died:
/// those removed.
pub fn sweep(plugin_dir: &Path) -> Result<Vec<PathBuf>> {
    let entries = match std::fs::read_dir(plugin_dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", plugin_dir.display())),
    };
    let mut removed = Vec::new();
    for entry in entries {
        let entry = entry.with_context(|| format!("cannot read {}", plugin_dir.display()))?;
        // Not a link to a directory elsewhere: only staging's own.
        let is_staging = entry.file_name().to_string_lossy().starts_with(PREFIX)
            && entry.file_type().is_ok_and(|t| t.is_dir());
        if !is_staging || !orphaned(&entry.path()) {
            continue;
        }
        let path = entry.path();
        std::fs::remove_dir_all(&path).with_context(|| format!("cannot remove {}", path.display()))?;
        removed.push(path);
    }
    Ok(removed)
}

/// Whether no live pull holds `dir`, and it is past its grace.
fn orphaned(dir: &Path) -> bool {
    let old = std::fs::metadata(dir)
        .and_then(|m| m.modified())
        .is_ok_and(|modified| {
            SystemTime::now()
                .duration_since(modified)
                .is_ok_and(|age| age > GRACE)
        });
    if !old {
        return false;
    }
    match File::open(dir.join(HELD)) {
        // A pull locks only the directory it creates: the lock taken here
        // and let go is no live pull's.
        Ok(held) => held.try_lock().is_ok(),
        Err(e) => e.kind() == std::io::ErrorKind::NotFound,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn backdate(dir: &Path) {
        File::open(dir)
            .unwrap()
            .set_modified(SystemTime::now() - 2 * GRACE)
            .unwrap();
    }

    #[test]
    fn only_an_old_staging_nobody_holds_is_swept() {
        let plugins = tempfile::tempdir().unwrap();
        let live = Staging::new(plugins.path()).unwrap();
        // As a pull killed between creating its directory and locking it,
        // or after: no lock held, young or old.
        let dead = plugins.path().join(format!("{PREFIX}dead"));
        std::fs::create_dir(&dead).unwrap();
        File::create(dead.join(HELD)).unwrap();
        // Not a staging directory: never touched, however old.
        let other = plugins.path().join("vendor-files");
        std::fs::create_dir(&other).unwrap();

        assert!(sweep(plugins.path()).unwrap().is_empty());
        for dir in [live.path(), &dead, &other] {
            backdate(dir);
        }
        assert_eq!(sweep(plugins.path()).unwrap(), vec![dead.clone()]);
        assert!(live.path().is_dir() && other.is_dir() && !dead.exists());

        let held = live.path().to_owned();
        drop(live);
        assert!(!held.exists());
    }
}
