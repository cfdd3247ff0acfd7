//! Property tests of the `tool-schema` handle, fed what a hostile plugin
//! may send: whatever the edits, nothing panics; after every edit the
//! schema is an object schema whose properties pass the property checks
//! and whose `required` names existing properties, each once; a refused
//! edit changes nothing, the journal included. (The `tool-args` handle's
//! are in `args_edit`.)

use std::collections::BTreeSet;

use proptest::prelude::*;
use serde_json::{Map, Value, json};

use super::*;
use crate::fuzzing::{config, hostile_string, json_text, json_value, name};

/// The per-value cap the edits run under: small, so the fuzzer hits it.
const CAP: usize = 256;

#[derive(Debug, Clone)]
enum Edit {
    ToolDescription(String),
    SetProperty(String, String),
    Remove(Vec<String>),
    Required(String, bool),
    Enum(String, Vec<String>),
    AddEnum(String, String, Vec<String>),
    Description(String, String),
    Default(String, String),
}

/// Property schemas as JSON text: well-formed, subtly wrong, or anything.
fn property_schema() -> impl Strategy<Value = String> {
    prop_oneof![
        2 => prop::sample::select(vec![
            r#"{"type":"string"}"#,
            r#"{"type":"integer","minimum":1}"#,
            r#"{"type":"array","items":{"type":"string"}}"#,
            r#"{"type":"array","items":3}"#,
            r#"{"type":"array"}"#,
            r#"{"type":["string","null"]}"#,
            r#"{"type":[]}"#,
            r#"{"type":"strung"}"#,
            r#"{"enum":[]}"#,
            r#"{"enum":["a"]}"#,
            r#"{"anyOf":[{"type":"string"}]}"#,
            "{}",
            "[]",
            r#""x""#,
        ])
        .prop_map(str::to_owned),
        1 => json_text(),
    ]
}

fn values() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(hostile_string(), 0..5)
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        1 => hostile_string().prop_map(Edit::ToolDescription),
        3 => (name(), property_schema()).prop_map(|(n, s)| Edit::SetProperty(n, s)),
        1 => prop::collection::vec(name(), 0..3).prop_map(Edit::Remove),
        2 => (name(), any::<bool>()).prop_map(|(n, r)| Edit::Required(n, r)),
        1 => (name(), values()).prop_map(|(n, v)| Edit::Enum(n, v)),
        1 => (name(), hostile_string(), values()).prop_map(|(n, d, v)| Edit::AddEnum(n, d, v)),
        1 => (name(), hostile_string()).prop_map(|(n, d)| Edit::Description(n, d)),
        1 => (name(), json_text()).prop_map(|(n, v)| Edit::Default(n, v)),
    ]
}

/// A tool's input schema as a vendor or an upstream server hands it over.
fn schema_value() -> impl Strategy<Value = Value> {
    let property = property_schema().prop_map(|text| serde_json::from_str(&text).unwrap_or(Value::Null));
    let required = prop::collection::vec(
        prop_oneof![4 => name().prop_map(Value::String), 1 => json_value()],
        0..6,
    );
    let typ = prop_oneof![4 => Just(json!("object")), 1 => json_value()];
    prop_oneof![
        1 => json_value(),
        4 => (prop::collection::vec((name(), property), 0..6), required, typ).prop_map(
            |(properties, required, typ)| {
                json!({
                    "type": typ,
                    "properties": properties.into_iter().collect::<Map<_, _>>(),
                    "required": required,
                })
            }
        ),
    ]
}

fn apply(edit: &mut SchemaEdit, op: &Edit) -> Result<(), EditError> {
    match op.clone() {
        Edit::ToolDescription(d) => edit.set_tool_description(d),
        Edit::SetProperty(n, s) => edit.set_property(&n, &s).map(drop),
        Edit::Remove(names) => {
            edit.remove_params(&names);
            Ok(())
        }
        Edit::Required(n, r) => edit.set_required(&n, r),
        Edit::Enum(n, v) => edit.set_enum(&n, v),
        Edit::AddEnum(n, d, v) => edit.add_enum_param(&n, d, v),
        Edit::Description(n, d) => edit.set_description(&n, d),
        Edit::Default(n, v) => edit.set_default(&n, &v),
    }
}

/// The module's invariants, checked on the JSON a client is sent.
fn valid(schema: &ToolSchema) -> Result<(), TestCaseError> {
    let value = schema.to_value();
    let object = value.as_object().expect("to_value is an object");
    prop_assert_eq!(object.get("type"), Some(&json!("object")));
    let Some(properties) = object.get("properties").and_then(Value::as_object) else {
        return Err(TestCaseError::fail(format!("no properties object: {value}")));
    };
    prop_assert!(properties.len() <= MAX_PROPERTIES);
    for (name, property) in properties {
        prop_assert!(
            check_property_schema(name, property).is_ok(),
            "property `{}` is not a valid schema: {}",
            name,
            property
        );
    }
    match object.get("required") {
        None => {}
        Some(Value::Array(names)) => {
            prop_assert!(!names.is_empty(), "an empty `required` is sent: {}", value);
            let mut seen = BTreeSet::new();
            for name in names {
                let Some(name) = name.as_str() else {
                    return Err(TestCaseError::fail(format!("non-string in required: {value}")));
                };
                prop_assert!(
                    properties.contains_key(name),
                    "`{}` required but absent: {}",
                    name,
                    value
                );
                prop_assert!(seen.insert(name), "`{}` required twice: {}", name, value);
            }
        }
        Some(other) => return Err(TestCaseError::fail(format!("required is {other}"))),
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn a_schema_handed_over_is_refused_or_made_valid(description in hostile_string(), schema in schema_value()) {
        if let Ok(schema) = ToolSchema::new(description, schema) {
            valid(&schema)?;
        }
    }

    #[test]
    fn edits_keep_the_schema_valid_and_refused_edits_change_nothing(
        start in schema_value(),
        edits in prop::collection::vec(edit(), 1..24),
    ) {
        let schema = ToolSchema::new("t", start)
            .unwrap_or_else(|_| ToolSchema::new("t", json!({"properties": {"a": {"type": "string"}}})).unwrap());
        let mut edit = SchemaEdit::new(schema, "fuzz".into(), CAP);
        for op in &edits {
            let (before, journal) = (edit.schema.clone(), edit.changes.len());
            let existed: usize = match op {
                Edit::Remove(names) => before.property_names().iter().filter(|p| names.contains(p)).count(),
                _ => 1,
            };
            match apply(&mut edit, op) {
                Ok(()) => {
                    prop_assert_eq!(edit.changes.len(), journal + existed, "journal after {:?}", op);
                    match op {
                        Edit::SetProperty(n, s) => {
                            let sent = serde_json::from_str::<Value>(s).ok();
                            prop_assert_eq!(edit.schema.property(n), sent.as_ref());
                        }
                        Edit::Required(n, r) => prop_assert_eq!(edit.schema.required().contains(n), *r),
                        _ => {}
                    }
                }
                Err(_) => {
                    prop_assert_eq!(&edit.schema, &before, "refused {:?} changed the schema", op);
                    prop_assert_eq!(edit.changes.len(), journal, "refused {:?} was journaled", op);
                }
            }
            valid(&edit.schema)?;
        }
    }
}
