//! Overload protection, as kube-apiserver's `--max-requests-inflight`: at most N calls run at
//! once in a server; one call more fails at once with RESOURCE_EXHAUSTED (reason
//! `TooManyRequests`, a `RetryInfo` of one second) instead of waiting in a queue that grows
//! with the overload, so callers back off and latency stays bounded for the calls admitted.
//!
//! - A call holds its slot until its response body ends, so a GuaranteedUpdate stream counts
//!   for its whole exchange, not just until its handler returned the stream.
//! - ... but never past the request's deadline ([`RequestTimeouts`]: the caller's
//!   `grpc-timeout`, capped at the method's default, which also applies without one), reading
//!   the request body included: upstream bounds every request that is not long-running with its
//!   request timeout around the in-flight limit. Without it, calls that send headers and never
//!   their body held every slot for as long as their connections lived. At the deadline the
//!   call ends with DEADLINE_EXCEEDED (reason `Timeout`) and its slot is free.
//! - Watches are long-running and exempt (upstream exempts them too: they are bounded by their
//!   own buffers and cut-offs, and a limit counted in watches would stop every other call once
//!   enough clients watch). So are health checks and reflection: a probe must not be refused
//!   because the server is busy, or an orchestrator restarts a server that is merely loaded.
//! - 0 turns the limit off.

use std::{
    future::Future,
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

/// How long a counted call may hold its slot: its deadline.
#[derive(Clone, Copy, Debug)]
pub struct RequestTimeouts {
    /// Without `grpc-timeout`, and the cap of one (the server's default request timeout).
    pub default: Duration,
    /// Methods (path suffixes such as `/DeleteCollection`) with a longer default and cap.
    pub longer: &'static [(&'static str, Duration)],
}

impl RequestTimeouts {
    /// The same timeout for every method.
    pub const fn uniform(default: Duration) -> Self {
        Self {
            default,
            longer: &[],
        }
    }

    /// The deadline budget of a call to `path` with `headers`: its `grpc-timeout`, capped at
    /// the method's default, or that default.
    pub fn budget(&self, path: &str, headers: &http::HeaderMap) -> Duration {
        let cap = self
            .longer
            .iter()
            .find(|(suffix, _)| path.ends_with(suffix))
            .map_or(self.default, |&(_, d)| d);
        headers
            .get("grpc-timeout")
            .and_then(|v| v.to_str().ok())
            .and_then(crate::deadline::parse_grpc_timeout)
            .map_or(cap, |t| t.min(cap))
    }
}

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
    timeouts: RequestTimeouts,
    domain: &'static str,
    inflight: Gauge,
    refused: Counter,
}

impl InflightLimitLayer {
    /// At most `limit` calls at once (0 = unlimited), each for at most its deadline under
    /// `timeouts`; refusals carry ErrorInfo `domain`. Registers
    /// `grpc_server_inflight_requests` and `grpc_server_refused_total` in `metrics`.
    pub fn new(
        limit: usize,
        timeouts: RequestTimeouts,
        domain: &'static str,
        metrics: &Metrics,
    ) -> Self {
        let me = Self {
            slots: (limit > 0).then(|| Arc::new(Semaphore::new(limit))),
            limit,
            timeouts,
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

impl InflightLimitLayer {
    /// A slot for a call of another transport of the same server (the REST API beside gRPC):
    /// the same limit, gauge and refusal count. `Ok(None)`: no limit; `Err(limit)`: refused,
    /// every slot taken.
    pub fn try_acquire(&self) -> Result<Option<InflightPermit>, usize> {
        let Some(slots) = &self.slots else {
            return Ok(None);
        };
        match slots.clone().try_acquire_owned() {
            Ok(permit) => {
                self.inflight.inc();
                Ok(Some(InflightPermit(Held {
                    _permit: permit,
                    inflight: self.inflight.clone(),
                })))
            }
            Err(_) => {
                self.refused.inc();
                Err(self.limit)
            }
        }
    }
}

/// A slot taken by [`InflightLimitLayer::try_acquire`], given back when dropped.
pub struct InflightPermit(#[allow(dead_code)] Held);

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
        let budget = self.layer.timeouts.budget(req.uri().path(), req.headers());
        let deadline = tokio::time::Instant::now() + budget;
        let domain = self.layer.domain;
        let fut = self.inner.call(req);
        Box::pin(async move {
            match tokio::time::timeout_at(deadline, fut).await {
                Ok(resp) => Ok(resp?.map(|body| {
                    Body::new(HeldBody {
                        inner: body,
                        held: Some(held),
                        deadline: Box::pin(tokio::time::sleep_until(deadline)),
                        budget,
                        domain,
                    })
                })),
                // The handler did not answer in time (a unary call whose body never came
                // stays here): the slot is freed as `held` drops.
                Err(_) => Ok(deadline_exceeded(budget, domain).into_http()),
            }
        })
    }
}

/// The status of a call cut off at its deadline.
fn deadline_exceeded(budget: Duration, domain: &'static str) -> tonic::Status {
    let mut details = ErrorDetails::new();
    details.set_error_info(
        "Timeout",
        domain,
        [("timeout".to_string(), format!("{budget:?}"))],
    );
    tonic::Status::with_error_details(
        tonic::Code::DeadlineExceeded,
        format!(
            "the call did not complete within its deadline of {budget:?} (its grpc-timeout, or \
             the server's default request timeout), reading the request included"
        ),
        details,
    )
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

/// A response body that keeps its call's slot until it ends or its deadline passes; at the
/// deadline it ends with DEADLINE_EXCEEDED trailers.
struct HeldBody {
    inner: Body,
    /// None once the deadline passed.
    held: Option<Held>,
    deadline: Pin<Box<tokio::time::Sleep>>,
    budget: Duration,
    domain: &'static str,
}

impl HttpBody for HeldBody {
    type Data = bytes::Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        if self.held.is_none() {
            return Poll::Ready(None);
        }
        if let Poll::Ready(frame) = Pin::new(&mut self.inner).poll_frame(cx) {
            if frame.is_none() {
                self.held = None;
            }
            return Poll::Ready(frame);
        }
        if self.deadline.as_mut().poll(cx).is_pending() {
            return Poll::Pending;
        }
        self.held = None;
        let status = deadline_exceeded(self.budget, self.domain);
        // A trailers-only response's headers are the status; as trailers, only its grpc-*
        // entries belong.
        let (parts, _) = status.into_http::<Body>().into_parts();
        let mut trailers = http::HeaderMap::new();
        for (name, value) in &parts.headers {
            if name.as_str().starts_with("grpc-") {
                trailers.insert(name.clone(), value.clone());
            }
        }
        Poll::Ready(Some(Ok(Frame::trailers(trailers))))
    }

    fn is_end_stream(&self) -> bool {
        self.held.is_none() || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};
    use tower::{Layer, Service, ServiceExt};

    /// A response body that never sends anything and never ends (a stream whose handler waits
    /// on something that does not come).
    struct Open;

    impl HttpBody for Open {
        type Data = bytes::Bytes;
        type Error = std::convert::Infallible;

        fn poll_frame(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
            Poll::Pending
        }
    }

    fn call() -> http::Request<()> {
        http::Request::builder()
            .uri("/test.v1.Things/Stream")
            .body(())
            .expect("a request")
    }

    /// The gRPC status a trailers-only response's headers, or trailers, carry.
    fn status_of(headers: &http::HeaderMap) -> tonic::Status {
        tonic::Status::from_header_map(headers).expect("a grpc-status")
    }

    #[tokio::test]
    async fn an_open_response_body_holds_its_slot_until_the_deadline_then_ends_with_timeout_trailers()
     {
        let budget = Duration::from_millis(300);
        let layer = InflightLimitLayer::new(
            1,
            RequestTimeouts::uniform(budget),
            "test.kubestore.io",
            &Metrics::new(),
        );
        let mut svc = layer.layer(tower::service_fn(|_: http::Request<()>| async {
            Ok::<_, std::convert::Infallible>(http::Response::new(Body::new(Open)))
        }));
        let start = Instant::now();
        let mut body = svc
            .ready()
            .await
            .expect("ready")
            .call(call())
            .await
            .expect("answered")
            .into_body();
        assert_eq!(layer.inflight.get(), 1);
        // The handler has answered; its open body still holds the one slot.
        let refused = svc
            .ready()
            .await
            .expect("ready")
            .call(call())
            .await
            .expect("answered");
        assert_eq!(
            status_of(refused.headers()).code(),
            tonic::Code::ResourceExhausted
        );
        // At the deadline the body ends with DEADLINE_EXCEEDED trailers (reason Timeout)...
        let frame = tokio::time::timeout(
            budget * 10,
            std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)),
        )
        .await
        .expect("the body ended at its deadline")
        .expect("a frame")
        .expect("not an error");
        let waited = start.elapsed();
        assert!(waited >= budget, "ended after {waited:?}");
        assert!(waited < budget * 10, "ended after {waited:?}");
        let trailers = frame.into_trailers().expect("trailers");
        let status = status_of(&trailers);
        assert_eq!(status.code(), tonic::Code::DeadlineExceeded, "{status:?}");
        let info = status.get_error_details().error_info().cloned();
        assert_eq!(info.map(|i| i.reason).as_deref(), Some("Timeout"));
        // ... and nothing after them; the slot is free for the next call.
        assert!(body.is_end_stream());
        assert!(
            std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx))
                .await
                .is_none()
        );
        assert_eq!(layer.inflight.get(), 0);
        let next = svc
            .ready()
            .await
            .expect("ready")
            .call(call())
            .await
            .expect("answered");
        assert!(
            tonic::Status::from_header_map(next.headers()).is_none(),
            "admitted"
        );
    }

    #[test]
    fn a_slot_is_held_for_the_callers_deadline_capped_at_the_methods_default() {
        const LONGER: &[(&str, Duration)] = &[("/DeleteCollection", Duration::from_secs(600))];
        let t = RequestTimeouts {
            default: Duration::from_secs(30),
            longer: LONGER,
        };
        let mut h = http::HeaderMap::new();
        assert_eq!(t.budget("/core.v1.Pods/Get", &h), Duration::from_secs(30));
        assert_eq!(
            t.budget("/core.v1.Pods/DeleteCollection", &h),
            Duration::from_secs(600)
        );
        h.insert("grpc-timeout", http::HeaderValue::from_static("2S"));
        assert_eq!(t.budget("/core.v1.Pods/Get", &h), Duration::from_secs(2));
        h.insert("grpc-timeout", http::HeaderValue::from_static("5M"));
        assert_eq!(t.budget("/core.v1.Pods/Get", &h), Duration::from_secs(30));
        assert_eq!(
            t.budget("/core.v1.Pods/DeleteCollection", &h),
            Duration::from_secs(300)
        );
    }

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
