//! v1 defaulting of a pod's volumes: what upstream's `SetObjectDefaults_Pod` does for each
//! `spec.volumes[i]` (`pkg/apis/core/v1/zz_generated.defaults.go` calling `SetDefaults_Volume`
//! and the source defaults of `pkg/apis/core/v1/defaults.go`, 1.33), so that a volume reads back
//! as kube-apiserver serves it: a volume without a source is an `emptyDir`, secret, configMap,
//! downwardAPI and projected volumes get mode 0644 (`420`), a service account token lives an
//! hour, and the legacy sources get their `+default` values.

use kubestore_proto::core::v1::{
    DownwardApiVolumeFile, ObjectFieldSelector, ResourceFieldSelector, Volume,
};

use super::image_ref;

/// Upstream's `VolumeSource` default mode (`SecretVolumeSourceDefaultMode` and its siblings:
/// 0644).
pub const DEFAULT_MODE: i32 = 0o644;

/// Upstream's default lifetime of a projected service account token (one hour).
pub const DEFAULT_TOKEN_EXPIRATION_SECONDS: i64 = 3600;

/// Whether the volume names a source (upstream's `AllPtrFieldsNil` of its `VolumeSource`, negated).
pub fn has_source(v: &Volume) -> bool {
    source_count(v) > 0
}

/// How many sources the volume names (validation refuses more than one).
pub fn source_count(v: &Volume) -> usize {
    [
        v.host_path.is_some(),
        v.empty_dir.is_some(),
        v.gce_persistent_disk.is_some(),
        v.aws_elastic_block_store.is_some(),
        v.git_repo.is_some(),
        v.secret.is_some(),
        v.nfs.is_some(),
        v.iscsi.is_some(),
        v.glusterfs.is_some(),
        v.persistent_volume_claim.is_some(),
        v.rbd.is_some(),
        v.flex_volume.is_some(),
        v.cinder.is_some(),
        v.cephfs.is_some(),
        v.flocker.is_some(),
        v.downward_api.is_some(),
        v.fc.is_some(),
        v.azure_file.is_some(),
        v.config_map.is_some(),
        v.vsphere_volume.is_some(),
        v.quobyte.is_some(),
        v.azure_disk.is_some(),
        v.photon_persistent_disk.is_some(),
        v.projected.is_some(),
        v.portworx_volume.is_some(),
        v.scale_io.is_some(),
        v.storageos.is_some(),
        v.csi.is_some(),
        v.ephemeral.is_some(),
        v.image.is_some(),
    ]
    .into_iter()
    .filter(|set| *set)
    .count()
}

/// Sets `*field` to `value` if it is unset; whether it did.
fn fill<T: Clone>(field: &mut Option<T>, value: T) -> bool {
    let empty = field.is_none();
    if empty {
        *field = Some(value);
    }
    empty
}

/// Sets the empty string `*field` to `value`; whether it did.
fn fill_str(field: &mut String, value: &str) -> bool {
    let empty = field.is_empty();
    if empty {
        *field = value.to_string();
    }
    empty
}

/// The defaults of one volume, in upstream's order; whether anything changed.
pub fn default_volume(v: &mut Volume) -> bool {
    let mut changed = false;
    // SetDefaults_Volume.
    if !has_source(v) {
        v.empty_dir = Some(Default::default());
        changed = true;
    }
    if let Some(h) = v.host_path.as_mut() {
        // `HostPathUnset`: the type is written, as "".
        changed |= fill(&mut h.r#type, String::new());
    }
    if let Some(s) = v.secret.as_mut() {
        changed |= fill(&mut s.default_mode, DEFAULT_MODE);
    }
    if let Some(i) = v.iscsi.as_mut() {
        changed |= fill_str(&mut i.iscsi_interface, "default");
    }
    if let Some(r) = v.rbd.as_mut() {
        changed |= fill_str(&mut r.pool, "rbd");
        changed |= fill_str(&mut r.user, "admin");
        changed |= fill_str(&mut r.keyring, "/etc/ceph/keyring");
    }
    if let Some(d) = v.downward_api.as_mut() {
        changed |= fill(&mut d.default_mode, DEFAULT_MODE);
        changed |= default_downward_items(&mut d.items);
    }
    if let Some(c) = v.config_map.as_mut() {
        changed |= fill(&mut c.default_mode, DEFAULT_MODE);
    }
    if let Some(a) = v.azure_disk.as_mut() {
        changed |= fill(&mut a.caching_mode, "ReadWrite".into());
        changed |= fill(&mut a.fs_type, "ext4".into());
        changed |= fill(&mut a.read_only, false);
        changed |= fill(&mut a.kind, "Shared".into());
    }
    if let Some(p) = v.projected.as_mut() {
        changed |= fill(&mut p.default_mode, DEFAULT_MODE);
        for s in &mut p.sources {
            if let Some(d) = s.downward_api.as_mut() {
                changed |= default_downward_items(&mut d.items);
            }
            if let Some(t) = s.service_account_token.as_mut() {
                changed |= fill(&mut t.expiration_seconds, DEFAULT_TOKEN_EXPIRATION_SECONDS);
            }
        }
    }
    if let Some(s) = v.scale_io.as_mut() {
        changed |= fill_str(&mut s.storage_mode, "ThinProvisioned");
        changed |= fill_str(&mut s.fs_type, "xfs");
    }
    if let Some(spec) = v
        .ephemeral
        .as_mut()
        .and_then(|e| e.volume_claim_template.as_mut())
        .and_then(|t| t.spec.as_mut())
    {
        // SetDefaults_PersistentVolumeClaimSpec.
        changed |= fill(&mut spec.volume_mode, "Filesystem".into());
    }
    if let Some(i) = v.image.as_mut()
        && i.pull_policy.is_empty()
    {
        // SetDefaults_ImageVolumeSource: Always for `:latest` (or no tag), else IfNotPresent,
        // as a container's image.
        i.pull_policy = image_ref::default_pull_policy(&i.reference).into();
        changed = true;
    }
    changed
}

/// The items of a downward API volume or projection: `SetDefaults_ObjectFieldSelector`, and a
/// resource's divisor written as Go writes a zero Quantity value ("0").
fn default_downward_items(items: &mut [DownwardApiVolumeFile]) -> bool {
    let mut changed = false;
    for item in items {
        if let Some(f) = item.field_ref.as_mut() {
            changed |= default_field_ref(f);
        }
        if let Some(r) = item.resource_field_ref.as_mut() {
            changed |= default_divisor(r);
        }
    }
    changed
}

/// `SetDefaults_ObjectFieldSelector`: apiVersion v1.
pub fn default_field_ref(f: &mut ObjectFieldSelector) -> bool {
    fill_str(&mut f.api_version, "v1")
}

/// Not a default upstream but its encoding: a divisor is a Quantity value, which Go writes as
/// "0" when unset; storing it so reads back what upstream serves.
pub fn default_divisor(r: &mut ResourceFieldSelector) -> bool {
    fill_str(&mut r.divisor, "0")
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubestore_proto::core::v1::{
        AzureDiskVolumeSource, ConfigMapVolumeSource, DownwardApiProjection,
        DownwardApiVolumeSource, HostPathVolumeSource, ImageVolumeSource, ProjectedVolumeSource,
        SecretVolumeSource, ServiceAccountTokenProjection, VolumeProjection,
    };

    fn defaulted(mut v: Volume) -> Volume {
        assert!(
            default_volume(&mut v),
            "the first defaulting changes the volume"
        );
        let again = v.clone();
        assert!(!default_volume(&mut v), "defaulting is idempotent");
        assert_eq!(v, again);
        v
    }

    #[test]
    fn a_volume_without_a_source_is_an_empty_dir() {
        let v = defaulted(Volume {
            name: "scratch".into(),
            ..Default::default()
        });
        assert_eq!(v.empty_dir, Some(Default::default()));
        assert_eq!(source_count(&v), 1);
    }

    #[test]
    fn file_sources_get_mode_0644_and_host_paths_an_unset_type() {
        let v = defaulted(Volume {
            secret: Some(SecretVolumeSource {
                secret_name: "s".into(),
                ..Default::default()
            }),
            ..Default::default()
        });
        assert_eq!(v.secret.and_then(|s| s.default_mode), Some(420));
        let v = defaulted(Volume {
            config_map: Some(ConfigMapVolumeSource {
                name: "c".into(),
                default_mode: Some(0o400),
                ..Default::default()
            }),
            host_path: Some(HostPathVolumeSource {
                path: "/data".into(),
                r#type: None,
            }),
            ..Default::default()
        });
        assert_eq!(v.config_map.and_then(|c| c.default_mode), Some(0o400));
        assert_eq!(v.host_path.and_then(|h| h.r#type), Some(String::new()));
    }

    #[test]
    fn downward_items_and_projections_are_defaulted() {
        let item = DownwardApiVolumeFile {
            path: "labels".into(),
            field_ref: Some(ObjectFieldSelector {
                field_path: "metadata.labels".into(),
                ..Default::default()
            }),
            ..Default::default()
        };
        let cpu = DownwardApiVolumeFile {
            path: "cpu".into(),
            resource_field_ref: Some(ResourceFieldSelector {
                container_name: "c".into(),
                resource: "limits.cpu".into(),
                ..Default::default()
            }),
            ..Default::default()
        };
        let v = defaulted(Volume {
            downward_api: Some(DownwardApiVolumeSource {
                items: vec![item.clone(), cpu],
                ..Default::default()
            }),
            ..Default::default()
        });
        let d = v.downward_api.unwrap_or_default();
        assert_eq!(d.default_mode, Some(420));
        assert_eq!(
            d.items[0]
                .field_ref
                .as_ref()
                .map(|f| f.api_version.as_str()),
            Some("v1")
        );
        assert_eq!(
            d.items[1]
                .resource_field_ref
                .as_ref()
                .map(|r| r.divisor.as_str()),
            Some("0")
        );
        let v = defaulted(Volume {
            projected: Some(ProjectedVolumeSource {
                sources: vec![
                    VolumeProjection {
                        downward_api: Some(DownwardApiProjection { items: vec![item] }),
                        ..Default::default()
                    },
                    VolumeProjection {
                        service_account_token: Some(ServiceAccountTokenProjection {
                            path: "token".into(),
                            ..Default::default()
                        }),
                        ..Default::default()
                    },
                ],
                default_mode: None,
            }),
            ..Default::default()
        });
        let p = v.projected.unwrap_or_default();
        assert_eq!(p.default_mode, Some(420));
        assert_eq!(
            p.sources[1]
                .service_account_token
                .as_ref()
                .and_then(|t| t.expiration_seconds),
            Some(3600)
        );
    }

    #[test]
    fn legacy_sources_and_images_get_their_defaults() {
        let v = defaulted(Volume {
            azure_disk: Some(AzureDiskVolumeSource {
                disk_name: "d".into(),
                disk_uri: "u".into(),
                ..Default::default()
            }),
            ..Default::default()
        });
        let a = v.azure_disk.unwrap_or_default();
        assert_eq!(
            (a.caching_mode, a.fs_type, a.read_only, a.kind),
            (
                Some("ReadWrite".into()),
                Some("ext4".into()),
                Some(false),
                Some("Shared".into())
            )
        );
        for (reference, policy) in [
            ("quay.io/crio/artifact:v2", "IfNotPresent"),
            ("quay.io/crio/artifact", "Always"),
            ("quay.io/crio/artifact:latest", "Always"),
        ] {
            let v = defaulted(Volume {
                image: Some(ImageVolumeSource {
                    reference: reference.into(),
                    pull_policy: String::new(),
                }),
                ..Default::default()
            });
            assert_eq!(
                v.image.map(|i| i.pull_policy),
                Some(policy.into()),
                "{reference}"
            );
        }
    }
}
