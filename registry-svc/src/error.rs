//! The registry's API errors (upstream's `StatusError`s) and their one mapping to gRPC.
//!
//! Reasons follow upstream's `metav1.StatusReason`; codes follow what the caller should do:
//! ABORTED = re-read and retry the read-modify-write (Conflict); UNAVAILABLE = retry the call;
//! INVALID_ARGUMENT = fix the request (Invalid carries a `google.rpc.BadRequest` listing the
//! field violations); RESOURCE_EXHAUSTED = etcd is out of space, an operator must act. Storage
//! errors are translated in [`ApiError::from_storage`], once, into what upstream says about the
//! object: storage keys never reach a client.
//!
//! Every status fits in the trailers of any gRPC client: messages, metadata values and the
//! BadRequest details are bounded (`kubestore_proto::limits`, `violations`), with "and N more"
//! where violations were left out.

use kubestore_proto::limits::{MAX_METADATA_VALUE_BYTES, MAX_STATUS_MESSAGE_BYTES, bounded};
use tonic::{Code, Status};
use tonic_types::{ErrorDetails, FieldViolation, StatusExt};

use crate::violations::Violations;

/// Bytes of field violations put in a `google.rpc.BadRequest`.
const MAX_BAD_REQUEST_BYTES: usize = 3072;

/// `ErrorInfo.domain` of every registry-svc error.
pub const DOMAIN: &str = "registry.kubestore.io";

/// An API error.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ApiError {
    /// The object does not exist.
    #[error("{resource} \"{}\" not found", shown(.name))]
    NotFound {
        /// Plural resource, e.g. `pods`.
        resource: String,
        /// Object name.
        name: String,
    },
    /// Create found the name taken.
    #[error("{message}")]
    AlreadyExists {
        /// Plural resource.
        resource: String,
        /// Object name.
        name: String,
        /// Full message.
        message: String,
    },
    /// Optimistic-concurrency or precondition failure.
    #[error("Operation cannot be fulfilled on {resource} \"{}\": {message}", shown(.name))]
    Conflict {
        /// Plural resource.
        resource: String,
        /// Object name.
        name: String,
        /// What did not match.
        message: String,
    },
    /// A server-side apply set fields other managers own, to other values (upstream's
    /// `NewApplyConflict`: 409 Conflict, one `FieldManagerConflict` cause per field).
    #[error("{message}")]
    ApplyConflict {
        /// Upstream's words (`Apply failed with 1 conflict: conflict with "kubectl" ...`).
        message: String,
        /// (`conflict with "<manager>"`, the field's path) per conflict.
        causes: Vec<(String, String)>,
    },
    /// The object fails validation; the violations are listed.
    #[error("{kind} \"{}\" is invalid: {}", shown(.name), render(.violations))]
    Invalid {
        /// Kind, e.g. `Pod`.
        kind: String,
        /// Object name.
        name: String,
        /// (field path, description), bounded.
        violations: Violations,
    },
    /// The request itself is malformed (missing object, namespace mismatch, bad name).
    #[error("{0}")]
    BadRequest(String),
    /// A patch that cannot apply to the object (upstream's 422 "the server rejected our
    /// request": a JSON patch `test` that fails, a path that does not exist); the patch
    /// library's words in `detail`.
    #[error("the server rejected our request due to an error in our request: {detail}")]
    Unprocessable {
        /// Why the patch did not apply.
        detail: String,
    },
    /// The verb is not supported by the resource (upstream's 405 MethodNotAllowed).
    #[error("{0}")]
    MethodNotSupported(String),
    /// The response cannot be given in any media type the client accepts (406).
    #[error("{0}")]
    NotAcceptable(String),
    /// The body is in a media type the resource does not take (415), e.g. a strategic merge
    /// patch of a custom kind.
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// The object is larger than storage can hold (upstream's 413 RequestEntityTooLarge).
    #[error("Request entity too large: {kind} \"{}\" is {bytes} bytes encoded; storage accepts at most {limit} bytes per object, its key included", shown(.name))]
    TooLarge {
        /// Kind.
        kind: String,
        /// Object name.
        name: String,
        /// Encoded size.
        bytes: usize,
        /// The limit.
        limit: usize,
    },
    /// The request is larger than upstream takes (413): a body past 3 MiB, a JSON patch of more
    /// than 10,000 operations. Upstream's words follow "Request entity too large: ".
    #[error("Request entity too large: {0}")]
    EntityTooLarge(String),
    /// etcd is out of space: writes fail until an operator frees space; reads work.
    #[error("{0}")]
    StorageFull(String),
    /// The requested resourceVersion was compacted (upstream's 410 Gone): list again, or
    /// follow `continue_token` (sent as `ErrorInfo.metadata["continue"]`).
    #[error("{message}")]
    Expired {
        /// Upstream's words.
        message: String,
        /// A token continuing the list at the current revision.
        continue_token: Option<String>,
    },
    /// A watcher that stopped reading was cut off.
    #[error("{0}")]
    WatcherTooSlow(String),
    /// storage-svc refused the call: `--max-requests-inflight` calls were running there.
    /// Passed on as RESOURCE_EXHAUSTED with the same retry hint, as registry-svc's own limit.
    #[error("{0}")]
    TooManyRequests(String),
    /// storage-svc or etcd cannot serve now.
    #[error("{message}")]
    Unavailable {
        /// `ServiceUnavailable` or `Timeout`.
        reason: &'static str,
        /// What happened.
        message: String,
    },
    /// The request is not allowed in the object's present state (upstream's 403 Forbidden of
    /// admission, e.g. creating an object of a definition being deleted): FAILED_PRECONDITION,
    /// do not retry until the state changes.
    #[error("{0}")]
    Forbidden(String),
    /// The request's user may not do what it asks (upstream's 403 of its authorizers, worded
    /// by `authz::forbidden`): PERMISSION_DENIED.
    #[error("{message}")]
    Denied {
        /// The API group of the resource asked for.
        group: String,
        /// The plural resource ("" for a non-resource path).
        resource: String,
        /// The object's name, if the request named one.
        name: String,
        /// Upstream's message.
        message: String,
    },
    /// Admission refused the request with a status reason of its choosing (a
    /// ValidatingAdmissionPolicy's `reason`: upstream's `admission.NewForbidden` whose reason and
    /// code are replaced): `Invalid` (422, the default), `Forbidden` (403), `Unauthorized`
    /// (401), `RequestEntityTooLarge` (413).
    #[error("{}", forbidden(.group, .resource, .name, .message))]
    Rejected {
        /// The status reason.
        reason: &'static str,
        /// The API group of the resource.
        group: String,
        /// The plural resource.
        resource: String,
        /// The object's name.
        name: String,
        /// Why (`ValidatingAdmissionPolicy 'P' with binding 'B' denied request: ...`): the
        /// status's one cause; the message is `<resource> "<name>" is forbidden: <why>`.
        message: String,
    },
    /// An admission webhook refused the request: its Status passed on (upstream's
    /// `ToStatusErr`: the webhook's code, at least 400, and reason; the message after `admission
    /// webhook "NAME" denied the request`).
    #[error("{message}")]
    Webhook {
        /// The HTTP status code.
        code: u16,
        /// The status reason ("" when the webhook gave none, or one upstream does not define).
        reason: &'static str,
        /// The message.
        message: String,
    },
    /// A bug or corrupt data.
    #[error("Internal error occurred: {0}")]
    Internal(String),
}

/// A client-supplied name as shown in messages: at most a valid name's length.
fn shown(name: &str) -> std::borrow::Cow<'_, str> {
    bounded(name, 256)
}

/// Upstream's `NewForbidden` message: `<resource>[.<group>] "<name>" is forbidden: <why>`.
fn forbidden(group: &str, resource: &str, name: &str, why: &str) -> String {
    let resource = if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    };
    if name.is_empty() {
        format!("{resource} is forbidden: {why}")
    } else {
        format!("{resource} \"{}\" is forbidden: {why}", shown(name))
    }
}

/// `reason` if it is one of upstream's `metav1.StatusReason`s, else "" (a webhook's Status may
/// carry any text; the reason a client reads must be one it knows).
pub fn known_reason(reason: &str) -> &'static str {
    const KNOWN: &[&str] = &[
        "Unauthorized",
        "Forbidden",
        "NotFound",
        "AlreadyExists",
        "Conflict",
        "Gone",
        "Invalid",
        "ServerTimeout",
        "StoreReadError",
        "Timeout",
        "TooManyRequests",
        "BadRequest",
        "MethodNotAllowed",
        "NotAcceptable",
        "RequestEntityTooLarge",
        "UnsupportedMediaType",
        "InternalError",
        "Expired",
        "ServiceUnavailable",
    ];
    KNOWN.iter().find(|k| **k == reason).copied().unwrap_or("")
}

/// `[field: description, ..., and N more]`, within the status message budget.
fn render(violations: &Violations) -> String {
    let budget = MAX_STATUS_MESSAGE_BYTES / 2;
    let mut parts: Vec<String> = Vec::new();
    let mut used = 0;
    let mut left_out = violations.omitted();
    for (f, d) in violations.iter() {
        let part = if f.is_empty() {
            d.clone()
        } else {
            format!("{f}: {d}")
        };
        if used + part.len() > budget && !parts.is_empty() {
            left_out += 1;
            continue;
        }
        used += part.len() + 2;
        parts.push(part);
    }
    if left_out > 0 {
        parts.push(format!("and {left_out} more"));
    }
    format!("[{}]", parts.join(", "))
}

impl ApiError {
    /// The `ErrorInfo.reason`.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::NotFound { .. } => "NotFound",
            Self::AlreadyExists { .. } => "AlreadyExists",
            Self::Conflict { .. } | Self::ApplyConflict { .. } => "Conflict",
            Self::Invalid { .. } | Self::Unprocessable { .. } => "Invalid",
            Self::BadRequest(_) => "BadRequest",
            Self::MethodNotSupported(_) => "MethodNotAllowed",
            Self::NotAcceptable(_) => "NotAcceptable",
            Self::UnsupportedMediaType(_) => "UnsupportedMediaType",
            Self::TooLarge { .. } | Self::EntityTooLarge(_) => "RequestEntityTooLarge",
            Self::StorageFull(_) => "StorageFull",
            Self::Expired { .. } => "Expired",
            Self::WatcherTooSlow(_) => "WatcherTooSlow",
            Self::TooManyRequests(_) => "TooManyRequests",
            Self::Unavailable { reason, .. } => reason,
            Self::Forbidden(_) | Self::Denied { .. } => "Forbidden",
            Self::Rejected { reason, .. } | Self::Webhook { reason, .. } => reason,
            Self::Internal(_) => "InternalError",
        }
    }

    /// The HTTP status upstream answers it with (the REST API's status, and the `code` label
    /// of the request metrics on every transport).
    pub fn http_code(&self) -> u16 {
        match self {
            Self::NotFound { .. } => 404,
            Self::AlreadyExists { .. } | Self::Conflict { .. } | Self::ApplyConflict { .. } => 409,
            Self::Invalid { .. } | Self::Unprocessable { .. } => 422,
            Self::BadRequest(_) => 400,
            Self::MethodNotSupported(_) => 405,
            Self::NotAcceptable(_) => 406,
            Self::UnsupportedMediaType(_) => 415,
            Self::TooLarge { .. } | Self::EntityTooLarge(_) => 413,
            Self::Expired { .. } => 410,
            Self::WatcherTooSlow(_) | Self::TooManyRequests(_) => 429,
            Self::Forbidden(_) | Self::Denied { .. } => 403,
            Self::Webhook { code, .. } => *code,
            Self::Rejected { reason, .. } => match *reason {
                "Unauthorized" => 401,
                "Forbidden" => 403,
                "RequestEntityTooLarge" => 413,
                _ => 422,
            },
            Self::Unavailable { reason, .. } if *reason == "Timeout" => 504,
            Self::Unavailable { .. } => 503,
            Self::StorageFull(_) | Self::Internal(_) => 500,
        }
    }

    /// The gRPC code.
    pub fn code(&self) -> Code {
        match self {
            Self::NotFound { .. } => Code::NotFound,
            Self::AlreadyExists { .. } => Code::AlreadyExists,
            Self::Conflict { .. } | Self::ApplyConflict { .. } => Code::Aborted,
            Self::Invalid { .. }
            | Self::Unprocessable { .. }
            | Self::BadRequest(_)
            | Self::TooLarge { .. }
            | Self::EntityTooLarge(_)
            | Self::NotAcceptable(_)
            | Self::UnsupportedMediaType(_) => Code::InvalidArgument,
            Self::MethodNotSupported(_) => Code::Unimplemented,
            Self::StorageFull(_) | Self::WatcherTooSlow(_) | Self::TooManyRequests(_) => {
                Code::ResourceExhausted
            }
            Self::Expired { .. } => Code::OutOfRange,
            Self::Unavailable { .. } => Code::Unavailable,
            Self::Forbidden(_) => Code::FailedPrecondition,
            Self::Rejected { reason, .. } => match *reason {
                "Forbidden" => Code::FailedPrecondition,
                "Unauthorized" => Code::Unauthenticated,
                _ => Code::InvalidArgument,
            },
            Self::Denied { .. } => Code::PermissionDenied,
            Self::Webhook { code, .. } => match code {
                401 => Code::Unauthenticated,
                403 => Code::FailedPrecondition,
                404 => Code::NotFound,
                409 => Code::Aborted,
                429 => Code::ResourceExhausted,
                500..=599 => Code::Unavailable,
                _ => Code::InvalidArgument,
            },
            Self::Internal(_) => Code::Internal,
        }
    }

    /// Translates a storage-svc status for an operation on `resource`/`name`. Storage's
    /// messages name no keys, so they can be passed on; errors that did not come from storage's
    /// handlers (no ErrorInfo: the connection, the transport) are UNAVAILABLE.
    pub fn from_storage(status: &Status, kind: &str, resource: &str, name: &str) -> Self {
        let reason = status.get_details_error_info().map(|i| i.reason);
        let message = status.message().to_string();
        match reason.as_deref() {
            Some("NotFound") => Self::NotFound {
                resource: resource.into(),
                name: name.into(),
            },
            Some("AlreadyExists") => Self::AlreadyExists {
                resource: resource.into(),
                name: name.into(),
                message: format!("{resource} \"{name}\" already exists"),
            },
            Some("Conflict") => Self::Conflict {
                resource: resource.into(),
                name: name.into(),
                message,
            },
            Some("Invalid") => Self::Invalid {
                kind: kind.into(),
                name: name.into(),
                violations: Violations::from(vec![(String::new(), message)]),
            },
            Some("Timeout") => Self::Unavailable {
                reason: "Timeout",
                message,
            },
            Some("ServiceUnavailable") => Self::Unavailable {
                reason: "ServiceUnavailable",
                message,
            },
            Some("StorageFull") => Self::StorageFull(message),
            Some("Expired") => Self::Expired {
                message,
                continue_token: status
                    .get_details_error_info()
                    .and_then(|i| i.metadata.get("continue").cloned()),
            },
            Some("WatcherTooSlow") => Self::WatcherTooSlow(message),
            Some("TooManyRequests") => Self::TooManyRequests(format!("storage-svc: {message}")),
            // InternalError, or a request storage could not decode (BadRequest): our bug.
            Some(_) => Self::Internal(message),
            None => match status.code() {
                Code::DeadlineExceeded | Code::Cancelled => Self::Unavailable {
                    reason: "Timeout",
                    message: format!("storage-svc did not answer in time: {message}"),
                },
                Code::Unavailable
                | Code::Unknown
                | Code::Internal
                | Code::ResourceExhausted
                | Code::Aborted => Self::Unavailable {
                    reason: "ServiceUnavailable",
                    message: format!("storage-svc is unavailable: {message}"),
                },
                _ => Self::Internal(format!("storage-svc: {}: {message}", status.code())),
            },
        }
    }

    /// A patch that was not applied: malformed (400) or not applicable to the object (422,
    /// upstream's `StatusReasonInvalid` with the patch library's message).
    pub fn from_patch(e: kubestore_apimachinery::patch::PatchError) -> Self {
        use kubestore_apimachinery::patch::PatchError;
        match e {
            PatchError::BadRequest(m) => Self::BadRequest(m),
            PatchError::Unprocessable(detail) => Self::Unprocessable { detail },
            PatchError::TooLarge(m) => Self::EntityTooLarge(m),
            PatchError::Timeout => crate::offload::timeout(),
        }
    }

    /// An Invalid error for one object.
    pub fn invalid(kind: &str, name: &str, violations: impl Into<Violations>) -> Self {
        Self::Invalid {
            kind: kind.into(),
            name: name.into(),
            violations: violations.into(),
        }
    }
}

impl From<ApiError> for Status {
    fn from(e: ApiError) -> Self {
        let mut details = ErrorDetails::new();
        let mut meta = std::collections::HashMap::new();
        let mut put = |k: &str, v: &str| {
            meta.insert(
                k.to_string(),
                bounded(v, MAX_METADATA_VALUE_BYTES).into_owned(),
            );
        };
        match &e {
            ApiError::NotFound { resource, name }
            | ApiError::AlreadyExists { resource, name, .. }
            | ApiError::Conflict { resource, name, .. } => {
                put("resource", resource);
                put("name", name);
            }
            ApiError::ApplyConflict { causes, .. } => {
                details.set_bad_request(
                    causes
                        .iter()
                        .map(|(message, field)| FieldViolation::new(field.clone(), message.clone()))
                        .collect::<Vec<_>>(),
                );
            }
            ApiError::Invalid {
                kind,
                name,
                violations,
            } => {
                put("kind", kind);
                put("name", name);
                details.set_bad_request(bad_request(violations));
            }
            ApiError::TooLarge { kind, name, .. } => {
                put("kind", kind);
                put("name", name);
            }
            ApiError::Denied {
                group,
                resource,
                name,
                ..
            }
            | ApiError::Rejected {
                group,
                resource,
                name,
                ..
            } => {
                put("group", group);
                put("resource", resource);
                put("name", name);
            }
            ApiError::TooManyRequests(_) => {
                details.set_retry_info(Some(kubestore_telemetry::inflight::RETRY_AFTER));
            }
            ApiError::Expired {
                continue_token: Some(t),
                ..
            } => {
                // A token is needed whole; it is bounded by the key length it carries.
                meta.insert("continue".to_string(), t.clone());
            }
            _ => {}
        }
        details.set_error_info(e.reason(), DOMAIN, meta);
        let message = e.to_string();
        Status::with_error_details(
            e.code(),
            bounded(&message, MAX_STATUS_MESSAGE_BYTES),
            details,
        )
    }
}

/// The kept violations that fit in [`MAX_BAD_REQUEST_BYTES`], and one entry counting the rest.
fn bad_request(violations: &Violations) -> Vec<FieldViolation> {
    let mut out = Vec::new();
    let mut used = 0;
    let mut left_out = violations.omitted();
    for (f, d) in violations.iter() {
        if used + f.len() + d.len() > MAX_BAD_REQUEST_BYTES {
            left_out += 1;
            continue;
        }
        used += f.len() + d.len();
        out.push(FieldViolation::new(f.clone(), d.clone()));
    }
    if left_out > 0 {
        out.push(FieldViolation::new(
            "",
            format!("and {left_out} more violations, not listed"),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_lists_every_violation_in_bad_request() {
        let e = ApiError::invalid(
            "Pod",
            "x",
            vec![
                ("metadata.name".to_string(), "bad".to_string()),
                ("spec.containers".to_string(), "Required value".to_string()),
            ],
        );
        assert_eq!(
            e.to_string(),
            "Pod \"x\" is invalid: [metadata.name: bad, spec.containers: Required value]"
        );
        let s = Status::from(e);
        assert_eq!(s.code(), Code::InvalidArgument);
        let br = s.get_details_bad_request().expect("BadRequest attached");
        assert_eq!(br.field_violations.len(), 2);
        assert_eq!(
            s.get_details_error_info().map(|i| i.reason).as_deref(),
            Some("Invalid")
        );
    }

    #[test]
    fn storage_statuses_translate_by_reason() {
        let storage = |reason: &str, code: Code| {
            Status::with_error_details(
                code,
                "m",
                ErrorDetails::with_error_info(
                    reason,
                    "storage.kubestore.io",
                    std::collections::HashMap::new(),
                ),
            )
        };
        assert!(matches!(
            ApiError::from_storage(&storage("NotFound", Code::NotFound), "Pod", "pods", "a"),
            ApiError::NotFound { .. }
        ));
        assert_eq!(
            ApiError::from_storage(&storage("Conflict", Code::Aborted), "Pod", "pods", "a").code(),
            Code::Aborted
        );
        assert_eq!(
            ApiError::from_storage(
                &Status::unavailable("connection refused"),
                "Pod",
                "pods",
                "a"
            )
            .code(),
            Code::Unavailable
        );
        assert_eq!(
            ApiError::from_storage(&storage("Timeout", Code::Unavailable), "Pod", "pods", "a")
                .reason(),
            "Timeout"
        );
        // storage-svc's overload refusal is passed on, with the retry hint.
        let busy = Status::from(ApiError::from_storage(
            &storage("TooManyRequests", Code::ResourceExhausted),
            "Pod",
            "pods",
            "a",
        ));
        assert_eq!(busy.code(), Code::ResourceExhausted);
        assert_eq!(
            busy.get_details_retry_info().and_then(|r| r.retry_delay),
            Some(kubestore_telemetry::inflight::RETRY_AFTER)
        );
        let full = ApiError::from_storage(
            &storage("StorageFull", Code::ResourceExhausted),
            "Pod",
            "pods",
            "a",
        );
        assert_eq!(
            (full.code(), full.reason()),
            (Code::ResourceExhausted, "StorageFull")
        );
        // A transport failure (no ErrorInfo) is UNAVAILABLE, whatever code the client made up.
        assert_eq!(
            ApiError::from_storage(&Status::internal("h2 protocol error"), "Pod", "pods", "a")
                .code(),
            Code::Unavailable
        );
    }

    #[test]
    fn statuses_fit_in_sixteen_kib_of_trailers() {
        let many: Vec<(String, String)> = (0..100_000)
            .map(|i| {
                (
                    format!("metadata.ownerReferences[{i}].uid"),
                    "é".repeat(600),
                )
            })
            .collect();
        let s = Status::from(ApiError::invalid("Pod", &"n".repeat(6000), many));
        assert!(s.message().len() <= MAX_STATUS_MESSAGE_BYTES);
        assert!(s.message().contains("more]"), "{}", s.message());
        // grpc-message is percent-encoded (non-ASCII: 3x), details are base64 (4/3x).
        let trailer_bytes = s.message().len() * 3 + s.details().len() * 4 / 3;
        assert!(trailer_bytes < 12 * 1024, "{trailer_bytes}");
        let br = s.get_details_bad_request().expect("BadRequest");
        let last = br.field_violations.last().expect("one");
        assert!(last.description.contains("more violations"), "{last:?}");
    }
}
