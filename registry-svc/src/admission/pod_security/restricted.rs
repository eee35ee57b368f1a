//! The restricted level's own checks (upstream's `policy/check_*.go` whose level is
//! `api.LevelRestricted`), one function per versioned definition, named after the check and
//! the minor version it starts at. Restricted also runs the baseline checks, less those these
//! replace (see `checks`).
//!
//! From 1.25 a Windows pod (`spec.os.name: windows`) passes the checks of Linux-only fields
//! (privilege escalation, capabilities, seccomp): its API validation refuses those fields, so
//! it could never set what the check asks for.

use std::collections::BTreeSet;

use serde_json::Value;

use super::checks::{
    Failure, containers, containers_phrase, forbid, is_windows, items, join_quote, object,
    pluralize, pod_security, profile_type, setters, string, strings, valid_seccomp_type,
};

// ---- allowPrivilegeEscalation (check_allowPrivilegeEscalation.go) ----

/// Every container must set `allowPrivilegeEscalation: false` (unset means allowed).
pub(super) fn allow_privilege_escalation_1_8(_meta: &Value, spec: &Value) -> Option<Failure> {
    let bad: Vec<&str> = containers(spec)
        .filter(|c| {
            c.security("allowPrivilegeEscalation")
                .and_then(Value::as_bool)
                != Some(false)
        })
        .map(|c| c.name)
        .collect();
    if bad.is_empty() {
        return None;
    }
    forbid(
        "allowPrivilegeEscalation != false",
        format!(
            "{} must set securityContext.allowPrivilegeEscalation=false",
            containers_phrase(&bad)
        ),
    )
}

/// As 1.8, Windows pods exempt.
pub(super) fn allow_privilege_escalation_1_25(meta: &Value, spec: &Value) -> Option<Failure> {
    if is_windows(spec) {
        return None;
    }
    allow_privilege_escalation_1_8(meta, spec)
}

// ---- capabilities_restricted (check_capabilities_restricted.go) ----

/// Every container must drop `ALL`, and may add back only `NET_BIND_SERVICE`. Both faults are
/// told in one detail, `; `-separated.
pub(super) fn capabilities_1_22(_meta: &Value, spec: &Value) -> Option<Failure> {
    let mut missing_drop_all = Vec::new();
    let mut adding_forbidden = Vec::new();
    let mut forbidden = BTreeSet::new();
    for c in containers(spec) {
        let Some(caps) = c.capabilities() else {
            missing_drop_all.push(c.name);
            continue;
        };
        if !strings(caps, "drop").any(|cap| cap == "ALL") {
            missing_drop_all.push(c.name);
        }
        let mut added_forbidden = false;
        for cap in strings(caps, "add").filter(|cap| *cap != "NET_BIND_SERVICE") {
            added_forbidden = true;
            forbidden.insert(cap);
        }
        if added_forbidden {
            adding_forbidden.push(c.name);
        }
    }
    let mut details = Vec::new();
    if !missing_drop_all.is_empty() {
        details.push(format!(
            r#"{} must set securityContext.capabilities.drop=["ALL"]"#,
            containers_phrase(&missing_drop_all)
        ));
    }
    if !adding_forbidden.is_empty() {
        details.push(format!(
            "{} must not include {} in securityContext.capabilities.add",
            containers_phrase(&adding_forbidden),
            join_quote(forbidden)
        ));
    }
    if details.is_empty() {
        return None;
    }
    forbid("unrestricted capabilities", details.join("; "))
}

/// As 1.22, Windows pods exempt.
pub(super) fn capabilities_1_25(meta: &Value, spec: &Value) -> Option<Failure> {
    if is_windows(spec) {
        return None;
    }
    capabilities_1_22(meta, spec)
}

// ---- restrictedVolumes (check_restrictedVolumes.go) ----

/// The volume sources restricted pods may use: none reaches the node or outside storage
/// except through an API object (a claim, a CSI driver, an image).
const ALLOWED_VOLUME_SOURCES: &[&str] = &[
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "image",
    "persistentVolumeClaim",
    "projected",
    "secret",
];

/// The other sources, in the order upstream names a volume's type by (its first set one).
const RESTRICTED_VOLUME_SOURCES: &[&str] = &[
    "hostPath",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "gitRepo",
    "nfs",
    "iscsi",
    "glusterfs",
    "rbd",
    "flexVolume",
    "cinder",
    "cephfs",
    "flocker",
    "fc",
    "azureFile",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "portworxVolume",
    "scaleIO",
    "storageos",
];

/// Volumes may use only the allowed sources. A volume with an allowed source passes whatever
/// else it sets (as upstream's `switch`); one with none is of type `unknown`.
pub(super) fn volumes_1_0(_meta: &Value, spec: &Value) -> Option<Failure> {
    let mut bad_volumes = Vec::new();
    let mut bad_types = BTreeSet::new();
    for volume in items(spec, "volumes") {
        let has = |source: &&str| object(volume, source).is_some();
        if ALLOWED_VOLUME_SOURCES.iter().any(has) {
            continue;
        }
        bad_volumes.push(string(volume, "name").unwrap_or(""));
        let kind = RESTRICTED_VOLUME_SOURCES
            .iter()
            .copied()
            .find(has)
            .unwrap_or("unknown");
        bad_types.insert(kind);
    }
    if bad_volumes.is_empty() {
        return None;
    }
    forbid(
        "restricted volume types",
        format!(
            "{} {} {} {} {}",
            pluralize("volume", "volumes", bad_volumes.len()),
            join_quote(&bad_volumes),
            pluralize("uses", "use", bad_volumes.len()),
            pluralize(
                "restricted volume type",
                "restricted volume types",
                bad_types.len()
            ),
            join_quote(bad_types)
        ),
    )
}

// ---- runAsNonRoot, runAsUser (check_runAsNonRoot.go, check_runAsUser.go) ----

/// The pod, or else every container, must set `runAsNonRoot: true`; an explicit `false`
/// anywhere is told first (the implicit fault only when there is no explicit one).
pub(super) fn run_as_non_root_1_0(_meta: &Value, spec: &Value) -> Option<Failure> {
    let pod = pod_security(spec, "runAsNonRoot").and_then(Value::as_bool);
    let mut explicitly_bad = Vec::new();
    let mut implicitly_bad = Vec::new();
    for c in containers(spec) {
        match c.security("runAsNonRoot").and_then(Value::as_bool) {
            Some(false) => explicitly_bad.push(c.name),
            None if pod != Some(true) => implicitly_bad.push(c.name),
            _ => {}
        }
    }
    let who = setters(pod == Some(false), &explicitly_bad);
    if !who.is_empty() {
        return forbid(
            "runAsNonRoot != true",
            format!(
                "{} must not set securityContext.runAsNonRoot=false",
                who.join(" and ")
            ),
        );
    }
    if implicitly_bad.is_empty() {
        return None;
    }
    forbid(
        "runAsNonRoot != true",
        format!(
            "pod or {} must set securityContext.runAsNonRoot=true",
            containers_phrase(&implicitly_bad)
        ),
    )
}

/// Neither the pod nor a container may set `runAsUser: 0` (unset is fine: `runAsNonRoot`
/// covers the image's user).
pub(super) fn run_as_user_1_23(_meta: &Value, spec: &Value) -> Option<Failure> {
    let is_root = |v: Option<&Value>| v.and_then(Value::as_i64) == Some(0);
    let bad_containers: Vec<&str> = containers(spec)
        .filter(|c| is_root(c.security("runAsUser")))
        .map(|c| c.name)
        .collect();
    let pod_bad = is_root(pod_security(spec, "runAsUser"));
    let who = setters(pod_bad, &bad_containers);
    if who.is_empty() {
        return None;
    }
    forbid(
        "runAsUser=0",
        format!("{} must not set runAsUser=0", who.join(" and ")),
    )
}

// ---- seccompProfile_restricted (check_seccompProfile_restricted.go) ----

/// The pod, or else every container, must set a `RuntimeDefault` or `Localhost` seccomp
/// profile. An explicitly bad type anywhere is told first; containers without a profile are
/// told only when there is none and the pod sets no valid one.
pub(super) fn seccomp_profile_1_19(_meta: &Value, spec: &Value) -> Option<Failure> {
    let mut bad_types = BTreeSet::new();
    let pod_type = profile_type(pod_security(spec, "seccompProfile"));
    let pod_valid = pod_type.is_some_and(valid_seccomp_type);
    let pod_bad = match pod_type {
        Some(t) if !valid_seccomp_type(t) => {
            bad_types.insert(t);
            true
        }
        _ => false,
    };
    let mut explicitly_bad = Vec::new();
    let mut implicitly_bad = Vec::new();
    for c in containers(spec) {
        match profile_type(c.security("seccompProfile")) {
            Some(t) if !valid_seccomp_type(t) => {
                explicitly_bad.push(c.name);
                bad_types.insert(t);
            }
            Some(_) => {}
            None if !pod_valid => implicitly_bad.push(c.name),
            None => {}
        }
    }
    let who = setters(pod_bad, &explicitly_bad);
    if !who.is_empty() {
        return forbid(
            "seccompProfile",
            format!(
                "{} must not set securityContext.seccompProfile.type to {}",
                who.join(" and "),
                join_quote(bad_types)
            ),
        );
    }
    if implicitly_bad.is_empty() {
        return None;
    }
    forbid(
        "seccompProfile",
        format!(
            r#"pod or {} must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost""#,
            containers_phrase(&implicitly_bad)
        ),
    )
}

/// As 1.19, Windows pods exempt.
pub(super) fn seccomp_profile_1_25(meta: &Value, spec: &Value) -> Option<Failure> {
    if is_windows(spec) {
        return None;
    }
    seccomp_profile_1_19(meta, spec)
}
