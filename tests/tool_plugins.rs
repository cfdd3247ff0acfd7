//! The tool interface through a real tool plugin (`text_tools`) and a
//! plugin that is both an enricher and a tool plugin (`fixture_both`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value, json};
use toolhost::catalog::base_tool;
use toolhost::enrich::Enrichers;
use toolhost::plugin::{BeforeCallDecision, Hooks, RenderOptions};
use toolhost::{Block, CallOutput, ToolError};
use toolhost_tests::{args, load};

fn no_cancel() -> Arc<AtomicBool> {
    Arc::new(AtomicBool::new(false))
}

#[tokio::test(flavor = "multi_thread")]
async fn text_tools_exercise_every_hook() {
    let (report, _, _dir) = load(&[("20-text", "text_tools", None)]).await;
    let plugins = report.plugins;
    let p = &plugins[0];
    let names: Vec<&str> = p.tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["word_count", "slow_count", "fail"]);
    let word_count = &p.tools[0];
    assert!(
        word_count
            .hooks
            .contains(Hooks::PREPARE_ARGUMENTS | Hooks::BEFORE_CALL | Hooks::AFTER_CALL)
    );
    assert!(word_count.snippet.is_some() && !word_count.guidelines.is_empty());

    // prepare-arguments folds the legacy key.
    let prepared = p
        .prepare_arguments("word_count", args(json!({"input": "a b a"})))
        .await
        .unwrap();
    assert_eq!(Value::Object(prepared.clone()), json!({"text": "a b a"}));

    // before-call blocks with a reason, and allows otherwise.
    let blocked = p
        .before_call("word_count", &args(json!({"text": "a FORBIDDEN word"})))
        .await
        .unwrap();
    assert!(
        matches!(blocked, BeforeCallDecision::Block(reason) if reason == "text mentions a forbidden word")
    );
    assert!(matches!(
        p.before_call("word_count", &prepared).await.unwrap(),
        BeforeCallDecision::Allow
    ));

    // execute returns text and structured content, and details.
    let with_unique = args(json!({"text": "a b a", "unique": true}));
    let result = p
        .execute("word_count", &with_unique, "call-1".into(), no_cancel(), None)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(result.text(), "3 words");
    assert_eq!(result.structured(), Some(json!({"words": 3, "unique": 2})));

    // after-call overrides details.
    let over = p.after_call("word_count", &result, false).await.unwrap().unwrap();
    assert_eq!(over.details.unwrap(), json!({"chars": 5, "checked": true}));
    assert!(over.content.is_none() && over.is_error.is_none());

    // Renderers return terminal text.
    assert_eq!(
        p.render_call("word_count", &json!({"text": "a b a"}), 80)
            .await
            .unwrap()
            .as_deref(),
        Some("word_count(a b a)")
    );
    let opts = RenderOptions {
        expanded: false,
        is_partial: false,
        is_error: false,
        width: 80,
    };
    assert_eq!(
        p.render_result("word_count", &result, opts)
            .await
            .unwrap()
            .as_deref(),
        Some("3 words")
    );

    // Tool errors come back as the tool's answer, not a plugin failure.
    let failed = p
        .execute(
            "fail",
            &args(json!({"kind": "not_found"})),
            "call-2".into(),
            no_cancel(),
            None,
        )
        .await
        .unwrap();
    assert!(matches!(failed, Err(ToolError::NotFound(_))));
}

#[tokio::test(flavor = "multi_thread")]
async fn execute_reports_progress_and_honours_cancellation() {
    let (report, _, _dir) = load(&[("20-text", "text_tools", None)]).await;
    let plugins = report.plugins;
    let p = plugins[0].clone();
    let reports = Arc::new(Mutex::new(Vec::new()));
    let sink = reports.clone();
    let progress: toolhost::plugin::ProgressFn =
        Arc::new(move |done, total, _| sink.lock().unwrap().push((done, total)));
    let done = p
        .execute(
            "slow_count",
            &args(json!({"n": 5})),
            "c".into(),
            no_cancel(),
            Some(progress),
        )
        .await
        .unwrap();
    assert_eq!(done, Ok(CallOutput::new(vec![Block::text("counted to 5")])));
    assert_eq!(reports.lock().unwrap().last(), Some(&(5.0, Some(5.0))));

    // Cancel once the tool has reported progress: it answers `cancelled`.
    let cancel = no_cancel();
    let flag = cancel.clone();
    let progress: toolhost::plugin::ProgressFn = Arc::new(move |done, _, _| {
        if done >= 3.0 {
            flag.store(true, Ordering::Relaxed);
        }
    });
    let answer = p
        .execute(
            "slow_count",
            &args(json!({"n": 100000})),
            "c2".into(),
            cancel,
            Some(progress),
        )
        .await
        .unwrap();
    assert!(matches!(answer, Err(ToolError::Cancelled)));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_slow_call_does_not_hold_up_another_call_to_the_same_plugin() {
    let (report, _, _dir) = load(&[("20-text", "text_tools", None)]).await;
    let plugins = report.plugins;
    let p = plugins[0].clone();
    let started = Arc::new(AtomicBool::new(false));
    let (flag, slow_plugin) = (started.clone(), p.clone());
    let cancel = no_cancel();
    let stop = cancel.clone();
    let progress: toolhost::plugin::ProgressFn = Arc::new(move |_, _, _| flag.store(true, Ordering::Relaxed));
    let slow = tokio::spawn(async move {
        slow_plugin
            .execute(
                "slow_count",
                &args(json!({"n": 100000})),
                "slow".into(),
                cancel,
                Some(progress),
            )
            .await
    });
    while !started.load(Ordering::Relaxed) {
        tokio::task::yield_now().await;
    }
    // The slow call is still running (it only stops when cancelled), yet
    // this one completes: they run on separate instances.
    let quick = p
        .execute(
            "word_count",
            &args(json!({"text": "x y"})),
            "quick".into(),
            no_cancel(),
            None,
        )
        .await
        .unwrap();
    let two_words = CallOutput {
        details: Some(json!({"chars": 3})),
        ..CallOutput::new(vec![Block::text("2 words")]).with_structured(json!({"words": 2}))
    };
    assert_eq!(quick, Ok(two_words));
    assert!(!slow.is_finished());
    stop.store(true, Ordering::Relaxed);
    assert!(matches!(slow.await.unwrap().unwrap(), Err(ToolError::Cancelled)));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_full_plugin_is_both_an_enricher_and_a_tool_plugin() {
    let (report, _, _dir) = load(&[("10-both", "fixture_both", None)]).await;
    let plugins = report.plugins;
    let p = &plugins[0];
    assert!(p.worlds.enricher && p.worlds.tool);
    assert_eq!(p.tools[0].name, "ping");
    let tool = Enrichers::new(&plugins)
        .enrich(base_tool("get_issues").unwrap())
        .await
        .unwrap();
    assert!(tool.schema.property("from_both").is_some());
    let pong = p
        .execute("ping", &Map::new(), "p".into(), no_cancel(), None)
        .await
        .unwrap()
        .unwrap();
    assert!(matches!(&pong.content[0], Block::Text(t) if t.text == "pong"));
}
