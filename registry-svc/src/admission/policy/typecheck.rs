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
//! and custom kinds alike. Built-in kinds' schemas are what `rest::openapi` generates from the
//! same descriptors the JSON codec reads (JSON field names, maps, repeated fields,
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

use std::collections::BTreeMap;

use cel::common::ast::{
    CallExpr, ComprehensionExpr, EntryExpr, Expr, IdedExpr, LiteralValue, SourceInfo, operators,
};
use kubestore_proto::admissionregistration::v1::{
    ExpressionWarning, ParamKind, ValidatingAdmissionPolicy, ValidatingAdmissionPolicySpec,
};
use serde_json::{Map, Value};

use crate::custom::rules::expression::Expression;

/// The most kinds a policy is checked against (upstream's `maxTypesToCheck`).
pub const MAX_TYPES_TO_CHECK: usize = 10;

/// The most errors listed for one expression and kind (cel-go's `maxErrorsToReport`); the
/// rest are counted in a last line.
const MAX_ERRORS: usize = 100;

/// Longest source line quoted under an error (cel-go's `maxSnippetLength`, in bytes).
const MAX_SNIPPET_BYTES: usize = 16384;

/// What an expression may find at a node of an object: the part of a schema type checking
/// reads.
#[derive(Debug, Clone, PartialEq)]
pub enum Schema {
    /// Anything (`dyn`): nothing below it is checked.
    Any,
    /// An object with these properties, by their names in CEL (escaped).
    Object(BTreeMap<String, Schema>),
    /// A map from strings to values of this schema (`additionalProperties`).
    Map(Box<Schema>),
    /// A list of items of this schema.
    List(Box<Schema>),
    /// A scalar.
    Scalar(Scalar),
}

/// The scalar types, as CEL has them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scalar {
    /// `string`.
    String,
    /// `int` (an `integer`).
    Int,
    /// `uint` (only literals: schemas have no unsigned integers).
    Uint,
    /// `double` (a `number`).
    Double,
    /// `bool` (a `boolean`).
    Bool,
    /// `bytes` (a `byte` string).
    Bytes,
    /// `timestamp` (a `date` or `date-time` string).
    Timestamp,
    /// `duration` (a `duration` string).
    Duration,
}

impl Scalar {
    /// The type's name in cel-go's messages (`FormatCELType`).
    fn cel_name(self) -> &'static str {
        match self {
            Scalar::String => "string",
            Scalar::Int => "int",
            Scalar::Uint => "uint",
            Scalar::Double => "double",
            Scalar::Bool => "bool",
            Scalar::Bytes => "bytes",
            Scalar::Timestamp => "timestamp",
            Scalar::Duration => "duration",
        }
    }
}

impl Schema {
    /// The schema of a kind from its OpenAPI v3 schema `schema` (a resource's root), its
    /// `$ref`s (`#/components/schemas/NAME`) resolved in `components` (a document's
    /// `components.schemas`; empty for a definition's `openAPIV3Schema`, which has none).
    pub fn from_openapi(schema: &Value, components: &Map<String, Value>) -> Schema {
        convert(schema, components, true, &mut Vec::new())
    }

    /// The schema of the kind `group`/`version`/`kind` in an OpenAPI v3 document of its group
    /// version (what `/openapi/v3/apis/G/V` serves): the one of `components.schemas` whose
    /// `x-kubernetes-group-version-kind` names it. `None` when the document has none.
    pub fn from_openapi_document(
        document: &Value,
        group: &str,
        version: &str,
        kind: &str,
    ) -> Option<Schema> {
        let components = document.pointer("/components/schemas")?.as_object()?;
        let names = |s: &&Value| {
            s.get("x-kubernetes-group-version-kind")
                .and_then(Value::as_array)
                .is_some_and(|gvks| {
                    gvks.iter().any(|g| {
                        g.get("group").and_then(Value::as_str) == Some(group)
                            && g.get("version").and_then(Value::as_str) == Some(version)
                            && g.get("kind").and_then(Value::as_str) == Some(kind)
                    })
                })
        };
        let schema = components.values().find(names)?;
        Some(Self::from_openapi(schema, components))
    }
}

/// Whether the extension `name` is `true` on `o`.
fn flag(o: &Map<String, Value>, name: &str) -> bool {
    o.get(name).and_then(Value::as_bool) == Some(true)
}

/// One OpenAPI schema node as a [`Schema`]; `root` when it is a resource's root. `seen` holds
/// the references being converted: a recursive one (a JSON schema's own schema) is `Any`
/// where it recurs, instead of an endless tree.
fn convert(
    v: &Value,
    components: &Map<String, Value>,
    root: bool,
    seen: &mut Vec<String>,
) -> Schema {
    let Some(o) = v.as_object() else {
        return Schema::Any;
    };
    // An embedded resource is a resource's root of its own.
    let root = root || flag(o, "x-kubernetes-embedded-resource");
    if let Some(r) = o.get("$ref").and_then(Value::as_str) {
        let name = r.rsplit('/').next().unwrap_or(r);
        let Some(target) = components.get(name) else {
            return Schema::Any;
        };
        if seen.iter().any(|s| s == name) {
            return Schema::Any;
        }
        seen.push(name.to_string());
        let s = convert(target, components, root, seen);
        seen.pop();
        return s;
    }
    // `rest::openapi` writes a reference as `allOf: [{$ref}]`, beside its description.
    if o.get("type").is_none()
        && let Some(first) = o
            .get("allOf")
            .and_then(Value::as_array)
            .and_then(|a| a.first())
    {
        return convert(first, components, root, seen);
    }
    if flag(o, "x-kubernetes-int-or-string") || flag(o, "x-kubernetes-preserve-unknown-fields") {
        return Schema::Any;
    }
    let schema = match o.get("type").and_then(Value::as_str) {
        Some("object") => match o.get("additionalProperties") {
            Some(Value::Bool(true)) => Schema::Map(Box::new(Schema::Any)),
            Some(ap @ Value::Object(_)) => {
                Schema::Map(Box::new(convert(ap, components, false, seen)))
            }
            _ => {
                let mut props = BTreeMap::new();
                if let Some(p) = o.get("properties").and_then(Value::as_object) {
                    for (name, s) in p {
                        if let Some(escaped) = escape(name) {
                            props.insert(escaped, convert(s, components, false, seen));
                        }
                    }
                }
                Schema::Object(props)
            }
        },
        Some("array") => match o.get("items") {
            Some(items) => Schema::List(Box::new(convert(items, components, false, seen))),
            None => Schema::Any,
        },
        Some("string") => match o.get("format").and_then(Value::as_str) {
            Some("byte") => Schema::Scalar(Scalar::Bytes),
            Some("duration") => Schema::Scalar(Scalar::Duration),
            Some("date" | "date-time") => Schema::Scalar(Scalar::Timestamp),
            // `rest::openapi`'s `IntOrString`.
            Some("int-or-string") => Schema::Any,
            _ => Schema::Scalar(Scalar::String),
        },
        Some("integer") => Schema::Scalar(Scalar::Int),
        Some("number") => Schema::Scalar(Scalar::Double),
        Some("boolean") => Schema::Scalar(Scalar::Bool),
        _ => Schema::Any,
    };
    if root {
        with_type_and_object_meta(schema)
    } else {
        schema
    }
}

/// Upstream's `WithTypeAndObjectMeta`: a resource's root always has `kind`, `apiVersion` and
/// `metadata` with `name` and `generateName`, all strings; unless it already has all of them,
/// those three are set to just that (a `metadata` with more properties but not these is
/// replaced too, as upstream does).
fn with_type_and_object_meta(schema: Schema) -> Schema {
    let Schema::Object(mut props) = schema else {
        return schema;
    };
    let string = Schema::Scalar(Scalar::String);
    let is_string = |s: Option<&Schema>| s == Some(&string);
    let complete = is_string(props.get("kind"))
        && is_string(props.get("apiVersion"))
        && matches!(props.get("metadata"), Some(Schema::Object(m))
            if is_string(m.get("name")) && is_string(m.get("generateName")));
    if !complete {
        props.insert("kind".into(), string.clone());
        props.insert("apiVersion".into(), string.clone());
        props.insert(
            "metadata".into(),
            Schema::Object(BTreeMap::from([
                ("name".to_string(), string.clone()),
                ("generateName".to_string(), string),
            ])),
        );
    }
    Schema::Object(props)
}

/// CEL's reserved words, which a property's name is escaped from as `__word__` (upstream's
/// `celReservedSymbols`; `namespace` among them, so `metadata.namespace` is
/// `metadata.__namespace__` to the checker).
const RESERVED: &[&str] = &[
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// A property's name as CEL sees it (upstream's `Escape`): `__` is `__underscores__`, `.`
/// `__dot__`, `-` `__dash__`, `/` `__slash__`; `None` when it cannot be written at all (it
/// starts with a digit, or has other characters than ASCII letters, digits and those).
fn escape(name: &str) -> Option<String> {
    if name.as_bytes().first().is_none_or(u8::is_ascii_digit) {
        return None;
    }
    if RESERVED.contains(&name) {
        return Some(format!("__{name}__"));
    }
    let mut out = String::with_capacity(name.len());
    let mut chars = name.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '_' if chars.peek() == Some(&'_') => {
                chars.next();
                out.push_str("__underscores__");
            }
            '.' => out.push_str("__dot__"),
            '-' => out.push_str("__dash__"),
            '/' => out.push_str("__slash__"),
            c if c.is_ascii_alphanumeric() || c == '_' => out.push(c),
            _ => return None,
        }
    }
    Some(out)
}

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

/// The type of an expression as the checker knows it.
#[derive(Debug, Clone)]
enum Ty<'v> {
    /// A node of a schema, and the name its object type has in messages (`Deployment.spec`;
    /// empty where it cannot be an object).
    Node(&'v Schema, String),
    /// `variables`: an object of the policy's variables.
    Variables,
}

static ANY: Schema = Schema::Any;
static STRING: Schema = Schema::Scalar(Scalar::String);
static INT: Schema = Schema::Scalar(Scalar::Int);
static UINT: Schema = Schema::Scalar(Scalar::Uint);
static DOUBLE: Schema = Schema::Scalar(Scalar::Double);
static BOOL: Schema = Schema::Scalar(Scalar::Bool);
static BYTES: Schema = Schema::Scalar(Scalar::Bytes);

fn any<'v>() -> Ty<'v> {
    Ty::Node(&ANY, String::new())
}

fn scalar<'v>(s: &'static Schema) -> Ty<'v> {
    Ty::Node(s, String::new())
}

/// The type names an expression may use as values (`type(x) == string`): cel-go's standard
/// ones and the optional type's.
const TYPE_NAMES: &[&str] = &[
    "bool",
    "bytes",
    "double",
    "dyn",
    "int",
    "list",
    "map",
    "null_type",
    "string",
    "type",
    "uint",
    "optional_type",
];

/// The namespaces of functions in upstream's CEL environment (`optional.of(x)`,
/// `math.greatest(a, b)`, `cel.bind(...)`): a call on one of these, when no variable has its
/// name, is a function's, not a method of an undeclared variable.
const NAMESPACES: &[&str] = &[
    "optional",
    "math",
    "strings",
    "base64",
    "sets",
    "lists",
    "format",
    "jsonpatch",
    "cel",
];

/// Calls that take iteration variables when the parser has no macro for them (two-variable
/// `all(i, v, ...)`, `transformList`, ...): their leading identifiers are bound, not read.
const BINDING_CALLS: &[&str] = &[
    "all",
    "exists",
    "exists_one",
    "existsOne",
    "map",
    "filter",
    "transformList",
    "transformMap",
    "transformMapEntry",
    "sortBy",
];

/// cel-go's name of the type of `s`, whose object type is named `name` (`FormatCELType`).
fn type_name(s: &Schema, name: &str) -> String {
    match s {
        Schema::Any => "dyn".into(),
        Schema::Scalar(k) => k.cel_name().into(),
        Schema::List(items) => format!("list({})", type_name(items, &format!("{name}.@idx"))),
        Schema::Map(values) => format!(
            "map(string, {})",
            type_name(values, &format!("{name}.@elem"))
        ),
        Schema::Object(_) => name.into(),
    }
}

fn ty_name(t: &Ty<'_>) -> String {
    match t {
        Ty::Node(s, name) => type_name(s, name),
        Ty::Variables => "kubernetes.variables".into(),
    }
}

/// A list's items or a map's values: what indexing `t` gives.
fn index(t: Ty<'_>) -> Ty<'_> {
    match t {
        Ty::Node(Schema::List(items), name) => Ty::Node(items, format!("{name}.@idx")),
        Ty::Node(Schema::Map(values), name) => Ty::Node(values, format!("{name}.@elem")),
        _ => any(),
    }
}

/// One walk of an expression's tree: the types of its nodes, and the errors found, at their
/// byte offsets in the source.
struct Checker<'v, 'a> {
    vars: &'v Vars,
    info: &'a SourceInfo,
    /// The macros' variables in scope, innermost last.
    scopes: Vec<(&'a str, Ty<'v>)>,
    issues: Vec<(usize, String)>,
}

impl<'v, 'a> Checker<'v, 'a> {
    fn new(vars: &'v Vars, info: &'a SourceInfo) -> Self {
        Self {
            vars,
            info,
            scopes: Vec::new(),
            issues: Vec::new(),
        }
    }

    /// An error at the node `id`.
    fn report(&mut self, id: u64, message: String) {
        let offset = self
            .info
            .offset_for(id)
            .map_or(0, |(start, _)| start as usize);
        self.issues.push((offset, message));
    }

    fn in_scope(&self, name: &str) -> Option<&Ty<'v>> {
        self.scopes
            .iter()
            .rev()
            .find(|(n, _)| *n == name)
            .map(|(_, t)| t)
    }

    fn walk(&mut self, e: &'a IdedExpr) -> Ty<'v> {
        match &e.expr {
            Expr::Ident(name) => self.ident(e.id, name),
            Expr::Select(sel) => {
                if !sel.test && self.is_type_name(e) {
                    return any();
                }
                let operand = self.walk(&sel.operand);
                let ty = self.select(e.id, operand, &sel.field);
                if sel.test { scalar(&BOOL) } else { ty }
            }
            Expr::Call(call) => self.call(e.id, call),
            Expr::Comprehension(c) => self.comprehension(c),
            Expr::List(list) => {
                for x in &list.elements {
                    self.walk(x);
                }
                any()
            }
            Expr::Map(map) => {
                self.entries(&map.entries);
                any()
            }
            Expr::Struct(s) => {
                self.entries(&s.entries);
                any()
            }
            Expr::Literal(l) => match l {
                LiteralValue::String(_) => scalar(&STRING),
                LiteralValue::Int(_) => scalar(&INT),
                LiteralValue::UInt(_) => scalar(&UINT),
                LiteralValue::Double(_) => scalar(&DOUBLE),
                LiteralValue::Boolean(_) => scalar(&BOOL),
                LiteralValue::Bytes(_) => scalar(&BYTES),
                LiteralValue::Null => any(),
            },
            Expr::Unspecified => any(),
        }
    }

    fn entries(&mut self, entries: &'a [cel::common::ast::IdedEntryExpr]) {
        for entry in entries {
            match &entry.expr {
                EntryExpr::MapEntry(m) => {
                    self.walk(&m.key);
                    self.walk(&m.value);
                }
                EntryExpr::StructField(f) => {
                    self.walk(&f.value);
                }
            }
        }
    }

    fn ident(&mut self, id: u64, name: &str) -> Ty<'v> {
        if let Some(t) = self.in_scope(name) {
            return t.clone();
        }
        let vars: &'v Vars = self.vars;
        match name {
            "object" | "oldObject" => Ty::Node(&vars.object, vars.kind.clone()),
            "params" if vars.params.is_some() => match &vars.params {
                Some((kind, schema)) => Ty::Node(schema, kind.clone()),
                None => any(),
            },
            "variables" => Ty::Variables,
            "request" | "namespaceObject" | "authorizer" => any(),
            _ if TYPE_NAMES.contains(&name) => any(),
            _ => {
                self.report(
                    id,
                    format!("undeclared reference to '{name}' (in container '')"),
                );
                any()
            }
        }
    }

    /// Whether `e`, a selection, spells a well-known type's name (`google.protobuf.Timestamp`)
    /// that no variable in scope shadows.
    fn is_type_name(&self, e: &IdedExpr) -> bool {
        let mut segments = Vec::new();
        let mut node = e;
        loop {
            match &node.expr {
                Expr::Select(s) if !s.test => {
                    segments.push(s.field.as_str());
                    node = &s.operand;
                }
                Expr::Ident(root) => {
                    segments.push(root.as_str());
                    break;
                }
                _ => return false,
            }
        }
        segments.reverse();
        segments.len() == 3
            && segments[..2] == ["google", "protobuf"]
            && self.in_scope("google").is_none()
    }

    /// `operand.field` (also `has(operand.field)` and `operand.?field`) at the node `id`.
    fn select(&mut self, id: u64, operand: Ty<'v>, field: &str) -> Ty<'v> {
        let vars: &'v Vars = self.vars;
        match operand {
            Ty::Variables => match vars.variables.iter().rev().find(|(n, _)| n == field) {
                Some((_, schema)) => Ty::Node(schema, String::new()),
                None => {
                    self.report(id, format!("undefined field '{field}'"));
                    any()
                }
            },
            Ty::Node(schema, name) => match schema {
                Schema::Object(props) => match props.get(field) {
                    Some(p) => Ty::Node(p, format!("{name}.{field}")),
                    None => {
                        self.report(id, format!("undefined field '{field}'"));
                        any()
                    }
                },
                Schema::Map(values) => Ty::Node(values, format!("{name}.@elem")),
                Schema::Any => any(),
                Schema::List(_) | Schema::Scalar(_) => {
                    self.report(
                        id,
                        format!(
                            "type '{}' does not support field selection",
                            type_name(schema, &name)
                        ),
                    );
                    any()
                }
            },
        }
    }

    fn call(&mut self, id: u64, call: &'a CallExpr) -> Ty<'v> {
        let name = call.func_name.as_str();
        if call.target.is_none() && call.args.len() == 2 {
            if name == operators::OPT_SELECT
                && let Expr::Literal(LiteralValue::String(field)) = &call.args[1].expr
            {
                let operand = self.walk(&call.args[0]);
                return self.select(id, operand, field.inner());
            }
            if name == operators::INDEX || name == operators::OPT_INDEX {
                let target = self.walk(&call.args[0]);
                self.walk(&call.args[1]);
                return index(target);
            }
        }
        if let Some(target) = &call.target {
            if let Expr::Ident(ns) = &target.expr
                && NAMESPACES.contains(&ns.as_str())
                && self.in_scope(ns).is_none()
            {
                // `cel.bind(x, init, body)` binds `x`: its arguments are not checked.
                if ns != "cel" {
                    for a in &call.args {
                        self.walk(a);
                    }
                }
                return any();
            }
            self.walk(target);
            if BINDING_CALLS.contains(&name) {
                let last = call.args.len().saturating_sub(1);
                let bound = call.args[..last]
                    .iter()
                    .take_while(|a| matches!(a.expr, Expr::Ident(_)))
                    .count();
                let depth = self.scopes.len();
                for a in &call.args[..bound] {
                    if let Expr::Ident(n) = &a.expr {
                        self.scopes.push((n.as_str(), any()));
                    }
                }
                for a in &call.args[bound..] {
                    self.walk(a);
                }
                self.scopes.truncate(depth);
                return any();
            }
        }
        for a in &call.args {
            self.walk(a);
        }
        any()
    }

    /// A macro's expansion: its iteration variables typed from what it ranges over.
    fn comprehension(&mut self, c: &'a ComprehensionExpr) -> Ty<'v> {
        let range = self.walk(&c.iter_range);
        let (first, second) = match &range {
            Ty::Node(schema, name) => {
                let schema: &'v Schema = schema;
                match schema {
                    Schema::List(items) => {
                        let item = Ty::Node(items, format!("{name}.@idx"));
                        if c.iter_var2.is_some() {
                            (scalar(&INT), item)
                        } else {
                            (item, any())
                        }
                    }
                    Schema::Map(values) => {
                        (scalar(&STRING), Ty::Node(values, format!("{name}.@elem")))
                    }
                    Schema::Any => (any(), any()),
                    Schema::Object(_) | Schema::Scalar(_) => {
                        self.not_a_range(c, &range);
                        (any(), any())
                    }
                }
            }
            Ty::Variables => {
                self.not_a_range(c, &range);
                (any(), any())
            }
        };
        self.walk(&c.accu_init);
        let depth = self.scopes.len();
        self.scopes.push((c.accu_var.as_str(), any()));
        self.scopes.push((c.iter_var.as_str(), first));
        if let Some(v2) = &c.iter_var2 {
            self.scopes.push((v2.as_str(), second));
        }
        self.walk(&c.loop_cond);
        self.walk(&c.loop_step);
        // The result sees the accumulator, not the iteration variables.
        self.scopes.truncate(depth + 1);
        self.walk(&c.result);
        self.scopes.truncate(depth);
        any()
    }

    fn not_a_range(&mut self, c: &ComprehensionExpr, range: &Ty<'_>) {
        self.report(
            c.iter_range.id,
            format!(
                "expression of type '{}' cannot be range of a comprehension (must be list, map, or dynamic)",
                ty_name(range)
            ),
        );
    }
}

/// `issues` (byte offsets in `source` and messages) displayed as cel-go's
/// `Errors.ToDisplayString` lists them: the first [`MAX_ERRORS`] found, ordered by place
/// (stably), then a count of the rest.
fn display_all(source: &str, mut issues: Vec<(usize, String)>) -> Vec<String> {
    let more = issues.len().saturating_sub(MAX_ERRORS);
    issues.truncate(MAX_ERRORS);
    issues.sort_by_key(|(offset, _)| *offset);
    let mut out: Vec<String> = issues
        .iter()
        .map(|(offset, message)| display(source, *offset, message))
        .collect();
    if more > 0 {
        out.push(format!("{more} more errors were truncated"));
    }
    out
}

/// One error as cel-go's `Error.ToDisplayString` writes it: `ERROR: <input>:LINE:COLUMN:
/// MESSAGE`, the line (1-based) and column (1-based, in characters) of the byte `offset` of
/// `source`, then the source line (tabs as spaces) and a line of dots up to a caret under the
/// column; a dot and the caret are full-width (`．`, `＾`) under a character of more than one
/// byte, as cel-go does.
pub fn display(source: &str, offset: usize, message: &str) -> String {
    let mut offset = offset.min(source.len());
    while !source.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &source[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = source[line_start..offset].chars().count();
    let mut out = format!("ERROR: <input>:{line}:{}: {message}", column + 1);
    let snippet = source[line_start..].split('\n').next().unwrap_or_default();
    if snippet.len() <= MAX_SNIPPET_BYTES {
        let snippet = snippet.replace('\t', " ");
        out.push_str("\n | ");
        out.push_str(&snippet);
        out.push_str("\n | ");
        let mut chars = snippet.chars();
        for c in chars.by_ref().take(column) {
            out.push(if c.len_utf8() > 1 { '\u{ff0e}' } else { '.' });
        }
        out.push(match chars.next() {
            Some(c) if c.len_utf8() > 1 => '\u{ff3e}',
            _ => '^',
        });
    }
    out
}

#[cfg(test)]
#[path = "typecheck_tests.rs"]
mod tests;
