//! GitLab enricher: adapts the issue-tracker and git-repository tools to
//! GitLab and describes their value for speculative prefetch.
//!
//! - The same removals as GitHub (GitLab's tracker has no priority, custom
//!   fields, components, ...); `link_issues` gets GitLab's link types.
//! - Follow-ups project `key` (`mr#12`, `#42`) from a merge request's `iid`,
//!   the argument the follow-up tools take; the reference projected a bare
//!   `iid` into `key`.
//! - GitLab is often self-hosted: the rate-limit host is the `host` of the
//!   plugin's config (`host = "gitlab.example.com"`), else the host of
//!   `base_url` (by default `https://gitlab.com/api/v4`).
//!
//! The same component runs the tools (`tools`). Config: `project` (id or
//! `group/name` path; required by the tools), `base_url`.

mod assets;
mod planning;
mod repository;
mod tools;

use provider_kit::api::{self, Api};
use provider_kit::{field, git_host, is_write, items, project, repo, write_model};
use toolhost_sdk::{Args, Enricher, FollowUpLink, Plugin, Schema, Value, ValueModel, json};

const PUBLIC_API: &str = "https://gitlab.com/api/v4";

struct GitLab {
    host: Option<String>,
    api: Api,
    /// The project's id or path, as configured (`None`: the tools refuse).
    project: Option<String>,
}

impl Plugin for GitLab {
    fn new(config: &Value) -> Result<Self, String> {
        let host = match config.get("host") {
            None => None,
            Some(Value::String(h)) if !h.is_empty() && !h.contains(['/', ' ']) => Some(h.clone()),
            Some(other) => {
                return Err(format!(
                    "config: `host` must be a host name such as \"gitlab.com\", not {other}"
                ));
            }
        };
        let base = api::base_url("GitLab", config, PUBLIC_API)?;
        let project = match config.get("project") {
            None => None,
            Some(Value::String(p)) if !p.is_empty() => Some(p.clone()),
            Some(Value::Number(n)) => Some(n.to_string()),
            Some(other) => {
                return Err(format!(
                    "GitLab: config `project` must be a project id or path such as \"group/name\", not {other}"
                ));
            }
        };
        Ok(GitLab {
            host: host.or_else(|| Some(api::host_of(&base))),
            api: Api {
                provider: "GitLab",
                base,
                secret: "gitlab",
                needs: "a personal access token with the `api` scope (`read_api` for reads only)",
                headers: vec![("accept".into(), "application/json".into())],
            },
            project,
        })
    }
}

impl GitLab {
    fn read(&self) -> ValueModel {
        let model = ValueModel::read_only();
        match &self.host {
            Some(h) => model.rate_limit_host(h.clone()),
            None => model,
        }
    }
}

impl Enricher for GitLab {
    fn supported_categories(&self) -> Vec<String> {
        vec!["issue_tracker".into(), "git_repository".into()]
    }

    fn enrich_schema(&self, tool: &str, schema: &mut Schema<'_>) -> Result<(), String> {
        git_host::remove_tracker_fields(tool, schema);
        // An enricher before this one may have taken the field away.
        if matches!(tool, "link_issues" | "unlink_issues") && schema.has_property("link_type") {
            schema.set_enum("link_type", ["relates_to", "blocks", "is_blocked_by"])?;
        }
        Ok(())
    }

    // GitLab takes the catalog's arguments as they are.
    fn transforms_args(&self, _tool: &str) -> bool {
        false
    }

    fn value_model(&self, tool: &str) -> Option<ValueModel> {
        let link = |to: &str, p: f32| FollowUpLink::new(to, p).projecting("key", "key");
        let model = match tool {
            "get_merge_requests" => self
                .read()
                .supporting()
                .typical_kb(4.0)
                .max_kb(40.0)
                .latency_ms_p50(450)
                .ttl_s(60)
                .follow_up(link("get_merge_request_discussions", 0.62))
                .follow_up(link("get_merge_request_diffs", 0.41)),
            "get_merge_request" => self
                .read()
                .critical()
                .follow_up(link("get_merge_request_discussions", 0.55)),
            "get_merge_request_discussions" | "get_merge_request_diffs" => {
                self.read().critical().typical_kb(6.0).max_kb(60.0)
            }
            "get_issues" => self
                .read()
                .supporting()
                .follow_up(link("get_issue_comments", 0.48))
                .follow_up(link("get_issue", 0.55)),
            "get_issue" => self.read().critical().follow_up(link("get_issue_comments", 0.50)),
            "get_issue_comments" => self.read().critical().typical_kb(2.5).max_kb(20.0),
            "get_assets" | "download_asset" => self.read().critical(),
            t if repo::is_repository_read(t) => repo::model(t, self.read()),
            "get_issue_relations"
            | "get_available_statuses"
            | "get_board_sprints"
            | "list_project_versions" => self.read().supporting(),
            t if is_write(t) => {
                let model = tools::stale_after(t)
                    .iter()
                    .chain(assets::stale_after(t))
                    .fold(write_model(), |m, read| m.invalidates(*read))
                    .supporting();
                match &self.host {
                    Some(h) => model.rate_limit_host(h.clone()),
                    None => model,
                }
            }
            _ => return None,
        };
        Some(model)
    }

    fn project_args(&self, prev_tool: &str, prev_result: &Value, link: &FollowUpLink) -> Option<Vec<Value>> {
        if !link.tool.starts_with("get_") {
            return None;
        }
        if repo::is_repository_read(prev_tool) {
            return repo::project_repository(prev_tool, prev_result, &link.tool);
        }
        Some(match prev_tool {
            "get_merge_requests" => {
                let list = items(prev_result, &["merge_requests", "items"]);
                project(list, "key", |i| git_host::change_key(i, "mr", &["iid"]))
            }
            "get_merge_request" => vec![json!({"key": git_host::change_key(prev_result, "mr", &["iid"])?})],
            "get_issues" => {
                let list = items(prev_result, &["issues", "items"]);
                project(list, "key", |i| {
                    field(i, "key").or_else(|| field(i, "iid").map(|n| format!("#{n}")))
                })
            }
            "get_issue" => vec![json!({"key": git_host::change_key(prev_result, "", &["iid"])?})],
            _ => return None,
        })
    }

    fn rate_limit_host(&self, _tool: &str, _args: &Args<'_>) -> Option<String> {
        self.host.clone()
    }
}

toolhost_sdk::export_plugin!(GitLab);
