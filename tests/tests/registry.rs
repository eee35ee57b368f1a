//! registry-svc end to end: real etcd, storage-svc and registry-svc, through gRPC only (plus a
//! raw etcd client where the test must see what was stored).

use std::time::{Duration, Instant};

use kubestore_proto::Timestamp;
use kubestore_proto::{
    core::v1::{
        CreateEventRequest, CreatePodRequest, Event, GetEventRequest, GetPodRequest, PodStatus,
        UpdatePodRequest,
    },
    meta::v1::ObjectMeta,
};
use kubestore_tests::fixtures_registry::*;
use kubestore_tests::{Cluster, ClusterOptions};
use tonic::Code;
use tonic_types::StatusExt;

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
        ..Default::default()
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
        ..Default::default()
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
