//! Boards and sprints, from Jira Software's Agile REST API
//! (`/rest/agile/1.0`): a project's board, its sprints, and moving issues
//! into a sprint.

use provider_kit::api::{encode, optional, result, uint, with_query};
use toolhost_sdk::{ToolError, ToolResult, Value, json};

use crate::tools::{Call, issue_key};

impl Call<'_> {
    /// `boardId`, else the first board of the default project (a scrum
    /// board first: kanban boards have no sprints).
    fn board(&self, args: &Value) -> Result<String, ToolError> {
        if let Some(id) = optional(args, "boardId") {
            return Ok(id);
        }
        let project = self.default_project();
        let path = with_query("/rest/agile/1.0/board", &[("projectKeyOrId", project.clone())]);
        let boards = self.get(&path)?.body["values"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let scrum = boards.iter().find(|b| b["type"] == "scrum");
        scrum
            .or(boards.first())
            .and_then(|b| b.get("id").map(|id| id.to_string().trim_matches('"').to_owned()))
            .ok_or_else(|| ToolError::NotFound(format!("Jira {}: project {project} has no board", self.tool)))
    }

    pub fn get_board_sprints(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let board = self.board(args)?;
        let state = optional(args, "state").unwrap_or_else(|| "active".into());
        let query = if state == "all" {
            vec![]
        } else {
            vec![("state", state.clone())]
        };
        let limit = uint(args, "limit", 20)?.clamp(1, 100);
        let path = format!("/rest/agile/1.0/board/{}/sprint", encode(&board));
        let (found, more) = self.paged(&path, &query, "values", 0, limit)?;
        let sprints: Vec<Value> = found
            .iter()
            .map(|s| {
                json!({"id": s["id"], "name": s["name"], "state": s["state"], "goal": s["goal"],
                            "startDate": s["startDate"], "endDate": s["endDate"]})
            })
            .collect();
        let summary = format!("{} {state} sprint(s) on board {board}", sprints.len());
        Ok(result(
            summary,
            json!({"boardId": board, "sprints": sprints, "has_more": more}),
        ))
    }

    pub fn assign_to_sprint(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let sprint = optional(args, "sprintId")
            .ok_or_else(|| ToolError::InvalidArgs("`sprintId` is required".into()))?;
        let listed = args
            .get("keys")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if listed.is_empty() {
            return Err(ToolError::InvalidArgs(format!(
                "Jira {}: `keys` must name at least one issue",
                self.tool
            )));
        }
        let keys = listed
            .iter()
            .map(|k| issue_key(self.tool, &json!({"key": k}), "key"))
            .collect::<Result<Vec<_>, _>>()?;
        let path = format!("/rest/agile/1.0/sprint/{}/issue", encode(&sprint));
        self.send("POST", &path, &json!({"issues": keys}))?;
        Ok(result(
            format!("moved {} issue(s) into sprint {sprint}", keys.len()),
            json!({"sprintId": sprint, "keys": keys}),
        ))
    }
}
