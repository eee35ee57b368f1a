//! OpenAPI v3 (`/openapi/v3` and one document per group version), what kubectl validates
//! manifests with and `kubectl explain` reads: every resource's paths, with
//! `x-kubernetes-group-version-kind` on each operation and the `fieldValidation` parameter on
//! writes (kubectl then leaves validation to the server's `fieldValidation=Strict`), and
//! `components.schemas` with each kind's schema: generated from the descriptors for built-in
//! kinds (the same fields the JSON codec reads and writes), a definition's `openAPIV3Schema`
//! for custom kinds.
//!
//! Built-in kinds' schemas carry upstream's descriptions of their fields (`description`).
//!
//! The documents are built once per change of the catalog (a definition added, changed or
//! removed), off the async workers, and served from memory: building them took ~100 ms of CPU
//! with one 1 MB definition, and clients that asked in a loop once built them per request. The
//! index names each document with a hash of its content (`?hash=`), so clients' caches notice a
//! new definition; each document carries it as its `ETag`, and a request that already has it
//! (`If-None-Match`) is answered 304 without a body.

use std::{
    collections::{BTreeMap, HashMap},
    hash::Hasher,
    sync::{Arc, RwLock},
};

use bytes::Bytes;

use kubestore_apimachinery::{
    descriptors::{Descriptors, FieldType},
    json::Codec,
    rules::ListStrategy,
};
use serde_json::{Map, Value, json};

use super::Rest;
use crate::catalog::{Endpoint, ResourceInfo};

/// The OpenAPI documents' source, and the documents last built.
pub struct OpenApi {
    codec: Arc<Codec>,
    built: RwLock<Option<Arc<Built>>>,
}

/// The documents of one state of the catalog.
pub struct Built {
    /// The catalog's generation they were built from.
    generation: u64,
    /// `/openapi/v3`.
    pub index: Bytes,
    /// Each group version's document, by path (`api/v1`, `apis/G/V`).
    pub documents: HashMap<String, Document>,
    /// `/openapi/v2` in JSON (`super::openapi_v2`).
    pub v2_json: Document,
    /// `/openapi/v2` in gnostic's protobuf, what kubectl asks for.
    pub v2_protobuf: Document,
}

/// One document, and the hash that names it.
pub struct Document {
    /// The document (JSON, or protobuf for OpenAPI v2's).
    pub body: Bytes,
    /// Its hash (16 hex digits), the index's `?hash=` and the document's `ETag`.
    pub hash: String,
}

impl Document {
    fn of(body: Bytes) -> Self {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        h.write(&body);
        Self {
            hash: format!("{:016X}", h.finish()),
            body,
        }
    }
}

/// The Kubernetes version the documents describe (`v1.33.0`).
fn kubernetes_version() -> String {
    format!(
        "v{}.{}.0",
        super::discovery::KUBERNETES_MAJOR,
        super::discovery::KUBERNETES_MINOR
    )
}

/// The upstream schema name of a proto message (`io.k8s.api.core.v1.Pod`).
fn schema_name(message: &str) -> String {
    let m = message.trim_start_matches('.');
    if let Some(rest) = m.strip_prefix("meta.v1.") {
        format!("io.k8s.apimachinery.pkg.apis.meta.v1.{rest}")
    } else if let Some(rest) = m.strip_prefix("apiextensions.v1.") {
        format!("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.{rest}")
    } else if let Some(rest) = m.strip_prefix("google.protobuf.") {
        format!("io.k8s.kubestore.google.protobuf.{rest}")
    } else {
        format!("io.k8s.api.{m}")
    }
}

fn reference(message: &str) -> Value {
    json!({"allOf": [{"$ref": format!("#/components/schemas/{}", schema_name(message))}]})
}

fn gvk(info: &ResourceInfo) -> Value {
    json!({"group": info.group, "version": info.version, "kind": info.kind})
}

impl OpenApi {
    /// Documents over `codec`'s descriptors.
    pub fn new(codec: Arc<Codec>) -> Self {
        Self {
            codec,
            built: RwLock::new(None),
        }
    }

    /// The documents of the catalog as it is now: those last built, or built again (off the
    /// async workers) if the catalog changed since.
    pub fn current(&self, rest: &Rest) -> Result<Arc<Built>, crate::error::ApiError> {
        let generation = rest.catalog.generation();
        if let Some(b) = self
            .built
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .as_ref()
            .filter(|b| b.generation == generation)
        {
            return Ok(b.clone());
        }
        // Always large enough to leave the async workers: the build walks every schema.
        crate::offload::run(crate::offload::INLINE_BYTES, None, || {
            let mut built = self.built.write().unwrap_or_else(|p| p.into_inner());
            // Another request may have built them while this one waited.
            if let Some(b) = built.as_ref().filter(|b| b.generation == generation) {
                return Ok(b.clone());
            }
            let fresh = Arc::new(self.build(rest, generation));
            *built = Some(fresh.clone());
            Ok(fresh)
        })
    }

    /// Every document, the index naming them by hash, and OpenAPI v2.
    fn build(&self, rest: &Rest, generation: u64) -> Built {
        let mut documents = HashMap::new();
        let mut paths = Map::new();
        let mut values = Vec::new();
        for (path, endpoints) in group_versions(rest) {
            let value = self.document(&endpoints);
            let document = Document::of(Bytes::from(value.to_string()));
            paths.insert(
                path.clone(),
                json!({"serverRelativeURL": format!("/openapi/v3/{path}?hash={}", document.hash)}),
            );
            documents.insert(path, document);
            values.push(value);
        }
        let v2 = super::openapi_v2::document(values.iter(), &kubernetes_version());
        Built {
            generation,
            index: Bytes::from(json!({"paths": paths}).to_string()),
            documents,
            v2_protobuf: Document::of(Bytes::from(super::openapi_v2::protobuf(&v2))),
            v2_json: Document::of(Bytes::from(v2.to_string())),
        }
    }

    /// The document of one group version's `endpoints`.
    fn document(&self, endpoints: &[Arc<dyn Endpoint>]) -> Value {
        let mut paths = Map::new();
        let mut schemas = Map::new();
        for e in endpoints {
            let info = e.info();
            self.paths(info, &mut paths);
            match (&info.message, e.openapi_schema()) {
                (Some(message), _) => {
                    self.message_schemas(self.codec.descriptors(), message, &mut schemas);
                    if let Some(Value::Object(s)) = schemas.get_mut(&schema_name(message)) {
                        s.insert("x-kubernetes-group-version-kind".into(), json!([gvk(info)]));
                        type_meta_properties(s);
                    }
                }
                (None, schema) => {
                    let mut s = match schema {
                        Some(Value::Object(s)) => s,
                        _ => Map::from_iter([
                            ("type".to_string(), json!("object")),
                            (
                                "x-kubernetes-preserve-unknown-fields".to_string(),
                                json!(true),
                            ),
                        ]),
                    };
                    s.insert("x-kubernetes-group-version-kind".into(), json!([gvk(info)]));
                    type_meta_properties(&mut s);
                    if let Some(Value::Object(props)) = s.get_mut("properties") {
                        props.insert("metadata".into(), reference(".meta.v1.ObjectMeta"));
                    }
                    self.message_schemas(
                        self.codec.descriptors(),
                        ".meta.v1.ObjectMeta",
                        &mut schemas,
                    );
                    schemas.insert(custom_schema_name(info), Value::Object(s));
                }
            }
        }
        json!({
            "openapi": "3.0.0",
            "info": {"title": "Kubernetes", "version": kubernetes_version()},
            "paths": paths,
            "components": {"schemas": schemas},
        })
    }

    /// The paths of one resource, with upstream's extensions on each operation.
    fn paths(&self, info: &ResourceInfo, paths: &mut Map<String, Value>) {
        let root = if info.group.is_empty() {
            "/api/v1".to_string()
        } else {
            format!("/apis/{}/{}", info.group, info.version)
        };
        let scope = if info.namespaced {
            "/namespaces/{namespace}"
        } else {
            ""
        };
        let body_ref = match &info.message {
            Some(m) => json!({"$ref": format!("#/components/schemas/{}", schema_name(m))}),
            None => json!({"$ref": format!("#/components/schemas/{}", custom_schema_name(info))}),
        };
        // A PATCH says which patches it takes (kubectl's apply picks its patch by them): a
        // strategic merge patch only for built-in kinds, as upstream.
        let mut patch_types = vec![
            "application/json-patch+json",
            "application/merge-patch+json",
        ];
        if info.message.is_some() {
            patch_types.push("application/strategic-merge-patch+json");
        }
        let op = |action: &str, write: bool| -> Value {
            let mut o = Map::new();
            o.insert("x-kubernetes-action".into(), json!(action));
            o.insert("x-kubernetes-group-version-kind".into(), gvk(info));
            o.insert(
                "responses".into(),
                json!({"200": {"description": "OK", "content": {"application/json": {"schema": body_ref}}}}),
            );
            if write {
                o.insert(
                    "parameters".into(),
                    json!([
                        {"name": "dryRun", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
                        {"name": "fieldManager", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
                        {"name": "fieldValidation", "in": "query", "schema": {"type": "string", "uniqueItems": true}},
                    ]),
                );
                let types: Vec<&str> = if action == "patch" {
                    patch_types.clone()
                } else {
                    vec!["application/json"]
                };
                let content: Map<String, Value> = types
                    .into_iter()
                    .map(|t| (t.to_string(), json!({"schema": body_ref})))
                    .collect();
                o.insert(
                    "requestBody".into(),
                    json!({"content": content, "required": true}),
                );
            }
            Value::Object(o)
        };
        // Only the operations of the resource's verbs (a review is only ever created).
        let has = |verb: &str| info.verbs.iter().any(|v| v == verb);
        let mut collection = Map::new();
        for (method, verb, action, write) in [
            ("get", "list", "list", false),
            ("post", "create", "post", true),
            ("delete", "deletecollection", "deletecollection", false),
        ] {
            if has(verb) {
                collection.insert(method.into(), op(action, write));
            }
        }
        if !collection.is_empty() {
            paths.insert(
                format!("{root}{scope}/{}", info.plural),
                Value::Object(collection),
            );
        }
        let mut item = Map::new();
        for (method, verb, write) in [
            ("get", "get", false),
            ("put", "update", true),
            ("patch", "patch", true),
            ("delete", "delete", false),
        ] {
            if has(verb) {
                // Upstream's action of an object's operation is its method's name.
                item.insert(method.into(), op(method, write));
            }
        }
        if !item.is_empty() {
            paths.insert(
                format!("{root}{scope}/{}/{{name}}", info.plural),
                Value::Object(item),
            );
        }
        if info.status {
            let mut status = Map::new();
            status.insert("get".into(), op("get", false));
            status.insert("put".into(), op("put", true));
            status.insert("patch".into(), op("patch", true));
            paths.insert(
                format!("{root}{scope}/{}/{{name}}/status", info.plural),
                Value::Object(status),
            );
        }
    }

    /// The schema of `message` and of every message it uses, into `schemas`.
    fn message_schemas(&self, d: &Descriptors, message: &str, schemas: &mut Map<String, Value>) {
        let name = schema_name(message);
        if schemas.contains_key(&name) {
            return;
        }
        let Some(desc) = d.message_desc(message) else {
            return;
        };
        // Placeholder first: recursive messages stop here.
        schemas.insert(name.clone(), json!({}));
        let mut properties = BTreeMap::new();
        let mut nested = Vec::new();
        for f in &desc.fields {
            let map_entry = match &f.ty {
                FieldType::Message(m) => d.message_desc(m).filter(|e| e.map_entry).cloned(),
                _ => None,
            };
            let schema = if let Some(entry) = map_entry {
                let value = entry
                    .field(2)
                    .map(|v| field_schema(&v.ty, &mut nested))
                    .unwrap_or_else(|| json!({}));
                json!({"type": "object", "additionalProperties": value})
            } else if f.rule.json {
                // JSON text in the message, the value it holds in Kubernetes JSON (a
                // definition's `openAPIV3Schema`).
                json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
            } else {
                let one = field_schema(&f.ty, &mut nested);
                if f.repeated {
                    json!({"type": "array", "items": one})
                } else {
                    one
                }
            };
            let mut schema = schema;
            if let (Some(d), Value::Object(o)) = (description(&name, &f.json_name), &mut schema) {
                o.insert("description".into(), json!(d));
            }
            if let Value::Object(o) = &mut schema {
                patch_extensions(f.rule.list, o);
            }
            properties.insert(f.json_name.clone(), schema);
        }
        let mut schema = json!({"type": "object", "properties": properties});
        if let (Some(d), Value::Object(o)) = (description(&name, ""), &mut schema) {
            o.insert("description".into(), json!(d));
        }
        schemas.insert(name, schema);
        for m in nested {
            self.message_schemas(d, &m, schemas);
        }
    }
}

/// Upstream's description of the schema `name` (`field` ""), or of its `field`: upstream's API
/// documentation for the fields kubestore models (`descriptions.json`, made by
/// `scripts/openapi-descriptions.py`), so that `kubectl explain` prints what it prints against
/// kube-apiserver.
fn description(name: &str, field: &str) -> Option<&'static str> {
    static DESCRIPTIONS: std::sync::OnceLock<HashMap<String, HashMap<String, String>>> =
        std::sync::OnceLock::new();
    DESCRIPTIONS
        .get_or_init(|| serde_json::from_str(include_str!("descriptions.json")).unwrap_or_default())
        .get(name)?
        .get(field)
        .map(String::as_str)
}

/// Upstream's `x-kubernetes-patch-strategy` and `x-kubernetes-patch-merge-key` of a list
/// field (its `patchStrategy` and `patchMergeKey` tags, `kubestore_apimachinery::rules`).
/// kubectl's client-side apply builds its strategic merge patch from these once the PATCH
/// operation says it takes one: without them every list is atomic to it, and a Pod applied
/// twice is patched with its whole `containers` list ("configured", not "unchanged").
fn patch_extensions(list: Option<ListStrategy>, schema: &mut Map<String, Value>) {
    let (strategy, key) = match list {
        Some(ListStrategy::MergeByKey(key)) => ("merge", Some(key)),
        Some(ListStrategy::MergeByKeyRetainKeys(key)) => ("merge,retainKeys", Some(key)),
        Some(ListStrategy::MergePrimitives) => ("merge", None),
        Some(ListStrategy::Replace) | None => return,
    };
    schema.insert("x-kubernetes-patch-strategy".into(), json!(strategy));
    if let Some(key) = key {
        schema.insert("x-kubernetes-patch-merge-key".into(), json!(key));
    }
}

/// A custom kind's schema name (`com.example.stable.v1.CronTab`, as upstream reverses the group).
fn custom_schema_name(info: &ResourceInfo) -> String {
    let reversed: Vec<&str> = info.group.split('.').rev().collect();
    format!("{}.{}.{}", reversed.join("."), info.version, info.kind)
}

/// `kind` and `apiVersion` properties on a kind's schema.
fn type_meta_properties(schema: &mut Map<String, Value>) {
    let props = schema.entry("properties").or_insert_with(|| json!({}));
    if let Value::Object(p) = props {
        p.entry("apiVersion")
            .or_insert_with(|| json!({"type": "string", "description": "APIVersion defines the versioned schema of this representation of an object."}));
        p.entry("kind")
            .or_insert_with(|| json!({"type": "string", "description": "Kind is a string value representing the REST resource this object represents."}));
    }
}

fn field_schema(ty: &FieldType, nested: &mut Vec<String>) -> Value {
    match ty {
        FieldType::Int64
        | FieldType::Sint64
        | FieldType::Sfixed64
        | FieldType::Uint64
        | FieldType::Fixed64 => {
            json!({"type": "integer", "format": "int64"})
        }
        FieldType::Int32
        | FieldType::Sint32
        | FieldType::Sfixed32
        | FieldType::Uint32
        | FieldType::Fixed32 => {
            json!({"type": "integer", "format": "int32"})
        }
        FieldType::Double => json!({"type": "number", "format": "double"}),
        FieldType::Float => json!({"type": "number", "format": "float"}),
        FieldType::Bool => json!({"type": "boolean"}),
        FieldType::String | FieldType::Enum(_) => json!({"type": "string"}),
        FieldType::Bytes => json!({"type": "string", "format": "byte"}),
        FieldType::Message(m) if m == ".google.protobuf.Timestamp" => {
            json!({"type": "string", "format": "date-time"})
        }
        // Upstream's `intstr.IntOrString` schema.
        FieldType::Message(m) if m == ".core.v1.IntOrString" => {
            json!({"type": "string", "format": "int-or-string"})
        }
        FieldType::Message(m) if m.starts_with(".google.protobuf.") => {
            json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
        }
        FieldType::Message(m) => {
            nested.push(m.clone());
            reference(m)
        }
    }
}

/// Every served group version, by its document path (`api/v1`, `apis/G/V`).
fn group_versions(rest: &Rest) -> BTreeMap<String, Vec<Arc<dyn Endpoint>>> {
    let mut out: BTreeMap<String, Vec<Arc<dyn Endpoint>>> = BTreeMap::new();
    for e in rest.catalog.all() {
        let info = e.info();
        let path = if info.group.is_empty() {
            format!("api/{}", info.version)
        } else {
            format!("apis/{}/{}", info.group, info.version)
        };
        out.entry(path).or_default().push(e);
    }
    out
}
