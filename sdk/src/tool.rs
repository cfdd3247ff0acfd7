//! The tool-plugin side: [`ToolDefinition`] and [`ToolAnnotations`] (what the
//! agent sees of a tool), [`ToolResult`] / [`Content`] / [`ToolError`] (what a
//! call returns, with the content kinds [`Media`], [`ResourceLink`],
//! [`EmbeddedResource`] and their [`Annotations`]), the hook types
//! [`BeforeCall`], [`AfterCallOverride`], [`RenderOptions`], and
//! [`CallContext`] (the running call lent to `Tools::execute`).
//!
//! Structured values (parameter and output schemas, structured results,
//! details) are `serde_json::Value` here and JSON text on the wire; the SDK
//! converts.

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

/// Hints about what a call does, for clients (MCP tool annotations). They
/// are the tool's word, not the host's: what the host calls ahead of time is
/// decided by value models and the user's grants. `None` is no claim.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ToolAnnotations {
    /// The tool changes nothing.
    pub read_only: Option<bool>,
    /// A change it makes may destroy something (when not read-only).
    pub destructive: Option<bool>,
    /// Calling it twice with the same arguments does no more than once.
    pub idempotent: Option<bool>,
    /// It reaches things outside the agent's machine.
    pub open_world: Option<bool>,
}

impl ToolAnnotations {
    /// A tool that only reads: read-only, so neither destructive nor
    /// anything but idempotent.
    pub const READ_ONLY: ToolAnnotations = ToolAnnotations {
        read_only: Some(true),
        destructive: Some(false),
        idempotent: Some(true),
        open_world: None,
    };

    /// Set `open_world`.
    pub const fn open_world(mut self, open_world: bool) -> Self {
        self.open_world = Some(open_world);
        self
    }
}

/// A tool and the prompt metadata an agent needs for it.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolDefinition {
    /// Unique name the model calls it by (`[a-zA-Z0-9_-]`, at most 64).
    pub name: String,
    /// Human-readable title for user interfaces; `None` shows the name.
    pub title: Option<String>,
    /// Description for the model.
    pub description: String,
    /// JSON Schema of the parameters (an object schema).
    pub parameters_schema: Value,
    /// JSON Schema of the structured result (an object schema), or `None`.
    /// When set, every successful result must carry
    /// [`ToolResult::structured`] matching it: the host checks.
    pub output_schema: Option<Value>,
    /// Hints for clients.
    pub annotations: ToolAnnotations,
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
    /// A tool with `name`, `description` and parameter schema, and nothing
    /// else: no title, output schema, annotations, snippet, guidelines,
    /// category or hooks.
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters_schema: Value) -> Self {
        ToolDefinition {
            name: name.into(),
            title: None,
            description: description.into(),
            parameters_schema,
            output_schema: None,
            annotations: ToolAnnotations::default(),
            snippet: None,
            guidelines: Vec::new(),
            category: None,
            hooks: Hooks::NONE,
        }
    }

    /// Set the title.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Set the output schema (an object schema); results must then carry a
    /// structured value matching it.
    pub fn output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema);
        self
    }

    /// Set the annotations.
    pub fn annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.annotations = annotations;
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

/// Who a content block is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// The user.
    User,
    /// The model.
    Assistant,
}

/// Hints on how a client uses a content block (MCP content annotations).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Annotations {
    /// Who the block is for; empty means both.
    pub audience: Vec<Role>,
    /// How important it is, 0.0 (least) to 1.0 (most), if known.
    pub priority: Option<f64>,
    /// When the thing it shows last changed (ISO 8601), if known.
    pub last_modified: Option<String>,
}

/// An image or an audio clip.
#[derive(Clone, Debug, PartialEq)]
pub struct Media {
    /// The raw bytes.
    pub data: Vec<u8>,
    /// For example `image/png` or `audio/wav`.
    pub mime_type: String,
    /// Hints for clients.
    pub annotations: Option<Annotations>,
}

impl Media {
    /// Bytes of type `mime_type`, without annotations.
    pub fn new(data: Vec<u8>, mime_type: impl Into<String>) -> Self {
        Media {
            data,
            mime_type: mime_type.into(),
            annotations: None,
        }
    }
}

/// A resource the client may fetch (MCP `resource_link`).
#[derive(Clone, Debug, PartialEq)]
pub struct ResourceLink {
    /// The resource's URI.
    pub uri: String,
    /// Its name.
    pub name: String,
    /// A human-readable title.
    pub title: Option<String>,
    /// What it is.
    pub description: Option<String>,
    /// Its MIME type, if known.
    pub mime_type: Option<String>,
    /// Its size in bytes, if known.
    pub size: Option<u64>,
    /// Hints for clients.
    pub annotations: Option<Annotations>,
}

impl ResourceLink {
    /// A link to `uri` named `name`, nothing else known.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        ResourceLink {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            size: None,
            annotations: None,
        }
    }
}

/// A resource's contents.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ResourceBody {
    /// Text.
    Text(String),
    /// Bytes.
    Blob(Vec<u8>),
}

/// A resource's contents carried in a result (MCP embedded `resource`).
#[derive(Clone, Debug, PartialEq)]
pub struct EmbeddedResource {
    /// The resource's URI.
    pub uri: String,
    /// Its MIME type, if known.
    pub mime_type: Option<String>,
    /// Its contents.
    pub body: ResourceBody,
    /// Hints for clients.
    pub annotations: Option<Annotations>,
}

/// One block of a result's content, for the model.
#[derive(Clone, Debug, PartialEq)]
pub enum Content {
    /// Text.
    Text(String),
    /// An image.
    Image(Media),
    /// An audio clip.
    Audio(Media),
    /// A link to a resource.
    ResourceLink(ResourceLink),
    /// A resource's contents.
    Resource(EmbeddedResource),
}

/// What a call returned.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToolResult {
    /// For the model.
    pub content: Vec<Content>,
    /// The structured result, checked against the tool's output schema if it
    /// has one; the host also projects the arguments of follow-up calls
    /// from it.
    pub structured: Option<Value>,
    /// For user interfaces and logs only, never shown to the model.
    pub details: Option<Value>,
}

impl ToolResult {
    /// A result with one text block.
    pub fn text(text: impl Into<String>) -> Self {
        ToolResult {
            content: vec![Content::Text(text.into())],
            structured: None,
            details: None,
        }
    }

    /// Set the structured result.
    pub fn with_structured(mut self, value: Value) -> Self {
        self.structured = Some(value);
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
    /// Ask the user first: the host asks the client that made the call and
    /// hands the answer to [`Tools::after_ask`](crate::Tools::after_ask).
    /// Only from `before_call`: one question per call.
    Ask(Question),
}

/// A question for the user, asked before a call runs. The host shows it
/// under the plugin's name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Question {
    /// What to ask: at most 1 KiB, no control characters but newline.
    pub message: String,
    /// `None` asks yes or no; `Some(options)` asks for one of 1 to 16
    /// options (each at most 128 bytes).
    pub options: Option<Vec<String>>,
}

impl Question {
    /// A yes-or-no question.
    pub fn confirm(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            options: None,
        }
    }

    /// A question answered by choosing one of `options`.
    pub fn choose(message: impl Into<String>, options: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Self {
            message: message.into(),
            options: Some(options.into_iter().map(Into::into).collect()),
        }
    }
}

/// The user's answer to a [`Question`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Yes: with the option chosen, for a question with options.
    Accepted(Option<String>),
    /// No.
    Declined,
    /// The user dismissed the question.
    Cancelled,
}

/// Fields of a result to replace after the call; each one set replaces the
/// field whole.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AfterCallOverride {
    /// New content.
    pub content: Option<Vec<Content>>,
    /// New structured result.
    pub structured: Option<Value>,
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

impl From<ToolAnnotations> for wit::ToolAnnotations {
    fn from(a: ToolAnnotations) -> Self {
        wit::ToolAnnotations {
            read_only_hint: a.read_only,
            destructive_hint: a.destructive,
            idempotent_hint: a.idempotent,
            open_world_hint: a.open_world,
        }
    }
}

impl From<ToolDefinition> for wit::ToolDefinition {
    fn from(d: ToolDefinition) -> Self {
        wit::ToolDefinition {
            name: d.name,
            title: d.title,
            description: d.description,
            parameters_schema: d.parameters_schema.to_string(),
            output_schema: d.output_schema.map(|s| s.to_string()),
            annotations: d.annotations.into(),
            snippet: d.snippet,
            guidelines: d.guidelines,
            category: d.category,
            hooks: d.hooks.into(),
        }
    }
}

impl From<Annotations> for wit::Annotations {
    fn from(a: Annotations) -> Self {
        wit::Annotations {
            audience: a
                .audience
                .into_iter()
                .map(|r| match r {
                    Role::User => wit::Role::User,
                    Role::Assistant => wit::Role::Assistant,
                })
                .collect(),
            priority: a.priority,
            last_modified: a.last_modified,
        }
    }
}

impl From<wit::Annotations> for Annotations {
    fn from(a: wit::Annotations) -> Self {
        Annotations {
            audience: a
                .audience
                .into_iter()
                .map(|r| match r {
                    wit::Role::User => Role::User,
                    wit::Role::Assistant => Role::Assistant,
                })
                .collect(),
            priority: a.priority,
            last_modified: a.last_modified,
        }
    }
}

impl From<Media> for wit::Media {
    fn from(m: Media) -> Self {
        wit::Media {
            data: m.data,
            mime_type: m.mime_type,
            annotations: m.annotations.map(Into::into),
        }
    }
}

impl From<wit::Media> for Media {
    fn from(m: wit::Media) -> Self {
        Media {
            data: m.data,
            mime_type: m.mime_type,
            annotations: m.annotations.map(Into::into),
        }
    }
}

impl From<ResourceLink> for wit::ResourceLink {
    fn from(l: ResourceLink) -> Self {
        wit::ResourceLink {
            uri: l.uri,
            name: l.name,
            title: l.title,
            description: l.description,
            mime_type: l.mime_type,
            size: l.size,
            annotations: l.annotations.map(Into::into),
        }
    }
}

impl From<wit::ResourceLink> for ResourceLink {
    fn from(l: wit::ResourceLink) -> Self {
        ResourceLink {
            uri: l.uri,
            name: l.name,
            title: l.title,
            description: l.description,
            mime_type: l.mime_type,
            size: l.size,
            annotations: l.annotations.map(Into::into),
        }
    }
}

impl From<EmbeddedResource> for wit::EmbeddedResource {
    fn from(r: EmbeddedResource) -> Self {
        wit::EmbeddedResource {
            uri: r.uri,
            mime_type: r.mime_type,
            body: match r.body {
                ResourceBody::Text(t) => wit::ResourceBody::Text(t),
                ResourceBody::Blob(b) => wit::ResourceBody::Blob(b),
            },
            annotations: r.annotations.map(Into::into),
        }
    }
}

impl From<wit::EmbeddedResource> for EmbeddedResource {
    fn from(r: wit::EmbeddedResource) -> Self {
        EmbeddedResource {
            uri: r.uri,
            mime_type: r.mime_type,
            body: match r.body {
                wit::ResourceBody::Text(t) => ResourceBody::Text(t),
                wit::ResourceBody::Blob(b) => ResourceBody::Blob(b),
            },
            annotations: r.annotations.map(Into::into),
        }
    }
}

impl From<Content> for wit::Content {
    fn from(c: Content) -> Self {
        match c {
            Content::Text(t) => wit::Content::Text(t),
            Content::Image(m) => wit::Content::Image(m.into()),
            Content::Audio(m) => wit::Content::Audio(m.into()),
            Content::ResourceLink(l) => wit::Content::ResourceLink(l.into()),
            Content::Resource(r) => wit::Content::Resource(r.into()),
        }
    }
}

impl From<wit::Content> for Content {
    fn from(c: wit::Content) -> Self {
        match c {
            wit::Content::Text(t) => Content::Text(t),
            wit::Content::Image(m) => Content::Image(m.into()),
            wit::Content::Audio(m) => Content::Audio(m.into()),
            wit::Content::ResourceLink(l) => Content::ResourceLink(l.into()),
            wit::Content::Resource(r) => Content::Resource(r.into()),
        }
    }
}

impl From<ToolResult> for wit::ToolResult {
    fn from(r: ToolResult) -> Self {
        wit::ToolResult {
            content: r.content.into_iter().map(Into::into).collect(),
            structured: r.structured.map(|v| v.to_string()),
            details: r.details.map(|d| d.to_string()),
        }
    }
}

impl From<wit::ToolResult> for ToolResult {
    fn from(r: wit::ToolResult) -> Self {
        ToolResult {
            content: r.content.into_iter().map(Into::into).collect(),
            structured: r.structured.map(|v| parse(&v)),
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
            BeforeCall::Ask(q) => wit::BeforeCallDecision::Ask(wit::Question {
                message: q.message,
                kind: match q.options {
                    None => wit::QuestionKind::Confirm,
                    Some(options) => wit::QuestionKind::Choose(options),
                },
            }),
        }
    }
}

impl From<wit::AskAnswer> for Answer {
    fn from(a: wit::AskAnswer) -> Self {
        match a {
            wit::AskAnswer::Accepted(choice) => Answer::Accepted(choice),
            wit::AskAnswer::Declined => Answer::Declined,
            wit::AskAnswer::Cancelled => Answer::Cancelled,
        }
    }
}

impl From<AfterCallOverride> for wit::AfterCallOverride {
    fn from(o: AfterCallOverride) -> Self {
        wit::AfterCallOverride {
            content: o.content.map(|c| c.into_iter().map(Into::into).collect()),
            structured: o.structured.map(|v| v.to_string()),
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
            .with_structured(json!({"words": 3}))
            .with_details(json!({"chars": 11}));
        let back: ToolResult = wit::ToolResult::from(r.clone()).into();
        assert_eq!(back, r);
        assert_eq!(r.joined_text(), "3 words");
    }

    #[test]
    fn every_content_kind_round_trips() {
        let annotations = Annotations {
            audience: vec![Role::User, Role::Assistant],
            priority: Some(0.5),
            last_modified: Some("2026-01-02T03:04:05Z".into()),
        };
        let link = ResourceLink {
            title: Some("Spec".into()),
            mime_type: Some("text/markdown".into()),
            size: Some(42),
            annotations: Some(annotations.clone()),
            ..ResourceLink::new("file:///spec.md", "spec.md")
        };
        let r = ToolResult {
            content: vec![
                Content::Text("see".into()),
                Content::Image(Media::new(vec![1, 2], "image/png")),
                Content::Audio(Media {
                    annotations: Some(annotations.clone()),
                    ..Media::new(vec![3], "audio/wav")
                }),
                Content::ResourceLink(link),
                Content::Resource(EmbeddedResource {
                    uri: "mem://a".into(),
                    mime_type: None,
                    body: ResourceBody::Blob(vec![0, 255]),
                    annotations: None,
                }),
                Content::Resource(EmbeddedResource {
                    uri: "mem://b".into(),
                    mime_type: Some("text/plain".into()),
                    body: ResourceBody::Text("b".into()),
                    annotations: Some(annotations),
                }),
            ],
            structured: None,
            details: None,
        };
        let back: ToolResult = wit::ToolResult::from(r.clone()).into();
        assert_eq!(back, r);
        assert_eq!(r.joined_text(), "see");
    }

    #[test]
    fn definition_carries_title_output_schema_and_annotations() {
        let d = ToolDefinition::new("word_count", "Count words", json!({"type": "object"}))
            .title("Word count")
            .output_schema(json!({"type": "object", "properties": {"words": {"type": "integer"}}}))
            .annotations(ToolAnnotations::READ_ONLY.open_world(false));
        let w: wit::ToolDefinition = d.into();
        assert_eq!(w.title.as_deref(), Some("Word count"));
        assert_eq!(
            w.output_schema.as_deref(),
            Some(r#"{"type":"object","properties":{"words":{"type":"integer"}}}"#)
        );
        let a = w.annotations;
        assert_eq!(
            (
                a.read_only_hint,
                a.destructive_hint,
                a.idempotent_hint,
                a.open_world_hint
            ),
            (Some(true), Some(false), Some(true), Some(false))
        );
        let untitled: wit::ToolDefinition = ToolDefinition::new("x", "", json!({})).into();
        assert_eq!(untitled.title, None);
        assert_eq!(untitled.output_schema, None);
    }
}
