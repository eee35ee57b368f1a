//! Plumbing shared by storage-svc and registry-svc: everything that is about *running* a gRPC
//! service rather than about objects.
//!
//! - [`tracing_setup`]: one `init` that wires `tracing` to logs (text or JSON) and, when the
//!   standard `OTEL_*` variables ask for it, to an OTLP/gRPC exporter; returns a guard that
//!   flushes spans on shutdown.
//! - [`grpc_trace`]: one tower layer for servers and one for clients: a span per RPC, W3C
//!   `traceparent` extracted or injected, status codes and Prometheus RPC metrics recorded.
//! - [`metrics`]: the Prometheus registry and the `/metrics` admin endpoint.
//! - [`deadline`]: the caller's `grpc-timeout`, so work below us ends inside it.
//! - [`health`]: the `healthcheck` subcommand's client (docker-compose healthchecks).
//! - [`inflight`]: `--max-requests-inflight`, refusing calls beyond it at once;
//!   [`oversize`]: a message over the size limit is RESOURCE_EXHAUSTED `RequestEntityTooLarge`.
//! - [`shutdown`]: SIGTERM and SIGINT; [`process`]: the binaries' `main` around `run`;
//! - [`serving`]: health, reflection, stop signal and the trace layer around every server.
//! - [`tls`]: TLS and mutual TLS flags of servers and clients, and the client-name allow-list.

pub mod access;
pub mod deadline;
pub mod grpc_trace;
pub mod health;
pub mod inflight;
pub mod metrics;
pub mod oversize;
pub mod process;
pub mod serving;
pub mod shutdown;
pub mod tls;
pub mod tracing_setup;

pub use deadline::Deadline;
pub use grpc_trace::{GrpcTraceLayer, GrpcTraceService};
pub use metrics::{Metrics, RpcMetrics};
pub use tracing_setup::{LogFormat, TelemetryConfig, TelemetryGuard};

/// `e` and its sources, `: `-separated: tonic's transport errors say only "transport error",
/// and what went wrong (a refused certificate, a closed port) is in their sources.
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut chain = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        chain = format!("{chain}: {s}");
        source = s.source();
    }
    chain
}
