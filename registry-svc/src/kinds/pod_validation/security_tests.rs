//! Upstream's cases (`validation_test.go`: `TestValidatePodSpec`'s security cases,
//! `TestValidateSecurityContext`, `TestValidateSysctls`, `TestValidateHostUsers`) with their
//! paths and messages; the profiles' cases are in `profiles`, Windows' and the OS's in `windows`.

use kubestore_proto::core::v1::{
    AppArmorProfile, Capabilities, PodOs, PodSecurityContext, PodSpec, SeLinuxOptions,
    SeccompProfile, SecurityContext, Sysctl, WindowsSecurityContextOptions,
};

use super::super::tests::{container, one, spec_with};
use super::super::validate_spec;
use crate::violations::Violations;

#[path = "security_profile_tests.rs"]
mod profiles;
#[path = "security_windows_tests.rs"]
mod windows;

fn problems(spec: &PodSpec) -> Vec<(String, String)> {
    let mut v = Violations::new();
    validate_spec(Some(spec), false, &mut v);
    v.iter().cloned().collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(f, d)| (f.to_string(), d.to_string()))
        .collect()
}

/// A valid spec whose pod security context is edited.
fn pod_sc(edit: impl FnOnce(&mut PodSecurityContext)) -> PodSpec {
    spec_with(|s| {
        let mut sc = PodSecurityContext::default();
        edit(&mut sc);
        s.security_context = Some(sc);
    })
}

/// A valid spec whose container's security context is `sc`.
fn container_sc(sc: SecurityContext) -> PodSpec {
    spec_with(|s| s.containers[0].security_context = Some(sc))
}

fn seccomp(kind: &str, localhost: Option<&str>) -> SeccompProfile {
    SeccompProfile {
        r#type: kind.into(),
        localhost_profile: localhost.map(Into::into),
    }
}

fn apparmor(kind: &str, localhost: Option<&str>) -> AppArmorProfile {
    AppArmorProfile {
        r#type: kind.into(),
        localhost_profile: localhost.map(Into::into),
    }
}

fn sysctl(name: &str) -> Sysctl {
    Sysctl {
        name: name.into(),
        value: "1".into(),
    }
}

fn windows(edit: impl FnOnce(&mut WindowsSecurityContextOptions)) -> WindowsSecurityContextOptions {
    let mut w = WindowsSecurityContextOptions::default();
    edit(&mut w);
    w
}

const BETWEEN: &str = "must be between 0 and 2147483647, inclusive";

#[test]
fn a_full_valid_security_context_passes() {
    let spec = spec_with(|s| {
        s.share_process_namespace = Some(true);
        s.security_context = Some(PodSecurityContext {
            run_as_user: Some(0),
            run_as_group: Some(2147483647),
            fs_group: Some(1000),
            supplemental_groups: vec![0, 1, 2147483647],
            supplemental_groups_policy: Some("Strict".into()),
            fs_group_change_policy: Some("OnRootMismatch".into()),
            se_linux_change_policy: Some("MountOption".into()),
            se_linux_options: Some(SeLinuxOptions {
                level: "s0:c123,c456".into(),
                ..Default::default()
            }),
            sysctls: vec![
                sysctl("kernel.shm_rmid_forced"),
                sysctl("net.ipv4.conf.eno2/100.rp_filter"),
                sysctl("net/ipv4/ip_local_port_range"),
            ],
            seccomp_profile: Some(seccomp("Localhost", Some("profiles/audit.json"))),
            app_armor_profile: Some(apparmor("RuntimeDefault", None)),
            ..Default::default()
        });
        s.containers[0].security_context = Some(SecurityContext {
            run_as_user: Some(1000),
            run_as_group: Some(3000),
            allow_privilege_escalation: Some(false),
            capabilities: Some(Capabilities {
                add: vec!["NET_ADMIN".into(), "SYS_TIME".into()],
                drop: vec!["ALL".into()],
            }),
            proc_mount: Some("Default".into()),
            seccomp_profile: Some(seccomp("RuntimeDefault", None)),
            app_armor_profile: Some(apparmor("Localhost", Some("k8s-apparmor-example"))),
            ..Default::default()
        });
        s.os = Some(PodOs {
            name: "linux".into(),
        });
    });
    assert_eq!(problems(&spec), []);
}

#[test]
fn pod_ids() {
    let spec = pod_sc(|sc| {
        sc.fs_group = Some(-1);
        sc.run_as_user = Some(2147483648);
        sc.run_as_group = Some(-1);
        sc.supplemental_groups = vec![1, -1];
    });
    let want = [
        "Invalid value: -1: ",
        "Invalid value: 2147483648: ",
        "Invalid value: -1: ",
        "Invalid value: -1: ",
    ]
    .map(|s| format!("{s}{BETWEEN}"));
    let fields = [
        "spec.securityContext.fsGroup",
        "spec.securityContext.runAsUser",
        "spec.securityContext.runAsGroup",
        "spec.securityContext.supplementalGroups[1]",
    ];
    let want: Vec<_> = fields
        .iter()
        .zip(want)
        .map(|(f, d)| (f.to_string(), d))
        .collect();
    assert_eq!(problems(&spec), want);
}

#[test]
fn share_process_namespace_and_host_pid() {
    let spec = spec_with(|s| {
        s.share_process_namespace = Some(true);
        s.host_pid = true;
    });
    assert_eq!(
        problems(&spec),
        one(
            "spec.securityContext.shareProcessNamespace",
            "Invalid value: true: ShareProcessNamespace and HostPID cannot both be enabled"
        )
    );
    let ok = spec_with(|s| {
        s.share_process_namespace = Some(false);
        s.host_pid = true;
    });
    assert_eq!(problems(&ok), []);
}

#[test]
fn sysctl_names() {
    // A name's length: checked alone, its message being past a violation's bound.
    assert!(super::sysctl_name(&"a".repeat(253)));
    assert!(!super::sysctl_name(&"a".repeat(254)));
    let spec = pod_sc(|sc| {
        sc.sysctls = vec![
            sysctl(""),
            sysctl("kernel.sem"),
            sysctl("foo-"),
            sysctl("kernel.sem"),
            sysctl("a..b"),
        ]
    });
    let regex = r"^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$";
    let invalid = |n: &str| {
        format!("Invalid value: {n:?}: must have at most 253 characters and match regex {regex}")
    };
    assert_eq!(
        problems(&spec),
        vec![
            (
                "spec.securityContext.sysctls[0].name".to_string(),
                "Required value".to_string()
            ),
            (
                "spec.securityContext.sysctls[2].name".to_string(),
                invalid("foo-")
            ),
            (
                "spec.securityContext.sysctls[3].name".to_string(),
                "Duplicate value: \"kernel.sem\"".to_string()
            ),
            (
                "spec.securityContext.sysctls[4].name".to_string(),
                invalid("a..b")
            ),
        ]
    );
}

#[test]
fn sysctls_with_host_namespaces() {
    let names = [
        "net.ipv4.ip_forward",
        "net/ipv4/ip_local_port_range",
        "kernel.shmmax",
        "kernel.msgmax",
        "fs.mqueue.msg_max",
        "kernel.shm_rmid_forced",
        "vm.swappiness",
    ];
    let spec = spec_with(|s| {
        s.host_network = true;
        s.host_ipc = true;
        s.security_context = Some(PodSecurityContext {
            sysctls: names.iter().map(|n| sysctl(n)).collect(),
            ..Default::default()
        });
    });
    let at = |i: usize| format!("spec.securityContext.sysctls[{i}].name");
    let net =
        |n: &str| format!("Invalid value: {n:?}: may not be specified when 'hostNetwork' is true");
    let ipc =
        |n: &str| format!("Invalid value: {n:?}: may not be specified when 'hostIPC' is true");
    assert_eq!(
        problems(&spec),
        vec![
            (at(0), net(names[0])),
            (at(1), net(names[1])),
            (at(2), ipc(names[2])),
            (at(3), ipc(names[3])),
            (at(4), ipc(names[4])),
            (at(5), ipc(names[5])),
        ]
    );
    // Without the host's namespaces they are fine.
    let ok = pod_sc(|sc| sc.sysctls = names.iter().map(|n| sysctl(n)).collect());
    assert_eq!(problems(&ok), []);
}

#[test]
fn pod_policies() {
    let spec = pod_sc(|sc| {
        sc.fs_group_change_policy = Some("Sometimes".into());
        sc.supplemental_groups_policy = Some("".into());
        sc.se_linux_change_policy = Some("Relabel".into());
    });
    assert_eq!(
        problems(&spec),
        pairs(&[
            (
                "spec.securityContext.fsGroupChangePolicy",
                "Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnRootMismatch\""
            ),
            (
                "spec.securityContext.supplementalGroupsPolicy",
                "Unsupported value: \"\": supported values: \"Merge\", \"Strict\""
            ),
            (
                "spec.securityContext.seLinuxChangePolicy",
                "Unsupported value: \"Relabel\": supported values: \"MountOption\", \"Recursive\""
            ),
        ])
    );
}

#[test]
fn container_ids_and_proc_mount() {
    let spec = container_sc(SecurityContext {
        run_as_user: Some(-1),
        run_as_group: Some(2147483648),
        proc_mount: Some("Masked".into()),
        ..Default::default()
    });
    let at = "spec.containers[0].securityContext";
    assert_eq!(
        problems(&spec),
        vec![
            (
                format!("{at}.runAsUser"),
                format!("Invalid value: -1: {BETWEEN}")
            ),
            (
                format!("{at}.runAsGroup"),
                format!("Invalid value: 2147483648: {BETWEEN}")
            ),
            (
                format!("{at}.procMount"),
                "Unsupported value: \"Masked\": supported values: \"Default\", \"Unmasked\"".into()
            ),
        ]
    );
    let unmasked = SecurityContext {
        proc_mount: Some("Unmasked".into()),
        ..Default::default()
    };
    assert_eq!(
        problems(&container_sc(unmasked.clone())),
        one(
            &format!("{at}.procMount"),
            "Invalid value: \"Unmasked\": `hostUsers` must be false to use `Unmasked`"
        )
    );
    let own_users = spec_with(|s| {
        s.host_users = Some(false);
        s.containers[0].security_context = Some(unmasked);
    });
    assert_eq!(problems(&own_users), []);
}

#[test]
fn privilege_escalation_conflicts() {
    let spec = container_sc(SecurityContext {
        privileged: Some(true),
        allow_privilege_escalation: Some(false),
        capabilities: Some(Capabilities {
            add: vec!["CAP_SYS_ADMIN".into(), "NET_ADMIN".into()],
            drop: vec![],
        }),
        ..Default::default()
    });
    let at = "spec.containers[0].securityContext";
    assert_eq!(
        problems(&spec),
        pairs(&[
            (
                at,
                "Invalid value: core.SecurityContext{…}: cannot set `allowPrivilegeEscalation` to false and `privileged` to true"
            ),
            (
                at,
                "Invalid value: core.SecurityContext{…}: cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN"
            ),
        ])
    );
    // Privileged alone is allowed (the cluster allows privileged containers).
    let ok = container_sc(SecurityContext {
        privileged: Some(true),
        allow_privilege_escalation: Some(true),
        capabilities: Some(Capabilities {
            add: vec!["CAP_SYS_ADMIN".into()],
            drop: vec![],
        }),
        ..Default::default()
    });
    assert_eq!(problems(&ok), []);
}

/// Init containers' contexts are checked as app containers' are. (Ephemeral containers never
/// reach validation: a create carries none, and no update may add one.)
#[test]
fn every_kind_of_container_is_checked() {
    let bad = SecurityContext {
        run_as_user: Some(-1),
        ..Default::default()
    };
    let spec = spec_with(|s| {
        s.init_containers = vec![container("i")];
        s.init_containers[0].security_context = Some(bad.clone());
    });
    assert_eq!(
        problems(&spec),
        vec![(
            "spec.initContainers[0].securityContext.runAsUser".to_string(),
            format!("Invalid value: -1: {BETWEEN}")
        )]
    );
}

#[test]
fn host_users_false_forbids_host_namespaces() {
    let spec = spec_with(|s| {
        s.host_users = Some(false);
        s.host_network = true;
        s.host_pid = true;
        s.host_ipc = true;
    });
    let forbidden = "Forbidden: when `pod.Spec.HostUsers` is false";
    assert_eq!(
        problems(&spec),
        pairs(&[
            ("spec.hostNetwork", forbidden),
            ("spec.HostPID", forbidden),
            ("spec.HostIPC", forbidden),
        ])
    );
    let shared = spec_with(|s| {
        s.host_users = Some(true);
        s.host_pid = true;
    });
    assert_eq!(problems(&shared), []);
}
