//! The GitLab tools: base-catalog tools run against GitLab's REST API (v4)
//! for the configured project. Keys are `#42` for issues and `mr#12` for
//! merge requests (their `iid`s); a bare number is accepted too.
//!
//! Served: issues (list, read, notes, create, update, comment, states,
//! links), merge requests (list, read, discussions, diffs, comment),
//! pipelines, job logs and running jobs, users, merge request create and
//! update; attachments are `assets`'s, iterations and milestones
//! `planning`'s, files, commits, branches and code search `repository`'s.

use provider_kit::api::{
    Listing, catalog_tool, encode, flag, optional, required, result, statuses_schema, strings, uint,
};
use provider_kit::files::download_schema;
use provider_kit::logs::{LogView, error_lines};
use toolhost_sdk::{CallContext, ToolDefinition, ToolError, ToolResult, Tools, Value, json};

use crate::{GitLab, planning};

/// GitLab's largest page.
const MAX_PER_PAGE: u64 = 100;
/// Failed jobs whose logs `get_pipeline` reads for error lines.
const MAX_FAILED_LOGS: usize = 3;

/// The reads a write makes stale.
pub fn stale_after(write: &str) -> &'static [&'static str] {
    match write {
        "create_issue" => &["get_issues"],
        "update_issue" => &["get_issue", "get_issues"],
        "add_issue_comment" => &["get_issue_comments", "get_issue", "get_issues"],
        "create_merge_request_comment" => &["get_merge_request_discussions"],
        "create_merge_request" => &["get_merge_requests"],
        "update_merge_request" => &["get_merge_request", "get_merge_requests"],
        "run_pipeline_job" => &["get_pipeline", "get_job_logs"],
        "link_issues" | "unlink_issues" => &["get_issue_relations", "get_issue"],
        other => planning::stale_after(other),
    }
}

impl Tools for GitLab {
    fn tools(&self) -> Vec<ToolDefinition> {
        let issue = |name, what| catalog_tool(name, "issue_tracker", what);
        let git = |name, what| catalog_tool(name, "git_repository", what);
        vec![
            issue(
                "get_issues",
                "List the project's issues; `search` searches titles and descriptions.",
            ),
            issue("get_issue", "One issue, by key (`#42`)."),
            issue(
                "get_issue_comments",
                "The comments (non-system notes) of an issue.",
            ),
            issue("create_issue", "Open an issue in the project."),
            issue(
                "update_issue",
                "Change an issue's title, description, state or labels.",
            ),
            issue("add_issue_comment", "Comment on an issue."),
            issue("get_users", "Search users, or list the project's members."),
            issue(
                "get_available_statuses",
                "The states an issue can be in (`opened`, `closed`).",
            )
            .output_schema(statuses_schema()),
            issue(
                "get_issue_relations",
                "The issues linked to an issue, with the link type.",
            ),
            issue(
                "link_issues",
                "Link two issues of the project (relates_to, blocks, is_blocked_by).",
            ),
            issue("unlink_issues", "Remove the links between two issues."),
            git("get_merge_requests", "List the project's merge requests."),
            git("create_merge_request", "Open a merge request."),
            git(
                "update_merge_request",
                "Change a merge request's title, description, state, target, draft state, labels or reviewers.",
            ),
            git("get_merge_request", "One merge request, by key (`mr#12`)."),
            git(
                "get_merge_request_discussions",
                "A merge request's discussions, with diff positions.",
            ),
            git(
                "get_merge_request_diffs",
                "The files a merge request changes, with their diffs.",
            ),
            git(
                "create_merge_request_comment",
                "Comment on a merge request: on a diff line, as a reply to a discussion, or in general.",
            ),
            git(
                "get_pipeline",
                "The latest pipeline of a branch or merge request, with its jobs.",
            ),
            git("get_job_logs", "A CI job's log."),
            git("run_pipeline_job", "Start a manual job, or retry a finished one."),
            git(
                "get_repository_file",
                "A file's content (decoded; large files truncated) or a directory's entries, at a ref.",
            ),
            git("get_commits", "List the repository's commits, newest first."),
            git(
                "get_commit",
                "One commit, by SHA or ref: message, author, parents and changed files with diffs.",
            ),
            git("get_branches", "List the repository's branches with their head commits."),
            git("search_code", "Search the repository's files (blob search on the default branch)."),
            issue(
                "get_assets",
                "Files linked from an issue's or merge request's description and notes.",
            ),
            issue(
                "download_asset",
                "An uploaded file's content (base64; images also as an image).",
            )
            .output_schema(download_schema()),
            issue(
                "upload_asset",
                "Upload a file (base64 `fileData`) and link it in a note on the issue.",
            ),
            issue("delete_asset", "Delete an uploaded file from the project."),
        ]
        .into_iter()
        .chain(planning::tools())
        .collect()
    }

    fn execute(&self, tool: &str, args: Value, _ctx: &CallContext<'_>) -> Result<ToolResult, ToolError> {
        let project = self.project.as_deref().ok_or_else(|| {
            ToolError::Failed(
                "GitLab: config `project` is required (a project id or `group/name` path)".into(),
            )
        })?;
        let p = format!("/projects/{}", encode(project));
        let args = &args;
        match tool {
            "get_issues" => self.get_issues(&p, args),
            "get_issue" => self.get_issue(&p, args),
            "get_issue_comments" => self.get_issue_comments(&p, args),
            "create_issue" => self.write_issue(&p, tool, args),
            "update_issue" => self.write_issue(&p, tool, args),
            "add_issue_comment" => self.add_issue_comment(&p, args),
            "get_users" => self.get_users(&p, args),
            "get_available_statuses" => Ok(available_statuses()),
            "get_issue_relations" => self.get_issue_relations(&p, args),
            "link_issues" => self.link_issues(&p, project, args),
            "unlink_issues" => self.unlink_issues(&p, args),
            "get_merge_requests" => self.get_merge_requests(&p, args),
            "create_merge_request" | "update_merge_request" => self.write_merge_request(&p, tool, args),
            "get_merge_request" => self.get_merge_request(&p, args),
            "get_merge_request_discussions" => self.get_discussions(&p, args),
            "get_merge_request_diffs" => self.get_diffs(&p, args),
            "create_merge_request_comment" => self.comment_merge_request(&p, args),
            "get_pipeline" => self.get_pipeline(&p, args),
            "get_job_logs" => self.get_job_logs(&p, args),
            "run_pipeline_job" => self.run_pipeline_job(&p, args),
            "get_repository_file" => self.get_repository_file(&p, args),
            "get_commits" => self.get_commits(&p, args),
            "get_commit" => self.get_commit(&p, args),
            "get_branches" => self.get_branches(&p, args),
            "search_code" => self.search_code(&p, args),
            "get_assets" => self.get_assets(&p, args),
            "download_asset" => self.download_asset(&p, args),
            "upload_asset" => self.upload_asset(&p, args),
            "delete_asset" => self.delete_asset(&p, args),
            other => self.execute_planning(other, &p, project, args),
        }
    }
}

/// The iid in a key: `#42`, `mr#12`, `42`.
pub(crate) fn iid(tool: &str, args: &Value) -> Result<u64, ToolError> {
    let key = required(args, "key")?;
    key.rsplit('#')
        .next()
        .and_then(|n| n.trim().parse().ok())
        .ok_or_else(|| {
            ToolError::InvalidArgs(format!(
                "GitLab {tool}: `key` must be like `#42` or `mr#12`, not `{key}`"
            ))
        })
}

fn usernames(v: &Value, list: &str) -> Vec<Value> {
    v[list]
        .as_array()
        .map(|l| l.iter().map(|u| u["username"].clone()).collect())
        .unwrap_or_default()
}

fn issue(i: &Value) -> Value {
    json!({"key": format!("#{}", i["iid"]), "iid": i["iid"], "title": i["title"], "state": i["state"],
           "labels": i["labels"], "assignees": usernames(i, "assignees"), "author": i["author"]["username"],
           "comments": i["user_notes_count"], "url": i["web_url"], "created_at": i["created_at"],
           "updated_at": i["updated_at"]})
}

fn merge_request(m: &Value) -> Value {
    json!({"key": format!("mr#{}", m["iid"]), "iid": m["iid"], "title": m["title"], "state": m["state"],
           "draft": m["draft"], "author": m["author"]["username"], "source_branch": m["source_branch"],
           "target_branch": m["target_branch"], "head_sha": m["sha"], "labels": m["labels"],
           "reviewers": usernames(m, "reviewers"), "url": m["web_url"], "created_at": m["created_at"],
           "updated_at": m["updated_at"]})
}

fn note(n: &Value) -> Value {
    json!({"id": n["id"], "author": n["author"]["username"], "body": n["body"], "created_at": n["created_at"]})
}

/// An issue's states. GitLab's work item statuses ("In progress", ...) are
/// served by its GraphQL API only, not by REST v4's issues.
fn available_statuses() -> ToolResult {
    let statuses = json!([
        {"name": "opened", "category": "open", "state": "open"},
        {"name": "closed", "category": "done", "state": "closed"},
    ]);
    result("2 state(s): opened, closed", json!({"statuses": statuses}))
}

/// The ids of the issue-link endpoints: the source iid and the target iid.
fn link_ends(tool: &str, args: &Value) -> Result<(u64, u64), ToolError> {
    let end = |arg: &str| iid(tool, &json!({"key": required(args, arg)?}));
    Ok((end("source_key")?, end("target_key")?))
}

/// The catalog's states in GitLab's words.
fn state(args: &Value) -> String {
    match optional(args, "state").as_deref() {
        None | Some("open") => "opened".into(),
        Some(other) => other.into(),
    }
}

impl GitLab {
    pub(crate) fn list(
        &self,
        tool: &str,
        path: &str,
        query: &[(&str, String)],
        args: &Value,
        default_limit: u64,
    ) -> Result<(Vec<Value>, bool), ToolError> {
        let listing = Listing {
            path,
            query,
            field: None,
            offset: uint(args, "offset", 0)?,
            limit: uint(args, "limit", default_limit)?,
            max_per_page: MAX_PER_PAGE,
        };
        self.api.list(tool, &listing, |_| true)
    }

    fn get_issues(&self, p: &str, args: &Value) -> Result<ToolResult, ToolError> {
        let sort = optional(args, "sort").unwrap_or_else(|| "updated_at".into());
        let query = [
            ("state", state(args)),
            ("labels", strings(args, "labels")?.unwrap_or_default().join(",")),
            (
                "assignee_username",
                optional(args, "assignee").unwrap_or_default(),
            ),
            ("search", optional(args, "search").unwrap_or_default()),
            ("order_by", sort),
            (
                "sort",
                optional(args, "sort_order").unwrap_or_else(|| "desc".into()),
            ),
        ];
        let (found, more) = self.list("get_issues", &format!("{p}/issues"), &query, args, 20)?;
        let issues: Vec<Value> = found.iter().map(issue).collect();
        let summary = format!(
            "{} issue(s){}",
            issues.len(),
            if more { " (more: raise offset)" } else { "" }
        );
        Ok(result(summary, json!({"issues": issues, "has_more": more})))
    }

    fn get_issue(&self, p: &str, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "get_issue";
        let n = iid(tool, args)?;
        let reply = self.api.get(tool, &format!("{p}/issues/{n}"))?;
        let mut value = issue(&reply.body);
        value["description"] = reply.body["description"].clone();
        let summary = format!(
            "#{n} {} ({})",
            reply.body["title"].as_str().unwrap_or(""),
            value["state"]
        );
        Ok(result(summary, value))
    }

    fn get_issue_comments(&self, p: &str, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "get_issue_comments";
        let n = iid(tool, args)?;
        let path = format!("{p}/issues/{n}/notes");
        let query = [("sort", "asc".to_owned()), ("order_by", "created_at".to_owned())];
        let listing = Listing {
            path: &path,
            query: &query,
            field: None,
            offset: uint(args, "offset", 0)?,
            limit: uint(args, "limit", 50)?,
            max_per_page: MAX_PER_PAGE,
        };
        // System notes ("changed the label") are not comments.
        let (found, more) = self.api.list(tool, &listing, |n| n["system"] != json!(true))?;
        let comments: Vec<Value> = found.iter().map(note).collect();
        let summary = format!("{} comment(s) on #{n}", comments.len());
        Ok(result(
            summary,
            json!({"key": format!("#{n}"), "comments": comments, "has_more": more}),
        ))
    }

    fn write_issue(&self, p: &str, tool: &str, args: &Value) -> Result<ToolResult, ToolError> {
        let mut body = json!({});
        for (arg, field) in [("title", "title"), ("description", "description")] {
            if let Some(v) = optional(args, arg) {
                body[field] = json!(v);
            }
        }
        if let Some(labels) = strings(args, "labels")? {
            body["labels"] = json!(labels.join(","));
        }
        if let Some(names) = strings(args, "assignees")? {
            body["assignee_ids"] = json!(self.user_ids(tool, &names)?);
        }
        let reply = if tool == "create_issue" {
            required(args, "title")?;
            self.api.send(tool, "POST", &format!("{p}/issues"), Some(&body))?
        } else {
            let n = iid(tool, args)?;
            match optional(args, "state").as_deref() {
                Some("closed") => body["state_event"] = json!("close"),
                Some("open") => body["state_event"] = json!("reopen"),
                _ => {}
            }
            if body.as_object().is_some_and(|b| b.is_empty()) {
                return Err(ToolError::InvalidArgs(format!(
                    "GitLab {tool}: nothing to change (give title, description, state, labels or assignees)"
                )));
            }
            self.api
                .send(tool, "PUT", &format!("{p}/issues/{n}"), Some(&body))?
        };
        let what = if tool == "create_issue" {
            "created"
        } else {
            "updated"
        };
        Ok(result(
            format!("{what} #{}: {}", reply.body["iid"], reply.body["web_url"]),
            issue(&reply.body),
        ))
    }

    fn add_issue_comment(&self, p: &str, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "add_issue_comment";
        let n = iid(tool, args)?;
        let body = json!({"body": required(args, "body")?});
        let reply = self
            .api
            .send(tool, "POST", &format!("{p}/issues/{n}/notes"), Some(&body))?;
        let mut value = note(&reply.body);
        value["key"] = json!(format!("#{n}"));
        Ok(result(format!("commented on #{n}"), value))
    }

    fn get_issue_relations(&self, p: &str, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "get_issue_relations";
        let n = iid(tool, args)?;
        let reply = self.api.get(tool, &format!("{p}/issues/{n}/links"))?;
        let relations: Vec<Value> = reply
            .body
            .as_array()
            .map(|l| {
                l.iter()
                    .map(|i| {
                        json!({"key": format!("#{}", i["iid"]), "iid": i["iid"], "project_id": i["project_id"],
                               "title": i["title"], "state": i["state"], "link_type": i["link_type"],
                               "link_id": i["issue_link_id"], "url": i["web_url"]})
                    })
                    .collect()
            })
            .unwrap_or_default();
        let summary = format!("{} linked issue(s) on #{n}", relations.len());
        Ok(result(
            summary,
            json!({"key": format!("#{n}"), "relations": relations}),
        ))
    }

    fn link_issues(&self, p: &str, project: &str, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "link_issues";
        let (source, target) = link_ends(tool, args)?;
        let link_type = required(args, "link_type")?;
        let body = json!({"target_project_id": project, "target_issue_iid": target.to_string(),
                          "link_type": link_type});
        let reply = self
            .api
            .send(tool, "POST", &format!("{p}/issues/{source}/links"), Some(&body))?;
        Ok(result(
            format!("#{source} {link_type} #{target}"),
            json!({"source_key": format!("#{source}"), "target_key": format!("#{target}"),
                   "link_type": reply.body["link_type"]}),
        ))
    }

    fn unlink_issues(&self, p: &str, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "unlink_issues";
        let (source, target) = link_ends(tool, args)?;
        let only = optional(args, "link_type");
        let links = self.api.get(tool, &format!("{p}/issues/{source}/links"))?;
        let matching: Vec<Value> = links
            .body
            .as_array()
            .into_iter()
            .flatten()
            .filter(|l| l["iid"] == json!(target))
            .filter(|l| only.as_deref().is_none_or(|t| l["link_type"] == json!(t)))
            .map(|l| l["issue_link_id"].clone())
            .collect();
        if matching.is_empty() {
            return Err(ToolError::InvalidArgs(format!(
                "GitLab {tool}: #{source} has no {}link to #{target}",
                only.map(|t| format!("`{t}` ")).unwrap_or_default()
            )));
        }
        for id in &matching {
            self.api
                .send(tool, "DELETE", &format!("{p}/issues/{source}/links/{id}"), None)?;
        }
        Ok(result(
            format!(
                "removed {} link(s) between #{source} and #{target}",
                matching.len()
            ),
            json!({"source_key": format!("#{source}"), "target_key": format!("#{target}"), "removed": matching}),
        ))
    }

    fn get_merge_requests(&self, p: &str, args: &Value) -> Result<ToolResult, ToolError> {
        let query = [
            ("state", state(args)),
            ("author_username", optional(args, "author").unwrap_or_default()),
            ("labels", strings(args, "labels")?.unwrap_or_default().join(",")),
            (
                "source_branch",
                optional(args, "source_branch").unwrap_or_default(),
            ),
            (
                "target_branch",
                optional(args, "target_branch").unwrap_or_default(),
            ),
        ];
        let (found, more) = self.list(
            "get_merge_requests",
            &format!("{p}/merge_requests"),
            &query,
            args,
            20,
        )?;
        let mrs: Vec<Value> = found.iter().map(merge_request).collect();
        let summary = format!(
            "{} merge request(s){}",
            mrs.len(),
            if more { " (more: raise offset)" } else { "" }
        );
        Ok(result(summary, json!({"merge_requests": mrs, "has_more": more})))
    }

    fn get_users(&self, p: &str, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "get_users";
        let user = |u: &Value| json!({"id": u["id"], "username": u["username"], "name": u["name"]});
        let users: Vec<Value> = if let Some(id) = optional(args, "userId") {
            vec![user(
                &self.api.get(tool, &format!("/users/{}", encode(&id)))?.body,
            )]
        } else {
            let (path, query) = match optional(args, "search") {
                Some(text) => ("/users".to_owned(), vec![("search", text)]),
                None => (format!("{p}/members/all"), Vec::new()),
            };
            self.list(tool, &path, &query, args, 50)?
                .0
                .iter()
                .map(user)
                .collect()
        };
        Ok(result(
            format!("{} user(s)", users.len()),
            json!({"users": users}),
        ))
    }

    /// The ids of users named by username (GitLab's writes take ids); a
    /// number is an id already.
    fn user_ids(&self, tool: &str, names: &[String]) -> Result<Vec<Value>, ToolError> {
        names
            .iter()
            .map(|name| {
                if let Ok(id) = name.parse::<u64>() {
                    return Ok(json!(id));
                }
                let found = self.api.get(tool, &format!("/users?username={}", encode(name)))?;
                found.body.get(0).map(|u| u["id"].clone()).ok_or_else(|| {
                    ToolError::InvalidArgs(format!("GitLab {tool}: no user with username `{name}`"))
                })
            })
            .collect()
    }

    fn write_merge_request(&self, p: &str, tool: &str, args: &Value) -> Result<ToolResult, ToolError> {
        let creating = tool == "create_merge_request";
        let mut body = json!({});
        for (arg, field) in [
            ("title", "title"),
            ("description", "description"),
            ("source_branch", "source_branch"),
            ("target_branch", "target_branch"),
        ] {
            if let Some(v) = optional(args, arg) {
                body[field] = json!(v);
            }
        }
        if let Some(labels) = strings(args, "labels")? {
            body["labels"] = json!(labels.join(","));
        }
        for (arg, field) in [("reviewers", "reviewer_ids"), ("assignees", "assignee_ids")] {
            if let Some(names) = strings(args, arg)? {
                body[field] = json!(self.user_ids(tool, &names)?);
            }
        }
        let path = if creating {
            for arg in ["title", "source_branch", "target_branch"] {
                required(args, arg)?;
            }
            format!("{p}/merge_requests")
        } else {
            format!("{p}/merge_requests/{}", iid(tool, args)?)
        };
        match optional(args, "state").as_deref() {
            Some("closed") if !creating => body["state_event"] = json!("close"),
            Some("open") if !creating => body["state_event"] = json!("reopen"),
            _ => {}
        }
        // Draft is a title prefix in GitLab's API.
        if let Some(draft) = flag(args, "draft")? {
            let title = match body["title"].as_str() {
                Some(t) => t.to_owned(),
                None if creating => String::new(),
                None => self.api.get(tool, &path)?.body["title"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            };
            let bare = title.strip_prefix("Draft: ").unwrap_or(&title);
            body["title"] = json!(if draft {
                format!("Draft: {bare}")
            } else {
                bare.to_owned()
            });
        }
        if body.as_object().is_some_and(|b| b.is_empty()) {
            return Err(ToolError::InvalidArgs(format!(
                "GitLab {tool}: nothing to change"
            )));
        }
        let reply = self
            .api
            .send(tool, if creating { "POST" } else { "PUT" }, &path, Some(&body))?;
        let what = if creating { "opened" } else { "updated" };
        Ok(result(
            format!("{what} mr#{}: {}", reply.body["iid"], reply.body["web_url"]),
            merge_request(&reply.body),
        ))
    }

    fn get_merge_request(&self, p: &str, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "get_merge_request";
        let n = iid(tool, args)?;
        let reply = self.api.get(tool, &format!("{p}/merge_requests/{n}"))?;
        let mut value = merge_request(&reply.body);
        value["description"] = reply.body["description"].clone();
        value["diff_refs"] = reply.body["diff_refs"].clone();
        let summary = format!(
            "mr#{n} {} ({})",
            reply.body["title"].as_str().unwrap_or(""),
            value["state"]
        );
        Ok(result(summary, value))
    }

    fn get_discussions(&self, p: &str, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "get_merge_request_discussions";
        let n = iid(tool, args)?;
        let (found, more) = self.list(
            tool,
            &format!("{p}/merge_requests/{n}/discussions"),
            &[],
            args,
            20,
        )?;
        let discussions: Vec<Value> = found
            .iter()
            .map(|d| {
                let first = &d["notes"][0];
                let position = &first["position"];
                json!({"id": d["id"], "individual_note": d["individual_note"],
                       "path": position.get("new_path").or_else(|| position.get("old_path")),
                       "new_line": position.get("new_line"), "old_line": position.get("old_line"),
                       "resolved": first.get("resolved"),
                       "notes": d["notes"].as_array().map(|l| l.iter().map(note).collect::<Vec<_>>())})
            })
            .collect();
        let summary = format!("{} discussion(s) on mr#{n}", discussions.len());
        Ok(result(
            summary,
            json!({"key": format!("mr#{n}"), "discussions": discussions, "has_more": more}),
        ))
    }

    fn get_diffs(&self, p: &str, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "get_merge_request_diffs";
        let n = iid(tool, args)?;
        let all = json!({"limit": 3000});
        let (found, _) = self.list(tool, &format!("{p}/merge_requests/{n}/diffs"), &[], &all, 3000)?;
        let files: Vec<Value> = found
            .iter()
            .map(|f| {
                let status = crate::repository::change_status(f);
                json!({"path": f["new_path"], "old_path": f["old_path"], "status": status, "diff": f["diff"]})
            })
            .collect();
        let summary = format!("{} file(s) changed in mr#{n}", files.len());
        Ok(result(summary, json!({"key": format!("mr#{n}"), "files": files})))
    }

    fn comment_merge_request(&self, p: &str, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "create_merge_request_comment";
        let n = iid(tool, args)?;
        let text = required(args, "body")?;
        let mr = format!("{p}/merge_requests/{n}");
        let (kind, reply) = if let Some(d) = optional(args, "discussion_id") {
            let path = format!("{mr}/discussions/{}/notes", encode(&d));
            (
                "reply",
                self.api.send(tool, "POST", &path, Some(&json!({"body": text})))?,
            )
        } else if let Some(file) = optional(args, "file_path") {
            let line = uint(args, "line", 0)?;
            if line == 0 {
                return Err(ToolError::InvalidArgs(format!(
                    "GitLab {tool}: an inline comment on `{file}` needs `line`"
                )));
            }
            // A diff position needs the merge request's diff refs.
            let refs = self.api.get(tool, &mr)?.body["diff_refs"].clone();
            let head = optional(args, "commit_sha").map_or(refs["head_sha"].clone(), |s| json!(s));
            let mut position = json!({"position_type": "text", "base_sha": refs["base_sha"],
                                      "start_sha": refs["start_sha"], "head_sha": head,
                                      "new_path": file, "old_path": file});
            let side = if optional(args, "line_type").as_deref() == Some("old") {
                "old_line"
            } else {
                "new_line"
            };
            position[side] = json!(line);
            let body = json!({"body": text, "position": position});
            (
                "inline",
                self.api
                    .send(tool, "POST", &format!("{mr}/discussions"), Some(&body))?,
            )
        } else {
            (
                "comment",
                self.api
                    .send(tool, "POST", &format!("{mr}/notes"), Some(&json!({"body": text})))?,
            )
        };
        let created = if reply.body.get("notes").is_some() {
            &reply.body["notes"][0]
        } else {
            &reply.body
        };
        let mut value = note(created);
        value["key"] = json!(format!("mr#{n}"));
        value["kind"] = json!(kind);
        if let Some(id) = reply.body.get("notes").and(reply.body.get("id")) {
            value["discussion_id"] = id.clone();
        }
        Ok(result(format!("{kind} comment on mr#{n}"), value))
    }

    fn get_pipeline(&self, p: &str, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "get_pipeline";
        let latest = if let Some(key) = optional(args, "mrKey") {
            let n = iid(tool, &json!({"key": key}))?;
            let list = self
                .api
                .get(tool, &format!("{p}/merge_requests/{n}/pipelines?per_page=1"))?;
            list.body.get(0).cloned()
        } else {
            let mut path = format!("{p}/pipelines?per_page=1&order_by=id&sort=desc");
            if let Some(b) = optional(args, "branch") {
                path.push_str(&format!("&ref={}", encode(&b)));
            }
            let list = self.api.get(tool, &path)?;
            list.body.get(0).cloned()
        };
        let Some(pipeline) = latest else {
            return Ok(result("no pipeline", json!({"status": "none", "jobs": []})));
        };
        let jobs = self.api.get(
            tool,
            &format!("{p}/pipelines/{}/jobs?per_page={MAX_PER_PAGE}", pipeline["id"]),
        )?;
        let with_logs = flag(args, "includeFailedLogs")?.unwrap_or(true);
        let mut left = MAX_FAILED_LOGS;
        let mut out = Vec::new();
        for j in jobs.body.as_array().cloned().unwrap_or_default() {
            let mut job = json!({"id": j["id"].to_string(), "name": j["name"], "stage": j["stage"],
                                 "status": j["status"], "url": j["web_url"]});
            if with_logs && left > 0 && j["status"] == json!("failed") {
                left -= 1;
                let log = self.api.get(tool, &format!("{p}/jobs/{}/trace", j["id"]))?.text;
                job["error_lines"] = json!(error_lines(&log, 10));
            }
            out.push(job);
        }
        let summary = format!(
            "pipeline {} {} on {}",
            pipeline["id"], pipeline["status"], pipeline["ref"]
        );
        Ok(result(
            summary,
            json!({"id": pipeline["id"], "status": pipeline["status"], "ref": pipeline["ref"],
                                  "sha": pipeline["sha"], "url": pipeline["web_url"], "jobs": out}),
        ))
    }

    fn job_id(tool: &str, args: &Value) -> Result<u64, ToolError> {
        let id = required(args, "jobId")?;
        id.parse().map_err(|_| {
            ToolError::InvalidArgs(format!("GitLab {tool}: `jobId` must be a job id, not `{id}`"))
        })
    }

    fn get_job_logs(&self, p: &str, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "get_job_logs";
        let id = Self::job_id(tool, args)?;
        let view = LogView::from_args(args)?;
        let log = self.api.get(tool, &format!("{p}/jobs/{id}/trace"))?.text;
        let mut value = view.render(&log);
        value["jobId"] = json!(id.to_string());
        Ok(result(
            format!("job {id}: {} line(s)", value["total_lines"]),
            value,
        ))
    }

    fn run_pipeline_job(&self, p: &str, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "run_pipeline_job";
        let id = Self::job_id(tool, args)?;
        let job = self.api.get(tool, &format!("{p}/jobs/{id}"))?;
        // A manual job is played; a finished one is retried (a new job).
        let action = if job.body["status"] == json!("manual") {
            "play"
        } else {
            "retry"
        };
        let reply = self
            .api
            .send(tool, "POST", &format!("{p}/jobs/{id}/{action}"), None)?;
        Ok(result(
            format!("{action}: job {}", reply.body["id"]),
            json!({"jobId": reply.body["id"].to_string(), "status": reply.body["status"], "action": action}),
        ))
    }
}
