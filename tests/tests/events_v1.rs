//! `events.k8s.io/v1` Events, the second version of core `v1` Events (issue 31, point 6): kube-rs'
//! event `Recorder` (a POST, then merge patches of the whole event with its series), client-go's
//! repeat (a strategic merge patch of the series only), each version reading what the other
//! wrote as upstream converts it, upstream's validation of this version's writes, its field
//! labels, watches of both versions, and kubectl's tables of both.

use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::{core::v1 as core, events::v1 as events};
use kube::{
    Api, Client, Resource, ResourceExt,
    api::{ListParams, PostParams},
    runtime::{
        events::{Event, EventType, Recorder, Reporter},
        watcher,
    },
};
use kubestore_tests::{
    kube::{KubeCluster, Kubectl},
    rest::{JSON, assert_status, call, get},
};
use serde_json::{Value, json};

fn client(c: &KubeCluster) -> Client {
    let config = kube::Config::new(c.url().parse().expect("cluster URL"));
    Client::try_from(config).expect("client")
}

const V1: &str = "/apis/events.k8s.io/v1/namespaces/default/events";
const CORE: &str = "/api/v1/namespaces/default/events";

/// A ConfigMap `settings` in `default`, what the events here are about.
async fn settings(client: &Client) -> core::ConfigMap {
    let cm = core::ConfigMap {
        metadata: kube::api::ObjectMeta {
            name: Some("settings".into()),
            ..Default::default()
        },
        ..Default::default()
    };
    Api::<core::ConfigMap>::default_namespaced(client.clone())
        .create(&PostParams::default(), &cm)
        .await
        .expect("create the ConfigMap")
}

fn reporter() -> Reporter {
    Reporter {
        controller: "kubestore.io/test".into(),
        instance: Some("t-1".into()),
    }
}

fn synced() -> Event {
    Event {
        type_: EventType::Normal,
        reason: "Synced".into(),
        note: Some("settings are in sync".into()),
        action: "Reconcile".into(),
        secondary: None,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn kube_rs_recorder_publishes_and_repeats_an_event_both_versions_read() {
    let c = KubeCluster::start().await;
    let client = client(&c);
    let cm = settings(&client).await;
    let recorder = Recorder::new(client.clone(), reporter());
    // The first publish POSTs; the next two merge-patch the whole event with its series.
    for _ in 0..3 {
        recorder
            .publish(&synced(), &cm.object_ref(&()))
            .await
            .expect("publish");
    }
    let v1: Api<events::Event> = Api::default_namespaced(client.clone());
    let found = v1
        .list(&ListParams::default().fields("regarding.name=settings"))
        .await
        .expect("list by regarding.name");
    assert_eq!(found.items.len(), 1, "{:?}", found.items);
    let e = &found.items[0];
    assert_eq!(e.series.as_ref().map(|s| s.count), Some(3), "{e:?}");
    assert_eq!(e.note.as_deref(), Some("settings are in sync"));
    assert_eq!(e.action.as_deref(), Some("Reconcile"));
    assert_eq!(e.reporting_controller.as_deref(), Some("kubestore.io/test"));
    assert_eq!(e.reporting_instance.as_deref(), Some("t-1"));
    assert!(e.event_time.is_some(), "{e:?}");
    // Upstream writes an empty deprecatedSource (`{}`), and no deprecatedCount.
    assert!(e.deprecated_count.is_none(), "{e:?}");
    assert!(
        e.deprecated_source
            .as_ref()
            .is_none_or(|s| s.component.is_none() && s.host.is_none()),
        "{e:?}"
    );
    let regarding = e.regarding.as_ref().expect("regarding");
    assert_eq!(regarding.name.as_deref(), Some("settings"));
    assert_eq!(regarding.uid, cm.uid());

    // The same object through core v1, in core's names.
    let name = e.name_any();
    let old: Api<core::Event> = Api::default_namespaced(client.clone());
    let same = old.get(&name).await.expect("core get");
    assert_eq!(same.message.as_deref(), Some("settings are in sync"));
    assert_eq!(same.involved_object.name.as_deref(), Some("settings"));
    assert_eq!(
        same.reporting_component.as_deref(),
        Some("kubestore.io/test")
    );
    assert_eq!(same.series.as_ref().map(|s| s.count), Some(Some(3)));
    assert!(same.count.is_none(), "{same:?}");
    assert_eq!(same.resource_version(), e.resource_version());
    // Core's field labels find it too, and events.k8s.io's own.
    for (api_path, selector) in [
        (CORE, "involvedObject.name=settings"),
        (CORE, "reportingComponent=kubestore.io/test"),
        (V1, "reportingController=kubestore.io/test"),
        (V1, "regarding.kind=ConfigMap,reason=Synced"),
    ] {
        let r = get(c.api, &format!("{api_path}?fieldSelector={selector}"))
            .await
            .is(200)
            .json();
        assert_eq!(
            r["items"].as_array().map(Vec::len),
            Some(1),
            "{selector}: {r}"
        );
    }
    // A core name is not a label of events.k8s.io, as upstream.
    let r = get(
        c.api,
        &format!("{V1}?fieldSelector=involvedObject.name=settings"),
    )
    .await;
    let s = assert_status(&r, 400, "BadRequest");
    assert!(
        s["message"]
            .as_str()
            .is_some_and(|m| m.contains("field label not supported: involvedObject.name")),
        "{r}"
    );

    // An event about a cluster-scoped object is written in `default`.
    let ns = Api::<core::Namespace>::all(client.clone())
        .get("default")
        .await
        .expect("namespace");
    recorder
        .publish(&synced(), &ns.object_ref(&()))
        .await
        .expect("publish about a namespace");
    let about = v1
        .list(&ListParams::default().fields("regarding.kind=Namespace"))
        .await
        .expect("list");
    assert_eq!(about.items.len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn writes_in_this_version_are_judged_as_upstream_judges_them() {
    let c = KubeCluster::start().await;
    let event = |name: &str| {
        json!({
            "apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": name},
            "eventTime": "2026-01-02T03:04:05.123456Z",
            "reportingController": "kubestore.io/test", "reportingInstance": "t-1",
            "action": "Reconcile", "reason": "Synced", "note": "fine", "type": "Normal",
            "regarding": {"kind": "ConfigMap", "name": "settings", "namespace": "default",
                          "apiVersion": "v1"},
        })
    };
    let post = |body: Value, query: &'static str| {
        let api = c.api;
        async move {
            call(
                api,
                "POST",
                &format!("{V1}{query}"),
                &[JSON],
                body.to_string().as_bytes(),
            )
            .await
        }
    };
    // Each rule of upstream's ValidateEventCreate, in its words and core's field paths.
    for (change, says) in [
        (
            json!({"note": "x".repeat(1025)}),
            "message: Invalid value: \"\": can have at most 1024 characters",
        ),
        (
            json!({"reportingController": "bad name!"}),
            "reportingController: Invalid value: \"bad name!\"",
        ),
        (json!({"eventTime": null}), "eventTime: Required value"),
        (
            json!({"type": "Odd"}),
            "type: Invalid value: \"\": has invalid value: Odd",
        ),
        (
            json!({"deprecatedCount": 2}),
            "count: Invalid value: \"\": needs to be unset",
        ),
        (
            json!({"series": {"count": 1, "lastObservedTime": "2026-01-02T03:04:06.000000Z"}}),
            "series.count: Invalid value: \"\": should be at least 2",
        ),
    ] {
        let mut body = event("bad");
        for (k, v) in change.as_object().expect("an object") {
            body[k] = v.clone();
        }
        let r = post(body, "").await;
        let s = assert_status(&r, 422, "Invalid");
        assert!(
            s["message"].as_str().is_some_and(|m| m.contains(says)),
            "{change}: {r}"
        );
    }
    get(c.api, &format!("{V1}/bad")).await.is(404);
    // Core's names are unknown fields here: refused when strict, warned about by default.
    let mut body = event("strict");
    body["message"] = json!("core's name");
    let r = post(body.clone(), "?fieldValidation=Strict").await;
    let s = assert_status(&r, 400, "BadRequest");
    assert!(
        s["message"]
            .as_str()
            .is_some_and(|m| m.contains("unknown field \"message\"")),
        "{r}"
    );
    let r = post(body, "").await.is(201);
    assert!(
        r.headers("warning")
            .iter()
            .any(|w| w.contains(r#"unknown field \"message\""#)),
        "{r}"
    );

    let created = post(event("repeat"), "").await.is(201).json();
    assert_eq!(created["apiVersion"], "events.k8s.io/v1");
    // Upstream writes these even when empty.
    assert_eq!(created["deprecatedSource"], json!({}), "{created}");
    assert_eq!(
        created["deprecatedFirstTimestamp"],
        Value::Null,
        "{created}"
    );
    assert!(created.get("deprecatedCount").is_none(), "{created}");
    // client-go's repeat: a strategic merge patch of the series alone.
    let series = json!({"series": {"count": 2, "lastObservedTime": "2026-01-02T03:05:00.000001Z"}});
    let smp = ("Content-Type", "application/strategic-merge-patch+json");
    let r = call(
        c.api,
        "PATCH",
        &format!("{V1}/repeat"),
        &[smp],
        series.to_string().as_bytes(),
    )
    .await
    .is(200)
    .json();
    assert_eq!(r["series"]["count"], 2, "{r}");
    assert_eq!(
        r["series"]["lastObservedTime"],
        "2026-01-02T03:05:00.000001Z"
    );
    // Only the series may change through this version; core's rules let the note change.
    let change = json!({"note": "changed"});
    let merge = ("Content-Type", "application/merge-patch+json");
    let r = call(
        c.api,
        "PATCH",
        &format!("{V1}/repeat"),
        &[merge],
        change.to_string().as_bytes(),
    )
    .await;
    let s = assert_status(&r, 422, "Invalid");
    assert!(
        s["message"]
            .as_str()
            .is_some_and(|m| m.contains("message: Invalid value: field is immutable")),
        "{r}"
    );
    let change = json!({"message": "changed"});
    call(
        c.api,
        "PATCH",
        &format!("{CORE}/repeat"),
        &[merge],
        change.to_string().as_bytes(),
    )
    .await
    .is(200);
    let read = get(c.api, &format!("{V1}/repeat")).await.is(200).json();
    assert_eq!(read["note"], "changed", "{read}");
    // A patch of a missing event names the qualified resource, as upstream.
    let r = call(
        c.api,
        "PATCH",
        &format!("{V1}/nosuch"),
        &[smp],
        series.to_string().as_bytes(),
    )
    .await;
    let s = assert_status(&r, 404, "NotFound");
    assert_eq!(
        s["message"], "events.events.k8s.io \"nosuch\" not found",
        "{r}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn core_events_read_in_this_version_and_watches_of_both_see_each_write() {
    let c = KubeCluster::start().await;
    let client = client(&c);
    let v1: Api<events::Event> = Api::default_namespaced(client.clone());
    let old: Api<core::Event> = Api::default_namespaced(client.clone());
    let mut w1 = watcher(v1.clone(), watcher::Config::default()).boxed();
    let mut w0 = watcher(old.clone(), watcher::Config::default()).boxed();
    // Each watcher's initial (empty) list first.
    while !matches!(next(&mut w1).await, watcher::Event::InitDone) {}
    while !matches!(next(&mut w0).await, watcher::Event::InitDone) {}

    // An event as a kubelet writes it through core v1.
    let body = json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": "web.backoff"},
        "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": "web",
                           "namespace": "default", "fieldPath": "spec.containers{c}"},
        "reason": "BackOff", "message": "Back-off restarting failed container", "type": "Warning",
        "count": 3,
        "firstTimestamp": "2026-01-02T03:04:05Z", "lastTimestamp": "2026-01-02T03:09:05Z",
        "source": {"component": "kubelet", "host": "node-1"},
    });
    call(c.api, "POST", CORE, &[JSON], body.to_string().as_bytes())
        .await
        .is(201);
    let read = get(c.api, &format!("{V1}/web.backoff"))
        .await
        .is(200)
        .json();
    assert_eq!(read["apiVersion"], "events.k8s.io/v1");
    assert_eq!(
        read["note"], "Back-off restarting failed container",
        "{read}"
    );
    assert_eq!(read["regarding"]["fieldPath"], "spec.containers{c}");
    assert_eq!(
        read["deprecatedSource"],
        json!({"component": "kubelet", "host": "node-1"})
    );
    assert_eq!(read["deprecatedCount"], 3);
    assert_eq!(read["deprecatedFirstTimestamp"], "2026-01-02T03:04:05Z");
    assert_eq!(read["deprecatedLastTimestamp"], "2026-01-02T03:09:05Z");
    assert_eq!(read["eventTime"], Value::Null);
    match next(&mut w1).await {
        watcher::Event::Apply(e) => {
            assert_eq!(
                e.note.as_deref(),
                Some("Back-off restarting failed container")
            );
            assert_eq!(e.deprecated_count, Some(3));
        }
        other => panic!("an Apply expected, got {other:?}"),
    }
    match next(&mut w0).await {
        watcher::Event::Apply(e) => assert_eq!(e.count, Some(3)),
        other => panic!("an Apply expected, got {other:?}"),
    }
    // Written through this version, seen by core's watch in core's names.
    let recorder = Recorder::new(client.clone(), reporter());
    let cm = settings(&client).await;
    recorder
        .publish(&synced(), &cm.object_ref(&()))
        .await
        .expect("publish");
    match next(&mut w0).await {
        watcher::Event::Apply(e) => {
            assert_eq!(e.message.as_deref(), Some("settings are in sync"));
            assert_eq!(e.reporting_component.as_deref(), Some("kubestore.io/test"));
        }
        other => panic!("an Apply expected, got {other:?}"),
    }
    match next(&mut w1).await {
        watcher::Event::Apply(e) => assert_eq!(e.note.as_deref(), Some("settings are in sync")),
        other => panic!("an Apply expected, got {other:?}"),
    }

    // kubectl prints the same rows for both, the recorder's SOURCE as upstream formats it.
    for v in [Kubectl::V1_33, Kubectl::V1_37] {
        let core_rows = c
            .kubectl(v, &["get", "events", "-o", "wide", "--no-headers"])
            .run()
            .ok();
        let v1_rows = c
            .kubectl(
                v,
                &["get", "events.events.k8s.io", "-o", "wide", "--no-headers"],
            )
            .run()
            .ok();
        let names = |out: &str| -> Vec<String> {
            let mut n: Vec<String> = out
                .lines()
                .filter_map(|l| l.split_whitespace().last().map(str::to_string))
                .collect();
            n.sort();
            n
        };
        assert_eq!(names(core_rows.out()), names(v1_rows.out()), "{v1_rows}");
        assert_eq!(names(v1_rows.out()).len(), 2, "{v1_rows}");
        assert!(
            v1_rows.out().contains("kubestore.io/test, t-1"),
            "{v1_rows}"
        );
    }
}

async fn next<S, K>(w: &mut S) -> watcher::Event<K>
where
    S: futures::Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Unpin,
{
    tokio::time::timeout(Duration::from_secs(20), w.next())
        .await
        .expect("a watch event within 20 s")
        .expect("the stream goes on")
        .expect("no watch error")
}
