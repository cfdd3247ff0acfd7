//! Native tools built into the host: `read`, `glob`, `grep`, `ls` (confined
//! to a [`Root`]), `web_fetch` (GET of a text page from allowed hosts), and
//! when the configuration makes the root writable, `write` and `edit`.
//!
//! Each tool returns text for the model and the same facts as its
//! structured result (`glob` → `{"paths": [...]}`, `grep` → `{"matches":
//! [{"path", "line", "text"}]}`, `read` → `{"path", "content", "lines":
//! [start, end], "total_lines"}`). Argument names match the value models in
//! `value_model.rs` (`path`, `pattern`, `url`). This module owns the tools'
//! schemas and execution; validation against the schema, hooks and
//! cancellation belong to the call pipeline.

mod changes;
mod files;
mod fresh;
mod root;
mod search;
mod walk;
mod web;
mod write;

use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::catalog::{Annotations, ToolMeta, ToolSpec};
use crate::output::{Block, CallOutput, ToolError};
pub use changes::Changes;
pub use files::FileText;
pub use root::Root;
pub use web::WebSettings;

/// Every native tool's name, served or not (`write` and `edit` only with a
/// writable root): reserved for the host (see `ownership`).
pub const NATIVE_NAMES: [&str; 7] = ["read", "glob", "grep", "ls", "web_fetch", "write", "edit"];

/// The native tools, bound to one root and one web policy.
pub struct NativeTools {
    root: Root,
    web: web::Fetcher,
    writable: bool,
    latency: Option<Latency>,
}

/// A delay added before each call of a tool; models a slow or remote file
/// system (the speculation replay bench uses it).
pub type Latency = std::sync::Arc<dyn Fn(&str, &Map<String, Value>) -> Duration + Send + Sync>;

impl NativeTools {
    pub fn new(root: Root, web: WebSettings) -> anyhow::Result<Self> {
        Ok(Self {
            root,
            web: web::Fetcher::new(web)?,
            writable: false,
            latency: None,
        })
    }

    /// Delay every call by what `latency` says for it.
    pub fn with_latency(mut self, latency: Latency) -> Self {
        self.latency = Some(latency);
        self
    }

    /// Serve `write` and `edit` too.
    pub fn writable(mut self, on: bool) -> Self {
        self.writable = on;
        self
    }

    pub fn root(&self) -> &Root {
        &self.root
    }

    /// The tools' specs, uncategorised (always listed), each with its
    /// title, output schema (the JSON block it returns) and whether it
    /// reaches the network.
    pub fn specs(&self) -> Vec<ToolSpec> {
        let spec = |name: &str, description: &str, schema: Value| ToolSpec {
            name: name.into(),
            description: description.into(),
            category: None,
            input_schema: schema,
            meta: ToolMeta {
                title: Some(title(name)),
                guidelines: guidelines(name),
                output_schema: Some(output_schema(name)),
                annotations: Annotations {
                    open_world_hint: Some(name == "web_fetch"),
                    ..Annotations::default()
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
        ];
        if self.writable {
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

    /// Whether `name` reads only the local disk (and so may be prefetched
    /// when `[speculation] native` is on); `web_fetch` reaches the network.
    pub fn is_local(name: &str) -> bool {
        matches!(name, "read" | "glob" | "grep" | "ls")
    }

    /// The arguments a call of local tool `name` is cached under: its
    /// path made relative to the root (`./src//a.py` and `src/./a.py` are
    /// `src/a.py`; none is the root, `.`), and for `read` the path alone,
    /// since a read's whole file is cached ([`NativeTools::load`]) and any
    /// slice answered from it ([`NativeTools::slice`]). A path that leaves
    /// the root is kept as given: such a call fails, cached or not.
    pub fn cache_args(&self, name: &str, args: &Map<String, Value>) -> Map<String, Value> {
        if !Self::is_local(name) {
            return args.clone();
        }
        let given = opt_str(args, "path").unwrap_or("");
        let Ok(rel) = self.root.relative(given) else {
            return args.clone();
        };
        let path = Value::String(Root::display(&rel));
        if name == "read" {
            return Map::from_iter([("path".to_owned(), path)]);
        }
        let mut args = args.clone();
        args.insert("path".into(), path);
        args
    }

    /// The whole file a `read` call names, loaded after the call's latency.
    pub async fn load(&self, args: &Map<String, Value>) -> Result<FileText, ToolError> {
        if let Some(latency) = &self.latency {
            tokio::time::sleep(latency("read", args)).await;
        }
        let root = self.root.clone();
        let given = str_arg(args, "path")?.to_owned();
        tokio::task::spawn_blocking(move || files::load(&root, &given))
            .await
            .unwrap_or_else(|e| Err(ToolError::Failed(format!("native tool panicked: {e}"))))
    }

    /// What a `read` call with `args` answers, from its file loaded whole.
    pub fn slice(file: &FileText, args: &Map<String, Value>) -> Result<CallOutput, ToolError> {
        files::slice(file, args)
    }

    /// Whether `file` is still what is on disk (see `fresh`).
    pub fn is_current(&self, file: &FileText) -> bool {
        file.is_current(&self.root)
    }

    /// Run native tool `name` with validated arguments.
    pub async fn execute(&self, name: &str, args: &Map<String, Value>) -> Result<CallOutput, ToolError> {
        if let Some(latency) = &self.latency {
            tokio::time::sleep(latency(name, args)).await;
        }
        if name == "web_fetch" {
            return self.web.fetch(str_arg(args, "url")?).await;
        }
        let (root, writable) = (self.root.clone(), self.writable);
        let (name, args) = (name.to_owned(), args.clone());
        // File walks and reads block: keep them off the async workers.
        tokio::task::spawn_blocking(move || match name.as_str() {
            "read" => files::read(&root, &args),
            "ls" => files::ls(&root, &args),
            "glob" => search::glob(&root, &args),
            "grep" => search::grep(&root, &args),
            "write" | "edit" if !writable => Err(ToolError::NotFound(format!("Tool {name} not found"))),
            "write" => write::write(&root, &args),
            "edit" => write::edit(&root, &args),
            other => Err(ToolError::NotFound(format!("Tool {other} not found"))),
        })
        .await
        .unwrap_or_else(|e| Err(ToolError::Failed(format!("native tool panicked: {e}"))))
    }
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
            "name": string, "type": {"type": "string", "enum": ["file", "dir", "symlink"]}, "size": integer}))}}),
        ),
        "glob" => object(json!({"paths": {"type": "array", "items": string}, "truncated": boolean})),
        "grep" => object(json!({"matches": {"type": "array", "items": object(json!({
            "path": string, "line": integer, "text": string}))}, "truncated": boolean})),
        "web_fetch" => object(json!({"url": string, "status": integer, "content_type": string,
            "content": string, "truncated": boolean})),
        "write" => object(json!({"path": string, "bytes": integer, "created": boolean})),
        "edit" => object(json!({"path": string, "replacements": integer})),
        _ => json!({"type": "object"}),
    }
}

/// A result with text for the model and the structured facts.
fn result(text: String, structured: Value) -> CallOutput {
    CallOutput::new(vec![Block::text(text)]).with_structured(structured)
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
