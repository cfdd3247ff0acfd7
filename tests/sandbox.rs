//! Hostile plugins: each misbehaving fixture is contained with an error
//! naming it, the host keeps serving, and the other plugins' results stay
//! the same. Quarantine trips after repeated failures and lifts after its
//! backoff.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};
use toolhost::FollowUpLink;
use toolhost::bounds::{MAX_ARGS_GROWTH, MAX_SCHEMA_BYTES};
use toolhost::catalog::base_tool;
use toolhost::enrich::Enrichers;
use toolhost::internals::Sources;
use toolhost::plugin::{LoadReport, Plugin, PluginError, Status};
use toolhost::{CallControl, Toolhost, error_text};
use toolhost_tests::{Logs, args, load};

/// Items of the large argument the heavy-imports attack reads: its JSON
/// text is about 8 MB, tens of milliseconds to serialise each time.
const HEAVY_ITEMS: usize = 250_000;

/// Tight limits so misbehaviour is caught quickly.
const TIGHT: &str = "[limits]\ncpu_ms = 100\nwall_ms = 2000\nquarantine_after = 100\n";

fn plugin<'a>(report: &'a LoadReport, name: &str) -> &'a Arc<Plugin> {
    report.plugins.iter().find(|p| &*p.name == name).unwrap()
}

/// What the format plugin alone makes of `get_issues`: the reference the
/// hostile neighbour must not change.
async fn format_alone() -> Value {
    let (report, _, _dir) = load(&[("10-format", "format_pipeline", None)]).await;
    let tool = Enrichers::new(&report.plugins)
        .enrich(base_tool("get_issues").unwrap())
        .await
        .unwrap();
    tool.schema.to_value()
}

/// Enrich `get_issues` with format + the fixture; the fixture's failure
/// must be skipped, named, and leave format's result intact.
async fn assert_enrichment_contained(fixture: &str, manifest: &str, expect: &str) -> LoadReport {
    let (report, _, _dir) = load(&[
        ("10-format", "format_pipeline", None),
        ("20-bad", fixture, Some(manifest)),
    ])
    .await;
    let enrichers = Enrichers::new(&report.plugins);
    let tool = enrichers.enrich(base_tool("get_issues").unwrap()).await.unwrap();
    assert_eq!(tool.skipped.len(), 1, "{:?}", tool.skipped);
    assert!(
        tool.skipped[0].contains("`bad`") && tool.skipped[0].contains(expect),
        "{}",
        tool.skipped[0]
    );
    assert_eq!(
        tool.schema.to_value(),
        format_alone().await,
        "the neighbour's result changed"
    );
    // The host keeps serving: the next listing works too.
    let again = enrichers.enrich(base_tool("get_issue").unwrap()).await.unwrap();
    assert!(again.schema.property("format").is_some());
    report
}

#[tokio::test(flavor = "multi_thread")]
async fn an_infinite_loop_is_stopped_by_the_cpu_budget() {
    let report = assert_enrichment_contained("fixture_loop", TIGHT, "CPU budget of 100 ms").await;
    let err = plugin(&report, "bad")
        .transform_args("get_issues", Map::new())
        .await
        .unwrap_err();
    assert!(matches!(err, PluginError::Cpu { .. }), "{err}");
    // Fail closed: the chain rejects the call, naming the plugin.
    let chain = Enrichers::new(&report.plugins);
    let err = chain
        .transform_args("get_issues", Some("issue_tracker"), Map::new())
        .await
        .unwrap_err();
    assert_eq!(err.plugin(), "bad");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_wall_clock_deadline_stops_a_call_that_yields_forever() {
    // CPU budget larger than the wall deadline: the wall clock fires first.
    let manifest = "[limits]\ncpu_ms = 60000\nwall_ms = 150\n";
    let (report, _, _dir) = load(&[("20-bad", "fixture_loop", Some(manifest))]).await;
    let err = plugin(&report, "bad")
        .transform_args("get_issues", Map::new())
        .await
        .unwrap_err();
    assert!(matches!(err, PluginError::Timeout { wall_ms: 150, .. }), "{err}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_memory_bomb_is_refused_by_the_store_limits() {
    let manifest = "[limits]\nmemory_mb = 32\ncpu_ms = 5000\n";
    assert_enrichment_contained("fixture_alloc", manifest, "memory").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_trap_in_each_export_is_contained() {
    let trap =
        |export: &str| format!("[limits]\nquarantine_after = 100\n[config]\ntrap_in = [\"{export}\"]\n");
    assert_enrichment_contained("fixture_trap", &trap("enrich_schema"), "trapped in enrich-schema").await;

    let link = FollowUpLink {
        tool: "get_issue".into(),
        probability: 0.5,
        projection: None,
        projection_arg: None,
    };
    for export in ["transform_args", "value_model", "project_args", "rate_limit_host"] {
        let (report, _, _dir) = load(&[("20-bad", "fixture_trap", Some(&trap(export)))]).await;
        let p = plugin(&report, "bad");
        let err = match export {
            "transform_args" => p.transform_args("get_issues", Map::new()).await.map(drop),
            "value_model" => p.value_model("get_issues").await.map(drop),
            "project_args" => p.project_args("get_issues", &json!({}), &link).await.map(drop),
            _ => p.rate_limit_host("get_issues", &Map::new()).await.map(drop),
        }
        .unwrap_err();
        assert!(matches!(err, PluginError::Trap { .. }), "{export}: {err}");
        assert!(
            err.to_string().contains("`bad`") && err.to_string().contains(&export.replace('_', "-")),
            "{err}"
        );
        // The other exports still answer: a trapped instance is replaced.
        let tool = Enrichers::new(&report.plugins)
            .enrich(base_tool("get_issues").unwrap())
            .await
            .unwrap();
        assert!(tool.schema.property("trap_fixture_ok").is_some(), "{export}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_reused_instance_is_replaced_after_a_trap() {
    let manifest = "[limits]\ninstances = \"reuse\"\nmax_uses = 100\nquarantine_after = 100\n\
                    [config]\ntrap_in = [\"transform_args\"]\n";
    let (report, _, _dir) = load(&[("20-bad", "fixture_trap", Some(manifest))]).await;
    let p = plugin(&report, "bad");
    assert!(p.value_model("get_issues").await.unwrap().is_some());
    assert!(matches!(
        p.transform_args("get_issues", Map::new()).await,
        Err(PluginError::Trap {
            method: "transform-args",
            ..
        })
    ));
    // Had the trapped instance gone back to the pool, this call would fail.
    for _ in 0..3 {
        assert!(p.value_model("get_issues").await.unwrap().is_some());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn oversized_output_is_refused() {
    let (report, logs, _dir) = load(&[
        ("10-format", "format_pipeline", None),
        ("20-bad", "fixture_oversize", None),
    ])
    .await;
    let tool = Enrichers::new(&report.plugins)
        .enrich(base_tool("get_issues").unwrap())
        .await
        .unwrap();
    assert!(tool.schema.property("oversize").is_none());
    assert_eq!(
        tool.schema.description(),
        base_tool("get_issues").unwrap().description
    );
    assert_eq!(tool.schema.to_value(), format_alone().await);
    assert!(logs.has("bad", "log", "refused the oversize property"));
    assert!(logs.has("bad", "log", "refused the oversize description"));

    let link = FollowUpLink {
        tool: "get_issue".into(),
        probability: 0.5,
        projection: None,
        projection_arg: None,
    };
    let err = plugin(&report, "bad")
        .project_args("get_issues", &json!({}), &link)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, PluginError::TooLarge { plugin, method: "project-args", .. } if &**plugin == "bad"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn no_ambient_authority_and_output_goes_to_the_log() {
    let (report, logs, _dir) = load(&[("20-escape", "fixture_escape", None)]).await;
    let tool = Enrichers::new(&report.plugins)
        .enrich(base_tool("get_issues").unwrap())
        .await
        .unwrap();
    let outcomes = tool.schema.description().to_owned();
    let attempts: std::collections::BTreeMap<&str, &str> =
        outcomes.split("; ").filter_map(|a| a.split_once('=')).collect();
    for name in [
        "read_passwd",
        "read_dir_cwd",
        "read_dir_root",
        "env_home",
        "tcp_connect",
        "dns_lookup",
    ] {
        assert!(
            attempts[name].starts_with("err:"),
            "{name} got through: {}",
            attempts[name]
        );
    }
    // What cannot fail is empty: no variables, no arguments, no input.
    assert_eq!(attempts["env_count"], "ok:0");
    assert_eq!(attempts["args_count"], "ok:0");
    assert_eq!(attempts["stdin"], "ok:0 bytes");
    assert!(
        logs.has("escape", "stdout", "escape fixture stdout"),
        "{:?}",
        logs.lines()
    );
    assert!(
        logs.has("escape", "stderr", "escape fixture stderr"),
        "{:?}",
        logs.lines()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn quarantine_trips_and_lifts_after_backoff() {
    let manifest =
        "[limits]\nquarantine_after = 2\nbackoff_ms = 300\n[config]\ntrap_in = [\"transform_args\"]\n";
    let (report, _, _dir) = load(&[("20-bad", "fixture_trap", Some(manifest))]).await;
    let p = plugin(&report, "bad");
    for _ in 0..2 {
        assert!(matches!(
            p.transform_args("x", Map::new()).await,
            Err(PluginError::Trap { .. })
        ));
    }
    assert!(matches!(p.status(), Status::Quarantined { .. }));
    // Quarantined: not even a healthy export is called.
    let err = p.value_model("get_issues").await.unwrap_err();
    assert!(
        matches!(&err, PluginError::Quarantined { plugin, .. } if &**plugin == "bad"),
        "{err}"
    );

    tokio::time::sleep(Duration::from_millis(350)).await;
    assert!(
        p.value_model("get_issues").await.unwrap().is_some(),
        "back after its backoff"
    );
    assert_eq!(p.status(), Status::Healthy);
    assert_eq!(p.quarantine_trips(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_calls_each_get_their_own_instance() {
    let (report, _, _dir) = load(&[("10-a", "fixture_chain_a", None)]).await;
    let p = plugin(&report, "a").clone();
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..32 {
        let p = p.clone();
        let priority = if i % 2 == 0 { "low" } else { "high" };
        calls.spawn(async move {
            let out = p
                .transform_args("create_issue", args(json!({"priority": priority, "n": i})))
                .await
                .unwrap();
            (i, out)
        });
    }
    while let Some(joined) = calls.join_next().await {
        let (i, out) = joined.unwrap();
        let code = if i % 2 == 0 { "1" } else { "2" };
        assert_eq!(Value::Object(out), json!({"n": i, "priority_code": code}));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn failure_policy_can_be_overridden_per_method() {
    // enrich-schema closed: the tool is hidden rather than shown unadapted.
    let closed = "[failure]\nenrich_schema = \"closed\"\n[config]\ntrap_in = [\"enrich_schema\"]\n";
    let (report, _, _dir) = load(&[
        ("10-format", "format_pipeline", None),
        ("20-bad", "fixture_trap", Some(closed)),
    ])
    .await;
    let listing = Enrichers::new(&report.plugins)
        .list(&[base_tool("get_issues").unwrap().clone()])
        .await;
    assert!(listing.tools.is_empty());
    assert!(
        listing.hidden[0].reason.contains("`bad`") && listing.hidden[0].reason.contains("closed"),
        "{:?}",
        listing.hidden
    );

    // transform-args open: the failing plugin is skipped and its input kept.
    let open = "[failure]\ntransform_args = \"open\"\n[config]\ntrap_in = [\"transform_args\"]\n";
    let (report, _, _dir) = load(&[
        ("10-bad", "fixture_trap", Some(open)),
        ("20-a", "fixture_chain_a", None),
    ])
    .await;
    let chain = Enrichers::new(&report.plugins);
    let out = chain
        .transform_args(
            "create_issue",
            Some("issue_tracker"),
            args(json!({"priority": "low"})),
        )
        .await
        .unwrap();
    assert_eq!(Value::Object(out), json!({"priority_code": "1"}));
}

/// The attack plugin's manifest: its `[config]` lines, with an output cap
/// of `output_kb`.
/// The attack plugin's manifest. Its CPU budget is generous: these tests
/// are about what the host bounds, not about time, and the host's checks of
/// 64 MB of edits run inside that budget, slowly in an unoptimised build on
/// a busy machine.
fn attack(output_kb: &str, config: &str) -> String {
    format!(
        "[limits]\nmax_output_kb = {output_kb}\nmemory_mb = 256\ncpu_ms = 60000\nquarantine_after = 100\n\
         [config]\n{config}\n"
    )
}

/// What the model reads of a call through the whole pipeline: the error, or
/// the result's text.
async fn call_text(host: &Toolhost, tool: &str) -> String {
    match host.call_tool(tool, json!({}), &CallControl::new("c")).await {
        Ok(out) => {
            assert!(out.is_error, "{tool} did not fail");
            out.text()
        }
        Err(e) => error_text(&e),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn huge_error_texts_from_every_hook_are_cut() {
    let mut failures = Vec::new();
    for hook in [
        "failed",
        "not_found",
        "invalid_args",
        "prepare",
        "before",
        "transform",
    ] {
        let manifest = attack("64", &format!("mode = \"huge_error\"\nhook = \"{hook}\""));
        let (report, _, _dir) = load(&[("20-attack", "attack_plugin", Some(&manifest))]).await;
        let sources = Sources {
            plugins: report.plugins.clone(),
            ..Sources::default()
        };
        let host = Toolhost::new(sources).await.unwrap();
        let text = call_text(&host, "attack_fail").await;
        let cut = text.contains("attack error: é") && text.ends_with("[cut: 8388622 bytes in all]");
        if text.len() > 64 << 10 || !cut {
            let end = text.char_indices().rev().nth(80).map_or(0, |(i, _)| i);
            failures.push(format!("{hook}: {} bytes, ending …{}", text.len(), &text[end..]));
        }
    }
    assert!(failures.is_empty(), "not cut:\n{}", failures.join("\n"));
}

/// `get_issues` as the attack plugin in `config` (one copy per file stem of
/// `stems`) enriches it, and the plugin log.
async fn enriched_by_attack(stems: &[&str], output_kb: &str, config: &str) -> (Value, Logs) {
    let manifest = attack(output_kb, config);
    let entries: Vec<_> = stems
        .iter()
        .map(|s| (*s, "attack_plugin", Some(manifest.as_str())))
        .collect();
    let (report, logs, _dir) = load(&entries).await;
    let tool = Enrichers::new(&report.plugins)
        .enrich(base_tool("get_issues").unwrap())
        .await
        .unwrap();
    assert!(tool.skipped.is_empty(), "{:?}", tool.skipped);
    let mut schema = tool.schema.to_value();
    schema["description"] = tool.schema.description().into();
    (schema, logs)
}

#[tokio::test(flavor = "multi_thread")]
async fn enum_bombs_are_bounded_by_count_and_encoded_bytes() {
    let (schema, logs) = enriched_by_attack(&["20-attack"], "64", "mode = \"enum_bomb\"").await;
    let props = &schema["properties"];
    assert!(
        props.get("bomb_empty").is_none(),
        "1,000,000 empty strings passed"
    );
    assert!(
        props.get("bomb_control").is_none(),
        "360 KB of escapes passed a 64 KiB cap"
    );
    assert_eq!(
        props["state"],
        base_tool("get_issues").unwrap().input_schema["properties"]["state"],
        "set-enum changed `state`"
    );
    let answer = |call: &str| {
        let line = logs.lines().into_iter().find(|l| l.message.contains(call));
        line.unwrap_or_else(|| panic!("no answer to {call}: {:?}", logs.lines()))
            .message
    };
    for call in ["add-enum-param empty", "set-enum empty"] {
        let answer = answer(call);
        assert!(answer.contains("has 1000000 values, more than 1000"), "{answer}");
    }
    for call in ["add-enum-param control", "set-enum control"] {
        assert!(answer(call).contains("TooLarge"), "{}", answer(call));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_schema_cannot_grow_past_its_cap_over_many_edits_and_enrichers() {
    // 64 edits of 1 MB, each within the default 1 MiB output cap: 64 MB if
    // only each edit were checked.
    let (schema, logs) = enriched_by_attack(
        &["20-grow-a"],
        "1024",
        "mode = \"schema_growth\"\nbytes = 1000000",
    )
    .await;
    let size = schema.to_string().len();
    assert!(size <= MAX_SCHEMA_BYTES, "the schema grew to {size} bytes");
    assert!(
        logs.has("grow-a", "log", "0 of 64 growing edits accepted"),
        "{:?}",
        logs.lines()
    );

    // Two enrichers, 64 edits of 60 KB each: together they fill the cap,
    // and the second finds it full.
    let (schema, logs) = enriched_by_attack(
        &["20-grow-a", "30-grow-b"],
        "64",
        "mode = \"schema_growth\"\nbytes = 60000",
    )
    .await;
    let size = schema.to_string().len();
    assert!(size <= MAX_SCHEMA_BYTES, "the schema grew to {size} bytes");
    assert!(size > MAX_SCHEMA_BYTES / 2, "the cap was not filled: {size}");
    assert!(
        logs.has("grow-b", "log", "0 of 64 growing edits accepted"),
        "{:?}",
        logs.lines()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn arguments_cannot_grow_past_their_cap_through_transform_args() {
    // Two enrichers, 64 sets of 60 KB each (under the 64 KiB output cap).
    let manifest = attack("64", "mode = \"args_growth\"\nbytes = 60000");
    let (report, logs, _dir) = load(&[
        ("20-grow-a", "attack_plugin", Some(&manifest)),
        ("30-grow-b", "attack_plugin", Some(&manifest)),
    ])
    .await;
    let out = Enrichers::new(&report.plugins)
        .transform_args("get_issues", Some("issue_tracker"), args(json!({"search": "x"})))
        .await
        .unwrap();
    let size = Value::Object(out).to_string().len();
    assert!(size <= MAX_ARGS_GROWTH + 64, "the arguments grew to {size} bytes");
    // The chain shares one budget: the first enricher spent it.
    assert!(
        logs.has("grow-a", "log", "17 of 64 growing sets accepted"),
        "{:?}",
        logs.lines()
    );
    assert!(
        logs.has("grow-b", "log", "0 of 64 growing sets accepted"),
        "{:?}",
        logs.lines()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn time_in_host_imports_is_charged_to_the_cpu_budget() {
    // Ten reads of a large argument: each makes the host serialise it, far
    // longer than one epoch tick, and none of it runs guest code.
    let manifest = "[limits]\ncpu_ms = 100\nmemory_mb = 256\nquarantine_after = 100\n\
                    [config]\nmode = \"heavy_imports\"\nreads = 10\n";
    let (report, logs, _dir) = load(&[("20-heavy", "attack_plugin", Some(manifest))]).await;
    let big: Vec<Value> = (0..HEAVY_ITEMS)
        .map(|i| json!({"n": i, "s": "abcdefgh"}))
        .collect();
    let outcome = plugin(&report, "heavy")
        .transform_args("get_issues", args(json!({ "big": big })))
        .await
        .map(|_| "ran to its end");
    assert!(
        matches!(outcome, Err(PluginError::Cpu { cpu_ms: 100, .. })),
        "{outcome:?}"
    );
    assert!(!logs.has("heavy", "log", "heavy reads done"));
}
