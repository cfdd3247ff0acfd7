//! Tool results as the host owns them: what native tools, tool plugins and
//! upstream MCP servers return, what the pipeline, the speculation cache
//! and after-call hooks pass along, and what the MCP front serves.
//!
//! A result carries every MCP content kind (text, image, audio,
//! resource link, embedded resource), each with its annotations and
//! `_meta`, and the tool's `structuredContent` exactly as the tool sent it:
//! nothing is folded into another field, so a gateway passes an upstream
//! server's answer through whole. Binary data (images, audio, blobs) stays
//! in the base64 text MCP carries, so it is never decoded and re-encoded
//! on the way through.
//!
//! Conversions: from the plugins' WIT results in `plugin` (every version's,
//! once each), to and from rmcp's types in [`mcp`]. Not here:
//! what produces or serves results.

pub mod mcp;

use serde_json::{Map, Value};

use crate::bounds::encoded_len;

/// An MCP `_meta` object.
pub type Meta = Map<String, Value>;

/// What a call that got as far as execution returned.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CallOutput {
    /// For the model, in order.
    pub content: Vec<Block>,
    /// The tool's structured result, as the tool sent it.
    pub structured_content: Option<Value>,
    /// The result's own `_meta`.
    pub meta: Option<Meta>,
    /// For user interfaces and logs only (plugins' `details`); never served
    /// to the model.
    pub details: Option<Value>,
    /// The tool ran and failed: the content says why, for the model.
    pub is_error: bool,
    /// The source left `isError` out of its result (MCP's default, false),
    /// and so is it served: a result passed through keeps its fields as
    /// they came. Of no effect on a result that failed, which says so.
    pub is_error_omitted: bool,
}

impl CallOutput {
    /// A result of `content` blocks.
    pub fn new(content: Vec<Block>) -> Self {
        Self {
            content,
            ..Self::default()
        }
    }

    /// A failed execution as the model reads it: one text block.
    pub fn error(text: impl Into<String>) -> Self {
        Self {
            is_error: true,
            ..Self::new(vec![Block::text(text)])
        }
    }

    /// The same result, with `structured` as its structured content.
    pub fn with_structured(mut self, structured: Value) -> Self {
        self.structured_content = Some(structured);
        self
    }

    /// The text blocks, joined by newlines.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|b| match b {
                Block::Text(t) => Some(t.text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The structured result, if the tool sent one.
    pub fn structured(&self) -> Option<Value> {
        self.structured_content.clone()
    }

    /// Roughly how many bytes the result holds, for size caps and caches:
    /// every string and JSON value of it, and [`BLOCK_COST`] a block.
    pub fn size(&self) -> usize {
        self.content.iter().map(Block::size).sum::<usize>()
            + self.structured_content.as_ref().map_or(0, encoded_len)
            + self.details.as_ref().map_or(0, encoded_len)
            + meta_size(&self.meta)
    }
}

/// A call that did not produce a result, as the model is to read it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolError {
    /// The call could not run: a plugin's hook blocked it or failed, or the
    /// tool's source failed outside the tool's own logic.
    #[error("{0}")]
    Failed(String),
    /// Something named does not exist: the tool, or what it was asked for.
    #[error("{0}")]
    NotFound(String),
    /// The arguments do not fit the tool's schema, or the tool refused them.
    #[error("{0}")]
    InvalidArgs(String),
    /// The call was cancelled by its caller.
    #[error("the call was cancelled")]
    Cancelled,
}

/// What each content block costs in a result's size beside its strings:
/// the JSON of the emptiest one, `{"type":"text","text":""}`, so a result
/// of many empty blocks is as large as it is on the wire.
pub const BLOCK_COST: usize = 25;

/// The encoded length of a `_meta`, if there is one.
fn meta_size(meta: &Option<Meta>) -> usize {
    meta.as_ref().map_or(0, encoded_len)
}

/// One MCP content block.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// Text for the model.
    Text(Text),
    /// An image, base64-encoded.
    Image(Media),
    /// An audio clip, base64-encoded.
    Audio(Media),
    /// A resource the client may read.
    ResourceLink(ResourceLink),
    /// A resource's contents, embedded.
    Resource(Embedded),
}

impl Block {
    /// A text block of `text`, with no annotations.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text(Text {
            text: text.into(),
            annotations: None,
            meta: None,
        })
    }

    /// Roughly how many bytes the block holds (binary data as base64),
    /// every text and `_meta` it carries counted, and [`BLOCK_COST`].
    pub fn size(&self) -> usize {
        let text = |t: &Option<String>| t.as_ref().map_or(0, String::len);
        let annotations = |a: &Option<ContentAnnotations>| {
            a.as_ref().map_or(0, |a| {
                text(&a.last_modified) + a.audience.as_ref().map_or(0, Vec::len)
            })
        };
        BLOCK_COST
            + match self {
                Self::Text(t) => t.text.len() + annotations(&t.annotations) + meta_size(&t.meta),
                Self::Image(m) | Self::Audio(m) => {
                    m.data.len() + m.mime_type.len() + annotations(&m.annotations) + meta_size(&m.meta)
                }
                Self::ResourceLink(l) => {
                    let icons = l.icons.iter().flatten().map(|i| {
                        i.src.len()
                            + text(&i.mime_type)
                            + i.sizes.iter().flatten().map(String::len).sum::<usize>()
                    });
                    l.uri.len()
                        + l.name.len()
                        + text(&l.title)
                        + text(&l.description)
                        + text(&l.mime_type)
                        + icons.sum::<usize>()
                        + annotations(&l.annotations)
                        + meta_size(&l.meta)
                }
                Self::Resource(e) => {
                    e.resource.uri.len()
                        + text(&e.resource.mime_type)
                        + match &e.resource.body {
                            Body::Text(t) | Body::Blob(t) => t.len(),
                        }
                        + annotations(&e.annotations)
                        + meta_size(&e.resource.meta)
                        + meta_size(&e.meta)
                }
            }
    }
}

/// Text for the model (`text`).
#[derive(Debug, Clone, PartialEq)]
pub struct Text {
    /// The text.
    pub text: String,
    /// How a client is to use it.
    pub annotations: Option<ContentAnnotations>,
    /// The block's `_meta`.
    pub meta: Option<Meta>,
}

/// An image or audio clip.
#[derive(Debug, Clone, PartialEq)]
pub struct Media {
    /// Base64 (standard alphabet, padded), as MCP carries it.
    pub data: String,
    /// `image/png`, `audio/wav`...
    pub mime_type: String,
    /// How a client is to use it.
    pub annotations: Option<ContentAnnotations>,
    /// The block's `_meta`.
    pub meta: Option<Meta>,
}

/// A resource the client may read (`resource_link`).
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceLink {
    /// Where the resource is.
    pub uri: String,
    /// Its name, for programs.
    pub name: String,
    /// Its name, for people.
    pub title: Option<String>,
    /// What it is.
    pub description: Option<String>,
    /// Its media type, if known.
    pub mime_type: Option<String>,
    /// Its size in bytes, if known.
    pub size: Option<u64>,
    /// Icons a client may show for it.
    pub icons: Option<Vec<Icon>>,
    /// How a client is to use it.
    pub annotations: Option<ContentAnnotations>,
    /// The block's `_meta`.
    pub meta: Option<Meta>,
}

/// A resource's contents embedded in a result (`resource`).
#[derive(Debug, Clone, PartialEq)]
pub struct Embedded {
    /// The resource and its contents.
    pub resource: ResourceContents,
    /// How a client is to use it.
    pub annotations: Option<ContentAnnotations>,
    /// The block's `_meta`.
    pub meta: Option<Meta>,
}

/// The contents of one resource.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceContents {
    /// Where the resource is.
    pub uri: String,
    /// Its media type, if known.
    pub mime_type: Option<String>,
    /// Its contents.
    pub body: Body,
    /// The contents' `_meta`.
    pub meta: Option<Meta>,
}

/// A resource's contents: text, or binary data.
#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    /// Text.
    Text(String),
    /// Base64, as MCP carries it.
    Blob(String),
}

/// Hints on how a client uses a block.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ContentAnnotations {
    /// Who the block is for.
    pub audience: Option<Vec<Role>>,
    /// How much it matters, from 0 (least) to 1 (most).
    pub priority: Option<f32>,
    /// When it last changed (ISO 8601).
    pub last_modified: Option<String>,
}

/// Who a block is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The person using the client.
    User,
    /// The model.
    Assistant,
}

/// An icon a client may show (for a resource link, a tool).
#[derive(Debug, Clone, PartialEq)]
pub struct Icon {
    /// Where the image is (a URI, or a `data:` URI).
    pub src: String,
    /// Its media type, if known.
    pub mime_type: Option<String>,
    /// The sizes it fits (`48x48`, `any`).
    pub sizes: Option<Vec<String>>,
    /// The theme it is drawn for.
    pub theme: Option<Theme>,
}

/// The theme an icon is drawn for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Theme {
    /// A light background.
    Light,
    /// A dark background.
    Dark,
}
