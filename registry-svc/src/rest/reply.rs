//! Response builders: JSON bodies (whole, or in frames of [`LIST_FRAME`] bytes as a list
//! streams), `Warning` headers as upstream's warning recorder writes them (`299 - "text"`,
//! deduplicated, truncated and capped), streamed bodies, and bodies that hold their request's
//! in-flight slot until they are written ([`held`]).

use std::{
    pin::Pin,
    task::{Context, Poll},
};

use bytes::{BufMut, Bytes, BytesMut};
use http::{HeaderValue, StatusCode, header};
use http_body::Frame;
use http_body_util::{BodyExt, Full, StreamBody};
use kubestore_telemetry::inflight::InflightPermit;
use serde_json::Value;
use tokio_stream::{Stream, StreamExt};

use super::{Body, BodyError};
use crate::catalog::ItemStream;

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

/// A JSON response with `warnings` as `Warning` headers ([`warning_headers`]).
pub fn json(code: StatusCode, body: Bytes, warnings: &[String]) -> http::Response<Body> {
    let mut r = bytes(code, JSON, body);
    for v in warning_headers(warnings) {
        r.headers_mut().append(header::WARNING, v);
    }
    r
}

pub use crate::warning::{WARNING_ITEM_CHARS, WARNING_TOTAL_CHARS, warning_headers};

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

/// A list's frames: `head`, the items separated by commas, then `tail`, each frame about
/// [`LIST_FRAME`] bytes, built only when the connection asks for it (the items are encoded, and
/// fetched from storage, as the client reads). An item that fails ends the body with an error,
/// so the client sees a broken response, never a list cut short that still parses.
pub fn list_frames(
    head: Bytes,
    items: ItemStream,
    tail: &'static [u8],
) -> impl Stream<Item = Result<Bytes, BodyError>> + Send {
    struct State {
        head: Option<Bytes>,
        items: ItemStream,
        tail: Option<&'static [u8]>,
        first: bool,
        /// An item read ahead (to learn whether a full frame is the last).
        ahead: Option<Result<Bytes, crate::error::ApiError>>,
        /// The items ended (a stream is never polled past its end).
        ended: bool,
    }
    let state = State {
        head: Some(head),
        items,
        tail: Some(tail),
        first: true,
        ahead: None,
        ended: false,
    };
    futures_util::stream::unfold(state, |mut st| async move {
        let mut frame = BytesMut::new();
        if let Some(head) = st.head.take() {
            frame.reserve(LIST_FRAME.max(head.len()));
            frame.extend_from_slice(&head);
        }
        loop {
            let next = match st.ahead.take() {
                Some(item) => Some(item),
                None if st.ended => None,
                None => st.items.next().await,
            };
            let item = match next {
                Some(Ok(item)) => item,
                Some(Err(e)) => {
                    st.tail = None;
                    st.ended = true;
                    let e: BodyError = Box::new(e);
                    return Some((Err(e), st));
                }
                None => {
                    st.ended = true;
                    break;
                }
            };
            if frame.capacity() == 0 {
                frame.reserve(LIST_FRAME.max(item.len() + 1));
            }
            if !st.first {
                frame.put_u8(b',');
            }
            st.first = false;
            frame.extend_from_slice(&item);
            if frame.len() >= LIST_FRAME {
                // A full frame goes now; the tail joins it if nothing follows.
                st.ahead = st.items.next().await;
                if st.ahead.is_none() {
                    st.ended = true;
                    break;
                }
                return Some((Ok(frame.freeze()), st));
            }
        }
        match st.tail.take() {
            Some(tail) => {
                frame.extend_from_slice(tail);
                Some((Ok(frame.freeze()), st))
            }
            None if !frame.is_empty() => Some((Ok(frame.freeze()), st)),
            None => None,
        }
    })
    .fuse()
}

/// A JSON list response, streamed ([`list_frames`]).
pub fn list(
    code: StatusCode,
    head: Bytes,
    items: ItemStream,
    tail: &'static [u8],
) -> http::Response<Body> {
    streamed(
        code,
        JSON,
        list_frames(head, items, tail).map(|f| f.map(Frame::data)),
    )
}

/// A streamed response (watches, lists).
pub fn streamed(
    code: StatusCode,
    content_type: &str,
    stream: impl Stream<Item = Result<Frame<Bytes>, BodyError>> + Send + 'static,
) -> http::Response<Body> {
    let mut r = http::Response::new(StreamBody::new(stream).boxed_unsync());
    *r.status_mut() = code;
    if let Ok(v) = HeaderValue::from_str(content_type) {
        r.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    r
}

/// `response`, its body keeping the request's in-flight slot (`permit`) until it is written or
/// the client goes, and cut off at `deadline`: a client that does not read its response holds
/// its slot, and what the body has not yet built, no longer than its request may take.
pub fn held(
    response: http::Response<Body>,
    permit: Option<InflightPermit>,
    deadline: tokio::time::Instant,
) -> http::Response<Body> {
    response.map(|inner| {
        Held {
            inner,
            permit,
            deadline: Box::pin(tokio::time::sleep_until(deadline)),
            done: false,
        }
        .boxed_unsync()
    })
}

/// See [`held`].
struct Held {
    inner: Body,
    /// Dropped with the body, or at its end.
    permit: Option<InflightPermit>,
    deadline: Pin<Box<tokio::time::Sleep>>,
    /// The body ended (or was cut off): it is never polled again.
    done: bool,
}

/// The error that cuts a body off at its request's deadline.
#[derive(Debug, thiserror::Error)]
#[error("the response was not read before the request's deadline")]
pub struct NotReadInTime;

impl http_body::Body for Held {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        if self.done {
            return Poll::Ready(None);
        }
        if let Poll::Ready(frame) = Pin::new(&mut self.inner).poll_frame(cx) {
            if !matches!(frame, Some(Ok(_))) {
                self.permit = None;
                self.done = true;
            }
            return Poll::Ready(frame);
        }
        if self.deadline.as_mut().poll(cx).is_ready() {
            self.permit = None;
            self.done = true;
            return Poll::Ready(Some(Err(Box::new(NotReadInTime))));
        }
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        self.done || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
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

    fn stream(items: Vec<Bytes>) -> ItemStream {
        Box::pin(tokio_stream::iter(items.into_iter().map(Ok)))
    }

    async fn frames(items: ItemStream) -> Vec<Result<Bytes, String>> {
        list_frames(Bytes::from_static(b"{\"items\":["), items, b"]}")
            .map(|f| f.map_err(|e| e.to_string()))
            .collect()
            .await
    }

    #[tokio::test]
    async fn a_list_is_written_in_large_frames_holding_the_same_json() {
        // 10,000 items of ~250 bytes: ~2.4 MB, so ~38 frames of 64 KiB (it was 20,001 frames:
        // the head, each item and each comma, and the tail).
        let (items, whole) = body(10_000, 250);
        let frames: Vec<Bytes> = frames(stream(items))
            .await
            .into_iter()
            .collect::<Result<_, _>>()
            .expect("no error");
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

    #[tokio::test]
    async fn empty_lists_and_large_items_keep_their_json() {
        let (items, whole) = body(0, 10);
        let got = frames(stream(items)).await;
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].as_deref().expect("a frame"), whole.as_slice());
        let (items, whole) = body(3, 2 * LIST_FRAME);
        let got: Vec<Bytes> = frames(stream(items))
            .await
            .into_iter()
            .collect::<Result<_, _>>()
            .expect("no error");
        assert_eq!(got.concat(), whole);
        assert_eq!(got.len(), 3);
    }

    /// An item that fails ends the body with an error, without the list's closing bytes.
    #[tokio::test]
    async fn a_failing_item_breaks_the_body() {
        let items: ItemStream = Box::pin(tokio_stream::iter(vec![
            Ok(Bytes::from_static(b"{}")),
            Err(crate::error::ApiError::Internal("storage went away".into())),
        ]));
        let got = frames(items).await;
        assert!(
            matches!(got.last(), Some(Err(e)) if e.contains("storage went away")),
            "{got:?}"
        );
        assert!(got.iter().flatten().all(|f| !f.ends_with(b"]}")));
    }

    fn texts(headers: &[HeaderValue]) -> Vec<String> {
        headers
            .iter()
            .map(|h| h.to_str().expect("ascii").to_string())
            .collect()
    }

    #[test]
    fn warnings_are_written_once_each_escaped() {
        let w = vec![
            "unknown field \"spec.x\"".to_string(),
            "unknown field \"spec.x\"".to_string(),
            String::new(),
            "back\\slash".to_string(),
        ];
        assert_eq!(
            texts(&warning_headers(&w)),
            [
                r#"299 - "unknown field \"spec.x\"""#,
                r#"299 - "back\\slash""#
            ]
        );
    }

    /// 100,000 unknown fields: the headers stay within upstream's bounds (each warning cut to
    /// 256 characters once they would pass 4,096, none written after the total is reached).
    #[test]
    fn many_warnings_are_truncated_and_capped() {
        let w: Vec<String> = (0..100_000)
            .map(|i| format!("unknown field \"spec.f{i}{}\"", "y".repeat(300)))
            .collect();
        let h = warning_headers(&w);
        let total: usize = h.iter().map(HeaderValue::len).sum();
        assert!(total < 6 * 1024, "{total} bytes of headers");
        assert!(h.iter().all(|v| v.len() <= WARNING_ITEM_CHARS + 16));
        assert_eq!(h.len(), WARNING_TOTAL_CHARS / WARNING_ITEM_CHARS);
        // Below the total, nothing is cut.
        let few: Vec<String> = (0..3)
            .map(|i| format!("w{i}{}", "z".repeat(1000)))
            .collect();
        assert_eq!(warning_headers(&few).len(), 3);
        assert!(warning_headers(&few).iter().all(|v| v.len() > 1000));
    }
}
