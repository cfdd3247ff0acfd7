//! The system-prompt sections toolhost gives an agent about its tools, as
//! coding agents build them: "Available tools", one line a listed tool
//! (its snippet, else its name and the first line of its description), and
//! "Guidelines", every tool's bullets, each once, in listing order.
//!
//! Served as the MCP `instructions`, as the `system-prompt` prompt, and by
//! `Toolhost::system_prompt`. [`compose`] joins it with text from other
//! sources (an upstream server's instructions) into one. This module owns
//! the text; which tools are listed is the pipeline's.

use std::collections::HashSet;

use crate::enrich::EnrichedTool;

/// The name of the MCP prompt that returns the system-prompt sections.
pub const PROMPT_NAME: &str = "system-prompt";

/// The two sections, built from the listed tools.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SystemPrompt {
    /// One line a tool, without the bullet.
    pub tools: Vec<String>,
    /// Each distinct bullet once, first occurrence first.
    pub guidelines: Vec<String>,
}

impl SystemPrompt {
    pub fn new<'a>(listed: impl IntoIterator<Item = &'a EnrichedTool>) -> Self {
        let mut prompt = Self::default();
        let mut seen = HashSet::new();
        for tool in listed {
            prompt
                .tools
                .push(match tool.meta.snippet.as_deref().and_then(first_line) {
                    Some(snippet) => snippet.to_owned(),
                    None => match first_line(tool.schema.description()) {
                        Some(line) => format!("{}: {line}", tool.name),
                        None => tool.name.clone(),
                    },
                });
            for bullet in &tool.meta.guidelines {
                let bullet = bullet.trim();
                if !bullet.is_empty() && seen.insert(bullet.to_owned()) {
                    prompt.guidelines.push(bullet.to_owned());
                }
            }
        }
        prompt
    }

    /// The sections as text: each a heading and its bullets, a blank line
    /// between them; empty with no tools, no Guidelines with no bullets.
    pub fn render(&self) -> String {
        let section = |heading: &str, lines: &[String]| {
            let mut text = format!("{heading}:\n");
            for line in lines {
                text.push_str(&format!("- {line}\n"));
            }
            text
        };
        let mut parts = Vec::new();
        if !self.tools.is_empty() {
            parts.push(section("Available tools", &self.tools));
        }
        if !self.guidelines.is_empty() {
            parts.push(section("Guidelines", &self.guidelines));
        }
        compose(parts.iter().map(String::as_str))
    }
}

/// Join instruction texts from several sources, blank-line separated, the
/// empty ones left out.
pub fn compose<'a>(parts: impl IntoIterator<Item = &'a str>) -> String {
    parts
        .into_iter()
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// The first non-blank line of `text`, trimmed.
fn first_line(text: &str) -> Option<&str> {
    text.lines().map(str::trim).find(|l| !l.is_empty())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::schema::ToolSchema;
    use crate::tool::ToolMeta;

    fn tool(name: &str, description: &str, snippet: Option<&str>, guidelines: &[&str]) -> EnrichedTool {
        EnrichedTool::listed(
            name,
            ToolSchema::new(description, json!({"type": "object", "properties": {}})).unwrap(),
            ToolMeta {
                snippet: snippet.map(str::to_owned),
                guidelines: guidelines.iter().map(|&g| g.to_owned()).collect(),
                ..ToolMeta::default()
            },
        )
    }

    #[test]
    fn snippets_else_descriptions_and_each_guideline_once() {
        let tools = [
            tool(
                "read",
                "Read a file.\nMore detail.",
                None,
                &["Read before you edit."],
            ),
            tool(
                "wc",
                "Count words.",
                Some("wc: count the words of a text"),
                &["Read before you edit.", "  ", "Use wc to count."],
            ),
            tool("bare", "", None, &[]),
        ];
        let prompt = SystemPrompt::new(&tools);
        assert_eq!(
            prompt.render(),
            "Available tools:\n- read: Read a file.\n- wc: count the words of a text\n- bare\n\n\
             Guidelines:\n- Read before you edit.\n- Use wc to count."
        );
        assert_eq!(
            SystemPrompt::new(&tools[2..]).render(),
            "Available tools:\n- bare"
        );
        assert_eq!(SystemPrompt::default().render(), "");
        assert_eq!(compose(["a\n", "", " b "]), "a\n\nb");
    }
}
