//! Entry points for fuzzing registry-svc's own parsers of client input (selectors, quantities,
//! and the REST API's: bodies in JSON, YAML and Kubernetes protobuf, patches, query strings and
//! Accept headers): each panics when a property that must hold for any input does not. Driven
//! by cargo-fuzz targets in `fuzz/` and, in CI, by `tests/tests/fuzz_smoke.rs` over the seed
//! corpus.

use crate::{
    kinds::pod::PodStrategy,
    quantity::Quantity,
    selectors::{self, parse_fields, parse_labels},
    strategy::Strategy,
};

/// A label selector: parses or not, never panics.
pub fn label_selector(data: &[u8]) {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    let _ = parse_labels(s);
}

/// A field selector, alone and against the Pod kind's selectable fields, with a label selector
/// from the same bytes.
pub fn field_selector(data: &[u8]) {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    let _ = parse_fields(s);
    let (labels, fields) = s.split_once('\n').unwrap_or(("", s));
    let _ = selectors::parse(labels, fields, PodStrategy.selectable_fields(), &[]);
}

/// A resource quantity (`100m`, `1Gi`, `1e3`): parses or not; a parsed one adds to itself
/// without overflow and keeps its sign.
pub fn quantity(data: &[u8]) {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(q) = Quantity::parse(s) {
        let doubled = q.saturating_add(q);
        assert_eq!(doubled.is_positive(), q.is_positive(), "{s:?}");
    }
}

fn pods_codec() -> &'static kubestore_apimachinery::json::Codec {
    static CODEC: std::sync::OnceLock<kubestore_apimachinery::json::Codec> =
        std::sync::OnceLock::new();
    CODEC.get_or_init(|| {
        kubestore_apimachinery::json::Codec::new(kubestore_proto::CORE_DESCRIPTOR_SET)
            .expect("the registry's descriptors decode")
    })
}

/// What the REST API knows of Pods that a protobuf body's decoding reads (the kind and its
/// message).
fn pods_info() -> crate::catalog::ResourceInfo {
    crate::catalog::ResourceInfo {
        group: String::new(),
        version: "v1".into(),
        plural: "pods".into(),
        singular: "pod".into(),
        kind: "Pod".into(),
        list_kind: "PodList".into(),
        short_names: vec!["po".into()],
        categories: vec!["all".into()],
        namespaced: true,
        verbs: crate::catalog::ALL_VERBS
            .iter()
            .map(|v| v.to_string())
            .collect(),
        status: true,
        finalize: false,
        storage_version: true,
        message: Some(".core.v1.Pod".into()),
        return_deleted_object: true,
    }
}

/// A REST request body for Pods: the first byte picks JSON, YAML or Kubernetes protobuf, the
/// rest is the body. Whatever decodes as a Pod's JSON is encoded to protobuf, decoded by prost,
/// and written back as JSON, which must parse and decode to the same Pod.
pub fn rest_body(data: &[u8]) {
    use prost::Message;
    let Some((&kind, body)) = data.split_first() else {
        return;
    };
    let value: serde_json::Value = match kind % 3 {
        0 => match serde_json::from_slice(body) {
            Ok(v) => v,
            Err(_) => return,
        },
        1 => match kubestore_apimachinery::yaml::to_json(body) {
            Ok(v) => v,
            Err(_) => return,
        },
        // The REST API's own path: the `k8s\0` envelope, then upstream's Pod transcoded.
        _ => match crate::rest::protobuf::decode(body, &pods_info()) {
            Ok(v) => v,
            Err(_) => return,
        },
    };
    let codec = pods_codec();
    let mut unknown = Vec::new();
    let Ok(bytes) = codec.decode(
        ".core.v1.Pod",
        &value,
        &["apiVersion", "kind"],
        &mut unknown,
    ) else {
        return;
    };
    let pod = kubestore_proto::core::v1::Pod::decode(bytes.as_slice())
        .expect("what the codec encodes, prost decodes");
    let json = codec
        .encode_to_value(".core.v1.Pod", &pod.encode_to_vec(), Some(("v1", "Pod")))
        .expect("a decoded Pod writes as JSON");
    let again = codec
        .decode(
            ".core.v1.Pod",
            &json,
            &["apiVersion", "kind"],
            &mut Vec::new(),
        )
        .expect("what the codec writes, it reads");
    assert_eq!(
        kubestore_proto::core::v1::Pod::decode(again.as_slice()).ok(),
        Some(pod),
        "a Pod's JSON round trip changed it"
    );
}

/// A patch: the first byte picks merge, JSON or strategic merge; then the original Pod JSON and
/// the patch, separated by a newline. Applying never panics; a strategic merge's result is an
/// object.
pub fn patch(data: &[u8]) {
    use kubestore_apimachinery::patch::{Patch, PatchType};
    let Some((&kind, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let (original, body) = text.split_once('\n').unwrap_or(("{}", text));
    let (Ok(original), Ok(body)) = (
        serde_json::from_str::<serde_json::Value>(original),
        serde_json::from_str::<serde_json::Value>(body),
    ) else {
        return;
    };
    let patch_type = match kind % 3 {
        0 => PatchType::Merge,
        1 => PatchType::Json,
        _ => PatchType::Strategic,
    };
    let p = Patch { patch_type, body };
    if let Ok(out) = p.apply(
        &original,
        Some((pods_codec().descriptors(), ".core.v1.Pod")),
        &kubestore_apimachinery::patch::Limits::default(),
    ) && patch_type == PatchType::Strategic
    {
        assert!(out.is_object(), "a strategic merge patch made {out}");
    }
}

/// A REST query string and Accept header (the first line): parsed into list, write and output
/// options, or refused, never a panic.
pub fn rest_query(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (query, accept) = text.split_once('\n').unwrap_or((text, ""));
    let q = crate::rest::params::Query::parse(Some(query));
    let _ = q.list_options();
    let _ = q.write_options();
    let _ = q.watch();
    let a = crate::rest::params::Accept::parse(Some(accept));
    let _ = a.output(&q);
    let _ = a.aggregated_discovery();
    let _ = crate::rest::route::parse(query, |_, _, r| r == "pods" || r == "namespaces");
}
