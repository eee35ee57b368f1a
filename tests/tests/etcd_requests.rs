//! How many etcd requests a write costs, counted from storage-svc's own metrics: with the watch
//! cache, an update with a resourceVersion and a delete of current data are one etcd
//! transaction each and read nothing (the registry starts both from the cached object, as
//! upstream's GuaranteedUpdate starts from `cachedExistingObject`). A regression here once made
//! every delete read etcd again, unnoticed.

use kubestore_tests::{
    fixtures_registry::{cm, create_cm, delete_cm, meta, update_cm},
    services::{sample, scrape},
    watch_cache::{cached_cluster, warm},
};

/// etcd round trips of `operation` so far. The series must be there: storage-svc has read etcd
/// (the cache's list) and written it (the creates) before the test counts, and a missing
/// series read as 0 would make "no reads" true of a metric that is not exported at all.
async fn etcd_requests(metrics: std::net::SocketAddr, operation: &str) -> f64 {
    let series = format!(r#"storage_etcd_rpc_duration_seconds_count{{rpc="{operation}"}}"#);
    sample(&scrape(metrics).await, &series)
        .unwrap_or_else(|| panic!("storage-svc exports no {series}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn updates_and_deletes_of_current_data_read_nothing_from_etcd() {
    const N: usize = 20;
    let cluster = cached_cluster(true).await;
    let mut storage = cluster.storage_client().await;
    let mut c = cluster.config_maps().await;
    let mut objects = Vec::new();
    for i in 0..N {
        objects.push(
            create_cm(&mut c, cm(&format!("o{i}"), &[]))
                .await
                .expect("create"),
        );
    }
    warm(
        &mut storage,
        cluster.storage.metrics_addr,
        "/configmaps/default/o0",
    )
    .await;
    // The cache has every object (the warm-up read proved it serves; let it apply the rest).
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let metrics = cluster.storage.metrics_addr;
    let (ranges, txns) = (
        etcd_requests(metrics, "Range").await,
        etcd_requests(metrics, "Txn").await,
    );
    for o in &objects {
        let mut changed = o.clone();
        changed.data.insert("k".into(), "changed".into());
        update_cm(&mut c, changed)
            .await
            .expect("update with resourceVersion");
    }
    for o in &objects {
        let (_, deleted) = delete_cm(&mut c, &meta(o).name, None)
            .await
            .expect("delete");
        assert!(deleted);
    }
    let read = etcd_requests(metrics, "Range").await - ranges;
    let written = etcd_requests(metrics, "Txn").await - txns;
    assert_eq!(read, 0.0, "etcd reads for {N} updates and {N} deletes");
    assert!(
        written >= (2 * N) as f64 && written <= (2 * N + 4) as f64,
        "one transaction each (a fence or two may add to it): {written}"
    );
}
