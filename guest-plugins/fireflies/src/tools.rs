//! The Fireflies tools: the meeting-notes tools run against Fireflies'
//! GraphQL API (`POST {base_url}/graphql`). Meetings are Fireflies
//! transcripts; a meeting's `id` is what `get_meeting_transcript` takes.
//!
//! Lists are `transcripts(limit, skip, ...)`, at most 50 per request, walked
//! for larger limits. Fireflies filters by one participant; "attended by all
//! of these" is checked here, over at most [`MAX_SCAN`] meetings.

use provider_kit::api::{catalog_tool, optional, required, result, uint};
use toolhost_sdk::{CallContext, ToolDefinition, ToolError, ToolResult, Tools, Value, json};

use crate::Fireflies;

/// Fireflies' largest page.
const MAX_PAGE: u64 = 50;
/// Most meetings read to filter by several participants.
const MAX_SCAN: u64 = 500;

const LIST: &str = "query Transcripts($keyword: String, $scope: TranscriptsQueryScope, $fromDate: DateTime, \
                    $toDate: DateTime, $limit: Int, $skip: Int, $host_email: String, $participant_email: String) { \
                    transcripts(keyword: $keyword, scope: $scope, fromDate: $fromDate, toDate: $toDate, limit: $limit, \
                    skip: $skip, host_email: $host_email, participant_email: $participant_email) { \
                    id title dateString duration host_email organizer_email participants transcript_url \
                    summary { overview short_summary action_items keywords topics_discussed } } }";

impl Tools for Fireflies {
    fn tools(&self) -> Vec<ToolDefinition> {
        let t = |name, what| catalog_tool(name, "meeting_notes", what);
        vec![
            t(
                "get_meeting_notes",
                "Fireflies meetings with their summaries and action items, newest first.",
            ),
            t(
                "get_meeting_transcript",
                "A Fireflies meeting's transcript: timestamped sentences by speaker.",
            ),
            t(
                "search_meeting_notes",
                "Search Fireflies meetings by keyword in titles and what was said.",
            ),
        ]
    }

    fn execute(&self, tool: &str, args: Value, _ctx: &CallContext<'_>) -> Result<ToolResult, ToolError> {
        match tool {
            "get_meeting_notes" => self.meetings(tool, &args, None),
            "search_meeting_notes" => {
                let query = required(&args, "query")?;
                self.meetings(tool, &args, Some(query))
            }
            "get_meeting_transcript" => self.transcript(&args),
            other => Err(ToolError::NotFound(format!("Fireflies has no tool `{other}`"))),
        }
    }
}

/// A meeting as the list tools return it.
fn meeting(t: &Value) -> Value {
    json!({
        "id": t["id"],
        "title": t["title"],
        "date": t["dateString"],
        "duration_min": t["duration"],
        "host": t["host_email"].as_str().or(t["organizer_email"].as_str()),
        "participants": t["participants"],
        "summary": t["summary"]["overview"].as_str().or(t["summary"]["short_summary"].as_str()),
        "action_items": t["summary"]["action_items"],
        "keywords": t["summary"]["keywords"],
        "url": t["transcript_url"],
    })
}

fn emails(args: &Value) -> Result<Vec<String>, ToolError> {
    match args.get("participants") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(list)) => list
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_ascii_lowercase)
                    .ok_or_else(|| ToolError::InvalidArgs("`participants` must be a list of emails".into()))
            })
            .collect(),
        Some(_) => Err(ToolError::InvalidArgs(
            "`participants` must be a list of emails".into(),
        )),
    }
}

impl Fireflies {
    /// `transcripts` from `skip`, `count` of them, with `filters`.
    fn page(&self, tool: &str, filters: &Value, skip: u64, count: u64) -> Result<Vec<Value>, ToolError> {
        let mut variables = filters.clone();
        variables["limit"] = json!(count);
        variables["skip"] = json!(skip);
        let data = self.api.graphql(tool, "/graphql", LIST, variables)?;
        Ok(data["transcripts"].as_array().cloned().unwrap_or_default())
    }

    fn meetings(&self, tool: &str, args: &Value, keyword: Option<String>) -> Result<ToolResult, ToolError> {
        let (offset, limit) = (uint(args, "offset", 0)?, uint(args, "limit", 20)?.max(1));
        let people = emails(args)?;
        let mut filters = json!({});
        if let Some(keyword) = &keyword {
            filters["keyword"] = json!(keyword);
            filters["scope"] = json!("all");
        }
        for (arg, var) in [
            ("from_date", "fromDate"),
            ("to_date", "toDate"),
            ("host_email", "host_email"),
        ] {
            if let Some(v) = optional(args, arg) {
                filters[var] = json!(v);
            }
        }
        if let Some(first) = people.first() {
            filters["participant_email"] = json!(first);
        }
        // With one participant or none, Fireflies pages exactly from the
        // offset; with more, meetings are read from the start and filtered
        // here. One more than asked says whether more remain.
        let several = people.len() > 1;
        let attended = |t: &Value| {
            let there: Vec<String> = t["participants"]
                .as_array()
                .map(|l| {
                    l.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_ascii_lowercase)
                        .collect()
                })
                .unwrap_or_default();
            people.iter().all(|p| there.contains(p))
        };
        let need = if several { offset + limit + 1 } else { limit + 1 } as usize;
        let mut skip = if several { 0 } else { offset };
        let mut found: Vec<Value> = Vec::new();
        loop {
            let count = if several {
                MAX_PAGE
            } else {
                MAX_PAGE.min((need - found.len()) as u64)
            };
            let page = self.page(tool, &filters, skip, count)?;
            let got = page.len() as u64;
            skip += got;
            found.extend(page.into_iter().filter(|t| !several || attended(t)));
            if got < count || found.len() >= need || (several && skip >= MAX_SCAN) {
                break;
            }
        }
        if several {
            found = found.into_iter().skip(offset as usize).collect();
        }
        let more = found.len() as u64 > limit;
        let meetings: Vec<Value> = found.iter().take(limit as usize).map(meeting).collect();
        let what = keyword.map(|k| format!(" matching `{k}`")).unwrap_or_default();
        let summary = format!(
            "{} Fireflies meeting(s){what}{}",
            meetings.len(),
            if more { " (more: raise offset)" } else { "" }
        );
        Ok(result(summary, json!({"meetings": meetings, "has_more": more})))
    }

    fn transcript(&self, args: &Value) -> Result<ToolResult, ToolError> {
        let tool = "get_meeting_transcript";
        let id = required(args, "meeting_id")?;
        let query = "query Transcript($id: String!) { transcript(id: $id) { id title dateString duration \
                     speakers { id name } sentences { index speaker_name text start_time end_time } } }";
        let data = self.api.graphql(tool, "/graphql", query, json!({"id": id}))?;
        let t = &data["transcript"];
        if t.is_null() {
            return Err(ToolError::NotFound(format!(
                "Fireflies {tool}: no meeting `{id}`"
            )));
        }
        let sentences: Vec<Value> = t["sentences"]
            .as_array()
            .map(|l| {
                l.iter()
                    .map(|s| json!({"index": s["index"], "speaker": s["speaker_name"], "text": s["text"], "start_s": s["start_time"], "end_s": s["end_time"]}))
                    .collect()
            })
            .unwrap_or_default();
        let speakers: Vec<Value> = t["speakers"]
            .as_array()
            .map(|l| l.iter().map(|s| s["name"].clone()).collect())
            .unwrap_or_default();
        let summary = format!(
            "{}: {} sentence(s) by {} speaker(s)",
            t["title"].as_str().unwrap_or(&id),
            sentences.len(),
            speakers.len()
        );
        Ok(result(
            summary,
            json!({"meeting_id": id, "title": t["title"], "date": t["dateString"], "speakers": speakers, "sentences": sentences}),
        ))
    }
}
