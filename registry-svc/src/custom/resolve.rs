//! Which served kind and version a request for a custom object names: the kinds this replica
//! follows, and, for one it does not know yet, a read of its definition (another replica may
//! have established it a moment ago). The catalog's custom provider and the gRPC
//! `CustomObjects` service both resolve through [`Resolver`].

use std::sync::Arc;

use kubestore_proto::apiextensions::v1::CustomResourceDefinition;

use crate::{
    custom::kinds::{CustomKinds, ServedKind, not_found},
    error::ApiError,
    store::{Ctx, Store},
};

/// The custom kinds served: the definitions' Store and the kinds built from them.
#[derive(Clone)]
pub struct Resolver {
    /// The definitions' Store.
    pub definitions: Store<CustomResourceDefinition>,
    /// The kinds served.
    pub kinds: Arc<CustomKinds>,
    /// Raised on shutdown: watches end with UNAVAILABLE.
    pub stop: tokio::sync::watch::Receiver<bool>,
}

/// What a custom-object request names.
pub(crate) struct Target<'a> {
    pub(crate) group: &'a str,
    pub(crate) version: &'a str,
    pub(crate) plural: &'a str,
    pub(crate) namespace: &'a str,
}

impl Resolver {
    /// The served kind and version a request names, with its namespace checked against the
    /// kind's scope (`collection`: List, Watch and DeleteCollection may leave a namespaced
    /// kind's namespace empty).
    ///
    /// A kind or version this replica does not know yet is looked up in storage (a consistent
    /// read of its definition, `<plural>.<group>`) before it is refused: the definitions watch
    /// may lag the write that established it, and a client that saw `Established=True` (from
    /// any replica) must be served at once, not get a NOT_FOUND it cannot tell from a typo.
    pub(crate) async fn resolve(
        &self,
        ctx: &Ctx,
        t: &Target<'_>,
        collection: bool,
    ) -> Result<(Arc<ServedKind>, String), ApiError> {
        let known = self
            .kinds
            .get(t.group, t.plural)
            .filter(|k| k.version(t.version).is_ok());
        let kind = match known {
            Some(kind) => kind,
            None => {
                self.catch_up(ctx, t).await?;
                self.kinds
                    .get(t.group, t.plural)
                    .ok_or_else(|| not_found(t.group, t.version, t.plural))?
            }
        };
        kind.version(t.version)?;
        if !kind.namespaced && !t.namespace.is_empty() {
            return Err(ApiError::NotFound {
                resource: format!("{}/{}/{}", t.group, t.version, t.plural),
                name: format!("(cluster-scoped; no namespace {:?})", t.namespace),
            });
        }
        if kind.namespaced && t.namespace.is_empty() && !collection {
            return Err(ApiError::BadRequest(format!(
                "{}.{} is namespaced: the request needs a namespace",
                t.plural, t.group
            )));
        }
        Ok((kind, t.version.to_string()))
    }

    /// Reads the definition a request names from storage and takes it in (a definition the
    /// watch has not brought yet). A name that cannot be a definition's, or one that is not
    /// there, leaves the kinds as they are: the caller's NOT_FOUND follows.
    ///
    /// A miss costs one consistent read of one definition (served by storage-svc's watch cache
    /// once fresh), as a Get of a missing object costs one, and never a rebuild when the
    /// definition is the one held (`CustomKinds::apply` compares uid and resourceVersion).
    /// The read itself stays: answering from what the definitions watch has seen would need
    /// to know the watch is current, and knowing that takes asking etcd its revision, a round
    /// trip like this read; without it, a client that saw `Established=True` on another
    /// replica could get a NOT_FOUND here it cannot tell from a typo.
    async fn catch_up(&self, ctx: &Ctx, t: &Target<'_>) -> Result<(), ApiError> {
        if t.group.is_empty() || t.plural.is_empty() {
            return Ok(());
        }
        match self
            .definitions
            .get(ctx.clone(), "", &format!("{}.{}", t.plural, t.group))
            .await
        {
            Ok(crd) => {
                self.kinds.apply(&crd);
                Ok(())
            }
            Err(ApiError::NotFound { .. } | ApiError::BadRequest(_) | ApiError::Invalid { .. }) => {
                Ok(())
            }
            Err(e) => Err(e),
        }
    }
}
