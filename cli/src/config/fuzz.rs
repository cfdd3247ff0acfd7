//! Property tests of `toolhost.toml`: whatever the file holds, nothing
//! panics; a refused file is named, with the line of the mistake; an
//! accepted one gives its settings (value models layered or refused by
//! tool) and never shows an upstream's header values in its debug form.

use proptest::prelude::*;

use super::*;
use toolhost::fuzzing::{config, toml_text};

const HEADERS: &[&str] = &[
    "[web]",
    "[speculation]",
    "[[upstream]]",
    "[bind]",
    "[tools.read]",
    "[tools.create_issue]",
    "[tools.x.cost]",
    "[plugin.p]",
    "[plugin.p.limits]",
    "[plugin.p.config]",
    "[plugin.p.grants]",
    "[upstream]",
    "[",
    "",
];

const KEYS: &[&str] = &[
    "plugins",
    "cache",
    "root",
    "writable",
    "allowed_hosts",
    "max_bytes",
    "timeout_s",
    "name",
    "command",
    "args",
    "url",
    "headers",
    "category",
    "prefix",
    "speculate",
    "connect_timeout_s",
    "call_timeout_s",
    "relay_timeout_s",
    "max_message_kb",
    "enabled",
    "native",
    "reread_changed",
    "hosts",
    "probability_floor",
    "max_in_flight",
    "per_host",
    "timeout_ms",
    "cache_mb",
    "default_ttl_s",
    "stats_file",
    "side_effect",
    "cost",
    "freshness_ttl_s",
    "order",
    "memory_mb",
    "http",
    "create_issue",
    "follow_ups",
    "categroy",
];

const WORDS: &[&str] = &[
    "\"p\"",
    "\"npx\"",
    "\"http://127.0.0.1:9/mcp\"",
    "\"https://a.example/mcp\"",
    "\"ftp://a/mcp\"",
    "\"not a url\"",
    "{ Authorization = \"Bearer s3cret\" }",
    "{ \"a b\" = \"s3cret\" }",
    "{ A = \"s3cret\\n\" }",
    "\"pure\"",
    "\"read-only\"",
    "\"mutates-external\"",
    "{ freshness_ttl_s = 5 }",
    "[\"x\"]",
    "[\"*.python.org\"]",
    "\"everything\"",
    "[{ tool = \"read\", probability = 2.0 }]",
];

proptest! {
    #![proptest_config(config(768))]

    #[test]
    fn configurations_are_refused_by_file_and_line_or_accepted_whole(text in toml_text(HEADERS, KEYS, WORDS)) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("toolhost.toml");
        std::fs::write(&path, &text).unwrap();
        match Config::read(&path) {
            Ok(mut config) => {
                // A plugin's `config` table is its own data, handed over whole;
                // secrets reach a plugin only through its grants. Everything
                // else that holds a header value must not show it.
                let plugins = std::mem::take(&mut config.plugin);
                prop_assert!(!format!("{config:?}").contains("s3cret"), "a header value in {:?}", config);
                config.plugin = plugins;
                let mut models = toolhost::internals::native_value_models();
                if let Err(e) = config.apply_value_models(&mut models) {
                    let message = e.to_string();
                    prop_assert!(config.tools.keys().any(|tool| message.contains(tool.as_str())), "{}", message);
                }
                let _ = (config.plugin_settings(), config.stats_file(), config.cache_dir());
            }
            Err(e) => {
                let message = e.to_string();
                prop_assert!(message.contains(&path.display().to_string()), "{}", message);
                prop_assert!(message.contains("line "), "{}", message);
            }
        }
    }
}
