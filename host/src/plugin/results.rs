//! The plugins' WIT results to and from the host's
//! ([`crate::output`]): a plugin's content is text, images (raw bytes) and
//! JSON; its first JSON block is the structured result.
//!
//! Going back to the plugin (after-call, render-result) only ever carries
//! the plugin's own results, so the kinds a plugin cannot produce (audio,
//! resource links, embedded resources) become text describing them.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

use super::bindings::tool;
use crate::output::{Block, Body, CallOutput, Media, ToolError};

impl From<tool::ToolError> for ToolError {
    fn from(e: tool::ToolError) -> Self {
        match e {
            tool::ToolError::Failed(m) => Self::Failed(m),
            tool::ToolError::NotFound(m) => Self::NotFound(m),
            tool::ToolError::InvalidArgs(m) => Self::InvalidArgs(m),
            tool::ToolError::Cancelled => Self::Cancelled,
        }
    }
}

impl From<tool::ToolResult> for CallOutput {
    fn from(r: tool::ToolResult) -> Self {
        let (content, structured_content) = content_from_wit(r.content);
        Self {
            content,
            structured_content,
            meta: None,
            details: r.details.as_deref().and_then(|d| serde_json::from_str(d).ok()),
            is_error: false,
        }
    }
}

/// A plugin's content as blocks and the structured result: the first
/// JSON block that parses is the structured result, any other JSON block
/// stays for the model as text.
pub(super) fn content_from_wit(content: Vec<tool::Content>) -> (Vec<Block>, Option<Value>) {
    let mut structured = None;
    let blocks = content
        .into_iter()
        .filter_map(|c| match c {
            tool::Content::Text(t) => Some(Block::text(t)),
            tool::Content::Image(i) => Some(Block::Image(Media {
                data: STANDARD.encode(&i.data),
                mime_type: i.mime_type,
                annotations: None,
                meta: None,
            })),
            tool::Content::Json(j) => match serde_json::from_str::<Value>(&j) {
                Ok(value) if structured.is_none() => {
                    structured = Some(value);
                    None
                }
                _ => Some(Block::text(j)),
            },
        })
        .collect();
    (blocks, structured)
}

/// A result as a plugin sees it.
pub(super) fn to_wit(output: &CallOutput) -> tool::ToolResult {
    let mut content: Vec<tool::Content> = output
        .content
        .iter()
        .map(|block| match block {
            Block::Text(t) => tool::Content::Text(t.text.clone()),
            Block::Image(i) => match STANDARD.decode(&i.data) {
                Ok(data) => tool::Content::Image(tool::Image {
                    data,
                    mime_type: i.mime_type.clone(),
                }),
                Err(_) => tool::Content::Text(format!("[an image, {}, not valid base64]", i.mime_type)),
            },
            Block::Audio(a) => tool::Content::Text(format!("[audio, {}]", a.mime_type)),
            Block::ResourceLink(l) => tool::Content::Text(format!("[resource link: {}]", l.uri)),
            Block::Resource(e) => match &e.resource.body {
                Body::Text(text) => tool::Content::Text(text.clone()),
                Body::Blob(_) => tool::Content::Text(format!("[resource: {}]", e.resource.uri)),
            },
        })
        .collect();
    if let Some(structured) = &output.structured_content {
        content.push(tool::Content::Json(structured.to_string()));
    }
    tool::ToolResult {
        content,
        details: output.details.as_ref().map(Value::to_string),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_json_block_is_the_structured_result() {
        let wit = tool::ToolResult {
            content: vec![
                tool::Content::Text("3 words".into()),
                tool::Content::Json(r#"{"words":3}"#.into()),
                tool::Content::Json(r#"{"second":true}"#.into()),
                tool::Content::Image(tool::Image {
                    data: b"Man".to_vec(),
                    mime_type: "image/png".into(),
                }),
            ],
            details: Some(r#"{"ms":1}"#.into()),
        };
        let out = CallOutput::from(wit);
        assert_eq!(out.structured_content, Some(serde_json::json!({"words": 3})));
        assert_eq!(out.text(), "3 words\n{\"second\":true}");
        assert!(matches!(&out.content[2], Block::Image(i) if i.data == "TWFu"));
        assert_eq!(out.details, Some(serde_json::json!({"ms": 1})));
        let back = to_wit(&out);
        assert!(matches!(&back.content[2], tool::Content::Image(i) if i.data == b"Man"));
        assert!(matches!(&back.content[3], tool::Content::Json(j) if j == r#"{"words":3}"#));
    }
}
