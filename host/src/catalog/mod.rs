//! The tools the host knows before any plugin runs: each a name, a
//! description, an optional category and an input schema.
//!
//! The base catalog (`base.json`) holds the generic tools of the provider
//! categories (issue tracker, git repository, knowledge base, ...), kept as
//! data so enrichers adapt one shared shape per tool. This module owns the
//! [`ToolSpec`] type and the embedded base catalog; it does not decide which
//! tools are served (that needs a backend bound to each).
//!
//! A spec also carries the MCP fields enrichers never see ([`ToolFields`]:
//! title, annotations, output schema, icons, `_meta`), served as the tool's
//! source gave them: enrichers change only the input schema and the
//! description.

use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::output::{Icon, Meta};

/// A tool before enrichment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    pub input_schema: Value,
    /// Not part of the base catalog's data: set by the tool's source.
    #[serde(skip)]
    pub fields: Arc<ToolFields>,
}

/// What an MCP tool listing carries besides the name, description and
/// input schema.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolFields {
    pub title: Option<String>,
    pub annotations: Option<ToolAnnotations>,
    pub output_schema: Option<Map<String, Value>>,
    pub icons: Option<Vec<Icon>>,
    pub meta: Option<Meta>,
}

/// MCP tool annotations: hints on how a tool behaves.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolAnnotations {
    pub title: Option<String>,
    pub read_only_hint: Option<bool>,
    pub destructive_hint: Option<bool>,
    pub idempotent_hint: Option<bool>,
    pub open_world_hint: Option<bool>,
}

/// The generic provider tools, parsed once from the embedded data.
pub fn base_catalog() -> &'static [ToolSpec] {
    static CATALOG: OnceLock<Vec<ToolSpec>> = OnceLock::new();
    CATALOG.get_or_init(|| {
        serde_json::from_str(include_str!("base.json")).expect("base.json is checked by the catalog tests")
    })
}

/// The base catalog entry named `name`.
pub fn base_tool(name: &str) -> Option<&'static ToolSpec> {
    base_catalog().iter().find(|t| t.name == name)
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;
    use crate::schema::ToolSchema;

    #[test]
    fn base_catalog_is_well_formed() {
        let tools = base_catalog();
        assert!(tools.len() >= 40, "only {} tools", tools.len());
        let mut names = HashSet::new();
        for tool in tools {
            assert!(names.insert(&tool.name), "duplicate tool {}", tool.name);
            assert!(tool.category.is_some(), "{} has no category", tool.name);
            let schema = ToolSchema::new(&tool.description, tool.input_schema.clone())
                .unwrap_or_else(|e| panic!("{}: {e}", tool.name));
            let declared = tool
                .input_schema
                .get("required")
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            assert_eq!(
                schema.required().len(),
                declared,
                "{} requires a missing property",
                tool.name
            );
        }
    }

    #[test]
    fn catalog_carries_the_parameters_enrichers_adapt() {
        let create = base_tool("create_issue").unwrap();
        for p in [
            "priority",
            "parentId",
            "customFields",
            "issueType",
            "components",
            "projectId",
            "points",
        ] {
            assert!(
                create.input_schema["properties"].get(p).is_some(),
                "create_issue lacks {p}"
            );
        }
        let comment = base_tool("create_merge_request_comment").unwrap();
        assert!(comment.input_schema["properties"].get("line_type").is_some());
    }
}
