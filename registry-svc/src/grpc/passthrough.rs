//! List and Watch without decoding: storage-svc returns each object already encoded (and
//! stamped with its resourceVersion), and on the wire
//! - a `PodList` is its `ListMeta` as field 1 followed by each `Pod` as a length-delimited
//!   field 2;
//! - a `PodWatchEvent` is its type as varint field 1 and its `Pod` as length-delimited field 2.
//!
//! So registry-svc frames storage's bytes into those messages instead of decoding objects and
//! encoding them again: that was most of a large List's cost, and of a wide watch fan-out's,
//! where every event is sent once per watcher (BENCHMARKS.md).
//!
//! [`PassThrough`] wraps a kind's generated server and answers its `List` and `Watch` paths
//! itself, with the same request decoding (malformed = INVALID_ARGUMENT), the same Store logic
//! (validation, selectors, narrowing, storage errors, shutdown) and responses clients cannot
//! tell from the generated ones. A kind whose strategy decorates objects
//! (`Strategy::has_decorator`) goes through the generated, typed path.
//!
//! A kind with read defaults (`Strategy::has_defaults`: Pods, Secrets) stays on this path, but
//! each object is decoded and defaulted before it is framed, as upstream serves every object
//! defaulted ([`Store::defaulted`]); only an object that defaulting changed is encoded again,
//! the others keep storage's bytes. Decoding is most of the typed path's cost, but an object
//! that needs no default (anything written since the default existed: the common case) is
//! never re-encoded, and kinds without defaults (ConfigMaps, Events) are not decoded at all.
//! Routing these kinds to the typed path instead would decode and re-encode every object for
//! every watcher.

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
    meta::v1::{ListMeta, WatchEventType},
};
use prost::{
    Message,
    encoding::{WireType, encode_key, encode_varint},
};
use tokio_stream::StreamExt;
use tonic::{
    Status,
    body::Body,
    codec::{BufferSettings, Codec, EncodeBuf, Encoder},
    server::NamedService,
};

use crate::{
    error::ApiError,
    metrics::Verb,
    resource::Resource,
    store::Store,
    store::watch::{EncodedEvent, EncodedEventStream},
};

impl<R: Resource> Store<R> {
    /// `bytes`, an object as storage encoded it, with the kind's read defaults applied
    /// (`Strategy::default_object`): storage's own bytes when defaulting changes nothing, else
    /// the defaulted object encoded again. Kinds without defaults get `bytes` undecoded.
    pub(crate) fn defaulted(&self, bytes: Bytes) -> Result<Bytes, ApiError> {
        if !self.strategy.has_defaults() {
            return Ok(bytes);
        }
        let mut obj = self.decode_stored(&bytes)?;
        Ok(if self.strategy.default_object(&mut obj) {
            Bytes::from(obj.encode_to_vec())
        } else {
            bytes
        })
    }
}

/// A list page ready to be sent: its metadata and the encoded objects.
pub struct EncodedList {
    meta: ListMeta,
    items: Vec<Bytes>,
}

impl EncodedList {
    /// A page of `items`, each already encoded as the list message's item type.
    pub(crate) fn new(meta: ListMeta, items: Vec<Bytes>) -> Self {
        Self { meta, items }
    }
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

/// Writes an [`EncodedEvent`] as the kind's watch event message.
#[derive(Debug, Default)]
pub struct EncodedEventEncoder;

impl Encoder for EncodedEventEncoder {
    type Item = EncodedEvent;
    type Error = Status;

    fn encode(
        &mut self,
        (kind, object): EncodedEvent,
        buf: &mut EncodeBuf<'_>,
    ) -> Result<(), Status> {
        // Field 1: the type (an enum: varint); field 2: the object, as `Pod object = 2`.
        encode_key(1, WireType::Varint, buf);
        encode_varint(kind as i32 as u64, buf);
        encode_key(2, WireType::LengthDelimited, buf);
        encode_varint(object.len() as u64, buf);
        buf.put_slice(&object);
        Ok(())
    }

    fn buffer_settings(&self) -> BufferSettings {
        BufferSettings::default()
    }
}

/// Decodes the kind's request `Q` like the generated code, encodes with `E`.
pub struct EncodedCodec<Q, E>(PhantomData<(Q, E)>);

impl<Q, E> Default for EncodedCodec<Q, E> {
    fn default() -> Self {
        Self(PhantomData)
    }
}

impl<Q, E> Codec for EncodedCodec<Q, E>
where
    Q: Message + Default + Send + 'static,
    E: Encoder<Error = Status> + Default + Send + 'static,
    E::Item: Send + 'static,
{
    type Encode = E::Item;
    type Decode = Q;
    type Encoder = E;
    type Decoder = CheckedDecoder<Q, RegistryDomain>;

    fn encoder(&mut self) -> Self::Encoder {
        E::default()
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
            let (md, ext, r) = request.into_parts();
            let mut ctx = crate::grpc::service::ctx(&md, &ext)?;
            let (namespace, options) = R::list_parts(r);
            let name = crate::authz::selected_name(options.as_ref());
            store.authorize(&mut ctx, Verb::List, &namespace, &name)?;
            let list = async {
                let (meta, items) = store.list_encoded(ctx.clone(), &namespace, options).await?;
                let items = items
                    .into_iter()
                    .map(|bytes| store.defaulted(bytes))
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(EncodedList { meta, items })
            };
            let list = store
                .request(&ctx, Verb::List, &namespace, false, list)
                .await?;
            Ok(tonic::Response::new(list))
        })
    }
}

/// The Watch call itself.
struct WatchCall<R: Resource> {
    store: Store<R>,
    stop: tokio::sync::watch::Receiver<bool>,
}

impl<R: Resource> tower::Service<tonic::Request<R::WatchRequest>> for WatchCall<R> {
    type Response = tonic::Response<EncodedEventStream>;
    type Error = Status;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Status>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Status>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: tonic::Request<R::WatchRequest>) -> Self::Future {
        let store = self.store.clone();
        let stop = self.stop.clone();
        Box::pin(async move {
            let (md, ext, r) = request.into_parts();
            let mut ctx = crate::grpc::service::ctx(&md, &ext)?;
            let (namespace, options) = R::watch_parts(r);
            let name = crate::authz::selected_name(options.as_ref());
            store.authorize(&mut ctx, Verb::Watch, &namespace, &name)?;
            let events = store
                .request(
                    &ctx,
                    Verb::Watch,
                    &namespace,
                    false,
                    store.watch_encoded(&namespace, options, stop),
                )
                .await?;
            let open = store.watch_opened(&namespace);
            let defaults = store.strategy.has_defaults();
            // A bookmark's object is a placeholder, not a stored object: never defaulted.
            let events: EncodedEventStream = Box::pin(events.map(move |item| {
                let _open = &open;
                let (kind, object) = item?;
                if !defaults || kind == WatchEventType::Bookmark {
                    return Ok((kind, object));
                }
                Ok((kind, store.defaulted(object).map_err(Status::from)?))
            }));
            Ok(tonic::Response::new(events))
        })
    }
}

/// A kind's generated server, with its `List` and `Watch` answered by [`ListCall`] and
/// [`WatchCall`]; see the module docs.
pub struct PassThrough<S, R: Resource> {
    inner: S,
    store: Store<R>,
    stop: tokio::sync::watch::Receiver<bool>,
    list_path: String,
    watch_path: String,
}

impl<S: Clone, R: Resource> Clone for PassThrough<S, R> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
            store: self.store.clone(),
            stop: self.stop.clone(),
            list_path: self.list_path.clone(),
            watch_path: self.watch_path.clone(),
        }
    }
}

impl<S: NamedService, R: Resource> PassThrough<S, R> {
    /// Wraps `inner`, the generated server of `store`'s kind; `stop` is raised on shutdown.
    pub fn new(inner: S, store: Store<R>, stop: tokio::sync::watch::Receiver<bool>) -> Self {
        Self {
            inner,
            store,
            stop,
            list_path: format!("/{}/List", S::NAME),
            watch_path: format!("/{}/Watch", S::NAME),
        }
    }
}

impl<S: NamedService, R: Resource> NamedService for PassThrough<S, R> {
    const NAME: &'static str = S::NAME;
}

impl<S, R> tower::Service<http::Request<Body>> for PassThrough<S, R>
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
        let path = req.uri().path();
        let (list, watch) = (path == self.list_path, path == self.watch_path);
        if !(list || watch) || self.store.strategy.has_decorator() {
            let fut = self.inner.call(req);
            return Box::pin(fut);
        }
        let store = self.store.clone();
        let stop = self.stop.clone();
        Box::pin(async move {
            if list {
                let codec = EncodedCodec::<R::ListRequest, EncodedListEncoder>::default();
                let mut grpc = tonic::server::Grpc::new(codec)
                    .max_decoding_message_size(REGISTRY_MAX_MESSAGE_BYTES);
                Ok(grpc.unary(ListCall { store }, req).await)
            } else {
                let codec = EncodedCodec::<R::WatchRequest, EncodedEventEncoder>::default();
                let mut grpc = tonic::server::Grpc::new(codec)
                    .max_decoding_message_size(REGISTRY_MAX_MESSAGE_BYTES);
                Ok(grpc.server_streaming(WatchCall { store, stop }, req).await)
            }
        })
    }
}
