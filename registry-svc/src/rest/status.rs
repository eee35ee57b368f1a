//! API errors as upstream's `Status` bodies (`k8s.io/apimachinery/pkg/api/errors`), what
//! client-go turns back into typed errors and kubectl prints: `Error from server (NotFound):
//! pods "x" not found`, `The Pod "x" is invalid: * spec.containers: Required value`.
//!
//! The HTTP code comes from the one map in `error` (`ApiError::http_code`); here only the body.

use serde_json::{Map, Value, json};

use crate::error::ApiError;

/// The `metav1.CauseType` of a violation, read from the description's opening words (upstream's
/// `field.Error.Type` prints them: "Required value", "Invalid value", ...).
fn cause_reason(description: &str) -> &'static str {
    for (prefix, reason) in [
        ("Required value", "FieldValueRequired"),
        ("Invalid value", "FieldValueInvalid"),
        ("Unsupported value", "FieldValueNotSupported"),
        ("Forbidden", "FieldValueForbidden"),
        ("Duplicate value", "FieldValueDuplicate"),
        ("Too long", "FieldValueTooLong"),
        ("Too many", "FieldValueTooMany"),
        ("Not found", "FieldValueNotFound"),
        ("Internal error", "InternalError"),
    ] {
        if description.starts_with(prefix) {
            return reason;
        }
    }
    "FieldValueInvalid"
}

/// The `Status` body of `e`; `resource` (`pods`, `crontabs.stable.example.com`) and `kind`
/// describe what the request was about, for the details upstream gives.
pub fn body(e: &ApiError) -> Value {
    let code = e.http_code();
    let mut details = Map::new();
    let message = match e {
        ApiError::NotFound { resource, name } if resource.is_empty() && name.is_empty() => {
            "the server could not find the requested resource".to_string()
        }
        ApiError::NotFound { resource, name } => {
            put_resource(&mut details, resource);
            if !name.is_empty() {
                details.insert("name".into(), json!(name));
            }
            e.to_string()
        }
        ApiError::AlreadyExists { resource, name, .. }
        | ApiError::Conflict { resource, name, .. } => {
            put_resource(&mut details, resource);
            details.insert("name".into(), json!(name));
            e.to_string()
        }
        ApiError::Invalid {
            kind,
            name,
            violations,
        } => {
            if !name.is_empty() {
                details.insert("name".into(), json!(name));
            }
            if !kind.is_empty() {
                details.insert("kind".into(), json!(kind));
            }
            let causes: Vec<Value> = violations
                .iter()
                .map(|(field, description)| {
                    let mut c = Map::new();
                    c.insert("reason".into(), json!(cause_reason(description)));
                    c.insert("message".into(), json!(description));
                    if !field.is_empty() {
                        c.insert("field".into(), json!(field));
                    }
                    Value::Object(c)
                })
                .collect();
            details.insert("causes".into(), Value::Array(causes));
            let listed: Vec<String> = violations
                .iter()
                .map(|(f, d)| {
                    if f.is_empty() {
                        d.clone()
                    } else {
                        format!("{f}: {d}")
                    }
                })
                .collect();
            let listed = match listed.as_slice() {
                [one] if violations.omitted() == 0 => one.clone(),
                _ if violations.omitted() > 0 => {
                    format!("[{}, and {} more]", listed.join(", "), violations.omitted())
                }
                _ => format!("[{}]", listed.join(", ")),
            };
            if kind.is_empty() {
                listed
            } else {
                format!("{kind} \"{name}\" is invalid: {listed}")
            }
        }
        ApiError::ApplyConflict { message, causes } => {
            // A cause's type is `reason` in JSON (upstream's `StatusCause.Type`).
            let causes: Vec<Value> = causes
                .iter()
                .map(|(m, field)| json!({"reason": "FieldManagerConflict", "message": m, "field": field}))
                .collect();
            details.insert("causes".into(), Value::Array(causes));
            message.clone()
        }
        ApiError::Unprocessable { detail } => {
            details.insert(
                "causes".into(),
                json!([{"reason": "FieldValueInvalid", "message": detail, "field": "patch"}]),
            );
            // Upstream's words; what failed is in the cause.
            "the server rejected our request due to an error in our request".to_string()
        }
        ApiError::Denied {
            group,
            resource,
            name,
            ..
        } => {
            // Upstream's `NewForbidden` details: group, the resource as `kind`, name.
            for (k, v) in [("name", name), ("group", group), ("kind", resource)] {
                if !v.is_empty() {
                    details.insert(k.into(), json!(v));
                }
            }
            e.to_string()
        }
        ApiError::Rejected {
            group,
            resource,
            name,
            message,
            ..
        } => {
            // Upstream's `NewForbidden` details, and why as the one cause (what kubectl prints
            // after `is invalid: :` for an Invalid reason).
            for (k, v) in [("name", name), ("group", group), ("kind", resource)] {
                if !v.is_empty() {
                    details.insert(k.into(), json!(v));
                }
            }
            details.insert("causes".into(), json!([{ "message": message }]));
            e.to_string()
        }
        ApiError::TooManyRequests(_) | ApiError::WatcherTooSlow(_) => {
            details.insert("retryAfterSeconds".into(), json!(1));
            e.to_string()
        }
        _ => e.to_string(),
    };
    let mut status = Map::new();
    status.insert("kind".into(), json!("Status"));
    status.insert("apiVersion".into(), json!("v1"));
    status.insert("metadata".into(), json!({}));
    status.insert("status".into(), json!("Failure"));
    status.insert("message".into(), json!(message));
    status.insert("reason".into(), json!(reason(e)));
    if !details.is_empty() {
        status.insert("details".into(), Value::Object(details));
    }
    status.insert("code".into(), json!(code));
    Value::Object(status)
}

/// `pods` or `crontabs.stable.example.com` as details' `kind` and `group`.
fn put_resource(details: &mut Map<String, Value>, resource: &str) {
    match resource.split_once('.') {
        Some((plural, group)) => {
            details.insert("group".into(), json!(group));
            details.insert("kind".into(), json!(plural));
        }
        None if !resource.is_empty() => {
            details.insert("kind".into(), json!(resource));
        }
        None => {}
    }
}

/// Upstream's `metav1.StatusReason` of `e`.
fn reason(e: &ApiError) -> &'static str {
    match e {
        ApiError::BadRequest(_) => "BadRequest",
        ApiError::MethodNotSupported(_) => "MethodNotAllowed",
        ApiError::TooLarge { .. } | ApiError::EntityTooLarge(_) => "RequestEntityTooLarge",
        ApiError::StorageFull(_) | ApiError::Internal(_) => "InternalError",
        ApiError::WatcherTooSlow(_) | ApiError::TooManyRequests(_) => "TooManyRequests",
        ApiError::Unavailable { reason, .. } => match *reason {
            "Timeout" => "Timeout",
            _ => "ServiceUnavailable",
        },
        other => other.reason(),
    }
}

/// The `Status` of a finished delete (upstream's `Store.Delete`: the resource as `kind`).
pub fn deleted(name: &str, group: &str, plural: &str, uid: &str) -> Value {
    let mut details = Map::new();
    details.insert("name".into(), json!(name));
    if !group.is_empty() {
        details.insert("group".into(), json!(group));
    }
    details.insert("kind".into(), json!(plural));
    if !uid.is_empty() {
        details.insert("uid".into(), json!(uid));
    }
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": Value::Object(details),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_read_as_upstreams() {
        let nf = body(&ApiError::NotFound {
            resource: "pods".into(),
            name: "x".into(),
        });
        assert_eq!(
            nf,
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                   "message": "pods \"x\" not found", "reason": "NotFound",
                   "details": {"kind": "pods", "name": "x"}, "code": 404})
        );
        let inv = body(&ApiError::invalid(
            "Pod",
            "web",
            vec![("spec.containers".to_string(), "Required value".to_string())],
        ));
        assert_eq!(
            inv["message"],
            json!("Pod \"web\" is invalid: spec.containers: Required value")
        );
        assert_eq!(
            inv["details"]["causes"],
            json!([{"reason": "FieldValueRequired", "message": "Required value", "field": "spec.containers"}])
        );
        assert_eq!(inv["code"], json!(422));
        let crd = body(&ApiError::NotFound {
            resource: "crontabs.stable.example.com".into(),
            name: "c".into(),
        });
        assert_eq!(
            crd["details"],
            json!({"group": "stable.example.com", "kind": "crontabs", "name": "c"})
        );
    }
}
