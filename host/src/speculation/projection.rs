//! The host's own argument projections: from a tool's structured result to
//! the argument objects of follow-up calls, at most three per link.
//!
//! Enrichers' `project-args` come first (the engine asks them in
//! registration order; the first that answers wins). Then the built-in
//! projections for the native tools' results (glob's `paths`; grep's
//! `matches`, each file read around its first matching line; ls's files; a
//! search's `results`), then the generic one: the link's `projection` key
//! of each item of the first list whose items have it, in list order (else
//! every value under that key, anywhere in the result), becomes
//! `{projection_arg: value}`. Projections read a result's JSON (structured,
//! or the JSON its text holds), never formatted text: that is for the
//! model and may change its layout.

use serde_json::{Map, Value};

use crate::value_model::FollowUpLink;

/// Most calls projected from one link.
pub const MAX_PER_LINK: usize = 3;
/// A read after a grep asks for this many lines, from this many before the
/// match: agents mostly read a slice around the line a grep showed them.
const WINDOW: u64 = 60;
const WINDOW_BEFORE: u64 = 20;

/// Argument objects for `link` from `prev_tool`'s structured `result`.
pub fn project(prev_tool: &str, result: &Value, link: &FollowUpLink) -> Vec<Map<String, Value>> {
    let arg = link.projection_arg.as_deref();
    // The built-in chains project what their link asks for: a path, or a
    // search's URL; a link that names another field gets the generic walk.
    let asks = |field: &str| link.projection.as_deref().is_none_or(|f| f == field);
    let values: Vec<Value> = match (prev_tool, arg) {
        ("glob", Some(_)) if asks("path") => strings(result.get("paths")),
        ("grep", Some(arg)) if asks("path") && link.tool == "read" => return windows(result, arg),
        ("grep", Some(_)) if asks("path") => strings_at(result.get("matches"), "path"),
        ("ls", Some(_)) if asks("path") => listed_files(result),
        // Only the top result: a search's later results are rarely opened.
        ("web_search", Some(_)) if asks("url") => strings_at(result.get("results"), "url")
            .into_iter()
            .take(1)
            .collect(),
        _ => match (link.projection.as_deref(), arg) {
            (Some(field), Some(_)) => listed(result, field).unwrap_or_else(|| {
                let mut found = Vec::new();
                collect(result, field, &mut found);
                found
            }),
            _ => Vec::new(),
        },
    };
    let Some(arg) = arg else { return Vec::new() };
    let mut out: Vec<Map<String, Value>> = Vec::new();
    for value in values {
        if out.len() == MAX_PER_LINK {
            break;
        }
        let usable = matches!(&value, Value::String(s) if !s.is_empty()) || value.is_number();
        if usable && !out.iter().any(|o| o[arg] == value) {
            out.push(Map::from_iter([(arg.to_owned(), value)]));
        }
    }
    out
}

/// A read of each file grep matched, around its first matching line.
fn windows(result: &Value, arg: &str) -> Vec<Map<String, Value>> {
    let mut out: Vec<Map<String, Value>> = Vec::new();
    for m in result
        .get("matches")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if out.len() == MAX_PER_LINK {
            break;
        }
        let Some(path) = m.get("path").and_then(Value::as_str) else {
            continue;
        };
        if path.is_empty() || out.iter().any(|o| o[arg] == path) {
            continue;
        }
        let mut read = Map::from_iter([(arg.to_owned(), Value::from(path))]);
        // A match without its line is read from the top.
        if let Some(line) = m.get("line").and_then(Value::as_u64) {
            read.insert("offset".into(), line.saturating_sub(WINDOW_BEFORE).max(1).into());
            read.insert("limit".into(), WINDOW.into());
        }
        out.push(read);
    }
    out
}

/// The files an `ls` listed, as paths relative to the root; hidden ones
/// are left out, as the walks of glob and grep leave them.
fn listed_files(result: &Value) -> Vec<Value> {
    let dir = result.get("path").and_then(Value::as_str).unwrap_or(".");
    let entries = result.get("entries").and_then(Value::as_array);
    entries
        .into_iter()
        .flatten()
        .filter(|e| e.get("type").and_then(Value::as_str) == Some("file"))
        .filter_map(|e| e.get("name").and_then(Value::as_str))
        .filter(|name| !name.starts_with('.'))
        .map(|name| match dir {
            "." | "" => Value::from(name),
            dir => Value::from(format!("{}/{name}", dir.trim_end_matches('/'))),
        })
        .collect()
}

fn strings(v: Option<&Value>) -> Vec<Value> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter(|v| v.is_string()).cloned().collect())
        .unwrap_or_default()
}

fn strings_at(v: Option<&Value>, field: &str) -> Vec<Value> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|i| i.get(field).cloned()).collect())
        .unwrap_or_default()
}

/// `field` of each item of the first list (in document order) whose items
/// have it: the items an agent picks its next call from, in their order,
/// not the other values under that name (an item's creator's `id`).
fn listed(value: &Value, field: &str) -> Option<Vec<Value>> {
    let scalar = |v: &Value| !v.is_object() && !v.is_array();
    match value {
        Value::Array(items) if items.iter().any(|i| i.get(field).is_some_and(scalar)) => Some(
            items
                .iter()
                .filter_map(|i| i.get(field).filter(|v| scalar(v)).cloned())
                .collect(),
        ),
        Value::Array(items) => items.iter().find_map(|v| listed(v, field)),
        Value::Object(map) => map.values().find_map(|v| listed(v, field)),
        _ => None,
    }
}

/// Every value under `field`, depth-first, in document order: for a
/// result with no list of items.
fn collect(value: &Value, field: &str, out: &mut Vec<Value>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                if k == field && !v.is_object() && !v.is_array() {
                    out.push(v.clone());
                } else {
                    collect(v, field, out);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect(v, field, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn link(tool: &str, projection: &str, arg: &str) -> FollowUpLink {
        FollowUpLink {
            tool: tool.into(),
            probability: 0.5,
            projection: Some(projection.into()),
            projection_arg: Some(arg.into()),
        }
    }

    fn values(out: &[Map<String, Value>], arg: &str) -> Vec<Value> {
        out.iter().map(|m| m[arg].clone()).collect()
    }

    #[test]
    fn glob_and_grep_results_project_distinct_paths() {
        let glob = json!({"paths": ["a.rs", "b.rs", "c.rs", "d.rs"]});
        assert_eq!(
            values(&project("glob", &glob, &link("read", "path", "path")), "path"),
            [json!("a.rs"), json!("b.rs"), json!("c.rs")]
        );
        let grep = json!({"matches": [{"path": "x.rs", "line": 1}, {"path": "x.rs", "line": 9}, {"path": "y.rs", "line": 2}]});
        assert_eq!(
            values(&project("grep", &grep, &link("read", "path", "path")), "path"),
            [json!("x.rs"), json!("y.rs")]
        );
        // Another follow-up of grep gets the paths alone.
        assert_eq!(
            project("grep", &grep, &link("open", "path", "file")),
            [json!({"file": "x.rs"}), json!({"file": "y.rs"})].map(|v| v.as_object().unwrap().clone())
        );
    }

    #[test]
    fn grep_reads_are_windows_around_the_first_match() {
        let grep = json!({"matches": [{"path": "x.rs", "line": 100}, {"path": "x.rs", "line": 300}, {"path": "y.rs", "line": 2}]});
        assert_eq!(
            project("grep", &grep, &link("read", "path", "path")),
            [
                json!({"path": "x.rs", "offset": 80, "limit": 60}),
                json!({"path": "y.rs", "offset": 1, "limit": 60})
            ]
            .map(|v| v.as_object().unwrap().clone())
        );
    }

    #[test]
    fn ls_projects_its_visible_files_below_its_directory() {
        let ls = json!({"path": "src", "entries": [
            {"name": ".hidden", "type": "file", "size": 1},
            {"name": "a.py", "type": "file", "size": 1},
            {"name": "pkg", "type": "dir", "size": 0},
            {"name": "z.py", "type": "file", "size": 1}
        ]});
        assert_eq!(
            values(&project("ls", &ls, &link("read", "path", "path")), "path"),
            [json!("src/a.py"), json!("src/z.py")]
        );
        let root = json!({"path": ".", "entries": [{"name": "README.md", "type": "file", "size": 1}]});
        assert_eq!(
            values(&project("ls", &root, &link("read", "path", "path")), "path"),
            [json!("README.md")]
        );
    }

    #[test]
    fn search_projects_only_the_top_url() {
        let r = json!({"results": [{"url": "https://a"}, {"url": "https://b"}]});
        assert_eq!(
            values(
                &project("web_search", &r, &link("web_fetch", "url", "url")),
                "url"
            ),
            [json!("https://a")]
        );
    }

    #[test]
    fn generic_projection_takes_each_item_of_the_list_in_order() {
        let r = json!({"total": 2, "issues": [{"key": "A-1", "fields": {"parent": {"key": "A-0"}}}, {"key": "A-2"}]});
        assert_eq!(
            values(
                &project("get_issues", &r, &link("get_issue", "key", "key")),
                "key"
            ),
            [json!("A-1"), json!("A-2")]
        );
        // As a knowledge base's search answers: the items' own ids, never
        // their creators' or their parents'.
        let search = json!({"object": "list", "results": [
            {"id": "p1", "created_by": {"id": "u1"}, "parent": {"id": "w"}},
            {"id": "p2", "created_by": {"id": "u1"}},
            {"id": "p3"}
        ]});
        assert_eq!(
            values(
                &project("search", &search, &link("get_page", "id", "page_id")),
                "page_id"
            ),
            [json!("p1"), json!("p2"), json!("p3")]
        );
        // A result without a list is walked whole.
        let one = json!({"issue": {"key": "A-9", "parent": {"key": "A-0"}}});
        assert_eq!(
            values(
                &project("get_issue", &one, &link("get_issue", "key", "key")),
                "key"
            ),
            [json!("A-9"), json!("A-0")]
        );
        assert!(
            project(
                "get_issues",
                &json!("formatted text"),
                &link("get_issue", "key", "key")
            )
            .is_empty()
        );
        let no_arg = FollowUpLink {
            projection_arg: None,
            ..link("get_issue", "key", "key")
        };
        assert!(project("get_issues", &r, &no_arg).is_empty());
    }
}
