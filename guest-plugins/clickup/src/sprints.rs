//! ClickUp's sprints: with the Sprints ClickApp, a sprint is a list in the
//! space's sprint folder, its dates the list's `start_date` and `due_date`
//! (Unix milliseconds). `get_board_sprints` reads the folder's lists
//! (`boardId` or config `sprint_folder_id`); `assign_to_sprint` adds each
//! task to the sprint's list (`POST /list/{id}/task/{task}`, which needs the
//! Tasks in Multiple Lists ClickApp), so the task stays in its home list.
//!
//! A sprint's state comes from its dates against the wall clock: active
//! while it runs, future before, closed after; archived lists (ClickUp's
//! done sprints, when archived) are closed.

use std::time::{SystemTime, UNIX_EPOCH};

use provider_kit::api::{catalog_tool, encode, optional, required, result, strings, uint};
use toolhost_sdk::{ToolDefinition, ToolError, ToolResult, Value, json};

use crate::ClickUp;

pub fn tools() -> Vec<ToolDefinition> {
    let t = |name, what| catalog_tool(name, "issue_tracker", what);
    vec![
        t(
            "get_board_sprints",
            "The sprints (lists of the sprint folder) of the ClickUp space.",
        ),
        t(
            "assign_to_sprint",
            "Add ClickUp tasks to a sprint's list (by its id from get_board_sprints).",
        ),
    ]
}

/// A list's date field in milliseconds, if set.
fn millis(list: &Value, field: &str) -> Option<u64> {
    match &list[field] {
        Value::String(s) => s.parse().ok(),
        Value::Number(n) => n.as_u64(),
        _ => None,
    }
}

/// A sprint list's state at `now` (ms).
fn state(list: &Value, now: u64) -> &'static str {
    if list["archived"] == json!(true) {
        return "closed";
    }
    match (millis(list, "start_date"), millis(list, "due_date")) {
        (_, Some(due)) if due < now => "closed",
        (Some(start), _) if start > now => "future",
        (Some(_), Some(_)) => "active",
        _ => "undated",
    }
}

impl ClickUp {
    fn sprint_folder(&self, tool: &str, args: &Value) -> Result<String, ToolError> {
        optional(args, "boardId")
            .or_else(|| self.config.sprint_folder_id.clone())
            .ok_or_else(|| {
                ToolError::Failed(format!(
                    "ClickUp {tool}: config `sprint_folder_id` (the folder the Sprints ClickApp keeps sprints in) \
                     or `boardId` is required"
                ))
            })
    }

    pub(crate) fn get_board_sprints(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "get_board_sprints";
        let folder = self.sprint_folder(tool, args)?;
        let wanted = optional(args, "state").unwrap_or_else(|| "active".into());
        if !matches!(wanted.as_str(), "active" | "future" | "closed" | "all") {
            return Err(ToolError::InvalidArgs(format!(
                "ClickUp {tool}: `state` is active, future, closed or all, not `{wanted}`"
            )));
        }
        let limit = uint(args, "limit", 20)? as usize;
        let path = |archived: bool| format!("/folder/{}/list?archived={archived}", encode(&folder));
        let mut lists = self.api.get(tool, &path(false))?.body["lists"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        // Done sprints may be archived: only a closed sprint can be one.
        if matches!(wanted.as_str(), "closed" | "all") {
            let archived = self.api.get(tool, &path(true))?.body["lists"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            lists.extend(archived);
        }
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        lists.sort_by_key(|l| millis(l, "start_date").unwrap_or(u64::MAX));
        let sprints: Vec<Value> = lists
            .iter()
            .map(|l| (l, state(l, now)))
            .filter(|(_, s)| wanted == "all" || *s == wanted)
            .take(limit)
            .map(|(l, s)| {
                json!({"id": l["id"], "name": l["name"], "state": s, "startDate": l["start_date"],
                       "endDate": l["due_date"], "taskCount": l["task_count"]})
            })
            .collect();
        Ok(result(
            format!("{} sprint(s) ({wanted})", sprints.len()),
            json!({"folderId": folder, "sprints": sprints}),
        ))
    }

    pub(crate) fn assign_to_sprint(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "assign_to_sprint";
        let sprint = required(args, "sprintId")?;
        let keys = strings(args, "keys")?.unwrap_or_default();
        if keys.is_empty() {
            return Err(ToolError::InvalidArgs(format!("ClickUp {tool}: `keys` is empty")));
        }
        for key in &keys {
            let path = format!("/list/{}/task/{}", encode(&sprint), encode(key));
            self.api.send(tool, "POST", &path, None)?;
        }
        Ok(result(
            format!("{} task(s) added to sprint {sprint}", keys.len()),
            json!({"sprintId": sprint, "keys": keys}),
        ))
    }
}
