//! A response body that completes its request's audit record when it ends, or when the
//! client goes before it does: one wrapper for both transports. REST knows the status code
//! when the response starts; a gRPC response says its status in its trailers (`grpc-status`,
//! `grpc-message`), read here as they pass. The body is copied for the record only when the
//! record needs it (an error's Status; objects at RequestResponse), up to the record's object
//! limit.

use std::{
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
};

use bytes::{Buf, Bytes};
use http_body::{Body, Frame, SizeHint};

use super::{Record, policy::Level, record::MAX_OBJECT_BYTES};

pin_project_lite::pin_project! {
    /// See the module's doc.
    #[project = AuditedProj]
    pub struct Audited<B> {
        #[pin]
        inner: B,
        record: Option<Arc<Record>>,
        code: u16,
        message: Option<String>,
        copy: Option<Vec<u8>>,
    }

    impl<B> PinnedDrop for Audited<B> {
        fn drop(this: Pin<&mut Self>) {
            this.project().finish();
        }
    }
}

impl<B> Audited<B> {
    /// `inner`, a response of HTTP `code`, completing `record`. A watch's ResponseStarted is
    /// emitted here.
    pub fn new(inner: B, record: Arc<Record>, code: u16) -> Self {
        if record.is_watch() {
            record.started(code);
        }
        let copy = (code >= 400 || record.level() == Level::RequestResponse).then(Vec::new);
        Self {
            inner,
            record: Some(record),
            code,
            message: None,
            copy,
        }
    }
}

impl<B> AuditedProj<'_, B> {
    fn finish(&mut self) {
        if let Some(record) = self.record.take() {
            record.complete(*self.code, self.message.as_deref(), self.copy.as_deref());
        }
    }
}

/// A gRPC status code as the HTTP code upstream's API answers for it (the error mapping of
/// `crate::error`, read backwards).
fn http_code(grpc: i32) -> u16 {
    match tonic::Code::from_i32(grpc) {
        tonic::Code::Ok => 200,
        tonic::Code::Cancelled => 499,
        tonic::Code::InvalidArgument | tonic::Code::OutOfRange => 400,
        tonic::Code::FailedPrecondition => 403,
        tonic::Code::DeadlineExceeded => 504,
        tonic::Code::NotFound => 404,
        tonic::Code::AlreadyExists | tonic::Code::Aborted => 409,
        tonic::Code::PermissionDenied => 403,
        tonic::Code::ResourceExhausted => 429,
        tonic::Code::Unimplemented => 405,
        tonic::Code::Unavailable => 503,
        tonic::Code::Unauthenticated => 401,
        _ => 500,
    }
}

/// Reads a gRPC status from `headers` (trailers, or a trailers-only response's headers).
pub fn grpc_status(headers: &http::HeaderMap) -> Option<(u16, Option<String>)> {
    let code = headers
        .get("grpc-status")?
        .to_str()
        .ok()?
        .parse::<i32>()
        .ok()?;
    let message = headers
        .get("grpc-message")
        .and_then(|v| v.to_str().ok())
        .map(|m| {
            percent_encoding::percent_decode_str(m)
                .decode_utf8_lossy()
                .into_owned()
        });
    Some((http_code(code), message))
}

impl<B> Body for Audited<B>
where
    B: Body<Data = Bytes>,
{
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let mut this = self.project();
        let polled = this.inner.as_mut().poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref()
                    && let Some(copy) = this.copy.as_mut()
                {
                    if copy.len() + data.remaining() <= MAX_OBJECT_BYTES {
                        copy.extend_from_slice(data.chunk());
                    } else {
                        // Too large to carry: the record says so (it sees a full buffer).
                        copy.resize(MAX_OBJECT_BYTES, 0);
                    }
                }
                if let Some(trailers) = frame.trailers_ref()
                    && let Some((code, message)) = grpc_status(trailers)
                {
                    *this.code = code;
                    *this.message = message;
                }
            }
            Poll::Ready(None) => this.finish(),
            Poll::Ready(Some(Err(_))) | Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
