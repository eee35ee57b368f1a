//! Seccomp and AppArmor profiles: upstream's `validateSeccompProfileField` and
//! `ValidateAppArmorProfileField` for the fields, `ValidateSeccompPodAnnotations` and
//! `ValidateAppArmorPodAnnotations` for the deprecated annotations, the AppArmor rule of
//! `ValidatePodSpecificAnnotationUpdates`, and `ValidatePodCreate`'s
//! `validateSeccompAnnotationsAndFields` and `validateAppArmorAnnotationsAndFieldsMatchOnCreate`
//! (`pkg/apis/core/validation/validation.go`, 1.33).
//!
//! Where kubestore differs: upstream walks the annotations in Go's map order (random), kubestore
//! in key order; and a seccomp `localhostProfile` set for another type quotes the profile as
//! Go's `%#v` does but with a placeholder for the pointer's address, which cannot be reproduced.

use std::collections::BTreeMap;

use kubestore_proto::core::v1::{AppArmorProfile, PodSpec, SeccompProfile};

use super::{local_descending_path, not_supported, visit_containers};
use crate::violations::Violations;

/// The pod-wide seccomp annotation (`v1.SeccompPodAnnotationKey`).
const SECCOMP_POD: &str = "seccomp.security.alpha.kubernetes.io/pod";
/// A container's seccomp annotation, with its name after the prefix.
const SECCOMP_CONTAINER: &str = "container.seccomp.security.alpha.kubernetes.io/";
/// A container's AppArmor annotation, with its name after the prefix.
const APPARMOR_CONTAINER: &str = "container.apparmor.security.beta.kubernetes.io/";
/// The `localhost/<profile>` prefix of both annotations' values.
const LOCALHOST: &str = "localhost/";

/// The profile types of both fields, as upstream lists them.
const TYPES: [&str; 3] = ["Localhost", "RuntimeDefault", "Unconfined"];

/// Longest AppArmor `localhostProfile` (`PATH_MAX - 1`).
const APPARMOR_PROFILE_MAX: usize = 4095;

/// Upstream's `validateSeccompProfileField` for the profile at `path`.
pub(super) fn seccomp_field(p: &SeccompProfile, path: &str, v: &mut Violations) {
    match p.r#type.as_str() {
        "" => v.push((
            format!("{path}.type"),
            "Required value: type is required when seccompProfile is set".into(),
        )),
        t if !TYPES.contains(&t) => v.push((format!("{path}.type"), not_supported(t, &TYPES))),
        _ => {}
    }
    let at = format!("{path}.localhostProfile");
    match (&p.localhost_profile, p.r#type == "Localhost") {
        (None, true) => v.push((
            at,
            "Required value: must be set when seccomp type is Localhost".into(),
        )),
        (Some(l), true) => local_descending_path(l, &at, v),
        (Some(_), false) => v.push((
            at,
            format!(
                "Invalid value: core.SeccompProfile{{Type:{:?}, LocalhostProfile:(*string)(0xc000000000)}}: can only be set when seccomp type is Localhost",
                p.r#type
            ),
        )),
        (None, false) => {}
    }
}

/// Upstream's `ValidateAppArmorProfileField` for the profile at `path`.
pub(super) fn app_armor_field(p: &AppArmorProfile, path: &str, v: &mut Violations) {
    let at = format!("{path}.localhostProfile");
    match p.r#type.as_str() {
        "Localhost" => match &p.localhost_profile {
            None => v.push((
                at,
                "Required value: must be set when AppArmor type is Localhost".into(),
            )),
            Some(l) => {
                // Go's strings.TrimSpace: Unicode white space.
                if l.trim() != l {
                    v.push((
                        at.clone(),
                        format!("Invalid value: {l:?}: must not be padded with whitespace"),
                    ));
                } else if l.is_empty() {
                    v.push((
                        at.clone(),
                        "Required value: must be set when AppArmor type is Localhost".into(),
                    ));
                }
                if l.len() > APPARMOR_PROFILE_MAX {
                    v.push((
                        at,
                        format!("Too long: may not be more than {APPARMOR_PROFILE_MAX} bytes"),
                    ));
                }
            }
        },
        "RuntimeDefault" | "Unconfined" => {
            if let Some(l) = &p.localhost_profile {
                v.push((
                    at,
                    format!(
                        "Invalid value: {l:?}: can only be set when AppArmor type is Localhost"
                    ),
                ));
            }
        }
        "" => v.push((
            format!("{path}.type"),
            "Required value: type is required when appArmorProfile is set".into(),
        )),
        t => v.push((format!("{path}.type"), not_supported(t, &TYPES))),
    }
}

/// The rules of the deprecated seccomp and AppArmor annotations, as upstream's
/// `ValidatePodSpecificAnnotations` checks them on create and update (after the metadata's own
/// rules, before the spec's): each seccomp annotation names a valid profile, each AppArmor
/// annotation an existing container and a valid profile.
pub(crate) fn annotations(
    annotations: &BTreeMap<String, String>,
    spec: &PodSpec,
    v: &mut Violations,
) {
    // ValidateSeccompPodAnnotations: the pod's annotation first. Its path is upstream's
    // `Child(key)`, dots and all.
    if let Some(p) = annotations.get(SECCOMP_POD) {
        seccomp_annotation(p, &format!("metadata.annotations.{SECCOMP_POD}"), v);
    }
    for (k, p) in annotations {
        if k.starts_with(SECCOMP_CONTAINER) {
            seccomp_annotation(p, &format!("metadata.annotations.{k}"), v);
        }
    }
    // ValidateAppArmorPodAnnotations.
    for (k, p) in annotations {
        let Some(name) = k.strip_prefix(APPARMOR_CONTAINER) else {
            continue;
        };
        let path = format!("metadata.annotations[{k}]");
        if !visit_containers(spec).any(|(_, n, _)| n == name) {
            v.push((
                path.clone(),
                format!("Invalid value: {name:?}: container not found"),
            ));
        }
        // ValidateAppArmorProfileFormat.
        if !(p.is_empty()
            || p == "runtime/default"
            || p == "unconfined"
            || p.starts_with(LOCALHOST))
        {
            v.push((
                path,
                format!("Invalid value: {p:?}: invalid AppArmor profile name: {p:?}"),
            ));
        }
    }
}

/// The AppArmor part of upstream's `ValidatePodSpecificAnnotationUpdates`, before
/// [`annotations`] on update: the AppArmor annotations never change after create.
pub(crate) fn annotations_update(
    new: &BTreeMap<String, String>,
    old: &BTreeMap<String, String>,
    v: &mut Violations,
) {
    for (k, value) in old {
        if k.starts_with(APPARMOR_CONTAINER) && new.get(k) != Some(value) {
            v.push((
                format!("metadata.annotations[{k}]"),
                "Forbidden: may not remove or update AppArmor annotations".into(),
            ));
        }
    }
    for k in new.keys() {
        if k.starts_with(APPARMOR_CONTAINER) && !old.contains_key(k) {
            v.push((
                format!("metadata.annotations[{k}]"),
                "Forbidden: may not add AppArmor annotations".into(),
            ));
        }
    }
}

/// Upstream's `ValidateSeccompProfile`: an annotation's value.
fn seccomp_annotation(p: &str, path: &str, v: &mut Violations) {
    if ["runtime/default", "docker/default", "unconfined"].contains(&p) {
        return;
    }
    match p.strip_prefix(LOCALHOST) {
        Some(rest) => local_descending_path(rest, path, v),
        None => v.push((
            path.into(),
            format!("Invalid value: {p:?}: must be a valid seccomp profile"),
        )),
    }
}

/// What upstream's `ValidatePodCreate` adds last: where an annotation and a field both give a
/// container's (or the pod's) seccomp or AppArmor profile, they agree.
pub(crate) fn annotations_create(
    annotations: &BTreeMap<String, String>,
    spec: &PodSpec,
    v: &mut Violations,
) {
    // validateSeccompAnnotationsAndFields.
    let pod = spec.security_context.as_ref();
    if let Some(field) = pod.and_then(|sc| sc.seccomp_profile.as_ref())
        && let Some(a) = annotations.get(SECCOMP_POD)
    {
        seccomp_match(a, field, "spec.securityContext.seccompProfile", v);
    }
    for (path, name, sc) in visit_containers(spec) {
        if let Some(field) = sc.and_then(|sc| sc.seccomp_profile.as_ref())
            && let Some(a) = annotations.get(&format!("{SECCOMP_CONTAINER}{name}"))
        {
            seccomp_match(
                a,
                field,
                &format!("{path}.securityContext.seccompProfile"),
                v,
            );
        }
    }
    // validateAppArmorAnnotationsAndFieldsMatchOnCreate: not for Windows pods.
    if spec.os.as_ref().is_some_and(|os| os.name == "windows") {
        return;
    }
    let pod = pod.and_then(|sc| sc.app_armor_profile.as_ref());
    for (path, name, sc) in visit_containers(spec) {
        let Some(field) = sc.and_then(|sc| sc.app_armor_profile.as_ref()).or(pod) else {
            continue;
        };
        let Some(a) = annotations.get(&format!("{APPARMOR_CONTAINER}{name}")) else {
            continue;
        };
        let path = format!("{path}.securityContext.appArmorProfile");
        profile_match(
            a,
            &field.r#type,
            field.localhost_profile.as_deref(),
            &path,
            "apparmor",
            v,
        );
    }
}

/// Upstream's `validateSeccompAnnotationsAndFieldsMatch`.
fn seccomp_match(annotation: &str, field: &SeccompProfile, path: &str, v: &mut Violations) {
    profile_match(
        annotation,
        &field.r#type,
        field.localhost_profile.as_deref(),
        path,
        "seccomp",
        v,
    );
}

/// An annotation against the field at `path`, for `what` (`seccomp` or `apparmor`): seccomp also
/// takes `docker/default` for `RuntimeDefault`.
fn profile_match(
    annotation: &str,
    kind: &str,
    localhost: Option<&str>,
    path: &str,
    what: &str,
    v: &mut Violations,
) {
    let same_type = match kind {
        "Unconfined" => annotation == "unconfined",
        "RuntimeDefault" => {
            annotation == "runtime/default" || (what == "seccomp" && annotation == "docker/default")
        }
        "Localhost" => match annotation.strip_prefix(LOCALHOST) {
            None => false,
            Some(rest) => {
                if localhost != Some(rest) {
                    v.push((
                        format!("{path}.localhostProfile"),
                        format!("Forbidden: {what} profile in annotation and field must match"),
                    ));
                }
                true
            }
        },
        _ => true,
    };
    if !same_type {
        v.push((
            format!("{path}.type"),
            format!("Forbidden: {what} type in annotation and field must match"),
        ));
    }
}
