//! Finalizers: the garbage-collection finalizers a delete adds or removes according to its
//! propagation policy (upstream's `deletionFinalizersForGarbageCollection`), `markAsDeleting`,
//! and when an update that empties the finalizers must delete the object
//! (`ShouldDeleteDuringUpdate`).
//!
//! `orphan` and `foregroundDeletion` are recorded exactly as upstream records them; the garbage
//! collector (`kubestore controller-manager`, the `controllers` crate) acts on them and removes
//! them, as upstream's does.

use kubestore_proto::Timestamp;
use kubestore_proto::meta::v1::{DeleteOptions, ObjectMeta, PropagationPolicy};

/// Default garbage-collection policy of a kind (upstream's
/// `GarbageCollectionDeleteStrategy.DefaultGarbageCollectionPolicy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GcPolicy {
    /// Dependents are deleted in the background (no finalizer added by default).
    DeleteDependents,
    /// Dependents are orphaned by default (the `orphan` finalizer is added).
    OrphanDependents,
    /// No garbage-collection finalizers are ever added or removed.
    Unsupported,
}

/// The garbage collector's finalizers (metav1's names), defined beside the ObjectMeta rules that
/// check them.
pub use crate::validation::{FOREGROUND, ORPHAN};

fn policy(options: &DeleteOptions) -> PropagationPolicy {
    PropagationPolicy::try_from(options.propagation_policy)
        .unwrap_or(PropagationPolicy::Unspecified)
}

fn should_orphan(gc: GcPolicy, meta: &ObjectMeta, options: &DeleteOptions) -> bool {
    if gc == GcPolicy::Unsupported {
        return false;
    }
    match policy(options) {
        PropagationPolicy::Orphan => return true,
        PropagationPolicy::Background | PropagationPolicy::Foreground => return false,
        PropagationPolicy::Unspecified => {}
    }
    for f in &meta.finalizers {
        if f == ORPHAN {
            return true;
        }
        if f == FOREGROUND {
            return false;
        }
    }
    gc == GcPolicy::OrphanDependents
}

fn should_foreground(gc: GcPolicy, meta: &ObjectMeta, options: &DeleteOptions) -> bool {
    if gc == GcPolicy::Unsupported {
        return false;
    }
    match policy(options) {
        PropagationPolicy::Foreground => return true,
        PropagationPolicy::Background | PropagationPolicy::Orphan => return false,
        PropagationPolicy::Unspecified => {}
    }
    for f in &meta.finalizers {
        if f == FOREGROUND {
            return true;
        }
        if f == ORPHAN {
            return false;
        }
    }
    false
}

/// The finalizers `meta` should carry for this delete, if they differ (as a set) from its
/// current ones. The kept finalizers stay in their order; GC finalizers are appended.
pub fn gc_finalizers(
    gc: GcPolicy,
    meta: &ObjectMeta,
    options: &DeleteOptions,
) -> Option<Vec<String>> {
    let orphan = should_orphan(gc, meta, options);
    let foreground = should_foreground(gc, meta, options);
    let mut new: Vec<String> = meta
        .finalizers
        .iter()
        .filter(|f| *f != ORPHAN && *f != FOREGROUND)
        .cloned()
        .collect();
    if orphan {
        new.push(ORPHAN.to_string());
    }
    if foreground {
        new.push(FOREGROUND.to_string());
    }
    let as_set = |v: &[String]| v.iter().cloned().collect::<std::collections::BTreeSet<_>>();
    (as_set(&new) != as_set(&meta.finalizers)).then_some(new)
}

/// Upstream's `markAsDeleting`: the object is being deleted now, waiting only for finalizers.
pub fn mark_as_deleting(meta: &mut ObjectMeta, now: Timestamp) {
    if meta.deletion_timestamp.is_none() && meta.generation > 0 {
        meta.generation += 1;
    }
    // An earlier deletionTimestamp is kept; a later one is brought forward to now.
    match &meta.deletion_timestamp {
        Some(dt) if dt.seconds <= now.seconds => {}
        _ => meta.deletion_timestamp = Some(now),
    }
    meta.deletion_grace_period_seconds = Some(0);
}

/// Upstream's `ShouldDeleteDuringUpdate`: the update removed the last finalizer of an object
/// whose deletion is due (deletionTimestamp set, grace period over or none).
pub fn should_delete_during_update(new: &ObjectMeta, existing: &ObjectMeta) -> bool {
    new.finalizers.is_empty()
        && existing.deletion_timestamp.is_some()
        && existing.deletion_grace_period_seconds.unwrap_or(0) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(p: PropagationPolicy) -> DeleteOptions {
        DeleteOptions {
            propagation_policy: p as i32,
            ..Default::default()
        }
    }
    fn meta(f: &[&str]) -> ObjectMeta {
        ObjectMeta {
            finalizers: f.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn propagation_policy_adds_and_removes_gc_finalizers() {
        let dd = GcPolicy::DeleteDependents;
        assert_eq!(
            gc_finalizers(dd, &meta(&["a"]), &opts(PropagationPolicy::Orphan)),
            Some(vec!["a".into(), ORPHAN.into()])
        );
        assert_eq!(
            gc_finalizers(dd, &meta(&[]), &opts(PropagationPolicy::Foreground)),
            Some(vec![FOREGROUND.into()])
        );
        assert_eq!(
            gc_finalizers(
                dd,
                &meta(&[ORPHAN, "a"]),
                &opts(PropagationPolicy::Background)
            ),
            Some(vec!["a".into()])
        );
        assert_eq!(
            gc_finalizers(dd, &meta(&[ORPHAN]), &opts(PropagationPolicy::Foreground)),
            Some(vec![FOREGROUND.into()])
        );
        // Default background deletion adds nothing; existing GC finalizers are kept.
        assert_eq!(
            gc_finalizers(dd, &meta(&[]), &DeleteOptions::default()),
            None
        );
        assert_eq!(
            gc_finalizers(dd, &meta(&[ORPHAN]), &DeleteOptions::default()),
            None
        );
        // Orphan-by-default kinds get `orphan` without a policy.
        assert_eq!(
            gc_finalizers(
                GcPolicy::OrphanDependents,
                &meta(&[]),
                &DeleteOptions::default()
            ),
            Some(vec![ORPHAN.into()])
        );
        // Unsupported kinds never change.
        assert_eq!(
            gc_finalizers(
                GcPolicy::Unsupported,
                &meta(&[]),
                &opts(PropagationPolicy::Orphan)
            ),
            None
        );
    }

    #[test]
    fn mark_as_deleting_keeps_an_earlier_timestamp() {
        let now = Timestamp {
            seconds: 100,
            nanos: 0,
        };
        let mut m = ObjectMeta {
            generation: 1,
            ..Default::default()
        };
        mark_as_deleting(&mut m, now);
        assert_eq!(
            (
                m.generation,
                m.deletion_timestamp.map(|t| t.seconds),
                m.deletion_grace_period_seconds
            ),
            (2, Some(100), Some(0))
        );
        let mut m = ObjectMeta {
            deletion_timestamp: Some(Timestamp {
                seconds: 50,
                nanos: 0,
            }),
            deletion_grace_period_seconds: Some(30),
            generation: 3,
            ..Default::default()
        };
        mark_as_deleting(&mut m, now);
        assert_eq!(
            (
                m.generation,
                m.deletion_timestamp.map(|t| t.seconds),
                m.deletion_grace_period_seconds
            ),
            (3, Some(50), Some(0))
        );
        let mut m = ObjectMeta {
            deletion_timestamp: Some(Timestamp {
                seconds: 130,
                nanos: 0,
            }),
            ..Default::default()
        };
        mark_as_deleting(&mut m, now);
        assert_eq!(m.deletion_timestamp.map(|t| t.seconds), Some(100));
    }

    #[test]
    fn delete_during_update_only_when_due_and_no_finalizers_left() {
        let due = ObjectMeta {
            deletion_timestamp: Some(Timestamp::default()),
            deletion_grace_period_seconds: Some(0),
            ..Default::default()
        };
        assert!(should_delete_during_update(&meta(&[]), &due));
        assert!(!should_delete_during_update(&meta(&["a"]), &due));
        let graceful = ObjectMeta {
            deletion_grace_period_seconds: Some(30),
            ..due.clone()
        };
        assert!(!should_delete_during_update(&meta(&[]), &graceful));
        assert!(!should_delete_during_update(
            &meta(&[]),
            &ObjectMeta::default()
        ));
    }
}
