//! Kubernetes JSON to protobuf bytes, walking a JSON value with the descriptors.
//!
//! Follows upstream's JSON decoding (`sigs.k8s.io/json`, case-sensitive field names): `null`
//! leaves a field unset, a value of the wrong JSON type is refused with the words of Go's
//! `encoding/json` ("cannot unmarshal string into Go struct field ... of type int64"), and an
//! unknown field is reported by path, for the caller's `fieldValidation` (Strict refuses it,
//! Warn warns, Ignore drops it).

use base64::Engine;
use prost::encoding::{WireType, encode_key, encode_varint};
use serde_json::Value;

use super::{MAX_DEPTH, Step, path_string};
use crate::descriptors::{Descriptors, FieldDesc, FieldType, MessageDesc};

/// A JSON value that cannot be read as its field's type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct DecodeError {
    /// Where (`spec.terminationGracePeriodSeconds`).
    pub path: String,
    /// Upstream's words.
    pub message: String,
}

impl DecodeError {
    pub(super) fn new(path: String, message: String) -> Self {
        Self { path, message }
    }
}

/// The JSON type of `v`, as Go's decoder names it.
pub(crate) fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The Go type a field decodes into, for messages.
fn go_type(field: &FieldDesc) -> String {
    let one = match &field.ty {
        FieldType::Int64 | FieldType::Sint64 | FieldType::Sfixed64 => "int64".to_string(),
        FieldType::Int32 | FieldType::Sint32 | FieldType::Sfixed32 => "int32".into(),
        FieldType::Uint64 | FieldType::Fixed64 => "uint64".into(),
        FieldType::Uint32 | FieldType::Fixed32 => "uint32".into(),
        FieldType::Double => "float64".into(),
        FieldType::Float => "float32".into(),
        FieldType::Bool => "bool".into(),
        FieldType::String | FieldType::Enum(_) => "string".into(),
        FieldType::Bytes => "[]uint8".into(),
        FieldType::Message(m) if m == ".google.protobuf.Timestamp" => "v1.Time".into(),
        FieldType::Message(m) => format!("v1.{}", m.rsplit('.').next().unwrap_or(m)),
    };
    if field.repeated {
        format!("[]{one}")
    } else {
        one
    }
}

/// Reads JSON for messages of `descriptors`.
pub(super) struct Reader<'a> {
    pub(super) descriptors: &'a Descriptors,
    pub(super) unknown: &'a mut Vec<String>,
    pub(super) path: Vec<Step>,
}

impl Reader<'_> {
    fn error(&self, message: String) -> DecodeError {
        DecodeError::new(path_string(&self.path), message)
    }

    fn mismatch(&self, owner: &MessageDesc, field: &FieldDesc, v: &Value) -> DecodeError {
        let owner_name = owner.full_name.rsplit('.').next().unwrap_or_default();
        self.error(format!(
            "json: cannot unmarshal {} into Go struct field {owner_name}.{} of type {}",
            json_type(v),
            path_string(&self.path),
            go_type(field)
        ))
    }

    /// `value`, a JSON object, as the encoded message `desc`.
    pub(super) fn message(
        &mut self,
        desc: &MessageDesc,
        value: &Value,
        skip: &[&str],
        out: &mut Vec<u8>,
        depth: usize,
    ) -> Result<(), DecodeError> {
        if depth > MAX_DEPTH {
            return Err(self.error(format!(
                "the object is nested more than {MAX_DEPTH} levels deep"
            )));
        }
        match desc.full_name.as_str() {
            ".google.protobuf.Struct" => return self.structure(desc, value, out, depth),
            ".google.protobuf.Value" => return self.any_value(desc, value, out, depth),
            ".google.protobuf.ListValue" => return self.list_value(desc, value, out, depth),
            _ => {}
        }
        let Value::Object(map) = value else {
            return Err(self.error(format!(
                "json: cannot unmarshal {} into Go value of type {}",
                json_type(value),
                desc.full_name.trim_start_matches('.')
            )));
        };
        for (key, v) in map {
            if self.path.is_empty() && skip.contains(&key.as_str()) {
                continue;
            }
            self.path.push(Step::Key(key.clone()));
            match desc.field_by_json(key) {
                None => self.unknown.push(path_string(&self.path)),
                Some(field) => self.field(desc, field, v, out, depth)?,
            }
            self.path.pop();
        }
        Ok(())
    }

    fn field(
        &mut self,
        owner: &MessageDesc,
        field: &FieldDesc,
        v: &Value,
        out: &mut Vec<u8>,
        depth: usize,
    ) -> Result<(), DecodeError> {
        if v.is_null() {
            return Ok(());
        }
        if field.repeated {
            if let FieldType::Message(m) = &field.ty
                && let Some(entry) = self.descriptors.message_desc(m).filter(|d| d.map_entry)
            {
                let entry = entry.clone();
                let Value::Object(map) = v else {
                    return Err(self.mismatch(owner, field, v));
                };
                let value_field = entry
                    .field(2)
                    .ok_or_else(|| self.error("map entry without value".into()))?
                    .clone();
                let value_field = FieldDesc {
                    rule: field.rule,
                    ..value_field
                };
                let keeps_null =
                    value_field.ty == FieldType::Message(".google.protobuf.Value".into());
                for (k, item) in map {
                    // A `Struct` keeps its nulls; any other map drops them (Go's zero value).
                    if item.is_null() && !keeps_null {
                        continue;
                    }
                    self.path.push(Step::Key(k.clone()));
                    let mut buf = Vec::new();
                    encode_key(1, WireType::LengthDelimited, &mut buf);
                    encode_varint(k.len() as u64, &mut buf);
                    buf.extend_from_slice(k.as_bytes());
                    self.one(&entry, &value_field, 2, item, &mut buf, depth)?;
                    self.path.pop();
                    encode_key(field.number, WireType::LengthDelimited, out);
                    encode_varint(buf.len() as u64, out);
                    out.extend_from_slice(&buf);
                }
                return Ok(());
            }
            let Value::Array(items) = v else {
                return Err(self.mismatch(owner, field, v));
            };
            for (i, item) in items.iter().enumerate() {
                self.path.push(Step::Index(i));
                if item.is_null() && !matches!(field.ty, FieldType::Message(_)) {
                    self.path.pop();
                    continue;
                }
                self.one(owner, field, field.number, item, out, depth)?;
                self.path.pop();
            }
            return Ok(());
        }
        self.one(owner, field, field.number, v, out, depth)
    }

    /// One value of `field`, written as field number `number`.
    fn one(
        &mut self,
        owner: &MessageDesc,
        field: &FieldDesc,
        number: u32,
        v: &Value,
        out: &mut Vec<u8>,
        depth: usize,
    ) -> Result<(), DecodeError> {
        let int = |v: &Value| v.as_i64();
        match &field.ty {
            FieldType::Int64 | FieldType::Int32 | FieldType::Sfixed64 | FieldType::Sfixed32 => {
                let n = int(v).ok_or_else(|| self.mismatch(owner, field, v))?;
                let fits = match field.ty {
                    FieldType::Int32 | FieldType::Sfixed32 => i32::try_from(n).is_ok(),
                    _ => true,
                };
                if !fits {
                    return Err(self.mismatch(owner, field, v));
                }
                match field.ty {
                    FieldType::Sfixed64 => {
                        encode_key(number, WireType::SixtyFourBit, out);
                        out.extend_from_slice(&n.to_le_bytes());
                    }
                    FieldType::Sfixed32 => {
                        encode_key(number, WireType::ThirtyTwoBit, out);
                        out.extend_from_slice(&(n as i32).to_le_bytes());
                    }
                    _ => {
                        encode_key(number, WireType::Varint, out);
                        encode_varint(n as u64, out);
                    }
                }
            }
            FieldType::Sint64 | FieldType::Sint32 => {
                let n = int(v).ok_or_else(|| self.mismatch(owner, field, v))?;
                encode_key(number, WireType::Varint, out);
                encode_varint(((n << 1) ^ (n >> 63)) as u64, out);
            }
            FieldType::Uint64 | FieldType::Uint32 | FieldType::Fixed64 | FieldType::Fixed32 => {
                let n = v.as_u64().ok_or_else(|| self.mismatch(owner, field, v))?;
                match field.ty {
                    FieldType::Fixed64 => {
                        encode_key(number, WireType::SixtyFourBit, out);
                        out.extend_from_slice(&n.to_le_bytes());
                    }
                    FieldType::Fixed32 => {
                        let n = u32::try_from(n).map_err(|_| self.mismatch(owner, field, v))?;
                        encode_key(number, WireType::ThirtyTwoBit, out);
                        out.extend_from_slice(&n.to_le_bytes());
                    }
                    _ => {
                        encode_key(number, WireType::Varint, out);
                        encode_varint(n, out);
                    }
                }
            }
            FieldType::Double => {
                let f = v.as_f64().ok_or_else(|| self.mismatch(owner, field, v))?;
                encode_key(number, WireType::SixtyFourBit, out);
                out.extend_from_slice(&f.to_bits().to_le_bytes());
            }
            FieldType::Float => {
                let f = v.as_f64().ok_or_else(|| self.mismatch(owner, field, v))? as f32;
                encode_key(number, WireType::ThirtyTwoBit, out);
                out.extend_from_slice(&f.to_bits().to_le_bytes());
            }
            FieldType::Bool => {
                let b = v.as_bool().ok_or_else(|| self.mismatch(owner, field, v))?;
                encode_key(number, WireType::Varint, out);
                encode_varint(u64::from(b), out);
            }
            FieldType::String => {
                let text;
                let s = match v {
                    // JSON text: the value, whatever it is, written compact.
                    _ if field.rule.json => {
                        text = serde_json::to_string(v).map_err(|e| self.error(e.to_string()))?;
                        text.as_str()
                    }
                    Value::String(s) => s.as_str(),
                    // A Quantity also reads a JSON number (`cpu: 1`), and is written back as
                    // its string.
                    Value::Number(n) if field.rule.quantity => {
                        text = n.to_string();
                        text.as_str()
                    }
                    _ => return Err(self.mismatch(owner, field, v)),
                };
                encode_key(number, WireType::LengthDelimited, out);
                encode_varint(s.len() as u64, out);
                out.extend_from_slice(s.as_bytes());
            }
            FieldType::Bytes => {
                let Value::String(s) = v else {
                    return Err(self.mismatch(owner, field, v));
                };
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(s)
                    .map_err(|e| {
                        self.error(format!(
                            "illegal base64 data at {}: {e}",
                            path_string(&self.path)
                        ))
                    })?;
                encode_key(number, WireType::LengthDelimited, out);
                encode_varint(bytes.len() as u64, out);
                out.extend_from_slice(&bytes);
            }
            FieldType::Enum(e) => {
                let n = match v {
                    Value::String(s) => self
                        .descriptors
                        .enum_desc(e)
                        .and_then(|d| d.numbers.get(s).copied())
                        .ok_or_else(|| {
                            self.error(format!(
                                "{}: Unsupported value: {s:?}",
                                path_string(&self.path)
                            ))
                        })?,
                    Value::Number(n) => n
                        .as_i64()
                        .and_then(|n| i32::try_from(n).ok())
                        .ok_or_else(|| self.mismatch(owner, field, v))?,
                    _ => return Err(self.mismatch(owner, field, v)),
                };
                encode_key(number, WireType::Varint, out);
                encode_varint(n as i64 as u64, out);
            }
            FieldType::Message(m) => {
                let desc = self
                    .descriptors
                    .message_desc(m)
                    .cloned()
                    .ok_or_else(|| self.error(format!("no descriptor for {m}")))?;
                let mut buf = Vec::new();
                if m == ".core.v1.IntOrString" {
                    // A number is its int (field 1), text its string (field 2).
                    match v {
                        Value::Number(n) => {
                            let i = n
                                .as_i64()
                                .and_then(|i| i32::try_from(i).ok())
                                .ok_or_else(|| self.mismatch(owner, field, v))?;
                            encode_key(1, WireType::Varint, &mut buf);
                            encode_varint(i as i64 as u64, &mut buf);
                        }
                        Value::String(t) => {
                            encode_key(2, WireType::LengthDelimited, &mut buf);
                            encode_varint(t.len() as u64, &mut buf);
                            buf.extend_from_slice(t.as_bytes());
                        }
                        _ => return Err(self.mismatch(owner, field, v)),
                    }
                } else if m == ".google.protobuf.Timestamp" {
                    let Value::String(s) = v else {
                        return Err(self.mismatch(owner, field, v));
                    };
                    let (seconds, nanos) = crate::time::parse(s).ok_or_else(|| {
                        self.error(format!(
                            "parsing time {s:?} as \"2006-01-02T15:04:05Z07:00\": cannot parse"
                        ))
                    })?;
                    if seconds != 0 {
                        encode_key(1, WireType::Varint, &mut buf);
                        encode_varint(seconds as u64, &mut buf);
                    }
                    if nanos != 0 {
                        encode_key(2, WireType::Varint, &mut buf);
                        encode_varint(nanos as i64 as u64, &mut buf);
                    }
                } else {
                    if !v.is_object() && !m.starts_with(".google.protobuf.") {
                        return Err(self.mismatch(owner, field, v));
                    }
                    self.message(&desc, v, &[], &mut buf, depth + 1)?;
                    // A Go struct value (an `always` message) that holds nothing is the field's
                    // zero: absent, as it is written back (`{}`), so that `resources: {}` and
                    // no `resources` are one pod.
                    if buf.is_empty() && field.rule.always && !field.repeated {
                        return Ok(());
                    }
                }
                encode_key(number, WireType::LengthDelimited, out);
                encode_varint(buf.len() as u64, out);
                out.extend_from_slice(&buf);
            }
        }
        Ok(())
    }

    fn structure(
        &mut self,
        desc: &MessageDesc,
        value: &Value,
        out: &mut Vec<u8>,
        depth: usize,
    ) -> Result<(), DecodeError> {
        let Value::Object(_) = value else {
            return Err(self.error(format!(
                "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                json_type(value)
            )));
        };
        let field = desc
            .field(1)
            .ok_or_else(|| self.error("Struct without fields".into()))?
            .clone();
        self.field(desc, &field, value, out, depth)
    }

    fn any_value(
        &mut self,
        desc: &MessageDesc,
        value: &Value,
        out: &mut Vec<u8>,
        depth: usize,
    ) -> Result<(), DecodeError> {
        let number = match value {
            Value::Null => {
                encode_key(1, WireType::Varint, out);
                encode_varint(0, out);
                return Ok(());
            }
            Value::Number(_) => 2,
            Value::String(_) => 3,
            Value::Bool(_) => 4,
            Value::Object(_) => 5,
            Value::Array(_) => 6,
        };
        let field = desc
            .field(number)
            .ok_or_else(|| self.error("Value without that kind".into()))?
            .clone();
        self.one(desc, &field, number, value, out, depth)
    }

    fn list_value(
        &mut self,
        desc: &MessageDesc,
        value: &Value,
        out: &mut Vec<u8>,
        depth: usize,
    ) -> Result<(), DecodeError> {
        let field = desc
            .field(1)
            .ok_or_else(|| self.error("ListValue without values".into()))?
            .clone();
        let Value::Array(items) = value else {
            return Err(self.mismatch(desc, &field, value));
        };
        for (i, item) in items.iter().enumerate() {
            self.path.push(Step::Index(i));
            self.one(desc, &field, 1, item, out, depth)?;
            self.path.pop();
        }
        Ok(())
    }
}
