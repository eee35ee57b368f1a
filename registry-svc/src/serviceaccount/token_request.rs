//! TokenRequest, the `serviceaccounts/NAME/token` subresource (upstream's
//! `pkg/registry/core/serviceaccount/storage/token.go`, `kubectl create token`): a token for
//! an existing ServiceAccount, for the audiences asked (default `--api-audiences`), valid
//! `spec.expirationSeconds` (default 3600; at least 600 and at most 2^32, upstream's bounds and
//! words; shortened to `--service-account-max-token-expiration` when longer), optionally bound
//! to a Pod (which must run as that account) or a Secret of its namespace: the token then ends
//! with that object (`super::authenticator`). Nothing is stored; the answer is the request with
//! `status.token` and `status.expirationTimestamp`.
//!
//! Not built (README deviations): upstream's 3607 s "warn-only" extension to a year for
//! pod-bound tokens, and binding to a Node (kubestore has no Nodes).

use std::{sync::Arc, time::Duration};

use serde_json::{Value, json};

use super::{
    authenticator::Getter,
    token::{Claims, Keys, Kubernetes, Ref, now},
};
use crate::{error::ApiError, resource::Resource, store::Ctx};

/// Upstream's default `spec.expirationSeconds`.
pub const DEFAULT_EXPIRATION_SECONDS: i64 = 3600;
/// Upstream's shortest token (`minTokenAgeSec`).
const MIN_SECONDS: i64 = 10 * 60;
/// Upstream's longest token (`maxTokenAgeSec`).
const MAX_SECONDS: i64 = 1 << 32;

/// Issues tokens.
pub struct TokenIssuer {
    keys: Arc<Keys>,
    getter: Getter,
    max_expiration: Option<Duration>,
}

impl std::fmt::Debug for TokenIssuer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenIssuer")
            .field("keys", &self.keys)
            .finish_non_exhaustive()
    }
}

/// A TokenRequest's spec, as read from its JSON.
struct Spec {
    audiences: Vec<String>,
    expiration: i64,
    bound: Option<(String, String, String, String)>,
}

fn spec(request: &Value) -> Result<Spec, ApiError> {
    let bad = |m: &str| ApiError::BadRequest(format!("the TokenRequest does not decode: {m}"));
    if let Some(kind) = request.get("kind").and_then(Value::as_str)
        && !kind.is_empty()
        && kind != "TokenRequest"
    {
        return Err(bad(&format!("kind {kind:?}, not TokenRequest")));
    }
    let spec = request.get("spec").cloned().unwrap_or(json!({}));
    let audiences = match spec.get("audiences") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| {
                v.as_str()
                    .map(String::from)
                    .ok_or_else(|| bad("spec.audiences"))
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(bad("spec.audiences is not a list")),
    };
    let expiration = match spec.get("expirationSeconds") {
        None | Some(Value::Null) => DEFAULT_EXPIRATION_SECONDS,
        Some(v) => v
            .as_i64()
            .ok_or_else(|| bad("spec.expirationSeconds is not an integer"))?,
    };
    let bound = match spec.get("boundObjectRef") {
        None | Some(Value::Null) => None,
        Some(r) => {
            let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            Some((s("kind"), s("apiVersion"), s("name"), s("uid")))
        }
    };
    Ok(Spec {
        audiences,
        expiration,
        bound,
    })
}

impl TokenIssuer {
    /// Tokens signed by `keys` for accounts read through `getter`.
    pub fn new(keys: Arc<Keys>, getter: Getter, max_expiration: Option<Duration>) -> Self {
        Self {
            keys,
            getter,
            max_expiration,
        }
    }

    /// The answer to `request` (a TokenRequest's JSON) for account `name` in `namespace`.
    pub async fn issue(
        &self,
        namespace: &str,
        name: &str,
        request: Value,
    ) -> Result<Value, ApiError> {
        let mut spec = spec(&request)?;
        let ctx = || Ctx::within(crate::store::DEFAULT_REQUEST_TIMEOUT);
        let account = self
            .getter
            .service_accounts
            .get(ctx(), namespace, name)
            .await?;
        if spec.audiences.is_empty() {
            spec.audiences = self.keys.audiences().to_vec();
        }
        // Upstream's ValidateTokenRequest.
        let mut violations = Vec::new();
        if spec.expiration < MIN_SECONDS {
            violations.push((
                "spec.expirationSeconds".to_string(),
                format!(
                    "Invalid value: {}: may not specify a duration less than 10 minutes",
                    spec.expiration
                ),
            ));
        }
        if spec.expiration > MAX_SECONDS {
            violations.push((
                "spec.expirationSeconds".to_string(),
                "Too long: may not specify a duration larger than 2^32 seconds".to_string(),
            ));
        }
        if !violations.is_empty() {
            return Err(ApiError::invalid(
                "TokenRequest.authentication.k8s.io",
                "",
                violations,
            ));
        }
        let mut kubernetes = Kubernetes {
            namespace: namespace.to_string(),
            serviceaccount: Ref {
                name: name.to_string(),
                uid: account.meta().map(|m| m.uid.clone()).unwrap_or_default(),
            },
            ..Default::default()
        };
        if let Some((kind, api_version, object, uid)) = &spec.bound {
            let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
            let found_uid = match (group, kind.as_str()) {
                ("", "Pod") => {
                    let pod = self.getter.pods.get(ctx(), namespace, object).await?;
                    // kubestore has no ServiceAccount admission to default it: an empty
                    // serviceAccountName runs as `default`, as that admission would make it.
                    let runs_as = pod
                        .spec
                        .as_ref()
                        .map(|s| s.service_account_name.as_str())
                        .filter(|s| !s.is_empty())
                        .unwrap_or("default");
                    if runs_as != name {
                        return Err(ApiError::BadRequest(format!(
                            "cannot bind token for serviceaccount {name:?} to pod running with different serviceaccount name."
                        )));
                    }
                    let uid = pod.meta().map(|m| m.uid.clone()).unwrap_or_default();
                    kubernetes.pod = Some(Ref {
                        name: object.clone(),
                        uid: uid.clone(),
                    });
                    uid
                }
                ("", "Secret") => {
                    let secret = self.getter.secrets.get(ctx(), namespace, object).await?;
                    let uid = secret.meta().map(|m| m.uid.clone()).unwrap_or_default();
                    kubernetes.secret = Some(Ref {
                        name: object.clone(),
                        uid: uid.clone(),
                    });
                    uid
                }
                _ => {
                    return Err(ApiError::BadRequest(format!(
                        "cannot bind token to object of type {group}/{version}, Kind={kind}"
                    )));
                }
            };
            if !uid.is_empty() && *uid != found_uid {
                return Err(ApiError::Conflict {
                    resource: kind.clone(),
                    name: object.clone(),
                    message: format!(
                        "the UID in the bound object reference ({uid}) does not match the UID in record. The object might have been deleted and then recreated"
                    ),
                });
            }
        }
        if let Some(max) = self.max_expiration
            && spec.expiration > max.as_secs() as i64
        {
            tracing::info!(
                requested = spec.expiration,
                max = max.as_secs(),
                "token expiration shortened to --service-account-max-token-expiration"
            );
            spec.expiration = max.as_secs() as i64;
        }
        let now = now();
        let claims = Claims {
            aud: spec.audiences.clone(),
            exp: now + spec.expiration,
            iat: now,
            iss: self.keys.issuer().to_string(),
            jti: uuid::Uuid::new_v4().to_string(),
            nbf: now,
            sub: format!("system:serviceaccount:{namespace}:{name}"),
            kubernetes,
        };
        let token = self
            .keys
            .sign(&claims)
            .map_err(|e| ApiError::Internal(format!("cannot issue a token: {e}")))?;
        let mut out = request;
        if !out.is_object() {
            out = json!({});
        }
        out["kind"] = json!("TokenRequest");
        out["apiVersion"] = json!("authentication.k8s.io/v1");
        let meta = &mut out["metadata"];
        if !meta.is_object() {
            *meta = json!({});
        }
        if meta
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .is_empty()
        {
            meta["name"] = json!(name);
        }
        if meta
            .get("namespace")
            .and_then(Value::as_str)
            .unwrap_or("")
            .is_empty()
        {
            meta["namespace"] = json!(namespace);
        }
        meta["creationTimestamp"] = json!(rfc3339(now));
        let spec_out = &mut out["spec"];
        if !spec_out.is_object() {
            *spec_out = json!({});
        }
        spec_out["audiences"] = json!(spec.audiences);
        spec_out["expirationSeconds"] = json!(spec.expiration);
        out["status"] = json!({
            "token": token,
            "expirationTimestamp": rfc3339(now + spec.expiration),
        });
        Ok(out)
    }
}

/// Unix seconds as RFC 3339 (`metav1.Time`).
fn rfc3339(secs: i64) -> String {
    kubestore_apimachinery::time::format(secs, 0)
}
