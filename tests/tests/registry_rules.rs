//! Registry rules that follow upstream exactly: fields only Delete may set, resourceVersions
//! read as numbers, and the Event strategy. Each test reproduces a defect found by review
//! (issue 12), named in its comment.

use kubestore_proto::Timestamp;
use kubestore_proto::{
    core::v1::{DeleteEventRequest, Event, GetEventRequest, UpdateEventRequest},
    meta::v1::{DeleteOptions, ObjectMeta, PropagationPolicy},
};
use kubestore_tests::{Cluster, fixtures_registry::*};
use tonic::Code;

/// Defect 2: an Update could set `deletionTimestamp` and `deletionGracePeriodSeconds` on a
/// live object, so two Updates could delete an object held by a finalizer.
#[tokio::test(flavor = "multi_thread")]
async fn only_delete_sets_the_deletion_fields() {
    let cluster = Cluster::full().await;
    let mut pods = cluster.pods().await;
    let live = create_pod(&mut pods, pod("web", "node-1"))
        .await
        .expect("create");
    let mut terminating = live.clone();
    let m = terminating.metadata.as_mut().expect("meta");
    m.deletion_timestamp = Some(Timestamp {
        seconds: now_secs(),
        nanos: 0,
    });
    m.deletion_grace_period_seconds = Some(0);
    let e = update_pod(&mut pods, terminating)
        .await
        .expect_err("immutable");
    assert_eq!(
        (e.code(), reason(&e).as_str()),
        (Code::InvalidArgument, "Invalid")
    );
    assert!(
        e.message().contains("metadata.deletionTimestamp"),
        "{}",
        e.message()
    );
    assert!(
        meta(&get_pod(&mut pods, "web").await.expect("get"))
            .deletion_timestamp
            .is_none()
    );

    // With a finalizer: mark as deleting by Update, then drop the finalizer by Update.
    let mut cms = cluster.config_maps().await;
    let held = create_cm(&mut cms, cm("held", &["example.com/hold"]))
        .await
        .expect("create");
    let mut marked = held.clone();
    let m = marked.metadata.as_mut().expect("meta");
    m.deletion_timestamp = Some(Timestamp {
        seconds: now_secs(),
        nanos: 0,
    });
    m.deletion_grace_period_seconds = Some(0);
    update_cm(&mut cms, marked).await.expect_err("immutable");
    let mut released = get_cm(&mut cms, "held").await.expect("get");
    released.metadata.as_mut().expect("meta").finalizers.clear();
    update_cm(&mut cms, released).await.expect("update");
    let still = get_cm(&mut cms, "held")
        .await
        .expect("no Delete was ever sent");
    assert!(meta(&still).deletion_timestamp.is_none());
}

/// Defect 10: `resourceVersion` was compared as a string, so "0" on Update was a Conflict
/// instead of an unconditional update. Upstream parses it: 0 means unconditional.
#[tokio::test(flavor = "multi_thread")]
async fn resource_versions_are_numbers() {
    let cluster = Cluster::full().await;
    let mut cms = cluster.config_maps().await;
    let created = create_cm(&mut cms, cm("c", &[])).await.expect("create");
    let mut zero = created.clone();
    zero.metadata.as_mut().expect("meta").resource_version = "0".into();
    zero.data.insert("k".into(), "v2".into());
    let updated = update_cm(&mut cms, zero).await.expect("unconditional");
    assert_eq!(updated.data["k"], "v2");
    // The same number written differently is the same version.
    let mut padded = updated.clone();
    let rv = meta(&updated).resource_version;
    padded.metadata.as_mut().expect("meta").resource_version = format!("00{rv}");
    padded.data.insert("k".into(), "v3".into());
    update_cm(&mut cms, padded).await.expect("same version");
    // Not a number: the request is invalid, nothing is written.
    let mut bad = updated.clone();
    bad.metadata.as_mut().expect("meta").resource_version = "abc".into();
    let e = update_cm(&mut cms, bad).await.expect_err("not a number");
    assert_eq!(
        (e.code(), reason(&e).as_str()),
        (Code::InvalidArgument, "Invalid")
    );
    assert!(
        e.message().contains("metadata.resourceVersion"),
        "{}",
        e.message()
    );
    // A real stale version is still a Conflict.
    let e = update_cm(&mut cms, created).await.expect_err("stale");
    assert_eq!(e.code(), Code::Aborted);
}

/// Defect 8: the Event strategy differed from upstream's: it added a GC finalizer that nothing
/// removes on an orphan/foreground delete (upstream: `Unsupported`), and refused
/// create-on-update (upstream allows it).
#[tokio::test(flavor = "multi_thread")]
async fn events_follow_upstreams_strategy() {
    let cluster = Cluster::full().await;
    let mut events = cluster.events().await;
    let event = Event {
        metadata: Some(ObjectMeta {
            name: "e".into(),
            ..Default::default()
        }),
        reason: "Test".into(),
        ..Default::default()
    };
    // Update creates a missing event.
    let created = events
        .update(UpdateEventRequest {
            namespace: NS.into(),
            event: Some(event.clone()),
            dry_run: false,
        })
        .await
        .expect("create on update")
        .into_inner();
    assert_eq!(created.metadata.as_ref().expect("meta").uid.len(), 36);
    for policy in [PropagationPolicy::Orphan, PropagationPolicy::Foreground] {
        if policy == PropagationPolicy::Foreground {
            events
                .update(UpdateEventRequest {
                    namespace: NS.into(),
                    event: Some(event.clone()),
                    dry_run: false,
                })
                .await
                .expect("create on update");
        }
        let r = events
            .delete(DeleteEventRequest {
                namespace: NS.into(),
                name: "e".into(),
                options: Some(DeleteOptions {
                    propagation_policy: policy as i32,
                    ..Default::default()
                }),
            })
            .await
            .expect("delete")
            .into_inner();
        assert!(r.deleted, "{policy:?}: deleted at once");
        assert!(
            r.event
                .expect("last state")
                .metadata
                .expect("meta")
                .finalizers
                .is_empty()
        );
        let e = events
            .get(GetEventRequest {
                namespace: NS.into(),
                name: "e".into(),
            })
            .await
            .expect_err("gone");
        assert_eq!(e.code(), Code::NotFound);
    }
}
