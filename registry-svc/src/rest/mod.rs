//! Kubernetes' REST API (`--kube-api-addr`), so that kubectl, client-go, kube-rs and the
//! Python and JavaScript clients work unchanged: one set of resource-agnostic handlers over the
//! catalog (upstream's `pkg/endpoints`), beside the gRPC services and sharing their in-flight
//! limit, deadlines, watch cut-offs and tracing.
//!
//! - [`route`]: paths; [`params`]: query parameters and content negotiation;
//! - [`handlers`]: the verbs of every resource; [`watch`]: watches as chunked JSON lines;
//! - [`body`]: request bodies (3 MiB, JSON / YAML / [`protobuf`]);
//! - [`discovery`], [`openapi`] (and [`openapi_v2`]): what clients learn the API from;
//! - [`status`]: errors as `Status` bodies; [`reply`]: responses;
//! - [`tls`]: HTTPS with the service's certificate, client certificates as identities;
//! - [`conn`]: one connection (HTTP/1.1 or h2, a bound on how long its client takes to start);
//! - this module: the server (HTTP/1.1, and h2 by ALPN), health, and the request pipeline.

pub mod attributes;
pub mod body;
pub mod conn;
pub mod discovery;
pub mod handlers;
pub mod openapi;
pub mod openapi_v2;
pub mod params;
pub mod protobuf;
pub mod reply;
pub mod reviews;
pub mod route;
pub mod status;
pub mod tls;
pub mod watch;

use std::{
    convert::Infallible,
    net::SocketAddr,
    sync::{Arc, atomic::AtomicBool},
    time::{Duration, Instant},
};

use bytes::Bytes;
use http::{HeaderValue, Method, StatusCode, header};
use http_body_util::combinators::UnsyncBoxBody;
use kubestore_telemetry::{Deadline, inflight::InflightLimitLayer};
use tokio::net::TcpListener;
use tracing::{Instrument, field::Empty};
use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::{
    catalog::Catalog,
    error::ApiError,
    store::{self, Ctx},
};
use route::Route;

/// Why a response body stopped before its end (its client did not read it in time, or the
/// list it streams failed): hyper then resets the stream (h2) or closes the connection
/// (HTTP/1.1), so the client sees a broken response, never a short one.
pub type BodyError = Box<dyn std::error::Error + Send + Sync>;

/// Response bodies.
pub type Body = UnsyncBoxBody<Bytes, BodyError>;

/// How long a TLS handshake may take.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The REST API's state.
pub struct Rest {
    /// Every resource.
    pub catalog: Arc<Catalog>,
    /// Raised on shutdown: watches end.
    pub stop: tokio::sync::watch::Receiver<bool>,
    /// The gRPC server's in-flight limit, shared.
    pub inflight: Option<InflightLimitLayer>,
    /// Whether registry-svc is SERVING (its storage answers).
    pub serving: Arc<AtomicBool>,
    /// Who a request is (`authn`): its certificate, its bearer token.
    pub authn: Arc<crate::authn::Authenticator>,
    /// What each user may do (`--authorization-mode`).
    pub gate: Arc<crate::authz::Gate>,
    /// Whether a request without credentials is the local administrator: plain HTTP (the
    /// local-development mode), or TLS without a client CA or a token file.
    pub open: bool,
    /// Audit, if configured.
    pub auditor: Option<Arc<crate::audit::Auditor>>,
    /// The OpenAPI documents.
    pub openapi: openapi::OpenApi,
    /// Connections one client address may hold (0: no bound but the process's).
    pub max_connections_per_client: usize,
    /// How long a connection with nothing in flight may stay silent.
    pub idle_timeout: Duration,
}

/// Upstream's 404 for a path nobody serves.
pub fn no_route() -> ApiError {
    ApiError::NotFound {
        resource: String::new(),
        name: String::new(),
    }
}

/// Serves the REST API on `listener` until `stopped` resolves; open watches end on the stop
/// signal, connections are shut down gracefully and given `drain` to finish.
pub async fn serve(
    listener: TcpListener,
    rest: Arc<Rest>,
    tls: Option<Arc<tokio_rustls::rustls::ServerConfig>>,
    stopped: impl std::future::Future<Output = ()> + Send + 'static,
    drain: Duration,
) {
    let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
    let peers = conn::Peers::new(
        rest.max_connections_per_client,
        conn::Peers::total_for_this_process(),
    );
    tokio::pin!(stopped);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!(error = %e, "REST API: accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut stopped => break,
        };
        let Some(place) = peers.admit(peer.ip()) else {
            // Dropped: closed at once, before a TLS handshake or a byte is read.
            tracing::debug!(%peer, "REST API: connection refused, its client holds too many");
            continue;
        };
        let _ = stream.set_nodelay(true);
        let rest = rest.clone();
        let acceptor = acceptor.clone();
        tokio::spawn(async move {
            let _place = place;
            let stop = rest.stop.clone();
            match acceptor {
                None => {
                    let idle = rest.idle_timeout;
                    conn::serve(stream, service(rest, peer, None), stop, idle).await;
                }
                Some(acceptor) => {
                    let tls = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream))
                        .await
                    {
                        Ok(Ok(tls)) => tls,
                        Ok(Err(e)) => {
                            tracing::debug!(%peer, error = %e, "REST API: TLS handshake failed");
                            return;
                        }
                        Err(_) => return,
                    };
                    let identity = tls
                        .get_ref()
                        .1
                        .peer_certificates()
                        .and_then(|c| c.first())
                        .and_then(|c| crate::authn::certificate_user(c));
                    let idle = rest.idle_timeout;
                    conn::serve(tls, service(rest, peer, identity), stop, idle).await;
                }
            }
        });
    }
    // Connections see the stop signal (raised with `stopped`) and shut down; wait for them.
    let until = tokio::time::Instant::now() + drain;
    while peers.open() > 0 && tokio::time::Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    if peers.open() > 0 {
        tracing::warn!(
            open = peers.open(),
            "REST API: connections still open after the drain; closing them"
        );
    }
}

fn service(rest: Arc<Rest>, peer: SocketAddr, identity: Option<crate::authn::UserInfo>) -> Service {
    Service {
        rest,
        peer,
        identity: Arc::new(identity),
    }
}

/// One connection's service.
#[derive(Clone)]
struct Service {
    rest: Arc<Rest>,
    peer: SocketAddr,
    /// The user of the connection's verified client certificate, read once per connection.
    identity: Arc<Option<crate::authn::UserInfo>>,
}

impl hyper::service::Service<http::Request<hyper::body::Incoming>> for Service {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<http::Response<Body>, Infallible>> + Send>,
    >;

    fn call(&self, req: http::Request<hyper::body::Incoming>) -> Self::Future {
        let (rest, peer, identity) = (self.rest.clone(), self.peer, self.identity.clone());
        Box::pin(async move { Ok(rest.handle(req, peer, &identity).await) })
    }
}

impl Rest {
    /// One request, traced, logged and answered.
    async fn handle(
        self: &Arc<Self>,
        mut req: http::Request<hyper::body::Incoming>,
        peer: SocketAddr,
        identity: &Option<crate::authn::UserInfo>,
    ) -> http::Response<Body> {
        let start = Instant::now();
        let method = req.method().clone();
        let path = req.uri().path().to_string();
        let user = self
            .authn
            .authenticate(crate::authn::Credentials {
                certificate: identity.as_ref(),
                bearer: req
                    .headers()
                    .get(header::AUTHORIZATION)
                    .and_then(|v| v.to_str().ok())
                    .and_then(crate::authn::bearer),
                plain: self.open,
            })
            .await;
        // Gone once used, as upstream's filter deletes it: nothing after authentication can
        // pass the secret on.
        req.headers_mut().remove(header::AUTHORIZATION);
        let audit_id = crate::audit::audit_id(req.headers());
        let record = self.auditor.as_ref().map(|auditor| {
            let request = crate::audit::record::Request {
                id: audit_id.clone(),
                uri: req
                    .uri()
                    .path_and_query()
                    .map_or_else(|| path.clone(), |p| p.as_str().to_string()),
                method: method.as_str().to_ascii_lowercase(),
                source_ip: Some(peer.ip()),
                user_agent: req
                    .headers()
                    .get(header::USER_AGENT)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("")
                    .to_string(),
            };
            Arc::new(crate::audit::Record::new(
                auditor.clone(),
                request,
                user.as_ref().ok().cloned(),
            ))
        });
        let route = route::parse(&path, |g, v, r| self.catalog.knows(g, v, r));
        let template = template(&route);
        let span = tracing::info_span!(
            "HTTP",
            otel.name = %format!("{method} {template}"),
            otel.kind = "server",
            otel.status_code = Empty,
            http.request.method = %method,
            http.route = %template,
            url.path = %path,
            http.response.status_code = Empty,
            client.address = %peer.ip(),
            user_agent.original = req
                .headers()
                .get(header::USER_AGENT)
                .and_then(|v| v.to_str().ok())
                .unwrap_or(""),
            user.name = user.as_ref().map_or("", |u| u.name.as_str()),
        );
        let _ = span.set_parent(kubestore_telemetry::grpc_trace::extract(req.headers()));
        let response = async {
            let user = match user {
                Ok(user) => user,
                Err(why) => {
                    tracing::debug!(reason = ?why, "REST API: unauthenticated");
                    if let Some(record) = &record {
                        record.attributes(&attributes::non_resource(&method, &path));
                    }
                    return why.to_error().map_or_else(unauthorized, |e| error(&e));
                }
            };
            // Impersonation: the user acts as another, each part allowed by the gate.
            let user = match crate::authn::impersonation::impersonate_audited(
                user,
                req.headers_mut(),
                &self.gate,
                record.as_deref(),
            ) {
                Ok(user) => user,
                Err(e) => return error(&e),
            };
            let user_agent = req
                .headers()
                .get(header::USER_AGENT)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            let caller = Arc::new(
                crate::authz::Caller::new(user, self.gate.clone())
                    .audited(record.clone())
                    .with_user_agent(user_agent),
            );
            if let Some(asked) = reviews::asked(&self.catalog, req.method(), &route) {
                let ctx = Ctx::of(caller, Deadline::after(store::DEFAULT_REQUEST_TIMEOUT));
                return match reviews::answer(self, asked, req, ctx).await {
                    Ok(r) => r,
                    Err(e) => error(&e),
                };
            }
            let warned = caller.clone();
            let mut response = match self.dispatch(req, route, caller).await {
                Ok(r) => r,
                Err(e) => error(&e),
            };
            // Admission's warnings, after the handler's own (unknown fields).
            for v in crate::warning::warning_headers(&warned.take_warnings()) {
                response.headers_mut().append(header::WARNING, v);
            }
            response
        }
        .instrument(span.clone())
        .await;
        let code = response.status().as_u16();
        // An i64: tracing-opentelemetry exports a u16 (record_u64) as a string.
        span.record("http.response.status_code", i64::from(code));
        if code >= 500 {
            span.record("otel.status_code", "ERROR");
        }
        // Repeats on one connection are folded (`kubestore_telemetry::access`); the method and
        // the route's template (not the path, which names objects) say what repeats.
        if tracing::enabled!(target: kubestore_telemetry::grpc_trace::ACCESS_LOG, tracing::Level::INFO)
            && let Some(repeated) = kubestore_telemetry::access::fold(
                &format!("{method} {template}"),
                &code.to_string(),
                Some(peer),
            )
        {
            let trace_id = kubestore_telemetry::grpc_trace::trace_id(&span);
            tracing::info!(
                target: "kubestore::access",
                parent: &span,
                method = %method,
                path = %path,
                code,
                duration_ms = start.elapsed().as_secs_f64() * 1000.0,
                peer = %peer,
                trace_id = trace_id.as_deref().unwrap_or(""),
                repeated,
                "handled"
            );
        }
        // Every response names its audit id (upstream's `Audit-Id`), audited or not.
        let (mut parts, body) = response.into_parts();
        if let Ok(v) = http::HeaderValue::from_str(&audit_id) {
            parts.headers.insert("audit-id", v);
        }
        let body = match record {
            Some(record) => http_body_util::BodyExt::boxed_unsync(
                crate::audit::body::Audited::new(body, record, code),
            ),
            None => body,
        };
        http::Response::from_parts(parts, body)
    }

    async fn dispatch(
        self: &Arc<Self>,
        req: http::Request<hyper::body::Incoming>,
        route: Route,
        caller: Arc<crate::authz::Caller>,
    ) -> Result<http::Response<Body>, ApiError> {
        if !matches!(route, Route::Resource(_)) {
            caller.check(&attributes::non_resource(req.method(), req.uri().path()))?;
        }
        let accept = params::Accept::parse(
            req.headers()
                .get(header::ACCEPT)
                .and_then(|v| v.to_str().ok()),
        );
        let get_only = |req: &http::Request<_>| {
            if req.method() == Method::GET || req.method() == Method::HEAD {
                Ok(())
            } else {
                Err(ApiError::MethodNotSupported(
                    "the server does not allow this method on the requested resource".into(),
                ))
            }
        };
        match route {
            Route::Version => {
                get_only(&req)?;
                Ok(reply::value(StatusCode::OK, &discovery::version()))
            }
            Route::Api | Route::Apis => {
                get_only(&req)?;
                let core = route == Route::Api;
                Ok(match accept.aggregated_discovery() {
                    Some(media) => {
                        let v = if media.contains("v=v2beta1") {
                            "v2beta1"
                        } else {
                            "v2"
                        };
                        discovery::answer(&discovery::aggregated(self, core, v), &media)
                    }
                    None if core => reply::value(StatusCode::OK, &discovery::api()),
                    None => reply::value(StatusCode::OK, &discovery::apis(self)),
                })
            }
            Route::Group(g) => {
                get_only(&req)?;
                discovery::group(self, &g)
                    .map(|v| reply::value(StatusCode::OK, &v))
                    .ok_or_else(no_route)
            }
            Route::GroupVersion { group, version } => {
                get_only(&req)?;
                discovery::resources(self, &group, &version)
                    .map(|v| reply::value(StatusCode::OK, &v))
                    .ok_or_else(no_route)
            }
            Route::OpenApiV3 | Route::OpenApiV3Doc(_) | Route::OpenApiV2 => {
                get_only(&req)?;
                // Counted in the in-flight limit, as every request but watches.
                let permit = match self.inflight.as_ref().map(InflightLimitLayer::try_acquire) {
                    None | Some(Ok(None)) => None,
                    Some(Ok(Some(p))) => Some(p),
                    Some(Err(limit)) => return Ok(too_many(limit)),
                };
                let built = self.openapi.current(self)?;
                let response = match &route {
                    Route::OpenApiV3Doc(path) => {
                        let doc = built.documents.get(path).ok_or_else(no_route)?;
                        openapi_document(&req, doc, reply::JSON)
                    }
                    Route::OpenApiV2 => {
                        let accept = req
                            .headers()
                            .get(header::ACCEPT)
                            .and_then(|v| v.to_str().ok())
                            .unwrap_or("");
                        match openapi_v2::media(accept) {
                            Some(openapi_v2::Media::Protobuf) => {
                                openapi_document(&req, &built.v2_protobuf, openapi_v2::PROTOBUF)
                            }
                            Some(openapi_v2::Media::Json) => {
                                openapi_document(&req, &built.v2_json, reply::JSON)
                            }
                            None => {
                                return Err(ApiError::NotAcceptable(format!(
                                    "only application/json and {} are served",
                                    openapi_v2::PROTOBUF_ACCEPT
                                )));
                            }
                        }
                    }
                    _ => reply::bytes(StatusCode::OK, reply::JSON, built.index.clone()),
                };
                drop(permit);
                Ok(response)
            }
            Route::NotFound => Err(no_route()),
            Route::Health { endpoint, check } => {
                get_only(&req)?;
                Ok(self.health(&endpoint, check.as_deref(), req.uri().query()))
            }
            Route::Resource(path) => {
                let query = params::Query::parse(req.uri().query());
                let budget = timeout(&query, req.method(), path.name.is_none());
                let mut ctx = Ctx::of(caller, Deadline::after(budget));
                let deadline = ctx.deadline;
                // The request is read whole before it takes a slot: a body that is slow to
                // come (or never comes) holds its connection, not the server's capacity.
                let call = within(deadline, handlers::parse(self, req, path, &mut ctx)).await?;
                if call.long_running() {
                    return handlers::run(self, call, ctx).await;
                }
                let permit = match self.inflight.as_ref().map(InflightLimitLayer::try_acquire) {
                    None | Some(Ok(None)) => None,
                    Some(Ok(Some(p))) => Some(p),
                    Some(Err(limit)) => return Ok(too_many(limit)),
                };
                let response = within(deadline, handlers::run(self, call, ctx)).await?;
                // The slot is held until the response is written (a list streams as its client
                // reads), and never past the request's deadline.
                Ok(reply::held(response, permit, deadline.instant()))
            }
        }
    }

    /// `/healthz`, `/livez`, `/readyz` (upstream's `healthz` handler): `ok`, or with
    /// `?verbose` a line per check; 500 when a check fails.
    fn health(
        &self,
        endpoint: &str,
        check: Option<&str>,
        query: Option<&str>,
    ) -> http::Response<Body> {
        let q = params::Query::parse(query);
        let storage_ok = self.serving.load(std::sync::atomic::Ordering::Relaxed);
        let shutting_down = *self.stop.borrow();
        let mut checks: Vec<(&str, bool)> = vec![("ping", true), ("log", true)];
        if endpoint != "livez" {
            checks.push(("etcd", storage_ok));
        }
        if endpoint == "readyz" {
            checks.push(("shutdown", !shutting_down));
        }
        let excluded: Vec<&str> = query
            .unwrap_or("")
            .split('&')
            .filter_map(|p| p.strip_prefix("exclude="))
            .collect();
        let text = |s: &str| bytes::Bytes::from(s.to_string());
        if let Some(name) = check {
            return match checks.iter().find(|(n, _)| *n == name) {
                Some((_, true)) => {
                    reply::bytes(StatusCode::OK, "text/plain; charset=utf-8", text("ok"))
                }
                Some((_, false)) => reply::bytes(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "text/plain; charset=utf-8",
                    text(&format!("internal server error: {name} check failed\n")),
                ),
                None => error(&no_route()),
            };
        }
        let mut lines = String::new();
        let mut ok = true;
        for (name, passed) in &checks {
            if excluded.contains(name) {
                lines.push_str(&format!("[+]{name} excluded: ok\n"));
            } else if *passed {
                lines.push_str(&format!("[+]{name} ok\n"));
            } else {
                ok = false;
                lines.push_str(&format!("[-]{name} failed: reason withheld\n"));
            }
        }
        if ok && q.get("verbose").is_none() {
            return reply::bytes(StatusCode::OK, "text/plain; charset=utf-8", text("ok"));
        }
        lines.push_str(&format!(
            "{endpoint} check {}\n",
            if ok { "passed" } else { "failed" }
        ));
        reply::bytes(
            if ok {
                StatusCode::OK
            } else {
                StatusCode::INTERNAL_SERVER_ERROR
            },
            "text/plain; charset=utf-8",
            text(&lines),
        )
    }
}

/// `f`, or upstream's 504 once `deadline` has passed.
async fn within<T>(
    deadline: Deadline,
    f: impl std::future::Future<Output = Result<T, ApiError>>,
) -> Result<T, ApiError> {
    tokio::time::timeout_at(deadline.instant(), f)
        .await
        .unwrap_or_else(|_| Err(crate::offload::timeout()))
}

/// An OpenAPI document as upstream serves it: its hash as `ETag`, 304 to a client that has
/// it, and cached for good by a client that asked for it by that hash.
fn openapi_document(
    req: &http::Request<hyper::body::Incoming>,
    doc: &openapi::Document,
    content_type: &str,
) -> http::Response<Body> {
    let etag = format!("\"{}\"", doc.hash);
    let has_it = req
        .headers()
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|t| t.trim() == etag || t.trim() == "*");
    let asked_by_hash = params::Query::parse(req.uri().query()).get("hash") == Some(&doc.hash);
    let mut r = if has_it {
        reply::bytes(StatusCode::NOT_MODIFIED, content_type, Bytes::new())
    } else {
        reply::bytes(StatusCode::OK, content_type, doc.body.clone())
    };
    let cache = if asked_by_hash {
        "public, immutable"
    } else {
        "no-cache, private"
    };
    let headers = r.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&etag) {
        headers.insert(header::ETAG, v);
    }
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    r
}

/// A request's deadline: its `timeout` parameter, capped at the default request timeout (a
/// DeleteCollection's longer one).
fn timeout(query: &params::Query, method: &Method, collection: bool) -> Duration {
    let cap = if method == Method::DELETE && collection {
        crate::store::DELETE_COLLECTION_TIMEOUT
    } else {
        crate::store::DEFAULT_REQUEST_TIMEOUT
    };
    query
        .get("timeout")
        .and_then(|t| kubestore_telemetry::deadline::parse_duration(t).ok())
        .filter(|t| !t.is_zero())
        .map_or(cap, |t| t.min(cap))
}

/// The route as a template, for span names and `http.route` (no names or namespaces in it:
/// a bounded set of values).
fn template(route: &Route) -> String {
    match route {
        Route::Version => "/version".into(),
        Route::Api => "/api".into(),
        Route::Apis => "/apis".into(),
        Route::Group(_) => "/apis/{group}".into(),
        Route::GroupVersion { group, .. } if group.is_empty() => "/api/v1".into(),
        Route::GroupVersion { .. } => "/apis/{group}/{version}".into(),
        Route::OpenApiV3 => "/openapi/v3".into(),
        Route::OpenApiV3Doc(_) => "/openapi/v3/{path}".into(),
        Route::OpenApiV2 => "/openapi/v2".into(),
        Route::Health { endpoint, .. } => format!("/{endpoint}"),
        Route::NotFound => "unknown".into(),
        Route::Resource(p) => {
            let mut t = if p.group.is_empty() {
                "/api/v1".to_string()
            } else {
                "/apis/{group}/{version}".to_string()
            };
            if p.namespace.is_some() {
                t.push_str("/namespaces/{namespace}");
            }
            t.push_str("/{resource}");
            if p.name.is_some() {
                t.push_str("/{name}");
            }
            if let Some(s) = &p.subresource {
                t.push('/');
                t.push_str(if s == "status" {
                    "status"
                } else {
                    "{subresource}"
                });
            }
            t
        }
    }
}

/// An error as a `Status` response.
pub fn error(e: &ApiError) -> http::Response<Body> {
    let body = status::body(e);
    let code = StatusCode::from_u16(e.http_code()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut r = reply::value(code, &body);
    if matches!(
        e,
        ApiError::TooManyRequests(_) | ApiError::WatcherTooSlow(_)
    ) {
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    r
}

/// Upstream's 401 for a request without credentials.
fn unauthorized() -> http::Response<Body> {
    reply::value(
        StatusCode::UNAUTHORIZED,
        &serde_json::json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "Unauthorized", "reason": "Unauthorized", "code": 401,
        }),
    )
}

/// The in-flight limit's refusal, with upstream's `Retry-After`.
fn too_many(limit: usize) -> http::Response<Body> {
    error(&ApiError::TooManyRequests(format!(
        "Too many requests, please try again later: {limit} requests are running (--max-requests-inflight)"
    )))
}
