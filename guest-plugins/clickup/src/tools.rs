//! The ClickUp tools: the issue-tracker tools run against ClickUp's API v2
//! for the configured list (`list_id`). Issues are tasks; a key is a task
//! id (`86a1b2c3`). Epics are the tasks of the configured epics list
//! (`epics_list_id`), read and written as issues are.
//!
//! Task lists come in pages of 100 (`page` from 0, `last_page`); comments
//! 25 at a time, newest first, older ones by `start`/`start_id`.
//! Attachments are `assets`.

use provider_kit::api::{catalog_tool, encode, optional, required, result, strings, uint, with_query};
use provider_kit::files::download_schema;
use toolhost_sdk::{CallContext, ToolDefinition, ToolError, ToolResult, Tools, Value, json};

use crate::{ClickUp, sprints};

/// ClickUp's fixed page of tasks.
const PAGE: u64 = 100;
/// Most pages of comments read for one thread.
const MAX_COMMENT_PAGES: usize = 10;
/// ClickUp's page of comments.
const COMMENT_PAGE: usize = 25;

impl Tools for ClickUp {
    fn tools(&self) -> Vec<ToolDefinition> {
        let t = |name, what| catalog_tool(name, "issue_tracker", what);
        vec![
            t("get_issues", "List the tasks of the configured ClickUp list."),
            t("get_issue", "One ClickUp task, by id."),
            t(
                "get_issue_comments",
                "The comments of a ClickUp task, oldest first.",
            ),
            t(
                "get_available_statuses",
                "The statuses of the configured ClickUp list.",
            ),
            t("get_users", "The members of the configured ClickUp list."),
            t(
                "get_custom_fields",
                "The custom fields of the configured ClickUp list.",
            ),
            t("create_issue", "Create a task in the configured ClickUp list."),
            t(
                "update_issue",
                "Update a ClickUp task; only the fields given change.",
            ),
            t("add_issue_comment", "Comment on a ClickUp task."),
            t(
                "get_issue_relations",
                "A ClickUp task's parent, subtasks, links and dependencies.",
            ),
            t(
                "link_issues",
                "Link two ClickUp tasks (relates_to) or add a dependency (blocks, blocked_by).",
            ),
            t(
                "unlink_issues",
                "Remove the links and dependencies between two ClickUp tasks.",
            ),
            t("get_assets", "The attachments of a ClickUp task."),
            t(
                "download_asset",
                "A task attachment's content (base64; images also as an image).",
            )
            .output_schema(download_schema()),
            t(
                "upload_asset",
                "Attach a file (base64 `fileData`) to a ClickUp task.",
            ),
        ]
        .into_iter()
        .chain(sprints::tools())
        .chain([
            catalog_tool(
                "get_epics",
                "epics",
                "List the tasks of the configured ClickUp epics list.",
            ),
            catalog_tool("get_epic", "epics", "One ClickUp epic (a task), by id."),
            catalog_tool(
                "create_epic",
                "epics",
                "Create a task in the configured ClickUp epics list.",
            ),
            catalog_tool(
                "update_epic",
                "epics",
                "Update a ClickUp epic; only the fields given change.",
            ),
        ])
        .collect()
    }

    fn execute(&self, tool: &str, args: Value, _ctx: &CallContext<'_>) -> Result<ToolResult, ToolError> {
        match tool {
            "get_issues" | "get_epics" => self.get_issues(tool, &args),
            "get_issue" => self.get_issue(&args),
            "get_epic" => self.get_issue(&args),
            "get_issue_comments" => self.get_issue_comments(&args),
            "get_available_statuses" => self.get_available_statuses(),
            "get_users" => self.get_users(&args),
            "get_custom_fields" => self.get_custom_fields(&args),
            "create_issue" | "create_epic" => self.create_issue(tool, &args),
            "update_issue" | "update_epic" => self.update_issue(tool, &args),
            "add_issue_comment" => self.add_issue_comment(&args),
            "get_issue_relations" => self.get_issue_relations(&args),
            "link_issues" => self.link_issues(&args),
            "unlink_issues" => self.unlink_issues(&args),
            "get_assets" => self.get_assets(&args),
            "download_asset" => self.download_asset(&args),
            "upload_asset" => self.upload_asset(&args),
            "get_board_sprints" => self.get_board_sprints(&args),
            "assign_to_sprint" => self.assign_to_sprint(&args),
            other => Err(ToolError::NotFound(format!("ClickUp has no tool `{other}`"))),
        }
    }
}

/// A task as the tools return it.
fn task(t: &Value) -> Value {
    let names = |list: &str, field: &str| -> Vec<Value> {
        t[list]
            .as_array()
            .map(|l| l.iter().map(|x| x[field].clone()).collect())
            .unwrap_or_default()
    };
    json!({
        "key": t["id"],
        "id": t["id"],
        "custom_id": t["custom_id"],
        "title": t["name"],
        "status": t["status"]["status"],
        "status_type": t["status"]["type"],
        "priority": t["priority"]["priority"],
        "labels": names("tags", "name"),
        "assignees": names("assignees", "username"),
        "parent": t["parent"],
        "points": t["points"],
        "url": t["url"],
        "created_at": t["date_created"],
        "updated_at": t["date_updated"],
    })
}

/// Whether an id (a number or a string in ClickUp's answers) is `s`.
fn is_id(id: &Value, s: &str) -> bool {
    match id {
        Value::Number(n) => n.as_u64().is_some_and(|n| s.parse() == Ok(n)),
        Value::String(x) => x == s,
        _ => false,
    }
}

impl ClickUp {
    fn list_id(&self, tool: &str) -> Result<String, ToolError> {
        if tool.ends_with("_epic") || tool.ends_with("_epics") {
            return self
                .config
                .epics_list_id
                .clone()
                .filter(|l| !l.is_empty())
                .ok_or_else(|| {
                    ToolError::Failed(format!(
                        "ClickUp {tool}: config `epics_list_id` (the list whose tasks are the epics) is required"
                    ))
                });
        }
        self.config
            .list_id
            .clone()
            .filter(|l| !l.is_empty())
            .ok_or_else(|| {
                ToolError::Failed(format!(
                    "ClickUp {tool}: config `list_id` (the list whose tasks are the issues) is required"
                ))
            })
    }

    fn get_issues(&self, tool: &str, args: &Value) -> Result<ToolResult, ToolError> {
        let list = self.list_id(tool)?;
        let (offset, limit) = (uint(args, "offset", 0)?, uint(args, "limit", 20)?.max(1));
        let state = optional(args, "state").unwrap_or_else(|| "open".into());
        let mut query: Vec<(&str, String)> = vec![
            ("archived", "false".into()),
            ("subtasks", "true".into()),
            (
                "order_by",
                if optional(args, "sort").as_deref() == Some("created_at") {
                    "created"
                } else {
                    "updated"
                }
                .into(),
            ),
        ];
        if optional(args, "sort_order").as_deref() == Some("asc") {
            query.push(("reverse", "true".into()));
        }
        if state != "open" {
            query.push(("include_closed", "true".into()));
        }
        if let Some(status) = optional(args, "status") {
            query.push(("statuses[]", status));
        }
        if let Some(who) = optional(args, "assignee") {
            query.push(("assignees[]", who));
        }
        for tag in strings(args, "labels")?.unwrap_or_default() {
            query.push(("tags[]", tag));
        }
        // ClickUp's task lists take no text search: titles are matched here.
        let search = optional(args, "search").map(|s| s.to_lowercase());
        let keep = |t: &Value| {
            let closed = t["status"]["type"] == json!("closed");
            let found = search
                .as_deref()
                .is_none_or(|s| t["name"].as_str().is_some_and(|n| n.to_lowercase().contains(s)));
            found
                && match state.as_str() {
                    "closed" => closed,
                    _ => true,
                }
        };
        let mut page = offset / PAGE;
        let mut skip = (offset % PAGE) as usize;
        let mut found: Vec<Value> = Vec::new();
        let more = loop {
            let mut q = query.clone();
            q.push(("page", page.to_string()));
            let reply = self
                .api
                .get(tool, &with_query(&format!("/list/{}/task", encode(&list)), &q))?;
            let tasks = reply.body["tasks"].as_array().cloned().unwrap_or_default();
            let last = reply.body["last_page"] != json!(false) || tasks.is_empty();
            for t in tasks.into_iter().filter(|t| keep(t)) {
                if skip > 0 {
                    skip -= 1;
                } else {
                    found.push(t);
                }
            }
            if found.len() > limit as usize {
                break true;
            }
            if last {
                break false;
            }
            page += 1;
        };
        let issues: Vec<Value> = found.iter().take(limit as usize).map(task).collect();
        let summary = format!(
            "{} {state} task(s) in ClickUp list {list}{}",
            issues.len(),
            if more { " (more: raise offset)" } else { "" }
        );
        let field = if tool == "get_epics" { "epics" } else { "issues" };
        Ok(result(summary, json!({field: issues, "has_more": more})))
    }

    fn get_issue(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "get_issue";
        let key = required(args, "key")?;
        let reply = self
            .api
            .get(tool, &format!("/task/{}?include_subtasks=true", encode(&key)))?;
        let t = &reply.body;
        let mut value = task(t);
        value["description"] = t["text_content"].clone();
        value["custom_fields"] = json!(
            t["custom_fields"]
                .as_array()
                .map(|l| l
                    .iter()
                    .map(|f| json!({"id": f["id"], "name": f["name"], "value": f["value"]}))
                    .collect::<Vec<_>>())
                .unwrap_or_default()
        );
        if args.get("includeComments") == Some(&json!(true)) {
            value["comments"] = json!(self.comments(tool, &key)?);
        }
        let summary = format!(
            "{key} {} ({})",
            t["name"].as_str().unwrap_or(""),
            t["status"]["status"].as_str().unwrap_or("?")
        );
        Ok(result(summary, value))
    }

    /// The comments of task `key`, oldest first.
    fn comments(&self, tool: &str, key: &str) -> Result<Vec<Value>, ToolError> {
        let path = format!("/task/{}/comment", encode(key));
        let mut all: Vec<Value> = Vec::new();
        let mut query: Vec<(&str, String)> = Vec::new();
        for _ in 0..MAX_COMMENT_PAGES {
            let reply = self.api.get(tool, &with_query(&path, &query))?;
            let page = reply.body["comments"].as_array().cloned().unwrap_or_default();
            let full = page.len() >= COMMENT_PAGE;
            let oldest = page.last().map(|c| (c["date"].clone(), c["id"].clone()));
            all.extend(page);
            match oldest {
                Some((date, id)) if full => {
                    let text = |v: &Value| v.as_str().map_or_else(|| v.to_string(), str::to_owned);
                    query = vec![("start", text(&date)), ("start_id", text(&id))];
                }
                _ => break,
            }
        }
        all.reverse();
        Ok(all
            .iter()
            .map(|c| json!({"id": c["id"], "author": c["user"]["username"], "body": c["comment_text"], "created_at": c["date"]}))
            .collect())
    }

    fn get_issue_comments(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let key = required(args, "key")?;
        let all = self.comments("get_issue_comments", &key)?;
        let (offset, limit) = (
            uint(args, "offset", 0)? as usize,
            uint(args, "limit", 50)? as usize,
        );
        let more = all.len() > offset + limit;
        let comments: Vec<Value> = all.into_iter().skip(offset).take(limit).collect();
        Ok(result(
            format!("{} comment(s) on {key}", comments.len()),
            json!({"key": key, "comments": comments, "has_more": more}),
        ))
    }

    fn get_available_statuses(&self) -> Result<ToolResult, ToolError> {
        let tool = "get_available_statuses";
        let list = self.list_id(tool)?;
        let reply = self.api.get(tool, &format!("/list/{}", encode(&list)))?;
        let statuses: Vec<Value> = reply.body["statuses"]
            .as_array()
            .map(|l| {
                l.iter()
                    .map(|s| json!({"name": s["status"], "category": s["type"], "order": s["orderindex"]}))
                    .collect()
            })
            .unwrap_or_default();
        let names: Vec<&str> = statuses.iter().filter_map(|s| s["name"].as_str()).collect();
        Ok(result(
            format!("{} status(es): {}", names.len(), names.join(", ")),
            json!({"statuses": statuses}),
        ))
    }

    fn members(&self, tool: &str) -> Result<Vec<Value>, ToolError> {
        let list = self.list_id(tool)?;
        let reply = self.api.get(tool, &format!("/list/{}/member", encode(&list)))?;
        Ok(reply.body["members"].as_array().cloned().unwrap_or_default())
    }

    fn get_users(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "get_users";
        let search = optional(args, "search").map(|s| s.to_lowercase());
        let id = optional(args, "userId");
        let limit = uint(args, "limit", 50)? as usize;
        let users: Vec<Value> = self
            .members(tool)?
            .iter()
            .filter(|m| id.as_deref().is_none_or(|i| is_id(&m["id"], i)))
            .filter(|m| {
                search.as_deref().is_none_or(|s| {
                    ["username", "email"]
                        .iter()
                        .any(|f| m[*f].as_str().is_some_and(|v| v.to_lowercase().contains(s)))
                })
            })
            .take(limit)
            .map(|m| json!({"id": m["id"], "username": m["username"], "email": m["email"]}))
            .collect();
        Ok(result(
            format!("{} ClickUp member(s)", users.len()),
            json!({"users": users}),
        ))
    }

    fn get_custom_fields(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "get_custom_fields";
        let list = self.list_id(tool)?;
        let search = optional(args, "search").map(|s| s.to_lowercase());
        let reply = self.api.get(tool, &format!("/list/{}/field", encode(&list)))?;
        let fields: Vec<Value> = reply.body["fields"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|f| {
                search
                    .as_deref()
                    .is_none_or(|s| f["name"].as_str().is_some_and(|n| n.to_lowercase().contains(s)))
            })
            .map(|f| {
                let options: Vec<Value> = f["type_config"]["options"]
                    .as_array()
                    .map(|o| {
                        o.iter()
                            .map(|x| json!(x["name"].as_str().or(x["label"].as_str())))
                            .collect()
                    })
                    .unwrap_or_default();
                json!({"id": f["id"], "name": f["name"], "type": f["type"], "options": options})
            })
            .collect();
        Ok(result(
            format!("{} custom field(s)", fields.len()),
            json!({"fields": fields}),
        ))
    }

    /// Member ids for `who` (ids as given, usernames and emails looked up).
    fn member_ids(&self, tool: &str, who: &[String]) -> Result<Vec<Value>, ToolError> {
        if who.iter().all(|w| w.parse::<u64>().is_ok()) {
            return Ok(who
                .iter()
                .map(|w| json!(w.parse::<u64>().unwrap_or_default()))
                .collect());
        }
        let members = self.members(tool)?;
        who.iter()
            .map(|w| {
                members
                    .iter()
                    .find(|m| {
                        is_id(&m["id"], w)
                            || ["username", "email"]
                                .iter()
                                .any(|f| m[*f].as_str().is_some_and(|v| v.eq_ignore_ascii_case(w)))
                    })
                    .map(|m| m["id"].clone())
                    .ok_or_else(|| ToolError::InvalidArgs(format!("ClickUp {tool}: no list member `{w}`")))
            })
            .collect()
    }

    /// The fields create and update share.
    fn fields(&self, args: &Value) -> Value {
        let mut body = json!({});
        if let Some(title) = optional(args, "title") {
            body["name"] = json!(title);
        }
        if let Some(text) = optional(args, "description") {
            body["markdown_content"] = json!(text);
        }
        if let Some(status) = optional(args, "status") {
            body["status"] = json!(status);
        }
        if let Some(p) = args.get("priority").filter(|p| p.is_u64()) {
            body["priority"] = p.clone();
        }
        if let Some(parent) = optional(args, "parentId") {
            body["parent"] = json!(parent);
        }
        if let Some(points) = args.get("points").filter(|p| p.is_number()) {
            body["points"] = points.clone();
        }
        body
    }

    /// An epic's `goalId` becomes the `Goals` custom field (the enricher's
    /// `cf_goals`), which only a configured field of that name can carry.
    fn goal_field_known(&self, tool: &str, args: &Value) -> Result<(), ToolError> {
        if args.get("cf_goals").is_some() {
            return Err(ToolError::InvalidArgs(format!(
                "ClickUp {tool}: `goalId` needs a custom field named `Goals` in config `custom_fields`"
            )));
        }
        Ok(())
    }

    fn create_issue(&self, tool: &str, args: &Value) -> Result<ToolResult, ToolError> {
        self.goal_field_known(tool, args)?;
        let list = self.list_id(tool)?;
        required(args, "title")?;
        let mut body = self.fields(args);
        if let Some(tags) = strings(args, "labels")? {
            body["tags"] = json!(tags);
        }
        if let Some(who) = strings(args, "assignees")? {
            body["assignees"] = json!(self.member_ids(tool, &who)?);
        }
        if let Some(custom) = args.get("customFields").filter(|c| c.is_array()) {
            body["custom_fields"] = custom.clone();
        }
        let reply = self.api.send(
            tool,
            "POST",
            &format!("/list/{}/task", encode(&list)),
            Some(&body),
        )?;
        let created = task(&reply.body);
        let summary = format!(
            "Created {}: {} ({})",
            created["key"].as_str().unwrap_or("?"),
            created["title"].as_str().unwrap_or(""),
            created["url"].as_str().unwrap_or("")
        );
        Ok(result(summary, created))
    }

    fn update_issue(&self, tool: &str, args: &Value) -> Result<ToolResult, ToolError> {
        self.goal_field_known(tool, args)?;
        let key = required(args, "key")?;
        let path = format!("/task/{}", encode(&key));
        let mut body = self.fields(args);
        let labels = strings(args, "labels")?;
        let assignees = strings(args, "assignees")?;
        // Tags and assignees replace what the task has: the difference
        // against the current task is what ClickUp takes.
        let current = if labels.is_some() || assignees.is_some() {
            Some(self.api.get(tool, &path)?.body)
        } else {
            None
        };
        if let (Some(who), Some(now)) = (&assignees, &current) {
            let want = self.member_ids(tool, who)?;
            let have: Vec<Value> = now["assignees"]
                .as_array()
                .map(|l| l.iter().map(|a| a["id"].clone()).collect())
                .unwrap_or_default();
            body["assignees"] = json!({
                "add": want.iter().filter(|w| !have.contains(w)).collect::<Vec<_>>(),
                "rem": have.iter().filter(|h| !want.contains(h)).collect::<Vec<_>>(),
            });
        }
        let changes_task = body.as_object().is_some_and(|m| !m.is_empty());
        let custom = args
            .get("customFields")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if !changes_task && labels.is_none() && custom.is_empty() {
            return Err(ToolError::InvalidArgs(format!(
                "ClickUp {tool}: nothing to change: give at least one field"
            )));
        }
        let mut updated = if changes_task {
            self.api.send(tool, "PUT", &path, Some(&body))?.body
        } else {
            Value::Null
        };
        if let (Some(want), Some(now)) = (&labels, &current) {
            let have: Vec<String> = now["tags"]
                .as_array()
                .map(|l| {
                    l.iter()
                        .filter_map(|t| t["name"].as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default();
            for tag in want.iter().filter(|t| !have.contains(t)) {
                self.api
                    .send(tool, "POST", &format!("{path}/tag/{}", encode(tag)), None)?;
            }
            for tag in have.iter().filter(|t| !want.contains(t)) {
                self.api
                    .send(tool, "DELETE", &format!("{path}/tag/{}", encode(tag)), None)?;
            }
        }
        for f in &custom {
            let id = f["id"].as_str().unwrap_or_default();
            self.api.send(
                tool,
                "POST",
                &format!("{path}/field/{}", encode(id)),
                Some(&json!({"value": f["value"]})),
            )?;
        }
        if !changes_task || labels.is_some() {
            updated = self.api.get(tool, &path)?.body;
        }
        let value = task(&updated);
        Ok(result(format!("Updated {key}"), value))
    }

    fn add_issue_comment(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "add_issue_comment";
        let key = required(args, "key")?;
        let body = required(args, "body")?;
        let reply = self.api.send(
            tool,
            "POST",
            &format!("/task/{}/comment", encode(&key)),
            Some(&json!({"comment_text": body, "notify_all": false})),
        )?;
        Ok(result(
            format!("Commented on {key}"),
            json!({"key": key, "id": reply.body["id"], "body": body, "created_at": reply.body["date"]}),
        ))
    }

    /// The relations of task `key`: links (`relates_to`) and dependencies
    /// (`blocks` / `blocked_by`, from this task's side).
    fn relations(&self, tool: &str, key: &str) -> Result<Value, ToolError> {
        let t = self
            .api
            .get(tool, &format!("/task/{}?include_subtasks=true", encode(key)))?
            .body;
        let id = |v: &Value| v.as_str().map(str::to_owned);
        let mut links: Vec<Value> = Vec::new();
        for l in t["linked_tasks"].as_array().into_iter().flatten() {
            let other = if id(&l["task_id"]).as_deref() == Some(key) {
                &l["link_id"]
            } else {
                &l["task_id"]
            };
            links.push(json!({"type": "relates_to", "key": other}));
        }
        for d in t["dependencies"].as_array().into_iter().flatten() {
            // `task_id` waits on `depends_on`.
            let (kind, other) = if id(&d["task_id"]).as_deref() == Some(key) {
                ("blocked_by", &d["depends_on"])
            } else {
                ("blocks", &d["task_id"])
            };
            links.push(json!({"type": kind, "key": other}));
        }
        let subtasks: Vec<Value> = t["subtasks"]
            .as_array()
            .map(|l| {
                l.iter()
                    .map(|s| json!({"key": s["id"], "title": s["name"]}))
                    .collect()
            })
            .unwrap_or_default();
        Ok(json!({"key": key, "parent": t["parent"], "subtasks": subtasks, "links": links}))
    }

    fn get_issue_relations(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let key = required(args, "key")?;
        let value = self.relations("get_issue_relations", &key)?;
        let summary = format!(
            "{key}: {} subtask(s), {} link(s)",
            value["subtasks"].as_array().map_or(0, Vec::len),
            value["links"].as_array().map_or(0, Vec::len)
        );
        Ok(result(summary, value))
    }

    fn link_issues(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "link_issues";
        let (source, target) = (required(args, "source_key")?, required(args, "target_key")?);
        let kind = required(args, "link_type")?;
        let path = format!("/task/{}", encode(&source));
        match kind.as_str() {
            "relates_to" => self
                .api
                .send(tool, "POST", &format!("{path}/link/{}", encode(&target)), None)?,
            "blocks" => self.api.send(
                tool,
                "POST",
                &format!("{path}/dependency"),
                Some(&json!({"dependency_of": target})),
            )?,
            "blocked_by" => self.api.send(
                tool,
                "POST",
                &format!("{path}/dependency"),
                Some(&json!({"depends_on": target})),
            )?,
            other => {
                return Err(ToolError::InvalidArgs(format!(
                    "ClickUp {tool}: `link_type` is blocks, blocked_by or relates_to, not `{other}` \
                     (make a subtask with create_issue's `parentId`)"
                )));
            }
        };
        Ok(result(
            format!("{source} {kind} {target}"),
            json!({"source_key": source, "target_key": target, "type": kind}),
        ))
    }

    fn unlink_issues(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "unlink_issues";
        let (source, target) = (required(args, "source_key")?, required(args, "target_key")?);
        let only = optional(args, "link_type");
        let relations = self.relations(tool, &source)?;
        let found: Vec<String> = relations["links"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|l| l["key"].as_str() == Some(target.as_str()))
            .filter_map(|l| l["type"].as_str().map(str::to_owned))
            .filter(|t| only.as_deref().is_none_or(|o| o == t))
            .collect();
        if found.is_empty() {
            return Err(ToolError::NotFound(format!(
                "ClickUp {tool}: {source} has no link to {target}"
            )));
        }
        let path = format!("/task/{}", encode(&source));
        for kind in &found {
            let url = match kind.as_str() {
                "relates_to" => format!("{path}/link/{}", encode(&target)),
                "blocks" => with_query(
                    &format!("{path}/dependency"),
                    &[("dependency_of", target.clone())],
                ),
                _ => with_query(&format!("{path}/dependency"), &[("depends_on", target.clone())]),
            };
            self.api.send(tool, "DELETE", &url, None)?;
        }
        Ok(result(
            format!("Removed {} link(s) between {source} and {target}", found.len()),
            json!({"source_key": source, "target_key": target, "removed": found}),
        ))
    }
}
