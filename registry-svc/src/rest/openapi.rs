//! OpenAPI v3 (`/openapi/v3` and one document per group version), what kubectl validates
//! manifests with and `kubectl explain` reads: every resource's paths, with
//! `x-kubernetes-group-version-kind` on each operation and the `fieldValidation` parameter on
//! writes (kubectl then leaves validation to the server's `fieldValidation=Strict`), and
//! `components.schemas` with each kind's schema (`catalog::schemas`: generated from the
//! descriptors for built-in kinds, with upstream's descriptions of their fields; a
//! definition's `openAPIV3Schema` for custom kinds).
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

use kubestore_apimachinery::json::Codec;
use serde_json::{Map, Value, json};

use super::Rest;
use crate::catalog::{
    Endpoint, ResourceInfo,
    schemas::{self, custom_schema_name, gvk, schema_name},
};

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
            self.paths(e.info(), &mut paths);
        }
        schemas::kind_schemas(self.codec.descriptors(), endpoints, &mut schemas);
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
        // Server-side apply, for every kind.
        patch_types.push("application/apply-patch+yaml");
        let op = |action: &str, write: bool| -> Value {
            let mut o = Map::new();
            o.insert("x-kubernetes-action".into(), json!(action));
            o.insert("x-kubernetes-group-version-kind".into(), gvk(info));
            o.insert(
                "responses".into(),
                json!({"200": {"description": "OK", "content": {"application/json": {"schema": body_ref}}}}),
            );
            if write {
                let mut parameters = vec![
                    json!({"name": "dryRun", "in": "query", "schema": {"type": "string", "uniqueItems": true}}),
                    json!({"name": "fieldManager", "in": "query", "schema": {"type": "string", "uniqueItems": true}}),
                    json!({"name": "fieldValidation", "in": "query", "schema": {"type": "string", "uniqueItems": true}}),
                ];
                if action == "patch" {
                    parameters.push(json!({"name": "force", "in": "query", "schema": {"type": "boolean", "uniqueItems": true}}));
                }
                o.insert("parameters".into(), Value::Array(parameters));
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
