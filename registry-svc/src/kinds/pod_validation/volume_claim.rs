//! An ephemeral volume's claim template: upstream's `validateEphemeralVolumeSource`,
//! `ValidatePersistentVolumeClaimTemplate`, `ValidateTemplateObjectMeta` and the main rules of
//! `ValidatePersistentVolumeClaimSpec` (`pkg/apis/core/validation/validation.go`, 1.33).
//!
//! Left out: the claim's name `<pod>-<volume>` (needs the pod's name), and the consistency of
//! `dataSource` with `dataSourceRef` (`must match dataSourceRef`, `may not be specified when
//! dataSourceRef.namespace is specified`), whose upstream message prints a Go `field.Path`
//! struct with heap addresses. The storage request is printed as written, where upstream prints
//! its canonical form (`0` for `0Gi`).

use kubestore_proto::{
    core::v1::{
        EphemeralVolumeSource, PersistentVolumeClaimSpec, TypedLocalObjectReference,
        TypedObjectReference,
    },
    meta::v1::ObjectMeta,
};

use super::{label, subdomain};
use crate::{
    kinds::pod_validation::{not_supported, scheduling},
    quantity::Quantity,
    validation::{ANNOTATIONS_MAX_BYTES, label_value, qualified_name},
    violations::Violations,
};

/// Upstream's `supportedAccessModes`, sorted.
const ACCESS_MODES: &[&str] = &[
    "ReadOnlyMany",
    "ReadWriteMany",
    "ReadWriteOnce",
    "ReadWriteOncePod",
];

/// `validateEphemeralVolumeSource`, for the source at `at`.
pub(super) fn ephemeral(s: &EphemeralVolumeSource, at: &str, v: &mut Violations) {
    let at = format!("{at}.volumeClaimTemplate");
    let Some(t) = &s.volume_claim_template else {
        v.push((at, "Required value".into()));
        return;
    };
    template_meta(
        t.metadata.as_ref().unwrap_or(&ObjectMeta::default()),
        &format!("{at}.metadata"),
        v,
    );
    claim_spec(
        t.spec
            .as_ref()
            .unwrap_or(&PersistentVolumeClaimSpec::default()),
        &format!("{at}.spec"),
        v,
    );
}

/// `ValidateTemplateObjectMeta`: annotations and labels, and nothing else set.
fn template_meta(m: &ObjectMeta, at: &str, v: &mut Violations) {
    let mut bytes = 0;
    for (k, val) in &m.annotations {
        bytes += k.len() + val.len();
        if let Some(e) = qualified_name(&k.to_lowercase()) {
            v.push((
                format!("{at}.annotations"),
                format!("Invalid value: {k:?}: {e}"),
            ));
        }
    }
    if bytes > ANNOTATIONS_MAX_BYTES {
        v.push((
            format!("{at}.annotations"),
            format!("Too long: may not be more than {ANNOTATIONS_MAX_BYTES} bytes"),
        ));
    }
    // metav1's `ValidateLabels` reports a bad value at `labels`, not `labels[key]`.
    for (k, val) in &m.labels {
        if let Some(e) = qualified_name(k) {
            v.push((format!("{at}.labels"), format!("Invalid value: {k:?}: {e}")));
        }
        if let Some(e) = label_value(val) {
            v.push((
                format!("{at}.labels"),
                format!("Invalid value: {val:?}: {e}"),
            ));
        }
    }
    // `validateFieldAllowList`, in the Go struct's field order and with its lower-casing of
    // the first letter only (`uID`).
    for (field, set) in [
        ("name", !m.name.is_empty()),
        ("generateName", !m.generate_name.is_empty()),
        ("namespace", !m.namespace.is_empty()),
        ("uID", !m.uid.is_empty()),
        ("resourceVersion", !m.resource_version.is_empty()),
        ("generation", m.generation != 0),
        ("creationTimestamp", m.creation_timestamp.is_some()),
        ("deletionTimestamp", m.deletion_timestamp.is_some()),
        (
            "deletionGracePeriodSeconds",
            m.deletion_grace_period_seconds.is_some(),
        ),
        ("ownerReferences", !m.owner_references.is_empty()),
        ("finalizers", !m.finalizers.is_empty()),
    ] {
        if set {
            v.push((format!("{at}.{field}"), "Forbidden: cannot be set".into()));
        }
    }
}

/// `ValidatePersistentVolumeClaimSpec`, for the spec at `at`.
fn claim_spec(s: &PersistentVolumeClaimSpec, at: &str, v: &mut Violations) {
    let modes = format!("{at}.accessModes");
    if s.access_modes.is_empty() {
        v.push((
            modes.clone(),
            "Required value: at least 1 access mode is required".into(),
        ));
    }
    if let Some(sel) = &s.selector {
        scheduling::label_selector(sel, &format!("{at}.selector"), v);
    }
    let (mut once_pod, mut others) = (false, false);
    for m in &s.access_modes {
        if !ACCESS_MODES.contains(&m.as_str()) {
            v.push((modes.clone(), not_supported(m, ACCESS_MODES)));
        } else if m == "ReadWriteOncePod" {
            once_pod = true;
        } else {
            others = true;
        }
    }
    if once_pod && others {
        v.push((
            modes,
            "Forbidden: may not use ReadWriteOncePod with other access modes".into(),
        ));
    }
    // Upstream's path: `resources[storage]`, not `resources.requests[storage]`.
    let storage_at = format!("{at}.resources[storage]");
    match s.resources.as_ref().and_then(|r| r.requests.get("storage")) {
        None => v.push((storage_at, "Required value".into())),
        Some(q) => match Quantity::parse(q) {
            Err(e) => v.push((storage_at, format!("Invalid value: {q:?}: {e}"))),
            Ok(n) if n <= Quantity::ZERO => v.push((
                storage_at,
                format!("Invalid value: {q:?}: must be greater than zero"),
            )),
            Ok(_) => {}
        },
    }
    if let Some(class) = &s.storage_class_name
        && !class.is_empty()
        && let Some(e) = subdomain(class)
    {
        v.push((
            format!("{at}.storageClassName"),
            format!("Invalid value: {class:?}: {e}"),
        ));
    }
    if let Some(mode) = &s.volume_mode
        && mode != "Block"
        && mode != "Filesystem"
    {
        v.push((
            format!("{at}.volumeMode"),
            not_supported(mode, &["Block", "Filesystem"]),
        ));
    }
    if let Some(d) = &s.data_source {
        data_source(d, &format!("{at}.dataSource"), v);
    }
    if let Some(d) = &s.data_source_ref {
        data_source_ref(d, &format!("{at}.dataSourceRef"), v);
    }
    if let Some(class) = &s.volume_attributes_class_name
        && !class.is_empty()
        && let Some(e) = subdomain(class)
    {
        v.push((
            format!("{at}.volumeAttributesClassName"),
            format!("Invalid value: {class:?}: {e}"),
        ));
    }
}

/// `validateDataSource`.
fn data_source(d: &TypedLocalObjectReference, at: &str, v: &mut Violations) {
    reference(&d.name, &d.kind, d.api_group.as_deref(), at, v);
}

/// `validateDataSourceRef`: a data source, perhaps in another namespace.
fn data_source_ref(d: &TypedObjectReference, at: &str, v: &mut Violations) {
    reference(&d.name, &d.kind, d.api_group.as_deref(), at, v);
    if let Some(ns) = &d.namespace
        && !ns.is_empty()
        && let Some(e) = label(ns)
    {
        v.push((
            format!("{at}.namespace"),
            format!("Invalid value: {ns:?}: {e}"),
        ));
    }
}

/// The rules `validateDataSource` and `validateDataSourceRef` share.
fn reference(name: &str, kind: &str, api_group: Option<&str>, at: &str, v: &mut Violations) {
    if name.is_empty() {
        v.push((format!("{at}.name"), "Required value".into()));
    }
    if kind.is_empty() {
        v.push((format!("{at}.kind"), "Required value".into()));
    }
    let group = api_group.unwrap_or("");
    if group.is_empty() && kind != "PersistentVolumeClaim" {
        v.push((
            at.to_string(),
            format!(
                "Invalid value: {kind:?}: must be 'PersistentVolumeClaim' when referencing the default apiGroup"
            ),
        ));
    }
    if !group.is_empty()
        && let Some(e) = subdomain(group)
    {
        v.push((
            format!("{at}.apiGroup"),
            format!("Invalid value: {group:?}: {e}"),
        ));
    }
}
