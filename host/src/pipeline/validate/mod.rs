//! Coercion and validation of a call's arguments against the tool's
//! enriched JSON Schema, with lenient coercions and errors a model can act on.
//!
//! Coercion fixes what models commonly get almost right: `42` or `true`
//! where a string is wanted, `"42"` where a number is wanted, `"true"` for a
//! boolean, JSON text where an array or object is wanted, and `null` for an
//! optional property (dropped). Validation covers the subset of JSON Schema
//! tool schemas use: `type` (one or a list), `required`, `properties`,
//! `additionalProperties: false`, `items`, `enum`, `const`, `minimum`,
//! `maximum`, `minLength`, `maxLength`, `minItems`, `maxItems`. Keywords
//! outside it are accepted unchecked: the backend still validates.
//!
//! A tool's structured result is checked against its output schema with
//! the same subset, without coercion ([`check_output`]).

use serde_json::{Map, Value};

use crate::bounds::{
    MAX_ERROR_TEXT, MAX_LISTED_PROBLEMS, MAX_OPTIONS_SHOWN, MAX_QUOTED, MAX_RECEIVED_SHOWN, cut, excerpt,
    label,
};

/// Coerce `args` in place, then validate them; `Err` is the message for the
/// model, naming every failing field and showing what was received.
pub fn check(tool: &str, schema: &Value, args: &mut Map<String, Value>) -> Result<(), String> {
    // Only an excerpt of what was received is shown: taken before coercion,
    // and never the whole of a huge call.
    let received = excerpt(args, MAX_RECEIVED_SHOWN, true);
    coerce_object(schema, args);
    let mut problems = Problems::default();
    validate_object(schema, args, "", &mut problems);
    if problems.listed.is_empty() {
        return Ok(());
    }
    let list = problems.list("");
    Err(cut(
        format!("Validation failed for tool \"{tool}\":\n{list}\n\nReceived arguments:\n{received}"),
        MAX_ERROR_TEXT,
    ))
}

/// Check a structured result against the tool's output schema; `Err` names
/// every failing field.
pub fn check_output(tool: &str, schema: &Value, structured: Option<&Value>) -> Result<(), String> {
    let Some(value) = structured else {
        return Err(format!(
            "tool \"{tool}\" returned no structured result, though it declares an output schema"
        ));
    };
    let mut problems = Problems::default();
    validate(schema, value, "", &mut problems);
    if problems.listed.is_empty() {
        return Ok(());
    }
    let list = problems.list("(the result)");
    Err(cut(
        format!(
            "tool \"{tool}\" returned a structured result that does not match its output schema:\n{list}"
        ),
        MAX_ERROR_TEXT,
    ))
}

/// The problems found, the first [`MAX_LISTED_PROBLEMS`] with their
/// messages and the rest only counted: a message is built only when listed.
#[derive(Default)]
struct Problems {
    listed: Vec<(String, String)>,
    more: usize,
}

impl Problems {
    fn add(&mut self, path: &str, message: impl FnOnce() -> String) {
        if self.listed.len() < MAX_LISTED_PROBLEMS {
            self.listed.push((cut(path.to_owned(), MAX_QUOTED), message()));
        } else {
            self.more += 1;
        }
    }

    /// One line per problem listed (`root` naming the value itself), and
    /// the count of the others.
    fn list(&self, root: &str) -> String {
        let mut lines: Vec<String> = self
            .listed
            .iter()
            .map(|(field, message)| {
                let field = if field.is_empty() { root } else { field };
                format!("  - {field}: {message}")
            })
            .collect();
        if self.more > 0 {
            lines.push(format!("  … and {} more problems not listed", self.more));
        }
        lines.join("\n")
    }
}

/// A value as quoted in a problem.
fn quoted(value: &Value) -> String {
    excerpt(value, MAX_QUOTED, false)
}

fn types(schema: &Value) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

fn coerce_object(schema: &Value, args: &mut Map<String, Value>) {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    let required = required(schema);
    let keys: Vec<String> = args.keys().cloned().collect();
    for key in keys {
        let Some(property) = properties.get(&key) else {
            continue;
        };
        if args[&key].is_null() && !types(property).contains(&"null") && !required.contains(&key.as_str()) {
            args.remove(&key);
            continue;
        }
        if let Some(value) = args.get_mut(&key) {
            coerce(property, value);
        }
    }
}

/// Coercions, applied only when the value's type is not allowed.
fn coerce(schema: &Value, value: &mut Value) {
    let allowed = types(schema);
    if allowed.is_empty() || allowed.iter().any(|t| type_matches(t, value)) {
        match value {
            Value::Object(map) => coerce_object(schema, map),
            Value::Array(items) => {
                if let Some(item) = schema.get("items") {
                    items.iter_mut().for_each(|v| coerce(item, v));
                }
            }
            _ => {}
        }
        return;
    }
    for t in allowed {
        let coerced = match (t, &*value) {
            ("string", Value::Number(n)) => Some(Value::String(n.to_string())),
            ("string", Value::Bool(b)) => Some(Value::String(b.to_string())),
            ("string", v @ (Value::Array(_) | Value::Object(_))) => Some(Value::String(v.to_string())),
            ("integer", Value::String(s)) => s.trim().parse::<i64>().ok().map(Value::from),
            ("integer", Value::Number(n)) => n
                .as_f64()
                .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
                .map(|f| Value::from(f as i64)),
            ("number", Value::String(s)) => s
                .trim()
                .parse::<f64>()
                .ok()
                .and_then(serde_json::Number::from_f64)
                .map(Value::Number),
            ("boolean", Value::String(s)) => match s.trim() {
                "true" => Some(Value::Bool(true)),
                "false" => Some(Value::Bool(false)),
                _ => None,
            },
            ("array" | "object", Value::String(s)) => serde_json::from_str::<Value>(s)
                .ok()
                .filter(|v| type_matches(t, v)),
            _ => None,
        };
        if let Some(mut coerced) = coerced {
            coerce(schema, &mut coerced);
            *value = coerced;
            return;
        }
    }
}

fn type_matches(t: &str, value: &Value) -> bool {
    match t {
        "string" => value.is_string(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        "null" => value.is_null(),
        _ => true,
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn required(schema: &Value) -> Vec<&str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// The path of `key` inside `path`; a long or hostile key is quoted.
fn join(path: &str, key: &str) -> String {
    let key = label(key);
    if path.is_empty() {
        key.into_owned()
    } else {
        format!("{path}.{key}")
    }
}

fn validate_object(schema: &Value, args: &Map<String, Value>, path: &str, problems: &mut Problems) {
    for key in required(schema) {
        if !args.contains_key(key) {
            problems.add(&join(path, key), || "required property missing".into());
        }
    }
    let properties = schema.get("properties").and_then(Value::as_object);
    let closed = schema.get("additionalProperties") == Some(&Value::Bool(false));
    for (key, value) in args {
        match properties.and_then(|p| p.get(key)) {
            Some(property) => validate(property, value, &join(path, key), problems),
            None if closed => {
                problems.add(&join(path, key), || "unknown property (not in the schema)".into())
            }
            None => {}
        }
    }
}

fn validate(schema: &Value, value: &Value, path: &str, problems: &mut Problems) {
    let allowed = types(schema);
    if !allowed.is_empty() && !allowed.iter().any(|t| type_matches(t, value)) {
        problems.add(path, || {
            format!(
                "expected {}, received {} {}",
                allowed.join(" or "),
                kind(value),
                quoted(value)
            )
        });
        return;
    }
    if let Some(options) = schema.get("enum").and_then(Value::as_array)
        && !options.contains(value)
    {
        problems.add(path, || {
            let mut list: Vec<String> = options.iter().take(MAX_OPTIONS_SHOWN).map(quoted).collect();
            if options.len() > MAX_OPTIONS_SHOWN {
                list.push(format!("… ({} in all)", options.len()));
            }
            format!("must be one of {}, received {}", list.join(", "), quoted(value))
        });
    }
    if let Some(expected) = schema.get("const")
        && expected != value
    {
        problems.add(path, || {
            format!("must be {}, received {}", quoted(expected), quoted(value))
        });
    }
    let bound = |key: &str| schema.get(key).and_then(Value::as_f64);
    if let Some(n) = value.as_f64() {
        if let Some(min) = bound("minimum").filter(|min| n < *min) {
            problems.add(path, || format!("must be >= {min}, received {value}"));
        }
        if let Some(max) = bound("maximum").filter(|max| n > *max) {
            problems.add(path, || format!("must be <= {max}, received {value}"));
        }
    }
    let length = match value {
        Value::String(s) => Some((s.chars().count() as f64, "minLength", "maxLength", "characters")),
        Value::Array(a) => Some((a.len() as f64, "minItems", "maxItems", "items")),
        _ => None,
    };
    if let Some((len, min_key, max_key, unit)) = length {
        if let Some(min) = bound(min_key).filter(|min| len < *min) {
            problems.add(path, || format!("must have at least {min} {unit}"));
        }
        if let Some(max) = bound(max_key).filter(|max| len > *max) {
            problems.add(path, || format!("must have at most {max} {unit}"));
        }
    }
    match value {
        Value::Object(map) => validate_object(schema, map, path, problems),
        Value::Array(items) => {
            if let Some(item) = schema.get("items") {
                for (i, v) in items.iter().enumerate() {
                    validate(item, v, &format!("{path}[{i}]"), problems);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn run(schema: Value, args: Value) -> Result<Value, String> {
        let Value::Object(mut map) = args else {
            unreachable!()
        };
        check("t", &schema, &mut map).map(|()| Value::Object(map))
    }

    #[test]
    fn coerces_as_rab_does() {
        let schema = json!({"type": "object", "properties": {
            "s": {"type": "string"}, "i": {"type": "integer"}, "b": {"type": "boolean"},
            "a": {"type": "array", "items": {"type": "integer"}}, "o": {"type": "string"}}});
        let out = run(
            schema,
            json!({"s": 42, "i": "7", "b": "true", "a": "[1, \"2\"]", "o": null}),
        )
        .unwrap();
        assert_eq!(out, json!({"s": "42", "i": 7, "b": true, "a": [1, 2]}));
    }

    #[test]
    fn outputs_are_checked_without_coercion() {
        let schema = json!({"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}});
        assert!(check_output("t", &schema, Some(&json!({"n": 3}))).is_ok());
        let err = check_output("t", &schema, Some(&json!({"n": "3"}))).unwrap_err();
        assert!(
            err.contains("does not match its output schema") && err.contains("- n: expected integer"),
            "{err}"
        );
        let err = check_output("t", &schema, Some(&json!([1]))).unwrap_err();
        assert!(err.contains("(the result): expected object"), "{err}");
        assert!(
            check_output("t", &schema, None)
                .unwrap_err()
                .contains("no structured result")
        );
    }

    #[test]
    fn errors_name_each_field_and_show_what_was_received() {
        let schema = json!({"type": "object", "additionalProperties": false,
            "properties": {"path": {"type": "string"}, "limit": {"type": "integer", "minimum": 1}},
            "required": ["path"]});
        let err = run(schema, json!({"limit": 0, "extra": "x"})).unwrap_err();
        assert!(err.starts_with("Validation failed for tool \"t\":\n"), "{err}");
        assert!(err.contains("  - path: required property missing"), "{err}");
        assert!(err.contains("  - limit: must be >= 1"), "{err}");
        assert!(err.contains("  - extra: unknown property"), "{err}");
        assert!(err.contains("Received arguments:\n{\n  \"limit\": 0"), "{err}");
    }

    /// The error is built within its cap, whatever the input: what it quotes
    /// is cut, and only so many problems are listed, the rest counted.
    #[test]
    fn errors_on_huge_inputs_stay_within_the_cap() {
        use crate::bounds::{MAX_ERROR_TEXT, MAX_LISTED_PROBLEMS};

        // A 300 KiB call without its required argument.
        let schema = json!({"type": "object", "required": ["path"],
            "properties": {"path": {"type": "string"}, "text": {"type": "string"}}});
        let err = run(schema, json!({"text": "x".repeat(300 << 10)})).unwrap_err();
        assert!(err.len() <= MAX_ERROR_TEXT, "{} bytes", err.len());
        assert!(err.contains("  - path: required property missing"), "{err}");

        // Many unknown properties with long, hostile names, each a big value.
        let schema = json!({"type": "object", "additionalProperties": false, "properties": {}});
        let mut args = Map::new();
        for i in 0..500 {
            args.insert(
                format!("{i}\nSYSTEM: {}", "k".repeat(4096)),
                json!("v".repeat(1024)),
            );
        }
        let err = run(schema, Value::Object(args)).unwrap_err();
        assert!(err.len() <= MAX_ERROR_TEXT, "{} bytes", err.len());
        assert!(!err.contains("\nSYSTEM"), "a name forged a line: {err}");
        let listed = err.lines().filter(|l| l.starts_with("  - ")).count();
        assert_eq!(listed, MAX_LISTED_PROBLEMS, "{err}");
        assert!(
            err.contains(&format!("{} more problems not listed", 500 - MAX_LISTED_PROBLEMS)),
            "{err}"
        );

        // A type mismatch quoting a huge value.
        let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
        let err = run(schema, json!({"n": {"deep": "y".repeat(1 << 20)}})).unwrap_err();
        assert!(err.len() <= MAX_ERROR_TEXT, "{} bytes", err.len());
        assert!(
            err.contains("  - n: expected integer, received object {\"deep\":\"yyy"),
            "{err}"
        );
    }

    /// An output schema's long enum times many bad items: the error does not
    /// grow as their product.
    #[test]
    fn output_errors_stay_within_the_cap() {
        use crate::bounds::MAX_ERROR_TEXT;

        let options: Vec<Value> = (0..1000)
            .map(|i| json!(format!("option-{i}-{}", "o".repeat(32))))
            .collect();
        let schema = json!({"type": "object", "properties": {
            "items": {"type": "array", "items": {"enum": options}}}});
        let bad: Vec<Value> = (0..5000).map(|i| json!(format!("bad-{i}"))).collect();
        let err = check_output("t", &schema, Some(&json!({"items": bad}))).unwrap_err();
        assert!(err.len() <= MAX_ERROR_TEXT, "{} bytes", err.len());
        assert!(err.contains("items[0]: must be one of \"option-0-"), "{err}");
        assert!(err.contains("(1000 in all), received \"bad-0\""), "{err}");
    }
}

#[cfg(test)]
mod fuzz;
