//! `/metrics` on the HTTP server, in the OpenMetrics text format
//! Prometheus scrapes: calls, error results and latency per tool (as the
//! front saw them, served from a prefetch or run), and the speculation
//! counters of this replica (prefetches, hits, cluster hits, joins,
//! wasted, stale), read from the host when scraped.
//!
//! Not here (yet): traps, quarantines and refusals per plugin, which the
//! plugin runtime counts but does not expose.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::pipeline::Toolhost;

/// The content type of what [`CallMetrics::render`] returns.
pub(super) const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolLabel {
    tool: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabel {
    kind: &'static str,
}

pub(super) struct CallMetrics {
    registry: Registry,
    calls: Family<ToolLabel, Counter>,
    errors: Family<ToolLabel, Counter>,
    latency: Family<ToolLabel, Histogram>,
    speculation: Family<KindLabel, Counter>,
    /// One scrape at a time brings the speculation counters up to date.
    scraping: Mutex<()>,
}

impl CallMetrics {
    pub(super) fn new() -> Arc<Self> {
        let mut registry = Registry::with_prefix("toolhost");
        let calls = Family::<ToolLabel, Counter>::default();
        let errors = Family::<ToolLabel, Counter>::default();
        // 0.5 ms to about 16 s.
        let latency = Family::<ToolLabel, Histogram>::new_with_constructor(|| {
            Histogram::new(exponential_buckets(0.0005, 2.0, 16))
        });
        let speculation = Family::<KindLabel, Counter>::default();
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
        Arc::new(Self {
            registry,
            calls,
            errors,
            latency,
            speculation,
            scraping: Mutex::new(()),
        })
    }

    /// A call of `tool` answered in `took`, an error result or not.
    pub(super) fn call(&self, tool: &str, took: Duration, error: bool) {
        let label = ToolLabel {
            tool: tool.to_owned(),
        };
        self.calls.get_or_create(&label).inc();
        if error {
            self.errors.get_or_create(&label).inc();
        }
        self.latency.get_or_create(&label).observe(took.as_secs_f64());
    }

    /// Everything, as of now.
    pub(super) fn render(&self, host: &Toolhost) -> String {
        let _one = self.scraping.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(s) = host.stats() {
            for (kind, now) in [
                ("prefetches", s.dispatched),
                ("hits", s.hits),
                ("cluster_hits", s.cluster_hits),
                ("joins", s.joins),
                ("reused", s.reused),
                ("wasted", s.wasted),
                ("stale", s.stale),
            ] {
                let counter = self.speculation.get_or_create(&KindLabel { kind });
                counter.inc_by(now.saturating_sub(counter.get()));
            }
        }
        let mut text = String::new();
        // Writing to a String cannot fail.
        let _ = encode(&mut text, &self.registry);
        text
    }
}
