//! The catalog of endpoints: every resource registry-svc serves, built in or custom, as one
//! object-safe [`Endpoint`] (Kubernetes JSON in and out, `meta.v1` options, a [`Ctx`]), found
//! by group, version and plural. What kube-apiserver's resource-agnostic
//! `pkg/endpoints/handlers` sit on (`rest.Storage`, and apiextensions' `crdHandler` for custom
//! kinds): every transport (the generic gRPC API, the REST API) dispatches verbs through here
//! once, never per kind.
//!
//! - [`endpoint`]: the one implementation of [`Endpoint`], a kind's `Store<R>` and its shape
//!   (what turns its objects into Kubernetes JSON and back);
//! - [`builtin`]: built-in kinds' shape, through the descriptor-driven JSON codec, and their
//!   registration;
//! - [`custom`]: a served custom version's shape, through its schema, and the provider of
//!   every served version;
//! - [`create_only`]: what is only ever created and stores nothing: the reviews, and the
//!   `serviceaccounts/token` subresource.
//!
//! Tables (server-side printing) are built with `kubestore_apimachinery::table`, from the
//! kind's strategy (built-in kinds) or printer columns (custom kinds).
//!
//! Built-in kinds are registered once at start-up (`builtin::register`); a custom kind's
//! versions are added and removed as its definition changes (`custom::kinds`). The catalog
//! also carries what discovery needs ([`ResourceInfo`]).

pub mod builtin;
pub mod create_only;
pub mod custom;
pub mod endpoint;
pub mod params;
pub mod schemas;

use std::{
    collections::BTreeMap,
    pin::Pin,
    sync::{Arc, RwLock},
};

/// The Kubernetes JSON codec over the registry's own descriptors (it lives beside `Resource`,
/// whose JSON view uses it).
pub use crate::resource::codec;
use bytes::Bytes;
use kubestore_apimachinery::patch::Patch;
pub use kubestore_apimachinery::table::IncludeObject;
use kubestore_proto::meta::v1::{DeleteOptions, ListMeta, ListOptions, WatchEventType};
use serde_json::Value;
use tokio_stream::Stream;

use crate::{error::ApiError, store::Ctx};

/// What discovery says about a resource (upstream's `APIResource`), and what a transport
/// needs to route to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceInfo {
    /// API group ("" for the core group).
    pub group: String,
    /// Version, `v1`.
    pub version: String,
    /// Plural, `pods`: the URL's resource.
    pub plural: String,
    /// Singular, `pod`.
    pub singular: String,
    /// Kind, `Pod`.
    pub kind: String,
    /// The list's kind, `PodList`.
    pub list_kind: String,
    /// kubectl's short names (`po`).
    pub short_names: Vec<String>,
    /// Categories (`all`).
    pub categories: Vec<String>,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// The verbs clients may use (discovery's; upstream's names: `create`, `delete`,
    /// `deletecollection`, `get`, `list`, `patch`, `update`, `watch`).
    pub verbs: Vec<String>,
    /// Whether the `status` subresource exists.
    pub status: bool,
    /// Whether the `finalize` subresource exists (Namespaces).
    pub finalize: bool,
    /// Whether this version is the one objects are stored in.
    pub storage_version: bool,
    /// The proto message of a built-in kind (`.core.v1.Pod`): strategic merge patches and
    /// Kubernetes protobuf bodies need it; custom kinds have none.
    pub message: Option<String>,
    /// Whether a finished Delete answers the deleted object instead of a `Status` (upstream's
    /// `ReturnDeletedObject`: Pods and Namespaces).
    pub return_deleted_object: bool,
}

impl ResourceInfo {
    /// `v1`, or `group/version`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// `plural` or `plural.group`: how upstream names the resource in messages and metrics.
    pub fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }
}

/// Every verb, as discovery lists them.
pub const ALL_VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

pub use crate::store::update::Part;

/// What `fieldValidation` asks of fields the kind does not have (upstream's
/// `metav1.FieldValidation*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FieldValidation {
    /// Drop them silently.
    Ignore,
    /// Drop them, with a warning per field (upstream's default).
    #[default]
    Warn,
    /// Refuse the request (`strict decoding error: unknown field "spec.x"`).
    Strict,
}

/// Options of a write.
#[derive(Debug, Clone, Default)]
pub struct WriteOptions {
    /// `dryRun=All`: everything but storing.
    pub dry_run: bool,
    /// What to do with unknown fields.
    pub field_validation: FieldValidation,
    /// `fieldManager`: the manager of the write's fields (`managed`); required by an apply.
    pub field_manager: String,
    /// `force`: an apply takes the fields other managers own instead of conflicting.
    pub force: bool,
    /// The size of the request's body, as it came: work on a large one (taking it in, applying
    /// it as a patch) runs off the async workers (`offload`).
    pub body_bytes: usize,
}

/// How objects are answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Output {
    /// The objects themselves.
    #[default]
    Object,
    /// Only each object's metadata, as a `meta.k8s.io/v1` `PartialObjectMetadata` (upstream's
    /// metadata client: what controllers such as the garbage collector watch).
    Metadata,
    /// A `meta.k8s.io/v1` Table (server-side printing).
    Table {
        /// What each row carries.
        include_object: IncludeObject,
        /// Leave the column definitions out (watch events after the first).
        no_headers: bool,
    },
}

/// An object, or a Table, in Kubernetes JSON (text).
pub type Json = Bytes;

/// A written object, and what the write has to say.
#[derive(Debug, Clone)]
pub struct Written {
    /// The object as stored (or as it would be, in a dry run).
    pub object: Json,
    /// `Warning` headers: unknown fields under `fieldValidation=Warn`, and the like.
    pub warnings: Vec<String>,
    /// Whether the write created the object (201 upstream).
    pub created: bool,
}

/// What a Delete did.
#[derive(Debug, Clone)]
pub struct Deleted {
    /// The object's last state (marked, while its deletion is pending).
    pub object: Json,
    /// Whether it is gone (false while a grace period or finalizers hold it).
    pub deleted: bool,
    /// Its UID (the Status of a finished delete names it).
    pub uid: String,
}

/// One page of a List.
#[derive(Debug, Clone)]
pub enum Page {
    /// The objects, each in Kubernetes JSON: the transport writes the list around them
    /// (`{"kind":"PodList",...,"items":[...]}`), streaming, one encoded copy at a time.
    Objects {
        /// The list's metadata.
        meta: ListMeta,
        /// The items.
        items: Vec<Json>,
    },
    /// A Table: its column definitions (a JSON array) and rows (JSON objects).
    Table {
        /// The list's metadata.
        meta: ListMeta,
        /// `columnDefinitions`, a JSON array.
        columns: Json,
        /// Each row, `{"cells":[...],"object":...}`.
        rows: Vec<Json>,
    },
}

/// Items of a list, produced as they are read: encoded one by one, fetched from storage in
/// chunks (`StoreEndpoint::list_streamed`).
pub type ItemStream = Pin<Box<dyn Stream<Item = Result<Json, ApiError>> + Send>>;

/// A list as it streams to a client: its metadata first, its items as the client reads.
pub struct Streamed {
    /// The list's metadata.
    pub meta: ListMeta,
    /// A Table's `columnDefinitions` (a JSON array); None for objects.
    pub columns: Option<Json>,
    /// The items (a Table's rows).
    pub items: ItemStream,
}

impl From<Page> for Streamed {
    fn from(page: Page) -> Self {
        let (meta, columns, items) = match page {
            Page::Objects { meta, items } => (meta, None, items),
            Page::Table {
                meta,
                columns,
                rows,
            } => (meta, Some(columns), rows),
        };
        Self {
            meta,
            columns,
            items: Box::pin(tokio_stream::iter(items.into_iter().map(Ok))),
        }
    }
}

/// An endpoint as the transports hold it.
pub type Shared = Arc<dyn Endpoint>;

/// A watch event: its type and object (a Table, for `Output::Table`).
pub type Event = (WatchEventType, Json);

/// A stream of watch events, ended by the watch's error (or its end).
pub type EventStream = Pin<Box<dyn Stream<Item = Result<Event, ApiError>> + Send>>;

/// One resource's verbs, for any transport. Implemented once for every built-in kind's
/// `Store<R>` (`builtin`) and once for a served custom version (`custom`).
#[tonic::async_trait]
pub trait Endpoint: Send + Sync + 'static {
    /// What discovery says about it.
    fn info(&self) -> &ResourceInfo;

    /// The OpenAPI v3 schema of a custom kind's version (its definition's `openAPIV3Schema`);
    /// built-in kinds' schemas come from their descriptors (`ResourceInfo::message`).
    fn openapi_schema(&self) -> Option<Value> {
        None
    }

    /// Get `name` in `namespace` ("" for cluster-scoped kinds).
    async fn get(
        &self,
        ctx: Ctx,
        namespace: &str,
        name: &str,
        part: Part,
        output: Output,
    ) -> Result<Json, ApiError>;

    /// One page of a List ("" namespace: all namespaces).
    async fn list(
        &self,
        ctx: Ctx,
        namespace: &str,
        options: ListOptions,
        output: Output,
    ) -> Result<Page, ApiError>;

    /// A List streamed to its client: the whole collection when `options.limit` is 0, read
    /// from storage in chunks as the client takes it, so a client that reads slowly (or not at
    /// all) holds one chunk, not the list; else one page as [`Self::list`].
    async fn list_streamed(
        &self,
        ctx: Ctx,
        namespace: &str,
        options: ListOptions,
        output: Output,
    ) -> Result<Streamed, ApiError> {
        Ok(self.list(ctx, namespace, options, output).await?.into())
    }

    /// A Watch; ends when `stop` is raised (shutdown).
    async fn watch(
        &self,
        ctx: &Ctx,
        namespace: &str,
        options: ListOptions,
        output: Output,
        stop: tokio::sync::watch::Receiver<bool>,
    ) -> Result<EventStream, ApiError>;

    /// Create `body`, a JSON object of the kind.
    async fn create(
        &self,
        ctx: Ctx,
        namespace: &str,
        body: Value,
        options: &WriteOptions,
    ) -> Result<Written, ApiError>;

    /// Update (replace) `name` with `body`, or its status.
    async fn update(
        &self,
        ctx: Ctx,
        namespace: &str,
        name: &str,
        body: Value,
        part: Part,
        options: &WriteOptions,
    ) -> Result<Written, ApiError>;

    /// Patch `name` (or its status), applied inside the update's retry loop.
    async fn patch(
        &self,
        ctx: Ctx,
        namespace: &str,
        name: &str,
        patch: Patch,
        part: Part,
        options: &WriteOptions,
    ) -> Result<Written, ApiError>;

    /// Delete `name`.
    async fn delete(
        &self,
        ctx: Ctx,
        namespace: &str,
        name: &str,
        options: DeleteOptions,
    ) -> Result<Deleted, ApiError>;

    /// Counts a request of `verb` in `namespace` refused with `error` before it reached one of
    /// the verbs above (which count their own), in the request metrics.
    fn refused(&self, verb: crate::metrics::Verb, namespace: &str, error: &ApiError);

    /// Delete every object `list` selects, each as by Delete with `options`.
    async fn delete_collection(
        &self,
        ctx: Ctx,
        namespace: &str,
        list: ListOptions,
        options: DeleteOptions,
    ) -> Result<Page, ApiError>;
}

/// Group, version and plural.
pub type Gvr = (String, String, String);

/// Endpoints that come and go at run time (custom kinds, as their definitions change): the
/// catalog asks its providers for what it does not hold itself.
#[tonic::async_trait]
pub trait Provider: Send + Sync + 'static {
    /// The endpoint of `group`/`version`/`plural` for a request, learnt now if the provider can
    /// (a definition established through another replica); None when nobody serves it.
    async fn resolve(
        &self,
        ctx: &Ctx,
        group: &str,
        version: &str,
        plural: &str,
    ) -> Result<Option<Arc<dyn Endpoint>>, ApiError>;

    /// Whether `group`/`version`/`plural` is served now, as far as the provider knows (routing
    /// needs a quick answer).
    fn knows(&self, group: &str, version: &str, plural: &str) -> bool;

    /// Every endpoint served now (discovery).
    fn all(&self) -> Vec<Arc<dyn Endpoint>>;

    /// A number that changes whenever what the provider serves changes (documents built from
    /// [`Self::all`] compare it).
    fn generation(&self) -> u64 {
        0
    }
}

/// Every endpoint, by group, version and plural.
#[derive(Default)]
pub struct Catalog {
    endpoints: RwLock<BTreeMap<Gvr, Arc<dyn Endpoint>>>,
    /// Create-only resources and subresources, by group, version, plural and subresource.
    create_only: RwLock<BTreeMap<(Gvr, String), Arc<create_only::CreateOnly>>>,
    providers: RwLock<Vec<Arc<dyn Provider>>>,
    /// Raised whenever an endpoint comes or goes (discovery caches, the generic API's
    /// discovery watchers).
    changed: tokio::sync::watch::Sender<u64>,
}

impl Catalog {
    /// An empty catalog.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    fn key(group: &str, version: &str, plural: &str) -> Gvr {
        (group.to_string(), version.to_string(), plural.to_string())
    }

    /// Adds (or replaces) an endpoint.
    pub fn add(&self, endpoint: Arc<dyn Endpoint>) {
        let info = endpoint.info();
        let key = Self::key(&info.group, &info.version, &info.plural);
        self.endpoints
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key, endpoint);
        self.changed.send_modify(|n| *n += 1);
    }

    /// Removes the endpoints of `group`/`plural` that `keep` refuses (a custom kind's versions
    /// no longer served).
    pub fn retain(&self, mut keep: impl FnMut(&ResourceInfo) -> bool) {
        let mut removed = false;
        self.endpoints
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|_, e| {
                let k = keep(e.info());
                removed |= !k;
                k
            });
        if removed {
            self.changed.send_modify(|n| *n += 1);
        }
    }

    /// Adds a create-only resource (with its endpoint) or subresource.
    pub fn add_create_only(&self, c: create_only::CreateOnly) {
        let c = Arc::new(c);
        let key = (
            Self::key(c.group, c.version, c.plural),
            c.subresource.to_string(),
        );
        self.create_only
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key, c.clone());
        if c.subresource.is_empty() {
            self.add(Arc::new(create_only::ReviewEndpoint::new(c)));
        } else {
            self.changed.send_modify(|n| *n += 1);
        }
    }

    /// The create-only resource (`subresource` "") or subresource of
    /// `group`/`version`/`plural`.
    pub fn create_only(
        &self,
        group: &str,
        version: &str,
        plural: &str,
        subresource: &str,
    ) -> Option<Arc<create_only::CreateOnly>> {
        self.create_only
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&(Self::key(group, version, plural), subresource.to_string()))
            .cloned()
    }

    /// The create-only subresources of `group`/`version`/`plural` (discovery).
    pub fn create_only_subresources(
        &self,
        info: &ResourceInfo,
    ) -> Vec<Arc<create_only::CreateOnly>> {
        self.create_only
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter(|(((g, v, p), sub), _)| {
                !sub.is_empty() && *g == info.group && *v == info.version && *p == info.plural
            })
            .map(|(_, c)| c.clone())
            .collect()
    }

    /// Adds a provider of endpoints that change at run time.
    pub fn add_provider(&self, provider: Arc<dyn Provider>) {
        self.providers
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .push(provider);
    }

    fn providers(&self) -> Vec<Arc<dyn Provider>> {
        self.providers
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The registered endpoint of `group`/`version`/`plural` (built-in kinds).
    pub fn get(&self, group: &str, version: &str, plural: &str) -> Option<Arc<dyn Endpoint>> {
        self.endpoints
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&Self::key(group, version, plural))
            .cloned()
    }

    /// The endpoint of `group`/`version`/`plural` for a request: registered, or from a
    /// provider; NotFound as upstream words a path nobody serves.
    pub async fn resolve(
        &self,
        ctx: &Ctx,
        group: &str,
        version: &str,
        plural: &str,
    ) -> Result<Arc<dyn Endpoint>, ApiError> {
        if let Some(e) = self.get(group, version, plural) {
            return Ok(e);
        }
        for p in self.providers() {
            if let Some(e) = p.resolve(ctx, group, version, plural).await? {
                return Ok(e);
            }
        }
        Err(not_served(group, version, plural))
    }

    /// Whether `group`/`version`/`plural` is served now.
    pub fn knows(&self, group: &str, version: &str, plural: &str) -> bool {
        self.get(group, version, plural).is_some()
            || self
                .providers()
                .iter()
                .any(|p| p.knows(group, version, plural))
    }

    /// Every endpoint, registered and provided, in group, version, plural order.
    pub fn all(&self) -> Vec<Arc<dyn Endpoint>> {
        let mut all: Vec<Arc<dyn Endpoint>> = self
            .endpoints
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .cloned()
            .collect();
        for p in self.providers() {
            all.extend(p.all());
        }
        all.sort_by(|a, b| {
            let (a, b) = (a.info(), b.info());
            (&a.group, &a.version, &a.plural).cmp(&(&b.group, &b.version, &b.plural))
        });
        all
    }

    /// A number that changes whenever an endpoint comes, goes or changes, registered or
    /// provided (documents built from [`Self::all`] compare it).
    pub fn generation(&self) -> u64 {
        self.providers()
            .iter()
            .fold(*self.changed.borrow(), |n, p| {
                n.wrapping_add(p.generation())
            })
    }

    /// A receiver that sees a new number whenever the catalog changes.
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changed.subscribe()
    }
}

/// Asks the gate whether `ctx`'s caller may run `verb` on `part` of the resource `endpoint`
/// serves, in `namespace` (none for a cluster-scoped kind), naming `name`; a refusal is
/// counted in the request metrics. The generic gRPC API's entrance (the REST API asks from
/// the path, before it looks the resource up: `rest::attributes`).
pub fn authorize(
    ctx: &mut Ctx,
    endpoint: &dyn Endpoint,
    verb: crate::metrics::Verb,
    part: Part,
    namespace: &str,
    name: &str,
) -> Result<(), ApiError> {
    let i = endpoint.info();
    let subresource = match part {
        Part::Main => "",
        Part::Status => "status",
        Part::Finalize => "finalize",
    };
    let attrs = crate::authz::Attributes::Resource(
        crate::authz::ResourceAttributes::new(verb.authz_verb(), &i.group, &i.version, &i.plural)
            .subresource(subresource)
            .at(if i.namespaced { namespace } else { "" }, name),
    );
    ctx.authorize(&attrs)
        .inspect_err(|e| endpoint.refused(verb, namespace, e))
}

/// Upstream's 404 for a resource nobody serves ("the server could not find the requested
/// resource").
pub fn not_served(group: &str, version: &str, plural: &str) -> ApiError {
    let _ = (group, version, plural);
    ApiError::NotFound {
        resource: String::new(),
        name: String::new(),
    }
}

/// `metadata` (a JSON object's text) as a `PartialObjectMetadata`.
pub fn partial_metadata(metadata: &[u8]) -> Json {
    let mut out = Vec::with_capacity(metadata.len() + 80);
    out.extend_from_slice(
        br#"{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":"#,
    );
    out.extend_from_slice(metadata);
    out.push(b'}');
    Json::from(out)
}
