//! The endpoint of one served version of a custom kind (upstream's `crdHandler` serving a
//! version through the same handlers as every built-in kind).
//!
//! An object is taken in as upstream's handler does: its `apiVersion` and `kind` checked against
//! the request's version and the served kind, pruned and defaulted by the version's schema, and
//! stored in the storage version (conversion `None`: only `apiVersion` changes). Objects go out
//! in the requested version. Strategic merge patches are refused (415), as upstream refuses them
//! for custom resources: there are no Go struct tags to merge lists by.

use std::sync::Arc;

use bytes::Bytes;
use kubestore_apimachinery::{
    jsonpath,
    patch::{Patch, PatchType},
    table::{self, Column, IncludeObject},
};
use kubestore_proto::meta::v1::{DeleteOptions, ListMeta, ListOptions};
use serde_json::{Map, Value};
use tokio_stream::StreamExt;

use super::{
    Deleted, Endpoint, EventStream, FieldValidation, Json, Output, Page, Part, ResourceInfo,
    WriteOptions, Written,
    builtin::{check_type_meta, unknown_fields, watch_error},
};
use crate::{
    custom::{
        kinds::{ServedKind, ServedVersion},
        object::CustomObject,
    },
    error::ApiError,
    metrics::Verb,
    store::{Ctx, Store},
};

/// A served version of a custom kind.
pub struct CustomEndpoint {
    kind: Arc<ServedKind>,
    version: String,
    info: ResourceInfo,
    columns: Vec<(Column, String)>,
    /// The version's `openAPIV3Schema`, for OpenAPI.
    schema: Option<Value>,
}

impl CustomEndpoint {
    /// The endpoint of `kind`'s `version` (which must be one of its served versions).
    pub fn new(kind: Arc<ServedKind>, version: &str, info: ResourceInfo) -> Self {
        let columns = kind
            .versions
            .get(version)
            .map(printer_columns)
            .unwrap_or_default();
        Self {
            kind,
            version: version.to_string(),
            info,
            columns,
            schema: None,
        }
    }

    fn served(&self) -> Result<&ServedVersion, ApiError> {
        self.kind.version(&self.version)
    }

    fn store(&self) -> Result<&Store<CustomObject>, ApiError> {
        Ok(&self.served()?.store)
    }

    /// A client's object taken in: checked, pruned, defaulted, in the storage version.
    pub fn take_in(
        &self,
        body: Value,
        validation: FieldValidation,
    ) -> Result<(CustomObject, Vec<String>), ApiError> {
        let Value::Object(mut json) = body else {
            return Err(ApiError::BadRequest(
                "the object must be a JSON object".into(),
            ));
        };
        let api_version = self.info.api_version();
        check_type_meta(&Value::Object(json.clone()), &api_version, &self.kind.kind)?;
        json.insert("apiVersion".into(), Value::String(api_version));
        json.insert("kind".into(), Value::String(self.kind.kind.clone()));
        let version = self.served()?;
        let mut value = Value::Object(json);
        // What pruning drops are the unknown fields `fieldValidation` judges (upstream's
        // crdHandler prunes with `ReturnPruned` and sorts them).
        let before = (validation != FieldValidation::Ignore).then(|| value.clone());
        version.schema.prune(&mut value);
        let mut unknown = Vec::new();
        if let Some(before) = &before {
            pruned_paths(before, &value, "", &mut unknown);
            unknown.sort();
        }
        let warnings = unknown_fields(unknown, validation, &self.kind.kind, &self.version)?;
        version.schema.default(&mut value);
        let Value::Object(mut json) = value else {
            return Err(ApiError::Internal("pruning left no object".into()));
        };
        json.insert(
            "apiVersion".into(),
            Value::String(format!("{}/{}", self.kind.group, self.kind.storage_version)),
        );
        let mut obj = CustomObject::from_json(json)?;
        // Recorded, so that reads walk only objects written under another schema.
        obj.schema = version.schema.fingerprint();
        Ok((obj, warnings))
    }

    /// An object as it goes out, in this version: pruned and defaulted by the version's
    /// schema, as upstream's decoder does to what it reads (a field since removed from the
    /// schema is not served; one added with a default is), unless it was written under it.
    pub fn give_out(&self, obj: &CustomObject) -> Result<Map<String, Value>, ApiError> {
        let mut json = obj.content()?;
        if let Ok(v) = self.served() {
            v.schema.read(obj.schema, &mut json);
        }
        json.insert(
            "metadata".into(),
            crate::custom::object::metadata_json(obj.metadata.as_ref())?,
        );
        json.insert("apiVersion".into(), Value::String(self.info.api_version()));
        Ok(json)
    }

    fn to_json(&self, obj: &CustomObject) -> Result<Json, ApiError> {
        let json = self.give_out(obj)?;
        serde_json::to_vec(&json)
            .map(Bytes::from)
            .map_err(|e| ApiError::Internal(format!("custom object as JSON: {e}")))
    }

    fn row(&self, obj: &CustomObject, include: IncludeObject, now: i64) -> Result<Value, ApiError> {
        let json = Value::Object(self.give_out(obj)?);
        let name = json
            .pointer("/metadata/name")
            .cloned()
            .unwrap_or(Value::Null);
        let mut cells = vec![name];
        for (column, path) in &self.columns {
            cells.push(cell(jsonpath::first(path, &json), &column.ty, now));
        }
        Ok(table::row(cells, include, &json))
    }

    fn table_columns(&self) -> Vec<Column> {
        let mut columns = vec![Column::new(
            "Name",
            "string",
            "name",
            0,
            table::NAME_DESCRIPTION,
        )];
        columns.extend(self.columns.iter().map(|(c, _)| c.clone()));
        columns
    }

    fn answer(&self, obj: &CustomObject, output: Output) -> Result<Json, ApiError> {
        match output {
            Output::Object => self.to_json(obj),
            Output::Metadata => {
                let json = self.give_out(obj)?;
                let meta = json
                    .get("metadata")
                    .cloned()
                    .unwrap_or_else(|| Value::Object(Map::new()));
                Ok(super::partial_metadata(
                    &serde_json::to_vec(&meta).unwrap_or_else(|_| b"{}".to_vec()),
                ))
            }
            Output::Table {
                include_object,
                no_headers,
            } => {
                let row = self.row(obj, include_object, table::now())?;
                let rv = obj
                    .metadata
                    .as_ref()
                    .map_or("", |m| m.resource_version.as_str());
                Ok(Bytes::from(table::table(
                    &self.table_columns(),
                    vec![row],
                    rv,
                    no_headers,
                )))
            }
        }
    }

    fn page(
        &self,
        meta: ListMeta,
        items: &[CustomObject],
        output: Output,
    ) -> Result<Page, ApiError> {
        match output {
            Output::Object | Output::Metadata => Ok(Page::Objects {
                meta,
                items: items
                    .iter()
                    .map(|o| self.answer(o, output))
                    .collect::<Result<_, _>>()?,
            }),
            Output::Table { include_object, .. } => {
                let now = table::now();
                Ok(Page::Table {
                    meta,
                    columns: Bytes::from(table::columns_json(&self.table_columns())),
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

    fn written(
        &self,
        obj: &CustomObject,
        warnings: Vec<String>,
        created: bool,
    ) -> Result<Written, ApiError> {
        Ok(Written {
            object: self.to_json(obj)?,
            warnings,
            created,
        })
    }
}

/// The paths (`spec.a`, `spec.items[0].b`) of the fields in `before` that `after` lacks.
fn pruned_paths(before: &Value, after: &Value, prefix: &str, out: &mut Vec<String>) {
    match (before, after) {
        (Value::Object(b), Value::Object(a)) => {
            for (k, v) in b {
                let path = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                match a.get(k) {
                    // A null the schema could only refuse is dropped, not unknown.
                    None if v.is_null() => {}
                    None => out.push(path),
                    Some(kept) => pruned_paths(v, kept, &path, out),
                }
            }
        }
        (Value::Array(b), Value::Array(a)) => {
            for (i, (v, kept)) in b.iter().zip(a).enumerate() {
                pruned_paths(v, kept, &format!("{prefix}[{i}]"), out);
            }
        }
        _ => {}
    }
}

/// A version's printer columns and their JSONPaths; without any, upstream's default `Age`.
fn printer_columns(version: &ServedVersion) -> Vec<(Column, String)> {
    if version.columns.is_empty() {
        return vec![(
            Column::new("Age", "date", "", 0, table::AGE_DESCRIPTION),
            ".metadata.creationTimestamp".into(),
        )];
    }
    version
        .columns
        .iter()
        .map(|c| {
            (
                Column::new(&c.name, &c.r#type, &c.format, c.priority, &c.description),
                c.json_path.clone(),
            )
        })
        .collect()
}

/// A printer column's cell: the first value its JSONPath finds (null when none); a `date` as
/// its age, as upstream's custom resource table convertor does.
fn cell(v: Option<&Value>, ty: &str, now: i64) -> Value {
    match (v, ty) {
        (None, _) => Value::Null,
        (Some(Value::String(s)), "date") => Value::String(table::age(
            kubestore_apimachinery::time::parse(s).map(|(secs, _)| secs),
            now,
        )),
        (Some(v @ (Value::Object(_) | Value::Array(_))), _) => Value::String(v.to_string()),
        (Some(v), _) => v.clone(),
    }
}

#[tonic::async_trait]
impl Endpoint for CustomEndpoint {
    fn info(&self) -> &ResourceInfo {
        &self.info
    }

    fn openapi_schema(&self) -> Option<Value> {
        self.schema.clone()
    }

    async fn get(
        &self,
        ctx: Ctx,
        namespace: &str,
        name: &str,
        part: Part,
        output: Output,
    ) -> Result<Json, ApiError> {
        let store = self.store()?;
        if part == Part::Status && !self.info.status {
            return Err(ApiError::NotFound {
                resource: self.info.qualified(),
                name: name.into(),
            });
        }
        let obj = store
            .request(Verb::Get, namespace, false, store.get(ctx, namespace, name))
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
        let store = self.store()?;
        let (meta, items) = store
            .request(
                Verb::List,
                namespace,
                false,
                store.list(ctx, namespace, Some(options)),
            )
            .await?;
        self.page(meta, &items, output)
    }

    async fn watch(
        &self,
        namespace: &str,
        options: ListOptions,
        output: Output,
        stop: tokio::sync::watch::Receiver<bool>,
    ) -> Result<EventStream, ApiError> {
        let store = self.store()?;
        let events = store
            .request(
                Verb::Watch,
                namespace,
                false,
                store.watch(namespace, Some(options), stop),
            )
            .await?;
        let open = store.watch_opened(namespace);
        let this = CustomEndpoint {
            kind: self.kind.clone(),
            version: self.version.clone(),
            info: self.info.clone(),
            columns: self.columns.clone(),
            schema: None,
        };
        let mut first = true;
        Ok(Box::pin(events.map(move |e| {
            let _open = &open;
            let (kind, obj) = e.map_err(|s| watch_error(&s))?;
            let out = match output {
                Output::Object | Output::Metadata => output,
                Output::Table { include_object, .. } => {
                    let o = Output::Table {
                        include_object,
                        no_headers: !first,
                    };
                    first = false;
                    o
                }
            };
            Ok((kind, this.answer(&obj, out)?))
        })))
    }

    async fn create(
        &self,
        ctx: Ctx,
        namespace: &str,
        body: Value,
        options: &WriteOptions,
    ) -> Result<Written, ApiError> {
        if self.kind.terminating {
            return Err(ApiError::Forbidden(format!(
                "create not allowed while custom resource definition {}.{} is terminating",
                self.kind.plural, self.kind.group
            )));
        }
        let store = self.store()?;
        let dry_run = options.dry_run;
        store
            .request(Verb::Create, namespace, dry_run, async {
                let (obj, warnings) = self.take_in(body, options.field_validation)?;
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
        let store = self.store()?;
        let dry_run = options.dry_run;
        let verb = Verb::update(part);
        store
            .request(verb, namespace, dry_run, async {
                let (obj, warnings) = self.take_in(body, options.field_validation)?;
                let got = obj.metadata.as_ref().map_or("", |m| m.name.as_str());
                if got != name {
                    return Err(ApiError::BadRequest(format!(
                        "the name of the object ({got}) does not match the name on the URL ({name})"
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
        if matches!(patch.patch_type, PatchType::Strategic | PatchType::Apply) {
            return Err(ApiError::UnsupportedMediaType(format!(
                "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json{}",
                if patch.patch_type == PatchType::Apply {
                    " (server-side apply is not supported)"
                } else {
                    ""
                }
            )));
        }
        let store = self.store()?;
        let dry_run = options.dry_run;
        let verb = Verb::patch(part);
        let warnings = std::sync::Mutex::new(Vec::new());
        let apply = |current: &CustomObject| -> Result<CustomObject, ApiError> {
            let original = Value::Object(self.give_out(current)?);
            let patched = patch.apply(&original, None).map_err(ApiError::from_patch)?;
            let (obj, w) = self.take_in(patched, options.field_validation)?;
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
        let store = self.store()?;
        let dry_run = options.dry_run;
        let (obj, deleted) = store
            .request(
                Verb::Delete,
                namespace,
                dry_run,
                store.delete(ctx, namespace, name, Some(options)),
            )
            .await?;
        Ok(Deleted {
            uid: obj
                .metadata
                .as_ref()
                .map(|m| m.uid.clone())
                .unwrap_or_default(),
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
        let store = self.store()?;
        let dry_run = options.dry_run;
        let (meta, items) = store
            .request(
                Verb::DeleteCollection,
                namespace,
                dry_run,
                store.delete_collection(ctx, namespace, Some(list), Some(options)),
            )
            .await?;
        self.page(meta, &items, Output::Object)
    }
}

/// The custom kinds as a provider of the catalog: each served version of each served kind is
/// an endpoint, looked up (and learnt from storage, for a definition another replica
/// established a moment ago) at each request, as upstream's `crdHandler` does.
pub struct CustomProvider {
    service: crate::custom::service::CustomService,
}

impl CustomProvider {
    /// The provider over the custom kinds `service` serves.
    pub fn new(service: crate::custom::service::CustomService) -> Self {
        Self { service }
    }

    pub(crate) fn endpoint(&self, kind: Arc<ServedKind>, version: &str) -> Arc<dyn Endpoint> {
        let crd = self
            .service
            .kinds
            .definitions()
            .into_iter()
            .find(|d| d.metadata.as_ref().is_some_and(|m| m.uid == kind.uid));
        let names = crd
            .as_ref()
            .and_then(|d| d.status.as_ref())
            .and_then(|s| s.accepted_names.clone())
            .filter(|n| !n.plural.is_empty())
            .or_else(|| {
                crd.as_ref()
                    .and_then(|d| d.spec.as_ref())
                    .and_then(|s| s.names.clone())
            })
            .unwrap_or_default();
        let version_spec = crd
            .as_ref()
            .and_then(|d| d.spec.as_ref())
            .and_then(|s| s.versions.iter().find(|v| v.name == version).cloned());
        let status = version_spec
            .as_ref()
            .and_then(|v| v.subresources.as_ref())
            .is_some_and(|s| s.status.is_some());
        let schema = version_spec
            .as_ref()
            .and_then(|v| v.schema.as_ref())
            .and_then(|s| s.open_api_v3_schema.as_ref())
            .and_then(|s| serde_json::to_value(s).ok());
        // Upstream's order, unsorted (`customresource_discovery_controller`); a terminating
        // definition's objects can no longer be created or changed.
        let verbs: &[&str] = if kind.terminating {
            &["delete", "deletecollection", "get", "list", "watch"]
        } else {
            &[
                "delete",
                "deletecollection",
                "get",
                "list",
                "patch",
                "create",
                "update",
                "watch",
            ]
        };
        let info = ResourceInfo {
            group: kind.group.clone(),
            version: version.to_string(),
            plural: kind.plural.clone(),
            singular: if names.singular.is_empty() {
                kind.kind.to_lowercase()
            } else {
                names.singular.clone()
            },
            kind: kind.kind.clone(),
            list_kind: if names.list_kind.is_empty() {
                format!("{}List", kind.kind)
            } else {
                names.list_kind.clone()
            },
            short_names: names.short_names.clone(),
            categories: names.categories.clone(),
            namespaced: kind.namespaced,
            verbs: verbs.iter().map(|v| v.to_string()).collect(),
            status,
            finalize: false,
            storage_version: kind.storage_version == version,
            message: None,
            return_deleted_object: false,
        };
        let mut e = CustomEndpoint::new(kind, version, info);
        e.schema = schema;
        Arc::new(e)
    }
}

#[tonic::async_trait]
impl super::Provider for CustomProvider {
    async fn resolve(
        &self,
        ctx: &Ctx,
        group: &str,
        version: &str,
        plural: &str,
    ) -> Result<Option<Arc<dyn Endpoint>>, ApiError> {
        let target = crate::custom::service::Target {
            group,
            version,
            plural,
            namespace: "",
        };
        match self.service.resolve(ctx, &target, true).await {
            Ok((kind, v)) => Ok(Some(self.endpoint(kind, &v))),
            Err(ApiError::NotFound { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn knows(&self, group: &str, version: &str, plural: &str) -> bool {
        self.service
            .kinds
            .get(group, plural)
            .is_some_and(|k| k.version(version).is_ok())
    }

    fn all(&self) -> Vec<Arc<dyn Endpoint>> {
        let mut out = Vec::new();
        for kind in self.service.kinds.all() {
            for (name, v) in &kind.versions {
                if v.served {
                    out.push(self.endpoint(kind.clone(), name));
                }
            }
        }
        out
    }
}
