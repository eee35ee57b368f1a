//! Graceful deletion: upstream's `rest.BeforeDelete`, step for step.
//!
//! Decides whether a delete is graceful (the object gets a deletionTimestamp and stays for its
//! grace period) and whether it is pending (a graceful deletion already runs and this request
//! would not shorten it). A later delete may only *shorten* the grace period; an equal or longer
//! one is pending and writes nothing. An object whose deletion grace is already 0 (or unset) is
//! deleted now: that is how a kubelet's final delete, or a retry after a failed delete, goes
//! through.

use kubestore_proto::Timestamp;
use kubestore_proto::meta::v1::{DeleteOptions, PropagationPolicy};

use crate::{error::ApiError, resource::Resource, strategy::Strategy, violations::Violations};

/// The decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    /// The object was stamped with deletionTimestamp/grace and must be written, not deleted.
    pub graceful: bool,
    /// A graceful deletion is already running and this request changes nothing.
    pub pending: bool,
}

/// Longest grace period accepted (100 years). Upstream has none, and adds the period to the
/// current time with Go's wrapping arithmetic; near `i64::MAX` that stored a timestamp in year
/// -292 billion that protobuf JSON renderers reject. 100 years keeps every deletion timestamp
/// far inside protobuf's range (up to 9999-12-31) while allowing any real-world grace.
pub const MAX_GRACE_PERIOD_SECONDS: i64 = 100 * 365 * 86_400;

/// The description of a grace period outside `0..=MAX_GRACE_PERIOD_SECONDS`, if it is.
pub fn grace_period_problem(g: i64) -> Option<String> {
    if g < 0 {
        Some(format!(
            "Invalid value: {g}: must be greater than or equal to 0"
        ))
    } else if g > MAX_GRACE_PERIOD_SECONDS {
        Some(format!(
            "Invalid value: {g}: must be at most {MAX_GRACE_PERIOD_SECONDS} (100 years)"
        ))
    } else {
        None
    }
}

/// Rejects options that are wrong in themselves (upstream's `ValidateDeleteOptions`).
///
/// Deliberate differences: upstream silently turns a negative grace period into 1 second; we
/// reject it, because a client asking for -5 has a bug that a silent coercion would hide. And
/// a grace period is at most [`MAX_GRACE_PERIOD_SECONDS`].
pub fn validate_options(kind: &str, name: &str, options: &DeleteOptions) -> Result<(), ApiError> {
    let mut v = Violations::new();
    if let Some(problem) = options.grace_period_seconds.and_then(grace_period_problem) {
        v.push(("gracePeriodSeconds".to_string(), problem));
    }
    if PropagationPolicy::try_from(options.propagation_policy).is_err() {
        v.push((
            "propagationPolicy".to_string(),
            format!(
                "Unsupported value: {}: supported values: \"ORPHAN\", \"BACKGROUND\", \"FOREGROUND\"",
                options.propagation_policy
            ),
        ));
    }
    if v.is_empty() {
        Ok(())
    } else {
        Err(ApiError::invalid(kind, name, v))
    }
}

/// Current time, second precision (as metav1.Time is serialised).
pub fn now() -> Timestamp {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    Timestamp {
        seconds: secs,
        nanos: 0,
    }
}

/// `rest.BeforeDelete`: mutates `obj` (deletion fields, generation) and `options` (grace) as
/// upstream does, and returns the decision.
pub fn before_delete<R: Resource>(
    strategy: &dyn Strategy<R>,
    resource: &str,
    obj: &mut R,
    options: &mut DeleteOptions,
    now: Timestamp,
) -> Result<Decision, ApiError> {
    const NOT_GRACEFUL: Decision = Decision {
        graceful: false,
        pending: false,
    };
    const PENDING: Decision = Decision {
        graceful: false,
        pending: true,
    };
    let name = obj.meta().map(|m| m.name.clone()).unwrap_or_default();
    let conflict = |message: String| ApiError::Conflict {
        resource: resource.into(),
        name: name.clone(),
        message,
    };

    // Early precondition check against the object we were given.
    if let Some(pre) = &options.preconditions {
        let meta = obj.meta().cloned().unwrap_or_default();
        if let Some(uid) = &pre.uid
            && *uid != meta.uid
        {
            return Err(conflict(format!(
                "the UID in the precondition ({uid}) does not match the UID in record ({}). The object might have been deleted and then recreated",
                meta.uid
            )));
        }
        if let Some(rv) = &pre.resource_version
            && *rv != meta.resource_version
        {
            return Err(conflict(format!(
                "the ResourceVersion in the precondition ({rv}) does not match the ResourceVersion in record ({}). The object might have been modified",
                meta.resource_version
            )));
        }
    }
    let meta = obj.meta_mut();
    if meta.deletion_grace_period_seconds.is_some_and(|g| g < 0) {
        meta.deletion_grace_period_seconds = Some(1);
    }
    if !strategy.supports_graceful_delete() {
        return Ok(NOT_GRACEFUL);
    }
    if let Some(dt) = meta.deletion_timestamp {
        // A deletion is already under way.
        let existing = match meta.deletion_grace_period_seconds {
            None | Some(0) => return Ok(NOT_GRACEFUL), // due: delete now
            Some(g) => g,
        };
        let Some(mut period) = options.grace_period_seconds else {
            options.grace_period_seconds = Some(existing);
            return Ok(PENDING);
        };
        if period >= existing {
            // A grace period can only be shortened.
            return Ok(PENDING);
        }
        let mut new_dt = dt.seconds.saturating_sub(existing).saturating_add(period);
        if new_dt < now.seconds {
            new_dt = now.seconds;
            if period != 0 {
                period = 1;
            }
        }
        meta.deletion_timestamp = Some(Timestamp {
            seconds: new_dt,
            nanos: 0,
        });
        meta.deletion_grace_period_seconds = Some(period);
        options.grace_period_seconds = Some(period);
        // Shortening does not bump generation.
        return Ok(Decision {
            graceful: true,
            pending: false,
        });
    }
    let snapshot = obj.clone();
    if !strategy.check_graceful_delete(&snapshot, options) {
        return Ok(NOT_GRACEFUL);
    }
    let Some(grace) = options.grace_period_seconds else {
        return Err(ApiError::Internal(
            "options.gracePeriodSeconds should not be nil".into(),
        ));
    };
    // A strategy's default (a pod's terminationGracePeriodSeconds) is bounded like a request's.
    let grace = grace.clamp(0, MAX_GRACE_PERIOD_SECONDS);
    options.grace_period_seconds = Some(grace);
    let meta = obj.meta_mut();
    meta.deletion_timestamp = Some(Timestamp {
        seconds: now.seconds.saturating_add(grace),
        nanos: 0,
    });
    meta.deletion_grace_period_seconds = Some(grace);
    if meta.generation > 0 {
        meta.generation += 1;
    }
    Ok(Decision {
        graceful: true,
        pending: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubestore_proto::{
        core::v1::{ConfigMap, Pod, PodSpec},
        meta::v1::{ObjectMeta, Preconditions},
    };

    use crate::kinds::{configmap::ConfigMapStrategy, pod::PodStrategy};

    const T0: i64 = 1_000_000;
    fn at(s: i64) -> Timestamp {
        Timestamp {
            seconds: s,
            nanos: 0,
        }
    }
    fn scheduled_pod() -> Pod {
        Pod {
            metadata: Some(ObjectMeta {
                name: "p".into(),
                uid: "u".into(),
                generation: 1,
                ..Default::default()
            }),
            spec: Some(PodSpec {
                node_name: "node-1".into(),
                ..Default::default()
            }),
            status: None,
        }
    }
    fn grace(g: Option<i64>) -> DeleteOptions {
        DeleteOptions {
            grace_period_seconds: g,
            ..Default::default()
        }
    }

    #[test]
    fn first_delete_stamps_deletion_and_bumps_generation() {
        let mut pod = scheduled_pod();
        let mut o = grace(None);
        let d = before_delete(&PodStrategy, "pods", &mut pod, &mut o, at(T0)).expect("ok");
        assert_eq!(
            d,
            Decision {
                graceful: true,
                pending: false
            }
        );
        let m = pod.metadata.expect("meta");
        assert_eq!(m.deletion_timestamp, Some(at(T0 + 30)));
        assert_eq!(m.deletion_grace_period_seconds, Some(30));
        assert_eq!(m.generation, 2);
        assert_eq!(o.grace_period_seconds, Some(30));
    }

    #[test]
    fn later_deletes_only_shorten_as_in_the_worked_example() {
        let mut pod = scheduled_pod();
        before_delete(&PodStrategy, "pods", &mut pod, &mut grace(Some(30)), at(T0)).expect("ok");
        // Equal or longer: pending, nothing changes.
        for g in [Some(30), Some(60), None] {
            let before = pod.clone();
            let d = before_delete(&PodStrategy, "pods", &mut pod, &mut grace(g), at(T0 + 1))
                .expect("ok");
            assert_eq!(
                d,
                Decision {
                    graceful: false,
                    pending: true
                },
                "{g:?}"
            );
            assert_eq!(pod, before);
        }
        // At T0+2 ask for 5: DT = T0+5, grace 5, generation unchanged.
        let d = before_delete(
            &PodStrategy,
            "pods",
            &mut pod,
            &mut grace(Some(5)),
            at(T0 + 2),
        )
        .expect("ok");
        assert_eq!(
            d,
            Decision {
                graceful: true,
                pending: false
            }
        );
        let m = pod.metadata.clone().expect("meta");
        assert_eq!(
            (
                m.deletion_timestamp,
                m.deletion_grace_period_seconds,
                m.generation
            ),
            (Some(at(T0 + 5)), Some(5), 2)
        );
        // At T0+10 ask for 4: computed T0+4 is past: DT = now, grace clamped to 1.
        before_delete(
            &PodStrategy,
            "pods",
            &mut pod,
            &mut grace(Some(4)),
            at(T0 + 10),
        )
        .expect("ok");
        let m = pod.metadata.clone().expect("meta");
        assert_eq!(
            (m.deletion_timestamp, m.deletion_grace_period_seconds),
            (Some(at(T0 + 10)), Some(1))
        );
        // Grace 0: DT = now, grace 0.
        let mut o = grace(Some(0));
        before_delete(&PodStrategy, "pods", &mut pod, &mut o, at(T0 + 11)).expect("ok");
        let m = pod.metadata.clone().expect("meta");
        assert_eq!(
            (m.deletion_timestamp, m.deletion_grace_period_seconds),
            (Some(at(T0 + 11)), Some(0))
        );
        // Existing grace 0 means delete now.
        let d = before_delete(
            &PodStrategy,
            "pods",
            &mut pod,
            &mut grace(None),
            at(T0 + 12),
        )
        .expect("ok");
        assert_eq!(
            d,
            Decision {
                graceful: false,
                pending: false
            }
        );
    }

    #[test]
    fn deletion_timestamps_never_overflow() {
        // A stored pod whose own default grace is absurd (written before the bound existed).
        let mut pod = scheduled_pod();
        if let Some(s) = pod.spec.as_mut() {
            s.termination_grace_period_seconds = Some(i64::MAX);
        }
        let mut o = grace(None);
        before_delete(&PodStrategy, "pods", &mut pod, &mut o, at(T0)).expect("ok");
        let m = pod.metadata.clone().expect("meta");
        assert_eq!(
            m.deletion_timestamp,
            Some(at(T0 + MAX_GRACE_PERIOD_SECONDS))
        );
        assert!(m.deletion_timestamp.expect("set").seconds < 253_402_300_799);
        // Shortening a deletion that started with a huge grace.
        before_delete(
            &PodStrategy,
            "pods",
            &mut pod,
            &mut grace(Some(5)),
            at(T0 + 1),
        )
        .expect("ok");
        let m = pod.metadata.expect("meta");
        assert_eq!(m.deletion_timestamp, Some(at(T0 + 5)));
    }

    #[test]
    fn preconditions_are_checked_first() {
        let mut pod = scheduled_pod();
        let mut o = DeleteOptions {
            preconditions: Some(Preconditions {
                uid: Some("other".into()),
                resource_version: None,
            }),
            ..Default::default()
        };
        let e =
            before_delete(&PodStrategy, "pods", &mut pod, &mut o, at(T0)).expect_err("uid differs");
        assert!(matches!(e, ApiError::Conflict { .. }), "{e}");
        assert!(pod.metadata.expect("meta").deletion_timestamp.is_none());
    }

    #[test]
    fn kinds_without_graceful_delete_are_never_graceful() {
        let mut cm = ConfigMap {
            metadata: Some(ObjectMeta {
                name: "c".into(),
                deletion_timestamp: Some(at(T0)),
                deletion_grace_period_seconds: Some(30),
                ..Default::default()
            }),
            ..Default::default()
        };
        let d = before_delete(
            &ConfigMapStrategy,
            "configmaps",
            &mut cm,
            &mut grace(Some(5)),
            at(T0),
        )
        .expect("ok");
        assert_eq!(
            d,
            Decision {
                graceful: false,
                pending: false
            }
        );
    }

    #[test]
    fn negative_grace_and_unknown_policies_are_invalid() {
        assert!(validate_options("Pod", "p", &grace(Some(-1))).is_err());
        assert!(validate_options("Pod", "p", &grace(Some(i64::MAX - 5))).is_err());
        assert!(validate_options("Pod", "p", &grace(Some(MAX_GRACE_PERIOD_SECONDS))).is_ok());
        assert!(
            validate_options(
                "Pod",
                "p",
                &DeleteOptions {
                    propagation_policy: 9,
                    ..Default::default()
                }
            )
            .is_err()
        );
        assert!(validate_options("Pod", "p", &grace(Some(0))).is_ok());
    }
}
