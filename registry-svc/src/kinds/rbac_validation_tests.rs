//! Upstream's `pkg/apis/rbac/validation/validation_test.go` (1.33), ported where it tests what
//! lives here (its metadata cases are the Store's), plus the aggregation rule, the name rule and
//! the exact words. Like upstream's loops, an error case asserts that every violation is at the
//! case's field, with the case's kind of error.

use kubestore_proto::meta::v1::{LabelSelector, LabelSelectorRequirement};
use kubestore_proto::rbac::v1::AggregationRule;

use super::*;

fn strs(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn rule(verbs: &[&str], groups: &[&str], resources: &[&str], urls: &[&str]) -> PolicyRule {
    PolicyRule {
        verbs: strs(verbs),
        api_groups: strs(groups),
        resources: strs(resources),
        non_resource_urls: strs(urls),
        ..Default::default()
    }
}

fn role_ref(kind: &str, name: &str) -> Option<RoleRef> {
    Some(RoleRef {
        api_group: GROUP_NAME.into(),
        kind: kind.into(),
        name: name.into(),
    })
}

fn subj(kind: &str, api_group: &str, name: &str, namespace: &str) -> Subject {
    Subject {
        kind: kind.into(),
        api_group: api_group.into(),
        name: name.into(),
        namespace: namespace.into(),
    }
}

/// Every violation is at `field` and starts with `kind` ("Required value", ...).
#[track_caller]
fn assert_all(v: &Violations, field: &str, kind: &str) {
    assert!(!v.is_empty(), "expected a violation at {field}");
    for (f, d) in v.iter() {
        assert_eq!(f, field, "{v:?}");
        assert!(d.starts_with(kind), "{d:?} is not {kind}");
    }
}

fn only(v: &Violations) -> (&str, &str) {
    assert_eq!(v.len(), 1, "{v:?}");
    v.iter()
        .next()
        .map(|(f, d)| (f.as_str(), d.as_str()))
        .unwrap_or_default()
}

/// A ClusterRoleBinding to the ClusterRole `valid`, changed by `f`, validated.
fn crb_with(f: impl Fn(&mut ClusterRoleBinding)) -> Violations {
    let mut b = ClusterRoleBinding {
        role_ref: role_ref("ClusterRole", "valid"),
        ..Default::default()
    };
    f(&mut b);
    cluster_role_binding(&b)
}

/// A RoleBinding to the Role `valid`, changed by `f`, validated.
fn rb_with(f: impl Fn(&mut RoleBinding)) -> Violations {
    let mut b = RoleBinding {
        role_ref: role_ref("Role", "valid"),
        ..Default::default()
    };
    f(&mut b);
    role_binding(&b)
}

/// A roleRef to the `valid` role of `kind` in an unknown group.
fn foreign_ref(kind: &str) -> Option<RoleRef> {
    Some(RoleRef {
        api_group: "rbac.GroupName".into(),
        kind: kind.into(),
        name: "valid".into(),
    })
}

// TestValidateClusterRoleBinding
#[test]
fn cluster_role_bindings() {
    let valid = ClusterRoleBinding {
        role_ref: role_ref("ClusterRole", "valid"),
        subjects: vec![
            subj("ServiceAccount", "", "validsaname", "foo"),
            subj("User", GROUP_NAME, "valid@username", ""),
            subj("Group", GROUP_NAME, "valid@groupname", ""),
        ],
        ..Default::default()
    };
    assert!(cluster_role_binding(&valid).is_empty());

    let cases: Vec<(&str, Violations, &str, &str)> = vec![
        (
            "bad group",
            crb_with(|b| b.role_ref = foreign_ref("ClusterRole")),
            "roleRef.apiGroup",
            "Unsupported value",
        ),
        (
            "bad kind",
            crb_with(|b| b.role_ref = role_ref("Type", "valid")),
            "roleRef.kind",
            "Unsupported value",
        ),
        (
            "reference role",
            crb_with(|b| b.role_ref = role_ref("Role", "valid")),
            "roleRef.kind",
            "Unsupported value",
        ),
        (
            "bad role",
            crb_with(|b| b.role_ref = role_ref("ClusterRole", "")),
            "roleRef.name",
            "Required value",
        ),
        (
            "bad subject kind",
            crb_with(|b| b.subjects = vec![subj("", "", "subject", "")]),
            "subjects[0].kind",
            "Unsupported value",
        ),
        (
            "bad subject name",
            crb_with(|b| b.subjects = vec![subj("ServiceAccount", "", "subject:bad", "foo")]),
            "subjects[0].name",
            "Invalid value",
        ),
        (
            "missing SA namespace",
            crb_with(|b| b.subjects = vec![subj("ServiceAccount", "", "good", "")]),
            "subjects[0].namespace",
            "Required value",
        ),
        (
            "missing subject name",
            crb_with(|b| b.subjects = vec![subj("ServiceAccount", "", "", "foo")]),
            "subjects[0].name",
            "Required value",
        ),
    ];
    for (name, v, field, kind) in cases {
        assert!(!v.is_empty(), "{name}");
        assert_all(&v, field, kind);
    }
}

// TestValidateRoleBinding
#[test]
fn role_bindings() {
    let valid = RoleBinding {
        role_ref: role_ref("Role", "valid"),
        subjects: vec![
            // A namespaced binding's service account needs no namespace.
            subj("ServiceAccount", "", "validsaname", ""),
            subj("User", GROUP_NAME, "valid@username", ""),
            subj("Group", GROUP_NAME, "valid@groupname", ""),
        ],
        ..Default::default()
    };
    assert!(role_binding(&valid).is_empty());
    let to_cluster_role = RoleBinding {
        role_ref: role_ref("ClusterRole", "view"),
        ..Default::default()
    };
    assert!(role_binding(&to_cluster_role).is_empty());

    let cases: Vec<(&str, Violations, &str, &str)> = vec![
        (
            "bad group",
            rb_with(|b| b.role_ref = foreign_ref("ClusterRole")),
            "roleRef.apiGroup",
            "Unsupported value",
        ),
        (
            "bad kind",
            rb_with(|b| b.role_ref = role_ref("Type", "valid")),
            "roleRef.kind",
            "Unsupported value",
        ),
        (
            "bad role",
            rb_with(|b| b.role_ref = role_ref("Role", "")),
            "roleRef.name",
            "Required value",
        ),
        (
            "bad subject kind",
            rb_with(|b| b.subjects = vec![subj("", "", "subject", "")]),
            "subjects[0].kind",
            "Unsupported value",
        ),
        (
            "bad subject name",
            rb_with(|b| b.subjects = vec![subj("ServiceAccount", "", "subject:bad", "")]),
            "subjects[0].name",
            "Invalid value",
        ),
        (
            "missing subject name",
            rb_with(|b| b.subjects = vec![subj("ServiceAccount", "", "", "")]),
            "subjects[0].name",
            "Required value",
        ),
    ];
    for (name, v, field, kind) in cases {
        assert!(!v.is_empty(), "{name}");
        assert_all(&v, field, kind);
    }
}

// The words of the binding rules (upstream's field.NotSupported, field.Invalid).
#[test]
fn binding_messages() {
    let b = RoleBinding {
        role_ref: Some(RoleRef {
            api_group: "rbac.GroupName".into(),
            kind: "Type".into(),
            name: "a/b".into(),
        }),
        subjects: vec![
            subj("Robot", "", "r", ""),
            subj("User", "", "u", ""),
            subj("ServiceAccount", "v1", "sa", ""),
        ],
        ..Default::default()
    };
    let got: Vec<(String, String)> = role_binding(&b).iter().cloned().collect();
    let want = [
        (
            "roleRef.apiGroup",
            "Unsupported value: \"rbac.GroupName\": supported values: \"rbac.authorization.k8s.io\"",
        ),
        (
            "roleRef.kind",
            "Unsupported value: \"Type\": supported values: \"Role\", \"ClusterRole\"",
        ),
        (
            "roleRef.name",
            "Invalid value: \"a/b\": may not contain '/'",
        ),
        (
            "subjects[0].kind",
            "Unsupported value: \"Robot\": supported values: \"ServiceAccount\", \"User\", \"Group\"",
        ),
        (
            "subjects[1].apiGroup",
            "Unsupported value: \"\": supported values: \"rbac.authorization.k8s.io\"",
        ),
        (
            "subjects[2].apiGroup",
            "Unsupported value: \"v1\": supported values: \"\"",
        ),
    ];
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(f, d)| (f.to_string(), d.to_string()))
        .collect();
    assert_eq!(got, want);
    // An absent roleRef is the zero one.
    assert_eq!(
        cluster_role_binding(&ClusterRoleBinding::default()).len(),
        3
    );
}

// TestValidateRoleBindingUpdate
#[test]
fn role_ref_is_immutable() {
    let old = RoleBinding {
        role_ref: role_ref("Role", "valid"),
        ..Default::default()
    };
    assert!(role_binding_update(&old, &old).is_empty());
    let changed = RoleBinding {
        role_ref: role_ref("Role", "changed"),
        ..Default::default()
    };
    let v = role_binding_update(&changed, &old);
    assert_eq!(
        only(&v),
        (
            "roleRef",
            "Invalid value: rbac.RoleRef{APIGroup:\"rbac.authorization.k8s.io\", Kind:\"Role\", Name:\"changed\"}: cannot change roleRef"
        )
    );
    let old = ClusterRoleBinding {
        role_ref: role_ref("ClusterRole", "view"),
        ..Default::default()
    };
    let changed = ClusterRoleBinding {
        role_ref: role_ref("ClusterRole", "edit"),
        ..Default::default()
    };
    assert!(cluster_role_binding_update(&old, &old).is_empty());
    assert_all(
        &cluster_role_binding_update(&changed, &old),
        "roleRef",
        "Invalid value",
    );
}

fn role_with(rules: Vec<PolicyRule>) -> Violations {
    role(&Role {
        rules,
        ..Default::default()
    })
}

fn cluster_role_with(rules: Vec<PolicyRule>) -> Violations {
    cluster_role(&ClusterRole {
        rules,
        ..Default::default()
    })
}

// TestValidateRoleValidRole, TestValidateRoleValidRoleNoNamespace,
// TestValidateRoleNonResourceURL, TestValidateRoleValidResource
#[test]
fn valid_roles() {
    assert!(role_with(vec![]).is_empty());
    assert!(cluster_role_with(vec![]).is_empty());
    assert!(cluster_role_with(vec![rule(&["get"], &[], &[], &["/*"])]).is_empty());
    assert!(role_with(vec![rule(&["get"], &["v1"], &["pods"], &[])]).is_empty());
    // Resource names need not be limited to one resource (a rule of 1.6 that upstream dropped).
    let mut named = rule(&["get"], &[""], &["pods", "services"], &[]);
    named.resource_names = strs(&["a"]);
    assert!(role_with(vec![named]).is_empty());
}

// TestValidateRoleNamespacedNonResourceURL
#[test]
fn namespaced_rules_cannot_apply_to_non_resource_urls() {
    let v = role_with(vec![rule(&["get"], &[], &[], &["/*"])]);
    assert_eq!(
        only(&v),
        (
            "rules[0].nonResourceURLs",
            "Invalid value: []string{\"/*\"}: namespaced rules cannot apply to non-resource URLs"
        )
    );
}

// TestValidateRoleNonResourceURLNoVerbs
#[test]
fn rules_need_verbs() {
    let v = cluster_role_with(vec![rule(&[], &[], &[], &["/*"])]);
    assert_eq!(
        only(&v),
        (
            "rules[0].verbs",
            "Required value: verbs must contain at least one value"
        )
    );
}

// TestValidateRoleMixedNonResourceAndResource
#[test]
fn rules_are_either_resources_or_non_resource_urls() {
    let v = role_with(vec![rule(&["get"], &["v1"], &["pods"], &["/*"])]);
    assert_all(&v, "rules[0].nonResourceURLs", "Invalid value");
    assert_eq!(v.len(), 2, "{v:?}");
    let v = cluster_role_with(vec![rule(&["get"], &["v1"], &["pods"], &["/*", "/api"])]);
    assert_eq!(
        only(&v),
        (
            "rules[0].nonResourceURLs",
            "Invalid value: []string{\"/*\", \"/api\"}: rules cannot apply to both regular resources and non-resource URLs"
        )
    );
}

// TestValidateRoleNoAPIGroup, TestValidateRoleNoResources
#[test]
fn resource_rules_need_groups_and_resources() {
    let v = role_with(vec![rule(&["get"], &[], &["pods"], &[])]);
    assert_eq!(
        only(&v),
        (
            "rules[0].apiGroups",
            "Required value: resource rules must supply at least one api group"
        )
    );
    let v = role_with(vec![rule(&["get"], &["v1"], &[], &[])]);
    assert_eq!(
        only(&v),
        (
            "rules[0].resources",
            "Required value: resource rules must supply at least one resource"
        )
    );
    // Each rule at its own index.
    let v = cluster_role_with(vec![
        rule(&["get"], &[""], &["pods"], &[]),
        PolicyRule::default(),
    ]);
    let fields: Vec<&str> = v.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(
        fields,
        ["rules[1].verbs", "rules[1].apiGroups", "rules[1].resources"]
    );
}

fn aggregated(selectors: Vec<LabelSelector>) -> Violations {
    cluster_role(&ClusterRole {
        aggregation_rule: Some(AggregationRule {
            cluster_role_selectors: selectors,
        }),
        ..Default::default()
    })
}

// ValidateClusterRole's aggregation rule.
#[test]
fn aggregation_rules() {
    let admin = LabelSelector {
        match_labels: [(
            "rbac.authorization.k8s.io/aggregate-to-admin".to_string(),
            "true".to_string(),
        )]
        .into(),
        ..Default::default()
    };
    assert!(aggregated(vec![admin.clone()]).is_empty());
    // An empty selector is valid (it selects every ClusterRole).
    assert!(aggregated(vec![LabelSelector::default()]).is_empty());

    assert_eq!(
        only(&aggregated(vec![])),
        (
            "aggregationRule.clusterRoleSelectors",
            "Required value: at least one clusterRoleSelector required if aggregationRule is non-nil"
        )
    );

    let bad = LabelSelector {
        match_expressions: vec![LabelSelectorRequirement {
            key: "app".into(),
            operator: "Bogus".into(),
            values: vec![],
        }],
        ..Default::default()
    };
    let got: Vec<(String, String)> = aggregated(vec![admin, bad]).iter().cloned().collect();
    assert_eq!(
        got,
        [
            (
                "aggregationRule.clusterRoleSelectors[1].matchExpressions[0].operator".to_string(),
                "Invalid value: \"Bogus\": not a valid selector operator".to_string()
            ),
            (
                "aggregationRule.clusterRoleSelectors[1]".to_string(),
                "Invalid value: \"null\": invalid label selector.".to_string()
            ),
        ]
    );

    let bad_labels = LabelSelector {
        match_labels: [("bad key!".to_string(), "ok".to_string())].into(),
        match_expressions: vec![LabelSelectorRequirement {
            key: "k".into(),
            operator: "Exists".into(),
            values: strs(&["x"]),
        }],
    };
    let v = aggregated(vec![bad_labels]);
    let fields: Vec<&str> = v.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(
        fields,
        [
            "aggregationRule.clusterRoleSelectors[0].matchLabels",
            "aggregationRule.clusterRoleSelectors[0].matchExpressions[0].values",
            "aggregationRule.clusterRoleSelectors[0]",
        ]
    );
}

// The rules of an aggregated ClusterRole are still validated, as upstream.
#[test]
fn aggregated_rules_are_validated() {
    let r = ClusterRole {
        rules: vec![PolicyRule::default()],
        aggregation_rule: Some(AggregationRule {
            cluster_role_selectors: vec![LabelSelector::default()],
        }),
        ..Default::default()
    };
    assert_eq!(cluster_role(&r).len(), 3);
}

// ValidateRBACName (path.IsValidPathSegmentName).
#[test]
fn rbac_names_are_path_segments() {
    for ok in [
        "admin",
        "system:controller:job-controller",
        "Upper_Case",
        "a.b",
        "...",
    ] {
        assert_eq!(rbac_name(ok), None, "{ok}");
    }
    assert_eq!(rbac_name("."), Some("may not be '.'".into()));
    assert_eq!(rbac_name(".."), Some("may not be '..'".into()));
    assert_eq!(rbac_name("a/b"), Some("may not contain '/'".into()));
    assert_eq!(rbac_name("a%b"), Some("may not contain '%'".into()));
    assert_eq!(rbac_name("a/%"), Some("may not contain '/'".into()));
    assert_eq!(
        path_segment_problems("a/%"),
        ["may not contain '/'", "may not contain '%'"]
    );
}
