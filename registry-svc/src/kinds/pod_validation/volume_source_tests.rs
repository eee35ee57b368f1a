//! One volume of every source upstream accepts, one source per volume, and the rules of the
//! common sources (`TestValidateVolumes`, `TestValidateCSIVolumeSource`, the image volume cases
//! of upstream's `validation_test.go`), with upstream's paths and words. The shared builders
//! are here.

use std::collections::BTreeMap;

use kubestore_proto::core::v1::{
    AwsElasticBlockStoreVolumeSource, AzureDiskVolumeSource, AzureFileVolumeSource,
    CephFsVolumeSource, CinderVolumeSource, ClusterTrustBundleProjection, ConfigMapProjection,
    ConfigMapVolumeSource, CsiVolumeSource, DownwardApiProjection, DownwardApiVolumeFile,
    DownwardApiVolumeSource, EmptyDirVolumeSource, EphemeralVolumeSource, FcVolumeSource,
    FlexVolumeSource, FlockerVolumeSource, GcePersistentDiskVolumeSource, GitRepoVolumeSource,
    GlusterfsVolumeSource, HostPathVolumeSource, ImageVolumeSource, IscsiVolumeSource, KeyToPath,
    LocalObjectReference, NfsVolumeSource, ObjectFieldSelector, PersistentVolumeClaimSpec,
    PersistentVolumeClaimTemplate, PersistentVolumeClaimVolumeSource,
    PhotonPersistentDiskVolumeSource, PortworxVolumeSource, ProjectedVolumeSource,
    QuobyteVolumeSource, RbdVolumeSource, ResourceFieldSelector, ScaleIoVolumeSource,
    SecretProjection, SecretVolumeSource, ServiceAccountTokenProjection, StorageOsVolumeSource,
    Volume, VolumeMount, VolumeProjection, VolumeResourceRequirements,
    VsphereVirtualDiskVolumeSource,
};

use super::{check, check_one, empty_dir, expect, pod};
use crate::validation::dns1123_subdomain;

pub(super) fn vol(edit: impl FnOnce(&mut Volume)) -> Volume {
    let mut v = Volume {
        name: "v".into(),
        ..Default::default()
    };
    edit(&mut v);
    v
}

pub(super) fn item(key: &str, path: &str, mode: Option<i32>) -> KeyToPath {
    KeyToPath {
        key: key.into(),
        path: path.into(),
        mode,
    }
}

pub(super) fn field_file(path: &str, field: &str) -> DownwardApiVolumeFile {
    DownwardApiVolumeFile {
        path: path.into(),
        field_ref: Some(ObjectFieldSelector {
            api_version: "v1".into(),
            field_path: field.into(),
        }),
        ..Default::default()
    }
}

pub(super) fn resource_file(
    path: &str,
    container: &str,
    resource: &str,
    divisor: &str,
) -> DownwardApiVolumeFile {
    DownwardApiVolumeFile {
        path: path.into(),
        resource_field_ref: Some(ResourceFieldSelector {
            container_name: container.into(),
            resource: resource.into(),
            divisor: divisor.into(),
        }),
        ..Default::default()
    }
}

pub(super) fn claim_template(spec: PersistentVolumeClaimSpec) -> Volume {
    vol(|v| {
        v.ephemeral = Some(EphemeralVolumeSource {
            volume_claim_template: Some(PersistentVolumeClaimTemplate {
                metadata: None,
                spec: Some(spec),
            }),
        })
    })
}

pub(super) fn storage(q: &str) -> Option<VolumeResourceRequirements> {
    Some(VolumeResourceRequirements {
        requests: BTreeMap::from([("storage".to_string(), q.to_string())]),
        ..Default::default()
    })
}

pub(super) fn projection(sources: Vec<VolumeProjection>) -> Volume {
    vol(|v| {
        v.projected = Some(ProjectedVolumeSource {
            sources,
            default_mode: Some(0o644),
        })
    })
}

pub(super) fn bundle(edit: impl FnOnce(&mut ClusterTrustBundleProjection)) -> VolumeProjection {
    let mut b = ClusterTrustBundleProjection {
        path: "ca.pem".into(),
        ..Default::default()
    };
    edit(&mut b);
    VolumeProjection {
        cluster_trust_bundle: Some(b),
        ..Default::default()
    }
}

/// One valid volume of every source, as upstream's `TestValidateVolumes` has them.
fn every_source() -> Vec<Volume> {
    let s = |x: &str| x.to_string();
    vec![
        vol(|v| {
            v.empty_dir = Some(EmptyDirVolumeSource {
                medium: s("Memory"),
                size_limit: Some(s("1Gi")),
            })
        }),
        vol(|v| {
            v.host_path = Some(HostPathVolumeSource {
                path: s("/mnt/path"),
                r#type: Some(s("Socket")),
            })
        }),
        vol(|v| {
            v.gce_persistent_disk = Some(GcePersistentDiskVolumeSource {
                pd_name: s("my-pd"),
                fs_type: s("ext4"),
                partition: 1,
                read_only: false,
            })
        }),
        vol(|v| {
            v.aws_elastic_block_store = Some(AwsElasticBlockStoreVolumeSource {
                volume_id: s("my-disk"),
                fs_type: s("ext4"),
                partition: 1,
                read_only: false,
            })
        }),
        vol(|v| {
            v.git_repo = Some(GitRepoVolumeSource {
                repository: s("my-repo"),
                revision: s("hashstring"),
                directory: s("target"),
            })
        }),
        vol(|v| {
            v.secret = Some(SecretVolumeSource {
                secret_name: s("my-secret"),
                items: vec![item("k", "a/b", Some(0o400))],
                default_mode: Some(0o644),
                optional: None,
            })
        }),
        vol(|v| {
            v.nfs = Some(NfsVolumeSource {
                server: s("my-server"),
                path: s("/my/path"),
                read_only: false,
            })
        }),
        vol(|v| {
            v.iscsi = Some(IscsiVolumeSource {
                target_portal: s("127.0.0.1:3260"),
                iqn: s("iqn.2015-02.example.com:test"),
                lun: 1,
                iscsi_interface: s("default"),
                initiator_name: Some(s("eui.0123456789ABCDEF")),
                ..Default::default()
            })
        }),
        vol(|v| {
            v.glusterfs = Some(GlusterfsVolumeSource {
                endpoints: s("host1"),
                path: s("path"),
                read_only: false,
            })
        }),
        vol(|v| {
            v.persistent_volume_claim = Some(PersistentVolumeClaimVolumeSource {
                claim_name: s("my-pvc"),
                read_only: true,
            })
        }),
        vol(|v| {
            v.rbd = Some(RbdVolumeSource {
                monitors: vec![s("foo")],
                image: s("bar"),
                ..Default::default()
            })
        }),
        vol(|v| {
            v.flex_volume = Some(FlexVolumeSource {
                driver: s("kubernetes.io/blue"),
                options: BTreeMap::from([(s("example.com/x"), s("y"))]),
                ..Default::default()
            })
        }),
        vol(|v| {
            v.cinder = Some(CinderVolumeSource {
                volume_id: s("29ea5088"),
                fs_type: s("ext4"),
                read_only: false,
                secret_ref: None,
            })
        }),
        vol(|v| {
            v.cephfs = Some(CephFsVolumeSource {
                monitors: vec![s("a"), s("b")],
                ..Default::default()
            })
        }),
        vol(|v| {
            v.flocker = Some(FlockerVolumeSource {
                dataset_name: s("datasetName"),
                dataset_uuid: s(""),
            })
        }),
        vol(|v| {
            v.downward_api = Some(DownwardApiVolumeSource {
                items: vec![
                    field_file("labels", "metadata.labels"),
                    field_file("annotations", "metadata.annotations['a.b/c']"),
                    resource_file("cpu", "c", "limits.cpu", "1m"),
                    resource_file("huge", "c", "requests.hugepages-2Mi", "1Mi"),
                ],
                default_mode: Some(0o644),
            })
        }),
        vol(|v| {
            v.fc = Some(FcVolumeSource {
                target_wwns: vec![s("some_wwn")],
                lun: Some(1),
                ..Default::default()
            })
        }),
        vol(|v| {
            v.azure_file = Some(AzureFileVolumeSource {
                secret_name: s("key"),
                share_name: s("share"),
                read_only: false,
            })
        }),
        vol(|v| {
            v.config_map = Some(ConfigMapVolumeSource {
                name: s("my-cfgmap"),
                items: vec![item("k", "p", None)],
                default_mode: Some(0),
                optional: None,
            })
        }),
        vol(|v| {
            v.vsphere_volume = Some(VsphereVirtualDiskVolumeSource {
                volume_path: s("[ds] x.vmdk"),
                ..Default::default()
            })
        }),
        vol(|v| {
            v.quobyte = Some(QuobyteVolumeSource {
                registry: s("whatever:7861,[::1]:7861"),
                volume: s("v"),
                ..Default::default()
            })
        }),
        vol(|v| {
            v.azure_disk = Some(AzureDiskVolumeSource {
                disk_name: s("foo"),
                disk_uri: s("https://blob/vhds/bar.vhd"),
                caching_mode: Some(s("ReadWrite")),
                kind: Some(s("Shared")),
                ..Default::default()
            })
        }),
        vol(|v| {
            v.photon_persistent_disk = Some(PhotonPersistentDiskVolumeSource {
                pd_id: s("pd"),
                fs_type: s("ext4"),
            })
        }),
        vol(|v| {
            v.projected = Some(ProjectedVolumeSource {
                sources: vec![
                    VolumeProjection {
                        secret: Some(SecretProjection {
                            name: s("s"),
                            items: vec![item("k", "s/k", None)],
                            optional: None,
                        }),
                        ..Default::default()
                    },
                    VolumeProjection {
                        config_map: Some(ConfigMapProjection {
                            name: s("c"),
                            items: vec![item("k", "c/k", None)],
                            optional: None,
                        }),
                        ..Default::default()
                    },
                    VolumeProjection {
                        downward_api: Some(DownwardApiProjection {
                            items: vec![field_file("d/name", "metadata.name")],
                        }),
                        ..Default::default()
                    },
                    VolumeProjection {
                        service_account_token: Some(ServiceAccountTokenProjection {
                            audience: s("api"),
                            expiration_seconds: Some(3600),
                            path: s("token"),
                        }),
                        ..Default::default()
                    },
                    bundle(|b| b.signer_name = Some(s("example.com/signer"))),
                    bundle(|b| {
                        b.name = Some(s("example.com:signer:x"));
                        b.path = s("other.pem");
                    }),
                ],
                default_mode: Some(0o644),
            })
        }),
        vol(|v| {
            v.portworx_volume = Some(PortworxVolumeSource {
                volume_id: s("pwx"),
                ..Default::default()
            })
        }),
        vol(|v| {
            v.scale_io = Some(ScaleIoVolumeSource {
                gateway: s("http://gw"),
                system: s("sys"),
                volume_name: s("vol"),
                ..Default::default()
            })
        }),
        vol(|v| {
            v.storageos = Some(StorageOsVolumeSource {
                volume_name: s("vol"),
                volume_namespace: s("ns"),
                ..Default::default()
            })
        }),
        vol(|v| {
            v.csi = Some(CsiVolumeSource {
                driver: s("com.google.foo"),
                node_publish_secret_ref: Some(LocalObjectReference { name: s("secret") }),
                ..Default::default()
            })
        }),
        claim_template(PersistentVolumeClaimSpec {
            access_modes: vec![s("ReadWriteOnce")],
            resources: storage("1Gi"),
            volume_mode: Some(s("Block")),
            ..Default::default()
        }),
        vol(|v| {
            v.image = Some(ImageVolumeSource {
                reference: s("quay.io/crio/artifact:v1"),
                pull_policy: s("IfNotPresent"),
            })
        }),
    ]
}

#[test]
fn every_source_upstream_accepts_is_valid_and_mountable() {
    let mut volumes = every_source();
    for (i, v) in volumes.iter_mut().enumerate() {
        v.name = format!("v{i}");
    }
    let mut s = pod(volumes);
    s.containers[0].volume_mounts = (0..s.volumes.len())
        .map(|i| VolumeMount {
            name: format!("v{i}"),
            mount_path: format!("/v{i}"),
            ..Default::default()
        })
        .collect();
    assert_eq!(check(&s), []);
    assert_eq!(s.volumes.len(), 30);
}

#[test]
fn a_volume_has_exactly_one_source_with_upstreams_path_quirks() {
    assert_eq!(
        check_one(vol(|_| {})),
        expect(&[(
            "spec.volumes[0]",
            "Required value: must specify a volume type"
        )])
    );
    let sources = every_source();
    // emptyDir then each other source: the second one is Forbidden at its (quirky) name.
    let names = [
        "hostPath",
        "gcePersistentDisk",
        "awsElasticBlockStore",
        "gitRepo",
        "secret",
        "nfs",
        "iscsi",
        "glusterfs",
        "persistentVolumeClaim",
        "rbd",
        "flexVolume",
        "cinder",
        "cephFS",
        "flocker",
        "downwarAPI",
        "fc",
        "azureFile",
        "configMap",
        "vsphereVolume",
        "quobyte",
        "azureDisk",
        "photonPersistentDisk",
        "projected",
        "portworxVolume",
        "scaleIO",
        "storageos",
        "csi",
        "ephemeral",
        "image",
    ];
    for (src, name) in sources[1..].iter().zip(names) {
        let mut two = src.clone();
        two.empty_dir = Some(EmptyDirVolumeSource::default());
        assert_eq!(
            check_one(two),
            expect(&[(
                &format!("spec.volumes[0].{name}"),
                "Forbidden: may not specify more than 1 volume type"
            )]),
            "{name}"
        );
    }
    // The first source is validated (at `persistentDisk`, upstream's path), the second not.
    let mut two = vol(|v| {
        v.gce_persistent_disk = Some(GcePersistentDiskVolumeSource::default());
        v.aws_elastic_block_store = Some(AwsElasticBlockStoreVolumeSource::default());
    });
    two.name = "two".into();
    assert_eq!(
        check_one(two),
        expect(&[
            ("spec.volumes[0].persistentDisk.pdName", "Required value"),
            (
                "spec.volumes[0].awsElasticBlockStore",
                "Forbidden: may not specify more than 1 volume type"
            ),
        ])
    );
}

#[test]
fn host_path_is_required_without_backsteps_and_of_a_known_type() {
    let hp = |path: &str, t: Option<&str>| {
        vol(|v| {
            v.host_path = Some(HostPathVolumeSource {
                path: path.into(),
                r#type: t.map(Into::into),
            })
        })
    };
    for t in [
        "",
        "DirectoryOrCreate",
        "Directory",
        "FileOrCreate",
        "File",
        "CharDevice",
        "BlockDevice",
    ] {
        assert_eq!(check_one(hp("/a", Some(t))), [], "{t}");
    }
    assert_eq!(
        check_one(hp("", Some("bad"))),
        expect(&[("spec.volumes[0].hostPath.path", "Required value")])
    );
    assert_eq!(
        check_one(hp("/a/../b", Some("bad"))),
        expect(&[
            (
                "spec.volumes[0].hostPath.path",
                "Invalid value: \"/a/../b\": must not contain '..'"
            ),
            (
                "spec.volumes[0].hostPath.type",
                "Unsupported value: \"bad\": supported values: \"\", \"BlockDevice\", \"CharDevice\", \"Directory\", \"DirectoryOrCreate\", \"File\", \"FileOrCreate\", \"Socket\""
            ),
        ])
    );
}

#[test]
fn empty_dir_size_limit_is_a_non_negative_quantity() {
    let sized = |q: &str| {
        vol(|v| {
            v.empty_dir = Some(EmptyDirVolumeSource {
                medium: String::new(),
                size_limit: Some(q.into()),
            })
        })
    };
    assert_eq!(check_one(sized("0")), []);
    assert_eq!(
        check_one(sized("-1Gi")),
        expect(&[(
            "spec.volumes[0].emptyDir.sizeLimit",
            "Forbidden: SizeLimit field must be a valid resource quantity"
        )])
    );
    let bad = check_one(sized("lots"));
    assert_eq!(bad.len(), 1);
    assert!(
        bad[0]
            .1
            .starts_with("Invalid value: \"lots\": quantities must match"),
        "{bad:?}"
    );
}

#[test]
fn secrets_and_config_maps_need_names_items_and_modes() {
    let secret = vol(|v| {
        v.secret = Some(SecretVolumeSource {
            secret_name: String::new(),
            items: vec![item("", "", Some(-1)), item("k", "/abs/../x", Some(0o1000))],
            default_mode: Some(0o1000),
            optional: None,
        })
    });
    let mode = "must be a number between 0 and 0777 (octal), both inclusive";
    assert_eq!(
        check_one(secret),
        vec![
            (
                "spec.volumes[0].secret.secretName".to_string(),
                "Required value".to_string()
            ),
            (
                "spec.volumes[0].secret.defaultMode".into(),
                format!("Invalid value: 512: {mode}")
            ),
            (
                "spec.volumes[0].secret.items[0].key".into(),
                "Required value".into()
            ),
            (
                "spec.volumes[0].secret.items[0].path".into(),
                "Required value".into()
            ),
            (
                "spec.volumes[0].secret.items[0].mode".into(),
                format!("Invalid value: -1: {mode}")
            ),
            (
                "spec.volumes[0].secret.items[1].path".into(),
                "Invalid value: \"/abs/../x\": must be a relative path".into()
            ),
            (
                "spec.volumes[0].secret.items[1].path".into(),
                "Invalid value: \"/abs/../x\": must not contain '..'".into()
            ),
            (
                "spec.volumes[0].secret.items[1].mode".into(),
                format!("Invalid value: 512: {mode}")
            ),
        ]
    );
    let config_map = vol(|v| {
        v.config_map = Some(ConfigMapVolumeSource {
            name: String::new(),
            items: vec![item("k", "..data", None), item("k", "../x", None)],
            default_mode: Some(0o777),
            optional: None,
        })
    });
    assert_eq!(
        check_one(config_map),
        expect(&[
            ("spec.volumes[0].configMap.name", "Required value"),
            (
                "spec.volumes[0].configMap.items[0].path",
                "Invalid value: \"..data\": must not start with '..'"
            ),
            (
                "spec.volumes[0].configMap.items[1].path",
                "Invalid value: \"../x\": must not contain '..'"
            ),
        ])
    );
}

#[test]
fn csi_drivers_are_short_dns_subdomains() {
    let driver = |d: &str| {
        vol(|v| {
            v.csi = Some(CsiVolumeSource {
                driver: d.into(),
                ..Default::default()
            })
        })
    };
    let at = "spec.volumes[0].csi.driver";
    let pattern = dns1123_subdomain(".").expect("a problem");
    assert_eq!(check_one(driver("Com.Example.Driver")), []);
    assert_eq!(
        check_one(driver("")),
        vec![
            (at.to_string(), "Required value".to_string()),
            (at.into(), format!("Invalid value: \"\": {pattern}")),
        ]
    );
    let long = format!("{}.com", "a".repeat(60));
    assert_eq!(
        check_one(driver(&long)),
        vec![(
            at.to_string(),
            "Too long: may not be more than 63 bytes".to_string()
        )]
    );
    assert_eq!(
        check_one(driver("a_b")),
        vec![(at.to_string(), format!("Invalid value: \"a_b\": {pattern}"))]
    );
    let secret = vol(|v| {
        v.csi = Some(CsiVolumeSource {
            driver: "d".into(),
            node_publish_secret_ref: Some(LocalObjectReference { name: "Bad".into() }),
            ..Default::default()
        })
    });
    let bad = dns1123_subdomain("Bad").expect("a problem");
    assert_eq!(
        check_one(secret),
        vec![(
            "spec.volumes[0].csi.name".to_string(),
            format!("Invalid value: \"Bad\": {bad}")
        )]
    );
}

#[test]
fn image_volumes_need_a_reference_and_a_pull_policy() {
    let image = |r: &str, p: &str| {
        vol(|v| {
            v.image = Some(ImageVolumeSource {
                reference: r.into(),
                pull_policy: p.into(),
            })
        })
    };
    assert_eq!(
        check_one(image("", "")),
        expect(&[
            ("spec.volumes[0].image.reference", "Required value"),
            ("spec.volumes[0].image.pullPolicy", "Required value"),
        ])
    );
    assert_eq!(
        check_one(image("x", "Sometimes")),
        expect(&[(
            "spec.volumes[0].image.pullPolicy",
            "Unsupported value: \"Sometimes\": supported values: \"Always\", \"IfNotPresent\", \"Never\""
        )])
    );
    // 1.33 allows subPath into an image volume.
    let mut s = pod(vec![image("x", "Always")]);
    s.containers[0].volume_mounts = vec![VolumeMount {
        name: "v".into(),
        mount_path: "/v".into(),
        sub_path: "dir".into(),
        ..Default::default()
    }];
    assert_eq!(check(&s), []);
}

#[test]
fn nfs_needs_a_server_and_an_absolute_path() {
    assert_eq!(
        check_one(vol(|v| v.nfs = Some(Default::default()))),
        expect(&[
            ("spec.volumes[0].nfs.server", "Required value"),
            ("spec.volumes[0].nfs.path", "Required value"),
            (
                "spec.volumes[0].nfs.path",
                "Invalid value: \"\": must be an absolute path"
            ),
        ])
    );
}

#[test]
fn an_invalid_volume_cannot_be_mounted() {
    let mut s = pod(vec![
        empty_dir("ok"),
        vol(|v| v.nfs = Some(Default::default())),
    ]);
    s.containers[0].volume_mounts = vec![VolumeMount {
        name: "v".into(),
        mount_path: "/v".into(),
        ..Default::default()
    }];
    let got = check(&s);
    assert_eq!(
        got.last(),
        Some(&(
            "spec.containers[0].volumeMounts[0].name".to_string(),
            "Not found: \"v\"".to_string()
        ))
    );
}
