//! Graceful deletion (`store::graceful`) with the real strategies of Pods (graceful) and
//! ConfigMaps (not): kept beside the kinds so that the Store's module needs none of them.

use kubestore_proto::{
    Timestamp,
    core::v1::{ConfigMap, Pod, PodSpec},
    meta::v1::{DeleteOptions, ObjectMeta, Preconditions},
};

use crate::{
    error::ApiError,
    kinds::{configmap::ConfigMapStrategy, pod::PodStrategy},
    store::graceful::*,
};

const T0: i64 = 1_000_000;
fn at(s: i64) -> Timestamp {
    Timestamp {
        seconds: s,
        nanos: 0,
    }
}
fn scheduled_pod() -> Pod {
    Pod {
        metadata: Some(ObjectMeta {
            name: "p".into(),
            uid: "u".into(),
            generation: 1,
            ..Default::default()
        }),
        spec: Some(PodSpec {
            node_name: "node-1".into(),
            ..Default::default()
        }),
        status: None,
    }
}
fn grace(g: Option<i64>) -> DeleteOptions {
    DeleteOptions {
        grace_period_seconds: g,
        ..Default::default()
    }
}

#[test]
fn first_delete_stamps_deletion_and_bumps_generation() {
    let mut pod = scheduled_pod();
    let mut o = grace(None);
    let d = before_delete(&PodStrategy, "pods", &mut pod, &mut o, at(T0)).expect("ok");
    assert_eq!(
        d,
        Decision {
            graceful: true,
            pending: false
        }
    );
    let m = pod.metadata.expect("meta");
    assert_eq!(m.deletion_timestamp, Some(at(T0 + 30)));
    assert_eq!(m.deletion_grace_period_seconds, Some(30));
    assert_eq!(m.generation, 2);
    assert_eq!(o.grace_period_seconds, Some(30));
}

#[test]
fn later_deletes_only_shorten_as_in_the_worked_example() {
    let mut pod = scheduled_pod();
    before_delete(&PodStrategy, "pods", &mut pod, &mut grace(Some(30)), at(T0)).expect("ok");
    // Equal or longer: pending, nothing changes.
    for g in [Some(30), Some(60), None] {
        let before = pod.clone();
        let d =
            before_delete(&PodStrategy, "pods", &mut pod, &mut grace(g), at(T0 + 1)).expect("ok");
        assert_eq!(
            d,
            Decision {
                graceful: false,
                pending: true
            },
            "{g:?}"
        );
        assert_eq!(pod, before);
    }
    // At T0+2 ask for 5: DT = T0+5, grace 5, generation unchanged.
    let d = before_delete(
        &PodStrategy,
        "pods",
        &mut pod,
        &mut grace(Some(5)),
        at(T0 + 2),
    )
    .expect("ok");
    assert_eq!(
        d,
        Decision {
            graceful: true,
            pending: false
        }
    );
    let m = pod.metadata.clone().expect("meta");
    assert_eq!(
        (
            m.deletion_timestamp,
            m.deletion_grace_period_seconds,
            m.generation
        ),
        (Some(at(T0 + 5)), Some(5), 2)
    );
    // At T0+10 ask for 4: computed T0+4 is past: DT = now, grace clamped to 1.
    before_delete(
        &PodStrategy,
        "pods",
        &mut pod,
        &mut grace(Some(4)),
        at(T0 + 10),
    )
    .expect("ok");
    let m = pod.metadata.clone().expect("meta");
    assert_eq!(
        (m.deletion_timestamp, m.deletion_grace_period_seconds),
        (Some(at(T0 + 10)), Some(1))
    );
    // Grace 0: DT = now, grace 0.
    let mut o = grace(Some(0));
    before_delete(&PodStrategy, "pods", &mut pod, &mut o, at(T0 + 11)).expect("ok");
    let m = pod.metadata.clone().expect("meta");
    assert_eq!(
        (m.deletion_timestamp, m.deletion_grace_period_seconds),
        (Some(at(T0 + 11)), Some(0))
    );
    // Existing grace 0 means delete now.
    let d = before_delete(
        &PodStrategy,
        "pods",
        &mut pod,
        &mut grace(None),
        at(T0 + 12),
    )
    .expect("ok");
    assert_eq!(
        d,
        Decision {
            graceful: false,
            pending: false
        }
    );
}

#[test]
fn deletion_timestamps_never_overflow() {
    // A stored pod whose own default grace is absurd (written before the bound existed).
    let mut pod = scheduled_pod();
    if let Some(s) = pod.spec.as_mut() {
        s.termination_grace_period_seconds = Some(i64::MAX);
    }
    let mut o = grace(None);
    before_delete(&PodStrategy, "pods", &mut pod, &mut o, at(T0)).expect("ok");
    let m = pod.metadata.clone().expect("meta");
    assert_eq!(
        m.deletion_timestamp,
        Some(at(T0 + MAX_GRACE_PERIOD_SECONDS))
    );
    assert!(m.deletion_timestamp.expect("set").seconds < 253_402_300_799);
    // Shortening a deletion that started with a huge grace.
    before_delete(
        &PodStrategy,
        "pods",
        &mut pod,
        &mut grace(Some(5)),
        at(T0 + 1),
    )
    .expect("ok");
    let m = pod.metadata.expect("meta");
    assert_eq!(m.deletion_timestamp, Some(at(T0 + 5)));
}

#[test]
fn preconditions_are_checked_first() {
    let mut pod = scheduled_pod();
    let mut o = DeleteOptions {
        preconditions: Some(Preconditions {
            uid: Some("other".into()),
            resource_version: None,
        }),
        ..Default::default()
    };
    let e = before_delete(&PodStrategy, "pods", &mut pod, &mut o, at(T0)).expect_err("uid differs");
    assert!(matches!(e, ApiError::Conflict { .. }), "{e}");
    assert!(pod.metadata.expect("meta").deletion_timestamp.is_none());
}

#[test]
fn kinds_without_graceful_delete_are_never_graceful() {
    let mut cm = ConfigMap {
        metadata: Some(ObjectMeta {
            name: "c".into(),
            deletion_timestamp: Some(at(T0)),
            deletion_grace_period_seconds: Some(30),
            ..Default::default()
        }),
        ..Default::default()
    };
    let d = before_delete(
        &ConfigMapStrategy,
        "configmaps",
        &mut cm,
        &mut grace(Some(5)),
        at(T0),
    )
    .expect("ok");
    assert_eq!(
        d,
        Decision {
            graceful: false,
            pending: false
        }
    );
}

#[test]
fn negative_grace_and_unknown_policies_are_invalid() {
    assert!(validate_options("Pod", "p", &grace(Some(-1))).is_err());
    assert!(validate_options("Pod", "p", &grace(Some(i64::MAX - 5))).is_err());
    assert!(validate_options("Pod", "p", &grace(Some(MAX_GRACE_PERIOD_SECONDS))).is_ok());
    assert!(
        validate_options(
            "Pod",
            "p",
            &DeleteOptions {
                propagation_policy: 9,
                ..Default::default()
            }
        )
        .is_err()
    );
    assert!(validate_options("Pod", "p", &grace(Some(0))).is_ok());
}
