//! A resource holding more than 4 MiB (tonic's default message limit, which storage-svc's etcd
//! client once kept): every read of it works, on etcd's path and the watch cache's, a restarted
//! storage-svc's cache lists it, and `storage rewrite` gets through it.

use std::time::Duration;

use kubestore_cli::rewrite::rewrite;
use kubestore_proto::{
    meta::v1::WatchEventType,
    storage::v1::{ListRequest, WatchRequest, storage_client::StorageClient},
};
use kubestore_tests::{
    Cluster,
    fixtures_storage::{cm, create},
    services::{channel, spawn_storage_exact, wait_serving},
    watch_cache::{cached, warm},
};
use tonic::transport::Channel;

/// 10 objects of 1.2 MiB: 12 MiB under one prefix.
const OBJECTS: usize = 10;

async fn client(url: &str) -> StorageClient<Channel> {
    StorageClient::new(channel(url).await).max_decoding_message_size(64 << 20)
}

async fn list_all(c: &mut StorageClient<Channel>, resource_version: &str) -> usize {
    let page = c
        .list(ListRequest {
            key: "/configmaps/default".into(),
            recursive: true,
            resource_version: resource_version.into(),
            ..Default::default()
        })
        .await
        .unwrap_or_else(|e| panic!("list of 12 MiB at rv {resource_version:?}: {e:?}"))
        .into_inner();
    page.items.len()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_resource_over_4_mib_is_listed_watched_cached_after_a_restart_and_rewritten() {
    let mut cluster = Cluster::storage_only().await;
    let mut c = client(&cluster.storage.url()).await;
    let blob = "x".repeat(1_200_000);
    for i in 0..OBJECTS {
        create(
            &mut c,
            &format!("/configmaps/default/cm-{i}"),
            &cm(&format!("cm-{i}"), &[("blob", &blob)]),
            0,
        )
        .await
        .expect("create 1.2 MiB");
    }
    // A list without a limit, and one at any revision (the cache's, when on).
    assert_eq!(list_all(&mut c, "").await, OBJECTS);
    assert_eq!(list_all(&mut c, "0").await, OBJECTS);
    // A watch with initial events.
    let mut w = c
        .watch(WatchRequest {
            key: "/configmaps/default".into(),
            recursive: true,
            send_initial_events: Some(true),
            ..Default::default()
        })
        .await
        .expect("watch")
        .into_inner();
    for i in 0..OBJECTS {
        let e = tokio::time::timeout(Duration::from_secs(10), w.message())
            .await
            .expect("an initial event in time")
            .unwrap_or_else(|s| panic!("initial event {i}: {s:?}"))
            .expect("the watch goes on");
        assert_eq!(e.r#type, WatchEventType::Added as i32);
    }
    drop(w);

    // A restarted storage-svc with its cache on lists the resource and serves from it.
    cluster.storage.stop();
    cluster.storage = spawn_storage_exact(cached(), cluster.etcd.endpoint(), None);
    wait_serving(&cluster.storage.url()).await;
    let mut c = client(&cluster.storage.url()).await;
    warm(
        &mut c,
        cluster.storage.metrics_addr,
        "/configmaps/default/cm-0",
    )
    .await;
    assert_eq!(list_all(&mut c, "0").await, OBJECTS);

    // The rewrite of key rotation pages through it (nothing is stale: one read each).
    let done = rewrite(&mut c, "configmaps").await.expect("rewrite");
    assert_eq!(
        (done.written, done.unchanged, done.gone),
        (0, OBJECTS, 0),
        "{done:?}"
    );
}
