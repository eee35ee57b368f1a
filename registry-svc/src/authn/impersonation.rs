//! Impersonation (upstream's `WithImpersonation`, `endpoints/filters/impersonation.go`): an
//! authenticated user acts as another with the headers `Impersonate-User`, `Impersonate-Group`
//! (repeatable), `Impersonate-Uid` and `Impersonate-Extra-<key>` (the key percent-decoded and
//! lower-cased), on the REST API and, as metadata of the same names, on gRPC (`kubectl --as`,
//! `--as-group`, `--as-uid`).
//!
//! Each thing asked for is one decision of the gate on the verb `impersonate`: `users`,
//! `groups`, `serviceaccounts` (a user named `system:serviceaccount:NS:NAME`, in namespace NS)
//! in the core group, `uids` and `userextras/<key>` in `authentication.k8s.io`; the first
//! refusal is upstream's 403 (`users "bob" is forbidden: User "alice" cannot impersonate
//! resource "users" in API group "" at the cluster scope`). Groups, extras or a uid without a
//! user are upstream's 500. The impersonated user gets `system:authenticated` unless the
//! groups asked for say otherwise, and a ServiceAccount its groups when none are asked for.
//! The headers are removed once read.

use std::collections::BTreeMap;

use http::HeaderMap;

use super::{SYSTEM_AUTHENTICATED, UserInfo};
use crate::{
    authz::{Attributes, Gate, ResourceAttributes},
    error::ApiError,
};

const USER: &str = "impersonate-user";
const GROUP: &str = "impersonate-group";
const UID: &str = "impersonate-uid";
const EXTRA: &str = "impersonate-extra-";

fn values<'a>(headers: &'a HeaderMap, name: &str) -> Vec<&'a str> {
    headers
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect()
}

/// Whether `headers` ask for impersonation.
pub fn asked(headers: &HeaderMap) -> bool {
    headers
        .keys()
        .any(|k| k.as_str().starts_with("impersonate-"))
}

/// Removes every impersonation header.
fn strip(headers: &mut HeaderMap) {
    let names: Vec<_> = headers
        .keys()
        .filter(|k| k.as_str().starts_with("impersonate-"))
        .cloned()
        .collect();
    for n in names {
        headers.remove(n);
    }
}

/// [`impersonate`] for a request being audited: its `record` learns whom it acts as (the
/// event's `impersonatedUser`). Both transports call this.
pub fn impersonate_audited(
    requestor: UserInfo,
    headers: &mut HeaderMap,
    gate: &Gate,
    record: Option<&crate::audit::Record>,
) -> Result<UserInfo, ApiError> {
    let impersonating = asked(headers);
    let user = impersonate(requestor, headers, gate)?;
    if impersonating && let Some(record) = record {
        record.impersonating(&user);
    }
    Ok(user)
}

/// The user `requestor` acts as by `headers` (itself when they ask nothing), each step
/// allowed by `gate`; the headers are removed.
pub fn impersonate(
    requestor: UserInfo,
    headers: &mut HeaderMap,
    gate: &Gate,
) -> Result<UserInfo, ApiError> {
    if !asked(headers) {
        return Ok(requestor);
    }
    let user = values(headers, USER)
        .first()
        .copied()
        .unwrap_or("")
        .to_string();
    let groups_asked: Vec<String> = values(headers, GROUP)
        .iter()
        .map(|g| g.to_string())
        .collect();
    let uid = values(headers, UID)
        .first()
        .copied()
        .unwrap_or("")
        .to_string();
    let mut extras: Vec<(String, String)> = Vec::new();
    for (name, value) in headers.iter() {
        if let Some(key) = name.as_str().strip_prefix(EXTRA)
            && let Ok(v) = value.to_str()
        {
            let key = percent_encoding::percent_decode_str(key)
                .decode_utf8()
                .map_or_else(|_| key.to_string(), |k| k.into_owned())
                .to_lowercase();
            extras.push((key, v.to_string()));
        }
    }
    strip(headers);
    if user.is_empty() {
        if groups_asked.is_empty() && extras.is_empty() && uid.is_empty() {
            // Only empty headers: nothing asked.
            return Ok(requestor);
        }
        return Err(ApiError::Internal(
            "requested groups, user extras or a uid without impersonating a user".into(),
        ));
    }
    let check = |resource: &str, group: &str, sub: &str, namespace: &str, name: &str| {
        let attrs = Attributes::Resource(
            ResourceAttributes::new("impersonate", group, "", resource)
                .subresource(sub)
                .at(namespace, name),
        );
        gate.check(&requestor, &attrs)
    };
    let mut out = UserInfo::default();
    let mut groups = Vec::new();
    match super::service_account(&user) {
        Some((ns, name)) => {
            check("serviceaccounts", "", "", ns, name)?;
            if groups_asked.is_empty() {
                groups = super::service_account_groups(ns);
            }
        }
        None => check("users", "", "", "", &user)?,
    }
    out.name = user;
    for g in groups_asked {
        check("groups", "", "", "", &g)?;
        groups.push(g);
    }
    let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (key, value) in extras {
        check("userextras", "authentication.k8s.io", &key, "", &value)?;
        extra.entry(key).or_default().push(value);
    }
    if !uid.is_empty() {
        check("uids", "authentication.k8s.io", "", "", &uid)?;
    }
    // Upstream adds system:authenticated unless a group asked for says authenticated or
    // unauthenticated already (anonymous impersonation keeps unauthenticated).
    if out.name == super::ANONYMOUS {
        if !groups.iter().any(|g| g == super::SYSTEM_UNAUTHENTICATED) {
            groups.push(super::SYSTEM_UNAUTHENTICATED.into());
        }
    } else if !groups
        .iter()
        .any(|g| g == SYSTEM_AUTHENTICATED || g == super::SYSTEM_UNAUTHENTICATED)
    {
        groups.push(SYSTEM_AUTHENTICATED.into());
    }
    out.groups = groups;
    out.extra = extra;
    out.uid = uid;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authz::Mode;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                http::HeaderName::from_bytes(k.as_bytes()).expect("name"),
                v.parse().expect("value"),
            );
        }
        h
    }

    fn alice() -> UserInfo {
        UserInfo {
            name: "alice".into(),
            groups: vec!["dev".into(), SYSTEM_AUTHENTICATED.into()],
            ..Default::default()
        }
    }

    #[test]
    fn impersonation_asks_the_gate_for_each_thing() {
        let open = Gate::allow_all();
        let mut h = headers(&[
            ("Impersonate-User", "bob"),
            ("Impersonate-Group", "ops"),
            ("Impersonate-Group", "qa"),
            ("Impersonate-Extra-Scopes%2FRead", "x"),
            ("Impersonate-Uid", "42"),
            ("Accept", "*/*"),
        ]);
        let bob = impersonate(alice(), &mut h, &open).expect("allowed");
        assert_eq!(bob.name, "bob");
        assert_eq!(bob.groups, ["ops", "qa", SYSTEM_AUTHENTICATED]);
        assert_eq!(bob.uid, "42");
        assert_eq!(bob.extra.get("scopes/read"), Some(&vec!["x".to_string()]));
        assert_eq!(h.len(), 1, "the impersonation headers are gone: {h:?}");

        let mut h = headers(&[("Impersonate-User", "system:serviceaccount:team-a:robot")]);
        let robot = impersonate(alice(), &mut h, &open).expect("allowed");
        assert_eq!(
            robot.groups,
            [
                "system:serviceaccounts",
                "system:serviceaccounts:team-a",
                SYSTEM_AUTHENTICATED
            ]
        );

        let deny = Gate::new(&[Mode::AlwaysDeny], None).expect("gate");
        let mut h = headers(&[("Impersonate-User", "bob")]);
        assert_eq!(
            impersonate(alice(), &mut h, &deny).map_err(|e| e.to_string()),
            Err(
                "users \"bob\" is forbidden: User \"alice\" cannot impersonate resource \
                 \"users\" in API group \"\" at the cluster scope: Everything is forbidden."
                    .into()
            )
        );
        let mut h = headers(&[("Impersonate-User", "system:serviceaccount:team-a:robot")]);
        assert_eq!(
            impersonate(alice(), &mut h, &deny).map_err(|e| e.to_string()),
            Err(
                "serviceaccounts \"robot\" is forbidden: User \"alice\" cannot impersonate \
                 resource \"serviceaccounts\" in API group \"\" in the namespace \"team-a\": \
                 Everything is forbidden."
                    .into()
            )
        );
        let mut h = headers(&[("Impersonate-Group", "ops")]);
        assert_eq!(
            impersonate(alice(), &mut h, &open).map_err(|e| e.http_code()),
            Err(500),
            "groups without a user"
        );
    }
}
