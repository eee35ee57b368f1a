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

// ---- windowsHostProcess ----

#[test]
fn host_process_pod_and_containers_as_upstream() {
    let spec = json!({
        "securityContext": { "windowsOptions": { "hostProcess": true } },
        "containers": [
            { "name": "a" },
            with_sc("b", json!({})),
            with_sc("c", json!({ "windowsOptions": {} })),
            with_sc("d", json!({ "windowsOptions": { "hostProcess": false } })),
            with_sc("e", json!({ "windowsOptions": { "hostProcess": true } })),
            with_sc("f", json!({ "windowsOptions": { "hostProcess": true } })),
        ]
    });
    assert_eq!(
        latest("windowsHostProcess", &spec),
        failure(
            "hostProcess",
            r#"pod and containers "e", "f" must not set securityContext.windowsOptions.hostProcess=true"#
        )
    );
}

#[test]
fn host_process_one_container_or_pod_alone() {
    let one = containers_with(&[(
        "a",
        Some(json!({ "windowsOptions": { "hostProcess": true } })),
    )]);
    assert_eq!(
        latest("windowsHostProcess", &one),
        failure(
            "hostProcess",
            r#"container "a" must not set securityContext.windowsOptions.hostProcess=true"#
        )
    );
    let pod = json!({ "securityContext": { "windowsOptions": { "hostProcess": true } } });
    assert_eq!(
        latest("windowsHostProcess", &pod),
        failure(
            "hostProcess",
            "pod must not set securityContext.windowsOptions.hostProcess=true"
        )
    );
}

#[test]
fn host_process_false_or_unset_passes() {
    let spec = json!({
        "securityContext": { "windowsOptions": { "hostProcess": false } },
        "containers": [{ "name": "a", "securityContext": { "windowsOptions": {} } }]
    });
    assert_eq!(latest("windowsHostProcess", &spec), None);
}

// ---- hostNamespaces ----

#[test]
fn host_namespaces_all_three_in_upstreams_order() {
    let spec = json!({ "hostIPC": true, "hostPID": true, "hostNetwork": true });
    assert_eq!(
        latest("hostNamespaces", &spec),
        failure(
            "host namespaces",
            "hostNetwork=true, hostPID=true, hostIPC=true"
        )
    );
}

#[test]
fn host_namespaces_one() {
    let spec = json!({ "hostPID": true, "hostNetwork": false });
    assert_eq!(
        latest("hostNamespaces", &spec),
        failure("host namespaces", "hostPID=true")
    );
}

#[test]
fn host_namespaces_false_unset_or_not_boolean_pass() {
    let spec = json!({ "hostNetwork": false, "hostPID": "true", "hostIPC": null });
    assert_eq!(latest("hostNamespaces", &spec), None);
}

// ---- privileged ----

#[test]
fn privileged_containers_as_upstream() {
    let spec = containers_with(&[
        ("a", None),
        ("b", Some(json!({}))),
        ("c", Some(json!({ "privileged": false }))),
        ("d", Some(json!({ "privileged": true }))),
        ("e", Some(json!({ "privileged": true }))),
    ]);
    assert_eq!(
        latest("privileged", &spec),
        failure(
            "privileged",
            r#"containers "d", "e" must not set securityContext.privileged=true"#
        )
    );
}

#[test]
fn privileged_names_init_then_regular_then_ephemeral_containers() {
    let privileged = json!({ "privileged": true });
    let spec = json!({
        "ephemeralContainers": [with_sc("debug", privileged.clone())],
        "containers": [with_sc("app", privileged.clone())],
        "initContainers": [with_sc("init", privileged)]
    });
    assert_eq!(
        latest("privileged", &spec),
        failure(
            "privileged",
            r#"containers "init", "app", "debug" must not set securityContext.privileged=true"#
        )
    );
}

#[test]
fn privileged_one_container_is_singular() {
    let spec = containers_with(&[("a", Some(json!({ "privileged": true }))), ("b", None)]);
    assert_eq!(
        latest("privileged", &spec),
        failure(
            "privileged",
            r#"container "a" must not set securityContext.privileged=true"#
        )
    );
}

// ---- capabilities_baseline ----

#[test]
fn capabilities_baseline_multiple_containers_as_upstream() {
    let spec = containers_with(&[
        (
            "a",
            Some(json!({ "capabilities": { "add": ["FOO", "BAR"] } })),
        ),
        (
            "b",
            Some(json!({ "capabilities": { "add": ["BAR", "BAZ"] } })),
        ),
    ]);
    assert_eq!(
        latest("capabilities_baseline", &spec),
        failure(
            "non-default capabilities",
            r#"containers "a", "b" must not include "BAR", "BAZ", "FOO" in securityContext.capabilities.add"#
        )
    );
}

#[test]
fn capabilities_baseline_allows_the_default_set() {
    let spec = containers_with(&[(
        "a",
        Some(
            json!({ "capabilities": { "add": ["NET_BIND_SERVICE", "CHOWN", "SYS_CHROOT"], "drop": ["ALL"] } }),
        ),
    )]);
    assert_eq!(latest("capabilities_baseline", &spec), None);
}

#[test]
fn capabilities_baseline_one_container_net_raw() {
    let spec = containers_with(&[
        (
            "a",
            Some(json!({ "capabilities": { "add": ["KILL", "NET_RAW"] } })),
        ),
        ("b", Some(json!({ "capabilities": { "add": ["KILL"] } }))),
    ]);
    assert_eq!(
        latest("capabilities_baseline", &spec),
        failure(
            "non-default capabilities",
            r#"container "a" must not include "NET_RAW" in securityContext.capabilities.add"#
        )
    );
}

#[test]
fn restricted_before_1_22_reports_baseline_capabilities() {
    let spec = containers_with(&[("a", Some(json!({ "capabilities": { "add": ["NET_RAW"] } })))]);
    let reasons = |v| -> Vec<String> {
        evaluate(Level::Restricted, v, &json!({}), &spec)
            .into_iter()
            .map(|f| f.reason)
            .collect()
    };
    assert!(reasons(Version::Minor(21)).contains(&"non-default capabilities".to_string()));
    assert!(!reasons(Version::Minor(21)).contains(&"unrestricted capabilities".to_string()));
    assert!(reasons(Version::Minor(22)).contains(&"unrestricted capabilities".to_string()));
    assert!(!reasons(Version::Minor(22)).contains(&"non-default capabilities".to_string()));
}

// ---- hostPathVolumes ----

#[test]
fn host_path_volumes_as_upstream() {
    let spec = json!({ "volumes": [
        { "name": "a", "hostPath": {} },
        { "name": "b", "hostPath": {} },
        { "name": "c", "emptyDir": {} }
    ]});
    assert_eq!(
        latest("hostPathVolumes", &spec),
        failure("hostPath volumes", r#"volumes "a", "b""#)
    );
}

#[test]
fn host_path_volume_one_is_singular() {
    let spec = json!({ "volumes": [{ "name": "a", "hostPath": { "path": "/var" } }] });
    assert_eq!(
        latest("hostPathVolumes", &spec),
        failure("hostPath volumes", r#"volume "a""#)
    );
}

#[test]
fn host_path_null_or_other_sources_pass() {
    let spec = json!({ "volumes": [
        { "name": "a", "hostPath": null },
        { "name": "b", "nfs": { "server": "x", "path": "/" } }
    ]});
    assert_eq!(latest("hostPathVolumes", &spec), None);
}

#[test]
fn restricted_reports_host_path_as_restricted_volume_only() {
    let spec = json!({ "volumes": [{ "name": "a", "hostPath": {} }] });
    let failures = evaluate(Level::Restricted, Version::Latest, &json!({}), &spec);
    assert!(failures.iter().all(|f| f.reason != "hostPath volumes"));
    assert!(
        failures
            .iter()
            .any(|f| f.reason == "restricted volume types")
    );
    let baseline = evaluate(Level::Baseline, Version::Latest, &json!({}), &spec);
    assert_eq!(
        baseline,
        vec![Failure {
            reason: "hostPath volumes".into(),
            detail: r#"volume "a""#.into()
        }]
    );
}

// ---- hostPorts ----

#[test]
fn host_port_one_container_one_port_as_upstream() {
    let spec = json!({ "containers": [
        { "name": "a", "ports": [{ "hostPort": 0 }] },
        { "name": "b", "ports": [{ "hostPort": 0 }, { "hostPort": 20 }] }
    ]});
    assert_eq!(
        latest("hostPorts", &spec),
        failure("hostPort", r#"container "b" uses hostPort 20"#)
    );
}

#[test]
fn host_ports_multiple_containers_as_upstream() {
    let spec = json!({ "containers": [
        { "name": "a", "ports": [{ "hostPort": 0 }] },
        { "name": "b", "ports": [{ "hostPort": 0 }, { "hostPort": 10 }, { "hostPort": 20 }] },
        { "name": "c", "ports": [{ "hostPort": 0 }, { "hostPort": 10 }, { "hostPort": 30 }] }
    ]});
    assert_eq!(
        latest("hostPorts", &spec),
        failure(
            "hostPort",
            r#"containers "b", "c" use hostPorts 10, 20, 30"#
        )
    );
}

#[test]
fn host_ports_are_listed_as_sorted_strings() {
    let spec = json!({ "initContainers": [
        { "name": "a", "ports": [{ "containerPort": 80, "hostPort": 9 }, { "hostPort": 10 }] }
    ]});
    assert_eq!(
        latest("hostPorts", &spec),
        failure("hostPort", r#"container "a" uses hostPorts 10, 9"#)
    );
}

#[test]
fn host_port_zero_or_unset_passes() {
    let spec = json!({ "containers": [{ "name": "a", "ports": [{ "containerPort": 80 }, { "hostPort": 0 }] }] });
    assert_eq!(latest("hostPorts", &spec), None);
}

// ---- appArmorProfile ----

#[test]
fn app_armor_allowed_profiles_and_annotations_pass() {
    let meta = annotated(json!({
        "container.apparmor.security.beta.kubernetes.io/test": "runtime/default",
        "container.apparmor.security.beta.kubernetes.io/other": "localhost/sec-profile01",
        "env": "prod"
    }));
    let spec = json!({
        "securityContext": { "appArmorProfile": { "type": "RuntimeDefault" } },
        "containers": [with_sc("foo", json!({ "appArmorProfile": { "type": "Localhost", "localhostProfile": "p" } }))]
    });
    assert_eq!(
        check_meta("appArmorProfile", Version::Latest, &meta, &spec),
        None
    );
    assert_eq!(
        check_meta("appArmorProfile", Version::Latest, &json!({}), &json!({})),
        None
    );
}

#[test]
fn app_armor_unconfined_pod() {
    let spec = json!({ "securityContext": { "appArmorProfile": { "type": "Unconfined" } } });
    assert_eq!(
        latest("appArmorProfile", &spec),
        failure(
            "forbidden AppArmor profile",
            r#"pod must not set AppArmor profile type to "Unconfined""#
        )
    );
}

#[test]
fn app_armor_unconfined_container_and_init_container() {
    let spec = json!({
        "securityContext": { "appArmorProfile": { "type": "RuntimeDefault" } },
        "containers": [with_sc("foo", json!({ "appArmorProfile": { "type": "Unconfined" } }))]
    });
    assert_eq!(
        latest("appArmorProfile", &spec),
        failure(
            "forbidden AppArmor profile",
            r#"container "foo" must not set AppArmor profile type to "Unconfined""#
        )
    );
    let spec = json!({
        "containers": [{ "name": "foo" }],
        "initContainers": [with_sc("bar", json!({ "appArmorProfile": { "type": "Unconfined" } }))]
    });
    assert_eq!(
        latest("appArmorProfile", &spec),
        failure(
            "forbidden AppArmor profile",
            r#"container "bar" must not set AppArmor profile type to "Unconfined""#
        )
    );
}

#[test]
fn app_armor_annotations_as_upstream() {
    let meta = annotated(json!({
        "container.apparmor.security.beta.kubernetes.io/": "bogus",
        "container.apparmor.security.beta.kubernetes.io/a": "",
        "container.apparmor.security.beta.kubernetes.io/b": "runtime/default",
        "container.apparmor.security.beta.kubernetes.io/c": "localhost/",
        "container.apparmor.security.beta.kubernetes.io/d": "localhost/foo",
        "container.apparmor.security.beta.kubernetes.io/e": "unconfined",
        "container.apparmor.security.beta.kubernetes.io/f": "unknown"
    }));
    assert_eq!(
        check_meta("appArmorProfile", Version::Latest, &meta, &json!({})),
        failure(
            "forbidden AppArmor profiles",
            concat!(
                "annotations must not set AppArmor profile type to ",
                r#""container.apparmor.security.beta.kubernetes.io/="bogus"", "#,
                r#""container.apparmor.security.beta.kubernetes.io/e="unconfined"", "#,
                r#""container.apparmor.security.beta.kubernetes.io/f="unknown"""#,
            )
        )
    );
}

#[test]
fn app_armor_pod_containers_and_annotation_together() {
    // Bad types sorted (a set profile without a type is ""), then the annotations.
    let meta =
        annotated(json!({ "container.apparmor.security.beta.kubernetes.io/c": "unconfined" }));
    let spec = json!({
        "securityContext": { "appArmorProfile": { "type": "Unconfined" } },
        "containers": [
            with_sc("a", json!({ "appArmorProfile": { "type": "Unconfined" } })),
            with_sc("b", json!({ "appArmorProfile": {} }))
        ]
    });
    assert_eq!(
        check_meta("appArmorProfile", Version::Latest, &meta, &spec),
        failure(
            "forbidden AppArmor profiles",
            concat!(
                r#"pod and containers "a", "b" and annotation must not set AppArmor profile type to "#,
                r#""", "Unconfined", "container.apparmor.security.beta.kubernetes.io/c="unconfined"""#,
            )
        )
    );
}

#[test]
fn app_armor_annotation_values_are_quoted_as_go_does() {
    let meta =
        annotated(json!({ "container.apparmor.security.beta.kubernetes.io/x": "a\"b\\c\n" }));
    assert_eq!(
        check_meta("appArmorProfile", Version::Latest, &meta, &json!({})),
        failure(
            "forbidden AppArmor profile",
            r#"annotation must not set AppArmor profile type to "container.apparmor.security.beta.kubernetes.io/x="a\"b\\c\n"""#
        )
    );
}

#[test]
fn go_quote_escapes_as_strconv_quote() {
    assert_eq!(go_quote("plain é"), r#""plain é""#);
    assert_eq!(go_quote("\u{7}\u{1}\u{7f}\t"), r#""\a\x01\x7f\t""#);
    assert_eq!(go_quote("\u{a0}\u{200b}"), r#""\u00a0\u200b""#);
    assert_eq!(go_quote("\u{f0000}"), r#""\U000f0000""#);
}

// ---- seLinuxOptions ----

/// `check_seLinuxOptions_test.go`'s containers: a to d allowed types at 1.31, e to g not.
fn se_linux_containers() -> Vec<Value> {
    vec![
        with_sc("a", json!({ "seLinuxOptions": { "type": "container_t" } })),
        with_sc(
            "b",
            json!({ "seLinuxOptions": { "type": "container_init_t" } }),
        ),
        with_sc(
            "c",
            json!({ "seLinuxOptions": { "type": "container_kvm_t" } }),
        ),
        with_sc(
            "d",
            json!({ "seLinuxOptions": { "type": "container_engine_t" } }),
        ),
        with_sc("e", json!({ "seLinuxOptions": { "type": "bar" } })),
        with_sc("f", json!({ "seLinuxOptions": { "user": "bar" } })),
        with_sc("g", json!({ "seLinuxOptions": { "role": "baz" } })),
    ]
}

#[test]
fn se_linux_invalid_pod_and_containers_as_upstream() {
    let spec = json!({
        "securityContext": { "seLinuxOptions": { "type": "foo", "user": "bar", "role": "baz" } },
        "containers": se_linux_containers()
    });
    assert_eq!(
        latest("seLinuxOptions", &spec),
        failure(
            "seLinuxOptions",
            r#"pod and containers "e", "f", "g" set forbidden securityContext.seLinuxOptions: types "bar", "foo"; user may not be set; role may not be set"#
        )
    );
}

#[test]
fn se_linux_invalid_pod_or_containers_alone_as_upstream() {
    let pod = json!({
        "securityContext": { "seLinuxOptions": { "type": "foo", "user": "bar", "role": "baz" } },
        "containers": se_linux_containers()[..4].to_vec()
    });
    assert_eq!(
        latest("seLinuxOptions", &pod),
        failure(
            "seLinuxOptions",
            r#"pod set forbidden securityContext.seLinuxOptions: type "foo"; user may not be set; role may not be set"#
        )
    );
    let containers =
        json!({ "securityContext": { "seLinuxOptions": {} }, "containers": se_linux_containers() });
    assert_eq!(
        latest("seLinuxOptions", &containers),
        failure(
            "seLinuxOptions",
            r#"containers "e", "f", "g" set forbidden securityContext.seLinuxOptions: type "bar"; user may not be set; role may not be set"#
        )
    );
}

#[test]
fn se_linux_bad_type_user_or_role_alone_as_upstream() {
    let cases = [
        (
            json!({ "type": "bad" }),
            r#"pod set forbidden securityContext.seLinuxOptions: type "bad""#,
        ),
        (
            json!({ "user": "bad" }),
            "pod set forbidden securityContext.seLinuxOptions: user may not be set",
        ),
        (
            json!({ "role": "bad" }),
            "pod set forbidden securityContext.seLinuxOptions: role may not be set",
        ),
    ];
    for (options, detail) in cases {
        let spec = json!({ "securityContext": { "seLinuxOptions": options } });
        assert_eq!(
            latest("seLinuxOptions", &spec),
            failure("seLinuxOptions", detail)
        );
    }
}

#[test]
fn se_linux_container_engine_t_allowed_from_1_31() {
    let spec = json!({ "containers": [with_sc("d", json!({ "seLinuxOptions": { "type": "container_engine_t" } }))] });
    assert_eq!(
        check("seLinuxOptions", Version::Minor(30), &spec),
        failure(
            "seLinuxOptions",
            r#"container "d" set forbidden securityContext.seLinuxOptions: type "container_engine_t""#
        )
    );
    assert_eq!(check("seLinuxOptions", Version::Minor(31), &spec), None);
    assert_eq!(latest("seLinuxOptions", &spec), None);
}

// ---- procMount ----

#[test]
fn proc_mount_as_upstream() {
    let spec = json!({
        "hostUsers": false,
        "containers": [
            { "name": "a" },
            with_sc("b", json!({})),
            with_sc("c", json!({ "procMount": "Default" })),
            with_sc("d", json!({ "procMount": "Unmasked" })),
            with_sc("e", json!({ "procMount": "other" }))
        ]
    });
    // The user-namespace relaxation is an alpha gate, off: hostUsers: false changes nothing.
    assert_eq!(
        latest("procMount", &spec),
        failure(
            "procMount",
            r#"containers "d", "e" must not set securityContext.procMount to "Unmasked", "other""#
        )
    );
}

#[test]
fn proc_mount_one_container_is_singular() {
    let spec = containers_with(&[("a", Some(json!({ "procMount": "Unmasked" })))]);
    assert_eq!(
        latest("procMount", &spec),
        failure(
            "procMount",
            r#"container "a" must not set securityContext.procMount to "Unmasked""#
        )
    );
}

#[test]
fn proc_mount_default_or_unset_passes() {
    let spec = containers_with(&[("a", Some(json!({ "procMount": "Default" }))), ("b", None)]);
    assert_eq!(latest("procMount", &spec), None);
}

// ---- seccompProfile_baseline ----

#[test]
fn seccomp_baseline_1_0_pod_annotation_as_upstream() {
    let meta = annotated(json!({ "seccomp.security.alpha.kubernetes.io/pod": "unconfined" }));
    assert_eq!(
        check_meta(
            "seccompProfile_baseline",
            Version::Minor(18),
            &meta,
            &json!({})
        ),
        failure(
            "seccompProfile",
            r#"forbidden annotation seccomp.security.alpha.kubernetes.io/pod="unconfined""#
        )
    );
}

#[test]
fn seccomp_baseline_1_0_container_annotations_as_upstream() {
    let meta = annotated(json!({
        "container.seccomp.security.alpha.kubernetes.io/a": "unconfined",
        "container.seccomp.security.alpha.kubernetes.io/b": "unknown"
    }));
    let spec = json!({ "containers": [{ "name": "a" }, { "name": "b" }, { "name": "c" }] });
    assert_eq!(
        check_meta("seccompProfile_baseline", Version::Minor(18), &meta, &spec),
        failure(
            "seccompProfile",
            r#"forbidden annotations container.seccomp.security.alpha.kubernetes.io/a="unconfined", container.seccomp.security.alpha.kubernetes.io/b="unknown""#
        )
    );
}

#[test]
fn seccomp_baseline_1_0_pod_and_container_annotations_as_upstream() {
    let meta = annotated(json!({
        "seccomp.security.alpha.kubernetes.io/pod": "unconfined",
        "container.seccomp.security.alpha.kubernetes.io/a": "unconfined",
        "container.seccomp.security.alpha.kubernetes.io/b": "unknown",
        "container.seccomp.security.alpha.kubernetes.io/z": "unconfined"
    }));
    let spec = json!({ "containers": [{ "name": "a" }, { "name": "b" }, { "name": "c" }] });
    assert_eq!(
        check_meta("seccompProfile_baseline", Version::Minor(0), &meta, &spec),
        failure(
            "seccompProfile",
            r#"forbidden annotations container.seccomp.security.alpha.kubernetes.io/a="unconfined", container.seccomp.security.alpha.kubernetes.io/b="unknown", seccomp.security.alpha.kubernetes.io/pod="unconfined""#
        )
    );
}

#[test]
fn seccomp_baseline_reads_annotations_until_1_18_and_fields_from_1_19() {
    let meta = annotated(json!({ "seccomp.security.alpha.kubernetes.io/pod": "unconfined" }));
    let spec = json!({ "securityContext": { "seccompProfile": { "type": "Unconfined" } } });
    assert_eq!(
        check_meta(
            "seccompProfile_baseline",
            Version::Minor(18),
            &json!({}),
            &spec
        ),
        None
    );
    assert_eq!(
        check_meta(
            "seccompProfile_baseline",
            Version::Minor(19),
            &meta,
            &json!({})
        ),
        None
    );
    assert_eq!(
        check("seccompProfile_baseline", Version::Minor(19), &spec),
        failure(
            "seccompProfile",
            r#"pod must not set securityContext.seccompProfile.type to "Unconfined""#
        )
    );
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

#[test]
fn seccomp_baseline_1_19_containers_and_pod_as_upstream() {
    let containers = json!({
        "securityContext": { "seccompProfile": { "type": "RuntimeDefault" } },
        "containers": seccomp_containers()
    });
    assert_eq!(
        latest("seccompProfile_baseline", &containers),
        failure(
            "seccompProfile",
            r#"containers "c", "d" must not set securityContext.seccompProfile.type to "Unconfined""#
        )
    );
    let both = json!({
        "securityContext": { "seccompProfile": { "type": "Unconfined" } },
        "containers": seccomp_containers()
    });
    assert_eq!(
        latest("seccompProfile_baseline", &both),
        failure(
            "seccompProfile",
            r#"pod and containers "c", "d" must not set securityContext.seccompProfile.type to "Unconfined""#
        )
    );
    // Unset is baseline-compliant.
    assert_eq!(
        latest(
            "seccompProfile_baseline",
            &json!({ "containers": [{ "name": "a" }] })
        ),
        None
    );
}

// ---- seccompProfile_restricted ----

const SECCOMP_MUST_SET_A: &str = r#"pod or container "a" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost""#;

#[test]
fn seccomp_restricted_no_profile_as_upstream() {
    let spec = json!({ "containers": [{ "name": "a" }] });
    assert_eq!(
        latest("seccompProfile_restricted", &spec),
        failure("seccompProfile", SECCOMP_MUST_SET_A)
    );
    let linux = json!({ "os": { "name": "linux" }, "containers": [{ "name": "a" }] });
    assert_eq!(
        latest("seccompProfile_restricted", &linux),
        failure("seccompProfile", SECCOMP_MUST_SET_A)
    );
}

#[test]
fn seccomp_restricted_exempts_windows_pods_from_1_25() {
    let windows = json!({ "os": { "name": "windows" }, "containers": [{ "name": "a" }] });
    assert_eq!(latest("seccompProfile_restricted", &windows), None);
    assert_eq!(
        check("seccompProfile_restricted", Version::Minor(25), &windows),
        None
    );
    assert_eq!(
        check("seccompProfile_restricted", Version::Minor(24), &windows),
        failure("seccompProfile", SECCOMP_MUST_SET_A)
    );
}

#[test]
fn seccomp_restricted_explicit_faults_as_upstream() {
    let pod = json!({
        "securityContext": { "seccompProfile": { "type": "Unconfined" } },
        "containers": [{ "name": "a" }]
    });
    assert_eq!(
        latest("seccompProfile_restricted", &pod),
        failure(
            "seccompProfile",
            r#"pod must not set securityContext.seccompProfile.type to "Unconfined""#
        )
    );
    let containers = json!({
        "securityContext": { "seccompProfile": { "type": "RuntimeDefault" } },
        "containers": seccomp_containers()
    });
    assert_eq!(
        check("seccompProfile_restricted", Version::Minor(19), &containers),
        failure(
            "seccompProfile",
            r#"containers "c", "d" must not set securityContext.seccompProfile.type to "Unconfined""#
        )
    );
}

#[test]
fn seccomp_restricted_pod_unset_container_fallthrough_as_upstream() {
    let spec = json!({ "containers": [
        { "name": "a" },
        with_sc("b", json!({})),
        with_sc("d", json!({ "seccompProfile": { "type": "RuntimeDefault" } })),
        with_sc("e", json!({ "seccompProfile": { "type": "Localhost", "localhostProfile": "p.json" } }))
    ]});
    assert_eq!(
        latest("seccompProfile_restricted", &spec),
        failure(
            "seccompProfile",
            r#"pod or containers "a", "b" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost""#
        )
    );
    let pod_set = json!({
        "securityContext": { "seccompProfile": { "type": "RuntimeDefault" } },
        "containers": [{ "name": "a" }]
    });
    assert_eq!(latest("seccompProfile_restricted", &pod_set), None);
}

// ---- sysctls ----

#[test]
fn sysctls_forbidden_listed_in_pod_order() {
    let spec = json!({ "securityContext": { "sysctls": [
        { "name": "b" }, { "name": "kernel.shm_rmid_forced" }, { "name": "a" }
    ]}});
    for version in [
        Version::Minor(0),
        Version::Minor(27),
        Version::Minor(29),
        Version::Latest,
    ] {
        assert_eq!(
            check("sysctls", version, &spec),
            failure("forbidden sysctls", "b, a")
        );
    }
}

#[test]
fn sysctls_safe_set_of_1_0_passes_everywhere() {
    let names = [
        "kernel.shm_rmid_forced",
        "net.ipv4.ip_local_port_range",
        "net.ipv4.tcp_syncookies",
        "net.ipv4.ping_group_range",
        "net.ipv4.ip_unprivileged_port_start",
    ];
    let list: Vec<Value> = names
        .iter()
        .map(|n| json!({ "name": n, "value": "1" }))
        .collect();
    let spec = json!({ "securityContext": { "sysctls": list } });
    assert_eq!(check("sysctls", Version::Minor(0), &spec), None);
    assert_eq!(latest("sysctls", &spec), None);
}

#[test]
fn sysctls_allowed_from_their_minimum_versions() {
    let cases = [
        ("net.ipv4.ip_local_reserved_ports", 27),
        ("net.ipv4.tcp_keepalive_time", 29),
        ("net.ipv4.tcp_fin_timeout", 29),
        ("net.ipv4.tcp_keepalive_intvl", 29),
        ("net.ipv4.tcp_keepalive_probes", 29),
        ("net.ipv4.tcp_rmem", 32),
        ("net.ipv4.tcp_wmem", 32),
    ];
    for (name, since) in cases {
        let spec = json!({ "securityContext": { "sysctls": [{ "name": name, "value": "1" }] } });
        assert_eq!(
            check("sysctls", Version::Minor(since - 1), &spec),
            failure("forbidden sysctls", name),
            "{name} before v1.{since}"
        );
        assert_eq!(
            check("sysctls", Version::Minor(since), &spec),
            None,
            "{name} at v1.{since}"
        );
        assert_eq!(latest("sysctls", &spec), None, "{name} at latest");
    }
}

// ---- allowPrivilegeEscalation ----

#[test]
fn allow_privilege_escalation_multiple_containers_as_upstream() {
    let spec = containers_with(&[
        ("a", None),
        ("b", Some(json!({}))),
        ("c", Some(json!({ "allowPrivilegeEscalation": true }))),
        ("d", Some(json!({ "allowPrivilegeEscalation": false }))),
    ]);
    let want = failure(
        "allowPrivilegeEscalation != false",
        r#"containers "a", "b", "c" must set securityContext.allowPrivilegeEscalation=false"#,
    );
    assert_eq!(
        check("allowPrivilegeEscalation", Version::Minor(8), &spec),
        want
    );
    assert_eq!(latest("allowPrivilegeEscalation", &spec), want);
}

#[test]
fn allow_privilege_escalation_exempts_windows_pods_from_1_25() {
    let windows = json!({ "os": { "name": "windows" }, "containers": [{ "name": "a" }] });
    assert_eq!(latest("allowPrivilegeEscalation", &windows), None);
    assert_eq!(
        check("allowPrivilegeEscalation", Version::Minor(24), &windows),
        failure(
            "allowPrivilegeEscalation != false",
            r#"container "a" must set securityContext.allowPrivilegeEscalation=false"#
        )
    );
}

#[test]
fn allow_privilege_escalation_linux_pod_without_security_context() {
    let linux = json!({ "os": { "name": "linux" }, "containers": [{ "name": "a" }] });
    assert_eq!(
        latest("allowPrivilegeEscalation", &linux),
        failure(
            "allowPrivilegeEscalation != false",
            r#"container "a" must set securityContext.allowPrivilegeEscalation=false"#
        )
    );
    assert_eq!(
        check("allowPrivilegeEscalation", Version::Minor(7), &linux),
        None
    );
}

// ---- capabilities_restricted ----

#[test]
fn capabilities_restricted_multiple_containers_as_upstream() {
    let spec = containers_with(&[
        (
            "a",
            Some(json!({ "capabilities": { "add": ["FOO", "BAR"] } })),
        ),
        (
            "b",
            Some(json!({ "capabilities": { "add": ["BAR", "BAZ"] } })),
        ),
        (
            "c",
            Some(
                json!({ "capabilities": { "add": ["NET_BIND_SERVICE", "CHOWN"], "drop": ["ALL", "FOO"] } }),
            ),
        ),
    ]);
    let want = failure(
        "unrestricted capabilities",
        r#"containers "a", "b" must set securityContext.capabilities.drop=["ALL"]; containers "a", "b", "c" must not include "BAR", "BAZ", "CHOWN", "FOO" in securityContext.capabilities.add"#,
    );
    assert_eq!(
        check("capabilities_restricted", Version::Minor(22), &spec),
        want
    );
    assert_eq!(latest("capabilities_restricted", &spec), want);
}

#[test]
fn capabilities_restricted_exempts_windows_pods_from_1_25() {
    let windows = json!({ "os": { "name": "windows" }, "containers": [{ "name": "a" }] });
    let must_drop = failure(
        "unrestricted capabilities",
        r#"container "a" must set securityContext.capabilities.drop=["ALL"]"#,
    );
    assert_eq!(latest("capabilities_restricted", &windows), None);
    assert_eq!(
        check("capabilities_restricted", Version::Minor(24), &windows),
        must_drop
    );
    let linux = json!({ "os": { "name": "linux" }, "containers": [{ "name": "a" }] });
    assert_eq!(latest("capabilities_restricted", &linux), must_drop);
}

#[test]
fn capabilities_restricted_drop_all_add_net_bind_service_passes() {
    let spec = containers_with(&[(
        "a",
        Some(json!({ "capabilities": { "drop": ["ALL"], "add": ["NET_BIND_SERVICE"] } })),
    )]);
    assert_eq!(latest("capabilities_restricted", &spec), None);
    // "all" is not "ALL".
    let lower = containers_with(&[("a", Some(json!({ "capabilities": { "drop": ["all"] } })))]);
    assert_eq!(
        latest("capabilities_restricted", &lower),
        failure(
            "unrestricted capabilities",
            r#"container "a" must set securityContext.capabilities.drop=["ALL"]"#
        )
    );
}

// ---- restrictedVolumes ----

#[test]
fn restricted_volumes_every_type_as_upstream() {
    let allowed = [
        ("a1", "emptyDir"),
        ("a2", "secret"),
        ("a3", "persistentVolumeClaim"),
        ("a4", "downwardAPI"),
        ("a5", "configMap"),
        ("a6", "projected"),
        ("a7", "csi"),
        ("a8", "ephemeral"),
        ("a9", "image"),
    ];
    let restricted = [
        ("b1", "hostPath"),
        ("b2", "gcePersistentDisk"),
        ("b3", "awsElasticBlockStore"),
        ("b4", "gitRepo"),
        ("b5", "nfs"),
        ("b6", "iscsi"),
        ("b7", "glusterfs"),
        ("b8", "rbd"),
        ("b9", "flexVolume"),
        ("b10", "cinder"),
        ("b11", "cephfs"),
        ("b12", "flocker"),
        ("b13", "fc"),
        ("b14", "azureFile"),
        ("b15", "vsphereVolume"),
        ("b16", "quobyte"),
        ("b17", "azureDisk"),
        ("b18", "photonPersistentDisk"),
        ("b19", "portworxVolume"),
        ("b20", "scaleIO"),
        ("b21", "storageos"),
    ];
    let mut volumes: Vec<Value> = allowed
        .iter()
        .chain(restricted.iter())
        .map(|(name, source)| {
            let mut v = json!({ "name": name });
            v[*source] = json!({});
            v
        })
        .collect();
    volumes.push(json!({ "name": "c1" }));
    let spec = json!({ "volumes": volumes });
    assert_eq!(
        latest("restrictedVolumes", &spec),
        failure(
            "restricted volume types",
            concat!(
                "volumes ",
                r#""b1", "b2", "b3", "b4", "b5", "b6", "b7", "b8", "b9", "b10", "b11", "b12", "b13", "b14", "b15", "b16", "b17", "b18", "b19", "b20", "b21", "c1""#,
                " use restricted volume types ",
                r#""awsElasticBlockStore", "azureDisk", "azureFile", "cephfs", "cinder", "fc", "flexVolume", "flocker", "gcePersistentDisk", "gitRepo", "glusterfs", "#,
                r#""hostPath", "iscsi", "nfs", "photonPersistentDisk", "portworxVolume", "quobyte", "rbd", "scaleIO", "storageos", "unknown", "vsphereVolume""#,
            )
        )
    );
}

#[test]
fn restricted_volume_one_is_singular() {
    let spec = json!({ "volumes": [{ "name": "a", "hostPath": { "path": "/" } }, { "name": "b", "secret": {} }] });
    assert_eq!(
        latest("restrictedVolumes", &spec),
        failure(
            "restricted volume types",
            r#"volume "a" uses restricted volume type "hostPath""#
        )
    );
}

#[test]
fn restricted_volumes_allowed_source_wins_and_null_is_unset() {
    // An allowed source passes whatever else is set (upstream's switch); null is no source.
    let spec = json!({ "volumes": [
        { "name": "a", "emptyDir": {}, "hostPath": {} },
        { "name": "b", "hostPath": null, "nfs": {} },
        { "name": "c", "configMap": null }
    ]});
    assert_eq!(
        latest("restrictedVolumes", &spec),
        failure(
            "restricted volume types",
            r#"volumes "b", "c" use restricted volume types "nfs", "unknown""#
        )
    );
}

// ---- runAsNonRoot ----

#[test]
fn run_as_non_root_unset_as_upstream() {
    let spec = json!({ "containers": [{ "name": "a" }] });
    assert_eq!(
        latest("runAsNonRoot", &spec),
        failure(
            "runAsNonRoot != true",
            r#"pod or container "a" must set securityContext.runAsNonRoot=true"#
        )
    );
}

#[test]
fn run_as_non_root_explicit_false_as_upstream() {
    let pod =
        json!({ "securityContext": { "runAsNonRoot": false }, "containers": [{ "name": "a" }] });
    assert_eq!(
        latest("runAsNonRoot", &pod),
        failure(
            "runAsNonRoot != true",
            "pod must not set securityContext.runAsNonRoot=false"
        )
    );
    let mut containers = containers_with(&[
        ("a", None),
        ("b", Some(json!({}))),
        ("c", Some(json!({ "runAsNonRoot": false }))),
        ("d", Some(json!({ "runAsNonRoot": false }))),
        ("e", Some(json!({ "runAsNonRoot": true }))),
        ("f", Some(json!({ "runAsNonRoot": true }))),
    ]);
    containers["securityContext"] = json!({ "runAsNonRoot": true });
    assert_eq!(
        latest("runAsNonRoot", &containers),
        failure(
            "runAsNonRoot != true",
            r#"containers "c", "d" must not set securityContext.runAsNonRoot=false"#
        )
    );
}

#[test]
fn run_as_non_root_pod_unset_container_fallthrough_as_upstream() {
    let spec = containers_with(&[
        ("a", None),
        ("b", Some(json!({}))),
        ("d", Some(json!({ "runAsNonRoot": true }))),
        ("e", Some(json!({ "runAsNonRoot": true }))),
    ]);
    assert_eq!(
        latest("runAsNonRoot", &spec),
        failure(
            "runAsNonRoot != true",
            r#"pod or containers "a", "b" must set securityContext.runAsNonRoot=true"#
        )
    );
}

#[test]
fn run_as_non_root_explicit_fault_is_told_before_implicit() {
    let spec = containers_with(&[("a", None), ("b", Some(json!({ "runAsNonRoot": false })))]);
    assert_eq!(
        latest("runAsNonRoot", &spec),
        failure(
            "runAsNonRoot != true",
            r#"container "b" must not set securityContext.runAsNonRoot=false"#
        )
    );
}

// ---- runAsUser ----

#[test]
fn run_as_user_zero_on_pod_as_upstream() {
    let spec = json!({ "securityContext": { "runAsUser": 0 }, "containers": [{ "name": "a" }] });
    assert_eq!(
        latest("runAsUser", &spec),
        failure("runAsUser=0", "pod must not set runAsUser=0")
    );
}

#[test]
fn run_as_user_zero_on_containers_as_upstream() {
    let mut spec = containers_with(&[
        ("a", None),
        ("b", Some(json!({}))),
        ("c", Some(json!({ "runAsUser": 0 }))),
        ("d", Some(json!({ "runAsUser": 0 }))),
        ("e", Some(json!({ "runAsUser": 1 }))),
        ("f", Some(json!({ "runAsUser": 1 }))),
    ]);
    spec["securityContext"] = json!({ "runAsUser": 1000 });
    assert_eq!(
        latest("runAsUser", &spec),
        failure(
            "runAsUser=0",
            r#"containers "c", "d" must not set runAsUser=0"#
        )
    );
}

#[test]
fn run_as_user_non_zero_or_unset_passes_and_applies_from_1_23() {
    let fine = json!({ "securityContext": { "runAsUser": 1000 }, "containers": [
        with_sc("c", json!({ "runAsUser": 1 })), { "name": "d" }
    ]});
    assert_eq!(latest("runAsUser", &fine), None);
    let root = json!({ "securityContext": { "runAsUser": 0 } });
    assert_eq!(check("runAsUser", Version::Minor(22), &root), None);
    assert_eq!(
        check("runAsUser", Version::Minor(23), &root),
        failure("runAsUser=0", "pod must not set runAsUser=0")
    );
}

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
