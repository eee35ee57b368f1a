//! `TestValidatePodUpdate`'s scheduling cases: tolerations may only be added (or their
//! `tolerationSeconds` changed), scheduling gates only removed, and a gated pod may add node
//! selector entries and narrow its required node affinity; a negative grace period may become 1.

use kubestore_proto::core::v1::{
    Affinity, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, PodAffinity,
    PodSchedulingGate, PodSpec, PreferredSchedulingTerm, Toleration,
};

use crate::{
    kinds::pod_validation::{UPDATABLE, tests::spec_with, validate_spec_update},
    violations::Violations,
};

type Pairs = Vec<(String, String)>;

fn update_problems(new: &PodSpec, old: &PodSpec) -> Pairs {
    let mut v = Violations::new();
    validate_spec_update(new, old, &mut v);
    v.iter().cloned().collect()
}

/// One violation, as kept (a long description is cut to the bound).
fn one(field: &str, description: &str) -> Pairs {
    let mut v = Violations::new();
    v.push((field.to_string(), description.to_string()));
    v.iter().cloned().collect()
}

/// The Forbidden of any other change.
fn forbidden() -> Pairs {
    one(
        "spec",
        &format!("Forbidden: pod updates may not change fields other than {UPDATABLE}"),
    )
}

fn toleration(key: &str, seconds: Option<i64>) -> Toleration {
    Toleration {
        key: key.into(),
        operator: "Exists".into(),
        effect: "NoExecute".into(),
        toleration_seconds: seconds,
        ..Default::default()
    }
}

fn gates(names: &[&str]) -> Vec<PodSchedulingGate> {
    names
        .iter()
        .map(|n| PodSchedulingGate {
            name: n.to_string(),
        })
        .collect()
}

fn req(key: &str, values: &[&str]) -> NodeSelectorRequirement {
    NodeSelectorRequirement {
        key: key.into(),
        operator: "In".into(),
        values: values.iter().map(|s| s.to_string()).collect(),
    }
}

fn terms(terms: Vec<Vec<NodeSelectorRequirement>>) -> Option<Affinity> {
    Some(Affinity {
        node_affinity: Some(NodeAffinity {
            required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                node_selector_terms: terms
                    .into_iter()
                    .map(|e| NodeSelectorTerm {
                        match_expressions: e,
                        match_fields: vec![],
                    })
                    .collect(),
            }),
            ..Default::default()
        }),
        ..Default::default()
    })
}

/// The full upstream list, which the Forbidden message names.
#[test]
fn the_updatable_fields_are_upstreams() {
    assert_eq!(
        UPDATABLE,
        "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"
    );
}

/// `validateOnlyAddedTolerations`: additions and new tolerationSeconds pass; a removed or
/// changed toleration is refused, once.
#[test]
fn tolerations_may_only_be_added() {
    let old = spec_with(|s| s.tolerations = vec![toleration("a", Some(10)), toleration("b", None)]);
    let mut new = old.clone();
    new.tolerations.push(toleration("c", None));
    new.tolerations[0].toleration_seconds = Some(5);
    new.tolerations.swap(0, 1);
    assert_eq!(update_problems(&new, &old), []);
    let refused = one(
        "spec.tolerations",
        "Forbidden: existing toleration can not be modified except its tolerationSeconds",
    );
    let mut new = old.clone();
    new.tolerations.pop();
    assert_eq!(update_problems(&new, &old), refused);
    let mut new = old.clone();
    new.tolerations[0].effect = "NoSchedule".into();
    new.tolerations[1].key = "z".into();
    assert_eq!(update_problems(&new, &old), refused);
}

/// `validateOnlyDeletedSchedulingGates`: gates may go, not come (each new one reported at
/// its index).
#[test]
fn scheduling_gates_may_only_be_removed() {
    let old = spec_with(|s| s.scheduling_gates = gates(&["a", "b"]));
    let mut new = old.clone();
    new.scheduling_gates = gates(&["b"]);
    assert_eq!(update_problems(&new, &old), []);
    new.scheduling_gates.clear();
    assert_eq!(update_problems(&new, &old), []);
    new.scheduling_gates = gates(&["x", "a", "y"]);
    assert_eq!(
        update_problems(&new, &old),
        vec![
            (
                "spec.schedulingGates[0].name".into(),
                "Forbidden: only deletion is allowed, but found new scheduling gate 'x'".into()
            ),
            (
                "spec.schedulingGates[2].name".into(),
                "Forbidden: only deletion is allowed, but found new scheduling gate 'y'".into()
            ),
        ]
    );
    // An ungated pod may not gain one either.
    let old = spec_with(|_| {});
    let mut new = old.clone();
    new.scheduling_gates = gates(&["a"]);
    assert_eq!(
        update_problems(&new, &old),
        one(
            "spec.schedulingGates[0].name",
            "Forbidden: only deletion is allowed, but found new scheduling gate 'a'"
        )
    );
}

/// A gated pod's node selector may gain entries; no entry may change or go. An ungated pod's
/// may not change at all.
#[test]
fn a_gated_pods_node_selector_may_grow() {
    let old = spec_with(|s| {
        s.scheduling_gates = gates(&["g"]);
        s.node_selector = [("a".to_string(), "1".to_string())].into();
    });
    let mut new = old.clone();
    new.node_selector.insert("b".into(), "2".into());
    assert_eq!(update_problems(&new, &old), []);
    new.node_selector.insert("a".into(), "9".into());
    assert_eq!(
        update_problems(&new, &old),
        one(
            "spec.nodeSelector",
            "Invalid value: map[string]string{\"a\":\"9\", \"b\":\"2\"}: only additions to spec.nodeSelector are allowed (no mutations or deletions)"
        )
    );
    new.node_selector.clear();
    assert_eq!(
        update_problems(&new, &old),
        one(
            "spec.nodeSelector",
            "Invalid value: map[string]string(nil): only additions to spec.nodeSelector are allowed (no mutations or deletions)"
        )
    );
    let mut ungated = old.clone();
    ungated.scheduling_gates.clear();
    let mut new = ungated.clone();
    new.node_selector.insert("b".into(), "2".into());
    assert_eq!(update_problems(&new, &ungated), forbidden());
}

/// A gated pod may set a required node affinity, or add requirements to each existing term;
/// terms may not come or go, nor requirements change.
#[test]
fn a_gated_pods_node_affinity_may_narrow() {
    let gated = |affinity: Option<Affinity>| {
        spec_with(|s| {
            s.scheduling_gates = gates(&["g"]);
            s.affinity = affinity;
        })
    };
    // Set where there was none.
    let old = gated(None);
    assert_eq!(
        update_problems(&gated(terms(vec![vec![req("zone", &["a"])]])), &old),
        []
    );
    // Requirements added to the existing term.
    let old = gated(terms(vec![vec![req("zone", &["a"])]]));
    assert_eq!(
        update_problems(
            &gated(terms(vec![vec![
                req("zone", &["a"]),
                req("disk", &["ssd"])
            ]])),
            &old
        ),
        []
    );
    // The preferred terms are not looked at while the required ones stay.
    let mut new = old.clone();
    if let Some(na) = new.affinity.as_mut().and_then(|a| a.node_affinity.as_mut()) {
        na.preferred_during_scheduling_ignored_during_execution = vec![PreferredSchedulingTerm {
            weight: 1,
            preference: Some(NodeSelectorTerm::default()),
        }];
    }
    assert_eq!(update_problems(&new, &old), []);
    // A term added.
    let path = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms";
    assert_eq!(
        update_problems(
            &gated(terms(vec![vec![req("zone", &["a"])], vec![req("b", &[])]])),
            &old
        ),
        one(
            path,
            "Invalid value: []core.NodeSelectorTerm{core.NodeSelectorTerm{MatchExpressions:[]core.NodeSelectorRequirement{core.NodeSelectorRequirement{Key:\"zone\", Operator:\"In\", Values:[]string{\"a\"}}}, MatchFields:[]core.NodeSelectorRequirement(nil)}, core.NodeSelectorTerm{MatchExpressions:[]core.NodeSelectorRequirement{core.NodeSelectorRequirement{Key:\"b\", Operator:\"In\", Values:[]string(nil)}}, MatchFields:[]core.NodeSelectorRequirement(nil)}}: no additions/deletions to non-empty NodeSelectorTerms list are allowed"
        )
    );
    // A requirement changed.
    assert_eq!(
        update_problems(&gated(terms(vec![vec![req("zone", &["b"])]])), &old),
        one(
            &format!("{path}[0]"),
            "Invalid value: core.NodeSelectorTerm{MatchExpressions:[]core.NodeSelectorRequirement{core.NodeSelectorRequirement{Key:\"zone\", Operator:\"In\", Values:[]string{\"b\"}}}, MatchFields:[]core.NodeSelectorRequirement(nil)}: only additions are allowed (no mutations or deletions)"
        )
    );
    // The required affinity removed: no terms where there were some.
    assert_eq!(
        update_problems(&gated(None), &old),
        one(
            path,
            "Invalid value: []core.NodeSelectorTerm(nil): no additions/deletions to non-empty NodeSelectorTerms list are allowed"
        )
    );
    // Pod affinity stays immutable.
    let mut new = old.clone();
    if let Some(a) = new.affinity.as_mut() {
        a.pod_affinity = Some(PodAffinity::default());
    }
    assert_eq!(update_problems(&new, &old), forbidden());
    // An ungated pod's node affinity may not change.
    let mut ungated = old.clone();
    ungated.scheduling_gates.clear();
    let mut new = ungated.clone();
    new.affinity = terms(vec![vec![req("zone", &["a"]), req("disk", &["ssd"])]]);
    assert_eq!(update_problems(&new, &ungated), forbidden());
}

/// A negative grace period (stored before 1.22) may be set to 1; nothing else.
#[test]
fn a_negative_grace_period_may_become_one() {
    let mut old = spec_with(|_| {});
    old.termination_grace_period_seconds = Some(-1);
    let mut new = old.clone();
    new.termination_grace_period_seconds = Some(1);
    assert_eq!(update_problems(&new, &old), []);
    new.termination_grace_period_seconds = Some(2);
    assert_eq!(update_problems(&new, &old), forbidden());
}
