//! Which files below the root changed, for a cache that holds some of them
//! whole and would fetch them again before they are asked for.
//!
//! Only the directories of the files [followed](Changes::follow) are
//! watched (non-recursively), not the whole root: a directory's watch sees
//! a file written in place and one replaced by a rename (`sed -i`, an
//! editor's save), which a watch of the file itself would lose with its
//! inode. Every name written, created, renamed or removed in a watched
//! directory is reported, relative to the root, followed or not: the
//! receiver compares what it holds against the file anyway, so a report
//! never makes it serve anything, it only tells it where to look. Reads
//! (the cache's own) are not changes.
//!
//! It owns the watch, not what is done about a change (`speculation`).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use notify::event::{AccessKind, AccessMode};
use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use tokio::sync::mpsc;

use super::Root;

/// Directories watched at most, so a session that reads files all over a
/// large tree cannot exhaust the system's watches.
const MAX_DIRS: usize = 256;

/// A watch on the directories of the files followed.
pub struct Changes {
    root: PathBuf,
    watcher: Mutex<RecommendedWatcher>,
    dirs: Mutex<HashSet<PathBuf>>,
}

impl Changes {
    /// Change notices held for the receiver at most. A tree written faster
    /// than the cache looks (a build, a log) loses the notices past this: a
    /// lost notice only means a file is not read again ahead of time, since
    /// nothing is served without its freshness check.
    pub const MAX_PENDING: usize = 1024;

    /// A watch below `root` and the stream of the files changed in it
    /// (root-relative, `/`-separated), which ends when the watch is dropped.
    pub fn new(root: &Root) -> notify::Result<(Self, mpsc::Receiver<String>)> {
        let (tx, rx) = mpsc::channel(Self::MAX_PENDING);
        let base = root.dir().to_owned();
        let watcher = notify::recommended_watcher({
            let base = base.clone();
            move |event: notify::Result<Event>| match event {
                Ok(event) if is_change(&event) => {
                    for path in &event.paths {
                        if let Ok(rel) = path.strip_prefix(&base) {
                            let _ = tx.try_send(Root::display(rel));
                        }
                    }
                }
                Ok(_) => {}
                Err(e) => tracing::debug!("watching the files read: {e}"),
            }
        })?;
        let changes = Self {
            root: base,
            watcher: Mutex::new(watcher),
            dirs: Mutex::new(HashSet::new()),
        };
        Ok((changes, rx))
    }

    /// Report the changes of `rel` (a root-relative file) from now on.
    pub fn follow(&self, rel: &str) {
        let dir = Path::new(rel).parent().unwrap_or(Path::new("")).to_owned();
        let mut dirs = self.dirs.lock().unwrap_or_else(|p| p.into_inner());
        if dirs.contains(&dir) || dirs.len() >= MAX_DIRS {
            return;
        }
        let mut watcher = self.watcher.lock().unwrap_or_else(|p| p.into_inner());
        match watcher.watch(&self.root.join(&dir), RecursiveMode::NonRecursive) {
            Ok(()) => {
                dirs.insert(dir);
            }
            Err(e) => tracing::debug!("cannot watch {}: {e}", dir.display()),
        }
    }
}

/// A file written, created, renamed or removed; not one only read.
fn is_change(event: &Event) -> bool {
    match event.kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) => false,
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    async fn next(rx: &mut mpsc::Receiver<String>) -> String {
        // Bounded so a lost event fails the test instead of hanging it.
        tokio::time::timeout(Duration::from_secs(30), rx.recv())
            .await
            .expect("a change is reported")
            .expect("the watch is alive")
    }

    #[tokio::test]
    async fn writes_and_replacements_in_a_followed_directory_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        for sub in ["src", "lib"] {
            std::fs::create_dir(dir.path().join(sub)).unwrap();
        }
        std::fs::write(dir.path().join("src/a.py"), "a").unwrap();
        std::fs::write(dir.path().join("lib/b.py"), "b").unwrap();
        std::fs::write(dir.path().join("top.py"), "t").unwrap();
        let root = Root::new(dir.path()).unwrap();
        let (changes, mut rx) = Changes::new(&root).unwrap();
        changes.follow("src/a.py");
        changes.follow("lib/b.py");
        // Not followed: its directory is not watched, so the next report is
        // src's.
        std::fs::write(dir.path().join("top.py"), "t2").unwrap();
        std::fs::write(dir.path().join("src/a.py"), "in place").unwrap();
        assert_eq!(next(&mut rx).await, "src/a.py");
        // Replaced by a rename, as `sed -i` does.
        std::fs::write(dir.path().join("lib/.b.tmp"), "renamed").unwrap();
        std::fs::rename(dir.path().join("lib/.b.tmp"), dir.path().join("lib/b.py")).unwrap();
        let mut seen = Vec::new();
        while !seen.contains(&"lib/b.py".to_owned()) {
            seen.push(next(&mut rx).await);
        }
        assert!(!seen.contains(&"top.py".to_owned()), "{seen:?}");
        drop(changes);
        let end = tokio::time::timeout(Duration::from_secs(30), async {
            while rx.recv().await.is_some() {}
        });
        assert!(end.await.is_ok(), "the stream ends with the watch");
    }
}
