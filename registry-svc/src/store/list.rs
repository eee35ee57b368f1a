//! List (upstream's `Store.List`/`ListPredicate`): selectors parsed here, evaluated by storage
//! where pages are filled; the key narrowed when the field selector pins the namespace or the
//! name, so that `metadata.name=x` reads one key instead of the whole prefix.
//!
//! A whole collection streamed to a client ([`Store::list_chunked`]) is read from storage in
//! chunks, each asked for when the client has taken the one before: the chunks continue one
//! another at the first one's revision (storage's continue tokens), so the client still gets
//! one consistent snapshot, and a client that reads slowly holds one chunk, not the list.

use std::collections::VecDeque;

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

    /// The whole collection `options` select (their `limit` and `continue` ignored), as its
    /// list's metadata and a stream of encoded objects read from storage in chunks as the
    /// stream is read (see the module docs). A chunk that fails (the revision compacted while
    /// the client was reading, storage gone) ends the stream with its error.
    pub(crate) async fn list_chunked(
        &self,
        ctx: Ctx,
        namespace: &str,
        options: ListOptions,
    ) -> Result<(ListMeta, ItemChunks), ApiError> {
        let mut first = ListOptions {
            limit: FIRST_CHUNK,
            r#continue: String::new(),
            ..options.clone()
        };
        // With a limit, a bare resourceVersion N would read exactly N (upstream's legacy
        // rule); the client asked for a list not older than N.
        let rv = first.resource_version.as_str();
        if !rv.is_empty()
            && rv != "0"
            && first.resource_version_match == ResourceVersionMatch::Unspecified as i32
        {
            first.resource_version_match = ResourceVersionMatch::NotOlderThan as i32;
        }
        let (meta, items) = self
            .list_encoded(ctx.clone(), namespace, Some(first))
            .await?;
        let chunks = Chunks {
            store: self.clone(),
            ctx,
            namespace: namespace.to_string(),
            options,
            limit: chunk_limit(&items),
            items: items.into(),
            next: meta.r#continue,
        };
        let stream = futures_util::stream::unfold(chunks, |mut c| async move {
            let item = c.next_item().await?;
            Some((item, c))
        });
        let meta = ListMeta {
            resource_version: meta.resource_version,
            ..Default::default()
        };
        Ok((meta, Box::pin(stream)))
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

/// Objects of a chunked list, in order (see [`Store::list_chunked`]).
pub type ItemChunks =
    std::pin::Pin<Box<dyn tokio_stream::Stream<Item = Result<Bytes, ApiError>> + Send>>;

/// Objects first asked of storage for a chunked list (later chunks are sized by what these
/// weigh): a list this short is read at once, and the first chunk of large objects stays small.
const FIRST_CHUNK: i64 = 16;

/// What later chunks aim at, by the size of the objects seen so far.
const CHUNK_BYTES: usize = 1 << 20;

/// Objects per chunk, at most.
const MAX_CHUNK: i64 = 10_000;

/// The objects of the next chunk: about [`CHUNK_BYTES`] of objects like `seen`.
fn chunk_limit(seen: &[Bytes]) -> i64 {
    let bytes: usize = seen.iter().map(Bytes::len).sum();
    let each = (bytes / seen.len().max(1)).max(1);
    i64::try_from(CHUNK_BYTES / each)
        .unwrap_or(MAX_CHUNK)
        .clamp(1, MAX_CHUNK)
}

/// A chunked list being read.
struct Chunks<R: Resource> {
    store: Store<R>,
    ctx: Ctx,
    namespace: String,
    /// The client's options (selectors, resourceVersion of the first chunk).
    options: ListOptions,
    /// Objects per chunk from here on.
    limit: i64,
    /// The chunk being handed out.
    items: VecDeque<Bytes>,
    /// The token of the next chunk; empty after the last.
    next: String,
}

impl<R: Resource> Chunks<R> {
    /// The next object, reading the next chunk when this one is spent; None at the end.
    async fn next_item(&mut self) -> Option<Result<Bytes, ApiError>> {
        loop {
            if let Some(item) = self.items.pop_front() {
                return Some(Ok(item));
            }
            if self.next.is_empty() {
                return None;
            }
            let options = ListOptions {
                label_selector: self.options.label_selector.clone(),
                field_selector: self.options.field_selector.clone(),
                limit: self.limit,
                r#continue: std::mem::take(&mut self.next),
                ..Default::default()
            };
            match self
                .store
                .list_encoded(self.ctx.clone(), &self.namespace, Some(options))
                .await
            {
                Ok((meta, items)) => {
                    if !items.is_empty() {
                        self.limit = chunk_limit(&items);
                    }
                    self.next = meta.r#continue;
                    self.items = items.into();
                }
                Err(e) => return Some(Err(e)),
            }
        }
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
