//! storage-svc: a resource-agnostic object store on etcd, served over gRPC.
//!
//! The gRPC form of k8s.io/apiserver's `pkg/storage/etcd3` store. It stores encoded objects under
//! keys, turns etcd's mod revision into each object's `resourceVersion`, enforces UID and
//! resourceVersion preconditions, handles TTLs with etcd leases and dry runs, and runs the
//! optimistic-concurrency loop of GuaranteedUpdate. It knows nothing about resource kinds.
//!
//! Modules, one concept each:
//! - [`keys`]: caller keys -> etcd keys under the prefix, and what is rejected;
//! - [`object`]: the wire-level handling of `metadata` and `resource_version`;
//! - [`state`]: a key's observed state (revision, bytes, metadata);
//! - [`preconditions`], [`lease`], [`keylock`]: what their names say;
//! - [`etcd`]: the client, with spans, metrics and deadlines;
//! - [`store`] (Create, Get, Delete) and [`update`] (GuaranteedUpdate);
//! - [`error`]: the one error type and its gRPC mapping;
//! - [`service`]: the gRPC glue.

pub mod error;
pub mod etcd;
pub mod keylock;
pub mod keys;
pub mod lease;
pub mod object;
pub mod preconditions;
pub mod service;
pub mod state;
pub mod store;
pub mod update;

use std::{future::Future, net::SocketAddr, sync::Arc, time::Duration};

use kubestore_proto::storage::v1::storage_server::StorageServer;
use kubestore_telemetry::{GrpcTraceLayer, LogFormat, Metrics, deadline::parse_duration};
use tokio::net::TcpListener;
use tonic_health::ServingStatus;

use crate::{
    etcd::{Etcd, StorageMetrics},
    service::StorageService,
    store::{Store, StoreConfig},
};

/// Command-line and environment configuration (CLI > env > defaults).
#[derive(clap::Args, Clone, Debug)]
pub struct Config {
    /// Address of the gRPC server.
    #[arg(long, env = "STORAGE_LISTEN_ADDR", default_value = "127.0.0.1:50051")]
    pub listen_addr: SocketAddr,
    /// etcd client URLs, comma-separated.
    #[arg(
        long,
        env = "ETCD_ENDPOINTS",
        default_value = "http://127.0.0.1:2379",
        value_delimiter = ','
    )]
    pub etcd_endpoints: Vec<String>,
    /// Prefix of every etcd key.
    #[arg(long, env = "ETCD_PREFIX", default_value = "/registry")]
    pub etcd_prefix: String,
    /// GuaranteedUpdate and Delete give up with ABORTED after this many attempts.
    #[arg(long, env = "STORAGE_MAX_UPDATE_ATTEMPTS", default_value_t = 100)]
    pub max_update_attempts: u32,
    /// Longest time a request may spend on etcd when the caller's deadline is later or unset.
    #[arg(long, env = "STORAGE_REQUEST_TIMEOUT", default_value = "10s", value_parser = parse_duration)]
    pub request_timeout: Duration,
    /// Address of the Prometheus `/metrics` endpoint; unset: no endpoint.
    #[arg(long, env = "STORAGE_METRICS_ADDR")]
    pub metrics_addr: Option<SocketAddr>,
    /// Log line format.
    #[arg(long, env = "LOG_FORMAT", value_enum, default_value = "text")]
    pub log_format: LogFormat,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            listen_addr: ([127, 0, 0, 1], 50051).into(),
            etcd_endpoints: vec!["http://127.0.0.1:2379".into()],
            etcd_prefix: "/registry".into(),
            max_update_attempts: 100,
            request_timeout: Duration::from_secs(10),
            metrics_addr: None,
            log_format: LogFormat::Text,
        }
    }
}

/// Errors that stop the service.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The etcd client could not be built (bad endpoint URL).
    #[error("cannot set up the etcd client: {0}")]
    Etcd(#[from] etcd_client::Error),
    /// The reflection service could not be built.
    #[error("cannot build gRPC reflection: {0}")]
    Reflection(#[from] tonic_reflection::server::Error),
    /// The gRPC server failed.
    #[error("gRPC server failed: {0}")]
    Transport(#[from] tonic::transport::Error),
    /// A listener could not be bound.
    #[error("cannot bind: {0}")]
    Io(#[from] std::io::Error),
}

/// Runs storage-svc on `listener` until `shutdown` resolves, with the metrics endpoint on
/// `config.metrics_addr` if set.
pub async fn run(
    listener: TcpListener,
    config: Config,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), RunError> {
    let metrics_listener = match config.metrics_addr {
        Some(addr) => Some(TcpListener::bind(addr).await?),
        None => None,
    };
    run_with_metrics(listener, metrics_listener, config, shutdown).await
}

/// [`run`], with the metrics endpoint on an already bound listener (tests bind port 0).
pub async fn run_with_metrics(
    listener: TcpListener,
    metrics_listener: Option<TcpListener>,
    config: Config,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), RunError> {
    let metrics = Metrics::new();
    let etcd = Etcd::connect(&config.etcd_endpoints, StorageMetrics::register(&metrics)).await?;
    let store = Arc::new(Store::new(
        etcd,
        StoreConfig {
            prefix: config.etcd_prefix.clone(),
            max_attempts: config.max_update_attempts.max(1),
            request_timeout: config.request_timeout,
        },
    ));

    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        shutdown.await;
        let _ = stop_tx.send(true);
    });
    let stopped = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|s| *s).await;
    };

    if let Some(l) = metrics_listener {
        let m = metrics.clone();
        let stop = stopped(stop_rx.clone());
        tokio::spawn(async move {
            if let Err(e) = m.serve(l, stop).await {
                tracing::warn!(error = %e, "metrics endpoint stopped");
            }
        });
    }

    let (health, health_service) = tonic_health::server::health_reporter();
    health
        .set_not_serving::<StorageServer<StorageService>>()
        .await;
    health
        .set_service_status("", ServingStatus::NotServing)
        .await;
    let poller = {
        let store = store.clone();
        let health = health.clone();
        tokio::spawn(async move {
            let key = store.health_key();
            let mut last = None;
            loop {
                let ok = store.etcd.healthy(&key, Duration::from_secs(2)).await;
                if last != Some(ok) {
                    let status = if ok {
                        ServingStatus::Serving
                    } else {
                        ServingStatus::NotServing
                    };
                    health.set_service_status("", status).await;
                    health
                        .set_service_status("storage.v1.Storage", status)
                        .await;
                    if ok {
                        tracing::info!("etcd answers: SERVING");
                    } else {
                        tracing::warn!("etcd does not answer: NOT_SERVING");
                    }
                    last = Some(ok);
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        })
    };

    let reflection = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(kubestore_proto::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1()?;

    tracing::info!(addr = ?listener.local_addr().ok(), etcd = ?config.etcd_endpoints, prefix = %config.etcd_prefix, "storage-svc serving");
    let drain = {
        let health = health.clone();
        let rx = stop_rx.clone();
        async move {
            stopped(rx).await;
            // Tell load balancers and compose first, then drain.
            health
                .set_service_status("", ServingStatus::NotServing)
                .await;
            health
                .set_service_status("storage.v1.Storage", ServingStatus::NotServing)
                .await;
        }
    };
    let result = tonic::transport::Server::builder()
        .layer(GrpcTraceLayer::server(metrics.rpc.clone()))
        .add_service(health_service)
        .add_service(reflection)
        .add_service(StorageServer::new(StorageService::new(store)))
        .serve_with_incoming_shutdown(incoming(listener), drain)
        .await;
    poller.abort();
    tracing::info!("storage-svc stopped");
    Ok(result?)
}

/// Accepted connections with TCP_NODELAY: request/response and stream messages are small, and
/// Nagle's algorithm against delayed ACKs would add ~40 ms to every exchange.
fn incoming(listener: TcpListener) -> tonic::transport::server::TcpIncoming {
    tonic::transport::server::TcpIncoming::from(listener)
        .with_nodelay(Some(true))
        .with_keepalive(Some(Duration::from_secs(60)))
}
