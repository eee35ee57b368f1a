//! PATCH over the REST API, spoken by hand against a real etcd, storage-svc and registry-svc:
//!
//! - concurrent patches all land: 20 clients each add a label at once, by merge, strategic
//!   and JSON patches, and the object ends with every label (none lost to a read-modify-write
//!   race);
//! - a patch carrying a stale `metadata.resourceVersion` is upstream's `409` `Conflict` and
//!   writes nothing; the current one is served;
//! - the strategic merge patch's directives, with upstream's semantics
//!   (`k8s.io/apimachinery/pkg/util/strategicpatch`): `$patch: delete` on an item of a list
//!   merged by key (`ownerReferences` by `uid`) and on a map, `$patch: replace` on a map,
//!   `$retainKeys`, `$setElementOrder/finalizers`, `$deleteFromPrimitiveList/finalizers`; a
//!   key set outside `$retainKeys` is a `400` (ignored: registry-svc drops the key instead).

use std::net::SocketAddr;

use kubestore_tests::{
    kube::KubeCluster,
    rest::{CMS, JSON, Reply, assert_status, call, get},
    services::wait_system_namespaces,
};
use serde_json::{Value, json};

const MERGE: (&str, &str) = ("Content-Type", "application/merge-patch+json");
const STRATEGIC: (&str, &str) = ("Content-Type", "application/strategic-merge-patch+json");
const JSON_PATCH: (&str, &str) = ("Content-Type", "application/json-patch+json");

async fn started() -> KubeCluster {
    let kube = KubeCluster::start().await;
    wait_system_namespaces(&kube.registry_url()).await;
    kube
}

async fn create(api: SocketAddr, object: Value) -> Value {
    call(api, "POST", CMS, &[JSON], object.to_string().as_bytes())
        .await
        .is(201)
        .json()
}

async fn patch(api: SocketAddr, name: &str, kind: (&str, &str), body: &Value) -> Reply {
    call(
        api,
        "PATCH",
        &format!("{CMS}/{name}"),
        &[kind],
        body.to_string().as_bytes(),
    )
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn twenty_concurrent_label_patches_all_land() {
    let kube = started().await;
    let api = kube.api;
    create(
        api,
        json!({"metadata": {"name": "shared", "labels": {"base": "yes"}}}),
    )
    .await;
    let patches: Vec<_> = (0..20)
        .map(|i| {
            let key = format!("l{i}");
            let (kind, body) = match i % 3 {
                0 => (MERGE, json!({"metadata": {"labels": {key: "v"}}})),
                1 => (STRATEGIC, json!({"metadata": {"labels": {key: "v"}}})),
                _ => (
                    JSON_PATCH,
                    json!([{"op": "add", "path": format!("/metadata/labels/{key}"), "value": "v"}]),
                ),
            };
            tokio::spawn(async move { patch(api, "shared", kind, &body).await })
        })
        .collect();
    for p in patches {
        p.await.expect("a patch").is(200);
    }
    let got = get(api, &format!("{CMS}/shared")).await.is(200).json();
    let labels = got["metadata"]["labels"].as_object().expect("labels");
    let mut keys: Vec<&str> = labels.keys().map(String::as_str).collect();
    keys.sort();
    let mut want: Vec<String> = (0..20).map(|i| format!("l{i}")).collect();
    want.push("base".into());
    want.sort();
    assert_eq!(keys, want, "{got}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_patch_at_a_stale_resource_version_is_a_conflict() {
    let kube = started().await;
    let api = kube.api;
    let created = create(api, json!({"metadata": {"name": "c"}, "data": {"k": "1"}})).await;
    let stale = created["metadata"]["resourceVersion"]
        .as_str()
        .expect("a version")
        .to_string();
    let current = patch(api, "c", MERGE, &json!({"data": {"k": "2"}}))
        .await
        .is(200)
        .json();
    for kind in [MERGE, STRATEGIC] {
        let body = json!({"metadata": {"resourceVersion": stale}, "data": {"k": "3"}});
        let r = patch(api, "c", kind, &body).await;
        let status = assert_status(&r, 409, "Conflict");
        assert_eq!(
            status["message"],
            "Operation cannot be fulfilled on configmaps \"c\": the object has been modified; please apply your changes to the latest version and try again",
            "{r}"
        );
    }
    let r = patch(
        api,
        "c",
        JSON_PATCH,
        &json!([
            {"op": "replace", "path": "/metadata/resourceVersion", "value": stale},
            {"op": "replace", "path": "/data/k", "value": "3"}
        ]),
    )
    .await;
    assert_status(&r, 409, "Conflict");
    let got = get(api, &format!("{CMS}/c")).await.is(200).json();
    assert_eq!(got, current, "nothing written by the refused patches");
    // At the current version: served.
    let rv = current["metadata"]["resourceVersion"].clone();
    let body = json!({"metadata": {"resourceVersion": rv}, "data": {"k": "3"}});
    let done = patch(api, "c", MERGE, &body).await.is(200).json();
    assert_eq!(done["data"]["k"], "3");
}

#[tokio::test(flavor = "multi_thread")]
async fn strategic_merge_patch_directives_as_upstream() {
    let kube = started().await;
    let api = kube.api;
    let owner = |uid: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "name": format!("owner-{uid}"), "uid": uid});
    create(
        api,
        json!({
            "metadata": {
                "name": "d",
                "finalizers": ["example.com/a", "example.com/b"],
                "ownerReferences": [owner("u1"), owner("u2"), owner("u3")],
                "annotations": {"keep": "1", "drop": "2"},
                "labels": {"x": "1", "y": "2"},
            },
            "data": {"a": "1", "b": "2", "c": "3"},
        }),
    )
    .await;
    let p = |body: Value| async move {
        let r = patch(api, "d", STRATEGIC, &body).await;
        assert_eq!(r.code, 200, "{body}: {r}");
        r.json()
    };

    // `$patch: delete` on an item of a list merged by key: only that owner goes.
    let got =
        p(json!({"metadata": {"ownerReferences": [{"uid": "u2", "$patch": "delete"}]}})).await;
    let uids: Vec<&Value> = got["metadata"]["ownerReferences"]
        .as_array()
        .expect("owners")
        .iter()
        .map(|o| &o["uid"])
        .collect();
    assert_eq!(uids, [&json!("u1"), &json!("u3")], "{got}");

    // `$setElementOrder` with a new finalizer: the order given.
    let got = p(json!({"metadata": {
        "$setElementOrder/finalizers": ["example.com/c", "example.com/b", "example.com/a"],
        "finalizers": ["example.com/c"],
    }}))
    .await;
    assert_eq!(
        got["metadata"]["finalizers"],
        json!(["example.com/c", "example.com/b", "example.com/a"]),
        "{got}"
    );
    // `$deleteFromPrimitiveList`: those values leave the list, the rest keep their order.
    let got =
        p(json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["example.com/b"]}})).await;
    assert_eq!(
        got["metadata"]["finalizers"],
        json!(["example.com/c", "example.com/a"]),
        "{got}"
    );

    // `$retainKeys`: the map keeps only the keys listed (with the patch's values).
    let got = p(json!({"data": {"$retainKeys": ["a", "c"], "c": "30"}})).await;
    assert_eq!(got["data"], json!({"a": "1", "c": "30"}), "{got}");

    // `$patch: replace` on a map: the patch's content, whole.
    let got = p(json!({"metadata": {"annotations": {"$patch": "replace", "new": "3"}}})).await;
    assert_eq!(got["metadata"]["annotations"], json!({"new": "3"}), "{got}");
    // `$patch: delete` on a map: emptied.
    let got = p(json!({"metadata": {"labels": {"$patch": "delete"}}})).await;
    assert!(
        got["metadata"]["labels"]
            .as_object()
            .is_none_or(|l| l.is_empty()),
        "{got}"
    );

    // What was read back is what is stored.
    let stored = get(api, &format!("{CMS}/d")).await.is(200).json();
    assert_eq!(stored, got);
}

/// Upstream's `applyRetainKeysDirective` refuses a patch that sets a key its `$retainKeys`
/// does not list (`ErrBadPatchFormatForRetainKeys`, a `400` through
/// `interpretStrategicMergePatchError`); registry-svc dropped the key and answered 200.
#[tokio::test(flavor = "multi_thread")]
async fn a_strategic_patch_setting_a_key_outside_its_retain_keys_is_a_bad_request() {
    let kube = started().await;
    let api = kube.api;
    let created = create(api, json!({"metadata": {"name": "r"}, "data": {"a": "1"}})).await;
    let r = patch(
        api,
        "r",
        STRATEGIC,
        &json!({"data": {"$retainKeys": ["a"], "z": "1"}}),
    )
    .await;
    let status = assert_status(&r, 400, "BadRequest");
    assert_eq!(
        status["message"], "invalid patch format of retainKeys",
        "{r}"
    );
    let got = get(api, &format!("{CMS}/r")).await.is(200).json();
    assert_eq!(got, created, "nothing written");
}
