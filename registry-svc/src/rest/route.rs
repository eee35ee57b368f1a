//! Request paths as kube-apiserver lays them out: discovery (`/api`, `/apis/G/V`), OpenAPI,
//! health, and resources under `/api/v1` (the core group) or `/apis/G/V`:
//! `[namespaces/NS/]RESOURCE[/NAME[/SUBRESOURCE]]`.
//!
//! `namespaces/X` is itself a resource (the Namespace `X`), and `namespaces/X/status` its
//! subresource: a segment after `namespaces/X` is a namespaced resource when the group version
//! serves one by that name, else a subresource of the namespace, as upstream's router decides.

/// What a path asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// `/version`.
    Version,
    /// `/api`: the legacy group's versions (or, aggregated, the core group).
    Api,
    /// `/apis`: the groups.
    Apis,
    /// `/api/v1` or `/apis/G/V`: the resources of a group version.
    GroupVersion {
        /// "" for the core group.
        group: String,
        /// The version.
        version: String,
    },
    /// `/apis/G`: one group.
    Group(String),
    /// `/openapi/v3`.
    OpenApiV3,
    /// `/openapi/v3/<api/v1 | apis/G/V>`.
    OpenApiV3Doc(String),
    /// `/openapi/v2` (Swagger 2.0 from the v3 documents: `openapi_v2`).
    OpenApiV2,
    /// `/healthz`, `/livez`, `/readyz` and their `/NAME` checks.
    Health {
        /// `healthz`, `livez` or `readyz`.
        endpoint: String,
        /// One check (`/livez/ping`), or all.
        check: Option<String>,
    },
    /// A resource, collection or object.
    Resource(ResourcePath),
    /// Nothing here.
    NotFound,
}

/// A resource path.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ResourcePath {
    /// "" for the core group.
    pub group: String,
    /// The version.
    pub version: String,
    /// `namespaces/NS/...`: the namespace; None for all namespaces or a cluster-scoped kind.
    pub namespace: Option<String>,
    /// The plural.
    pub resource: String,
    /// The object's name; None for the collection.
    pub name: Option<String>,
    /// `status`, ...
    pub subresource: Option<String>,
}

/// Parses `path`; `is_resource(group, version, plural)` says whether a group version serves a
/// resource by that name (to tell `namespaces/X/RESOURCE` from `namespaces/X/SUBRESOURCE`).
pub fn parse(path: &str, is_resource: impl Fn(&str, &str, &str) -> bool) -> Route {
    let segments: Vec<&str> = path.trim_end_matches('/').split('/').skip(1).collect();
    let decoded: Vec<String> = segments
        .iter()
        .map(|s| {
            percent_encoding::percent_decode_str(s)
                .decode_utf8_lossy()
                .into_owned()
        })
        .collect();
    let segs: Vec<&str> = decoded.iter().map(String::as_str).collect();
    match segs.as_slice() {
        ["version"] => Route::Version,
        ["api"] => Route::Api,
        ["apis"] => Route::Apis,
        ["openapi", "v3"] => Route::OpenApiV3,
        ["openapi", "v3", rest @ ..] if !rest.is_empty() => Route::OpenApiV3Doc(rest.join("/")),
        ["openapi", "v2"] => Route::OpenApiV2,
        [endpoint @ ("healthz" | "livez" | "readyz")] => Route::Health {
            endpoint: endpoint.to_string(),
            check: None,
        },
        [endpoint @ ("healthz" | "livez" | "readyz"), check] => Route::Health {
            endpoint: endpoint.to_string(),
            check: Some(check.to_string()),
        },
        ["api", "v1"] => Route::GroupVersion {
            group: String::new(),
            version: "v1".into(),
        },
        ["api", "v1", rest @ ..] => resource("", "v1", rest, &is_resource),
        ["apis", group] => Route::Group(group.to_string()),
        ["apis", group, version] => Route::GroupVersion {
            group: group.to_string(),
            version: version.to_string(),
        },
        ["apis", group, version, rest @ ..] => resource(group, version, rest, &is_resource),
        _ => Route::NotFound,
    }
}

fn resource(
    group: &str,
    version: &str,
    rest: &[&str],
    is_resource: &impl Fn(&str, &str, &str) -> bool,
) -> Route {
    let at = |namespace: Option<&str>, resource: &str, name: Option<&str>, sub: Option<&str>| {
        Route::Resource(ResourcePath {
            group: group.into(),
            version: version.into(),
            namespace: namespace.map(String::from),
            resource: resource.into(),
            name: name.map(String::from),
            subresource: sub.map(String::from),
        })
    };
    match rest {
        ["namespaces", ns, r, tail @ ..] if is_resource(group, version, r) => match tail {
            [] => at(Some(ns), r, None, None),
            [name] => at(Some(ns), r, Some(name), None),
            [name, sub] => at(Some(ns), r, Some(name), Some(sub)),
            _ => Route::NotFound,
        },
        [r] => at(None, r, None, None),
        [r, name] => at(None, r, Some(name), None),
        [r, name, sub] => at(None, r, Some(name), Some(sub)),
        _ => Route::NotFound,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known(_: &str, _: &str, r: &str) -> bool {
        matches!(r, "pods" | "configmaps" | "namespaces" | "crontabs")
    }

    fn res(ns: Option<&str>, r: &str, name: Option<&str>, sub: Option<&str>) -> Route {
        Route::Resource(ResourcePath {
            group: String::new(),
            version: "v1".into(),
            namespace: ns.map(String::from),
            resource: r.into(),
            name: name.map(String::from),
            subresource: sub.map(String::from),
        })
    }

    #[test]
    fn paths_route_as_upstreams() {
        assert_eq!(parse("/api/v1/pods", known), res(None, "pods", None, None));
        assert_eq!(
            parse("/api/v1/namespaces/default/pods", known),
            res(Some("default"), "pods", None, None)
        );
        assert_eq!(
            parse("/api/v1/namespaces/default/pods/web/status", known),
            res(Some("default"), "pods", Some("web"), Some("status"))
        );
        assert_eq!(
            parse("/api/v1/namespaces/default", known),
            res(None, "namespaces", Some("default"), None)
        );
        assert_eq!(
            parse("/api/v1/namespaces/default/finalize", known),
            res(None, "namespaces", Some("default"), Some("finalize"))
        );
        assert_eq!(
            parse("/api/v1/namespaces", known),
            res(None, "namespaces", None, None)
        );
        assert_eq!(
            parse(
                "/apis/stable.example.com/v1/namespaces/ns/crontabs/c",
                known
            ),
            Route::Resource(ResourcePath {
                group: "stable.example.com".into(),
                version: "v1".into(),
                namespace: Some("ns".into()),
                resource: "crontabs".into(),
                name: Some("c".into()),
                subresource: None,
            })
        );
        assert_eq!(
            parse("/apis/apps/v1", known),
            Route::GroupVersion {
                group: "apps".into(),
                version: "v1".into()
            }
        );
        assert_eq!(parse("/api", known), Route::Api);
        assert_eq!(
            parse("/openapi/v3/api/v1", known),
            Route::OpenApiV3Doc("api/v1".into())
        );
        assert_eq!(parse("/nope", known), Route::NotFound);
        assert_eq!(
            parse("/readyz/ping", known),
            Route::Health {
                endpoint: "readyz".into(),
                check: Some("ping".into())
            }
        );
    }
}
