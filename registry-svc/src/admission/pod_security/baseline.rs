//! The baseline level's checks (upstream's `policy/check_*.go` whose level is
//! `api.LevelBaseline`): one function per versioned definition (upstream's `CheckPod`), named
//! after the check and the minor version it starts at. Each returns `None` when the pod passes,
//! else upstream's reason and detail. The registry that picks them is in `checks`.

use std::collections::BTreeSet;

use serde_json::Value;

use super::checks::{
    Failure, annotation, annotations, boolean, containers, containers_phrase, forbid, go_quote,
    integer, items, join_quote, object, pluralize, pod_security, profile_type, setters, string,
    strings, valid_seccomp_type,
};

// ---- appArmorProfile (check_appArmorProfile.go) ----

/// The legacy per-container AppArmor annotations' prefix.
const APP_ARMOR_ANNOTATION_PREFIX: &str = "container.apparmor.security.beta.kubernetes.io/";

/// The `appArmorProfile.type`s allowed (`allowedProfileType`): the runtime's default or one
/// loaded on the node; `Unconfined` (or anything else) turns AppArmor off.
fn allowed_app_armor_type(t: &str) -> bool {
    matches!(t, "RuntimeDefault" | "Localhost")
}

/// The legacy annotation values allowed (`allowedAnnotationValue`): unset, the runtime's
/// default, or a profile on the node.
fn allowed_app_armor_annotation(value: &str) -> bool {
    value.is_empty() || value == "runtime/default" || value.starts_with("localhost/")
}

/// The pod's legacy AppArmor annotations with a forbidden value, as `key="value"`, sorted
/// (upstream sorts them after ranging over the map).
fn forbidden_app_armor_annotations(meta: &Value) -> Vec<String> {
    let mut found: Vec<String> = annotations(meta)
        .filter(|(k, v)| {
            k.starts_with(APP_ARMOR_ANNOTATION_PREFIX) && !allowed_app_armor_annotation(v)
        })
        .map(|(k, v)| format!("{k}={}", go_quote(v)))
        .collect();
    found.sort();
    found
}

/// AppArmor may not be turned off, by the pod's or a container's `appArmorProfile` or by the
/// legacy annotations. The detail lists the bad types (sorted), then the bad annotations.
pub(super) fn app_armor_profile_1_0(meta: &Value, spec: &Value) -> Option<Failure> {
    let mut bad_types = BTreeSet::new();
    let pod_bad = match profile_type(pod_security(spec, "appArmorProfile")) {
        Some(t) if !allowed_app_armor_type(t) => {
            bad_types.insert(t);
            true
        }
        _ => false,
    };
    let mut bad_containers = Vec::new();
    for c in containers(spec) {
        let profile = profile_type(c.security("appArmorProfile"));
        if let Some(t) = profile.filter(|t| !allowed_app_armor_type(t)) {
            bad_containers.push(c.name);
            bad_types.insert(t);
        }
    }
    let mut who = setters(pod_bad, &bad_containers);
    let mut bad_values: Vec<String> = bad_types.into_iter().map(str::to_string).collect();
    let bad_annotations = forbidden_app_armor_annotations(meta);
    if !bad_annotations.is_empty() {
        who.push(pluralize("annotation", "annotations", bad_annotations.len()).to_string());
        bad_values.extend(bad_annotations);
    }
    if who.is_empty() {
        return None;
    }
    forbid(
        pluralize(
            "forbidden AppArmor profile",
            "forbidden AppArmor profiles",
            bad_values.len(),
        ),
        format!(
            "{} must not set AppArmor profile type to {}",
            who.join(" and "),
            join_quote(bad_values)
        ),
    )
}

// ---- capabilities_baseline (check_capabilities_baseline.go) ----

/// The capabilities a container runtime grants by default: adding them changes nothing.
const DEFAULT_CAPABILITIES: [&str; 13] = [
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];

/// Containers may add only capabilities of the default set.
pub(super) fn capabilities_1_0(_meta: &Value, spec: &Value) -> Option<Failure> {
    let mut bad_containers = Vec::new();
    let mut non_default = BTreeSet::new();
    for c in containers(spec) {
        let Some(caps) = c.capabilities() else {
            continue;
        };
        let mut valid = true;
        for cap in strings(caps, "add").filter(|cap| !DEFAULT_CAPABILITIES.contains(cap)) {
            valid = false;
            non_default.insert(cap);
        }
        if !valid {
            bad_containers.push(c.name);
        }
    }
    if bad_containers.is_empty() {
        return None;
    }
    forbid(
        "non-default capabilities",
        format!(
            "{} must not include {} in securityContext.capabilities.add",
            containers_phrase(&bad_containers),
            join_quote(non_default)
        ),
    )
}

// ---- hostNamespaces, hostPathVolumes, hostPorts ----

/// The pod may not share the node's network, PID or IPC namespace.
pub(super) fn host_namespaces_1_0(_meta: &Value, spec: &Value) -> Option<Failure> {
    let shared: Vec<&str> = [
        ("hostNetwork", "hostNetwork=true"),
        ("hostPID", "hostPID=true"),
        ("hostIPC", "hostIPC=true"),
    ]
    .into_iter()
    .filter(|(field, _)| boolean(spec, field) == Some(true))
    .map(|(_, said)| said)
    .collect();
    if shared.is_empty() {
        return None;
    }
    forbid("host namespaces", shared.join(", "))
}

/// No volume may mount a path of the node.
pub(super) fn host_path_volumes_1_0(_meta: &Value, spec: &Value) -> Option<Failure> {
    let bad: Vec<&str> = items(spec, "volumes")
        .iter()
        .filter(|v| object(v, "hostPath").is_some())
        .map(|v| string(v, "name").unwrap_or(""))
        .collect();
    if bad.is_empty() {
        return None;
    }
    forbid(
        "hostPath volumes",
        format!(
            "{} {}",
            pluralize("volume", "volumes", bad.len()),
            join_quote(bad)
        ),
    )
}

/// No container port may be bound on the node. The ports are listed as sorted strings (so
/// `10` before `9`), as upstream's string set lists them.
pub(super) fn host_ports_1_0(_meta: &Value, spec: &Value) -> Option<Failure> {
    let mut bad_containers = Vec::new();
    let mut ports = BTreeSet::new();
    for c in containers(spec) {
        let mut valid = true;
        for port in c.ports() {
            let host_port = integer(port, "hostPort").unwrap_or(0);
            if host_port != 0 {
                valid = false;
                ports.insert(host_port.to_string());
            }
        }
        if !valid {
            bad_containers.push(c.name);
        }
    }
    if bad_containers.is_empty() {
        return None;
    }
    let ports: Vec<String> = ports.into_iter().collect();
    forbid(
        "hostPort",
        format!(
            "{} {} {} {}",
            containers_phrase(&bad_containers),
            pluralize("uses", "use", bad_containers.len()),
            pluralize("hostPort", "hostPorts", ports.len()),
            ports.join(", ")
        ),
    )
}

// ---- privileged, procMount ----

/// No container may be privileged.
pub(super) fn privileged_1_0(_meta: &Value, spec: &Value) -> Option<Failure> {
    let bad: Vec<&str> = containers(spec)
        .filter(|c| c.security("privileged").and_then(Value::as_bool) == Some(true))
        .map(|c| c.name)
        .collect();
    if bad.is_empty() {
        return None;
    }
    forbid(
        "privileged",
        format!(
            "{} must not set securityContext.privileged=true",
            containers_phrase(&bad)
        ),
    )
}

/// Containers keep the default masks of `/proc` (`procMount` unset or `Default`).
pub(super) fn proc_mount_1_0(_meta: &Value, spec: &Value) -> Option<Failure> {
    let mut bad_containers = Vec::new();
    let mut bad_types = BTreeSet::new();
    for c in containers(spec) {
        let proc_mount = c.security("procMount").and_then(Value::as_str);
        if let Some(t) = proc_mount.filter(|t| *t != "Default") {
            bad_containers.push(c.name);
            bad_types.insert(t);
        }
    }
    if bad_containers.is_empty() {
        return None;
    }
    forbid(
        "procMount",
        format!(
            "{} must not set securityContext.procMount to {}",
            containers_phrase(&bad_containers),
            join_quote(bad_types)
        ),
    )
}

// ---- seLinuxOptions (check_seLinuxOptions.go) ----

/// The SELinux types allowed until 1.30 ("" is unset).
const SELINUX_TYPES_1_0: &[&str] = &["", "container_t", "container_init_t", "container_kvm_t"];

/// From 1.31, `container_engine_t` too (for container engines run in a container).
const SELINUX_TYPES_1_31: &[&str] = &[
    "",
    "container_t",
    "container_init_t",
    "container_kvm_t",
    "container_engine_t",
];

/// SELinux options up to 1.30.
pub(super) fn se_linux_options_1_0(_meta: &Value, spec: &Value) -> Option<Failure> {
    se_linux_options(spec, SELINUX_TYPES_1_0)
}

/// SELinux options from 1.31.
pub(super) fn se_linux_options_1_31(_meta: &Value, spec: &Value) -> Option<Failure> {
    se_linux_options(spec, SELINUX_TYPES_1_31)
}

/// What the pod's and containers' `seLinuxOptions` set that is forbidden, together.
#[derive(Default)]
struct SeLinuxFindings<'a> {
    bad_types: BTreeSet<&'a str>,
    user_set: bool,
    role_set: bool,
}

impl<'a> SeLinuxFindings<'a> {
    /// Notes what `options` sets that is forbidden; true when it sets nothing forbidden.
    fn inspect(&mut self, options: &'a Value, allowed: &[&str]) -> bool {
        let t = string(options, "type").unwrap_or("");
        let type_ok = allowed.contains(&t);
        if !type_ok {
            self.bad_types.insert(t);
        }
        let user_set = !string(options, "user").unwrap_or("").is_empty();
        let role_set = !string(options, "role").unwrap_or("").is_empty();
        self.user_set |= user_set;
        self.role_set |= role_set;
        type_ok && !user_set && !role_set
    }

    /// `types "a", "b"; user may not be set; role may not be set`, the parts that apply.
    fn describe(&self) -> String {
        let mut parts = Vec::new();
        if !self.bad_types.is_empty() {
            parts.push(format!(
                "{} {}",
                pluralize("type", "types", self.bad_types.len()),
                join_quote(&self.bad_types)
            ));
        }
        if self.user_set {
            parts.push("user may not be set".to_string());
        }
        if self.role_set {
            parts.push("role may not be set".to_string());
        }
        parts.join("; ")
    }
}

/// SELinux options may set only an `allowed` type, and no user or role.
fn se_linux_options(spec: &Value, allowed: &[&str]) -> Option<Failure> {
    let mut findings = SeLinuxFindings::default();
    let pod_bad = object_at(pod_security(spec, "seLinuxOptions"))
        .is_some_and(|options| !findings.inspect(options, allowed));
    let mut bad_containers = Vec::new();
    for c in containers(spec) {
        let options = object_at(c.security("seLinuxOptions"));
        if options.is_some_and(|o| !findings.inspect(o, allowed)) {
            bad_containers.push(c.name);
        }
    }
    let who = setters(pod_bad, &bad_containers);
    if who.is_empty() {
        return None;
    }
    forbid(
        "seLinuxOptions",
        format!(
            "{} set forbidden securityContext.seLinuxOptions: {}",
            who.join(" and "),
            findings.describe()
        ),
    )
}

/// `v` when it is an object (a Go struct pointer that is set).
fn object_at(v: Option<&Value>) -> Option<&Value> {
    v.filter(|o| o.is_object())
}

// ---- seccompProfile_baseline (check_seccompProfile_baseline.go) ----

/// The legacy pod-wide seccomp annotation (read until 1.18).
const SECCOMP_POD_ANNOTATION: &str = "seccomp.security.alpha.kubernetes.io/pod";

/// The legacy per-container seccomp annotations' prefix (read until 1.18).
const SECCOMP_CONTAINER_ANNOTATION_PREFIX: &str = "container.seccomp.security.alpha.kubernetes.io/";

/// The legacy annotation values allowed (`validSeccompAnnotationValue`). Unlike AppArmor's,
/// an empty value is not.
fn allowed_seccomp_annotation(value: &str) -> bool {
    value == "runtime/default" || value == "docker/default" || value.starts_with("localhost/")
}

/// `key="value"` when the pod has annotation `key` with a forbidden value.
fn forbidden_seccomp_annotation(meta: &Value, key: &str) -> Option<String> {
    let value = annotation(meta, key)?;
    (!allowed_seccomp_annotation(value)).then(|| format!("{key}={}", go_quote(value)))
}

/// Until 1.18 seccomp was set by annotations: the pod's, and each container's (by its name).
pub(super) fn seccomp_profile_1_0(meta: &Value, spec: &Value) -> Option<Failure> {
    let mut forbidden: BTreeSet<String> = BTreeSet::new();
    forbidden.extend(forbidden_seccomp_annotation(meta, SECCOMP_POD_ANNOTATION));
    for c in containers(spec) {
        let key = format!("{SECCOMP_CONTAINER_ANNOTATION_PREFIX}{}", c.name);
        forbidden.extend(forbidden_seccomp_annotation(meta, &key));
    }
    if forbidden.is_empty() {
        return None;
    }
    let forbidden: Vec<String> = forbidden.into_iter().collect();
    forbid(
        "seccompProfile",
        format!(
            "forbidden {} {}",
            pluralize("annotation", "annotations", forbidden.len()),
            forbidden.join(", ")
        ),
    )
}

/// From 1.19, a `seccompProfile` that is set (pod or container) must be `RuntimeDefault` or
/// `Localhost`; unset is allowed at baseline.
pub(super) fn seccomp_profile_1_19(_meta: &Value, spec: &Value) -> Option<Failure> {
    let mut bad_types = BTreeSet::new();
    let pod_bad = match profile_type(pod_security(spec, "seccompProfile")) {
        Some(t) if !valid_seccomp_type(t) => {
            bad_types.insert(t);
            true
        }
        _ => false,
    };
    let mut bad_containers = Vec::new();
    for c in containers(spec) {
        let profile = profile_type(c.security("seccompProfile"));
        if let Some(t) = profile.filter(|t| !valid_seccomp_type(t)) {
            bad_containers.push(c.name);
            bad_types.insert(t);
        }
    }
    let who = setters(pod_bad, &bad_containers);
    if who.is_empty() {
        return None;
    }
    forbid(
        "seccompProfile",
        format!(
            "{} must not set securityContext.seccompProfile.type to {}",
            who.join(" and "),
            join_quote(bad_types)
        ),
    )
}

// ---- sysctls (check_sysctls.go) ----

/// The sysctls safe since 1.0: namespaced, and isolated from other pods.
const SYSCTLS_1_0: &[&str] = &[
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_unprivileged_port_start",
];

/// Added in 1.27.
const SYSCTLS_ADDED_1_27: &[&str] = &["net.ipv4.ip_local_reserved_ports"];

/// Added in 1.29.
const SYSCTLS_ADDED_1_29: &[&str] = &[
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
];

/// Added in 1.32.
const SYSCTLS_ADDED_1_32: &[&str] = &["net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"];

/// Sysctls until 1.26.
pub(super) fn sysctls_1_0(_meta: &Value, spec: &Value) -> Option<Failure> {
    sysctls(spec, &[SYSCTLS_1_0])
}

/// Sysctls in 1.27 and 1.28.
pub(super) fn sysctls_1_27(_meta: &Value, spec: &Value) -> Option<Failure> {
    sysctls(spec, &[SYSCTLS_1_0, SYSCTLS_ADDED_1_27])
}

/// Sysctls from 1.29 to 1.31.
pub(super) fn sysctls_1_29(_meta: &Value, spec: &Value) -> Option<Failure> {
    sysctls(spec, &[SYSCTLS_1_0, SYSCTLS_ADDED_1_27, SYSCTLS_ADDED_1_29])
}

/// Sysctls from 1.32.
pub(super) fn sysctls_1_32(_meta: &Value, spec: &Value) -> Option<Failure> {
    sysctls(
        spec,
        &[
            SYSCTLS_1_0,
            SYSCTLS_ADDED_1_27,
            SYSCTLS_ADDED_1_29,
            SYSCTLS_ADDED_1_32,
        ],
    )
}

/// The pod may set only the sysctls of `allowed`; the detail lists the others in the pod's
/// order, unquoted, repeats included (as upstream).
fn sysctls(spec: &Value, allowed: &[&[&str]]) -> Option<Failure> {
    let forbidden: Vec<&str> = pod_security(spec, "sysctls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|s| string(s, "name").unwrap_or(""))
        .filter(|name| !allowed.iter().any(|set| set.contains(name)))
        .collect();
    if forbidden.is_empty() {
        return None;
    }
    forbid("forbidden sysctls", forbidden.join(", "))
}

// ---- windowsHostProcess (check_windowsHostProcess.go) ----

/// Whether `windowsOptions` (the pod's or a container's) sets `hostProcess: true`.
fn host_process(windows_options: Option<&Value>) -> bool {
    windows_options.and_then(|w| boolean(w, "hostProcess")) == Some(true)
}

/// Neither the pod nor a container may run as a Windows host process.
pub(super) fn windows_host_process_1_0(_meta: &Value, spec: &Value) -> Option<Failure> {
    let bad_containers: Vec<&str> = containers(spec)
        .filter(|c| host_process(c.security("windowsOptions")))
        .map(|c| c.name)
        .collect();
    let pod_bad = host_process(pod_security(spec, "windowsOptions"));
    let who = setters(pod_bad, &bad_containers);
    if who.is_empty() {
        return None;
    }
    forbid(
        "hostProcess",
        format!(
            "{} must not set securityContext.windowsOptions.hostProcess=true",
            who.join(" and ")
        ),
    )
}
