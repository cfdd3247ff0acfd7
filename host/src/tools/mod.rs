//! Native tools built into the host: `read`, `glob`, `grep`, `ls` (confined
//! to a [`Root`]), `web_fetch` (GET of a text page from allowed hosts), and
//! when the configuration makes the root writable, `write` and `edit`.
//!
//! Each tool returns text for the model and the same facts as its
//! structured result (`glob` → `{"paths": [...]}`, `grep` → `{"matches":
//! [{"path", "line", "text"}]}`, `read` → `{"path", "content", "lines":
//! [start, end], "total_lines"}`). What the host knows and says of each tool
//! (schemas, titles, guidelines, value models, how speculation treats it)
//! is in [`facts`], in one place; a read's file kept whole for the cache,
//! its freshness and the watch on it are in `read_cache`; the rest of this
//! module runs the tools.
//! Validation against the schema, hooks and cancellation belong to the call
//! pipeline.
//!
//! Every resource a call can touch is bounded (the caps are in
//! [`bounds::native`](crate::bounds::native)): files are opened without
//! blocking and only if regular (`root`), walks go a bounded depth on a
//! stack of their own (`walk`), grep holds a bounded line, listings and
//! searches answer a bounded count and say they stopped, and the blocking
//! work runs on a bounded number of threads with a deadline (`work`),
//! except a read or a listing under a root on a local disk, which runs in
//! place (`locality`).

pub mod facts;
mod files;
mod locality;
pub(crate) mod read_cache;
mod root;
mod search;
mod walk;
mod web;
mod work;
mod write;

use std::time::Duration;

use serde_json::{Map, Value};

use crate::output::{Block, CallOutput, ToolError};
use crate::tool::ToolSpec;
pub use facts::{NATIVE_NAMES, is_local};
pub use read_cache::{Changes, FileText};
pub use root::Root;
pub use web::WebSettings;
pub use work::Urgency;

/// The native tools, bound to one root and one web policy.
pub struct NativeTools {
    root: Root,
    web: web::Fetcher,
    work: work::FileWork,
    writable: bool,
    latency: Option<Latency>,
}

/// A delay added before each call of a tool; models a slow or remote file
/// system (the speculation replay bench uses it).
pub type Latency = std::sync::Arc<dyn Fn(&str, &Map<String, Value>) -> Duration + Send + Sync>;

impl NativeTools {
    /// The tools over `root`, fetching by `web`; read-only until
    /// [`NativeTools::writable`]. Fails only if the HTTP client of
    /// `web_fetch` cannot be built (no TLS provider).
    pub fn new(root: Root, web: WebSettings) -> Result<Self, reqwest::Error> {
        Ok(Self {
            work: work::FileWork::new(root.dir()),
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

    /// The root the tools are confined to.
    pub fn root(&self) -> &Root {
        &self.root
    }

    /// The specs of the tools served ([`facts::specs`]).
    pub fn specs(&self) -> Vec<ToolSpec> {
        facts::specs(self.writable)
    }

    /// The arguments a call of local tool `name` is cached under: its
    /// path made relative to the root (`./src//a.py` and `src/./a.py` are
    /// `src/a.py`; none is the root, `.`), and for `read` the path alone,
    /// since a read's whole file is cached ([`NativeTools::load`]) and any
    /// slice answered from it ([`NativeTools::slice`]). A path that leaves
    /// the root is kept as given: such a call fails, cached or not.
    pub fn cache_args(&self, name: &str, args: &Map<String, Value>) -> Map<String, Value> {
        if !is_local(name) {
            return args.clone();
        }
        let given = opt_str(args, "path").unwrap_or("");
        let Ok(rel) = self.root.relative(given) else {
            return args.clone();
        };
        let path = Value::String(Root::display(&rel));
        if name == facts::WHOLE_FILE {
            return Map::from_iter([("path".to_owned(), path)]);
        }
        let mut args = args.clone();
        args.insert("path".into(), path);
        args
    }

    /// The whole file a `read` call names, loaded after the call's latency.
    pub async fn load(&self, args: &Map<String, Value>, urgency: Urgency) -> Result<FileText, ToolError> {
        if let Some(latency) = &self.latency {
            tokio::time::sleep(latency("read", args)).await;
        }
        let root = self.root.clone();
        let given = str_arg(args, "path")?.to_owned();
        self.work
            .run_quick("read", urgency, move |_| read_cache::load(&root, &given))
            .await
    }

    /// What a `read` call with `args` answers, from its file loaded whole.
    pub fn slice(file: &FileText, args: &Map<String, Value>) -> Result<CallOutput, ToolError> {
        files::slice(file, args)
    }

    /// Whether `file` is still what is on disk (see `read_cache`).
    pub fn is_current(&self, file: &FileText) -> bool {
        file.is_current(&self.root)
    }

    /// Run native tool `name` with validated arguments.
    pub async fn execute(
        &self,
        name: &str,
        args: &Map<String, Value>,
        urgency: Urgency,
    ) -> Result<CallOutput, ToolError> {
        if let Some(latency) = &self.latency {
            tokio::time::sleep(latency(name, args)).await;
        }
        if name == "web_fetch" {
            return self.web.fetch(str_arg(args, "url")?).await;
        }
        let (root, writable) = (self.root.clone(), self.writable);
        let (owned, args) = (name.to_owned(), args.clone());
        let work = move |budget| match owned.as_str() {
            "read" => files::read(&root, &args),
            "ls" => files::ls(&root, &args),
            "glob" => search::glob(&root, &args, budget),
            "grep" => search::grep(&root, &args, budget),
            "write" | "edit" if !writable => Err(ToolError::NotFound(format!("Tool {owned} not found"))),
            "write" => write::write(&root, &args),
            "edit" => write::edit(&root, &args),
            other => Err(ToolError::NotFound(format!("Tool {other} not found"))),
        };
        // A walk may take seconds; a read or a listing, microseconds.
        match name {
            "read" | "ls" => self.work.run_quick(name, urgency, work).await,
            _ => self.work.run(name, work).await,
        }
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
