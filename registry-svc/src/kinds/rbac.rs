//! The RBAC kinds' strategies (upstream's `pkg/registry/rbac/{role,clusterrole,rolebinding,
//! clusterrolebinding}`): Roles and RoleBindings in a namespace, ClusterRoles and
//! ClusterRoleBindings at the cluster scope; names are path segments (upstream's
//! `ValidateRBACName`, so `system:controller:x` is a valid name); validation is
//! [`rbac_validation`](super::rbac_validation); a binding's roleRef never changes. Their
//! Tables are kubectl's: roles NAME CREATED AT, bindings NAME ROLE AGE and, wide, USERS GROUPS
//! SERVICEACCOUNTS.
//!
//! What a write may grant is not decided here but by the RBAC authorizer's escalation check
//! (`rbac::escalation`), which needs the caller.

use kubestore_apimachinery::table::{Column, NAME_DESCRIPTION, age};
use kubestore_proto::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding, Subject};
use serde_json::{Value, json};

use super::{
    printers::{age_col, col, created, meta_name},
    rbac_validation as v,
};
use crate::{strategy::Strategy, violations::Violations};

/// Roles.
#[derive(Debug, Default, Clone, Copy)]
pub struct RoleStrategy;

/// ClusterRoles.
#[derive(Debug, Default, Clone, Copy)]
pub struct ClusterRoleStrategy;

/// RoleBindings.
#[derive(Debug, Default, Clone, Copy)]
pub struct RoleBindingStrategy;

/// ClusterRoleBindings.
#[derive(Debug, Default, Clone, Copy)]
pub struct ClusterRoleBindingStrategy;

impl Strategy<Role> for RoleStrategy {
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
