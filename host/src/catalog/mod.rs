//! The base catalog (`base.json`) holds the generic tools of the provider
//! categories (issue tracker, git repository, knowledge base, ...), kept as
//! data so enrichers adapt one shared shape per tool. This module owns the
//! embedded base catalog and the side effects the host declares for its
//! tools; not the tool types (`crate::tool`), nor which tools are served
//! (that needs a backend bound to each).

use std::sync::OnceLock;

pub use crate::tool::ToolSpec;
use crate::value_model::SideEffect;

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

    use serde_json::Value;

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
