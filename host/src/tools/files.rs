//! `read` and `ls`: one file's lines, one directory's entries. A read
//! loads its file whole (`read_cache::FileText`) and answers the slice
//! asked for, so a cached file answers every slice of it as a direct read
//! does.

use std::collections::BinaryHeap;
use std::ffi::OsString;

use serde_json::{Map, Value, json};

use super::read_cache::{FileText, load};
use super::{CallOutput, Root, ToolError, opt_str, opt_usize, result, str_arg};
use crate::bounds::native::{MAX_LISTED, MAX_NAMES_HELD};

/// Lines returned when the call gives no limit.
const DEFAULT_LINES: usize = 2000;

pub fn read(root: &Root, args: &Map<String, Value>) -> Result<CallOutput, ToolError> {
    slice(&load(root, str_arg(args, "path")?)?, args)
}

/// The lines of `file` a `read` call with `args` asks for, as that call
/// answers (messages name the path as the call gave it).
pub fn slice(file: &FileText, args: &Map<String, Value>) -> Result<CallOutput, ToolError> {
    let given = str_arg(args, "path")?;
    let lines: Vec<&str> = file.text.lines().collect();
    let total = lines.len();
    let offset = opt_usize(args, "offset").unwrap_or(1).max(1);
    let limit = opt_usize(args, "limit").unwrap_or(DEFAULT_LINES).max(1);
    if offset > total.max(1) {
        return Err(ToolError::InvalidArgs(format!(
            "offset: {offset} is past the end of {given} ({total} lines)"
        )));
    }
    let start = offset - 1;
    let end = start.saturating_add(limit).min(total);
    let content = lines[start..end].join("\n");
    let shown = Root::display(&file.rel);
    let mut text_out = content.clone();
    if end < total {
        text_out.push_str(&format!(
            "\n\n[lines {offset}-{end} of {total}; continue with offset={}]",
            end + 1
        ));
    }
    Ok(result(
        text_out,
        json!({"path": shown, "content": content, "lines": [offset, end], "total_lines": total}),
    ))
}

/// The entries of a directory, the first [`MAX_LISTED`] by name: of all its
/// entries, or of the first [`MAX_NAMES_HELD`] read from a larger one. Only
/// the names kept are held while the rest are read.
pub fn ls(root: &Root, args: &Map<String, Value>) -> Result<CallOutput, ToolError> {
    let given = opt_str(args, "path").unwrap_or("");
    let (dir, rel) = root.open_dir(given)?;
    let read = dir
        .entries()
        .map_err(|e| ToolError::Failed(format!("{given}: {e}")))?;
    let mut first: BinaryHeap<OsString> = BinaryHeap::new();
    let (mut seen, mut read_whole) = (0, true);
    for entry in read.flatten() {
        if seen == MAX_NAMES_HELD {
            read_whole = false;
            break;
        }
        seen += 1;
        first.push(entry.file_name());
        if first.len() > MAX_LISTED {
            first.pop();
        }
    }
    let mut entries = Vec::new();
    for name in first.into_sorted_vec() {
        // The entry's own metadata: links are reported as links, never
        // what they point at.
        let Ok(meta) = dir.symlink_metadata(&name) else {
            continue;
        };
        let kind = if meta.is_symlink() {
            "symlink"
        } else if meta.is_dir() {
            "dir"
        } else {
            "file"
        };
        entries.push((name.to_string_lossy().into_owned(), kind, meta.len()));
    }
    let mut text = entries
        .iter()
        .map(|(name, kind, _)| {
            if *kind == "dir" {
                format!("{name}/")
            } else {
                name.clone()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let truncated = seen > MAX_LISTED || !read_whole;
    if !read_whole {
        text.push_str(&format!(
            "\n[the first {MAX_LISTED} by name of the first {MAX_NAMES_HELD} entries read; list a narrower path or use glob]"
        ));
    } else if truncated {
        text.push_str(&format!(
            "\n[the first {MAX_LISTED} of {seen} entries by name; use glob to find the others]"
        ));
    }
    let listed: Vec<Value> = entries
        .iter()
        .map(|(name, kind, size)| json!({"name": name, "type": kind, "size": size}))
        .collect();
    Ok(result(
        text,
        json!({"path": Root::display(&rel), "entries": listed, "truncated": truncated}),
    ))
}
