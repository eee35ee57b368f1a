//! What upstream's pod `PrepareForCreate` (`pkg/registry/core/pod/strategy.go`, 1.33) does to
//! a new pod's spec and status beyond resetting them: a pod with scheduling gates starts with
//! a `PodScheduled=False` condition saying why (`applySchedulingGatedCondition`), and each pod
//! (anti-)affinity term's `matchLabelKeys` and `mismatchLabelKeys` become requirements of its
//! label selector, valued from the pod's own labels (`applyMatchLabelKeysAndMismatchLabelKeys`:
//! MatchLabelKeysInPodAffinity, GA in 1.33), so the scheduler only reads selectors; and the
//! deprecated AppArmor annotations and the `appArmorProfile` fields are synced both ways
//! (`applyAppArmorVersionSkew`, as 1.30–1.33 do), so old and new clients read the same profile.
//! Upstream also warns of an annotation used without its field; kubestore's strategies have
//! no warnings channel yet, so that warning is not sent.

use std::collections::BTreeMap;

use kubestore_proto::{
    core::v1::{AppArmorProfile, PodAffinityTerm, PodCondition, PodSpec, PodStatus},
    meta::v1::LabelSelectorRequirement,
};

/// The deprecated per-container AppArmor annotation (`DeprecatedAppArmorAnnotationKeyPrefix`).
pub const APPARMOR_ANNOTATION_PREFIX: &str = "container.apparmor.security.beta.kubernetes.io/";

/// The annotation's value for a profile (`appArmorAnnotationForField`); `None` for a
/// Localhost profile without its name.
fn annotation_for(p: &AppArmorProfile) -> Option<String> {
    match p.r#type.as_str() {
        "Unconfined" => Some("unconfined".into()),
        "RuntimeDefault" => Some("runtime/default".into()),
        "Localhost" => p
            .localhost_profile
            .as_ref()
            .map(|name| format!("localhost/{name}")),
        _ => None,
    }
}

/// The profile an annotation names (`apparmorFieldForAnnotation`), if it is a valid one.
fn profile_for(annotation: &str) -> Option<AppArmorProfile> {
    let profile = |ty: &str, name: Option<String>| AppArmorProfile {
        r#type: ty.into(),
        localhost_profile: name,
    };
    match annotation {
        "unconfined" => Some(profile("Unconfined", None)),
        "runtime/default" => Some(profile("RuntimeDefault", None)),
        _ => {
            let name = annotation.strip_prefix("localhost/")?;
            // A name that the field's validation would refuse is not copied.
            (!name.is_empty() && name.trim() == name && name.len() <= 4095)
                .then(|| profile("Localhost", Some(name.to_string())))
        }
    }
}

/// `applyAppArmorVersionSkew`: for each container of a non-Windows pod, an annotation is
/// written from the container's profile (or the pod's), and a container without a profile
/// takes the annotation's when it differs from the pod's.
pub fn sync_app_armor(spec: &mut PodSpec, annotations: &mut BTreeMap<String, String>) {
    if spec.os.as_ref().is_some_and(|os| os.name == "windows") {
        return;
    }
    let pod_profile = spec
        .security_context
        .as_ref()
        .and_then(|sc| sc.app_armor_profile.clone());
    for c in spec.init_containers.iter_mut().chain(&mut spec.containers) {
        let key = format!("{APPARMOR_ANNOTATION_PREFIX}{}", c.name);
        let own = c
            .security_context
            .as_ref()
            .and_then(|sc| sc.app_armor_profile.as_ref());
        match annotations.get(&key) {
            None => {
                if let Some(value) = own.or(pod_profile.as_ref()).and_then(annotation_for) {
                    annotations.insert(key, value);
                }
            }
            Some(value) if own.is_none() => {
                if let Some(p) = profile_for(value).filter(|p| Some(p) != pod_profile.as_ref()) {
                    c.security_context
                        .get_or_insert_with(Default::default)
                        .app_armor_profile = Some(p);
                }
            }
            Some(_) => {}
        }
    }
}

/// The condition of a gated pod (upstream's `PodReasonSchedulingGated` and its message).
pub fn scheduling_gated_condition(spec: &PodSpec, status: &mut PodStatus) {
    if spec.scheduling_gates.is_empty()
        || status.conditions.iter().any(|c| c.r#type == "PodScheduled")
    {
        return;
    }
    // Stamped now, as `podutil.UpdatePodCondition` stamps it.
    status.conditions.push(PodCondition {
        r#type: "PodScheduled".into(),
        status: "False".into(),
        reason: "SchedulingGated".into(),
        message: "Scheduling is blocked due to non-empty scheduling gates".into(),
        last_transition_time: Some(crate::store::graceful::now()),
        ..Default::default()
    });
}

/// Adds each affinity term's label keys to its selector: `In` the pod's value for
/// `matchLabelKeys`, `NotIn` for `mismatchLabelKeys`; keys the pod has no label for add
/// nothing, and a term without a selector (which matches nothing) is left so, as upstream.
pub fn merge_label_keys(spec: &mut PodSpec, labels: &BTreeMap<String, String>) {
    let Some(affinity) = spec.affinity.as_mut() else {
        return;
    };
    let mut terms: Vec<&mut PodAffinityTerm> = Vec::new();
    if let Some(a) = affinity.pod_affinity.as_mut() {
        terms.extend(
            a.required_during_scheduling_ignored_during_execution
                .iter_mut(),
        );
        terms.extend(
            a.preferred_during_scheduling_ignored_during_execution
                .iter_mut()
                .filter_map(|w| w.pod_affinity_term.as_mut()),
        );
    }
    if let Some(a) = affinity.pod_anti_affinity.as_mut() {
        terms.extend(
            a.required_during_scheduling_ignored_during_execution
                .iter_mut(),
        );
        terms.extend(
            a.preferred_during_scheduling_ignored_during_execution
                .iter_mut()
                .filter_map(|w| w.pod_affinity_term.as_mut()),
        );
    }
    for term in terms {
        let Some(selector) = term.label_selector.as_mut() else {
            continue;
        };
        let mut added = Vec::new();
        for (keys, operator) in [
            (&term.match_label_keys, "In"),
            (&term.mismatch_label_keys, "NotIn"),
        ] {
            for key in keys {
                if let Some(value) = labels.get(key) {
                    added.push(LabelSelectorRequirement {
                        key: key.clone(),
                        operator: operator.into(),
                        values: vec![value.clone()],
                    });
                }
            }
        }
        selector.match_expressions.extend(added);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubestore_proto::{
        core::v1::{Affinity, PodAntiAffinity, PodSchedulingGate, WeightedPodAffinityTerm},
        meta::v1::LabelSelector,
    };

    #[test]
    fn a_gated_pod_says_why_it_is_not_scheduled() {
        let spec = PodSpec {
            scheduling_gates: vec![PodSchedulingGate {
                name: "example.com/foo".into(),
            }],
            ..Default::default()
        };
        let mut status = PodStatus::default();
        scheduling_gated_condition(&spec, &mut status);
        scheduling_gated_condition(&spec, &mut status);
        assert_eq!(status.conditions.len(), 1, "added once");
        let c = &status.conditions[0];
        assert_eq!(
            (
                c.r#type.as_str(),
                c.status.as_str(),
                c.reason.as_str(),
                c.message.as_str()
            ),
            (
                "PodScheduled",
                "False",
                "SchedulingGated",
                "Scheduling is blocked due to non-empty scheduling gates"
            )
        );
        let mut status = PodStatus::default();
        scheduling_gated_condition(&PodSpec::default(), &mut status);
        assert!(status.conditions.is_empty());
    }

    #[test]
    fn label_keys_join_the_selector_with_the_pods_values() {
        let term = |selector: Option<LabelSelector>| PodAffinityTerm {
            label_selector: selector,
            topology_key: "zone".into(),
            match_label_keys: vec!["app".into(), "absent".into()],
            mismatch_label_keys: vec!["tenant".into()],
            ..Default::default()
        };
        let mut spec = PodSpec {
            affinity: Some(Affinity {
                pod_anti_affinity: Some(PodAntiAffinity {
                    required_during_scheduling_ignored_during_execution: vec![
                        term(Some(LabelSelector::default())),
                        term(None),
                    ],
                    preferred_during_scheduling_ignored_during_execution: vec![
                        WeightedPodAffinityTerm {
                            weight: 1,
                            pod_affinity_term: Some(term(Some(LabelSelector {
                                match_labels: [("x".to_string(), "y".to_string())].into(),
                                ..Default::default()
                            }))),
                        },
                    ],
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        let labels = [
            ("app".to_string(), "web".to_string()),
            ("tenant".to_string(), "a".to_string()),
        ]
        .into();
        merge_label_keys(&mut spec, &labels);
        let anti = spec
            .affinity
            .and_then(|a| a.pod_anti_affinity)
            .unwrap_or_default();
        let want = vec![
            LabelSelectorRequirement {
                key: "app".into(),
                operator: "In".into(),
                values: vec!["web".into()],
            },
            LabelSelectorRequirement {
                key: "tenant".into(),
                operator: "NotIn".into(),
                values: vec!["a".into()],
            },
        ];
        let required = anti.required_during_scheduling_ignored_during_execution[0]
            .label_selector
            .clone()
            .unwrap_or_default();
        assert_eq!(required.match_expressions, want);
        assert_eq!(
            anti.required_during_scheduling_ignored_during_execution[1].label_selector, None,
            "a term without a selector matches nothing and stays so"
        );
        let preferred = anti.preferred_during_scheduling_ignored_during_execution[0]
            .pod_affinity_term
            .as_ref()
            .and_then(|t| t.label_selector.clone())
            .unwrap_or_default();
        assert_eq!(preferred.match_expressions, want);
        assert_eq!(preferred.match_labels.len(), 1, "existing selector kept");
    }

    /// Upstream's `TestApplyAppArmorVersionSkew` cases: field to annotation, annotation to
    /// field, the pod's profile, and Windows pods left alone.
    #[test]
    fn app_armor_fields_and_annotations_agree() {
        use kubestore_proto::core::v1::{Container, PodOs, PodSecurityContext, SecurityContext};
        let profile = |ty: &str, name: Option<&str>| AppArmorProfile {
            r#type: ty.into(),
            localhost_profile: name.map(String::from),
        };
        let container = |name: &str, p: Option<AppArmorProfile>| Container {
            name: name.into(),
            security_context: p.map(|p| SecurityContext {
                app_armor_profile: Some(p),
                ..Default::default()
            }),
            ..Default::default()
        };
        let key = |c: &str| format!("{APPARMOR_ANNOTATION_PREFIX}{c}");
        // Fields become annotations: the container's own, else the pod's.
        let mut spec = PodSpec {
            containers: vec![
                container("own", Some(profile("Localhost", Some("k8s-allow-write")))),
                container("inherits", None),
            ],
            security_context: Some(PodSecurityContext {
                app_armor_profile: Some(profile("RuntimeDefault", None)),
                ..Default::default()
            }),
            ..Default::default()
        };
        let mut annotations = BTreeMap::new();
        sync_app_armor(&mut spec, &mut annotations);
        assert_eq!(
            annotations,
            [
                (key("own"), "localhost/k8s-allow-write".to_string()),
                (key("inherits"), "runtime/default".to_string()),
            ]
            .into()
        );
        // An annotation becomes the field of a container without one, unless the pod's says
        // the same; an invalid one is not copied.
        let mut spec = PodSpec {
            containers: vec![
                container("a", None),
                container("b", None),
                container("c", None),
            ],
            security_context: Some(PodSecurityContext {
                app_armor_profile: Some(profile("Unconfined", None)),
                ..Default::default()
            }),
            ..Default::default()
        };
        let mut annotations: BTreeMap<String, String> = [
            (key("a"), "runtime/default".to_string()),
            (key("b"), "unconfined".to_string()),
            (key("c"), "bogus".to_string()),
        ]
        .into();
        sync_app_armor(&mut spec, &mut annotations);
        let field = |i: usize| {
            spec.containers[i]
                .security_context
                .as_ref()
                .and_then(|sc| sc.app_armor_profile.clone())
        };
        assert_eq!(field(0), Some(profile("RuntimeDefault", None)));
        assert_eq!(field(1), None, "the pod's profile already says so");
        assert_eq!(field(2), None, "an invalid annotation is not copied");
        // Windows pods are left alone.
        let mut spec = PodSpec {
            os: Some(PodOs {
                name: "windows".into(),
            }),
            containers: vec![container("w", Some(profile("RuntimeDefault", None)))],
            ..Default::default()
        };
        let mut annotations = BTreeMap::new();
        sync_app_armor(&mut spec, &mut annotations);
        assert!(annotations.is_empty());
    }
}
