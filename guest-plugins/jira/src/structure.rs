//! The Structure app (`/rest/structure/2.0`), when structures are
//! configured: the structures (list, create), a structure's forest (the
//! rows with their depth, and the issues in them by key, one JQL search for
//! the rows shown), its rows' attribute values, and edits of the forest
//! (add, move, remove rows).
//!
//! The forest comes as a formula: `rowId:depth:item[:semantic]` per row,
//! where an item is an issue id, or `type/id` (`type//id`) of another item
//! type named in `itemTypes`. Edits post actions to `forest/update` against
//! the forest version last read: rows are placed by the coordinates
//! `under` (the parent row, 0 for the top level) and `after` (the preceding
//! sibling, 0 for first), and added rows are a formula of temporary
//! (negative) row ids. Views have no documented REST resource, so the view
//! tools are not served.

use provider_kit::api::{required, result, uint, with_query};
use toolhost_sdk::{ToolError, ToolResult, Value, json};

use crate::tools::{Call, issue_key};

const API: &str = "/rest/structure/2.0";

/// Most rows one edit or value read names.
const MAX_ROWS: usize = 1000;

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

/// A list of integers argument (`rows`, `rowIds`), bounded.
fn ids(tool: &str, args: &Value, name: &str) -> Result<Vec<u64>, ToolError> {
    let invalid = || ToolError::InvalidArgs(format!("Jira {tool}: `{name}` must be a list of row ids"));
    let list = args.get(name).and_then(Value::as_array).ok_or_else(invalid)?;
    if list.is_empty() || list.len() > MAX_ROWS {
        return Err(ToolError::InvalidArgs(format!(
            "Jira {tool}: `{name}` must name 1 to {MAX_ROWS} rows"
        )));
    }
    list.iter().map(|v| v.as_u64().ok_or_else(invalid)).collect()
}

/// A column spec as a Structure attribute: a field name is its text value;
/// `{"formula": "..."}` is an expression; a full attribute spec (`id`,
/// `format`, `params`) is taken as it is.
fn attribute(tool: &str, column: &str) -> Result<Value, ToolError> {
    if !column.trim_start().starts_with('{') {
        return Ok(json!({"id": column, "format": "text"}));
    }
    let spec: Value = toolhost_sdk::serde_json::from_str(column).map_err(|e| {
        ToolError::InvalidArgs(format!(
            "Jira {tool}: column `{}` is not JSON: {e}",
            column.escape_debug()
        ))
    })?;
    match (spec.get("formula").and_then(Value::as_str), spec.get("id")) {
        (Some(formula), _) => Ok(json!({"id": "expr", "format": "text", "params": {"formula": formula}})),
        (None, Some(Value::String(_))) => Ok(spec),
        _ => Err(ToolError::InvalidArgs(format!(
            "Jira {tool}: column `{}` must be a field name, {{\"formula\": ...}} or an attribute spec with an `id`",
            column.escape_debug()
        ))),
    }
}

/// A structure as the tools return it.
fn structure(s: &Value) -> Value {
    json!({"structureId": s["id"], "name": s["name"], "description": s["description"],
           "readOnly": s["readOnly"], "owner": s["owner"]})
}

impl Call<'_> {
    fn structure_id(&self, args: &Value) -> Result<u64, ToolError> {
        match uint(args, "structureId", 0)? {
            0 => Err(ToolError::InvalidArgs(format!(
                "Jira {}: `structureId` is required",
                self.tool
            ))),
            id => Ok(id),
        }
    }

    pub fn get_structures(&self) -> Result<ToolResult, ToolError> {
        let body = self.get(&format!("{API}/structure"))?.body;
        let list = body.get("structures").unwrap_or(&body);
        let all: Vec<Value> = list.as_array().into_iter().flatten().map(structure).collect();
        Ok(result(
            format!("{} structure(s)", all.len()),
            json!({"structures": all}),
        ))
    }

    pub fn create_structure(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let name = required(args, "name")?;
        let mut body = json!({"name": name});
        if let Some(d) = args.get("description").and_then(Value::as_str) {
            body["description"] = json!(d);
        }
        let made = self.send("POST", &format!("{API}/structure"), &body)?.body;
        Ok(result(
            format!("created structure {} ({name})", made["id"]),
            structure(&made),
        ))
    }

    pub fn get_structure_values(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let id = self.structure_id(args)?;
        let rows = ids(self.tool, args, "rows")?;
        let columns = provider_kit::api::strings(args, "columns")?.unwrap_or_default();
        if columns.is_empty() {
            return Err(ToolError::InvalidArgs(format!(
                "Jira {}: `columns` must name at least one column",
                self.tool
            )));
        }
        let attributes = columns
            .iter()
            .map(|c| attribute(self.tool, c))
            .collect::<Result<Vec<_>, _>>()?;
        let request = json!({"requests": [{"forestSpec": {"structureId": id}, "rows": rows, "attributes": attributes}]});
        let body = self.send("POST", &format!("{API}/value"), &request)?.body;
        // Each answer's `data` holds, per attribute, the values of the rows
        // in the order asked.
        let mut by_row: Vec<Value> = rows.iter().map(|r| json!({"rowId": r})).collect();
        for data in body["responses"][0]["data"].as_array().into_iter().flatten() {
            let Some(index) = attributes.iter().position(|a| *a == data["attribute"]) else {
                continue;
            };
            for (row, value) in by_row
                .iter_mut()
                .zip(data["values"].as_array().into_iter().flatten())
            {
                row[columns[index].as_str()] = value.clone();
            }
        }
        Ok(result(
            format!(
                "{} column(s) of {} row(s) of structure {id}",
                columns.len(),
                rows.len()
            ),
            json!({"structureId": id, "rows": by_row}),
        ))
    }

    /// The forest's current version and signature; with `forestVersion`,
    /// refuse an edit of a forest that changed since.
    fn forest_version(&self, id: u64, args: &Value) -> Result<Value, ToolError> {
        let spec = json!({"structureId": id}).to_string();
        let latest = self
            .get(&with_query(&format!("{API}/forest/latest"), &[("s", spec)]))?
            .body;
        let version = latest["version"].clone();
        if let Some(seen) = args.get("forestVersion").and_then(Value::as_u64)
            && version["version"].as_u64() != Some(seen)
        {
            return Err(ToolError::InvalidArgs(format!(
                "Jira {}: structure {id} changed since forest version {seen} (now {}); read the forest again",
                self.tool, version["version"]
            )));
        }
        Ok(version)
    }

    /// Post one action to `forest/update`; the new forest version and the
    /// answer's results.
    fn update_forest(&self, id: u64, args: &Value, action: Value) -> Result<(Value, Value), ToolError> {
        let version = self.forest_version(id, args)?;
        let body = json!({"spec": {"structureId": id}, "version": version, "actions": [action]});
        let reply = self.send("POST", &format!("{API}/forest/update"), &body)?.body;
        let new = reply.get("newVersion").unwrap_or(&reply["version"]);
        Ok((new["version"].clone(), reply["actionResults"].clone()))
    }

    /// `under` and `after` coordinates (0 when not given).
    fn coordinates(args: &Value) -> Result<(u64, u64), ToolError> {
        Ok((uint(args, "under", 0)?, uint(args, "after", 0)?))
    }

    pub fn add_structure_rows(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let id = self.structure_id(args)?;
        let keys: Vec<String> = match args.get("items").and_then(Value::as_array) {
            Some(list) if !list.is_empty() && list.len() <= MAX_ROWS => list
                .iter()
                .map(|k| issue_key(self.tool, &json!({"key": k}), "key"))
                .collect::<Result<_, _>>()?,
            _ => {
                return Err(ToolError::InvalidArgs(format!(
                    "Jira {}: `items` must list 1 to {MAX_ROWS} issue keys",
                    self.tool
                )));
            }
        };
        let quoted: Vec<String> = keys.iter().map(|k| crate::tools::quoted(k)).collect();
        let found = self
            .search(&format!("key in ({})", quoted.join(", ")), 0, keys.len() as u64)?
            .0;
        let mut issue_ids = Vec::new();
        for key in &keys {
            let issue = found.iter().find(|i| i["key"].as_str() == Some(key.as_str()));
            match issue.and_then(|i| i["id"].as_str()) {
                Some(issue_id) => issue_ids.push(issue_id.to_owned()),
                None => {
                    return Err(ToolError::NotFound(format!(
                        "Jira {}: issue {key} does not exist or is not visible",
                        self.tool
                    )));
                }
            }
        }
        // Temporary rows -1, -2, ... at depth 0 of the added forest.
        let forest: Vec<String> = issue_ids
            .iter()
            .enumerate()
            .map(|(n, issue)| format!("-{}:0:{issue}", n + 1))
            .collect();
        let (under, after) = Self::coordinates(args)?;
        let action =
            json!({"action": "add", "under": under, "after": after, "before": 0, "forest": forest.join(",")});
        let (version, results) = self.update_forest(id, args, action)?;
        Ok(result(
            format!("added {} row(s) to structure {id}", keys.len()),
            json!({"structureId": id, "items": keys, "forestVersion": version, "actionResults": results}),
        ))
    }

    pub fn move_structure_rows(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let id = self.structure_id(args)?;
        let rows = ids(self.tool, args, "rowIds")?;
        let (under, after) = Self::coordinates(args)?;
        let list: Vec<String> = rows.iter().map(u64::to_string).collect();
        let action =
            json!({"action": "move", "rows": list.join(","), "under": under, "after": after, "before": 0});
        let (version, _) = self.update_forest(id, args, action)?;
        Ok(result(
            format!("moved {} row(s) of structure {id}", rows.len()),
            json!({"structureId": id, "rowIds": rows, "under": under, "after": after, "forestVersion": version}),
        ))
    }

    pub fn remove_structure_row(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let id = self.structure_id(args)?;
        let row = match uint(args, "rowId", 0)? {
            0 => {
                return Err(ToolError::InvalidArgs(format!(
                    "Jira {}: `rowId` is required",
                    self.tool
                )));
            }
            row => row,
        };
        let action = json!({"action": "remove", "rows": row.to_string()});
        let (version, _) = self.update_forest(id, args, action)?;
        Ok(result(
            format!("removed row {row} from structure {id}"),
            json!({"structureId": id, "rowId": row, "forestVersion": version}),
        ))
    }

    pub fn get_structure_forest(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let id = self.structure_id(args)?;
        let (offset, limit) = (
            uint(args, "offset", 0)?,
            uint(args, "limit", 200)?.clamp(1, 10_000),
        );
        let spec = json!({"structureId": id}).to_string();
        let body = self
            .get(&with_query(&format!("{API}/forest/latest"), &[("s", spec)]))?
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

    #[test]
    fn columns_become_attributes() {
        assert_eq!(
            attribute("t", "summary").unwrap(),
            json!({"id": "summary", "format": "text"})
        );
        assert_eq!(
            attribute("t", r#"{"formula":"SUM(story_points)"}"#).unwrap(),
            json!({"id": "expr", "format": "text", "params": {"formula": "SUM(story_points)"}})
        );
        let full = r#"{"id":"progress","format":"number","params":{"basedOn":"timetracking"}}"#;
        assert_eq!(attribute("t", full).unwrap()["id"], "progress");
        assert!(attribute("t", "{not json").is_err() && attribute("t", r#"{"x":1}"#).is_err());
    }
}
