//! A custom object as registry-svc stores it, and its JSON form.
//!
//! Clients send and receive custom objects as upstream's JSON (in a `google.protobuf.Struct`).
//! Storage holds them as a [`CustomObject`]: the metadata as `meta.v1.ObjectMeta` in field 1,
//! like every kind (so storage-svc, which reads field 1 for resourceVersion, UIDs, finalizers and
//! label selectors, needs nothing new and stays resource-agnostic), and the rest of the object
//! (apiVersion, kind, spec, status, ...) as JSON bytes in field 2, keys sorted, so equal objects
//! encode to equal bytes and storage can skip unchanged writes; field 3 says which schema the
//! content was pruned and defaulted by. (Upstream stores the whole object as JSON; see the
//! README's deviations.)

use kubestore_proto::meta::v1::{ListOptions, ObjectMeta};
use serde_json::{Map, Value};

use crate::error::ApiError;

/// A custom object in storage; see the module docs.
#[derive(Clone, PartialEq, prost::Message)]
pub struct CustomObject {
    /// `metadata`, as every kind's field 1.
    #[prost(message, optional, tag = "1")]
    pub metadata: Option<ObjectMeta>,
    /// Every other top-level field, as a JSON object.
    #[prost(bytes = "vec", tag = "2")]
    pub content: Vec<u8>,
    /// The fingerprint of the schema `content` was last pruned and defaulted by
    /// (`openapi::Schema::fingerprint`; 0: unknown). Reads prune and default by the current
    /// schema (upstream's decoder does): an object written under the same schema already is,
    /// and is served without walking it again. Never sent to clients.
    #[prost(fixed64, tag = "3")]
    pub schema: u64,
}

/// The generic Store's view of custom objects: the names come from each definition at run time
/// (`store::Names`), so these constants only stand in where nothing names the kind.
impl crate::resource::Resource for CustomObject {
    const KIND: &'static str = "CustomObject";
    const RESOURCE: &'static str = "customobjects";
    type ListRequest = kubestore_proto::apiextensions::v1::ListCustomObjectsRequest;
    fn list_parts(request: Self::ListRequest) -> (String, Option<ListOptions>) {
        (request.namespace, request.options)
    }
    type WatchRequest = kubestore_proto::apiextensions::v1::WatchCustomObjectsRequest;
    fn watch_parts(request: Self::WatchRequest) -> (String, Option<ListOptions>) {
        (request.namespace, request.options)
    }
    fn as_json(&self) -> Result<Value, ApiError> {
        // The inherent `to_json`: the content with its metadata.
        CustomObject::to_json(self).map(Value::Object)
    }
    fn from_json(value: &Value) -> Result<Self, ApiError> {
        match value {
            // The inherent `from_json`: metadata parsed, the rest kept (pruned and defaulted by
            // the strategy, as any write).
            Value::Object(m) => CustomObject::from_json(m.clone()),
            other => Err(ApiError::BadRequest(format!(
                "the object must be a JSON object, not {}",
                type_name(other)
            ))),
        }
    }
    fn meta(&self) -> Option<&ObjectMeta> {
        self.metadata.as_ref()
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        self.metadata.get_or_insert_with(Default::default)
    }
}

impl CustomObject {
    /// The object from its JSON form: `metadata` parsed as ObjectMeta (unknown metadata fields
    /// are dropped; managed fields' `fieldsV1` objects become the text ObjectMeta holds), the
    /// rest kept as it is.
    pub fn from_json(mut object: Map<String, Value>) -> Result<Self, ApiError> {
        let metadata = match object.remove("metadata") {
            None | Some(Value::Null) => ObjectMeta::default(),
            Some(Value::Object(mut m)) => {
                kubestore_proto::managed_fields::fields_v1_as_text(&mut m);
                serde_json::from_value(Value::Object(m))
                    .map_err(|e| ApiError::BadRequest(format!("metadata does not parse: {e}")))?
            }
            Some(other) => {
                return Err(ApiError::BadRequest(format!(
                    "metadata must be an object, not {}",
                    type_name(&other)
                )));
            }
        };
        let mut me = Self {
            metadata: Some(metadata),
            content: Vec::new(),
            schema: 0,
        };
        me.set_content(object)?;
        Ok(me)
    }

    /// Everything but the metadata, as a JSON object.
    pub fn content(&self) -> Result<Map<String, Value>, ApiError> {
        if self.content.is_empty() {
            return Ok(Map::new());
        }
        match serde_json::from_slice(&self.content) {
            Ok(Value::Object(m)) => Ok(m),
            Ok(_) | Err(_) => Err(ApiError::Internal(
                "a stored custom object's content is not a JSON object".into(),
            )),
        }
    }

    /// Replaces everything but the metadata. Keys are written sorted, whatever order they came
    /// in (a `Struct` is a hash map, and serde_json keeps insertion order when a crate of the
    /// build enables `preserve_order`): equal objects must encode to equal bytes.
    pub fn set_content(&mut self, content: Map<String, Value>) -> Result<(), ApiError> {
        self.content = serde_json::to_vec(&canonical(Value::Object(content)))
            .map_err(|e| ApiError::Internal(format!("encoding a custom object: {e}")))?;
        Ok(())
    }

    /// The whole object as upstream's JSON (metadata with camelCase fields, int64 values as
    /// numbers as in Kubernetes, not as proto3 JSON strings).
    pub fn to_json(&self) -> Result<Map<String, Value>, ApiError> {
        let mut object = self.content()?;
        object.insert("metadata".into(), metadata_json(self.metadata.as_ref())?);
        Ok(object)
    }
}

/// `metadata` as upstream's JSON: camelCase fields, int64 values as numbers (as in Kubernetes,
/// not as proto3 JSON strings), UTC times with `Z`.
pub fn metadata_json(meta: Option<&ObjectMeta>) -> Result<Value, ApiError> {
    let mut meta = match meta {
        Some(m) => serde_json::to_value(m),
        None => Ok(Value::Object(Map::new())),
    }
    .map_err(|e| ApiError::Internal(format!("encoding metadata: {e}")))?;
    if let Value::Object(m) = &mut meta {
        for field in ["generation", "deletionGracePeriodSeconds"] {
            if let Some(Value::String(s)) = m.get(field)
                && let Ok(n) = s.parse::<i64>()
            {
                m.insert(field.into(), Value::from(n));
            }
        }
        // Kubernetes writes UTC times with `Z` (RFC 3339, as Go's time.RFC3339).
        for field in ["creationTimestamp", "deletionTimestamp"] {
            if let Some(Value::String(s)) = m.get_mut(field) {
                utc_z(s);
            }
        }
        // A managed fields entry's `fieldsV1` is the JSON its text holds.
        kubestore_proto::managed_fields::fields_v1_as_json(m);
        if let Some(Value::Array(entries)) = m.get_mut("managedFields") {
            for e in entries.iter_mut().filter_map(Value::as_object_mut) {
                if let Some(Value::String(s)) = e.get_mut("time") {
                    utc_z(s);
                }
            }
        }
    }
    Ok(meta)
}

/// `s`, a UTC time, with `Z` for `+00:00`.
fn utc_z(s: &mut String) {
    if let Some(utc) = s.strip_suffix("+00:00") {
        *s = format!("{utc}Z");
    }
}

/// `v` with every object's keys in sorted order.
fn canonical(v: Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut entries: Vec<(String, Value)> = m.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k, canonical(v)))
                    .collect(),
            )
        }
        Value::Array(a) => Value::Array(a.into_iter().map(canonical).collect()),
        other => other,
    }
}

/// A JSON value from a `google.protobuf.Struct` (numbers are doubles there: integral ones
/// become integers, so that `replicas: 3` is an integer to the schema, as in upstream's JSON).
pub fn from_struct(s: pbjson_types::Struct) -> Result<Map<String, Value>, ApiError> {
    match serde_json::to_value(&s) {
        Ok(Value::Object(mut m)) => {
            for v in m.values_mut() {
                integral(v, 2)?;
            }
            Ok(m)
        }
        Ok(_) => Err(ApiError::BadRequest(
            "the object must be a JSON object".into(),
        )),
        Err(e) => Err(ApiError::BadRequest(format!(
            "the object does not parse: {e}"
        ))),
    }
}

/// A `Struct` held by the registry itself (a definition's schema) as JSON, integral numbers as
/// integers, as upstream writes it (`"minLength": 1`, not `1.0`, which kube-openapi's int64
/// fields refuse); Null when it nests past [`MAX_DEPTH`].
pub fn struct_json(s: &pbjson_types::Struct) -> Value {
    from_struct(s.clone()).map_or(Value::Null, Value::Object)
}

/// A `google.protobuf.Struct` from a JSON object, built directly (every Get, List item and
/// watch event goes through here: a serde round trip through `Struct`'s deserializer cost a
/// List of custom objects a fifth of its time).
pub fn to_struct(m: Map<String, Value>) -> Result<pbjson_types::Struct, ApiError> {
    Ok(struct_of(m))
}

fn struct_of(m: Map<String, Value>) -> pbjson_types::Struct {
    pbjson_types::Struct {
        fields: m.into_iter().map(|(k, v)| (k, value_of(v))).collect(),
    }
}

fn value_of(v: Value) -> pbjson_types::Value {
    use pbjson_types::value::Kind;
    let kind = match v {
        Value::Null => Kind::NullValue(0),
        Value::Bool(b) => Kind::BoolValue(b),
        // A Struct's numbers are doubles, as in JSON: an int64 beyond 2^53 loses precision,
        // as it would in any JSON client.
        Value::Number(n) => Kind::NumberValue(n.as_f64().unwrap_or(0.0)),
        Value::String(s) => Kind::StringValue(s),
        Value::Array(a) => Kind::ListValue(pbjson_types::ListValue {
            values: a.into_iter().map(value_of).collect(),
        }),
        Value::Object(m) => Kind::StructValue(struct_of(m)),
    };
    pbjson_types::Value { kind: Some(kind) }
}

/// How deep a custom object may nest, in JSON levels (its root object is level 1).
/// Upstream's JSON decoder allows 10,000; ours is `kubestore_proto::depth`'s bound: every walk
/// of an object (prost's decoding, serde's, the schema's and CEL's) recurses, and at this depth
/// all of them fit a 2 MiB stack in a debug build (a test runs them on one), and serde_json
/// (which reads stored objects back, and stops at 128) reads every object written.
pub const MAX_DEPTH: usize = kubestore_proto::depth::MAX_JSON_DEPTH;

/// Makes whole numbers integers, in `v` at JSON level `level` and below; refuses nesting past
/// [`MAX_DEPTH`].
fn integral(v: &mut Value, level: usize) -> Result<(), ApiError> {
    if level > MAX_DEPTH && (v.is_array() || v.is_object()) {
        return Err(ApiError::BadRequest(format!(
            "the object nests deeper than {MAX_DEPTH} levels"
        )));
    }
    let depth = level;
    match v {
        Value::Number(n) => {
            if let Some(f) = n.as_f64()
                && n.is_f64()
                && f.fract() == 0.0
                && f.abs() < 9.007_199_254_740_992e15
            {
                *v = Value::from(f as i64);
            }
        }
        Value::Array(items) => {
            for i in items {
                integral(i, depth + 1)?;
            }
        }
        Value::Object(m) => {
            for i in m.values_mut() {
                integral(i, depth + 1)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// The JSON type of a value, as upstream's messages name it.
pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_struct_built_directly_is_the_one_serde_builds() {
        let Value::Object(m) = json!({
            "b": true, "c": 1.5, "d": -3, "e": "s",
            "f": [1, "x", {"g": [false]}], "h": {"i": {"j": 2}}
        }) else {
            unreachable!()
        };
        let via_serde: pbjson_types::Struct =
            serde_json::from_value(Value::Object(m.clone())).expect("serde");
        assert_eq!(to_struct(m).expect("direct"), via_serde);
        // null is sent as protobuf's explicit `null_value` (serde's path left the kind unset,
        // which some clients cannot print).
        let Value::Object(m) = json!({"a": null}) else {
            unreachable!()
        };
        assert_eq!(
            to_struct(m).expect("direct").fields["a"].kind,
            Some(pbjson_types::value::Kind::NullValue(0))
        );
    }

    #[test]
    fn json_round_trips_through_storage_with_metadata_in_field_1() {
        let Value::Object(m) = json!({
            "apiVersion": "stable.example.com/v1",
            "kind": "CronTab",
            "metadata": {"name": "a", "namespace": "ns", "labels": {"x": "y"}, "generation": 3},
            "spec": {"replicas": 2, "cronSpec": "* * * * */5"}
        }) else {
            unreachable!()
        };
        let o = CustomObject::from_json(m.clone()).expect("parses");
        assert_eq!(o.metadata.as_ref().expect("meta").name, "a");
        assert_eq!(o.metadata.as_ref().expect("meta").generation, 3);
        let back = o.to_json().expect("json");
        assert_eq!(back["spec"], m["spec"]);
        assert_eq!(back["metadata"]["generation"], json!(3));
        assert_eq!(back["metadata"]["labels"], json!({"x": "y"}));
        let encoded = prost::Message::encode_to_vec(&o);
        assert_eq!(
            <CustomObject as prost::Message>::decode(&encoded[..]).expect("decodes"),
            o
        );
    }

    #[test]
    fn equal_objects_encode_to_equal_bytes_whatever_their_key_order() {
        let a: Map<String, Value> =
            serde_json::from_str(r#"{"b":1,"a":{"y":2,"x":3}}"#).expect("json");
        let b: Map<String, Value> =
            serde_json::from_str(r#"{"a":{"x":3,"y":2},"b":1}"#).expect("json");
        let (a, b) = (
            CustomObject::from_json(a).expect("a"),
            CustomObject::from_json(b).expect("b"),
        );
        assert_eq!(a.content, b.content);
        assert_eq!(a.content, br#"{"a":{"x":3,"y":2},"b":1}"#.to_vec());
    }

    /// `{"apiVersion", "kind", "metadata", "spec": {"a": {"a": ... "leaf"}}}`, `levels` JSON
    /// levels deep (the root object is level 1).
    fn deep_object(levels: usize) -> Value {
        let mut deep = json!("leaf");
        for _ in 0..levels - 1 {
            deep = json!({"a": deep});
        }
        json!({"apiVersion": "example.com/v1", "kind": "Deep", "metadata": {"name": "d"}, "spec": deep})
    }

    /// An object as deep as accepted goes through every walk of a write and of a read on a
    /// 2 MiB stack (a tokio worker's) in a debug build: prost's decoding, serde's, the
    /// schema's pruning, defaulting, validation (ratcheting) and CEL, storage's encoding and
    /// the List pass-through's; one level deeper is refused.
    #[test]
    fn the_deepest_object_accepted_is_walked_on_a_worker_stack() {
        use prost::Message as _;
        std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(|| {
                let schema = crate::custom::openapi::Schema::parse(&json!({"type": "object",
                    "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                        "x-kubernetes-validations": [{"rule": "self.a != self"}]}}}))
                .expect("schema");
                let wire = |v: Value| {
                    let s: pbjson_types::Struct = serde_json::from_value(v).expect("a Struct");
                    let bytes = s.encode_to_vec();
                    kubestore_proto::depth::check(&bytes, kubestore_proto::depth::MAX_NESTING)
                        .expect("within the wire's bound");
                    pbjson_types::Struct::decode(&bytes[..]).expect("decodes")
                };
                let e = from_struct(wire(deep_object(MAX_DEPTH + 1))).expect_err("too deep");
                assert!(e.to_string().contains("nests deeper than"), "{e}");
                let mut v = Value::Object(from_struct(wire(deep_object(MAX_DEPTH))).expect("json"));
                schema.normalize(&mut v);
                assert_eq!(schema.validate(&v), vec![]);
                assert_eq!(schema.validate_update(&v, Some(&v)), vec![]);
                let Value::Object(m) = v else { unreachable!() };
                let stored = CustomObject::from_json(m).expect("stored").encode_to_vec();
                let back = CustomObject::decode(&stored[..]).expect("decodes");
                let out = to_struct(back.to_json().expect("reads back")).expect("struct");
                let out = serde_json::to_value(&out).expect("json");
                let (mut at, mut objects) = (&out["spec"], 0);
                while at.is_object() {
                    objects += 1;
                    at = &at["a"];
                }
                assert_eq!((objects, at), (MAX_DEPTH - 1, &json!("leaf")), "read back whole");
                let listed =
                    crate::custom::wire::encode_object(&stored, "example.com/v1", Some(&schema))
                        .expect("the List pass-through's encoding");
                kubestore_proto::depth::check(&listed, kubestore_proto::depth::MAX_NESTING)
                    .expect("a client can decode it");
            })
            .expect("thread")
            .join()
            .expect("no stack overflow");
    }

    #[test]
    fn struct_numbers_that_are_whole_become_integers() {
        let s: pbjson_types::Struct =
            serde_json::from_value(json!({"spec": {"replicas": 3.0, "ratio": 0.5}}))
                .expect("struct");
        let m = from_struct(s).expect("json");
        assert!(m["spec"]["replicas"].is_i64());
        assert!(m["spec"]["ratio"].is_f64());
    }
}
