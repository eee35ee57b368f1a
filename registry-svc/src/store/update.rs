//! Update (upstream's `Store.Update` and `rest.BeforeUpdate`) with optimistic concurrency.
//!
//! Every read-modify-write goes through storage's GuaranteedUpdate stream, so the update
//! function below runs once per storage attempt, on the state storage read, and a stale
//! resourceVersion is a Conflict only against current data.

use std::sync::atomic::{AtomicBool, Ordering};

use kubestore_proto::{meta::v1::Preconditions, storage::v1::UpdateStart};

use crate::{
    admission::Operation,
    error::ApiError,
    resource::{MetaExt, Resource},
    storage::{OwnedState, StorageState, UpdateEnd},
    store::finalizers::should_delete_during_update,
    store::graceful::now,
    store::{Ctx, Store},
    validation,
    violations::Violations,
};

/// Upstream's message for a stale resourceVersion on update.
const MODIFIED: &str =
    "the object has been modified; please apply your changes to the latest version and try again";

/// The precondition storage reported as failed, if any.
fn failed_precondition(status: &tonic::Status) -> Option<&'static str> {
    use tonic_types::StatusExt;
    match status
        .get_details_error_info()?
        .metadata
        .get("precondition")?
        .as_str()
    {
        "resourceVersion" => Some("resourceVersion"),
        "uid" => Some("uid"),
        _ => None,
    }
}

/// Which part of an object an update writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// Update: metadata and spec (the strategy keeps status).
    Main,
    /// UpdateStatus: status (the status strategy keeps the rest).
    Status,
    /// A Namespace's `finalize` subresource: spec.finalizers only.
    Finalize,
}

impl Part {
    /// The subresource's name in URLs and metrics ("" for the object itself).
    pub fn subresource(self) -> &'static str {
        match self {
            Self::Main => "",
            Self::Status => "status",
            Self::Finalize => "finalize",
        }
    }
}

impl crate::metrics::Verb {
    /// The verb of an update of `part`.
    pub fn update(part: Part) -> Self {
        match part {
            Part::Main => Self::Update,
            Part::Status => Self::UpdateStatus,
            Part::Finalize => Self::UpdateFinalize,
        }
    }

    /// The verb of a patch of `part` (a finalize is never patched: its update's verb).
    pub fn patch(part: Part) -> Self {
        match part {
            Part::Main => Self::Patch,
            Part::Status => Self::PatchStatus,
            Part::Finalize => Self::UpdateFinalize,
        }
    }
}

/// A patch as the Store applies it: the current object in, the patched object out (or why
/// not). Called once per storage attempt, on the state that attempt read.
pub type PatchFn<'a, R> = &'a (dyn Fn(&R) -> Result<R, ApiError> + Send + Sync);

/// What an update writes: the request's object, a patch of the stored one, or a server-side
/// apply's configuration merged into it (which creates the object when there is none).
enum Request<'a, R> {
    Object(&'a R),
    Patch(PatchFn<'a, R>),
    Apply(&'a Apply<'a>),
}

/// A server-side apply, as the Store runs it (`Store::apply`).
pub struct Apply<'a> {
    /// The configuration, as Kubernetes JSON.
    pub config: &'a serde_json::Value,
    /// Take the fields other managers own (`force=true`).
    pub force: bool,
    /// The size of the request's body (large ones are merged off the async workers).
    pub body_bytes: usize,
}

impl<R> Clone for Request<'_, R> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<R> Copy for Request<'_, R> {}

/// What the update function needs from the request.
struct UpdateCall<'a, R> {
    ns: &'a str,
    /// The object's name (the URL's, for a patch).
    name: &'a str,
    request: Request<'a, R>,
    /// The request's resourceVersion (0: none; a patch's comes from the patched object).
    request_rv: u64,
    dry_run: bool,
    part: Part,
    /// Who writes (`managed`).
    manager: &'a str,
    /// Why the caller may not create the object, when the write would (upstream authorizes
    /// the create an update or an apply turns into as a create: `patch` alone does not do).
    create_denied: Option<&'a ApiError>,
}

impl<R> Clone for UpdateCall<'_, R> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<R> Copy for UpdateCall<'_, R> {}

/// Why an update function stopped.
pub(crate) enum Abort<R> {
    /// Return this error.
    Api(ApiError),
    /// The update removed the last finalizer of an object whose deletion is due: delete it.
    DeleteNow(R),
}

impl<R> From<ApiError> for Abort<R> {
    fn from(e: ApiError) -> Self {
        Self::Api(e)
    }
}

impl<R: Resource> Store<R> {
    /// Update with optimistic concurrency; see the module docs.
    pub async fn update(
        &self,
        ctx: Ctx,
        namespace: &str,
        obj: R,
        dry_run: bool,
    ) -> Result<R, ApiError> {
        self.update_in(ctx, namespace, obj, dry_run, Part::Main)
            .await
    }

    /// UpdateStatus: the status subresource (upstream's status store): only what the kind's
    /// status strategy lets through is written, and a missing object is never created.
    pub async fn update_status(
        &self,
        ctx: Ctx,
        namespace: &str,
        obj: R,
        dry_run: bool,
    ) -> Result<R, ApiError> {
        self.update_in(ctx, namespace, obj, dry_run, Part::Status)
            .await
    }

    /// Update of `part`: the object, its status, or its finalizers (Namespaces).
    pub async fn update_in(
        &self,
        ctx: Ctx,
        namespace: &str,
        obj: R,
        dry_run: bool,
        part: Part,
    ) -> Result<R, ApiError> {
        self.upsert_in(ctx, namespace, obj, dry_run, part)
            .await
            .map(|(o, _)| o)
    }

    /// [`Self::update_in`], saying whether the update created the object (a kind that allows
    /// create-on-update; upstream answers 201 then).
    pub async fn upsert_in(
        &self,
        ctx: Ctx,
        namespace: &str,
        obj: R,
        dry_run: bool,
        part: Part,
    ) -> Result<(R, bool), ApiError> {
        match part {
            Part::Status if !self.strategy.has_status() => Err(ApiError::BadRequest(format!(
                "{} has no status subresource",
                self.resource()
            ))),
            Part::Finalize if !self.strategy.has_finalize() => Err(ApiError::NotFound {
                resource: format!("{}/finalize", self.resource()),
                name: obj.name().to_string(),
            }),
            _ => self.update_part(ctx, namespace, obj, dry_run, part).await,
        }
    }

    async fn update_part(
        &self,
        ctx: Ctx,
        namespace: &str,
        mut obj: R,
        dry_run: bool,
        part: Part,
    ) -> Result<(R, bool), ApiError> {
        // Upstream defaults the request body as it decodes it; the stored object is defaulted
        // by `decode`. Both sides defaulted, an update that sends back what Get returned (or
        // leaves a defaulted field unset) changes nothing.
        self.strategy.default_object(&mut obj);
        let allow_create = part == Part::Main && self.strategy.allow_create_on_update();
        let ns = self
            .request_namespace(namespace, obj.meta().map_or("", |m| m.namespace.as_str()))?
            .to_string();
        let name = obj.name().to_string();
        let key = self.key(&ns, &name)?;
        if !allow_create && let Some(e) = self.impossible_name(&name) {
            return Err(e);
        }
        let uid = obj.meta().map(|m| m.uid.clone()).unwrap_or_default();
        let preconditions = (!uid.is_empty()).then_some(Preconditions {
            uid: Some(uid),
            resource_version: None,
        });
        // A conditional update also hands its resourceVersion to storage as a precondition:
        // the same check as `try_update` makes, but storage can then fail an update queued
        // behind a newer write without asking us (see storage-svc's `preconditions::never_again`).
        // Not with create-on-update, where a missing object must reach the update function.
        let rv = self.parse_resource_version(
            &name,
            obj.meta().map_or("", |m| m.resource_version.as_str()),
        )?;
        let mut update_preconditions = preconditions.clone();
        if rv != 0 && !allow_create {
            update_preconditions
                .get_or_insert_with(Preconditions::default)
                .resource_version = Some(rv.to_string());
        }
        let manager = ctx.manager();
        let create_denied = allow_create
            .then(|| self.may_create(&ctx, &ns, &name).err())
            .flatten();
        self.run_update(
            ctx,
            &ns,
            &name,
            key,
            preconditions,
            update_preconditions,
            allow_create,
            UpdateCall {
                ns: &ns,
                name: &name,
                request: Request::Object(&obj),
                request_rv: rv,
                dry_run,
                part,
                manager: &manager,
                create_denied: create_denied.as_ref(),
            },
        )
        .await
    }

    /// Patch (upstream's patcher): `apply` turns the stored object into the patched one, on
    /// every state storage hands the update (a patch that lost to a concurrent write is applied
    /// again to what won), then the patched object is updated as by Update: the strategy's
    /// hooks, validation, a resourceVersion the patch sets as a precondition. A patch that
    /// changes nothing writes nothing (the resourceVersion stays).
    pub async fn patch(
        &self,
        ctx: Ctx,
        namespace: &str,
        name: &str,
        apply: PatchFn<'_, R>,
        dry_run: bool,
        part: Part,
    ) -> Result<R, ApiError> {
        if (part == Part::Status && !self.strategy.has_status())
            || (part == Part::Finalize && !self.strategy.has_finalize())
        {
            return Err(ApiError::BadRequest(format!(
                "{} has no status subresource",
                self.resource()
            )));
        }
        let ns = self.request_namespace(namespace, "")?.to_string();
        let key = self.key(&ns, name)?;
        if let Some(e) = self.impossible_name(name) {
            return Err(e);
        }
        let manager = ctx.manager();
        self.run_update(
            ctx,
            &ns,
            name,
            key,
            None,
            None,
            false,
            UpdateCall {
                ns: &ns,
                name,
                request: Request::Patch(apply),
                request_rv: 0,
                dry_run,
                part,
                manager: &manager,
                create_denied: None,
            },
        )
        .await
        .map(|(o, _)| o)
    }

    /// Server-side apply (upstream's apply patcher): `apply`'s configuration merged into the
    /// stored object by the context's field manager (`managed`), on every state storage hands
    /// the update, then written as a patch is; the object is created when there is none (not
    /// through a subresource). Says whether it created the object. An apply that changes
    /// nothing (the same configuration again) writes nothing.
    pub async fn apply(
        &self,
        ctx: Ctx,
        namespace: &str,
        name: &str,
        apply: &Apply<'_>,
        dry_run: bool,
        part: Part,
    ) -> Result<(R, bool), ApiError> {
        if part == Part::Status && !self.strategy.has_status() || part == Part::Finalize {
            return Err(ApiError::BadRequest(format!(
                "{} has no {} subresource",
                self.resource(),
                part.subresource()
            )));
        }
        if ctx.field_manager.is_empty() {
            // Upstream's words: its PatchOptions are Invalid.
            return Err(ApiError::invalid(
                "PatchOptions.meta.k8s.io",
                "",
                vec![(
                    "fieldManager".to_string(),
                    "Required value: is required for apply patch".to_string(),
                )],
            ));
        }
        let ns = self.request_namespace(namespace, "")?.to_string();
        let key = self.key(&ns, name)?;
        let create = part == Part::Main;
        if !create && let Some(e) = self.impossible_name(name) {
            return Err(e);
        }
        let manager = ctx.manager();
        let create_denied = create
            .then(|| self.may_create(&ctx, &ns, name).err())
            .flatten();
        self.run_update(
            ctx,
            &ns,
            name,
            key,
            None,
            None,
            create,
            UpdateCall {
                ns: &ns,
                name,
                request: Request::Apply(apply),
                request_rv: 0,
                dry_run,
                part,
                manager: &manager,
                create_denied: create_denied.as_ref(),
            },
        )
        .await
    }

    /// The GuaranteedUpdate of Update, UpdateStatus and Patch, within the request's deadline
    /// (for validation below it, `store::with_deadline`).
    #[allow(clippy::too_many_arguments)]
    async fn run_update(
        &self,
        ctx: Ctx,
        ns: &str,
        name: &str,
        key: String,
        preconditions: Option<Preconditions>,
        update_preconditions: Option<Preconditions>,
        allow_create: bool,
        call: UpdateCall<'_, R>,
    ) -> Result<(R, bool), ApiError> {
        crate::store::scoped(
            &ctx.clone(),
            self.run_update_within(
                ctx,
                ns,
                name,
                key,
                preconditions,
                update_preconditions,
                allow_create,
                call,
            ),
        )
        .await
    }

    #[allow(clippy::too_many_arguments)]
    async fn run_update_within(
        &self,
        ctx: Ctx,
        ns: &str,
        name: &str,
        key: String,
        preconditions: Option<Preconditions>,
        update_preconditions: Option<Preconditions>,
        allow_create: bool,
        call: UpdateCall<'_, R>,
    ) -> Result<(R, bool), ApiError> {
        let dry_run = call.dry_run;
        let start = UpdateStart {
            key: key.clone(),
            preconditions: update_preconditions,
            ignore_not_found: allow_create,
            dry_run,
            cached_object: None,
        };
        let creating = AtomicBool::new(false);
        let (this, call_ref, creating_ref, key_ref) = (self, &call, &creating, &key);
        let end = self
            .storage
            .guaranteed_update_async(ctx.deadline, start, move |state: OwnedState| async move {
                let (o, ttl) = this
                    .try_update(call_ref, state.borrowed(), creating_ref)
                    .await?;
                // A kind whose encoding is not canonical (a `Struct` is a hash map) may encode
                // an unchanged object to other bytes: hand storage its own bytes back then, so
                // it sees no change and writes nothing (upstream compares bytes too, of a
                // canonical JSON encoding).
                if this.strategy.unordered_encoding()
                    && let Some(bytes) = state.object.as_deref()
                    && this.unchanged(&o, bytes)
                {
                    return Ok((bytes.to_vec(), ttl));
                }
                let encoded = o.encode_to_vec();
                this.check_size(key_ref, name, &encoded)?;
                Ok((encoded, ttl))
            })
            .await
            .map_err(|s| match self.storage_error(&s, name) {
                ApiError::Conflict { resource, name, .. }
                    if failed_precondition(&s) == Some("resourceVersion") =>
                {
                    ApiError::Conflict {
                        resource,
                        name,
                        message: MODIFIED.into(),
                    }
                }
                other => other,
            })?;
        let creating = creating.load(Ordering::Relaxed);
        match end {
            UpdateEnd::Done(result) => {
                let mut out = self.decode(&result.object)?;
                if creating {
                    self.strategy.after_create(&out, dry_run);
                } else {
                    self.strategy.after_update(&out, dry_run);
                }
                self.strategy.decorate(&mut out);
                Ok((out, creating))
            }
            UpdateEnd::Aborted(Abort::Api(e)) => Err(e),
            UpdateEnd::Aborted(Abort::DeleteNow(updated)) => {
                let _ = ns;
                self.delete_without_finalizers(ctx, key, name, preconditions, dry_run, updated)
                    .await
                    .map(|o| (o, false))
            }
        }
    }

    /// Upstream's `deleteWithoutFinalizers`: the update emptied the finalizers of an object
    /// due for deletion, so it is deleted; the caller gets its updated object.
    async fn delete_without_finalizers(
        &self,
        ctx: Ctx,
        key: String,
        name: &str,
        preconditions: Option<Preconditions>,
        dry_run: bool,
        mut updated: R,
    ) -> Result<R, ApiError> {
        match self
            .storage
            .delete(ctx.deadline, key, preconditions, dry_run, None)
            .await
        {
            Ok(_) => {}
            Err(s) => match self.storage_error(&s, name) {
                ApiError::NotFound { .. } => {}
                other => return Err(other),
            },
        }
        self.strategy.after_delete(&updated, dry_run);
        self.strategy.decorate(&mut updated);
        Ok(updated)
    }

    /// The update function: runs on each state storage sends.
    /// Whether `new` is the object stored as `bytes` (resourceVersion aside).
    fn unchanged(&self, new: &R, bytes: &[u8]) -> bool {
        let Ok(mut old) = self.decode(bytes) else {
            return false;
        };
        let mut new = new.clone();
        old.meta_mut().resource_version.clear();
        new.meta_mut().resource_version.clear();
        old == new
    }

    async fn try_update(
        &self,
        call: &UpdateCall<'_, R>,
        state: StorageState<'_>,
        creating: &AtomicBool,
    ) -> Result<(R, i64), Abort<R>> {
        let UpdateCall {
            ns,
            name,
            request,
            request_rv,
            dry_run,
            part,
            manager,
            create_denied,
        } = *call;
        creating.store(false, Ordering::Relaxed);
        let Some(existing_bytes) = state.object else {
            let not_found = || ApiError::NotFound {
                resource: self.resource().into(),
                name: name.into(),
            };
            let mut obj = match request {
                // Create on update, for kinds that allow it.
                Request::Object(request)
                    if part == Part::Main && self.strategy.allow_create_on_update() =>
                {
                    let mut obj = request.clone();
                    self.track(None, &mut obj, manager, part)?;
                    obj
                }
                // Create on apply, for every kind (upstream's apply patcher).
                Request::Apply(apply) if part == Part::Main => {
                    let mut obj = self.applied(None, apply, manager, part, name)?;
                    self.strategy.default_object(&mut obj);
                    check_name(&obj, name)?;
                    obj
                }
                _ => return Err(not_found().into()),
            };
            if let Some(e) = create_denied {
                return Err(e.clone().into());
            }
            // Fresh system fields, create hooks and checks.
            let m = obj.meta_mut();
            m.uid = uuid::Uuid::new_v4().to_string();
            m.creation_timestamp = Some(now());
            m.deletion_timestamp = None;
            m.deletion_grace_period_seconds = None;
            m.resource_version.clear();
            self.reconcile_namespace(ns, obj.meta_mut())?;
            self.strategy.begin_create(&obj, dry_run)?;
            // As a create: mutated, validated, and refused in a namespace being deleted
            // (upstream's NamespaceLifecycle admits the create an update turns into).
            let r = async {
                self.mutate(Operation::Create, "", ns, name, &mut obj, None, dry_run)
                    .await?;
                self.before_create(ns, &mut obj)?;
                self.storage
                    .lifecycle
                    .admit_create(self.resource(), obj.name(), ns)?;
                self.admit(Operation::Create, "", ns, name, Some(&obj), None, dry_run)?;
                self.admit_waiting(Operation::Create, "", ns, name, Some(&obj), None, dry_run)
                    .await
            }
            .await;
            self.strategy.finish_create(&obj, r.is_ok());
            r?;
            creating.store(true, Ordering::Relaxed);
            let ttl = self.strategy.ttl_seconds(&obj).unwrap_or(0);
            return Ok((obj, ttl));
        };
        let existing = self.decode(existing_bytes)?;
        let (mut obj, request_rv) = match request {
            Request::Object(r) => {
                let mut obj = r.clone();
                self.track(Some(&existing), &mut obj, manager, part)?;
                (obj, request_rv)
            }
            Request::Patch(patch) => {
                let mut patched = patch(&existing)?;
                // Upstream defaults a patched object as it decodes it.
                self.strategy.default_object(&mut patched);
                self.track(Some(&existing), &mut patched, manager, part)?;
                self.with_patched_version(patched, name)?
            }
            // The merge sets the managed fields itself.
            Request::Apply(apply) => {
                let mut applied = self.applied(Some(&existing), apply, manager, part, name)?;
                self.strategy.default_object(&mut applied);
                self.with_patched_version(applied, name)?
            }
        };
        if request_rv == 0 {
            if !self.strategy.allow_unconditional_update() {
                return Err(ApiError::invalid(
                    self.kind(),
                    name,
                    vec![(
                        "metadata.resourceVersion".to_string(),
                        "Invalid value: 0: must be specified for an update".to_string(),
                    )],
                )
                .into());
            }
            obj.meta_mut().resource_version = state.resource_version.to_string();
        } else if state.resource_version.parse::<u64>().ok() != Some(request_rv) {
            return Err(ApiError::Conflict {
                resource: self.resource().into(),
                name: name.into(),
                message: MODIFIED.into(),
            }
            .into());
        }
        // The hooks see the namespace the object is written to (a body may leave it out).
        self.reconcile_namespace(ns, obj.meta_mut())?;
        // Mutating admission, on every attempt, against what that attempt replaces.
        self.mutate(
            Operation::Update,
            part.subresource(),
            ns,
            name,
            &mut obj,
            Some(&existing),
            dry_run,
        )
        .await?;
        self.strategy.begin_update(&obj, &existing, dry_run)?;
        let r = async {
            self.before_update(ns, &mut obj, &existing, part)?;
            // Admitted on every attempt, against what that attempt replaces.
            self.admit(
                Operation::Update,
                part.subresource(),
                ns,
                name,
                Some(&obj),
                Some(&existing),
                dry_run,
            )?;
            self.admit_waiting(
                Operation::Update,
                part.subresource(),
                ns,
                name,
                Some(&obj),
                Some(&existing),
                dry_run,
            )
            .await
        }
        .await;
        let r = r.map_err(Abort::Api).and_then(|()| {
            let (new_meta, old_meta) = (
                obj.meta().cloned().unwrap_or_default(),
                existing.meta().cloned().unwrap_or_default(),
            );
            if should_delete_during_update(&new_meta, &old_meta) && !self.strategy.held(&obj) {
                return Err(Abort::DeleteNow(obj.clone()));
            }
            Ok(())
        });
        self.strategy.finish_update(&obj, r.is_ok());
        r?;
        let ttl = self.strategy.ttl_seconds(&obj).unwrap_or(0);
        Ok((obj, ttl))
    }

    /// `rest.BeforeUpdate`: server-owned fields from the stored object, then validation. The
    /// managed fields computed for the write stay (a status strategy starts from the stored
    /// object).
    fn before_update(
        &self,
        ns: &str,
        obj: &mut R,
        existing: &R,
        part: Part,
    ) -> Result<(), ApiError> {
        let _span = tracing::info_span!("BeforeUpdate", kind = self.kind()).entered();
        let old = existing.meta().cloned().unwrap_or_default();
        self.reconcile_namespace(ns, obj.meta_mut())?;
        obj.meta_mut().generation = old.generation;
        let managed_fields = std::mem::take(&mut obj.meta_mut().managed_fields);
        match part {
            Part::Main => self.strategy.prepare_for_update(obj, existing),
            Part::Status => self.strategy.prepare_for_status_update(obj, existing),
            Part::Finalize => self.strategy.prepare_for_finalize_update(obj, existing),
        }
        obj.meta_mut().managed_fields = managed_fields;
        let m = obj.meta_mut();
        if m.uid.is_empty() {
            m.uid = old.uid.clone();
        }
        if old.creation_timestamp.is_some() {
            m.creation_timestamp = old.creation_timestamp;
        }
        if old.deletion_timestamp.is_some() {
            m.deletion_timestamp = old.deletion_timestamp;
        }
        if old.deletion_grace_period_seconds.is_some() && m.deletion_grace_period_seconds.is_none()
        {
            m.deletion_grace_period_seconds = old.deletion_grace_period_seconds;
        }
        {
            let _span = tracing::info_span!("Validate", kind = self.kind()).entered();
            let mut v = Violations::new();
            let s = &self.strategy;
            validation::object_meta(obj.meta_mut(), s.namespace_scoped(), s.name_rule(), &mut v);
            validation::object_meta_update(obj.meta_mut(), &old, &mut v);
            v.merge(match part {
                Part::Main => self.strategy.validate_update(obj, existing),
                Part::Status | Part::Finalize => {
                    self.strategy.validate_status_update(obj, existing)
                }
            });
            self.invalid(obj, v)?;
        }
        self.strategy.canonicalize(obj);
        Ok(())
    }
}

impl<R: Resource> Store<R> {
    /// A patched (or applied) object and the resourceVersion it is conditional on: one the
    /// patch sets is a precondition; else the patch applies to the version it read, which is
    /// current (0). Its name must be the URL's.
    fn with_patched_version(&self, patched: R, name: &str) -> Result<(R, u64), ApiError> {
        let rv = self.parse_resource_version(
            name,
            patched.meta().map_or("", |m| m.resource_version.as_str()),
        )?;
        check_name(&patched, name)?;
        Ok((patched, rv))
    }

    /// Whether `ctx`'s caller may create `ns`/`name` of this kind: asked before an update or
    /// an apply that may turn into a create, as upstream's handlers ask.
    fn may_create(&self, ctx: &Ctx, ns: &str, name: &str) -> Result<(), ApiError> {
        // The gate itself: the request's audit record keeps the request's own decision.
        let attrs = self.attributes(crate::metrics::Verb::Create, ns, name);
        ctx.caller.gate().check(&ctx.caller.user, &attrs)
    }
}

/// Upstream's check of a patched object's name against the URL's.
fn check_name<R: Resource>(obj: &R, name: &str) -> Result<(), ApiError> {
    if obj.name() != name {
        return Err(ApiError::BadRequest(format!(
            "the name of the object ({}) does not match the name on the URL ({name})",
            obj.name()
        )));
    }
    Ok(())
}
