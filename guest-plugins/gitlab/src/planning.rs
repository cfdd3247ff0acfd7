//! GitLab's planning objects behind the catalog's sprints and versions:
//! iterations are sprints (`get_board_sprints`, `assign_to_sprint`) and
//! milestones are versions (`list_project_versions`,
//! `upsert_project_version`).
//!
//! Iterations belong to the project's groups and are read through REST
//! (`/projects/:id/iterations`); REST cannot set an issue's iteration, so
//! `assign_to_sprint` runs GraphQL's `issueSetIteration` at `/api/graphql`
//! beside `/api/v4`, which names the project by path. A milestone is
//! "released" when it is closed; GitLab has no archived milestones.

use provider_kit::api::{Api, catalog_tool, encode, flag, optional, required, result, strings, uint};
use toolhost_sdk::{ToolDefinition, ToolError, ToolResult, Value, json};

use crate::GitLab;
use crate::tools::iid;

/// The reads a planning write makes stale.
pub fn stale_after(write: &str) -> &'static [&'static str] {
    match write {
        "assign_to_sprint" => &["get_issue", "get_issues", "get_board_sprints"],
        "upsert_project_version" => &["list_project_versions"],
        _ => &[],
    }
}

pub fn tools() -> Vec<ToolDefinition> {
    let issue = |name, what| catalog_tool(name, "issue_tracker", what);
    vec![
        issue(
            "get_board_sprints",
            "The iterations of the project's groups (current, upcoming, closed).",
        ),
        issue(
            "assign_to_sprint",
            "Put issues in an iteration (by its id from get_board_sprints).",
        ),
        issue(
            "list_project_versions",
            "The project's milestones; a closed milestone is released.",
        ),
        issue(
            "upsert_project_version",
            "Create a milestone, or update the one with that title.",
        ),
    ]
}

const SET_ITERATION: &str =
    "mutation IssueSetIteration($projectPath: ID!, $iid: String!, $iterationId: IterationID) {
  issueSetIteration(input: {projectPath: $projectPath, iid: $iid, iterationId: $iterationId}) {
    issue { iid iteration { id title } }
    errors
  }
}";

/// An iteration's `state` number in GitLab's answers.
fn iteration_state(n: &Value) -> &'static str {
    match n.as_u64() {
        Some(1) => "future",
        Some(2) => "active",
        Some(3) => "closed",
        _ => "unknown",
    }
}

fn milestone(m: &Value) -> Value {
    json!({"id": m["id"].to_string(), "name": m["title"], "description": m["description"],
           "startDate": m["start_date"], "releaseDate": m["due_date"],
           "released": m["state"] == json!("closed"), "url": m["web_url"]})
}

impl GitLab {
    /// The planning tools; any other name is not GitLab's.
    pub(crate) fn execute_planning(
        &self,
        tool: &str,
        p: &str,
        project: &str,
        args: &Value,
    ) -> Result<ToolResult, ToolError> {
        match tool {
            "get_board_sprints" => self.get_board_sprints(p, args),
            "assign_to_sprint" => self.assign_to_sprint(project, args),
            "list_project_versions" => self.list_project_versions(p, args),
            "upsert_project_version" => self.upsert_project_version(p, args),
            other => Err(ToolError::NotFound(format!("GitLab has no tool `{other}`"))),
        }
    }

    /// The project a version tool addresses: `projectKey`, else the configured one.
    fn version_project(p: &str, args: &Value) -> String {
        optional(args, "projectKey").map_or_else(|| p.to_owned(), |k| format!("/projects/{}", encode(&k)))
    }

    fn get_board_sprints(&self, p: &str, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "get_board_sprints";
        if optional(args, "boardId").is_some() {
            return Err(ToolError::InvalidArgs(format!(
                "GitLab {tool}: iterations belong to the project's groups, not to a board; leave out `boardId`"
            )));
        }
        let state = match optional(args, "state").as_deref() {
            None | Some("active") => "current",
            Some("future") => "upcoming",
            Some("closed") => "closed",
            Some("all") => "all",
            Some(other) => {
                return Err(ToolError::InvalidArgs(format!(
                    "GitLab {tool}: `state` is active, future, closed or all, not `{other}`"
                )));
            }
        };
        let limit = json!({"limit": uint(args, "limit", 20)?});
        let (found, more) = self.list(
            tool,
            &format!("{p}/iterations"),
            &[("state", state.to_owned())],
            &limit,
            20,
        )?;
        let sprints: Vec<Value> = found
            .iter()
            .map(|i| {
                json!({"id": i["id"].to_string(), "iid": i["iid"], "name": i["title"], "sequence": i["sequence"],
                       "state": iteration_state(&i["state"]), "startDate": i["start_date"],
                       "endDate": i["due_date"], "url": i["web_url"]})
            })
            .collect();
        Ok(result(
            format!("{} iteration(s) ({state})", sprints.len()),
            json!({"sprints": sprints, "has_more": more}),
        ))
    }

    fn assign_to_sprint(&self, project: &str, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "assign_to_sprint";
        if project.parse::<u64>().is_ok() {
            return Err(ToolError::Failed(format!(
                "GitLab {tool}: GitLab's GraphQL API names a project by path: set config `project` to \
                 `group/name` rather than the id {project}"
            )));
        }
        let sprint = required(args, "sprintId")?;
        let number = sprint.rsplit('/').next().unwrap_or_default();
        if number.parse::<u64>().is_err() {
            return Err(ToolError::InvalidArgs(format!(
                "GitLab {tool}: `sprintId` must be an iteration id from get_board_sprints, not `{sprint}`"
            )));
        }
        let keys = strings(args, "keys")?.unwrap_or_default();
        if keys.is_empty() {
            return Err(ToolError::InvalidArgs(format!("GitLab {tool}: `keys` is empty")));
        }
        let iids = keys
            .iter()
            .map(|k| iid(tool, &json!({"key": k})))
            .collect::<Result<Vec<_>, _>>()?;
        let graphql = self.graphql_api(tool)?;
        let mut moved = Vec::new();
        for n in iids {
            let variables = json!({"projectPath": project, "iid": n.to_string(),
                                   "iterationId": format!("gid://gitlab/Iteration/{number}")});
            let data = graphql.graphql(tool, "/graphql", SET_ITERATION, variables)?;
            let payload = &data["issueSetIteration"];
            let errors: Vec<&str> = payload["errors"]
                .as_array()
                .map(|e| e.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if !errors.is_empty() {
                return Err(ToolError::InvalidArgs(format!(
                    "GitLab {tool}: #{n}: {}",
                    errors.join("; ")
                )));
            }
            moved.push(json!({"key": format!("#{n}"), "iteration": payload["issue"]["iteration"]}));
        }
        Ok(result(
            format!("{} issue(s) put in iteration {number}", moved.len()),
            json!({"sprintId": number, "issues": moved}),
        ))
    }

    /// GitLab's GraphQL endpoint, `/api/graphql` beside the REST base `/api/v4`.
    fn graphql_api(&self, tool: &str) -> Result<Api, ToolError> {
        let root = self.api.base.strip_suffix("/v4").ok_or_else(|| {
            ToolError::Failed(format!(
                "GitLab {tool}: config `base_url` must end in `/api/v4` for GraphQL's `/api/graphql`, not {}",
                self.api.base
            ))
        })?;
        Ok(Api {
            base: root.to_owned(),
            ..self.api.clone()
        })
    }

    fn list_project_versions(&self, p: &str, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "list_project_versions";
        let project = Self::version_project(p, args);
        // Closed milestones are the released versions.
        let state = if flag(args, "includeReleased")?.unwrap_or(true) {
            ""
        } else {
            "active"
        };
        let limit = json!({"limit": uint(args, "limit", 50)?});
        let (found, more) = self.list(
            tool,
            &format!("{project}/milestones"),
            &[("state", state.to_owned())],
            &limit,
            50,
        )?;
        let versions: Vec<Value> = found.iter().map(milestone).collect();
        Ok(result(
            format!("{} milestone(s)", versions.len()),
            json!({"versions": versions, "has_more": more}),
        ))
    }

    fn upsert_project_version(&self, p: &str, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "upsert_project_version";
        let project = Self::version_project(p, args);
        let name = required(args, "name")?;
        if flag(args, "archived")? == Some(true) {
            return Err(ToolError::InvalidArgs(format!(
                "GitLab {tool}: GitLab milestones cannot be archived (close one with `released: true`)"
            )));
        }
        let mut body = json!({});
        for (arg, field) in [
            ("description", "description"),
            ("startDate", "start_date"),
            ("releaseDate", "due_date"),
        ] {
            if let Some(v) = optional(args, arg) {
                body[field] = json!(v);
            }
        }
        let released = flag(args, "released")?;
        let existing = self
            .api
            .get(tool, &format!("{project}/milestones?title={}", encode(&name)))?
            .body
            .get(0)
            .cloned();
        let (what, reply) = match existing {
            Some(m) => {
                match released {
                    Some(true) => body["state_event"] = json!("close"),
                    Some(false) => body["state_event"] = json!("activate"),
                    None => {}
                }
                let path = format!("{project}/milestones/{}", m["id"]);
                ("updated", self.api.send(tool, "PUT", &path, Some(&body))?)
            }
            None => {
                body["title"] = json!(name);
                let made = self
                    .api
                    .send(tool, "POST", &format!("{project}/milestones"), Some(&body))?;
                // A milestone is created active; a released one is then closed.
                if released == Some(true) {
                    let path = format!("{project}/milestones/{}", made.body["id"]);
                    let close = json!({"state_event": "close"});
                    ("created", self.api.send(tool, "PUT", &path, Some(&close))?)
                } else {
                    ("created", made)
                }
            }
        };
        Ok(result(format!("{what} milestone {name}"), milestone(&reply.body)))
    }
}
