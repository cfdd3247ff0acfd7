//! FormatPipeline enricher: gives the list/read tools of the issue tracker,
//! git repository and knowledge base categories three parameters of the
//! format pipeline (the reference's `FormatPipelineEnricher`):
//!
//! - `format`: `toon` | `json` | `mckp`, how the response is encoded;
//! - `budget`: integer 100–100000, the token budget of the response;
//! - `chunk`: integer ≥ 1, which chunk of a chunked response to return.
//!
//! Each is added under the first free name of `format`, `_format`,
//! `__format`, ... so a provider parameter of the same name is never
//! replaced. It deliberately adds no `limit`/`offset` (paging belongs to the
//! provider's own schema). `transform_args` is the default no-op: the
//! handler reads the parameters directly. No value model.
//!
//! Configuration: none (any `config` table is accepted and ignored).

use toolhost_sdk::{Enricher, Plugin, Schema, Value, json, log};

/// The list/read tools the format pipeline applies to.
const TOOLS: &[&str] = &[
    "get_issues",
    "get_issue",
    "get_issue_comments",
    "get_merge_requests",
    "get_merge_request",
    "get_merge_request_discussions",
    "get_merge_request_diffs",
    "get_knowledge_base_spaces",
    "list_knowledge_base_pages",
    "get_knowledge_base_page",
    "search_knowledge_base",
];

struct FormatPipeline;

impl Plugin for FormatPipeline {
    fn new(_config: &Value) -> Result<Self, String> {
        Ok(FormatPipeline)
    }
}

impl Enricher for FormatPipeline {
    fn supported_categories(&self) -> Vec<String> {
        ["issue_tracker", "git_repository", "knowledge_base"]
            .map(String::from)
            .to_vec()
    }

    fn enrich_schema(&self, tool: &str, schema: &mut Schema<'_>) -> Result<(), String> {
        if !TOOLS.contains(&tool) {
            return Ok(());
        }
        let params = [
            (
                "format",
                json!({
                    "type": "string",
                    "enum": ["toon", "json", "mckp"],
                    "description": "Response format: toon (compact, token-efficient text), json (raw JSON) \
                                    or mckp (fields chosen to fit the token budget).",
                }),
            ),
            (
                "budget",
                json!({
                    "type": "integer",
                    "minimum": 100,
                    "maximum": 100000,
                    "description": "Token budget for the response; larger results are trimmed or chunked.",
                }),
            ),
            (
                "chunk",
                json!({
                    "type": "integer",
                    "minimum": 1,
                    "description": "Chunk index to navigate when a previous response was split into chunks.",
                }),
            ),
        ];
        for (name, property) in params {
            let used = schema
                .add_property_unique(name, &property)
                .map_err(|e| format!("could not add `{name}`: {e}"))?;
            if used != name {
                log::debug(&format!("{tool}: `{name}` exists, added as `{used}`"));
            }
        }
        Ok(())
    }

    // The host reads `format`, `budget` and `chunk` itself; nothing to map.
    fn transforms_args(&self, _tool: &str) -> bool {
        false
    }
}

toolhost_sdk::export_enricher!(FormatPipeline);
