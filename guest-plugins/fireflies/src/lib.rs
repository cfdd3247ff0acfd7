//! Fireflies enricher: claims the meeting-notes category and carries the
//! value models of its tools. It changes no schema and no argument.
//!
//! Meeting lists and notes lead to a transcript: each meeting's `id` is
//! projected into `get_meeting_transcript`'s `meeting_id`. Transcripts are
//! large but stay valid a while, so they are worth fetching ahead. Every call
//! goes to the configured API (`base_url`, by default
//! `https://api.fireflies.ai`), whose host is the rate-limit host.
//!
//! The same component runs the tools (`tools`), against Fireflies' GraphQL
//! API. Config: `base_url` only.

mod tools;

use provider_kit::api::{self, Api};
use provider_kit::{field, items, project};
use toolhost_sdk::{Args, Enricher, FollowUpLink, Plugin, Value, ValueModel};

const PUBLIC_API: &str = "https://api.fireflies.ai";

struct Fireflies {
    api: Api,
    /// The API's host, for per-host prefetch caps.
    host: String,
}

impl Plugin for Fireflies {
    fn new(config: &Value) -> Result<Self, String> {
        if let Some(other) = config
            .as_object()
            .and_then(|m| m.keys().find(|k| *k != "base_url"))
        {
            return Err(format!("Fireflies: unknown config `{other}` (only `base_url`)"));
        }
        let base = api::base_url("Fireflies", config, PUBLIC_API)?;
        Ok(Fireflies {
            host: api::host_of(&base),
            api: Api {
                provider: "Fireflies",
                base,
                secret: "fireflies",
                needs: "an API key (Settings → Developer settings), sent as `Authorization: Bearer <key>`",
                headers: Vec::new(),
            },
        })
    }
}

impl Enricher for Fireflies {
    fn supported_categories(&self) -> Vec<String> {
        vec!["meeting_notes".into()]
    }

    // Only value models: the catalog's arguments are taken as they are.
    fn transforms_args(&self, _tool: &str) -> bool {
        false
    }

    fn value_model(&self, tool: &str) -> Option<ValueModel> {
        let read = || ValueModel::read_only().rate_limit_host(&self.host);
        Some(match tool {
            "get_meeting_notes" | "search_meeting_notes" => {
                read().supporting().typical_kb(3.0).ttl_s(300).follow_up(
                    FollowUpLink::new("get_meeting_transcript", 0.55).projecting("id", "meeting_id"),
                )
            }
            "get_meeting_transcript" => read()
                .critical()
                .typical_kb(8.0)
                .max_kb(50.0)
                .latency_ms_p50(900)
                .ttl_s(600),
            _ => return None,
        })
    }

    fn project_args(&self, prev_tool: &str, prev_result: &Value, link: &FollowUpLink) -> Option<Vec<Value>> {
        let from_list = matches!(prev_tool, "get_meeting_notes" | "search_meeting_notes");
        (from_list && link.tool == "get_meeting_transcript").then(|| {
            let list = items(prev_result, &["meetings", "transcripts", "notes", "items"]);
            project(list, "meeting_id", |i| {
                field(i, "id").or_else(|| field(i, "meeting_id"))
            })
        })
    }

    fn rate_limit_host(&self, _tool: &str, _args: &Args<'_>) -> Option<String> {
        Some(self.host.clone())
    }
}

toolhost_sdk::export_plugin!(Fireflies);
