//! List and Watch through registry-svc, mirroring upstream's `RunTestWatch*` and
//! `RunWatchSemantics`: transitions through a selector, resuming, initial events, bookmarks,
//! compaction, slow watchers, timeouts and shutdown (selectors on lists: `selectors.rs`).

use std::{collections::BTreeSet, time::Duration};

use kubestore_proto::meta::v1::{ListOptions, ResourceVersionMatch, WatchEventType};
use kubestore_tests::{
    Cluster, ClusterOptions,
    fixtures_registry::{self as reg, reason},
    fixtures_watch::*,
    services::{sample, scrape},
};
use tonic::Code;
use tonic_types::StatusExt;

const SEC: Duration = Duration::from_secs(5);

fn from(rv: &str) -> ListOptions {
    ListOptions {
        resource_version: rv.into(),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn watch_follows_objects_through_a_selector() {
    let cluster = Cluster::full().await;
    let mut cms = cluster.config_maps().await;
    let mut w = watch_cms(
        &mut cms,
        "w",
        ListOptions {
            label_selector: "select=true".into(),
            send_initial_events: Some(false),
            ..Default::default()
        },
    )
    .await
    .expect("watch");
    let mut obj = reg::create_cm_in(&mut cms, "w", cm_in("w", "c", &[("select", "true")]))
        .await
        .expect("create");
    let expect = |e: Option<Seen>, kind: WatchEventType| {
        let e = e.expect("an event");
        assert_eq!((e.0, e.1.as_str()), (kind, "c"));
        e
    };
    expect(next(&mut w, SEC).await.expect("ok"), WatchEventType::Added);
    // Leaves the selector: DELETED (the old state, at the new revision).
    obj.metadata.as_mut().expect("meta").labels.clear();
    obj = reg::update_cm_in(&mut cms, "w", obj).await.expect("update");
    let left = expect(
        next(&mut w, SEC).await.expect("ok"),
        WatchEventType::Deleted,
    );
    assert_eq!(left.2, obj.metadata.clone().expect("meta").resource_version);
    assert_eq!(left.3.metadata.expect("meta").labels["select"], "true");
    // A write in a sibling namespace is not seen.
    reg::create_cm_in(
        &mut cms,
        "w-bad",
        cm_in("w-bad", "c", &[("select", "true")]),
    )
    .await
    .expect("create");
    // Enters again: ADDED; changes inside: MODIFIED.
    obj.metadata
        .as_mut()
        .expect("meta")
        .labels
        .insert("select".into(), "true".into());
    obj = reg::update_cm_in(&mut cms, "w", obj).await.expect("update");
    expect(next(&mut w, SEC).await.expect("ok"), WatchEventType::Added);
    obj.data.insert("k".into(), "v2".into());
    reg::update_cm_in(&mut cms, "w", obj).await.expect("update");
    let modified = expect(
        next(&mut w, SEC).await.expect("ok"),
        WatchEventType::Modified,
    );
    assert_eq!(modified.3.data["k"], "v2");
    // Deleted: the last state, with the deletion's revision.
    let (gone, deleted) = reg::delete_cm_in(&mut cms, "w", "c").await.expect("delete");
    assert!(deleted);
    let del = expect(
        next(&mut w, SEC).await.expect("ok"),
        WatchEventType::Deleted,
    );
    assert_eq!(del.2, gone.metadata.expect("meta").resource_version);
    assert_ne!(del.2, modified.2);
    assert!(quiet(&mut w, Duration::from_millis(300)).await);

    // Pods by node: a pod elsewhere is never seen.
    let mut pods = cluster.pods().await;
    let mut pw = pods
        .watch(kubestore_proto::core::v1::WatchPodsRequest {
            namespace: reg::NS.into(),
            options: Some(ListOptions {
                field_selector: "spec.nodeName=n1".into(),
                send_initial_events: Some(false),
                ..Default::default()
            }),
        })
        .await
        .expect("watch")
        .into_inner();
    reg::create_pod(&mut pods, reg::pod("elsewhere", "n2"))
        .await
        .expect("create");
    reg::create_pod(&mut pods, reg::pod("here", "n1"))
        .await
        .expect("create");
    let ev = tokio::time::timeout(SEC, pw.message())
        .await
        .expect("in time")
        .expect("ok")
        .expect("event");
    assert_eq!(
        (
            ev.r#type,
            ev.object.expect("pod").metadata.expect("meta").name
        ),
        (WatchEventType::Added as i32, "here".to_string())
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn resuming_from_a_resource_version_loses_and_repeats_nothing() {
    let cluster = Cluster::full().await;
    let mut cms = cluster.config_maps().await;
    let start = reg::create_cm_in(&mut cms, "r", cm_in("r", "seed", &[]))
        .await
        .expect("create")
        .metadata
        .expect("meta")
        .resource_version;
    let mut writers = Vec::new();
    for w in 0..4 {
        let mut c = cluster.config_maps().await;
        writers.push(tokio::spawn(async move {
            let mut rvs = Vec::new();
            for i in 0..50 {
                let mut o = reg::create_cm_in(&mut c, "r", cm_in("r", &format!("w{w}-{i}"), &[]))
                    .await
                    .expect("create");
                rvs.push(o.metadata.clone().expect("meta").resource_version);
                o.data.insert("k".into(), "v2".into());
                let o = reg::update_cm_in(&mut c, "r", o).await.expect("update");
                rvs.push(o.metadata.expect("meta").resource_version);
            }
            rvs
        }));
    }
    let mut last = start.clone();
    let mut seen: Vec<String> = Vec::new();
    let mut reconnects = 0;
    let mut done = false;
    while !done {
        let mut w = watch_cms(&mut cms, "r", from(&last)).await.expect("watch");
        reconnects += 1;
        for _ in 0..40 {
            match tokio::time::timeout(Duration::from_secs(2), w.message()).await {
                Ok(Ok(Some(e))) => {
                    let rv = e
                        .object
                        .expect("object")
                        .metadata
                        .expect("meta")
                        .resource_version;
                    seen.push(rv.clone());
                    last = rv;
                }
                Ok(other) => panic!("watch ended: {other:?}"),
                Err(_) => {
                    // Quiet for 2 s: done once every writer is.
                    done = writers.iter().all(|w| w.is_finished());
                    break;
                }
            }
        }
    }
    let mut written = BTreeSet::new();
    for w in writers {
        written.extend(w.await.expect("join"));
    }
    let as_num: Vec<i64> = seen.iter().map(|r| r.parse().expect("rv")).collect();
    assert!(
        as_num.windows(2).all(|p| p[0] < p[1]),
        "in order, none repeated"
    );
    assert_eq!(
        seen.iter().cloned().collect::<BTreeSet<_>>(),
        written,
        "every write seen exactly once"
    );
    assert_eq!(seen.len(), 400);
    assert!(reconnects >= 10, "{reconnects} reconnects");
}

#[tokio::test(flavor = "multi_thread")]
async fn initial_events_then_an_annotated_bookmark() {
    let cluster = Cluster::full().await;
    let mut cms = cluster.config_maps().await;
    let mut last_rv = String::new();
    for n in ["a", "b", "c"] {
        last_rv = reg::create_cm_in(&mut cms, "i", cm_in("i", n, &[]))
            .await
            .expect("create")
            .metadata
            .expect("meta")
            .resource_version;
    }
    // send_initial_events + bookmarks: ADDED x3, then the annotated BOOKMARK.
    let mut w = watch_cms(
        &mut cms,
        "i",
        ListOptions {
            send_initial_events: Some(true),
            allow_watch_bookmarks: true,
            ..Default::default()
        },
    )
    .await
    .expect("watch");
    let mut added = Vec::new();
    for _ in 0..3 {
        let e = next(&mut w, SEC).await.expect("ok").expect("event");
        assert_eq!(e.0, WatchEventType::Added);
        added.push(e.1);
    }
    assert_eq!(added, ["a", "b", "c"]);
    let b = next(&mut w, SEC).await.expect("ok").expect("bookmark");
    assert_eq!(b.0, WatchEventType::Bookmark);
    let m = b.3.metadata.expect("meta");
    assert_eq!(m.annotations["k8s.io/initial-events-end"], "true");
    assert!(
        m.name.is_empty() && b.3.data.is_empty(),
        "only the resourceVersion"
    );
    assert!(m.resource_version.parse::<i64>().expect("rv") >= last_rv.parse::<i64>().expect("rv"));
    reg::create_cm_in(&mut cms, "i", cm_in("i", "d", &[]))
        .await
        .expect("create");
    let e = next(&mut w, SEC).await.expect("ok").expect("event");
    assert_eq!((e.0, e.1.as_str()), (WatchEventType::Added, "d"));

    // Legacy (RV unset, send_initial_events unset): ADDED for each, no bookmark.
    let mut w = watch_cms(&mut cms, "i", ListOptions::default())
        .await
        .expect("watch");
    for _ in 0..4 {
        assert_eq!(
            next(&mut w, SEC).await.expect("ok").expect("event").0,
            WatchEventType::Added
        );
    }
    assert!(quiet(&mut w, Duration::from_millis(300)).await);
    // send_initial_events=false: only what changes from now on.
    let mut w = watch_cms(
        &mut cms,
        "i",
        ListOptions {
            send_initial_events: Some(false),
            ..Default::default()
        },
    )
    .await
    .expect("watch");
    assert!(quiet(&mut w, Duration::from_millis(300)).await);
    reg::create_cm_in(&mut cms, "i", cm_in("i", "e", &[]))
        .await
        .expect("create");
    assert_eq!(next(&mut w, SEC).await.expect("ok").expect("event").1, "e");
    // RV = N: exactly the changes after N, as ordinary events.
    let mut w = watch_cms(&mut cms, "i", from(&last_rv))
        .await
        .expect("watch");
    let a = next(&mut w, SEC).await.expect("ok").expect("event");
    let b = next(&mut w, SEC).await.expect("ok").expect("event");
    assert_eq!((a.1.as_str(), b.1.as_str()), ("d", "e"));
    // A watch cannot continue a list, nor ask for an exact revision.
    let e = watch_cms(
        &mut cms,
        "i",
        ListOptions {
            r#continue: "x".into(),
            ..Default::default()
        },
    )
    .await
    .expect_err("continue");
    assert_eq!(e.code(), Code::InvalidArgument);
}

#[tokio::test(flavor = "multi_thread")]
async fn idle_watchers_get_periodic_bookmarks() {
    let cluster = Cluster::start(ClusterOptions {
        storage: Some(storage_svc::Config {
            watch_bookmark_interval: Duration::from_millis(300),
            ..Default::default()
        }),
        with_registry: true,
        ..Default::default()
    })
    .await;
    let mut cms = cluster.config_maps().await;
    let start = reg::create_cm_in(&mut cms, "idle", cm_in("idle", "x", &[]))
        .await
        .expect("create")
        .metadata
        .expect("meta")
        .resource_version;
    let mut w = watch_cms(
        &mut cms,
        "idle",
        ListOptions {
            resource_version: start.clone(),
            allow_watch_bookmarks: true,
            ..Default::default()
        },
    )
    .await
    .expect("watch");
    // Nothing the watch selects changes; other resources do.
    let mut pods = cluster.pods().await;
    let mut bookmarks = Vec::new();
    for i in 0..12 {
        reg::create_pod(&mut pods, reg::pod(&format!("p{i}"), "n1"))
            .await
            .expect("create");
        if let Ok(Ok(Some(e))) = tokio::time::timeout(Duration::from_millis(250), w.message()).await
        {
            assert_eq!(e.r#type, WatchEventType::Bookmark as i32, "only bookmarks");
            let m = e.object.expect("object").metadata.expect("meta");
            assert!(m.annotations.is_empty(), "not the initial-events end");
            bookmarks.push(m.resource_version.parse::<i64>().expect("rv"));
        }
    }
    assert!(bookmarks.len() >= 3, "{bookmarks:?}");
    assert!(bookmarks.windows(2).all(|p| p[0] <= p[1]), "{bookmarks:?}");
    let start: i64 = start.parse().expect("rv");
    assert!(
        bookmarks.last().is_some_and(|b| *b > start),
        "bookmarks advance with writes elsewhere: {bookmarks:?} from {start}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_compacted_start_revision_is_expired() {
    // With the watch cache on (the default), the window still holds the changes after `old`:
    // etcd's compaction decides, as without the cache.
    let cluster = Cluster::full().await;
    let mut cms = cluster.config_maps().await;
    let old = reg::create_cm_in(&mut cms, "x", cm_in("x", "a", &[]))
        .await
        .expect("create")
        .metadata
        .expect("meta")
        .resource_version;
    reg::create_cm_in(&mut cms, "x", cm_in("x", "b", &[]))
        .await
        .expect("create");
    let latest = reg::create_cm_in(&mut cms, "x", cm_in("x", "c", &[]))
        .await
        .expect("create")
        .metadata
        .expect("meta")
        .resource_version;
    let mut etcd = cluster.etcd.client().await;
    etcd.compact(latest.parse::<i64>().expect("rv"), None)
        .await
        .expect("compact");
    let mut w = watch_cms(&mut cms, "x", from(&old))
        .await
        .expect("watch call");
    let e = next(&mut w, SEC).await.expect_err("expired");
    assert_eq!(
        (e.code(), reason(&e).as_str()),
        (Code::OutOfRange, "Expired")
    );
    assert!(
        e.message().contains("too old resource version"),
        "{}",
        e.message()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_slow_watcher_is_cut_off_while_a_fast_one_keeps_up() {
    let cluster = Cluster::full().await;
    let mut cms = cluster.config_maps().await;
    let opts = || ListOptions {
        send_initial_events: Some(false),
        ..Default::default()
    };
    let mut slow = watch_cms(&mut cms, "s", opts()).await.expect("watch");
    let mut fast = watch_cms(&mut cms, "s", opts()).await.expect("watch");
    // More than every buffer between storage and the client holds: storage's 256 events and
    // the HTTP/2 windows (a few MiB) of both hops.
    let total = 4000;
    let fast_reader = tokio::spawn(async move {
        let mut n = 0;
        while n < total {
            let e = next(&mut fast, Duration::from_secs(30))
                .await
                .expect("fast watcher keeps up")
                .expect("event");
            assert_eq!(e.0, WatchEventType::Added);
            n += 1;
        }
        n
    });
    let blob = "x".repeat(4000);
    let mut writers = Vec::new();
    for w in 0..4 {
        let mut c = cluster.config_maps().await;
        let blob = blob.clone();
        writers.push(tokio::spawn(async move {
            for i in (w * total / 4)..((w + 1) * total / 4) {
                let mut o = cm_in("s", &format!("o{i:05}"), &[]);
                o.data.insert("blob".into(), blob.clone());
                reg::create_cm_in(&mut c, "s", o).await.expect("create");
            }
        }));
    }
    for w in writers {
        w.await.expect("join");
    }
    assert_eq!(fast_reader.await.expect("join"), total);
    // registry-svc's relay reads storage's stream eagerly, so the cut-off is registry-svc's
    // (storage's watchers keep up with it); a watcher of storage-svc itself is cut off by
    // storage (tests/tests/storage.rs).
    let registry = cluster.registry.as_ref().expect("registry").metrics_addr;
    let cut = || async {
        sample(&scrape(registry).await, "registry_watchers_cut_off_total").unwrap_or(0.0)
            + sample(
                &scrape(cluster.storage.metrics_addr).await,
                "storage_watchers_cut_off_total",
            )
            .unwrap_or(0.0)
    };
    for _ in 0..200 {
        if cut().await >= 1.0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(cut().await, 1.0, "exactly the slow watcher was cut off");
    // The slow watcher reads what was buffered for it, then learns it was cut off.
    let mut read = 0;
    let e = loop {
        match next(&mut slow, SEC).await {
            Ok(Some(_)) => read += 1,
            Ok(None) => panic!("ended without an error"),
            Err(e) => break e,
        }
    };
    assert!(read < total, "{read}");
    assert_eq!(
        (e.code(), reason(&e).as_str()),
        (Code::ResourceExhausted, "WatcherTooSlow"),
        "{}",
        e.message()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn timeouts_end_watches_with_ok_and_shutdown_with_unavailable() {
    let mut cluster = Cluster::full().await;
    let mut cms = cluster.config_maps().await;
    let mut w = watch_cms(
        &mut cms,
        "t",
        ListOptions {
            timeout_seconds: Some(1),
            ..Default::default()
        },
    )
    .await
    .expect("watch");
    assert!(
        next(&mut w, SEC).await.expect("ok").is_none(),
        "ended with OK"
    );

    let mut w = watch_cms(&mut cms, "t", ListOptions::default())
        .await
        .expect("watch");
    let mut registry = cluster.registry.take().expect("registry");
    let stopper = std::thread::spawn(move || registry.stop());
    let e = next(&mut w, SEC).await.expect_err("ended by shutdown");
    assert_eq!(e.code(), Code::Unavailable, "{e:?}");
    assert_eq!(
        e.get_details_error_info().map(|i| i.reason).as_deref(),
        Some("ServiceUnavailable")
    );
    stopper.join().expect("registry stopped");
}

/// List options that make no sense together are upstream's 422 Invalid of `ListOptions` (the
/// handler's validation, every problem listed); values storage cannot read are 400 BadRequest.
#[tokio::test(flavor = "multi_thread")]
async fn bad_list_options_are_invalid_and_bad_values_are_bad_requests() {
    let cluster = Cluster::full().await;
    let mut cms = cluster.config_maps().await;
    reg::create_cm_in(&mut cms, "o", cm_in("o", "a", &[]))
        .await
        .expect("create");
    let exact = ResourceVersionMatch::Exact as i32;
    for (options, want_reason, words) in [
        (
            ListOptions {
                resource_version_match: exact,
                ..Default::default()
            },
            "Invalid",
            "resourceVersionMatch is forbidden unless resourceVersion is provided",
        ),
        (
            ListOptions {
                resource_version: "0".into(),
                resource_version_match: exact,
                ..Default::default()
            },
            "Invalid",
            "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
        ),
        (
            ListOptions {
                resource_version: "5".into(),
                resource_version_match: 7,
                ..Default::default()
            },
            "Invalid",
            "Unsupported value: 7",
        ),
        (
            ListOptions {
                send_initial_events: Some(true),
                ..Default::default()
            },
            "Invalid",
            "sendInitialEvents is forbidden for list",
        ),
        (
            ListOptions {
                resource_version: "abc".into(),
                ..Default::default()
            },
            "BadRequest",
            "abc",
        ),
        (
            ListOptions {
                r#continue: "not-a-token".into(),
                ..Default::default()
            },
            "BadRequest",
            "continue",
        ),
    ] {
        let e = list_cms(&mut cms, "o", options.clone())
            .await
            .expect_err("refused");
        assert_eq!(
            (e.code(), reason(&e).as_str()),
            (Code::InvalidArgument, want_reason),
            "{options:?}: {}",
            e.message()
        );
        assert!(e.message().contains(words), "{options:?}: {}", e.message());
    }
    // Two problems at once: both are named.
    let e = list_cms(
        &mut cms,
        "o",
        ListOptions {
            resource_version_match: exact,
            r#continue: "x".into(),
            ..Default::default()
        },
    )
    .await
    .expect_err("refused");
    assert!(
        e.message().contains("unless resourceVersion is provided")
            && e.message().contains("forbidden when continue is provided"),
        "{}",
        e.message()
    );
}
