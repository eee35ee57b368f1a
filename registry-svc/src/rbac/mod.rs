//! RBAC (`--authorization-mode RBAC`): upstream's RBAC authorizer
//! (`plugin/pkg/auth/authorizer/rbac`) over the four `rbac.authorization.k8s.io/v1` kinds.
//!
//! - [`index`]: roles and bindings in memory, bindings indexed by subject; followed from the
//!   Stores by four watches ([`start`]), so a decision never reads storage;
//! - [`rules`]: what a rule allows, what rules cover (escalation), label selectors;
//! - [`bootstrap`]: upstream's default roles and bindings, created and reconciled at start;
//! - this module: the authorizer, its readiness, the clusterrole aggregation, and what a user
//!   may do ([`Rbac::rules_for`], for escalation checks and SelfSubjectRulesReview).
//!
//! Until the four kinds are listed and the bootstrap policy is in place the authorizer is not
//! ready, and the gate answers 503 rather than a 403 from an empty cache.
//!
//! Aggregated ClusterRoles (`aggregationRule`: admin, edit, view) get the union of the rules of
//! the ClusterRoles their selectors pick, written back by every replica as upstream's
//! clusterrole-aggregation controller does in kube-controller-manager: here it runs in
//! registry-svc, beside the bootstrap policy it completes, so a stack without the
//! controller-manager still has working admin, edit and view roles (a README row).

pub mod bootstrap;
pub mod escalation;
pub mod index;
pub mod rules;

use std::sync::{
    Arc, RwLock,
    atomic::{AtomicBool, AtomicUsize, Ordering},
};

use kubestore_proto::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding};

use crate::{
    authn::UserInfo,
    authz::{Attributes, Authorizer, Decision},
    follow::{Change, follow},
    store::{Ctx, Store, update::Part},
};
use index::Index;

/// The RBAC authorizer.
pub struct Rbac {
    index: RwLock<Index>,
    /// Kinds listed at least once (of four).
    synced: AtomicUsize,
    bootstrapped: AtomicBool,
    /// Raised when a ClusterRole changed: aggregated roles may need new rules.
    aggregate: tokio::sync::Notify,
}

/// The four kinds' Stores.
#[derive(Clone)]
pub struct Stores {
    /// Roles.
    pub roles: Store<Role>,
    /// ClusterRoles.
    pub cluster_roles: Store<ClusterRole>,
    /// RoleBindings.
    pub role_bindings: Store<RoleBinding>,
    /// ClusterRoleBindings.
    pub cluster_role_bindings: Store<ClusterRoleBinding>,
}

impl Rbac {
    fn index(&self) -> std::sync::RwLockReadGuard<'_, Index> {
        self.index.read().unwrap_or_else(|p| p.into_inner())
    }

    fn update(&self, f: impl FnOnce(&mut Index)) {
        f(&mut self.index.write().unwrap_or_else(|p| p.into_inner()));
    }

    /// Every rule that applies to `user` in `namespace`, and the errors met resolving them
    /// (upstream's `RulesFor`).
    pub fn rules_for(&self, user: &UserInfo, namespace: &str) -> (Vec<PolicyRule>, Vec<String>) {
        self.index().rules_for(user, namespace)
    }

    /// The rules of the role `r` refers to from `namespace`, or why none.
    pub fn role_rules(
        &self,
        r: &kubestore_proto::rbac::v1::RoleRef,
        namespace: &str,
    ) -> Result<Vec<PolicyRule>, String> {
        self.index()
            .role_rules(r, namespace)
            .map(|rules| rules.to_vec())
    }

    fn synced_one(&self, first: &mut bool) {
        if std::mem::take(first) {
            self.synced.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Upstream's aggregate error text: one error as it is, several in brackets.
fn aggregate(errors: &[String]) -> String {
    match errors {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

impl Authorizer for Rbac {
    fn authorize(&self, user: &UserInfo, attrs: &Attributes) -> (Decision, String) {
        let namespace = match attrs {
            Attributes::Resource(a) => a.namespace.as_str(),
            Attributes::NonResource { .. } => "",
        };
        let mut allowed = false;
        let errors = self.index().visit(user, namespace, |rule| {
            allowed = rules::allows(rule, attrs);
            !allowed
        });
        if allowed {
            (Decision::Allow, String::new())
        } else if errors.is_empty() {
            (Decision::NoOpinion, String::new())
        } else {
            (Decision::NoOpinion, format!("RBAC: {}", aggregate(&errors)))
        }
    }

    fn ready(&self) -> bool {
        self.synced.load(Ordering::Relaxed) >= 4 && self.bootstrapped.load(Ordering::Relaxed)
    }

    fn rules_for(
        &self,
        user: &UserInfo,
        namespace: &str,
    ) -> Option<(Vec<PolicyRule>, Vec<String>)> {
        Some(Rbac::rules_for(self, user, namespace))
    }
}

/// Starts following the four kinds, the bootstrap policy and the aggregation, until `stop`.
pub fn start(
    stores: Stores,
    stop: tokio::sync::watch::Receiver<bool>,
) -> Result<Arc<Rbac>, String> {
    let policy = bootstrap::policy()?;
    let rbac = Arc::new(Rbac {
        index: RwLock::new(Index::default()),
        synced: AtomicUsize::new(0),
        bootstrapped: AtomicBool::new(false),
        aggregate: tokio::sync::Notify::new(),
    });
    macro_rules! follow_kind {
        ($store:expr, $reset:ident, $put:ident, $remove:ident, $notify:expr) => {{
            let rbac = rbac.clone();
            let mut first = true;
            tokio::spawn(follow($store, stop.clone(), move |change| {
                match change {
                    Change::Reset(items) => {
                        rbac.update(|i| i.$reset(items));
                        rbac.synced_one(&mut first);
                    }
                    Change::Put(obj) => rbac.update(|i| i.$put(obj)),
                    Change::Gone(obj) => rbac.update(|i| i.$remove(&obj)),
                }
                if $notify {
                    rbac.aggregate.notify_one();
                }
            }));
        }};
    }
    follow_kind!(
        stores.roles.clone(),
        reset_roles,
        put_role,
        remove_role,
        false
    );
    follow_kind!(
        stores.cluster_roles.clone(),
        reset_cluster_roles,
        put_cluster_role,
        remove_cluster_role,
        true
    );
    follow_kind!(
        stores.role_bindings.clone(),
        reset_bindings,
        put_binding,
        remove_binding,
        false
    );
    follow_kind!(
        stores.cluster_role_bindings.clone(),
        reset_cluster_bindings,
        put_cluster_binding,
        remove_cluster_binding,
        false
    );
    {
        let (rbac, stores, stop) = (rbac.clone(), stores.clone(), stop.clone());
        tokio::spawn(async move {
            bootstrap::reconcile(
                &policy,
                &stores.cluster_roles,
                &stores.cluster_role_bindings,
                &stop,
            )
            .await;
            rbac.bootstrapped.store(true, Ordering::Relaxed);
        });
    }
    tokio::spawn(aggregation(rbac.clone(), stores.cluster_roles, stop));
    Ok(rbac)
}

/// The rules aggregated roles should have now, for those whose stored rules differ (upstream's
/// clusterrole-aggregation controller: the rules of the roles each selector picks, roles in
/// name order, the role itself left out, each rule once).
fn aggregated(index: &Index) -> Vec<ClusterRole> {
    let mut names: Vec<&String> = index.cluster_roles.keys().collect();
    names.sort();
    let mut out = Vec::new();
    for (role, _) in index.cluster_roles.values() {
        let Some(rule) = &role.aggregation_rule else {
            continue;
        };
        let own = role.metadata.as_ref().map_or("", |m| m.name.as_str());
        let mut want: Vec<PolicyRule> = Vec::new();
        for selector in &rule.cluster_role_selectors {
            for name in &names {
                let Some((other, _)) = index.cluster_roles.get(*name) else {
                    continue;
                };
                let labels = other.metadata.as_ref().map(|m| &m.labels);
                if name.as_str() == own || !labels.is_some_and(|l| rules::selects(selector, l)) {
                    continue;
                }
                for r in &other.rules {
                    if !want.contains(r) {
                        want.push(r.clone());
                    }
                }
            }
        }
        if want != role.rules {
            let mut updated = (**role).clone();
            updated.rules = want;
            out.push(updated);
        }
    }
    out
}

/// Keeps aggregated roles' rules up to date (see the module's doc). A write that loses a race
/// (another replica wrote first, the role changed) is retried on the next change it causes.
async fn aggregation(
    rbac: Arc<Rbac>,
    store: Store<ClusterRole>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            _ = rbac.aggregate.notified() => {}
            _ = stop.changed() => return,
        }
        let pending = aggregated(&rbac.index());
        for role in pending {
            let ctx = Ctx::within(std::time::Duration::from_secs(10));
            if let Err(e) = store.update_in(ctx, "", role, false, Part::Main).await {
                tracing::debug!(error = %e, "clusterrole aggregation: write failed; retried on the next change");
            }
        }
    }
}
