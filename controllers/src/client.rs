//! One client for the metadata of every kind registry-svc serves (upstream's metadata client
//! with its REST mapper): built-in kinds through their own services with [`crate::raw`]'s
//! shared request shapes, custom kinds through `apiextensions.v1.CustomObjects`, both seen as
//! [`ObjectMeta`]. What a controller needs: list and watch (the [`crate::informer`]'s source),
//! a live Get, a Delete with preconditions and a propagation policy, and an update of the
//! metadata with optimistic concurrency.

use std::{pin::Pin, sync::Arc, time::Duration};

use bytes::Bytes;
use kubestore_proto::{
    apiextensions::v1::{
        DeleteCustomObjectRequest, GetCustomObjectRequest, ListCustomObjectsRequest,
        UpdateCustomObjectRequest, WatchCustomObjectsRequest,
        custom_objects_client::CustomObjectsClient,
    },
    meta::v1::{DeleteOptions, ListMeta, ListOptions, ObjectMeta, WatchEventType},
};
use prost::Message;
use tokio_stream::{Stream, StreamExt};
use tonic::{Code, Request, Status, codegen::http::uri::PathAndQuery};

use crate::{
    Ch,
    raw::{
        self, DeleteRequest, ListRequest, MetaDeleted, MetaEvent, MetaList, NameRequest, RawCodec,
        UpdateRequest,
    },
};

/// Longest wait for one unary call (sent as `grpc-timeout`).
pub const CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// Largest response read (a page of 500 objects of up to 1.5 MiB each).
pub const MAX_RESPONSE_BYTES: usize = 1 << 30;

/// How a kind is reached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Api {
    /// A built-in kind: its gRPC service, e.g. `core.v1.ConfigMaps`.
    Builtin(&'static str),
    /// A custom kind: group, version and plural for `CustomObjects`.
    Custom {
        /// API group.
        group: String,
        /// The version used to read and write it.
        version: String,
        /// Plural.
        plural: String,
    },
}

/// A kind registry-svc serves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kind {
    /// `v1`, `coordination.k8s.io/v1`, `stable.example.com/v1`.
    pub api_version: String,
    /// `ConfigMap`, `CronTab`.
    pub kind: String,
    /// Plural, e.g. `configmaps`.
    pub resource: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// How to reach it.
    pub api: Api,
}

impl Kind {
    /// `apiVersion`'s group ("" for the core group).
    pub fn group(&self) -> &str {
        group_of(&self.api_version)
    }

    /// `resource.group` (`configmaps` for the core group), as metrics and logs name it.
    pub fn qualified(&self) -> String {
        match self.group() {
            "" => self.resource.clone(),
            g => format!("{}.{g}", self.resource),
        }
    }
}

/// The group of an `apiVersion` ("" for `v1`).
pub fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(g, _)| g)
}

/// The built-in kinds (upstream's core and coordination groups as registry-svc serves them).
pub fn builtin_kinds() -> Vec<Kind> {
    let kind = |api_version: &str, kind: &str, resource: &str, service: &'static str| Kind {
        api_version: api_version.into(),
        kind: kind.into(),
        resource: resource.into(),
        namespaced: true,
        api: Api::Builtin(service),
    };
    vec![
        kind("v1", "Pod", "pods", "core.v1.Pods"),
        kind("v1", "ConfigMap", "configmaps", "core.v1.ConfigMaps"),
        kind("v1", "Secret", "secrets", "core.v1.Secrets"),
        kind("v1", "Event", "events", "core.v1.Events"),
        kind(
            "coordination.k8s.io/v1",
            "Lease",
            "leases",
            "coordination.v1.Leases",
        ),
    ]
}

/// One page of a list.
pub struct Page {
    /// The items' metadata.
    pub items: Vec<ObjectMeta>,
    /// Revision and continue token.
    pub metadata: ListMeta,
}

/// A watch's events, metadata only.
pub type MetaStream =
    Pin<Box<dyn Stream<Item = Result<(WatchEventType, ObjectMeta), Status>> + Send>>;

/// An object as read: its metadata, and what an update must send back.
#[derive(Clone, Debug)]
pub struct Live {
    /// The metadata.
    pub meta: ObjectMeta,
    body: Body,
}

#[derive(Clone, Debug)]
enum Body {
    Raw(Bytes),
    Json(serde_json::Value),
}

/// The metadata client of one kind.
#[derive(Clone)]
pub struct KindClient {
    ch: Ch,
    /// The kind.
    pub kind: Arc<Kind>,
    /// Taken before each request (none by default).
    limiter: crate::ratelimit::RateLimiter,
}

fn request<T>(message: T) -> Request<T> {
    let mut r = Request::new(message);
    r.set_timeout(CALL_TIMEOUT);
    r
}

fn path(service: &str, method: &str) -> Result<PathAndQuery, Status> {
    PathAndQuery::try_from(format!("/{service}/{method}"))
        .map_err(|e| Status::internal(format!("bad method path: {e}")))
}

/// Numbers travel as doubles in a Struct: whole ones are integers again (`generation`).
fn whole_numbers(v: serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() < 9.0e15 => Value::from(f as i64),
            _ => Value::Number(n),
        },
        Value::Array(a) => Value::Array(a.into_iter().map(whole_numbers).collect()),
        Value::Object(m) => {
            Value::Object(m.into_iter().map(|(k, v)| (k, whole_numbers(v))).collect())
        }
        other => other,
    }
}

fn json_meta(object: &serde_json::Value) -> Result<ObjectMeta, Status> {
    serde_json::from_value(whole_numbers(
        object.get("metadata").cloned().unwrap_or_default(),
    ))
    .map_err(|e| Status::internal(format!("a custom object's metadata does not parse: {e}")))
}

fn to_json(s: Option<pbjson_types::Struct>) -> Result<serde_json::Value, Status> {
    serde_json::to_value(s.unwrap_or_default())
        .map_err(|e| Status::internal(format!("a custom object is not JSON: {e}")))
}

impl KindClient {
    /// The client of `kind` over `ch`.
    pub fn new(ch: Ch, kind: Arc<Kind>) -> Self {
        Self {
            ch,
            kind,
            limiter: crate::ratelimit::RateLimiter::default(),
        }
    }

    /// This client, taking a token of `limiter` before each request.
    pub fn limited(mut self, limiter: crate::ratelimit::RateLimiter) -> Self {
        self.limiter = limiter;
        self
    }

    fn raw(&self) -> tonic::client::Grpc<Ch> {
        tonic::client::Grpc::new(self.ch.clone()).max_decoding_message_size(MAX_RESPONSE_BYTES)
    }

    fn custom(&self) -> CustomObjectsClient<Ch> {
        CustomObjectsClient::new(self.ch.clone()).max_decoding_message_size(MAX_RESPONSE_BYTES)
    }

    async fn unary(&self, service: &str, method: &str, body: Bytes) -> Result<Bytes, Status> {
        let mut grpc = self.raw();
        grpc.ready()
            .await
            .map_err(|e| Status::unavailable(format!("registry-svc: {e}")))?;
        Ok(grpc
            .unary(request(body), path(service, method)?, RawCodec)
            .await?
            .into_inner())
    }

    /// One page of the kind's objects in `namespace` ("" = all).
    pub async fn list(&self, namespace: &str, options: ListOptions) -> Result<Page, Status> {
        self.limiter.wait().await;
        match &self.kind.api {
            Api::Builtin(service) => {
                let body = ListRequest {
                    namespace: namespace.into(),
                    options: Some(options),
                }
                .encode_to_vec();
                let bytes = self.unary(service, "List", body.into()).await?;
                let list = MetaList::decode(bytes)
                    .map_err(|e| Status::internal(format!("a list does not decode: {e}")))?;
                Ok(Page {
                    items: list
                        .items
                        .into_iter()
                        .map(|i| i.metadata.unwrap_or_default())
                        .collect(),
                    metadata: list.metadata.unwrap_or_default(),
                })
            }
            Api::Custom {
                group,
                version,
                plural,
            } => {
                let list = self
                    .custom()
                    .list(request(ListCustomObjectsRequest {
                        group: group.clone(),
                        version: version.clone(),
                        plural: plural.clone(),
                        namespace: namespace.into(),
                        options: Some(options),
                    }))
                    .await?
                    .into_inner();
                let items = list
                    .items
                    .into_iter()
                    .map(|i| json_meta(&to_json(Some(i))?))
                    .collect::<Result<_, _>>()?;
                Ok(Page {
                    items,
                    metadata: list.metadata.unwrap_or_default(),
                })
            }
        }
    }

    /// The kind's changes in every namespace, from `options.resource_version`.
    pub async fn watch(&self, options: ListOptions) -> Result<MetaStream, Status> {
        self.limiter.wait().await;
        match &self.kind.api {
            Api::Builtin(service) => {
                let body = ListRequest {
                    namespace: String::new(),
                    options: Some(options),
                }
                .encode_to_vec();
                let mut grpc = self.raw();
                grpc.ready()
                    .await
                    .map_err(|e| Status::unavailable(format!("registry-svc: {e}")))?;
                let stream = grpc
                    .server_streaming(
                        Request::new(Bytes::from(body)),
                        path(service, "Watch")?,
                        RawCodec,
                    )
                    .await?
                    .into_inner();
                Ok(Box::pin(stream.map(|b| {
                    let e = MetaEvent::decode(b?).map_err(|e| {
                        Status::internal(format!("a watch event does not decode: {e}"))
                    })?;
                    Ok((
                        WatchEventType::try_from(e.r#type).unwrap_or(WatchEventType::Unspecified),
                        e.object.and_then(|o| o.metadata).unwrap_or_default(),
                    ))
                })))
            }
            Api::Custom {
                group,
                version,
                plural,
            } => {
                let stream = self
                    .custom()
                    .watch(Request::new(WatchCustomObjectsRequest {
                        group: group.clone(),
                        version: version.clone(),
                        plural: plural.clone(),
                        namespace: String::new(),
                        options: Some(options),
                    }))
                    .await?
                    .into_inner();
                Ok(Box::pin(stream.map(|e| {
                    let e = e?;
                    Ok((
                        WatchEventType::try_from(e.r#type).unwrap_or(WatchEventType::Unspecified),
                        json_meta(&to_json(e.object)?)?,
                    ))
                })))
            }
        }
    }

    /// A live read of `namespace/name` (None: not found).
    pub async fn get(&self, namespace: &str, name: &str) -> Result<Option<Live>, Status> {
        self.limiter.wait().await;
        let ns = if self.kind.namespaced { namespace } else { "" };
        let got = match &self.kind.api {
            Api::Builtin(service) => {
                let body = NameRequest {
                    namespace: ns.into(),
                    name: name.into(),
                }
                .encode_to_vec();
                self.unary(service, "Get", body.into()).await.and_then(|b| {
                    Ok(Live {
                        meta: raw::metadata_of(&b)?,
                        body: Body::Raw(b),
                    })
                })
            }
            Api::Custom {
                group,
                version,
                plural,
            } => self
                .custom()
                .get(request(GetCustomObjectRequest {
                    group: group.clone(),
                    version: version.clone(),
                    plural: plural.clone(),
                    namespace: ns.into(),
                    name: name.into(),
                }))
                .await
                .and_then(|r| {
                    let json = to_json(Some(r.into_inner()))?;
                    Ok(Live {
                        meta: json_meta(&json)?,
                        body: Body::Json(json),
                    })
                }),
        };
        match got {
            Ok(live) => Ok(Some(live)),
            Err(s) if s.code() == Code::NotFound => Ok(None),
            Err(s) => Err(s),
        }
    }

    /// Deletes `namespace/name` with `options`; Ok(false) when it was not there.
    pub async fn delete(
        &self,
        namespace: &str,
        name: &str,
        options: DeleteOptions,
    ) -> Result<bool, Status> {
        self.limiter.wait().await;
        let ns = if self.kind.namespaced { namespace } else { "" };
        let r = match &self.kind.api {
            Api::Builtin(service) => {
                let body = DeleteRequest {
                    namespace: ns.into(),
                    name: name.into(),
                    options: Some(options),
                }
                .encode_to_vec();
                self.unary(service, "Delete", body.into())
                    .await
                    .and_then(|b| {
                        MetaDeleted::decode(b)
                            .map(|_| ())
                            .map_err(|e| Status::internal(format!("{e}")))
                    })
            }
            Api::Custom {
                group,
                version,
                plural,
            } => self
                .custom()
                .delete(request(DeleteCustomObjectRequest {
                    group: group.clone(),
                    version: version.clone(),
                    plural: plural.clone(),
                    namespace: ns.into(),
                    name: name.into(),
                    options: Some(options),
                }))
                .await
                .map(|_| ()),
        };
        match r {
            Ok(()) => Ok(true),
            Err(s) if s.code() == Code::NotFound => Ok(false),
            Err(s) => Err(s),
        }
    }

    /// Writes `live` back with `meta` as its metadata; the resourceVersion `live` was read at
    /// goes with it, so a change made meanwhile is a Conflict (ABORTED), never overwritten.
    pub async fn update_meta(&self, live: &Live, meta: &ObjectMeta) -> Result<(), Status> {
        self.limiter.wait().await;
        let ns = if self.kind.namespaced {
            meta.namespace.clone()
        } else {
            String::new()
        };
        match (&self.kind.api, &live.body) {
            (Api::Builtin(service), Body::Raw(bytes)) => {
                let object = raw::with_metadata(bytes, meta).ok_or_else(|| {
                    Status::internal("an object registry-svc sent is not a message")
                })?;
                let body = UpdateRequest {
                    namespace: ns,
                    object,
                }
                .encode_to_vec();
                self.unary(service, "Update", body.into()).await.map(|_| ())
            }
            (
                Api::Custom {
                    group,
                    version,
                    plural,
                },
                Body::Json(json),
            ) => {
                let mut json = json.clone();
                let meta_json = serde_json::to_value(meta)
                    .map_err(|e| Status::internal(format!("metadata as JSON: {e}")))?;
                if let Some(o) = json.as_object_mut() {
                    o.insert("metadata".into(), meta_json);
                }
                let object: pbjson_types::Struct = serde_json::from_value(json)
                    .map_err(|e| Status::internal(format!("object as a Struct: {e}")))?;
                self.custom()
                    .update(request(UpdateCustomObjectRequest {
                        group: group.clone(),
                        version: version.clone(),
                        plural: plural.clone(),
                        namespace: ns,
                        object: Some(object),
                        dry_run: false,
                    }))
                    .await
                    .map(|_| ())
            }
            _ => Err(Status::internal(
                "an object read through another kind's API",
            )),
        }
    }
}
