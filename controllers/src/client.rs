//! One client for the metadata of every kind registry-svc serves (upstream's metadata client
//! with its discovery-driven REST mapper), over the generic API `registry.v1.Resources`:
//! objects are asked for as `PartialObjectMetadata` and read as [`ObjectMeta`]. What a
//! controller needs: discovery ([`discover`]), list and watch (the [`crate::informer`]'s
//! source), a live Get, a Delete with preconditions and a propagation policy, and a merge patch
//! of the metadata under the resourceVersion it was read at, as upstream's garbage collector
//! patches.

use std::{pin::Pin, sync::Arc, time::Duration};

use kubestore_proto::{
    meta::v1::{DeleteOptions, ListMeta, ListOptions, ObjectMeta, WatchEventType},
    registry::v1::{
        DeleteRequest, DiscoverRequest, GetRequest, ListRequest, Output, PatchRequest, PatchType,
        ResourceRef, WatchRequest, resources_client::ResourcesClient,
    },
};
use serde_json::{Value, json};
use tokio_stream::{Stream, StreamExt};
use tonic::{Code, Request, Status};

use crate::Ch;

/// Longest wait for one unary call (sent as `grpc-timeout`).
pub const CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// Largest response read (a page of 500 objects of up to 1.5 MiB each).
pub const MAX_RESPONSE_BYTES: usize = 1 << 30;

/// A kind registry-svc serves, at one version.
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
    /// The verbs it serves (discovery's).
    pub verbs: Vec<String>,
}

impl Kind {
    /// `apiVersion`'s group ("" for the core group).
    pub fn group(&self) -> &str {
        group_of(&self.api_version)
    }

    /// The version.
    pub fn version(&self) -> &str {
        self.api_version
            .rsplit_once('/')
            .map_or(self.api_version.as_str(), |(_, v)| v)
    }

    /// `resource.group` (`configmaps` for the core group), as metrics and logs name it.
    pub fn qualified(&self) -> String {
        match self.group() {
            "" => self.resource.clone(),
            g => format!("{}.{g}", self.resource),
        }
    }

    /// Whether discovery lists `verb` for it.
    pub fn can(&self, verb: &str) -> bool {
        self.verbs.iter().any(|v| v == verb)
    }

    fn reference(&self) -> ResourceRef {
        ResourceRef {
            group: self.group().to_string(),
            version: self.version().to_string(),
            resource: self.resource.clone(),
        }
    }
}

/// The group of an `apiVersion` ("" for `v1`).
pub fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(g, _)| g)
}

fn request<T>(message: T) -> Request<T> {
    let mut r = Request::new(message);
    r.set_timeout(CALL_TIMEOUT);
    r
}

fn client(ch: &Ch) -> ResourcesClient<Ch> {
    ResourcesClient::new(ch.clone()).max_decoding_message_size(MAX_RESPONSE_BYTES)
}

/// Every kind registry-svc serves now, one version each (the storage version where the kind
/// has several), as discovery lists them: built-in kinds and established custom kinds alike.
pub async fn discover(ch: &Ch) -> Result<Vec<Kind>, Status> {
    let resources = client(ch)
        .discover(request(DiscoverRequest {}))
        .await?
        .into_inner()
        .resources;
    let mut kinds: Vec<Kind> = Vec::new();
    for r in &resources {
        let api_version = if r.group.is_empty() {
            r.version.clone()
        } else {
            format!("{}/{}", r.group, r.version)
        };
        let kind = Kind {
            api_version,
            kind: r.kind.clone(),
            resource: r.resource.clone(),
            namespaced: r.namespaced,
            verbs: r.verbs.clone(),
        };
        match kinds.iter_mut().find(|k| k.qualified() == kind.qualified()) {
            Some(k) if r.storage_version => *k = kind,
            Some(_) => {}
            None => kinds.push(kind),
        }
    }
    Ok(kinds)
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

/// An object as read: its metadata (what a patch of it is conditional on).
#[derive(Clone, Debug)]
pub struct Live {
    /// The metadata.
    pub meta: ObjectMeta,
}

/// The metadata of a `PartialObjectMetadata` (or any object) in Kubernetes JSON.
pub fn metadata_of(json: &str) -> Result<ObjectMeta, Status> {
    let object: Value = serde_json::from_str(json)
        .map_err(|e| Status::internal(format!("an object registry-svc sent is not JSON: {e}")))?;
    let mut metadata = object.get("metadata").cloned().unwrap_or_else(|| json!({}));
    if let Value::Object(m) = &mut metadata {
        kubestore_proto::managed_fields::fields_v1_as_text(m);
    }
    serde_json::from_value(metadata)
        .map_err(|e| Status::internal(format!("an object's metadata does not parse: {e}")))
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

    fn namespace<'a>(&self, namespace: &'a str) -> &'a str {
        if self.kind.namespaced { namespace } else { "" }
    }

    /// One page of the kind's objects in `namespace` ("" = all).
    pub async fn list(&self, namespace: &str, options: ListOptions) -> Result<Page, Status> {
        self.limiter.wait().await;
        let list = client(&self.ch)
            .list(request(ListRequest {
                resource: Some(self.kind.reference()),
                namespace: self.namespace(namespace).into(),
                options: Some(options),
                output: Output::Metadata as i32,
            }))
            .await?
            .into_inner();
        Ok(Page {
            items: list
                .items
                .iter()
                .map(|i| metadata_of(i))
                .collect::<Result<_, _>>()?,
            metadata: list.metadata.unwrap_or_default(),
        })
    }

    /// The kind's changes in every namespace, from `options.resource_version`.
    pub async fn watch(&self, options: ListOptions) -> Result<MetaStream, Status> {
        self.limiter.wait().await;
        let stream = client(&self.ch)
            .watch(Request::new(WatchRequest {
                resource: Some(self.kind.reference()),
                namespace: String::new(),
                options: Some(options),
                output: Output::Metadata as i32,
            }))
            .await?
            .into_inner();
        Ok(Box::pin(stream.map(|e| {
            let e = e?;
            Ok((
                WatchEventType::try_from(e.r#type).unwrap_or(WatchEventType::Unspecified),
                metadata_of(&e.json)?,
            ))
        })))
    }

    /// A live read of `namespace/name` (None: not found).
    pub async fn get(&self, namespace: &str, name: &str) -> Result<Option<Live>, Status> {
        self.limiter.wait().await;
        let got = client(&self.ch)
            .get(request(GetRequest {
                resource: Some(self.kind.reference()),
                namespace: self.namespace(namespace).into(),
                name: name.into(),
                subresource: String::new(),
                output: Output::Metadata as i32,
            }))
            .await;
        match got {
            Ok(r) => Ok(Some(Live {
                meta: metadata_of(&r.into_inner().json)?,
            })),
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
        let r = client(&self.ch)
            .delete(request(DeleteRequest {
                resource: Some(self.kind.reference()),
                namespace: self.namespace(namespace).into(),
                name: name.into(),
                options: Some(options),
            }))
            .await;
        match r {
            Ok(_) => Ok(true),
            Err(s) if s.code() == Code::NotFound => Ok(false),
            Err(s) => Err(s),
        }
    }

    /// Gives `live` the owner references and finalizers of `meta`, by a JSON merge patch
    /// carrying the resourceVersion `live` was read at: a change made meanwhile is a Conflict
    /// (ABORTED), never overwritten (upstream's collector patches the same way).
    pub async fn update_meta(&self, live: &Live, meta: &ObjectMeta) -> Result<(), Status> {
        self.limiter.wait().await;
        let owner_references = serde_json::to_value(&meta.owner_references)
            .map_err(|e| Status::internal(format!("owner references as JSON: {e}")))?;
        let patch = json!({
            "metadata": {
                "resourceVersion": live.meta.resource_version,
                "ownerReferences": owner_references,
                "finalizers": meta.finalizers,
            }
        });
        client(&self.ch)
            .patch(request(PatchRequest {
                resource: Some(self.kind.reference()),
                namespace: self.namespace(&live.meta.namespace).into(),
                name: live.meta.name.clone(),
                subresource: String::new(),
                patch_type: PatchType::Merge as i32,
                patch: patch.to_string(),
                options: None,
            }))
            .await
            .map(|_| ())
    }
}
