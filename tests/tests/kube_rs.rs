//! kube-rs (`kube` 5 with `k8s-openapi`) against the REST API (rest-api.md §11 case 15): a
//! typed `Api<ConfigMap>` (create, get, list by label, merge and strategic patches, replace at
//! a stale resourceVersion, delete, and upstream's errors as `Status`), discovery
//! (`Discovery::run` over the legacy documents, `run_aggregated` over aggregated v2, both
//! finding a custom kind), and `watcher` with its two initial-list strategies, ListWatch
//! (paged list, then a watch with bookmarks) and `streaming_lists()` (WatchList), and a
//! metadata-only watcher (PartialObjectMetadata lists), whose list and watch events are seen
//! over raw REST to carry metadata only.

use std::{collections::BTreeMap, time::Duration};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Api, Client, ResourceExt,
    api::{DeleteParams, ListParams, Patch, PatchParams, PostParams},
    core::PartialObjectMeta,
    discovery::Discovery,
    runtime::watcher::{self, Event},
};
use kubestore_tests::{
    kube::KubeCluster,
    rest::{CMS, call, dechunk, find, lines, request},
};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn client(c: &KubeCluster) -> Client {
    let config = kube::Config::new(c.url().parse().expect("cluster URL"));
    Client::try_from(config).expect("client")
}

fn cm(name: &str, data: &[(&str, &str)]) -> ConfigMap {
    let mut m = ConfigMap::default();
    m.metadata.name = Some(name.into());
    m.data = Some(
        data.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    );
    m
}

fn status(e: kube::Error) -> Box<kube::core::Status> {
    match e {
        kube::Error::Api(s) => s,
        other => panic!("a Status expected, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_typed_api_creates_gets_patches_and_deletes() {
    let c = KubeCluster::start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client(&c));
    let mut made = cm("settings", &[("color", "red")]);
    made.metadata.labels = Some(BTreeMap::from([("app".into(), "web".into())]));
    let created = api
        .create(&PostParams::default(), &made)
        .await
        .expect("create");
    assert_eq!(created.namespace().as_deref(), Some("default"));
    assert!(created.uid().is_some() && created.resource_version().is_some());
    let e = status(
        api.create(&PostParams::default(), &made)
            .await
            .expect_err("twice"),
    );
    assert!(e.is_already_exists(), "{e:?}");
    assert_eq!(e.message, "configmaps \"settings\" already exists");

    let got = api.get("settings").await.expect("get");
    assert_eq!(
        got.data
            .as_ref()
            .and_then(|d| d.get("color"))
            .map(String::as_str),
        Some("red")
    );
    let e = status(api.get("nosuch").await.expect_err("missing"));
    assert!(e.is_not_found(), "{e:?}");
    assert_eq!(e.message, "configmaps \"nosuch\" not found");
    assert!(api.get_opt("nosuch").await.expect("get_opt").is_none());

    let listed = api
        .list(&ListParams::default().labels("app=web"))
        .await
        .expect("list");
    assert_eq!(listed.items.len(), 1);
    assert!(listed.metadata.resource_version.is_some());

    let patched = api
        .patch(
            "settings",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"data": {"size": "L"}})),
        )
        .await
        .expect("merge patch");
    assert_eq!(patched.data.as_ref().map(|d| d.len()), Some(2));
    let patched = api
        .patch(
            "settings",
            &PatchParams::default(),
            &Patch::Strategic(serde_json::json!({"metadata": {"finalizers": ["example.com/a"]}})),
        )
        .await
        .expect("strategic patch");
    assert_eq!(patched.finalizers(), ["example.com/a"]);

    // Replace at the version read before the patches: Conflict.
    let mut stale = got.clone();
    stale.data = Some(BTreeMap::from([("color".into(), "blue".into())]));
    let e = status(
        api.replace("settings", &PostParams::default(), &stale)
            .await
            .expect_err("stale"),
    );
    assert!(e.is_conflict(), "{e:?}");
    let mut fresh = patched.clone();
    fresh.metadata.finalizers = None;
    let replaced = api
        .replace("settings", &PostParams::default(), &fresh)
        .await
        .expect("replace");
    assert!(replaced.finalizers().is_empty());

    let deleted = api
        .delete("settings", &DeleteParams::default())
        .await
        .expect("delete");
    let s = deleted
        .right()
        .expect("a ConfigMap delete answers a Status");
    assert!(s.is_success(), "{s:?}");
    assert!(api.get_opt("settings").await.expect("get_opt").is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn discovery_legacy_and_aggregated_find_built_in_and_custom_kinds() {
    let c = KubeCluster::start().await;
    c.crontab_crd();
    for aggregated in [false, true] {
        let d = Discovery::new(client(&c));
        let d = if aggregated {
            d.run_aggregated().await
        } else {
            d.run().await
        }
        .expect("discovery");
        let core = d.get("").expect("the core group");
        let kinds: Vec<String> = core
            .recommended_resources()
            .into_iter()
            .map(|(r, _)| r.kind)
            .collect();
        for k in ["ConfigMap", "Event", "Pod", "Secret"] {
            assert!(
                kinds.iter().any(|x| x == k),
                "aggregated={aggregated}: {kinds:?}"
            );
        }
        let (ar, caps) = d
            .resolve_gvk(&kube::api::GroupVersionKind::gvk(
                "stable.example.com",
                "v1",
                "CronTab",
            ))
            .expect("CronTab discovered");
        assert_eq!(ar.plural, "crontabs");
        assert_eq!(caps.scope, kube::discovery::Scope::Namespaced);
        assert!(d.has_group("coordination.k8s.io"));
        assert!(d.has_group("apiextensions.k8s.io"));
    }
}

/// The next event that is not a bookmark-driven re-init, within 30 s.
async fn next<S, K>(w: &mut S) -> Event<K>
where
    S: futures::Stream<Item = Result<Event<K>, watcher::Error>> + Unpin,
{
    tokio::time::timeout(Duration::from_secs(30), w.try_next())
        .await
        .expect("an event in time")
        .expect("no watcher error")
        .expect("the stream goes on")
}

#[tokio::test(flavor = "multi_thread")]
async fn watchers_list_then_watch_and_stream_lists() {
    let c = KubeCluster::start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client(&c));
    for n in ["a", "b", "c"] {
        api.create(&PostParams::default(), &cm(n, &[("k", "v")]))
            .await
            .expect("create");
    }
    for streaming in [false, true] {
        let config = watcher::Config::default().page_size(2);
        let config = if streaming {
            config.streaming_lists()
        } else {
            config
        };
        let mut w = watcher::watcher(api.clone(), config).boxed();
        assert!(
            matches!(next(&mut w).await, Event::Init),
            "streaming={streaming}"
        );
        let mut initial = Vec::new();
        loop {
            match next(&mut w).await {
                Event::InitApply(o) => initial.push(o.name_any()),
                Event::InitDone => break,
                other => panic!("streaming={streaming}: {other:?} during the initial list"),
            }
        }
        initial.sort();
        // Exactly the objects there are (the previous round's object was deleted), each once.
        assert_eq!(initial, ["a", "b", "c"], "streaming={streaming}");
        // Changes after the initial list.
        let name = format!("new-{streaming}");
        api.create(&PostParams::default(), &cm(&name, &[]))
            .await
            .expect("create");
        match next(&mut w).await {
            Event::Apply(o) => assert_eq!(o.name_any(), name),
            other => panic!("streaming={streaming}: {other:?}"),
        }
        api.delete(&name, &DeleteParams::default())
            .await
            .expect("delete");
        match next(&mut w).await {
            Event::Delete(o) => assert_eq!(o.name_any(), name),
            other => panic!("streaming={streaming}: {other:?}"),
        }
    }
}

/// `Accept: application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1` (and
/// `as=PartialObjectMetadata` on a get or a watch): a `PartialObjectMetadataList` and watch
/// events carrying PartialObjectMetadata objects, as upstream's `transformResponseObject`;
/// kube-rs's metadata-only watcher and client-go's metadata informers depend on it.
#[tokio::test(flavor = "multi_thread")]
async fn a_metadata_watcher_lists_and_watches_partial_objects() {
    let c = KubeCluster::start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client(&c));
    for n in ["a", "b", "c"] {
        api.create(&PostParams::default(), &cm(n, &[("k", "v")]))
            .await
            .expect("create");
    }
    let meta: Api<PartialObjectMeta<ConfigMap>> = Api::default_namespaced(client(&c));
    let mut w = watcher::watcher(meta, watcher::Config::default()).boxed();
    assert!(matches!(next(&mut w).await, Event::Init));
    let mut names = Vec::new();
    loop {
        match next(&mut w).await {
            Event::InitApply(o) => names.push(o.name_any()),
            Event::InitDone => break,
            other => panic!("{other:?} during the initial list"),
        }
    }
    names.sort();
    assert_eq!(names, ["a", "b", "c"]);
    api.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({"metadata": {"labels": {"x": "y"}}})),
    )
    .await
    .expect("patch");
    match next(&mut w).await {
        Event::Apply(o) => {
            assert_eq!(o.labels().get("x").map(String::as_str), Some("y"));
            assert_eq!(
                o.types.as_ref().map(|t| t.kind.as_str()),
                Some("PartialObjectMetadata"),
                "{o:?}"
            );
        }
        other => panic!("{other:?}"),
    }
}

/// What the metadata watcher above asks for, over raw REST: the list is a
/// `PartialObjectMetadataList` of `PartialObjectMetadata` items, and watch events carry
/// `PartialObjectMetadata`; neither carries the objects' `data`.
#[tokio::test(flavor = "multi_thread")]
async fn metadata_lists_and_watch_events_carry_no_content_over_rest() {
    let c = KubeCluster::start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client(&c));
    for n in ["a", "b"] {
        api.create(&PostParams::default(), &cm(n, &[("k", "v")]))
            .await
            .expect("create");
    }
    let partial = |object: &Value| {
        assert_eq!(
            (&object["apiVersion"], &object["kind"]),
            (&json!("meta.k8s.io/v1"), &json!("PartialObjectMetadata")),
            "{object}"
        );
        assert!(object["metadata"]["name"].is_string(), "{object}");
        assert!(
            object["metadata"]["resourceVersion"].is_string(),
            "{object}"
        );
        let mut keys: Vec<&String> = object.as_object().expect("an object").keys().collect();
        keys.sort();
        assert_eq!(
            keys,
            ["apiVersion", "kind", "metadata"],
            "no content: {object}"
        );
    };
    let accept = |as_kind: &str| format!("application/json;as={as_kind};g=meta.k8s.io;v=v1");
    let list = call(
        c.api,
        "GET",
        CMS,
        &[("Accept", &accept("PartialObjectMetadataList"))],
        b"",
    )
    .await
    .is(200)
    .json();
    assert_eq!(
        (&list["apiVersion"], &list["kind"]),
        (
            &json!("meta.k8s.io/v1"),
            &json!("PartialObjectMetadataList")
        ),
        "{list}"
    );
    let items = list["items"].as_array().expect("items");
    assert_eq!(items.len(), 2, "{list}");
    items.iter().for_each(partial);
    // A watch from the list's version: the change, as PartialObjectMetadata.
    let rv = list["metadata"]["resourceVersion"]
        .as_str()
        .expect("a version");
    let mut s = tokio::net::TcpStream::connect(c.api)
        .await
        .expect("connect");
    let path = format!("{CMS}?watch=1&resourceVersion={rv}");
    let req = request(
        "GET",
        &path,
        &[("Accept", &accept("PartialObjectMetadata"))],
        b"",
    );
    s.write_all(&req).await.expect("write");
    api.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"x": "y"}}, "data": {"k2": "v2"}})),
    )
    .await
    .expect("patch");
    let mut raw = Vec::new();
    let mut buf = vec![0u8; 16 << 10];
    let event = loop {
        if let Some(end) = find(&raw, b"\r\n\r\n") {
            let (body, _) = dechunk(&raw[end + 4..]);
            if let Some(line) = lines_so_far(&body).into_iter().next() {
                break line;
            }
        }
        let n = tokio::time::timeout(Duration::from_secs(10), s.read(&mut buf))
            .await
            .expect("an event in time")
            .expect("read");
        assert!(n > 0, "the watch ended: {}", String::from_utf8_lossy(&raw));
        raw.extend_from_slice(&buf[..n]);
    };
    assert_eq!(event["type"], "MODIFIED", "{event}");
    partial(&event["object"]);
    assert_eq!(event["object"]["metadata"]["labels"]["x"], "y", "{event}");
}

/// The whole lines of `body` so far, as JSON.
fn lines_so_far(body: &[u8]) -> Vec<Value> {
    let whole = body
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(&body[..0], |end| &body[..end]);
    lines(whole)
}

/// kube-rs' `finalizer()` helper in a small reconcile loop (issue 31, point 3): for an object
/// without finalizers it sends a JSON patch whose first operation is `test` of
/// `/metadata/finalizers` against `null` (upstream's json-patch passes it when the member is
/// absent; registry-svc refused it, "path is invalid", and the helper retried for ever); the
/// finalizer is added, the object's deletion runs the cleanup, and the finalizer's removal
/// lets the object go.
#[tokio::test(flavor = "multi_thread")]
async fn the_finalizer_helper_adds_runs_cleanup_and_removes_its_finalizer() {
    use std::sync::{Arc, Mutex};

    use kube::runtime::{
        controller::Action,
        finalizer::{Event as Finalizer, finalizer},
    };

    const NAME: &str = "kubestore.example.com/cleanup";
    let c = KubeCluster::start().await;
    let api: Api<ConfigMap> = Api::default_namespaced(client(&c));
    api.create(&PostParams::default(), &cm("guarded", &[("k", "v")]))
        .await
        .expect("create");
    let seen = Arc::new(Mutex::new(Vec::<&'static str>::new()));
    // One reconcile: the helper's work for the object as it is now.
    let reconcile = || {
        let (api, seen) = (api.clone(), seen.clone());
        async move {
            let obj = Arc::new(api.get("guarded").await.expect("get"));
            finalizer(&api, NAME, obj, |event| async move {
                seen.lock().expect("lock").push(match event {
                    Finalizer::Apply(_) => "apply",
                    Finalizer::Cleanup(_) => "cleanup",
                });
                Ok::<_, std::convert::Infallible>(Action::await_change())
            })
            .await
        }
    };
    // First pass: the finalizer is added (the `test` of null, then `add`).
    reconcile().await.expect("the finalizer is added");
    let got = api.get("guarded").await.expect("get");
    assert_eq!(got.finalizers(), [NAME.to_string()]);
    // Second pass: applied.
    reconcile().await.expect("applied");
    // Deleted: held by the finalizer until cleanup removes it.
    api.delete("guarded", &DeleteParams::default())
        .await
        .expect("delete");
    assert!(
        api.get("guarded")
            .await
            .expect("still there")
            .metadata
            .deletion_timestamp
            .is_some()
    );
    reconcile().await.expect("cleaned up");
    assert!(
        api.get_opt("guarded").await.expect("get").is_none(),
        "the object went once its finalizer did"
    );
    assert_eq!(*seen.lock().expect("lock"), ["apply", "cleanup"]);
}
