//! Encryption at rest (upstream's `EncryptionConfiguration` and
//! `k8s.io/apiserver/pkg/storage/value`): values of the configured resources are encrypted
//! where bytes meet etcd, so storage-svc stays resource-agnostic: the resource is the key's
//! first segment under the prefix (`/registry/secrets/ns/name` -> `secrets`).
//!
//! `--encryption-provider-config` reads upstream's YAML: per list of resources, providers in
//! order, `aesgcm` and `secretbox` with named keys (base64), and `identity`. The first provider
//! (and its first key) encrypts every write; every listed one decrypts. Stored values carry
//! upstream's prefix `k8s:enc:<provider>:v1:<keyname>:`, then the nonce, then the sealed data;
//! aesgcm authenticates the etcd key as additional data (a value copied under another key does
//! not decrypt), as upstream does. A value read with anything but the first provider and key is
//! *stale*: a GuaranteedUpdate that changes nothing still rewrites it (upstream's rule), so key
//! rotation is: add the new key first, restart, rewrite everything (`kubestore storage rewrite
//! --resource secrets`), then remove the old key. A value no configured provider can read is an
//! INTERNAL error naming the key, the resource and what is missing, never garbage.
//!
//! The cryptography is RustCrypto's (`aes-gcm`, `crypto_secretbox`), nonces from the OS.

use std::{
    borrow::Cow,
    collections::HashMap,
    path::Path,
    sync::{Arc, Mutex},
};

use aes_gcm::{
    Aes128Gcm, Aes256Gcm, AesGcm, KeyInit,
    aead::{Aead, AeadCore, OsRng, Payload, consts::U12},
    aes::Aes192,
};
use base64::Engine;
use crypto_secretbox::XSalsa20Poly1305;
use serde::Deserialize;

/// What stored values of encrypted resources start with.
pub const PREFIX: &str = "k8s:enc:";

/// AES-192-GCM with the standard 96-bit nonce.
type Aes192Gcm = AesGcm<Aes192, U12>;

/// One AES-GCM key of any allowed size.
#[derive(Clone)]
enum AesKey {
    A128(Aes128Gcm),
    A192(Aes192Gcm),
    A256(Aes256Gcm),
}

/// A provider with its named keys, in the configuration's order.
#[derive(Clone)]
enum Provider {
    Identity,
    AesGcm(Vec<(String, AesKey)>),
    Secretbox(Vec<(String, XSalsa20Poly1305)>),
}

impl Provider {
    fn name(&self) -> &'static str {
        match self {
            Provider::Identity => "identity",
            Provider::AesGcm(_) => "aesgcm",
            Provider::Secretbox(_) => "secretbox",
        }
    }
}

/// The providers of one group of resources.
#[derive(Clone)]
struct Rule {
    /// Resource names (`secrets`), or `*` for all.
    resources: Vec<String>,
    providers: Vec<Provider>,
}

/// Reads and writes values of the configured resources through their providers; values of
/// other resources pass through untouched.
#[derive(Clone, Default)]
pub struct Transformer {
    /// The storage prefix (`/registry/`), to find a key's resource.
    prefix: String,
    rules: Arc<Vec<Rule>>,
    /// Keys whose stored value (at the mod revision given) was read through a provider or key
    /// other than the first: the next no-op update rewrites them. One entry per stale key,
    /// removed when the key is written.
    stale: Arc<Mutex<HashMap<Vec<u8>, i64>>>,
}

/// The configuration file, as upstream's `apiserver.config.k8s.io/v1` `EncryptionConfiguration`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct FileConfig {
    api_version: Option<String>,
    kind: Option<String>,
    resources: Vec<FileRule>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileRule {
    resources: Vec<String>,
    providers: Vec<FileProvider>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileProvider {
    aesgcm: Option<FileKeys>,
    secretbox: Option<FileKeys>,
    identity: Option<serde_yaml_ng::Value>,
    aescbc: Option<serde_yaml_ng::Value>,
    kms: Option<serde_yaml_ng::Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileKeys {
    keys: Vec<FileKey>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileKey {
    name: String,
    secret: String,
}

/// The resource a configuration entry names, as [`Transformer::providers`] matches it:
/// `secrets` and `secrets.` (the core group) are `secrets`; a custom kind is
/// `<plural>.<group>` (`crontabs.stable.example.com`), as upstream names it; `*.` (every core
/// resource), `*.<group>` (every resource of a group) and `*.*` (everything) stay as written.
fn resource_name(entry: &str) -> Result<String, String> {
    match entry.split_once('.') {
        _ if entry.is_empty() => Err("an empty resource name".into()),
        Some(("", _)) => Err(format!("{entry:?}: a resource name before the group")),
        Some((r, "")) if r != "*" => Ok(r.to_string()),
        _ => Ok(entry.to_string()),
    }
}

/// Whether an earlier entry `claimed` already covers `entry` (both as [`resource_name`] gives
/// them): upstream refuses such an entry, as it could never apply. `*.*` after `*.` or after
/// `*.<group>` is allowed: it adds the resources they leave out.
fn masks(claimed: &str, entry: &str) -> bool {
    let group = |e: &str| e.split_once('.').map(|(_, g)| g.to_string());
    match claimed {
        "*.*" => true,
        c if c == entry => true,
        // Every core resource: names without a group.
        "*." => entry != "*.*" && !entry.contains('.'),
        c => match c.strip_prefix("*.") {
            Some(g) => {
                entry != "*.*" && !entry.starts_with("*.") && group(entry).as_deref() == Some(g)
            }
            None => false,
        },
    }
}

fn decode_secret(provider: &str, key: &FileKey) -> Result<Vec<u8>, String> {
    base64::engine::general_purpose::STANDARD
        .decode(key.secret.trim())
        .map_err(|e| format!("{provider} key {:?}: secret is not base64: {e}", key.name))
}

fn keys<K>(
    provider: &str,
    keys: &FileKeys,
    make: impl Fn(&[u8]) -> Result<K, String>,
) -> Result<Vec<(String, K)>, String> {
    if keys.keys.is_empty() {
        return Err(format!("{provider}: no keys"));
    }
    let mut out: Vec<(String, K)> = Vec::new();
    for k in &keys.keys {
        if k.name.is_empty() || k.name.contains(':') {
            return Err(format!(
                "{provider} key {:?}: names must be non-empty and contain no ':'",
                k.name
            ));
        }
        if out.iter().any(|(n, _)| *n == k.name) {
            return Err(format!("{provider}: key name {:?} is used twice", k.name));
        }
        let secret = decode_secret(provider, k)?;
        let key = make(&secret).map_err(|e| format!("{provider} key {:?}: {e}", k.name))?;
        out.push((k.name.clone(), key));
    }
    Ok(out)
}

impl Transformer {
    /// No encryption: every value passes through.
    pub fn none(prefix: &str) -> Self {
        Self {
            prefix: prefix.to_string(),
            ..Default::default()
        }
    }

    /// Reads `--encryption-provider-config` at `path`, for keys under `prefix`.
    pub fn load(path: &Path, prefix: &str) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("--encryption-provider-config {}: {e}", path.display()))?;
        Self::parse(&text, prefix)
            .map_err(|e| format!("--encryption-provider-config {}: {e}", path.display()))
    }

    /// Parses the YAML of an `EncryptionConfiguration`.
    pub fn parse(text: &str, prefix: &str) -> Result<Self, String> {
        let file: FileConfig = serde_yaml_ng::from_str(text).map_err(|e| e.to_string())?;
        // As upstream's loader: the file says what it is, and a rule that cannot apply (no
        // resources, or a resource an earlier rule already claims) is an error, not ignored.
        match file.kind.as_deref() {
            Some("EncryptionConfiguration") => {}
            other => {
                return Err(format!(
                    "kind {other:?}: expected \"EncryptionConfiguration\""
                ));
            }
        }
        match file.api_version.as_deref() {
            Some("apiserver.config.k8s.io/v1") => {}
            other => {
                return Err(format!(
                    "apiVersion {other:?}: expected \"apiserver.config.k8s.io/v1\""
                ));
            }
        }
        if file.resources.is_empty() {
            return Err("resources: Required value: at least one rule".into());
        }
        let mut rules = Vec::new();
        // What earlier entries cover: `*.*` (everything), `*.` (every core resource),
        // `*.<group>`, or a resource name.
        let mut claimed: Vec<String> = Vec::new();
        for (i, r) in file.resources.iter().enumerate() {
            if r.resources.is_empty() {
                return Err(format!(
                    "resources[{i}].resources: Required value: at least one resource"
                ));
            }
            let mut resources = Vec::new();
            for (j, e) in r.resources.iter().enumerate() {
                let name = resource_name(e).map_err(|m| format!("resources[{i}]: {m}"))?;
                // Upstream's masking rule: an entry an earlier one already covers would never
                // apply.
                if claimed.iter().any(|c| masks(c, &name)) {
                    return Err(format!(
                        "resources[{i}].resources[{j}]: Duplicate value: {e:?} is already \
                         covered by an earlier entry"
                    ));
                }
                claimed.push(name.clone());
                resources.push(name);
            }
            if r.providers.is_empty() {
                return Err(format!("resources[{i}]: no providers"));
            }
            let mut providers = Vec::new();
            for (j, p) in r.providers.iter().enumerate() {
                let at = format!("resources[{i}].providers[{j}]");
                let given = [
                    p.aesgcm.is_some(),
                    p.secretbox.is_some(),
                    p.identity.is_some(),
                    p.aescbc.is_some(),
                    p.kms.is_some(),
                ]
                .iter()
                .filter(|b| **b)
                .count();
                if given != 1 {
                    return Err(format!("{at}: exactly one provider per entry"));
                }
                if p.aescbc.is_some() || p.kms.is_some() {
                    return Err(format!(
                        "{at}: aescbc and kms are not supported (aesgcm, secretbox, identity are)"
                    ));
                }
                let provider = if let Some(k) = &p.aesgcm {
                    Provider::AesGcm(
                        keys("aesgcm", k, |s| match s.len() {
                            16 => Ok(AesKey::A128(
                                Aes128Gcm::new_from_slice(s).map_err(|e| e.to_string())?,
                            )),
                            24 => Ok(AesKey::A192(
                                Aes192Gcm::new_from_slice(s).map_err(|e| e.to_string())?,
                            )),
                            32 => Ok(AesKey::A256(
                                Aes256Gcm::new_from_slice(s).map_err(|e| e.to_string())?,
                            )),
                            n => Err(format!("must be 16, 24 or 32 bytes, is {n}")),
                        })
                        .map_err(|e| format!("{at}: {e}"))?,
                    )
                } else if let Some(k) = &p.secretbox {
                    Provider::Secretbox(
                        keys("secretbox", k, |s| {
                            if s.len() == 32 {
                                XSalsa20Poly1305::new_from_slice(s).map_err(|e| e.to_string())
                            } else {
                                Err(format!("must be 32 bytes, is {}", s.len()))
                            }
                        })
                        .map_err(|e| format!("{at}: {e}"))?,
                    )
                } else {
                    Provider::Identity
                };
                providers.push(provider);
            }
            rules.push(Rule {
                resources,
                providers,
            });
        }
        Ok(Self {
            prefix: prefix.to_string(),
            rules: Arc::new(rules),
            stale: Arc::default(),
        })
    }

    /// Whether any resource is configured.
    pub fn enabled(&self) -> bool {
        !self.rules.is_empty()
    }

    /// The resource of an etcd key, and its providers if it is configured (the first rule
    /// naming it wins, as upstream).
    fn providers(&self, etcd_key: &[u8]) -> (String, Option<&[Provider]>) {
        let rest = etcd_key
            .strip_prefix(self.prefix.as_bytes())
            .unwrap_or(etcd_key);
        let mut segments = rest
            .split(|b| *b == b'/')
            .filter(|s| !s.is_empty())
            .map(|s| String::from_utf8_lossy(s).into_owned());
        let first = segments.next().unwrap_or_default();
        // A first segment with a dot is an API group (custom kinds' keys are
        // `/<group>/<plural>/...`): the resource is `<plural>.<group>`, as upstream names it in
        // an EncryptionConfiguration.
        let (resource, group) = match (first.contains('.'), segments.next()) {
            (true, Some(plural)) => (format!("{plural}.{first}"), first.clone()),
            _ => (first, String::new()),
        };
        let matches = |n: &String| {
            *n == resource
                || n == "*.*"
                || (n == "*." && group.is_empty())
                || (!group.is_empty() && n.strip_prefix("*.") == Some(group.as_str()))
        };
        let providers = self
            .rules
            .iter()
            .find(|r| r.resources.iter().any(matches))
            .map(|r| r.providers.as_slice());
        (resource, providers)
    }

    /// The value to store for `plain` under `etcd_key`: `plain` itself (not copied) unless the
    /// key's resource is encrypted.
    pub fn encrypt<'a>(&self, etcd_key: &[u8], plain: &'a [u8]) -> Result<Cow<'a, [u8]>, String> {
        if !self.enabled() {
            return Ok(Cow::Borrowed(plain));
        }
        let (resource, Some(providers)) = self.providers(etcd_key) else {
            return Ok(Cow::Borrowed(plain));
        };
        let sealed = |name: &str, key: &str, nonce: &[u8], ct: Vec<u8>| {
            let mut out = format!("{PREFIX}{name}:v1:{key}:").into_bytes();
            out.extend_from_slice(nonce);
            out.extend_from_slice(&ct);
            out
        };
        let fail = |e: aes_gcm::Error| format!("cannot encrypt a {resource} value: {e}");
        match providers.first() {
            None | Some(Provider::Identity) => Ok(Cow::Borrowed(plain)),
            Some(Provider::AesGcm(keys)) => {
                let Some((name, key)) = keys.first() else {
                    return Ok(Cow::Borrowed(plain));
                };
                let nonce = Aes256Gcm::generate_nonce(&mut OsRng);
                let payload = Payload {
                    msg: plain,
                    aad: etcd_key,
                };
                let ct = match key {
                    AesKey::A128(c) => c.encrypt(&nonce, payload),
                    AesKey::A192(c) => c.encrypt(&nonce, payload),
                    AesKey::A256(c) => c.encrypt(&nonce, payload),
                }
                .map_err(fail)?;
                Ok(Cow::Owned(sealed("aesgcm", name, &nonce, ct)))
            }
            Some(Provider::Secretbox(keys)) => {
                let Some((name, key)) = keys.first() else {
                    return Ok(Cow::Borrowed(plain));
                };
                let nonce = XSalsa20Poly1305::generate_nonce(&mut OsRng);
                let ct = key.encrypt(&nonce, plain).map_err(fail)?;
                Ok(Cow::Owned(sealed("secretbox", name, &nonce, ct)))
            }
        }
    }

    /// The plaintext of `stored` under `etcd_key` at `mod_revision`, remembering whether it is
    /// stale. Errors say what cannot read it.
    pub fn decrypt(
        &self,
        etcd_key: &[u8],
        stored: &[u8],
        mod_revision: i64,
    ) -> Result<Vec<u8>, String> {
        let (resource, providers) = self.providers(etcd_key);
        let encrypted = stored.starts_with(PREFIX.as_bytes());
        let Some(providers) = providers else {
            if encrypted {
                return Err(format!(
                    "the stored {resource} value is encrypted ({}), but --encryption-provider-config \
                     has no providers for {resource}",
                    describe_prefix(stored)
                ));
            }
            return Ok(stored.to_vec());
        };
        if !encrypted {
            return match providers
                .iter()
                .position(|p| matches!(p, Provider::Identity))
            {
                Some(i) => {
                    self.mark(etcd_key, mod_revision, i != 0);
                    Ok(stored.to_vec())
                }
                None => Err(format!(
                    "the stored {resource} value is not encrypted, and identity is not among \
                     the providers for {resource} in --encryption-provider-config"
                )),
            };
        }
        // k8s:enc:<provider>:v1:<key>:<nonce><sealed>
        let rest = &stored[PREFIX.len()..];
        let mut parts = rest.splitn(4, |b| *b == b':');
        let (Some(provider), Some(b"v1"), Some(key_name), Some(body)) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(format!(
                "the stored {resource} value has a malformed encryption prefix"
            ));
        };
        let provider = String::from_utf8_lossy(provider);
        let key_name = String::from_utf8_lossy(key_name);
        let missing = || {
            format!(
                "the stored {resource} value was encrypted with {provider} key {key_name:?}, \
                 which --encryption-provider-config does not have for {resource}"
            )
        };
        let corrupt = || {
            format!(
                "the stored {resource} value does not decrypt with {provider} key {key_name:?}: wrong key material, or the value was altered or copied from another key"
            )
        };
        for (i, p) in providers.iter().enumerate() {
            if p.name() != provider {
                continue;
            }
            let plain = match p {
                Provider::AesGcm(keys) => {
                    let Some(j) = keys.iter().position(|(n, _)| *n == key_name) else {
                        continue;
                    };
                    if body.len() < 12 {
                        return Err(corrupt());
                    }
                    let (nonce, ct) = body.split_at(12);
                    let nonce = aes_gcm::Nonce::<U12>::from_slice(nonce);
                    let payload = Payload {
                        msg: ct,
                        aad: etcd_key,
                    };
                    let r = match &keys[j].1 {
                        AesKey::A128(c) => c.decrypt(nonce, payload),
                        AesKey::A192(c) => c.decrypt(nonce, payload),
                        AesKey::A256(c) => c.decrypt(nonce, payload),
                    };
                    (r.map_err(|_| corrupt())?, i != 0 || j != 0)
                }
                Provider::Secretbox(keys) => {
                    let Some(j) = keys.iter().position(|(n, _)| *n == key_name) else {
                        continue;
                    };
                    if body.len() < 24 {
                        return Err(corrupt());
                    }
                    let (nonce, ct) = body.split_at(24);
                    let nonce = crypto_secretbox::Nonce::from_slice(nonce);
                    let r = keys[j].1.decrypt(nonce, ct);
                    (r.map_err(|_| corrupt())?, i != 0 || j != 0)
                }
                Provider::Identity => continue,
            };
            self.mark(etcd_key, mod_revision, plain.1);
            return Ok(plain.0);
        }
        Err(missing())
    }

    fn mark(&self, etcd_key: &[u8], mod_revision: i64, stale: bool) {
        let mut map = self.stale.lock().unwrap_or_else(|p| p.into_inner());
        if stale {
            map.insert(etcd_key.to_vec(), mod_revision);
        } else if !map.is_empty() {
            map.remove(etcd_key);
        }
    }

    /// Whether the value of `etcd_key` at `mod_revision` was read as stale.
    pub fn is_stale(&self, etcd_key: &[u8], mod_revision: i64) -> bool {
        if !self.enabled() {
            return false;
        }
        let map = self.stale.lock().unwrap_or_else(|p| p.into_inner());
        map.get(etcd_key) == Some(&mod_revision)
    }

    /// Forgets `etcd_key`'s staleness (it was just written).
    pub fn written(&self, etcd_key: &[u8]) {
        if !self.enabled() {
            return;
        }
        let mut map = self.stale.lock().unwrap_or_else(|p| p.into_inner());
        if !map.is_empty() {
            map.remove(etcd_key);
        }
    }
}

/// `aesgcm key "k1"` from a stored value's prefix, for messages.
fn describe_prefix(stored: &[u8]) -> String {
    let rest = &stored[PREFIX.len().min(stored.len())..];
    let mut parts = rest.splitn(4, |b| *b == b':');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(p), Some(_), Some(k)) => format!(
            "{} key {:?}",
            String::from_utf8_lossy(p),
            String::from_utf8_lossy(k)
        ),
        _ => "unknown provider".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const K1: &str = "MTIzNDU2Nzg5MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTI="; // 32 bytes
    const K2: &str = "YWJjZGVmZ2hpamtsbW5vcA=="; // 16 bytes

    fn config(providers: &str) -> Transformer {
        Transformer::parse(
            &format!(
                "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n  - resources: [secrets]\n    providers:\n{providers}"
            ),
            "/registry/",
        )
        .expect("valid config")
    }

    const KEY: &[u8] = b"/registry/secrets/default/db";

    #[test]
    fn aesgcm_round_trips_with_upstreams_prefix_and_binds_the_key() {
        let t = config(&format!(
            "      - aesgcm:\n          keys:\n            - name: key1\n              secret: {K1}\n      - identity: {{}}\n"
        ));
        let sealed = t.encrypt(KEY, b"hunter2").expect("encrypt");
        assert!(sealed.starts_with(b"k8s:enc:aesgcm:v1:key1:"));
        assert!(!sealed.windows(7).any(|w| w == b"hunter2"));
        assert_eq!(t.decrypt(KEY, &sealed, 5).expect("decrypt"), b"hunter2");
        assert!(!t.is_stale(KEY, 5));
        // Copied under another key: does not decrypt.
        let e = t
            .decrypt(b"/registry/secrets/default/other", &sealed, 5)
            .expect_err("bound to its key");
        assert!(e.contains("does not decrypt"), "{e}");
        // Other resources pass through; plaintext secrets are read (identity) and stale.
        assert_eq!(
            t.encrypt(b"/registry/configmaps/default/c", b"x")
                .expect("plain")
                .as_ref(),
            b"x"
        );
        assert_eq!(
            t.decrypt(KEY, b"\x0aplain", 7).expect("identity"),
            b"\x0aplain"
        );
        assert!(t.is_stale(KEY, 7));
    }

    #[test]
    fn rotation_reads_old_keys_as_stale_and_missing_keys_are_named() {
        let old = config(&format!(
            "      - aesgcm:\n          keys:\n            - name: key1\n              secret: {K1}\n"
        ));
        let sealed = old.encrypt(KEY, b"v").expect("encrypt");
        let both = config(&format!(
            "      - aesgcm:\n          keys:\n            - name: key2\n              secret: {K2}\n            - name: key1\n              secret: {K1}\n"
        ));
        assert_eq!(both.decrypt(KEY, &sealed, 3).expect("old key"), b"v");
        assert!(both.is_stale(KEY, 3));
        assert!(
            both.encrypt(KEY, b"v")
                .expect("new")
                .starts_with(b"k8s:enc:aesgcm:v1:key2:")
        );
        both.written(KEY);
        assert!(!both.is_stale(KEY, 3));
        let new_only = config(&format!(
            "      - secretbox:\n          keys:\n            - name: key3\n              secret: {K1}\n"
        ));
        let e = new_only.decrypt(KEY, &sealed, 3).expect_err("key1 is gone");
        assert!(
            e.contains("aesgcm key \"key1\"") && e.contains("secrets"),
            "{e}"
        );
        let boxed = new_only.encrypt(KEY, b"w").expect("secretbox");
        assert!(boxed.starts_with(b"k8s:enc:secretbox:v1:key3:"));
        assert_eq!(new_only.decrypt(KEY, &boxed, 4).expect("secretbox"), b"w");
        // No identity: plaintext is refused, not passed off as data.
        assert!(new_only.decrypt(KEY, b"\x0aplain", 8).is_err());
    }

    /// Custom kinds are named `<plural>.<group>` (their keys are `/<group>/<plural>/...`),
    /// `*.<group>` covers a group, `*.` only the core group, `*.*` everything.
    #[test]
    fn custom_kinds_are_named_by_plural_and_group() {
        let aes = format!(
            "    providers:\n      - aesgcm:\n          keys:\n            - name: key1\n              secret: {K1}\n"
        );
        let identity = "    providers:\n      - identity: {}\n";
        let with = |resources: &str| {
            Transformer::parse(
                &format!(
                    "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n  - resources: [{resources}]\n{aes}  - resources: ['*.*']\n{identity}"
                ),
                "/registry/",
            )
            .expect("parses")
        };
        let crontab: &[u8] = b"/registry/stable.example.com/crontabs/default/c";
        let widget: &[u8] = b"/registry/other.example.com/widgets/default/w";
        let secret: &[u8] = b"/registry/secrets/default/s";
        let sealed = |t: &Transformer, key: &[u8]| {
            t.encrypt(key, b"v")
                .expect("encrypt")
                .starts_with(b"k8s:enc:aesgcm:")
        };
        let t = with("crontabs.stable.example.com");
        assert!(sealed(&t, crontab));
        assert!(!sealed(&t, widget) && !sealed(&t, secret));
        let t = with("'*.stable.example.com'");
        assert!(sealed(&t, crontab) && !sealed(&t, widget) && !sealed(&t, secret));
        let t = with("'*.'");
        assert!(sealed(&t, secret) && !sealed(&t, crontab));
        // An entry a group wildcard already covers is a duplicate; `*.` does not cover groups.
        let twice = format!(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n  - resources: ['*.stable.example.com']\n{identity}  - resources: [crontabs.stable.example.com]\n{identity}"
        );
        let e = Transformer::parse(&twice, "/registry/")
            .err()
            .expect("masked");
        assert!(e.contains("resources[1].resources[0]: Duplicate"), "{e}");
        let core_then_custom = format!(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n  - resources: ['*.']\n{identity}  - resources: [crontabs.stable.example.com]\n{identity}"
        );
        assert!(Transformer::parse(&core_then_custom, "/registry/").is_ok());
    }

    #[test]
    fn bad_configurations_say_what_is_wrong() {
        for (providers, expected) in [
            (
                "      - aesgcm:\n          keys:\n            - name: k\n              secret: YWJj\n",
                "must be 16, 24 or 32 bytes",
            ),
            (
                "      - aesgcm:\n          keys:\n            - name: k\n              secret: '%%%'\n",
                "not base64",
            ),
            ("      - aescbc:\n          keys: []\n", "not supported"),
            ("      - aesgcm:\n          keys: []\n", "no keys"),
            (
                "      - secretbox:\n          keys:\n            - name: k\n              secret: YWJjZGVmZ2hpamtsbW5vcA==\n",
                "must be 32 bytes",
            ),
        ] {
            let text = format!(
                "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n  - resources: [secrets]\n    providers:\n{providers}"
            );
            let e = Transformer::parse(&text, "/registry/")
                .err()
                .expect("refused");
            assert!(e.contains(expected), "{e} should say {expected}");
        }
        let identity = "    providers:\n      - identity: {}\n";
        // Upstream's accepted wildcard layout: specific resources first, then `*.`, then `*.*`.
        let layered = format!(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n  - resources: [configmaps, '*.apps']\n{identity}  - resources: [secrets]\n{identity}  - resources: ['*.']\n{identity}  - resources: ['*.*']\n{identity}"
        );
        assert!(Transformer::parse(&layered, "/registry/").is_ok());
        for (text, expected) in [
            (
                format!("kind: EncryptionConfiguration\nresources:\n  - resources: [secrets]\n{identity}"),
                "apiVersion",
            ),
            (
                format!("apiVersion: apiserver.config.k8s.io/v1\nresources:\n  - resources: [secrets]\n{identity}"),
                "kind",
            ),
            (
                format!("apiVersion: v1\nkind: EncryptionConfiguration\nresources:\n  - resources: [secrets]\n{identity}"),
                "apiVersion",
            ),
            (
                "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources: []\n".to_string(),
                "resources: Required",
            ),
            (
                format!("apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n  - resources: []\n{identity}"),
                "resources[0].resources: Required",
            ),
            (
                format!("apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n  - resources: [secrets]\n{identity}  - resources: [secrets.]\n{identity}"),
                "resources[1].resources[0]: Duplicate",
            ),
            (
                format!("apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n  - resources: ['*.*']\n{identity}  - resources: [configmaps]\n{identity}"),
                "resources[1].resources[0]: Duplicate",
            ),
            (
                format!("apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n  - resources: ['*.']\n{identity}  - resources: [secrets]\n{identity}"),
                "resources[1].resources[0]: Duplicate",
            ),
        ] {
            let e = Transformer::parse(&text, "/registry/")
                .err()
                .expect("refused");
            assert!(e.contains(expected), "{e} should say {expected}");
        }
    }
}
