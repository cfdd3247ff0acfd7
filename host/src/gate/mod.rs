//! The gate: everything that reaches an MCP client or the model passes here
//! last, whichever source made it (a plugin, an upstream server, a native
//! tool, the speculation cache, another replica through Redis).
//!
//! - **Results** of calls, served or prefetched ([`Gate::result`]): within
//!   [`bounds::MAX_RESULT_BLOCKS`] blocks, the source's byte cap (every
//!   byte counted: text, base64 data, URIs, names, structured content,
//!   `_meta`, a fixed cost per block) and [`bounds::MAX_JSON_DEPTH`]
//!   levels of nesting, or replaced by an error naming the tool and the
//!   cap; then every string redacted as one answer.
//! - **Tool definitions** ([`Gate::listing`]): every string of each tool
//!   (title, description, every key and string of the input and output
//!   schemas, annotations, icons, `_meta`) redacted as one answer; a tool
//!   whose name holds a secret, or whose definition is over
//!   [`bounds::MAX_TOOL_DEFINITION_BYTES`] or too deep, is not served.
//! - **Errors and texts** ([`Gate::error`], [`Gate::text`], [`Gate::message`]):
//!   a failed call's message, the instructions, prompts and resources an
//!   upstream server passes on.
//!
//! The gate knows every secret the host holds: each plugin's granted
//! secret values and each upstream server's configured header values,
//! whichever source the answer came from, so no source can hand on another's
//! secret either. How secrets are found (encodings, escapes, splits) is
//! `secrets`. Each source's own redaction (a plugin's, at its boundary)
//! stays, but nothing here depends on it.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::bounds::{self, encoded_len};
use crate::enrich::{EnrichedTool, Hidden, Listing};
use crate::output::{Block, Body, CallOutput, ContentAnnotations, Icon, Meta, ToolError};
use crate::secrets::{Piece, Secrets};

/// The host's last check on what it serves.
pub struct Gate {
    secrets: Secrets,
}

/// What a string of an answer is, for redaction.
#[derive(Clone, Copy)]
enum Kind {
    Text,
    /// Base64 of binary data.
    Binary,
}

/// Called on each string of an answer, in a fixed order.
type Visit<'a> = dyn FnMut(&mut String, Kind) + 'a;

impl Gate {
    /// A gate redacting `secrets` (`(name, value)`; the name is what the
    /// mark says).
    pub(crate) fn new<'a>(secrets: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        Self {
            secrets: Secrets::new(secrets),
        }
    }

    /// `output` of `tool` as it may be served: within the caps (at most
    /// `max_bytes`, counted by [`CallOutput::size`]) and redacted; over a
    /// cap, an error result saying which.
    pub(crate) fn result(&self, tool: &str, max_bytes: usize, mut output: CallOutput) -> CallOutput {
        if let Err(why) = check_result(&output, max_bytes.min(bounds::MAX_RESULT_BYTES)) {
            tracing::warn!(tool, "result not served: {why}");
            return CallOutput::error(format!("the result of tool `{tool}` was not served: {why}"));
        }
        self.redact(&mut output, output_strings);
        output
    }

    /// A failed call's message, redacted.
    pub(crate) fn error(&self, error: ToolError) -> ToolError {
        match error {
            ToolError::Failed(m) => ToolError::Failed(self.text(&m)),
            ToolError::NotFound(m) => ToolError::NotFound(self.text(&m)),
            ToolError::InvalidArgs(m) => ToolError::InvalidArgs(self.text(&m)),
            ToolError::Cancelled => ToolError::Cancelled,
        }
    }

    /// `text` redacted.
    pub(crate) fn text(&self, text: &str) -> String {
        self.secrets.text(text)
    }

    /// `message` (what an upstream server passes on: a prompt, a resource)
    /// with every key and string of its JSON redacted as one answer; `None`
    /// if it no longer reads as itself once redacted (a secret in a tag).
    pub(crate) fn message<T: Serialize + DeserializeOwned>(&self, message: T) -> Option<T> {
        if self.secrets.is_empty() {
            return Some(message);
        }
        let mut value = serde_json::to_value(&message).ok()?;
        self.redact(&mut value, value_strings);
        serde_json::from_value(value).ok()
    }

    /// Every listed tool redacted; a tool the caps refuse, or whose name
    /// holds a secret, moved to the hidden ones with why.
    pub(crate) fn listing(&self, listing: &mut Listing) {
        let tools = std::mem::take(&mut listing.tools);
        for mut tool in tools {
            match self.tool(&mut tool) {
                Ok(()) => listing.tools.push(tool),
                Err(reason) => {
                    let name = self.text(&tool.name);
                    tracing::warn!(tool = %name, "not served: {reason}");
                    listing.hidden.push(Hidden { name, reason });
                }
            }
        }
    }

    fn tool(&self, tool: &mut EnrichedTool) -> Result<(), String> {
        if self.secrets.found_in(&tool.name) {
            return Err("its name holds a secret value the host holds".into());
        }
        let size = tool_size(tool);
        if size > bounds::MAX_TOOL_DEFINITION_BYTES {
            return Err(format!(
                "its definition holds {size} bytes, more than the {} served",
                bounds::MAX_TOOL_DEFINITION_BYTES
            ));
        }
        let meta = &tool.meta;
        let deep = [Some(tool.schema.to_value()), meta.output_schema.clone()]
            .into_iter()
            .flatten()
            .chain(meta.wire_meta.clone().map(Value::Object))
            .any(|v| too_deep(&v));
        if deep {
            return Err(format!(
                "its schemas or `_meta` nest deeper than {} levels",
                bounds::MAX_JSON_DEPTH
            ));
        }
        self.redact(tool, tool_strings);
        Ok(())
    }

    /// Redact the strings `visit` finds in `target` as one answer: the
    /// first pass reads them, the second writes the ones that change.
    fn redact<T>(&self, target: &mut T, visit: fn(&mut T, &mut Visit<'_>)) {
        if self.secrets.is_empty() {
            return;
        }
        let mut pieces = Vec::new();
        visit(target, &mut |s: &mut String, kind: Kind| {
            pieces.push(match kind {
                Kind::Text => Piece::Text(s.clone()),
                Kind::Binary => Piece::Binary(s.clone()),
            })
        });
        let fixed = self.secrets.redact(&pieces);
        if fixed.iter().all(Option::is_none) {
            return;
        }
        let mut fixed = fixed.into_iter();
        visit(target, &mut |s: &mut String, _: Kind| {
            if let Some(Some(clean)) = fixed.next() {
                *s = clean;
            }
        });
    }
}

/// Why `output` may not be served, if it may not.
fn check_result(output: &CallOutput, max_bytes: usize) -> Result<(), String> {
    let blocks = output.content.len();
    if blocks > bounds::MAX_RESULT_BLOCKS {
        return Err(format!(
            "it has {blocks} content blocks, more than the {} served",
            bounds::MAX_RESULT_BLOCKS
        ));
    }
    let size = output.size();
    if size > max_bytes {
        return Err(format!("it holds {size} bytes, more than the {max_bytes} served"));
    }
    let block_meta = output.content.iter().flat_map(|b| match b {
        Block::Text(t) => [t.meta.as_ref(), None],
        Block::Image(m) | Block::Audio(m) => [m.meta.as_ref(), None],
        Block::ResourceLink(l) => [l.meta.as_ref(), None],
        Block::Resource(e) => [e.meta.as_ref(), e.resource.meta.as_ref()],
    });
    let deep = output
        .structured_content
        .iter()
        .chain(&output.details)
        .any(too_deep)
        || output.meta.iter().chain(block_meta.flatten()).any(map_too_deep);
    if deep {
        return Err(format!(
            "its structured content or `_meta` nests deeper than {} levels",
            bounds::MAX_JSON_DEPTH
        ));
    }
    Ok(())
}

/// Whether `value` nests deeper than [`bounds::MAX_JSON_DEPTH`] (a scalar
/// is one level; each array or object adds one).
fn too_deep(value: &Value) -> bool {
    deeper_than_max(std::iter::once(value), 1)
}

/// [`too_deep`] for an object given as its map.
fn map_too_deep(map: &Meta) -> bool {
    deeper_than_max(map.values(), 2)
}

/// Whether any of `values`, at `depth`, nests past the cap; iterative, so
/// the check itself is bounded in stack whatever it is given.
fn deeper_than_max<'a>(values: impl Iterator<Item = &'a Value>, depth: usize) -> bool {
    let mut stack: Vec<(&Value, usize)> = values.map(|v| (v, depth)).collect();
    while let Some((v, depth)) = stack.pop() {
        if depth > bounds::MAX_JSON_DEPTH {
            return true;
        }
        match v {
            Value::Array(items) => stack.extend(items.iter().map(|i| (i, depth + 1))),
            Value::Object(map) => stack.extend(map.values().map(|i| (i, depth + 1))),
            _ => {}
        }
    }
    false
}

/// Roughly how many bytes a tool's definition holds, as served.
fn tool_size(tool: &EnrichedTool) -> usize {
    let text = |t: &Option<String>| t.as_ref().map_or(0, String::len);
    let meta = &tool.meta;
    tool.name.len()
        + tool.schema.encoded_len()
        + text(&meta.title)
        + text(&meta.snippet)
        + meta.guidelines.iter().map(String::len).sum::<usize>()
        + meta.output_schema.as_ref().map_or(0, encoded_len)
        + text(&meta.annotations.title)
        + meta.icons.iter().flatten().map(icon_size).sum::<usize>()
        + meta.wire_meta.as_ref().map_or(0, encoded_len)
}

fn icon_size(icon: &Icon) -> usize {
    icon.src.len()
        + icon.mime_type.as_ref().map_or(0, String::len)
        + icon.sizes.iter().flatten().map(String::len).sum::<usize>()
}

fn output_strings(output: &mut CallOutput, f: &mut Visit<'_>) {
    for block in &mut output.content {
        block_strings(block, f);
    }
    if let Some(value) = &mut output.structured_content {
        value_strings(value, f);
    }
    if let Some(meta) = &mut output.meta {
        map_strings(meta, f);
    }
    if let Some(details) = &mut output.details {
        value_strings(details, f);
    }
}

fn block_strings(block: &mut Block, f: &mut Visit<'_>) {
    let (annotations, meta) = match block {
        Block::Text(t) => {
            f(&mut t.text, Kind::Text);
            (&mut t.annotations, &mut t.meta)
        }
        Block::Image(m) | Block::Audio(m) => {
            f(&mut m.data, Kind::Binary);
            f(&mut m.mime_type, Kind::Text);
            (&mut m.annotations, &mut m.meta)
        }
        Block::ResourceLink(l) => {
            for text in [&mut l.uri, &mut l.name]
                .into_iter()
                .chain(l.title.as_mut())
                .chain(l.description.as_mut())
                .chain(l.mime_type.as_mut())
            {
                f(text, Kind::Text);
            }
            for icon in l.icons.iter_mut().flatten() {
                icon_strings(icon, f);
            }
            (&mut l.annotations, &mut l.meta)
        }
        Block::Resource(e) => {
            let r = &mut e.resource;
            f(&mut r.uri, Kind::Text);
            if let Some(mime) = &mut r.mime_type {
                f(mime, Kind::Text);
            }
            match &mut r.body {
                Body::Text(t) => f(t, Kind::Text),
                Body::Blob(b) => f(b, Kind::Binary),
            }
            if let Some(meta) = &mut r.meta {
                map_strings(meta, f);
            }
            (&mut e.annotations, &mut e.meta)
        }
    };
    if let Some(ContentAnnotations {
        last_modified: Some(stamp),
        ..
    }) = annotations
    {
        f(stamp, Kind::Text);
    }
    if let Some(meta) = meta {
        map_strings(meta, f);
    }
}

fn icon_strings(icon: &mut Icon, f: &mut Visit<'_>) {
    f(&mut icon.src, Kind::Text);
    for text in icon.mime_type.iter_mut().chain(icon.sizes.iter_mut().flatten()) {
        f(text, Kind::Text);
    }
}

fn tool_strings(tool: &mut EnrichedTool, f: &mut Visit<'_>) {
    let (description, schema) = tool.schema.parts_mut();
    f(description, Kind::Text);
    map_strings(schema, f);
    let meta = &mut tool.meta;
    for text in meta
        .title
        .iter_mut()
        .chain(meta.snippet.iter_mut())
        .chain(meta.guidelines.iter_mut())
        .chain(meta.annotations.title.iter_mut())
    {
        f(text, Kind::Text);
    }
    if let Some(schema) = &mut meta.output_schema {
        value_strings(schema, f);
    }
    for icon in meta.icons.iter_mut().flatten() {
        icon_strings(icon, f);
    }
    if let Some(wire) = &mut meta.wire_meta {
        map_strings(wire, f);
    }
}

fn value_strings(value: &mut Value, f: &mut Visit<'_>) {
    match value {
        Value::String(text) => f(text, Kind::Text),
        Value::Array(items) => items.iter_mut().for_each(|v| value_strings(v, f)),
        Value::Object(map) => map_strings(map, f),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// Each key, then its value; a key the visit changes is renamed in place
/// (the order kept).
fn map_strings(map: &mut Map<String, Value>, f: &mut Visit<'_>) {
    let mut keys = Vec::with_capacity(map.len());
    for (key, value) in map.iter_mut() {
        let mut visited = key.clone();
        f(&mut visited, Kind::Text);
        keys.push(visited);
        value_strings(value, f);
    }
    if map.keys().zip(&keys).any(|(old, new)| old != new) {
        *map = std::mem::take(map)
            .into_iter()
            .zip(keys)
            .map(|((_, value), key)| (key, value))
            .collect();
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::schema::ToolSchema;
    use crate::tool::ToolMeta;

    const SECRET: &str = "s3cr3t-Token-42";

    fn gate() -> Gate {
        Gate::new([("TOKEN", SECRET)])
    }

    /// `depth` levels of nested arrays.
    fn nested(depth: usize) -> Value {
        (1..depth).fold(json!(0), |inner, _| json!([inner]))
    }

    #[test]
    fn results_over_a_cap_become_an_error_naming_the_tool_and_the_cap() {
        let many = CallOutput::new(vec![Block::text(""); bounds::MAX_RESULT_BLOCKS + 1]);
        let served = gate().result("t", usize::MAX, many);
        assert!(served.is_error);
        let text = served.text();
        assert!(
            text.contains("tool `t`") && text.contains("more than the 1000 served"),
            "{text}"
        );

        let big = CallOutput::new(vec![Block::text("x".repeat(100))]);
        let served = gate().result("t", 64, big);
        assert!(
            served.is_error && served.text().contains("more than the 64 served"),
            "{served:?}"
        );

        let deep = CallOutput::new(Vec::new()).with_structured(nested(bounds::MAX_JSON_DEPTH + 1));
        let served = gate().result("t", usize::MAX, deep);
        assert!(
            served.is_error && served.text().contains("deeper than 64"),
            "{served:?}"
        );
        let deepest = CallOutput::new(Vec::new()).with_structured(nested(bounds::MAX_JSON_DEPTH));
        assert!(!gate().result("t", usize::MAX, deepest).is_error);
        let mut deep_meta = CallOutput::new(Vec::new());
        deep_meta.meta = Some(Meta::from_iter([(
            "k".to_owned(),
            nested(bounds::MAX_JSON_DEPTH),
        )]));
        let served = gate().result("t", usize::MAX, deep_meta);
        assert!(served.is_error && served.text().contains("`_meta`"), "{served:?}");
    }

    fn tool(name: &str, description: &str, meta: ToolMeta) -> EnrichedTool {
        let schema =
            json!({"type": "object", "properties": {"q": {"type": "string", "description": SECRET}}});
        EnrichedTool::listed(name, ToolSchema::new(description, schema).unwrap(), meta)
    }

    #[test]
    fn every_string_of_a_definition_is_redacted_and_a_secret_name_is_not_served() {
        let reversed: String = SECRET.chars().rev().collect();
        let full = ToolMeta {
            title: Some(format!("Title {SECRET}")),
            output_schema: Some(json!({"type": "object", "description": hex::encode(SECRET)})),
            wire_meta: Some(Meta::from_iter([("vendor".to_owned(), json!([SECRET]))])),
            ..ToolMeta::default()
        };
        let mut listing = Listing {
            tools: vec![
                tool("search", &format!("Search as {reversed}."), full),
                tool(SECRET, "Named for the secret.", ToolMeta::default()),
                tool(
                    "deep",
                    "Its output schema nests too deep.",
                    ToolMeta {
                        output_schema: Some(nested(bounds::MAX_JSON_DEPTH + 1)),
                        ..ToolMeta::default()
                    },
                ),
                tool(
                    "wordy",
                    &"w".repeat(bounds::MAX_TOOL_DEFINITION_BYTES),
                    ToolMeta::default(),
                ),
            ],
            hidden: Vec::new(),
        };
        gate().listing(&mut listing);
        let served: Vec<&str> = listing.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(served, ["search"]);
        let search = &listing.tools[0];
        let shown = format!(
            "{} {} {} {:?}",
            search.schema.description(),
            search.schema.to_value(),
            serde_json::to_string(&search.meta).unwrap(),
            search.meta.wire_meta
        );
        assert!(!shown.contains(SECRET) && !shown.contains(&reversed), "{shown}");
        assert!(!shown.contains(&hex::encode(SECRET)), "{shown}");
        assert_eq!(shown.matches("[redacted:TOKEN]").count(), 5, "{shown}");
        let hidden: Vec<(&str, &str)> = listing
            .hidden
            .iter()
            .map(|h| (h.name.as_str(), h.reason.as_str()))
            .collect();
        assert_eq!(
            hidden[0],
            ("[redacted:TOKEN]", "its name holds a secret value the host holds")
        );
        assert!(
            hidden[1].0 == "deep" && hidden[1].1.contains("deeper than 64"),
            "{hidden:?}"
        );
        assert!(
            hidden[2].0 == "wordy" && hidden[2].1.contains("more than the 1048576"),
            "{hidden:?}"
        );
    }

    #[test]
    fn a_results_structured_content_is_redacted_after_decoding() {
        let escaped: String = SECRET.chars().map(|c| format!("\\u{:04x}", c as u32)).collect();
        let output = CallOutput::new(vec![
            Block::text(format!("tail {}", &SECRET[..5])),
            Block::text(format!("{} head", &SECRET[5..])),
        ])
        .with_structured(json!({"k": escaped}));
        let served = gate().result("t", usize::MAX, output);
        let wire = serde_json::to_string(&served.structured()).unwrap() + &served.text();
        assert!(!wire.contains(SECRET) && !wire.contains(&escaped), "{wire}");
        assert!(
            !wire.contains(&SECRET[..5]) && !wire.contains(&SECRET[5..]),
            "{wire}"
        );
        assert!(wire.contains("[redacted:TOKEN]"), "{wire}");
    }

    #[test]
    fn errors_texts_and_messages_are_redacted() {
        let error = gate().error(ToolError::Failed(format!("denied for {SECRET}")));
        assert_eq!(error, ToolError::Failed("denied for [redacted:TOKEN]".into()));
        assert_eq!(gate().error(ToolError::Cancelled), ToolError::Cancelled);
        let message = json!({"messages": [{"text": format!("use {}", SECRET.to_lowercase())}]});
        let clean = gate().message(message).unwrap();
        assert_eq!(clean["messages"][0]["text"], "use [redacted:TOKEN]");
        // With no secret held, a message passes untouched.
        let none = Gate::new([]);
        assert_eq!(none.message(json!({"a": SECRET})), Some(json!({"a": SECRET})));
        assert_eq!(none.text(SECRET), SECRET);
    }
}
