//! {{name}}: a toolhost enricher plugin (Rust). Build with `make`; check with
//! `toolhost check {{name}}.wasm`. The contract is in `wit/`; inside the
//! toolhost repository, the `toolhost-sdk` crate offers a richer API.

wit_bindgen::generate!({ world: "enricher-plugin", path: "wit" });

use exports::toolhost::plugin::enricher::Guest;
use toolhost::plugin::host::{LogLevel, log};
use toolhost::plugin::types::{ToolArgs, ToolSchema};
use toolhost::plugin::value_model_types::{FollowUpLink, ToolValueModel};

struct Plugin;

impl Guest for Plugin {
    fn supported_categories() -> Result<Vec<String>, String> {
        log(LogLevel::Info, "{{name}}: loaded");
        Ok(vec!["issue_tracker".into()])
    }

    fn enrich_schema(tool: String, schema: &ToolSchema) {
        if tool == "create_issue"
            && let Err(e) = schema.add_enum_param("label", "Issue label", &["bug".into(), "feature".into()])
        {
            log(LogLevel::Error, &format!("{{name}}: {e:?}"));
        }
    }

    fn transform_args(_tool: String, _args: &ToolArgs) -> Result<(), String> {
        Ok(())
    }

    fn value_model(_tool: String) -> Option<ToolValueModel> {
        None
    }

    fn project_args(_prev_tool: String, _prev_result: String, _link: FollowUpLink) -> Option<Vec<String>> {
        None
    }

    fn rate_limit_host(_tool: String, _args: &ToolArgs) -> Option<String> {
        None
    }
}

export!(Plugin);
