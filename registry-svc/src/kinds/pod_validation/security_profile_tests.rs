//! Upstream's cases for the seccomp and AppArmor profiles (`validation_test.go`:
//! `TestValidateSeccompProfileField`-style cases of `TestValidatePodSpec` and
//! `TestValidateSecurityContext`, `TestValidateSeccompAnnotationAndField`,
//! `TestValidateSeccompAnnotationsAndFieldsMatch`, `TestValidateAppArmorProfileFormat`,
//! `TestValidateAppArmorAnnotationsAndFieldsMatchOnCreate`).

use std::collections::BTreeMap;

use kubestore_proto::core::v1::{PodOs, PodSecurityContext, PodSpec, SecurityContext};

use super::super::{annotations, annotations_create, annotations_update};
use super::{apparmor, container, container_sc, one, pairs, pod_sc, problems, seccomp, spec_with};
use crate::violations::Violations;

#[test]
fn seccomp_fields() {
    let at = "spec.securityContext.seccompProfile";
    for (profile, want) in [
        (
            seccomp("", None),
            vec![(
                format!("{at}.type"),
                "Required value: type is required when seccompProfile is set".to_string(),
            )],
        ),
        (
            seccomp("Docker", None),
            vec![(
                format!("{at}.type"),
                "Unsupported value: \"Docker\": supported values: \"Localhost\", \"RuntimeDefault\", \"Unconfined\"".to_string(),
            )],
        ),
        (
            seccomp("Localhost", None),
            vec![(
                format!("{at}.localhostProfile"),
                "Required value: must be set when seccomp type is Localhost".to_string(),
            )],
        ),
        (
            seccomp("Localhost", Some("/abs/../x.json")),
            vec![
                (
                    format!("{at}.localhostProfile"),
                    "Invalid value: \"/abs/../x.json\": must be a relative path".to_string(),
                ),
                (
                    format!("{at}.localhostProfile"),
                    "Invalid value: \"/abs/../x.json\": must not contain '..'".to_string(),
                ),
            ],
        ),
        (
            seccomp("RuntimeDefault", Some("x.json")),
            vec![(
                format!("{at}.localhostProfile"),
                "Invalid value: core.SeccompProfile{Type:\"RuntimeDefault\", LocalhostProfile:(*string)(0xc000000000)}: can only be set when seccomp type is Localhost".to_string(),
            )],
        ),
    ] {
        let spec = pod_sc(|sc| sc.seccomp_profile = Some(profile.clone()));
        assert_eq!(problems(&spec), want, "{profile:?}");
    }
}

#[test]
fn app_armor_fields() {
    let at = "spec.containers[0].securityContext.appArmorProfile";
    let long = "a".repeat(4096);
    for (profile, want) in [
        (
            apparmor("", None),
            vec![(
                format!("{at}.type"),
                "Required value: type is required when appArmorProfile is set".to_string(),
            )],
        ),
        (
            apparmor("Other", None),
            vec![(
                format!("{at}.type"),
                "Unsupported value: \"Other\": supported values: \"Localhost\", \"RuntimeDefault\", \"Unconfined\"".to_string(),
            )],
        ),
        (
            apparmor("Localhost", None),
            vec![(
                format!("{at}.localhostProfile"),
                "Required value: must be set when AppArmor type is Localhost".to_string(),
            )],
        ),
        (
            apparmor("Localhost", Some("")),
            vec![(
                format!("{at}.localhostProfile"),
                "Required value: must be set when AppArmor type is Localhost".to_string(),
            )],
        ),
        (
            apparmor("Localhost", Some(" p ")),
            vec![(
                format!("{at}.localhostProfile"),
                "Invalid value: \" p \": must not be padded with whitespace".to_string(),
            )],
        ),
        (
            apparmor("Localhost", Some(&long)),
            vec![(
                format!("{at}.localhostProfile"),
                "Too long: may not be more than 4095 bytes".to_string(),
            )],
        ),
        (
            apparmor("Unconfined", Some("p")),
            vec![(
                format!("{at}.localhostProfile"),
                "Invalid value: \"p\": can only be set when AppArmor type is Localhost".to_string(),
            )],
        ),
    ] {
        let spec = container_sc(SecurityContext {
            app_armor_profile: Some(profile.clone()),
            ..Default::default()
        });
        assert_eq!(problems(&spec), want, "{profile:?}");
    }
}

fn annotated(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn annotation_problems(a: &BTreeMap<String, String>, spec: &PodSpec) -> Vec<(String, String)> {
    let mut v = Violations::new();
    annotations(a, spec, &mut v);
    v.iter().cloned().collect()
}

fn create_problems(a: &BTreeMap<String, String>, spec: &PodSpec) -> Vec<(String, String)> {
    let mut v = Violations::new();
    annotations_create(a, spec, &mut v);
    v.iter().cloned().collect()
}

#[test]
fn seccomp_annotations() {
    let spec = spec_with(|_| {});
    let ok = annotated(&[
        (
            "seccomp.security.alpha.kubernetes.io/pod",
            "runtime/default",
        ),
        (
            "container.seccomp.security.alpha.kubernetes.io/c",
            "localhost/profiles/fine.json",
        ),
        (
            "container.seccomp.security.alpha.kubernetes.io/d",
            "docker/default",
        ),
        (
            "container.seccomp.security.alpha.kubernetes.io/e",
            "unconfined",
        ),
    ]);
    assert_eq!(annotation_problems(&ok, &spec), []);
    let bad = annotated(&[
        ("seccomp.security.alpha.kubernetes.io/pod", "foo"),
        (
            "container.seccomp.security.alpha.kubernetes.io/c",
            "localhost/../x",
        ),
    ]);
    assert_eq!(
        annotation_problems(&bad, &spec),
        pairs(&[
            (
                "metadata.annotations.seccomp.security.alpha.kubernetes.io/pod",
                "Invalid value: \"foo\": must be a valid seccomp profile"
            ),
            (
                "metadata.annotations.container.seccomp.security.alpha.kubernetes.io/c",
                "Invalid value: \"../x\": must not contain '..'"
            ),
        ])
    );
}

#[test]
fn app_armor_annotations() {
    let spec = spec_with(|s| s.init_containers = vec![container("i")]);
    let ok = annotated(&[
        (
            "container.apparmor.security.beta.kubernetes.io/c",
            "runtime/default",
        ),
        (
            "container.apparmor.security.beta.kubernetes.io/i",
            "localhost/p",
        ),
    ]);
    assert_eq!(annotation_problems(&ok, &spec), []);
    let bad = annotated(&[(
        "container.apparmor.security.beta.kubernetes.io/x",
        "docker/default",
    )]);
    let at = "metadata.annotations[container.apparmor.security.beta.kubernetes.io/x]";
    assert_eq!(
        annotation_problems(&bad, &spec),
        pairs(&[
            (at, "Invalid value: \"x\": container not found"),
            (
                at,
                "Invalid value: \"docker/default\": invalid AppArmor profile name: \"docker/default\""
            ),
        ])
    );
}

#[test]
fn seccomp_annotation_and_field_match_on_create() {
    let spec = spec_with(|s| {
        s.security_context = Some(PodSecurityContext {
            seccomp_profile: Some(seccomp("RuntimeDefault", None)),
            ..Default::default()
        });
        s.containers.push(container("d"));
        s.containers[0].security_context = Some(SecurityContext {
            seccomp_profile: Some(seccomp("Localhost", Some("a.json"))),
            ..Default::default()
        });
        s.containers[1].security_context = Some(SecurityContext {
            seccomp_profile: Some(seccomp("Localhost", Some("a.json"))),
            ..Default::default()
        });
    });
    let ok = annotated(&[
        ("seccomp.security.alpha.kubernetes.io/pod", "docker/default"),
        (
            "container.seccomp.security.alpha.kubernetes.io/c",
            "localhost/a.json",
        ),
    ]);
    assert_eq!(create_problems(&ok, &spec), []);
    let bad = annotated(&[
        ("seccomp.security.alpha.kubernetes.io/pod", "unconfined"),
        (
            "container.seccomp.security.alpha.kubernetes.io/c",
            "localhost/b.json",
        ),
        (
            "container.seccomp.security.alpha.kubernetes.io/d",
            "runtime/default",
        ),
    ]);
    assert_eq!(
        create_problems(&bad, &spec),
        pairs(&[
            (
                "spec.securityContext.seccompProfile.type",
                "Forbidden: seccomp type in annotation and field must match"
            ),
            (
                "spec.containers[0].securityContext.seccompProfile.localhostProfile",
                "Forbidden: seccomp profile in annotation and field must match"
            ),
            (
                "spec.containers[1].securityContext.seccompProfile.type",
                "Forbidden: seccomp type in annotation and field must match"
            ),
        ])
    );
}

#[test]
fn app_armor_annotation_and_field_match_on_create() {
    // The container inherits the pod's profile.
    let mut spec = spec_with(|s| {
        s.security_context = Some(PodSecurityContext {
            app_armor_profile: Some(apparmor("Localhost", Some("p"))),
            ..Default::default()
        });
    });
    let ok = annotated(&[(
        "container.apparmor.security.beta.kubernetes.io/c",
        "localhost/p",
    )]);
    assert_eq!(create_problems(&ok, &spec), []);
    let at = "spec.containers[0].securityContext.appArmorProfile";
    for (value, want) in [
        (
            "localhost/q",
            one(
                &format!("{at}.localhostProfile"),
                "Forbidden: apparmor profile in annotation and field must match",
            ),
        ),
        (
            "runtime/default",
            one(
                &format!("{at}.type"),
                "Forbidden: apparmor type in annotation and field must match",
            ),
        ),
    ] {
        let a = annotated(&[("container.apparmor.security.beta.kubernetes.io/c", value)]);
        assert_eq!(create_problems(&a, &spec), want, "{value}");
    }
    // Not checked for a Windows pod.
    spec.os = Some(PodOs {
        name: "windows".into(),
    });
    let a = annotated(&[(
        "container.apparmor.security.beta.kubernetes.io/c",
        "unconfined",
    )]);
    assert_eq!(create_problems(&a, &spec), []);
}

#[test]
fn app_armor_annotations_never_change() {
    let key = "container.apparmor.security.beta.kubernetes.io/c";
    let old = annotated(&[(key, "runtime/default"), ("other", "1")]);
    let check = |new: &BTreeMap<String, String>, old: &BTreeMap<String, String>| {
        let mut v = Violations::new();
        annotations_update(new, old, &mut v);
        v.iter().cloned().collect::<Vec<_>>()
    };
    assert_eq!(check(&annotated(&[(key, "runtime/default")]), &old), []);
    let at = format!("metadata.annotations[{key}]");
    assert_eq!(
        check(&annotated(&[(key, "unconfined")]), &old),
        one(
            &at,
            "Forbidden: may not remove or update AppArmor annotations"
        )
    );
    assert_eq!(
        check(&annotated(&[]), &old),
        one(
            &at,
            "Forbidden: may not remove or update AppArmor annotations"
        )
    );
    assert_eq!(
        check(&old, &annotated(&[])),
        one(&at, "Forbidden: may not add AppArmor annotations")
    );
}
