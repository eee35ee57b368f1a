//! DeleteCollection (upstream's `Store.DeleteCollection`): list with the caller's selectors,
//! then the ordinary Delete, with the caller's options, on each object listed, so graceful
//! deletion, finalizers and preconditions apply per object.
//!
//! As upstream: not atomic (an error stops it, with earlier objects already deleted); an object
//! that is already gone (NotFound) is skipped, which makes concurrent DeleteCollections safe; a
//! `limit` processes that one page only (its continue token is returned), otherwise every page
//! is followed, pages of [`PAGE_SIZE`], all read at the first page's revision. Deviation: the
//! objects are deleted one after another (upstream's default of one worker), and the list
//! returned holds each object as its Delete left it (marked, for a graceful deletion), or as
//! listed when it was already gone.

use kubestore_proto::meta::v1::{DeleteOptions, ListMeta, ListOptions};

use crate::{
    error::ApiError,
    resource::Resource,
    store::graceful::validate_options,
    store::{Ctx, Store},
};

/// Objects listed per page (upstream's `deleteCollectionPageSize`).
pub const PAGE_SIZE: i64 = 10_000;

impl<R: Resource> Store<R> {
    /// DeleteCollection; see the module docs.
    pub async fn delete_collection(
        &self,
        ctx: Ctx,
        namespace: &str,
        list_options: Option<ListOptions>,
        options: Option<DeleteOptions>,
    ) -> Result<(ListMeta, Vec<R>), ApiError> {
        if !self.strategy.supports_delete_collection() {
            return Err(ApiError::MethodNotSupported(format!(
                "deletecollection is not supported on resources of kind {:?}",
                self.resource()
            )));
        }
        let mut list_options = list_options.unwrap_or_default();
        let options = options.unwrap_or_default();
        // Bad options fail before anything is deleted.
        validate_options(self.kind(), "", &options)?;
        let one_page = list_options.limit > 0;
        if !one_page {
            list_options.limit = PAGE_SIZE;
        }
        let mut first: Option<ListMeta> = None;
        let mut out = Vec::new();
        loop {
            let (meta, items) = self
                .list(ctx.clone(), namespace, Some(list_options.clone()))
                .await?;
            for item in items {
                if ctx.deadline.remaining().is_zero() {
                    return Err(ApiError::Unavailable {
                        reason: "Timeout",
                        message: format!(
                            "DeleteCollection did not finish before the deadline: {} {} deleted so far",
                            out.len(),
                            self.resource()
                        ),
                    });
                }
                let (ns, name) = item
                    .meta()
                    .map(|m| (m.namespace.clone(), m.name.clone()))
                    .unwrap_or_default();
                match self
                    .delete(ctx.clone(), &ns, &name, Some(options.clone()))
                    .await
                {
                    Ok((last, _deleted)) => out.push(last),
                    Err(ApiError::NotFound { .. }) => out.push(item),
                    Err(e) => return Err(e),
                }
            }
            let next = meta.r#continue.clone();
            first.get_or_insert(meta);
            if one_page || next.is_empty() {
                break;
            }
            list_options.r#continue = next;
            list_options.resource_version.clear();
            list_options.resource_version_match = 0;
        }
        let mut meta = first.unwrap_or_default();
        if !one_page {
            meta.r#continue.clear();
            meta.remaining_item_count = None;
        }
        Ok((meta, out))
    }
}
