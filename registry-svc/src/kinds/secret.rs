//! The Secret strategy (upstream's `pkg/registry/core/secret` and `ValidateSecret`): `type`
//! defaults to `Opaque` and never changes; `stringData` is merged into `data` (its values win)
//! and never stored; keys are ConfigMap keys and all of `data` holds at most 1 MiB; the
//! `kubernetes.io/` types require their keys; `immutable` is enforced like a ConfigMap's;
//! `metadata.generation` is managed like a ConfigMap's; no graceful deletion. Field selectors:
//! `metadata.name`, `metadata.namespace`, `type`.
//!
//! The `type` default is upstream's `SetDefaults_Secret`, so it applies on read as well
//! (`default_object`): a Secret stored without a type (by an older writer) reads as `Opaque`
//! and can be updated, where comparing the request's defaulted `Opaque` with a stored "" would
//! refuse every update as a change of an immutable field.
//!
//! Nothing here keeps secret values out of etcd's plaintext: that is storage-svc's encryption
//! at rest, which works on bytes and keys and knows no kinds.

use kubestore_proto::core::v1::Secret;

use crate::{
    kinds::configmap::{content_generation, validate_data, validate_immutable},
    selectors::{METADATA_FIELDS, SelectableField},
    strategy::Strategy,
    violations::Violations,
};

/// The default type.
pub const OPAQUE: &str = "Opaque";

/// Secret fields a field selector may name (upstream's `SelectableFields`).
const FIELDS: &[SelectableField] = &[
    METADATA_FIELDS[0],
    METADATA_FIELDS[1],
    SelectableField::string("type", &[3]),
];

/// Keys a typed Secret must carry, upstream's `ValidateSecret`: (type, keys, whether one of
/// them is enough, whether the value must be JSON).
const REQUIRED_KEYS: &[(&str, &[&str], bool, bool)] = &[
    ("kubernetes.io/dockercfg", &[".dockercfg"], false, true),
    (
        "kubernetes.io/dockerconfigjson",
        &[".dockerconfigjson"],
        false,
        true,
    ),
    (
        "kubernetes.io/basic-auth",
        &["username", "password"],
        true,
        false,
    ),
    ("kubernetes.io/ssh-auth", &["ssh-privatekey"], false, false),
    ("kubernetes.io/tls", &["tls.crt", "tls.key"], false, false),
];

/// Annotation a service-account token Secret must carry.
const SERVICE_ACCOUNT_NAME: &str = "kubernetes.io/service-account.name";

/// The Secret strategy.
#[derive(Debug, Default, Clone, Copy)]
pub struct SecretStrategy;

/// Upstream's `SetDefaults_Secret`; returns whether it changed anything.
fn default_type(s: &mut Secret) -> bool {
    if !s.r#type.is_empty() {
        return false;
    }
    s.r#type = OPAQUE.into();
    true
}

/// Upstream's `stringData` conversion (`Convert_v1_Secret_To_core_Secret`), on every write.
fn merge_string_data(s: &mut Secret) {
    for (k, v) in std::mem::take(&mut s.string_data) {
        s.data.insert(k, v.into_bytes());
    }
}

impl Strategy<Secret> for SecretStrategy {
    fn columns(&self) -> Vec<kubestore_apimachinery::table::Column> {
        crate::kinds::printers::secret_columns()
    }

    fn cells(&self, obj: &Secret, now: i64) -> Vec<serde_json::Value> {
        crate::kinds::printers::secret_cells(obj, now)
    }

    fn default_object(&self, s: &mut Secret) -> bool {
        default_type(s)
    }

    fn has_defaults(&self) -> bool {
        true
    }

    fn prepare_for_create(&self, s: &mut Secret) {
        merge_string_data(s);
        content_generation(s.metadata.get_or_insert_with(Default::default), None);
    }

    /// The generation moves with `data` and `immutable`; `type` cannot change (validation).
    fn prepare_for_update(&self, new: &mut Secret, old: &Secret) {
        merge_string_data(new);
        let changed = new.data != old.data || new.immutable != old.immutable;
        content_generation(
            new.metadata.get_or_insert_with(Default::default),
            Some(changed),
        );
    }

    fn validate(&self, s: &Secret) -> Violations {
        let mut v = validate_data(s.data.iter().map(|(k, val)| (k, val.len())));
        if s.r#type == "kubernetes.io/service-account-token"
            && s.metadata
                .as_ref()
                .and_then(|m| m.annotations.get(SERVICE_ACCOUNT_NAME))
                .is_none_or(String::is_empty)
        {
            v.push((
                format!("metadata.annotations[{SERVICE_ACCOUNT_NAME}]"),
                "Required value".into(),
            ));
        }
        if let Some((_, keys, any, json)) = REQUIRED_KEYS.iter().find(|r| r.0 == s.r#type) {
            let present = keys.iter().filter(|k| s.data.contains_key(**k)).count();
            let enough = if *any {
                present > 0
            } else {
                present == keys.len()
            };
            if !enough {
                for k in keys.iter().filter(|k| *any || !s.data.contains_key(**k)) {
                    v.push((format!("data[{k}]"), "Required value".into()));
                }
            }
            if *json {
                for k in keys.iter() {
                    if let Some(value) = s.data.get(*k)
                        // Upstream decodes into a map: a JSON array or string is invalid too
                        // (`null` decodes, as Go's json.Unmarshal leaves the map nil).
                        && let Err(e) = serde_json::from_slice::<
                            Option<serde_json::Map<String, serde_json::Value>>,
                        >(value)
                    {
                        v.push((
                            format!("data[{k}]"),
                            format!("Invalid value: <secret contents redacted>: {e}"),
                        ));
                    }
                }
            }
        }
        v
    }

    fn validate_update(&self, new: &Secret, old: &Secret) -> Violations {
        let mut v = self.validate(new);
        if new.r#type != old.r#type {
            v.push((
                "type".into(),
                format!("Invalid value: {:?}: field is immutable", new.r#type),
            ));
        }
        validate_immutable(
            &mut v,
            (new.immutable, old.immutable),
            &[("data", new.data != old.data)],
        );
        v
    }

    fn selectable_fields(&self) -> &'static [SelectableField] {
        FIELDS
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::configmap::MAX_DATA_BYTES;
    use kubestore_proto::meta::v1::ObjectMeta;

    fn secret(ty: &str, data: &[(&str, &[u8])]) -> Secret {
        Secret {
            metadata: Some(ObjectMeta {
                name: "s".into(),
                ..Default::default()
            }),
            data: data
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_vec()))
                .collect(),
            r#type: ty.into(),
            ..Default::default()
        }
    }

    fn fields(v: &Violations) -> Vec<String> {
        v.iter().map(|(f, _)| f.clone()).collect()
    }

    #[test]
    fn type_defaults_and_string_data_merges_into_data() {
        let mut s = secret("", &[("a", b"1"), ("b", b"2")]);
        s.string_data.insert("b".into(), "from-string-data".into());
        assert!(SecretStrategy.default_object(&mut s));
        assert!(!SecretStrategy.default_object(&mut s), "once");
        SecretStrategy.prepare_for_create(&mut s);
        assert_eq!(s.r#type, OPAQUE);
        assert!(s.string_data.is_empty());
        assert_eq!(s.data["b"], b"from-string-data");
        assert_eq!(s.data["a"], b"1");
    }

    #[test]
    fn typed_secrets_need_their_keys() {
        let v = SecretStrategy.validate(&secret("kubernetes.io/tls", &[("tls.crt", b"c")]));
        assert_eq!(fields(&v), ["data[tls.key]"]);
        let v = SecretStrategy.validate(&secret("kubernetes.io/basic-auth", &[]));
        assert_eq!(fields(&v), ["data[username]", "data[password]"]);
        let v = SecretStrategy.validate(&secret("kubernetes.io/basic-auth", &[("password", b"")]));
        assert!(v.is_empty());
        let v = SecretStrategy.validate(&secret(
            "kubernetes.io/dockerconfigjson",
            &[(".dockerconfigjson", b"{not json")],
        ));
        assert_eq!(fields(&v), ["data[.dockerconfigjson]"]);
        assert!(!v.iter().any(|(_, m)| m.contains("not json")), "{v:?}");
        // JSON, but not an object.
        let v = SecretStrategy.validate(&secret(
            "kubernetes.io/dockerconfigjson",
            &[(".dockerconfigjson", b"[]")],
        ));
        assert_eq!(fields(&v), ["data[.dockerconfigjson]"]);
        let v = SecretStrategy.validate(&secret(
            "kubernetes.io/dockerconfigjson",
            &[(".dockerconfigjson", br#"{"auths":{}}"#)],
        ));
        assert!(v.is_empty(), "{v:?}");
        // A service-account token names its account: an empty name is missing.
        let mut token = secret("kubernetes.io/service-account-token", &[]);
        token
            .metadata
            .get_or_insert_with(Default::default)
            .annotations
            .insert(SERVICE_ACCOUNT_NAME.into(), String::new());
        assert_eq!(
            fields(&SecretStrategy.validate(&token)),
            [format!("metadata.annotations[{SERVICE_ACCOUNT_NAME}]")]
        );
        let v = SecretStrategy.validate(&secret("kubernetes.io/service-account-token", &[]));
        assert_eq!(
            fields(&v),
            ["metadata.annotations[kubernetes.io/service-account.name]"]
        );
        assert!(
            SecretStrategy
                .validate(&secret("example.com/custom", &[]))
                .is_empty()
        );
    }

    #[test]
    fn keys_size_type_and_immutability() {
        let v = SecretStrategy.validate(&secret("Opaque", &[("bad/key", b"x")]));
        assert_eq!(fields(&v), ["data[bad/key]"]);
        let v = SecretStrategy.validate(&secret("Opaque", &[("..data", b"x"), ("a..b", b"x")]));
        assert_eq!(fields(&v), ["data[..data]"]);
        // Values count, keys do not (upstream's): exactly the limit is valid, a byte more not.
        let big = vec![0u8; MAX_DATA_BYTES];
        assert!(
            SecretStrategy
                .validate(&secret("Opaque", &[("k", &big)]))
                .is_empty()
        );
        let v = SecretStrategy.validate(&secret("Opaque", &[("k", &big), ("l", b"x")]));
        assert_eq!(fields(&v), ["data"]);
        let old = Secret {
            immutable: Some(true),
            ..secret("Opaque", &[("k", b"1")])
        };
        let new = Secret {
            immutable: Some(true),
            ..secret("example.com/other", &[("k", b"2")])
        };
        assert_eq!(
            fields(&SecretStrategy.validate_update(&new, &old)),
            ["type", "data"]
        );
    }
}
