//! The ConfigMap strategy (upstream's `pkg/registry/core/configmap`): valid keys in `data` and
//! `binaryData` (a key in one bag only), at most 1 MiB of both, `immutable` enforced, no graceful deletion, and a server-managed
//! `metadata.generation` ([`content_generation`]).
//!
//! ConfigMaps have no v1 defaults we model (upstream's `SetDefaults_ConfigMap` only makes a nil
//! `data` an empty map, which protobuf cannot tell apart), so their List and Watch stay a pure
//! pass-through.

use kubestore_proto::{core::v1::ConfigMap, meta::v1::ObjectMeta};

use crate::{strategy::Strategy, violations::Violations};

/// Largest total size of a ConfigMap's (or Secret's) values, upstream's `MaxSecretSize`. As
/// upstream, keys do not count.
pub const MAX_DATA_BYTES: usize = 1024 * 1024;

/// The ConfigMap strategy.
#[derive(Debug, Default, Clone, Copy)]
pub struct ConfigMapStrategy;

/// Problems of `key` as a ConfigMap (or Secret) key (upstream's `IsConfigMapKey`:
/// `[-._a-zA-Z0-9]+`, at most 253, not `.` and not starting with `..`, which a volume mount
/// would read as the parent directory or as its own `..data` link).
pub(crate) fn config_key(key: &str) -> Option<&'static str> {
    if key.is_empty() || key.len() > 253 {
        return Some("must be no more than 253 characters and not empty");
    }
    if key == "." {
        return Some("must not be '.'");
    }
    if key.starts_with("..") {
        return Some("must not start with '..'");
    }
    (!key
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.'))
    .then_some("a valid config key must consist of alphanumeric characters, '-', '_' or '.'")
}

/// Upstream's data rules of ConfigMaps and Secrets: every key a config key, at most
/// [`MAX_DATA_BYTES`] of values in all. `data` yields (key, value length).
pub fn validate_data<'a>(data: impl Iterator<Item = (&'a String, usize)>) -> Violations {
    let mut v = Violations::new();
    let total = validate_keys(&mut v, "data", data);
    too_long(&mut v, total);
    v
}

/// Every key of the bag `field` a config key; the length of its values.
fn validate_keys<'a>(
    v: &mut Violations,
    field: &str,
    data: impl Iterator<Item = (&'a String, usize)>,
) -> usize {
    let mut total = 0;
    for (k, len) in data {
        total += len;
        if let Some(e) = config_key(k) {
            v.push((
                format!("{field}[{k}]"),
                format!("Invalid value: {k:?}: {e}"),
            ));
        }
    }
    total
}

/// At most [`MAX_DATA_BYTES`] of values.
fn too_long(v: &mut Violations, total: usize) {
    if total > MAX_DATA_BYTES {
        v.push((
            "data".into(),
            format!("Too long: must have at most {MAX_DATA_BYTES} bytes, has {total}"),
        ));
    }
}

/// Upstream's `immutable` rule of ConfigMaps and Secrets: once the old object is immutable,
/// neither `immutable` nor its data (`changed`: each bag's name and whether it changed) may
/// change.
pub fn validate_immutable(
    v: &mut Violations,
    (new_immutable, old_immutable): (Option<bool>, Option<bool>),
    changed: &[(&str, bool)],
) {
    if old_immutable != Some(true) {
        return;
    }
    let immutable = [("immutable", new_immutable != old_immutable)];
    for &(field, changed) in immutable.iter().chain(changed) {
        if changed {
            v.push((
                field.into(),
                "Forbidden: field is immutable when `immutable` is set".into(),
            ));
        }
    }
}

/// `metadata.generation` of ConfigMaps and Secrets, as kubernetes#124507 ("Secrets and
/// ConfigMaps: Manage Generation") has the apiserver manage it: 1 on create, and one more on an
/// update that changes the content (`data` and `immutable`, the whole of what is not
/// metadata), so that a controller can tell content changes from the metadata-only ones that
/// also move resourceVersion. `meta.generation` holds the stored object's (BeforeUpdate copies
/// it); `content_changed: None` is a create.
pub fn content_generation(meta: &mut ObjectMeta, content_changed: Option<bool>) {
    match content_changed {
        None => meta.generation = 1,
        Some(true) => meta.generation = meta.generation.saturating_add(1),
        Some(false) => {}
    }
}

impl Strategy<ConfigMap> for ConfigMapStrategy {
    fn columns(&self) -> Vec<kubestore_apimachinery::table::Column> {
        crate::kinds::printers::config_map_columns()
    }

    fn cells(&self, obj: &ConfigMap, now: i64) -> Vec<serde_json::Value> {
        crate::kinds::printers::config_map_cells(obj, now)
    }

    fn prepare_for_create(&self, cm: &mut ConfigMap) {
        content_generation(cm.metadata.get_or_insert_with(Default::default), None);
    }

    fn prepare_for_update(&self, new: &mut ConfigMap, old: &ConfigMap) {
        let changed = new.data != old.data
            || new.binary_data != old.binary_data
            || new.immutable != old.immutable;
        content_generation(
            new.metadata.get_or_insert_with(Default::default),
            Some(changed),
        );
    }

    fn validate(&self, cm: &ConfigMap) -> Violations {
        let mut v = Violations::new();
        let mut total = validate_keys(&mut v, "data", cm.data.iter().map(|(k, s)| (k, s.len())));
        for k in cm.data.keys().filter(|k| cm.binary_data.contains_key(*k)) {
            v.push((
                format!("data[{k}]"),
                format!("Invalid value: {k:?}: duplicate of key present in binaryData"),
            ));
        }
        total += validate_keys(
            &mut v,
            "binaryData",
            cm.binary_data.iter().map(|(k, b)| (k, b.len())),
        );
        too_long(&mut v, total);
        v
    }

    fn validate_update(&self, new: &ConfigMap, old: &ConfigMap) -> Violations {
        let mut v = self.validate(new);
        validate_immutable(
            &mut v,
            (new.immutable, old.immutable),
            &[
                ("data", new.data != old.data),
                ("binaryData", new.binary_data != old.binary_data),
            ],
        );
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cm(data: &[(&str, &str)], binary: &[(&str, &[u8])], immutable: Option<bool>) -> ConfigMap {
        ConfigMap {
            metadata: Some(ObjectMeta::default()),
            data: data
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            binary_data: binary
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_vec()))
                .collect(),
            immutable,
        }
    }

    fn fields(v: &Violations) -> Vec<String> {
        v.iter().map(|(f, _)| f.clone()).collect()
    }

    /// Upstream's `ValidateConfigMap`: keys of both bags, a key in one bag only, 1 MiB of
    /// values in all.
    #[test]
    fn binary_data_is_validated_with_data() {
        let s = ConfigMapStrategy;
        assert!(
            s.validate(&cm(&[("a", "1")], &[("b", b"\0\xff")], None))
                .is_empty()
        );
        let v = s.validate(&cm(&[("a", "1")], &[("a", b"2"), ("..x", b"3")], None));
        assert_eq!(fields(&v), ["data[a]", "binaryData[..x]"], "{v:?}");
        assert!(
            v.iter()
                .any(|(_, d)| d.contains("duplicate of key present in binaryData"))
        );
        let half = "x".repeat(MAX_DATA_BYTES / 2 + 1);
        let v = s.validate(&cm(&[("a", &half)], &[("b", half.as_bytes())], None));
        assert_eq!(fields(&v), ["data"], "{v:?}");
    }

    #[test]
    fn an_immutable_config_maps_binary_data_cannot_change() {
        let s = ConfigMapStrategy;
        let old = cm(&[("a", "1")], &[("b", b"2")], Some(true));
        assert!(s.validate_update(&old.clone(), &old).is_empty());
        let v = s.validate_update(&cm(&[("a", "1")], &[("b", b"3")], Some(true)), &old);
        assert_eq!(fields(&v), ["binaryData"], "{v:?}");
        let mutable = cm(&[("a", "1")], &[("b", b"2")], None);
        assert!(
            s.validate_update(&cm(&[("a", "1")], &[("b", b"3")], None), &mutable)
                .is_empty()
        );
    }
}
