//! The built-in kinds' Tables, as upstream's printers (`pkg/printers/internalversion`) write
//! them: column definitions (names, types, `-o wide` priority, descriptions) and one row's
//! cells. The server always sends every column; kubectl hides priority 1 unless `-o wide`.
//! Each kind's strategy calls its printer (`Strategy::columns`, `Strategy::cells`); the Pod's,
//! the longest, is `pod_printer`.

use kubestore_apimachinery::table::{AGE_DESCRIPTION, Column, NAME_DESCRIPTION, age};
use kubestore_proto::{
    Timestamp,
    coordination::v1::Lease,
    core::v1::{ConfigMap, Event, Secret},
};
use serde_json::{Value, json};

pub(super) fn col(name: &str, ty: &str, priority: i32, description: &str) -> Column {
    Column::new(name, ty, "", priority, description)
}

pub(super) fn name_col(priority: i32) -> Column {
    Column::new("Name", "string", "name", priority, NAME_DESCRIPTION)
}

pub(super) fn age_col() -> Column {
    col("Age", "string", 0, AGE_DESCRIPTION)
}

pub(super) fn secs(t: &Option<Timestamp>) -> Option<i64> {
    t.as_ref().map(|t| t.seconds).filter(|s| *s != 0)
}

pub(super) fn meta_name(m: &Option<kubestore_proto::meta::v1::ObjectMeta>) -> &str {
    m.as_ref().map_or("", |m| m.name.as_str())
}

pub(super) fn created(m: &Option<kubestore_proto::meta::v1::ObjectMeta>) -> Option<i64> {
    m.as_ref().and_then(|m| secs(&m.creation_timestamp))
}

/// ConfigMaps: NAME DATA AGE.
pub fn config_map_columns() -> Vec<Column> {
    vec![
        name_col(0),
        col(
            "Data",
            "string",
            0,
            "Data contains the configuration data. Each key must consist of alphanumeric characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must use the BinaryData field. The keys stored in Data must not overlap with the keys in the BinaryData field, this is enforced during validation process.",
        ),
        age_col(),
    ]
}

/// A ConfigMap's cells.
pub fn config_map_cells(cm: &ConfigMap, now: i64) -> Vec<Value> {
    vec![
        json!(meta_name(&cm.metadata)),
        json!((cm.data.len() + cm.binary_data.len()) as i64),
        json!(age(created(&cm.metadata), now)),
    ]
}

/// Secrets: NAME TYPE DATA AGE.
pub fn secret_columns() -> Vec<Column> {
    vec![
        name_col(0),
        col(
            "Type",
            "string",
            0,
            "Used to facilitate programmatic handling of secret data. More info: https://kubernetes.io/docs/concepts/configuration/secret/#secret-types",
        ),
        col(
            "Data",
            "string",
            0,
            "Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' or '.'. The serialized form of the secret data is a base64 encoded string, representing the arbitrary (possibly non-string) data value here. Described in https://tools.ietf.org/html/rfc4648#section-4",
        ),
        age_col(),
    ]
}

/// A Secret's cells (`stringData` is never stored, so not counted).
pub fn secret_cells(s: &Secret, now: i64) -> Vec<Value> {
    vec![
        json!(meta_name(&s.metadata)),
        json!(s.r#type),
        json!(s.data.len() as i64),
        json!(age(created(&s.metadata), now)),
    ]
}

/// Leases: NAME HOLDER AGE.
pub fn lease_columns() -> Vec<Column> {
    vec![
        name_col(0),
        col(
            "Holder",
            "string",
            0,
            "holderIdentity contains the identity of the holder of a current lease. If Coordinated Leader Election is used, the holder identity must be equal to the elected LeaseCandidate.metadata.name field.",
        ),
        age_col(),
    ]
}

/// A Lease's cells.
pub fn lease_cells(l: &Lease, now: i64) -> Vec<Value> {
    let holder = l
        .spec
        .as_ref()
        .and_then(|s| s.holder_identity.clone())
        .unwrap_or_default();
    vec![
        json!(meta_name(&l.metadata)),
        json!(holder),
        json!(age(created(&l.metadata), now)),
    ]
}

/// Events: LAST SEEN TYPE REASON OBJECT MESSAGE, and wide SUBOBJECT SOURCE FIRST SEEN COUNT
/// NAME.
pub fn event_columns() -> Vec<Column> {
    vec![
        col(
            "Last Seen",
            "string",
            0,
            "The time at which the most recent occurrence of this event was recorded.",
        ),
        col(
            "Type",
            "string",
            0,
            "Type of this event (Normal, Warning), new types could be added in the future",
        ),
        col(
            "Reason",
            "string",
            0,
            "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.",
        ),
        col(
            "Object",
            "string",
            0,
            "The object that this event is about.",
        ),
        col(
            "Subobject",
            "string",
            1,
            "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2]. For example, if the object reference is to a container within a pod, this would take on a value like: \"spec.containers{name}\" (where \"name\" refers to the name of the container that triggered the event) or if no container name is specified \"spec.containers[2]\" (container with index 2 in this pod). This syntax is chosen only to have some well-defined way of referencing a part of an object.",
        ),
        col(
            "Source",
            "string",
            1,
            "The component reporting this event. Should be a short machine understandable string.",
        ),
        col(
            "Message",
            "string",
            0,
            "A human-readable description of the status of this operation.",
        ),
        col(
            "First Seen",
            "string",
            1,
            "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)",
        ),
        col(
            "Count",
            "string",
            1,
            "The number of times this event has occurred.",
        ),
        name_col(1),
    ]
}

/// An Event's cells (upstream's `printEvent`).
pub fn event_cells(e: &Event, now: i64) -> Vec<Value> {
    let first = match secs(&e.first_timestamp).or_else(|| secs(&e.event_time)) {
        Some(t) => age(Some(t), now),
        // Our events before these fields existed: their creation time.
        None => age(created(&e.metadata), now),
    };
    let mut last = match secs(&e.last_timestamp) {
        Some(t) => age(Some(t), now),
        None => first.clone(),
    };
    let mut count = i64::from(e.count);
    if let Some(series) = &e.series {
        last = age(secs(&series.last_observed_time), now);
        count = i64::from(series.count);
    } else if count == 0 {
        count = 1;
    }
    let about = e.involved_object.clone().unwrap_or_default();
    let object = if about.name.is_empty() {
        about.kind.to_lowercase()
    } else {
        format!("{}/{}", about.kind.to_lowercase(), about.name)
    };
    let source = e.source.clone().unwrap_or_default();
    let component = if source.component.is_empty() {
        e.reporting_component.clone()
    } else {
        source.component
    };
    let instance = if source.host.is_empty() {
        e.reporting_instance.clone()
    } else {
        source.host
    };
    let source = if instance.is_empty() {
        component
    } else {
        format!("{component}, {instance}")
    };
    vec![
        json!(last),
        json!(e.r#type),
        json!(e.reason),
        json!(object),
        json!(about.field_path),
        json!(source),
        json!(e.message.trim()),
        json!(first),
        json!(count),
        json!(meta_name(&e.metadata)),
    ]
}
