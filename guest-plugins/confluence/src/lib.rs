//! Confluence enricher: claims the knowledge-base category and carries the
//! value models of its tools. It changes no schema and no argument.
//!
//! Search and list results project each page's `id` into the `pageId`
//! argument of `get_knowledge_base_page`; page writes mutate Confluence and
//! make cached pages, lists and searches stale.
//!
//! The same component runs the tools (`tools`) against Confluence Cloud's
//! REST API v2 (and v1's CQL search, which v2 lacks) on the site named by
//! `base_url` (`https://acme.atlassian.net`); the site's host is the
//! rate-limit host. Without `base_url` the value models still load and the
//! tools say what is missing.

mod tools;

use provider_kit::api::{self, Api};
use provider_kit::{field, items, project, write_model};
use toolhost_sdk::{Args, Enricher, FollowUpLink, Plugin, Value, ValueModel};

struct Confluence {
    api: Option<Api>,
    host: Option<String>,
}

impl Plugin for Confluence {
    fn new(config: &Value) -> Result<Self, String> {
        if let Some(unknown) = config
            .as_object()
            .and_then(|c| c.keys().find(|k| k.as_str() != "base_url"))
        {
            return Err(format!(
                "Confluence: unknown config key `{unknown}` (it takes `base_url`)"
            ));
        }
        let base = match config.get("base_url") {
            Some(_) => Some(api::base_url("Confluence", config, "")?),
            None => None,
        };
        Ok(Confluence {
            host: base.as_deref().map(api::host_of),
            api: base.map(|base| Api {
                provider: "Confluence",
                base,
                secret: "confluence",
                needs: "an API token of a user who may view (and, to write, edit) the space: the secret \
                        holds base64(email:api_token) after the `Basic ` prefix",
                headers: vec![("accept".into(), "application/json".into())],
            }),
        })
    }
}

impl Enricher for Confluence {
    fn supported_categories(&self) -> Vec<String> {
        vec!["knowledge_base".into()]
    }

    // Only value models: the catalog's arguments are taken as they are.
    fn transforms_args(&self, _tool: &str) -> bool {
        false
    }

    fn value_model(&self, tool: &str) -> Option<ValueModel> {
        let page = |p: f32| FollowUpLink::new("get_knowledge_base_page", p).projecting("id", "pageId");
        let model = match tool {
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
            "create_knowledge_base_page" | "update_knowledge_base_page" => write_model()
                .critical()
                .invalidates("get_knowledge_base_page")
                .invalidates("list_knowledge_base_pages")
                .invalidates("search_knowledge_base"),
            _ => return None,
        };
        Some(match &self.host {
            Some(host) => model.rate_limit_host(host.clone()),
            None => model,
        })
    }

    fn project_args(&self, prev_tool: &str, prev_result: &Value, link: &FollowUpLink) -> Option<Vec<Value>> {
        let from_list = matches!(prev_tool, "search_knowledge_base" | "list_knowledge_base_pages");
        (from_list && link.tool == "get_knowledge_base_page").then(|| {
            let list = items(prev_result, &["pages", "results", "items"]);
            project(list, "pageId", |i| field(i, "id").or_else(|| field(i, "pageId")))
        })
    }

    fn rate_limit_host(&self, _tool: &str, _args: &Args<'_>) -> Option<String> {
        self.host.clone()
    }
}

toolhost_sdk::export_plugin!(Confluence);
