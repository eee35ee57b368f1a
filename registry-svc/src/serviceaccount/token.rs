//! ServiceAccount tokens as JWTs (upstream's `pkg/serviceaccount/{jwt,claims}.go`): the claims
//! a token carries, signing with `--service-account-signing-key-file` and verifying with the
//! keys of `--service-account-key-file`. Pure: whether the account (and the object the token is
//! bound to) still exists is the authenticator's question (`super::authenticator`).
//!
//! Signatures are `jsonwebtoken`'s (RustCrypto), never ours. What a verifier accepts is fixed by
//! the keys, not by the token: P-256 keys verify ES256 only and RSA keys RS256 only, so a token
//! saying `alg: none`, or HS256 "signed" with a public key, is refused before any claim is read.
//! Required claims as upstream's tokens always carry them (`iss`, `sub`, `aud`, `exp`, `nbf`,
//! `iat`); times with upstream's leeway of 60 s (go-jose's `DefaultLeeway`).

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

/// Upstream's leeway on `exp` and `nbf` (go-jose's `DefaultLeeway`), in seconds.
pub const LEEWAY_SECONDS: u64 = 60;

/// A name and uid in the `kubernetes.io` claim.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ref {
    /// The object's name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// The object's uid.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
}

/// Upstream's private claim `kubernetes.io`: the account, and the object the token is bound to.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Kubernetes {
    /// The account's namespace.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// The account.
    #[serde(default)]
    pub serviceaccount: Ref,
    /// The Pod the token is bound to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<Ref>,
    /// The Secret the token is bound to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<Ref>,
}

/// A token's claims, in upstream's names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// The audiences.
    pub aud: Vec<String>,
    /// Expiry, Unix seconds.
    pub exp: i64,
    /// Issued at, Unix seconds.
    pub iat: i64,
    /// The issuer (`--service-account-issuer`).
    pub iss: String,
    /// The token's id (audited as `authentication.kubernetes.io/credential-id`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub jti: String,
    /// Not before, Unix seconds.
    pub nbf: i64,
    /// `system:serviceaccount:NS:NAME`.
    pub sub: String,
    /// The account and bound object.
    #[serde(rename = "kubernetes.io")]
    pub kubernetes: Kubernetes,
}

impl Claims {
    /// Whether `sub` names the account of the private claim, as upstream's tokens always do (a
    /// token whose two names disagree was not made by a TokenRequest).
    fn consistent(&self) -> bool {
        crate::authn::service_account(&self.sub)
            == Some((
                self.kubernetes.namespace.as_str(),
                self.kubernetes.serviceaccount.name.as_str(),
            ))
    }
}

/// Why a token is refused (logged, never sent: every refusal is `401 Unauthorized`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// Not a JWT at all: another authenticator's token, or garbage.
    NotJwt,
    /// A JWT, but no key of ours verifies it with our issuers and audiences.
    Invalid(String),
}

/// One verifying key, with the only algorithm it accepts.
struct Verifying {
    key: DecodingKey,
    algorithm: Algorithm,
    /// Upstream's key id of the key.
    kid: String,
}

/// The keys and names tokens are signed and verified with.
pub struct Keys {
    signing: Option<(EncodingKey, Algorithm, String)>,
    verifying: Vec<Verifying>,
    issuers: Vec<String>,
    audiences: Vec<String>,
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keys")
            .field("signs", &self.signing.is_some())
            .field("verifying", &self.verifying.len())
            .field("issuers", &self.issuers)
            .field("audiences", &self.audiences)
            .finish()
    }
}

/// The verifying key of a PEM public key (P-256 or RSA), with its family's one algorithm.
fn verifying_key(pem: &[u8], what: &str) -> Result<Verifying, String> {
    if let Ok(key) = DecodingKey::from_ec_pem(pem) {
        return Ok(Verifying {
            key,
            algorithm: Algorithm::ES256,
            kid: key_id(pem),
        });
    }
    if let Ok(key) = DecodingKey::from_rsa_pem(pem) {
        return Ok(Verifying {
            key,
            algorithm: Algorithm::RS256,
            kid: key_id(pem),
        });
    }
    Err(format!(
        "{what}: not a PEM public key (P-256 `PUBLIC KEY`, or RSA); make one with \
         `openssl pkey -in sa.key -pubout`"
    ))
}

/// Upstream's key id (`keyIDFromPublicKey`): base64url of SHA-256 of the key's SPKI DER.
fn key_id(public_pem: &[u8]) -> String {
    use base64::Engine;
    let der = pem_der(public_pem).unwrap_or_default();
    let digest = ring::digest::digest(&ring::digest::SHA256, &der);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(digest.as_ref())
}

/// The DER of a PEM file's first block.
fn pem_der(pem: &[u8]) -> Option<Vec<u8>> {
    use base64::Engine;
    let text = std::str::from_utf8(pem).ok()?;
    let body: String = text
        .lines()
        .skip_while(|l| !l.starts_with("-----BEGIN"))
        .skip(1)
        .take_while(|l| !l.starts_with("-----END"))
        .collect();
    base64::engine::general_purpose::STANDARD.decode(body).ok()
}

impl Keys {
    /// Keys from PEM contents: `signing` (the flag and a PKCS#8 private key, or None: this
    /// server verifies only) and `verifying` (public keys, each `(what, pem)` naming its flag
    /// and file in errors), which must hold the signing key's public key, as upstream's
    /// `--service-account-key-file` must. An error names what is wrong: a private key no
    /// verifying key matches is refused here, not on the first request.
    pub fn new(
        signing: Option<(&str, &[u8])>,
        verifying: &[(String, Vec<u8>)],
        issuers: Vec<String>,
        audiences: Vec<String>,
    ) -> Result<Self, String> {
        if issuers.is_empty() {
            return Err("--service-account-issuer is required with ServiceAccount keys".into());
        }
        let verifiers = verifying
            .iter()
            .map(|(what, pem)| verifying_key(pem, what))
            .collect::<Result<Vec<_>, _>>()?;
        let mut keys = Self {
            signing: None,
            verifying: verifiers,
            issuers,
            audiences,
        };
        let Some((what, private)) = signing else {
            return Ok(keys);
        };
        let (key, algorithm) = EncodingKey::from_ec_pem(private)
            .map(|k| (k, Algorithm::ES256))
            .or_else(|_| EncodingKey::from_rsa_pem(private).map(|k| (k, Algorithm::RS256)))
            .map_err(|e| {
                format!("{what}: not a PKCS#8 private key (make one with `openssl genpkey`): {e}")
            })?;
        // Which public key is this one's: the one that verifies what it signs (its id is
        // the token header's `kid`).
        let now = now();
        let probe = Claims {
            aud: vec![keys.audiences.first().cloned().unwrap_or_default()],
            exp: now + 600,
            iat: now,
            iss: keys.issuers[0].clone(),
            jti: String::new(),
            nbf: now,
            sub: "system:serviceaccount:probe:probe".into(),
            kubernetes: Kubernetes {
                namespace: "probe".into(),
                serviceaccount: Ref {
                    name: "probe".into(),
                    uid: String::new(),
                },
                ..Default::default()
            },
        };
        let token = jsonwebtoken::encode(&Header::new(algorithm), &probe, &key)
            .map_err(|e| format!("{what}: cannot sign with it: {e}"))?;
        let mut validation = Validation::new(algorithm);
        validation.validate_aud = false;
        let kid = keys
            .verifying
            .iter()
            .filter(|v| v.algorithm == algorithm)
            .find(|v| jsonwebtoken::decode::<Claims>(&token, &v.key, &validation).is_ok())
            .map(|v| v.kid.clone())
            .ok_or_else(|| {
                format!(
                    "--service-account-key-file holds no public key of {what}, so its tokens \
                     would verify nowhere (add it: `openssl pkey -in KEY -pubout`)"
                )
            })?;
        keys.signing = Some((key, algorithm, kid));
        Ok(keys)
    }

    /// Whether tokens can be issued here.
    pub fn signs(&self) -> bool {
        self.signing.is_some()
    }

    /// The issuer tokens are signed as (the first `--service-account-issuer`).
    pub fn issuer(&self) -> &str {
        &self.issuers[0]
    }

    /// The API's audiences (`--api-audiences`, default the issuers).
    pub fn audiences(&self) -> &[String] {
        &self.audiences
    }

    /// A signed token of `claims`.
    pub fn sign(&self, claims: &Claims) -> Result<String, String> {
        let Some((key, algorithm, kid)) = &self.signing else {
            return Err("no --service-account-signing-key-file: tokens cannot be issued".into());
        };
        let mut header = Header::new(*algorithm);
        header.kid = Some(kid.clone());
        jsonwebtoken::encode(&header, claims, key).map_err(|e| format!("signing failed: {e}"))
    }

    /// The claims of `token` if one of the keys verifies it, it is within its times, of one of
    /// the issuers and for one of the audiences.
    pub fn verify(&self, token: &str) -> Result<Claims, Refused> {
        // Not three base64url parts with a JSON header: not ours to judge.
        let header = jsonwebtoken::decode_header(token).map_err(|_| Refused::NotJwt)?;
        let mut last = String::from("no key verifies it");
        for v in &self.verifying {
            // The key decides the algorithm; a header naming another is refused by `decode`.
            let mut validation = Validation::new(v.algorithm);
            validation.leeway = LEEWAY_SECONDS;
            validation.validate_nbf = true;
            validation.set_required_spec_claims(&["exp", "nbf", "iss", "aud", "sub"]);
            validation.set_issuer(&self.issuers);
            validation.set_audience(&self.audiences);
            match jsonwebtoken::decode::<Claims>(token, &v.key, &validation) {
                Ok(data) if data.claims.consistent() => return Ok(data.claims),
                Ok(_) => return Err(Refused::Invalid("sub does not name its account".into())),
                Err(e) => {
                    use jsonwebtoken::errors::ErrorKind;
                    match e.kind() {
                        // Another key may verify it.
                        ErrorKind::InvalidSignature | ErrorKind::InvalidAlgorithm => {
                            last = format!("{e} (alg {:?})", header.alg)
                        }
                        _ => return Err(Refused::Invalid(e.to_string())),
                    }
                }
            }
        }
        Err(Refused::Invalid(last))
    }
}

/// Now, Unix seconds.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

#[cfg(test)]
mod tests {
    use base64::Engine;
    use serde_json::json;

    use super::*;

    // Test keys, made with `openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256`.
    const SA_KEY: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgOhRjHUMlUF+hDyXX
V0gMY0Jl/6L7jD9VZZDu1zFOvxChRANCAASltsj4E//tjLJ8YiySoqU6UebEw1Lb
qWzsIpRODTx95KN4ZZpNWXeyftuZET7J9UVnkl/zCIgxL0A+uri27Q8f
-----END PRIVATE KEY-----
";
    const SA_PUB: &str = "-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEpbbI+BP/7YyyfGIskqKlOlHmxMNS
26ls7CKUTg08feSjeGWaTVl3sn7bmRE+yfVFZ5Jf8wiIMS9APrq4tu0PHw==
-----END PUBLIC KEY-----
";
    const OTHER_KEY: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgickrtqBmkorUbIR0
vtq5ge2v7du0obqjDou8lOmJGmChRANCAARg/dJkiboKdeyceb9n4rFdO0KLB2Hm
0/G72K1ri6E+sljxRT5WmDwUJjEqm62exd8yNc5HxurP3ebiaGRIg1wv
-----END PRIVATE KEY-----
";
    const OTHER_PUB: &str = "-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEYP3SZIm6CnXsnHm/Z+KxXTtCiwdh
5tPxu9ita4uhPrJY8UU+Vpg8FCYxKputnsXfMjXOR8bqz93m4mhkSINcLw==
-----END PUBLIC KEY-----
";
    const ISSUER: &str = "https://kubestore.example";

    fn keys(private: &str, public: &str) -> Keys {
        Keys::new(
            Some(("--service-account-signing-key-file", private.as_bytes())),
            &[(
                "--service-account-key-file".into(),
                public.as_bytes().to_vec(),
            )],
            vec![ISSUER.into()],
            vec![ISSUER.into(), "vault".into()],
        )
        .expect("a valid key pair")
    }

    fn claims() -> serde_json::Value {
        let now = now();
        json!({
            "aud": [ISSUER], "exp": now + 3600, "iat": now, "iss": ISSUER, "nbf": now,
            "jti": "1b4c", "sub": "system:serviceaccount:ns1:builder",
            "kubernetes.io": {"namespace": "ns1", "serviceaccount": {"name": "builder", "uid": "u1"}},
        })
    }

    /// A token of `claims` (any JSON) signed ES256 by `private`, as an attacker with that key
    /// would make it.
    fn signed(claims: &serde_json::Value, private: &str) -> String {
        let key = EncodingKey::from_ec_pem(private.as_bytes()).expect("a key");
        jsonwebtoken::encode(&Header::new(Algorithm::ES256), claims, &key).expect("signs")
    }

    fn b64(v: &serde_json::Value) -> String {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
    }

    #[test]
    fn a_token_verifies_with_its_claims_and_key_id() {
        let signer = keys(SA_KEY, SA_PUB);
        let claims: Claims = serde_json::from_value(claims()).expect("claims");
        let token = signer.sign(&claims).expect("signs");
        assert_eq!(signer.verify(&token), Ok(claims));
        let header = jsonwebtoken::decode_header(&token).expect("a header");
        assert_eq!(header.alg, Algorithm::ES256);
        assert_eq!(
            header.kid.as_deref(),
            Some(key_id(SA_PUB.as_bytes()).as_str())
        );
        assert_eq!(key_id(SA_PUB.as_bytes()).len(), 43, "base64url of 32 bytes");
        // A verifier with the public key only accepts it too; one with another key does not.
        let verifier = Keys::new(
            None,
            &[(
                "--service-account-key-file".into(),
                SA_PUB.as_bytes().to_vec(),
            )],
            vec![ISSUER.into()],
            vec![ISSUER.into()],
        )
        .expect("a verifier");
        assert!(verifier.verify(&token).is_ok());
        assert!(matches!(
            keys(OTHER_KEY, OTHER_PUB).verify(&token),
            Err(Refused::Invalid(_))
        ));
    }

    #[test]
    fn forged_and_confused_tokens_are_refused() {
        let keys = keys(SA_KEY, SA_PUB);
        let refused = |token: &str, why: &str| {
            assert!(
                matches!(keys.verify(token), Err(Refused::Invalid(_))),
                "{why}: {:?}",
                keys.verify(token)
            )
        };
        // alg none, no signature.
        let none = format!(
            "{}.{}.",
            b64(&json!({"alg": "none", "typ": "JWT"})),
            b64(&claims())
        );
        assert!(keys.verify(&none).is_err(), "alg none");
        // HS256 with the public key as the HMAC secret (the classic confusion).
        let hs = jsonwebtoken::encode(
            &Header::new(Algorithm::HS256),
            &claims(),
            &EncodingKey::from_secret(SA_PUB.as_bytes()).expect("an HMAC key"),
        )
        .expect("signs");
        refused(&hs, "HS256 with the public key");
        // Another key.
        refused(&signed(&claims(), OTHER_KEY), "another key");
        // A valid signature over a changed payload.
        let good = signed(&claims(), SA_KEY);
        let parts: Vec<&str> = good.split('.').collect();
        let mut evil = claims();
        evil["sub"] = json!("system:serviceaccount:kube-system:admin");
        evil["kubernetes.io"]["namespace"] = json!("kube-system");
        evil["kubernetes.io"]["serviceaccount"]["name"] = json!("admin");
        refused(
            &format!("{}.{}.{}", parts[0], b64(&evil), parts[2]),
            "payload swapped",
        );
        // Times, issuer, audience, names.
        let now = now();
        let with = |k: &str, v: serde_json::Value| {
            let mut c = claims();
            c[k] = v;
            signed(&c, SA_KEY)
        };
        refused(&with("exp", json!(now - 61)), "expired beyond the leeway");
        assert!(
            keys.verify(&with("exp", json!(now - 30))).is_ok(),
            "within the leeway"
        );
        refused(&with("nbf", json!(now + 120)), "not valid yet");
        refused(
            &with("exp", json!((now + 3600).to_string())),
            "a string exp (CVE-2026-25537)",
        );
        refused(
            &with("nbf", json!((now + 3600).to_string())),
            "a string nbf",
        );
        refused(&with("iss", json!("https://elsewhere")), "another issuer");
        refused(&with("aud", json!(["elsewhere"])), "another audience");
        assert!(
            keys.verify(&with("aud", json!(["vault", "x"]))).is_ok(),
            "one API audience"
        );
        refused(
            &with("sub", json!("system:serviceaccount:ns1:other")),
            "sub and claim differ",
        );
        let mut no_exp = claims();
        no_exp.as_object_mut().expect("an object").remove("exp");
        refused(&signed(&no_exp, SA_KEY), "no exp");
        // Not a JWT at all: another authenticator's token.
        assert_eq!(
            keys.verify("31ada4fd-adec-460c-809a-9e56ceb75269"),
            Err(Refused::NotJwt)
        );
    }

    #[test]
    fn bad_key_files_are_refused_at_start() {
        let e = Keys::new(
            Some(("--service-account-signing-key-file", SA_KEY.as_bytes())),
            &[(
                "--service-account-key-file".into(),
                OTHER_PUB.as_bytes().to_vec(),
            )],
            vec![ISSUER.into()],
            vec![ISSUER.into()],
        )
        .expect_err("a mismatched pair");
        assert!(e.contains("holds no public key"), "{e}");
        let e = Keys::new(
            None,
            &[("--service-account-key-file x.pem".into(), b"junk".to_vec())],
            vec![ISSUER.into()],
            vec![],
        )
        .expect_err("junk");
        assert!(
            e.starts_with("--service-account-key-file x.pem: not a PEM public key"),
            "{e}"
        );
        let e = Keys::new(None, &[], vec![], vec![]).expect_err("no issuer");
        assert!(e.contains("--service-account-issuer"), "{e}");
    }
}
