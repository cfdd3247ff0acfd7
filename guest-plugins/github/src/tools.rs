//! The GitHub tools: base-catalog tools run against GitHub's REST API (v3)
//! for the configured repository. Keys are `#42` for issues and `pr#12` for
//! pull requests (merge requests in the catalog's words); a bare number is
//! accepted too. This module lists the tools, dispatches calls and owns
//! GitHub's pagination; `issues`, `pulls`, `actions` and `repository` own
//! the calls.
//!
//! Not served (GitHub's REST API has no such thing): relations, custom
//! fields, sprints, versions, attachments, issue links.

use provider_kit::api::{Listing, catalog_tool, statuses_schema, uint};
use toolhost_sdk::{CallContext, ToolDefinition, ToolError, ToolResult, Tools, Value};

use crate::GitHub;

/// GitHub's largest page.
pub const MAX_PER_PAGE: u64 = 100;
/// Pages one call reads when it needs a whole list (discussions, files):
/// GitHub lists at most 3000 files of a pull request.
const MAX_PAGES: usize = 30;

impl Tools for GitHub {
    fn tools(&self) -> Vec<ToolDefinition> {
        let issue = |name, what| catalog_tool(name, "issue_tracker", what);
        let git = |name, what| catalog_tool(name, "git_repository", what);
        vec![
            issue(
                "get_issues",
                "List the repository's issues (pull requests left out); `search` uses GitHub's issue search.",
            ),
            issue("get_issue", "One issue, by key (`#42`)."),
            issue("get_issue_comments", "The comments of an issue."),
            issue("get_available_statuses", "GitHub issues are open or closed.")
                .output_schema(statuses_schema()),
            issue(
                "get_users",
                "Search GitHub users, or list the repository's assignable users.",
            ),
            issue("create_issue", "Open an issue in the repository."),
            issue(
                "update_issue",
                "Change an issue's title, body, state, labels or assignees.",
            ),
            issue("add_issue_comment", "Comment on an issue."),
            git("get_merge_requests", "List the repository's pull requests."),
            git("get_merge_request", "One pull request, by key (`pr#12`)."),
            git(
                "get_merge_request_discussions",
                "A pull request's conversation: comments, reviews and review threads on diff lines.",
            ),
            git(
                "get_merge_request_diffs",
                "The files a pull request changes, with their patches.",
            ),
            git(
                "get_pipeline",
                "The GitHub Actions workflow runs of a branch's or pull request's head commit, with jobs.",
            ),
            git("get_job_logs", "A GitHub Actions job's log."),
            git("create_merge_request", "Open a pull request."),
            git(
                "create_merge_request_comment",
                "Comment on a pull request: on a diff line, as a reply to a review thread, or in its conversation.",
            ),
            git(
                "update_merge_request",
                "Change a pull request's title, body, state, base, labels or reviewers.",
            ),
            git("run_pipeline_job", "Re-run a GitHub Actions job."),
            git(
                "get_repository_file",
                "A file's content (decoded; large files truncated) or a directory's entries, at a ref.",
            ),
            git("get_commits", "List the repository's commits, newest first."),
            git(
                "get_commit",
                "One commit, by SHA or ref: message, author, parents and changed files with patches.",
            ),
            git(
                "get_branches",
                "List the repository's branches with their head commits.",
            ),
            git(
                "search_code",
                "GitHub code search in the repository (its default branch).",
            ),
        ]
    }

    fn execute(&self, tool: &str, args: Value, _ctx: &CallContext<'_>) -> Result<ToolResult, ToolError> {
        match tool {
            "get_issues" => self.get_issues(&args),
            "get_issue" => self.get_issue(&args),
            "get_issue_comments" => self.get_issue_comments(&args),
            "get_available_statuses" => Ok(self.get_available_statuses()),
            "get_users" => self.get_users(&args),
            "create_issue" => self.create_issue(&args),
            "update_issue" => self.update_issue(&args),
            "add_issue_comment" => self.add_issue_comment(&args),
            "get_merge_requests" => self.get_merge_requests(&args),
            "get_merge_request" => self.get_merge_request(&args),
            "get_merge_request_discussions" => self.get_merge_request_discussions(&args),
            "get_merge_request_diffs" => self.get_merge_request_diffs(&args),
            "create_merge_request" => self.create_merge_request(&args),
            "update_merge_request" => self.update_merge_request(&args),
            "create_merge_request_comment" => self.create_merge_request_comment(&args),
            "get_pipeline" => self.get_pipeline(&args),
            "get_job_logs" => self.get_job_logs(&args),
            "run_pipeline_job" => self.run_pipeline_job(&args),
            "get_repository_file" => self.get_repository_file(&args),
            "get_commits" => self.get_commits(&args),
            "get_commit" => self.get_commit(&args),
            "get_branches" => self.get_branches(&args),
            "search_code" => self.search_code(&args),
            other => Err(ToolError::NotFound(format!("GitHub has no tool `{other}`"))),
        }
    }
}

/// The number in a key: `#42`, `pr#12`, `42`.
pub fn number(tool: &str, key: &str) -> Result<u64, ToolError> {
    key.rsplit('#')
        .next()
        .and_then(|n| n.trim().parse().ok())
        .ok_or_else(|| {
            ToolError::InvalidArgs(format!(
                "GitHub {tool}: `key` must be like `#42` or `pr#12`, not `{key}`"
            ))
        })
}

/// The `login`s of a list of users (or the `name`s of labels).
pub fn names(value: &Value, list: &str, field: &str) -> Vec<Value> {
    value
        .get(list)
        .and_then(Value::as_array)
        .map(|l| l.iter().filter_map(|x| x.get(field).cloned()).collect())
        .unwrap_or_default()
}

impl GitHub {
    /// Items `[offset, offset+limit)` of a list at `path` (with its
    /// query), the answer itself or its `field`, kept by `keep`; and
    /// whether more remain.
    pub fn list(
        &self,
        tool: &str,
        path: &str,
        query: &[(&str, String)],
        field: Option<&str>,
        (offset, limit): (u64, u64),
        keep: impl Fn(&Value) -> bool,
    ) -> Result<(Vec<Value>, bool), ToolError> {
        let listing = Listing {
            path,
            query,
            field,
            offset,
            limit,
            max_per_page: MAX_PER_PAGE,
        };
        self.api.list(tool, &listing, keep)
    }

    /// Every item of a list (up to [`MAX_PAGES`] full pages).
    pub fn all(&self, tool: &str, path: &str) -> Result<Vec<Value>, ToolError> {
        let limit = MAX_PER_PAGE * MAX_PAGES as u64;
        Ok(self.list(tool, path, &[], None, (0, limit), |_| true)?.0)
    }

    /// `offset` and `limit` of a list call.
    pub fn window(args: &Value, default_limit: u64) -> Result<(u64, u64), ToolError> {
        Ok((uint(args, "offset", 0)?, uint(args, "limit", default_limit)?))
    }
}
