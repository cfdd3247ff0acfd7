//! Every cap on what a plugin or a client hands the host, in one place (and
//! those on what an upstream server or the cluster's Redis hands it).
//!
//! A plugin is untrusted: each value crossing from it is bounded in count
//! and in bytes, per call and per tool, before the rest of the host sees it.
//! So is a client: what the host builds from its requests (errors quoting
//! them, sessions, notifications it is owed) is bounded the same way.
//! The per-plugin limits a user sets (memory, CPU, wall clock, the largest
//! value a plugin may return: `max_output_kb`) are in the manifest
//! (`plugin::manifest`); the caps here are the host's own and hold whatever
//! a manifest says. This module owns the values and the helpers that
//! apply them to text ([`cut`], [`shown`], [`label`], [`excerpt`]); the checks themselves are where
//! the values arrive (`plugin::calls`, `schema`, `plugin::host_api`), and,
//! for what any source serves, at the gate (`gate`).
//!
//! | what | cap |
//! |---|---|
//! | a plugin's component file | 128 MiB, told from its size before it is read (from a directory or a registry) |
//! | a plugin's sidecar manifest (`NAME.toml`); its detached signature (`NAME.wasm.sig`) | 256 KiB; 64 KiB; likewise |
//! | compiling a plugin's component (`plugin::Compiler::Worker`, what the command line uses) | 120 s of CPU time (600 s of wall time) in a worker process of 4 GiB of data; two workers at a time |
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
//! | a recording (`serve --record`, read by `replay`): a file; a line; its nesting; its entries; files in a directory | 64 MiB; 16 MiB; 100 levels; 1,000,000; 1,000 |
//! | a validation error (arguments, output schema) | 16 problems listed, the rest counted; each value quoted 128 bytes, 8 enum options; 2 KiB of the arguments shown; 16 KiB in all |
//! | a client's name quoted in an error or a log line (a tool, a prompt, a resource URI, a property) | 80 characters, escaped ([`label`]) |
//! | progress notifications one call sends | 100, the rest coalesced into the newest, one held for a slow client |
//! | MCP sessions open over HTTP | 256 (each freed on `DELETE` or after 5 idle minutes) |
//! | content blocks of a result served, from any source | 1,000 |
//! | a result served, from any source (every byte: text, base64 data, URIs, names, structured content, `_meta`, 25 a block) | the plugin's `max_output_kb`, and at most 32 MiB |
//! | nesting of a served result's structured content, details and `_meta`, and of a tool's schemas and `_meta` | 64 levels |
//! | a tool definition served, from any source | 1 MiB |
//! | an upstream server's message (so a result of one of its tools); its tool names and texts | 16 MiB, or its `max_message_kb` up to 256 MiB; as a plugin's |
//! | an upstream server's list (tools, prompts, resources, templates), over all its pages | 1,000 pages, its message cap in all; 10,000 tools, or its `max_tools` up to 100,000; 100,000 of the others |
//! | an upstream's request relayed to a calling client (`elicitation/create`, `sampling/createMessage`, `roots/list`), and the client's answer | 1 MiB each way, and the upstream's message cap; 4 in flight per client session; the upstream's `relay_timeout_s` |
//! | requests a plugin has in flight (`http.start`, contract 0.3) | its `max_requests_per_call` (16) per call and `max_requests_in_flight` (64) over all its calls, each 1 to 1,024; refused past them, never queued |
//! | a plugin's question to the user (contract 0.3's `ask`) | 1 KiB, no control characters but newline; 1 to 16 options of 128 bytes each, none twice; one per call; answered within 5 minutes, holding one of the session's 4 relayed round trips |
//! | a 2026-07-28 client's calls parked on an upstream's question | 16 per caller, 1,024 for the host; each question answered within the upstream's `relay_timeout_s`; a call kept at most 10 minutes |
//! | tasks a client's calls start on upstream servers | 2025-11-25: 16 per session, each for its `ttl`, at most an hour; 2026-07-28's extension: 16 running and 64 kept per caller, 1,024 for the host, each for its `ttl` (1 s to an hour) and kept one more `ttl` once ended; a server's status message passed on, 1 KiB |
//! | a prefetch another replica shared (Redis) | 32 MiB read before parsing, sealed by the replicas' key, then its tool's output cap |
//! | a message another replica published (Redis) | 1 MiB, sealed by the replicas' key, sent within the last minute |
//! | the speculation totals summed in Redis (not sealed) | each hash read in one step, only while it holds at most its cap: 10,000 counters, 10,000 fan-out ranks, between valid tool names; 2,048 learned links of 2 KiB, well-formed between valid tool names (as a stats file's), 8,192 names picked |
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

/// Largest plugin component file: read whole, hashed and compiled before
/// any check of its contents, so a file of gigabytes would hold that much
/// memory and seconds of reading, one such file each. The largest real
/// plugins, whole language runtimes (Python, JavaScript), are tens of MiB.
pub const MAX_COMPONENT_BYTES: u64 = 128 << 20;
/// Largest sidecar manifest (`NAME.toml`), which comes with the plugin:
/// settings and grants, a few hundred bytes.
pub const MAX_MANIFEST_BYTES: u64 = 256 << 10;
/// Largest detached signature (`NAME.wasm.sig`), which comes with the
/// plugin: wasmsign2's are a few hundred bytes a key that signed.
pub const MAX_SIGNATURE_BYTES: u64 = 64 << 10;
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
/// Largest session file `serve --record` writes (one last line past it
/// says the file was cut), and so the largest `replay` reads.
pub const MAX_RECORDING_BYTES: u64 = 64 << 20;
/// Longest line of a recording: a call over it is not recorded, a
/// recording holding one is refused.
pub const MAX_RECORDED_LINE_BYTES: usize = 16 << 20;
/// Deepest nesting of arrays and objects in one line of a recording
/// (below `serde_json`'s own limit, so the refusal says what it is).
pub const MAX_RECORDED_DEPTH: usize = 100;
/// Most array elements and object members in one line of a recording: a
/// line of tiny values would take ~30 times its size once parsed.
pub const MAX_RECORDED_ENTRIES: usize = 1_000_000;
/// Most session files `replay` reads from one recording directory.
pub const MAX_RECORDING_FILES: usize = 1000;

/// Problems one validation error lists; the rest are counted.
pub const MAX_LISTED_PROBLEMS: usize = 16;
/// Longest excerpt of a value (an argument, a result field, an enum option)
/// quoted inside an error.
pub const MAX_QUOTED: usize = 128;
/// Enum options an error lists; the rest are counted.
pub const MAX_OPTIONS_SHOWN: usize = 8;
/// Longest excerpt of a call's arguments shown back in a validation error.
pub const MAX_RECEIVED_SHOWN: usize = 2 << 10;

/// `notifications/progress` one call sends its client; reports beyond
/// them, and any a slow client has not taken yet, are coalesced into the
/// newest (see `mcp::progress`).
pub const MAX_PROGRESS_PER_CALL: usize = 100;
/// MCP sessions the HTTP front keeps open at once; an `initialize` beyond
/// them is refused until one closes or expires.
pub const MAX_HTTP_SESSIONS: usize = 256;

/// Resources subscribed to through toolhost on one upstream server, by all
/// clients together: each is kept, and made again when the server is
/// started again; a subscription beyond them is refused.
pub const MAX_UPSTREAM_SUBSCRIPTIONS: usize = 1000;

/// Most content blocks of one result the gate serves, whatever its source.
pub const MAX_RESULT_BLOCKS: usize = 1000;
/// Largest result the gate serves, whatever its source (`CallOutput::size`);
/// a plugin's own `max_output_kb` holds below it.
pub const MAX_RESULT_BYTES: usize = 32 << 20;
/// Deepest nesting of JSON the gate serves: a result's structured content,
/// details and `_meta`, a tool's schemas and `_meta`.
pub const MAX_JSON_DEPTH: usize = 64;
/// Largest tool definition the gate serves (every string of it), whatever
/// its source.
pub const MAX_TOOL_DEFINITION_BYTES: usize = 1 << 20;
/// Largest message an upstream server may send unless its `max_message_kb`
/// says otherwise: the MCP client's own limit over HTTP.
pub const DEFAULT_UPSTREAM_MESSAGE: usize = 16 << 20;
/// Largest `max_message_kb` an upstream server may be given.
pub const MAX_UPSTREAM_MESSAGE: usize = 256 << 20;
/// Largest request an upstream server may have relayed to a calling
/// client (an elicitation, a sampling request, `roots/list`), and largest
/// answer relayed back: a form or a completion, not a bulk transfer.
pub const MAX_RELAYED_MESSAGE: usize = 1 << 20;
/// Most upstream requests relayed to one client session at once, over
/// every upstream server: one more is refused at once, not queued.
pub const MAX_RELAYED_PER_SESSION: usize = 4;
/// Longest question a plugin may ask the user before a call (contract
/// 0.3's `ask`): a sentence or two, not a document.
pub const MAX_QUESTION: usize = 1 << 10;
/// Most options a plugin's question may offer.
pub const MAX_QUESTION_OPTIONS: usize = 16;
/// Longest option a plugin's question may offer.
pub const MAX_QUESTION_OPTION: usize = 128;
/// How long a plugin's question waits for the user's answer.
pub const ASK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(300);
/// The most tools an upstream server may list unless its `max_tools` says
/// otherwise.
pub const DEFAULT_UPSTREAM_TOOLS: usize = 10_000;
/// The most items of any one list an upstream server gives (tools, even
/// with `max_tools`; prompts; resources; resource templates).
pub const MAX_UPSTREAM_ITEMS: usize = 100_000;
/// Largest value read from the cluster's Redis before it is parsed (a
/// shared prefetch is then held to its tool's own output cap).
pub const MAX_SHARED_ENTRY: usize = 32 << 20;
/// Largest message one replica publishes to the others (an invalidation
/// of every tool of a large catalog fits): a larger one is dropped unread.
pub const MAX_SHARED_EVENT: usize = 1 << 20;
/// Most ranks of the fan-out summed in Redis a replica learns from (each a
/// link between two tools and a rank among its candidates).
pub const MAX_SHARED_RANKS: usize = 10_000;
/// Most links learned from value flow summed in Redis a replica reads
/// (each replica keeps a few hundred: the others are the rest of the
/// cluster's).
pub const MAX_SHARED_LINKS: usize = 2048;
/// Longest learned link summed in Redis a replica reads, as its owner
/// names it (tools, arguments and where each comes from), and longest
/// traits of the items it picks.
pub const MAX_SHARED_LINK_BYTES: usize = 2048;
/// Most names of picked items summed in Redis a replica reads (over every
/// link).
pub const MAX_SHARED_PICKS: usize = 8192;

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

/// `text` whole as one message that may quote what a plugin or its file
/// holds: each control character escaped (`\r`, `\u{1b}`), but for its
/// newlines, each followed by an indent. A parser's error keeps its lines
/// (a TOML error's excerpt and caret), and no quoted text can start a line
/// of its own, colour a terminal or overwrite what is shown.
pub fn escape_controls(text: String) -> String {
    if !text.chars().any(is_control) {
        return text;
    }
    let mut escaped = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            '\n' => escaped.push_str("\n  "),
            c if is_control(c) => escaped.extend(c.escape_debug()),
            c => escaped.push(c),
        }
    }
    escaped
}

/// A name that came from outside (a property, a tool asked for) as quoted
/// in a host message: as it is when short and free of control characters,
/// else [`shown`].
pub fn label(text: &str) -> std::borrow::Cow<'_, str> {
    if text.len() <= SHOWN_CHARS && !text.chars().any(is_control) {
        text.into()
    } else {
        shown(text).into()
    }
}

/// The length of `value` as compact JSON, counted as it is encoded: the
/// text is never built. `usize::MAX` (over every cap) for a value that
/// cannot be encoded, which no JSON value is.
pub(crate) fn encoded_len(value: &(impl serde::Serialize + ?Sized)) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    serde_json::to_writer(&mut count, value).map_or(usize::MAX, |()| count.0)
}

/// `value` as JSON (pretty-printed if `pretty`), at most `max` bytes of it
/// and a marker if there was more. The encoding stops at `max`: a huge value
/// is never written out whole just to be cut.
pub fn excerpt(value: &(impl serde::Serialize + ?Sized), max: usize, pretty: bool) -> String {
    /// A writer that takes `max` bytes, then refuses.
    struct Capped {
        out: Vec<u8>,
        max: usize,
    }
    impl std::io::Write for Capped {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let room = self.max - self.out.len();
            if room == 0 {
                return Err(std::io::ErrorKind::WriteZero.into());
            }
            let n = buf.len().min(room);
            self.out.extend_from_slice(&buf[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    const MARKER: &str = "… [cut]";
    let mut capped = Capped {
        out: Vec::new(),
        max: max.saturating_sub(MARKER.len()),
    };
    let whole = if pretty {
        serde_json::to_writer_pretty(&mut capped, value)
    } else {
        serde_json::to_writer(&mut capped, value)
    }
    .is_ok();
    let mut bytes = capped.out;
    // The cut may fall inside a character: keep the whole ones.
    if let Err(e) = std::str::from_utf8(&bytes) {
        bytes.truncate(e.valid_up_to());
    }
    let mut text = String::from_utf8(bytes).unwrap_or_default();
    if !whole {
        text.push_str(MARKER);
    }
    text
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
    fn excerpts_stop_at_their_cap() {
        let small = serde_json::json!({"a": [1, "é"]});
        assert_eq!(excerpt(&small, 64, false), r#"{"a":[1,"é"]}"#);
        assert_eq!(
            excerpt(&small, 64, true),
            "{\n  \"a\": [\n    1,\n    \"é\"\n  ]\n}"
        );
        let big = serde_json::json!(["é".repeat(1 << 20)]);
        let out = excerpt(&big, 100, false);
        assert!(
            out.len() <= 100 && out.starts_with("[\"éé") && out.ends_with("… [cut]"),
            "{out}"
        );
        assert_eq!(label("path"), "path");
        assert_eq!(label("a\nb"), "\"a\\nb\"");
        assert!(label(&"k".repeat(500)).ends_with("(500 bytes)"));
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
