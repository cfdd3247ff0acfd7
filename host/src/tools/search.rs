//! `glob` and `grep`, on the ripgrep crates: walks honour `.gitignore` and
//! skip hidden files (as ripgrep does), never follow symlinks, and stop at
//! a cap so one call cannot flood the model.

use globset::{Glob, GlobMatcher};
use grep_regex::RegexMatcherBuilder;
use grep_searcher::sinks::UTF8;
use grep_searcher::{BinaryDetection, SearcherBuilder};
use ignore::WalkBuilder;
use serde_json::{Map, Value, json};

use super::{CallOutput, Root, ToolError, opt_str, opt_usize, result, str_arg};

const MAX_PATHS: usize = 1000;
const DEFAULT_MATCHES: usize = 200;
/// Longest matching line returned whole; longer ones are cut.
const MAX_LINE_CHARS: usize = 500;

fn matcher(field: &str, pattern: &str) -> Result<GlobMatcher, ToolError> {
    Glob::new(pattern)
        .map(|g| g.compile_matcher())
        .map_err(|e| ToolError::InvalidArgs(format!("{field}: {e}")))
}

/// The regular files below `start`, as (real path, path shown).
fn walk(root: &Root, start: &std::path::Path) -> impl Iterator<Item = (std::path::PathBuf, String)> {
    WalkBuilder::new(start)
        .follow_links(false)
        // Sorted, so results and where a cap cuts them are reproducible.
        .sort_by_file_name(|a, b| a.cmp(b))
        .build()
        .flatten()
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .map(|e| {
            let shown = root.display(e.path());
            (e.into_path(), shown)
        })
}

pub fn glob(root: &Root, args: &Map<String, Value>) -> Result<CallOutput, ToolError> {
    let pattern = matcher("pattern", str_arg(args, "pattern")?)?;
    let start = root.resolve(opt_str(args, "path").unwrap_or(""))?;
    let mut paths = Vec::new();
    let mut truncated = false;
    for (real, shown) in walk(root, &start) {
        let relative = real.strip_prefix(&start).unwrap_or(&real);
        if pattern.is_match(relative) {
            if paths.len() == MAX_PATHS {
                truncated = true;
                break;
            }
            paths.push(shown);
        }
    }
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
    let start = root.resolve(opt_str(args, "path").unwrap_or(""))?;
    let mut searcher = SearcherBuilder::new()
        .line_number(true)
        .binary_detection(BinaryDetection::quit(0))
        .build();
    let mut matches: Vec<Value> = Vec::new();
    let mut text = String::new();
    let mut truncated = false;
    'files: for (real, shown) in walk(root, &start) {
        if only.as_ref().is_some_and(|g| !g.is_match(&shown)) {
            continue;
        }
        let mut found = Vec::new();
        let sink = UTF8(|line, content: &str| {
            found.push((line, content.trim_end_matches(['\n', '\r']).to_owned()));
            Ok(found.len() < limit)
        });
        // Unreadable or non-UTF-8 files are skipped, as ripgrep does.
        if searcher.search_path(&regex, &real, sink).is_err() {
            continue;
        }
        for (line, content) in found {
            if matches.len() == limit {
                truncated = true;
                break 'files;
            }
            let content: String = content.chars().take(MAX_LINE_CHARS).collect();
            text.push_str(&format!("{shown}:{line}:{content}\n"));
            matches.push(json!({"path": shown, "line": line, "text": content}));
        }
    }
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
