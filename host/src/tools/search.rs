//! `glob` and `grep`, on the ripgrep crates: walks (`walk`) honour
//! `.gitignore` and skip hidden files (as ripgrep does), never follow
//! symlinks, open every file through the root's directory handles, and stop
//! at a cap so one call cannot flood the model. `glob`'s `pattern` and
//! grep's `glob` are one kind of pattern: matched against each file's path
//! relative to the call's `path` (a file's own name when `path` is a file).

use std::ffi::OsStr;
use std::ops::ControlFlow;
use std::path::Path;

use cap_fs_ext::{FollowSymlinks, OpenOptionsFollowExt};
use cap_std::fs::{Dir, File, OpenOptions};
use globset::{Glob, GlobMatcher};
use grep_regex::RegexMatcherBuilder;
use grep_searcher::sinks::UTF8;
use grep_searcher::{BinaryDetection, SearcherBuilder};
use serde_json::{Map, Value, json};

use super::{CallOutput, Root, ToolError, opt_str, opt_usize, result, str_arg, walk};

const MAX_PATHS: usize = 1000;
const DEFAULT_MATCHES: usize = 200;
/// Longest matching line returned whole; longer ones are cut.
const MAX_LINE_CHARS: usize = 500;

fn matcher(field: &str, pattern: &str) -> Result<GlobMatcher, ToolError> {
    Glob::new(pattern)
        .map(|g| g.compile_matcher())
        .map_err(|e| ToolError::InvalidArgs(format!("{field}: {e}")))
}

/// Visit the regular files `given` names (a directory's, below it, or
/// the one file) as (an open file, its path relative to the root, its path
/// relative to `given`'s directory), until `visit` breaks. Globs match the
/// last, so `glob` and grep's `glob` read a pattern alike.
fn each_file(
    root: &Root,
    given: &str,
    mut visit: impl FnMut(File, &Path, &Path) -> ControlFlow<()>,
) -> Result<(), ToolError> {
    if !root.metadata(given)?.is_dir() {
        let (file, rel) = root.open_file(given)?;
        let name = rel.file_name().map_or(rel.as_path(), Path::new);
        let _ = visit(file, &rel, name);
        return Ok(());
    }
    let (start, rel) = root.open_dir(given)?;
    walk::files(
        root.handle(),
        &start,
        &rel,
        &mut |dir: &Dir, name: &OsStr, path: &Path| match open_nofollow(dir, name) {
            Some(file) => visit(file, path, path.strip_prefix(&rel).unwrap_or(path)),
            None => ControlFlow::Continue(()),
        },
    );
    Ok(())
}

/// `name` in `dir` opened for reading if it is still a regular file (not a
/// symlink swapped in since the listing).
fn open_nofollow(dir: &Dir, name: &OsStr) -> Option<File> {
    let mut options = OpenOptions::new();
    options.read(true).follow(FollowSymlinks::No);
    let file = dir.open_with(name, &options).ok()?;
    file.metadata().ok()?.is_file().then_some(file)
}

pub fn glob(root: &Root, args: &Map<String, Value>) -> Result<CallOutput, ToolError> {
    let pattern = matcher("pattern", str_arg(args, "pattern")?)?;
    let given = opt_str(args, "path").unwrap_or("");
    let (start, rel) = root.open_dir(given)?;
    let mut paths = Vec::new();
    let mut truncated = false;
    walk::files(
        root.handle(),
        &start,
        &rel,
        &mut |_: &Dir, _: &OsStr, path: &Path| {
            let relative = path.strip_prefix(&rel).unwrap_or(path);
            if pattern.is_match(relative) {
                if paths.len() == MAX_PATHS {
                    truncated = true;
                    return ControlFlow::Break(());
                }
                paths.push(Root::display(path));
            }
            ControlFlow::Continue(())
        },
    );
    let mut text = if paths.is_empty() {
        "no files match".to_owned()
    } else {
        paths.join("\n")
    };
    if truncated {
        text.push_str(&format!("\n[stopped at {MAX_PATHS} paths]"));
    }
    Ok(result(text, json!({"paths": paths, "truncated": truncated})))
}

pub fn grep(root: &Root, args: &Map<String, Value>) -> Result<CallOutput, ToolError> {
    let pattern = str_arg(args, "pattern")?;
    let regex = RegexMatcherBuilder::new()
        .case_insensitive(args.get("ignore_case").and_then(Value::as_bool) == Some(true))
        .build(pattern)
        .map_err(|e| ToolError::InvalidArgs(format!("pattern: {e}")))?;
    let only = opt_str(args, "glob").map(|g| matcher("glob", g)).transpose()?;
    let limit = opt_usize(args, "limit").unwrap_or(DEFAULT_MATCHES).max(1);
    let mut searcher = SearcherBuilder::new()
        .line_number(true)
        .binary_detection(BinaryDetection::quit(0))
        .build();
    let mut matches: Vec<Value> = Vec::new();
    let mut text = String::new();
    let mut truncated = false;
    each_file(root, opt_str(args, "path").unwrap_or(""), |file, path, below| {
        if only.as_ref().is_some_and(|g| !g.is_match(below)) {
            return ControlFlow::Continue(());
        }
        let shown = Root::display(path);
        let mut found = Vec::new();
        let sink = UTF8(|line, content: &str| {
            found.push((line, content.trim_end_matches(['\n', '\r']).to_owned()));
            Ok(found.len() < limit)
        });
        // Unreadable or non-UTF-8 files are skipped, as ripgrep does.
        if searcher.search_file(&regex, &file.into_std(), sink).is_err() {
            return ControlFlow::Continue(());
        }
        for (line, content) in found {
            if matches.len() == limit {
                truncated = true;
                return ControlFlow::Break(());
            }
            let content: String = content.chars().take(MAX_LINE_CHARS).collect();
            text.push_str(&format!("{shown}:{line}:{content}\n"));
            matches.push(json!({"path": shown, "line": line, "text": content}));
        }
        ControlFlow::Continue(())
    })?;
    if matches.is_empty() {
        text.push_str("no matches");
    }
    if truncated {
        text.push_str(&format!("[stopped at {limit} matches]"));
    }
    Ok(result(
        text.trim_end().to_owned(),
        json!({"matches": matches, "truncated": truncated}),
    ))
}
