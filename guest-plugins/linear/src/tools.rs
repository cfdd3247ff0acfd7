//! The Linear tools: base-catalog issue-tracker tools run against Linear's
//! GraphQL API (`POST {base_url}/graphql`). Keys are Linear identifiers
//! (`ENG-12`); Linear also takes an issue's UUID wherever a key goes.
//!
//! Names the model gives (a status, labels, an assignee, a parent key, a
//! team) are looked up to Linear's ids before a write; a name that matches
//! nothing is an invalid-arguments error naming it. Linear lists are Relay
//! connections (`first`/`after` cursors, forward only), walked to serve the
//! catalog's `limit`/`offset`.

use provider_kit::api::{catalog_tool, optional, required, result, strings, uint};
use toolhost_sdk::{CallContext, ToolDefinition, ToolError, ToolResult, Tools, Value, json};

use crate::Linear;

/// Linear's largest page.
const MAX_PAGE: u64 = 250;
/// Most items a list walks past for an offset, so a huge offset is an
/// error rather than a hundred requests.
const MAX_OFFSET: u64 = 2_500;
/// Most comments read (one page) to sort an issue's thread oldest first.
const MAX_COMMENTS: usize = 250;

/// The fields of an issue every tool returns.
const ISSUE: &str = "id identifier title priority priorityLabel estimate url createdAt updatedAt \
                     state { name type } assignee { name email } labels { nodes { name } } \
                     team { key } project { id name } parent { identifier } cycle { id number }";

/// Linear's priorities by the enricher's names (0 is "no priority").
const PRIORITIES: [(&str, u64); 5] = [("none", 0), ("urgent", 1), ("high", 2), ("medium", 3), ("low", 4)];

impl Tools for Linear {
    fn tools(&self) -> Vec<ToolDefinition> {
        let t = |name, what| catalog_tool(name, "issue_tracker", what);
        vec![
            t(
                "get_issues",
                "List Linear issues (of the configured team, if any), newest first.",
            ),
            t("get_issue", "One Linear issue, by identifier (`ENG-12`)."),
            t(
                "get_issue_comments",
                "The comments of a Linear issue, oldest first.",
            ),
            t(
                "get_issue_relations",
                "A Linear issue's parent, sub-issues and relations.",
            ),
            t(
                "get_available_statuses",
                "The workflow states of the configured team (or all teams).",
            ),
            t("get_users", "Linear users, by name or email."),
            t(
                "get_board_sprints",
                "Linear cycles of a team (`boardId` is the team key).",
            ),
            t("create_issue", "Create a Linear issue in the configured team."),
            t(
                "update_issue",
                "Update a Linear issue; only the fields given change.",
            ),
            t("add_issue_comment", "Comment on a Linear issue."),
            t(
                "link_issues",
                "Relate two Linear issues: blocks, blocked_by, duplicates or relates_to.",
            ),
            t("unlink_issues", "Remove the relations between two Linear issues."),
            t("assign_to_sprint", "Move Linear issues into a cycle."),
        ]
    }

    fn execute(&self, tool: &str, args: Value, _ctx: &CallContext<'_>) -> Result<ToolResult, ToolError> {
        match tool {
            "get_issues" => self.get_issues(&args),
            "get_issue" => self.get_issue(&args),
            "get_issue_comments" => self.get_issue_comments(&args),
            "get_issue_relations" => self.get_issue_relations(&args),
            "get_available_statuses" => self.get_available_statuses(),
            "get_users" => self.get_users(&args),
            "get_board_sprints" => self.get_board_sprints(&args),
            "create_issue" => self.create_issue(&args),
            "update_issue" => self.update_issue(&args),
            "add_issue_comment" => self.add_issue_comment(&args),
            "link_issues" => self.link_issues(&args),
            "unlink_issues" => self.unlink_issues(&args),
            "assign_to_sprint" => self.assign_to_sprint(&args),
            other => Err(ToolError::NotFound(format!("Linear has no tool `{other}`"))),
        }
    }
}

/// An issue as the tools return it.
fn issue(i: &Value) -> Value {
    let labels: Vec<Value> = i["labels"]["nodes"]
        .as_array()
        .map(|l| l.iter().map(|x| x["name"].clone()).collect())
        .unwrap_or_default();
    json!({
        "key": i["identifier"],
        "id": i["id"],
        "title": i["title"],
        "status": i["state"]["name"],
        "state_type": i["state"]["type"],
        "priority": i["priorityLabel"],
        "estimate": i["estimate"],
        "labels": labels,
        "assignee": i["assignee"]["email"].as_str().or(i["assignee"]["name"].as_str()),
        "team": i["team"]["key"],
        "project": i["project"]["name"],
        "parent": i["parent"]["identifier"],
        "cycle": i["cycle"]["number"],
        "url": i["url"],
        "created_at": i["createdAt"],
        "updated_at": i["updatedAt"],
    })
}

fn invalid(tool: &str, why: impl std::fmt::Display) -> ToolError {
    ToolError::InvalidArgs(format!("Linear {tool}: {why}"))
}

/// The team key of an identifier: `ENG` of `ENG-12`.
fn team_of(key: &str) -> Option<&str> {
    key.rsplit_once('-')
        .filter(|(team, n)| !team.is_empty() && n.parse::<u64>().is_ok())
        .map(|(team, _)| team)
}

impl Linear {
    fn query(&self, tool: &str, query: &str, variables: Value) -> Result<Value, ToolError> {
        self.api.graphql(tool, "/graphql", query, variables)
    }

    /// A mutation's payload under `field`, which must report `success`.
    fn mutate(&self, tool: &str, field: &str, query: &str, variables: Value) -> Result<Value, ToolError> {
        let data = self.query(tool, query, variables)?;
        let payload = data[field].clone();
        if payload["success"] != json!(true) {
            return Err(ToolError::Failed(format!(
                "Linear {tool}: {field} did not succeed"
            )));
        }
        Ok(payload)
    }

    /// Items `[offset, offset+limit)` of the connection at `path` in the
    /// answers to `query` (which takes `$first` and `$after`), and whether
    /// more remain.
    fn walk(
        &self,
        tool: &str,
        query: &str,
        variables: Value,
        path: &[&str],
        offset: u64,
        limit: u64,
    ) -> Result<(Vec<Value>, bool), ToolError> {
        if offset > MAX_OFFSET {
            return Err(invalid(tool, format!("`offset` is at most {MAX_OFFSET}")));
        }
        let limit = limit.clamp(1, MAX_PAGE);
        let want = (offset + limit) as usize;
        let first = (offset + limit).min(MAX_PAGE);
        let mut seen: Vec<Value> = Vec::new();
        let mut after = Value::Null;
        loop {
            let mut vars = variables.clone();
            vars["first"] = json!(first);
            vars["after"] = after.clone();
            let data = self.query(tool, query, vars)?;
            let connection = path.iter().fold(&data, |v, p| &v[*p]);
            if connection.is_null() {
                return Err(ToolError::NotFound(format!("Linear {tool}: not found")));
            }
            seen.extend(connection["nodes"].as_array().cloned().unwrap_or_default());
            let next = connection["pageInfo"]["hasNextPage"] == json!(true);
            if seen.len() >= want || !next {
                let more = next || seen.len() > want;
                let items = seen
                    .into_iter()
                    .skip(offset as usize)
                    .take(limit as usize)
                    .collect();
                return Ok((items, more));
            }
            after = connection["pageInfo"]["endCursor"].clone();
        }
    }

    fn get_issues(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "get_issues";
        if optional(args, "sort_order").as_deref() == Some("asc") {
            return Err(invalid(
                tool,
                "Linear lists newest first only; `sort_order: asc` is not supported",
            ));
        }
        let mut all: Vec<Value> = Vec::new();
        if let Some(team) = &self.config.team {
            all.push(json!({"team": {"key": {"eq": team}}}));
        }
        if let Some(text) = optional(args, "search") {
            all.push(json!({"or": [
                {"title": {"containsIgnoreCase": text}},
                {"description": {"containsIgnoreCase": text}},
            ]}));
        }
        match optional(args, "state").as_deref().unwrap_or("open") {
            "open" => all.push(json!({"state": {"type": {"nin": ["completed", "canceled"]}}})),
            "closed" => all.push(json!({"state": {"type": {"in": ["completed", "canceled"]}}})),
            "all" => {}
            other => {
                return Err(invalid(
                    tool,
                    format!("`state` is open, closed or all, not `{other}`"),
                ));
            }
        }
        if let Some(category) = optional(args, "stateCategory") {
            all.push(json!({"state": {"type": {"eq": category}}}));
        }
        if let Some(status) = optional(args, "status") {
            all.push(json!({"state": {"name": {"eqIgnoreCase": status}}}));
        }
        if let Some(labels) = strings(args, "labels")?.filter(|l| !l.is_empty()) {
            if optional(args, "labelsOperator").as_deref() == Some("or") {
                all.push(json!({"labels": {"some": {"name": {"in": labels}}}}));
            } else {
                all.extend(
                    labels
                        .iter()
                        .map(|l| json!({"labels": {"some": {"name": {"eqIgnoreCase": l}}}})),
                );
            }
        }
        if let Some(who) = optional(args, "assignee") {
            all.push(json!({"assignee": if who == "me" {
                json!({"isMe": {"eq": true}})
            } else {
                json!({"or": [{"email": {"eq": who}}, {"displayName": {"eqIgnoreCase": who}}, {"name": {"eqIgnoreCase": who}}]})
            }}));
        }
        let order = match optional(args, "sort").as_deref() {
            Some("created_at") => "createdAt",
            _ => "updatedAt",
        };
        let query = format!(
            "query Issues($filter: IssueFilter, $first: Int!, $after: String, $orderBy: PaginationOrderBy) {{ \
             issues(filter: $filter, first: $first, after: $after, orderBy: $orderBy) {{ \
             nodes {{ {ISSUE} }} pageInfo {{ hasNextPage endCursor }} }} }}"
        );
        let filter = if all.is_empty() {
            Value::Null
        } else {
            json!({"and": all})
        };
        let (found, more) = self.walk(
            tool,
            &query,
            json!({"filter": filter, "orderBy": order}),
            &["issues"],
            uint(args, "offset", 0)?,
            uint(args, "limit", 20)?,
        )?;
        let issues: Vec<Value> = found.iter().map(issue).collect();
        let scope = self
            .config
            .team
            .as_deref()
            .map(|t| format!(" in {t}"))
            .unwrap_or_default();
        let summary = format!(
            "{} Linear issue(s){scope}{}",
            issues.len(),
            if more { " (more: raise offset)" } else { "" }
        );
        Ok(result(summary, json!({"issues": issues, "has_more": more})))
    }

    /// The issue `key` with `fields` (besides the common ones).
    fn fetch_issue(&self, tool: &str, key: &str, fields: &str) -> Result<Value, ToolError> {
        let query = format!("query Issue($id: String!) {{ issue(id: $id) {{ {ISSUE} {fields} }} }}");
        let data = self.query(tool, &query, json!({"id": key}))?;
        match &data["issue"] {
            Value::Null => Err(ToolError::NotFound(format!("Linear {tool}: no issue `{key}`"))),
            found => Ok(found.clone()),
        }
    }

    fn get_issue(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "get_issue";
        let key = required(args, "key")?;
        let found = self.fetch_issue(tool, &key, "description")?;
        let mut value = issue(&found);
        value["description"] = found["description"].clone();
        if args.get("includeComments") == Some(&json!(true)) {
            value["comments"] = json!(self.comments(tool, &key)?);
        }
        if args.get("includeRelations") == Some(&json!(true)) {
            value["relations"] = self.relations(tool, &key)?;
        }
        let summary = format!(
            "{} {} ({})",
            value["key"].as_str().unwrap_or(&key),
            found["title"].as_str().unwrap_or(""),
            found["state"]["name"].as_str().unwrap_or("?")
        );
        Ok(result(summary, value))
    }

    /// Every comment of `key` (up to [`MAX_COMMENTS`]), oldest first.
    fn comments(&self, tool: &str, key: &str) -> Result<Vec<Value>, ToolError> {
        let query = "query IssueComments($id: String!, $first: Int!, $after: String) { issue(id: $id) { \
                     comments(first: $first, after: $after) { nodes { id body createdAt user { name email } } \
                     pageInfo { hasNextPage endCursor } } } }";
        let (mut found, _) = self.walk(
            tool,
            query,
            json!({"id": key}),
            &["issue", "comments"],
            0,
            MAX_COMMENTS as u64,
        )?;
        found.sort_by(|a, b| a["createdAt"].as_str().cmp(&b["createdAt"].as_str()));
        Ok(found
            .iter()
            .map(|c| {
                json!({"id": c["id"], "author": c["user"]["name"], "body": c["body"], "created_at": c["createdAt"]})
            })
            .collect())
    }

    fn get_issue_comments(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "get_issue_comments";
        let key = required(args, "key")?;
        let all = self.comments(tool, &key)?;
        let (offset, limit) = (
            uint(args, "offset", 0)? as usize,
            uint(args, "limit", 50)? as usize,
        );
        let more = all.len() > offset + limit;
        let comments: Vec<Value> = all.into_iter().skip(offset).take(limit).collect();
        let summary = format!("{} comment(s) on {key}", comments.len());
        Ok(result(
            summary,
            json!({"key": key, "comments": comments, "has_more": more}),
        ))
    }

    fn relations(&self, tool: &str, key: &str) -> Result<Value, ToolError> {
        let found = self.fetch_issue(
            tool,
            key,
            "children { nodes { identifier title } } \
             relations { nodes { id type relatedIssue { identifier title } } } \
             inverseRelations { nodes { id type issue { identifier title } } }",
        )?;
        let nodes = |v: &Value| v["nodes"].as_array().cloned().unwrap_or_default();
        let mut links: Vec<Value> = nodes(&found["relations"])
            .iter()
            .map(|r| json!({"id": r["id"], "type": r["type"], "direction": "outward", "key": r["relatedIssue"]["identifier"], "title": r["relatedIssue"]["title"]}))
            .collect();
        links.extend(nodes(&found["inverseRelations"]).iter().map(|r| {
            json!({"id": r["id"], "type": r["type"], "direction": "inward", "key": r["issue"]["identifier"], "title": r["issue"]["title"]})
        }));
        let subtasks: Vec<Value> = nodes(&found["children"])
            .iter()
            .map(|c| json!({"key": c["identifier"], "title": c["title"]}))
            .collect();
        Ok(json!({"parent": found["parent"]["identifier"], "subtasks": subtasks, "links": links}))
    }

    fn get_issue_relations(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "get_issue_relations";
        let key = required(args, "key")?;
        let mut value = self.relations(tool, &key)?;
        let summary = format!(
            "{key}: {} sub-issue(s), {} relation(s)",
            value["subtasks"].as_array().map_or(0, Vec::len),
            value["links"].as_array().map_or(0, Vec::len)
        );
        value["key"] = json!(key);
        Ok(result(summary, value))
    }

    /// Workflow states matching `filter` (and the team, if given).
    fn states(&self, tool: &str, team: Option<&str>, filter: Value) -> Result<Vec<Value>, ToolError> {
        let mut filter = filter;
        if let Some(team) = team {
            filter["team"] = json!({"key": {"eq": team}});
        }
        let query = "query WorkflowStates($filter: WorkflowStateFilter) { workflowStates(filter: $filter, first: 250) { \
                     nodes { id name type position team { key } } } }";
        let data = self.query(tool, query, json!({"filter": filter}))?;
        Ok(data["workflowStates"]["nodes"]
            .as_array()
            .cloned()
            .unwrap_or_default())
    }

    fn get_available_statuses(&self) -> Result<ToolResult, ToolError> {
        let tool = "get_available_statuses";
        let mut found = self.states(tool, self.config.team.as_deref(), json!({}))?;
        found.sort_by(|a, b| {
            let p = |s: &Value| s["position"].as_f64().unwrap_or(0.0);
            p(a).total_cmp(&p(b))
        });
        let statuses: Vec<Value> = found
            .iter()
            .map(|s| json!({"id": s["id"], "name": s["name"], "category": s["type"], "team": s["team"]["key"]}))
            .collect();
        let names: Vec<&str> = statuses.iter().filter_map(|s| s["name"].as_str()).collect();
        Ok(result(
            format!("{} status(es): {}", names.len(), names.join(", ")),
            json!({"statuses": statuses}),
        ))
    }

    fn get_users(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "get_users";
        let filter = if let Some(id) = optional(args, "userId") {
            json!({"id": {"eq": id}})
        } else if let Some(text) = optional(args, "search") {
            json!({"or": [
                {"name": {"containsIgnoreCase": text}},
                {"displayName": {"containsIgnoreCase": text}},
                {"email": {"containsIgnoreCase": text}},
            ]})
        } else {
            Value::Null
        };
        let limit = uint(args, "limit", 50)?.clamp(1, MAX_PAGE);
        let query = "query Users($filter: UserFilter, $first: Int!) { users(filter: $filter, first: $first) { \
                     nodes { id name displayName email active } } }";
        let data = self.query(tool, query, json!({"filter": filter, "first": limit}))?;
        let users: Vec<Value> = data["users"]["nodes"]
            .as_array()
            .map(|l| {
                l.iter()
                    .map(|u| json!({"id": u["id"], "name": u["name"], "username": u["displayName"], "email": u["email"], "active": u["active"]}))
                    .collect()
            })
            .unwrap_or_default();
        Ok(result(
            format!("{} Linear user(s)", users.len()),
            json!({"users": users}),
        ))
    }

    fn get_board_sprints(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "get_board_sprints";
        let team = optional(args, "boardId").or_else(|| self.config.team.clone());
        let mut filter = json!({});
        if let Some(team) = &team {
            filter["team"] = json!({"key": {"eq": team}});
        }
        match optional(args, "state").as_deref().unwrap_or("active") {
            "active" => filter["isActive"] = json!({"eq": true}),
            "future" => filter["isFuture"] = json!({"eq": true}),
            "closed" => filter["isPast"] = json!({"eq": true}),
            "all" => {}
            other => {
                return Err(invalid(
                    tool,
                    format!("`state` is active, future, closed or all, not `{other}`"),
                ));
            }
        }
        let limit = uint(args, "limit", 20)?.clamp(1, MAX_PAGE);
        let query = "query Cycles($filter: CycleFilter, $first: Int!) { cycles(filter: $filter, first: $first) { \
                     nodes { id number name startsAt endsAt isActive isFuture isPast team { key } } } }";
        let data = self.query(tool, query, json!({"filter": filter, "first": limit}))?;
        let sprints: Vec<Value> = data["cycles"]["nodes"]
            .as_array()
            .map(|l| {
                l.iter()
                    .map(|c| {
                        let state = if c["isActive"] == json!(true) {
                            "active"
                        } else if c["isFuture"] == json!(true) {
                            "future"
                        } else {
                            "closed"
                        };
                        json!({"id": c["id"], "number": c["number"], "name": c["name"], "state": state,
                               "starts_at": c["startsAt"], "ends_at": c["endsAt"], "team": c["team"]["key"]})
                    })
                    .collect()
            })
            .unwrap_or_default();
        Ok(result(
            format!("{} cycle(s)", sprints.len()),
            json!({"sprints": sprints}),
        ))
    }

    /// The configured team's id (looked up once).
    fn team_id(&self, tool: &str) -> Result<String, ToolError> {
        if let Some(id) = self.team_id.borrow().clone() {
            return Ok(id);
        }
        let Some(team) = &self.config.team else {
            return Err(ToolError::Failed(format!(
                "Linear {tool}: config `team` (a team key such as `ENG`) is required to create issues"
            )));
        };
        let query = "query Teams($filter: TeamFilter) { teams(filter: $filter) { nodes { id key } } }";
        let data = self.query(tool, query, json!({"filter": {"key": {"eq": team}}}))?;
        let id = data["teams"]["nodes"][0]["id"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| {
                ToolError::Failed(format!(
                    "Linear {tool}: no team with key `{team}` (config `team`)"
                ))
            })?;
        *self.team_id.borrow_mut() = Some(id.clone());
        Ok(id)
    }

    /// The id of `key` (an identifier or a UUID).
    fn issue_id(&self, tool: &str, key: &str) -> Result<String, ToolError> {
        let data = self.query(
            tool,
            "query IssueId($id: String!) { issue(id: $id) { id } }",
            json!({"id": key}),
        )?;
        data["issue"]["id"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| ToolError::NotFound(format!("Linear {tool}: no issue `{key}`")))
    }

    /// The fields of an issue input (`issueCreate` / `issueUpdate`) from the
    /// catalog's arguments, names looked up to ids in team `team`.
    fn issue_input(&self, tool: &str, args: &Value, team: Option<&str>) -> Result<Value, ToolError> {
        let mut input = json!({});
        if let Some(title) = optional(args, "title") {
            input["title"] = json!(title);
        }
        if let Some(text) = optional(args, "description") {
            input["description"] = json!(text);
        }
        if let Some(name) = optional(args, "priority") {
            let level = PRIORITIES
                .iter()
                .find(|(p, _)| p.eq_ignore_ascii_case(&name))
                .map(|(_, n)| *n)
                .ok_or_else(|| {
                    invalid(
                        tool,
                        format!("`priority` is urgent, high, medium, low or none, not `{name}`"),
                    )
                })?;
            input["priority"] = json!(level);
        }
        if let Some(points) = args.get("points").filter(|p| !p.is_null()) {
            let n = points
                .as_f64()
                .ok_or_else(|| invalid(tool, "`points` must be a number"))?;
            input["estimate"] = json!(n.round() as i64);
        }
        if let Some(project) = optional(args, "projectId") {
            input["projectId"] = json!(project);
        }
        // `status` names a state; `state` (open/closed) picks the team's
        // first state of that kind, and `status` takes precedence.
        let state_filter = match (optional(args, "status"), optional(args, "state")) {
            (Some(name), _) => Some((
                json!({"name": {"eqIgnoreCase": name}}),
                format!("status `{name}`"),
            )),
            (None, Some(s)) if s == "closed" => {
                Some((json!({"type": {"eq": "completed"}}), "a completed state".into()))
            }
            (None, Some(s)) if s == "open" => {
                Some((json!({"type": {"eq": "unstarted"}}), "an unstarted state".into()))
            }
            (None, Some(s)) => return Err(invalid(tool, format!("`state` is open or closed, not `{s}`"))),
            (None, None) => None,
        };
        if let Some((filter, what)) = state_filter {
            let mut found = self.states(tool, team, filter)?;
            found.sort_by(|a, b| {
                let p = |s: &Value| s["position"].as_f64().unwrap_or(0.0);
                p(a).total_cmp(&p(b))
            });
            let id = found
                .first()
                .map(|s| s["id"].clone())
                .ok_or_else(|| invalid(tool, format!("team {} has no {what}", team.unwrap_or("?"))))?;
            input["stateId"] = id;
        }
        if let Some(labels) = strings(args, "labels")? {
            input["labelIds"] = json!(self.label_ids(tool, &labels)?);
        }
        if let Some(who) = strings(args, "assignees")? {
            input["assigneeId"] = match who.as_slice() {
                [] => Value::Null,
                [one] => json!(self.user_id(tool, one)?),
                _ => return Err(invalid(tool, "a Linear issue has one assignee")),
            };
        }
        if let Some(parent) = optional(args, "parentId") {
            input["parentId"] = if parent == "none" {
                Value::Null
            } else {
                json!(self.issue_id(tool, &parent)?)
            };
        }
        Ok(input)
    }

    fn label_ids(&self, tool: &str, names: &[String]) -> Result<Vec<Value>, ToolError> {
        if names.is_empty() {
            return Ok(Vec::new());
        }
        let query = "query IssueLabels($filter: IssueLabelFilter) { issueLabels(filter: $filter, first: 250) { \
                     nodes { id name } } }";
        let data = self.query(tool, query, json!({"filter": {"name": {"in": names}}}))?;
        let found = data["issueLabels"]["nodes"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        names
            .iter()
            .map(|n| {
                found
                    .iter()
                    .find(|l| l["name"].as_str() == Some(n))
                    .map(|l| l["id"].clone())
                    .ok_or_else(|| invalid(tool, format!("no label `{n}`")))
            })
            .collect()
    }

    fn user_id(&self, tool: &str, who: &str) -> Result<String, ToolError> {
        let query = "query Users($filter: UserFilter, $first: Int!) { users(filter: $filter, first: $first) { \
                     nodes { id name displayName email active } } }";
        let filter = json!({"or": [
            {"id": {"eq": who}}, {"email": {"eq": who}},
            {"displayName": {"eqIgnoreCase": who}}, {"name": {"eqIgnoreCase": who}},
        ]});
        let data = self.query(tool, query, json!({"filter": filter, "first": 2}))?;
        data["users"]["nodes"][0]["id"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| invalid(tool, format!("no user `{who}`")))
    }

    fn create_issue(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "create_issue";
        let title = required(args, "title")?;
        let team_id = self.team_id(tool)?;
        let mut input = self.issue_input(tool, args, self.config.team.as_deref())?;
        input["teamId"] = json!(team_id);
        input["title"] = json!(title);
        let query = format!(
            "mutation IssueCreate($input: IssueCreateInput!) {{ issueCreate(input: $input) {{ success issue {{ {ISSUE} }} }} }}"
        );
        let payload = self.mutate(tool, "issueCreate", &query, json!({"input": input}))?;
        let created = issue(&payload["issue"]);
        let summary = format!(
            "Created {}: {} ({})",
            created["key"].as_str().unwrap_or("?"),
            title,
            created["url"].as_str().unwrap_or("")
        );
        Ok(result(summary, created))
    }

    fn update_issue(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "update_issue";
        let key = required(args, "key")?;
        let input = self.issue_input(tool, args, team_of(&key))?;
        if input.as_object().is_some_and(|m| m.is_empty()) {
            return Err(invalid(tool, "nothing to change: give at least one field"));
        }
        let query = format!(
            "mutation IssueUpdate($id: String!, $input: IssueUpdateInput!) {{ issueUpdate(id: $id, input: $input) {{ \
             success issue {{ {ISSUE} }} }} }}"
        );
        let payload = self.mutate(tool, "issueUpdate", &query, json!({"id": key, "input": input}))?;
        let updated = issue(&payload["issue"]);
        let changed: Vec<&String> = input.as_object().map(|m| m.keys().collect()).unwrap_or_default();
        let summary = format!(
            "Updated {} ({})",
            updated["key"].as_str().unwrap_or(&key),
            changed.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
        );
        Ok(result(summary, updated))
    }

    fn add_issue_comment(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "add_issue_comment";
        let key = required(args, "key")?;
        let body = required(args, "body")?;
        let query = "mutation CommentCreate($input: CommentCreateInput!) { commentCreate(input: $input) { \
                     success comment { id body createdAt url } } }";
        let payload = self.mutate(
            tool,
            "commentCreate",
            query,
            json!({"input": {"issueId": key, "body": body}}),
        )?;
        let c = &payload["comment"];
        Ok(result(
            format!("Commented on {key}"),
            json!({"key": key, "id": c["id"], "body": c["body"], "created_at": c["createdAt"], "url": c["url"]}),
        ))
    }

    fn link_issues(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "link_issues";
        let (source, target) = (required(args, "source_key")?, required(args, "target_key")?);
        let link_type = required(args, "link_type")?;
        // Linear's relation types read from the issue that holds them;
        // "blocked by" is "blocks" held by the other issue.
        let (from, to, kind) = match link_type.as_str() {
            "blocks" => (&source, &target, "blocks"),
            "blocked_by" => (&target, &source, "blocks"),
            "duplicates" | "duplicate" => (&source, &target, "duplicate"),
            "relates_to" | "related" => (&source, &target, "related"),
            other => {
                return Err(invalid(
                    tool,
                    format!("`link_type` is blocks, blocked_by, duplicates or relates_to, not `{other}`"),
                ));
            }
        };
        let (from_id, to_id) = (self.issue_id(tool, from)?, self.issue_id(tool, to)?);
        let query = "mutation IssueRelationCreate($input: IssueRelationCreateInput!) { \
                     issueRelationCreate(input: $input) { success issueRelation { id type } } }";
        let input = json!({"issueId": from_id, "relatedIssueId": to_id, "type": kind});
        let payload = self.mutate(tool, "issueRelationCreate", query, json!({"input": input}))?;
        Ok(result(
            format!("{source} {link_type} {target}"),
            json!({"id": payload["issueRelation"]["id"], "source_key": source, "target_key": target, "type": kind}),
        ))
    }

    fn unlink_issues(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "unlink_issues";
        let (source, target) = (required(args, "source_key")?, required(args, "target_key")?);
        let only = optional(args, "link_type").map(|t| match t.as_str() {
            "blocked_by" => "blocks".to_owned(),
            "duplicates" => "duplicate".to_owned(),
            "relates_to" => "related".to_owned(),
            _ => t,
        });
        let relations = self.relations(tool, &source)?;
        let ids: Vec<String> = relations["links"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|l| l["key"].as_str() == Some(target.as_str()))
            .filter(|l| only.as_deref().is_none_or(|t| l["type"].as_str() == Some(t)))
            .filter_map(|l| l["id"].as_str().map(str::to_owned))
            .collect();
        if ids.is_empty() {
            return Err(ToolError::NotFound(format!(
                "Linear {tool}: {source} has no relation to {target}"
            )));
        }
        let query = "mutation IssueRelationDelete($id: String!) { issueRelationDelete(id: $id) { success } }";
        for id in &ids {
            self.mutate(tool, "issueRelationDelete", query, json!({"id": id}))?;
        }
        Ok(result(
            format!("Removed {} relation(s) between {source} and {target}", ids.len()),
            json!({"source_key": source, "target_key": target, "removed": ids}),
        ))
    }

    fn assign_to_sprint(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "assign_to_sprint";
        let cycle = required(args, "sprintId")?;
        let keys = strings(args, "keys")?
            .filter(|k| !k.is_empty())
            .ok_or_else(|| invalid(tool, "`keys` is required"))?;
        let query = "mutation IssueUpdate($id: String!, $input: IssueUpdateInput!) { issueUpdate(id: $id, input: $input) { \
                     success issue { identifier } } }";
        for key in &keys {
            self.mutate(
                tool,
                "issueUpdate",
                query,
                json!({"id": key, "input": {"cycleId": cycle}}),
            )?;
        }
        Ok(result(
            format!("Moved {} issue(s) into cycle {cycle}", keys.len()),
            json!({"sprintId": cycle, "keys": keys}),
        ))
    }
}
