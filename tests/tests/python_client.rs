//! The official Python client (`kubernetes` 37.0.2, strict pydantic models) against the REST
//! API (rest-api.md §11 case 14): typed lists of every built-in kind decode without a
//! ValidationError (pods the node agent runs, its events, a controller-manager's lease, the
//! system namespaces, a custom resource definition); a watch from a list's resourceVersion with bookmarks sees
//! ADDED, MODIFIED and DELETED; an expired resourceVersion is `ApiException(410)` for a list
//! and for a watch; the `kubernetes.informer` cache converges.
//!
//! Each script asserts as it goes and prints what it saw; a failing script fails the test
//! with its output.

use std::time::Duration;

use kubestore_tests::{
    ClusterOptions,
    kube::{KubeCluster, crontab_yaml, eventually, pod_yaml},
};

/// Every kind, typed.
const DECODE: &str = r#"
from kubernetes import client, config
config.load_kube_config()
v1 = client.CoreV1Api()
pods = v1.list_namespaced_pod("default")
for p in pods.items:
    assert isinstance(p.spec.termination_grace_period_seconds, int), p
    print("pod", p.metadata.name, p.status.phase, p.status.qos_class, p.spec.containers[0].resources.requests)
print("one", v1.read_namespaced_pod("web", "default").metadata.name)
for e in v1.list_namespaced_event("default").items:
    print("event", e.involved_object.kind, e.involved_object.name, e.reason, e.type, e.count)
for cm in v1.list_namespaced_config_map("default").items:
    print("configmap", cm.metadata.name, cm.data)
for s in v1.list_namespaced_secret("default").items:
    print("secret", s.metadata.name, s.type, s.data)
for l in client.CoordinationV1Api().list_lease_for_all_namespaces().items:
    print("lease", l.metadata.namespace, l.metadata.name, isinstance(l.spec.lease_duration_seconds, int))
for n in v1.list_namespace().items:
    print("namespace", n.metadata.name, n.status.phase, n.spec.finalizers, n.metadata.labels["kubernetes.io/metadata.name"])
print("one namespace", v1.read_namespace("kube-system").metadata.name)
for d in client.ApiextensionsV1Api().list_custom_resource_definition().items:
    print("crd", d.metadata.name, sorted(c.type for c in d.status.conditions))
ct = client.CustomObjectsApi().list_namespaced_custom_object("stable.example.com", "v1", "default", "crontabs")
print("crontabs", [o["metadata"]["name"] for o in ct["items"]])
print("done")
"#;

#[tokio::test(flavor = "multi_thread")]
async fn every_kind_decodes_into_the_typed_models() {
    let c = KubeCluster::start().await;
    let _agent = c.agent("node-1", Duration::from_secs(1));
    let _gc = c.controller_manager().await;
    c.create("web.yaml", &pod_yaml("web", "node-1", &[("app", "web")]))
        .ok();
    c.k(&["create", "configmap", "settings", "--from-literal=a=b"])
        .run()
        .ok();
    c.k(&["create", "secret", "generic", "pw", "--from-literal=p=q"])
        .run()
        .ok();
    c.crontab_crd();
    c.create("ct.yaml", &crontab_yaml("nightly", "0 0 * * *", 2))
        .ok();
    eventually(Duration::from_secs(60), "the agent's Started event", || {
        c.k(&[
            "get",
            "events",
            "-o",
            "name",
            "--field-selector",
            "reason=Started",
        ])
        .run()
        .out()
        .contains("event/")
    });
    let r = c.python(DECODE, &[]).run().ok();
    let out = r.out();
    for line in [
        "pod web Running Burstable {'cpu': '100m'}",
        "one web",
        "event Pod web Scheduled Normal 1",
        "event Pod web Started Normal 1",
        "configmap settings {'a': 'b'}",
        "secret pw Opaque {'p': 'cQ=='}",
        "lease kube-system kube-controller-manager True",
        "namespace default Active ['kubernetes'] default",
        "namespace kube-public Active ['kubernetes'] kube-public",
        "namespace kube-system Active ['kubernetes'] kube-system",
        "one namespace kube-system",
        "crd crontabs.stable.example.com ['Established', 'NamesAccepted']",
        "crontabs ['nightly']",
        "done",
    ] {
        assert!(out.lines().any(|l| l == line), "no {line:?}:{r}");
    }
}

/// Lists, then watches from the list's version while making changes of its own.
const WATCH: &str = r#"
from kubernetes import client, config, watch
config.load_kube_config()
v1 = client.CoreV1Api()
listed = v1.list_namespaced_pod("default")
print("listed", [p.metadata.name for p in listed.items])
rv = listed.metadata.resource_version
v1.create_namespaced_pod("default", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "w1"},
    "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
v1.patch_namespaced_pod("w1", "default", {"metadata": {"labels": {"color": "blue"}}})
gone = v1.delete_namespaced_pod("w1", "default", grace_period_seconds=0)
print("delete answered", type(gone).__name__, gone.metadata.name)
w = watch.Watch()
seen = []
newest = int(rv)
for ev in w.stream(v1.list_namespaced_pod, "default", resource_version=rv,
                   allow_watch_bookmarks=True, timeout_seconds=20):
    if ev["type"] == "BOOKMARK":
        seen.append("BOOKMARK")
        at = ev["raw_object"]["metadata"]["resourceVersion"]
        # A bookmark's version: at least every event's before it, and where the client resumes.
        print("bookmark", ev["raw_object"]["kind"], ev["raw_object"]["apiVersion"],
              int(at) >= newest, w.resource_version == at)
    else:
        o = ev["object"]
        newest = max(newest, int(o.metadata.resource_version))
        seen.append(ev["type"])
        print("event", ev["type"], o.metadata.name, (o.metadata.labels or {}).get("color"), o.metadata.deletion_timestamp is not None)
    if "DELETED" in seen and "BOOKMARK" in seen:
        w.stop()
print("seen", seen[0], "BOOKMARK" in seen, seen.index("DELETED") > seen.index("ADDED"))
"#;

#[tokio::test(flavor = "multi_thread")]
async fn a_watch_from_a_listed_version_with_bookmarks() {
    let c = KubeCluster::start_with(ClusterOptions {
        storage: Some(storage_svc::Config {
            watch_bookmark_interval: Duration::from_millis(500),
            ..Default::default()
        }),
        ..Default::default()
    })
    .await;
    c.create("web.yaml", &pod_yaml("web", "node-1", &[])).ok();
    let r = c.python(WATCH, &[]).run().ok();
    let lines: Vec<&str> = r.out().lines().collect();
    assert_eq!(lines[0], "listed ['web']", "{r}");
    assert_eq!(lines[1], "delete answered V1Pod w1", "{r}");
    let events: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.starts_with("event "))
        .collect();
    assert_eq!(
        events,
        [
            "event ADDED w1 None False",
            "event MODIFIED w1 blue False",
            "event MODIFIED w1 blue True",
            "event DELETED w1 blue True",
        ],
        "{r}"
    );
    let bookmarks: Vec<&str> = lines
        .iter()
        .copied()
        .filter(|l| l.starts_with("bookmark "))
        .collect();
    assert!(!bookmarks.is_empty(), "{r}");
    assert!(
        bookmarks.iter().all(|b| *b == "bookmark Pod v1 True True"),
        "every bookmark at or past the events before it, and resumed from: {r}"
    );
    assert_eq!(lines.last(), Some(&"seen ADDED True True"), "{r}");
}

/// An expired version: a list at it, a watch from it (no retry with a timeout; one retry
/// without, then the same error).
const EXPIRED: &str = r#"
import sys
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException
config.load_kube_config()
v1 = client.CoreV1Api()
old = sys.argv[1]
try:
    v1.list_namespaced_config_map("default", resource_version=old, resource_version_match="Exact")
    print("list: no error")
except ApiException as e:
    print("list:", e.status, e.reason)
for kw in [{"timeout_seconds": 10}, {}]:
    try:
        for ev in watch.Watch().stream(v1.list_namespaced_config_map, "default", resource_version=old, **kw):
            print("event", ev["type"])
        print("watch: ended")
    except ApiException as e:
        print("watch:", e.status, e.reason.split(":")[0])
"#;

#[tokio::test(flavor = "multi_thread")]
async fn an_expired_resource_version_is_410() {
    let c = KubeCluster::start().await;
    let old = c.compacted_version().await;
    let r = c.python(EXPIRED, &[&old]).run().ok();
    let lines: Vec<&str> = r.out().lines().collect();
    assert_eq!(
        lines,
        ["list: 410 Gone", "watch: 410 Expired", "watch: 410 Expired"],
        "{r}"
    );
}

/// The informer: a list, then a watch, its cache following changes made meanwhile.
const INFORMER: &str = r#"
import time
from kubernetes import client, config
from kubernetes.informer import SharedInformer, ADDED, MODIFIED, DELETED
config.load_kube_config()
v1 = client.CoreV1Api()
inf = SharedInformer(v1.list_namespaced_config_map, namespace="default")
events = []
for t in (ADDED, MODIFIED, DELETED):
    inf.add_event_handler(t, lambda o, t=t: events.append((t, o.metadata.name)))
inf.start()
def wait(cond, what):
    until = time.time() + 30
    while not cond():
        if time.time() > until:
            raise SystemExit("informer never saw " + what + ": " + repr(events))
        time.sleep(0.05)
wait(lambda: ("ADDED", "before") in events, "the listed object")
v1.create_namespaced_config_map("default", {"metadata": {"name": "after"}, "data": {"x": "1"}})
v1.patch_namespaced_config_map("after", "default", {"data": {"x": "2"}})
v1.delete_namespaced_config_map("before", "default")
wait(lambda: ("DELETED", "before") in events and ("MODIFIED", "after") in events, "the changes")
wait(lambda: [o.data for o in inf.cache.list()] == [{"x": "2"}], "the cache converge")
print("cache", sorted(o.metadata.name for o in inf.cache.list()))
inf.stop()
print("events", events)
"#;

#[tokio::test(flavor = "multi_thread")]
async fn the_informer_cache_converges() {
    let c = KubeCluster::start().await;
    c.k(&["create", "configmap", "before"]).run().ok();
    let r = c.python(INFORMER, &[]).run().ok();
    let lines: Vec<&str> = r.out().lines().collect();
    assert_eq!(lines[0], "cache ['after']", "{r}");
    assert_eq!(
        lines[1],
        "events [('ADDED', 'before'), ('ADDED', 'after'), ('MODIFIED', 'after'), ('DELETED', 'before')]",
        "{r}"
    );
}
