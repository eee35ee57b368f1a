//! Upstream's documentation examples of the rest of a Pod's spec (kubernetes/website
//! `content/en/examples/pods/`, copied verbatim under `fixtures/pods/`): volumes of every common
//! source (downward API, configMap, secret, projected with service account tokens and cluster
//! trust bundles, persistentVolumeClaim, emptyDir, image), pod and container security contexts
//! (seccomp, AppArmor, capabilities, supplemental groups), a shared process namespace, sidecars
//! (`initContainers[].restartPolicy: Always`), resize policies, node and pod affinity,
//! tolerations, topology spread constraints and scheduling gates.
//!
//! Each applies with kubectl 1.33 and 1.37 (default validation), reads back as a 1.33
//! kube-apiserver serves it — as written plus upstream's v1 defaults (`defaultMode: 420`,
//! `fieldRef.apiVersion: v1`, a `divisor` of "0", `spec.securityContext: {}`, `resources: {}`,
//! `serviceAccount` mirroring `serviceAccountName`, requests copied from limits and rounded to
//! milli-units) and what its pod strategy's `PrepareForCreate` adds (a gated pod's
//! `PodScheduled` condition, stamped now; 1.33's AppArmor annotations copied from the fields)
//! — and applies again without changing (kubectl says "unchanged", or "configured" where its
//! diff sees what the server defaulted). What admission would add in a real cluster (the
//! ServiceAccount plugin's `kube-api-access-*` volume) is not the registry's and is not here.
//! Every example is tried before the test fails, listing each difference from a 1.33 cluster.
//!
//! Examples written for later releases, or that need the ServiceAccount admission plugin, are
//! refused in 1.33's words, as are bad pods of the same fields.

use std::path::PathBuf;

use kubestore_tests::{
    kube::{KubeCluster, Kubectl},
    rest::{JSON, assert_status, call, get},
};
use serde_json::{Value, json};

fn fixture(name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/pods")
        .join(name);
    p.to_str().expect("a UTF-8 path").to_string()
}

/// Spec fields compared for every example, and what a 1.33 cluster serves for an example that
/// does not write them (`null`: absent).
fn spec_defaults() -> Value {
    json!({
        "volumes": null, "securityContext": {}, "affinity": null, "tolerations": null,
        "topologySpreadConstraints": null, "schedulingGates": null, "initContainers": null,
        "serviceAccountName": null, "serviceAccount": null, "shareProcessNamespace": null,
        "dnsPolicy": "ClusterFirst", "restartPolicy": "Always",
    })
}

/// The first container's fields compared for every example, with their defaults.
fn container_defaults() -> Value {
    json!({
        "volumeMounts": null, "securityContext": null, "resources": {}, "resizePolicy": null,
        "restartPolicy": null,
    })
}

/// What stands for a time the server stamps (compared as "any RFC 3339 time in seconds").
const A_TIME: &str = "<a time>";

/// An init container as served: upstream's container defaults (`imagePullPolicy` from the
/// tag, the termination message's path and policy, `resources: {}`) and what it wrote.
fn init(name: &str, image: &str, written: Value) -> Value {
    let tag = image.rsplit_once(':').map(|(_, t)| t);
    let pull = if tag.is_none_or(|t| t == "latest") {
        "Always"
    } else {
        "IfNotPresent"
    };
    let mut c = json!({
        "name": name, "image": image, "resources": {}, "imagePullPolicy": pull,
        "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
    });
    for (k, v) in written.as_object().into_iter().flatten() {
        c[k] = v.clone();
    }
    c
}

fn field_ref(path: &str) -> Value {
    json!({"apiVersion": "v1", "fieldPath": path})
}

fn mount(name: &str, path: &str) -> Value {
    json!({"name": name, "mountPath": path})
}

fn read_only(name: &str, path: &str) -> Value {
    json!({"name": name, "mountPath": path, "readOnly": true})
}

/// One example: its file, namespace and pod name, the spec fields and the first container's
/// fields a 1.33 cluster serves where they differ from the defaults above, other places (JSON
/// pointers into the pod) with what they hold, and what kubectl says when it is applied again.
struct Example {
    file: &'static str,
    namespace: &'static str,
    name: &'static str,
    spec: Value,
    container: Value,
    also: Vec<(&'static str, Value)>,
    reapply: &'static str,
}

fn ex(file: &'static str, name: &'static str, spec: Value, container: Value) -> Example {
    Example {
        file,
        namespace: "default",
        name,
        spec,
        container,
        also: Vec::new(),
        reapply: "unchanged",
    }
}

/// kubectl's client-side apply diffs the file against the live pod: a list without a merge
/// key (`downwardAPI.items`, `projected.sources`) that the server defaulted, or a quantity it
/// rewrote, differs from the file, so kubectl sends the file's version back (the server
/// defaults it again: the pod does not change) and says "configured".
const CONFIGURED: &str = "configured";

fn examples() -> Vec<Example> {
    let busybox = "registry.k8s.io/busybox:1.27.2";
    let secret = |name: &str, items: Value| {
        let mut s = json!({"name": name});
        if !items.is_null() {
            s["items"] = items;
        }
        json!({"secret": s})
    };
    let resource_item = |path: &str, resource: &str, divisor: &str| {
        json!({"path": path, "resourceFieldRef": {
            "containerName": "client-container", "resource": resource, "divisor": divisor}})
    };
    vec![
        // The downward API: fieldRef gets its apiVersion, the volume its mode (so the items,
        // a list without a merge key, differ from the file's for kubectl).
        Example {
            reapply: CONFIGURED,
            ..ex(
                "dapi-volume.yaml",
                "kubernetes-downwardapi-volume-example",
                json!({"volumes": [{"name": "podinfo", "downwardAPI": {
                    "items": [
                        {"path": "labels", "fieldRef": field_ref("metadata.labels")},
                        {"path": "annotations", "fieldRef": field_ref("metadata.annotations")},
                    ],
                    "defaultMode": 420,
                }}]}),
                json!({"volumeMounts": [mount("podinfo", "/etc/podinfo")]}),
            )
        },
        // Divisors as written; limits and requests as written (no resizePolicy: 1.33 stopped
        // defaulting it).
        ex(
            "dapi-volume-resources.yaml",
            "kubernetes-downwardapi-volume-example-2",
            json!({"volumes": [{"name": "podinfo", "downwardAPI": {
                "items": [
                    resource_item("cpu_limit", "limits.cpu", "1m"),
                    resource_item("cpu_request", "requests.cpu", "1m"),
                    resource_item("mem_limit", "limits.memory", "1Mi"),
                    resource_item("mem_request", "requests.memory", "1Mi"),
                ],
                "defaultMode": 420,
            }}]}),
            json!({
                "volumeMounts": [mount("podinfo", "/etc/podinfo")],
                "resources": {"limits": {"cpu": "250m", "memory": "64Mi"},
                              "requests": {"cpu": "125m", "memory": "32Mi"}},
            }),
        ),
        ex(
            "pod-configmap-volume.yaml",
            "dapi-test-pod",
            json!({
                "volumes": [{"name": "config-volume",
                             "configMap": {"name": "special-config", "defaultMode": 420}}],
                "restartPolicy": "Never",
            }),
            json!({"volumeMounts": [mount("config-volume", "/etc/config")]}),
        ),
        ex(
            "pod-configmap-volume-specific-key.yaml",
            "dapi-test-pod",
            json!({
                "volumes": [{"name": "config-volume", "configMap": {
                    "name": "special-config",
                    "items": [{"key": "SPECIAL_LEVEL", "path": "keys"}],
                    "defaultMode": 420,
                }}],
                "restartPolicy": "Never",
            }),
            json!({"volumeMounts": [mount("config-volume", "/etc/config")]}),
        ),
        // The secret need not exist.
        ex(
            "secret-pod.yaml",
            "secret-test-pod",
            json!({"volumes": [{"name": "secret-volume",
                                "secret": {"secretName": "test-secret", "defaultMode": 420}}]}),
            json!({"volumeMounts": [read_only("secret-volume", "/etc/secret-volume")]}),
        ),
        // Projected volumes: the mode on the volume, none on its sources.
        ex(
            "projected.yaml",
            "test-projected-volume",
            json!({"volumes": [{"name": "all-in-one", "projected": {
                "sources": [secret("user", Value::Null), secret("pass", Value::Null)],
                "defaultMode": 420,
            }}]}),
            json!({"volumeMounts": [read_only("all-in-one", "/projected-volume")]}),
        ),
        Example {
            reapply: CONFIGURED,
            ..ex(
                "projected-secret-downwardapi-configmap.yaml",
                "volume-test",
                json!({"volumes": [{"name": "all-in-one", "projected": {
                    "sources": [
                        secret("mysecret", json!([{"key": "username", "path": "my-group/my-username"}])),
                        {"downwardAPI": {"items": [
                            {"path": "labels", "fieldRef": field_ref("metadata.labels")},
                            {"path": "cpu_limit", "resourceFieldRef": {
                                "containerName": "container-test", "resource": "limits.cpu",
                                "divisor": "0"}},
                        ]}},
                        {"configMap": {"name": "myconfigmap",
                                       "items": [{"key": "config", "path": "my-group/my-config"}]}},
                    ],
                    "defaultMode": 420,
                }}]}),
                json!({"volumeMounts": [read_only("all-in-one", "/projected-volume")]}),
            )
        },
        ex(
            "projected-secrets-nondefault-permission-mode.yaml",
            "volume-test",
            json!({"volumes": [{"name": "all-in-one", "projected": {
                "sources": [
                    secret("mysecret", json!([{"key": "username", "path": "my-group/my-username"}])),
                    secret("mysecret2", json!([{"key": "password", "path": "my-group/my-password",
                                                "mode": 511}])),
                ],
                "defaultMode": 420,
            }}]}),
            json!({"volumeMounts": [read_only("all-in-one", "/projected-volume")]}),
        ),
        // serviceAccountName written: serviceAccount mirrors it.
        ex(
            "projected-service-account-token.yaml",
            "sa-token-test",
            json!({
                "volumes": [{"name": "token-vol", "projected": {
                    "sources": [{"serviceAccountToken": {"audience": "api",
                                                         "expirationSeconds": 3600,
                                                         "path": "token"}}],
                    "defaultMode": 420,
                }}],
                "serviceAccountName": "default",
                "serviceAccount": "default",
            }),
            json!({"volumeMounts": [read_only("token-vol", "/service-account")]}),
        ),
        // ClusterTrustBundle projections (beta in 1.33; every gate on here).
        ex(
            "projected-clustertrustbundle.yaml",
            "sa-ctb-name-test",
            json!({
                "volumes": [{"name": "token-vol", "projected": {
                    "sources": [
                        {"clusterTrustBundle": {"name": "example", "path": "example-roots.pem"}},
                        {"clusterTrustBundle": {
                            "signerName": "example.com/mysigner",
                            "labelSelector": {"matchLabels": {"version": "live"}},
                            "optional": true,
                            "path": "mysigner-roots.pem",
                        }},
                    ],
                    "defaultMode": 420,
                }}],
                "serviceAccountName": "default",
                "serviceAccount": "default",
            }),
            json!({"volumeMounts": [read_only("token-vol", "/root-certificates")]}),
        ),
        // The claim need not exist.
        ex(
            "pv-pod.yaml",
            "task-pv-pod",
            json!({"volumes": [{"name": "task-pv-storage",
                                "persistentVolumeClaim": {"claimName": "task-pv-claim"}}]}),
            json!({"volumeMounts": [mount("task-pv-storage", "/usr/share/nginx/html")]}),
        ),
        // A limit without a request: the request copies the limit; "0.1" reads back "100m"
        // (SetDefaults_ResourceList), which differs from the file's for kubectl.
        Example {
            reapply: CONFIGURED,
            ..ex(
                "redis-pod.yaml",
                "redis",
                json!({"volumes": [
                    {"name": "data", "emptyDir": {}},
                    {"name": "config", "configMap": {
                        "name": "example-redis-config",
                        "items": [{"key": "redis-config", "path": "redis.conf"}],
                        "defaultMode": 420,
                    }},
                ]}),
                json!({
                    "volumeMounts": [mount("data", "/data"), mount("config", "/usr/local/etc/redis")],
                    "resources": {"limits": {"cpu": "100m"}, "requests": {"cpu": "100m"}},
                }),
            )
        },
        ex(
            "shared-volume.yaml",
            "shared-volume-example",
            json!({
                "volumes": [{"name": "content", "emptyDir": {"sizeLimit": "10Mi"}}],
                "initContainers": [init("content-writer", busybox, json!({
                    "command": ["sh", "-c",
                                "echo \"Hello from the init container\" > /content/index.html"],
                    "volumeMounts": [mount("content", "/content")],
                }))],
            }),
            json!({"volumeMounts": [read_only("content", "/usr/share/nginx/html")]}),
        ),
        ex(
            "init-containers.yaml",
            "init-demo",
            json!({
                "volumes": [{"name": "workdir", "emptyDir": {}}],
                "initContainers": [init("install", "busybox:1.28", json!({
                    "command": ["wget", "-O", "/work-dir/index.html", "http://info.cern.ch"],
                    "volumeMounts": [mount("workdir", "/work-dir")],
                }))],
                "dnsPolicy": "Default",
            }),
            json!({"volumeMounts": [mount("workdir", "/usr/share/nginx/html")]}),
        ),
        // Image volumes (beta in 1.33), with a subPath since 1.33.
        ex(
            "image-volumes.yaml",
            "image-volume",
            json!({"volumes": [{"name": "volume", "image": {
                "reference": "quay.io/crio/artifact:v2", "pullPolicy": "IfNotPresent"}}]}),
            json!({"volumeMounts": [mount("volume", "/volume")]}),
        ),
        ex(
            "image-volumes-subpath.yaml",
            "image-volume",
            json!({"volumes": [{"name": "volume", "image": {
                "reference": "quay.io/crio/artifact:v2", "pullPolicy": "IfNotPresent"}}]}),
            json!({"volumeMounts": [{"name": "volume", "mountPath": "/volume",
                                     "subPath": "dir"}]}),
        ),
        // Sidecars: an init container that restarts Always may have a startup probe (its
        // defaults added) and resources.
        ex(
            "startup-coordination.yaml",
            "startup-coordination-example",
            json!({
                "volumes": [{"name": "config", "emptyDir": {}}],
                "initContainers": [init("config-sidecar", busybox, json!({
                    "restartPolicy": "Always",
                    "command": ["sh", "-c",
                                "echo \"greeting=hello\" > /config/app.conf; while true; do sleep 3600; done"],
                    "startupProbe": {"exec": {"command": ["test", "-f", "/config/app.conf"]},
                                     "timeoutSeconds": 1, "periodSeconds": 2,
                                     "successThreshold": 1, "failureThreshold": 3},
                    "volumeMounts": [mount("config", "/config")],
                }))],
            }),
            json!({"volumeMounts": [mount("config", "/config")]}),
        ),
        ex(
            "multi-container-resources.yaml",
            "resources-example",
            json!({"initContainers": [
                init("setup", busybox, json!({
                    "command": ["sh", "-c", "echo setting up"],
                    "resources": {"requests": {"cpu": "200m", "memory": "64Mi"},
                                  "limits": {"memory": "64Mi"}},
                })),
                init("log-shipper", busybox, json!({
                    "restartPolicy": "Always",
                    "command": ["sh", "-c", "while true; do sleep 3600; done"],
                    "resources": {"requests": {"cpu": "50m", "memory": "64Mi"},
                                  "limits": {"memory": "64Mi"}},
                })),
            ]}),
            json!({"resources": {"requests": {"cpu": "300m", "memory": "128Mi"},
                                 "limits": {"memory": "128Mi"}}}),
        ),
        Example {
            namespace: "qos-example",
            ..ex(
                "pod-resize.yaml",
                "resize-demo",
                json!({}),
                json!({
                    "resizePolicy": [
                        {"resourceName": "cpu", "restartPolicy": "NotRequired"},
                        {"resourceName": "memory", "restartPolicy": "RestartContainer"},
                    ],
                    "resources": {"limits": {"cpu": "700m", "memory": "200Mi"},
                                  "requests": {"cpu": "700m", "memory": "200Mi"}},
                }),
            )
        },
        // Security contexts, as written.
        ex(
            "security-context.yaml",
            "security-context-demo",
            json!({
                "securityContext": {"runAsUser": 1000, "fsGroup": 2000},
                "volumes": [{"name": "sec-ctx-vol", "emptyDir": {}}],
            }),
            json!({
                "volumeMounts": [mount("sec-ctx-vol", "/data/demo")],
                "securityContext": {"allowPrivilegeEscalation": false},
            }),
        ),
        ex(
            "security-context-2.yaml",
            "security-context-demo-2",
            json!({"securityContext": {"runAsUser": 1000}}),
            json!({"securityContext": {"runAsUser": 2000, "allowPrivilegeEscalation": false}}),
        ),
        ex(
            "security-context-4.yaml",
            "security-context-demo-4",
            json!({}),
            json!({"securityContext": {"capabilities": {"add": ["NET_ADMIN", "SYS_TIME"]}}}),
        ),
        ex(
            "security-context-5.yaml",
            "security-context-demo",
            json!({"securityContext": {"runAsUser": 1000, "runAsGroup": 3000,
                                       "supplementalGroups": [4000]}}),
            json!({"securityContext": {"allowPrivilegeEscalation": false}}),
        ),
        ex(
            "security-context-6.yaml",
            "security-context-demo",
            json!({"securityContext": {"runAsUser": 1000, "runAsGroup": 3000,
                                       "supplementalGroups": [4000],
                                       "supplementalGroupsPolicy": "Strict"}}),
            json!({"securityContext": {"allowPrivilegeEscalation": false}}),
        ),
        // A seccomp field is not copied to the annotations (that stopped in 1.25).
        Example {
            also: vec![(
                "/metadata/annotations/seccomp.security.alpha.kubernetes.io~1pod",
                Value::Null,
            )],
            ..ex(
                "audit-pod.yaml",
                "audit-pod",
                json!({"securityContext": {"seccompProfile": {
                    "type": "Localhost", "localhostProfile": "profiles/audit.json"}}}),
                json!({"securityContext": {"allowPrivilegeEscalation": false}}),
            )
        },
        // An AppArmor field is copied to each container's deprecated annotation in 1.33
        // (applyAppArmorVersionSkew; 1.34 stopped that).
        Example {
            also: vec![(
                "/metadata/annotations/container.apparmor.security.beta.kubernetes.io~1hello",
                json!("localhost/k8s-apparmor-example-allow-write"),
            )],
            ..ex(
                "hello-apparmor-2.yaml",
                "hello-apparmor-2",
                json!({"securityContext": {"appArmorProfile": {
                    "type": "Localhost",
                    "localhostProfile": "k8s-apparmor-example-allow-write"}}}),
                json!({}),
            )
        },
        Example {
            also: vec![
                ("/spec/containers/1/stdin", json!(true)),
                ("/spec/containers/1/tty", json!(true)),
            ],
            ..ex(
                "share-process-namespace.yaml",
                "nginx",
                json!({"shareProcessNamespace": true}),
                json!({}),
            )
        },
        // Scheduling, as written.
        ex(
            "pod-with-affinity-anti-affinity.yaml",
            "with-affinity-anti-affinity",
            json!({"affinity": {"nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "kubernetes.io/os", "operator": "In",
                                           "values": ["linux"]}]},
                ]},
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 1, "preference": {"matchExpressions": [
                        {"key": "label-1", "operator": "In", "values": ["key-1"]}]}},
                    {"weight": 50, "preference": {"matchExpressions": [
                        {"key": "label-2", "operator": "In", "values": ["key-2"]}]}},
                ],
            }}}),
            json!({}),
        ),
        ex(
            "pod-with-pod-affinity.yaml",
            "with-pod-affinity",
            json!({"affinity": {
                "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
                    "labelSelector": {"matchExpressions": [
                        {"key": "security", "operator": "In", "values": ["S1"]}]},
                    "topologyKey": "topology.kubernetes.io/zone",
                }]},
                "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
                    "weight": 100,
                    "podAffinityTerm": {
                        "labelSelector": {"matchExpressions": [
                            {"key": "security", "operator": "In", "values": ["S2"]}]},
                        "topologyKey": "topology.kubernetes.io/zone",
                    },
                }]},
            }}),
            json!({}),
        ),
        ex(
            "pod-with-toleration.yaml",
            "nginx",
            json!({"tolerations": [{"key": "example-key", "operator": "Exists",
                                    "effect": "NoSchedule"}]}),
            json!({}),
        ),
        // A gated pod starts with a PodScheduled condition saying why, stamped now
        // (podutil.UpdatePodCondition).
        Example {
            also: vec![(
                "/status/conditions",
                json!([{
                    "type": "PodScheduled", "status": "False",
                    "lastProbeTime": null, "lastTransitionTime": A_TIME,
                    "reason": "SchedulingGated",
                    "message": "Scheduling is blocked due to non-empty scheduling gates",
                }]),
            )],
            ..ex(
                "pod-with-scheduling-gates.yaml",
                "test-pod",
                json!({"schedulingGates": [{"name": "example.com/foo"},
                                           {"name": "example.com/bar"}]}),
                json!({}),
            )
        },
        ex(
            "two-constraints.yaml",
            "mypod",
            json!({"topologySpreadConstraints": [
                {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
                 "labelSelector": {"matchLabels": {"foo": "bar"}}},
                {"maxSkew": 1, "topologyKey": "node", "whenUnsatisfiable": "DoNotSchedule",
                 "labelSelector": {"matchLabels": {"foo": "bar"}}},
            ]}),
            json!({}),
        ),
    ]
}

/// Whether `s` is an RFC 3339 time in whole seconds, UTC (`2025-01-02T03:04:05Z`), as Go's
/// metav1.Time writes it.
fn is_time(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 20
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            10 => *c == b'T',
            13 | 16 => *c == b':',
            19 => *c == b'Z',
            _ => c.is_ascii_digit(),
        })
}

/// `v` with each `lastTransitionTime` that holds a time replaced by [`A_TIME`].
fn stamped(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, x)| {
                    let x = match x.as_str() {
                        Some(t) if k == "lastTransitionTime" && is_time(t) => json!(A_TIME),
                        _ => stamped(x),
                    };
                    (k.clone(), x)
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(stamped).collect()),
        _ => v.clone(),
    }
}

/// `defaults` with `written` laid over it.
fn over(defaults: Value, written: &Value) -> Value {
    let mut want = defaults;
    for (k, v) in written.as_object().into_iter().flatten() {
        want[k] = v.clone();
    }
    want
}

#[tokio::test(flavor = "multi_thread")]
async fn upstreams_spec_examples_apply_and_read_back_with_upstreams_defaults() {
    let c = KubeCluster::start().await;
    // pod-resize.yaml's pod lives in its own namespace.
    c.kubectl(Kubectl::V1_37, &["create", "namespace", "qos-example"])
        .run()
        .ok();
    // Every example is tried; what differs from a 1.33 cluster is listed at the end.
    let mut problems = Vec::new();
    for v in [Kubectl::V1_33, Kubectl::V1_37] {
        for e in examples() {
            let (file, k) = (e.file, v.minor());
            let path = format!("/api/v1/namespaces/{}/pods/{}", e.namespace, e.name);
            // kubectl's default validation: Strict, with the OpenAPI schema.
            let r = c.kubectl(v, &["apply", "-f", &fixture(file)]).run();
            if !r.succeeded() {
                problems.push(format!("kubectl {k} apply {file}: {}", r.err()));
                continue;
            }
            let pod = get(c.api, &path).await.is(200).json();
            let mut differs = |at: String, got: Value, want: Value| {
                if got != want {
                    problems.push(format!(
                        "kubectl {k} apply {file}: {at}:\n    got  {got}\n    want {want}"
                    ));
                }
            };
            let spec = &pod["spec"];
            for (field, want) in over(spec_defaults(), &e.spec)
                .as_object()
                .into_iter()
                .flatten()
            {
                differs(format!("spec.{field}"), spec[field].clone(), want.clone());
            }
            let container = &spec["containers"][0];
            for (field, want) in over(container_defaults(), &e.container)
                .as_object()
                .into_iter()
                .flatten()
            {
                differs(
                    format!("spec.containers[0].{field}"),
                    container[field].clone(),
                    want.clone(),
                );
            }
            let mut also = e.also;
            if !also.iter().any(|(at, _)| *at == "/status/conditions") {
                also.push(("/status/conditions", Value::Null));
            }
            for (at, want) in also {
                let got = pod.pointer(at).map(stamped).unwrap_or(Value::Null);
                differs(at.to_string(), got, want);
            }
            // Applied again: nothing changes (kubectl says so, or sends back what the server
            // only defaulted).
            let r = c.kubectl(v, &["apply", "-f", &fixture(file)]).run();
            let want = format!("pod/{} {}", e.name, e.reapply);
            if !r.succeeded() || r.out() != want {
                problems.push(format!(
                    "kubectl {k} apply {file} again: got {:?} {:?}, want {want:?}",
                    r.out(),
                    r.err()
                ));
            }
            let after = get(c.api, &path).await.is(200).json();
            if after["spec"] != pod["spec"] {
                problems.push(format!(
                    "kubectl {k} apply {file} again changed the spec:\n    {}\n    {}",
                    pod["spec"], after["spec"]
                ));
            }
            c.kubectl(v, &["delete", "-f", &fixture(file)]).run().ok();
        }
    }
    assert!(
        problems.is_empty(),
        "{} differences from a 1.33 cluster:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn examples_of_later_releases_and_bad_specs_are_refused_in_upstreams_words() {
    let c = KubeCluster::start().await;
    const PODS: &str = "/api/v1/namespaces/default/pods";
    // Documented for releases after 1.33: a numeric toleration operator (refused by
    // validation), an emptyDir's mode (unknown to 1.33: refused by strict decoding).
    let file = fixture("pod-with-numeric-toleration.yaml");
    let r = c
        .kubectl(Kubectl::V1_33, &["apply", "-f", &file])
        .run()
        .fails();
    assert_eq!(
        r.err(),
        "The Pod \"nginx-numeric-toleration\" is invalid: spec.tolerations[0].operator: Unsupported value: \"Gt\": supported values: \"Equal\", \"Exists\"",
        "{r}"
    );
    get(c.api, &format!("{PODS}/nginx-numeric-toleration"))
        .await
        .is(404);
    let file = fixture("emptydir-volume-mode.yaml");
    let r = c
        .kubectl(Kubectl::V1_33, &["apply", "-f", &file])
        .run()
        .fails();
    assert_eq!(
        r.err(),
        format!(
            "Error from server (BadRequest): error when creating \"{file}\": Pod in version \"v1\" cannot be handled as a Pod: strict decoding error: unknown field \"spec.volumes[0].emptyDir.mode\""
        ),
        "{r}"
    );
    get(c.api, &format!("{PODS}/emptydir-mode-demo"))
        .await
        .is(404);
    // A token projection in a pod naming no service account: a real cluster's ServiceAccount
    // admission plugin names "default" before validation; the registry alone (as a
    // kube-apiserver without that plugin) refuses it.
    let file = fixture("pod-projected-svc-token.yaml");
    let r = c
        .kubectl(Kubectl::V1_33, &["apply", "-f", &file])
        .run()
        .fails();
    assert_eq!(
        r.err(),
        "The Pod \"nginx\" is invalid: spec.volumes[0].projected.sources[0].serviceAccountToken: Forbidden: must not be specified when serviceAccountName is not set",
        "{r}"
    );

    // Bad pods as JSON: the pod "bad" with `spec` laid over one container.
    let pod = |spec: Value| {
        let mut s = json!({"containers": [{"name": "c", "image": "nginx"}]});
        for (k, v) in spec.as_object().into_iter().flatten() {
            s[k] = v.clone();
        }
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bad"}, "spec": s})
            .to_string()
    };
    for (body, says) in [
        (
            pod(json!({"volumes": [{"name": "v", "emptyDir": {}, "configMap": {"name": "c"}}]})),
            "spec.volumes[0].configMap: Forbidden: may not specify more than 1 volume type",
        ),
        (
            pod(json!({"containers": [{"name": "c", "image": "nginx",
                                       "volumeMounts": [{"name": "x", "mountPath": "/x"}]}]})),
            "spec.containers[0].volumeMounts[0].name: Not found: \"x\"",
        ),
        (
            pod(json!({"shareProcessNamespace": true, "hostPID": true})),
            "spec.securityContext.shareProcessNamespace: Invalid value: true: ShareProcessNamespace and HostPID cannot both be enabled",
        ),
        (
            pod(json!({"tolerations": [{"key": "k", "operator": "Exists",
                                        "effect": "NoSchedule", "tolerationSeconds": 60}]})),
            "spec.tolerations[0].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' when `tolerationSeconds` is set",
        ),
        (
            pod(json!({"topologySpreadConstraints": [{
                "maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "web"}}}]})),
            "spec.topologySpreadConstraints[0].maxSkew: Invalid value: 0: must be greater than zero",
        ),
        (
            pod(json!({"initContainers": [{"name": "i", "image": "busybox",
                                           "restartPolicy": "Never"}]})),
            "spec.initContainers[0].restartPolicy: Unsupported value: \"Never\": supported values: \"Always\"",
        ),
    ] {
        let r = call(c.api, "POST", PODS, &[JSON], body.as_bytes()).await;
        let s = assert_status(&r, 422, "Invalid");
        // One cause each, so the message is that cause alone.
        assert_eq!(
            s["message"],
            json!(format!("Pod \"bad\" is invalid: {says}")),
            "{body}: {r}"
        );
    }
    get(c.api, &format!("{PODS}/bad")).await.is(404);
}
