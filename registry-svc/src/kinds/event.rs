//! The Event strategy (upstream's `pkg/registry/core/event`): events are written with a TTL
//! (`--event-ttl`, default 1 h) so etcd expires them, as kube-apiserver's `--event-ttl` does.
//! The TTL is set on create and on every update, because etcd drops the lease of a key written
//! without one. As upstream: Update may create a missing event, and garbage collection is
//! `Unsupported` (no GC finalizer is ever added, so an orphan/foreground delete is immediate).

use std::time::Duration;

use kubestore_proto::core::v1::Event;

use crate::{finalizers::GcPolicy, strategy::Strategy, violations::Violations};

/// The Event strategy.
#[derive(Debug, Clone, Copy)]
pub struct EventStrategy {
    /// How long an event lives.
    pub ttl: Duration,
}

impl Default for EventStrategy {
    fn default() -> Self {
        Self {
            ttl: Duration::from_secs(3600),
        }
    }
}

impl Strategy<Event> for EventStrategy {
    fn validate(&self, e: &Event) -> Violations {
        let mut v = Violations::new();
        if !["", "Normal", "Warning"].contains(&e.r#type.as_str()) {
            v.push((
                "type".into(),
                format!(
                    "Unsupported value: {:?}: supported values: \"Normal\", \"Warning\"",
                    e.r#type
                ),
            ));
        }
        if e.count < 0 {
            v.push((
                "count".into(),
                "Invalid value: must be greater than or equal to 0".into(),
            ));
        }
        if e.reason.len() > 128 {
            v.push((
                "reason".into(),
                "Too long: must have at most 128 bytes".into(),
            ));
        }
        v
    }

    fn validate_update(&self, new: &Event, _old: &Event) -> Violations {
        self.validate(new)
    }

    fn ttl_seconds(&self, _e: &Event) -> Option<i64> {
        Some(self.ttl.as_secs().clamp(1, i64::MAX as u64) as i64)
    }

    fn allow_create_on_update(&self) -> bool {
        true
    }

    fn gc_policy(&self) -> GcPolicy {
        GcPolicy::Unsupported
    }
}
