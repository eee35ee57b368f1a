//! storage-svc: a resource-agnostic object store on etcd, served over gRPC.
//!
//! The gRPC form of k8s.io/apiserver's `pkg/storage/etcd3` store. It stores encoded objects under
//! keys, turns etcd's mod revision into each object's `resourceVersion`, enforces UID and
//! resourceVersion preconditions, handles TTLs with etcd leases and dry runs, and runs the
//! optimistic-concurrency loop of GuaranteedUpdate. It knows nothing about resource kinds.
//!
//! Modules, one concept each:
//! - [`keys`]: caller keys -> etcd keys under the prefix, and what is rejected;
//! - [`fuzzing`]: entry points for the fuzz targets over everything parsed from the network;
//! - [`object`]: the wire-level handling of `metadata` and `resource_version`;
//! - [`state`]: a key's observed state (revision, bytes, metadata);
//! - [`preconditions`], [`lease`], [`keylock`]: what their names say;
//! - [`etcd`]: the client, with spans, [`metrics`] and deadlines; [`encryption`]: encryption at
//!   rest of the configured resources, where values meet etcd;
//! - [`request`]: the List and Watch requests and results and a watch's event sink, which the
//!   etcd path and the cache path share;
//! - [`store`] (Create, Get, Delete) and [`update`] (GuaranteedUpdate);
//! - [`list`] (List, with [`continuation`] tokens), [`watch`] (Watch), [`selector`] (label and
//!   field requirements evaluated on encoded objects), [`compactor`] (etcd history);
//! - [`cache`]: the watch cache (consistent reads, watches and suggestions from memory).
//!
//! Layering, one-way: `error`, `keys`, `object`, `selector`, `request` and `state` at the
//! bottom; `etcd` above them; `cache/` above that, knowing nothing of the etcd read path; then
//! the `Store` facade (`store`, with its verbs in `list`, `watch`, `update` and the per-key turns
//! of `keylock`), which serves each read from the cache or from etcd.
//! - [`error`]: the one error type and its gRPC mapping;
//! - [`service`]: the gRPC glue.

pub mod cache;
pub mod compactor;
pub mod continuation;
pub mod encryption;
pub mod error;
pub mod etcd;
pub mod fuzzing;
pub mod keylock;
pub mod keys;
pub mod lease;
pub mod list;
pub mod metrics;
pub mod object;
pub mod preconditions;
pub mod request;
pub mod selector;
pub mod service;
pub mod state;
pub mod store;
pub mod update;
pub mod watch;

use std::{future::Future, net::SocketAddr, path::PathBuf, sync::Arc, time::Duration};

use kubestore_proto::{
    limits::STORAGE_MAX_MESSAGE_BYTES, storage::v1::storage_server::StorageServer,
};
use kubestore_telemetry::{
    LogFormat, Metrics,
    deadline::parse_duration,
    inflight::RequestTimeouts,
    serving::{self, Serving},
    tls::{ClientTlsFiles, ServerTlsArgs, check_scheme},
};
use tokio::net::TcpListener;

use crate::{
    cache::{CacheConfig, CacheMetrics, WatchCache},
    encryption::Transformer,
    etcd::{Etcd, StorageMetrics},
    keys::KeyPrefix,
    service::StorageService,
    store::{Store, StoreConfig},
};

/// Command-line and environment configuration (CLI > env > defaults).
#[derive(clap::Args, Clone, Debug)]
pub struct Config {
    /// Address of the gRPC server (also where `healthcheck` looks, given before or after it).
    #[arg(
        long,
        global = true,
        env = "STORAGE_LISTEN_ADDR",
        default_value = "127.0.0.1:50051",
        value_parser = kubestore_telemetry::deadline::parse_socket_addr
    )]
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
    /// How long an update may keep its key's turn while waiting for its caller's answer; a
    /// slower caller loses its place in the key's queue (its update still completes).
    #[arg(long, env = "STORAGE_UPDATE_TURN_HOLD", default_value = "100ms", value_parser = parse_duration)]
    pub update_turn_hold: Duration,
    /// How often etcd's history is compacted (upstream's `--etcd-compaction-interval`); 0 turns
    /// compaction off (when something else compacts etcd).
    #[arg(long, env = "STORAGE_COMPACTION_INTERVAL", default_value = "5m", value_parser = parse_duration)]
    pub compaction_interval: Duration,
    /// Serve consistent reads, watches and update suggestions from a watch-fed cache per
    /// resource (`--watch-cache=false` reads etcd for everything).
    #[arg(long, env = "STORAGE_WATCH_CACHE", default_value_t = true, action = clap::ArgAction::Set)]
    pub watch_cache: bool,
    /// Events each resource's watch cache keeps for watches to resume from.
    #[arg(long, env = "STORAGE_WATCH_CACHE_SIZE", default_value_t = 10_000)]
    pub watch_cache_size: usize,
    /// How often a watch that allows bookmarks receives one, even when nothing changes.
    #[arg(long, env = "STORAGE_WATCH_BOOKMARK_INTERVAL", default_value = "10s", value_parser = parse_duration)]
    pub watch_bookmark_interval: Duration,
    /// Calls that may run at once; more are refused with RESOURCE_EXHAUSTED and a retry hint
    /// (watches, health and reflection are not counted); 0 = no limit. Higher than
    /// registry-svc's: every registry-svc replica's calls arrive here.
    #[arg(long, env = "STORAGE_MAX_REQUESTS_INFLIGHT", default_value_t = 1000)]
    pub max_requests_inflight: usize,
    /// On SIGTERM: how long calls already running may take to finish before the server exits
    /// anyway (watches end at once with UNAVAILABLE).
    #[arg(long, env = "STORAGE_SHUTDOWN_TIMEOUT", default_value = "30s", value_parser = parse_duration)]
    pub shutdown_timeout: Duration,
    /// Address of the Prometheus `/metrics` endpoint; unset: no endpoint.
    #[arg(long, env = "STORAGE_METRICS_ADDR", value_parser = kubestore_telemetry::deadline::parse_socket_addr)]
    pub metrics_addr: Option<SocketAddr>,
    /// Log line format.
    #[arg(long, env = "LOG_FORMAT", value_enum, default_value = "text")]
    pub log_format: LogFormat,
    /// TLS of the gRPC server (`--tls-cert-file`, `--tls-private-key-file`, `--client-ca-file`).
    #[command(flatten)]
    pub tls: ServerTlsArgs,
    /// Only clients whose certificate's subject CN is one of these may call (the CN only, never
    /// a SAN, as kube-apiserver's `--requestheader-allowed-names`), comma-separated; empty: any
    /// client the TLS handshake accepted. Needs --client-ca-file.
    #[arg(long, env = "STORAGE_ALLOWED_CLIENT_NAMES", value_delimiter = ',')]
    pub allowed_client_names: Vec<String>,
    /// CA bundle (PEM) that signs etcd's server certificates (etcd endpoints are then https://).
    #[arg(long, env = "ETCD_CAFILE")]
    pub etcd_cafile: Option<PathBuf>,
    /// Client certificate (PEM) presented to etcd (`etcd --client-cert-auth`).
    #[arg(long, env = "ETCD_CERTFILE")]
    pub etcd_certfile: Option<PathBuf>,
    /// The client certificate's key (PEM).
    #[arg(long, env = "ETCD_KEYFILE")]
    pub etcd_keyfile: Option<PathBuf>,
    /// Encryption at rest: upstream's `EncryptionConfiguration` YAML (resources; providers
    /// aesgcm, secretbox, identity; the first encrypts, all decrypt). Unset: values are stored
    /// as they come.
    #[arg(long, env = "ENCRYPTION_PROVIDER_CONFIG")]
    pub encryption_provider_config: Option<PathBuf>,
}

impl Config {
    /// The TLS files of the etcd hop.
    pub fn etcd_tls(&self) -> ClientTlsFiles {
        ClientTlsFiles {
            ca: self.etcd_cafile.clone().map(|p| ("--etcd-cafile", p)),
            cert: self.etcd_certfile.clone().map(|p| ("--etcd-certfile", p)),
            key: self.etcd_keyfile.clone().map(|p| ("--etcd-keyfile", p)),
            pair_flags: ("--etcd-certfile", "--etcd-keyfile"),
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Self {
            listen_addr: ([127, 0, 0, 1], 50051).into(),
            etcd_endpoints: vec!["http://127.0.0.1:2379".into()],
            etcd_prefix: "/registry".into(),
            max_update_attempts: 100,
            request_timeout: Duration::from_secs(10),
            update_turn_hold: store::DEFAULT_TURN_HOLD,
            compaction_interval: Duration::from_secs(300),
            watch_cache: true,
            watch_cache_size: 10_000,
            watch_bookmark_interval: Duration::from_secs(10),
            max_requests_inflight: 1000,
            shutdown_timeout: Duration::from_secs(30),
            metrics_addr: None,
            log_format: LogFormat::Text,
            tls: ServerTlsArgs::default(),
            allowed_client_names: Vec::new(),
            etcd_cafile: None,
            etcd_certfile: None,
            etcd_keyfile: None,
            encryption_provider_config: None,
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
    /// TLS flags or files that cannot be used.
    #[error("{0}")]
    Tls(String),
    /// The encryption configuration cannot be used.
    #[error("{0}")]
    Encryption(String),
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
    let metrics_listener =
        match config.metrics_addr {
            Some(addr) => Some(TcpListener::bind(addr).await.map_err(|e| {
                std::io::Error::new(e.kind(), format!("--metrics-addr {addr}: {e}"))
            })?),
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
    // TLS mistakes are reported before anything starts, naming the flag and the file.
    let tls_error = |e: kubestore_telemetry::tls::TlsError| RunError::Tls(e.to_string());
    let etcd_tls = config.etcd_tls().config().map_err(tls_error)?;
    for endpoint in &config.etcd_endpoints {
        check_scheme("--etcd-endpoints", endpoint, etcd_tls.is_some()).map_err(tls_error)?;
    }
    config.tls.config().map_err(tls_error)?;
    if !config.allowed_client_names.is_empty() && config.tls.client_ca_file.is_none() {
        return Err(RunError::Tls(
            "--allowed-client-names needs --client-ca-file: names are read from verified client \
             certificates"
                .into(),
        ));
    }
    let prefix = KeyPrefix::new(&config.etcd_prefix);
    let transformer = match &config.encryption_provider_config {
        Some(path) => Transformer::load(path, prefix.as_str()).map_err(RunError::Encryption)?,
        None => Transformer::none(prefix.as_str()),
    };
    let metrics = Metrics::new();
    let etcd = Etcd::connect(
        &config.etcd_endpoints,
        etcd_tls,
        transformer,
        StorageMetrics::register(&metrics),
    )
    .await?;
    let serving = Serving::start(
        &[kubestore_proto::STORAGE_DESCRIPTOR_SET],
        metrics,
        metrics_listener,
        shutdown,
    )
    .await;
    let bookmark_interval = config
        .watch_bookmark_interval
        .max(Duration::from_millis(10));
    let mut store = Store::new(
        etcd.clone(),
        StoreConfig {
            prefix: config.etcd_prefix.clone(),
            max_attempts: config.max_update_attempts.max(1),
            request_timeout: config.request_timeout,
            turn_hold: config.update_turn_hold,
            bookmark_interval,
        },
        serving.stop_signal(),
    );
    if config.watch_cache {
        let cache = WatchCache::new(
            etcd.clone(),
            KeyPrefix::new(&config.etcd_prefix),
            CacheConfig {
                window: config.watch_cache_size.max(1),
                fresh_timeout: Duration::from_secs(3),
                request_timeout: config.request_timeout,
                bookmark_interval,
            },
            CacheMetrics::register(&serving.metrics),
            serving.stop_signal(),
        );
        store = store.with_cache(cache);
    }
    let store = Arc::new(store);
    let compactor = (!config.compaction_interval.is_zero()).then(|| {
        tokio::spawn(compactor::run(
            etcd,
            config.compaction_interval,
            config.request_timeout,
            serving.stop_signal(),
        ))
    });
    let poller = {
        let store = store.clone();
        let key = store.health_key();
        serving.follow("etcd", move || {
            let (store, key) = (store.clone(), key.clone());
            async move { store.etcd.healthy(&key, Duration::from_secs(2)).await }
        })
    };
    let writes = {
        let store = store.clone();
        serving.follow_writes(move || {
            let store = store.clone();
            async move { store.etcd.writable(Duration::from_secs(2)).await }
        })
    };
    let (reflection_v1, reflection_v1alpha) = serving.reflection()?;
    tracing::info!(addr = ?listener.local_addr().ok(), etcd = ?config.etcd_endpoints, prefix = %config.etcd_prefix, tls = config.tls.enabled(), mtls = config.tls.client_ca_file.is_some(), "storage-svc serving");
    let server = serving
        .server(
            config.max_requests_inflight,
            // storage's handlers use the same default (`Store::deadline`).
            RequestTimeouts::uniform(config.request_timeout),
            error::DOMAIN,
            &config.tls,
            config.allowed_client_names.clone(),
        )
        .map_err(|e| RunError::Tls(e.to_string()))?
        .add_service(serving.health_service())
        .add_service(reflection_v1)
        .add_service(reflection_v1alpha)
        .add_service(
            StorageServer::new(StorageService::new(store))
                .max_decoding_message_size(STORAGE_MAX_MESSAGE_BYTES),
        )
        .serve_with_incoming_shutdown(serving::incoming(listener), serving.drained());
    let result = serving.drain(server, config.shutdown_timeout).await;
    poller.abort();
    writes.abort();
    if let Some(c) = compactor {
        c.abort();
    }
    tracing::info!("storage-svc stopped");
    Ok(result?)
}
