//! The binary's tracing: a log on stderr filtered by `--log-level` or `RUST_LOG` (default
//! `warn`), and with `--otlp-endpoint` an OTLP/HTTP (JSON) export of codemode's spans.
//!
//! Installed by the command line only, after a sandbox worker process has gone its own way
//! (`serve_worker_if_requested` in `main`): a worker's stdout carries frames and its stderr is
//! read by the host for crash messages, so it never gets a subscriber. stdout stays the
//! command's: program output, JSON, or the MCP protocol of `codemode mcp`.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};
use tracing::Level;
use tracing_subscriber::filter::{EnvFilter, Targets};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::{Layer, Registry};

/// The stderr log's filter when neither `--log-level` nor `RUST_LOG` says otherwise: failures
/// the user must hear about (a log file that cannot be written), nothing else.
const DEFAULT_FILTER: &str = "warn";

/// The OTLP/HTTP path of traces, appended to a base `--otlp-endpoint` (as the OpenTelemetry
/// SDKs do with `OTEL_EXPORTER_OTLP_ENDPOINT`).
const TRACES_PATH: &str = "/v1/traces";

/// The installed tracing; [`Telemetry::shutdown`] exports the spans still buffered.
pub struct Telemetry {
    provider: Option<SdkTracerProvider>,
}

impl Telemetry {
    /// Exports the spans still buffered and stops the exporter. The process exits with
    /// `std::process::exit` right after, which would drop them.
    pub fn shutdown(self) {
        if let Some(provider) = self.provider
            && let Err(e) = provider.shutdown()
        {
            eprintln!("codemode: exporting the last spans over OTLP failed: {e}");
        }
    }
}

/// Checks a `--log-level` value: a level (`debug`) or any `RUST_LOG` directive list
/// (`codemode=debug,rmcp=info`).
pub fn parse_log_level(value: &str) -> Result<String, String> {
    EnvFilter::try_new(value)
        .map(|_| value.to_string())
        .map_err(|e| e.to_string())
}

/// Installs the global subscriber. `log_level` (the flag) beats `RUST_LOG`, which beats `warn`.
///
/// # Errors
/// The OTLP exporter could not be built from `otlp_endpoint`, or a subscriber was already set.
pub fn install(log_level: Option<&str>, otlp_endpoint: Option<&str>) -> Result<Telemetry, String> {
    let log = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_filter(log_filter(log_level));
    let provider = otlp_endpoint.map(tracer_provider).transpose()?;
    // Only codemode's own spans are exported, whatever the log shows: the HTTP client that
    // sends them would otherwise trace its own exports.
    let export = provider.as_ref().map(|provider| {
        tracing_opentelemetry::layer()
            .with_tracer(provider.tracer("codemode"))
            .with_filter(Targets::new().with_target("codemode", Level::INFO))
    });
    let subscriber = Registry::default().with(log).with(export);
    tracing::subscriber::set_global_default(subscriber).map_err(|e| e.to_string())?;
    Ok(Telemetry { provider })
}

fn log_filter(flag: Option<&str>) -> EnvFilter {
    if let Some(directives) = flag {
        // Checked by `parse_log_level` when the arguments were parsed.
        return EnvFilter::try_new(directives).unwrap_or_else(|_| EnvFilter::new(DEFAULT_FILTER));
    }
    match std::env::var(EnvFilter::DEFAULT_ENV) {
        Ok(directives) if !directives.trim().is_empty() => EnvFilter::try_new(&directives)
            .unwrap_or_else(|e| {
                eprintln!("codemode: ignoring RUST_LOG={directives:?}: {e}");
                EnvFilter::new(DEFAULT_FILTER)
            }),
        _ => EnvFilter::new(DEFAULT_FILTER),
    }
}

/// A provider that batches spans and posts them as OTLP/JSON to `endpoint`. The batch runs on
/// a thread of its own with a blocking HTTP client, so no async runtime has to outlive a
/// command for its spans to leave.
fn tracer_provider(endpoint: &str) -> Result<SdkTracerProvider, String> {
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpJson)
        .with_endpoint(traces_url(endpoint))
        .build()
        .map_err(|e| format!("--otlp-endpoint {endpoint}: {e}"))?;
    let mut resource = Resource::builder();
    // OTEL_SERVICE_NAME, read by the builder, names the service when set.
    if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
        resource = resource.with_service_name("codemode");
    }
    let resource = resource
        .with_attribute(opentelemetry::KeyValue::new(
            "service.version",
            env!("CARGO_PKG_VERSION"),
        ))
        .build();
    let exporter = ReportFailures {
        inner: exporter,
        endpoint: endpoint.to_string(),
        reported: AtomicBool::new(false),
    };
    Ok(SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource)
        .build())
}

/// The OTLP exporter, saying (once, as a warning) that spans could not be sent: the SDK only
/// reports it through its own internal log, which this build leaves out, so a collector that is
/// down would otherwise go unnoticed.
#[derive(Debug)]
struct ReportFailures {
    inner: opentelemetry_otlp::SpanExporter,
    endpoint: String,
    reported: AtomicBool,
}

impl SpanExporter for ReportFailures {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let result = self.inner.export(batch).await;
        if let Err(e) = &result
            && !self.reported.swap(true, Ordering::Relaxed)
        {
            tracing::warn!("cannot export spans to {}: {e}", self.endpoint);
        }
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

/// The collector's traces URL: a base URL (`http://localhost:4318`) gets `/v1/traces`; a URL
/// that already ends with it is used as given.
fn traces_url(endpoint: &str) -> String {
    let base = endpoint.trim_end_matches('/');
    if base.ends_with(TRACES_PATH) {
        base.to_string()
    } else {
        format!("{base}{TRACES_PATH}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_base_endpoint_gets_the_traces_path_once() {
        assert_eq!(
            traces_url("http://localhost:4318"),
            "http://localhost:4318/v1/traces"
        );
        assert_eq!(
            traces_url("http://localhost:4318/"),
            "http://localhost:4318/v1/traces"
        );
        assert_eq!(
            traces_url("http://collector/v1/traces"),
            "http://collector/v1/traces"
        );
    }

    #[test]
    fn a_log_level_is_any_rust_log_directive_list() {
        assert!(parse_log_level("debug").is_ok());
        assert!(parse_log_level("codemode=debug,rmcp=info").is_ok());
        assert!(parse_log_level("codemode=loud").is_err());
    }
}
