//! Get (upstream's `Store.Get`).

use crate::{
    error::ApiError,
    resource::Resource,
    store::{Ctx, Store},
};

impl<R: Resource> Store<R> {
    /// Get.
    pub async fn get(&self, ctx: Ctx, namespace: &str, name: &str) -> Result<R, ApiError> {
        let ns = self.request_namespace(namespace, "")?;
        let key = self.key(ns, name)?;
        if let Some(e) = self.impossible_name(name) {
            return Err(e);
        }
        let bytes = self
            .storage
            .get(ctx.deadline, key, false)
            .await
            .map_err(|s| self.storage_error(&s, name))?
            .ok_or_else(|| ApiError::NotFound {
                resource: self.resource().into(),
                name: name.into(),
            })?;
        let mut out = self.decode(&bytes)?;
        self.strategy.decorate(&mut out);
        Ok(out)
    }
}
