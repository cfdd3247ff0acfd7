//! `fixture_remap`'s transform (guest-plugins/fixtures/remap) as an Extism
//! plug-in: Extism hands a plug-in bytes, so the arguments arrive as JSON,
//! are remapped (`priority` to `priorityId`, `assignee` to `assigneeId`)
//! and go back as JSON. The bench's peer (`bench/peers/extism`) times it.

use extism_pdk::{FnResult, plugin_fn};
use serde_json::{Map, Value, json};

fn priority_id(name: &str) -> u64 {
    match name {
        "urgent" => 1,
        "high" => 2,
        "low" => 4,
        _ => 3,
    }
}

#[plugin_fn]
pub fn transform_args(input: Vec<u8>) -> FnResult<Vec<u8>> {
    let mut args: Map<String, Value> = serde_json::from_slice(&input)?;
    if let Some(Value::String(name)) = args.shift_remove("priority") {
        args.insert("priorityId".into(), json!(priority_id(&name)));
    }
    if let Some(Value::String(user)) = args.shift_remove("assignee") {
        args.insert("assigneeId".into(), json!(format!("user:{user}")));
    }
    Ok(serde_json::to_vec(&args)?)
}
