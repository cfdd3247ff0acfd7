//! `toolhost serve --http` against what one client can make it send: real
//! HTTP requests to the release binary on loopback, a real tool plugin
//! (`text_tools`) reporting progress.

use serde_json::{Value, json};
use toolhost::bounds::MAX_PROGRESS_PER_CALL;
use toolhost_tests::stdio::StdioServe;
use toolhost_tests::{body_of, fill_plugin_dir};

use super::http_auth::{client, initialize, post, serve};
use super::toolhost;

/// A call that reports progress ten times the cap: its client is sent at
/// most the cap, the newest report replacing any it has not taken yet, and
/// the last one is the call's final report, before its result.
#[tokio::test(flavor = "multi_thread")]
async fn a_call_sends_at_most_the_cap_of_progress_notifications() {
    let dir = tempfile::tempdir().unwrap();
    let plugins = dir.path().join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    let steps = 10 * MAX_PROGRESS_PER_CALL;
    // About 1 ms of CPU a step.
    fill_plugin_dir(
        &plugins,
        &[(
            "20-text-tools",
            "text_tools",
            Some("[limits]\ncpu_ms = 30000\nwall_ms = 60000\n"),
        )],
    );
    let served = serve(dir.path(), "root = \".\"\n", "127.0.0.1:0", &[]).unwrap();
    let (status, headers, _) = post(&served.base, None, None, initialize()).await;
    assert_eq!(status, 200);
    let session = headers["mcp-session-id"].to_str().unwrap().to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(post(&served.base, None, Some(&session), initialized).await.0, 202);

    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "slow_count", "arguments": {"n": steps}, "_meta": {"progressToken": "count"}}});
    let request = client()
        .post(format!("{}/mcp", served.base))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-06-18")
        .body(call.to_string());
    let body = body_of(request).await;
    let events: Vec<Value> = body
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str(d.trim()).ok())
        .collect();
    let progress: Vec<f64> = events
        .iter()
        .filter(|e| e["method"] == "notifications/progress")
        .map(|e| {
            assert_eq!(e["params"]["progressToken"], "count", "{e}");
            e["params"]["progress"].as_f64().unwrap()
        })
        .collect();
    assert!(
        !progress.is_empty() && progress.len() <= MAX_PROGRESS_PER_CALL,
        "{} progress notifications for one call",
        progress.len()
    );
    assert!(progress.windows(2).all(|w| w[0] < w[1]), "{progress:?}");
    assert_eq!(progress.last(), Some(&(steps as f64)), "the final report is sent");
    let result = events.iter().find(|e| e["id"] == 7).expect("the call's result");
    assert_eq!(
        result["result"]["content"][0]["text"],
        format!("counted to {steps}"),
        "{result}"
    );
    let (at_result, last_progress) = (
        events.iter().position(|e| e["id"] == 7).unwrap(),
        events
            .iter()
            .rposition(|e| e["method"] == "notifications/progress")
            .unwrap(),
    );
    assert!(last_progress < at_result, "progress after the result");
}

/// A client that ends its session with `DELETE` is answered 204 No Content
/// (what the official Python SDK takes as ended; it warns at rmcp's 202),
/// and the session is gone: its next request is told so.
#[tokio::test(flavor = "multi_thread")]
async fn an_ended_session_is_answered_no_content_and_is_gone() {
    let dir = tempfile::tempdir().unwrap();
    let served = serve(dir.path(), "root = \".\"\n", "127.0.0.1:0", &[]).unwrap();
    let (status, headers, _) = post(&served.base, None, None, initialize()).await;
    assert_eq!(status, 200);
    let session = headers["mcp-session-id"].to_str().unwrap().to_owned();
    let ended = client()
        .delete(format!("{}/mcp", served.base))
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-06-18")
        .send()
        .await
        .unwrap();
    assert_eq!(ended.status(), 204);
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    assert_eq!(post(&served.base, None, Some(&session), list).await.0, 404);
}

/// A request of a method MCP defines, with params of another shape, is
/// answered invalid params saying what is wrong, over HTTP and stdio: rmcp
/// reads it as a custom request, which was answered "method not served".
/// A method MCP does not define still is. Params that are no object
/// (no MCP message at all) are answered the same, under the request's id.
#[tokio::test(flavor = "multi_thread")]
async fn a_defined_method_with_params_of_another_shape_is_invalid_params() {
    let dir = tempfile::tempdir().unwrap();
    let malformed = [
        (
            "tools/call",
            json!({"name": "read", "arguments": [1]}),
            "expected a map",
        ),
        (
            "logging/setLevel",
            json!({"level": "loud"}),
            "unknown variant `loud`",
        ),
    ];
    let served = serve(dir.path(), "root = \".\"\n", "127.0.0.1:0", &[]).unwrap();
    let (_, headers, _) = post(&served.base, None, None, initialize()).await;
    let session = headers["mcp-session-id"].to_str().unwrap().to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(post(&served.base, None, Some(&session), initialized).await.0, 202);
    let mut stdio = StdioServe::spawn(
        toolhost()
            .current_dir(dir.path())
            .arg("--plugins")
            .arg(dir.path().join("plugins"))
            .arg("serve"),
    );
    stdio.initialize(&initialize());
    for (id, (method, params, why)) in (2..).zip(malformed) {
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let (_, _, over_http) = post(&served.base, None, Some(&session), request).await;
        let over_stdio = stdio.request(id, method, params);
        for answer in [over_http.unwrap(), over_stdio] {
            let message = answer["error"]["message"].as_str().unwrap_or_default();
            assert_eq!(answer["error"]["code"], -32602, "{answer}");
            assert!(
                message.starts_with(&format!("invalid params of {method}: ")) && message.contains(why),
                "{answer}"
            );
        }
    }
    let unknown = stdio.request(9, "foo/bar", json!({}));
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");

    // Params that are no object make JSON that is no MCP message at all:
    // answered under its id all the same, over stdio before the line after
    // it (a client waiting on that id would otherwise wait forever), and
    // over HTTP as a bad request, not as a content type refused.
    let no_message = json!({"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": [1]});
    let (status, _, over_http) = post(&served.base, None, Some(&session), no_message.clone()).await;
    assert_eq!(status, 400, "{over_http:?}");
    stdio.send(&no_message);
    stdio.send(&json!({"jsonrpc": "2.0", "id": 11, "method": "ping"}));
    let over_stdio = stdio.message().unwrap();
    for answer in [over_http.unwrap(), over_stdio] {
        assert_eq!(answer["id"], 10, "{answer}");
        assert_eq!(answer["error"]["code"], -32602, "{answer}");
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(message.starts_with("invalid params of tools/call: "), "{answer}");
    }
    assert_eq!(stdio.answer(11)["result"], json!({}));
    // A client's mistakes are answered, not logged as the server's warnings.
    let stderr = String::from_utf8_lossy(&stdio.end().stderr).into_owned();
    assert!(!stderr.contains("WARN"), "{stderr}");
    // A body sent as JSON that is none is a parse error; one of another
    // type is still refused for its type.
    for (content_type, status, code) in [
        ("application/json; charset=utf-8", 400, Some(-32700)),
        ("text/plain", 415, None),
    ] {
        let answer = client()
            .post(format!("{}/mcp", served.base))
            .header("content-type", content_type)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", &session)
            .body("{\"jsonrpc\": \"2.0\", \"id\": 12,")
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), status, "{content_type}");
        let body: Option<Value> = serde_json::from_str(&answer.text().await.unwrap()).ok();
        assert_eq!(
            body.map(|b| b["error"]["code"].clone()),
            code.map(Value::from),
            "{content_type}"
        );
    }
}

/// A service manager's `SIGTERM` while a call is being answered and the
/// session holds its event stream open, as every capable client does: the
/// call is answered whole, the stream ends, and the server exits cleanly.
/// Before, the open stream kept it running until it was killed.
#[tokio::test(flavor = "multi_thread")]
async fn sigterm_answers_the_call_in_flight_ends_the_event_stream_and_exits() {
    let dir = tempfile::tempdir().unwrap();
    let plugins = dir.path().join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    // The call counts to 300 on about 300 ms of CPU, which a loaded
    // machine can stretch past the default budget of 500 ms.
    let budget = "[limits]\ncpu_ms = 10000\n";
    fill_plugin_dir(&plugins, &[("20-text-tools", "text_tools", Some(budget))]);
    let mut served = serve(dir.path(), "root = \".\"\n", "127.0.0.1:0", &[]).unwrap();
    let (status, headers, _) = post(&served.base, None, None, initialize()).await;
    assert_eq!(status, 200);
    let session = headers["mcp-session-id"].to_str().unwrap().to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(post(&served.base, None, Some(&session), initialized).await.0, 202);
    let mcp = |method: reqwest::Method| {
        client()
            .request(method, format!("{}/mcp", served.base))
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", "2025-06-18")
    };
    let mut stream = mcp(reqwest::Method::GET).send().await.unwrap();
    assert_eq!(stream.status(), 200);
    // About 1 ms of CPU a step: under way when the signal comes.
    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "slow_count", "arguments": {"n": 300}}});
    let answer = mcp(reqwest::Method::POST)
        .header("content-type", "application/json")
        .body(call.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);

    let exited = tokio::task::spawn_blocking(move || {
        let status = served.terminate(std::time::Duration::from_secs(60));
        (status, served.log())
    });
    let answer = answer.text().await.unwrap();
    assert!(
        answer.contains("counted to 300"),
        "the call in flight was cut: {answer}"
    );
    let ended = loop {
        match stream.chunk().await {
            Ok(Some(_)) => continue,
            ended => break ended,
        }
    };
    assert!(
        matches!(ended, Ok(None)),
        "the event stream did not end cleanly: {ended:?}"
    );
    let (status, log) = exited.await.unwrap();
    let status = status.unwrap_or_else(|| panic!("still running a minute after SIGTERM:\n{log}"));
    assert!(status.success(), "exit {status}:\n{log}");
}
