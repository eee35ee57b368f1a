//! Upstream's affinity cases (`validation_test.go`: `TestValidateAffinity` and
//! `TestValidatePodSpec`'s matchLabelKeys / mismatchLabelKeys cases) with upstream's paths
//! and messages.

use kubestore_proto::core::v1::{
    Affinity, NodeAffinity, PodAffinity, PodAffinityTerm, PodAntiAffinity, PreferredSchedulingTerm,
    WeightedPodAffinityTerm,
};

use super::{
    expr, node_req, not_label_value, not_qualified, pod_term, problems, required_terms, selector,
    term, want, with,
};
use crate::validation::{dns1123_label, dns1123_subdomain};

/// `TestValidateAffinity`' node affinity cases: required terms, requirements, field
/// requirements, preferred weights.
#[test]
fn node_affinity() {
    let req = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms";
    assert_eq!(
        problems(&with(|s| s.affinity = Some(required_terms(vec![])))),
        want(&[(
            req,
            "Required value: must have at least one node selector term"
        )])
    );
    let spec = with(|s| {
        s.affinity = Some(required_terms(vec![
            term(
                vec![
                    node_req("a", "In", &[]),
                    node_req("b", "Exists", &["x"]),
                    node_req("c", "Lt", &["1", "2"]),
                    node_req("d", "Equal", &[]),
                    node_req("bad key", "In", &["not ok"]),
                ],
                vec![],
            ),
            term(
                vec![],
                vec![
                    node_req("metadata.name", "In", &["a", "b"]),
                    node_req("metadata.name", "Exists", &["Node_1"]),
                    node_req("metadata.namespace", "In", &["x"]),
                ],
            ),
        ]))
    });
    let e = |j: usize, s: &str| format!("{req}[0].matchExpressions[{j}].{s}");
    let f = |j: usize, s: &str| format!("{req}[1].matchFields[{j}].{s}");
    assert_eq!(
        problems(&spec),
        vec![
            (
                e(0, "values"),
                "Required value: must be specified when `operator` is 'In' or 'NotIn'".into()
            ),
            (
                e(1, "values"),
                "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
                    .into()
            ),
            (
                e(2, "values"),
                "Required value: must be specified single value when `operator` is 'Lt' or 'Gt'"
                    .into()
            ),
            (
                e(3, "operator"),
                "Invalid value: \"Equal\": not a valid selector operator".into()
            ),
            (e(4, "key"), not_qualified("bad key")),
            (e(4, "values[0]"), not_label_value("not ok")),
            (
                f(0, "values"),
                "Required value: must be only one value when `operator` is 'In' or 'NotIn' for node field selector".into()
            ),
            (
                f(1, "operator"),
                "Invalid value: \"Exists\": not a valid selector operator".into()
            ),
            (
                f(1, "values[0]"),
                format!(
                    "Invalid value: \"Node_1\": {}",
                    dns1123_subdomain("Node_1").unwrap_or_default()
                )
            ),
            (
                f(2, "key"),
                "Invalid value: \"metadata.namespace\": not a valid field selector key".into()
            ),
        ]
    );
    // Preferred terms: weights 1-100; their values are not checked as label values.
    let spec = with(|s| {
        s.affinity = Some(Affinity {
            node_affinity: Some(NodeAffinity {
                preferred_during_scheduling_ignored_during_execution: vec![
                    PreferredSchedulingTerm {
                        weight: 0,
                        preference: Some(term(vec![node_req("k", "In", &["not ok"])], vec![])),
                    },
                    PreferredSchedulingTerm {
                        weight: 101,
                        preference: Some(term(vec![node_req("k", "Foo", &[])], vec![])),
                    },
                ],
                ..Default::default()
            }),
            ..Default::default()
        })
    });
    let p = "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution";
    assert_eq!(
        problems(&spec),
        vec![
            (
                format!("{p}[0].weight"),
                "Invalid value: 0: must be in the range 1-100".into()
            ),
            (
                format!("{p}[1].weight"),
                "Invalid value: 101: must be in the range 1-100".into()
            ),
            (
                format!("{p}[1].preference.matchExpressions[0].operator"),
                "Invalid value: \"Foo\": not a valid selector operator".into()
            ),
        ]
    );
}

/// `TestValidateAffinity`' pod (anti-)affinity cases: selectors, namespaces, topology keys,
/// weights.
#[test]
fn pod_affinity_terms() {
    let spec = with(|s| {
        s.affinity = Some(Affinity {
            pod_affinity: Some(PodAffinity {
                required_during_scheduling_ignored_during_execution: vec![PodAffinityTerm {
                    label_selector: Some(selector(&[], vec![expr("a", "In", &[])])),
                    namespace_selector: Some(selector(&[], vec![expr("b", "Foo", &[])])),
                    namespaces: vec!["Bad_NS".into()],
                    ..pod_term("")
                }],
                ..Default::default()
            }),
            pod_anti_affinity: Some(PodAntiAffinity {
                preferred_during_scheduling_ignored_during_execution: vec![
                    WeightedPodAffinityTerm {
                        weight: -1,
                        pod_affinity_term: Some(pod_term("bad key")),
                    },
                ],
                ..Default::default()
            }),
            ..Default::default()
        })
    });
    let r = "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]";
    let p = "spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]";
    assert_eq!(
        problems(&spec),
        vec![
            (
                format!("{r}.labelSelector.matchExpressions[0].values"),
                "Required value: must be specified when `operator` is 'In' or 'NotIn'".into()
            ),
            (
                format!("{r}.namespaceSelector.matchExpressions[0].operator"),
                "Invalid value: \"Foo\": not a valid selector operator".into()
            ),
            (
                format!("{r}.namespace"),
                format!(
                    "Invalid value: \"Bad_NS\": {}",
                    dns1123_label("Bad_NS").unwrap_or_default()
                )
            ),
            (
                format!("{r}.topologyKey"),
                "Required value: can not be empty".into()
            ),
            (format!("{r}.topologyKey"), not_qualified("")),
            (
                format!("{p}.weight"),
                "Invalid value: -1: must be in the range 1-100".into()
            ),
            (
                format!("{p}.podAffinityTerm.topologyKey"),
                not_qualified("bad key")
            ),
        ]
    );
}

/// `TestValidatePodSpec`'s matchLabelKeys / mismatchLabelKeys cases of pod affinity terms.
#[test]
fn pod_affinity_label_keys() {
    let with_term = |t: PodAffinityTerm| {
        with(|s| {
            s.affinity = Some(Affinity {
                pod_affinity: Some(PodAffinity {
                    required_during_scheduling_ignored_during_execution: vec![t],
                    ..Default::default()
                }),
                ..Default::default()
            })
        })
    };
    let r = "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]";
    let keys = |ks: &[&str]| ks.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    // Without a selector: Forbidden, and the keys are not looked at.
    assert_eq!(
        problems(&with_term(PodAffinityTerm {
            label_selector: None,
            match_label_keys: keys(&["bad key"]),
            mismatch_label_keys: keys(&["k"]),
            ..pod_term("zone")
        })),
        vec![
            (
                format!("{r}.matchLabelKeys"),
                "Forbidden: must not be specified when labelSelector is not set".into()
            ),
            (
                format!("{r}.mismatchLabelKeys"),
                "Forbidden: must not be specified when labelSelector is not set".into()
            ),
        ]
    );
    // Label names; a key in both lists.
    assert_eq!(
        problems(&with_term(PodAffinityTerm {
            match_label_keys: keys(&["k", "bad key"]),
            mismatch_label_keys: keys(&["bad/key/x", "k"]),
            ..pod_term("zone")
        })),
        vec![
            (format!("{r}.matchLabelKeys[1]"), not_qualified("bad key")),
            (
                format!("{r}.mismatchLabelKeys[0]"),
                not_qualified("bad/key/x")
            ),
            (
                format!("{r}.matchLabelKeys[0]"),
                "Invalid value: \"k\": exists in both matchLabelKeys and mismatchLabelKeys".into()
            ),
        ]
    );
    // A key the selector named before the strategy merged it in: upstream's path appends the
    // key's index to the term's.
    assert_eq!(
        problems(&with_term(PodAffinityTerm {
            label_selector: Some(selector(
                &[("app", "web")],
                vec![expr("app", "In", &["web"]), expr("other", "Exists", &[])]
            )),
            match_label_keys: keys(&["x", "app"]),
            ..pod_term("zone")
        })),
        want(&[(
            &format!("{r}[1]"),
            "Invalid value: \"app\": exists in both matchLabelKeys and labelSelector"
        )])
    );
}
