//! Terminal views of one call and its result, for `toolhost call`: the
//! serving tool plugin's `render-call` / `render-result` text when it
//! implements them and gives one, else a plain default.
//!
//! Plugin text is untrusted: control characters (terminal escapes among
//! them) are dropped, tabs become spaces, and every line is cut to the
//! width the plugin was given. The default call view is cut to the width
//! too; the default result view is the result's text, whole, for the
//! terminal to wrap. Owns the views; not where they are printed.

use serde_json::Value;

use toolhost::plugin::{Hooks, RenderOptions};
use toolhost::{Block, Body};
use toolhost::{CallOutput, Toolhost};

/// The call about to run: `render-call`'s text, else `tool {args}`.
pub async fn call_view(host: &Toolhost, tool: &str, args: &Value, width: u32) -> String {
    if let Some(plugin) = host.renderer(tool, Hooks::RENDER_CALL) {
        match plugin.render_call(tool, args, width).await {
            Ok(Some(text)) => return fit(&text, width),
            Ok(None) => {}
            Err(e) => tracing::warn!(tool, "render-call skipped: {e}"),
        }
    }
    fit(&format!("{tool} {args}"), width)
}

/// Its result: `render-result`'s text, else the plain default.
pub async fn result_view(host: &Toolhost, tool: &str, output: &CallOutput, width: u32) -> String {
    if let Some(plugin) = host.renderer(tool, Hooks::RENDER_RESULT) {
        let options = RenderOptions {
            // One call asked for on the command line: its whole result.
            expanded: true,
            is_partial: false,
            is_error: output.is_error,
            width,
        };
        match plugin.render_result(tool, output, options).await {
            Ok(Some(text)) => return fit(&text, width),
            Ok(None) => {}
            Err(e) => tracing::warn!(tool, "render-result skipped: {e}"),
        }
    }
    plain_result(output)
}

/// The text blocks; the structured result only when there is no text;
/// other blocks by kind, type and size or URI. An error is marked as one.
fn plain_result(output: &CallOutput) -> String {
    let has_text = output.content.iter().any(|b| matches!(b, Block::Text(_)));
    let mut blocks: Vec<String> = output
        .content
        .iter()
        .map(|b| match b {
            Block::Text(t) => t.text.clone(),
            Block::Image(m) => format!("[image: {}, {} bytes of base64]", m.mime_type, m.data.len()),
            Block::Audio(m) => format!("[audio: {}, {} bytes of base64]", m.mime_type, m.data.len()),
            Block::ResourceLink(l) => format!("[resource link: {}]", l.uri),
            Block::Resource(e) => match &e.resource.body {
                Body::Text(text) => text.clone(),
                Body::Blob(_) => format!("[resource: {}]", e.resource.uri),
            },
        })
        .collect();
    if !has_text && let Some(structured) = &output.structured_content {
        blocks.push(serde_json::to_string_pretty(structured).unwrap_or_default());
    }
    let text = clean(&blocks.join("\n"));
    if output.is_error {
        format!("error: {text}")
    } else {
        text
    }
}

/// `text` without control characters, each line cut to `width` columns
/// (counted as characters) with `…` where it was cut.
fn fit(text: &str, width: u32) -> String {
    let width = usize::try_from(width.max(1)).unwrap_or(usize::MAX);
    clean(text)
        .lines()
        .map(|line| {
            if line.chars().count() <= width {
                line.to_owned()
            } else {
                let mut cut: String = line.chars().take(width - 1).collect();
                cut.push('…');
                cut
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Drop control characters but newlines; a tab is four spaces.
fn clean(text: &str) -> String {
    text.chars()
        .filter_map(|c| match c {
            '\n' => Some("\n".to_owned()),
            '\t' => Some("    ".to_owned()),
            c if c.is_control() => None,
            c => Some(c.to_string()),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plugin_text_is_cleaned_and_cut_to_the_width() {
        assert_eq!(fit("\u{1b}]0;pwned\u{7}abcdef\nab\tc", 4), "]0;…\nab …");
        assert_eq!(fit("abcd", 4), "abcd");
        assert_eq!(fit("\r\nx", 0), "\nx");
    }

    #[test]
    fn the_plain_result_is_the_text_else_the_json() {
        let text = CallOutput::new(vec![Block::text("a\tb")]).with_structured(serde_json::json!({}));
        assert_eq!(plain_result(&text), "a    b");
        let json = CallOutput::new(vec![]).with_structured(serde_json::json!({"n": 1}));
        assert_eq!(plain_result(&json), "{\n  \"n\": 1\n}");
        let failed = CallOutput::error("no such file");
        assert_eq!(plain_result(&failed), "error: no such file");
    }
}
