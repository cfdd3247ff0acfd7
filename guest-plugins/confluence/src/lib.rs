//! Confluence enricher: claims the knowledge-base category and carries the
//! value models of its tools. It changes no schema and no argument.
//!
//! Search and list results project each page's `id` into the `pageId`
//! argument of `get_knowledge_base_page`; page writes mutate Confluence and
//! make cached pages stale.

use provider_kit::{field, items, project, write_model};
use toolhost_sdk::{Enricher, FollowUpLink, Plugin, Value, ValueModel};

struct Confluence;

impl Plugin for Confluence {
    fn new(_config: &Value) -> Result<Self, String> {
        Ok(Confluence)
    }
}

impl Enricher for Confluence {
    fn supported_categories(&self) -> Vec<String> {
        vec!["knowledge_base".into()]
    }

    fn value_model(&self, tool: &str) -> Option<ValueModel> {
        let page = |p: f32| FollowUpLink::new("get_knowledge_base_page", p).projecting("id", "pageId");
        Some(match tool {
            "search_knowledge_base" => ValueModel::read_only()
                .supporting()
                .typical_kb(4.0)
                .max_kb(40.0)
                .ttl_s(60)
                .follow_up(page(0.55)),
            "list_knowledge_base_pages" => ValueModel::read_only()
                .supporting()
                .typical_kb(3.0)
                .max_kb(30.0)
                .follow_up(page(0.50)),
            "get_knowledge_base_page" => ValueModel::read_only()
                .critical()
                .typical_kb(8.0)
                .max_kb(80.0)
                .ttl_s(300),
            "get_knowledge_base_spaces" => ValueModel::read_only()
                .supporting()
                .typical_kb(1.5)
                .max_kb(15.0)
                .ttl_s(1800),
            "create_knowledge_base_page" | "update_knowledge_base_page" => {
                write_model().critical().invalidates("get_knowledge_base_page")
            }
            _ => return None,
        })
    }

    fn project_args(&self, prev_tool: &str, prev_result: &Value, link: &FollowUpLink) -> Option<Vec<Value>> {
        let from_list = matches!(prev_tool, "search_knowledge_base" | "list_knowledge_base_pages");
        (from_list && link.tool == "get_knowledge_base_page").then(|| {
            let list = items(prev_result, &["pages", "results", "items"]);
            project(list, "pageId", |i| field(i, "id").or_else(|| field(i, "pageId")))
        })
    }
}

toolhost_sdk::export_enricher!(Confluence);
