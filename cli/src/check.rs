//! `toolhost check`: the vendor's first check of one plugin. Loads it with
//! its manifest, calls every export on realistic input, and reports what it
//! found and how long each call took.
//!
//! Checks are generic (they hold for any plugin): every export answers
//! within the plugin's limits; enriched schemas stay valid; argument
//! transforms are deterministic; value models are well-formed; the plugin
//! imports only what the host provides and its manifest grants. Tools are
//! never executed (they may have side effects); their hooks and renderers
//! are called with empty arguments. A vendor's own golden cases
//! (`--expect FILE`) are `expect`'s.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::expect::Expectations;
use toolhost::ToolSchema;
use toolhost::catalog::{ToolSpec, base_catalog};
use toolhost::plugin::{Plugin, Runtime};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Pass,
    Warn,
    Fail,
}

/// One check's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    pub check: String,
    pub verdict: Verdict,
    pub detail: String,
    /// Time of the call it made, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub micros: Option<u64>,
}

/// What `check` found about one plugin.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub plugin: String,
    pub file: String,
    pub world: String,
    pub size_bytes: usize,
    pub load_ms: f64,
    pub instantiate_us: Option<u64>,
    pub categories: Vec<String>,
    pub tools: Vec<String>,
    pub findings: Vec<Finding>,
}

impl Report {
    pub fn passed(&self) -> bool {
        self.findings.iter().all(|f| f.verdict != Verdict::Fail)
    }
}

struct Findings(Vec<Finding>);

impl Findings {
    fn add(
        &mut self,
        check: impl Into<String>,
        verdict: Verdict,
        detail: impl Into<String>,
        took: Option<Duration>,
    ) {
        let micros = took.map(|d| d.as_micros() as u64);
        self.0.push(Finding {
            check: check.into(),
            verdict,
            detail: detail.into(),
            micros,
        });
    }
}

/// Load `path` and run every generic check, then the vendor's golden cases
/// if `expect` is given. `Err` only if it does not load.
pub async fn check(
    runtime: &Runtime,
    path: &Path,
    expect: Option<&Expectations>,
) -> Result<Report, toolhost::plugin::LoadError> {
    let plugin = runtime.load_file(path).await?;
    let mut f = Findings(Vec::new());
    f.add(
        "load",
        Verdict::Pass,
        format!("{} via {:?}", plugin.worlds.name(), plugin.code_source),
        Some(plugin.load_time),
    );
    check_imports(&plugin, &mut f);
    let instantiate = plugin.time_instantiation().await.ok();
    if plugin.worlds.enricher {
        check_enricher(&plugin, &mut f).await;
    }
    if plugin.worlds.tool {
        check_tools(&plugin, &mut f).await;
    }
    if let Some(expect) = expect {
        for (name, result) in expect.run(&plugin).await {
            match result {
                Ok(detail) => f.add(name, Verdict::Pass, detail, None),
                Err(detail) => f.add(name, Verdict::Fail, detail, None),
            }
        }
    }
    Ok(Report {
        plugin: plugin.name.to_string(),
        file: path.display().to_string(),
        world: plugin.worlds.name().into(),
        size_bytes: plugin.size_bytes,
        load_ms: plugin.load_time.as_secs_f64() * 1e3,
        instantiate_us: instantiate.map(|d| d.as_micros() as u64),
        categories: plugin.categories.clone(),
        tools: plugin.tools.iter().map(|t| t.name.clone()).collect(),
        findings: f.0,
    })
}

/// Imports every plugin may have without a grant: the contract's own
/// interfaces, and WASI interfaces the sandbox serves with no authority in
/// them (no preopens, no environment, empty stdin).
const UNGRANTED: [&str; 8] = [
    "toolhost:plugin/host@",
    "toolhost:plugin/types@",
    "toolhost:plugin/value-model-types@",
    "wasi:io/",
    "wasi:clocks/",
    "wasi:random/",
    "wasi:cli/",
    "wasi:filesystem/",
];

/// "Nothing is imported that the manifest does not grant": HTTP needs hosts
/// in `grants.http`; network WASI (sockets, wasi:http) can never be granted,
/// so importing it is a warning (every use is refused at run time).
fn check_imports(plugin: &Plugin, f: &mut Findings) {
    let mut ungranted = Vec::new();
    let mut network = Vec::new();
    for import in &plugin.imports {
        if UNGRANTED.iter().any(|p| import.starts_with(p)) {
            continue;
        }
        if import.starts_with("toolhost:plugin/http@") {
            if plugin.http_hosts().is_empty() {
                ungranted.push(import.as_str());
            }
        } else {
            network.push(import.as_str());
        }
    }
    let wasi = plugin.imports.iter().filter(|i| i.starts_with("wasi:")).count();
    f.add(
        "imports",
        Verdict::Pass,
        format!(
            "{} imports, {wasi} from WASI (no authority granted)",
            plugin.imports.len()
        ),
        None,
    );
    if ungranted.is_empty() {
        f.add(
            "imports.granted",
            Verdict::Pass,
            "nothing is imported that the manifest does not grant",
            None,
        );
    } else {
        f.add(
            "imports.granted",
            Verdict::Fail,
            format!(
                "imports {} but its manifest grants no hosts (grants.http): drop the import or grant hosts",
                ungranted.join(", ")
            ),
            None,
        );
    }
    if !network.is_empty() {
        f.add(
            "imports.network",
            Verdict::Warn,
            format!(
                "imports {}: the sandbox refuses every use; build without them (e.g. componentize-py --stub-wasi)",
                network.join(", ")
            ),
            None,
        );
    }
}

/// Base-catalog tools of the claimed categories, or a synthetic tool if the
/// plugin claims only categories the catalog lacks.
fn sample_tools(plugin: &Plugin) -> Vec<ToolSpec> {
    let tools: Vec<ToolSpec> = base_catalog()
        .iter()
        .filter(|t| t.category.as_deref().is_some_and(|c| plugin.claims(c)))
        .cloned()
        .collect();
    if !tools.is_empty() {
        return tools;
    }
    plugin
        .categories
        .iter()
        .map(|c| ToolSpec {
            name: format!("sample_{c}_tool"),
            description: "A sample tool".into(),
            category: Some(c.clone()),
            input_schema: json!({"type": "object", "properties": {"query": {"type": "string"}}}),
            ..ToolSpec::default()
        })
        .collect()
}

async fn check_enricher(plugin: &Plugin, f: &mut Findings) {
    f.add(
        "supported-categories",
        Verdict::Pass,
        plugin.categories.join(", "),
        None,
    );
    for tool in sample_tools(plugin) {
        let schema = ToolSchema::new(tool.description.clone(), tool.input_schema.clone())
            .expect("catalog schemas are valid");
        let start = Instant::now();
        match plugin.enrich_schema(&tool.name, schema).await {
            Ok(enrichment) => {
                let (edit, took) = (enrichment.edit, start.elapsed());
                match ToolSchema::new(edit.schema.description(), edit.schema.to_value()) {
                    Ok(_) => f.add(
                        format!("enrich-schema {}", tool.name),
                        Verdict::Pass,
                        format!("{} changes", edit.changes.len()),
                        Some(took),
                    ),
                    Err(e) => f.add(
                        format!("enrich-schema {}", tool.name),
                        Verdict::Fail,
                        format!("result is not a valid schema: {e}"),
                        Some(took),
                    ),
                }
                let args = sample_args(&edit.schema);
                check_transform(plugin, &tool.name, args, f).await;
            }
            Err(e) => f.add(
                format!("enrich-schema {}", tool.name),
                Verdict::Fail,
                e.to_string(),
                Some(start.elapsed()),
            ),
        }
        let start = Instant::now();
        match plugin.value_model(&tool.name).await {
            Ok(Some(model)) => {
                let took = start.elapsed();
                let issues = value_model_issues(&model);
                let verdict = if issues.is_empty() {
                    Verdict::Pass
                } else {
                    Verdict::Fail
                };
                let detail = if issues.is_empty() {
                    format!("{:?}, {:?}", model.side_effect(), model.value_class())
                } else {
                    issues.join("; ")
                };
                f.add(format!("value-model {}", tool.name), verdict, detail, Some(took));
                for link in model.follow_ups.iter().flatten() {
                    let start = Instant::now();
                    match plugin.project_args(&tool.name, &json!({}), link).await {
                        Ok(p) => f.add(
                            format!("project-args {} → {}", tool.name, link.tool),
                            Verdict::Pass,
                            format!("{} items for an empty result", p.map_or(0, |v| v.len())),
                            Some(start.elapsed()),
                        ),
                        Err(e) => f.add(
                            format!("project-args {} → {}", tool.name, link.tool),
                            Verdict::Fail,
                            e.to_string(),
                            Some(start.elapsed()),
                        ),
                    }
                }
            }
            Ok(None) => {}
            Err(e) => f.add(
                format!("value-model {}", tool.name),
                Verdict::Fail,
                e.to_string(),
                Some(start.elapsed()),
            ),
        }
        let start = Instant::now();
        match plugin.rate_limit_host(&tool.name, &Map::new()).await {
            Ok(host) => f.add(
                format!("rate-limit-host {}", tool.name),
                Verdict::Pass,
                host.unwrap_or_else(|| "none".into()),
                Some(start.elapsed()),
            ),
            Err(e) => f.add(
                format!("rate-limit-host {}", tool.name),
                Verdict::Fail,
                e.to_string(),
                Some(start.elapsed()),
            ),
        }
    }
}

/// Transform the same arguments twice: the results must be identical.
async fn check_transform(plugin: &Plugin, tool: &str, args: Map<String, Value>, f: &mut Findings) {
    let start = Instant::now();
    let first = plugin.transform_args(tool, args.clone()).await;
    let took = start.elapsed();
    let second = plugin.transform_args(tool, args).await;
    let name = format!("transform-args {tool}");
    match (first, second) {
        (Ok(a), Ok(b)) if a == b => f.add(name, Verdict::Pass, "deterministic", Some(took)),
        (Ok(_), Ok(_)) => f.add(
            name,
            Verdict::Fail,
            "two calls with the same arguments gave different results",
            Some(took),
        ),
        (Err(toolhost::plugin::PluginError::Rejected { message, .. }), _) => f.add(
            name,
            Verdict::Pass,
            format!("refused sample arguments: {message}"),
            Some(took),
        ),
        (Err(e), _) | (_, Err(e)) => f.add(name, Verdict::Fail, e.to_string(), Some(took)),
    }
}

/// Arguments that satisfy a schema's required properties with plain values.
fn sample_args(schema: &ToolSchema) -> Map<String, Value> {
    schema
        .required()
        .into_iter()
        .map(|name| {
            let prop = schema.property(&name).cloned().unwrap_or(Value::Null);
            let value = match (
                prop.get("enum").and_then(|e| e.get(0)),
                prop.get("type").and_then(Value::as_str),
            ) {
                (Some(first), _) => first.clone(),
                (_, Some("integer" | "number")) => json!(1),
                (_, Some("boolean")) => json!(true),
                (_, Some("array")) => json!([]),
                (_, Some("object")) => json!({}),
                _ => json!("sample"),
            };
            (name, value)
        })
        .collect()
}

fn value_model_issues(model: &toolhost::ValueModel) -> Vec<String> {
    let mut issues = Vec::new();
    if model.cost.typical_kb.is_some_and(|kb| kb.is_nan() || kb < 0.0) {
        issues.push("typical_kb must be a non-negative number".into());
    }
    if let (Some(t), Some(m)) = (model.cost.typical_kb, model.cost.max_kb)
        && m < t
    {
        issues.push(format!("max_kb {m} is below typical_kb {t}"));
    }
    for link in model.follow_ups.iter().flatten() {
        if link.tool.is_empty() {
            issues.push("a follow-up link names no tool".into());
        }
        if link.projection.is_some() != link.projection_arg.is_some() {
            issues.push(format!(
                "follow-up to {} sets only one of projection and projection_arg",
                link.tool
            ));
        }
    }
    if model.forces_unsafe_speculation() {
        issues.push("speculate = true on a tool that is not pure or read-only".into());
    }
    issues
}

async fn check_tools(plugin: &Plugin, f: &mut Findings) {
    f.add(
        "list-tools",
        Verdict::Pass,
        format!("{} tools", plugin.tools.len()),
        None,
    );
    for tool in &plugin.tools {
        let schema = ToolSchema::new(tool.description.clone(), tool.input_schema.clone());
        match schema {
            Ok(_) => f.add(format!("schema {}", tool.name), Verdict::Pass, "valid", None),
            Err(e) => f.add(
                format!("schema {}", tool.name),
                Verdict::Fail,
                e.to_string(),
                None,
            ),
        }
        if tool.hooks.contains(toolhost::plugin::Hooks::RENDER_CALL) {
            let start = Instant::now();
            match plugin.render_call(&tool.name, &json!({}), 80).await {
                Ok(text) => f.add(
                    format!("render-call {}", tool.name),
                    Verdict::Pass,
                    text.unwrap_or_default(),
                    Some(start.elapsed()),
                ),
                Err(e) => f.add(
                    format!("render-call {}", tool.name),
                    Verdict::Fail,
                    e.to_string(),
                    Some(start.elapsed()),
                ),
            }
        }
    }
}

/// The verb: print the report (or its JSON); exit 1 when a check failed.
pub async fn run(
    runtime: &Runtime,
    file: &Path,
    as_json: bool,
    expect: Option<&Path>,
) -> anyhow::Result<ExitCode> {
    let expectations = expect.map(Expectations::read).transpose()?;
    let report = check(runtime, file, expectations.as_ref())
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut out = crate::output::stdout();
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
