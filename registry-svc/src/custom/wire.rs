//! A custom object's `google.protobuf.Struct`, written straight to protobuf's wire form from
//! its stored form, for Lists (`custom::passthrough`).
//!
//! The typed path builds a `pbjson_types::Struct` (a `HashMap` per JSON object, SipHash on
//! every key) and prost encodes it, recomputing each nested map's length at every level above
//! it; for a List of 1,000 objects that was a quarter of registry-svc's CPU (BENCHMARKS.md).
//! Here each JSON object is written once, innermost first, and framed with its length: the
//! bytes a client receives decode to the same Struct as the typed path's (a test says so).
//!
//! Wire form (google/protobuf/struct.proto): `Struct { map<string, Value> fields = 1 }`, each
//! entry a message `{ string key = 1; Value value = 2 }`; `Value` is a oneof of
//! `null_value = 1` (varint 0), `number_value = 2` (double), `string_value = 3`,
//! `bool_value = 4`, `struct_value = 5`, `list_value = 6` (`ListValue { repeated Value
//! values = 1 }`).

use bytes::Bytes;
use prost::{
    Message,
    encoding::{WireType, encode_key, encode_varint},
};
use serde_json::{Map, Value};

use crate::{
    custom::{
        object::{CustomObject, metadata_json},
        openapi::Schema,
    },
    error::ApiError,
};

/// The Struct of the object stored as `stored` (an encoded [`CustomObject`]), as the client
/// asked for it: `apiVersion` is `api_version` (conversion `None`), `metadata` upstream's JSON,
/// the rest as `schema` reads it (`Schema::read`: pruned and defaulted, unless it already is).
pub fn encode_object(
    stored: &[u8],
    api_version: &str,
    schema: Option<&Schema>,
) -> Result<Bytes, ApiError> {
    let malformed = |e: &dyn std::fmt::Display| {
        ApiError::Internal(format!("a stored custom object does not decode: {e}"))
    };
    kubestore_proto::depth::bounded(stored).map_err(|e| malformed(&e))?;
    let obj = CustomObject::decode(stored).map_err(|e| malformed(&e))?;
    let content: Map<String, Value> = if obj.content.is_empty() {
        Map::new()
    } else {
        match serde_json::from_slice(&obj.content) {
            Ok(Value::Object(m)) => m,
            _ => {
                return Err(ApiError::Internal(
                    "a stored custom object's content is not a JSON object".into(),
                ));
            }
        }
    };
    let mut content = content;
    if let Some(s) = schema {
        s.read(obj.schema, &mut content);
    }
    let mut out = Vec::with_capacity(obj.content.len() * 2 + 256);
    for (k, v) in &content {
        if k != "apiVersion" && k != "metadata" {
            entry(&mut out, k, v);
        }
    }
    entry(&mut out, "metadata", &metadata_json(obj.metadata.as_ref())?);
    entry(
        &mut out,
        "apiVersion",
        &Value::String(api_version.to_string()),
    );
    Ok(Bytes::from(out))
}

/// Appends `bytes` as the length-delimited field `tag`.
fn delimited(out: &mut Vec<u8>, tag: u32, bytes: &[u8]) {
    encode_key(tag, WireType::LengthDelimited, out);
    encode_varint(bytes.len() as u64, out);
    out.extend_from_slice(bytes);
}

/// Appends one `fields` entry of a Struct.
fn entry(out: &mut Vec<u8>, key: &str, value: &Value) {
    let mut e = Vec::with_capacity(key.len() + 16);
    delimited(&mut e, 1, key.as_bytes());
    let mut v = Vec::new();
    value_fields(&mut v, value);
    delimited(&mut e, 2, &v);
    delimited(out, 1, &e);
}

/// Appends the fields of a `Value` message holding `value`.
fn value_fields(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Null => {
            encode_key(1, WireType::Varint, out);
            encode_varint(0, out);
        }
        Value::Number(n) => {
            encode_key(2, WireType::SixtyFourBit, out);
            out.extend_from_slice(&n.as_f64().unwrap_or(0.0).to_le_bytes());
        }
        Value::String(s) => delimited(out, 3, s.as_bytes()),
        Value::Bool(b) => {
            encode_key(4, WireType::Varint, out);
            encode_varint(u64::from(*b), out);
        }
        Value::Object(m) => {
            let mut s = Vec::new();
            for (k, v) in m {
                entry(&mut s, k, v);
            }
            delimited(out, 5, &s);
        }
        Value::Array(items) => {
            let mut l = Vec::new();
            for item in items {
                let mut v = Vec::new();
                value_fields(&mut v, item);
                delimited(&mut l, 1, &v);
            }
            delimited(out, 6, &l);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::custom::object::to_struct;
    use serde_json::json;

    #[test]
    fn the_wire_form_decodes_to_the_typed_paths_struct() {
        let Value::Object(m) = json!({
            "apiVersion": "stable.example.com/v1",
            "kind": "CronTab",
            "metadata": {"name": "a", "namespace": "ns", "labels": {"x": "y"}, "generation": 3,
                "creationTimestamp": "2026-11-25T10:00:00Z", "finalizers": ["f"]},
            "spec": {"replicas": 2, "cronSpec": "* * * * */5", "ratio": 0.5, "on": true,
                "nothing": null, "list": [1, "two", {"three": [3.5]}, [], {}], "empty": {}},
            "status": {"ready": false},
        }) else {
            unreachable!()
        };
        let stored = CustomObject::from_json(m).expect("parses").encode_to_vec();
        let wire = encode_object(&stored, "stable.example.com/v2", None).expect("encodes");
        let decoded = pbjson_types::Struct::decode(wire).expect("a Struct");
        // The typed path: the object's JSON with the asked version, as a Struct.
        let obj = CustomObject::decode(&stored[..]).expect("decodes");
        let mut json = obj.to_json().expect("json");
        json.insert("apiVersion".into(), json!("stable.example.com/v2"));
        assert_eq!(decoded, to_struct(json).expect("struct"));
    }

    /// Reads prune and default by the schema an object is read with, skipping the walk for
    /// objects written under that very schema (already pruned and defaulted).
    #[test]
    fn objects_are_read_as_the_schema_serves_them_walked_only_if_written_under_another() {
        let schema = Schema::parse(&json!({"type": "object", "properties": {"spec": {
            "type": "object", "properties": {"a": {"type": "string"}, "n": {"type": "integer", "default": 1}}}}}))
        .expect("schema");
        let Value::Object(m) = json!({"apiVersion": "example.com/v1", "kind": "W",
            "metadata": {"name": "w"}, "spec": {"a": "x", "removed": true}})
        else {
            unreachable!()
        };
        let mut obj = CustomObject::from_json(m).expect("parses");
        let read = |obj: &CustomObject| {
            let wire = encode_object(&obj.encode_to_vec(), "example.com/v1", Some(&schema))
                .expect("encodes");
            serde_json::to_value(pbjson_types::Struct::decode(wire).expect("a Struct"))
                .expect("json")
        };
        assert_eq!(
            read(&obj)["spec"],
            json!({"a": "x", "n": 1.0}),
            "written under another schema"
        );
        obj.schema = schema.fingerprint();
        assert_eq!(
            read(&obj)["spec"],
            json!({"a": "x", "removed": true}),
            "taken as written under this schema: not walked"
        );
    }
}
