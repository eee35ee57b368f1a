//! Windows options and the pod's OS: upstream's `validateWindowsSecurityContextOptions`,
//! `validateWindowsHostProcessPod`, `validateOS`, `validateLinux` and `validateWindows`
//! (`pkg/apis/core/validation/validation.go`, 1.33), with their paths and words.
//!
//! Where kubestore differs: upstream refuses `supplementalGroups` on a Windows pod when the
//! list is present, even empty; kubestore's proto cannot tell an empty list from none, so only
//! a non-empty one is refused. A cluster policy never forbids hostProcess containers (see
//! `security`).

use kubestore_proto::core::v1::{PodSecurityContext, PodSpec, WindowsSecurityContextOptions};

use super::{not_supported, visit_containers};
use crate::{validation::dns1123_subdomain, violations::Violations};

/// Largest `gmsaCredentialSpec`, in KiB.
const GMSA_SPEC_MAX_KIB: usize = 64;
/// A `runAsUserName`'s domain must be shorter than this, in bytes.
const DOMAIN_MAX: usize = 256;
/// Longest user part of a `runAsUserName`, in bytes.
const USER_MAX: usize = 104;

/// Upstream's `validateWindowsSecurityContextOptions` for the options at `path`.
pub(super) fn windows_options(w: &WindowsSecurityContextOptions, path: &str, v: &mut Violations) {
    if let Some(name) = &w.gmsa_credential_spec_name
        && let Some(e) = dns1123_subdomain(name)
    {
        v.push((
            format!("{path}.gmsaCredentialSpecName"),
            format!("Invalid value: {name:?}: {e}"),
        ));
    }
    if let Some(spec) = &w.gmsa_credential_spec {
        let problem = if spec.is_empty() {
            Some("gmsaCredentialSpec cannot be an empty string".to_string())
        } else if spec.len() > GMSA_SPEC_MAX_KIB * 1024 {
            Some(format!(
                "gmsaCredentialSpec size must be under {GMSA_SPEC_MAX_KIB} KiB"
            ))
        } else {
            None
        };
        if let Some(problem) = problem {
            // The value is cut to a violation's bound anyway: quote only its start.
            let shown: String = spec.chars().take(256).collect();
            v.push((
                format!("{path}.gmsaCredentialSpec"),
                format!("Invalid value: {shown:?}: {problem}"),
            ));
        }
    }
    if let Some(name) = &w.run_as_user_name {
        for problem in run_as_user_name(name) {
            v.push((
                format!("{path}.runAsUserName"),
                format!("Invalid value: {name:?}: {problem}"),
            ));
        }
    }
}

/// The problems of a `runAsUserName` (`[DOMAIN\]USER`), in upstream's order.
pub(super) fn run_as_user_name(name: &str) -> Vec<String> {
    if name.is_empty() {
        return vec!["runAsUserName cannot be an empty string".into()];
    }
    // Go's [[:cntrl:]]: ASCII control characters.
    if name.chars().any(|c| c.is_ascii_control()) {
        return vec!["runAsUserName cannot contain control characters".into()];
    }
    let parts: Vec<&str> = name.split('\\').collect();
    let (domain, user) = match parts[..] {
        [user] => (None, user),
        [domain, user] => (Some(domain), user),
        _ => return vec!["runAsUserName cannot contain more than one backslash".into()],
    };
    let mut problems = Vec::new();
    if domain.is_some_and(|d| d.len() >= DOMAIN_MAX) {
        problems.push(format!(
            "runAsUserName's Domain length must be under {DOMAIN_MAX} characters"
        ));
    }
    if let Some(d) = domain
        && !(netbios_domain(d) || dns_domain(d))
    {
        problems.push("runAsUserName's Domain doesn't match the NetBios nor the DNS format".into());
    }
    if user.is_empty() {
        problems.push("runAsUserName's User cannot be empty".into());
    } else if user.len() > USER_MAX {
        problems.push(format!(
            "runAsUserName's User length must not be longer than {USER_MAX} characters"
        ));
    }
    if !user.is_empty() && user.chars().all(|c| c == '.' || c == ' ') {
        problems.push("runAsUserName's User cannot contain only periods or spaces".into());
    }
    if user.chars().any(|c| "\"/\\:;|=,+*?<>@[]".contains(c)) {
        problems.push(
            r#"runAsUserName's User cannot contain the following characters: "/\:;|=,+*?<>@[]"#
                .into(),
        );
    }
    problems
}

/// Upstream's `validNetBiosRegex`: 1 to 15 characters without `\/:*?"<>|`, not starting with
/// a dot.
fn netbios_domain(d: &str) -> bool {
    let bad = |c: char| "\\/:*?\"<>|".contains(c);
    let mut chars = d.chars();
    chars.next().is_some_and(|c| !bad(c) && c != '.')
        && d.chars().count() <= 15
        && chars.all(|c| !bad(c))
}

/// Upstream's `validWindowsUserDomainDNSRegex`: dot-separated labels of 1 to 63 ASCII letters,
/// digits and hyphens, starting and ending with a letter or digit.
fn dns_domain(d: &str) -> bool {
    d.split('.').all(|label| {
        let b = label.as_bytes();
        (1..=63).contains(&b.len())
            && b[0].is_ascii_alphanumeric()
            && b[b.len() - 1].is_ascii_alphanumeric()
            && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-')
    })
}

/// Upstream's `validateWindowsHostProcessPod`: a pod's containers are all hostProcess
/// containers or none, agree with the pod's setting, and share the node's network.
pub(super) fn host_process(spec: &PodSpec, v: &mut Violations) {
    let pod = spec
        .security_context
        .as_ref()
        .and_then(|sc| sc.windows_options.as_ref())
        .and_then(|w| w.host_process);
    let (mut count, mut host_process) = (0, 0);
    for (path, _, sc) in visit_containers(spec) {
        count += 1;
        let own = sc
            .and_then(|sc| sc.windows_options.as_ref())
            .and_then(|w| w.host_process);
        if let (Some(p), Some(c)) = (pod, own)
            && p != c
        {
            v.push((
                format!("{path}.securityContext.windowsOptions.hostProcess"),
                format!(
                    "Invalid value: {c}: pod hostProcess value must be identical if both are specified, was {p}"
                ),
            ));
        }
        if own.or(pod) == Some(true) {
            host_process += 1;
        }
    }
    if host_process > 0 {
        if host_process != count {
            v.push((
                "spec".into(),
                "Invalid value: \"\": If pod contains any hostProcess containers then all containers must be HostProcess containers".into(),
            ));
        }
        if !spec.host_network {
            v.push((
                "spec.hostNetwork".into(),
                "Invalid value: false: hostNetwork must be true if pod contains any hostProcess containers".into(),
            ));
        }
    }
}

/// Upstream's `validateOS`, then `validateLinux` or `validateWindows` for a valid OS: the last
/// rules of `ValidatePodSpec`.
pub(in super::super) fn os(spec: &PodSpec, v: &mut Violations) {
    let Some(os) = &spec.os else {
        return;
    };
    match os.name.as_str() {
        "" => v.push((
            "spec.os.name".into(),
            "Required value: cannot be empty".into(),
        )),
        "linux" => linux(spec, v),
        "windows" => windows(spec, v),
        name => v.push(("spec.os".into(), not_supported(name, &["linux", "windows"]))),
    }
}

/// Upstream's `validateLinux`: no Windows options.
fn linux(spec: &PodSpec, v: &mut Violations) {
    let forbid = |path: String, v: &mut Violations| {
        v.push((
            path,
            "Forbidden: windows options cannot be set for a linux pod".into(),
        ));
    };
    if spec
        .security_context
        .as_ref()
        .is_some_and(|sc| sc.windows_options.is_some())
    {
        forbid("spec.securityContext.windowsOptions".into(), v);
    }
    for (path, _, sc) in visit_containers(spec) {
        if sc.is_some_and(|sc| sc.windows_options.is_some()) {
            forbid(format!("{path}.securityContext.windowsOptions"), v);
        }
    }
}

/// Upstream's `validateWindows`: none of the Linux-only fields, in its order.
fn windows(spec: &PodSpec, v: &mut Violations) {
    let forbid = |path: String, v: &mut Violations| {
        v.push((path, "Forbidden: cannot be set for a windows pod".into()));
    };
    let empty = PodSecurityContext::default();
    let sc = spec.security_context.as_ref().unwrap_or(&empty);
    let pod_fields = [
        (
            "securityContext.appArmorProfile",
            sc.app_armor_profile.is_some(),
        ),
        (
            "securityContext.seLinuxOptions",
            sc.se_linux_options.is_some(),
        ),
        ("hostUsers", spec.host_users.is_some()),
        ("hostPID", spec.host_pid),
        ("hostIPC", spec.host_ipc),
        (
            "securityContext.seccompProfile",
            sc.seccomp_profile.is_some(),
        ),
        ("securityContext.fsGroup", sc.fs_group.is_some()),
        (
            "securityContext.fsGroupChangePolicy",
            sc.fs_group_change_policy.is_some(),
        ),
        ("securityContext.sysctls", !sc.sysctls.is_empty()),
        (
            "shareProcessNamespace",
            spec.share_process_namespace.is_some(),
        ),
        ("securityContext.runAsUser", sc.run_as_user.is_some()),
        ("securityContext.runAsGroup", sc.run_as_group.is_some()),
        (
            "securityContext.supplementalGroups",
            !sc.supplemental_groups.is_empty(),
        ),
        (
            "securityContext.supplementalGroupsPolicy",
            sc.supplemental_groups_policy.is_some(),
        ),
        (
            "securityContext.seLinuxChangePolicy",
            sc.se_linux_change_policy.is_some(),
        ),
    ];
    for (field, set) in pod_fields {
        if set {
            forbid(format!("spec.{field}"), v);
        }
    }
    for (path, _, sc) in visit_containers(spec) {
        let Some(sc) = sc else {
            continue;
        };
        let fields = [
            ("appArmorProfile", sc.app_armor_profile.is_some()),
            ("seLinuxOptions", sc.se_linux_options.is_some()),
            ("seccompProfile", sc.seccomp_profile.is_some()),
            ("capabilities", sc.capabilities.is_some()),
            (
                "readOnlyRootFilesystem",
                sc.read_only_root_filesystem.is_some(),
            ),
            ("privileged", sc.privileged.is_some()),
            (
                "allowPrivilegeEscalation",
                sc.allow_privilege_escalation.is_some(),
            ),
            ("procMount", sc.proc_mount.is_some()),
            ("runAsUser", sc.run_as_user.is_some()),
            ("runAsGroup", sc.run_as_group.is_some()),
        ];
        for (field, set) in fields {
            if set {
                forbid(format!("{path}.securityContext.{field}"), v);
            }
        }
    }
}
