//! Response builders: JSON bodies (whole, or in frames of [`LIST_FRAME`] bytes as a list
//! streams), `Warning` headers as upstream writes them (`299 - "text"`), and streamed bodies.

use std::convert::Infallible;

use bytes::{BufMut, Bytes, BytesMut};
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

/// Bytes per frame of a list's body. Items are copied into frames of about this size rather
/// than sent one frame each: hyper's HTTP/1.1 writer sends at most 16 queued frames per
/// `writev`, each with its own chunk header, so a list of 10,000 items written as 20,000 frames
/// (items and commas) cost ~1,250 system calls, and its client as many chunks to parse.
pub const LIST_FRAME: usize = 64 * 1024;

/// A list's body: `head`, the items separated by commas, then `tail`, copied into frames of
/// about [`LIST_FRAME`] bytes as the connection asks for them. Each item is dropped once
/// copied, so the list is held once, shrinking as it is sent (upstream's apiserver also writes
/// a list through one buffered writer).
pub struct ListBody {
    head: Option<Bytes>,
    items: std::vec::IntoIter<Bytes>,
    tail: Option<&'static [u8]>,
    first: bool,
}

impl ListBody {
    /// `head`, then `items` separated by commas, then `tail`.
    pub fn new(head: Bytes, items: Vec<Bytes>, tail: &'static [u8]) -> Self {
        Self {
            head: Some(head),
            items: items.into_iter(),
            tail: Some(tail),
            first: true,
        }
    }
}

impl Iterator for ListBody {
    type Item = Bytes;

    fn next(&mut self) -> Option<Bytes> {
        let mut frame = BytesMut::new();
        if let Some(head) = self.head.take() {
            frame.reserve(LIST_FRAME.max(head.len()));
            frame.extend_from_slice(&head);
        }
        while frame.len() < LIST_FRAME {
            let Some(item) = self.items.next() else {
                break;
            };
            if frame.capacity() == 0 {
                frame.reserve(LIST_FRAME.max(item.len() + 1));
            }
            if !self.first {
                frame.put_u8(b',');
            }
            self.first = false;
            frame.extend_from_slice(&item);
        }
        if self.items.len() == 0
            && let Some(tail) = self.tail.take()
        {
            frame.extend_from_slice(tail);
        }
        (!frame.is_empty()).then(|| frame.freeze())
    }
}

/// A JSON list response, streamed from `body`.
pub fn list(code: StatusCode, body: ListBody) -> http::Response<Body> {
    streamed(
        code,
        JSON,
        tokio_stream::iter(body.map(|f| Ok(Frame::data(f)))),
    )
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

#[cfg(test)]
mod tests {
    use super::*;

    fn body(items: usize, size: usize) -> (Vec<Bytes>, Vec<u8>) {
        let items: Vec<Bytes> = (0..items)
            .map(|i| Bytes::from(format!("{{\"i{i}\":\"{}\"}}", "x".repeat(size))))
            .collect();
        let mut whole = b"{\"items\":[".to_vec();
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                whole.push(b',');
            }
            whole.extend_from_slice(item);
        }
        whole.extend_from_slice(b"]}");
        (items, whole)
    }

    #[test]
    fn a_list_is_written_in_large_frames_holding_the_same_json() {
        // 10,000 items of ~250 bytes: ~2.4 MB, so ~38 frames of 64 KiB (it was 20,001 frames:
        // the head, each item and each comma, and the tail).
        let (items, whole) = body(10_000, 250);
        let frames: Vec<Bytes> =
            ListBody::new(Bytes::from_static(b"{\"items\":["), items, b"]}").collect();
        assert_eq!(frames.concat(), whole);
        assert!(
            frames.len() <= whole.len() / LIST_FRAME + 1,
            "{} frames for {} bytes",
            frames.len(),
            whole.len()
        );
        for f in &frames[..frames.len() - 1] {
            assert!(
                f.len() >= LIST_FRAME && f.len() < LIST_FRAME + 300,
                "{}",
                f.len()
            );
        }
    }

    #[test]
    fn empty_lists_and_large_items_keep_their_json() {
        let (items, whole) = body(0, 10);
        let frames: Vec<Bytes> =
            ListBody::new(Bytes::from_static(b"{\"items\":["), items, b"]}").collect();
        assert_eq!(frames.concat(), whole);
        assert_eq!(frames.len(), 1);
        let (items, whole) = body(3, 2 * LIST_FRAME);
        let frames: Vec<Bytes> =
            ListBody::new(Bytes::from_static(b"{\"items\":["), items, b"]}").collect();
        assert_eq!(frames.concat(), whole);
        assert_eq!(frames.len(), 3);
    }
}
