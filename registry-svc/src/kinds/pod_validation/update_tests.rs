//! `TestValidatePodUpdate`'s cases for the fields our Pod carries: images of app and init
//! containers and `activeDeadlineSeconds` (set, or lowered) may change; nothing else may.

use kubestore_proto::core::v1::{EnvVar, PodSpec};

use super::{
    UPDATABLE,
    tests::{container, one, port, spec_with},
    validate_spec_update,
};
use crate::violations::Violations;

fn update_problems(new: &PodSpec, old: &PodSpec) -> Vec<(String, String)> {
    let mut v = Violations::new();
    validate_spec_update(new, old, &mut v);
    v.iter().cloned().collect()
}

/// The Forbidden of any other change, as kept (upstream's long list is cut at the bound of a
/// violation's description).
fn forbidden() -> Vec<(String, String)> {
    let mut v = Violations::new();
    v.push((
        "spec".to_string(),
        format!("Forbidden: pod updates may not change fields other than {UPDATABLE}"),
    ));
    v.iter().cloned().collect()
}

/// `TestValidatePodUpdate`'s cases of the fields we model.
#[test]
fn updates_change_images_and_the_active_deadline_only() {
    let old = spec_with(|s| {
        s.init_containers = vec![container("i")];
    });
    // Images of app and init containers may change.
    let mut new = old.clone();
    new.containers[0].image = "nginx:2".into();
    new.init_containers[0].image = "busybox:2".into();
    assert_eq!(update_problems(&new, &old), []);
    // Anything else may not: a port, a command, an init container's env, the DNS policy.
    for edit in [
        (|s: &mut PodSpec| s.containers[0].ports = vec![port("", 80, "TCP")]) as fn(&mut PodSpec),
        |s| s.containers[0].command = vec!["sh".into()],
        |s| {
            s.init_containers[0].env = vec![EnvVar {
                name: "A".into(),
                value: "1".into(),
                value_from: None,
            }]
        },
        |s| s.dns_policy = "Default".into(),
        |s| s.host_network = true,
    ] {
        let mut new = old.clone();
        edit(&mut new);
        assert_eq!(update_problems(&new, &old), forbidden());
    }
    // Containers may not come or go, in either list.
    let mut new = old.clone();
    new.init_containers.push(container("j"));
    assert_eq!(
        update_problems(&new, &old),
        one(
            "spec.initContainers",
            "Forbidden: pod updates may not add or remove containers"
        )
    );
    let mut new = old.clone();
    new.containers.clear();
    assert_eq!(
        update_problems(&new, &old),
        one(
            "spec.containers",
            "Forbidden: pod updates may not add or remove containers"
        )
    );
    let mut new = old.clone();
    new.init_containers[0].image = " busybox".into();
    assert_eq!(
        update_problems(&new, &old),
        one(
            "spec.initContainers[0].image",
            "Invalid value: \" busybox\": must not have leading or trailing whitespace"
        )
    );
}

/// `TestValidatePodUpdate`'s activeDeadlineSeconds cases: set from nil, lowered; never raised
/// nor removed.
#[test]
fn the_active_deadline_may_be_set_or_lowered() {
    let with = |d: Option<i64>| spec_with(|s| s.active_deadline_seconds = d);
    for (old, new, want) in [
        (None, Some(30), vec![]),
        (Some(30), Some(10), vec![]),
        (Some(30), Some(30), vec![]),
        (Some(30), Some(0), vec![]),
        (
            Some(10),
            Some(30),
            one(
                "spec.activeDeadlineSeconds",
                "Invalid value: 30: must be less than or equal to previous value",
            ),
        ),
        (
            Some(30),
            None,
            one(
                "spec.activeDeadlineSeconds",
                "Invalid value: \"null\": must not update from a positive integer to nil value",
            ),
        ),
        (
            None,
            Some(-1),
            one(
                "spec.activeDeadlineSeconds",
                "Invalid value: -1: must be between 0 and 2147483647, inclusive",
            ),
        ),
    ] {
        assert_eq!(
            update_problems(&with(new), &with(old)),
            want,
            "{old:?} -> {new:?}"
        );
    }
}
