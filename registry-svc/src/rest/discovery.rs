//! Discovery, from the catalog (upstream's `pkg/endpoints/discovery`): `/version`, the legacy
//! documents (`/api`, `/api/v1`, `/apis`, `/apis/G`, `/apis/G/V`) and aggregated discovery
//! (`apidiscovery.k8s.io` v2 and v2beta1, answered when the `Accept` header asks for it, with
//! its media type echoed: client-go picks the parser by the response's `Content-Type`). A custom
//! kind appears as soon as its definition is served; nothing is cached.

use std::{cmp::Ordering, collections::BTreeMap, sync::Arc};

use http::StatusCode;
use serde_json::{Value, json};

use super::{Body, Rest, reply};
use crate::catalog::{Endpoint, ResourceInfo, create_only::CreateOnly};

/// The Kubernetes release whose API kubestore serves (`/version`): kubectl's dispatcher runs
/// the kubectl of this minor, and clients check their skew against it.
pub const KUBERNETES_MAJOR: &str = "1";
/// See [`KUBERNETES_MAJOR`].
pub const KUBERNETES_MINOR: &str = "33";

/// `/version`.
pub fn version() -> Value {
    json!({
        "major": KUBERNETES_MAJOR,
        "minor": KUBERNETES_MINOR,
        "gitVersion": format!("v{KUBERNETES_MAJOR}.{KUBERNETES_MINOR}.0+kubestore.{}", env!("CARGO_PKG_VERSION")),
        "gitCommit": "kubestore",
        "gitTreeState": "clean",
        "buildDate": "1970-01-01T00:00:00Z",
        "goVersion": "n/a (Rust)",
        "compiler": "rustc",
        "platform": format!("{}/{}", std::env::consts::OS, std::env::consts::ARCH),
    })
}

/// Upstream's order of versions (`version.CompareKubeAwareVersionStrings`): GA before beta
/// before alpha, higher numbers first, anything else after, alphabetically.
pub fn kube_version_order(a: &str, b: &str) -> Ordering {
    fn parse(v: &str) -> Option<(u8, u64, u64)> {
        let rest = v.strip_prefix('v')?;
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let major: u64 = rest[..digits].parse().ok()?;
        let tail = &rest[digits..];
        if tail.is_empty() {
            return Some((2, major, 0));
        }
        for (label, rank) in [("beta", 1u8), ("alpha", 0u8)] {
            if let Some(n) = tail.strip_prefix(label) {
                return Some((rank, major, n.parse().ok()?));
            }
        }
        None
    }
    match (parse(a), parse(b)) {
        (Some(x), Some(y)) => y.cmp(&x),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => a.cmp(b),
    }
}

/// A group's versions, each with its endpoints, in upstream's order.
type Versions = Vec<(String, Vec<Arc<dyn Endpoint>>)>;

/// The served group versions: group -> version -> endpoints, versions in upstream's order.
fn groups(rest: &Rest) -> BTreeMap<String, Versions> {
    let mut by_group: BTreeMap<String, BTreeMap<String, Vec<Arc<dyn Endpoint>>>> = BTreeMap::new();
    for e in rest.catalog.all() {
        let info = e.info();
        by_group
            .entry(info.group.clone())
            .or_default()
            .entry(info.version.clone())
            .or_default()
            .push(e.clone());
    }
    by_group
        .into_iter()
        .map(|(g, versions)| {
            let mut v: Vec<_> = versions.into_iter().collect();
            v.sort_by(|a, b| kube_version_order(&a.0, &b.0));
            (g, v)
        })
        .collect()
}

fn group_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    }
}

/// A resource as an `APIResource` of legacy discovery, and its subresources (`extra`: its
/// create-only ones, `serviceaccounts/token`).
fn api_resources(info: &ResourceInfo, extra: &[Arc<CreateOnly>]) -> Vec<Value> {
    let mut r = serde_json::Map::new();
    r.insert("name".into(), json!(info.plural));
    r.insert("singularName".into(), json!(info.singular));
    r.insert("namespaced".into(), json!(info.namespaced));
    r.insert("kind".into(), json!(info.kind));
    r.insert("verbs".into(), json!(info.verbs));
    if !info.short_names.is_empty() {
        r.insert("shortNames".into(), json!(info.short_names));
    }
    if !info.categories.is_empty() {
        r.insert("categories".into(), json!(info.categories));
    }
    let mut out = vec![Value::Object(r)];
    if info.finalize {
        out.push(json!({
            "name": format!("{}/finalize", info.plural),
            "singularName": "",
            "namespaced": info.namespaced,
            "kind": info.kind,
            "verbs": ["update"],
        }));
    }
    if info.status {
        out.push(json!({
            "name": format!("{}/status", info.plural),
            "singularName": "",
            "namespaced": info.namespaced,
            "kind": info.kind,
            "verbs": ["get", "patch", "update"],
        }));
    }
    for c in extra {
        let (group, version, kind) = c.kind;
        out.push(json!({
            "name": format!("{}/{}", info.plural, c.subresource),
            "singularName": "",
            "namespaced": info.namespaced,
            "group": group,
            "version": version,
            "kind": kind,
            "verbs": ["create"],
        }));
    }
    out
}

/// `/api` (legacy): the core group's versions.
pub fn api() -> Value {
    json!({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []})
}

/// `/apis` (legacy): every group but the core one, with its versions.
pub fn apis(rest: &Rest) -> Value {
    let groups: Vec<Value> = groups(rest)
        .into_iter()
        .filter(|(g, _)| !g.is_empty())
        .map(|(g, versions)| api_group(&g, &versions))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

fn api_group(group: &str, versions: &[(String, Vec<Arc<dyn Endpoint>>)]) -> Value {
    let vs: Vec<Value> = versions
        .iter()
        .map(|(v, _)| json!({"groupVersion": group_version(group, v), "version": v}))
        .collect();
    let preferred = vs.first().cloned().unwrap_or(Value::Null);
    json!({"name": group, "versions": vs, "preferredVersion": preferred})
}

/// `/apis/G` (legacy).
pub fn group(rest: &Rest, group: &str) -> Option<Value> {
    let groups = groups(rest);
    let versions = groups.get(group).filter(|_| !group.is_empty())?;
    let mut g = api_group(group, versions);
    if let Value::Object(m) = &mut g {
        m.insert("kind".into(), json!("APIGroup"));
        m.insert("apiVersion".into(), json!("v1"));
    }
    Some(g)
}

/// `/api/v1` or `/apis/G/V` (legacy): the group version's resources.
pub fn resources(rest: &Rest, group: &str, version: &str) -> Option<Value> {
    let groups = groups(rest);
    let (_, endpoints) = groups.get(group)?.iter().find(|(v, _)| v == version)?;
    let resources: Vec<Value> = endpoints
        .iter()
        .flat_map(|e| api_resources(e.info(), &rest.catalog.create_only_subresources(e.info())))
        .collect();
    Some(json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version(group, version),
        "resources": resources,
    }))
}

/// A resource in aggregated discovery, with its create-only subresources `extra`.
fn discovery_resource(info: &ResourceInfo, extra: &[Arc<CreateOnly>]) -> Value {
    let kind = json!({"group": info.group, "version": info.version, "kind": info.kind});
    let mut r = serde_json::Map::new();
    r.insert("resource".into(), json!(info.plural));
    r.insert("responseKind".into(), kind.clone());
    r.insert(
        "scope".into(),
        json!(if info.namespaced {
            "Namespaced"
        } else {
            "Cluster"
        }),
    );
    r.insert("singularResource".into(), json!(info.singular));
    r.insert("verbs".into(), json!(info.verbs));
    if !info.short_names.is_empty() {
        r.insert("shortNames".into(), json!(info.short_names));
    }
    if !info.categories.is_empty() {
        r.insert("categories".into(), json!(info.categories));
    }
    let mut subresources = Vec::new();
    if info.finalize {
        subresources
            .push(json!({"subresource": "finalize", "responseKind": kind, "verbs": ["update"]}));
    }
    if info.status {
        subresources.push(json!({"subresource": "status", "responseKind": kind, "verbs": ["get", "patch", "update"]}));
    }
    for c in extra {
        let (group, version, kind) = c.kind;
        subresources.push(json!({
            "subresource": c.subresource,
            "responseKind": {"group": group, "version": version, "kind": kind},
            "verbs": ["create"],
        }));
    }
    if !subresources.is_empty() {
        r.insert("subresources".into(), Value::Array(subresources));
    }
    Value::Object(r)
}

/// Aggregated discovery of the core group (`/api`, `core = true`) or of every other group
/// (`/apis`), in `apidiscovery.k8s.io` `api_version` (v2 or v2beta1).
pub fn aggregated(rest: &Rest, core: bool, api_version: &str) -> Value {
    let items: Vec<Value> = groups(rest)
        .into_iter()
        .filter(|(g, _)| g.is_empty() == core)
        .map(|(g, versions)| {
            let vs: Vec<Value> = versions
                .iter()
                .map(|(v, endpoints)| {
                    let resources: Vec<Value> = endpoints
                        .iter()
                        .map(|e| {
                            discovery_resource(
                                e.info(),
                                &rest.catalog.create_only_subresources(e.info()),
                            )
                        })
                        .collect();
                    json!({"version": v, "resources": resources, "freshness": "Current"})
                })
                .collect();
            json!({"metadata": {"name": g, "creationTimestamp": null}, "versions": vs})
        })
        .collect();
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": format!("apidiscovery.k8s.io/{api_version}"),
        "metadata": {},
        "items": items,
    })
}

/// A discovery document as JSON, with the media type it is in.
pub fn answer(body: &Value, content_type: &str) -> http::Response<Body> {
    reply::bytes(
        StatusCode::OK,
        content_type,
        bytes::Bytes::from(serde_json::to_vec(body).unwrap_or_default()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_sort_as_upstreams() {
        let mut v = vec![
            "v1alpha1", "v2beta1", "foo", "v1", "v1beta2", "v2", "v10", "bar",
        ];
        v.sort_by(|a, b| kube_version_order(a, b));
        assert_eq!(
            v,
            [
                "v10", "v2", "v1", "v2beta1", "v1beta2", "v1alpha1", "bar", "foo"
            ]
        );
    }
}
