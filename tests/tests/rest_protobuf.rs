//! Kubernetes protobuf request bodies (`application/vnd.kubernetes.protobuf`, what client-go's
//! typed clients and kubectl's generators send) for Pods, Events and Leases, spoken by hand: a
//! body encoded in upstream's `generated.proto` form (by the descriptors of `proto/k8s`, with
//! upstream's field numbers), in its `runtime.Unknown` envelope, is created (201) and stored
//! with every field it carried, int64s, quantities, times and micro-times included, read back
//! as JSON; an envelope naming another kind is refused (400).

use std::net::SocketAddr;

use kubestore_apimachinery::json::Codec;
use kubestore_tests::{
    assert_carried,
    kube::KubeCluster,
    rest::{assert_status, call, get},
    services::wait_system_namespaces,
};
use prost::encoding::{bytes, string};
use serde_json::{Value, json};

const PROTOBUF: (&str, &str) = ("Content-Type", "application/vnd.kubernetes.protobuf");

/// `object` (Kubernetes JSON) as a protobuf body: `k8s\0`, then a `runtime.Unknown` whose
/// type is `api_version`/`kind` (which may differ from the object's) and whose raw is the
/// object as upstream's `message`.
fn envelope(message: &str, api_version: &str, kind: &str, object: &Value) -> Vec<u8> {
    let codec = Codec::new(kubestore_proto::K8S_DESCRIPTOR_SET).expect("descriptors");
    let mut unknown = Vec::new();
    let raw = codec
        .decode(
            message,
            &wire(object, ""),
            &["apiVersion", "kind"],
            &mut unknown,
        )
        .unwrap_or_else(|e| panic!("{message} encodes: {e:?}"));
    assert!(
        unknown.is_empty(),
        "fields {message} does not have: {unknown:?}"
    );
    let mut type_meta = Vec::new();
    string::encode(1, &api_version.to_string(), &mut type_meta);
    string::encode(2, &kind.to_string(), &mut type_meta);
    let mut env = Vec::new();
    bytes::encode(1, &type_meta, &mut env);
    bytes::encode(2, &raw, &mut env);
    let mut body = b"k8s\0".to_vec();
    body.extend(env);
    body
}

/// `object` as the JSON form of upstream's messages, which the codec encodes: a Quantity is
/// `{"string": ..}`, a Time or MicroTime `{"seconds": .., "nanos": ..}` (the times used here:
/// 2026-01-02T03:04:0Ns, with a fraction of microseconds or none).
fn wire(object: &Value, key: &str) -> Value {
    match object {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| {
                    let v = if matches!(key, "limits" | "requests") {
                        json!({"string": v})
                    } else {
                        wire(v, k)
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(|v| wire(v, key)).collect()),
        Value::String(t) if t.starts_with("2026-01-02T03:04:0") => {
            let second: i64 = t[18..19].parse().expect("a second");
            let nanos: i64 = t
                .get(20..26)
                .map_or(0, |f| f.parse::<i64>().expect("microseconds") * 1000);
            json!({"seconds": 1_767_323_040 + second, "nanos": nanos})
        }
        other => other.clone(),
    }
}

/// The kinds, each with its collection, upstream message and an object using its fields.
fn objects() -> Vec<(&'static str, &'static str, Value)> {
    vec![
        (
            "/api/v1/namespaces/default/pods",
            ".k8s.io.api.core.v1.Pod",
            json!({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "pb-pod", "labels": {"app": "web"},
                             "annotations": {"note": "protobuf"}},
                "spec": {
                    "nodeName": "node-1",
                    "terminationGracePeriodSeconds": 3_000_000_000_i64,
                    "activeDeadlineSeconds": 3600,
                    // false on the wire is kept (proto2 presence), not defaulted to true.
                    "enableServiceLinks": false,
                    "containers": [{
                        "name": "c", "image": "nginx:1.27",
                        "args": ["-g", "daemon off;"],
                        "ports": [{"containerPort": 80, "protocol": "TCP"}],
                        "env": [{"name": "A", "value": "1"}],
                        "resources": {"limits": {"cpu": "100m", "memory": "64Mi"},
                                      "requests": {"cpu": "50m"}},
                    }],
                },
            }),
        ),
        (
            "/api/v1/namespaces/default/events",
            ".k8s.io.api.core.v1.Event",
            json!({
                "apiVersion": "v1", "kind": "Event",
                "metadata": {"name": "pb-event"},
                "involvedObject": {"kind": "Pod", "name": "pb-pod", "namespace": "default",
                                   "apiVersion": "v1"},
                "reason": "Started", "message": "Started container c", "type": "Normal",
                "count": 3,
                "firstTimestamp": "2026-01-02T03:04:05Z",
                "lastTimestamp": "2026-01-02T03:04:06Z",
                "eventTime": "2026-01-02T03:04:05.123456Z",
                "reportingComponent": "kubelet", "reportingInstance": "node-1",
                "source": {"component": "kubelet", "host": "node-1"},
            }),
        ),
        (
            // client-go's event recorder (tools/events) creates so.
            "/apis/events.k8s.io/v1/namespaces/default/events",
            ".k8s.io.api.events.v1.Event",
            json!({
                "apiVersion": "events.k8s.io/v1", "kind": "Event",
                "metadata": {"name": "pb-event-v1"},
                "eventTime": "2026-01-02T03:04:05.123456Z",
                "series": {"count": 2, "lastObservedTime": "2026-01-02T03:04:07.000001Z"},
                "reportingController": "kubelet", "reportingInstance": "node-1",
                "action": "Pulling", "reason": "Pulled", "note": "Pulled image nginx",
                "type": "Normal",
                "regarding": {"kind": "Pod", "name": "pb-pod", "namespace": "default",
                              "apiVersion": "v1"},
            }),
        ),
        (
            "/apis/coordination.k8s.io/v1/namespaces/default/leases",
            ".k8s.io.api.coordination.v1.Lease",
            json!({
                "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": "pb-lease"},
                "spec": {
                    "holderIdentity": "node-1",
                    "leaseDurationSeconds": 40,
                    "acquireTime": "2026-01-02T03:04:05.000001Z",
                    "renewTime": "2026-01-02T03:04:06.654321Z",
                    "leaseTransitions": 2,
                },
            }),
        ),
    ]
}

async fn started() -> KubeCluster {
    let kube = KubeCluster::start().await;
    wait_system_namespaces(&kube.registry_url()).await;
    kube
}

async fn post(api: SocketAddr, path: &str, body: &[u8]) -> kubestore_tests::rest::Reply {
    call(api, "POST", path, &[PROTOBUF], body).await
}

#[tokio::test(flavor = "multi_thread")]
async fn pods_events_and_leases_in_protobuf_are_stored_with_every_field() {
    let kube = started().await;
    let api = kube.api;
    for (path, message, object) in objects() {
        let kind = object["kind"].as_str().expect("kind");
        let api_version = object["apiVersion"].as_str().expect("apiVersion");
        let body = envelope(message, api_version, kind, &object);
        let created = post(api, path, &body).await;
        assert_eq!(created.code, 201, "{kind}: {created}");
        assert_carried(&object, &created.json(), kind);
        let name = object["metadata"]["name"].as_str().expect("name");
        let stored = get(api, &format!("{path}/{name}")).await.is(200).json();
        assert_carried(&object, &stored, kind);
        // int64s past 32 bits are JSON numbers, as upstream writes them.
        if kind == "Pod" {
            assert_eq!(
                stored["spec"]["terminationGracePeriodSeconds"],
                json!(3_000_000_000_i64),
                "{stored}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_envelope_of_another_kind_is_refused() {
    let kube = started().await;
    let api = kube.api;
    let (path, message, object) = objects().remove(0);
    // A Pod's bytes, in an envelope that says Lease, sent to pods.
    let body = envelope(message, "coordination.k8s.io/v1", "Lease", &object);
    let r = post(api, path, &body).await;
    let status = assert_status(&r, 400, "BadRequest");
    assert!(
        status["message"]
            .as_str()
            .is_some_and(|m| m.contains("must be of type Pod")),
        "{r}"
    );
    get(api, &format!("{path}/pb-pod")).await.is(404);
}
