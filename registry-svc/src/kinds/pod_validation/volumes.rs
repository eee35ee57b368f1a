//! A pod's volumes and what its containers mount: upstream's `ValidateVolumes`,
//! `ValidateVolumeMounts` and `ValidateVolumeDevices` (`pkg/apis/core/validation/validation.go`,
//! 1.33), with their paths, words and order. Each source's own rules live in `volume_sources`
//! (`validateVolumeSource` and the simple sources), `volume_projected` (downward API and
//! projected volumes) and `volume_claim` (an ephemeral volume's claim template); the path rules
//! they share are here.
//!
//! Where kubestore deliberately differs:
//! - The rules that need the pod's name are skipped (it is not passed here): an ephemeral
//!   volume's claim name `<pod>-<volume>` as a DNS subdomain, and a `persistentVolumeClaim`
//!   naming the claim of one of the pod's ephemeral volumes.
//! - Ephemeral containers' mounts are not checked: no pod that reaches validation has any
//!   (a create may not carry them; no update may add them).
//! - Image volumes may be mounted with `subPath`/`subPathExpr`: 1.33 (ImageVolume beta) dropped
//!   1.31's `not allowed in image volume sources`; no `readOnly` is required of their mounts.
//! - A quantity that does not parse (an `emptyDir.sizeLimit`, a claim's storage request) is
//!   `Invalid` at its field: upstream refuses it while decoding, before validation.
//! - Go renders some bad values as Go structs (`%#v`); `go_strings` and [`go_pointer`] mimic that
//!   rendering, but a pointer's address (random upstream) is written as a fixed placeholder.

use std::collections::{BTreeMap, BTreeSet};

use kubestore_proto::core::v1::{
    Container, KeyToPath, PodSpec, SecurityContext, Volume, VolumeDevice, VolumeMount,
};

use super::{go_strings, not_supported};
use crate::{
    validation::{dns1123_label, dns1123_subdomain},
    violations::Violations,
};

#[path = "volume_claim.rs"]
mod claim;
#[path = "volume_projected.rs"]
mod projected;
#[path = "volume_sources.rs"]
mod sources;
#[cfg(test)]
#[path = "volume_tests.rs"]
mod tests;

/// Upstream's `fileModeErrorMsg`.
const FILE_MODE: &str = "must be a number between 0 and 0777 (octal), both inclusive";

/// The volumes a mount or device may name: those without errors, by name (upstream's `vols`).
pub(super) type Valid<'a> = BTreeMap<&'a str, &'a Volume>;

/// Upstream's `ValidateVolumes`: the volumes a container's mounts and devices may name
/// ([`container`], called where `validateContainerCommon` checks them).
pub(super) fn validate<'a>(spec: &'a PodSpec, v: &mut Violations) -> Valid<'a> {
    volumes(&spec.volumes, v)
}

/// `ValidateVolumeMounts` and `ValidateVolumeDevices` of the container at `path`.
pub(super) fn container(c: &Container, path: &str, valid: &Valid<'_>, v: &mut Violations) {
    mounts_and_devices(
        &c.volume_mounts,
        &c.volume_devices,
        c.security_context.as_ref(),
        path,
        valid,
        v,
    );
}

/// `ValidateVolumes`: each volume's source, then its name (required, a DNS label, unique among
/// the valid volumes before it). Returns the valid volumes.
fn volumes<'a>(list: &'a [Volume], v: &mut Violations) -> Valid<'a> {
    let mut valid = Valid::new();
    for (i, vol) in list.iter().enumerate() {
        let path = format!("spec.volumes[{i}]");
        let mut el = Violations::new();
        sources::validate(vol, &path, &mut el);
        let name_path = format!("{path}.name");
        if vol.name.is_empty() {
            el.push((name_path.clone(), "Required value".into()));
        } else if let Some(e) = label(&vol.name) {
            el.push((
                name_path.clone(),
                format!("Invalid value: {:?}: {e}", vol.name),
            ));
        }
        if valid.contains_key(vol.name.as_str()) {
            el.push((name_path, format!("Duplicate value: {:?}", vol.name)));
        }
        if el.is_empty() {
            valid.insert(vol.name.as_str(), vol);
        } else {
            v.merge(el);
        }
    }
    valid
}

/// One container's mounts and devices, at the container's `path`.
fn mounts_and_devices(
    mounts: &[VolumeMount],
    devices: &[VolumeDevice],
    security: Option<&SecurityContext>,
    path: &str,
    valid: &Valid<'_>,
    v: &mut Violations,
) {
    // `GetVolumeMountMap` and `GetVolumeDeviceMap`: name to path, the last of a name winning.
    let mount_map: BTreeMap<&str, &str> = mounts
        .iter()
        .map(|m| (m.name.as_str(), m.mount_path.as_str()))
        .collect();
    let device_map: BTreeMap<&str, &str> = devices
        .iter()
        .map(|d| (d.name.as_str(), d.device_path.as_str()))
        .collect();
    let privileged = security.and_then(|s| s.privileged) == Some(true);
    volume_mounts(
        mounts,
        &device_map,
        valid,
        privileged,
        &format!("{path}.volumeMounts"),
        v,
    );
    volume_devices(
        devices,
        &mount_map,
        valid,
        &format!("{path}.volumeDevices"),
        v,
    );
}

/// `ValidateVolumeMounts`, for the mounts at `list`. Upstream reports the path rules of
/// `subPath`, `subPathExpr`, `mountPropagation` and `recursiveReadOnly` at the list's path
/// (`volumeMounts.subPath`), not the item's; so do we.
fn volume_mounts(
    mounts: &[VolumeMount],
    devices: &BTreeMap<&str, &str>,
    valid: &Valid<'_>,
    privileged: bool,
    list: &str,
    v: &mut Violations,
) {
    let mut mount_points = BTreeSet::new();
    for (i, m) in mounts.iter().enumerate() {
        let at = |f: &str| format!("{list}[{i}].{f}");
        if m.name.is_empty() {
            v.push((at("name"), "Required value".into()));
        }
        if !valid.contains_key(m.name.as_str()) {
            v.push((at("name"), format!("Not found: {:?}", m.name)));
        }
        if m.mount_path.is_empty() {
            v.push((at("mountPath"), "Required value".into()));
        }
        if !mount_points.insert(m.mount_path.as_str()) {
            v.push((
                at("mountPath"),
                format!("Invalid value: {:?}: must be unique", m.mount_path),
            ));
        }
        if devices.contains_key(m.name.as_str()) {
            v.push((
                at("name"),
                format!(
                    "Invalid value: {:?}: must not already exist in volumeDevices",
                    m.name
                ),
            ));
        }
        if devices.values().any(|p| *p == m.mount_path) {
            v.push((
                at("mountPath"),
                format!(
                    "Invalid value: {:?}: must not already exist as a path in volumeDevices",
                    m.mount_path
                ),
            ));
        }
        if !m.sub_path.is_empty() {
            local_descending_path(&m.sub_path, &format!("{list}.subPath"), v);
        }
        if !m.sub_path_expr.is_empty() {
            if !m.sub_path.is_empty() {
                v.push((
                    at("subPathExpr"),
                    format!(
                        "Invalid value: {:?}: subPathExpr and subPath are mutually exclusive",
                        m.sub_path_expr
                    ),
                ));
            }
            local_descending_path(&m.sub_path_expr, &format!("{list}.subPathExpr"), v);
        }
        if let Some(p) = &m.mount_propagation {
            mount_propagation(p, privileged, &format!("{list}.mountPropagation"), v);
        }
        recursive_read_only(m, &format!("{list}.recursiveReadOnly"), v);
    }
}

/// `validateMountPropagation` (the container is known: pods are validated whole).
fn mount_propagation(p: &str, privileged: bool, at: &str, v: &mut Violations) {
    const SUPPORTED: &[&str] = &["Bidirectional", "HostToContainer", "None"];
    if !SUPPORTED.contains(&p) {
        v.push((at.to_string(), not_supported(p, SUPPORTED)));
    }
    if p == "Bidirectional" && !privileged {
        v.push((
            at.to_string(),
            "Forbidden: Bidirectional mount propagation is available only to privileged containers"
                .into(),
        ));
    }
}

/// `validateMountRecursiveReadOnly`.
fn recursive_read_only(m: &VolumeMount, at: &str, v: &mut Violations) {
    match m.recursive_read_only.as_deref() {
        None | Some("Disabled") => {}
        Some("Enabled" | "IfPossible") => {
            if !m.read_only {
                v.push((
                    at.to_string(),
                    "Forbidden: may only be specified when readOnly is true".into(),
                ));
            }
            if m.mount_propagation.as_deref().is_some_and(|p| p != "None") {
                v.push((
                    at.to_string(),
                    "Forbidden: may only be specified when mountPropagation is None or not specified"
                        .into(),
                ));
            }
        }
        Some(other) => v.push((
            at.to_string(),
            not_supported(other, &["Disabled", "Enabled", "IfPossible"]),
        )),
    }
}

/// `ValidateVolumeDevices`, for the devices at `list`. No absolute `devicePath` is required
/// (upstream requires none either): only no `..`.
fn volume_devices(
    devices: &[VolumeDevice],
    mounts: &BTreeMap<&str, &str>,
    valid: &Valid<'_>,
    list: &str,
    v: &mut Violations,
) {
    let mut paths = BTreeSet::new();
    let mut names = BTreeSet::new();
    for (i, d) in devices.iter().enumerate() {
        let at = |f: &str| format!("{list}[{i}].{f}");
        let (name, path) = (d.name.as_str(), d.device_path.as_str());
        let claim = valid
            .get(name)
            .map(|vol| vol.persistent_volume_claim.is_some() || vol.ephemeral.is_some());
        if name.is_empty() {
            v.push((at("name"), "Required value".into()));
        }
        if names.contains(name) {
            v.push((
                at("name"),
                format!("Invalid value: {name:?}: must be unique"),
            ));
        }
        match claim {
            Some(false) => v.push((
                at("name"),
                format!(
                    "Invalid value: {name:?}: can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode"
                ),
            )),
            None => v.push((at("name"), format!("Not found: {name:?}"))),
            Some(true) => {}
        }
        if path.is_empty() {
            v.push((at("devicePath"), "Required value".into()));
        }
        if paths.contains(path) {
            v.push((
                at("devicePath"),
                format!("Invalid value: {path:?}: must be unique"),
            ));
        }
        if !path.is_empty() && has_backsteps(path) {
            v.push((
                at("devicePath"),
                format!("Invalid value: {path:?}: can not contain backsteps ('..')"),
            ));
        } else {
            paths.insert(path);
        }
        if mounts.contains_key(name) {
            v.push((
                at("name"),
                format!("Invalid value: {name:?}: must not already exist in volumeMounts"),
            ));
        }
        if mounts.values().any(|p| *p == path) {
            v.push((
                at("devicePath"),
                format!(
                    "Invalid value: {path:?}: must not already exist as a path in volumeMounts"
                ),
            ));
        }
        if !name.is_empty() {
            names.insert(name);
        }
    }
}

/// Upstream's pod-only rule (`validatePodMetadataAndSpec`, not applied to templates): a pod
/// without `serviceAccountName` may not project a service account token. Upstream checks it
/// after the whole `ValidatePodSpec`; here it ends [`validate`].
pub(super) fn service_account_tokens(spec: &PodSpec, v: &mut Violations) {
    if !spec.service_account_name.is_empty() {
        return;
    }
    for (i, vol) in spec.volumes.iter().enumerate() {
        let Some(p) = &vol.projected else { continue };
        for (j, s) in p.sources.iter().enumerate() {
            if s.service_account_token.is_some() {
                v.push((
                    format!("spec.volumes[{i}].projected.sources[{j}].serviceAccountToken"),
                    "Forbidden: must not be specified when serviceAccountName is not set".into(),
                ));
            }
        }
    }
}

/// Whether `path` has a `..` element (`validatePathNoBacksteps`; nodes are Linux).
fn has_backsteps(path: &str) -> bool {
    path.split('/').any(|part| part == "..")
}

/// `validatePathNoBacksteps`: one error however many `..` there are.
fn no_backsteps(path: &str, at: &str, v: &mut Violations) {
    if has_backsteps(path) {
        v.push((
            at.to_string(),
            format!("Invalid value: {path:?}: must not contain '..'"),
        ));
    }
}

/// `validateLocalDescendingPath`: relative, and no `..`.
fn local_descending_path(path: &str, at: &str, v: &mut Violations) {
    if path.starts_with('/') {
        v.push((
            at.to_string(),
            format!("Invalid value: {path:?}: must be a relative path"),
        ));
    }
    no_backsteps(path, at, v);
}

/// `ValidateLocalNonReservedPath`: a descending path that does not start with `..` either
/// (reported only when the `..` element rule did not already catch it).
fn local_non_reserved_path(path: &str, at: &str, v: &mut Violations) {
    local_descending_path(path, at, v);
    if path.starts_with("..") && !path.starts_with("../") {
        v.push((
            at.to_string(),
            format!("Invalid value: {path:?}: must not start with '..'"),
        ));
    }
}

/// A file mode (`mode`, `defaultMode`): 0 to 0777.
fn file_mode(mode: Option<i32>, at: &str, v: &mut Violations) {
    if let Some(m) = mode
        && !(0..=0o777).contains(&m)
    {
        v.push((at.to_string(), format!("Invalid value: {m}: {FILE_MODE}")));
    }
}

/// `validateKeyToPath`, for the item at `at`.
fn key_to_path(kp: &KeyToPath, at: &str, v: &mut Violations) {
    if kp.key.is_empty() {
        v.push((format!("{at}.key"), "Required value".into()));
    }
    if kp.path.is_empty() {
        v.push((format!("{at}.path"), "Required value".into()));
    }
    local_non_reserved_path(&kp.path, &format!("{at}.path"), v);
    file_mode(kp.mode, &format!("{at}.mode"), v);
}

/// Upstream's `IsDNS1123Label` as one problem: the shared helper, except that an empty value
/// fails the pattern upstream (not the length, which is what the helper says of it).
fn label(s: &str) -> Option<String> {
    dns1123_label(if s.is_empty() { "-" } else { s })
}

/// Upstream's `IsDNS1123Subdomain` as one problem, with [`label`]'s treatment of the empty value.
fn subdomain(s: &str) -> Option<String> {
    dns1123_subdomain(if s.is_empty() { "." } else { s })
}

/// Go's `%#v` of a pointer: `(*T)(nil)`, or a fixed placeholder address (upstream prints a
/// heap address that differs on every request).
fn go_pointer(type_name: &str, set: bool) -> String {
    if set {
        format!("(*{type_name})(0xc000000000)")
    } else {
        format!("(*{type_name})(nil)")
    }
}
