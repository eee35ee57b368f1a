//! A watch of changes "from now" (no resourceVersion, `sendInitialEvents=false`) sees every write
//! made after the watch call returned, as upstream's watch does (it registers its watcher before
//! it answers). storage-svc used to resolve "now" in the watch's own task, after answering: with
//! the watch cache that meant catching up with etcd first (a fence write and its echo), so a
//! write the caller made meanwhile was counted as "before now" and never sent (a custom-kinds
//! test waited 5 s for such an event once). Both with the cache and straight from etcd.

use std::time::Duration;

use kubestore_proto::storage::v1::{WatchRequest, storage_client::StorageClient};
use kubestore_tests::{Cluster, fixtures_storage::*, watch_cache::cached_cluster};
use tonic::transport::Channel;

async fn writes_after_the_watch_are_seen(c: &mut StorageClient<Channel>) {
    for i in 0..100 {
        let mut events = c
            .watch(WatchRequest {
                key: format!("/configmaps/now{i}"),
                recursive: true,
                send_initial_events: Some(false),
                ..Default::default()
            })
            .await
            .expect("watch")
            .into_inner();
        let name = format!("c{i}");
        let rv = create(c, &format!("/configmaps/now{i}/{name}"), &cm(&name, &[]), 0)
            .await
            .expect("create");
        let e = tokio::time::timeout(Duration::from_secs(10), events.message())
            .await
            .unwrap_or_else(|_| panic!("watch {i}: the write made after it opened was not sent"))
            .expect("no error")
            .expect("an event");
        assert_eq!(e.resource_version, rv, "watch {i}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn with_the_watch_cache() {
    let cluster = cached_cluster(false).await;
    writes_after_the_watch_are_seen(&mut cluster.storage_client().await).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn as_the_run_configures_storage() {
    let cluster = Cluster::storage_only().await;
    writes_after_the_watch_are_seen(&mut cluster.storage_client().await).await;
}
