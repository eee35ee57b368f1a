//! Delete (upstream's `Store.Delete` + `updateForGracefulDeletionAndFinalizers`): graceful
//! deletion, finalizers, propagation policy and preconditions.
//!
//! ```text
//! existing = Get
//! BeforeDelete(existing)            -> pending?  return (existing, deleted=false), no hooks
//! graceful || finalizers || GC finalizers change:
//!     GuaranteedUpdate(cached = existing): on each state, BeforeDelete again, then
//!         pending          -> abort "already deleting"     -> (existing, false), AfterDelete
//!         set GC finalizers; finalizers left -> markAsDeleting (if not graceful), write
//!         graceful         -> write the stamped object
//!         else             -> abort "delete now"
//!     finalizers left, or grace > 0  -> (updated, false)
//!     grace 0                        -> delete now (a missing object is fine)
//! delete now: storage Delete with the preconditions     -> (last state, true), AfterDelete
//! ```
//!
//! The whole decision is one span, `DeletionDecision`, with `graceful`, `grace_period_seconds`,
//! `pending`, `finalizers` and `deleted` attributes.

use kubestore_proto::{meta::v1::DeleteOptions, storage::v1::UpdateStart};
use tracing::{Instrument, field::Empty};

use crate::{
    admission::Operation,
    error::ApiError,
    resource::Resource,
    storage::UpdateEnd,
    store::finalizers::{gc_finalizers, mark_as_deleting},
    store::graceful::{before_delete, now, validate_options},
    store::{Ctx, Store},
};

/// Why the deletion update stopped without writing.
enum Stop {
    Api(ApiError),
    /// Another delete got there first: a graceful deletion is already running.
    AlreadyDeleting,
    /// Nothing to write: delete the object now.
    DeleteNow,
}

/// What the deletion update left behind.
struct Marked<R> {
    /// The object as written.
    out: R,
    /// Its resource version.
    rv: String,
    /// The grace period of the last graceful attempt.
    last_graceful: Option<i64>,
    /// Finalizers remain.
    pending_finalizers: bool,
}

impl<R: Resource> Store<R> {
    /// What a Delete does to `existing` (graceful or not, already pending), as
    /// [`before_delete`] decides, traced as upstream's `BeforeDelete`.
    fn before_delete(
        &self,
        existing: &mut R,
        options: &mut DeleteOptions,
    ) -> Result<crate::store::graceful::Decision, ApiError> {
        let _s = tracing::info_span!("BeforeDelete", kind = self.kind()).entered();
        before_delete(
            self.strategy.as_ref(),
            self.resource(),
            existing,
            options,
            now(),
        )
    }

    /// Deletes `namespace`/`name`; returns the object's last state and whether it is gone.
    pub async fn delete(
        &self,
        ctx: Ctx,
        namespace: &str,
        name: &str,
        options: Option<DeleteOptions>,
    ) -> Result<(R, bool), ApiError> {
        let span = tracing::info_span!(
            "DeletionDecision",
            kind = self.kind(),
            graceful = Empty,
            grace_period_seconds = Empty,
            pending = Empty,
            finalizers = Empty,
            deleted = Empty,
        );
        self.strategy.admit_delete(name)?;
        let mut options = options.unwrap_or_default();
        if !self.strategy.delete_finalizers().is_empty() {
            self.add_delete_finalizers(ctx.clone(), namespace, name, &mut options)
                .await?;
        }
        // In the request's scope: admission sees its caller.
        let scope = ctx.clone();
        crate::store::scoped(&scope, async {
            // First from any copy (the watch cache's: no etcd read), then, if that copy turns
            // out stale, again from a consistent read (see `delete_inner`).
            match self
                .delete_inner(ctx.clone(), namespace, name, options.clone(), false)
                .await
            {
                Err(Retry::Consistent) => self
                    .delete_inner(ctx, namespace, name, options, true)
                    .await
                    .map_err(Retry::into_api),
                other => other.map_err(Retry::into_api),
            }
        })
        .instrument(span)
        .await
    }

    /// A kind whose deletion first needs work done (a definition's objects deleted) gets the
    /// strategy's finalizers on its first delete, before the deletion itself, under a UID
    /// precondition: the definition's `customresourcecleanup` finalizer, added by upstream's
    /// `customresourcedefinition` REST Delete. The deletion that follows then only marks it.
    async fn add_delete_finalizers(
        &self,
        ctx: Ctx,
        namespace: &str,
        name: &str,
        options: &mut DeleteOptions,
    ) -> Result<(), ApiError> {
        let current = self.get(ctx.clone(), namespace, name).await?;
        let meta = current.meta().cloned().unwrap_or_default();
        if let Some(uid) = options.preconditions.as_ref().and_then(|p| p.uid.as_ref())
            && *uid != meta.uid
        {
            return Err(ApiError::Conflict {
                resource: self.resource().into(),
                name: name.into(),
                message: format!(
                    "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                    meta.uid
                ),
            });
        }
        let missing: Vec<&str> = self
            .strategy
            .delete_finalizers()
            .iter()
            .copied()
            .filter(|f| !meta.finalizers.iter().any(|have| have == f))
            .collect();
        if meta.deletion_timestamp.is_none() && !missing.is_empty() && !options.dry_run {
            // Only the finalizers are written, without the kind's validation (upstream's
            // `customresourcedefinition` REST Delete updates storage directly): a definition
            // a newer rule would refuse must still be deletable.
            let ns = self.request_namespace(namespace, "")?;
            let start = UpdateStart {
                key: self.key(ns, name)?,
                preconditions: Some(kubestore_proto::meta::v1::Preconditions {
                    uid: Some(meta.uid.clone()),
                    resource_version: None,
                }),
                ignore_not_found: false,
                dry_run: false,
                cached_object: None,
            };
            let end = self
                .storage
                .guaranteed_update(ctx.deadline, start, |state| {
                    let bytes = state.object.ok_or(ApiError::NotFound {
                        resource: self.resource().into(),
                        name: name.into(),
                    })?;
                    let mut obj = self.decode_stored(bytes)?;
                    let m = obj.meta_mut();
                    for f in &missing {
                        if !m.finalizers.iter().any(|have| have == f) {
                            m.finalizers.push(f.to_string());
                        }
                    }
                    let ttl = self.strategy.ttl_seconds(&obj).unwrap_or(0);
                    Ok((obj.encode_to_vec(), ttl))
                })
                .await
                .map_err(|s| self.storage_error(&s, name))?;
            if let UpdateEnd::Aborted(e) = end {
                return Err(e);
            }
        }
        options
            .preconditions
            .get_or_insert_with(Default::default)
            .uid = Some(meta.uid);
        Ok(())
    }

    /// One attempt. With `consistent` false, the object is read from any copy storage has (its
    /// watch cache's, without reading etcd), as updates start from the cached object: a
    /// decision made on it is safe because the final delete then carries that copy's
    /// resourceVersion as a precondition, so a copy that was stale fails the delete, and the
    /// whole decision is made again on a consistent read ([`Retry::Consistent`]). A copy that
    /// says "not found" is never believed: the consistent read decides.
    async fn delete_inner(
        &self,
        ctx: Ctx,
        namespace: &str,
        name: &str,
        mut options: DeleteOptions,
        consistent: bool,
    ) -> Result<(R, bool), Retry> {
        let span = tracing::Span::current();
        let ns = self.request_namespace(namespace, "")?;
        let key = self.key(ns, name)?;
        if let Some(e) = self.impossible_name(name) {
            return Err(e.into());
        }
        validate_options(self.kind(), name, &options)?;
        let dry_run = options.dry_run;
        let read = self
            .storage
            .get_at(
                ctx.deadline,
                key.clone(),
                true,
                if consistent { "" } else { "0" },
            )
            .await
            .map_err(|s| self.storage_error(&s, name))?;
        let existing_bytes = match read {
            Some(b) => b,
            None if !consistent => return Err(Retry::Consistent),
            None => {
                return Err(Retry::Api(ApiError::NotFound {
                    resource: self.resource().into(),
                    name: name.into(),
                }));
            }
        };
        let mut existing = self.decode(&existing_bytes)?;
        let original = existing.clone();
        // Upstream's deleteValidation: admission sees the object as read, before the decision.
        self.admit(
            Operation::Delete,
            "",
            ns,
            name,
            None,
            Some(&original),
            dry_run,
        )?;
        self.admit_waiting(
            Operation::Delete,
            "",
            ns,
            name,
            None,
            Some(&original),
            dry_run,
        )
        .await?;
        let mut preconditions = options.preconditions.clone();

        let decision = self.before_delete(&mut existing, &mut options)?;
        span.record("graceful", decision.graceful);
        span.record("pending", decision.pending);
        if let Some(g) = options.grace_period_seconds {
            span.record("grace_period_seconds", g);
        }
        if decision.pending {
            // A graceful deletion already runs and this request would not shorten it.
            span.record("deleted", false);
            let mut out = original;
            self.strategy.decorate(&mut out);
            return Ok((out, false));
        }
        let meta = existing.meta().cloned().unwrap_or_default();
        let pending_finalizers = !meta.finalizers.is_empty() || self.strategy.held(&existing);
        let gc_change = gc_finalizers(self.strategy.gc_policy(), &meta, &options).is_some();

        let mut ignore_not_found = false;
        let mut last_existing = None;
        let mut cached = Some(existing_bytes);
        if decision.graceful || pending_finalizers || gc_change {
            match self
                .mark_for_deletion(ctx.clone(), &key, name, &options, cached.take())
                .await?
            {
                Err(Stop::Api(e)) => return Err(e.into()),
                Err(Stop::AlreadyDeleting) => {
                    span.record("pending", true);
                    span.record("deleted", false);
                    self.strategy.after_delete(&original, dry_run);
                    let mut out = original;
                    self.strategy.decorate(&mut out);
                    return Ok((out, false));
                }
                Err(Stop::DeleteNow) => {}
                Ok(marked) => {
                    span.record(
                        "finalizers",
                        format!(
                            "{:?}",
                            marked
                                .out
                                .meta()
                                .map(|m| m.finalizers.clone())
                                .unwrap_or_default()
                        )
                        .as_str(),
                    );
                    if marked.pending_finalizers || marked.last_graceful.unwrap_or(0) > 0 {
                        span.record("deleted", false);
                        let mut out = marked.out;
                        self.strategy.decorate(&mut out);
                        return Ok((out, false));
                    }
                    // Graceful with grace 0: the update stamped it; now delete it.
                    if dry_run {
                        span.record("deleted", true);
                        return Ok((marked.out, true));
                    }
                    ignore_not_found = true;
                    if let Some(p) = preconditions.as_mut()
                        && p.resource_version.is_some()
                    {
                        p.resource_version = Some(marked.rv.clone());
                    }
                    cached = Some(marked.out.encode_to_vec());
                    last_existing = Some(marked.out);
                }
            }
        }
        // Decided on a copy that may be stale: delete only that very revision.
        let mut guarded = false;
        if !consistent && last_existing.is_none() {
            let p = preconditions.get_or_insert_with(Default::default);
            if p.resource_version.is_none() {
                p.resource_version = Some(meta.resource_version.clone());
                guarded = true;
            }
        }
        let result = self
            .storage
            .delete(ctx.deadline, key, preconditions, dry_run, cached)
            .await;
        let mut out = match result {
            Ok(bytes) => self.decode(&bytes)?,
            Err(s) => match (self.storage_error(&s, name), last_existing) {
                (ApiError::NotFound { .. }, Some(last)) if ignore_not_found => last,
                (ApiError::Conflict { .. } | ApiError::NotFound { .. }, _) if guarded => {
                    return Err(Retry::Consistent);
                }
                (e, _) => return Err(e.into()),
            },
        };
        span.record("deleted", true);
        self.strategy.after_delete(&out, dry_run);
        self.strategy.decorate(&mut out);
        Ok((out, true))
    }

    /// One GuaranteedUpdate that stamps deletion fields and GC finalizers (upstream's
    /// `updateForGracefulDeletionAndFinalizers`). The outer `Result` is a storage/transport
    /// error; the inner one says why nothing was written.
    async fn mark_for_deletion(
        &self,
        ctx: Ctx,
        key: &str,
        name: &str,
        options: &DeleteOptions,
        cached: Option<Vec<u8>>,
    ) -> Result<Result<Marked<R>, Stop>, ApiError> {
        let start = UpdateStart {
            key: key.to_string(),
            preconditions: options.preconditions.clone(),
            ignore_not_found: false,
            dry_run: options.dry_run,
            cached_object: cached,
        };
        let mut last_graceful = None;
        let mut pending_finalizers = false;
        let end = self
            .storage
            .guaranteed_update(ctx.deadline, start, |state| {
                let bytes = state.object.ok_or(Stop::Api(ApiError::NotFound {
                    resource: self.resource().into(),
                    name: name.into(),
                }))?;
                let mut existing = self.decode(bytes).map_err(Stop::Api)?;
                // Each attempt starts from the caller's options, as a retry of the request would.
                let mut opts = options.clone();
                let decision = self
                    .before_delete(&mut existing, &mut opts)
                    .map_err(Stop::Api)?;
                if decision.pending {
                    return Err(Stop::AlreadyDeleting);
                }
                let meta = existing.meta_mut();
                if let Some(f) = gc_finalizers(self.strategy.gc_policy(), meta, &opts) {
                    meta.finalizers = f;
                }
                pending_finalizers = !meta.finalizers.is_empty() || self.strategy.held(&existing);
                if decision.graceful {
                    last_graceful = opts.grace_period_seconds;
                } else if pending_finalizers {
                    mark_as_deleting(existing.meta_mut(), now());
                    self.strategy.mark_deleting(&mut existing);
                } else {
                    return Err(Stop::DeleteNow);
                }
                let ttl = self.strategy.ttl_seconds(&existing).unwrap_or(0);
                Ok((existing.encode_to_vec(), ttl))
            })
            .await
            .map_err(|s| self.storage_error(&s, name))?;
        Ok(match end {
            UpdateEnd::Aborted(stop) => Err(stop),
            UpdateEnd::Done(result) => Ok(Marked {
                out: self.decode(&result.object)?,
                rv: result.resource_version,
                last_graceful,
                pending_finalizers,
            }),
        })
    }
}

/// Why an attempt of [`Store::delete`] ended without an answer.
enum Retry {
    /// The copy it decided on was stale (or said "not found"): decide again on a consistent
    /// read.
    Consistent,
    /// The answer.
    Api(ApiError),
}

impl From<ApiError> for Retry {
    fn from(e: ApiError) -> Self {
        Self::Api(e)
    }
}

impl Retry {
    fn into_api(self) -> ApiError {
        match self {
            Self::Api(e) => e,
            // Only the first attempt asks for another.
            Self::Consistent => {
                ApiError::Internal("a consistent delete asked to be retried".into())
            }
        }
    }
}
