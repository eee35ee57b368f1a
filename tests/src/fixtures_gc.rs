//! The garbage collector's end-to-end tests' parts: a controller-manager on a runtime of its
//! own in the test process ([`Manager`], whose handle a test reads) or as a real
//! `kubestore controller-manager` process ([`Process`], killed with SIGKILL as a crashed one
//! is), ConfigMaps with owner references, the events the collector records, and waiting.

use std::time::{Duration, Instant};

use kubestore_controllers::manager::{self, Handle, ManagerConfig};
use kubestore_proto::{
    apiextensions::v1::custom_resource_definitions_client::CustomResourceDefinitionsClient,
    core::v1::{
        ConfigMap, CreateConfigMapRequest, DeleteConfigMapRequest, Event, GetConfigMapRequest,
        ListConfigMapsRequest, ListEventsRequest, config_maps_client::ConfigMapsClient,
        events_client::EventsClient,
    },
    meta::v1::{DeleteOptions, ListOptions, ObjectMeta, OwnerReference, PropagationPolicy},
};
use tokio::sync::watch;
use tonic::{Code, transport::Channel};

use crate::{
    fixtures_custom::{crontab_crd, register_established},
    services::{channel, sample, scrape},
};

/// The namespace the tests work in.
pub const NS: &str = "default";

/// A controller-manager on a runtime of its own.
pub struct Manager {
    runtime: Option<tokio::runtime::Runtime>,
    stop: watch::Sender<bool>,
    /// What it reports (leading, metrics address).
    pub handle: Handle,
}

impl Manager {
    /// Starts one for the registry at `url`.
    pub async fn start(url: &str, identity: &str, lease: Duration, workers: usize) -> Self {
        Self::start_with(url, identity, lease, workers, |_| {}).await
    }

    /// [`Self::start`], with `configure` changing its configuration last.
    pub async fn start_with(
        url: &str,
        identity: &str,
        lease: Duration,
        workers: usize,
        configure: impl FnOnce(&mut ManagerConfig),
    ) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let mut config = ManagerConfig::new(identity.to_string());
        config.leader.lease_duration = lease;
        config.leader.renew_deadline = lease.mul_f64(0.66);
        config.leader.retry_period = lease / 5;
        config.gc.workers = workers;
        config.metrics_addr = Some("127.0.0.1:0".parse().expect("addr"));
        configure(&mut config);
        let (stop, stop_rx) = watch::channel(false);
        let (tx, rx) = tokio::sync::oneshot::channel();
        let url = url.to_string();
        runtime.spawn(async move {
            let ch =
                kubestore_cli::connect_lazy_with(&url, &Default::default(), &Default::default())
                    .expect("channel");
            let r = manager::run(ch, config, stop_rx, move |h| {
                let _ = tx.send(h);
            })
            .await;
            r.expect("controller-manager");
        });
        let handle = rx.await.expect("started");
        Self {
            runtime: Some(runtime),
            stop,
            handle,
        }
    }

    /// Waits until it leads (`within` at most).
    pub async fn wait_leading(&mut self, within: Duration) {
        let mut l = self.handle.leading.clone();
        tokio::time::timeout(within, l.wait_for(|v| *v))
            .await
            .expect("leads in time")
            .expect("running");
    }
}

impl Drop for Manager {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
        if let Some(r) = self.runtime.take() {
            r.shutdown_background();
        }
    }
}

/// A real `kubestore controller-manager` process (the binary users run), killed with SIGKILL
/// as a crashed process is: its Lease is not released.
pub struct Process {
    child: std::process::Child,
    /// Its `/metrics` address.
    pub metrics: std::net::SocketAddr,
}

impl Process {
    /// Starts one for the registry at `url`.
    pub fn start(url: &str, identity: &str, lease: Duration, workers: usize) -> Self {
        Self::start_as(url, identity, lease, workers, None)
    }

    /// [`Self::start`], authenticating with `token` (`--token`) when given.
    pub fn start_as(
        url: &str,
        identity: &str,
        lease: Duration,
        workers: usize,
        token: Option<&str>,
    ) -> Self {
        let metrics = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port");
        let ms = |d: Duration| format!("{}ms", d.as_millis());
        let child = std::process::Command::new(crate::kubestore_binary())
            .args([
                "--registry",
                url,
                "controller-manager",
                "--identity",
                identity,
            ])
            .args(["--leader-elect-lease-duration", &ms(lease)])
            .args(["--leader-elect-renew-deadline", &ms(lease.mul_f64(0.66))])
            .args(["--leader-elect-retry-period", &ms(lease / 5)])
            .args(["--concurrent-gc-syncs", &workers.to_string()])
            .args(["--metrics-addr", &metrics.to_string()])
            .args(token.map(|t| format!("--token={t}")))
            .env("RUST_LOG", "warn")
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("kubestore controller-manager starts");
        Self { child, metrics }
    }

    /// Whether it leads (its metrics say so).
    pub async fn leading(&self) -> bool {
        tokio::net::TcpStream::connect(self.metrics).await.is_ok()
            && sample(
                &scrape(self.metrics).await,
                r#"leader_election_master_status{name="kube-controller-manager"}"#,
            ) == Some(1.0)
    }

    /// Waits until it leads (`within` at most).
    pub async fn wait_leading(&self, within: Duration) {
        let until = Instant::now() + within;
        while !self.leading().await {
            assert!(Instant::now() < until, "never led");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Kills it with SIGKILL.
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A Lease time as a SystemTime.
pub fn system_time(t: &kubestore_proto::Timestamp) -> std::time::SystemTime {
    std::time::UNIX_EPOCH
        + Duration::new(
            u64::try_from(t.seconds).expect("after 1970"),
            u32::try_from(t.nanos).expect("nanos"),
        )
}

/// An owner reference to `meta` of `api_version`/`kind`.
pub fn owner(
    api_version: &str,
    kind: &str,
    meta: &ObjectMeta,
    block: Option<bool>,
) -> OwnerReference {
    OwnerReference {
        api_version: api_version.into(),
        kind: kind.into(),
        name: meta.name.clone(),
        uid: meta.uid.clone(),
        controller: None,
        block_owner_deletion: block,
    }
}

/// Creates the ConfigMap `name` in [`NS`] with `owners` and `finalizers`; its metadata.
pub async fn create_cm(
    c: &mut ConfigMapsClient<Channel>,
    name: &str,
    owners: Vec<OwnerReference>,
    finalizers: &[&str],
) -> ObjectMeta {
    create_cm_in(c, NS, name, owners, finalizers).await
}

/// [`create_cm`] in `namespace`.
pub async fn create_cm_in(
    c: &mut ConfigMapsClient<Channel>,
    namespace: &str,
    name: &str,
    owners: Vec<OwnerReference>,
    finalizers: &[&str],
) -> ObjectMeta {
    c.create(CreateConfigMapRequest {
        namespace: namespace.into(),
        config_map: Some(ConfigMap {
            metadata: Some(ObjectMeta {
                name: name.into(),
                owner_references: owners,
                finalizers: finalizers.iter().map(|f| f.to_string()).collect(),
                ..Default::default()
            }),
            ..Default::default()
        }),
        dry_run: false,
    })
    .await
    .expect("create configmap")
    .into_inner()
    .metadata
    .expect("metadata")
}

/// The ConfigMap `name` of [`NS`], None once it is gone.
pub async fn get_cm(c: &mut ConfigMapsClient<Channel>, name: &str) -> Option<ConfigMap> {
    get_cm_in(c, NS, name).await
}

/// [`get_cm`] in `namespace`.
pub async fn get_cm_in(
    c: &mut ConfigMapsClient<Channel>,
    namespace: &str,
    name: &str,
) -> Option<ConfigMap> {
    match c
        .get(GetConfigMapRequest {
            namespace: namespace.into(),
            name: name.into(),
        })
        .await
    {
        Ok(r) => Some(r.into_inner()),
        Err(s) if s.code() == Code::NotFound => None,
        Err(s) => panic!("get {name}: {s:?}"),
    }
}

/// Deletes the ConfigMap `name` of [`NS`] with `policy`.
pub async fn delete_cm(c: &mut ConfigMapsClient<Channel>, name: &str, policy: PropagationPolicy) {
    c.delete(DeleteConfigMapRequest {
        namespace: NS.into(),
        name: name.into(),
        options: Some(DeleteOptions {
            propagation_policy: policy as i32,
            ..Default::default()
        }),
    })
    .await
    .expect("delete");
}

/// Waits until `check` holds, or fails naming `what`.
pub async fn eventually<F, Fut>(what: &str, within: Duration, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let until = Instant::now() + within;
    loop {
        if check().await {
            return;
        }
        assert!(Instant::now() < until, "never happened: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Whether the ConfigMap `name` of [`NS`] is gone.
pub async fn gone(c: &ConfigMapsClient<Channel>, name: &str) -> bool {
    get_cm(&mut c.clone(), name).await.is_none()
}

/// The events in `namespace` with `reason` about the object `uid`.
pub async fn events_about(
    events: &EventsClient<Channel>,
    namespace: &str,
    uid: &str,
    reason: &str,
) -> Vec<Event> {
    events
        .clone()
        .list(ListEventsRequest {
            namespace: namespace.into(),
            options: None,
        })
        .await
        .expect("list events")
        .into_inner()
        .items
        .into_iter()
        .filter(|e| e.reason == reason && e.involved_object.as_ref().is_some_and(|o| o.uid == uid))
        .collect()
}

/// Waits until an event with `reason` about `uid` is in `namespace`, then a moment more (the
/// collector writes events in the background), and returns them all.
pub async fn settled_events(
    events: &EventsClient<Channel>,
    namespace: &str,
    uid: &str,
    reason: &str,
) -> Vec<Event> {
    eventually(
        &format!("a {reason} event about {uid} in {namespace}"),
        Duration::from_secs(10),
        || async move {
            !events_about(events, namespace, uid, reason)
                .await
                .is_empty()
        },
    )
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    events_about(events, namespace, uid, reason).await
}

/// Registers the CronTab definition and waits until it is established.
pub async fn register_crontab(url: &str) {
    let mut defs = CustomResourceDefinitionsClient::new(channel(url).await);
    register_established(&mut defs, crontab_crd()).await;
}

/// How many ConfigMaps of [`NS`] match `selector`.
pub async fn count(cms: &mut ConfigMapsClient<Channel>, selector: &str) -> usize {
    cms.list(ListConfigMapsRequest {
        namespace: NS.into(),
        options: Some(ListOptions {
            label_selector: selector.into(),
            ..Default::default()
        }),
    })
    .await
    .expect("list")
    .into_inner()
    .items
    .len()
}

/// Creates `n` ConfigMaps `<prefix>-<i>` in [`NS`], labelled `owner=<prefix>`, owned by `o`.
pub async fn create_many(cms: &ConfigMapsClient<Channel>, prefix: &str, n: usize, o: &ObjectMeta) {
    let mut tasks = tokio::task::JoinSet::new();
    for chunk in 0..8 {
        let mut c = cms.clone();
        let (prefix, o) = (prefix.to_string(), o.clone());
        tasks.spawn(async move {
            for i in (chunk..n).step_by(8) {
                c.create(CreateConfigMapRequest {
                    namespace: NS.into(),
                    config_map: Some(ConfigMap {
                        metadata: Some(ObjectMeta {
                            name: format!("{prefix}-{i}"),
                            labels: [("owner".to_string(), prefix.clone())].into(),
                            owner_references: vec![owner("v1", "ConfigMap", &o, None)],
                            ..Default::default()
                        }),
                        ..Default::default()
                    }),
                    dry_run: false,
                })
                .await
                .expect("create dependent");
            }
        });
    }
    while let Some(r) = tasks.join_next().await {
        r.expect("task");
    }
}
