//! A message over the server's size limit, reported as the caller's fault in our own terms.
//!
//! tonic checks a request message's length prefix against `max_decoding_message_size` before
//! reading it (so an oversized message costs no memory), and answers OUT_OF_RANGE "Error,
//! decoded message length too large", with no `ErrorInfo`: a code our error tables do not use,
//! which clients do not expect for a request that is simply too big. This layer rewrites that
//! status, in the response headers (unary calls) or trailers (streams), into
//! RESOURCE_EXHAUSTED with `ErrorInfo` reason `RequestEntityTooLarge` (upstream's 413) in the
//! service's domain, keeping tonic's message, which says the size and the limit.

use std::{
    pin::Pin,
    task::{Context, Poll},
};

use http::HeaderMap;
use http_body::{Body as HttpBody, Frame};
use tonic::body::Body;
use tonic_types::{ErrorDetails, StatusExt};

/// How tonic's message starts.
const TONIC_TOO_LARGE: &str = "Error, decoded message length too large";

/// The layer; see the module docs.
#[derive(Clone, Copy)]
pub struct OversizeLayer {
    domain: &'static str,
}

impl OversizeLayer {
    /// Rewrites into ErrorInfo `domain`.
    pub fn new(domain: &'static str) -> Self {
        Self { domain }
    }
}

impl<S> tower::Layer<S> for OversizeLayer {
    type Service = Oversize<S>;
    fn layer(&self, inner: S) -> Self::Service {
        Oversize {
            inner,
            domain: self.domain,
        }
    }
}

/// The service produced by [`OversizeLayer`].
#[derive(Clone)]
pub struct Oversize<S> {
    inner: S,
    domain: &'static str,
}

type BoxFuture<T> = Pin<Box<dyn std::future::Future<Output = T> + Send>>;

impl<S, B> tower::Service<http::Request<B>> for Oversize<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<Body>>,
    S::Future: Send + 'static,
{
    type Response = http::Response<Body>;
    type Error = S::Error;
    type Future = BoxFuture<Result<Self::Response, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        let domain = self.domain;
        let fut = self.inner.call(req);
        Box::pin(async move {
            let mut resp = fut.await?;
            rewrite(resp.headers_mut(), domain);
            Ok(resp.map(|inner| Body::new(OversizeBody { inner, domain })))
        })
    }
}

/// Rewrites tonic's oversize status in `headers` (response headers or trailers), if there.
fn rewrite(headers: &mut HeaderMap, domain: &'static str) {
    let Some(status) = tonic::Status::from_header_map(headers) else {
        return;
    };
    if status.code() != tonic::Code::OutOfRange || !status.message().starts_with(TONIC_TOO_LARGE) {
        return;
    }
    let mut details = ErrorDetails::new();
    details.set_error_info(
        "RequestEntityTooLarge",
        domain,
        std::collections::HashMap::<String, String>::new(),
    );
    let ours = tonic::Status::with_error_details(
        tonic::Code::ResourceExhausted,
        format!("Request entity too large: {}", status.message()),
        details,
    );
    let mut fresh = HeaderMap::new();
    if ours.add_header(&mut fresh).is_ok() {
        for name in ["grpc-status", "grpc-message", "grpc-status-details-bin"] {
            headers.remove(name);
        }
        headers.extend(fresh);
    }
}

/// A response body whose trailers get the same rewrite.
struct OversizeBody {
    inner: Body,
    domain: &'static str,
}

impl HttpBody for OversizeBody {
    type Data = bytes::Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let domain = self.domain;
        match Pin::new(&mut self.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => Poll::Ready(Some(Ok(match frame.into_trailers() {
                Ok(mut trailers) => {
                    rewrite(&mut trailers, domain);
                    Frame::trailers(trailers)
                }
                Err(frame) => frame,
            }))),
            other => other,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_tonics_oversize_status_is_rewritten() {
        let mut h = HeaderMap::new();
        tonic::Status::out_of_range(
            "Error, decoded message length too large: found 4000052 bytes, the limit is: 3145728 bytes",
        )
        .add_header(&mut h)
        .expect("headers");
        rewrite(&mut h, "registry.kubestore.io");
        let s = tonic::Status::from_header_map(&h).expect("a status");
        assert_eq!(s.code(), tonic::Code::ResourceExhausted);
        assert!(
            s.message().contains("found 4000052 bytes"),
            "{}",
            s.message()
        );
        let info = s.get_details_error_info().expect("ErrorInfo");
        assert_eq!(
            (info.reason.as_str(), info.domain.as_str()),
            ("RequestEntityTooLarge", "registry.kubestore.io")
        );

        let mut other = HeaderMap::new();
        tonic::Status::out_of_range("Expired")
            .add_header(&mut other)
            .expect("headers");
        rewrite(&mut other, "d");
        assert_eq!(
            tonic::Status::from_header_map(&other).map(|s| s.code()),
            Some(tonic::Code::OutOfRange)
        );
    }
}
