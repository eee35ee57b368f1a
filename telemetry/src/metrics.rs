//! Prometheus metrics: one registry per service instance (not a global, so that several
//! services can run in one test process), the RPC metrics every gRPC server records, and the
//! `/metrics` admin endpoint (`--metrics-addr`).

use std::{
    net::SocketAddr,
    sync::{Arc, Mutex},
};

use prometheus_client::{
    encoding::{EncodeLabelSet, text::encode},
    metrics::{counter::Counter, family::Family, gauge::Gauge, histogram::Histogram},
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

/// The process's own gauges, read at each scrape: what a soak test watches for leaks.
#[derive(Clone, Default)]
struct ProcessGauges {
    /// `process_open_fds`.
    fds: Gauge,
    /// `process_resident_memory_bytes`.
    rss: Gauge,
    /// `tokio_alive_tasks`: tasks spawned and not finished.
    tasks: Gauge,
}

impl ProcessGauges {
    fn refresh(&self) {
        if let Ok(dir) = std::fs::read_dir("/proc/self/fd") {
            self.fds.set(dir.count() as i64);
        }
        // The second field of statm is resident pages.
        if let Some(pages) = std::fs::read_to_string("/proc/self/statm")
            .ok()
            .and_then(|s| s.split_whitespace().nth(1)?.parse::<i64>().ok())
        {
            self.rss.set(pages * 4096);
        }
        if let Ok(h) = tokio::runtime::Handle::try_current() {
            self.tasks.set(h.metrics().num_alive_tasks() as i64);
        }
    }
}

/// A service's metrics registry.
#[derive(Clone)]
pub struct Metrics {
    registry: Arc<Mutex<Registry>>,
    /// The RPC metrics, recorded by [`crate::GrpcTraceLayer`].
    pub rpc: RpcMetrics,
    process: ProcessGauges,
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
        let process = ProcessGauges::default();
        registry.register(
            "process_open_fds",
            "Open file descriptors of the process (sockets included)",
            process.fds.clone(),
        );
        registry.register(
            "process_resident_memory_bytes",
            "Resident memory of the process in bytes",
            process.rss.clone(),
        );
        registry.register(
            "tokio_alive_tasks",
            "Tasks spawned on the runtime and not finished",
            process.tasks.clone(),
        );
        Self {
            registry: Arc::new(Mutex::new(registry)),
            rpc,
            process,
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
        self.process.refresh();
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
