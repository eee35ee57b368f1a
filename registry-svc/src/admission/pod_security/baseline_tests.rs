//! The baseline level's checks, as upstream's `check_*_test.go` cases for them.

use super::*;

// ---- windowsHostProcess ----

#[test]
fn host_process_pod_and_containers_as_upstream() {
    let spec = json!({
        "securityContext": { "windowsOptions": { "hostProcess": true } },
        "containers": [
            { "name": "a" },
            with_sc("b", json!({})),
            with_sc("c", json!({ "windowsOptions": {} })),
            with_sc("d", json!({ "windowsOptions": { "hostProcess": false } })),
            with_sc("e", json!({ "windowsOptions": { "hostProcess": true } })),
            with_sc("f", json!({ "windowsOptions": { "hostProcess": true } })),
        ]
    });
    assert_eq!(
        latest("windowsHostProcess", &spec),
        failure(
            "hostProcess",
            r#"pod and containers "e", "f" must not set securityContext.windowsOptions.hostProcess=true"#
        )
    );
}

#[test]
fn host_process_one_container_or_pod_alone() {
    let one = containers_with(&[(
        "a",
        Some(json!({ "windowsOptions": { "hostProcess": true } })),
    )]);
    assert_eq!(
        latest("windowsHostProcess", &one),
        failure(
            "hostProcess",
            r#"container "a" must not set securityContext.windowsOptions.hostProcess=true"#
        )
    );
    let pod = json!({ "securityContext": { "windowsOptions": { "hostProcess": true } } });
    assert_eq!(
        latest("windowsHostProcess", &pod),
        failure(
            "hostProcess",
            "pod must not set securityContext.windowsOptions.hostProcess=true"
        )
    );
}

#[test]
fn host_process_false_or_unset_passes() {
    let spec = json!({
        "securityContext": { "windowsOptions": { "hostProcess": false } },
        "containers": [{ "name": "a", "securityContext": { "windowsOptions": {} } }]
    });
    assert_eq!(latest("windowsHostProcess", &spec), None);
}

// ---- hostNamespaces ----

#[test]
fn host_namespaces_all_three_in_upstreams_order() {
    let spec = json!({ "hostIPC": true, "hostPID": true, "hostNetwork": true });
    assert_eq!(
        latest("hostNamespaces", &spec),
        failure(
            "host namespaces",
            "hostNetwork=true, hostPID=true, hostIPC=true"
        )
    );
}

#[test]
fn host_namespaces_one() {
    let spec = json!({ "hostPID": true, "hostNetwork": false });
    assert_eq!(
        latest("hostNamespaces", &spec),
        failure("host namespaces", "hostPID=true")
    );
}

#[test]
fn host_namespaces_false_unset_or_not_boolean_pass() {
    let spec = json!({ "hostNetwork": false, "hostPID": "true", "hostIPC": null });
    assert_eq!(latest("hostNamespaces", &spec), None);
}

// ---- privileged ----

#[test]
fn privileged_containers_as_upstream() {
    let spec = containers_with(&[
        ("a", None),
        ("b", Some(json!({}))),
        ("c", Some(json!({ "privileged": false }))),
        ("d", Some(json!({ "privileged": true }))),
        ("e", Some(json!({ "privileged": true }))),
    ]);
    assert_eq!(
        latest("privileged", &spec),
        failure(
            "privileged",
            r#"containers "d", "e" must not set securityContext.privileged=true"#
        )
    );
}

#[test]
fn privileged_names_init_then_regular_then_ephemeral_containers() {
    let privileged = json!({ "privileged": true });
    let spec = json!({
        "ephemeralContainers": [with_sc("debug", privileged.clone())],
        "containers": [with_sc("app", privileged.clone())],
        "initContainers": [with_sc("init", privileged)]
    });
    assert_eq!(
        latest("privileged", &spec),
        failure(
            "privileged",
            r#"containers "init", "app", "debug" must not set securityContext.privileged=true"#
        )
    );
}

#[test]
fn privileged_one_container_is_singular() {
    let spec = containers_with(&[("a", Some(json!({ "privileged": true }))), ("b", None)]);
    assert_eq!(
        latest("privileged", &spec),
        failure(
            "privileged",
            r#"container "a" must not set securityContext.privileged=true"#
        )
    );
}

// ---- capabilities_baseline ----

#[test]
fn capabilities_baseline_multiple_containers_as_upstream() {
    let spec = containers_with(&[
        (
            "a",
            Some(json!({ "capabilities": { "add": ["FOO", "BAR"] } })),
        ),
        (
            "b",
            Some(json!({ "capabilities": { "add": ["BAR", "BAZ"] } })),
        ),
    ]);
    assert_eq!(
        latest("capabilities_baseline", &spec),
        failure(
            "non-default capabilities",
            r#"containers "a", "b" must not include "BAR", "BAZ", "FOO" in securityContext.capabilities.add"#
        )
    );
}

#[test]
fn capabilities_baseline_allows_the_default_set() {
    let spec = containers_with(&[(
        "a",
        Some(
            json!({ "capabilities": { "add": ["NET_BIND_SERVICE", "CHOWN", "SYS_CHROOT"], "drop": ["ALL"] } }),
        ),
    )]);
    assert_eq!(latest("capabilities_baseline", &spec), None);
}

#[test]
fn capabilities_baseline_one_container_net_raw() {
    let spec = containers_with(&[
        (
            "a",
            Some(json!({ "capabilities": { "add": ["KILL", "NET_RAW"] } })),
        ),
        ("b", Some(json!({ "capabilities": { "add": ["KILL"] } }))),
    ]);
    assert_eq!(
        latest("capabilities_baseline", &spec),
        failure(
            "non-default capabilities",
            r#"container "a" must not include "NET_RAW" in securityContext.capabilities.add"#
        )
    );
}

#[test]
fn restricted_before_1_22_reports_baseline_capabilities() {
    let spec = containers_with(&[("a", Some(json!({ "capabilities": { "add": ["NET_RAW"] } })))]);
    let reasons = |v| -> Vec<String> {
        evaluate(Level::Restricted, v, &json!({}), &spec)
            .into_iter()
            .map(|f| f.reason)
            .collect()
    };
    assert!(reasons(Version::Minor(21)).contains(&"non-default capabilities".to_string()));
    assert!(!reasons(Version::Minor(21)).contains(&"unrestricted capabilities".to_string()));
    assert!(reasons(Version::Minor(22)).contains(&"unrestricted capabilities".to_string()));
    assert!(!reasons(Version::Minor(22)).contains(&"non-default capabilities".to_string()));
}

// ---- hostPathVolumes ----

#[test]
fn host_path_volumes_as_upstream() {
    let spec = json!({ "volumes": [
        { "name": "a", "hostPath": {} },
        { "name": "b", "hostPath": {} },
        { "name": "c", "emptyDir": {} }
    ]});
    assert_eq!(
        latest("hostPathVolumes", &spec),
        failure("hostPath volumes", r#"volumes "a", "b""#)
    );
}

#[test]
fn host_path_volume_one_is_singular() {
    let spec = json!({ "volumes": [{ "name": "a", "hostPath": { "path": "/var" } }] });
    assert_eq!(
        latest("hostPathVolumes", &spec),
        failure("hostPath volumes", r#"volume "a""#)
    );
}

#[test]
fn host_path_null_or_other_sources_pass() {
    let spec = json!({ "volumes": [
        { "name": "a", "hostPath": null },
        { "name": "b", "nfs": { "server": "x", "path": "/" } }
    ]});
    assert_eq!(latest("hostPathVolumes", &spec), None);
}

#[test]
fn restricted_reports_host_path_as_restricted_volume_only() {
    let spec = json!({ "volumes": [{ "name": "a", "hostPath": {} }] });
    let failures = evaluate(Level::Restricted, Version::Latest, &json!({}), &spec);
    assert!(failures.iter().all(|f| f.reason != "hostPath volumes"));
    assert!(
        failures
            .iter()
            .any(|f| f.reason == "restricted volume types")
    );
    let baseline = evaluate(Level::Baseline, Version::Latest, &json!({}), &spec);
    assert_eq!(
        baseline,
        vec![Failure {
            reason: "hostPath volumes".into(),
            detail: r#"volume "a""#.into()
        }]
    );
}

// ---- hostPorts ----

#[test]
fn host_port_one_container_one_port_as_upstream() {
    let spec = json!({ "containers": [
        { "name": "a", "ports": [{ "hostPort": 0 }] },
        { "name": "b", "ports": [{ "hostPort": 0 }, { "hostPort": 20 }] }
    ]});
    assert_eq!(
        latest("hostPorts", &spec),
        failure("hostPort", r#"container "b" uses hostPort 20"#)
    );
}

#[test]
fn host_ports_multiple_containers_as_upstream() {
    let spec = json!({ "containers": [
        { "name": "a", "ports": [{ "hostPort": 0 }] },
        { "name": "b", "ports": [{ "hostPort": 0 }, { "hostPort": 10 }, { "hostPort": 20 }] },
        { "name": "c", "ports": [{ "hostPort": 0 }, { "hostPort": 10 }, { "hostPort": 30 }] }
    ]});
    assert_eq!(
        latest("hostPorts", &spec),
        failure(
            "hostPort",
            r#"containers "b", "c" use hostPorts 10, 20, 30"#
        )
    );
}

#[test]
fn host_ports_are_listed_as_sorted_strings() {
    let spec = json!({ "initContainers": [
        { "name": "a", "ports": [{ "containerPort": 80, "hostPort": 9 }, { "hostPort": 10 }] }
    ]});
    assert_eq!(
        latest("hostPorts", &spec),
        failure("hostPort", r#"container "a" uses hostPorts 10, 9"#)
    );
}

#[test]
fn host_port_zero_or_unset_passes() {
    let spec = json!({ "containers": [{ "name": "a", "ports": [{ "containerPort": 80 }, { "hostPort": 0 }] }] });
    assert_eq!(latest("hostPorts", &spec), None);
}

// ---- appArmorProfile ----

#[test]
fn app_armor_allowed_profiles_and_annotations_pass() {
    let meta = annotated(json!({
        "container.apparmor.security.beta.kubernetes.io/test": "runtime/default",
        "container.apparmor.security.beta.kubernetes.io/other": "localhost/sec-profile01",
        "env": "prod"
    }));
    let spec = json!({
        "securityContext": { "appArmorProfile": { "type": "RuntimeDefault" } },
        "containers": [with_sc("foo", json!({ "appArmorProfile": { "type": "Localhost", "localhostProfile": "p" } }))]
    });
    assert_eq!(
        check_meta("appArmorProfile", Version::Latest, &meta, &spec),
        None
    );
    assert_eq!(
        check_meta("appArmorProfile", Version::Latest, &json!({}), &json!({})),
        None
    );
}

#[test]
fn app_armor_unconfined_pod() {
    let spec = json!({ "securityContext": { "appArmorProfile": { "type": "Unconfined" } } });
    assert_eq!(
        latest("appArmorProfile", &spec),
        failure(
            "forbidden AppArmor profile",
            r#"pod must not set AppArmor profile type to "Unconfined""#
        )
    );
}

#[test]
fn app_armor_unconfined_container_and_init_container() {
    let spec = json!({
        "securityContext": { "appArmorProfile": { "type": "RuntimeDefault" } },
        "containers": [with_sc("foo", json!({ "appArmorProfile": { "type": "Unconfined" } }))]
    });
    assert_eq!(
        latest("appArmorProfile", &spec),
        failure(
            "forbidden AppArmor profile",
            r#"container "foo" must not set AppArmor profile type to "Unconfined""#
        )
    );
    let spec = json!({
        "containers": [{ "name": "foo" }],
        "initContainers": [with_sc("bar", json!({ "appArmorProfile": { "type": "Unconfined" } }))]
    });
    assert_eq!(
        latest("appArmorProfile", &spec),
        failure(
            "forbidden AppArmor profile",
            r#"container "bar" must not set AppArmor profile type to "Unconfined""#
        )
    );
}

#[test]
fn app_armor_annotations_as_upstream() {
    let meta = annotated(json!({
        "container.apparmor.security.beta.kubernetes.io/": "bogus",
        "container.apparmor.security.beta.kubernetes.io/a": "",
        "container.apparmor.security.beta.kubernetes.io/b": "runtime/default",
        "container.apparmor.security.beta.kubernetes.io/c": "localhost/",
        "container.apparmor.security.beta.kubernetes.io/d": "localhost/foo",
        "container.apparmor.security.beta.kubernetes.io/e": "unconfined",
        "container.apparmor.security.beta.kubernetes.io/f": "unknown"
    }));
    assert_eq!(
        check_meta("appArmorProfile", Version::Latest, &meta, &json!({})),
        failure(
            "forbidden AppArmor profiles",
            concat!(
                "annotations must not set AppArmor profile type to ",
                r#""container.apparmor.security.beta.kubernetes.io/="bogus"", "#,
                r#""container.apparmor.security.beta.kubernetes.io/e="unconfined"", "#,
                r#""container.apparmor.security.beta.kubernetes.io/f="unknown"""#,
            )
        )
    );
}

#[test]
fn app_armor_pod_containers_and_annotation_together() {
    // Bad types sorted (a set profile without a type is ""), then the annotations.
    let meta =
        annotated(json!({ "container.apparmor.security.beta.kubernetes.io/c": "unconfined" }));
    let spec = json!({
        "securityContext": { "appArmorProfile": { "type": "Unconfined" } },
        "containers": [
            with_sc("a", json!({ "appArmorProfile": { "type": "Unconfined" } })),
            with_sc("b", json!({ "appArmorProfile": {} }))
        ]
    });
    assert_eq!(
        check_meta("appArmorProfile", Version::Latest, &meta, &spec),
        failure(
            "forbidden AppArmor profiles",
            concat!(
                r#"pod and containers "a", "b" and annotation must not set AppArmor profile type to "#,
                r#""", "Unconfined", "container.apparmor.security.beta.kubernetes.io/c="unconfined"""#,
            )
        )
    );
}

#[test]
fn app_armor_annotation_values_are_quoted_as_go_does() {
    let meta =
        annotated(json!({ "container.apparmor.security.beta.kubernetes.io/x": "a\"b\\c\n" }));
    assert_eq!(
        check_meta("appArmorProfile", Version::Latest, &meta, &json!({})),
        failure(
            "forbidden AppArmor profile",
            r#"annotation must not set AppArmor profile type to "container.apparmor.security.beta.kubernetes.io/x="a\"b\\c\n"""#
        )
    );
}

#[test]
fn go_quote_escapes_as_strconv_quote() {
    assert_eq!(go_quote("plain é"), r#""plain é""#);
    assert_eq!(go_quote("\u{7}\u{1}\u{7f}\t"), r#""\a\x01\x7f\t""#);
    assert_eq!(go_quote("\u{a0}\u{200b}"), r#""\u00a0\u200b""#);
    assert_eq!(go_quote("\u{f0000}"), r#""\U000f0000""#);
}

// ---- seLinuxOptions ----

/// `check_seLinuxOptions_test.go`'s containers: a to d allowed types at 1.31, e to g not.
fn se_linux_containers() -> Vec<Value> {
    vec![
        with_sc("a", json!({ "seLinuxOptions": { "type": "container_t" } })),
        with_sc(
            "b",
            json!({ "seLinuxOptions": { "type": "container_init_t" } }),
        ),
        with_sc(
            "c",
            json!({ "seLinuxOptions": { "type": "container_kvm_t" } }),
        ),
        with_sc(
            "d",
            json!({ "seLinuxOptions": { "type": "container_engine_t" } }),
        ),
        with_sc("e", json!({ "seLinuxOptions": { "type": "bar" } })),
        with_sc("f", json!({ "seLinuxOptions": { "user": "bar" } })),
        with_sc("g", json!({ "seLinuxOptions": { "role": "baz" } })),
    ]
}

#[test]
fn se_linux_invalid_pod_and_containers_as_upstream() {
    let spec = json!({
        "securityContext": { "seLinuxOptions": { "type": "foo", "user": "bar", "role": "baz" } },
        "containers": se_linux_containers()
    });
    assert_eq!(
        latest("seLinuxOptions", &spec),
        failure(
            "seLinuxOptions",
            r#"pod and containers "e", "f", "g" set forbidden securityContext.seLinuxOptions: types "bar", "foo"; user may not be set; role may not be set"#
        )
    );
}

#[test]
fn se_linux_invalid_pod_or_containers_alone_as_upstream() {
    let pod = json!({
        "securityContext": { "seLinuxOptions": { "type": "foo", "user": "bar", "role": "baz" } },
        "containers": se_linux_containers()[..4].to_vec()
    });
    assert_eq!(
        latest("seLinuxOptions", &pod),
        failure(
            "seLinuxOptions",
            r#"pod set forbidden securityContext.seLinuxOptions: type "foo"; user may not be set; role may not be set"#
        )
    );
    let containers =
        json!({ "securityContext": { "seLinuxOptions": {} }, "containers": se_linux_containers() });
    assert_eq!(
        latest("seLinuxOptions", &containers),
        failure(
            "seLinuxOptions",
            r#"containers "e", "f", "g" set forbidden securityContext.seLinuxOptions: type "bar"; user may not be set; role may not be set"#
        )
    );
}

#[test]
fn se_linux_bad_type_user_or_role_alone_as_upstream() {
    let cases = [
        (
            json!({ "type": "bad" }),
            r#"pod set forbidden securityContext.seLinuxOptions: type "bad""#,
        ),
        (
            json!({ "user": "bad" }),
            "pod set forbidden securityContext.seLinuxOptions: user may not be set",
        ),
        (
            json!({ "role": "bad" }),
            "pod set forbidden securityContext.seLinuxOptions: role may not be set",
        ),
    ];
    for (options, detail) in cases {
        let spec = json!({ "securityContext": { "seLinuxOptions": options } });
        assert_eq!(
            latest("seLinuxOptions", &spec),
            failure("seLinuxOptions", detail)
        );
    }
}

#[test]
fn se_linux_container_engine_t_allowed_from_1_31() {
    let spec = json!({ "containers": [with_sc("d", json!({ "seLinuxOptions": { "type": "container_engine_t" } }))] });
    assert_eq!(
        check("seLinuxOptions", Version::Minor(30), &spec),
        failure(
            "seLinuxOptions",
            r#"container "d" set forbidden securityContext.seLinuxOptions: type "container_engine_t""#
        )
    );
    assert_eq!(check("seLinuxOptions", Version::Minor(31), &spec), None);
    assert_eq!(latest("seLinuxOptions", &spec), None);
}

// ---- procMount ----

#[test]
fn proc_mount_as_upstream() {
    let spec = json!({
        "hostUsers": false,
        "containers": [
            { "name": "a" },
            with_sc("b", json!({})),
            with_sc("c", json!({ "procMount": "Default" })),
            with_sc("d", json!({ "procMount": "Unmasked" })),
            with_sc("e", json!({ "procMount": "other" }))
        ]
    });
    // The user-namespace relaxation is an alpha gate, off: hostUsers: false changes nothing.
    assert_eq!(
        latest("procMount", &spec),
        failure(
            "procMount",
            r#"containers "d", "e" must not set securityContext.procMount to "Unmasked", "other""#
        )
    );
}

#[test]
fn proc_mount_one_container_is_singular() {
    let spec = containers_with(&[("a", Some(json!({ "procMount": "Unmasked" })))]);
    assert_eq!(
        latest("procMount", &spec),
        failure(
            "procMount",
            r#"container "a" must not set securityContext.procMount to "Unmasked""#
        )
    );
}

#[test]
fn proc_mount_default_or_unset_passes() {
    let spec = containers_with(&[("a", Some(json!({ "procMount": "Default" }))), ("b", None)]);
    assert_eq!(latest("procMount", &spec), None);
}

// ---- seccompProfile_baseline ----

#[test]
fn seccomp_baseline_1_0_pod_annotation_as_upstream() {
    let meta = annotated(json!({ "seccomp.security.alpha.kubernetes.io/pod": "unconfined" }));
    assert_eq!(
        check_meta(
            "seccompProfile_baseline",
            Version::Minor(18),
            &meta,
            &json!({})
        ),
        failure(
            "seccompProfile",
            r#"forbidden annotation seccomp.security.alpha.kubernetes.io/pod="unconfined""#
        )
    );
}

#[test]
fn seccomp_baseline_1_0_container_annotations_as_upstream() {
    let meta = annotated(json!({
        "container.seccomp.security.alpha.kubernetes.io/a": "unconfined",
        "container.seccomp.security.alpha.kubernetes.io/b": "unknown"
    }));
    let spec = json!({ "containers": [{ "name": "a" }, { "name": "b" }, { "name": "c" }] });
    assert_eq!(
        check_meta("seccompProfile_baseline", Version::Minor(18), &meta, &spec),
        failure(
            "seccompProfile",
            r#"forbidden annotations container.seccomp.security.alpha.kubernetes.io/a="unconfined", container.seccomp.security.alpha.kubernetes.io/b="unknown""#
        )
    );
}

#[test]
fn seccomp_baseline_1_0_pod_and_container_annotations_as_upstream() {
    let meta = annotated(json!({
        "seccomp.security.alpha.kubernetes.io/pod": "unconfined",
        "container.seccomp.security.alpha.kubernetes.io/a": "unconfined",
        "container.seccomp.security.alpha.kubernetes.io/b": "unknown",
        "container.seccomp.security.alpha.kubernetes.io/z": "unconfined"
    }));
    let spec = json!({ "containers": [{ "name": "a" }, { "name": "b" }, { "name": "c" }] });
    assert_eq!(
        check_meta("seccompProfile_baseline", Version::Minor(0), &meta, &spec),
        failure(
            "seccompProfile",
            r#"forbidden annotations container.seccomp.security.alpha.kubernetes.io/a="unconfined", container.seccomp.security.alpha.kubernetes.io/b="unknown", seccomp.security.alpha.kubernetes.io/pod="unconfined""#
        )
    );
}

#[test]
fn seccomp_baseline_reads_annotations_until_1_18_and_fields_from_1_19() {
    let meta = annotated(json!({ "seccomp.security.alpha.kubernetes.io/pod": "unconfined" }));
    let spec = json!({ "securityContext": { "seccompProfile": { "type": "Unconfined" } } });
    assert_eq!(
        check_meta(
            "seccompProfile_baseline",
            Version::Minor(18),
            &json!({}),
            &spec
        ),
        None
    );
    assert_eq!(
        check_meta(
            "seccompProfile_baseline",
            Version::Minor(19),
            &meta,
            &json!({})
        ),
        None
    );
    assert_eq!(
        check("seccompProfile_baseline", Version::Minor(19), &spec),
        failure(
            "seccompProfile",
            r#"pod must not set securityContext.seccompProfile.type to "Unconfined""#
        )
    );
}

#[test]
fn seccomp_baseline_1_19_containers_and_pod_as_upstream() {
    let containers = json!({
        "securityContext": { "seccompProfile": { "type": "RuntimeDefault" } },
        "containers": seccomp_containers()
    });
    assert_eq!(
        latest("seccompProfile_baseline", &containers),
        failure(
            "seccompProfile",
            r#"containers "c", "d" must not set securityContext.seccompProfile.type to "Unconfined""#
        )
    );
    let both = json!({
        "securityContext": { "seccompProfile": { "type": "Unconfined" } },
        "containers": seccomp_containers()
    });
    assert_eq!(
        latest("seccompProfile_baseline", &both),
        failure(
            "seccompProfile",
            r#"pod and containers "c", "d" must not set securityContext.seccompProfile.type to "Unconfined""#
        )
    );
    // Unset is baseline-compliant.
    assert_eq!(
        latest(
            "seccompProfile_baseline",
            &json!({ "containers": [{ "name": "a" }] })
        ),
        None
    );
}

// ---- sysctls ----

#[test]
fn sysctls_forbidden_listed_in_pod_order() {
    let spec = json!({ "securityContext": { "sysctls": [
        { "name": "b" }, { "name": "kernel.shm_rmid_forced" }, { "name": "a" }
    ]}});
    for version in [
        Version::Minor(0),
        Version::Minor(27),
        Version::Minor(29),
        Version::Latest,
    ] {
        assert_eq!(
            check("sysctls", version, &spec),
            failure("forbidden sysctls", "b, a")
        );
    }
}

#[test]
fn sysctls_safe_set_of_1_0_passes_everywhere() {
    let names = [
        "kernel.shm_rmid_forced",
        "net.ipv4.ip_local_port_range",
        "net.ipv4.tcp_syncookies",
        "net.ipv4.ping_group_range",
        "net.ipv4.ip_unprivileged_port_start",
    ];
    let list: Vec<Value> = names
        .iter()
        .map(|n| json!({ "name": n, "value": "1" }))
        .collect();
    let spec = json!({ "securityContext": { "sysctls": list } });
    assert_eq!(check("sysctls", Version::Minor(0), &spec), None);
    assert_eq!(latest("sysctls", &spec), None);
}

#[test]
fn sysctls_allowed_from_their_minimum_versions() {
    let cases = [
        ("net.ipv4.ip_local_reserved_ports", 27),
        ("net.ipv4.tcp_keepalive_time", 29),
        ("net.ipv4.tcp_fin_timeout", 29),
        ("net.ipv4.tcp_keepalive_intvl", 29),
        ("net.ipv4.tcp_keepalive_probes", 29),
        ("net.ipv4.tcp_rmem", 32),
        ("net.ipv4.tcp_wmem", 32),
    ];
    for (name, since) in cases {
        let spec = json!({ "securityContext": { "sysctls": [{ "name": name, "value": "1" }] } });
        assert_eq!(
            check("sysctls", Version::Minor(since - 1), &spec),
            failure("forbidden sysctls", name),
            "{name} before v1.{since}"
        );
        assert_eq!(
            check("sysctls", Version::Minor(since), &spec),
            None,
            "{name} at v1.{since}"
        );
        assert_eq!(latest("sysctls", &spec), None, "{name} at latest");
    }
}
