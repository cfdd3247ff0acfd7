//! Property tests of coercion and validation, over schemas a plugin may
//! have built and arguments a model may send: nothing panics; a refusal is
//! the message for the model (naming the tool, showing what was received);
//! accepted arguments are accepted again unchanged, so coercion converges in
//! one pass and validation agrees with it.

use proptest::prelude::*;
use serde_json::{Map, Value, json};

use super::check;
use crate::fuzzing::{config, json_value, name};

fn typ() -> impl Strategy<Value = Value> {
    prop_oneof![
        6 => prop::sample::select(vec!["string", "integer", "number", "boolean", "array", "object", "null"])
            .prop_map(Value::from),
        1 => Just(json!(["string", "null"])),
        1 => Just(json!(["integer", "string"])),
        1 => Just(json!(["array", "string"])),
        1 => Just(json!("strung")),
        1 => json_value(),
    ]
}

/// A property schema: a type with some keywords, nested arrays and objects,
/// or any JSON at all.
fn property() -> impl Strategy<Value = Value> {
    let keywords = (
        typ(),
        prop::option::of(prop::collection::vec(json_value(), 0..4)),
        prop::option::of(json_value()),
        prop::option::of(prop_oneof![any::<f64>().prop_map(Value::from), json_value()]),
        prop::option::of(prop_oneof![any::<i64>().prop_map(Value::from), json_value()]),
        prop::option::of(0u64..8),
    )
        .prop_map(|(typ, options, constant, minimum, maximum, length)| {
            let mut schema = Map::new();
            schema.insert("type".into(), typ);
            if let Some(options) = options {
                schema.insert("enum".into(), Value::Array(options));
            }
            if let Some(constant) = constant {
                schema.insert("const".into(), constant);
            }
            if let Some(minimum) = minimum {
                schema.insert("minimum".into(), minimum);
            }
            if let Some(maximum) = maximum {
                schema.insert("maximum".into(), maximum);
            }
            if let Some(length) = length {
                for key in ["minLength", "maxLength", "minItems", "maxItems"] {
                    schema.insert(key.into(), json!(length));
                }
            }
            Value::Object(schema)
        });
    let leaf = prop_oneof![6 => keywords, 1 => json_value()];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            inner
                .clone()
                .prop_map(|items| json!({"type": "array", "items": items})),
            object_schema(inner),
        ]
    })
}

fn object_schema(property: impl Strategy<Value = Value>) -> impl Strategy<Value = Value> {
    (
        prop::collection::vec((name(), property), 0..5),
        prop::collection::vec(name(), 0..3),
        prop::option::of(any::<bool>()),
    )
        .prop_map(|(properties, required, closed)| {
            let mut schema = json!({
                "type": "object",
                "properties": properties.into_iter().collect::<Map<_, _>>(),
                "required": required,
            });
            if let Some(closed) = closed {
                schema["additionalProperties"] = json!(!closed);
            }
            schema
        })
}

/// A value as a model sends it: any JSON, or JSON written as a string.
fn argument() -> impl Strategy<Value = Value> {
    prop_oneof![
        3 => json_value(),
        1 => json_value().prop_map(|v| Value::String(v.to_string())),
        1 => prop::sample::select(vec!["42", " 7 ", "true", "false", "1e400", "-0", "null", "[1,\"2\"]"])
            .prop_map(Value::from),
    ]
}

proptest! {
    #![proptest_config(config(768))]

    #[test]
    fn arguments_are_refused_with_a_message_or_accepted_for_good(
        schema in prop_oneof![6 => object_schema(property()), 1 => json_value()],
        args in prop::collection::vec((name(), argument()), 0..6),
    ) {
        let mut args: Map<String, Value> = args.into_iter().collect();
        match check("fuzzed", &schema, &mut args) {
            Ok(()) => {
                let mut again = args.clone();
                let second = check("fuzzed", &schema, &mut again);
                prop_assert!(second.is_ok(), "accepted once, refused after: {:?}", second);
                prop_assert_eq!(again, args, "coercion did not converge");
            }
            Err(message) => {
                prop_assert!(message.starts_with("Validation failed for tool \"fuzzed\":\n  - "), "{}", message);
                prop_assert!(message.contains("\nReceived arguments:\n"), "{}", message);
            }
        }
    }
}
