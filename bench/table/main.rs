//! `make bench`'s last step: one table of every target the benches hold
//! toolhost to, each figure beside its baseline from the same run and their
//! ratio. The benches write their targets as JSON into `build/bench`
//! (`plugins.json` by the plugins bench, `front.json` by `front --json`,
//! `extism.json` by the Extism peer); this reads whichever are there.
//!
//! `cargo run -p toolhost-bench --bin table -- [DIR]`

use std::path::PathBuf;

use anyhow::{Context, Result};
use serde_json::{Value, json};

fn read(dir: &std::path::Path, name: &str) -> Result<Option<Value>> {
    let path = dir.join(name);
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok(Some(
            serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?,
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// The targets of one bench's file.
fn targets(file: Option<&Value>) -> Vec<Value> {
    file.and_then(|f| f["targets"].as_array())
        .cloned()
        .unwrap_or_default()
}

/// toolhost's transform against Extism's: the plugins bench's figure and
/// the peer's, each with its own native baseline from its run.
fn peer(plugins: Option<&Value>, extism: Option<&Value>) -> Vec<Value> {
    let (Some(plugins), Some(extism)) = (plugins, extism) else {
        return Vec::new();
    };
    let toolhost = targets(Some(plugins))
        .into_iter()
        .find(|t| t["what"] == "transform_args on a reused instance");
    let (Some(toolhost), Some(extism_ns), Some(native_ns)) = (
        toolhost.and_then(|t| t["measured"].as_f64()),
        extism["extism_ns"].as_f64(),
        extism["native_ns"].as_f64(),
    ) else {
        return Vec::new();
    };
    let extism_us = extism_ns / 1e3;
    vec![
        json!({
            "what": "transform_args in Extism, reused plug-in",
            "measured": extism_us, "unit": "µs",
            "baseline_what": "the same transform natively (its run)", "baseline": native_ns / 1e3,
            "ratio": extism_ns / native_ns, "target": "", "met": true,
        }),
        json!({
            "what": "Extism over toolhost, the same transform",
            "measured": extism_us, "unit": "µs",
            "baseline_what": "toolhost, reused instance", "baseline": toolhost,
            "ratio": extism_us / toolhost, "target": "ratio >= 10", "met": extism_us / toolhost >= 10.0,
        }),
    ]
}

fn main() -> Result<()> {
    let dir = std::env::args_os().nth(1).map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../build/bench"),
        PathBuf::from,
    );
    let plugins = read(&dir, "plugins.json")?;
    let extism = read(&dir, "extism.json")?;
    let front = read(&dir, "front.json")?;
    let mut rows = targets(plugins.as_ref());
    rows.extend(peer(plugins.as_ref(), extism.as_ref()));
    rows.extend(targets(front.as_ref()));
    if rows.is_empty() {
        anyhow::bail!("no bench wrote its targets into {}", dir.display());
    }
    println!(
        "{:<52} {:>11} {:<8} {:>11}  {:<38} {:>7}  {:<22}",
        "target", "figure", "unit", "baseline", "baseline is", "ratio", "bound"
    );
    for row in &rows {
        let number = |key: &str| row[key].as_f64().unwrap_or(f64::NAN);
        let text = |key: &str| row[key].as_str().unwrap_or_default().to_owned();
        let verdict = match (text("target").is_empty(), row["met"].as_bool()) {
            (true, _) => "",
            (false, Some(true)) => "met",
            (false, _) => "MISSED",
        };
        println!(
            "{:<52} {:>11.2} {:<8} {:>11.2}  {:<38} {:>6.2}x  {:<22} {verdict}",
            text("what"),
            number("measured"),
            text("unit"),
            number("baseline"),
            text("baseline_what"),
            number("ratio"),
            text("target"),
        );
    }
    Ok(())
}
