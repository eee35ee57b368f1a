//! A refused request's error, worded as upstream's `responsewriters.Forbidden` and
//! `errors.NewForbidden` word it, so kubectl and every client print the same line:
//! `configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" in
//! the namespace "ns1"`.

use super::Attributes;
use crate::{authn::UserInfo, error::ApiError};

/// What `user` cannot do (upstream's `forbiddenMessage`).
pub fn message(user: &UserInfo, attrs: &Attributes) -> String {
    let name = &user.name;
    match attrs {
        Attributes::NonResource { verb, path } => {
            format!("User {name:?} cannot {verb} path {path:?}")
        }
        Attributes::Resource(a) => {
            let resource = if a.subresource.is_empty() {
                a.resource.clone()
            } else {
                format!("{}/{}", a.resource, a.subresource)
            };
            let scope = if a.namespace.is_empty() {
                "at the cluster scope".to_string()
            } else {
                format!("in the namespace {:?}", a.namespace)
            };
            format!(
                "User {name:?} cannot {} resource {resource:?} in API group {:?} {scope}",
                a.verb, a.group
            )
        }
    }
}

/// The 403 of a refusal with the authorizers' `reason` (empty: none given).
pub fn denied(user: &UserInfo, attrs: &Attributes, reason: &str) -> ApiError {
    // Upstream's sanitizer: the path or name is the client's, and the message may reach a
    // browser.
    let mut why = message(user, attrs)
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    if !reason.is_empty() {
        why = format!("{why}: {reason}");
    }
    let (group, resource, name) = match attrs {
        Attributes::Resource(a) => (a.group.clone(), a.resource.clone(), a.name.clone()),
        Attributes::NonResource { .. } => Default::default(),
    };
    // Upstream's `NewForbidden`: the qualified resource (`resource.group`), the name quoted.
    let qualified = if group.is_empty() {
        resource.clone()
    } else {
        format!("{resource}.{group}")
    };
    let message = if qualified.is_empty() {
        format!("forbidden: {why}")
    } else if name.is_empty() {
        format!("{qualified} is forbidden: {why}")
    } else {
        format!("{qualified} {name:?} is forbidden: {why}")
    };
    ApiError::Denied {
        group,
        resource,
        name,
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authz::ResourceAttributes;

    fn jane() -> UserInfo {
        UserInfo {
            name: "jane".into(),
            ..Default::default()
        }
    }

    #[test]
    fn upstream_words() {
        // The cases of upstream's `TestForbidden` (responsewriters/errors_test.go).
        let cases = [
            (
                Attributes::NonResource {
                    verb: "get".into(),
                    path: "/whatever".into(),
                },
                "",
                "forbidden: User \"jane\" cannot get path \"/whatever\"",
            ),
            (
                Attributes::NonResource {
                    verb: "get".into(),
                    path: "/<script>".into(),
                },
                "",
                "forbidden: User \"jane\" cannot get path \"/&lt;script&gt;\"",
            ),
            (
                Attributes::Resource(ResourceAttributes::new("get", "", "v1", "pods").at("", "")),
                "",
                "pods is forbidden: User \"jane\" cannot get resource \"pods\" in API group \"\" \
                 at the cluster scope",
            ),
            (
                Attributes::Resource(
                    ResourceAttributes::new("get", "", "v1", "pods")
                        .subresource("status")
                        .at("ns1", "web"),
                ),
                "",
                "pods \"web\" is forbidden: User \"jane\" cannot get resource \"pods/status\" in \
                 API group \"\" in the namespace \"ns1\"",
            ),
            (
                Attributes::Resource(
                    ResourceAttributes::new("create", "rbac.authorization.k8s.io", "v1", "roles")
                        .at("ns1", ""),
                ),
                "RBAC: role.rbac.authorization.k8s.io \"x\" not found",
                "roles.rbac.authorization.k8s.io is forbidden: User \"jane\" cannot create \
                 resource \"roles\" in API group \"rbac.authorization.k8s.io\" in the namespace \
                 \"ns1\": RBAC: role.rbac.authorization.k8s.io \"x\" not found",
            ),
        ];
        for (attrs, reason, want) in cases {
            let e = denied(&jane(), &attrs, reason);
            assert_eq!(e.to_string(), want);
            assert_eq!((e.http_code(), e.reason()), (403, "Forbidden"));
        }
    }
}
