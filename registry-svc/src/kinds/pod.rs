//! The Pod strategy (upstream's `pkg/registry/core/pod/strategy.go`): status owned by the
//! server (Pending + QoS class on create, never writable through Update), a spec that is
//! immutable except container images and a lowered `activeDeadlineSeconds`, graceful
//! deletion, and the status subresource (upstream's `podStatusStrategy`: only status is
//! written, a terminal phase is final, the QoS class never changes).
//!
//! Deliberate differences: a client-supplied `status.qos_class` is ignored on create (upstream
//! keeps it, a quirk of evaluating QoS before resetting status; a client could then forge its
//! QoS).
//!
//! v1 defaulting (`pod_defaults`) is the strategy's `default_object`, which the Store applies
//! to every pod sent and every pod read, before any other hook: `prepare_for_*` and validation
//! see defaulted pods only. The spec's rules are in `pod_validation` (the hugepages rules of
//! container resources in `hugepages`), the status subresource's in `pod_status`, the Table's
//! in `pod_printer`.

use kubestore_proto::{
    core::v1::{Pod, PodSpec, PodStatus},
    meta::v1::DeleteOptions,
};

use super::{
    hugepages, pod_create, pod_defaults, pod_status,
    pod_validation::{self, validate_spec},
};
use crate::{
    quantity::Quantity,
    selectors::{METADATA_FIELDS, SelectableField},
    strategy::Strategy,
    violations::Violations,
};

/// Grace period of a pod delete when neither the request nor the pod gives one (upstream's
/// `DefaultTerminationGracePeriodSeconds`, also the pod's default).
pub use pod_defaults::DEFAULT_TERMINATION_GRACE_SECONDS;

/// The Pod strategy.
#[derive(Debug, Default, Clone, Copy)]
pub struct PodStrategy;

/// Pod fields a field selector may name (upstream's pod `ToSelectableFields`, for the fields
/// our Pod carries; `spec.hostNetwork`, a bool, is not among them).
const FIELDS: &[SelectableField] = &[
    METADATA_FIELDS[0],
    METADATA_FIELDS[1],
    SelectableField::string("spec.nodeName", &[2, 2]),
    SelectableField::string("spec.restartPolicy", &[2, 4]),
    SelectableField::string("spec.schedulerName", &[2, 9]),
    SelectableField::string("spec.serviceAccountName", &[2, 7]),
    SelectableField::string("status.phase", &[3, 1]),
    SelectableField::string("status.podIP", &[3, 9]),
    SelectableField::string("status.nominatedNodeName", &[3, 11]),
];

/// No annotations.
static NO_ANNOTATIONS: std::collections::BTreeMap<String, String> =
    std::collections::BTreeMap::new();

/// A pod's annotations.
fn annotations(pod: &Pod) -> &std::collections::BTreeMap<String, String> {
    pod.metadata
        .as_ref()
        .map_or(&NO_ANNOTATIONS, |m| &m.annotations)
}

/// QoS classes.
pub mod qos {
    /// Every container has equal cpu and memory requests and limits.
    pub const GUARANTEED: &str = "Guaranteed";
    /// Some requests or limits, not Guaranteed.
    pub const BURSTABLE: &str = "Burstable";
    /// No cpu or memory requests or limits at all.
    pub const BEST_EFFORT: &str = "BestEffort";
}

/// Upstream's `ComputePodQOS`, for cpu and memory, counting quantities > 0: over the pod-level
/// `resources` when the pod sets them (PodLevelResources), else over app and init containers.
/// Unparsable quantities count as absent (validation rejects them before this matters).
pub fn compute_qos(spec: &PodSpec) -> &'static str {
    use std::collections::BTreeMap;
    let mut requests: BTreeMap<&str, Quantity> = BTreeMap::new();
    let mut limits: BTreeMap<&str, Quantity> = BTreeMap::new();
    let mut guaranteed = true;
    let lists: Vec<&kubestore_proto::core::v1::ResourceRequirements> = match &spec.resources {
        Some(pod_level) => {
            // Without both limits (none at all, too), a pod cannot be Guaranteed: the loop
            // below finds fewer than two.
            vec![pod_level]
        }
        None => spec
            .containers
            .iter()
            .chain(&spec.init_containers)
            .map(|c| c.resources.as_ref().unwrap_or(&NO_RESOURCES))
            .collect(),
    };
    for res in lists {
        for (name, map) in [("requests", &res.requests), ("limits", &res.limits)] {
            let mut found = Vec::new();
            for r in ["cpu", "memory"] {
                if let Some(q) = map
                    .get(r)
                    .and_then(|s| Quantity::parse(s).ok())
                    .filter(Quantity::is_positive)
                {
                    let sum = if name == "requests" {
                        &mut requests
                    } else {
                        &mut limits
                    };
                    let e = sum.entry(r).or_insert(Quantity::ZERO);
                    *e = e.saturating_add(q);
                    found.push(r);
                }
            }
            if name == "limits" && found.len() < 2 {
                guaranteed = false;
            }
        }
    }
    if requests.is_empty() && limits.is_empty() {
        return qos::BEST_EFFORT;
    }
    if guaranteed
        && requests.len() == limits.len()
        && requests.iter().all(|(r, q)| limits.get(r) == Some(q))
    {
        return qos::GUARANTEED;
    }
    qos::BURSTABLE
}

/// No resources.
static NO_RESOURCES: kubestore_proto::core::v1::ResourceRequirements =
    kubestore_proto::core::v1::ResourceRequirements {
        requests: std::collections::BTreeMap::new(),
        limits: std::collections::BTreeMap::new(),
        claims: Vec::new(),
    };

impl Strategy<Pod> for PodStrategy {
    fn columns(&self) -> Vec<kubestore_apimachinery::table::Column> {
        crate::kinds::pod_printer::pod_columns()
    }

    fn cells(&self, obj: &Pod, now: i64) -> Vec<serde_json::Value> {
        crate::kinds::pod_printer::pod_cells(obj, now)
    }

    fn row_conditions(&self, obj: &Pod) -> Option<serde_json::Value> {
        crate::kinds::pod_printer::pod_row_conditions(obj)
    }

    fn return_deleted_object(&self) -> bool {
        true
    }

    fn default_object(&self, pod: &mut Pod) -> bool {
        pod_defaults::default_pod(pod)
    }

    fn has_defaults(&self) -> bool {
        true
    }

    fn prepare_for_create(&self, pod: &mut Pod) {
        let spec = pod.spec.get_or_insert_with(Default::default);
        let meta = pod.metadata.get_or_insert_with(Default::default);
        meta.generation = 1;
        pod_create::merge_label_keys(spec, &meta.labels);
        pod_create::sync_app_armor(spec, &mut meta.annotations);
        let qos = compute_qos(spec).to_string();
        let mut status = PodStatus {
            phase: "Pending".into(),
            qos_class: qos,
            ..Default::default()
        };
        pod_create::scheduling_gated_condition(spec, &mut status);
        pod.status = Some(status);
    }

    fn validate(&self, pod: &Pod) -> Violations {
        let mut v = Violations::new();
        let annotations = annotations(pod);
        if let Some(spec) = pod.spec.as_ref() {
            pod_validation::validate_annotations(annotations, spec, &mut v);
        }
        validate_spec(pod.spec.as_ref(), false, &mut v);
        if let Some(spec) = pod.spec.as_ref() {
            pod_validation::validate_spec_create(spec, annotations, &mut v);
        }
        v
    }

    fn prepare_for_update(&self, new: &mut Pod, old: &Pod) {
        new.status = old.status.clone();
        // Both pods are defaulted (`default_object`): a spec that differs only by a default
        // the client left out is no change, and bumps nothing.
        if new.spec != old.spec {
            let m = new.metadata.get_or_insert_with(Default::default);
            m.generation += 1;
        }
    }

    fn validate_update(&self, new: &Pod, old: &Pod) -> Violations {
        let mut v = Violations::new();
        // Upstream's ValidatePodUpdate with AllowIndivisibleHugePagesValues when the stored pod
        // had such values: what is stored can be written back.
        let ratchet = old.spec.as_ref().is_some_and(hugepages::uses_indivisible);
        let new_annotations = annotations(new);
        pod_validation::validate_annotations_update(new_annotations, annotations(old), &mut v);
        if let Some(spec) = new.spec.as_ref() {
            pod_validation::validate_annotations(new_annotations, spec, &mut v);
        }
        // Ratcheting: a rule the stored pod already broke (a rule newer than the pod: a mount
        // of an undeclared volume, from before Pods had volumes) does not refuse the update,
        // or no finalizer or label of that pod could ever change.
        let mut spec_problems = Violations::new();
        validate_spec(new.spec.as_ref(), ratchet, &mut spec_problems);
        if !spec_problems.is_empty() {
            let mut before = Violations::new();
            validate_spec(old.spec.as_ref(), true, &mut before);
            let known: std::collections::BTreeSet<_> = before.iter().collect();
            spec_problems = spec_problems
                .iter()
                .filter(|p| !known.contains(p))
                .cloned()
                .collect();
        }
        v.merge(spec_problems);
        if let (Some(new_spec), Some(old_spec)) = (new.spec.as_ref(), old.spec.as_ref()) {
            pod_validation::validate_spec_update(new_spec, old_spec, &mut v);
        }
        v
    }

    fn supports_graceful_delete(&self) -> bool {
        true
    }

    fn selectable_fields(&self) -> &'static [SelectableField] {
        FIELDS
    }

    fn has_status(&self) -> bool {
        true
    }

    /// Upstream's `podStatusStrategy.PrepareForUpdate`: the spec and owner references come from
    /// the stored pod, the QoS class too when the writer dropped it (old kubelets did).
    fn prepare_for_status_update(&self, new: &mut Pod, old: &Pod) {
        new.spec = old.spec.clone();
        let old_meta = old.metadata.clone().unwrap_or_default();
        let m = new.metadata.get_or_insert_with(Default::default);
        m.owner_references = old_meta.owner_references;
        // Upstream's podStatusStrategy: a status writer cannot start a deletion; the stored
        // deletionTimestamp, if any, is put back by BeforeUpdate.
        m.deletion_timestamp = None;
        let old_qos = old.status.as_ref().map(|s| s.qos_class.clone());
        let status = new.status.get_or_insert_with(Default::default);
        if status.qos_class.is_empty() {
            status.qos_class = old_qos.unwrap_or_default();
        }
    }

    fn validate_status_update(&self, new: &Pod, old: &Pod) -> Violations {
        pod_status::validate_status_update(new, old)
    }

    /// The request's grace period, else the pod's `termination_grace_period_seconds`, else 30;
    /// 0 for a pod that was never scheduled or has finished (nothing to terminate).
    fn check_graceful_delete(&self, pod: &Pod, options: &mut DeleteOptions) -> bool {
        let spec = pod.spec.clone().unwrap_or_default();
        let mut period = options
            .grace_period_seconds
            .or(spec.termination_grace_period_seconds)
            .unwrap_or(DEFAULT_TERMINATION_GRACE_SECONDS);
        let phase = pod.status.as_ref().map_or("", |s| s.phase.as_str());
        if spec.node_name.is_empty() || phase == "Succeeded" || phase == "Failed" {
            period = 0;
        }
        if period < 0 {
            period = 1;
        }
        options.grace_period_seconds = Some(period);
        true
    }
}

/// The Pods of a namespace, for PodSecurity's check of them when the namespace's enforce label
/// gets stricter (`admission::pod_security::dry_run`): one page of at most `limit`, read as the
/// registry itself, and the namespace's count from the page's `remainingItemCount`.
pub struct NamespacePods(pub crate::store::Store<Pod>);

#[tonic::async_trait]
impl crate::admission::pod_security::dry_run::PodLister for NamespacePods {
    async fn pods(
        &self,
        namespace: &str,
        limit: usize,
        timeout: std::time::Duration,
    ) -> Result<(Vec<serde_json::Value>, usize), crate::error::ApiError> {
        use crate::resource::Resource;
        let options = kubestore_proto::meta::v1::ListOptions {
            limit: i64::try_from(limit).unwrap_or(i64::MAX),
            ..Default::default()
        };
        let ctx = crate::store::Ctx::within(timeout);
        let (meta, items) = self.0.list(ctx, namespace, Some(options)).await?;
        let more = meta
            .remaining_item_count
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or(0);
        let total = items.len() + more;
        let items = items
            .iter()
            .map(Resource::as_json)
            .collect::<Result<Vec<_>, _>>()?;
        Ok((items, total))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubestore_proto::core::v1::{Container, ResourceRequirements};

    fn container(req: &[(&str, &str)], lim: &[(&str, &str)]) -> Container {
        let m = |p: &[(&str, &str)]| {
            p.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        Container {
            name: "c".into(),
            image: "nginx".into(),
            resources: Some(ResourceRequirements {
                requests: m(req),
                limits: m(lim),
                ..Default::default()
            }),
            ..Default::default()
        }
    }
    fn spec(cs: Vec<Container>) -> PodSpec {
        let mut s = PodSpec {
            containers: cs,
            ..Default::default()
        };
        pod_defaults::default_spec(&mut s);
        s
    }

    #[test]
    fn qos_classes_follow_upstream() {
        assert_eq!(
            compute_qos(&spec(vec![container(&[], &[])])),
            qos::BEST_EFFORT
        );
        let g = container(
            &[("cpu", "500m"), ("memory", "128Mi")],
            &[("cpu", "0.5"), ("memory", "134217728")],
        );
        assert_eq!(compute_qos(&spec(vec![g.clone()])), qos::GUARANTEED);
        // Limits only: defaulting copies them to requests.
        assert_eq!(
            compute_qos(&spec(vec![container(
                &[],
                &[("cpu", "1"), ("memory", "1Gi")]
            )])),
            qos::GUARANTEED
        );
        assert_eq!(
            compute_qos(&spec(vec![container(&[("cpu", "100m")], &[])])),
            qos::BURSTABLE
        );
        assert_eq!(
            compute_qos(&spec(vec![container(
                &[("cpu", "100m")],
                &[("cpu", "200m"), ("memory", "1Gi")]
            )])),
            qos::BURSTABLE
        );
        // One guaranteed and one best-effort container: burstable.
        assert_eq!(
            compute_qos(&spec(vec![g, container(&[], &[])])),
            qos::BURSTABLE
        );
        // Pod-level resources decide when the pod sets them.
        let mut pod_level = spec(vec![container(&[], &[])]);
        pod_level.resources = Some(kubestore_proto::core::v1::ResourceRequirements {
            requests: [
                ("cpu".to_string(), "1".to_string()),
                ("memory".to_string(), "1Gi".to_string()),
            ]
            .into(),
            limits: [
                ("cpu".to_string(), "1".to_string()),
                ("memory".to_string(), "1Gi".to_string()),
            ]
            .into(),
            ..Default::default()
        });
        assert_eq!(compute_qos(&pod_level), qos::GUARANTEED);
        if let Some(r) = pod_level.resources.as_mut() {
            r.limits.remove("memory");
        }
        assert_eq!(compute_qos(&pod_level), qos::BURSTABLE);
        // Zero quantities do not count; other resources are ignored.
        assert_eq!(
            compute_qos(&spec(vec![container(
                &[("cpu", "0")],
                &[("nvidia.com/gpu", "1")]
            )])),
            qos::BEST_EFFORT
        );
    }

    #[test]
    fn grace_period_comes_from_request_then_pod_then_default() {
        let mut pod = Pod {
            spec: Some(PodSpec {
                node_name: "n".into(),
                ..Default::default()
            }),
            ..Default::default()
        };
        let mut o = DeleteOptions::default();
        assert!(PodStrategy.check_graceful_delete(&pod, &mut o));
        assert_eq!(o.grace_period_seconds, Some(30));
        if let Some(s) = pod.spec.as_mut() {
            s.termination_grace_period_seconds = Some(10);
        }
        let mut o = DeleteOptions::default();
        PodStrategy.check_graceful_delete(&pod, &mut o);
        assert_eq!(o.grace_period_seconds, Some(10));
        let mut o = DeleteOptions {
            grace_period_seconds: Some(3),
            ..Default::default()
        };
        PodStrategy.check_graceful_delete(&pod, &mut o);
        assert_eq!(o.grace_period_seconds, Some(3));
        pod.status = Some(PodStatus {
            phase: "Succeeded".into(),
            qos_class: String::new(),
            ..Default::default()
        });
        let mut o = DeleteOptions::default();
        PodStrategy.check_graceful_delete(&pod, &mut o);
        assert_eq!(o.grace_period_seconds, Some(0));
        let unscheduled = Pod {
            spec: Some(PodSpec::default()),
            ..Default::default()
        };
        let mut o = DeleteOptions::default();
        PodStrategy.check_graceful_delete(&unscheduled, &mut o);
        assert_eq!(o.grace_period_seconds, Some(0));
    }

    /// Upstream's `newPodWithHugePageValue`: one container asking for 10 cpu and `value` of
    /// `resource`, in requests and limits, defaulted as the Store defaults every pod.
    fn pod_with_hugepages(resource: &str, value: &str) -> Pod {
        let r = [("cpu", "10"), (resource, value)];
        let mut pod = Pod {
            metadata: Some(kubestore_proto::meta::v1::ObjectMeta {
                name: "foo".into(),
                namespace: "default".into(),
                resource_version: "1".into(),
                ..Default::default()
            }),
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: "foo".into(),
                    ..container(&r, &r)
                }],
                restart_policy: "Always".into(),
                ..Default::default()
            }),
            status: None,
        };
        PodStrategy.default_object(&mut pod);
        pod
    }

    /// Upstream's `TestPodStrategyValidate`, the cases of the fields we model (no init
    /// containers).
    #[test]
    fn hugepages_on_create_must_be_whole_pages() {
        for (name, resource, value, ok) in [
            (
                "a new pod setting container with indivisible hugepages values",
                "hugepages-1Mi",
                "1.1Mi",
                false,
            ),
            (
                "a new pod setting container with divisible hugepages values",
                "hugepages-1Mi",
                "2Mi",
                true,
            ),
        ] {
            let v = PodStrategy.validate(&pod_with_hugepages(resource, value));
            assert_eq!(v.is_empty(), ok, "{name}: {v:?}");
        }
    }

    /// Upstream's `TestPodStrategyValidateUpdate` (validation ratcheting: what is stored can
    /// be written back), with the cases either side of it.
    #[test]
    fn an_update_may_repeat_the_indivisible_hugepages_the_stored_pod_has() {
        let stored = pod_with_hugepages("hugepages-2Mi", "2.1Mi");
        assert!(
            !PodStrategy.validate(&stored).is_empty(),
            "refused on create"
        );
        // An existing pod with indivisible hugepages values to a new pod with indivisible
        // hugepages values.
        let same = pod_with_hugepages("hugepages-2Mi", "2.1Mi");
        let v = PodStrategy.validate_update(&same, &stored);
        assert!(v.is_empty(), "{v:?}");
        // The one change a pod's spec allows, next to them.
        let mut new_image = same.clone();
        if let Some(s) = new_image.spec.as_mut() {
            s.containers[0].image = "nginx:2".into();
        }
        let v = PodStrategy.validate_update(&new_image, &stored);
        assert!(v.is_empty(), "{v:?}");
        // A stored pod with whole pages gives no allowance.
        let whole = pod_with_hugepages("hugepages-2Mi", "4Mi");
        let fields: Vec<String> = PodStrategy
            .validate_update(&same, &whole)
            .iter()
            .map(|(f, _)| f.clone())
            .collect();
        assert!(
            fields.contains(&"spec.containers[0].resources.limits[hugepages-2Mi]".to_string()),
            "{fields:?}"
        );
    }
}
