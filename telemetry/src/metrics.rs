//! Prometheus metrics: one registry per service instance (not a global, so that several
//! services can run in one test process), the RPC metrics every gRPC server records, and the
//! `/metrics` admin endpoint (`--metrics-addr`).

use std::{
    net::SocketAddr,
    sync::{Arc, Mutex},
};

use prometheus_client::{
    encoding::{EncodeLabelSet, text::encode},
    metrics::{counter::Counter, family::Family, histogram::Histogram},
    registry::Registry,
};

/// Latency buckets in seconds: 100 µs .. ~13 s.
pub fn latency_buckets() -> impl Iterator<Item = f64> {
    prometheus_client::metrics::histogram::exponential_buckets(0.0001, 2.0, 18)
}

/// A histogram family whose histograms use [`latency_buckets`].
pub type LatencyFamily<L> = Family<L, Histogram, fn() -> Histogram>;

/// Creates a [`LatencyFamily`].
pub fn latency_family<L: Clone + std::hash::Hash + Eq>() -> LatencyFamily<L> {
    Family::new_with_constructor(|| Histogram::new(latency_buckets()))
}

/// Labels of one RPC outcome.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RpcLabels {
    /// Fully qualified gRPC service, e.g. `storage.v1.Storage`.
    pub service: String,
    /// Method, e.g. `Create`.
    pub method: String,
    /// gRPC status code name, e.g. `OK`, `ABORTED`.
    pub code: String,
}

/// What every gRPC server records per RPC.
#[derive(Clone)]
pub struct RpcMetrics {
    /// `grpc_server_requests_total{service,method,code}`.
    pub requests: Family<RpcLabels, Counter>,
    /// `grpc_server_request_duration_seconds{service,method,code}`.
    pub duration: LatencyFamily<RpcLabels>,
}

/// A service's metrics registry.
#[derive(Clone)]
pub struct Metrics {
    registry: Arc<Mutex<Registry>>,
    /// The RPC metrics, recorded by [`crate::GrpcTraceLayer`].
    pub rpc: RpcMetrics,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// A registry holding the RPC metrics.
    pub fn new() -> Self {
        let mut registry = Registry::default();
        let rpc = RpcMetrics {
            requests: Family::default(),
            duration: latency_family(),
        };
        registry.register(
            "grpc_server_requests",
            "gRPC requests handled, by service, method and status code",
            rpc.requests.clone(),
        );
        registry.register(
            "grpc_server_request_duration_seconds",
            "gRPC request latency in seconds, by service, method and status code",
            rpc.duration.clone(),
        );
        Self {
            registry: Arc::new(Mutex::new(registry)),
            rpc,
        }
    }

    /// Registers a service-specific metric.
    pub fn register(
        &self,
        name: &str,
        help: &str,
        metric: impl prometheus_client::registry::Metric,
    ) {
        if let Ok(mut r) = self.registry.lock() {
            r.register(name, help, metric);
        }
    }

    /// The text exposition format.
    pub fn render(&self) -> String {
        let mut out = String::new();
        if let Ok(r) = self.registry.lock() {
            // Writing into a String cannot fail.
            let _ = encode(&mut out, &r);
        }
        out
    }

    /// Serves `GET /metrics` on `listener` until `shutdown` resolves.
    pub async fn serve(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let app = axum::Router::new().route(
            "/metrics",
            axum::routing::get(move || {
                let m = self.clone();
                async move {
                    (
                        [(
                            http::header::CONTENT_TYPE,
                            "application/openmetrics-text; version=1.0.0; charset=utf-8",
                        )],
                        m.render(),
                    )
                }
            }),
        );
        axum::serve(listener, app)
            .with_graceful_shutdown(shutdown)
            .await
    }

    /// Binds `addr` and serves `/metrics` in the background.
    pub async fn spawn_server(
        &self,
        addr: SocketAddr,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<SocketAddr> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let local = listener.local_addr()?;
        let me = self.clone();
        tokio::spawn(async move {
            if let Err(e) = me.serve(listener, shutdown).await {
                tracing::warn!(error = %e, "metrics endpoint stopped");
            }
        });
        Ok(local)
    }
}
