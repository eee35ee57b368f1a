//! The typed Pods API the node agent and the demo use (a stand-in kubelet reads and writes
//! Pods, and only Pods, through `core.v1.Pods`, the fast protobuf path): the [`Kind`] trait
//! with its one implementation, and [`Listing`], the informer's source over it. The verbs use
//! the generic API instead ([`crate::client`]) and know no kind.

use std::pin::Pin;

use kubestore_proto::{
    core::v1::{
        CreatePodRequest, DeletePodRequest, GetPodRequest, ListPodsRequest, Pod, UpdatePodRequest,
        WatchPodsRequest, pods_client::PodsClient,
    },
    meta::v1::{DeleteOptions, ListMeta, ListOptions, ObjectMeta, WatchEventType},
};
use tokio_stream::{Stream, StreamExt};
use tonic::Status;

use crate::{
    Ch, MAX_RESPONSE_BYTES,
    pager::{page_options, watch_options},
};

/// A stream of typed watch events.
pub type Events<K> = Pin<Box<dyn Stream<Item = Result<(WatchEventType, K), Status>> + Send>>;

/// A kind through its typed service.
#[allow(async_fn_in_trait)]
pub trait Kind:
    prost::Message + Default + Clone + serde::Serialize + serde::de::DeserializeOwned + 'static
{
    /// `Pod`.
    const KIND: &'static str;
    /// `pods`.
    const PLURAL: &'static str;
    /// The metadata (empty if absent).
    fn meta(&self) -> ObjectMeta;
    /// The metadata, created if absent.
    fn meta_mut(&mut self) -> &mut ObjectMeta;
    /// List.
    async fn list(ch: &Ch, ns: &str, o: ListOptions) -> Result<(ListMeta, Vec<Self>), Status>;
    /// Watch.
    async fn watch(ch: &Ch, ns: &str, o: ListOptions) -> Result<Events<Self>, Status>;
    /// Create.
    async fn create(ch: &Ch, ns: &str, obj: Self, dry_run: bool) -> Result<Self, Status>;
    /// Get.
    async fn get(ch: &Ch, ns: &str, name: &str) -> Result<Self, Status>;
    /// Update.
    async fn update(ch: &Ch, ns: &str, obj: Self, dry_run: bool) -> Result<Self, Status>;
    /// Delete: the last state, and whether it is gone.
    async fn delete(
        ch: &Ch,
        ns: &str,
        name: &str,
        o: Option<DeleteOptions>,
    ) -> Result<(Self, bool), Status>;
}

// The client accepts responses up to MAX_RESPONSE_BYTES (a page of 500 large pods), not
// tonic's 4 MiB default.
impl Kind for Pod {
    const KIND: &'static str = "Pod";
    const PLURAL: &'static str = "pods";
    fn meta(&self) -> ObjectMeta {
        self.metadata.clone().unwrap_or_default()
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        self.metadata.get_or_insert_with(Default::default)
    }
    async fn list(ch: &Ch, ns: &str, o: ListOptions) -> Result<(ListMeta, Vec<Self>), Status> {
        let r = PodsClient::new(ch.clone())
            .max_decoding_message_size(MAX_RESPONSE_BYTES)
            .list(ListPodsRequest {
                namespace: ns.into(),
                options: Some(o),
            })
            .await?
            .into_inner();
        Ok((r.metadata.unwrap_or_default(), r.items))
    }
    async fn watch(ch: &Ch, ns: &str, o: ListOptions) -> Result<Events<Self>, Status> {
        let s = PodsClient::new(ch.clone())
            .max_decoding_message_size(MAX_RESPONSE_BYTES)
            .watch(WatchPodsRequest {
                namespace: ns.into(),
                options: Some(o),
            })
            .await?
            .into_inner();
        Ok(Box::pin(s.map(|e| {
            e.map(|e| {
                (
                    WatchEventType::try_from(e.r#type).unwrap_or(WatchEventType::Unspecified),
                    e.object.unwrap_or_default(),
                )
            })
        })))
    }
    async fn create(ch: &Ch, ns: &str, obj: Self, dry_run: bool) -> Result<Self, Status> {
        Ok(PodsClient::new(ch.clone())
            .max_decoding_message_size(MAX_RESPONSE_BYTES)
            .create(CreatePodRequest {
                namespace: ns.into(),
                pod: Some(obj),
                dry_run,
            })
            .await?
            .into_inner())
    }
    async fn get(ch: &Ch, ns: &str, name: &str) -> Result<Self, Status> {
        Ok(PodsClient::new(ch.clone())
            .max_decoding_message_size(MAX_RESPONSE_BYTES)
            .get(GetPodRequest {
                namespace: ns.into(),
                name: name.into(),
            })
            .await?
            .into_inner())
    }
    async fn update(ch: &Ch, ns: &str, obj: Self, dry_run: bool) -> Result<Self, Status> {
        Ok(PodsClient::new(ch.clone())
            .max_decoding_message_size(MAX_RESPONSE_BYTES)
            .update(UpdatePodRequest {
                namespace: ns.into(),
                pod: Some(obj),
                dry_run,
            })
            .await?
            .into_inner())
    }
    async fn delete(
        ch: &Ch,
        ns: &str,
        name: &str,
        o: Option<DeleteOptions>,
    ) -> Result<(Self, bool), Status> {
        let r = PodsClient::new(ch.clone())
            .max_decoding_message_size(MAX_RESPONSE_BYTES)
            .delete(DeletePodRequest {
                namespace: ns.into(),
                name: name.into(),
                options: o,
            })
            .await?
            .into_inner();
        Ok((r.pod.unwrap_or_default(), r.deleted))
    }
}

/// What `options` select of a kind in `ns` ("" = all), as the informer's source
/// ([`kubestore_controllers::informer`]): the agent and `get -w` list and watch through it.
pub struct Listing<K> {
    ch: Ch,
    ns: String,
    options: ListOptions,
    _kind: std::marker::PhantomData<fn() -> K>,
}

impl<K> Listing<K> {
    /// The objects `options` (selectors) select in `ns`.
    pub fn new(ch: Ch, ns: &str, options: ListOptions) -> Self {
        Self {
            ch,
            ns: ns.to_string(),
            options,
            _kind: std::marker::PhantomData,
        }
    }
}

impl<K: Kind + Send> kubestore_controllers::informer::Source for Listing<K> {
    type Item = K;
    fn resource_version(item: &K) -> String {
        item.meta().resource_version
    }
    async fn list(&self, page: ListOptions) -> Result<(Vec<K>, ListMeta), Status> {
        let options = page_options(&self.options, page);
        let (meta, items) = K::list(&self.ch, &self.ns, options).await?;
        Ok((items, meta))
    }
    async fn watch(&self, from: ListOptions) -> Result<Events<K>, Status> {
        K::watch(&self.ch, &self.ns, watch_options(&self.options, from)).await
    }
}
