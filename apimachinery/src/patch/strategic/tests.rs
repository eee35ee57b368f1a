//! Cases of upstream's `strategicpatch` tests, for the fields kubestore models.

use serde_json::{Value, json};

use super::apply;
use crate::{descriptors::Descriptors, patch::PatchError};

fn smp(original: Value, patch: Value) -> Result<Value, PatchError> {
    let d = Descriptors::from_set(kubestore_proto::CORE_DESCRIPTOR_SET).expect("descriptors");
    apply(&d, ".core.v1.Pod", &original, &patch)
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
