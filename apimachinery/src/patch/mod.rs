//! Patches, applied to an object's Kubernetes JSON as upstream's patcher applies them
//! (`k8s.io/apiserver/pkg/endpoints/handlers/patch.go`): JSON merge patch ([`merge`], RFC
//! 7386) and JSON patch ([`json`], RFC 6902) as upstream's `evanphx/json-patch.v4` applies
//! them, and the strategic merge patch ([`strategic`]) of built-in kinds, from the descriptors
//! and upstream's patch strategies (`rules`). Server-side apply does not exist yet and is
//! refused by the caller (415).
//!
//! Every patch runs within [`Limits`]: upstream's caps, checked before anything is allocated
//! for them, and the request's deadline, checked as the patch goes; each algorithm is linear
//! in the document and the patch (maps and sets where a list is matched against another).
//!
//! The Store applies a patch inside its GuaranteedUpdate, to every state storage hands it, so a
//! patch lost to a concurrent writer is applied again to the new state, as upstream's is.

pub mod json;
pub mod merge;
pub mod strategic;

use std::time::Instant;

use serde_json::Value;

use crate::descriptors::Descriptors;

/// The patch types of upstream's PATCH (`Content-Type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    /// `application/json-patch+json` (RFC 6902).
    Json,
    /// `application/merge-patch+json` (RFC 7386).
    Merge,
    /// `application/strategic-merge-patch+json` (built-in kinds only).
    Strategic,
    /// `application/apply-patch+yaml` (server-side apply; not supported yet).
    Apply,
}

impl PatchType {
    /// The patch type of a `Content-Type` (parameters ignored), if any.
    pub fn from_content_type(content_type: &str) -> Option<Self> {
        let media = content_type.split(';').next().unwrap_or("").trim();
        match media {
            "application/json-patch+json" => Some(Self::Json),
            "application/merge-patch+json" => Some(Self::Merge),
            "application/strategic-merge-patch+json" => Some(Self::Strategic),
            "application/apply-patch+yaml" | "application/apply-patch+cbor" => Some(Self::Apply),
            _ => None,
        }
    }

    /// The media type.
    pub fn content_type(self) -> &'static str {
        match self {
            Self::Json => "application/json-patch+json",
            Self::Merge => "application/merge-patch+json",
            Self::Strategic => "application/strategic-merge-patch+json",
            Self::Apply => "application/apply-patch+yaml",
        }
    }
}

/// Why a patch was not applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatchError {
    /// The patch itself is malformed (upstream: 400 BadRequest).
    #[error("{0}")]
    BadRequest(String),
    /// The patch is well-formed but cannot apply to this object (upstream: 422, e.g. a JSON
    /// patch `test` that fails, or a path that does not exist).
    #[error("{0}")]
    Unprocessable(String),
    /// The patch is larger than upstream takes (413: more than 10,000 JSON patch operations).
    #[error("{0}")]
    TooLarge(String),
    /// The request's deadline passed while the patch was being applied.
    #[error("the patch was not applied before the request's deadline")]
    Timeout,
}

/// Bounds on one patch's work: upstream's limits, and the request's deadline, checked as the
/// patch is applied (every operation, member or list item), so a patch that grows with its
/// input stops when its request's time is up instead of holding a thread.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// When the request's time is up (None: no deadline).
    pub deadline: Option<Instant>,
    /// The JSON that a JSON patch's `copy` operations may add in all
    /// (upstream's `JSONPatchMaxCopyBytes`).
    pub max_copy_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            deadline: None,
            max_copy_bytes: json::MAX_COPY_BYTES,
        }
    }
}

impl Limits {
    /// Upstream's limits, with `deadline`.
    pub fn until(deadline: Option<Instant>) -> Self {
        Self {
            deadline,
            ..Self::default()
        }
    }

    /// Timeout once the deadline has passed.
    pub fn check(&self) -> Result<(), PatchError> {
        match self.deadline {
            Some(d) if Instant::now() >= d => Err(PatchError::Timeout),
            _ => Ok(()),
        }
    }

    /// Counts one step, and looks at the clock every 256 (a clock read costs more than a
    /// member's merge).
    pub fn tick(&self, steps: &mut usize) -> Result<(), PatchError> {
        *steps += 1;
        if steps.is_multiple_of(256) {
            self.check()
        } else {
            Ok(())
        }
    }
}

/// A patch: its type and its body (already parsed as JSON).
#[derive(Debug, Clone)]
pub struct Patch {
    /// How to apply it.
    pub patch_type: PatchType,
    /// The body.
    pub body: Value,
}

impl Patch {
    /// Applies the patch to `original`, an object of `message` in Kubernetes JSON, within
    /// `limits`. `descriptors` gives the strategic merge patch its field types; a patch type
    /// that needs them without them (a custom kind) is the caller's to refuse first.
    pub fn apply(
        &self,
        original: &Value,
        message: Option<(&Descriptors, &str)>,
        limits: &Limits,
    ) -> Result<Value, PatchError> {
        limits.check()?;
        match self.patch_type {
            PatchType::Merge => merge::apply(original, &self.body, limits),
            PatchType::Json => json::apply(original, &self.body, limits),
            PatchType::Strategic => {
                let Some((descriptors, message)) = message else {
                    return Err(PatchError::BadRequest(
                        "strategic merge patch is not supported for this kind".into(),
                    ));
                };
                strategic::apply(descriptors, message, original, &self.body, limits)
            }
            PatchType::Apply => Err(PatchError::BadRequest(
                "server-side apply is not supported".into(),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_and_json_patches_follow_their_rfcs() {
        let cm =
            json!({"metadata": {"name": "c", "labels": {"a": "1", "b": "2"}}, "data": {"x": "y"}});
        let merge = Patch {
            patch_type: PatchType::Merge,
            body: json!({"metadata": {"labels": {"a": null, "c": "3"}}}),
        };
        assert_eq!(
            merge.apply(&cm, None, &Limits::default()).expect("applies"),
            json!({"metadata": {"name": "c", "labels": {"b": "2", "c": "3"}}, "data": {"x": "y"}})
        );
        let jp = Patch {
            patch_type: PatchType::Json,
            body: json!([{"op": "add", "path": "/metadata/labels/d", "value": "4"},
                         {"op": "remove", "path": "/data/x"}]),
        };
        assert_eq!(
            jp.apply(&cm, None, &Limits::default()).expect("applies"),
            json!({"metadata": {"name": "c", "labels": {"a": "1", "b": "2", "d": "4"}}, "data": {}})
        );
        let failing = Patch {
            patch_type: PatchType::Json,
            body: json!([{"op": "test", "path": "/data/x", "value": "z"}]),
        };
        assert!(matches!(
            failing.apply(&cm, None, &Limits::default()),
            Err(PatchError::Unprocessable(_))
        ));
        let malformed = Patch {
            patch_type: PatchType::Json,
            body: json!({"op": "add"}),
        };
        assert!(matches!(
            malformed.apply(&cm, None, &Limits::default()),
            Err(PatchError::BadRequest(_))
        ));
        assert_eq!(
            PatchType::from_content_type("application/merge-patch+json; charset=utf-8"),
            Some(PatchType::Merge)
        );
        assert_eq!(PatchType::from_content_type("text/plain"), None);
    }
}
