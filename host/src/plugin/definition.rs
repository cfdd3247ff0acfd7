//! What a tool plugin says about its tools and hooks, as the host owns it:
//! the same for every version of the contract (each version's values are
//! converted in `wit`), checked against the caps of `bounds` by `calls`
//! before anyone else sees them.

use serde_json::Value;

use crate::catalog::{Annotations, ToolMeta, ToolSpec};
use crate::output::Block;

/// One tool a plugin provides, as its `list-tools` defined it. Its schemas
/// are JSON objects of `"type": "object"` (the loader refuses any other).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDefinition {
    pub name: String,
    /// For user interfaces; none shows the name.
    pub title: Option<String>,
    pub description: String,
    pub input_schema: Value,
    /// The schema every successful result's structured content matches.
    pub output_schema: Option<Value>,
    /// The plugin's own hints, a claim: what is served is decided with the
    /// tool's value model and the plugin's grants (see `pipeline`).
    pub annotations: Annotations,
    pub snippet: Option<String>,
    pub guidelines: Vec<String>,
    pub category: Option<String>,
    pub hooks: Hooks,
}

impl From<&ToolDefinition> for ToolSpec {
    /// The tool as a catalog entry; the annotations are left to whoever
    /// weighs the plugin's claim against what the host knows.
    fn from(t: &ToolDefinition) -> Self {
        ToolSpec {
            name: t.name.clone(),
            description: t.description.clone(),
            category: t.category.clone(),
            input_schema: t.input_schema.clone(),
            meta: ToolMeta {
                title: t.title.clone(),
                snippet: t.snippet.clone(),
                guidelines: t.guidelines.clone(),
                output_schema: t.output_schema.clone(),
                ..ToolMeta::default()
            },
        }
    }
}

bitflags::bitflags! {
    /// The optional hooks a tool implements; the host calls only these.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct Hooks: u8 {
        const PREPARE_ARGUMENTS = 1;
        const BEFORE_CALL = 1 << 1;
        const AFTER_CALL = 1 << 2;
        const RENDER_CALL = 1 << 3;
        const RENDER_RESULT = 1 << 4;
    }
}

/// What `before-call` decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BeforeCallDecision {
    Allow,
    /// Do not run the call; the reason is the call's error.
    Block(String),
}

/// How a result is being shown in a terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RenderOptions {
    pub expanded: bool,
    pub is_partial: bool,
    pub is_error: bool,
    pub width: u32,
}

/// What an after-call hook replaces; each field set replaces the old one
/// whole, unset fields are kept.
#[derive(Debug, Clone, PartialEq)]
pub struct AfterCallOverride {
    pub content: Option<Vec<Block>>,
    /// `Some(None)` removes the structured result (a 0.1 plugin's new
    /// content list without a JSON block).
    pub structured: Option<Option<Value>>,
    pub details: Option<Value>,
    pub is_error: Option<bool>,
}
