//! Security contexts and the namespaces a pod shares with its node: upstream's
//! `validatePodSpecSecurityContext` (with `validateSysctls`, `validateFSGroupChangePolicy`,
//! `validateSupplementalGroupsPolicy`, `validateSELinuxChangePolicy`), each container's
//! `ValidateSecurityContext`, `validateWindowsHostProcessPod` and `validateHostUsers`
//! (`pkg/apis/core/validation/validation.go`, 1.33), with their paths and words. The seccomp and
//! AppArmor profiles (fields and annotations) live in `security_profiles`, the Windows options
//! and the `spec.os` rules in `security_windows`.
//!
//! Upstream keeps `hostNetwork`, `hostPID`, `hostIPC`, `shareProcessNamespace` and `hostUsers`
//! in its internal `PodSecurityContext`, which conversion always creates: so these rules apply
//! whether or not `spec.securityContext` is set, and some report under
//! `spec.securityContext.…` a field the client wrote at `spec.…` (as upstream does).
//!
//! Where kubestore differs, on purpose:
//! - `privileged: true` is allowed, as on a kubeadm or kind cluster (`--allow-privileged=true`):
//!   upstream's `disallowed by cluster policy` and `hostProcess containers are disallowed by
//!   cluster policy` never apply.
//! - A namespaced sysctl with `hostNetwork`/`hostIPC` is refused on update too: upstream lets
//!   an update keep one its stored pod had (`AllowNamespacedSysctlsForHostNetAndHostIPC`), but
//!   kubestore never stored such a pod (these fields are new to it).
//! - The privilege-escalation conflicts quote the container's security context as
//!   `core.SecurityContext{…}`: upstream prints Go's `%#v` of it, pointer addresses included,
//!   which cannot be reproduced and would push the reason past a violation's 256 bytes.
//!
//! Where the rules run: [`validate`] is called by `validate_spec` after the `nodeSelector`
//! checks, upstream's place for `validatePodSpecSecurityContext`. Upstream checks a container's
//! security context last in `validateContainerCommon`, `validateWindowsHostProcessPod` and
//! `validateHostUsers` after the topology spread constraints, and `spec.os` last in
//! `ValidatePodSpec`; until `mod.rs` calls [`container`], [`pod_rules`] and [`os`] at those
//! places, [`validate`] runs them after the pod's rules. The annotation rules
//! ([`annotations`], [`annotations_update`], [`annotations_create`]) are for `pod.rs`.

use std::collections::BTreeSet;

use kubestore_proto::core::v1::{PodSecurityContext, PodSpec, SecurityContext, Sysctl};

use super::not_supported;
use crate::violations::Violations;

#[path = "security_profiles.rs"]
mod security_profiles;
#[path = "security_windows.rs"]
mod security_windows;

#[allow(unused_imports)] // Wired in with the AppArmor sync, from `pod.rs`.
pub(crate) use security_profiles::{annotations, annotations_create, annotations_update};
pub(super) use security_windows::os;

/// Largest user or group ID (upstream's `maxUserID`/`maxGroupID`, `math.MaxInt32`).
const MAX_ID: i64 = i32::MAX as i64;

/// Longest sysctl name (upstream's `SysctlMaxLength`).
const SYSCTL_MAX: usize = 253;

/// Upstream's `sysctlContainSlashRegexp`, as its message prints it.
const SYSCTL_REGEX: &str =
    r"^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$";

/// The rules of the pod's security context and, until `mod.rs` calls them at upstream's
/// places (see the module doc), those of its containers, `hostUsers` and `spec.os`.
pub(super) fn validate(spec: &PodSpec, v: &mut Violations) {
    pod_security_context(spec, v);
}

/// Whether the pod shares the node's user namespace: `hostUsers` defaults to true.
pub(super) fn host_users(spec: &PodSpec) -> bool {
    spec.host_users.unwrap_or(true)
}

/// Upstream's `validatePodSpecSecurityContext`.
fn pod_security_context(spec: &PodSpec, v: &mut Violations) {
    let empty = PodSecurityContext::default();
    let sc = spec.security_context.as_ref().unwrap_or(&empty);
    let at = |field: &str| format!("spec.securityContext.{field}");
    if let Some(g) = sc.fs_group {
        id(at("fsGroup"), g, v);
    }
    if let Some(u) = sc.run_as_user {
        id(at("runAsUser"), u, v);
    }
    if let Some(g) = sc.run_as_group {
        id(at("runAsGroup"), g, v);
    }
    for (i, g) in sc.supplemental_groups.iter().enumerate() {
        id(at(&format!("supplementalGroups[{i}]")), *g, v);
    }
    if spec.share_process_namespace == Some(true) && spec.host_pid {
        v.push((
            at("shareProcessNamespace"),
            "Invalid value: true: ShareProcessNamespace and HostPID cannot both be enabled".into(),
        ));
    }
    sysctls(&sc.sysctls, spec, v);
    if let Some(p) = &sc.fs_group_change_policy
        && !["Always", "OnRootMismatch"].contains(&p.as_str())
    {
        v.push((
            at("fsGroupChangePolicy"),
            not_supported(p, &["Always", "OnRootMismatch"]),
        ));
    }
    if let Some(p) = &sc.seccomp_profile {
        security_profiles::seccomp_field(p, &at("seccompProfile"), v);
    }
    if let Some(w) = &sc.windows_options {
        security_windows::windows_options(w, &at("windowsOptions"), v);
    }
    if let Some(p) = &sc.app_armor_profile {
        security_profiles::app_armor_field(p, &at("appArmorProfile"), v);
    }
    if let Some(p) = &sc.supplemental_groups_policy
        && !["Merge", "Strict"].contains(&p.as_str())
    {
        v.push((
            at("supplementalGroupsPolicy"),
            not_supported(p, &["Merge", "Strict"]),
        ));
    }
    // Both values, as with the SELinuxChangePolicy gate on (upstream allows only `Recursive`
    // while it is off).
    if let Some(p) = &sc.se_linux_change_policy
        && !["MountOption", "Recursive"].contains(&p.as_str())
    {
        v.push((
            at("seLinuxChangePolicy"),
            not_supported(p, &["MountOption", "Recursive"]),
        ));
    }
}

/// Upstream's `IsValidUserID`/`IsValidGroupID` for the ID at `path`.
fn id(path: String, value: i64, v: &mut Violations) {
    if !(0..=MAX_ID).contains(&value) {
        v.push((
            path,
            format!("Invalid value: {value}: must be between 0 and {MAX_ID}, inclusive"),
        ));
    }
}

/// Upstream's `validateSysctls` with `ValidateHostSysctl`.
fn sysctls(sysctls: &[Sysctl], spec: &PodSpec, v: &mut Violations) {
    let mut names = BTreeSet::new();
    for (i, s) in sysctls.iter().enumerate() {
        let path = format!("spec.securityContext.sysctls[{i}].name");
        if s.name.is_empty() {
            v.push((path.clone(), "Required value".into()));
        } else if !sysctl_name(&s.name) {
            v.push((
                path.clone(),
                format!(
                    "Invalid value: {:?}: must have at most {SYSCTL_MAX} characters and match regex {SYSCTL_REGEX}",
                    s.name
                ),
            ));
        } else if names.contains(s.name.as_str()) {
            v.push((path.clone(), format!("Duplicate value: {:?}", s.name)));
        }
        // Checked whatever the name's format, as upstream does.
        match sysctl_namespace(&s.name) {
            Some(Namespace::Net) if spec.host_network => v.push((
                path,
                format!(
                    "Invalid value: {:?}: may not be specified when 'hostNetwork' is true",
                    s.name
                ),
            )),
            Some(Namespace::Ipc) if spec.host_ipc => v.push((
                path,
                format!(
                    "Invalid value: {:?}: may not be specified when 'hostIPC' is true",
                    s.name
                ),
            )),
            _ => {}
        }
        names.insert(s.name.as_str());
    }
}

/// Upstream's `IsValidSysctlName`: dot- or slash-separated segments of
/// `[a-z0-9]([-_a-z0-9]*[a-z0-9])?`, at most 253 bytes.
fn sysctl_name(name: &str) -> bool {
    let segment = |s: &str| {
        let b = s.as_bytes();
        let edge = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
        b.first().is_some_and(edge)
            && b.last().is_some_and(edge)
            && b.iter().all(|c| edge(c) || *c == b'-' || *c == b'_')
    };
    name.len() <= SYSCTL_MAX && name.split(['.', '/']).all(segment)
}

/// A kernel namespace a sysctl belongs to (`k8s.io/component-helpers/node/util/sysctl`).
#[derive(Debug, PartialEq, Eq)]
enum Namespace {
    Ipc,
    Net,
}

/// Upstream's `GetNamespace`: the name normalised to dots, cut at its first `*`, then looked
/// up among the IPC sysctls and the `net.` and `fs.mqueue.` prefixes.
fn sysctl_namespace(name: &str) -> Option<Namespace> {
    // NormalizeName: a name whose first separator is '/' swaps '.' and '/'.
    let normal: String = match name.find(['.', '/']) {
        Some(i) if name.as_bytes()[i] == b'/' => name
            .chars()
            .map(|c| match c {
                '.' => '/',
                '/' => '.',
                c => c,
            })
            .collect(),
        _ => name.to_string(),
    };
    let key = normal.split('*').next().unwrap_or_default();
    const IPC: [&str; 10] = [
        "kernel.sem",
        "kernel.shmall",
        "kernel.shmmax",
        "kernel.shmmni",
        "kernel.shm_rmid_forced",
        "kernel.shm",
        "kernel.msgmax",
        "kernel.msgmnb",
        "kernel.msgmni",
        "kernel.msg",
    ];
    if IPC.contains(&key) {
        Some(Namespace::Ipc)
    } else if key.starts_with("net.") {
        Some(Namespace::Net)
    } else if key.starts_with("fs.mqueue.") {
        Some(Namespace::Ipc)
    } else {
        None
    }
}

/// Upstream's `ValidateSecurityContext` for the container at `path` (`spec.containers[0]`);
/// `host_users` is [`host_users`] of its pod.
pub(super) fn container(
    sc: Option<&SecurityContext>,
    path: &str,
    host_users: bool,
    v: &mut Violations,
) {
    let Some(sc) = sc else {
        return;
    };
    let at = |field: &str| format!("{path}.securityContext.{field}");
    if let Some(u) = sc.run_as_user {
        id(at("runAsUser"), u, v);
    }
    if let Some(g) = sc.run_as_group {
        id(at("runAsGroup"), g, v);
    }
    if let Some(pm) = &sc.proc_mount {
        if !["Default", "Unmasked"].contains(&pm.as_str()) {
            v.push((at("procMount"), not_supported(pm, &["Default", "Unmasked"])));
        }
        if host_users && pm == "Unmasked" {
            v.push((
                at("procMount"),
                "Invalid value: \"Unmasked\": `hostUsers` must be false to use `Unmasked`".into(),
            ));
        }
    }
    if let Some(p) = &sc.seccomp_profile {
        security_profiles::seccomp_field(p, &at("seccompProfile"), v);
    }
    if sc.allow_privilege_escalation == Some(false) {
        let whole = format!("{path}.securityContext");
        if sc.privileged == Some(true) {
            v.push((
                whole.clone(),
                "Invalid value: core.SecurityContext{…}: cannot set `allowPrivilegeEscalation` to false and `privileged` to true".into(),
            ));
        }
        let adds = sc.capabilities.iter().flat_map(|c| &c.add);
        for _ in adds.filter(|c| *c == "CAP_SYS_ADMIN") {
            v.push((
                whole.clone(),
                "Invalid value: core.SecurityContext{…}: cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN".into(),
            ));
        }
    }
    if let Some(w) = &sc.windows_options {
        security_windows::windows_options(w, &at("windowsOptions"), v);
    }
    if let Some(p) = &sc.app_armor_profile {
        security_profiles::app_armor_field(p, &at("appArmorProfile"), v);
    }
}

/// Upstream's `validateWindowsHostProcessPod` then `validateHostUsers`: in `ValidatePodSpec`,
/// after the topology spread constraints.
pub(super) fn pod_rules(spec: &PodSpec, v: &mut Violations) {
    security_windows::host_process(spec, v);
    // validateHostUsers: a pod in its own user namespace shares no other namespace with the
    // node. The paths of hostPID and hostIPC are upstream's, capitals included.
    if !host_users(spec) {
        for (field, set) in [
            ("hostNetwork", spec.host_network),
            ("HostPID", spec.host_pid),
            ("HostIPC", spec.host_ipc),
        ] {
            if set {
                v.push((
                    format!("spec.{field}"),
                    "Forbidden: when `pod.Spec.HostUsers` is false".into(),
                ));
            }
        }
    }
}

/// Every container of the pod with its path and name, in upstream's `VisitContainersWithPath`
/// order (init, regular, ephemeral), as the pod-wide rules walk them.
fn visit_containers(
    spec: &PodSpec,
) -> impl Iterator<Item = (String, &str, Option<&SecurityContext>)> {
    let init = spec.init_containers.iter().enumerate().map(|(i, c)| {
        (
            format!("spec.initContainers[{i}]"),
            c.name.as_str(),
            c.security_context.as_ref(),
        )
    });
    let regular = spec.containers.iter().enumerate().map(|(i, c)| {
        (
            format!("spec.containers[{i}]"),
            c.name.as_str(),
            c.security_context.as_ref(),
        )
    });
    let ephemeral = spec.ephemeral_containers.iter().enumerate().map(|(i, c)| {
        (
            format!("spec.ephemeralContainers[{i}]"),
            c.name.as_str(),
            c.security_context.as_ref(),
        )
    });
    init.chain(regular).chain(ephemeral)
}

/// Upstream's `validateLocalDescendingPath`: a relative path without `..`.
fn local_descending_path(p: &str, path: &str, v: &mut Violations) {
    if p.starts_with('/') {
        v.push((
            path.into(),
            format!("Invalid value: {p:?}: must be a relative path"),
        ));
    }
    if p.split('/').any(|part| part == "..") {
        v.push((
            path.into(),
            format!("Invalid value: {p:?}: must not contain '..'"),
        ));
    }
}

#[cfg(test)]
#[path = "security_tests.rs"]
mod tests;
