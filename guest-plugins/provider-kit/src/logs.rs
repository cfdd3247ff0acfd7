//! Views of a CI job's log for `get_job_logs` and `get_pipeline`, the same
//! for every CI provider (GitHub Actions, GitLab CI): an error summary, a
//! pattern search with context, a page of lines, or the whole log, always
//! bounded so a huge log cannot flood the model.
//!
//! It owns no provider's endpoints: a plugin fetches the log text and
//! hands it over.

use regex::{Regex, RegexBuilder};
use toolhost_sdk::{ToolError, Value, json};

use crate::api::uint;

/// Longest line kept (the rest is cut with `…`).
const MAX_LINE: usize = 2_000;
/// Most lines any view returns, whatever `limit` asks.
const MAX_LINES: usize = 2_000;
/// Lines that look like errors, for the summary and failed-job extracts.
/// ASCII word boundaries (`(?-u:\b)`): the Unicode tables are left out.
const ERROR_PATTERN: &str =
    r"(?i)##\[error\]|(?-u:\b)(error|failed|failure)(?-u:\b)|panicked|exception|fatal|traceback";
/// Lines of the log's end the summary adds (where a job's exit reason is).
const TAIL: usize = 20;

/// What `get_job_logs` was asked for.
#[derive(Debug)]
pub enum LogView {
    /// Error lines and the tail (nothing else asked).
    Summary,
    /// Lines matching a pattern, with context lines around each.
    Search {
        pattern: Regex,
        context: usize,
        max_matches: usize,
    },
    /// Lines `[offset, offset+limit)`, 0-based.
    Page { offset: usize, limit: usize },
    /// Everything (up to the bound).
    Full,
}

impl LogView {
    /// The view `args` ask for (`pattern`, `context`, `maxMatches`,
    /// `offset`, `limit`, `full`). A pattern that is not a valid regex is
    /// searched for as a keyword, case-insensitively.
    pub fn from_args(args: &Value) -> Result<Self, ToolError> {
        if args.get("full").and_then(Value::as_bool) == Some(true) {
            return Ok(LogView::Full);
        }
        if let Some(p) = args
            .get("pattern")
            .and_then(Value::as_str)
            .filter(|p| !p.is_empty())
        {
            // Unicode classes (`\w`, `\d`, `\b`) need tables this build
            // leaves out: such a pattern is read with ASCII classes.
            let build = |p: &str, unicode: bool| {
                RegexBuilder::new(p)
                    .case_insensitive(true)
                    .unicode(unicode)
                    .size_limit(1 << 20)
                    .build()
            };
            let pattern = build(p, true)
                .or_else(|_| build(p, false))
                .or_else(|_| build(&regex::escape(p), true))
                .map_err(|e| ToolError::InvalidArgs(format!("`pattern`: {e}")))?;
            return Ok(LogView::Search {
                pattern,
                context: uint(args, "context", 5)?.min(50) as usize,
                max_matches: uint(args, "maxMatches", 20)?.clamp(1, 200) as usize,
            });
        }
        if args.get("offset").is_some() || args.get("limit").is_some() {
            return Ok(LogView::Page {
                offset: uint(args, "offset", 0)? as usize,
                limit: uint(args, "limit", 200)?.clamp(1, MAX_LINES as u64) as usize,
            });
        }
        Ok(LogView::Summary)
    }

    /// The view of `log`: `{mode, total_lines, lines: [{n, text}], ...}`,
    /// line numbers 1-based.
    pub fn render(&self, log: &str) -> Value {
        let lines: Vec<&str> = log.lines().collect();
        let total = lines.len();
        let numbered = |idx: &[usize]| -> Vec<Value> {
            idx.iter()
                .map(|&i| json!({"n": i + 1, "text": cut(lines[i])}))
                .collect()
        };
        match self {
            LogView::Full => {
                let shown: Vec<usize> = (0..total.min(MAX_LINES)).collect();
                json!({"mode": "full", "total_lines": total, "truncated": total > MAX_LINES, "lines": numbered(&shown)})
            }
            LogView::Page { offset, limit } => {
                let shown: Vec<usize> = (*offset..total.min(offset.saturating_add(*limit))).collect();
                json!({"mode": "page", "total_lines": total, "offset": offset,
                       "has_more": offset.saturating_add(*limit) < total, "lines": numbered(&shown)})
            }
            LogView::Search {
                pattern,
                context,
                max_matches,
            } => {
                let (hits, more) = matching(&lines, pattern, *max_matches);
                let shown = with_context(&hits, *context, total);
                json!({"mode": "search", "total_lines": total, "matches": hits.len(),
                       "more_matches": more, "lines": numbered(&shown)})
            }
            LogView::Summary => {
                let (hits, more) = matching(&lines, &error_regex(), 20);
                let mut shown = with_context(&hits, 2, total);
                for i in total.saturating_sub(TAIL)..total {
                    if !shown.contains(&i) {
                        shown.push(i);
                    }
                }
                json!({"mode": "summary", "total_lines": total, "error_lines": hits.len(),
                       "more_errors": more, "lines": numbered(&shown)})
            }
        }
    }
}

/// Up to `max` error lines of `log` (for a failed job in `get_pipeline`).
pub fn error_lines(log: &str, max: usize) -> Vec<String> {
    let lines: Vec<&str> = log.lines().collect();
    let (hits, _) = matching(&lines, &error_regex(), max);
    hits.iter().map(|&i| cut(lines[i])).collect()
}

fn error_regex() -> Regex {
    Regex::new(ERROR_PATTERN).expect("the error pattern is a valid regex")
}

/// Indices of the first `max` lines matching `pattern`, and whether more
/// match.
fn matching(lines: &[&str], pattern: &Regex, max: usize) -> (Vec<usize>, bool) {
    let mut hits = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if pattern.is_match(line) {
            if hits.len() == max {
                return (hits, true);
            }
            hits.push(i);
        }
    }
    (hits, false)
}

/// The hits with `context` lines either side, in order, each once.
fn with_context(hits: &[usize], context: usize, total: usize) -> Vec<usize> {
    let mut shown: Vec<usize> = Vec::new();
    for &h in hits {
        for i in h.saturating_sub(context)..total.min(h + context + 1) {
            if shown.last().is_none_or(|&last| i > last) {
                shown.push(i);
            }
        }
    }
    shown
}

fn cut(line: &str) -> String {
    if line.len() <= MAX_LINE {
        return line.to_owned();
    }
    let mut end = MAX_LINE;
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &line[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "setup\ncompile a\ncompile b\nerror: b.rs:3 mismatched types\nnote\nmore\nlast";

    fn texts(v: &Value) -> Vec<String> {
        v["lines"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| format!("{}:{}", l["n"], l["text"].as_str().unwrap()))
            .collect()
    }

    #[test]
    fn searches_show_context_once() {
        let view = LogView::from_args(&json!({"pattern": "compile", "context": 1})).unwrap();
        let out = view.render(LOG);
        assert_eq!(out["matches"], 2);
        assert_eq!(
            texts(&out),
            [
                "1:setup",
                "2:compile a",
                "3:compile b",
                "4:error: b.rs:3 mismatched types"
            ]
        );
        // Not a regex: a keyword.
        let view = LogView::from_args(&json!({"pattern": "b.rs:3 (", "context": 0})).unwrap();
        assert!(view.render("x b.rs:3 ( y\nz")["matches"] == 1);
        let view = LogView::from_args(&json!({"pattern": r"\bexit code \d+", "context": 0})).unwrap();
        assert_eq!(view.render("a\nexit code 101\nexit code x")["matches"], 1);
    }

    #[test]
    fn pages_summaries_and_errors() {
        let page = LogView::from_args(&json!({"offset": 5, "limit": 10}))
            .unwrap()
            .render(LOG);
        assert_eq!(texts(&page), ["6:more", "7:last"]);
        assert_eq!(page["has_more"], false);
        let summary = LogView::from_args(&json!({})).unwrap().render(LOG);
        assert_eq!(summary["mode"], "summary");
        assert_eq!(summary["error_lines"], 1);
        assert_eq!(error_lines(LOG, 5), ["error: b.rs:3 mismatched types"]);
        assert!(matches!(
            LogView::from_args(&json!({"full": true, "pattern": "x"})).unwrap(),
            LogView::Full
        ));
        assert_eq!(cut(&"é".repeat(2_000)).chars().count(), 1_001);
    }
}
