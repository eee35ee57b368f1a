//! Overload protection, as kube-apiserver's `--max-requests-inflight`: at most N calls run at
//! once in a server; one call more fails at once with RESOURCE_EXHAUSTED (reason
//! `TooManyRequests`, a `RetryInfo` of one second) instead of waiting in a queue that grows
//! with the overload, so callers back off and latency stays bounded for the calls admitted.
//!
//! - A call holds its slot until its response body ends, so a GuaranteedUpdate stream counts
//!   for its whole exchange, not just until its handler returned the stream.
//! - Watches are long-running and exempt (upstream exempts them too: they are bounded by their
//!   own buffers and cut-offs, and a limit counted in watches would stop every other call once
//!   enough clients watch). So are health checks and reflection: a probe must not be refused
//!   because the server is busy, or an orchestrator restarts a server that is merely loaded.
//! - 0 turns the limit off.

use std::{
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
    time::Duration,
};

use http_body::{Body as HttpBody, Frame};
use prometheus_client::metrics::{counter::Counter, gauge::Gauge};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tonic::body::Body;
use tonic_types::{ErrorDetails, StatusExt};

use crate::Metrics;

/// How long a refused caller is told to wait before retrying.
pub const RETRY_AFTER: Duration = Duration::from_secs(1);

/// Whether a call to `path` (`/package.Service/Method`) is exempt from the limit.
pub fn exempt(path: &str) -> bool {
    path.ends_with("/Watch")
        || path.starts_with("/grpc.health.")
        || path.starts_with("/grpc.reflection.")
}

/// The layer; see the module docs.
#[derive(Clone)]
pub struct InflightLimitLayer {
    slots: Option<Arc<Semaphore>>,
    limit: usize,
    domain: &'static str,
    inflight: Gauge,
    refused: Counter,
}

impl InflightLimitLayer {
    /// At most `limit` calls at once (0 = unlimited); refusals carry ErrorInfo `domain`.
    /// Registers `grpc_server_inflight_requests` and `grpc_server_refused_total` in `metrics`.
    pub fn new(limit: usize, domain: &'static str, metrics: &Metrics) -> Self {
        let me = Self {
            slots: (limit > 0).then(|| Arc::new(Semaphore::new(limit))),
            limit,
            domain,
            inflight: Gauge::default(),
            refused: Counter::default(),
        };
        metrics.register(
            "grpc_server_inflight_requests",
            "Calls counted against --max-requests-inflight that are running now",
            me.inflight.clone(),
        );
        metrics.register(
            "grpc_server_refused",
            "Calls refused with RESOURCE_EXHAUSTED because --max-requests-inflight were running",
            me.refused.clone(),
        );
        me
    }
}

impl<S> tower::Layer<S> for InflightLimitLayer {
    type Service = InflightLimit<S>;
    fn layer(&self, inner: S) -> Self::Service {
        InflightLimit {
            inner,
            layer: self.clone(),
        }
    }
}

/// The service produced by [`InflightLimitLayer`].
#[derive(Clone)]
pub struct InflightLimit<S> {
    inner: S,
    layer: InflightLimitLayer,
}

type BoxFuture<T> = Pin<Box<dyn std::future::Future<Output = T> + Send>>;

impl<S, B> tower::Service<http::Request<B>> for InflightLimit<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<Body>>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = http::Response<Body>;
    type Error = S::Error;
    type Future = BoxFuture<Result<Self::Response, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        let Some(slots) = &self.layer.slots else {
            return Box::pin(self.inner.call(req));
        };
        if exempt(req.uri().path()) {
            return Box::pin(self.inner.call(req));
        }
        let Ok(permit) = slots.clone().try_acquire_owned() else {
            self.layer.refused.inc();
            let mut details = ErrorDetails::new();
            details.set_error_info(
                "TooManyRequests",
                self.layer.domain,
                [("limit".to_string(), self.layer.limit.to_string())],
            );
            details.set_retry_info(Some(RETRY_AFTER));
            let status = tonic::Status::with_error_details(
                tonic::Code::ResourceExhausted,
                format!(
                    "too many requests: {} calls are running (--max-requests-inflight); retry after {} s",
                    self.layer.limit,
                    RETRY_AFTER.as_secs()
                ),
                details,
            );
            return Box::pin(async move { Ok(status.into_http()) });
        };
        let inflight = self.layer.inflight.clone();
        inflight.inc();
        let held = Held {
            _permit: permit,
            inflight,
        };
        let fut = self.inner.call(req);
        Box::pin(async move {
            let resp = fut.await?;
            Ok(resp.map(|body| Body::new(HeldBody { inner: body, held })))
        })
    }
}

/// A slot, given back when dropped.
struct Held {
    _permit: OwnedSemaphorePermit,
    inflight: Gauge,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.inflight.dec();
    }
}

/// A response body that keeps its call's slot until it ends.
struct HeldBody {
    inner: Body,
    held: Held,
}

impl HttpBody for HeldBody {
    type Data = bytes::Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let _ = &self.held;
        Pin::new(&mut self.inner).poll_frame(cx)
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
    use super::exempt;

    #[test]
    fn watches_and_probes_are_exempt_and_nothing_else() {
        for p in [
            "/storage.v1.Storage/Watch",
            "/core.v1.Pods/Watch",
            "/grpc.health.v1.Health/Check",
            "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
        ] {
            assert!(exempt(p), "{p}");
        }
        for p in [
            "/storage.v1.Storage/GuaranteedUpdate",
            "/core.v1.Pods/List",
            "/core.v1.Pods/WatchX",
            "/made.up/Thing",
        ] {
            assert!(!exempt(p), "{p}");
        }
    }
}
