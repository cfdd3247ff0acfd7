//! Contract 0.3's `ask`: a plugin's `before-call` asks the user, the host
//! puts the question to the client that made the call as an MCP form
//! elicitation, and `after-ask` decides with the answer. End to end:
//! `toolhost serve` over stdio (and once over streamable HTTP) with the
//! `fixture_asker` component and an rmcp client that declares elicitation
//! and answers as the test says; and the official Python SDK as the client
//! (`tests/mcp/ask.py`).

use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction, ElicitationCapability,
};
use rmcp::service::{RequestContext, RoleClient, RunningService, ServiceExt};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ErrorData};
use serde_json::{Value, json};
use toolhost_tests::served::Served;
use toolhost_tests::{expect_driver_ok, guest, needs, plugin_dir, python_driver, stdio_client, toolhost};

/// What a [`User`] keeps of what it was sent.
type Kept = Arc<Mutex<Vec<String>>>;

/// A client that declares elicitation, answers each question with
/// `answer`, and keeps the messages it was shown.
#[derive(Clone)]
struct User {
    answer: ElicitResult,
    shown: Arc<Mutex<Vec<String>>>,
    /// The forms it was sent (their schemas, as JSON text).
    forms: Arc<Mutex<Vec<String>>>,
}

impl User {
    /// A user who answers `action` (and `content`): the handler, what it
    /// will be shown and the forms it will be sent.
    fn answering(action: ElicitationAction, content: Option<Value>) -> (Self, Kept, Kept) {
        let mut answer = ElicitResult::new(action);
        answer.content = content;
        let (shown, forms) = (Arc::default(), Arc::default());
        let user = User {
            answer,
            shown: Arc::clone(&shown),
            forms: Arc::clone(&forms),
        };
        (user, shown, forms)
    }
}

impl ClientHandler for User {
    fn get_info(&self) -> ClientConfig {
        let mut config = ClientConfig::default();
        config.capabilities.elicitation = Some(ElicitationCapability::new());
        config
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        if let ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } = request
        {
            self.shown.lock().unwrap().push(message);
            let form = serde_json::to_string(&requested_schema).unwrap();
            self.forms.lock().unwrap().push(form);
        }
        Ok(self.answer.clone())
    }
}

fn command(dir: &tempfile::TempDir) -> tokio::process::Command {
    let mut command = tokio::process::Command::from(toolhost());
    command.arg("--plugins").arg(dir.path()).arg("serve");
    command
}

fn asker() -> tempfile::TempDir {
    plugin_dir(&[("asker", "fixture_asker", None)])
}

/// A session whose user answers every question with `action` (and
/// `content`): the session, and what it was shown.
async fn user(
    dir: &tempfile::TempDir,
    action: ElicitationAction,
    content: Option<Value>,
) -> (RunningService<RoleClient, User>, Kept) {
    let (client, shown, _) = user_of(command(dir), action, content).await;
    (client, shown)
}

/// [`user`], of a session served by `command`: also the forms it was sent.
async fn user_of(
    command: tokio::process::Command,
    action: ElicitationAction,
    content: Option<Value>,
) -> (RunningService<RoleClient, User>, Kept, Kept) {
    let (handler, shown, forms) = User::answering(action, content);
    let transport = rmcp::transport::TokioChildProcess::builder(command)
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("toolhost serve starts")
        .0;
    (
        handler.serve(transport).await.expect("an MCP session"),
        shown,
        forms,
    )
}

async fn call<S: rmcp::service::Service<RoleClient>>(
    client: &RunningService<RoleClient, S>,
    tool: &str,
    args: Value,
) -> CallToolResult {
    let mut params = CallToolRequestParams::new(tool.to_owned());
    params.arguments = args.as_object().cloned();
    client.peer().call_tool(params).await.expect("an answer")
}

/// `toolhost serve --http` of the plugins in `dir`.
async fn serving_http(dir: &tempfile::TempDir) -> Served {
    let mut serve = toolhost();
    serve
        .arg("--plugins")
        .arg(dir.path())
        .args(["serve", "--http", "127.0.0.1:0"]);
    tokio::task::spawn_blocking(move || Served::start(serve))
        .await
        .unwrap()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// A user's answers to the `delete` question, and what the call says to
/// each: accepted, it runs; declined, it does not.
fn answers() -> [(ElicitationAction, Option<Value>, &'static str); 2] {
    [
        (
            ElicitationAction::Accept,
            Some(json!({"confirm": true})),
            "deleted notes.md",
        ),
        (ElicitationAction::Decline, None, "the user declined"),
    ]
}

/// The user was shown one question, the host's words naming the plugin
/// and the tool.
fn asked_once(shown: &Kept) {
    let shown = shown.lock().unwrap().clone();
    assert_eq!(shown.len(), 1, "{shown:?}");
    assert!(
        shown[0].starts_with("The plugin `asker` asks before the tool `delete` runs:"),
        "{shown:?}"
    );
}

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_question_accepted_lets_the_call_run() {
    let dir = asker();
    let (client, shown) = user(&dir, ElicitationAction::Accept, Some(json!({"confirm": true}))).await;
    let result = call(&client, "delete", json!({"path": "notes.md"})).await;
    assert_ne!(result.is_error, Some(true), "{result:?}");
    assert_eq!(text(&result), "deleted notes.md");
    let shown = shown.lock().unwrap().clone();
    assert_eq!(shown.len(), 1, "{shown:?}");
    // The host names the plugin and the tool; the plugin's words follow.
    assert!(
        shown[0].starts_with("The plugin `asker` asks before the tool `delete` runs:")
            && shown[0].ends_with("Delete notes.md?"),
        "{shown:?}"
    );
    client.cancel().await.unwrap();
}

/// The same questions over streamable HTTP, where the question goes out on
/// the call's own response stream and the answer comes back as a POST of
/// the session: accepted, the call runs; declined, it does not.
#[tokio::test(flavor = "multi_thread")]
async fn a_question_over_http_reaches_the_client_and_its_answer_the_call() {
    let dir = asker();
    let served = serving_http(&dir).await;
    for (action, content, expected) in answers() {
        let (handler, shown, _) = User::answering(action, content);
        let transport = StreamableHttpClientTransport::with_client(
            toolhost::internals::http_client::builder().build().unwrap(),
            StreamableHttpClientTransportConfig::with_uri(served.url.as_str()),
        );
        let client = handler.serve(transport).await.expect("an MCP session over HTTP");
        let result = call(&client, "delete", json!({"path": "notes.md"})).await;
        assert_eq!(text(&result), expected, "{result:?}");
        asked_once(&shown);
        client.cancel().await.unwrap();
    }
}

/// A 2026-07-28 client (rmcp's, in discover mode), which takes no
/// requests: the plugin's question ends its call `input_required`, rmcp's
/// round-trip driver asks the user and calls again, and the answer decides;
/// over stdio and over streamable HTTP.
#[tokio::test(flavor = "multi_thread")]
async fn a_2026_client_is_asked_by_its_calls_round_trip() {
    use rmcp::model::ProtocolVersion;
    use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
    let dir = asker();
    let served = serving_http(&dir).await;
    let modern = || ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    for over_http in [false, true] {
        for (action, content, expected) in answers() {
            let (handler, shown, _) = User::answering(action, content);
            let client = if over_http {
                let transport = StreamableHttpClientTransport::with_client(
                    toolhost::internals::http_client::builder().build().unwrap(),
                    StreamableHttpClientTransportConfig::with_uri(served.url.as_str()),
                );
                handler.serve_with_lifecycle(transport, modern()).await
            } else {
                let transport = rmcp::transport::TokioChildProcess::builder(command(&dir))
                    .stderr(std::process::Stdio::null())
                    .spawn()
                    .expect("toolhost serve starts")
                    .0;
                handler.serve_with_lifecycle(transport, modern()).await
            }
            .expect("a 2026-07-28 client");
            let mut params = CallToolRequestParams::new("delete");
            params.arguments = json!({"path": "notes.md"}).as_object().cloned();
            let result = client.call_tool(params).await.expect("an answer");
            assert_eq!(text(&result), expected, "over HTTP: {over_http}: {result:?}");
            asked_once(&shown);
            client.cancel().await.unwrap();
        }
    }
}

/// The same with the official Python SDK as the client, over stdio and
/// streamable HTTP (`tests/mcp/ask.py`): accepted, declined, and a client
/// that declared no elicitation.
#[test]
fn the_python_sdk_is_asked_over_both_transports_and_its_answer_decides() {
    needs!(Python);
    let mut command = python_driver("ask.py");
    command.arg("--plugin").arg(guest("fixture_asker"));
    expect_driver_ok(&mut command, "ask");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_question_declined_or_answered_no_blocks_the_call() {
    let dir = asker();
    for (action, content) in [
        (ElicitationAction::Decline, None),
        (ElicitationAction::Accept, Some(json!({"confirm": false}))),
    ] {
        let (client, _) = user(&dir, action, content).await;
        let result = call(&client, "delete", json!({"path": "notes.md"})).await;
        assert_eq!(result.is_error, Some(true), "{result:?}");
        assert_eq!(text(&result), "the user declined");
        client.cancel().await.unwrap();
    }
    let (client, _) = user(&dir, ElicitationAction::Cancel, None).await;
    let result = call(&client, "delete", json!({"path": "notes.md"})).await;
    assert_eq!(text(&result), "the user did not answer");
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_choice_reaches_after_ask_and_one_off_the_list_is_refused() {
    let dir = asker();
    let (client, _) = user(&dir, ElicitationAction::Accept, Some(json!({"choice": "dev"}))).await;
    let result = call(&client, "pick_branch", json!({})).await;
    assert_eq!(text(&result), "picked dev");
    client.cancel().await.unwrap();

    let (client, _) = user(&dir, ElicitationAction::Accept, Some(json!({"choice": "prod"}))).await;
    let result = call(&client, "pick_branch", json!({})).await;
    assert_eq!(result.is_error, Some(true), "{result:?}");
    assert!(
        text(&result).contains("does not fit the form"),
        "{}",
        text(&result)
    );
    client.cancel().await.unwrap();
}

/// A question is text a plugin hands over like any other: a secret value
/// in its message or in one of its options reaches the user scrubbed.
#[tokio::test(flavor = "multi_thread")]
async fn a_secret_in_a_question_or_its_options_is_redacted() {
    const SECRET: &str = "tok-4f1e9a7c2b";
    let dir = plugin_dir(&[(
        "asker",
        "fixture_asker",
        Some(
            "[grants]\nhttp = [\"http://127.0.0.1:9\"]\n\
             [grants.secrets.tracker]\nenv = \"ASK_TEST_SECRET\"\nheader = \"Authorization\"\n\
             hosts = [\"http://127.0.0.1:9\"]\nallow_loopback_http = true\n",
        ),
    )]);
    let mut serve = command(&dir);
    serve.env("ASK_TEST_SECRET", SECRET);
    let (client, shown, forms) =
        user_of(serve, ElicitationAction::Accept, Some(json!({"choice": "main"}))).await;
    let result = call(
        &client,
        "echo_question",
        json!({"message": format!("Use {SECRET}?"), "options": [SECRET, "main"]}),
    )
    .await;
    assert_eq!(text(&result), "picked main", "{result:?}");
    let (shown, forms) = (shown.lock().unwrap().clone(), forms.lock().unwrap().clone());
    assert_eq!((shown.len(), forms.len()), (1, 1), "{shown:?}");
    assert!(
        !shown[0].contains(SECRET) && shown[0].contains("redacted"),
        "{shown:?}"
    );
    assert!(
        !forms[0].contains(SECRET) && forms[0].contains("main"),
        "{forms:?}"
    );
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_without_elicitation_gets_an_error_naming_the_plugin() {
    let dir = asker();
    let client = stdio_client(command(&dir)).await;
    let result = call(&client, "delete", json!({"path": "notes.md"})).await;
    assert_eq!(result.is_error, Some(true), "{result:?}");
    assert!(
        text(&result).contains("plugin `asker` asks the user before `delete` runs")
            && text(&result).contains("did not declare form elicitation"),
        "{}",
        text(&result)
    );
    client.cancel().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn an_over_long_question_and_a_second_question_are_refused() {
    let dir = asker();
    let (client, shown) = user(&dir, ElicitationAction::Accept, Some(json!({"confirm": true}))).await;
    let result = call(&client, "long_question", json!({})).await;
    assert_eq!(result.is_error, Some(true), "{result:?}");
    assert!(
        text(&result).contains("asker") && text(&result).contains("1 to 1024"),
        "{}",
        text(&result)
    );
    assert!(
        shown.lock().unwrap().is_empty(),
        "an over-long question reached the user"
    );

    let result = call(&client, "ask_twice", json!({})).await;
    assert_eq!(result.is_error, Some(true), "{result:?}");
    assert!(
        text(&result).contains("asker") && text(&result).contains("asked again"),
        "{}",
        text(&result)
    );
    assert_eq!(shown.lock().unwrap().len(), 1);
    client.cancel().await.unwrap();
}

/// A call that no client made (as a prefetch, `toolhost call` or an
/// embedder's call) never asks: its error names the plugin.
#[tokio::test(flavor = "multi_thread")]
async fn a_call_with_no_client_never_asks() {
    let (report, _logs, _dir) = toolhost_tests::load(&[("asker", "fixture_asker", None)]).await;
    let host = toolhost::Toolhost::new(toolhost::internals::Sources {
        plugins: report.plugins.clone(),
        ..Default::default()
    })
    .await
    .unwrap();
    let error = toolhost_tests::call(&host, "delete", json!({"path": "notes.md"}))
        .await
        .unwrap_err();
    let toolhost::ToolError::Failed(message) = error else {
        panic!("{error:?}")
    };
    assert!(
        message.contains("plugin `asker` asks the user before `delete` runs")
            && message.contains("no client to ask"),
        "{message}"
    );
}
