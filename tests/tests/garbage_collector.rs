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
        custom_objects_client::CustomObjectsClient,
        custom_resource_definitions_client::CustomResourceDefinitionsClient,
    },
    coordination::v1::{GetLeaseRequest, leases_client::LeasesClient},
    core::v1::{
        ConfigMap, CreateConfigMapRequest, CreateSecretRequest, DeleteConfigMapRequest,
        GetConfigMapRequest, GetSecretRequest, ListConfigMapsRequest, Secret,
        UpdateConfigMapRequest, config_maps_client::ConfigMapsClient,
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
    c.create(CreateConfigMapRequest {
        namespace: NS.into(),
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
    match c
        .get(GetConfigMapRequest {
            namespace: NS.into(),
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
    // What it did is reported: an event on the owner, and the metrics.
    let events = cluster.events().await;
    eventually(
        "a DeletingDependents event names the owner",
        Duration::from_secs(5),
        || {
            let (mut events, uid) = (events.clone(), tab_meta.uid.clone());
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
                        e.reason == "DeletingDependents"
                            && e.involved_object.as_ref().is_some_and(|o| {
                                o.uid == uid && o.kind == "CronTab" && o.name == "nightly"
                            })
                    })
            }
        },
    )
    .await;
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
    // Only the leader acts: it collects a dependent, the standby deletes nothing.
    let mut cms = cluster.config_maps().await;
    let first_owner = create_cm(&mut cms, "first-owner", vec![], &[]).await;
    create_cm(
        &mut cms,
        "first-dep",
        vec![owner("v1", "ConfigMap", &first_owner, None)],
        &[],
    )
    .await;
    delete_cm(&mut cms, "first-owner", PropagationPolicy::Background).await;
    eventually("the leader collects", Duration::from_secs(10), || {
        let cms = cms.clone();
        async move { gone(&cms, "first-dep").await }
    })
    .await;
    let deleted =
        |text: &str| sample(text, "garbagecollector_deleted_dependents_total").unwrap_or(0.0);
    assert!(deleted(&scrape(one.metrics).await) >= 1.0);
    assert_eq!(
        deleted(&scrape(two.metrics).await),
        0.0,
        "the standby acted"
    );
    let mut leases = LeasesClient::new(channel(&url).await);
    let held = leases
        .get(GetLeaseRequest {
            namespace: "kube-system".into(),
            name: "kube-controller-manager".into(),
        })
        .await
        .expect("the lease exists")
        .into_inner()
        .spec
        .expect("spec");
    assert_eq!(held.holder_identity.as_deref(), Some("cm-one"));
    assert_eq!(held.lease_duration_seconds, Some(3));
    let transitions = held.lease_transitions.unwrap_or(0);

    one.kill();
    let killed = std::time::SystemTime::now();
    two.wait_leading(lease + Duration::from_secs(3)).await;
    let now = leases
        .get(GetLeaseRequest {
            namespace: "kube-system".into(),
            name: "kube-controller-manager".into(),
        })
        .await
        .expect("lease")
        .into_inner()
        .spec
        .expect("spec");
    // When the new leader took the Lease (the acquireTime it wrote), not when this test's poll
    // of its metrics noticed: on a loaded machine the poll lags, the failover does not.
    let acquired = now.acquire_time.as_ref().expect("acquireTime");
    let acquired = std::time::UNIX_EPOCH
        + Duration::new(
            u64::try_from(acquired.seconds).expect("after 1970"),
            u32::try_from(acquired.nanos).expect("nanos"),
        );
    let took = acquired.duration_since(killed).unwrap_or_default();
    // The standby sees the last renewal up to one retry period late and checks again one retry
    // period after expiry; the rest is its Lease Get and Update, which take up to a second on
    // two cores shared with the other tests' controller-managers (4.9 s was seen once).
    assert!(
        took <= lease + lease / 5 * 2 + Duration::from_millis(1000),
        "took over after {took:?}, lease {lease:?}"
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
