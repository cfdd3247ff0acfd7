//! The project's repository: a file (`repository/files/{path}`, the path
//! URL-encoded whole) or a directory (`repository/tree`) at a ref, commits
//! (list, and one with its diff), branches, and blob search
//! (`search?scope=blobs`). All reads; file content and diffs are bounded
//! (`provider_kit::repo`).

use provider_kit::api::{encode, flag, optional, required, result, with_query};
use provider_kit::repo::{self, bound_diffs, bounded, clean_path, decode_base64, file_content};
use toolhost_sdk::{ToolError, ToolResult, Value, json};

use crate::GitLab;

/// Most entries a directory listing returns.
const MAX_ENTRIES: u64 = 1000;
/// Most changed files a commit lists.
const MAX_DIFF_FILES: u64 = 1000;
/// Longest search snippet, in bytes.
const MAX_SNIPPET: usize = 1024;

/// A commit as the tools return it.
fn commit(c: &Value) -> Value {
    json!({
        "sha": c["id"],
        "short_sha": c["short_id"],
        "title": c["title"],
        "author": c["author_name"],
        "author_name": c["author_name"],
        "authored_at": c["authored_date"],
        "committed_at": c["committed_date"],
        "parents": c["parent_ids"].as_array().cloned().unwrap_or_default(),
        "url": c["web_url"],
    })
}

/// A tree entry's type in the catalog's words.
fn entry_type(kind: &str) -> &str {
    match kind {
        "tree" => "dir",
        "blob" => "file",
        "commit" => "submodule",
        other => other,
    }
}

/// What a diff entry of GitLab's (a commit's or a merge request's) did to
/// its file, in the words both git providers answer with.
pub(crate) fn change_status(f: &Value) -> &'static str {
    if f["new_file"] == json!(true) {
        "added"
    } else if f["deleted_file"] == json!(true) {
        "removed"
    } else if f["renamed_file"] == json!(true) {
        "renamed"
    } else {
        "modified"
    }
}

/// Lines added and removed by a unified diff without file headers (as
/// GitLab gives it).
fn counts(diff: &str) -> (usize, usize) {
    diff.lines().fold((0, 0), |(a, d), l| match l.as_bytes().first() {
        Some(b'+') => (a + 1, d),
        Some(b'-') => (a, d + 1),
        _ => (a, d),
    })
}

impl GitLab {
    pub(crate) fn get_repository_file(&self, p: &str, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "get_repository_file";
        let path = clean_path("GitLab", tool, &optional(args, "path").unwrap_or_default())?;
        let at = optional(args, "ref");
        if path.is_empty() {
            return self.tree(p, tool, &path, at, None);
        }
        // `HEAD` is the default branch.
        let url = with_query(
            &format!("{p}/repository/files/{}", encode(&path)),
            &[("ref", at.clone().unwrap_or_else(|| "HEAD".into()))],
        );
        let reply = match self.api.get(tool, &url) {
            // A directory is no file: its tree, if it has one.
            Err(ToolError::NotFound(why)) => return self.tree(p, tool, &path, at, Some(why)),
            other => other?,
        };
        let body = &reply.body;
        let size = body["size"].as_u64().unwrap_or(0);
        let bytes = match body["encoding"].as_str() {
            Some("base64") => decode_base64(body["content"].as_str().unwrap_or("")),
            _ => body["content"].as_str().map(|t| t.as_bytes().to_vec()),
        }
        .ok_or_else(|| {
            ToolError::Failed(format!(
                "GitLab {tool}: `{path}` came back without readable content"
            ))
        })?;
        let read = file_content(&bytes);
        let mut value = json!({"type": "file", "path": body["file_path"], "name": body["file_name"], "size": size,
                               "sha": body["blob_id"], "commit_sha": body["commit_id"]});
        for f in ["content", "truncated", "binary"] {
            value[f] = read[f].clone();
        }
        if let Some(r) = &at {
            value["ref"] = json!(r);
        }
        let at_text = at.as_deref().map(|r| format!(" at {r}")).unwrap_or_default();
        let summary = if read["binary"] == json!(true) {
            format!("{path}{at_text}: a binary file of {size} bytes (content not shown)")
        } else if read["truncated"] == json!(true) {
            format!(
                "{path}{at_text}: {size} bytes, truncated to the first {} KiB",
                repo::MAX_FILE_BYTES / 1024
            )
        } else {
            format!("{path}{at_text}: {size} bytes")
        };
        Ok(result(summary, value))
    }

    /// The entries of directory `path` (the root if empty); `not_file` is
    /// why it was not read as a file, the error if it is no directory either.
    fn tree(
        &self,
        p: &str,
        tool: &str,
        path: &str,
        at: Option<String>,
        not_file: Option<String>,
    ) -> Result<ToolResult, ToolError> {
        let query = [("path", path.to_owned()), ("ref", at.clone().unwrap_or_default())];
        let all = json!({"limit": MAX_ENTRIES});
        let found = match self.list(tool, &format!("{p}/repository/tree"), &query, &all, MAX_ENTRIES) {
            Ok((found, _)) => found,
            Err(ToolError::NotFound(_)) if not_file.is_some() => Vec::new(),
            Err(e) => return Err(e),
        };
        if let Some(why) = not_file
            && found.is_empty()
        {
            return Err(ToolError::NotFound(why));
        }
        let entries: Vec<Value> = found
            .iter()
            .map(|e| {
                json!({"name": e["name"], "path": e["path"],
                       "type": entry_type(e["type"].as_str().unwrap_or("")), "size": Value::Null})
            })
            .collect();
        let shown = if path.is_empty() { "/" } else { path };
        let at_text = at.as_deref().map(|r| format!(" at {r}")).unwrap_or_default();
        let summary = format!("{} entr(ies) in {shown}{at_text}", entries.len());
        let mut value = json!({"type": "dir", "path": path, "entries": entries});
        if let Some(r) = at {
            value["ref"] = json!(r);
        }
        Ok(result(summary, value))
    }

    pub(crate) fn get_commits(&self, p: &str, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "get_commits";
        let mut query = vec![("ref_name", optional(args, "ref").unwrap_or_default())];
        if let Some(path) = optional(args, "path") {
            query.push(("path", clean_path("GitLab", tool, &path)?));
        }
        for arg in ["author", "since", "until"] {
            query.push((arg, optional(args, arg).unwrap_or_default()));
        }
        let (found, more) = self.list(tool, &format!("{p}/repository/commits"), &query, args, 20)?;
        let commits: Vec<Value> = found.iter().map(commit).collect();
        let summary = format!(
            "{} commit(s) on {}{}",
            commits.len(),
            optional(args, "ref").unwrap_or_else(|| "the default branch".into()),
            if more { " (more: raise offset)" } else { "" }
        );
        Ok(result(summary, json!({"commits": commits, "has_more": more})))
    }

    pub(crate) fn get_commit(&self, p: &str, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "get_commit";
        let sha = required(args, "sha")?;
        let diffs = flag(args, "includeDiffs")?.unwrap_or(true);
        let reply = self
            .api
            .get(tool, &format!("{p}/repository/commits/{}", encode(&sha)))?;
        let body = &reply.body;
        // The diff of the commit found, not of wherever a ref now points.
        let id = body["id"].as_str().unwrap_or(&sha).to_owned();
        let all = json!({"limit": MAX_DIFF_FILES});
        let path = format!("{p}/repository/commits/{}/diff", encode(&id));
        let (found, more_files) = self.list(tool, &path, &[], &all, MAX_DIFF_FILES)?;
        let mut files: Vec<Value> = found
            .iter()
            .map(|f| {
                let status = change_status(f);
                let (additions, deletions) = counts(f["diff"].as_str().unwrap_or(""));
                let mut file = json!({"path": f["new_path"], "old_path": f["old_path"], "status": status,
                                      "additions": additions, "deletions": deletions});
                if diffs {
                    file["diff"] = f["diff"].clone();
                }
                file
            })
            .collect();
        let cut = bound_diffs(&mut files) || more_files;
        let mut value = commit(body);
        value["message"] = body["message"].clone();
        value["author_email"] = body["author_email"].clone();
        value["stats"] =
            json!({"additions": body["stats"]["additions"], "deletions": body["stats"]["deletions"]});
        let summary = format!(
            "{} {} by {} ({} file(s) changed{})",
            body["short_id"].as_str().unwrap_or(""),
            body["title"].as_str().unwrap_or(""),
            body["author_name"].as_str().unwrap_or("?"),
            files.len(),
            if cut { "; diffs truncated" } else { "" }
        );
        value["files"] = json!(files);
        value["diffs_truncated"] = json!(cut);
        Ok(result(summary, value))
    }

    pub(crate) fn get_branches(&self, p: &str, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "get_branches";
        let query = [("search", optional(args, "search").unwrap_or_default())];
        let (found, more) = self.list(tool, &format!("{p}/repository/branches"), &query, args, 30)?;
        let branches: Vec<Value> = found
            .iter()
            .map(|b| {
                json!({"name": b["name"], "sha": b["commit"]["id"], "protected": b["protected"],
                       "default": b["default"], "merged": b["merged"]})
            })
            .collect();
        let summary = format!(
            "{} branch(es){}",
            branches.len(),
            if more { " (more: raise offset)" } else { "" }
        );
        Ok(result(summary, json!({"branches": branches, "has_more": more})))
    }

    pub(crate) fn search_code(&self, p: &str, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "search_code";
        let text = required(args, "query")?;
        let query = [("scope", "blobs".to_owned()), ("search", text.clone())];
        let (found, more) = self.list(tool, &format!("{p}/search"), &query, args, 20)?;
        let matches: Vec<Value> = found
            .iter()
            .map(|m| {
                let snippet = m["data"].as_str().map(|d| bounded(d, MAX_SNIPPET).0);
                json!({"path": m["path"], "name": m["filename"], "ref": m["ref"], "line": m["startline"],
                       "snippet": snippet})
            })
            .collect();
        let summary = format!(
            "{} match(es) for `{text}`{}",
            matches.len(),
            if more { " (more: raise offset)" } else { "" }
        );
        Ok(result(
            summary,
            json!({"query": text, "matches": matches, "has_more": more}),
        ))
    }
}
