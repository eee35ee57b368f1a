//! Upstream's cases (`validation_test.go`: `TestValidateTolerations`,
//! `TestValidateAffinity`, `TestValidatePodSpec`'s scheduling cases,
//! `TestValidateTopologySpreadConstraints`, `TestValidatePodCreateWithSchedulingGates`, and
//! metav1validation's `TestValidateLabelSelector`) with upstream's paths and messages.

use kubestore_proto::{
    core::v1::{
        Affinity, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm,
        PodAffinity, PodAffinityTerm, PodAntiAffinity, PodSchedulingGate, PodSpec,
        PreferredSchedulingTerm, Toleration, TopologySpreadConstraint, WeightedPodAffinityTerm,
    },
    meta::v1::{LabelSelector, LabelSelectorRequirement},
};

use super::{affinity_rules, gates_and_spread, label_selector, tolerations_rules, validate_create};
use crate::{
    kinds::pod_validation::{tests::spec_with, validate_spec},
    validation::{label_value, qualified_name},
    violations::Violations,
};

type Pairs = Vec<(String, String)>;

fn problems(spec: &PodSpec) -> Pairs {
    let mut v = Violations::new();
    affinity_rules(spec, &mut v);
    gates_and_spread(spec, &mut v);
    tolerations_rules(spec, &mut v);
    v.iter().cloned().collect()
}

fn want(list: &[(&str, &str)]) -> Pairs {
    list.iter()
        .map(|(f, d)| (f.to_string(), d.to_string()))
        .collect()
}

/// `Invalid value: "s": <why s is not a qualified name>`.
fn not_qualified(s: &str) -> String {
    format!(
        "Invalid value: {s:?}: {}",
        qualified_name(s).unwrap_or_default()
    )
}

/// `Invalid value: "s": <why s is not a label value>`.
fn not_label_value(s: &str) -> String {
    format!(
        "Invalid value: {s:?}: {}",
        label_value(s).unwrap_or_default()
    )
}

fn expr(key: &str, operator: &str, values: &[&str]) -> LabelSelectorRequirement {
    LabelSelectorRequirement {
        key: key.into(),
        operator: operator.into(),
        values: values.iter().map(|s| s.to_string()).collect(),
    }
}

fn node_req(key: &str, operator: &str, values: &[&str]) -> NodeSelectorRequirement {
    NodeSelectorRequirement {
        key: key.into(),
        operator: operator.into(),
        values: values.iter().map(|s| s.to_string()).collect(),
    }
}

fn selector(labels: &[(&str, &str)], exprs: Vec<LabelSelectorRequirement>) -> LabelSelector {
    LabelSelector {
        match_labels: labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        match_expressions: exprs,
    }
}

fn toleration(key: &str, operator: &str, value: &str, effect: &str) -> Toleration {
    Toleration {
        key: key.into(),
        operator: operator.into(),
        value: value.into(),
        effect: effect.into(),
        toleration_seconds: None,
    }
}

fn with(edit: impl FnOnce(&mut PodSpec)) -> PodSpec {
    let mut s = PodSpec::default();
    edit(&mut s);
    s
}

fn required_terms(terms: Vec<NodeSelectorTerm>) -> Affinity {
    Affinity {
        node_affinity: Some(NodeAffinity {
            required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                node_selector_terms: terms,
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn term(
    exprs: Vec<NodeSelectorRequirement>,
    fields: Vec<NodeSelectorRequirement>,
) -> NodeSelectorTerm {
    NodeSelectorTerm {
        match_expressions: exprs,
        match_fields: fields,
    }
}

fn pod_term(topology_key: &str) -> PodAffinityTerm {
    PodAffinityTerm {
        label_selector: Some(selector(&[("app", "web")], vec![])),
        topology_key: topology_key.into(),
        ..Default::default()
    }
}

fn spread(key: &str, action: &str) -> TopologySpreadConstraint {
    TopologySpreadConstraint {
        max_skew: 1,
        topology_key: key.into(),
        when_unsatisfiable: action.into(),
        ..Default::default()
    }
}

/// A spec using every scheduling field well is valid, through the whole spec's rules too.
#[test]
fn valid_scheduling_fields() {
    let spec = spec_with(|s| {
        s.tolerations = vec![
            toleration("", "Exists", "", ""),
            Toleration {
                toleration_seconds: Some(60),
                ..toleration("node.kubernetes.io/not-ready", "Equal", "", "NoExecute")
            },
            toleration("gpu", "", "yes", "PreferNoSchedule"),
        ];
        s.affinity = Some(Affinity {
            node_affinity: Some(NodeAffinity {
                required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                    node_selector_terms: vec![term(
                        vec![
                            node_req("zone", "In", &["a", "b"]),
                            node_req("cores", "Gt", &["4"]),
                            node_req("spot", "DoesNotExist", &[]),
                        ],
                        vec![node_req("metadata.name", "NotIn", &["node-1"])],
                    )],
                }),
                preferred_during_scheduling_ignored_during_execution: vec![
                    PreferredSchedulingTerm {
                        weight: 100,
                        preference: Some(term(vec![node_req("k", "In", &["not valid!"])], vec![])),
                    },
                ],
            }),
            pod_affinity: Some(PodAffinity {
                required_during_scheduling_ignored_during_execution: vec![PodAffinityTerm {
                    namespaces: vec!["default".into()],
                    namespace_selector: Some(LabelSelector::default()),
                    match_label_keys: vec!["pod-template-hash".into()],
                    mismatch_label_keys: vec!["tenant".into()],
                    ..pod_term("kubernetes.io/hostname")
                }],
                ..Default::default()
            }),
            pod_anti_affinity: Some(PodAntiAffinity {
                preferred_during_scheduling_ignored_during_execution: vec![
                    WeightedPodAffinityTerm {
                        weight: 1,
                        pod_affinity_term: Some(pod_term("zone")),
                    },
                ],
                ..Default::default()
            }),
        });
        s.topology_spread_constraints = vec![
            TopologySpreadConstraint {
                min_domains: Some(3),
                node_affinity_policy: Some("Honor".into()),
                node_taints_policy: Some("Ignore".into()),
                label_selector: Some(selector(&[("app", "web")], vec![])),
                match_label_keys: vec!["pod-template-hash".into()],
                ..spread("zone", "DoNotSchedule")
            },
            spread("zone", "ScheduleAnyway"),
        ];
        s.scheduling_gates = vec![PodSchedulingGate {
            name: "example.com/gate".into(),
        }];
    });
    let mut v = Violations::new();
    validate_spec(Some(&spec), false, &mut v);
    assert_eq!(v.iter().cloned().collect::<Pairs>(), []);
}

/// metav1validation's `ValidateLabelSelector`.
#[test]
fn label_selectors() {
    let check = |s: &LabelSelector| {
        let mut v = Violations::new();
        label_selector(s, "sel", &mut v);
        v.iter().cloned().collect::<Pairs>()
    };
    assert_eq!(
        check(&selector(
            &[("a", "b")],
            vec![
                expr("a", "In", &["x"]),
                expr("b", "NotIn", &["x", "y"]),
                expr("c", "Exists", &[]),
                expr("d", "DoesNotExist", &[]),
            ]
        )),
        []
    );
    assert_eq!(
        check(&selector(&[("bad key", "bad value!")], vec![])),
        vec![
            ("sel.matchLabels".into(), not_qualified("bad key")),
            ("sel.matchLabels".into(), not_label_value("bad value!")),
        ]
    );
    assert_eq!(
        check(&selector(
            &[],
            vec![
                expr("a", "In", &[]),
                expr("b", "Exists", &["x"]),
                expr("c", "Gt", &["1"]),
                expr("bad key", "NotIn", &["ok", "not ok"]),
            ]
        )),
        vec![
            (
                "sel.matchExpressions[0].values".into(),
                "Required value: must be specified when `operator` is 'In' or 'NotIn'".into()
            ),
            (
                "sel.matchExpressions[1].values".into(),
                "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
                    .into()
            ),
            (
                "sel.matchExpressions[2].operator".into(),
                "Invalid value: \"Gt\": not a valid selector operator".into()
            ),
            (
                "sel.matchExpressions[3].key".into(),
                not_qualified("bad key")
            ),
            (
                "sel.matchExpressions[3].values[1]".into(),
                not_label_value("not ok")
            ),
        ]
    );
}

/// `TestValidateTolerations`' error cases.
#[test]
fn tolerations() {
    let spec = with(|s| {
        s.tolerations = vec![
            toleration("bad key", "Exists", "", ""),
            toleration("", "Equal", "", ""),
            Toleration {
                toleration_seconds: Some(10),
                ..toleration("k", "Exists", "", "NoSchedule")
            },
            toleration("k", "Gt", "1", ""),
            toleration("k", "Exists", "v", ""),
            toleration("k", "Equal", "bad value!", ""),
            toleration("k", "", "", "NoScheduleNoAdmit"),
        ];
    });
    assert_eq!(
        problems(&spec),
        vec![
            ("spec.tolerations[0].key".into(), not_qualified("bad key")),
            (
                "spec.tolerations[1].operator".into(),
                "Invalid value: \"Equal\": operator must be Exists when `key` is empty, which means \"match all values and all keys\"".into()
            ),
            (
                "spec.tolerations[2].effect".into(),
                "Invalid value: \"NoSchedule\": effect must be 'NoExecute' when `tolerationSeconds` is set".into()
            ),
            (
                "spec.tolerations[3].operator".into(),
                "Unsupported value: \"Gt\": supported values: \"Equal\", \"Exists\"".into()
            ),
            (
                "spec.tolerations[4].operator".into(),
                "Invalid value: \"v\": value must be empty when `operator` is 'Exists'".into()
            ),
            (
                "spec.tolerations[5].operator".into(),
                not_label_value("bad value!")
            ),
            (
                "spec.tolerations[6].effect".into(),
                "Unsupported value: \"NoScheduleNoAdmit\": supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\"".into()
            ),
        ]
    );
}

/// `TestValidateTopologySpreadConstraints`.
#[test]
fn topology_spread_constraints() {
    let spec = with(|s| {
        s.topology_spread_constraints = vec![
            TopologySpreadConstraint {
                max_skew: 0,
                ..spread("", "")
            },
            TopologySpreadConstraint {
                min_domains: Some(0),
                ..spread("zone", "ScheduleAnyway")
            },
            spread("zone", "ScheduleAnyway"),
            TopologySpreadConstraint {
                node_affinity_policy: Some("Foo".into()),
                node_taints_policy: Some("".into()),
                match_label_keys: vec!["bad key".into()],
                ..spread("node", "DoNotSchedule")
            },
            TopologySpreadConstraint {
                label_selector: Some(selector(&[("app", "web")], vec![expr("b", "In", &[])])),
                match_label_keys: vec!["app".into()],
                ..spread("host", "DoNotSchedule")
            },
        ];
    });
    let c = |i: usize, s: &str| format!("spec.topologySpreadConstraints[{i}].{s}");
    assert_eq!(
        problems(&spec),
        vec![
            (c(0, "maxSkew"), "Invalid value: 0: must be greater than zero".into()),
            (c(0, "topologyKey"), "Required value: can not be empty".into()),
            (
                c(0, "whenUnsatisfiable"),
                "Unsupported value: \"\": supported values: \"DoNotSchedule\", \"ScheduleAnyway\""
                    .into()
            ),
            (
                c(1, "{topologyKey, whenUnsatisfiable}"),
                "Duplicate value: \"{zone, ScheduleAnyway}\"".into()
            ),
            (c(1, "minDomains"), "Invalid value: 0: must be greater than zero".into()),
            (
                c(1, "minDomains"),
                "Invalid value: 0: can only use minDomains if whenUnsatisfiable=DoNotSchedule, not ScheduleAnyway".into()
            ),
            (
                c(3, "nodeAffinityPolicy"),
                "Unsupported value: \"Foo\": supported values: \"Honor\", \"Ignore\"".into()
            ),
            (
                c(3, "nodeTaintsPolicy"),
                "Unsupported value: \"\": supported values: \"Honor\", \"Ignore\"".into()
            ),
            (
                c(3, "matchLabelKeys"),
                "Forbidden: must not be specified when labelSelector is not set".into()
            ),
            (c(3, "matchLabelKeys[0]"), not_qualified("bad key")),
            (
                c(4, "matchLabelKeys[0]"),
                "Invalid value: \"app\": exists in both matchLabelKeys and labelSelector".into()
            ),
            (
                c(4, "labelSelector.matchExpressions[0].values"),
                "Required value: must be specified when `operator` is 'In' or 'NotIn'".into()
            ),
        ]
    );
}

/// `TestValidatePodSpec`'s scheduling gate cases: qualified names, each once.
#[test]
fn scheduling_gates() {
    let gate = |n: &str| PodSchedulingGate { name: n.into() };
    let spec = with(|s| s.scheduling_gates = vec![gate("a"), gate("bad name"), gate("a")]);
    assert_eq!(
        problems(&spec),
        vec![
            ("spec.schedulingGates[1]".into(), not_qualified("bad name")),
            (
                "spec.schedulingGates[2]".into(),
                "Duplicate value: \"a\"".into()
            ),
        ]
    );
}

/// `TestValidatePodCreateWithSchedulingGates`: a gated pod may not name its node.
#[test]
fn a_gated_pod_has_no_node_on_create() {
    let create = |s: &PodSpec| {
        let mut v = Violations::new();
        validate_create(s, &mut v);
        v.iter().cloned().collect::<Pairs>()
    };
    let gated = with(|s| {
        s.scheduling_gates = vec![PodSchedulingGate { name: "g".into() }];
    });
    assert_eq!(create(&gated), []);
    let mut bound = gated.clone();
    bound.node_name = "node-1".into();
    assert_eq!(
        create(&bound),
        want(&[(
            "spec.nodeName",
            "Forbidden: cannot be set until all schedulingGates have been cleared"
        )])
    );
    bound.scheduling_gates.clear();
    assert_eq!(create(&bound), []);
}

#[path = "scheduling_affinity_tests.rs"]
mod affinity;
