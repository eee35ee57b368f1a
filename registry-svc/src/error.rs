//! The registry's API errors (upstream's `StatusError`s) and their one mapping to gRPC.
//!
//! Reasons follow upstream's `metav1.StatusReason`; codes follow what the caller should do:
//! ABORTED = re-read and retry the read-modify-write (Conflict); UNAVAILABLE = retry the call;
//! INVALID_ARGUMENT = fix the request (Invalid carries a `google.rpc.BadRequest` listing every
//! field violation). Storage errors are translated in [`ApiError::from_storage`], once.

use tonic::{Code, Status};
use tonic_types::{ErrorDetails, FieldViolation, StatusExt};

/// `ErrorInfo.domain` of every registry-svc error.
pub const DOMAIN: &str = "registry.kubestore.io";

/// An API error.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ApiError {
    /// The object does not exist.
    #[error("{resource} \"{name}\" not found")]
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
    #[error("Operation cannot be fulfilled on {resource} \"{name}\": {message}")]
    Conflict {
        /// Plural resource.
        resource: String,
        /// Object name.
        name: String,
        /// What did not match.
        message: String,
    },
    /// The object fails validation; every violation is listed.
    #[error("{kind} \"{name}\" is invalid: {}", render(.violations))]
    Invalid {
        /// Kind, e.g. `Pod`.
        kind: String,
        /// Object name.
        name: String,
        /// (field path, description).
        violations: Vec<(String, String)>,
    },
    /// The request itself is malformed (missing object, namespace mismatch, bad name).
    #[error("{0}")]
    BadRequest(String),
    /// storage-svc or etcd cannot serve now.
    #[error("{message}")]
    Unavailable {
        /// `ServiceUnavailable` or `Timeout`.
        reason: &'static str,
        /// What happened.
        message: String,
    },
    /// A bug or corrupt data.
    #[error("Internal error occurred: {0}")]
    Internal(String),
}

fn render(violations: &[(String, String)]) -> String {
    let parts: Vec<String> = violations
        .iter()
        .map(|(f, d)| {
            if f.is_empty() {
                d.clone()
            } else {
                format!("{f}: {d}")
            }
        })
        .collect();
    format!("[{}]", parts.join(", "))
}

impl ApiError {
    /// The `ErrorInfo.reason`.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::NotFound { .. } => "NotFound",
            Self::AlreadyExists { .. } => "AlreadyExists",
            Self::Conflict { .. } => "Conflict",
            Self::Invalid { .. } => "Invalid",
            Self::BadRequest(_) => "BadRequest",
            Self::Unavailable { reason, .. } => reason,
            Self::Internal(_) => "InternalError",
        }
    }

    /// The gRPC code.
    pub fn code(&self) -> Code {
        match self {
            Self::NotFound { .. } => Code::NotFound,
            Self::AlreadyExists { .. } => Code::AlreadyExists,
            Self::Conflict { .. } => Code::Aborted,
            Self::Invalid { .. } | Self::BadRequest(_) => Code::InvalidArgument,
            Self::Unavailable { .. } => Code::Unavailable,
            Self::Internal(_) => Code::Internal,
        }
    }

    /// Translates a storage-svc status for an operation on `resource`/`name`.
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
                violations: vec![(String::new(), message)],
            },
            Some("Timeout") => Self::Unavailable {
                reason: "Timeout",
                message,
            },
            Some("ServiceUnavailable") => Self::Unavailable {
                reason: "ServiceUnavailable",
                message,
            },
            Some(_) => Self::Internal(message),
            // No ErrorInfo: the call never reached storage-svc's handlers.
            None => match status.code() {
                Code::DeadlineExceeded | Code::Cancelled => Self::Unavailable {
                    reason: "Timeout",
                    message: format!("storage-svc did not answer in time: {message}"),
                },
                Code::Unavailable | Code::Unknown => Self::Unavailable {
                    reason: "ServiceUnavailable",
                    message: format!("storage-svc is unavailable: {message}"),
                },
                _ => Self::Internal(format!("storage-svc: {}: {message}", status.code())),
            },
        }
    }

    /// An Invalid error for one object.
    pub fn invalid(kind: &str, name: &str, violations: Vec<(String, String)>) -> Self {
        Self::Invalid {
            kind: kind.into(),
            name: name.into(),
            violations,
        }
    }
}

impl From<ApiError> for Status {
    fn from(e: ApiError) -> Self {
        let mut details = ErrorDetails::new();
        let mut meta = std::collections::HashMap::new();
        match &e {
            ApiError::NotFound { resource, name }
            | ApiError::AlreadyExists { resource, name, .. }
            | ApiError::Conflict { resource, name, .. } => {
                meta.insert("resource".to_string(), resource.clone());
                meta.insert("name".to_string(), name.clone());
            }
            ApiError::Invalid {
                kind,
                name,
                violations,
            } => {
                meta.insert("kind".to_string(), kind.clone());
                meta.insert("name".to_string(), name.clone());
                details.set_bad_request(
                    violations
                        .iter()
                        .map(|(f, d)| FieldViolation::new(f.clone(), d.clone()))
                        .collect::<Vec<_>>(),
                );
            }
            _ => {}
        }
        details.set_error_info(e.reason(), DOMAIN, meta);
        Status::with_error_details(e.code(), e.to_string(), details)
    }
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
                ("metadata.name".into(), "bad".into()),
                ("spec.containers".into(), "Required value".into()),
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
    }
}
