//! GitHub enricher: adapts the issue-tracker and git-repository tools to
//! GitHub and describes their value for speculative prefetch.
//!
//! - Removes what GitHub has no notion of (priority, parent, custom fields,
//!   issue types, components, projects, points; tracker queries on
//!   `get_issues`; every parameter of `link_issues`, which GitHub lacks).
//! - `create_merge_request_comment`: `line_type` `old` becomes `side: LEFT`,
//!   anything else `side: RIGHT`, the way GitHub's review-comment API takes it.
//! - Follow-ups project the real argument of the follow-up tools, `key`
//!   (`pr#12`, `#42`), unlike the reference which projected
//!   `pull_request_number` into tools that take `key`.
//! - Every call goes to the configured API (`base_url`, by default
//!   `https://api.github.com`), whose host is the rate-limit host.
//!
//! The same component runs the tools (`tools`): one `.wasm` does
//! everything. Config: `owner` and `repo` (required), `base_url` (GitHub
//! Enterprise: `https://HOST/api/v3`).

mod actions;
mod issues;
mod pulls;
mod repository;
mod tools;

use provider_kit::api::{self, Api};
use provider_kit::{field, git_host, is_write, items, project, repo, write_model};
use toolhost_sdk::{Args, Enricher, FollowUpLink, Plugin, Schema, Value, ValueModel, json};

const PUBLIC_API: &str = "https://api.github.com";

struct GitHub {
    api: Api,
    /// `owner/repo`, as paths and summaries spell it.
    repo: String,
    /// The API's host, for per-host prefetch caps.
    host: String,
}

impl Plugin for GitHub {
    fn new(config: &Value) -> Result<Self, String> {
        let base = api::base_url("GitHub", config, PUBLIC_API)?;
        let part = |name: &str| {
            config
                .get(name)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty() && !s.contains('/'))
                .map(str::to_owned)
                .ok_or_else(|| {
                    format!("GitHub: config `{name}` is required (the repository is `owner/repo`)")
                })
        };
        let repo = format!("{}/{}", part("owner")?, part("repo")?);
        Ok(GitHub {
            host: api::host_of(&base),
            api: Api {
                provider: "GitHub",
                base,
                secret: "github",
                needs: "a token with the `repo` scope (or a fine-grained token with Issues, Pull requests, \
                        Contents and Actions access to the repository)",
                headers: vec![
                    ("accept".into(), "application/vnd.github+json".into()),
                    ("x-github-api-version".into(), "2022-11-28".into()),
                ],
            },
            repo,
        })
    }
}

impl Enricher for GitHub {
    fn supported_categories(&self) -> Vec<String> {
        vec!["issue_tracker".into(), "git_repository".into()]
    }

    fn enrich_schema(&self, tool: &str, schema: &mut Schema<'_>) -> Result<(), String> {
        if tool == "link_issues" {
            let all = schema.property_names();
            schema.remove_params(&all.iter().map(String::as_str).collect::<Vec<_>>());
            schema.set_tool_description("Not supported by GitHub: issues cannot be linked.")?;
            return Ok(());
        }
        git_host::remove_tracker_fields(tool, schema);
        Ok(())
    }

    // Only a review comment's `line_type` becomes GitHub's `side`.
    fn transforms_args(&self, tool: &str) -> bool {
        tool == "create_merge_request_comment"
    }

    fn transform_args(&self, tool: &str, args: &mut Args<'_>) -> Result<(), String> {
        if tool == "create_merge_request_comment"
            && let Some(line_type) = args.remove("line_type")?
        {
            let side = if line_type == json!("old") {
                "LEFT"
            } else {
                "RIGHT"
            };
            args.set("side", &json!(side))?;
        }
        Ok(())
    }

    fn value_model(&self, tool: &str) -> Option<ValueModel> {
        let link = |to: &str, p: f32| FollowUpLink::new(to, p).projecting("key", "key");
        let read = || ValueModel::read_only().rate_limit_host(&self.host);
        let model = match tool {
            "get_merge_requests" => read()
                .supporting()
                .typical_kb(4.5)
                .max_kb(45.0)
                .latency_ms_p50(380)
                .ttl_s(60)
                .follow_up(link("get_merge_request_discussions", 0.60))
                .follow_up(link("get_merge_request_diffs", 0.40)),
            "get_merge_request" => read()
                .critical()
                .typical_kb(1.6)
                .follow_up(link("get_merge_request_discussions", 0.55)),
            "get_merge_request_discussions" | "get_merge_request_diffs" => {
                read().critical().typical_kb(6.0).max_kb(60.0)
            }
            "get_issues" => read()
                .supporting()
                .typical_kb(3.5)
                .follow_up(link("get_issue", 0.55))
                .follow_up(link("get_issue_comments", 0.45)),
            "get_issue" => read()
                .critical()
                .typical_kb(1.0)
                .follow_up(link("get_issue_comments", 0.50)),
            "get_issue_comments" => read().critical().typical_kb(2.5).max_kb(20.0),
            t if repo::is_repository_read(t) => repo::model(t, read()),
            t if is_write(t) => stale_after(t)
                .iter()
                .fold(write_model(), |m, read| m.invalidates(*read))
                .supporting()
                .typical_kb(0.8)
                .rate_limit_host(&self.host),
            _ => return None,
        };
        Some(model)
    }

    fn project_args(&self, prev_tool: &str, prev_result: &Value, link: &FollowUpLink) -> Option<Vec<Value>> {
        if repo::is_repository_read(prev_tool) {
            return repo::project_repository(prev_tool, prev_result, &link.tool);
        }
        let projected = match prev_tool {
            "get_merge_requests" => {
                let list = items(prev_result, &["pull_requests", "merge_requests", "items"]);
                project(list, "key", |i| git_host::change_key(i, "pr", &["number"]))
            }
            "get_issues" => {
                let list = items(prev_result, &["issues", "items"]);
                project(list, "key", |i| {
                    field(i, "key").or_else(|| field(i, "number").map(|n| format!("#{n}")))
                })
            }
            "get_merge_request" | "get_issue" => {
                let key = git_host::change_key(
                    prev_result,
                    if prev_tool == "get_issue" { "" } else { "pr" },
                    &["number"],
                )?;
                vec![json!({"key": key})]
            }
            _ => return None,
        };
        (link.tool.starts_with("get_")).then_some(projected)
    }

    fn rate_limit_host(&self, _tool: &str, _args: &Args<'_>) -> Option<String> {
        Some(self.host.clone())
    }
}

/// The reads a write makes stale. A pull request is an issue too, so its
/// general comments are issue comments.
fn stale_after(write: &str) -> &'static [&'static str] {
    match write {
        "create_issue" => &["get_issues"],
        "update_issue" => &["get_issue", "get_issues"],
        "add_issue_comment" => &["get_issue_comments", "get_issue", "get_issues"],
        "create_merge_request" => &["get_merge_requests", "get_issues"],
        "update_merge_request" => &["get_merge_request", "get_merge_requests"],
        "create_merge_request_comment" => &["get_merge_request_discussions", "get_issue_comments"],
        "run_pipeline_job" => &["get_pipeline", "get_job_logs"],
        _ => &[],
    }
}

toolhost_sdk::export_plugin!(GitHub);
