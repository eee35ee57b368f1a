//! What every kubestore gRPC server does around its own services, so that storage-svc and
//! registry-svc differ only in what they serve:
//!
//! - the served services and their methods, read from the descriptor set that reflection serves;
//! - a stop signal shared by the gRPC server and the `/metrics` endpoint;
//! - `grpc.health.v1`: NOT_SERVING until a dependency probe succeeds, following it afterwards
//!   (etcd for storage-svc, storage-svc for registry-svc), and NOT_SERVING again before draining;
//! - reflection over our descriptors and health's;
//! - accepted connections with TCP_NODELAY, and per-connection limits (streams, concurrency);
//! - the tracing/metrics layer on every RPC.

use std::{collections::HashMap, future::Future, sync::Arc, time::Duration};

use prost::Message;

use tokio::{net::TcpListener, sync::watch, task::JoinHandle};
use tonic::transport::{Server, server::TcpIncoming};
use tonic_health::{
    ServingStatus,
    pb::health_server::HealthServer,
    server::{HealthReporter, HealthService},
};
use tower::layer::util::{Identity, Stack};

use crate::{
    GrpcTraceLayer, Metrics,
    inflight::{InflightLimitLayer, RequestTimeouts},
    metrics::RpcType,
    oversize::OversizeLayer,
    tls::{AllowedNamesLayer, ServerTlsArgs, TlsError},
};

/// HTTP/2 streams one client connection may have open at once. Each open watch is a stream,
/// and registry-svc carries its clients' watches to storage-svc over a few connections, so
/// this is generous; it bounds what one connection can make a server hold.
pub const MAX_CONCURRENT_STREAMS: u32 = 4096;

/// Requests of one connection whose handlers run at once; more wait in that connection's queue.
/// A streaming call counts until its handler returns the stream, not while it streams.
pub const MAX_CONCURRENT_REQUESTS_PER_CONNECTION: usize = 256;

/// The health entry (`grpc.health.v1.Health/Check {"service": "kubestore.writes"}`) that says
/// whether writes can succeed. storage-svc turns it NOT_SERVING while etcd has raised an alarm
/// (NOSPACE: etcd is full) or does not answer; registry-svc mirrors storage-svc's. The server's
/// own status ("") stays SERVING meanwhile, because reads still work: a load balancer must not
/// take away reads because writes fail.
pub const WRITES: &str = "kubestore.writes";

/// The layers [`Serving::server`] puts around every service, outermost last.
pub type ServerLayers = Stack<
    OversizeLayer,
    Stack<InflightLimitLayer, Stack<AllowedNamesLayer, Stack<GrpcTraceLayer, Identity>>>,
>;

/// Why a server could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum ServerSetupError {
    /// A TLS flag or file.
    #[error(transparent)]
    Files(#[from] TlsError),
    /// rustls refused the certificate, key or CA.
    #[error("TLS configuration: {0}")]
    Tls(String),
}

/// The server-side plumbing of one service instance.
pub struct Serving {
    /// The service's metrics registry.
    pub metrics: Metrics,
    health: HealthReporter,
    /// Health service names: "" (the whole server) and each gRPC service.
    services: Vec<String>,
    /// `/package.Service/Method` of every served method, with its streaming type (the
    /// others share one metric label).
    methods: Arc<HashMap<String, RpcType>>,
    descriptor_sets: Vec<&'static [u8]>,
    stop: watch::Receiver<bool>,
    /// The in-flight limit of the gRPC server, once built: other transports share it.
    inflight: std::sync::OnceLock<InflightLimitLayer>,
    /// Whether the whole server is SERVING (what its health service says of ""), for other
    /// transports' health endpoints.
    serving: Arc<std::sync::atomic::AtomicBool>,
}

/// The services (`package.Service`) and method paths (`/package.Service/Method`, with their
/// streaming types) declared in encoded `FileDescriptorSet`s.
pub fn declared_methods(descriptor_sets: &[&[u8]]) -> (Vec<String>, HashMap<String, RpcType>) {
    let mut services = Vec::new();
    let mut methods = HashMap::new();
    for set in descriptor_sets {
        let Ok(set) = prost_types::FileDescriptorSet::decode(*set) else {
            continue;
        };
        for file in set.file {
            let package = file.package();
            for svc in &file.service {
                let full = if package.is_empty() {
                    svc.name().to_string()
                } else {
                    format!("{package}.{}", svc.name())
                };
                for m in &svc.method {
                    methods.insert(
                        format!("/{full}/{}", m.name()),
                        RpcType::of(m.client_streaming(), m.server_streaming()),
                    );
                }
                if !services.contains(&full) {
                    services.push(full);
                }
            }
        }
    }
    (services, methods)
}

impl Serving {
    /// Starts the plumbing for the services declared in `descriptor_sets`: every service
    /// NOT_SERVING, `/metrics` on `metrics_listener` (if any), and a stop signal raised when
    /// `shutdown` resolves.
    pub async fn start(
        descriptor_sets: &[&'static [u8]],
        metrics: Metrics,
        metrics_listener: Option<TcpListener>,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Self {
        let (tx, stop) = watch::channel(false);
        tokio::spawn(async move {
            shutdown.await;
            let _ = tx.send(true);
        });
        let (declared, methods) = declared_methods(descriptor_sets);
        metrics.rpc.initialize(&methods);
        let mut all = vec![String::new()];
        all.extend(declared);
        let me = Self {
            metrics,
            health: HealthReporter::new(),
            services: all,
            methods: Arc::new(methods),
            descriptor_sets: descriptor_sets.to_vec(),
            stop,
            inflight: std::sync::OnceLock::new(),
            serving: Arc::default(),
        };
        me.set_health(ServingStatus::NotServing).await;
        if let Some(l) = metrics_listener {
            let (m, stopped) = (me.metrics.clone(), me.stopped());
            tokio::spawn(async move {
                if let Err(e) = m.serve(l, stopped).await {
                    tracing::warn!(error = %e, "metrics endpoint stopped");
                }
            });
        }
        me
    }

    async fn set_health(&self, status: ServingStatus) {
        self.serving.store(
            status == ServingStatus::Serving,
            std::sync::atomic::Ordering::Relaxed,
        );
        for s in &self.services {
            self.health.set_service_status(s.as_str(), status).await;
        }
    }

    /// The stop signal itself, for long-lived streams that must end on shutdown.
    pub fn stop_signal(&self) -> watch::Receiver<bool> {
        self.stop.clone()
    }

    /// Resolves once the stop signal is raised.
    pub fn stopped(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut rx = self.stop.clone();
        async move {
            let _ = rx.wait_for(|s| *s).await;
        }
    }

    /// Probes `dependency` every second and reports SERVING exactly while it answers.
    pub fn follow<F, Fut>(&self, dependency: &'static str, mut probe: F) -> JoinHandle<()>
    where
        F: FnMut() -> Fut + Send + 'static,
        Fut: Future<Output = bool> + Send,
    {
        let health = self.health.clone();
        let services = self.services.clone();
        let serving = self.serving.clone();
        tokio::spawn(async move {
            let mut last = None;
            loop {
                let ok = probe().await;
                serving.store(ok, std::sync::atomic::Ordering::Relaxed);
                if last != Some(ok) {
                    let status = if ok {
                        ServingStatus::Serving
                    } else {
                        ServingStatus::NotServing
                    };
                    for s in &services {
                        health.set_service_status(s.as_str(), status).await;
                    }
                    if ok {
                        tracing::info!("{dependency} answers: SERVING");
                    } else {
                        tracing::warn!("{dependency} does not answer: NOT_SERVING");
                    }
                    last = Some(ok);
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        })
    }

    /// Follows whether writes can succeed, as the health entry [`WRITES`] (the server's own
    /// status is left alone: reads still work). `probe` says why not, for the log.
    pub fn follow_writes<F, Fut>(&self, mut probe: F) -> JoinHandle<()>
    where
        F: FnMut() -> Fut + Send + 'static,
        Fut: Future<Output = Result<(), String>> + Send,
    {
        let health = self.health.clone();
        let mut stop = self.stop.clone();
        tokio::spawn(async move {
            let mut last: Option<bool> = None;
            loop {
                let outcome = probe().await;
                let ok = outcome.is_ok();
                if last != Some(ok) && !*stop.borrow() {
                    let status = if ok {
                        ServingStatus::Serving
                    } else {
                        ServingStatus::NotServing
                    };
                    health.set_service_status(WRITES, status).await;
                    match outcome {
                        Ok(()) => tracing::info!("writes can succeed again: {WRITES} SERVING"),
                        Err(why) => {
                            tracing::warn!("writes cannot succeed ({why}): {WRITES} NOT_SERVING")
                        }
                    }
                    last = Some(ok);
                }
                tokio::select! {
                    _ = stop.wait_for(|s| *s) => return,
                    () = tokio::time::sleep(Duration::from_secs(1)) => {}
                }
            }
        })
    }

    /// The health service to add to the server.
    pub fn health_service(&self) -> HealthServer<HealthService> {
        HealthServer::new(HealthService::from_health_reporter(self.health.clone()))
    }

    /// A server builder with per-connection limits, the trace/metrics layer and, inside it (so
    /// what they answer is traced and counted), at most `max_inflight` calls at once (0 = no
    /// limit) and oversized messages reported as RESOURCE_EXHAUSTED; both name ErrorInfo
    /// `domain`.
    ///
    /// A counted call holds its slot for at most its deadline under `timeouts`.
    ///
    /// With `tls`, connections are TLS (mutual TLS with a client CA), and calls from clients
    /// whose certificate names none of `allowed_names` are refused (none: all allowed).
    pub fn server(
        &self,
        max_inflight: usize,
        timeouts: RequestTimeouts,
        domain: &'static str,
        tls: &ServerTlsArgs,
        allowed_names: Vec<String>,
    ) -> Result<Server<ServerLayers>, ServerSetupError> {
        let mut builder = Server::builder();
        if let Some(config) = tls.config()? {
            builder = builder
                .tls_config(config)
                .map_err(|e| ServerSetupError::Tls(crate::error_chain(&e)))?;
        }
        Ok(builder
            .max_concurrent_streams(Some(MAX_CONCURRENT_STREAMS))
            // Above the inflight limit: calls over the per-connection limit queue (tonic puts
            // that limit outside our layers), so with one at or below it a single channel
            // (what most clients use) would queue calls `--max-requests-inflight` is there to
            // refuse fast.
            .concurrency_limit_per_connection(
                max_inflight.saturating_add(MAX_CONCURRENT_REQUESTS_PER_CONNECTION),
            )
            .layer(GrpcTraceLayer::server(
                self.metrics.rpc.clone(),
                self.methods.clone(),
            ))
            .layer(AllowedNamesLayer::new(allowed_names, domain))
            .layer(
                self.inflight
                    .get_or_init(|| {
                        InflightLimitLayer::new(max_inflight, timeouts, domain, &self.metrics)
                    })
                    .clone(),
            )
            .layer(OversizeLayer::new(domain)))
    }

    /// Whether the server is SERVING now (its health), shared with other transports.
    pub fn serving_flag(&self) -> Arc<std::sync::atomic::AtomicBool> {
        self.serving.clone()
    }

    /// The in-flight limit the gRPC server was built with ([`Self::server`]), for another
    /// transport of the same service to share.
    pub fn inflight(&self) -> Option<InflightLimitLayer> {
        self.inflight.get().cloned()
    }

    /// Reflection, v1 and v1alpha, over the served descriptor sets, health's and the
    /// `google.rpc` error details'.
    pub fn reflection(
        &self,
    ) -> Result<
        (
            tonic_reflection::server::v1::ServerReflectionServer<
                impl tonic_reflection::server::v1::ServerReflection,
            >,
            tonic_reflection::server::v1alpha::ServerReflectionServer<
                impl tonic_reflection::server::v1alpha::ServerReflection,
            >,
        ),
        tonic_reflection::server::Error,
    > {
        reflection(&self.descriptor_sets)
    }

    /// Runs `serve` (a server whose graceful shutdown is [`Self::drained`]): once the stop
    /// signal is raised, the calls already running get `timeout` to finish; then the server is
    /// dropped with whatever still runs (its connections close, callers see UNAVAILABLE).
    /// Without a bound, one hung call would keep the process from exiting until the
    /// orchestrator kills it, losing the span flush that follows.
    pub async fn drain<E>(
        &self,
        serve: impl Future<Output = Result<(), E>>,
        timeout: Duration,
    ) -> Result<(), E> {
        tokio::pin!(serve);
        tokio::select! {
            r = &mut serve => return r,
            () = self.stopped() => {}
        }
        match tokio::time::timeout(timeout, serve).await {
            Ok(r) => r,
            Err(_) => {
                tracing::warn!(
                    timeout = ?timeout,
                    "calls still running after the shutdown timeout are cut off"
                );
                Ok(())
            }
        }
    }

    /// Resolves on the stop signal after turning every service NOT_SERVING: load balancers and
    /// compose learn first, then in-flight calls drain.
    pub fn drained(&self) -> impl Future<Output = ()> + Send + 'static {
        let stopped = self.stopped();
        let health = self.health.clone();
        let services = self.services.clone();
        let serving = self.serving.clone();
        async move {
            stopped.await;
            serving.store(false, std::sync::atomic::Ordering::Relaxed);
            for s in services.iter().map(String::as_str).chain([WRITES]) {
                health
                    .set_service_status(s, ServingStatus::NotServing)
                    .await;
            }
        }
    }
}

/// Accepted connections with TCP_NODELAY: requests and stream messages are small, and Nagle's
/// algorithm against delayed ACKs would add ~40 ms to every exchange.
pub fn incoming(listener: TcpListener) -> TcpIncoming {
    TcpIncoming::from(listener)
        .with_nodelay(Some(true))
        .with_keepalive(Some(Duration::from_secs(60)))
}

/// Reflection over `descriptor_sets`, the health service's descriptors and `google.rpc`'s
/// (`ErrorInfo`, `BadRequest`, ... are in every error's details: with their descriptors served,
/// grpcurl prints them instead of raw bytes), so that `grpcurl -plaintext host:port list` works.
/// Both versions: v1, and v1alpha for the clients that know only it (grpcurl before 1.8.8,
/// which many distributions and CI images still ship, older grpc_cli and Postman).
pub fn reflection(
    descriptor_sets: &[&[u8]],
) -> Result<
    (
        tonic_reflection::server::v1::ServerReflectionServer<
            impl tonic_reflection::server::v1::ServerReflection,
        >,
        tonic_reflection::server::v1alpha::ServerReflectionServer<
            impl tonic_reflection::server::v1alpha::ServerReflection,
        >,
    ),
    tonic_reflection::server::Error,
> {
    let builder = || {
        let mut b = tonic_reflection::server::Builder::configure()
            .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_types::pb::FILE_DESCRIPTOR_SET);
        for set in descriptor_sets {
            b = b.register_encoded_file_descriptor_set(set);
        }
        b
    };
    Ok((builder().build_v1()?, builder().build_v1alpha()?))
}
