//! How a recorded call of GitHub's MCP server (github-mcp-server, its tool
//! names and arguments) is made through toolhost's GitHub provider: the
//! catalog tool and arguments that ask the same of the repository, and the
//! request to GitHub's REST API that the server made for it, with the
//! answer the API gave, rebuilt from the recorded result. `rest` serves
//! those answers; `provider` makes the calls.
//!
//! A call is covered only when the catalog tool asks the same thing: one
//! with an argument the catalog cannot say (a GraphQL cursor, a draft
//! flag, a milestone), a result the recording does not hold (MCPMark's
//! client failing on an embedded resource), or a tool the catalog lacks
//! (files written, branches made, pull requests merged, workflow runs) is
//! [`Mapped::Uncovered`] with why. It owns no state and makes no request.

use std::collections::BTreeMap;

use base64::Engine;
use serde_json::{Map, Value, json};

use super::Call;

/// The default page size of github-mcp-server's list tools.
const PER_PAGE: u64 = 30;

/// A request to the REST API as the fake matches it: the path, its
/// segments decoded and empty ones dropped, and the query parameters that
/// pick what is answered (not the page, not the order).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Route {
    pub path: String,
    pub query: BTreeMap<String, String>,
}

/// The query parameters that change what a request answers, not which
/// part of it or in what order.
const IDENTITY: [&str; 11] = [
    "ref", "sha", "path", "author", "since", "until", "state", "labels", "head", "base", "q",
];

/// `%XX` escapes decoded (`+` is a space in a query).
fn decode(s: &str, query: bool) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => match u8::from_str_radix(&s[i + 1..i + 3], 16) {
                Ok(b) => {
                    out.push(b);
                    i += 3;
                    continue;
                }
                Err(_) => out.push(b'%'),
            },
            b'+' if query => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A search query as a set of words: the provider puts `repo:` last, the
/// agent wrote it anywhere.
fn words(q: &str) -> String {
    let mut words: Vec<&str> = q.split_whitespace().collect();
    words.sort_unstable();
    words.join(" ")
}

impl Route {
    /// The route of `target` (a path with an optional query), and its page
    /// (`per_page`, `page`) if it names one.
    pub fn parse(target: &str) -> (Self, Option<(u64, u64)>) {
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        let path: Vec<String> = path
            .split('/')
            .filter(|s| !s.is_empty() && *s != ".")
            .map(|s| decode(s, false))
            .collect();
        let mut picked = BTreeMap::new();
        let (mut per_page, mut page) = (None, None);
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let v = decode(v, true);
            match k {
                "per_page" => per_page = v.parse().ok(),
                "page" => page = v.parse().ok(),
                "q" => {
                    picked.insert(k.to_owned(), words(&v));
                }
                k if IDENTITY.contains(&k) && !v.is_empty() => {
                    picked.insert(k.to_owned(), v);
                }
                _ => {}
            }
        }
        let route = Route {
            path: format!("/{}", path.join("/")),
            query: picked,
        };
        (route, per_page.map(|n| (n, page.unwrap_or(1))))
    }
}

/// What the API answered the recorded call.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub body: Value,
    /// For a page of a list: the offset of its first item in the whole
    /// list, and where the items are (the body, or its field).
    pub page: Option<(u64, Option<&'static str>)>,
}

/// A recorded call as the provider makes it.
#[derive(Debug, Clone)]
pub struct Covered {
    /// The catalog tool and its arguments.
    pub tool: &'static str,
    pub args: Value,
    pub method: &'static str,
    pub route: Route,
    pub answer: Answer,
    /// Other paths the provider's call may touch (a pull request's issue,
    /// for its labels), so that its requests are told from prefetches.
    pub also: Vec<String>,
}

#[derive(Debug, Clone)]
pub enum Mapped {
    Covered(Box<Covered>),
    Uncovered(&'static str),
}

/// The repository a call names, `owner/repo`.
pub fn repository(args: &Value) -> Option<String> {
    Some(format!("{}/{}", args["owner"].as_str()?, args["repo"].as_str()?))
}

fn text_of(result: &Value) -> Option<&str> {
    result["content"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "text")?["text"]
        .as_str()
}

/// The status an error text names (`...: 422 Validation Failed`), else 404
/// for reads that found nothing and 422 for refused writes.
fn error_status(text: &str, read: bool) -> u16 {
    text.split(|c: char| !c.is_ascii_digit())
        .filter(|w| w.len() == 3)
        .filter_map(|w| w.parse::<u16>().ok())
        .find(|s| (400..600).contains(s))
        .unwrap_or(if read { 404 } else { 422 })
}

/// A page size and page from github-mcp-server's arguments.
fn paging(args: &Value) -> (u64, u64) {
    let per_page = args["perPage"].as_u64().unwrap_or(PER_PAGE);
    (per_page, args["page"].as_u64().unwrap_or(1).max(1))
}

/// Arguments with the `None`s and empty strings left out.
fn object(pairs: &[(&str, Option<Value>)]) -> Value {
    let map: Map<String, Value> = pairs
        .iter()
        .filter_map(|(k, v)| Some(((*k).to_owned(), v.clone()?)))
        .filter(|(_, v)| v.as_str() != Some(""))
        .collect();
    Value::Object(map)
}

fn string(args: &Value, name: &str) -> Option<Value> {
    args.get(name).filter(|v| v.is_string()).cloned()
}

/// `path?query`, its values encoded as the provider encodes them.
fn target(path: &str, query: &[(&str, Option<Value>)]) -> String {
    let pairs: Vec<String> = query
        .iter()
        .filter_map(|(k, v)| {
            let v = v.as_ref()?;
            let v = v.as_str().map_or_else(|| v.to_string(), str::to_owned);
            (!v.is_empty()).then(|| format!("{k}={}", encode(&v)))
        })
        .collect();
    if pairs.is_empty() {
        path.to_owned()
    } else {
        format!("{path}?{}", pairs.join("&"))
    }
}

fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b'/' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Whether `args` holds only `known` keys (and the repository's).
fn only(args: &Value, known: &[&str]) -> bool {
    args.as_object().is_some_and(|m| {
        m.keys()
            .all(|k| k == "owner" || k == "repo" || known.contains(&k.as_str()))
    })
}

/// Recorded JSON text; a list cut short by the converter (`truncated`
/// `head`: the first 16 KiB kept) as the items it holds whole, which is
/// all the recording knows of that page.
fn parse_or_whole_items(text: &str) -> Option<Value> {
    if let Ok(v) = serde_json::from_str::<Value>(text) {
        return Some(v);
    }
    if !text.trim_start().starts_with('[') {
        return None;
    }
    // Where each top-level item ends: depth back to 1 outside a string.
    let (mut depth, mut in_string, mut escaped, mut last_end) = (0usize, false, false, None);
    for (i, b) in text.bytes().enumerate() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => depth += 1,
            b']' | b'}' => {
                depth = depth.saturating_sub(1);
                if depth == 1 {
                    last_end = Some(i);
                }
            }
            _ => {}
        }
    }
    serde_json::from_str(&format!("{}]", &text[..=last_end?])).ok()
}

/// A recorded file read's answer as the contents API gives it: a
/// directory's listing as recorded, a file base64-encoded with the SHA the
/// server's text names.
fn contents(result: &Value, path: &str) -> Option<Value> {
    let items = result["content"].as_array()?;
    if let Some(listing) = text_of(result).and_then(|t| serde_json::from_str::<Value>(t).ok())
        && listing.is_array()
    {
        return Some(listing);
    }
    let resource = items.iter().find(|c| c["type"] == "resource")?;
    let (content, size) = match (
        resource["resource"]["text"].as_str(),
        resource["resource"]["blob"].as_str(),
    ) {
        (Some(text), _) => (base64::engine::general_purpose::STANDARD.encode(text), text.len()),
        (None, Some(blob)) => (blob.to_owned(), blob.len() * 3 / 4),
        _ => return None,
    };
    let sha = text_of(result)
        .and_then(|t| t.split("SHA: ").nth(1))
        .map(|s| s.trim_end_matches(')').trim().to_owned());
    let name = path.rsplit('/').next().unwrap_or(path);
    Some(
        json!({"type": "file", "encoding": "base64", "content": content, "size": size,
                "name": name, "path": path, "sha": sha}),
    )
}

/// How `call` (of a trajectory on `repo`) is made through the provider.
pub fn map(repo: &str, call: &Call) -> Mapped {
    let args = &call.args;
    if repository(args).as_deref().is_some_and(|r| r != repo) {
        return Mapped::Uncovered("another repository than the trajectory's");
    }
    let Some(result) = &call.result else {
        return Mapped::Uncovered("no recorded result");
    };
    if call.error_from.as_deref() == Some("harness") {
        return Mapped::Uncovered("no server answer recorded (the harness failed)");
    }
    let failed = call.error_from.is_some();
    let base = format!("/repos/{repo}");
    let number = |name: &str| args[name].as_u64();
    let json_text = || text_of(result).and_then(parse_or_whole_items);
    // The answer: the recorded error's status, else the recorded JSON.
    let answer = |status: u16, body: Option<Value>, page: Option<(u64, Option<&'static str>)>| {
        if failed {
            let text = text_of(result).unwrap_or_default();
            return Some(Answer {
                status: error_status(text, call.read),
                body: json!({"message": text}),
                page: None,
            });
        }
        Some(Answer {
            status,
            body: body?,
            page,
        })
    };
    let (per_page, page) = paging(args);
    let window = |tool_args: Vec<(&str, Option<Value>)>| {
        let mut all = tool_args;
        all.push(("limit", Some(json!(per_page))));
        if page > 1 {
            all.push(("offset", Some(json!((page - 1) * per_page))));
        }
        object(&all)
    };
    let start = (page - 1) * per_page;
    let paged = [("per_page", Some(json!(per_page))), ("page", Some(json!(page)))];
    let covered = |tool: &'static str,
                   args: Value,
                   method: &'static str,
                   target: String,
                   answer: Option<Answer>,
                   also: Vec<String>| {
        let Some(answer) = answer else {
            return Mapped::Uncovered("the recorded result does not parse (cut)");
        };
        Mapped::Covered(Box::new(Covered {
            tool,
            args,
            method,
            route: Route::parse(&target).0,
            answer,
            also,
        }))
    };
    match call.tool.as_str() {
        "get_file_contents" => {
            if !only(args, &["path", "ref", "sha"]) {
                return Mapped::Uncovered("an argument the catalog has no word for");
            }
            let path = args["path"]
                .as_str()
                .unwrap_or_default()
                .trim_matches('/')
                .to_owned();
            let at = string(args, "sha").or_else(|| string(args, "ref"));
            let target = target(&format!("{base}/contents/{path}"), &[("ref", at.clone())]);
            let tool_args = object(&[("path", Some(json!(path))), ("ref", at)]);
            let body = if failed { None } else { contents(result, &path) };
            covered(
                "get_repository_file",
                tool_args,
                "GET",
                target,
                answer(200, body, None),
                vec![],
            )
        }
        "list_commits" => {
            if !only(
                args,
                &["sha", "path", "author", "since", "until", "perPage", "page"],
            ) {
                return Mapped::Uncovered("an argument the catalog has no word for");
            }
            let picked: Vec<(&str, Option<Value>)> = ["sha", "path", "author", "since", "until"]
                .iter()
                .map(|k| (*k, string(args, k)))
                .collect();
            let mut query = picked.clone();
            query.extend(paged.clone());
            let tool_args: Vec<(&str, Option<Value>)> = picked
                .into_iter()
                .map(|(k, v)| (if k == "sha" { "ref" } else { k }, v))
                .collect();
            covered(
                "get_commits",
                window(tool_args),
                "GET",
                target(&format!("{base}/commits"), &query),
                answer(200, json_text(), Some((start, None))),
                vec![],
            )
        }
        "get_commit" => {
            let Some(sha) = args["sha"].as_str() else {
                return Mapped::Uncovered("no sha");
            };
            covered(
                "get_commit",
                json!({"sha": sha}),
                "GET",
                format!("{base}/commits/{}", encode(sha)),
                answer(200, json_text(), None),
                vec![],
            )
        }
        "list_branches" => covered(
            "get_branches",
            window(vec![]),
            "GET",
            target(&format!("{base}/branches"), &paged),
            answer(200, json_text(), Some((start, None))),
            vec![],
        ),
        "search_code" => {
            let query = args["query"].as_str().unwrap_or_default();
            let scope = format!("repo:{repo}");
            if !query.split_whitespace().any(|w| w == scope) || !only(args, &["query", "perPage", "page"]) {
                return Mapped::Uncovered("a search beyond the repository, or ordered");
            }
            let text: Vec<&str> = query.split_whitespace().filter(|w| *w != scope).collect();
            let mut q = vec![("q", Some(json!(query)))];
            q.extend(paged.clone());
            covered(
                "search_code",
                window(vec![("query", Some(json!(text.join(" "))))]),
                "GET",
                target("/search/code", &q),
                answer(200, json_text(), Some((start, Some("items")))),
                vec![],
            )
        }
        "list_issues" => {
            // A GraphQL cursor (`after`) or a `since` the catalog cannot say.
            if !only(args, &["state", "labels", "perPage"]) {
                return Mapped::Uncovered("an argument the catalog has no word for");
            }
            let state = args["state"]
                .as_str()
                .map_or_else(|| "all".to_owned(), str::to_lowercase);
            let labels: Vec<String> = args["labels"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|l| l.as_str().map(str::to_owned))
                .collect();
            let labels_arg = (!labels.is_empty()).then(|| json!(labels));
            let query = [
                ("state", Some(json!(state))),
                ("labels", Some(json!(labels.join(",")))),
            ];
            // The server's GraphQL answer as the REST list: its issues, states
            // in REST's lower case.
            let body = json_text().map(|v| {
                let mut issues = v["issues"].as_array().cloned().unwrap_or_default();
                for i in &mut issues {
                    if let Some(s) = i["state"].as_str() {
                        i["state"] = json!(s.to_lowercase());
                    }
                }
                Value::Array(issues)
            });
            covered(
                "get_issues",
                window(vec![("state", Some(json!(state))), ("labels", labels_arg)]),
                "GET",
                target(&format!("{base}/issues"), &query),
                answer(200, body, Some((0, None))),
                vec![],
            )
        }
        "get_issue" => {
            let Some(n) = number("issue_number") else {
                return Mapped::Uncovered("no issue number");
            };
            covered(
                "get_issue",
                json!({"key": format!("#{n}")}),
                "GET",
                format!("{base}/issues/{n}"),
                answer(200, json_text(), None),
                vec![],
            )
        }
        "list_pull_requests" => {
            let state = args["state"].as_str().unwrap_or("open");
            // The catalog's `closed` leaves merged pull requests out.
            if state == "closed" || !only(args, &["state", "head", "base", "perPage", "page"]) {
                return Mapped::Uncovered("closed-or-merged, or ordered: the catalog cannot say it");
            }
            let owner = repo.split('/').next().unwrap_or_default();
            let head = args["head"]
                .as_str()
                .map(|h| h.rsplit(':').next().unwrap_or(h).to_owned());
            let query = [
                ("state", Some(json!(state))),
                ("head", head.as_ref().map(|h| json!(format!("{owner}:{h}")))),
                ("base", string(args, "base")),
                paged[0].clone(),
                paged[1].clone(),
            ];
            covered(
                "get_merge_requests",
                window(vec![
                    ("state", Some(json!(state))),
                    ("source_branch", head.map(|h| json!(h))),
                    ("target_branch", string(args, "base")),
                ]),
                "GET",
                target(&format!("{base}/pulls"), &query),
                answer(200, json_text(), Some((start, None))),
                vec![],
            )
        }
        "get_pull_request" | "get_pull_request_files" => {
            let Some(n) = number("pullNumber") else {
                return Mapped::Uncovered("no pull request number");
            };
            let files = call.tool == "get_pull_request_files";
            if files && page > 1 {
                return Mapped::Uncovered("a later page of a pull request's files");
            }
            let (tool, path, page) = if files {
                (
                    "get_merge_request_diffs",
                    format!("{base}/pulls/{n}/files"),
                    Some((0, None)),
                )
            } else {
                ("get_merge_request", format!("{base}/pulls/{n}"), None)
            };
            covered(
                tool,
                json!({"key": format!("pr#{n}")}),
                "GET",
                path,
                answer(200, json_text(), page),
                vec![],
            )
        }
        "create_issue" => {
            if !only(args, &["title", "body", "labels", "assignees"]) {
                return Mapped::Uncovered("an argument the catalog has no word for");
            }
            covered(
                "create_issue",
                object(&[
                    ("title", string(args, "title")),
                    ("description", string(args, "body")),
                    ("labels", args.get("labels").cloned()),
                    ("assignees", args.get("assignees").cloned()),
                ]),
                "POST",
                format!("{base}/issues"),
                answer(201, json_text(), None),
                vec![],
            )
        }
        "update_issue" => {
            let Some(n) = number("issue_number") else {
                return Mapped::Uncovered("no issue number");
            };
            if !only(
                args,
                &["issue_number", "title", "body", "state", "labels", "assignees"],
            ) {
                return Mapped::Uncovered("an argument the catalog has no word for");
            }
            covered(
                "update_issue",
                object(&[
                    ("key", Some(json!(format!("#{n}")))),
                    ("title", string(args, "title")),
                    ("description", string(args, "body")),
                    ("state", string(args, "state")),
                    ("labels", args.get("labels").cloned()),
                    ("assignees", args.get("assignees").cloned()),
                ]),
                "PATCH",
                format!("{base}/issues/{n}"),
                answer(200, json_text(), None),
                vec![],
            )
        }
        "add_issue_comment" => {
            let Some(n) = number("issue_number") else {
                return Mapped::Uncovered("no issue number");
            };
            covered(
                "add_issue_comment",
                object(&[
                    ("key", Some(json!(format!("#{n}")))),
                    ("body", string(args, "body")),
                ]),
                "POST",
                format!("{base}/issues/{n}/comments"),
                answer(201, json_text(), None),
                vec![],
            )
        }
        "create_pull_request" => {
            if !only(args, &["title", "head", "base", "body", "draft"]) {
                return Mapped::Uncovered("an argument the catalog has no word for");
            }
            covered(
                "create_merge_request",
                object(&[
                    ("title", string(args, "title")),
                    ("source_branch", string(args, "head")),
                    ("target_branch", string(args, "base")),
                    ("description", string(args, "body")),
                    ("draft", args.get("draft").cloned()),
                ]),
                "POST",
                format!("{base}/pulls"),
                answer(201, json_text(), None),
                vec![],
            )
        }
        "update_pull_request" => {
            let Some(n) = number("pullNumber") else {
                return Mapped::Uncovered("no pull request number");
            };
            // GitHub's REST API cannot change a draft: the provider refuses it.
            if !only(
                args,
                &["pullNumber", "title", "body", "state", "base", "reviewers"],
            ) {
                return Mapped::Uncovered("an argument the catalog has no word for");
            }
            covered(
                "update_merge_request",
                object(&[
                    ("key", Some(json!(format!("pr#{n}")))),
                    ("title", string(args, "title")),
                    ("description", string(args, "body")),
                    ("state", string(args, "state")),
                    ("target_branch", string(args, "base")),
                    ("reviewers", args.get("reviewers").cloned()),
                ]),
                "PATCH",
                format!("{base}/pulls/{n}"),
                answer(200, json_text(), None),
                vec![
                    format!("{base}/issues/{n}"),
                    format!("{base}/pulls/{n}/requested_reviewers"),
                ],
            )
        }
        _ => Mapped::Uncovered("no catalog tool"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_match_whatever_the_encoding_and_order() {
        let (a, page) = Route::parse("/repos/o/r/contents/a%20b/c.rs?ref=dev&per_page=5&page=2");
        assert_eq!(a.path, "/repos/o/r/contents/a b/c.rs");
        assert_eq!(page, Some((5, 2)));
        let (b, _) = Route::parse("/repos/o/r/contents//a b/c.rs/?ref=dev");
        assert_eq!(a, b);
        let (q1, _) = Route::parse("/search/code?q=repo%3Ao%2Fr+%22x+y%22");
        let (q2, _) = Route::parse("/search/code?q=%22x%20y%22%20repo%3Ao%2Fr&sort=z");
        assert_eq!(q1, q2);
    }

    #[test]
    fn a_list_cut_short_keeps_its_whole_items() {
        let cut = r#"[{"sha":"a","x":[1,"]}"]},{"sha":"b"},{"sha":"c","y":"#;
        assert_eq!(
            parse_or_whole_items(cut),
            Some(json!([{"sha": "a", "x": [1, "]}"]}, {"sha": "b"}]))
        );
        assert_eq!(parse_or_whole_items(r#"{"a":"#), None);
    }
}
