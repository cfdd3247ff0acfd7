//! The GitHub tools: base-catalog tools run against GitHub's REST API (v3)
//! for the configured repository. Keys are `#42` for issues and `pr#12` for
//! pull requests (merge requests in the catalog's words); a bare number is
//! accepted too.

use provider_kit::api::{Window, catalog_tool, optional, required, result, uint, with_query};
use toolhost_sdk::{CallContext, ToolDefinition, ToolError, ToolResult, Tools, Value, json};

use crate::GitHub;

/// GitHub's largest page.
const MAX_PER_PAGE: u64 = 100;

impl Tools for GitHub {
    fn tools(&self) -> Vec<ToolDefinition> {
        let issue = |name, what| catalog_tool(name, "issue_tracker", what);
        vec![
            issue(
                "get_issues",
                "List the repository's issues (pull requests left out).",
            ),
            issue("get_issue", "One issue, by key (`#42`)."),
            issue("get_issue_comments", "The comments of an issue."),
        ]
    }

    fn execute(&self, tool: &str, args: Value, _ctx: &CallContext<'_>) -> Result<ToolResult, ToolError> {
        match tool {
            "get_issues" => self.get_issues(&args),
            "get_issue" => self.get_issue(&args),
            "get_issue_comments" => self.get_issue_comments(&args),
            other => Err(ToolError::NotFound(format!("GitHub has no tool `{other}`"))),
        }
    }
}

/// The number in a key: `#42`, `pr#12`, `42`.
fn number(tool: &str, key: &str) -> Result<u64, ToolError> {
    key.rsplit('#')
        .next()
        .and_then(|n| n.trim().parse().ok())
        .ok_or_else(|| {
            ToolError::InvalidArgs(format!("GitHub {tool}: `key` must be like `#42`, not `{key}`"))
        })
}

/// An issue as the tools return it.
fn issue(i: &Value) -> Value {
    let names = |list: &str, field: &str| -> Vec<Value> {
        i.get(list)
            .and_then(Value::as_array)
            .map(|l| l.iter().filter_map(|x| x.get(field).cloned()).collect())
            .unwrap_or_default()
    };
    json!({
        "key": format!("#{}", i["number"]),
        "number": i["number"],
        "title": i["title"],
        "state": i["state"],
        "labels": names("labels", "name"),
        "assignees": names("assignees", "login"),
        "author": i["user"]["login"],
        "comments": i["comments"],
        "url": i["html_url"],
        "created_at": i["created_at"],
        "updated_at": i["updated_at"],
    })
}

impl GitHub {
    /// Items `[offset, offset+limit)` of a page-numbered list at `path`
    /// (with its query), kept by `keep`, following `Link` headers; and
    /// whether more remain.
    fn list(
        &self,
        tool: &str,
        path: &str,
        query: &[(&str, String)],
        args: &Value,
        keep: impl Fn(&Value) -> bool,
    ) -> Result<(Vec<Value>, bool), ToolError> {
        let window = Window::new(uint(args, "offset", 0)?, uint(args, "limit", 30)?, MAX_PER_PAGE);
        let mut query = query.to_vec();
        query.push(("per_page", window.per_page.to_string()));
        query.push(("page", window.first_page.to_string()));
        let mut reply = self.api.get(tool, &with_query(path, &query))?;
        let mut items: Vec<Value> = Vec::new();
        let mut skip = window.skip;
        loop {
            let page = reply.body.as_array().cloned().unwrap_or_default();
            for item in page.into_iter().filter(|i| keep(i)) {
                if skip > 0 {
                    skip -= 1;
                } else if items.len() < window.take {
                    items.push(item);
                } else {
                    return Ok((items, true));
                }
            }
            match reply.next_link() {
                Some(next) if items.len() < window.take => {
                    reply = self.api.fetch(tool, "GET", &next, None)?
                }
                next => return Ok((items, next.is_some())),
            }
        }
    }

    fn get_issues(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "get_issues";
        let labels = args
            .get("labels")
            .and_then(Value::as_array)
            .map(|l| l.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(","))
            .unwrap_or_default();
        let state = optional(args, "state").unwrap_or_else(|| "open".into());
        let sort = optional(args, "sort").map(|s| s.trim_end_matches("_at").to_owned());
        let query = [
            ("state", state.clone()),
            ("labels", labels),
            ("assignee", optional(args, "assignee").unwrap_or_default()),
            ("sort", sort.unwrap_or_default()),
            ("direction", optional(args, "sort_order").unwrap_or_default()),
        ];
        let path = format!("/repos/{}/issues", self.repo);
        // The issues endpoint lists pull requests too; they are not issues.
        let (found, more) = self.list(tool, &path, &query, args, |i| i.get("pull_request").is_none())?;
        let issues: Vec<Value> = found.iter().map(issue).collect();
        let summary = format!(
            "{} {state} issue(s) in {}{}",
            issues.len(),
            self.repo,
            if more { " (more: raise offset)" } else { "" }
        );
        Ok(result(summary, json!({"issues": issues, "has_more": more})))
    }

    fn get_issue(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "get_issue";
        let n = number(tool, &required(args, "key")?)?;
        let reply = self.api.get(tool, &format!("/repos/{}/issues/{n}", self.repo))?;
        let mut value = issue(&reply.body);
        value["body"] = reply.body["body"].clone();
        let summary = format!(
            "#{n} {} ({})",
            reply.body["title"].as_str().unwrap_or(""),
            value["state"]
        );
        Ok(result(summary, value))
    }

    fn get_issue_comments(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "get_issue_comments";
        let n = number(tool, &required(args, "key")?)?;
        let path = format!("/repos/{}/issues/{n}/comments", self.repo);
        let (found, more) = self.list(tool, &path, &[], args, |_| true)?;
        let comments: Vec<Value> = found
            .iter()
            .map(|c| json!({"id": c["id"], "author": c["user"]["login"], "body": c["body"], "created_at": c["created_at"]}))
            .collect();
        let summary = format!("{} comment(s) on #{n}", comments.len());
        Ok(result(
            summary,
            json!({"key": format!("#{n}"), "comments": comments, "has_more": more}),
        ))
    }
}
