//! The Pod's Table, as upstream's pod printer writes it (`pkg/printers/internalversion`:
//! `podColumnDefinitions`, `printPod`): NAME READY STATUS RESTARTS AGE, and for `-o wide` IP
//! NODE NOMINATED NODE READINESS GATES. READY counts the ready, running containers of
//! `status.containerStatuses`; STATUS is the phase, or the reason of the first container (or
//! init container) that is waiting or terminated, or Terminating; RESTARTS adds how long ago
//! the last restart was.

use kubestore_apimachinery::table::{Column, age};
use kubestore_proto::core::v1::{ContainerStatus, Pod};
use serde_json::{Value, json};

use super::printers::{age_col, col, created, meta_name, name_col, secs};

/// Pods: NAME READY STATUS RESTARTS AGE, and wide IP NODE NOMINATED NODE READINESS GATES.
pub fn pod_columns() -> Vec<Column> {
    vec![
        name_col(0),
        col(
            "Ready",
            "string",
            0,
            "The aggregate readiness state of this pod for accepting traffic.",
        ),
        col(
            "Status",
            "string",
            0,
            "The aggregate status of the containers in this pod.",
        ),
        col(
            "Restarts",
            "string",
            0,
            "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
        ),
        age_col(),
        col(
            "IP",
            "string",
            1,
            "podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.",
        ),
        col(
            "Node",
            "string",
            1,
            "NodeName indicates in which node this pod is scheduled. If empty, this pod is a candidate for scheduling by the scheduler defined in schedulerName. Once this field is set, the kubelet for this node becomes responsible for the lifecycle of this pod. This field should not be used to express a desire for the pod to be scheduled on a specific node. https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#nodename",
        ),
        col(
            "Nominated Node",
            "string",
            1,
            "nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot be scheduled right away as preemption victims receive their graceful termination periods. This field does not guarantee that the pod will be scheduled on this node. Scheduler may decide to place the pod elsewhere if other nodes become available sooner. Scheduler may also decide to give the resources on this node to a higher priority pod that is created after preemption. As a result, this field may be different than PodSpec.nodeName when the pod is scheduled.",
        ),
        col(
            "Readiness Gates",
            "string",
            1,
            "If specified, all readiness gates will be evaluated for pod readiness. A pod is ready when all its containers are ready AND all conditions specified in the readiness gates have status equal to \"True\" More info: https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates",
        ),
    ]
}

/// A Pod's cells (upstream's `printPod`): sidecars (init containers with `restartPolicy:
/// Always`) count among the containers, ready once started, and their restarts count.
pub fn pod_cells(pod: &Pod, now: i64) -> Vec<Value> {
    let spec = pod.spec.clone().unwrap_or_default();
    let status = pod.status.clone().unwrap_or_default();
    let sidecars: std::collections::BTreeSet<&str> = spec
        .init_containers
        .iter()
        .filter(|c| c.restart_policy.as_deref() == Some("Always"))
        .map(|c| c.name.as_str())
        .collect();
    let total = spec.containers.len() + sidecars.len();
    let mut ready = 0;
    let mut restarts: i64 = 0;
    let mut sidecar_restarts: i64 = 0;
    let mut sidecar_last_restart: Option<i64> = None;
    // The latest `lastState.terminated.finishedAt` of a container counted.
    let mut last_restart: Option<i64> = None;
    let mut reason = if status.reason.is_empty() {
        status.phase.clone()
    } else {
        status.reason.clone()
    };
    let condition = |ty: &str| status.conditions.iter().find(|c| c.r#type == ty);
    if status
        .conditions
        .iter()
        .any(|c| c.r#type == "PodScheduled" && c.reason == "SchedulingGated")
    {
        reason = "SchedulingGated".into();
    }
    let finished = |c: &ContainerStatus| {
        c.last_state
            .as_ref()
            .and_then(|s| s.terminated.as_ref())
            .and_then(|t| secs(&t.finished_at))
    };
    // The first init container that has not finished decides the status.
    let mut initializing = false;
    for (i, c) in status.init_container_statuses.iter().enumerate() {
        restarts += i64::from(c.restart_count);
        last_restart = last_restart.max(finished(c));
        let sidecar = sidecars.contains(c.name.as_str());
        if sidecar {
            sidecar_restarts += i64::from(c.restart_count);
            sidecar_last_restart = sidecar_last_restart.max(finished(c));
        }
        let state = c.state.clone().unwrap_or_default();
        match (&state.terminated, &state.waiting) {
            (Some(t), _) if t.exit_code == 0 => continue,
            _ if sidecar && c.started == Some(true) => {
                if c.ready {
                    ready += 1;
                }
                continue;
            }
            (Some(t), _) => {
                reason = if !t.reason.is_empty() {
                    format!("Init:{}", t.reason)
                } else if t.signal != 0 {
                    format!("Init:Signal:{}", t.signal)
                } else {
                    format!("Init:ExitCode:{}", t.exit_code)
                };
            }
            (None, Some(w)) if !w.reason.is_empty() && w.reason != "PodInitializing" => {
                reason = format!("Init:{}", w.reason);
            }
            _ => reason = format!("Init:{i}/{}", spec.init_containers.len()),
        }
        initializing = true;
        break;
    }
    let initialized = condition("Initialized").is_some_and(|c| c.status == "True");
    if !initializing || initialized {
        // Only sidecars' restarts count from init containers.
        restarts = sidecar_restarts;
        last_restart = sidecar_last_restart;
        let mut has_running = false;
        // In reverse, so that the first container's state wins.
        for c in status.container_statuses.iter().rev() {
            restarts += i64::from(c.restart_count);
            last_restart = last_restart.max(finished(c));
            let state = c.state.clone().unwrap_or_default();
            if let Some(w) = state.waiting.as_ref().filter(|w| !w.reason.is_empty()) {
                reason = w.reason.clone();
            } else if let Some(t) = &state.terminated {
                reason = if !t.reason.is_empty() {
                    t.reason.clone()
                } else if t.signal != 0 {
                    format!("Signal:{}", t.signal)
                } else {
                    format!("ExitCode:{}", t.exit_code)
                };
            } else if c.ready && state.running.is_some() {
                has_running = true;
                ready += 1;
            }
        }
        if reason == "Completed" && has_running {
            let pod_ready = status
                .conditions
                .iter()
                .any(|c| c.r#type == "Ready" && c.status == "True");
            reason = if pod_ready { "Running" } else { "NotReady" }.into();
        }
    }
    let deleting = pod
        .metadata
        .as_ref()
        .is_some_and(|m| m.deletion_timestamp.is_some());
    if deleting && status.reason == "NodeLost" {
        reason = "Unknown".into();
    } else if deleting && !matches!(status.phase.as_str(), "Succeeded" | "Failed") {
        reason = "Terminating".into();
    }
    let restarts = match last_restart {
        Some(t) if restarts != 0 => format!("{restarts} ({} ago)", age(Some(t), now)),
        _ => restarts.to_string(),
    };
    let or_none = |s: &str| {
        if s.is_empty() {
            "<none>".to_string()
        } else {
            s.to_string()
        }
    };
    // The v1 conversion makes podIPs[0] the podIP; a pod stored before it had podIPs still
    // shows its podIP.
    let ip = status
        .pod_ips
        .first()
        .map_or(status.pod_ip.as_str(), |p| p.ip.as_str());
    let gates = if spec.readiness_gates.is_empty() {
        "<none>".to_string()
    } else {
        // The first condition of each gate's type decides it.
        let met = spec
            .readiness_gates
            .iter()
            .filter(|g| condition(&g.condition_type).is_some_and(|c| c.status == "True"))
            .count();
        format!("{met}/{}", spec.readiness_gates.len())
    };
    vec![
        json!(meta_name(&pod.metadata)),
        json!(format!("{ready}/{total}")),
        json!(reason),
        json!(restarts),
        json!(age(created(&pod.metadata), now)),
        json!(or_none(ip)),
        json!(or_none(&spec.node_name)),
        json!(or_none(&status.nominated_node_name)),
        json!(gates),
    ]
}

/// The row conditions of a pod's Table row (upstream's `podSuccessConditions` and
/// `podFailedConditions`): a finished pod is `Completed`.
pub fn pod_row_conditions(pod: &Pod) -> Option<Value> {
    let phase = pod.status.as_ref().map_or("", |s| s.phase.as_str());
    let (reason, message) = match phase {
        "Succeeded" => ("Succeeded", "The pod has completed successfully."),
        "Failed" => ("Failed", "The pod failed."),
        _ => return None,
    };
    Some(json!([{
        "type": "Completed",
        "status": "True",
        "reason": reason,
        "message": message,
    }]))
}

#[cfg(test)]
mod tests;
