//! Upstream's bootstrap policy (`bootstrap.json`, see `bootstrap.md` for its source), created at
//! start and reconciled as kube-apiserver's `rbac/bootstrap-roles` post-start hook does
//! (`reconciliation.ReconcileRoleOperation`, in union mode): a missing role or binding is
//! created; one annotated `rbac.authorization.kubernetes.io/autoupdate: "false"` is left as an
//! administrator made it; otherwise missing rules, aggregation selectors and subjects are
//! added (nothing is removed) and upstream's labels and annotations merged in, the stored ones
//! winning. A binding whose roleRef differs is deleted and created again (roleRef is
//! immutable). Every replica runs it as the registry itself; conflicts with another replica are
//! retried.

use std::{collections::BTreeMap, time::Duration};

use kubestore_proto::{
    meta::v1::ObjectMeta,
    rbac::v1::{ClusterRole, ClusterRoleBinding},
};
use prost::Message;
use serde_json::Value;

use super::rules;
use crate::{
    error::ApiError,
    store::{Ctx, Store, update::Part},
};

const AUTOUPDATE: &str = "rbac.authorization.kubernetes.io/autoupdate";

/// The policy's objects.
pub struct Policy {
    /// The cluster roles.
    pub cluster_roles: Vec<ClusterRole>,
    /// Their bindings.
    pub cluster_role_bindings: Vec<ClusterRoleBinding>,
}

/// The bootstrap policy, decoded from the embedded JSON through the registry's codec (a
/// failure is a bug of the data: the unit test below decodes it).
pub fn policy() -> Result<Policy, String> {
    let data: Value = serde_json::from_str(include_str!("bootstrap.json"))
        .map_err(|e| format!("bootstrap.json: {e}"))?;
    let codec = crate::catalog::codec();
    fn decode<M: Message + Default>(
        codec: &kubestore_apimachinery::json::Codec,
        message: &str,
        items: &Value,
    ) -> Result<Vec<M>, String> {
        let mut out = Vec::new();
        for item in items.as_array().into_iter().flatten() {
            let mut unknown = Vec::new();
            let bytes = codec
                .decode(message, item, &["apiVersion", "kind"], &mut unknown)
                .map_err(|e| format!("bootstrap.json: {message}: {e}"))?;
            if !unknown.is_empty() {
                return Err(format!(
                    "bootstrap.json: {message}: unknown fields {unknown:?}"
                ));
            }
            out.push(M::decode(bytes.as_slice()).map_err(|e| e.to_string())?);
        }
        Ok(out)
    }
    Ok(Policy {
        cluster_roles: decode(&codec, ".rbac.v1.ClusterRole", &data["clusterRoles"])?,
        cluster_role_bindings: decode(
            &codec,
            ".rbac.v1.ClusterRoleBinding",
            &data["clusterRoleBindings"],
        )?,
    })
}

fn ctx() -> Ctx {
    Ctx::within(Duration::from_secs(10))
}

fn autoupdate(meta: &Option<ObjectMeta>) -> bool {
    meta.as_ref()
        .and_then(|m| m.annotations.get(AUTOUPDATE))
        .is_none_or(|v| v != "false")
}

/// Upstream's labels and annotations under the stored ones.
fn merged_meta(stored: &mut Option<ObjectMeta>, expected: &Option<ObjectMeta>) {
    let (Some(stored), Some(expected)) = (stored.as_mut(), expected.as_ref()) else {
        return;
    };
    let merge = |have: &mut BTreeMap<String, String>, want: &BTreeMap<String, String>| {
        for (k, v) in want {
            have.entry(k.clone()).or_insert_with(|| v.clone());
        }
    };
    merge(&mut stored.labels, &expected.labels);
    merge(&mut stored.annotations, &expected.annotations);
}

/// `stored` reconciled with `expected`, or None when nothing changes.
fn reconcile_role(stored: &ClusterRole, expected: &ClusterRole) -> Option<ClusterRole> {
    if !autoupdate(&stored.metadata) {
        return None;
    }
    let mut out = stored.clone();
    merged_meta(&mut out.metadata, &expected.metadata);
    // An aggregated role's rules are the aggregation's (`rbac::aggregation`), not the policy's.
    if expected.aggregation_rule.is_none() || stored.aggregation_rule.is_none() {
        out.rules
            .extend(rules::uncovered(&stored.rules, &expected.rules));
    }
    if let Some(want) = &expected.aggregation_rule {
        let have = out.aggregation_rule.get_or_insert_with(Default::default);
        for selector in &want.cluster_role_selectors {
            if !have.cluster_role_selectors.contains(selector) {
                have.cluster_role_selectors.push(selector.clone());
            }
        }
    }
    (out != *stored).then_some(out)
}

/// What to do with a stored binding.
enum BindingChange {
    Update(Box<ClusterRoleBinding>),
    Recreate,
}

fn reconcile_binding(
    stored: &ClusterRoleBinding,
    expected: &ClusterRoleBinding,
) -> Option<BindingChange> {
    if !autoupdate(&stored.metadata) {
        return None;
    }
    if stored.role_ref != expected.role_ref {
        return Some(BindingChange::Recreate);
    }
    let mut out = stored.clone();
    merged_meta(&mut out.metadata, &expected.metadata);
    for s in &expected.subjects {
        if !out.subjects.contains(s) {
            out.subjects.push(s.clone());
        }
    }
    (out != *stored).then(|| BindingChange::Update(Box::new(out)))
}

fn name(meta: &Option<ObjectMeta>) -> &str {
    meta.as_ref().map_or("", |m| m.name.as_str())
}

async fn ensure_role(store: &Store<ClusterRole>, expected: &ClusterRole) -> Result<(), ApiError> {
    match store.get(ctx(), "", name(&expected.metadata)).await {
        Err(ApiError::NotFound { .. }) => store
            .create(ctx(), "", expected.clone(), false)
            .await
            .map(drop),
        Ok(stored) => match reconcile_role(&stored, expected) {
            Some(updated) => store
                .update_in(ctx(), "", updated, false, Part::Main)
                .await
                .map(drop),
            None => Ok(()),
        },
        Err(e) => Err(e),
    }
}

async fn ensure_binding(
    store: &Store<ClusterRoleBinding>,
    expected: &ClusterRoleBinding,
) -> Result<(), ApiError> {
    let n = name(&expected.metadata);
    match store.get(ctx(), "", n).await {
        Err(ApiError::NotFound { .. }) => store
            .create(ctx(), "", expected.clone(), false)
            .await
            .map(drop),
        Ok(stored) => match reconcile_binding(&stored, expected) {
            Some(BindingChange::Update(updated)) => store
                .update_in(ctx(), "", *updated, false, Part::Main)
                .await
                .map(drop),
            Some(BindingChange::Recreate) => {
                store.delete(ctx(), "", n, None).await?;
                store
                    .create(ctx(), "", expected.clone(), false)
                    .await
                    .map(drop)
            }
            None => Ok(()),
        },
        Err(e) => Err(e),
    }
}

/// Creates and reconciles `policy` until every object is done (retrying storage failures and
/// conflicts with a bounded backoff), or `stop`.
pub async fn reconcile(
    policy: &Policy,
    roles: &Store<ClusterRole>,
    bindings: &Store<ClusterRoleBinding>,
    stop: &tokio::sync::watch::Receiver<bool>,
) {
    let mut backoff = Duration::from_millis(100);
    loop {
        if *stop.borrow() {
            return;
        }
        let mut failed = None;
        for r in &policy.cluster_roles {
            if let Err(e) = ensure_role(roles, r).await {
                failed = Some(format!("clusterrole {:?}: {e}", name(&r.metadata)));
            }
        }
        for b in &policy.cluster_role_bindings {
            if let Err(e) = ensure_binding(bindings, b).await {
                failed = Some(format!("clusterrolebinding {:?}: {e}", name(&b.metadata)));
            }
        }
        match failed {
            None => return,
            Some(why) => {
                tracing::debug!(error = %why, "RBAC bootstrap policy: retrying");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(5));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubestore_proto::rbac::v1::PolicyRule;

    #[test]
    fn the_policy_decodes_with_upstreams_roles() {
        let p = policy().expect("the embedded policy decodes");
        let role = |n: &str| {
            p.cluster_roles
                .iter()
                .find(|r| name(&r.metadata) == n)
                .unwrap_or_else(|| panic!("{n}"))
        };
        assert_eq!(
            role("cluster-admin").rules[0].verbs,
            ["*"],
            "cluster-admin may do everything"
        );
        assert!(role("view").aggregation_rule.is_some());
        assert!(role("view").rules.is_empty());
        assert!(
            p.cluster_role_bindings
                .iter()
                .any(|b| name(&b.metadata) == "cluster-admin"
                    && b.subjects.iter().any(|s| s.name == "system:masters"))
        );
    }

    #[test]
    fn reconciling_adds_and_never_removes() {
        let p = policy().expect("policy");
        let expected = p
            .cluster_roles
            .iter()
            .find(|r| name(&r.metadata) == "system:basic-user")
            .expect("basic-user")
            .clone();
        let mut stored = expected.clone();
        stored.rules = vec![PolicyRule {
            verbs: vec!["get".into()],
            api_groups: vec!["".into()],
            resources: vec!["configmaps".into()],
            ..Default::default()
        }];
        let updated = reconcile_role(&stored, &expected).expect("rules were missing");
        assert_eq!(
            updated.rules[0], stored.rules[0],
            "an administrator's rule stays"
        );
        assert!(rules::uncovered(&updated.rules, &expected.rules).is_empty());
        assert!(
            reconcile_role(&updated, &expected).is_none(),
            "then nothing changes"
        );
        stored
            .metadata
            .get_or_insert_with(Default::default)
            .annotations
            .insert(AUTOUPDATE.into(), "false".into());
        assert!(
            reconcile_role(&stored, &expected).is_none(),
            "autoupdate false is kept"
        );
    }
}
