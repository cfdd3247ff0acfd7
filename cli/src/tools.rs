//! `toolhost tools`: the tools `serve` serves, as the loaded plugins enrich
//! them; `--all` adds the hidden ones with why; `--explain NAME` shows one
//! tool's provenance, value model and the follow-up links learned.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use serde_json::json;
use toolhost::Toolhost;
use toolhost::ValueModels;
use toolhost::catalog::base_tool;
use toolhost::enrich::{EnrichedTool, Enrichers, Listing, Owner};
use toolhost::plugin::Runtime;

use crate::config::Config;
use crate::{exit_for, setup};

pub async fn run(
    runtime: &Runtime,
    config: &Config,
    plugin_dir: Option<&Path>,
    json: bool,
    all: bool,
    explain: Option<&str>,
) -> Result<ExitCode> {
    let (host, errors) = setup::build(runtime, config, plugin_dir, None).await?;
    for error in &errors {
        eprintln!("error: {error}");
    }
    let listing = host.list_tools();
    let shown = match explain {
        Some(name) => explain_cmd(&host, config, &listing, name).await,
        None => print_tools(&listing, json, all),
    };
    host.shutdown().await;
    shown?;
    Ok(exit_for(&errors))
}

fn print_tools(listing: &Listing, as_json: bool, all: bool) -> Result<()> {
    let mut out = crate::output::stdout();
    if as_json {
        let tools: Vec<_> = listing
            .tools
            .iter()
            .map(|t| {
                json!({"name": t.name, "title": t.meta.title, "description": t.schema.description(),
                       "category": t.category, "inputSchema": t.schema.to_value(),
                       "outputSchema": t.meta.output_schema, "annotations": t.meta.annotations,
                       "changes": t.changes.len(), "conflicts": t.conflicts})
            })
            .collect();
        writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&json!({"tools": tools, "hidden": listing.hidden}))?
        )?;
        return Ok(());
    }
    for t in &listing.tools {
        let params = t.schema.property_names().join(", ");
        let note = if t.conflicts.is_empty() {
            String::new()
        } else {
            format!("  [{} conflicts]", t.conflicts.len())
        };
        writeln!(
            out,
            "{:<34} {:<16} {}{}",
            t.name,
            t.category.as_deref().unwrap_or("-"),
            params,
            note
        )?;
    }
    if all {
        for h in &listing.hidden {
            writeln!(out, "hidden: {}: {}", h.name, h.reason)?;
        }
    }
    match listing.hidden.len() {
        0 => writeln!(out, "{} tools", listing.tools.len())?,
        n if all => writeln!(out, "{} tools, {n} hidden", listing.tools.len())?,
        n => writeln!(out, "{} tools ({n} hidden: --all shows why)", listing.tools.len())?,
    }
    Ok(())
}

/// `tools --explain NAME`: a served tool's provenance and value model; for
/// one not served, why, and (a base-catalog tool) what the loaded
/// enrichers would make of it.
async fn explain_cmd(host: &Toolhost, config: &Config, listing: &Listing, name: &str) -> Result<()> {
    if let Some(tool) = listing.tools.iter().find(|t| t.name == name) {
        let models = host.value_models();
        explain_tool(tool, &models)?;
        explain_learned(config, name)?;
        return explain_refusals(host, name);
    }
    let Some(hidden) = listing.hidden.iter().find(|h| h.name == name) else {
        anyhow::bail!(
            "tool `{name}` is unknown: no source provides it and the base catalog has none of that name"
        );
    };
    crate::say!("{name}: not served: {}", hidden.reason)?;
    explain_refusals(host, name)?;
    let Some(spec) = base_tool(name) else {
        return Ok(());
    };
    let enrichers = Enrichers::new(&host.plugins().await);
    match enrichers.enrich(spec).await {
        Ok(tool) => {
            let mut models = enrichers.value_models([(spec, &Owner::Host)]).await;
            config.apply_value_models(&mut models)?;
            explain_tool(&tool, &models)
        }
        Err(reason) => {
            crate::say!("its enrichment fails: {reason}")?;
            Ok(())
        }
    }
}

/// The follow-up links learned from and to `name`, as the last `toolhost
/// serve` recorded them in its statistics file (the declared ones are in
/// the value model above).
fn explain_learned(config: &Config, name: &str) -> Result<()> {
    let mut out = crate::output::stdout();
    let Some(path) = config.stats_file() else {
        return Ok(());
    };
    let recorded = match crate::stats::read(&path) {
        Ok(recorded) => recorded,
        Err(e) => {
            writeln!(out, "links learned: none read ({e})")?;
            return Ok(());
        }
    };
    let links: Vec<_> = recorded
        .stats
        .learned
        .iter()
        .filter(|l| l.from == name || l.to == name)
        .collect();
    if links.is_empty() {
        writeln!(out, "links learned: none yet ({})", path.display())?;
    } else {
        writeln!(out, "links learned ({}; seen, planned):", path.display())?;
    }
    for l in links {
        writeln!(
            out,
            "  {} -> {} [{}]: {}, {}",
            l.from, l.to, l.projection, l.seen, l.planned
        )?;
    }
    Ok(())
}

/// The sources that listed `name` too and were refused it, each in full
/// (`serve` and the other commands sum them up per source).
fn explain_refusals(host: &Toolhost, name: &str) -> Result<()> {
    let mut out = crate::output::stdout();
    for refusal in host.refusals().iter().filter(|r| r.tool == name) {
        writeln!(out, "not offered: {refusal}")?;
    }
    Ok(())
}

fn explain_tool(tool: &EnrichedTool, models: &ValueModels) -> Result<()> {
    let name = tool.name.as_str();
    let mut out = crate::output::stdout();
    writeln!(
        out,
        "{} ({})",
        tool.name,
        tool.category.as_deref().unwrap_or("no category")
    )?;
    writeln!(out, "  {}", tool.schema.description())?;
    writeln!(out, "changes:")?;
    if tool.changes.is_empty() {
        writeln!(out, "  none")?;
    }
    for c in &tool.changes {
        let target = c
            .property
            .as_deref()
            .map_or("(tool description)".to_owned(), |p| format!("`{p}`"));
        writeln!(
            out,
            "  {:<20} {:<16} {}",
            c.plugin,
            format!("{:?}", c.action).to_lowercase(),
            target
        )?;
    }
    for c in &tool.conflicts {
        let names: Vec<&str> = c.plugins.iter().map(|p| &**p).collect();
        writeln!(
            out,
            "conflict: {} changed by {} (last wins)",
            c.property.as_deref().unwrap_or("(tool description)"),
            names.join(" then ")
        )?;
    }
    for skipped in &tool.skipped {
        writeln!(out, "skipped: {skipped}")?;
    }
    writeln!(
        out,
        "schema:\n{}",
        serde_json::to_string_pretty(&tool.schema.to_value())?
    )?;
    if let Some(model) = models.get(name) {
        let layers: Vec<String> = models.layers(name).iter().map(|l| format!("{l:?}")).collect();
        writeln!(
            out,
            "value model ({}):\n{}",
            layers.join(" < "),
            serde_json::to_string_pretty(model)?
        )?;
    }
    for refusal in models.refused().iter().filter(|r| r.tool == name) {
        writeln!(out, "refused: {refusal}")?;
    }
    Ok(())
}
