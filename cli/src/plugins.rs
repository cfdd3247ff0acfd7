//! `toolhost plugins`: the plugins of the directory in registration order,
//! with their worlds, categories, tools, limits and status, and what was
//! refused or disabled.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use serde_json::json;
use toolhost::ownership::{self, Refusal};
use toolhost::plugin::{LoadReport, Runtime};

use crate::config::Config;
use crate::exit_for;

pub async fn run(
    runtime: &Runtime,
    config: &Config,
    plugin_dir: Option<&Path>,
    json: bool,
) -> Result<ExitCode> {
    let report = match &plugin_dir {
        Some(dir) => load(runtime, config, dir).await?,
        None => {
            eprintln!(
                "no plugin directory: pass --plugins DIR, set `plugins` in toolhost.toml or create ./plugins"
            );
            LoadReport::default()
        }
    };
    let unused = match plugin_dir {
        Some(_) => Vec::new(),
        None => config.plugin_settings_unused(),
    };
    for line in &unused {
        eprintln!("error: {line}");
    }
    // Reported as `serve`, `call` and `tools` report them.
    let refused = ownership::plugin_refusals(&report.plugins, &config.bind);
    for line in ownership::summary(&refused) {
        eprintln!("error: {line}");
    }
    print_plugins(plugin_dir, &report, &refused, json)?;
    Ok(match (refused.is_empty(), unused.is_empty()) {
        (false, _) => exit_for(&refused),
        (true, false) => exit_for(&unused),
        (true, true) => exit_for(&report.errors),
    })
}

async fn load(runtime: &Runtime, config: &Config, dir: &Path) -> Result<LoadReport> {
    let report = toolhost::supply::load_dir(runtime, &config.trust, dir)
        .await
        .with_context(|| "loading plugins (set --plugins DIR)")?;
    for error in &report.errors {
        eprintln!("error: {error}");
    }
    Ok(report)
}

fn print_plugins(dir: Option<&Path>, report: &LoadReport, refused: &[Refusal], as_json: bool) -> Result<()> {
    let mut out = crate::output::stdout();
    if as_json {
        let plugins: Vec<_> = report
            .plugins
            .iter()
            .map(|p| {
                json!({
                    "name": &*p.name, "file": p.path.display().to_string(), "order": p.manifest.order,
                    "world": p.worlds.name(), "contract": p.version.as_str(), "categories": p.categories,
                    "tools": p.tools.iter().map(|t| &t.name).collect::<Vec<_>>(),
                    "limits": p.limits(), "status": p.status(), "code": p.code_source,
                    "size_bytes": p.size_bytes, "load_ms": p.load_time.as_secs_f64() * 1e3,
                })
            })
            .collect();
        let value = json!({"directory": dir, "plugins": plugins, "errors": report.errors,
                           "refused": refused, "disabled": report.disabled});
        writeln!(out, "{}", serde_json::to_string_pretty(&value)?)?;
        return Ok(());
    }
    if let Some(dir) = dir {
        writeln!(out, "plugins in {}:", dir.display())?;
    }
    if report.plugins.is_empty() {
        writeln!(out, "no plugins loaded")?;
    }
    for (i, p) in report.plugins.iter().enumerate() {
        let l = p.limits();
        writeln!(
            out,
            "{:>2}. {:<20} {:<16} {:<8} {}",
            i + 1,
            p.name,
            p.worlds.name(),
            format!("{:?}", p.status()).to_lowercase(),
            p.path.display()
        )?;
        if !p.categories.is_empty() {
            writeln!(out, "    categories: {}", p.categories.join(", "))?;
        }
        if !p.tools.is_empty() {
            let source = format!("plugin `{}`", p.name);
            let names: Vec<String> = p
                .tools
                .iter()
                .map(
                    |t| match refused.iter().any(|r| r.tool == t.name && r.source == source) {
                        true => format!("{} (refused)", t.name),
                        false => t.name.clone(),
                    },
                )
                .collect();
            writeln!(out, "    tools: {}", names.join(", "))?;
        }
        writeln!(
            out,
            "    limits: {} MiB, {} ms CPU, {} ms wall, {} KiB out, instances {:?}; {} KB, {:?} in {:.1} ms",
            l.memory_bytes >> 20,
            l.cpu.as_millis(),
            l.wall.as_millis(),
            l.max_output_bytes >> 10,
            l.instances,
            p.size_bytes / 1000,
            p.code_source,
            p.load_time.as_secs_f64() * 1e3
        )?;
    }
    for path in &report.disabled {
        writeln!(out, "    disabled: {}", path.display())?;
    }
    Ok(())
}
