//! A pod's resources beyond its containers' requests and limits: dynamic resource claims
//! (`spec.resourceClaims`, and each container's `resources.claims` naming them: upstream's
//! `validatePodResourceClaims` and `validateResourceClaimNames`), pod-level `resources`
//! (`validatePodResources`) and `overhead`.
//!
//! In kube-apiserver 1.33 the first two sit behind gates that are off by default
//! (DynamicResourceAllocation, PodLevelResources), so a stock server drops the fields on
//! create. kubestore serves every 1.33 field as if its gate were on (the README's Pod row):
//! the fields are kept and checked here as upstream checks them with the gate on.

use std::collections::BTreeSet;

use kubestore_proto::core::v1::{Container, PodResourceClaim, PodSpec};

use super::not_supported;
use crate::{
    quantity::Quantity,
    validation::{dns1123_label, dns1123_subdomain},
    violations::Violations,
};

/// Go's `%#v` of an optional string, as `field.Invalid` prints a struct holding one (a set
/// pointer prints as an address upstream, which no client can rely on).
fn go_ptr(value: &Option<String>) -> &'static str {
    match value {
        None => "(*string)(nil)",
        Some(_) => "(*string)(0x0)",
    }
}

/// Go's `%#v` of the claim, as upstream prints it in an Invalid value.
fn go_claim(c: &PodResourceClaim) -> String {
    format!(
        "core.PodResourceClaim{{Name:{:?}, ResourceClaimName:{}, ResourceClaimTemplateName:{}}}",
        c.name,
        go_ptr(&c.resource_claim_name),
        go_ptr(&c.resource_claim_template_name)
    )
}

/// Everything here, for the pod `spec`.
pub(super) fn pod(spec: &PodSpec, v: &mut Violations) {
    let names = pod_claims(&spec.resource_claims, v);
    for (list, containers) in [
        ("containers", &spec.containers),
        ("initContainers", &spec.init_containers),
    ] {
        for (i, c) in containers.iter().enumerate() {
            container_claims(c, &names, &format!("spec.{list}[{i}].resources.claims"), v);
        }
    }
    if let Some(r) = &spec.resources {
        if !r.claims.is_empty() {
            v.push((
                "spec.resources.claims".into(),
                "Forbidden: claims cannot be set for Resources at pod-level".into(),
            ));
        }
        for (kind, map) in [("requests", &r.requests), ("limits", &r.limits)] {
            for (name, q) in map {
                let path = format!("spec.resources.{kind}[{name}]");
                if !["cpu", "memory"].contains(&name.as_str()) {
                    v.push((path.clone(), not_supported(name, &["cpu", "memory"])));
                }
                quantity(q, path, v);
            }
        }
        for (name, request) in &r.requests {
            if let (Some(limit), Ok(req)) = (r.limits.get(name), Quantity::parse(request))
                && let Ok(lim) = Quantity::parse(limit)
                && req > lim
            {
                v.push((
                    format!("spec.resources.requests[{name}]"),
                    format!(
                        "Invalid value: {request:?}: must be less than or equal to {name} limit of {limit:?}"
                    ),
                ));
            }
        }
    }
    for (name, q) in &spec.overhead {
        quantity(q, format!("spec.overhead[{name}]"), v);
    }
}

/// A quantity that parses and is not negative.
fn quantity(q: &str, path: String, v: &mut Violations) {
    match Quantity::parse(q) {
        Err(e) => v.push((path, format!("Invalid value: {q:?}: {e}"))),
        Ok(n) if n < Quantity::ZERO => v.push((
            path,
            format!("Invalid value: {q:?}: must be greater than or equal to 0"),
        )),
        Ok(_) => {}
    }
}

/// `validatePodResourceClaims`: the names the containers may use.
fn pod_claims<'a>(claims: &'a [PodResourceClaim], v: &mut Violations) -> BTreeSet<&'a str> {
    let mut names = BTreeSet::new();
    for (i, c) in claims.iter().enumerate() {
        let path = format!("spec.resourceClaims[{i}]");
        if c.name.is_empty() {
            v.push((format!("{path}.name"), "Required value".into()));
        } else if names.contains(c.name.as_str()) {
            v.push((
                format!("{path}.name"),
                format!("Duplicate value: {:?}", c.name),
            ));
        } else {
            if let Some(e) = dns1123_label(&c.name) {
                v.push((
                    format!("{path}.name"),
                    format!("Invalid value: {:?}: {e}", c.name),
                ));
            }
            names.insert(c.name.as_str());
        }
        match (&c.resource_claim_name, &c.resource_claim_template_name) {
            (Some(_), Some(_)) => v.push((
                path.clone(),
                format!(
                    "Invalid value: {}: at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified",
                    go_claim(c)
                ),
            )),
            (None, None) => v.push((
                path.clone(),
                format!(
                    "Invalid value: {}: must specify one of: `resourceClaimName`, `resourceClaimTemplateName`",
                    go_claim(c)
                ),
            )),
            _ => {}
        }
        for (field, value) in [
            ("resourceClaimName", &c.resource_claim_name),
            ("resourceClaimTemplateName", &c.resource_claim_template_name),
        ] {
            if let Some(name) = value
                && let Some(e) = dns1123_subdomain(name)
            {
                v.push((
                    format!("{path}.{field}"),
                    format!("Invalid value: {name:?}: {e}"),
                ));
            }
        }
    }
    names
}

/// `validateResourceClaimNames`: a container's claims name the pod's, each (with its request)
/// once.
fn container_claims(c: &Container, pod_names: &BTreeSet<&str>, list: &str, v: &mut Violations) {
    let Some(res) = &c.resources else {
        return;
    };
    let mut seen = BTreeSet::new();
    for (i, claim) in res.claims.iter().enumerate() {
        let path = format!("{list}[{i}]");
        let mut key = claim.name.clone();
        if !claim.request.is_empty() {
            if let Some(e) = dns1123_label(&claim.request) {
                v.push((
                    format!("{path}.request"),
                    format!("Invalid value: {:?}: {e}", claim.request),
                ));
            }
            key = format!("{key}/{}", claim.request);
        }
        if claim.name.is_empty() {
            v.push((path, "Required value".into()));
            continue;
        }
        if !seen.insert(key.clone()) {
            v.push((path.clone(), format!("Duplicate value: {key:?}")));
        }
        if !pod_names.contains(claim.name.as_str()) {
            let known = if pod_names.is_empty() {
                " which is empty".to_string()
            } else {
                format!(
                    ": {}",
                    pod_names.iter().copied().collect::<Vec<_>>().join(", ")
                )
            };
            v.push((
                path,
                format!(
                    "Not found: {:?}: must be one of the names in pod.spec.resourceClaims{known}",
                    claim.name
                ),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubestore_proto::core::v1::{ResourceClaim, ResourceRequirements};

    fn check(spec: &PodSpec) -> Vec<(String, String)> {
        let mut v = Violations::new();
        pod(spec, &mut v);
        v.iter().cloned().collect()
    }

    fn container(claims: &[(&str, &str)]) -> Container {
        Container {
            name: "c".into(),
            resources: Some(ResourceRequirements {
                claims: claims
                    .iter()
                    .map(|(name, request)| ResourceClaim {
                        name: name.to_string(),
                        request: request.to_string(),
                    })
                    .collect(),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn claims_name_one_source_and_containers_name_the_pods_claims() {
        let ok = PodSpec {
            resource_claims: vec![PodResourceClaim {
                name: "gpu".into(),
                resource_claim_template_name: Some("gpu-template".into()),
                ..Default::default()
            }],
            containers: vec![container(&[("gpu", "")])],
            ..Default::default()
        };
        assert!(check(&ok).is_empty());
        let bad = PodSpec {
            resource_claims: vec![
                PodResourceClaim {
                    name: "gpu".into(),
                    ..Default::default()
                },
                PodResourceClaim {
                    name: "gpu".into(),
                    resource_claim_name: Some("a".into()),
                    ..Default::default()
                },
            ],
            containers: vec![container(&[
                ("gpu", ""),
                ("gpu", ""),
                ("fpga", ""),
                ("", ""),
            ])],
            ..Default::default()
        };
        assert_eq!(
            check(&bad),
            [
                (
                    "spec.resourceClaims[0]".to_string(),
                    "Invalid value: core.PodResourceClaim{Name:\"gpu\", ResourceClaimName:(*string)(nil), ResourceClaimTemplateName:(*string)(nil)}: must specify one of: `resourceClaimName`, `resourceClaimTemplateName`".to_string()
                ),
                (
                    "spec.resourceClaims[1].name".to_string(),
                    "Duplicate value: \"gpu\"".to_string()
                ),
                (
                    "spec.containers[0].resources.claims[1]".to_string(),
                    "Duplicate value: \"gpu\"".to_string()
                ),
                (
                    "spec.containers[0].resources.claims[2]".to_string(),
                    "Not found: \"fpga\": must be one of the names in pod.spec.resourceClaims: gpu"
                        .to_string()
                ),
                (
                    "spec.containers[0].resources.claims[3]".to_string(),
                    "Required value".to_string()
                ),
            ]
        );
        let none = PodSpec {
            containers: vec![container(&[("gpu", "")])],
            ..Default::default()
        };
        assert_eq!(
            check(&none)[0].1,
            "Not found: \"gpu\": must be one of the names in pod.spec.resourceClaims which is empty"
        );
    }

    #[test]
    fn pod_level_resources_are_cpu_and_memory_within_their_limits() {
        let spec = PodSpec {
            resources: Some(ResourceRequirements {
                requests: [("cpu".to_string(), "2".to_string())].into(),
                limits: [
                    ("cpu".to_string(), "1".to_string()),
                    ("nvidia.com/gpu".to_string(), "1".to_string()),
                ]
                .into(),
                ..Default::default()
            }),
            overhead: [("memory".to_string(), "-1".to_string())].into(),
            ..Default::default()
        };
        assert_eq!(
            check(&spec),
            [
                (
                    "spec.resources.limits[nvidia.com/gpu]".to_string(),
                    "Unsupported value: \"nvidia.com/gpu\": supported values: \"cpu\", \"memory\""
                        .to_string()
                ),
                (
                    "spec.resources.requests[cpu]".to_string(),
                    "Invalid value: \"2\": must be less than or equal to cpu limit of \"1\""
                        .to_string()
                ),
                (
                    "spec.overhead[memory]".to_string(),
                    "Invalid value: \"-1\": must be greater than or equal to 0".to_string()
                ),
            ]
        );
    }
}
