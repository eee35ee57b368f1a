//! The plugin's decisions without a server: upstream's `PolicyToEvaluate` semantics (defaults,
//! warn following enforce, failing closed for enforce and open for audit and warn),
//! exemptions, the significant-update rule and the Namespace's own labels.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::*;
use crate::{admission::pod_security::configuration::Exemptions, authn::UserInfo};

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (format!("{LABEL_PREFIX}{k}"), v.to_string()))
        .collect()
}

fn modes(pairs: &[(&str, &str)]) -> Modes {
    Modes::of(&labels(pairs), &Defaults::default())
}

#[test]
fn no_labels_is_the_defaults() {
    assert!(modes(&[]).fully_privileged());
    let strict = Defaults {
        enforce: (Level::Baseline, Version::Latest),
        ..Default::default()
    };
    assert_eq!(
        Modes::of(&BTreeMap::new(), &strict).enforce.text(),
        "baseline:latest"
    );
}

#[test]
fn labels_choose_a_level_and_version_per_mode() {
    let m = modes(&[
        ("enforce", "baseline"),
        ("enforce-version", "v1.25"),
        ("warn", "restricted"),
    ]);
    assert_eq!(m.enforce.text(), "baseline:v1.25");
    assert_eq!(m.warn.text(), "restricted:latest");
    assert_eq!(m.audit.text(), "privileged:latest");
    assert!(m.errors.is_empty());
}

#[test]
fn warn_follows_a_stricter_enforce_set_without_a_warn() {
    let m = modes(&[("enforce", "restricted"), ("enforce-version", "v1.28")]);
    assert_eq!(m.warn.text(), "restricted:v1.28");
    // A warn version alone is kept.
    let m = modes(&[("enforce", "baseline"), ("warn-version", "v1.20")]);
    assert_eq!(m.warn.text(), "baseline:v1.20");
    // An explicit warn is kept.
    let m = modes(&[("enforce", "restricted"), ("warn", "privileged")]);
    assert_eq!(m.warn.text(), "privileged:latest");
}

#[test]
fn enforce_fails_closed_audit_and_warn_fail_open() {
    let m = modes(&[
        ("enforce", "strict"),
        ("audit", "loud"),
        ("warn-version", "1.25"),
    ]);
    assert_eq!(m.enforce.text(), "restricted:latest");
    assert_eq!(m.audit.text(), "privileged:latest");
    assert_eq!(m.warn.text(), "privileged:latest");
    assert_eq!(
        m.errors,
        vec![
            "metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: \"strict\": must be one of privileged, baseline, restricted",
            "metadata.labels[pod-security.kubernetes.io/audit]: Invalid value: \"loud\": must be one of privileged, baseline, restricted",
            "metadata.labels[pod-security.kubernetes.io/warn-version]: Invalid value: \"1.25\": must be \"latest\" or \"v1.x\"",
        ]
    );
    assert!(m.error_text().starts_with("[metadata.labels["));
    assert!(!m.fully_privileged());
}

fn plugin(config: PodSecurityConfig, ns_labels: &[(&str, &str)]) -> PodSecurity {
    let namespaces = Arc::new(Namespaces::default());
    namespaces.set("ns", labels(ns_labels));
    PodSecurity::new(namespaces, config)
}

fn request<'a>(op: Operation, resource: &'a str, name: &'a str, user: &'a UserInfo) -> Request<'a> {
    Request {
        operation: op,
        group: "",
        version: "v1",
        resource,
        subresource: "",
        kind: "Pod",
        namespace: if resource == "pods" { "ns" } else { "" },
        name,
        dry_run: false,
        user,
        gate: None,
    }
}

fn privileged_pod(runtime_class: Option<&str>) -> Value {
    let mut p = json!({"metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "i", "securityContext": {"privileged": true}}]}});
    if let Some(rc) = runtime_class {
        p["spec"]["runtimeClassName"] = json!(rc);
    }
    p
}

fn admit(p: &PodSecurity, r: &Request<'_>, object: Value) -> (Result<(), ApiError>, Outcome) {
    let mut out = Outcome::default();
    let objects = Objects::of((Some(object), None));
    let result = p.validate(r, &objects, &mut out);
    (result, out)
}

fn annotation<'a>(out: &'a Outcome, key: &str) -> Option<&'a str> {
    out.annotations
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

#[test]
fn exemptions_skip_the_checks_and_say_why() {
    let config = PodSecurityConfig {
        defaults: Defaults {
            enforce: (Level::Baseline, Version::Latest),
            ..Default::default()
        },
        exemptions: Exemptions {
            usernames: vec!["ci".into()],
            namespaces: vec![],
            runtime_classes: vec!["kata".into()],
        },
    };
    let p = plugin(config.clone(), &[]);
    let alice = UserInfo {
        name: "alice".into(),
        ..Default::default()
    };
    let ci = UserInfo {
        name: "ci".into(),
        ..Default::default()
    };
    let (r, _) = admit(
        &p,
        &request(Operation::Create, "pods", "p", &alice),
        privileged_pod(None),
    );
    assert!(
        matches!(&r, Err(ApiError::Forbidden(m)) if m.starts_with("pods \"p\" is forbidden: violates PodSecurity \"baseline:latest\": privileged")),
        "{r:?}"
    );
    let (r, out) = admit(
        &p,
        &request(Operation::Create, "pods", "p", &ci),
        privileged_pod(None),
    );
    assert!(r.is_ok());
    assert_eq!(annotation(&out, EXEMPT), Some("user"));
    let (r, out) = admit(
        &p,
        &request(Operation::Create, "pods", "p", &alice),
        privileged_pod(Some("kata")),
    );
    assert!(r.is_ok());
    assert_eq!(annotation(&out, EXEMPT), Some("runtimeClass"));
    let mut by_namespace = config;
    by_namespace.exemptions.namespaces = vec!["ns".into()];
    let p = plugin(by_namespace, &[]);
    let (r, out) = admit(
        &p,
        &request(Operation::Create, "pods", "p", &alice),
        privileged_pod(None),
    );
    assert!(r.is_ok());
    assert_eq!(annotation(&out, EXEMPT), Some("namespace"));
}

#[test]
fn a_privileged_namespace_annotates_without_encoding_the_pod() {
    let p = plugin(PodSecurityConfig::default(), &[]);
    let user = UserInfo::default();
    let mut out = Outcome::default();
    fn never() -> Result<(Option<Value>, Option<Value>), ApiError> {
        Err(ApiError::Internal("the pod was encoded".into()))
    }
    let objects = Objects::new(&never);
    p.validate(
        &request(Operation::Create, "pods", "p", &user),
        &objects,
        &mut out,
    )
    .expect("allowed without the object");
    assert_eq!(annotation(&out, ENFORCE_POLICY), Some("privileged:latest"));
}

#[test]
fn a_namespace_with_labels_that_do_not_parse_is_invalid() {
    let p = plugin(PodSecurityConfig::default(), &[]);
    let user = UserInfo::default();
    let ns = |l: Value| json!({"metadata": {"name": "x", "labels": l}});
    let (r, _) = admit(
        &p,
        &request(Operation::Create, "namespaces", "x", &user),
        ns(json!({"pod-security.kubernetes.io/enforce": "strict"})),
    );
    let e = r.expect_err("invalid");
    assert_eq!(e.http_code(), 422);
    assert!(
        e.to_string().contains("metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: \"strict\": must be one of privileged, baseline, restricted"),
        "{e}"
    );
    // Valid labels, and an update that keeps the same bad labels, pass.
    let (r, _) = admit(
        &p,
        &request(Operation::Create, "namespaces", "x", &user),
        ns(json!({"pod-security.kubernetes.io/enforce": "baseline"})),
    );
    assert!(r.is_ok());
    let bad = ns(json!({"pod-security.kubernetes.io/enforce": "strict"}));
    let mut out = Outcome::default();
    let objects = Objects::of((Some(bad.clone()), Some(bad)));
    assert!(
        p.validate(
            &request(Operation::Update, "namespaces", "x", &user),
            &objects,
            &mut out
        )
        .is_ok()
    );
}

#[test]
fn an_exempt_namespace_given_a_policy_is_warned() {
    let config = PodSecurityConfig {
        exemptions: Exemptions {
            namespaces: vec!["x".into()],
            ..Default::default()
        },
        ..Default::default()
    };
    let p = plugin(config, &[]);
    let user = UserInfo::default();
    let (r, out) = admit(
        &p,
        &request(Operation::Create, "namespaces", "x", &user),
        json!({"metadata": {"name": "x", "labels": {"pod-security.kubernetes.io/enforce": "restricted"}}}),
    );
    assert!(r.is_ok());
    assert_eq!(
        out.warnings,
        vec![
            "namespace \"x\" is exempt from Pod Security, and the policy (enforce=restricted:latest) will be ignored"
        ]
    );
}

#[test]
fn only_images_container_counts_and_seccomp_annotations_are_significant() {
    let pod = |image: &str, labels: Value| {
        json!({"metadata": {"labels": labels},
            "spec": {"containers": [{"name": "c", "image": image}]}})
    };
    let old = pod("nginx:1", json!({}));
    assert!(!significant_update(
        &pod("nginx:1", json!({"a": "b"})),
        &old
    ));
    assert!(significant_update(&pod("nginx:2", json!({})), &old));
    let mut annotated = old.clone();
    annotated["metadata"]["annotations"] =
        json!({"container.seccomp.security.alpha.kubernetes.io/c": "unconfined"});
    assert!(significant_update(&annotated, &old));
}
