//! The ServiceAccount token authenticator (upstream's `serviceaccount.JWTTokenAuthenticator`
//! with its `validator`): a bearer token that is a JWT verified by `super::token::Keys` is the
//! user `system:serviceaccount:NS:NAME` (uid the account's; groups `system:serviceaccounts`,
//! `system:serviceaccounts:NS`; extra `authentication.kubernetes.io/pod-name`, `pod-uid` and
//! `credential-id` as upstream), **if the account still exists with the uid the token names**,
//! and, for a bound token, the Pod or Secret too. A deleted account or object ends its tokens;
//! one recreated under the same name has another uid and does not revive them.
//!
//! Those reads go to the Stores (storage-svc's watch cache answers them), so a success is
//! cached for 10 s, as upstream's token cache does (`TokenSuccessCacheTTL`): a token outlives
//! its account or Pod by at most that. Failures are not cached. The cache is keyed by the
//! SHA-256 of the token (never the token) and bounded; when full it drops what has expired,
//! then everything.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use kubestore_proto::core::v1::{Pod, Secret, ServiceAccount};

use super::token::{Claims, Keys, Ref, Refused};
use crate::{
    authn::{Failure, UserInfo},
    error::ApiError,
    resource::Resource,
    store::{Ctx, Store},
};

/// How long a verified token's user is reused (upstream's `TokenSuccessCacheTTL`).
pub const SUCCESS_TTL: Duration = Duration::from_secs(10);
/// At most this many tokens are cached.
const CACHE_ENTRIES: usize = 10_000;
/// The deadline of each look-up.
const LOOKUP_TIMEOUT: Duration = Duration::from_secs(5);

/// Where the authenticator reads accounts and bound objects.
#[derive(Clone)]
pub struct Getter {
    /// ServiceAccounts.
    pub service_accounts: Store<ServiceAccount>,
    /// Pods (bound tokens).
    pub pods: Store<Pod>,
    /// Secrets (bound tokens).
    pub secrets: Store<Secret>,
}

/// The authenticator.
pub struct TokenAuthenticator {
    keys: Arc<Keys>,
    getter: Getter,
    cache: Mutex<HashMap<[u8; 32], (UserInfo, Instant)>>,
}

impl std::fmt::Debug for TokenAuthenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenAuthenticator")
            .field("keys", &self.keys)
            .finish_non_exhaustive()
    }
}

/// The uid of a read object; `Ok(None)` when it is gone (absent, or deleted before the
/// leeway: upstream's `invalidIfDeletedBefore`), an error when the read failed.
async fn uid_of<R: Resource>(
    store: &Store<R>,
    namespace: &str,
    name: &str,
) -> Result<Option<String>, Failure> {
    match store
        .get(Ctx::within(LOOKUP_TIMEOUT), namespace, name)
        .await
    {
        Ok(obj) => {
            let meta = obj.meta();
            let deleted = meta
                .and_then(|m| m.deletion_timestamp.as_ref())
                .is_some_and(|t| {
                    t.seconds < super::token::now() - super::token::LEEWAY_SECONDS as i64
                });
            Ok((!deleted).then(|| meta.map(|m| m.uid.clone()).unwrap_or_default()))
        }
        Err(ApiError::NotFound { .. }) => Ok(None),
        Err(e) => Err(Failure::Unavailable(format!(
            "cannot read {} {namespace}/{name} to authenticate a ServiceAccount token: {e}",
            R::RESOURCE
        ))),
    }
}

impl TokenAuthenticator {
    /// Tokens verified by `keys`, accounts read through `getter`.
    pub fn new(keys: Arc<Keys>, getter: Getter) -> Self {
        Self {
            keys,
            getter,
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// The user of `token`: `None` when it is no JWT (not this authenticator's), else the
    /// account's user or why not.
    pub async fn authenticate(&self, token: &str) -> Option<Result<UserInfo, Failure>> {
        let key: [u8; 32] = ring::digest::digest(&ring::digest::SHA256, token.as_bytes())
            .as_ref()
            .try_into()
            .ok()?;
        let now = Instant::now();
        if let Some((user, until)) = self.cache.lock().ok()?.get(&key)
            && *until > now
        {
            return Some(Ok(user.clone()));
        }
        let claims = match self.keys.verify(token) {
            Ok(claims) => claims,
            Err(Refused::NotJwt) => return None,
            Err(Refused::Invalid(why)) => {
                tracing::debug!(%why, "ServiceAccount token refused");
                return Some(Err(Failure::Unauthorized("invalid bearer token")));
            }
        };
        let user = match self.check(&claims).await {
            Ok(user) => user,
            Err(e) => return Some(Err(e)),
        };
        // Never cached past the token's own expiry.
        let left = Duration::from_secs(
            (claims.exp + super::token::LEEWAY_SECONDS as i64 - super::token::now()).max(0) as u64,
        );
        if let Ok(mut cache) = self.cache.lock() {
            if cache.len() >= CACHE_ENTRIES {
                cache.retain(|_, (_, until)| *until > now);
                if cache.len() >= CACHE_ENTRIES {
                    cache.clear();
                }
            }
            cache.insert(key, (user.clone(), now + SUCCESS_TTL.min(left)));
        }
        Some(Ok(user))
    }

    /// Upstream's validator: the account with the token's uid, and the bound object with its.
    async fn check(&self, claims: &Claims) -> Result<UserInfo, Failure> {
        let k = &claims.kubernetes;
        let ns = k.namespace.as_str();
        let invalid = |why: &str| {
            tracing::debug!(namespace = ns, account = %k.serviceaccount.name, why, "ServiceAccount token refused");
            Err(Failure::Unauthorized("invalid bearer token"))
        };
        match uid_of(&self.getter.service_accounts, ns, &k.serviceaccount.name).await? {
            None => return invalid("the service account is gone"),
            Some(uid) if uid != k.serviceaccount.uid => {
                return invalid("the service account's uid does not match the token's");
            }
            Some(_) => {}
        }
        let bound = |r: &Option<Ref>| r.as_ref().map(|r| (r.name.clone(), r.uid.clone()));
        if let Some((name, uid)) = bound(&k.secret)
            && uid_of(&self.getter.secrets, ns, &name).await?.as_deref() != Some(uid.as_str())
        {
            return invalid("the token's secret is gone");
        }
        if let Some((name, uid)) = bound(&k.pod)
            && uid_of(&self.getter.pods, ns, &name).await?.as_deref() != Some(uid.as_str())
        {
            return invalid("the token's pod is gone");
        }
        Ok(user_of(claims))
    }
}

/// The user a verified token names (upstream's `ServiceAccountInfo.UserInfo`).
pub fn user_of(claims: &Claims) -> UserInfo {
    let k = &claims.kubernetes;
    let mut extra = std::collections::BTreeMap::new();
    if let Some(pod) = &k.pod {
        extra.insert(
            "authentication.kubernetes.io/pod-name".to_string(),
            vec![pod.name.clone()],
        );
        extra.insert(
            "authentication.kubernetes.io/pod-uid".to_string(),
            vec![pod.uid.clone()],
        );
    }
    if !claims.jti.is_empty() {
        extra.insert(
            "authentication.kubernetes.io/credential-id".to_string(),
            vec![format!("JTI={}", claims.jti)],
        );
    }
    UserInfo {
        name: claims.sub.clone(),
        uid: k.serviceaccount.uid.clone(),
        groups: crate::authn::service_account_groups(&k.namespace),
        extra,
    }
}
