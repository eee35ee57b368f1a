//! registry-svc's command-line and environment configuration: the serving addresses and
//! limits, the request chain's flags (kube-apiserver's names: `--token-auth-file`,
//! `--authorization-mode`, `--anonymous-auth`, the ServiceAccount token flags of
//! `serviceaccount::Flags`, the audit flags of `audit::Flags`), TLS of both hops. `chain` builds the chain from it.

use std::{net::SocketAddr, path::PathBuf, time::Duration};

use kubestore_telemetry::{
    LogFormat,
    deadline::parse_duration,
    tls::{ClientTlsFiles, ServerTlsArgs},
};

use crate::{audit, authz, rest, serviceaccount};

/// Command-line and environment configuration (CLI > env > defaults).
#[derive(clap::Args, Clone, Debug)]
pub struct Config {
    /// Address of the gRPC server (also where `healthcheck` looks, given before or after it).
    #[arg(
        long,
        global = true,
        env = "REGISTRY_LISTEN_ADDR",
        default_value = "127.0.0.1:50052",
        value_parser = kubestore_telemetry::deadline::parse_socket_addr
    )]
    pub listen_addr: SocketAddr,
    /// URL of storage-svc, or of several replicas, comma-separated: calls are spread over the
    /// replicas that answer.
    #[arg(long, env = "STORAGE_ADDR", default_value = "http://127.0.0.1:50051")]
    pub storage_addr: String,
    /// How long Events live before etcd expires them (e.g. 1h, 90m, 30s).
    #[arg(long, env = "EVENT_TTL", default_value = "1h", value_parser = parse_duration)]
    pub event_ttl: Duration,
    /// Calls that may run at once (kube-apiserver's `--max-requests-inflight`); more are
    /// refused with RESOURCE_EXHAUSTED and a retry hint (watches, health and reflection are not
    /// counted); 0 = no limit.
    #[arg(long, env = "REGISTRY_MAX_REQUESTS_INFLIGHT", default_value_t = 400)]
    pub max_requests_inflight: usize,
    /// On SIGTERM: how long calls already running may take to finish before the server exits
    /// anyway (watches end at once with UNAVAILABLE).
    #[arg(long, env = "REGISTRY_SHUTDOWN_TIMEOUT", default_value = "30s", value_parser = parse_duration)]
    pub shutdown_timeout: Duration,
    /// How often `apiserver_storage_objects` counts each resource's objects (upstream: 1m).
    #[arg(long, env = "REGISTRY_STORAGE_OBJECTS_PERIOD", default_value = "1m", value_parser = parse_duration)]
    pub storage_objects_period: Duration,
    /// Address of the Prometheus `/metrics` endpoint; unset: no endpoint.
    #[arg(long, env = "REGISTRY_METRICS_ADDR", value_parser = kubestore_telemetry::deadline::parse_socket_addr)]
    pub metrics_addr: Option<SocketAddr>,
    /// Address of Kubernetes' REST API (kubectl, client-go, the Python client): plain HTTP/1.1,
    /// or HTTPS (HTTP/1.1 and h2) with the service's TLS flags; unset: not served.
    #[arg(long, env = "KUBE_API_ADDR", value_parser = kubestore_telemetry::deadline::parse_socket_addr)]
    pub kube_api_addr: Option<SocketAddr>,
    /// Connections one client address may hold open to the REST API (0: no bound but half the
    /// process's descriptors, which bounds every client together): one client once held 20,000
    /// and no other client was served.
    #[arg(
        long,
        env = "KUBE_API_MAX_CONNECTIONS_PER_CLIENT",
        default_value_t = 1000
    )]
    pub kube_api_max_connections_per_client: usize,
    /// How long a REST connection with no request in flight may stay silent before it is shut
    /// down (upstream's `IdleTimeout`, 90 s).
    #[arg(long, env = "KUBE_API_IDLE_TIMEOUT", default_value = "90s", value_parser = parse_duration)]
    pub kube_api_idle_timeout: Duration,
    /// Static bearer tokens of the REST API and gRPC (kube-apiserver's `--token-auth-file`): a
    /// CSV of `token,user,uid[,"group1,group2"]`, read at start. Over TLS every request must
    /// then authenticate, with a token or a client certificate (now optional). Without TLS a
    /// wrong token is refused, but a request without one is still the local administrator (the
    /// plain ports' development mode): tokens protect nothing there.
    #[arg(long, env = "TOKEN_AUTH_FILE")]
    pub token_auth_file: Option<PathBuf>,
    /// Who may do what (kube-apiserver's `--authorization-mode`): a comma-separated list of
    /// `AlwaysAllow` (every request is allowed: the default), `AlwaysDeny`, `RBAC`, asked in
    /// order; the first to allow or deny decides, and `system:masters` is always allowed.
    #[arg(
        long,
        env = "AUTHORIZATION_MODE",
        value_enum,
        value_delimiter = ',',
        default_value = "AlwaysAllow"
    )]
    pub authorization_mode: Vec<authz::Mode>,
    /// Whether a request with no credentials over TLS is `system:anonymous` in
    /// `system:unauthenticated` (kube-apiserver's `--anonymous-auth`, default true); a request
    /// with a bad credential is always 401. Off under `AlwaysAllow`, as upstream turns it off.
    #[arg(
        long,
        env = "ANONYMOUS_AUTH",
        default_value_t = true,
        action = clap::ArgAction::Set
    )]
    pub anonymous_auth: bool,
    /// ServiceAccount tokens.
    #[command(flatten)]
    pub service_accounts: serviceaccount::Flags,
    /// Audit.
    #[command(flatten)]
    pub audit: audit::Flags,
    /// Admission (`--admission-control-config-file`, `--enable-admission-plugins`,
    /// `--disable-admission-plugins`).
    #[command(flatten)]
    pub admission: crate::admission::config::Flags,
    /// Log line format.
    #[arg(long, env = "LOG_FORMAT", value_enum, default_value = "text")]
    pub log_format: LogFormat,
    /// TLS of the gRPC server (`--tls-cert-file`, `--tls-private-key-file`, `--client-ca-file`).
    #[command(flatten)]
    pub tls: ServerTlsArgs,
    /// CA bundle (PEM) that signs storage-svc's certificate (--storage-addr is then https://).
    #[arg(long, env = "STORAGE_CA_FILE")]
    pub storage_ca_file: Option<PathBuf>,
    /// Client certificate (PEM) presented to storage-svc (for its --client-ca-file and
    /// --allowed-client-names).
    #[arg(long, env = "STORAGE_CERT_FILE")]
    pub storage_cert_file: Option<PathBuf>,
    /// The client certificate's key (PEM).
    #[arg(long, env = "STORAGE_KEY_FILE")]
    pub storage_key_file: Option<PathBuf>,
}

impl Config {
    /// The TLS files of the storage-svc hop.
    pub fn storage_tls(&self) -> ClientTlsFiles {
        ClientTlsFiles {
            ca: self
                .storage_ca_file
                .clone()
                .map(|p| ("--storage-ca-file", p)),
            cert: self
                .storage_cert_file
                .clone()
                .map(|p| ("--storage-cert-file", p)),
            key: self
                .storage_key_file
                .clone()
                .map(|p| ("--storage-key-file", p)),
            pair_flags: ("--storage-cert-file", "--storage-key-file"),
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Self {
            listen_addr: ([127, 0, 0, 1], 50052).into(),
            storage_addr: "http://127.0.0.1:50051".into(),
            event_ttl: Duration::from_secs(3600),
            max_requests_inflight: 400,
            shutdown_timeout: Duration::from_secs(30),
            storage_objects_period: Duration::from_secs(60),
            metrics_addr: None,
            kube_api_addr: None,
            kube_api_max_connections_per_client: 1000,
            kube_api_idle_timeout: rest::conn::IDLE_TIMEOUT,
            token_auth_file: None,
            authorization_mode: vec![authz::Mode::AlwaysAllow],
            anonymous_auth: true,
            service_accounts: serviceaccount::Flags::default(),
            audit: audit::Flags::default(),
            admission: Default::default(),
            log_format: LogFormat::Text,
            tls: ServerTlsArgs::default(),
            storage_ca_file: None,
            storage_cert_file: None,
            storage_key_file: None,
        }
    }
}
