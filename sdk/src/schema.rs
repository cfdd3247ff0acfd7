//! [`Schema`]: a tool's input schema, lent by the host to
//! `Enricher::enrich_schema`.
//!
//! The schema lives in the host. Every method here is one call to the host,
//! which validates the change and records that this plugin made it; nothing is
//! copied into the guest unless asked for (`property`, `to_value`). Property
//! schemas and values cross the boundary as JSON text and are
//! `serde_json::Value` on this side.

use serde_json::Value;

use crate::EditError;
use crate::bindings::shared::toolhost::plugin::types::ToolSchema;

/// A tool's input schema (a JSON Schema object whose top-level `properties`
/// are the tool's parameters), lent for the length of one `enrich_schema`
/// call.
///
/// Readers take `&self`, mutators `&mut self`.
pub struct Schema<'a> {
    handle: &'a ToolSchema,
}

impl<'a> Schema<'a> {
    pub(crate) fn from_handle(handle: &'a ToolSchema) -> Self {
        Schema { handle }
    }

    /// The tool's description shown to the model.
    pub fn tool_description(&self) -> String {
        self.handle.description()
    }

    /// Replace the tool's description. Fails if it is larger than the host
    /// accepts from this plugin.
    pub fn set_tool_description(&mut self, description: &str) -> Result<(), EditError> {
        Ok(self.handle.set_tool_description(description)?)
    }

    /// Names of the top-level properties, in order.
    pub fn property_names(&self) -> Vec<String> {
        self.handle.property_names()
    }

    /// Whether a top-level property `name` exists.
    pub fn has_property(&self, name: &str) -> bool {
        self.handle.get_property(name).is_some()
    }

    /// One property's schema, or `None` if it does not exist.
    pub fn property(&self, name: &str) -> Option<Value> {
        self.handle.get_property(name).map(|text| parse(&text))
    }

    /// Add a property, or replace it whole if it exists. `schema` must be a
    /// JSON object. Returns `true` if it replaced one.
    pub fn add_property(&mut self, name: &str, schema: &Value) -> Result<bool, EditError> {
        Ok(self.handle.set_property(name, &text(schema))?)
    }

    /// Add a property under the first free name of `name`, `_name`,
    /// `__name`, ... and return the name used (the reference's `safe_insert`:
    /// never replaces a parameter the tool already has).
    pub fn add_property_unique(&mut self, name: &str, schema: &Value) -> Result<String, EditError> {
        let existing = self.property_names();
        let mut candidate = name.to_owned();
        while existing.contains(&candidate) {
            candidate.insert(0, '_');
        }
        self.add_property(&candidate, schema)?;
        Ok(candidate)
    }

    /// Remove properties (and drop them from `required`). Names that do not
    /// exist are ignored. Returns how many were removed.
    pub fn remove_params(&mut self, names: &[&str]) -> u32 {
        let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
        self.handle.remove_params(&names)
    }

    /// The names listed in `required`, in order.
    pub fn required(&self) -> Vec<String> {
        self.handle.required()
    }

    /// Mark an existing property required or optional.
    pub fn set_required(&mut self, name: &str, required: bool) -> Result<(), EditError> {
        Ok(self.handle.set_required(name, required)?)
    }

    /// Restrict an existing property to the string values `values` (for an
    /// array property, its items). `values` must not be empty.
    pub fn set_enum<I, S>(&mut self, name: &str, values: I) -> Result<(), EditError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        Ok(self.handle.set_enum(name, &strings(values))?)
    }

    /// Add (or replace) a string property restricted to `values`, with a
    /// description. `values` must not be empty.
    pub fn add_enum_param<I, S>(&mut self, name: &str, description: &str, values: I) -> Result<(), EditError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        Ok(self.handle.add_enum_param(name, description, &strings(values))?)
    }

    /// Set an existing property's description.
    pub fn set_description(&mut self, name: &str, description: &str) -> Result<(), EditError> {
        Ok(self.handle.set_description(name, description)?)
    }

    /// Set an existing property's default value.
    pub fn set_default(&mut self, name: &str, value: &Value) -> Result<(), EditError> {
        Ok(self.handle.set_default(name, &text(value))?)
    }

    /// The whole schema. Prefer the narrower methods: they copy less.
    pub fn to_value(&self) -> Value {
        parse(&self.handle.to_json())
    }
}

fn strings<I, S>(values: I) -> Vec<String>
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    values.into_iter().map(|v| v.as_ref().to_owned()).collect()
}

/// Parse JSON text that the host produced. The host only hands out valid
/// JSON; should it not, the raw text is kept as a JSON string rather than
/// lost.
pub(crate) fn parse(text: &str) -> Value {
    // A string with nothing to unescape, the commonest argument value, is
    // taken as it is: serde_json's parser costs more than the copy in a guest.
    if let Some(plain) = text.strip_prefix('"').and_then(|t| t.strip_suffix('"'))
        && is_plain(plain)
    {
        return Value::String(plain.to_owned());
    }
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))
}

/// A value as the compact JSON text the host takes. `serde_json::to_string`
/// writes into one buffer; `Value::to_string` goes through `fmt::Display`,
/// which costs noticeably more in a guest, on every `set` of every call.
pub(crate) fn text(value: &Value) -> String {
    match value {
        Value::String(plain) if is_plain(plain) => {
            let mut text = String::with_capacity(plain.len() + 2);
            text.push('"');
            text.push_str(plain);
            text.push('"');
            text
        }
        _ => serde_json::to_string(value).expect("a JSON value always serialises"),
    }
}

/// Whether `s` is the same inside JSON quotes as outside them: no quote,
/// backslash or control character, which JSON escapes.
fn is_plain(s: &str) -> bool {
    !s.bytes().any(|b| b == b'"' || b == b'\\' || b < 0x20)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn plain_strings_read_and_write_as_serde_json_does() {
        for s in [
            "",
            "abc",
            "ünïcode ✓",
            "a/b",
            "\u{7f}",
            "quote\"d",
            "back\\slash",
            "new\nline",
            "\u{1}",
        ] {
            let value = Value::String(s.to_owned());
            let written = text(&value);
            assert_eq!(written, serde_json::to_string(&value).unwrap(), "{s:?}");
            assert_eq!(parse(&written), value, "{s:?}");
        }
        // Text that only looks like a plain string goes through the parser.
        assert_eq!(parse(r#""a\u0041""#), json!("aA"));
        assert_eq!(parse(r#"["x","y"]"#), json!(["x", "y"]));
        assert_eq!(parse("\""), json!("\""));
    }
}
