//! Escalation prevention (upstream's `pkg/registry/rbac/*/policybased` and
//! `rbac/validation.ConfirmNoEscalation`): a user may write a Role or ClusterRole only with
//! rules it holds itself, and bind a role only if it holds the role's rules, unless
//!
//! - it is in `system:masters`;
//! - the gate allows it `escalate` on the role (roles, clusterroles) or `bind` on the role a
//!   binding refers to;
//!
//! and setting a ClusterRole's `aggregationRule` (which can gather anything) takes full
//! authority (`*` on `*.*` and every non-resource URL). Refusals are upstream's 403, listing
//! the rules the user lacks. Dry runs are checked the same.
//!
//! The checks run in the four RBAC strategies' `begin_create` / `begin_update`, inside the
//! Store's write (so a patch is checked on the object it produces), with the caller the Store
//! put in scope (`store::caller`). The holder of the RBAC authorizer ([`Guard`]) is filled once
//! RBAC has started; without RBAC in the chain, users hold no rules here, and only `escalate` /
//! `bind` granted by the gate (AlwaysAllow grants everything) or `system:masters` pass.

use std::sync::{Arc, OnceLock};

use kubestore_proto::rbac::v1::{PolicyRule, RoleRef};

use super::{Rbac, rules};
use crate::{
    authz::{Attributes, Caller, Decision, ResourceAttributes},
    error::ApiError,
};

const GROUP: &str = "rbac.authorization.k8s.io";

/// Where the RBAC authorizer is, once started (shared by the four strategies, which are
/// built before it).
#[derive(Default)]
pub struct Guard {
    rbac: OnceLock<Arc<Rbac>>,
}

impl std::fmt::Debug for Guard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guard")
            .field("rbac", &self.rbac.get().is_some())
            .finish()
    }
}

impl Guard {
    /// Sets the RBAC authorizer (once).
    pub fn set(&self, rbac: Arc<Rbac>) {
        let _ = self.rbac.set(rbac);
    }

    fn caller() -> Result<Arc<Caller>, ApiError> {
        crate::store::caller()
            .ok_or_else(|| ApiError::Internal("an RBAC write without its caller".into()))
    }

    fn masters(caller: &Caller) -> bool {
        caller
            .user
            .groups
            .iter()
            .any(|g| g == crate::authn::SYSTEM_MASTERS)
    }

    fn allowed(caller: &Caller, verb: &str, resource: &str, namespace: &str, name: &str) -> bool {
        let attrs = Attributes::Resource(
            ResourceAttributes::new(verb, GROUP, "*", resource).at(namespace, name),
        );
        caller.decide_for(&caller.user, &attrs).0 == Decision::Allow
    }

    /// Ok if the caller may write a role of `resource` (`roles`, `clusterroles`) in
    /// `namespace` named `name` with `rules` (and an aggregation rule, if `aggregated`);
    /// `request_name` is the name the request gave (none for a create), which `escalate` is
    /// asked about.
    pub fn check_role(
        &self,
        resource: &str,
        namespace: &str,
        request_name: &str,
        name: &str,
        requested: &[PolicyRule],
        aggregated: bool,
    ) -> Result<(), ApiError> {
        let caller = Self::caller()?;
        if Self::masters(&caller) {
            return Ok(());
        }
        // Upstream asks about the request's name: none for a create.
        if Self::allowed(&caller, "escalate", resource, namespace, request_name) {
            return Ok(());
        }
        self.confirm_no_escalation(&caller, resource, namespace, name, requested)?;
        if aggregated {
            let all = || vec!["*".to_string()];
            let full = [
                PolicyRule {
                    verbs: all(),
                    api_groups: all(),
                    resources: all(),
                    ..Default::default()
                },
                PolicyRule {
                    verbs: all(),
                    non_resource_urls: all(),
                    ..Default::default()
                },
            ];
            if self
                .confirm_no_escalation(&caller, resource, namespace, name, &full)
                .is_err()
            {
                return Err(forbidden(
                    resource,
                    name,
                    "must have cluster-admin privileges to use the aggregationRule",
                ));
            }
        }
        Ok(())
    }

    /// Ok if the caller may write a binding of `resource` (`rolebindings`,
    /// `clusterrolebindings`) in `namespace` named `name` to `role_ref`.
    pub fn check_binding(
        &self,
        resource: &str,
        namespace: &str,
        name: &str,
        role_ref: Option<&RoleRef>,
    ) -> Result<(), ApiError> {
        let caller = Self::caller()?;
        if Self::masters(&caller) {
            return Ok(());
        }
        let Some(role_ref) = role_ref else {
            // Validation refuses a binding without a roleRef.
            return Ok(());
        };
        let role_resource = match role_ref.kind.as_str() {
            "Role" => "roles",
            _ => "clusterroles",
        };
        if Self::allowed(&caller, "bind", role_resource, namespace, &role_ref.name) {
            return Ok(());
        }
        let rules = match self.rbac.get() {
            Some(rbac) => rbac
                .role_rules(role_ref, namespace)
                .map_err(|_| ApiError::NotFound {
                    resource: format!("{role_resource}.{GROUP}"),
                    name: role_ref.name.clone(),
                })?,
            None => Vec::new(),
        };
        self.confirm_no_escalation(&caller, resource, namespace, name, &rules)
    }

    /// Upstream's `ConfirmNoEscalation`: the caller's RBAC rules in `namespace` cover
    /// `requested`.
    fn confirm_no_escalation(
        &self,
        caller: &Caller,
        resource: &str,
        namespace: &str,
        name: &str,
        requested: &[PolicyRule],
    ) -> Result<(), ApiError> {
        let (owned, errors) = match self.rbac.get() {
            Some(rbac) => rbac.rules_for(&caller.user, namespace),
            None => (Vec::new(), Vec::new()),
        };
        let missing = rules::uncovered(&owned, requested);
        if missing.is_empty() {
            return Ok(());
        }
        let mut lines: Vec<String> = rules::compacted(missing)
            .iter()
            .map(rules::compact)
            .collect();
        lines.sort();
        lines.dedup();
        let groups: Vec<String> = caller
            .user
            .groups
            .iter()
            .map(|g| format!("{g:?}"))
            .collect();
        let mut why = format!(
            "user {:?} (groups=[{}]) is attempting to grant RBAC permissions not currently held:\n{}",
            caller.user.name,
            groups.join(" "),
            lines.join("\n")
        );
        if !errors.is_empty() {
            why.push_str(&format!("; resolution errors: [{}]", errors.join(" ")));
        }
        Err(forbidden(resource, name, &why))
    }
}

/// Upstream's `NewForbidden` for an RBAC object.
fn forbidden(resource: &str, name: &str, why: &str) -> ApiError {
    let message = if name.is_empty() {
        format!("{resource}.{GROUP} is forbidden: {why}")
    } else {
        format!("{resource}.{GROUP} {name:?} is forbidden: {why}")
    };
    ApiError::Denied {
        group: GROUP.into(),
        resource: resource.into(),
        name: name.into(),
        message,
    }
}
