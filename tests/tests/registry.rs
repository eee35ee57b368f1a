//! registry-svc end to end: real etcd, storage-svc and registry-svc, through gRPC only (plus a
//! raw etcd client where the test must see what was stored).

use std::time::{Duration, Instant};

use kubestore_proto::{
    core::v1::{
        ConfigMap, Container, CreateConfigMapRequest, CreateEventRequest, CreatePodRequest,
        DeleteConfigMapRequest, DeletePodRequest, Event, GetConfigMapRequest, GetEventRequest,
        GetPodRequest, Pod, PodSpec, PodStatus, ResourceRequirements, UpdateConfigMapRequest,
        UpdatePodRequest, config_maps_client::ConfigMapsClient, pods_client::PodsClient,
    },
    meta::v1::{DeleteOptions, ObjectMeta, Preconditions, PropagationPolicy},
};
use kubestore_tests::{Cluster, ClusterOptions};
use prost_types::Timestamp;
use tonic::{Code, Status, transport::Channel};
use tonic_types::StatusExt;

const NS: &str = "default";

fn reason(s: &Status) -> String {
    s.get_details_error_info()
        .map(|i| i.reason)
        .unwrap_or_default()
}

fn container(image: &str, requests: &[(&str, &str)], limits: &[(&str, &str)]) -> Container {
    let m = |p: &[(&str, &str)]| {
        p.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    Container {
        name: "app".into(),
        image: image.into(),
        resources: Some(ResourceRequirements {
            requests: m(requests),
            limits: m(limits),
        }),
    }
}

fn pod(name: &str, node: &str) -> Pod {
    Pod {
        metadata: Some(ObjectMeta {
            name: name.into(),
            ..Default::default()
        }),
        spec: Some(PodSpec {
            containers: vec![container("nginx:1", &[], &[])],
            node_name: node.into(),
            ..Default::default()
        }),
        status: None,
    }
}

fn cm(name: &str, finalizers: &[&str]) -> ConfigMap {
    ConfigMap {
        metadata: Some(ObjectMeta {
            name: name.into(),
            finalizers: finalizers.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }),
        data: [("k".to_string(), "v".to_string())].into(),
        immutable: None,
    }
}

fn meta<T>(o: &T) -> ObjectMeta
where
    T: HasMeta,
{
    o.meta_ref().clone().unwrap_or_default()
}

trait HasMeta {
    fn meta_ref(&self) -> &Option<ObjectMeta>;
}
impl HasMeta for Pod {
    fn meta_ref(&self) -> &Option<ObjectMeta> {
        &self.metadata
    }
}
impl HasMeta for ConfigMap {
    fn meta_ref(&self) -> &Option<ObjectMeta> {
        &self.metadata
    }
}

async fn create_pod(c: &mut PodsClient<Channel>, p: Pod) -> Result<Pod, Status> {
    Ok(c.create(CreatePodRequest {
        namespace: NS.into(),
        pod: Some(p),
        dry_run: false,
    })
    .await?
    .into_inner())
}
async fn get_pod(c: &mut PodsClient<Channel>, name: &str) -> Result<Pod, Status> {
    Ok(c.get(GetPodRequest {
        namespace: NS.into(),
        name: name.into(),
    })
    .await?
    .into_inner())
}
async fn update_pod(c: &mut PodsClient<Channel>, p: Pod) -> Result<Pod, Status> {
    Ok(c.update(UpdatePodRequest {
        namespace: NS.into(),
        pod: Some(p),
        dry_run: false,
    })
    .await?
    .into_inner())
}
async fn delete_pod(
    c: &mut PodsClient<Channel>,
    name: &str,
    options: Option<DeleteOptions>,
) -> Result<(Pod, bool), Status> {
    let r = c
        .delete(DeletePodRequest {
            namespace: NS.into(),
            name: name.into(),
            options,
        })
        .await?
        .into_inner();
    Ok((r.pod.unwrap_or_default(), r.deleted))
}
async fn create_cm(c: &mut ConfigMapsClient<Channel>, m: ConfigMap) -> Result<ConfigMap, Status> {
    Ok(c.create(CreateConfigMapRequest {
        namespace: NS.into(),
        config_map: Some(m),
        dry_run: false,
    })
    .await?
    .into_inner())
}
async fn get_cm(c: &mut ConfigMapsClient<Channel>, name: &str) -> Result<ConfigMap, Status> {
    Ok(c.get(GetConfigMapRequest {
        namespace: NS.into(),
        name: name.into(),
    })
    .await?
    .into_inner())
}
async fn update_cm(c: &mut ConfigMapsClient<Channel>, m: ConfigMap) -> Result<ConfigMap, Status> {
    Ok(c.update(UpdateConfigMapRequest {
        namespace: NS.into(),
        config_map: Some(m),
        dry_run: false,
    })
    .await?
    .into_inner())
}
async fn delete_cm(
    c: &mut ConfigMapsClient<Channel>,
    name: &str,
    options: Option<DeleteOptions>,
) -> Result<(ConfigMap, bool), Status> {
    let r = c
        .delete(DeleteConfigMapRequest {
            namespace: NS.into(),
            name: name.into(),
            options,
        })
        .await?
        .into_inner();
    Ok((r.config_map.unwrap_or_default(), r.deleted))
}
fn grace(g: i64) -> Option<DeleteOptions> {
    Some(DeleteOptions {
        grace_period_seconds: Some(g),
        ..Default::default()
    })
}
fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

#[tokio::test(flavor = "multi_thread")]
async fn pod_create_sets_system_fields_status_and_qos() {
    let cluster = Cluster::full().await;
    let mut pods = cluster.pods().await;
    let mut p = pod("web", "node-1");
    let m = p.metadata.as_mut().expect("meta");
    m.uid = "client-chosen".into();
    m.creation_timestamp = Some(Timestamp {
        seconds: 1,
        nanos: 0,
    });
    m.generation = 7;
    p.status = Some(PodStatus {
        phase: "Running".into(),
        qos_class: "Guaranteed".into(),
    });
    p.spec.as_mut().expect("spec").containers = vec![container(
        "nginx:1",
        &[("cpu", "100m")],
        &[("cpu", "200m"), ("memory", "64Mi")],
    )];
    let before = now_secs();
    let out = create_pod(&mut pods, p).await.expect("create");
    let m = meta(&out);
    assert_ne!(m.uid, "client-chosen");
    assert_eq!(m.uid.len(), 36);
    assert!(m.creation_timestamp.expect("set").seconds >= before);
    assert_eq!(m.generation, 1);
    assert_eq!(m.namespace, NS, "namespace from the request");
    assert!(!m.resource_version.is_empty());
    let status = out.status.clone().expect("status");
    assert_eq!(
        (status.phase.as_str(), status.qos_class.as_str()),
        ("Pending", "Burstable")
    );
    assert_eq!(
        out.spec.as_ref().expect("spec").restart_policy,
        "Always",
        "defaulted"
    );
    assert_eq!(get_pod(&mut pods, "web").await.expect("get"), out);

    // QoS classes.
    let mut g = pod("guaranteed", "node-1");
    g.spec.as_mut().expect("spec").containers =
        vec![container("x", &[], &[("cpu", "1"), ("memory", "1Gi")])];
    assert_eq!(
        create_pod(&mut pods, g)
            .await
            .expect("create")
            .status
            .expect("status")
            .qos_class,
        "Guaranteed"
    );
    assert_eq!(
        create_pod(&mut pods, pod("besteffort", ""))
            .await
            .expect("create")
            .status
            .expect("status")
            .qos_class,
        "BestEffort"
    );

    // Taken name.
    let e = create_pod(&mut pods, pod("web", ""))
        .await
        .expect_err("exists");
    assert_eq!(
        (e.code(), reason(&e).as_str()),
        (Code::AlreadyExists, "AlreadyExists")
    );
    assert_eq!(e.message(), "pods \"web\" already exists");
}

#[tokio::test(flavor = "multi_thread")]
async fn create_validates_every_field_and_reconciles_the_namespace() {
    let cluster = Cluster::full().await;
    let mut pods = cluster.pods().await;
    let mut bad = pod("Bad_Name", "node-1");
    bad.metadata
        .as_mut()
        .expect("meta")
        .labels
        .insert("bad key!".into(), "v".into());
    let spec = bad.spec.as_mut().expect("spec");
    spec.containers = vec![container(
        "",
        &[("cpu", "2")],
        &[("cpu", "1"), ("memory", "lots")],
    )];
    spec.restart_policy = "Sometimes".into();
    let e = create_pod(&mut pods, bad).await.expect_err("invalid");
    assert_eq!(
        (e.code(), reason(&e).as_str()),
        (Code::InvalidArgument, "Invalid")
    );
    let fields: Vec<String> = e
        .get_details_bad_request()
        .expect("BadRequest")
        .field_violations
        .into_iter()
        .map(|v| v.field)
        .collect();
    for f in [
        "metadata.name",
        "metadata.labels",
        "spec.containers[0].image",
        "spec.containers[0].resources.limits[memory]",
        "spec.containers[0].resources.requests[cpu]",
        "spec.restartPolicy",
    ] {
        assert!(fields.iter().any(|x| x == f), "{f} missing from {fields:?}");
    }
    // No object, no containers, bad names in the key.
    let e = pods
        .create(CreatePodRequest {
            namespace: NS.into(),
            pod: None,
            dry_run: false,
        })
        .await
        .expect_err("no pod");
    assert_eq!(e.code(), Code::InvalidArgument);
    let mut empty = pod("empty", "");
    empty.spec.as_mut().expect("spec").containers.clear();
    assert_eq!(
        create_pod(&mut pods, empty)
            .await
            .expect_err("no containers")
            .code(),
        Code::InvalidArgument
    );
    let e = get_pod(&mut pods, "a/b").await.expect_err("slash");
    assert_eq!(
        (e.code(), reason(&e).as_str()),
        (Code::InvalidArgument, "BadRequest")
    );
    let e = pods
        .get(GetPodRequest {
            namespace: String::new(),
            name: "x".into(),
        })
        .await
        .expect_err("no ns");
    assert_eq!(e.code(), Code::InvalidArgument);
    // Namespace mismatch.
    let mut other = pod("other-ns", "");
    other.metadata.as_mut().expect("meta").namespace = "kube-system".into();
    let e = create_pod(&mut pods, other.clone())
        .await
        .expect_err("mismatch");
    assert_eq!(
        (e.code(), reason(&e).as_str()),
        (Code::InvalidArgument, "BadRequest")
    );
    // The object's namespace is used when the request has none.
    let out = pods
        .create(CreatePodRequest {
            namespace: String::new(),
            pod: Some(other),
            dry_run: false,
        })
        .await
        .expect("ns from object");
    assert_eq!(
        out.into_inner().metadata.expect("meta").namespace,
        "kube-system"
    );
    // A resourceVersion on create.
    let mut with_rv = pod("with-rv", "");
    with_rv.metadata.as_mut().expect("meta").resource_version = "12".into();
    assert_eq!(
        create_pod(&mut pods, with_rv).await.expect_err("rv").code(),
        Code::InvalidArgument
    );
    // Nothing invalid was stored.
    for n in ["Bad_Name", "empty", "with-rv"] {
        assert!(get_pod(&mut pods, n).await.is_err());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn generate_name_and_dry_run_create() {
    let cluster = Cluster::full().await;
    let mut pods = cluster.pods().await;
    let mut names = std::collections::BTreeSet::new();
    for _ in 0..5 {
        let mut p = pod("", "");
        p.metadata.as_mut().expect("meta").generate_name = "worker-".into();
        let out = create_pod(&mut pods, p).await.expect("create");
        let name = meta(&out).name;
        assert!(
            name.starts_with("worker-") && name.len() == "worker-".len() + 5,
            "{name}"
        );
        names.insert(name);
    }
    assert_eq!(names.len(), 5);
    let out = pods
        .create(CreatePodRequest {
            namespace: NS.into(),
            pod: Some(pod("dry", "")),
            dry_run: true,
        })
        .await
        .expect("dry");
    let out = out.into_inner();
    assert_eq!(
        out.status.as_ref().expect("status").phase,
        "Pending",
        "every step ran"
    );
    assert!(meta(&out).resource_version.is_empty());
    assert_eq!(
        get_pod(&mut pods, "dry")
            .await
            .expect_err("not stored")
            .code(),
        Code::NotFound
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn updates_are_optimistic_and_keep_server_owned_fields() {
    let cluster = Cluster::full().await;
    let mut pods = cluster.pods().await;
    let created = create_pod(&mut pods, pod("web", "node-1"))
        .await
        .expect("create");
    let rv0 = meta(&created).resource_version;

    // Image change: allowed, generation bumps, status unchanged even if the client sends one.
    let mut u = created.clone();
    u.spec.as_mut().expect("spec").containers[0].image = "nginx:2".into();
    u.status = Some(PodStatus {
        phase: "Running".into(),
        qos_class: "Guaranteed".into(),
    });
    let m = u.metadata.as_mut().expect("meta");
    m.generation = 42;
    m.creation_timestamp = None;
    m.uid.clear();
    let updated = update_pod(&mut pods, u).await.expect("update");
    let um = meta(&updated);
    assert_eq!(um.generation, 2);
    assert_eq!(
        um.uid,
        meta(&created).uid,
        "uid kept from the stored object"
    );
    assert_eq!(um.creation_timestamp, meta(&created).creation_timestamp);
    assert_eq!(
        updated.status, created.status,
        "status is not writable through Update"
    );
    assert_ne!(um.resource_version, rv0);

    // Stale resourceVersion: Conflict, nothing written.
    let mut stale = created.clone();
    stale.spec.as_mut().expect("spec").containers[0].image = "nginx:3".into();
    let e = update_pod(&mut pods, stale.clone())
        .await
        .expect_err("stale");
    assert_eq!((e.code(), reason(&e).as_str()), (Code::Aborted, "Conflict"));
    assert!(
        e.message().contains("the object has been modified"),
        "{}",
        e.message()
    );
    assert_eq!(get_pod(&mut pods, "web").await.expect("get"), updated);

    // Empty resourceVersion: unconditional update (Pod allows it).
    stale
        .metadata
        .as_mut()
        .expect("meta")
        .resource_version
        .clear();
    let forced = update_pod(&mut pods, stale).await.expect("unconditional");
    assert_eq!(
        forced.spec.as_ref().expect("spec").containers[0].image,
        "nginx:3"
    );

    // Spec immutable except images.
    let mut moved = forced.clone();
    moved.spec.as_mut().expect("spec").node_name = "node-2".into();
    let e = update_pod(&mut pods, moved).await.expect_err("node change");
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(
        e.message().contains("spec.containers[*].image"),
        "{}",
        e.message()
    );

    // A different uid is a precondition failure.
    let mut other_uid = forced.clone();
    other_uid.metadata.as_mut().expect("meta").uid = "someone-else".into();
    assert_eq!(
        update_pod(&mut pods, other_uid)
            .await
            .expect_err("uid")
            .code(),
        Code::Aborted
    );

    // No create on update.
    let e = update_pod(&mut pods, pod("missing", ""))
        .await
        .expect_err("missing");
    assert_eq!(
        (e.code(), reason(&e).as_str()),
        (Code::NotFound, "NotFound")
    );

    // Dry-run update: checked, returned, not written.
    let mut dry = forced.clone();
    dry.spec.as_mut().expect("spec").containers[0].image = "nginx:dry".into();
    let out = pods
        .update(UpdatePodRequest {
            namespace: NS.into(),
            pod: Some(dry),
            dry_run: true,
        })
        .await
        .expect("dry")
        .into_inner();
    assert_eq!(out.spec.expect("spec").containers[0].image, "nginx:dry");
    assert_eq!(get_pod(&mut pods, "web").await.expect("get"), forced);
}

#[tokio::test(flavor = "multi_thread")]
async fn immutable_config_maps_refuse_changes() {
    let cluster = Cluster::full().await;
    let mut cms = cluster.config_maps().await;
    let mut m = cm("frozen", &[]);
    m.immutable = Some(true);
    let created = create_cm(&mut cms, m).await.expect("create");
    let mut changed = created.clone();
    changed.data.insert("k".into(), "other".into());
    let e = update_cm(&mut cms, changed)
        .await
        .expect_err("immutable data");
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(e.message().contains("immutable"), "{}", e.message());
    let mut thawed = created.clone();
    thawed.immutable = Some(false);
    assert_eq!(
        update_cm(&mut cms, thawed)
            .await
            .expect_err("immutable flag")
            .code(),
        Code::InvalidArgument
    );
    // Labels may still change.
    let mut labelled = created.clone();
    labelled
        .metadata
        .as_mut()
        .expect("meta")
        .labels
        .insert("team".into(), "a".into());
    update_cm(&mut cms, labelled)
        .await
        .expect("labels are not data");
    // Bad keys and oversize data.
    let mut bad = cm("bad", &[]);
    bad.data.insert("no/slash".into(), "x".into());
    assert_eq!(
        create_cm(&mut cms, bad).await.expect_err("key").code(),
        Code::InvalidArgument
    );
    let mut big = cm("big", &[]);
    big.data.insert("blob".into(), "x".repeat(1024 * 1024 + 1));
    assert_eq!(
        create_cm(&mut cms, big).await.expect_err("size").code(),
        Code::InvalidArgument
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn two_phase_pod_deletion_as_the_kubernetes_docs_describe() {
    let cluster = Cluster::full().await;
    let mut pods = cluster.pods().await;
    let created = create_pod(&mut pods, pod("web", "node-1"))
        .await
        .expect("create");
    let uid = meta(&created).uid;
    let before = now_secs();

    // 1. Default grace: deletionTimestamp set, deleted=false.
    let (marked, deleted) = delete_pod(&mut pods, "web", None).await.expect("delete");
    assert!(!deleted);
    let m = meta(&marked);
    assert_eq!(m.deletion_grace_period_seconds, Some(30));
    let dt = m.deletion_timestamp.expect("deletionTimestamp").seconds;
    assert!(dt >= before + 30 && dt <= now_secs() + 30, "{dt}");
    assert_eq!(m.generation, 2);
    assert_eq!(
        get_pod(&mut pods, "web").await.expect("still there"),
        marked
    );

    // 2. The kubelet: grace 0 with a UID precondition removes it.
    let options = DeleteOptions {
        grace_period_seconds: Some(0),
        preconditions: Some(Preconditions {
            uid: Some(uid),
            resource_version: None,
        }),
        ..Default::default()
    };
    let (last, deleted) = delete_pod(&mut pods, "web", Some(options.clone()))
        .await
        .expect("final delete");
    assert!(deleted);
    assert_eq!(meta(&last).name, "web");

    // 3. Gone.
    let e = delete_pod(&mut pods, "web", Some(options))
        .await
        .expect_err("third");
    assert_eq!(
        (e.code(), reason(&e).as_str()),
        (Code::NotFound, "NotFound")
    );
    assert_eq!(
        get_pod(&mut pods, "web").await.expect_err("gone").code(),
        Code::NotFound
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn grace_periods_only_shorten() {
    let cluster = Cluster::full().await;
    let mut pods = cluster.pods().await;
    let mut p = pod("web", "node-1");
    p.spec
        .as_mut()
        .expect("spec")
        .termination_grace_period_seconds = Some(60);
    create_pod(&mut pods, p).await.expect("create");
    let (first, deleted) = delete_pod(&mut pods, "web", None).await.expect("delete");
    assert!(!deleted);
    let fm = meta(&first);
    assert_eq!(
        fm.deletion_grace_period_seconds,
        Some(60),
        "the pod's terminationGracePeriodSeconds"
    );
    let dt0 = fm.deletion_timestamp.expect("dt").seconds;

    // Longer or equal: pending, nothing written.
    for g in [60, 120] {
        let (same, deleted) = delete_pod(&mut pods, "web", grace(g))
            .await
            .expect("pending");
        assert!(!deleted);
        assert_eq!(
            meta(&same).resource_version,
            fm.resource_version,
            "no write for grace {g}"
        );
    }
    // Shorter: deletionTimestamp moves earlier, generation unchanged.
    let (short, deleted) = delete_pod(&mut pods, "web", grace(10))
        .await
        .expect("shorten");
    assert!(!deleted);
    let sm = meta(&short);
    assert_eq!(sm.deletion_grace_period_seconds, Some(10));
    assert_eq!(sm.deletion_timestamp.expect("dt").seconds, dt0 - 50);
    assert_eq!(sm.generation, fm.generation);
    // Negative grace: rejected, nothing changes.
    let e = delete_pod(&mut pods, "web", grace(-5))
        .await
        .expect_err("negative");
    assert_eq!(
        (e.code(), reason(&e).as_str()),
        (Code::InvalidArgument, "Invalid")
    );
    assert_eq!(get_pod(&mut pods, "web").await.expect("get"), short);
    // Grace 0 deletes.
    let (_, deleted) = delete_pod(&mut pods, "web", grace(0)).await.expect("now");
    assert!(deleted);
}

#[tokio::test(flavor = "multi_thread")]
async fn unscheduled_pods_and_config_maps_are_deleted_at_once() {
    let cluster = Cluster::full().await;
    let mut pods = cluster.pods().await;
    create_pod(&mut pods, pod("pending", ""))
        .await
        .expect("create");
    let (last, deleted) = delete_pod(&mut pods, "pending", None)
        .await
        .expect("delete");
    assert!(deleted, "a pod on no node has nothing to terminate");
    assert_eq!(meta(&last).deletion_grace_period_seconds, Some(0));
    let mut cms = cluster.config_maps().await;
    create_cm(&mut cms, cm("plain", &[])).await.expect("create");
    let (last, deleted) = delete_cm(&mut cms, "plain", grace(30))
        .await
        .expect("delete");
    assert!(deleted, "ConfigMaps have no graceful deletion");
    assert!(meta(&last).deletion_timestamp.is_none());
    assert_eq!(
        get_cm(&mut cms, "plain").await.expect_err("gone").code(),
        Code::NotFound
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn finalizers_hold_objects_until_removed() {
    let cluster = Cluster::full().await;
    let mut cms = cluster.config_maps().await;
    create_cm(&mut cms, cm("held", &["example.com/protect"]))
        .await
        .expect("create");
    let (marked, deleted) = delete_cm(&mut cms, "held", None).await.expect("delete");
    assert!(!deleted);
    let m = meta(&marked);
    assert!(m.deletion_timestamp.is_some());
    assert_eq!(m.deletion_grace_period_seconds, Some(0));
    let held = get_cm(&mut cms, "held").await.expect("still there");
    assert_eq!(held, marked);
    // Deleting again changes nothing and still does not delete.
    let (again, deleted) = delete_cm(&mut cms, "held", None)
        .await
        .expect("delete again");
    assert!(!deleted);
    assert_eq!(meta(&again).deletion_timestamp, m.deletion_timestamp);
    // No new finalizers on an object being deleted.
    let mut more = held.clone();
    more.metadata
        .as_mut()
        .expect("meta")
        .finalizers
        .push("example.com/other".into());
    let e = update_cm(&mut cms, more).await.expect_err("new finalizer");
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(e.message().contains("no new finalizers"), "{}", e.message());
    // Other updates are fine, deletion fields are kept even if the client drops them.
    let mut edit = held.clone();
    edit.data.insert("k2".into(), "v2".into());
    edit.metadata.as_mut().expect("meta").deletion_timestamp = None;
    let edited = update_cm(&mut cms, edit).await.expect("edit");
    assert_eq!(meta(&edited).deletion_timestamp, m.deletion_timestamp);
    // Removing the last finalizer deletes it.
    let mut release = edited.clone();
    release.metadata.as_mut().expect("meta").finalizers.clear();
    let out = update_cm(&mut cms, release).await.expect("release");
    assert!(meta(&out).finalizers.is_empty());
    assert_eq!(
        get_cm(&mut cms, "held").await.expect_err("gone").code(),
        Code::NotFound
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn graceful_pods_with_finalizers_wait_for_both() {
    let cluster = Cluster::full().await;
    let mut pods = cluster.pods().await;
    let mut p = pod("web", "node-1");
    p.metadata.as_mut().expect("meta").finalizers = vec!["example.com/cleanup".into()];
    create_pod(&mut pods, p).await.expect("create");
    let (_, deleted) = delete_pod(&mut pods, "web", grace(0))
        .await
        .expect("delete");
    assert!(!deleted, "grace 0 but a finalizer is left");
    let m = meta(&get_pod(&mut pods, "web").await.expect("still there"));
    assert_eq!(m.deletion_grace_period_seconds, Some(0));
    let mut release = get_pod(&mut pods, "web").await.expect("get");
    release.metadata.as_mut().expect("meta").finalizers.clear();
    update_pod(&mut pods, release).await.expect("release");
    assert_eq!(
        get_pod(&mut pods, "web").await.expect_err("gone").code(),
        Code::NotFound
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn propagation_policy_sets_gc_finalizers() {
    let cluster = Cluster::full().await;
    let mut cms = cluster.config_maps().await;
    let policy = |p: PropagationPolicy| {
        Some(DeleteOptions {
            propagation_policy: p as i32,
            ..Default::default()
        })
    };
    create_cm(&mut cms, cm("orphaned", &[]))
        .await
        .expect("create");
    let (out, deleted) = delete_cm(&mut cms, "orphaned", policy(PropagationPolicy::Orphan))
        .await
        .expect("orphan");
    assert!(!deleted);
    assert_eq!(meta(&out).finalizers, vec!["orphan".to_string()]);
    assert!(meta(&out).deletion_timestamp.is_some());

    create_cm(&mut cms, cm("fg", &["example.com/x"]))
        .await
        .expect("create");
    let (out, deleted) = delete_cm(&mut cms, "fg", policy(PropagationPolicy::Foreground))
        .await
        .expect("foreground");
    assert!(!deleted);
    assert_eq!(
        meta(&out).finalizers,
        vec![
            "example.com/x".to_string(),
            "foregroundDeletion".to_string()
        ]
    );

    // Background on an object whose only finalizer is `orphan`: removed, and the object goes.
    create_cm(&mut cms, cm("bg", &["orphan"]))
        .await
        .expect("create");
    let (_, deleted) = delete_cm(&mut cms, "bg", policy(PropagationPolicy::Background))
        .await
        .expect("background");
    assert!(deleted);
    assert_eq!(
        get_cm(&mut cms, "bg").await.expect_err("gone").code(),
        Code::NotFound
    );

    let e = delete_cm(
        &mut cms,
        "fg",
        Some(DeleteOptions {
            propagation_policy: 42,
            ..Default::default()
        }),
    )
    .await
    .expect_err("bad policy");
    assert_eq!(e.code(), Code::InvalidArgument);
}

#[tokio::test(flavor = "multi_thread")]
async fn delete_preconditions_and_dry_run_leave_the_object() {
    let cluster = Cluster::full().await;
    let mut cms = cluster.config_maps().await;
    let created = create_cm(&mut cms, cm("a", &[])).await.expect("create");
    let m = meta(&created);
    for pre in [
        Preconditions {
            uid: Some("other".into()),
            resource_version: None,
        },
        Preconditions {
            uid: None,
            resource_version: Some("1".into()),
        },
    ] {
        let e = delete_cm(
            &mut cms,
            "a",
            Some(DeleteOptions {
                preconditions: Some(pre),
                ..Default::default()
            }),
        )
        .await
        .expect_err("precondition");
        assert_eq!((e.code(), reason(&e).as_str()), (Code::Aborted, "Conflict"));
        assert_eq!(get_cm(&mut cms, "a").await.expect("stays"), created);
    }
    let (out, deleted) = delete_cm(
        &mut cms,
        "a",
        Some(DeleteOptions {
            dry_run: true,
            ..Default::default()
        }),
    )
    .await
    .expect("dry");
    assert!(deleted);
    assert_eq!(meta(&out).uid, m.uid);
    assert_eq!(
        get_cm(&mut cms, "a").await.expect("dry run keeps it"),
        created
    );
    let ok = Preconditions {
        uid: Some(m.uid.clone()),
        resource_version: Some(m.resource_version.clone()),
    };
    let (_, deleted) = delete_cm(
        &mut cms,
        "a",
        Some(DeleteOptions {
            preconditions: Some(ok),
            ..Default::default()
        }),
    )
    .await
    .expect("delete");
    assert!(deleted);
}

#[tokio::test(flavor = "multi_thread")]
async fn events_expire_with_their_ttl() {
    let cluster = Cluster::start(ClusterOptions {
        registry: Some(registry_svc::Config {
            event_ttl: Duration::from_secs(2),
            ..Default::default()
        }),
        ..Default::default()
    })
    .await;
    let mut events = cluster.events().await;
    let e = Event {
        metadata: Some(ObjectMeta {
            name: "started".into(),
            ..Default::default()
        }),
        reason: "Started".into(),
        r#type: "Normal".into(),
        count: 1,
        ..Default::default()
    };
    events
        .create(CreateEventRequest {
            namespace: NS.into(),
            event: Some(e),
            dry_run: false,
        })
        .await
        .expect("create");
    let mut etcd = cluster.etcd.client().await;
    let kv = etcd
        .get("/registry/events/default/started", None)
        .await
        .expect("get")
        .take_kvs()
        .pop()
        .expect("stored");
    assert_ne!(kv.lease(), 0, "stored with a lease");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match events
            .get(GetEventRequest {
                namespace: NS.into(),
                name: "started".into(),
            })
            .await
        {
            Err(s) if s.code() == Code::NotFound => break,
            Err(s) => panic!("{s:?}"),
            Ok(_) => assert!(Instant::now() < deadline, "event did not expire"),
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn registry_health_follows_storage() {
    let mut cluster = Cluster::full().await;
    let url = cluster.registry.as_ref().expect("registry").url();
    cluster.storage.stop();
    let deadline = Instant::now() + Duration::from_secs(10);
    while kubestore_telemetry::health::check(&url, "", Duration::from_secs(1))
        .await
        .is_ok()
    {
        assert!(
            Instant::now() < deadline,
            "registry stayed SERVING without storage"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut pods = cluster.pods().await;
    let e = get_pod(&mut pods, "x").await.expect_err("storage down");
    assert_eq!(e.code(), Code::Unavailable, "{e:?}");
}
