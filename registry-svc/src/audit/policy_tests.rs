//! Tests of `audit::policy`.
use serde_json::json;

use super::docs_tests::DOCS_POLICY;
use super::*;

use super::Stage::{Panic, RequestReceived, ResponseComplete, ResponseStarted};

/// The rules of upstream's `checker_test.go`, by its names.
fn rule(name: &str) -> Value {
    let get_resources = |level: &str, resources: &[&str]| json!({"level": level, "verbs": ["get"], "resources": [{"resources": resources}]});
    match name {
        "default" => json!({"level": "Metadata"}),
        "create" => json!({"level": "Request", "verbs": ["create"]}),
        "tims" => json!({"level": "Metadata", "users": ["tim@k8s.io"]}),
        "humans" => json!({"level": "Metadata", "userGroups": ["humans"]}),
        "serviceAccounts" => {
            json!({"level": "Request", "userGroups": ["system:serviceaccounts"]})
        }
        "getPods" => get_resources("RequestResponse", &["pods"]),
        "getPodLogs" => get_resources("Request", &["pods/log"]),
        "getPodWildcardMatching" => get_resources("Request", &["*"]),
        "getPodResourceWildcardMatching" => get_resources("Request", &["*/log"]),
        "getPodSubResourceWildcardMatching" => get_resources("Request", &["pods/*"]),
        "getClusterRoles" => json!({
            "level": "RequestResponse",
            "verbs": ["get"],
            "resources": [{"group": "rbac.authorization.k8s.io", "resources": ["clusterroles"]}],
            "namespaces": [""],
        }),
        "getLogs" => {
            json!({"level": "RequestResponse", "verbs": ["get"], "nonResourceURLs": ["/logs*"]})
        }
        "getMetrics" => {
            json!({"level": "Request", "verbs": ["get"], "nonResourceURLs": ["/metrics"]})
        }
        "clusterRoleEdit" => json!({
            "level": "Request",
            "resources": [{
                "group": "rbac.authorization.k8s.io",
                "resources": ["clusterroles"],
                "resourceNames": ["edit"],
            }],
        }),
        "omit RequestReceived" => {
            json!({"level": "Request", "omitStages": ["RequestReceived"]})
        }
        "only audit panic" => json!({
            "level": "Request",
            "omitStages": ["RequestReceived", "ResponseStarted", "ResponseComplete"],
        }),
        other => panic!("no rule {other}"),
    }
}

/// A policy of `names`' rules, in order, with the policy-wide `stages`.
fn policy(stages: &[Stage], names: &[&str]) -> Policy {
    let stages: Vec<&str> = stages.iter().map(|s| s.as_str()).collect();
    let rules: Vec<Value> = names.iter().map(|n| rule(n)).collect();
    let doc = json!({
        "apiVersion": "audit.k8s.io/v1",
        "kind": "Policy",
        "omitStages": stages,
        "rules": rules,
    });
    Policy::parse(doc.to_string().as_bytes(), "test").expect("a valid policy")
}

fn tim() -> UserInfo {
    UserInfo {
        name: "tim@k8s.io".into(),
        groups: vec!["humans".into(), "developers".into()],
        ..Default::default()
    }
}

pub(super) fn resource(
    verb: &str,
    group: &str,
    resource: &str,
    subresource: &str,
    namespace: &str,
    name: &str,
) -> Attributes {
    Attributes::Resource(ResourceAttributes {
        verb: verb.into(),
        group: group.into(),
        version: "v1".into(),
        resource: resource.into(),
        subresource: subresource.into(),
        namespace: namespace.into(),
        name: name.into(),
    })
}

pub(super) fn non_resource(verb: &str, path: &str) -> Attributes {
    Attributes::NonResource {
        verb: verb.into(),
        path: path.into(),
    }
}

/// The requests of upstream's `checker_test.go`, by its names.
fn request(name: &str) -> (UserInfo, Attributes) {
    match name {
        "namespaced" => (tim(), resource("get", "", "pods", "", "default", "busybox")),
        "cluster" => (
            tim(),
            resource(
                "get",
                "rbac.authorization.k8s.io",
                "clusterroles",
                "",
                "",
                "edit",
            ),
        ),
        "nonResource" => (tim(), non_resource("get", "/logs/kubelet.log")),
        "subresource" => (
            tim(),
            resource("get", "", "pods", "log", "default", "busybox"),
        ),
        // Upstream's request with no user: ours is one with no name and no groups.
        "Unauthorized" => (
            UserInfo::default(),
            resource("get", "", "pods", "", "default", "busybox"),
        ),
        other => panic!("no request {other}"),
    }
}

/// Upstream's `testAuditLevel` table: request, expected level, rules in order.
const LEVELS_TABLE: &[(&str, Level, &[&str])] = &[
    ("namespaced", Level::Metadata, &["default"]),
    ("namespaced", Level::None, &["create"]),
    ("namespaced", Level::Metadata, &["tims"]),
    ("namespaced", Level::Metadata, &["humans"]),
    ("namespaced", Level::None, &["serviceAccounts"]),
    ("namespaced", Level::RequestResponse, &["getPods"]),
    ("namespaced", Level::None, &["getClusterRoles"]),
    ("namespaced", Level::None, &["getLogs"]),
    ("namespaced", Level::None, &["getMetrics"]),
    (
        "namespaced",
        Level::Metadata,
        &["getMetrics", "serviceAccounts", "default"],
    ),
    (
        "namespaced",
        Level::RequestResponse,
        &["getMetrics", "getPods", "default"],
    ),
    (
        "namespaced",
        Level::RequestResponse,
        &["getPodLogs", "getPods"],
    ),
    ("cluster", Level::Metadata, &["default"]),
    ("cluster", Level::None, &["create"]),
    ("cluster", Level::Metadata, &["tims"]),
    ("cluster", Level::Metadata, &["humans"]),
    ("cluster", Level::None, &["serviceAccounts"]),
    ("cluster", Level::None, &["getPods"]),
    ("cluster", Level::RequestResponse, &["getClusterRoles"]),
    (
        "cluster",
        Level::Request,
        &["clusterRoleEdit", "getClusterRoles"],
    ),
    ("cluster", Level::None, &["getLogs"]),
    ("cluster", Level::None, &["getMetrics"]),
    (
        "cluster",
        Level::Metadata,
        &["getMetrics", "serviceAccounts", "default"],
    ),
    (
        "cluster",
        Level::RequestResponse,
        &["getMetrics", "getClusterRoles", "default"],
    ),
    ("cluster", Level::None, &["getPodLogs", "getPods"]),
    ("nonResource", Level::Metadata, &["default"]),
    ("nonResource", Level::None, &["create"]),
    ("nonResource", Level::Metadata, &["tims"]),
    ("nonResource", Level::Metadata, &["humans"]),
    ("nonResource", Level::None, &["serviceAccounts"]),
    ("nonResource", Level::None, &["getPods"]),
    ("nonResource", Level::None, &["getClusterRoles"]),
    ("nonResource", Level::RequestResponse, &["getLogs"]),
    ("nonResource", Level::None, &["getMetrics"]),
    (
        "nonResource",
        Level::Metadata,
        &["getMetrics", "serviceAccounts", "default"],
    ),
    (
        "nonResource",
        Level::RequestResponse,
        &["getLogs", "getClusterRoles", "default"],
    ),
    ("nonResource", Level::None, &["getPodLogs", "getPods"]),
    ("subresource", Level::Request, &["getPodLogs", "getPods"]),
    ("subresource", Level::Request, &["getPodWildcardMatching"]),
    (
        "subresource",
        Level::Request,
        &["getPodResourceWildcardMatching"],
    ),
    (
        "subresource",
        Level::Request,
        &["getPodSubResourceWildcardMatching"],
    ),
    ("Unauthorized", Level::None, &["tims"]),
    ("Unauthorized", Level::Metadata, &["tims", "default"]),
    ("Unauthorized", Level::None, &["humans"]),
    ("Unauthorized", Level::Metadata, &["humans", "default"]),
];

/// Evaluates request `req` on a policy of `rules` with the policy-wide `stages`.
fn decide(req: &str, stages: &[Stage], rules: &[&str]) -> Decision {
    let (user, attrs) = request(req);
    policy(stages, rules).evaluate(&user, &attrs)
}

fn check_levels(stages: &[Stage]) {
    for (req, level, rules) in LEVELS_TABLE {
        let d = decide(req, stages, rules);
        assert_eq!(d.level, *level, "request {req}, rules {rules:?}");
        assert_eq!(d.omit_stages, stages, "request {req}, rules {rules:?}");
    }
}

#[test]
fn rules_match_users_groups_verbs_resources_and_urls_first_match_winning() {
    check_levels(&[]);
}

#[test]
fn policy_wide_stages_reach_every_decision() {
    check_levels(&[RequestReceived, ResponseStarted]);
}

/// A case: the request, the level, the policy's stages, the stages decided, the rules.
type UnionCase<'a> = (&'a str, Level, &'a [Stage], &'a [Stage], &'a [&'a str]);

#[test]
fn a_rules_stages_are_unioned_with_the_policys() {
    let cases: &[UnionCase<'_>] = &[
        (
            "namespaced",
            Level::Request,
            &[],
            &[RequestReceived],
            &["omit RequestReceived", "getPods", "default"],
        ),
        (
            "namespaced",
            Level::Request,
            &[],
            &[RequestReceived, ResponseStarted, ResponseComplete],
            &["only audit panic", "getPods", "default"],
        ),
        (
            "cluster",
            Level::Request,
            &[],
            &[RequestReceived],
            &["omit RequestReceived", "getPods", "default"],
        ),
        (
            "nonResource",
            Level::Request,
            &[],
            &[RequestReceived, ResponseStarted, ResponseComplete],
            &["only audit panic", "getPods", "default"],
        ),
        (
            "namespaced",
            Level::Request,
            &[RequestReceived, ResponseStarted],
            &[RequestReceived, ResponseStarted],
            &["omit RequestReceived", "getPods", "default"],
        ),
        (
            "cluster",
            Level::Request,
            &[RequestReceived, ResponseStarted],
            &[RequestReceived, ResponseStarted, ResponseComplete],
            &["only audit panic", "getPods", "default"],
        ),
        (
            "nonResource",
            Level::Metadata,
            &[RequestReceived, ResponseStarted],
            &[RequestReceived, ResponseStarted],
            &["default", "omit RequestReceived", "getPods"],
        ),
        (
            "nonResource",
            Level::Request,
            &[RequestReceived, ResponseStarted],
            &[RequestReceived, ResponseStarted, ResponseComplete],
            &["only audit panic", "getPods", "default"],
        ),
    ];
    for (req, level, policy_stages, want, rules) in cases {
        let d = decide(req, policy_stages, rules);
        assert_eq!(
            (d.level, d.omit_stages.as_slice()),
            (*level, *want),
            "request {req}, rules {rules:?}"
        );
    }
}

#[test]
fn unions_keep_each_stage_once_in_order() {
    assert_eq!(union(&[&[], &[]]), Vec::<Stage>::new());
    assert_eq!(union(&[&[RequestReceived], &[]]), vec![RequestReceived]);
    assert_eq!(
        union(&[&[RequestReceived, RequestReceived], &[RequestReceived]]),
        vec![RequestReceived]
    );
    assert_eq!(
        union(&[&[ResponseStarted], &[RequestReceived]]),
        vec![RequestReceived, ResponseStarted]
    );
    assert_eq!(
        union(&[
            &[RequestReceived, ResponseStarted],
            &[Panic, RequestReceived]
        ]),
        vec![RequestReceived, ResponseStarted, Panic]
    );
}

#[test]
fn a_rule_overrides_the_policys_omit_managed_fields() {
    let (user, attrs) = (tim(), non_resource("get", "/"));
    for (policy_wide, rule, want) in [
        (false, None, false),
        (true, None, true),
        (true, Some(false), false),
        (false, Some(true), true),
    ] {
        let mut r = json!({"level": "RequestResponse", "verbs": ["get"]});
        if let Some(v) = rule {
            r["omitManagedFields"] = json!(v);
        }
        let doc = json!({"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "omitManagedFields": policy_wide, "rules": [r]});
        let p = Policy::parse(doc.to_string().as_bytes(), "test").expect("valid");
        assert_eq!(
            p.evaluate(&user, &attrs).omit_managed_fields,
            want,
            "policy {policy_wide}, rule {rule:?}"
        );
    }
}

#[test]
fn no_matching_rule_is_level_none_with_the_policys_defaults() {
    let doc = json!({
        "apiVersion": "audit.k8s.io/v1", "kind": "Policy",
        "omitStages": ["Panic", "RequestReceived", "Panic"], "omitManagedFields": true,
        "rules": [{"level": "Metadata", "verbs": ["create"]}],
    });
    let p = Policy::parse(doc.to_string().as_bytes(), "test").expect("valid");
    let d = p.evaluate(&tim(), &non_resource("get", "/version"));
    assert_eq!(
        d,
        Decision {
            level: Level::None,
            omit_stages: vec![RequestReceived, Panic],
            omit_managed_fields: true
        }
    );
    assert!(!d.emits(ResponseComplete), "level None emits nothing");
}

#[test]
fn resource_forms_and_names() {
    for (spec, resource, sub, want) in [
        ("*", "pods", "", true),
        ("*", "pods", "log", true),
        ("pods", "pods", "", true),
        ("pods", "pods", "log", false),
        ("pods/log", "pods", "log", true),
        ("pods/log", "pods", "", false),
        ("pods/log", "pods", "exec", false),
        ("*/scale", "deployments", "scale", true),
        ("*/scale", "deployments", "", false),
        ("pods/*", "pods", "", true),
        ("pods/*", "pods", "status", true),
        ("pods/*", "services", "status", false),
        ("pods/", "pods", "", false),
    ] {
        assert_eq!(
            resource_matches(spec, resource, sub),
            want,
            "{spec} of {resource}/{sub}"
        );
    }
    let doc = json!({"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "rules": [{
        "level": "Request",
        "resources": [{"group": "apps", "resources": ["deployments/*"], "resourceNames": ["web"]}],
    }]});
    let p = Policy::parse(doc.to_string().as_bytes(), "test").expect("valid");
    let level = |group: &str, sub: &str, name: &str| {
        p.evaluate(
            &tim(),
            &resource("update", group, "deployments", sub, "ns", name),
        )
        .level
    };
    assert_eq!(level("apps", "scale", "web"), Level::Request);
    assert_eq!(level("apps", "", "web"), Level::Request);
    assert_eq!(level("apps", "", "db"), Level::None, "another name");
    assert_eq!(level("", "", "web"), Level::None, "another group");
}

#[test]
fn non_resource_url_forms() {
    for (spec, path, want) in [
        ("*", "/anything", true),
        ("/healthz", "/healthz", true),
        ("/healthz", "/healthz/etcd", false),
        ("/healthz*", "/healthz/etcd", true),
        ("/healthz*", "/healthz", true),
        ("/healthz/*", "/healthz", false),
        ("/api*", "/apis", true),
    ] {
        assert_eq!(path_matches(path, spec), want, "{spec} of {path}");
    }
}

fn error_of(doc: Value) -> String {
    Policy::parse(doc.to_string().as_bytes(), "policy.json").expect_err("an invalid policy")
}

fn with_rules(rules: Value) -> Value {
    json!({"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "rules": rules})
}

#[test]
fn validation_errors_name_the_rule() {
    assert_eq!(
        error_of(with_rules(
            json!([{"level": "Metadata"}, {"verbs": ["get"]}])
        )),
        "policy.json: rules[1].level: Required value"
    );
    assert_eq!(
        error_of(with_rules(json!([{"level": "metadata"}]))),
        r#"policy.json: rules[0].level: Unsupported value: "metadata": supported values: "None", "Metadata", "Request", "RequestResponse""#
    );
    assert_eq!(
        error_of(with_rules(
            json!([{"level": "None", "namespaces": ["a"], "nonResourceURLs": ["/x"]}])
        )),
        r#"policy.json: rules[0].nonResourceURLs: Invalid value: ["/x"]: rules cannot apply to both regular resources and non-resource URLs"#
    );
    assert_eq!(
        error_of(with_rules(
            json!([{"level": "None", "nonResourceURLs": ["*", "/ok*", "healthz", "/a*b"]}])
        )),
        "policy.json: [rules[0].nonResourceURLs[2]: Invalid value: \"healthz\": non-resource URL rules must begin with a '/' character, \
         rules[0].nonResourceURLs[3]: Invalid value: \"/a*b\": non-resource URL wildcards '*' must be the final character of the rule]"
    );
    assert_eq!(
        error_of(with_rules(
            json!([{"level": "None", "omitStages": ["ResponseStarted", "Done"]}])
        )),
        r#"policy.json: rules[0].omitStages[1]: Invalid value: "Done": allowed stages are RequestReceived,ResponseStarted,ResponseComplete,Panic"#
    );
    assert_eq!(
        error_of(with_rules(
            json!([{"level": "None", "resources": [{"group": ""}, {"resourceNames": ["x"]}]}])
        )),
        r#"policy.json: rules[0].resources[1].resourceNames: Invalid value: ["x"]: using resourceNames requires at least one resource"#
    );
    assert!(
        error_of(with_rules(
            json!([{"level": "None", "resources": [{"group": "apps/v1"}]}])
        ))
        .starts_with(r#"policy.json: rules[0].resources[0].group: Invalid value: "apps/v1": "#)
    );
    let mut doc = with_rules(json!([{"level": "None"}]));
    doc["omitStages"] = json!(["Nope"]);
    assert!(error_of(doc).starts_with(r#"policy.json: omitStages[0]: Invalid value: "Nope""#));
}

#[test]
fn documents_that_are_no_v1_policy_are_refused() {
    assert_eq!(
        error_of(with_rules(json!([]))),
        "policy.json: loaded illegal policy with 0 rules"
    );
    assert_eq!(
        Policy::parse(
            b"apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n",
            "p.yaml"
        )
        .expect_err("no rules"),
        "p.yaml: loaded illegal policy with 0 rules"
    );
    let mut doc = with_rules(json!([{"level": "None"}]));
    doc["apiVersion"] = json!("audit.k8s.io/v1beta1");
    assert!(error_of(doc.clone()).contains(r#"unsupported apiVersion "audit.k8s.io/v1beta1""#));
    doc["apiVersion"] = json!("audit.k8s.io/v1");
    doc["kind"] = json!("Pod");
    assert!(error_of(doc.clone()).contains(r#"unsupported kind "Pod""#));
    doc["kind"] = json!("Policy");
    doc["rules"][0]["nonResourceURL"] = json!(["/x"]);
    assert!(
        error_of(doc).contains("unknown field `nonResourceURL`"),
        "a misspelt field is refused"
    );
    assert!(
        error_of(json!({"kind": "Policy", "rules": [{"level": "None"}]}))
            .contains("apiVersion is required")
    );
    assert!(Policy::parse(b"- 1\n", "p.yaml").is_err());
    assert!(Policy::parse(b"{not json", "p.json").is_err());
    let missing =
        Policy::read(std::path::Path::new("/nonexistent/audit-policy.yaml")).expect_err("no file");
    assert!(
        missing.starts_with("--audit-policy-file /nonexistent/audit-policy.yaml: "),
        "{missing}"
    );
}

#[test]
fn yaml_and_json_read_alike() {
    let yaml = Policy::parse(DOCS_POLICY.as_bytes(), "audit-policy.yaml").expect("YAML");
    let value =
        kubestore_apimachinery::yaml::to_json(DOCS_POLICY.as_bytes()).expect("YAML as JSON");
    let json = Policy::parse(value.to_string().as_bytes(), "audit-policy.json").expect("JSON");
    assert_eq!(yaml, json);
    assert_eq!(yaml.rules.len(), 9);
}

#[test]
fn levels_are_ordered_and_spelt_as_upstream() {
    assert!(
        Level::None < Level::Metadata
            && Level::Metadata < Level::Request
            && Level::Request < Level::RequestResponse
    );
    assert_eq!(
        LEVELS.map(Level::as_str),
        ["None", "Metadata", "Request", "RequestResponse"]
    );
    assert_eq!(
        STAGES.map(Stage::as_str),
        [
            "RequestReceived",
            "ResponseStarted",
            "ResponseComplete",
            "Panic"
        ]
    );
    assert_eq!(
        serde_json::from_value::<Level>(json!("Request")).expect("a level"),
        Level::Request
    );
    assert_eq!(
        serde_json::from_value::<Stage>(json!("Panic")).expect("a stage"),
        Panic
    );
}
