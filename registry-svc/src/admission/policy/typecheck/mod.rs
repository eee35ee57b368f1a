//! Type checking of ValidatingAdmissionPolicies (upstream's
//! `pkg/admission/plugin/policy/validating/typechecking.go`): the warnings a policy's
//! `status.typeChecking.expressionWarnings` carries, found against the schemas of the kinds the
//! policy matches, without evaluating anything and without ever changing what the policy does.
//!
//! - **Which kinds** ([`type_check`]): those of `matchConstraints.resourceRules` that name their
//!   groups, versions and resources explicitly: a rule with `*` in a group or a version is
//!   skipped whole, a resource with `*` or a `/` (a subresource) is skipped, and at most
//!   [`MAX_TYPES_TO_CHECK`] kinds are collected (upstream counts them per rule, and stops
//!   collecting altogether when one rule reaches the limit). A kind whose schema cannot be found
//!   is not checked.
//! - **Which expressions**: as upstream, `spec.validations[i].expression` and, when set,
//!   `spec.validations[i].messageExpression`; match conditions, audit annotations and the
//!   variables themselves are not checked (a variable with an error is only `dyn` to the
//!   expressions that read it).
//! - **The words**: one warning per expression, with one entry per kind that has errors,
//!   `apps/v1, Kind=Deployment: ERROR: <input>:1:7: undefined field 'foo'\n | object.foo ==
//!   'bar'\n | ......^\n`, cel-go's `Errors.ToDisplayString` after the kind and a newline after
//!   each kind's entry; the entries of several kinds are joined by a newline. Errors are at the
//!   node cel-go puts them: a selection's `.`, `has(`'s `(`, an identifier's first character.
//!
//! The `cel` crate has no static type checker; [`check`] is a focused one, over a [`Schema`]
//! view of the kinds. It reports what matters most to users, with cel-go's words:
//!
//! - `undefined field 'f'`: `a.f`, `has(a.f)` or `a.?f` on an object without the property `f`
//!   (or on `variables` without such a variable);
//! - `type 'int' does not support field selection` (and `list(...)`, `string`, `timestamp`...):
//!   a selection on something that is neither an object nor a map;
//! - `undeclared reference to 'x' (in container '')`: an identifier that is not a variable
//!   (`object`, `oldObject`, `params` when the policy has a `paramKind`, `request`,
//!   `namespaceObject`, `variables`, `authorizer`), a type name, or a macro's iteration
//!   variable in scope;
//! - `expression of type 'T' cannot be range of a comprehension (must be list, map, or
//!   dynamic)`: a macro (`all`, `exists`, ...) over an object or a scalar.
//!
//! Macros' iteration variables take the element type of what they range over (a list's items,
//! a map's keys, which are strings), an index (`a[0]`, `a['k']`) a list's items or a map's
//! values, and everything else (function calls, operators, literals but their scalar types) is
//! `dyn`, below which nothing is checked.
//!
//! **Left out** (upstream reports them, this does not): overload mismatches (`found no matching
//! overload for '_==_' applied to '(string, int)'`, a function applied to the wrong types, an
//! unknown function, an index of the wrong type), return types, the types of `request`,
//! `namespaceObject` and `authorizer` (they are `dyn` here), struct creation, and expressions
//! that do not compile (policy validation refuses them before they are stored).
//!
//! **Schemas** ([`Schema::from_openapi`]): one converter from OpenAPI v3 JSON serves built-in
//! and custom kinds alike. Built-in kinds' schemas are what `catalog::schemas` generates from
//! the same descriptors the JSON codec reads (JSON field names, maps, repeated fields,
//! `IntOrString`, `Time` as a `date-time` string, `metadata` an `ObjectMeta` reference), so the
//! field names checked are the ones the codec accepts, and a custom kind's is its definition's
//! `openAPIV3Schema`, which that document carries too (with `metadata` an `ObjectMeta`
//! reference, as upstream publishes it): [`Schema::from_openapi_document`] takes a kind's
//! schema from a group version's document. The conversion follows upstream's
//! `SchemaDeclType`: a resource's root (and an `x-kubernetes-embedded-resource`) always has
//! `apiVersion`, `kind` and `metadata.name`/`metadata.generateName`; property names are escaped
//! as upstream escapes them (`namespace` is `__namespace__`, `a-b` is `a__dash__b`, a name
//! starting with a digit is not accessible); `date`/`date-time` strings are timestamps,
//! `duration` strings durations, `byte` strings bytes. Where upstream hides part of a schema
//! it has no type for (an `x-kubernetes-preserve-unknown-fields` object's other fields, a
//! property without a type, `additionalProperties: true`), this checks nothing below it
//! instead (`dyn`): these are warnings, and a field that may well be there is not one to warn
//! about.
//!
//! Type names in messages: upstream names a kind's object types after the kind with a
//! per-check nanosecond suffix (`Deployment123456789.spec`, `...containers.@idx`); here they
//! are the kind's name without it (`list(Deployment.spec.template.spec.containers.@idx)`).

//!
//! Here: [`schema`] (the [`Schema`] view and its conversion from OpenAPI), `checker` (the walk
//! of an expression's tree, and cel-go's display of its errors), and which kinds and
//! expressions a policy is checked with.

mod checker;
pub mod schema;

use std::collections::BTreeMap;

use cel::common::ast::{IdedExpr, SourceInfo};
use kubestore_proto::admissionregistration::v1::{
    ExpressionWarning, ParamKind, ValidatingAdmissionPolicy, ValidatingAdmissionPolicySpec,
};

pub use checker::display;
use checker::{Checker, Ty, display_all};
pub use schema::{Scalar, Schema};

use crate::custom::rules::expression::Expression;

/// The most kinds a policy is checked against (upstream's `maxTypesToCheck`).
pub const MAX_TYPES_TO_CHECK: usize = 10;

/// What the expressions of one check may read.
#[derive(Debug, Clone)]
pub struct Vars {
    /// The checked kind's name (`Deployment`): the root of its object types' names in
    /// messages.
    pub kind: String,
    /// `object` and `oldObject`: the kind's schema (`Schema::Any` when it has no usable one).
    pub object: Schema,
    /// `params`: `None` when the policy has no `paramKind` (`params` is then undeclared), else
    /// the parameters' kind's name and schema (`Schema::Any` when it was not found).
    pub params: Option<(String, Schema)>,
    /// `variables.NAME`: each variable's type, by name. Upstream keeps scalars, lists and maps
    /// of a variable's type but makes objects `dyn`: so does [`type_check`].
    pub variables: Vec<(String, Schema)>,
}

/// The errors type checking finds in `expr` with `vars`, each in cel-go's display form
/// (`ERROR: <input>:1:7: undefined field 'foo'\n | object.foo == 'bar'\n | ......^`), in
/// the order of their place in the source; empty when there are none.
pub fn check(expr: &Expression, vars: &Vars) -> Vec<String> {
    let program = expr.program();
    check_parsed(
        program.expression(),
        program.source_info(),
        &expr.source,
        vars,
    )
}

/// [`check`] on a parsed tree and where its nodes are in `source`.
fn check_parsed(e: &IdedExpr, info: &SourceInfo, source: &str, vars: &Vars) -> Vec<String> {
    let mut checker = Checker::new(vars, info);
    checker.walk(e);
    display_all(source, checker.issues)
}

/// The type of a variable whose expression is `expr`, to the expressions after it: what
/// checking it finds, with objects made `dyn` (upstream's `convertCelTypeToDeclType`), and
/// `dyn` when it has an error (upstream's failed compilation has no type).
fn variable_type(expr: &Expression, vars: &Vars) -> Schema {
    let program = expr.program();
    let mut checker = Checker::new(vars, program.source_info());
    let ty = checker.walk(program.expression());
    if !checker.issues.is_empty() {
        return Schema::Any;
    }
    match ty {
        Ty::Node(s, _) => without_objects(s),
        Ty::Variables => Schema::Any,
    }
}

fn without_objects(s: &Schema) -> Schema {
    match s {
        Schema::Object(_) | Schema::Any => Schema::Any,
        Schema::List(items) => Schema::List(Box::new(without_objects(items))),
        Schema::Map(values) => Schema::Map(Box::new(without_objects(values))),
        Schema::Scalar(k) => Schema::Scalar(*k),
    }
}

/// Type checks `policy` (upstream's `TypeChecker.Check`): the warnings for its
/// `status.typeChecking.expressionWarnings`, empty when there are none.
///
/// `schema_of(group, version, resource)` resolves a resource its rules name: `None` when there
/// is no such resource, else its kind's name (`Deployment`) and schema, `None` when the kind
/// has no schema to check against (it is then skipped, as upstream skips a schema it cannot
/// resolve). `param_schema` is the schema of the policy's `paramKind`, `None` when not found
/// (`params` is then `dyn`).
pub fn type_check(
    policy: &ValidatingAdmissionPolicy,
    schema_of: impl Fn(&str, &str, &str) -> Option<(String, Option<Schema>)>,
    param_schema: Option<Schema>,
) -> Vec<ExpressionWarning> {
    let Some(spec) = &policy.spec else {
        return Vec::new();
    };
    let kinds = kinds_to_check(spec, &schema_of);
    if kinds.is_empty() {
        return Vec::new();
    }
    let params = spec
        .param_kind
        .as_ref()
        .filter(|k| names_params(k))
        .map(|k| (k.kind.clone(), param_schema.unwrap_or(Schema::Any)));
    let variables: Vec<(&str, Option<Expression>)> = spec
        .variables
        .iter()
        .map(|v| (v.name.as_str(), Expression::compile(&v.expression).ok()))
        .collect();
    // Each kind's variables, typed in order: a variable reads those before it.
    let contexts: Vec<(String, Vars)> = kinds
        .into_iter()
        .map(|((group, version, kind), object)| {
            let mut vars = Vars {
                kind: kind.clone(),
                object,
                params: params.clone(),
                variables: Vec::new(),
            };
            for (name, expr) in &variables {
                let ty = expr
                    .as_ref()
                    .map_or(Schema::Any, |e| variable_type(e, &vars));
                vars.variables.retain(|(n, _)| n != name);
                vars.variables.push((name.to_string(), ty));
            }
            (format!("{group}/{version}, Kind={kind}"), vars)
        })
        .collect();
    let mut warnings = Vec::new();
    let mut check_one = |field_ref: String, source: &str| {
        let Ok(expr) = Expression::compile(source) else {
            return;
        };
        let per_kind: Vec<String> = contexts
            .iter()
            .filter_map(|(gvk, vars)| {
                let errors = check(&expr, vars);
                (!errors.is_empty()).then(|| format!("{gvk}: {}\n", errors.join("\n")))
            })
            .collect();
        if !per_kind.is_empty() {
            warnings.push(ExpressionWarning {
                field_ref,
                warning: per_kind.join("\n"),
            });
        }
    };
    for (i, v) in spec.validations.iter().enumerate() {
        check_one(format!("spec.validations[{i}].expression"), &v.expression);
        if !v.message_expression.is_empty() {
            check_one(
                format!("spec.validations[{i}].messageExpression"),
                &v.message_expression,
            );
        }
    }
    warnings
}

/// Whether a policy with `paramKind` `k` has `params` (upstream: its group version parses and
/// the group, version and kind are not all empty).
fn names_params(k: &ParamKind) -> bool {
    let (group, version) = match k.api_version.matches('/').count() {
        0 => ("", k.api_version.as_str()),
        1 => k.api_version.split_once('/').unwrap_or_default(),
        _ => return false,
    };
    !(group.is_empty() && version.is_empty() && k.kind.is_empty())
}

/// A kind: group, version, kind.
type Gvk = (String, String, String);

/// The kinds `spec` is checked against, with their schemas, ordered by group, version and kind
/// (upstream's `typesToCheck`, then its skipping of kinds without a schema).
fn kinds_to_check(
    spec: &ValidatingAdmissionPolicySpec,
    schema_of: &impl Fn(&str, &str, &str) -> Option<(String, Option<Schema>)>,
) -> Vec<(Gvk, Schema)> {
    let Some(constraints) = &spec.match_constraints else {
        return Vec::new();
    };
    let mut found: BTreeMap<Gvk, Option<Schema>> = BTreeMap::new();
    'rules: for rule in &constraints.resource_rules {
        let explicit = |names: &[String]| -> Option<Vec<String>> {
            let mut v = names.to_vec();
            (!v.is_empty() && !v.iter().any(|n| n.contains('*'))).then(|| {
                v.sort();
                v
            })
        };
        let (Some(groups), Some(versions)) =
            (explicit(&rule.api_groups), explicit(&rule.api_versions))
        else {
            continue;
        };
        let mut resources: Vec<&String> = rule
            .resources
            .iter()
            .filter(|r| !r.contains(['*', '/']))
            .collect();
        resources.sort();
        // Counted per rule, as upstream; reaching the limit ends the collection.
        let mut count = 0;
        for group in &groups {
            for version in &versions {
                for resource in &resources {
                    let Some((kind, schema)) =
                        schema_of(group.as_str(), version.as_str(), resource.as_str())
                    else {
                        continue;
                    };
                    if kind.is_empty() {
                        continue;
                    }
                    found
                        .entry((group.clone(), version.clone(), kind))
                        .or_insert(schema);
                    count += 1;
                    if count == MAX_TYPES_TO_CHECK {
                        break 'rules;
                    }
                }
            }
        }
    }
    found
        .into_iter()
        .filter_map(|(gvk, schema)| Some((gvk, schema?)))
        .collect()
}

#[cfg(test)]
mod tests;
