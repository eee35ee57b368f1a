//! Response builders: JSON bodies (whole, or in chunks as a list streams), `Warning` headers as
//! upstream writes them (`299 - "text"`), and streamed bodies.

use std::convert::Infallible;

use bytes::Bytes;
use http::{HeaderValue, StatusCode, header};
use http_body::Frame;
use http_body_util::{BodyExt, Full, StreamBody};
use serde_json::Value;
use tokio_stream::Stream;

use super::Body;

/// The `Content-Type` of every JSON answer.
pub const JSON: &str = "application/json";

/// A response of `code` with `body`, of `content_type`.
pub fn bytes(code: StatusCode, content_type: &str, body: Bytes) -> http::Response<Body> {
    let mut r = http::Response::new(Full::new(body).map_err(|e| match e {}).boxed_unsync());
    *r.status_mut() = code;
    if let Ok(v) = HeaderValue::from_str(content_type) {
        r.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    r
}

/// A JSON response with `warnings` as `Warning` headers.
pub fn json(code: StatusCode, body: Bytes, warnings: &[String]) -> http::Response<Body> {
    let mut r = bytes(code, JSON, body);
    for w in warnings {
        // Upstream's format: `299 - "text"`, the text's quotes and backslashes escaped.
        let text = w.replace('\\', "\\\\").replace('"', "\\\"");
        if let Ok(v) = HeaderValue::from_str(&format!("299 - \"{text}\"")) {
            r.headers_mut().append(header::WARNING, v);
        }
    }
    r
}

/// A JSON response of a value.
pub fn value(code: StatusCode, body: &Value) -> http::Response<Body> {
    json(
        code,
        Bytes::from(serde_json::to_vec(body).unwrap_or_default()),
        &[],
    )
}

/// A JSON response written as `chunks` (a list: its envelope and items, sent as they are).
pub fn chunks(code: StatusCode, chunks: Vec<Bytes>) -> http::Response<Body> {
    let stream = tokio_stream::iter(chunks.into_iter().map(|c| Ok(Frame::data(c))));
    streamed(code, JSON, stream)
}

/// A streamed response (watches, lists).
pub fn streamed(
    code: StatusCode,
    content_type: &str,
    stream: impl Stream<Item = Result<Frame<Bytes>, Infallible>> + Send + 'static,
) -> http::Response<Body> {
    let mut r = http::Response::new(StreamBody::new(stream).boxed_unsync());
    *r.status_mut() = code;
    if let Ok(v) = HeaderValue::from_str(content_type) {
        r.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    r
}
