//! Request bodies: read within upstream's 3 MiB limit (413 past it, whether the body says its
//! length or not) and the request's deadline, before the request takes an in-flight slot (a
//! client that sends headers and never its body holds no slot), then decoded by
//! `Content-Type`: JSON, YAML (aliases bounded: `kubestore_apimachinery::yaml`), or Kubernetes
//! protobuf for built-in kinds (`protobuf`). A large body is decoded off the async workers
//! (`offload`).

use bytes::Bytes;
use http::header;
use http_body_util::BodyExt;
use serde_json::Value;

use super::Rest;
use crate::{catalog::Endpoint, error::ApiError, store::Ctx};

/// Upstream's `MaxRequestBodyBytes` (3 MiB).
pub const MAX_BODY_BYTES: usize = 3 << 20;

/// A decoded request body.
pub enum Decoded {
    /// A JSON value (from JSON, YAML or protobuf).
    Json(Value),
    /// No body.
    Empty,
}

/// The body's bytes, at most [`MAX_BODY_BYTES`], read before the request's deadline.
pub async fn read_raw(
    _rest: &Rest,
    req: http::Request<hyper::body::Incoming>,
    ctx: &Ctx,
) -> Result<Bytes, ApiError> {
    if let Some(len) = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok())
        && len > MAX_BODY_BYTES
    {
        return Err(too_large());
    }
    let limited = http_body_util::Limited::new(req.into_body(), MAX_BODY_BYTES);
    match tokio::time::timeout(ctx.deadline.remaining(), limited.collect()).await {
        Err(_) => Err(ApiError::Unavailable {
            reason: "Timeout",
            message: "the request body was not received before the request's deadline".into(),
        }),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => Err(too_large()),
        Ok(Err(e)) => Err(ApiError::BadRequest(format!(
            "the request body could not be read: {e}"
        ))),
        Ok(Ok(collected)) => {
            let bytes = collected.to_bytes();
            if let Some(record) = &ctx.caller.audit {
                record.request_body(&bytes);
            }
            Ok(bytes)
        }
    }
}

/// Upstream's words for a body past the limit (`http.MaxBytesReader`'s, as the apiserver
/// answers them).
fn too_large() -> ApiError {
    ApiError::EntityTooLarge(format!("limit is {MAX_BODY_BYTES}"))
}

/// The body, decoded by its `Content-Type`, and its size.
pub async fn read_body(
    rest: &Rest,
    req: http::Request<hyper::body::Incoming>,
    ctx: &Ctx,
    endpoint: &dyn Endpoint,
) -> Result<(Decoded, usize), ApiError> {
    let content_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json")
        .to_string();
    let raw = read_raw(rest, req, ctx).await?;
    let deadline = Some(ctx.deadline.instant().into_std());
    let decoded = crate::offload::run(work_size(&content_type, &raw), deadline, || {
        decode(&content_type, &raw, endpoint)
    })?;
    Ok((decoded, raw.len()))
}

/// How much decoding `raw` may cost, in bytes of input it is like: its size, except for YAML
/// with aliases, which may expand to far more than its size (up to the bound of
/// `kubestore_apimachinery::yaml`, about half a second of CPU for a 15 KB body): such a body is
/// decoded off the async workers whatever its size.
pub fn work_size(content_type: &str, raw: &[u8]) -> usize {
    let yaml = matches!(
        media(content_type).as_str(),
        "application/yaml" | "application/x-yaml" | "text/yaml"
    );
    if yaml {
        crate::offload::yaml_size(raw)
    } else {
        raw.len()
    }
}

/// `raw` as a JSON value, by `content_type`.
pub fn decode(
    content_type: &str,
    raw: &[u8],
    endpoint: &dyn Endpoint,
) -> Result<Decoded, ApiError> {
    if raw.iter().all(u8::is_ascii_whitespace) {
        return Ok(Decoded::Empty);
    }
    match media(content_type).as_str() {
        "application/json" | "" | "*/*" => serde_json::from_slice(raw)
            .map(Decoded::Json)
            .map_err(|e| malformed(endpoint, &e.to_string())),
        "application/yaml" | "application/x-yaml" | "text/yaml" => {
            kubestore_apimachinery::yaml::to_json(raw)
                .map(Decoded::Json)
                .map_err(|e| malformed(endpoint, &e.to_string()))
        }
        "application/vnd.kubernetes.protobuf" => {
            super::protobuf::decode(raw, endpoint.info()).map(Decoded::Json)
        }
        _ => Err(ApiError::UnsupportedMediaType(format!(
            "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml{}",
            if endpoint.info().message.is_some() {
                ", application/vnd.kubernetes.protobuf"
            } else {
                ""
            }
        ))),
    }
}

/// A DeleteOptions body as a JSON object, by `content_type` (JSON, YAML, or Kubernetes
/// protobuf: client-go's typed clients send protobuf); None when the body is empty.
pub fn delete_options(content_type: &str, raw: &[u8]) -> Result<Option<Value>, ApiError> {
    if raw.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let bad = |e: &dyn std::fmt::Display| {
        ApiError::BadRequest(format!("error decoding DeleteOptions: {e}"))
    };
    let value = match media(content_type).as_str() {
        "application/json" | "" | "*/*" => serde_json::from_slice(raw).map_err(|e| bad(&e))?,
        "application/yaml" | "application/x-yaml" | "text/yaml" => {
            kubestore_apimachinery::yaml::to_json(raw).map_err(|e| bad(&e))?
        }
        "application/vnd.kubernetes.protobuf" => super::protobuf::delete_options(raw)?,
        _ => {
            return Err(ApiError::UnsupportedMediaType(
                "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf".into(),
            ));
        }
    };
    if !value.is_object() {
        return Err(bad(&"not an object"));
    }
    Ok(Some(value))
}

/// The media type of a `Content-Type`, lower case, without parameters.
pub fn media(content_type: &str) -> String {
    content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// A body that does not parse (upstream: 400, "couldn't get version/kind; json parse error").
fn malformed(endpoint: &dyn Endpoint, detail: &str) -> ApiError {
    let kind = &endpoint.info().kind;
    ApiError::BadRequest(format!(
        "{kind} in version \"{}\" cannot be handled as a {kind}: {detail}",
        endpoint.info().version
    ))
}
