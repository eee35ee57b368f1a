//! The `ResourceQuota` admission plugin (upstream's `pkg/admission/plugin/resourcequota`): a
//! create in a namespace with quotas is charged before it is stored. What the object uses
//! (`kubestore_apimachinery::quota::usage`: `count/<resource>`, the legacy counts, pods'
//! compute) is added to each quota's `status.used` that limits it; a quota it would exceed
//! refuses the request (403, `exceeded quota: NAME, requested: ..., used: ..., limited: ...`);
//! otherwise the new `used` is written to the quota's status **before** the object, with the
//! quota's resourceVersion as the precondition, so concurrent creates never overshoot: a
//! charge that lost the race reads the quota again and is decided again (upstream's quota
//! evaluator does the same).
//!
//! - The quotas are followed by watch (`kinds::resource_quota::follow`): a namespace without
//!   any costs a map lookup.
//! - Charges in one namespace are made one at a time in this process (a per-namespace lock,
//!   waited on no longer than the request's deadline), so its own requests do not conflict;
//!   several registry-svc processes stay correct through the precondition.
//! - A quota whose status the controller has not yet written (no `status.hard`) refuses what it
//!   limits (`status unknown for quota`), as upstream.
//! - Dry runs are checked, not charged. Only creates are charged (upstream also charges pod
//!   updates that change resources, which kubestore's Pods do not allow). A charge is released
//!   by the controller-manager's next recomputation after the object goes (or after a create
//!   that failed past admission), as upstream's replenishment.

use std::{
    collections::{BTreeMap, HashMap},
    sync::{Arc, Mutex, OnceLock, RwLock},
};

use kubestore_apimachinery::quota::{self, Usage};
use serde_json::Value;

use super::{Operation, Request};
use crate::error::ApiError;

/// A quota as admission holds it.
#[derive(Debug, Clone, Default)]
pub struct Quota {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// The resourceVersion its status was read at.
    pub resource_version: String,
    /// `spec.scopes`.
    pub scopes: Vec<String>,
    /// `spec.hard` (what the quota limits, before the controller has written a status).
    pub spec_hard: BTreeMap<String, String>,
    /// `status.hard`; None until the controller wrote a status.
    pub hard: Option<BTreeMap<String, String>>,
    /// `status.used`.
    pub used: BTreeMap<String, String>,
}

/// Reads and charges quotas in storage (the quota kind's Store implements it; admission sits
/// below the Stores).
#[tonic::async_trait]
pub trait Charger: Send + Sync + 'static {
    /// The quota as stored now.
    async fn get(&self, namespace: &str, name: &str) -> Result<Quota, ApiError>;
    /// Writes `used` as the quota's `status.used` if its resourceVersion is still the one
    /// `quota` was read at (a Conflict otherwise).
    async fn charge(&self, quota: &Quota, used: BTreeMap<String, String>) -> Result<(), ApiError>;
}

/// How many times a charge that lost a race is decided again.
const ATTEMPTS: usize = 20;

/// The quotas of every namespace, and how to charge them.
#[derive(Default)]
pub struct Quotas {
    /// Read on every create (a shared lock), written as the watch delivers changes.
    by_namespace: RwLock<HashMap<String, BTreeMap<String, Quota>>>,
    charger: OnceLock<Arc<dyn Charger>>,
    locks: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl std::fmt::Debug for Quotas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Quotas").finish_non_exhaustive()
    }
}

fn parse(m: &BTreeMap<String, String>) -> Usage {
    let json: serde_json::Map<String, Value> = m
        .iter()
        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
        .collect();
    quota::parse_map(&json)
}

fn written(u: &Usage) -> BTreeMap<String, String> {
    match quota::to_json(u) {
        Value::Object(m) => m
            .into_iter()
            .filter_map(|(k, v)| Some((k, v.as_str()?.to_string())))
            .collect(),
        _ => BTreeMap::new(),
    }
}

impl Quotas {
    /// Where charges are written (set once, at start).
    pub fn start(&self, charger: Arc<dyn Charger>) {
        let _ = self.charger.set(charger);
    }

    fn map(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<String, BTreeMap<String, Quota>>> {
        self.by_namespace.write().unwrap_or_else(|p| p.into_inner())
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<String, BTreeMap<String, Quota>>> {
        self.by_namespace.read().unwrap_or_else(|p| p.into_inner())
    }

    /// Records a quota (created or changed).
    pub fn set(&self, q: Quota) {
        self.map()
            .entry(q.namespace.clone())
            .or_default()
            .insert(q.name.clone(), q);
    }

    /// Forgets a quota.
    pub fn remove(&self, q: &Quota) {
        let mut map = self.map();
        if let Some(m) = map.get_mut(&q.namespace) {
            m.remove(&q.name);
            if m.is_empty() {
                map.remove(&q.namespace);
                // Its charge lock goes too, unless a charge holds it now.
                let mut locks = self.locks.lock().unwrap_or_else(|p| p.into_inner());
                if locks
                    .get(&q.namespace)
                    .is_some_and(|l| Arc::strong_count(l) == 1)
                {
                    locks.remove(&q.namespace);
                }
            }
        }
    }

    /// Replaces every quota (after a list).
    pub fn reset(&self, all: impl IntoIterator<Item = Quota>) {
        let mut next: HashMap<String, BTreeMap<String, Quota>> = HashMap::new();
        for q in all {
            next.entry(q.namespace.clone())
                .or_default()
                .insert(q.name.clone(), q);
        }
        *self.map() = next;
    }

    /// Whether `request` may be charged: a create in a namespace with quotas.
    pub fn interested(&self, request: &Request<'_>) -> bool {
        request.operation == Operation::Create
            && request.subresource.is_empty()
            && !request.namespace.is_empty()
            && self.read().contains_key(request.namespace)
    }

    fn lock(&self, namespace: &str) -> Arc<tokio::sync::Mutex<()>> {
        self.locks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(namespace.to_string())
            .or_default()
            .clone()
    }

    /// Charges `object`, which `request` creates, to the quotas of its namespace; the refusal
    /// when one would be exceeded.
    pub async fn charge(&self, request: &Request<'_>, object: &Value) -> Result<(), ApiError> {
        let delta = quota::usage(request.group, request.resource, object);
        if delta.is_empty() {
            return Ok(());
        }
        let is_pod = request.group.is_empty() && request.resource == "pods";
        let limiting: Vec<Quota> = self
            .read()
            .get(request.namespace)
            .map(|m| {
                m.values()
                    .filter(|q| {
                        // A scoped quota counts pods in its scopes only.
                        let in_scope = q.scopes.is_empty()
                            || (is_pod && quota::pod_in_scopes(object, &q.scopes));
                        if !in_scope {
                            return false;
                        }
                        // What it limits: its status's keys, or its spec's before the
                        // controller wrote a status (then refused below, as upstream).
                        q.hard.as_ref().unwrap_or(&q.spec_hard).keys().any(|k| {
                            delta.contains_key(k)
                                && quota::charges(request.group, request.resource, k)
                        })
                    })
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        if limiting.is_empty() {
            return Ok(());
        }
        let lock = self.lock(request.namespace);
        let _held = match crate::store::deadline() {
            Some(d) => tokio::time::timeout_at(d.into(), lock.lock())
                .await
                .map_err(|_| ApiError::Unavailable {
                    reason: "Timeout",
                    message: "the request's deadline passed while waiting to charge its quota"
                        .into(),
                })?,
            None => lock.lock().await,
        };
        for q in limiting {
            self.charge_one(request, q, &delta).await?;
        }
        Ok(())
    }

    /// Charges one quota, reading it again after each lost race.
    async fn charge_one(
        &self,
        request: &Request<'_>,
        mut q: Quota,
        delta: &Usage,
    ) -> Result<(), ApiError> {
        let Some(charger) = self.charger.get() else {
            return Ok(());
        };
        for attempt in 0..ATTEMPTS {
            if attempt > 0 {
                q = charger.get(&q.namespace, &q.name).await?;
                self.set(q.clone());
            }
            let Some(hard) = &q.hard else {
                // Upstream: a quota the controller has not observed yet refuses.
                let keys: Vec<&str> = delta
                    .keys()
                    .filter(|k| q.spec_hard.contains_key(*k))
                    .map(String::as_str)
                    .collect();
                return Err(refused(
                    request,
                    format!(
                        "status unknown for quota: {}, resources: {}",
                        q.name,
                        keys.join(",")
                    ),
                ));
            };
            // Only the keys this quota limits are charged to it.
            let hard = parse(hard);
            let touched: Usage = delta
                .iter()
                .filter(|(k, _)| hard.contains_key(*k))
                .map(|(k, v)| (k.clone(), *v))
                .collect();
            if touched.is_empty() {
                return Ok(());
            }
            let used = quota::check(&q.name, &hard, &parse(&q.used), &touched)
                .map_err(|m| refused(request, m))?;
            if request.dry_run {
                return Ok(());
            }
            match charger.charge(&q, written(&used)).await {
                Ok(()) => return Ok(()),
                Err(ApiError::Conflict { .. }) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(ApiError::Conflict {
            resource: "resourcequotas".into(),
            name: q.name,
            message: "too many concurrent writes to the quota; try again".into(),
        })
    }
}

/// Upstream's `admission.NewForbidden` of the quota plugin.
fn refused(request: &Request<'_>, why: String) -> ApiError {
    ApiError::Rejected {
        reason: "Forbidden",
        group: request.group.to_string(),
        resource: request.resource.to_string(),
        name: request.name.to_string(),
        message: why,
    }
}
