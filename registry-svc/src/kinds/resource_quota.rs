//! core/v1 ResourceQuota's strategy (upstream's `pkg/registry/core/resourcequota`): namespaced;
//! Update writes the spec (status comes from the stored quota), the status subresource writes
//! status only (the controller-manager's recomputations and admission's charges); validation
//! is upstream's `ValidateResourceQuota` (resource names, non-negative quantities, integers
//! for object counts, known scopes). Its Table is kubectl's NAME AGE REQUEST LIMIT.
//!
//! The quotas reach admission through [`follow`] (`admission::quota`), and admission charges
//! them through [`Charger`], which writes a quota's status with its resourceVersion as the
//! precondition.

use std::collections::BTreeMap;

use kubestore_apimachinery::{
    quantity::Quantity,
    table::{Column, NAME_DESCRIPTION, age},
};
use kubestore_proto::core::v1::{ResourceQuota, ResourceQuotaSpec, ResourceQuotaStatus};
use serde_json::{Value, json};

use super::printers::{age_col, col, created, meta_name};
use crate::{
    admission::quota::{Charger as ChargerTrait, Quota},
    error::ApiError,
    store::{Ctx, Store},
    strategy::Strategy,
    validation::qualified_name,
    violations::Violations,
};

/// ResourceQuotas.
#[derive(Debug, Default, Clone)]
pub struct ResourceQuotaStrategy;

/// Upstream's standard quota scopes.
const SCOPES: &[&str] = &[
    "Terminating",
    "NotTerminating",
    "BestEffort",
    "NotBestEffort",
    "PriorityClass",
    "CrossNamespacePodAffinity",
];

/// Whether `name` is counted in whole objects or other integers (upstream's
/// `IsIntegerResourceName`: what is not compute, storage or hugepages).
fn integer_resource(name: &str) -> bool {
    let compute = [
        "cpu",
        "memory",
        "ephemeral-storage",
        "storage",
        "requests.cpu",
        "requests.memory",
        "requests.ephemeral-storage",
        "requests.storage",
        "limits.cpu",
        "limits.memory",
        "limits.ephemeral-storage",
    ];
    !(compute.contains(&name)
        || name.starts_with("hugepages-")
        || name.starts_with("requests.hugepages-")
        || name.ends_with(".storageclass.storage.k8s.io/requests.storage"))
}

/// Upstream's `ValidateResourceQuantityValue` and name rules for one map of `path`.
fn resources(map: &BTreeMap<String, String>, path: &str, v: &mut Violations) {
    for (k, q) in map {
        let at = format!("{path}[{k}]");
        if let Some(e) = qualified_name(k) {
            v.push((at.clone(), format!("Invalid value: {k:?}: {e}")));
        }
        match Quantity::parse(q) {
            Err(e) => v.push((at, format!("Invalid value: {q:?}: {e}"))),
            Ok(n) if n < Quantity::ZERO => v.push((
                at,
                format!("Invalid value: {q:?}: must be greater than or equal to 0"),
            )),
            Ok(n) if integer_resource(k) && !n.is_integer() => {
                v.push((at, format!("Invalid value: {q:?}: must be an integer")))
            }
            Ok(_) => {}
        }
    }
}

fn spec(s: &ResourceQuotaSpec, v: &mut Violations) {
    resources(&s.hard, "spec.hard", v);
    for (i, scope) in s.scopes.iter().enumerate() {
        if !SCOPES.contains(&scope.as_str()) {
            v.push((
                format!("spec.scopes[{i}]"),
                format!("Invalid value: {scope:?}: unsupported scope"),
            ));
        }
    }
    if let Some(sel) = &s.scope_selector {
        for (i, e) in sel.match_expressions.iter().enumerate() {
            let at = format!("spec.scopeSelector.matchExpressions[{i}]");
            if !SCOPES.contains(&e.scope_name.as_str()) {
                v.push((
                    format!("{at}.scopeName"),
                    format!("Invalid value: {:?}: unsupported scope", e.scope_name),
                ));
            }
            if !matches!(
                e.operator.as_str(),
                "In" | "NotIn" | "Exists" | "DoesNotExist"
            ) {
                v.push((
                    format!("{at}.operator"),
                    format!(
                        "Invalid value: {:?}: not a valid selector operator",
                        e.operator
                    ),
                ));
            }
        }
    }
}

impl Strategy<ResourceQuota> for ResourceQuotaStrategy {
    fn prepare_for_create(&self, q: &mut ResourceQuota) {
        q.status = None;
    }
    fn validate(&self, q: &ResourceQuota) -> Violations {
        let mut v = Violations::new();
        spec(&q.spec.clone().unwrap_or_default(), &mut v);
        v
    }
    fn prepare_for_update(&self, new: &mut ResourceQuota, old: &ResourceQuota) {
        new.status = old.status.clone();
    }
    fn validate_update(&self, new: &ResourceQuota, _old: &ResourceQuota) -> Violations {
        self.validate(new)
    }
    fn has_status(&self) -> bool {
        true
    }
    fn prepare_for_status_update(&self, new: &mut ResourceQuota, old: &ResourceQuota) {
        let status = new.status.take();
        *new = old.clone();
        new.status = status;
    }
    fn validate_status_update(&self, new: &ResourceQuota, _old: &ResourceQuota) -> Violations {
        let mut v = Violations::new();
        let s = new.status.clone().unwrap_or_default();
        resources(&s.hard, "status.hard", &mut v);
        resources(&s.used, "status.used", &mut v);
        v
    }
    fn columns(&self) -> Vec<Column> {
        vec![
            Column::new("Name", "string", "name", 0, NAME_DESCRIPTION),
            age_col(),
            col(
                "Request",
                "string",
                0,
                "Request represents a minimum amount of cpu/memory that a container may consume.",
            ),
            col(
                "Limit",
                "string",
                0,
                "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.",
            ),
        ]
    }
    fn cells(&self, q: &ResourceQuota, now: i64) -> Vec<Value> {
        // kubectl's: `used/hard` per resource, limits.* in LIMIT, the rest in REQUEST.
        let status = q.status.clone().unwrap_or_default();
        let (mut request, mut limit) = (Vec::new(), Vec::new());
        for (k, hard) in &status.hard {
            let used = status.used.get(k).map_or("0", String::as_str);
            let cell = format!("{k}: {used}/{hard}");
            if k.starts_with("limits.") {
                limit.push(cell);
            } else {
                request.push(cell);
            }
        }
        vec![
            json!(meta_name(&q.metadata)),
            json!(age(created(&q.metadata), now)),
            json!(request.join(", ")),
            json!(limit.join(", ")),
        ]
    }
}

fn as_quota(q: &ResourceQuota) -> Quota {
    let meta = q.metadata.clone().unwrap_or_default();
    let spec = q.spec.clone().unwrap_or_default();
    let status = q.status.clone();
    Quota {
        namespace: meta.namespace,
        name: meta.name,
        resource_version: meta.resource_version,
        scopes: spec.scopes,
        spec_hard: spec.hard,
        hard: status.as_ref().map(|s| s.hard.clone()),
        used: status.map(|s| s.used).unwrap_or_default(),
    }
}

/// Charges quotas by writing their status through the status subresource.
pub struct Charger(pub Store<ResourceQuota>);

#[tonic::async_trait]
impl ChargerTrait for Charger {
    async fn get(&self, namespace: &str, name: &str) -> Result<Quota, ApiError> {
        let ctx = Ctx::within(std::time::Duration::from_secs(10));
        self.0.get(ctx, namespace, name).await.map(|q| as_quota(&q))
    }

    async fn charge(&self, quota: &Quota, used: BTreeMap<String, String>) -> Result<(), ApiError> {
        // The status subresource keeps everything but the status from the stored quota; the
        // resourceVersion admission read is the precondition (a Conflict means another charge
        // came first).
        let q = ResourceQuota {
            metadata: Some(kubestore_proto::meta::v1::ObjectMeta {
                name: quota.name.clone(),
                namespace: quota.namespace.clone(),
                resource_version: quota.resource_version.clone(),
                ..Default::default()
            }),
            spec: None,
            status: Some(ResourceQuotaStatus {
                hard: quota.hard.clone().unwrap_or_default(),
                used,
            }),
        };
        let ctx = Ctx::within(std::time::Duration::from_secs(10));
        self.0
            .update_status(ctx, &quota.namespace, q, false)
            .await
            .map(|_| ())
    }
}

/// Follows the quotas into admission (`admission::quota::Quotas`) until `stop`.
pub async fn follow(store: Store<ResourceQuota>, stop: tokio::sync::watch::Receiver<bool>) {
    use crate::follow::Change;
    let into = store.storage.admission.quotas.clone();
    crate::follow::follow(store, stop, move |change| match change {
        Change::Reset(all) => into.reset(all.iter().map(as_quota)),
        Change::Put(q) => into.set(as_quota(&q)),
        Change::Gone(q) => into.remove(&as_quota(&q)),
    })
    .await
}
