//! v1 defaulting of Pods, for the fields our Pod carries: upstream's `SetObjectDefaults_Pod`
//! (`pkg/apis/core/v1/zz_generated.defaults.go`: `SetDefaults_Pod`, `SetDefaults_PodSpec`, then
//! `SetDefaults_Container` and each port's `protocol` for every init and app container), the
//! grace-period coercion of its Pod conversion (`Convert_v1_Pod_To_core_Pod`,
//! kubernetes#115606), and its `podIP`/`podIPs` conversion (`Convert_v1_PodStatus_To_core_PodStatus`
//! and back: `podIPs[0]` is always `podIP`). Applied to every pod a client sends and every pod
//! read from storage (`Strategy::default_object`), so a pod written before a default existed
//! reads, compares and updates as if it had been written with it.
//!
//! Volumes are defaulted in `volume_defaults`. Quantities are written back in upstream's
//! canonical form (`0.1` is `100m`), resource lists' rounded up to milli-units
//! (`SetDefaults_ResourceList`). Not done: the defaults of ephemeral containers, which no
//! create carries (`pod_validation`) and whose subresource kubestore does not serve.

use kubestore_proto::core::v1::{Container, HttpGetAction, Pod, PodIp, PodSpec, PodStatus, Probe};

use super::{image_ref, pod_quantities, volume_defaults};

/// Upstream's `DefaultTerminationGracePeriodSeconds`.
pub const DEFAULT_TERMINATION_GRACE_SECONDS: i64 = 30;

/// Upstream's default `restartPolicy`.
pub const DEFAULT_RESTART_POLICY: &str = "Always";

/// Upstream's default `dnsPolicy` (`DNSClusterFirst`).
pub const DEFAULT_DNS_POLICY: &str = "ClusterFirst";

/// Upstream's `DefaultSchedulerName`.
pub const DEFAULT_SCHEDULER_NAME: &str = "default-scheduler";

/// Upstream's `TerminationMessagePathDefault`.
pub const DEFAULT_TERMINATION_MESSAGE_PATH: &str = "/dev/termination-log";

/// Upstream's default `terminationMessagePolicy` (`TerminationMessageReadFile`).
pub const DEFAULT_TERMINATION_MESSAGE_POLICY: &str = "File";

/// Upstream's default port protocol.
pub const DEFAULT_PROTOCOL: &str = "TCP";

/// Applies the defaults to `pod`; returns whether anything changed. Upstream's `PodSpec` is a
/// value, never absent: a pod sent without one is defaulted as a pod with an empty one (and
/// then refused for its missing containers alone). Watch bookmarks, whose placeholder object
/// must stay empty, are never defaulted (`passthrough`).
pub fn default_pod(pod: &mut Pod) -> bool {
    let absent = pod.spec.is_none();
    let mut changed = default_spec(pod.spec.get_or_insert_with(Default::default));
    if let Some(status) = pod.status.as_mut() {
        changed |= normalize_pod_ips(status);
    }
    absent || changed
}

/// Sets `*field` to `value` if it is empty; whether it did.
fn fill(field: &mut String, value: &str) -> bool {
    let empty = field.is_empty();
    if empty {
        *field = value.to_string();
    }
    empty
}

/// The defaults of a pod's spec (`SetDefaults_Pod`, `SetDefaults_PodSpec` and the container
/// defaults, in upstream's order); returns whether anything changed.
pub fn default_spec(spec: &mut PodSpec) -> bool {
    let mut changed = false;
    // SetDefaults_Pod: a container's limits are its requests where it gives none (done on Pods
    // only upstream, not on pod templates, so that the QoS class follows the limits).
    for c in spec.init_containers.iter_mut().chain(&mut spec.containers) {
        let Some(res) = c.resources.as_mut() else {
            continue;
        };
        for (name, limit) in &res.limits {
            if !res.requests.contains_key(name) {
                res.requests.insert(name.clone(), limit.clone());
                changed = true;
            }
        }
    }
    changed |= pod_quantities::default_pod_requests(spec);
    if spec.enable_service_links.is_none() {
        spec.enable_service_links = Some(true);
        changed = true;
    }
    // defaultHostNetworkPorts: on the host's network a port is the host's port too.
    if spec.host_network {
        for c in spec.containers.iter_mut().chain(&mut spec.init_containers) {
            for p in &mut c.ports {
                if p.host_port == 0 && p.container_port != 0 {
                    p.host_port = p.container_port;
                    changed = true;
                }
            }
        }
    }
    // SetDefaults_PodSpec.
    changed |= fill(&mut spec.dns_policy, DEFAULT_DNS_POLICY);
    changed |= fill(&mut spec.restart_policy, DEFAULT_RESTART_POLICY);
    match spec.termination_grace_period_seconds {
        None => {
            spec.termination_grace_period_seconds = Some(DEFAULT_TERMINATION_GRACE_SECONDS);
            changed = true;
        }
        // Upstream's Pod conversion: a negative grace period (accepted before 1.22 and still
        // stored in old clusters) is served and kept as 1 second, the value its delete path
        // already used. Validation of a new pod therefore never sees a negative one.
        Some(g) if g < 0 => {
            spec.termination_grace_period_seconds = Some(1);
            changed = true;
        }
        Some(_) => {}
    }
    if spec.security_context.is_none() {
        spec.security_context = Some(Default::default());
        changed = true;
    }
    changed |= fill(&mut spec.scheduler_name, DEFAULT_SCHEDULER_NAME);
    // The v1 conversion of the deprecated `serviceAccount`: it fills an empty
    // `serviceAccountName`, and is then always written as a copy of it.
    if spec.service_account_name.is_empty() && !spec.service_account.is_empty() {
        spec.service_account_name = spec.service_account.clone();
        changed = true;
    }
    if spec.service_account != spec.service_account_name {
        spec.service_account = spec.service_account_name.clone();
        changed = true;
    }
    for v in &mut spec.volumes {
        changed |= volume_defaults::default_volume(v);
    }
    for c in spec.init_containers.iter_mut().chain(&mut spec.containers) {
        changed |= default_container(c);
    }
    changed |= pod_quantities::canonical_quantities(spec);
    changed
}

/// `SetDefaults_Container` and the ports' `protocol` (`+default="TCP"`).
fn default_container(c: &mut Container) -> bool {
    let mut changed = false;
    // Upstream's `resources` is a struct value: absent and `{}` are one value, which reads
    // back `{}` (the field's `always` rule). Stored as absent, so that a pod read and sent
    // back with `resources: {}` is the same pod.
    if c.resources
        .as_ref()
        .is_some_and(|r| *r == Default::default())
    {
        c.resources = None;
        changed = true;
    }
    if c.image_pull_policy.is_empty() {
        c.image_pull_policy = image_ref::default_pull_policy(&c.image).into();
        changed = true;
    }
    changed |= fill(
        &mut c.termination_message_path,
        DEFAULT_TERMINATION_MESSAGE_PATH,
    );
    changed |= fill(
        &mut c.termination_message_policy,
        DEFAULT_TERMINATION_MESSAGE_POLICY,
    );
    for p in &mut c.ports {
        changed |= fill(&mut p.protocol, DEFAULT_PROTOCOL);
    }
    for probe in [
        &mut c.liveness_probe,
        &mut c.readiness_probe,
        &mut c.startup_probe,
    ]
    .into_iter()
    .flatten()
    {
        changed |= default_probe(probe);
    }
    if let Some(l) = c.lifecycle.as_mut() {
        for h in [&mut l.post_start, &mut l.pre_stop].into_iter().flatten() {
            if let Some(g) = h.http_get.as_mut() {
                changed |= default_http_get(g);
            }
        }
    }
    for source in c.env.iter_mut().filter_map(|e| e.value_from.as_mut()) {
        if let Some(f) = source.field_ref.as_mut() {
            changed |= volume_defaults::default_field_ref(f);
        }
        if let Some(r) = source.resource_field_ref.as_mut() {
            changed |= volume_defaults::default_divisor(r);
        }
    }
    changed
}

/// `SetDefaults_Probe`, and the defaults of its handler.
fn default_probe(p: &mut Probe) -> bool {
    let mut changed = false;
    for (value, default) in [
        (&mut p.timeout_seconds, 1),
        (&mut p.period_seconds, 10),
        (&mut p.success_threshold, 1),
        (&mut p.failure_threshold, 3),
    ] {
        if *value == 0 {
            *value = default;
            changed = true;
        }
    }
    if let Some(g) = p.http_get.as_mut() {
        changed |= default_http_get(g);
    }
    // GRPCAction.service: `+default=""`.
    if let Some(g) = p.grpc.as_mut()
        && g.service.is_none()
    {
        g.service = Some(String::new());
        changed = true;
    }
    changed
}

/// `SetDefaults_HTTPGetAction`: path `/`, scheme HTTP.
fn default_http_get(g: &mut HttpGetAction) -> bool {
    fill(&mut g.path, "/") | fill(&mut g.scheme, "HTTP")
}

/// Upstream's v1 `PodStatus` conversion, there and back: `podIP` wins over a `podIPs` that
/// disagrees with it (older kubelets wrote only `podIP`), `podIPs` gets `podIP` when it has
/// none, and `podIP` is then always `podIPs[0]`.
fn normalize_pod_ips(status: &mut PodStatus) -> bool {
    let before = (status.pod_ip.clone(), status.pod_ips.clone());
    if !status.pod_ip.is_empty()
        && status
            .pod_ips
            .first()
            .is_none_or(|ip| ip.ip != status.pod_ip)
    {
        status.pod_ips = vec![PodIp {
            ip: status.pod_ip.clone(),
        }];
    }
    if let Some(first) = status.pod_ips.first() {
        status.pod_ip = first.ip.clone();
    }
    (status.pod_ip.as_str(), &status.pod_ips) != (before.0.as_str(), &before.1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubestore_proto::core::v1::{ContainerPort, EnvVar, ResourceRequirements};

    fn pod(spec: PodSpec) -> Pod {
        Pod {
            spec: Some(spec),
            ..Default::default()
        }
    }

    fn limits(pairs: &[(&str, &str)]) -> Option<ResourceRequirements> {
        Some(ResourceRequirements {
            requests: Default::default(),
            limits: pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..Default::default()
        })
    }

    /// Upstream's `TestPodDefaults`: every default a pod gets, and nothing else, for an init
    /// and an app container each with a port, an env var and limits.
    #[test]
    fn a_pod_gets_upstreams_defaults_and_only_those() {
        let bare = Container {
            ports: vec![ContainerPort {
                container_port: 80,
                ..Default::default()
            }],
            env: vec![EnvVar {
                name: "A".into(),
                value: "1".into(),
                value_from: None,
            }],
            resources: limits(&[("cpu", "1")]),
            ..Default::default()
        };
        let mut p = pod(PodSpec {
            containers: vec![bare.clone()],
            init_containers: vec![bare.clone()],
            ..Default::default()
        });
        assert!(default_pod(&mut p));
        let defaulted = Container {
            ports: vec![ContainerPort {
                container_port: 80,
                protocol: "TCP".into(),
                ..Default::default()
            }],
            resources: Some(ResourceRequirements {
                requests: [("cpu".to_string(), "1".to_string())].into(),
                limits: [("cpu".to_string(), "1".to_string())].into(),
                ..Default::default()
            }),
            // No image: it does not parse, so it has no tag and is IfNotPresent.
            image_pull_policy: "IfNotPresent".into(),
            termination_message_path: "/dev/termination-log".into(),
            termination_message_policy: "File".into(),
            ..bare
        };
        let want = PodSpec {
            containers: vec![defaulted.clone()],
            init_containers: vec![defaulted],
            dns_policy: "ClusterFirst".into(),
            enable_service_links: Some(true),
            restart_policy: "Always".into(),
            scheduler_name: "default-scheduler".into(),
            termination_grace_period_seconds: Some(30),
            security_context: Some(Default::default()),
            ..Default::default()
        };
        assert_eq!(p.spec, Some(want));
        // Idempotent, and says so: the pass-through keeps storage's bytes then.
        let before = p.clone();
        assert!(!default_pod(&mut p));
        assert_eq!(p, before);
    }

    #[test]
    fn defaults_fill_what_is_unset_once() {
        let mut p = pod(PodSpec {
            containers: vec![Container {
                name: "c".into(),
                image: "i".into(),
                resources: Some(ResourceRequirements {
                    requests: [("cpu".to_string(), "1".to_string())].into(),
                    limits: [
                        ("cpu".to_string(), "2".to_string()),
                        ("memory".to_string(), "1Gi".to_string()),
                    ]
                    .into(),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            ..Default::default()
        });
        assert!(default_pod(&mut p));
        let spec = p.spec.clone().unwrap_or_default();
        assert_eq!(spec.restart_policy, "Always");
        assert_eq!(spec.termination_grace_period_seconds, Some(30));
        let res = spec.containers[0].resources.clone().unwrap_or_default();
        assert_eq!(res.requests["cpu"], "1", "a request given is kept");
        assert_eq!(
            res.requests["memory"], "1Gi",
            "a missing request is the limit"
        );
        let before = p.clone();
        assert!(!default_pod(&mut p));
        assert_eq!(p, before);
    }

    /// Values a client set are kept (`TestSetDefaultSchedulerName`,
    /// `TestSetDefaultEnableServiceLinks`, and the pull policy, protocol and DNS policy alike).
    #[test]
    fn values_given_are_kept() {
        let given = PodSpec {
            containers: vec![Container {
                name: "c".into(),
                image: "nginx".into(),
                image_pull_policy: "Never".into(),
                termination_message_path: "/tmp/t".into(),
                termination_message_policy: "FallbackToLogsOnError".into(),
                ports: vec![ContainerPort {
                    container_port: 53,
                    protocol: "UDP".into(),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            dns_policy: "Default".into(),
            scheduler_name: "mine".into(),
            enable_service_links: Some(false),
            restart_policy: "Never".into(),
            termination_grace_period_seconds: Some(5),
            security_context: Some(Default::default()),
            ..Default::default()
        };
        let mut p = pod(given.clone());
        assert!(!default_pod(&mut p), "nothing to fill");
        assert_eq!(p.spec, Some(given));
    }

    /// Upstream's init-container case of `TestSetDefaultReplicationControllerInitContainers`
    /// (`busybox`: no tag, so `latest`, so Always), and the tags around it.
    #[test]
    fn the_pull_policy_follows_the_image_tag() {
        let mut p = pod(PodSpec {
            init_containers: vec![Container {
                name: "install".into(),
                image: "busybox".into(),
                ..Default::default()
            }],
            containers: vec![
                Container {
                    name: "a".into(),
                    image: "nginx:1.27".into(),
                    ..Default::default()
                },
                Container {
                    name: "b".into(),
                    image: "nginx:latest".into(),
                    ..Default::default()
                },
            ],
            ..Default::default()
        });
        default_pod(&mut p);
        let spec = p.spec.unwrap_or_default();
        assert_eq!(spec.init_containers[0].image_pull_policy, "Always");
        assert_eq!(spec.containers[0].image_pull_policy, "IfNotPresent");
        assert_eq!(spec.containers[1].image_pull_policy, "Always");
    }

    /// Upstream's `TestSetDefaultHostNetworkPorts` cases: on the host's network an unset host
    /// port is the container port; a set one stays; off the host's network nothing is set.
    #[test]
    fn host_network_ports_default_to_the_container_port() {
        let ports = |host: i32| Container {
            name: "c".into(),
            image: "i".into(),
            ports: vec![ContainerPort {
                container_port: 8080,
                host_port: host,
                ..Default::default()
            }],
            ..Default::default()
        };
        for (host_network, host, want) in [(true, 0, 8080), (true, 9090, 9090), (false, 0, 0)] {
            let mut p = pod(PodSpec {
                host_network,
                containers: vec![ports(host)],
                init_containers: vec![Container {
                    name: "i".into(),
                    ..ports(host)
                }],
                ..Default::default()
            });
            default_pod(&mut p);
            let spec = p.spec.unwrap_or_default();
            assert_eq!(spec.containers[0].ports[0].host_port, want);
            assert_eq!(spec.init_containers[0].ports[0].host_port, want);
        }
    }

    /// Upstream's v1 PodStatus conversion, there and back.
    #[test]
    fn pod_ips_follow_pod_ip() {
        let ips = |v: &[&str]| -> Vec<PodIp> {
            v.iter().map(|ip| PodIp { ip: ip.to_string() }).collect()
        };
        for (pod_ip, pod_ips, want_ip, want_ips, changed) in [
            ("", vec![], "", vec![], false),
            ("10.0.0.1", vec![], "10.0.0.1", vec!["10.0.0.1"], true),
            (
                "10.0.0.1",
                vec!["10.0.0.1", "fd00::1"],
                "10.0.0.1",
                vec!["10.0.0.1", "fd00::1"],
                false,
            ),
            // They disagree: podIP wins (older kubelets wrote only it).
            (
                "10.0.0.2",
                vec!["10.0.0.1", "fd00::1"],
                "10.0.0.2",
                vec!["10.0.0.2"],
                true,
            ),
            ("", vec!["fd00::1"], "fd00::1", vec!["fd00::1"], true),
        ] {
            let mut p = pod(PodSpec::default());
            default_pod(&mut p);
            p.status = Some(PodStatus {
                pod_ip: pod_ip.into(),
                pod_ips: ips(&pod_ips),
                ..Default::default()
            });
            assert_eq!(default_pod(&mut p), changed, "{pod_ip} {pod_ips:?}");
            let status = p.status.unwrap_or_default();
            assert_eq!(status.pod_ip, want_ip);
            assert_eq!(status.pod_ips, ips(&want_ips));
        }
    }

    #[test]
    fn negative_grace_periods_become_one_second_and_set_values_stay() {
        let mut p = pod(PodSpec {
            termination_grace_period_seconds: Some(-1),
            restart_policy: "Never".into(),
            ..Default::default()
        });
        assert!(default_pod(&mut p));
        let spec = p.spec.clone().unwrap_or_default();
        assert_eq!(spec.termination_grace_period_seconds, Some(1));
        assert_eq!(spec.restart_policy, "Never");
        for g in [0, 1, 30, 3600] {
            let mut p = pod(PodSpec {
                termination_grace_period_seconds: Some(g),
                ..Default::default()
            });
            default_pod(&mut p);
            assert_eq!(
                p.spec.unwrap_or_default().termination_grace_period_seconds,
                Some(g)
            );
        }
    }

    #[test]
    fn a_pod_without_spec_is_defaulted_as_one_with_an_empty_spec() {
        let mut p = Pod::default();
        assert!(default_pod(&mut p));
        let spec = p.spec.clone().unwrap_or_default();
        assert_eq!(spec.restart_policy, "Always");
        assert_eq!(spec.dns_policy, "ClusterFirst");
        assert_eq!(spec.termination_grace_period_seconds, Some(30));
        assert!(!default_pod(&mut p));
    }

    /// The deprecated `serviceAccount` fills an empty `serviceAccountName` and is always written
    /// as its copy (upstream's v1 conversion of `DeprecatedServiceAccount`).
    #[test]
    fn the_deprecated_service_account_mirrors_the_name() {
        for (name, deprecated, want) in [
            ("", "old", "old"),
            ("new", "old", "new"),
            ("new", "", "new"),
        ] {
            let mut p = pod(PodSpec {
                service_account_name: name.into(),
                service_account: deprecated.into(),
                ..Default::default()
            });
            default_pod(&mut p);
            let spec = p.spec.unwrap_or_default();
            assert_eq!(
                (
                    spec.service_account_name.as_str(),
                    spec.service_account.as_str()
                ),
                (want, want)
            );
        }
    }
}
