//! The quantities of a pod's spec as upstream stores them: written back as Go's
//! `Quantity.String()` writes them (`Quantity::canonical`; resource lists rounded up to
//! milli-units, `SetDefaults_ResourceList`), and pod-level requests defaulted from the
//! containers' (`defaultPodRequests`). Part of the pod's v1 defaulting (`pod_defaults`).

use kubestore_proto::core::v1::{Container, PodSpec};

use crate::quantity::Quantity;

/// Upstream's `defaultPodRequests` (PodLevelResources): a pod with pod-level limits gets
/// pod-level requests of cpu and memory where it gives none, from its containers' aggregated
/// requests (`AggregateContainerRequests`: app containers and sidecars summed, against each
/// other init container with the sidecars started before it, the larger), else the limit.
pub(crate) fn default_pod_requests(spec: &mut PodSpec) -> bool {
    let Some(pod_level) = spec.resources.as_ref() else {
        return false;
    };
    if pod_level.limits.is_empty() {
        return false;
    }
    let request = |c: &Container, r: &str| -> Option<Quantity> {
        Quantity::parse(c.resources.as_ref()?.requests.get(r)?).ok()
    };
    let mut defaults: Vec<(String, String)> = Vec::new();
    for r in ["cpu", "memory"] {
        // App containers and sidecars run together; each other init container runs with the
        // sidecars started before it.
        let mut together = Quantity::ZERO;
        let mut sidecars = Quantity::ZERO;
        let mut init_peak = Quantity::ZERO;
        for c in &spec.containers {
            together = together.saturating_add(request(c, r).unwrap_or(Quantity::ZERO));
        }
        for c in &spec.init_containers {
            let q = request(c, r).unwrap_or(Quantity::ZERO);
            if c.restart_policy.as_deref() == Some("Always") {
                together = together.saturating_add(q);
                sidecars = sidecars.saturating_add(q);
            } else {
                init_peak = init_peak.max(q.saturating_add(sidecars));
            }
        }
        let aggregate = together.max(init_peak);
        if aggregate.is_positive() {
            // A sum keeps the notation of the first request it adds (Go's `Quantity.Add`).
            let like = spec
                .containers
                .iter()
                .chain(&spec.init_containers)
                .find_map(|c| c.resources.as_ref()?.requests.get(r).cloned())
                .unwrap_or_default();
            defaults.push((r.to_string(), aggregate.written_like(&like)));
        }
    }
    let Some(pod_level) = spec.resources.as_mut() else {
        return false;
    };
    let mut changed = false;
    let limits = pod_level
        .limits
        .iter()
        .filter(|(r, _)| ["cpu", "memory"].contains(&r.as_str()))
        .map(|(r, q)| (r.clone(), q.clone()))
        .collect::<Vec<_>>();
    for (r, q) in defaults.into_iter().chain(limits) {
        if let std::collections::btree_map::Entry::Vacant(e) = pod_level.requests.entry(r) {
            e.insert(q);
            changed = true;
        }
    }
    changed
}

/// Every quantity of the spec written as upstream writes a `resource.Quantity` back
/// (`Quantity::canonical`: `cpu: 0.1` reads back `100m`). Not a default upstream but its
/// encoding, stored so that what is read is what upstream serves; one that does not parse is
/// left for validation to refuse.
pub(crate) fn canonical_quantities(spec: &mut PodSpec) -> bool {
    fn canon(q: &mut String) -> bool {
        match Quantity::canonical(q) {
            Some(c) if c != *q => {
                *q = c;
                true
            }
            _ => false,
        }
    }
    // A ResourceList: SetDefaults_ResourceList rounds each up to a milli-unit.
    fn canon_map(m: &mut std::collections::BTreeMap<String, String>) -> bool {
        let mut changed = false;
        for q in m.values_mut() {
            if let Some(c) = Quantity::canonical_milli(q)
                && c != *q
            {
                *q = c;
                changed = true;
            }
        }
        changed
    }
    let mut changed = false;
    let containers = spec.init_containers.iter_mut().chain(&mut spec.containers);
    for c in containers {
        if let Some(r) = c.resources.as_mut() {
            changed |= canon_map(&mut r.requests) | canon_map(&mut r.limits);
        }
        for f in c.env.iter_mut().filter_map(|e| e.value_from.as_mut()) {
            if let Some(r) = f.resource_field_ref.as_mut() {
                changed |= canon(&mut r.divisor);
            }
        }
    }
    if let Some(r) = spec.resources.as_mut() {
        changed |= canon_map(&mut r.requests) | canon_map(&mut r.limits);
    }
    changed |= canon_map(&mut spec.overhead);
    for v in &mut spec.volumes {
        if let Some(size) = v.empty_dir.as_mut().and_then(|e| e.size_limit.as_mut()) {
            changed |= canon(size);
        }
        let items = v
            .downward_api
            .iter_mut()
            .flat_map(|d| d.items.iter_mut())
            .chain(v.projected.iter_mut().flat_map(|p| {
                p.sources
                    .iter_mut()
                    .filter_map(|s| s.downward_api.as_mut())
                    .flat_map(|d| d.items.iter_mut())
            }));
        for item in items {
            if let Some(r) = item.resource_field_ref.as_mut() {
                changed |= canon(&mut r.divisor);
            }
        }
        if let Some(r) = v
            .ephemeral
            .as_mut()
            .and_then(|e| e.volume_claim_template.as_mut())
            .and_then(|t| t.spec.as_mut())
            .and_then(|s| s.resources.as_mut())
        {
            changed |= canon_map(&mut r.requests) | canon_map(&mut r.limits);
        }
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubestore_proto::core::v1::ResourceRequirements;

    /// Upstream's `TestPodLevelResourcesDefaults` cases: requests from the containers' where
    /// they give some, else from the pod-level limit; nothing without pod-level limits.
    #[test]
    fn pod_level_requests_come_from_containers_then_limits() {
        let with = |limits: &[(&str, &str)], containers: Vec<Container>| PodSpec {
            resources: Some(ResourceRequirements {
                limits: limits
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
                ..Default::default()
            }),
            containers,
            ..Default::default()
        };
        let requesting = |cpu: &str| Container {
            name: "c".into(),
            resources: Some(ResourceRequirements {
                requests: [("cpu".to_string(), cpu.to_string())].into(),
                ..Default::default()
            }),
            ..Default::default()
        };
        let mut spec = with(
            &[("cpu", "2"), ("memory", "1Gi")],
            vec![requesting("500m"), requesting("250m")],
        );
        assert!(default_pod_requests(&mut spec));
        let requests = spec.resources.map(|r| r.requests).unwrap_or_default();
        assert_eq!(
            requests,
            [
                ("cpu".to_string(), "750m".to_string()),
                ("memory".to_string(), "1Gi".to_string())
            ]
            .into()
        );
        let mut spec = with(&[], vec![requesting("1")]);
        assert!(!default_pod_requests(&mut spec));
        assert_eq!(spec.resources.map(|r| r.requests.len()), Some(0));
    }
}
