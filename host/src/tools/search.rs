//! `glob` and `grep`, on the ripgrep crates: walks (`walk`) honour
//! `.gitignore` and skip hidden files (as ripgrep does), never follow
//! symlinks, open every file through the root's directory handles, and stop
//! at a cap so one call cannot flood the model. `glob`'s `pattern` and
//! grep's `glob` are one kind of pattern: matched against each file's path
//! relative to the call's `path` (a file's own name when `path` is a file).
//!
//! grep streams each file through a buffer of at most
//! [`MAX_GREP_LINE_BYTES`]: a file with a longer line is searched up to it
//! and named as skipped past it, so no file, however large, is held whole.

use std::ffi::OsStr;
use std::ops::ControlFlow;
use std::path::Path;
use std::time::Instant;

use cap_fs_ext::FollowSymlinks;
use cap_std::fs::{Dir, File};
use globset::{Glob, GlobMatcher};
use grep_regex::RegexMatcherBuilder;
use grep_searcher::sinks::Bytes;
use grep_searcher::{BinaryDetection, SearcherBuilder};
use serde_json::{Map, Value, json};

use super::root::open_regular;
use super::walk::{self, Cuts};
use super::{CallOutput, Root, ToolError, opt_str, opt_usize, result, str_arg};
use crate::bounds::native::{
    MAX_GREP_LINE_BYTES, MAX_GREP_MATCHES, MAX_GREP_SKIPPED, MAX_LISTED, MAX_MATCH_CHARS,
};

const DEFAULT_MATCHES: usize = 200;

fn matcher(field: &str, pattern: &str) -> Result<GlobMatcher, ToolError> {
    Glob::new(pattern)
        .map(|g| g.compile_matcher())
        .map_err(|e| ToolError::InvalidArgs(format!("{field}: {e}")))
}

/// Visit the regular files `given` names (a directory's, below it, or
/// the one file) as (an open file, its path relative to the root, its path
/// relative to `given`'s directory), until `visit` breaks or `deadline`.
/// Globs match the last, so `glob` and grep's `glob` read a pattern alike.
/// Returns what cut the walk short.
fn each_file(
    root: &Root,
    given: &str,
    deadline: Instant,
    mut visit: impl FnMut(File, &Path, &Path) -> ControlFlow<()>,
) -> Result<Cuts, ToolError> {
    if !root.metadata(given)?.is_dir() {
        let (file, _, rel) = root.open_file(given)?;
        let name = rel.file_name().map_or(rel.as_path(), Path::new);
        let _ = visit(file, &rel, name);
        return Ok(Cuts::default());
    }
    let (start, rel) = root.open_dir(given)?;
    Ok(walk::files(
        root.handle(),
        start,
        &rel,
        deadline,
        &mut |dir: &Dir, name: &OsStr, path: &Path| {
            // Still a regular file, not a symlink or a pipe swapped in since the listing.
            match open_regular(dir, Path::new(name), FollowSymlinks::No) {
                Ok((file, _)) => visit(file, path, path.strip_prefix(&rel).unwrap_or(path)),
                Err(_) => ControlFlow::Continue(()),
            }
        },
    ))
}

pub fn glob(root: &Root, args: &Map<String, Value>, deadline: Instant) -> Result<CallOutput, ToolError> {
    let pattern = matcher("pattern", str_arg(args, "pattern")?)?;
    let given = opt_str(args, "path").unwrap_or("");
    let (start, rel) = root.open_dir(given)?;
    let mut paths = Vec::new();
    let mut full = false;
    let cuts = walk::files(
        root.handle(),
        start,
        &rel,
        deadline,
        &mut |_: &Dir, _: &OsStr, path: &Path| {
            let relative = path.strip_prefix(&rel).unwrap_or(path);
            if pattern.is_match(relative) {
                if paths.len() == MAX_LISTED {
                    full = true;
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
    if full {
        text.push_str(&format!("\n[stopped at {MAX_LISTED} paths]"));
    }
    text.push_str(&cuts.notes());
    let truncated = full || cuts.any();
    Ok(result(text, json!({"paths": paths, "truncated": truncated})))
}

pub fn grep(root: &Root, args: &Map<String, Value>, deadline: Instant) -> Result<CallOutput, ToolError> {
    let pattern = str_arg(args, "pattern")?;
    let regex = RegexMatcherBuilder::new()
        .case_insensitive(args.get("ignore_case").and_then(Value::as_bool) == Some(true))
        .build(pattern)
        .map_err(|e| ToolError::InvalidArgs(format!("pattern: {e}")))?;
    let only = opt_str(args, "glob").map(|g| matcher("glob", g)).transpose()?;
    let limit = opt_usize(args, "limit")
        .unwrap_or(DEFAULT_MATCHES)
        .clamp(1, MAX_GREP_MATCHES);
    let mut searcher = SearcherBuilder::new()
        .line_number(true)
        .binary_detection(BinaryDetection::quit(0))
        .heap_limit(Some(MAX_GREP_LINE_BYTES))
        .build();
    let mut matches: Vec<Value> = Vec::new();
    let mut skipped: Vec<Value> = Vec::new();
    let mut text = String::new();
    let mut notes = String::new();
    let mut full = false;
    let cuts = each_file(
        root,
        opt_str(args, "path").unwrap_or(""),
        deadline,
        |file, path, below| {
            if only.as_ref().is_some_and(|g| !g.is_match(below)) {
                return ControlFlow::Continue(());
            }
            let shown = Root::display(path);
            // One match past what is left tells that the answer is cut.
            let room = limit - matches.len() + 1;
            let mut found = Vec::new();
            let sink = Bytes(|line, bytes: &[u8]| {
                found.push((line, excerpt(bytes)));
                Ok(found.len() < room)
            });
            // The matches before a line too long to hold are kept.
            let outcome = searcher.search_file(&regex, &file.into_std(), sink);
            for (line, content) in found {
                if matches.len() == limit {
                    full = true;
                    return ControlFlow::Break(());
                }
                text.push_str(&format!("{shown}:{line}:{content}\n"));
                matches.push(json!({"path": shown, "line": line, "text": content}));
            }
            if let Err(e) = outcome
                && skipped.len() < MAX_GREP_SKIPPED
            {
                let reason = unsearched(&e);
                notes.push_str(&format!("\n[{shown}: {reason}]"));
                skipped.push(json!({"path": shown, "reason": reason}));
            }
            ControlFlow::Continue(())
        },
    )?;
    if matches.is_empty() {
        text.push_str("no matches");
    }
    let mut text = text.trim_end().to_owned();
    if full {
        text.push_str(&format!("\n[stopped at {limit} matches]"));
    }
    text.push_str(&notes);
    text.push_str(&cuts.notes());
    Ok(result(
        text,
        json!({"matches": matches, "truncated": full || cuts.any(), "skipped": skipped}),
    ))
}

/// A matching line as answered: at most [`MAX_MATCH_CHARS`] characters,
/// without its line ending; bytes that are not UTF-8 are replaced.
fn excerpt(line: &[u8]) -> String {
    let head = &line[..line.len().min(MAX_MATCH_CHARS * 4)];
    String::from_utf8_lossy(head)
        .trim_end_matches(['\n', '\r'])
        .chars()
        .take(MAX_MATCH_CHARS)
        .collect()
}

/// Why a file was not searched to its end, for the model: the searcher's
/// buffer cap is met by a line longer than [`MAX_GREP_LINE_BYTES`] (the
/// crate says so only in the message); any other error is a failed read.
fn unsearched(e: &std::io::Error) -> String {
    if e.to_string().starts_with("configured allocation limit") {
        format!("not searched past a line over {} MiB", MAX_GREP_LINE_BYTES >> 20)
    } else {
        format!("not searched to its end: {e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The searcher's error on a line over its buffer cap is told apart by
    /// its message alone: this holds the crate to the message it gives.
    #[test]
    fn a_line_over_the_cap_is_named_as_such_and_the_matches_before_it_kept() {
        let mut text = b"needle one\n".to_vec();
        text.extend(std::iter::repeat_n(b'x', MAX_GREP_LINE_BYTES * 2));
        text.extend_from_slice(b"\nneedle two\n");
        let regex = RegexMatcherBuilder::new().build("needle").unwrap();
        let mut searcher = SearcherBuilder::new()
            .line_number(true)
            .heap_limit(Some(MAX_GREP_LINE_BYTES))
            .build();
        let mut found = Vec::new();
        let sink = Bytes(|line, bytes: &[u8]| {
            found.push((line, excerpt(bytes)));
            Ok(true)
        });
        let error = searcher.search_reader(&regex, &text[..], sink).unwrap_err();
        assert_eq!(unsearched(&error), "not searched past a line over 1 MiB");
        assert_eq!(found, vec![(1, "needle one".to_owned())]);
        let other = std::io::Error::other("disk on fire");
        assert_eq!(unsearched(&other), "not searched to its end: disk on fire");
    }

    #[test]
    fn an_excerpt_is_cut_to_its_characters_without_the_line_ending() {
        let long = "é".repeat(MAX_MATCH_CHARS * 2) + "\r\n";
        let shown = excerpt(long.as_bytes());
        assert_eq!(shown.chars().count(), MAX_MATCH_CHARS);
        assert_eq!(excerpt(b"short\r\n"), "short");
        assert_eq!(excerpt(b"bad \xff byte\n"), "bad \u{FFFD} byte");
    }
}
