//! Native tools built into the host: `read`, `glob`, `grep`, `ls` (confined
//! to a [`Root`]) and `web_fetch` (GET of a text page from allowed hosts).
//!
//! Each tool returns text for the model and the same facts as a JSON
//! content block (`glob` → `{"paths": [...]}`, `grep` → `{"matches":
//! [{"path", "line", "text"}]}`, `read` → `{"path", "content", "lines":
//! [start, end], "total_lines"}`). Argument names match the value models in
//! `value_model.rs` (`path`, `pattern`, `url`). This module owns the tools'
//! schemas and execution; validation against the schema, hooks and
//! cancellation belong to the call pipeline.

mod files;
mod root;
mod search;
mod web;

use serde_json::{Map, Value, json};

use crate::catalog::ToolSpec;
pub use crate::plugin::{Content, ToolError, ToolResult};
pub use root::Root;
pub use web::WebSettings;

/// The native tools, bound to one root and one web policy.
pub struct NativeTools {
    root: Root,
    web: web::Fetcher,
}

impl NativeTools {
    pub fn new(root: Root, web: WebSettings) -> anyhow::Result<Self> {
        Ok(Self {
            root,
            web: web::Fetcher::new(web)?,
        })
    }

    pub fn root(&self) -> &Root {
        &self.root
    }

    /// The tools' specs, uncategorised (always listed).
    pub fn specs() -> Vec<ToolSpec> {
        let spec = |name: &str, description: &str, schema: Value| ToolSpec {
            name: name.into(),
            description: description.into(),
            category: None,
            input_schema: schema,
        };
        vec![
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
                    "glob": {"type": "string", "description": "Only search files whose path matches this glob."},
                    "ignore_case": {"type": "boolean", "description": "Match case-insensitively."},
                    "limit": {"type": "integer", "minimum": 1, "description": "Most matches to return (default 200)."}
                }, "required": ["pattern"], "additionalProperties": false}),
            ),
            spec(
                "ls",
                "List a directory below the tool root: each entry's name, type and size.",
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
        ]
    }

    /// Whether `name` is a native tool.
    pub fn has(name: &str) -> bool {
        matches!(name, "read" | "glob" | "grep" | "ls" | "web_fetch")
    }

    /// Run native tool `name` with validated arguments.
    pub async fn execute(&self, name: &str, args: &Map<String, Value>) -> Result<ToolResult, ToolError> {
        if name == "web_fetch" {
            return self.web.fetch(str_arg(args, "url")?).await;
        }
        let root = self.root.clone();
        let (name, args) = (name.to_owned(), args.clone());
        // File walks and reads block: keep them off the async workers.
        tokio::task::spawn_blocking(move || match name.as_str() {
            "read" => files::read(&root, &args),
            "ls" => files::ls(&root, &args),
            "glob" => search::glob(&root, &args),
            "grep" => search::grep(&root, &args),
            other => Err(ToolError::NotFound(format!("Tool {other} not found"))),
        })
        .await
        .unwrap_or_else(|e| Err(ToolError::Failed(format!("native tool panicked: {e}"))))
    }
}

/// A result with text for the model and the structured facts.
fn result(text: String, structured: Value) -> ToolResult {
    ToolResult {
        content: vec![Content::Text(text), Content::Json(structured.to_string())],
        details: None,
    }
}

fn str_arg<'a>(args: &'a Map<String, Value>, key: &str) -> Result<&'a str, ToolError> {
    args.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| ToolError::InvalidArgs(format!("{key}: must be a string")))
}

fn opt_str<'a>(args: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

fn opt_usize(args: &Map<String, Value>, key: &str) -> Option<usize> {
    args.get(key)
        .and_then(Value::as_u64)
        .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
}
