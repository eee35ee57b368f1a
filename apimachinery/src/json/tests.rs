//! Round trips of upstream's example objects, and upstream's decoding errors.

use prost::Message;
use serde_json::{Value, json};

use super::Codec;

fn codec() -> Codec {
    Codec::new(kubestore_proto::CORE_DESCRIPTOR_SET).expect("descriptors")
}

/// `value` without the fields at `paths` (dotted, with `[i]` for list items).
fn without(mut value: Value, paths: &[String]) -> Value {
    for p in paths {
        let mut steps: Vec<String> = Vec::new();
        for part in p.split('.') {
            match part.split_once('[') {
                Some((k, rest)) => {
                    steps.push(k.to_string());
                    for idx in rest.split('[') {
                        steps.push(format!("[{}", idx.trim_end_matches(']')));
                    }
                }
                None => steps.push(part.to_string()),
            }
        }
        let (last, parents) = steps.split_last().expect("a path");
        let mut at = &mut value;
        for s in parents {
            at = match s.strip_prefix('[') {
                Some(i) => &mut at[i.parse::<usize>().expect("index")],
                None => &mut at[s.as_str()],
            };
        }
        at.as_object_mut().expect("an object").remove(last);
    }
    value
}

/// Decodes `upstream` into `M`, encodes it back, and returns (JSON written, unknown fields).
fn round_trip<M: Message + Default>(
    message: &str,
    upstream: &Value,
    type_meta: (&str, &str),
) -> (Value, Vec<String>) {
    let codec = codec();
    let mut unknown = Vec::new();
    let bytes = codec
        .decode(message, upstream, &["apiVersion", "kind"], &mut unknown)
        .expect("decodes");
    // Through the typed message, as the registry holds it.
    let typed = M::decode(bytes.as_slice()).expect("valid protobuf");
    let out = codec
        .encode_to_value(message, &typed.encode_to_vec(), Some(type_meta))
        .expect("encodes");
    (out, unknown)
}

#[test]
fn upstreams_pod_comes_back_for_every_modelled_field() {
    let pod = json!({
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {
            "name": "nginx",
            "namespace": "default",
            "uid": "0d2f8d4a-4b8e-4d5c-9c3b-2f4c1a9b7e61",
            "resourceVersion": "12345",
            "generation": 1,
            "creationTimestamp": "2024-05-01T10:00:00Z",
            "labels": {"app": "nginx"},
            "annotations": {"kubernetes.io/description": "web"},
            "finalizers": ["example.com/keep"],
            "ownerReferences": [{
                "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "nginx-7c5ddbdf54",
                "uid": "5f6c0e1e-8f0a-4c52-a1d6-1c0c77b8a0a4", "controller": true,
                "blockOwnerDeletion": true
            }]
        },
        "spec": {
            "containers": [{
                "name": "nginx",
                "image": "nginx:1.27",
                "ports": [{"containerPort": 80, "protocol": "TCP"}],
                "resources": {"requests": {"cpu": "100m"}, "limits": {"memory": "64Mi"}}
            }],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "nodeName": "node-1"
        },
        "status": {
            "phase": "Running",
            "qosClass": "Burstable",
            "startTime": "2024-05-01T10:00:01Z"
        }
    });
    let (out, unknown) =
        round_trip::<kubestore_proto::core::v1::Pod>(".core.v1.Pod", &pod, ("v1", "Pod"));
    let modelled = without(pod, &unknown);
    assert_eq!(out, modelled, "dropped: {unknown:?}");
    // Types included: numbers stay numbers.
    assert_eq!(out["spec"]["terminationGracePeriodSeconds"], json!(30));
    assert_eq!(out["metadata"]["generation"], json!(1));
}

#[test]
fn configmaps_secrets_events_and_leases_come_back() {
    let cm = json!({
        "kind": "ConfigMap", "apiVersion": "v1",
        "metadata": {"name": "game-demo", "namespace": "default"},
        "data": {"player_initial_lives": "3", "game.properties": "enemy.types=aliens,monsters\n"},
        "immutable": false
    });
    let (out, unknown) = round_trip::<kubestore_proto::core::v1::ConfigMap>(
        ".core.v1.ConfigMap",
        &cm,
        ("v1", "ConfigMap"),
    );
    assert!(unknown.is_empty(), "{unknown:?}");
    assert_eq!(out, cm, "an explicit false stays");

    let secret = json!({
        "kind": "Secret", "apiVersion": "v1",
        "metadata": {"name": "mysecret", "namespace": "default"},
        "type": "Opaque",
        "data": {"username": "YWRtaW4=", "password": "MWYyZDFlMmU2N2Rm"}
    });
    let (out, unknown) = round_trip::<kubestore_proto::core::v1::Secret>(
        ".core.v1.Secret",
        &secret,
        ("v1", "Secret"),
    );
    assert!(unknown.is_empty(), "{unknown:?}");
    assert_eq!(out, secret);

    let lease = json!({
        "kind": "Lease", "apiVersion": "coordination.k8s.io/v1",
        "metadata": {"name": "kube-controller-manager", "namespace": "kube-system"},
        "spec": {
            "holderIdentity": "node-1_5e0b6c",
            "leaseDurationSeconds": 15,
            "acquireTime": "2024-05-01T10:00:00.000000Z",
            "renewTime": "2024-05-01T10:00:05.123456Z",
            "leaseTransitions": 2
        }
    });
    let (out, unknown) = round_trip::<kubestore_proto::coordination::v1::Lease>(
        ".coordination.v1.Lease",
        &lease,
        ("coordination.k8s.io/v1", "Lease"),
    );
    assert!(unknown.is_empty(), "{unknown:?}");
    // A MicroTime of whole seconds is written without its fraction.
    let mut expected = lease.clone();
    expected["spec"]["acquireTime"] = json!("2024-05-01T10:00:00Z");
    assert_eq!(out, expected);
}

#[test]
fn decoding_errors_and_unknown_fields_use_upstreams_words() {
    let codec = codec();
    let mut unknown = Vec::new();
    let bad = json!({"spec": {"terminationGracePeriodSeconds": "30"}});
    let e = codec
        .decode(".core.v1.Pod", &bad, &[], &mut unknown)
        .expect_err("a string is not an int64");
    assert_eq!(
        e.message,
        "json: cannot unmarshal string into Go struct field PodSpec.spec.terminationGracePeriodSeconds of type int64"
    );
    let extra = json!({"spec": {"x": 1, "containers": [{"name": "a", "bogus": true}]}, "y": null});
    codec
        .decode(".core.v1.Pod", &extra, &[], &mut unknown)
        .expect("unknown fields are not errors here");
    assert_eq!(unknown, ["spec.x", "spec.containers[0].bogus", "y"]);
    // A quantity may be a number.
    let mut unknown = Vec::new();
    let n = json!({"spec": {"containers": [{"name": "a", "resources": {"limits": {"cpu": 1}}}]}});
    let bytes = codec
        .decode(".core.v1.Pod", &n, &[], &mut unknown)
        .expect("a number is a quantity");
    let back = codec
        .encode_to_value(".core.v1.Pod", &bytes, None)
        .expect("encodes");
    assert_eq!(
        back["spec"]["containers"][0]["resources"]["limits"]["cpu"],
        json!("1")
    );
}

#[test]
fn structs_hold_any_json_and_integral_numbers_stay_integral() {
    let codec = codec();
    let schema = json!({
        "spec": {
            "group": "stable.example.com",
            "names": {"plural": "crontabs", "kind": "CronTab"},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {"spec": {"type": "object", "properties": {
                        "replicas": {"type": "integer", "minimum": 1, "maximum": 10.5},
                        "list": {"type": "array", "items": {"type": "string"}, "default": ["a", null]},
                        "flag": {"type": "boolean", "default": false}
                    }}}
                }}
            }]
        }
    });
    let mut unknown = Vec::new();
    let bytes = codec
        .decode(
            ".apiextensions.v1.CustomResourceDefinition",
            &schema,
            &[],
            &mut unknown,
        )
        .expect("decodes");
    assert!(unknown.is_empty(), "{unknown:?}");
    let back = codec
        .encode_to_value(".apiextensions.v1.CustomResourceDefinition", &bytes, None)
        .expect("encodes");
    assert_eq!(
        back["spec"]["versions"][0]["schema"],
        schema["spec"]["versions"][0]["schema"]
    );
}

/// Strings are written as serde_json writes them: escaped where JSON requires it (quotes,
/// backslashes, control characters), every other character as it is, in keys and values.
#[test]
fn strings_and_map_keys_are_escaped_as_serde_json_escapes_them() {
    use kubestore_proto::{core::v1::ConfigMap, meta::v1::ObjectMeta};
    let tricky = [
        "plain",
        "",
        "quote \" and backslash \\",
        "line\nbreak\ttab\r\u{1}\u{1f}",
        "unicode: é 日本 🙂 \u{7f}",
        "</script>&'",
    ];
    for t in tricky {
        let cm = ConfigMap {
            metadata: Some(ObjectMeta {
                name: t.into(),
                ..Default::default()
            }),
            data: [
                (t.to_string(), t.to_string()),
                ("k".to_string(), t.to_string()),
            ]
            .into(),
            immutable: None,
            binary_data: Default::default(),
        };
        let text = codec()
            .encode_to_vec(
                ".core.v1.ConfigMap",
                &cm.encode_to_vec(),
                Some(("v1", "ConfigMap")),
            )
            .expect("encodes");
        let quoted = serde_json::to_string(t).expect("a string");
        let written = String::from_utf8(text.clone()).expect("UTF-8");
        let v: Value = serde_json::from_slice(&text).expect("valid JSON");
        if !t.is_empty() {
            // (an empty name is omitted)
            assert!(
                written.contains(&format!("\"name\":{quoted}")),
                "{t:?}: {written}"
            );
            assert_eq!(v["metadata"]["name"], t);
        }
        assert!(
            written.contains(&format!("{quoted}:{quoted}")),
            "{t:?}: {written}"
        );
        assert_eq!(v["data"][t], t);
        assert_eq!(v["data"]["k"], t);
    }
}
