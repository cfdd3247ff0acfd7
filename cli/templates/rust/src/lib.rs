//! {{name}}: a toolhost enricher plugin (Rust, on the `toolhost-sdk` crate).
//! Build with `make`; check with `toolhost check {{name}}.wasm`. The SDK
//! carries the contract (`toolhost:plugin@0.2.0`); its docs list what an
//! enricher or a tool plugin may implement.

use toolhost_sdk::{Enricher, Plugin, Schema, Value, log};

struct {{Type}};

impl Plugin for {{Type}} {
    fn new(_config: &Value) -> Result<Self, String> {
        Ok({{Type}})
    }
}

impl Enricher for {{Type}} {
    fn supported_categories(&self) -> Vec<String> {
        log::info("{{name}}: loaded");
        vec!["issue_tracker".into()]
    }

    /// A refused edit, passed on with `?`, undoes this plugin's changes to
    /// the tool; the host logs it under the plugin's name.
    fn enrich_schema(&self, tool: &str, schema: &mut Schema<'_>) -> Result<(), String> {
        if tool == "create_issue" {
            schema.add_enum_param("label", "Issue label", ["bug", "feature"])?;
        }
        Ok(())
    }

    /// This plugin maps no arguments back, so the host never enters it for
    /// a call. Say `true` for the tools whose `transform_args` you write.
    fn transforms_args(&self, _tool: &str) -> bool {
        false
    }
}

toolhost_sdk::export_enricher!({{Type}});
