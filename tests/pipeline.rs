//! Pipeline semantics over the `text_tools` plugin and the chain fixtures:
//! prepare-arguments, validation, before-call, transform-args, after-call,
//! cancellation and progress.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde_json::json;
use toolhost::internals::Sources;
use toolhost::{Block, CallOutput, ToolError};
use toolhost::{CallControl, Toolhost};
use toolhost_tests::{call, load};

async fn host_with(entries: &[(&str, &str, Option<&str>)], bindings: &[(&str, &str)]) -> Toolhost {
    let (report, _, _dir) = load(entries).await;
    Toolhost::new(Sources {
        plugins: report.plugins,
        bindings: bindings
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect::<BTreeMap<_, _>>(),
        ..Sources::default()
    })
    .await
    .unwrap()
}

async fn text_tools() -> Toolhost {
    host_with(&[("20-text-tools", "text_tools", None)], &[]).await
}

#[tokio::test]
async fn prepare_arguments_folds_the_legacy_field_and_after_call_overrides_details() {
    let host = text_tools().await;
    let out = call(&host, "word_count", json!({"input": "a b c"}))
        .await
        .unwrap();
    assert_eq!(out.structured(), Some(json!({"words": 3})));
    // after-call replaced the details whole: `checked` added, `chars` kept.
    assert_eq!(out.details, Some(json!({"chars": 5, "checked": true})));
    let err = call(&host, "word_count", json!({"input": "a", "text": "b"}))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ToolError::InvalidArgs(m) if m.contains("not both")),
        "{err:?}"
    );
}

#[tokio::test]
async fn invalid_arguments_name_the_field_and_coercion_fixes_near_misses() {
    let host = text_tools().await;
    let err = call(&host, "word_count", json!({"unique": true}))
        .await
        .unwrap_err();
    let ToolError::InvalidArgs(message) = err else {
        panic!("{err:?}")
    };
    assert!(
        message
            .starts_with("Validation failed for tool \"word_count\":\n  - text: required property missing"),
        "{message}"
    );
    assert!(
        message.contains("Received arguments:\n{\n  \"unique\": true\n}"),
        "{message}"
    );
    let out = call(&host, "word_count", json!({"text": 42, "unique": "true"}))
        .await
        .unwrap();
    assert_eq!(out.structured(), Some(json!({"words": 1, "unique": 1})));
}

#[tokio::test]
async fn before_call_blocks_and_errors_before_execute_skip_after_call() {
    let host = text_tools().await;
    let err = call(&host, "word_count", json!({"text": "a FORBIDDEN word"}))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ToolError::Failed(m) if m == "text mentions a forbidden word"),
        "{err:?}"
    );
    let err = call(&host, "no_such_tool", json!({})).await.unwrap_err();
    assert!(
        matches!(&err, ToolError::NotFound(m) if m == "Tool no_such_tool not found"),
        "{err:?}"
    );
    // A failed execution is a result the model reads, flagged as an error.
    let out = call(&host, "fail", json!({"kind": "failed"})).await.unwrap();
    assert!(out.is_error && out.text() == "fail: asked to fail", "{out:?}");
}

#[tokio::test]
async fn progress_is_reported_and_a_cancelled_call_stops() {
    let host = text_tools().await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let ctx = CallControl::new("p")
        .with_progress(Arc::new(move |p, total, _| sink.lock().unwrap().push((p, total))));
    let out = host.call_tool("slow_count", json!({"n": 3}), &ctx).await.unwrap();
    assert_eq!(out.text(), "counted to 3");
    assert_eq!(
        *seen.lock().unwrap(),
        [(1.0, Some(3.0)), (2.0, Some(3.0)), (3.0, Some(3.0))]
    );

    // Cancel from the first progress report of a call that would otherwise
    // run for minutes: the plugin sees it at its next step.
    let ctx = CallControl::new("c");
    let token = ctx.cancel.clone();
    let ctx = ctx.with_progress(Arc::new(move |_, _, _| token.cancel()));
    let err = host
        .call_tool("slow_count", json!({"n": 200000}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(
        (err.tool.as_str(), err.plugin.as_deref()),
        ("slow_count", Some("text-tools"))
    );
    assert!(matches!(err.error, ToolError::Cancelled), "{err:?}");
}

#[tokio::test]
async fn bound_catalog_tools_are_enriched_and_their_arguments_transformed() {
    // create_issue (issue_tracker) bound to the text-tools plugin: the chain
    // enrichers claim the category, so it is listed with their enum, and
    // transform-args maps `priority` before the backend runs. text_tools has
    // no create_issue, so its answer names the transformed call.
    let host = host_with(
        &[
            ("10-a", "fixture_chain_a", None),
            ("20-text-tools", "text_tools", None),
        ],
        &[("create_issue", "text-tools")],
    )
    .await;
    let listing = host.list_tools();
    let listed = listing.tools.iter().find(|t| t.name == "create_issue").unwrap();
    assert_eq!(
        listed.schema.property("priority").unwrap()["enum"],
        json!(["low", "high"])
    );
    let err = call(&host, "create_issue", json!({"title": "t", "priority": "urgent"}))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ToolError::InvalidArgs(m) if m.contains("  - priority: must be one of")),
        "{err:?}"
    );
    let out = call(&host, "create_issue", json!({"title": "t", "priority": "high"}))
        .await
        .unwrap();
    assert_eq!(out, CallOutput::error("no tool named create_issue"));
}

#[tokio::test]
async fn an_unbound_catalog_tool_is_not_listed_and_a_bad_binding_is_refused() {
    let host = host_with(&[("10-a", "fixture_chain_a", None)], &[]).await;
    assert!(host.list_tools().tools.iter().all(|t| t.name != "create_issue"));
    let err = Toolhost::new(Sources {
        bindings: [("create_issue".to_string(), "nobody".to_string())].into(),
        ..Sources::default()
    })
    .await
    .err()
    .unwrap()
    .to_string();
    assert_eq!(
        err,
        "binding of `create_issue`: `nobody` is neither a loaded tool plugin nor an upstream server"
    );
}

#[tokio::test]
async fn replaced_plugins_rebuild_the_catalog_and_a_replacement_that_breaks_it_changes_nothing() {
    let host = host_with(
        &[
            ("10-a", "fixture_chain_a", None),
            ("20-text-tools", "text_tools", None),
        ],
        &[("create_issue", "text-tools")],
    )
    .await;
    let rebuilds = host.subscribe();
    let names =
        |host: &Toolhost| -> Vec<String> { host.list_tools().tools.iter().map(|t| t.name.clone()).collect() };
    let before = names(&host);
    assert!(
        before.contains(&"create_issue".into()) && before.contains(&"word_count".into()),
        "{before:?}"
    );
    // Without text-tools the binding of create_issue has no backend.
    let err = host
        .replace_plugins(load(&[("10-a", "fixture_chain_a", None)]).await.0.plugins)
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "binding of `create_issue`: `text-tools` is neither a loaded tool plugin nor an upstream server"
    );
    assert_eq!(names(&host), before);
    assert!(!rebuilds.has_changed().unwrap());
    let out = call(&host, "word_count", json!({"text": "a b"})).await.unwrap();
    assert!(!out.is_error, "{out:?}");

    // Without chain-a nothing claims issue_tracker: create_issue is hidden.
    host.replace_plugins(load(&[("20-text-tools", "text_tools", None)]).await.0.plugins)
        .await
        .unwrap();
    assert!(rebuilds.has_changed().unwrap());
    let after = names(&host);
    assert!(
        !after.contains(&"create_issue".into()) && after.contains(&"word_count".into()),
        "{after:?}"
    );
    let out = call(&host, "word_count", json!({"text": "a b c"})).await.unwrap();
    let three_words = CallOutput {
        details: Some(json!({"chars": 5, "checked": true})),
        ..CallOutput::new(vec![Block::text("3 words")]).with_structured(json!({"words": 3}))
    };
    assert_eq!(out, three_words);
}

/// A server that accepts the connection and never answers is given up on
/// after `connect_timeout_s`, with an error naming it, and its request
/// with it: the connection is closed (rmcp's transport worker held it,
/// awaiting the answer, for as long as the host lived, one more with each
/// try).
#[tokio::test(flavor = "multi_thread")]
async fn an_upstream_that_never_answers_is_given_up_on() {
    use tokio::io::AsyncReadExt;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let silent = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut request = Vec::new();
        socket.read_to_end(&mut request).await.map(|_| request)
    });
    let config: toolhost::UpstreamConfig =
        serde_json::from_value(json!({"name": "mute", "url": url, "connect_timeout_s": 1})).unwrap();
    let connect = toolhost::internals::Upstream::connect(config, toolhost::plugin::tracing_sink());
    let err = tokio::time::timeout(std::time::Duration::from_secs(30), connect)
        .await
        .expect("connect gave up by itself")
        .err()
        .expect("a server that never answers is not connected");
    let request = tokio::time::timeout(std::time::Duration::from_secs(30), silent)
        .await
        .expect("the request given up on was closed")
        .unwrap()
        .unwrap();
    assert!(String::from_utf8_lossy(&request).starts_with("POST /mcp"));
    let message = err.to_string();
    assert!(
        message.contains("upstream `mute`") && message.contains("no answer within 1 s"),
        "{message}"
    );
}

/// A URL server that goes away between calls: the call meanwhile says why
/// (the connection refused), with no Rust type names, and once it is back
/// the next call is answered. The server sits behind a loopback relay
/// that is closed and opened again on the same port.
#[tokio::test(flavor = "multi_thread")]
async fn a_url_server_that_goes_away_is_named_with_why_and_served_again_when_back() {
    use rmcp::model::{CallToolResult, ContentBlock};
    use toolhost_tests::upstream::{ToolServer, tool};

    let echo = ToolServer::new(
        vec![tool("echo", "Answers ok", json!({"type": "object"}))],
        |_, _| CallToolResult::success(vec![ContentBlock::text("ok")]),
    );
    let server = toolhost_tests::mcp_on_loopback(echo).await;
    let server = server
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();
    // Every connection through the relay, all of them closed (and awaited)
    // with the listener when `close` is told.
    let relay = |listener: tokio::net::TcpListener, close: Arc<tokio::sync::Notify>| {
        let server = server.clone();
        tokio::spawn(async move {
            let mut connections = tokio::task::JoinSet::new();
            loop {
                let (mut client, _) = tokio::select! {
                    accepted = listener.accept() => accepted.unwrap(),
                    () = close.notified() => break,
                };
                let server = server.clone();
                connections.spawn(async move {
                    let mut upstream = tokio::net::TcpStream::connect(server).await.unwrap();
                    let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
                });
            }
            drop(listener);
            connections.shutdown().await;
        })
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let close = Arc::new(tokio::sync::Notify::new());
    let relaying = relay(listener, close.clone());
    let config: toolhost::UpstreamConfig =
        serde_json::from_value(json!({"name": "web", "url": format!("http://{address}/mcp")})).unwrap();
    let upstream = toolhost::internals::Upstream::connect(config, toolhost::plugin::tracing_sink())
        .await
        .unwrap();
    let echo = async || {
        upstream
            .call("echo", serde_json::Map::new(), None, None, None, None)
            .await
    };
    assert_eq!(echo().await.unwrap().text(), "ok");

    close.notify_one();
    relaying.await.unwrap();
    let down = echo().await.unwrap_err().to_string();
    // A new connection is refused; one the client pooled may be taken
    // before it has seen the close, and fails so (closed, or reset if the
    // request reached the closed socket): each says why.
    assert!(
        down.starts_with("upstream `web`, tool `echo`: ")
            && (down.contains("Connection refused")
                || down.contains("connection closed before message completed")
                || down.contains("Connection reset by peer")),
        "{down}"
    );
    assert!(!down.contains("rmcp::"), "no Rust type names: {down}");

    let relaying = relay(
        tokio::net::TcpListener::bind(address).await.unwrap(),
        close.clone(),
    );
    assert_eq!(echo().await.unwrap().text(), "ok");
    close.notify_one();
    relaying.await.unwrap();
}

/// A URL server not listening when the host starts (a gateway started
/// before its servers): the build names it, and its tools are served once
/// it answers, the catalog rebuilt and its watchers told.
#[tokio::test(flavor = "multi_thread")]
async fn a_url_server_down_at_start_is_served_once_it_comes_up() {
    let address = format!("127.0.0.1:{}", toolhost_tests::free_port());
    let config: toolhost::UpstreamConfig = serde_json::from_value(
        json!({"name": "late", "url": format!("http://{address}/mcp"), "prefix": "late_"}),
    )
    .unwrap();
    let (host, report) = Toolhost::builder().upstream(config).build().await.unwrap();
    let failed = report.lines().join("\n");
    assert!(
        failed.contains("upstream `late`") && failed.contains("Connection refused"),
        "{failed}"
    );
    let listed = |host: &Toolhost| host.list_tools().tools.iter().any(|t| t.name == "late_echo");
    assert!(!listed(&host));
    assert_eq!(host.gateway().unreached(), ["late"]);
    let unknown = not_found(&host, "late_echo").await;
    assert!(
        unknown.contains(
            "Tool late_echo not found: upstream `late`, whose tools are named `late_…`, has not answered yet"
        ),
        "{unknown}"
    );

    // Tried again 2 s after start, then after 4, 8, ...
    let listener = tokio::net::TcpListener::bind(&address).await.unwrap();
    echo_comes_up(&host, listener, "late_echo").await;
}

/// A server that answers `initialize` but refuses to list its tools three
/// times (one still loading them): the build names the failure, the
/// listing is tried again, then after 2 s and 4 s (doubling up to 30 s),
/// and its tools are served once it lists them. Before, a second failure
/// was the last try, and the server was served with no tools until it said
/// its list changed, which such a server has no reason to. The first
/// failed try is an error in the log saying when the next is, the next is
/// not (it may fail every 30 s for hours), and the recovery is noted.
#[tokio::test]
async fn a_server_refusing_to_list_its_tools_is_listed_again_until_it_does() {
    use rmcp::model::{CallToolResult, ContentBlock};
    use toolhost_tests::upstream::{ToolServer, tool};

    let (log, _capturing) = toolhost_tests::capture_log();

    let echo = ToolServer::new(
        vec![tool("echo", "Answers ok", json!({"type": "object"}))],
        |_, _| CallToolResult::success(vec![ContentBlock::text("ok")]),
    )
    .refusing_lists(3);
    let url = toolhost_tests::mcp_on_loopback(echo).await;
    let config: toolhost::UpstreamConfig =
        serde_json::from_value(json!({"name": "loading", "url": url})).unwrap();
    let (host, report) = Toolhost::builder().upstream(config).build().await.unwrap();
    let mut rebuilt = host.subscribe();
    let failed = report.lines().join("\n");
    assert!(
        failed.contains("upstream `loading`") && failed.contains("still loading its tools"),
        "{failed}"
    );
    let served = |host: &Toolhost| host.list_tools().tools.iter().any(|t| t.name == "echo");
    // A bound that fails a host that never lists them again, not a timing.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !served(&host) {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        tokio::time::timeout(left, rebuilt.changed())
            .await
            .expect("the tools were listed again and served")
            .unwrap();
    }
    let output = host
        .call_tool("echo", json!({}), &CallControl::new("0"))
        .await
        .unwrap();
    assert_eq!(output.text(), "ok");
    let log = String::from_utf8(log.lock().unwrap().clone()).unwrap();
    let tries: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("serving its previous tools"))
        .collect();
    assert!(
        matches!(tries[..], [first, second]
            if first.contains("ERROR") && first.contains("listed again in 2 s")
                && second.contains("DEBUG") && second.contains("2 failures in a row")),
        "{log}"
    );
    assert!(log.contains("listed its tools after 2 failed tries"), "{log}");
}

/// Why a call of `tool`, which `host` does not serve, got no result.
async fn not_found(host: &Toolhost, tool: &str) -> String {
    host.call_tool(tool, json!({}), &CallControl::new("0"))
        .await
        .unwrap_err()
        .to_string()
}

/// A call of a tool no server serves, while one with no prefix is not
/// reached, says that server may be the one: its tools could be named
/// anything.
#[tokio::test(flavor = "multi_thread")]
async fn an_unknown_tool_names_the_unreached_server_that_may_serve_it() {
    let address = format!("127.0.0.1:{}", toolhost_tests::free_port());
    let config: toolhost::UpstreamConfig =
        serde_json::from_value(json!({"name": "down", "url": format!("http://{address}/mcp")})).unwrap();
    let (host, _) = Toolhost::builder().upstream(config).build().await.unwrap();
    let unknown = not_found(&host, "create_page").await;
    assert!(
        unknown.contains(
            "Tool create_page not found: upstream `down` has not answered yet, and its tools are not known until it does"
        ),
        "{unknown}"
    );
}

/// Serve an `echo` server on `listener`, then wait for `host` to rebuild
/// its catalog (60 s at most: a bound that fails a host that never does)
/// and serve its tool as `name`, unreached no more.
async fn echo_comes_up(host: &Toolhost, listener: tokio::net::TcpListener, name: &str) {
    use rmcp::model::{CallToolResult, ContentBlock};
    use toolhost_tests::upstream::{ToolServer, tool};

    let mut rebuilt = host.subscribe();
    let echo = ToolServer::new(
        vec![tool("echo", "Answers ok", json!({"type": "object"}))],
        |_, _| CallToolResult::success(vec![ContentBlock::text("ok")]),
    );
    toolhost_tests::mcp_on(listener, echo);
    tokio::time::timeout(std::time::Duration::from_secs(60), rebuilt.changed())
        .await
        .expect("the catalog was rebuilt once the server answered")
        .unwrap();
    assert!(host.list_tools().tools.iter().any(|t| t.name == name));
    assert!(host.gateway().unreached().is_empty());
    let output = host
        .call_tool(name, json!({}), &CallControl::new("1"))
        .await
        .unwrap();
    assert_eq!(output.text(), "ok");
}

/// A server still starting when the build's `upstream_wait` ends (its
/// address taken, its answer not yet given) is named late, not failed:
/// the host is built without its tools, the same start goes on, and its
/// tools are served once it answers. A call of one of them meanwhile waits
/// for it; a tool it cannot serve (another prefix) is not found at once.
/// A host shut down meanwhile stops the start rather than wait for it, and
/// a call waiting for it is answered.
#[tokio::test(flavor = "multi_thread")]
async fn a_url_server_slower_than_the_wait_is_served_once_it_answers() {
    // Bound but not accepting: the request waits in the listen queue.
    let waited_on = async |name: &str| {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let config: toolhost::UpstreamConfig = serde_json::from_value(json!({
            "name": name, "url": format!("http://{}/mcp", listener.local_addr().unwrap()),
            "prefix": format!("{name}_"),
        }))
        .unwrap();
        let (host, report) = Toolhost::builder()
            .upstream(config)
            .upstream_wait(std::time::Duration::from_millis(200))
            .build()
            .await
            .unwrap();
        assert_eq!(report.late, [name]);
        (host, report, listener)
    };
    // A bound that fails a call held for good, not a timing.
    async fn within<T>(call: impl Future<Output = T>) -> T {
        tokio::time::timeout(std::time::Duration::from_secs(60), call)
            .await
            .expect("the call was answered")
    }
    let call = |host: &Arc<Toolhost>, name: &'static str| {
        let host = host.clone();
        async move { host.call_tool(name, json!({}), &CallControl::new("0")).await }
    };
    let (host, report, listener) = waited_on("slow").await;
    let host = Arc::new(host);
    assert!(report.upstreams.is_empty() && !report.is_empty(), "{report:?}");
    let listed = |host: &Toolhost| host.list_tools().tools.iter().any(|t| t.name == "slow_echo");
    assert!(!listed(&host));
    assert_eq!(host.gateway().unreached(), ["slow"]);
    let unknown = within(call(&host, "other_echo")).await.unwrap_err().to_string();
    assert!(unknown.contains("Tool other_echo not found"), "{unknown}");
    let waiting = tokio::spawn(within(call(&host, "slow_echo")));

    echo_comes_up(&host, listener, "slow_echo").await;
    assert_eq!(waiting.await.unwrap().unwrap().text(), "ok");

    // One that never answers: its start is stopped with the host (its
    // connection closed), not left to its `connect_timeout_s` (60 s), and
    // the call waiting for it told why it got no answer.
    let (host, _, silent) = waited_on("mute").await;
    let host = Arc::new(host);
    let mut waiting = std::pin::pin!(call(&host, "mute_echo"));
    assert!(futures::poll!(&mut waiting).is_pending(), "the call waits");
    host.shutdown().await;
    let unanswered = within(waiting).await.unwrap_err().to_string();
    assert!(
        unanswered.contains("upstream `mute`, whose tools are named `mute_…`, has not answered yet"),
        "{unanswered}"
    );
    let (mut socket, _) = silent.accept().await.unwrap();
    let mut request = Vec::new();
    tokio::time::timeout(
        std::time::Duration::from_secs(30),
        tokio::io::AsyncReadExt::read_to_end(&mut socket, &mut request),
    )
    .await
    .expect("the start's connection was closed with the host")
    .unwrap();
    assert!(String::from_utf8_lossy(&request).starts_with("POST /mcp"));
}

/// What a tool plugin's definition says reaches the listing and the
/// library's system prompt: the label as the title, the snippet, the
/// guidelines; a plugin reaches the network only with an `http` grant.
#[tokio::test(flavor = "multi_thread")]
async fn plugin_metadata_reaches_the_listing_and_the_system_prompt() {
    let host = text_tools().await;
    let listing = host.list_tools();
    let word_count = listing.tools.iter().find(|t| t.name == "word_count").unwrap();
    assert_eq!(word_count.meta.title.as_deref(), Some("Word count"));
    assert_eq!(word_count.meta.annotations.open_world_hint, Some(false));
    assert_eq!(
        host.system_prompt(),
        "Available tools:\n- word_count: count the words of a text\n\
         - slow_count: Count from 1 to n, about 1 ms per step, reporting progress.\n\
         - fail: Fail on purpose with the error kind given.\n\n\
         Guidelines:\n- Use word_count instead of counting words yourself."
    );

    let granted = "[grants]\nhttp = [\"example.com\"]\n";
    let host = host_with(&[("20-text-tools", "text_tools", Some(granted))], &[]).await;
    let listing = host.list_tools();
    assert!(
        listing
            .tools
            .iter()
            .all(|t| t.meta.annotations.open_world_hint == Some(true)),
        "{:?}",
        listing.tools.iter().map(|t| &t.meta).collect::<Vec<_>>()
    );
}
