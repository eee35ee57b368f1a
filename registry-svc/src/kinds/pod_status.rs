//! Validation of a pod's status subresource (upstream's `ValidatePodStatusUpdate` and the
//! status strategy's phase rules), for the fields our Pod carries: the phase and its terminal
//! states, the immutable QoS class, condition types, the nominated node, container states that
//! may not leave `terminated` when the pod does not restart them, and the pod's and host's IPs.

use std::net::IpAddr;

use kubestore_proto::core::v1::{ContainerStatus, Pod, PodSpec};

use crate::{
    validation::{dns1123_subdomain, qualified_name},
    violations::Violations,
};

/// Whether a phase is final (upstream's `isPodPhaseTerminal`).
pub fn terminal(phase: &str) -> bool {
    phase == "Succeeded" || phase == "Failed"
}

/// Phases a pod may report.
const PHASES: &[&str] = &["Pending", "Running", "Succeeded", "Failed", "Unknown"];

/// Condition types the system owns (upstream's `validatePodConditions`: not checked as names).
const SYSTEM_CONDITIONS: &[&str] = &["PodScheduled", "Ready", "Initialized"];

/// The rules of a status update of `old` into `new` (whose spec is `old`'s).
pub fn validate_status_update(new: &Pod, old: &Pod) -> Violations {
    let mut v = Violations::new();
    let status = new.status.clone().unwrap_or_default();
    let old_status = old.status.clone().unwrap_or_default();
    let spec = old.spec.clone().unwrap_or_default();
    let (new_phase, old_phase) = (status.phase.as_str(), old_status.phase.as_str());
    if !PHASES.contains(&new_phase) {
        v.push((
            "status.phase".into(),
            format!(
                "Unsupported value: {new_phase:?}: supported values: \"Pending\", \"Running\", \"Succeeded\", \"Failed\", \"Unknown\""
            ),
        ));
    }
    if terminal(old_phase) && new_phase != old_phase {
        v.push((
            "status.phase".into(),
            format!(
                "Forbidden: pod phase cannot transition from terminal phase {old_phase} to {new_phase}"
            ),
        ));
    }
    // validatePodConditions (with upstream's capital `Type` in the path).
    for (i, c) in status.conditions.iter().enumerate() {
        if SYSTEM_CONDITIONS.contains(&c.r#type.as_str()) {
            continue;
        }
        if let Some(e) = qualified_name(&c.r#type) {
            v.push((
                format!("status.conditions[{i}].Type"),
                format!("Invalid value: {:?}: {e}", c.r#type),
            ));
        }
    }
    let nominated = &status.nominated_node_name;
    if !nominated.is_empty()
        && *nominated != old_status.nominated_node_name
        && let Some(e) = dns1123_subdomain(nominated)
    {
        v.push((
            "status.nominatedNodeName".into(),
            format!("Invalid value: {nominated:?}: {e}"),
        ));
    }
    if status.qos_class != old_status.qos_class {
        v.push((
            "status.qosClass".into(),
            "Invalid value: field is immutable".into(),
        ));
    }
    state_transitions(
        &status.container_statuses,
        &old_status.container_statuses,
        "status.containerStatuses",
        &spec,
        &mut v,
    );
    state_transitions(
        &status.init_container_statuses,
        &old_status.init_container_statuses,
        "status.initContainerStatuses",
        &spec,
        &mut v,
    );
    let pod_ips: Vec<&str> = status.pod_ips.iter().map(|p| p.ip.as_str()).collect();
    let old_pod_ips: Vec<&str> = old_status.pod_ips.iter().map(|p| p.ip.as_str()).collect();
    ips(
        &pod_ips,
        &old_pod_ips,
        "status.podIPs",
        "core.PodIP",
        &mut v,
    );
    if let Some(first) = status.host_ips.first()
        && first.ip != status.host_ip
    {
        v.push((
            "status.hostIPs[0].ip".into(),
            format!("Invalid value: {:?}: must be equal to `hostIP`", first.ip),
        ));
    }
    let host_ips: Vec<&str> = status.host_ips.iter().map(|p| p.ip.as_str()).collect();
    let old_host_ips: Vec<&str> = old_status.host_ips.iter().map(|p| p.ip.as_str()).collect();
    ips(
        &host_ips,
        &old_host_ips,
        "status.hostIPs",
        "core.HostIP",
        &mut v,
    );
    v
}

/// Upstream's `ValidateContainerStateTransition` / `ValidateInitContainerStateTransition`: a
/// pod that does not always restart may not bring a terminated container back (one that failed
/// under `OnFailure` excepted).
fn state_transitions(
    new: &[ContainerStatus],
    old: &[ContainerStatus],
    list: &str,
    spec: &PodSpec,
    v: &mut Violations,
) {
    if spec.restart_policy == "Always" {
        return;
    }
    for (i, o) in old.iter().enumerate() {
        let Some(done) = o.state.as_ref().and_then(|s| s.terminated.as_ref()) else {
            continue;
        };
        if done.exit_code != 0 && spec.restart_policy == "OnFailure" {
            continue;
        }
        for n in new.iter().filter(|n| n.name == o.name) {
            if n.state
                .as_ref()
                .and_then(|s| s.terminated.as_ref())
                .is_none()
            {
                v.push((
                    format!("{list}[{i}].state"),
                    "Forbidden: may not be transitioned to non-terminated state".into(),
                ));
            }
        }
    }
}

/// Upstream's `validatePodIPs` / `validateHostIPs`: each a valid IP (or one the stored pod
/// already had), and at most one of each family.
fn ips(new: &[&str], old: &[&str], path: &str, go_type: &str, v: &mut Violations) {
    let mut parsed = Vec::new();
    for (i, ip) in new.iter().enumerate() {
        match ip.parse::<IpAddr>() {
            Ok(a) => parsed.push(a),
            Err(_) if old.contains(ip) => {}
            Err(_) => v.push((
                format!("{path}[{i}]"),
                format!(
                    "Invalid value: {ip:?}: must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
                ),
            )),
        }
    }
    if new.len() > 1 {
        let dual =
            new.len() == 2 && parsed.len() == 2 && parsed[0].is_ipv4() != parsed[1].is_ipv4();
        if !dual {
            // Go's `%#v` of the list, as upstream prints the bad value.
            let items: Vec<String> = new
                .iter()
                .map(|ip| format!("{go_type}{{IP:{ip:?}}}"))
                .collect();
            v.push((
                path.into(),
                format!(
                    "Invalid value: []{go_type}{{{}}}: may specify no more than one IP for each IP family",
                    items.join(", ")
                ),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubestore_proto::core::v1::{
        ContainerState, ContainerStateRunning, ContainerStateTerminated, HostIp, PodCondition,
        PodIp, PodStatus,
    };

    fn pod(restart_policy: &str, status: PodStatus) -> Pod {
        Pod {
            spec: Some(PodSpec {
                restart_policy: restart_policy.into(),
                ..Default::default()
            }),
            status: Some(PodStatus {
                phase: "Running".into(),
                qos_class: "BestEffort".into(),
                ..status
            }),
            ..Default::default()
        }
    }

    fn problems(new: &Pod, old: &Pod) -> Vec<(String, String)> {
        validate_status_update(new, old).iter().cloned().collect()
    }

    fn state(terminated_with: Option<i32>) -> ContainerStatus {
        ContainerStatus {
            name: "c".into(),
            state: Some(match terminated_with {
                Some(exit_code) => ContainerState {
                    terminated: Some(ContainerStateTerminated {
                        exit_code,
                        ..Default::default()
                    }),
                    ..Default::default()
                },
                None => ContainerState {
                    running: Some(ContainerStateRunning::default()),
                    ..Default::default()
                },
            }),
            ..Default::default()
        }
    }

    /// `TestValidateContainerStateTransition`'s cases.
    #[test]
    fn a_terminated_container_stays_terminated_unless_the_pod_restarts_it() {
        let statuses = |s: ContainerStatus| PodStatus {
            container_statuses: vec![s],
            ..Default::default()
        };
        let forbidden = vec![(
            "status.containerStatuses[0].state".to_string(),
            "Forbidden: may not be transitioned to non-terminated state".to_string(),
        )];
        for (policy, exit, want) in [
            ("Always", 0, vec![]),
            ("Always", 1, vec![]),
            ("OnFailure", 1, vec![]),
            ("OnFailure", 0, forbidden.clone()),
            ("Never", 1, forbidden.clone()),
            ("Never", 0, forbidden.clone()),
        ] {
            let old = pod(policy, statuses(state(Some(exit))));
            let new = pod(policy, statuses(state(None)));
            assert_eq!(problems(&new, &old), want, "{policy} exit {exit}");
            // Staying terminated is always fine.
            assert_eq!(problems(&old, &old), [], "{policy}");
        }
        // Init containers alike.
        let init = |s: ContainerStatus| PodStatus {
            init_container_statuses: vec![s],
            ..Default::default()
        };
        let old = pod("Never", init(state(Some(0))));
        let new = pod("Never", init(state(None)));
        assert_eq!(
            problems(&new, &old),
            [(
                "status.initContainerStatuses[0].state".to_string(),
                "Forbidden: may not be transitioned to non-terminated state".to_string()
            )]
        );
    }

    #[test]
    fn condition_types_nominated_node_and_addresses() {
        let old = pod("Always", PodStatus::default());
        let new = pod(
            "Always",
            PodStatus {
                conditions: ["Ready", "example.com/gate", "bad/type/x"]
                    .map(|t| PodCondition {
                        r#type: t.into(),
                        status: "True".into(),
                        ..Default::default()
                    })
                    .to_vec(),
                nominated_node_name: "Node_1".into(),
                host_ip: "10.0.0.1".into(),
                host_ips: vec![
                    HostIp {
                        ip: "10.0.0.2".into(),
                    },
                    HostIp {
                        ip: "10.0.0.3".into(),
                    },
                ],
                pod_ip: "nope".into(),
                pod_ips: vec![PodIp { ip: "nope".into() }],
                ..Default::default()
            },
        );
        let got = problems(&new, &old);
        let fields: Vec<&str> = got.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(
            fields,
            [
                "status.conditions[2].Type",
                "status.nominatedNodeName",
                "status.podIPs[0]",
                "status.hostIPs[0].ip",
                "status.hostIPs",
            ],
            "{got:?}"
        );
        assert_eq!(
            got[2].1,
            "Invalid value: \"nope\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
        );
        assert_eq!(
            got[4].1,
            "Invalid value: []core.HostIP{core.HostIP{IP:\"10.0.0.2\"}, core.HostIP{IP:\"10.0.0.3\"}}: may specify no more than one IP for each IP family"
        );
        // What a kubelet writes: one address of each family, hostIPs[0] = hostIP.
        let good = pod(
            "Always",
            PodStatus {
                host_ip: "10.0.0.1".into(),
                host_ips: vec![HostIp {
                    ip: "10.0.0.1".into(),
                }],
                pod_ip: "10.244.0.5".into(),
                pod_ips: vec![
                    PodIp {
                        ip: "10.244.0.5".into(),
                    },
                    PodIp {
                        ip: "fd00::5".into(),
                    },
                ],
                ..Default::default()
            },
        );
        assert_eq!(problems(&good, &old), []);
        // An invalid address the stored pod already has may stay.
        assert!(
            !problems(&new, &new)
                .iter()
                .any(|(f, _)| f == "status.podIPs[0]")
        );
    }
}
