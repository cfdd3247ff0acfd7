//! MCP 2026-07-28's tasks extension, served over an upstream's 2025-11-25
//! tasks: requests written by hand, as a 2026-07-28 client sends them over
//! streamable HTTP (each with its revision and capabilities in `_meta`,
//! and the `Mcp-Method` / `Mcp-Name` headers), to `toolhost serve --http`
//! in front of the test suite's task server.

use std::time::Duration;

use serde_json::{Value, json};
use toolhost_tests::upstream::{Answering, TaskServer};

use super::http_auth::{
    ISSUER, RESOURCE, Running, caller_jwt, client, es256_key, initialize, jsonrpc_in, post, serve_with_env,
};

const REVISION: &str = "2026-07-28";
const TASKS: &str = "io.modelcontextprotocol/tasks";

/// One 2026-07-28 request over HTTP, as `token`'s, declaring the tasks
/// extension if `declares`: the HTTP status and the JSON-RPC answer.
async fn request(
    base: &str,
    token: Option<&str>,
    method: &str,
    mut params: Value,
    declares: bool,
) -> (u16, Value) {
    let capabilities = if declares {
        json!({"extensions": {TASKS: {}}, "elicitation": {"form": {}}})
    } else {
        json!({})
    };
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": REVISION,
        "io.modelcontextprotocol/clientInfo": {"name": "tasks-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    });
    let name = params.get("name").or_else(|| params.get("taskId")).cloned();
    let message = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let mut request = client()
        .post(format!("{base}/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", REVISION)
        .header("mcp-method", method)
        .body(message.to_string());
    if let Some(Value::String(name)) = name {
        request = request.header("mcp-name", name);
    }
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    let answer =
        jsonrpc_in(&text).unwrap_or_else(|| panic!("{method}: no JSON-RPC answer (HTTP {status}): {text}"));
    (status, answer)
}

/// `toolhost serve --http` in front of the task server as upstream `jobs`,
/// `extra` added to its table: the server, the host's directory and the
/// host.
async fn serving_jobs(extra: &str) -> (TaskServer, tempfile::TempDir, Running) {
    let upstream = TaskServer::start(Answering::Sse).await;
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "root = \".\"\n[[upstream]]\nname = \"jobs\"\nurl = \"{}\"\n{extra}\n",
        upstream.url()
    );
    let served = serve_with_env(dir.path(), &config, "127.0.0.1:0", &[], &[]).unwrap();
    (upstream, dir, served)
}

/// Call `tool` as `token`'s, declaring the extension: the id of the task
/// it started.
async fn started(base: &str, token: Option<&str>, tool: &str) -> String {
    let (_, created) = request(
        base,
        token,
        "tools/call",
        json!({"name": tool, "arguments": {}}),
        true,
    )
    .await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    created["result"]["taskId"].as_str().unwrap().to_owned()
}

/// Poll `tasks/get` until the task has ended (or 20 s have passed): its
/// last answer.
async fn ended(base: &str, token: Option<&str>, id: &str) -> Value {
    for _ in 0..200 {
        let (_, got) = request(base, token, "tasks/get", json!({"taskId": id}), true).await;
        let status = got["result"]["status"].as_str().unwrap_or_default();
        if !matches!(status, "working" | "input_required") {
            return got;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("task {id} did not end");
}

/// The extension is advertised to a 2026-07-28 client and not in a
/// 2025-11-25 session's `initialize` (which has the revision's own tasks);
/// a call of a task tool by a client that declares it is a task of the
/// host's, under its own id, run as the server's task and read with
/// `tasks/get`; without the declaration an optional tool runs plainly, a
/// required one is refused with -32021, and so are `tasks/*`; a
/// `params.task` is ignored, and 2025-11-25's `tasks/result` and
/// `tasks/list` are unknown methods. A multi-round-trip retry with a
/// `requestState` toolhost never gave is refused.
#[tokio::test(flavor = "multi_thread")]
async fn a_2026_client_runs_an_upstream_task_as_the_hosts_own_and_polls_it() {
    let (upstream, _dir, served) = serving_jobs("").await;
    let base = served.base.as_str();

    let (_, discovered) = request(base, None, "server/discover", json!({}), false).await;
    assert_eq!(
        discovered["result"]["capabilities"]["extensions"][TASKS],
        json!({}),
        "{discovered}"
    );
    let (_, _, init) = post(base, None, None, initialize()).await;
    let capabilities = &init.unwrap()["result"]["capabilities"];
    assert!(capabilities["tasks"].is_object(), "{capabilities}");
    assert!(capabilities["extensions"].get(TASKS).is_none(), "{capabilities}");

    let (_, created) = request(
        base,
        None,
        "tools/call",
        json!({"name": "long_job", "arguments": {}}),
        true,
    )
    .await;
    let task = &created["result"];
    assert_eq!(task["resultType"], "task", "{created}");
    assert_eq!(task["status"], "working", "{created}");
    let id = task["taskId"].as_str().unwrap().to_owned();
    assert_ne!(id, "t1", "the server's own id was passed on");
    assert!(
        task["ttlMs"].as_u64().is_some_and(|ttl| ttl <= 3_600_000),
        "{created}"
    );
    assert!(task["pollIntervalMs"].as_u64().is_some(), "{created}");

    let got = ended(base, None, &id).await;
    let result = &got["result"];
    assert_eq!(result["resultType"], "complete", "{got}");
    assert_eq!(result["taskId"], id.as_str(), "{got}");
    assert_eq!(result["status"], "completed", "{got}");
    assert_eq!(result["result"]["content"][0]["text"], "done", "{got}");
    assert!(!got.to_string().contains("related-task"), "{got}");
    let sent: Vec<(String, bool)> = upstream.methods();
    assert!(sent.contains(&("tools/call".into(), true)), "{sent:?}");
    assert!(sent.contains(&("tasks/result".into(), false)), "{sent:?}");

    // Without the extension: plainly, refused, refused.
    let plain = json!({"name": "long_job", "arguments": {}, "task": {"ttl": 1000}});
    let (_, ran) = request(base, None, "tools/call", plain, false).await;
    assert_eq!(ran["result"]["content"][0]["text"], "ran plainly", "{ran}");
    assert!(
        upstream
            .methods()
            .iter()
            .filter(|(m, task)| m == "tools/call" && *task)
            .count()
            == 1,
        "a `params.task` of a 2026-07-28 call started a task: {:?}",
        upstream.methods()
    );
    let (status, refused) = request(
        base,
        None,
        "tools/call",
        json!({"name": "held_job", "arguments": {}}),
        false,
    )
    .await;
    assert_eq!(
        (status, refused["error"]["code"].as_i64()),
        (400, Some(-32021)),
        "{refused}"
    );
    assert_eq!(
        refused["error"]["data"]["requiredCapabilities"]["extensions"][TASKS],
        json!({}),
        "{refused}"
    );
    let (_, refused) = request(base, None, "tasks/get", json!({"taskId": id}), false).await;
    assert_eq!(refused["error"]["code"], -32021, "{refused}");

    for method in ["tasks/result", "tasks/list"] {
        let (_, unknown) = request(base, None, method, json!({"taskId": id}), true).await;
        assert_eq!(unknown["error"]["code"], -32601, "{method}: {unknown}");
    }
    let (_, unknown) = request(base, None, "tasks/get", json!({"taskId": "t1"}), true).await;
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");

    // A retry naming a round trip toolhost never started names nothing, and
    // runs nothing.
    let calls = upstream.methods().len();
    let forged = json!({"name": "long_job", "arguments": {}, "requestState": "0123abcd",
        "inputResponses": {"q1": {"action": "accept", "content": {}}}});
    let (_, refused) = request(base, None, "tools/call", forged, false).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert_eq!(upstream.methods().len(), calls, "{:?}", upstream.methods());
}

/// `tasks/cancel` of a task the server holds: acknowledged, the server's
/// task cancelled, and the host's found `cancelled`.
#[tokio::test(flavor = "multi_thread")]
async fn a_cancelled_task_is_cancelled_on_its_server() {
    let (upstream, _dir, served) = serving_jobs("").await;
    let base = served.base.as_str();
    let id = started(base, None, "held_job").await;
    let (_, working) = request(base, None, "tasks/get", json!({"taskId": id}), true).await;
    assert_eq!(working["result"]["status"], "working", "{working}");

    let (_, acknowledged) = request(base, None, "tasks/cancel", json!({"taskId": id}), true).await;
    assert_eq!(
        acknowledged["result"],
        json!({"resultType": "complete"}),
        "{acknowledged}"
    );
    let got = ended(base, None, &id).await;
    assert_eq!(got["result"]["status"], "cancelled", "{got}");
    for _ in 0..100 {
        if upstream.methods().iter().any(|(m, _)| m == "tasks/cancel") {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the server's task was not cancelled: {:?}", upstream.methods());
}

/// A task is its caller's: another caller naming it (with a valid token of
/// their own) gets the answer an unknown id gets, for each of `tasks/get`,
/// `tasks/update` and `tasks/cancel`, and the task runs on, its owner's.
/// One caller's running tasks are capped, the refusal naming the cap, and
/// running tasks do not take the server's connections from other calls.
#[tokio::test(flavor = "multi_thread")]
async fn a_task_is_its_callers_alone_and_a_caller_runs_a_bounded_number() {
    let (key, jwk) = es256_key("k1");
    let (alice, mallory) = (caller_jwt(&key, "alice"), caller_jwt(&key, "mallory"));
    let auth = format!(
        "[auth.oauth]\nresource = \"{RESOURCE}\"\nissuer = \"{ISSUER}\"\njwks_file = \"jwks.json\"\n"
    );
    let upstream = TaskServer::start(Answering::Sse).await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("jwks.json"), json!({"keys": [jwk]}).to_string()).unwrap();
    let config = format!(
        "root = \".\"\n{auth}\n[[upstream]]\nname = \"jobs\"\nurl = \"{}\"\n",
        upstream.url()
    );
    let served = serve_with_env(dir.path(), &config, "127.0.0.1:0", &[], &[]).unwrap();
    let base = served.base.as_str();

    let held = json!({"name": "held_job", "arguments": {}});
    let (_, created) = request(base, Some(&alice), "tools/call", held.clone(), true).await;
    let id = created["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("{created}"))
        .to_owned();
    let (_, unknown) = request(
        base,
        Some(&mallory),
        "tasks/get",
        json!({"taskId": "no-such-task"}),
        true,
    )
    .await;
    for (method, params) in [
        ("tasks/get", json!({"taskId": id})),
        (
            "tasks/update",
            json!({"taskId": id, "inputResponses": {"q1": {"action": "accept"}}}),
        ),
        ("tasks/cancel", json!({"taskId": id})),
    ] {
        let (_, refused) = request(base, Some(&mallory), method, params, true).await;
        assert_eq!(refused["error"]["code"], -32602, "{method}: {refused}");
        assert_eq!(
            refused["error"]["message"].as_str().map(|m| m.replace(&id, "ID")),
            unknown["error"]["message"]
                .as_str()
                .map(|m| m.replace("no-such-task", "ID")),
            "{method}: another's task is told apart from none"
        );
    }
    let (_, own) = request(base, Some(&alice), "tasks/get", json!({"taskId": id}), true).await;
    assert_eq!(own["result"]["status"], "working", "{own}");
    assert!(!upstream.methods().iter().any(|(m, _)| m == "tasks/cancel"));

    // Alice has one running; twenty more asked at once fill her share with
    // fifteen, and the rest are refused naming the cap.
    let flood = (0..20).map(|_| request(base, Some(&alice), "tools/call", held.clone(), true));
    let answers = futures::future::join_all(flood).await;
    let started = answers
        .iter()
        .filter(|(_, a)| a["result"]["status"] == "working")
        .count();
    let refused: Vec<&str> = answers
        .iter()
        .filter_map(|(_, a)| a["error"]["message"].as_str())
        .collect();
    assert_eq!((started, refused.len()), (15, 5), "{answers:?}");
    assert!(
        refused.iter().all(|m| m.contains("16 tasks running")),
        "{refused:?}"
    );
    // Mallory's share is her own, and seventeen tasks running hold none of
    // the server's connections: a plain call still reaches it at once.
    let (_, created) = request(base, Some(&mallory), "tools/call", held, true).await;
    assert_eq!(created["result"]["status"], "working", "{created}");
    let plain = json!({"name": "long_job", "arguments": {}});
    let (_, ran) = request(base, Some(&mallory), "tools/call", plain, false).await;
    assert_eq!(ran["result"]["content"][0]["text"], "ran plainly", "{ran}");
}

/// A server that tells a task's status and result the key it was sent
/// (the host's secret for it): the client reads neither with the key.
#[tokio::test(flavor = "multi_thread")]
async fn a_tasks_status_and_result_pass_the_gate() {
    const KEY: &str = "sk-task-0123456789abcdef";
    let (_upstream, _dir, served) = serving_jobs(&format!("headers = {{ X-Api-Key = \"{KEY}\" }}")).await;
    let base = served.base.as_str();
    let id = started(base, None, "long_job").await;
    let got = ended(base, None, &id).await;
    let result = &got["result"];
    assert_eq!(result["status"], "completed", "{got}");
    let text = result["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("done for ") && !text.contains(KEY), "{got}");
    let message = result["statusMessage"]
        .as_str()
        .unwrap_or_else(|| panic!("{got}"));
    assert!(
        message.starts_with("completed for ") && !message.contains(KEY),
        "{got}"
    );
}
