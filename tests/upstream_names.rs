//! toolhost in front of an MCP server whose tools are named like
//! base-catalog tools, as GitHub's own server's are (github/github-mcp-server
//! lists `get_issue`, `create_issue`, `update_issue`, `add_issue_comment`,
//! `search_code` and `get_commit`, the six of its names in the recorded
//! agent traffic of `tests/replay/vendor/github.jsonl` that the catalog has
//! too): the rule of `toolhost::ownership`, through the configuration file
//! and the command line's own assembly (`toolhost_cli::setup`).
//!
//! - With nothing providing those catalog tools, the server's tools are
//!   served under their own names with their own schemas, annotations and
//!   output schema, and called with the server's arguments.
//! - With the GitHub provider plugin loaded (it implements the catalog's
//!   issue and repository tools), the catalog's `get_issue` wins, and each
//!   line the refusal suggests is followed as written: the `prefix` serves
//!   the server's tool beside it, the `[bind]` makes the server the catalog
//!   tool's backend.
//! - A `[bind]` of a catalog tool to the server with no enricher of its
//!   category serves neither, says so, and removing the line serves the
//!   server's tool.
//!
//! The server is a fake in this process (rmcp over streamable HTTP on
//! loopback) that answers each call with the tool's name and the arguments
//! it received, so a test sees which tool a call reached and with what.

use std::path::Path;

use serde_json::{Value, json};
use toolhost::{ToolError, Toolhost};
use toolhost_tests::{call, call_ok, plugin_dir, runtime};

mod github {
    use std::sync::Arc;

    use rmcp::model::{CallToolResult, ContentBlock, ToolAnnotations};
    use serde_json::{Value, json};
    use toolhost_tests::upstream::{ToolServer, tool};

    /// A tool as GitHub's MCP server defines it: name, description, input
    /// schema, whether it only reads.
    pub struct Def {
        pub name: &'static str,
        pub description: &'static str,
        pub schema: Value,
        pub read_only: bool,
    }

    fn repo(extra: Value, required: &[&str]) -> Value {
        let mut properties = json!({
            "owner": {"type": "string", "description": "Repository owner"},
            "repo": {"type": "string", "description": "Repository name"},
        });
        for (k, v) in extra.as_object().unwrap() {
            properties[k] = v.clone();
        }
        let mut all = vec!["owner", "repo"];
        all.extend(required);
        json!({"type": "object", "properties": properties, "required": all})
    }

    /// The tools the fake lists: the six whose names the catalog has, and
    /// two it does not, with github-mcp-server's parameters.
    pub fn tools() -> Vec<Def> {
        let number = json!({"type": "number", "description": "Issue number"});
        vec![
            Def {
                name: "get_issue",
                description: "Get details of a specific issue in a GitHub repository.",
                schema: repo(json!({"issue_number": number}), &["issue_number"]),
                read_only: true,
            },
            Def {
                name: "create_issue",
                description: "Create a new issue in a GitHub repository.",
                schema: repo(
                    json!({
                        "title": {"type": "string", "description": "Issue title"},
                        "body": {"type": "string", "description": "Issue body content"},
                        "assignees": {"type": "array", "items": {"type": "string"}},
                        "labels": {"type": "array", "items": {"type": "string"}},
                        "milestone": {"type": "number"},
                    }),
                    &["title"],
                ),
                read_only: false,
            },
            Def {
                name: "update_issue",
                description: "Update an existing issue in a GitHub repository.",
                schema: repo(
                    json!({
                        "issue_number": number,
                        "title": {"type": "string"},
                        "state": {"type": "string", "enum": ["open", "closed"]},
                    }),
                    &["issue_number"],
                ),
                read_only: false,
            },
            Def {
                name: "add_issue_comment",
                description: "Add a comment to a specific issue in a GitHub repository.",
                schema: repo(
                    json!({"issue_number": number, "body": {"type": "string", "description": "Comment content"}}),
                    &["issue_number", "body"],
                ),
                read_only: false,
            },
            Def {
                name: "search_code",
                description: "Fast and precise code search across ALL GitHub repositories.",
                schema: json!({
                    "type": "object",
                    "properties": {
                        "query": {"type": "string", "description": "Search query using GitHub's code search syntax"},
                        "sort": {"type": "string"},
                        "order": {"type": "string", "enum": ["asc", "desc"]},
                        "page": {"type": "number", "minimum": 1},
                        "perPage": {"type": "number", "minimum": 1, "maximum": 100},
                    },
                    "required": ["query"],
                }),
                read_only: true,
            },
            Def {
                name: "get_commit",
                description: "Get details for a commit from a GitHub repository",
                schema: repo(
                    json!({"sha": {"type": "string", "description": "Commit SHA, branch name, or tag name"}}),
                    &["sha"],
                ),
                read_only: true,
            },
            Def {
                name: "list_issues",
                description: "List issues in a GitHub repository.",
                schema: repo(
                    json!({"state": {"type": "string", "enum": ["OPEN", "CLOSED"]}}),
                    &[],
                ),
                read_only: true,
            },
            Def {
                name: "get_pull_request",
                description: "Get details of a specific pull request in a GitHub repository.",
                schema: repo(json!({"pullNumber": {"type": "number"}}), &["pullNumber"]),
                read_only: true,
            },
        ]
    }

    /// What every call answers (structured): `{tool, arguments}`.
    pub fn output_schema() -> Value {
        json!({
            "type": "object",
            "properties": {"tool": {"type": "string"}, "arguments": {"type": "object"}},
            "required": ["tool", "arguments"],
        })
    }

    /// The title each tool's annotations give (github-mcp-server titles
    /// every tool).
    pub fn title(name: &str) -> String {
        format!("GitHub: {name}")
    }

    /// Serve the fake over streamable HTTP on loopback: its `/mcp` URL.
    /// Every call answers (structured) `{tool, arguments}`.
    pub async fn serve() -> String {
        let tools = tools()
            .into_iter()
            .map(|d| {
                let mut tool = tool(d.name, d.description, d.schema);
                let mut annotations = ToolAnnotations::with_title(title(d.name));
                annotations.read_only_hint = Some(d.read_only);
                tool.annotations = Some(annotations);
                tool.output_schema = Some(Arc::new(output_schema().as_object().unwrap().clone()));
                tool
            })
            .collect();
        ToolServer::new(tools, |request, _| {
            let answer = json!({"tool": request.name, "arguments": request.arguments.unwrap_or_default()});
            let mut result = CallToolResult::success(vec![ContentBlock::text(answer.to_string())]);
            result.structured_content = Some(answer);
            result
        })
        .serve()
        .await
    }
}

/// The six github-mcp-server names the base catalog has too.
const COLLIDING: [&str; 6] = [
    "get_issue",
    "create_issue",
    "update_issue",
    "add_issue_comment",
    "search_code",
    "get_commit",
];

/// `[[upstream]]` table `gh` for the fake at `url`, with `extra` lines.
fn upstream_table(url: &str, extra: &str) -> String {
    format!("[[upstream]]\nname = \"gh\"\nurl = \"{url}\"\n{extra}\n")
}

/// A host built from `toml` (written to `dir/toolhost.toml`, `root` set to
/// `dir`) as the command line builds it, with the plugin directory
/// `plugins`; the lines of what it left out.
async fn build(dir: &Path, toml: &str, plugins: Option<&Path>) -> (Toolhost, Vec<String>) {
    let path = dir.join("toolhost.toml");
    std::fs::write(&path, format!("root = \".\"\n{toml}")).unwrap();
    let config = toolhost_cli::config::Config::read(&path).unwrap();
    let (runtime, _) = runtime();
    toolhost_cli::setup::build(&runtime, &config, plugins, None)
        .await
        .unwrap()
}

/// The listed tool `name` as a client is told of it: its schema, output
/// schema and annotations' title.
fn listed(host: &Toolhost, name: &str) -> Option<(Value, String, Option<Value>, Option<String>)> {
    let listing = host.list_tools();
    let tool = listing.tools.iter().find(|t| t.name == name)?;
    Some((
        tool.schema.to_value(),
        tool.schema.description().to_owned(),
        tool.meta.output_schema.clone(),
        tool.meta.annotations.title.clone(),
    ))
}

/// Every tool of the fake, the six with catalog names included, is served
/// under its own name exactly as the server defines it, and a call reaches
/// the server with the server's arguments; the catalog's arguments are
/// refused, as the server's schema says.
#[tokio::test(flavor = "multi_thread")]
async fn a_servers_tools_named_like_catalog_tools_are_served_as_its_own() {
    let url = github::serve().await;
    let dir = tempfile::tempdir().unwrap();
    let (host, left_out) = build(dir.path(), &upstream_table(&url, ""), None).await;
    assert!(left_out.is_empty(), "{left_out:#?}");
    for def in github::tools() {
        let (schema, description, output, title) =
            listed(&host, def.name).unwrap_or_else(|| panic!("{} is not served", def.name));
        assert_eq!(schema["properties"], def.schema["properties"], "{}", def.name);
        assert_eq!(schema["required"], def.schema["required"], "{}", def.name);
        assert_eq!(description, def.description, "{}", def.name);
        assert_eq!(output, Some(github::output_schema()), "{}", def.name);
        assert_eq!(title, Some(github::title(def.name)), "{}", def.name);
    }
    for name in COLLIDING {
        assert!(
            toolhost::catalog::base_tool(name).is_some(),
            "{name} is a catalog name"
        );
    }

    let args = json!({"owner": "acme", "repo": "widgets", "issue_number": 42});
    let out = call_ok(&host, "get_issue", args.clone()).await;
    assert_eq!(
        out.structured_content,
        Some(json!({"tool": "get_issue", "arguments": args}))
    );
    let out = call_ok(
        &host,
        "search_code",
        json!({"query": "fn main repo:acme/widgets"}),
    )
    .await;
    assert_eq!(out.structured_content.unwrap()["tool"], "search_code");
    // The catalog's `get_issue` takes a `key`; GitHub's does not.
    let err = call(&host, "get_issue", json!({"key": "#42"})).await.unwrap_err();
    assert!(
        matches!(&err, ToolError::InvalidArgs(m) if m.contains("owner")),
        "{err:?}"
    );
    // The host's word on its catalog tool (`get_` reads) is not the
    // server's: an untrusted server's tool has no side effect said.
    let models = host.value_models();
    assert!(
        models.get("get_issue").is_none_or(|m| !m.is_speculatable()),
        "{:?}",
        models.get("get_issue")
    );
}

/// The text of the one refusal of tool `tool`.
fn refusal(host: &Toolhost, tool: &str, source: &str) -> String {
    let refused: Vec<String> = host
        .refusals()
        .iter()
        .filter(|r| r.tool == tool && r.source == source)
        .map(ToString::to_string)
        .collect();
    assert_eq!(refused.len(), 1, "{:#?}", host.refusals());
    refused[0].clone()
}

/// The text between backquotes that starts at the backquote of `before`
/// (its first) in `text`: the line a refusal quotes.
fn quoted_after<'t>(text: &'t str, before: &str) -> &'t str {
    let start = text
        .find(before)
        .unwrap_or_else(|| panic!("no {before:?} in {text}"));
    let rest = &text[start + before.find('`').expect("a backquote") + 1..];
    &rest[..rest.find('`').unwrap()]
}

/// With the GitHub provider plugin loaded, the catalog's `get_issue` is
/// provided: it wins, and the server's is refused naming both. Each line
/// the refusal suggests, pasted into the configuration as written, does
/// what the refusal says.
#[tokio::test(flavor = "multi_thread")]
async fn a_provided_catalog_tool_wins_and_each_line_its_refusal_suggests_works() {
    let url = github::serve().await;
    let plugins = plugin_dir(&[(
        "10-github",
        "github",
        Some("[config]\nowner = \"acme\"\nrepo = \"widgets\"\n[grants]\nhttp = [\"api.github.com\"]\n"),
    )]);
    let dir = tempfile::tempdir().unwrap();
    let (host, left_out) = build(dir.path(), &upstream_table(&url, ""), Some(plugins.path())).await;
    assert!(
        left_out.iter().any(|l| l.starts_with("upstream `gh`")),
        "{left_out:#?}"
    );
    let catalog_schema = listed(&host, "get_issue").expect("the catalog's get_issue").0;
    assert!(
        catalog_schema["properties"].get("key").is_some(),
        "{catalog_schema}"
    );
    assert!(
        catalog_schema["properties"].get("owner").is_none(),
        "{catalog_schema}"
    );
    // The fake's tools the catalog does not name are served as they are.
    assert!(listed(&host, "list_issues").is_some());
    let refused = refusal(&host, "get_issue", "upstream `gh`");
    assert!(
        refused.starts_with("upstream `gh` lists tool `get_issue`, but the name is the base-catalog tool's, implemented by plugin `github`"),
        "{refused}"
    );
    let prefix_line = quoted_after(&refused, "`prefix = ");
    let served_as = quoted_after(&refused, " as `");
    let bind_line = quoted_after(&refused, "`[bind] ");
    assert_eq!(
        (prefix_line, served_as, bind_line),
        ("prefix = \"gh_\"", "gh_get_issue", "[bind] get_issue = \"gh\"")
    );

    // The prefix: the server's tool beside the catalog's, as its own.
    let (host, _) = build(
        dir.path(),
        &upstream_table(&url, prefix_line),
        Some(plugins.path()),
    )
    .await;
    let (schema, description, ..) = listed(&host, served_as).expect("served under the prefix");
    assert_eq!(schema["required"], json!(["owner", "repo", "issue_number"]));
    assert_eq!(description, github::tools()[0].description);
    assert_eq!(listed(&host, "get_issue").unwrap().0, catalog_schema);
    let args = json!({"owner": "acme", "repo": "widgets", "issue_number": 7});
    let out = call_ok(&host, served_as, args.clone()).await;
    assert_eq!(
        out.structured_content,
        Some(json!({"tool": "get_issue", "arguments": args}))
    );
    assert!(
        host.refusals().iter().all(|r| r.source != "upstream `gh`"),
        "{:#?}",
        host.refusals()
    );

    // The binding: the catalog tool (its schema, as the plugin enriches
    // it) with the server as its backend; the plugin's own is refused.
    let bind = bind_line.strip_prefix("[bind] ").unwrap();
    let toml = format!("{}[bind]\n{bind}\n", upstream_table(&url, ""));
    let (host, _) = build(dir.path(), &toml, Some(plugins.path())).await;
    assert_eq!(listed(&host, "get_issue").unwrap().0, catalog_schema);
    assert!(
        refusal(&host, "get_issue", "plugin `github`").contains("bound to `gh` by `[bind]`"),
        "{:#?}",
        host.refusals()
    );
    assert!(
        host.refusals()
            .iter()
            .all(|r| !(r.tool == "get_issue" && r.source == "upstream `gh`")),
        "{:#?}",
        host.refusals()
    );
    let out = call_ok(&host, "get_issue", json!({"key": "#42"})).await;
    let answer = out.structured_content.expect("the fake answered");
    assert_eq!(answer["tool"], "get_issue", "{answer}");
}

/// `[bind] get_issue = "gh"` with no enricher of `issue_tracker` loaded:
/// the catalog tool cannot be listed, the server's tool is not served in
/// its place behind the user's back, and the refusal says which line to
/// remove; removed, the server's tool is served.
#[tokio::test(flavor = "multi_thread")]
async fn a_bind_to_the_server_that_cannot_serve_says_to_remove_it_and_removing_it_works() {
    let url = github::serve().await;
    let dir = tempfile::tempdir().unwrap();
    let table = upstream_table(&url, "");
    let (host, left_out) = build(dir.path(), &format!("{table}[bind]\nget_issue = \"gh\"\n"), None).await;
    assert!(listed(&host, "get_issue").is_none());
    let refused = refusal(&host, "get_issue", "upstream `gh`");
    assert!(left_out.contains(&refused), "{left_out:#?}");
    let remove = quoted_after(&refused, "`[bind] ");
    assert_eq!(remove, "[bind] get_issue = \"gh\"");
    assert!(
        refused.contains("no loaded enricher claims that tool's category `issue_tracker`")
            && refused.contains("remove that `[bind]` line to serve this one under its name"),
        "{refused}"
    );
    let err = call(&host, "get_issue", json!({})).await.unwrap_err();
    assert!(matches!(err, ToolError::NotFound(_)), "{err:?}");
    // The other five are the server's still.
    assert!(COLLIDING[1..].iter().all(|t| listed(&host, t).is_some()));

    let (host, left_out) = build(dir.path(), &table, None).await;
    assert!(left_out.is_empty(), "{left_out:#?}");
    let args = json!({"owner": "acme", "repo": "widgets", "issue_number": 1});
    let out = call_ok(&host, "get_issue", args.clone()).await;
    assert_eq!(
        out.structured_content,
        Some(json!({"tool": "get_issue", "arguments": args}))
    );
}
