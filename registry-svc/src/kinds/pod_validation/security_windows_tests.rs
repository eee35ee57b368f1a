//! Upstream's cases for the Windows options and the pod's OS (`validation_test.go`:
//! `TestValidateWindowsSecurityContextOptions`, `TestValidateWindowsHostProcessPod`,
//! `TestValidateOSFields`, `TestValidatePodCreateWithSchedulingGates`-style OS cases of
//! `TestValidatePodSpec`).

use kubestore_proto::core::v1::{
    Capabilities, PodOs, PodSecurityContext, SeLinuxOptions, SecurityContext,
};

use super::{
    apparmor, container, one, pairs, pod_sc, problems, seccomp, spec_with, sysctl, windows,
};
use crate::violations::Violations;

#[test]
fn windows_options() {
    let at = "spec.securityContext.windowsOptions";
    let big = "x".repeat(64 * 1024 + 1);
    for (options, field, problem) in [
        (
            windows(|w| w.gmsa_credential_spec_name = Some("Not_A_Name".into())),
            "gmsaCredentialSpecName",
            "Invalid value: \"Not_A_Name\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character",
        ),
        (
            windows(|w| w.gmsa_credential_spec = Some("".into())),
            "gmsaCredentialSpec",
            "Invalid value: \"\": gmsaCredentialSpec cannot be an empty string",
        ),
        (
            windows(|w| w.run_as_user_name = Some("".into())),
            "runAsUserName",
            "Invalid value: \"\": runAsUserName cannot be an empty string",
        ),
        (
            windows(|w| w.run_as_user_name = Some("Container\tUser".into())),
            "runAsUserName",
            "Invalid value: \"Container\\tUser\": runAsUserName cannot contain control characters",
        ),
        (
            windows(|w| w.run_as_user_name = Some("a\\b\\c".into())),
            "runAsUserName",
            "Invalid value: \"a\\\\b\\\\c\": runAsUserName cannot contain more than one backslash",
        ),
        (
            windows(|w| w.run_as_user_name = Some("NT AUTHORITY\\".into())),
            "runAsUserName",
            "Invalid value: \"NT AUTHORITY\\\\\": runAsUserName's User cannot be empty",
        ),
        (
            windows(|w| w.run_as_user_name = Some("do:main\\user".into())),
            "runAsUserName",
            "Invalid value: \"do:main\\\\user\": runAsUserName's Domain doesn't match the NetBios nor the DNS format",
        ),
        (
            windows(|w| w.run_as_user_name = Some(". .".into())),
            "runAsUserName",
            "Invalid value: \". .\": runAsUserName's User cannot contain only periods or spaces",
        ),
        (
            windows(|w| w.run_as_user_name = Some("us:er".into())),
            "runAsUserName",
            r#"Invalid value: "us:er": runAsUserName's User cannot contain the following characters: "/\:;|=,+*?<>@[]"#,
        ),
        (
            windows(|w| w.run_as_user_name = Some("u".repeat(105))),
            "runAsUserName",
            "",
        ),
    ] {
        let spec = pod_sc(|sc| sc.windows_options = Some(options.clone()));
        let got = problems(&spec);
        if problem.is_empty() {
            let user = "u".repeat(105);
            assert_eq!(
                got,
                one(
                    &format!("{at}.{field}"),
                    &format!(
                        "Invalid value: {user:?}: runAsUserName's User length must not be longer than 104 characters"
                    )
                )
            );
        } else {
            assert_eq!(got, one(&format!("{at}.{field}"), problem), "{options:?}");
        }
    }
    // Too large a credential spec: the reason is past a violation's bound, its start is kept.
    let spec =
        pod_sc(|sc| sc.windows_options = Some(windows(|w| w.gmsa_credential_spec = Some(big))));
    let got = problems(&spec);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].0, format!("{at}.gmsaCredentialSpec"));
    assert!(got[0].1.starts_with("Invalid value: \"xxx"), "{}", got[0].1);
    // Good names: a NetBios or a DNS domain, a user alone.
    for name in [
        "ContainerUser",
        "NT AUTHORITY\\NETWORK SERVICE",
        "contoso.example.com\\user",
        "a".repeat(104).as_str(),
    ] {
        let spec = pod_sc(|sc| {
            sc.windows_options = Some(windows(|w| w.run_as_user_name = Some(name.into())))
        });
        assert_eq!(problems(&spec), [], "{name}");
    }
    // A long domain is both too long and no NetBios name (nor DNS, its label being too long);
    // checked alone, the messages being past a violation's bound.
    let name = format!("{}\\user", "d".repeat(256));
    assert_eq!(
        super::super::security_windows::run_as_user_name(&name),
        [
            "runAsUserName's Domain length must be under 256 characters",
            "runAsUserName's Domain doesn't match the NetBios nor the DNS format",
        ]
    );
    let name = format!("{}\\user", "d".repeat(255));
    assert_eq!(
        super::super::security_windows::run_as_user_name(&name),
        ["runAsUserName's Domain doesn't match the NetBios nor the DNS format"]
    );
}

#[test]
fn host_process_pods() {
    let host_process = |on: bool| SecurityContext {
        windows_options: Some(windows(|w| w.host_process = Some(on))),
        ..Default::default()
    };
    // All containers hostProcess, on the host's network: fine.
    let ok = spec_with(|s| {
        s.host_network = true;
        s.containers[0].security_context = Some(host_process(true));
    });
    assert_eq!(problems(&ok), []);
    // The pod says true, one container false; and no host network.
    let spec = spec_with(|s| {
        s.security_context = Some(PodSecurityContext {
            windows_options: Some(windows(|w| w.host_process = Some(true))),
            ..Default::default()
        });
        s.containers.push(container("d"));
        s.containers[1].security_context = Some(host_process(false));
    });
    assert_eq!(
        problems(&spec),
        pairs(&[
            (
                "spec.containers[1].securityContext.windowsOptions.hostProcess",
                "Invalid value: false: pod hostProcess value must be identical if both are specified, was true"
            ),
            (
                "spec",
                "Invalid value: \"\": If pod contains any hostProcess containers then all containers must be HostProcess containers"
            ),
            (
                "spec.hostNetwork",
                "Invalid value: false: hostNetwork must be true if pod contains any hostProcess containers"
            ),
        ])
    );
}

#[test]
fn os_name() {
    let os = |name: &str| {
        spec_with(|s| {
            s.os = Some(PodOs { name: name.into() });
        })
    };
    assert_eq!(
        problems(&os("")),
        one("spec.os.name", "Required value: cannot be empty")
    );
    assert_eq!(
        problems(&os("darwin")),
        one(
            "spec.os",
            "Unsupported value: \"darwin\": supported values: \"linux\", \"windows\""
        )
    );
    assert_eq!(problems(&os("linux")), []);
    assert_eq!(problems(&os("windows")), []);
}

#[test]
fn linux_pods_have_no_windows_options() {
    let options = windows(|w| w.run_as_user_name = Some("ContainerUser".into()));
    let spec = spec_with(|s| {
        s.os = Some(PodOs {
            name: "linux".into(),
        });
        s.security_context = Some(PodSecurityContext {
            windows_options: Some(options.clone()),
            ..Default::default()
        });
        s.init_containers = vec![container("i")];
        s.init_containers[0].security_context = Some(SecurityContext {
            windows_options: Some(options.clone()),
            ..Default::default()
        });
        s.containers[0].security_context = Some(SecurityContext {
            windows_options: Some(options),
            ..Default::default()
        });
    });
    let forbidden = "Forbidden: windows options cannot be set for a linux pod";
    assert_eq!(
        problems(&spec),
        pairs(&[
            ("spec.securityContext.windowsOptions", forbidden),
            (
                "spec.initContainers[0].securityContext.windowsOptions",
                forbidden
            ),
            (
                "spec.containers[0].securityContext.windowsOptions",
                forbidden
            ),
        ])
    );
}

#[test]
fn windows_pods_have_no_linux_fields() {
    let spec = spec_with(|s| {
        s.os = Some(PodOs {
            name: "windows".into(),
        });
        s.host_users = Some(true);
        s.host_pid = true;
        s.host_ipc = true;
        s.share_process_namespace = Some(false);
        s.security_context = Some(PodSecurityContext {
            app_armor_profile: Some(apparmor("RuntimeDefault", None)),
            se_linux_options: Some(SeLinuxOptions::default()),
            seccomp_profile: Some(seccomp("RuntimeDefault", None)),
            fs_group: Some(1),
            fs_group_change_policy: Some("Always".into()),
            sysctls: vec![sysctl("vm.swappiness")],
            run_as_user: Some(1),
            run_as_group: Some(1),
            supplemental_groups: vec![1],
            supplemental_groups_policy: Some("Merge".into()),
            se_linux_change_policy: Some("Recursive".into()),
            // Allowed: Windows options and runAsNonRoot.
            windows_options: Some(windows(|w| {
                w.run_as_user_name = Some("ContainerUser".into())
            })),
            run_as_non_root: Some(true),
        });
        s.containers[0].security_context = Some(SecurityContext {
            app_armor_profile: Some(apparmor("RuntimeDefault", None)),
            se_linux_options: Some(SeLinuxOptions::default()),
            seccomp_profile: Some(seccomp("RuntimeDefault", None)),
            capabilities: Some(Capabilities::default()),
            read_only_root_filesystem: Some(true),
            privileged: Some(false),
            allow_privilege_escalation: Some(true),
            proc_mount: Some("Default".into()),
            run_as_user: Some(1),
            run_as_group: Some(1),
            windows_options: Some(windows(|w| {
                w.run_as_user_name = Some("ContainerUser".into())
            })),
            run_as_non_root: Some(true),
        });
    });
    let forbidden = "Forbidden: cannot be set for a windows pod";
    let pod = [
        "spec.securityContext.appArmorProfile",
        "spec.securityContext.seLinuxOptions",
        "spec.hostUsers",
        "spec.hostPID",
        "spec.hostIPC",
        "spec.securityContext.seccompProfile",
        "spec.securityContext.fsGroup",
        "spec.securityContext.fsGroupChangePolicy",
        "spec.securityContext.sysctls",
        "spec.shareProcessNamespace",
        "spec.securityContext.runAsUser",
        "spec.securityContext.runAsGroup",
        "spec.securityContext.supplementalGroups",
        "spec.securityContext.supplementalGroupsPolicy",
        "spec.securityContext.seLinuxChangePolicy",
    ];
    let containers = [
        "appArmorProfile",
        "seLinuxOptions",
        "seccompProfile",
        "capabilities",
        "readOnlyRootFilesystem",
        "privileged",
        "allowPrivilegeEscalation",
        "procMount",
        "runAsUser",
        "runAsGroup",
    ]
    .map(|f| format!("spec.containers[0].securityContext.{f}"));
    let want: Vec<(String, String)> = pod
        .iter()
        .map(|f| f.to_string())
        .chain(containers)
        .map(|f| (f, forbidden.to_string()))
        .collect();
    // 25 violations: Violations keeps the first 20 and counts the rest.
    let mut v = Violations::new();
    super::super::os(&spec, &mut v);
    assert_eq!(v.iter().cloned().collect::<Vec<_>>(), want[..20]);
    assert_eq!(problems(&spec)[..], want[..20]);
}
