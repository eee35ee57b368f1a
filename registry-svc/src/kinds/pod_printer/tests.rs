//! printPod's rows for the states a pod goes through: Pending, Running with ready and
//! unready containers, waiting and terminated reasons, init containers, restarts, Terminating
//! and Unknown, finished pods' row conditions, and the wide cells.

use super::*;
use kubestore_proto::{
    Timestamp,
    core::v1::{
        Container, ContainerState, ContainerStateRunning, ContainerStateTerminated,
        ContainerStateWaiting, PodCondition, PodIp, PodReadinessGate, PodSpec, PodStatus,
    },
    meta::v1::ObjectMeta,
};

const NOW: i64 = 1_000_000;

fn at(seconds: i64) -> Option<Timestamp> {
    Some(Timestamp { seconds, nanos: 0 })
}

/// A pod of `containers` app containers and `init` init containers, created 10 minutes ago
/// on node-1, with `status`.
fn pod(containers: usize, init: usize, status: PodStatus) -> Pod {
    let named = |prefix: &str, n: usize| -> Vec<Container> {
        (0..n)
            .map(|i| Container {
                name: format!("{prefix}{i}"),
                image: "nginx".into(),
                ..Default::default()
            })
            .collect()
    };
    Pod {
        metadata: Some(ObjectMeta {
            name: "web".into(),
            creation_timestamp: at(NOW - 600),
            ..Default::default()
        }),
        spec: Some(PodSpec {
            containers: named("c", containers),
            init_containers: named("i", init),
            node_name: "node-1".into(),
            ..Default::default()
        }),
        status: Some(status),
    }
}

fn running(ready: bool) -> ContainerStatus {
    ContainerStatus {
        name: "c0".into(),
        ready,
        started: Some(true),
        state: Some(ContainerState {
            running: Some(ContainerStateRunning {
                started_at: at(NOW - 500),
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn waiting(reason: &str) -> ContainerStatus {
    ContainerStatus {
        state: Some(ContainerState {
            waiting: Some(ContainerStateWaiting {
                reason: reason.into(),
                message: String::new(),
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn terminated(exit_code: i32, signal: i32, reason: &str) -> ContainerStatus {
    ContainerStatus {
        state: Some(ContainerState {
            terminated: Some(ContainerStateTerminated {
                exit_code,
                signal,
                reason: reason.into(),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn condition(ty: &str, status: &str) -> PodCondition {
    PodCondition {
        r#type: ty.into(),
        status: status.into(),
        ..Default::default()
    }
}

fn phase(p: &str) -> PodStatus {
    PodStatus {
        phase: p.into(),
        ..Default::default()
    }
}

/// The first four cells: NAME READY STATUS RESTARTS.
fn row(p: &Pod) -> [String; 4] {
    let cells = pod_cells(p, NOW);
    std::array::from_fn(|i| cells[i].as_str().unwrap_or_default().to_string())
}

fn want(ready: &str, status: &str, restarts: &str) -> [String; 4] {
    ["web", ready, status, restarts].map(String::from)
}

#[test]
fn a_pending_pod() {
    let p = pod(1, 0, phase("Pending"));
    assert_eq!(
        pod_cells(&p, NOW),
        [
            "web", "0/1", "Pending", "0", "10m", "<none>", "node-1", "<none>", "<none>"
        ]
    );
    assert_eq!(pod_row_conditions(&p), None);
}

#[test]
fn a_running_pod_counts_its_ready_running_containers() {
    let status = PodStatus {
        container_statuses: vec![running(true), running(false)],
        pod_ip: "10.244.1.5".into(),
        pod_ips: vec![PodIp {
            ip: "10.244.1.5".into(),
        }],
        conditions: vec![condition("Ready", "False")],
        ..phase("Running")
    };
    let p = pod(2, 0, status);
    assert_eq!(row(&p), want("1/2", "Running", "0"));
    assert_eq!(pod_cells(&p, NOW)[5], "10.244.1.5");
    let one = pod(
        1,
        0,
        PodStatus {
            container_statuses: vec![running(true)],
            ..phase("Running")
        },
    );
    assert_eq!(row(&one), want("1/1", "Running", "0"));
}

#[test]
fn a_deleted_pod_is_terminating_or_unknown_on_a_lost_node() {
    let mut p = pod(
        1,
        0,
        PodStatus {
            container_statuses: vec![running(true)],
            ..phase("Running")
        },
    );
    if let Some(m) = p.metadata.as_mut() {
        m.deletion_timestamp = at(NOW - 5);
    }
    assert_eq!(row(&p), want("1/1", "Terminating", "0"));
    if let Some(s) = p.status.as_mut() {
        s.reason = "NodeLost".into();
    }
    assert_eq!(row(&p), want("1/1", "Unknown", "0"));
    // A finished pod being deleted keeps its phase, and its row the Completed condition.
    let mut done = pod(
        1,
        0,
        PodStatus {
            container_statuses: vec![terminated(0, 0, "Completed")],
            ..phase("Succeeded")
        },
    );
    if let Some(m) = done.metadata.as_mut() {
        m.deletion_timestamp = at(NOW - 5);
    }
    assert_eq!(row(&done), want("0/1", "Completed", "0"));
    assert_eq!(
        pod_row_conditions(&done),
        Some(
            json!([{"type": "Completed", "status": "True", "reason": "Succeeded",
            "message": "The pod has completed successfully."}])
        )
    );
    assert_eq!(
        pod_row_conditions(&pod(1, 0, phase("Failed"))),
        Some(
            json!([{"type": "Completed", "status": "True", "reason": "Failed",
            "message": "The pod failed."}])
        )
    );
}

#[test]
fn a_waiting_or_terminated_container_gives_its_reason() {
    for (status, reason) in [
        (waiting("ImagePullBackOff"), "ImagePullBackOff"),
        (waiting("ContainerCreating"), "ContainerCreating"),
        (terminated(1, 0, "Error"), "Error"),
        (terminated(2, 0, ""), "ExitCode:2"),
        (terminated(0, 15, ""), "Signal:15"),
        // A waiting state without a reason says nothing.
        (waiting(""), "Running"),
    ] {
        let p = pod(
            1,
            0,
            PodStatus {
                container_statuses: vec![status],
                ..phase("Running")
            },
        );
        assert_eq!(row(&p), want("0/1", reason, "0"), "{reason}");
    }
    // The first container's reason wins.
    let p = pod(
        2,
        0,
        PodStatus {
            container_statuses: vec![waiting("CrashLoopBackOff"), waiting("ErrImagePull")],
            ..phase("Running")
        },
    );
    assert_eq!(row(&p), want("0/2", "CrashLoopBackOff", "0"));
    // Completed next to a running container: Running if the pod is Ready, else NotReady.
    for (ready, reason) in [("True", "Running"), ("False", "NotReady")] {
        let p = pod(
            2,
            0,
            PodStatus {
                container_statuses: vec![terminated(0, 0, "Completed"), running(true)],
                conditions: vec![condition("Ready", ready)],
                ..phase("Running")
            },
        );
        assert_eq!(row(&p), want("1/2", reason, "0"));
    }
}

#[test]
fn init_containers_decide_while_the_pod_initializes() {
    let init = |statuses: Vec<ContainerStatus>| {
        pod(
            1,
            2,
            PodStatus {
                init_container_statuses: statuses,
                container_statuses: vec![waiting("PodInitializing")],
                ..phase("Pending")
            },
        )
    };
    for (statuses, reason) in [
        (vec![waiting("PodInitializing")], "Init:0/2"),
        (
            vec![terminated(0, 0, "Completed"), running(false)],
            "Init:1/2",
        ),
        (vec![waiting("ImagePullBackOff")], "Init:ImagePullBackOff"),
        (vec![terminated(1, 0, "Error")], "Init:Error"),
        // Exit code 0 is done, whatever the signal: the app containers decide.
        (vec![terminated(0, 9, "")], "PodInitializing"),
        (vec![terminated(3, 9, "")], "Init:Signal:9"),
        (vec![terminated(3, 0, "")], "Init:ExitCode:3"),
    ] {
        assert_eq!(row(&init(statuses)), want("0/1", reason, "0"), "{reason}");
    }
    // Done: the app containers decide.
    let p = init(vec![
        terminated(0, 0, "Completed"),
        terminated(0, 0, "Completed"),
    ]);
    assert_eq!(row(&p), want("0/1", "PodInitializing", "0"));
    // Initialized=True lets the app containers speak over an init container still
    // reporting (a running one leaves the init reason, as upstream does).
    let mut p = init(vec![waiting("PodInitializing")]);
    if let Some(s) = p.status.as_mut() {
        s.conditions = vec![condition("Initialized", "True")];
        s.container_statuses = vec![running(true)];
    }
    assert_eq!(row(&p), want("1/1", "Init:0/2", "0"));
    if let Some(s) = p.status.as_mut() {
        s.container_statuses = vec![waiting("CrashLoopBackOff")];
    }
    assert_eq!(row(&p), want("0/1", "CrashLoopBackOff", "0"));
}

#[test]
fn restarts_say_how_long_ago_the_last_one_was() {
    let restarted = |count: i32, finished: Option<i64>| ContainerStatus {
        restart_count: count,
        last_state: finished.map(|f| ContainerState {
            terminated: Some(ContainerStateTerminated {
                exit_code: 1,
                reason: "Error".into(),
                finished_at: at(f),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..running(true)
    };
    let p = pod(
        2,
        0,
        PodStatus {
            container_statuses: vec![
                restarted(2, Some(NOW - 3600)),
                restarted(1, Some(NOW - 312)),
            ],
            ..phase("Running")
        },
    );
    assert_eq!(row(&p), want("2/2", "Running", "3 (5m12s ago)"));
    let p = pod(
        1,
        0,
        PodStatus {
            container_statuses: vec![restarted(4, None)],
            ..phase("Running")
        },
    );
    assert_eq!(row(&p), want("1/1", "Running", "4"));
    // While initializing, init containers' restarts count.
    let p = pod(
        1,
        1,
        PodStatus {
            init_container_statuses: vec![ContainerStatus {
                restart_count: 2,
                ..waiting("CrashLoopBackOff")
            }],
            ..phase("Pending")
        },
    );
    assert_eq!(row(&p), want("0/1", "Init:CrashLoopBackOff", "2"));
}

#[test]
fn wide_cells_ip_nominated_node_and_readiness_gates() {
    let mut p = pod(
        1,
        0,
        PodStatus {
            pod_ip: "10.244.0.9".into(),
            pod_ips: vec![
                PodIp {
                    ip: "10.244.0.9".into(),
                },
                PodIp {
                    ip: "fd00::9".into(),
                },
            ],
            nominated_node_name: "node-2".into(),
            conditions: vec![
                condition("example.com/a", "True"),
                condition("example.com/b", "False"),
                condition("example.com/b", "True"),
                condition("PodScheduled", "True"),
            ],
            ..phase("Running")
        },
    );
    if let Some(s) = p.spec.as_mut() {
        s.readiness_gates = ["example.com/a", "example.com/b", "example.com/c"]
            .map(|t| PodReadinessGate {
                condition_type: t.into(),
            })
            .to_vec();
    }
    assert_eq!(
        pod_cells(&p, NOW)[5..],
        ["10.244.0.9", "node-1", "node-2", "1/3"]
    );
    // A scheduling gate shows.
    if let Some(s) = p.status.as_mut() {
        s.phase = "Pending".into();
        s.conditions = vec![PodCondition {
            reason: "SchedulingGated".into(),
            ..condition("PodScheduled", "False")
        }];
    }
    assert_eq!(row(&p)[2], "SchedulingGated");
}

/// Upstream's `TestPrintPodWithRestartableInitContainer`: a sidecar counts among the
/// containers, ready once started, and its restarts count once the pod is initialized.
#[test]
fn sidecars_count_among_the_containers() {
    let mut status = phase("Running");
    status.conditions = vec![condition("Initialized", "True")];
    let mut sidecar = running(true);
    sidecar.name = "i0".into();
    sidecar.restart_count = 3;
    let mut app = running(true);
    app.restart_count = 1;
    status.init_container_statuses = vec![sidecar.clone()];
    status.container_statuses = vec![app];
    let mut p = pod(1, 1, status.clone());
    if let Some(spec) = p.spec.as_mut() {
        spec.init_containers[0].restart_policy = Some("Always".into());
    }
    assert_eq!(row(&p), want("2/2", "Running", "4"));
    // Not started yet: the pod is still initializing, and the sidecar is not ready.
    let mut starting = sidecar;
    starting.started = Some(false);
    starting.ready = false;
    starting.state = Some(ContainerState::default());
    status.init_container_statuses = vec![starting];
    status.conditions.clear();
    status.container_statuses.clear();
    p.status = Some(status);
    assert_eq!(row(&p), want("0/2", "Init:0/1", "3"));
    // The same init container without restartPolicy is an ordinary one: 1 container.
    if let Some(spec) = p.spec.as_mut() {
        spec.init_containers[0].restart_policy = None;
    }
    assert_eq!(row(&p), want("0/1", "Init:0/1", "3"));
}
