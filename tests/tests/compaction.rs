//! storage-svc's compactor (upstream's `TestCompact`, `TestCompactConflict`): history is
//! compacted one interval behind, and several replicas compact once per interval, not once
//! each.

use std::time::{Duration, Instant};

use kubestore_proto::{meta::v1::ResourceVersionMatch, storage::v1::ListRequest};
use kubestore_tests::{
    Cluster, ClusterOptions,
    fixtures_storage::{cm, create, reason},
    services::{sample, scrape, spawn_storage, wait_serving},
};
use tonic::Code;

fn every(interval: Duration) -> storage_svc::Config {
    storage_svc::Config {
        compaction_interval: interval,
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn history_is_compacted_one_interval_behind() {
    let cluster = Cluster::start(ClusterOptions {
        storage: Some(every(Duration::from_millis(700))),
        ..Default::default()
    })
    .await;
    let mut c = cluster.storage_client().await;
    let rv = create(&mut c, "/configmaps/ns/a", &cm("a", &[]), 0)
        .await
        .expect("create");
    create(&mut c, "/configmaps/ns/b", &cm("b", &[]), 0)
        .await
        .expect("create");
    let exact = ListRequest {
        key: "/configmaps/ns".into(),
        recursive: true,
        resource_version: rv.clone(),
        resource_version_match: ResourceVersionMatch::Exact as i32,
        ..Default::default()
    };
    // Readable at first (the first tick compacts nothing), expired within a few intervals.
    c.list(exact.clone()).await.expect("not compacted yet");
    let start = Instant::now();
    let e = loop {
        match c.list(exact.clone()).await {
            Err(e) => break e,
            Ok(_) => {
                assert!(start.elapsed() < Duration::from_secs(10), "never compacted");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };
    assert_eq!(
        (e.code(), reason(&e).as_str()),
        (Code::OutOfRange, "Expired")
    );
    let compactions = sample(
        &scrape(cluster.storage.metrics_addr).await,
        "storage_compactions_total",
    )
    .unwrap_or(0.0);
    assert!(compactions >= 1.0);
}

#[tokio::test(flavor = "multi_thread")]
async fn two_replicas_compact_once_per_interval() {
    let interval = Duration::from_millis(500);
    let cluster = Cluster::start(ClusterOptions {
        storage: Some(every(interval)),
        ..Default::default()
    })
    .await;
    let second = spawn_storage(every(interval), cluster.etcd.endpoint(), None);
    wait_serving(&second.url()).await;
    let mut c = cluster.storage_client().await;
    let writer = async {
        for i in 0..30 {
            create(&mut c, &format!("/configmaps/ns/o{i}"), &cm("o", &[]), 0)
                .await
                .expect("create");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    let started = Instant::now();
    writer.await;
    let elapsed = started.elapsed();
    let count = |addr| async move {
        sample(&scrape(addr).await, "storage_compactions_total").unwrap_or(0.0)
    };
    let total = count(cluster.storage.metrics_addr).await + count(second.metrics_addr).await;
    let intervals = elapsed.as_secs_f64() / interval.as_secs_f64();
    // Each interval's compaction is won by one replica (the clock is compact_rev_key's
    // version); two replicas compacting independently would make about twice as many.
    assert!(total >= 1.0, "{total}");
    assert!(
        total <= intervals + 2.0,
        "{total} compactions in {intervals:.1} intervals"
    );
    let mut etcd = cluster.etcd.client().await;
    let key = etcd
        .get("compact_rev_key", None)
        .await
        .expect("get")
        .take_kvs();
    let version = key.first().map_or(0, |kv| kv.version()) as f64;
    assert!(
        version <= intervals + 2.0,
        "{version} successful ticks in {intervals:.1} intervals"
    );
}
