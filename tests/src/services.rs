//! storage-svc and registry-svc, each on its own runtime (two worker threads, like a small
//! container) and, optionally, its own `tracing` dispatcher.

use std::{future::Future, net::SocketAddr, thread::JoinHandle, time::Duration};

use kubestore_proto::{
    core::v1::{
        config_maps_client::ConfigMapsClient, events_client::EventsClient, pods_client::PodsClient,
    },
    storage::v1::storage_client::StorageClient,
};
use tokio::sync::oneshot;
use tonic::transport::Channel;

use crate::etcd::EtcdProcess;

/// A service running on its own threads; stopped (drained) on drop.
pub struct ServiceHandle {
    /// gRPC address.
    pub addr: SocketAddr,
    /// Prometheus `/metrics` address.
    pub metrics_addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl ServiceHandle {
    /// Starts `run(listener, metrics_listener, shutdown)` on a fresh runtime whose threads use
    /// `dispatch` (if any) as their default subscriber.
    pub fn spawn<F, Fut>(name: &str, dispatch: Option<tracing::Dispatch>, run: F) -> Self
    where
        F: FnOnce(tokio::net::TcpListener, tokio::net::TcpListener, oneshot::Receiver<()>) -> Fut
            + Send
            + 'static,
        Fut: Future<Output = Result<(), String>> + 'static,
    {
        Self::spawn_at(name, "127.0.0.1:0", dispatch, run)
    }

    /// [`Self::spawn`] on the gRPC address `addr` (a restarted service on its old address).
    pub fn spawn_at<F, Fut>(
        name: &str,
        addr: &str,
        dispatch: Option<tracing::Dispatch>,
        run: F,
    ) -> Self
    where
        F: FnOnce(tokio::net::TcpListener, tokio::net::TcpListener, oneshot::Receiver<()>) -> Fut
            + Send
            + 'static,
        Fut: Future<Output = Result<(), String>> + 'static,
    {
        let std_listener = std::net::TcpListener::bind(addr).expect("bind gRPC port");
        let std_metrics = std::net::TcpListener::bind("127.0.0.1:0").expect("bind metrics port");
        let addr = std_listener.local_addr().expect("local addr");
        let metrics_addr = std_metrics.local_addr().expect("local addr");
        std_listener.set_nonblocking(true).expect("nonblocking");
        std_metrics.set_nonblocking(true).expect("nonblocking");
        let (stop, stopped) = oneshot::channel();
        let thread_name = name.to_string();
        let thread = std::thread::Builder::new()
            .name(name.to_string())
            .spawn(move || {
                let _guard = dispatch.as_ref().map(tracing::dispatcher::set_default);
                let d = dispatch.clone();
                let runtime = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .thread_stack_size(kubestore_telemetry::process::THREAD_STACK_BYTES)
                    .thread_name(thread_name.clone())
                    .enable_all()
                    .on_thread_start(move || {
                        if let Some(d) = &d {
                            // Lives as long as the thread.
                            std::mem::forget(tracing::dispatcher::set_default(d));
                        }
                    })
                    .build()
                    .expect("service runtime");
                let result = runtime.block_on(async move {
                    let listener = tokio::net::TcpListener::from_std(std_listener)
                        .map_err(|e| e.to_string())?;
                    let metrics = tokio::net::TcpListener::from_std(std_metrics)
                        .map_err(|e| e.to_string())?;
                    run(listener, metrics, stopped).await
                });
                if let Err(e) = result {
                    eprintln!("{thread_name} failed: {e}");
                }
                runtime.shutdown_timeout(Duration::from_secs(2));
            })
            .expect("spawn service thread");
        Self {
            addr,
            metrics_addr,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// `http://<addr>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Raises the service's stop signal (its SIGTERM) without waiting.
    pub fn signal_stop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
    }

    /// Waits up to `within` for the service to have exited after its stop signal; whether it
    /// did.
    pub async fn wait_stopped(&mut self, within: Duration) -> bool {
        let until = std::time::Instant::now() + within;
        while std::time::Instant::now() < until {
            if self.thread.as_ref().is_none_or(|t| t.is_finished()) {
                if let Some(t) = self.thread.take() {
                    let _ = t.join();
                }
                return true;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        false
    }

    /// Stops the service and waits until it has drained.
    pub fn stop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for ServiceHandle {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Knobs of a test cluster.
#[derive(Default)]
pub struct ClusterOptions {
    /// storage-svc configuration (endpoints are filled in).
    pub storage: Option<storage_svc::Config>,
    /// registry-svc configuration (storage address is filled in).
    pub registry: Option<registry_svc::Config>,
    /// Subscriber of storage-svc's threads.
    pub storage_dispatch: Option<tracing::Dispatch>,
    /// Subscriber of registry-svc's threads.
    pub registry_dispatch: Option<tracing::Dispatch>,
    /// Start registry-svc too.
    pub with_registry: bool,
    /// Extra etcd flags.
    pub etcd_args: Vec<&'static str>,
    /// Take `storage`'s watch-cache setting as it is, whatever the run asks.
    pub exact_storage: bool,
    /// Serve registry-svc's Kubernetes REST API (`--kube-api-addr`) on a free loopback port
    /// (starts registry-svc).
    pub with_kube_api: bool,
}

/// etcd + storage-svc (+ registry-svc).
pub struct Cluster {
    /// Declared first so services stop before etcd.
    pub registry: Option<ServiceHandle>,
    /// registry-svc's Kubernetes REST API, when asked for (`ClusterOptions::with_kube_api`).
    pub kube_api: Option<SocketAddr>,
    /// storage-svc.
    pub storage: ServiceHandle,
    /// etcd.
    pub etcd: EtcdProcess,
}

/// `KUBESTORE_TEST_WATCH_CACHE=false` runs the suite with storage-svc's watch cache off (both
/// paths must pass it; `scripts/test.sh` runs it both ways).
pub const WATCH_CACHE_ENV: &str = "KUBESTORE_TEST_WATCH_CACHE";

/// Whether this test run serves from the watch cache.
pub fn watch_cache_on() -> bool {
    std::env::var(WATCH_CACHE_ENV).map_or(true, |v| v != "false")
}

/// Starts storage-svc against `etcd_endpoint`, with the watch cache as the run asks (unless
/// `config` turned it off itself).
pub fn spawn_storage(
    mut config: storage_svc::Config,
    etcd_endpoint: String,
    dispatch: Option<tracing::Dispatch>,
) -> ServiceHandle {
    config.watch_cache &= watch_cache_on();
    spawn_storage_exact(config, etcd_endpoint, dispatch)
}

/// Starts storage-svc against `etcd_endpoint` with `config` as it is (tests of the watch cache
/// itself, whatever the run asks).
pub fn spawn_storage_exact(
    mut config: storage_svc::Config,
    etcd_endpoint: String,
    dispatch: Option<tracing::Dispatch>,
) -> ServiceHandle {
    // One endpoint, or several separated by commas (a cluster's members).
    config.etcd_endpoints = etcd_endpoint.split(',').map(String::from).collect();
    ServiceHandle::spawn("storage-svc", dispatch, move |l, m, stop| async move {
        storage_svc::run_with_metrics(l, Some(m), config, async {
            let _ = stop.await;
        })
        .await
        .map_err(|e| e.to_string())
    })
}

/// Starts registry-svc against `storage_url`.
pub fn spawn_registry(
    config: registry_svc::Config,
    storage_url: String,
    dispatch: Option<tracing::Dispatch>,
) -> ServiceHandle {
    spawn_registry_at("127.0.0.1:0", config, storage_url, dispatch)
}

/// [`spawn_registry`], serving the Kubernetes REST API too, on a listener bound here (a free
/// loopback port) and handed to `run_with_listeners`: its address is known before it serves.
pub fn spawn_registry_with_kube_api(
    mut config: registry_svc::Config,
    storage_url: String,
    dispatch: Option<tracing::Dispatch>,
) -> (ServiceHandle, SocketAddr) {
    config.storage_addr = storage_url;
    let rest = std::net::TcpListener::bind("127.0.0.1:0").expect("bind REST API port");
    let rest_addr = rest.local_addr().expect("local addr");
    rest.set_nonblocking(true).expect("nonblocking");
    let handle = ServiceHandle::spawn("registry-svc", dispatch, move |l, m, stop| async move {
        let rest = tokio::net::TcpListener::from_std(rest).map_err(|e| e.to_string())?;
        registry_svc::run_with_listeners(l, Some(m), Some(rest), config, async {
            let _ = stop.await;
        })
        .await
        .map_err(|e| e.to_string())
    });
    (handle, rest_addr)
}

/// [`spawn_registry`] on the gRPC address `addr`.
pub fn spawn_registry_at(
    addr: &str,
    mut config: registry_svc::Config,
    storage_url: String,
    dispatch: Option<tracing::Dispatch>,
) -> ServiceHandle {
    config.storage_addr = storage_url;
    ServiceHandle::spawn_at(
        "registry-svc",
        addr,
        dispatch,
        move |l, m, stop| async move {
            registry_svc::run_with_metrics(l, Some(m), config, async {
                let _ = stop.await;
            })
            .await
            .map_err(|e| e.to_string())
        },
    )
}

impl Cluster {
    /// etcd and storage-svc with default settings.
    pub async fn storage_only() -> Self {
        Self::start(ClusterOptions::default()).await
    }

    /// etcd, storage-svc and registry-svc with default settings.
    pub async fn full() -> Self {
        Self::start(ClusterOptions {
            with_registry: true,
            ..Default::default()
        })
        .await
    }

    /// Starts what `options` asks for and waits until it serves.
    pub async fn start(options: ClusterOptions) -> Self {
        let etcd = EtcdProcess::start_with(&options.etcd_args).await;
        let spawn = if options.exact_storage {
            spawn_storage_exact
        } else {
            spawn_storage
        };
        let storage = spawn(
            options.storage.unwrap_or_default(),
            etcd.endpoint(),
            options.storage_dispatch,
        );
        wait_serving(&storage.url()).await;
        let mut kube_api = None;
        let registry = if options.with_kube_api {
            let (r, addr) = spawn_registry_with_kube_api(
                options.registry.unwrap_or_default(),
                storage.url(),
                options.registry_dispatch,
            );
            wait_serving(&r.url()).await;
            kube_api = Some(addr);
            Some(r)
        } else if options.with_registry || options.registry.is_some() {
            let r = spawn_registry(
                options.registry.unwrap_or_default(),
                storage.url(),
                options.registry_dispatch,
            );
            wait_serving(&r.url()).await;
            wait_system_namespaces(&r.url()).await;
            Some(r)
        } else {
            None
        };
        Self {
            registry,
            kube_api,
            storage,
            etcd,
        }
    }

    /// A storage-svc client.
    pub async fn storage_client(&self) -> StorageClient<Channel> {
        StorageClient::new(channel(&self.storage.url()).await)
    }

    fn registry_url(&self) -> String {
        self.registry
            .as_ref()
            .expect("cluster started without registry-svc")
            .url()
    }

    /// A Pods client.
    pub async fn pods(&self) -> PodsClient<Channel> {
        PodsClient::new(channel(&self.registry_url()).await)
    }

    /// A ConfigMaps client.
    pub async fn config_maps(&self) -> ConfigMapsClient<Channel> {
        ConfigMapsClient::new(channel(&self.registry_url()).await)
    }

    /// An Events client.
    pub async fn events(&self) -> EventsClient<Channel> {
        EventsClient::new(channel(&self.registry_url()).await)
    }
}

/// A connected channel to `url`.
pub async fn channel(url: &str) -> Channel {
    tonic::transport::Endpoint::from_shared(url.to_string())
        .expect("valid url")
        .connect()
        .await
        .expect("connect")
}

/// Waits until registry-svc at `url` has created the system namespaces it creates at start
/// (so that a test's view of etcd's revision, or of storage's writes, starts after them).
pub async fn wait_system_namespaces(url: &str) {
    use kubestore_proto::core::v1::{GetNamespaceRequest, namespaces_client::NamespacesClient};
    let mut client = NamespacesClient::new(channel(url).await);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    for name in registry_svc::kinds::namespace::SYSTEM_NAMESPACES {
        loop {
            let got = client
                .get(GetNamespaceRequest {
                    namespace: String::new(),
                    name: name.to_string(),
                })
                .await;
            if got.is_ok() {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "registry-svc did not create the namespace {name}: {got:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// Waits until `url` reports SERVING (at most 20 s).
pub async fn wait_serving(url: &str) {
    let start = std::time::Instant::now();
    loop {
        if kubestore_telemetry::health::check(url, "", Duration::from_secs(1))
            .await
            .is_ok()
        {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{url} did not become SERVING in 20 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The Prometheus text served at `http://<addr>/metrics` (a plain HTTP/1.1 GET).
pub async fn scrape(addr: SocketAddr) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr)
        .await
        .expect("connect to metrics");
    s.write_all(
        format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .await
    .expect("write");
    let mut out = String::new();
    s.read_to_string(&mut out).await.expect("read");
    assert!(out.starts_with("HTTP/1.1 200"), "{out}");
    out
}

/// The value of the sample `name` (exact series, labels included) in a scrape.
pub fn sample(scrape: &str, name: &str) -> Option<f64> {
    scrape.lines().find_map(|l| {
        l.strip_prefix(name)
            .and_then(|rest| rest.strip_prefix(' '))
            .and_then(|v| v.trim().parse().ok())
    })
}
