//! Upstream's `pkg/apis/admissionregistration/validation/validation_test.go` (1.33), ported where
//! it tests what lives here (its metadata cases are the Store's), plus the exact words of the
//! rules its cases only match in part. Expressions that must not compile are syntactically
//! broken (`object.x ==`), and only their path and `Invalid value: ` are asserted.

use kubestore_proto::admissionregistration::v1::{
    ExpressionWarning, MatchCondition, TypeChecking, ValidatingAdmissionPolicyStatus, Variable,
};
use kubestore_proto::meta::v1::{LabelSelector, LabelSelectorRequirement, ObjectMeta};

use super::*;

const BROKEN: &str = "object.x ==";

fn strs(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn rule(operations: &[&str], resources: &[&str]) -> NamedRuleWithOperations {
    NamedRuleWithOperations {
        operations: strs(operations),
        api_groups: strs(&["a"]),
        api_versions: strs(&["a"]),
        resources: strs(resources),
        ..Default::default()
    }
}

fn selector() -> Option<LabelSelector> {
    Some(LabelSelector {
        match_labels: [("a".to_string(), "b".to_string())].into(),
        ..Default::default()
    })
}

fn constraints(rules: Vec<NamedRuleWithOperations>) -> MatchResources {
    MatchResources {
        namespace_selector: selector(),
        object_selector: selector(),
        resource_rules: rules,
        match_policy: Some("Exact".into()),
        ..Default::default()
    }
}

fn check(expression: &str) -> Validation {
    Validation {
        expression: expression.into(),
        ..Default::default()
    }
}

fn valid_policy() -> ValidatingAdmissionPolicy {
    ValidatingAdmissionPolicy {
        metadata: Some(ObjectMeta {
            name: "config".into(),
            ..Default::default()
        }),
        spec: Some(ValidatingAdmissionPolicySpec {
            failure_policy: Some("Fail".into()),
            match_constraints: Some(constraints(vec![rule(&["CREATE"], &["a"])])),
            validations: vec![check("object.x < 100")],
            ..Default::default()
        }),
        status: None,
    }
}

fn spec_of(p: &mut ValidatingAdmissionPolicy) -> &mut ValidatingAdmissionPolicySpec {
    p.spec.get_or_insert_with(Default::default)
}

/// The valid policy, its spec changed by `f`.
fn with(f: impl FnOnce(&mut ValidatingAdmissionPolicySpec)) -> ValidatingAdmissionPolicy {
    let mut p = valid_policy();
    f(spec_of(&mut p));
    p
}

/// The valid policy, its spec changed by `f`, validated.
fn policy_with(f: impl FnOnce(&mut ValidatingAdmissionPolicySpec)) -> Violations {
    policy(&with(f))
}

/// The valid policy's match constraints changed by `f`, validated.
fn constraints_with(f: impl FnOnce(&mut MatchResources)) -> Violations {
    policy_with(|s| f(s.match_constraints.get_or_insert_with(Default::default)))
}

fn valid_binding() -> ValidatingAdmissionPolicyBinding {
    ValidatingAdmissionPolicyBinding {
        metadata: Some(ObjectMeta {
            name: "config".into(),
            ..Default::default()
        }),
        spec: Some(ValidatingAdmissionPolicyBindingSpec {
            policy_name: "xyzlimit-scale.example.com".into(),
            param_ref: Some(ParamRef {
                name: "xyzlimit-scale-setting.example.com".into(),
                parameter_not_found_action: Some("Deny".into()),
                ..Default::default()
            }),
            match_resources: Some(constraints(vec![rule(&["CREATE"], &["a"])])),
            validation_actions: strs(&["Deny"]),
        }),
    }
}

/// The valid binding, its spec changed by `f`, validated.
fn binding_with(f: impl FnOnce(&mut ValidatingAdmissionPolicyBindingSpec)) -> Violations {
    let mut b = valid_binding();
    f(b.spec.get_or_insert_with(Default::default));
    binding(&b)
}

/// The valid binding's paramRef changed by `f`, validated.
fn param_ref_with(f: impl FnOnce(&mut ParamRef)) -> Violations {
    binding_with(|s| f(s.param_ref.get_or_insert_with(Default::default)))
}

/// Some violation is at `field` and its description starts with `description`.
#[track_caller]
fn assert_has(v: &Violations, field: &str, description: &str) {
    assert!(
        v.iter()
            .any(|(f, d)| f == field && d.starts_with(description)),
        "no {field}: {description}… in {v:?}"
    );
}

fn only(v: &Violations) -> (&str, &str) {
    assert_eq!(v.len(), 1, "{v:?}");
    v.iter()
        .next()
        .map(|(f, d)| (f.as_str(), d.as_str()))
        .unwrap_or_default()
}

fn fields(v: &Violations) -> Vec<&str> {
    v.iter().map(|(f, _)| f.as_str()).collect()
}

// TestValidateValidatingAdmissionPolicy
#[test]
fn validate_validating_admission_policy() {
    assert!(
        policy(&valid_policy()).is_empty(),
        "{:?}",
        policy(&valid_policy())
    );
    let rc = "spec.matchConstraints.resourceRules[0]";
    let cases: Vec<(&str, Violations, String, &str)> = vec![
        (
            "failure policy validation",
            policy_with(|s| s.failure_policy = Some("other".into())),
            "spec.failurePolicy".into(),
            "Unsupported value: \"other\": supported values: \"Fail\", \"Ignore\"",
        ),
        (
            "API version is required in ParamKind",
            policy_with(|s| {
                s.param_kind = Some(ParamKind {
                    kind: "Example".into(),
                    api_version: "test.example.com".into(),
                })
            }),
            "spec.paramKind.apiVersion".into(),
            "Invalid value: \"test.example.com\"",
        ),
        (
            "API kind is required in ParamKind",
            policy_with(|s| {
                s.param_kind = Some(ParamKind {
                    kind: String::new(),
                    api_version: "test.example.com/v1".into(),
                })
            }),
            "spec.paramKind.kind".into(),
            "Required value",
        ),
        (
            "API version format in ParamKind",
            policy_with(|s| {
                s.param_kind = Some(ParamKind {
                    kind: "Example".into(),
                    api_version: "test.example.com/!!!".into(),
                })
            }),
            "spec.paramKind.apiVersion".into(),
            "Invalid value: \"!!!\":",
        ),
        (
            "API group format in ParamKind",
            policy_with(|s| {
                s.param_kind = Some(ParamKind {
                    kind: "ReplicaLimit".into(),
                    api_version: "!!!/v1".into(),
                })
            }),
            "spec.paramKind.apiVersion".into(),
            "Invalid value: \"!!!\":",
        ),
        (
            "Validations is required",
            policy_with(|s| s.validations.clear()),
            "spec.validations".into(),
            "Required value: validations or auditAnnotations must contain at least one item",
        ),
        (
            "Invalid Validations Reason",
            policy_with(|s| s.validations[0].reason = Some("other".into())),
            "spec.validations[0].reason".into(),
            "Unsupported value: \"other\": supported values: \"Forbidden\", \"Invalid\", \"RequestEntityTooLarge\"",
        ),
        (
            "MatchConstraints is required",
            policy_with(|s| s.match_constraints = None),
            "spec.matchConstraints".into(),
            "Required value",
        ),
        (
            "matchConstraints.resourceRules is required",
            policy_with(|s| s.match_constraints = Some(MatchResources::default())),
            "spec.matchConstraints.resourceRules".into(),
            "Required value",
        ),
        (
            "matchConstraints.resourceRules has at least one explicit rule",
            constraints_with(|m| {
                m.resource_rules = vec![NamedRuleWithOperations {
                    resource_names: strs(&["/./."]),
                    ..Default::default()
                }]
            }),
            format!("{rc}.apiVersions"),
            "Required value",
        ),
        (
            "expression is required",
            policy_with(|s| s.validations = vec![Validation::default()]),
            "spec.validations[0].expression".into(),
            "Required value: expression is not specified",
        ),
        (
            "matchResources resourceNames check",
            constraints_with(|m| m.resource_rules[0].resource_names = strs(&["/./."])),
            format!("{rc}.resourceNames[0]"),
            "Invalid value: \"/./.\": may not contain '/'",
        ),
        (
            "matchResources resourceNames cannot duplicate",
            constraints_with(|m| m.resource_rules[0].resource_names = strs(&["test", "test"])),
            format!("{rc}.resourceNames[1]"),
            "Duplicate value: \"test\"",
        ),
        (
            "matchResources validation: matchPolicy",
            constraints_with(|m| m.match_policy = Some("other".into())),
            "spec.matchConstraints.matchPolicy".into(),
            "Unsupported value: \"other\": supported values: \"Equivalent\", \"Exact\"",
        ),
        (
            "\"\" is NOT a valid operation",
            constraints_with(|m| m.resource_rules = vec![rule(&["CREATE", ""], &["a"])]),
            format!("{rc}.operations[1]"),
            "Unsupported value: \"\": supported values: \"*\", \"CONNECT\", \"CREATE\", \"DELETE\", \"UPDATE\"",
        ),
        (
            "operation must be either create/update/delete/connect",
            constraints_with(|m| m.resource_rules = vec![rule(&["PATCH"], &["a"])]),
            format!("{rc}.operations[0]"),
            "Unsupported value: \"PATCH\"",
        ),
        (
            "wildcard operation cannot be mixed with other strings",
            constraints_with(|m| m.resource_rules = vec![rule(&["CREATE", "*"], &["a"])]),
            format!("{rc}.operations"),
            "Invalid value: []admissionregistration.OperationType{\"CREATE\", \"*\"}: if '*' is present, must not specify other operations",
        ),
        (
            "resource \"*\" cannot mix with resources that don't have subresources",
            constraints_with(|m| m.resource_rules = vec![rule(&["CREATE"], &["*", "a"])]),
            format!("{rc}.resources"),
            "Invalid value: []string{\"*\", \"a\"}: if '*' is present, must not specify other resources without subresources",
        ),
        (
            "resource a/* cannot mix with a/x",
            constraints_with(|m| m.resource_rules = vec![rule(&["CREATE"], &["a/*", "a/x"])]),
            format!("{rc}.resources[1]"),
            "Invalid value: \"a/x\": if 'a/*' is present, must not specify a/x",
        ),
        (
            "resource */a cannot mix with x/a",
            constraints_with(|m| m.resource_rules = vec![rule(&["CREATE"], &["*/a", "x/a"])]),
            format!("{rc}.resources[1]"),
            "Invalid value: \"x/a\": if '*/a' is present, must not specify x/a",
        ),
        (
            "resource */* cannot mix with other resources",
            constraints_with(|m| m.resource_rules = vec![rule(&["CREATE"], &["*/*", "a"])]),
            format!("{rc}.resources"),
            "Invalid value: []string{\"*/*\", \"a\"}: if '*/*' is present, must not specify other resources",
        ),
        (
            "invalid expression",
            policy_with(|s| s.validations = vec![check(BROKEN)]),
            "spec.validations[0].expression".into(),
            "Invalid value: \"object.x ==\": ",
        ),
        (
            "invalid messageExpression",
            policy_with(|s| s.validations[0].message_expression = BROKEN.into()),
            "spec.validations[0].messageExpression".into(),
            "Invalid value: \"object.x ==\": ",
        ),
        (
            "invalid auditAnnotations key due to key name",
            policy_with(|s| {
                s.validations.clear();
                s.audit_annotations = vec![annotation("@", "'value'")];
            }),
            "spec.auditAnnotations[0].key".into(),
            "Invalid value: \"config/@\": name part must consist of alphanumeric characters",
        ),
        (
            "auditAnnotations keys must be unique",
            policy_with(|s| {
                s.audit_annotations = vec![annotation("a", "'1'"), annotation("a", "'2'")]
            }),
            "spec.auditAnnotations[1].key".into(),
            "Duplicate value: \"a\"",
        ),
        (
            "invalid auditAnnotations key due to metadata.name",
            {
                let mut p = with(|s| s.audit_annotations = vec![annotation("key", "'value'")]);
                p.metadata = Some(ObjectMeta {
                    name: "nope!".into(),
                    ..Default::default()
                });
                policy(&p)
            },
            "spec.auditAnnotations[0].key".into(),
            "Invalid value: \"nope!/key\": prefix part a lowercase RFC 1123 subdomain",
        ),
        (
            "invalid auditAnnotations key due to length",
            {
                let mut p = with(|s| {
                    s.audit_annotations = vec![annotation(
                        "this-is-a-long-name-for-an-audit-annotation-key-xxxxxxxxxxxxxxxxxxxxxxxxxx",
                        "'value'",
                    )]
                });
                p.metadata = Some(ObjectMeta {
                    name: "this-is-a-long-name-for-a-admission-policy-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx".into(),
                    ..Default::default()
                });
                policy(&p)
            },
            "spec.auditAnnotations[0].key".into(),
            "Invalid value",
        ),
        (
            "invalid auditAnnotations valueExpression",
            policy_with(|s| s.audit_annotations = vec![annotation("something", BROKEN)]),
            "spec.auditAnnotations[0].valueExpression".into(),
            "Invalid value: \"object.x ==\": ",
        ),
        (
            "single match condition must have a name",
            policy_with(|s| s.match_conditions = vec![condition("", "true")]),
            "spec.matchConditions[0].name".into(),
            "Required value",
        ),
        (
            "variable composition empty name",
            policy_with(|s| s.variables = vec![variable("    ", "true")]),
            "spec.variables[0].name".into(),
            "Required value: name is not specified",
        ),
        (
            "variable composition name is not a valid identifier",
            policy_with(|s| s.variables = vec![variable("4ever", "true")]),
            "spec.variables[0].name".into(),
            "Invalid value: \"4ever\": name is not a valid CEL identifier",
        ),
        (
            "variable composition cannot compile",
            policy_with(|s| s.variables = vec![variable("foo", BROKEN)]),
            "spec.variables[0].expression".into(),
            "Invalid value: \"object.x ==\": ",
        ),
    ];
    for (name, v, field, description) in cases {
        assert!(!v.is_empty(), "{name}");
        assert_has(&v, &field, description);
    }

    // The resource forms upstream accepts.
    for resources in [&["*", "a/b", "a/*", "*/b"][..], &["a/*", "a"], &["*/*"]] {
        let v = constraints_with(|m| m.resource_rules = vec![rule(&["CREATE"], resources)]);
        assert!(v.is_empty(), "{resources:?}: {v:?}");
    }
}

fn annotation(key: &str, value: &str) -> AuditAnnotation {
    AuditAnnotation {
        key: key.into(),
        value_expression: value.into(),
    }
}

fn condition(name: &str, expression: &str) -> MatchCondition {
    MatchCondition {
        name: name.into(),
        expression: expression.into(),
    }
}

fn variable(name: &str, expression: &str) -> Variable {
    Variable {
        name: name.into(),
        expression: expression.into(),
    }
}

// TestValidateValidatingAdmissionPolicy: "Validations is required", every violation of an
// empty spec, in upstream's order.
#[test]
fn an_empty_spec() {
    let v = policy(&ValidatingAdmissionPolicy::default());
    assert_eq!(
        fields(&v),
        [
            "spec.failurePolicy",
            "spec.matchConstraints",
            "spec.validations",
            "spec.auditAnnotations"
        ]
    );
    // An empty match constraint: each required field, then the resource rules.
    let v = constraints_with(|m| *m = MatchResources::default());
    assert_eq!(
        fields(&v),
        [
            "spec.matchConstraints.matchPolicy",
            "spec.matchConstraints.namespaceSelector",
            "spec.matchConstraints.objectSelector",
            "spec.matchConstraints.resourceRules",
        ]
    );
    // An empty rule.
    let v = constraints_with(|m| m.resource_rules = vec![NamedRuleWithOperations::default()]);
    let rc = "spec.matchConstraints.resourceRules[0]";
    assert_eq!(
        fields(&v),
        [
            format!("{rc}.operations"),
            format!("{rc}.apiGroups"),
            format!("{rc}.apiVersions"),
            format!("{rc}.resources"),
        ]
    );
}

// TestValidateValidatingAdmissionPolicy: "Operations must not be empty or nil".
#[test]
fn operations_are_required_in_every_rule() {
    let v = constraints_with(|m| {
        m.resource_rules = vec![rule(&[], &["a"]), rule(&[], &["a"])];
        m.exclude_resource_rules = vec![rule(&[], &["a"]), rule(&[], &["a"])];
    });
    assert_eq!(
        fields(&v),
        [
            "spec.matchConstraints.resourceRules[0].operations",
            "spec.matchConstraints.resourceRules[1].operations",
            "spec.matchConstraints.excludeResourceRules[0].operations",
            "spec.matchConstraints.excludeResourceRules[1].operations",
        ]
    );
    assert!(v.iter().all(|(_, d)| d == "Required value"), "{v:?}");
}

// validateRule's groups, versions and scope.
#[test]
fn rule_groups_versions_and_scope() {
    let rc = "spec.matchConstraints.resourceRules[0]";
    let v = constraints_with(|m| {
        let r = &mut m.resource_rules[0];
        r.api_groups = strs(&["*", "apps"]);
        r.api_versions = strs(&["v1", ""]);
        r.scope = Some("Everywhere".into());
    });
    let got: Vec<(String, String)> = v.iter().cloned().collect();
    let want = [
        (
            format!("{rc}.apiGroups"),
            "Invalid value: []string{\"*\", \"apps\"}: if '*' is present, must not specify other API groups",
        ),
        (format!("{rc}.apiVersions[1]"), "Required value"),
        (
            format!("{rc}.scope"),
            "Unsupported value: \"Everywhere\": supported values: \"*\", \"Cluster\", \"Namespaced\"",
        ),
    ];
    let want: Vec<(String, String)> = want.into_iter().map(|(f, d)| (f, d.to_string())).collect();
    assert_eq!(got, want);
    let v = constraints_with(|m| m.resource_rules[0].api_versions = strs(&["v1", "*"]));
    assert_eq!(
        only(&v),
        (
            "spec.matchConstraints.resourceRules[0].apiVersions",
            "Invalid value: []string{\"v1\", \"*\"}: if '*' is present, must not specify other API versions"
        )
    );
    for scope in ["*", "Cluster", "Namespaced"] {
        let v = constraints_with(|m| m.resource_rules[0].scope = Some(scope.into()));
        assert!(v.is_empty(), "{scope}: {v:?}");
    }
    // An empty resource is required; upstream only counts the last bare resource against `*`.
    let v = constraints_with(|m| m.resource_rules[0].resources = strs(&["a", ""]));
    assert_eq!(
        only(&v),
        (format!("{rc}.resources[1]").as_str(), "Required value")
    );
    let v = constraints_with(|m| m.resource_rules[0].resources = strs(&["a", "*"]));
    assert!(v.is_empty(), "{v:?}");
}

// The selectors of the match constraints are validated strictly.
#[test]
fn selectors_are_validated() {
    let v = constraints_with(|m| {
        m.namespace_selector = Some(LabelSelector {
            match_expressions: vec![LabelSelectorRequirement {
                key: "app".into(),
                operator: "Bogus".into(),
                values: vec![],
            }],
            ..Default::default()
        })
    });
    assert_eq!(
        only(&v),
        (
            "spec.matchConstraints.namespaceSelector.matchExpressions[0].operator",
            "Invalid value: \"Bogus\": not a valid selector operator"
        )
    );
    // An empty selector matches everything.
    let v = constraints_with(|m| m.object_selector = Some(LabelSelector::default()));
    assert!(v.is_empty(), "{v:?}");
}

// validateParamKind.
#[test]
fn param_kinds() {
    let kind = |api_version: &str, kind: &str| {
        policy_with(|s| {
            s.param_kind = Some(ParamKind {
                api_version: api_version.into(),
                kind: kind.into(),
            })
        })
    };
    assert!(kind("v1", "ConfigMap").is_empty());
    assert!(kind("rules.example.com/v1beta1", "ReplicaLimit").is_empty());
    assert_eq!(
        only(&kind("", "ConfigMap")),
        ("spec.paramKind.apiVersion", "Required value")
    );
    assert_eq!(
        only(&kind("a/b/c", "ConfigMap")),
        (
            "spec.paramKind.apiVersion",
            "Invalid value: \"a/b/c\": unexpected GroupVersion string: a/b/c"
        )
    );
    assert_eq!(
        only(&kind("example.com/", "ConfigMap")),
        (
            "spec.paramKind.apiVersion",
            "Invalid value: \"example.com/\": version must be specified"
        )
    );
    assert_eq!(
        only(&kind("/", "ConfigMap")),
        (
            "spec.paramKind.apiVersion",
            "Invalid value: \"/\": version must be specified"
        )
    );
    // Violations bound a description's length; upstream's text is cut where the bound falls.
    let mixed = kind("v1", "Config_Map");
    let (field, description) = only(&mixed);
    assert_eq!(field, "spec.paramKind.kind");
    assert!(
        description.starts_with(
            "Invalid value: \"Config_Map\": may have mixed case, but should otherwise match: a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character"
        ),
        "{description}"
    );
    let long = format!("v{}", "1".repeat(63));
    let v = kind(&long, "ConfigMap");
    let (_, d) = only(&v);
    assert!(d.ends_with(": must be no more than 63 characters"), "{d}");
}

// validateValidation's message, messageExpression and reason.
#[test]
fn validation_messages_and_reasons() {
    let v = policy_with(|s| s.validations[0].message = "  ".into());
    assert_eq!(
        only(&v),
        (
            "spec.validations[0].message",
            "Invalid value: \"  \": message must be non-empty if specified"
        )
    );
    let v = policy_with(|s| s.validations[0].message = "one\ntwo".into());
    assert_eq!(
        only(&v),
        (
            "spec.validations[0].message",
            "Invalid value: \"one\\ntwo\": message must not contain line breaks"
        )
    );
    // Surrounding line breaks are trimmed.
    assert!(policy_with(|s| s.validations[0].message = "fine\n".into()).is_empty());
    let v = policy_with(|s| s.validations[0].message_expression = " ".into());
    assert_eq!(
        only(&v),
        (
            "spec.validations[0].messageExpression",
            "Invalid value: \" \": must be non-empty if specified"
        )
    );
    for reason in ["Forbidden", "Invalid", "RequestEntityTooLarge"] {
        assert!(policy_with(|s| s.validations[0].reason = Some(reason.into())).is_empty());
    }
    // Documented by the API, refused by upstream's validation.
    let v = policy_with(|s| s.validations[0].reason = Some("Unauthorized".into()));
    assert_has(
        &v,
        "spec.validations[0].reason",
        "Unsupported value: \"Unauthorized\"",
    );
}

// validateAuditAnnotation and the audit annotation list.
#[test]
fn audit_annotations() {
    let v = policy_with(|s| {
        s.validations.clear();
        s.audit_annotations = vec![annotation("key", "'value'")];
    });
    assert!(v.is_empty(), "{v:?}");
    let v = policy_with(|s| s.audit_annotations = vec![annotation("key", "  ")]);
    assert_eq!(
        only(&v),
        (
            "spec.auditAnnotations[0].valueExpression",
            "Required value: valueExpression is not specified"
        )
    );
    let long = format!("'{}'", "x".repeat(MAX_VALUE_EXPRESSION_BYTES));
    let v = policy_with(|s| s.audit_annotations = vec![annotation("key", &long)]);
    assert_eq!(
        only(&v),
        (
            "spec.auditAnnotations[0].valueExpression",
            "Required value: must not exceed 5120 bytes in length"
        )
    );
    let many: Vec<AuditAnnotation> = (0..21)
        .map(|i| annotation(&format!("k{i}"), "'v'"))
        .collect();
    let v = policy_with(|s| s.audit_annotations = many);
    let (f, d) = only(&v);
    assert_eq!(f, "spec.auditAnnotations");
    assert!(
        d.starts_with(
            "Invalid value: []admissionregistration.AuditAnnotation{admissionregistration.AuditAnnotation{Key:\"k0\", ValueExpression:\"'v'\"}, "
        ),
        "{d}"
    );
    // Without a name (not yet generated) the key cannot be checked.
    let mut p = with(|s| s.audit_annotations = vec![annotation("key", "'v'")]);
    p.metadata = None;
    assert_eq!(
        only(&policy(&p)),
        (
            "spec.auditAnnotations[0].key",
            "Invalid value: \"key\": requires metadata.name be non-empty"
        )
    );
}

// validateMatchConditions of a policy.
#[test]
fn match_conditions() {
    let v = policy_with(|s| s.match_conditions = vec![condition("a.example.com/ok", "true")]);
    assert!(v.is_empty(), "{v:?}");
    let v = policy_with(|s| {
        s.match_conditions = vec![
            condition("dup", "true"),
            condition("dup", "  "),
            condition("bad name!", BROKEN),
        ]
    });
    let got: Vec<(&str, &str)> = v.iter().map(|(f, d)| (f.as_str(), d.as_str())).collect();
    assert_eq!(got.len(), 4, "{got:?}");
    assert_eq!(
        got[0],
        ("spec.matchConditions[1].expression", "Required value")
    );
    assert_eq!(
        got[1],
        ("spec.matchConditions[1].name", "Duplicate value: \"dup\"")
    );
    assert_eq!(got[2].0, "spec.matchConditions[2].expression");
    assert!(
        got[2].1.starts_with("Invalid value: \"object.x ==\": "),
        "{got:?}"
    );
    assert_eq!(got[3].0, "spec.matchConditions[2].name");
    assert!(
        got[3].1.starts_with("Invalid value: \"bad name!\": "),
        "{got:?}"
    );

    let many: Vec<MatchCondition> = (0..65)
        .map(|i| condition(&format!("test{i}"), "true"))
        .collect();
    let v = policy_with(|s| s.match_conditions = many);
    assert_eq!(
        only(&v),
        (
            "spec.matchConditions",
            "Too many: 65: must have at most 64 items"
        )
    );
}

// validateVariable, and unique names (ours).
#[test]
fn variables() {
    let v = policy_with(|s| {
        s.variables = vec![variable("foo", "1 + 1"), variable("_bar2", "true")];
    });
    assert!(v.is_empty(), "{v:?}");
    let v = policy_with(|s| {
        s.variables = vec![
            variable("foo", "1"),
            variable("foo", "2"),
            variable("namespace", "3"),
            variable("x", " "),
        ]
    });
    let got: Vec<(&str, &str)> = v.iter().map(|(f, d)| (f.as_str(), d.as_str())).collect();
    assert_eq!(
        got,
        [
            ("spec.variables[1].name", "Duplicate value: \"foo\""),
            (
                "spec.variables[2].name",
                "Invalid value: \"namespace\": name is not a valid CEL identifier"
            ),
            (
                "spec.variables[3].expression",
                "Required value: expression is not specified"
            ),
        ]
    );
}

// TestValidateValidatingAdmissionPolicyUpdate
#[test]
fn validate_validating_admission_policy_update() {
    let valid = valid_policy();
    // A valid new policy, whatever the old one was.
    assert!(policy_update(&valid, &valid).is_empty());
    assert!(policy_update(&valid, &ValidatingAdmissionPolicy::default()).is_empty());

    // Match conditions are checked again only when they or the paramKind changed.
    let old = with(|s| s.match_conditions = vec![condition("bad name!", BROKEN)]);
    let new = with(|s| {
        s.match_conditions = vec![condition("bad name!", BROKEN)];
        s.failure_policy = Some("Ignore".into());
        s.validations = vec![check("object.x < 50")];
    });
    assert!(policy_update(&new, &old).is_empty());
    let mut new = new;
    spec_of(&mut new).param_kind = Some(ParamKind {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
    });
    // (The expression is the old one, so it is not compiled again.)
    let v = policy_update(&new, &old);
    assert_eq!(fields(&v), ["spec.matchConditions[0].name"]);
    // The new object's own problems are reported either way.
    let new = with(|s| {
        s.match_conditions = vec![condition("bad name!", BROKEN)];
        s.failure_policy = Some("other".into());
    });
    assert_eq!(fields(&policy_update(&new, &old)), ["spec.failurePolicy"]);
}

// TestValidateValidatingAdmissionPolicyUpdate: expressions that are not changed are not
// compiled again (upstream: in the stored-expressions environment), changed ones are.
#[test]
fn unchanged_expressions_are_not_compiled_again() {
    let broken = |s: &mut ValidatingAdmissionPolicySpec| {
        s.validations = vec![Validation {
            expression: BROKEN.into(),
            message_expression: "object.y ==".into(),
            ..Default::default()
        }];
        s.audit_annotations = vec![annotation("key", "object.z ==")];
        s.match_conditions = vec![condition("c", "object.w ==")];
        s.variables = vec![variable("v", BROKEN)];
    };
    let old = with(broken);
    assert_eq!(policy(&old).len(), 5, "{:?}", policy(&old));
    let mut new = with(broken);
    spec_of(&mut new).failure_policy = Some("Ignore".into());
    assert!(
        policy_update(&new, &old).is_empty(),
        "{:?}",
        policy_update(&new, &old)
    );

    let changed = with(|s| {
        broken(s);
        s.validations[0].expression = "object.a ==".into();
        s.validations[0].message_expression = "object.b ==".into();
        s.audit_annotations[0].value_expression = "object.c ==".into();
        s.match_conditions[0].expression = "object.d ==".into();
        s.variables[0].expression = "object.e ==".into();
    });
    let v = policy_update(&changed, &old);
    assert_eq!(
        fields(&v),
        [
            "spec.matchConditions[0].expression",
            "spec.variables[0].expression",
            "spec.validations[0].expression",
            "spec.validations[0].messageExpression",
            "spec.auditAnnotations[0].valueExpression",
        ]
    );
    assert!(
        v.iter().all(|(_, d)| d.starts_with("Invalid value: ")),
        "{v:?}"
    );
}

// TestValidateValidatingAdmissionPolicyBinding
#[test]
fn validate_validating_admission_policy_binding() {
    assert!(
        binding(&valid_binding()).is_empty(),
        "{:?}",
        binding(&valid_binding())
    );
    let mr = "spec.matchResouces.resourceRules[0]";
    let cases: Vec<(&str, Violations, String, &str)> = vec![
        (
            "PolicyName is required",
            binding_with(|s| s.policy_name.clear()),
            "spec.policyName".into(),
            "Required value",
        ),
        (
            "matchResources validation: matchPolicy",
            binding_with(|s| {
                s.match_resources = Some(MatchResources {
                    match_policy: Some("other".into()),
                    ..Default::default()
                })
            }),
            "spec.matchResouces.matchPolicy".into(),
            "Unsupported value: \"other\": supported values: \"Equivalent\", \"Exact\"",
        ),
        (
            "\"\" is NOT a valid operation",
            binding_with(|s| {
                s.match_resources = Some(constraints(vec![rule(&["CREATE", ""], &["a"])]))
            }),
            format!("{mr}.operations[1]"),
            "Unsupported value: \"\"",
        ),
        (
            "operation must be either create/update/delete/connect",
            binding_with(|s| s.match_resources = Some(constraints(vec![rule(&["PATCH"], &["a"])]))),
            format!("{mr}.operations[0]"),
            "Unsupported value: \"PATCH\"",
        ),
        (
            "wildcard operation cannot be mixed with other strings",
            binding_with(|s| {
                s.match_resources = Some(constraints(vec![rule(&["CREATE", "*"], &["a"])]))
            }),
            format!("{mr}.operations"),
            "Invalid value: []admissionregistration.OperationType{\"CREATE\", \"*\"}: if '*' is present, must not specify other operations",
        ),
        (
            "resource \"*\" cannot mix with resources that don't have subresources",
            binding_with(|s| {
                s.match_resources = Some(constraints(vec![rule(&["CREATE"], &["*", "a"])]))
            }),
            format!("{mr}.resources"),
            "Invalid value: []string{\"*\", \"a\"}: if '*' is present, must not specify other resources without subresources",
        ),
        (
            "resource a/* cannot mix with a/x",
            binding_with(|s| {
                s.match_resources = Some(constraints(vec![rule(&["CREATE"], &["a/*", "a/x"])]))
            }),
            format!("{mr}.resources[1]"),
            "Invalid value: \"a/x\": if 'a/*' is present, must not specify a/x",
        ),
        (
            "resource */a cannot mix with x/a",
            binding_with(|s| {
                s.match_resources = Some(constraints(vec![rule(&["CREATE"], &["*/a", "x/a"])]))
            }),
            format!("{mr}.resources[1]"),
            "Invalid value: \"x/a\": if '*/a' is present, must not specify x/a",
        ),
        (
            "resource */* cannot mix with other resources",
            binding_with(|s| {
                s.match_resources = Some(constraints(vec![rule(&["CREATE"], &["*/*", "a"])]))
            }),
            format!("{mr}.resources"),
            "Invalid value: []string{\"*/*\", \"a\"}: if '*/*' is present, must not specify other resources",
        ),
        (
            "validationActions must be unique",
            binding_with(|s| s.validation_actions = strs(&["Deny", "Deny"])),
            "spec.validationActions[1]".into(),
            "Duplicate value: \"Deny\"",
        ),
        (
            "validationActions must contain supported values",
            binding_with(|s| s.validation_actions = strs(&["illegal"])),
            "spec.validationActions[0]".into(),
            "Unsupported value: \"illegal\": supported values: \"Audit\", \"Deny\", \"Warn\"",
        ),
        (
            "paramRef parameterNotFoundAction must be set",
            param_ref_with(|r| r.parameter_not_found_action = None),
            "spec.paramRef.parameterNotFoundAction".into(),
            "Required value",
        ),
        (
            "paramRef parameterNotFoundAction must be an valid value",
            param_ref_with(|r| r.parameter_not_found_action = Some("invalid".into())),
            "spec.paramRef.parameterNotFoundAction".into(),
            "Unsupported value: \"invalid\": supported values: \"Deny\", \"Allow\"",
        ),
        (
            "paramRef one of name or selector",
            param_ref_with(|r| r.name.clear()),
            "spec.paramRef".into(),
            "Required value: one of name or selector must be specified",
        ),
    ];
    for (name, v, field, description) in cases {
        assert!(!v.is_empty(), "{name}");
        assert_has(&v, &field, description);
    }

    // "Operations must not be empty or nil"
    let v = binding_with(|s| {
        let mut m = constraints(vec![rule(&[], &["a"]), rule(&[], &["a"])]);
        m.exclude_resource_rules = vec![rule(&[], &["a"]), rule(&[], &["a"])];
        s.match_resources = Some(m);
    });
    assert_eq!(
        fields(&v),
        [
            "spec.matchResouces.resourceRules[0].operations",
            "spec.matchResouces.resourceRules[1].operations",
            "spec.matchResouces.excludeResourceRules[0].operations",
            "spec.matchResouces.excludeResourceRules[1].operations",
        ]
    );
}

// TestValidateValidatingAdmissionPolicyBinding: "paramRef selector must not be set when name
// is set", and the selector's own rules.
#[test]
fn param_ref_name_or_selector() {
    let v = param_ref_with(|r| r.selector = selector());
    let got: Vec<(&str, &str)> = v.iter().map(|(f, d)| (f.as_str(), d.as_str())).collect();
    assert_eq!(
        got,
        [
            (
                "spec.paramRef.name",
                "Forbidden: name and selector are mutually exclusive"
            ),
            (
                "spec.paramRef.selector",
                "Forbidden: name and selector are mutually exclusive"
            ),
        ]
    );
    // A selector alone, even an empty one, is a valid reference.
    assert!(
        param_ref_with(|r| {
            r.name.clear();
            r.selector = Some(LabelSelector::default());
        })
        .is_empty()
    );
    let v = param_ref_with(|r| {
        r.name.clear();
        r.selector = Some(LabelSelector {
            match_labels: [("bad key!".to_string(), "v".to_string())].into(),
            ..Default::default()
        });
    });
    assert_eq!(fields(&v), ["spec.paramRef.selector.matchLabels"]);
    assert_eq!(
        only(&param_ref_with(|r| r.name = "a/b".into())),
        (
            "spec.paramRef.name",
            "Invalid value: \"a/b\": may not contain '/'"
        )
    );
    assert_eq!(
        fields(&param_ref_with(
            |r| r.parameter_not_found_action = Some(String::new())
        )),
        ["spec.paramRef.parameterNotFoundAction"]
    );
    assert!(param_ref_with(|r| r.parameter_not_found_action = Some("Allow".into())).is_empty());
    // The namespace, when set, is a DNS label (ours).
    assert!(param_ref_with(|r| r.namespace = "default".into()).is_empty());
    let v = param_ref_with(|r| r.namespace = "Not_A_Namespace".into());
    assert_eq!(fields(&v), ["spec.paramRef.namespace"]);
    assert_has(
        &v,
        "spec.paramRef.namespace",
        "Invalid value: \"Not_A_Namespace\": ",
    );
    // No paramRef at all is valid (a policy without params).
    assert!(binding_with(|s| s.param_ref = None).is_empty());
}

// validateValidationActions: required, and never both Deny and Warn.
#[test]
fn validation_actions() {
    assert_eq!(
        only(&binding_with(|s| s.validation_actions.clear())),
        (
            "spec.validationActions",
            "Required value: at least one validation action is required"
        )
    );
    assert_eq!(
        only(&binding_with(
            |s| s.validation_actions = strs(&["Deny", "Warn"])
        )),
        (
            "spec.validationActions",
            "Invalid value: []admissionregistration.ValidationAction{\"Deny\", \"Warn\"}: must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)"
        )
    );
    for actions in [
        &["Deny", "Audit"][..],
        &["Warn", "Audit"],
        &["Audit"],
        &["Warn"],
    ] {
        assert!(binding_with(|s| s.validation_actions = strs(actions)).is_empty());
    }
    // The policy name is a DNS subdomain.
    let v = binding_with(|s| s.policy_name = "Not A Policy".into());
    assert_eq!(fields(&v), ["spec.policyName"]);
    // An absent spec: the policy name and the actions.
    assert_eq!(
        fields(&binding(&ValidatingAdmissionPolicyBinding::default())),
        ["spec.policyName", "spec.validationActions"]
    );
}

// TestValidateValidatingAdmissionPolicyBindingUpdate
#[test]
fn validate_validating_admission_policy_binding_update() {
    let valid = valid_binding();
    assert!(binding_update(&valid, &valid).is_empty());
    assert!(binding_update(&valid, &ValidatingAdmissionPolicyBinding::default()).is_empty());
    let mut bad = valid.clone();
    bad.spec = None;
    assert_eq!(binding_update(&bad, &valid).len(), 2);
}

fn with_status(status: ValidatingAdmissionPolicyStatus) -> Violations {
    let mut p = valid_policy();
    p.status = Some(status);
    status_update(&p, &valid_policy())
}

fn warnings(list: Vec<ExpressionWarning>) -> ValidatingAdmissionPolicyStatus {
    ValidatingAdmissionPolicyStatus {
        type_checking: Some(TypeChecking {
            expression_warnings: list,
        }),
        ..Default::default()
    }
}

// TestValidateValidatingAdmissionPolicyStatus
#[test]
fn validate_validating_admission_policy_status() {
    assert!(with_status(ValidatingAdmissionPolicyStatus::default()).is_empty());
    assert!(status_update(&valid_policy(), &valid_policy()).is_empty());
    let warning = |field_ref: &str, warning: &str| ExpressionWarning {
        field_ref: field_ref.into(),
        warning: warning.into(),
    };
    assert!(
        with_status(warnings(vec![warning(
            "spec.validations[0].expression",
            "message"
        )]))
        .is_empty()
    );
    assert_eq!(
        only(&with_status(warnings(vec![warning(
            "spec.validations[0].expression",
            ""
        )]))),
        (
            "status.typeChecking.expressionWarnings[0].warning",
            "Required value"
        )
    );
    assert_eq!(
        only(&with_status(warnings(vec![warning(" ", "message")]))),
        (
            "status.typeChecking.expressionWarnings[0].fieldRef",
            "Required value"
        )
    );
}

// metav1validation's ValidateConditions on the status.
#[test]
fn status_conditions() {
    let good = Condition {
        r#type: "Ready".into(),
        status: "True".into(),
        observed_generation: 1,
        last_transition_time: Some(pbjson_types::Timestamp {
            seconds: 1,
            nanos: 0,
        }),
        reason: "AllGood".into(),
        message: "fine".into(),
    };
    let status = |conditions: Vec<Condition>| ValidatingAdmissionPolicyStatus {
        conditions,
        ..Default::default()
    };
    assert!(with_status(status(vec![good.clone()])).is_empty());
    let bad = Condition {
        r#type: "-bad-name".into(),
        status: "invalid".into(),
        observed_generation: -1,
        last_transition_time: None,
        reason: "-Reason".into(),
        message: String::new(),
    };
    let v = with_status(status(vec![good.clone(), good.clone(), bad]));
    let got: Vec<(&str, &str)> = v.iter().map(|(f, d)| (f.as_str(), d.as_str())).collect();
    assert_eq!(got.len(), 6, "{got:?}");
    assert_eq!(
        got[0],
        ("status.conditions[1].type", "Duplicate value: \"Ready\"")
    );
    assert_eq!(got[1].0, "status.conditions[2].type");
    assert!(
        got[1].1.starts_with("Invalid value: \"-bad-name\": "),
        "{got:?}"
    );
    assert_eq!(
        got[2],
        (
            "status.conditions[2].status",
            "Unsupported value: \"invalid\": supported values: \"False\", \"True\", \"Unknown\""
        )
    );
    assert_eq!(
        got[3],
        (
            "status.conditions[2].observedGeneration",
            "Invalid value: -1: must be greater than or equal to zero"
        )
    );
    assert_eq!(
        got[4],
        (
            "status.conditions[2].lastTransitionTime",
            "Required value: must be set"
        )
    );
    assert_eq!(got[5].0, "status.conditions[2].reason");
    assert!(
        got[5].1.starts_with(
            "Invalid value: \"-Reason\": a condition reason must start with alphabetic character"
        ),
        "{got:?}"
    );

    let mut long = good.clone();
    long.reason = format!("A{}", "b".repeat(1024));
    long.message = "m".repeat(32 * 1024 + 1);
    let v = with_status(status(vec![long]));
    let got: Vec<(&str, &str)> = v.iter().map(|(f, d)| (f.as_str(), d.as_str())).collect();
    assert_eq!(
        got,
        [
            (
                "status.conditions[0].reason",
                "Too long: may not be more than 1024 bytes"
            ),
            (
                "status.conditions[0].message",
                "Too long: may not be more than 32768 bytes"
            ),
        ]
    );
    let mut missing = good;
    missing.reason.clear();
    assert_eq!(
        only(&with_status(status(vec![missing]))),
        ("status.conditions[0].reason", "Required value: must be set")
    );
}

// Helpers: CEL identifiers, DNS-1035 labels, path segments.
#[test]
fn helpers() {
    for ok in ["a", "_", "foo_bar", "Foo9", "nullable"] {
        assert!(is_cel_identifier(ok), "{ok}");
    }
    for bad in ["", "4ever", "a-b", "true", "in", "while", "a.b", "é"] {
        assert!(!is_cel_identifier(bad), "{bad}");
    }
    assert_eq!(dns1035("v1"), "");
    assert_eq!(dns1035("1v"), DNS1035_MESSAGE);
    assert_eq!(dns1035(""), DNS1035_MESSAGE);
    assert_eq!(
        dns1035(&"a".repeat(64)),
        "must be no more than 63 characters"
    );
    assert_eq!(
        dns1035(&"A".repeat(64)),
        format!("must be no more than 63 characters,{DNS1035_MESSAGE}")
    );
    assert_eq!(path_segment_problems(".."), ["may not be '..'"]);
    assert_eq!(
        path_segment_problems("a/%"),
        ["may not contain '/'", "may not contain '%'"]
    );
    assert_eq!(group_version("v1"), Some(("", "v1")));
    assert_eq!(group_version("apps/v1"), Some(("apps", "v1")));
    assert_eq!(group_version("/"), Some(("", "")));
    assert_eq!(group_version("a/b/c"), None);
}
