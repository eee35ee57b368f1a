//! List without decoding: storage-svc returns each object already encoded (and stamped with its
//! resourceVersion), and a `PodList` on the wire is its `ListMeta` as field 1 followed by each
//! `Pod` as a length-delimited field 2. So registry-svc frames storage's bytes into the list's
//! wire format instead of decoding ten thousand objects and encoding them again, which was
//! most of a large List's cost (BENCHMARKS.md).
//!
//! [`RawList`] wraps a kind's generated server and answers its `List` path itself, with the
//! same request decoding (malformed = INVALID_ARGUMENT), the same Store logic (selectors,
//! narrowing, storage errors) and a response clients cannot tell from the generated one. A kind
//! whose strategy decorates objects (`Strategy::has_decorator`) goes through the generated,
//! typed path.

use std::{
    convert::Infallible,
    future::Future,
    marker::PhantomData,
    pin::Pin,
    task::{Context, Poll},
};

use bytes::{BufMut, Bytes};
use kubestore_proto::{
    codec::{CheckedDecoder, RegistryDomain},
    limits::REGISTRY_MAX_MESSAGE_BYTES,
    meta::v1::ListMeta,
};
use prost::{
    Message,
    encoding::{WireType, encode_key, encode_varint},
};
use tonic::{
    Status,
    body::Body,
    codec::{BufferSettings, Codec, EncodeBuf, Encoder},
    server::NamedService,
};

use crate::{resource::Resource, service, store::Store};

/// A list page ready to be sent: its metadata and the encoded objects.
pub struct EncodedList {
    meta: ListMeta,
    items: Vec<Bytes>,
}

/// Writes an [`EncodedList`] as the kind's list message.
#[derive(Debug, Default)]
pub struct EncodedListEncoder;

impl Encoder for EncodedListEncoder {
    type Item = EncodedList;
    type Error = Status;

    fn encode(&mut self, item: EncodedList, buf: &mut EncodeBuf<'_>) -> Result<(), Status> {
        // Field 1: metadata; field 2, repeated: the objects, as `repeated Pod items = 2`.
        encode_key(1, WireType::LengthDelimited, buf);
        encode_varint(item.meta.encoded_len() as u64, buf);
        item.meta
            .encode(buf)
            .map_err(|e| Status::internal(format!("encoding a list: {e}")))?;
        for object in &item.items {
            encode_key(2, WireType::LengthDelimited, buf);
            encode_varint(object.len() as u64, buf);
            buf.put_slice(object);
        }
        Ok(())
    }

    fn buffer_settings(&self) -> BufferSettings {
        BufferSettings::default()
    }
}

/// Decodes the kind's List request like the generated code, encodes [`EncodedList`].
pub struct EncodedListCodec<Q>(PhantomData<Q>);

impl<Q> Default for EncodedListCodec<Q> {
    fn default() -> Self {
        Self(PhantomData)
    }
}

impl<Q: Message + Default + Send + 'static> Codec for EncodedListCodec<Q> {
    type Encode = EncodedList;
    type Decode = Q;
    type Encoder = EncodedListEncoder;
    type Decoder = CheckedDecoder<Q, RegistryDomain>;

    fn encoder(&mut self) -> Self::Encoder {
        EncodedListEncoder
    }

    fn decoder(&mut self) -> Self::Decoder {
        CheckedDecoder::new()
    }
}

/// The List call itself.
struct ListCall<R: Resource> {
    store: Store<R>,
}

impl<R: Resource> tower::Service<tonic::Request<R::ListRequest>> for ListCall<R> {
    type Response = tonic::Response<EncodedList>;
    type Error = Status;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Status>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Status>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: tonic::Request<R::ListRequest>) -> Self::Future {
        let store = self.store.clone();
        Box::pin(async move {
            let ctx = service::ctx(request.metadata());
            let (namespace, options) = R::list_parts(request.into_inner());
            let (meta, items) = store.list_encoded(ctx, &namespace, options).await?;
            Ok(tonic::Response::new(EncodedList { meta, items }))
        })
    }
}

/// A kind's generated server, with its `List` answered by [`ListCall`]; see the module docs.
pub struct RawList<S, R: Resource> {
    inner: S,
    store: Store<R>,
    path: String,
}

impl<S: Clone, R: Resource> Clone for RawList<S, R> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            store: self.store.clone(),
            path: self.path.clone(),
        }
    }
}

impl<S: NamedService, R: Resource> RawList<S, R> {
    /// Wraps `inner`, the generated server of `store`'s kind.
    pub fn new(inner: S, store: Store<R>) -> Self {
        Self {
            inner,
            store,
            path: format!("/{}/List", S::NAME),
        }
    }
}

impl<S: NamedService, R: Resource> NamedService for RawList<S, R> {
    const NAME: &'static str = S::NAME;
}

impl<S, R> tower::Service<http::Request<Body>> for RawList<S, R>
where
    S: tower::Service<http::Request<Body>, Response = http::Response<Body>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    R: Resource,
{
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<Body>) -> Self::Future {
        if req.uri().path() != self.path || self.store.strategy.has_decorator() {
            let fut = self.inner.call(req);
            return Box::pin(fut);
        }
        let store = self.store.clone();
        Box::pin(async move {
            let mut grpc = tonic::server::Grpc::new(EncodedListCodec::<R::ListRequest>::default())
                .max_decoding_message_size(REGISTRY_MAX_MESSAGE_BYTES);
            Ok(grpc.unary(ListCall { store }, req).await)
        })
    }
}
