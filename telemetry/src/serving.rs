//! What every kubestore gRPC server does around its own services, so that storage-svc and
//! registry-svc differ only in what they serve:
//!
//! - a stop signal shared by the gRPC server and the `/metrics` endpoint;
//! - `grpc.health.v1`: NOT_SERVING until a dependency probe succeeds, following it afterwards
//!   (etcd for storage-svc, storage-svc for registry-svc), and NOT_SERVING again before draining;
//! - reflection over our descriptors and health's;
//! - accepted connections with TCP_NODELAY;
//! - the tracing/metrics layer on every RPC.

use std::{future::Future, time::Duration};

use tokio::{net::TcpListener, sync::watch, task::JoinHandle};
use tonic::transport::{Server, server::TcpIncoming};
use tonic_health::{
    ServingStatus,
    pb::health_server::HealthServer,
    server::{HealthReporter, HealthService},
};

use crate::{GrpcTraceLayer, Metrics};

/// The server-side plumbing of one service instance.
pub struct Serving {
    /// The service's metrics registry.
    pub metrics: Metrics,
    health: HealthReporter,
    /// Health service names: "" (the whole server) and each gRPC service.
    services: Vec<&'static str>,
    stop: watch::Receiver<bool>,
}

impl Serving {
    /// Starts the plumbing: every service NOT_SERVING, `/metrics` on `metrics_listener` (if
    /// any), and a stop signal raised when `shutdown` resolves.
    pub async fn start(
        services: &[&'static str],
        metrics: Metrics,
        metrics_listener: Option<TcpListener>,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Self {
        let (tx, stop) = watch::channel(false);
        tokio::spawn(async move {
            shutdown.await;
            let _ = tx.send(true);
        });
        let mut all = vec![""];
        all.extend_from_slice(services);
        let me = Self {
            metrics,
            health: HealthReporter::new(),
            services: all,
            stop,
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
        for s in &self.services {
            self.health.set_service_status(*s, status).await;
        }
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
        tokio::spawn(async move {
            let mut last = None;
            loop {
                let ok = probe().await;
                if last != Some(ok) {
                    let status = if ok {
                        ServingStatus::Serving
                    } else {
                        ServingStatus::NotServing
                    };
                    for s in &services {
                        health.set_service_status(*s, status).await;
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

    /// The health service to add to the server.
    pub fn health_service(&self) -> HealthServer<HealthService> {
        HealthServer::new(HealthService::from_health_reporter(self.health.clone()))
    }

    /// A server builder with the trace/metrics layer.
    pub fn server(
        &self,
    ) -> Server<tower::layer::util::Stack<GrpcTraceLayer, tower::layer::util::Identity>> {
        Server::builder().layer(GrpcTraceLayer::server(self.metrics.rpc.clone()))
    }

    /// Resolves on the stop signal after turning every service NOT_SERVING: load balancers and
    /// compose learn first, then in-flight calls drain.
    pub fn drained(&self) -> impl Future<Output = ()> + Send + 'static {
        let stopped = self.stopped();
        let health = self.health.clone();
        let services = self.services.clone();
        async move {
            stopped.await;
            for s in &services {
                health
                    .set_service_status(*s, ServingStatus::NotServing)
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

/// Reflection over `descriptor_sets` and the health service's descriptors, so that
/// `grpcurl -plaintext host:port list` works.
pub fn reflection(
    descriptor_sets: &[&[u8]],
) -> Result<
    tonic_reflection::server::v1::ServerReflectionServer<
        impl tonic_reflection::server::v1::ServerReflection,
    >,
    tonic_reflection::server::Error,
> {
    let mut b = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET);
    for set in descriptor_sets {
        b = b.register_encoded_file_descriptor_set(set);
    }
    b.build_v1()
}
