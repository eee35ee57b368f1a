//! The ConfigMap strategy (upstream's `pkg/registry/core/configmap`): valid keys, at most 1 MiB
//! of data, `immutable` enforced, no graceful deletion.

use kubestore_proto::core::v1::ConfigMap;

use crate::{strategy::Strategy, violations::Violations};

/// Largest total size of a ConfigMap's data (keys + values), upstream's `MaxSecretSize`.
pub const MAX_DATA_BYTES: usize = 1024 * 1024;

/// The ConfigMap strategy.
#[derive(Debug, Default, Clone, Copy)]
pub struct ConfigMapStrategy;

/// Problems of `key` as a ConfigMap (or Secret) key (`[-._a-zA-Z0-9]+`, at most 253, not `.`
/// or `..`).
pub fn config_key(key: &str) -> Option<&'static str> {
    if key.is_empty() || key.len() > 253 {
        return Some("must be no more than 253 characters and not empty");
    }
    if key == "." || key == ".." {
        return Some("must not be '.' or '..'");
    }
    (!key
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.'))
    .then_some("a valid config key must consist of alphanumeric characters, '-', '_' or '.'")
}

impl Strategy<ConfigMap> for ConfigMapStrategy {
    fn validate(&self, cm: &ConfigMap) -> Violations {
        let mut v = Violations::new();
        let mut total = 0;
        for (k, val) in &cm.data {
            total += k.len() + val.len();
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

    fn validate_update(&self, new: &ConfigMap, old: &ConfigMap) -> Violations {
        let mut v = self.validate(new);
        if old.immutable == Some(true) {
            if new.immutable != old.immutable {
                v.push((
                    "immutable".into(),
                    "Forbidden: field is immutable when `immutable` is set".into(),
                ));
            }
            if new.data != old.data {
                v.push((
                    "data".into(),
                    "Forbidden: field is immutable when `immutable` is set".into(),
                ));
            }
        }
        v
    }
}
