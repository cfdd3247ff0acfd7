//! What a tool plugin says about its tools and hooks, as the host owns it:
//! the same for every version of the contract (each version's values are
//! converted in `wit`), checked against the caps of `bounds` by `calls`
//! before anyone else sees them. The checks of the texts that reach the
//! model ([`Texts`]) are here, since an upstream server's tools pass them
//! too.

use serde_json::Value;

use crate::bounds::{self, shown};
use crate::output::Block;
use crate::tool::{ToolAnnotations, ToolMeta, ToolSpec};

/// What a tool's definition says that reaches the model's view (its name,
/// the prompt fields, the description), from whichever source defines it:
/// a plugin's `list-tools` and an upstream server's `tools/list` are held
/// to the same caps of `bounds`.
pub(crate) struct Texts<'a> {
    pub name: &'a str,
    pub title: Option<&'a str>,
    pub description: &'a str,
    pub snippet: Option<&'a str>,
    pub guidelines: &'a [String],
}

impl Texts<'_> {
    /// Whether each text is within its cap and free of control characters
    /// (a description may have tabs and line breaks), or what is wrong,
    /// naming the tool (escaped and shortened, if its name is the fault).
    pub(crate) fn check(&self) -> Result<(), String> {
        if !bounds::is_tool_name(self.name) {
            return Err(format!(
                "tool name {} is not 1 to {} characters of [A-Za-z0-9_-]",
                shown(self.name),
                bounds::MAX_TOOL_NAME
            ));
        }
        if let Some(title) = self.title {
            self.line("title", title, bounds::MAX_TITLE)?;
        }
        if let Some(snippet) = self.snippet {
            self.line("snippet", snippet, bounds::MAX_PROMPT_LINE)?;
        }
        let name = self.name;
        if self.guidelines.len() > bounds::MAX_GUIDELINES {
            return Err(format!(
                "tool `{name}`: {} guidelines, more than {}",
                self.guidelines.len(),
                bounds::MAX_GUIDELINES
            ));
        }
        for guideline in self.guidelines {
            self.line("guideline", guideline, bounds::MAX_PROMPT_LINE)?;
        }
        if self.description.len() > bounds::MAX_DESCRIPTION {
            return Err(format!(
                "tool `{name}`: its description has {} bytes, more than {}",
                self.description.len(),
                bounds::MAX_DESCRIPTION
            ));
        }
        if self
            .description
            .chars()
            .any(|c| bounds::is_control(c) && !matches!(c, '\n' | '\r' | '\t'))
        {
            return Err(format!("tool `{name}`: its description has control characters"));
        }
        Ok(())
    }

    /// One line of text (a title, a snippet, a guideline) within `max`.
    pub(crate) fn line(&self, what: &str, text: &str, max: usize) -> Result<(), String> {
        let name = self.name;
        if text.len() > max {
            Err(format!(
                "tool `{name}`: its {what} has {} bytes, more than {max}",
                text.len()
            ))
        } else if text.chars().any(bounds::is_control) {
            Err(format!(
                "tool `{name}`: its {what} {} has control characters",
                shown(text)
            ))
        } else {
            Ok(())
        }
    }
}

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
    pub annotations: ToolAnnotations,
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
        /// `prepare-arguments`: fill in or change the call's arguments.
        const PREPARE_ARGUMENTS = 1;
        /// `before-call`: let the call run, or refuse it.
        const BEFORE_CALL = 1 << 1;
        /// `after-call`: replace the call's output.
        const AFTER_CALL = 1 << 2;
        /// `render-call`: how a user interface shows the call.
        const RENDER_CALL = 1 << 3;
        /// `render-result`: how a user interface shows the output.
        const RENDER_RESULT = 1 << 4;
    }
}

/// What `before-call` decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BeforeCallDecision {
    /// Run the call.
    Allow,
    /// Do not run the call; the reason is the call's error.
    Block(String),
    /// Ask the user first, then decide with `after-ask` (contract 0.3).
    Ask(Question),
}

/// A question a plugin asks the user before a call runs, within the
/// bounds the host checked (`bounds::MAX_QUESTION` and the rest).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    /// What to ask, in the plugin's words.
    pub message: String,
    /// `None` asks yes or no; `Some` asks for one of the options.
    pub options: Option<Vec<String>>,
}

/// The user's answer to a [`Question`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Yes, with the option chosen for a question with options.
    Accepted(Option<String>),
    /// No.
    Declined,
    /// Dismissed without an answer.
    Cancelled,
}

/// How a result is being shown in a terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RenderOptions {
    /// The user asked for the full view.
    pub expanded: bool,
    /// The output is still streaming.
    pub is_partial: bool,
    /// The output is an error.
    pub is_error: bool,
    /// Columns available.
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
