//! Per-kind behaviour, upstream's RESTCreateStrategy + RESTUpdateStrategy +
//! RESTDeleteStrategy (+ RESTGracefulDeleteStrategy) and the Store's per-kind hooks, as one
//! trait with upstream's defaults. A kind overrides only what differs.
//!
//! Hooks run in upstream's order (see `store`): create: `begin_create` -> ... ->
//! `finish_create(true)` -> `after_create` -> `decorate`; update: `begin_update` ->
//! `finish_update(true)` -> `after_update` -> `decorate`; delete: `after_delete` when the object
//! is gone (or found already terminating inside the update), never on the early "pending" path.
//! A failed step after `begin_*` calls `finish_*(false)`. Update hooks may run once per storage
//! retry, as upstream's do.
//!
//! `default_object` (upstream's v1 `SetDefaults_*`) runs before all of them on the request's
//! object, and on every object decoded from storage (`Store::decode`, and List/Watch's
//! pass-through): upstream's storage codec defaults what it decodes, so an object written
//! before a default existed (or by another writer) is served, compared and updated as if it had
//! been written with it.

use kubestore_apimachinery::table::{self, Column};
use kubestore_proto::meta::v1::DeleteOptions;
use serde_json::Value;

use crate::{
    error::ApiError,
    resource::{MetaExt, Resource},
    selectors::{METADATA_FIELDS, SelectableField},
    store::finalizers::GcPolicy,
    violations::Violations,
};

/// The strategy of one kind.
pub trait Strategy<R: Resource>: Send + Sync + 'static {
    /// Whether objects live in a namespace.
    fn namespace_scoped(&self) -> bool {
        true
    }

    /// Upstream's v1 defaulting of the kind (`SetDefaults_<Kind>` in
    /// `pkg/apis/core/v1/defaults.go`, and the defaulting done by its v1 conversion): fills what
    /// the client (or an older writer) left unset. Applied to the request's object before
    /// anything else (`prepare_for_create`, `prepare_for_update`, validation), and to every
    /// object decoded from storage: Get, the stored object of Update/UpdateStatus/Delete, List
    /// and Watch. Must be idempotent, and return whether it changed `obj`: the List/Watch
    /// pass-through re-encodes only the objects it changed.
    fn default_object(&self, _obj: &mut R) -> bool {
        false
    }

    /// Whether `default_object` may change anything. A kind that overrides `default_object`
    /// must say so: List and Watch otherwise pass storage's encoded objects through without
    /// decoding them (`passthrough`).
    fn has_defaults(&self) -> bool {
        false
    }

    /// Clears or sets fields the server owns before create (status, generation).
    fn prepare_for_create(&self, _obj: &mut R) {}

    /// The rule of the kind's names, giving the reason a name breaks it: a DNS subdomain
    /// (upstream's `NameIsDNSSubdomain`) unless the kind says otherwise (the RBAC kinds take any
    /// path segment).
    fn name_rule(&self) -> fn(&str) -> Option<String> {
        crate::validation::dns1123_subdomain
    }

    /// Kind-specific validation on create.
    fn validate(&self, _obj: &R) -> Violations {
        Violations::new()
    }

    /// Normalises the object after validation.
    fn canonicalize(&self, _obj: &mut R) {}

    /// Whether Update may create a missing object.
    fn allow_create_on_update(&self) -> bool {
        false
    }

    /// Whether an Update without resourceVersion overwrites whatever is stored.
    fn allow_unconditional_update(&self) -> bool {
        true
    }

    /// Copies server-owned fields from `old` into `new` before validation.
    fn prepare_for_update(&self, _new: &mut R, _old: &R) {}

    /// Kind-specific validation on update.
    fn validate_update(&self, _new: &R, _old: &R) -> Violations {
        Violations::new()
    }

    /// Whether the kind implements graceful deletion at all (upstream: the strategy implements
    /// `RESTGracefulDeleteStrategy`). Without it, a delete is immediate unless finalizers remain,
    /// whatever deletionTimestamp the object has.
    fn supports_graceful_delete(&self) -> bool {
        false
    }

    /// Decides the grace period of a first delete: sets `options.grace_period_seconds` and
    /// returns whether the delete is graceful. Only called when `supports_graceful_delete`.
    fn check_graceful_delete(&self, _obj: &R, _options: &mut DeleteOptions) -> bool {
        false
    }

    /// A name for an object created with `generateName` = `base` (upstream's
    /// `NameGenerator.GenerateName`): by default `base` plus 5 random characters.
    fn generate_name(&self, base: &str) -> String {
        crate::names::generate_name(base)
    }

    /// TTL in seconds for the stored object (upstream's TTLFunc), on create and every update
    /// (etcd drops the lease of a key written without one).
    fn ttl_seconds(&self, _obj: &R) -> Option<i64> {
        None
    }

    /// Finalizers the first delete adds before deleting (a definition's cleanup finalizer: its
    /// objects go first). None by default.
    fn delete_finalizers(&self) -> &'static [&'static str] {
        &[]
    }

    /// Whether a finished Delete answers with the deleted object rather than a `Status`
    /// (upstream's `ReturnDeletedObject`: Pods, Namespaces).
    fn return_deleted_object(&self) -> bool {
        false
    }

    /// Whether DeleteCollection is served (not for Namespaces, as upstream).
    fn supports_delete_collection(&self) -> bool {
        true
    }

    /// Default garbage-collection policy.
    fn gc_policy(&self) -> GcPolicy {
        GcPolicy::DeleteDependents
    }

    /// The fields a field selector may name, with where they are in the encoded object
    /// (upstream's `GetAttrs`/`ToSelectableFields`). Every kind: `metadata.name` and
    /// `metadata.namespace`.
    fn selectable_fields(&self) -> &'static [SelectableField] {
        METADATA_FIELDS
    }

    /// Whether equal objects of the kind may encode to different bytes (a message holding a
    /// `google.protobuf.Struct`, whose fields are a hash map): updates then compare decoded
    /// objects, so that an unchanged one is not written again.
    fn unordered_encoding(&self) -> bool {
        false
    }

    /// Selectable fields inside a custom object's JSON (a definition's `selectableFields`).
    fn json_fields(&self) -> Vec<crate::selectors::JsonField> {
        Vec::new()
    }

    /// Whether the kind has a status subresource (`UpdateStatus`).
    fn has_status(&self) -> bool {
        false
    }

    /// The kind's structured-merge-diff type, for managed fields and server-side apply
    /// (`managed`): None for a built-in kind, whose type the Store reads from its message's
    /// descriptors; a custom kind's comes from its definition's schema.
    fn field_type(&self) -> Option<std::sync::Arc<kubestore_apimachinery::smd::ParseableType>> {
        None
    }

    /// Status update (upstream's status strategy `PrepareForUpdate`): everything but what the
    /// status subresource may write comes from `old`.
    fn prepare_for_status_update(&self, new: &mut R, old: &R) {
        *new = old.clone();
    }

    /// Whether the kind has a `finalize` subresource (Namespaces).
    fn has_finalize(&self) -> bool {
        false
    }

    /// A `finalize` update: only what it may write (spec.finalizers) comes from `new`.
    fn prepare_for_finalize_update(&self, new: &mut R, old: &R) {
        *new = old.clone();
    }

    /// Whether something of the kind's own, beyond metadata.finalizers, holds the object when
    /// it is deleted (a Namespace's spec.finalizers): it is then marked deleting and kept,
    /// as with finalizers, until that is gone.
    fn held(&self, _obj: &R) -> bool {
        false
    }

    /// Called on an object as its deletion is marked (a Namespace turns Terminating).
    fn mark_deleting(&self, _obj: &mut R) {}

    /// Kind-specific validation of a status update.
    fn validate_status_update(&self, _new: &R, _old: &R) -> Violations {
        Violations::new()
    }

    /// Refuses the deletion of `name` before anything is read (upstream's admission of a
    /// delete: NamespaceLifecycle keeps the system namespaces).
    fn admit_delete(&self, _name: &str) -> Result<(), ApiError> {
        Ok(())
    }

    /// Hook before create; an error aborts the create (and `finish_create` is not called).
    fn begin_create(&self, _obj: &R, _dry_run: bool) -> Result<(), ApiError> {
        Ok(())
    }
    /// Hook after the create attempt, with its success.
    fn finish_create(&self, _obj: &R, _success: bool) {}
    /// Hook after a successful create.
    fn after_create(&self, _obj: &R, _dry_run: bool) {}
    /// Hook before update; an error aborts the update.
    fn begin_update(&self, _new: &R, _old: &R, _dry_run: bool) -> Result<(), ApiError> {
        Ok(())
    }
    /// Hook after the update attempt, with its success.
    fn finish_update(&self, _obj: &R, _success: bool) {}
    /// Hook after a successful update.
    fn after_update(&self, _obj: &R, _dry_run: bool) {}
    /// Hook after a delete removed the object (runs in dry run too, as upstream).
    fn after_delete(&self, _obj: &R, _dry_run: bool) {}
    /// Last touch on every object returned to a client.
    fn decorate(&self, _obj: &mut R) {}
    /// The columns of the kind's Table, as upstream's printer of the kind has them
    /// (`pkg/printers/internalversion`); by default upstream's default table convertor's Name
    /// and Created At.
    fn columns(&self) -> Vec<Column> {
        table::default_columns()
    }
    /// One object's cells, in `columns`' order (`now`: seconds since the epoch, for ages).
    fn cells(&self, obj: &R, _now: i64) -> Vec<Value> {
        table::default_cells(obj.name(), created(obj))
    }
    /// The conditions of the object's Table row (upstream's `TableRow.conditions`: a finished
    /// pod's `Completed`), if any.
    fn row_conditions(&self, _obj: &R) -> Option<Value> {
        None
    }
    /// Whether `decorate` changes objects. A kind that overrides `decorate` must say so: List
    /// and Watch otherwise pass storage's encoded objects through without decoding them
    /// (`passthrough`).
    fn has_decorator(&self) -> bool {
        false
    }
}

/// When `obj` was created, in seconds since the epoch.
pub fn created<R: Resource>(obj: &R) -> Option<i64> {
    obj.meta()
        .and_then(|m| m.creation_timestamp.as_ref())
        .map(|t| t.seconds)
}
