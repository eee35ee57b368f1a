//! The endpoint of a built-in kind: its `Store<R>` with objects in Kubernetes JSON through the
//! descriptor-driven codec (`kubestore_apimachinery::json`), one implementation for every
//! built-in kind.
//!
//! Objects come in as JSON values: their `apiVersion` and `kind` are checked against the
//! endpoint's, fields the message does not have are reported per `fieldValidation`, and the
//! rest is encoded with the descriptors and decoded into `R`. Objects go out as storage holds
//! them, written as JSON straight from their encoding (kinds with read defaults or a decorator
//! are decoded first, as on the typed path).

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use kubestore_apimachinery::{
    json::Codec,
    patch::{Patch, PatchType},
    table::{self, IncludeObject},
};
use kubestore_proto::meta::v1::{DeleteOptions, ListOptions, WatchEventType};
use serde_json::Value;
use tokio_stream::StreamExt;

use super::{
    Deleted, Endpoint, EventStream, FieldValidation, Json, Output, Page, Part, ResourceInfo,
    WriteOptions, Written,
};
use crate::{
    error::ApiError,
    metrics::Verb,
    resource::Resource,
    store::{Ctx, Store},
};

/// A built-in kind's endpoint.
pub struct BuiltinEndpoint<R: Resource> {
    store: Store<R>,
    codec: Arc<Codec>,
    info: ResourceInfo,
    message: String,
    api_version: String,
}

impl<R: Resource> BuiltinEndpoint<R> {
    /// The endpoint of `store`, described by `info`.
    pub fn new(store: Store<R>, codec: Arc<Codec>, info: ResourceInfo) -> Self {
        Self {
            message: R::message_name(),
            api_version: info.api_version(),
            store,
            codec,
            info,
        }
    }

    /// `obj` in Kubernetes JSON.
    fn to_json(&self, obj: &R) -> Result<Json, ApiError> {
        self.encoded_to_json(&obj.encode_to_vec())
    }

    /// An encoded `R` in Kubernetes JSON.
    fn encoded_to_json(&self, bytes: &[u8]) -> Result<Json, ApiError> {
        self.codec
            .encode_to_vec(
                &self.message,
                bytes,
                Some((&self.api_version, &self.info.kind)),
            )
            .map(Bytes::from)
            .map_err(|e| ApiError::Internal(format!("{} as JSON: {e}", self.info.kind)))
    }

    fn to_value(&self, obj: &R) -> Result<Value, ApiError> {
        self.codec
            .encode_to_value(
                &self.message,
                &obj.encode_to_vec(),
                Some((&self.api_version, &self.info.kind)),
            )
            .map_err(|e| ApiError::Internal(format!("{} as JSON: {e}", self.info.kind)))
    }

    /// A client's JSON object as `R`, with the warnings `fieldValidation` asks for.
    fn from_value(
        &self,
        body: &Value,
        validation: FieldValidation,
    ) -> Result<(R, Vec<String>), ApiError> {
        let kind = &self.info.kind;
        if !body.is_object() {
            return Err(ApiError::BadRequest(format!(
                "{kind} in version \"{}\" cannot be handled as a {kind}: the object must be a JSON object",
                self.info.version
            )));
        }
        check_type_meta(body, &self.api_version, kind)?;
        let mut unknown = Vec::new();
        let bytes = self
            .codec
            .decode(&self.message, body, &["apiVersion", "kind"], &mut unknown)
            .map_err(|e| {
                ApiError::BadRequest(format!(
                    "{kind} in version \"{}\" cannot be handled as a {kind}: {}",
                    self.info.version, e.message
                ))
            })?;
        let warnings = unknown_fields(unknown, validation)?;
        let obj = R::decode(bytes.as_slice())
            .map_err(|e| ApiError::Internal(format!("{kind} from JSON does not decode: {e}")))?;
        Ok((obj, warnings))
    }

    /// A Table row of `obj`.
    fn row(&self, obj: &R, include: IncludeObject, now: i64) -> Result<Value, ApiError> {
        let cells = self.store.strategy.cells(obj, now);
        let object = match include {
            IncludeObject::None => Value::Null,
            _ => self.to_value(obj)?,
        };
        let mut row = table::row(cells, include, &object);
        if let (Some(c), Value::Object(r)) = (self.store.strategy.row_conditions(obj), &mut row) {
            r.insert("conditions".into(), c);
        }
        Ok(row)
    }

    /// `obj` as `output` asks: itself, or a Table of one row.
    fn answer(&self, obj: &R, output: Output) -> Result<Json, ApiError> {
        match output {
            Output::Object => self.to_json(obj),
            Output::Table {
                include_object,
                no_headers,
            } => {
                let row = self.row(obj, include_object, table::now())?;
                let rv = obj.meta().map_or("", |m| m.resource_version.as_str());
                Ok(Bytes::from(table::table(
                    &self.store.strategy.columns(),
                    vec![row],
                    rv,
                    no_headers,
                )))
            }
        }
    }

    /// Storage's encoded object as clients get it: read defaults and decorations applied.
    fn served(&self, bytes: &Bytes) -> Result<Bytes, ApiError> {
        if self.store.strategy.has_decorator() {
            let mut obj = self.store.decode(bytes)?;
            self.store.strategy.decorate(&mut obj);
            return Ok(Bytes::from(obj.encode_to_vec()));
        }
        self.store.defaulted(bytes.clone())
    }

    fn written(&self, obj: &R, warnings: Vec<String>, created: bool) -> Result<Written, ApiError> {
        Ok(Written {
            object: self.to_json(obj)?,
            warnings,
            created,
        })
    }

    fn page(
        &self,
        meta: kubestore_proto::meta::v1::ListMeta,
        items: &[R],
        output: Output,
    ) -> Result<Page, ApiError> {
        match output {
            Output::Object => Ok(Page::Objects {
                meta,
                items: items
                    .iter()
                    .map(|o| self.to_json(o))
                    .collect::<Result<_, _>>()?,
            }),
            Output::Table { include_object, .. } => {
                let now = table::now();
                Ok(Page::Table {
                    meta,
                    columns: Bytes::from(table::columns_json(&self.store.strategy.columns())),
                    rows: items
                        .iter()
                        .map(|o| {
                            self.row(o, include_object, now)
                                .map(|r| Bytes::from(serde_json::to_vec(&r).unwrap_or_default()))
                        })
                        .collect::<Result<_, _>>()?,
                })
            }
        }
    }
}

/// Refuses a body whose `apiVersion` or `kind` names another resource (upstream's decoder
/// checks both against the URL's).
pub(crate) fn check_type_meta(body: &Value, api_version: &str, kind: &str) -> Result<(), ApiError> {
    if let Some(v) = body.get("apiVersion")
        && v.as_str() != Some(api_version)
    {
        return Err(ApiError::BadRequest(format!(
            "the API version in the data ({}) does not match the expected API version ({api_version})",
            v.as_str().unwrap_or_default()
        )));
    }
    if let Some(k) = body.get("kind")
        && k.as_str() != Some(kind)
    {
        return Err(ApiError::BadRequest(format!(
            "the kind in the data ({}) does not match the expected kind ({kind})",
            k.as_str().unwrap_or_default()
        )));
    }
    Ok(())
}

/// Unknown fields as `fieldValidation` says: refused (Strict), warned about (Warn), dropped.
pub(crate) fn unknown_fields(
    unknown: Vec<String>,
    validation: FieldValidation,
) -> Result<Vec<String>, ApiError> {
    if unknown.is_empty() {
        return Ok(Vec::new());
    }
    let described: Vec<String> = unknown
        .iter()
        .map(|p| format!("unknown field \"{p}\""))
        .collect();
    match validation {
        FieldValidation::Ignore => Ok(Vec::new()),
        FieldValidation::Warn => Ok(described),
        FieldValidation::Strict => Err(ApiError::BadRequest(format!(
            "strict decoding error: {}",
            described.join(", ")
        ))),
    }
}

/// A watch stream's error as the client's.
pub(crate) fn watch_error(status: &tonic::Status) -> ApiError {
    ApiError::from_storage(status, "", "", "")
}

#[tonic::async_trait]
impl<R: Resource> Endpoint for BuiltinEndpoint<R> {
    fn info(&self) -> &ResourceInfo {
        &self.info
    }

    async fn get(
        &self,
        ctx: Ctx,
        namespace: &str,
        name: &str,
        _part: Part,
        output: Output,
    ) -> Result<Json, ApiError> {
        let obj = self
            .store
            .request(
                Verb::Get,
                namespace,
                false,
                self.store.get(ctx, namespace, name),
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
        let (meta, items) = self
            .store
            .request(
                Verb::List,
                namespace,
                false,
                self.store.list_encoded(ctx, namespace, Some(options)),
            )
            .await?;
        match output {
            Output::Object => Ok(Page::Objects {
                meta,
                items: items
                    .iter()
                    .map(|b| self.encoded_to_json(&self.served(b)?))
                    .collect::<Result<_, _>>()?,
            }),
            Output::Table { .. } => {
                let mut objects = Vec::with_capacity(items.len());
                for b in &items {
                    let mut o = self.store.decode(b)?;
                    self.store.strategy.decorate(&mut o);
                    objects.push(o);
                }
                self.page(meta, &objects, output)
            }
        }
    }

    async fn watch(
        &self,
        namespace: &str,
        options: ListOptions,
        output: Output,
        stop: tokio::sync::watch::Receiver<bool>,
    ) -> Result<EventStream, ApiError> {
        let events = self
            .store
            .request(
                Verb::Watch,
                namespace,
                false,
                self.store.watch_encoded(namespace, Some(options), stop),
            )
            .await?;
        let open = self.store.watch_opened(namespace);
        let this = BuiltinEndpoint {
            store: self.store.clone(),
            codec: self.codec.clone(),
            info: self.info.clone(),
            message: self.message.clone(),
            api_version: self.api_version.clone(),
        };
        let mut first = true;
        Ok(Box::pin(events.map(move |e| {
            let _open = &open;
            let (kind, bytes) = e.map_err(|s| watch_error(&s))?;
            if kind == WatchEventType::Bookmark {
                return Ok((kind, this.encoded_to_json(&bytes)?));
            }
            let object = match output {
                Output::Object => this.encoded_to_json(&this.served(&bytes)?)?,
                Output::Table { include_object, .. } => {
                    let mut o = this.store.decode(&bytes)?;
                    this.store.strategy.decorate(&mut o);
                    let json = this.answer(
                        &o,
                        Output::Table {
                            include_object,
                            no_headers: !first,
                        },
                    )?;
                    first = false;
                    json
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
        let dry_run = options.dry_run;
        let store = &self.store;
        store
            .request(Verb::Create, namespace, dry_run, async {
                let (obj, warnings) = self.from_value(&body, options.field_validation)?;
                let created = store.create(ctx, namespace, obj, dry_run).await?;
                self.written(&created, warnings, true)
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
        let dry_run = options.dry_run;
        let store = &self.store;
        let verb = Verb::update(part);
        store
            .request(verb, namespace, dry_run, async {
                let (obj, warnings) = self.from_value(&body, options.field_validation)?;
                if obj.meta().map_or("", |m| m.name.as_str()) != name {
                    return Err(ApiError::BadRequest(format!(
                        "the name of the object ({}) does not match the name on the URL ({name})",
                        obj.meta().map_or("", |m| m.name.as_str())
                    )));
                }
                let updated = store.update_in(ctx, namespace, obj, dry_run, part).await?;
                self.written(&updated, warnings, false)
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
        let dry_run = options.dry_run;
        let store = &self.store;
        let verb = Verb::patch(part);
        if patch.patch_type == PatchType::Apply {
            return Err(ApiError::UnsupportedMediaType(
                "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json (server-side apply is not supported)".into(),
            ));
        }
        let warnings = Mutex::new(Vec::new());
        let apply = |current: &R| -> Result<R, ApiError> {
            let original = self.to_value(current)?;
            let descriptors = self.codec.descriptors();
            let patched = patch
                .apply(&original, Some((descriptors, &self.message)))
                .map_err(ApiError::from_patch)?;
            let (obj, w) = self.from_value(&patched, options.field_validation)?;
            *warnings.lock().unwrap_or_else(|p| p.into_inner()) = w;
            Ok(obj)
        };
        store
            .request(verb, namespace, dry_run, async {
                let patched = store
                    .patch(ctx, namespace, name, &apply, dry_run, part)
                    .await?;
                let w = std::mem::take(&mut *warnings.lock().unwrap_or_else(|p| p.into_inner()));
                self.written(&patched, w, false)
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
        let dry_run = options.dry_run;
        let (obj, deleted) = self
            .store
            .request(
                Verb::Delete,
                namespace,
                dry_run,
                self.store.delete(ctx, namespace, name, Some(options)),
            )
            .await?;
        Ok(Deleted {
            uid: obj.meta().map(|m| m.uid.clone()).unwrap_or_default(),
            object: self.to_json(&obj)?,
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
        let dry_run = options.dry_run;
        let (meta, items) = self
            .store
            .request(
                Verb::DeleteCollection,
                namespace,
                dry_run,
                self.store
                    .delete_collection(ctx, namespace, Some(list), Some(options)),
            )
            .await?;
        self.page(meta, &items, Output::Object)
    }
}

/// Registers the endpoint of a built-in kind's Store: what discovery says of it comes from the
/// kind's [`Resource`] constants and its strategy.
pub fn register<R: Resource>(catalog: &super::Catalog, codec: &Arc<Codec>, store: &Store<R>) {
    let s = &store.strategy;
    let verbs = super::ALL_VERBS
        .iter()
        .filter(|v| **v != "deletecollection" || s.supports_delete_collection())
        .map(|v| v.to_string())
        .collect();
    let names = store.names();
    let info = ResourceInfo {
        group: names.group.clone(),
        version: "v1".into(),
        plural: names.plural.clone(),
        singular: names.kind.to_lowercase(),
        kind: names.kind.clone(),
        list_kind: format!("{}List", names.kind),
        short_names: R::SHORT_NAMES.iter().map(|n| n.to_string()).collect(),
        categories: R::CATEGORIES.iter().map(|n| n.to_string()).collect(),
        namespaced: s.namespace_scoped(),
        verbs,
        status: s.has_status(),
        finalize: s.has_finalize(),
        storage_version: true,
        message: Some(R::message_name()),
        return_deleted_object: s.return_deleted_object(),
    };
    catalog.add(Arc::new(BuiltinEndpoint::new(
        store.clone(),
        codec.clone(),
        info,
    )));
}
