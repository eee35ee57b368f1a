//! A container's probes and lifecycle hooks: upstream's `validateProbe`, `validateHandler`,
//! `validateLifecycle`, `ValidatePortNumOrName` and the probe rules of `validateContainers` and
//! `validateInitContainers` (`pkg/apis/core/validation/validation.go`), with their paths and
//! words. Init containers are never sidecars here (kubestore's Container has no
//! `restartPolicy`), so a probe or hook on one is refused as upstream refuses it on an init
//! container without `restartPolicy: Always`.

use kubestore_proto::core::v1::{
    Container, ExecAction, GrpcAction, HttpGetAction, IntOrString, Lifecycle, LifecycleHandler,
    Probe, SleepAction, TcpSocketAction, int_or_string,
};

use super::{not_supported, port_name};
use crate::violations::Violations;

/// One handler of any kind, as upstream's `commonHandler`.
struct Handler<'a> {
    exec: Option<&'a ExecAction>,
    http_get: Option<&'a HttpGetAction>,
    tcp_socket: Option<&'a TcpSocketAction>,
    grpc: Option<&'a GrpcAction>,
    sleep: Option<&'a SleepAction>,
}

impl<'a> Handler<'a> {
    fn of_probe(p: &'a Probe) -> Self {
        Self {
            exec: p.exec.as_ref(),
            http_get: p.http_get.as_ref(),
            tcp_socket: p.tcp_socket.as_ref(),
            grpc: p.grpc.as_ref(),
            sleep: None,
        }
    }

    fn of_hook(h: &'a LifecycleHandler) -> Self {
        Self {
            exec: h.exec.as_ref(),
            http_get: h.http_get.as_ref(),
            tcp_socket: h.tcp_socket.as_ref(),
            grpc: None,
            sleep: h.sleep.as_ref(),
        }
    }
}

/// The probes and hooks of an app container at `path`; `grace` is the pod's termination grace
/// period (a sleep hook must end within it).
pub(super) fn container(c: &Container, path: &str, grace: i64, v: &mut Violations) {
    if let Some(l) = &c.lifecycle {
        lifecycle(l, &format!("{path}.lifecycle"), grace, v);
    }
    if let Some(p) = &c.liveness_probe {
        probe(p, &format!("{path}.livenessProbe"), v);
        if p.success_threshold != 1 {
            v.push((
                format!("{path}.livenessProbe.successThreshold"),
                format!("Invalid value: {}: must be 1", p.success_threshold),
            ));
        }
    }
    if let Some(p) = &c.readiness_probe {
        if let Some(g) = p.termination_grace_period_seconds {
            v.push((
                format!("{path}.readinessProbe.terminationGracePeriodSeconds"),
                format!("Invalid value: {g}: must not be set for readinessProbes"),
            ));
        }
        probe(p, &format!("{path}.readinessProbe"), v);
    }
    if let Some(p) = &c.startup_probe {
        probe(p, &format!("{path}.startupProbe"), v);
        if p.success_threshold != 1 {
            v.push((
                format!("{path}.startupProbe.successThreshold"),
                format!("Invalid value: {}: must be 1", p.success_threshold),
            ));
        }
    }
}

/// An init container's: none may be set.
pub(super) fn init_container(c: &Container, path: &str, v: &mut Violations) {
    for (field, set) in [
        ("lifecycle", c.lifecycle.is_some()),
        ("livenessProbe", c.liveness_probe.is_some()),
        ("readinessProbe", c.readiness_probe.is_some()),
        ("startupProbe", c.startup_probe.is_some()),
    ] {
        if set {
            v.push((
                format!("{path}.{field}"),
                "Forbidden: may not be set for init containers without restartPolicy=Always".into(),
            ));
        }
    }
}

fn probe(p: &Probe, path: &str, v: &mut Violations) {
    handler(&Handler::of_probe(p), path, None, v);
    for (field, value) in [
        ("initialDelaySeconds", p.initial_delay_seconds),
        ("timeoutSeconds", p.timeout_seconds),
        ("periodSeconds", p.period_seconds),
        ("successThreshold", p.success_threshold),
        ("failureThreshold", p.failure_threshold),
    ] {
        if value < 0 {
            v.push((
                format!("{path}.{field}"),
                format!("Invalid value: {value}: must be greater than or equal to 0"),
            ));
        }
    }
    if let Some(g) = p.termination_grace_period_seconds
        && g <= 0
    {
        v.push((
            format!("{path}.terminationGracePeriodSeconds"),
            format!("Invalid value: {g}: must be greater than 0"),
        ));
    }
}

fn lifecycle(l: &Lifecycle, path: &str, grace: i64, v: &mut Violations) {
    for (hook, field) in [(&l.post_start, "postStart"), (&l.pre_stop, "preStop")] {
        if let Some(h) = hook {
            handler(
                &Handler::of_hook(h),
                &format!("{path}.{field}"),
                Some(grace),
                v,
            );
        }
    }
}

/// `validateHandler`: exactly one handler, each checked.
fn handler(h: &Handler<'_>, path: &str, grace: Option<i64>, v: &mut Violations) {
    let mut count = 0;
    let mut one = |field: &str, v: &mut Violations| -> bool {
        if count > 0 {
            v.push((
                format!("{path}.{field}"),
                "Forbidden: may not specify more than 1 handler type".into(),
            ));
            return false;
        }
        count += 1;
        true
    };
    if let Some(e) = h.exec
        && one("exec", v)
        && e.command.is_empty()
    {
        v.push((format!("{path}.exec.command"), "Required value".into()));
    }
    if let Some(g) = h.http_get
        && one("httpGet", v)
    {
        http_get(g, &format!("{path}.httpGet"), v);
    }
    if let Some(t) = h.tcp_socket
        && one("tcpSocket", v)
    {
        port(t.port.as_ref(), &format!("{path}.tcpSocket.port"), v);
    }
    if let Some(g) = h.grpc
        && one("grpc", v)
    {
        port_number(i64::from(g.port), &format!("{path}.grpc.port"), v);
    }
    if let Some(s) = h.sleep
        && one("sleep", v)
    {
        let grace = grace.unwrap_or(30);
        if s.seconds < 0 || s.seconds > grace {
            v.push((
                format!("{path}.sleep.seconds"),
                format!(
                    "Invalid value: {}: must be non-negative and less than terminationGracePeriodSeconds ({grace})",
                    s.seconds
                ),
            ));
        }
    }
    if count == 0 {
        v.push((
            path.to_string(),
            "Required value: must specify a handler type".into(),
        ));
    }
}

fn http_get(g: &HttpGetAction, path: &str, v: &mut Violations) {
    if g.path.is_empty() {
        v.push((format!("{path}.path"), "Required value".into()));
    }
    port(g.port.as_ref(), &format!("{path}.port"), v);
    if g.scheme != "HTTP" && g.scheme != "HTTPS" {
        v.push((
            format!("{path}.scheme"),
            not_supported(&g.scheme, &["HTTP", "HTTPS"]),
        ));
    }
    for h in &g.http_headers {
        let valid = !h.name.is_empty()
            && h.name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-');
        if !valid {
            v.push((
                format!("{path}.httpHeaders"),
                format!(
                    "Invalid value: {:?}: a valid HTTP header must consist of alphanumeric characters or '-' (e.g. 'X-Header-Name',  regex used for validation is '[-A-Za-z0-9]+')",
                    h.name
                ),
            ));
        }
    }
}

/// `ValidatePortNumOrName`: a number in 1..=65535, or a port name (an IANA_SVC_NAME). An
/// absent port is the number 0, as upstream's zero IntOrString.
fn port(p: Option<&IntOrString>, path: &str, v: &mut Violations) {
    match p.and_then(|p| p.value.as_ref()) {
        Some(int_or_string::Value::StrVal(name)) => {
            for e in port_name(name) {
                v.push((path.to_string(), format!("Invalid value: {name:?}: {e}")));
            }
        }
        Some(int_or_string::Value::IntVal(n)) => port_number(i64::from(*n), path, v),
        None => port_number(0, path, v),
    }
}

fn port_number(n: i64, path: &str, v: &mut Violations) {
    if !(1..=65535).contains(&n) {
        v.push((
            path.to_string(),
            format!("Invalid value: {n}: must be between 1 and 65535, inclusive"),
        ));
    }
}

#[cfg(test)]
mod tests {
    use kubestore_proto::core::v1::HttpHeader;

    use super::*;

    fn int(n: i32) -> Option<IntOrString> {
        Some(IntOrString {
            value: Some(int_or_string::Value::IntVal(n)),
        })
    }

    fn named(s: &str) -> Option<IntOrString> {
        Some(IntOrString {
            value: Some(int_or_string::Value::StrVal(s.into())),
        })
    }

    fn defaulted(p: Probe) -> Probe {
        Probe {
            timeout_seconds: 1,
            period_seconds: 10,
            success_threshold: 1,
            failure_threshold: 3,
            ..p
        }
    }

    fn check(c: &Container) -> Vec<String> {
        let mut v = Violations::new();
        container(c, "spec.containers[0]", 30, &mut v);
        v.iter().map(|(f, d)| format!("{f}: {d}")).collect()
    }

    #[test]
    fn upstreams_example_probes_are_valid() {
        let c = Container {
            liveness_probe: Some(defaulted(Probe {
                http_get: Some(HttpGetAction {
                    path: "/healthz".into(),
                    port: int(8080),
                    scheme: "HTTP".into(),
                    http_headers: vec![HttpHeader {
                        name: "Custom-Header".into(),
                        value: "Awesome".into(),
                    }],
                    ..Default::default()
                }),
                initial_delay_seconds: 3,
                ..Default::default()
            })),
            readiness_probe: Some(defaulted(Probe {
                tcp_socket: Some(TcpSocketAction {
                    port: named("liveness-port"),
                    host: String::new(),
                }),
                ..Default::default()
            })),
            startup_probe: Some(defaulted(Probe {
                grpc: Some(GrpcAction {
                    port: 2379,
                    service: Some(String::new()),
                }),
                ..Default::default()
            })),
            lifecycle: Some(Lifecycle {
                post_start: Some(LifecycleHandler {
                    exec: Some(ExecAction {
                        command: vec!["/bin/sh".into()],
                    }),
                    ..Default::default()
                }),
                pre_stop: Some(LifecycleHandler {
                    sleep: Some(SleepAction { seconds: 5 }),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert!(check(&c).is_empty(), "{:?}", check(&c));
    }

    #[test]
    fn bad_probes_and_hooks_are_refused_in_upstreams_words() {
        let c = Container {
            liveness_probe: Some(Probe {
                success_threshold: 2,
                ..defaulted(Probe::default())
            }),
            readiness_probe: Some(defaulted(Probe {
                exec: Some(ExecAction::default()),
                http_get: Some(HttpGetAction {
                    path: "/".into(),
                    port: int(80),
                    scheme: "HTTP".into(),
                    ..Default::default()
                }),
                termination_grace_period_seconds: Some(5),
                ..Default::default()
            })),
            startup_probe: Some(Probe {
                period_seconds: -1,
                ..defaulted(Probe {
                    tcp_socket: Some(TcpSocketAction {
                        port: named("8080"),
                        host: String::new(),
                    }),
                    ..Default::default()
                })
            }),
            lifecycle: Some(Lifecycle {
                post_start: Some(LifecycleHandler {
                    http_get: Some(HttpGetAction {
                        path: "/".into(),
                        port: int(70000),
                        scheme: "FTP".into(),
                        ..Default::default()
                    }),
                    ..Default::default()
                }),
                pre_stop: Some(LifecycleHandler {
                    sleep: Some(SleepAction { seconds: 31 }),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        };
        let at = "spec.containers[0]";
        assert_eq!(
            check(&c),
            [
                format!(
                    "{at}.lifecycle.postStart.httpGet.port: Invalid value: 70000: must be between 1 and 65535, inclusive"
                ),
                format!(
                    "{at}.lifecycle.postStart.httpGet.scheme: Unsupported value: \"FTP\": supported values: \"HTTP\", \"HTTPS\""
                ),
                format!(
                    "{at}.lifecycle.preStop.sleep.seconds: Invalid value: 31: must be non-negative and less than terminationGracePeriodSeconds (30)"
                ),
                format!("{at}.livenessProbe: Required value: must specify a handler type"),
                format!("{at}.livenessProbe.successThreshold: Invalid value: 2: must be 1"),
                format!(
                    "{at}.readinessProbe.terminationGracePeriodSeconds: Invalid value: 5: must not be set for readinessProbes"
                ),
                format!("{at}.readinessProbe.exec.command: Required value"),
                format!(
                    "{at}.readinessProbe.httpGet: Forbidden: may not specify more than 1 handler type"
                ),
                format!(
                    "{at}.startupProbe.tcpSocket.port: Invalid value: \"8080\": must contain at least one letter (a-z)"
                ),
                format!(
                    "{at}.startupProbe.periodSeconds: Invalid value: -1: must be greater than or equal to 0"
                ),
            ]
        );
        let mut v = Violations::new();
        init_container(&c, "spec.initContainers[0]", &mut v);
        assert_eq!(v.len(), 4);
    }
}
