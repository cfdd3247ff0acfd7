//! Upstream MCP servers: child processes speaking MCP over stdio, whose
//! tools join the catalog (optionally renamed with a prefix, under the
//! category configured for the server) and whose calls the pipeline
//! forwards. Owns the client connection; not the pipeline's hooks.

use std::sync::Arc;

use rmcp::model::{CallToolRequestParams, ContentBlock};
use rmcp::service::{RoleClient, RunningService, ServiceExt};
use rmcp::transport::TokioChildProcess;
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::catalog::ToolSpec;
use crate::plugin::{Content, ToolError, ToolResult};

/// One `[[upstream]]` table of `toolhost.toml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpstreamConfig {
    /// Names the server in errors and in backend bindings.
    pub name: String,
    /// The program to run; it must speak MCP on stdin and stdout.
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    /// Category given to every tool of the server.
    pub category: Option<String>,
    /// Prepended to each tool's name in the catalog (`fs_` + `read_file`).
    #[serde(default)]
    pub prefix: String,
    /// Let the host call this server's read-only tools ahead of time (their
    /// value models must say `pure` or `read-only`).
    #[serde(default)]
    pub speculate: bool,
}

#[derive(Debug, thiserror::Error)]
#[error("upstream `{name}`: {message}")]
pub struct UpstreamError {
    pub name: String,
    pub message: String,
}

/// A connected upstream server and the tools it listed.
pub struct Upstream {
    pub config: UpstreamConfig,
    client: RunningService<RoleClient, ()>,
    tools: Vec<rmcp::model::Tool>,
}

impl Upstream {
    /// Start the server, initialise the session and list its tools.
    pub async fn connect(config: UpstreamConfig) -> Result<Arc<Self>, UpstreamError> {
        let fail = |message: String| UpstreamError {
            name: config.name.clone(),
            message,
        };
        let mut command = tokio::process::Command::new(&config.command);
        command.args(&config.args);
        let transport = TokioChildProcess::builder(command)
            .stderr(std::process::Stdio::inherit())
            .spawn()
            .map(|(t, _)| t)
            .map_err(|e| fail(format!("cannot start `{}`: {e}", config.command)))?;
        let client = ().serve(transport).await.map_err(|e| fail(format!("initialise: {e}")))?;
        let tools = client
            .peer()
            .list_all_tools()
            .await
            .map_err(|e| fail(format!("tools/list: {e}")))?;
        Ok(Arc::new(Self {
            config,
            client,
            tools,
        }))
    }

    /// The catalog entries, as (spec under our name, the server's name).
    pub fn specs(&self) -> Vec<(ToolSpec, String)> {
        self.tools
            .iter()
            .map(|t| {
                let spec = ToolSpec {
                    name: format!("{}{}", self.config.prefix, t.name),
                    description: t.description.as_deref().unwrap_or_default().to_owned(),
                    category: self.config.category.clone(),
                    input_schema: Value::Object((*t.input_schema).clone()),
                };
                (spec, t.name.to_string())
            })
            .collect()
    }

    /// Forward a call. Dropping the future cancels the request upstream.
    pub async fn call(&self, remote: &str, args: Map<String, Value>) -> Result<ToolResult, ToolError> {
        let mut params = CallToolRequestParams::new(remote.to_owned());
        params.arguments = Some(args);
        let answer = self
            .client
            .peer()
            .call_tool(params)
            .await
            .map_err(|e| ToolError::Failed(format!("upstream `{}`: {e}", self.config.name)))?;
        let mut content: Vec<Content> = answer
            .content
            .iter()
            .map(|block| match block {
                ContentBlock::Text(t) => Content::Text(t.text.clone()),
                other => Content::Json(serde_json::to_string(other).unwrap_or_default()),
            })
            .collect();
        if let Some(structured) = answer.structured_content {
            content.push(Content::Json(structured.to_string()));
        }
        if answer.is_error == Some(true) {
            return Err(ToolError::Failed(super::text_of(&content)));
        }
        Ok(ToolResult {
            content,
            details: None,
        })
    }
}
