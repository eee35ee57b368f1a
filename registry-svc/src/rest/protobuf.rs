//! Kubernetes protobuf request bodies (`application/vnd.kubernetes.protobuf`): what client-go's
//! typed clients (1.32 and later) and kubectl's `create configmap|secret|namespace` send, with no
//! JSON fallback.

use serde_json::Value;

use crate::{catalog::Endpoint, error::ApiError};

/// A protobuf body as the JSON object it encodes.
pub fn decode(_raw: &[u8], endpoint: &dyn Endpoint) -> Result<Value, ApiError> {
    Err(ApiError::UnsupportedMediaType(format!(
        "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml ({} in protobuf is not supported yet)",
        endpoint.info().kind
    )))
}
