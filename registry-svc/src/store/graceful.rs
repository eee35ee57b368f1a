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
