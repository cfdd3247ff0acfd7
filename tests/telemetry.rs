//! Telemetry after the OpenTelemetry MCP conventions, on `toolhost serve
//! --http` in front of a loopback upstream MCP server that records the
//! `_meta.traceparent` of each call it gets: a request's span (in the log,
//! at info) carries the conventions' attributes; a client's well-formed
//! `traceparent` continues through the gateway to the upstream under the
//! host's own span, a malformed one starts a new trace and is never echoed;
//! and `/metrics` holds `mcp_server_operation_duration_seconds` by method,
//! tool (`_OTHER` for a name not served, as in the host's own counters)
//! and error type, beside the host's own metrics. Over stdio, the same
//! span on a pipe; with `[telemetry]`, the spans exported over OTLP.
//! Tasks proxied are counted by status, and a tool's `execution` crosses
//! an upstream answering in plain JSON.

use std::sync::{Arc, Mutex};

use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Value, json};
use toolhost_tests::stdio::StdioServe;
use toolhost_tests::upstream::{Answering, TaskServer, ToolServer, tool};

use super::http_auth::{Running, client, initialize, post, serve_with_env};

/// A client's trace context, as a tracing client sends it.
const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
/// Not a traceparent (upper-case hex, a field too many), which must not
/// reach the log nor the upstream.
const MALFORMED: &str = "00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01-injected";

/// An upstream of one tool, `traced_echo`, whose `repo` a 2026-07-28
/// client repeats in an `Mcp-Param-Repo` header: it answers `ok`, and
/// records the `traceparent` of each call it gets in `seen`.
pub(super) fn traced(seen: Arc<Mutex<Vec<Option<String>>>>) -> ToolServer {
    let schema = json!({"type": "object", "properties": {
        "repo": {"type": "string", "x-mcp-header": "Repo"},
    }});
    ToolServer::new(
        vec![tool("traced_echo", "Answers ok", schema)],
        move |_, context| {
            let traceparent = context.meta.get_traceparent().map(str::to_owned);
            seen.lock().unwrap().push(traceparent);
            CallToolResult::success(vec![ContentBlock::text("ok")])
        },
    )
}

/// An MCP session opened at `base` without a token: its id.
async fn open_session(base: &str) -> String {
    let (status, headers, _) = post(base, None, None, initialize()).await;
    assert_eq!(status, 200);
    let id = headers["mcp-session-id"].to_str().unwrap().to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    post(base, None, Some(&id), initialized).await;
    id
}

/// The log line that ends the request `id`, its quotes taken out.
fn ended(log: &str, id: u64) -> String {
    end_of(log, id).unwrap_or_else(|| panic!("no end of request {id} in:\n{log}"))
}

fn end_of(log: &str, id: u64) -> Option<String> {
    log.lines()
        .map(|l| l.replace('"', ""))
        .find(|l| l.contains(&format!("jsonrpc.request.id={id} ")) && l.contains("answered"))
}

/// The log of `served` once it holds the end of request `id`: the host
/// writes it before it answers, but the test reads the child's stderr as
/// it comes, so the line may still be in the pipe when the answer is here.
fn log_once_ended(served: &Running, id: u64) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let log = served.log();
        if end_of(&log, id).is_some() || std::time::Instant::now() > deadline {
            return log;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
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
    let seen: Arc<Mutex<Vec<Option<String>>>> = Arc::default();
    let url = traced(seen.clone()).serve().await;
    let dir = tempfile::tempdir().unwrap();
    let config = format!("root = \".\"\n[[upstream]]\nname = \"up\"\nurl = \"{url}\"\n");
    // Plain text: the log goes to a pipe, not a terminal.
    let env = [
        ("RUST_LOG", "warn,toolhost::mcp::telemetry=info"),
        ("NO_COLOR", "1"),
    ];
    let served = serve_with_env(dir.path(), &config, "127.0.0.1:0", &[], &env).unwrap();
    let base = served.base.as_str();

    let id = open_session(base).await;
    let session = Some(id.as_str());
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

    let log = log_once_ended(&served, 6);
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

    let metrics = toolhost_tests::body_of(client().get(format!("{base}/metrics"))).await;
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
    // An unserved name is counted under the conventions' `_OTHER` there too.
    assert!(
        metrics
            .lines()
            .any(|l| l == r#"toolhost_calls_total{tool="_OTHER"} 1"#),
        "{metrics}"
    );
}

/// `toolhost serve` over stdio in `dir` (its `toolhost.toml`, an empty
/// plugin directory `plugins`), with `env`, spoken to line by line: the
/// handshake, then a call of `read` of `path` under the client's trace
/// context. The call's answer, and the process's output once its stdin
/// is closed (which stops it).
fn read_over_stdio(dir: &std::path::Path, env: &[(&str, &str)], path: &str) -> (Value, std::process::Output) {
    std::fs::create_dir_all(dir.join("plugins")).unwrap();
    let mut serve = StdioServe::spawn(
        toolhost_tests::toolhost()
            .current_dir(dir)
            .arg("--config")
            .arg(dir.join("toolhost.toml"))
            .arg("--plugins")
            .arg(dir.join("plugins"))
            .arg("serve")
            .envs(env.iter().copied()),
    );
    assert_eq!(serve.initialize(&initialize())["id"], 1);
    let params = json!({"name": "read", "arguments": {"path": path}, "_meta": {"traceparent": PARENT}});
    let answer = serve.request(2, "tools/call", params);
    (answer, serve.end())
}

/// Over stdio the transport is a pipe, there is no session id, and a
/// client's trace context is taken as over HTTP.
#[test]
fn a_stdio_request_is_traced_on_a_pipe() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "one\n").unwrap();
    std::fs::write(dir.path().join("toolhost.toml"), "root = \".\"\n").unwrap();
    let env = [
        ("RUST_LOG", "warn,toolhost::mcp::telemetry=info"),
        ("NO_COLOR", "1"),
    ];
    let (answer, out) = read_over_stdio(dir.path(), &env, "a.txt");
    assert!(
        answer["result"]["content"].to_string().contains("one"),
        "{answer}"
    );
    let log = String::from_utf8_lossy(&out.stderr);

    let call = ended(&log, 2);
    assert_eq!(field(&call, "network.transport"), "pipe", "{call}");
    assert_eq!(field(&call, "gen_ai.tool.name"), "read", "{call}");
    assert_eq!(field(&call, "trace_id"), TRACE_ID, "{call}");
    assert!(!call.contains("mcp.session.id"), "{call}");
}

/// With `[telemetry]`, the spans are exported over OTLP/HTTP (protobuf)
/// to a collector on loopback, with the collector's key from the
/// environment: a call's span carries the conventions' attributes and the
/// client's trace, and nothing of its arguments or result; a request
/// without a trace context starts a sampled trace of the host's own.
#[tokio::test(flavor = "multi_thread")]
async fn spans_are_exported_over_otlp_with_the_callers_trace_and_no_argument_value() {
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
    use opentelemetry_proto::tonic::trace::v1::Span;
    use prost::Message;

    const KEY: &str = "Bearer otlp-key-5d1e0b";
    let collector =
        toolhost_tests::LoopbackServer::start(std::time::Duration::ZERO, |_| (200, String::new())).await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes-7c3a.txt"), "the body 81f2\n").unwrap();
    let config = format!(
        "root = \".\"\n[telemetry]\nendpoint = \"http://{}\"\nservice_name = \"team-tools\"\n\
         [telemetry.headers_env]\nauthorization = \"TOOLHOST_TEST_OTLP_KEY\"\n",
        collector.addr
    );
    std::fs::write(dir.path().join("toolhost.toml"), config).unwrap();
    // The host exports what waits as it stops, when the call is answered.
    let path = dir.path().to_owned();
    let (answer, out) = tokio::task::spawn_blocking(move || {
        read_over_stdio(
            &path,
            &[("TOOLHOST_TEST_OTLP_KEY", KEY), ("NO_COLOR", "1")],
            "notes-7c3a.txt",
        )
    })
    .await
    .unwrap();
    assert!(answer.to_string().contains("the body 81f2"), "{answer}");
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{log}");
    assert!(
        !log.contains("otlp-key"),
        "the collector's key was logged:\n{log}"
    );

    let seen = collector.seen.lock().unwrap().clone();
    assert!(!seen.is_empty(), "nothing exported; log:\n{log}");
    let mut spans: Vec<(String, Span)> = Vec::new();
    for request in &seen {
        assert_eq!(
            (request.method.as_str(), request.path.as_str()),
            ("POST", "/v1/traces")
        );
        let header = |name: &str| {
            request
                .headers
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(header("authorization"), Some(KEY));
        assert_eq!(header("content-type"), Some("application/x-protobuf"));
        for secret in ["notes-7c3a", "81f2"] {
            assert!(
                !request.raw.windows(secret.len()).any(|w| w == secret.as_bytes()),
                "{secret} was exported"
            );
        }
        let export = ExportTraceServiceRequest::decode(request.raw.as_slice()).unwrap();
        for resource in export.resource_spans {
            let service = resource
                .resource
                .iter()
                .flat_map(|r| &r.attributes)
                .find(|a| a.key == "service.name")
                .and_then(|a| a.value.clone()?.value);
            let Some(Any::StringValue(service)) = service else {
                panic!("no service.name");
            };
            for scope in resource.scope_spans {
                spans.extend(scope.spans.into_iter().map(|s| (service.clone(), s)));
            }
        }
    }
    let attribute = |span: &Span, key: &str| {
        span.attributes
            .iter()
            .find(|a| a.key == key)
            .and_then(|a| match a.value.clone()?.value {
                Some(Any::StringValue(v)) => Some(v),
                _ => None,
            })
    };
    let (service, call) = spans
        .iter()
        .find(|(_, s)| attribute(s, "mcp.method.name").as_deref() == Some("tools/call"))
        .unwrap_or_else(|| panic!("no tools/call span in {spans:?}"));
    assert_eq!(service, "team-tools");
    assert_eq!(call.name, "tools/call read");
    assert_eq!(attribute(call, "gen_ai.tool.name").as_deref(), Some("read"));
    assert_eq!(attribute(call, "network.transport").as_deref(), Some("pipe"));
    assert_eq!(attribute(call, "jsonrpc.request.id").as_deref(), Some("2"));
    assert_eq!(hex(&call.trace_id), TRACE_ID);
    assert_eq!(hex(&call.parent_span_id), "00f067aa0ba902b7");
    assert_eq!(call.kind, 2, "server");
    assert!(call.end_time_unix_nano >= call.start_time_unix_nano);
    // The handshake had no trace context: a trace of the host's own,
    // sampled since it exports.
    let (_, handshake) = spans
        .iter()
        .find(|(_, s)| attribute(s, "mcp.method.name").as_deref() == Some("initialize"))
        .unwrap_or_else(|| panic!("no initialize span in {spans:?}"));
    assert_ne!(hex(&handshake.trace_id), TRACE_ID);
    assert!(handshake.parent_span_id.is_empty());
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `toolhost serve --http` over one upstream, `jobs`, the test suite's
/// task server answering as `answering`, and a session opened to it: the
/// server, the host's directory (kept as long as the host), the host and
/// the session's id.
async fn serving_jobs(answering: Answering) -> (TaskServer, tempfile::TempDir, Running, String) {
    let upstream = TaskServer::start(answering).await;
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "root = \".\"\n[[upstream]]\nname = \"jobs\"\nurl = \"{}\"\n",
        upstream.url()
    );
    let served = serve_with_env(dir.path(), &config, "127.0.0.1:0", &[], &[]).unwrap();
    let id = open_session(&served.base).await;
    (upstream, dir, served, id)
}

/// Tasks proxied to an upstream are counted in `/metrics` by each status
/// they are seen reach, once each: `working` as the call starts one,
/// `completed` as `tasks/get` finds it so, however often it is asked.
#[tokio::test(flavor = "multi_thread")]
async fn tasks_are_counted_by_status_in_metrics() {
    let (upstream, _dir, served, id) = serving_jobs(Answering::Sse).await;
    let base = served.base.as_str();
    let session = Some(id.as_str());
    let request = |id: u64, method: &str, params: Value| {
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        async move { post(base, None, session, message).await.2.unwrap() }
    };
    let params = json!({"name": "long_job", "arguments": {}, "task": {"ttl": 60_000}});
    let created = request(2, "tools/call", params).await;
    let task = &created["result"]["task"];
    assert_eq!(task["status"], "working", "{created}");
    let local = task["taskId"].as_str().unwrap().to_owned();
    assert_ne!(local, "t1", "the server's own id was passed on");
    for id in [3, 4] {
        let got = request(id, "tasks/get", json!({"taskId": local})).await;
        assert_eq!(got["result"]["status"], "completed", "{got}");
    }
    assert_eq!(
        upstream
            .methods()
            .iter()
            .filter(|(method, task)| method == "tools/call" && *task)
            .count(),
        1
    );

    let metrics = toolhost_tests::body_of(client().get(format!("{base}/metrics"))).await;
    for sample in [
        r#"toolhost_tasks_total{status="working"} 1"#,
        r#"toolhost_tasks_total{status="completed"} 1"#,
    ] {
        assert!(metrics.lines().any(|l| l == sample), "no {sample} in:\n{metrics}");
    }
}

/// An upstream over HTTP that answers in plain JSON rather than with an
/// event stream is proxied as one that streams: its tool's `execution`
/// reaches the client, its tasks start, are found and answer, and each
/// request reaches it once (none is asked again through rmcp's client).
#[tokio::test(flavor = "multi_thread")]
async fn a_plain_json_upstream_keeps_its_tools_execution_and_its_tasks() {
    for answering in [Answering::Json, Answering::Sse] {
        let (upstream, _dir, served, id) = serving_jobs(answering).await;
        let base = served.base.as_str();
        let session = Some(id.as_str());
        let request = |id: u64, method: &str, params: Value| {
            let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
            async move { post(base, None, session, message).await.2.unwrap() }
        };
        let listed = request(2, "tools/list", json!({})).await;
        let tools = listed["result"]["tools"].as_array().unwrap();
        let job = tools.iter().find(|t| t["name"] == "long_job").unwrap();
        assert_eq!(job["execution"], json!({"taskSupport": "optional"}), "{job}");

        let params = json!({"name": "long_job", "arguments": {}, "task": {"ttl": 60_000}});
        let created = request(3, "tools/call", params).await;
        assert_eq!(created["result"]["task"]["status"], "working", "{created}");
        let task = created["result"]["task"]["taskId"].as_str().unwrap().to_owned();
        let got = request(4, "tasks/get", json!({"taskId": task})).await;
        assert_eq!(got["result"]["status"], "completed", "{got}");
        let result = request(5, "tasks/result", json!({"taskId": task})).await;
        assert_eq!(result["result"]["content"][0]["text"], "done", "{result}");

        let methods = upstream.methods();
        for method in ["tools/list", "tasks/get", "tasks/result"] {
            let asked = methods.iter().filter(|(m, _)| m == method).count();
            assert_eq!(asked, 1, "{method} asked {asked} times: {methods:?}");
        }
        let tasks = methods
            .iter()
            .filter(|(m, task)| m == "tools/call" && *task)
            .count();
        assert_eq!(tasks, 1, "{methods:?}");
    }
}
