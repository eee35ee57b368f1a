//! The legacy sources' rules (`TestValidateVolumes` and the per-source tests of upstream's
//! `validation_test.go`), with upstream's paths and words.

use std::collections::BTreeMap;

use kubestore_proto::core::v1::{
    AzureDiskVolumeSource, CinderVolumeSource, FcVolumeSource, FlexVolumeSource,
    FlockerVolumeSource, GitRepoVolumeSource, IscsiVolumeSource, QuobyteVolumeSource,
    StorageOsVolumeSource, Volume,
};

use super::{check_one, expect, sources::vol};
use crate::validation::dns1123_label;

#[test]
fn legacy_sources_have_their_required_fields() {
    let cases: Vec<(Volume, Vec<&str>)> = vec![
        (
            vol(|v| {
                v.git_repo = Some(GitRepoVolumeSource {
                    directory: "/abs".into(),
                    ..Default::default()
                })
            }),
            vec!["gitRepo.repository"],
        ),
        (
            vol(|v| v.gce_persistent_disk = Some(Default::default())),
            vec!["persistentDisk.pdName"],
        ),
        (
            vol(|v| v.aws_elastic_block_store = Some(Default::default())),
            vec!["awsElasticBlockStore.volumeID"],
        ),
        (
            vol(|v| v.glusterfs = Some(Default::default())),
            vec!["glusterfs.endpoints", "glusterfs.path"],
        ),
        (
            vol(|v| v.rbd = Some(Default::default())),
            vec!["rbd.monitors", "rbd.image"],
        ),
        (
            vol(|v| {
                v.cinder = Some(CinderVolumeSource {
                    secret_ref: Some(Default::default()),
                    ..Default::default()
                })
            }),
            vec!["cinder.volumeID", "cinder.secretRef.name"],
        ),
        (
            vol(|v| v.cephfs = Some(Default::default())),
            vec!["cephfs.monitors"],
        ),
        (
            vol(|v| v.flex_volume = Some(Default::default())),
            vec!["flexVolume.driver"],
        ),
        (
            vol(|v| v.azure_file = Some(Default::default())),
            vec!["azureFile.secretName", "azureFile.shareName"],
        ),
        (
            vol(|v| v.vsphere_volume = Some(Default::default())),
            vec!["vsphereVolume.volumePath"],
        ),
        (
            vol(|v| v.photon_persistent_disk = Some(Default::default())),
            vec!["photonPersistentDisk.pdID"],
        ),
        (
            vol(|v| v.portworx_volume = Some(Default::default())),
            vec!["portworxVolume.volumeID"],
        ),
        (
            vol(|v| v.azure_disk = Some(Default::default())),
            vec!["azureDisk.diskName", "azureDisk.diskURI"],
        ),
        (
            vol(|v| v.scale_io = Some(Default::default())),
            vec!["scaleIO.gateway", "scaleIO.system", "scaleIO.volumeName"],
        ),
        (
            vol(|v| {
                v.storageos = Some(StorageOsVolumeSource {
                    secret_ref: Some(Default::default()),
                    ..Default::default()
                })
            }),
            vec!["storageos.volumeName", "storageos.secretRef.name"],
        ),
        (
            vol(|v| v.iscsi = Some(Default::default())),
            vec!["iscsi.targetPortal", "iscsi.iqn"],
        ),
    ];
    for (vol, fields) in cases {
        let mut want: Vec<(String, String)> = fields
            .iter()
            .map(|f| (format!("spec.volumes[0].{f}"), "Required value".to_string()))
            .collect();
        if vol.git_repo.is_some() {
            want.push((
                "spec.volumes[0].gitRepo.directory".into(),
                "Invalid value: \"/abs\": must be a relative path".into(),
            ));
        }
        assert_eq!(check_one(vol.clone()), want, "{vol:?}");
    }
}

#[test]
fn legacy_sources_have_their_own_rules() {
    let at = "spec.volumes[0]";
    let iscsi = vol(|v| {
        v.name = "a".repeat(50);
        v.iscsi = Some(IscsiVolumeSource {
            target_portal: "127.0.0.1:3260".into(),
            iqn: "iqn.2015-02.example.com".into(),
            lun: 256,
            chap_auth_session: true,
            initiator_name: Some("naa.123".into()),
            ..Default::default()
        })
    });
    assert_eq!(
        check_one(iscsi),
        vec![
            (
                format!("{at}.iscsi.iqn"),
                "Invalid value: \"iqn.2015-02.example.com\": must be valid format".to_string()
            ),
            (
                format!("{at}.iscsi.lun"),
                "Invalid value: 256: must be between 0 and 255, inclusive".into()
            ),
            (format!("{at}.iscsi.secretRef"), "Required value".into()),
            (
                format!("{at}.iscsi.initiatorname"),
                "Invalid value: \"naa.123\": must be valid format".into()
            ),
            (
                format!("{at}.name"),
                format!(
                    "Invalid value: {:?}: Total length of <volume name>:<iscsi.targetPortal> must be under 64 characters if iscsi.initiatorName is specified.",
                    "a".repeat(50)
                )
            ),
        ]
    );
    let iqn = |iqn: &str| {
        vol(|v| {
            v.iscsi = Some(IscsiVolumeSource {
                target_portal: "p".into(),
                iqn: iqn.into(),
                ..Default::default()
            })
        })
    };
    assert_eq!(
        check_one(iqn("foo")),
        expect(&[(
            "spec.volumes[0].iscsi.iqn",
            "Invalid value: \"foo\": must be valid format starting with iqn, eui, or naa"
        )])
    );
    for ok in [
        "iqn.2015-02.example.com:test",
        "eui.02004567A425678D",
        "naa.62004567BA64678D0123456789ABCDEF",
    ] {
        assert_eq!(check_one(iqn(ok)), [], "{ok}");
    }
    let quobyte = vol(|v| {
        v.quobyte = Some(QuobyteVolumeSource {
            registry: "a:1,b,[::1:2".into(),
            ..Default::default()
        })
    });
    let pairs = "must be a host:port pair or multiple pairs separated by commas";
    assert_eq!(
        check_one(quobyte),
        vec![
            (
                format!("{at}.quobyte.registry"),
                format!("Invalid value: \"a:1,b,[::1:2\": {pairs}")
            ),
            (
                format!("{at}.quobyte.registry"),
                format!("Invalid value: \"a:1,b,[::1:2\": {pairs}")
            ),
            (format!("{at}.quobyte.volume"), "Required value".into()),
        ]
    );
    let fc = |wwns: Vec<String>, wwids: Vec<String>, lun: Option<i32>| {
        vol(|v| {
            v.fc = Some(FcVolumeSource {
                target_wwns: wwns,
                wwids,
                lun,
                ..Default::default()
            })
        })
    };
    assert_eq!(
        check_one(fc(vec![], vec![], None)),
        expect(&[(
            "spec.volumes[0].fc.targetWWNs",
            "Required value: must specify either targetWWNs or wwids, but not both"
        )])
    );
    assert_eq!(
        check_one(fc(vec!["a".into(), "b".into()], vec!["c".into()], None)),
        expect(&[
            (
                "spec.volumes[0].fc.targetWWNs",
                "Invalid value: []string{\"a\", \"b\"}: targetWWNs and wwids can not be specified simultaneously"
            ),
            (
                "spec.volumes[0].fc.lun",
                "Required value: lun is required if targetWWNs is specified"
            ),
        ])
    );
    assert_eq!(
        check_one(fc(vec!["a".into()], vec![], Some(-1))),
        expect(&[(
            "spec.volumes[0].fc.lun",
            "Invalid value: -1: must be between 0 and 255, inclusive"
        )])
    );
    let flocker = |name: &str, uuid: &str| {
        vol(|v| {
            v.flocker = Some(FlockerVolumeSource {
                dataset_name: name.into(),
                dataset_uuid: uuid.into(),
            })
        })
    };
    assert_eq!(
        check_one(flocker("", "")),
        expect(&[(
            "spec.volumes[0].flocker",
            "Required value: one of datasetName and datasetUUID is required"
        )])
    );
    assert_eq!(
        check_one(flocker("a/b", "u")),
        expect(&[
            (
                "spec.volumes[0].flocker",
                "Invalid value: \"resource\": datasetName and datasetUUID can not be specified simultaneously"
            ),
            (
                "spec.volumes[0].flocker.datasetName",
                "Invalid value: \"a/b\": must not contain '/'"
            ),
        ])
    );
    let disk = vol(|v| {
        v.azure_disk = Some(AzureDiskVolumeSource {
            disk_name: "d".into(),
            disk_uri: "https://x".into(),
            caching_mode: Some("Some".into()),
            kind: Some("Managed".into()),
            ..Default::default()
        })
    });
    assert_eq!(
        check_one(disk),
        expect(&[
            (
                "spec.volumes[0].azureDisk.cachingMode",
                "Unsupported value: \"Some\": supported values: \"None\", \"ReadOnly\", \"ReadWrite\""
            ),
            (
                "spec.volumes[0].azureDisk.diskURI",
                "Unsupported value: \"https://x\": supported values: \"/subscriptions/{sub-id}/resourcegroups/{group-name}/providers/microsoft.compute/disks/{disk-id}\""
            ),
        ])
    );
    let flex = vol(|v| {
        v.flex_volume = Some(FlexVolumeSource {
            driver: "d".into(),
            options: BTreeMap::from([
                ("Foo.Kubernetes.IO/x".to_string(), String::new()),
                ("k8s.io".to_string(), String::new()),
                ("myk8s.io".to_string(), String::new()),
            ]),
            ..Default::default()
        })
    });
    assert_eq!(
        check_one(flex),
        expect(&[
            (
                "spec.volumes[0].flexVolume.options[Foo.Kubernetes.IO/x]",
                "Invalid value: \"Foo.Kubernetes.IO/x\": kubernetes.io and k8s.io namespaces are reserved"
            ),
            (
                "spec.volumes[0].flexVolume.options[k8s.io]",
                "Invalid value: \"k8s.io\": kubernetes.io and k8s.io namespaces are reserved"
            ),
        ])
    );
    let label = dns1123_label("Bad.Name").expect("a problem");
    let storageos = vol(|v| {
        v.storageos = Some(StorageOsVolumeSource {
            volume_name: "Bad.Name".into(),
            volume_namespace: "Bad.Name".into(),
            ..Default::default()
        })
    });
    assert_eq!(
        check_one(storageos),
        vec![
            (
                format!("{at}.storageos.volumeName"),
                format!("Invalid value: \"Bad.Name\": {label}")
            ),
            (
                format!("{at}.storageos.volumeNamespace"),
                format!("Invalid value: \"Bad.Name\": {label}")
            ),
        ]
    );
}
