//! The generic Store (upstream's `genericregistry.Store`): Create, Get and Update for any
//! [`Resource`] with its [`Strategy`], on storage-svc. Delete lives in `delete`.
//!
//! Keys are `/<resource>/<namespace>/<name>`. Every read-modify-write goes through storage's
//! GuaranteedUpdate stream, so the update function below runs once per storage attempt, on
//! the state storage read, and a stale resourceVersion is a Conflict only against current data.

use std::sync::Arc;

use kubestore_proto::{
    meta::v1::{ObjectMeta, Preconditions},
    storage::v1::UpdateStart,
};
use kubestore_telemetry::Deadline;

use crate::{
    error::ApiError,
    finalizers::should_delete_during_update,
    graceful::now,
    resource::{MetaExt, Resource},
    storage::{StorageClient, StorageState, UpdateEnd},
    strategy::Strategy,
    validation::{self, Violations},
};

/// Attempts at a generated name before giving up (upstream: 8).
pub const GENERATE_NAME_ATTEMPTS: usize = 8;
/// Alphabet of generated suffixes (no vowels, no confusable characters), as upstream.
const SUFFIX_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

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

/// Per-request context.
#[derive(Clone, Copy, Debug)]
pub struct Ctx {
    /// When the caller stops waiting.
    pub deadline: Deadline,
}

/// The Store of one kind.
pub struct Store<R: Resource> {
    pub(crate) storage: StorageClient,
    pub(crate) strategy: Arc<dyn Strategy<R>>,
}

impl<R: Resource> Clone for Store<R> {
    fn clone(&self) -> Self {
        Self {
            storage: self.storage.clone(),
            strategy: self.strategy.clone(),
        }
    }
}

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

/// `base` (cut to 58 characters) plus 5 random characters, upstream's SimpleNameGenerator.
pub fn generate_name(base: &str) -> String {
    let base: String = base.chars().take(58).collect();
    let bytes = uuid::Uuid::new_v4().into_bytes();
    let suffix: String = bytes[..5]
        .iter()
        .map(|b| SUFFIX_ALPHABET[*b as usize % SUFFIX_ALPHABET.len()] as char)
        .collect();
    format!("{base}{suffix}")
}

impl<R: Resource> Store<R> {
    /// A store for `R` with `strategy`.
    pub fn new(storage: StorageClient, strategy: impl Strategy<R>) -> Self {
        Self {
            storage,
            strategy: Arc::new(strategy),
        }
    }

    pub(crate) fn storage_error(&self, status: &tonic::Status, name: &str) -> ApiError {
        ApiError::from_storage(status, R::KIND, R::RESOURCE, name)
    }

    pub(crate) fn decode(&self, bytes: &[u8]) -> Result<R, ApiError> {
        R::decode(bytes)
            .map_err(|e| ApiError::Internal(format!("stored {} does not decode: {e}", R::KIND)))
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
            format!("/{}/{namespace}/{name}", R::RESOURCE)
        } else {
            format!("/{}/{name}", R::RESOURCE)
        })
    }

    /// Upstream's `EnsureObjectNamespaceMatchesRequestNamespace`.
    fn reconcile_namespace(&self, ns: &str, meta: &mut ObjectMeta) -> Result<(), ApiError> {
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

    fn invalid(obj: &R, violations: Violations) -> Result<(), ApiError> {
        if violations.is_empty() {
            Ok(())
        } else {
            Err(ApiError::invalid(R::KIND, obj.name(), violations))
        }
    }

    /// Get.
    pub async fn get(&self, ctx: Ctx, namespace: &str, name: &str) -> Result<R, ApiError> {
        let ns = self.request_namespace(namespace, "")?;
        let key = self.key(ns, name)?;
        let bytes = self
            .storage
            .get(ctx.deadline, key, false)
            .await
            .map_err(|s| self.storage_error(&s, name))?
            .ok_or_else(|| ApiError::NotFound {
                resource: R::RESOURCE.into(),
                name: name.into(),
            })?;
        let mut out = self.decode(&bytes)?;
        self.strategy.decorate(&mut out);
        Ok(out)
    }

    /// `rest.BeforeCreate`: namespace, PrepareForCreate, Validate (+ ObjectMeta), Canonicalize.
    fn before_create(&self, ns: &str, obj: &mut R) -> Result<(), ApiError> {
        let _span = tracing::info_span!("BeforeCreate", kind = R::KIND).entered();
        self.reconcile_namespace(ns, obj.meta_mut())?;
        self.strategy.prepare_for_create(obj);
        {
            let _span = tracing::info_span!("Validate", kind = R::KIND).entered();
            let mut v = self.strategy.validate(obj);
            validation::object_meta(obj.meta_mut(), self.strategy.namespace_scoped(), &mut v);
            Self::invalid(obj, v)?;
        }
        self.strategy.canonicalize(obj);
        Ok(())
    }

    /// Create, retrying a generated name up to [`GENERATE_NAME_ATTEMPTS`] times on a clash.
    pub async fn create(
        &self,
        ctx: Ctx,
        namespace: &str,
        obj: R,
        dry_run: bool,
    ) -> Result<R, ApiError> {
        let meta = obj.meta().cloned().unwrap_or_default();
        if meta.generate_name.is_empty() || !meta.name.is_empty() {
            return self.create_once(ctx, namespace, obj, dry_run).await;
        }
        for _ in 0..GENERATE_NAME_ATTEMPTS {
            match self.create_once(ctx, namespace, obj.clone(), dry_run).await {
                Err(ApiError::AlreadyExists { .. }) => continue,
                other => return other,
            }
        }
        Err(ApiError::AlreadyExists {
            resource: R::RESOURCE.into(),
            name: meta.generate_name.clone(),
            message: format!(
                "{} with generateName {:?} already exists, the server was not able to generate a unique name for the object",
                R::RESOURCE,
                meta.generate_name
            ),
        })
    }

    async fn create_once(
        &self,
        ctx: Ctx,
        namespace: &str,
        mut obj: R,
        dry_run: bool,
    ) -> Result<R, ApiError> {
        let ns = self
            .request_namespace(namespace, obj.meta_mut().namespace.as_str())?
            .to_string();
        {
            // FillObjectMetaSystemFields: whatever the client sent is overwritten.
            let m = obj.meta_mut();
            m.uid = uuid::Uuid::new_v4().to_string();
            m.creation_timestamp = Some(now());
            m.deletion_timestamp = None;
            m.deletion_grace_period_seconds = None;
            if m.name.is_empty() && !m.generate_name.is_empty() {
                m.name = self.strategy.generate_name(&m.generate_name);
            }
        }
        self.strategy.begin_create(&obj, dry_run)?;
        let result = self.create_stored(ctx, &ns, &mut obj, dry_run).await;
        self.strategy.finish_create(&obj, result.is_ok());
        let mut out = result?;
        self.strategy.after_create(&out, dry_run);
        self.strategy.decorate(&mut out);
        Ok(out)
    }

    async fn create_stored(
        &self,
        ctx: Ctx,
        ns: &str,
        obj: &mut R,
        dry_run: bool,
    ) -> Result<R, ApiError> {
        self.before_create(ns, obj)?;
        let name = obj.name().to_string();
        let key = self.key(ns, &name)?;
        let ttl = self.strategy.ttl_seconds(obj).unwrap_or(0);
        match self
            .storage
            .create(ctx.deadline, key.clone(), obj.encode_to_vec(), ttl, dry_run)
            .await
        {
            Ok(bytes) => self.decode(&bytes),
            Err(status) => {
                let mut err = self.storage_error(&status, &name);
                if let ApiError::AlreadyExists { message, .. } = &mut err {
                    // Say so when the name is held by an object on its way out.
                    if let Ok(Some(existing)) = self.storage.get(ctx.deadline, key, true).await
                        && self
                            .decode(&existing)
                            .ok()
                            .and_then(|e| e.meta().and_then(|m| m.deletion_timestamp))
                            .is_some()
                    {
                        *message = format!("object is being deleted: {message}");
                    }
                }
                Err(err)
            }
        }
    }

    /// Update with optimistic concurrency; see the module docs.
    pub async fn update(
        &self,
        ctx: Ctx,
        namespace: &str,
        obj: R,
        dry_run: bool,
    ) -> Result<R, ApiError> {
        let ns = self
            .request_namespace(namespace, obj.meta().map_or("", |m| m.namespace.as_str()))?
            .to_string();
        let name = obj.name().to_string();
        let key = self.key(&ns, &name)?;
        let uid = obj.meta().map(|m| m.uid.clone()).unwrap_or_default();
        let preconditions = (!uid.is_empty()).then_some(Preconditions {
            uid: Some(uid),
            resource_version: None,
        });
        // A conditional update also hands its resourceVersion to storage as a precondition:
        // the same check as `try_update` makes, but storage can then fail an update queued
        // behind a newer write without asking us (see storage-svc's `preconditions::never_again`).
        // Not with create-on-update, where a missing object must reach the update function.
        let rv = obj
            .meta()
            .map(|m| m.resource_version.clone())
            .unwrap_or_default();
        let mut update_preconditions = preconditions.clone();
        if !rv.is_empty() && !self.strategy.allow_create_on_update() {
            update_preconditions
                .get_or_insert_with(Preconditions::default)
                .resource_version = Some(rv);
        }
        let start = UpdateStart {
            key: key.clone(),
            preconditions: update_preconditions,
            ignore_not_found: self.strategy.allow_create_on_update(),
            dry_run,
            cached_object: None,
        };
        let mut creating = false;
        let end = self
            .storage
            .guaranteed_update(ctx.deadline, start, |state| {
                self.try_update(&ns, &obj, state, dry_run, &mut creating)
                    .map(|(o, ttl)| (o.encode_to_vec(), ttl))
            })
            .await
            .map_err(|s| match self.storage_error(&s, &name) {
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
        match end {
            UpdateEnd::Done(result) => {
                let mut out = self.decode(&result.object)?;
                if creating {
                    self.strategy.after_create(&out, dry_run);
                } else {
                    self.strategy.after_update(&out, dry_run);
                }
                self.strategy.decorate(&mut out);
                Ok(out)
            }
            UpdateEnd::Aborted(Abort::Api(e)) => Err(e),
            UpdateEnd::Aborted(Abort::DeleteNow(updated)) => {
                self.delete_without_finalizers(ctx, key, &name, preconditions, dry_run, updated)
                    .await
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
    fn try_update(
        &self,
        ns: &str,
        request: &R,
        state: StorageState<'_>,
        dry_run: bool,
        creating: &mut bool,
    ) -> Result<(R, i64), Abort<R>> {
        *creating = false;
        let name = request.name();
        let Some(existing_bytes) = state.object else {
            if !self.strategy.allow_create_on_update() {
                return Err(ApiError::NotFound {
                    resource: R::RESOURCE.into(),
                    name: name.into(),
                }
                .into());
            }
            // Create on update: fresh system fields, create hooks and checks.
            let mut obj = request.clone();
            let m = obj.meta_mut();
            m.uid = uuid::Uuid::new_v4().to_string();
            m.creation_timestamp = Some(now());
            m.deletion_timestamp = None;
            m.deletion_grace_period_seconds = None;
            m.resource_version.clear();
            self.strategy.begin_create(&obj, dry_run)?;
            let r = self.before_create(ns, &mut obj);
            self.strategy.finish_create(&obj, r.is_ok());
            r?;
            *creating = true;
            let ttl = self.strategy.ttl_seconds(&obj).unwrap_or(0);
            return Ok((obj, ttl));
        };
        let existing = self.decode(existing_bytes)?;
        let mut obj = request.clone();
        let new_rv = obj
            .meta()
            .map(|m| m.resource_version.clone())
            .unwrap_or_default();
        if new_rv.is_empty() {
            if !self.strategy.allow_unconditional_update() {
                return Err(ApiError::invalid(
                    R::KIND,
                    name,
                    vec![(
                        "metadata.resourceVersion".into(),
                        "Invalid value: 0: must be specified for an update".into(),
                    )],
                )
                .into());
            }
            obj.meta_mut().resource_version = state.resource_version.to_string();
        } else if new_rv != state.resource_version {
            return Err(ApiError::Conflict {
                resource: R::RESOURCE.into(),
                name: name.into(),
                message: MODIFIED.into(),
            }
            .into());
        }
        self.strategy.begin_update(&obj, &existing, dry_run)?;
        let r = self.before_update(ns, &mut obj, &existing);
        let r = r.map_err(Abort::Api).and_then(|()| {
            let (new_meta, old_meta) = (
                obj.meta().cloned().unwrap_or_default(),
                existing.meta().cloned().unwrap_or_default(),
            );
            if should_delete_during_update(&new_meta, &old_meta) {
                return Err(Abort::DeleteNow(obj.clone()));
            }
            Ok(())
        });
        self.strategy.finish_update(&obj, r.is_ok());
        r?;
        let ttl = self.strategy.ttl_seconds(&obj).unwrap_or(0);
        Ok((obj, ttl))
    }

    /// `rest.BeforeUpdate`: server-owned fields from the stored object, then validation.
    fn before_update(&self, ns: &str, obj: &mut R, existing: &R) -> Result<(), ApiError> {
        let _span = tracing::info_span!("BeforeUpdate", kind = R::KIND).entered();
        let old = existing.meta().cloned().unwrap_or_default();
        self.reconcile_namespace(ns, obj.meta_mut())?;
        obj.meta_mut().generation = old.generation;
        self.strategy.prepare_for_update(obj, existing);
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
            let _span = tracing::info_span!("Validate", kind = R::KIND).entered();
            let mut v = Vec::new();
            validation::object_meta(obj.meta_mut(), self.strategy.namespace_scoped(), &mut v);
            validation::object_meta_update(obj.meta_mut(), &old, &mut v);
            v.extend(self.strategy.validate_update(obj, existing));
            Self::invalid(obj, v)?;
        }
        self.strategy.canonicalize(obj);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_names_extend_the_base() {
        let n = generate_name("web-");
        assert_eq!(n.len(), 9);
        assert!(n.starts_with("web-"));
        assert!(n[4..].bytes().all(|b| SUFFIX_ALPHABET.contains(&b)));
        assert_ne!(generate_name("web-"), generate_name("web-"));
        assert_eq!(generate_name(&"a".repeat(100)).len(), 63);
    }
}
