//! The Structure app's forest (`/rest/structure/2.0/forest/latest`), when
//! structures are configured: the rows of a structure with their depth,
//! and the issues in them by key (one JQL search for the rows shown).
//!
//! The forest comes as a formula: `rowId:depth:item[:semantic]` per row,
//! where an item is an issue id, or `type/id` (`type//id`) of another item
//! type named in `itemTypes`. The other Structure tools (views, values,
//! edits) are not run by this plugin.

use provider_kit::api::{result, uint, with_query};
use toolhost_sdk::{ToolError, ToolResult, Value, json};

use crate::tools::Call;

/// One row of a forest formula.
#[derive(Debug, PartialEq)]
struct Row<'a> {
    id: u64,
    depth: u64,
    /// An issue id, or `(item type, item id)`.
    item: Result<u64, (&'a str, &'a str)>,
}

fn rows(formula: &str) -> Option<Vec<Row<'_>>> {
    formula
        .split(',')
        .filter(|r| !r.is_empty())
        .map(|r| {
            let mut parts = r.splitn(4, ':');
            let id = parts.next()?.parse().ok()?;
            let depth = parts.next()?.parse().ok()?;
            let item = parts.next()?;
            let item = match item.parse::<u64>() {
                Ok(issue) => Ok(issue),
                Err(_) => {
                    let (kind, rest) = item.split_once('/')?;
                    Err((kind, rest.trim_start_matches('/')))
                }
            };
            Some(Row { id, depth, item })
        })
        .collect()
}

impl Call<'_> {
    pub fn get_structure_forest(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let id = uint(args, "structureId", 0)?;
        if id == 0 {
            return Err(ToolError::InvalidArgs("`structureId` is required".into()));
        }
        let (offset, limit) = (
            uint(args, "offset", 0)?,
            uint(args, "limit", 200)?.clamp(1, 10_000),
        );
        let spec = json!({"structureId": id}).to_string();
        let body = self
            .get(&with_query("/rest/structure/2.0/forest/latest", &[("s", spec)]))?
            .body;
        let formula = body["formula"].as_str().unwrap_or("");
        let all = rows(formula).ok_or_else(|| {
            ToolError::Failed(format!(
                "Jira {}: the forest formula of structure {id} does not parse",
                self.tool
            ))
        })?;
        let shown: Vec<&Row> = all.iter().skip(offset as usize).take(limit as usize).collect();
        let issue_ids: Vec<String> = shown
            .iter()
            .filter_map(|r| r.item.ok())
            .map(|i| i.to_string())
            .collect();
        let issues = if issue_ids.is_empty() {
            Vec::new()
        } else {
            let jql = format!("id in ({})", issue_ids.join(", "));
            self.search(&jql, 0, issue_ids.len() as u64)?.0
        };
        let out: Vec<Value> = shown
            .iter()
            .map(|r| match r.item {
                Ok(issue) => {
                    let found = issues
                        .iter()
                        .find(|i| i["id"].as_str() == Some(issue.to_string().as_str()));
                    json!({"rowId": r.id, "depth": r.depth, "issueId": issue,
                           "key": found.map(|i| i["key"].clone()),
                           "title": found.map(|i| i["fields"]["summary"].clone()),
                           "status": found.map(|i| i["fields"]["status"]["name"].clone())})
                }
                Err((kind, item)) => {
                    json!({"rowId": r.id, "depth": r.depth, "itemType": body["itemTypes"][kind],
                                            "itemId": item})
                }
            })
            .collect();
        let more = offset as usize + out.len() < all.len();
        let summary = format!("{} of {} row(s) of structure {id}", out.len(), all.len());
        Ok(result(
            summary,
            json!({"structureId": id, "forestVersion": body["version"]["version"],
                   "signature": body["version"]["signature"], "rows": out, "total": all.len(), "has_more": more}),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formulas_are_read() {
        let got = rows("10394:0:4/356,10332:0:14707,10374:1:5//x:3").unwrap();
        assert_eq!(got[0].item, Err(("4", "356")));
        assert_eq!(
            got[1],
            Row {
                id: 10332,
                depth: 0,
                item: Ok(14707)
            }
        );
        assert_eq!(got[2].item, Err(("5", "x")));
        assert!(rows("garbage").is_none());
    }
}
