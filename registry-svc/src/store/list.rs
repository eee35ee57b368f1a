//! List (upstream's `Store.List`/`ListPredicate`): selectors parsed here, evaluated by storage
//! where pages are filled; the key narrowed when the field selector pins the namespace or the
//! name, so that `metadata.name=x` reads one key instead of the whole prefix.

use bytes::Bytes;
use kubestore_proto::{
    meta::v1::{ListMeta, ListOptions, ResourceVersionMatch},
    storage::v1::{ListRequest, Selector},
};

use crate::{
    error::ApiError,
    resource::Resource,
    selectors,
    store::{Ctx, Store},
    validation,
};

/// What a list or a watch reads: a key (prefix or single object) and the selector.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    /// The storage key.
    pub(crate) key: String,
    /// Whether `key` is a prefix (its children) rather than one object.
    pub(crate) recursive: bool,
    /// The requirements storage evaluates.
    pub(crate) selector: Selector,
}

impl<R: Resource> Store<R> {
    /// What `namespace` ("" = all) and `options` select (upstream's `ListPredicate` key choice).
    pub(crate) fn target(
        &self,
        namespace: &str,
        options: &ListOptions,
        may_narrow_to_name: bool,
    ) -> Result<Target, ApiError> {
        let selection = selectors::parse(
            &options.label_selector,
            &options.field_selector,
            self.strategy.selectable_fields(),
            &self.strategy.json_fields(),
        )?;
        let namespaced = self.strategy.namespace_scoped();
        let mut ns = namespace.to_string();
        if !ns.is_empty()
            && let Some(e) = validation::dns1123_label(&ns)
        {
            return Err(ApiError::BadRequest(format!(
                "Namespace parameter invalid: {ns:?}: {e}"
            )));
        }
        // A field selector that pins the namespace narrows an all-namespaces request.
        if namespaced
            && ns.is_empty()
            && let Some(pinned) = selection.pinned("metadata.namespace")
            && validation::dns1123_label(pinned).is_none()
        {
            ns = pinned.to_string();
        }
        let root = if namespaced && !ns.is_empty() {
            format!("{}/{ns}", self.key_root())
        } else {
            self.key_root().to_string()
        };
        // A field selector that pins the name reads that one key (needs the namespace).
        if may_narrow_to_name
            && (!namespaced || !ns.is_empty())
            && let Some(name) = selection.pinned("metadata.name")
        {
            if name.is_empty()
                || validation::path_segment(name).is_some()
                || name.len() > validation::DNS1123_SUBDOMAIN_MAX
            {
                // No object can have this name: an empty result, from the namespace prefix.
            } else {
                return Ok(Target {
                    key: format!("{root}/{name}"),
                    recursive: false,
                    selector: selection.selector,
                });
            }
        }
        Ok(Target {
            key: root,
            recursive: true,
            selector: selection.selector,
        })
    }

    /// A storage error of a list or watch: a bad request option (resourceVersion, continue,
    /// selector) is the caller's BadRequest, not an invalid object.
    pub(crate) fn collection_error(&self, status: &tonic::Status) -> ApiError {
        match self.storage_error(status, "") {
            ApiError::Invalid { .. } => ApiError::BadRequest(status.message().to_string()),
            other => other,
        }
    }

    /// One page as storage returned it: the list's metadata and the encoded objects.
    pub(crate) async fn list_encoded(
        &self,
        ctx: Ctx,
        namespace: &str,
        options: Option<ListOptions>,
    ) -> Result<(ListMeta, Vec<Bytes>), ApiError> {
        let options = options.unwrap_or_default();
        validate_list_options(&options)?;
        let target = self.target(namespace, &options, options.r#continue.is_empty())?;
        let page = self
            .storage
            .list(
                ctx.deadline,
                ListRequest {
                    key: target.key,
                    recursive: target.recursive,
                    resource_version: options.resource_version,
                    resource_version_match: options.resource_version_match,
                    limit: options.limit,
                    r#continue: options.r#continue,
                    selector: Some(target.selector),
                },
            )
            .await
            .map_err(|s| self.collection_error(&s))?;
        Ok((
            ListMeta {
                resource_version: page.resource_version,
                r#continue: page.r#continue,
                remaining_item_count: page.remaining_item_count,
            },
            page.items,
        ))
    }

    /// List: one page of the objects `namespace` ("" = all) and `options` select.
    pub async fn list(
        &self,
        ctx: Ctx,
        namespace: &str,
        options: Option<ListOptions>,
    ) -> Result<(ListMeta, Vec<R>), ApiError> {
        let (meta, encoded) = self.list_encoded(ctx, namespace, options).await?;
        let mut items = Vec::with_capacity(encoded.len());
        for bytes in &encoded {
            let mut item = self.decode(bytes)?;
            self.strategy.decorate(&mut item);
            items.push(item);
        }
        Ok((meta, items))
    }
}

/// Upstream's `ValidateListOptions` (the handler's, before storage): the option combinations
/// that make no sense are 422 Invalid of kind `ListOptions`, every problem listed. (Values
/// storage cannot read, a bad resourceVersion or continue token, are its 400 BadRequest.)
fn validate_list_options(o: &ListOptions) -> Result<(), ApiError> {
    let mut v = Vec::new();
    let forbidden = |v: &mut Vec<(String, String)>, field: &str, why: &str| {
        v.push((field.to_string(), format!("Forbidden: {why}")));
    };
    if o.resource_version_match != ResourceVersionMatch::Unspecified as i32 {
        if o.resource_version.is_empty() {
            forbidden(
                &mut v,
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden unless resourceVersion is provided",
            );
        }
        if !o.r#continue.is_empty() {
            forbidden(
                &mut v,
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden when continue is provided",
            );
        }
        match ResourceVersionMatch::try_from(o.resource_version_match) {
            Err(_) => v.push((
                "resourceVersionMatch".to_string(),
                format!(
                    "Unsupported value: {}: supported values: \"Exact\", \"NotOlderThan\", \"\"",
                    o.resource_version_match
                ),
            )),
            Ok(ResourceVersionMatch::Exact) if o.resource_version == "0" => forbidden(
                &mut v,
                "resourceVersionMatch",
                "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
            ),
            Ok(_) => {}
        }
    }
    if o.send_initial_events.is_some() {
        forbidden(
            &mut v,
            "sendInitialEvents",
            "sendInitialEvents is forbidden for list",
        );
    }
    if v.is_empty() {
        Ok(())
    } else {
        Err(ApiError::invalid("ListOptions", "", v))
    }
}
