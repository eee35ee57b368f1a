//! ResourceQuota's arithmetic over Kubernetes JSON: what one object uses ([`usage`]), which of a
//! quota's keys a kind can charge ([`charges`]), whether a write fits a quota ([`check`]), the
//! usage of many objects ([`total`]) and the pod scopes ([`pod_in_scopes`]). Admission in
//! registry-svc charges writes with it and the controller-manager's quota controller recomputes
//! `status.used` with it, so both count alike, as upstream's admission plugin and controller
//! share their evaluators.
//!
//! Upstream's code: the evaluators (`pkg/quota/v1/evaluator/core`: `pods.go`, `services.go`,
//! `persistent_volume_claims.go`, `registry.go`; `staging/src/k8s.io/apiserver/pkg/quota/v1/
//! generic/evaluator.go` for object counts), the pod's requests and limits
//! (`staging/src/k8s.io/component-helpers/resource/helpers.go`: init containers' maximum,
//! sidecars, pod overhead, pod-level resources, the resources a resize left in the status), the
//! list arithmetic (`quota/v1/resources.go`) and the admission plugin's `CheckRequest` and
//! `prettyPrint` (`apiserver/pkg/admission/plugin/resourcequota/controller.go`).
//!
//! Deliberate differences:
//! - a [`Quantity`] keeps no Go `Format`, so amounts are written in binary notation (`52Gi`)
//!   where that is shorter than the decimal one, else in decimal SI (`1100m`, `64G`): what Go
//!   writes for memory given in binary units and everything else in decimal ones;
//! - [`check`] knows the quota's keys only through the write's usage, so the resources whose
//!   usage must be known (`status unknown`) are the quota's keys that usage names, where
//!   upstream takes every key the kind could charge;
//! - the one input besides the object: a pod past its deletion grace period is judged by this
//!   machine's clock (upstream's evaluator reads the apiserver's);
//! - upstream's `Constraints` (a quota on cpu or memory requires every container to ask for
//!   them: `must specify ...`) is the caller's;
//! - no evaluator for ResourceClaims: they are counted (`count/resourceclaims.resource.k8s.io`)
//!   but their devices are not; PVCs' VolumeAttributesClass scope is not known.

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value};

use crate::quantity::Quantity;

/// Resource names and amounts.
pub type Usage = BTreeMap<String, Quantity>;

const HUGEPAGES: &str = "hugepages-";
const REQUESTS: &str = "requests.";
/// The prefix of the implicit extended resources of device classes (DRA).
const DEVICE_CLASS: &str = "deviceclass.resource.kubernetes.io/";
/// `<class>.storageclass.storage.k8s.io/<resource>`: a PVC's usage by storage class.
const STORAGE_CLASS: &str = ".storageclass.storage.k8s.io/";
const STORAGE_CLASS_ANNOTATION: &str = "volume.beta.kubernetes.io/storage-class";

/// The names a pod can charge besides hugepages and extended resources (`podResources`).
const POD_RESOURCES: [&str; 11] = [
    "count/pods",
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
];
const SERVICE_RESOURCES: [&str; 4] = [
    "count/services",
    "services",
    "services.loadbalancers",
    "services.nodeports",
];
const PVC_RESOURCES: [&str; 2] = ["persistentvolumeclaims", "requests.storage"];

/// The legacy names of the core kinds that are only counted (`legacyObjectCountAliases`).
fn legacy_alias(group: &str, resource: &str) -> Option<&'static str> {
    if !group.is_empty() {
        return None;
    }
    match resource {
        "configmaps" => Some("configmaps"),
        "resourcequotas" => Some("resourcequotas"),
        "replicationcontrollers" => Some("replicationcontrollers"),
        "secrets" => Some("secrets"),
        _ => None,
    }
}

/// `count/<resource>` or `count/<resource>.<group>` (`ObjectCountQuotaResourceNameFor`).
fn count_name(group: &str, resource: &str) -> String {
    if group.is_empty() {
        format!("count/{resource}")
    } else {
        format!("count/{resource}.{group}")
    }
}

/// What one object of `group`/`resource` (plural, e.g. "" / "configmaps", "apps"/"deployments",
/// "stable.example.com"/"crontabs") uses, as quota counts it: `count/<resource>` (core group) or
/// `count/<resource>.<group>`; the legacy names of core kinds (`pods`, `services`, `configmaps`,
/// `secrets`, `resourcequotas`, `persistentvolumeclaims`, `replicationcontrollers`); services'
/// `services.loadbalancers` and `services.nodeports`; claims' `requests.storage` and their
/// storage class's names; and for pods the compute resources as upstream's `PodUsageFunc`
/// counts them. A terminal pod (Succeeded or Failed), or one past its deletion grace period,
/// uses its `count/pods` only, as upstream's (`QuotaV1Pod`: `count/pods` counts every pod in
/// storage, `pods` those still running).
pub fn usage(group: &str, resource: &str, object: &Value) -> Usage {
    match (group, resource) {
        ("", "pods") => pod_usage(object),
        ("", "services") => service_usage(object),
        ("", "persistentvolumeclaims") => pvc_usage(object),
        _ => {
            let mut usage = Usage::from([(count_name(group, resource), count(1))]);
            if let Some(alias) = legacy_alias(group, resource) {
                usage.insert(alias.to_string(), count(1));
            }
            usage
        }
    }
}

/// Whether a quota's hard key `name` is one objects of `group`/`resource` can charge (so a
/// quota with only unrelated keys does not concern a write): upstream's `MatchingResources`,
/// which covers every name [`usage`] can return for the kind.
pub fn charges(group: &str, resource: &str, name: &str) -> bool {
    match (group, resource) {
        ("", "pods") => {
            POD_RESOURCES.contains(&name)
                || name.starts_with(HUGEPAGES)
                || name.starts_with("requests.hugepages-")
                || extended_name_for_quota(name)
        }
        ("", "services") => SERVICE_RESOURCES.contains(&name),
        ("", "persistentvolumeclaims") => {
            name == "count/persistentvolumeclaims"
                || PVC_RESOURCES.contains(&name)
                || PVC_RESOURCES
                    .iter()
                    .any(|r| name.ends_with(&format!("{STORAGE_CLASS}{r}")))
        }
        _ => name == count_name(group, resource) || legacy_alias(group, resource) == Some(name),
    }
}

/// Upstream's `CheckRequest` for one quota named `quota`, with `hard` (its `status.hard`) and
/// `used` (its `status.used`), adding `delta` (what the write uses, [`usage`]).
///
/// `Ok` holds the new `status.used`: `used` plus `delta` for the keys of `hard` that `delta`
/// charges (zeros charge nothing), the other keys of `used` unchanged. `Err` holds upstream's
/// message: `status unknown for quota: NAME, resources: K1,K2` when `hard` has a key of `delta`
/// that `used` lacks (the controller has not counted it yet); `quota usage is negative for
/// resource(s): K` for a negative amount; else `exceeded quota: NAME, requested: k=v, used:
/// k=v, limited: k=v` for the keys the write would take past `hard`, sorted.
pub fn check(quota: &str, hard: &Usage, used: &Usage, delta: &Usage) -> Result<Usage, String> {
    let restricted: Vec<&str> = delta
        .keys()
        .filter(|k| hard.contains_key(*k))
        .map(String::as_str)
        .collect();
    if restricted.iter().any(|k| !used.contains_key(*k)) {
        return Err(format!(
            "status unknown for quota: {quota}, resources: {}",
            restricted.join(",")
        ));
    }
    let negative: Vec<&str> = delta
        .iter()
        .filter(|(_, q)| **q < Quantity::ZERO)
        .map(|(k, _)| k.as_str())
        .collect();
    if !negative.is_empty() {
        return Err(format!(
            "quota usage is negative for resource(s): {}",
            negative.join(",")
        ));
    }
    let requested: Usage = delta
        .iter()
        .filter(|(k, q)| q.is_positive() && hard.contains_key(*k))
        .map(|(k, q)| (k.clone(), *q))
        .collect();
    let mut new_used = used.clone();
    add_into(&mut new_used, &requested);
    let exceeded: Vec<&String> = requested
        .keys()
        .filter(|k| match (new_used.get(*k), hard.get(*k)) {
            (Some(n), Some(h)) => n > h,
            _ => false,
        })
        .collect();
    if exceeded.is_empty() {
        return Ok(new_used);
    }
    let pretty = |list: &Usage| {
        exceeded
            .iter()
            .filter_map(|k| list.get(*k).map(|q| format!("{k}={}", text(*q))))
            .collect::<Vec<_>>()
            .join(",")
    };
    Err(format!(
        "exceeded quota: {quota}, requested: {}, used: {}, limited: {}",
        pretty(&requested),
        pretty(used),
        pretty(hard)
    ))
}

/// The sum of [`usage`] over `objects`, restricted to the keys of `hard`: what the controller
/// writes as `status.used` for them. Every key of `hard` is present, zero where these objects
/// use none, so the totals of several kinds add up key by key.
pub fn total<'a>(
    group: &str,
    resource: &str,
    objects: impl IntoIterator<Item = &'a Value>,
    hard: &Usage,
) -> Usage {
    let mut sum: Usage = hard.keys().map(|k| (k.clone(), Quantity::ZERO)).collect();
    for object in objects {
        for (k, q) in usage(group, resource, object) {
            if let Some(total) = sum.get_mut(&k) {
                *total = total.saturating_add(q);
            }
        }
    }
    sum
}

/// A map of quantities (`spec.hard`, `status.used`, a container's `requests`) parsed; values
/// that are no quantity are skipped.
pub fn parse_map(m: &Map<String, Value>) -> Usage {
    m.iter()
        .filter_map(|(k, v)| {
            let q = match v {
                Value::String(s) => Quantity::parse(s).ok()?,
                Value::Number(n) => Quantity::parse(&n.to_string()).ok()?,
                _ => return None,
            };
            Some((k.clone(), q))
        })
        .collect()
}

/// `u` as a JSON map of quantity strings, written as upstream writes them (see the module's
/// note on notation).
pub fn to_json(u: &Usage) -> Value {
    Value::Object(
        u.iter()
            .map(|(k, q)| (k.clone(), Value::String(text(*q))))
            .collect(),
    )
}

/// Whether `pod` is in every one of a quota's `scopes` (`spec.scopes`), as upstream's
/// `podMatchesScopeFunc` with the `Exists` operator that `spec.scopes` implies: `Terminating`
/// (`spec.activeDeadlineSeconds` set and at least 0) and `NotTerminating`; `BestEffort` (the
/// pod's QoS class: no positive cpu or memory request or limit) and `NotBestEffort`;
/// `PriorityClass` (a `spec.priorityClassName`); `CrossNamespacePodAffinity` (a pod
/// (anti-)affinity term naming namespaces or a namespace selector). Any other name does not
/// match. No scopes match every pod; objects of other kinds match no scope at all (upstream's
/// `MatchesNoScopeFunc`), which the caller decides.
pub fn pod_in_scopes(pod: &Value, scopes: &[String]) -> bool {
    scopes.iter().all(|scope| match scope.as_str() {
        "Terminating" => is_terminating(pod),
        "NotTerminating" => !is_terminating(pod),
        "BestEffort" => is_best_effort(pod),
        "NotBestEffort" => !is_best_effort(pod),
        "PriorityClass" => pod
            .pointer("/spec/priorityClassName")
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty()),
        "CrossNamespacePodAffinity" => uses_cross_namespace_affinity(pod),
        _ => false,
    })
}

// ---------------------------------------------------------------------------------------------
// Pods.

fn pod_usage(pod: &Value) -> Usage {
    let mut usage = Usage::from([("count/pods".to_string(), count(1))]);
    if !charged(pod) {
        return usage;
    }
    let requests = pod_requests(pod);
    let limits = pod_limits(pod);
    usage.insert("pods".into(), count(1));
    for (resource, names) in [
        ("cpu", ["cpu", "requests.cpu"]),
        ("memory", ["memory", "requests.memory"]),
        (
            "ephemeral-storage",
            ["ephemeral-storage", "requests.ephemeral-storage"],
        ),
    ] {
        if let Some(q) = requests.get(resource) {
            for name in names {
                usage.insert(name.to_string(), *q);
            }
        }
        if let Some(q) = limits.get(resource) {
            usage.insert(format!("limits.{resource}"), *q);
        }
    }
    for (name, q) in &requests {
        if name.starts_with(HUGEPAGES) {
            usage.insert(name.clone(), *q);
            usage.insert(format!("{REQUESTS}{name}"), *q);
        }
        if dra_extended_name(name) {
            usage.insert(format!("{REQUESTS}{name}"), *q);
        }
    }
    usage
}

/// Upstream's `QuotaV1Pod`: a pod is charged unless its phase is terminal or it is past its
/// deletion grace period (a pod stuck terminating on a lost node).
fn charged(pod: &Value) -> bool {
    let phase = pod.pointer("/status/phase").and_then(Value::as_str);
    if matches!(phase, Some("Succeeded" | "Failed")) {
        return false;
    }
    let deleted = pod
        .pointer("/metadata/deletionTimestamp")
        .and_then(Value::as_str)
        .and_then(crate::time::parse);
    let grace = pod
        .pointer("/metadata/deletionGracePeriodSeconds")
        .and_then(Value::as_i64);
    if let (Some((seconds, nanos)), Some(grace)) = (deleted, grace) {
        let deadline =
            (i128::from(seconds) + i128::from(grace)) * 1_000_000_000 + i128::from(nanos);
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i128);
        if now > deadline {
            return false;
        }
    }
    true
}

/// What a container's resources are read from (upstream's `containerSpecRequests`,
/// `containerAllocatedRequests`, `containerActuatedRequests`, `containerSpecLimits`,
/// `containerActuatedLimits`).
#[derive(Clone, Copy)]
enum Source {
    SpecRequests,
    AllocatedRequests,
    ActuatedRequests,
    SpecLimits,
    ActuatedLimits,
}

/// A resource list (a map of quantities); `None` when absent or empty, as Go's nil map.
fn list(v: Option<&Value>) -> Option<Usage> {
    v.and_then(Value::as_object)
        .filter(|m| !m.is_empty())
        .map(parse_map)
}

fn container_resources(
    container: &Value,
    status: Option<&Value>,
    infeasible: bool,
    source: Source,
) -> Usage {
    let spec = |key: &str| {
        if infeasible && !matches!(source, Source::SpecRequests | Source::SpecLimits) {
            None
        } else {
            list(container.pointer(&format!("/resources/{key}")))
        }
    };
    let allocated = || status.and_then(|s| list(s.get("allocatedResources")));
    let actual = |key: &str| status.and_then(|s| list(s.pointer(&format!("/resources/{key}"))));
    match source {
        Source::SpecRequests => spec("requests"),
        Source::AllocatedRequests => allocated().or_else(|| spec("requests")),
        Source::ActuatedRequests => actual("requests")
            .or_else(allocated)
            .or_else(|| spec("requests")),
        Source::SpecLimits => spec("limits"),
        Source::ActuatedLimits => actual("limits").or_else(|| spec("limits")),
    }
    .unwrap_or_default()
}

fn array<'a>(v: &'a Value, pointer: &str) -> &'a [Value] {
    v.pointer(pointer)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

/// The container's status by name, among the containers' then the init containers' statuses.
fn container_status<'a>(pod: &'a Value, container: &Value) -> Option<&'a Value> {
    let name = container.get("name").and_then(Value::as_str)?;
    ["/status/containerStatuses", "/status/initContainerStatuses"]
        .into_iter()
        .flat_map(|p| array(pod, p))
        .find(|s| s.get("name").and_then(Value::as_str) == Some(name))
}

/// Upstream's `aggregateContainerResourcesByFn`: the containers' sum, the sidecars (init
/// containers with `restartPolicy: Always`) added to it, and the result at least what any init
/// container needs while it runs (itself plus the sidecars started before it).
fn aggregate(pod: &Value, infeasible: bool, source: Source) -> Usage {
    let resources =
        |c: &Value| container_resources(c, container_status(pod, c), infeasible, source);
    let mut result = Usage::new();
    for c in array(pod, "/spec/containers") {
        add_into(&mut result, &resources(c));
    }
    let mut sidecars = Usage::new();
    let mut init = Usage::new();
    for c in array(pod, "/spec/initContainers") {
        let mut own = resources(c);
        if c.get("restartPolicy").and_then(Value::as_str) == Some("Always") {
            add_into(&mut result, &own);
            add_into(&mut sidecars, &own);
            own = sidecars.clone();
        } else {
            add_into(&mut own, &sidecars);
        }
        max_into(&mut init, &own);
    }
    max_into(&mut result, &init);
    result
}

/// Upstream's `IsPodResizeInfeasible`: the `PodResizePending` condition says `Infeasible`.
fn resize_infeasible(pod: &Value) -> bool {
    array(pod, "/status/conditions")
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("PodResizePending"))
        .is_some_and(|c| c.get("reason").and_then(Value::as_str) == Some("Infeasible"))
}

/// The pod-level resources upstream's `PodLevelResources` applies (cpu, memory, hugepages).
fn pod_level(pod: &Value, key: &str) -> Usage {
    let mut level = list(pod.pointer(&format!("/spec/resources/{key}"))).unwrap_or_default();
    level.retain(|k, _| k == "cpu" || k == "memory" || k.starts_with(HUGEPAGES));
    level
}

/// Upstream's `PodRequests` with the status resources in-place resizing leaves (the most of the
/// spec, the allocated and the actuated requests), pod-level requests and the overhead.
fn pod_requests(pod: &Value) -> Usage {
    let infeasible = resize_infeasible(pod);
    let mut requests = aggregate(pod, infeasible, Source::ActuatedRequests);
    max_into(
        &mut requests,
        &aggregate(pod, infeasible, Source::AllocatedRequests),
    );
    if !infeasible {
        max_into(
            &mut requests,
            &aggregate(pod, infeasible, Source::SpecRequests),
        );
    }
    requests.extend(pod_level(pod, "requests"));
    if let Some(overhead) = list(pod.pointer("/spec/overhead")) {
        add_into(&mut requests, &overhead);
    }
    requests
}

/// Upstream's `PodLimits`: as [`pod_requests`], the overhead added to non-zero limits only.
fn pod_limits(pod: &Value) -> Usage {
    let infeasible = resize_infeasible(pod);
    let mut limits = aggregate(pod, infeasible, Source::ActuatedLimits);
    if !infeasible {
        max_into(&mut limits, &aggregate(pod, infeasible, Source::SpecLimits));
    }
    limits.extend(pod_level(pod, "limits"));
    for (k, q) in list(pod.pointer("/spec/overhead")).unwrap_or_default() {
        if let Some(v) = limits.get_mut(&k)
            && *v != Quantity::ZERO
        {
            *v = v.saturating_add(q);
        }
    }
    limits
}

fn is_terminating(pod: &Value) -> bool {
    pod.pointer("/spec/activeDeadlineSeconds")
        .and_then(Value::as_i64)
        .is_some_and(|s| s >= 0)
}

/// Upstream's `GetPodQOS(pod) == BestEffort`: the QoS class the status records, else no
/// positive cpu or memory request or limit (at the pod level when the pod has one, else in
/// any container or init container).
fn is_best_effort(pod: &Value) -> bool {
    if let Some(class) = pod
        .pointer("/status/qosClass")
        .and_then(Value::as_str)
        .filter(|c| !c.is_empty())
    {
        return class == "BestEffort";
    }
    let compute = |r: &Value| {
        ["requests", "limits"].iter().any(|key| {
            list(r.get(*key)).is_some_and(|l| {
                l.iter()
                    .any(|(k, q)| (k == "cpu" || k == "memory") && q.is_positive())
            })
        })
    };
    if let Some(level) = pod.pointer("/spec/resources").filter(|r| r.is_object()) {
        return !compute(level);
    }
    !array(pod, "/spec/containers")
        .iter()
        .chain(array(pod, "/spec/initContainers"))
        .any(|c| c.get("resources").is_some_and(compute))
}

/// Upstream's `usesCrossNamespacePodAffinity`.
fn uses_cross_namespace_affinity(pod: &Value) -> bool {
    let cross = |term: &Value| {
        term.get("namespaces")
            .and_then(Value::as_array)
            .is_some_and(|n| !n.is_empty())
            || term.get("namespaceSelector").is_some_and(|s| !s.is_null())
    };
    ["podAffinity", "podAntiAffinity"].iter().any(|kind| {
        let base = format!("/spec/affinity/{kind}");
        array(
            pod,
            &format!("{base}/requiredDuringSchedulingIgnoredDuringExecution"),
        )
        .iter()
        .any(cross)
            || array(
                pod,
                &format!("{base}/preferredDuringSchedulingIgnoredDuringExecution"),
            )
            .iter()
            .filter_map(|t| t.get("podAffinityTerm"))
            .any(cross)
    })
}

/// Upstream's `IsNativeResource`: unqualified, or in a `kubernetes.io/` domain.
fn native(name: &str) -> bool {
    !name.contains('/') || name.contains("kubernetes.io/")
}

/// Upstream's `IsExtendedResourceName`: not native, not `requests.`-prefixed, and a qualified
/// name once prefixed with `requests.`.
fn extended_name(name: &str) -> bool {
    !native(name) && !name.starts_with(REQUESTS) && qualified_name(&format!("{REQUESTS}{name}"))
}

/// Upstream's `IsDRAExtendedResourceName`: an extended resource or a device class's implicit
/// one.
fn dra_extended_name(name: &str) -> bool {
    extended_name(name) || name.starts_with(DEVICE_CLASS)
}

/// Upstream's `isExtendedResourceNameForQuota`: `requests.<extended resource>`.
fn extended_name_for_quota(name: &str) -> bool {
    (!native(name) || name.starts_with(&format!("{REQUESTS}{DEVICE_CLASS}")))
        && name.starts_with(REQUESTS)
}

/// Upstream's `IsQualifiedName`: `[prefix/]name`, the prefix a DNS subdomain, the name at most
/// 63 alphanumerics, `-`, `_` or `.`, starting and ending alphanumeric.
fn qualified_name(s: &str) -> bool {
    let (prefix, name) = match s.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, s),
    };
    let name_ok = !name.is_empty()
        && name.len() <= 63
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    let prefix_ok = prefix.is_none_or(|p| {
        !p.is_empty()
            && p.len() <= 253
            && p.split('.').all(|label| {
                !label.is_empty()
                    && label.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
                    && label.ends_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
                    && label
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            })
    });
    name_ok && prefix_ok
}

// ---------------------------------------------------------------------------------------------
// Services and claims.

fn service_usage(service: &Value) -> Usage {
    let ports = array(service, "/spec/ports");
    let mut usage = Usage::from([
        ("count/services".to_string(), count(1)),
        ("services".to_string(), count(1)),
        ("services.loadbalancers".to_string(), Quantity::ZERO),
        ("services.nodeports".to_string(), Quantity::ZERO),
    ]);
    match service.pointer("/spec/type").and_then(Value::as_str) {
        Some("NodePort") => {
            usage.insert("services.nodeports".into(), count(ports.len()));
        }
        Some("LoadBalancer") => {
            // With node ports not allocated, only the ports that name one are counted.
            let allocate = service
                .pointer("/spec/allocateLoadBalancerNodePorts")
                .and_then(Value::as_bool);
            let node_ports = if allocate == Some(false) {
                ports
                    .iter()
                    .filter(|p| p.get("nodePort").and_then(Value::as_i64).unwrap_or(0) != 0)
                    .count()
            } else {
                ports.len()
            };
            usage.insert("services.nodeports".into(), count(node_ports));
            usage.insert("services.loadbalancers".into(), count(1));
        }
        _ => {}
    }
    usage
}

fn pvc_usage(claim: &Value) -> Usage {
    let mut usage = Usage::from([
        ("persistentvolumeclaims".to_string(), count(1)),
        ("count/persistentvolumeclaims".to_string(), count(1)),
    ]);
    // The beta annotation first, as upstream's GetPersistentVolumeClaimClass.
    let class = claim
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(STORAGE_CLASS_ANNOTATION))
        .or_else(|| claim.pointer("/spec/storageClassName"))
        .and_then(Value::as_str)
        .unwrap_or("");
    if !class.is_empty() {
        usage.insert(
            format!("{class}{STORAGE_CLASS}persistentvolumeclaims"),
            count(1),
        );
    }
    let requested = list(claim.pointer("/spec/resources/requests"))
        .and_then(|r| r.get("storage").copied())
        .map(whole_units);
    let allocated =
        list(claim.pointer("/status/allocatedResources")).and_then(|r| r.get("storage").copied());
    let storage = match (requested, allocated) {
        (Some(r), Some(a)) if a > r => Some(whole_units(a)),
        (r, _) => r,
    };
    if let Some(storage) = storage {
        usage.insert("requests.storage".into(), storage);
        if !class.is_empty() {
            usage.insert(format!("{class}{STORAGE_CLASS}requests.storage"), storage);
        }
    }
    usage
}

// ---------------------------------------------------------------------------------------------
// Arithmetic.

fn count(n: usize) -> Quantity {
    Quantity::parse(&n.to_string()).unwrap_or(Quantity::ZERO)
}

/// Upstream's `quota.Add` into `into`.
fn add_into(into: &mut Usage, from: &Usage) {
    for (k, q) in from {
        let total = into.entry(k.clone()).or_insert(Quantity::ZERO);
        *total = total.saturating_add(*q);
    }
}

/// Upstream's `maxResourceList`: each key of `from` at least as large in `into`.
fn max_into(into: &mut Usage, from: &Usage) {
    for (k, q) in from {
        match into.get_mut(k) {
            Some(v) if *q > *v => *v = *q,
            Some(_) => {}
            None => {
                into.insert(k.clone(), *q);
            }
        }
    }
}

/// `q` rounded up (away from zero) to a whole unit, as upstream's `RoundUp(0)` of a claim's
/// storage: read back from its exponent notation, `<mantissa>e<exponent>` with the exponent a
/// multiple of 3 (none when it is 0).
fn whole_units(q: Quantity) -> Quantity {
    let written = q.written_like("1e0");
    let (mantissa, exponent) = written.split_once('e').unwrap_or((written.as_str(), "0"));
    let (Ok(mantissa), Ok(exponent)) = (mantissa.parse::<i128>(), exponent.parse::<i32>()) else {
        return q;
    };
    if exponent >= 0 {
        return q;
    }
    let divisor = 10i128.pow(exponent.unsigned_abs());
    let mut units = mantissa / divisor;
    if mantissa % divisor != 0 {
        units += mantissa.signum();
    }
    Quantity::parse(&units.to_string()).unwrap_or(q)
}

/// `q` as upstream's `String()` writes it: binary notation where that is shorter (what Go
/// keeps for quantities given in binary units), else decimal SI.
fn text(q: Quantity) -> String {
    let decimal = q.written_like("1");
    let binary = q.written_like("1Ki");
    if binary.len() < decimal.len() {
        binary
    } else {
        decimal
    }
}

#[cfg(test)]
#[path = "quota_tests.rs"]
mod tests;
