//! The tool-plugin side: [`ToolDefinition`] (what the agent sees of a tool),
//! [`ToolResult`] / [`Content`] / [`ToolError`] (what a call returns), the
//! hook types [`BeforeCall`], [`AfterCallOverride`], [`RenderOptions`], and
//! [`CallContext`] (the running call lent to `Tools::execute`).
//!
//! Structured values (parameter schemas, JSON content, details) are
//! `serde_json::Value` here and JSON text on the wire; the SDK converts.

use serde_json::Value;

use crate::bindings::shared::toolhost::plugin::types::CallContext as WitCallContext;
use crate::bindings::tool_plugin::exports::toolhost::plugin::tool as wit;
use crate::schema::parse;

/// Which optional hooks a tool implements. The host calls only these, so set
/// a flag for every hook your [`Tools`](crate::Tools) impl overrides for the
/// tool.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Hooks {
    /// `prepare_arguments` is implemented.
    pub prepare_arguments: bool,
    /// `before_call` is implemented.
    pub before_call: bool,
    /// `after_call` is implemented.
    pub after_call: bool,
    /// `render_call` is implemented.
    pub render_call: bool,
    /// `render_result` is implemented.
    pub render_result: bool,
}

impl Hooks {
    /// No hooks (the default).
    pub const NONE: Hooks = Hooks {
        prepare_arguments: false,
        before_call: false,
        after_call: false,
        render_call: false,
        render_result: false,
    };
    /// Every hook.
    pub const ALL: Hooks = Hooks {
        prepare_arguments: true,
        before_call: true,
        after_call: true,
        render_call: true,
        render_result: true,
    };
}

/// A tool and the prompt metadata an agent needs for it.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolDefinition {
    /// Unique name the model calls it by (`[a-zA-Z0-9_-]`, at most 64).
    pub name: String,
    /// Human-readable label for user interfaces.
    pub label: String,
    /// Description for the model.
    pub description: String,
    /// JSON Schema of the parameters (an object schema).
    pub parameters_schema: Value,
    /// One line for the "Available tools" prompt section; `None` uses the
    /// description.
    pub snippet: Option<String>,
    /// Bullets for the "Guidelines" prompt section.
    pub guidelines: Vec<String>,
    /// The tool's category, if any (then it is listed only if a loaded
    /// enricher claims it).
    pub category: Option<String>,
    /// Which optional hooks the tool implements.
    pub hooks: Hooks,
}

impl ToolDefinition {
    /// A tool with `name` (also its label), `description` and parameter
    /// schema, no snippet, guidelines, category or hooks.
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters_schema: Value) -> Self {
        let name = name.into();
        ToolDefinition {
            label: name.clone(),
            name,
            description: description.into(),
            parameters_schema,
            snippet: None,
            guidelines: Vec::new(),
            category: None,
            hooks: Hooks::NONE,
        }
    }

    /// Set the label.
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = label.into();
        self
    }

    /// Set the one-line prompt snippet.
    pub fn snippet(mut self, snippet: impl Into<String>) -> Self {
        self.snippet = Some(snippet.into());
        self
    }

    /// Add a guideline bullet.
    pub fn guideline(mut self, guideline: impl Into<String>) -> Self {
        self.guidelines.push(guideline.into());
        self
    }

    /// Set the category.
    pub fn category(mut self, category: impl Into<String>) -> Self {
        self.category = Some(category.into());
        self
    }

    /// Set the implemented hooks.
    pub fn hooks(mut self, hooks: Hooks) -> Self {
        self.hooks = hooks;
        self
    }
}

/// One block of a result's content, for the model.
#[derive(Clone, Debug, PartialEq)]
pub enum Content {
    /// Text.
    Text(String),
    /// An image: raw bytes and MIME type (`image/png`).
    Image {
        /// The raw bytes.
        data: Vec<u8>,
        /// For example `image/png`.
        mime_type: String,
    },
    /// A structured value, also used by the host to project follow-up calls.
    Json(Value),
}

/// What a call returned.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToolResult {
    /// For the model.
    pub content: Vec<Content>,
    /// For user interfaces and logs only, never shown to the model.
    pub details: Option<Value>,
}

impl ToolResult {
    /// A result with one text block.
    pub fn text(text: impl Into<String>) -> Self {
        ToolResult {
            content: vec![Content::Text(text.into())],
            details: None,
        }
    }

    /// Append a JSON content block.
    pub fn with_json(mut self, value: Value) -> Self {
        self.content.push(Content::Json(value));
        self
    }

    /// Append a text content block.
    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        self.content.push(Content::Text(text.into()));
        self
    }

    /// Set the details.
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    /// The text blocks joined with newlines.
    pub fn joined_text(&self) -> String {
        let texts: Vec<&str> = self
            .content
            .iter()
            .filter_map(|c| match c {
                Content::Text(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        texts.join("\n")
    }
}

/// Why a call failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ToolError {
    /// The call ran and failed, with a message for the model.
    Failed(String),
    /// Something the call names does not exist.
    NotFound(String),
    /// The arguments are wrong, with a message naming the field.
    InvalidArgs(String),
    /// The call was cancelled.
    Cancelled,
}

impl core::fmt::Display for ToolError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ToolError::Failed(m) => write!(f, "failed: {m}"),
            ToolError::NotFound(m) => write!(f, "not found: {m}"),
            ToolError::InvalidArgs(m) => write!(f, "invalid arguments: {m}"),
            ToolError::Cancelled => f.write_str("cancelled"),
        }
    }
}

impl std::error::Error for ToolError {}

/// What `before_call` decided.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BeforeCall {
    /// Go on with the call.
    Allow,
    /// Do not run the call; the reason goes back to the model as the error.
    Block(String),
}

/// Fields of a result to replace after the call; each one set replaces the
/// field whole.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AfterCallOverride {
    /// New content.
    pub content: Option<Vec<Content>>,
    /// New details.
    pub details: Option<Value>,
    /// New error flag.
    pub is_error: Option<bool>,
}

/// How a result is being shown in a terminal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RenderOptions {
    /// The user asked for the full view.
    pub expanded: bool,
    /// The call is still running; this is a partial result.
    pub is_partial: bool,
    /// The result is an error.
    pub is_error: bool,
    /// Columns available.
    pub width: u32,
}

/// The running call, lent to `Tools::execute`.
pub struct CallContext<'a> {
    handle: &'a WitCallContext,
}

impl<'a> CallContext<'a> {
    pub(crate) fn from_handle(handle: &'a WitCallContext) -> Self {
        CallContext { handle }
    }

    /// The call's id, unique within the session.
    pub fn call_id(&self) -> String {
        self.handle.call_id()
    }

    /// Whether the caller has cancelled the call. Long calls should check it
    /// and return [`ToolError::Cancelled`].
    pub fn is_cancelled(&self) -> bool {
        self.handle.is_cancelled()
    }

    /// Report `progress` out of `total` (if known), with an optional message.
    pub fn report_progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        self.handle.report_progress(progress, total, message);
    }
}

// ---- conversions to and from the generated WIT types ----

impl From<Hooks> for wit::Hooks {
    fn from(h: Hooks) -> Self {
        let mut flags = wit::Hooks::empty();
        flags.set(wit::Hooks::PREPARE_ARGUMENTS, h.prepare_arguments);
        flags.set(wit::Hooks::BEFORE_CALL, h.before_call);
        flags.set(wit::Hooks::AFTER_CALL, h.after_call);
        flags.set(wit::Hooks::RENDER_CALL, h.render_call);
        flags.set(wit::Hooks::RENDER_RESULT, h.render_result);
        flags
    }
}

impl From<ToolDefinition> for wit::ToolDefinition {
    fn from(d: ToolDefinition) -> Self {
        wit::ToolDefinition {
            name: d.name,
            label: d.label,
            description: d.description,
            parameters_schema: d.parameters_schema.to_string(),
            snippet: d.snippet,
            guidelines: d.guidelines,
            category: d.category,
            hooks: d.hooks.into(),
        }
    }
}

impl From<Content> for wit::Content {
    fn from(c: Content) -> Self {
        match c {
            Content::Text(t) => wit::Content::Text(t),
            Content::Image { data, mime_type } => wit::Content::Image(wit::Image { data, mime_type }),
            Content::Json(v) => wit::Content::Json(v.to_string()),
        }
    }
}

impl From<wit::Content> for Content {
    fn from(c: wit::Content) -> Self {
        match c {
            wit::Content::Text(t) => Content::Text(t),
            wit::Content::Image(i) => Content::Image {
                data: i.data,
                mime_type: i.mime_type,
            },
            wit::Content::Json(text) => Content::Json(parse(&text)),
        }
    }
}

impl From<ToolResult> for wit::ToolResult {
    fn from(r: ToolResult) -> Self {
        wit::ToolResult {
            content: r.content.into_iter().map(Into::into).collect(),
            details: r.details.map(|d| d.to_string()),
        }
    }
}

impl From<wit::ToolResult> for ToolResult {
    fn from(r: wit::ToolResult) -> Self {
        ToolResult {
            content: r.content.into_iter().map(Into::into).collect(),
            details: r.details.map(|d| parse(&d)),
        }
    }
}

impl From<ToolError> for wit::ToolError {
    fn from(e: ToolError) -> Self {
        match e {
            ToolError::Failed(m) => wit::ToolError::Failed(m),
            ToolError::NotFound(m) => wit::ToolError::NotFound(m),
            ToolError::InvalidArgs(m) => wit::ToolError::InvalidArgs(m),
            ToolError::Cancelled => wit::ToolError::Cancelled,
        }
    }
}

impl From<BeforeCall> for wit::BeforeCallDecision {
    fn from(b: BeforeCall) -> Self {
        match b {
            BeforeCall::Allow => wit::BeforeCallDecision::Allow,
            BeforeCall::Block(reason) => wit::BeforeCallDecision::Block(reason),
        }
    }
}

impl From<AfterCallOverride> for wit::AfterCallOverride {
    fn from(o: AfterCallOverride) -> Self {
        wit::AfterCallOverride {
            content: o.content.map(|c| c.into_iter().map(Into::into).collect()),
            details: o.details.map(|d| d.to_string()),
            is_error: o.is_error,
        }
    }
}

impl From<wit::RenderOptions> for RenderOptions {
    fn from(o: wit::RenderOptions) -> Self {
        RenderOptions {
            expanded: o.expanded,
            is_partial: o.is_partial,
            is_error: o.is_error,
            width: o.width,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn hooks_to_flags() {
        let h = Hooks {
            before_call: true,
            render_result: true,
            ..Hooks::NONE
        };
        let f: wit::Hooks = h.into();
        assert_eq!(f, wit::Hooks::BEFORE_CALL | wit::Hooks::RENDER_RESULT);
        assert_eq!(wit::Hooks::from(Hooks::ALL), wit::Hooks::all());
    }

    #[test]
    fn result_round_trip() {
        let r = ToolResult::text("3 words")
            .with_json(json!({"words": 3}))
            .with_details(json!({"chars": 11}));
        let back: ToolResult = wit::ToolResult::from(r.clone()).into();
        assert_eq!(back, r);
        assert_eq!(r.joined_text(), "3 words");
    }
}
