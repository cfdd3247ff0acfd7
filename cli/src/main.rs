//! The `toolhost` command line.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use serde_json::json;
use toolhost::catalog::base_tool;
use toolhost_cli::check::{self, Verdict};
use toolhost::client_log::ClientLog;
use toolhost_cli::config::Config;
use toolhost::enrich::{EnrichedTool, Enrichers, Listing, Owner};
use toolhost_cli::expect::Expectations;
use toolhost::ownership::{self, Refusal};
use toolhost::pipeline::Toolhost;
use toolhost::plugin::{LoadReport, Runtime, RuntimeOptions, tracing_sink};
use toolhost_cli::setup;
use toolhost::value_model::ValueModels;


#[derive(Parser)]
#[command(
    name = "toolhost",
    version,
    about = "Host for AI-agent tools extended by sandboxed WebAssembly plugins"
)]
struct Cli {
    /// Configuration file (default: ./toolhost.toml if present).
    #[arg(long, global = true)]
    config: Option<PathBuf>,
    /// Plugin directory (default: from the configuration, else ./plugins,
    /// else the bundled build/plugins).
    #[arg(long, global = true, env = "TOOLHOST_PLUGINS")]
    plugins: Option<PathBuf>,
    /// The directory read, glob, grep and ls are confined to (default:
    /// `root` of the configuration, else the working directory).
    #[arg(long, global = true, value_name = "DIR")]
    root: Option<PathBuf>,
    /// Compile plugins without the on-disk code cache.
    #[arg(long, global = true)]
    no_cache: bool,
    /// More log output (-v, -vv).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// List loaded plugins: order, categories, worlds, limits, status.
    Plugins {
        #[arg(long)]
        json: bool,
    },
    /// List the tools `serve` serves, as enriched by the loaded plugins.
    Tools {
        #[arg(long)]
        json: bool,
        /// Also list the tools known but not served, with why.
        #[arg(long)]
        all: bool,
        /// Show which plugin changed what in one tool's schema, or why it
        /// is not served.
        #[arg(long, value_name = "NAME")]
        explain: Option<String>,
    },
    /// Load one plugin, call every export, and report what it found.
    Check {
        file: PathBuf,
        #[arg(long)]
        json: bool,
        /// The vendor's golden cases (TOML; its format is in the README).
        #[arg(long, value_name = "FILE")]
        expect: Option<PathBuf>,
    },
    /// Scaffold a plugin directory NAME that builds with `make`.
    New {
        name: String,
        #[arg(long, value_enum)]
        lang: toolhost_cli::scaffold::Lang,
        /// Where to create it (default: the current directory).
        #[arg(long, default_value = ".")]
        dir: PathBuf,
    },
    /// Serve the tools over MCP: stdio by default, streamable HTTP with --http.
    Serve {
        /// Listen for streamable HTTP at ADDR (served at /mcp).
        #[arg(long, value_name = "ADDR")]
        http: Option<std::net::SocketAddr>,
        /// Reload the plugin directory when a plugin or manifest in it
        /// changes, and tell the clients the tool list changed.
        #[arg(long)]
        watch: bool,
        /// Serve --http on a non-loopback address without authorization
        /// (no `[auth]` in toolhost.toml): anyone who reaches it may call
        /// every tool.
        #[arg(long)]
        insecure: bool,
    },
    /// Show what speculation did in the last `toolhost serve`.
    Stats {
        #[arg(long)]
        json: bool,
    },
    /// Run one tool call through the pipeline. On a terminal, print the
    /// call and its result as the tool renders them (or plainly); else, or
    /// with --json, print the result as JSON.
    Call {
        tool: String,
        /// The arguments, a JSON object.
        #[arg(default_value = "{}")]
        args: String,
        /// Print JSON even on a terminal.
        #[arg(long)]
        json: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let filter = match cli.verbose {
        0 => "warn,toolhost_cli::stats=info,toolhost_cli::watch=info",
        // rmcp logs whole messages at info (an upstream's log lines, before
        // their secrets are redacted) and wasmtime-wasi a guest's stdout
        // bytes at debug (before the plugin's secrets are): both kept quiet.
        1 => "info,plugin=debug,rmcp::service=warn",
        _ => "debug,rmcp::service=warn,wasmtime_wasi=info",
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| filter.into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> Result<ExitCode> {
    let mut config = Config::discover(cli.config.as_deref())?;
    if let Some(root) = cli.root {
        config.root = Some(root);
    }
    let cache_dir = if cli.no_cache { None } else { config.cache_dir() };
    // Plugin and upstream log lines go to the host's log and to MCP clients.
    let client_log = ClientLog::default();
    let runtime = Runtime::new(RuntimeOptions {
        cache_dir,
        plugin_settings: config.plugin_settings(),
        log: client_log.sink(tracing_sink()),
    })?;
    let plugin_dir = setup::plugin_dir(cli.plugins.as_deref(), &config);
    match cli.command {
        Command::Check { file, json, expect } => check_cmd(&runtime, &file, json, expect.as_deref()).await,
        Command::Serve {
            http,
            watch,
            insecure,
        } => {
            let front = toolhost_cli::serve::Front {
                http,
                insecure,
                log: client_log,
            };
            toolhost_cli::serve::serve(&runtime, &config, plugin_dir.as_deref(), front, watch).await
        }
        Command::Call { tool, args, json } => {
            toolhost_cli::serve::call(&runtime, &config, plugin_dir.as_deref(), &tool, &args, json).await
        }
        Command::Stats { json } => toolhost_cli::serve::stats(&config, json),
        Command::New { name, lang, dir } => {
            let dir = toolhost_cli::scaffold::scaffold(&dir, &name, lang)?;
            println!("created {0}: build it with `make -C {0}`", dir.display());
            Ok(ExitCode::SUCCESS)
        }
        Command::Plugins { json } => {
            let report = match &plugin_dir {
                Some(dir) => load(&runtime, dir).await?,
                None => {
                    eprintln!(
                        "no plugin directory: pass --plugins DIR, set `plugins` in toolhost.toml or create ./plugins"
                    );
                    LoadReport::default()
                }
            };
            // Reported as `serve`, `call` and `tools` report them.
            let refused = ownership::plugin_refusals(&report.plugins, &config.bind);
            for refusal in &refused {
                eprintln!("error: {refusal}");
            }
            print_plugins(plugin_dir.as_deref(), &report, &refused, json)?;
            Ok(if refused.is_empty() {
                exit_for(&report.errors)
            } else {
                exit_for(&refused)
            })
        }
        Command::Tools { json, all, explain } => {
            let (host, errors) = setup::build(&runtime, &config, plugin_dir.as_deref()).await?;
            for error in &errors {
                eprintln!("error: {error}");
            }
            let listing = host.list_tools();
            let shown = match explain {
                Some(name) => explain_cmd(&host, &config, &listing, &name).await,
                None => print_tools(&listing, json, all),
            };
            host.shutdown().await;
            shown?;
            Ok(exit_for(&errors))
        }
    }
}

async fn load(runtime: &Runtime, dir: &Path) -> Result<LoadReport> {
    let report = runtime
        .load_dir(dir)
        .await
        .with_context(|| "loading plugins (set --plugins DIR)")?;
    for error in &report.errors {
        eprintln!("error: {error}");
    }
    Ok(report)
}

/// Exit status 2 when something could not be loaded or reached.
fn exit_for<E>(errors: &[E]) -> ExitCode {
    if errors.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    }
}

fn print_plugins(dir: Option<&Path>, report: &LoadReport, refused: &[Refusal], as_json: bool) -> Result<()> {
    let mut out = std::io::stdout().lock();
    if as_json {
        let plugins: Vec<_> = report
            .plugins
            .iter()
            .map(|p| {
                json!({
                    "name": &*p.name, "file": p.path.display().to_string(), "order": p.manifest.order,
                    "world": p.worlds.name(), "categories": p.categories,
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

fn print_tools(listing: &Listing, as_json: bool, all: bool) -> Result<()> {
    let mut out = std::io::stdout().lock();
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
        return explain_tool(tool, &models);
    }
    let Some(hidden) = listing.hidden.iter().find(|h| h.name == name) else {
        anyhow::bail!(
            "tool `{name}` is unknown: no source provides it and the base catalog has none of that name"
        );
    };
    println!("{name}: not served: {}", hidden.reason);
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
            println!("its enrichment fails: {reason}");
            Ok(())
        }
    }
}

fn explain_tool(tool: &EnrichedTool, models: &ValueModels) -> Result<()> {
    let name = tool.name.as_str();
    let mut out = std::io::stdout().lock();
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

async fn check_cmd(runtime: &Runtime, file: &Path, as_json: bool, expect: Option<&Path>) -> Result<ExitCode> {
    let expectations = expect.map(Expectations::read).transpose()?;
    let report = check::check(runtime, file, expectations.as_ref())
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut out = std::io::stdout().lock();
    if as_json {
        writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        writeln!(
            out,
            "{} ({}, {} KB, loaded in {:.1} ms)",
            report.plugin,
            report.world,
            report.size_bytes / 1000,
            report.load_ms
        )?;
        if let Some(us) = report.instantiate_us {
            writeln!(out, "  fresh instance: {us} µs")?;
        }
        for f in &report.findings {
            let mark = match f.verdict {
                Verdict::Pass => "ok  ",
                Verdict::Warn => "warn",
                Verdict::Fail => "FAIL",
            };
            let took = f.micros.map(|us| format!(" ({us} µs)")).unwrap_or_default();
            writeln!(out, "  {mark} {}{took}: {}", f.check, f.detail)?;
        }
        let failed = report
            .findings
            .iter()
            .filter(|f| f.verdict == Verdict::Fail)
            .count();
        writeln!(
            out,
            "{}",
            if failed == 0 {
                "passed".to_owned()
            } else {
                format!("{failed} checks failed")
            }
        )?;
    }
    Ok(if report.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
