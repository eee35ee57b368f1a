//! One place that turns `tracing` into logs and OpenTelemetry spans.
//!
//! Configuration is only what OpenTelemetry standardises, so the same variables work for every
//! service in the docker-compose stack:
//! - `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`): where spans go,
//!   over OTLP/gRPC. Unset: no exporter is built and spans cost only what `tracing` costs.
//! - `OTEL_SERVICE_NAME`: the `service.name` resource (default: the binary's name).
//! - `OTEL_TRACES_SAMPLER` / `OTEL_TRACES_SAMPLER_ARG`: read by the SDK itself.
//! - `OTEL_SDK_DISABLED=true`: no exporter, whatever else is set.
//!
//! Logs go to stderr as text or JSON (`--log-format`), filtered by `RUST_LOG` (default `info`).
//! They carry the trace id: the RPC span records a `trace_id` field, which both formats print
//! with the span context.

use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::{Resource, propagation::TraceContextPropagator, trace::SdkTracerProvider};
use tracing_subscriber::{EnvFilter, Layer, filter::Targets, layer::SubscriberExt};

/// Log line format.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object per line.
    Json,
}

/// Telemetry settings of one service.
#[derive(Clone, Debug)]
pub struct TelemetryConfig {
    /// `service.name` of exported spans.
    pub service_name: String,
    /// OTLP/gRPC endpoint; `None` disables export.
    pub otlp_endpoint: Option<String>,
    /// Log line format.
    pub log_format: LogFormat,
    /// `RUST_LOG`-style filter for log lines.
    pub log_filter: String,
}

impl TelemetryConfig {
    /// Reads the standard `OTEL_*` variables and `RUST_LOG`.
    pub fn from_env(default_service_name: &str, log_format: LogFormat) -> Self {
        Self::from_lookup(default_service_name, log_format, |k| std::env::var(k).ok())
    }

    /// [`Self::from_env`] over any variable lookup (testable without touching the process
    /// environment).
    pub fn from_lookup(
        default_service_name: &str,
        log_format: LogFormat,
        var: impl Fn(&str) -> Option<String>,
    ) -> Self {
        let non_empty = |k: &str| var(k).filter(|v| !v.trim().is_empty());
        let disabled =
            non_empty("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true"));
        let otlp_endpoint = if disabled {
            None
        } else {
            non_empty("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
                .or_else(|| non_empty("OTEL_EXPORTER_OTLP_ENDPOINT"))
        };
        Self {
            service_name: non_empty("OTEL_SERVICE_NAME")
                .unwrap_or_else(|| default_service_name.to_string()),
            otlp_endpoint,
            log_format,
            log_filter: non_empty("RUST_LOG").unwrap_or_else(|| "info".to_string()),
        }
    }
}

/// Keeps the exporter alive; [`TelemetryGuard::shutdown`] flushes the spans still buffered.
#[must_use = "dropping the guard without shutdown() may lose the last spans"]
pub struct TelemetryGuard {
    provider: Option<SdkTracerProvider>,
}

impl TelemetryGuard {
    /// Flushes buffered spans and stops the exporter. Blocking; call it from a multi-threaded
    /// runtime or outside one (the SDK's flush hangs on a current-thread runtime).
    pub fn shutdown(mut self) {
        if let Some(p) = self.provider.take() {
            if let Err(e) = p.force_flush() {
                eprintln!("telemetry: flushing spans failed: {e}");
            }
            if let Err(e) = p.shutdown_with_timeout(Duration::from_secs(5)) {
                eprintln!("telemetry: exporter shutdown failed: {e}");
            }
        }
    }

    /// Whether spans are exported.
    pub fn exporting(&self) -> bool {
        self.provider.is_some()
    }
}

/// Errors building the telemetry pipeline.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// The OTLP exporter could not be built (bad endpoint).
    #[error("cannot build the OTLP exporter for {endpoint}: {source}")]
    Exporter {
        /// The endpoint.
        endpoint: String,
        /// The cause.
        source: opentelemetry_otlp::ExporterBuildError,
    },
    /// A global subscriber was already installed.
    #[error("a tracing subscriber is already installed")]
    AlreadyInstalled,
}

/// Builds the subscriber for `config` without installing it: the caller sets it as the global
/// default ([`init`]) or as a thread default (tests that run several services in one process).
pub fn build(
    config: &TelemetryConfig,
) -> Result<(tracing::Dispatch, TelemetryGuard), TelemetryError> {
    // The SDK's default propagator is a no-op: without this no traceparent is read or written.
    opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());

    let filter = EnvFilter::try_new(&config.log_filter).unwrap_or_else(|_| EnvFilter::new("info"));
    let fmt = match config.log_format {
        LogFormat::Text => tracing_subscriber::fmt::layer()
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .with_writer(std::io::stderr)
            .boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .json()
            .with_current_span(true)
            .with_span_list(false)
            .with_writer(std::io::stderr)
            .boxed(),
    }
    .with_filter(filter);

    let (otel, provider) = match &config.otlp_endpoint {
        None => (None, None),
        Some(endpoint) => {
            let exporter = opentelemetry_otlp::SpanExporter::builder()
                .with_tonic()
                .with_endpoint(endpoint.clone())
                .with_timeout(Duration::from_secs(5))
                .build()
                .map_err(|source| TelemetryError::Exporter {
                    endpoint: endpoint.clone(),
                    source,
                })?;
            let provider = SdkTracerProvider::builder()
                .with_batch_exporter(exporter)
                .with_resource(
                    Resource::builder()
                        .with_service_name(config.service_name.clone())
                        .build(),
                )
                .build();
            let tracer = provider.tracer(config.service_name.clone());
            // The exporter's own gRPC traffic must not become spans that get exported...
            let quiet = Targets::new()
                .with_default(tracing::Level::TRACE)
                .with_target("h2", tracing::level_filters::LevelFilter::OFF)
                .with_target("hyper", tracing::level_filters::LevelFilter::OFF)
                .with_target("hyper_util", tracing::level_filters::LevelFilter::OFF)
                .with_target("tonic", tracing::level_filters::LevelFilter::OFF)
                .with_target("tower", tracing::level_filters::LevelFilter::OFF)
                .with_target("opentelemetry", tracing::level_filters::LevelFilter::OFF)
                .with_target(
                    "opentelemetry_sdk",
                    tracing::level_filters::LevelFilter::OFF,
                )
                .with_target(
                    "opentelemetry_otlp",
                    tracing::level_filters::LevelFilter::OFF,
                );
            // Location, thread, target and busy/idle attributes cost allocations on every
            // span and say little about an RPC; context activation is not needed because
            // propagation reads each span's own context.
            let layer = tracing_opentelemetry::layer()
                .with_tracer(tracer)
                .with_location(false)
                .with_threads(false)
                .with_target(false)
                .with_tracked_inactivity(false)
                .with_context_activation(false)
                .with_filter(quiet);
            (Some(layer), Some(provider))
        }
    };

    let subscriber = tracing_subscriber::registry().with(fmt).with(otel);
    Ok((
        tracing::Dispatch::new(subscriber),
        TelemetryGuard { provider },
    ))
}

/// Builds the subscriber for `config` and installs it process-wide.
pub fn init(config: &TelemetryConfig) -> Result<TelemetryGuard, TelemetryError> {
    let (dispatch, guard) = build(config)?;
    tracing::dispatcher::set_global_default(dispatch)
        .map_err(|_| TelemetryError::AlreadyInstalled)?;
    Ok(guard)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_standard_variables() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        let c = TelemetryConfig::from_lookup("storage-svc", LogFormat::Text, env(&[]));
        assert_eq!(c.service_name, "storage-svc");
        assert_eq!(c.otlp_endpoint, None);
        assert_eq!(c.log_filter, "info");

        let c = TelemetryConfig::from_lookup(
            "storage-svc",
            LogFormat::Json,
            env(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://jaeger:4317"),
                ("OTEL_SERVICE_NAME", "storage"),
                ("RUST_LOG", "debug"),
            ]),
        );
        assert_eq!(c.otlp_endpoint.as_deref(), Some("http://jaeger:4317"));
        assert_eq!(c.service_name, "storage");
        assert_eq!(c.log_filter, "debug");

        let c = TelemetryConfig::from_lookup(
            "x",
            LogFormat::Text,
            env(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://jaeger:4317"),
                ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://traces:4317"),
            ]),
        );
        assert_eq!(c.otlp_endpoint.as_deref(), Some("http://traces:4317"));

        let c = TelemetryConfig::from_lookup(
            "x",
            LogFormat::Text,
            env(&[
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://jaeger:4317"),
                ("OTEL_SDK_DISABLED", "TRUE"),
            ]),
        );
        assert_eq!(c.otlp_endpoint, None);
    }
}
