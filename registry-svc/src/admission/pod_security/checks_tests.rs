//! Upstream's cases: `policy/check_*_test.go` (their pods, in JSON, with the expected reasons
//! and details), `policy/registry_test.go` (which checks a level and version run, in which
//! order), `api/helpers_test.go` (parsing); then the version boundaries of the 1.33 checks,
//! the aggregate message, and inputs of the wrong shape.

use serde_json::{Value, json};

use super::*;

// ---- Helpers ----

/// A failure, for comparisons.
fn failure(reason: &str, detail: &str) -> Option<Failure> {
    Some(Failure {
        reason: reason.to_string(),
        detail: detail.to_string(),
    })
}

/// What the check `id` says at `version` about a pod with `meta` and `spec`: `None` when it
/// passes or does not exist at that version.
fn check_meta(id: &str, version: Version, meta: &Value, spec: &Value) -> Option<Failure> {
    let minor = effective_minor(CHECKS, version);
    CHECKS
        .iter()
        .find(|c| c.id == id)
        .and_then(|c| c.at(minor))
        .and_then(|v| (v.run)(meta, spec))
}

/// As `check_meta`, for a pod without metadata.
fn check(id: &str, version: Version, spec: &Value) -> Option<Failure> {
    check_meta(id, version, &json!({}), spec)
}

/// As `check`, at `latest`.
fn latest(id: &str, spec: &Value) -> Option<Failure> {
    check(id, Version::Latest, spec)
}

/// A pod's metadata with `annotations`.
fn annotated(annotations: Value) -> Value {
    json!({ "annotations": annotations })
}

/// The IDs of the 1.33 checks `level` runs at `version`, in order.
fn ids(level: Level, version: Version) -> Vec<&'static str> {
    selected(level, version)
        .into_iter()
        .map(|(id, _)| id)
        .collect()
}

/// A container named `name` with security context `sc`.
fn with_sc(name: &str, sc: Value) -> Value {
    json!({ "name": name, "securityContext": sc })
}

/// A pod spec whose containers have security contexts `scs` (`None`: no security context).
fn containers_with(scs: &[(&str, Option<Value>)]) -> Value {
    let list: Vec<Value> = scs
        .iter()
        .map(|(name, sc)| match sc {
            Some(sc) => with_sc(name, sc.clone()),
            None => json!({ "name": name }),
        })
        .collect();
    json!({ "containers": list })
}

/// `check_seccompProfile_*_test.go`'s containers: c and d explicitly bad, a and b unset.
fn seccomp_containers() -> Vec<Value> {
    vec![
        json!({ "name": "a" }),
        with_sc("b", json!({})),
        with_sc("c", json!({ "seccompProfile": { "type": "Unconfined" } })),
        with_sc("d", json!({ "seccompProfile": { "type": "Unconfined" } })),
        with_sc(
            "e",
            json!({ "seccompProfile": { "type": "RuntimeDefault" } }),
        ),
        with_sc(
            "f",
            json!({ "seccompProfile": { "type": "RuntimeDefault" } }),
        ),
    ]
}

// ---- Levels and versions (api/helpers.go) ----

#[test]
fn level_parse_accepts_exactly_the_three_names() {
    assert_eq!(Level::parse("privileged"), Some(Level::Privileged));
    assert_eq!(Level::parse("baseline"), Some(Level::Baseline));
    assert_eq!(Level::parse("restricted"), Some(Level::Restricted));
    for bad in ["", "Baseline", "restricted ", "default", "latest"] {
        assert_eq!(Level::parse(bad), None, "{bad:?}");
    }
}

#[test]
fn level_as_str_round_trips_and_levels_order_by_strictness() {
    for level in [Level::Privileged, Level::Baseline, Level::Restricted] {
        assert_eq!(Level::parse(level.as_str()), Some(level));
    }
    assert!(Level::Privileged < Level::Baseline);
    assert!(Level::Baseline < Level::Restricted);
}

#[test]
fn version_parse_accepts_upstreams_successes() {
    assert_eq!(Version::parse("latest"), Some(Version::Latest));
    assert_eq!(Version::parse("v1.0"), Some(Version::Minor(0)));
    assert_eq!(Version::parse("v1.1"), Some(Version::Minor(1)));
    assert_eq!(Version::parse("v1.20"), Some(Version::Minor(20)));
    assert_eq!(Version::parse("v1.10000"), Some(Version::Minor(10000)));
}

#[test]
fn version_parse_refuses_upstreams_failures_and_regexp_edges() {
    let bad = [
        "foo", "", "v2.0", "v1", "1.1", // upstream's
        "Latest", "v1.", "v1.01", "v1.00", "v0.1", "v1.-1", "v1.+1", "v1.1a", "v1.1.0", " v1.1",
        "v1.1 ", "V1.1",
    ];
    for s in bad {
        assert_eq!(Version::parse(s), None, "{s:?}");
    }
}

#[test]
fn version_prints_as_upstream_and_latest_is_newest() {
    assert_eq!(Version::Latest.to_string_upstream(), "latest");
    assert_eq!(Version::Minor(0).to_string_upstream(), "v1.0");
    assert_eq!(Version::Minor(33).to_string_upstream(), "v1.33");
    assert!(Version::Minor(u32::MAX) < Version::Latest);
    assert!(Version::Minor(9) < Version::Minor(10));
}

// ---- The registry (registry_test.go) ----

/// A check function that always passes (the registry's tests look at IDs and versions only).
fn pass(_meta: &Value, _spec: &Value) -> Option<Failure> {
    None
}

/// `registry_test.go`'s `TestCheckRegistry` checks: `id` and the minors its versions start at.
static TEST_CHECKS: &[Check] = &[
    baseline_check("a", &[since(0, pass)]),
    baseline_check("b", &[since(10, pass)]),
    baseline_check("c", &[since(0, pass), since(5, pass), since(10, pass)]),
    baseline_check("d", &[since(11, pass), since(15, pass), since(20, pass)]),
    restricted_check("e", &[since(0, pass)]),
    restricted_check("f", &[since(12, pass), since(16, pass), since(21, pass)]),
    restricted_check("g", &[replacing(10, pass, &["a"])]),
    restricted_check("h", &[replacing(0, pass, &["b"])]),
    restricted_check(
        "i",
        &[replacing(10, pass, &["c"]), replacing(21, pass, &["d"])],
    ),
];

/// What `level` at `version` runs of [`TEST_CHECKS`], as `id:v1.N` (N: where that
/// definition starts), as upstream's test names them.
fn test_registry(level: Level, version: &str) -> Vec<String> {
    let version = Version::parse(version).unwrap_or(Version::Latest);
    selected_in(TEST_CHECKS, level, version)
        .into_iter()
        .map(|(id, v)| format!("{id}:v1.{}", v.since))
        .collect()
}

#[test]
fn registry_picks_each_checks_definition_by_version_as_upstreams_test() {
    let cases: &[(Level, &str, &[&str])] = &[
        (Level::Privileged, "v1.0", &[]),
        (Level::Privileged, "latest", &[]),
        (Level::Baseline, "v1.0", &["a:v1.0", "c:v1.0"]),
        (Level::Baseline, "v1.4", &["a:v1.0", "c:v1.0"]),
        (Level::Baseline, "v1.5", &["a:v1.0", "c:v1.5"]),
        (Level::Baseline, "v1.10", &["a:v1.0", "b:v1.10", "c:v1.10"]),
        (
            Level::Baseline,
            "v1.11",
            &["a:v1.0", "b:v1.10", "c:v1.10", "d:v1.11"],
        ),
        (
            Level::Baseline,
            "latest",
            &["a:v1.0", "b:v1.10", "c:v1.10", "d:v1.20"],
        ),
        (
            Level::Restricted,
            "v1.0",
            &["a:v1.0", "c:v1.0", "e:v1.0", "h:v1.0"],
        ),
        (
            Level::Restricted,
            "v1.4",
            &["a:v1.0", "c:v1.0", "e:v1.0", "h:v1.0"],
        ),
        (
            Level::Restricted,
            "v1.5",
            &["a:v1.0", "c:v1.5", "e:v1.0", "h:v1.0"],
        ),
        (
            Level::Restricted,
            "v1.10",
            &["e:v1.0", "g:v1.10", "h:v1.0", "i:v1.10"],
        ),
        (
            Level::Restricted,
            "v1.11",
            &["d:v1.11", "e:v1.0", "g:v1.10", "h:v1.0", "i:v1.10"],
        ),
        (
            Level::Restricted,
            "latest",
            &[
                "c:v1.10", "e:v1.0", "f:v1.21", "g:v1.10", "h:v1.0", "i:v1.21",
            ],
        ),
        (
            Level::Restricted,
            "v1.10000",
            &[
                "c:v1.10", "e:v1.0", "f:v1.21", "g:v1.10", "h:v1.0", "i:v1.21",
            ],
        ),
    ];
    for (level, version, want) in cases {
        assert_eq!(test_registry(*level, version), *want, "{level:?}:{version}");
    }
}

#[test]
fn baseline_runs_its_checks_in_id_byte_order() {
    assert_eq!(
        ids(Level::Baseline, Version::Latest),
        [
            "appArmorProfile",
            "capabilities_baseline",
            "hostNamespaces",
            "hostPathVolumes",
            "hostPorts",
            "privileged",
            "procMount",
            "seLinuxOptions",
            "seccompProfile_baseline",
            "sysctls",
            "windowsHostProcess",
        ]
    );
}

#[test]
fn restricted_latest_runs_baseline_less_overridden_then_restricted() {
    assert_eq!(
        ids(Level::Restricted, Version::Latest),
        [
            "appArmorProfile",
            "hostNamespaces",
            "hostPorts",
            "privileged",
            "procMount",
            "seLinuxOptions",
            "sysctls",
            "windowsHostProcess",
            "allowPrivilegeEscalation",
            "capabilities_restricted",
            "restrictedVolumes",
            "runAsNonRoot",
            "runAsUser",
            "seccompProfile_restricted",
        ]
    );
}

#[test]
fn restricted_checks_join_at_their_minimum_versions() {
    // v1.7: no allowPrivilegeEscalation (1.8), seccomp is baseline's (restricted's from 1.19),
    // capabilities baseline's (restricted's from 1.22), no runAsUser (1.23).
    let v1_7 = ids(Level::Restricted, Version::Minor(7));
    assert!(!v1_7.contains(&"allowPrivilegeEscalation"));
    assert!(ids(Level::Restricted, Version::Minor(8)).contains(&"allowPrivilegeEscalation"));
    assert!(v1_7.contains(&"seccompProfile_baseline"));
    let v1_19 = ids(Level::Restricted, Version::Minor(19));
    assert!(v1_19.contains(&"seccompProfile_restricted"));
    assert!(!v1_19.contains(&"seccompProfile_baseline"));
    let v1_21 = ids(Level::Restricted, Version::Minor(21));
    assert!(v1_21.contains(&"capabilities_baseline"));
    assert!(!v1_21.contains(&"capabilities_restricted"));
    let v1_22 = ids(Level::Restricted, Version::Minor(22));
    assert!(v1_22.contains(&"capabilities_restricted"));
    assert!(!v1_22.contains(&"capabilities_baseline"));
    assert!(!v1_22.contains(&"runAsUser"));
    assert!(ids(Level::Restricted, Version::Minor(23)).contains(&"runAsUser"));
    // restrictedVolumes replaces hostPathVolumes at every version.
    assert!(!ids(Level::Restricted, Version::Minor(0)).contains(&"hostPathVolumes"));
}

#[test]
fn privileged_level_runs_nothing() {
    let spec = json!({
        "hostNetwork": true,
        "containers": [{ "name": "a", "securityContext": { "privileged": true } }],
        "volumes": [{ "name": "v", "hostPath": { "path": "/" } }]
    });
    assert!(evaluate(Level::Privileged, Version::Latest, &json!({}), &spec).is_empty());
    assert!(evaluate(Level::Privileged, Version::Minor(0), &json!({}), &spec).is_empty());
}

#[test]
fn versions_after_the_newest_definition_behave_as_latest() {
    assert_eq!(newest_minor(CHECKS), 32);
    let spec = json!({
        "securityContext": { "sysctls": [{ "name": "net.ipv4.tcp_rmem" }, { "name": "x" }] },
        "containers": [{ "name": "a" }]
    });
    let at_latest = evaluate(Level::Restricted, Version::Latest, &json!({}), &spec);
    for minor in [32, 33, 40, u32::MAX] {
        assert_eq!(
            evaluate(Level::Restricted, Version::Minor(minor), &json!({}), &spec),
            at_latest,
            "v1.{minor}"
        );
    }
}

// The checks of each level, upstream's `check_*_test.go` cases.
#[path = "baseline_tests.rs"]
mod baseline;
#[path = "restricted_tests.rs"]
mod restricted;

// ---- The aggregate message ----

#[test]
fn message_joins_reasons_with_details_in_parentheses() {
    let failures = [
        Failure {
            reason: "allowPrivilegeEscalation != false".into(),
            detail: r#"container "c" must set securityContext.allowPrivilegeEscalation=false"#
                .into(),
        },
        Failure {
            reason: "unrestricted capabilities".into(),
            detail: r#"container "c" must set securityContext.capabilities.drop=["ALL"]"#.into(),
        },
    ];
    assert_eq!(
        message(&failures),
        r#"allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"])"#
    );
}

#[test]
fn message_of_empty_detail_or_reason_and_of_nothing() {
    assert_eq!(message(&[]), "");
    let failures = [
        Failure {
            reason: "a".into(),
            detail: String::new(),
        },
        Failure {
            reason: String::new(),
            detail: "d".into(),
        },
    ];
    assert_eq!(message(&failures), "a, unknown forbidden reason (d)");
}

#[test]
fn message_of_a_plain_pod_at_restricted_latest() {
    let spec = json!({ "containers": [{ "name": "c", "image": "nginx" }] });
    let failures = evaluate(
        Level::Restricted,
        Version::Latest,
        &json!({ "name": "p" }),
        &spec,
    );
    assert_eq!(
        message(&failures),
        concat!(
            r#"allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), "#,
            r#"unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]), "#,
            r#"runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), "#,
            r#"seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")"#,
        )
    );
    assert!(evaluate(Level::Baseline, Version::Latest, &json!({}), &spec).is_empty());
}

#[test]
fn a_compliant_pod_passes_restricted() {
    let spec = json!({
        "securityContext": { "runAsNonRoot": true, "seccompProfile": { "type": "RuntimeDefault" } },
        "containers": [with_sc("c", json!({
            "allowPrivilegeEscalation": false,
            "capabilities": { "drop": ["ALL"] }
        }))],
        "volumes": [{ "name": "t", "projected": { "sources": [] } }]
    });
    assert_eq!(
        evaluate(Level::Restricted, Version::Latest, &json!({}), &spec),
        Vec::<Failure>::new()
    );
}

#[test]
fn baseline_failures_come_in_id_order() {
    let spec = json!({
        "hostNetwork": true,
        "securityContext": { "sysctls": [{ "name": "kernel.msgmax" }] },
        "containers": [with_sc("a", json!({ "privileged": true, "capabilities": { "add": ["SYS_ADMIN"] } }))]
    });
    let reasons: Vec<String> = evaluate(Level::Baseline, Version::Latest, &json!({}), &spec)
        .into_iter()
        .map(|f| f.reason)
        .collect();
    assert_eq!(
        reasons,
        [
            "non-default capabilities",
            "host namespaces",
            "privileged",
            "forbidden sysctls"
        ]
    );
}

// ---- Inputs of the wrong shape ----

#[test]
fn wrongly_typed_fields_count_as_unset() {
    let spec = json!({
        "hostNetwork": "true",
        "securityContext": "none",
        "containers": [{
            "name": "a",
            "ports": [{ "hostPort": "80" }],
            "securityContext": {
                "privileged": "yes",
                "capabilities": { "add": "SYS_ADMIN" },
                "procMount": 1,
                "seLinuxOptions": "x",
                "windowsOptions": { "hostProcess": 1 }
            }
        }],
        "volumes": { "name": "v", "hostPath": {} }
    });
    let meta = json!({ "annotations": { "seccomp.security.alpha.kubernetes.io/pod": 3 } });
    assert!(evaluate(Level::Baseline, Version::Latest, &meta, &spec).is_empty());
    assert!(evaluate(Level::Baseline, Version::Minor(0), &meta, &spec).is_empty());
}

#[test]
fn specs_of_any_shape_never_panic() {
    let shapes = [
        json!(null),
        json!("pod"),
        json!([1, 2]),
        json!({ "containers": "c" }),
        json!({ "containers": [null, 1, "x", []] }),
        json!({ "initContainers": [{ "name": 5, "securityContext": [] }] }),
    ];
    for spec in &shapes {
        for level in [Level::Privileged, Level::Baseline, Level::Restricted] {
            for version in [
                Version::Minor(0),
                Version::Minor(18),
                Version::Minor(24),
                Version::Latest,
            ] {
                let _ = evaluate(level, version, spec, spec);
            }
        }
    }
    // A container that is no object is a container with no name and no settings, as Go's
    // zero value.
    let nameless = evaluate(
        Level::Restricted,
        Version::Latest,
        &json!(null),
        &json!({ "containers": [null] }),
    );
    assert_eq!(
        nameless.first(),
        Some(&Failure {
            reason: "allowPrivilegeEscalation != false".into(),
            detail: r#"container "" must set securityContext.allowPrivilegeEscalation=false"#
                .into(),
        })
    );
}
