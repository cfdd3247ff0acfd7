//! The provider enrichers (GitHub, GitLab, Jira, ClickUp, Confluence,
//! Fireflies, Linear), each through the real host against its built
//! `.wasm`: removed parameters, enums and their order, `cf_*` round trips to
//! provider ids, aliases, multi-project enums, `anyOf` conflicts, value
//! models, projections that produce the argument names the follow-up tools
//! really take, and rate-limit hosts. Then all of them with FormatPipeline
//! in one directory, against a reviewed snapshot.

use std::sync::Arc;

use serde_json::{Map, Value, json};
use toolhost::ToolSchema;
use toolhost::catalog::{base_catalog, base_tool};
use toolhost::enrich::{EnrichedTool, Enrichers};
use toolhost::internals::{SideEffect, ValueClass};
use toolhost::plugin::{Plugin, PluginError};
use toolhost_cli::check::{Verdict, check};
use toolhost_tests::providers::{CLICKUP, GITHUB, GITLAB, JIRA};
use toolhost_tests::{args, load, plugin_dir, runtime};

#[path = "providers/end_to_end.rs"]
mod end_to_end;

/// Load one provider with `manifest`.
async fn provider(crate_name: &str, manifest: Option<&str>) -> (Arc<Plugin>, Enrichers, tempfile::TempDir) {
    let (report, _, dir) = load(&[("10-p", crate_name, manifest)]).await;
    (report.plugins[0].clone(), Enrichers::new(&report.plugins), dir)
}

async fn enrich(e: &Enrichers, tool: &str) -> ToolSchema {
    e.enrich(base_tool(tool).unwrap()).await.unwrap().schema
}

/// A value model's follow-up links as (tool, probability), in order.
fn links(model: &toolhost::ValueModel) -> Vec<(&str, f32)> {
    model
        .follow_ups
        .iter()
        .flatten()
        .map(|l| (l.tool.as_str(), l.probability))
        .collect()
}

fn props(s: &ToolSchema) -> Vec<String> {
    s.property_names()
}

async fn transform(p: &Plugin, tool: &str, v: Value) -> Value {
    Value::Object(p.transform_args(tool, args(v)).await.unwrap())
}

/// Every follow-up link's projected argument is a parameter the follow-up
/// tool really takes (after this provider's own enrichment).
async fn assert_projections_name_real_arguments(p: &Plugin, e: &Enrichers) {
    for tool in base_catalog()
        .iter()
        .filter(|t| t.category.as_deref().is_some_and(|c| p.claims(c)))
    {
        let Some(model) = p.value_model(&tool.name).await.unwrap() else {
            continue;
        };
        for link in model.follow_ups.iter().flatten() {
            let target = enrich(e, &link.tool).await;
            let arg = link.projection_arg.as_deref().unwrap();
            assert!(
                props(&target).iter().any(|n| n == arg),
                "{}: {} → {} takes no `{arg}`",
                p.name,
                tool.name,
                link.tool
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn github() {
    let (p, e, _dir) = provider("github", Some(GITHUB)).await;
    let create = enrich(&e, "create_issue").await;
    for gone in [
        "priority",
        "parentId",
        "customFields",
        "issueType",
        "components",
        "projectId",
        "points",
    ] {
        assert!(
            !props(&create).contains(&gone.to_owned()),
            "create_issue still has {gone}"
        );
    }
    assert_eq!(create.required(), ["title"]);
    let list = enrich(&e, "get_issues").await;
    assert!(
        ["projectKey", "nativeQuery", "stateCategory"]
            .iter()
            .all(|g| !props(&list).contains(&g.to_string()))
    );
    assert!(props(&enrich(&e, "link_issues").await).is_empty());

    let comment = |lt: &str| json!({"key": "pr#1", "body": "b", "line_type": lt});
    assert_eq!(
        transform(&p, "create_merge_request_comment", comment("old")).await,
        json!({"key": "pr#1", "body": "b", "side": "LEFT"})
    );
    assert_eq!(
        transform(&p, "create_merge_request_comment", comment("new")).await["side"],
        "RIGHT"
    );
    assert_eq!(
        transform(&p, "create_merge_request_comment", json!({"key": "pr#1"})).await,
        json!({"key": "pr#1"})
    );

    let mrs = p.value_model("get_merge_requests").await.unwrap().unwrap();
    assert_eq!(mrs.value_class(), ValueClass::Supporting);
    assert_eq!(
        (
            mrs.cost.typical_kb,
            mrs.cost.max_kb,
            mrs.cost.latency_ms_p50,
            mrs.cost.freshness_ttl_s
        ),
        (Some(4.5), Some(45.0), Some(380), Some(60))
    );
    assert_eq!(
        links(&mrs),
        [
            ("get_merge_request_discussions", 0.60),
            ("get_merge_request_diffs", 0.40)
        ]
    );
    let create_model = p.value_model("create_issue").await.unwrap().unwrap();
    assert_eq!(create_model.side_effect(), SideEffect::MutatesExternal);
    assert!(!create_model.is_speculatable());
    assert_eq!(
        p.value_model("get_issue_comments")
            .await
            .unwrap()
            .unwrap()
            .cost
            .max_kb,
        Some(20.0)
    );

    let link = mrs_link(&p, "get_merge_requests", "get_merge_request_discussions").await;
    let projected = p
        .project_args(
            "get_merge_requests",
            &json!({"pull_requests": [{"number": 12}, {"number": 13}]}),
            &link,
        )
        .await
        .unwrap();
    assert_eq!(
        projected.unwrap(),
        [args(json!({"key": "pr#12"})), args(json!({"key": "pr#13"}))]
    );
    assert_projections_name_real_arguments(&p, &e).await;
    assert_repository_reads(&p, "api.github.com").await;
    assert_eq!(
        p.rate_limit_host("get_issues", &Map::new())
            .await
            .unwrap()
            .as_deref(),
        Some("api.github.com")
    );
}

/// The repository reads of a git host (GitHub, GitLab): read-only, with
/// the chains agents follow, each projecting the argument the follow-up
/// takes: commits → commit by SHA, commit → parent, a directory's files
/// (not its subdirectories) → file by path at the listing's ref, search
/// hits → file, branches → their commits.
async fn assert_repository_reads(p: &Plugin, host: &str) {
    let expected = [
        ("get_repository_file", "get_repository_file", 0.55),
        ("get_commits", "get_commit", 0.50),
        ("get_commit", "get_commit", 0.45),
        ("get_branches", "get_commits", 0.30),
        ("search_code", "get_repository_file", 0.35),
    ];
    for (from, to, probability) in expected {
        let model = p.value_model(from).await.unwrap().unwrap();
        assert_eq!(model.side_effect(), SideEffect::ReadOnly, "{from}");
        assert!(model.is_speculatable(), "{from}");
        assert_eq!(model.rate_limit_host.as_deref(), Some(host), "{from}");
        assert_eq!(links(&model), [(to, probability)], "{from}");
    }
    let file = p.value_model("get_repository_file").await.unwrap().unwrap();
    assert_eq!(
        (file.value_class(), file.cost.max_kb, file.cost.freshness_ttl_s),
        (ValueClass::Critical, Some(110.0), Some(300))
    );
    let project = |from: &'static str, to: &'static str, result: Value| async move {
        let link = mrs_link(p, from, to).await;
        p.project_args(from, &result, &link).await.unwrap().unwrap()
    };
    assert_eq!(
        project(
            "get_commits",
            "get_commit",
            json!({"commits": [{"sha": "a1"}, {"sha": "b2"}, {"sha": "a1"}]})
        )
        .await,
        [args(json!({"sha": "a1"})), args(json!({"sha": "b2"}))]
    );
    assert_eq!(
        project(
            "get_commit",
            "get_commit",
            json!({"sha": "b2", "parents": ["a1"]})
        )
        .await,
        [args(json!({"sha": "a1"}))]
    );
    let dir = json!({"type": "dir", "ref": "dev", "entries": [
        {"path": "src", "type": "dir"}, {"path": "src/main.rs", "type": "file"}]});
    assert_eq!(
        project("get_repository_file", "get_repository_file", dir).await,
        [args(json!({"path": "src/main.rs", "ref": "dev"}))]
    );
    let hits = json!({"matches": [{"path": "a.rs"}, {"path": "b.rs"}]});
    assert_eq!(
        project("search_code", "get_repository_file", hits).await,
        [args(json!({"path": "a.rs"})), args(json!({"path": "b.rs"}))]
    );
    assert_eq!(
        project(
            "get_branches",
            "get_commits",
            json!({"branches": [{"name": "main", "sha": "a1"}]})
        )
        .await,
        [args(json!({"ref": "main"}))]
    );
}

async fn mrs_link(p: &Plugin, from: &str, to: &str) -> toolhost::FollowUpLink {
    let model = p.value_model(from).await.unwrap().unwrap();
    model
        .follow_ups
        .unwrap()
        .into_iter()
        .find(|l| l.tool == to)
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn gitlab() {
    let (p, e, _dir) = provider("gitlab", Some("[config]\nhost = \"gitlab.example.com\"\n")).await;
    assert!(!props(&enrich(&e, "update_issue").await).contains(&"points".to_owned()));
    let link = enrich(&e, "link_issues").await;
    assert_eq!(
        link.property("link_type").unwrap()["enum"],
        json!(["relates_to", "blocks", "is_blocked_by"])
    );
    let mrs = p.value_model("get_merge_requests").await.unwrap().unwrap();
    let probabilities: Vec<f32> = links(&mrs).into_iter().map(|(_, p)| p).collect();
    assert_eq!(probabilities, [0.62, 0.41]);
    assert_eq!(
        (mrs.cost.typical_kb, mrs.cost.latency_ms_p50),
        (Some(4.0), Some(450))
    );
    assert_eq!(mrs.rate_limit_host.as_deref(), Some("gitlab.example.com"));
    let issues = p.value_model("get_issues").await.unwrap().unwrap();
    assert_eq!(issues.follow_ups.unwrap()[0].probability, 0.48);

    let l = mrs_link(&p, "get_merge_requests", "get_merge_request_diffs").await;
    let projected = p
        .project_args(
            "get_merge_requests",
            &json!([{"iid": 7}, {"iid": 7}, {"iid": 9}]),
            &l,
        )
        .await
        .unwrap();
    assert_eq!(
        projected.unwrap(),
        [args(json!({"key": "mr#7"})), args(json!({"key": "mr#9"}))]
    );
    assert_projections_name_real_arguments(&p, &e).await;
    assert_repository_reads(&p, "gitlab.example.com").await;
    assert_eq!(
        p.rate_limit_host("get_issues", &Map::new())
            .await
            .unwrap()
            .as_deref(),
        Some("gitlab.example.com")
    );

    // A malformed config is a clear load error, not an empty enricher.
    let dir = plugin_dir(&[(
        "10-gitlab",
        "gitlab",
        Some("[config]\nhost = \"https://gitlab.com/x\"\n"),
    )]);
    let (rt, _) = runtime();
    let report = rt.load_dir(dir.path()).await.unwrap();
    assert!(
        report.errors[0]
            .message
            .contains("config: `host` must be a host name"),
        "{:?}",
        report.errors
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn jira_schema() {
    let (p, e, _dir) = provider("jira", Some(JIRA)).await;
    assert_eq!(p.categories, ["issue_tracker", "epics", "jira_structure"]);
    let create = enrich(&e, "create_issue").await;
    let prop = |name: &str| {
        create
            .property(name)
            .unwrap_or_else(|| panic!("no {name}"))
            .clone()
    };
    assert_eq!(
        prop("issueType")["enum"],
        json!(["Bug", "Story", "Task"]),
        "sorted, without sub-tasks"
    );
    assert_eq!(
        prop("priority")["enum"],
        json!([
            "High", "Highest", "Low", "Lowest", "Medium", "urgent", "high", "normal", "low"
        ]),
        "the names, then the aliases: arguments are validated before the aliases are mapped"
    );
    assert!(
        prop("priority")["description"]
            .as_str()
            .unwrap()
            .contains("urgent→Highest, high→High, normal→Medium, low→Low")
    );
    assert_eq!(
        prop("components")["items"]["enum"],
        json!(["api", "checkout", "gateway"])
    );
    assert_eq!(prop("projectId")["enum"], json!(["WEB", "API"]));
    assert!(create.required().contains(&"projectId".to_owned()));
    assert!(
        !props(&create).contains(&"points".to_owned())
            && !props(&create).contains(&"customFields".to_owned())
    );
    assert_eq!(prop("cf_story_points")["type"], "number");
    assert_eq!(prop("epicKey")["type"], "string");
    assert_eq!(prop("sprintId")["type"], "integer");
    // Team is a select in WEB and text in API: both shapes, as anyOf.
    let team = prop("cf_team");
    assert_eq!(team["anyOf"][0]["enum"], json!(["Red", "Blue"]));
    assert_eq!(team["anyOf"][1]["type"], "string");
    assert!(team.get("type").is_none());
    // A Cyrillic field name gets a distinct, valid parameter name.
    let cyrillic: Vec<String> = props(&create)
        .into_iter()
        .filter(|n| n.starts_with("cf_platforma_"))
        .collect();
    assert_eq!(cyrillic.len(), 1, "{:?}", props(&create));
    assert!(
        cyrillic[0]
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    );
    assert!(!props(&enrich(&e, "get_issues").await).contains(&"stateCategory".to_owned()));
    assert_eq!(
        enrich(&e, "link_issues").await.property("link_type").unwrap()["enum"],
        json!(["Blocks", "Relates"])
    );
    let forest = enrich(&e, "get_structure_forest").await;
    let d = forest.property("structureId").unwrap()["description"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        d.contains("12 (Roadmap) — Quarterly plan") && d.contains("14 (Ops)"),
        "{d}"
    );
    assert_projections_name_real_arguments(&p, &e).await;
    assert_eq!(
        p.rate_limit_host("get_issues", &Map::new())
            .await
            .unwrap()
            .as_deref(),
        Some("acme.atlassian.net")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn jira_arguments_round_trip_to_provider_ids() {
    let (p, _e, _dir) = provider("jira", Some(JIRA)).await;
    let platform = {
        let (_, e, _d) = provider("jira", Some(JIRA)).await;
        props(&enrich(&e, "create_issue").await)
            .into_iter()
            .find(|n| n.starts_with("cf_platforma_"))
            .unwrap()
    };
    let web = json!({"title": "t", "projectId": "WEB", "priority": "urgent", "cf_story_points": 5, "cf_team": "Blue",
                     "epicKey": "WEB-1", "sprintId": 3, platform.clone(): ["iOS", "Web"]});
    assert_eq!(
        transform(&p, "create_issue", web).await,
        json!({"title": "t", "projectId": "WEB", "priority": "Highest", "customFields": {
            "customfield_100": 5, "customfield_200": {"id": "2"}, "customfield_300": "WEB-1",
            "customfield_301": 3, "customfield_400": [{"id": "7"}, {"id": "8"}]}})
    );
    // The same parameter maps to the named project's field.
    let api = json!({"title": "t", "projectId": "API", "cf_team": "Platform", "epicKey": "API-2"});
    assert_eq!(
        transform(&p, "create_issue", api).await["customFields"],
        json!({"customfield_900": "Platform", "customfield_901": "API-2"})
    );
    // No project named: the first project's fields.
    assert_eq!(
        transform(&p, "update_issue", json!({"key": "K", "cf_team": "Red"})).await["customFields"],
        json!({"customfield_200": {"id": "1"}})
    );
    let err = p
        .transform_args(
            "create_issue",
            args(json!({"projectId": "WEB", "cf_team": "Green"})),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(&err, PluginError::Rejected { message, .. } if message == "Team: unknown option 'Green' (expected Red, Blue)"),
        "{err}"
    );

    let model = p.value_model("get_issues").await.unwrap().unwrap();
    assert_eq!(links(&model), [("get_issue", 0.55), ("get_issue_comments", 0.45)]);
    assert_eq!(
        (
            model.cost.typical_kb,
            model.cost.max_kb,
            model.cost.latency_ms_p50
        ),
        (Some(4.0), Some(40.0), Some(450))
    );
    let link = &model.follow_ups.unwrap()[0];
    let projected = p
        .project_args(
            "get_issues",
            &json!({"issues": [{"key": "WEB-1"}, {"key": "WEB-2"}]}),
            link,
        )
        .await
        .unwrap();
    assert_eq!(
        projected.unwrap(),
        [args(json!({"key": "WEB-1"})), args(json!({"key": "WEB-2"}))]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn jira_single_project_and_bad_config() {
    let single = "[config]\n[[config.projects]]\nkey = \"WEB\"\n";
    let (p, e, _dir) = provider("jira", Some(single)).await;
    assert_eq!(
        p.categories,
        ["issue_tracker", "epics"],
        "no structures: the structure tools stay hidden"
    );
    assert!(!props(&enrich(&e, "create_issue").await).contains(&"projectId".to_owned()));

    let dir = plugin_dir(&[(
        "10-jira",
        "jira",
        Some("[config]\nprojects = [{ name = \"no key\" }]\n"),
    )]);
    let (rt, _) = runtime();
    let report = rt.load_dir(dir.path()).await.unwrap();
    assert!(report.plugins.is_empty());
    assert!(
        report.errors[0].message.contains("config:"),
        "{:?}",
        report.errors
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn clickup() {
    let (p, e, _dir) = provider("clickup", Some(CLICKUP)).await;
    assert_eq!(p.categories, ["issue_tracker", "epics"]);
    let list = enrich(&e, "get_issues").await;
    assert_eq!(
        list.property("stateCategory").unwrap()["enum"],
        json!(["backlog", "todo", "in_progress", "done", "cancelled"])
    );
    assert_eq!(
        list.property("labelsOperator").unwrap()["enum"],
        json!(["and", "or"])
    );
    assert_eq!(
        list.property("status").unwrap()["enum"],
        json!(["to do", "in progress", "done"])
    );
    assert!(
        !props(&list).contains(&"projectKey".to_owned()) && !props(&list).contains(&"nativeQuery".to_owned())
    );
    // Priority only where the tool takes one.
    assert!(enrich(&e, "get_issue").await.property("priority").is_none());
    let create = enrich(&e, "create_issue").await;
    assert_eq!(
        create.property("priority").unwrap()["enum"],
        json!(["urgent", "high", "normal", "low"])
    );
    assert!(
        ["issueType", "components", "projectId", "customFields"]
            .iter()
            .all(|g| !props(&create).contains(&g.to_string()))
    );
    assert_eq!(
        create.property("cf_team").unwrap()["enum"],
        json!(["Red", "Blue"])
    );
    assert_eq!(
        create.property("cf_tags").unwrap()["items"]["enum"],
        json!(["ux", "perf"])
    );
    assert_eq!(create.property("cf_estimate").unwrap()["type"], "number");
    assert_eq!(create.property("cf_approved").unwrap()["type"], "boolean");
    assert!(
        create.property("cf_mystery").is_none(),
        "unknown field types are skipped"
    );
    assert_eq!(
        enrich(&e, "link_issues").await.property("link_type").unwrap()["enum"],
        json!(["blocks", "blocked_by", "relates_to", "subtask"])
    );

    let out = transform(
        &p,
        "create_issue",
        json!({"title": "t", "priority": "high", "cf_team": "Blue", "cf_tags": ["perf"], "cf_estimate": 3.5}),
    )
    .await;
    assert_eq!(
        out,
        json!({"title": "t", "priority": 2, "customFields": [
        {"id": "cf-team", "value": 1}, {"id": "cf-tags", "value": ["l2"]}, {"id": "cf-est", "value": 3.5}]})
    );
    assert_eq!(
        transform(&p, "update_issue", json!({"key": "k", "priority": "whenever"})).await["priority"],
        3
    );
    let epic = transform(&p, "create_epic", json!({"title": "e", "goalId": "g-9"})).await;
    assert_eq!(
        epic,
        json!({"title": "e", "goalId": "g-9", "customFields": [{"id": "cf-goals", "value": "g-9"}]})
    );

    let model = p.value_model("get_issues").await.unwrap().unwrap();
    assert_eq!(links(&model), [("get_issue", 0.50), ("get_issue_comments", 0.40)]);
    let projected = p
        .project_args(
            "get_issues",
            &json!({"tasks": [{"id": "86a1"}]}),
            &model.follow_ups.unwrap()[0],
        )
        .await
        .unwrap();
    assert_eq!(projected.unwrap(), [args(json!({"key": "86a1"}))]);
    assert_projections_name_real_arguments(&p, &e).await;
    assert_eq!(
        p.rate_limit_host("get_issues", &Map::new())
            .await
            .unwrap()
            .as_deref(),
        Some("api.clickup.com")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn confluence_and_fireflies() {
    let (p, e, _dir) = provider("confluence", None).await;
    for t in ["search_knowledge_base", "create_knowledge_base_page"] {
        let tool = e.enrich(base_tool(t).unwrap()).await.unwrap();
        assert!(tool.changes.is_empty(), "{t} changed");
    }
    let search = p.value_model("search_knowledge_base").await.unwrap().unwrap();
    assert_eq!(
        (
            search.value_class(),
            search.cost.typical_kb,
            search.cost.freshness_ttl_s
        ),
        (ValueClass::Supporting, Some(4.0), Some(60))
    );
    let page = p.value_model("get_knowledge_base_page").await.unwrap().unwrap();
    assert_eq!(
        (page.value_class(), page.cost.max_kb, page.cost.freshness_ttl_s),
        (ValueClass::Critical, Some(80.0), Some(300))
    );
    assert_eq!(
        p.value_model("get_knowledge_base_spaces")
            .await
            .unwrap()
            .unwrap()
            .cost
            .freshness_ttl_s,
        Some(1800)
    );
    let update = p
        .value_model("update_knowledge_base_page")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(update.side_effect(), SideEffect::MutatesExternal);
    assert_eq!(
        update.invalidates.unwrap(),
        [
            "get_knowledge_base_page",
            "list_knowledge_base_pages",
            "search_knowledge_base"
        ]
    );
    let link = search.follow_ups.unwrap()[0].clone();
    let projected = p
        .project_args(
            "search_knowledge_base",
            &json!({"results": [{"id": "123"}, {"id": 456}]}),
            &link,
        )
        .await
        .unwrap();
    assert_eq!(
        projected.unwrap(),
        [args(json!({"pageId": "123"})), args(json!({"pageId": "456"}))]
    );
    assert_projections_name_real_arguments(&p, &e).await;

    let (p, e, _dir) = provider("fireflies", None).await;
    let notes = p.value_model("get_meeting_notes").await.unwrap().unwrap();
    assert_eq!(
        (
            notes.value_class(),
            notes.cost.typical_kb,
            notes.cost.freshness_ttl_s
        ),
        (ValueClass::Supporting, Some(3.0), Some(300))
    );
    let transcript = p.value_model("get_meeting_transcript").await.unwrap().unwrap();
    assert_eq!(
        (
            transcript.cost.typical_kb,
            transcript.cost.max_kb,
            transcript.cost.latency_ms_p50,
            transcript.cost.freshness_ttl_s
        ),
        (Some(8.0), Some(50.0), Some(900), Some(600))
    );
    let link = notes.follow_ups.unwrap()[0].clone();
    assert_eq!(
        (link.tool.as_str(), link.probability),
        ("get_meeting_transcript", 0.55)
    );
    let projected = p
        .project_args("get_meeting_notes", &json!({"meetings": [{"id": "m1"}]}), &link)
        .await
        .unwrap();
    assert_eq!(projected.unwrap(), [args(json!({"meeting_id": "m1"}))]);
    assert_projections_name_real_arguments(&p, &e).await;
    assert_eq!(
        p.rate_limit_host("get_meeting_transcript", &Map::new())
            .await
            .unwrap()
            .as_deref(),
        Some("api.fireflies.ai")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn linear() {
    let (p, e, _dir) = provider(
        "linear",
        Some("[config]\nstates = [\"Backlog\", \"Todo\", \"In Progress\", \"Done\"]\n"),
    )
    .await;
    let update = enrich(&e, "update_issue").await;
    assert!(!props(&update).contains(&"issueType".to_owned()));
    assert_eq!(
        update.property("priority").unwrap()["enum"],
        json!(["urgent", "high", "medium", "low", "none"])
    );
    assert_eq!(
        update.property("status").unwrap()["enum"],
        json!(["Backlog", "Todo", "In Progress", "Done"])
    );
    assert!(
        update.property("projectId").unwrap()["description"]
            .as_str()
            .unwrap()
            .contains("UUID")
    );
    assert!(
        update.property("parentId").unwrap()["description"]
            .as_str()
            .unwrap()
            .contains("\"none\" detaches")
    );
    assert!(
        update.property("status").unwrap()["description"]
            .as_str()
            .unwrap()
            .contains("precedence over `state`")
    );
    let list = enrich(&e, "get_issues").await;
    assert!(
        !props(&list).contains(&"projectKey".to_owned()) && !props(&list).contains(&"nativeQuery".to_owned())
    );
    assert!(list.property("stateCategory").is_some() && list.property("labelsOperator").is_some());
    assert_eq!(
        transform(&p, "update_issue", json!({"key": "ENG-1", "priority": "high"})).await,
        json!({"key": "ENG-1", "priority": "high"})
    );
    assert_eq!(
        p.value_model("create_issue")
            .await
            .unwrap()
            .unwrap()
            .side_effect(),
        SideEffect::MutatesExternal
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn check_passes_for_every_provider() {
    let (rt, _) = runtime();
    // Full plugins import `http`, which `check` wants granted: each is
    // granted its provider's API, as a user's manifest would.
    let granted = |manifest: &str, origin: &str| {
        if manifest.contains("[grants]") {
            manifest.to_owned()
        } else {
            format!("{manifest}\n[grants]\nhttp = [\"{origin}\"]\n")
        }
    };
    for (name, manifest) in [
        ("github", granted(GITHUB, "api.github.com")),
        ("gitlab", granted(GITLAB, "gitlab.com")),
        ("jira", granted(JIRA, "acme.atlassian.net")),
        ("clickup", granted(CLICKUP, "api.clickup.com")),
        (
            "confluence",
            granted(
                "[config]\nbase_url = \"https://acme.atlassian.net\"\n",
                "acme.atlassian.net",
            ),
        ),
        ("fireflies", granted("", "api.fireflies.ai")),
        ("linear", granted("", "api.linear.app")),
    ] {
        let manifest = Some(manifest.as_str());
        let dir = plugin_dir(&[(name, name, manifest)]);
        let report = check(&rt, &dir.path().join(format!("{name}.wasm")), None)
            .await
            .unwrap();
        let failed: Vec<_> = report
            .findings
            .iter()
            .filter(|f| f.verdict == Verdict::Fail)
            .collect();
        assert!(failed.is_empty(), "{name}: {failed:?}");
    }
}

/// One line per change, grouped by tool: what the snapshot records.
fn provenance(tools: &[EnrichedTool]) -> Value {
    let mut out = Map::new();
    for t in tools {
        let changes: Vec<String> = t
            .changes
            .iter()
            .map(|c| {
                format!(
                    "{} {:?} {}",
                    c.plugin,
                    c.action,
                    c.property.as_deref().unwrap_or("(description)")
                )
            })
            .collect();
        let conflicts: Vec<String> = t
            .conflicts
            .iter()
            .map(|c| {
                format!(
                    "{}: {}",
                    c.property.as_deref().unwrap_or("(description)"),
                    c.plugins.join(" < ")
                )
            })
            .collect();
        out.insert(
            t.name.clone(),
            json!({"schema": t.schema.to_value(), "changes": changes, "conflicts": conflicts}),
        );
    }
    Value::Object(out)
}

#[tokio::test(flavor = "multi_thread")]
async fn all_providers_with_format_pipeline_match_the_reviewed_snapshot() {
    let (report, _, _dir) = load(&[
        ("10-format-pipeline", "format_pipeline", None),
        ("20-github", "github", Some(GITHUB)),
        (
            "30-gitlab",
            "gitlab",
            Some("[config]\nhost = \"gitlab.example.com\"\n"),
        ),
        ("40-jira", "jira", Some(JIRA)),
        ("50-clickup", "clickup", Some(CLICKUP)),
        ("60-confluence", "confluence", None),
        ("70-fireflies", "fireflies", None),
        ("80-linear", "linear", None),
    ])
    .await;
    let listing = Enrichers::new(&report.plugins).list(base_catalog()).await;
    assert!(listing.hidden.is_empty(), "{:?}", listing.hidden);
    let got = serde_json::to_string_pretty(&provenance(&listing.tools)).unwrap() + "\n";
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("snapshots/providers.json");
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &got).unwrap();
    }
    let want =
        std::fs::read_to_string(&path).expect("snapshot missing: run with UPDATE_SNAPSHOTS=1 and review it");
    assert!(
        got == want,
        "tools/list differs from {}: rerun with UPDATE_SNAPSHOTS=1 and review the diff",
        path.display()
    );
}

/// A plain value `prop` accepts: its first enum value or `anyOf` branch,
/// else one of its type (an array holds one item).
fn sample(prop: &Value) -> Value {
    if let Some(first) = prop.get("enum").and_then(|e| e.get(0)) {
        return first.clone();
    }
    if let Some(first) = ["anyOf", "oneOf"].iter().find_map(|k| prop.get(*k)?.get(0)) {
        return sample(first);
    }
    let kind = match prop.get("type") {
        Some(Value::Array(kinds)) => kinds.iter().find(|k| *k != "null").cloned(),
        other => other.cloned(),
    };
    match kind.as_ref().and_then(Value::as_str) {
        Some("integer" | "number") => json!(1),
        Some("boolean") => json!(true),
        Some("array") => json!([sample(prop.get("items").unwrap_or(&Value::Null))]),
        Some("object") => json!({}),
        _ => json!("sample"),
    }
}

/// Each provider declares `transforms-args` exactly for the catalog tools
/// whose arguments its `transform-args` changes (given every parameter its
/// enrichment leaves): a `false` it does not keep would send the backend
/// arguments it does not take, a `true` it does not need enters the plugin
/// on every call for nothing.
#[tokio::test(flavor = "multi_thread")]
async fn every_provider_declares_transforms_args_truthfully() {
    let (report, _, _dir) = load(&toolhost_tests::providers::BUNDLE).await;
    assert_eq!(report.plugins.len(), 7, "{:?}", report.errors);
    let mut transformed = Vec::new();
    for p in &report.plugins {
        for tool in base_catalog()
            .iter()
            .filter(|t| t.category.as_deref().is_some_and(|c| p.claims(c)))
        {
            let schema = ToolSchema::new(tool.description.clone(), tool.input_schema.clone()).unwrap();
            let Ok(enrichment) = p.enrich_schema(&tool.name, schema).await else {
                continue;
            };
            let schema = enrichment.edit.schema;
            let given: Map<String, Value> = schema
                .property_names()
                .into_iter()
                .map(|name| {
                    let value = sample(schema.property(&name).unwrap());
                    (name, value)
                })
                .collect();
            let changed = p.transform_args(&tool.name, given.clone()).await.unwrap() != given;
            assert_eq!(
                enrichment.transforms_args,
                changed,
                "{}: {} declares transforms-args {} but its transform-args {} {given:?}",
                p.name,
                tool.name,
                enrichment.transforms_args,
                if changed { "changes" } else { "leaves" },
            );
            if changed {
                transformed.push(format!("{} {}", p.name, tool.name));
            }
        }
    }
    assert!(
        transformed.iter().any(|t| t == "clickup create_epic")
            && transformed.iter().any(|t| t == "jira create_issue"),
        "{transformed:?}"
    );
}
