//! A pod's affinity: upstream's `validateAffinity`, `validateNodeAffinity`,
//! `ValidateNodeSelector` and its requirements, `ValidatePreferredSchedulingTerms`,
//! `validatePodAffinity`, `validatePodAntiAffinity` and their terms
//! (`pkg/apis/core/validation/validation.go`, 1.33), with their paths and words, including
//! upstream's odd paths (`namespace` for the `namespaces` list, and a term's index appended to
//! its own path for a key in both `matchLabelKeys` and the selector).
//!
//! The values of a required node affinity's expressions, and of pod affinity terms' selectors,
//! are checked as label values (upstream's create-time options); a preferred node term's values
//! never are, as upstream.

use std::collections::{BTreeMap, BTreeSet};

use kubestore_proto::{
    core::v1::{
        Affinity, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm,
        PodAffinityTerm, WeightedPodAffinityTerm,
    },
    meta::v1::LabelSelector,
};

use super::{label_name, label_selector, label_values};
use crate::{
    validation::{dns1123_label, dns1123_subdomain},
    violations::Violations,
};

/// Upstream's `validateAffinity` of an affinity at `path`.
pub(super) fn validate(a: &Affinity, path: &str, v: &mut Violations) {
    if let Some(na) = &a.node_affinity {
        node_affinity(na, &format!("{path}.nodeAffinity"), v);
    }
    for (field, pa) in [
        (
            "podAffinity",
            a.pod_affinity.as_ref().map(|p| {
                (
                    &p.required_during_scheduling_ignored_during_execution,
                    &p.preferred_during_scheduling_ignored_during_execution,
                )
            }),
        ),
        (
            "podAntiAffinity",
            a.pod_anti_affinity.as_ref().map(|p| {
                (
                    &p.required_during_scheduling_ignored_during_execution,
                    &p.preferred_during_scheduling_ignored_during_execution,
                )
            }),
        ),
    ] {
        if let Some((required, preferred)) = pa {
            pod_affinity(required, preferred, &format!("{path}.{field}"), v);
        }
    }
}

/// Upstream's `validateNodeAffinity`.
fn node_affinity(na: &NodeAffinity, path: &str, v: &mut Violations) {
    if let Some(s) = &na.required_during_scheduling_ignored_during_execution {
        node_selector(
            s,
            &format!("{path}.requiredDuringSchedulingIgnoredDuringExecution"),
            v,
        );
    }
    for (i, t) in na
        .preferred_during_scheduling_ignored_during_execution
        .iter()
        .enumerate()
    {
        let at = format!("{path}.preferredDuringSchedulingIgnoredDuringExecution[{i}]");
        weight(t.weight, &at, v);
        // Invalid label values are allowed in preferred terms: such a term can still be met
        // where the cluster has one node.
        let empty = NodeSelectorTerm::default();
        node_selector_term(
            t.preference.as_ref().unwrap_or(&empty),
            false,
            &format!("{at}.preference"),
            v,
        );
    }
}

/// Upstream's `ValidateNodeSelector`, for a required node affinity (its values checked).
fn node_selector(s: &NodeSelector, path: &str, v: &mut Violations) {
    let terms = format!("{path}.nodeSelectorTerms");
    if s.node_selector_terms.is_empty() {
        v.push((
            terms,
            "Required value: must have at least one node selector term".into(),
        ));
        return;
    }
    for (i, t) in s.node_selector_terms.iter().enumerate() {
        node_selector_term(t, true, &format!("{terms}[{i}]"), v);
    }
}

/// Upstream's `ValidateNodeSelectorTerm`; `check_values` is the negation of upstream's
/// `allowInvalidLabelValueInRequiredNodeAffinity`.
fn node_selector_term(t: &NodeSelectorTerm, check_values: bool, path: &str, v: &mut Violations) {
    for (j, r) in t.match_expressions.iter().enumerate() {
        node_selector_requirement(r, check_values, &format!("{path}.matchExpressions[{j}]"), v);
    }
    for (j, r) in t.match_fields.iter().enumerate() {
        node_field_requirement(r, &format!("{path}.matchFields[{j}]"), v);
    }
}

/// Upstream's `ValidateNodeSelectorRequirement`.
fn node_selector_requirement(
    r: &NodeSelectorRequirement,
    check_values: bool,
    path: &str,
    v: &mut Violations,
) {
    let values = format!("{path}.values");
    match r.operator.as_str() {
        "In" | "NotIn" => {
            if r.values.is_empty() {
                v.push((
                    values.clone(),
                    "Required value: must be specified when `operator` is 'In' or 'NotIn'".into(),
                ));
            }
        }
        "Exists" | "DoesNotExist" => {
            if !r.values.is_empty() {
                v.push((
                    values.clone(),
                    "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
                        .into(),
                ));
            }
        }
        "Gt" | "Lt" => {
            if r.values.len() != 1 {
                v.push((
                    values.clone(),
                    "Required value: must be specified single value when `operator` is 'Lt' or 'Gt'"
                        .into(),
                ));
            }
        }
        op => v.push((
            format!("{path}.operator"),
            format!("Invalid value: {op:?}: not a valid selector operator"),
        )),
    }
    label_name(&r.key, format!("{path}.key"), v);
    if check_values {
        label_values(&r.values, &values, v);
    }
}

/// Upstream's `ValidateNodeFieldSelectorRequirement`: only `metadata.name`, with In or NotIn
/// and one node name.
fn node_field_requirement(r: &NodeSelectorRequirement, path: &str, v: &mut Violations) {
    match r.operator.as_str() {
        "In" | "NotIn" => {
            if r.values.len() != 1 {
                v.push((
                    format!("{path}.values"),
                    "Required value: must be only one value when `operator` is 'In' or 'NotIn' for node field selector"
                        .into(),
                ));
            }
        }
        op => v.push((
            format!("{path}.operator"),
            format!("Invalid value: {op:?}: not a valid selector operator"),
        )),
    }
    if r.key != "metadata.name" {
        v.push((
            format!("{path}.key"),
            format!("Invalid value: {:?}: not a valid field selector key", r.key),
        ));
    } else {
        for (k, value) in r.values.iter().enumerate() {
            if let Some(e) = dns1123_subdomain(value) {
                v.push((
                    format!("{path}.values[{k}]"),
                    format!("Invalid value: {value:?}: {e}"),
                ));
            }
        }
    }
}

/// A preferred term's weight (upstream's `ValidatePreferredSchedulingTerms` and
/// `validateWeightedPodAffinityTerms`), for the term at `path`.
fn weight(w: i32, path: &str, v: &mut Violations) {
    if !(1..=100).contains(&w) {
        v.push((
            format!("{path}.weight"),
            format!("Invalid value: {w}: must be in the range 1-100"),
        ));
    }
}

/// Upstream's `validatePodAffinity` / `validatePodAntiAffinity` (the same rules).
fn pod_affinity(
    required: &[PodAffinityTerm],
    preferred: &[WeightedPodAffinityTerm],
    path: &str,
    v: &mut Violations,
) {
    for (i, t) in required.iter().enumerate() {
        pod_affinity_term(
            t,
            &format!("{path}.requiredDuringSchedulingIgnoredDuringExecution[{i}]"),
            v,
        );
    }
    for (i, t) in preferred.iter().enumerate() {
        let at = format!("{path}.preferredDuringSchedulingIgnoredDuringExecution[{i}]");
        weight(t.weight, &at, v);
        let empty = PodAffinityTerm::default();
        pod_affinity_term(
            t.pod_affinity_term.as_ref().unwrap_or(&empty),
            &format!("{at}.podAffinityTerm"),
            v,
        );
    }
}

/// Upstream's `validatePodAffinityTerm`.
fn pod_affinity_term(t: &PodAffinityTerm, path: &str, v: &mut Violations) {
    // ValidatePodAffinityTermSelector.
    if let Some(s) = &t.label_selector {
        label_selector(s, &format!("{path}.labelSelector"), v);
    }
    if let Some(s) = &t.namespace_selector {
        label_selector(s, &format!("{path}.namespaceSelector"), v);
    }
    // Upstream reports these on `namespace`, singular.
    for name in &t.namespaces {
        if let Some(e) = dns1123_label(name) {
            v.push((
                format!("{path}.namespace"),
                format!("Invalid value: {name:?}: {e}"),
            ));
        }
    }
    match_label_keys(
        &t.match_label_keys,
        &t.mismatch_label_keys,
        t.label_selector.as_ref(),
        path,
        v,
    );
    // An empty key is reported twice: required, and not a qualified name.
    if t.topology_key.is_empty() {
        v.push((
            format!("{path}.topologyKey"),
            "Required value: can not be empty".into(),
        ));
    }
    label_name(&t.topology_key, format!("{path}.topologyKey"), v);
}

/// Upstream's `validateMatchLabelKeysAndMismatchLabelKeys` for the term at `path`.
fn match_label_keys(
    keys: &[String],
    mismatch_keys: &[String],
    selector: Option<&LabelSelector>,
    path: &str,
    v: &mut Violations,
) {
    label_keys(keys, selector, &format!("{path}.matchLabelKeys"), v);
    label_keys(
        mismatch_keys,
        selector,
        &format!("{path}.mismatchLabelKeys"),
        v,
    );
    // The strategy has merged each matchLabelKeys key into the selector as an expression: one
    // the selector already named (in its labels or an earlier expression) is in both. Upstream
    // reports it at the term's path with the key's index appended (`...[0][1]`).
    if let Some(s) = selector {
        let index: BTreeMap<&str, usize> = keys
            .iter()
            .enumerate()
            .map(|(i, k)| (k.as_str(), i))
            .collect();
        let mut seen: BTreeSet<&str> = s.match_labels.keys().map(String::as_str).collect();
        for e in &s.match_expressions {
            if let Some(i) = index.get(e.key.as_str())
                && seen.contains(e.key.as_str())
            {
                v.push((
                    format!("{path}[{i}]"),
                    format!(
                        "Invalid value: {:?}: exists in both matchLabelKeys and labelSelector",
                        e.key
                    ),
                ));
            }
            seen.insert(e.key.as_str());
        }
    }
    let mismatch: BTreeSet<&str> = mismatch_keys.iter().map(String::as_str).collect();
    for (i, k) in keys.iter().enumerate() {
        if mismatch.contains(k.as_str()) {
            v.push((
                format!("{path}.matchLabelKeys[{i}]"),
                format!(
                    "Invalid value: {k:?}: exists in both matchLabelKeys and mismatchLabelKeys"
                ),
            ));
        }
    }
}

/// Upstream's `validateLabelKeys`: label names, and only with a selector.
fn label_keys(keys: &[String], selector: Option<&LabelSelector>, path: &str, v: &mut Violations) {
    if keys.is_empty() {
        return;
    }
    if selector.is_none() {
        v.push((
            path.into(),
            "Forbidden: must not be specified when labelSelector is not set".into(),
        ));
        return;
    }
    for (i, k) in keys.iter().enumerate() {
        label_name(k, format!("{path}[{i}]"), v);
    }
}
