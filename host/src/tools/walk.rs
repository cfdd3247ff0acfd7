//! Walking the tree below a directory of the root for `glob` and `grep`,
//! through directory handles only: each directory is opened from its
//! parent's handle without following a symlink, and each file is handed
//! over as (its directory's handle, its name), so a directory swapped for a
//! symlink while the walk runs is skipped, never entered.
//!
//! As ripgrep does, hidden entries are skipped, symlinks are not followed,
//! and `.gitignore` and `.ignore` files are honoured (those of the
//! directories from the root down to the start too, read through the root;
//! none outside the root). Entries are visited sorted by name, so results
//! and where a cap cuts them are reproducible. The `ignore` crate matches
//! the patterns; it does not walk, since it opens paths by name.
//!
//! A walk is bounded whatever the tree: it keeps its directories on a stack
//! of its own (never the thread's), goes at most [`MAX_WALK_DEPTH`] levels
//! down, holds at most [`MAX_NAMES_HELD`] names over the directories it has
//! open, and stops at a deadline; it says which of these cut it ([`Cuts`]).

use std::ffi::OsStr;
use std::io::Read;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::time::Instant;

use cap_fs_ext::{DirExt, FollowSymlinks};
use cap_std::fs::Dir;
use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

use super::root::{at, open_regular};
use crate::bounds::native::{FILE_WORK_BUDGET, MAX_IGNORE_FILE_BYTES, MAX_NAMES_HELD, MAX_WALK_DEPTH};

/// Files whose patterns say what a walk skips.
const IGNORE_FILES: [&str; 2] = [".gitignore", ".ignore"];

/// What kept a walk from seeing the whole tree.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Cuts {
    /// Directories deeper than [`MAX_WALK_DEPTH`] were not entered.
    pub depth: bool,
    /// Some directory was read in part, at [`MAX_NAMES_HELD`].
    pub names: bool,
    /// The deadline came first.
    pub time: bool,
}

impl Cuts {
    pub fn any(&self) -> bool {
        self.depth || self.names || self.time
    }

    /// What was cut, for the model, one bracketed line each.
    pub fn notes(&self) -> String {
        let mut notes = String::new();
        if self.depth {
            notes.push_str(&format!(
                "\n[directories more than {MAX_WALK_DEPTH} levels down were not searched]"
            ));
        }
        if self.names {
            notes.push_str(&format!(
                "\n[a directory too large to hold was searched in part ({MAX_NAMES_HELD} names at most)]"
            ));
        }
        if self.time {
            notes.push_str(&format!(
                "\n[stopped after {} s; search a narrower path]",
                FILE_WORK_BUDGET.as_secs()
            ));
        }
        notes
    }
}

/// One directory the walk is in.
struct Level {
    dir: Dir,
    /// Its path relative to the root.
    rel: PathBuf,
    /// Its entries not yet visited, in reverse order (to pop).
    entries: Vec<Entry>,
    /// How many names it counts for in the walk's [`MAX_NAMES_HELD`].
    held: usize,
    /// Whether it added ignore patterns.
    ignores: bool,
}

/// A name in a directory and whether it is a directory or a regular file.
type Entry = (std::ffi::OsString, bool, bool);

/// Visit every regular file below `start` (relative to the root, whose
/// handle is `root`) until `deadline`: `visit(dir, name, path)` gets the
/// file's directory, its name there and its path relative to the root, and
/// stops the walk by breaking. `start` itself must be a directory (opened by
/// the caller, as `start_dir`). Returns what cut the walk short.
pub fn files(
    root: &Dir,
    start_dir: Dir,
    start: &Path,
    deadline: Instant,
    visit: &mut impl FnMut(&Dir, &OsStr, &Path) -> ControlFlow<()>,
) -> Cuts {
    let mut ignores = Vec::new();
    let mut above = PathBuf::new();
    for part in start.components() {
        if let Ok(dir) = root.open_dir_nofollow(at(&above)) {
            ignores.extend(load(&dir, &above));
        }
        above.push(part);
    }
    let mut cuts = Cuts::default();
    let mut held = 0;
    let mut stack = vec![enter(
        start_dir,
        start.to_owned(),
        &mut ignores,
        &mut held,
        &mut cuts,
    )];
    loop {
        let depth = stack.len();
        let Some(level) = stack.last_mut() else {
            break;
        };
        let Some((name, is_dir, is_file)) = level.entries.pop() else {
            let done = stack.pop().expect("the level just looked at");
            held -= done.held;
            if done.ignores {
                ignores.pop();
            }
            continue;
        };
        if Instant::now() >= deadline {
            cuts.time = true;
            break;
        }
        if name.as_encoded_bytes().starts_with(b".") {
            continue;
        }
        let path = level.rel.join(&name);
        if ignored(&ignores, &path, is_dir) {
            continue;
        }
        if is_dir {
            if depth > MAX_WALK_DEPTH {
                cuts.depth = true;
                continue;
            }
            // Not following a symlink: one swapped in since the listing fails here.
            if let Ok(sub) = level.dir.open_dir_nofollow(&name) {
                let next = enter(sub, path, &mut ignores, &mut held, &mut cuts);
                stack.push(next);
            }
        } else if is_file && visit(&level.dir, &name, &path).is_break() {
            break;
        }
    }
    cuts
}

/// `dir` (at `rel`) entered: its ignore patterns added, and as many of its
/// entries read as the names already held leave room for, sorted.
fn enter(dir: Dir, rel: PathBuf, ignores: &mut Vec<Gitignore>, held: &mut usize, cuts: &mut Cuts) -> Level {
    let own = load(&dir, &rel);
    let pushed = own.is_some();
    ignores.extend(own);
    let room = MAX_NAMES_HELD.saturating_sub(*held);
    let mut entries: Vec<Entry> = match dir.entries() {
        Ok(entries) => entries
            .flatten()
            .filter_map(|e| {
                let kind = e.file_type().ok()?;
                Some((e.file_name(), kind.is_dir(), kind.is_file()))
            })
            .take(room + 1)
            .collect(),
        Err(_) => Vec::new(),
    };
    if entries.len() > room {
        entries.truncate(room);
        cuts.names = true;
    }
    // Reversed, so popping visits them in order.
    entries.sort_by(|a, b| b.cmp(a));
    *held += entries.len();
    Level {
        held: entries.len(),
        dir,
        rel,
        entries,
        ignores: pushed,
    }
}

/// The patterns of `dir`'s ignore files, read through its handle: regular
/// files only, and none over [`MAX_IGNORE_FILE_BYTES`].
fn load(dir: &Dir, rel: &Path) -> Option<Gitignore> {
    let mut builder = GitignoreBuilder::new(virtual_path(rel));
    let mut any = false;
    for file in IGNORE_FILES {
        let Ok((file, _)) = open_regular(dir, Path::new(file), FollowSymlinks::Yes) else {
            continue;
        };
        let mut text = String::new();
        let read = file.take(MAX_IGNORE_FILE_BYTES + 1).read_to_string(&mut text);
        if read.is_err() || text.len() as u64 > MAX_IGNORE_FILE_BYTES {
            continue;
        }
        for line in text.lines() {
            any |= builder.add_line(None, line).is_ok();
        }
    }
    any.then(|| builder.build().ok()).flatten()
}

/// Whether the deepest ignore file with an opinion on `path` ignores it.
fn ignored(ignores: &[Gitignore], path: &Path, is_dir: bool) -> bool {
    let path = virtual_path(path);
    for gitignore in ignores.iter().rev() {
        match gitignore.matched(&path, is_dir) {
            Match::Ignore(_) => return true,
            Match::Whitelist(_) => return false,
            Match::None => {}
        }
    }
    false
}

/// Paths are matched as if the root were `/`: the matchers only compare
/// them, never touch the disk.
fn virtual_path(rel: &Path) -> PathBuf {
    Path::new("/").join(rel)
}
