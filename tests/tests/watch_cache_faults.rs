//! storage-svc's watch cache under etcd faults: resuming through an etcd restart and a
//! compaction, failing consistent reads UNAVAILABLE while etcd is down, a corrupt stored value,
//! and listing again when its history is gone.

use std::time::Duration;

use kubestore_proto::{
    meta::v1::WatchEventType,
    storage::v1::{GetRequest, ListRequest, WatchRequest, storage_client::StorageClient},
};
use kubestore_tests::{
    EtcdProcess,
    fixtures_storage::*,
    proxy::Proxy,
    services::{channel, sample, scrape, spawn_storage_exact, wait_serving},
    watch_cache::{cached, cached_cluster, warm},
};
use tonic::{Code, transport::Channel};

#[tokio::test(flavor = "multi_thread")]
async fn watches_go_through_an_etcd_restart_and_a_compaction_without_loss_or_repeat() {
    let mut cluster = cached_cluster(false).await;
    let mut c = cluster.storage_client().await;
    let first = create(&mut c, "/configmaps/ns/o0", &cm("o0", &[]), 0)
        .await
        .expect("create");
    warm(&mut c, cluster.storage.metrics_addr, "/configmaps/ns/o0").await;
    let mut w = c
        .watch(WatchRequest {
            key: "/configmaps/ns".into(),
            recursive: true,
            resource_version: first.clone(),
            ..Default::default()
        })
        .await
        .expect("watch")
        .into_inner();
    let mut written = vec![];
    let write = |i: usize, c: &mut StorageClient<Channel>| {
        let mut c = c.clone();
        async move {
            loop {
                match create(&mut c, &format!("/configmaps/ns/o{i}"), &cm("o", &[]), 0).await {
                    Ok(rv) => return rv,
                    Err(e) if e.code() == Code::Unavailable => {
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                    Err(e) => panic!("create: {e:?}"),
                }
            }
        }
    };
    for i in 1..=20 {
        written.push(write(i, &mut c).await);
    }
    cluster.etcd.restart().await;
    for i in 21..=40 {
        written.push(write(i, &mut c).await);
    }
    let mut etcd = cluster.etcd.client().await;
    let latest: i64 = written.last().expect("written").parse().expect("rv");
    etcd.compact(latest, None).await.expect("compact");
    for i in 41..=60 {
        written.push(write(i, &mut c).await);
    }
    let mut seen = Vec::new();
    while seen.len() < written.len() {
        let e = tokio::time::timeout(Duration::from_secs(20), w.message())
            .await
            .expect("an event in time")
            .expect("the watch goes on")
            .expect("event");
        assert_eq!(e.r#type, WatchEventType::Added as i32);
        seen.push(e.resource_version);
    }
    assert_eq!(seen, written, "every write once, in order");
    assert!(
        tokio::time::timeout(Duration::from_millis(500), w.message())
            .await
            .is_err(),
        "nothing more"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn consistent_reads_fail_unavailable_while_etcd_is_down() {
    let mut cluster = cached_cluster(false).await;
    let mut c = cluster.storage_client().await;
    create(&mut c, "/configmaps/ns/a", &cm("a", &[]), 0)
        .await
        .expect("create");
    warm(&mut c, cluster.storage.metrics_addr, "/configmaps/ns/a").await;
    cluster.etcd.kill();
    let mut req = tonic::Request::new(GetRequest {
        key: "/configmaps/ns/a".into(),
        ..Default::default()
    });
    req.set_timeout(Duration::from_secs(3));
    let e = c.get(req).await.expect_err("no stale answer");
    assert_eq!(e.code(), Code::Unavailable, "{e:?}");
    // "Any" version: the cache may answer.
    let r = c
        .get(GetRequest {
            key: "/configmaps/ns/a".into(),
            resource_version: "0".into(),
            ..Default::default()
        })
        .await;
    if let Ok(r) = r {
        assert!(r.into_inner().found);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_corrupt_stored_value_neither_wedges_nor_poisons_the_cache() {
    let cluster = cached_cluster(false).await;
    let mut c = cluster.storage_client().await;
    create(&mut c, "/configmaps/ns/a", &cm("a", &[]), 0)
        .await
        .expect("create");
    warm(&mut c, cluster.storage.metrics_addr, "/configmaps/ns/a").await;
    // Another etcd client writes bytes that are not an object (field 1 as a varint).
    raw_put(
        &cluster.etcd.endpoint(),
        "/registry/configmaps/ns/bad",
        vec![0x08, 0x01],
    );
    create(&mut c, "/configmaps/ns/b", &cm("b", &[]), 0)
        .await
        .expect("create after the corrupt value");
    // The cache kept following etcd: the later object is there, the corrupt one is INTERNAL.
    assert_eq!(
        get(&mut c, "/configmaps/ns/b")
            .await
            .expect("b")
            .metadata
            .expect("meta")
            .name,
        "b"
    );
    let e = get(&mut c, "/configmaps/ns/bad")
        .await
        .expect_err("corrupt");
    assert_eq!(e.code(), Code::Internal, "{e:?}");
    let text = scrape(cluster.storage.metrics_addr).await;
    assert!(
        sample(
            &text,
            r#"storage_watch_cache_reads_total{resource="configmaps"}"#
        )
        .is_some_and(|n| n >= 3.0),
        "served from the cache"
    );
}

/// When the cache's etcd watch comes back (here: storage's connection to etcd cut while etcd
/// moved on and compacted) to find its history gone, the cache lists again: the watches it
/// served end UNAVAILABLE (resume from the last resourceVersion), the relist is counted, and
/// reads afterwards see etcd's state.
#[tokio::test(flavor = "multi_thread")]
async fn the_cache_lists_again_when_its_history_is_gone() {
    let etcd = EtcdProcess::start().await;
    let port: u16 = etcd
        .endpoint()
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("etcd port");
    let proxy = Proxy::start(([127, 0, 0, 1], port).into()).await;
    let storage = spawn_storage_exact(cached(), format!("http://{}", proxy.addr), None);
    wait_serving(&storage.url()).await;
    let mut c = StorageClient::new(channel(&storage.url()).await);
    let a = create(&mut c, "/configmaps/ns/a", &cm("a", &[]), 0)
        .await
        .expect("create");
    warm(&mut c, storage.metrics_addr, "/configmaps/ns/a").await;
    // From a's revision, so the next change is the watch's first event whenever it starts.
    let mut w = c
        .watch(WatchRequest {
            key: "/configmaps/ns".into(),
            recursive: true,
            resource_version: a,
            ..Default::default()
        })
        .await
        .expect("watch")
        .into_inner();
    create(&mut c, "/configmaps/ns/z", &cm("z", &[]), 0)
        .await
        .expect("create");
    let ev = tokio::time::timeout(Duration::from_secs(10), w.message())
        .await
        .expect("in time")
        .expect("ok")
        .expect("event");
    assert_eq!(ev.r#type, WatchEventType::Added as i32);

    // Cut off, storage misses two writes and the compaction of its history.
    proxy.cut();
    let mut raw = etcd.client().await;
    raw.put("/elsewhere/1", "x", None).await.expect("put");
    let rev = raw
        .put("/elsewhere/2", "x", None)
        .await
        .expect("put")
        .header()
        .map(|h| h.revision())
        .expect("revision");
    raw.compact(rev, None).await.expect("compact");
    proxy.restore();

    let e = tokio::time::timeout(Duration::from_secs(30), w.message())
        .await
        .expect("the watch ends in time")
        .expect_err("ended by the relist");
    assert_eq!(e.code(), Code::Unavailable, "{e:?}");
    assert!(e.message().contains("listed again"), "{}", e.message());
    let mut relists = 0.0;
    for _ in 0..300 {
        relists = sample(
            &scrape(storage.metrics_addr).await,
            r#"storage_watch_cache_relists_total{resource="configmaps"}"#,
        )
        .unwrap_or(0.0);
        if relists >= 2.0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(relists, 2.0, "the start's list and one relist");
    // Reads and writes go on, consistent with etcd.
    create(&mut c, "/configmaps/ns/b", &cm("b", &[]), 0)
        .await
        .expect("create after the relist");
    let page = c
        .list(ListRequest {
            key: "/configmaps/ns".into(),
            recursive: true,
            ..Default::default()
        })
        .await
        .expect("list")
        .into_inner();
    assert_eq!(page.items.len(), 3);
}

/// The watches the cache serves go through a short etcd outage (the test above), but not a long
/// one: once the cache has not followed etcd for its resume budget (10 s), they end UNAVAILABLE
/// saying so, and the client watches again from its last resourceVersion, as upstream's clients
/// do when the cacher ends its watchers.
#[tokio::test(flavor = "multi_thread")]
async fn watches_end_unavailable_when_the_cache_cannot_follow_etcd_for_its_budget() {
    let mut cluster = cached_cluster(false).await;
    let mut c = cluster.storage_client().await;
    let first = create(&mut c, "/configmaps/ns/a", &cm("a", &[]), 0)
        .await
        .expect("create");
    warm(&mut c, cluster.storage.metrics_addr, "/configmaps/ns/a").await;
    let mut w = c
        .watch(WatchRequest {
            key: "/configmaps/ns".into(),
            recursive: true,
            resource_version: first,
            ..Default::default()
        })
        .await
        .expect("watch")
        .into_inner();
    cluster.etcd.kill();
    let killed = std::time::Instant::now();
    let end = loop {
        match tokio::time::timeout(Duration::from_secs(30), w.message())
            .await
            .expect("the watch ends within 30 s")
        {
            // Bookmarks may come while the cache waits.
            Ok(Some(e)) if e.r#type == WatchEventType::Bookmark as i32 => continue,
            other => break other,
        }
    };
    let e = end.expect_err("ended with an error");
    assert_eq!(e.code(), Code::Unavailable, "{e:?}");
    assert!(
        e.message().contains("has not followed etcd"),
        "{}",
        e.message()
    );
    assert!(
        killed.elapsed() >= Duration::from_secs(9),
        "not before the budget: {:?}",
        killed.elapsed()
    );
}
