//! The shared List/Watch semantics (`list_watch.rs`, `paging.rs`), run once per kind: a
//! built-in kind (ConfigMaps) and a custom kind (the CronTab definition of the Kubernetes
//! docs), through the same test bodies. A custom kind is served by the same generic Store,
//! watch cache and storage path as a built-in one; these tests are what says so: selector
//! transitions, resuming from a resourceVersion, initial events and their bookmark, paging
//! through one snapshot, and Expired for a compacted revision.

use std::{
    collections::{BTreeMap, BTreeSet},
    pin::Pin,
    time::Duration,
};

use kubestore_proto::{
    apiextensions::v1::{
        CreateCustomObjectRequest, DeleteCustomObjectRequest, ListCustomObjectsRequest,
        UpdateCustomObjectRequest, WatchCustomObjectsRequest,
        custom_objects_client::CustomObjectsClient,
        custom_resource_definitions_client::CustomResourceDefinitionsClient,
    },
    core::v1::{
        ConfigMap, CreateConfigMapRequest, DeleteConfigMapRequest, ListConfigMapsRequest,
        UpdateConfigMapRequest, WatchConfigMapsRequest, config_maps_client::ConfigMapsClient,
    },
    meta::v1::{ListMeta, ListOptions, ObjectMeta, ResourceVersionMatch, WatchEventType},
};
use kubestore_tests::{
    Cluster,
    fixtures_custom::{crontab_crd, register_established},
    reason,
    services::channel,
};
use serde_json::{Value, json};
use tokio_stream::{Stream, StreamExt};
use tonic::{Code, Status, transport::Channel};

const SEC: Duration = Duration::from_secs(5);

/// An object as these tests see it, whichever its kind: name, resourceVersion, labels,
/// annotations, and one value the tests change (`data.v` / `spec.image`).
#[derive(Clone, Debug, Default)]
struct Obj {
    name: String,
    rv: String,
    labels: BTreeMap<String, String>,
    annotations: BTreeMap<String, String>,
    value: String,
}

type Events = Pin<Box<dyn Stream<Item = Result<(WatchEventType, Obj), Status>> + Send>>;

/// One kind's client, reduced to what the shared tests do.
#[derive(Clone)]
enum Kind {
    ConfigMaps(ConfigMapsClient<Channel>),
    CronTabs(CustomObjectsClient<Channel>),
}

fn from_config_map(c: ConfigMap) -> Obj {
    let m = c.metadata.unwrap_or_default();
    Obj {
        name: m.name,
        rv: m.resource_version,
        labels: m.labels.into_iter().collect(),
        annotations: m.annotations.into_iter().collect(),
        value: c.data.get("v").cloned().unwrap_or_default(),
    }
}

fn from_struct(s: Option<pbjson_types::Struct>) -> Obj {
    let v = serde_json::to_value(s.unwrap_or_default()).expect("json");
    let m = &v["metadata"];
    let map = |v: &Value| -> BTreeMap<String, String> {
        v.as_object()
            .map(|o| {
                o.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                    .collect()
            })
            .unwrap_or_default()
    };
    Obj {
        name: m["name"].as_str().unwrap_or_default().into(),
        rv: m["resourceVersion"].as_str().unwrap_or_default().into(),
        labels: map(&m["labels"]),
        annotations: map(&m["annotations"]),
        value: v["spec"]["image"].as_str().unwrap_or_default().into(),
    }
}

fn event_type(t: i32) -> WatchEventType {
    WatchEventType::try_from(t).unwrap_or(WatchEventType::Unspecified)
}

impl Kind {
    fn label(&self) -> &'static str {
        match self {
            Kind::ConfigMaps(_) => "ConfigMaps",
            Kind::CronTabs(_) => "CronTabs",
        }
    }

    fn crontab(o: &Obj) -> pbjson_types::Struct {
        let mut meta = json!({"name": o.name, "labels": o.labels});
        if !o.rv.is_empty() {
            meta["resourceVersion"] = json!(o.rv);
        }
        serde_json::from_value(json!({
            "apiVersion": "stable.example.com/v1",
            "kind": "CronTab",
            "metadata": meta,
            "spec": {"cronSpec": "* * * * */5", "image": o.value},
        }))
        .expect("a Struct")
    }

    fn config_map(o: &Obj) -> ConfigMap {
        ConfigMap {
            metadata: Some(ObjectMeta {
                name: o.name.clone(),
                resource_version: o.rv.clone(),
                labels: o.labels.clone().into_iter().collect(),
                ..Default::default()
            }),
            data: [("v".to_string(), o.value.clone())].into(),
            immutable: None,
            binary_data: Default::default(),
        }
    }

    async fn create(&mut self, ns: &str, name: &str, labels: &[(&str, &str)]) -> Obj {
        let o = Obj {
            name: name.into(),
            labels: labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            value: "v1".into(),
            ..Default::default()
        };
        match self {
            Kind::ConfigMaps(c) => from_config_map(
                c.create(CreateConfigMapRequest {
                    namespace: ns.into(),
                    config_map: Some(Self::config_map(&o)),
                    dry_run: false,
                })
                .await
                .expect("create")
                .into_inner(),
            ),
            Kind::CronTabs(c) => from_struct(Some(
                c.create(CreateCustomObjectRequest {
                    group: "stable.example.com".into(),
                    version: "v1".into(),
                    plural: "crontabs".into(),
                    namespace: ns.into(),
                    object: Some(Self::crontab(&o)),
                    dry_run: false,
                })
                .await
                .expect("create")
                .into_inner(),
            )),
        }
    }

    /// Writes `o` (labels and value) at its resourceVersion.
    async fn update(&mut self, ns: &str, o: &Obj) -> Obj {
        match self {
            Kind::ConfigMaps(c) => from_config_map(
                c.update(UpdateConfigMapRequest {
                    namespace: ns.into(),
                    config_map: Some(Self::config_map(o)),
                    dry_run: false,
                })
                .await
                .expect("update")
                .into_inner(),
            ),
            Kind::CronTabs(c) => from_struct(Some(
                c.update(UpdateCustomObjectRequest {
                    group: "stable.example.com".into(),
                    version: "v1".into(),
                    plural: "crontabs".into(),
                    namespace: ns.into(),
                    object: Some(Self::crontab(o)),
                    dry_run: false,
                })
                .await
                .expect("update")
                .into_inner(),
            )),
        }
    }

    /// Deletes `name`; its last state.
    async fn delete(&mut self, ns: &str, name: &str) -> Obj {
        match self {
            Kind::ConfigMaps(c) => {
                let r = c
                    .delete(DeleteConfigMapRequest {
                        namespace: ns.into(),
                        name: name.into(),
                        options: None,
                    })
                    .await
                    .expect("delete")
                    .into_inner();
                assert!(r.deleted);
                from_config_map(r.config_map.unwrap_or_default())
            }
            Kind::CronTabs(c) => {
                let r = c
                    .delete(DeleteCustomObjectRequest {
                        group: "stable.example.com".into(),
                        version: "v1".into(),
                        plural: "crontabs".into(),
                        namespace: ns.into(),
                        name: name.into(),
                        options: None,
                    })
                    .await
                    .expect("delete")
                    .into_inner();
                assert!(r.deleted);
                from_struct(r.object)
            }
        }
    }

    async fn list(
        &mut self,
        ns: &str,
        options: ListOptions,
    ) -> Result<(Vec<Obj>, ListMeta), Status> {
        Ok(match self {
            Kind::ConfigMaps(c) => {
                let l = c
                    .list(ListConfigMapsRequest {
                        namespace: ns.into(),
                        options: Some(options),
                    })
                    .await?
                    .into_inner();
                (
                    l.items.into_iter().map(from_config_map).collect(),
                    l.metadata.unwrap_or_default(),
                )
            }
            Kind::CronTabs(c) => {
                let l = c
                    .list(ListCustomObjectsRequest {
                        group: "stable.example.com".into(),
                        version: "v1".into(),
                        plural: "crontabs".into(),
                        namespace: ns.into(),
                        options: Some(options),
                    })
                    .await?
                    .into_inner();
                (
                    l.items.into_iter().map(|s| from_struct(Some(s))).collect(),
                    l.metadata.unwrap_or_default(),
                )
            }
        })
    }

    async fn watch(&mut self, ns: &str, options: ListOptions) -> Result<Events, Status> {
        Ok(match self {
            Kind::ConfigMaps(c) => Box::pin(
                c.watch(WatchConfigMapsRequest {
                    namespace: ns.into(),
                    options: Some(options),
                })
                .await?
                .into_inner()
                .map(|e| {
                    e.map(|e| {
                        (
                            event_type(e.r#type),
                            from_config_map(e.object.unwrap_or_default()),
                        )
                    })
                }),
            ),
            Kind::CronTabs(c) => Box::pin(
                c.watch(WatchCustomObjectsRequest {
                    group: "stable.example.com".into(),
                    version: "v1".into(),
                    plural: "crontabs".into(),
                    namespace: ns.into(),
                    options: Some(options),
                })
                .await?
                .into_inner()
                .map(|e| e.map(|e| (event_type(e.r#type), from_struct(e.object)))),
            ),
        })
    }
}

/// The next event within `within`: `Ok(None)` when the stream ended with OK.
async fn next(w: &mut Events, within: Duration) -> Result<Option<(WatchEventType, Obj)>, Status> {
    tokio::time::timeout(within, w.next())
        .await
        .expect("no watch event in time")
        .transpose()
}

async fn quiet(w: &mut Events, within: Duration) -> bool {
    tokio::time::timeout(within, w.next()).await.is_err()
}

fn from(rv: &str) -> ListOptions {
    ListOptions {
        resource_version: rv.into(),
        ..Default::default()
    }
}

/// A full cluster serving the CronTab definition; one client of each kind.
async fn both_kinds() -> (Cluster, Vec<Kind>) {
    let cluster = Cluster::full().await;
    let url = cluster.registry.as_ref().expect("registry").url();
    let mut defs = CustomResourceDefinitionsClient::new(channel(&url).await);
    register_established(&mut defs, crontab_crd()).await;
    let kinds = vec![
        Kind::ConfigMaps(ConfigMapsClient::new(channel(&url).await)),
        Kind::CronTabs(CustomObjectsClient::new(channel(&url).await)),
    ];
    (cluster, kinds)
}

#[tokio::test(flavor = "multi_thread")]
async fn watch_follows_objects_through_a_selector_for_every_kind() {
    let (_cluster, kinds) = both_kinds().await;
    for mut k in kinds {
        let ns = format!("w-{}", k.label().to_lowercase());
        let other = format!("{ns}-other");
        let mut w = k
            .watch(
                &ns,
                ListOptions {
                    label_selector: "select=true".into(),
                    send_initial_events: Some(false),
                    ..Default::default()
                },
            )
            .await
            .expect("watch");
        let label = k.label();
        let expect = |e: Option<(WatchEventType, Obj)>, t: WatchEventType| {
            let e = e.expect("an event");
            assert_eq!((e.0, e.1.name.as_str()), (t, "c"), "{label}");
            e.1
        };
        let mut obj = k.create(&ns, "c", &[("select", "true")]).await;
        expect(next(&mut w, SEC).await.expect("ok"), WatchEventType::Added);
        // Leaving the selector: DELETED with the old state, at the new revision.
        obj.labels.clear();
        obj = k.update(&ns, &obj).await;
        let left = expect(
            next(&mut w, SEC).await.expect("ok"),
            WatchEventType::Deleted,
        );
        assert_eq!(left.rv, obj.rv, "{}", k.label());
        assert_eq!(left.labels["select"], "true", "{}", k.label());
        // Another namespace is not seen.
        k.create(&other, "c", &[("select", "true")]).await;
        // Entering: ADDED; changing inside: MODIFIED; deleted: the last state.
        obj.labels.insert("select".into(), "true".into());
        obj = k.update(&ns, &obj).await;
        expect(next(&mut w, SEC).await.expect("ok"), WatchEventType::Added);
        obj.value = "v2".into();
        k.update(&ns, &obj).await;
        let modified = expect(
            next(&mut w, SEC).await.expect("ok"),
            WatchEventType::Modified,
        );
        assert_eq!(modified.value, "v2", "{}", k.label());
        let gone = k.delete(&ns, "c").await;
        let del = expect(
            next(&mut w, SEC).await.expect("ok"),
            WatchEventType::Deleted,
        );
        assert_eq!(del.rv, gone.rv, "{}", k.label());
        assert_ne!(del.rv, modified.rv, "{}", k.label());
        assert!(
            quiet(&mut w, Duration::from_millis(300)).await,
            "{}",
            k.label()
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn resuming_from_a_resource_version_loses_and_repeats_nothing_for_every_kind() {
    let (_cluster, kinds) = both_kinds().await;
    for mut k in kinds {
        let ns = format!("r-{}", k.label().to_lowercase());
        let start = k.create(&ns, "seed", &[]).await.rv;
        let mut writers = Vec::new();
        for w in 0..3 {
            let (mut c, ns) = (k.clone(), ns.clone());
            writers.push(tokio::spawn(async move {
                let mut rvs = Vec::new();
                for i in 0..20 {
                    let mut o = c.create(&ns, &format!("w{w}-{i}"), &[]).await;
                    rvs.push(o.rv.clone());
                    o.value = "v2".into();
                    rvs.push(c.update(&ns, &o).await.rv);
                }
                rvs
            }));
        }
        // Reconnect every 15 events, from the last resourceVersion seen.
        let (mut last, mut seen, mut reconnects, mut done) = (start, Vec::new(), 0, false);
        while !done {
            let mut w = k.watch(&ns, from(&last)).await.expect("watch");
            reconnects += 1;
            for _ in 0..15 {
                match tokio::time::timeout(Duration::from_secs(2), w.next()).await {
                    Ok(Some(Ok((_, o)))) => {
                        seen.push(o.rv.clone());
                        last = o.rv;
                    }
                    Ok(other) => panic!("{}: watch ended: {other:?}", k.label()),
                    Err(_) => {
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
        let nums: Vec<i64> = seen.iter().map(|r| r.parse().expect("rv")).collect();
        assert!(
            nums.windows(2).all(|p| p[0] < p[1]),
            "{}: in order",
            k.label()
        );
        assert_eq!(
            seen.iter().cloned().collect::<BTreeSet<_>>(),
            written,
            "{}: every write seen exactly once",
            k.label()
        );
        assert_eq!(seen.len(), 120, "{}", k.label());
        assert!(reconnects >= 8, "{}: {reconnects} reconnects", k.label());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn initial_events_then_an_annotated_bookmark_for_every_kind() {
    let (_cluster, kinds) = both_kinds().await;
    for mut k in kinds {
        let ns = format!("i-{}", k.label().to_lowercase());
        let mut last_rv = String::new();
        for n in ["a", "b", "c"] {
            last_rv = k.create(&ns, n, &[]).await.rv;
        }
        let mut w = k
            .watch(
                &ns,
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
            let (t, o) = next(&mut w, SEC).await.expect("ok").expect("event");
            assert_eq!(t, WatchEventType::Added, "{}", k.label());
            added.push(o.name);
        }
        assert_eq!(added, ["a", "b", "c"], "{}", k.label());
        let (t, b) = next(&mut w, SEC).await.expect("ok").expect("bookmark");
        assert_eq!(t, WatchEventType::Bookmark, "{}", k.label());
        assert_eq!(
            b.annotations
                .get("k8s.io/initial-events-end")
                .map(String::as_str),
            Some("true"),
            "{}: {b:?}",
            k.label()
        );
        assert!(b.name.is_empty(), "{}: only the resourceVersion", k.label());
        assert!(b.rv.parse::<i64>().expect("rv") >= last_rv.parse::<i64>().expect("rv"));
        k.create(&ns, "d", &[]).await;
        let (t, o) = next(&mut w, SEC).await.expect("ok").expect("event");
        assert_eq!(
            (t, o.name.as_str()),
            (WatchEventType::Added, "d"),
            "{}",
            k.label()
        );
        k.create(&ns, "e", &[]).await;
        // RV = N: exactly the changes after N, as ordinary events.
        let mut w = k.watch(&ns, from(&last_rv)).await.expect("watch");
        let (_, d) = next(&mut w, SEC).await.expect("ok").expect("event");
        let (_, e) = next(&mut w, SEC).await.expect("ok").expect("event");
        assert_eq!(
            (d.name.as_str(), e.name.as_str()),
            ("d", "e"),
            "{}",
            k.label()
        );
        // A watch cannot continue a list.
        let err = k
            .watch(
                &ns,
                ListOptions {
                    r#continue: "x".into(),
                    ..Default::default()
                },
            )
            .await
            .err()
            .expect("continue on a watch");
        assert_eq!(err.code(), Code::InvalidArgument, "{}", k.label());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn pages_are_one_snapshot_and_exact_reads_the_past_for_every_kind() {
    let (_cluster, kinds) = both_kinds().await;
    for mut k in kinds {
        let ns = format!("p-{}", k.label().to_lowercase());
        for i in 0..5 {
            k.create(&ns, &format!("o{i}"), &[]).await;
        }
        let page = |cont: &str| ListOptions {
            limit: 2,
            r#continue: cont.into(),
            ..Default::default()
        };
        let (first, meta) = k.list(&ns, page("")).await.expect("page 1");
        assert_eq!(first.len(), 2, "{}", k.label());
        assert_eq!(meta.remaining_item_count, Some(3), "{}", k.label());
        let snapshot = meta.resource_version.clone();
        // Writes between pages are not in later pages: they belong to the list's revision.
        k.create(&ns, "o9", &[]).await;
        k.delete(&ns, "o4").await;
        let mut names: Vec<String> = first.into_iter().map(|o| o.name).collect();
        let mut cont = meta.r#continue;
        while !cont.is_empty() {
            let (items, meta) = k.list(&ns, page(&cont)).await.expect("next page");
            assert_eq!(meta.resource_version, snapshot, "{}", k.label());
            names.extend(items.into_iter().map(|o| o.name));
            cont = meta.r#continue;
        }
        assert_eq!(names, ["o0", "o1", "o2", "o3", "o4"], "{}", k.label());
        // Exact: the state at the snapshot's revision; NotOlderThan: at least as new.
        let (items, meta) = k
            .list(
                &ns,
                ListOptions {
                    resource_version: snapshot.clone(),
                    resource_version_match: ResourceVersionMatch::Exact as i32,
                    ..Default::default()
                },
            )
            .await
            .expect("exact");
        assert_eq!(meta.resource_version, snapshot, "{}", k.label());
        assert_eq!(items.len(), 5, "{}", k.label());
        assert!(items.iter().all(|o| o.name != "o9"), "{}", k.label());
        let (now, _) = k.list(&ns, ListOptions::default()).await.expect("current");
        let now: Vec<String> = now.into_iter().map(|o| o.name).collect();
        assert_eq!(now, ["o0", "o1", "o2", "o3", "o9"], "{}", k.label());
        // A malformed continue token is the caller's error.
        let e = k
            .list(&ns, page("not a token"))
            .await
            .expect_err("bad token");
        assert_eq!(e.code(), Code::InvalidArgument, "{}: {e:?}", k.label());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_compacted_start_revision_is_expired_for_every_kind() {
    let (cluster, kinds) = both_kinds().await;
    for mut k in kinds {
        let ns = format!("x-{}", k.label().to_lowercase());
        let old = k.create(&ns, "a", &[]).await.rv;
        k.create(&ns, "b", &[]).await;
        let latest = k.create(&ns, "c", &[]).await.rv;
        let mut etcd = cluster.etcd.client().await;
        etcd.compact(latest.parse::<i64>().expect("rv"), None)
            .await
            .expect("compact");
        let mut w = k.watch(&ns, from(&old)).await.expect("watch call");
        let e = next(&mut w, SEC).await.expect_err("expired");
        assert_eq!(
            (e.code(), reason(&e).as_str()),
            (Code::OutOfRange, "Expired"),
            "{}",
            k.label()
        );
        assert!(
            e.message().contains("too old resource version"),
            "{}: {}",
            k.label(),
            e.message()
        );
    }
}
