//! Validation of ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding: upstream's
//! `pkg/apis/admissionregistration/validation/validation.go` (1.33) with its field paths, words
//! and order, as pure functions over the stored messages. Metadata is the Store's; these check
//! `spec` (and `status` on a status update) of objects already defaulted as upstream defaults
//! them (failurePolicy, matchPolicy, the two selectors, a rule's scope), so a field upstream
//! defaults is `Required value` here only when the caller did not default it.
//!
//! Values are rendered as upstream renders them (Go's `%#v` for lists:
//! `[]admissionregistration.OperationType{"CREATE", "*"}`); strings are quoted with Rust's `{:?}`
//! as elsewhere in registry-svc. Upstream's own quirks are kept: a binding's match resources are
//! at `spec.matchResouces` (sic), a validation's `reason` may not be `Unauthorized` (which the
//! API's documentation lists), and `resources: ["a", "*"]` is not reported where
//! `["*", "a"]` is. Deliberate differences:
//! - CEL is checked by [`compile_error`], on the source alone: upstream's per-field
//!   environment (`params` only with a paramKind, `variables.*` only as declared, no authorizer
//!   in a messageExpression), result types (bool, string) and cost limits are not checked here.
//! - Upstream compiles an expression the old object already had in its more permissive
//!   stored-expressions environment; kubestore has one environment, so such an expression is
//!   not compiled again on update (the old object passed it, or predates it).
//! - Variable names are unique (`Duplicate value`), as upstream's types document but its
//!   validation does not check; a paramRef's namespace, when set, is a DNS label (upstream
//!   does not check it, and no namespace could hold the parameter otherwise).
//! - A status warning's fieldRef is required but not parsed as JSONPath (kubestore's JSONPath
//!   lacks the slices upstream's accepts).
//! - DNS names and qualified names are described by `crate::validation`'s one problem each
//!   where upstream may list two.

use std::collections::HashSet;

use kubestore_proto::admissionregistration::v1::{
    AuditAnnotation, MatchResources, NamedRuleWithOperations, ParamKind, ParamRef,
    ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
    ValidatingAdmissionPolicyBindingSpec, ValidatingAdmissionPolicySpec, Validation,
};
use kubestore_proto::meta::v1::Condition;

use super::pod_validation::scheduling::label_selector;
use crate::{
    admission::policy::compile_error,
    validation::{dns1123_label, dns1123_subdomain, qualified_name},
    violations::{MAX_DESCRIPTION_BYTES, Violations},
};

#[cfg(test)]
#[path = "admission_policy_validation_tests.rs"]
mod tests;

pub(super) const FAILURE_POLICIES: &[&str] = &["Fail", "Ignore"];
pub(super) const MATCH_POLICIES: &[&str] = &["Equivalent", "Exact"];
const SCOPES: &[&str] = &["*", "Cluster", "Namespaced"];
const OPERATIONS: &[&str] = &["*", "CONNECT", "CREATE", "DELETE", "UPDATE"];
const REASONS: &[&str] = &["Forbidden", "Invalid", "RequestEntityTooLarge"];
const ACTIONS: &[&str] = &["Audit", "Deny", "Warn"];
const NOT_FOUND_ACTIONS: &[&str] = &["Deny", "Allow"];
const CONDITION_STATUSES: &[&str] = &["False", "True", "Unknown"];
/// Upstream's `maxAuditAnnotations`.
const MAX_AUDIT_ANNOTATIONS: usize = 20;
/// Upstream's `maxAuditAnnotationValueExpressionLength`.
const MAX_VALUE_EXPRESSION_BYTES: usize = 5 * 1024;
pub(super) const MAX_MATCH_CONDITIONS: usize = 64;
/// CEL's reserved words, which are not identifiers.
const CEL_RESERVED: &str = "true false null in as break const continue else for function if import \
    let loop package namespace return var void while";
const DNS1035_MESSAGE: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
const REASON_MESSAGE: &str = "a condition reason must start with alphabetic character, optionally followed by a string of alphanumeric characters or '_,:', and must end with an alphanumeric character or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName',  or 'ReasonA,ReasonB',  or 'ReasonA:ReasonB', regex used for validation is '[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?')";

/// What an update relaxes (upstream's `validationOptions` of a policy update).
#[derive(Default)]
struct Options<'a> {
    /// Neither the match conditions nor the paramKind changed: the conditions are not checked.
    ignore_match_conditions: bool,
    /// The old object's expressions, by where upstream looks them up.
    match_conditions: HashSet<&'a str>,
    validations: HashSet<&'a str>,
    messages: HashSet<&'a str>,
    audit_values: HashSet<&'a str>,
}

pub(super) fn required(v: &mut Violations, path: impl Into<String>, detail: &str) {
    let description = if detail.is_empty() {
        "Required value".to_string()
    } else {
        format!("Required value: {detail}")
    };
    v.push((path.into(), description));
}

/// Upstream's `field.Invalid` of a string value.
pub(super) fn invalid(v: &mut Violations, path: impl Into<String>, value: &str, detail: &str) {
    invalid_as(v, path, &format!("{value:?}"), detail);
}

/// Upstream's `field.Invalid` of a value already rendered.
pub(super) fn invalid_as(
    v: &mut Violations,
    path: impl Into<String>,
    rendered: &str,
    detail: &str,
) {
    v.push((path.into(), format!("Invalid value: {rendered}: {detail}")));
}

pub(super) fn duplicate(v: &mut Violations, path: impl Into<String>, value: &str) {
    v.push((path.into(), format!("Duplicate value: {value:?}")));
}

/// A required field with one of the `supported` values.
pub(super) fn one_of(
    v: &mut Violations,
    path: impl Into<String>,
    value: Option<&str>,
    supported: &[&str],
) {
    match value {
        None => required(v, path, ""),
        Some(x) if !supported.contains(&x) => not_supported(v, path, x, supported),
        Some(_) => {}
    }
}

/// Upstream's `field.NotSupported`.
pub(super) fn not_supported(
    v: &mut Violations,
    path: impl Into<String>,
    value: &str,
    supported: &[&str],
) {
    let quoted: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
    let description = format!(
        "Unsupported value: {value:?}: supported values: {}",
        quoted.join(", ")
    );
    v.push((path.into(), description));
}

/// Go's `%#v` of a slice of strings of type `ty` (`string`, `admissionregistration.…`).
pub(super) fn go_list(ty: &str, items: &[String]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| format!("{s:?}")).collect();
    format!("[]{ty}{{{}}}", quoted.join(", "))
}

/// `Invalid value: "<expr>": <error>` at `path` when `source` does not compile, unless the old
/// object already had it (`stored`).
pub(super) fn compile(expr: &str, source: &str, stored: bool, path: String, v: &mut Violations) {
    if !stored && let Some(e) = compile_error(source) {
        invalid(v, path, expr, &e);
    }
}

/// Upstream's `IsValidPathSegmentName`.
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

/// Upstream's `IsDNS1035Label`, its problems joined with "," (empty when valid).
pub(super) fn dns1035(s: &str) -> String {
    let mut problems = Vec::new();
    if s.len() > 63 {
        problems.push("must be no more than 63 characters");
    }
    let b = s.as_bytes();
    let ok = b.first().is_some_and(u8::is_ascii_lowercase)
        && b.last()
            .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-');
    if !ok {
        problems.push(DNS1035_MESSAGE);
    }
    problems.join(",")
}

/// Upstream's `isCELIdentifier`: `[_a-zA-Z][_a-zA-Z0-9]*`, not a reserved word.
fn is_cel_identifier(name: &str) -> bool {
    let b = name.as_bytes();
    b.first()
        .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
        && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_')
        && !CEL_RESERVED.split_whitespace().any(|w| w == name)
}

/// Upstream's `ValidateValidatingAdmissionPolicy`, less the metadata.
pub fn policy(p: &ValidatingAdmissionPolicy) -> Violations {
    let mut v = Violations::new();
    policy_spec(p, &Options::default(), &mut v);
    v
}

/// Upstream's `ValidateValidatingAdmissionPolicyUpdate`, less the metadata: [`policy`] of the
/// new object, except that its match conditions are not checked when neither they nor the
/// paramKind changed, and expressions the old object had are not compiled again.
pub fn policy_update(
    new: &ValidatingAdmissionPolicy,
    old: &ValidatingAdmissionPolicy,
) -> Violations {
    let zero = ValidatingAdmissionPolicySpec::default();
    let (n, o) = (
        new.spec.as_ref().unwrap_or(&zero),
        old.spec.as_ref().unwrap_or(&zero),
    );
    let mut opts = Options {
        ignore_match_conditions: n.param_kind == o.param_kind
            && n.match_conditions == o.match_conditions,
        ..Options::default()
    };
    opts.match_conditions
        .extend(o.match_conditions.iter().map(|c| c.expression.as_str()));
    for val in &o.validations {
        opts.validations.insert(val.expression.as_str());
        if !val.message_expression.is_empty() {
            opts.messages.insert(val.message_expression.as_str());
        }
    }
    opts.audit_values.extend(
        o.audit_annotations
            .iter()
            .map(|a| a.value_expression.as_str()),
    );
    let mut v = Violations::new();
    policy_spec(new, &opts, &mut v);
    v
}

/// Upstream's `validateValidatingAdmissionPolicySpec`.
fn policy_spec(p: &ValidatingAdmissionPolicy, o: &Options<'_>, v: &mut Violations) {
    let zero = ValidatingAdmissionPolicySpec::default();
    let s = p.spec.as_ref().unwrap_or(&zero);
    let failure_policy = s.failure_policy.as_deref();
    one_of(v, "spec.failurePolicy", failure_policy, FAILURE_POLICIES);
    if let Some(k) = &s.param_kind {
        param_kind(k, v);
    }
    match &s.match_constraints {
        None => required(v, "spec.matchConstraints", ""),
        Some(m) => {
            match_resources(m, "spec.matchConstraints", v);
            // At least one resource rule, for type information.
            if m.resource_rules.is_empty() {
                required(v, "spec.matchConstraints.resourceRules", "");
            }
        }
    }
    if !o.ignore_match_conditions {
        super::webhook_validation::match_conditions(
            &s.match_conditions,
            "spec.matchConditions",
            &o.match_conditions,
            v,
        );
    }
    let mut names = HashSet::new();
    for (i, var) in s.variables.iter().enumerate() {
        let at = |f: &str| format!("spec.variables[{i}].{f}");
        let (name, e) = (&var.name, &var.expression);
        if name.trim().is_empty() {
            required(v, at("name"), "name is not specified");
        } else if !is_cel_identifier(name) {
            invalid(v, at("name"), name, "name is not a valid CEL identifier");
        } else if !names.insert(name.as_str()) {
            duplicate(v, at("name"), name);
        }
        if e.trim().is_empty() {
            required(v, at("expression"), "expression is not specified");
        } else {
            // Upstream looks a variable up among the old validation expressions.
            let stored = o.validations.contains(e.as_str());
            compile(e, e, stored, at("expression"), v);
        }
    }
    if s.validations.is_empty() && s.audit_annotations.is_empty() {
        const AT_LEAST_ONE: &str = "validations or auditAnnotations must contain at least one item";
        required(v, "spec.validations", AT_LEAST_ONE);
        required(v, "spec.auditAnnotations", AT_LEAST_ONE);
        return;
    }
    for (i, val) in s.validations.iter().enumerate() {
        validation(val, &format!("spec.validations[{i}]"), o, v);
    }
    if s.audit_annotations.len() > MAX_AUDIT_ANNOTATIONS {
        invalid_audit_annotations(&s.audit_annotations, v);
    }
    let name = p.metadata.as_ref().map_or("", |m| m.name.as_str());
    let mut keys = HashSet::new();
    for (i, a) in s.audit_annotations.iter().enumerate() {
        let path = format!("spec.auditAnnotations[{i}]");
        audit_annotation(a, name, &path, o, v);
        if !keys.insert(a.key.as_str()) {
            duplicate(v, format!("{path}.key"), &a.key);
        }
    }
}

/// Too many audit annotations, the list rendered as Go's `%#v` (only as far as a violation
/// keeps).
fn invalid_audit_annotations(list: &[AuditAnnotation], v: &mut Violations) {
    let mut items = String::new();
    for a in list {
        if items.len() > MAX_DESCRIPTION_BYTES {
            break;
        }
        if !items.is_empty() {
            items.push_str(", ");
        }
        let (key, value) = (&a.key, &a.value_expression);
        items.push_str(&format!(
            "admissionregistration.AuditAnnotation{{Key:{key:?}, ValueExpression:{value:?}}}"
        ));
    }
    let rendered = format!("[]admissionregistration.AuditAnnotation{{{items}}}");
    let detail = format!("must not have more than {MAX_AUDIT_ANNOTATIONS} auditAnnotations");
    invalid_as(v, "spec.auditAnnotations", &rendered, &detail);
}

/// Upstream's `validateParamKind`.
fn param_kind(k: &ParamKind, v: &mut Violations) {
    const VERSION: &str = "spec.paramKind.apiVersion";
    let gv = &k.api_version;
    if gv.is_empty() {
        required(v, VERSION, "");
    } else {
        let unexpected = || format!("unexpected GroupVersion string: {gv}");
        match group_version(gv) {
            None => invalid(v, VERSION, gv, &unexpected()),
            Some((group, version)) => {
                if !group.is_empty()
                    && let Some(e) = dns1123_subdomain(group)
                {
                    invalid(v, VERSION, group, &e);
                }
                if version.is_empty() {
                    invalid(v, VERSION, gv, "version must be specified");
                } else {
                    let e = dns1035(version);
                    if !e.is_empty() {
                        invalid(v, VERSION, version, &e);
                    }
                }
            }
        }
    }
    if k.kind.is_empty() {
        required(v, "spec.paramKind.kind", "");
    } else {
        let e = dns1035(&k.kind.to_lowercase());
        if !e.is_empty() {
            let detail = format!("may have mixed case, but should otherwise match: {e}");
            invalid(v, "spec.paramKind.kind", &k.kind, &detail);
        }
    }
}

/// Upstream's `parseGroupVersion` of a non-empty `group/version`: `None` with more than one '/'.
fn group_version(gv: &str) -> Option<(&str, &str)> {
    match gv.matches('/').count() {
        _ if gv == "/" => Some(("", "")),
        0 => Some(("", gv)),
        1 => gv.split_once('/'),
        _ => None,
    }
}

/// Whether `list` holds `*` and something else.
fn mixed_wildcard(list: &[String]) -> bool {
    list.len() > 1 && list.iter().any(|s| s == "*")
}

/// Upstream's `validateMatchResources` of the match resources at `path`.
fn match_resources(m: &MatchResources, path: &str, v: &mut Violations) {
    let policy = m.match_policy.as_deref();
    one_of(v, format!("{path}.matchPolicy"), policy, MATCH_POLICIES);
    for (field, selector) in [
        ("namespaceSelector", &m.namespace_selector),
        ("objectSelector", &m.object_selector),
    ] {
        match selector {
            None => required(v, format!("{path}.{field}"), ""),
            Some(s) => label_selector(s, &format!("{path}.{field}"), v),
        }
    }
    for (field, rules) in [
        ("resourceRules", &m.resource_rules),
        ("excludeResourceRules", &m.exclude_resource_rules),
    ] {
        for (i, r) in rules.iter().enumerate() {
            named_rule(r, &format!("{path}.{field}[{i}]"), v);
        }
    }
}

/// Upstream's `validateNamedRuleWithOperations`, `validateRuleWithOperations` and
/// `validateRule` (subresources allowed) of the rule at `path`.
pub(super) fn named_rule(r: &NamedRuleWithOperations, path: &str, v: &mut Violations) {
    let mut names = HashSet::new();
    for (i, name) in r.resource_names.iter().enumerate() {
        let at = format!("{path}.resourceNames[{i}]");
        for e in path_segment_problems(name) {
            invalid(v, at.clone(), name, &e);
        }
        if !names.insert(name.as_str()) {
            duplicate(v, at, name);
        }
    }
    let ops = format!("{path}.operations");
    if r.operations.is_empty() {
        required(v, ops.clone(), "");
    }
    if mixed_wildcard(&r.operations) {
        let value = go_list("admissionregistration.OperationType", &r.operations);
        let detail = "if '*' is present, must not specify other operations";
        invalid_as(v, ops.clone(), &value, detail);
    }
    for (i, op) in r.operations.iter().enumerate() {
        if !OPERATIONS.contains(&op.as_str()) {
            not_supported(v, format!("{ops}[{i}]"), op, OPERATIONS);
        }
    }
    for (field, list, what) in [
        ("apiGroups", &r.api_groups, "API groups"),
        ("apiVersions", &r.api_versions, "API versions"),
    ] {
        if list.is_empty() {
            required(v, format!("{path}.{field}"), "");
        }
        if mixed_wildcard(list) {
            let detail = format!("if '*' is present, must not specify other {what}");
            invalid_as(
                v,
                format!("{path}.{field}"),
                &go_list("string", list),
                &detail,
            );
        }
    }
    for (i, version) in r.api_versions.iter().enumerate() {
        if version.is_empty() {
            required(v, format!("{path}.apiVersions[{i}]"), "");
        }
    }
    resources(&r.resources, &format!("{path}.resources"), v);
    if let Some(scope) = &r.scope
        && !SCOPES.contains(&scope.as_str())
    {
        not_supported(v, format!("{path}.scope"), scope, SCOPES);
    }
}

/// Upstream's `validateResources`: `resource`, `resource/subresource`, and the wildcards `*`,
/// `x/*`, `*/x` and `*/*` without overlap.
fn resources(list: &[String], path: &str, v: &mut Violations) {
    if list.is_empty() {
        required(v, path, "");
    }
    let mut any_subresource: HashSet<&str> = HashSet::new(); // x/*
    let mut any_resource: HashSet<&str> = HashSet::new(); // */x
    let (mut double, mut single, mut bare) = (false, false, false);
    for (i, rs) in list.iter().enumerate() {
        if rs.is_empty() {
            required(v, format!("{path}[{i}]"), "");
            continue;
        }
        double |= rs == "*/*";
        single |= rs == "*";
        let Some((res, sub)) = rs.split_once('/') else {
            // Upstream assigns rather than accumulates: only the last bare resource counts.
            bare = rs != "*";
            continue;
        };
        let overlap =
            |wildcard: String| format!("if '{wildcard}' is present, must not specify {rs}");
        if any_subresource.contains(res) {
            invalid(v, format!("{path}[{i}]"), rs, &overlap(format!("{res}/*")));
        }
        if any_resource.contains(sub) {
            invalid(v, format!("{path}[{i}]"), rs, &overlap(format!("*/{sub}")));
        }
        if sub == "*" {
            any_subresource.insert(res);
        }
        if res == "*" {
            any_resource.insert(sub);
        }
    }
    if list.len() > 1 && double {
        let detail = "if '*/*' is present, must not specify other resources";
        invalid_as(v, path, &go_list("string", list), detail);
    }
    if single && bare {
        let detail = "if '*' is present, must not specify other resources without subresources";
        invalid_as(v, path, &go_list("string", list), detail);
    }
}

/// Upstream's `validateValidation` of the validation at `path`.
fn validation(val: &Validation, path: &str, o: &Options<'_>, v: &mut Violations) {
    let at = |f: &str| format!("{path}.{f}");
    let (e, me, message) = (&val.expression, &val.message_expression, &val.message);
    if e.trim().is_empty() {
        required(v, at("expression"), "expression is not specified");
    } else {
        compile(
            e,
            e,
            o.validations.contains(e.as_str()),
            at("expression"),
            v,
        );
    }
    if !me.is_empty() && me.trim().is_empty() {
        invalid(
            v,
            at("messageExpression"),
            me,
            "must be non-empty if specified",
        );
    } else if !me.trim().is_empty() {
        compile(
            me,
            me,
            o.messages.contains(me.as_str()),
            at("messageExpression"),
            v,
        );
    }
    if !message.is_empty() && message.trim().is_empty() {
        invalid(
            v,
            at("message"),
            message,
            "message must be non-empty if specified",
        );
    } else if message.trim().contains(['\n', '\r']) {
        invalid(
            v,
            at("message"),
            message,
            "message must not contain line breaks",
        );
    }
    if let Some(reason) = &val.reason
        && !REASONS.contains(&reason.as_str())
    {
        not_supported(v, at("reason"), reason, REASONS);
    }
}

/// Upstream's `validateAuditAnnotation` of the annotation at `path`, of the policy `name`.
fn audit_annotation(
    a: &AuditAnnotation,
    name: &str,
    path: &str,
    o: &Options<'_>,
    v: &mut Violations,
) {
    if name.is_empty() {
        let detail = "requires metadata.name be non-empty";
        invalid(v, format!("{path}.key"), &a.key, detail);
    } else {
        let key = format!("{name}/{}", a.key);
        if let Some(e) = qualified_name(&key) {
            invalid(v, format!("{path}.key"), &key, &e);
        }
    }
    let at = format!("{path}.valueExpression");
    let value = a.value_expression.trim();
    if value.is_empty() {
        required(v, at, "valueExpression is not specified");
    } else if value.len() > MAX_VALUE_EXPRESSION_BYTES {
        let detail = format!("must not exceed {MAX_VALUE_EXPRESSION_BYTES} bytes in length");
        required(v, at, &detail);
    } else {
        let stored = o.audit_values.contains(a.value_expression.as_str());
        compile(&a.value_expression, value, stored, at, v);
    }
}

/// Upstream's `ValidateValidatingAdmissionPolicyBinding`, less the metadata.
pub fn binding(b: &ValidatingAdmissionPolicyBinding) -> Violations {
    let mut v = Violations::new();
    let zero = ValidatingAdmissionPolicyBindingSpec::default();
    let s = b.spec.as_ref().unwrap_or(&zero);
    if s.policy_name.is_empty() {
        required(&mut v, "spec.policyName", "");
    } else if let Some(e) = dns1123_subdomain(&s.policy_name) {
        invalid(&mut v, "spec.policyName", &s.policy_name, &e);
    }
    if let Some(r) = &s.param_ref {
        param_ref(r, &mut v);
    }
    if let Some(m) = &s.match_resources {
        // Upstream's path, misspelt.
        match_resources(m, "spec.matchResouces", &mut v);
    }
    validation_actions(&s.validation_actions, &mut v);
    v
}

/// Upstream's `ValidateValidatingAdmissionPolicyBindingUpdate`, less the metadata: [`binding`]
/// of the new object.
pub fn binding_update(
    new: &ValidatingAdmissionPolicyBinding,
    _old: &ValidatingAdmissionPolicyBinding,
) -> Violations {
    binding(new)
}

/// Upstream's `validateParamRef`, and the namespace (ours).
fn param_ref(r: &ParamRef, v: &mut Violations) {
    const EXCLUSIVE: &str = "Forbidden: name and selector are mutually exclusive";
    if !r.name.is_empty() {
        for e in path_segment_problems(&r.name) {
            invalid(v, "spec.paramRef.name", &r.name, &e);
        }
        if r.selector.is_some() {
            v.push(("spec.paramRef.name".into(), EXCLUSIVE.into()));
        }
    }
    if let Some(selector) = &r.selector {
        label_selector(selector, "spec.paramRef.selector", v);
        if !r.name.is_empty() {
            v.push(("spec.paramRef.selector".into(), EXCLUSIVE.into()));
        }
    }
    if r.name.is_empty() && r.selector.is_none() {
        let detail = "one of name or selector must be specified";
        required(v, "spec.paramRef", detail);
    }
    if !r.namespace.is_empty()
        && let Some(e) = dns1123_label(&r.namespace)
    {
        invalid(v, "spec.paramRef.namespace", &r.namespace, &e);
    }
    let action = r
        .parameter_not_found_action
        .as_deref()
        .filter(|a| !a.is_empty());
    one_of(
        v,
        "spec.paramRef.parameterNotFoundAction",
        action,
        NOT_FOUND_ACTIONS,
    );
}

/// Upstream's `validateValidationActions`.
fn validation_actions(actions: &[String], v: &mut Violations) {
    const PATH: &str = "spec.validationActions";
    let mut seen = HashSet::new();
    for (i, a) in actions.iter().enumerate() {
        if !ACTIONS.contains(&a.as_str()) {
            not_supported(v, format!("{PATH}[{i}]"), a, ACTIONS);
        }
        if !seen.insert(a.as_str()) {
            duplicate(v, format!("{PATH}[{i}]"), a);
        }
    }
    if seen.contains("Deny") && seen.contains("Warn") {
        let value = go_list("admissionregistration.ValidationAction", actions);
        let detail = "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)";
        invalid_as(v, PATH, &value, detail);
    }
    if seen.is_empty() {
        required(v, PATH, "at least one validation action is required");
    }
}

/// Upstream's `ValidateValidatingAdmissionPolicyStatusUpdate`: the new status's type-checking
/// warnings and conditions.
pub fn status_update(
    new: &ValidatingAdmissionPolicy,
    _old: &ValidatingAdmissionPolicy,
) -> Violations {
    let mut v = Violations::new();
    let Some(status) = &new.status else {
        return v;
    };
    let warnings = status
        .type_checking
        .iter()
        .flat_map(|t| &t.expression_warnings);
    for (i, w) in warnings.enumerate() {
        let path = format!("status.typeChecking.expressionWarnings[{i}]");
        if w.warning.is_empty() {
            required(&mut v, format!("{path}.warning"), "");
        }
        if w.field_ref.trim().is_empty() {
            required(&mut v, format!("{path}.fieldRef"), "");
        }
    }
    conditions(&status.conditions, "status.conditions", &mut v);
    v
}

/// metav1validation's `ValidateConditions` of the conditions at `path`.
fn conditions(list: &[Condition], path: &str, v: &mut Violations) {
    let mut types = HashSet::new();
    for (i, c) in list.iter().enumerate() {
        let at = |f: &str| format!("{path}[{i}].{f}");
        if !types.insert(c.r#type.as_str()) {
            duplicate(v, at("type"), &c.r#type);
        }
        if let Some(e) = qualified_name(&c.r#type) {
            invalid(v, at("type"), &c.r#type, &e);
        }
        if !CONDITION_STATUSES.contains(&c.status.as_str()) {
            not_supported(v, at("status"), &c.status, CONDITION_STATUSES);
        }
        if c.observed_generation < 0 {
            let generation = c.observed_generation.to_string();
            let detail = "must be greater than or equal to zero";
            invalid_as(v, at("observedGeneration"), &generation, detail);
        }
        if c.last_transition_time.is_none() {
            required(v, at("lastTransitionTime"), "must be set");
        }
        let r = c.reason.as_bytes();
        if r.is_empty() {
            required(v, at("reason"), "must be set");
        } else {
            let inner = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b',' | b':');
            let ok = r[0].is_ascii_alphabetic()
                && r.iter().all(inner)
                && r.last()
                    .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_');
            if !ok {
                invalid(v, at("reason"), &c.reason, REASON_MESSAGE);
            }
            if r.len() > 1024 {
                let description = "Too long: may not be more than 1024 bytes";
                v.push((at("reason"), description.into()));
            }
        }
        if c.message.len() > 32 * 1024 {
            let description = "Too long: may not be more than 32768 bytes";
            v.push((at("message"), description.into()));
        }
    }
}
