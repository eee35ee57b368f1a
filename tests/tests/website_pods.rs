//! Upstream's own documentation examples of Pods (kubernetes/website `content/en/examples/pods/`,
//! issue 31, point 5, for the fields modelled so far) apply with kubectl's default validation
//! (1.33 and 1.37), read back as a real cluster serves them (as written, plus upstream's
//! defaults), and apply again unchanged:
//! - where a container's variables come from: `env[].valueFrom` (the downward API's `fieldRef`
//!   and `resourceFieldRef`, `configMapKeyRef`, `secretKeyRef`; `fieldRef.apiVersion: v1` and a
//!   `divisor` of "0" added) and `envFrom`;
//! - probes (`exec`, `httpGet`, `tcpSocket`, `grpc`; timeout 1, period 10, thresholds 1 and 3,
//!   scheme HTTP and a gRPC service "" added) and lifecycle hooks.
//!
//! Bad sources, probes and hooks are refused with upstream's paths and words.

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

/// A probe as served: what the example wrote, and upstream's defaults where it wrote none.
fn probe(handler: Value, written: Value) -> Value {
    let mut p = json!({"timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1,
                       "failureThreshold": 3});
    for (k, v) in handler
        .as_object()
        .into_iter()
        .chain(written.as_object())
        .flatten()
    {
        p[k] = v.clone();
    }
    p
}

/// Each example: its file, its pod's name, and fields of its first container as a 1.33
/// cluster serves them (a field absent there is `null`).
fn examples() -> Vec<(&'static str, &'static str, Value)> {
    let var = |name: &str, from: Value| json!({"name": name, "valueFrom": from});
    vec![
        (
            "dapi-envars-pod.yaml",
            "dapi-envars-fieldref",
            json!({"envFrom": null, "env": [
                var("MY_NODE_NAME", field_ref("spec.nodeName")),
                var("MY_POD_NAME", field_ref("metadata.name")),
                var("MY_POD_NAMESPACE", field_ref("metadata.namespace")),
                var("MY_POD_IP", field_ref("status.podIP")),
                var("MY_POD_SERVICE_ACCOUNT", field_ref("spec.serviceAccountName")),
            ]}),
        ),
        (
            "dapi-envars-container.yaml",
            "dapi-envars-resourcefieldref",
            json!({"env": [
                var("MY_CPU_REQUEST", resource_ref("requests.cpu")),
                var("MY_CPU_LIMIT", resource_ref("limits.cpu")),
                var("MY_MEM_REQUEST", resource_ref("requests.memory")),
                var("MY_MEM_LIMIT", resource_ref("limits.memory")),
            ]}),
        ),
        (
            "pod-single-configmap-env-variable.yaml",
            "dapi-test-pod",
            json!({"env": [var(
                "SPECIAL_LEVEL_KEY",
                json!({"configMapKeyRef": {"name": "special-config", "key": "special.how"}})
            )]}),
        ),
        (
            "secret-envars-pod.yaml",
            "secret-envars-test-pod",
            json!({"env": [
                var(
                    "SECRET_USERNAME",
                    json!({"secretKeyRef": {"name": "test-secret", "key": "username"}})
                ),
                var(
                    "SECRET_PASSWORD",
                    json!({"secretKeyRef": {"name": "test-secret", "key": "password"}})
                ),
            ]}),
        ),
        (
            "pod-configmap-envFrom.yaml",
            "dapi-test-pod",
            json!({"env": null, "envFrom": [{"configMapRef": {"name": "special-config"}}]}),
        ),
        (
            "exec-liveness.yaml",
            "liveness-exec",
            json!({"readinessProbe": null, "livenessProbe": probe(
                json!({"exec": {"command": ["cat", "/tmp/healthy"]}}),
                json!({"initialDelaySeconds": 5, "periodSeconds": 5}),
            )}),
        ),
        (
            "http-liveness.yaml",
            "liveness-http",
            json!({"livenessProbe": probe(
                json!({"httpGet": {"path": "/healthz", "port": 8080, "scheme": "HTTP",
                                   "httpHeaders": [{"name": "Custom-Header", "value": "Awesome"}]}}),
                json!({"initialDelaySeconds": 3, "periodSeconds": 3}),
            )}),
        ),
        (
            "tcp-liveness-readiness.yaml",
            "goproxy",
            json!({
                "readinessProbe": probe(json!({"tcpSocket": {"port": 8080}}),
                                        json!({"initialDelaySeconds": 15})),
                "livenessProbe": probe(json!({"tcpSocket": {"port": 8080}}),
                                       json!({"initialDelaySeconds": 15})),
            }),
        ),
        (
            "grpc-liveness.yaml",
            "etcd-with-grpc",
            json!({"livenessProbe": probe(json!({"grpc": {"port": 2379, "service": ""}}),
                                          json!({"initialDelaySeconds": 10}))}),
        ),
        (
            "lifecycle-events.yaml",
            "lifecycle-demo",
            json!({"lifecycle": {
                "postStart": {"exec": {"command": ["/bin/sh", "-c",
                    "echo Hello from the postStart handler > /usr/share/message"]}},
                "preStop": {"exec": {"command": ["/bin/sh", "-c",
                    "nginx -s quit; while killall -0 nginx; do sleep 1; done"]}},
            }}),
        ),
    ]
}

#[tokio::test(flavor = "multi_thread")]
async fn upstreams_examples_apply_and_read_back_with_upstreams_defaults() {
    let c = KubeCluster::start().await;
    for v in [Kubectl::V1_33, Kubectl::V1_37] {
        for (file, name, fields) in examples() {
            // kubectl's default validation: Strict, with the OpenAPI schema.
            c.kubectl(v, &["apply", "-f", &fixture(file)]).run().ok();
            let pod = get(c.api, &format!("{PODS}/{name}")).await.is(200).json();
            let container = &pod["spec"]["containers"][0];
            for (field, want) in fields.as_object().into_iter().flatten() {
                assert_eq!(&container[field], want, "{file}: {field}: {pod}");
            }
            // Applied again: nothing to change.
            let again = c.kubectl(v, &["apply", "-f", &fixture(file)]).run().ok();
            assert!(again.out().contains("unchanged"), "{file}: {again}");
            c.kubectl(v, &["delete", "-f", &fixture(file)]).run().ok();
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_sources_probes_and_hooks_are_refused_with_upstreams_paths_and_words() {
    let c = KubeCluster::start().await;
    // A pod whose container has `fields` (and an init container with `init`).
    let pod = |fields: Value, init: Value| {
        let mut container = json!({"name": "c", "image": "nginx"});
        for (k, v) in fields.as_object().into_iter().flatten() {
            container[k] = v.clone();
        }
        let mut spec = json!({"containers": [container]});
        if !init.is_null() {
            spec["initContainers"] = json!([init]);
        }
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bad"}, "spec": spec})
            .to_string()
    };
    let none = Value::Null;
    for (body, says) in [
        (
            pod(
                json!({"env": [{"name": "A", "value": "x", "valueFrom": field_ref("metadata.name")}]}),
                none.clone(),
            ),
            "spec.containers[0].env[0].valueFrom: Invalid value: \"\": may not be specified when `value` is not empty",
        ),
        (
            pod(
                json!({"env": [{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "spec.restartPolicy"}}}]}),
                none.clone(),
            ),
            "spec.containers[0].env[0].valueFrom.fieldRef.fieldPath: Unsupported value: \"spec.restartPolicy\"",
        ),
        (
            pod(
                json!({"env": [{"name": "A", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu", "divisor": "2"}}}]}),
                none.clone(),
            ),
            "spec.containers[0].env[0].valueFrom.resourceFieldRef.divisor: Invalid value: \"limits.cpu\": only divisor's values 1m and 1 are supported with the cpu resource",
        ),
        (
            pod(
                json!({"env": [{"name": "A", "valueFrom": {"secretKeyRef": {"name": "s"}}}]}),
                none.clone(),
            ),
            "spec.containers[0].env[0].valueFrom.secretKeyRef.key: Required value",
        ),
        (
            pod(json!({"envFrom": [{"prefix": "P_"}]}), none.clone()),
            "spec.containers[0].envFrom: Invalid value: \"\": must specify one of: `configMapRef` or `secretRef`",
        ),
        (
            pod(json!({"livenessProbe": {"periodSeconds": 5}}), none.clone()),
            "spec.containers[0].livenessProbe: Required value: must specify a handler type",
        ),
        (
            pod(
                json!({"readinessProbe": {"tcpSocket": {"port": "8080"}}}),
                none.clone(),
            ),
            "spec.containers[0].readinessProbe.tcpSocket.port: Invalid value: \"8080\": must contain at least one letter (a-z)",
        ),
        (
            pod(
                json!({"livenessProbe": {"httpGet": {"port": 70000}}}),
                none.clone(),
            ),
            "spec.containers[0].livenessProbe.httpGet.port: Invalid value: 70000: must be between 1 and 65535, inclusive",
        ),
        (
            pod(
                json!({"lifecycle": {"preStop": {"sleep": {"seconds": 31}}}}),
                none.clone(),
            ),
            "spec.containers[0].lifecycle.preStop.sleep.seconds: Invalid value: 31: must be non-negative and less than terminationGracePeriodSeconds (30)",
        ),
        (
            pod(
                json!({}),
                json!({"name": "i", "image": "busybox",
                                  "startupProbe": {"exec": {"command": ["true"]}}}),
            ),
            "spec.initContainers[0].startupProbe: Forbidden: may not be set for init containers without restartPolicy=Always",
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
    // A port by name reads back as a name, a number as a number.
    let named = pod(
        json!({"ports": [{"name": "http", "containerPort": 80}],
               "livenessProbe": {"httpGet": {"port": "http"}},
               "readinessProbe": {"tcpSocket": {"port": 80}}}),
        none,
    );
    let made = call(c.api, "POST", PODS, &[JSON], named.as_bytes())
        .await
        .is(201)
        .json();
    let container = &made["spec"]["containers"][0];
    assert_eq!(
        container["livenessProbe"]["httpGet"]["port"],
        json!("http"),
        "{made}"
    );
    assert_eq!(
        container["livenessProbe"]["httpGet"]["path"],
        json!("/"),
        "{made}"
    );
    assert_eq!(
        container["readinessProbe"]["tcpSocket"]["port"],
        json!(80),
        "{made}"
    );
}
