//! Telemetry after the OpenTelemetry MCP conventions, on `toolhost serve
//! --http` in front of a loopback upstream MCP server that records the
//! `_meta.traceparent` of each call it gets: a request's span (in the log,
//! at info) carries the conventions' attributes; a client's well-formed
//! `traceparent` continues through the gateway to the upstream under the
//! host's own span, a malformed one starts a new trace and is never echoed;
//! and `/metrics` holds `mcp_server_operation_duration_seconds` by method,
//! tool (`_OTHER` for a name not served) and error type, beside the host's
//! own metrics. Over stdio, the same span on a pipe.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use super::http_auth::{client, initialize, post, serve_with_env};

/// A client's trace context, as a tracing client sends it.
const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
/// Not a traceparent (upper-case hex, a field too many), which must not
/// reach the log nor the upstream.
const MALFORMED: &str = "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01-injected";

pub(super) mod upstream {
    use std::sync::{Arc, Mutex};

    use rmcp::model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
        PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    };
    use rmcp::service::{RequestContext, RoleServer};
    use rmcp::{ErrorData, ServerHandler};
    use serde_json::json;

    /// One tool, `traced_echo`, whose `repo` a 2026-07-28 client repeats
    /// in an `Mcp-Param-Repo` header; the `traceparent` of each call it
    /// gets.
    #[derive(Clone, Default)]
    pub struct Traced {
        pub seen: Arc<Mutex<Vec<Option<String>>>>,
    }

    impl ServerHandler for Traced {
        fn get_info(&self) -> ServerConfig {
            ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
        }

        async fn list_tools(
            &self,
            _request: Option<PaginatedRequestParams>,
            _context: RequestContext<RoleServer>,
        ) -> Result<ListToolsResult, ErrorData> {
            let schema = json!({"type": "object", "properties": {
                "repo": {"type": "string", "x-mcp-header": "Repo"},
            }});
            let tool = Tool::new(
                "traced_echo",
                "Answers ok",
                Arc::new(schema.as_object().unwrap().clone()),
            );
            Ok(ListToolsResult::with_all_items(vec![tool]))
        }

        async fn call_tool(
            &self,
            _request: CallToolRequestParams,
            context: RequestContext<RoleServer>,
        ) -> Result<CallToolResponse, ErrorData> {
            let traceparent = context.meta.get_traceparent().map(str::to_owned);
            self.seen.lock().unwrap().push(traceparent);
            Ok(CallToolResult::success(vec![ContentBlock::text("ok")]).into())
        }
    }
}

/// The log line that ends the request `id`, its quotes taken out.
fn ended(log: &str, id: u64) -> String {
    log.lines()
        .map(|l| l.replace('"', ""))
        .find(|l| l.contains(&format!("jsonrpc.request.id={id} ")) && l.contains("answered"))
        .unwrap_or_else(|| panic!("no end of request {id} in:\n{log}"))
}

/// The value of `field` on a log line.
fn field<'a>(line: &'a str, field: &str) -> &'a str {
    let start = line
        .find(&format!("{field}="))
        .unwrap_or_else(|| panic!("no {field} in {line}"))
        + field.len()
        + 1;
    let rest = &line[start..];
    &rest[..rest.find([' ', '}']).unwrap_or(rest.len())]
}

#[tokio::test(flavor = "multi_thread")]
async fn spans_follow_the_mcp_conventions_and_a_trace_continues_through_the_gateway() {
    let traced = upstream::Traced::default();
    let seen: Arc<Mutex<Vec<Option<String>>>> = traced.seen.clone();
    let url = toolhost_tests::mcp_on_loopback(traced).await;
    let dir = tempfile::tempdir().unwrap();
    let config = format!("root = \".\"\n[[upstream]]\nname = \"up\"\nurl = \"{url}\"\n");
    // Plain text: the log goes to a pipe, not a terminal.
    let env = [
        ("RUST_LOG", "warn,toolhost::mcp::telemetry=info"),
        ("NO_COLOR", "1"),
    ];
    let served = serve_with_env(dir.path(), &config, "127.0.0.1:0", &[], &env).unwrap();
    let base = served.base.as_str();

    let (status, headers, _) = post(base, None, None, initialize()).await;
    assert_eq!(status, 200);
    let id = headers["mcp-session-id"].to_str().unwrap().to_owned();
    let session = Some(id.as_str());
    post(
        base,
        None,
        session,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await;
    let request = |id: u64, method: &str, params: Value| {
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        post(base, None, session, message)
    };
    let call = |name: &str, traceparent: &str| json!({"name": name, "arguments": {}, "_meta": {"traceparent": traceparent}});

    let (_, _, listed) = request(2, "tools/list", json!({})).await;
    let listed = listed.unwrap();
    assert!(
        listed["result"]["tools"].to_string().contains("traced_echo"),
        "{listed}"
    );
    let (_, _, answer) = request(3, "tools/call", call("traced_echo", PARENT)).await;
    assert_eq!(answer.unwrap()["result"]["content"][0]["text"], "ok");
    let (_, _, answer) = request(4, "tools/call", call("traced_echo", MALFORMED)).await;
    assert_eq!(answer.unwrap()["result"]["content"][0]["text"], "ok");
    let (_, _, answer) = request(5, "tools/call", call("no_such_tool", PARENT)).await;
    assert_eq!(answer.unwrap()["result"]["isError"], true);
    let (_, _, answer) = request(6, "prompts/get", json!({"name": "no-such-prompt"})).await;
    assert_eq!(answer.unwrap()["error"]["code"], -32602);

    // The trace continues upstream under the host's span; the malformed
    // context is replaced by a new trace.
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2, "{seen:?}");
    let (joined, fresh) = (seen[0].clone().unwrap(), seen[1].clone().unwrap());
    assert!(
        joined.starts_with(&format!("00-{TRACE_ID}-")) && joined.ends_with("-01"),
        "{joined}"
    );
    assert!(
        !joined.contains("00f067aa0ba902b7"),
        "the client's span passed on as the host's: {joined}"
    );
    assert!(!fresh.to_lowercase().contains(TRACE_ID), "{fresh}");
    assert_eq!(fresh.len(), 55, "{fresh}");

    let log = served.log();
    assert!(
        !log.contains(MALFORMED) && !log.contains("injected"),
        "echoed:\n{log}"
    );
    let first = ended(&log, 3);
    for (name, value) in [
        ("mcp.method.name", "tools/call"),
        ("gen_ai.tool.name", "traced_echo"),
        ("gen_ai.operation.name", "execute_tool"),
        ("network.transport", "tcp"),
        ("mcp.session.id", id.as_str()),
        ("trace_id", TRACE_ID),
        ("parent_span_id", "00f067aa0ba902b7"),
        ("otel.kind", "server"),
    ] {
        assert_eq!(field(&first, name), value, "{first}");
    }
    // The upstream's parent is the host's span of the call.
    assert_eq!(joined, format!("00-{TRACE_ID}-{}-01", field(&first, "span_id")));
    assert!(!first.contains("error.type"), "{first}");
    let second = ended(&log, 4);
    assert!(!second.contains("parent_span_id"), "{second}");
    assert_eq!(&fresh[3..35], field(&second, "trace_id"));
    assert_eq!(field(&ended(&log, 5), "error.type"), "tool_error");
    let failed = ended(&log, 6);
    assert_eq!(field(&failed, "mcp.method.name"), "prompts/get");
    assert_eq!(field(&failed, "error.type"), "-32602");
    assert_eq!(field(&ended(&log, 2), "mcp.method.name"), "tools/list");
    // The handshake too, before the session had an id.
    let handshake = ended(&log, 1);
    assert_eq!(field(&handshake, "mcp.method.name"), "initialize");
    assert!(!handshake.contains("mcp.session.id"), "{handshake}");

    let metrics = client()
        .get(format!("{base}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let name = "mcp_server_operation_duration_seconds";
    for (labels, count) in [
        (
            r#"mcp_method_name="tools/call",gen_ai_tool_name="traced_echo",error_type="""#,
            2,
        ),
        (
            r#"mcp_method_name="tools/call",gen_ai_tool_name="_OTHER",error_type="tool_error""#,
            1,
        ),
        (
            r#"mcp_method_name="tools/list",gen_ai_tool_name="",error_type="""#,
            1,
        ),
        (
            r#"mcp_method_name="initialize",gen_ai_tool_name="",error_type="""#,
            1,
        ),
        (
            r#"mcp_method_name="prompts/get",gen_ai_tool_name="",error_type="-32602""#,
            1,
        ),
    ] {
        let sample = format!("{name}_count{{{labels}}} {count}");
        assert!(metrics.lines().any(|l| l == sample), "no {sample} in:\n{metrics}");
    }
    assert!(metrics.contains(&format!("# UNIT {name} seconds")), "{metrics}");
    assert!(
        !metrics.contains("no_such_tool"),
        "an unserved name became a label:\n{metrics}"
    );
    // The host's own metrics are still there.
    assert!(
        metrics
            .lines()
            .any(|l| l == r#"toolhost_calls_total{tool="traced_echo"} 2"#),
        "{metrics}"
    );
}

/// Over stdio the transport is a pipe, there is no session id, and a
/// client's trace context is taken as over HTTP.
#[test]
fn a_stdio_request_is_traced_on_a_pipe() {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::process::Stdio;

    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("plugins")).unwrap();
    std::fs::write(dir.path().join("a.txt"), "one\n").unwrap();
    std::fs::write(dir.path().join("toolhost.toml"), "root = \".\"\n").unwrap();
    let mut child = toolhost_tests::toolhost()
        .current_dir(dir.path())
        .arg("--config")
        .arg(dir.path().join("toolhost.toml"))
        .arg("--plugins")
        .arg(dir.path().join("plugins"))
        .arg("serve")
        .envs([
            ("RUST_LOG", "warn,toolhost::mcp::telemetry=info"),
            ("NO_COLOR", "1"),
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut answers = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut send = |message: Value| writeln!(stdin, "{message}").unwrap();
    send(initialize());
    let answer: Value = serde_json::from_str(&answers.next().unwrap().unwrap()).unwrap();
    assert_eq!(answer["id"], 1, "{answer}");
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let params = json!({"name": "read", "arguments": {"path": "a.txt"}, "_meta": {"traceparent": PARENT}});
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}));
    let answer: Value = serde_json::from_str(&answers.next().unwrap().unwrap()).unwrap();
    assert_eq!(answer["id"], 2, "{answer}");
    assert!(
        answer["result"]["content"].to_string().contains("one"),
        "{answer}"
    );
    drop(stdin);
    child.wait().unwrap();
    let mut log = String::new();
    child.stderr.take().unwrap().read_to_string(&mut log).unwrap();

    let call = ended(&log, 2);
    assert_eq!(field(&call, "network.transport"), "pipe", "{call}");
    assert_eq!(field(&call, "gen_ai.tool.name"), "read", "{call}");
    assert_eq!(field(&call, "trace_id"), TRACE_ID, "{call}");
    assert!(!call.contains("mcp.session.id"), "{call}");
}
