//! `ValidatePodUpdate`'s rules of the scheduling fields (`pkg/apis/core/validation/
//! validation.go`, 1.33): `validateOnlyAddedTolerations`, `validateOnlyDeletedSchedulingGates`,
//! and, for a pod that still has scheduling gates, `validateNodeSelectorMutation` and
//! `validateNodeAffinityMutation` with the munging that lets those changes through
//! `validate_spec_update`'s final comparison.
//!
//! Differences: upstream's `validateOnlyAddedTolerations` validates the new tolerations again
//! after `ValidatePodSpec` did; kubectl prints each message once (its aggregate drops repeats),
//! so they are not reported twice here. New gates are reported in their order (upstream walks a
//! Go map). Values upstream prints with Go's `%#v` (a node selector, node selector terms) are
//! written the same way, an empty list or map as Go's nil one (what a decoded request without
//! the field holds).

use std::collections::BTreeMap;

use kubestore_proto::core::v1::{
    Affinity, NodeAffinity, NodeSelectorRequirement, NodeSelectorTerm, PodSchedulingGate, PodSpec,
    Toleration,
};

use crate::violations::Violations;

/// Upstream's `validateOnlyAddedTolerations`: every old toleration is still there, but for its
/// `tolerationSeconds`.
pub(in crate::kinds::pod_validation) fn only_added_tolerations(
    new: &[Toleration],
    old: &[Toleration],
    v: &mut Violations,
) {
    let same = |a: &Toleration, b: &Toleration| {
        a.key == b.key && a.operator == b.operator && a.value == b.value && a.effect == b.effect
    };
    if !old.iter().all(|o| new.iter().any(|n| same(o, n))) {
        v.push((
            "spec.tolerations".into(),
            "Forbidden: existing toleration can not be modified except its tolerationSeconds"
                .into(),
        ));
    }
}

/// Upstream's `validateOnlyDeletedSchedulingGates`: no gate that the old pod did not have
/// (a name listed twice is reported at its last index, as upstream's map keeps it).
pub(in crate::kinds::pod_validation) fn only_deleted_gates(
    new: &[PodSchedulingGate],
    old: &[PodSchedulingGate],
    v: &mut Violations,
) {
    let mut added: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, g) in new.iter().enumerate() {
        added.insert(g.name.as_str(), i);
    }
    for g in old {
        added.remove(g.name.as_str());
    }
    let mut added: Vec<(usize, &str)> = added.into_iter().map(|(n, i)| (i, n)).collect();
    added.sort_unstable();
    for (i, name) in added {
        v.push((
            format!("spec.schedulingGates[{i}].name"),
            format!("Forbidden: only deletion is allowed, but found new scheduling gate '{name}'"),
        ));
    }
}

/// `ValidatePodUpdate`'s rules of a gated pod (one whose old spec has scheduling gates): its
/// `nodeSelector` may gain entries, and its required node affinity may gain requirements in
/// each existing term (or be set where there was none); the changes allowed are put back from
/// `old` into `munged`, the spec compared last.
pub(in crate::kinds::pod_validation) fn gated_changes(
    munged: &mut PodSpec,
    old: &PodSpec,
    v: &mut Violations,
) {
    if old.scheduling_gates.is_empty() {
        return;
    }
    if munged.node_selector != old.node_selector {
        // validateNodeSelectorMutation: one error however many entries changed.
        if old
            .node_selector
            .iter()
            .any(|(k, o)| munged.node_selector.get(k) != Some(o))
        {
            v.push((
                "spec.nodeSelector".into(),
                format!(
                    "Invalid value: {}: only additions to spec.nodeSelector are allowed (no mutations or deletions)",
                    go_string_map(&munged.node_selector)
                ),
            ));
        }
        munged.node_selector = old.node_selector.clone();
    }
    let old_na = old.affinity.as_ref().and_then(|a| a.node_affinity.as_ref());
    let new_na = munged
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref());
    if old_na == new_na {
        return;
    }
    node_affinity_mutation(new_na, old_na, v);
    // Put the old node affinity back, as upstream does.
    let others_unset = munged
        .affinity
        .as_ref()
        .is_some_and(|a| a.pod_affinity.is_none() && a.pod_anti_affinity.is_none());
    if munged.affinity.is_none() {
        if let Some(o) = old_na {
            munged.affinity = Some(Affinity {
                node_affinity: Some(o.clone()),
                ..Default::default()
            });
        }
    } else if old.affinity.is_none() && others_unset {
        // Only the node affinity was set, where the old pod had no affinity at all.
        munged.affinity = None;
    } else if let Some(a) = munged.affinity.as_mut() {
        a.node_affinity = old_na.cloned();
    }
}

/// Upstream's `validateNodeAffinityMutation`: where the old pod had required terms, there are
/// as many, each keeping its requirements first.
fn node_affinity_mutation(
    new: Option<&NodeAffinity>,
    old: Option<&NodeAffinity>,
    v: &mut Violations,
) {
    let Some(old) = old.and_then(|o| {
        o.required_during_scheduling_ignored_during_execution
            .as_ref()
    }) else {
        return;
    };
    let empty = Vec::new();
    let new_terms = new
        .and_then(|n| {
            n.required_during_scheduling_ignored_during_execution
                .as_ref()
        })
        .map_or(&empty, |s| &s.node_selector_terms);
    let old_terms = &old.node_selector_terms;
    let path = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms";
    if !old_terms.is_empty() && old_terms.len() != new_terms.len() {
        v.push((
            path.into(),
            format!(
                "Invalid value: {}: no additions/deletions to non-empty NodeSelectorTerms list are allowed",
                go_list("core.NodeSelectorTerm", new_terms, go_term)
            ),
        ));
        return;
    }
    for (i, (n, o)) in new_terms.iter().zip(old_terms).enumerate() {
        if !only_additions(n, o) {
            v.push((
                format!("{path}[{i}]"),
                format!(
                    "Invalid value: {}: only additions are allowed (no mutations or deletions)",
                    go_term(n)
                ),
            ));
        }
    }
}

/// Upstream's `validateNodeSelectorTermHasOnlyAdditions`: an empty old term stays empty; a
/// non-empty list of requirements keeps its old ones first.
fn only_additions(new: &NodeSelectorTerm, old: &NodeSelectorTerm) -> bool {
    if old.match_expressions.is_empty()
        && old.match_fields.is_empty()
        && (!new.match_expressions.is_empty() || !new.match_fields.is_empty())
    {
        return false;
    }
    let keeps = |n: &[NodeSelectorRequirement], o: &[NodeSelectorRequirement]| {
        o.is_empty() || n.get(..o.len()) == Some(o)
    };
    keeps(&new.match_expressions, &old.match_expressions)
        && keeps(&new.match_fields, &old.match_fields)
}

/// Go's `%#v` of a `map[string]string` (keys sorted, as fmt prints maps).
fn go_string_map(m: &BTreeMap<String, String>) -> String {
    if m.is_empty() {
        return "map[string]string(nil)".into();
    }
    let entries: Vec<String> = m.iter().map(|(k, v)| format!("{k:?}:{v:?}")).collect();
    format!("map[string]string{{{}}}", entries.join(", "))
}

/// Go's `%#v` of a slice of `ty`, each item written by `item`.
fn go_list<T>(ty: &str, items: &[T], item: impl Fn(&T) -> String) -> String {
    if items.is_empty() {
        return format!("[]{ty}(nil)");
    }
    let items: Vec<String> = items.iter().map(item).collect();
    format!("[]{ty}{{{}}}", items.join(", "))
}

/// Go's `%#v` of an internal `core.NodeSelectorTerm`.
fn go_term(t: &NodeSelectorTerm) -> String {
    let requirement = |r: &NodeSelectorRequirement| {
        format!(
            "core.NodeSelectorRequirement{{Key:{:?}, Operator:{:?}, Values:{}}}",
            r.key,
            r.operator,
            go_list("string", &r.values, |s| format!("{s:?}"))
        )
    };
    format!(
        "core.NodeSelectorTerm{{MatchExpressions:{}, MatchFields:{}}}",
        go_list(
            "core.NodeSelectorRequirement",
            &t.match_expressions,
            requirement
        ),
        go_list("core.NodeSelectorRequirement", &t.match_fields, requirement)
    )
}

#[cfg(test)]
#[path = "scheduling_update_tests.rs"]
mod tests;
