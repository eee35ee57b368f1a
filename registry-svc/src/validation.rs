//! Generic ObjectMeta validation (apimachinery's `ValidateObjectMeta` and
//! `ValidateObjectMetaUpdate`): names, namespaces, labels, annotations, finalizers, owner
//! references, and the fields that never change after create.
//!
//! Every function appends to a list of `(field path, description)` so that one response lists
//! every problem at once.

use kubestore_proto::meta::v1::ObjectMeta;

use crate::violations::Violations;

/// Finalizer asking the garbage collector to orphan dependents (metav1's
/// `FinalizerOrphanDependents`).
pub const ORPHAN: &str = "orphan";
/// Finalizer asking the garbage collector to delete dependents first (metav1's
/// `FinalizerDeleteDependents`).
pub const FOREGROUND: &str = "foregroundDeletion";

/// Longest DNS-1123 subdomain.
pub const DNS1123_SUBDOMAIN_MAX: usize = 253;
/// Longest DNS-1123 label.
pub const DNS1123_LABEL_MAX: usize = 63;
/// Total size of all annotations, upstream's `TotalAnnotationSizeLimitB`.
pub const ANNOTATIONS_MAX_BYTES: usize = 256 * 1024;
/// Most owner references an object may carry. Upstream has no count limit (only the request
/// size); we bound it so that a request cannot make validation walk a million entries.
pub const MAX_OWNER_REFERENCES: usize = 1000;
/// Most finalizers an object may carry (same reason as [`MAX_OWNER_REFERENCES`]).
pub const MAX_FINALIZERS: usize = 1000;

fn is_alnum_lower(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

/// Problems of `s` as a DNS-1123 label (`[a-z0-9]([-a-z0-9]*[a-z0-9])?`, at most 63).
pub fn dns1123_label(s: &str) -> Option<String> {
    let b = s.as_bytes();
    if s.is_empty() || s.len() > DNS1123_LABEL_MAX {
        return Some(format!(
            "must be no more than {DNS1123_LABEL_MAX} characters and not empty"
        ));
    }
    let ok = b.iter().all(|&c| is_alnum_lower(c) || c == b'-')
        && is_alnum_lower(b[0])
        && is_alnum_lower(b[b.len() - 1]);
    (!ok).then(|| {
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character".to_string()
    })
}

/// Problems of `s` as a DNS-1123 subdomain (labels joined by '.', at most 253).
pub fn dns1123_subdomain(s: &str) -> Option<String> {
    if s.is_empty() || s.len() > DNS1123_SUBDOMAIN_MAX {
        return Some(format!(
            "must be no more than {DNS1123_SUBDOMAIN_MAX} characters and not empty"
        ));
    }
    let b = s.as_bytes();
    let ok = b
        .iter()
        .all(|&c| is_alnum_lower(c) || c == b'-' || c == b'.')
        && is_alnum_lower(b[0])
        && is_alnum_lower(b[b.len() - 1])
        && s.split('.').all(|l| {
            !l.is_empty()
                && is_alnum_lower(l.as_bytes()[0])
                && is_alnum_lower(l.as_bytes()[l.len() - 1])
        });
    (!ok).then(|| {
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character".to_string()
    })
}

fn qualified_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    !s.is_empty()
        && s.len() <= 63
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|&c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_' || c == b'.')
}

/// Problems of `s` as a qualified name (`[prefix/]name`), used for label and annotation keys
/// and finalizers.
pub fn qualified_name(s: &str) -> Option<String> {
    let (prefix, name) = match s.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, s),
    };
    if let Some(p) = prefix
        && let Some(e) = dns1123_subdomain(p)
    {
        return Some(format!("prefix part {e}"));
    }
    (!qualified_name_part(name)).then(|| {
        "name part must consist of alphanumeric characters, '-', '_' or '.', must start and end with an alphanumeric character, and be at most 63 characters".to_string()
    })
}

/// Problems of `s` as a label value (empty, or a qualified name part).
pub fn label_value(s: &str) -> Option<String> {
    (!s.is_empty() && !qualified_name_part(s)).then(|| {
        "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (at most 63)".to_string()
    })
}

/// Problems of a name used in a key: upstream's path-segment rule (`IsValidPathSegmentName`).
pub fn path_segment(name: &str) -> Option<String> {
    if name == "." || name == ".." {
        return Some(format!("may not be '{name}'"));
    }
    (name.contains('/') || name.contains('%')).then(|| "may not contain '/' or '%'".to_string())
}

/// Validates the metadata of an object about to be stored (create or update).
pub fn object_meta(
    meta: &ObjectMeta,
    namespaced: bool,
    name_rule: fn(&str) -> Option<String>,
    v: &mut Violations,
) {
    let mut add = |f: &str, d: String| v.push((f.to_string(), d));
    if meta.name.is_empty() {
        add(
            "metadata.name",
            "Required value: name or generateName is required".into(),
        );
    } else if let Some(e) = name_rule(&meta.name) {
        add(
            "metadata.name",
            format!("Invalid value: {:?}: {e}", meta.name),
        );
    }
    if !meta.generate_name.is_empty() {
        // The generated suffix makes the result valid if the prefix is.
        let base = meta.generate_name.trim_end_matches('-');
        if !base.is_empty()
            && let Some(e) = name_rule(base)
        {
            add(
                "metadata.generateName",
                format!("Invalid value: {:?}: {e}", meta.generate_name),
            );
        }
    }
    if namespaced {
        if meta.namespace.is_empty() {
            add("metadata.namespace", "Required value".into());
        } else if let Some(e) = dns1123_label(&meta.namespace) {
            add(
                "metadata.namespace",
                format!("Invalid value: {:?}: {e}", meta.namespace),
            );
        }
    } else if !meta.namespace.is_empty() {
        add(
            "metadata.namespace",
            "Forbidden: not allowed on this type".into(),
        );
    }
    if meta.generation < 0 {
        add(
            "metadata.generation",
            "Invalid value: must be greater than or equal to 0".into(),
        );
    }
    if meta.deletion_grace_period_seconds.is_some_and(|g| g < 0) {
        add(
            "metadata.deletionGracePeriodSeconds",
            "Invalid value: must be greater than or equal to 0".into(),
        );
    }
    for (k, val) in &meta.labels {
        if let Some(e) = qualified_name(k) {
            add("metadata.labels", format!("Invalid value: {k:?}: {e}"));
        }
        if let Some(e) = label_value(val) {
            add(
                &format!("metadata.labels[{k}]"),
                format!("Invalid value: {val:?}: {e}"),
            );
        }
    }
    let mut annotation_bytes = 0;
    for (k, val) in &meta.annotations {
        annotation_bytes += k.len() + val.len();
        if let Some(e) = qualified_name(&k.to_ascii_lowercase()) {
            add("metadata.annotations", format!("Invalid value: {k:?}: {e}"));
        }
    }
    if annotation_bytes > ANNOTATIONS_MAX_BYTES {
        add(
            "metadata.annotations",
            format!("Too long: must have at most {ANNOTATIONS_MAX_BYTES} bytes"),
        );
    }
    if meta.finalizers.len() > MAX_FINALIZERS {
        add(
            "metadata.finalizers",
            format!(
                "Too many: {}: must have at most {MAX_FINALIZERS} items",
                meta.finalizers.len()
            ),
        );
    } else {
        for (i, f) in meta.finalizers.iter().enumerate() {
            if let Some(e) = qualified_name(f) {
                add(
                    &format!("metadata.finalizers[{i}]"),
                    format!("Invalid value: {f:?}: {e}"),
                );
            }
        }
    }
    if meta.finalizers.iter().any(|f| f == ORPHAN)
        && meta.finalizers.iter().any(|f| f == FOREGROUND)
    {
        add(
            "metadata.finalizers",
            "Invalid value: finalizers \"orphan\" and \"foregroundDeletion\" cannot be both set"
                .into(),
        );
    }
    if meta.owner_references.len() > MAX_OWNER_REFERENCES {
        add(
            "metadata.ownerReferences",
            format!(
                "Too many: {}: must have at most {MAX_OWNER_REFERENCES} items",
                meta.owner_references.len()
            ),
        );
        return;
    }
    let mut controllers = 0;
    for (i, o) in meta.owner_references.iter().enumerate() {
        for (field, value) in [
            ("apiVersion", &o.api_version),
            ("kind", &o.kind),
            ("name", &o.name),
            ("uid", &o.uid),
        ] {
            if value.is_empty() {
                add(
                    &format!("metadata.ownerReferences[{i}].{field}"),
                    "Required value".into(),
                );
            }
        }
        if o.controller == Some(true) {
            controllers += 1;
        }
    }
    if controllers > 1 {
        add(
            "metadata.ownerReferences",
            "Invalid value: only one reference can have Controller set to true".into(),
        );
    }
}

/// Validates what may not change on update (`ValidateObjectMetaUpdate`). The deletion fields
/// are immutable whatever the old object holds: only Delete sets them (an Update that could
/// set them could delete an object, or make a running pod look terminating).
pub fn object_meta_update(new: &ObjectMeta, old: &ObjectMeta, v: &mut Violations) {
    let mut immutable = |field: &str, changed: bool| {
        if changed {
            v.push((
                field.to_string(),
                "Invalid value: field is immutable".to_string(),
            ));
        }
    };
    immutable("metadata.name", new.name != old.name);
    immutable("metadata.namespace", new.namespace != old.namespace);
    immutable("metadata.uid", new.uid != old.uid);
    immutable(
        "metadata.creationTimestamp",
        new.creation_timestamp != old.creation_timestamp,
    );
    immutable(
        "metadata.deletionTimestamp",
        new.deletion_timestamp != old.deletion_timestamp,
    );
    immutable(
        "metadata.deletionGracePeriodSeconds",
        new.deletion_grace_period_seconds != old.deletion_grace_period_seconds,
    );
    if new.generation < old.generation {
        v.push((
            "metadata.generation".into(),
            "Invalid value: must not be decremented".into(),
        ));
    }
    if old.deletion_timestamp.is_some() {
        let added: Vec<&String> = new
            .finalizers
            .iter()
            .filter(|f| !old.finalizers.contains(f))
            .collect();
        if !added.is_empty() {
            v.push((
                "metadata.finalizers".into(),
                format!("Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers {added:?}"),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_dns1123() {
        assert!(dns1123_subdomain("nginx").is_none());
        assert!(dns1123_subdomain("a.b-c.d").is_none());
        for bad in ["", "Nginx", "-a", "a-", "a..b", "a_b", &"a".repeat(254)] {
            assert!(dns1123_subdomain(bad).is_some(), "{bad}");
        }
        assert!(dns1123_label("default").is_none());
        assert!(dns1123_label("a.b").is_some());
        assert!(dns1123_label(&"a".repeat(64)).is_some());
    }

    #[test]
    fn label_keys_and_values() {
        assert!(qualified_name("app").is_none());
        assert!(qualified_name("example.com/app").is_none());
        assert!(qualified_name("Example.com/app").is_some());
        assert!(qualified_name("a/b/c").is_some());
        assert!(qualified_name("-a").is_some());
        assert!(label_value("").is_none());
        assert!(label_value("v1.2_x").is_none());
        assert!(label_value("bad value").is_some());
    }

    #[test]
    fn every_violation_is_reported() {
        let meta = ObjectMeta {
            name: "Bad_Name".into(),
            namespace: "Default".into(),
            labels: [("bad key!".to_string(), "bad value!".to_string())].into(),
            finalizers: vec!["orphan".into(), "foregroundDeletion".into()],
            ..Default::default()
        };
        let mut v = Violations::new();
        object_meta(&meta, true, dns1123_subdomain, &mut v);
        let fields: Vec<&str> = v.iter().map(|(f, _)| f.as_str()).collect();
        assert!(fields.contains(&"metadata.name"), "{v:?}");
        assert!(fields.contains(&"metadata.namespace"), "{v:?}");
        assert!(fields.contains(&"metadata.labels"), "{v:?}");
        assert!(fields.contains(&"metadata.labels[bad key!]"), "{v:?}");
        assert!(fields.contains(&"metadata.finalizers"), "{v:?}");
    }

    #[test]
    fn repeated_fields_are_bounded_before_their_items_are_checked() {
        let meta = ObjectMeta {
            name: "a".into(),
            namespace: "default".into(),
            owner_references: vec![Default::default(); 1_000_000],
            finalizers: vec![String::new(); MAX_FINALIZERS + 1],
            ..Default::default()
        };
        let mut v = Violations::new();
        object_meta(&meta, true, dns1123_subdomain, &mut v);
        assert_eq!(v.len(), 2, "{v:?}");
        assert!(v.iter().any(|(f, d)| f == "metadata.ownerReferences" && d.starts_with("Too many: 1000000")));
    }

    #[test]
    fn an_update_can_neither_set_nor_change_deletion_fields() {
        let live = ObjectMeta {
            name: "a".into(),
            ..Default::default()
        };
        let terminating = ObjectMeta {
            deletion_timestamp: Some(kubestore_proto::Timestamp {
                seconds: 100,
                nanos: 0,
            }),
            deletion_grace_period_seconds: Some(30),
            ..live.clone()
        };
        let mut v = Violations::new();
        object_meta_update(&terminating, &live, &mut v);
        let fields: Vec<&str> = v.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(
            fields,
            [
                "metadata.deletionTimestamp",
                "metadata.deletionGracePeriodSeconds"
            ]
        );
        let mut v = Violations::new();
        object_meta_update(&terminating, &terminating, &mut v);
        assert!(v.is_empty(), "{v:?}");
    }
}
