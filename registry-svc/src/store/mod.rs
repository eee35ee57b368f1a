//! The generic Store (upstream's `genericregistry.Store`) for any [`Resource`] with its
//! [`Strategy`], on storage-svc: what every verb shares (keys, namespaces, decoding, storage
//! errors). Each verb has its own module:
//!
//! - [`get`], [`create`], [`update`] (Update, UpdateStatus, and Patch inside the same retried
//!   read-modify-write), [`delete`], [`list`], [`watch`], [`collection`] (DeleteCollection);
//! - [`admit`]: where every write is admitted (`crate::admission`);
//! - [`managed`]: managed fields on every write, and server-side apply (`crate::managed`);
//! - [`graceful`]: BeforeDelete (grace periods); [`finalizers`]: the collector's finalizers,
//!   markAsDeleting, deletion during update.
//!
//! Every object decoded from storage goes through [`Store::decode`], which applies the kind's
//! read defaults (upstream defaults on decode); every object a client sends is defaulted by the
//! verb before its strategy sees it.
//!
//! Keys are `/<resource>/<namespace>/<name>`.

pub mod admit;
pub mod collection;
pub mod create;
pub mod delete;
pub mod finalizers;
pub mod get;
pub mod graceful;
pub mod list;
pub mod managed;
pub mod update;
pub mod watch;

use std::sync::Arc;

use kubestore_proto::{
    limits::{ETCD_MAX_REQUEST_BYTES, etcd_request_bytes},
    meta::v1::ObjectMeta,
};
use kubestore_telemetry::Deadline;

use crate::{
    authz::{Attributes, Caller, ResourceAttributes},
    error::ApiError,
    resource::{MetaExt, Resource},
    storage::StorageClient,
    strategy::Strategy,
    validation,
    violations::Violations,
};

tokio::task_local! {
    /// The deadline of the request a Store verb is serving, for work below it that cannot take
    /// a `Ctx` (validation run by a strategy: `offload::validation`).
    static DEADLINE: std::time::Instant;
}

/// Runs `f` with `deadline` as the deadline of the work it does (the Store's verbs wrap
/// themselves in it).
pub async fn with_deadline<F: std::future::Future>(
    deadline: std::time::Instant,
    f: F,
) -> F::Output {
    DEADLINE.scope(deadline, f).await
}

tokio::task_local! {
    /// The caller of the write a Store verb is serving, for hooks that cannot take a `Ctx`
    /// (the RBAC kinds' escalation check runs inside the read-modify-write: `rbac::escalation`).
    static CALLER: Arc<Caller>;
}

/// Runs `f`, the work of a write for `ctx`, with its deadline and caller in scope
/// ([`deadline`], [`caller`]).
pub async fn scoped<F: std::future::Future>(ctx: &Ctx, f: F) -> F::Output {
    CALLER
        .scope(
            ctx.caller.clone(),
            with_deadline(ctx.deadline.instant().into_std(), f),
        )
        .await
}

/// The caller of the write being served, if a Store verb set one.
pub fn caller() -> Option<Arc<Caller>> {
    CALLER.try_with(Arc::clone).ok()
}

/// The deadline of the request being served, if a Store verb set one.
pub fn deadline() -> Option<std::time::Instant> {
    DEADLINE.try_with(|d| *d).ok()
}

/// Per-request context: when the caller stops waiting, who it is, and whether the gate has
/// allowed what it asks (`authz`). A clone is an atomic increment.
#[derive(Clone, Debug)]
pub struct Ctx {
    /// When the caller stops waiting.
    pub deadline: Deadline,
    /// Who asks, and the gate that decides for it.
    pub caller: Arc<Caller>,
    /// Whether the gate allowed the request ([`Ctx::authorize`]); checked by [`Store::request`].
    authorized: bool,
    /// The request's `fieldManager` ("": none, the User-Agent names the manager).
    pub field_manager: String,
}

impl Ctx {
    /// A context that ends `timeout` from now, of the registry itself (its controllers' own
    /// calls: `Caller::internal`).
    pub fn within(timeout: std::time::Duration) -> Self {
        Self {
            deadline: Deadline::after(timeout),
            caller: Caller::internal(),
            authorized: true,
            field_manager: String::new(),
        }
    }

    /// The context of a client's request by `caller`, ending at `deadline`: nothing is allowed
    /// until [`Ctx::authorize`] says so.
    pub fn of(caller: Arc<Caller>, deadline: Deadline) -> Self {
        Self {
            deadline,
            caller,
            authorized: false,
            field_manager: String::new(),
        }
    }

    /// This context, for a write whose `fieldManager` is `manager` ("": none).
    pub fn managed_by(mut self, manager: &str) -> Self {
        self.field_manager = manager.to_string();
        self
    }

    /// The manager of this context's writes (`managed::manager_of`).
    pub fn manager(&self) -> String {
        crate::managed::manager_of(&self.field_manager, &self.caller.user_agent)
    }

    /// Asks the gate whether the caller may do `attrs`; the context is authorized if so, and
    /// upstream's 403 is the answer if not.
    pub fn authorize(&mut self, attrs: &Attributes) -> Result<(), ApiError> {
        self.caller.check(attrs)?;
        self.authorized = true;
        Ok(())
    }

    /// Whether the gate allowed the request.
    pub fn authorized(&self) -> bool {
        self.authorized
    }
}

/// Longest a request may take when the caller sets no deadline.
pub const DEFAULT_REQUEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Longest a DeleteCollection may take when the caller sets no deadline: it deletes one object
/// after another (upstream lifted its timeout for this verb, kubernetes#115341).
pub const DELETE_COLLECTION_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);

pub use crate::resource::Names;

/// The Store of one kind.
pub struct Store<R: Resource> {
    pub(crate) storage: StorageClient,
    pub(crate) strategy: Arc<dyn Strategy<R>>,
    names: Arc<Names>,
    /// The kind's request metrics' handles (`crate::metrics::Series`).
    series: crate::metrics::Series,
    /// The kind's field manager, built on first use (`managed`).
    fields: Arc<std::sync::OnceLock<Option<crate::managed::FieldManager>>>,
}

impl<R: Resource> Clone for Store<R> {
    fn clone(&self) -> Self {
        Self {
            storage: self.storage.clone(),
            strategy: self.strategy.clone(),
            names: self.names.clone(),
            series: self.series.clone(),
            fields: self.fields.clone(),
        }
    }
}

impl<R: Resource> Store<R> {
    /// A store for the built-in kind `R` with `strategy`.
    pub fn new(storage: StorageClient, strategy: impl Strategy<R>) -> Self {
        Self::with_names(storage, Arc::new(strategy), Names::of::<R>())
    }

    /// A store whose kind and keys are `names` (a custom kind's, see `custom`).
    pub fn with_names(
        storage: StorageClient,
        strategy: Arc<dyn Strategy<R>>,
        names: Names,
    ) -> Self {
        Self {
            storage,
            strategy,
            names: Arc::new(names),
            series: crate::metrics::Series::default(),
            fields: Arc::default(),
        }
    }

    /// The kind, e.g. `Pod`.
    pub fn kind(&self) -> &str {
        &self.names.kind
    }

    /// The resource as errors name it, e.g. `pods`.
    pub fn resource(&self) -> &str {
        &self.names.resource
    }

    /// Every name of the kind.
    pub fn names(&self) -> &Names {
        &self.names
    }

    /// The storage key every object's key starts with, e.g. `/pods`.
    pub fn key_root(&self) -> &str {
        &self.names.key_root
    }

    /// Runs `fut`, a client's request of `verb` in `namespace`, and records it in the
    /// request metrics (`crate::metrics`). Every client call of a Store (the catalog's
    /// endpoints, the typed gRPC services) goes through here: a `ctx` the gate did not
    /// authorize is refused (a 500: an entrance that forgot to ask, see `authz`). The registry's
    /// own reads and a DeleteCollection's deletes are not client requests.
    pub async fn request<T>(
        &self,
        ctx: &Ctx,
        verb: crate::metrics::Verb,
        namespace: &str,
        dry_run: bool,
        fut: impl std::future::Future<Output = Result<T, ApiError>>,
    ) -> Result<T, ApiError> {
        let start = std::time::Instant::now();
        let result = if ctx.authorized() {
            fut.await
        } else {
            Err(ApiError::Internal(format!(
                "a {} request reached the {} store without authorization",
                verb.authz_verb(),
                self.resource()
            )))
        };
        self.storage.api.observe(
            &self.series,
            verb,
            &self.names,
            namespace,
            dry_run,
            start,
            crate::metrics::ApiMetrics::code(verb, &result),
        );
        result
    }

    /// The attributes of a request of `verb` on this kind in `namespace`, naming `name` (see
    /// `authz`); "" at the cluster scope for cluster-scoped kinds.
    pub fn attributes(
        &self,
        verb: crate::metrics::Verb,
        namespace: &str,
        name: &str,
    ) -> Attributes {
        let n = &self.names;
        let namespace = if self.strategy.namespace_scoped() {
            namespace
        } else {
            ""
        };
        Attributes::Resource(
            ResourceAttributes::new(verb.authz_verb(), &n.group, &n.version, &n.plural)
                .subresource(verb.subresource())
                .at(namespace, name),
        )
    }

    /// Records a client's request of `verb` in `namespace` refused with `error` before the verb
    /// ran (a body that does not decode, a media type the resource does not take): upstream
    /// counts every request, its instrumentation wrapping the whole handler.
    pub fn refused(&self, verb: crate::metrics::Verb, namespace: &str, error: &ApiError) {
        self.storage.api.observe(
            &self.series,
            verb,
            &self.names,
            namespace,
            false,
            std::time::Instant::now(),
            error.http_code(),
        );
    }

    /// Asks the gate whether `ctx`'s caller may run `verb` on this kind in `namespace`, naming
    /// `name` ([`Store::attributes`]); a refusal is counted in the request metrics. The typed
    /// gRPC services and the List/Watch pass-throughs enter here.
    pub fn authorize(
        &self,
        ctx: &mut Ctx,
        verb: crate::metrics::Verb,
        namespace: &str,
        name: &str,
    ) -> Result<(), ApiError> {
        ctx.authorize(&self.attributes(verb, namespace, name))
            .inspect_err(|e| self.refused(verb, namespace, e))
    }

    /// Counts a watch in `namespace` as open until the guard is dropped (keep it with the
    /// stream).
    pub fn watch_opened(&self, namespace: &str) -> crate::metrics::Longrunning {
        self.storage.api.open(crate::metrics::ApiMetrics::labels(
            crate::metrics::Verb::Watch,
            &self.names,
            namespace,
            false,
        ))
    }

    pub(crate) fn storage_error(&self, status: &tonic::Status, name: &str) -> ApiError {
        ApiError::from_storage(status, self.kind(), self.resource(), name)
    }

    /// Refuses an encoded object that storage could not hold, before sending it.
    pub(crate) fn check_size(&self, key: &str, name: &str, encoded: &[u8]) -> Result<(), ApiError> {
        if etcd_request_bytes(key.len(), encoded.len()) > ETCD_MAX_REQUEST_BYTES {
            return Err(ApiError::TooLarge {
                kind: self.kind().into(),
                name: name.into(),
                bytes: encoded.len(),
                limit: ETCD_MAX_REQUEST_BYTES,
            });
        }
        Ok(())
    }

    /// A resourceVersion sent by a client, as upstream's `ParseResourceVersion`: "" and "0"
    /// are 0 (no version: an unconditional update), anything else a decimal revision.
    pub(crate) fn parse_resource_version(&self, name: &str, rv: &str) -> Result<u64, ApiError> {
        if rv.is_empty() {
            return Ok(0);
        }
        kubestore_proto::parse_revision(rv)
            .map(i64::unsigned_abs)
            .ok_or_else(|| {
                ApiError::invalid(
                    self.kind(),
                    name,
                    vec![(
                        "metadata.resourceVersion".to_string(),
                        format!("Invalid value: {rv:?}: must be a decimal resource version"),
                    )],
                )
            })
    }

    /// The NotFound of a name no object can have (longer than any valid name): answered
    /// without asking storage, as the key could not exist.
    pub(crate) fn impossible_name(&self, name: &str) -> Option<ApiError> {
        (name.len() > validation::DNS1123_SUBDOMAIN_MAX).then(|| ApiError::NotFound {
            resource: self.resource().into(),
            name: name.into(),
        })
    }

    /// An object read from storage, with the kind's defaults applied
    /// (`Strategy::default_object`), as upstream's storage codec (the versioning codec's
    /// `Decode`) defaults every object it decodes: a Secret stored without `type` reads as
    /// `Opaque`, so an update that sends it back is not a change of an immutable field.
    pub(crate) fn decode(&self, bytes: &[u8]) -> Result<R, ApiError> {
        let mut obj = self.decode_stored(bytes)?;
        self.strategy.default_object(&mut obj);
        Ok(obj)
    }

    /// An object read from storage, exactly as stored (no defaults). Its nesting is checked
    /// first: storage.v1's responses are not walked as a whole (`kubestore_proto::depth`).
    pub(crate) fn decode_stored(&self, bytes: &[u8]) -> Result<R, ApiError> {
        let stored = |e: &dyn std::fmt::Display| {
            ApiError::Internal(format!("stored {} does not decode: {e}", self.kind()))
        };
        kubestore_proto::depth::bounded(bytes).map_err(|e| stored(&e))?;
        R::decode(bytes).map_err(|e| stored(&e))
    }

    /// The namespace a request works in: the request's, else the object's (a gRPC client has
    /// no URL path to carry it). Cluster-scoped kinds have none.
    pub(crate) fn request_namespace<'a>(
        &self,
        request_ns: &'a str,
        obj_ns: &'a str,
    ) -> Result<&'a str, ApiError> {
        if !self.strategy.namespace_scoped() {
            return Ok("");
        }
        let ns = if request_ns.is_empty() {
            obj_ns
        } else {
            request_ns
        };
        if ns.is_empty() {
            return Err(ApiError::BadRequest("Namespace parameter required.".into()));
        }
        if let Some(e) = validation::dns1123_label(ns) {
            return Err(ApiError::BadRequest(format!(
                "Namespace parameter invalid: {ns:?}: {e}"
            )));
        }
        Ok(ns)
    }

    /// The storage key of `namespace`/`name` (upstream's NamespaceKeyFunc).
    pub(crate) fn key(&self, namespace: &str, name: &str) -> Result<String, ApiError> {
        if name.is_empty() {
            return Err(ApiError::BadRequest("Name parameter required.".into()));
        }
        if let Some(e) = validation::path_segment(name) {
            return Err(ApiError::BadRequest(format!(
                "Name parameter invalid: {name:?}: {e}"
            )));
        }
        Ok(if self.strategy.namespace_scoped() {
            format!("{}/{namespace}/{name}", self.key_root())
        } else {
            format!("{}/{name}", self.key_root())
        })
    }

    /// Upstream's `EnsureObjectNamespaceMatchesRequestNamespace`.
    pub(crate) fn reconcile_namespace(
        &self,
        ns: &str,
        meta: &mut ObjectMeta,
    ) -> Result<(), ApiError> {
        if meta.namespace == ns {
            return Ok(());
        }
        if meta.namespace.is_empty() || ns.is_empty() {
            meta.namespace = ns.to_string();
            return Ok(());
        }
        Err(ApiError::BadRequest(
            "the namespace of the provided object does not match the namespace sent on the request"
                .into(),
        ))
    }

    pub(crate) fn invalid(&self, obj: &R, violations: Violations) -> Result<(), ApiError> {
        if violations.is_empty() {
            Ok(())
        } else {
            Err(ApiError::invalid(self.kind(), obj.name(), violations))
        }
    }
}
