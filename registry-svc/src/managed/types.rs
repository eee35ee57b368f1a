//! Each kind's structured-merge-diff type (upstream's type converter): what a field is, for
//! field sets and the apply merge.
//!
//! Built-in kinds' types are read from the registry's descriptors, the same the JSON codec
//! walks, with upstream's list semantics: a list with a patch merge key is a map keyed by it, a
//! list merged as primitives is a set, any other list is atomic (kube-openapi's fallback from
//! `patchStrategy` when a type has no `+listType`), and the few lists whose `+listMapKey`s
//! differ from their patch merge key (a container's `ports` by `containerPort` and `protocol`)
//! are marked here as upstream's OpenAPI marks them. Quantities and int-or-strings are any
//! scalar, `google.protobuf` values anything, as upstream's schemas say.
//!
//! A custom kind's type is its definition's `openAPIV3Schema` (`x-kubernetes-list-type`,
//! `-list-map-keys`, `-map-type`, preserved unknown fields) with `metadata` the built-in
//! ObjectMeta's, as upstream's CRD handler builds it.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, OnceLock},
};

use kubestore_apimachinery::{
    descriptors::{Descriptors, FieldType},
    rules::ListStrategy,
    smd::{
        Atom, ListType, MapType, ParseableType, ScalarKind, Schema, TypeRef, schema::StructField,
    },
};
use serde_json::{Value, json};

/// Lists whose `+listMapKey`s are not their patch merge key alone (k8s.io/api's types.go).
const LIST_MAP_KEYS: &[(&str, &[&str])] = &[
    (".core.v1.Container.ports", &["containerPort", "protocol"]),
    (
        ".core.v1.EphemeralContainer.ports",
        &["containerPort", "protocol"],
    ),
    (
        ".core.v1.PodSpec.topology_spread_constraints",
        &["topologyKey", "whenUnsatisfiable"],
    ),
];

/// Key fields with a default: an item that leaves one out is named with the default
/// (upstream's OpenAPI `default` on them, which structured-merge-diff reads).
const KEY_DEFAULTS: &[(&str, &str)] = &[(".core.v1.ContainerPort.protocol", "TCP")];

/// The name of a message's type in the schema: its full name without the leading dot.
fn type_name(message: &str) -> String {
    message.trim_start_matches('.').to_string()
}

/// The type of built-in objects of `message` (with `apiVersion` and `kind`), built once per
/// message.
pub fn builtin(d: &Descriptors, message: &str) -> Result<Arc<ParseableType>, String> {
    static BUILT: OnceLock<Mutex<HashMap<String, Arc<ParseableType>>>> = OnceLock::new();
    let built = BUILT.get_or_init(Default::default);
    if let Some(t) = built.lock().unwrap_or_else(|p| p.into_inner()).get(message) {
        return Ok(t.clone());
    }
    let mut schema = Schema::new();
    add_message(d, message, &mut schema)?;
    let root = with_type_meta(&schema, &type_name(message));
    schema.insert("__root", root);
    let t = Arc::new(ParseableType::new(
        Arc::new(schema),
        TypeRef::named("__root"),
    ));
    built
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(message.to_string(), t.clone());
    Ok(t)
}

/// The type of a custom kind's objects whose definition's schema is `open_api_v3_schema`
/// (`None`: a definition without one, whose objects keep every field).
pub fn custom(
    d: &Descriptors,
    open_api_v3_schema: Option<&Value>,
) -> Result<ParseableType, String> {
    let meta = ".meta.v1.ObjectMeta";
    let mut schema = Schema::new();
    add_message(d, meta, &mut schema)?;
    let mut spec = match open_api_v3_schema {
        Some(Value::Object(s)) => s.clone(),
        _ => serde_json::Map::from_iter([
            ("type".to_string(), json!("object")),
            (
                "x-kubernetes-preserve-unknown-fields".to_string(),
                json!(true),
            ),
        ]),
    };
    let props = spec.entry("properties").or_insert_with(|| json!({}));
    if let Value::Object(p) = props {
        p.insert(
            "metadata".into(),
            json!({"$ref": format!("#/components/schemas/{}", type_name(meta))}),
        );
        p.insert("apiVersion".into(), json!({"type": "string"}));
        p.insert("kind".into(), json!({"type": "string"}));
    }
    let root = schema
        .openapi_type_ref(&Value::Object(spec))
        .map_err(|e| e.to_string())?;
    Ok(ParseableType::new(Arc::new(schema), root))
}

/// The root type: the message's, with `apiVersion` and `kind`.
fn with_type_meta(schema: &Schema, name: &str) -> Atom {
    let mut atom = schema.get(name).map(|a| Atom::clone(a)).unwrap_or_default();
    if let Some(m) = atom.map.as_mut() {
        for f in ["apiVersion", "kind"] {
            m.fields.insert(
                f.into(),
                StructField {
                    type_ref: TypeRef::scalar(ScalarKind::String),
                    default: None,
                },
            );
        }
    }
    atom
}

/// Adds `message`'s type, and every message type it uses, to `schema`.
fn add_message(d: &Descriptors, message: &str, schema: &mut Schema) -> Result<(), String> {
    let name = type_name(message);
    if schema.get(&name).is_some() {
        return Ok(());
    }
    let desc = d
        .message_desc(message)
        .ok_or_else(|| format!("no message {message} in the registry's descriptors"))?
        .clone();
    // A placeholder first: recursive messages stop here.
    schema.insert(name.clone(), Atom::default());
    let mut map = MapType::default();
    let mut nested = Vec::new();
    for f in &desc.fields {
        let entry = match &f.ty {
            FieldType::Message(m) => d.message_desc(m).filter(|e| e.map_entry).cloned(),
            _ => None,
        };
        let type_ref = if let Some(entry) = entry {
            let value = entry
                .field(2)
                .map(|v| element(&v.ty, f.rule.quantity, &mut nested))
                .unwrap_or_else(TypeRef::deduced);
            TypeRef::map(MapType::of(value))
        } else if f.rule.json {
            TypeRef::deduced()
        } else {
            let one = element(&f.ty, f.rule.quantity, &mut nested);
            if f.repeated {
                TypeRef::list(list_type(&f.full_name, f.rule.list, one))
            } else {
                one
            }
        };
        let default = KEY_DEFAULTS
            .iter()
            .find(|(n, _)| *n == f.full_name)
            .map(|(_, v)| json!(v));
        map.fields
            .insert(f.json_name.clone(), StructField { type_ref, default });
    }
    schema.insert(
        name,
        Atom {
            map: Some(map),
            ..Atom::default()
        },
    );
    for m in nested {
        add_message(d, &m, schema)?;
    }
    Ok(())
}

/// A list field's type: upstream's `+listType` where it differs from the patch strategy, else
/// kube-openapi's fallback from the patch strategy.
fn list_type(full_name: &str, strategy: Option<ListStrategy>, element: TypeRef) -> ListType {
    if let Some((_, keys)) = LIST_MAP_KEYS.iter().find(|(n, _)| *n == full_name) {
        return ListType::associative(element, keys.iter().copied());
    }
    match strategy {
        Some(ListStrategy::MergeByKey(key) | ListStrategy::MergeByKeyRetainKeys(key)) => {
            ListType::associative(element, [key])
        }
        Some(ListStrategy::MergePrimitives) => ListType::set(element),
        Some(ListStrategy::Replace) | None => ListType::atomic(element),
    }
}

/// The type of one value of a field.
fn element(ty: &FieldType, quantity: bool, nested: &mut Vec<String>) -> TypeRef {
    if quantity {
        return TypeRef::scalar(ScalarKind::Untyped);
    }
    match ty {
        FieldType::Double
        | FieldType::Float
        | FieldType::Int64
        | FieldType::Int32
        | FieldType::Uint64
        | FieldType::Uint32
        | FieldType::Fixed64
        | FieldType::Fixed32
        | FieldType::Sfixed32
        | FieldType::Sfixed64
        | FieldType::Sint32
        | FieldType::Sint64 => TypeRef::scalar(ScalarKind::Numeric),
        FieldType::Bool => TypeRef::scalar(ScalarKind::Boolean),
        FieldType::String | FieldType::Bytes | FieldType::Enum(_) => {
            TypeRef::scalar(ScalarKind::String)
        }
        FieldType::Message(m) if m == ".google.protobuf.Timestamp" => {
            TypeRef::scalar(ScalarKind::String)
        }
        // Upstream's `intstr.IntOrString` and `resource.Quantity`: any scalar.
        FieldType::Message(m) if m == ".core.v1.IntOrString" => {
            TypeRef::scalar(ScalarKind::Untyped)
        }
        FieldType::Message(m) if m.starts_with(".google.protobuf.") => TypeRef::deduced(),
        FieldType::Message(m) => {
            nested.push(m.clone());
            TypeRef::named(type_name(m))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubestore_apimachinery::smd::Set;

    fn pod_type() -> Arc<ParseableType> {
        builtin(crate::resource::codec().descriptors(), ".core.v1.Pod").expect("pod type")
    }

    fn fields(t: &ParseableType, v: &Value) -> String {
        let set: Set = t.to_field_set(v).expect("field set");
        set.to_fields_v1()
    }

    #[test]
    fn containers_are_keyed_by_name_and_ports_by_port_and_protocol() {
        let t = pod_type();
        let pod = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "labels": {"a": "b"}, "finalizers": ["x"]},
            "spec": {"containers": [{"name": "c", "image": "i",
                "ports": [{"containerPort": 80, "protocol": "TCP"}],
                "command": ["a", "b"]}]}
        });
        assert_eq!(
            fields(&t, &pod),
            r#"{"f:apiVersion":{},"f:kind":{},"f:metadata":{"f:finalizers":{"v:\"x\"":{}},"f:labels":{"f:a":{}},"f:name":{}},"f:spec":{"f:containers":{"k:{\"name\":\"c\"}":{".":{},"f:command":{},"f:image":{},"f:name":{},"f:ports":{"k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{},"f:protocol":{}}}}}}}"#
        );
    }

    #[test]
    fn a_port_without_protocol_is_named_with_the_default() {
        let t = pod_type();
        let pod = json!({"spec": {"containers": [{"name": "c",
            "ports": [{"containerPort": 80}]}]}});
        assert!(fields(&t, &pod).contains(r#""k:{\"containerPort\":80,\"protocol\":\"TCP\"}""#));
    }

    #[test]
    fn custom_kinds_take_list_types_from_their_schema_and_metadata_from_object_meta() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": {"items": {"type": "array", "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["id"],
                "items": {"type": "object", "properties": {"id": {"type": "string"},
                    "v": {"type": "integer"}}}},
            "tags": {"type": "array", "items": {"type": "string"}}}}}});
        let t = custom(crate::resource::codec().descriptors(), Some(&schema)).expect("type");
        let obj = json!({"apiVersion": "x/v1", "kind": "K",
            "metadata": {"name": "n", "ownerReferences": [{"uid": "u", "name": "o",
                "kind": "K", "apiVersion": "v1"}]},
            "spec": {"items": [{"id": "a", "v": 1}], "tags": ["t"]}});
        let f = fields(&t, &obj);
        assert!(
            f.contains(r#""k:{\"id\":\"a\"}":{".":{},"f:id":{},"f:v":{}}"#),
            "{f}"
        );
        assert!(f.contains(r#""f:tags":{}"#), "{f}");
        assert!(f.contains(r#""k:{\"uid\":\"u\"}""#), "{f}");
    }
}
