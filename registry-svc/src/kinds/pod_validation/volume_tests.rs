//! Upstream's cases (`validation_test.go`: `TestValidateVolumes`, `TestValidateVolumeMounts`,
//! `TestValidateVolumeDevices`, `TestValidateMountPropagation`, `TestValidateRecursiveReadOnly`,
//! `TestValidatePodSpec`'s token case) for names, mounts and devices; each source's rules are
//! in `volume_source_tests`.

use kubestore_proto::core::v1::{
    Container, EmptyDirVolumeSource, HostPathVolumeSource, PersistentVolumeClaimVolumeSource,
    PodSpec, ProjectedVolumeSource, SecurityContext, ServiceAccountTokenProjection, Volume,
    VolumeDevice, VolumeMount, VolumeProjection,
};

use super::{container, service_account_tokens, validate};
use crate::{validation::dns1123_label, violations::Violations};

#[path = "volume_legacy_tests.rs"]
mod legacy;
#[path = "volume_projected_tests.rs"]
mod projected;
#[path = "volume_source_tests.rs"]
mod sources;

/// The violations of `spec`'s volumes, its app and init containers' mounts and devices, and
/// its service account tokens, in that order.
pub(super) fn check(spec: &PodSpec) -> Vec<(String, String)> {
    let mut v = Violations::new();
    let valid = validate(spec, &mut v);
    for (list, containers) in [
        ("containers", &spec.containers),
        ("initContainers", &spec.init_containers),
    ] {
        for (i, c) in containers.iter().enumerate() {
            container(c, &format!("spec.{list}[{i}]"), &valid, &mut v);
        }
    }
    service_account_tokens(spec, &mut v);
    v.iter().cloned().collect()
}

/// Expected violations.
pub(super) fn expect(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(f, d)| (f.to_string(), d.to_string()))
        .collect()
}

/// A pod of one container `c` (no mounts) with these volumes and a service account.
pub(super) fn pod(volumes: Vec<Volume>) -> PodSpec {
    PodSpec {
        containers: vec![Container {
            name: "c".into(),
            image: "busybox".into(),
            ..Default::default()
        }],
        volumes,
        service_account_name: "default".into(),
        ..Default::default()
    }
}

/// The violations of a pod with this one volume.
pub(super) fn check_one(vol: Volume) -> Vec<(String, String)> {
    check(&pod(vec![vol]))
}

pub(super) fn empty_dir(name: &str) -> Volume {
    Volume {
        name: name.into(),
        empty_dir: Some(EmptyDirVolumeSource::default()),
        ..Default::default()
    }
}

fn claim(name: &str) -> Volume {
    Volume {
        name: name.into(),
        persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
            claim_name: "data".into(),
            read_only: false,
        }),
        ..Default::default()
    }
}

fn mount(name: &str, path: &str) -> VolumeMount {
    VolumeMount {
        name: name.into(),
        mount_path: path.into(),
        ..Default::default()
    }
}

fn device(name: &str, path: &str) -> VolumeDevice {
    VolumeDevice {
        name: name.into(),
        device_path: path.into(),
    }
}

/// A pod whose container mounts and attaches these, over `volumes`.
fn with_container(
    volumes: Vec<Volume>,
    mounts: Vec<VolumeMount>,
    devices: Vec<VolumeDevice>,
) -> PodSpec {
    let mut s = pod(volumes);
    s.containers[0].volume_mounts = mounts;
    s.containers[0].volume_devices = devices;
    s
}

#[test]
fn names_are_required_dns_labels_and_unique() {
    let label = dns1123_label("Bad_Name").expect("a problem");
    let empty = dns1123_label("-").expect("a problem");
    let s = pod(vec![
        empty_dir("abc"),
        empty_dir(""),
        empty_dir("Bad_Name"),
        empty_dir("abc"),
        empty_dir(&"a".repeat(64)),
    ]);
    let too_long = dns1123_label(&"a".repeat(64)).expect("a problem");
    assert_eq!(
        check(&s),
        vec![
            ("spec.volumes[1].name".into(), "Required value".into()),
            (
                "spec.volumes[2].name".into(),
                format!("Invalid value: \"Bad_Name\": {label}")
            ),
            (
                "spec.volumes[3].name".into(),
                "Duplicate value: \"abc\"".into()
            ),
            (
                "spec.volumes[4].name".into(),
                format!("Invalid value: {:?}: {too_long}", "a".repeat(64))
            ),
        ]
    );
    // The empty value fails upstream's pattern, not its length.
    assert!(empty.starts_with("a lowercase RFC 1123 label"), "{empty}");
}

#[test]
fn a_duplicate_is_only_one_of_a_valid_volume() {
    // The first `x` is invalid, so the second is not its duplicate (and is the one mounted).
    let mut bad = empty_dir("x");
    bad.host_path = Some(HostPathVolumeSource {
        path: "/a".into(),
        r#type: None,
    });
    let s = with_container(vec![bad, empty_dir("x")], vec![mount("x", "/x")], vec![]);
    assert_eq!(
        check(&s),
        expect(&[(
            "spec.volumes[0].hostPath",
            "Forbidden: may not specify more than 1 volume type"
        )])
    );
}

/// `TestValidateVolumeMounts`.
#[test]
fn mounts_name_a_valid_volume_once_per_path() {
    let ok = with_container(
        vec![empty_dir("abc"), empty_dir("123")],
        vec![
            mount("abc", "/foo"),
            VolumeMount {
                sub_path: "baz/x".into(),
                ..mount("123", "/bar")
            },
            VolumeMount {
                sub_path_expr: "$(POD_NAME)".into(),
                ..mount("abc", "/expr")
            },
        ],
        vec![],
    );
    assert_eq!(check(&ok), []);
    let at = |i: usize, f: &str| format!("spec.containers[0].volumeMounts[{i}].{f}");
    let s = with_container(
        vec![empty_dir("a")],
        vec![
            mount("", "/a"),
            mount("a", ""),
            mount("a", "/a"),
            mount("missing", "/m"),
            VolumeMount {
                sub_path: "/abs".into(),
                ..mount("a", "/d")
            },
            VolumeMount {
                sub_path: "x/../../y".into(),
                ..mount("a", "/e")
            },
            VolumeMount {
                sub_path: "x".into(),
                sub_path_expr: "/y/..".into(),
                ..mount("a", "/f")
            },
        ],
        vec![],
    );
    assert_eq!(
        check(&s),
        vec![
            (at(0, "name"), "Required value".into()),
            (at(0, "name"), "Not found: \"\"".into()),
            (at(1, "mountPath"), "Required value".into()),
            (
                at(2, "mountPath"),
                "Invalid value: \"/a\": must be unique".into()
            ),
            (at(3, "name"), "Not found: \"missing\"".into()),
            (
                "spec.containers[0].volumeMounts.subPath".into(),
                "Invalid value: \"/abs\": must be a relative path".into()
            ),
            (
                "spec.containers[0].volumeMounts.subPath".into(),
                "Invalid value: \"x/../../y\": must not contain '..'".into()
            ),
            (
                at(6, "subPathExpr"),
                "Invalid value: \"/y/..\": subPathExpr and subPath are mutually exclusive".into()
            ),
            (
                "spec.containers[0].volumeMounts.subPathExpr".into(),
                "Invalid value: \"/y/..\": must be a relative path".into()
            ),
            (
                "spec.containers[0].volumeMounts.subPathExpr".into(),
                "Invalid value: \"/y/..\": must not contain '..'".into()
            ),
        ]
    );
}

/// `TestValidateMountPropagation`.
#[test]
fn bidirectional_propagation_needs_a_privileged_container() {
    let propagated = |mode: &str| VolumeMount {
        mount_propagation: Some(mode.into()),
        ..mount("a", "/a")
    };
    for mode in ["None", "HostToContainer"] {
        let s = with_container(vec![empty_dir("a")], vec![propagated(mode)], vec![]);
        assert_eq!(check(&s), [], "{mode}");
    }
    let mut privileged = with_container(
        vec![empty_dir("a")],
        vec![propagated("Bidirectional")],
        vec![],
    );
    privileged.containers[0].security_context = Some(SecurityContext {
        privileged: Some(true),
        ..Default::default()
    });
    assert_eq!(check(&privileged), []);
    let at = "spec.containers[0].volumeMounts.mountPropagation";
    let s = with_container(
        vec![empty_dir("a")],
        vec![propagated("Bidirectional")],
        vec![],
    );
    assert_eq!(
        check(&s),
        expect(&[(
            at,
            "Forbidden: Bidirectional mount propagation is available only to privileged containers"
        )])
    );
    let s = with_container(vec![empty_dir("a")], vec![propagated("Shared")], vec![]);
    assert_eq!(
        check(&s),
        expect(&[(
            at,
            "Unsupported value: \"Shared\": supported values: \"Bidirectional\", \"HostToContainer\", \"None\""
        )])
    );
}

/// `TestValidateRecursiveReadOnly`.
#[test]
fn recursive_read_only_needs_read_only_and_no_propagation() {
    let rro = |mode: &str, read_only: bool, propagation: Option<&str>| VolumeMount {
        recursive_read_only: Some(mode.into()),
        read_only,
        mount_propagation: propagation.map(Into::into),
        ..mount("a", "/a")
    };
    for m in [
        rro("Disabled", false, Some("HostToContainer")),
        rro("Enabled", true, None),
        rro("IfPossible", true, Some("None")),
    ] {
        let s = with_container(vec![empty_dir("a")], vec![m.clone()], vec![]);
        assert_eq!(check(&s), [], "{m:?}");
    }
    let at = "spec.containers[0].volumeMounts.recursiveReadOnly";
    let s = with_container(
        vec![empty_dir("a")],
        vec![rro("Enabled", false, Some("HostToContainer"))],
        vec![],
    );
    assert_eq!(
        check(&s),
        expect(&[
            (at, "Forbidden: may only be specified when readOnly is true"),
            (
                at,
                "Forbidden: may only be specified when mountPropagation is None or not specified"
            ),
        ])
    );
    let s = with_container(
        vec![empty_dir("a")],
        vec![rro("Always", true, None)],
        vec![],
    );
    assert_eq!(
        check(&s),
        expect(&[(
            at,
            "Unsupported value: \"Always\": supported values: \"Disabled\", \"Enabled\", \"IfPossible\""
        )])
    );
}

/// `TestValidateVolumeDevices`.
#[test]
fn devices_name_a_claim_once_and_not_a_mount() {
    let ok = with_container(
        vec![claim("abc"), claim("123")],
        vec![],
        vec![device("abc", "/foo"), device("123", "/usr/share/test")],
    );
    assert_eq!(check(&ok), []);
    let at = |i: usize, f: &str| format!("spec.containers[0].volumeDevices[{i}].{f}");
    let s = with_container(
        vec![claim("abc"), empty_dir("dir"), claim("mounted")],
        vec![mount("mounted", "/m")],
        vec![
            device("", "/a"),
            device("abc", ""),
            device("abc", "/a"),
            device("dir", "/dir"),
            device("missing", "/x/../y"),
            device("mounted", "/m"),
        ],
    );
    assert_eq!(
        check(&s),
        vec![
            (
                "spec.containers[0].volumeMounts[0].name".into(),
                "Invalid value: \"mounted\": must not already exist in volumeDevices".into()
            ),
            (
                "spec.containers[0].volumeMounts[0].mountPath".into(),
                "Invalid value: \"/m\": must not already exist as a path in volumeDevices".into()
            ),
            (at(0, "name"), "Required value".into()),
            (at(0, "name"), "Not found: \"\"".into()),
            (at(1, "devicePath"), "Required value".into()),
            (at(2, "name"), "Invalid value: \"abc\": must be unique".into()),
            (at(2, "devicePath"), "Invalid value: \"/a\": must be unique".into()),
            (
                at(3, "name"),
                "Invalid value: \"dir\": can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode".into()
            ),
            (at(4, "name"), "Not found: \"missing\"".into()),
            (
                at(4, "devicePath"),
                "Invalid value: \"/x/../y\": can not contain backsteps ('..')".into()
            ),
            (
                at(5, "name"),
                "Invalid value: \"mounted\": must not already exist in volumeMounts".into()
            ),
            (
                at(5, "devicePath"),
                "Invalid value: \"/m\": must not already exist as a path in volumeMounts".into()
            ),
        ]
    );
}

#[test]
fn init_containers_mount_the_pods_volumes() {
    let mut s = pod(vec![empty_dir("a")]);
    s.init_containers = vec![Container {
        name: "init".into(),
        volume_mounts: vec![mount("a", "/a"), mount("b", "/b")],
        ..Default::default()
    }];
    assert_eq!(
        check(&s),
        expect(&[(
            "spec.initContainers[0].volumeMounts[1].name",
            "Not found: \"b\""
        )])
    );
}

#[test]
fn a_token_needs_a_service_account() {
    let token = Volume {
        name: "token".into(),
        projected: Some(ProjectedVolumeSource {
            sources: vec![
                VolumeProjection::default(),
                VolumeProjection {
                    service_account_token: Some(ServiceAccountTokenProjection {
                        audience: String::new(),
                        expiration_seconds: Some(3600),
                        path: "token".into(),
                    }),
                    ..Default::default()
                },
            ],
            default_mode: Some(0o644),
        }),
        ..Default::default()
    };
    let mut s = pod(vec![token]);
    assert_eq!(check(&s), []);
    s.service_account_name.clear();
    assert_eq!(
        check(&s),
        expect(&[(
            "spec.volumes[0].projected.sources[1].serviceAccountToken",
            "Forbidden: must not be specified when serviceAccountName is not set"
        )])
    );
}
