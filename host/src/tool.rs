//! The vocabulary of tools, shared by every source and every consumer: a
//! tool before enrichment ([`ToolSpec`]: name, description, optional
//! category, input schema) and what the agent is told of it besides
//! ([`ToolMeta`]: title, prompt snippet and guidelines, output schema,
//! [`ToolAnnotations`], icons, `_meta`, [`Execution`]), with its conversion
//! to and from rmcp's `Tool`. An upstream server's tool keeps these as the
//! server listed them.
//!
//! A leaf: it names a tool and nothing else. Not here: the base catalog
//! (`catalog`), value models (`value_model`), enriched schemas (`schema`),
//! what serves a tool.

use rmcp::model as m;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::output::mcp::{icon_from, icon_to};
use crate::output::{Icon, Meta};

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
    pub annotations: ToolAnnotations,
    /// Icons a client may show (MCP `icons`).
    #[serde(skip)]
    pub icons: Option<Vec<Icon>>,
    /// The tool's MCP `_meta`, as its source gave it.
    #[serde(skip)]
    pub wire_meta: Option<Meta>,
    /// How the tool runs as an MCP task (MCP `execution`), as its source
    /// said. For the client, not the model: not pinned.
    #[serde(skip)]
    pub execution: Option<Execution>,
}

/// A tool's MCP `execution` (2025-11-25): whether a call may, must or must
/// not be made as a task. rmcp's `Tool` has no such field, so the host
/// keeps it here and the front writes it back onto the served list.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Execution {
    /// Unset: the protocol's default, `forbidden`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_support: Option<TaskSupport>,
}

/// MCP's `execution.taskSupport`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskSupport {
    /// A call must not be made as a task.
    Forbidden,
    /// A call may be made as a task or not.
    Optional,
    /// A call must be made as a task.
    Required,
}

/// MCP's behaviour hints for a tool (`ToolAnnotations`); unset is unknown.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
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

impl ToolAnnotations {
    /// Whether no hint is set.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// Set `tool`'s fields beyond its name, description and input schema.
pub fn set_tool_meta(meta: &ToolMeta, tool: &mut m::Tool) {
    tool.title.clone_from(&meta.title);
    tool.output_schema = meta
        .output_schema
        .as_ref()
        .and_then(|s| s.as_object().cloned())
        .map(std::sync::Arc::new);
    let hints = &meta.annotations;
    tool.annotations = (!hints.is_empty()).then(|| {
        let mut out = m::ToolAnnotations::new();
        out.title.clone_from(&hints.title);
        out.read_only_hint = hints.read_only_hint;
        out.destructive_hint = hints.destructive_hint;
        out.idempotent_hint = hints.idempotent_hint;
        out.open_world_hint = hints.open_world_hint;
        out
    });
    tool.icons = meta
        .icons
        .as_ref()
        .map(|icons| icons.iter().cloned().map(icon_to).collect());
    tool.meta = meta.wire_meta.clone().map(m::MetaObject);
}

/// What an MCP tool says of itself beyond its name, description and input
/// schema, as it said it.
pub fn tool_meta_from_mcp(tool: &m::Tool) -> ToolMeta {
    let hints = tool.annotations.as_ref();
    ToolMeta {
        title: tool.title.clone(),
        output_schema: tool.output_schema.as_ref().map(|s| Value::Object((**s).clone())),
        annotations: ToolAnnotations {
            title: hints.and_then(|h| h.title.clone()),
            read_only_hint: hints.and_then(|h| h.read_only_hint),
            destructive_hint: hints.and_then(|h| h.destructive_hint),
            idempotent_hint: hints.and_then(|h| h.idempotent_hint),
            open_world_hint: hints.and_then(|h| h.open_world_hint),
        },
        icons: tool
            .icons
            .as_ref()
            .map(|icons| icons.iter().cloned().map(icon_from).collect()),
        wire_meta: tool.meta.as_ref().map(|m| m.0.clone()),
        ..ToolMeta::default()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_tools_fields_pass_through_unchanged() {
        let original: m::Tool = serde_json::from_value(json!({
            "name": "t", "title": "T", "description": "d", "inputSchema": {"type": "object"},
            "outputSchema": {"type": "object", "properties": {"n": {"type": "number"}}},
            "annotations": {"title": "A", "readOnlyHint": true, "destructiveHint": false,
                            "idempotentHint": true, "openWorldHint": false},
            "icons": [{"src": "https://x/i.png", "theme": "light"}],
            "_meta": {"ui": 1}
        }))
        .unwrap();
        let mut through = m::Tool::new("t", "d", original.input_schema.clone());
        set_tool_meta(&tool_meta_from_mcp(&original), &mut through);
        assert_eq!(
            serde_json::to_value(&through).unwrap(),
            serde_json::to_value(&original).unwrap()
        );
    }
}
