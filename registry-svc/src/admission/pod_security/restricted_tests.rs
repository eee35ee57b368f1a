//! The restricted level's own checks, as upstream's `check_*_test.go` cases for them.

use super::*;

// ---- seccompProfile_restricted ----

const SECCOMP_MUST_SET_A: &str = r#"pod or container "a" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost""#;

#[test]
fn seccomp_restricted_no_profile_as_upstream() {
    let spec = json!({ "containers": [{ "name": "a" }] });
    assert_eq!(
        latest("seccompProfile_restricted", &spec),
        failure("seccompProfile", SECCOMP_MUST_SET_A)
    );
    let linux = json!({ "os": { "name": "linux" }, "containers": [{ "name": "a" }] });
    assert_eq!(
        latest("seccompProfile_restricted", &linux),
        failure("seccompProfile", SECCOMP_MUST_SET_A)
    );
}

#[test]
fn seccomp_restricted_exempts_windows_pods_from_1_25() {
    let windows = json!({ "os": { "name": "windows" }, "containers": [{ "name": "a" }] });
    assert_eq!(latest("seccompProfile_restricted", &windows), None);
    assert_eq!(
        check("seccompProfile_restricted", Version::Minor(25), &windows),
        None
    );
    assert_eq!(
        check("seccompProfile_restricted", Version::Minor(24), &windows),
        failure("seccompProfile", SECCOMP_MUST_SET_A)
    );
}

#[test]
fn seccomp_restricted_explicit_faults_as_upstream() {
    let pod = json!({
        "securityContext": { "seccompProfile": { "type": "Unconfined" } },
        "containers": [{ "name": "a" }]
    });
    assert_eq!(
        latest("seccompProfile_restricted", &pod),
        failure(
            "seccompProfile",
            r#"pod must not set securityContext.seccompProfile.type to "Unconfined""#
        )
    );
    let containers = json!({
        "securityContext": { "seccompProfile": { "type": "RuntimeDefault" } },
        "containers": seccomp_containers()
    });
    assert_eq!(
        check("seccompProfile_restricted", Version::Minor(19), &containers),
        failure(
            "seccompProfile",
            r#"containers "c", "d" must not set securityContext.seccompProfile.type to "Unconfined""#
        )
    );
}

#[test]
fn seccomp_restricted_pod_unset_container_fallthrough_as_upstream() {
    let spec = json!({ "containers": [
        { "name": "a" },
        with_sc("b", json!({})),
        with_sc("d", json!({ "seccompProfile": { "type": "RuntimeDefault" } })),
        with_sc("e", json!({ "seccompProfile": { "type": "Localhost", "localhostProfile": "p.json" } }))
    ]});
    assert_eq!(
        latest("seccompProfile_restricted", &spec),
        failure(
            "seccompProfile",
            r#"pod or containers "a", "b" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost""#
        )
    );
    let pod_set = json!({
        "securityContext": { "seccompProfile": { "type": "RuntimeDefault" } },
        "containers": [{ "name": "a" }]
    });
    assert_eq!(latest("seccompProfile_restricted", &pod_set), None);
}

// ---- allowPrivilegeEscalation ----

#[test]
fn allow_privilege_escalation_multiple_containers_as_upstream() {
    let spec = containers_with(&[
        ("a", None),
        ("b", Some(json!({}))),
        ("c", Some(json!({ "allowPrivilegeEscalation": true }))),
        ("d", Some(json!({ "allowPrivilegeEscalation": false }))),
    ]);
    let want = failure(
        "allowPrivilegeEscalation != false",
        r#"containers "a", "b", "c" must set securityContext.allowPrivilegeEscalation=false"#,
    );
    assert_eq!(
        check("allowPrivilegeEscalation", Version::Minor(8), &spec),
        want
    );
    assert_eq!(latest("allowPrivilegeEscalation", &spec), want);
}

#[test]
fn allow_privilege_escalation_exempts_windows_pods_from_1_25() {
    let windows = json!({ "os": { "name": "windows" }, "containers": [{ "name": "a" }] });
    assert_eq!(latest("allowPrivilegeEscalation", &windows), None);
    assert_eq!(
        check("allowPrivilegeEscalation", Version::Minor(24), &windows),
        failure(
            "allowPrivilegeEscalation != false",
            r#"container "a" must set securityContext.allowPrivilegeEscalation=false"#
        )
    );
}

#[test]
fn allow_privilege_escalation_linux_pod_without_security_context() {
    let linux = json!({ "os": { "name": "linux" }, "containers": [{ "name": "a" }] });
    assert_eq!(
        latest("allowPrivilegeEscalation", &linux),
        failure(
            "allowPrivilegeEscalation != false",
            r#"container "a" must set securityContext.allowPrivilegeEscalation=false"#
        )
    );
    assert_eq!(
        check("allowPrivilegeEscalation", Version::Minor(7), &linux),
        None
    );
}

// ---- capabilities_restricted ----

#[test]
fn capabilities_restricted_multiple_containers_as_upstream() {
    let spec = containers_with(&[
        (
            "a",
            Some(json!({ "capabilities": { "add": ["FOO", "BAR"] } })),
        ),
        (
            "b",
            Some(json!({ "capabilities": { "add": ["BAR", "BAZ"] } })),
        ),
        (
            "c",
            Some(
                json!({ "capabilities": { "add": ["NET_BIND_SERVICE", "CHOWN"], "drop": ["ALL", "FOO"] } }),
            ),
        ),
    ]);
    let want = failure(
        "unrestricted capabilities",
        r#"containers "a", "b" must set securityContext.capabilities.drop=["ALL"]; containers "a", "b", "c" must not include "BAR", "BAZ", "CHOWN", "FOO" in securityContext.capabilities.add"#,
    );
    assert_eq!(
        check("capabilities_restricted", Version::Minor(22), &spec),
        want
    );
    assert_eq!(latest("capabilities_restricted", &spec), want);
}

#[test]
fn capabilities_restricted_exempts_windows_pods_from_1_25() {
    let windows = json!({ "os": { "name": "windows" }, "containers": [{ "name": "a" }] });
    let must_drop = failure(
        "unrestricted capabilities",
        r#"container "a" must set securityContext.capabilities.drop=["ALL"]"#,
    );
    assert_eq!(latest("capabilities_restricted", &windows), None);
    assert_eq!(
        check("capabilities_restricted", Version::Minor(24), &windows),
        must_drop
    );
    let linux = json!({ "os": { "name": "linux" }, "containers": [{ "name": "a" }] });
    assert_eq!(latest("capabilities_restricted", &linux), must_drop);
}

#[test]
fn capabilities_restricted_drop_all_add_net_bind_service_passes() {
    let spec = containers_with(&[(
        "a",
        Some(json!({ "capabilities": { "drop": ["ALL"], "add": ["NET_BIND_SERVICE"] } })),
    )]);
    assert_eq!(latest("capabilities_restricted", &spec), None);
    // "all" is not "ALL".
    let lower = containers_with(&[("a", Some(json!({ "capabilities": { "drop": ["all"] } })))]);
    assert_eq!(
        latest("capabilities_restricted", &lower),
        failure(
            "unrestricted capabilities",
            r#"container "a" must set securityContext.capabilities.drop=["ALL"]"#
        )
    );
}

// ---- restrictedVolumes ----

#[test]
fn restricted_volumes_every_type_as_upstream() {
    let allowed = [
        ("a1", "emptyDir"),
        ("a2", "secret"),
        ("a3", "persistentVolumeClaim"),
        ("a4", "downwardAPI"),
        ("a5", "configMap"),
        ("a6", "projected"),
        ("a7", "csi"),
        ("a8", "ephemeral"),
        ("a9", "image"),
    ];
    let restricted = [
        ("b1", "hostPath"),
        ("b2", "gcePersistentDisk"),
        ("b3", "awsElasticBlockStore"),
        ("b4", "gitRepo"),
        ("b5", "nfs"),
        ("b6", "iscsi"),
        ("b7", "glusterfs"),
        ("b8", "rbd"),
        ("b9", "flexVolume"),
        ("b10", "cinder"),
        ("b11", "cephfs"),
        ("b12", "flocker"),
        ("b13", "fc"),
        ("b14", "azureFile"),
        ("b15", "vsphereVolume"),
        ("b16", "quobyte"),
        ("b17", "azureDisk"),
        ("b18", "photonPersistentDisk"),
        ("b19", "portworxVolume"),
        ("b20", "scaleIO"),
        ("b21", "storageos"),
    ];
    let mut volumes: Vec<Value> = allowed
        .iter()
        .chain(restricted.iter())
        .map(|(name, source)| {
            let mut v = json!({ "name": name });
            v[*source] = json!({});
            v
        })
        .collect();
    volumes.push(json!({ "name": "c1" }));
    let spec = json!({ "volumes": volumes });
    assert_eq!(
        latest("restrictedVolumes", &spec),
        failure(
            "restricted volume types",
            concat!(
                "volumes ",
                r#""b1", "b2", "b3", "b4", "b5", "b6", "b7", "b8", "b9", "b10", "b11", "b12", "b13", "b14", "b15", "b16", "b17", "b18", "b19", "b20", "b21", "c1""#,
                " use restricted volume types ",
                r#""awsElasticBlockStore", "azureDisk", "azureFile", "cephfs", "cinder", "fc", "flexVolume", "flocker", "gcePersistentDisk", "gitRepo", "glusterfs", "#,
                r#""hostPath", "iscsi", "nfs", "photonPersistentDisk", "portworxVolume", "quobyte", "rbd", "scaleIO", "storageos", "unknown", "vsphereVolume""#,
            )
        )
    );
}

#[test]
fn restricted_volume_one_is_singular() {
    let spec = json!({ "volumes": [{ "name": "a", "hostPath": { "path": "/" } }, { "name": "b", "secret": {} }] });
    assert_eq!(
        latest("restrictedVolumes", &spec),
        failure(
            "restricted volume types",
            r#"volume "a" uses restricted volume type "hostPath""#
        )
    );
}

#[test]
fn restricted_volumes_allowed_source_wins_and_null_is_unset() {
    // An allowed source passes whatever else is set (upstream's switch); null is no source.
    let spec = json!({ "volumes": [
        { "name": "a", "emptyDir": {}, "hostPath": {} },
        { "name": "b", "hostPath": null, "nfs": {} },
        { "name": "c", "configMap": null }
    ]});
    assert_eq!(
        latest("restrictedVolumes", &spec),
        failure(
            "restricted volume types",
            r#"volumes "b", "c" use restricted volume types "nfs", "unknown""#
        )
    );
}

// ---- runAsNonRoot ----

#[test]
fn run_as_non_root_unset_as_upstream() {
    let spec = json!({ "containers": [{ "name": "a" }] });
    assert_eq!(
        latest("runAsNonRoot", &spec),
        failure(
            "runAsNonRoot != true",
            r#"pod or container "a" must set securityContext.runAsNonRoot=true"#
        )
    );
}

#[test]
fn run_as_non_root_explicit_false_as_upstream() {
    let pod =
        json!({ "securityContext": { "runAsNonRoot": false }, "containers": [{ "name": "a" }] });
    assert_eq!(
        latest("runAsNonRoot", &pod),
        failure(
            "runAsNonRoot != true",
            "pod must not set securityContext.runAsNonRoot=false"
        )
    );
    let mut containers = containers_with(&[
        ("a", None),
        ("b", Some(json!({}))),
        ("c", Some(json!({ "runAsNonRoot": false }))),
        ("d", Some(json!({ "runAsNonRoot": false }))),
        ("e", Some(json!({ "runAsNonRoot": true }))),
        ("f", Some(json!({ "runAsNonRoot": true }))),
    ]);
    containers["securityContext"] = json!({ "runAsNonRoot": true });
    assert_eq!(
        latest("runAsNonRoot", &containers),
        failure(
            "runAsNonRoot != true",
            r#"containers "c", "d" must not set securityContext.runAsNonRoot=false"#
        )
    );
}

#[test]
fn run_as_non_root_pod_unset_container_fallthrough_as_upstream() {
    let spec = containers_with(&[
        ("a", None),
        ("b", Some(json!({}))),
        ("d", Some(json!({ "runAsNonRoot": true }))),
        ("e", Some(json!({ "runAsNonRoot": true }))),
    ]);
    assert_eq!(
        latest("runAsNonRoot", &spec),
        failure(
            "runAsNonRoot != true",
            r#"pod or containers "a", "b" must set securityContext.runAsNonRoot=true"#
        )
    );
}

#[test]
fn run_as_non_root_explicit_fault_is_told_before_implicit() {
    let spec = containers_with(&[("a", None), ("b", Some(json!({ "runAsNonRoot": false })))]);
    assert_eq!(
        latest("runAsNonRoot", &spec),
        failure(
            "runAsNonRoot != true",
            r#"container "b" must not set securityContext.runAsNonRoot=false"#
        )
    );
}

// ---- runAsUser ----

#[test]
fn run_as_user_zero_on_pod_as_upstream() {
    let spec = json!({ "securityContext": { "runAsUser": 0 }, "containers": [{ "name": "a" }] });
    assert_eq!(
        latest("runAsUser", &spec),
        failure("runAsUser=0", "pod must not set runAsUser=0")
    );
}

#[test]
fn run_as_user_zero_on_containers_as_upstream() {
    let mut spec = containers_with(&[
        ("a", None),
        ("b", Some(json!({}))),
        ("c", Some(json!({ "runAsUser": 0 }))),
        ("d", Some(json!({ "runAsUser": 0 }))),
        ("e", Some(json!({ "runAsUser": 1 }))),
        ("f", Some(json!({ "runAsUser": 1 }))),
    ]);
    spec["securityContext"] = json!({ "runAsUser": 1000 });
    assert_eq!(
        latest("runAsUser", &spec),
        failure(
            "runAsUser=0",
            r#"containers "c", "d" must not set runAsUser=0"#
        )
    );
}

#[test]
fn run_as_user_non_zero_or_unset_passes_and_applies_from_1_23() {
    let fine = json!({ "securityContext": { "runAsUser": 1000 }, "containers": [
        with_sc("c", json!({ "runAsUser": 1 })), { "name": "d" }
    ]});
    assert_eq!(latest("runAsUser", &fine), None);
    let root = json!({ "securityContext": { "runAsUser": 0 } });
    assert_eq!(check("runAsUser", Version::Minor(22), &root), None);
    assert_eq!(
        check("runAsUser", Version::Minor(23), &root),
        failure("runAsUser=0", "pod must not set runAsUser=0")
    );
}
