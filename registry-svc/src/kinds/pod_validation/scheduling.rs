//! A pod's scheduling fields: upstream's `ValidateTolerations`, `validateAffinity` (in
//! `affinity`), `validateSchedulingGates`, `validateTopologySpreadConstraints`, the scheduling
//! rule of `ValidatePodCreate`, and metav1validation's `ValidateLabelSelector`
//! (`pkg/apis/core/validation/validation.go` and
//! `staging/src/k8s.io/apimachinery/pkg/apis/meta/v1/validation/validation.go`, 1.33), with
//! their paths, words and order; `update` holds `ValidatePodUpdate`'s rules of these fields.
//!
//! Differences:
//! - Upstream's validation options that ratchet an update of a pod stored with invalid
//!   label values in its selectors (`AllowInvalidLabelValueInSelector`,
//!   `AllowInvalidLabelValueInRequiredNodeAffinity`,
//!   `AllowInvalidTopologySpreadConstraintLabelSelector`) are always off: kubestore never
//!   stored such a pod (these fields are validated since they exist here), so the values are
//!   always checked, as upstream checks them on create.
//! - Qualified names, label values and DNS names are described by `crate::validation`'s one
//!   problem each where upstream may list two (`IsQualifiedName` on an empty name).
//! - Upstream iterates `matchLabels` as a Go map (random order); ours are in key order.

use std::collections::{BTreeMap, BTreeSet};

use kubestore_proto::{
    core::v1::{PodSchedulingGate, PodSpec, Toleration, TopologySpreadConstraint},
    meta::v1::LabelSelector,
};

use super::not_supported;
use crate::{
    validation::{label_value, qualified_name},
    violations::Violations,
};

#[path = "scheduling_affinity.rs"]
mod affinity;
#[path = "scheduling_update.rs"]
pub(super) mod update;

/// Upstream's `isNotPositiveErrorMsg`.
const NOT_POSITIVE: &str = "must be greater than zero";

// The scheduling rules are called from `validate_spec` where `ValidatePodSpec` has them:
// [`affinity_rules`] after the security context, [`gates_and_spread`] after the readiness
// gates, [`tolerations_rules`] after the hostname and subdomain.

/// Upstream's `validateAffinity`.
pub(super) fn affinity_rules(spec: &PodSpec, v: &mut Violations) {
    if let Some(a) = &spec.affinity {
        affinity::validate(a, "spec.affinity", v);
    }
}

/// Upstream's `validateSchedulingGates` and `validateTopologySpreadConstraints`, which it
/// calls one after the other.
pub(super) fn gates_and_spread(spec: &PodSpec, v: &mut Violations) {
    scheduling_gates(&spec.scheduling_gates, v);
    topology_spread(&spec.topology_spread_constraints, v);
}

/// Upstream's `ValidateTolerations` of `spec.tolerations`.
pub(super) fn tolerations_rules(spec: &PodSpec, v: &mut Violations) {
    tolerations(&spec.tolerations, "spec.tolerations", v);
}

/// Upstream's `ValidatePodCreate` rule of scheduling: a gated pod has no node yet.
pub(super) fn validate_create(spec: &PodSpec, v: &mut Violations) {
    if !spec.node_name.is_empty() && !spec.scheduling_gates.is_empty() {
        v.push((
            "spec.nodeName".into(),
            "Forbidden: cannot be set until all schedulingGates have been cleared".into(),
        ));
    }
}

/// Upstream's `ValidateLabelSelector` (`metav1validation`, without the options that relax
/// it), for a selector at `path`.
pub(crate) fn label_selector(selector: &LabelSelector, path: &str, v: &mut Violations) {
    labels(&selector.match_labels, &format!("{path}.matchLabels"), v);
    for (i, r) in selector.match_expressions.iter().enumerate() {
        let at = |s: &str| format!("{path}.matchExpressions[{i}].{s}");
        match r.operator.as_str() {
            "In" | "NotIn" => {
                if r.values.is_empty() {
                    v.push((
                        at("values"),
                        "Required value: must be specified when `operator` is 'In' or 'NotIn'"
                            .into(),
                    ));
                }
            }
            "Exists" | "DoesNotExist" => {
                if !r.values.is_empty() {
                    v.push((
                        at("values"),
                        "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
                            .into(),
                    ));
                }
            }
            op => v.push((
                at("operator"),
                format!("Invalid value: {op:?}: not a valid selector operator"),
            )),
        }
        label_name(&r.key, at("key"), v);
        label_values(&r.values, &at("values"), v);
    }
}

/// Upstream's `ValidateLabelName`: a qualified name.
fn label_name(name: &str, path: String, v: &mut Violations) {
    if let Some(e) = qualified_name(name) {
        v.push((path, format!("Invalid value: {name:?}: {e}")));
    }
}

/// Upstream's `IsValidLabelValue` of each value, at `path[i]`.
fn label_values(values: &[String], path: &str, v: &mut Violations) {
    for (i, value) in values.iter().enumerate() {
        if let Some(e) = label_value(value) {
            v.push((
                format!("{path}[{i}]"),
                format!("Invalid value: {value:?}: {e}"),
            ));
        }
    }
}

/// Upstream's `ValidateLabels`: every problem at the map's own path.
fn labels(labels: &BTreeMap<String, String>, path: &str, v: &mut Violations) {
    for (k, value) in labels {
        label_name(k, path.into(), v);
        if let Some(e) = label_value(value) {
            v.push((path.into(), format!("Invalid value: {value:?}: {e}")));
        }
    }
}

/// Upstream's `ValidateTolerations` of a list at `path`. The comparison operators `Gt`/`Lt`
/// came after 1.33 and are refused as any unknown operator.
pub(super) fn tolerations(tolerations: &[Toleration], path: &str, v: &mut Violations) {
    for (i, t) in tolerations.iter().enumerate() {
        let at = |s: &str| format!("{path}[{i}].{s}");
        if !t.key.is_empty() {
            label_name(&t.key, at("key"), v);
        }
        // An empty key with Exists (and no value) matches every taint.
        if t.key.is_empty() && t.operator != "Exists" {
            v.push((
                at("operator"),
                format!(
                    "Invalid value: {:?}: operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
                    t.operator
                ),
            ));
        }
        if t.toleration_seconds.is_some() && t.effect != "NoExecute" {
            v.push((
                at("effect"),
                format!(
                    "Invalid value: {:?}: effect must be 'NoExecute' when `tolerationSeconds` is set",
                    t.effect
                ),
            ));
        }
        match t.operator.as_str() {
            // An empty operator means Equal.
            "Equal" | "" => {
                if let Some(e) = label_value(&t.value) {
                    v.push((at("operator"), format!("Invalid value: {:?}: {e}", t.value)));
                }
            }
            // Upstream 1.33 values this error with the toleration's value (older releases
            // printed the whole Go struct).
            "Exists" => {
                if !t.value.is_empty() {
                    v.push((
                        at("operator"),
                        format!(
                            "Invalid value: {:?}: value must be empty when `operator` is 'Exists'",
                            t.value
                        ),
                    ));
                }
            }
            op => v.push((at("operator"), not_supported(op, &["Equal", "Exists"]))),
        }
        // An empty effect matches every effect (upstream's validateTaintEffect, allowEmpty).
        if !t.effect.is_empty()
            && !["NoSchedule", "PreferNoSchedule", "NoExecute"].contains(&t.effect.as_str())
        {
            v.push((
                at("effect"),
                not_supported(&t.effect, &["NoSchedule", "PreferNoSchedule", "NoExecute"]),
            ));
        }
    }
}

/// Upstream's `validateSchedulingGates`: qualified names, each once, reported on the item.
fn scheduling_gates(gates: &[PodSchedulingGate], v: &mut Violations) {
    let mut seen = BTreeSet::new();
    for (i, g) in gates.iter().enumerate() {
        let at = format!("spec.schedulingGates[{i}]");
        label_name(&g.name, at.clone(), v);
        if !seen.insert(g.name.as_str()) {
            v.push((at, format!("Duplicate value: {:?}", g.name)));
        }
    }
}

/// Upstream's `validateTopologySpreadConstraints`.
fn topology_spread(constraints: &[TopologySpreadConstraint], v: &mut Violations) {
    for (i, c) in constraints.iter().enumerate() {
        let at = |s: &str| format!("spec.topologySpreadConstraints[{i}].{s}");
        if c.max_skew <= 0 {
            v.push((
                at("maxSkew"),
                format!("Invalid value: {}: {NOT_POSITIVE}", c.max_skew),
            ));
        }
        // Unlike an affinity term's, the key is not checked as a label name.
        if c.topology_key.is_empty() {
            v.push((at("topologyKey"), "Required value: can not be empty".into()));
        }
        // `sets.List` of the actions: sorted. An empty action is unsupported too.
        let actions = ["DoNotSchedule", "ScheduleAnyway"];
        if !actions.contains(&c.when_unsatisfiable.as_str()) {
            v.push((
                at("whenUnsatisfiable"),
                not_supported(&c.when_unsatisfiable, &actions),
            ));
        }
        // A {topologyKey, whenUnsatisfiable} pair repeated later on.
        if constraints[i + 1..].iter().any(|later| {
            later.topology_key == c.topology_key && later.when_unsatisfiable == c.when_unsatisfiable
        }) {
            v.push((
                at("{topologyKey, whenUnsatisfiable}"),
                format!(
                    "Duplicate value: {:?}",
                    format!("{{{}, {}}}", c.topology_key, c.when_unsatisfiable)
                ),
            ));
        }
        if let Some(m) = c.min_domains {
            if m <= 0 {
                v.push((
                    at("minDomains"),
                    format!("Invalid value: {m}: {NOT_POSITIVE}"),
                ));
            }
            if c.when_unsatisfiable != "DoNotSchedule" {
                v.push((
                    at("minDomains"),
                    format!(
                        "Invalid value: {m}: can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {}",
                        c.when_unsatisfiable
                    ),
                ));
            }
        }
        for (field, policy) in [
            ("nodeAffinityPolicy", &c.node_affinity_policy),
            ("nodeTaintsPolicy", &c.node_taints_policy),
        ] {
            if let Some(p) = policy
                && p != "Honor"
                && p != "Ignore"
            {
                v.push((at(field), not_supported(p, &["Honor", "Ignore"])));
            }
        }
        spread_match_label_keys(
            &c.match_label_keys,
            c.label_selector.as_ref(),
            &at("matchLabelKeys"),
            v,
        );
        if let Some(s) = &c.label_selector {
            label_selector(s, &at("labelSelector"), v);
        }
    }
}

/// Upstream's `validateMatchLabelKeysInTopologySpread`: label names, not already in the
/// selector, and only with a selector.
fn spread_match_label_keys(
    keys: &[String],
    selector: Option<&LabelSelector>,
    path: &str,
    v: &mut Violations,
) {
    if keys.is_empty() {
        return;
    }
    let selector_keys = selector_keys(selector);
    if selector.is_none() {
        v.push((
            path.into(),
            "Forbidden: must not be specified when labelSelector is not set".into(),
        ));
    }
    for (i, key) in keys.iter().enumerate() {
        label_name(key, format!("{path}[{i}]"), v);
        if selector_keys.contains(key.as_str()) {
            v.push((
                format!("{path}[{i}]"),
                format!("Invalid value: {key:?}: exists in both matchLabelKeys and labelSelector"),
            ));
        }
    }
}

/// The keys a selector names, in its labels or its expressions.
fn selector_keys(selector: Option<&LabelSelector>) -> BTreeSet<&str> {
    selector
        .map(|s| {
            s.match_labels
                .keys()
                .map(String::as_str)
                .chain(s.match_expressions.iter().map(|e| e.key.as_str()))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
#[path = "scheduling_tests.rs"]
mod tests;
