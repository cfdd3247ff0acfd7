//! The host's result and tool types to and from rmcp's: the MCP front
//! serves with [`to_mcp`] and [`set_tool_meta`], the upstream client
//! reads with [`from_mcp`] and [`tool_meta_from_mcp`]. Field for field,
//! so a result or tool passed through comes out as it went in.

use rmcp::model as m;
use serde_json::Value;

use super::{
    Annotations, Block, Body, CallOutput, Embedded, Icon, Media, Meta, ResourceContents, ResourceLink, Role,
    Text, Theme,
};
use crate::catalog::{Annotations as ToolAnnotations, ToolMeta};

/// A result as an MCP `CallToolResult` (plugins' `details` stay behind).
pub fn to_mcp(output: CallOutput) -> m::CallToolResult {
    let content = output.content.into_iter().map(block_to_mcp).collect();
    let mut result = if output.is_error {
        m::CallToolResult::error(content)
    } else {
        m::CallToolResult::success(content)
    };
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

fn annotations_to(a: Annotations) -> m::Annotations {
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

fn annotations_from(a: m::Annotations) -> Annotations {
    Annotations {
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

fn icon_to(i: Icon) -> m::Icon {
    let mut out = m::Icon::new(i.src);
    out.mime_type = i.mime_type;
    out.sizes = i.sizes;
    out.theme = i.theme.map(|t| match t {
        Theme::Light => m::IconTheme::Light,
        Theme::Dark => m::IconTheme::Dark,
    });
    out
}

fn icon_from(i: m::Icon) -> Icon {
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
