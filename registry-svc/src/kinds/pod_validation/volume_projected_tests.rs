//! Downward API, projected and ephemeral volumes (`TestValidateDownwardAPIVolume`,
//! `TestValidateProjectedVolumeSource`, the cluster trust bundle and ephemeral cases of
//! upstream's `validation_test.go`), with upstream's paths and words.

use std::collections::BTreeMap;

use kubestore_proto::{
    core::v1::{
        DownwardApiProjection, DownwardApiVolumeFile, DownwardApiVolumeSource,
        PersistentVolumeClaimSpec, SecretProjection, ServiceAccountTokenProjection,
        TypedLocalObjectReference, VolumeProjection,
    },
    meta::v1::{LabelSelector, LabelSelectorRequirement, ObjectMeta},
};

use super::{
    check_one, expect,
    sources::{bundle, claim_template, field_file, item, projection, resource_file, storage, vol},
};
use crate::validation::{dns1123_label, dns1123_subdomain};

#[test]
fn downward_api_files_are_reported_at_the_sources_path() {
    let at = "spec.volumes[0].downwardAPI";
    let files = |items: Vec<DownwardApiVolumeFile>| {
        check_one(vol(|v| {
            v.downward_api = Some(DownwardApiVolumeSource {
                items,
                default_mode: Some(0o644),
            })
        }))
    };
    let mut both = field_file("", "metadata.name");
    both.resource_field_ref = resource_file("", "c", "limits.cpu", "").resource_field_ref;
    both.mode = Some(0o1000);
    assert_eq!(
        files(vec![both, DownwardApiVolumeFile { path: "x".into(), ..Default::default() }]),
        vec![
            (format!("{at}.path"), "Required value".to_string()),
            (
                at.to_string(),
                "Invalid value: \"resource\": fieldRef and resourceFieldRef can not be specified simultaneously".into()
            ),
            (
                format!("{at}.mode"),
                "Invalid value: 512: must be a number between 0 and 0777 (octal), both inclusive".into()
            ),
            (
                at.to_string(),
                "Required value: one of fieldRef and resourceFieldRef is required".into()
            ),
        ]
    );
    assert_eq!(
        files(vec![
            field_file("a", "spec.nodeName"),
            field_file("b", "metadata.name['x']"),
            field_file("c", "spec.containers"),
            field_file("d", "metadata.labels['Bad Key']"),
        ]),
        vec![
            (
                format!("{at}.fieldRef.fieldPath"),
                "Unsupported value: \"spec.nodeName\": supported values: \"metadata.annotations\", \"metadata.labels\", \"metadata.name\", \"metadata.namespace\", \"metadata.uid\"".to_string()
            ),
            (
                format!("{at}.fieldRef.fieldPath"),
                "Invalid value: \"metadata.name['x']\": error converting fieldPath: field label does not support subscript: metadata.name['x']".into()
            ),
            (
                format!("{at}.fieldRef.fieldPath"),
                "Invalid value: \"spec.containers\": error converting fieldPath: field label not supported: spec.containers".into()
            ),
            (
                format!("{at}.fieldRef"),
                format!(
                    "Invalid value: \"Bad Key\": {}",
                    crate::validation::qualified_name("Bad Key").expect("a problem")
                )
            ),
        ]
    );
    assert_eq!(
        files(vec![
            resource_file("a", "", "limits.cpu", ""),
            resource_file("b", "c", "limits.gpu", ""),
            resource_file("c", "c", "requests.memory", "3"),
        ]),
        vec![
            (format!("{at}.resourceFieldRef.containerName"), "Required value".to_string()),
            (
                format!("{at}.resourceFieldRef.resource"),
                "Unsupported value: \"limits.gpu\": supported values: \"limits.cpu\", \"limits.ephemeral-storage\", \"limits.memory\", \"requests.cpu\", \"requests.ephemeral-storage\", \"requests.memory\"".into()
            ),
            (
                format!("{at}.resourceFieldRef.divisor"),
                "Invalid value: \"requests.memory\": only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the memory resource".into()
            ),
        ]
    );
}

#[test]
fn projected_sources_take_one_projection_and_distinct_paths() {
    let at = "spec.volumes[0].projected";
    let secret = |name: &str, path: &str| VolumeProjection {
        secret: Some(SecretProjection {
            name: name.into(),
            items: vec![item("k", path, None)],
            optional: None,
        }),
        ..Default::default()
    };
    let mut two = secret("s", "a");
    two.downward_api = Some(DownwardApiProjection {
        items: vec![field_file("b", "metadata.uid")],
    });
    assert_eq!(
        check_one(projection(vec![
            VolumeProjection::default(),
            two,
            secret("", "a"),
            VolumeProjection {
                downward_api: Some(DownwardApiProjection {
                    items: vec![field_file("b", "metadata.uid")],
                }),
                ..Default::default()
            },
        ])),
        vec![
            (
                format!("{at}.sources[1]"),
                "Forbidden: may not specify more than 1 volume type per source".to_string()
            ),
            (
                format!("{at}.sources[2].secret.name"),
                "Required value".into()
            ),
            (
                at.to_string(),
                "Invalid value: \"\": conflicting duplicate paths".into()
            ),
            (
                at.to_string(),
                "Invalid value: \"b\": conflicting duplicate paths".into()
            ),
        ]
    );
}

#[test]
fn tokens_last_ten_minutes_to_two_to_the_32_seconds() {
    let at = "spec.volumes[0].projected";
    let token = |seconds: i64, path: &str| VolumeProjection {
        service_account_token: Some(ServiceAccountTokenProjection {
            audience: String::new(),
            expiration_seconds: Some(seconds),
            path: path.into(),
        }),
        ..Default::default()
    };
    assert_eq!(
        check_one(projection(vec![token(600, "t"), token(1 << 32, "t")])),
        []
    );
    assert_eq!(
        check_one(projection(vec![
            token(599, ""),
            token((1 << 32) + 1, "../t")
        ])),
        vec![
            (
                format!("{at}.sources[0].serviceAccountToken.expirationSeconds"),
                "Invalid value: 599: may not specify a duration less than 10 minutes".to_string()
            ),
            (format!("{at}.path"), "Required value".into()),
            (
                format!("{at}.sources[1].serviceAccountToken.expirationSeconds"),
                "Invalid value: 4294967297: may not specify a duration larger than 2^32 seconds"
                    .into()
            ),
            (
                format!("{at}.path"),
                "Invalid value: \"../t\": must not contain '..'".into()
            ),
        ]
    );
}

#[test]
fn cluster_trust_bundles_take_a_name_or_a_signer() {
    let at = "spec.volumes[0].projected.sources[0].clusterTrustBundle";
    let selector = LabelSelector {
        match_labels: BTreeMap::from([("a".to_string(), "b".to_string())]),
        match_expressions: vec![LabelSelectorRequirement {
            key: "k".into(),
            operator: "In".into(),
            values: vec!["x".into()],
        }],
    };
    let sel = selector.clone();
    assert_eq!(
        check_one(projection(vec![bundle(|b| {
            b.name = Some("foo".into());
            b.label_selector = Some(sel);
            b.path = String::new();
        })])),
        vec![
            (
                format!("{at}.labelSelector"),
                "Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"a\":\"b\"}, MatchExpressions:[]v1.LabelSelectorRequirement{v1.LabelSelectorRequirement{Key:\"k\", Operator:\"In\", Values:[]string{\"x\"}}}}: labelSelector must be unset if name is specified".to_string()
            ),
            (format!("{at}.path"), "Required value".into()),
        ]
    );
    assert_eq!(
        check_one(projection(vec![bundle(|b| {
            b.name = Some("a".into());
            b.signer_name = Some("example.com/s".into());
        })])),
        expect(&[(
            at,
            "Invalid value: core.ClusterTrustBundleProjection{Name:(*string)(0xc000000000), SignerName:(*string)(0xc000000000), LabelSelector:(*v1.LabelSelector)(nil), Optional:(*bool)(nil), Path:\"ca.pem\"}: only one of name and signerName may be used"
        )])
    );
    assert_eq!(
        check_one(projection(vec![bundle(|_| {})])),
        expect(&[(
            at,
            "Required value: either name or signerName must be specified"
        )])
    );
    let subdomain = dns1123_subdomain("Bad").expect("a problem");
    assert_eq!(
        check_one(projection(vec![bundle(|b| b.name = Some("a/b:Bad".into()))])),
        vec![(
            format!("{at}.name"),
            "Invalid value: \"a/b:Bad\": not a valid clustertrustbundlename: ClusterTrustBundle for signerName a/b must be named with prefix a:b:".to_string()
        )]
    );
    assert_eq!(
        check_one(projection(vec![bundle(
            |b| b.name = Some("example.com:s:Bad".into())
        )])),
        vec![(
            format!("{at}.name"),
            format!(
                "Invalid value: \"example.com:s:Bad\": not a valid clustertrustbundlename: {subdomain}"
            )
        )]
    );
    let label = dns1123_label("Bad").expect("a problem");
    assert_eq!(
        check_one(projection(vec![
            bundle(|b| b.signer_name = Some(String::new())),
            bundle(|b| {
                b.signer_name = Some("com/a/b".into());
                b.path = "b.pem".into();
            }),
            bundle(|b| {
                b.signer_name = Some("Bad/x".into());
                b.path = "c.pem".into();
            }),
        ])),
        vec![
            (format!("{at}.signerName"), "Required value: must be a valid signer name".to_string()),
            (format!("{at}.signerName"), "Required value".into()),
            (
                "spec.volumes[0].projected.sources[1].clusterTrustBundle.signerName".into(),
                "Invalid value: \"com/a/b\": must be a fully qualified domain and path of the form 'example.com/signer-name'".into()
            ),
            (
                "spec.volumes[0].projected.sources[2].clusterTrustBundle.signerName".into(),
                format!("Invalid value: \"Bad\": validating label \"Bad\": {label}")
            ),
            (
                "spec.volumes[0].projected.sources[2].clusterTrustBundle.signerName".into(),
                "Invalid value: \"Bad\": should be a domain with at least two segments separated by dots".into()
            ),
        ]
    );
}

#[test]
fn claims_name_a_claim_and_templates_describe_one() {
    assert_eq!(
        check_one(vol(|v| v.persistent_volume_claim = Some(Default::default()))),
        expect(&[(
            "spec.volumes[0].persistentVolumeClaim.claimName",
            "Required value"
        )])
    );
    assert_eq!(
        check_one(vol(|v| v.ephemeral = Some(Default::default()))),
        expect(&[(
            "spec.volumes[0].ephemeral.volumeClaimTemplate",
            "Required value"
        )])
    );
    let at = "spec.volumes[0].ephemeral.volumeClaimTemplate";
    assert_eq!(
        check_one(claim_template(PersistentVolumeClaimSpec::default())),
        vec![
            (
                format!("{at}.spec.accessModes"),
                "Required value: at least 1 access mode is required".to_string()
            ),
            (
                format!("{at}.spec.resources[storage]"),
                "Required value".into()
            ),
        ]
    );
    let mut bad = claim_template(PersistentVolumeClaimSpec {
        access_modes: vec![
            "ReadWriteOncePod".into(),
            "ReadWriteOnce".into(),
            "Sometimes".into(),
        ],
        resources: storage("0"),
        storage_class_name: Some("Fast".into()),
        volume_mode: Some("Raw".into()),
        data_source: Some(TypedLocalObjectReference {
            api_group: None,
            kind: "Snapshot".into(),
            name: String::new(),
        }),
        ..Default::default()
    });
    if let Some(t) = bad
        .ephemeral
        .as_mut()
        .and_then(|e| e.volume_claim_template.as_mut())
    {
        t.metadata = Some(ObjectMeta {
            name: "x".into(),
            uid: "u".into(),
            labels: BTreeMap::from([("app".to_string(), "-bad".to_string())]),
            ..Default::default()
        });
    }
    let class = dns1123_subdomain("Fast").expect("a problem");
    let value = crate::validation::label_value("-bad").expect("a problem");
    assert_eq!(
        check_one(bad),
        vec![
            (format!("{at}.metadata.labels"), format!("Invalid value: \"-bad\": {value}")),
            (format!("{at}.metadata.name"), "Forbidden: cannot be set".into()),
            (format!("{at}.metadata.uID"), "Forbidden: cannot be set".into()),
            (
                format!("{at}.spec.accessModes"),
                "Unsupported value: \"Sometimes\": supported values: \"ReadOnlyMany\", \"ReadWriteMany\", \"ReadWriteOnce\", \"ReadWriteOncePod\"".into()
            ),
            (
                format!("{at}.spec.accessModes"),
                "Forbidden: may not use ReadWriteOncePod with other access modes".into()
            ),
            (
                format!("{at}.spec.resources[storage]"),
                "Invalid value: \"0\": must be greater than zero".into()
            ),
            (format!("{at}.spec.storageClassName"), format!("Invalid value: \"Fast\": {class}")),
            (
                format!("{at}.spec.volumeMode"),
                "Unsupported value: \"Raw\": supported values: \"Block\", \"Filesystem\"".into()
            ),
            (format!("{at}.spec.dataSource.name"), "Required value".into()),
            (
                format!("{at}.spec.dataSource"),
                "Invalid value: \"Snapshot\": must be 'PersistentVolumeClaim' when referencing the default apiGroup".into()
            ),
        ]
    );
}
