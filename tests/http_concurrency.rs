//! Contract 0.3's concurrent HTTP (`http.start`, `pending.wait`, the SDK's
//! `fetch_all`), end to end: `toolhost serve` over stdio with the
//! `fixture_fan_out` component, called by an MCP client, its requests
//! answered by a loopback server that counts the requests open at once and
//! those whose client went away. Nothing is timed: concurrency shows as the
//! most requests open at once, an abort as a request its client left.

use std::time::Duration;

use rmcp::model::{CallToolRequest, CallToolRequestParams, CallToolResult, ClientRequest};
use rmcp::service::PeerRequestOptions;
use serde_json::{Value, json};
use toolhost_tests::{LoopbackServer, plugin_dir, stdio_client, toolhost};

/// Each request's delay: `/slow` is answered after a minute (a request only
/// an abort ends early), anything else after `latency`.
async fn server(latency: Duration) -> LoopbackServer {
    LoopbackServer::start_with_delays(
        move |r| {
            if r.path == "/slow" {
                Duration::from_secs(60)
            } else {
                latency
            }
        },
        |r| (200, json!({"path": r.path}).to_string()),
    )
    .await
}

type Client = rmcp::service::RunningService<rmcp::RoleClient, ()>;

/// `toolhost serve` over stdio with the fan-out plugin granted `server`'s
/// origin, with `limits` as its manifest's `[limits]` table.
async fn serve(server: &LoopbackServer, limits: &str) -> (Client, tempfile::TempDir) {
    let manifest = format!(
        "[grants]\nhttp = [\"http://{}\"]\n[limits]\n{limits}",
        server.addr
    );
    let dir = plugin_dir(&[("fanout", "fixture_fan_out", Some(&manifest))]);
    let mut command = tokio::process::Command::from(toolhost());
    command.arg("--plugins").arg(dir.path()).arg("serve");
    (stdio_client(command).await, dir)
}

fn params(tool: &str, args: Value) -> CallToolRequestParams {
    let mut params = CallToolRequestParams::new(tool.to_owned());
    params.arguments = args.as_object().cloned();
    params
}

async fn call(client: &Client, tool: &str, args: Value) -> CallToolResult {
    client
        .peer()
        .call_tool(params(tool, args))
        .await
        .expect("an answer")
}

fn structured(result: &CallToolResult) -> &Value {
    assert_ne!(result.is_error, Some(true), "{result:?}");
    result.structured_content.as_ref().expect("a structured result")
}

#[tokio::test(flavor = "multi_thread")]
async fn fetch_all_has_its_three_requests_in_flight_at_once() {
    let server = server(Duration::from_millis(300)).await;
    let (client, _dir) = serve(&server, "").await;
    let base = format!("http://{}", server.addr);
    let urls: Vec<String> = (1..=3).map(|i| format!("{base}/issue/{i}")).collect();
    let result = call(&client, "fetch_all", json!({ "urls": urls })).await;

    let answers = structured(&result)["answers"].as_array().unwrap().clone();
    let paths: Vec<Value> = answers
        .iter()
        .map(|a| {
            assert_eq!(a["status"], 200, "{a}");
            serde_json::from_str::<Value>(a["body"].as_str().unwrap()).unwrap()["path"].clone()
        })
        .collect();
    // Answers in the order asked, all three open at the server at once.
    assert_eq!(paths, [json!("/issue/1"), json!("/issue/2"), json!("/issue/3")]);
    assert_eq!(server.seen.lock().unwrap().len(), 3);
    assert_eq!(server.most_open(), 3);
    client.cancel().await.unwrap();
}

/// The SDK's `fetch_all` takes more requests than the cap: past it, each
/// waits for the oldest in flight, so all are answered, never more than
/// the cap at once.
#[tokio::test(flavor = "multi_thread")]
async fn fetch_all_past_the_cap_answers_every_request_within_it() {
    let server = server(Duration::from_millis(100)).await;
    let (client, _dir) = serve(&server, "max_requests_per_call = 4\n").await;
    let urls: Vec<String> = (0..20)
        .map(|i| format!("http://{}/issue/{i}", server.addr))
        .collect();
    let result = call(&client, "fetch_all", json!({ "urls": urls })).await;

    let answers = structured(&result)["answers"].as_array().unwrap().clone();
    assert_eq!(answers.len(), 20);
    assert!(answers.iter().all(|a| a["status"] == 200), "{answers:?}");
    assert_eq!(server.seen.lock().unwrap().len(), 20);
    assert_eq!(server.most_open(), 4);
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_flood_of_started_requests_is_capped_per_call_and_named() {
    let server = server(Duration::ZERO).await;
    // Ten thousand refusals take the unoptimised test build a few hundred
    // ms: a budget that the tests running beside it cannot stretch it past.
    let (client, _dir) = serve(&server, "cpu_ms = 10000\n").await;
    let slow = format!("http://{}/slow", server.addr);
    let result = call(&client, "flood", json!({ "url": slow, "count": 10_000 })).await;

    let flood = structured(&result);
    assert_eq!(flood["started"], 16, "{flood}");
    assert_eq!(flood["refused"], 10_000 - 16, "{flood}");
    let refusal = flood["first_refusal"].as_str().unwrap();
    assert!(
        refusal.contains("plugin `fanout`") && refusal.contains("limits.max_requests_per_call = 16"),
        "{refusal}"
    );
    // The call returned, dropping its handles: its requests are aborted,
    // and none past the cap ever reached the server.
    assert!(server.until_none_open(Duration::from_secs(30)).await);
    assert!(server.seen.lock().unwrap().len() <= 16);

    // The host keeps serving, the plugin included.
    let fast = format!("http://{}/fast", server.addr);
    let result = call(&client, "fetch_all", json!({ "urls": [fast] })).await;
    assert_eq!(structured(&result)["answers"][0]["status"], 200);
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn the_plugins_cap_over_all_its_calls_is_named_too() {
    let server = server(Duration::ZERO).await;
    let (client, _dir) = serve(&server, "max_requests_in_flight = 4\n").await;
    let slow = format!("http://{}/slow", server.addr);
    let result = call(&client, "flood", json!({ "url": slow, "count": 100 })).await;

    let flood = structured(&result);
    assert_eq!(flood["started"], 4, "{flood}");
    let refusal = flood["first_refusal"].as_str().unwrap();
    assert!(
        refusal.contains("plugin `fanout`") && refusal.contains("limits.max_requests_in_flight = 4"),
        "{refusal}"
    );
    // The permits come back as the call's requests are aborted: the next
    // call starts its four again.
    assert!(server.until_none_open(Duration::from_secs(30)).await);
    let result = call(&client, "flood", json!({ "url": slow, "count": 100 })).await;
    assert_eq!(structured(&result)["started"], 4);
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cancelled_call_aborts_its_pending_requests() {
    let server = server(Duration::ZERO).await;
    let (client, _dir) = serve(&server, "").await;
    let slow = format!("http://{}/slow", server.addr);
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(params(
        "fetch_all",
        json!({ "urls": [&slow, &slow, &slow] }),
    )));
    let handle = client
        .peer()
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
        .unwrap();
    // All three are open at the server, each to be answered in a minute.
    let all_open = async {
        while server.seen.lock().unwrap().len() < 3 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(30), all_open)
        .await
        .expect("the three requests reach the server");
    handle
        .cancel(Some("the user changed their mind".into()))
        .await
        .unwrap();

    assert!(server.until_none_open(Duration::from_secs(30)).await);
    assert_eq!(server.abandoned(), 3);

    // The plugin serves the next call.
    let fast = format!("http://{}/fast", server.addr);
    match client
        .peer()
        .call_tool(params("fetch_all", json!({ "urls": [fast] })))
        .await
    {
        Ok(result) => assert_eq!(structured(&result)["answers"][0]["status"], 200),
        Err(e) => panic!("{e}"),
    }
    client.cancel().await.unwrap();
}
