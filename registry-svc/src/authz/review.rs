//! The access reviews of `authorization.k8s.io/v1` (upstream's
//! `pkg/registry/authorization/*`): create-only objects that ask the gate a question and answer
//! it in their `status`, storing nothing. `kubectl auth can-i` sends SelfSubjectAccessReviews
//! (`--list`: a SelfSubjectRulesReview; `--as`: through impersonation); a webhook or a
//! controller asks for another user with a SubjectAccessReview, or in one namespace with a
//! LocalSubjectAccessReview.
//!
//! Each answer comes from the same union that decides requests (`Gate::decide`: masters, then
//! the modes), so `can-i` says exactly what a request would meet. Who may ask is the gate's
//! business too (`create` on the review resource; RBAC's bootstrap `system:basic-user` grants
//! the self reviews to every authenticated user).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::{Attributes, Caller, Decision, ResourceAttributes};
use crate::{authn::UserInfo, error::ApiError};

/// Which review.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Review {
    /// SelfSubjectAccessReview: may I?
    SelfAccess,
    /// SubjectAccessReview: may this user?
    Access,
    /// LocalSubjectAccessReview in a namespace: may this user, there?
    LocalAccess(String),
    /// SelfSubjectRulesReview: what may I do in a namespace?
    SelfRules,
}

impl Review {
    /// The review's kind and plural.
    pub fn names(&self) -> (&'static str, &'static str) {
        match self {
            Self::SelfAccess => ("SelfSubjectAccessReview", "selfsubjectaccessreviews"),
            Self::Access => ("SubjectAccessReview", "subjectaccessreviews"),
            Self::LocalAccess(_) => ("LocalSubjectAccessReview", "localsubjectaccessreviews"),
            Self::SelfRules => ("SelfSubjectRulesReview", "selfsubjectrulesreviews"),
        }
    }
}

fn invalid(kind: &str, field: &str, detail: String) -> ApiError {
    ApiError::invalid(kind, "", vec![(field.to_string(), detail)])
}

fn text(v: &Value, key: &str) -> String {
    v.get(key).and_then(Value::as_str).unwrap_or("").to_string()
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
}

/// The attributes a review's spec asks about, checked as upstream's
/// `ValidateSubjectAccessReviewSpec` checks them.
fn asked(kind: &str, spec: &Value) -> Result<Attributes, ApiError> {
    let resource = spec.get("resourceAttributes").filter(|v| !v.is_null());
    let non_resource = spec.get("nonResourceAttributes").filter(|v| !v.is_null());
    match (resource, non_resource) {
        (Some(_), Some(_)) => Err(invalid(
            kind,
            "spec.nonResourceAttributes",
            "Invalid value: \"null\": cannot be specified in combination with resourceAttributes"
                .into(),
        )),
        (None, None) => Err(invalid(
            kind,
            "spec.resourceAttributes",
            "Invalid value: \"null\": exactly one of nonResourceAttributes or resourceAttributes must be specified".into(),
        )),
        (Some(r), None) => Ok(Attributes::Resource(ResourceAttributes {
            verb: text(r, "verb"),
            group: text(r, "group"),
            version: text(r, "version"),
            resource: text(r, "resource"),
            subresource: text(r, "subresource"),
            namespace: text(r, "namespace"),
            name: text(r, "name"),
        })),
        (None, Some(n)) => Ok(Attributes::NonResource {
            verb: text(n, "verb"),
            path: text(n, "path"),
        }),
    }
}

/// The user a SubjectAccessReview's spec names.
fn subject(spec: &Value) -> UserInfo {
    let extra: BTreeMap<String, Vec<String>> = spec
        .get("extra")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), strings(Some(v))))
                .collect()
        })
        .unwrap_or_default();
    UserInfo {
        name: text(spec, "user"),
        uid: text(spec, "uid"),
        groups: strings(spec.get("groups")),
        extra,
    }
}

/// The answer to `body`, a review of `review` asked by `caller` (the request is authorized
/// already): the review with its `status`.
pub fn answer(caller: &Caller, review: &Review, mut body: Value) -> Result<Value, ApiError> {
    let (kind, _) = review.names();
    if !body.is_object() {
        return Err(ApiError::BadRequest(format!(
            "a {kind} must be a JSON object"
        )));
    }
    let spec = body.get("spec").cloned().unwrap_or(Value::Null);
    let status = match review {
        Review::SelfRules => rules(caller, &text(&spec, "namespace")),
        _ => {
            let attrs = asked(kind, &spec)?;
            let user = match review {
                Review::SelfAccess => caller.user.clone(),
                _ => {
                    let user = subject(&spec);
                    if user.name.is_empty() && user.groups.is_empty() {
                        return Err(invalid(
                            kind,
                            "spec.user",
                            "Invalid value: \"\": at least one of user or group must be specified"
                                .into(),
                        ));
                    }
                    user
                }
            };
            if let Review::LocalAccess(ns) = review {
                match &attrs {
                    Attributes::NonResource { .. } => {
                        return Err(invalid(
                            kind,
                            "spec.nonResourceAttributes",
                            "Invalid value: \"null\": disallowed on this kind of request".into(),
                        ));
                    }
                    Attributes::Resource(a) if a.namespace != *ns => {
                        return Err(invalid(
                            kind,
                            "spec.resourceAttributes.namespace",
                            format!(
                                "Invalid value: {:?}: must match metadata.namespace",
                                a.namespace
                            ),
                        ));
                    }
                    Attributes::Resource(_) => {}
                }
            }
            let (decision, reason) = caller.decide_for(&user, &attrs);
            let mut status = json!({"allowed": decision == Decision::Allow});
            if decision == Decision::Deny {
                status["denied"] = json!(true);
            }
            if !reason.is_empty() {
                status["reason"] = json!(reason);
            }
            status
        }
    };
    body["status"] = status;
    body["apiVersion"] = json!("authorization.k8s.io/v1");
    body["kind"] = json!(kind);
    let meta = body
        .as_object_mut()
        .map(|o| o.entry("metadata").or_insert_with(|| json!({})).clone());
    if let Some(Value::Object(mut m)) = meta {
        m.insert("creationTimestamp".into(), Value::Null);
        body["metadata"] = Value::Object(m);
    }
    Ok(body)
}

/// A SelfSubjectRulesReview's status: the caller's rules in `namespace` (upstream's
/// `RulesFor` of the union; `incomplete` when resolving them met errors).
fn rules(caller: &Caller, namespace: &str) -> Value {
    let (rules, errors) = caller.gate().rules_for_all(&caller.user, namespace);
    let mut resource = Vec::new();
    let mut non_resource = Vec::new();
    for r in rules {
        if r.non_resource_urls.is_empty() {
            let mut v = json!({"verbs": r.verbs, "apiGroups": r.api_groups,
                               "resources": r.resources});
            if !r.resource_names.is_empty() {
                v["resourceNames"] = json!(r.resource_names);
            }
            resource.push(v);
        } else {
            non_resource.push(json!({"verbs": r.verbs, "nonResourceURLs": r.non_resource_urls}));
        }
    }
    let mut status = json!({
        "resourceRules": resource,
        "nonResourceRules": non_resource,
        "incomplete": !errors.is_empty(),
    });
    if !errors.is_empty() {
        status["evaluationError"] = json!(errors.join(", "));
    }
    status
}
