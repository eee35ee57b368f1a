//! Patches, applied to an object's Kubernetes JSON as upstream's patcher applies them
//! (`k8s.io/apiserver/pkg/endpoints/handlers/patch.go`): JSON merge patch (RFC 7386) and JSON
//! patch (RFC 6902) with the `json-patch` crate, and the strategic merge patch
//! ([`strategic`]) of built-in kinds, from the descriptors and upstream's patch strategies
//! (`rules`). Server-side apply does not exist yet and is refused by the caller (415).
//!
//! The Store applies a patch inside its GuaranteedUpdate, to every state storage hands it, so a
//! patch lost to a concurrent writer is applied again to the new state, as upstream's is.

pub mod strategic;

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
    /// Applies the patch to `original`, an object of `message` in Kubernetes JSON.
    /// `descriptors` gives the strategic merge patch its field types; a patch type that needs
    /// them without them (a custom kind) is the caller's to refuse first.
    pub fn apply(
        &self,
        original: &Value,
        message: Option<(&Descriptors, &str)>,
    ) -> Result<Value, PatchError> {
        match self.patch_type {
            PatchType::Merge => {
                if !self.body.is_object() {
                    return Err(PatchError::BadRequest(
                        "json: cannot unmarshal merge patch: not an object".into(),
                    ));
                }
                let mut doc = original.clone();
                json_patch::merge(&mut doc, &self.body);
                Ok(doc)
            }
            PatchType::Json => {
                let ops: json_patch::Patch = serde_json::from_value(self.body.clone())
                    .map_err(|e| PatchError::BadRequest(format!("invalid JSON patch: {e}")))?;
                let mut doc = original.clone();
                json_patch::patch(&mut doc, &ops)
                    .map_err(|e| PatchError::Unprocessable(e.to_string()))?;
                Ok(doc)
            }
            PatchType::Strategic => {
                let Some((descriptors, message)) = message else {
                    return Err(PatchError::BadRequest(
                        "strategic merge patch is not supported for this kind".into(),
                    ));
                };
                strategic::apply(descriptors, message, original, &self.body)
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
            merge.apply(&cm, None).expect("applies"),
            json!({"metadata": {"name": "c", "labels": {"b": "2", "c": "3"}}, "data": {"x": "y"}})
        );
        let jp = Patch {
            patch_type: PatchType::Json,
            body: json!([{"op": "add", "path": "/metadata/labels/d", "value": "4"},
                         {"op": "remove", "path": "/data/x"}]),
        };
        assert_eq!(
            jp.apply(&cm, None).expect("applies"),
            json!({"metadata": {"name": "c", "labels": {"a": "1", "b": "2", "d": "4"}}, "data": {}})
        );
        let failing = Patch {
            patch_type: PatchType::Json,
            body: json!([{"op": "test", "path": "/data/x", "value": "z"}]),
        };
        assert!(matches!(
            failing.apply(&cm, None),
            Err(PatchError::Unprocessable(_))
        ));
        let malformed = Patch {
            patch_type: PatchType::Json,
            body: json!({"op": "add"}),
        };
        assert!(matches!(
            malformed.apply(&cm, None),
            Err(PatchError::BadRequest(_))
        ));
        assert_eq!(
            PatchType::from_content_type("application/merge-patch+json; charset=utf-8"),
            Some(PatchType::Merge)
        );
        assert_eq!(PatchType::from_content_type("text/plain"), None);
    }
}
