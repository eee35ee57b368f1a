//! Custom kinds in the catalog: the [`Shape`] of one served version of a custom kind
//! (upstream's `crdHandler` serving a version through the same handlers as every built-in
//! kind), and [`CustomProvider`], which hands the catalog the endpoint of every served version
//! of every served kind as definitions come and go.
//!
//! An object is taken in as upstream's handler does: its `apiVersion` and `kind` checked against
//! the request's version and the served kind, pruned (what pruning drops being the unknown
//! fields `fieldValidation` judges) and defaulted by the version's schema, and stored in the
//! storage version (conversion `None`: only `apiVersion` changes). Objects go out in the
//! requested version, pruned and defaulted by its schema. Strategic merge patches are refused
//! (415), as upstream refuses them for custom resources: there are no Go struct tags to merge
//! lists by.

use std::sync::Arc;

use bytes::Bytes;
use kubestore_apimachinery::{
    jsonpath,
    table::{self, Column},
};
use serde_json::{Map, Value};

use super::{
    Endpoint, FieldValidation, Json, ResourceInfo,
    builtin::{check_type_meta, unknown_fields},
    endpoint::{Shape, StoreEndpoint},
};
use crate::{
    custom::{
        kinds::{ServedKind, ServedVersion},
        object::CustomObject,
    },
    error::ApiError,
    store::Ctx,
};

/// One served version of a custom kind.
pub struct CustomShape {
    kind: Arc<ServedKind>,
    version: String,
    info: ResourceInfo,
    columns: Vec<(Column, String)>,
    /// The version's `openAPIV3Schema`, for OpenAPI.
    schema: Option<Value>,
}

impl CustomShape {
    fn served(&self) -> Result<&ServedVersion, ApiError> {
        self.kind.version(&self.version)
    }

    /// A client's object taken in: checked, pruned, defaulted, in the storage version.
    fn take_in_object(
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
    pub fn give_out_map(&self, obj: &CustomObject) -> Result<Map<String, Value>, ApiError> {
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
        let json = self.give_out_map(obj)?;
        serde_json::to_vec(&json)
            .map(Bytes::from)
            .map_err(|e| ApiError::Internal(format!("custom object as JSON: {e}")))
    }
}

impl Shape<CustomObject> for CustomShape {
    fn take_in(
        &self,
        body: Value,
        validation: FieldValidation,
    ) -> Result<(CustomObject, Vec<String>), ApiError> {
        self.take_in_object(body, validation)
    }

    fn give_out(&self, obj: &CustomObject) -> Result<Json, ApiError> {
        self.to_json(obj)
    }

    fn columns(&self) -> Vec<Column> {
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

    fn cells(&self, _obj: &CustomObject, json: &Value, now: i64) -> Vec<Value> {
        let mut cells = vec![
            json.pointer("/metadata/name")
                .cloned()
                .unwrap_or(Value::Null),
        ];
        for (column, path) in &self.columns {
            cells.push(cell(jsonpath::first(path, json), &column.ty, now));
        }
        cells
    }

    fn admit_create(&self) -> Result<(), ApiError> {
        if self.kind.terminating {
            return Err(ApiError::Forbidden(format!(
                "create not allowed while custom resource definition {}.{} is terminating",
                self.kind.plural, self.kind.group
            )));
        }
        Ok(())
    }

    fn openapi_schema(&self) -> Option<Value> {
        self.schema.clone()
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

/// The custom kinds as a provider of the catalog: each served version of each served kind is
/// an endpoint, looked up (and learnt from storage, for a definition another replica
/// established a moment ago) at each request, as upstream's `crdHandler` does.
pub struct CustomProvider {
    service: crate::custom::resolve::Resolver,
}

impl CustomProvider {
    /// The provider over the custom kinds `service` serves.
    pub fn new(service: crate::custom::resolve::Resolver) -> Self {
        Self { service }
    }

    pub(crate) fn endpoint(
        &self,
        kind: Arc<ServedKind>,
        version: &str,
    ) -> Option<Arc<dyn Endpoint>> {
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
            .and_then(crate::custom::definition::schema_json);
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
        let served = kind.version(version).ok();
        let store = served.map(|v| v.store.clone());
        let columns = served.map(printer_columns).unwrap_or_default();
        let shape = CustomShape {
            kind,
            version: version.to_string(),
            info: info.clone(),
            columns,
            schema,
        };
        // None when not served (looked up as served: the definition changed meanwhile).
        let store = store?;
        Some(Arc::new(StoreEndpoint::new(
            store,
            shape,
            super::codec(),
            info,
        )))
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
        let target = crate::custom::resolve::Target {
            group,
            version,
            plural,
            namespace: "",
        };
        match self.service.resolve(ctx, &target, true).await {
            Ok((kind, v)) => Ok(self.endpoint(kind, &v)),
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

    fn generation(&self) -> u64 {
        self.service.kinds.changes()
    }

    fn all(&self) -> Vec<Arc<dyn Endpoint>> {
        let mut out = Vec::new();
        for kind in self.service.kinds.all() {
            for (name, v) in &kind.versions {
                if v.served
                    && let Some(e) = self.endpoint(kind.clone(), name)
                {
                    out.push(e);
                }
            }
        }
        out
    }
}
