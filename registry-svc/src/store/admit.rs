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
            gate: Some(admission.gate_for(&caller)),
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

impl<R: Resource> Store<R> {
    /// The request admission sees, of the caller in scope.
    fn admission_request<'a>(
        &'a self,
        operation: Operation,
        subresource: &'a str,
        ns: &'a str,
        name: &'a str,
        dry_run: bool,
        caller: &'a Caller,
    ) -> Request<'a> {
        let n = self.names();
        Request {
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
            gate: Some(self.storage.admission.gate_for(caller)),
        }
    }

    /// Mutating admission (webhooks) on `object`, before the strategy: what they change is
    /// taken in as the kind's object, the fields the server owns kept (upstream sets them
    /// after admission).
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn mutate(
        &self,
        operation: Operation,
        subresource: &str,
        ns: &str,
        name: &str,
        object: &mut R,
        old: Option<&R>,
        dry_run: bool,
    ) -> Result<(), ApiError> {
        let admission = self.storage.admission.clone();
        let caller = crate::store::caller().unwrap_or_else(Caller::internal);
        let request = self.admission_request(operation, subresource, ns, name, dry_run, &caller);
        if !admission.mutating_interested(&request) {
            return Ok(());
        }
        let json = object.as_json()?;
        let old_json = old.map(Resource::as_json).transpose()?;
        let Some(changed) = admission
            .mutate(&request, json, old_json.as_ref(), Some(&caller))
            .await?
        else {
            return Ok(());
        };
        let mut new = R::from_json(&changed)?;
        let kept = object.meta().cloned().unwrap_or_default();
        let m = new.meta_mut();
        m.name = kept.name;
        m.namespace = kept.namespace;
        m.uid = kept.uid;
        m.resource_version = kept.resource_version;
        m.creation_timestamp = kept.creation_timestamp;
        m.deletion_timestamp = kept.deletion_timestamp;
        m.deletion_grace_period_seconds = kept.deletion_grace_period_seconds;
        m.generation = kept.generation;
        // Entries admission left undecodable are put back as they were before it (upstream's
        // managed fields validating admission controller): a broken entry would fail every
        // later apply of the object.
        if crate::managed::entries::decode(&m.managed_fields).is_err() {
            m.managed_fields = kept.managed_fields;
        }
        self.strategy.default_object(&mut new);
        *object = new;
        Ok(())
    }

    /// The validating plugins that wait (webhooks, then quota), after [`Self::admit`]'s, on
    /// the same objects.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn admit_waiting(
        &self,
        operation: Operation,
        subresource: &str,
        ns: &str,
        name: &str,
        object: Option<&R>,
        old: Option<&R>,
        dry_run: bool,
    ) -> Result<(), ApiError> {
        let admission = self.storage.admission.clone();
        let caller = crate::store::caller().unwrap_or_else(Caller::internal);
        let request = self.admission_request(operation, subresource, ns, name, dry_run, &caller);
        if !admission.waiting_interested(&request) {
            return Ok(());
        }
        let json = object.map(Resource::as_json).transpose()?;
        let old_json = old.map(Resource::as_json).transpose()?;
        admission
            .validate_waiting(&request, json.as_ref(), old_json.as_ref(), Some(&caller))
            .await
    }
}
