//! Cases of upstream's `strategicpatch` tests, for the fields kubestore models.

use serde_json::{Value, json};

use super::apply;
use crate::{descriptors::Descriptors, patch::PatchError};

fn smp(original: Value, patch: Value) -> Result<Value, PatchError> {
    let d = Descriptors::from_set(kubestore_proto::CORE_DESCRIPTOR_SET).expect("descriptors");
    apply(
        &d,
        ".core.v1.Pod",
        &original,
        &patch,
        &crate::patch::Limits::default(),
    )
}

fn pod(containers: Value) -> Value {
    json!({"metadata": {"name": "web", "finalizers": ["a", "b"], "labels": {"app": "web", "tier": "front"}},
           "spec": {"containers": containers, "nodeName": "node-1"}})
}

#[test]
fn containers_merge_by_name() {
    let original = pod(json!([{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}]));
    let out = smp(
        original.clone(),
        json!({"spec": {"containers": [{"name": "b", "image": "b:2"}]}}),
    )
    .expect("applies");
    assert_eq!(
        out["spec"]["containers"],
        json!([{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:2"}])
    );
    assert_eq!(out["spec"]["nodeName"], json!("node-1"), "the rest stays");
    // A new container is appended; `$setElementOrder` orders the result.
    let out = smp(
        original.clone(),
        json!({"spec": {"$setElementOrder/containers": [{"name": "c"}, {"name": "a"}, {"name": "b"}],
                        "containers": [{"name": "c", "image": "c:1"}]}}),
    )
    .expect("applies");
    assert_eq!(
        out["spec"]["containers"],
        json!([{"name": "c", "image": "c:1"}, {"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}])
    );
    // kubectl apply removing a sidecar.
    let out = smp(
        original.clone(),
        json!({"spec": {"$setElementOrder/containers": [{"name": "a"}],
                        "containers": [{"name": "b", "$patch": "delete"}]}}),
    )
    .expect("applies");
    assert_eq!(
        out["spec"]["containers"],
        json!([{"name": "a", "image": "a:1"}])
    );
    // `$patch: replace` in the list replaces it.
    let out = smp(
        original.clone(),
        json!({"spec": {"containers": [{"name": "z", "image": "z:1"}, {"$patch": "replace"}]}}),
    )
    .expect("applies");
    assert_eq!(
        out["spec"]["containers"],
        json!([{"name": "z", "image": "z:1"}])
    );
    // A merge key is required.
    assert!(matches!(
        smp(original, json!({"spec": {"containers": [{"image": "x"}]}})),
        Err(PatchError::BadRequest(m)) if m.contains("does not contain declared merge key: name")
    ));
}

#[test]
fn scalar_lists_maps_and_directives() {
    let original = pod(json!([{"name": "a", "image": "a:1"}]));
    let out = smp(
        original.clone(),
        json!({"metadata": {"finalizers": ["c", "a"], "labels": {"tier": null, "env": "prod"}}}),
    )
    .expect("applies");
    assert_eq!(
        out["metadata"]["finalizers"],
        json!(["a", "b", "c"]),
        "a union"
    );
    assert_eq!(
        out["metadata"]["labels"],
        json!({"app": "web", "env": "prod"})
    );
    let out = smp(
        original.clone(),
        json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}),
    )
    .expect("applies");
    assert_eq!(out["metadata"]["finalizers"], json!(["b"]));
    let out = smp(
        original.clone(),
        json!({"metadata": {"$retainKeys": ["name", "labels"], "labels": {"x": "y"}}}),
    )
    .expect("applies");
    assert_eq!(
        out["metadata"],
        json!({"name": "web", "labels": {"app": "web", "tier": "front", "x": "y"}})
    );
    let out = smp(
        original.clone(),
        json!({"metadata": {"labels": {"$patch": "replace", "only": "this"}}}),
    )
    .expect("applies");
    assert_eq!(out["metadata"]["labels"], json!({"only": "this"}));
    // Lists without a strategy are replaced.
    let refs = json!({"metadata": {"ownerReferences": [
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "o1", "uid": "1"},
        {"apiVersion": "v1", "kind": "ConfigMap", "name": "o2", "uid": "2"}]}});
    let with_refs = smp(original.clone(), refs).expect("applies");
    let out = smp(
        with_refs,
        json!({"metadata": {"ownerReferences": [{"uid": "2", "$patch": "delete"}]}}),
    )
    .expect("applies");
    assert_eq!(
        out["metadata"]["ownerReferences"],
        json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "o1", "uid": "1"}]),
        "owner references merge by uid"
    );
    assert!(matches!(
        smp(original, json!({"metadata": {"$patch": "bogus"}})),
        Err(PatchError::BadRequest(_))
    ));
}

/// The shape of the attack (a 286 KB patch blocked registry-svc 8-26 s): long lists on
/// both sides, merged by key and as sets. Each patch item is one look-up now; the result is
/// what the item-by-item scan gave.
#[test]
fn long_lists_merge_by_key_and_as_sets() {
    let n = 20_000;
    let containers: Vec<Value> = (0..n)
        .map(|i| json!({"name": format!("c{i}"), "image": "a:1"}))
        .collect();
    let mut original = pod(Value::Array(containers));
    original["metadata"]["finalizers"] =
        Value::Array((0..n).map(|i| json!(format!("f{i}"))).collect());
    // Every other container changed, every tenth deleted, n new ones; n finalizers of which
    // half are new.
    let mut items: Vec<Value> = (0..n)
        .filter(|i| i % 2 == 0)
        .map(|i| {
            if i % 10 == 0 {
                json!({"name": format!("c{i}"), "$patch": "delete"})
            } else {
                json!({"name": format!("c{i}"), "image": "b:2"})
            }
        })
        .collect();
    items.extend((n..2 * n).map(|i| json!({"name": format!("c{i}"), "image": "n:1"})));
    let finalizers: Vec<Value> = (n / 2..n + n / 2).map(|i| json!(format!("f{i}"))).collect();
    let out = smp(
        original,
        json!({"metadata": {"finalizers": finalizers}, "spec": {"containers": items}}),
    )
    .expect("applies");
    let merged = out["spec"]["containers"].as_array().expect("a list");
    assert_eq!(merged.len(), n - n / 10 + n);
    assert_eq!(merged[0], json!({"name": "c1", "image": "a:1"}));
    assert_eq!(merged[1], json!({"name": "c2", "image": "b:2"}));
    assert_eq!(
        merged[merged.len() - 1],
        json!({"name": format!("c{}", 2 * n - 1), "image": "n:1"})
    );
    let f = out["metadata"]["finalizers"].as_array().expect("a list");
    assert_eq!(f.len(), n + n / 2);
    assert_eq!(f[n], json!(format!("f{n}")));
}

#[test]
fn set_element_order_and_deletions_from_long_lists() {
    let n = 20_000;
    let mut original = pod(Value::Array(
        (0..n)
            .map(|i| json!({"name": format!("c{i}"), "image": "a:1"}))
            .collect(),
    ));
    original["metadata"]["finalizers"] =
        Value::Array((0..n).map(|i| json!(format!("f{i}"))).collect());
    let order: Vec<Value> = (0..n)
        .rev()
        .map(|i| json!({"name": format!("c{i}")}))
        .collect();
    let gone: Vec<Value> = (0..n)
        .filter(|i| i % 2 == 1)
        .map(|i| json!(format!("f{i}")))
        .collect();
    let out = smp(
        original,
        json!({"metadata": {"$deleteFromPrimitiveList/finalizers": gone},
               "spec": {"$setElementOrder/containers": order}}),
    )
    .expect("applies");
    assert_eq!(
        out["spec"]["containers"][0]["name"],
        json!(format!("c{}", n - 1))
    );
    assert_eq!(out["spec"]["containers"][n - 1]["name"], "c0");
    assert_eq!(
        out["metadata"]["finalizers"].as_array().map(Vec::len),
        Some(n / 2)
    );
    assert_eq!(out["metadata"]["finalizers"][1], "f2");
}

#[test]
fn a_strategic_merge_patch_stops_at_its_deadline() {
    let d = Descriptors::from_set(kubestore_proto::CORE_DESCRIPTOR_SET).expect("descriptors");
    let labels: serde_json::Map<String, Value> =
        (0..1000).map(|i| (format!("l{i}"), json!("v"))).collect();
    let past = crate::patch::Limits::until(Some(
        std::time::Instant::now() - std::time::Duration::from_millis(1),
    ));
    assert_eq!(
        apply(
            &d,
            ".core.v1.Pod",
            &pod(json!([])),
            &json!({"metadata": {"labels": labels}}),
            &past
        ),
        Err(PatchError::Timeout)
    );
}
