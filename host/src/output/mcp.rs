//! The host's result types to and from rmcp's: the MCP front serves with
//! [`to_mcp`], the upstream client reads with [`from_mcp`]. Field for
//! field, so a result passed through comes out as it went in. Here rather
//! than in the MCP front (`mcp`): the upstream client, below the front,
//! converts with it too. A tool's own
//! fields convert in [`crate::tool`], with the icons converted here.

use rmcp::model as m;

use super::{
    Block, Body, CallOutput, ContentAnnotations, Embedded, Icon, Media, Meta, ResourceContents, ResourceLink,
    Role, Text, Theme,
};

/// A result as an MCP `CallToolResult` (plugins' `details` stay behind).
pub fn to_mcp(output: CallOutput) -> m::CallToolResult {
    let content = output.content.into_iter().map(block_to_mcp).collect();
    let mut result = if output.is_error {
        m::CallToolResult::error(content)
    } else {
        m::CallToolResult::success(content)
    };
    if !output.is_error && output.is_error_omitted {
        result.is_error = None;
    }
    result.structured_content = output.structured_content;
    result.meta = output.meta.map(m::MetaObject);
    result
}

/// An MCP `CallToolResult` as the host's result.
pub fn from_mcp(result: m::CallToolResult) -> CallOutput {
    CallOutput {
        content: result.content.into_iter().filter_map(block_from_mcp).collect(),
        structured_content: result.structured_content,
        meta: result.meta.map(|m| m.0),
        details: None,
        is_error: result.is_error == Some(true),
        is_error_omitted: result.is_error.is_none(),
    }
}

fn meta_to(meta: Option<Meta>) -> Option<m::MetaObject> {
    meta.map(m::MetaObject)
}

fn meta_from(meta: Option<m::MetaObject>) -> Option<Meta> {
    meta.map(|m| m.0)
}

fn block_to_mcp(block: Block) -> m::ContentBlock {
    match block {
        Block::Text(t) => {
            let mut c = m::TextContent::new(t.text);
            c.annotations = t.annotations.map(annotations_to);
            c.meta = meta_to(t.meta);
            m::ContentBlock::Text(c)
        }
        Block::Image(i) => {
            let mut c = m::ImageContent::new(i.data, i.mime_type);
            c.annotations = i.annotations.map(annotations_to);
            c.meta = meta_to(i.meta);
            m::ContentBlock::Image(c)
        }
        Block::Audio(a) => {
            let mut c = m::AudioContent::new(a.data, a.mime_type);
            c.annotations = a.annotations.map(annotations_to);
            c.meta = meta_to(a.meta);
            m::ContentBlock::Audio(c)
        }
        Block::ResourceLink(l) => {
            let mut r = m::Resource::new(l.uri, l.name);
            r.title = l.title;
            r.description = l.description;
            r.mime_type = l.mime_type;
            r.size = l.size;
            r.icons = l.icons.map(|icons| icons.into_iter().map(icon_to).collect());
            r.annotations = l.annotations.map(annotations_to);
            r.meta = meta_to(l.meta);
            m::ContentBlock::ResourceLink(r)
        }
        Block::Resource(e) => {
            let ResourceContents {
                uri,
                mime_type,
                body,
                meta,
            } = e.resource;
            let meta = meta_to(meta);
            let resource = match body {
                Body::Text(text) => m::ResourceContents::TextResourceContents {
                    uri,
                    mime_type,
                    text,
                    meta,
                },
                Body::Blob(blob) => m::ResourceContents::BlobResourceContents {
                    uri,
                    mime_type,
                    blob,
                    meta,
                },
            };
            let mut c = m::EmbeddedResource::new(resource);
            c.annotations = e.annotations.map(annotations_to);
            c.meta = meta_to(e.meta);
            m::ContentBlock::Resource(c)
        }
    }
}

/// `None` for a content kind newer than this host knows (rmcp's union is
/// open); it is dropped with a log line rather than misrepresented.
fn block_from_mcp(block: m::ContentBlock) -> Option<Block> {
    Some(match block {
        m::ContentBlock::Text(t) => Block::Text(Text {
            text: t.text,
            annotations: t.annotations.map(annotations_from),
            meta: meta_from(t.meta),
        }),
        m::ContentBlock::Image(i) => Block::Image(Media {
            data: i.data,
            mime_type: i.mime_type,
            annotations: i.annotations.map(annotations_from),
            meta: meta_from(i.meta),
        }),
        m::ContentBlock::Audio(a) => Block::Audio(Media {
            data: a.data,
            mime_type: a.mime_type,
            annotations: a.annotations.map(annotations_from),
            meta: meta_from(a.meta),
        }),
        m::ContentBlock::ResourceLink(r) => Block::ResourceLink(ResourceLink {
            uri: r.uri,
            name: r.name,
            title: r.title,
            description: r.description,
            mime_type: r.mime_type,
            size: r.size,
            icons: r.icons.map(|icons| icons.into_iter().map(icon_from).collect()),
            annotations: r.annotations.map(annotations_from),
            meta: meta_from(r.meta),
        }),
        m::ContentBlock::Resource(e) => {
            let resource = match e.resource {
                m::ResourceContents::TextResourceContents {
                    uri,
                    mime_type,
                    text,
                    meta,
                } => ResourceContents {
                    uri,
                    mime_type,
                    body: Body::Text(text),
                    meta: meta_from(meta),
                },
                m::ResourceContents::BlobResourceContents {
                    uri,
                    mime_type,
                    blob,
                    meta,
                } => ResourceContents {
                    uri,
                    mime_type,
                    body: Body::Blob(blob),
                    meta: meta_from(meta),
                },
                other => {
                    tracing::warn!("dropping resource contents of an unknown kind: {other:?}");
                    return None;
                }
            };
            Block::Resource(Embedded {
                resource,
                annotations: e.annotations.map(annotations_from),
                meta: meta_from(e.meta),
            })
        }
        other => {
            tracing::warn!("dropping a content block of an unknown kind: {other:?}");
            return None;
        }
    })
}

fn annotations_to(a: ContentAnnotations) -> m::Annotations {
    let mut out = m::Annotations::default();
    out.audience = a.audience.map(|roles| {
        roles
            .into_iter()
            .map(|r| match r {
                Role::User => m::Role::User,
                Role::Assistant => m::Role::Assistant,
            })
            .collect()
    });
    out.priority = a.priority;
    out.last_modified = a.last_modified;
    out
}

fn annotations_from(a: m::Annotations) -> ContentAnnotations {
    ContentAnnotations {
        audience: a.audience.map(|roles| {
            roles
                .into_iter()
                .map(|r| match r {
                    m::Role::User => Role::User,
                    m::Role::Assistant => Role::Assistant,
                })
                .collect()
        }),
        priority: a.priority,
        last_modified: a.last_modified,
    }
}

pub(crate) fn icon_to(i: Icon) -> m::Icon {
    let mut out = m::Icon::new(i.src);
    out.mime_type = i.mime_type;
    out.sizes = i.sizes;
    out.theme = i.theme.map(|t| match t {
        Theme::Light => m::IconTheme::Light,
        Theme::Dark => m::IconTheme::Dark,
    });
    out
}

pub(crate) fn icon_from(i: m::Icon) -> Icon {
    Icon {
        src: i.src,
        mime_type: i.mime_type,
        sizes: i.sizes,
        theme: i.theme.and_then(|t| match t {
            m::IconTheme::Light => Some(Theme::Light),
            m::IconTheme::Dark => Some(Theme::Dark),
            _ => None,
        }),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Every content kind, with annotations and `_meta`, as a server sends it.
    fn every_kind() -> serde_json::Value {
        let annotations =
            json!({"audience": ["user", "assistant"], "priority": 0.7, "lastModified": "2025-01-12"});
        json!({
            "content": [
                {"type": "text", "text": "hi", "annotations": annotations, "_meta": {"k": 1}},
                {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png", "annotations": annotations},
                {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav", "_meta": {"a": true}},
                {"type": "resource_link", "uri": "demo://a", "name": "A", "title": "The A", "description": "first",
                 "mimeType": "text/plain", "size": 3, "icons": [{"src": "data:,", "mimeType": "image/png", "sizes": ["48x48"], "theme": "dark"}],
                 "annotations": annotations, "_meta": {"x": "y"}},
                {"type": "resource_link", "uri": "demo://b", "name": "B"},
                {"type": "resource", "resource": {"uri": "demo://c", "mimeType": "text/plain", "text": "c", "_meta": {"m": 2}},
                 "annotations": annotations},
                {"type": "resource", "resource": {"uri": "demo://d", "blob": "AAEC"}}
            ],
            "structuredContent": {"temperature": 33},
            "isError": false,
            "resultType": "complete",
            "_meta": {"trace": "t"}
        })
    }

    #[test]
    fn a_result_passes_through_unchanged() {
        let original: m::CallToolResult = serde_json::from_value(every_kind()).unwrap();
        let through = to_mcp(from_mcp(original.clone()));
        assert_eq!(
            serde_json::to_value(&through).unwrap(),
            serde_json::to_value(&original).unwrap()
        );
        assert_eq!(from_mcp(original).content.len(), 7);
    }

    /// `isError` is served as the source sent it: left out (as TypeScript
    /// and Go servers leave it), false or true; a result that failed
    /// after all (an after-call hook's say) says so.
    #[test]
    fn is_error_passes_through_as_sent() {
        let through = |result: serde_json::Value| {
            let result: m::CallToolResult = serde_json::from_value(result).unwrap();
            serde_json::to_value(to_mcp(from_mcp(result))).unwrap()
        };
        for sent in [json!({}), json!({"isError": false}), json!({"isError": true})] {
            let mut result = json!({"content": [{"type": "text", "text": "t"}]});
            result
                .as_object_mut()
                .unwrap()
                .extend(sent.as_object().unwrap().clone());
            assert_eq!(through(result).get("isError"), sent.get("isError"), "{sent}");
        }
        let mut failed = from_mcp(serde_json::from_value(json!({"content": []})).unwrap());
        failed.is_error = true;
        assert_eq!(to_mcp(failed).is_error, Some(true));
    }
}
