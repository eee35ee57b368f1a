//! What a kind typed on the command line names, and what a manifest's `apiVersion` and `kind`
//! name, looked up in registry-svc's discovery (`registry.v1.Resources/Discover`) as kubectl's
//! REST mapper does: the CLI holds no list of kinds, so a kind added to registry-svc, or
//! defined at run time by a CustomResourceDefinition, is usable at once.
//!
//! A name (`get NAME`, `delete NAME x`) matches, case-insensitively, a resource's plural
//! (`pods`), singular (`pod`), short name (`po`) or kind (`Pod`), optionally qualified by its
//! group (`crontabs.stable.example.com`) or version and group (`crontabs.v1.stable.example.com`),
//! as kubectl's `ResourceFor` with its shortcut expander. The core group wins a name several
//! groups serve, then discovery's order; of a resource's versions, the storage version.

use kubestore_proto::registry::v1::ApiResource;

/// What registry-svc serves: every resource of every version.
#[derive(Debug, Clone, Default)]
pub struct Discovery {
    /// The resources, in discovery's order.
    pub resources: Vec<ApiResource>,
}

/// How a name matched a resource; earlier kinds of match win (plural before singular before
/// short name before kind, as the REST mapper's plural and singular maps come before the
/// shortcut expander's and the kind's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Match {
    Plural,
    Singular,
    Short,
    Kind,
}

fn matches(r: &ApiResource, name: &str) -> Option<Match> {
    if r.resource.eq_ignore_ascii_case(name) {
        Some(Match::Plural)
    } else if r.singular.eq_ignore_ascii_case(name) {
        Some(Match::Singular)
    } else if r.short_names.iter().any(|s| s.eq_ignore_ascii_case(name)) {
        Some(Match::Short)
    } else if r.kind.eq_ignore_ascii_case(name) {
        Some(Match::Kind)
    } else {
        None
    }
}

impl Discovery {
    /// Discovery's answer.
    pub fn new(resources: Vec<ApiResource>) -> Self {
        Self { resources }
    }

    /// The resource `name` names (see the module doc), or None when nothing serves it.
    pub fn resolve(&self, name: &str) -> Option<&ApiResource> {
        // Every reading of the name: `name`, `name.group`, `name.version.group`.
        let mut readings = vec![(name, None, None)];
        if let Some((first, group)) = name.split_once('.') {
            readings.push((first, None, Some(group)));
            if let Some((version, group)) = group.split_once('.') {
                readings.push((first, Some(version), Some(group)));
            }
        }
        // Lower ranks win: the kind of match, the core group, the storage version, then
        // discovery's order.
        self.resources
            .iter()
            .enumerate()
            .filter_map(|(i, r)| {
                let m = readings
                    .iter()
                    .filter(|(_, v, g)| {
                        g.is_none_or(|g| g == r.group) && v.is_none_or(|v| v == r.version)
                    })
                    .filter_map(|(n, _, _)| matches(r, n))
                    .min()?;
                Some(((m, !r.group.is_empty(), !r.storage_version, i), r))
            })
            .min_by_key(|(rank, _)| *rank)
            .map(|(_, r)| r)
    }

    /// The resource of a manifest's `apiVersion` (`v1`, `group/version`) and `kind` (exactly,
    /// as upstream's decoder matches it).
    pub fn for_kind(&self, api_version: &str, kind: &str) -> Option<&ApiResource> {
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        self.resources
            .iter()
            .find(|r| r.group == group && r.version == version && r.kind == kind)
    }
}

/// The kind as kubectl prints it before a name: `configmap`, `lease.coordination.k8s.io`,
/// `crontab.stable.example.com`.
pub fn kind_word(r: &ApiResource) -> String {
    let kind = r.kind.to_lowercase();
    if r.group.is_empty() {
        kind
    } else {
        format!("{kind}.{}", r.group)
    }
}

/// The namespace a request about `r` carries: `namespace` for a namespaced resource, "" for
/// a cluster-scoped one (whatever `-n` said, as kubectl ignores it there).
pub fn namespace_for(r: &ApiResource, namespace: &str) -> String {
    if r.namespaced {
        namespace.to_string()
    } else {
        String::new()
    }
}

/// kubectl's words for a kind nobody serves.
pub fn unknown(name: &str) -> String {
    format!("the server doesn't have a resource type {name:?}")
}

/// kubectl's words for a manifest whose kind nobody serves.
pub fn no_match(api_version: &str, kind: &str) -> String {
    format!(
        "no matches for kind {kind:?} in version {api_version:?} (ensure CRDs are installed first)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(group: &str, version: &str, plural: &str, kind: &str, short: &[&str]) -> ApiResource {
        ApiResource {
            group: group.into(),
            version: version.into(),
            resource: plural.into(),
            singular: kind.to_lowercase(),
            kind: kind.into(),
            short_names: short.iter().map(|s| s.to_string()).collect(),
            namespaced: true,
            storage_version: true,
            ..Default::default()
        }
    }

    fn discovery() -> Discovery {
        let mut v1beta1 = res(
            "stable.example.com",
            "v1beta1",
            "crontabs",
            "CronTab",
            &["ct"],
        );
        v1beta1.storage_version = false;
        Discovery::new(vec![
            res("", "v1", "pods", "Pod", &["po"]),
            res("", "v1", "namespaces", "Namespace", &["ns"]),
            res("coordination.k8s.io", "v1", "leases", "Lease", &[]),
            v1beta1,
            res("stable.example.com", "v1", "crontabs", "CronTab", &["ct"]),
            // Another group's `pods`: the core group's wins the bare name.
            res("example.com", "v1", "pods", "Pod", &[]),
        ])
    }

    #[test]
    fn names_resolve_as_kubectls_rest_mapper_resolves_them() {
        let d = discovery();
        let found = |n: &str| {
            d.resolve(n)
                .map(|r| (r.group.as_str(), r.version.as_str(), r.resource.as_str()))
        };
        for n in ["pods", "pod", "po", "Pod", "PODS"] {
            assert_eq!(found(n), Some(("", "v1", "pods")), "{n}");
        }
        assert_eq!(
            found("pods.example.com"),
            Some(("example.com", "v1", "pods"))
        );
        assert_eq!(found("ns"), Some(("", "v1", "namespaces")));
        assert_eq!(
            found("lease"),
            Some(("coordination.k8s.io", "v1", "leases"))
        );
        assert_eq!(
            found("leases.coordination.k8s.io"),
            Some(("coordination.k8s.io", "v1", "leases"))
        );
        // The storage version of a kind served in two versions, unless one is named.
        for n in ["ct", "crontab", "CronTab", "crontabs.stable.example.com"] {
            assert_eq!(
                found(n),
                Some(("stable.example.com", "v1", "crontabs")),
                "{n}"
            );
        }
        assert_eq!(
            found("crontabs.v1beta1.stable.example.com"),
            Some(("stable.example.com", "v1beta1", "crontabs"))
        );
        assert_eq!(found("widgets"), None);
        assert_eq!(found("crontabs.other.io"), None);
    }

    #[test]
    fn manifests_resolve_by_api_version_and_kind() {
        let d = discovery();
        let r = d
            .for_kind("stable.example.com/v1beta1", "CronTab")
            .expect("served");
        assert_eq!(r.version, "v1beta1");
        assert_eq!(d.for_kind("v1", "Pod").map(|r| r.group.as_str()), Some(""));
        assert!(d.for_kind("v1", "pod").is_none(), "kinds match exactly");
        assert!(d.for_kind("apps/v1", "Deployment").is_none());
        assert_eq!(kind_word(r), "crontab.stable.example.com");
        assert_eq!(kind_word(&d.resources[0]), "pod");
    }
}
