//! `/metrics` on the HTTP server, in the OpenMetrics text format
//! Prometheus scrapes: calls, error results and latency per tool and per
//! plugin (as the front saw them, served from a prefetch or run); traps
//! (and other failures), quarantines and calls refused in quarantine per
//! plugin, loads that refused a plugin's file, and the speculation counters
//! of this replica (prefetches, hits, cluster hits, joins, wasted, stale),
//! read from the host when scraped; and the differences the pin holds back
//! (`toolhost_pin_held`, a gauge: 0 with no pin); and the tasks proxied by
//! the status they were seen in (`toolhost_tasks_total{status}`: each task
//! counted once per status it reaches, as its server answered the call,
//! `tasks/get` or `tasks/cancel`, or told in a status notification).
//! Every counter goes on across reloads of
//! the plugin directory: a reloaded plugin's counts since its load are
//! added to what its name had counted before.
//!
//! Beside them, unprefixed, the OpenTelemetry MCP conventions' histogram
//! `mcp.server.operation.duration` as Prometheus names it
//! (`mcp_server_operation_duration_seconds`): every request the server
//! answers, by `mcp_method_name` and, for `tools/call`, `gen_ai_tool_name`
//! (a tool served, else `_OTHER`) and `error_type` (`tool_error`, or the
//! JSON-RPC error code), in the conventions' buckets.
//!
//! Label values are names a vendor chose: the encoder escapes them, and
//! they are cut to [`MAX_LABEL`] bytes; only the tools served and the
//! plugins loaded are labels, so their number is bounded by the catalog.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Registry, Unit};

use crate::pipeline::Toolhost;
use crate::plugin::Plugin;

/// The content type of what [`CallMetrics::render`] returns.
pub(super) const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolLabel {
    tool: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PluginLabel {
    plugin: String,
}

/// The bytes of a label value kept at most.
pub(super) const MAX_LABEL: usize = 128;

/// `name` cut to [`MAX_LABEL`] bytes, on a character boundary.
fn bounded(name: &str) -> String {
    let mut end = name.len().min(MAX_LABEL);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    name[..end].to_owned()
}

/// The labels of `mcp_server_operation_duration_seconds`; an empty one
/// is no label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OperationLabels {
    mcp_method_name: &'static str,
    gen_ai_tool_name: String,
    error_type: String,
}

/// The bucket bounds the conventions advise for
/// `mcp.server.operation.duration`, in seconds.
const OPERATION_BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabel {
    kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StatusLabel {
    status: &'static str,
}

/// A task's statuses (MCP 2025-11-25); any other a server says is counted
/// as `_OTHER`, so a server cannot grow the labels.
const TASK_STATUSES: [&str; 5] = ["working", "input_required", "completed", "failed", "cancelled"];

/// `status` as a label of `toolhost_tasks_total`.
pub(super) fn task_status(status: Option<&str>) -> &'static str {
    TASK_STATUSES
        .into_iter()
        .find(|s| Some(*s) == status)
        .unwrap_or("_OTHER")
}

pub(super) struct CallMetrics {
    registry: Registry,
    calls: Family<ToolLabel, Counter>,
    errors: Family<ToolLabel, Counter>,
    latency: Family<ToolLabel, Histogram>,
    plugin_calls: Family<PluginLabel, Counter>,
    plugin_errors: Family<PluginLabel, Counter>,
    plugin_latency: Family<PluginLabel, Histogram>,
    traps: Family<PluginLabel, Counter>,
    quarantines: Family<PluginLabel, Counter>,
    refusals: Family<PluginLabel, Counter>,
    refused_loads: Family<PluginLabel, Counter>,
    speculation: Family<KindLabel, Counter>,
    pin_held: Gauge,
    tasks: Family<StatusLabel, Counter>,
    operations: Family<OperationLabels, Histogram>,
    /// What each plugin had counted at the last scrape. Held by one scrape
    /// at a time, which brings the counters kept elsewhere up to date.
    scraped: Mutex<HashMap<String, Scraped>>,
}

/// A loaded plugin's own counts (since its load) at the last scrape. A
/// reload brings a new [`Plugin`] counting from zero: its counts are added
/// whole, so the exported counters never go back.
struct Scraped {
    /// Which load: held weakly, so that a plugin dropped since cannot have
    /// its place taken by a new one at the same address.
    plugin: Weak<Plugin>,
    /// Traps, quarantines, refused calls, in the order of
    /// [`CallMetrics::health`].
    counts: [u64; 3],
}

impl CallMetrics {
    pub(super) fn new() -> Arc<Self> {
        // The conventions' names stand alone; the host's own are prefixed.
        let mut root = Registry::default();
        let operations =
            Family::<OperationLabels, Histogram>::new_with_constructor(|| Histogram::new(OPERATION_BUCKETS));
        root.register_with_unit(
            "mcp_server_operation_duration",
            "MCP request duration as observed on the server, from its receipt until its answer is sent",
            Unit::Seconds,
            operations.clone(),
        );
        let registry = root.sub_registry_with_prefix("toolhost");
        let calls = Family::<ToolLabel, Counter>::default();
        let errors = Family::<ToolLabel, Counter>::default();
        // 0.5 ms to about 16 s.
        let latency = Family::<ToolLabel, Histogram>::new_with_constructor(|| {
            Histogram::new(exponential_buckets(0.0005, 2.0, 16))
        });
        let speculation = Family::<KindLabel, Counter>::default();
        let plugin_calls = Family::<PluginLabel, Counter>::default();
        let plugin_errors = Family::<PluginLabel, Counter>::default();
        let plugin_latency = Family::<PluginLabel, Histogram>::new_with_constructor(|| {
            Histogram::new(exponential_buckets(0.0005, 2.0, 16))
        });
        let traps = Family::<PluginLabel, Counter>::default();
        let quarantines = Family::<PluginLabel, Counter>::default();
        let refusals = Family::<PluginLabel, Counter>::default();
        let refused_loads = Family::<PluginLabel, Counter>::default();
        registry.register(
            "plugin_calls",
            "Tool calls answered, by the plugin that runs the tool",
            plugin_calls.clone(),
        );
        registry.register(
            "plugin_call_errors",
            "Tool calls answered with an error result, by plugin",
            plugin_errors.clone(),
        );
        registry.register(
            "plugin_call_seconds",
            "Time to answer a tool call, by plugin",
            plugin_latency.clone(),
        );
        registry.register(
            "plugin_traps",
            "Plugin failures: traps, CPU or deadline exhausted, output too large",
            traps.clone(),
        );
        registry.register(
            "plugin_quarantines",
            "Times a plugin was quarantined",
            quarantines.clone(),
        );
        registry.register(
            "plugin_refusals",
            "Calls refused because their plugin was quarantined",
            refusals.clone(),
        );
        registry.register(
            "plugin_refused_loads",
            "Loads of the plugin directory that refused the plugin's file (lock file, approval, signature, unsafe path)",
            refused_loads.clone(),
        );
        registry.register("calls", "Tool calls answered", calls.clone());
        registry.register(
            "call_errors",
            "Tool calls answered with an error result",
            errors.clone(),
        );
        registry.register("call_seconds", "Time to answer a tool call", latency.clone());
        registry.register(
            "speculation",
            "What speculation did, by kind",
            speculation.clone(),
        );
        let pin_held = Gauge::default();
        registry.register(
            "pin_held",
            "Differences from the pinned tool list held back (changed, new and renamed tools)",
            pin_held.clone(),
        );
        let tasks = Family::<StatusLabel, Counter>::default();
        registry.register(
            "tasks",
            "Tasks proxied, each counted once per status it was seen reach",
            tasks.clone(),
        );
        Arc::new(Self {
            registry: root,
            calls,
            errors,
            latency,
            plugin_calls,
            plugin_errors,
            plugin_latency,
            traps,
            quarantines,
            refusals,
            refused_loads,
            speculation,
            pin_held,
            tasks,
            operations,
            scraped: Mutex::default(),
        })
    }

    /// A call of `tool` (run by `plugin`, if a plugin runs it) answered in
    /// `took`, an error result or not.
    pub(super) fn call(&self, tool: &str, plugin: Option<&str>, took: Duration, error: bool) {
        let label = ToolLabel { tool: bounded(tool) };
        self.calls.get_or_create(&label).inc();
        if error {
            self.errors.get_or_create(&label).inc();
        }
        self.latency.get_or_create(&label).observe(took.as_secs_f64());
        if let Some(plugin) = plugin {
            let label = PluginLabel {
                plugin: bounded(plugin),
            };
            self.plugin_calls.get_or_create(&label).inc();
            if error {
                self.plugin_errors.get_or_create(&label).inc();
            }
            self.plugin_latency
                .get_or_create(&label)
                .observe(took.as_secs_f64());
        }
    }

    /// An MCP request answered in `took`: `method`, the tool called (its
    /// label, for `tools/call`) and the error type, if it failed.
    pub(super) fn operation(
        &self,
        method: &'static str,
        tool: Option<&str>,
        error: Option<&str>,
        took: Duration,
    ) {
        let labels = OperationLabels {
            mcp_method_name: method,
            gen_ai_tool_name: tool.map(bounded).unwrap_or_default(),
            error_type: error.map(bounded).unwrap_or_default(),
        };
        self.operations.get_or_create(&labels).observe(took.as_secs_f64());
    }

    /// A task seen reach `status` (a label of [`task_status`]).
    pub(super) fn task(&self, status: &'static str) {
        self.tasks.get_or_create(&StatusLabel { status }).inc();
    }

    /// The per-plugin health families, in the order of [`Scraped::counts`].
    fn health(&self) -> [&Family<PluginLabel, Counter>; 3] {
        [&self.traps, &self.quarantines, &self.refusals]
    }

    /// Bring `counter` up to `now` (a count kept elsewhere, since start).
    fn catch_up(counter: &Counter, now: u64) {
        counter.inc_by(now.saturating_sub(counter.get()));
    }

    /// Everything, as of now.
    pub(super) async fn render(&self, host: &Toolhost) -> String {
        let plugins = host.plugins().await;
        let mut scraped = self.scraped.lock().unwrap_or_else(|p| p.into_inner());
        for plugin in &plugins {
            let name = PluginLabel {
                plugin: bounded(&plugin.name),
            };
            let load = Arc::downgrade(plugin);
            let counts = [
                plugin.traps(),
                u64::from(plugin.quarantine_trips()),
                plugin.refused_calls(),
            ];
            let before = match scraped.get(&name.plugin) {
                Some(last) if last.plugin.ptr_eq(&load) => last.counts,
                _ => [0; 3],
            };
            for ((family, now), was) in self.health().into_iter().zip(counts).zip(before) {
                family.get_or_create(&name).inc_by(now.saturating_sub(was));
            }
            scraped.insert(name.plugin, Scraped { plugin: load, counts });
        }
        for (plugin, refused) in host.refused_loads() {
            let name = PluginLabel {
                plugin: bounded(&plugin),
            };
            Self::catch_up(&self.refused_loads.get_or_create(&name), refused);
        }
        if let Some(s) = host.stats() {
            for (kind, now) in [
                ("prefetches", s.dispatched),
                ("hits", s.hits),
                ("cluster_hits", s.cluster_hits),
                ("cluster_refused", s.cluster_refused),
                ("joins", s.joins),
                ("reused", s.reused),
                ("wasted", s.wasted),
                ("stale", s.stale),
            ] {
                Self::catch_up(&self.speculation.get_or_create(&KindLabel { kind }), now);
            }
        }
        if host.pin_settings().is_some() {
            let held = host.served_tools().held().count();
            self.pin_held.set(i64::try_from(held).unwrap_or(i64::MAX));
        }
        let mut text = String::new();
        // Writing to a String cannot fail.
        let _ = encode(&mut text, &self.registry);
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A vendor's names cannot break the exposition format: every sample
    /// stays on its own line, its label values quoted and escaped, and a
    /// long name is cut.
    #[test]
    fn hostile_names_are_escaped_and_bounded() {
        let metrics = CallMetrics::new();
        let tool = "get\"} 1\ntoolhost_calls_total{tool=\"forged";
        let plugin = format!("evil\\\"\n{}", "x".repeat(1000));
        metrics.call(tool, Some(&plugin), Duration::from_millis(3), true);
        let mut text = String::new();
        encode(&mut text, &metrics.registry).unwrap();
        let samples: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert!(
            !samples
                .iter()
                .any(|l| l.starts_with("toolhost_calls_total{tool=\"forged")),
            "a forged sample:\n{text}"
        );
        for line in &samples {
            assert!(
                line.starts_with("toolhost_"),
                "a line that is no sample: {line:?}\n{text}"
            );
            assert!(line.len() < 2 * MAX_LABEL + 200, "unbounded: {line}");
        }
        assert!(
            text.contains(r#"toolhost_calls_total{tool="get\"} 1\ntoolhost_calls_total{tool=\"forged"} 1"#),
            "{text}"
        );
        let cut = format!(
            r#"toolhost_plugin_call_errors_total{{plugin="evil\\\"\n{}"}} 1"#,
            "x".repeat(MAX_LABEL - 7)
        );
        assert!(text.lines().any(|l| l == cut), "{text}");
    }

    #[test]
    fn tasks_are_counted_by_status_and_a_made_up_status_is_other() {
        let metrics = CallMetrics::new();
        for status in [Some("working"), Some("completed"), Some("<b>done</b>"), None] {
            metrics.task(task_status(status));
        }
        let mut text = String::new();
        encode(&mut text, &metrics.registry).unwrap();
        for sample in [
            r#"toolhost_tasks_total{status="working"} 1"#,
            r#"toolhost_tasks_total{status="completed"} 1"#,
            r#"toolhost_tasks_total{status="_OTHER"} 2"#,
        ] {
            assert!(text.lines().any(|l| l == sample), "no {sample} in:\n{text}");
        }
        assert!(!text.contains("done"), "{text}");
    }
}
