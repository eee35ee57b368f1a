//! Upstream's `typechecking_test.go` (the cases this checker covers), and the checker's own.

use kubestore_proto::admissionregistration::v1::{
    MatchResources, NamedRuleWithOperations, ValidatingAdmissionPolicySpec, Validation, Variable,
};
use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::*;

fn schema(v: Value) -> Schema {
    Schema::from_openapi(&v, &Map::new())
}

fn string() -> Value {
    json!({"type": "string"})
}

/// A Deployment's schema, the parts the tests read, as `rest::openapi` writes it (references
/// in `allOf`, `IntOrString` as an `int-or-string` string, `Time` as `date-time`).
fn deployment_document() -> Value {
    let r = |name: &str| json!({"allOf": [{"$ref": format!("#/components/schemas/{name}")}]});
    json!({"components": {"schemas": {
        "io.k8s.api.apps.v1.Deployment": {
            "type": "object",
            "x-kubernetes-group-version-kind": [{"group": "apps", "version": "v1", "kind": "Deployment"}],
            "properties": {
                "apiVersion": string(),
                "kind": string(),
                "metadata": r("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"),
                "spec": r("io.k8s.api.apps.v1.DeploymentSpec"),
            },
        },
        "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": {
            "type": "object",
            "properties": {
                "name": string(),
                "generateName": string(),
                "namespace": string(),
                "labels": {"type": "object", "additionalProperties": string()},
                "creationTimestamp": {"type": "string", "format": "date-time"},
            },
        },
        "io.k8s.api.apps.v1.DeploymentSpec": {
            "type": "object",
            "properties": {
                "replicas": {"type": "integer", "format": "int32"},
                "template": r("io.k8s.api.core.v1.PodTemplateSpec"),
            },
        },
        "io.k8s.api.core.v1.PodTemplateSpec": {
            "type": "object",
            "properties": {
                "metadata": r("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"),
                "spec": r("io.k8s.api.core.v1.PodSpec"),
            },
        },
        "io.k8s.api.core.v1.PodSpec": {
            "type": "object",
            "properties": {
                "containers": {"type": "array", "items": r("io.k8s.api.core.v1.Container"),
                               "description": "List of containers."},
            },
        },
        "io.k8s.api.core.v1.Container": {
            "type": "object",
            "properties": {
                "name": string(),
                "image": string(),
                "ports": {"type": "array", "items": {"type": "object", "properties": {
                    "containerPort": {"type": "integer"},
                    "targetPort": {"type": "string", "format": "int-or-string"},
                }}},
                "securityContext": r("io.k8s.api.core.v1.SecurityContext"),
            },
        },
        "io.k8s.api.core.v1.SecurityContext": {
            "type": "object",
            "properties": {
                "privileged": {"type": "boolean"},
                "runAsNonRoot": {"type": "boolean"},
            },
        },
    }}})
}

fn deployment() -> Schema {
    Schema::from_openapi_document(&deployment_document(), "apps", "v1", "Deployment")
        .expect("the document has Deployment")
}

/// Upstream's `&spec.Schema{Type: object, Properties: {foo: ...}}`.
fn with_foo(foo: Value) -> Schema {
    schema(json!({"type": "object", "properties": {"foo": foo}}))
}

fn rule(groups: &[&str], versions: &[&str], resources: &[&str]) -> NamedRuleWithOperations {
    let strings = |x: &[&str]| x.iter().map(|s| s.to_string()).collect();
    NamedRuleWithOperations {
        api_groups: strings(groups),
        api_versions: strings(versions),
        resources: strings(resources),
        ..Default::default()
    }
}

fn deployments() -> Vec<NamedRuleWithOperations> {
    vec![rule(&["apps"], &["v1"], &["deployments"])]
}

fn policy(rules: Vec<NamedRuleWithOperations>, expressions: &[&str]) -> ValidatingAdmissionPolicy {
    ValidatingAdmissionPolicy {
        spec: Some(ValidatingAdmissionPolicySpec {
            match_constraints: Some(MatchResources {
                resource_rules: rules,
                ..Default::default()
            }),
            validations: expressions
                .iter()
                .map(|e| Validation {
                    expression: e.to_string(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn with_params(
    mut p: ValidatingAdmissionPolicy,
    api_version: &str,
    kind: &str,
) -> ValidatingAdmissionPolicy {
    if let Some(spec) = p.spec.as_mut() {
        spec.param_kind = Some(ParamKind {
            api_version: api_version.into(),
            kind: kind.into(),
        });
    }
    p
}

fn with_variables(
    mut p: ValidatingAdmissionPolicy,
    vars: &[(&str, &str)],
) -> ValidatingAdmissionPolicy {
    if let Some(spec) = p.spec.as_mut() {
        spec.variables = vars
            .iter()
            .map(|(name, expression)| Variable {
                name: name.to_string(),
                expression: expression.to_string(),
            })
            .collect();
    }
    p
}

/// Upstream's test RESTMapper (pods and deployments), every kind with `schema` (`None`: its
/// schema is not found).
fn resolver(
    schema: Option<Schema>,
) -> impl Fn(&str, &str, &str) -> Option<(String, Option<Schema>)> {
    move |group, version, resource| {
        let kind = match (group, version, resource) {
            ("", "v1", "pods") => "Pod",
            ("apps", "v1", "deployments") => "Deployment",
            ("apps", "v1", "replicasets") => "ReplicaSet",
            _ => return None,
        };
        Some((kind.to_string(), schema.clone()))
    }
}

fn run(p: &ValidatingAdmissionPolicy, object: Option<Schema>) -> Vec<ExpressionWarning> {
    // Upstream's fake resolver returns the same schema for the parameters' kind.
    type_check(p, resolver(object.clone()), object)
}

fn refs(w: &[ExpressionWarning]) -> Vec<&str> {
    w.iter().map(|w| w.field_ref.as_str()).collect()
}

/// The display of an error at 1-based `column` of one-line ASCII `source`.
fn at(source: &str, column: usize, message: &str) -> String {
    format!(
        "ERROR: <input>:1:{column}: {message}\n | {source}\n | {}^",
        ".".repeat(column - 1)
    )
}

fn vars(object: Schema) -> Vars {
    Vars {
        kind: "Deployment".into(),
        object,
        params: None,
        variables: Vec::new(),
    }
}

fn errors(source: &str, vars: &Vars) -> Vec<String> {
    let expr = Expression::compile(source).expect("compiles");
    check(&expr, vars)
}

// --- upstream's TestExtractTypeNames ---

fn kinds(rules: Vec<NamedRuleWithOperations>) -> Vec<Gvk> {
    let p = policy(rules, &[]);
    let spec = p.spec.unwrap_or_default();
    kinds_to_check(&spec, &resolver(Some(Schema::Any)))
        .into_iter()
        .map(|(gvk, _)| gvk)
        .collect()
}

fn gvk(g: &str, v: &str, k: &str) -> Gvk {
    (g.into(), v.into(), k.into())
}

#[test]
fn extract_type_names() {
    assert!(
        kinds_to_check(&Default::default(), &resolver(Some(Schema::Any))).is_empty(),
        "empty"
    );
    assert_eq!(
        kinds(deployments()),
        [gvk("apps", "v1", "Deployment")],
        "specific"
    );
    assert_eq!(
        kinds(vec![
            rule(&["apps"], &["v1"], &["deployments"]),
            rule(&[""], &["v1"], &["pods"]),
        ]),
        [gvk("", "v1", "Pod"), gvk("apps", "v1", "Deployment")],
        "multiple, sorted by group"
    );
    assert!(
        kinds(vec![rule(&["apps"], &["v1"], &["*"])]).is_empty(),
        "all resources"
    );
    assert!(
        kinds(vec![rule(&["apps"], &["v1"], &["pods/*"])]).is_empty(),
        "subresources"
    );
    assert_eq!(
        kinds(vec![
            rule(&["apps"], &["v1"], &["deployments"]),
            rule(&["apps"], &["*"], &["deployments"]),
        ]),
        [gvk("apps", "v1", "Deployment")],
        "mixtures"
    );
    assert!(
        kinds(vec![rule(&["*"], &["v1"], &["deployments"])]).is_empty(),
        "all groups"
    );
    assert_eq!(
        kinds(vec![rule(
            &["apps"],
            &["v1"],
            &["deployments", "deployments/scale", "*"]
        )]),
        [gvk("apps", "v1", "Deployment")],
        "a wildcard resource beside an explicit one"
    );
}

#[test]
fn at_most_ten_kinds_and_the_limit_ends_collection() {
    let many = |group: &str, version: &str, resource: &str| -> Option<(String, Option<Schema>)> {
        let _ = (group, version);
        Some((resource.to_uppercase(), Some(Schema::Any)))
    };
    let names: Vec<String> = (0..12).map(|i| format!("r{i:02}")).collect();
    let p = policy(
        vec![
            rule(
                &["g"],
                &["v1"],
                &names.iter().map(String::as_str).collect::<Vec<_>>(),
            ),
            rule(&["a"], &["v1"], &["first"]),
        ],
        &[],
    );
    let found = kinds_to_check(p.spec.as_ref().expect("spec"), &many);
    assert_eq!(found.len(), MAX_TYPES_TO_CHECK);
    assert_eq!(found[0].0, gvk("g", "v1", "R00"));
    assert_eq!(found[9].0, gvk("g", "v1", "R09"));
}

// --- upstream's TestTypeCheck ---

#[test]
fn empty_policy() {
    assert!(run(&ValidatingAdmissionPolicy::default(), None).is_empty());
}

#[test]
fn unresolved_schema() {
    let p = policy(deployments(), &["object.foo == 'bar'"]);
    assert!(run(&p, None).is_empty());
}

#[test]
fn passed_check() {
    let p = policy(deployments(), &["object.foo == 'bar'"]);
    assert!(run(&p, Some(with_foo(string()))).is_empty());
}

#[test]
fn undefined_field() {
    let p = policy(deployments(), &["object.foo == 'bar'"]);
    let w = run(
        &p,
        Some(schema(
            json!({"type": "object", "properties": {"bar": string()}}),
        )),
    );
    assert_eq!(refs(&w), ["spec.validations[0].expression"]);
    assert_eq!(
        w[0].warning,
        "apps/v1, Kind=Deployment: ERROR: <input>:1:7: undefined field 'foo'\n | object.foo == 'bar'\n | ......^\n"
    );
}

#[test]
fn params() {
    let p = with_params(
        policy(deployments(), &["object.foo == params.bar"]),
        "v1",
        "DoesNotMatter",
    );
    let w = run(&p, Some(with_foo(string())));
    assert_eq!(refs(&w), ["spec.validations[0].expression"]);
    assert_eq!(
        w[0].warning,
        "apps/v1, Kind=Deployment: ERROR: <input>:1:21: undefined field 'bar'\n | object.foo == params.bar\n | ....................^\n"
    );
}

#[test]
fn params_with_untyped_schema() {
    let p = with_params(policy(deployments(), &["params != null"]), "v1", "Config");
    assert!(run(&p, Some(schema(json!({})))).is_empty());
}

#[test]
fn params_without_param_kind_are_undeclared() {
    let p = policy(deployments(), &["params.x == 1"]);
    let w = run(&p, Some(with_foo(string())));
    assert_eq!(
        w[0].warning,
        format!(
            "apps/v1, Kind=Deployment: {}\n",
            at(
                "params.x == 1",
                1,
                "undeclared reference to 'params' (in container '')"
            )
        )
    );
}

#[test]
fn multiple_expressions() {
    let p = policy(
        deployments(),
        &["object.foo == 'bar'", "object.bar == 'foo'"],
    );
    let w = run(&p, Some(with_foo(string())));
    assert_eq!(refs(&w), ["spec.validations[1].expression"]);
}

#[test]
fn message_expressions() {
    let mut p = policy(deployments(), &["object.foo == 'bar'"]);
    if let Some(spec) = p.spec.as_mut() {
        // Upstream's case is `object.foo + 114514`, an overload error: one this checker finds.
        spec.validations[0].message_expression = "object.fooo + 'x'".into();
    }
    let w = run(&p, Some(with_foo(string())));
    assert_eq!(refs(&w), ["spec.validations[0].messageExpression"]);
    assert!(
        w[0].warning.contains("undefined field 'fooo'"),
        "{}",
        w[0].warning
    );
}

#[test]
fn authorizer() {
    let p = policy(
        deployments(),
        &["authorizer.group('').resource('endpoints').check('create').allowed()"],
    );
    assert!(run(&p, Some(with_foo(string()))).is_empty());
}

#[test]
fn additional_properties_true() {
    let reproducer = schema(json!({
        "type": "object",
        "properties": {
            "spec": {"type": "object", "properties": {"text": string()}},
            "status": {"type": "object", "properties": {
                "problematicProperty": {"type": "object", "additionalProperties": true},
            }},
        },
    }));
    let p = policy(
        vec![rule(&["example.com"], &["v1alpha1"], &["reproducers"])],
        &["has(object.spec.text)"],
    );
    let resolve = |g: &str, v: &str, r: &str| {
        ((g, v, r) == ("example.com", "v1alpha1", "reproducers"))
            .then(|| ("Reproducer".to_string(), Some(reproducer.clone())))
    };
    assert!(type_check(&p, resolve, None).is_empty());
}

#[test]
fn schema_without_type() {
    let p = policy(deployments(), &["true"]);
    assert!(run(&p, Some(schema(json!({})))).is_empty());
}

#[test]
fn variables_valid() {
    let p = with_variables(
        policy(deployments(), &["variables.works"]),
        &[("works", "true")],
    );
    assert!(run(&p, Some(with_foo(json!({"type": "integer"})))).is_empty());
}

#[test]
fn variables_missing_field() {
    let p = with_variables(
        policy(deployments(), &["variables.nonExisting"]),
        &[("works", "true")],
    );
    let w = run(&p, Some(with_foo(json!({"type": "integer"}))));
    assert_eq!(refs(&w), ["spec.validations[0].expression"]);
    assert_eq!(
        w[0].warning,
        "apps/v1, Kind=Deployment: ERROR: <input>:1:10: undefined field 'nonExisting'\n | variables.nonExisting\n | .........^\n"
    );
}

#[test]
fn error_in_variables_not_reported() {
    let p = with_variables(
        policy(deployments(), &["variables.name == object.foo"]),
        &[("name", "object.foo == 'str'"), ("broken", "object.nope")],
    );
    assert!(run(&p, Some(with_foo(json!({"type": "integer"})))).is_empty());
}

/// What upstream reports and this checker leaves out: overload mismatches.
#[test]
fn overload_errors_are_left_out() {
    let int_foo = Some(with_foo(json!({"type": "integer"})));
    for (expression, variables) in [
        // Upstream: found no matching overload for '_==_' applied to '(int, string)'.
        ("object.foo == 'bar'", vec![]),
        // Upstream: found no matching overload for 'allowed' applied to 'kubernetes.authorization.Authorizer...'.
        ("authorizer.allowed()", vec![]),
        // Upstream: found no matching overload for '_==_' applied to '(string, int)'.
        (
            "variables.name == object.foo",
            vec![("name", "'something'")],
        ),
    ] {
        let p = with_variables(policy(deployments(), &[expression]), &variables);
        assert!(run(&p, int_foo.clone()).is_empty(), "{expression}");
    }
}

// --- upstream's documentation and blog examples, exact ---

#[test]
fn documented_warning() {
    let p = policy(deployments(), &["object.replicas > 1"]);
    let w = run(&p, Some(deployment()));
    assert_eq!(refs(&w), ["spec.validations[0].expression"]);
    assert_eq!(
        w[0].warning,
        "apps/v1, Kind=Deployment: ERROR: <input>:1:7: undefined field 'replicas'\n | object.replicas > 1\n | ......^\n"
    );
}

#[test]
fn two_errors_in_one_expression_in_order() {
    let e = "object.spec.template.spec.containers.all(c, !has(c.securityContext) || !has(c.securityContext.Privileged) || !c.securityContext.Privileged)";
    let p = policy(
        deployments(),
        &[
            "object.spec.template.spec.containers.all(c, !has(c.securityContext) || !has(c.securityContext.privileged) || !c.securityContext.privileged)",
            e,
        ],
    );
    let w = run(&p, Some(deployment()));
    assert_eq!(refs(&w), ["spec.validations[1].expression"]);
    assert_eq!(
        w[0].warning,
        format!(
            "apps/v1, Kind=Deployment: {}\n{}\n",
            at(e, 76, "undefined field 'Privileged'"),
            at(e, 128, "undefined field 'Privileged'")
        )
    );
}

#[test]
fn several_kinds_join_their_entries() {
    let p = policy(
        vec![rule(&["apps"], &["v1"], &["replicasets", "deployments"])],
        &["object.replicas > 1"],
    );
    let w = run(&p, Some(deployment()));
    let one = "ERROR: <input>:1:7: undefined field 'replicas'\n | object.replicas > 1\n | ......^";
    assert_eq!(
        w[0].warning,
        format!("apps/v1, Kind=Deployment: {one}\n\napps/v1, Kind=ReplicaSet: {one}\n")
    );
}

#[test]
fn wildcard_rules_are_not_checked() {
    for rules in [
        vec![rule(&["*"], &["v1"], &["deployments"])],
        vec![rule(&["apps"], &["*"], &["deployments"])],
        vec![rule(&["apps"], &["v1"], &["*"])],
    ] {
        let p = policy(rules, &["object.replicas > 1"]);
        assert!(run(&p, Some(deployment())).is_empty());
    }
}

// --- the checker ---

#[test]
fn comprehension_variables_take_the_items_type() {
    let v = vars(deployment());
    let e = "object.spec.template.spec.containers.all(c, c.imagee != '')";
    assert_eq!(errors(e, &v), [at(e, 46, "undefined field 'imagee'")]);
    assert!(
        errors(
            "object.spec.template.spec.containers.all(c, c.image != '')",
            &v
        )
        .is_empty()
    );
    // Nested: the ports of each container.
    let e = "object.spec.template.spec.containers.exists(c, c.ports.exists_one(p, p.port == 80))";
    assert_eq!(errors(e, &v), [at(e, 71, "undefined field 'port'")]);
    // `map` and `filter` too; the variable is not seen outside its macro.
    let e = "object.spec.template.spec.containers.map(c, c.name).all(n, n != c)";
    assert_eq!(
        errors(e, &v),
        [at(e, 65, "undeclared reference to 'c' (in container '')")]
    );
    let e = "object.spec.template.spec.containers.filter(c, c.nam == 'x').size() == 0";
    assert_eq!(errors(e, &v), [at(e, 49, "undefined field 'nam'")]);
}

#[test]
fn map_keys_iterate_as_strings() {
    let v = vars(deployment());
    assert!(errors("object.metadata.labels.all(k, k.startsWith('a'))", &v).is_empty());
    let e = "object.metadata.labels.all(k, k.foo == 'x')";
    assert_eq!(
        errors(e, &v),
        [at(e, 32, "type 'string' does not support field selection")]
    );
}

#[test]
fn has_is_checked_at_its_parenthesis() {
    let v = vars(deployment());
    let e = "has(object.spec.replicass)";
    assert_eq!(errors(e, &v), [at(e, 4, "undefined field 'replicass'")]);
    assert!(errors("has(object.spec.replicas)", &v).is_empty());
    // A map's keys are not known: any of them may be tested.
    assert!(errors("has(object.metadata.labels.app)", &v).is_empty());
}

#[test]
fn selection_on_scalars_and_lists() {
    let v = vars(deployment());
    let e = "object.spec.replicas.foo > 1";
    assert_eq!(
        errors(e, &v),
        [at(e, 21, "type 'int' does not support field selection")]
    );
    let e = "object.spec.template.spec.containers.name == 'x'";
    assert_eq!(
        errors(e, &v),
        [at(
            e,
            37,
            "type 'list(Deployment.spec.template.spec.containers.@idx)' does not support field selection"
        )]
    );
    let e = "object.metadata.creationTimestamp.seconds > 0";
    assert_eq!(
        errors(e, &v),
        [at(
            e,
            34,
            "type 'timestamp' does not support field selection"
        )]
    );
    // Below an error, nothing more is reported.
    assert_eq!(errors("object.nope.more.andMore", &v).len(), 1);
}

#[test]
fn indexes_go_into_items_and_values() {
    let v = vars(deployment());
    let e = "object.spec.template.spec.containers[0].imagee == ''";
    assert_eq!(errors(e, &v), [at(e, 40, "undefined field 'imagee'")]);
    let e = "object.metadata.labels['app'].foo == ''";
    assert_eq!(
        errors(e, &v),
        [at(e, 30, "type 'string' does not support field selection")]
    );
    // An int-or-string is anything.
    assert!(
        errors(
            "object.spec.template.spec.containers[0].ports[0].targetPort.anything",
            &v
        )
        .is_empty()
    );
}

#[test]
fn undeclared_identifiers() {
    let v = vars(deployment());
    let e = "objecct.spec.replicas > 1";
    assert_eq!(
        errors(e, &v),
        [at(
            e,
            1,
            "undeclared reference to 'objecct' (in container '')"
        )]
    );
    for fine in [
        "request.operation == 'CREATE' && namespaceObject.metadata.name != ''",
        "oldObject == null || oldObject.spec.replicas == object.spec.replicas",
        "type(object.spec.replicas) == int",
        "object.metadata.creationTimestamp > timestamp('2020-01-01T00:00:00Z')",
        "math.greatest(1, 2) == 2",
        "object.spec.template.spec.containers.all(i, c, c.name != '')",
    ] {
        assert!(
            errors(fine, &v).is_empty(),
            "{fine}: {:?}",
            errors(fine, &v)
        );
    }
}

#[test]
fn range_must_be_a_list_or_map() {
    let v = vars(deployment());
    let e = "object.spec.all(f, f != '')";
    assert_eq!(
        errors(e, &v),
        [at(
            e,
            7,
            "expression of type 'Deployment.spec' cannot be range of a comprehension (must be list, map, or dynamic)"
        )]
    );
}

#[test]
fn metadata_namespace_is_escaped_as_upstream_escapes_it() {
    let v = vars(deployment());
    let e = "object.metadata.namespace == 'default'";
    assert_eq!(errors(e, &v), [at(e, 16, "undefined field 'namespace'")]);
    assert!(errors("object.metadata.__namespace__ == 'default'", &v).is_empty());
}

#[test]
fn params_from_a_custom_kind() {
    let definition = json!({
        "type": "object",
        "properties": {
            "spec": {"type": "object", "properties": {
                "maxReplicas": {"type": "integer"},
                "allowed-registries": {"type": "array", "items": string()},
            }},
        },
    });
    let params = Schema::from_openapi(&definition, &Map::new());
    let p = with_params(
        policy(
            deployments(),
            &[
                "object.spec.replicas <= params.spec.maxReplicas",
                "params.spec.maxReplicass < object.spec.replicas",
                "params.spec.allowed__dash__registries.all(r, r.size() > 0)",
                "params.metadata.name != '' && params.kind == 'Limits'",
            ],
        ),
        "example.com/v1",
        "Limits",
    );
    let w = type_check(&p, resolver(Some(deployment())), Some(params));
    assert_eq!(refs(&w), ["spec.validations[1].expression"]);
    assert_eq!(
        w[0].warning,
        format!(
            "apps/v1, Kind=Deployment: {}\n",
            at(
                "params.spec.maxReplicass < object.spec.replicas",
                12,
                "undefined field 'maxReplicass'"
            )
        )
    );
}

#[test]
fn variables_are_typed_from_their_expressions() {
    let p = with_variables(
        policy(
            deployments(),
            &[
                "variables.replicas.foo == 1",
                // A list of objects is a list of dyn to upstream: its items are not checked.
                "variables.containers.all(c, c.imagee != '')",
                "variables.later == 1",
            ],
        ),
        &[
            ("replicas", "object.spec.replicas"),
            ("containers", "object.spec.template.spec.containers"),
            // A variable reads only those before it: `later` is dyn.
            ("early", "variables.later"),
            ("later", "1"),
        ],
    );
    let w = run(&p, Some(deployment()));
    assert_eq!(refs(&w), ["spec.validations[0].expression"]);
    assert_eq!(
        w[0].warning,
        format!(
            "apps/v1, Kind=Deployment: {}\n",
            at(
                "variables.replicas.foo == 1",
                19,
                "type 'int' does not support field selection"
            )
        )
    );
}

#[test]
fn optional_selection_is_checked_as_a_selection() {
    let v = vars(deployment());
    let source = "object.spec.?replicass.orValue(1) > 0";
    let (e, info) = cel::parser::Parser::new()
        .enable_optional_syntax(true)
        .parse_with_source_info(source)
        .expect("parses");
    assert_eq!(
        check_parsed(&e, &info, source, &v),
        [at(source, 12, "undefined field 'replicass'")]
    );
}

// --- schemas ---

#[test]
fn schema_from_the_openapi_document() {
    let d = deployment();
    let Schema::Object(root) = &d else {
        panic!("an object: {d:?}")
    };
    let Some(Schema::Object(meta)) = root.get("metadata") else {
        panic!("metadata")
    };
    // The full ObjectMeta is kept: it has name and generateName.
    assert_eq!(
        meta.get("labels"),
        Some(&Schema::Map(Box::new(Schema::Scalar(Scalar::String))))
    );
    assert_eq!(
        meta.get("__namespace__"),
        Some(&Schema::Scalar(Scalar::String))
    );
    assert_eq!(
        meta.get("creationTimestamp"),
        Some(&Schema::Scalar(Scalar::Timestamp))
    );
    assert!(Schema::from_openapi_document(&deployment_document(), "apps", "v1", "Pod").is_none());
}

#[test]
fn resource_roots_always_have_type_and_object_meta() {
    let s = with_foo(string());
    let string = || Schema::Scalar(Scalar::String);
    assert_eq!(
        s,
        Schema::Object(BTreeMap::from([
            ("foo".into(), string()),
            ("kind".into(), string()),
            ("apiVersion".into(), string()),
            (
                "metadata".into(),
                Schema::Object(BTreeMap::from([
                    ("name".into(), string()),
                    ("generateName".into(), string()),
                ])),
            ),
        ]))
    );
    // An embedded resource too.
    let s = schema(json!({"type": "object", "properties": {"child": {
        "type": "object", "x-kubernetes-embedded-resource": true, "properties": {},
    }}}));
    let Schema::Object(root) = s else { panic!() };
    assert!(matches!(root.get("child"), Some(Schema::Object(c)) if c.contains_key("metadata")));
}

#[test]
fn unknown_parts_are_any() {
    let s = schema(json!({"type": "object", "properties": {
        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                 "properties": {"a": string()}},
        "either": {"x-kubernetes-int-or-string": true},
        "untyped": {},
        "bad": {"$ref": "#/components/schemas/missing"},
        "1st": string(),
        "a.b-c/d__e": string(),
        "spaced out": string(),
    }}));
    let Schema::Object(props) = s else { panic!() };
    for name in ["free", "either", "untyped", "bad"] {
        assert_eq!(props.get(name), Some(&Schema::Any), "{name}");
    }
    assert!(props.contains_key("a__dot__b__dash__c__slash__d__underscores__e"));
    assert!(!props.contains_key("1st"));
    assert!(!props.keys().any(|k| k.contains("spaced")));
}

#[test]
fn recursive_references_end() {
    let document = json!({"components": {"schemas": {
        "Props": {
            "type": "object",
            "x-kubernetes-group-version-kind": [{"group": "g", "version": "v", "kind": "K"}],
            "properties": {"not": {"allOf": [{"$ref": "#/components/schemas/Props"}]}},
        },
    }}});
    let s = Schema::from_openapi_document(&document, "g", "v", "K").expect("found");
    let Schema::Object(props) = s else { panic!() };
    // The schema once more below itself, then nothing checked where it recurs again.
    assert!(
        matches!(props.get("not"), Some(Schema::Object(inner)) if inner.get("not") == Some(&Schema::Any)),
        "{props:?}"
    );
}

// --- the display ---

#[test]
fn display_counts_characters_and_lines() {
    // Wide characters take full-width dots, as cel-go writes them.
    let source = "'é' + x";
    assert_eq!(
        display(source, source.find('x').unwrap_or_default(), "m"),
        "ERROR: <input>:1:7: m\n | 'é' + x\n | .\u{ff0e}....^"
    );
    let source = "a &&\n\tb.c";
    assert_eq!(
        display(source, source.find('.').unwrap_or_default(), "m"),
        "ERROR: <input>:2:3: m\n |  b.c\n | ..^"
    );
    let e = "object.spec.replicass > 1 &&\n  object.spec.foo == 1";
    let v = vars(deployment());
    assert_eq!(
        errors(e, &v),
        [
            "ERROR: <input>:1:12: undefined field 'replicass'\n | object.spec.replicass > 1 &&\n | ...........^",
            "ERROR: <input>:2:14: undefined field 'foo'\n |   object.spec.foo == 1\n | .............^",
        ]
    );
}
