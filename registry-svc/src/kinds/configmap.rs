//! The ConfigMap strategy (upstream's `pkg/registry/core/configmap`): valid keys, at most 1 MiB
//! of data, `immutable` enforced, no graceful deletion, and a server-managed
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
fn config_key(key: &str) -> Option<&'static str> {
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
    let mut total = 0;
    for (k, len) in data {
        total += len;
        if let Some(e) = config_key(k) {
            v.push((format!("data[{k}]"), format!("Invalid value: {k:?}: {e}")));
        }
    }
    if total > MAX_DATA_BYTES {
        v.push((
            "data".into(),
            format!("Too long: must have at most {MAX_DATA_BYTES} bytes, has {total}"),
        ));
    }
    v
}

/// Upstream's `immutable` rule of ConfigMaps and Secrets: once the old object is immutable,
/// neither `immutable` nor `data` may change.
pub fn validate_immutable(
    v: &mut Violations,
    (new_immutable, old_immutable): (Option<bool>, Option<bool>),
    data_changed: bool,
) {
    if old_immutable != Some(true) {
        return;
    }
    for (field, changed) in [
        ("immutable", new_immutable != old_immutable),
        ("data", data_changed),
    ] {
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
        let changed = new.data != old.data || new.immutable != old.immutable;
        content_generation(
            new.metadata.get_or_insert_with(Default::default),
            Some(changed),
        );
    }

    fn validate(&self, cm: &ConfigMap) -> Violations {
        validate_data(cm.data.iter().map(|(k, v)| (k, v.len())))
    }

    fn validate_update(&self, new: &ConfigMap, old: &ConfigMap) -> Violations {
        let mut v = self.validate(new);
        validate_immutable(&mut v, (new.immutable, old.immutable), new.data != old.data);
        v
    }
}
