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

/// A method's streaming type, as go-grpc-prometheus labels it (`grpc_type`).
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum RpcType {
    /// One request, one response.
    Unary,
    /// A stream of requests, one response.
    ClientStream,
    /// One request, a stream of responses (our Watches).
    ServerStream,
    /// Both streamed (storage's GuaranteedUpdate).
    BidiStream,
}

impl RpcType {
    /// The type of a method declared `client_streaming` / `server_streaming`.
    pub fn of(client_streaming: bool, server_streaming: bool) -> Self {
        match (client_streaming, server_streaming) {
            (false, false) => Self::Unary,
            (true, false) => Self::ClientStream,
            (false, true) => Self::ServerStream,
            (true, true) => Self::BidiStream,
        }
    }

    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unary => "unary",
            Self::ClientStream => "client_stream",
            Self::ServerStream => "server_stream",
            Self::BidiStream => "bidi_stream",
        }
    }
}

/// Labels of one served method (go-grpc-prometheus's names, which Grafana's gRPC dashboards
/// query).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RpcMethodLabels {
    /// `unary`, `client_stream`, `server_stream` or `bidi_stream`.
    pub grpc_type: String,
    /// Fully qualified gRPC service, e.g. `storage.v1.Storage`.
    pub grpc_service: String,
    /// Method, e.g. `Create`.
    pub grpc_method: String,
}

/// Labels of one RPC outcome.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RpcLabels {
    /// `unary`, `client_stream`, `server_stream` or `bidi_stream`.
    pub grpc_type: String,
    /// Fully qualified gRPC service, e.g. `storage.v1.Storage`.
    pub grpc_service: String,
    /// Method, e.g. `Create`.
    pub grpc_method: String,
    /// gRPC status code name, e.g. `OK`, `ABORTED`.
    pub grpc_code: String,
}

/// What every gRPC server records per RPC, under go-grpc-prometheus's names.
#[derive(Clone)]
pub struct RpcMetrics {
    /// `grpc_server_started_total{grpc_type,grpc_service,grpc_method}`.
    pub started: Family<RpcMethodLabels, Counter>,
    /// `grpc_server_handled_total{grpc_type,grpc_service,grpc_method,grpc_code}`.
    pub handled: Family<RpcLabels, Counter>,
    /// `grpc_server_handling_seconds{grpc_type,grpc_service,grpc_method}`: unary calls only; a
    /// watch's duration is how long the client watched, which would swamp every quantile.
    pub handling: LatencyFamily<RpcMethodLabels>,
}

impl RpcMetrics {
    /// Creates the series of every served method (`/pkg.Service/Method` -> type), so that
    /// dashboards and alerts see zeros instead of absent series before the first call
    /// (go-grpc-prometheus's `InitializeMetrics`).
    pub fn initialize<'a>(&self, methods: impl IntoIterator<Item = (&'a String, &'a RpcType)>) {
        for (path, ty) in methods {
            let p = path.trim_start_matches('/');
            let Some((service, method)) = p.split_once('/') else {
                continue;
            };
            let labels = RpcMethodLabels {
                grpc_type: ty.as_str().to_string(),
                grpc_service: service.to_string(),
                grpc_method: method.to_string(),
            };
            let _ = self.started.get_or_create(&labels);
            let _ = self.handled.get_or_create(&RpcLabels {
                grpc_type: labels.grpc_type.clone(),
                grpc_service: labels.grpc_service.clone(),
                grpc_method: labels.grpc_method.clone(),
                grpc_code: "OK".into(),
            });
            if *ty == RpcType::Unary {
                let _ = self.handling.get_or_create(&labels);
            }
        }
    }
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
    /// `process_cpu_seconds_total`: user and system CPU time.
    cpu: Counter<f64, std::sync::atomic::AtomicU64>,
    /// `process_start_time_seconds`: since the Unix epoch.
    start: Gauge<f64, std::sync::atomic::AtomicU64>,
}

/// Clock ticks per second of `/proc/<pid>/stat` (`sysconf(_SC_CLK_TCK)`, 100 on every Linux
/// architecture we build for; reading it would need libc for one constant).
const CLOCK_TICKS: f64 = 100.0;

/// (CPU seconds, start time in seconds since the epoch) from `/proc/self/stat` and the boot
/// time in `/proc/stat`.
fn cpu_and_start() -> Option<(f64, Option<f64>)> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name, which may itself hold spaces and parentheses; `state` is
    // field 3, so utime (14), stime (15) and starttime (22) are at 11, 12 and 19 here.
    let rest: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks = |i: usize| rest.get(i).and_then(|v| v.parse::<f64>().ok());
    let cpu = (ticks(11)? + ticks(12)?) / CLOCK_TICKS;
    let boot = std::fs::read_to_string("/proc/stat").ok().and_then(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("btime "))
            .and_then(|v| v.trim().parse::<f64>().ok())
    });
    let start = boot.zip(ticks(19)).map(|(b, t)| b + t / CLOCK_TICKS);
    Some((cpu, start))
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
        if let Some((cpu, start)) = cpu_and_start() {
            // A counter only goes up: add what was spent since the last scrape.
            let delta = cpu - self.cpu.get();
            if delta > 0.0 {
                self.cpu.inc_by(delta);
            }
            if let Some(start) = start {
                self.start.set(start);
            }
        }
    }
}

/// Work a scrape runs before it renders (see [`Metrics::before_scrape`]).
pub type ScrapeHook =
    Arc<dyn Fn() -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> + Send + Sync>;

/// Longest a scrape waits for its hooks; past it, it renders what there is.
pub const SCRAPE_HOOK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// A service's metrics registry.
#[derive(Clone)]
pub struct Metrics {
    registry: Arc<Mutex<Registry>>,
    /// The RPC metrics, recorded by [`crate::GrpcTraceLayer`].
    pub rpc: RpcMetrics,
    process: ProcessGauges,
    hooks: Arc<Mutex<Vec<ScrapeHook>>>,
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
            started: Family::default(),
            handled: Family::default(),
            handling: latency_family(),
        };
        registry.register(
            "grpc_server_started",
            "RPCs started on the server",
            rpc.started.clone(),
        );
        registry.register(
            "grpc_server_handled",
            "RPCs completed on the server, by status code",
            rpc.handled.clone(),
        );
        registry.register(
            "grpc_server_handling_seconds",
            "Time from the start of a unary RPC to its status, in seconds (streams are not observed)",
            rpc.handling.clone(),
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
            "process_cpu_seconds",
            "User and system CPU time spent by the process, in seconds",
            process.cpu.clone(),
        );
        registry.register(
            "process_start_time_seconds",
            "Start time of the process since the Unix epoch, in seconds",
            process.start.clone(),
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
            hooks: Arc::default(),
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

    /// Runs `hook` before each scrape renders (bounded by [`SCRAPE_HOOK_TIMEOUT`]): gauges
    /// that cost a request to refresh are refreshed only when someone reads them.
    pub fn before_scrape(&self, hook: ScrapeHook) {
        if let Ok(mut h) = self.hooks.lock() {
            h.push(hook);
        }
    }

    /// Runs the scrape hooks, then renders.
    pub async fn scrape(&self) -> String {
        let hooks: Vec<ScrapeHook> = self.hooks.lock().map(|h| h.clone()).unwrap_or_default();
        for hook in hooks {
            let _ = tokio::time::timeout(SCRAPE_HOOK_TIMEOUT, hook()).await;
        }
        self.render()
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
                        m.scrape().await,
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
