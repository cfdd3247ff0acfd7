//! `read` and `ls`: one file's lines, one directory's entries. A read
//! loads its file whole ([`FileText`]) and answers the slice asked for, so a
//! cached file answers every slice of it as a direct read does.

use std::io::Read;
use std::path::PathBuf;

use serde_json::{Map, Value, json};

use super::fresh::Seen;
use super::{CallOutput, Root, ToolError, opt_str, opt_usize, result, str_arg};

/// Lines returned when the call gives no limit.
const DEFAULT_LINES: usize = 2000;
/// Files larger than this are refused; read them with grep instead.
const MAX_FILE_BYTES: u64 = 16 << 20;

/// A whole text file as `read` loaded it: any slice of it is answered from
/// here exactly as a direct `read` of that slice would be.
#[derive(Debug, Clone)]
pub struct FileText {
    /// Its path relative to the root.
    rel: PathBuf,
    text: String,
    seen: Seen,
}

impl FileText {
    /// Bytes held, for a cache's bound.
    pub fn size(&self) -> usize {
        self.text.len()
    }

    /// Its path relative to the root, as results give it.
    pub fn path(&self) -> String {
        Root::display(&self.rel)
    }

    /// Whether the file on disk is still the one loaded.
    pub fn is_current(&self, root: &Root) -> bool {
        self.seen.still(root, &self.rel)
    }
}

pub fn read(root: &Root, args: &Map<String, Value>) -> Result<CallOutput, ToolError> {
    slice(&load(root, str_arg(args, "path")?)?, args)
}

/// The whole of the text file `given` names.
pub fn load(root: &Root, given: &str) -> Result<FileText, ToolError> {
    let (mut file, rel) = root.open_file(given)?;
    let meta = file
        .metadata()
        .map_err(|e| ToolError::Failed(format!("{given}: {e}")))?;
    if !meta.is_file() {
        return Err(ToolError::InvalidArgs(format!("path: `{given}` is not a file")));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(ToolError::Failed(format!(
            "{given}: {} bytes is over the {} MiB read limit",
            meta.len(),
            MAX_FILE_BYTES >> 20
        )));
    }
    let mut bytes = Vec::new();
    // The cap holds even if the file grows after the check.
    (&mut file)
        .take(MAX_FILE_BYTES)
        .read_to_end(&mut bytes)
        .map_err(|e| ToolError::Failed(format!("{given}: {e}")))?;
    if bytes.contains(&0) {
        return Err(ToolError::Failed(format!("{given}: a binary file, not text")));
    }
    let seen = Seen::new(&meta, &bytes);
    Ok(FileText {
        rel,
        text: String::from_utf8_lossy(&bytes).into_owned(),
        seen,
    })
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

pub fn ls(root: &Root, args: &Map<String, Value>) -> Result<CallOutput, ToolError> {
    let given = opt_str(args, "path").unwrap_or("");
    let (dir, rel) = root.open_dir(given)?;
    let read = dir
        .entries()
        .map_err(|e| ToolError::Failed(format!("{given}: {e}")))?;
    let mut entries = Vec::new();
    for entry in read.flatten() {
        // The entry's own metadata: links are reported as links, never
        // what they point at.
        let Ok(meta) = entry.metadata() else {
            continue;
        };
        let kind = if meta.is_symlink() {
            "symlink"
        } else if meta.is_dir() {
            "dir"
        } else {
            "file"
        };
        entries.push((entry.file_name().to_string_lossy().into_owned(), kind, meta.len()));
    }
    entries.sort();
    let text = entries
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
    let listed: Vec<Value> = entries
        .iter()
        .map(|(name, kind, size)| json!({"name": name, "type": kind, "size": size}))
        .collect();
    Ok(result(
        text,
        json!({"path": Root::display(&rel), "entries": listed}),
    ))
}
