//! The Event strategy (upstream's `pkg/registry/core/event`): events are written with a TTL
//! (`--event-ttl`, default 1 h) so etcd expires them, as kube-apiserver's `--event-ttl` does.
//! The TTL is set on create and on every update, because etcd drops the lease of a key written
//! without one. As upstream: Update may create a missing event, and garbage collection is
//! `Unsupported` (no GC finalizer is ever added, so an orphan/foreground delete is immediate).
//!
//! Events are served in two versions over the same stored objects: core `v1` and
//! `events.k8s.io/v1` (`event_v1`). Upstream's strategy validates a write by the version it was
//! made in (`requestGroupVersion`); here each version's Store has its own strategy
//! ([`EventApi`]), which picks the validation and the field labels.
//!
//! Deviation: a write through core `v1` keeps kubestore's earlier checks (type, count, reason)
//! instead of upstream's legacy rules (an event with `eventTime` needs `action`,
//! `reportingController`, ...): clients of the core version have written such events to
//! kubestore, and refusing them now would break them. events.k8s.io/v1 writes get upstream's
//! rules whole.

use std::time::Duration;

use kubestore_proto::core::v1::Event;

use crate::{
    selectors::{METADATA_FIELDS, SelectableField},
    store::finalizers::GcPolicy,
    strategy::Strategy,
    violations::Violations,
};

/// Event fields a field selector may name (upstream's event `ToSelectableFields`, for the
/// fields our Event carries).
const FIELDS: &[SelectableField] = &[
    METADATA_FIELDS[0],
    METADATA_FIELDS[1],
    SelectableField::string("involvedObject.kind", &[2, 1]),
    SelectableField::string("involvedObject.namespace", &[2, 2]),
    SelectableField::string("involvedObject.name", &[2, 3]),
    SelectableField::string("involvedObject.uid", &[2, 4]),
    SelectableField::string("involvedObject.apiVersion", &[2, 5]),
    SelectableField::string("involvedObject.resourceVersion", &[2, 6]),
    SelectableField::string("involvedObject.fieldPath", &[2, 7]),
    SelectableField::string("reason", &[3]),
    SelectableField::string("type", &[5]),
    SelectableField::string("reportingComponent", &[13]),
    SelectableField::string("source", &[7, 1]),
];

/// The version of the API a Store of events serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventApi {
    /// Core `v1`.
    Core,
    /// `events.k8s.io/v1`.
    EventsV1,
}

/// The Event strategy.
#[derive(Debug, Clone, Copy)]
pub struct EventStrategy {
    /// How long an event lives.
    pub ttl: Duration,
    /// The version whose writes it judges.
    pub api: EventApi,
}

impl EventStrategy {
    /// Core `v1`'s.
    pub fn core(ttl: Duration) -> Self {
        Self {
            ttl,
            api: EventApi::Core,
        }
    }

    /// `events.k8s.io/v1`'s.
    pub fn events_v1(ttl: Duration) -> Self {
        Self {
            ttl,
            api: EventApi::EventsV1,
        }
    }
}

impl Default for EventStrategy {
    fn default() -> Self {
        Self::core(Duration::from_secs(3600))
    }
}

impl Strategy<Event> for EventStrategy {
    fn columns(&self) -> Vec<kubestore_apimachinery::table::Column> {
        crate::kinds::printers::event_columns()
    }

    fn cells(&self, obj: &Event, now: i64) -> Vec<serde_json::Value> {
        crate::kinds::printers::event_cells(obj, now)
    }

    fn validate(&self, e: &Event) -> Violations {
        if self.api == EventApi::EventsV1 {
            return super::event_v1::validate_create(e);
        }
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

    fn validate_update(&self, new: &Event, old: &Event) -> Violations {
        match self.api {
            EventApi::Core => self.validate(new),
            EventApi::EventsV1 => super::event_v1::validate_update(new, old),
        }
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

    fn selectable_fields(&self) -> &'static [SelectableField] {
        match self.api {
            EventApi::Core => FIELDS,
            EventApi::EventsV1 => super::event_v1::FIELDS,
        }
    }
}
