//! Reads at a resourceVersion, on the watch cache's path and etcd's:
//! - a continue page is the snapshot its token names, even while the prefix changes under it
//!   (the cache's "unchanged since" check and its page read are one step);
//! - a Get or List at a resourceVersion just ahead of etcd waits (up to 3 s, upstream's
//!   `waitUntilFreshAndBlock`) for etcd to get there, and only then says "Too large";
//! - a corrupt stored object in a List is named by its own key.

use std::time::{Duration, Instant};

use kubestore_proto::storage::v1::{GetRequest, ListRequest, storage_client::StorageClient};
use kubestore_tests::{
    Cluster,
    fixtures_storage::{cm, create, raw_put, rv_of},
    reason,
    watch_cache::{cached_cluster, warm},
};
use tonic::{Code, transport::Channel};

async fn page(
    c: &mut StorageClient<Channel>,
    token: &str,
) -> kubestore_proto::storage::v1::ListResponse {
    c.list(ListRequest {
        key: "/configmaps/ns".into(),
        recursive: true,
        limit: 10,
        r#continue: token.into(),
        ..Default::default()
    })
    .await
    .expect("list page")
    .into_inner()
}

#[tokio::test(flavor = "multi_thread")]
async fn continue_pages_under_writes_are_the_snapshot_of_their_token() {
    let cluster = cached_cluster(false).await;
    let mut c = cluster.storage_client().await;
    for i in 0..20 {
        create(&mut c, &format!("/configmaps/ns/o{i:02}"), &cm("o", &[]), 0)
            .await
            .expect("create");
    }
    warm(&mut c, cluster.storage.metrics_addr, "/configmaps/ns/o00").await;
    // A writer changes the prefix all along: new objects after the first page's keys.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let mut c = c.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            let mut i = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                create(&mut c, &format!("/configmaps/ns/w{i:06}"), &cm("w", &[]), 0)
                    .await
                    .expect("write");
                i += 1;
            }
            i
        })
    };
    let (mut lists, mut mixed) = (0, 0);
    let until = Instant::now() + Duration::from_secs(20);
    while lists < 10_000 && Instant::now() < until {
        let first = page(&mut c, "").await;
        let rv: i64 = first.resource_version.parse().expect("rv");
        let second = page(&mut c, &first.r#continue).await;
        assert_eq!(second.resource_version, first.resource_version);
        if second
            .items
            .iter()
            .any(|o| rv_of(o).parse::<i64>().expect("item rv") > rv)
        {
            mixed += 1;
        }
        lists += 1;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let writes = writer.await.expect("writer");
    assert!(
        writes > 100,
        "the prefix changed under the lists ({writes} writes)"
    );
    assert!(lists >= 500, "only {lists} two-page lists in time");
    eprintln!("{lists} two-page lists next to {writes} writes");
    assert_eq!(
        mixed, 0,
        "{mixed} of {lists} continue pages held a newer item"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_resource_version_just_ahead_waits_for_etcd_then_answers() {
    let cluster = Cluster::storage_only().await;
    let mut c = cluster.storage_client().await;
    let rv: i64 = create(&mut c, "/configmaps/ns/a", &cm("a", &[]), 0)
        .await
        .expect("create")
        .parse()
        .expect("rv");
    let ahead = (rv + 1).to_string();
    // Another write lands 500 ms later: the reads at rv+1 wait for it, then answer.
    let later = {
        let mut c = c.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(500)).await;
            create(&mut c, "/configmaps/other/b", &cm("b", &[]), 0)
                .await
                .expect("create later");
        })
    };
    let start = Instant::now();
    let (mut g, mut l) = (c.clone(), c.clone());
    let get = g.get(GetRequest {
        key: "/configmaps/ns/a".into(),
        resource_version: ahead.clone(),
        ..Default::default()
    });
    let list = l.list(ListRequest {
        key: "/configmaps/ns".into(),
        recursive: true,
        resource_version: ahead.clone(),
        ..Default::default()
    });
    let (get, list) = tokio::join!(get, list);
    let waited = start.elapsed();
    later.await.expect("later");
    assert!(
        get.expect("get at rv+1 once etcd got there")
            .into_inner()
            .found
    );
    let list = list.expect("list at rv+1 once etcd got there").into_inner();
    assert_eq!(list.items.len(), 1);
    assert!(list.resource_version.parse::<i64>().expect("rv") > rv);
    assert!(waited >= Duration::from_millis(400), "{waited:?}");

    // Far ahead, and nothing comes: "Too large" after the wait, not at once.
    let start = Instant::now();
    let e = c
        .get(GetRequest {
            key: "/configmaps/ns/a".into(),
            resource_version: (rv + 1000).to_string(),
            ..Default::default()
        })
        .await
        .expect_err("too large");
    let waited = start.elapsed();
    assert_eq!(
        (e.code(), reason(&e).as_str()),
        (Code::Unavailable, "Timeout")
    );
    assert!(e.message().contains("Too large resource version"), "{e:?}");
    assert!(waited >= Duration::from_millis(2500), "{waited:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_corrupt_object_in_a_list_is_named_by_its_key() {
    let cluster = Cluster::storage_only().await;
    let mut c = cluster.storage_client().await;
    create(&mut c, "/configmaps/ns/a", &cm("a", &[]), 0)
        .await
        .expect("create");
    raw_put(
        &cluster.etcd.endpoint(),
        "/registry/configmaps/ns/bad",
        vec![0x08, 0x01],
    );
    // Consistent lists (the cache's, once fresh, when it is on), twice.
    for _ in 0..2 {
        let e = c
            .list(ListRequest {
                key: "/configmaps/ns".into(),
                recursive: true,
                ..Default::default()
            })
            .await
            .expect_err("corrupt");
        assert_eq!(e.code(), Code::Internal, "{e:?}");
        assert!(
            e.message().contains("/registry/configmaps/ns/bad"),
            "names the object: {e:?}"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}
