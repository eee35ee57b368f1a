//! Where a container's variables come from (issue 31, point 5, its first part): upstream's own
//! documentation examples of `env[].valueFrom` (the downward API's `fieldRef` and
//! `resourceFieldRef`, `configMapKeyRef`, `secretKeyRef`) and `envFrom` apply with kubectl's
//! default validation (1.33 and 1.37) and read back as a real cluster serves them: as written,
//! plus upstream's `fieldRef.apiVersion: v1` and a `divisor` of "0". A bad source is refused
//! with upstream's path and words.

use std::path::PathBuf;

use kubestore_tests::{
    kube::{KubeCluster, Kubectl},
    rest::{JSON, assert_status, call, get},
};
use serde_json::{Value, json};

const PODS: &str = "/api/v1/namespaces/default/pods";

fn fixture(name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/pods")
        .join(name);
    p.to_str().expect("a UTF-8 path").to_string()
}

fn field_ref(path: &str) -> Value {
    json!({"fieldRef": {"apiVersion": "v1", "fieldPath": path}})
}

fn resource_ref(resource: &str) -> Value {
    json!({"resourceFieldRef": {"containerName": "test-container", "divisor": "0",
                                "resource": resource}})
}

/// Each example: its file, its pod's name, and the first container's `env` and `envFrom` as a
/// 1.33 cluster serves them.
fn examples() -> Vec<(&'static str, &'static str, Value, Value)> {
    let var = |name: &str, from: Value| json!({"name": name, "valueFrom": from});
    vec![
        (
            "dapi-envars-pod.yaml",
            "dapi-envars-fieldref",
            json!([
                var("MY_NODE_NAME", field_ref("spec.nodeName")),
                var("MY_POD_NAME", field_ref("metadata.name")),
                var("MY_POD_NAMESPACE", field_ref("metadata.namespace")),
                var("MY_POD_IP", field_ref("status.podIP")),
                var(
                    "MY_POD_SERVICE_ACCOUNT",
                    field_ref("spec.serviceAccountName")
                ),
            ]),
            Value::Null,
        ),
        (
            "dapi-envars-container.yaml",
            "dapi-envars-resourcefieldref",
            json!([
                var("MY_CPU_REQUEST", resource_ref("requests.cpu")),
                var("MY_CPU_LIMIT", resource_ref("limits.cpu")),
                var("MY_MEM_REQUEST", resource_ref("requests.memory")),
                var("MY_MEM_LIMIT", resource_ref("limits.memory")),
            ]),
            Value::Null,
        ),
        (
            "pod-single-configmap-env-variable.yaml",
            "dapi-test-pod",
            json!([var(
                "SPECIAL_LEVEL_KEY",
                json!({"configMapKeyRef": {"name": "special-config", "key": "special.how"}})
            )]),
            Value::Null,
        ),
        (
            "secret-envars-pod.yaml",
            "secret-envars-test-pod",
            json!([
                var(
                    "SECRET_USERNAME",
                    json!({"secretKeyRef": {"name": "test-secret", "key": "username"}})
                ),
                var(
                    "SECRET_PASSWORD",
                    json!({"secretKeyRef": {"name": "test-secret", "key": "password"}})
                ),
            ]),
            Value::Null,
        ),
        (
            "pod-configmap-envFrom.yaml",
            "dapi-test-pod",
            Value::Null,
            json!([{"configMapRef": {"name": "special-config"}}]),
        ),
    ]
}

#[tokio::test(flavor = "multi_thread")]
async fn upstreams_examples_apply_and_read_back_with_upstreams_defaults() {
    let c = KubeCluster::start().await;
    for v in [Kubectl::V1_33, Kubectl::V1_37] {
        for (file, name, env, env_from) in examples() {
            // kubectl's default validation: Strict, with the OpenAPI schema.
            c.kubectl(v, &["apply", "-f", &fixture(file)]).run().ok();
            let pod = get(c.api, &format!("{PODS}/{name}")).await.is(200).json();
            let container = &pod["spec"]["containers"][0];
            assert_eq!(container["env"], env, "{file}: {pod}");
            assert_eq!(container["envFrom"], env_from, "{file}: {pod}");
            // Applied again: nothing to change.
            let again = c.kubectl(v, &["apply", "-f", &fixture(file)]).run().ok();
            assert!(again.out().contains("unchanged"), "{file}: {again}");
            c.kubectl(v, &["delete", "-f", &fixture(file)]).run().ok();
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bad_source_is_refused_with_upstreams_path_and_words() {
    let c = KubeCluster::start().await;
    let pod = |env: Value, env_from: Value| {
        json!({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bad"},
            "spec": {"containers": [{"name": "c", "image": "nginx", "env": env,
                                      "envFrom": env_from}]},
        })
        .to_string()
    };
    for (body, says) in [
        (
            pod(
                json!([{"name": "A", "value": "x", "valueFrom": field_ref("metadata.name")}]),
                json!([]),
            ),
            "spec.containers[0].env[0].valueFrom: Invalid value: \"\": may not be specified when `value` is not empty",
        ),
        (
            pod(
                json!([{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "spec.restartPolicy"}}}]),
                json!([]),
            ),
            "spec.containers[0].env[0].valueFrom.fieldRef.fieldPath: Unsupported value: \"spec.restartPolicy\"",
        ),
        (
            pod(
                json!([{"name": "A", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu", "divisor": "2"}}}]),
                json!([]),
            ),
            "spec.containers[0].env[0].valueFrom.resourceFieldRef.divisor: Invalid value: \"limits.cpu\": only divisor's values 1m and 1 are supported with the cpu resource",
        ),
        (
            pod(
                json!([{"name": "A", "valueFrom": {"secretKeyRef": {"name": "s"}}}]),
                json!([]),
            ),
            "spec.containers[0].env[0].valueFrom.secretKeyRef.key: Required value",
        ),
        (
            pod(json!([]), json!([{"prefix": "P_"}])),
            "spec.containers[0].envFrom: Invalid value: \"\": must specify one of: `configMapRef` or `secretRef`",
        ),
    ] {
        let r = call(c.api, "POST", PODS, &[JSON], body.as_bytes()).await;
        let s = assert_status(&r, 422, "Invalid");
        assert!(
            s["message"].as_str().is_some_and(|m| m.contains(says)),
            "{says}: {r}"
        );
    }
    get(c.api, &format!("{PODS}/bad")).await.is(404);
}
