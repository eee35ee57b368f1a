//! registry-svc deletion end to end: graceful deletion, grace periods, finalizers, propagation
//! policy, preconditions and dry run, through gRPC against real etcd and storage-svc.

use kubestore_proto::meta::v1::{DeleteOptions, Preconditions, PropagationPolicy};
use kubestore_tests::Cluster;
use kubestore_tests::fixtures_registry::*;
use tonic::Code;

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
