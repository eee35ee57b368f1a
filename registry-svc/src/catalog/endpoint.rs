//! The one implementation of [`Endpoint`]: a kind's `Store<R>` and its [`Shape`], what turns
//! its objects into Kubernetes JSON and back (the descriptor-driven codec for built-in kinds,
//! `builtin`; a version's schema for custom kinds, `custom`). Every verb of every kind is
//! dispatched to the Store here, once, as upstream's handlers call `rest.Storage` whatever the
//! kind: the request metrics, patches applied inside the update's retry loop, Tables,
//! `PartialObjectMetadata` and watch events included.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use kubestore_apimachinery::{
    descriptors::Descriptors,
    json::Codec,
    patch::{Limits, Patch, PatchType},
    table::{self, Column, IncludeObject},
};
use kubestore_proto::meta::v1::{DeleteOptions, ListMeta, ListOptions, WatchEventType};
use serde_json::Value;
use tokio_stream::StreamExt;

use super::{
    Deleted, Endpoint, EventStream, FieldValidation, Json, Output, Page, Part, ResourceInfo,
    Streamed, WriteOptions, Written,
};
use crate::{
    error::ApiError,
    metrics::Verb,
    resource::Resource,
    store::{Ctx, Store},
};

/// What a kind's objects look like to clients.
pub trait Shape<R: Resource>: Send + Sync + 'static {
    /// A client's JSON object as `R` (its `apiVersion` and `kind` checked), with the warnings
    /// `validation` asks for about fields the kind does not have.
    fn take_in(
        &self,
        body: Value,
        validation: FieldValidation,
    ) -> Result<(R, Vec<String>), ApiError>;

    /// `obj` in Kubernetes JSON.
    fn give_out(&self, obj: &R) -> Result<Json, ApiError>;

    /// An object as storage holds it, in Kubernetes JSON as clients get it (read defaults and
    /// decorations applied).
    fn served(&self, store: &Store<R>, bytes: &Bytes) -> Result<Json, ApiError> {
        let mut obj = store.decode(bytes)?;
        store.strategy.decorate(&mut obj);
        self.give_out(&obj)
    }

    /// The Table's columns.
    fn columns(&self) -> Vec<Column>;

    /// One object's cells (`json`: the object as clients get it).
    fn cells(&self, obj: &R, json: &Value, now: i64) -> Vec<Value>;

    /// The conditions of the object's Table row (upstream's `TableRow.conditions`: a finished
    /// pod's `Completed`), if any.
    fn row_conditions(&self, _obj: &R) -> Option<Value> {
        None
    }

    /// The descriptors and message a strategic merge patch needs; None: the kind takes no
    /// strategic merge patch (415, as upstream for custom resources).
    fn strategic(&self) -> Option<(&Descriptors, &str)> {
        None
    }

    /// Refuses a create (a definition being deleted takes no new objects).
    fn admit_create(&self) -> Result<(), ApiError> {
        Ok(())
    }

    /// Whether objects are converted between the served version and the stored one (an apply
    /// is served in the stored version only: managed fields are not converted).
    fn converts(&self) -> bool {
        false
    }

    /// The OpenAPI schema of a custom kind's version.
    fn openapi_schema(&self) -> Option<Value> {
        None
    }
}

/// A kind's endpoint: its Store and its shape.
pub struct StoreEndpoint<R: Resource, S: Shape<R>> {
    store: Store<R>,
    shape: Arc<S>,
    codec: Arc<Codec>,
    info: ResourceInfo,
}

impl<R: Resource, S: Shape<R>> StoreEndpoint<R, S> {
    /// The endpoint of `store`, its objects shaped by `shape`, described by `info` (`codec`:
    /// for object metadata, `ObjectMeta` in every kind's field 1).
    pub fn new(store: Store<R>, shape: S, codec: Arc<Codec>, info: ResourceInfo) -> Self {
        Self {
            store,
            shape: Arc::new(shape),
            codec,
            info,
        }
    }

    /// A server-side apply (a PATCH of `application/apply-patch+yaml`, gRPC's Apply).
    async fn apply(
        &self,
        ctx: Ctx,
        namespace: &str,
        name: &str,
        config: &Value,
        part: Part,
        options: &WriteOptions,
    ) -> Result<Written, ApiError> {
        // A version served by conversion (events.k8s.io/v1 over core v1 Events): managed
        // fields are kept in the stored version only, and are not converted.
        if self.shape.converts() {
            return Err(ApiError::UnsupportedMediaType(format!(
                "server-side apply of {} is served in the version stored only (core v1 for Events); accepted media types here include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json",
                self.info.qualified()
            )));
        }
        let ctx = ctx.managed_by(&options.field_manager);
        let (s, dry_run) = (&self.store, options.dry_run);
        let apply = crate::store::update::Apply {
            config,
            force: options.force,
            body_bytes: options.body_bytes,
        };
        s.request(&ctx, Verb::patch(part), namespace, dry_run, async {
            let (applied, created) = s
                .apply(ctx.clone(), namespace, name, &apply, dry_run, part)
                .await?;
            self.written(&ctx, &applied, Vec::new(), created)
        })
        .await
    }

    fn handle(&self) -> Self {
        Self {
            store: self.store.clone(),
            shape: self.shape.clone(),
            codec: self.codec.clone(),
            info: self.info.clone(),
        }
    }

    /// The metadata of an encoded object in Kubernetes JSON (field 1 only is read).
    fn metadata_text(&self, bytes: &[u8]) -> Result<Vec<u8>, ApiError> {
        let stored = |e: &dyn std::fmt::Display| {
            ApiError::Internal(format!("stored {} does not decode: {e}", self.info.kind))
        };
        kubestore_proto::depth::bounded(bytes).map_err(|e| stored(&e))?;
        let meta = <kubestore_proto::meta::v1::MetadataOnly as prost::Message>::decode(bytes)
            .map_err(|e| stored(&e))?
            .metadata
            .unwrap_or_default();
        self.codec
            .encode_to_vec(
                ".meta.v1.ObjectMeta",
                &prost::Message::encode_to_vec(&meta),
                None,
            )
            .map_err(|e| ApiError::Internal(format!("metadata as JSON: {e}")))
    }

    /// The metadata of an encoded object, as a `PartialObjectMetadata`.
    fn metadata(&self, bytes: &[u8]) -> Result<Json, ApiError> {
        Ok(super::partial_metadata(&self.metadata_text(bytes)?))
    }

    /// A bookmark's object: the kind, and metadata carrying only a resourceVersion (and the
    /// initial-events-end annotation), as upstream sends it.
    fn bookmark(&self, bytes: &[u8]) -> Result<Json, ApiError> {
        let meta = self.metadata_text(bytes)?;
        let mut out = Vec::with_capacity(meta.len() + 64);
        out.extend_from_slice(b"{\"kind\":");
        out.extend_from_slice(&serde_json::to_vec(&self.info.kind).unwrap_or_default());
        out.extend_from_slice(b",\"apiVersion\":");
        out.extend_from_slice(&serde_json::to_vec(&self.info.api_version()).unwrap_or_default());
        out.extend_from_slice(b",\"metadata\":");
        out.extend_from_slice(&meta);
        out.push(b'}');
        Ok(Json::from(out))
    }

    fn value(&self, obj: &R) -> Result<Value, ApiError> {
        serde_json::from_slice(&self.shape.give_out(obj)?)
            .map_err(|e| ApiError::Internal(format!("{} as JSON: {e}", self.info.kind)))
    }

    fn row(&self, obj: &R, include: IncludeObject, now: i64) -> Result<Value, ApiError> {
        let json = self.value(obj)?;
        let cells = self.shape.cells(obj, &json, now);
        let mut row = table::row(cells, include, &json);
        if let (Some(c), Value::Object(r)) = (self.shape.row_conditions(obj), &mut row) {
            r.insert("conditions".into(), c);
        }
        Ok(row)
    }

    /// `obj` as `output` asks: itself, its metadata, or a Table of one row.
    fn answer(&self, obj: &R, output: Output) -> Result<Json, ApiError> {
        match output {
            Output::Object => self.shape.give_out(obj),
            Output::Metadata => self.metadata(&obj.encode_to_vec()),
            Output::Table {
                include_object,
                no_headers,
            } => {
                let row = self.row(obj, include_object, table::now())?;
                let rv = obj.meta().map_or("", |m| m.resource_version.as_str());
                Ok(Bytes::from(table::table(
                    &self.shape.columns(),
                    vec![row],
                    rv,
                    no_headers,
                )))
            }
        }
    }

    /// An object as storage holds it, as `output` asks of a list's items (`now`: the Table's
    /// clock, one for the whole list).
    fn item(&self, bytes: &Bytes, output: Output, now: i64) -> Result<Json, ApiError> {
        match output {
            Output::Object => self.shape.served(&self.store, bytes),
            Output::Metadata => self.metadata(bytes),
            Output::Table { include_object, .. } => {
                let mut o = self.store.decode(bytes)?;
                self.store.strategy.decorate(&mut o);
                let row = self.row(&o, include_object, now)?;
                Ok(Bytes::from(serde_json::to_vec(&row).unwrap_or_default()))
            }
        }
    }

    /// A Table's column definitions, for `output`s that are Tables.
    fn columns(&self, output: Output) -> Option<Json> {
        matches!(output, Output::Table { .. })
            .then(|| Bytes::from(table::columns_json(&self.shape.columns())))
    }

    /// A page of objects as storage holds them, as `output` asks.
    fn page(&self, meta: ListMeta, items: &[Bytes], output: Output) -> Result<Page, ApiError> {
        let now = table::now();
        let items = items
            .iter()
            .map(|b| self.item(b, output, now))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(match self.columns(output) {
            None => Page::Objects { meta, items },
            Some(columns) => Page::Table {
                meta,
                columns,
                rows: items,
            },
        })
    }

    /// `obj` as written, with `warnings`; a large object is encoded off the async workers.
    fn written(
        &self,
        ctx: &Ctx,
        obj: &R,
        warnings: Vec<String>,
        created: bool,
    ) -> Result<Written, ApiError> {
        let object = crate::offload::run(obj.encoded_len(), deadline(ctx), || {
            self.shape.give_out(obj)
        })?;
        Ok(Written {
            object,
            warnings,
            created,
        })
    }

    /// `body` taken in as `R`; a large one off the async workers.
    fn take_in(
        &self,
        ctx: &Ctx,
        body: Value,
        options: &WriteOptions,
    ) -> Result<(R, Vec<String>), ApiError> {
        crate::offload::run(options.body_bytes, deadline(ctx), || {
            self.shape.take_in(body, options.field_validation)
        })
    }
}

/// The request's deadline, for work off the async workers.
fn deadline(ctx: &Ctx) -> Option<std::time::Instant> {
    Some(ctx.deadline.instant().into_std())
}

/// A watch stream's error as the client's.
fn watch_error(status: &tonic::Status) -> ApiError {
    ApiError::from_storage(status, "", "", "")
}

#[tonic::async_trait]
impl<R: Resource, S: Shape<R>> Endpoint for StoreEndpoint<R, S> {
    fn info(&self) -> &ResourceInfo {
        &self.info
    }

    fn refused(&self, verb: Verb, namespace: &str, error: &ApiError) {
        self.store.refused(verb, namespace, error);
    }

    fn openapi_schema(&self) -> Option<Value> {
        self.shape.openapi_schema()
    }

    async fn get(
        &self,
        ctx: Ctx,
        namespace: &str,
        name: &str,
        _part: Part,
        output: Output,
    ) -> Result<Json, ApiError> {
        let s = &self.store;
        let obj = s
            .request(
                &ctx,
                Verb::Get,
                namespace,
                false,
                s.get(ctx.clone(), namespace, name),
            )
            .await?;
        self.answer(&obj, output)
    }

    async fn list(
        &self,
        ctx: Ctx,
        namespace: &str,
        options: ListOptions,
        output: Output,
    ) -> Result<Page, ApiError> {
        let s = &self.store;
        let (meta, items) = s
            .request(
                &ctx,
                Verb::List,
                namespace,
                false,
                s.list_encoded(ctx.clone(), namespace, Some(options)),
            )
            .await?;
        self.page(meta, &items, output)
    }

    async fn list_streamed(
        &self,
        ctx: Ctx,
        namespace: &str,
        options: ListOptions,
        output: Output,
    ) -> Result<Streamed, ApiError> {
        if options.limit != 0 {
            return Ok(self.list(ctx, namespace, options, output).await?.into());
        }
        let s = &self.store;
        let (meta, chunks) = s
            .request(
                &ctx,
                Verb::List,
                namespace,
                false,
                s.list_chunked(ctx.clone(), namespace, options),
            )
            .await?;
        let this = self.handle();
        let now = table::now();
        let items = chunks.map(move |item| item.and_then(|b| this.item(&b, output, now)));
        Ok(Streamed {
            meta,
            columns: self.columns(output),
            items: Box::pin(items),
        })
    }

    async fn watch(
        &self,
        ctx: &Ctx,
        namespace: &str,
        options: ListOptions,
        output: Output,
        stop: tokio::sync::watch::Receiver<bool>,
    ) -> Result<EventStream, ApiError> {
        let s = &self.store;
        let events = s
            .request(
                ctx,
                Verb::Watch,
                namespace,
                false,
                s.watch_encoded(namespace, Some(options), stop),
            )
            .await?;
        let open = s.watch_opened(namespace);
        let this = self.handle();
        let mut first = true;
        Ok(Box::pin(events.map(move |e| {
            let _open = &open;
            let (kind, bytes) = e.map_err(|s| watch_error(&s))?;
            let object = match output {
                Output::Object if kind == WatchEventType::Bookmark => this.bookmark(&bytes)?,
                Output::Object => this.shape.served(&this.store, &bytes)?,
                Output::Metadata => this.metadata(&bytes)?,
                Output::Table { include_object, .. } => {
                    // Only the first event's Table carries the column definitions.
                    let mut o = this.store.decode(&bytes)?;
                    this.store.strategy.decorate(&mut o);
                    let no_headers = !first;
                    first = false;
                    this.answer(
                        &o,
                        Output::Table {
                            include_object,
                            no_headers,
                        },
                    )?
                }
            };
            Ok((kind, object))
        })))
    }

    async fn create(
        &self,
        ctx: Ctx,
        namespace: &str,
        body: Value,
        options: &WriteOptions,
    ) -> Result<Written, ApiError> {
        self.shape.admit_create()?;
        let ctx = ctx.managed_by(&options.field_manager);
        let (s, dry_run) = (&self.store, options.dry_run);
        s.request(&ctx, Verb::Create, namespace, dry_run, async {
            let (obj, warnings) = self.take_in(&ctx, body, options)?;
            let created = s.create(ctx.clone(), namespace, obj, dry_run).await?;
            self.written(&ctx, &created, warnings, true)
        })
        .await
    }

    async fn update(
        &self,
        ctx: Ctx,
        namespace: &str,
        name: &str,
        body: Value,
        part: Part,
        options: &WriteOptions,
    ) -> Result<Written, ApiError> {
        let ctx = ctx.managed_by(&options.field_manager);
        let (s, dry_run) = (&self.store, options.dry_run);
        s.request(&ctx, Verb::update(part), namespace, dry_run, async {
            let (obj, warnings) = self.take_in(&ctx, body, options)?;
            let got = obj.meta().map_or("", |m| m.name.as_str());
            if got != name {
                return Err(ApiError::BadRequest(format!(
                    "the name of the object ({got}) does not match the name on the URL ({name})"
                )));
            }
            let (updated, created) = s
                .upsert_in(ctx.clone(), namespace, obj, dry_run, part)
                .await?;
            self.written(&ctx, &updated, warnings, created)
        })
        .await
    }

    async fn patch(
        &self,
        ctx: Ctx,
        namespace: &str,
        name: &str,
        patch: Patch,
        part: Part,
        options: &WriteOptions,
    ) -> Result<Written, ApiError> {
        let ctx = ctx.managed_by(&options.field_manager);
        if patch.patch_type == PatchType::Apply {
            // Boxed: an apply's future stays out of every other patch's.
            return Box::pin(self.apply(ctx, namespace, name, &patch.body, part, options)).await;
        }
        if options.force {
            return Err(ApiError::invalid(
                "PatchOptions.meta.k8s.io",
                "",
                vec![(
                    "force".to_string(),
                    "Forbidden: may not be specified for non-apply patch".to_string(),
                )],
            ));
        }
        let strategic = self.shape.strategic();
        let accepted = match patch.patch_type {
            PatchType::Apply => false,
            PatchType::Strategic => strategic.is_some(),
            PatchType::Json | PatchType::Merge => true,
        };
        if !accepted {
            return Err(ApiError::UnsupportedMediaType(format!(
                "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json{}, application/apply-patch+yaml",
                if strategic.is_some() {
                    ", application/strategic-merge-patch+json"
                } else {
                    ""
                }
            )));
        }
        let (s, dry_run) = (&self.store, options.dry_run);
        let warnings = Mutex::new(Vec::new());
        // Applied to each state storage hands the update: the object and the patch are the
        // work's input, which runs off the async workers when large, and stops at the
        // request's deadline (`Limits`).
        let limits = Limits::until(deadline(&ctx));
        let apply = |current: &R| -> Result<R, ApiError> {
            let size = options.body_bytes + current.encoded_len();
            crate::offload::run(size, deadline(&ctx), || {
                let original = self.value(current)?;
                let patched = patch
                    .apply(&original, strategic, &limits)
                    .map_err(ApiError::from_patch)?;
                let (obj, w) = self.shape.take_in(patched, options.field_validation)?;
                *warnings.lock().unwrap_or_else(|p| p.into_inner()) = w;
                Ok(obj)
            })
        };
        s.request(&ctx, Verb::patch(part), namespace, dry_run, async {
            let patched = s
                .patch(ctx.clone(), namespace, name, &apply, dry_run, part)
                .await?;
            let w = std::mem::take(&mut *warnings.lock().unwrap_or_else(|p| p.into_inner()));
            self.written(&ctx, &patched, w, false)
        })
        .await
    }

    async fn delete(
        &self,
        ctx: Ctx,
        namespace: &str,
        name: &str,
        options: DeleteOptions,
    ) -> Result<Deleted, ApiError> {
        let (s, dry_run) = (&self.store, options.dry_run);
        let (obj, deleted) = s
            .request(
                &ctx,
                Verb::Delete,
                namespace,
                dry_run,
                s.delete(ctx.clone(), namespace, name, Some(options)),
            )
            .await?;
        Ok(Deleted {
            uid: obj.meta().map(|m| m.uid.clone()).unwrap_or_default(),
            object: self.shape.give_out(&obj)?,
            deleted,
        })
    }

    async fn delete_collection(
        &self,
        ctx: Ctx,
        namespace: &str,
        list: ListOptions,
        options: DeleteOptions,
    ) -> Result<Page, ApiError> {
        let (s, dry_run) = (&self.store, options.dry_run);
        let (meta, items) = s
            .request(
                &ctx,
                Verb::DeleteCollection,
                namespace,
                dry_run,
                s.delete_collection(ctx.clone(), namespace, Some(list), Some(options)),
            )
            .await?;
        Ok(Page::Objects {
            meta,
            items: items
                .iter()
                .map(|o| self.shape.give_out(o))
                .collect::<Result<_, _>>()?,
        })
    }
}
