//! Upstream's cases: the evaluators' (`pkg/quota/v1/evaluator/core`: `pods_test.go`,
//! `services_test.go`, `persistent_volume_claims_test.go`), the pod resource helpers'
//! (`component-helpers/resource/helpers_test.go`) and the admission plugin's
//! (`plugin/pkg/admission/resourcequota/admission_test.go`), each named after its upstream
//! test.

use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use super::*;

fn q(s: &str) -> Quantity {
    Quantity::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
}

fn res(pairs: &[(&str, &str)]) -> Usage {
    pairs.iter().map(|(k, v)| (k.to_string(), q(v))).collect()
}

fn strs(pairs: &[(&str, &str)]) -> Value {
    Value::Object(
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), Value::String(v.to_string())))
            .collect(),
    )
}

fn container(name: &str, requests: &[(&str, &str)], limits: &[(&str, &str)]) -> Value {
    json!({"name": name, "resources": {"requests": strs(requests), "limits": strs(limits)}})
}

fn sidecar(name: &str, requests: &[(&str, &str)], limits: &[(&str, &str)]) -> Value {
    let mut c = container(name, requests, limits);
    c["restartPolicy"] = json!("Always");
    c
}

/// upstream's `validPod`: `n` containers with the same requests and limits.
fn valid_pod(n: usize, requests: &[(&str, &str)], limits: &[(&str, &str)]) -> Value {
    let containers: Vec<Value> = (0..n)
        .map(|i| container(&format!("c{i}"), requests, limits))
        .collect();
    json!({"metadata": {"name": "pod", "namespace": "test"}, "spec": {"containers": containers}})
}

fn pod_usage_of(pod: &Value) -> Usage {
    usage("", "pods", pod)
}

/// A charged pod's usage: `pods` and `count/pods` and `extra`.
fn charged(extra: &[(&str, &str)]) -> Usage {
    let mut u = res(&[("pods", "1"), ("count/pods", "1")]);
    u.extend(res(extra));
    u
}

fn now_seconds() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// `TestPodEvaluatorUsage`.
#[test]
fn pod_evaluator_usage() {
    let dongle = [("example.com/dongle", "3")];
    let implicit = [("deviceclass.resource.kubernetes.io/dongle", "3")];
    let past = crate::time::format(now_seconds() - 60, 0);
    let now = crate::time::format(now_seconds(), 0);
    let cases: Vec<(&str, Value, Usage)> = vec![
        (
            "init container CPU",
            json!({"spec": {"initContainers": [
                container("c", &[("cpu", "1m")], &[("cpu", "2m")])]}}),
            charged(&[("requests.cpu", "1m"), ("limits.cpu", "2m"), ("cpu", "1m")]),
        ),
        (
            "init container MEM",
            json!({"spec": {"initContainers": [
                container("c", &[("memory", "1m")], &[("memory", "2m")])]}}),
            charged(&[
                ("requests.memory", "1m"),
                ("limits.memory", "2m"),
                ("memory", "1m"),
            ]),
        ),
        (
            "init container local ephemeral storage",
            json!({"spec": {"initContainers": [container(
                "c",
                &[("ephemeral-storage", "32Mi")],
                &[("ephemeral-storage", "64Mi")]
            )]}}),
            charged(&[
                ("ephemeral-storage", "32Mi"),
                ("requests.ephemeral-storage", "32Mi"),
                ("limits.ephemeral-storage", "64Mi"),
            ]),
        ),
        (
            "init container hugepages",
            json!({"spec": {"initContainers": [
                container("c", &[("hugepages-2Mi", "100Mi")], &[])]}}),
            charged(&[
                ("hugepages-2Mi", "100Mi"),
                ("requests.hugepages-2Mi", "100Mi"),
            ]),
        ),
        (
            "init container extended resources",
            json!({"spec": {"initContainers": [container("c", &dongle, &dongle)]}}),
            charged(&[("requests.example.com/dongle", "3")]),
        ),
        (
            "init container implicit extended resources",
            json!({"spec": {"initContainers": [container("c", &implicit, &implicit)]}}),
            charged(&[("requests.deviceclass.resource.kubernetes.io/dongle", "3")]),
        ),
        (
            "container CPU",
            json!({"spec": {"containers": [
                container("c", &[("cpu", "1m")], &[("cpu", "2m")])]}}),
            charged(&[("requests.cpu", "1m"), ("limits.cpu", "2m"), ("cpu", "1m")]),
        ),
        (
            "container MEM",
            json!({"spec": {"containers": [
                container("c", &[("memory", "1m")], &[("memory", "2m")])]}}),
            charged(&[
                ("requests.memory", "1m"),
                ("limits.memory", "2m"),
                ("memory", "1m"),
            ]),
        ),
        (
            "container local ephemeral storage",
            json!({"spec": {"containers": [container(
                "c",
                &[("ephemeral-storage", "32Mi")],
                &[("ephemeral-storage", "64Mi")]
            )]}}),
            charged(&[
                ("ephemeral-storage", "32Mi"),
                ("requests.ephemeral-storage", "32Mi"),
                ("limits.ephemeral-storage", "64Mi"),
            ]),
        ),
        (
            "container hugepages",
            json!({"spec": {"containers": [
                container("c", &[("hugepages-2Mi", "100Mi")], &[])]}}),
            charged(&[
                ("hugepages-2Mi", "100Mi"),
                ("requests.hugepages-2Mi", "100Mi"),
            ]),
        ),
        (
            "container extended resources",
            json!({"spec": {"containers": [container("c", &dongle, &dongle)]}}),
            charged(&[("requests.example.com/dongle", "3")]),
        ),
        (
            "container implicit extended resources",
            json!({"spec": {"containers": [container("c", &implicit, &implicit)]}}),
            charged(&[("requests.deviceclass.resource.kubernetes.io/dongle", "3")]),
        ),
        (
            "terminated generic count still appears",
            json!({"spec": {"containers": [container("c", &dongle, &dongle)]},
                   "status": {"phase": "Succeeded"}}),
            res(&[("count/pods", "1")]),
        ),
        (
            "init container maximums override sum of containers",
            json!({"spec": {
                "initContainers": [
                    container(
                        "i1",
                        &[("cpu", "4"), ("memory", "100M"), ("example.com/dongle", "4")],
                        &[("cpu", "8"), ("memory", "200M"), ("example.com/dongle", "4")],
                    ),
                    container(
                        "i2",
                        &[("cpu", "1"), ("memory", "50M"), ("example.com/dongle", "2")],
                        &[("cpu", "2"), ("memory", "100M"), ("example.com/dongle", "2")],
                    ),
                ],
                "containers": [
                    container(
                        "c1",
                        &[("cpu", "1"), ("memory", "50M"), ("example.com/dongle", "1")],
                        &[("cpu", "2"), ("memory", "100M"), ("example.com/dongle", "1")],
                    ),
                    container(
                        "c2",
                        &[("cpu", "2"), ("memory", "25M"), ("example.com/dongle", "2")],
                        &[("cpu", "5"), ("memory", "50M"), ("example.com/dongle", "2")],
                    ),
                ],
            }}),
            charged(&[
                ("requests.cpu", "4"),
                ("requests.memory", "100M"),
                ("limits.cpu", "8"),
                ("limits.memory", "200M"),
                ("cpu", "4"),
                ("memory", "100M"),
                ("requests.example.com/dongle", "4"),
            ]),
        ),
        (
            "pod deletion timestamp exceeded",
            json!({
                "metadata": {"deletionTimestamp": past, "deletionGracePeriodSeconds": 30},
                "status": {"reason": "NodeLost"},
                "spec": {"terminationGracePeriodSeconds": 30, "containers": [container(
                    "c",
                    &[("cpu", "1"), ("memory", "50M")],
                    &[("cpu", "2"), ("memory", "100M")],
                )]},
            }),
            res(&[("count/pods", "1")]),
        ),
        (
            "pod deletion timestamp not exceeded",
            json!({
                "metadata": {"deletionTimestamp": now, "deletionGracePeriodSeconds": 30},
                "status": {"reason": "NodeLost"},
                "spec": {"containers": [container("c", &[("cpu", "1")], &[("cpu", "2")])]},
            }),
            charged(&[("requests.cpu", "1"), ("limits.cpu", "2"), ("cpu", "1")]),
        ),
        (
            "count pod overhead as usage",
            json!({"spec": {
                "overhead": {"cpu": "1"},
                "containers": [container("c", &[("cpu", "1")], &[("cpu", "2")])],
            }}),
            charged(&[("requests.cpu", "2"), ("limits.cpu", "3"), ("cpu", "2")]),
        ),
        (
            "pod-level CPU",
            json!({"spec": {"resources": {"requests": {"cpu": "1m"}, "limits": {"cpu": "2m"}}}}),
            charged(&[("requests.cpu", "1m"), ("limits.cpu", "2m"), ("cpu", "1m")]),
        ),
        (
            "pod-level Memory",
            json!({"spec": {"resources": {
                "requests": {"memory": "1Mi"}, "limits": {"memory": "2Mi"}}}}),
            charged(&[
                ("requests.memory", "1Mi"),
                ("limits.memory", "2Mi"),
                ("memory", "1Mi"),
            ]),
        ),
        (
            "pod-level memory with container-level ephemeral storage",
            json!({"spec": {
                "resources": {"requests": {"memory": "1Mi"}, "limits": {"memory": "2Mi"}},
                "containers": [container(
                    "c",
                    &[("ephemeral-storage", "32Mi")],
                    &[("ephemeral-storage", "64Mi")],
                )],
            }}),
            charged(&[
                ("ephemeral-storage", "32Mi"),
                ("requests.ephemeral-storage", "32Mi"),
                ("limits.ephemeral-storage", "64Mi"),
                ("requests.memory", "1Mi"),
                ("limits.memory", "2Mi"),
                ("memory", "1Mi"),
            ]),
        ),
    ];
    for (name, pod, want) in cases {
        assert_eq!(pod_usage_of(&pod), want, "{name}");
    }
}

/// A failed pod is charged its count only, as a succeeded one (`QuotaV1Pod`).
#[test]
fn pod_evaluator_usage_failed_pod() {
    let mut pod = valid_pod(1, &[("cpu", "1")], &[]);
    pod["status"] = json!({"phase": "Failed"});
    assert_eq!(pod_usage_of(&pod), res(&[("count/pods", "1")]));
}

/// Requests as the sidecar formula of `TestPodResourceRequests` aggregates them
/// (component-helpers), and the status resources of a resize.
#[test]
fn pod_resource_requests() {
    let cpu = |pod: Value| pod_usage_of(&pod).get("requests.cpu").copied();
    // "restartable init container": restartable init + regular container.
    assert_eq!(
        cpu(json!({"spec": {
            "initContainers": [sidecar("restartable-init-1", &[("cpu", "1")], &[])],
            "containers": [container("container-1", &[("cpu", "1")], &[])],
        }})),
        Some(q("2"))
    );
    // "multiple restartable init containers": max(5, (3+2+1) + 1) = 7.
    assert_eq!(
        cpu(json!({"spec": {
            "initContainers": [
                container("init-1", &[("cpu", "5")], &[]),
                sidecar("restartable-init-1", &[("cpu", "1")], &[]),
                sidecar("restartable-init-2", &[("cpu", "2")], &[]),
                sidecar("restartable-init-3", &[("cpu", "3")], &[]),
            ],
            "containers": [container("container-1", &[("cpu", "1")], &[])],
        }})),
        Some(q("7"))
    );
    // "multiple restartable and regular init containers": init-2 needs 5 + the sidecars
    // started before it (1+2) = 8; the one started after it does not count.
    assert_eq!(
        cpu(json!({"spec": {
            "initContainers": [
                container("init-1", &[("cpu", "5")], &[]),
                sidecar("restartable-init-1", &[("cpu", "1")], &[]),
                sidecar("restartable-init-2", &[("cpu", "2")], &[]),
                container("init-2", &[("cpu", "5")], &[]),
                sidecar("restartable-init-3", &[("cpu", "3")], &[]),
            ],
            "containers": [container("container-1", &[("cpu", "1")], &[])],
        }})),
        Some(q("8"))
    );
    // "restartable-init, init and regular".
    assert_eq!(
        cpu(json!({"spec": {
            "initContainers": [
                sidecar("restartable-init-1", &[("cpu", "10")], &[]),
                container("init-1", &[("cpu", "200")], &[]),
            ],
            "containers": [container("container-1", &[("cpu", "100")], &[])],
        }})),
        Some(q("210"))
    );
    // "aggregate request resolves max of sums instead of sum of maxes".
    assert_eq!(
        cpu(json!({
            "spec": {"containers": [
                container("c1", &[("cpu", "1")], &[]),
                container("c2", &[("cpu", "2")], &[]),
            ]},
            "status": {"containerStatuses": [
                {"name": "c1", "allocatedResources": {"cpu": "2"}},
                {"name": "c2", "allocatedResources": {"cpu": "1"}},
            ]},
        })),
        Some(q("3"))
    );
    // "resized, infeasible": the spec's request is not taken, the allocated one is.
    assert_eq!(
        cpu(json!({
            "spec": {"containers": [container("container-1", &[("cpu", "4")], &[])]},
            "status": {
                "containerStatuses": [{"name": "container-1", "allocatedResources": {"cpu": "2"}}],
                "conditions": [{"type": "PodResizePending", "status": "True",
                                "reason": "Infeasible"}],
            },
        })),
        Some(q("2"))
    );
    // A resize not yet actuated: the larger of the spec and the status.
    assert_eq!(
        cpu(json!({
            "spec": {"containers": [container("container-1", &[("cpu", "4")], &[])]},
            "status": {"containerStatuses": [{"name": "container-1",
                "allocatedResources": {"cpu": "2"}, "resources": {"requests": {"cpu": "2"}}}]},
        })),
        Some(q("4"))
    );
}

/// Limits as `TestPodResourceLimits` aggregates them (component-helpers).
#[test]
fn pod_resource_limits() {
    let limits = |pod: Value| {
        let u = pod_usage_of(&pod);
        (
            u.get("limits.cpu").copied(),
            u.get("limits.memory").copied(),
        )
    };
    // "pod overhead included": overhead is only added to non-zero limits.
    assert_eq!(
        limits(json!({"spec": {
            "overhead": {"cpu": "1", "memory": "1Gi"},
            "initContainers": [container("i", &[], &[("cpu", "2")])],
            "containers": [
                container("c1", &[], &[("cpu", "2")]),
                container("c2", &[], &[("cpu", "3")]),
            ],
        }})),
        (Some(q("6")), None)
    );
    // "one limited and one unlimited container".
    assert_eq!(
        limits(json!({"spec": {"containers": [
            container("c1", &[], &[("cpu", "2"), ("memory", "2Gi")]),
            {"name": "c2"},
        ]}})),
        (Some(q("2")), Some(q("2Gi")))
    );
    // "multiple restartable and regular init containers".
    assert_eq!(
        limits(json!({"spec": {
            "initContainers": [
                container("init-1", &[], &[("cpu", "5")]),
                sidecar("restartable-init-1", &[], &[("cpu", "1")]),
                sidecar("restartable-init-2", &[], &[("cpu", "2")]),
                container("init-2", &[], &[("cpu", "5")]),
                sidecar("restartable-init-3", &[], &[("cpu", "3")]),
            ],
            "containers": [container("container-1", &[], &[("cpu", "1")])],
        }})),
        (Some(q("8")), None)
    );
    // "pod scaled down": the spec's 2Gi until the status says less.
    assert_eq!(
        limits(json!({
            "spec": {"containers": [container("container-1", &[], &[("memory", "1Gi")])]},
            "status": {"containerStatuses": [{"name": "container-1",
                "resources": {"limits": {"memory": "2Gi"}}}]},
        })),
        (None, Some(q("2Gi")))
    );
}

/// `TestPodEvaluatorUsageStats`: the totals the controller writes.
#[test]
fn pod_evaluator_usage_stats() {
    let make_pod = |phase: &str| {
        let mut pod = valid_pod(1, &[("cpu", "1")], &[("cpu", "1")]);
        pod["status"] = json!({"phase": phase});
        pod
    };
    let hard = res(&[
        ("pods", "10"),
        ("count/pods", "10"),
        ("cpu", "10"),
        ("requests.cpu", "10"),
        ("limits.cpu", "10"),
        ("memory", "10Gi"),
    ]);
    let zero = |mut u: Usage| {
        u.insert("memory".into(), Quantity::ZERO);
        u
    };
    let none: [Value; 0] = [];
    assert_eq!(
        total("", "pods", &none, &hard),
        zero(res(&[
            ("pods", "0"),
            ("count/pods", "0"),
            ("cpu", "0"),
            ("requests.cpu", "0"),
            ("limits.cpu", "0"),
        ])),
        "nil case"
    );
    let running = [make_pod("Running"), make_pod("Running")];
    assert_eq!(
        total("", "pods", &running, &hard),
        zero(res(&[
            ("pods", "2"),
            ("count/pods", "2"),
            ("cpu", "2"),
            ("requests.cpu", "2"),
            ("limits.cpu", "2"),
        ])),
        "all pods in running state"
    );
    let one_done = [make_pod("Running"), make_pod("Succeeded")];
    assert_eq!(
        total("", "pods", &one_done, &hard),
        zero(res(&[
            ("pods", "1"),
            ("count/pods", "2"),
            ("cpu", "1"),
            ("requests.cpu", "1"),
            ("limits.cpu", "1"),
        ])),
        "one pods in terminal state"
    );
    assert_eq!(
        to_json(&total("", "pods", &one_done, &hard)),
        json!({"count/pods": "2", "cpu": "1", "limits.cpu": "1", "memory": "0", "pods": "1",
               "requests.cpu": "1"})
    );
}

/// `TestPodEvaluatorMatchingScopes`.
#[test]
fn pod_evaluator_matching_scopes() {
    let scopes = [
        "Terminating",
        "NotTerminating",
        "BestEffort",
        "NotBestEffort",
        "PriorityClass",
        "CrossNamespacePodAffinity",
    ];
    let matching = |pod: &Value| -> Vec<&'static str> {
        scopes
            .iter()
            .copied()
            .filter(|s| pod_in_scopes(pod, &[s.to_string()]))
            .collect()
    };
    let not_best_effort = valid_pod(
        1,
        &[("cpu", "1"), ("memory", "50M"), ("example.com/dongle", "1")],
        &[
            ("cpu", "2"),
            ("memory", "100M"),
            ("example.com/dongle", "1"),
        ],
    );
    let cross = |affinity: Value| json!({"spec": {"affinity": affinity}});
    let cases: Vec<(&str, Value, Vec<&'static str>)> = vec![
        ("EmptyPod", json!({}), vec!["NotTerminating", "BestEffort"]),
        (
            "PriorityClass",
            json!({"spec": {"priorityClassName": "class1"}}),
            vec!["NotTerminating", "BestEffort", "PriorityClass"],
        ),
        (
            "NotBestEffort",
            not_best_effort,
            vec!["NotTerminating", "NotBestEffort"],
        ),
        (
            "Terminating",
            json!({"spec": {"activeDeadlineSeconds": 30}}),
            vec!["Terminating", "BestEffort"],
        ),
        (
            "OnlyTerminating",
            json!({"spec": {"activeDeadlineSeconds": 0}}),
            vec!["Terminating", "BestEffort"],
        ),
        (
            "CrossNamespaceRequiredAffinity",
            cross(
                json!({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"topologyKey": "k", "namespaces": ["ns1"]}]}}),
            ),
            vec!["NotTerminating", "BestEffort", "CrossNamespacePodAffinity"],
        ),
        (
            "CrossNamespaceRequiredAffinityWithSelector",
            cross(
                json!({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"topologyKey": "k", "namespaceSelector": {}}]}}),
            ),
            vec!["NotTerminating", "BestEffort", "CrossNamespacePodAffinity"],
        ),
        (
            "CrossNamespacePreferredAffinity",
            cross(
                json!({"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "podAffinityTerm": {"topologyKey": "k", "namespaces": ["ns1"]}}]}}),
            ),
            vec!["NotTerminating", "BestEffort", "CrossNamespacePodAffinity"],
        ),
        (
            "CrossNamespaceRequiredAntiAffinity",
            cross(
                json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"topologyKey": "k", "namespaces": ["ns1"]}]}}),
            ),
            vec!["NotTerminating", "BestEffort", "CrossNamespacePodAffinity"],
        ),
        (
            "SameNamespaceAffinity",
            cross(
                json!({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"topologyKey": "k"}]}}),
            ),
            vec!["NotTerminating", "BestEffort"],
        ),
    ];
    for (name, pod, want) in cases {
        assert_eq!(matching(&pod), want, "{name}");
    }
    // Scopes are all required; none matches every pod; unknown names match none.
    let terminating = json!({"spec": {"activeDeadlineSeconds": 30}});
    let both = ["Terminating".to_string(), "BestEffort".to_string()];
    assert!(pod_in_scopes(&terminating, &both));
    assert!(!pod_in_scopes(
        &terminating,
        &["NotTerminating".to_string(), both[1].clone()]
    ));
    assert!(pod_in_scopes(&terminating, &[]));
    assert!(!pod_in_scopes(
        &terminating,
        &["VolumeAttributesClass".to_string()]
    ));
    // The QoS class the status records wins over the containers.
    let recorded = json!({"status": {"qosClass": "Burstable"}});
    assert!(!pod_in_scopes(&recorded, &["BestEffort".to_string()]));
}

/// `TestServiceEvaluatorUsage`.
#[test]
fn service_evaluator_usage() {
    let counts = |lb: &str, np: &str| {
        res(&[
            ("count/services", "1"),
            ("services", "1"),
            ("services.loadbalancers", lb),
            ("services.nodeports", np),
        ])
    };
    let cases: Vec<(&str, Value, Usage)> = vec![
        (
            "loadbalancer",
            json!({"spec": {"type": "LoadBalancer"}}),
            counts("1", "0"),
        ),
        (
            "loadbalancer_ports",
            json!({"spec": {"type": "LoadBalancer", "ports": [{"port": 27443}]}}),
            counts("1", "1"),
        ),
        (
            "clusterip",
            json!({"spec": {"type": "ClusterIP"}}),
            counts("0", "0"),
        ),
        (
            "nodeports",
            json!({"spec": {"type": "NodePort", "ports": [{"port": 27443}]}}),
            counts("0", "1"),
        ),
        (
            "multi-nodeports",
            json!({"spec": {"type": "NodePort", "ports": [{"port": 27443}, {"port": 27444}]}}),
            counts("0", "2"),
        ),
        (
            "nodeports-disabled",
            json!({"spec": {"type": "LoadBalancer", "allocateLoadBalancerNodePorts": false,
                            "ports": [{"port": 27443}]}}),
            counts("1", "0"),
        ),
        (
            "nodeports-default-enabled",
            json!({"spec": {"type": "LoadBalancer",
                            "ports": [{"port": 27443, "nodePort": 32001}]}}),
            counts("1", "1"),
        ),
        (
            "nodeports-explicitly-enabled",
            json!({"spec": {"type": "LoadBalancer", "allocateLoadBalancerNodePorts": true,
                            "ports": [{"port": 27443}]}}),
            counts("1", "1"),
        ),
        (
            "nodeports-disabled-but-specified",
            json!({"spec": {"type": "LoadBalancer", "allocateLoadBalancerNodePorts": false,
                            "ports": [{"port": 27443, "nodePort": 32001}, {"port": 27444}]}}),
            counts("1", "1"),
        ),
    ];
    for (name, service, want) in cases {
        assert_eq!(usage("", "services", &service), want, "{name}");
    }
}

/// `TestPersistentVolumeClaimEvaluatorUsage`.
#[test]
fn persistent_volume_claim_evaluator_usage() {
    let claim = |storage: &str, allocated: Option<&str>| {
        let mut c = json!({"spec": {"storageClassName": "gold",
                                    "resources": {"requests": {"storage": storage}}}});
        if let Some(a) = allocated {
            c["status"] = json!({"allocatedResources": {"storage": a}});
        }
        c
    };
    let want = |storage: &str| {
        res(&[
            ("requests.storage", storage),
            ("persistentvolumeclaims", "1"),
            ("gold.storageclass.storage.k8s.io/requests.storage", storage),
            (
                "gold.storageclass.storage.k8s.io/persistentvolumeclaims",
                "1",
            ),
            ("count/persistentvolumeclaims", "1"),
        ])
    };
    let pvc = |c: &Value| usage("", "persistentvolumeclaims", c);
    assert_eq!(pvc(&claim("10Gi", None)), want("10Gi"), "pvc-usage");
    assert_eq!(
        pvc(&claim("10.4Gi", None)),
        want("11166914970"),
        "pvc-usage-rounded"
    );
    assert_eq!(
        pvc(&claim("10Gi", Some("20Gi"))),
        want("20Gi"),
        "pvc-usage-higher-allocated-resources"
    );
    assert_eq!(
        pvc(&claim("10Gi", Some("5Gi"))),
        want("10Gi"),
        "pvc-usage-lower-allocated-resources"
    );
    // The beta annotation names the class before the spec does; no class, no class's names.
    let annotated = json!({
        "metadata": {"annotations": {"volume.beta.kubernetes.io/storage-class": "silver"}},
        "spec": {"storageClassName": "gold"},
    });
    assert!(
        pvc(&annotated).contains_key("silver.storageclass.storage.k8s.io/persistentvolumeclaims")
    );
    assert_eq!(
        pvc(&json!({"spec": {}})),
        res(&[
            ("persistentvolumeclaims", "1"),
            ("count/persistentvolumeclaims", "1")
        ])
    );
}

/// Object counts (`NewObjectCountEvaluator`, with `legacyObjectCountAliases`).
#[test]
fn object_count_evaluator_usage() {
    let object = json!({"metadata": {"name": "x"}});
    assert_eq!(
        usage("", "configmaps", &object),
        res(&[("count/configmaps", "1"), ("configmaps", "1")])
    );
    assert_eq!(
        usage("", "secrets", &object),
        res(&[("count/secrets", "1"), ("secrets", "1")])
    );
    assert_eq!(
        usage("apps", "deployments", &object),
        res(&[("count/deployments.apps", "1")])
    );
    assert_eq!(
        usage("stable.example.com", "crontabs", &object),
        res(&[("count/crontabs.stable.example.com", "1")])
    );
    assert_eq!(
        usage("", "endpoints", &object),
        res(&[("count/endpoints", "1")])
    );
}

/// The evaluators' `MatchingResources`: every name [`usage`] returns is one the kind charges,
/// and the unrelated ones are not.
#[test]
fn matching_resources() {
    let objects = [
        (
            "",
            "pods",
            json!({"spec": {
                "overhead": {"cpu": "1"},
                "containers": [container(
                    "c",
                    &[("cpu", "1"), ("memory", "1Gi"), ("ephemeral-storage", "1Gi"),
                      ("hugepages-2Mi", "2Mi"), ("example.com/dongle", "1"),
                      ("deviceclass.resource.kubernetes.io/gpu", "1")],
                    &[("cpu", "1"), ("memory", "1Gi"), ("ephemeral-storage", "1Gi")],
                )],
            }}),
        ),
        ("", "services", json!({"spec": {"type": "LoadBalancer"}})),
        (
            "",
            "persistentvolumeclaims",
            json!({"spec": {"storageClassName": "gold",
                            "resources": {"requests": {"storage": "1Gi"}}}}),
        ),
        ("", "configmaps", json!({})),
        ("apps", "deployments", json!({})),
    ];
    for (group, resource, object) in &objects {
        for name in usage(group, resource, object).keys() {
            assert!(charges(group, resource, name), "{resource}: {name}");
        }
    }
    for (group, resource, name, want) in [
        ("", "pods", "requests.nvidia.com/gpu", true),
        ("", "pods", "requests.hugepages-1Gi", true),
        ("", "pods", "nvidia.com/gpu", false),
        ("", "pods", "requests.storage", false),
        ("", "pods", "configmaps", false),
        ("", "pods", "count/configmaps", false),
        ("", "configmaps", "pods", false),
        ("", "configmaps", "count/configmaps", true),
        ("", "services", "services.nodeports", true),
        ("", "services", "count/pods", false),
        (
            "",
            "persistentvolumeclaims",
            "bronze.storageclass.storage.k8s.io/requests.storage",
            true,
        ),
        (
            "",
            "persistentvolumeclaims",
            "count/persistentvolumeclaims",
            true,
        ),
        ("apps", "deployments", "count/deployments.apps", true),
        ("apps", "deployments", "count/deployments", false),
        ("apps", "replicasets", "count/deployments.apps", false),
    ] {
        assert_eq!(charges(group, resource, name), want, "{resource}: {name}");
    }
}

/// `TestAdmitBelowQuotaLimit`: the pod's usage is added to the quota's.
#[test]
fn admit_below_quota_limit() {
    let hard = res(&[("cpu", "3"), ("memory", "100Gi"), ("pods", "5")]);
    let used = res(&[("cpu", "1"), ("memory", "50Gi"), ("pods", "3")]);
    let pod = valid_pod(1, &[("cpu", "100m"), ("memory", "2Gi")], &[]);
    let new = check("quota", &hard, &used, &pod_usage_of(&pod)).expect("admitted");
    assert_eq!(
        to_json(&new),
        json!({"cpu": "1100m", "memory": "52Gi", "pods": "4"})
    );
}

/// `TestAdmitExceedQuotaLimit`.
#[test]
fn admit_exceed_quota_limit() {
    let hard = res(&[("cpu", "3"), ("memory", "100Gi"), ("pods", "5")]);
    let used = res(&[("cpu", "1"), ("memory", "50Gi"), ("pods", "3")]);
    let pod = valid_pod(1, &[("cpu", "3"), ("memory", "2Gi")], &[]);
    assert_eq!(
        check("quota", &hard, &used, &pod_usage_of(&pod)),
        Err("exceeded quota: quota, requested: cpu=3, used: cpu=1, limited: cpu=3".into())
    );
}

/// `TestAdmitBelowTerminatingQuotaLimit`: a pod with an active deadline is charged to the
/// Terminating quota only.
#[test]
fn admit_below_terminating_quota_limit() {
    let mut pod = valid_pod(1, &[("cpu", "100m"), ("memory", "2Gi")], &[]);
    pod["spec"]["activeDeadlineSeconds"] = json!(30);
    assert!(pod_in_scopes(&pod, &["Terminating".into()]));
    assert!(!pod_in_scopes(&pod, &["NotTerminating".into()]));
    let hard = res(&[("cpu", "3"), ("memory", "100Gi"), ("pods", "5")]);
    let used = res(&[("cpu", "1"), ("memory", "50Gi"), ("pods", "3")]);
    let new = check("quota-terminating", &hard, &used, &pod_usage_of(&pod)).expect("admitted");
    assert_eq!(
        new,
        res(&[("cpu", "1100m"), ("memory", "52Gi"), ("pods", "4")])
    );
}

/// `TestAdmitBelowBestEffortQuotaLimit`.
#[test]
fn admit_below_best_effort_quota_limit() {
    let pod = valid_pod(1, &[], &[]);
    assert!(pod_in_scopes(&pod, &["BestEffort".into()]));
    assert!(!pod_in_scopes(&pod, &["NotBestEffort".into()]));
    let hard = res(&[("pods", "5")]);
    let used = res(&[("pods", "3")]);
    let new = check("quota-besteffort", &hard, &used, &pod_usage_of(&pod)).expect("admitted");
    assert_eq!(new, res(&[("pods", "4")]));
}

/// `TestAdmitBestEffortQuotaLimitIgnoresBurstable`.
#[test]
fn admit_best_effort_quota_limit_ignores_burstable() {
    let pod = valid_pod(1, &[("cpu", "100m"), ("memory", "1Gi")], &[]);
    assert!(!pod_in_scopes(&pod, &["BestEffort".into()]));
}

/// `TestAdmitRejectsNegativeUsage`.
#[test]
fn admit_rejects_negative_usage() {
    let hard = res(&[
        ("persistentvolumeclaims", "3"),
        ("requests.storage", "100Gi"),
    ]);
    let used = res(&[
        ("persistentvolumeclaims", "1"),
        ("requests.storage", "10Gi"),
    ]);
    let claim = |storage: &str| json!({"spec": {"resources": {"requests": {"storage": storage}}}});
    let delta = usage("", "persistentvolumeclaims", &claim("-1Gi"));
    assert_eq!(
        check("quota", &hard, &used, &delta),
        Err("quota usage is negative for resource(s): requests.storage".into())
    );
    let delta = usage("", "persistentvolumeclaims", &claim("1Gi"));
    assert_eq!(
        check("quota", &hard, &used, &delta),
        Ok(res(&[
            ("persistentvolumeclaims", "2"),
            ("requests.storage", "11Gi")
        ]))
    );
}

/// `TestAdmitWhenUnrelatedResourceExceedsQuota`: services over their limit do not stop a pod.
#[test]
fn admit_when_unrelated_resource_exceeds_quota() {
    let hard = res(&[("services", "3"), ("pods", "4")]);
    let used = res(&[("services", "4"), ("pods", "1")]);
    let pod = valid_pod(1, &[], &[]);
    assert_eq!(
        check("quota", &hard, &used, &pod_usage_of(&pod)),
        Ok(res(&[("services", "4"), ("pods", "2")]))
    );
}

/// `TestAdmitLimitedScopeWithCoverQuota`'s message for memory past the quota.
#[test]
fn admit_limited_scope_with_cover_quota() {
    let hard = res(&[("memory", "10Gi")]);
    let used = res(&[("memory", "1Gi")]);
    let pod = valid_pod(1, &[("cpu", "3"), ("memory", "20Gi")], &[]);
    assert_eq!(
        check("quota", &hard, &used, &pod_usage_of(&pod)),
        Err(
            "exceeded quota: quota, requested: memory=20Gi, used: memory=1Gi, limited: memory=10Gi"
                .into()
        )
    );
}

/// An object count past its quota, in `prettyPrint`'s words.
#[test]
fn admit_exceed_object_count_quota() {
    let hard = res(&[("count/configmaps", "10"), ("configmaps", "20")]);
    let used = res(&[("count/configmaps", "10"), ("configmaps", "10")]);
    let delta = usage("", "configmaps", &json!({}));
    assert_eq!(
        check("quota", &hard, &used, &delta),
        Err(
            "exceeded quota: quota, requested: count/configmaps=1, used: count/configmaps=10, \
             limited: count/configmaps=10"
                .into()
        )
    );
    // Within both: each is charged, other keys of used unchanged.
    let used = res(&[
        ("count/configmaps", "9"),
        ("configmaps", "9"),
        ("pods", "2"),
    ]);
    assert_eq!(
        check("quota", &hard, &used, &delta),
        Ok(res(&[
            ("count/configmaps", "10"),
            ("configmaps", "10"),
            ("pods", "2")
        ]))
    );
}

/// `hasUsageStats`: a quota whose usage the controller has not computed rejects.
#[test]
fn has_usage_stats() {
    let hard = res(&[("count/deployments.apps", "5"), ("pods", "2")]);
    let delta = usage("apps", "deployments", &json!({}));
    assert_eq!(
        check("quota", &hard, &Usage::new(), &delta),
        Err("status unknown for quota: quota, resources: count/deployments.apps".into())
    );
    // Keys the write does not charge need no usage.
    let used = res(&[("count/deployments.apps", "0")]);
    assert_eq!(
        check("quota", &hard, &used, &delta),
        Ok(res(&[("count/deployments.apps", "1")]))
    );
}

/// `TestPrettyPrint`: the resources sorted, each as upstream writes its quantity.
#[test]
fn pretty_print() {
    let all = res(&[
        ("pods", "10"),
        ("services", "10"),
        ("replicationcontrollers", "10"),
        ("services.nodeports", "10"),
        ("requests.cpu", "100m"),
        ("requests.memory", "100Mi"),
        ("limits.cpu", "100m"),
        ("limits.memory", "100Mi"),
    ]);
    let printed = "limits.cpu=100m,limits.memory=100Mi,pods=10,replicationcontrollers=10,\
                   requests.cpu=100m,requests.memory=100Mi,services=10,services.nodeports=10";
    assert_eq!(
        check("q", &all, &all, &all),
        Err(format!(
            "exceeded quota: q, requested: {printed}, used: {printed}, limited: {printed}"
        ))
    );
    let cpu = res(&[("cpu", "100m")]);
    assert_eq!(
        check("q", &cpu, &cpu, &cpu),
        Err("exceeded quota: q, requested: cpu=100m, used: cpu=100m, limited: cpu=100m".into())
    );
}

/// Zero usage charges nothing and needs no room (`RemoveZeros`).
#[test]
fn zero_usage_is_not_charged() {
    let hard = res(&[("services.loadbalancers", "0"), ("services", "5")]);
    let used = res(&[("services.loadbalancers", "0"), ("services", "1")]);
    let delta = usage("", "services", &json!({"spec": {"type": "ClusterIP"}}));
    assert_eq!(
        check("quota", &hard, &used, &delta),
        Ok(res(&[("services.loadbalancers", "0"), ("services", "2")]))
    );
}

#[test]
fn maps_are_parsed_and_written_back() {
    let parsed = parse_map(
        json!({"cpu": "1500m", "memory": "1024Mi", "pods": 5, "bad": "x", "null": null})
            .as_object()
            .expect("an object"),
    );
    assert_eq!(
        parsed,
        res(&[("cpu", "1.5"), ("memory", "1Gi"), ("pods", "5")])
    );
    assert_eq!(
        to_json(&parsed),
        json!({"cpu": "1500m", "memory": "1Gi", "pods": "5"})
    );
    assert_eq!(
        to_json(&res(&[
            ("a", "64G"),
            ("b", "2000"),
            ("c", "0"),
            ("d", "1536Mi")
        ])),
        json!({"a": "64G", "b": "2k", "c": "0", "d": "1536Mi"})
    );
}
