//! The epics tools: in Jira an epic is an issue of type Epic, and the
//! issues under it name it as their `parent`. So these are the issue tools
//! with the type fixed; Jira has no goals to attach an epic to.

use provider_kit::api::{optional, result, uint};
use toolhost_sdk::{ToolError, ToolResult, Value, json};

use crate::tools::{Call, issue_key, quoted};

/// Issues listed under an epic at most.
const MAX_CHILDREN: u64 = 50;

impl Call<'_> {
    fn no_goals(&self, args: &Value) -> Result<(), ToolError> {
        match optional(args, "goalId") {
            Some(_) => Err(ToolError::InvalidArgs(format!(
                "Jira {}: Jira has no goals to attach an epic to; leave `goalId` out",
                self.tool
            ))),
            None => Ok(()),
        }
    }

    pub fn get_epics(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let mut clauses = vec![
            format!("project = {}", quoted(&self.default_project())),
            "issuetype = Epic".to_owned(),
        ];
        match optional(args, "state").as_deref() {
            Some("all") => {}
            Some("closed") => clauses.push("statusCategory = Done".into()),
            _ => clauses.push("statusCategory != Done".into()),
        }
        if let Some(text) = optional(args, "search") {
            clauses.push(format!("summary ~ {}", quoted(&text)));
        }
        let jql = format!("{} ORDER BY updated DESC", clauses.join(" AND "));
        let (found, more) = self.search(&jql, uint(args, "offset", 0)?, uint(args, "limit", 20)?.max(1))?;
        let epics: Vec<Value> = found.iter().map(|i| self.issue(i)).collect();
        Ok(result(
            format!("{} epic(s) in {}", epics.len(), self.default_project()),
            json!({"epics": epics, "jql": jql, "has_more": more}),
        ))
    }

    pub fn get_epic(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let key = issue_key(self.tool, args, "key")?;
        let mut value = self.issue_detail(&key, false, false)?;
        if value["issueType"] != "Epic" {
            return Err(ToolError::InvalidArgs(format!(
                "Jira {}: {key} is a {}, not an epic",
                self.tool,
                value["issueType"].as_str().unwrap_or("issue")
            )));
        }
        let jql = format!("parent = {} ORDER BY created ASC", quoted(&key));
        let (children, more) = self.search(&jql, 0, MAX_CHILDREN)?;
        value["issues"] = json!(children.iter().map(|i| self.issue(i)).collect::<Vec<_>>());
        value["has_more_issues"] = json!(more);
        let summary = format!(
            "epic {key} {} ({}), {} issue(s)",
            value["title"].as_str().unwrap_or(""),
            value["status"],
            children.len()
        );
        Ok(result(summary, value))
    }

    /// The epic arguments as issue arguments of type Epic.
    fn as_issue(&self, args: &Value) -> Result<Value, ToolError> {
        self.no_goals(args)?;
        let mut issue = args.clone();
        if let Some(map) = issue.as_object_mut() {
            map.remove("goalId");
            map.insert("issueType".into(), json!("Epic"));
        }
        Ok(issue)
    }

    pub fn create_epic(&self, args: &Value) -> Result<ToolResult, ToolError> {
        self.create_issue(&self.as_issue(args)?)
    }

    pub fn update_epic(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let mut issue = self.as_issue(args)?;
        // An edit keeps the type; only a create sets it.
        if let Some(map) = issue.as_object_mut() {
            map.remove("issueType");
        }
        self.update_issue(&issue)
    }
}
