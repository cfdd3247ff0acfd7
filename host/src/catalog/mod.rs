//! The tools the host knows before any plugin runs: each a name, a
//! description, an optional category and an input schema, and what the
//! agent is told of it besides ([`ToolMeta`]: title, prompt snippet and
//! guidelines, output schema, annotations, icons, `_meta`). An upstream
//! server's tool keeps these as the server listed them.
//!
//! The base catalog (`base.json`) holds the generic tools of the provider
//! categories (issue tracker, git repository, knowledge base, ...), kept as
//! data so enrichers adapt one shared shape per tool. This module owns the
//! [`ToolSpec`] type and the embedded base catalog; it does not decide which
//! tools are served (that needs a backend bound to each).

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::output::{Icon, Meta};
use crate::value_model::SideEffect;

/// A tool before enrichment.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolSpec {
    /// The tool's name, as listed.
    pub name: String,
    /// What the model is told the tool does.
    pub description: String,
    /// The category enrichers claim to extend it (`supported-categories`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// JSON Schema of the tool's arguments.
    pub input_schema: Value,
    /// Not in the base catalog's data: its tools get theirs from the
    /// backend they are bound to.
    #[serde(skip)]
    pub meta: ToolMeta,
}

/// What the agent is told of a tool beyond its name, description and input
/// schema. Enrichers do not change it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ToolMeta {
    /// Human-readable name for user interfaces (MCP `title`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool's line in the system prompt's "Available tools"; none: the
    /// description's first line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snippet: Option<String>,
    /// Bullets for the system prompt's "Guidelines".
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub guidelines: Vec<String>,
    /// JSON Schema of the tool's structured result (MCP `outputSchema`);
    /// a result that does not match it is an error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// MCP's behaviour hints.
    pub annotations: Annotations,
    /// Icons a client may show (MCP `icons`).
    #[serde(skip)]
    pub icons: Option<Vec<Icon>>,
    /// The tool's MCP `_meta`, as its source gave it.
    #[serde(skip)]
    pub wire_meta: Option<Meta>,
}

/// MCP's behaviour hints for a tool (`ToolAnnotations`); unset is unknown.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    /// A display name within the hints (an upstream server may set it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not change its environment.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool may destroy or overwrite what exists.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Calling it again with the same arguments changes nothing more.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool reaches outside the host (the network, other systems).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

impl Annotations {
    /// Whether no hint is set.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
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

/// What base-catalog tool `name` changes, as the host defines it (the
/// catalog says what each tool does, whichever backend serves it): the
/// tools that get, list, search or download read; every other one changes
/// the provider. `None` for a name not in the catalog.
pub fn base_side_effect(name: &str) -> Option<SideEffect> {
    const READS: [&str; 4] = ["get_", "list_", "search_", "download_"];
    base_tool(name)?;
    Some(if READS.iter().any(|r| name.starts_with(r)) {
        SideEffect::ReadOnly
    } else {
        SideEffect::MutatesExternal
    })
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
    fn the_host_declares_reads_and_writes() {
        assert_eq!(base_side_effect("get_issue"), Some(SideEffect::ReadOnly));
        assert_eq!(base_side_effect("download_asset"), Some(SideEffect::ReadOnly));
        for write in ["update_issue", "create_issue", "send_message", "run_pipeline_job"] {
            assert_eq!(
                base_side_effect(write),
                Some(SideEffect::MutatesExternal),
                "{write}"
            );
        }
        assert_eq!(base_side_effect("read"), None);
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
