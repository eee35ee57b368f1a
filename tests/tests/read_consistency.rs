//! Reads at a resourceVersion, on the watch cache's path and etcd's:
//! - a continue page is item for item what an Exact list at its token's revision returns, while
//!   another client writes into both pages and between their keys (both paths);
//! - a Get or List at a resourceVersion just ahead of etcd waits (up to 3 s, upstream's
//!   `waitUntilFreshAndBlock`) for etcd to get there, answers as soon as it has, and only
//!   says "Too large" when it never does;
//! - a corrupt stored object in a List is named by its own key;
//! - a stored object nesting deeper than any decoder may go is the server's fault on a Get and
//!   takes no service down (registry-svc walks each object it decodes from storage).

use std::time::{Duration, Instant};

use kubestore_proto::{
    meta::v1::ResourceVersionMatch,
    storage::v1::{GetRequest, ListRequest, storage_client::StorageClient},
};
use kubestore_tests::{
    Cluster, ClusterOptions,
    fixtures_storage::{cm, create, raw_put},
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

/// The first page, its continuation, and an Exact list at the first page's revision, over and
/// over while another etcd client writes into both pages and between their keys: updates of
/// o00..o19 (first page o00..o09, second o10..o19), and keys created and deleted between them
/// (`o04x`, `o14x`, ...). Each continuation must be what Exact says the prefix held at that
/// revision, item for item; most must differ from the current state (the writes reached the
/// second page in between), or the check had no teeth.
async fn continuations_match_exact_lists(cluster: &Cluster) {
    let mut c = cluster.storage_client().await;
    for i in 0..20 {
        create(&mut c, &format!("/configmaps/ns/o{i:02}"), &cm("o", &[]), 0)
            .await
            .expect("create");
    }
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let stop = stop.clone();
        let mut etcd = cluster.etcd.client().await;
        tokio::spawn(async move {
            let mut n = 0usize;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let i = (n * 7) % 20;
                let key = format!("/registry/configmaps/ns/o{i:02}");
                let between = format!("/registry/configmaps/ns/o{i:02}x");
                let value = prost::Message::encode_to_vec(&cm("o", &[("n", &n.to_string())]));
                // Stops when the test has ended (etcd gone) or fails.
                let wrote = etcd.put(key, value.clone(), None).await.is_ok()
                    && if n.is_multiple_of(2) {
                        etcd.put(between, value, None).await.is_ok()
                    } else {
                        etcd.delete(between, None).await.is_ok()
                    };
                if !wrote {
                    break;
                }
                n += 1;
            }
            n
        })
    };
    let (mut lists, mut moved) = (0, 0);
    let until = Instant::now() + Duration::from_secs(8);
    while lists < 400 && Instant::now() < until {
        let first = page(&mut c, "").await;
        let second = page(&mut c, &first.r#continue).await;
        assert_eq!(second.resource_version, first.resource_version);
        let exact = c
            .list(ListRequest {
                key: "/configmaps/ns".into(),
                recursive: true,
                resource_version: first.resource_version.clone(),
                resource_version_match: ResourceVersionMatch::Exact as i32,
                ..Default::default()
            })
            .await
            .expect("exact list at the first page's revision")
            .into_inner();
        assert_eq!(first.items, exact.items[..10], "the first page");
        assert_eq!(
            second.items,
            exact.items[10..20],
            "the continuation at revision {} is not that revision's second page",
            first.resource_version
        );
        let now = c
            .list(ListRequest {
                key: "/configmaps/ns".into(),
                recursive: true,
                ..Default::default()
            })
            .await
            .expect("current list")
            .into_inner();
        if now.items[10..20] != second.items[..] {
            moved += 1;
        }
        lists += 1;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let writes = writer.await.expect("writer");
    eprintln!(
        "{lists} continuations next to {writes} writes; {moved} differed from the current state"
    );
    assert!(lists >= 50, "only {lists} continuations in time");
    assert!(
        moved * 4 >= lists,
        "the writes reached the second page between reads in only {moved} of {lists} lists"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn continue_pages_under_writes_are_the_snapshot_of_their_token() {
    // The watch cache's path (its "unchanged since" check and page read are one step)...
    let cluster = cached_cluster(false).await;
    let mut c = cluster.storage_client().await;
    warm(&mut c, cluster.storage.metrics_addr, "/configmaps/ns/o00").await;
    continuations_match_exact_lists(&cluster).await;
    // ... and etcd's.
    let cluster = Cluster::start(ClusterOptions {
        storage: Some(storage_svc::Config {
            watch_cache: false,
            ..Default::default()
        }),
        exact_storage: true,
        ..Default::default()
    })
    .await;
    continuations_match_exact_lists(&cluster).await;
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
    // They waited for the write, and answered once it landed: not at the end of the 3 s a
    // read that never sees etcd get there waits (bounded generously for a loaded machine).
    assert!(
        waited >= Duration::from_millis(400) && waited < Duration::from_millis(2500),
        "answered {waited:?} after asking, the write landing at 500 ms"
    );

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

/// storage.v1's responses are not walked for their nesting as a whole (a one-page List paid
/// a third of its CPU for it): registry-svc walks each object it decodes instead. A ConfigMap
/// put straight into etcd with 100,000 nested groups in an unknown field of a `data` entry
/// (storage-svc refuses groups at an object's top level only) would overflow a decoder's
/// stack: prost decodes without a recursion limit and skips unknown groups recursively.
#[tokio::test(flavor = "multi_thread")]
async fn a_stored_object_nesting_too_deep_is_an_internal_error_and_takes_nothing_down() {
    use kubestore_proto::core::v1::{
        CreateConfigMapRequest, GetConfigMapRequest, config_maps_client::ConfigMapsClient,
    };
    use prost::Message;
    let cluster = Cluster::full().await;
    let url = cluster.registry.as_ref().expect("registry").url();
    let mut cms = ConfigMapsClient::new(kubestore_tests::services::channel(&url).await);
    let mut deep = kubestore_proto::core::v1::ConfigMap {
        metadata: Some(kubestore_proto::meta::v1::ObjectMeta {
            name: "deep".into(),
            namespace: "ns".into(),
            uid: "u-deep".into(),
            ..Default::default()
        }),
        ..Default::default()
    }
    .encode_to_vec();
    // A `data` entry (field 2) "k": "v" with field 15 in it: start group (0x7b) ... end
    // group (0x7c), well formed, 100,000 levels deep.
    let mut entry = b"\x0a\x01k\x12\x01v".to_vec();
    entry.extend(std::iter::repeat_n(0x7b_u8, 100_000));
    entry.extend(std::iter::repeat_n(0x7c_u8, 100_000));
    prost::encoding::bytes::encode(2, &entry, &mut deep);
    raw_put(
        &cluster.etcd.endpoint(),
        "/registry/configmaps/ns/deep",
        deep,
    );
    let e = cms
        .get(GetConfigMapRequest {
            namespace: "ns".into(),
            name: "deep".into(),
        })
        .await
        .expect_err("too deep to decode");
    assert_eq!(e.code(), Code::Internal, "{e:?}");
    assert!(e.message().contains("nests deeper than"), "{e:?}");
    // Both services still serve.
    cms.create(CreateConfigMapRequest {
        namespace: "default".into(),
        config_map: Some(cm("after", &[])),
        dry_run: false,
    })
    .await
    .expect("create after the deep object");
}
