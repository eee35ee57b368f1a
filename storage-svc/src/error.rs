//! The one error type of storage-svc and its one mapping to gRPC statuses.
//!
//! Every status carries a `google.rpc.ErrorInfo` (domain [`DOMAIN`]) whose reason is one of
//! upstream's storage/API reasons, and whose metadata names the key, so that registry-svc (and any
//! other client) can act on the reason without parsing messages. Codes are chosen for what the
//! caller should do next:
//! - ABORTED: redo the read-modify-write (conflicts, failed preconditions);
//! - UNAVAILABLE: retry the same call later (etcd unreachable, too slow, or not yet at the
//!   requested revision);
//! - INVALID_ARGUMENT: the request itself is wrong; retrying cannot help;
//! - RESOURCE_EXHAUSTED: etcd is out of space (its NOSPACE alarm); writes fail until an operator
//!   compacts, defragments and disarms the alarm, reads keep working. Also a watcher that
//!   stopped reading and was cut off;
//! - OUT_OF_RANGE (reason Expired): the requested revision was compacted: list again.
//!
//! Messages say what happened without repeating the key: it travels in `ErrorInfo.metadata`
//! (`key`), and registry-svc passes messages on to its own clients, who never see storage keys.
//! Messages and metadata are bounded (`kubestore_proto::limits`) so that a status always fits in
//! the trailers of every gRPC client.

use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt};

/// `ErrorInfo.domain` of every storage-svc error.
pub const DOMAIN: &str = "storage.kubestore.io";

/// What went wrong.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StorageError {
    /// The key does not exist.
    #[error("key {key:?} not found")]
    NotFound {
        /// The caller's key.
        key: String,
    },
    /// Create found the key already present.
    #[error("key {key:?} already exists")]
    AlreadyExists {
        /// The caller's key.
        key: String,
    },
    /// A precondition failed, or the update loop ran out of attempts.
    #[error("{message}")]
    Conflict {
        /// The caller's key.
        key: String,
        /// What did not match.
        message: String,
        /// The precondition that failed (`uid` or `resourceVersion`), if one did; sent as
        /// `ErrorInfo.metadata["precondition"]`.
        precondition: Option<&'static str>,
    },
    /// Bad input: key, object bytes, resource version, size, TTL, stream protocol.
    #[error("{message}")]
    Invalid {
        /// The caller's key ("" when the key itself could not be read).
        key: String,
        /// What is wrong.
        message: String,
    },
    /// etcd could not be reached or failed, or the caller went away.
    #[error("{message}")]
    Unavailable {
        /// The caller's key.
        key: String,
        /// The client error.
        message: String,
    },
    /// etcd did not answer within the request's deadline, or the requested minimum resource
    /// version is ahead of etcd (upstream's TooLargeResourceVersion, a 504 Timeout).
    #[error("{message}")]
    Timeout {
        /// The caller's key.
        key: String,
        /// What timed out.
        message: String,
    },
    /// The requested revision was compacted (upstream's 410 Expired): list again, or follow
    /// the fresh continue token when one is given.
    #[error("{message}")]
    Expired {
        /// The caller's key.
        key: String,
        /// Upstream's words.
        message: String,
        /// A token continuing the list at the current revision (sent as
        /// `ErrorInfo.metadata["continue"]`).
        continue_token: Option<String>,
    },
    /// A watcher stopped reading and its bounded buffer filled up: it is cut off (it resumes
    /// from the last resourceVersion it saw, or lists again).
    #[error("{message}")]
    WatcherTooSlow {
        /// The watched key.
        key: String,
        /// What happened.
        message: String,
    },
    /// etcd is out of space (NOSPACE alarm): no write can succeed until an operator frees
    /// space and disarms the alarm. Reads still work.
    #[error("{message}")]
    StorageFull {
        /// The caller's key.
        key: String,
        /// etcd's words, with what to do.
        message: String,
    },
    /// A bug or corrupt data: stored bytes that do not decode, an etcd answer that breaks
    /// etcd's own contract.
    #[error("{message}")]
    Internal {
        /// The caller's key.
        key: String,
        /// What happened.
        message: String,
    },
    /// The etcd lease a write was attached to no longer exists (revoked, or expired early).
    /// The writer drops its cached lease and retries once; if it escapes, it is UNAVAILABLE.
    #[error("etcd lease {lease:x} not found")]
    LeaseNotFound {
        /// The caller's key.
        key: String,
        /// The lease id.
        lease: i64,
    },
}

impl StorageError {
    /// The `ErrorInfo.reason`.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::NotFound { .. } => "NotFound",
            Self::AlreadyExists { .. } => "AlreadyExists",
            Self::Conflict { .. } => "Conflict",
            Self::Invalid { .. } => "Invalid",
            Self::Unavailable { .. } | Self::LeaseNotFound { .. } => "ServiceUnavailable",
            Self::Timeout { .. } => "Timeout",
            Self::StorageFull { .. } => "StorageFull",
            Self::Expired { .. } => "Expired",
            Self::WatcherTooSlow { .. } => "WatcherTooSlow",
            Self::Internal { .. } => "InternalError",
        }
    }

    /// The gRPC code; see the module docs for why each was chosen.
    pub fn code(&self) -> Code {
        match self {
            Self::NotFound { .. } => Code::NotFound,
            Self::AlreadyExists { .. } => Code::AlreadyExists,
            Self::Conflict { .. } => Code::Aborted,
            Self::Invalid { .. } => Code::InvalidArgument,
            Self::Unavailable { .. } | Self::Timeout { .. } | Self::LeaseNotFound { .. } => {
                Code::Unavailable
            }
            Self::StorageFull { .. } | Self::WatcherTooSlow { .. } => Code::ResourceExhausted,
            Self::Expired { .. } => Code::OutOfRange,
            Self::Internal { .. } => Code::Internal,
        }
    }

    fn key(&self) -> &str {
        match self {
            Self::NotFound { key }
            | Self::AlreadyExists { key }
            | Self::Conflict { key, .. }
            | Self::Invalid { key, .. }
            | Self::Unavailable { key, .. }
            | Self::Timeout { key, .. }
            | Self::StorageFull { key, .. }
            | Self::Expired { key, .. }
            | Self::WatcherTooSlow { key, .. }
            | Self::Internal { key, .. }
            | Self::LeaseNotFound { key, .. } => key,
        }
    }

    /// Shorthand for [`StorageError::Invalid`].
    pub fn invalid(key: &str, message: impl Into<String>) -> Self {
        Self::Invalid {
            key: key.to_string(),
            message: message.into(),
        }
    }

    /// Shorthand for [`StorageError::Conflict`].
    pub fn conflict(key: &str, message: impl Into<String>) -> Self {
        Self::Conflict {
            key: key.to_string(),
            message: message.into(),
            precondition: None,
        }
    }

    /// A failed `uid` or `resourceVersion` precondition (a Conflict).
    pub fn precondition_failed(
        key: &str,
        precondition: &'static str,
        message: impl Into<String>,
    ) -> Self {
        Self::Conflict {
            key: key.to_string(),
            message: message.into(),
            precondition: Some(precondition),
        }
    }

    /// Shorthand for [`StorageError::Internal`].
    pub fn internal(key: &str, message: impl Into<String>) -> Self {
        Self::Internal {
            key: key.to_string(),
            message: message.into(),
        }
    }
}

impl From<StorageError> for Status {
    fn from(e: StorageError) -> Self {
        use kubestore_proto::limits::{
            MAX_METADATA_VALUE_BYTES, MAX_STATUS_MESSAGE_BYTES, bounded,
        };
        let mut metadata = std::collections::HashMap::from([(
            "key".to_string(),
            bounded(e.key(), MAX_METADATA_VALUE_BYTES).into_owned(),
        )]);
        if let StorageError::Conflict {
            precondition: Some(p),
            ..
        } = &e
        {
            metadata.insert("precondition".to_string(), p.to_string());
        }
        if let StorageError::Expired {
            continue_token: Some(t),
            ..
        } = &e
        {
            metadata.insert("continue".to_string(), t.clone());
        }
        let details = ErrorDetails::with_error_info(e.reason(), DOMAIN, metadata);
        let message = e.to_string();
        Status::with_error_details(
            e.code(),
            bounded(&message, MAX_STATUS_MESSAGE_BYTES),
            details,
        )
    }
}

/// The `ErrorInfo.reason` carried by a status, if any.
pub fn reason_of(status: &Status) -> Option<String> {
    status.get_details_error_info().map(|i| i.reason)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_maps_to_its_code_with_reason_and_key() {
        let cases = [
            (
                StorageError::NotFound { key: "/a".into() },
                Code::NotFound,
                "NotFound",
            ),
            (
                StorageError::AlreadyExists { key: "/a".into() },
                Code::AlreadyExists,
                "AlreadyExists",
            ),
            (StorageError::conflict("/a", "x"), Code::Aborted, "Conflict"),
            (
                StorageError::invalid("/a", "x"),
                Code::InvalidArgument,
                "Invalid",
            ),
            (
                StorageError::Unavailable {
                    key: "/a".into(),
                    message: "x".into(),
                },
                Code::Unavailable,
                "ServiceUnavailable",
            ),
            (
                StorageError::Timeout {
                    key: "/a".into(),
                    message: "x".into(),
                },
                Code::Unavailable,
                "Timeout",
            ),
            (
                StorageError::internal("/a", "x"),
                Code::Internal,
                "InternalError",
            ),
            (
                StorageError::StorageFull {
                    key: "/a".into(),
                    message: "x".into(),
                },
                Code::ResourceExhausted,
                "StorageFull",
            ),
            (
                StorageError::LeaseNotFound {
                    key: "/a".into(),
                    lease: 7,
                },
                Code::Unavailable,
                "ServiceUnavailable",
            ),
        ];
        for (err, code, reason) in cases {
            let status = Status::from(err);
            assert_eq!(status.code(), code);
            let info = status.get_details_error_info().expect("ErrorInfo attached");
            assert_eq!(info.reason, reason);
            assert_eq!(info.domain, DOMAIN);
            assert_eq!(info.metadata.get("key").map(String::as_str), Some("/a"));
        }
    }

    #[test]
    fn messages_and_metadata_are_bounded() {
        let long = "x".repeat(10_000);
        let status = Status::from(StorageError::invalid(
            &format!("/{long}"),
            format!("invalid key {long:?}"),
        ));
        assert!(status.message().len() <= 1024, "{}", status.message().len());
        let info = status.get_details_error_info().expect("ErrorInfo");
        assert!(info.metadata["key"].len() <= 256);
        assert!(status.details().len() < 4096, "{}", status.details().len());
    }
}
