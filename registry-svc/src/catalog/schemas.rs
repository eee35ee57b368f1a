//! Each kind's OpenAPI v3 schema, as `components.schemas` of upstream's `/openapi/v3`
//! documents hold them: generated from the descriptors for built-in kinds (the same fields the
//! JSON codec reads and writes, with upstream's descriptions and patch extensions), a
//! definition's `openAPIV3Schema` for custom kinds.
//!
//! Below every transport: the REST API serves these schemas (`rest::openapi`), and
//! ValidatingAdmissionPolicy's type checking reads them (`admission::policy::status`).

use std::{
    collections::{BTreeMap, HashMap},
    sync::Arc,
};

use kubestore_apimachinery::{
    descriptors::{Descriptors, FieldType},
    rules::ListStrategy,
};
use serde_json::{Map, Value, json};

use super::{Endpoint, ResourceInfo};

/// The schemas of `endpoints`' kinds, and of every message they use, into `schemas` (keyed by
/// upstream's schema names; each kind's carries `x-kubernetes-group-version-kind`).
pub fn kind_schemas(
    d: &Descriptors,
    endpoints: &[Arc<dyn Endpoint>],
    schemas: &mut Map<String, Value>,
) {
    for e in endpoints {
        let info = e.info();
        match (&info.message, e.openapi_schema()) {
            (Some(message), _) => {
                message_schemas(d, message, schemas);
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
                message_schemas(d, ".meta.v1.ObjectMeta", schemas);
                schemas.insert(custom_schema_name(info), Value::Object(s));
            }
        }
    }
}

/// The name of `info`'s kind's schema in `components.schemas`.
pub fn kind_schema_name(info: &ResourceInfo) -> String {
    match &info.message {
        Some(message) => schema_name(message),
        None => custom_schema_name(info),
    }
}

/// The upstream schema name of a proto message (`io.k8s.api.core.v1.Pod`).
pub fn schema_name(message: &str) -> String {
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

/// A reference to `message`'s schema, as a property holds it.
pub fn reference(message: &str) -> Value {
    json!({"allOf": [{"$ref": format!("#/components/schemas/{}", schema_name(message))}]})
}

/// `x-kubernetes-group-version-kind`'s entry for `info`.
pub fn gvk(info: &ResourceInfo) -> Value {
    json!({"group": info.group, "version": info.version, "kind": info.kind})
}

/// The schema of `message` and of every message it uses, into `schemas`.
pub fn message_schemas(d: &Descriptors, message: &str, schemas: &mut Map<String, Value>) {
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
        message_schemas(d, &m, schemas);
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
pub fn custom_schema_name(info: &ResourceInfo) -> String {
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
