//! Validation of a pod's spec: upstream's `ValidatePodSpec`, `validateContainers`,
//! `validateInitContainers`, `validateContainerCommon` and `validateContainersOnlyForPod`
//! (`pkg/apis/core/validation/validation.go`, 1.33), in their order, with their paths and
//! messages; `ValidatePodCreate`'s additions; and `ValidatePodUpdate`'s rules of what an update
//! may change. Each concern has its module: volumes, mounts and devices (`volumes` and its
//! `volume_*` files), environment sources (`env`), probes and hooks (`probes`), security
//! contexts and their annotations (`security`), scheduling (`scheduling`), name resolution
//! (`dns`), dynamic resource claims and pod-level resources (`claims`).
//!
//! Init containers with `restartPolicy: Always` are sidecars: they take probes, hooks and a
//! resize policy as app containers do. Every field of the 1.33 Pod is checked as if its
//! feature gate were on (the README's Pod rows).

use std::collections::BTreeSet;

use kubestore_proto::core::v1::{Container, PodSpec};

use super::hugepages;

mod claims;
mod dns;
mod env;
mod probes;
pub(crate) mod scheduling;
mod security;
mod volumes;
use crate::{
    quantity::Quantity,
    validation::{dns1123_label, dns1123_subdomain, label_value, qualified_name},
    violations::Violations,
};

/// Upstream's `updatablePodSpecFields`, as its Forbidden message lists them (joined by `,`).
/// Upstream's message goes on with a Go diff of the specs, which we leave out; the message is
/// longer than a violation's bound (`violations`) and is cut there, as any long one is.
const UPDATABLE: &str = "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

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

/// Go's `%#v` of a string slice: `[]string{"a", "b"}`, or `[]string(nil)` when empty (an empty
/// list and an absent one are the same here).
pub(super) fn go_strings(items: &[String]) -> String {
    if items.is_empty() {
        return "[]string(nil)".into();
    }
    let quoted: Vec<String> = items.iter().map(|s| format!("{s:?}")).collect();
    format!("[]string{{{}}}", quoted.join(", "))
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
    let grace = spec.termination_grace_period_seconds.unwrap_or(30);
    // ValidateVolumes comes first; each container's mounts and devices name its valid volumes.
    let volumes = volumes::validate(spec, v);
    // validateContainers.
    if spec.containers.is_empty() {
        v.push(("spec.containers".into(), "Required value".into()));
    } else {
        let mut names = BTreeSet::new();
        for (i, c) in spec.containers.iter().enumerate() {
            let path = format!("spec.containers[{i}]");
            container_common(c, &path, spec, &volumes, hugepages_ok, v);
            // Unique among app containers (an empty name too, as upstream); init containers
            // are checked against these below.
            if !names.insert(c.name.as_str()) {
                v.push((
                    format!("{path}.name"),
                    format!("Duplicate value: {:?}", c.name),
                ));
            }
            probes::container(c, &path, grace, v);
            if c.restart_policy.is_some() {
                v.push((
                    format!("{path}.restartPolicy"),
                    "Forbidden: may not be set for non-init containers".into(),
                ));
            }
        }
        host_port_conflicts(&spec.containers, "spec.containers", v);
    }
    // validateInitContainers: names unique across init and app containers.
    let mut names: BTreeSet<&str> = spec.containers.iter().map(|c| c.name.as_str()).collect();
    for (i, c) in spec.init_containers.iter().enumerate() {
        let path = format!("spec.initContainers[{i}]");
        container_common(c, &path, spec, &volumes, hugepages_ok, v);
        // validateInitContainerRestartPolicy: Always makes a sidecar, which runs beside the
        // app containers with their probes and hooks.
        let sidecar = match c.restart_policy.as_deref() {
            None => false,
            Some("Always") => true,
            Some(other) => {
                v.push((
                    format!("{path}.restartPolicy"),
                    not_supported(other, &["Always"]),
                ));
                false
            }
        };
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
        if sidecar {
            probes::container(c, &path, grace, v);
        } else {
            probes::init_container(c, &path, v);
        }
        // A resize policy on any init container is allowed in 1.33 (`AllowSidecarResizePolicy`
        // follows InPlacePodVerticalScaling, on by default): no rule here.
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
    security::validate(spec, v);
    scheduling::affinity_rules(spec, v);
    dns::config(spec.dns_config.as_ref(), &spec.dns_policy, v);
    for (i, g) in spec.readiness_gates.iter().enumerate() {
        if let Some(e) = qualified_name(&g.condition_type) {
            v.push((
                format!("spec.readinessGates[{i}].conditionType"),
                format!("Invalid value: {:?}: {e}", g.condition_type),
            ));
        }
    }
    scheduling::gates_and_spread(spec, v);
    security::pod_rules(spec, v);
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
    scheduling::tolerations_rules(spec, v);
    dns::host_aliases(&spec.host_aliases, v);
    subdomain("spec.priorityClassName", &spec.priority_class_name, v);
    if let Some(name) = &spec.runtime_class_name
        && let Some(e) = dns1123_subdomain(name)
    {
        v.push((
            "spec.runtimeClassName".into(),
            format!("Invalid value: {name:?}: {e}"),
        ));
    }
    if let Some(policy) = &spec.preemption_policy {
        one_of(
            "spec.preemptionPolicy".into(),
            policy,
            &["PreemptLowerPriority", "Never"],
            v,
        );
    }
    claims::pod(spec, v);
    security::os(spec, v);
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
    // validatePodMetadataAndSpec's pod-only rule, after the whole spec.
    volumes::service_account_tokens(spec, v);
}

/// What upstream's `ValidatePodCreate` adds to the spec's rules: ephemeral containers come only
/// through their own subresource, and a pod with scheduling gates has no node yet.
pub fn validate_spec_create(
    spec: &PodSpec,
    annotations: &std::collections::BTreeMap<String, String>,
    v: &mut Violations,
) {
    if !spec.ephemeral_containers.is_empty() {
        v.push((
            "spec.ephemeralContainers".into(),
            "Forbidden: cannot be set on create".into(),
        ));
    }
    scheduling::validate_create(spec, v);
    security::annotations_create(annotations, spec, v);
}

/// Upstream's `ValidatePodSpecificAnnotations` of the security annotations (seccomp, AppArmor),
/// checked on create and update before the spec.
pub fn validate_annotations(
    annotations: &std::collections::BTreeMap<String, String>,
    spec: &PodSpec,
    v: &mut Violations,
) {
    security::annotations(annotations, spec, v);
}

/// Upstream's `ValidatePodSpecificAnnotationUpdates`: AppArmor annotations never change.
pub fn validate_annotations_update(
    new: &std::collections::BTreeMap<String, String>,
    old: &std::collections::BTreeMap<String, String>,
    v: &mut Violations,
) {
    security::annotations_update(new, old, v);
}

/// Upstream's `validateContainerCommon`, for one container at `path`.
fn container_common(
    c: &Container,
    path: &str,
    spec: &PodSpec,
    volumes: &volumes::Valid<'_>,
    hugepages_ok: bool,
    v: &mut Violations,
) {
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
    volumes::container(c, path, volumes, v);
    one_of(
        f("imagePullPolicy"),
        &c.image_pull_policy,
        &["Always", "IfNotPresent", "Never"],
        v,
    );
    resources(c, path, hugepages_ok, v);
    resize_policy(c, path, &spec.restart_policy, v);
    security::container(
        c.security_context.as_ref(),
        path,
        security::host_users(spec),
        v,
    );
}

/// Upstream's `validateResizePolicy`: cpu and memory, each at most once, each NotRequired or
/// RestartContainer, and only NotRequired in a pod that never restarts containers.
fn resize_policy(c: &Container, path: &str, pod_restart_policy: &str, v: &mut Violations) {
    let list = format!("{path}.resizePolicy");
    let mut seen = BTreeSet::new();
    for (i, p) in c.resize_policy.iter().enumerate() {
        if !seen.insert(p.resource_name.as_str()) {
            v.push((
                format!("{list}[{i}]"),
                format!("Duplicate value: {:?}", p.resource_name),
            ));
        }
        match p.resource_name.as_str() {
            "cpu" | "memory" => {}
            "" => v.push((list.clone(), "Required value".into())),
            other => v.push((list.clone(), not_supported(other, &["cpu", "memory"]))),
        }
        match p.restart_policy.as_str() {
            "NotRequired" | "RestartContainer" => {}
            "" => v.push((list.clone(), "Required value".into())),
            other => v.push((
                list.clone(),
                not_supported(other, &["NotRequired", "RestartContainer"]),
            )),
        }
        if pod_restart_policy == "Never" && p.restart_policy != "NotRequired" {
            v.push((
                list.clone(),
                format!(
                    "Invalid value: {:?}: must be 'NotRequired' when `restartPolicy` is 'Never'",
                    p.restart_policy
                ),
            ));
        }
    }
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

/// What `ValidatePodUpdate` adds to the spec's own rules: only images, `activeDeadlineSeconds`
/// (set, or lowered), tolerations (added), scheduling gates (removed) and, while the pod is
/// gated, its node selector and required node affinity (narrowed) may change.
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
    // Tolerations may only be added (or their tolerationSeconds changed), scheduling gates
    // only removed.
    scheduling::update::only_added_tolerations(&new.tolerations, &old.tolerations, v);
    scheduling::update::only_deleted_gates(&new.scheduling_gates, &old.scheduling_gates, v);
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
    munged.scheduling_gates = old.scheduling_gates.clone();
    munged.tolerations = old.tolerations.clone();
    // A negative grace period may become 1 (ours are stored as 1 already, `pod_defaults`).
    if old.termination_grace_period_seconds.is_some_and(|g| g < 0)
        && munged.termination_grace_period_seconds == Some(1)
    {
        munged.termination_grace_period_seconds = old.termination_grace_period_seconds;
    }
    // A gated pod may gain node selector entries and narrow its required node affinity.
    scheduling::update::gated_changes(&mut munged, old, v);
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
