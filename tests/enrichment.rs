//! The enricher chain over real built plugins: category filtering, chained
//! schema enrichment and argument transformation, provenance and conflict
//! reports, and value-model layering.

use serde_json::{Value, json};
use toolhost::catalog::ToolSpec;
use toolhost::catalog::{base_catalog, base_tool};
use toolhost::enrich::{Enrichers, Owner};
use toolhost::internals::Action;
use toolhost::internals::{Layer, SideEffect, ValueClass};
use toolhost_cli::config::Config;
use toolhost_tests::load;

async fn enrichers(entries: &[(&str, &str, Option<&str>)]) -> (Enrichers, tempfile::TempDir) {
    let (report, _, dir) = load(entries).await;
    (Enrichers::new(&report.plugins), dir)
}

fn names(listing: &toolhost::enrich::Listing) -> Vec<&str> {
    listing.tools.iter().map(|t| t.name.as_str()).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn tools_are_listed_only_for_claimed_categories() {
    let uncategorised = ToolSpec {
        name: "read".into(),
        description: "Read a file".into(),
        category: None,
        input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        ..ToolSpec::default()
    };
    let mut tools = base_catalog().to_vec();
    tools.push(uncategorised);

    let none = Enrichers::default().list(&tools).await;
    assert_eq!(
        names(&none),
        ["read"],
        "with no enricher only uncategorised tools are listed"
    );

    let (format, _dir) = enrichers(&[("10-format", "format_pipeline", None)]).await;
    let listing = format.list(&tools).await;
    let claimed = ["issue_tracker", "git_repository", "knowledge_base"];
    for tool in &tools {
        let listed = names(&listing).contains(&tool.name.as_str());
        let expected = tool.category.as_deref().is_none_or(|c| claimed.contains(&c));
        assert_eq!(listed, expected, "{} ({:?})", tool.name, tool.category);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn format_pipeline_adds_its_parameters_to_read_tools_only() {
    let (format, _dir) = enrichers(&[("10-format", "format_pipeline", None)]).await;
    let get_issues = format.enrich(base_tool("get_issues").unwrap()).await.unwrap();
    let added: Vec<_> = get_issues
        .changes
        .iter()
        .filter(|c| c.action == Action::Added)
        .collect();
    assert_eq!(added.len(), 3);
    assert_eq!(
        get_issues.schema.property("format").unwrap()["enum"],
        json!(["toon", "json", "mckp"])
    );
    assert_eq!(
        get_issues.schema.property("budget").unwrap()["minimum"],
        json!(100)
    );
    assert_eq!(
        get_issues.schema.property("budget").unwrap()["maximum"],
        json!(100000)
    );
    assert_eq!(get_issues.schema.property("chunk").unwrap()["minimum"], json!(1));
    assert!(
        get_issues.schema.property("limit").is_some(),
        "limit is the catalog's own"
    );

    let create = format.enrich(base_tool("create_issue").unwrap()).await.unwrap();
    assert!(create.changes.is_empty() && create.schema.property("format").is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn format_pipeline_renames_on_collision() {
    let (format, _dir) = enrichers(&[("10-format", "format_pipeline", None)]).await;
    let tool = ToolSpec {
        name: "get_issues".into(),
        description: "List issues".into(),
        category: Some("issue_tracker".into()),
        input_schema: json!({"type": "object", "properties": {
            "format": {"type": "string", "description": "the backend's own"},
            "_format": {"type": "string"}
        }}),
        ..ToolSpec::default()
    };
    let enriched = format.enrich(&tool).await.unwrap();
    assert_eq!(
        enriched.schema.property("format").unwrap()["description"],
        "the backend's own"
    );
    assert_eq!(
        enriched.schema.property("__format").unwrap()["enum"],
        json!(["toon", "json", "mckp"])
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn enrichment_chains_in_order_with_provenance_and_conflicts() {
    let (chain, _dir) = enrichers(&[
        ("10-a", "fixture_chain_a", None),
        ("20-b", "fixture_chain_b", None),
    ])
    .await;
    let tool = chain.enrich(base_tool("create_issue").unwrap()).await.unwrap();
    assert_eq!(
        tool.schema.property("chain_marker").unwrap()["description"],
        "A+B"
    );
    assert_eq!(
        tool.schema.property("priority").unwrap()["enum"],
        json!(["p1", "p2"]),
        "the later plugin wins"
    );

    let by = |plugin: &str, property: &str| {
        tool.changes
            .iter()
            .any(|c| &*c.plugin == plugin && c.property.as_deref() == Some(property))
    };
    assert!(by("a", "chain_marker") && by("b", "chain_marker") && by("a", "priority") && by("b", "priority"));
    let mut conflicts: Vec<_> = tool
        .conflicts
        .iter()
        .map(|c| c.property.clone().unwrap())
        .collect();
    conflicts.sort();
    assert_eq!(conflicts, ["chain_marker", "priority"]);
    let priority = tool
        .conflicts
        .iter()
        .find(|c| c.property.as_deref() == Some("priority"))
        .unwrap();
    assert_eq!(
        priority.plugins.iter().map(|p| &**p).collect::<Vec<_>>(),
        ["a", "b"]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn argument_transforms_chain_in_order() {
    let (chain, _dir) = enrichers(&[
        ("10-a", "fixture_chain_a", None),
        ("20-b", "fixture_chain_b", None),
    ])
    .await;
    let args = json!({"title": "t", "priority": "high"})
        .as_object()
        .unwrap()
        .clone();
    let out = chain
        .transform_args("create_issue", Some("issue_tracker"), args.clone())
        .await
        .unwrap();
    assert_eq!(Value::Object(out), json!({"title": "t", "priority_id": "P2"}));

    // Reversed, B sees no priority_code yet, and A's output is left as is.
    let (reversed, _dir) = enrichers(&[
        ("10-b", "fixture_chain_b", None),
        ("20-a", "fixture_chain_a", None),
    ])
    .await;
    let out = reversed
        .transform_args("create_issue", Some("issue_tracker"), args.clone())
        .await
        .unwrap();
    assert_eq!(Value::Object(out), json!({"title": "t", "priority_code": "2"}));

    // Tools without a claimed category get no transforms.
    let out = chain
        .transform_args("create_issue", None, args.clone())
        .await
        .unwrap();
    assert_eq!(out, args);
}

#[tokio::test(flavor = "multi_thread")]
async fn value_models_layer_field_by_field() {
    let (chain, dir) = enrichers(&[
        ("10-a", "fixture_chain_a", None),
        ("20-b", "fixture_chain_b", None),
    ])
    .await;
    // get_issue too: a follow-up link is kept only to a tool whose model
    // allows calling it ahead of time.
    let tools = ["get_issues", "get_issue"].map(|t| (base_tool(t).unwrap(), &Owner::Host));
    let mut models = chain.value_models(tools).await;
    let config_path = dir.path().join("toolhost.toml");
    std::fs::write(
        &config_path,
        "[tools.get_issues]\ncost = { freshness_ttl_s = 5 }\n",
    )
    .unwrap();
    Config::read(&config_path)
        .unwrap()
        .apply_value_models(&mut models)
        .unwrap();

    let m = models.get("get_issues").unwrap();
    assert_eq!(
        m.value_class(),
        ValueClass::Critical,
        "b's value class wins over a's"
    );
    assert_eq!(m.cost.latency_ms_p50, Some(450), "b's latency");
    assert_eq!(
        m.side_effect(),
        SideEffect::ReadOnly,
        "a's side effect, which b left unset"
    );
    assert_eq!(m.cost.typical_kb, Some(4.0), "a's size");
    assert_eq!(m.cost.freshness_ttl_s, Some(5), "the user's TTL wins over a's 60");
    assert_eq!(m.rate_limit_host.as_deref(), Some("tracker.example"));
    let link = &m.follow_ups.as_ref().unwrap()[0];
    assert_eq!((link.tool.as_str(), link.probability), ("get_issue", 0.55));
    assert_eq!(
        models.layers("get_issues"),
        [
            Layer::BuiltIn,
            Layer::Plugin("a".into()),
            Layer::Plugin("b".into()),
            Layer::User
        ]
    );
}
