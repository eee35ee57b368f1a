//! The RBAC kinds' strategies (upstream's `pkg/registry/rbac/{role,clusterrole,rolebinding,
//! clusterrolebinding}`): Roles and RoleBindings in a namespace, ClusterRoles and
//! ClusterRoleBindings at the cluster scope; names are path segments (upstream's
//! `ValidateRBACName`, so `system:controller:x` is a valid name); validation is
//! [`rbac_validation`](super::rbac_validation); a binding's roleRef never changes. Their
//! Tables are kubectl's: roles NAME CREATED AT, bindings NAME ROLE AGE and, wide, USERS GROUPS
//! SERVICEACCOUNTS.
//!
//! What a write may grant is checked in `begin_create` / `begin_update` by
//! `rbac::escalation` (upstream's `policybased` storage), on the object as it will be written.

use std::sync::Arc;

use kubestore_apimachinery::table::{Column, NAME_DESCRIPTION, age};
use kubestore_proto::{
    meta::v1::ObjectMeta,
    rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding, Subject},
};
use serde_json::{Value, json};

use super::{
    printers::{age_col, col, created, meta_name},
    rbac_validation as v,
};
use crate::{
    error::ApiError, rbac::escalation::Guard, resource::Resource, strategy::Strategy,
    violations::Violations,
};

/// Roles.
#[derive(Debug, Default, Clone)]
pub struct RoleStrategy(pub Arc<Guard>);

/// ClusterRoles.
#[derive(Debug, Default, Clone)]
pub struct ClusterRoleStrategy(pub Arc<Guard>);

/// RoleBindings.
#[derive(Debug, Default, Clone)]
pub struct RoleBindingStrategy(pub Arc<Guard>);

/// ClusterRoleBindings.
#[derive(Debug, Default, Clone)]
pub struct ClusterRoleBindingStrategy(pub Arc<Guard>);

/// The namespace and name of `obj`.
fn at<R: Resource>(obj: &R) -> (&str, &str) {
    obj.meta()
        .map_or(("", ""), |m| (m.namespace.as_str(), m.name.as_str()))
}

/// Whether an update changes only what the garbage collector changes (owner references,
/// finalizers): upstream's `IsOnlyMutatingGCFields`, which skips the escalation check so the
/// collector can delete what it could not have written.
fn only_gc_fields<R: Resource + Clone + PartialEq>(new: &R, old: &R) -> bool {
    let strip = |o: &R| {
        let mut o = o.clone();
        let m = o.meta_mut();
        *m = ObjectMeta {
            owner_references: Vec::new(),
            finalizers: Vec::new(),
            resource_version: String::new(),
            ..m.clone()
        };
        o
    };
    strip(new) == strip(old)
}

impl Strategy<Role> for RoleStrategy {
    fn begin_create(&self, r: &Role, _dry_run: bool) -> Result<(), ApiError> {
        let (ns, name) = at(r);
        self.0.check_role("roles", ns, "", name, &r.rules, false)
    }
    fn begin_update(&self, new: &Role, old: &Role, _dry_run: bool) -> Result<(), ApiError> {
        if only_gc_fields(new, old) {
            return Ok(());
        }
        let (ns, name) = at(new);
        self.0
            .check_role("roles", ns, name, name, &new.rules, false)
    }
    fn name_rule(&self) -> fn(&str) -> Option<String> {
        v::rbac_name
    }
    fn validate(&self, r: &Role) -> Violations {
        v::role(r)
    }
    fn validate_update(&self, new: &Role, _old: &Role) -> Violations {
        v::role(new)
    }
    fn columns(&self) -> Vec<Column> {
        role_columns()
    }
    fn cells(&self, r: &Role, _now: i64) -> Vec<Value> {
        role_cells(&r.metadata)
    }
}

impl Strategy<ClusterRole> for ClusterRoleStrategy {
    fn namespace_scoped(&self) -> bool {
        false
    }
    fn begin_create(&self, r: &ClusterRole, _dry_run: bool) -> Result<(), ApiError> {
        let (_, name) = at(r);
        let aggregated = r.aggregation_rule.is_some();
        self.0
            .check_role("clusterroles", "", "", name, &r.rules, aggregated)
    }
    fn begin_update(
        &self,
        new: &ClusterRole,
        old: &ClusterRole,
        _dry_run: bool,
    ) -> Result<(), ApiError> {
        if only_gc_fields(new, old) {
            return Ok(());
        }
        let (_, name) = at(new);
        // An aggregated role's rules are the aggregation's: upstream checks what the client
        // sends, and the aggregation writes as the registry itself.
        let aggregated = new.aggregation_rule.is_some();
        self.0
            .check_role("clusterroles", "", name, name, &new.rules, aggregated)
    }
    fn name_rule(&self) -> fn(&str) -> Option<String> {
        v::rbac_name
    }
    fn validate(&self, r: &ClusterRole) -> Violations {
        v::cluster_role(r)
    }
    fn validate_update(&self, new: &ClusterRole, _old: &ClusterRole) -> Violations {
        v::cluster_role(new)
    }
    fn columns(&self) -> Vec<Column> {
        role_columns()
    }
    fn cells(&self, r: &ClusterRole, _now: i64) -> Vec<Value> {
        role_cells(&r.metadata)
    }
}

impl Strategy<RoleBinding> for RoleBindingStrategy {
    fn begin_create(&self, b: &RoleBinding, _dry_run: bool) -> Result<(), ApiError> {
        let (ns, name) = at(b);
        self.0
            .check_binding("rolebindings", ns, name, b.role_ref.as_ref())
    }
    fn begin_update(
        &self,
        new: &RoleBinding,
        old: &RoleBinding,
        _dry_run: bool,
    ) -> Result<(), ApiError> {
        if only_gc_fields(new, old) {
            return Ok(());
        }
        let (ns, name) = at(new);
        self.0
            .check_binding("rolebindings", ns, name, new.role_ref.as_ref())
    }
    fn name_rule(&self) -> fn(&str) -> Option<String> {
        v::rbac_name
    }
    fn validate(&self, b: &RoleBinding) -> Violations {
        v::role_binding(b)
    }
    fn validate_update(&self, new: &RoleBinding, old: &RoleBinding) -> Violations {
        v::role_binding_update(new, old)
    }
    fn columns(&self) -> Vec<Column> {
        binding_columns()
    }
    fn cells(&self, b: &RoleBinding, now: i64) -> Vec<Value> {
        binding_cells(&b.metadata, b.role_ref.as_ref(), &b.subjects, now)
    }
}

impl Strategy<ClusterRoleBinding> for ClusterRoleBindingStrategy {
    fn namespace_scoped(&self) -> bool {
        false
    }
    fn begin_create(&self, b: &ClusterRoleBinding, _dry_run: bool) -> Result<(), ApiError> {
        let (_, name) = at(b);
        self.0
            .check_binding("clusterrolebindings", "", name, b.role_ref.as_ref())
    }
    fn begin_update(
        &self,
        new: &ClusterRoleBinding,
        old: &ClusterRoleBinding,
        _dry_run: bool,
    ) -> Result<(), ApiError> {
        if only_gc_fields(new, old) {
            return Ok(());
        }
        let (_, name) = at(new);
        self.0
            .check_binding("clusterrolebindings", "", name, new.role_ref.as_ref())
    }
    fn name_rule(&self) -> fn(&str) -> Option<String> {
        v::rbac_name
    }
    fn validate(&self, b: &ClusterRoleBinding) -> Violations {
        v::cluster_role_binding(b)
    }
    fn validate_update(&self, new: &ClusterRoleBinding, old: &ClusterRoleBinding) -> Violations {
        v::cluster_role_binding_update(new, old)
    }
    fn columns(&self) -> Vec<Column> {
        binding_columns()
    }
    fn cells(&self, b: &ClusterRoleBinding, now: i64) -> Vec<Value> {
        binding_cells(&b.metadata, b.role_ref.as_ref(), &b.subjects, now)
    }
}

const CREATED_DESCRIPTION: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// Roles and ClusterRoles: NAME CREATED AT.
fn role_columns() -> Vec<Column> {
    vec![
        Column::new("Name", "string", "name", 0, NAME_DESCRIPTION),
        col("Created At", "date", 0, CREATED_DESCRIPTION),
    ]
}

fn role_cells(m: &Option<kubestore_proto::meta::v1::ObjectMeta>) -> Vec<Value> {
    let at = created(m).map_or(Value::Null, |s| {
        json!(kubestore_apimachinery::time::format(s, 0))
    });
    vec![json!(meta_name(m)), at]
}

/// Bindings: NAME ROLE AGE, and wide USERS GROUPS SERVICEACCOUNTS.
fn binding_columns() -> Vec<Column> {
    vec![
        Column::new("Name", "string", "name", 0, NAME_DESCRIPTION),
        col(
            "Role",
            "string",
            0,
            "RoleRef can reference a Role in the current namespace or a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error. This field is immutable.",
        ),
        age_col(),
        col("Users", "string", 1, "Users in the roleBinding"),
        col("Groups", "string", 1, "Groups in the roleBinding"),
        col(
            "ServiceAccounts",
            "string",
            1,
            "ServiceAccounts in the roleBinding",
        ),
    ]
}

fn binding_cells(
    m: &Option<kubestore_proto::meta::v1::ObjectMeta>,
    role: Option<&kubestore_proto::rbac::v1::RoleRef>,
    subjects: &[Subject],
    now: i64,
) -> Vec<Value> {
    let of = |kind: &str| {
        subjects
            .iter()
            .filter(|s| s.kind == kind)
            .map(|s| {
                if kind == "ServiceAccount" {
                    format!("{}/{}", s.namespace, s.name)
                } else {
                    s.name.clone()
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    vec![
        json!(meta_name(m)),
        json!(role.map_or(String::new(), |r| format!("{}/{}", r.kind, r.name))),
        json!(age(created(m), now)),
        json!(of("User")),
        json!(of("Group")),
        json!(of("ServiceAccount")),
    ]
}
