//! Validation of a pod's spec, for the fields our Pod carries: upstream's `ValidatePodSpec`,
//! `validateContainers`, `validateInitContainers`, `validateContainerCommon` and
//! `validateContainersOnlyForPod` (`pkg/apis/core/validation/validation.go`), in their order,
//! with their paths and messages; and `ValidatePodUpdate`'s rules of what an update may change.
//!
//! Differences, each because our Pod has no such field: volume mounts are not checked against
//! `spec.volumes` (upstream's `NotFound` on a mount's name), and a `dnsPolicy` of `None` is
//! always refused for its missing `dnsConfig`, in upstream's words. The rules of the container
//! fields we do not model (security context, restartPolicy of sidecars) do not apply. Environment
//! variables' sources (`valueFrom`, `envFrom`) are checked in `env`, probes and hooks in `probes`.

use std::collections::BTreeSet;

use kubestore_proto::core::v1::{Container, PodSpec};

use super::hugepages;

mod env;
mod probes;
use crate::{
    quantity::Quantity,
    validation::{dns1123_label, dns1123_subdomain, label_value, qualified_name},
    violations::Violations,
};

/// Upstream's `updatablePodSpecFields` that our Pod has, as its Forbidden message lists them.
/// Upstream's list goes on with `spec.tolerations` (not modelled) and a negative
/// `spec.terminationGracePeriodSeconds` set to 1 (ours are 1 already, `pod_defaults`), and
/// its message with a Go diff of the specs; the message stays within a violation's bound
/// (`violations`) without them.
const UPDATABLE: &str =
    "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`";

/// Largest `activeDeadlineSeconds` (Go's `math.MaxInt32`).
const MAX_INT32: i64 = i32::MAX as i64;

/// Upstream's `field.NotSupported` description.
fn not_supported(value: &str, supported: &[&str]) -> String {
    let quoted: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
    format!(
        "Unsupported value: {value:?}: supported values: {}",
        quoted.join(", ")
    )
}

/// A required value from a closed set (upstream's `validateRestartPolicy`, `validateDNSPolicy`,
/// `validatePullPolicy`, the termination message policy): Required when empty.
fn one_of(path: String, value: &str, supported: &[&str], v: &mut Violations) {
    if value.is_empty() {
        v.push((path, "Required value".into()));
    } else if !supported.contains(&value) {
        v.push((path, not_supported(value, supported)));
    }
}

/// The rules of a pod spec (upstream's `ValidatePodSpec` and the pod-only container rules);
/// `allow_indivisible_hugepages` relaxes one for an update of a pod stored with such
/// quantities (`hugepages`: upstream's validation ratcheting).
pub fn validate_spec(
    spec: Option<&PodSpec>,
    allow_indivisible_hugepages: bool,
    v: &mut Violations,
) {
    let Some(spec) = spec else {
        v.push(("spec".into(), "Required value".into()));
        return;
    };
    if let Some(problem) = spec
        .termination_grace_period_seconds
        .and_then(crate::store::graceful::grace_period_problem)
    {
        v.push(("spec.terminationGracePeriodSeconds".into(), problem));
    }
    let hugepages_ok = allow_indivisible_hugepages;
    // validateContainers.
    if spec.containers.is_empty() {
        v.push(("spec.containers".into(), "Required value".into()));
    } else {
        let mut names = BTreeSet::new();
        let grace = spec.termination_grace_period_seconds.unwrap_or(30);
        for (i, c) in spec.containers.iter().enumerate() {
            let path = format!("spec.containers[{i}]");
            probes::container(c, &path, grace, v);
            container_common(c, &path, hugepages_ok, v);
            // Unique among app containers (an empty name too, as upstream); init containers
            // are checked against these below.
            if !names.insert(c.name.as_str()) {
                v.push((
                    format!("{path}.name"),
                    format!("Duplicate value: {:?}", c.name),
                ));
            }
        }
        host_port_conflicts(&spec.containers, "spec.containers", v);
    }
    // validateInitContainers: names unique across init and app containers.
    let mut names: BTreeSet<&str> = spec.containers.iter().map(|c| c.name.as_str()).collect();
    for (i, c) in spec.init_containers.iter().enumerate() {
        let path = format!("spec.initContainers[{i}]");
        probes::init_container(c, &path, v);
        container_common(c, &path, hugepages_ok, v);
        if names.contains(c.name.as_str()) {
            v.push((
                format!("{path}.name"),
                format!("Duplicate value: {:?}", c.name),
            ));
        } else if !c.name.is_empty() {
            names.insert(c.name.as_str());
        }
        // Init containers run one at a time: each is checked alone (and, as upstream, under
        // the index 0 whatever its own).
        host_port_conflicts(std::slice::from_ref(c), "spec.initContainers", v);
    }
    // validatePodHostNetworkDeps.
    if spec.host_network {
        for (i, c) in spec.containers.iter().enumerate() {
            for (j, p) in c.ports.iter().enumerate() {
                if p.host_port != p.container_port {
                    v.push((
                        format!("spec.containers[{i}].ports[{j}].hostPort"),
                        format!(
                            "Invalid value: {}: must match `containerPort` when `hostNetwork` is true",
                            p.host_port
                        ),
                    ));
                }
            }
        }
    }
    one_of(
        "spec.restartPolicy".into(),
        &spec.restart_policy,
        &["Always", "OnFailure", "Never"],
        v,
    );
    one_of(
        "spec.dnsPolicy".into(),
        &spec.dns_policy,
        &["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"],
        v,
    );
    for (k, val) in &spec.node_selector {
        if let Some(e) = qualified_name(k) {
            v.push((
                "spec.nodeSelector".into(),
                format!("Invalid value: {k:?}: {e}"),
            ));
        }
        if let Some(e) = label_value(val) {
            v.push((
                "spec.nodeSelector".into(),
                format!("Invalid value: {val:?}: {e}"),
            ));
        }
    }
    // validatePodDNSConfig: None needs a dnsConfig, which our Pod cannot carry.
    if spec.dns_policy == "None" {
        v.push((
            "spec.dnsConfig".into(),
            "Required value: must provide `dnsConfig` when `dnsPolicy` is None".into(),
        ));
    }
    for (i, g) in spec.readiness_gates.iter().enumerate() {
        if let Some(e) = qualified_name(&g.condition_type) {
            v.push((
                format!("spec.readinessGates[{i}].conditionType"),
                format!("Invalid value: {:?}: {e}", g.condition_type),
            ));
        }
    }
    let subdomain = |path: &str, value: &str, v: &mut Violations| {
        if !value.is_empty()
            && let Some(e) = dns1123_subdomain(value)
        {
            v.push((path.into(), format!("Invalid value: {value:?}: {e}")));
        }
    };
    subdomain("spec.serviceAccountName", &spec.service_account_name, v);
    subdomain("spec.nodeName", &spec.node_name, v);
    if let Some(d) = spec.active_deadline_seconds
        && !(1..=MAX_INT32).contains(&d)
    {
        v.push((
            "spec.activeDeadlineSeconds".into(),
            format!("Invalid value: {d}: must be between 1 and {MAX_INT32}, inclusive"),
        ));
    }
    for (path, value) in [
        ("spec.hostname", &spec.hostname),
        ("spec.subdomain", &spec.subdomain),
    ] {
        if !value.is_empty()
            && let Some(e) = dns1123_label(value)
        {
            v.push((path.into(), format!("Invalid value: {value:?}: {e}")));
        }
    }
    subdomain("spec.priorityClassName", &spec.priority_class_name, v);
    // validateContainersOnlyForPod.
    for (list, containers) in [
        ("containers", &spec.containers),
        ("initContainers", &spec.init_containers),
    ] {
        for (i, c) in containers.iter().enumerate() {
            if c.image.trim() != c.image {
                v.push((
                    format!("spec.{list}[{i}].image"),
                    format!(
                        "Invalid value: {:?}: must not have leading or trailing whitespace",
                        c.image
                    ),
                ));
            }
        }
    }
}

/// Upstream's `validateContainerCommon`, for one container at `path`.
fn container_common(c: &Container, path: &str, hugepages_ok: bool, v: &mut Violations) {
    let f = |s: &str| format!("{path}.{s}");
    if c.name.is_empty() {
        v.push((f("name"), "Required value".into()));
    } else if let Some(e) = dns1123_label(&c.name) {
        v.push((f("name"), format!("Invalid value: {:?}: {e}", c.name)));
    }
    if c.image.is_empty() {
        v.push((f("image"), "Required value".into()));
    }
    one_of(
        f("terminationMessagePolicy"),
        &c.termination_message_policy,
        &["File", "FallbackToLogsOnError"],
        v,
    );
    ports(c, path, v);
    for (i, e) in c.env.iter().enumerate() {
        env_name(&e.name, format!("{path}.env[{i}].name"), v);
        if let Some(from) = &e.value_from {
            env::value_from(&e.value, from, &format!("{path}.env[{i}].valueFrom"), v);
        }
    }
    env::env_from(&c.env_from, &format!("{path}.envFrom"), v);
    volume_mounts(c, path, v);
    one_of(
        f("imagePullPolicy"),
        &c.image_pull_policy,
        &["Always", "IfNotPresent", "Never"],
        v,
    );
    resources(c, path, hugepages_ok, v);
}

/// Upstream's `validateContainerPorts`.
fn ports(c: &Container, path: &str, v: &mut Violations) {
    let mut names = BTreeSet::new();
    for (i, p) in c.ports.iter().enumerate() {
        let f = |s: &str| format!("{path}.ports[{i}].{s}");
        if !p.name.is_empty() {
            let problems = port_name(&p.name);
            if !problems.is_empty() {
                for e in problems {
                    v.push((f("name"), format!("Invalid value: {:?}: {e}", p.name)));
                }
            } else if !names.insert(p.name.as_str()) {
                v.push((f("name"), format!("Duplicate value: {:?}", p.name)));
            }
        }
        if p.container_port == 0 {
            v.push((f("containerPort"), "Required value".into()));
        } else if !(1..=65535).contains(&p.container_port) {
            v.push((
                f("containerPort"),
                format!(
                    "Invalid value: {}: must be between 1 and 65535, inclusive",
                    p.container_port
                ),
            ));
        }
        if p.host_port != 0 && !(1..=65535).contains(&p.host_port) {
            v.push((
                f("hostPort"),
                format!(
                    "Invalid value: {}: must be between 1 and 65535, inclusive",
                    p.host_port
                ),
            ));
        }
        // `sets.List` of the supported protocols: sorted.
        one_of(f("protocol"), &p.protocol, &["SCTP", "TCP", "UDP"], v);
    }
}

/// Upstream's `IsValidPortName` (an IANA_SVC_NAME): every problem, in its order.
pub fn port_name(name: &str) -> Vec<&'static str> {
    let mut problems = Vec::new();
    if name.len() > 15 {
        problems.push("must be no more than 15 characters");
    }
    let b = name.as_bytes();
    if b.is_empty()
        || !b
            .iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
    {
        problems.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)");
    }
    if !b.iter().any(u8::is_ascii_lowercase) {
        problems.push("must contain at least one letter (a-z)");
    }
    if name.contains("--") {
        problems.push("must not contain consecutive hyphens");
    }
    if b.first() == Some(&b'-') || b.last() == Some(&b'-') {
        problems.push("must not begin or end with a hyphen");
    }
    problems
}

/// Upstream's `ValidateEnv` name rule with `RelaxedEnvironmentVariableValidation` (GA and
/// locked on since 1.34, `IsRelaxedEnvVarName`): printable ASCII other than `=`.
fn env_name(name: &str, path: String, v: &mut Violations) {
    if name.is_empty() {
        v.push((path, "Required value".into()));
    } else {
        env::relaxed_name(name, path, v);
    }
}

/// Upstream's `ValidateVolumeMounts`, but for the volumes it would look the names up in.
fn volume_mounts(c: &Container, path: &str, v: &mut Violations) {
    let mut mount_paths = BTreeSet::new();
    for (i, m) in c.volume_mounts.iter().enumerate() {
        let f = |s: &str| format!("{path}.volumeMounts[{i}].{s}");
        if m.name.is_empty() {
            v.push((f("name"), "Required value".into()));
        }
        if m.mount_path.is_empty() {
            v.push((f("mountPath"), "Required value".into()));
        }
        if !mount_paths.insert(m.mount_path.as_str()) {
            v.push((
                f("mountPath"),
                format!("Invalid value: {:?}: must be unique", m.mount_path),
            ));
        }
        if !m.sub_path.is_empty() {
            // validateLocalDescendingPath, on the list's path (`volumeMounts.subPath`), as
            // upstream reports it.
            let at = format!("{path}.volumeMounts.subPath");
            if m.sub_path.starts_with('/') {
                v.push((
                    at.clone(),
                    format!("Invalid value: {:?}: must be a relative path", m.sub_path),
                ));
            }
            if m.sub_path.split('/').any(|part| part == "..") {
                v.push((
                    at,
                    format!("Invalid value: {:?}: must not contain '..'", m.sub_path),
                ));
            }
        }
    }
}

/// Quantities of requests and limits, requests at most limits, and the hugepages rules.
fn resources(c: &Container, path: &str, hugepages_ok: bool, v: &mut Violations) {
    let f = |s: &str| format!("{path}.{s}");
    let res = c.resources.clone().unwrap_or_default();
    let mut parsed = std::collections::BTreeMap::new();
    for (kind, map) in [("requests", &res.requests), ("limits", &res.limits)] {
        for (r, q) in map {
            match Quantity::parse(q) {
                Err(e) => v.push((
                    f(&format!("resources.{kind}[{r}]")),
                    format!("Invalid value: {q:?}: {e}"),
                )),
                Ok(n) if n < Quantity::ZERO => v.push((
                    f(&format!("resources.{kind}[{r}]")),
                    format!("Invalid value: {q:?}: must be greater than or equal to 0"),
                )),
                Ok(n) => {
                    parsed.insert((kind, r.as_str()), n);
                }
            }
        }
    }
    // Hugepages requests must equal their limits: `hugepages` says so, in upstream's words.
    for ((kind, r), req) in &parsed {
        if *kind == "requests"
            && !hugepages::is_hugepages(r)
            && let Some(lim) = parsed.get(&("limits", r))
            && req > lim
        {
            v.push((
                f(&format!("resources.requests[{r}]")),
                format!(
                    "Invalid value: {:?}: must be less than or equal to {r} limit of {:?}",
                    res.requests[*r], res.limits[*r]
                ),
            ));
        }
    }
    hugepages::validate(&res, &f("resources"), hugepages_ok, v);
}

/// Upstream's `AccumulateUniqueHostPorts`: a host port (with its protocol and host IP) used
/// twice.
fn host_port_conflicts(containers: &[Container], list: &str, v: &mut Violations) {
    let mut seen = BTreeSet::new();
    for (i, c) in containers.iter().enumerate() {
        for (j, p) in c.ports.iter().enumerate() {
            if p.host_port == 0 {
                continue;
            }
            let key = format!("{}/{}/{}", p.protocol, p.host_ip, p.host_port);
            if seen.contains(&key) {
                v.push((
                    format!("{list}[{i}].ports[{j}].hostPort"),
                    format!("Duplicate value: {key:?}"),
                ));
            } else {
                seen.insert(key);
            }
        }
    }
}

/// Upstream's `ValidateContainerUpdates` for one list: the same number of containers, and
/// images present without surrounding whitespace. False when the lists differ in length
/// (upstream stops there).
fn container_updates(new: &[Container], old: &[Container], list: &str, v: &mut Violations) -> bool {
    if new.len() != old.len() {
        v.push((
            format!("spec.{list}"),
            "Forbidden: pod updates may not add or remove containers".into(),
        ));
        return false;
    }
    for (i, c) in new.iter().enumerate() {
        if c.image.is_empty() {
            v.push((format!("spec.{list}[{i}].image"), "Required value".into()));
        }
        if c.image.trim() != c.image {
            v.push((
                format!("spec.{list}[{i}].image"),
                format!(
                    "Invalid value: {:?}: must not have leading or trailing whitespace",
                    c.image
                ),
            ));
        }
    }
    true
}

/// What `ValidatePodUpdate` adds to the spec's own rules: only images and
/// `activeDeadlineSeconds` (set, or lowered) may change.
pub fn validate_spec_update(new: &PodSpec, old: &PodSpec, v: &mut Violations) {
    if !container_updates(&new.containers, &old.containers, "containers", v)
        || !container_updates(
            &new.init_containers,
            &old.init_containers,
            "initContainers",
            v,
        )
    {
        return;
    }
    match (new.active_deadline_seconds, old.active_deadline_seconds) {
        (Some(n), _) if !(0..=MAX_INT32).contains(&n) => {
            v.push((
                "spec.activeDeadlineSeconds".into(),
                format!("Invalid value: {n}: must be between 0 and {MAX_INT32}, inclusive"),
            ));
            return;
        }
        (Some(n), Some(o)) if o < n => {
            v.push((
                "spec.activeDeadlineSeconds".into(),
                format!("Invalid value: {n}: must be less than or equal to previous value"),
            ));
            return;
        }
        (None, Some(_)) => v.push((
            "spec.activeDeadlineSeconds".into(),
            "Invalid value: \"null\": must not update from a positive integer to nil value".into(),
        )),
        _ => {}
    }
    if new == old {
        return;
    }
    // Everything else is immutable: compare with what may change put back.
    let mut munged = new.clone();
    for (c, o) in munged.containers.iter_mut().zip(&old.containers) {
        c.image = o.image.clone();
    }
    for (c, o) in munged.init_containers.iter_mut().zip(&old.init_containers) {
        c.image = o.image.clone();
    }
    munged.active_deadline_seconds = old.active_deadline_seconds;
    if munged != *old {
        v.push((
            "spec".into(),
            format!("Forbidden: pod updates may not change fields other than {UPDATABLE}"),
        ));
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod update_tests;
