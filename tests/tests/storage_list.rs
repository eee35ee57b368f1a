//! storage-svc List against a real etcd, mirroring upstream's `RunTestList*`,
//! `RunTestListContinuation*`, `RunTestListPaginationRareObject` and `RunTestConsistentList`:
//! resourceVersion semantics, paging at one revision, growth with selectors, compaction
//! between pages, and the keys a prefix covers.

use kubestore_proto::{
    core::v1::ConfigMap,
    meta::v1::ResourceVersionMatch,
    storage::v1::{
        FieldRequirement, LabelRequirement, ListRequest, ListResponse, Selector,
        label_requirement::Operator, storage_client::StorageClient,
    },
};
use kubestore_tests::{
    Cluster, ClusterOptions,
    fixtures_storage::{cm, create, reason},
    services::{sample, scrape},
};
use prost::Message;
use tonic::{Code, Status, transport::Channel};
use tonic_types::StatusExt;

async fn list(c: &mut StorageClient<Channel>, req: ListRequest) -> Result<ListResponse, Status> {
    Ok(c.list(req).await?.into_inner())
}

fn names(r: &ListResponse) -> Vec<String> {
    r.items
        .iter()
        .map(|b| {
            ConfigMap::decode(b.as_ref())
                .expect("decodes")
                .metadata
                .expect("meta")
                .name
        })
        .collect()
}

fn under(prefix: &str) -> ListRequest {
    ListRequest {
        key: prefix.into(),
        recursive: true,
        ..Default::default()
    }
}

fn labelled(name: &str, labels: &[(&str, &str)]) -> ConfigMap {
    let mut c = cm(name, &[]);
    c.metadata.as_mut().expect("meta").labels = labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    c
}

fn name_is_not(name: &str) -> Selector {
    Selector {
        labels: vec![],
        fields: vec![FieldRequirement {
            path: vec![1, 1],
            r#type: 0,
            equals: false,
            value: name.into(),
            json_path: Vec::new(),
        }],
    }
}

async fn ranges(cluster: &Cluster) -> f64 {
    sample(
        &scrape(cluster.storage.metrics_addr).await,
        r#"storage_etcd_rpc_duration_seconds_count{rpc="Range"}"#,
    )
    .unwrap_or(0.0)
}

#[tokio::test(flavor = "multi_thread")]
async fn resource_versions_select_what_a_list_reads() {
    let cluster = Cluster::storage_only().await;
    let mut c = cluster.storage_client().await;
    let rv1: i64 = create(&mut c, "/configmaps/ns/a", &cm("a", &[]), 0)
        .await
        .expect("create")
        .parse()
        .expect("rv");
    let rv2: i64 = create(&mut c, "/configmaps/ns/b", &cm("b", &[]), 0)
        .await
        .expect("create")
        .parse()
        .expect("rv");

    // Unset: consistent, at the current revision; each item carries its own revision. "Not
    // older than the last write": with the watch cache, proving freshness may have moved
    // etcd's revision on with a fence (a write of storage's own key, no object), and a list
    // served from the cache reports the revision the cache is at, as upstream's cacher does.
    let not_older = |rv: &str| rv.parse::<i64>().is_ok_and(|rv| rv >= rv2);
    let r = list(&mut c, under("/configmaps/ns")).await.expect("list");
    assert_eq!(names(&r), ["a", "b"]);
    assert!(not_older(&r.resource_version), "{}", r.resource_version);
    let rvs: Vec<String> = r
        .items
        .iter()
        .map(|b| kubestore_proto::meta::v1::resource_version_of(b))
        .collect();
    assert_eq!(rvs, [rv1.to_string(), rv2.to_string()]);
    // "0": any.
    let r = list(
        &mut c,
        ListRequest {
            resource_version: "0".into(),
            ..under("/configmaps/ns")
        },
    )
    .await
    .expect("list");
    // Served from the watch cache without waiting, it may be behind; whatever revision it
    // reports, it holds exactly the objects written up to it.
    let state_at = |r: &kubestore_proto::storage::v1::ListResponse| {
        let at: i64 = r.resource_version.parse().expect("list revision");
        let want: Vec<String> = [("a", rv1), ("b", rv2)]
            .iter()
            .filter(|(_, rv)| *rv <= at)
            .map(|(n, _)| n.to_string())
            .collect();
        (at, want)
    };
    let (at, want) = state_at(&r);
    assert!(at >= rv1, "{at}");
    assert_eq!(names(&r), want, "at {at}");
    // Exact: the state at that revision, and that revision echoed.
    let exact = |rv: i64| ListRequest {
        resource_version: rv.to_string(),
        resource_version_match: ResourceVersionMatch::Exact as i32,
        ..under("/configmaps/ns")
    };
    let r = list(&mut c, exact(rv1)).await.expect("exact");
    assert_eq!(
        (names(&r), r.resource_version),
        (vec!["a".to_string()], rv1.to_string())
    );
    // Legacy: a resourceVersion with a limit is Exact.
    let r = list(
        &mut c,
        ListRequest {
            resource_version: rv1.to_string(),
            limit: 5,
            ..under("/configmaps/ns")
        },
    )
    .await
    .expect("legacy exact");
    assert_eq!(names(&r), ["a"]);
    // NotOlderThan: at least that revision.
    let r = list(
        &mut c,
        ListRequest {
            resource_version: rv1.to_string(),
            resource_version_match: ResourceVersionMatch::NotOlderThan as i32,
            ..under("/configmaps/ns")
        },
    )
    .await
    .expect("not older than");
    let (at, want) = state_at(&r);
    assert!(at >= rv1, "{at}");
    assert_eq!(names(&r), want, "at {at}");
    // Ahead of etcd: UNAVAILABLE, reason Timeout, for NotOlderThan and Exact alike.
    for m in [
        ResourceVersionMatch::NotOlderThan,
        ResourceVersionMatch::Exact,
    ] {
        let e = list(
            &mut c,
            ListRequest {
                resource_version: (rv2 + 100).to_string(),
                resource_version_match: m as i32,
                ..under("/configmaps/ns")
            },
        )
        .await
        .expect_err("too large");
        assert_eq!(
            (e.code(), reason(&e).as_str()),
            (Code::Unavailable, "Timeout"),
            "{m:?}"
        );
        assert!(
            e.message().starts_with("Too large resource version"),
            "{}",
            e.message()
        );
    }
    // Requests that make no sense.
    for (bad, why) in [
        (
            ListRequest {
                resource_version: "abc".into(),
                ..under("/configmaps/ns")
            },
            "invalid resource version",
        ),
        (
            ListRequest {
                resource_version_match: ResourceVersionMatch::Exact as i32,
                ..under("/configmaps/ns")
            },
            "resourceVersionMatch is forbidden unless",
        ),
        (
            ListRequest {
                resource_version: "0".into(),
                resource_version_match: ResourceVersionMatch::Exact as i32,
                ..under("/configmaps/ns")
            },
            "forbidden for resourceVersion \"0\"",
        ),
        (
            ListRequest {
                resource_version_match: 7,
                resource_version: "1".into(),
                ..under("/configmaps/ns")
            },
            "unknown ResourceVersionMatch",
        ),
        (
            ListRequest {
                limit: -1,
                ..under("/configmaps/ns")
            },
            "limit",
        ),
        (under("/configmaps/.."), "invalid key"),
    ] {
        let e = list(&mut c, bad).await.expect_err(why);
        assert_eq!(e.code(), Code::InvalidArgument, "{why}: {e:?}");
        assert!(e.message().contains(why), "{why}: {}", e.message());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn pages_share_the_first_pages_revision() {
    let cluster = Cluster::storage_only().await;
    let mut c = cluster.storage_client().await;
    for n in ["test-0", "test-1", "test-2", "test-3"] {
        create(&mut c, &format!("/configmaps/ns/{n}"), &cm(n, &[]), 0)
            .await
            .expect("create");
    }
    let mut seen = Vec::new();
    let mut remaining = Vec::new();
    let mut req = ListRequest {
        limit: 1,
        ..under("/configmaps/ns")
    };
    let mut first_rv = None;
    loop {
        let r = list(&mut c, req.clone()).await.expect("page");
        seen.extend(names(&r));
        remaining.push(r.remaining_item_count);
        let rv = first_rv.get_or_insert(r.resource_version.clone());
        assert_eq!(
            &r.resource_version, rv,
            "every page reports page 1's revision"
        );
        // A write between pages is not seen by this chain.
        create(
            &mut c,
            &format!("/configmaps/ns/test-{}a", seen.len()),
            &cm("x", &[]),
            0,
        )
        .await
        .expect("create");
        if r.r#continue.is_empty() {
            break;
        }
        req.r#continue = r.r#continue;
    }
    assert_eq!(seen, ["test-0", "test-1", "test-2", "test-3"]);
    assert_eq!(remaining, [Some(3), Some(2), Some(1), None]);
    // A resourceVersion other than "" or "0" with a continue token is refused; "0" is ignored.
    let r = list(
        &mut c,
        ListRequest {
            limit: 1,
            ..under("/configmaps/ns")
        },
    )
    .await
    .expect("page");
    let e = list(
        &mut c,
        ListRequest {
            r#continue: r.r#continue.clone(),
            resource_version: "5".into(),
            ..under("/configmaps/ns")
        },
    )
    .await
    .expect_err("rv with continue");
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(
        e.message().contains("not allowed when using continue"),
        "{}",
        e.message()
    );
    list(
        &mut c,
        ListRequest {
            r#continue: r.r#continue,
            resource_version: "0".into(),
            ..under("/configmaps/ns")
        },
    )
    .await
    .expect("0 is ignored");
    let e = list(
        &mut c,
        ListRequest {
            r#continue: "not-a-token".into(),
            ..under("/configmaps/ns")
        },
    )
    .await
    .expect_err("malformed");
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(
        e.message().contains("invalid continue token"),
        "{}",
        e.message()
    );
}

/// The next page of a one-item chain under `/configmaps/ns`, which must be Expired.
async fn next_page_expired(c: &mut StorageClient<Channel>, token: &str) -> Status {
    let e = list(
        c,
        ListRequest {
            limit: 1,
            r#continue: token.to_string(),
            ..under("/configmaps/ns")
        },
    )
    .await
    .expect_err("compacted");
    assert_eq!(
        (e.code(), reason(&e).as_str()),
        (Code::OutOfRange, "Expired"),
        "{}",
        e.message()
    );
    e
}

#[tokio::test(flavor = "multi_thread")]
async fn a_compacted_continuation_is_expired_with_a_fresh_token() {
    let cluster = Cluster::storage_only().await;
    let mut c = cluster.storage_client().await;
    for n in ["a", "b", "c"] {
        create(&mut c, &format!("/configmaps/ns/{n}"), &cm(n, &[]), 0)
            .await
            .expect("create");
    }
    let first = list(
        &mut c,
        ListRequest {
            limit: 1,
            ..under("/configmaps/ns")
        },
    )
    .await
    .expect("page 1");
    assert_eq!(names(&first), ["a"]);
    // Writes, then a compaction past page 1's revision.
    create(&mut c, "/configmaps/ns/d", &cm("d", &[]), 0)
        .await
        .expect("create");
    let rev: i64 = create(&mut c, "/configmaps/other/x", &cm("x", &[]), 0)
        .await
        .expect("create")
        .parse()
        .expect("rv");
    let mut etcd = cluster.etcd.client().await;
    etcd.compact(rev, None).await.expect("compact");
    let e = next_page_expired(&mut c, &first.r#continue).await;
    assert!(
        e.message()
            .starts_with("The provided continue parameter is too old"),
        "{}",
        e.message()
    );
    let fresh = e
        .get_details_error_info()
        .and_then(|i| i.metadata.get("continue").cloned())
        .expect("a fresh token");
    // The fresh token goes on from the same key at the current revision, and the rest of the
    // chain stays at that revision.
    let page2 = list(
        &mut c,
        ListRequest {
            limit: 1,
            r#continue: fresh,
            ..under("/configmaps/ns")
        },
    )
    .await
    .expect("page 2");
    assert_eq!(names(&page2), ["b"]);
    assert!(page2.resource_version.parse::<i64>().expect("rv") >= rev);
    let page3 = list(
        &mut c,
        ListRequest {
            limit: 1,
            r#continue: page2.r#continue.clone(),
            ..under("/configmaps/ns")
        },
    )
    .await
    .expect("page 3");
    assert_eq!(names(&page3), ["c"]);
    assert_eq!(page3.resource_version, page2.resource_version);
    // Without a continue token, an exact read of a compacted revision is Expired too.
    let e = list(
        &mut c,
        ListRequest {
            resource_version: first.resource_version,
            resource_version_match: ResourceVersionMatch::Exact as i32,
            ..under("/configmaps/ns")
        },
    )
    .await
    .expect_err("compacted");
    assert_eq!(e.code(), Code::OutOfRange);
    assert_eq!(
        e.message(),
        "The resourceVersion for the provided list is too old."
    );

    // A chain whose prefix did not change while etcd moved on (a write elsewhere) and then
    // compacted: Expired too (a watch cache must not answer it from memory).
    let chain = list(
        &mut c,
        ListRequest {
            limit: 1,
            ..under("/configmaps/ns")
        },
    )
    .await
    .expect("page 1");
    let rev: i64 = create(&mut c, "/pods/ns/p", &cm("p", &[]), 0)
        .await
        .expect("create")
        .parse()
        .expect("rv");
    etcd.compact(rev, None).await.expect("compact");
    next_page_expired(&mut c, &chain.r#continue).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn selectors_fill_pages_by_reading_on() {
    // The etcd path's growth loop (the watch cache fills pages from memory).
    let cluster = Cluster::start(ClusterOptions {
        storage: Some(storage_svc::Config {
            watch_cache: false,
            ..Default::default()
        }),
        ..Default::default()
    })
    .await;
    let mut c = cluster.storage_client().await;
    // Upstream's RunTestListContinuationWithFilter: limit 2, name != bar2.
    for n in ["bar2", "foo1", "foo3", "foo4"] {
        create(&mut c, &format!("/configmaps/f/{n}"), &cm(n, &[]), 0)
            .await
            .expect("create");
    }
    let r = list(
        &mut c,
        ListRequest {
            limit: 2,
            selector: Some(name_is_not("bar2")),
            ..under("/configmaps/f")
        },
    )
    .await
    .expect("page");
    assert_eq!(names(&r), ["foo1", "foo3"]);
    assert!(!r.r#continue.is_empty());
    assert_eq!(r.remaining_item_count, None, "not with a selector");
    let r = list(
        &mut c,
        ListRequest {
            limit: 2,
            r#continue: r.r#continue,
            selector: Some(name_is_not("bar2")),
            ..under("/configmaps/f")
        },
    )
    .await
    .expect("page");
    assert_eq!(names(&r), ["foo4"]);
    assert!(r.r#continue.is_empty());

    // Upstream's RunTestListPaginationRareObject: 1,000 objects, limit 1, one match at the
    // end: one item, one page, ten etcd reads (1+2+...+512 >= 1000).
    let mut handles = Vec::new();
    for w in 0..10 {
        let mut c = cluster.storage_client().await;
        handles.push(tokio::spawn(async move {
            for i in (w * 100)..(w * 100 + 100) {
                let name = format!("obj-{i:04}");
                let labels: &[(&str, &str)] = if i == 999 { &[("rare", "yes")] } else { &[] };
                create(
                    &mut c,
                    &format!("/configmaps/rare/{name}"),
                    &labelled(&name, labels),
                    0,
                )
                .await
                .expect("create");
            }
        }));
    }
    for h in handles {
        h.await.expect("join");
    }
    let before = ranges(&cluster).await;
    let r = list(
        &mut c,
        ListRequest {
            limit: 1,
            selector: Some(Selector {
                labels: vec![LabelRequirement {
                    key: "rare".into(),
                    operator: Operator::Equals as i32,
                    values: vec!["yes".into()],
                }],
                fields: vec![],
            }),
            ..under("/configmaps/rare")
        },
    )
    .await
    .expect("list");
    assert_eq!(names(&r), ["obj-0999"]);
    assert!(r.r#continue.is_empty(), "one page");
    assert_eq!(ranges(&cluster).await - before, 10.0, "etcd reads");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_prefix_covers_its_children_only() {
    let cluster = Cluster::storage_only().await;
    let mut c = cluster.storage_client().await;
    for key in [
        "/pods/ns/foo",
        "/pods/ns/foobar",
        "/pods/ns2/foo",
        "/pods/nsx/a",
    ] {
        let name = key.rsplit('/').next().expect("name");
        create(&mut c, key, &cm(name, &[]), 0)
            .await
            .expect("create");
    }
    let r = list(&mut c, under("/pods/ns")).await.expect("list");
    assert_eq!(names(&r), ["foo", "foobar"], "not ns2 or nsx");
    // Recursive on an object key: no children.
    assert!(
        list(&mut c, under("/pods/ns/foo"))
            .await
            .expect("list")
            .items
            .is_empty()
    );
    // Non-recursive: exactly that key, never a continue token.
    let one = |key: &str| ListRequest {
        key: key.into(),
        recursive: false,
        limit: 1,
        ..Default::default()
    };
    let r = list(&mut c, one("/pods/ns/foo")).await.expect("list");
    assert_eq!(
        (names(&r), r.r#continue.as_str()),
        (vec!["foo".to_string()], "")
    );
    assert!(
        list(&mut c, one("/pods/ns"))
            .await
            .expect("list")
            .items
            .is_empty()
    );
    let r = list(&mut c, under("/pods")).await.expect("all namespaces");
    assert_eq!(r.items.len(), 4);
}
