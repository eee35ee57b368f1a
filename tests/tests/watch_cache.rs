//! storage-svc's watch cache: consistent reads across replicas, one etcd watch per resource,
//! a bounded window, and read-free updates. Its behaviour under etcd faults is in
//! `watch_cache_faults.rs`.

use std::time::Duration;

use kubestore_proto::{
    core::v1::{ConfigMap, WatchConfigMapsRequest},
    meta::v1::{ListOptions, ResourceVersionMatch, WatchEventType},
    storage::v1::{GetRequest, ListRequest, WatchRequest, storage_client::StorageClient},
};
use kubestore_tests::{
    Cluster, ClusterOptions,
    fixtures_registry::{self as reg},
    fixtures_storage::*,
    services::{channel, sample, scrape, spawn_storage_exact, wait_serving},
    update::{Ended, guaranteed_update},
    watch_cache::{cached, cached_cluster, warm},
};
use prost::Message;
use tonic::Code;

async fn etcd_count(metrics: std::net::SocketAddr) -> f64 {
    let text = scrape(metrics).await;
    ["Range", "Txn", "LeaseGrant", "Watch", "Compact"]
        .iter()
        .map(|op| {
            sample(
                &text,
                &format!(r#"storage_etcd_rpc_duration_seconds_count{{rpc="{op}"}}"#),
            )
            .unwrap_or(0.0)
        })
        .sum()
}

#[tokio::test(flavor = "multi_thread")]
async fn reads_through_another_replica_see_every_acknowledged_write() {
    let cluster = cached_cluster(false).await;
    let other = spawn_storage_exact(cached(), cluster.etcd.endpoint(), None);
    wait_serving(&other.url()).await;
    let mut writer = cluster.storage_client().await;
    let mut reader = StorageClient::new(channel(&other.url()).await);
    create(&mut writer, "/configmaps/ns/x", &cm("x", &[("n", "0")]), 0)
        .await
        .expect("create");
    warm(&mut reader, other.metrics_addr, "/configmaps/ns/x").await;
    let before = sample(
        &scrape(other.metrics_addr).await,
        r#"storage_watch_cache_reads_total{resource="configmaps"}"#,
    )
    .unwrap_or(0.0);
    let mut stale = 0;
    for i in 0..1000 {
        // Writes to this resource, and (every third) to another one, which moves etcd's
        // revision without any event for the configmaps cache.
        let (written, key) = if i % 3 == 2 {
            let k = format!("/pods/ns/p{i}");
            (
                create(&mut writer, &k, &cm("p", &[]), 0)
                    .await
                    .expect("create"),
                None,
            )
        } else {
            let (ended, _) = guaranteed_update(&mut writer, start("/configmaps/ns/x"), increment)
                .await
                .expect("update");
            let Ended::Result(r) = ended else {
                panic!("expected a result")
            };
            (r.resource_version, Some("/configmaps/ns/x"))
        };
        let read = reader
            .get(GetRequest {
                key: "/configmaps/ns/x".into(),
                ..Default::default()
            })
            .await
            .expect("get")
            .into_inner();
        let read_rv: i64 = read.resource_version.parse().expect("rv");
        if key.is_some() && read_rv < written.parse::<i64>().expect("rv") {
            stale += 1;
        }
    }
    assert_eq!(stale, 0, "stale reads");
    let after = sample(
        &scrape(other.metrics_addr).await,
        r#"storage_watch_cache_reads_total{resource="configmaps"}"#,
    )
    .unwrap_or(0.0);
    assert!(
        after - before >= 900.0,
        "served from the cache: {}",
        after - before
    );
    let n = ConfigMap::decode(
        reader
            .get(GetRequest {
                key: "/configmaps/ns/x".into(),
                ..Default::default()
            })
            .await
            .expect("get")
            .into_inner()
            .object
            .as_ref(),
    )
    .expect("decodes")
    .data["n"]
        .clone();
    assert_eq!(n, "667");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_thousand_watches_share_one_etcd_watch() {
    let cluster = cached_cluster(true).await;
    let mut cms = cluster.config_maps().await;
    reg::create_cm_in(&mut cms, "w", reg::cm("first", &[]))
        .await
        .expect("create");
    // The cache starts with the resource's first request; until it has listed, watches go to
    // etcd. The claim is about a serving cache.
    let mut storage = cluster.storage_client().await;
    warm(
        &mut storage,
        cluster.storage.metrics_addr,
        "/configmaps/w/first",
    )
    .await;
    // etcd's watchers before: the caches' of the kinds registry-svc follows itself
    // (configmaps here; the definitions, namespaces, admission policies and their bindings,
    // both webhook configurations and resource quotas, which admission reads), and its own
    // watches of those kinds, which go to etcd when they open before their resource's cache
    // serves: at most two per followed kind, whatever the number of clients.
    let before = sample(
        &reqwest_metrics(&cluster.etcd.endpoint()).await,
        "etcd_debugging_mvcc_watcher_total",
    )
    .expect("etcd metric");
    let url = cluster.registry.as_ref().expect("registry").url();
    let mut streams = Vec::new();
    let channels = [channel(&url).await, channel(&url).await];
    for i in 0..1000 {
        let mut c = kubestore_proto::core::v1::config_maps_client::ConfigMapsClient::new(
            channels[i % 2].clone(),
        );
        streams.push(
            c.watch(WatchConfigMapsRequest {
                namespace: "w".into(),
                options: Some(ListOptions {
                    send_initial_events: Some(false),
                    ..Default::default()
                }),
            })
            .await
            .expect("watch")
            .into_inner(),
        );
    }
    for _ in 0..500 {
        let served = sample(
            &scrape(cluster.storage.metrics_addr).await,
            r#"storage_watch_cache_watchers{resource="configmaps"}"#,
        )
        .unwrap_or(0.0);
        if served >= 1000.0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let created = reg::create_cm_in(&mut cms, "w", reg::cm("second", &[]))
        .await
        .expect("create");
    let rv = created.metadata.expect("meta").resource_version;
    for s in &mut streams {
        let e = tokio::time::timeout(Duration::from_secs(20), s.message())
            .await
            .expect("in time")
            .expect("ok")
            .expect("event");
        assert_eq!(e.r#type, WatchEventType::Added as i32);
        assert_eq!(
            e.object
                .expect("cm")
                .metadata
                .expect("meta")
                .resource_version,
            rv
        );
    }
    // etcd's own count of watchers: nothing more per client. The count is bounded, not
    // compared with `before`: the cache of one of the kinds registry-svc follows may open its
    // etcd watch only after `before` was read (CI once saw 13 become 14), and that watch is
    // the server's own, not a client's.
    let text = reqwest_metrics(&cluster.etcd.endpoint()).await;
    let watchers = sample(&text, "etcd_debugging_mvcc_watcher_total").expect("etcd metric");
    let followed = 8.0;
    assert!(
        before <= 2.0 * followed,
        "{before} etcd watchers before the client watches"
    );
    assert!(
        watchers <= 2.0 * followed,
        "{watchers} etcd watchers for 1000 client watches ({before} before them)"
    );
}

/// etcd's Prometheus text (a plain HTTP/1.1 GET on its client URL).
async fn reqwest_metrics(endpoint: &str) -> String {
    let addr: std::net::SocketAddr = endpoint
        .trim_start_matches("http://")
        .parse()
        .expect("address");
    scrape(addr).await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_watch_older_than_the_window_or_compacted_is_expired() {
    let cluster = Cluster::start(ClusterOptions {
        storage: Some(storage_svc::Config {
            watch_cache_size: 5,
            ..cached()
        }),
        exact_storage: true,
        ..Default::default()
    })
    .await;
    let mut c = cluster.storage_client().await;
    let first = create(&mut c, "/configmaps/ns/a", &cm("a", &[]), 0)
        .await
        .expect("create");
    warm(&mut c, cluster.storage.metrics_addr, "/configmaps/ns/a").await;
    let mut rvs = Vec::new();
    for i in 0..10 {
        rvs.push(
            create(&mut c, &format!("/configmaps/ns/b{i}"), &cm("b", &[]), 0)
                .await
                .expect("create"),
        );
    }
    let watch = |rv: String| {
        let mut c = c.clone();
        async move {
            let mut s = c
                .watch(WatchRequest {
                    key: "/configmaps/ns".into(),
                    recursive: true,
                    resource_version: rv,
                    ..Default::default()
                })
                .await
                .expect("watch")
                .into_inner();
            tokio::time::timeout(Duration::from_secs(5), s.message())
                .await
                .expect("in time")
        }
    };
    // Inside the window: seamless.
    let e = watch(rvs[6].clone()).await.expect("ok").expect("event");
    assert_eq!(e.resource_version, rvs[7]);
    // Older than the window (though etcd still has the history): Expired.
    let e = watch(first.clone()).await.expect_err("too old");
    assert_eq!(
        (e.code(), reason(&e).as_str()),
        (Code::OutOfRange, "Expired")
    );
    assert!(
        e.message().contains("too old resource version"),
        "{}",
        e.message()
    );

    // A replica whose cache starts now (as after a restart) has dropped nothing: a resume from
    // before its start is older than the cache, not than history, so etcd serves it.
    let other = spawn_storage_exact(
        storage_svc::Config {
            watch_cache_size: 5,
            ..cached()
        },
        cluster.etcd.endpoint(),
        None,
    );
    wait_serving(&other.url()).await;
    let mut o = StorageClient::new(channel(&other.url()).await);
    warm(&mut o, other.metrics_addr, "/configmaps/ns/a").await;
    let mut s = o
        .watch(WatchRequest {
            key: "/configmaps/ns".into(),
            recursive: true,
            resource_version: first,
            ..Default::default()
        })
        .await
        .expect("watch from before the new cache")
        .into_inner();
    for want in &rvs {
        let e = tokio::time::timeout(Duration::from_secs(5), s.message())
            .await
            .expect("in time")
            .expect("ok")
            .expect("event");
        assert_eq!(&e.resource_version, want);
    }

    // Once etcd compacted past a revision, a watch from it is Expired although the window
    // still holds the changes after it: etcd's history decides, as without the cache.
    let latest = rvs.last().cloned().unwrap_or_default();
    let mut etcd = cluster.etcd.client().await;
    etcd.compact(latest.parse::<i64>().expect("rv"), None)
        .await
        .expect("compact");
    let e = watch(rvs[6].clone()).await.expect_err("compacted");
    assert_eq!(
        (e.code(), reason(&e).as_str()),
        (Code::OutOfRange, "Expired"),
        "{e:?}"
    );
    // From the newest revision nothing is missing: the watch opens and waits.
    let mut s = c
        .watch(WatchRequest {
            key: "/configmaps/ns".into(),
            recursive: true,
            resource_version: latest,
            ..Default::default()
        })
        .await
        .expect("watch from the newest revision")
        .into_inner();
    let quiet = tokio::time::timeout(Duration::from_millis(300), s.message()).await;
    assert!(quiet.is_err(), "no event, no error: {quiet:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn updates_and_deletes_on_current_data_cost_one_etcd_request() {
    let cluster = cached_cluster(true).await;
    let mut cms = cluster.config_maps().await;
    let created = reg::create_cm(&mut cms, reg::cm("c", &[]))
        .await
        .expect("create");
    let mut s = cluster.storage_client().await;
    warm(
        &mut s,
        cluster.storage.metrics_addr,
        "/configmaps/default/c",
    )
    .await;
    // Until the cache has the object (its create event), a suggestion would be missing.
    let rv: i64 = created
        .metadata
        .clone()
        .expect("meta")
        .resource_version
        .parse()
        .expect("rv");
    for _ in 0..200 {
        let cache_rev = sample(
            &scrape(cluster.storage.metrics_addr).await,
            r#"storage_watch_cache_revision{resource="configmaps"}"#,
        )
        .unwrap_or(0.0);
        if cache_rev >= rv as f64 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let metrics = cluster.storage.metrics_addr;
    // A conditional update through registry-svc: one etcd txn, no read.
    let before = etcd_count(metrics).await;
    let mut next = created.clone();
    next.data.insert("k".into(), "v2".into());
    let updated = reg::update_cm(&mut cms, next).await.expect("update");
    assert_eq!(etcd_count(metrics).await - before, 1.0, "one etcd request");
    // A stale resourceVersion fails Conflict without touching etcd.
    let mut stale = created.clone();
    stale.data.insert("k".into(), "v3".into());
    let before = etcd_count(metrics).await;
    let e = reg::update_cm(&mut cms, stale).await.expect_err("stale");
    assert_eq!(e.code(), Code::Aborted);
    assert_eq!(etcd_count(metrics).await - before, 0.0, "no etcd request");
    // A storage Delete without a cached object: one etcd txn.
    let rv: i64 = updated
        .metadata
        .expect("meta")
        .resource_version
        .parse()
        .expect("rv");
    for _ in 0..200 {
        let cache_rev = sample(
            &scrape(metrics).await,
            r#"storage_watch_cache_revision{resource="configmaps"}"#,
        )
        .unwrap_or(0.0);
        if cache_rev >= rv as f64 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let before = etcd_count(metrics).await;
    s.delete(kubestore_proto::storage::v1::DeleteRequest {
        key: "/configmaps/default/c".into(),
        ..Default::default()
    })
    .await
    .expect("delete");
    assert_eq!(etcd_count(metrics).await - before, 1.0, "one etcd request");
}

#[tokio::test(flavor = "multi_thread")]
async fn stale_updates_fail_fast_and_deleted_objects_are_not_found() {
    let cluster = cached_cluster(true).await;
    let mut cms = cluster.config_maps().await;
    let first = reg::create_cm(&mut cms, reg::cm("c", &[]))
        .await
        .expect("create");
    let mut changed = first.clone();
    changed.data.insert("k".into(), "v2".into());
    reg::update_cm(&mut cms, changed).await.expect("update");
    // While it exists at a newer version: Conflict.
    let e = reg::update_cm(&mut cms, first.clone())
        .await
        .expect_err("stale");
    assert_eq!(e.code(), Code::Aborted);
    // Once deleted: NotFound, as upstream.
    reg::delete_cm(&mut cms, "c", None).await.expect("delete");
    let e = reg::update_cm(&mut cms, first).await.expect_err("gone");
    assert_eq!(
        (e.code(), reason(&e).as_str()),
        (Code::NotFound, "NotFound")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_object_named_like_a_resource_is_read_from_etcd_not_the_cache() {
    // `/widgets` lies outside `/registry/widgets/`, the prefix the widgets cache holds: the
    // cache must not answer "not found" for it.
    let cluster = cached_cluster(false).await;
    let mut c = cluster.storage_client().await;
    create(&mut c, "/widgets/a", &cm("a", &[]), 0)
        .await
        .expect("child");
    create(&mut c, "/widgets", &cm("top", &[]), 0)
        .await
        .expect("single segment");
    for _ in 0..20 {
        let got = get(&mut c, "/widgets").await.expect("found");
        assert_eq!(got.metadata.expect("meta").name, "top");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let text = scrape(cluster.storage.metrics_addr).await;
    assert!(
        sample(
            &text,
            r#"storage_watch_cache_reads_total{resource="widgets"}"#
        )
        .is_none(),
        "no cache read for a key outside the resource's prefix"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn fences_take_no_place_in_pages_or_remaining_counts() {
    let cluster = cached_cluster(false).await;
    let mut c = cluster.storage_client().await;
    for i in 0..5 {
        create(&mut c, &format!("/configmaps/ns/o{i}"), &cm("o", &[]), 0)
            .await
            .expect("create");
    }
    warm(&mut c, cluster.storage.metrics_addr, "/configmaps/ns/o0").await;
    // A write elsewhere moves etcd's revision: the next consistent read fences.
    create(&mut c, "/secrets/ns/s", &cm("s", &[]), 0)
        .await
        .expect("elsewhere");
    get(&mut c, "/configmaps/ns/o0").await.expect("fenced read");
    assert!(
        raw(&cluster, "/registry/configmaps/\0kubestore-fence")
            .await
            .is_some(),
        "a fence was written"
    );
    // An exact list is read from etcd, where the fence key sorts first.
    let rv = c
        .list(ListRequest {
            key: "/configmaps".into(),
            recursive: true,
            ..Default::default()
        })
        .await
        .expect("list")
        .into_inner()
        .resource_version;
    let page = c
        .list(ListRequest {
            key: "/configmaps".into(),
            recursive: true,
            limit: 2,
            resource_version: rv,
            resource_version_match: ResourceVersionMatch::Exact as i32,
            ..Default::default()
        })
        .await
        .expect("exact list")
        .into_inner();
    assert_eq!(page.items.len(), 2);
    assert_eq!(page.remaining_item_count, Some(3));
}

/// The cache's own metrics tell an operator where it stands: its window, its relists, its
/// lag, and the reads it served.
#[tokio::test(flavor = "multi_thread")]
async fn the_cache_reports_its_window_relists_and_lag() {
    let cluster = cached_cluster(false).await;
    let mut c = cluster.storage_client().await;
    create(&mut c, "/configmaps/ns/m0", &cm("m0", &[]), 0)
        .await
        .expect("create");
    warm(&mut c, cluster.storage.metrics_addr, "/configmaps/ns/m0").await;
    for i in 1..=3 {
        create(&mut c, &format!("/configmaps/ns/m{i}"), &cm("m", &[]), 0)
            .await
            .expect("create");
    }
    // A consistent read waits until the cache has applied all three.
    get(&mut c, "/configmaps/ns/m3").await.expect("get");
    let text = scrape(cluster.storage.metrics_addr).await;
    let metric = |name: &str| {
        sample(&text, &format!("{name}{{resource=\"configmaps\"}}"))
            .unwrap_or_else(|| panic!("{name} missing:\n{text}"))
    };
    assert!(metric("storage_watch_cache_window_events") >= 3.0);
    assert_eq!(
        metric("storage_watch_cache_relists_total"),
        1.0,
        "one list at start"
    );
    assert_eq!(metric("storage_watch_cache_lag"), 0.0, "caught up");
    assert!(metric("storage_watch_cache_reads_total") >= 1.0);
}
