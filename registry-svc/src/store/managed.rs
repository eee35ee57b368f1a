//! Managed fields in the Store (`crate::managed`): every write's `metadata.managedFields`
//! ([`Store::track`], upstream's `FieldManager.UpdateNoErrors` in its handlers) and the merge
//! of a server-side apply ([`Store::applied`], upstream's apply patcher), on the kind's field
//! manager, built once per Store from its strategy's type or its message's descriptors.
//!
//! Work on large objects runs off the async workers (`offload`), as a patch's does.

use kubestore_proto::meta::v1::ManagedFieldsEntry;

use crate::{
    error::ApiError,
    managed::{self, ApplyError, FieldManager, Writer},
    resource::{MetaExt, Resource},
    store::{
        Store,
        graceful::now,
        update::{Apply, Part},
    },
};

impl<R: Resource> Store<R> {
    /// The kind's field manager; None when its type cannot be built (its objects are then
    /// written without managed fields, and cannot be applied).
    pub fn field_manager(&self) -> Option<&FieldManager> {
        self.fields
            .get_or_init(|| {
                let ty = match self.strategy.field_type() {
                    Some(t) => Ok(t),
                    None => managed::types::builtin(
                        crate::resource::codec().descriptors(),
                        &R::message_name(),
                    ),
                };
                match ty {
                    Ok(t) => Some(FieldManager::new(t)),
                    Err(e) => {
                        tracing::warn!(kind = self.kind(), error = %e, "no field type for the kind: its objects keep no managed fields");
                        None
                    }
                }
            })
            .as_ref()
    }

    /// The API version managed fields name (`v1`, `example.com/v1`).
    fn api_version(&self) -> String {
        let n = self.names();
        if n.group.is_empty() {
            n.version.clone()
        } else {
            format!("{}/{}", n.group, n.version)
        }
    }

    /// Sets `obj`'s managed fields for its write by `manager` through `part` over `live`
    /// (`None`: a create). Never fails the write for the fields' sake: entries that cannot be
    /// computed are dropped and the failure logged (upstream's `UpdateNoErrors`); only the
    /// offload's refusal (too busy, past the deadline) is an error.
    pub(crate) fn track(
        &self,
        live: Option<&R>,
        obj: &mut R,
        manager: &str,
        part: Part,
    ) -> Result<(), ApiError> {
        let Some(fm) = self.field_manager() else {
            return Ok(());
        };
        let api_version = self.api_version();
        let w = Writer {
            manager,
            api_version: &api_version,
            kind: self.kind(),
            subresource: part.subresource(),
        };
        let size = obj.encoded_len() + live.map_or(0, |l| l.encoded_len());
        let computed = crate::offload::run(size, crate::store::deadline(), || {
            Ok((|| -> Result<Vec<ManagedFieldsEntry>, String> {
                let new = obj.as_json().map_err(|e| e.to_string())?;
                let reset =
                    managed::reset_fields(part.subresource(), self.strategy.has_status(), &new);
                let live_json = live
                    .map(|l| l.as_json())
                    .transpose()
                    .map_err(|e| e.to_string())?;
                let live_entries = live
                    .and_then(|l| l.meta())
                    .map_or(&[][..], |m| &m.managed_fields[..]);
                let new_entries = obj.meta().map_or(&[][..], |m| &m.managed_fields[..]);
                fm.update(
                    live_json.as_ref().map(|v| (v, live_entries)),
                    &new,
                    new_entries,
                    w,
                    &reset,
                    now(),
                )
            })())
        })?;
        match computed {
            Ok(entries) => obj.meta_mut().managed_fields = entries,
            Err(e) => {
                tracing::warn!(kind = self.kind(), name = obj.name(), error = %e, "managed fields not computed; the object is written without them");
                obj.meta_mut().managed_fields.clear();
            }
        }
        Ok(())
    }

    /// `apply`'s configuration, a server-side apply's, applied by `manager` through `part` to
    /// `live` (`None`: the object is created): the object to write, its managed fields set.
    pub(crate) fn applied(
        &self,
        live: Option<&R>,
        apply: &Apply<'_>,
        manager: &str,
        part: Part,
        name: &str,
    ) -> Result<R, ApiError> {
        let fm = self.field_manager().ok_or_else(|| {
            ApiError::UnsupportedMediaType(format!(
                "{} cannot be applied: the server has no schema for it",
                self.resource()
            ))
        })?;
        let api_version = self.api_version();
        let w = Writer {
            manager,
            api_version: &api_version,
            kind: self.kind(),
            subresource: part.subresource(),
        };
        let reset =
            managed::reset_fields(part.subresource(), self.strategy.has_status(), apply.config);
        let size = live.map_or(0, |l| l.encoded_len()) + apply.body_bytes;
        crate::offload::run(size, crate::store::deadline(), || {
            let live_json = live.map(|l| l.as_json()).transpose()?;
            let live_entries = live
                .and_then(|l| l.meta())
                .map_or(&[][..], |m| &m.managed_fields[..]);
            let (merged, entries) = fm
                .apply(
                    live_json.as_ref().map(|v| (v, live_entries)),
                    apply.config,
                    w,
                    apply.force,
                    &reset,
                    now(),
                )
                .map_err(|e| match e {
                    ApplyError::Conflicts(e) | ApplyError::Api(e) => e,
                    ApplyError::Invalid(errors) => ApiError::invalid(self.kind(), name, errors),
                })?;
            let mut obj = R::from_json(&merged)?;
            obj.meta_mut().managed_fields = entries;
            Ok(obj)
        })
    }
}
