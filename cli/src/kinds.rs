//! What the CLI needs per kind: its names, its RPCs and its table. One trait, implemented for
//! Pod, ConfigMap, Event and Secret; commands are written once, generically.

use std::pin::Pin;

use kubestore_proto::{
    core::v1::{
        ConfigMap, CreateConfigMapRequest, CreateEventRequest, CreatePodRequest,
        DeleteConfigMapRequest, DeleteEventRequest, DeletePodRequest, Event, GetConfigMapRequest,
        GetEventRequest, GetPodRequest, ListConfigMapsRequest, ListEventsRequest, ListPodsRequest,
        Pod, UpdateConfigMapRequest, UpdateEventRequest, UpdatePodRequest, WatchConfigMapsRequest,
        WatchEventsRequest, WatchPodsRequest, config_maps_client::ConfigMapsClient,
        events_client::EventsClient, pods_client::PodsClient,
    },
    core::v1::{
        CreateSecretRequest, DeleteSecretRequest, GetSecretRequest, ListSecretsRequest, Secret,
        UpdateSecretRequest, WatchSecretsRequest, secrets_client::SecretsClient,
    },
    meta::v1::{DeleteOptions, ListMeta, ListOptions, ObjectMeta, WatchEventType},
};
use tokio_stream::{Stream, StreamExt};
use tonic::Status;

use crate::{Ch, MAX_RESPONSE_BYTES, table::age};

/// A stream of typed watch events.
pub type Events<K> = Pin<Box<dyn Stream<Item = Result<(WatchEventType, K), Status>> + Send>>;

/// A kind as the CLI sees it.
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
    /// Table columns after NAME.
    fn columns(wide: bool) -> &'static [&'static str];
    /// This object's cells after its name.
    fn cells(&self, wide: bool, now: i64) -> Vec<String>;
}

// Every client accepts responses up to MAX_RESPONSE_BYTES (a page of 500 large objects), not
// tonic's 4 MiB default.
macro_rules! kind {
    (
        $ty:ty, $kind:literal, $plural:literal, $client:ident, $field:ident,
        $create:ident, $get:ident, $update:ident, $delete:ident, $list:ident, $watch:ident
    ) => {
        impl Kind for $ty {
            const KIND: &'static str = $kind;
            const PLURAL: &'static str = $plural;
            fn meta(&self) -> ObjectMeta {
                self.metadata.clone().unwrap_or_default()
            }
            fn meta_mut(&mut self) -> &mut ObjectMeta {
                self.metadata.get_or_insert_with(Default::default)
            }
            async fn list(
                ch: &Ch,
                ns: &str,
                o: ListOptions,
            ) -> Result<(ListMeta, Vec<Self>), Status> {
                let r = $client::new(ch.clone())
                    .max_decoding_message_size(MAX_RESPONSE_BYTES)
                    .list($list {
                        namespace: ns.into(),
                        options: Some(o),
                    })
                    .await?
                    .into_inner();
                Ok((r.metadata.unwrap_or_default(), r.items))
            }
            async fn watch(ch: &Ch, ns: &str, o: ListOptions) -> Result<Events<Self>, Status> {
                let s = $client::new(ch.clone())
                    .max_decoding_message_size(MAX_RESPONSE_BYTES)
                    .watch($watch {
                        namespace: ns.into(),
                        options: Some(o),
                    })
                    .await?
                    .into_inner();
                Ok(Box::pin(s.map(|e| {
                    e.map(|e| {
                        (
                            WatchEventType::try_from(e.r#type)
                                .unwrap_or(WatchEventType::Unspecified),
                            e.object.unwrap_or_default(),
                        )
                    })
                })))
            }
            async fn create(ch: &Ch, ns: &str, obj: Self, dry_run: bool) -> Result<Self, Status> {
                Ok($client::new(ch.clone())
                    .max_decoding_message_size(MAX_RESPONSE_BYTES)
                    .create($create {
                        namespace: ns.into(),
                        $field: Some(obj),
                        dry_run,
                    })
                    .await?
                    .into_inner())
            }
            async fn get(ch: &Ch, ns: &str, name: &str) -> Result<Self, Status> {
                Ok($client::new(ch.clone())
                    .max_decoding_message_size(MAX_RESPONSE_BYTES)
                    .get($get {
                        namespace: ns.into(),
                        name: name.into(),
                    })
                    .await?
                    .into_inner())
            }
            async fn update(ch: &Ch, ns: &str, obj: Self, dry_run: bool) -> Result<Self, Status> {
                Ok($client::new(ch.clone())
                    .max_decoding_message_size(MAX_RESPONSE_BYTES)
                    .update($update {
                        namespace: ns.into(),
                        $field: Some(obj),
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
                let r = $client::new(ch.clone())
                    .max_decoding_message_size(MAX_RESPONSE_BYTES)
                    .delete($delete {
                        namespace: ns.into(),
                        name: name.into(),
                        options: o,
                    })
                    .await?
                    .into_inner();
                Ok((r.$field.unwrap_or_default(), r.deleted))
            }
            fn columns(wide: bool) -> &'static [&'static str] {
                columns_of::<$ty>(wide)
            }
            fn cells(&self, wide: bool, now: i64) -> Vec<String> {
                cells_of(self, wide, now)
            }
        }
    };
}

kind!(
    Pod,
    "Pod",
    "pods",
    PodsClient,
    pod,
    CreatePodRequest,
    GetPodRequest,
    UpdatePodRequest,
    DeletePodRequest,
    ListPodsRequest,
    WatchPodsRequest
);
kind!(
    ConfigMap,
    "ConfigMap",
    "configmaps",
    ConfigMapsClient,
    config_map,
    CreateConfigMapRequest,
    GetConfigMapRequest,
    UpdateConfigMapRequest,
    DeleteConfigMapRequest,
    ListConfigMapsRequest,
    WatchConfigMapsRequest
);
kind!(
    Event,
    "Event",
    "events",
    EventsClient,
    event,
    CreateEventRequest,
    GetEventRequest,
    UpdateEventRequest,
    DeleteEventRequest,
    ListEventsRequest,
    WatchEventsRequest
);
kind!(
    Secret,
    "Secret",
    "secrets",
    SecretsClient,
    secret,
    CreateSecretRequest,
    GetSecretRequest,
    UpdateSecretRequest,
    DeleteSecretRequest,
    ListSecretsRequest,
    WatchSecretsRequest
);

/// Per-kind table layout.
trait Columns {
    const NARROW: &'static [&'static str];
    const WIDE: &'static [&'static str];
    fn cells(&self, wide: bool, now: i64) -> Vec<String>;
}

fn columns_of<T: Columns>(wide: bool) -> &'static [&'static str] {
    if wide { T::WIDE } else { T::NARROW }
}

fn cells_of<T: Columns>(t: &T, wide: bool, now: i64) -> Vec<String> {
    t.cells(wide, now)
}

fn created(m: &Option<ObjectMeta>) -> Option<i64> {
    m.as_ref()
        .and_then(|m| m.creation_timestamp.as_ref())
        .map(|t| t.seconds)
}

/// A pod's STATUS column: `Terminating` once a deletion is requested (as kubectl shows it),
/// else its phase.
pub fn pod_status(p: &Pod) -> String {
    if p.metadata
        .as_ref()
        .is_some_and(|m| m.deletion_timestamp.is_some())
    {
        return "Terminating".into();
    }
    p.status
        .as_ref()
        .map(|s| s.phase.clone())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "Unknown".into())
}

impl Columns for Pod {
    const NARROW: &'static [&'static str] = &["STATUS", "NODE", "AGE"];
    const WIDE: &'static [&'static str] = &["STATUS", "NODE", "AGE", "QOS", "IMAGES"];
    fn cells(&self, wide: bool, now: i64) -> Vec<String> {
        let spec = self.spec.clone().unwrap_or_default();
        let node = if spec.node_name.is_empty() {
            "<none>".to_string()
        } else {
            spec.node_name.clone()
        };
        let mut out = vec![pod_status(self), node, age(created(&self.metadata), now)];
        if wide {
            out.push(self.status.clone().unwrap_or_default().qos_class);
            out.push(
                spec.containers
                    .iter()
                    .map(|c| c.image.as_str())
                    .collect::<Vec<_>>()
                    .join(","),
            );
        }
        out
    }
}

impl Columns for ConfigMap {
    const NARROW: &'static [&'static str] = &["DATA", "AGE"];
    const WIDE: &'static [&'static str] = &["DATA", "AGE", "FINALIZERS"];
    fn cells(&self, wide: bool, now: i64) -> Vec<String> {
        let mut out = vec![
            self.data.len().to_string(),
            age(created(&self.metadata), now),
        ];
        if wide {
            let f = self.metadata.clone().unwrap_or_default().finalizers;
            out.push(if f.is_empty() {
                "<none>".into()
            } else {
                f.join(",")
            });
        }
        out
    }
}

impl Columns for Event {
    const NARROW: &'static [&'static str] = &["AGE", "TYPE", "REASON", "OBJECT", "MESSAGE"];
    const WIDE: &'static [&'static str] = &["AGE", "TYPE", "REASON", "OBJECT", "MESSAGE", "COUNT"];
    fn cells(&self, wide: bool, now: i64) -> Vec<String> {
        let o = self.involved_object.clone().unwrap_or_default();
        let mut out = vec![
            age(created(&self.metadata), now),
            self.r#type.clone(),
            self.reason.clone(),
            format!("{}/{}", o.kind.to_lowercase(), o.name),
            self.message.clone(),
        ];
        if wide {
            out.push(self.count.to_string());
        }
        out
    }
}

/// As `kubectl get secrets`: values are never shown, only how many.
impl Columns for Secret {
    const NARROW: &'static [&'static str] = &["TYPE", "DATA", "AGE"];
    const WIDE: &'static [&'static str] = &["TYPE", "DATA", "AGE"];
    fn cells(&self, _wide: bool, now: i64) -> Vec<String> {
        vec![
            self.r#type.clone(),
            self.data.len().to_string(),
            age(created(&self.metadata), now),
        ]
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
        let options = ListOptions {
            limit: page.limit,
            // A continue token carries its revision; upstream refuses both together.
            resource_version: if page.r#continue.is_empty() {
                self.options.resource_version.clone()
            } else {
                String::new()
            },
            r#continue: page.r#continue,
            ..self.options.clone()
        };
        let (meta, items) = K::list(&self.ch, &self.ns, options).await?;
        Ok((items, meta))
    }
    async fn watch(&self, from: ListOptions) -> Result<Events<K>, Status> {
        K::watch(
            &self.ch,
            &self.ns,
            ListOptions {
                resource_version: from.resource_version,
                allow_watch_bookmarks: from.allow_watch_bookmarks,
                limit: 0,
                r#continue: String::new(),
                ..self.options.clone()
            },
        )
        .await
    }
}
