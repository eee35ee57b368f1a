//! `events.k8s.io/v1` Event: the core Event in its newer version (kube-rs' event `Recorder` and
//! client-go's `tools/events` write it). Stored as core `v1` Events (upstream's cohabitating
//! resources: one key root, `/events`), converted field for field as upstream's
//! `pkg/apis/events/v1/conversion.go` converts them: `regarding` is `involvedObject`, `note` is
//! `message`, `reportingController` is `reportingComponent`, `deprecatedSource`,
//! `deprecatedFirstTimestamp`, `deprecatedLastTimestamp` and `deprecatedCount` are `source`,
//! `firstTimestamp`, `lastTimestamp` and `count`; the rest is the same field.
//!
//! Also here: what a write made in this version must satisfy (upstream's
//! `ValidateEventCreate`/`ValidateEventUpdate` for events.k8s.io/v1, messages and core field
//! paths as upstream's), and the field labels this version takes (`regarding.name`, ...).

use kubestore_proto::{
    core::v1::{Event, EventSeries, EventSource, ObjectReference},
    events::v1 as events,
};
use prost::Message;

use crate::{
    catalog::builtin::Version,
    selectors::{METADATA_FIELDS, SelectableField},
    validation::{dns1123_subdomain, qualified_name},
    violations::Violations,
};

/// events.k8s.io/v1, converted to and from the stored core Event.
pub struct EventsV1;

impl Version<Event> for EventsV1 {
    const GROUP: &'static str = "events.k8s.io";
    const VERSION: &'static str = "v1";

    fn message() -> String {
        ".events.v1.Event".into()
    }

    fn decode(bytes: &[u8]) -> Result<Event, prost::DecodeError> {
        events::Event::decode(bytes).map(to_core)
    }

    fn encode(obj: &Event) -> Vec<u8> {
        from_core(obj.clone()).encode_to_vec()
    }
}

/// An events.k8s.io/v1 Event as the core Event it is stored as. Struct literals without
/// `..Default::default()`: a field added to either message fails to compile here until its
/// conversion is decided.
pub fn to_core(e: events::Event) -> Event {
    let events::Event {
        metadata,
        event_time,
        series,
        reporting_controller,
        reporting_instance,
        action,
        reason,
        regarding,
        related,
        note,
        r#type,
        deprecated_source,
        deprecated_first_timestamp,
        deprecated_last_timestamp,
        deprecated_count,
    } = e;
    Event {
        metadata,
        involved_object: regarding,
        reason,
        message: note,
        r#type,
        count: deprecated_count,
        source: deprecated_source,
        first_timestamp: deprecated_first_timestamp,
        last_timestamp: deprecated_last_timestamp,
        event_time,
        action,
        related,
        reporting_component: reporting_controller,
        reporting_instance,
        series: series.map(|s| EventSeries {
            count: s.count,
            last_observed_time: s.last_observed_time,
        }),
    }
}

/// A stored core Event as events.k8s.io/v1's.
pub fn from_core(e: Event) -> events::Event {
    let Event {
        metadata,
        involved_object,
        reason,
        message,
        r#type,
        count,
        source,
        first_timestamp,
        last_timestamp,
        event_time,
        action,
        related,
        reporting_component,
        reporting_instance,
        series,
    } = e;
    events::Event {
        metadata,
        event_time,
        series: series.map(|s| events::EventSeries {
            count: s.count,
            last_observed_time: s.last_observed_time,
        }),
        reporting_controller: reporting_component,
        reporting_instance,
        action,
        reason,
        regarding: involved_object,
        related,
        note: message,
        r#type,
        deprecated_source: source,
        deprecated_first_timestamp: first_timestamp,
        deprecated_last_timestamp: last_timestamp,
        deprecated_count: count,
    }
}

/// The field labels of events.k8s.io/v1 (upstream's `AddFieldLabelConversionsForEvent`): the
/// version's names of the core fields; `involvedObject.*` and the other core names are not
/// labels here.
pub const FIELDS: &[SelectableField] = &[
    METADATA_FIELDS[0],
    METADATA_FIELDS[1],
    SelectableField::string("regarding.kind", &[2, 1]),
    SelectableField::string("regarding.namespace", &[2, 2]),
    SelectableField::string("regarding.name", &[2, 3]),
    SelectableField::string("regarding.uid", &[2, 4]),
    SelectableField::string("regarding.apiVersion", &[2, 5]),
    SelectableField::string("regarding.resourceVersion", &[2, 6]),
    SelectableField::string("regarding.fieldPath", &[2, 7]),
    SelectableField::string("reason", &[3]),
    SelectableField::string("type", &[5]),
    SelectableField::string("reportingController", &[13]),
    SelectableField::string("source", &[7, 1]),
];

/// Longest `reportingInstance`, `action` and `reason` (upstream's limits).
const SHORT_LIMIT: usize = 128;
/// Longest `note`.
const NOTE_LIMIT: usize = 1024;

fn invalid(v: &mut Violations, field: &str, value: &str, msg: &str) {
    v.push((field.into(), format!("Invalid value: {value:?}: {msg}")));
}

fn required(v: &mut Violations, field: &str) {
    v.push((field.into(), "Required value".into()));
}

fn namespace(e: &Event) -> &str {
    e.metadata.as_ref().map_or("", |m| m.namespace.as_str())
}

/// Upstream's `legacyValidateEvent`: what every event must satisfy, in every version.
fn legacy(e: &Event, v: &mut Violations) {
    let ns = namespace(e);
    let regarding_ns = e
        .involved_object
        .as_ref()
        .map_or("", |o| o.namespace.as_str());
    let mismatch = if e.event_time.is_none() {
        if regarding_ns.is_empty() {
            !ns.is_empty() && ns != "default"
        } else {
            ns != regarding_ns
        }
    } else {
        // An event about a cluster-scoped object lives in `default` or `kube-system`.
        regarding_ns.is_empty() && ns != "default" && ns != "kube-system"
    };
    if mismatch {
        invalid(
            v,
            "involvedObject.namespace",
            regarding_ns,
            "does not match event.namespace",
        );
    }
    if e.event_time.is_some() {
        let controller = &e.reporting_component;
        if controller.is_empty() {
            required(v, "reportingController");
        }
        if let Some(msg) = qualified_name(controller) {
            invalid(v, "reportingController", controller, &msg);
        }
        for (field, value) in [
            ("reportingInstance", &e.reporting_instance),
            ("action", &e.action),
            ("reason", &e.reason),
        ] {
            if value.is_empty() {
                required(v, field);
            }
            if value.len() > SHORT_LIMIT {
                invalid(
                    v,
                    field,
                    "",
                    &format!("can have at most {SHORT_LIMIT} characters"),
                );
            }
        }
        if e.message.len() > NOTE_LIMIT {
            invalid(
                v,
                "message",
                "",
                &format!("can have at most {NOTE_LIMIT} characters"),
            );
        }
    }
    if let Some(msg) = dns1123_subdomain(ns) {
        invalid(v, "namespace", ns, &msg);
    }
}

/// Upstream's `validateV1EventSeries`.
fn series(e: &Event, v: &mut Violations) {
    if let Some(s) = &e.series {
        if s.count < 2 {
            invalid(v, "series.count", "", "should be at least 2");
        }
        if s.last_observed_time.is_none() {
            required(v, "series.lastObservedTime");
        }
    }
}

/// What an events.k8s.io/v1 create must satisfy (the metadata is checked by the Store for
/// every kind).
pub fn validate_create(e: &Event) -> Violations {
    let mut v = Violations::new();
    legacy(e, &mut v);
    series(e, &mut v);
    if e.event_time.is_none() {
        required(&mut v, "eventTime");
    }
    if e.r#type != "Normal" && e.r#type != "Warning" {
        invalid(
            &mut v,
            "type",
            "",
            &format!("has invalid value: {}", e.r#type),
        );
    }
    let unset = [
        ("firstTimestamp", e.first_timestamp.is_some()),
        ("lastTimestamp", e.last_timestamp.is_some()),
        ("count", e.count != 0),
        ("source", source_of(e) != EventSource::default()),
    ];
    for (field, set) in unset {
        if set {
            invalid(&mut v, field, "", "needs to be unset");
        }
    }
    v
}

/// An event's source; absent and empty are the same (a Go value upstream).
fn source_of(e: &Event) -> EventSource {
    e.source.clone().unwrap_or_default()
}

/// An event's object; absent and empty are the same (a Go value upstream).
fn regarding_of(e: &Event) -> ObjectReference {
    e.involved_object.clone().unwrap_or_default()
}

/// What an events.k8s.io/v1 update must satisfy: only the series may change (what recorders
/// patch when an event repeats).
pub fn validate_update(new: &Event, old: &Event) -> Violations {
    let mut v = Violations::new();
    legacy(new, &mut v);
    if new.series != old.series {
        series(new, &mut v);
    }
    let unchanged = [
        ("involvedObject", regarding_of(new) == regarding_of(old)),
        ("reason", new.reason == old.reason),
        ("message", new.message == old.message),
        ("source", source_of(new) == source_of(old)),
        ("firstTimestamp", new.first_timestamp == old.first_timestamp),
        ("lastTimestamp", new.last_timestamp == old.last_timestamp),
        ("count", new.count == old.count),
        ("type", new.r#type == old.r#type),
        ("eventTime", new.event_time == old.event_time),
        ("action", new.action == old.action),
        ("related", new.related == old.related),
        (
            "reportingController",
            new.reporting_component == old.reporting_component,
        ),
        (
            "reportingInstance",
            new.reporting_instance == old.reporting_instance,
        ),
    ];
    for (field, same) in unchanged {
        if !same {
            v.push((field.into(), "Invalid value: field is immutable".into()));
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use kubestore_proto::{Timestamp, meta::v1::ObjectMeta};

    use super::*;

    fn at(seconds: i64, nanos: i32) -> Option<Timestamp> {
        Some(Timestamp { seconds, nanos })
    }

    fn reference(ns: &str) -> Option<ObjectReference> {
        Some(ObjectReference {
            kind: "ConfigMap".into(),
            namespace: ns.into(),
            name: "settings".into(),
            uid: "u1".into(),
            api_version: "v1".into(),
            resource_version: "7".into(),
            field_path: "data".into(),
        })
    }

    /// What kube-rs' Recorder creates.
    fn recorded() -> Event {
        Event {
            metadata: Some(ObjectMeta {
                name: "settings.1".into(),
                namespace: "team".into(),
                ..Default::default()
            }),
            involved_object: reference("team"),
            reason: "Synced".into(),
            message: "all good".into(),
            r#type: "Normal".into(),
            event_time: at(1_700_000_000, 123_000),
            action: "Reconcile".into(),
            reporting_component: "kubestore.io/test".into(),
            reporting_instance: "t-1".into(),
            ..Default::default()
        }
    }

    fn messages(v: &Violations) -> Vec<String> {
        v.iter().map(|(f, d)| format!("{f}: {d}")).collect()
    }

    #[test]
    fn every_field_converts_both_ways_unchanged() {
        let core = Event {
            count: 3,
            source: Some(EventSource {
                component: "kubelet".into(),
                host: "n1".into(),
            }),
            first_timestamp: at(1, 0),
            last_timestamp: at(2, 0),
            related: reference("other"),
            series: Some(EventSeries {
                count: 4,
                last_observed_time: at(3, 5000),
            }),
            ..recorded()
        };
        let v1 = from_core(core.clone());
        assert_eq!(v1.note, "all good");
        assert_eq!(v1.reporting_controller, "kubestore.io/test");
        assert_eq!(v1.deprecated_count, 3);
        assert_eq!(v1.regarding, core.involved_object);
        assert_eq!(to_core(v1.clone()), core);
        assert_eq!(from_core(to_core(v1.clone())), v1);
        // Through the wire too, as the endpoint converts.
        assert_eq!(
            EventsV1::decode(&EventsV1::encode(&core)).expect("decodes"),
            core
        );
    }

    #[test]
    fn what_kube_rs_records_is_valid() {
        assert!(validate_create(&recorded()).is_empty());
        // A cluster-scoped object's event lives in `default`.
        let mut e = recorded();
        e.involved_object = Some(ObjectReference {
            kind: "Namespace".into(),
            name: "team".into(),
            ..Default::default()
        });
        e.metadata.as_mut().expect("meta").namespace = "default".into();
        assert!(validate_create(&e).is_empty());
    }

    #[test]
    fn a_create_is_refused_in_upstream_words() {
        let mut e = recorded();
        e.event_time = None;
        e.count = 2;
        e.r#type = "Odd".into();
        assert_eq!(
            messages(&validate_create(&e)),
            [
                "eventTime: Required value",
                "type: Invalid value: \"\": has invalid value: Odd",
                "count: Invalid value: \"\": needs to be unset",
            ]
        );
        let mut e = recorded();
        e.message = "x".repeat(1025);
        e.reporting_component = "bad name!".into();
        e.series = Some(EventSeries {
            count: 1,
            last_observed_time: None,
        });
        let got = messages(&validate_create(&e));
        assert!(
            got[0].starts_with(
                "reportingController: Invalid value: \"bad name!\": name part must consist of"
            ),
            "{got:?}"
        );
        assert_eq!(
            got[1..],
            [
                "message: Invalid value: \"\": can have at most 1024 characters",
                "series.count: Invalid value: \"\": should be at least 2",
                "series.lastObservedTime: Required value",
            ]
        );
        let mut e = recorded();
        e.involved_object = reference("");
        assert_eq!(
            messages(&validate_create(&e)),
            ["involvedObject.namespace: Invalid value: \"\": does not match event.namespace"]
        );
        let mut e = recorded();
        e.action.clear();
        e.reporting_instance = "i".repeat(129);
        assert_eq!(
            messages(&validate_create(&e)),
            [
                "reportingInstance: Invalid value: \"\": can have at most 128 characters",
                "action: Required value",
            ]
        );
    }

    #[test]
    fn an_update_may_change_only_the_series() {
        let old = recorded();
        let mut new = old.clone();
        new.series = Some(EventSeries {
            count: 2,
            last_observed_time: at(1_700_000_100, 0),
        });
        assert!(validate_update(&new, &old).is_empty());
        // What a merge patch of the whole served event gives back: empty values for absent ones.
        new.source = Some(EventSource::default());
        assert!(validate_update(&new, &old).is_empty());
        new.message = "changed".into();
        new.reporting_instance = "t-2".into();
        assert_eq!(
            messages(&validate_update(&new, &old)),
            [
                "message: Invalid value: field is immutable",
                "reportingInstance: Invalid value: field is immutable",
            ]
        );
    }
}
