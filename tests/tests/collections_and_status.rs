//! DeleteCollection (upstream's `TestStoreDeleteCollection*`) and the pod status subresource
//! (upstream's `podStatusStrategy`), through registry-svc.

use kubestore_proto::{
    core::v1::{
        DeleteCollectionConfigMapsRequest, DeleteCollectionPodsRequest, ListPodsRequest, Pod,
        PodStatus, UpdatePodRequest, WatchPodsRequest,
    },
    meta::v1::{DeleteOptions, ListOptions, OwnerReference, WatchEventType},
};
use kubestore_tests::{
    Cluster,
    fixtures_registry::*,
    fixtures_watch::{cm_in, list_cms, names},
};
use tonic::Code;

fn list_all() -> Option<ListOptions> {
    Some(ListOptions::default())
}

#[tokio::test(flavor = "multi_thread")]
async fn delete_collection_runs_the_normal_delete_on_each_match() {
    let cluster = Cluster::full().await;
    let mut pods = cluster.pods().await;
    for (name, node) in [
        ("s1", "n1"),
        ("s2", "n1"),
        ("s3", "n2"),
        ("u1", ""),
        ("u2", ""),
    ] {
        let mut p = pod(name, node);
        p.metadata
            .as_mut()
            .expect("meta")
            .labels
            .insert("app".into(), "web".into());
        create_pod(&mut pods, p).await.expect("create");
    }
    create_pod(&mut pods, pod("other", "n1"))
        .await
        .expect("create");
    let mut watch = pods
        .watch(WatchPodsRequest {
            namespace: NS.into(),
            options: Some(ListOptions {
                send_initial_events: Some(false),
                ..Default::default()
            }),
        })
        .await
        .expect("watch")
        .into_inner();
    let out = pods
        .delete_collection(DeleteCollectionPodsRequest {
            namespace: NS.into(),
            list_options: Some(ListOptions {
                label_selector: "app=web".into(),
                ..Default::default()
            }),
            options: None,
        })
        .await
        .expect("delete collection")
        .into_inner();
    let returned: Vec<(String, bool)> = out
        .items
        .iter()
        .map(|p| {
            let m = p.metadata.clone().expect("meta");
            (m.name, m.deletion_timestamp.is_some())
        })
        .collect();
    // Every pod went through Delete: scheduled ones are marked (graceful), unscheduled ones
    // stamped with grace 0 and removed (the list below).
    assert_eq!(
        returned,
        ["s1", "s2", "s3", "u1", "u2"].map(|n| (n.to_string(), true))
    );
    let left: Vec<String> = pods
        .list(ListPodsRequest {
            namespace: NS.into(),
            options: list_all(),
        })
        .await
        .expect("list")
        .into_inner()
        .items
        .into_iter()
        .map(|p| p.metadata.expect("meta").name)
        .collect();
    assert_eq!(left, ["other", "s1", "s2", "s3"]);
    // A watcher sees the marks and the deletions (an unscheduled pod is stamped with grace 0,
    // then removed, as upstream does).
    let mut kinds = Vec::new();
    for _ in 0..7 {
        let e = tokio::time::timeout(std::time::Duration::from_secs(5), watch.message())
            .await
            .expect("in time")
            .expect("ok")
            .expect("event");
        kinds.push(WatchEventType::try_from(e.r#type).expect("type"));
    }
    kinds.sort();
    assert_eq!(
        kinds,
        [
            WatchEventType::Modified,
            WatchEventType::Modified,
            WatchEventType::Modified,
            WatchEventType::Modified,
            WatchEventType::Modified,
            WatchEventType::Deleted,
            WatchEventType::Deleted
        ]
    );
    // Again with grace 0: the marked pods go; running it twice is fine (NotFound is skipped).
    for _ in 0..2 {
        pods.delete_collection(DeleteCollectionPodsRequest {
            namespace: NS.into(),
            list_options: Some(ListOptions {
                label_selector: "app=web".into(),
                ..Default::default()
            }),
            options: Some(DeleteOptions {
                grace_period_seconds: Some(0),
                ..Default::default()
            }),
        })
        .await
        .expect("delete collection");
    }
    let left = pods
        .list(ListPodsRequest {
            namespace: NS.into(),
            options: list_all(),
        })
        .await
        .expect("list")
        .into_inner()
        .items;
    assert_eq!(left.len(), 1);
    // Bad options fail before anything is deleted.
    let e = pods
        .delete_collection(DeleteCollectionPodsRequest {
            namespace: NS.into(),
            list_options: None,
            options: Some(DeleteOptions {
                grace_period_seconds: Some(-1),
                ..Default::default()
            }),
        })
        .await
        .expect_err("negative grace");
    assert_eq!(e.code(), Code::InvalidArgument);
    assert_eq!(
        pods.list(ListPodsRequest {
            namespace: NS.into(),
            options: list_all(),
        })
        .await
        .expect("list")
        .into_inner()
        .items
        .len(),
        1
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn delete_collection_keeps_finalizers_and_pages() {
    let cluster = Cluster::full().await;
    let mut cms = cluster.config_maps().await;
    for i in 0..7 {
        let mut c = cm_in("dc", &format!("c{i}"), &[]);
        if i == 3 {
            c.metadata
                .as_mut()
                .expect("meta")
                .finalizers
                .push("example.com/hold".into());
        }
        create_cm_in(&mut cms, "dc", c).await.expect("create");
    }
    // With a limit, one page only, and its continue token.
    let out = cms
        .delete_collection(DeleteCollectionConfigMapsRequest {
            namespace: "dc".into(),
            list_options: Some(ListOptions {
                limit: 2,
                ..Default::default()
            }),
            options: None,
        })
        .await
        .expect("one page")
        .into_inner();
    assert_eq!(names(&out.items), ["c0", "c1"]);
    assert!(!out.metadata.expect("meta").r#continue.is_empty());
    // Without: everything; the finalizer holds its object (marked).
    let out = cms
        .delete_collection(DeleteCollectionConfigMapsRequest {
            namespace: "dc".into(),
            list_options: None,
            options: None,
        })
        .await
        .expect("all")
        .into_inner();
    assert_eq!(out.items.len(), 5);
    let (_, left) = list_cms(&mut cms, "dc", ListOptions::default())
        .await
        .expect("list");
    assert_eq!(names(&left), ["c3"]);
    assert!(meta(&left[0]).deletion_timestamp.is_some());
}

#[tokio::test(flavor = "multi_thread")]
async fn update_status_writes_status_only() {
    let cluster = Cluster::full().await;
    let mut pods = cluster.pods().await;
    let mut p = pod("web", "node-1");
    p.metadata.as_mut().expect("meta").owner_references = vec![OwnerReference {
        api_version: "apps/v1".into(),
        kind: "ReplicaSet".into(),
        name: "rs".into(),
        uid: "u".into(),
        ..Default::default()
    }];
    let created = create_pod(&mut pods, p).await.expect("create");
    let status = |pods: &mut kubestore_proto::core::v1::pods_client::PodsClient<_>, p: Pod| {
        let mut pods = pods.clone();
        async move {
            pods.update_status(UpdatePodRequest {
                namespace: NS.into(),
                pod: Some(p),
                dry_run: false,
            })
            .await
            .map(|r| r.into_inner())
        }
    };
    // Status is written; spec and owner references come from the stored pod.
    let mut running = created.clone();
    running.status = Some(PodStatus {
        phase: "Running".into(),
        reason: "Started".into(),
        ..Default::default()
    });
    let spec = running.spec.as_mut().expect("spec");
    spec.containers[0].image = "evil:1".into();
    spec.node_name = "elsewhere".into();
    running
        .metadata
        .as_mut()
        .expect("meta")
        .owner_references
        .clear();
    let out = status(&mut pods, running).await.expect("status");
    let st = out.status.clone().expect("status");
    assert_eq!(
        (st.phase.as_str(), st.reason.as_str()),
        ("Running", "Started")
    );
    assert_eq!(st.qos_class, "BestEffort", "the QoS class is kept");
    assert_eq!(out.spec, created.spec);
    assert_eq!(meta(&out).owner_references.len(), 1);
    assert_eq!(meta(&out).generation, 1);
    // Update (the main resource) cannot write status.
    let mut sneaky = out.clone();
    sneaky.status.as_mut().expect("status").phase = "Failed".into();
    let after = update_pod(&mut pods, sneaky).await.expect("update");
    assert_eq!(after.status.expect("status").phase, "Running");
    // A terminal phase is final.
    let mut done = get_pod(&mut pods, "web").await.expect("get");
    done.status.as_mut().expect("status").phase = "Succeeded".into();
    let done = status(&mut pods, done).await.expect("succeeded");
    let mut back = done.clone();
    back.status.as_mut().expect("status").phase = "Running".into();
    let e = status(&mut pods, back).await.expect_err("terminal");
    assert_eq!(
        (e.code(), reason(&e).as_str()),
        (Code::InvalidArgument, "Invalid")
    );
    assert!(
        e.message().contains("terminal phase Succeeded"),
        "{}",
        e.message()
    );
    // Unknown phases, stale versions, missing pods.
    let mut bad = done.clone();
    bad.status.as_mut().expect("status").phase = "Sleeping".into();
    assert_eq!(
        status(&mut pods, bad).await.expect_err("phase").code(),
        Code::InvalidArgument
    );
    let e = status(&mut pods, created.clone()).await.expect_err("stale");
    assert_eq!(e.code(), Code::Aborted);
    let e = status(&mut pods, pod("missing", "n1"))
        .await
        .expect_err("missing");
    assert_eq!(e.code(), Code::NotFound);
    // The deletion fields stay Delete's.
    let mut marking = get_pod(&mut pods, "web").await.expect("get");
    marking
        .metadata
        .as_mut()
        .expect("meta")
        .deletion_grace_period_seconds = Some(0);
    let e = status(&mut pods, marking).await.expect_err("immutable");
    assert!(
        e.message().contains("deletionGracePeriodSeconds"),
        "{}",
        e.message()
    );
    // A deletionTimestamp sent with a status is dropped, as upstream's status strategy does:
    // the write succeeds and the pod is not terminating.
    let mut marking = get_pod(&mut pods, "web").await.expect("get");
    marking.metadata.as_mut().expect("meta").deletion_timestamp =
        Some(kubestore_proto::Timestamp {
            seconds: 1_700_000_000,
            nanos: 0,
        });
    marking.status.as_mut().expect("status").message = "still here".into();
    let out = status(&mut pods, marking).await.expect("status");
    assert_eq!(meta(&out).deletion_timestamp, None);
    assert_eq!(out.status.expect("status").message, "still here");
    assert_eq!(
        meta(&get_pod(&mut pods, "web").await.expect("get")).deletion_timestamp,
        None
    );
}
