//! The pod status the agent writes, shaped as a kubelet's (`pkg/kubelet/kubelet_pods.go
//! generateAPIPodStatus`), so that `kubectl get pods` (READY, RESTARTS, IP), `kubectl describe
//! pod` (conditions, container states) and clients with strict models read what they expect.
//!
//! Nothing runs, so the addresses and IDs are stable fakes:
//! - the node's address (`hostIP`, `hostIPs`) is `10.0.X.Y`, from a hash of the node's name, so
//!   that every agent of a node says the same and two nodes most likely differ;
//! - the pod's address (`podIP`, `podIPs`) is `10.244.X.Y` (upstream's default pod CIDR), from
//!   a hash of the pod's UID: stable across the agent's restarts, different for a pod recreated
//!   under the same name;
//! - a container's `imageID` is `docker-pullable://<repository>@sha256:<hex>` and its
//!   `containerID` `containerd://<hex>`, the hex from hashes of the image and of the pod's UID
//!   and the container's name.

use kubestore_proto::{
    Timestamp,
    core::v1::{
        Container, ContainerState, ContainerStateRunning, ContainerStateTerminated,
        ContainerStatus, HostIp, Pod, PodCondition, PodIp, PodStatus,
    },
};

/// FNV-1a, 64 bits, of `parts` (with a separator between them).
fn fnv(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            h ^= 0xff;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        for b in p.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// 64 hex digits from `parts`, as a sha256 digest looks (not one: nothing was hashed for real).
fn hex64(parts: &[&str]) -> String {
    (0..4u8)
        .map(|salt| {
            let salt = salt.to_string();
            let mut all = parts.to_vec();
            all.push(&salt);
            format!("{:016x}", fnv(&all))
        })
        .collect()
}

/// `prefix.X.Y` from a hash of `key`, Y in 1..=254 (never a network or broadcast address).
fn address(prefix: &str, key: &str) -> String {
    let h = fnv(&[key]);
    format!("{prefix}.{}.{}", (h >> 8) & 0xff, 1 + (h & 0xffff) % 254)
}

/// The node's address: `10.0.X.Y` from its name.
pub fn host_ip(node: &str) -> String {
    address("10.0", node)
}

/// The pod's address: `10.244.X.Y` from its UID.
pub fn pod_ip(uid: &str) -> String {
    address("10.244", uid)
}

fn at(seconds: i64) -> Option<Timestamp> {
    Some(Timestamp { seconds, nanos: 0 })
}

/// The repository of an image reference: without its tag and digest.
fn repository(image: &str) -> &str {
    let name = image.split('@').next().unwrap_or(image);
    let slash = name.rfind('/').map_or(0, |i| i + 1);
    match name[slash..].rfind(':') {
        Some(i) => &name[..slash + i],
        None => name,
    }
}

fn container_id(uid: &str, c: &Container) -> String {
    format!("containerd://{}", hex64(&[uid, &c.name]))
}

/// A container's status as the runtime reports it, in `state`.
fn container_status(uid: &str, c: &Container, state: ContainerState) -> ContainerStatus {
    ContainerStatus {
        name: c.name.clone(),
        state: Some(state),
        last_state: Some(ContainerState::default()),
        ready: false,
        restart_count: 0,
        image: c.image.clone(),
        image_id: format!(
            "docker-pullable://{}@sha256:{}",
            repository(&c.image),
            hex64(&[&c.image])
        ),
        container_id: container_id(uid, c),
        started: Some(false),
        ..Default::default()
    }
}

fn condition(ty: &str, status: &str, reason: &str, now: i64) -> PodCondition {
    PodCondition {
        r#type: ty.into(),
        status: status.into(),
        last_probe_time: None,
        last_transition_time: at(now),
        reason: reason.into(),
        message: String::new(),
        ..Default::default()
    }
}

/// The status of `pod` running on `node` since `now`: phase Running, the node's and the pod's
/// addresses, init containers Completed (sidecars running), app containers running, ready and
/// started, and the conditions a kubelet sets then (in its order: Initialized, Ready,
/// ContainersReady, and the scheduler's PodScheduled). What else the status held (the QoS class) is kept.
pub fn running(pod: &Pod, node: &str, now: i64) -> PodStatus {
    let uid = pod.metadata.as_ref().map_or("", |m| m.uid.as_str());
    let spec = pod.spec.clone().unwrap_or_default();
    let host = host_ip(node);
    let ip = pod_ip(uid);
    let running_state = || ContainerState {
        running: Some(ContainerStateRunning {
            started_at: at(now),
        }),
        ..Default::default()
    };
    let init = spec
        .init_containers
        .iter()
        .map(|c| ContainerStatus {
            ready: true,
            ..container_status(
                uid,
                c,
                ContainerState {
                    terminated: Some(ContainerStateTerminated {
                        exit_code: 0,
                        reason: "Completed".into(),
                        started_at: at(now),
                        finished_at: at(now),
                        container_id: container_id(uid, c),
                        ..Default::default()
                    }),
                    ..Default::default()
                },
            )
        })
        // A sidecar (restartPolicy Always) keeps running beside the app containers, started
        // and ready, as a kubelet reports it.
        .zip(&spec.init_containers)
        .map(|(status, c)| {
            if c.restart_policy.as_deref() == Some("Always") {
                ContainerStatus {
                    ready: true,
                    started: Some(true),
                    ..container_status(uid, c, running_state())
                }
            } else {
                status
            }
        })
        .collect();
    let app = spec
        .containers
        .iter()
        .map(|c| ContainerStatus {
            ready: true,
            started: Some(true),
            ..container_status(uid, c, running_state())
        })
        .collect();
    PodStatus {
        phase: "Running".into(),
        start_time: at(now),
        conditions: vec![
            condition("Initialized", "True", "", now),
            condition("Ready", "True", "", now),
            condition("ContainersReady", "True", "", now),
            condition("PodScheduled", "True", "", now),
        ],
        host_ip: host.clone(),
        host_ips: vec![HostIp { ip: host }],
        pod_ip: ip.clone(),
        pod_ips: vec![PodIp { ip }],
        init_container_statuses: init,
        container_statuses: app,
        ..pod.status.clone().unwrap_or_default()
    }
}

/// The status of `pod` once its containers stopped at `now`: each running container
/// terminated (exit code 0, Completed), no longer ready, the pod's Ready and ContainersReady
/// conditions False (`PodCompleted`), and the phase Succeeded: since Kubernetes 1.27
/// (kubernetes#115331) the kubelet gives a deleted pod whose containers stopped a terminal
/// phase before its final delete, Succeeded when every container exited 0. `None` when no
/// container was running (nothing to report).
pub fn stopped(pod: &Pod, now: i64) -> Option<PodStatus> {
    let mut status = pod.status.clone()?;
    let mut any = false;
    // Sidecars (init containers still running) stop with the app containers.
    for c in status
        .container_statuses
        .iter_mut()
        .chain(status.init_container_statuses.iter_mut())
    {
        let Some(running) = c.state.as_ref().and_then(|s| s.running) else {
            continue;
        };
        any = true;
        c.state = Some(ContainerState {
            terminated: Some(ContainerStateTerminated {
                exit_code: 0,
                reason: "Completed".into(),
                started_at: running.started_at,
                finished_at: at(now),
                container_id: c.container_id.clone(),
                ..Default::default()
            }),
            ..Default::default()
        });
        c.ready = false;
        c.started = Some(false);
    }
    if !any {
        return None;
    }
    status.phase = "Succeeded".into();
    for cond in &mut status.conditions {
        if matches!(cond.r#type.as_str(), "Ready" | "ContainersReady") && cond.status != "False" {
            *cond = condition(&cond.r#type, "False", "PodCompleted", now);
        }
    }
    Some(status)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubestore_proto::{core::v1::PodSpec, meta::v1::ObjectMeta};

    fn pod(uid: &str) -> Pod {
        Pod {
            metadata: Some(ObjectMeta {
                uid: uid.into(),
                ..Default::default()
            }),
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: "app".into(),
                    image: "registry.local:5000/team/nginx:1.27".into(),
                    ..Default::default()
                }],
                init_containers: vec![Container {
                    name: "setup".into(),
                    image: "busybox".into(),
                    ..Default::default()
                }],
                ..Default::default()
            }),
            status: Some(PodStatus {
                phase: "Pending".into(),
                qos_class: "BestEffort".into(),
                ..Default::default()
            }),
        }
    }

    #[test]
    fn addresses_are_stable_and_in_their_ranges() {
        assert_eq!(host_ip("node-1"), host_ip("node-1"));
        assert_ne!(host_ip("node-1"), host_ip("node-2"));
        assert_eq!(pod_ip("uid-a"), pod_ip("uid-a"));
        assert_ne!(pod_ip("uid-a"), pod_ip("uid-b"));
        for key in ["", "node-1", "a", "uid-b", "x".repeat(300).as_str()] {
            for (ip, prefix) in [(host_ip(key), "10.0."), (pod_ip(key), "10.244.")] {
                let parsed: std::net::Ipv4Addr = ip.parse().expect("an IPv4 address");
                assert!(ip.starts_with(prefix), "{ip}");
                let last = parsed.octets()[3];
                assert!((1..=254).contains(&last), "{ip}");
            }
        }
    }

    #[test]
    fn a_running_pod_is_reported_as_a_kubelet_does() {
        let p = pod("uid-a");
        let s = running(&p, "node-1", 1000);
        assert_eq!(s.phase, "Running");
        assert_eq!(s.qos_class, "BestEffort", "kept");
        assert_eq!(s.start_time, at(1000));
        assert_eq!(
            s.host_ips,
            [HostIp {
                ip: s.host_ip.clone()
            }]
        );
        assert_eq!(
            s.pod_ips,
            [PodIp {
                ip: s.pod_ip.clone()
            }]
        );
        let conditions: Vec<(&str, &str)> = s
            .conditions
            .iter()
            .map(|c| (c.r#type.as_str(), c.status.as_str()))
            .collect();
        assert_eq!(
            conditions,
            [
                ("Initialized", "True"),
                ("Ready", "True"),
                ("ContainersReady", "True"),
                ("PodScheduled", "True")
            ]
        );
        assert!(
            s.conditions
                .iter()
                .all(|c| c.last_transition_time == at(1000))
        );
        let c = &s.container_statuses[0];
        assert_eq!(
            (c.name.as_str(), c.ready, c.started, c.restart_count),
            ("app", true, Some(true), 0)
        );
        assert_eq!(c.image, "registry.local:5000/team/nginx:1.27");
        let (repo, digest) = c
            .image_id
            .strip_prefix("docker-pullable://")
            .and_then(|r| r.split_once("@sha256:"))
            .expect(&c.image_id);
        assert_eq!(repo, "registry.local:5000/team/nginx");
        assert_eq!(digest.len(), 64);
        assert!(digest.bytes().all(|b| b.is_ascii_hexdigit()));
        let id = c
            .container_id
            .strip_prefix("containerd://")
            .expect("runtime");
        assert_eq!(id.len(), 64);
        assert_eq!(
            c.state.as_ref().and_then(|s| s.running),
            Some(ContainerStateRunning {
                started_at: at(1000)
            })
        );
        let i = &s.init_container_statuses[0];
        let done = i.state.as_ref().and_then(|s| s.terminated.clone());
        assert_eq!(
            done.map(|t| (t.exit_code, t.reason)),
            Some((0, "Completed".to_string()))
        );
        assert_ne!(i.container_id, c.container_id);
        // Another pod: another address and other container IDs.
        let other = running(&pod("uid-b"), "node-1", 1000);
        assert_ne!(other.pod_ip, s.pod_ip);
        assert_eq!(other.host_ip, s.host_ip);
        assert_ne!(other.container_statuses[0].container_id, c.container_id);
        assert_eq!(other.container_statuses[0].image_id, c.image_id);
    }

    #[test]
    fn a_stopped_pods_containers_are_terminated() {
        let mut p = pod("uid-a");
        assert_eq!(stopped(&p, 2000), None, "nothing ran");
        p.status = Some(running(&p, "node-1", 1000));
        let s = stopped(&p, 2000).expect("stopped");
        let c = &s.container_statuses[0];
        let t = c
            .state
            .as_ref()
            .and_then(|s| s.terminated.clone())
            .expect("terminated");
        assert_eq!((t.exit_code, t.reason.as_str()), (0, "Completed"));
        assert_eq!((t.started_at, t.finished_at), (at(1000), at(2000)));
        assert_eq!(t.container_id, c.container_id);
        assert!(!c.ready);
        let ready: Vec<(&str, &str, &str)> = s
            .conditions
            .iter()
            .map(|c| (c.r#type.as_str(), c.status.as_str(), c.reason.as_str()))
            .collect();
        assert_eq!(
            ready,
            [
                ("Initialized", "True", ""),
                ("Ready", "False", "PodCompleted"),
                ("ContainersReady", "False", "PodCompleted"),
                ("PodScheduled", "True", "")
            ]
        );
        assert_eq!(s.phase, "Succeeded", "every container exited 0");
    }

    /// A sidecar runs beside the app containers, started and ready, and stops with them.
    #[test]
    fn a_sidecar_runs_and_stops_with_the_app() {
        let mut p = pod("uid-s");
        if let Some(spec) = p.spec.as_mut() {
            spec.init_containers[0].restart_policy = Some("Always".into());
        }
        let s = running(&p, "node-1", 1000);
        let sidecar = &s.init_container_statuses[0];
        assert!(
            sidecar
                .state
                .as_ref()
                .is_some_and(|st| st.running.is_some()),
            "{sidecar:?}"
        );
        assert_eq!((sidecar.ready, sidecar.started), (true, Some(true)));
        p.status = Some(s);
        let done = stopped(&p, 2000).expect("containers were running");
        let sidecar = &done.init_container_statuses[0];
        let terminated = sidecar.state.as_ref().and_then(|st| st.terminated.as_ref());
        assert_eq!(terminated.map(|t| t.reason.as_str()), Some("Completed"));
        assert!(!sidecar.ready);
    }
}
