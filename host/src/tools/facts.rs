//! What the host knows and says of each native tool, in one place: its
//! name, title, description, input and output schemas and guidelines; how
//! far it reaches (the root's files, the network, or writes); its value
//! model (side effect, cost, freshness, follow-ups with their argument
//! projections, what a write makes stale); and how speculation treats it
//! (which tools `[speculation] native` covers, which one is answered from
//! a file loaded whole).
//!
//! Not here: running the tools (the rest of `tools`), the value-model
//! types and their layering (`value_model`), the speculation machinery.

use serde_json::{Value, json};

use crate::tool::{ToolAnnotations, ToolMeta, ToolSpec};
use crate::value_model::{CostModel, FollowUpLink, Layer, SideEffect, ValueClass, ValueModel, ValueModels};

/// Every native tool's name, served or not (`write` and `edit` only with a
/// writable root): reserved for the host (see `ownership`).
pub const NATIVE_NAMES: [&str; 7] = ["read", "glob", "grep", "ls", "web_fetch", "write", "edit"];

/// The tool answered from its file loaded whole
/// ([`NativeTools::load`](super::NativeTools::load), then
/// [`NativeTools::slice`](super::NativeTools::slice)): with speculation on,
/// one cached file answers every slice of it, for as long as the file on
/// disk is still the one read, and a file held that changes is read again.
pub const WHOLE_FILE: &str = "read";

/// Whether `name` reads only the files below the root (and so may be
/// prefetched when `[speculation] native` is on); `web_fetch` reaches the
/// network, and is prefetched only from the hosts `[speculation] hosts`
/// lists.
pub fn is_local(name: &str) -> bool {
    matches!(name, "read" | "glob" | "grep" | "ls")
}

/// Whether `name` changes files below the root.
fn writes(name: &str) -> bool {
    matches!(name, "write" | "edit")
}

/// The tools' specs (`write` and `edit` only if `writable`),
/// uncategorised (always listed), each with its title, output schema (the
/// JSON block it returns) and whether it reaches the network.
pub fn specs(writable: bool) -> Vec<ToolSpec> {
    let spec = |name: &str, description: &str, schema: Value| ToolSpec {
        name: name.into(),
        description: description.into(),
        category: None,
        input_schema: schema,
        meta: ToolMeta {
            title: Some(title(name)),
            guidelines: guidelines(name),
            output_schema: Some(output_schema(name)),
            annotations: ToolAnnotations {
                open_world_hint: Some(!is_local(name) && !writes(name)),
                ..ToolAnnotations::default()
            },
            ..ToolMeta::default()
        },
    };
    let mut specs = vec![
        spec(
            "read",
            "Read a text file below the tool root. Lines are numbered from 1; use offset and limit for large files.",
            json!({"type": "object", "properties": {
                "path": {"type": "string", "description": "File path, relative to the tool root."},
                "offset": {"type": "integer", "minimum": 1, "description": "First line to return (1-based)."},
                "limit": {"type": "integer", "minimum": 1, "description": "How many lines to return (default 2000)."}
            }, "required": ["path"], "additionalProperties": false}),
        ),
        spec(
            "glob",
            "Find files whose path matches a glob pattern (e.g. `**/*.rs`), relative to the tool root. Honours .gitignore.",
            json!({"type": "object", "properties": {
                "pattern": {"type": "string", "description": "Glob pattern matched against paths relative to `path`."},
                "path": {"type": "string", "description": "Directory to search (default: the tool root)."}
            }, "required": ["pattern"], "additionalProperties": false}),
        ),
        spec(
            "grep",
            "Search file contents with a regular expression; returns path, line number and text of each matching line.",
            json!({"type": "object", "properties": {
                "pattern": {"type": "string", "description": "Regular expression (Rust regex syntax)."},
                "path": {"type": "string", "description": "File or directory to search (default: the tool root)."},
                "glob": {"type": "string", "description": "Only search files whose path relative to `path` matches this glob (as glob's `pattern`)."},
                "ignore_case": {"type": "boolean", "description": "Match case-insensitively."},
                "limit": {"type": "integer", "minimum": 1, "description": "Most matches to return (default 200, at most 1000)."}
            }, "required": ["pattern"], "additionalProperties": false}),
        ),
        spec(
            "ls",
            "List a directory below the tool root: each entry's name, type and size (the first 1000 by name).",
            json!({"type": "object", "properties": {
                "path": {"type": "string", "description": "Directory, relative to the tool root (default: the root)."}
            }, "additionalProperties": false}),
        ),
        spec(
            "web_fetch",
            "Fetch a text web page over HTTP(S) GET from an allowed host; the body is cut at a size cap.",
            json!({"type": "object", "properties": {
                "url": {"type": "string", "description": "http:// or https:// URL on an allowed host."}
            }, "required": ["url"], "additionalProperties": false}),
        ),
    ];
    if writable {
        specs.push(spec(
            "write",
            "Create or overwrite a text file below the tool root (missing directories are created).",
            json!({"type": "object", "properties": {
                "path": {"type": "string", "description": "File path, relative to the tool root."},
                "content": {"type": "string", "description": "The whole new content."}
            }, "required": ["path", "content"], "additionalProperties": false}),
        ));
        specs.push(spec(
            "edit",
            "Replace an exact string in a text file below the tool root; it must occur once unless replace_all is set.",
            json!({"type": "object", "properties": {
                "path": {"type": "string", "description": "File path, relative to the tool root."},
                "old_string": {"type": "string", "description": "Text to replace, exactly as in the file."},
                "new_string": {"type": "string", "description": "Replacement text."},
                "replace_all": {"type": "boolean", "description": "Replace every occurrence."}
            }, "required": ["path", "old_string", "new_string"], "additionalProperties": false}),
        ));
    }
    specs
}

/// A native tool's title, for user interfaces.
fn title(name: &str) -> String {
    match name {
        "read" => "Read file",
        "glob" => "Find files",
        "grep" => "Search file contents",
        "ls" => "List directory",
        "web_fetch" => "Fetch web page",
        "write" => "Write file",
        "edit" => "Edit file",
        other => other,
    }
    .to_owned()
}

/// The system-prompt guidelines of native tool `name`.
fn guidelines(name: &str) -> Vec<String> {
    let bullets: &[&str] = match name {
        "grep" => &["Use grep or glob to find code before reading whole files or directories."],
        "edit" => &["Read a file before you edit it: `old_string` must match its text exactly."],
        _ => &[],
    };
    bullets.iter().map(|&b| b.to_owned()).collect()
}

/// The JSON Schema of the structured block native tool `name` returns
/// (one place with the tools' `json!` results, kept in step by the
/// pipeline, which checks every result against it).
fn output_schema(name: &str) -> Value {
    let string = json!({"type": "string"});
    let integer = json!({"type": "integer", "minimum": 0});
    let boolean = json!({"type": "boolean"});
    let object = |properties: Value| {
        let required: Vec<&String> = properties
            .as_object()
            .map(|p| p.keys().collect())
            .unwrap_or_default();
        json!({"type": "object", "properties": properties, "required": required})
    };
    match name {
        "read" => object(json!({"path": string, "content": string, "total_lines": integer,
            "lines": {"type": "array", "items": integer, "minItems": 2, "maxItems": 2}})),
        "ls" => object(
            json!({"path": string, "entries": {"type": "array", "items": object(json!({
            "name": string, "type": {"type": "string", "enum": ["file", "dir", "symlink"]}, "size": integer}))},
            "truncated": boolean}),
        ),
        "glob" => object(json!({"paths": {"type": "array", "items": string}, "truncated": boolean})),
        "grep" => object(json!({"matches": {"type": "array", "items": object(json!({
            "path": string, "line": integer, "text": string}))}, "truncated": boolean,
            "skipped": {"type": "array", "items": object(json!({"path": string, "reason": string}))}})),
        "web_fetch" => object(json!({"url": string, "status": integer, "content_type": string,
            "content": string, "truncated": boolean})),
        "write" => object(json!({"path": string, "bytes": integer, "created": boolean})),
        "edit" => object(json!({"path": string, "replacements": integer})),
        _ => json!({"type": "object"}),
    }
}

/// The host's value model of native tool `name`: what it changes, what it
/// costs, how long its answer stays fresh, which call tends to follow it
/// and with which argument, and what it makes stale.
///
/// The follow-up probabilities are the host's starting estimates of how
/// often an agent reads a file a listing just named: glob → read 0.32 and
/// grep → read 0.35, just above the planner's default floor (0.3), so the
/// host reads ahead after a search, and a link whose prefetches go unused
/// soon falls under the floor (`speculation::fanout` corrects each rank
/// online); `ls` is taken as a glob of one directory. The user's
/// `[tools.X]` overrides any field. A `write` can create files, so it makes
/// listings stale too; an `edit` changes only what is in a file.
pub fn value_model(name: &str) -> Option<ValueModel> {
    use SideEffect::*;
    use ValueClass::*;
    let model = |class, effect, typical_kb, ttl_s, read_after: Option<f32>| ValueModel {
        value_class: Some(class),
        side_effect: Some(effect),
        cost: CostModel {
            typical_kb: Some(typical_kb),
            freshness_ttl_s: Some(ttl_s),
            ..CostModel::default()
        },
        follow_ups: read_after.map(|probability| {
            vec![FollowUpLink {
                tool: "read".into(),
                probability,
                projection: Some("path".into()),
                projection_arg: Some("path".into()),
            }]
        }),
        ..ValueModel::default()
    };
    let stales = |tools: &[&str]| ValueModel {
        side_effect: Some(MutatesLocal),
        invalidates: Some(tools.iter().map(|&t| t.to_owned()).collect()),
        ..ValueModel::default()
    };
    Some(match name {
        "read" => model(Critical, Pure, 2.5, 300, None),
        "glob" => model(Supporting, ReadOnly, 1.0, 60, Some(0.32)),
        "grep" => model(Critical, Pure, 1.0, 60, Some(0.35)),
        "ls" => model(Supporting, ReadOnly, 1.0, 60, Some(0.32)),
        "web_fetch" => model(Critical, ReadOnly, 8.0, 900, None),
        "write" => stales(&["read", "grep", "glob", "ls"]),
        "edit" => stales(&["read", "grep"]),
        _ => return None,
    })
}

/// The built-in models of the native tools (`value_model`), each under
/// its name: the bottom layer every catalog's value models start from.
pub fn value_models() -> ValueModels {
    let mut models = ValueModels::default();
    for tool in NATIVE_NAMES {
        if let Some(model) = value_model(tool) {
            models.add(tool, Layer::BuiltIn, &model);
        }
    }
    models
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_native_tool_has_its_facts() {
        for name in NATIVE_NAMES {
            let model = value_model(name).unwrap_or_else(|| panic!("{name} has no value model"));
            assert_eq!(model.is_speculatable(), !writes(name), "{name}");
            assert_ne!(title(name), name, "{name} has no title");
            assert_ne!(
                output_schema(name),
                json!({"type": "object"}),
                "{name} has no output schema"
            );
        }
        let served: Vec<String> = specs(true).into_iter().map(|s| s.name).collect();
        assert_eq!(served, NATIVE_NAMES);
        assert!(is_local(WHOLE_FILE));
    }

    #[test]
    fn builtins_carry_the_read_after_listing_chains() {
        let models = value_models();
        let glob = models.get("glob").unwrap();
        assert_eq!(glob.follow_ups.as_ref().unwrap()[0].probability, 0.32);
        assert!(models.get("read").unwrap().is_speculatable());
        assert!(!models.get("write").unwrap().is_speculatable());
    }
}
