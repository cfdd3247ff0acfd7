//! The Jira issue-tracker tools, run against Jira Cloud's REST API v3 on the
//! configured site: search by JQL (`/rest/api/3/search/jql`, paged by
//! `nextPageToken`), issues, comments, links, transitions, users, statuses,
//! custom fields, project versions and attachments. Boards and sprints are
//! the Agile API's (`agile`).
//!
//! Descriptions and comments are written as ADF from the model's Markdown
//! and read back as plain text. `offset`/`limit` map onto `startAt` and
//! `maxResults`, or onto `nextPageToken` pages for search (which has no
//! `startAt`). Epics are issues of type Epic (`epics`); attachment
//! uploads and downloads are `assets`.

use provider_kit::api::{Api, Reply, catalog_tool, encode, optional, required, result, uint, with_query};
use provider_kit::files::download_schema;
use provider_kit::markdown::{adf_text, to_adf};
use toolhost_sdk::serde_json::Map;
use toolhost_sdk::{CallContext, ToolDefinition, ToolError, ToolResult, Tools, Value, json};

use crate::Jira;

/// Jira's largest page for issue search and comments.
const MAX_PAGE: u64 = 100;

/// The fields a listed issue carries.
const LIST_FIELDS: &str =
    "summary,status,priority,issuetype,assignee,reporter,labels,components,project,parent,created,updated";

impl Tools for Jira {
    fn tools(&self) -> Vec<ToolDefinition> {
        let tool = |name, what| catalog_tool(name, "issue_tracker", what);
        let structure = |name, what| catalog_tool(name, "jira_structure", what);
        let structures = if self.config.structures.is_empty() {
            Vec::new()
        } else {
            vec![
                structure(
                    "get_structure_forest",
                    "The rows of a structure (Structure app), with their issues by key.",
                ),
                structure("get_structures", "The structures of the Structure app."),
                structure("create_structure", "Create an empty structure."),
                structure(
                    "get_structure_values",
                    "Attribute values (fields, formulas) of a structure's rows.",
                ),
                structure(
                    "add_structure_rows",
                    "Add issues to a structure under a parent row and/or after a sibling.",
                ),
                structure("move_structure_rows", "Move rows within a structure."),
                structure(
                    "remove_structure_row",
                    "Remove a row from a structure (the issue stays).",
                ),
            ]
        };
        let mut tools = vec![
            tool(
                "get_issues",
                "Search issues with JQL (built from the filters, or `nativeQuery`).",
            ),
            tool(
                "get_issue",
                "One issue by key (`WEB-12`), with its description as text.",
            ),
            tool("get_issue_comments", "The comments of an issue, oldest first."),
            tool(
                "get_issue_relations",
                "An issue's parent, subtasks and issue links.",
            ),
            tool(
                "get_available_statuses",
                "The workflow statuses of the project, per issue type.",
            ),
            tool(
                "get_users",
                "Users: by account id, by search, or assignable in a project.",
            ),
            tool(
                "get_custom_fields",
                "Custom fields of the site, or of one issue type's create screen.",
            ),
            tool(
                "get_board_sprints",
                "The sprints of a board (by default the project's first board).",
            ),
            tool("list_project_versions", "The versions (releases) of a project."),
            tool("get_assets", "The attachments of an issue."),
            tool(
                "create_issue",
                "Create an issue (description in Markdown, written as ADF).",
            ),
            tool(
                "update_issue",
                "Edit an issue's fields; `status` or `state` moves it by a transition.",
            ),
            tool(
                "add_issue_comment",
                "Comment on an issue (Markdown, written as ADF).",
            ),
            tool(
                "link_issues",
                "Link two issues: `source_key` is the outward issue (`A blocks B`).",
            ),
            tool(
                "unlink_issues",
                "Remove the links between two issues (of one type, or all).",
            ),
            tool("assign_to_sprint", "Move issues into a sprint."),
            tool(
                "upsert_project_version",
                "Create a project version, or update the one of that name.",
            ),
            tool("delete_asset", "Delete an attachment."),
            tool("upload_asset", "Attach a file (base64 `fileData`) to an issue."),
            tool(
                "download_asset",
                "An attachment's content (base64; images also as an image).",
            )
            .output_schema(download_schema()),
            catalog_tool("get_epics", "epics", "The project's epics (issues of type Epic)."),
            catalog_tool("get_epic", "epics", "One epic, with the issues under it."),
            catalog_tool("create_epic", "epics", "Create an epic (an issue of type Epic)."),
            catalog_tool(
                "update_epic",
                "epics",
                "Edit an epic; `status` moves it by a transition.",
            ),
        ];
        tools.extend(structures);
        tools
    }

    fn execute(&self, tool: &str, args: Value, _ctx: &CallContext<'_>) -> Result<ToolResult, ToolError> {
        let api = self.api.as_ref().ok_or_else(|| {
            ToolError::Failed(format!(
                "Jira {tool}: config `base_url` (the site, e.g. https://acme.atlassian.net) is required \
                 to run the tools"
            ))
        })?;
        let call = Call {
            jira: self,
            api,
            tool,
        };
        match tool {
            "get_issues" => call.get_issues(&args),
            "get_issue" => call.get_issue(&args),
            "get_issue_comments" => call.get_issue_comments(&args),
            "get_issue_relations" => call.get_issue_relations(&args),
            "get_available_statuses" => call.get_available_statuses(),
            "get_users" => call.get_users(&args),
            "get_custom_fields" => call.get_custom_fields(&args),
            "get_board_sprints" => call.get_board_sprints(&args),
            "assign_to_sprint" => call.assign_to_sprint(&args),
            "list_project_versions" => call.list_project_versions(&args),
            "get_assets" => call.get_assets(&args),
            "create_issue" => call.create_issue(&args),
            "update_issue" => call.update_issue(&args),
            "add_issue_comment" => call.add_issue_comment(&args),
            "link_issues" => call.link_issues(&args),
            "unlink_issues" => call.unlink_issues(&args),
            "upsert_project_version" => call.upsert_project_version(&args),
            "delete_asset" => call.delete_asset(&args),
            "upload_asset" => call.upload_asset(&args),
            "download_asset" => call.download_asset(&args),
            "get_epics" => call.get_epics(&args),
            "get_epic" => call.get_epic(&args),
            "create_epic" => call.create_epic(&args),
            "update_epic" => call.update_epic(&args),
            "get_structure_forest" => call.get_structure_forest(&args),
            "get_structures" => call.get_structures(),
            "create_structure" => call.create_structure(&args),
            "get_structure_values" => call.get_structure_values(&args),
            "add_structure_rows" => call.add_structure_rows(&args),
            "move_structure_rows" => call.move_structure_rows(&args),
            "remove_structure_row" => call.remove_structure_row(&args),
            other => Err(ToolError::NotFound(format!("Jira has no tool `{other}`"))),
        }
    }
}

/// One tool call: the plugin, its API and the tool's name for errors.
pub(crate) struct Call<'a> {
    pub jira: &'a Jira,
    pub api: &'a Api,
    pub tool: &'a str,
}

/// A JQL string literal.
pub(crate) fn quoted(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// An issue key as Jira spells it: `WEB-12`.
pub(crate) fn issue_key(tool: &str, args: &Value, name: &str) -> Result<String, ToolError> {
    let key = required(args, name)?;
    let valid = key.split_once('-').is_some_and(|(p, n)| {
        !p.is_empty() && p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') && n.parse::<u64>().is_ok()
    });
    if !valid {
        return Err(ToolError::InvalidArgs(format!(
            "Jira {tool}: `{name}` must be an issue key like `WEB-12`, not `{}`",
            key.escape_debug()
        )));
    }
    Ok(key.to_ascii_uppercase())
}

fn strings(args: &Value, name: &str) -> Option<Vec<String>> {
    args.get(name)?
        .as_array()
        .map(|l| l.iter().filter_map(Value::as_str).map(str::to_owned).collect())
}

fn names(list: &Value, field: &str) -> Vec<Value> {
    list.as_array()
        .map(|l| l.iter().filter_map(|x| x.get(field).cloned()).collect())
        .unwrap_or_default()
}

impl Call<'_> {
    pub fn get(&self, path: &str) -> Result<Reply, ToolError> {
        self.api.get(self.tool, path)
    }

    pub fn send(&self, method: &str, path: &str, body: &Value) -> Result<Reply, ToolError> {
        self.api.send(self.tool, method, path, Some(body))
    }

    /// The project argument `name`, else the first configured project.
    pub fn project_key(&self, args: &Value, name: &str) -> String {
        optional(args, name).unwrap_or_else(|| self.default_project())
    }

    pub fn default_project(&self) -> String {
        self.jira.config.projects[0].key.clone()
    }

    /// Items `[offset, offset+limit)` of a `startAt`/`maxResults` list
    /// under `field`, following pages until enough are found or `isLast`
    /// (or `total`) says there are no more; and whether more remain.
    pub fn paged(
        &self,
        path: &str,
        query: &[(&str, String)],
        field: &str,
        offset: u64,
        limit: u64,
    ) -> Result<(Vec<Value>, bool), ToolError> {
        let mut items: Vec<Value> = Vec::new();
        let mut start = offset;
        loop {
            let mut q = query.to_vec();
            q.push(("startAt", start.to_string()));
            q.push(("maxResults", (limit - items.len() as u64).to_string()));
            let page = self.get(&with_query(path, &q))?.body;
            let got = page[field].as_array().cloned().unwrap_or_default();
            start += got.len() as u64;
            let last = got.is_empty()
                || page["isLast"].as_bool() == Some(true)
                || page["total"].as_u64().is_some_and(|t| start >= t);
            items.extend(got);
            if last || items.len() as u64 >= limit {
                items.truncate(limit as usize);
                return Ok((items, !last));
            }
        }
    }

    /// An issue as the tools return it.
    pub fn issue(&self, i: &Value) -> Value {
        let f = &i["fields"];
        let key = i["key"].as_str().unwrap_or("");
        json!({
            "key": key,
            "id": i["id"],
            "title": f["summary"],
            "status": f["status"]["name"],
            "statusCategory": f["status"]["statusCategory"]["key"],
            "priority": f["priority"]["name"],
            "issueType": f["issuetype"]["name"],
            "labels": f["labels"],
            "components": names(&f["components"], "name"),
            "assignee": f["assignee"]["displayName"],
            "assigneeId": f["assignee"]["accountId"],
            "reporter": f["reporter"]["displayName"],
            "project": f["project"]["key"],
            "parent": f["parent"]["key"],
            "created": f["created"],
            "updated": f["updated"],
            "url": format!("{}/browse/{key}", self.api.base),
        })
    }

    /// The JQL of a `get_issues` call.
    fn jql(&self, args: &Value) -> String {
        if let Some(native) = optional(args, "nativeQuery") {
            return native;
        }
        let mut clauses = vec![format!(
            "project = {}",
            quoted(&self.project_key(args, "projectKey"))
        )];
        match optional(args, "state").as_deref() {
            Some("all") => {}
            Some("closed") => clauses.push("statusCategory = Done".into()),
            _ => clauses.push("statusCategory != Done".into()),
        }
        if let Some(status) = optional(args, "status") {
            clauses.push(format!("status = {}", quoted(&status)));
        }
        for label in strings(args, "labels").unwrap_or_default() {
            clauses.push(format!("labels = {}", quoted(&label)));
        }
        if let Some(who) = optional(args, "assignee") {
            clauses.push(format!("assignee = {}", quoted(&who)));
        }
        if let Some(text) = optional(args, "search") {
            clauses.push(format!("text ~ {}", quoted(&text)));
        }
        let sort = match optional(args, "sort").as_deref() {
            Some("created_at") => "created",
            _ => "updated",
        };
        let order = match optional(args, "sort_order").as_deref() {
            Some("asc") => "ASC",
            _ => "DESC",
        };
        format!("{} ORDER BY {sort} {order}", clauses.join(" AND "))
    }

    /// Issues `[offset, offset+limit)` of a JQL search: pages of
    /// `nextPageToken` until the window is covered; and whether more remain.
    pub fn search(&self, jql: &str, offset: u64, limit: u64) -> Result<(Vec<Value>, bool), ToolError> {
        let per_page = (offset + limit).clamp(1, MAX_PAGE);
        let mut token = String::new();
        let (mut skip, mut found) = (offset as usize, Vec::new());
        loop {
            let query = [
                ("jql", jql.to_owned()),
                ("maxResults", per_page.to_string()),
                ("fields", LIST_FIELDS.to_owned()),
                ("nextPageToken", token.clone()),
            ];
            let page = self.get(&with_query("/rest/api/3/search/jql", &query))?.body;
            let issues = page["issues"].as_array().cloned().unwrap_or_default();
            // An empty page ends the walk even with a token: a site that
            // keeps answering one must not hold the call until its deadline.
            let empty = issues.is_empty();
            let dropped = skip.min(issues.len());
            skip -= dropped;
            let mut rest = issues.into_iter().skip(dropped);
            found.extend(rest.by_ref().take(limit as usize - found.len()));
            let next = page["nextPageToken"].as_str().filter(|t| !t.is_empty());
            let more_here = rest.next().is_some();
            match next {
                Some(t) if found.len() < limit as usize && !more_here && !empty => token = t.to_owned(),
                next => return Ok((found, more_here || next.is_some())),
            }
        }
    }

    fn get_issues(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let jql = self.jql(args);
        let (found, more) = self.search(&jql, uint(args, "offset", 0)?, uint(args, "limit", 20)?.max(1))?;
        let issues: Vec<Value> = found.iter().map(|i| self.issue(i)).collect();
        let summary = format!(
            "{} issue(s) for `{jql}`{}",
            issues.len(),
            if more { " (more: raise offset)" } else { "" }
        );
        Ok(result(
            summary,
            json!({"issues": issues, "jql": jql, "has_more": more}),
        ))
    }

    fn get_issue(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let key = issue_key(self.tool, args, "key")?;
        let comments = args["includeComments"].as_bool() == Some(true);
        let relations = args["includeRelations"].as_bool() == Some(true);
        let value = self.issue_detail(&key, comments, relations)?;
        let summary = format!(
            "{key} {} ({})",
            value["title"].as_str().unwrap_or(""),
            value["status"]
        );
        Ok(result(summary, value))
    }

    /// An issue with its description as text, and its comments or
    /// relations when asked.
    pub fn issue_detail(&self, key: &str, comments: bool, relations: bool) -> Result<Value, ToolError> {
        let mut fields = format!("{LIST_FIELDS},description");
        if comments {
            fields.push_str(",comment");
        }
        if relations {
            fields.push_str(",subtasks,issuelinks");
        }
        let path = with_query(
            &format!("/rest/api/3/issue/{}", encode(key)),
            &[("fields", fields)],
        );
        let body = self.get(&path)?.body;
        let mut value = self.issue(&body);
        value["description"] = json!(adf_text(&body["fields"]["description"]));
        if comments {
            value["comments"] = json!(
                body["fields"]["comment"]["comments"]
                    .as_array()
                    .map(|l| l.iter().map(comment).collect::<Vec<_>>())
                    .unwrap_or_default()
            );
        }
        if relations {
            value["relations"] = relations_of(&body);
        }
        Ok(value)
    }

    fn get_issue_comments(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let key = issue_key(self.tool, args, "key")?;
        let limit = uint(args, "limit", 50)?.clamp(1, MAX_PAGE);
        let path = format!("/rest/api/3/issue/{}/comment", encode(&key));
        let (found, more) = self.paged(&path, &[], "comments", uint(args, "offset", 0)?, limit)?;
        let comments: Vec<Value> = found.iter().map(comment).collect();
        let summary = format!("{} comment(s) on {key}", comments.len());
        Ok(result(
            summary,
            json!({"key": key, "comments": comments, "has_more": more}),
        ))
    }

    fn get_issue_relations(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let key = issue_key(self.tool, args, "key")?;
        let path = format!(
            "/rest/api/3/issue/{}?fields=parent,subtasks,issuelinks",
            encode(&key)
        );
        let body = self.get(&path)?.body;
        let mut value = relations_of(&body);
        value["key"] = json!(key);
        let summary = format!(
            "{key}: {} subtask(s), {} link(s)",
            value["subtasks"].as_array().map_or(0, Vec::len),
            value["links"].as_array().map_or(0, Vec::len)
        );
        Ok(result(summary, value))
    }

    fn get_available_statuses(&self) -> Result<ToolResult, ToolError> {
        let project = self.default_project();
        let body = self
            .get(&format!("/rest/api/3/project/{}/statuses", encode(&project)))?
            .body;
        let mut statuses: Vec<Value> = Vec::new();
        for kind in body.as_array().into_iter().flatten() {
            for s in kind["statuses"].as_array().into_iter().flatten() {
                match statuses.iter_mut().find(|x| x["id"] == s["id"]) {
                    Some(known) => known["issueTypes"]
                        .as_array_mut()
                        .into_iter()
                        .for_each(|l| l.push(kind["name"].clone())),
                    None => statuses.push(json!({
                        "id": s["id"], "name": s["name"], "category": s["statusCategory"]["key"],
                        "issueTypes": [kind["name"]],
                    })),
                }
            }
        }
        let summary = format!("{} status(es) in {project}", statuses.len());
        Ok(result(summary, json!({"project": project, "statuses": statuses})))
    }

    fn get_users(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let limit = uint(args, "limit", 50)?.clamp(1, 1000).to_string();
        let search = optional(args, "search").unwrap_or_default();
        let users = if let Some(id) = optional(args, "userId") {
            vec![
                self.get(&with_query("/rest/api/3/user", &[("accountId", id)]))?
                    .body,
            ]
        } else {
            let path = match optional(args, "projectKey") {
                None if !search.is_empty() => with_query(
                    "/rest/api/3/user/search",
                    &[("query", search), ("maxResults", limit)],
                ),
                project => with_query(
                    "/rest/api/3/user/assignable/search",
                    &[
                        ("project", project.unwrap_or_else(|| self.default_project())),
                        ("query", search),
                        ("maxResults", limit),
                    ],
                ),
            };
            self.get(&path)?.body.as_array().cloned().unwrap_or_default()
        };
        let users: Vec<Value> = users
            .iter()
            .map(|u| json!({"id": u["accountId"], "name": u["displayName"], "email": u["emailAddress"], "active": u["active"]}))
            .collect();
        Ok(result(
            format!("{} user(s)", users.len()),
            json!({"users": users}),
        ))
    }

    fn get_custom_fields(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let search = optional(args, "search").unwrap_or_default().to_lowercase();
        let wanted = |name: &Value| name.as_str().is_some_and(|n| n.to_lowercase().contains(&search));
        let fields: Vec<Value> = match optional(args, "issueType") {
            Some(kind) => {
                let project = self.project_key(args, "projectKey");
                let base = format!("/rest/api/3/issue/createmeta/{}/issuetypes", encode(&project));
                let (types, _) = self.paged(&base, &[], "issueTypes", 0, 200)?;
                let id = types
                    .iter()
                    .find(|t| t["name"].as_str().is_some_and(|n| n.eq_ignore_ascii_case(&kind)))
                    .and_then(|t| t["id"].as_str().map(str::to_owned))
                    .ok_or_else(|| {
                        let known: Vec<&str> = types.iter().filter_map(|t| t["name"].as_str()).collect();
                        ToolError::InvalidArgs(format!(
                            "Jira {}: {project} has no issue type `{kind}` (it has {})",
                            self.tool,
                            known.join(", ")
                        ))
                    })?;
                let (found, _) = self.paged(&format!("{base}/{}", encode(&id)), &[], "fields", 0, 500)?;
                found
                    .iter()
                    .filter(|f| {
                        f["fieldId"]
                            .as_str()
                            .is_some_and(|i| i.starts_with("customfield_"))
                            && wanted(&f["name"])
                    })
                    .map(|f| {
                        let options = names(&f["allowedValues"], "value");
                        json!({"id": f["fieldId"], "name": f["name"], "type": f["schema"]["type"],
                               "required": f["required"], "options": options})
                    })
                    .collect()
            }
            None => self
                .get("/rest/api/3/field")?
                .body
                .as_array()
                .into_iter()
                .flatten()
                .filter(|f| f["custom"].as_bool() == Some(true) && wanted(&f["name"]))
                .map(|f| json!({"id": f["id"], "name": f["name"], "type": f["schema"]["type"]}))
                .collect(),
        };
        Ok(result(
            format!("{} custom field(s)", fields.len()),
            json!({"fields": fields}),
        ))
    }

    fn list_project_versions(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let project = self.project_key(args, "projectKey");
        let released = args["includeReleased"].as_bool() != Some(false);
        let archived = args["includeArchived"].as_bool() == Some(true);
        let mut status = vec!["unreleased"];
        if released {
            status.push("released");
        }
        if archived {
            status.push("archived");
        }
        let limit = uint(args, "limit", 50)?.clamp(1, 100);
        let path = format!("/rest/api/3/project/{}/version", encode(&project));
        let (found, more) = self.paged(&path, &[("status", status.join(","))], "values", 0, limit)?;
        let versions: Vec<Value> = found.iter().map(version).collect();
        let summary = format!("{} version(s) of {project}", versions.len());
        Ok(result(
            summary,
            json!({"project": project, "versions": versions, "has_more": more}),
        ))
    }

    fn get_assets(&self, args: &Value) -> Result<ToolResult, ToolError> {
        if optional(args, "context_type").as_deref() == Some("mr") {
            return Err(ToolError::InvalidArgs(format!(
                "Jira {}: Jira has no merge requests; use context_type `issue`",
                self.tool
            )));
        }
        let key = issue_key(self.tool, args, "key")?;
        let body = self
            .get(&format!("/rest/api/3/issue/{}?fields=attachment", encode(&key)))?
            .body;
        let assets: Vec<Value> = body["fields"]["attachment"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|a| {
                json!({"id": a["id"], "filename": a["filename"], "size": a["size"], "mimeType": a["mimeType"],
                            "author": a["author"]["displayName"], "created": a["created"]})
            })
            .collect();
        Ok(result(
            format!("{} attachment(s) on {key}", assets.len()),
            json!({"key": key, "assets": assets}),
        ))
    }

    /// The `fields` of a create or edit: what the arguments set.
    fn fields(&self, args: &Value) -> Value {
        let mut fields = Map::new();
        if let Some(title) = optional(args, "title") {
            fields.insert("summary".into(), json!(title));
        }
        if let Some(text) = args.get("description").and_then(Value::as_str) {
            fields.insert("description".into(), to_adf(text));
        }
        if let Some(priority) = optional(args, "priority") {
            fields.insert("priority".into(), json!({"name": priority}));
        }
        if let Some(labels) = strings(args, "labels") {
            fields.insert("labels".into(), json!(labels));
        }
        if let Some(who) = strings(args, "assignees") {
            // Jira issues have one assignee; an empty list unassigns.
            fields.insert(
                "assignee".into(),
                who.first().map_or(Value::Null, |id| json!({"accountId": id})),
            );
        }
        if let Some(parent) = optional(args, "parentId") {
            fields.insert("parent".into(), json!({"key": parent}));
        }
        if let Some(kind) = optional(args, "issueType") {
            fields.insert("issuetype".into(), json!({"name": kind}));
        }
        if let Some(components) = strings(args, "components") {
            let named: Vec<Value> = components.iter().map(|c| json!({"name": c})).collect();
            fields.insert("components".into(), json!(named));
        }
        if let Some(Value::Object(custom)) = args.get("customFields") {
            fields.extend(custom.clone());
        }
        Value::Object(fields)
    }

    /// Move `key` to the status named `status`, or (for `state`) to the
    /// first status of the done category (closed) or outside it (open).
    fn transition(&self, key: &str, status: Option<&str>, state: Option<&str>) -> Result<String, ToolError> {
        let path = format!("/rest/api/3/issue/{}/transitions", encode(key));
        let body = self.get(&path)?.body;
        let transitions = body["transitions"].as_array().cloned().unwrap_or_default();
        let category = |t: &Value| t["to"]["statusCategory"]["key"].as_str().unwrap_or("").to_owned();
        let chosen = transitions.iter().find(|t| match (status, state) {
            (Some(s), _) => [&t["to"]["name"], &t["name"]]
                .iter()
                .any(|n| n.as_str().is_some_and(|n| n.eq_ignore_ascii_case(s))),
            (None, Some("closed")) => category(t) == "done",
            _ => category(t) != "done",
        });
        let Some(chosen) = chosen else {
            let reachable: Vec<&str> = transitions
                .iter()
                .filter_map(|t| t["to"]["name"].as_str())
                .collect();
            return Err(ToolError::InvalidArgs(format!(
                "Jira {}: {key} cannot move to `{}` from its current status; it can move to: {}",
                self.tool,
                status.or(state).unwrap_or(""),
                reachable.join(", ")
            )));
        };
        self.send("POST", &path, &json!({"transition": {"id": chosen["id"]}}))?;
        Ok(chosen["to"]["name"].as_str().unwrap_or("").to_owned())
    }

    pub fn create_issue(&self, args: &Value) -> Result<ToolResult, ToolError> {
        required(args, "title")?;
        let project = self.project_key(args, "projectId");
        let mut fields = self.fields(args);
        fields["project"] = json!({"key": project});
        if fields.get("issuetype").is_none() {
            fields["issuetype"] = json!({"name": "Task"});
        }
        let created = self
            .send("POST", "/rest/api/3/issue", &json!({"fields": fields}))?
            .body;
        let key = created["key"].as_str().unwrap_or("").to_owned();
        let status = match optional(args, "status") {
            Some(s) => Some(self.transition(&key, Some(&s), None)?),
            None => None,
        };
        let url = format!("{}/browse/{key}", self.api.base);
        Ok(result(
            format!("created {key} in {project}"),
            json!({"key": key, "id": created["id"], "url": url, "status": status}),
        ))
    }

    pub fn update_issue(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let key = issue_key(self.tool, args, "key")?;
        if optional(args, "projectId").is_some() {
            return Err(ToolError::InvalidArgs(format!(
                "Jira {}: moving an issue to another project is not possible through the REST API's \
                 edit; use Jira's Move",
                self.tool
            )));
        }
        let fields = self.fields(args);
        let edited = fields.as_object().is_some_and(|f| !f.is_empty());
        if edited {
            self.send(
                "PUT",
                &format!("/rest/api/3/issue/{}", encode(&key)),
                &json!({"fields": fields}),
            )?;
        }
        let (status, state) = (optional(args, "status"), optional(args, "state"));
        let moved = if status.is_some() || state.is_some() {
            Some(self.transition(&key, status.as_deref(), state.as_deref())?)
        } else {
            None
        };
        if !edited && moved.is_none() {
            return Err(ToolError::InvalidArgs(format!(
                "Jira {}: nothing to change on {key}",
                self.tool
            )));
        }
        let changed: Vec<String> = fields
            .as_object()
            .map(|f| f.keys().cloned().collect())
            .unwrap_or_default();
        let summary = match &moved {
            Some(to) => format!("updated {key}; now {to}"),
            None => format!("updated {key} ({})", changed.join(", ")),
        };
        Ok(result(
            summary,
            json!({"key": key, "updated": changed, "status": moved}),
        ))
    }

    fn add_issue_comment(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let key = issue_key(self.tool, args, "key")?;
        let body = to_adf(&required(args, "body")?);
        let path = format!("/rest/api/3/issue/{}/comment", encode(&key));
        let made = self.send("POST", &path, &json!({"body": body}))?.body;
        Ok(result(
            format!("commented on {key}"),
            json!({"key": key, "comment": comment(&made)}),
        ))
    }

    /// A link type's name: the configured one it spells, or Jira's default
    /// name for the catalog's words (`blocks`, `relates_to`, `duplicates`).
    fn link_type(&self, given: &str) -> String {
        let plain = |s: &str| s.to_lowercase().replace(['_', ' '], "");
        let configured = self
            .jira
            .config
            .link_types
            .iter()
            .find(|t| plain(t) == plain(given));
        if let Some(t) = configured {
            return t.clone();
        }
        match plain(given).as_str() {
            "blocks" | "isblockedby" => "Blocks".into(),
            "relatesto" | "relates" => "Relates".into(),
            "duplicates" | "isduplicatedby" => "Duplicate".into(),
            "clones" | "isclonedby" => "Cloners".into(),
            _ => given.to_owned(),
        }
    }

    fn link_issues(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let (source, target) = (
            issue_key(self.tool, args, "source_key")?,
            issue_key(self.tool, args, "target_key")?,
        );
        let kind = self.link_type(&required(args, "link_type")?);
        // The source is the link's outward ("from") issue: `source blocks target`.
        let body =
            json!({"type": {"name": kind}, "outwardIssue": {"key": source}, "inwardIssue": {"key": target}});
        self.send("POST", "/rest/api/3/issueLink", &body)?;
        Ok(result(
            format!("linked {source} → {target} ({kind})"),
            json!({"source_key": source, "target_key": target, "link_type": kind}),
        ))
    }

    fn unlink_issues(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let (source, target) = (
            issue_key(self.tool, args, "source_key")?,
            issue_key(self.tool, args, "target_key")?,
        );
        let kind = optional(args, "link_type").map(|t| self.link_type(&t));
        let body = self
            .get(&format!(
                "/rest/api/3/issue/{}?fields=issuelinks",
                encode(&source)
            ))?
            .body;
        let links: Vec<String> = body["fields"]["issuelinks"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|l| {
                let other = l["outwardIssue"]["key"]
                    .as_str()
                    .or(l["inwardIssue"]["key"].as_str());
                other == Some(target.as_str())
                    && kind.as_ref().is_none_or(|k| {
                        l["type"]["name"]
                            .as_str()
                            .is_some_and(|n| n.eq_ignore_ascii_case(k))
                    })
            })
            .filter_map(|l| l["id"].as_str().map(str::to_owned))
            .collect();
        if links.is_empty() {
            return Err(ToolError::NotFound(format!(
                "Jira {}: {source} has no {}link to {target}",
                self.tool,
                kind.map(|k| format!("`{k}` ")).unwrap_or_default()
            )));
        }
        for id in &links {
            self.api.send(
                self.tool,
                "DELETE",
                &format!("/rest/api/3/issueLink/{}", encode(id)),
                None,
            )?;
        }
        Ok(result(
            format!("removed {} link(s) between {source} and {target}", links.len()),
            json!({"source_key": source, "target_key": target, "removed": links}),
        ))
    }

    fn upsert_project_version(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let project = self.project_key(args, "projectKey");
        let name = required(args, "name")?;
        let mut body = Map::new();
        for field in ["description", "startDate", "releaseDate"] {
            if let Some(v) = optional(args, field) {
                body.insert(field.into(), json!(v));
            }
        }
        for flag in ["released", "archived"] {
            if let Some(v) = args.get(flag).and_then(Value::as_bool) {
                body.insert(flag.into(), json!(v));
            }
        }
        let versions = self
            .get(&format!("/rest/api/3/project/{}/versions", encode(&project)))?
            .body;
        let existing = versions
            .as_array()
            .into_iter()
            .flatten()
            .find(|v| v["name"].as_str() == Some(name.as_str()))
            .and_then(|v| v["id"].as_str().map(str::to_owned));
        let (verb, saved) = match existing {
            Some(id) => (
                "updated",
                self.send(
                    "PUT",
                    &format!("/rest/api/3/version/{}", encode(&id)),
                    &Value::Object(body),
                )?,
            ),
            None => {
                let id = self
                    .get(&format!("/rest/api/3/project/{}", encode(&project)))?
                    .body["id"]
                    .clone();
                let project_id = id
                    .as_str()
                    .and_then(|s| s.parse::<u64>().ok())
                    .map_or(id, |n| json!(n));
                body.insert("name".into(), json!(name));
                body.insert("projectId".into(), project_id);
                (
                    "created",
                    self.send("POST", "/rest/api/3/version", &Value::Object(body))?,
                )
            }
        };
        Ok(result(
            format!("{verb} version {name} of {project}"),
            version(&saved.body),
        ))
    }

    fn delete_asset(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let key = issue_key(self.tool, args, "key")?;
        let id = required(args, "asset_id")?;
        self.api.send(
            self.tool,
            "DELETE",
            &format!("/rest/api/3/attachment/{}", encode(&id)),
            None,
        )?;
        Ok(result(
            format!("deleted attachment {id} of {key}"),
            json!({"key": key, "asset_id": id}),
        ))
    }
}

fn comment(c: &Value) -> Value {
    json!({"id": c["id"], "author": c["author"]["displayName"], "body": adf_text(&c["body"]),
           "created": c["created"], "updated": c["updated"]})
}

fn version(v: &Value) -> Value {
    json!({"id": v["id"], "name": v["name"], "description": v["description"], "released": v["released"],
           "archived": v["archived"], "startDate": v["startDate"], "releaseDate": v["releaseDate"]})
}

/// Parent, subtasks and links of an issue answered with those fields.
fn relations_of(body: &Value) -> Value {
    let f = &body["fields"];
    let brief = |i: &Value| json!({"key": i["key"], "title": i["fields"]["summary"], "status": i["fields"]["status"]["name"]});
    let subtasks: Vec<Value> = f["subtasks"]
        .as_array()
        .into_iter()
        .flatten()
        .map(brief)
        .collect();
    let links: Vec<Value> = f["issuelinks"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|l| {
            // The other issue is named; this one reads the opposite side's
            // description: with `inwardIssue: B`, this issue `blocks` B.
            let (description, other) = if l["outwardIssue"].is_object() {
                ("inward", &l["outwardIssue"])
            } else {
                ("outward", &l["inwardIssue"])
            };
            let mut linked = brief(other);
            linked["id"] = l["id"].clone();
            linked["type"] = l["type"]["name"].clone();
            linked["relation"] = l["type"][description].clone();
            linked
        })
        .collect();
    let parent = if f["parent"].is_object() {
        brief(&f["parent"])
    } else {
        Value::Null
    };
    json!({"parent": parent, "subtasks": subtasks, "links": links})
}
