//! `[policy]`: who may call which tool, decided by a Cedar policy file.
//! Over streamable HTTP with OAuth, two callers' JWTs: the policy forbids
//! Bob the native `write` (a local write, by its value model), so it is
//! left out of his `tools/list` and his call is a tool error naming the
//! rule, while Alice lists and calls it; the audit records both decisions.
//! Under `serve --watch`, a broken policy file keeps the last good one
//! (logged with its line) and a fixed one takes over. A broken file at
//! start stops the start, naming the file and line. A tool hidden from a
//! caller is not found for them either, when rmcp checks a 2026-07-28
//! request's headers against its schema.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use super::http_auth::{ISSUER, RESOURCE, es256_key, initialize, jwt, post, serve};

const POLICY: &str = r#"// Everyone may call every tool...
@id("everyone-calls")
permit (principal, action == Toolhost::Action::"call", resource);

// ...but Bob changes no file here.
@id("no-local-writes-for-bob")
forbid (principal == Toolhost::User::"bob", action, resource)
when { resource.source == "native" && resource.side_effect == "mutates-local" };
"#;

/// An MCP session over HTTP as the holder of one token.
pub(super) struct Session<'a> {
    base: &'a str,
    token: String,
    /// `None` when the host serves without sessions (a cluster's replica).
    id: Option<String>,
    next: u64,
}

impl<'a> Session<'a> {
    pub(super) async fn open(base: &'a str, token: String) -> Self {
        let (status, headers, _) = post(base, Some(&token), None, initialize()).await;
        assert_eq!(status, 200);
        let id = headers
            .get("mcp-session-id")
            .map(|id| id.to_str().unwrap().to_owned());
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        post(base, Some(&token), id.as_deref(), initialized).await;
        Self {
            base,
            token,
            id,
            next: 2,
        }
    }

    /// The session's id, for a request sent by hand.
    pub(super) fn id(&self) -> &str {
        self.id.as_deref().expect("a session")
    }

    pub(super) async fn request(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let message = json!({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params});
        let (status, _, answer) = post(self.base, Some(&self.token), self.id.as_deref(), message).await;
        assert_eq!(status, 200, "{answer:?}");
        let answer = answer.unwrap();
        // A denial is a tool's error result, never a protocol error.
        assert!(answer.get("error").is_none(), "{answer}");
        answer["result"].clone()
    }

    async fn tools(&mut self) -> Vec<String> {
        let listed = self.request("tools/list", json!({})).await;
        listed["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    }

    /// The result of writing `content` to `path`.
    async fn write(&mut self, path: &str, content: &str) -> Value {
        let args = json!({"path": path, "content": content});
        self.request("tools/call", json!({"name": "write", "arguments": args}))
            .await
    }
}

fn config() -> String {
    format!(
        "root = \".\"\nwritable = true\n[audit]\nfile = \"audit.jsonl\"\n[policy]\nfile = \"team.cedar\"\n\
         [auth]\nidentity_claims = [\"groups\"]\n\
         [auth.oauth]\nresource = \"{RESOURCE}\"\nissuer = \"{ISSUER}\"\njwks_file = \"jwks.json\"\n"
    )
}

fn audit(dir: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(dir.join("audit.jsonl")).unwrap();
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_policy_hides_and_denies_bobs_writes_lets_alices_through_and_reloads() {
    let dir = tempfile::tempdir().unwrap();
    let (key, jwk) = es256_key("k1");
    std::fs::write(dir.path().join("jwks.json"), json!({"keys": [jwk]}).to_string()).unwrap();
    std::fs::write(dir.path().join("team.cedar"), POLICY).unwrap();
    let served = serve(dir.path(), &config(), "127.0.0.1:0", &["--watch"]).unwrap();
    let exp = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() + 600;
    let token = |sub: &str| {
        let claims = json!({"sub": sub, "aud": RESOURCE, "iss": ISSUER, "exp": exp, "groups": ["dev"]});
        jwt(&key, "k1", claims)
    };
    let mut alice = Session::open(&served.base, token("alice")).await;
    let mut bob = Session::open(&served.base, token("bob")).await;

    let (alices, bobs) = (alice.tools().await, bob.tools().await);
    assert!(alices.contains(&"write".to_owned()), "{alices:?}");
    assert!(!bobs.contains(&"write".to_owned()), "{bobs:?}");
    assert!(bobs.contains(&"read".to_owned()), "{bobs:?}");
    // Nor does the system prompt name it to him.
    for (session, shown) in [(&mut alice, true), (&mut bob, false)] {
        let prompt = session
            .request("prompts/get", json!({"name": "system-prompt"}))
            .await;
        let text = prompt["messages"][0]["content"]["text"].as_str().unwrap();
        assert!(text.contains("\n- read"), "{text}");
        assert_eq!(text.contains("\n- write"), shown, "{text}");
    }

    let denied = bob.write("bob.txt", "from bob").await;
    assert_eq!(denied["isError"], true, "{denied}");
    let text = denied["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("\"no-local-writes-for-bob\"") && text.contains("bob"),
        "{text}"
    );
    assert!(!dir.path().join("bob.txt").exists(), "a denied write ran");
    let allowed = alice.write("alice.txt", "from alice").await;
    assert_ne!(allowed["isError"], true, "{allowed}");
    let written = std::fs::read_to_string(dir.path().join("alice.txt")).unwrap();
    assert_eq!(written, "from alice");

    let records = audit(dir.path());
    let of = |subject: &str| {
        records
            .iter()
            .find(|r| r["caller"]["subject"] == subject && r["tool"] == "write")
            .unwrap_or_else(|| panic!("no write by {subject}: {records:#?}"))
    };
    assert_eq!(
        of("bob")["policy"],
        json!({"decision": "deny", "rules": ["no-local-writes-for-bob"]})
    );
    assert_eq!(of("bob")["outcome"], "refused");
    assert_eq!(
        of("alice")["policy"],
        json!({"decision": "allow", "rules": ["everyone-calls"]})
    );
    assert_eq!(of("alice")["outcome"], "ok");

    // A broken policy: the last good one still decides.
    let broken = "@id(\"everyone-calls\")\npermit (principal, action resource);\n";
    std::fs::write(dir.path().join("team.cedar"), broken).unwrap();
    let logged = served.wait_for("the last good policy still decides");
    let line = logged.last().unwrap();
    assert!(line.contains("team.cedar, line 2"), "{line}");
    let still = bob.write("bob.txt", "from bob").await;
    assert_eq!(still["isError"], true, "{still}");
    assert!(!bob.tools().await.contains(&"write".to_owned()));

    // A good one takes over: Bob may write now.
    let everyone = "@id(\"everyone-calls\")\npermit (principal, action, resource);\n";
    std::fs::write(dir.path().join("team.cedar"), everyone).unwrap();
    served.wait_for("reloaded: 1 rules");
    assert!(bob.tools().await.contains(&"write".to_owned()));
    let now = bob.write("bob.txt", "from bob").await;
    assert_ne!(now["isError"], true, "{now}");
    assert!(dir.path().join("bob.txt").exists());
}

#[test]
fn a_broken_policy_file_stops_the_start_naming_its_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("team.cedar"),
        "permit (principal, action, resource);\nforbid (principal action, resource);\n",
    )
    .unwrap();
    let config = "root = \".\"\n[policy]\nfile = \"team.cedar\"\n";
    let log = match serve(dir.path(), config, "127.0.0.1:0", &[]) {
        Err(log) => log,
        Ok(_) => panic!("served with a broken policy"),
    };
    let file = dir.path().join("team.cedar");
    assert!(
        log.contains(&format!("the policy file {}, line 2:", file.display())),
        "{log}"
    );
}

/// rmcp checks a 2026-07-28 request's `Mcp-Param-*` headers against the
/// schema of the tool it finds for the request's caller: Alice, who may
/// call the upstream's `traced_echo`, has her request refused for the
/// header its schema asks for; for Bob, from whom the policy hides it, no
/// tool is found (nor listed), so his reaches the policy, which denies it.
#[tokio::test(flavor = "multi_thread")]
async fn a_tool_hidden_from_a_caller_is_not_found_for_them_either() {
    let url = super::telemetry::traced(Default::default()).serve().await;
    let dir = tempfile::tempdir().unwrap();
    let (key, jwk) = es256_key("k1");
    std::fs::write(dir.path().join("jwks.json"), json!({"keys": [jwk]}).to_string()).unwrap();
    let policy = "@id(\"everyone-calls\")\npermit (principal, action, resource);\n\
                  @id(\"no-echo-for-bob\")\nforbid (principal == Toolhost::User::\"bob\", action, \
                  resource == Toolhost::Tool::\"traced_echo\");\n";
    std::fs::write(dir.path().join("team.cedar"), policy).unwrap();
    let config = format!(
        "root = \".\"\n[policy]\nfile = \"team.cedar\"\n\
         [auth]\n[auth.oauth]\nresource = \"{RESOURCE}\"\nissuer = \"{ISSUER}\"\njwks_file = \"jwks.json\"\n\
         [[upstream]]\nname = \"up\"\nurl = \"{url}\"\n"
    );
    let served = serve(dir.path(), &config, "127.0.0.1:0", &[]).unwrap();
    let exp = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() + 600;
    let token = |sub: &str| {
        let claims = json!({"sub": sub, "aud": RESOURCE, "iss": ISSUER, "exp": exp});
        jwt(&key, "k1", claims)
    };
    let (alice, bob) = (token("alice"), token("bob"));
    assert!(
        Session::open(&served.base, alice.clone())
            .await
            .tools()
            .await
            .contains(&"traced_echo".to_owned())
    );
    assert!(
        !Session::open(&served.base, bob.clone())
            .await
            .tools()
            .await
            .contains(&"traced_echo".to_owned())
    );

    // A sessionless 2026-07-28 call that leaves out `Mcp-Param-Repo`.
    let call = async |token: &str| {
        let meta = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        });
        let params = json!({"name": "traced_echo", "arguments": {"repo": "web"}, "_meta": meta});
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
        let response = super::http_auth::client()
            .post(format!("{}/mcp", served.base))
            .bearer_auth(token)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "traced_echo")
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        (response.status().as_u16(), response.text().await.unwrap())
    };
    let (status, text) = call(&alice).await;
    assert!(
        status == 400 && text.contains("Mcp-Param-Repo"),
        "{status}: {text}"
    );
    let (status, text) = call(&bob).await;
    assert_eq!(status, 200, "{text}");
    assert!(
        text.contains("no-echo-for-bob") && text.contains("isError"),
        "{text}"
    );
}
