//! GitHub pull requests as the catalog's merge requests: list, read,
//! discussions (the conversation's comments, reviews, and review comment
//! threads on diff lines), diffs (the changed files with patches), and the
//! writes (open, update, comment). Keys are `pr#12`.

use provider_kit::api::{flag, optional, required, result, strings, uint};
use toolhost_sdk::{ToolError, ToolResult, Value, json};

use crate::GitHub;
use crate::tools::{names, number};

/// A pull request as the tools return it. `state` is `merged` for a
/// merged one (GitHub says `closed` with a `merged_at`).
fn pull(p: &Value) -> Value {
    let state = if !p["merged_at"].is_null() {
        "merged"
    } else {
        p["state"].as_str().unwrap_or("")
    };
    json!({
        "key": format!("pr#{}", p["number"]),
        "number": p["number"],
        "title": p["title"],
        "state": state,
        "draft": p["draft"],
        "author": p["user"]["login"],
        "source_branch": p["head"]["ref"],
        "target_branch": p["base"]["ref"],
        "head_sha": p["head"]["sha"],
        "labels": names(p, "labels", "name"),
        "reviewers": names(p, "requested_reviewers", "login"),
        "url": p["html_url"],
        "created_at": p["created_at"],
        "updated_at": p["updated_at"],
    })
}

fn note(c: &Value) -> Value {
    json!({"id": c["id"], "author": c["user"]["login"], "body": c["body"],
           "created_at": c.get("created_at").or_else(|| c.get("submitted_at"))})
}

/// The review comments threaded by `in_reply_to_id`, in the order GitHub
/// lists their first comments.
fn threads(comments: &[Value]) -> Vec<Value> {
    let mut threads: Vec<Value> = Vec::new();
    for c in comments {
        let root = c.get("in_reply_to_id").filter(|r| !r.is_null());
        let found = root.and_then(|r| threads.iter_mut().find(|t| t["id"] == json!(r.to_string())));
        match found {
            Some(thread) => thread["notes"]
                .as_array_mut()
                .expect("threads hold notes")
                .push(note(c)),
            None => threads.push(json!({
                "id": c["id"].to_string(),
                "kind": "review_thread",
                "path": c["path"],
                "line": c["line"].as_u64().or_else(|| c["original_line"].as_u64()),
                "side": c["side"],
                "commit_sha": c["commit_id"],
                "created_at": c["created_at"],
                "notes": [note(c)],
            })),
        }
    }
    threads
}

impl GitHub {
    fn pull_path(&self, n: u64) -> String {
        format!("/repos/{}/pulls/{n}", self.repo)
    }

    pub fn get_merge_requests(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "get_merge_requests";
        let state = optional(args, "state").unwrap_or_else(|| "open".into());
        let owner = self.repo.split('/').next().unwrap_or_default();
        let query = [
            (
                "state",
                if state == "merged" {
                    "closed".into()
                } else {
                    state.clone()
                },
            ),
            (
                "head",
                optional(args, "source_branch")
                    .map(|b| format!("{owner}:{b}"))
                    .unwrap_or_default(),
            ),
            ("base", optional(args, "target_branch").unwrap_or_default()),
        ];
        let author = optional(args, "author");
        let labels = strings(args, "labels")?.unwrap_or_default();
        // GitHub lists closed and merged together and filters by neither
        // author nor label: those are kept here, page after page.
        let keep = |p: &Value| {
            let merged = !p["merged_at"].is_null();
            let state_ok = match state.as_str() {
                "merged" => merged,
                "closed" => !merged,
                _ => true,
            };
            let has = names(p, "labels", "name");
            state_ok
                && author.as_ref().is_none_or(|a| p["user"]["login"] == json!(a))
                && labels.iter().all(|l| has.contains(&json!(l)))
        };
        let path = format!("/repos/{}/pulls", self.repo);
        let (found, more) = self.list(tool, &path, &query, None, Self::window(args, 20)?, keep)?;
        let pulls: Vec<Value> = found.iter().map(pull).collect();
        let summary = format!(
            "{} {state} pull request(s) in {}{}",
            pulls.len(),
            self.repo,
            if more { " (more: raise offset)" } else { "" }
        );
        Ok(result(
            summary,
            json!({"merge_requests": pulls, "has_more": more}),
        ))
    }

    pub fn get_merge_request(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "get_merge_request";
        let n = number(tool, &required(args, "key")?)?;
        let reply = self.api.get(tool, &self.pull_path(n))?;
        let mut value = pull(&reply.body);
        for field in [
            "body",
            "mergeable",
            "additions",
            "deletions",
            "changed_files",
            "commits",
        ] {
            value[field] = reply.body[field].clone();
        }
        let summary = format!(
            "pr#{n} {} ({}, {} → {})",
            reply.body["title"].as_str().unwrap_or(""),
            value["state"].as_str().unwrap_or(""),
            value["source_branch"].as_str().unwrap_or(""),
            value["target_branch"].as_str().unwrap_or("")
        );
        Ok(result(summary, value))
    }

    pub fn get_merge_request_discussions(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "get_merge_request_discussions";
        let n = number(tool, &required(args, "key")?)?;
        let general = self.all(tool, &format!("/repos/{}/issues/{n}/comments", self.repo))?;
        let reviews = self.all(tool, &format!("{}/reviews", self.pull_path(n)))?;
        let inline = self.all(tool, &format!("{}/comments", self.pull_path(n)))?;
        let mut all: Vec<Value> = general
            .iter()
            .map(|c| json!({"id": format!("comment-{}", c["id"]), "kind": "comment", "created_at": c["created_at"], "notes": [note(c)]}))
            .collect();
        // A review's summary is a discussion when it says something; its
        // line comments are in the threads.
        all.extend(
            reviews
                .iter()
                .filter(|r| r["body"].as_str().is_some_and(|b| !b.is_empty()))
                .map(|r| {
                    json!({"id": format!("review-{}", r["id"]), "kind": "review", "state": r["state"],
                                "created_at": r["submitted_at"], "notes": [note(r)]})
                }),
        );
        all.extend(threads(&inline));
        all.sort_by(|a, b| a["created_at"].as_str().cmp(&b["created_at"].as_str()));
        let (offset, limit) = Self::window(args, 20)?;
        let total = all.len();
        let page: Vec<Value> = all
            .into_iter()
            .skip(offset as usize)
            .take(limit as usize)
            .collect();
        let more = (offset as usize).saturating_add(page.len()) < total;
        let summary = format!("{} of {total} discussion(s) on pr#{n}", page.len());
        Ok(result(
            summary,
            json!({"key": format!("pr#{n}"), "discussions": page, "total": total, "has_more": more}),
        ))
    }

    pub fn get_merge_request_diffs(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "get_merge_request_diffs";
        let n = number(tool, &required(args, "key")?)?;
        let files = self.all(tool, &format!("{}/files", self.pull_path(n)))?;
        let files: Vec<Value> = files
            .iter()
            .map(|f| {
                json!({"path": f["filename"], "old_path": f.get("previous_filename").unwrap_or(&f["filename"]),
                       "status": f["status"], "additions": f["additions"], "deletions": f["deletions"],
                       "diff": f.get("patch")})
            })
            .collect();
        let summary = format!("{} file(s) changed in pr#{n}", files.len());
        Ok(result(summary, json!({"key": format!("pr#{n}"), "files": files})))
    }

    pub fn create_merge_request(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "create_merge_request";
        let mut body = json!({
            "title": required(args, "title")?,
            "head": required(args, "source_branch")?,
            "base": required(args, "target_branch")?,
        });
        if let Some(d) = optional(args, "description") {
            body["body"] = json!(d);
        }
        if let Some(draft) = flag(args, "draft")? {
            body["draft"] = json!(draft);
        }
        let created = self
            .api
            .send(tool, "POST", &format!("/repos/{}/pulls", self.repo), Some(&body))?;
        let n = created.body["number"].as_u64().ok_or_else(|| {
            ToolError::Failed("GitHub create_merge_request: the answer has no number".into())
        })?;
        // Labels and assignees are the pull request's issue's.
        let mut issue = json!({});
        for list in ["labels", "assignees"] {
            if let Some(v) = strings(args, list)? {
                issue[list] = json!(v);
            }
        }
        if issue.as_object().is_some_and(|o| !o.is_empty()) {
            let path = format!("/repos/{}/issues/{n}", self.repo);
            self.api.send(tool, "PATCH", &path, Some(&issue))?;
        }
        let mut value = pull(&created.body);
        if let Some(reviewers) = strings(args, "reviewers")?.filter(|r| !r.is_empty()) {
            let path = format!("{}/requested_reviewers", self.pull_path(n));
            let reply = self
                .api
                .send(tool, "POST", &path, Some(&json!({"reviewers": reviewers})))?;
            value = pull(&reply.body);
        }
        let summary = format!("opened pr#{n} in {}: {}", self.repo, created.body["html_url"]);
        Ok(result(summary, value))
    }

    pub fn update_merge_request(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "update_merge_request";
        let n = number(tool, &required(args, "key")?)?;
        let mut fields = json!({});
        for (arg, field) in [
            ("title", "title"),
            ("description", "body"),
            ("state", "state"),
            ("target_branch", "base"),
        ] {
            if let Some(v) = optional(args, arg) {
                fields[field] = json!(v);
            }
        }
        if flag(args, "draft")?.is_some() {
            // Only GitHub's GraphQL API changes a pull request's draft state.
            return Err(ToolError::InvalidArgs(format!(
                "GitHub {tool}: GitHub's REST API cannot change draft state; mark pr#{n} ready or draft on GitHub"
            )));
        }
        let labels = strings(args, "labels")?;
        let reviewers = strings(args, "reviewers")?;
        if fields.as_object().is_some_and(|f| f.is_empty()) && labels.is_none() && reviewers.is_none() {
            return Err(ToolError::InvalidArgs(
                "GitHub update_merge_request: nothing to change (give title, description, state, target_branch, \
                 labels or reviewers)"
                    .into(),
            ));
        }
        if let Some(labels) = labels {
            let path = format!("/repos/{}/issues/{n}", self.repo);
            self.api
                .send(tool, "PATCH", &path, Some(&json!({"labels": labels})))?;
        }
        if let Some(wanted) = reviewers {
            // GitHub adds and removes requested reviewers; "replace" is both.
            let current = self.api.get(tool, &self.pull_path(n))?;
            let have: Vec<String> = names(&current.body, "requested_reviewers", "login")
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect();
            let path = format!("{}/requested_reviewers", self.pull_path(n));
            let gone: Vec<&String> = have.iter().filter(|h| !wanted.contains(h)).collect();
            if !gone.is_empty() {
                self.api
                    .send(tool, "DELETE", &path, Some(&json!({"reviewers": gone})))?;
            }
            let added: Vec<&String> = wanted.iter().filter(|w| !have.contains(w)).collect();
            if !added.is_empty() {
                self.api
                    .send(tool, "POST", &path, Some(&json!({"reviewers": added})))?;
            }
        }
        // The last answer is the pull request as it now is.
        let reply = if fields.as_object().is_some_and(|f| !f.is_empty()) {
            self.api.send(tool, "PATCH", &self.pull_path(n), Some(&fields))?
        } else {
            self.api.get(tool, &self.pull_path(n))?
        };
        let summary = format!("updated pr#{n} in {}", self.repo);
        Ok(result(summary, pull(&reply.body)))
    }

    pub fn create_merge_request_comment(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "create_merge_request_comment";
        let n = number(tool, &required(args, "key")?)?;
        let text = required(args, "body")?;
        let (kind, reply) = if let Some(thread) = optional(args, "discussion_id") {
            let id: u64 = thread.parse().map_err(|_| {
                ToolError::InvalidArgs(format!(
                    "GitHub {tool}: only review threads take replies; `discussion_id` must be a thread's id from \
                     get_merge_request_discussions, not `{thread}`"
                ))
            })?;
            let path = format!("{}/comments/{id}/replies", self.pull_path(n));
            (
                "reply",
                self.api.send(tool, "POST", &path, Some(&json!({"body": text})))?,
            )
        } else if let Some(file) = optional(args, "file_path") {
            let line = uint(args, "line", 0)?;
            if line == 0 {
                return Err(ToolError::InvalidArgs(format!(
                    "GitHub {tool}: an inline comment on `{file}` needs `line`"
                )));
            }
            let sha = match optional(args, "commit_sha") {
                Some(sha) => sha,
                None => {
                    let pr = self.api.get(tool, &self.pull_path(n))?;
                    pr.body["head"]["sha"].as_str().unwrap_or_default().to_owned()
                }
            };
            let side = optional(args, "side").unwrap_or_else(|| "RIGHT".into());
            let body = json!({"body": text, "commit_id": sha, "path": file, "line": line, "side": side});
            let path = format!("{}/comments", self.pull_path(n));
            ("inline", self.api.send(tool, "POST", &path, Some(&body))?)
        } else {
            let path = format!("/repos/{}/issues/{n}/comments", self.repo);
            (
                "comment",
                self.api.send(tool, "POST", &path, Some(&json!({"body": text})))?,
            )
        };
        let mut value = note(&reply.body);
        value["key"] = json!(format!("pr#{n}"));
        value["kind"] = json!(kind);
        value["url"] = reply.body["html_url"].clone();
        for field in ["path", "line", "side"] {
            if let Some(v) = reply.body.get(field) {
                value[field] = v.clone();
            }
        }
        Ok(result(
            format!("{kind} comment on pr#{n}: {}", reply.body["html_url"]),
            value,
        ))
    }
}
