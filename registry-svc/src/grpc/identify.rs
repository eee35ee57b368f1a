//! Authentication of gRPC calls, as the REST API authenticates its requests (`crate::authn`):
//! a verified client certificate, else a bearer token (of `--token-auth-file`, or a
//! ServiceAccount's) in the call's `authorization` metadata (`Bearer <token>`, as grpcurl's `-H` and every gRPC client send
//! it). A call that presents neither, or a token the file does not hold, ends with
//! UNAUTHENTICATED (`Unauthorized`, reason `Unauthorized` in its ErrorInfo) before it reaches a
//! service; over plain gRPC (no TLS, the local-development mode), or TLS with nothing to
//! authenticate with (no client CA, no token file), a call without credentials is the local
//! administrator, as on the REST API. Health checks are never authenticated (load balancers
//! and `healthcheck` call them).
//!
//! The user becomes the call's [`Caller`] (with the server's gate, `authz`), put in the
//! request's extensions, where every handler takes it from (`grpc::service::ctx`). With a
//! token file, the handshake lets a client without a certificate through (as kube-apiserver's
//! does) and this layer decides.

use std::{
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
};

use tonic::{
    Status,
    body::Body,
    transport::server::{TcpConnectInfo, TlsConnectInfo},
};
use tonic_types::{ErrorDetails, StatusExt};

use crate::{
    authn::{Authenticator, Credentials, certificate_user},
    authz::{Caller, Gate},
};

/// The layer.
#[derive(Clone, Debug)]
pub struct IdentifyLayer {
    authn: Arc<Authenticator>,
    auditor: Option<Arc<crate::audit::Auditor>>,
    /// A call without credentials is the local administrator (see the module's doc).
    open: bool,
    gate: Arc<Gate>,
    domain: &'static str,
}

impl IdentifyLayer {
    /// Calls authenticated by `authn` (`open`: a call without credentials is the local
    /// administrator) and decided by `gate`; refusals name `domain` in their ErrorInfo.
    pub fn new(
        authn: Arc<Authenticator>,
        open: bool,
        gate: Arc<Gate>,
        domain: &'static str,
    ) -> Self {
        Self {
            authn,
            auditor: None,
            open,
            gate,
            domain,
        }
    }
}

impl IdentifyLayer {
    /// Calls audited by `auditor`.
    pub fn audited(mut self, auditor: Option<Arc<crate::audit::Auditor>>) -> Self {
        self.auditor = auditor;
        self
    }
}

impl<S> tower::Layer<S> for IdentifyLayer {
    type Service = Identify<S>;
    fn layer(&self, inner: S) -> Self::Service {
        Identify {
            inner,
            layer: self.clone(),
        }
    }
}

/// The service made by [`IdentifyLayer`].
#[derive(Clone, Debug)]
pub struct Identify<S> {
    inner: S,
    layer: IdentifyLayer,
}

type BoxFuture<T> = Pin<Box<dyn std::future::Future<Output = T> + Send>>;

impl<S, B> tower::Service<http::Request<B>> for Identify<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<Body>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    B: Send + 'static,
{
    type Response = http::Response<Body>;
    type Error = S::Error;
    type Future = BoxFuture<Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: http::Request<B>) -> Self::Future {
        if request.uri().path().starts_with("/grpc.health.v1.Health/") {
            return Box::pin(self.inner.call(request));
        }
        // A certificate the handshake verified (one is only asked for with a client CA).
        let certificate = request
            .extensions()
            .get::<TlsConnectInfo<TcpConnectInfo>>()
            .and_then(TlsConnectInfo::peer_certs)
            .and_then(|chain| chain.first().and_then(|leaf| certificate_user(leaf)));
        // Gone once read, as upstream's filter deletes it: nothing after this layer can pass
        // the secret on.
        let bearer = request
            .headers_mut()
            .remove(http::header::AUTHORIZATION)
            .and_then(|v| {
                v.to_str()
                    .ok()
                    .and_then(crate::authn::bearer)
                    .map(String::from)
            });
        // The service that was made ready is the one called (tower's clone-and-swap).
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let layer = self.layer.clone();
        let audit_id = crate::audit::audit_id(request.headers());
        let audit = layer.auditor.is_some().then(|| {
            let source_ip = request
                .extensions()
                .get::<TcpConnectInfo>()
                .or_else(|| {
                    request
                        .extensions()
                        .get::<TlsConnectInfo<TcpConnectInfo>>()
                        .map(TlsConnectInfo::get_ref)
                })
                .and_then(TcpConnectInfo::remote_addr)
                .map(|a| a.ip());
            crate::audit::record::Request {
                id: audit_id.clone(),
                uri: request.uri().path().to_string(),
                method: "post".into(),
                source_ip,
                user_agent: request
                    .headers()
                    .get(http::header::USER_AGENT)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("")
                    .to_string(),
            }
        });
        Box::pin(async move {
            let who = layer
                .authn
                .authenticate(Credentials {
                    certificate: certificate.as_ref(),
                    bearer: bearer.as_deref(),
                    plain: layer.open,
                })
                .await;
            let record = layer.auditor.clone().zip(audit).map(|(auditor, request)| {
                Arc::new(crate::audit::Record::new(
                    auditor,
                    request,
                    who.as_ref().ok().cloned(),
                ))
            });
            let mut served: Option<Arc<Caller>> = None;
            let response = async {
                let user = match who {
                    Ok(user) => user,
                    Err(why) => {
                        tracing::debug!(reason = ?why, path = %request.uri().path(), "gRPC: unauthenticated");
                        if let Some(e) = why.to_error() {
                            return Ok(Status::from(e).into_http());
                        }
                        let mut details = ErrorDetails::new();
                        details.set_error_info("Unauthorized", layer.domain, []);
                        let status = Status::with_error_details(
                            tonic::Code::Unauthenticated,
                            "Unauthorized",
                            details,
                        );
                        return Ok(status.into_http());
                    }
                };
                // Impersonation, by metadata of the REST API's header names.
                let user = match crate::authn::impersonation::impersonate_audited(
                    user,
                    request.headers_mut(),
                    &layer.gate,
                    record.as_deref(),
                ) {
                    Ok(user) => user,
                    Err(e) => return Ok(Status::from(e).into_http()),
                };
                let user_agent = request
                    .headers()
                    .get(http::header::USER_AGENT)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("");
                let caller = Arc::new(
                    Caller::new(user, layer.gate.clone())
                        .audited(record.clone())
                        .with_user_agent(user_agent),
                );
                served = Some(caller.clone());
                request.extensions_mut().insert(caller);
                inner.call(request).await
            }
            .await?;
            // Every response names its audit id, audited or not; an audited one completes
            // its record when its body (and trailers) end.
            let (mut parts, body) = response.into_parts();
            if let Ok(v) = http::HeaderValue::from_str(&audit_id) {
                parts.headers.insert("audit-id", v);
            }
            // Admission's warnings, in the REST API's form (a streaming call's come with its
            // first response, so only those added before it).
            if let Some(caller) = &served {
                for v in crate::warning::warning_headers(&caller.take_warnings()) {
                    parts.headers.append("warning", v);
                }
            }
            let body = match record {
                Some(record) => {
                    let (code, _) =
                        crate::audit::body::grpc_status(&parts.headers).unwrap_or((200, None));
                    Body::new(crate::audit::body::Audited::new(body, record, code))
                }
                None => body,
            };
            Ok(http::Response::from_parts(parts, body))
        })
    }
}
