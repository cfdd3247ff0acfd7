//! HTTP for tool plugins: only granted hosts are reached, and granted
//! secrets are added by the host without the plugin seeing them.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use serde_json::{Map, Value, json};
use toolhost::output::ToolError;
use toolhost::plugin::Plugin;
use toolhost_tests::{LoopbackServer, plugin_dir, runtime};

async fn tracker(manifest: &str) -> (Arc<Plugin>, tempfile::TempDir) {
    let dir = plugin_dir(&[("30-tracker", "tracker_tools", Some(manifest))]);
    let (rt, _) = runtime();
    let report = rt.load_dir(dir.path()).await.unwrap();
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    (report.plugins[0].clone(), dir)
}

async fn get_issue(p: &Plugin, key: &str) -> Result<Value, ToolError> {
    let args: Map<String, Value> = json!({"key": key}).as_object().unwrap().clone();
    let result = p
        .execute(
            "get_issue",
            &args,
            "c".into(),
            Arc::new(AtomicBool::new(false)),
            None,
        )
        .await
        .unwrap()?;
    Ok(result.structured().expect("a structured result"))
}

#[tokio::test(flavor = "multi_thread")]
async fn granted_hosts_are_reached_with_injected_secrets() {
    let server = LoopbackServer::start(Duration::ZERO, |r| {
        (
            200,
            json!({"key": r.path.trim_start_matches("/issues/")}).to_string(),
        )
    })
    .await;
    let host = server.addr.to_string();
    // SAFETY: set before any plugin reads it; this test binary runs no other
    // test that touches the variable.
    unsafe { std::env::set_var("TOOLHOST_TEST_TRACKER_TOKEN", "s3cret") };
    let manifest = format!(
        "[grants]\nhttp = [\"{host}\"]\n[grants.secrets.tracker]\nenv = \"TOOLHOST_TEST_TRACKER_TOKEN\"\n\
         header = \"Authorization\"\nprefix = \"Bearer \"\nhosts = [\"{host}\"]\n[config]\nbase_url = \"http://{host}\"\n"
    );
    let (p, _dir) = tracker(&manifest).await;
    assert_eq!(get_issue(&p, "WEB-7").await.unwrap(), json!({"key": "WEB-7"}));
    let seen = server.seen.lock().unwrap().clone();
    assert_eq!(seen[0].path, "/issues/WEB-7");
    assert!(
        seen[0]
            .headers
            .contains(&("authorization".into(), "Bearer s3cret".into())),
        "{:?}",
        seen[0].headers
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn ungranted_hosts_are_refused() {
    let server = LoopbackServer::start(Duration::ZERO, |_| (200, "{}".into())).await;
    let host = server.addr.to_string();
    // Granted a different port of the same address: still refused.
    let manifest = format!("[grants]\nhttp = [\"127.0.0.1:1\"]\n[config]\nbase_url = \"http://{host}\"\n");
    let (p, _dir) = tracker(&manifest).await;
    let err = get_issue(&p, "WEB-7").await.unwrap_err();
    assert!(
        matches!(&err, ToolError::Failed(m) if m.contains("HostNotAllowed")),
        "{err:?}"
    );
    // No grant at all.
    let (p, _dir) = tracker(&format!("[config]\nbase_url = \"http://{host}\"\n")).await;
    assert!(get_issue(&p, "WEB-7").await.is_err());
    assert!(
        server.seen.lock().unwrap().is_empty(),
        "nothing reached the server"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_missing_secret_is_a_load_error_naming_it() {
    let manifest = "[grants]\nhttp = [\"127.0.0.1:1\"]\n[grants.secrets.t]\nenv = \"TOOLHOST_TEST_UNSET_VARIABLE\"\n\
                    header = \"Authorization\"\nhosts = [\"127.0.0.1:1\"]\n[config]\nbase_url = \"http://127.0.0.1:1\"\n";
    let dir = plugin_dir(&[("30-tracker", "tracker_tools", Some(manifest))]);
    let (rt, _) = runtime();
    let report = rt.load_dir(dir.path()).await.unwrap();
    assert!(
        report.errors[0].message.contains("TOOLHOST_TEST_UNSET_VARIABLE"),
        "{:?}",
        report.errors
    );
}
