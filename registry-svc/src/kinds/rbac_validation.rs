//! Validation of the four RBAC kinds: upstream's `pkg/apis/rbac/validation/validation.go`
//! (1.33) with its field paths, words and order, as pure functions over the stored messages.
//! The strategies of Role, ClusterRole, RoleBinding and ClusterRoleBinding call these; the
//! RBAC authorizer relies on what they guarantee (a binding's roleRef names a role of a known
//! kind in the RBAC group, and never changes).
//!
//! Metadata is the Store's (`crate::validation::object_meta`), except the one rule RBAC changes
//! there: role and binding names are path segments ([`rbac_name`], upstream's
//! `ValidateRBACName`), not DNS subdomains, so that names like `system:controller:foo` are valid.
//!
//! Values are rendered as upstream 1.33 renders them (Go's `%#v`: `[]string{"/*"}`,
//! `rbac.RoleRef{APIGroup:"…", Kind:"…", Name:"…"}`); strings are quoted with Rust's `{:?}`
//! as elsewhere in registry-svc. Differences from upstream:
//! - The ServiceAccount subject name is described by `crate::validation`'s one DNS-subdomain
//!   problem where upstream may list two.
//! - Upstream iterates a selector's `matchLabels` as a Go map (random order); ours are in key
//!   order.
//! - Upstream's `AllowInvalidLabelValueInSelector` (a ratchet for ClusterRoles stored before
//!   1.24 with invalid selector values) is always off: kubestore never stored such a role, and
//!   upstream rejects one anyway through its "invalid label selector." rule.

use kubestore_proto::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};

use crate::{validation::dns1123_subdomain, violations::Violations};

#[cfg(test)]
#[path = "rbac_validation_tests.rs"]
mod tests;

/// The RBAC API group (upstream's `rbac.GroupName`): the only group a roleRef may name, and the
/// group of User and Group subjects.
pub const GROUP_NAME: &str = "rbac.authorization.k8s.io";

/// Upstream's `IsValidPathSegmentName`: every problem of `name` as one segment of a URL path
/// or storage key. Like upstream it accepts the empty name (required-ness is checked apart).
fn path_segment_problems(name: &str) -> Vec<String> {
    if name == "." || name == ".." {
        return vec![format!("may not be '{name}'")];
    }
    ["/", "%"]
        .iter()
        .filter(|c| name.contains(**c))
        .map(|c| format!("may not contain '{c}'"))
        .collect()
}

/// Upstream's `ValidateRBACName`, the name rule of the four RBAC kinds (for `metadata.name` and
/// `metadata.generateName`, where upstream uses the same rule): the first problem of `name` as a
/// path segment, `None` when valid. Only a name with both '/' and '%' has a second problem
/// (`may not contain '%'`), which this drops.
pub fn rbac_name(name: &str) -> Option<String> {
    path_segment_problems(name).into_iter().next()
}

/// Upstream's `field.NotSupported` description.
fn not_supported(value: &str, supported: &[&str]) -> String {
    let quoted: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
    format!(
        "Unsupported value: {value:?}: supported values: {}",
        quoted.join(", ")
    )
}

/// Go's `%#v` of a non-empty string slice, as upstream 1.33 renders a list in `Invalid value`.
fn go_strings(items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| format!("{s:?}")).collect();
    format!("[]string{{{}}}", quoted.join(", "))
}

/// Go's `%#v` of upstream's internal `rbac.RoleRef`.
fn go_role_ref(r: &RoleRef) -> String {
    format!(
        "rbac.RoleRef{{APIGroup:{:?}, Kind:{:?}, Name:{:?}}}",
        r.api_group, r.kind, r.name
    )
}

/// Upstream's `ValidateRole`, less the metadata: each rule at namespace scope.
pub fn role(r: &Role) -> Violations {
    let mut v = Violations::new();
    for (i, rule) in r.rules.iter().enumerate() {
        policy_rule(rule, true, &format!("rules[{i}]"), &mut v);
    }
    v
}

/// Upstream's `ValidateClusterRole`, less the metadata: each rule at cluster scope, and the
/// aggregation rule's selectors. The rules are validated even when an aggregation rule is set
/// (as upstream): the controller that owns them then only copies rules of other ClusterRoles,
/// which passed the same rules.
pub fn cluster_role(r: &ClusterRole) -> Violations {
    let mut v = Violations::new();
    for (i, rule) in r.rules.iter().enumerate() {
        policy_rule(rule, false, &format!("rules[{i}]"), &mut v);
    }
    if let Some(agg) = &r.aggregation_rule {
        if agg.cluster_role_selectors.is_empty() {
            v.push((
                "aggregationRule.clusterRoleSelectors".into(),
                "Required value: at least one clusterRoleSelector required if aggregationRule is non-nil".into(),
            ));
        }
        for (i, selector) in agg.cluster_role_selectors.iter().enumerate() {
            let path = format!("aggregationRule.clusterRoleSelectors[{i}]");
            let mut problems = Violations::new();
            super::pod_validation::scheduling::label_selector(selector, &path, &mut problems);
            // Upstream also converts the selector (`LabelSelectorAsSelector`), which fails
            // exactly when the checks above found a problem, and reports its nil result.
            if !problems.is_empty() {
                problems.push((
                    path,
                    "Invalid value: \"null\": invalid label selector.".into(),
                ));
            }
            v.merge(problems);
        }
    }
    v
}

/// Upstream's `ValidatePolicyRule` of the rule at `path` (`rules[0]`): verbs always; a rule
/// names either non-resource URLs (cluster scope only) or API groups and resources.
pub fn policy_rule(rule: &PolicyRule, namespaced: bool, path: &str, v: &mut Violations) {
    if rule.verbs.is_empty() {
        v.push((
            format!("{path}.verbs"),
            "Required value: verbs must contain at least one value".into(),
        ));
    }
    if !rule.non_resource_urls.is_empty() {
        let urls = go_strings(&rule.non_resource_urls);
        if namespaced {
            v.push((
                format!("{path}.nonResourceURLs"),
                format!(
                    "Invalid value: {urls}: namespaced rules cannot apply to non-resource URLs"
                ),
            ));
        }
        if !rule.api_groups.is_empty()
            || !rule.resources.is_empty()
            || !rule.resource_names.is_empty()
        {
            v.push((
                format!("{path}.nonResourceURLs"),
                format!(
                    "Invalid value: {urls}: rules cannot apply to both regular resources and non-resource URLs"
                ),
            ));
        }
        return;
    }
    if rule.api_groups.is_empty() {
        v.push((
            format!("{path}.apiGroups"),
            "Required value: resource rules must supply at least one api group".into(),
        ));
    }
    if rule.resources.is_empty() {
        v.push((
            format!("{path}.resources"),
            "Required value: resource rules must supply at least one resource".into(),
        ));
    }
}

/// Upstream's `ValidateRoleBinding`, less the metadata: a roleRef to a Role or a ClusterRole,
/// and each subject at namespace scope.
pub fn role_binding(b: &RoleBinding) -> Violations {
    binding(
        b.role_ref.as_ref(),
        &["Role", "ClusterRole"],
        &b.subjects,
        true,
    )
}

/// Upstream's `ValidateClusterRoleBinding`, less the metadata: a roleRef to a ClusterRole, and
/// each subject at cluster scope (a ServiceAccount names its namespace).
pub fn cluster_role_binding(b: &ClusterRoleBinding) -> Violations {
    binding(b.role_ref.as_ref(), &["ClusterRole"], &b.subjects, false)
}

/// The rules both bindings share; an absent roleRef is upstream's zero value.
fn binding(
    role_ref: Option<&RoleRef>,
    kinds: &[&str],
    subjects: &[Subject],
    namespaced: bool,
) -> Violations {
    let mut v = Violations::new();
    let zero = RoleRef::default();
    let r = role_ref.unwrap_or(&zero);
    if r.api_group != GROUP_NAME {
        v.push((
            "roleRef.apiGroup".into(),
            not_supported(&r.api_group, &[GROUP_NAME]),
        ));
    }
    if !kinds.contains(&r.kind.as_str()) {
        v.push(("roleRef.kind".into(), not_supported(&r.kind, kinds)));
    }
    if r.name.is_empty() {
        v.push(("roleRef.name".into(), "Required value".into()));
    } else {
        for e in path_segment_problems(&r.name) {
            v.push((
                "roleRef.name".into(),
                format!("Invalid value: {:?}: {e}", r.name),
            ));
        }
    }
    for (i, s) in subjects.iter().enumerate() {
        subject(s, namespaced, &format!("subjects[{i}]"), &mut v);
    }
    v
}

/// Upstream's `ValidateRoleBindingSubject` of the subject at `path` (`subjects[0]`): a named
/// ServiceAccount of the core group (with a namespace outside a namespaced binding), or a User
/// or Group of the RBAC group.
pub fn subject(s: &Subject, namespaced: bool, path: &str, v: &mut Violations) {
    if s.name.is_empty() {
        v.push((format!("{path}.name"), "Required value".into()));
    }
    match s.kind.as_str() {
        "ServiceAccount" => {
            if !s.name.is_empty()
                && let Some(e) = dns1123_subdomain(&s.name)
            {
                v.push((
                    format!("{path}.name"),
                    format!("Invalid value: {:?}: {e}", s.name),
                ));
            }
            if !s.api_group.is_empty() {
                v.push((
                    format!("{path}.apiGroup"),
                    not_supported(&s.api_group, &[""]),
                ));
            }
            if !namespaced && s.namespace.is_empty() {
                v.push((format!("{path}.namespace"), "Required value".into()));
            }
        }
        "User" | "Group" => {
            if s.api_group != GROUP_NAME {
                v.push((
                    format!("{path}.apiGroup"),
                    not_supported(&s.api_group, &[GROUP_NAME]),
                ));
            }
        }
        kind => v.push((
            format!("{path}.kind"),
            not_supported(kind, &["ServiceAccount", "User", "Group"]),
        )),
    }
}

/// Upstream's `ValidateRoleBindingUpdate`, less the metadata: [`role_binding`] of the new
/// binding, and its roleRef unchanged (a binding's grant is changed by replacing the binding).
pub fn role_binding_update(new: &RoleBinding, old: &RoleBinding) -> Violations {
    let mut v = role_binding(new);
    role_ref_unchanged(new.role_ref.as_ref(), old.role_ref.as_ref(), &mut v);
    v
}

/// Upstream's `ValidateClusterRoleBindingUpdate`, less the metadata: [`cluster_role_binding`]
/// of the new binding, and its roleRef unchanged.
pub fn cluster_role_binding_update(
    new: &ClusterRoleBinding,
    old: &ClusterRoleBinding,
) -> Violations {
    let mut v = cluster_role_binding(new);
    role_ref_unchanged(new.role_ref.as_ref(), old.role_ref.as_ref(), &mut v);
    v
}

/// The roleRef rule of both updates; absent and zero are the same (Go has no absent struct).
fn role_ref_unchanged(new: Option<&RoleRef>, old: Option<&RoleRef>, v: &mut Violations) {
    let zero = RoleRef::default();
    let (new, old) = (new.unwrap_or(&zero), old.unwrap_or(&zero));
    if new != old {
        v.push((
            "roleRef".into(),
            format!("Invalid value: {}: cannot change roleRef", go_role_ref(new)),
        ));
    }
}
