//! The latest version's values to and from the host's own types: results
//! and content ([`crate::output`]), errors, hooks, decisions, value models.
//! Every version reaches the host through these, once.
//!
//! Binary data (images, audio, blobs) is raw bytes in WIT and base64 in the
//! host (as MCP carries it): encoded here on the way in, decoded on the way
//! back to the plugin (after-call, render-result), where data that is not
//! valid base64 (it never came from a plugin) becomes text saying so.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

use super::latest::tool as wit;
use super::latest::value_model_types as vm;
use crate::output::{
    self, Block, Body, CallOutput, Embedded, Media, ResourceContents, ResourceLink, Role, ToolError,
};
use crate::plugin::definition::{
    AfterCallOverride, Answer, BeforeCallDecision, Hooks, Question, RenderOptions,
};
use crate::value_model::{CostModel, FieldGroup, FollowUpLink, SideEffect, ValueClass, ValueModel};

/// An after-call answer in the latest's form, with what 0.1 says that the
/// latest cannot: that the structured result is removed.
pub struct Override {
    pub wit: wit::AfterCallOverride,
    pub clears_structured: bool,
}

impl From<wit::AfterCallOverride> for Override {
    fn from(wit: wit::AfterCallOverride) -> Self {
        Self {
            wit,
            clears_structured: false,
        }
    }
}

fn json(what: &str, text: &str) -> Result<Value, String> {
    serde_json::from_str(text).map_err(|e| format!("its {what} is not JSON: {e}"))
}

/// What content a plugin handed over holds, counted where it lies, before
/// anything is redacted or converted: its blocks, and the bytes of its
/// strings and data (binary data before base64, so never more than
/// [`CallOutput::size`] counts once it is converted). A result over a cap
/// by this count is refused without another copy of it being made.
pub fn extent(content: &[wit::Content]) -> (usize, usize) {
    let text = |t: &Option<String>| t.as_ref().map_or(0, String::len);
    let bytes = content
        .iter()
        .map(|c| {
            output::BLOCK_COST
                + match c {
                    wit::Content::Text(t) => t.len(),
                    wit::Content::Image(m) | wit::Content::Audio(m) => m.data.len() + m.mime_type.len(),
                    wit::Content::ResourceLink(l) => {
                        l.uri.len()
                            + l.name.len()
                            + text(&l.title)
                            + text(&l.description)
                            + text(&l.mime_type)
                    }
                    wit::Content::Resource(e) => {
                        e.uri.len()
                            + text(&e.mime_type)
                            + match &e.body {
                                wit::ResourceBody::Text(t) => t.len(),
                                wit::ResourceBody::Blob(b) => b.len(),
                            }
                    }
                }
        })
        .fold(0usize, usize::saturating_add);
    (content.len(), bytes)
}

/// A plugin's result; `Err` if its structured result is not JSON. Details
/// that are not JSON are dropped: they are for logs only.
pub fn output(r: wit::ToolResult) -> Result<CallOutput, String> {
    Ok(CallOutput {
        content: r.content.into_iter().map(block).collect(),
        structured_content: r
            .structured
            .as_deref()
            .map(|s| json("structured result", s))
            .transpose()?,
        meta: None,
        details: r.details.as_deref().and_then(|d| serde_json::from_str(d).ok()),
        is_error: false,
        is_error_omitted: false,
    })
}

/// An after-call answer; `Err` if its structured result is not JSON.
pub fn after_call(o: Override) -> Result<AfterCallOverride, String> {
    let structured = match o.wit.structured {
        Some(s) => Some(Some(json("structured result", &s)?)),
        None if o.clears_structured => Some(None),
        None => None,
    };
    Ok(AfterCallOverride {
        content: o.wit.content.map(|c| c.into_iter().map(block).collect()),
        structured,
        details: o
            .wit
            .details
            .as_deref()
            .and_then(|d| serde_json::from_str(d).ok()),
        is_error: o.wit.is_error,
    })
}

fn annotations(a: Option<wit::Annotations>) -> Option<output::ContentAnnotations> {
    a.map(|a| output::ContentAnnotations {
        audience: (!a.audience.is_empty()).then(|| {
            a.audience
                .into_iter()
                .map(|r| match r {
                    wit::Role::User => Role::User,
                    wit::Role::Assistant => Role::Assistant,
                })
                .collect()
        }),
        priority: a.priority.map(|p| p as f32),
        last_modified: a.last_modified,
    })
}

fn media(m: wit::Media) -> Media {
    Media {
        data: STANDARD.encode(&m.data),
        mime_type: m.mime_type,
        annotations: annotations(m.annotations),
        meta: None,
    }
}

fn block(c: wit::Content) -> Block {
    match c {
        wit::Content::Text(t) => Block::text(t),
        wit::Content::Image(m) => Block::Image(media(m)),
        wit::Content::Audio(m) => Block::Audio(media(m)),
        wit::Content::ResourceLink(l) => Block::ResourceLink(ResourceLink {
            uri: l.uri,
            name: l.name,
            title: l.title,
            description: l.description,
            mime_type: l.mime_type,
            size: l.size,
            icons: None,
            annotations: annotations(l.annotations),
            meta: None,
        }),
        wit::Content::Resource(e) => Block::Resource(Embedded {
            resource: ResourceContents {
                uri: e.uri,
                mime_type: e.mime_type,
                body: match e.body {
                    wit::ResourceBody::Text(t) => Body::Text(t),
                    wit::ResourceBody::Blob(b) => Body::Blob(STANDARD.encode(&b)),
                },
                meta: None,
            },
            annotations: annotations(e.annotations),
            meta: None,
        }),
    }
}

fn annotations_to_wit(a: &Option<output::ContentAnnotations>) -> Option<wit::Annotations> {
    a.as_ref().map(|a| wit::Annotations {
        audience: a
            .audience
            .iter()
            .flatten()
            .map(|r| match r {
                Role::User => wit::Role::User,
                Role::Assistant => wit::Role::Assistant,
            })
            .collect(),
        priority: a.priority.map(f64::from),
        last_modified: a.last_modified.clone(),
    })
}

fn media_to_wit(m: &Media, what: &str) -> Result<wit::Media, String> {
    match STANDARD.decode(&m.data) {
        Ok(data) => Ok(wit::Media {
            data,
            mime_type: m.mime_type.clone(),
            annotations: annotations_to_wit(&m.annotations),
        }),
        Err(_) => Err(format!("[{what}, {}, not valid base64]", m.mime_type)),
    }
}

/// A result as a plugin sees it.
pub fn output_to_wit(output: &CallOutput) -> wit::ToolResult {
    let content = output
        .content
        .iter()
        .map(|block| match block {
            Block::Text(t) => wit::Content::Text(t.text.clone()),
            Block::Image(m) => {
                media_to_wit(m, "an image").map_or_else(wit::Content::Text, wit::Content::Image)
            }
            Block::Audio(m) => media_to_wit(m, "audio").map_or_else(wit::Content::Text, wit::Content::Audio),
            Block::ResourceLink(l) => wit::Content::ResourceLink(wit::ResourceLink {
                uri: l.uri.clone(),
                name: l.name.clone(),
                title: l.title.clone(),
                description: l.description.clone(),
                mime_type: l.mime_type.clone(),
                size: l.size,
                annotations: annotations_to_wit(&l.annotations),
            }),
            Block::Resource(e) => {
                let body = match &e.resource.body {
                    Body::Text(t) => Some(wit::ResourceBody::Text(t.clone())),
                    Body::Blob(b) => STANDARD.decode(b).ok().map(wit::ResourceBody::Blob),
                };
                match body {
                    Some(body) => wit::Content::Resource(wit::EmbeddedResource {
                        uri: e.resource.uri.clone(),
                        mime_type: e.resource.mime_type.clone(),
                        body,
                        annotations: annotations_to_wit(&e.annotations),
                    }),
                    None => wit::Content::Text(format!("[resource {}, not valid base64]", e.resource.uri)),
                }
            }
        })
        .collect();
    wit::ToolResult {
        content,
        structured: output.structured_content.as_ref().map(Value::to_string),
        details: output.details.as_ref().map(Value::to_string),
    }
}

impl From<wit::ToolError> for ToolError {
    fn from(e: wit::ToolError) -> Self {
        match e {
            wit::ToolError::Failed(m) => Self::Failed(m),
            wit::ToolError::NotFound(m) => Self::NotFound(m),
            wit::ToolError::InvalidArgs(m) => Self::InvalidArgs(m),
            wit::ToolError::Cancelled => Self::Cancelled,
        }
    }
}

impl From<wit::BeforeCallDecision> for BeforeCallDecision {
    fn from(d: wit::BeforeCallDecision) -> Self {
        match d {
            wit::BeforeCallDecision::Allow => Self::Allow,
            wit::BeforeCallDecision::Block(reason) => Self::Block(reason),
            wit::BeforeCallDecision::Ask(q) => Self::Ask(Question {
                message: q.message,
                options: match q.kind {
                    wit::QuestionKind::Confirm => None,
                    wit::QuestionKind::Choose(options) => Some(options),
                },
            }),
        }
    }
}

impl From<Answer> for wit::AskAnswer {
    fn from(a: Answer) -> Self {
        match a {
            Answer::Accepted(choice) => Self::Accepted(choice),
            Answer::Declined => Self::Declined,
            Answer::Cancelled => Self::Cancelled,
        }
    }
}

impl From<wit::Hooks> for Hooks {
    fn from(h: wit::Hooks) -> Self {
        [
            (wit::Hooks::PREPARE_ARGUMENTS, Hooks::PREPARE_ARGUMENTS),
            (wit::Hooks::BEFORE_CALL, Hooks::BEFORE_CALL),
            (wit::Hooks::AFTER_CALL, Hooks::AFTER_CALL),
            (wit::Hooks::RENDER_CALL, Hooks::RENDER_CALL),
            (wit::Hooks::RENDER_RESULT, Hooks::RENDER_RESULT),
        ]
        .into_iter()
        .filter(|(theirs, _)| h.contains(*theirs))
        .fold(Hooks::empty(), |all, (_, ours)| all | ours)
    }
}

impl From<RenderOptions> for wit::RenderOptions {
    fn from(o: RenderOptions) -> Self {
        Self {
            expanded: o.expanded,
            is_partial: o.is_partial,
            is_error: o.is_error,
            width: o.width,
        }
    }
}

impl From<&FollowUpLink> for vm::FollowUpLink {
    fn from(l: &FollowUpLink) -> Self {
        Self {
            tool: l.tool.clone(),
            probability: l.probability,
            projection: l.projection.clone(),
            projection_arg: l.projection_arg.clone(),
        }
    }
}

impl From<vm::ToolValueModel> for ValueModel {
    fn from(m: vm::ToolValueModel) -> Self {
        ValueModel {
            value_class: m.value_class.map(|c| match c {
                vm::ValueClass::Critical => ValueClass::Critical,
                vm::ValueClass::Supporting => ValueClass::Supporting,
                vm::ValueClass::Optional => ValueClass::Optional,
                vm::ValueClass::AuditOnly => ValueClass::AuditOnly,
            }),
            side_effect: m.side_effect.map(|s| match s {
                vm::SideEffect::Pure => SideEffect::Pure,
                vm::SideEffect::ReadOnly => SideEffect::ReadOnly,
                vm::SideEffect::MutatesLocal => SideEffect::MutatesLocal,
                vm::SideEffect::MutatesExternal => SideEffect::MutatesExternal,
                vm::SideEffect::Indeterminate => SideEffect::Indeterminate,
            }),
            cost: m
                .cost
                .map(|c| CostModel {
                    typical_kb: c.typical_kb,
                    max_kb: c.max_kb,
                    latency_ms_p50: c.latency_ms_p50,
                    dollars: c.dollars,
                    freshness_ttl_s: c.freshness_ttl_s,
                })
                .unwrap_or_default(),
            field_groups: m.field_groups.map(|groups| {
                groups
                    .into_iter()
                    .map(|g| {
                        let group = FieldGroup {
                            fields: g.fields,
                            estimated_value: g.estimated_value,
                            default_include: g.default_include,
                        };
                        (g.name, group)
                    })
                    .collect()
            }),
            follow_ups: m.follow_ups.map(|links| {
                links
                    .into_iter()
                    .map(|l| FollowUpLink {
                        tool: l.tool,
                        probability: l.probability,
                        projection: l.projection,
                        projection_arg: l.projection_arg,
                    })
                    .collect()
            }),
            invalidates: m.invalidates,
            fail_fast_after_n: m.fail_fast_after_n,
            rate_limit_host: m.rate_limit_host,
            speculate: m.speculate,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_data_is_base64_in_the_host_and_bytes_in_wit() {
        let wit_result = wit::ToolResult {
            content: vec![
                wit::Content::Text("3 words".into()),
                wit::Content::Image(wit::Media {
                    data: b"Man".to_vec(),
                    mime_type: "image/png".into(),
                    annotations: None,
                }),
                wit::Content::Resource(wit::EmbeddedResource {
                    uri: "file:///a".into(),
                    mime_type: None,
                    body: wit::ResourceBody::Blob(b"Man".to_vec()),
                    annotations: Some(wit::Annotations {
                        audience: vec![wit::Role::User],
                        priority: Some(0.5),
                        last_modified: None,
                    }),
                }),
            ],
            structured: Some(r#"{"words":3}"#.into()),
            details: Some(r#"{"ms":1}"#.into()),
        };
        let out = output(wit_result).unwrap();
        assert_eq!(out.structured_content, Some(serde_json::json!({"words": 3})));
        assert_eq!(out.text(), "3 words");
        assert!(matches!(&out.content[1], Block::Image(i) if i.data == "TWFu"));
        assert!(matches!(&out.content[2], Block::Resource(e)
            if e.resource.body == Body::Blob("TWFu".into())
            && e.annotations.as_ref().unwrap().audience == Some(vec![Role::User])));
        assert_eq!(out.details, Some(serde_json::json!({"ms": 1})));
        let back = output_to_wit(&out);
        assert!(matches!(&back.content[1], wit::Content::Image(i) if i.data == b"Man"));
        assert!(matches!(&back.content[2], wit::Content::Resource(e)
            if matches!(&e.body, wit::ResourceBody::Blob(b) if b == b"Man")));
        assert_eq!(back.structured.as_deref(), Some(r#"{"words":3}"#));
    }

    #[test]
    fn a_structured_result_that_is_not_json_is_refused() {
        let bad = wit::ToolResult {
            content: Vec::new(),
            structured: Some("{".into()),
            details: None,
        };
        assert!(
            output(bad)
                .unwrap_err()
                .starts_with("its structured result is not JSON")
        );
    }
}
