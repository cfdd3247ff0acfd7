//! The repository's contents and history: a file or directory at a ref
//! (`contents/{path}`), commits (list and one, with its changed files),
//! branches, and code search. All reads; file content and diffs are bounded
//! (`provider_kit::repo`).

use provider_kit::api::{encode, flag, optional, required, result, with_query};
use provider_kit::repo::{self, bound_diffs, clean_path, decode_base64, encode_segments, file_content};
use toolhost_sdk::{ToolError, ToolResult, Value, json};

use crate::GitHub;

/// Most entries a directory listing returns (GitHub's contents API lists at
/// most 1000).
const MAX_ENTRIES: usize = 1000;

/// The first line of a commit message.
fn title(message: &str) -> &str {
    message.lines().next().unwrap_or("")
}

/// A commit as the list returns it.
fn commit(c: &Value) -> Value {
    let sha = c["sha"].as_str().unwrap_or("");
    let message = c["commit"]["message"].as_str().unwrap_or("");
    let parents: Vec<Value> = c["parents"]
        .as_array()
        .map(|ps| ps.iter().map(|p| p["sha"].clone()).collect())
        .unwrap_or_default();
    json!({
        "sha": sha,
        "short_sha": sha.get(..7).unwrap_or(sha),
        "title": title(message),
        "author": c["author"]["login"].as_str().or_else(|| c["commit"]["author"]["name"].as_str()),
        "author_name": c["commit"]["author"]["name"],
        "authored_at": c["commit"]["author"]["date"],
        "committed_at": c["commit"]["committer"]["date"],
        "parents": parents,
        "url": c["html_url"],
    })
}

impl GitHub {
    pub fn get_repository_file(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "get_repository_file";
        let path = clean_path("GitHub", tool, &optional(args, "path").unwrap_or_default())?;
        let at = optional(args, "ref");
        let url = if path.is_empty() {
            format!("/repos/{}/contents", self.repo)
        } else {
            format!("/repos/{}/contents/{}", self.repo, encode_segments(&path))
        };
        let reply = self.api.get(
            tool,
            &with_query(&url, &[("ref", at.clone().unwrap_or_default())]),
        )?;
        let shown = if path.is_empty() { "/" } else { path.as_str() };
        let at_text = at.as_deref().map(|r| format!(" at {r}")).unwrap_or_default();
        if let Some(list) = reply.body.as_array() {
            let entries: Vec<Value> = list
                .iter()
                .take(MAX_ENTRIES)
                .map(|e| json!({"name": e["name"], "path": e["path"], "type": e["type"], "size": e["size"]}))
                .collect();
            let summary = format!("{} entr(ies) in {shown}{at_text}", entries.len());
            let mut value = json!({"type": "dir", "path": path, "entries": entries});
            if let Some(r) = at {
                value["ref"] = json!(r);
            }
            return Ok(result(summary, value));
        }
        let body = &reply.body;
        let kind = body["type"].as_str().unwrap_or("file");
        let mut value = json!({"type": kind, "path": body["path"], "name": body["name"], "size": body["size"],
                               "sha": body["sha"], "url": body["html_url"]});
        if let Some(r) = &at {
            value["ref"] = json!(r);
        }
        let size = body["size"].as_u64().unwrap_or(0);
        let summary = match (kind, body["encoding"].as_str(), body["content"].as_str()) {
            ("file", Some("base64"), Some(content)) => {
                let bytes = decode_base64(content).ok_or_else(|| {
                    ToolError::Failed(format!(
                        "GitHub {tool}: `{path}` came back with content that is not base64"
                    ))
                })?;
                let read = file_content(&bytes);
                for f in ["content", "truncated", "binary"] {
                    value[f] = read[f].clone();
                }
                if read["binary"] == json!(true) {
                    format!("{shown}{at_text}: a binary file of {size} bytes (content not shown)")
                } else if read["truncated"] == json!(true) {
                    format!(
                        "{shown}{at_text}: {size} bytes, truncated to the first {} KiB",
                        repo::MAX_FILE_BYTES / 1024
                    )
                } else {
                    format!("{shown}{at_text}: {size} bytes")
                }
            }
            // Files over 1 MB: the contents API gives no content.
            ("file", _, _) => {
                value["content"] = Value::Null;
                value["truncated"] = json!(true);
                format!(
                    "{shown}{at_text}: {size} bytes, too large for GitHub's contents API (content not shown)"
                )
            }
            ("symlink", _, _) => {
                value["target"] = body["target"].clone();
                format!(
                    "{shown}{at_text}: a symlink to {}",
                    body["target"].as_str().unwrap_or("?")
                )
            }
            ("submodule", _, _) => {
                value["submodule_url"] = body["submodule_git_url"].clone();
                format!(
                    "{shown}{at_text}: a submodule at {}",
                    body["sha"].as_str().unwrap_or("?")
                )
            }
            (other, _, _) => format!("{shown}{at_text}: a {other}"),
        };
        Ok(result(summary, value))
    }

    pub fn get_commits(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "get_commits";
        let mut query = vec![("sha", optional(args, "ref").unwrap_or_default())];
        if let Some(p) = optional(args, "path") {
            query.push(("path", clean_path("GitHub", tool, &p)?));
        }
        for arg in ["author", "since", "until"] {
            query.push((arg, optional(args, arg).unwrap_or_default()));
        }
        let path = format!("/repos/{}/commits", self.repo);
        let (found, more) = self.list(tool, &path, &query, None, Self::window(args, 20)?, |_| true)?;
        let commits: Vec<Value> = found.iter().map(commit).collect();
        let summary = format!(
            "{} commit(s) on {} in {}{}",
            commits.len(),
            optional(args, "ref").unwrap_or_else(|| "the default branch".into()),
            self.repo,
            if more { " (more: raise offset)" } else { "" }
        );
        Ok(result(summary, json!({"commits": commits, "has_more": more})))
    }

    pub fn get_commit(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "get_commit";
        let sha = required(args, "sha")?;
        let diffs = flag(args, "includeDiffs")?.unwrap_or(true);
        let reply = self
            .api
            .get(tool, &format!("/repos/{}/commits/{}", self.repo, encode(&sha)))?;
        let body = &reply.body;
        let mut value = commit(body);
        value["message"] = body["commit"]["message"].clone();
        value["author_email"] = body["commit"]["author"]["email"].clone();
        value["stats"] =
            json!({"additions": body["stats"]["additions"], "deletions": body["stats"]["deletions"]});
        let mut files: Vec<Value> = body["files"]
            .as_array()
            .map(|fs| {
                fs.iter()
                    .map(|f| {
                        let mut file = json!({"path": f["filename"],
                            "old_path": f.get("previous_filename").unwrap_or(&f["filename"]),
                            "status": f["status"], "additions": f["additions"], "deletions": f["deletions"]});
                        if diffs {
                            file["diff"] = f.get("patch").cloned().unwrap_or(Value::Null);
                        }
                        file
                    })
                    .collect()
            })
            .unwrap_or_default();
        let cut = bound_diffs(&mut files);
        let summary = format!(
            "{} {} by {} ({} file(s) changed{})",
            value["short_sha"].as_str().unwrap_or(""),
            value["title"].as_str().unwrap_or(""),
            value["author"].as_str().unwrap_or("?"),
            files.len(),
            if cut { "; diffs truncated" } else { "" }
        );
        value["files"] = json!(files);
        value["diffs_truncated"] = json!(cut);
        Ok(result(summary, value))
    }

    pub fn get_branches(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "get_branches";
        // GitHub's branch list filters by nothing: `search` is kept here.
        let search = optional(args, "search").map(|s| s.to_lowercase());
        let keep = |b: &Value| {
            search
                .as_ref()
                .is_none_or(|s| b["name"].as_str().is_some_and(|n| n.to_lowercase().contains(s)))
        };
        let path = format!("/repos/{}/branches", self.repo);
        let (found, more) = self.list(tool, &path, &[], None, Self::window(args, 30)?, keep)?;
        let branches: Vec<Value> = found
            .iter()
            .map(|b| json!({"name": b["name"], "sha": b["commit"]["sha"], "protected": b["protected"]}))
            .collect();
        let summary = format!(
            "{} branch(es) in {}{}",
            branches.len(),
            self.repo,
            if more { " (more: raise offset)" } else { "" }
        );
        Ok(result(summary, json!({"branches": branches, "has_more": more})))
    }

    pub fn search_code(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "search_code";
        let text = required(args, "query")?;
        // GitHub's code search covers the default branch of the repository
        // the query names.
        let query = [("q", format!("{text} repo:{}", self.repo))];
        let (found, more) = self.list(
            tool,
            "/search/code",
            &query,
            Some("items"),
            Self::window(args, 20)?,
            |_| true,
        )?;
        let matches: Vec<Value> = found
            .iter()
            .map(|m| json!({"path": m["path"], "name": m["name"], "sha": m["sha"], "url": m["html_url"]}))
            .collect();
        let summary = format!(
            "{} file(s) in {} match `{text}`{}",
            matches.len(),
            self.repo,
            if more { " (more: raise offset)" } else { "" }
        );
        Ok(result(
            summary,
            json!({"query": text, "matches": matches, "has_more": more}),
        ))
    }
}
