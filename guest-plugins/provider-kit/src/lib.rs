//! What the provider enrichers (GitHub, GitLab, Jira, ClickUp, Confluence,
//! Fireflies, Linear) share: which base-catalog tools write, how to find the
//! items of a structured list result, and projections from those items to
//! the argument names the follow-up tools really take.
//!
//! It owns no provider knowledge: each enricher says which fields to read
//! and how to spell a key.

pub mod api;
pub mod files;
pub mod graphql;
pub mod logs;
pub mod markdown;
pub mod repo;

use toolhost_sdk::{Value, ValueModel, json};

/// Most follow-up calls projected from one result (top 3 covers most cited
/// follow-ups in the reference's corpus).
pub const MAX_PROJECTIONS: usize = 3;

/// Base-catalog tools that change provider state.
pub fn is_write(tool: &str) -> bool {
    const VERBS: [&str; 14] = [
        "create_", "update_", "add_", "link_", "unlink_", "delete_", "upload_", "run_", "assign_", "upsert_",
        "send_", "move_", "remove_", "save_",
    ];
    VERBS.iter().any(|v| tool.starts_with(v))
}

/// The value model every write gets: it changes the provider.
pub fn write_model() -> ValueModel {
    ValueModel::new().side_effect(toolhost_sdk::SideEffect::MutatesExternal)
}

/// The items of a list result: the result itself if it is an array, else
/// the first array under one of `fields`.
pub fn items<'a>(result: &'a Value, fields: &[&str]) -> &'a [Value] {
    if let Some(items) = result.as_array() {
        return items;
    }
    fields
        .iter()
        .find_map(|f| result.get(*f).and_then(Value::as_array))
        .map_or(&[], Vec::as_slice)
}

/// Up to [`MAX_PROJECTIONS`] distinct argument objects `{arg: key}`, one per
/// item that `key` can name.
pub fn project(items: &[Value], arg: &str, key: impl Fn(&Value) -> Option<String>) -> Vec<Value> {
    let mut seen: Vec<String> = Vec::new();
    for item in items {
        if seen.len() == MAX_PROJECTIONS {
            break;
        }
        if let Some(k) = key(item)
            && !seen.contains(&k)
        {
            seen.push(k);
        }
    }
    seen.into_iter().map(|k| json!({ arg: k })).collect()
}

/// A string field, or a number field spelled as a string.
pub fn field(item: &Value, name: &str) -> Option<String> {
    match item.get(name)? {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn projections_are_distinct_and_capped() {
        let result = json!({"issues": [{"key": "A-1"}, {"key": "A-1"}, {"id": 3}, {"key": "A-2"}, {"key": "A-3"}, {"key": "A-4"}]});
        let out = project(items(&result, &["issues"]), "key", |i| field(i, "key"));
        assert_eq!(
            out,
            vec![
                json!({"key": "A-1"}),
                json!({"key": "A-2"}),
                json!({"key": "A-3"})
            ]
        );
        assert!(items(&json!({"other": 1}), &["issues"]).is_empty());
    }

    #[test]
    fn writes_are_recognised() {
        assert!(is_write("create_issue") && is_write("link_issues") && is_write("save_structure_view"));
        assert!(!is_write("get_issues") && !is_write("search_knowledge_base"));
    }
}

/// What git hosts (GitHub, GitLab) share: their issue trackers have no
/// priority, parent, custom fields, issue types, components, projects or
/// points, and their issue lists take no tracker-specific query.
pub mod git_host {
    use toolhost_sdk::Schema;

    const ISSUE_FIELDS: [&str; 7] = [
        "priority",
        "parentId",
        "customFields",
        "issueType",
        "components",
        "projectId",
        "points",
    ];
    const LIST_FIELDS: [&str; 3] = ["projectKey", "nativeQuery", "stateCategory"];

    /// Remove what a git host's issue tracker has no notion of.
    pub fn remove_tracker_fields(tool: &str, schema: &mut Schema<'_>) {
        schema.remove_params(&ISSUE_FIELDS);
        if tool == "get_issues" {
            schema.remove_params(&LIST_FIELDS);
        }
    }

    /// `pr#12` / `mr#12` from an item's `key`, else from its number.
    pub fn change_key(item: &toolhost_sdk::Value, prefix: &str, number_fields: &[&str]) -> Option<String> {
        super::field(item, "key").or_else(|| {
            number_fields
                .iter()
                .find_map(|f| super::field(item, f))
                .map(|n| format!("{prefix}#{n}"))
        })
    }
}
