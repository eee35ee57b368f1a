//! Lists of custom objects written straight to the wire: the built-in kinds' pass-through
//! (`crate::grpc::passthrough`) for `apiextensions.v1.CustomObjects/List`.
//!
//! A custom object changes form on its way out (stored: ObjectMeta and JSON bytes; sent: one
//! `google.protobuf.Struct`), so unlike a ConfigMap's its bytes cannot be framed as they are.
//! [`ObjectsPassThrough`] answers the List path itself with the same request decoding, kind
//! lookup and Store logic as the typed handler (`service`), and writes each item's Struct with
//! `wire::encode_object` instead of building and encoding a `pbjson_types::Struct`, pruned
//! and defaulted by the version's schema as the typed path's. Every other path goes to the
//! generated server.

use std::{
    convert::Infallible,
    future::Future,
    pin::Pin,
    task::{Context, Poll},
};

use kubestore_proto::{
    apiextensions::v1::ListCustomObjectsRequest, limits::REGISTRY_MAX_MESSAGE_BYTES,
};
use tonic::{Status, body::Body, server::NamedService};

use crate::{
    custom::{
        resolve::{Resolver, Target},
        wire,
    },
    grpc::{
        passthrough::{EncodedCodec, EncodedList, EncodedListEncoder},
        service,
    },
    metrics::Verb,
};

/// The List call itself.
struct ListCall {
    service: Resolver,
}

impl tower::Service<tonic::Request<ListCustomObjectsRequest>> for ListCall {
    type Response = tonic::Response<EncodedList>;
    type Error = Status;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Status>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Status>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: tonic::Request<ListCustomObjectsRequest>) -> Self::Future {
        let svc = self.service.clone();
        Box::pin(async move {
            let (md, ext, r) = request.into_parts();
            let mut ctx = service::ctx(&md, &ext)?;
            let target = Target {
                group: &r.group,
                version: &r.version,
                plural: &r.plural,
                namespace: &r.namespace,
            };
            let (kind, v) = svc.resolve(&ctx, &target, true).await?;
            let version = kind.version(&v)?;
            let store = &version.store;
            let name = crate::authz::selected_name(r.options.as_ref());
            store.authorize(&mut ctx, Verb::List, &r.namespace, &name)?;
            let api_version = format!("{}/{v}", kind.group);
            let list = async {
                let (meta, items) = store
                    .list_encoded(ctx.clone(), &r.namespace, r.options.clone())
                    .await?;
                // Each item pruned and defaulted by the version's schema as the typed path
                // does (`catalog::custom`'s `give_out`), on the JSON parsed once for writing it.
                let items = items
                    .into_iter()
                    .map(|bytes| wire::encode_object(&bytes, &api_version, Some(&version.schema)))
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(EncodedList::new(meta, items))
            };
            let list = store
                .request(&ctx, Verb::List, &r.namespace, false, list)
                .await?;
            Ok(tonic::Response::new(list))
        })
    }
}

/// The generated CustomObjects server, with its `List` answered by [`ListCall`].
#[derive(Clone)]
pub struct ObjectsPassThrough<S> {
    inner: S,
    service: Resolver,
    list_path: String,
}

impl<S: NamedService> ObjectsPassThrough<S> {
    /// Wraps `inner`, the generated server of `service`.
    pub fn new(inner: S, service: Resolver) -> Self {
        Self {
            inner,
            service,
            list_path: format!("/{}/List", S::NAME),
        }
    }
}

impl<S: NamedService> NamedService for ObjectsPassThrough<S> {
    const NAME: &'static str = S::NAME;
}

impl<S> tower::Service<http::Request<Body>> for ObjectsPassThrough<S>
where
    S: tower::Service<http::Request<Body>, Response = http::Response<Body>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<Body>) -> Self::Future {
        if req.uri().path() != self.list_path {
            return Box::pin(self.inner.call(req));
        }
        let service = self.service.clone();
        Box::pin(async move {
            let codec = EncodedCodec::<ListCustomObjectsRequest, EncodedListEncoder>::default();
            let mut grpc = tonic::server::Grpc::new(codec)
                .max_decoding_message_size(REGISTRY_MAX_MESSAGE_BYTES);
            Ok(grpc.unary(ListCall { service }, req).await)
        })
    }
}
