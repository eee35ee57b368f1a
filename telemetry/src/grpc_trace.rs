//! One tower layer, used on every gRPC server (kind `Server`) and on the registry's channel to
//! storage-svc (kind `Client`), so that no handler carries tracing code:
//!
//! - a span per RPC named `<package.Service>/<Method>` with `otel.kind`, `rpc.system`,
//!   `rpc.service`, `rpc.method` and, once known, `rpc.grpc.status_code`;
//! - servers continue the caller's trace from the W3C `traceparent` header; clients inject the
//!   current span's context into the outgoing headers;
//! - servers record go-grpc-prometheus's `grpc_server_started_total`,
//!   `grpc_server_handled_total{grpc_type,grpc_service,grpc_method,grpc_code}` and, for unary
//!   calls, `grpc_server_handling_seconds` (what Grafana's gRPC dashboards query).
//!
//! The status code is read from the response headers (a "trailers-only" error) or, for
//! responses with a body, from the trailers, so a streaming RPC that fails mid-stream is recorded
//! with its real code. The span lives until the body ends.
//!
//! Health checks and reflection are neither traced nor counted: a probe every few seconds
//! would bury the traces users look for. On servers, a path that names no served method is
//! recorded as service and method `unknown` (span `unknown gRPC method`): label values taken
//! from request paths would let any client grow `/metrics` without bound.

use std::{
    collections::HashMap,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
    time::Instant,
};

use http::HeaderMap;
use http_body::{Body as HttpBody, Frame};
use opentelemetry::propagation::{Extractor, Injector};
use tracing::{Instrument, Span, field::Empty};
use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::metrics::{RpcLabels, RpcMethodLabels, RpcMetrics, RpcType};

/// Which side of the call this layer wraps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Incoming calls: extract `traceparent`, record metrics.
    Server,
    /// Outgoing calls: inject `traceparent`.
    Client,
}

/// The tower layer; see the module docs.
#[derive(Clone)]
pub struct GrpcTraceLayer {
    kind: Kind,
    metrics: Option<RpcMetrics>,
    known: Option<Arc<HashMap<String, RpcType>>>,
    /// Client: metadata sent with every call (credentials), beside `traceparent`.
    metadata: Option<Arc<http::HeaderMap>>,
}

impl GrpcTraceLayer {
    /// For a server serving the method paths in `known` (`/package.Service/Method`, with their
    /// streaming types), recording RPC metrics into `metrics`.
    pub fn server(metrics: RpcMetrics, known: Arc<HashMap<String, RpcType>>) -> Self {
        Self {
            kind: Kind::Server,
            metrics: Some(metrics),
            known: Some(known),
            metadata: None,
        }
    }

    /// For a client channel.
    pub fn client() -> Self {
        Self {
            kind: Kind::Client,
            metrics: None,
            known: None,
            metadata: None,
        }
    }

    /// For a client that sends `metadata` with every call (its credentials: `authorization`,
    /// `impersonate-user`, ...), as it sends `traceparent`.
    pub fn client_with(metadata: http::HeaderMap) -> Self {
        Self {
            metadata: (!metadata.is_empty()).then(|| Arc::new(metadata)),
            ..Self::client()
        }
    }
}

impl<S> tower::Layer<S> for GrpcTraceLayer {
    type Service = GrpcTraceService<S>;
    fn layer(&self, inner: S) -> Self::Service {
        GrpcTraceService {
            inner,
            kind: self.kind,
            metrics: self.metrics.clone(),
            known: self.known.clone(),
            metadata: self.metadata.clone(),
        }
    }
}

/// The service produced by [`GrpcTraceLayer`].
#[derive(Clone)]
pub struct GrpcTraceService<S> {
    inner: S,
    kind: Kind,
    metrics: Option<RpcMetrics>,
    known: Option<Arc<HashMap<String, RpcType>>>,
    metadata: Option<Arc<http::HeaderMap>>,
}

/// Label value of a service or method that is not served.
pub const UNKNOWN: &str = "unknown";

/// `/pkg.Service/Method` -> (`pkg.Service`, `Method`).
fn split_path(path: &str) -> (&str, &str) {
    let p = path.trim_start_matches('/');
    p.split_once('/').unwrap_or((p, ""))
}

fn untraced(service: &str) -> bool {
    service == "grpc.health.v1.Health" || service.starts_with("grpc.reflection.")
}

struct HeaderExtractor<'a>(&'a HeaderMap);
impl Extractor for HeaderExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|v| v.to_str().ok())
    }
    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(|k| k.as_str()).collect()
    }
}

struct HeaderInjector<'a>(&'a mut HeaderMap);
impl Injector for HeaderInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let (Ok(k), Ok(v)) = (
            http::header::HeaderName::from_bytes(key.as_bytes()),
            http::HeaderValue::from_str(&value),
        ) {
            self.0.insert(k, v);
        }
    }
}

/// The OpenTelemetry context carried by `headers` (W3C `traceparent`/`tracestate`).
pub fn extract(headers: &HeaderMap) -> opentelemetry::Context {
    opentelemetry::global::get_text_map_propagator(|p| p.extract(&HeaderExtractor(headers)))
}

/// Writes `span`'s context into `headers` as W3C `traceparent`/`tracestate`.
pub fn inject(span: &Span, headers: &mut HeaderMap) {
    let cx = span.context();
    opentelemetry::global::get_text_map_propagator(|p| {
        p.inject_context(&cx, &mut HeaderInjector(headers))
    });
}

/// The trace id of `span` as 32 hex digits, or `None` without an OpenTelemetry layer.
pub fn trace_id(span: &Span) -> Option<String> {
    use opentelemetry::trace::TraceContextExt;
    let cx = span.context();
    let sc = cx.span().span_context().clone();
    sc.is_valid().then(|| sc.trace_id().to_string())
}

fn grpc_code_name(code: i32) -> &'static str {
    match code {
        0 => "OK",
        1 => "CANCELLED",
        2 => "UNKNOWN",
        3 => "INVALID_ARGUMENT",
        4 => "DEADLINE_EXCEEDED",
        5 => "NOT_FOUND",
        6 => "ALREADY_EXISTS",
        7 => "PERMISSION_DENIED",
        8 => "RESOURCE_EXHAUSTED",
        9 => "FAILED_PRECONDITION",
        10 => "ABORTED",
        11 => "OUT_OF_RANGE",
        12 => "UNIMPLEMENTED",
        13 => "INTERNAL",
        14 => "UNAVAILABLE",
        15 => "DATA_LOSS",
        16 => "UNAUTHENTICATED",
        _ => "UNKNOWN",
    }
}

/// Whether a call that ended with `code` marks its span as an error, by OpenTelemetry's gRPC
/// semantic conventions: every non-OK code on a client span; on a server span only the codes
/// that say the server failed (UNKNOWN, DEADLINE_EXCEEDED, UNIMPLEMENTED, INTERNAL,
/// UNAVAILABLE, DATA_LOSS), so a NOT_FOUND or an INVALID_ARGUMENT (the caller's doing) is not
/// red in Jaeger.
pub fn is_error(code: i32, server: bool) -> bool {
    if server {
        matches!(code, 2 | 4 | 12 | 13 | 14 | 15)
    } else {
        code != 0
    }
}

fn grpc_status(headers: &HeaderMap) -> Option<i32> {
    headers
        .get("grpc-status")
        .and_then(|v| v.to_str().ok())
        .and_then(|s| s.parse().ok())
}

/// The remote address tonic recorded for the connection (plaintext or TLS).
fn peer_addr(ext: &http::Extensions) -> Option<std::net::SocketAddr> {
    use tonic::transport::server::{TcpConnectInfo, TlsConnectInfo};
    ext.get::<TcpConnectInfo>()
        .and_then(TcpConnectInfo::remote_addr)
        .or_else(|| {
            ext.get::<TlsConnectInfo<TcpConnectInfo>>()
                .and_then(|t| t.get_ref().remote_addr())
        })
}

/// Records the outcome of one RPC on its span and in the metrics, exactly once.
struct Outcome {
    span: Span,
    /// A server span (OpenTelemetry's gRPC conventions mark fewer codes as errors there).
    server: bool,
    start: Instant,
    labels: Option<RpcMethodLabels>,
    /// Unary: observed in `grpc_server_handling_seconds`.
    unary: bool,
    metrics: Option<RpcMetrics>,
    /// The caller's address and trace id (servers), for the access log.
    peer: Option<std::net::SocketAddr>,
    trace_id: Option<String>,
    done: bool,
}

/// Target of the access log: one line per served call at `info`, repeats on one connection
/// folded (`crate::access`; `RUST_LOG=info,kubestore::access=off` silences it).
pub const ACCESS_LOG: &str = "kubestore::access";

impl Outcome {
    fn finish(&mut self, code: i32) {
        if self.done {
            return;
        }
        self.done = true;
        self.span.record("rpc.grpc.status_code", code);
        if is_error(code, self.server) {
            self.span.record("otel.status_code", "ERROR");
        }
        let elapsed = self.start.elapsed();
        if self.server
            && tracing::enabled!(target: ACCESS_LOG, tracing::Level::INFO)
            && let Some(labels) = &self.labels
        {
            let method = format!("/{}/{}", labels.grpc_service, labels.grpc_method);
            if let Some(repeated) = crate::access::fold(&method, grpc_code_name(code), self.peer) {
                tracing::info!(
                    target: ACCESS_LOG,
                    parent: None,
                    method = %method,
                    code = grpc_code_name(code),
                    duration_ms = (elapsed.as_secs_f64() * 1e6).round() / 1e3,
                    peer = %self.peer.map_or_else(|| "-".to_string(), |p| p.to_string()),
                    trace_id = self.trace_id.as_deref().unwrap_or("-"),
                    repeated,
                    "handled"
                );
            }
        }
        if let (Some(m), Some(labels)) = (&self.metrics, self.labels.take()) {
            if self.unary {
                m.handling
                    .get_or_create(&labels)
                    .observe(elapsed.as_secs_f64());
            }
            m.handled
                .get_or_create(&RpcLabels {
                    grpc_type: labels.grpc_type,
                    grpc_service: labels.grpc_service,
                    grpc_method: labels.grpc_method,
                    grpc_code: grpc_code_name(code).to_string(),
                })
                .inc();
        }
    }
}

impl Drop for Outcome {
    fn drop(&mut self) {
        // A body dropped before its trailers: the peer went away.
        self.finish(1);
    }
}

pin_project_lite::pin_project! {
    /// Response body that records the status code found in the trailers.
    pub struct TracedBody<B> {
        #[pin]
        inner: B,
        outcome: Option<Outcome>,
    }
}

impl<B> HttpBody for TracedBody<B>
where
    B: HttpBody,
{
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = self.project();
        let res = this.inner.poll_frame(cx);
        match &res {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(code) = frame.trailers_ref().and_then(grpc_status)
                    && let Some(mut o) = this.outcome.take()
                {
                    o.finish(code);
                }
            }
            Poll::Ready(Some(Err(_))) => {
                if let Some(mut o) = this.outcome.take() {
                    o.finish(2);
                }
            }
            Poll::Ready(None) => {
                if let Some(mut o) = this.outcome.take() {
                    // A body that ends without trailers carried no status: treat as OK only
                    // if nothing else was said (tonic always sends trailers).
                    o.finish(0);
                }
            }
            Poll::Pending => {}
        }
        res
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

type BoxFuture<T> = Pin<Box<dyn std::future::Future<Output = T> + Send>>;

impl<S, ReqBody, ResBody> tower::Service<http::Request<ReqBody>> for GrpcTraceService<S>
where
    S: tower::Service<http::Request<ReqBody>, Response = http::Response<ResBody>>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    ReqBody: Send + 'static,
    ResBody: HttpBody<Data = bytes_alias::Bytes> + Send + 'static,
    ResBody::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = S::Error;
    type Future = BoxFuture<Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: http::Request<ReqBody>) -> Self::Future {
        // Take the service that was driven to readiness, leave a clone behind (tower's rule).
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        if let Some(metadata) = &self.metadata {
            for (name, value) in metadata.iter() {
                req.headers_mut().append(name.clone(), value.clone());
            }
        }
        let path = req.uri().path().to_string();
        let (service, method) = split_path(&path);
        if untraced(service) {
            let fut = inner.call(req);
            return Box::pin(async move {
                let resp = fut.await?;
                Ok(resp.map(tonic::body::Body::new))
            });
        }
        let rpc_type = match &self.known {
            Some(k) => k.get(&path).copied(),
            None => Some(RpcType::Unary),
        };
        let served = rpc_type.is_some();
        let (service, method, name) = if served {
            (
                service.to_string(),
                method.to_string(),
                format!("{service}/{method}"),
            )
        } else {
            (
                UNKNOWN.to_string(),
                UNKNOWN.to_string(),
                "unknown gRPC method".to_string(),
            )
        };
        let span = match self.kind {
            Kind::Server => tracing::info_span!(
                "grpc.server",
                otel.name = %name,
                otel.kind = "server",
                otel.status_code = Empty,
                rpc.system = "grpc",
                rpc.service = %service,
                rpc.method = %method,
                rpc.grpc.status_code = Empty,
                trace_id = Empty,
            ),
            Kind::Client => tracing::info_span!(
                "grpc.client",
                otel.name = %name,
                otel.kind = "client",
                otel.status_code = Empty,
                rpc.system = "grpc",
                rpc.service = %service,
                rpc.method = %method,
                rpc.grpc.status_code = Empty,
            ),
        };
        let mut trace_id_seen = None;
        match self.kind {
            Kind::Server => {
                // The parent must be set before the span is first entered.
                let parent = extract(req.headers());
                // Without an exporter there is no OpenTelemetry context on the span; the
                // caller's trace id still goes into the logs.
                let remote = {
                    use opentelemetry::trace::TraceContextExt;
                    let sc = parent.span().span_context().clone();
                    sc.is_valid().then(|| sc.trace_id().to_string())
                };
                let _ = span.set_parent(parent);
                if let Some(id) = trace_id(&span).or(remote) {
                    span.record("trace_id", id.as_str());
                    trace_id_seen = Some(id);
                }
            }
            Kind::Client => inject(&span, req.headers_mut()),
        }
        let peer = match self.kind {
            Kind::Server => peer_addr(req.extensions()),
            Kind::Client => None,
        };
        let trace_id = trace_id_seen;
        // An unknown method is answered UNIMPLEMENTED at once: counted as unary.
        let rpc_type = rpc_type.unwrap_or(RpcType::Unary);
        let labels = RpcMethodLabels {
            grpc_type: rpc_type.as_str().to_string(),
            grpc_service: service,
            grpc_method: method,
        };
        if let Some(m) = &self.metrics {
            m.started.get_or_create(&labels).inc();
        }
        let mut outcome = Outcome {
            server: matches!(self.kind, Kind::Server),
            span: span.clone(),
            start: Instant::now(),
            labels: Some(labels),
            unary: rpc_type == RpcType::Unary,
            metrics: self.metrics.clone(),
            peer,
            trace_id,
            done: false,
        };
        let fut = inner.call(req).instrument(span);
        Box::pin(async move {
            let resp = fut.await?;
            if let Some(code) = grpc_status(resp.headers()) {
                outcome.finish(code);
                return Ok(resp.map(tonic::body::Body::new));
            }
            Ok(resp.map(|b| {
                tonic::body::Body::new(TracedBody {
                    inner: b,
                    outcome: Some(outcome),
                })
            }))
        })
    }
}

/// `bytes` through `http-body`, without a direct dependency on the `bytes` crate.
mod bytes_alias {
    pub(crate) type Bytes = <tonic::body::Body as http_body::Body>::Data;
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::{
        SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState,
    };
    use opentelemetry_sdk::propagation::TraceContextPropagator;

    #[test]
    fn a_trace_id_survives_inject_then_extract() {
        opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
        let sc = SpanContext::new(
            TraceId::from_hex("4bf92f3577b34da6a3ce929d0e0e4736").expect("hex"),
            SpanId::from_hex("00f067aa0ba902b7").expect("hex"),
            TraceFlags::SAMPLED,
            true,
            TraceState::default(),
        );
        let cx = opentelemetry::Context::new().with_remote_span_context(sc.clone());
        let mut headers = HeaderMap::new();
        opentelemetry::global::get_text_map_propagator(|p| {
            p.inject_context(&cx, &mut HeaderInjector(&mut headers))
        });
        assert_eq!(
            headers.get("traceparent").and_then(|v| v.to_str().ok()),
            Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
        );
        let back = extract(&headers);
        assert_eq!(back.span().span_context().trace_id(), sc.trace_id());
        assert_eq!(back.span().span_context().span_id(), sc.span_id());
    }

    #[test]
    fn server_spans_are_errors_only_for_the_servers_faults() {
        for code in [2, 4, 12, 13, 14, 15] {
            assert!(super::is_error(code, true), "{code}");
        }
        for code in [0, 1, 3, 5, 6, 7, 8, 9, 10, 11, 16] {
            assert!(!super::is_error(code, true), "{code}");
        }
        assert!(
            super::is_error(5, false),
            "every non-OK code on a client span"
        );
        assert!(!super::is_error(0, false));
    }

    #[test]
    fn paths_split_into_service_and_method() {
        assert_eq!(
            split_path("/storage.v1.Storage/Create"),
            ("storage.v1.Storage", "Create")
        );
        assert!(untraced(split_path("/grpc.health.v1.Health/Check").0));
        assert!(untraced("grpc.reflection.v1.ServerReflection"));
        assert!(!untraced("core.v1.Pods"));
    }
}
