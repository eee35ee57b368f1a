//! Where the Store calls admission (`crate::admission`): once per write, after the strategy
//! validated it and before storage sees it, for every verb that writes (create; update, patch
//! and subresources inside the read-modify-write, on the object that attempt replaces; delete,
//! on the stored object). The request's caller comes from the scope the Store's verbs set
//! (`store::scoped`); the registry's own writes are admitted as its internal user.

use crate::{
    admission::{Objects, Operation, Request},
    authz::Caller,
    error::ApiError,
    resource::Resource,
    store::Store,
};

impl<R: Resource> Store<R> {
    /// Admission's validating phase for `operation` on `object` (none on delete) replacing
    /// `old` (none on create), named `ns`/`name`, of `subresource` ("" for the object).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn admit(
        &self,
        operation: Operation,
        subresource: &str,
        ns: &str,
        name: &str,
        object: Option<&R>,
        old: Option<&R>,
        dry_run: bool,
    ) -> Result<(), ApiError> {
        let admission = &self.storage.admission;
        let caller = crate::store::caller().unwrap_or_else(Caller::internal);
        let n = self.names();
        let request = Request {
            operation,
            group: &n.group,
            version: &n.version,
            resource: &n.plural,
            subresource,
            kind: &n.kind,
            namespace: ns,
            name,
            dry_run,
            user: &caller.user,
        };
        if !admission.interested(&request) {
            return Ok(());
        }
        // The JSON views only when a plugin asks for them.
        let make = || {
            Ok((
                object.map(Resource::as_json).transpose()?,
                old.map(Resource::as_json).transpose()?,
            ))
        };
        admission.validate(&request, &Objects::new(&make), Some(&caller))
    }
}
