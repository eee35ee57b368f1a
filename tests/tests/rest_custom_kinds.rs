//! Custom kinds over the REST API, spoken by hand (what kubectl and client-go do in a few
//! requests each):
//!
//! - a definition POSTed, then its objects created the moment it reads `Established`, with no
//!   retry (a client of upstream's waits for the condition and no more);
//! - an unserved version of a served kind, or a version of no kind at all, is upstream's `404`
//!   `NotFound` Status for every verb, distinct from a missing object of a served version;
//! - after a schema change drops a field, REST reads (Get, List, Watch) serve the objects pruned
//!   by the current schema.

use std::{
    net::SocketAddr,
    time::{Duration, Instant},
};

use kubestore_tests::{
    kube::KubeCluster,
    rest::{JSON, Reply, assert_status, call, get, lines, open_stream},
    services::wait_system_namespaces,
};
use serde_json::{Value, json};
use tokio::{io::AsyncReadExt, net::TcpStream};

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const WIDGETS: &str = "/apis/example.com/v1/namespaces/default/widgets";

/// `widgets.example.com`, served at v1 (storage) and defined but not served at v2, whose spec
/// has the properties `spec`.
fn definition(spec: Value) -> Value {
    let schema = json!({"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "properties": spec}}}});
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": schema},
                {"name": "v2", "served": false, "storage": false, "schema": schema},
            ],
        },
    })
}

fn established(crd: &Value) -> bool {
    crd["status"]["conditions"].as_array().is_some_and(|c| {
        c.iter()
            .any(|c| c["type"] == "Established" && c["status"] == "True")
    })
}

/// POSTs the definition and waits (10 s at most) until it reads Established: its state then.
async fn register(api: SocketAddr, spec: Value) -> Value {
    let body = definition(spec).to_string();
    call(api, "POST", CRDS, &[JSON], body.as_bytes())
        .await
        .is(201);
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let crd = get(api, &format!("{CRDS}/widgets.example.com"))
            .await
            .is(200)
            .json();
        if established(&crd) {
            return crd;
        }
        assert!(Instant::now() < until, "never established: {crd}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn widget(name: &str, spec: Value) -> Vec<u8> {
    json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}, "spec": spec})
        .to_string()
        .into_bytes()
}

async fn started() -> KubeCluster {
    let kube = KubeCluster::start().await;
    wait_system_namespaces(&kube.registry_url()).await;
    kube
}

#[tokio::test(flavor = "multi_thread")]
async fn objects_are_created_the_moment_their_definition_is_established() {
    let kube = started().await;
    let api = kube.api;
    register(api, json!({"size": {"type": "integer"}})).await;
    // No retry: the first create after Established is served.
    let r = call(
        api,
        "POST",
        WIDGETS,
        &[JSON],
        &widget("w", json!({"size": 1})),
    )
    .await;
    assert_eq!(r.code, 201, "the first create after Established: {r}");
    let list = get(api, WIDGETS).await.is(200).json();
    assert_eq!(list["kind"], "WidgetList", "{list}");
    assert_eq!(list["items"][0]["spec"]["size"], 1, "{list}");
}

/// `reply` is upstream's 404 for a path no served resource has.
#[track_caller]
fn no_such_resource(reply: &Reply) {
    let status = assert_status(reply, 404, "NotFound");
    assert_eq!(
        status["message"], "the server could not find the requested resource",
        "{reply}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unserved_version_is_not_found_for_every_verb() {
    let kube = started().await;
    let api = kube.api;
    register(api, json!({"size": {"type": "integer"}})).await;
    call(api, "POST", WIDGETS, &[JSON], &widget("w", json!({})))
        .await
        .is(201);
    // Served version, missing object: the object's NotFound.
    let r = get(api, &format!("{WIDGETS}/nope")).await;
    let status = assert_status(&r, 404, "NotFound");
    assert_eq!(
        status["message"], "widgets.example.com \"nope\" not found",
        "{r}"
    );
    for version in ["v2", "v3"] {
        let base = format!("/apis/example.com/{version}/namespaces/default/widgets");
        let one = format!("{base}/w");
        let body = widget("w", json!({}));
        let merge = ("Content-Type", "application/merge-patch+json");
        for (method, path, hdrs, body) in [
            ("GET", &base, &[][..], &[][..]),
            ("GET", &one, &[], &[]),
            ("GET", &format!("{base}?watch=1"), &[], &[]),
            ("POST", &base, &[JSON][..], &body[..]),
            ("PUT", &one, &[JSON], &body),
            ("PATCH", &one, &[merge], b"{}"),
            ("DELETE", &one, &[], &[]),
            ("DELETE", &base, &[], &[]),
        ] {
            let r = call(api, method, path, hdrs, body).await;
            assert_eq!(r.code, 404, "{method} {path}: {r}");
            no_such_resource(&r);
        }
    }
    // Nothing the misses touched changed.
    let list = get(api, WIDGETS).await.is(200).json();
    assert_eq!(list["items"].as_array().map(Vec::len), Some(1), "{list}");
}

#[tokio::test(flavor = "multi_thread")]
async fn rest_reads_are_pruned_by_the_current_schema() {
    let kube = started().await;
    let api = kube.api;
    let crd = register(
        api,
        json!({"size": {"type": "integer"}, "old": {"type": "string"}}),
    )
    .await;
    let created = call(
        api,
        "POST",
        WIDGETS,
        &[JSON],
        &widget("w", json!({"size": 2, "old": "x"})),
    )
    .await
    .is(201)
    .json();
    assert_eq!(created["spec"], json!({"size": 2, "old": "x"}));
    let rv = created["metadata"]["resourceVersion"]
        .as_str()
        .expect("a version")
        .to_string();
    // `old` leaves the schema.
    let mut changed = crd.clone();
    for v in changed["spec"]["versions"]
        .as_array_mut()
        .expect("versions")
    {
        v["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"] =
            json!({"size": {"type": "integer"}});
    }
    let path = format!("{CRDS}/widgets.example.com");
    call(api, "PUT", &path, &[JSON], changed.to_string().as_bytes())
        .await
        .is(200);
    let until = Instant::now() + Duration::from_secs(10);
    let got = loop {
        let got = get(api, &format!("{WIDGETS}/w")).await.is(200).json();
        if got["spec"].get("old").is_none() {
            break got;
        }
        assert!(
            Instant::now() < until,
            "Get still serves the dropped field: {got}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(got["spec"], json!({"size": 2}), "Get");
    let list = get(api, WIDGETS).await.is(200).json();
    assert_eq!(list["items"][0]["spec"], json!({"size": 2}), "List: {list}");
    // A watch from before the write replays it as stored: pruned too.
    let mut s = TcpStream::connect(api).await.expect("connect");
    let before = rv.parse::<u64>().expect("a number") - 1;
    let (_, mut raw) = open_stream(
        &mut s,
        &format!("{WIDGETS}?watch=1&resourceVersion={before}"),
    )
    .await;
    let mut buf = vec![0u8; 16 << 10];
    let event = loop {
        let (body, _) = kubestore_tests::rest::dechunk(&raw);
        if let Some(end) = body.iter().position(|b| *b == b'\n') {
            break lines(&body[..end]).remove(0);
        }
        let n = tokio::time::timeout(Duration::from_secs(10), s.read(&mut buf))
            .await
            .expect("an event in time")
            .expect("read");
        assert!(n > 0, "the watch ended");
        raw.extend_from_slice(&buf[..n]);
    };
    assert_eq!(event["type"], "ADDED", "{event}");
    assert_eq!(
        event["object"]["spec"],
        json!({"size": 2}),
        "Watch: {event}"
    );
}
