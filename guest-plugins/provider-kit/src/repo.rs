//! What the git hosts' repository reads share (`get_repository_file`,
//! `get_commit`, `search_code`): file content from base64 to bounded text,
//! diffs bounded, repository paths checked and encoded for a URL, and the
//! follow-up projections (commit → commit by SHA, directory entry or search
//! hit → file by path).
//!
//! It owns no provider's paths or field names beyond the neutral shapes
//! the tools return (`commits[].sha`, `parents`, `entries[]`, `matches[]`).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use toolhost_sdk::{FollowUpLink, ToolError, Value, ValueModel, json};

use crate::{field, items, project};

/// The most file content a `get_repository_file` returns, in bytes; the rest
/// is cut at a line end with [`truncated_marker`].
pub const MAX_FILE_BYTES: usize = 100 * 1024;

/// The most of one file's diff a `get_commit` returns, in bytes.
pub const MAX_DIFF_BYTES: usize = 20 * 1024;

/// The most of all diffs of one `get_commit` together, in bytes: the files
/// after it are listed without their diffs.
pub const MAX_DIFFS_TOTAL_BYTES: usize = 200 * 1024;

/// The line that ends a cut text: what was kept of how much.
pub fn truncated_marker(kept: usize, total: usize) -> String {
    format!("\n[… truncated: showing the first {kept} of {total} bytes]")
}

/// `text` cut to at most `max` bytes at a line end (else a character
/// boundary), with the marker appended; and whether it was cut.
pub fn bounded(text: &str, max: usize) -> (String, bool) {
    if text.len() <= max {
        return (text.to_owned(), false);
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    if let Some(nl) = text[..end].rfind('\n') {
        end = nl + 1;
    }
    let mut out = text[..end].to_owned();
    out.push_str(&truncated_marker(end, text.len()));
    (out, true)
}

/// The bytes of a base64 `content` field as GitHub and GitLab give it
/// (GitHub breaks it into 60-column lines).
pub fn decode_base64(content: &str) -> Option<Vec<u8>> {
    let joined: String = content.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    STANDARD.decode(joined).ok()
}

/// A file's decoded content as the tools return it: `content` (bounded
/// text, with `truncated`), or for bytes that are not UTF-8 no content and
/// `binary: true`.
pub fn file_content(bytes: &[u8]) -> Value {
    match std::str::from_utf8(bytes) {
        Ok(text) if !text.contains('\0') => {
            let (content, truncated) = bounded(text, MAX_FILE_BYTES);
            json!({"content": content, "truncated": truncated, "binary": false})
        }
        _ => json!({"content": Value::Null, "truncated": false, "binary": true}),
    }
}

/// Diffs of a commit's files bounded each and together: a diff over
/// [`MAX_DIFF_BYTES`] is cut, and once [`MAX_DIFFS_TOTAL_BYTES`] are spent
/// the later files keep no diff (`diff_omitted`). Returns whether any was
/// cut or left out.
pub fn bound_diffs(files: &mut [Value]) -> bool {
    let mut spent = 0usize;
    let mut cut = false;
    for file in files {
        let Some(diff) = file.get("diff").and_then(Value::as_str).map(str::to_owned) else {
            continue;
        };
        if spent >= MAX_DIFFS_TOTAL_BYTES {
            file["diff"] = Value::Null;
            file["diff_omitted"] = json!(true);
            cut = true;
            continue;
        }
        let (kept, was_cut) = bounded(&diff, MAX_DIFF_BYTES.min(MAX_DIFFS_TOTAL_BYTES - spent));
        spent += kept.len();
        cut |= was_cut;
        file["diff"] = json!(kept);
    }
    cut
}

/// The catalog's repository reads.
pub const REPOSITORY_READS: [&str; 5] = [
    "get_repository_file",
    "get_commits",
    "get_commit",
    "get_branches",
    "search_code",
];

/// Whether `tool` is one of [`REPOSITORY_READS`].
pub fn is_repository_read(tool: &str) -> bool {
    REPOSITORY_READS.contains(&tool)
}

/// The value model of repository read `tool`, on `read` (the provider's
/// read-only model with its rate-limit host).
///
/// Follow-up probabilities are the host's starting estimates from the
/// committed MCPMark GitHub trajectories (`tests/replay/vendor`): a file or
/// directory read is followed by another file read 0.63 of the time (0.55
/// here: not every one is a listed entry), `list_commits → get_commit` 0.50,
/// `get_commit → get_commit` 0.60 (0.45 here: not every one is the parent);
/// a search hit read and a branch's commits are guesses at 0.35 and 0.30.
/// A file or a commit read by SHA changes only when its ref moves: fresher
/// than lists (300 s against 60 s).
///
/// The two self-links (a commit → its parent, a directory → its files) are
/// facts of how agents chain these reads, with arguments projected from
/// the result; the host's planner declines every self-loop today, so they
/// are declared for when it admits projected ones.
pub fn model(tool: &str, read: ValueModel) -> ValueModel {
    let link = |to: &str, p: f32, field: &str| FollowUpLink::new(to, p).projecting(field, field);
    match tool {
        "get_repository_file" => read
            .critical()
            .typical_kb(6.0)
            .max_kb(110.0)
            .ttl_s(300)
            .follow_up(link("get_repository_file", 0.55, "path")),
        "get_commits" => read
            .supporting()
            .typical_kb(5.0)
            .max_kb(40.0)
            .ttl_s(60)
            .follow_up(link("get_commit", 0.50, "sha")),
        "get_commit" => read
            .critical()
            .typical_kb(12.0)
            .max_kb(220.0)
            .ttl_s(300)
            .follow_up(link("get_commit", 0.45, "sha")),
        "get_branches" => read
            .supporting()
            .typical_kb(1.5)
            .ttl_s(60)
            .follow_up(FollowUpLink::new("get_commits", 0.30).projecting("name", "ref")),
        _ => {
            read.supporting()
                .typical_kb(3.0)
                .ttl_s(120)
                .follow_up(link("get_repository_file", 0.35, "path"))
        }
    }
}

/// A repository path as given (`/src//main.rs/` → `src/main.rs`), refused
/// if it climbs (`..`) or holds a control character.
pub fn clean_path(provider: &str, tool: &str, path: &str) -> Result<String, ToolError> {
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty() && *p != ".").collect();
    if parts.contains(&"..") || path.chars().any(char::is_control) {
        return Err(ToolError::InvalidArgs(format!(
            "{provider} {tool}: `path` must be a path inside the repository, not `{}`",
            path.escape_debug()
        )));
    }
    Ok(parts.join("/"))
}

/// Each segment of a repository path percent-encoded, the `/`s kept
/// (GitHub's `contents/{path}`).
pub fn encode_segments(path: &str) -> String {
    path.split('/')
        .map(crate::api::encode)
        .collect::<Vec<_>>()
        .join("/")
}

/// The follow-up arguments a repository read's result gives, for a link to
/// `to` reading `projection` into `arg`: commits → `get_commit` by SHA, a
/// commit → its parent, a directory's files or search hits →
/// `get_repository_file` by path (at the ref read, if the result names
/// one). `None` when `prev_tool` is not a repository read.
pub fn project_repository(prev_tool: &str, prev: &Value, to: &str) -> Option<Vec<Value>> {
    let projected = match (prev_tool, to) {
        ("get_commits", "get_commit") => project(items(prev, &["commits"]), "sha", |c| field(c, "sha")),
        ("get_commit", "get_commit") => {
            let parents = prev.get("parents").and_then(Value::as_array)?;
            project(parents, "sha", |p| p.as_str().map(str::to_owned))
        }
        ("get_branches", "get_commits") => project(items(prev, &["branches"]), "ref", |b| field(b, "name")),
        ("get_repository_file", "get_repository_file") => {
            let files: Vec<Value> = items(prev, &["entries"])
                .iter()
                .filter(|e| e["type"] == json!("file"))
                .cloned()
                .collect();
            at_ref(project(&files, "path", |e| field(e, "path")), prev)
        }
        ("search_code", "get_repository_file") => at_ref(
            project(items(prev, &["matches"]), "path", |m| field(m, "path")),
            prev,
        ),
        _ => return None,
    };
    Some(projected)
}

/// Each projected argument object with the `ref` the previous result was
/// read at, so a file listed at a ref is read at that ref.
fn at_ref(mut args: Vec<Value>, prev: &Value) -> Vec<Value> {
    if let Some(r) = field(prev, "ref") {
        for a in &mut args {
            a["ref"] = json!(r);
        }
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_cut_at_a_line_end_with_a_marker() {
        let text = "one\ntwo\nthree\n";
        assert_eq!(bounded(text, 100), (text.to_owned(), false));
        let (cut, was) = bounded(text, 10);
        assert!(was);
        assert_eq!(cut, "one\ntwo\n\n[… truncated: showing the first 8 of 14 bytes]");
        // No line end: a character boundary.
        let (cut, _) = bounded("ééé", 3);
        assert!(cut.starts_with("é\n[… truncated: showing the first 2 of 6"));
    }

    #[test]
    fn base64_with_line_breaks_decodes_and_binary_has_no_content() {
        assert_eq!(decode_base64("aGVs\nbG8=\n").unwrap(), b"hello");
        assert_eq!(file_content(b"hi")["content"], "hi");
        assert_eq!(file_content(b"\x89PNG\0\xff")["binary"], true);
        let big = "x\n".repeat(MAX_FILE_BYTES);
        let value = file_content(big.as_bytes());
        assert_eq!(value["truncated"], true);
        assert!(value["content"].as_str().unwrap().len() < MAX_FILE_BYTES + 100);
    }

    #[test]
    fn diffs_are_bounded_each_and_together() {
        let long = "+x\n".repeat(MAX_DIFF_BYTES);
        let mut files: Vec<Value> = (0..12).map(|_| json!({"diff": long})).collect();
        files.push(json!({"diff": null}));
        assert!(bound_diffs(&mut files));
        assert!(files[0]["diff"].as_str().unwrap().contains("[… truncated"));
        assert!(files[11]["diff_omitted"] == true && files[11]["diff"].is_null());
        let total: usize = files
            .iter()
            .filter_map(|f| f["diff"].as_str())
            .map(str::len)
            .sum();
        assert!(total <= MAX_DIFFS_TOTAL_BYTES + 12 * 80, "{total}");
    }

    #[test]
    fn paths_are_cleaned_and_encoded() {
        assert_eq!(clean_path("P", "t", "/src//a b.rs/").unwrap(), "src/a b.rs");
        assert_eq!(clean_path("P", "t", "").unwrap(), "");
        assert!(clean_path("P", "t", "src/../../etc").is_err());
        assert_eq!(encode_segments("src/a b.rs"), "src/a%20b.rs");
    }

    #[test]
    fn repository_reads_project_their_follow_ups() {
        let commits = json!({"commits": [{"sha": "a1"}, {"sha": "b2"}]});
        assert_eq!(
            project_repository("get_commits", &commits, "get_commit").unwrap(),
            [json!({"sha": "a1"}), json!({"sha": "b2"})]
        );
        let commit = json!({"sha": "a1", "parents": ["p0"]});
        assert_eq!(
            project_repository("get_commit", &commit, "get_commit").unwrap(),
            [json!({"sha": "p0"})]
        );
        let dir = json!({"type": "dir", "ref": "dev", "entries": [
            {"path": "src", "type": "dir"}, {"path": "README.md", "type": "file"}]});
        assert_eq!(
            project_repository("get_repository_file", &dir, "get_repository_file").unwrap(),
            [json!({"path": "README.md", "ref": "dev"})]
        );
        let hits = json!({"matches": [{"path": "a.rs"}, {"path": "a.rs"}, {"path": "b.rs"}]});
        assert_eq!(
            project_repository("search_code", &hits, "get_repository_file").unwrap(),
            [json!({"path": "a.rs"}), json!({"path": "b.rs"})]
        );
        assert!(project_repository("get_issues", &hits, "get_issue").is_none());
    }
}
