//! Every cap on what a plugin hands the host, in one place.
//!
//! A plugin is untrusted: each value crossing from it is bounded in count
//! and in bytes, per call and per tool, before the rest of the host sees it.
//! The per-plugin limits a user sets (memory, CPU, wall clock, the largest
//! value a plugin may return: `max_output_kb`) are in the manifest
//! (`plugin::manifest`); the caps here are the host's own and hold whatever
//! a manifest says. This module owns the values and the two helpers that
//! apply them to text ([`cut`], [`shown`]); the checks themselves are where
//! the values arrive (`plugin::calls`, `schema`, `plugin::host_api`).
//!
//! | what | cap |
//! |---|---|
//! | a tool name | 1 to 64 bytes of `[A-Za-z0-9_-]` (the WIT contract) |
//! | tools one plugin lists | 256 |
//! | a tool's title (0.1: its label) | 128 bytes, no control characters |
//! | a tool's output schema | 256 KiB encoded, a JSON object of `"type": "object"` |
//! | a tool's description (from its plugin) | 16 KiB, no control characters but tab, CR and newline |
//! | a tool's snippet | 512 bytes, no control characters |
//! | a tool's guidelines | 32 bullets of 512 bytes, no control characters |
//! | categories one enricher claims | 64 |
//! | a property name | 1 to 64 bytes of `[A-Za-z0-9_.-]` |
//! | properties of a schema, arguments of a call | 512 |
//! | values of one enum | 1,000, and at most the plugin's `max_output_kb` encoded |
//! | a tool's schema, cumulative over every edit of every enricher | 256 KiB encoded |
//! | what the plugins of one call add to its arguments | 1 MiB (prepare-arguments and the transform-args chain each) |
//! | an error text (a tool error, a refusal, a block reason, a load-time refusal) | 16 KiB, and at most `max_output_kb`: cut with a marker |
//! | a result (content, structured result, details; binary data as base64) | the plugin's `max_output_kb` |
//! | a resource URI (a link's, an embedded resource's) | 8 KiB, no control characters |
//! | a resource's name, title, MIME type; a block's `last-modified` | 1 KiB, no control characters |
//! | a media block's MIME type | 1 KiB, no control characters |
//! | a content annotation's priority | 0.0 to 1.0 |
//! | a log line; log lines per call | 4 KiB; 200 |
//!
//! Text a plugin sent that is shown inside one of the host's own messages
//! (a refused tool name, a bad category) is escaped and shortened first
//! ([`shown`]), so it cannot forge lines in a terminal or in the model's
//! view. "Control characters" are Unicode's `Cc` and the bidirectional
//! formatting characters (`U+202A`–`U+202E`, `U+2066`–`U+2069`), which
//! reorder what a reader sees.
//!
//! Time counts too: time a plugin spends inside the host's imports is
//! charged to its CPU budget (see `plugin::host_api`).
//!
//! The native file tools are bounded too ([`native`]): what one call may
//! read, walk, hold and answer, and the threads and time it may take.

/// Longest tool name (the WIT contract).
pub const MAX_TOOL_NAME: usize = 64;
/// Most tools one plugin may list.
pub const MAX_TOOLS: usize = 256;
/// Longest tool title (a 0.1 tool's label).
pub const MAX_TITLE: usize = 128;
/// Largest encoded output schema of one tool.
pub const MAX_OUTPUT_SCHEMA_BYTES: usize = 256 << 10;
/// Longest resource URI in a result.
pub const MAX_URI: usize = 8 << 10;
/// Longest resource name, title or MIME type, or `last-modified` stamp, in
/// a result.
pub const MAX_RESULT_LABEL: usize = 1 << 10;
/// Longest tool description a tool plugin may give.
pub const MAX_DESCRIPTION: usize = 16 << 10;
/// Longest snippet, and longest guideline bullet.
pub const MAX_PROMPT_LINE: usize = 512;
/// Most guideline bullets of one tool.
pub const MAX_GUIDELINES: usize = 32;
/// Most categories one enricher may claim.
pub const MAX_CATEGORIES: usize = 64;
/// Longest property name; model APIs reject longer tool parameters.
pub const MAX_PROPERTY_NAME: usize = 64;
/// Most properties a schema may have, and most arguments a call may have,
/// after a plugin's edits.
pub const MAX_PROPERTIES: usize = 512;
/// Most values of one enum.
pub const MAX_ENUM_VALUES: usize = 1000;
/// Largest encoded schema of one tool that edits may grow it to.
pub const MAX_SCHEMA_BYTES: usize = 256 << 10;
/// Most bytes the plugins of one call may write into its arguments, over
/// the whole transform-args chain (and, separately, prepare-arguments).
pub const MAX_ARGS_GROWTH: usize = 1 << 20;
/// Longest error text from a plugin, before the plugin's own output cap.
pub const MAX_ERROR_TEXT: usize = 16 << 10;
/// Longest log line kept; longer ones are cut.
pub const MAX_LOG_LINE: usize = 4096;
/// Log lines a plugin may write per call before the rest are dropped.
pub const MAX_LOG_LINES_PER_CALL: u32 = 200;

/// What one call of a native file tool may touch (`tools`): a read's
/// file, a walk's depth and the names it holds, a listing's and a search's
/// answer, the threads and the time file work takes.
pub mod native {
    use std::time::Duration;

    /// Largest file `read` loads, `edit` changes and `write` or `edit` makes.
    pub const MAX_FILE_BYTES: u64 = 16 << 20;
    /// Largest `.gitignore` or `.ignore` a walk reads; a larger one is not used.
    pub const MAX_IGNORE_FILE_BYTES: u64 = 1 << 20;
    /// Paths `glob` answers, and entries `ls` answers.
    pub const MAX_LISTED: usize = 1000;
    /// Names `ls` reads from its directory, and names a walk holds at once
    /// over the directories it has open.
    pub const MAX_NAMES_HELD: usize = 100_000;
    /// Directories below its start a walk (`glob`, `grep`) goes down.
    pub const MAX_WALK_DEPTH: usize = 64;
    /// Longest line `grep` holds; a file is not searched past a longer one.
    pub const MAX_GREP_LINE_BYTES: usize = 1 << 20;
    /// Matches `grep` answers, whatever its `limit`.
    pub const MAX_GREP_MATCHES: usize = 1000;
    /// Characters of a matching line `grep` answers; longer lines are cut.
    pub const MAX_MATCH_CHARS: usize = 500;
    /// Files `grep` names as not searched (whole).
    pub const MAX_GREP_SKIPPED: usize = 100;
    /// Threads the file tools of one host block at once.
    pub const MAX_FILE_WORKERS: usize = 8;
    /// Time a walk searches before it answers what it found.
    pub const FILE_WORK_BUDGET: Duration = Duration::from_secs(20);
    /// Time after which a call of a file tool is answered with an error,
    /// whether or not its thread is done.
    pub const FILE_WORK_DEADLINE: Duration = Duration::from_secs(30);
}

/// Longest excerpt of plugin text quoted inside a host message.
const SHOWN_CHARS: usize = 80;

/// `text` cut to at most `max` bytes on a character boundary, with a marker
/// saying how long it was, the marker included in the `max`. Text within
/// `max` is returned unchanged.
pub fn cut(mut text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let marker = format!("… [cut: {} bytes in all]", text.len());
    let room = max.saturating_sub(marker.len());
    let end = (0..=room).rev().find(|i| text.is_char_boundary(*i)).unwrap_or(0);
    text.truncate(end);
    text.push_str(&marker);
    text
}

/// Plugin text as quoted in a host message: escaped (so a newline, NUL or
/// direction override shows as `\n`, `\0`, `\u{202e}`) and shortened, with
/// its length if it was.
pub fn shown(text: &str) -> String {
    let mut excerpt: String = text.chars().take(SHOWN_CHARS).collect();
    let long = excerpt.len() < text.len();
    excerpt = format!("{excerpt:?}");
    if long {
        excerpt.push_str(&format!("… ({} bytes)", text.len()));
    }
    excerpt
}

/// Whether `c` is a control character in the sense above.
pub fn is_control(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// Whether `name` is a tool name of the WIT contract.
pub fn is_tool_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_TOOL_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_keeps_short_text_and_marks_long_text() {
        assert_eq!(cut("short".into(), 64), "short");
        let long = "é".repeat(10_000);
        let out = cut(long, 100);
        assert!(out.len() <= 100, "{}", out.len());
        assert!(out.ends_with("[cut: 20000 bytes in all]"), "{out}");
        assert!(out.starts_with('é'));
    }

    #[test]
    fn shown_escapes_and_shortens() {
        assert_eq!(shown("a\nSYSTEM: x"), "\"a\\nSYSTEM: x\"");
        assert_eq!(shown("\u{202e}"), "\"\\u{202e}\"");
        assert_eq!(shown("\0"), "\"\\0\"");
        let long = shown(&"x".repeat(10_000));
        assert!(long.len() < 120 && long.ends_with("(10000 bytes)"), "{long}");
    }

    #[test]
    fn tool_names_follow_the_contract() {
        assert!(is_tool_name("word_count-2"));
        for bad in ["", "a b", "a\nb", "../x", "a\0", "\u{202e}x", &"x".repeat(65)] {
            assert!(!is_tool_name(bad), "{bad:?}");
        }
        assert!(is_control('\u{202e}') && is_control('\n') && !is_control('é'));
    }
}
