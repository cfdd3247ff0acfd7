//! Tool input schemas as the host owns them, and the checked edits plugins
//! make to them through the `tool-schema` handle. Call arguments, lent
//! through the `tool-args` handle, are `args_edit`'s.
//!
//! This module owns the data and its invariants (a property removed is also
//! dropped from `required`; `required` names only existing properties; every
//! property schema is a JSON object; enums are non-empty), and the journal of
//! who changed what. It does not own the WASM plumbing (see
//! `plugin::host_api`) nor the order plugins run in (see `enrich`).
//!
//! Sizes are bounded three ways (values in `bounds`): each value a plugin
//! sends, by its output cap; a tool's whole schema, by
//! [`MAX_SCHEMA_BYTES`] over every edit of every enricher (each edit is
//! measured against the schema as it stands, and one that would grow it
//! past the cap is undone and refused); and what the plugins of one call
//! write into its arguments, by the room an
//! [`ArgsEdit`](crate::args_edit::ArgsEdit) is lent with (`args_edit`).

use std::sync::Arc;

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::bounds::{MAX_ENUM_VALUES, MAX_PROPERTIES, MAX_PROPERTY_NAME, MAX_SCHEMA_BYTES, encoded_len};

/// Why an edit was refused. Mirrors the WIT `edit-error` variant.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EditError {
    #[error("no such field `{0}`")]
    NoSuchField(String),
    #[error("invalid JSON: {0}")]
    InvalidJson(String),
    #[error("invalid schema: {0}")]
    InvalidSchema(String),
    #[error("value of {0} bytes is larger than allowed")]
    TooLarge(u64),
    #[error("this handle is read-only")]
    ReadOnly,
}

/// A tool's input schema: a JSON object with `type: object`, `properties`
/// and `required`, plus the tool's description.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSchema {
    description: String,
    /// The schema object; always has an object `properties` and an array
    /// `required` (possibly empty), so edits never need to create them.
    object: Map<String, Value>,
}

impl ToolSchema {
    /// The description and the schema object, for the gate and a plugin's
    /// redactor to redact (which keep `properties` an object: only strings change).
    pub(crate) fn parts_mut(&mut self) -> (&mut String, &mut Map<String, Value>) {
        (&mut self.description, &mut self.object)
    }

    /// Build from a tool description and a JSON Schema value. Anything that
    /// is not an object schema is rejected with the reason.
    pub fn new(description: impl Into<String>, schema: Value) -> Result<Self, EditError> {
        let Value::Object(mut object) = schema else {
            return Err(EditError::InvalidSchema(
                "a tool's input schema must be a JSON object".into(),
            ));
        };
        match object.get("type") {
            None => {
                object.insert("type".into(), json!("object"));
            }
            Some(Value::String(t)) if t == "object" => {}
            Some(other) => {
                return Err(EditError::InvalidSchema(format!(
                    "a tool's input schema must have \"type\": \"object\", not {other}"
                )));
            }
        }
        match object.get("properties") {
            None => {
                object.insert("properties".into(), json!({}));
            }
            Some(Value::Object(props)) => {
                for (name, prop) in props {
                    check_property_schema(name, prop)?;
                }
            }
            Some(_) => {
                return Err(EditError::InvalidSchema("`properties` must be an object".into()));
            }
        }
        let required = match object.remove("required") {
            None => Vec::new(),
            Some(Value::Array(items)) => items
                .into_iter()
                .map(|v| match v {
                    Value::String(s) => Ok(s),
                    other => Err(EditError::InvalidSchema(format!(
                        "`required` holds a non-string: {other}"
                    ))),
                })
                .collect::<Result<Vec<_>, _>>()?,
            Some(_) => {
                return Err(EditError::InvalidSchema("`required` must be an array".into()));
            }
        };
        let mut schema = Self {
            description: description.into(),
            object,
        };
        // Drop dangling and repeated names instead of failing: upstream
        // schemas have them, and JSON Schema wants each name once.
        let mut required: Vec<String> = required
            .into_iter()
            .filter(|r| schema.properties().contains_key(r))
            .collect();
        let mut seen = std::collections::HashSet::new();
        required.retain(|r| seen.insert(r.clone()));
        schema.object.insert("required".into(), json!(required));
        Ok(schema)
    }

    /// What the model is told the tool does.
    pub fn description(&self) -> &str {
        &self.description
    }

    pub(crate) fn set_description(&mut self, description: String) {
        self.description = description;
    }

    fn properties(&self) -> &Map<String, Value> {
        self.object["properties"]
            .as_object()
            .expect("invariant: properties is an object")
    }

    fn properties_mut(&mut self) -> &mut Map<String, Value> {
        self.object
            .get_mut("properties")
            .and_then(Value::as_object_mut)
            .expect("invariant: properties is an object")
    }

    fn required_mut(&mut self) -> &mut Vec<Value> {
        self.object
            .get_mut("required")
            .and_then(Value::as_array_mut)
            .expect("invariant: required is an array")
    }

    /// The names of its arguments.
    pub fn property_names(&self) -> Vec<String> {
        self.properties().keys().cloned().collect()
    }

    /// The schema of argument `name`.
    pub fn property(&self, name: &str) -> Option<&Value> {
        self.properties().get(name)
    }

    /// The arguments that must be given.
    pub fn required(&self) -> Vec<String> {
        self.object["required"]
            .as_array()
            .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect())
            .unwrap_or_default()
    }

    /// Add or replace a property; returns true if it replaced one.
    pub fn set_property(&mut self, name: &str, schema: Value) -> Result<bool, EditError> {
        check_name(name)?;
        check_property_schema(name, &schema)?;
        let props = self.properties_mut();
        if !props.contains_key(name) && props.len() >= MAX_PROPERTIES {
            return Err(EditError::InvalidSchema(format!(
                "more than {MAX_PROPERTIES} properties"
            )));
        }
        Ok(props.insert(name.to_owned(), schema).is_some())
    }

    /// Remove properties and their `required` entries; returns how many existed.
    pub fn remove_params(&mut self, names: &[String]) -> u32 {
        let props = self.properties_mut();
        let removed = names
            .iter()
            .filter(|n| props.shift_remove(n.as_str()).is_some())
            .count();
        self.required_mut()
            .retain(|r| !names.iter().any(|n| r.as_str() == Some(n.as_str())));
        removed as u32
    }

    pub(crate) fn set_required(&mut self, name: &str, required: bool) -> Result<(), EditError> {
        if !self.properties().contains_key(name) {
            return Err(EditError::NoSuchField(name.to_owned()));
        }
        let list = self.required_mut();
        let present = list.iter().any(|r| r.as_str() == Some(name));
        if required && !present {
            list.push(json!(name));
        } else if !required && present {
            list.retain(|r| r.as_str() != Some(name));
        }
        Ok(())
    }

    /// Restrict an existing property (or the items of an array property) to
    /// string values.
    pub fn set_enum(&mut self, name: &str, values: Vec<String>) -> Result<(), EditError> {
        check_enum(name, &values)?;
        let prop = self.property_object_mut(name)?;
        let target = if prop.get("type").and_then(Value::as_str) == Some("array") {
            prop.entry("items")
                .or_insert_with(|| json!({}))
                .as_object_mut()
                .ok_or_else(|| EditError::InvalidSchema(format!("`{name}.items` is not an object")))?
        } else {
            prop
        };
        target.remove("anyOf");
        target.insert("type".into(), json!("string"));
        target.insert("enum".into(), json!(values));
        Ok(())
    }

    /// Add argument `name` taking one of `values`.
    pub fn add_enum_param(
        &mut self,
        name: &str,
        description: String,
        values: Vec<String>,
    ) -> Result<(), EditError> {
        check_enum(name, &values)?;
        self.set_property(
            name,
            json!({"type": "string", "description": description, "enum": values}),
        )?;
        Ok(())
    }

    pub(crate) fn set_property_description(
        &mut self,
        name: &str,
        description: String,
    ) -> Result<(), EditError> {
        self.property_object_mut(name)?
            .insert("description".into(), json!(description));
        Ok(())
    }

    pub(crate) fn set_default(&mut self, name: &str, value: Value) -> Result<(), EditError> {
        self.property_object_mut(name)?.insert("default".into(), value);
        Ok(())
    }

    /// Put property `name` back as it was (`None`: absent), undoing an edit.
    fn restore(&mut self, name: &str, old: Option<Value>) {
        let props = self.properties_mut();
        match old {
            // An existing key keeps its place.
            Some(value) => {
                props.insert(name.to_owned(), value);
            }
            None => {
                props.shift_remove(name);
            }
        }
    }

    /// The schema's size as JSON text, its description included.
    pub fn encoded_len(&self) -> usize {
        encoded_len(&self.object) + encoded_len(&self.description)
    }

    fn property_object_mut(&mut self, name: &str) -> Result<&mut Map<String, Value>, EditError> {
        self.properties_mut()
            .get_mut(name)
            .and_then(Value::as_object_mut)
            .ok_or_else(|| EditError::NoSuchField(name.to_owned()))
    }

    /// The schema object as JSON, without the description (which MCP carries
    /// beside the input schema).
    pub fn to_value(&self) -> Value {
        let mut object = self.object.clone();
        if self.required().is_empty() {
            object.remove("required");
        }
        Value::Object(object)
    }
}

fn check_name(name: &str) -> Result<(), EditError> {
    let ok = !name.is_empty()
        && name.len() <= MAX_PROPERTY_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    if ok {
        Ok(())
    } else {
        Err(EditError::InvalidSchema(format!(
            "property name `{name}` must be 1 to {MAX_PROPERTY_NAME} characters of [A-Za-z0-9_.-]"
        )))
    }
}

fn check_enum(name: &str, values: &[String]) -> Result<(), EditError> {
    if values.is_empty() {
        return Err(EditError::InvalidSchema(format!("enum for `{name}` is empty")));
    }
    if values.len() > MAX_ENUM_VALUES {
        return Err(EditError::InvalidSchema(format!(
            "enum for `{name}` has {} values, more than {MAX_ENUM_VALUES}",
            values.len()
        )));
    }
    Ok(())
}

/// What one property adds to its schema's JSON text: `"name":value,`.
fn entry_len(name: &str, value: &Value) -> usize {
    encoded_len(&name) + 2 + encoded_len(value)
}

/// The checks a property schema must pass: an object whose `type` (if any)
/// is a known JSON Schema type and whose `enum` (if any) is non-empty.
fn check_property_schema(name: &str, schema: &Value) -> Result<(), EditError> {
    const TYPES: [&str; 7] = [
        "string", "number", "integer", "boolean", "array", "object", "null",
    ];
    let Value::Object(object) = schema else {
        return Err(EditError::InvalidSchema(format!(
            "schema of `{name}` must be a JSON object, not {schema}"
        )));
    };
    let type_ok = |t: &Value| t.as_str().is_some_and(|t| TYPES.contains(&t));
    match object.get("type") {
        None => {}
        Some(Value::Array(ts)) if !ts.is_empty() && ts.iter().all(type_ok) => {}
        Some(t) if type_ok(t) => {}
        Some(t) => {
            return Err(EditError::InvalidSchema(format!(
                "`{name}` has an unknown type {t}"
            )));
        }
    }
    match object.get("enum") {
        None => Ok(()),
        Some(Value::Array(values)) if !values.is_empty() => Ok(()),
        Some(_) => Err(EditError::InvalidSchema(format!(
            "enum for `{name}` must be a non-empty array"
        ))),
    }
}

/// What an edit changed, for provenance.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// An argument added.
    Added,
    /// An argument's schema replaced.
    Replaced,
    /// An argument removed.
    Removed,
    /// An argument's allowed values set.
    SetEnum,
    /// An argument made required.
    SetRequired,
    /// An argument made optional.
    SetOptional,
    /// A description set.
    SetDescription,
    /// An argument's default set.
    SetDefault,
}

/// One change a plugin made to one tool's schema. `property` is `None` for
/// the tool's own description.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Change {
    pub plugin: Arc<str>,
    pub property: Option<String>,
    pub action: Action,
}

/// A schema lent to one plugin for one call: the schema, the size cap for
/// values the plugin sends, and the changes it made.
#[derive(Debug)]
pub struct SchemaEdit {
    pub schema: ToolSchema,
    pub changes: Vec<Change>,
    plugin: Arc<str>,
    max_value_bytes: usize,
    /// The schema's encoded size, kept up to date by every edit.
    size: usize,
}

impl SchemaEdit {
    pub fn new(schema: ToolSchema, plugin: Arc<str>, max_value_bytes: usize) -> Self {
        let size = schema.encoded_len();
        Self {
            schema,
            changes: Vec::new(),
            plugin,
            max_value_bytes,
            size,
        }
    }

    /// Apply `edit` to property `name` and account for its size: an edit
    /// that grows the schema past [`MAX_SCHEMA_BYTES`] is undone and
    /// refused (one that shrinks it is always let through).
    fn grow<T>(
        &mut self,
        name: &str,
        edit: impl FnOnce(&mut ToolSchema) -> Result<T, EditError>,
    ) -> Result<T, EditError> {
        let old = self.schema.property(name).cloned();
        let before = old.as_ref().map_or(0, |v| entry_len(name, v));
        let out = edit(&mut self.schema)?;
        let after = self.schema.property(name).map_or(0, |v| entry_len(name, v));
        let size = (self.size + after).saturating_sub(before);
        if after > before && size > MAX_SCHEMA_BYTES {
            self.schema.restore(name, old);
            return Err(EditError::TooLarge(size as u64));
        }
        self.size = size;
        Ok(out)
    }

    /// Values of an enum: bounded in count, then in encoded bytes.
    fn check_enum_size(&self, name: &str, values: &[String]) -> Result<(), EditError> {
        check_enum(name, values)?;
        self.check_size(encoded_len(&values))
    }

    fn record(&mut self, property: Option<&str>, action: Action) {
        self.changes.push(Change {
            plugin: self.plugin.clone(),
            property: property.map(str::to_owned),
            action,
        });
    }

    fn check_size(&self, len: usize) -> Result<(), EditError> {
        if len > self.max_value_bytes {
            Err(EditError::TooLarge(len as u64))
        } else {
            Ok(())
        }
    }

    pub fn set_tool_description(&mut self, description: String) -> Result<(), EditError> {
        self.check_size(description.len())?;
        let size =
            (self.size + encoded_len(&description)).saturating_sub(encoded_len(&self.schema.description));
        if size > self.size && size > MAX_SCHEMA_BYTES {
            return Err(EditError::TooLarge(size as u64));
        }
        self.size = size;
        self.schema.set_description(description);
        self.record(None, Action::SetDescription);
        Ok(())
    }

    pub fn set_property(&mut self, name: &str, schema_json: &str) -> Result<bool, EditError> {
        self.check_size(schema_json.len())?;
        let value = parse_json(schema_json)?;
        let replaced = self.grow(name, |s| s.set_property(name, value))?;
        self.record(
            Some(name),
            if replaced { Action::Replaced } else { Action::Added },
        );
        Ok(replaced)
    }

    pub fn remove_params(&mut self, names: &[String]) -> u32 {
        let mut existing: Vec<String> = Vec::new();
        for name in names {
            // A name given twice is one removal.
            if self.schema.property(name).is_some() && !existing.contains(name) {
                existing.push(name.clone());
            }
        }
        let freed: usize = existing
            .iter()
            .filter_map(|n| self.schema.property(n).map(|v| entry_len(n, v)))
            .sum();
        self.size = self.size.saturating_sub(freed);
        let removed = self.schema.remove_params(names);
        for name in existing {
            self.record(Some(&name), Action::Removed);
        }
        removed
    }

    pub fn set_required(&mut self, name: &str, required: bool) -> Result<(), EditError> {
        self.schema.set_required(name, required)?;
        self.record(
            Some(name),
            if required {
                Action::SetRequired
            } else {
                Action::SetOptional
            },
        );
        Ok(())
    }

    pub fn set_enum(&mut self, name: &str, values: Vec<String>) -> Result<(), EditError> {
        self.check_enum_size(name, &values)?;
        self.grow(name, |s| s.set_enum(name, values))?;
        self.record(Some(name), Action::SetEnum);
        Ok(())
    }

    pub fn add_enum_param(
        &mut self,
        name: &str,
        description: String,
        values: Vec<String>,
    ) -> Result<(), EditError> {
        self.check_enum_size(name, &values)?;
        self.check_size(description.len() + encoded_len(&values))?;
        let existed = self.schema.property(name).is_some();
        self.grow(name, |s| s.add_enum_param(name, description, values))?;
        self.record(Some(name), if existed { Action::Replaced } else { Action::Added });
        Ok(())
    }

    pub fn set_description(&mut self, name: &str, description: String) -> Result<(), EditError> {
        self.check_size(description.len())?;
        self.grow(name, |s| s.set_property_description(name, description))?;
        self.record(Some(name), Action::SetDescription);
        Ok(())
    }

    pub fn set_default(&mut self, name: &str, value_json: &str) -> Result<(), EditError> {
        self.check_size(value_json.len())?;
        let value = parse_json(value_json)?;
        self.grow(name, |s| s.set_default(name, value))?;
        self.record(Some(name), Action::SetDefault);
        Ok(())
    }
}

/// `text` parsed as JSON, or the edit error a plugin is given.
pub(crate) fn parse_json(text: &str) -> Result<Value, EditError> {
    serde_json::from_str(text).map_err(|e| EditError::InvalidJson(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> ToolSchema {
        ToolSchema::new(
            "Create an issue",
            json!({"type": "object", "properties": {"title": {"type": "string"}, "priority": {"type": "string"}},
                   "required": ["title", "priority", "ghost"]}),
        )
        .unwrap()
    }

    #[test]
    fn dangling_required_names_are_dropped() {
        assert_eq!(schema().required(), vec!["title", "priority"]);
    }

    #[test]
    fn removing_a_param_keeps_required_consistent() {
        let mut s = schema();
        assert_eq!(s.remove_params(&["priority".into(), "nope".into()]), 1);
        assert_eq!(s.required(), vec!["title"]);
        assert_eq!(s.to_value()["properties"].as_object().unwrap().len(), 1);
    }

    #[test]
    fn set_enum_on_array_targets_items() {
        let mut s = schema();
        s.set_property("labels", json!({"type": "array", "items": {"type": "string"}}))
            .unwrap();
        s.set_enum("labels", vec!["a".into(), "b".into()]).unwrap();
        assert_eq!(s.property("labels").unwrap()["items"]["enum"], json!(["a", "b"]));
    }

    #[test]
    fn invalid_edits_are_refused() {
        let mut s = schema();
        assert!(matches!(
            s.set_property("x", json!("str")),
            Err(EditError::InvalidSchema(_))
        ));
        assert!(matches!(
            s.set_property("bad name", json!({})),
            Err(EditError::InvalidSchema(_))
        ));
        assert!(matches!(
            s.set_enum("title", vec![]),
            Err(EditError::InvalidSchema(_))
        ));
        assert!(matches!(
            s.set_required("ghost", true),
            Err(EditError::NoSuchField(_))
        ));
        assert!(matches!(
            s.set_property("t", json!({"type": "strung"})),
            Err(EditError::InvalidSchema(_))
        ));
    }

    #[test]
    fn edits_are_journaled_and_capped() {
        let mut e = SchemaEdit::new(schema(), "p".into(), 64);
        e.set_property("a", r#"{"type":"string"}"#).unwrap();
        e.remove_params(&["title".into()]);
        assert_eq!(e.changes.len(), 2);
        assert!(matches!(
            e.set_tool_description("x".repeat(65)),
            Err(EditError::TooLarge(65))
        ));
        assert!(matches!(
            e.set_property("b", "{not json"),
            Err(EditError::InvalidJson(_))
        ));
    }
}

#[cfg(test)]
mod fuzz;
