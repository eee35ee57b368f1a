//! `metadata.managedFields` and structured-merge-diff's managers, both ways (upstream's
//! `managedfields/internal` `DecodeManagedFields`, `EncodeObjectManagedFields`,
//! `BuildManagerIdentifier`, the cap on update managers and the conflict printer).
//!
//! A manager's id is the JSON of its entry's identifying fields, as upstream builds it:
//! `{"manager":"kubectl","operation":"Update","apiVersion":"v1"}`. An applier's id has no
//! apiVersion, so that one applier is one manager whatever version it applies in.

use std::collections::BTreeMap;

use kubestore_apimachinery::smd::{ManagedFields, Set, VersionedSet};
use kubestore_proto::meta::v1::ManagedFieldsEntry;
use pbjson_types::Timestamp;
use serde::{Deserialize, Serialize};

/// An apply's operation.
pub const APPLY: &str = "Apply";
/// Any other write's operation.
pub const UPDATE: &str = "Update";
/// The only fields type.
pub const FIELDS_V1: &str = "FieldsV1";
/// Upstream's cap on the update managers an object keeps (`DefaultMaxUpdateManagers`).
pub const MAX_UPDATE_MANAGERS: usize = 10;
/// The manager older update managers are merged into past the cap.
pub const ANCIENT_CHANGES: &str = "ancient-changes";

/// The identifying fields of an entry, in upstream's JSON order.
#[derive(Serialize, Deserialize, Default)]
struct Id {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    manager: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    operation: String,
    #[serde(
        default,
        rename = "apiVersion",
        skip_serializing_if = "String::is_empty"
    )]
    api_version: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    subresource: String,
}

/// The id of `manager` writing with `operation` in `api_version` through `subresource`.
pub fn manager_id(manager: &str, operation: &str, api_version: &str, subresource: &str) -> String {
    let id = Id {
        manager: manager.into(),
        operation: operation.into(),
        api_version: if operation == APPLY {
            String::new()
        } else {
            api_version.into()
        },
        subresource: subresource.into(),
    };
    serde_json::to_string(&id).unwrap_or_default()
}

/// Upstream's `printManager`: `"kubectl"`, `"kubectl" with subresource "status"`, and for an
/// update `... using v1`.
pub fn print_manager(id: &str) -> String {
    let go_quote = kubestore_apimachinery::gotext::go_quote;
    let Ok(e) = serde_json::from_str::<Id>(id) else {
        return go_quote(id);
    };
    let mut s = go_quote(&e.manager);
    if !e.subresource.is_empty() {
        s = format!("{s} with subresource {}", go_quote(&e.subresource));
    }
    // Upstream's ids carry no time, so its `at <time>` branch never prints.
    if e.operation == UPDATE {
        s = format!("{s} using {}", e.api_version);
    }
    s
}

/// An object's managers and the time each last changed its fields.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Managed {
    /// Manager id to its fields.
    pub fields: ManagedFields,
    /// Manager id to its time.
    pub times: BTreeMap<String, Option<Timestamp>>,
}

/// Upstream's `isResetManagedFields`: one empty entry (a client clearing them; an empty list
/// is no list in protobuf, and keeps the stored ones, see the README's deviations).
pub fn is_reset(entries: &[ManagedFieldsEntry]) -> bool {
    matches!(entries, [one] if *one == ManagedFieldsEntry::default())
}

/// Upstream's `DecodeManagedFields`: an entry whose fields do not decode, of another fields
/// type or operation, is an error (the caller then keeps the stored entries).
pub fn decode(entries: &[ManagedFieldsEntry]) -> Result<Managed, String> {
    let mut m = Managed::default();
    for (i, e) in entries.iter().enumerate() {
        if e.fields_type != FIELDS_V1 {
            return Err(format!(
                "error decoding managed field entry {i}: fieldsType must be {FIELDS_V1:?}, not {:?}",
                e.fields_type
            ));
        }
        let applied = match e.operation.as_str() {
            APPLY => true,
            UPDATE => false,
            other => {
                return Err(format!(
                    "error decoding managed field entry {i}: operation {other:?} is neither Apply nor Update"
                ));
            }
        };
        let set = Set::from_fields_v1(&e.fields_v1)
            .map_err(|err| format!("error decoding managed field entry {i}: {err}"))?;
        let id = manager_id(&e.manager, &e.operation, &e.api_version, &e.subresource);
        m.fields
            .insert(id.clone(), VersionedSet::new(set, &e.api_version, applied));
        m.times.insert(id, e.time);
    }
    Ok(m)
}

/// Upstream's `encodeManagedFields` and `sortEncodedManagedFields`: Apply entries first, then
/// by time, manager, apiVersion and subresource.
pub fn encode(m: &Managed) -> Vec<ManagedFieldsEntry> {
    let mut out: Vec<ManagedFieldsEntry> = m
        .fields
        .iter()
        .filter(|(_, vs)| !vs.set.is_empty())
        .map(|(id, vs)| {
            let e: Id = serde_json::from_str(id).unwrap_or_default();
            ManagedFieldsEntry {
                manager: e.manager,
                operation: if vs.applied { APPLY } else { UPDATE }.to_string(),
                api_version: vs.api_version.clone(),
                time: m.times.get(id).cloned().flatten(),
                fields_type: FIELDS_V1.into(),
                fields_v1: vs.set.to_fields_v1(),
                subresource: e.subresource,
            }
        })
        .collect();
    out.sort_by(|p, q| {
        let secs = |t: &Option<Timestamp>| t.as_ref().map_or(0, |t| t.seconds);
        p.operation
            .cmp(&q.operation)
            .then(secs(&p.time).cmp(&secs(&q.time)))
            .then_with(|| p.manager.cmp(&q.manager))
            .then_with(|| p.api_version.cmp(&q.api_version))
            .then_with(|| p.subresource.cmp(&q.subresource))
    });
    out
}

/// Upstream's `capUpdateManagers`: past `max` update managers, the oldest are merged, per API
/// version, into an `ancient-changes` manager.
pub fn cap_update_managers(m: &mut Managed, max: usize) {
    let secs = |m: &Managed, id: &str| m.times.get(id).cloned().flatten().map_or(0, |t| t.seconds);
    let mut updaters: Vec<String> = m
        .fields
        .iter()
        .filter(|(_, vs)| !vs.applied)
        .map(|(id, _)| id.clone())
        .collect();
    if updaters.len() <= max {
        return;
    }
    updaters.sort_by(|a, b| secs(m, a).cmp(&secs(m, b)).then_with(|| a.cmp(b)));
    let mut first_of_version: BTreeMap<String, String> = BTreeMap::new();
    let mut length = updaters.len();
    for manager in updaters {
        if length <= max {
            break;
        }
        let Some(vs) = m.fields.get(&manager).cloned() else {
            continue;
        };
        let time = m.times.get(&manager).cloned().flatten();
        let version = vs.api_version.clone();
        let bucket = manager_id(ANCIENT_CHANGES, UPDATE, &version, "");
        match first_of_version.get(&version) {
            Some(first) => {
                if !m.fields.contains_key(&bucket)
                    && let Some(s) = m.fields.remove(first)
                {
                    m.times.remove(first);
                    m.fields.insert(bucket.clone(), s);
                }
                let merged = m
                    .fields
                    .get(&bucket)
                    .map_or_else(Set::new, |b| b.set.clone())
                    .union(&vs.set);
                m.fields.insert(
                    bucket.clone(),
                    VersionedSet::new(merged, version, vs.applied),
                );
                m.fields.remove(&manager);
                m.times.remove(&manager);
                m.times.insert(bucket, time);
                length -= 1;
            }
            None => {
                first_of_version.insert(version, manager);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(manager: &str, op: &str, secs: i64, fields: &str) -> ManagedFieldsEntry {
        ManagedFieldsEntry {
            manager: manager.into(),
            operation: op.into(),
            api_version: "v1".into(),
            time: Some(Timestamp {
                seconds: secs,
                nanos: 0,
            }),
            fields_type: FIELDS_V1.into(),
            fields_v1: fields.into(),
            subresource: String::new(),
        }
    }

    #[test]
    fn ids_are_upstreams_json_and_appliers_have_no_version() {
        assert_eq!(
            manager_id("kubectl", UPDATE, "v1", ""),
            r#"{"manager":"kubectl","operation":"Update","apiVersion":"v1"}"#
        );
        assert_eq!(
            manager_id("kubectl", APPLY, "v1", "status"),
            r#"{"manager":"kubectl","operation":"Apply","subresource":"status"}"#
        );
    }

    #[test]
    fn managers_print_as_upstream() {
        assert_eq!(
            print_manager(&manager_id("kubectl-client-side-apply", UPDATE, "v1", "")),
            r#""kubectl-client-side-apply" using v1"#
        );
        assert_eq!(
            print_manager(&manager_id("a", APPLY, "v1", "status")),
            r#""a" with subresource "status""#
        );
    }

    #[test]
    fn entries_round_trip_and_sort_apply_first_then_by_time() {
        let entries = vec![
            entry("b", UPDATE, 5, r#"{"f:data":{"f:b":{}}}"#),
            entry("a", UPDATE, 9, r#"{"f:data":{"f:a":{}}}"#),
            entry("z", APPLY, 10, r#"{"f:data":{"f:z":{}}}"#),
        ];
        let m = decode(&entries).expect("decodes");
        let back = encode(&m);
        let order: Vec<&str> = back.iter().map(|e| e.manager.as_str()).collect();
        assert_eq!(order, ["z", "b", "a"]);
        assert_eq!(back[0].api_version, "v1");
        assert_eq!(back[2].fields_v1, r#"{"f:data":{"f:a":{}}}"#);
    }

    #[test]
    fn entries_that_do_not_decode_are_an_error_and_one_empty_entry_resets() {
        let mut bad = entry("a", "Patch", 1, "{}");
        assert!(decode(std::slice::from_ref(&bad)).is_err());
        bad.operation = UPDATE.into();
        bad.fields_type = "FieldsV2".into();
        assert!(decode(&[bad]).is_err());
        assert!(is_reset(&[ManagedFieldsEntry::default()]));
        assert!(!is_reset(&[]));
    }

    #[test]
    fn past_ten_update_managers_the_oldest_merge_into_ancient_changes() {
        let entries: Vec<_> = (0..12)
            .map(|i| {
                entry(
                    &format!("m{i:02}"),
                    UPDATE,
                    i,
                    &format!(r#"{{"f:data":{{"f:k{i}":{{}}}}}}"#),
                )
            })
            .collect();
        let mut m = decode(&entries).expect("decodes");
        cap_update_managers(&mut m, MAX_UPDATE_MANAGERS);
        let out = encode(&m);
        assert_eq!(out.len(), 10);
        let ancient = out
            .iter()
            .find(|e| e.manager == ANCIENT_CHANGES)
            .expect("ancient-changes");
        assert_eq!(
            ancient.fields_v1,
            r#"{"f:data":{"f:k0":{},"f:k1":{},"f:k2":{}}}"#
        );
        assert!(
            !out.iter()
                .any(|e| ["m00", "m01", "m02"].contains(&e.manager.as_str()))
        );
    }
}
