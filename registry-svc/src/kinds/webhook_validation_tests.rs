//! Upstream's `pkg/apis/admissionregistration/validation/validation_test.go` (1.33), its webhook
//! tests ported where they test what lives here (metadata is the Store's), with the exact
//! words its cases only match in part. Every case runs on both kinds: a validating webhook and
//! the mutating webhook with the same fields (and reinvocationPolicy `Never`) must give the
//! same violations. Upstream's fixture defaults admissionReviewVersions to `v1beta1`; ours also
//! defaults what v1 defaults (failurePolicy, matchPolicy, selectors, timeoutSeconds) and
//! declares no side effects. Expressions that must not compile are syntactically broken.

use kubestore_proto::admissionregistration::v1::{
    MutatingWebhook, ServiceReference, ValidatingWebhook,
};
use kubestore_proto::meta::v1::{LabelSelectorRequirement, ObjectMeta};

use super::*;

const BROKEN: &str = "object.x ==";

fn strs(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn url(u: &str) -> Option<WebhookClientConfig> {
    Some(WebhookClientConfig {
        url: Some(u.into()),
        ..Default::default()
    })
}

/// A defaulted webhook named `name`, with upstream's `validClientConfig`.
fn hook(name: &str) -> ValidatingWebhook {
    ValidatingWebhook {
        name: name.into(),
        client_config: url("https://example.com"),
        rules: Vec::new(),
        failure_policy: Some("Fail".into()),
        namespace_selector: Some(LabelSelector::default()),
        side_effects: Some("None".into()),
        timeout_seconds: Some(10),
        admission_review_versions: strs(&["v1beta1"]),
        match_policy: Some("Equivalent".into()),
        object_selector: Some(LabelSelector::default()),
        match_conditions: Vec::new(),
    }
}

/// `hook("webhook.k8s.io")` changed by `f`.
fn hook_with(f: impl FnOnce(&mut ValidatingWebhook)) -> ValidatingWebhook {
    let mut h = hook("webhook.k8s.io");
    f(&mut h);
    h
}

fn rule(operations: &[&str], resources: &[&str]) -> RuleWithOperations {
    RuleWithOperations {
        operations: strs(operations),
        api_groups: strs(&["a"]),
        api_versions: strs(&["a"]),
        resources: strs(resources),
        scope: None,
    }
}

fn condition(name: &str, expression: &str) -> MatchCondition {
    MatchCondition {
        name: name.into(),
        expression: expression.into(),
    }
}

fn meta() -> Option<ObjectMeta> {
    Some(ObjectMeta {
        name: "config".into(),
        ..Default::default()
    })
}

fn validating_config(hooks: &[ValidatingWebhook]) -> ValidatingWebhookConfiguration {
    ValidatingWebhookConfiguration {
        metadata: meta(),
        webhooks: hooks.to_vec(),
    }
}

/// The mutating webhooks with the same fields, and reinvocationPolicy `Never`.
fn mutating_config(hooks: &[ValidatingWebhook]) -> MutatingWebhookConfiguration {
    let webhooks = hooks.iter().cloned().map(|h| MutatingWebhook {
        name: h.name,
        client_config: h.client_config,
        rules: h.rules,
        failure_policy: h.failure_policy,
        namespace_selector: h.namespace_selector,
        side_effects: h.side_effects,
        timeout_seconds: h.timeout_seconds,
        admission_review_versions: h.admission_review_versions,
        match_policy: h.match_policy,
        reinvocation_policy: Some("Never".into()),
        object_selector: h.object_selector,
        match_conditions: h.match_conditions,
    });
    MutatingWebhookConfiguration {
        metadata: meta(),
        webhooks: webhooks.collect(),
    }
}

/// The violations of a configuration of `hooks`, the same for both kinds.
#[track_caller]
fn check(hooks: &[ValidatingWebhook]) -> Violations {
    let v = validating(&validating_config(hooks));
    assert_eq!(v, mutating(&mutating_config(hooks)), "mutating differs");
    v
}

/// The violations of an update from `old` to `new`, the same for both kinds.
#[track_caller]
fn check_update(new: &[ValidatingWebhook], old: &[ValidatingWebhook]) -> Violations {
    let v = validating_update(&validating_config(new), &validating_config(old));
    let m = mutating_update(&mutating_config(new), &mutating_config(old));
    assert_eq!(v, m, "mutating differs");
    v
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

#[track_caller]
fn assert_valid(v: &Violations) {
    assert!(v.is_empty(), "{v:?}");
}

fn only(v: &Violations) -> (&str, &str) {
    assert_eq!(v.len(), 1, "{v:?}");
    v.iter()
        .next()
        .map(|(f, d)| (f.as_str(), d.as_str()))
        .unwrap_or_default()
}

// TestValidateValidatingWebhookConfiguration and TestValidateMutatingWebhookConfiguration:
// admission review versions.
#[test]
fn validate_webhook_configuration_admission_review_versions() {
    let versions =
        |list: &[&str]| check(&[hook_with(|h| h.admission_review_versions = strs(list))]);
    assert_eq!(
        only(&versions(&[])),
        (
            "webhooks[0].admissionReviewVersions",
            "Required value: must specify one of v1, v1beta1"
        )
    );
    let v = versions(&["0v"]);
    assert_has(
        &v,
        "webhooks[0].admissionReviewVersions[0]",
        "Invalid value: \"0v\": a DNS-1035 label must consist of lower case alphanumeric",
    );
    assert_valid(&versions(&["v1beta1"]));
    assert_valid(&versions(&["v1"]));
    assert_valid(&versions(&["v1beta1", "invalid-version"]));
    let v = versions(&["invalidVersion"]);
    assert_has(
        &v,
        "webhooks[0].admissionReviewVersions",
        "Invalid value: []string{\"invalidVersion\"}: must include at least one of v1, v1beta1",
    );
    assert_eq!(
        only(&versions(&["v1beta1", "v1beta1"])),
        (
            "webhooks[0].admissionReviewVersions[1]",
            "Invalid value: \"v1beta1\": duplicate version"
        )
    );
}

// "all Webhooks must have a fully qualified name", "Webhooks must have unique names when
// created".
#[test]
fn validate_webhook_configuration_names() {
    let v = check(&[hook("webhook.k8s.io"), hook("k8s.io"), hook("")]);
    let fields: Vec<_> = v.iter().cloned().collect();
    assert_eq!(
        fields,
        [
            (
                "webhooks[1].name".to_string(),
                "Invalid value: \"k8s.io\": should be a domain with at least three segments \
                 separated by dots"
                    .to_string()
            ),
            ("webhooks[2].name".into(), "Required value".into()),
        ]
    );
    assert_has(
        &check(&[hook("Webhook.k8s.io")]),
        "webhooks[0].name",
        "Invalid value: \"Webhook.k8s.io\": a lowercase RFC 1123 subdomain",
    );
    assert_eq!(
        only(&check(&[hook("webhook.k8s.io"), hook("webhook.k8s.io")])),
        ("webhooks[1].name", "Duplicate value: \"webhook.k8s.io\"")
    );
    assert_valid(&check(&[hook("webhook.k8s.io"), hook("webhook2.k8s.io")]));
}

// The rules' cases: operations and resources.
#[test]
fn validate_webhook_configuration_rules() {
    let rules = |list: Vec<RuleWithOperations>| check(&[hook_with(|h| h.rules = list)]);
    let v = rules(vec![rule(&[], &["a"]), rule(&[], &["a"])]);
    let fields: Vec<_> = v.iter().map(|(f, d)| (f.as_str(), d.as_str())).collect();
    assert_eq!(
        fields,
        [
            ("webhooks[0].rules[0].operations", "Required value"),
            ("webhooks[0].rules[1].operations", "Required value"),
        ]
    );
    assert_eq!(
        only(&rules(vec![rule(&["CREATE", ""], &["a"])])),
        (
            "webhooks[0].rules[0].operations[1]",
            "Unsupported value: \"\": supported values: \"*\", \"CONNECT\", \"CREATE\", \"DELETE\", \"UPDATE\""
        )
    );
    assert_has(
        &rules(vec![rule(&["PATCH"], &["a"])]),
        "webhooks[0].rules[0].operations[0]",
        "Unsupported value: \"PATCH\"",
    );
    assert_eq!(
        only(&rules(vec![rule(&["CREATE", "*"], &["a"])])),
        (
            "webhooks[0].rules[0].operations",
            "Invalid value: []admissionregistration.OperationType{\"CREATE\", \"*\"}: if '*' is present, must not specify other operations"
        )
    );
    assert_valid(&rules(vec![rule(&["CREATE"], &["*", "a/b", "a/*", "*/b"])]));
    assert_eq!(
        only(&rules(vec![rule(&["CREATE"], &["*", "a"])])),
        (
            "webhooks[0].rules[0].resources",
            "Invalid value: []string{\"*\", \"a\"}: if '*' is present, must not specify other resources without subresources"
        )
    );
    assert_eq!(
        only(&rules(vec![rule(&["CREATE"], &["a/*", "a/x"])])),
        (
            "webhooks[0].rules[0].resources[1]",
            "Invalid value: \"a/x\": if 'a/*' is present, must not specify a/x"
        )
    );
    assert_valid(&rules(vec![rule(&["CREATE"], &["a/*", "a"])]));
    assert_eq!(
        only(&rules(vec![rule(&["CREATE"], &["*/a", "x/a"])])),
        (
            "webhooks[0].rules[0].resources[1]",
            "Invalid value: \"x/a\": if '*/a' is present, must not specify x/a"
        )
    );
    assert_eq!(
        only(&rules(vec![rule(&["CREATE"], &["*/*", "a"])])),
        (
            "webhooks[0].rules[0].resources",
            "Invalid value: []string{\"*/*\", \"a\"}: if '*/*' is present, must not specify other resources"
        )
    );
    let mut scoped = rule(&["*"], &["*"]);
    scoped.scope = Some("Global".into());
    assert_has(
        &rules(vec![scoped]),
        "webhooks[0].rules[0].scope",
        "Unsupported value: \"Global\": supported values: \"*\", \"Cluster\", \"Namespaced\"",
    );
}

// "FailurePolicy can only be \"Ignore\" or \"Fail\"", "SideEffects are required", "SideEffects
// can only be \"None\" or \"NoneOnDryRun\" when created", and matchPolicy.
#[test]
fn validate_webhook_configuration_policies() {
    assert_eq!(
        only(&check(&[hook_with(
            |h| h.failure_policy = Some("other".into())
        )])),
        (
            "webhooks[0].failurePolicy",
            "Unsupported value: \"other\": supported values: \"Fail\", \"Ignore\""
        )
    );
    assert_eq!(
        only(&check(&[hook_with(
            |h| h.match_policy = Some("other".into())
        )])),
        (
            "webhooks[0].matchPolicy",
            "Unsupported value: \"other\": supported values: \"Equivalent\", \"Exact\""
        )
    );
    assert_eq!(
        only(&check(&[hook_with(|h| h.side_effects = None)])),
        (
            "webhooks[0].sideEffects",
            "Required value: must specify one of None, NoneOnDryRun"
        )
    );
    for effects in ["other", "Unknown", "Some"] {
        assert_eq!(
            only(&check(&[hook_with(
                |h| h.side_effects = Some(effects.into())
            )])),
            (
                "webhooks[0].sideEffects",
                format!(
                    "Unsupported value: {effects:?}: supported values: \"None\", \"NoneOnDryRun\""
                )
                .as_str()
            )
        );
    }
    assert_valid(&check(&[hook_with(|h| {
        h.side_effects = Some("NoneOnDryRun".into())
    })]));
    assert_valid(&check(&[hook_with(|h| {
        h.failure_policy = Some("Ignore".into())
    })]));
    assert_valid(&check(&[hook_with(|h| {
        h.match_policy = Some("Exact".into())
    })]));
}

#[test]
fn reinvocation_policy_of_a_mutating_webhook() {
    let with = |policy: Option<&str>| {
        let mut c = mutating_config(&[hook("webhook.k8s.io")]);
        c.webhooks[0].reinvocation_policy = policy.map(String::from);
        mutating(&c)
    };
    assert_valid(&with(Some("IfNeeded")));
    assert_eq!(
        only(&with(Some("Sometimes"))),
        (
            "webhooks[0].reinvocationPolicy",
            "Unsupported value: \"Sometimes\": supported values: \"IfNeeded\", \"Never\""
        )
    );
    assert_eq!(
        only(&with(None)),
        ("webhooks[0].reinvocationPolicy", "Required value")
    );
}

// Ours: what v1 defaults is required when the caller did not default it.
#[test]
fn defaulted_fields_are_required() {
    let v = check(&[hook_with(|h| {
        h.failure_policy = None;
        h.match_policy = None;
        h.timeout_seconds = None;
        h.namespace_selector = None;
        h.object_selector = None;
    })]);
    let fields: Vec<_> = v.iter().map(|(f, d)| (f.as_str(), d.as_str())).collect();
    assert_eq!(
        fields,
        [
            ("webhooks[0].failurePolicy", "Required value"),
            ("webhooks[0].matchPolicy", "Required value"),
            ("webhooks[0].timeoutSeconds", "Required value"),
            ("webhooks[0].namespaceSelector", "Required value"),
            ("webhooks[0].objectSelector", "Required value"),
        ]
    );
}

#[test]
fn selectors_are_validated() {
    let bad = LabelSelector {
        match_expressions: vec![LabelSelectorRequirement {
            key: "a".into(),
            operator: "Near".into(),
            values: Vec::new(),
        }],
        ..Default::default()
    };
    let v = check(&[hook_with(|h| {
        h.namespace_selector = Some(bad.clone());
        h.object_selector = Some(bad.clone());
    })]);
    let fields: Vec<_> = v.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(
        fields,
        [
            "webhooks[0].namespaceSelector.matchExpressions[0].operator",
            "webhooks[0].objectSelector.matchExpressions[0].operator",
        ]
    );
}

// "both service and URL missing", "both service and URL provided", "blank URL", "wrong
// scheme", "missing host", "fragment", "query", "user", "just totally wrong".
#[test]
fn validate_webhook_configuration_url() {
    let with_url = |u: &str| check(&[hook_with(|h| h.client_config = url(u))]);
    const AT: &str = "webhooks[0].clientConfig.url";
    const FORM: &str = "; desired format: https://host[/path]";
    assert_eq!(
        only(&check(&[hook_with(|h| h.client_config = None)])),
        (
            "webhooks[0].clientConfig",
            "Required value: exactly one of url or service is required"
        )
    );
    let both = hook_with(|h| {
        h.client_config = Some(WebhookClientConfig {
            url: Some("example.com/k8s/webhook".into()),
            service: Some(ServiceReference {
                namespace: "ns".into(),
                name: "n".into(),
                path: None,
                port: Some(443),
            }),
            ca_bundle: Vec::new(),
        });
    });
    assert_eq!(
        only(&check(&[both])),
        (
            "webhooks[0].clientConfig",
            "Required value: exactly one of url or service is required"
        )
    );
    let v = with_url("");
    assert_has(
        &v,
        AT,
        &format!("Invalid value: \"\": host must be specified{FORM}"),
    );
    assert_has(
        &with_url("http://example.com"),
        AT,
        &format!("Invalid value: \"http\": 'https' is the only allowed URL scheme{FORM}"),
    );
    assert_eq!(
        only(&with_url("https:///fancy/webhook")),
        (
            AT,
            format!("Invalid value: \"\": host must be specified{FORM}").as_str()
        )
    );
    assert_eq!(
        only(&with_url("https://example.com/#bookmark")),
        (
            AT,
            "Invalid value: \"bookmark\": fragments are not permitted in the URL"
        )
    );
    assert_eq!(
        only(&with_url("https://example.com?arg=value")),
        (
            AT,
            "Invalid value: \"arg=value\": query parameters are not permitted in the URL"
        )
    );
    assert_eq!(
        only(&with_url("https://harry.potter@example.com/")),
        (
            AT,
            "Invalid value: \"harry.potter\": user information is not permitted in the URL"
        )
    );
    assert_has(
        &with_url("arg#backwards=thisis?html.index/port:host//:https"),
        AT,
        "Invalid value: \"\": host must be specified",
    );
    assert_valid(&with_url("https://example.com:8443/hooks/validate"));
    assert_valid(&with_url("HTTPS://10.0.0.1/x"));
    assert_valid(&with_url("https://[::1]:443/"));
}

// Go's `url.Parse` errors, as `ValidateWebhookURL` words them.
#[test]
fn urls_go_does_not_parse() {
    let error = |u: &str| {
        let v = check(&[hook_with(|h| h.client_config = url(u))]);
        let (field, description) = only(&v);
        assert_eq!(field, "webhooks[0].clientConfig.url");
        description.to_string()
    };
    let words = |u: &str, why: &str| {
        format!(
            "Required value: url must be a valid URL: parse {u:?}: {why}; desired format: https://host[/path]"
        )
    };
    for (u, why) in [
        (
            "https://exa mple.com/",
            "invalid character \" \" in host name",
        ),
        (
            "https://example.com:abc/",
            "invalid port \":abc\" after host",
        ),
        ("https://[::1/", "missing ']' in host"),
        ("://example.com", "missing protocol scheme"),
        ("https://example.com/%zz", "invalid URL escape \"%zz\""),
        ("https://example.com/%4", "invalid URL escape \"%4\""),
        ("https://ex%41mple.com/", "invalid URL escape \"%41\""),
        ("https://a b@example.com/", "net/url: invalid userinfo"),
        (
            "https://example.com/\n",
            "net/url: invalid control character in URL",
        ),
        ("1a:b/c", "first path segment in URL cannot contain colon"),
    ] {
        assert_eq!(error(u), words(u, why), "{u}");
    }
    // A bad escape in the fragment is reported with the whole URL.
    let u = "https://example.com/#%zz";
    assert_eq!(error(u), words(u, "invalid URL escape \"%zz\""));
}

// Ours: kubestore has no Services. Upstream's service cases ("path must start with slash",
// "path accepts slash", "invalid port 0", ...) are all refused the same way.
#[test]
fn a_service_is_forbidden() {
    for path in [None, Some("/"), Some("foo/"), Some("//")] {
        let v = check(&[hook_with(|h| {
            h.client_config = Some(WebhookClientConfig {
                url: None,
                service: Some(ServiceReference {
                    namespace: "ns".into(),
                    name: "n".into(),
                    path: path.map(String::from),
                    port: Some(443),
                }),
                ca_bundle: Vec::new(),
            });
        })]);
        assert_eq!(
            only(&v),
            (
                "webhooks[0].clientConfig.service",
                "Forbidden: kubestore has no Services: give the webhook's url (https://...) instead"
            )
        );
    }
}

// Ours: a caBundle holds a PEM certificate.
#[test]
fn ca_bundle_holds_a_certificate() {
    let with_ca = |ca: &[u8]| {
        check(&[hook_with(|h| {
            if let Some(c) = h.client_config.as_mut() {
                c.ca_bundle = ca.to_vec();
            }
        })])
    };
    let pem = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
    assert_valid(&with_ca(pem));
    assert_valid(&with_ca(b""));
    let v = with_ca(b"not a certificate");
    let (field, description) = only(&v);
    assert_eq!(field, "webhooks[0].clientConfig.caBundle");
    assert!(
        description.starts_with("Invalid value: \"<17 bytes>\": no PEM certificate found"),
        "{description}"
    );
}

// "timeout seconds cannot be greater than 30", "... smaller than 1", "... must be positive",
// "valid timeout seconds".
#[test]
fn validate_webhook_configuration_timeout_seconds() {
    for t in [31, 0, -1] {
        assert_eq!(
            only(&check(&[hook_with(|h| h.timeout_seconds = Some(t))])),
            (
                "webhooks[0].timeoutSeconds",
                format!("Invalid value: {t}: the timeout value must be between 1 and 30 seconds")
                    .as_str()
            )
        );
    }
    let timed = |name: &str, t: i32| {
        let mut h = hook(name);
        h.timeout_seconds = Some(t);
        h
    };
    assert_valid(&check(&[
        timed("webhook.k8s.io", 1),
        timed("webhook2.k8s.io", 15),
        timed("webhook3.k8s.io", 30),
    ]));
}

// The match conditions' cases.
#[test]
fn validate_webhook_configuration_match_conditions() {
    let conditions = |list: Vec<MatchCondition>| check(&[hook_with(|h| h.match_conditions = list)]);
    assert_eq!(
        only(&conditions(vec![condition("", "true")])),
        ("webhooks[0].matchConditions[0].name", "Required value")
    );
    let mut unnamed = hook_with(|h| h.match_conditions = vec![condition("", "true"); 2]);
    let mut second = hook("webhook2.k8s.io");
    second.match_conditions = vec![condition("", "true")];
    let v = check(&[unnamed.clone(), second]);
    let fields: Vec<_> = v.iter().map(|(f, d)| (f.as_str(), d.as_str())).collect();
    assert_eq!(
        fields,
        [
            ("webhooks[0].matchConditions[0].name", "Required value"),
            ("webhooks[0].matchConditions[1].name", "Required value"),
            ("webhooks[1].matchConditions[0].name", "Required value"),
        ]
    );
    let name_part = "name part must consist of alphanumeric characters";
    assert_has(
        &conditions(vec![condition("-hello", "true")]),
        "webhooks[0].matchConditions[0].name",
        &format!("Invalid value: \"-hello\": {name_part}"),
    );
    unnamed.match_conditions = vec![
        condition(".io", "true"),
        condition("thing.test.com", "true"),
    ];
    let mut spaced = hook("webhook2.k8s.io");
    spaced.match_conditions = vec![condition("some name", "true")];
    let v = check(&[unnamed, spaced]);
    assert_eq!(v.len(), 2, "{v:?}");
    assert_has(
        &v,
        "webhooks[0].matchConditions[0].name",
        &format!("Invalid value: \".io\": {name_part}"),
    );
    assert_has(
        &v,
        "webhooks[1].matchConditions[0].name",
        &format!("Invalid value: \"some name\": {name_part}"),
    );
    for expression in ["", "  "] {
        assert_eq!(
            only(&conditions(vec![condition("webhook.k8s.io", expression)])),
            (
                "webhooks[0].matchConditions[0].expression",
                "Required value"
            )
        );
    }
    let v = conditions(vec![condition("webhook.k8s.io", "object.x in [1, 2, ")]);
    let (field, description) = only(&v);
    assert_eq!(field, "webhooks[0].matchConditions[0].expression");
    assert!(
        description.starts_with("Invalid value: \"object.x in [1, 2,\": "),
        "{description}"
    );
    assert_eq!(
        only(&conditions(vec![
            condition("webhook.k8s.io", "true"),
            condition("webhook.k8s.io", "true"),
        ])),
        (
            "webhooks[0].matchConditions[1].name",
            "Duplicate value: \"webhook.k8s.io\""
        )
    );
    // "repeat names allowed across different hooks"
    let mut other = hook("webhook2.k8s.io");
    other.match_conditions = vec![condition("webhook.k8s.io", "true")];
    let first = hook_with(|h| h.match_conditions = vec![condition("webhook.k8s.io", "true")]);
    assert_valid(&check(&[first, other]));
    // "max of 64 match conditions"
    let many = (0..65)
        .map(|i| condition(&format!("c{i}"), "true"))
        .collect();
    assert_eq!(
        only(&conditions(many)),
        (
            "webhooks[0].matchConditions",
            "Too many: 65: must have at most 64 items"
        )
    );
}

// TestValidateValidatingWebhookConfigurationUpdate and
// TestValidateMutatingWebhookConfigurationUpdate: admission review versions.
#[test]
fn validate_webhook_configuration_update_admission_review_versions() {
    let versioned = |list: &[&str]| {
        hook_with(|h| {
            h.side_effects = Some("Unknown".into());
            h.admission_review_versions = strs(list);
        })
    };
    // "should pass on valid new AdmissionReviewVersion (v1beta1)" and "(v1)"
    assert_valid(&check_update(
        &[versioned(&["v1beta1"])],
        &[versioned(&["v1beta1"])],
    ));
    assert_valid(&check_update(
        &[versioned(&["v1"])],
        &[versioned(&["v1beta1"])],
    ));
    // "should pass on invalid AdmissionReviewVersion with invalid previous versions"
    assert_valid(&check_update(
        &[versioned(&["invalid-v1", "invalid-v2"])],
        &[versioned(&["invalid-v0"])],
    ));
    // "... with valid previous versions", "... with missing previous versions"
    for old in [versioned(&["v1beta1", "invalid-v1"]), versioned(&[])] {
        assert_eq!(
            only(&check_update(&[versioned(&["invalid-v1"])], &[old])),
            (
                "webhooks[0].admissionReviewVersions",
                "Invalid value: []string{\"invalid-v1\"}: must include at least one of v1, v1beta1"
            )
        );
    }
}

// "Webhooks must have unique names when old config has unique names", "Webhooks can have
// duplicate names when old config has duplicate names".
#[test]
fn validate_webhook_configuration_update_names() {
    let twice = [hook("webhook.k8s.io"), hook("webhook.k8s.io")];
    assert_eq!(
        only(&check_update(&twice, &[hook("webhook.k8s.io")])),
        ("webhooks[1].name", "Duplicate value: \"webhook.k8s.io\"")
    );
    assert_valid(&check_update(&twice, &twice));
    // The name is still checked.
    assert_has(
        &check_update(&[hook("k8s.io")], &[hook("k8s.io")]),
        "webhooks[0].name",
        "Invalid value: \"k8s.io\"",
    );
}

// "Webhooks can't have side effects when old config has no side effects", "Webhooks can have
// side effects when old config has side effects".
#[test]
fn validate_webhook_configuration_update_side_effects() {
    let unknown = hook_with(|h| h.side_effects = Some("Unknown".into()));
    assert_eq!(
        only(&check_update(
            std::slice::from_ref(&unknown),
            &[hook("webhook.k8s.io")]
        )),
        (
            "webhooks[0].sideEffects",
            "Unsupported value: \"Unknown\": supported values: \"None\", \"NoneOnDryRun\""
        )
    );
    assert_valid(&check_update(
        std::slice::from_ref(&unknown),
        std::slice::from_ref(&unknown),
    ));
    assert_eq!(
        only(&check_update(
            &[hook_with(|h| h.side_effects = Some("other".into()))],
            std::slice::from_ref(&unknown)
        )),
        (
            "webhooks[0].sideEffects",
            "Unsupported value: \"other\": supported values: \"None\", \"NoneOnDryRun\", \"Some\", \"Unknown\""
        )
    );
    assert_eq!(
        only(&check_update(
            &[hook_with(|h| h.side_effects = None)],
            &[unknown]
        )),
        (
            "webhooks[0].sideEffects",
            "Required value: must specify one of None, NoneOnDryRun, Some, Unknown"
        )
    );
}

// "Webhooks must compile CEL expressions with StoredExpression environment if unchanged",
// "... with NewExpression environment type if changed": unchanged conditions are not checked,
// an expression the old object had is not compiled again, a new one is.
#[test]
fn validate_webhook_configuration_update_match_conditions() {
    let with = |list: Vec<MatchCondition>| hook_with(|h| h.match_conditions = list);
    let stored = with(vec![condition("bad name!", BROKEN)]);
    assert_valid(&check_update(
        std::slice::from_ref(&stored),
        std::slice::from_ref(&stored),
    ));
    let grown = with(vec![
        condition("checkStorage", BROKEN),
        condition("other", "true"),
    ]);
    assert_valid(&check_update(
        std::slice::from_ref(&grown),
        std::slice::from_ref(&stored),
    ));
    let v = check_update(
        &[with(vec![condition("checkStorage", BROKEN)])],
        &[with(vec![condition("checkStorage", "true")])],
    );
    let (field, description) = only(&v);
    assert_eq!(field, "webhooks[0].matchConditions[0].expression");
    assert!(description.starts_with("Invalid value: "), "{description}");
    // Changed conditions are checked again: the bad name too.
    assert_has(
        &check_update(&[with(vec![condition("bad name!", "true")])], &[stored]),
        "webhooks[0].matchConditions[0].name",
        "Invalid value: \"bad name!\"",
    );
    // A webhook added to the configuration changes the conditions' list.
    // (Its expression is new: the old object's are not compiled again, in any webhook.)
    let mut added = hook("webhook2.k8s.io");
    added.match_conditions = vec![condition("c", "object.y ==")];
    let v = check_update(&[grown.clone(), added], &[grown]);
    assert_eq!(only(&v).0, "webhooks[1].matchConditions[0].expression");
}

#[test]
fn a_valid_configuration_passes() {
    let full = hook_with(|h| {
        h.rules = vec![rule(&["CREATE", "UPDATE"], &["pods", "pods/status"])];
        h.match_conditions = vec![condition("not-kube-system", "request.namespace != 'x'")];
        h.namespace_selector = Some(LabelSelector {
            match_labels: [("team".to_string(), "a".to_string())].into(),
            ..Default::default()
        });
    });
    assert_valid(&check(&[full.clone(), hook("webhook2.k8s.io")]));
    assert_valid(&check(&[]));
    assert_valid(&check_update(
        std::slice::from_ref(&full),
        std::slice::from_ref(&full),
    ));
}
