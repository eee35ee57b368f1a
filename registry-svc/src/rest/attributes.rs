//! What a REST request asks to do, for the gate (`authz`): upstream's
//! `RequestInfoFactory.NewRequestInfo`, on the path `route` parsed.
//!
//! A resource request's verb comes from its method: GET and HEAD are `get`, or `list` /
//! `watch` without a name (`watch` when the `watch` parameter is set, as Go's `ParseBool` and
//! upstream's fallback read it); POST `create`, PUT `update`, PATCH `patch`, DELETE `delete`, or
//! `deletecollection` without a name. A list or watch narrowed by the field selector
//! `metadata.name=NAME` names NAME. Every other path is a non-resource request whose verb is the
//! lower-cased method.

use http::Method;

use super::{params::Query, route::ResourcePath};
use crate::authz::{Attributes, ResourceAttributes};

/// The attributes of a request for a resource.
pub fn resource(method: &Method, path: &ResourcePath, query: &Query) -> Attributes {
    let named = path.name.as_deref().is_some_and(|n| !n.is_empty());
    let verb = match *method {
        Method::POST => "create",
        Method::PUT => "update",
        Method::PATCH => "patch",
        Method::DELETE if named => "delete",
        Method::DELETE => "deletecollection",
        _ if named => "get",
        // Upstream reads `watch` as ParseBool; a value it cannot read still counts as a watch
        // unless it is `false` or `0`.
        _ if query.watch().unwrap_or_else(|_| {
            !matches!(
                query.get("watch").map(str::to_ascii_lowercase).as_deref(),
                Some("false" | "0")
            )
        }) =>
        {
            "watch"
        }
        _ => "list",
    };
    let name = match (verb, &path.name) {
        (_, Some(name)) => name.clone(),
        ("list" | "watch", None) => {
            let options = kubestore_proto::meta::v1::ListOptions {
                field_selector: query.get("fieldSelector").unwrap_or("").to_string(),
                ..Default::default()
            };
            crate::authz::selected_name(Some(&options))
        }
        _ => String::new(),
    };
    Attributes::Resource(
        ResourceAttributes::new(verb, &path.group, &path.version, &path.resource)
            .subresource(path.subresource.as_deref().unwrap_or(""))
            .at(path.namespace.as_deref().unwrap_or(""), &name),
    )
}

/// The attributes of a request for a path that is no resource (`/version`, `/apis`,
/// `/openapi/v3`, `/healthz`, a path nobody serves).
pub fn non_resource(method: &Method, path: &str) -> Attributes {
    Attributes::NonResource {
        verb: method.as_str().to_ascii_lowercase(),
        path: path.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rest::route::{Route, parse};

    /// method, url, verb, group, namespace, resource, subresource, name.
    type Case = (
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        &'static str,
    );

    /// Upstream's `TestGetAPIRequestInfo` cases that apply (kubestore serves no legacy
    /// `/api/v1/watch/...` prefix and no proxy paths).
    #[test]
    fn upstream_request_info_cases() {
        let cases: &[Case] = &[
            // method, url, verb, group, namespace, resource, subresource, name
            (
                "GET",
                "/api/v1/namespaces",
                "list",
                "",
                "",
                "namespaces",
                "",
                "",
            ),
            (
                "GET",
                "/api/v1/namespaces/other",
                "get",
                "",
                "other",
                "namespaces",
                "",
                "other",
            ),
            (
                "GET",
                "/api/v1/namespaces/other/pods",
                "list",
                "",
                "other",
                "pods",
                "",
                "",
            ),
            (
                "GET",
                "/api/v1/namespaces/other/pods/foo",
                "get",
                "",
                "other",
                "pods",
                "",
                "foo",
            ),
            (
                "HEAD",
                "/api/v1/namespaces/other/pods/foo",
                "get",
                "",
                "other",
                "pods",
                "",
                "foo",
            ),
            ("GET", "/api/v1/pods", "list", "", "", "pods", "", ""),
            (
                "GET",
                "/api/v1/namespaces/other/pods?watch=true",
                "watch",
                "",
                "other",
                "pods",
                "",
                "",
            ),
            (
                "GET",
                "/api/v1/namespaces/other/pods?watch=1",
                "watch",
                "",
                "other",
                "pods",
                "",
                "",
            ),
            (
                "GET",
                "/api/v1/namespaces/other/pods?watch=false",
                "list",
                "",
                "other",
                "pods",
                "",
                "",
            ),
            (
                "GET",
                "/api/v1/namespaces/other/pods?watch=bogus",
                "watch",
                "",
                "other",
                "pods",
                "",
                "",
            ),
            (
                "GET",
                "/api/v1/namespaces/other/pods/foo?watch=1",
                "get",
                "",
                "other",
                "pods",
                "",
                "foo",
            ),
            (
                "POST",
                "/api/v1/namespaces/other/pods",
                "create",
                "",
                "other",
                "pods",
                "",
                "",
            ),
            (
                "PUT",
                "/api/v1/namespaces/other/pods/foo",
                "update",
                "",
                "other",
                "pods",
                "",
                "foo",
            ),
            (
                "PATCH",
                "/api/v1/namespaces/other/pods/foo",
                "patch",
                "",
                "other",
                "pods",
                "",
                "foo",
            ),
            (
                "DELETE",
                "/api/v1/namespaces/other/pods/foo",
                "delete",
                "",
                "other",
                "pods",
                "",
                "foo",
            ),
            (
                "DELETE",
                "/api/v1/namespaces/other/pods",
                "deletecollection",
                "",
                "other",
                "pods",
                "",
                "",
            ),
            (
                "PUT",
                "/api/v1/namespaces/other/pods/foo/status",
                "update",
                "",
                "other",
                "pods",
                "status",
                "foo",
            ),
            (
                "PUT",
                "/api/v1/namespaces/other/finalize",
                "update",
                "",
                "other",
                "namespaces",
                "finalize",
                "other",
            ),
            (
                "GET",
                "/apis/coordination.k8s.io/v1/namespaces/ns/leases/l",
                "get",
                "coordination.k8s.io",
                "ns",
                "leases",
                "",
                "l",
            ),
            (
                "GET",
                "/api/v1/namespaces/other/pods?fieldSelector=metadata.name%3Dfoo",
                "list",
                "",
                "other",
                "pods",
                "",
                "foo",
            ),
            (
                "GET",
                "/api/v1/namespaces/other/pods?fieldSelector=metadata.name%3D%3Dfoo,spec.nodeName%3Dn",
                "list",
                "",
                "other",
                "pods",
                "",
                "foo",
            ),
            (
                "GET",
                "/api/v1/namespaces/other/pods?fieldSelector=metadata.name!%3Dfoo",
                "list",
                "",
                "other",
                "pods",
                "",
                "",
            ),
            (
                "GET",
                "/api/v1/namespaces/other/pods?watch=1&fieldSelector=metadata.name%3D..",
                "watch",
                "",
                "other",
                "pods",
                "",
                "",
            ),
        ];
        for (method, url, verb, group, namespace, plural, subresource, name) in cases {
            let (path, query) = url.split_once('?').unwrap_or((url, ""));
            let Route::Resource(rp) = parse(path, |_, _, r| r == "pods" || r == "leases") else {
                panic!("{url} is a resource path");
            };
            let method = Method::from_bytes(method.as_bytes()).expect("a method");
            let got = resource(&method, &rp, &Query::parse(Some(query)));
            let want = Attributes::Resource(ResourceAttributes {
                verb: verb.to_string(),
                group: group.to_string(),
                version: "v1".into(),
                resource: plural.to_string(),
                subresource: subresource.to_string(),
                namespace: namespace.to_string(),
                name: name.to_string(),
            });
            assert_eq!(got, want, "{method} {url}");
        }
        assert_eq!(
            non_resource(&Method::GET, "/version"),
            Attributes::NonResource {
                verb: "get".into(),
                path: "/version".into()
            }
        );
    }
}
