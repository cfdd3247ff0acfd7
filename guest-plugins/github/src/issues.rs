//! GitHub issues: list (or search), read, comments, users, states, and the
//! writes (create, update, comment). An issue's structured value carries
//! `key` (`#42`), which the enricher projects into the follow-up tools.

use provider_kit::api::{Api, Listing, Reply, encode, flag, optional, required, result, strings};
use toolhost_sdk::{ToolError, ToolResult, Value, json};

use crate::GitHub;
use crate::tools::{MAX_PER_PAGE, names, number};

/// An issue as the tools return it.
pub fn issue(i: &Value) -> Value {
    json!({
        "key": format!("#{}", i["number"]),
        "number": i["number"],
        "title": i["title"],
        "state": i["state"],
        "labels": names(i, "labels", "name"),
        "assignees": names(i, "assignees", "login"),
        "author": i["user"]["login"],
        "comments": i["comments"],
        "url": i["html_url"],
        "created_at": i["created_at"],
        "updated_at": i["updated_at"],
    })
}

fn comment(c: &Value) -> Value {
    json!({"id": c["id"], "author": c["user"]["login"], "body": c["body"], "created_at": c["created_at"],
           "url": c["html_url"]})
}

/// The body of an issue create or update: only the fields given. GitHub
/// issues have a state, not a workflow status: `status` may only name one.
fn issue_fields(tool: &str, args: &Value) -> Result<Value, ToolError> {
    let mut body = json!({});
    match optional(args, "status").as_deref() {
        None => {}
        Some(s @ ("open" | "closed")) => body["state"] = json!(s),
        Some(other) => {
            return Err(ToolError::InvalidArgs(format!(
                "GitHub {tool}: issues have no workflow status `{other}`, only the state `open` or `closed`"
            )));
        }
    }
    for (arg, field) in [("title", "title"), ("description", "body"), ("state", "state")] {
        if let Some(v) = optional(args, arg) {
            body[field] = json!(v);
        }
    }
    for list in ["labels", "assignees"] {
        if let Some(v) = strings(args, list)? {
            body[list] = json!(v);
        }
    }
    Ok(body)
}

impl GitHub {
    pub fn get_issues(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "get_issues";
        let labels = strings(args, "labels")?.unwrap_or_default();
        let state = match issue_fields(tool, args)?.get("state") {
            Some(status) => status.as_str().unwrap_or("open").to_owned(),
            None => optional(args, "state").unwrap_or_else(|| "open".into()),
        };
        let sort = optional(args, "sort").map_or("updated".into(), |s| s.trim_end_matches("_at").to_owned());
        let order = optional(args, "sort_order").unwrap_or_else(|| "desc".into());
        let assignee = optional(args, "assignee");
        let window = Self::window(args, 20)?;
        let (found, more) = match optional(args, "search") {
            // Free text needs the search API; the qualifiers keep it to
            // this repository's issues and the other filters.
            Some(text) => {
                let mut q = vec![text, format!("repo:{}", self.repo), "is:issue".into()];
                if state != "all" {
                    q.push(format!("state:{state}"));
                }
                q.extend(labels.iter().map(|l| format!("label:\"{l}\"")));
                q.extend(assignee.map(|a| format!("assignee:{a}")));
                let query = [("q", q.join(" ")), ("sort", sort), ("order", order)];
                self.list(tool, "/search/issues", &query, Some("items"), window, |_| true)?
            }
            None => {
                let query = [
                    ("state", state.clone()),
                    ("labels", labels.join(",")),
                    ("assignee", assignee.unwrap_or_default()),
                    ("sort", sort),
                    ("direction", order),
                ];
                let path = format!("/repos/{}/issues", self.repo);
                // The issues endpoint lists pull requests too; they are not issues.
                self.list(tool, &path, &query, None, window, |i| {
                    i.get("pull_request").is_none()
                })?
            }
        };
        let issues: Vec<Value> = found.iter().map(issue).collect();
        let summary = format!(
            "{} {state} issue(s) in {}{}",
            issues.len(),
            self.repo,
            if more { " (more: raise offset)" } else { "" }
        );
        Ok(result(summary, json!({"issues": issues, "has_more": more})))
    }

    pub fn get_issue(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "get_issue";
        let n = number(tool, &required(args, "key")?)?;
        let path = format!("/repos/{}/issues/{n}", self.repo);
        // The issue and the first page of its comments are fetched at once:
        // the call waits for the slower, not for both in turn.
        let comments_path = format!("/repos/{}/issues/{n}/comments", self.repo);
        let comments = Listing {
            path: &comments_path,
            query: &[],
            field: None,
            offset: 0,
            limit: 50,
            max_per_page: MAX_PER_PAGE,
        };
        let (reply, first_comments) = if flag(args, "includeComments")? == Some(true) {
            let mut answers = self
                .api
                .get_all(tool, &[path, Api::first_page(&comments)])
                .into_iter();
            match (answers.next(), answers.next()) {
                (Some(reply), first) => (reply?, first),
                (None, _) => return Err(ToolError::Failed(format!("GitHub {tool}: no answer"))),
            }
        } else {
            (self.api.get(tool, &path)?, None)
        };
        let mut value = issue(&reply.body);
        value["body"] = reply.body["body"].clone();
        if let Some(first) = first_comments {
            let (found, more) = self.api.list_from(tool, &comments, first?, |_| true)?;
            value["comment_list"] = json!(found.iter().map(comment).collect::<Vec<_>>());
            value["more_comments"] = json!(more);
        }
        let summary = format!(
            "#{n} {} ({})",
            reply.body["title"].as_str().unwrap_or(""),
            reply.body["state"].as_str().unwrap_or("")
        );
        Ok(result(summary, value))
    }

    pub fn get_issue_comments(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "get_issue_comments";
        let n = number(tool, &required(args, "key")?)?;
        let path = format!("/repos/{}/issues/{n}/comments", self.repo);
        let (found, more) = self.list(tool, &path, &[], None, Self::window(args, 50)?, |_| true)?;
        let comments: Vec<Value> = found.iter().map(comment).collect();
        let summary = format!("{} comment(s) on #{n}", comments.len());
        Ok(result(
            summary,
            json!({"key": format!("#{n}"), "comments": comments, "has_more": more}),
        ))
    }

    /// GitHub's issue states: fixed by its data model, so no request.
    pub fn get_available_statuses(&self) -> ToolResult {
        result(
            "GitHub issues are `open` or `closed` (set `state` with update_issue)",
            json!({"statuses": [
                {"name": "open", "category": "todo"},
                {"name": "closed", "category": "done"},
            ]}),
        )
    }

    pub fn get_users(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "get_users";
        let limit = provider_kit::api::uint(args, "limit", 50)?;
        let user =
            |u: &Value| json!({"id": u["id"], "login": u["login"], "name": u.get("name"), "type": u["type"]});
        let (users, scope) = if let Some(login) = optional(args, "userId") {
            let reply = self.api.get(tool, &format!("/users/{}", encode(&login)))?;
            (vec![user(&reply.body)], format!("user {login}"))
        } else if let Some(text) = optional(args, "search") {
            let (found, _) = self.list(
                tool,
                "/search/users",
                &[("q", text.clone())],
                Some("items"),
                (0, limit),
                |_| true,
            )?;
            (
                found.iter().map(user).collect(),
                format!("users matching `{text}`"),
            )
        } else {
            let path = format!("/repos/{}/assignees", self.repo);
            let (found, _) = self.list(tool, &path, &[], None, (0, limit), |_| true)?;
            (
                found.iter().map(user).collect(),
                format!("assignable users of {}", self.repo),
            )
        };
        Ok(result(
            format!("{} {scope}", users.len()),
            json!({"users": users}),
        ))
    }

    pub fn create_issue(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "create_issue";
        required(args, "title")?;
        let body = issue_fields(tool, args)?;
        let reply = self
            .api
            .send(tool, "POST", &format!("/repos/{}/issues", self.repo), Some(&body))?;
        Ok(self.written("created", &reply))
    }

    pub fn update_issue(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "update_issue";
        let n = number(tool, &required(args, "key")?)?;
        let body = issue_fields(tool, args)?;
        if body.as_object().is_some_and(|b| b.is_empty()) {
            return Err(ToolError::InvalidArgs(
                "GitHub update_issue: nothing to change (give title, description, state, labels or assignees)"
                    .into(),
            ));
        }
        let path = format!("/repos/{}/issues/{n}", self.repo);
        let reply = self.api.send(tool, "PATCH", &path, Some(&body))?;
        Ok(self.written("updated", &reply))
    }

    fn written(&self, what: &str, reply: &Reply) -> ToolResult {
        let value = issue(&reply.body);
        let summary = format!(
            "{what} #{} in {}: {}",
            reply.body["number"], self.repo, reply.body["html_url"]
        );
        result(summary, value)
    }

    pub fn add_issue_comment(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "add_issue_comment";
        let n = number(tool, &required(args, "key")?)?;
        let body = json!({"body": required(args, "body")?});
        let path = format!("/repos/{}/issues/{n}/comments", self.repo);
        let reply = self.api.send(tool, "POST", &path, Some(&body))?;
        let mut value = comment(&reply.body);
        value["key"] = json!(format!("#{n}"));
        Ok(result(
            format!("commented on #{n}: {}", reply.body["html_url"]),
            value,
        ))
    }
}
