//! Upstream's cases (`pkg/apis/core/validation/validation_test.go`: `TestValidatePorts`,
//! `TestValidateEnv`, `TestValidateVolumeMounts`, `TestValidatePullPolicy`,
//! `TestValidateRestartPolicy`, `TestValidateDNSPolicy`, `TestValidateReadinessGates`,
//! `TestValidateContainers`, `TestValidateInitContainers`, `TestValidatePodSpec`) for the
//! fields our Pod carries, with their paths and messages.

use kubestore_proto::core::v1::{
    Container, ContainerPort, EnvVar, PodReadinessGate, PodSpec, Volume, VolumeMount,
};

use super::validate_spec;
use crate::{kinds::pod_defaults::default_spec, violations::Violations};

pub(super) fn container(name: &str) -> Container {
    Container {
        name: name.into(),
        image: "nginx:1".into(),
        ..Default::default()
    }
}

/// A valid spec of one container `c`, defaulted as the Store defaults every pod.
pub(super) fn spec_with(edit: impl FnOnce(&mut PodSpec)) -> PodSpec {
    let mut s = PodSpec {
        containers: vec![container("c")],
        ..Default::default()
    };
    edit(&mut s);
    default_spec(&mut s);
    s
}

fn problems(spec: &PodSpec) -> Vec<(String, String)> {
    let mut v = Violations::new();
    validate_spec(Some(spec), false, &mut v);
    v.iter().cloned().collect()
}

pub(super) fn one(field: &str, description: &str) -> Vec<(String, String)> {
    vec![(field.to_string(), description.to_string())]
}

pub(super) fn port(name: &str, container_port: i32, protocol: &str) -> ContainerPort {
    ContainerPort {
        name: name.into(),
        container_port,
        protocol: protocol.into(),
        ..Default::default()
    }
}

#[test]
fn a_defaulted_spec_is_valid() {
    assert_eq!(problems(&spec_with(|_| {})), []);
}

/// `TestValidatePorts`.
#[test]
fn ports() {
    let ok = spec_with(|s| {
        s.containers[0].ports = vec![
            ContainerPort {
                host_port: 80,
                ..port("abc", 80, "TCP")
            },
            port("easy", 82, "TCP"),
            port("as", 83, "UDP"),
            port("do-re-me", 84, "SCTP"),
            port("", 85, "TCP"),
        ]
    });
    assert_eq!(problems(&ok), []);
    let at = |i: usize, f: &str| format!("spec.containers[0].ports[{i}].{f}");
    let between = "must be between 1 and 65535, inclusive";
    let sixteen = "a".repeat(16);
    for (ports, want) in [
        (
            vec![port(&sixteen, 80, "TCP")],
            vec![(
                at(0, "name"),
                format!("Invalid value: {sixteen:?}: must be no more than 15 characters"),
            )],
        ),
        (
            vec![port("a.b.c", 80, "TCP")],
            vec![(
                at(0, "name"),
                "Invalid value: \"a.b.c\": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".into(),
            )],
        ),
        (
            vec![port("80", 80, "TCP")],
            vec![(
                at(0, "name"),
                "Invalid value: \"80\": must contain at least one letter (a-z)".into(),
            )],
        ),
        (
            vec![port("a--b", 80, "TCP"), port("-ab", 81, "TCP")],
            vec![
                (
                    at(0, "name"),
                    "Invalid value: \"a--b\": must not contain consecutive hyphens".into(),
                ),
                (
                    at(1, "name"),
                    "Invalid value: \"-ab\": must not begin or end with a hyphen".into(),
                ),
            ],
        ),
        (
            vec![port("abc", 80, "TCP"), port("abc", 81, "TCP")],
            vec![(at(1, "name"), "Duplicate value: \"abc\"".into())],
        ),
        (
            vec![port("", 0, "TCP")],
            vec![(at(0, "containerPort"), "Required value".into())],
        ),
        (
            vec![port("", 65536, "TCP")],
            vec![(
                at(0, "containerPort"),
                format!("Invalid value: 65536: {between}"),
            )],
        ),
        (
            vec![port("", -1, "TCP")],
            vec![(at(0, "containerPort"), format!("Invalid value: -1: {between}"))],
        ),
        (
            vec![ContainerPort {
                host_port: 65536,
                ..port("", 80, "TCP")
            }],
            vec![(at(0, "hostPort"), format!("Invalid value: 65536: {between}"))],
        ),
        (
            vec![port("", 80, "tcp")],
            vec![(
                at(0, "protocol"),
                "Unsupported value: \"tcp\": supported values: \"SCTP\", \"TCP\", \"UDP\"".into(),
            )],
        ),
        (
            vec![port("", 80, "ICMP")],
            vec![(
                at(0, "protocol"),
                "Unsupported value: \"ICMP\": supported values: \"SCTP\", \"TCP\", \"UDP\"".into(),
            )],
        ),
    ] {
        let s = spec_with(|s| s.containers[0].ports = ports.clone());
        assert_eq!(problems(&s), want, "{ports:?}");
    }
    // A protocol is required (defaulting fills it, so only an undefaulted spec lacks one).
    let mut s = spec_with(|_| {});
    s.containers[0].ports = vec![port("abc", 80, "")];
    assert_eq!(problems(&s), one(&at(0, "protocol"), "Required value"));
}

/// `AccumulateUniqueHostPorts` across app containers, and per init container.
#[test]
fn host_ports_are_unique_per_protocol_and_host_ip() {
    let with_host = |hp: i32, protocol: &str, ip: &str| ContainerPort {
        host_port: hp,
        host_ip: ip.into(),
        ..port("", 80, protocol)
    };
    let s = spec_with(|s| {
        s.containers[0].ports = vec![with_host(8080, "TCP", "")];
        s.containers.push(Container {
            ports: vec![
                with_host(8080, "TCP", ""),
                with_host(8080, "UDP", ""),
                with_host(8080, "TCP", "10.0.0.1"),
            ],
            ..container("d")
        });
    });
    assert_eq!(
        problems(&s),
        one(
            "spec.containers[1].ports[0].hostPort",
            "Duplicate value: \"TCP//8080\""
        )
    );
    // Init containers run one at a time: the same port in two is fine, twice in one is not
    // (reported under index 0, as upstream does).
    let s = spec_with(|s| {
        s.init_containers = vec![
            Container {
                ports: vec![with_host(9090, "TCP", "")],
                ..container("i1")
            },
            Container {
                ports: vec![with_host(9090, "TCP", ""), with_host(9090, "TCP", "")],
                ..container("i2")
            },
        ];
    });
    assert_eq!(
        problems(&s),
        one(
            "spec.initContainers[0].ports[1].hostPort",
            "Duplicate value: \"TCP//9090\""
        )
    );
}

/// `TestValidateEnv` with relaxed names (`RelaxedEnvironmentVariableValidation`, GA in 1.34).
#[test]
fn env_var_names() {
    let env = |names: &[&str]| -> Vec<EnvVar> {
        names
            .iter()
            .map(|n| EnvVar {
                name: n.to_string(),
                value: "v".into(),
                value_from: None,
            })
            .collect()
    };
    let ok = spec_with(|s| {
        s.containers[0].env = env(&["abc", "ABC", "AbC_123", "a.b.c", "a-b-c", "1abc", "$ab c~"])
    });
    assert_eq!(problems(&ok), []);
    let msg = "a valid environment variable name must consist only of printable ASCII characters other than '='";
    let s = spec_with(|s| s.containers[0].env = env(&["", "a=b", "ta\tb", "漢字"]));
    assert_eq!(
        problems(&s),
        vec![
            (
                "spec.containers[0].env[0].name".into(),
                "Required value".into()
            ),
            (
                "spec.containers[0].env[1].name".into(),
                format!("Invalid value: \"a=b\": {msg}")
            ),
            (
                "spec.containers[0].env[2].name".into(),
                format!("Invalid value: \"ta\\tb\": {msg}")
            ),
            (
                "spec.containers[0].env[3].name".into(),
                format!("Invalid value: \"漢字\": {msg}")
            ),
        ]
    );
}

/// `TestValidateVolumeMounts`'s cases of names and paths (the volume module's tests have the
/// rest).
#[test]
fn volume_mounts() {
    let volumes = |names: &[&str]| -> Vec<Volume> {
        names
            .iter()
            .map(|n| Volume {
                name: n.to_string(),
                empty_dir: Some(Default::default()),
                ..Default::default()
            })
            .collect()
    };
    let mount = |name: &str, path: &str, sub: &str| VolumeMount {
        name: name.into(),
        mount_path: path.into(),
        sub_path: sub.into(),
        read_only: false,
        ..Default::default()
    };
    let ok = spec_with(|s| {
        s.volumes = volumes(&["abc", "123"]);
        s.containers[0].volume_mounts =
            vec![mount("abc", "/foo", ""), mount("123", "/bar", "baz/x")]
    });
    assert_eq!(problems(&ok), []);
    let at = |i: usize, f: &str| format!("spec.containers[0].volumeMounts[{i}].{f}");
    let s = spec_with(|s| {
        s.volumes = volumes(&["b", "c", "d", "e"]);
        s.containers[0].volume_mounts = vec![
            mount("", "/a", ""),
            mount("b", "", ""),
            mount("c", "/a", ""),
            mount("d", "/d", "/abs"),
            mount("e", "/e", "x/../../y"),
        ]
    });
    assert_eq!(
        problems(&s),
        vec![
            (at(0, "name"), "Required value".into()),
            (at(0, "name"), "Not found: \"\"".into()),
            (at(1, "mountPath"), "Required value".into()),
            (
                at(2, "mountPath"),
                "Invalid value: \"/a\": must be unique".into()
            ),
            (
                "spec.containers[0].volumeMounts.subPath".into(),
                "Invalid value: \"/abs\": must be a relative path".into()
            ),
            (
                "spec.containers[0].volumeMounts.subPath".into(),
                "Invalid value: \"x/../../y\": must not contain '..'".into()
            ),
        ]
    );
}

/// `TestValidatePullPolicy`, `TestValidateRestartPolicy`, `TestValidateDNSPolicy` and the
/// termination message policy.
#[test]
fn closed_sets_of_values() {
    for p in ["Always", "IfNotPresent", "Never"] {
        let s = spec_with(|s| s.containers[0].image_pull_policy = p.into());
        assert_eq!(problems(&s), [], "{p}");
    }
    let s = spec_with(|s| s.containers[0].image_pull_policy = "Sometimes".into());
    assert_eq!(
        problems(&s),
        one(
            "spec.containers[0].imagePullPolicy",
            "Unsupported value: \"Sometimes\": supported values: \"Always\", \"IfNotPresent\", \"Never\""
        )
    );
    let s = spec_with(|s| s.restart_policy = "Sometimes".into());
    assert_eq!(
        problems(&s),
        one(
            "spec.restartPolicy",
            "Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\""
        )
    );
    for p in ["ClusterFirstWithHostNet", "ClusterFirst", "Default"] {
        let s = spec_with(|s| s.dns_policy = p.into());
        assert_eq!(problems(&s), [], "{p}");
    }
    let s = spec_with(|s| s.dns_policy = "Cluster".into());
    assert_eq!(
        problems(&s),
        one(
            "spec.dnsPolicy",
            "Unsupported value: \"Cluster\": supported values: \"ClusterFirstWithHostNet\", \"ClusterFirst\", \"Default\", \"None\""
        )
    );
    // None needs the dnsConfig our Pod does not carry.
    let s = spec_with(|s| s.dns_policy = "None".into());
    assert_eq!(
        problems(&s),
        one(
            "spec.dnsConfig",
            "Required value: must provide `dnsConfig` when `dnsPolicy` is None"
        )
    );
    let s = spec_with(|s| s.containers[0].termination_message_policy = "Log".into());
    assert_eq!(
        problems(&s),
        one(
            "spec.containers[0].terminationMessagePolicy",
            "Unsupported value: \"Log\": supported values: \"File\", \"FallbackToLogsOnError\""
        )
    );
}

/// `TestValidateContainers` and `TestValidateInitContainers`: names unique across both lists.
#[test]
fn container_names_are_unique_across_init_and_app_containers() {
    let s = spec_with(|s| {
        s.containers.push(container("c"));
        s.init_containers = vec![container("c"), container("i"), container("i")];
    });
    assert_eq!(
        problems(&s),
        vec![
            (
                "spec.containers[1].name".into(),
                "Duplicate value: \"c\"".into()
            ),
            (
                "spec.initContainers[0].name".into(),
                "Duplicate value: \"c\"".into()
            ),
            (
                "spec.initContainers[2].name".into(),
                "Duplicate value: \"i\"".into()
            ),
        ]
    );
    // Init containers get the common container rules, at their own paths.
    let s = spec_with(|s| {
        s.init_containers = vec![Container {
            name: "Bad_Name".into(),
            image: String::new(),
            ..Default::default()
        }]
    });
    assert_eq!(
        problems(&s),
        vec![
            (
                "spec.initContainers[0].name".into(),
                "Invalid value: \"Bad_Name\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character".into()
            ),
            ("spec.initContainers[0].image".into(), "Required value".into()),
        ]
    );
    // No app containers: Required, whatever the init containers.
    let s = spec_with(|s| {
        s.containers.clear();
        s.init_containers = vec![container("i")];
    });
    assert_eq!(problems(&s), one("spec.containers", "Required value"));
}

/// `validateContainerOnlyForPod`.
#[test]
fn images_have_no_surrounding_whitespace() {
    let s = spec_with(|s| {
        s.containers[0].image = " nginx".into();
        s.init_containers = vec![Container {
            image: "busybox ".into(),
            ..container("i")
        }];
    });
    assert_eq!(
        problems(&s),
        vec![
            (
                "spec.containers[0].image".into(),
                "Invalid value: \" nginx\": must not have leading or trailing whitespace".into()
            ),
            (
                "spec.initContainers[0].image".into(),
                "Invalid value: \"busybox \": must not have leading or trailing whitespace".into()
            ),
        ]
    );
}

/// `TestValidatePodSpec`'s cases of the fields we model.
#[test]
fn spec_fields() {
    let ok = spec_with(|s| {
        s.active_deadline_seconds = Some(30);
        s.hostname = "web-0".into();
        s.subdomain = "web".into();
        s.service_account_name = "acct".into();
        s.priority_class_name = "valid-name".into();
        s.priority = Some(1000);
        s.node_selector = [("key".to_string(), "value".to_string())].into();
        s.readiness_gates = vec![PodReadinessGate {
            condition_type: "example.com/ready".into(),
        }];
    });
    assert_eq!(problems(&ok), []);
    let label = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
    let subdomain = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
    let bad = spec_with(|s| {
        s.active_deadline_seconds = Some(0);
        s.hostname = "Bad".into();
        s.subdomain = "a.b".into();
        s.service_account_name = "Acct".into();
        s.priority_class_name = "InvalidName".into();
        s.node_selector = [("bad key".to_string(), "bad value".to_string())].into();
        s.readiness_gates = vec![PodReadinessGate {
            condition_type: "invalid/condition/type".into(),
        }];
    });
    let got = problems(&bad);
    let want: Vec<(String, String)> = vec![
        (
            "spec.nodeSelector".into(),
            "Invalid value: \"bad key\": name part must consist of alphanumeric characters, '-', '_' or '.', must start and end with an alphanumeric character, and be at most 63 characters".into(),
        ),
        (
            "spec.nodeSelector".into(),
            "Invalid value: \"bad value\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (at most 63)".into(),
        ),
        (
            "spec.readinessGates[0].conditionType".into(),
            "Invalid value: \"invalid/condition/type\": name part must consist of alphanumeric characters, '-', '_' or '.', must start and end with an alphanumeric character, and be at most 63 characters".into(),
        ),
        (
            "spec.serviceAccountName".into(),
            format!("Invalid value: \"Acct\": {subdomain}"),
        ),
        (
            "spec.activeDeadlineSeconds".into(),
            "Invalid value: 0: must be between 1 and 2147483647, inclusive".into(),
        ),
        ("spec.hostname".into(), format!("Invalid value: \"Bad\": {label}")),
        ("spec.subdomain".into(), format!("Invalid value: \"a.b\": {label}")),
        (
            "spec.priorityClassName".into(),
            format!("Invalid value: \"InvalidName\": {subdomain}"),
        ),
    ];
    assert_eq!(got, want);
    let s = spec_with(|s| s.active_deadline_seconds = Some(i64::from(i32::MAX) + 1));
    assert_eq!(
        problems(&s),
        one(
            "spec.activeDeadlineSeconds",
            "Invalid value: 2147483648: must be between 1 and 2147483647, inclusive"
        )
    );
}

/// `validatePodHostNetworkDeps`: on the host's network a host port is its container port.
#[test]
fn host_network_ports_match_their_container_ports() {
    // Defaulting fills the host port: valid.
    let s = spec_with(|s| {
        s.host_network = true;
        s.containers[0].ports = vec![port("", 8080, "TCP")];
    });
    assert_eq!(s.containers[0].ports[0].host_port, 8080);
    assert_eq!(problems(&s), []);
    let s = spec_with(|s| {
        s.host_network = true;
        s.containers[0].ports = vec![ContainerPort {
            host_port: 9090,
            ..port("", 8080, "TCP")
        }];
    });
    assert_eq!(
        problems(&s),
        one(
            "spec.containers[0].ports[0].hostPort",
            "Invalid value: 9090: must match `containerPort` when `hostNetwork` is true"
        )
    );
}
