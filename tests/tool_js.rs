//! A tool plugin in JavaScript (`guest-plugins/tool-js`) through the real
//! host: list-tools with prompt metadata and hooks, prepare-arguments,
//! before-call, execute with the call context (id, progress), after-call and
//! both renderers.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use toolhost::plugin::{BeforeCallDecision, Hooks, RenderOptions};
use toolhost::{Block, CallOutput, ToolError};
use toolhost_tests::{args, lang_plugin, needs, runtime};

fn stats(result: &CallOutput) -> Value {
    result.structured().expect("a structured result")
}

#[tokio::test(flavor = "multi_thread")]
async fn the_javascript_tool_plugin_serves_every_hook() {
    needs!(LangPlugins);
    let (rt, logs) = runtime();
    let plugin = rt.load_file(&lang_plugin("tool-js")).await.unwrap();
    assert_eq!(plugin.worlds.name(), "tool-plugin");
    let [def] = plugin.tools.as_slice() else {
        panic!("one tool expected: {:?}", plugin.tools)
    };
    assert_eq!(def.name, "js_text_stats");
    assert_eq!(def.title.as_deref(), Some("Text statistics"));
    assert_eq!(
        def.guidelines,
        ["Use js_text_stats instead of counting words yourself."]
    );
    assert!(
        def.hooks
            .contains(Hooks::PREPARE_ARGUMENTS | Hooks::BEFORE_CALL | Hooks::RENDER_RESULT)
    );
    assert_eq!(def.input_schema["required"], json!(["text"]));

    let prepared = plugin
        .prepare_arguments("js_text_stats", args(json!({"content": "a b"})))
        .await
        .unwrap();
    assert_eq!(
        Value::Object(prepared),
        json!({"text": "a b"}),
        "legacy `content` folded into `text`"
    );

    let blocked = plugin
        .before_call("js_text_stats", &args(json!({"text": "  "})))
        .await
        .unwrap();
    assert!(
        matches!(&blocked, BeforeCallDecision::Block(r) if r == "js_text_stats: the text is empty"),
        "{blocked:?}"
    );
    let allowed = plugin
        .before_call("js_text_stats", &args(json!({"text": "x"})))
        .await
        .unwrap();
    assert!(matches!(allowed, BeforeCallDecision::Allow));

    let progress = Arc::new(Mutex::new(Vec::new()));
    let sink = progress.clone();
    let text = args(json!({"text": "the cat and the hat\nthe end", "top": 2}));
    let result = plugin
        .execute(
            "js_text_stats",
            &text,
            "call-7".into(),
            Arc::new(AtomicBool::new(false)),
            Some(Arc::new(move |p, total, msg| {
                sink.lock().unwrap().push((p, total, msg))
            })),
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        stats(&result),
        json!({"words": 7, "chars": 27, "lines": 2, "top": [{"word": "the", "count": 3}, {"word": "and", "count": 1}]})
    );
    assert!(matches!(&result.content[0], Block::Text(t) if t.text == "7 words, 27 characters, 2 lines"));
    assert_eq!(result.details, Some(json!({"callId": "call-7"})));
    assert_eq!(
        *progress.lock().unwrap(),
        [(0.0, Some(1.0), Some("counting".into())), (1.0, Some(1.0), None)]
    );
    assert!(logs.has("tool-js", "log", "js_text_stats: 7 words (call call-7)"));

    let cancelled = plugin
        .execute(
            "js_text_stats",
            &text,
            "call-8".into(),
            Arc::new(AtomicBool::new(true)),
            None,
        )
        .await
        .unwrap();
    assert!(matches!(cancelled, Err(ToolError::Cancelled)), "{cancelled:?}");
    let invalid = plugin
        .execute(
            "js_text_stats",
            &args(json!({"text": 5})),
            "call-9".into(),
            Arc::new(AtomicBool::new(false)),
            None,
        )
        .await
        .unwrap();
    assert!(
        matches!(&invalid, Err(ToolError::InvalidArgs(m)) if m == "text: expected a string"),
        "{invalid:?}"
    );

    assert!(
        plugin
            .after_call("js_text_stats", &result, false)
            .await
            .unwrap()
            .is_none()
    );
    let empty = plugin
        .execute(
            "js_text_stats",
            &args(json!({"text": "!!"})),
            "c".into(),
            Arc::new(AtomicBool::new(false)),
            None,
        )
        .await
        .unwrap()
        .unwrap();
    let over = plugin
        .after_call("js_text_stats", &empty, false)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(over.is_error, Some(true), "no words is an error for the model");

    let call = plugin
        .render_call("js_text_stats", &json!({"text": "hello   world"}), 80)
        .await
        .unwrap();
    assert_eq!(call.as_deref(), Some(r#"text stats: "hello world""#));
    let short = plugin
        .render_call("js_text_stats", &json!({"text": "hello world"}), 10)
        .await
        .unwrap();
    assert_eq!(short.as_deref(), Some("text stat…"));
    let opts = |expanded| RenderOptions {
        expanded,
        is_partial: false,
        is_error: false,
        width: 80,
    };
    let collapsed = plugin
        .render_result("js_text_stats", &result, opts(false))
        .await
        .unwrap();
    assert_eq!(collapsed.as_deref(), Some("7 words · 27 chars · 2 lines"));
    let expanded = plugin
        .render_result("js_text_stats", &result, opts(true))
        .await
        .unwrap();
    assert_eq!(
        expanded.as_deref(),
        Some("7 words · 27 chars · 2 lines\n  the: 3\n  and: 1")
    );
}
