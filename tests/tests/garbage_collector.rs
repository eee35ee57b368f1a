//! The garbage collector end to end: real etcd, storage-svc, registry-svc and controller-managers
//! (real `kubestore controller-manager` processes where one is killed, SIGKILL, so it never
//! releases its Lease; elsewhere each on a runtime of its own in the test process, which lets
//! the tests read its handle). Background cascades across kinds (a custom kind owning
//! ConfigMaps owning Secrets), foreground with and without blockOwnerDeletion, orphaning,
//! dangling references, an owner re-created under its name, a controller killed mid-cascade,
//! and leader election with failover.

use std::time::{Duration, Instant};

use kubestore_controllers::manager::{self, Handle, ManagerConfig};
use kubestore_proto::{
    apiextensions::v1::{
        CreateCustomObjectRequest, DeleteCustomObjectRequest,
        DeleteCustomResourceDefinitionRequest, GetCustomObjectRequest,
        custom_objects_client::CustomObjectsClient,
        custom_resource_definitions_client::CustomResourceDefinitionsClient,
    },
    coordination::v1::{GetLeaseRequest, leases_client::LeasesClient},
    core::v1::{
        ConfigMap, CreateConfigMapRequest, CreateSecretRequest, DeleteConfigMapRequest, Event,
        GetConfigMapRequest, GetSecretRequest, ListConfigMapsRequest, ListEventsRequest, Secret,
        UpdateConfigMapRequest, config_maps_client::ConfigMapsClient, events_client::EventsClient,
        secrets_client::SecretsClient,
    },
    meta::v1::{DeleteOptions, ListOptions, ObjectMeta, OwnerReference, PropagationPolicy},
};
use kubestore_tests::{
    Cluster,
    fixtures_custom::{crontab_crd, register_established},
    services::{channel, sample, scrape},
};
use serde_json::json;
use tokio::sync::watch;
use tonic::{Code, transport::Channel};

const NS: &str = "default";

/// A controller-manager on a runtime of its own.
struct Manager {
    runtime: Option<tokio::runtime::Runtime>,
    stop: watch::Sender<bool>,
    handle: Handle,
}

impl Manager {
    /// Starts one for the registry at `url`.
    async fn start(url: &str, identity: &str, lease: Duration, workers: usize) -> Self {
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
        let (stop, stop_rx) = watch::channel(false);
        let (tx, rx) = tokio::sync::oneshot::channel();
        let url = url.to_string();
        runtime.spawn(async move {
            let ch = kubestore_cli::connect_lazy_with(&url, &Default::default()).expect("channel");
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

    async fn wait_leading(&mut self, within: Duration) {
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
struct Process {
    child: std::process::Child,
    metrics: std::net::SocketAddr,
}

impl Process {
    fn start(url: &str, identity: &str, lease: Duration, workers: usize) -> Self {
        let metrics = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port");
        let ms = |d: Duration| format!("{}ms", d.as_millis());
        let child = std::process::Command::new(kubestore_tests::kubestore_binary())
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
            .env("RUST_LOG", "warn")
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("kubestore controller-manager starts");
        Self { child, metrics }
    }

    async fn leading(&self) -> bool {
        tokio::net::TcpStream::connect(self.metrics).await.is_ok()
            && sample(
                &scrape(self.metrics).await,
                r#"leader_election_master_status{name="kube-controller-manager"}"#,
            ) == Some(1.0)
    }

    async fn wait_leading(&self, within: Duration) {
        let until = Instant::now() + within;
        while !self.leading().await {
            assert!(Instant::now() < until, "never led");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    fn kill(mut self) {
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
fn system_time(t: &kubestore_proto::Timestamp) -> std::time::SystemTime {
    std::time::UNIX_EPOCH
        + Duration::new(
            u64::try_from(t.seconds).expect("after 1970"),
            u32::try_from(t.nanos).expect("nanos"),
        )
}

fn owner(api_version: &str, kind: &str, meta: &ObjectMeta, block: Option<bool>) -> OwnerReference {
    OwnerReference {
        api_version: api_version.into(),
        kind: kind.into(),
        name: meta.name.clone(),
        uid: meta.uid.clone(),
        controller: None,
        block_owner_deletion: block,
    }
}

async fn create_cm(
    c: &mut ConfigMapsClient<Channel>,
    name: &str,
    owners: Vec<OwnerReference>,
    finalizers: &[&str],
) -> ObjectMeta {
    create_cm_in(c, NS, name, owners, finalizers).await
}

async fn create_cm_in(
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

async fn get_cm(c: &mut ConfigMapsClient<Channel>, name: &str) -> Option<ConfigMap> {
    get_cm_in(c, NS, name).await
}

async fn get_cm_in(
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

async fn delete_cm(c: &mut ConfigMapsClient<Channel>, name: &str, policy: PropagationPolicy) {
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
async fn eventually<F, Fut>(what: &str, within: Duration, mut check: F)
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

async fn gone(c: &ConfigMapsClient<Channel>, name: &str) -> bool {
    get_cm(&mut c.clone(), name).await.is_none()
}

/// The events in `namespace` with `reason` about the object `uid`.
async fn events_about(
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
async fn settled_events(
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

async fn register_crontab(url: &str) {
    let mut defs = CustomResourceDefinitionsClient::new(channel(url).await);
    register_established(&mut defs, crontab_crd()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn background_deletion_cascades_three_levels_across_kinds() {
    let cluster = Cluster::full().await;
    let url = cluster.registry.as_ref().expect("registry").url();
    register_crontab(&url).await;
    let mut m = Manager::start(&url, "gc-1", Duration::from_secs(5), 4).await;
    m.wait_leading(Duration::from_secs(5)).await;

    // A CronTab owns two ConfigMaps; one of them owns a Secret; another ConfigMap has a
    // second, live owner and must survive with only that reference.
    let mut objects = CustomObjectsClient::new(channel(&url).await);
    let tab: serde_json::Value = serde_json::to_value(
        objects
            .create(CreateCustomObjectRequest {
                group: "stable.example.com".into(),
                version: "v1".into(),
                plural: "crontabs".into(),
                namespace: NS.into(),
                object: Some(
                    serde_json::from_value(json!({
                        "apiVersion": "stable.example.com/v1",
                        "kind": "CronTab",
                        "metadata": {"name": "nightly"},
                        "spec": {"cronSpec": "* * * * *"},
                    }))
                    .expect("struct"),
                ),
                dry_run: false,
            })
            .await
            .expect("create crontab")
            .into_inner(),
    )
    .expect("json");
    let tab_meta = ObjectMeta {
        name: "nightly".into(),
        uid: tab["metadata"]["uid"].as_str().expect("uid").into(),
        ..Default::default()
    };
    let tab_ref = owner("stable.example.com/v1", "CronTab", &tab_meta, None);
    let mut cms = cluster.config_maps().await;
    let keeper = create_cm(&mut cms, "keeper", vec![], &[]).await;
    let level1 = create_cm(&mut cms, "level-1", vec![tab_ref.clone()], &[]).await;
    create_cm(&mut cms, "level-1b", vec![tab_ref.clone()], &[]).await;
    create_cm(
        &mut cms,
        "shared",
        vec![tab_ref.clone(), owner("v1", "ConfigMap", &keeper, None)],
        &[],
    )
    .await;
    let mut secrets = SecretsClient::new(channel(&url).await);
    secrets
        .create(CreateSecretRequest {
            namespace: NS.into(),
            secret: Some(Secret {
                metadata: Some(ObjectMeta {
                    name: "level-2".into(),
                    owner_references: vec![owner("v1", "ConfigMap", &level1, None)],
                    ..Default::default()
                }),
                ..Default::default()
            }),
            dry_run: false,
        })
        .await
        .expect("create secret");

    objects
        .delete(DeleteCustomObjectRequest {
            group: "stable.example.com".into(),
            version: "v1".into(),
            plural: "crontabs".into(),
            namespace: NS.into(),
            name: "nightly".into(),
            options: None,
        })
        .await
        .expect("delete crontab");
    let s = secrets.clone();
    eventually("the whole cascade is gone", Duration::from_secs(15), || {
        let (cms, mut s) = (cms.clone(), s.clone());
        async move {
            gone(&cms, "level-1").await
                && gone(&cms, "level-1b").await
                && s.get(GetSecretRequest {
                    namespace: NS.into(),
                    name: "level-2".into(),
                })
                .await
                .is_err_and(|e| e.code() == Code::NotFound)
        }
    })
    .await;
    // What it did is reported: one event on the owner (not one per dependent: two of its
    // dependents were deleted), and the metrics.
    let events = cluster.events().await;
    let about_tab = settled_events(&events, NS, &tab_meta.uid, "DeletingDependents").await;
    assert_eq!(about_tab.len(), 1, "one event per owner: {about_tab:?}");
    let o = about_tab[0]
        .involved_object
        .as_ref()
        .expect("involvedObject");
    assert_eq!(
        (o.kind.as_str(), o.name.as_str(), o.namespace.as_str()),
        ("CronTab", "nightly", NS)
    );
    assert_eq!(about_tab[0].r#type, "Normal");
    let scraped = scrape(m.handle.metrics_addr.expect("metrics")).await;
    assert!(
        sample(&scraped, "garbagecollector_deleted_dependents_total").unwrap_or(0.0) >= 3.0,
        "{scraped}"
    );
    assert_eq!(
        sample(
            &scraped,
            "leader_election_master_status{name=\"kube-controller-manager\"}"
        ),
        Some(1.0)
    );
    assert!(
        sample(&scraped, "garbagecollector_removed_owner_references_total").unwrap_or(0.0) >= 1.0
    );
    let shared = get_cm(&mut cms, "shared")
        .await
        .expect("a live owner keeps it");
    let refs = shared.metadata.expect("meta").owner_references;
    assert_eq!(
        refs.len(),
        1,
        "only the live owner's reference is left: {refs:?}"
    );
    assert_eq!(refs[0].uid, keeper.uid);
}

#[tokio::test(flavor = "multi_thread")]
async fn foreground_deletion_waits_for_blocking_dependents_only() {
    let cluster = Cluster::full().await;
    let url = cluster.registry.as_ref().expect("registry").url();
    let mut m = Manager::start(&url, "gc-1", Duration::from_secs(5), 4).await;
    m.wait_leading(Duration::from_secs(5)).await;
    let mut cms = cluster.config_maps().await;

    // With a blocking dependent that a finalizer holds, the owner waits for it.
    let o = create_cm(&mut cms, "owner", vec![], &[]).await;
    create_cm(
        &mut cms,
        "blocking",
        vec![owner("v1", "ConfigMap", &o, Some(true))],
        &["example.com/hold"],
    )
    .await;
    create_cm(
        &mut cms,
        "free",
        vec![owner("v1", "ConfigMap", &o, None)],
        &[],
    )
    .await;
    delete_cm(&mut cms, "owner", PropagationPolicy::Foreground).await;
    eventually(
        "the non-blocking dependent is deleted",
        Duration::from_secs(10),
        || {
            let cms = cms.clone();
            async move { gone(&cms, "free").await }
        },
    )
    .await;
    let waiting = get_cm(&mut cms, "owner").await.expect("the owner waits");
    let meta = waiting.metadata.expect("meta");
    assert!(meta.deletion_timestamp.is_some());
    assert_eq!(meta.finalizers, vec!["foregroundDeletion".to_string()]);
    let blocking = get_cm(&mut cms, "blocking")
        .await
        .expect("held by its finalizer");
    assert!(
        blocking
            .metadata
            .as_ref()
            .expect("meta")
            .deletion_timestamp
            .is_some(),
        "the blocking dependent is being deleted"
    );
    // Releasing the dependent's finalizer lets both go.
    let mut b = blocking;
    b.metadata.as_mut().expect("meta").finalizers.clear();
    cms.update(UpdateConfigMapRequest {
        namespace: NS.into(),
        config_map: Some(b),
        dry_run: false,
    })
    .await
    .expect("release the dependent");
    eventually(
        "the owner is deleted after its blocking dependent",
        Duration::from_secs(10),
        || {
            let cms = cms.clone();
            async move { gone(&cms, "blocking").await && gone(&cms, "owner").await }
        },
    )
    .await;

    // Without blockOwnerDeletion, the owner does not wait for a dependent that lingers.
    let o2 = create_cm(&mut cms, "owner-2", vec![], &[]).await;
    create_cm(
        &mut cms,
        "lingering",
        vec![owner("v1", "ConfigMap", &o2, Some(false))],
        &["example.com/hold"],
    )
    .await;
    delete_cm(&mut cms, "owner-2", PropagationPolicy::Foreground).await;
    eventually(
        "the owner goes while its non-blocking dependent lingers",
        Duration::from_secs(10),
        || {
            let cms = cms.clone();
            async move { gone(&cms, "owner-2").await }
        },
    )
    .await;
    eventually(
        "the dependent is being deleted",
        Duration::from_secs(10),
        || {
            let mut cms = cms.clone();
            async move {
                get_cm(&mut cms, "lingering")
                    .await
                    .is_some_and(|c| c.metadata.is_some_and(|m| m.deletion_timestamp.is_some()))
            }
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn orphaning_keeps_dependents_and_removes_only_that_reference() {
    let cluster = Cluster::full().await;
    let url = cluster.registry.as_ref().expect("registry").url();
    let mut m = Manager::start(&url, "gc-1", Duration::from_secs(5), 4).await;
    m.wait_leading(Duration::from_secs(5)).await;
    let mut cms = cluster.config_maps().await;
    let o = create_cm(&mut cms, "owner", vec![], &[]).await;
    let other = create_cm(&mut cms, "other-owner", vec![], &[]).await;
    for i in 0..3 {
        create_cm(
            &mut cms,
            &format!("dep-{i}"),
            vec![
                owner("v1", "ConfigMap", &o, Some(true)),
                owner("v1", "ConfigMap", &other, None),
            ],
            &[],
        )
        .await;
    }
    delete_cm(&mut cms, "owner", PropagationPolicy::Orphan).await;
    eventually("the owner is deleted", Duration::from_secs(10), || {
        let cms = cms.clone();
        async move { gone(&cms, "owner").await }
    })
    .await;
    for i in 0..3 {
        let dep = get_cm(&mut cms, &format!("dep-{i}"))
            .await
            .expect("orphaned, kept");
        let refs = dep.metadata.expect("meta").owner_references;
        assert_eq!(refs.len(), 1, "{refs:?}");
        assert_eq!(
            refs[0].uid, other.uid,
            "only the deleted owner's reference went"
        );
    }
    // One event on the orphaned owner says so.
    let events = cluster.events().await;
    let orphaned = settled_events(&events, NS, &o.uid, "OrphanedDependents").await;
    assert_eq!(orphaned.len(), 1, "{orphaned:?}");
    assert_eq!(
        orphaned[0].message,
        "removed the owner reference from 3 dependents"
    );
    assert_eq!(
        orphaned[0]
            .involved_object
            .as_ref()
            .map(|i| (i.kind.as_str(), i.name.as_str())),
        Some(("ConfigMap", "owner"))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn dangling_references_and_recreated_owners_are_judged_by_uid() {
    let cluster = Cluster::full().await;
    let url = cluster.registry.as_ref().expect("registry").url();
    let mut cms = cluster.config_maps().await;
    // Before any controller runs: an owner, deleted and re-created under its name.
    let first = create_cm(&mut cms, "owner", vec![], &[]).await;
    create_cm(
        &mut cms,
        "old-dep",
        vec![owner("v1", "ConfigMap", &first, None)],
        &[],
    )
    .await;
    delete_cm(&mut cms, "owner", PropagationPolicy::Orphan).await;
    // The orphan finalizer would wait for a controller; take it off by hand.
    if let Some(mut c) = get_cm(&mut cms, "owner").await {
        c.metadata.as_mut().expect("meta").finalizers.clear();
        cms.update(UpdateConfigMapRequest {
            namespace: NS.into(),
            config_map: Some(c),
            dry_run: false,
        })
        .await
        .expect("finalizer removed");
    }
    assert!(gone(&cms, "owner").await);
    let second = create_cm(&mut cms, "owner", vec![], &[]).await;
    assert_ne!(first.uid, second.uid);
    create_cm(
        &mut cms,
        "new-dep",
        vec![owner("v1", "ConfigMap", &second, None)],
        &[],
    )
    .await;
    // An owner that never existed.
    let never = ObjectMeta {
        name: "never-was".into(),
        uid: "6b1b3a3c-0000-4000-8000-000000000000".into(),
        ..Default::default()
    };
    create_cm(
        &mut cms,
        "dangling",
        vec![owner("v1", "ConfigMap", &never, None)],
        &[],
    )
    .await;
    // An owner that exists, but in another namespace: a namespaced dependent's owner must be
    // in its own namespace, so it is absent (the dependent is collected) and upstream's
    // Warning event `OwnerRefInvalidNamespace` is recorded on the dependent.
    let foreign = cms
        .create(CreateConfigMapRequest {
            namespace: "other".into(),
            config_map: Some(ConfigMap {
                metadata: Some(ObjectMeta {
                    name: "foreign-owner".into(),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            dry_run: false,
        })
        .await
        .expect("create the owner elsewhere")
        .into_inner()
        .metadata
        .expect("meta");
    let foreign_dep = create_cm(
        &mut cms,
        "foreign-dep",
        vec![owner("v1", "ConfigMap", &foreign, None)],
        &[],
    )
    .await;
    let mut m = Manager::start(&url, "gc-1", Duration::from_secs(5), 4).await;
    m.wait_leading(Duration::from_secs(5)).await;
    eventually(
        "the old dependent and the dangling one are collected",
        Duration::from_secs(10),
        || {
            let cms = cms.clone();
            async move { gone(&cms, "old-dep").await && gone(&cms, "dangling").await }
        },
    )
    .await;
    assert!(
        get_cm(&mut cms, "new-dep").await.is_some(),
        "the new owner's dependent stays"
    );
    assert!(get_cm(&mut cms, "owner").await.is_some());
    eventually(
        "the dependent of an owner in another namespace is collected",
        Duration::from_secs(10),
        || {
            let cms = cms.clone();
            async move { gone(&cms, "foreign-dep").await }
        },
    )
    .await;
    let events = cluster.events().await;
    eventually(
        "an OwnerRefInvalidNamespace Warning names the dependent",
        Duration::from_secs(5),
        || {
            let (mut events, uid) = (events.clone(), foreign_dep.uid.clone());
            async move {
                events
                    .list(kubestore_proto::core::v1::ListEventsRequest {
                        namespace: NS.into(),
                        options: None,
                    })
                    .await
                    .expect("list events")
                    .into_inner()
                    .items
                    .iter()
                    .any(|e| {
                        e.reason == "OwnerRefInvalidNamespace"
                            && e.r#type == "Warning"
                            && e.involved_object
                                .as_ref()
                                .is_some_and(|o| o.uid == uid && o.name == "foreign-dep")
                    })
            }
        },
    )
    .await;
    // The owner itself, in its own namespace, is untouched.
    assert!(
        cms.get(GetConfigMapRequest {
            namespace: "other".into(),
            name: "foreign-owner".into(),
        })
        .await
        .is_ok()
    );
}

async fn count(cms: &mut ConfigMapsClient<Channel>, selector: &str) -> usize {
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

async fn create_many(cms: &ConfigMapsClient<Channel>, prefix: &str, n: usize, o: &ObjectMeta) {
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

#[tokio::test(flavor = "multi_thread")]
async fn a_controller_killed_mid_cascade_finishes_after_a_restart() {
    let cluster = Cluster::full().await;
    let url = cluster.registry.as_ref().expect("registry").url();
    let mut cms = cluster.config_maps().await;
    let a = create_cm(&mut cms, "owner-a", vec![], &[]).await;
    let b = create_cm(&mut cms, "owner-b", vec![], &[]).await;
    create_many(&cms, "a", 1000, &a).await;
    create_many(&cms, "b", 20, &b).await;
    let lease = Duration::from_secs(2);
    // Real controller-manager processes, the first killed with SIGKILL mid-cascade.
    let first = Process::start(&url, "gc-first", lease, 2);
    first.wait_leading(Duration::from_secs(10)).await;
    delete_cm(&mut cms, "owner-a", PropagationPolicy::Background).await;
    eventually("the cascade started", Duration::from_secs(20), || {
        let mut cms = cms.clone();
        async move { count(&mut cms, "owner=a").await <= 950 }
    })
    .await;
    first.kill();
    let left = count(&mut cms, "owner=a").await;
    assert!(
        left > 0,
        "killed mid-cascade (all {left} were gone already)"
    );
    let second = Process::start(&url, "gc-second", lease, 20);
    second.wait_leading(Duration::from_secs(10)).await;
    eventually(
        "every dependent of the deleted owner is gone",
        Duration::from_secs(60),
        || {
            let mut cms = cms.clone();
            async move { count(&mut cms, "owner=a").await == 0 }
        },
    )
    .await;
    assert_eq!(
        count(&mut cms, "owner=b").await,
        20,
        "none of another owner's"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn only_the_leader_acts_and_another_takes_over_within_the_lease_duration() {
    let cluster = Cluster::full().await;
    let url = cluster.registry.as_ref().expect("registry").url();
    let lease = Duration::from_secs(3);
    // Two real controller-manager processes.
    let one = Process::start(&url, "cm-one", lease, 4);
    one.wait_leading(Duration::from_secs(10)).await;
    let two = Process::start(&url, "cm-two", lease, 4);
    // The second never leads while the first renews.
    tokio::time::sleep(lease * 2).await;
    assert!(one.leading().await && !two.leading().await);
    // Only the leader acts: it collects every dependent, the standby deletes none. (Twenty: a
    // standby that also acted would race the leader for each and win some; with one
    // dependent it would go unnoticed half the time.)
    let mut cms = cluster.config_maps().await;
    let first_owner = create_cm(&mut cms, "first-owner", vec![], &[]).await;
    create_many(&cms, "first", 20, &first_owner).await;
    delete_cm(&mut cms, "first-owner", PropagationPolicy::Background).await;
    eventually("the leader collects", Duration::from_secs(20), || {
        let mut cms = cms.clone();
        async move { count(&mut cms, "owner=first").await == 0 }
    })
    .await;
    let deleted =
        |text: &str| sample(text, "garbagecollector_deleted_dependents_total").unwrap_or(0.0);
    assert_eq!(deleted(&scrape(one.metrics).await), 20.0);
    assert_eq!(
        deleted(&scrape(two.metrics).await),
        0.0,
        "the standby acted"
    );
    let leases = LeasesClient::new(channel(&url).await);
    let read_lease = |mut leases: LeasesClient<Channel>| async move {
        leases
            .get(GetLeaseRequest {
                namespace: "kube-system".into(),
                name: "kube-controller-manager".into(),
            })
            .await
            .expect("the lease exists")
            .into_inner()
            .spec
            .expect("spec")
    };
    let held = read_lease(leases.clone()).await;
    assert_eq!(held.holder_identity.as_deref(), Some("cm-one"));
    assert_eq!(held.lease_duration_seconds, Some(3));
    let transitions = held.lease_transitions.unwrap_or(0);

    one.kill();
    let killed = std::time::SystemTime::now();
    // The dead leader's last renewal, read at once (the standby cannot have taken it within
    // a lease duration; if this read came that late, the one read before the kill stands in,
    // an earlier time, which only loosens the upper bound below).
    let after_kill = read_lease(leases.clone()).await;
    let last_renewal = if after_kill.holder_identity.as_deref() == Some("cm-one") {
        after_kill.renew_time
    } else {
        held.renew_time
    };
    let last_renewal = system_time(last_renewal.as_ref().expect("renewTime"));
    two.wait_leading(lease * 4).await;
    let now = read_lease(leases.clone()).await;
    // When the new leader took the Lease (the acquireTime it wrote), not when this test's poll
    // of its metrics noticed: on a loaded machine the poll lags, the failover does not.
    let acquired = system_time(now.acquire_time.as_ref().expect("acquireTime"));
    // A fresh acquisition: an acquireTime left from before the kill is not a takeover.
    assert!(
        acquired > killed,
        "the new leader's acquireTime {acquired:?} is not after the kill {killed:?}"
    );
    let took = acquired
        .duration_since(last_renewal)
        .expect("acquired after the last renewal");
    // Never before the lease expired: the standby waits a whole lease duration from when it
    // saw the last renewal, which was no earlier than that renewal (one clock, this machine's).
    assert!(
        took >= lease,
        "took over {took:?} after the last renewal, before the {lease:?} lease expired"
    );
    // And soon after: the standby sees the last renewal up to a jittered retry period late
    // (0.6 s to 1.3 s here), tries again at most that long after expiry, and its Lease Get
    // and Update take up to a second on two cores shared with other tests (4.9 s from the
    // kill was seen once). Past twice the lease duration and more, the failover was not
    // made when it was due.
    assert!(
        took <= lease * 2 + Duration::from_millis(1500),
        "took over {took:?} after the last renewal, lease {lease:?}"
    );
    assert_eq!(now.holder_identity.as_deref(), Some("cm-two"));
    assert_eq!(now.lease_transitions, Some(transitions + 1));

    // The new leader collects.
    let o = create_cm(&mut cms, "owner", vec![], &[]).await;
    create_cm(
        &mut cms,
        "dep",
        vec![owner("v1", "ConfigMap", &o, None)],
        &[],
    )
    .await;
    delete_cm(&mut cms, "owner", PropagationPolicy::Background).await;
    eventually("the new leader collects", Duration::from_secs(10), || {
        let cms = cms.clone();
        async move { gone(&cms, "dep").await }
    })
    .await;
}

/// The namespace a ConfigMap of the attacks below lives in.
const EVIL: &str = "evil";

#[tokio::test(flavor = "multi_thread")]
async fn a_reference_from_another_namespace_never_decides_about_this_ones_objects() {
    let cluster = Cluster::full().await;
    let url = cluster.registry.as_ref().expect("registry").url();
    let mut m = Manager::start(&url, "gc-1", Duration::from_secs(5), 4).await;
    m.wait_leading(Duration::from_secs(5)).await;
    let mut cms = cluster.config_maps().await;
    let owner_cm = create_cm(&mut cms, "prod-owner", vec![], &[]).await;
    let other = create_cm(&mut cms, "other-owner", vec![], &[]).await;
    create_cm(
        &mut cms,
        "prod-dep",
        vec![
            owner("v1", "ConfigMap", &owner_cm, Some(true)),
            owner("v1", "ConfigMap", &other, None),
        ],
        &[],
    )
    .await;
    // The attack: a ConfigMap in another namespace names the prod owner (its name and UID,
    // blocking), and holds itself with a finalizer. Its owner is not in its namespace, so the
    // collector deletes it (it stays, held): the owner is absent *for it*.
    create_cm_in(
        &mut cms,
        EVIL,
        "bait",
        vec![owner("v1", "ConfigMap", &owner_cm, Some(true))],
        &["example.com/hold"],
    )
    .await;
    eventually(
        "the bait is collected (its owner is not in its namespace)",
        Duration::from_secs(10),
        || {
            let mut cms = cms.clone();
            async move {
                get_cm_in(&mut cms, EVIL, "bait")
                    .await
                    .and_then(|c| c.metadata)
                    .is_some_and(|m| m.deletion_timestamp.is_some())
            }
        },
    )
    .await;
    // The prod dependent is checked now (one of its owners goes): its other owner exists, in
    // its namespace, so only the deleted owner's reference goes. What the bait's check found
    // in its own namespace must not count here.
    delete_cm(&mut cms, "other-owner", PropagationPolicy::Background).await;
    eventually(
        "the deleted owner's reference is dropped, the dependent kept",
        Duration::from_secs(10),
        || {
            let (mut cms, keep) = (cms.clone(), owner_cm.uid.clone());
            async move {
                let dep = get_cm(&mut cms, "prod-dep").await;
                let refs = dep
                    .expect("the collector deleted a dependent whose owner exists")
                    .metadata
                    .expect("meta")
                    .owner_references;
                refs.len() == 1 && refs[0].uid == keep
            }
        },
    )
    .await;
    // Foreground deletion of the prod owner waits for its own blocking dependent only: the
    // bait, held by its finalizer in another namespace, does not hold it up.
    delete_cm(&mut cms, "prod-owner", PropagationPolicy::Foreground).await;
    eventually(
        "the owner and its dependent are deleted, whatever the bait does",
        Duration::from_secs(15),
        || {
            let cms = cms.clone();
            async move { gone(&cms, "prod-dep").await && gone(&cms, "prod-owner").await }
        },
    )
    .await;
    // And its event is its own: the bait's collection (reported in the bait's namespace) did
    // not use it up.
    let events = cluster.events().await;
    let about = settled_events(&events, NS, &owner_cm.uid, "DeletingDependents").await;
    assert_eq!(about.len(), 1, "{about:?}");
    // The bait is still held by its finalizer, and only by it.
    let bait = get_cm_in(&mut cms, EVIL, "bait")
        .await
        .expect("held by its finalizer")
        .metadata
        .expect("meta");
    assert_eq!(bait.finalizers, vec!["example.com/hold".to_string()]);
}

#[tokio::test(flavor = "multi_thread")]
async fn foreground_deletion_of_an_ownership_cycle_finishes() {
    let cluster = Cluster::full().await;
    let url = cluster.registry.as_ref().expect("registry").url();
    let mut m = Manager::start(&url, "gc-1", Duration::from_secs(5), 4).await;
    m.wait_leading(Duration::from_secs(5)).await;
    let mut cms = cluster.config_maps().await;
    // a owns b and b owns a, both references blocking.
    let a = create_cm(&mut cms, "cycle-a", vec![], &[]).await;
    let b = create_cm(
        &mut cms,
        "cycle-b",
        vec![owner("v1", "ConfigMap", &a, Some(true))],
        &[],
    )
    .await;
    let mut a_now = get_cm(&mut cms, "cycle-a").await.expect("a");
    a_now.metadata.as_mut().expect("meta").owner_references =
        vec![owner("v1", "ConfigMap", &b, Some(true))];
    cms.update(UpdateConfigMapRequest {
        namespace: NS.into(),
        config_map: Some(a_now),
        dry_run: false,
    })
    .await
    .expect("a owned by b");
    // A third, outside the cycle, owned by a: it goes too.
    create_cm(
        &mut cms,
        "cycle-leaf",
        vec![owner("v1", "ConfigMap", &a, Some(true))],
        &[],
    )
    .await;
    delete_cm(&mut cms, "cycle-a", PropagationPolicy::Foreground).await;
    // b waits for a (its owner, deleted in the foreground) and a waits for b (its blocking
    // dependent): without upstream's cycle breaking neither ever goes.
    eventually(
        "both objects of the cycle and the leaf are deleted",
        Duration::from_secs(20),
        || {
            let cms = cms.clone();
            async move {
                gone(&cms, "cycle-a").await
                    && gone(&cms, "cycle-b").await
                    && gone(&cms, "cycle-leaf").await
            }
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_kind_defined_while_the_collector_runs_is_collected_and_dropped_with_its_definition() {
    let cluster = Cluster::full().await;
    let url = cluster.registry.as_ref().expect("registry").url();
    let mut m = Manager::start(&url, "gc-1", Duration::from_secs(5), 4).await;
    m.wait_leading(Duration::from_secs(5)).await;
    let metrics = m.handle.metrics_addr.expect("metrics");
    let monitors = move || async move {
        sample(&scrape(metrics).await, "garbagecollector_monitors").unwrap_or(0.0)
    };
    // The built-in kinds' monitors (Events excepted).
    eventually(
        "the built-in kinds are monitored",
        Duration::from_secs(10),
        || async move { monitors().await == 4.0 },
    )
    .await;

    // Defined after the collector started (the only other custom cascade registers its
    // definition first).
    register_crontab(&url).await;
    eventually(
        "the new kind is monitored",
        Duration::from_secs(10),
        || async move { monitors().await == 5.0 },
    )
    .await;
    // A CronTab owned by a ConfigMap: only a collector that watches CronTabs knows the
    // ConfigMap has a dependent to collect.
    let mut cms = cluster.config_maps().await;
    let o = create_cm(&mut cms, "tab-owner", vec![], &[]).await;
    let mut objects = CustomObjectsClient::new(channel(&url).await);
    let target = |name: &str| GetCustomObjectRequest {
        group: "stable.example.com".into(),
        version: "v1".into(),
        plural: "crontabs".into(),
        namespace: NS.into(),
        name: name.into(),
    };
    objects
        .create(CreateCustomObjectRequest {
            group: "stable.example.com".into(),
            version: "v1".into(),
            plural: "crontabs".into(),
            namespace: NS.into(),
            object: Some(
                serde_json::from_value(json!({
                    "apiVersion": "stable.example.com/v1",
                    "kind": "CronTab",
                    "metadata": {
                        "name": "owned-tab",
                        "ownerReferences": [{
                            "apiVersion": "v1", "kind": "ConfigMap",
                            "name": o.name, "uid": o.uid,
                        }],
                    },
                    "spec": {"cronSpec": "* * * * *"},
                }))
                .expect("struct"),
            ),
            dry_run: false,
        })
        .await
        .expect("create the dependent CronTab");
    delete_cm(&mut cms, "tab-owner", PropagationPolicy::Background).await;
    eventually(
        "the CronTab dependent is collected",
        Duration::from_secs(15),
        || {
            let mut objects = objects.clone();
            let get = target("owned-tab");
            async move {
                match objects.get(get).await {
                    Err(e) if e.code() == Code::NotFound => true,
                    Err(e) => panic!("get: {e:?}"),
                    Ok(_) => false,
                }
            }
        },
    )
    .await;

    // The definition goes: the collector stops watching its kind.
    let mut defs = CustomResourceDefinitionsClient::new(channel(&url).await);
    defs.delete(DeleteCustomResourceDefinitionRequest {
        name: "crontabs.stable.example.com".into(),
        options: None,
    })
    .await
    .expect("delete the definition");
    eventually(
        "the deleted kind is no longer monitored",
        Duration::from_secs(15),
        || async move { monitors().await == 4.0 },
    )
    .await;
}
