//! Property tests of sidecar manifests, alone and with `[plugin.NAME]`
//! settings laid over them: nothing panics; a refused file is named, and a
//! mistake in the file itself names its line; an accepted manifest
//! resolves its limits (or refuses them with the key) and hands the plugin
//! its `config` as JSON.

use proptest::prelude::*;

use super::*;
use crate::fuzzing::{config, toml_text};

const HEADERS: &[&str] = &[
    "[limits]",
    "[failure]",
    "[grants]",
    "[grants.secrets.t]",
    "[grants.secrets.u]",
    "[config]",
    "[config.nested]",
    "[limits.deep]",
    "[[grants]]",
    "[",
    "",
];

const KEYS: &[&str] = &[
    "order",
    "enabled",
    "memory_mb",
    "cpu_ms",
    "wall_ms",
    "max_output_kb",
    "quarantine_after",
    "backoff_ms",
    "max_backoff_ms",
    "instances",
    "max_uses",
    "max_requests_per_call",
    "max_requests_in_flight",
    "enrich_schema",
    "transform_args",
    "before_call",
    "http",
    "secrets",
    "env",
    "header",
    "prefix",
    "hosts",
    "limits",
    "memroy_mb",
    "role",
    "x",
];

const WORDS: &[&str] = &[
    "\"fresh\"",
    "\"reuse\"",
    "\"open\"",
    "\"closed\"",
    "[\"a.example\"]",
    "[\"a.example\", \"b.example\"]",
    "\"T\"",
    "\"Authorization\"",
    "\"Bearer \"",
    "{ memory_mb = 2 }",
    "{ env = \"T\", header = \"Authorization\", hosts = [\"a.example\"] }",
];

proptest! {
    #![proptest_config(config(768))]

    #[test]
    fn manifests_are_refused_by_name_or_resolve(
        text in toml_text(HEADERS, KEYS, WORDS),
        overlay in prop::option::of(toml_text(HEADERS, KEYS, WORDS)),
        component_bytes in prop_oneof![Just(1000usize), Just(HEAVY_COMPONENT_BYTES + 1)],
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fuzzed.toml");
        std::fs::write(&path, &text).unwrap();
        // An overlay is checked on its own first, as `toolhost.toml` does.
        let overlay = overlay
            .and_then(|text| toml::from_str::<toml::Table>(&text).ok())
            .filter(|table| Manifest::check_overlay(table).is_ok());
        let file = Path::new("toolhost.toml");
        let overlay = overlay.as_ref().map(|table| Overlay { file, table });
        match Manifest::read(&path, overlay) {
            Ok(manifest) => {
                let _ = manifest.limits.resolve(component_bytes);
                let config: serde_json::Value = serde_json::from_str(&manifest.config_json()).unwrap();
                prop_assert!(config.is_object());
            }
            Err(message) => {
                prop_assert!(message.contains(&path.display().to_string()), "{}", message);
                if toml::from_str::<Manifest>(&text).is_err() {
                    prop_assert!(message.contains("line "), "{}", message);
                }
            }
        }
    }
}
