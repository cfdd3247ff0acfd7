//! The reference enricher ("acme") written in Rust, JavaScript, Python, C and
//! Go gives identical results through the real host: the enriched tool list,
//! argument transforms (including the error message), value models,
//! projections and rate-limit hosts. Each language's output is also checked
//! against concrete expected values, so all five cannot be wrong the same way.

use std::sync::Arc;

use serde_json::{Map, Value, json};
use toolhost::FollowUpLink;
use toolhost::catalog::base_catalog;
use toolhost::enrich::Enrichers;
use toolhost::plugin::{Plugin, PluginError};
use toolhost_tests::{REFERENCE_LANGS, args, needs, reference, runtime};

/// "Команда" through `sanitize_field_name`: transliterated, plus FNV-1a.
const KOMANDA: &str = "cf_komanda_";

/// Everything observable about one build, as JSON.
async fn observe(plugin: Arc<Plugin>) -> Value {
    let enrichers = Enrichers::new(std::slice::from_ref(&plugin));
    let listing = enrichers.list(base_catalog()).await;
    let tools: Vec<Value> = listing
        .tools
        .iter()
        .map(|t| json!({"name": t.name, "schema": t.schema.to_value(), "skipped": t.skipped}))
        .collect();

    let cases = [
        (
            "create_issue",
            json!({"title": "t", "projectId": "WEB", "cf_story_points": 5, "cf_team": "Blue"}),
        ),
        (
            "update_issue",
            json!({"key": "WEB-1", "customFields": {"customfield_9": "x"}, "cf_team": "Red"}),
        ),
        ("update_issue", json!({"key": "WEB-1", "cf_team": "Green"})),
        ("create_issue", json!({"title": "no custom fields"})),
        ("get_issues", json!({"cf_team": "Green"})),
    ];
    let mut transforms = Vec::new();
    for (tool, input) in cases {
        let out = match plugin.transform_args(tool, args(input)).await {
            Ok(map) => Value::Object(map),
            Err(PluginError::Rejected { message, .. }) => json!({"error": message}),
            Err(e) => panic!("{}: {tool}: {e}", plugin.name),
        };
        transforms.push(out);
    }
    // The Cyrillic field: its parameter name comes from the schema.
    let komanda = listing
        .tools
        .iter()
        .find(|t| t.name == "create_issue")
        .and_then(|t| {
            t.schema
                .property_names()
                .into_iter()
                .find(|p| p.starts_with(KOMANDA))
        });
    if let Some(param) = &komanda {
        let args = args(json!({"title": "t", param.as_str(): "Синие"}));
        transforms.push(Value::Object(
            plugin.transform_args("create_issue", args).await.unwrap(),
        ));
    }

    let mut models = Map::new();
    for tool in base_catalog() {
        let model = plugin.value_model(&tool.name).await.unwrap();
        models.insert(tool.name.clone(), serde_json::to_value(model).unwrap());
    }

    let sample = json!({"issues": [{"key": "WEB-1"}, {"key": "WEB-2"}, {"key": "WEB-1"}, {"key": "API-9"}, {"key": "API-10"}]});
    let link = |tool: &str| FollowUpLink {
        tool: tool.into(),
        probability: 0.5,
        projection: Some("key".into()),
        projection_arg: Some("key".into()),
    };
    let mut projections = Vec::new();
    for (prev, to, result) in [
        ("get_issues", "get_issue", &sample),
        ("get_issues", "get_issue_comments", &sample),
        ("get_issues", "get_issue", &json!({"total": 0})),
        ("get_issue", "get_issue_comments", &sample),
        ("get_issues", "get_users", &sample),
    ] {
        let p = plugin.project_args(prev, result, &link(to)).await.unwrap();
        projections.push(serde_json::to_value(p).unwrap());
    }
    let host = plugin.rate_limit_host("get_issue", &Map::new()).await.unwrap();

    json!({
        "categories": plugin.categories,
        "tools": tools,
        "transforms": transforms,
        "value_models": models,
        "projections": projections,
        "rate_limit_host": host,
        "komanda": komanda,
    })
}

fn check_expected(lang: &str, seen: &Value) {
    assert_eq!(seen["categories"], json!(["issue_tracker"]), "{lang}");
    let tool = |name: &str| {
        seen["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("{lang}: {name} not listed"))
            .clone()
    };
    let create = tool("create_issue")["schema"].clone();
    let props = create["properties"].as_object().unwrap();
    for gone in ["points", "customFields", "components"] {
        assert!(!props.contains_key(gone), "{lang}: {gone} still there");
    }
    assert_eq!(props["projectId"]["enum"], json!(["WEB", "API"]), "{lang}");
    assert!(
        create["required"]
            .as_array()
            .unwrap()
            .contains(&json!("projectId")),
        "{lang}"
    );
    assert_eq!(
        props["cf_story_points"],
        json!({"type": "number", "description": "Story Points"}),
        "{lang}"
    );
    assert_eq!(
        props["cf_team"],
        json!({"type": "string", "enum": ["Red", "Blue"], "description": "Team"}),
        "{lang}"
    );
    let komanda = seen["komanda"]
        .as_str()
        .unwrap_or_else(|| panic!("{lang}: no cf_komanda_*"));
    assert_eq!(
        komanda,
        toolhost_sdk_sanitize("Команда"),
        "{lang}: the Cyrillic name must sanitize like the SDK"
    );
    assert_eq!(
        props[komanda],
        json!({"type": "string", "description": "Команда"}),
        "{lang}"
    );
    let update = tool("update_issue")["schema"].clone();
    assert!(
        !update["required"]
            .as_array()
            .is_some_and(|r| r.contains(&json!("projectId"))),
        "{lang}"
    );
    let get_issues = tool("get_issues")["schema"].clone();
    assert!(get_issues["properties"].get("nativeQuery").is_none(), "{lang}");
    assert_eq!(
        get_issues["properties"]["stateCategory"]["enum"],
        json!(["todo", "in_progress", "done"]),
        "{lang}"
    );

    let t = &seen["transforms"];
    assert_eq!(
        t[0],
        json!({"title": "t", "projectId": "WEB", "customFields": {"customfield_100": 5, "customfield_200": {"id": "2"}}}),
        "{lang}"
    );
    assert_eq!(
        t[1],
        json!({"key": "WEB-1", "customFields": {"customfield_9": "x", "customfield_200": {"id": "1"}}}),
        "{lang}"
    );
    assert_eq!(
        t[2],
        json!({"error": "Team: unknown option 'Green' (expected Red, Blue)"}),
        "{lang}"
    );
    assert_eq!(t[3], json!({"title": "no custom fields"}), "{lang}");
    assert_eq!(
        t[4],
        json!({"cf_team": "Green"}),
        "{lang}: other tools are unchanged"
    );
    assert_eq!(
        t[5],
        json!({"title": "t", "customFields": {"customfield_300": "Синие"}}),
        "{lang}"
    );

    let vm = &seen["value_models"];
    assert_eq!(
        vm["get_issues"],
        json!({"value_class": "supporting", "side_effect": "read-only",
               "cost": {"typical_kb": 4.0, "max_kb": 40.0, "latency_ms_p50": 450, "freshness_ttl_s": 60},
               "follow_ups": [{"tool": "get_issue", "probability": f64::from(0.55_f32), "projection": "key", "projection_arg": "key"}]}),
        "{lang}"
    );
    assert_eq!(
        vm["get_issue"],
        json!({"value_class": "critical", "side_effect": "read-only",
               "cost": {"typical_kb": 2.0, "freshness_ttl_s": 60},
               "follow_ups": [{"tool": "get_issue_comments", "probability": 0.5, "projection": "key", "projection_arg": "key"}]}),
        "{lang}"
    );
    for tool in ["create_issue", "update_issue"] {
        assert_eq!(
            vm[tool],
            json!({"side_effect": "mutates-external", "invalidates": ["get_issues", "get_issue"]}),
            "{lang}: {tool}"
        );
    }
    assert_eq!(vm["get_users"], Value::Null, "{lang}");

    let keys = json!([{"key": "WEB-1"}, {"key": "WEB-2"}, {"key": "API-9"}]);
    assert_eq!(seen["projections"], json!([keys, keys, [], null, null]), "{lang}");
    assert_eq!(seen["rate_limit_host"], json!("tracker.acme.test"), "{lang}");
}

/// The SDK's `sanitize_field_name` for the one non-ASCII name used here:
/// transliteration plus the FNV-1a 32 of the UTF-8 bytes.
fn toolhost_sdk_sanitize(name: &str) -> String {
    let hash = name.bytes().fold(0x811c_9dc5_u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    format!("cf_komanda_{hash:08x}")
}

#[tokio::test(flavor = "multi_thread")]
async fn the_reference_enricher_behaves_identically_in_every_language() {
    needs!(LangPlugins);
    let (rt, logs) = runtime();
    let mut seen = Vec::new();
    for lang in REFERENCE_LANGS {
        let plugin = Arc::new(
            rt.load_file(&reference(lang))
                .await
                .unwrap_or_else(|e| panic!("{lang}: {e}")),
        );
        let observed = observe(plugin).await;
        check_expected(lang, &observed);
        assert!(
            logs.has(
                &format!("reference-{lang}"),
                "log",
                "acme: 3 custom fields, 2 projects"
            ),
            "{lang}: no load log line: {:?}",
            logs.lines()
        );
        seen.push((lang, observed));
    }
    let (first, expected) = &seen[0];
    for (lang, observed) in &seen[1..] {
        assert_eq!(observed, expected, "{lang} differs from {first}");
    }
}
