//! The front's spans exported over OTLP/HTTP ([`SpanExport`], `[telemetry]`):
//! each request's span as `telemetry` ends it, with the attributes it
//! already logs, batched by the OpenTelemetry SDK's batch processor and
//! sent as protobuf to the collector's `/v1/traces` by
//! `opentelemetry-otlp`, over the host's own reqwest client (rustls with
//! ring: no gRPC, no second HTTP or TLS stack).
//!
//! Only what the span says is exported: the method, tool name, request and
//! session ids, transport, error type and its place in the trace. Never
//! the arguments, a result, a caller or a credential: a collector is one
//! more place for them to leak from. The headers sent to the collector
//! (its API key) come from environment variables, not the configuration
//! file, and are never logged; an export that fails is logged with its
//! status or cause, at most once a minute.
//!
//! A span is exported when it is sampled: always in a trace the host
//! starts, and in a client's trace as the client's `traceparent` flags say
//! (`trace_context`). The processor holds at most 2,048 spans waiting
//! (more are dropped, not queued), and the SDK's `OTEL_BSP_*` variables
//! tune it. Owns the exporter and its lifecycle; not the spans' content
//! (`telemetry`) nor the trace context (`trace_context`).

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use opentelemetry::trace::{SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState};
use opentelemetry::{InstrumentationScope, KeyValue};
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, SpanData, SpanEvents, SpanLinks, SpanProcessor,
};

use crate::trace_context::TraceParent;

/// The spans waiting for export, at most.
const MAX_QUEUED: usize = 2048;

/// The most of a collector's answer read.
const MAX_ANSWER_BYTES: usize = 4096;

/// How long one export may take, connection included.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

/// Where and as whom spans are exported (`[telemetry]`).
#[derive(Debug, Clone)]
pub struct OtlpSettings {
    /// The collector's OTLP/HTTP base URL (`http://collector:4318`); spans
    /// go to its `/v1/traces`. https, or http when no header is sent or the
    /// collector is on loopback.
    pub endpoint: String,
    /// Headers sent with each export, each read from the environment
    /// variable named: header → variable.
    pub headers_env: Vec<(String, String)>,
    /// The `service.name` of the spans.
    pub service_name: String,
}

/// The exporter could not be set up: the text names the setting at fault,
/// never a header's value.
#[derive(Debug, thiserror::Error)]
#[error("[telemetry]: {0}")]
pub struct OtlpError(String);

/// The span export, running: hand it to the front, and
/// [`shutdown`](Self::shutdown) it after serving, which sends what waits.
#[derive(Debug)]
pub struct SpanExport {
    processor: BatchSpanProcessor,
    scope: InstrumentationScope,
}

/// One request's span, ended.
pub(super) struct Ended {
    pub(super) name: String,
    pub(super) trace: TraceParent,
    pub(super) parent: Option<TraceParent>,
    pub(super) start: SystemTime,
    pub(super) took: Duration,
    pub(super) attributes: Vec<(&'static str, String)>,
    pub(super) error: Option<String>,
}

impl SpanExport {
    /// Check `settings`, read the headers' variables and start the
    /// exporter. Must run inside a Tokio runtime: exports run on it.
    pub fn start(settings: &OtlpSettings) -> Result<Self, OtlpError> {
        let url = traces_url(&settings.endpoint, !settings.headers_env.is_empty())?;
        let mut headers = HashMap::new();
        for (name, var) in &settings.headers_env {
            http::HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| OtlpError(format!("`{}` is not a header name", crate::bounds::label(name))))?;
            let value = std::env::var(var).map_err(|_| {
                OtlpError(format!(
                    "header `{name}` is read from the environment variable `{var}`, which is not set"
                ))
            })?;
            if http::HeaderValue::from_str(&value).is_err() {
                return Err(OtlpError(format!(
                    "the environment variable `{var}` (header `{name}`) is not a header value"
                )));
            }
            crate::secrets::held::hold([(name.as_str(), value.as_str())]);
            headers.insert(name.clone(), value);
        }
        let client = OnTokio {
            client: crate::http_client::builder()
                .timeout(EXPORT_TIMEOUT)
                .build()
                .map_err(|e| OtlpError(format!("no HTTP client: {e}")))?,
            runtime: tokio::runtime::Handle::try_current()
                .map_err(|_| OtlpError("the exporter needs a Tokio runtime".into()))?,
            endpoint: url.clone(),
            last_failure: Arc::default(),
        };
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(client)
            .with_endpoint(url)
            .with_timeout(EXPORT_TIMEOUT)
            .with_headers(headers)
            .build()
            .map_err(|e| OtlpError(format!("the exporter did not start: {e}")))?;
        let config = BatchConfigBuilder::default()
            .with_max_queue_size(MAX_QUEUED)
            .build();
        let mut processor = BatchSpanProcessor::builder(exporter)
            .with_batch_config(config)
            .build();
        processor.set_resource(
            &Resource::builder_empty()
                .with_service_name(settings.service_name.clone())
                .build(),
        );
        Ok(Self {
            processor,
            scope: InstrumentationScope::builder("toolhost")
                .with_version(env!("CARGO_PKG_VERSION"))
                .build(),
        })
    }

    /// Queue `span` for export, if its trace is sampled.
    pub(super) fn record(&self, span: Ended) {
        if !span.trace.sampled() {
            return;
        }
        let flags = TraceFlags::SAMPLED;
        let status = match span.error {
            Some(error) => Status::Error {
                description: Cow::Owned(error),
            },
            None => Status::Unset,
        };
        let mut attributes: Vec<KeyValue> = span
            .attributes
            .into_iter()
            .map(|(key, value)| KeyValue::new(key, value))
            .collect();
        if let Status::Error { description } = &status {
            attributes.push(KeyValue::new("error.type", description.clone()));
        }
        self.processor.on_end(SpanData {
            span_context: SpanContext::new(
                TraceId::from_bytes(span.trace.trace_id_bytes()),
                SpanId::from_bytes(span.trace.span_id_bytes()),
                flags,
                false,
                TraceState::NONE,
            ),
            parent_span_id: span
                .parent
                .map_or(SpanId::INVALID, |p| SpanId::from_bytes(p.span_id_bytes())),
            parent_span_is_remote: span.parent.is_some(),
            span_kind: SpanKind::Server,
            name: Cow::Owned(span.name),
            start_time: span.start,
            end_time: span.start + span.took,
            attributes,
            dropped_attributes_count: 0,
            events: SpanEvents::default(),
            links: SpanLinks::default(),
            status,
            instrumentation_scope: self.scope.clone(),
        });
    }

    /// Send the spans still waiting and stop. The processor's thread waits
    /// on exports that run on the runtime, so it is waited for off it.
    pub async fn shutdown(self: &Arc<Self>) {
        let export = self.clone();
        let stopped = tokio::task::spawn_blocking(move || export.processor.shutdown()).await;
        if let Ok(Err(e)) = stopped {
            tracing::warn!("[telemetry]: the spans waiting were not all exported: {e}");
        }
    }
}

/// `endpoint`'s `/v1/traces`, if it is a URL spans may go to: https, or
/// http to loopback or with no `headers` (which would be sent in clear).
fn traces_url(endpoint: &str, headers: bool) -> Result<String, OtlpError> {
    let url = reqwest::Url::parse(endpoint).map_err(|e| {
        OtlpError(format!(
            "endpoint `{}` is not a URL: {e}",
            crate::bounds::label(endpoint)
        ))
    })?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err(OtlpError(
            "the endpoint holds credentials: give them as a header read from the environment (`headers_env`)"
                .into(),
        ));
    }
    match url.scheme() {
        "https" => {}
        "http" if !headers || crate::http_client::is_loopback(&url) => {}
        "http" => {
            return Err(OtlpError(format!(
                "endpoint `{url}` is plain http to another machine, and its headers would cross the \
                 network in clear: use https"
            )));
        }
        other => {
            return Err(OtlpError(format!(
                "endpoint scheme `{other}`: http or https only"
            )));
        }
    }
    Ok(format!("{}/v1/traces", url.as_str().trim_end_matches('/')))
}

/// The exporter's HTTP client: the host's reqwest client, each request run
/// on the Tokio runtime (the batch processor exports from a thread of its
/// own), its failures logged at most once a minute, without the headers.
#[derive(Debug)]
struct OnTokio {
    client: reqwest::Client,
    runtime: tokio::runtime::Handle,
    endpoint: String,
    last_failure: Arc<Mutex<Option<Instant>>>,
}

impl OnTokio {
    fn failed(&self, why: &str) {
        let mut last = self.last_failure.lock().unwrap_or_else(|e| e.into_inner());
        if last.is_none_or(|at| at.elapsed() >= Duration::from_secs(60)) {
            *last = Some(Instant::now());
            tracing::warn!("[telemetry]: exporting spans to {} failed: {why}", self.endpoint);
        }
    }
}

#[async_trait::async_trait]
impl opentelemetry_http::HttpClient for OnTokio {
    async fn send_bytes(
        &self,
        request: http::Request<bytes::Bytes>,
    ) -> Result<http::Response<bytes::Bytes>, opentelemetry_http::HttpError> {
        let request = reqwest::Request::try_from(request)?;
        let client = self.client.clone();
        let sent = self
            .runtime
            .spawn(async move {
                let mut response = client.execute(request).await?;
                let status = response.status();
                // A collector's answer is a small status: its body is read
                // no further than a bound.
                let mut body = Vec::new();
                while body.len() < MAX_ANSWER_BYTES
                    && let Ok(Some(chunk)) = response.chunk().await
                {
                    body.extend_from_slice(&chunk);
                }
                body.truncate(MAX_ANSWER_BYTES);
                Ok::<_, reqwest::Error>((status, bytes::Bytes::from(body)))
            })
            .await;
        let (status, body) = match sent {
            Ok(Ok(answer)) => answer,
            Ok(Err(e)) => {
                let why = e.without_url().to_string();
                self.failed(&why);
                return Err(why.into());
            }
            Err(e) => return Err(e.to_string().into()),
        };
        if !status.is_success() {
            self.failed(&format!("status {status}"));
        }
        Ok(http::Response::builder().status(status).body(body)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_endpoint_is_checked_and_its_traces_path_added() {
        for (endpoint, headers, expected) in [
            (
                "http://127.0.0.1:4318",
                true,
                Some("http://127.0.0.1:4318/v1/traces"),
            ),
            ("http://[::1]:4318/", true, Some("http://[::1]:4318/v1/traces")),
            ("http://localhost:4318", true, None),
            (
                "https://otel.example/otlp",
                true,
                Some("https://otel.example/otlp/v1/traces"),
            ),
            (
                "http://collector:4318",
                false,
                Some("http://collector:4318/v1/traces"),
            ),
            ("http://collector:4318", true, None),
            ("https://key:secret@otel.example", false, None),
            ("ftp://otel.example", false, None),
            ("not a url", false, None),
        ] {
            assert_eq!(
                traces_url(endpoint, headers).ok().as_deref(),
                expected,
                "{endpoint} {headers}"
            );
        }
        let err = traces_url("https://key:secret@otel.example", false)
            .unwrap_err()
            .to_string();
        assert!(!err.contains("secret"), "{err}");
    }

    #[tokio::test]
    async fn a_header_from_an_unset_variable_names_it_and_no_value_is_shown() {
        let settings = |var: &str| OtlpSettings {
            endpoint: "http://127.0.0.1:9".into(),
            headers_env: vec![("authorization".into(), var.into())],
            service_name: "toolhost".into(),
        };
        let err = SpanExport::start(&settings("TOOLHOST_TEST_OTLP_UNSET"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("TOOLHOST_TEST_OTLP_UNSET") && err.contains("authorization"),
            "{err}"
        );
        // SAFETY: no other test of this binary reads this variable.
        unsafe { std::env::set_var("TOOLHOST_TEST_OTLP_BAD", "Bearer s3cret\nX-Evil: 1") };
        let err = SpanExport::start(&settings("TOOLHOST_TEST_OTLP_BAD"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("not a header value") && !err.contains("s3cret"),
            "{err}"
        );
    }
}
