//! v1 defaulting of Pods, for the fields our Pod carries: upstream's `SetDefaults_Pod` and
//! `SetDefaults_PodSpec` (`pkg/apis/core/v1/defaults.go`) and the grace-period coercion of its
//! Pod conversion (`Convert_v1_Pod_To_core_Pod`, kubernetes#115606). Applied to every pod a
//! client sends and every pod read from storage (`Strategy::default_object`), so a pod written
//! before a default existed reads, compares and updates as if it had been written with it.
//!
//! Not modelled, because our Pod has no such field: `dnsPolicy`, `schedulerName`,
//! `securityContext`, `enableServiceLinks`, host-network ports, init containers, pod-level
//! resources, and the container defaults (`imagePullPolicy`, `terminationMessagePath`,
//! `terminationMessagePolicy`). Nor `SetDefaults_ResourceList`, which rounds quantities up to
//! milli-units: our quantities stay the strings the client wrote.

use kubestore_proto::core::v1::{Pod, PodSpec};

/// Upstream's `DefaultTerminationGracePeriodSeconds`.
pub const DEFAULT_TERMINATION_GRACE_SECONDS: i64 = 30;

/// Upstream's default `restartPolicy`.
pub const DEFAULT_RESTART_POLICY: &str = "Always";

/// Applies the defaults to `pod`; returns whether anything changed. Upstream's `PodSpec` is a
/// value, never absent: a pod sent without one is defaulted as a pod with an empty one (and
/// then refused for its missing containers alone). Watch bookmarks, whose placeholder object
/// must stay empty, are never defaulted (`passthrough`).
pub fn default_pod(pod: &mut Pod) -> bool {
    let absent = pod.spec.is_none();
    let changed = default_spec(pod.spec.get_or_insert_with(Default::default));
    absent || changed
}

/// The defaults of a pod's spec; returns whether anything changed.
pub fn default_spec(spec: &mut PodSpec) -> bool {
    let mut changed = false;
    // SetDefaults_PodSpec.
    if spec.restart_policy.is_empty() {
        spec.restart_policy = DEFAULT_RESTART_POLICY.into();
        changed = true;
    }
    match spec.termination_grace_period_seconds {
        None => {
            spec.termination_grace_period_seconds = Some(DEFAULT_TERMINATION_GRACE_SECONDS);
            changed = true;
        }
        // Upstream's Pod conversion: a negative grace period (accepted before 1.22 and still
        // stored in old clusters) is served and kept as 1 second, the value its delete path
        // already used. Validation of a new pod therefore never sees a negative one.
        Some(g) if g < 0 => {
            spec.termination_grace_period_seconds = Some(1);
            changed = true;
        }
        Some(_) => {}
    }
    // SetDefaults_Pod: a container's limits are its requests where it gives none (done on Pods
    // only upstream, not on pod templates, so that the QoS class follows the limits).
    for c in &mut spec.containers {
        let Some(res) = c.resources.as_mut() else {
            continue;
        };
        for (name, limit) in &res.limits {
            if !res.requests.contains_key(name) {
                res.requests.insert(name.clone(), limit.clone());
                changed = true;
            }
        }
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubestore_proto::core::v1::{Container, ResourceRequirements};

    fn pod(spec: PodSpec) -> Pod {
        Pod {
            spec: Some(spec),
            ..Default::default()
        }
    }

    #[test]
    fn defaults_fill_what_is_unset_once() {
        let mut p = pod(PodSpec {
            containers: vec![Container {
                name: "c".into(),
                image: "i".into(),
                resources: Some(ResourceRequirements {
                    requests: [("cpu".to_string(), "1".to_string())].into(),
                    limits: [
                        ("cpu".to_string(), "2".to_string()),
                        ("memory".to_string(), "1Gi".to_string()),
                    ]
                    .into(),
                }),
            }],
            ..Default::default()
        });
        assert!(default_pod(&mut p));
        let spec = p.spec.clone().unwrap_or_default();
        assert_eq!(spec.restart_policy, "Always");
        assert_eq!(spec.termination_grace_period_seconds, Some(30));
        let res = spec.containers[0].resources.clone().unwrap_or_default();
        assert_eq!(res.requests["cpu"], "1", "a request given is kept");
        assert_eq!(
            res.requests["memory"], "1Gi",
            "a missing request is the limit"
        );
        // Idempotent, and says so: the pass-through keeps storage's bytes then.
        let before = p.clone();
        assert!(!default_pod(&mut p));
        assert_eq!(p, before);
    }

    #[test]
    fn negative_grace_periods_become_one_second_and_set_values_stay() {
        let mut p = pod(PodSpec {
            termination_grace_period_seconds: Some(-1),
            restart_policy: "Never".into(),
            ..Default::default()
        });
        assert!(default_pod(&mut p));
        let spec = p.spec.clone().unwrap_or_default();
        assert_eq!(spec.termination_grace_period_seconds, Some(1));
        assert_eq!(spec.restart_policy, "Never");
        for g in [0, 1, 30, 3600] {
            let mut p = pod(PodSpec {
                termination_grace_period_seconds: Some(g),
                restart_policy: "Always".into(),
                ..Default::default()
            });
            assert!(!default_pod(&mut p), "{g}");
        }
    }

    #[test]
    fn a_pod_without_spec_is_defaulted_as_one_with_an_empty_spec() {
        let mut p = Pod::default();
        assert!(default_pod(&mut p));
        let spec = p.spec.clone().unwrap_or_default();
        assert_eq!(spec.restart_policy, "Always");
        assert_eq!(spec.termination_grace_period_seconds, Some(30));
        assert!(!default_pod(&mut p));
    }
}
