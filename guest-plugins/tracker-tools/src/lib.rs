//! Tracker tools: a tool plugin that serves issue-tracker and knowledge-base
//! tools by calling an HTTP API through `toolhost:plugin/http`, so it reaches
//! only the hosts its manifest grants. It backs the base-catalog tools in
//! tests and in the speculation replay bench, against loopback servers.
//!
//! Config: `base_url = "http://127.0.0.1:8080"`. The API it expects:
//! `GET /issues?search=&limit=`, `GET /issues/{key}`,
//! `GET /issues/{key}/comments`, `POST /issues/{key}` (a JSON patch),
//! `GET /kb/search?q=`, `GET /kb/pages/{id}`, `POST /kb/pages/{id}`. Each
//! answers JSON, returned to the model as text and as the structured result
//! (which the host projects follow-up arguments from).

use toolhost_sdk::http::{self, Request};
use toolhost_sdk::{CallContext, Plugin, ToolDefinition, ToolError, ToolResult, Tools, Value, json};

struct Tracker {
    base: String,
}

impl Plugin for Tracker {
    fn new(config: &Value) -> Result<Self, String> {
        let base = config
            .get("base_url")
            .and_then(Value::as_str)
            .filter(|u| u.starts_with("http://") || u.starts_with("https://"))
            .ok_or("config: `base_url` must be an http(s) URL")?;
        Ok(Tracker {
            base: base.trim_end_matches('/').to_owned(),
        })
    }
}

/// Percent-encode a path segment or query value.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn string(args: &Value, name: &str) -> Result<String, ToolError> {
    args.get(name)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| ToolError::InvalidArgs(format!("`{name}` must be a string")))
}

fn tool(name: &str, category: &str, description: &str, schema: Value) -> ToolDefinition {
    ToolDefinition::new(name, description, schema).category(category)
}

impl Tracker {
    fn send(&self, request: Request) -> Result<ToolResult, ToolError> {
        let response =
            http::fetch(&request).map_err(|e| ToolError::Failed(format!("{}: {e:?}", request.url)))?;
        match response.status {
            200..=299 => {}
            404 => return Err(ToolError::NotFound(format!("{} answered 404", request.url))),
            s => {
                return Err(ToolError::Failed(format!(
                    "{} answered {s}: {}",
                    request.url,
                    response.text()
                )));
            }
        }
        let body = response
            .json()
            .map_err(|e| ToolError::Failed(format!("{} sent invalid JSON: {e}", request.url)))?;
        Ok(ToolResult::text(body.to_string()).with_structured(body))
    }
}

impl Tools for Tracker {
    fn tools(&self) -> Vec<ToolDefinition> {
        let key = json!({"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]});
        vec![
            tool(
                "get_issues",
                "issue_tracker",
                "List issues",
                json!({"type": "object", "properties": {
                "search": {"type": "string"}, "limit": {"type": "integer"}}}),
            ),
            tool("get_issue", "issue_tracker", "Get one issue", key.clone()),
            tool(
                "get_issue_comments",
                "issue_tracker",
                "Get an issue's comments",
                key,
            ),
            tool(
                "update_issue",
                "issue_tracker",
                "Update an issue",
                json!({"type": "object", "properties": {
                "key": {"type": "string"}, "title": {"type": "string"}, "status": {"type": "string"}}, "required": ["key"]}),
            ),
            tool(
                "search_knowledge_base",
                "knowledge_base",
                "Search pages",
                json!({"type": "object", "properties": {
                "query": {"type": "string"}}, "required": ["query"]}),
            ),
            tool(
                "get_knowledge_base_page",
                "knowledge_base",
                "Get one page",
                json!({"type": "object", "properties": {
                "pageId": {"type": "string"}}, "required": ["pageId"]}),
            ),
            tool(
                "update_knowledge_base_page",
                "knowledge_base",
                "Update a page",
                json!({"type": "object", "properties": {
                "pageId": {"type": "string"}, "content": {"type": "string"}}, "required": ["pageId", "content"]}),
            ),
        ]
    }

    fn execute(&self, tool: &str, args: Value, _ctx: &CallContext<'_>) -> Result<ToolResult, ToolError> {
        let base = &self.base;
        let request = match tool {
            "get_issues" => {
                let search = args.get("search").and_then(Value::as_str).unwrap_or_default();
                let limit = args.get("limit").and_then(Value::as_u64).unwrap_or(20);
                Request::get(&format!("{base}/issues?search={}&limit={limit}", encode(search)))
            }
            "get_issue" => Request::get(&format!("{base}/issues/{}", encode(&string(&args, "key")?))),
            "get_issue_comments" => Request::get(&format!(
                "{base}/issues/{}/comments",
                encode(&string(&args, "key")?)
            )),
            "update_issue" => Request::post_json(
                &format!("{base}/issues/{}", encode(&string(&args, "key")?)),
                &args,
            ),
            "search_knowledge_base" => Request::get(&format!(
                "{base}/kb/search?q={}",
                encode(&string(&args, "query")?)
            )),
            "get_knowledge_base_page" => {
                Request::get(&format!("{base}/kb/pages/{}", encode(&string(&args, "pageId")?)))
            }
            "update_knowledge_base_page" => Request::post_json(
                &format!("{base}/kb/pages/{}", encode(&string(&args, "pageId")?)),
                &args,
            ),
            other => return Err(ToolError::NotFound(format!("no tool named {other}"))),
        };
        self.send(request)
    }
}

toolhost_sdk::export_tools!(Tracker);
