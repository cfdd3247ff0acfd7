//! `[audit]`: every call a `toolhost serve` takes is one JSON line naming
//! its caller. Over streamable HTTP with OAuth, two callers' JWTs (each
//! with the claims `[auth] identity_claims` names, and one it does not);
//! over stdio, the local user; and a file that cannot be opened, named at
//! start. No argument's value is ever written.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};
use toolhost_tests::{stdio_client, toolhost};

use super::http_auth::{ISSUER, RESOURCE, es256_key, initialize, jwt, post, serve};

/// An argument's value no audit line may hold.
const SECRET_ARG: &str = "hunter2-a8f3e1c9";

/// The audit's lines, parsed.
fn lines(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(!text.contains(SECRET_ARG), "an argument was written:\n{text}");
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// Initialize a session with `token` and make the `tools/call`s of `calls`
/// (name, arguments) in it.
async fn calls(base: &str, token: &str, calls: &[(&str, Value)]) {
    let (status, headers, _) = post(base, Some(token), None, initialize()).await;
    assert_eq!(status, 200);
    let session = headers["mcp-session-id"].to_str().unwrap().to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    post(base, Some(token), Some(&session), initialized).await;
    for (id, (name, args)) in calls.iter().enumerate() {
        let call = json!({"jsonrpc": "2.0", "id": id + 2, "method": "tools/call",
                          "params": {"name": name, "arguments": args}});
        let (status, _, message) = post(base, Some(token), Some(&session), call).await;
        assert_eq!(status, 200, "{message:?}");
        assert!(message.unwrap().get("result").is_some());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn calls_over_http_are_audited_under_each_tokens_caller_and_claims() {
    let dir = tempfile::tempdir().unwrap();
    let (key, jwk) = es256_key("k1");
    std::fs::write(dir.path().join("jwks.json"), json!({"keys": [jwk]}).to_string()).unwrap();
    std::fs::write(dir.path().join("notes.md"), "ship on Friday\n").unwrap();
    let served = serve(
        dir.path(),
        &format!(
            "root = \".\"\n[audit]\nfile = \"audit.jsonl\"\n\
             [auth]\nidentity_claims = [\"email\", \"groups\"]\n\
             [auth.oauth]\nresource = \"{RESOURCE}\"\nissuer = \"{ISSUER}\"\njwks_file = \"jwks.json\"\n"
        ),
        "127.0.0.1:0",
        &[],
    )
    .unwrap();
    let exp = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() + 600;
    let token = |sub: &str, email: &str, groups: Value| {
        let claims = json!({"sub": sub, "aud": RESOURCE, "iss": ISSUER, "exp": exp,
                            "email": email, "groups": groups, "role": "admin"});
        jwt(&key, "k1", claims)
    };
    // A token that names nobody is refused, however well signed.
    let nobody = jwt(&key, "k1", json!({"aud": RESOURCE, "iss": ISSUER, "exp": exp}));
    assert_eq!(post(&served.base, Some(&nobody), None, initialize()).await.0, 401);
    let alice = token("alice", "alice@example.test", json!(["dev"]));
    let bob = token("bob", "bob@example.test", json!(["ops", "dev"]));
    let secret_search = json!({"pattern": SECRET_ARG});
    calls(&served.base, &alice, &[("grep", secret_search)]).await;
    calls(
        &served.base,
        &bob,
        &[
            ("grep", json!({"pattern": "Friday"})),
            ("no_such_tool", json!({"token": SECRET_ARG})),
        ],
    )
    .await;

    let path = dir.path().join("audit.jsonl");
    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "the audit file is private");
    let records = lines(&path);
    let by = |subject: &str| -> Vec<&Value> {
        records
            .iter()
            .filter(|r| r["caller"]["subject"] == subject)
            .collect()
    };
    let (alices, bobs) = (by("alice"), by("bob"));
    assert_eq!(
        (alices.len(), bobs.len(), records.len()),
        (1, 2, 3),
        "{records:#?}"
    );
    assert_eq!(
        alices[0]["caller"],
        json!({"subject": "alice", "via": "token",
               "claims": {"email": "alice@example.test", "groups": ["dev"]}})
    );
    assert_eq!(alices[0]["tool"], "grep");
    assert_eq!(alices[0]["backend"], "native");
    assert_eq!(alices[0]["outcome"], "ok");
    assert_eq!(alices[0]["prefetched"], false);
    assert_eq!(alices[0]["args_shape"], json!({"pattern": "string"}));
    assert!(alices[0]["duration_ms"].is_u64() && alices[0]["time"].is_string());
    assert_eq!(
        bobs[0]["caller"]["claims"],
        json!({"email": "bob@example.test", "groups": ["ops", "dev"]})
    );
    assert_eq!(
        (&bobs[0]["tool"], &bobs[0]["outcome"]),
        (&json!("grep"), &json!("ok"))
    );
    assert_eq!(bobs[1]["tool"], "no_such_tool");
    assert_eq!(bobs[1]["outcome"], "refused");
    assert_eq!(bobs[1]["backend"], Value::Null);
}

#[tokio::test(flavor = "multi_thread")]
async fn calls_over_stdio_are_audited_as_the_local_user() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.md"), "ship on Friday\n").unwrap();
    std::fs::create_dir(dir.path().join("plugins")).unwrap();
    std::fs::write(
        dir.path().join("toolhost.toml"),
        "root = \".\"\n[audit]\nfile = \"audit.jsonl\"\n",
    )
    .unwrap();
    let mut command = tokio::process::Command::from(toolhost());
    command
        .current_dir(dir.path())
        .args(["--config", "toolhost.toml", "--plugins", "plugins", "serve"]);
    let client = stdio_client(command).await;
    let mut params = CallToolRequestParams::new("grep");
    params.arguments = json!({"pattern": SECRET_ARG}).as_object().cloned();
    let result = client.peer().call_tool(params).await.unwrap();
    assert_ne!(result.is_error, Some(true), "{result:?}");
    client.cancel().await.unwrap();

    let user = std::process::Command::new("id").arg("-un").output().unwrap();
    let user = String::from_utf8(user.stdout).unwrap().trim().to_owned();
    let records = lines(&dir.path().join("audit.jsonl"));
    assert_eq!(records.len(), 1, "{records:#?}");
    assert_eq!(
        records[0]["caller"],
        json!({"subject": user, "via": "local_user"})
    );
    assert_eq!(records[0]["tool"], "grep");
}

#[test]
fn an_audit_file_that_cannot_be_opened_stops_the_start_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let config = "root = \".\"\n[audit]\nfile = \"no-such-dir/audit.jsonl\"\n";
    let log = match serve(dir.path(), config, "127.0.0.1:0", &[]) {
        Err(log) => log,
        Ok(_) => panic!("served with an audit file it cannot open"),
    };
    let path = dir.path().join("no-such-dir/audit.jsonl");
    assert!(
        log.contains(&format!("cannot open the audit file {}", path.display())),
        "{log}"
    );
}
