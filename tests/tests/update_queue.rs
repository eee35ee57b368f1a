//! The per-key queue of updates in storage-svc (`keylock`) against callers that misbehave:
//! cancelled, stalled, or queued behind a delete. Each test reproduces a defect found by
//! review (issue 12), named in its comment.

use std::time::Duration;

use kubestore_proto::{
    core::v1::{ConfigMap, Pod, UpdateConfigMapRequest},
    storage::v1::UpdateStart,
};
use kubestore_tests::{
    Cluster, ClusterOptions,
    fixtures_registry::{self as reg, NS},
    fixtures_storage::*,
    services::{sample, scrape},
    update::{Ended, Holder, Reply, guaranteed_update, long_turn_hold, wait_for_waiting},
};
use prost::Message;
use tonic::Code;

/// Waits (at most 2 s) until no update waits for a turn; returns whether that happened.
async fn queue_empties(metrics: std::net::SocketAddr) -> bool {
    for _ in 0..200 {
        if sample(&scrape(metrics).await, "storage_guaranteed_updates_waiting") == Some(0.0) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    false
}

/// Defect 3: a caller that sent a cached object and its proposal, then cancelled while queued
/// behind another update of the key, had its write committed when the turn came.
#[tokio::test(flavor = "multi_thread")]
async fn a_cancelled_queued_update_is_never_written() {
    let cluster = Cluster::start(ClusterOptions {
        storage: Some(long_turn_hold()),
        ..Default::default()
    })
    .await;
    let mut c = cluster.storage_client().await;
    let key = "/configmaps/default/hot";
    create(&mut c, key, &cm("hot", &[("n", "0")]), 0)
        .await
        .expect("create");
    let current = c
        .get(kubestore_proto::storage::v1::GetRequest {
            key: key.into(),
            ..Default::default()
        })
        .await
        .expect("get")
        .into_inner()
        .object;
    let holder = Holder::take(&mut c, start(key)).await;
    // A caller with a current cached object and its proposal queues behind the holder...
    let mut c2 = cluster.storage_client().await;
    let queued = tokio::spawn(async move {
        guaranteed_update(
            &mut c2,
            UpdateStart {
                cached_object: Some(current.to_vec()),
                ..start(key)
            },
            increment,
        )
        .await
    });
    wait_for_waiting(cluster.storage.metrics_addr, 1).await;
    // ...and hangs up.
    queued.abort();
    let _ = queued.await;
    let left = queue_empties(cluster.storage.metrics_addr).await;
    // The holder changes nothing, so the cancelled caller's cached object is still current.
    assert!(matches!(
        holder.answer(Reply::Abort("no".into())).await,
        Ok(Ended::Aborted(1))
    ));
    // Turns are taken in order: an update queued now runs after anything still queued.
    let (ended, _) = guaranteed_update(&mut c, start(key), increment)
        .await
        .expect("update");
    let Ended::Result(r) = ended else {
        panic!("expected a result")
    };
    let n = ConfigMap::decode(r.object.as_slice())
        .expect("decodes")
        .data["n"]
        .clone();
    assert_eq!(n, "1", "the cancelled caller's increment was written");
    assert!(left, "the cancelled caller stayed in the queue");
}

/// Defect 3, end to end: a registry Delete whose client hung up still marked the pod.
#[tokio::test(flavor = "multi_thread")]
async fn a_delete_whose_client_hung_up_marks_nothing() {
    let cluster = Cluster::start(ClusterOptions {
        storage: Some(long_turn_hold()),
        with_registry: true,
        ..Default::default()
    })
    .await;
    let mut pods = cluster.pods().await;
    reg::create_pod(&mut pods, reg::pod("web", "node-1"))
        .await
        .expect("create");
    let mut c = cluster.storage_client().await;
    let key = "/pods/default/web";
    let holder = Holder::take(&mut c, start(key)).await;
    let delete = tokio::spawn(async move { reg::delete_pod(&mut pods, "web", None).await });
    wait_for_waiting(cluster.storage.metrics_addr, 1).await;
    delete.abort();
    let _ = delete.await;
    let left = queue_empties(cluster.storage.metrics_addr).await;
    assert!(matches!(
        holder.answer(Reply::Abort("no".into())).await,
        Ok(Ended::Aborted(1))
    ));
    // The next turn sees what is stored once every earlier turn is done.
    let next = Holder::take(&mut c, start(key)).await;
    let pod = Pod::decode(next.state.object.as_slice()).expect("decodes");
    assert_eq!(
        pod.metadata.expect("meta").deletion_timestamp,
        None,
        "the abandoned delete marked the pod"
    );
    assert!(left, "the abandoned delete stayed in the queue");
}

/// Defect 4: the turn was held across the round trip to the caller, so a caller that never
/// answered made every other update of the key wait for the whole request timeout (10 s).
#[tokio::test(flavor = "multi_thread")]
async fn a_stalled_caller_delays_others_only_briefly() {
    let cluster = Cluster::storage_only().await;
    let mut c = cluster.storage_client().await;
    let key = "/configmaps/default/hot";
    create(&mut c, key, &cm("hot", &[("n", "0")]), 0)
        .await
        .expect("create");
    let stalled = Holder::take(&mut c, start(key)).await;
    // Well below the 10 s an update used to wait behind it (then failed UNAVAILABLE).
    let mut c2 = cluster.storage_client().await;
    let (ended, _) = tokio::time::timeout(
        Duration::from_secs(5),
        guaranteed_update(&mut c2, start(key), increment),
    )
    .await
    .expect("the update waited behind a stalled caller")
    .expect("update");
    assert!(
        matches!(ended, Ended::Result(ref r) if r.written),
        "{ended:?}"
    );
    drop(stalled);
    let n = get(&mut c, key).await.expect("get").data["n"].clone();
    assert_eq!(n, "1");
}

/// Defect 11: an update with a stale resourceVersion of an object that was deleted answered
/// Conflict when it had queued behind another update, NotFound when not. Upstream: NotFound.
#[tokio::test(flavor = "multi_thread")]
async fn a_stale_update_of_a_deleted_object_is_not_found_even_when_queued() {
    // The queue itself, without the watch cache: with it, a stale update of an object that
    // still exists fails Conflict before queueing (correctly: the object then exists, at a
    // newer version), so it would never queue behind the delete.
    let cluster = Cluster::start(ClusterOptions {
        storage: Some(storage_svc::Config {
            watch_cache: false,
            ..long_turn_hold()
        }),
        with_registry: true,
        exact_storage: true,
        ..Default::default()
    })
    .await;
    let mut cms = cluster.config_maps().await;
    let first = reg::create_cm(&mut cms, reg::cm("c", &[]))
        .await
        .expect("create");
    let mut changed = first.clone();
    changed.data.insert("k".into(), "v2".into());
    reg::update_cm(&mut cms, changed).await.expect("update");
    // `first` now carries a stale resourceVersion.
    let mut c = cluster.storage_client().await;
    let holder = Holder::take(&mut c, start("/configmaps/default/c")).await;
    let mut cms2 = cluster.config_maps().await;
    let delete = tokio::spawn(async move { reg::delete_cm(&mut cms2, "c", None).await });
    for _ in 0..500 {
        let waiting = sample(
            &scrape(cluster.storage.metrics_addr).await,
            "storage_guaranteed_updates_waiting",
        );
        if delete.is_finished() || waiting == Some(1.0) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let waiting_before = if delete.is_finished() { 0 } else { 1 };
    let mut cms3 = cluster.config_maps().await;
    let stale = tokio::spawn(async move {
        cms3.update(UpdateConfigMapRequest {
            namespace: NS.into(),
            config_map: Some(first),
            dry_run: false,
        })
        .await
    });
    wait_for_waiting(cluster.storage.metrics_addr, waiting_before + 1).await;
    assert!(matches!(
        holder.answer(Reply::Abort("no".into())).await,
        Ok(Ended::Aborted(1))
    ));
    let (_, deleted) = delete.await.expect("join").expect("delete");
    assert!(deleted);
    let e = stale.await.expect("join").expect_err("deleted");
    assert_eq!(
        (e.code(), reason(&e).as_str()),
        (Code::NotFound, "NotFound"),
        "{}",
        e.message()
    );
}
