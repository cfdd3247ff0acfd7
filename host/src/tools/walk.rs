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

use std::ffi::{OsStr, OsString};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use cap_fs_ext::DirExt;
use cap_std::fs::Dir;
use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

use super::root::at;

/// Files whose patterns say what a walk skips.
const IGNORE_FILES: [&str; 2] = [".gitignore", ".ignore"];

/// Visit every regular file below `start` (relative to the root, whose
/// handle is `root`): `visit(dir, name, path)` gets the file's directory,
/// its name there and its path relative to the root, and stops the walk by
/// breaking. `start` itself must be a directory (opened by the caller).
pub fn files(
    root: &Dir,
    start_dir: &Dir,
    start: &Path,
    visit: &mut impl FnMut(&Dir, &OsStr, &Path) -> ControlFlow<()>,
) {
    let mut ignores = Vec::new();
    let mut above = PathBuf::new();
    for part in start.components() {
        if let Ok(dir) = root.open_dir_nofollow(at(&above)) {
            ignores.extend(load(&dir, &above));
        }
        above.push(part);
    }
    let _ = walk(start_dir, start, &mut ignores, visit);
}

fn walk(
    dir: &Dir,
    rel: &Path,
    ignores: &mut Vec<Gitignore>,
    visit: &mut impl FnMut(&Dir, &OsStr, &Path) -> ControlFlow<()>,
) -> ControlFlow<()> {
    let own = load(dir, rel);
    let pushed = own.is_some();
    ignores.extend(own);
    let mut entries: Vec<(OsString, bool, bool)> = match dir.entries() {
        Ok(entries) => entries
            .flatten()
            .filter_map(|e| {
                let kind = e.file_type().ok()?;
                Some((e.file_name(), kind.is_dir(), kind.is_file()))
            })
            .collect(),
        Err(_) => Vec::new(),
    };
    entries.sort();
    let mut flow = ControlFlow::Continue(());
    for (name, is_dir, is_file) in entries {
        if name.as_encoded_bytes().starts_with(b".") {
            continue;
        }
        let path = rel.join(&name);
        if ignored(ignores, &path, is_dir) {
            continue;
        }
        flow = if is_dir {
            // Not following a symlink: one swapped in since the listing fails here.
            match dir.open_dir_nofollow(&name) {
                Ok(sub) => walk(&sub, &path, ignores, visit),
                Err(_) => ControlFlow::Continue(()),
            }
        } else if is_file {
            visit(dir, name.as_os_str(), &path)
        } else {
            ControlFlow::Continue(())
        };
        if flow.is_break() {
            break;
        }
    }
    if pushed {
        ignores.pop();
    }
    flow
}

/// The patterns of `dir`'s ignore files, read through its handle.
fn load(dir: &Dir, rel: &Path) -> Option<Gitignore> {
    let mut builder = GitignoreBuilder::new(virtual_path(rel));
    let mut any = false;
    for file in IGNORE_FILES {
        let Ok(text) = dir.read_to_string(file) else {
            continue;
        };
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
