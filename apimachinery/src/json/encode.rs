//! Protobuf bytes to Kubernetes JSON, walking the wire format with the descriptors.

use std::io::Write;

use base64::Engine;

use super::{EncodeError, MAX_DEPTH};
use crate::descriptors::{Descriptors, FieldDesc, FieldType, MessageDesc};

/// One field's value on the wire.
#[derive(Debug, Clone, Copy)]
enum Wire<'a> {
    Varint(u64),
    Fixed64(u64),
    Fixed32(u32),
    Len(&'a [u8]),
}

fn malformed(desc: &MessageDesc, detail: impl Into<String>) -> EncodeError {
    EncodeError::Malformed {
        message: desc.full_name.clone(),
        detail: detail.into(),
    }
}

fn varint(buf: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *buf.get(*at)?;
        *at += 1;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// The field at `at` of an encoded message (its number and value); `at` moves past it.
fn next_field<'b>(buf: &'b [u8], at: &mut usize) -> Option<(u32, Wire<'b>)> {
    let key = varint(buf, at)?;
    let number = u32::try_from(key >> 3).ok().filter(|n| *n != 0)?;
    let value = match key & 7 {
        0 => Wire::Varint(varint(buf, at)?),
        1 => {
            let b: [u8; 8] = buf.get(*at..*at + 8)?.try_into().ok()?;
            *at += 8;
            Wire::Fixed64(u64::from_le_bytes(b))
        }
        5 => {
            let b: [u8; 4] = buf.get(*at..*at + 4)?.try_into().ok()?;
            *at += 4;
            Wire::Fixed32(u32::from_le_bytes(b))
        }
        2 => {
            let len = usize::try_from(varint(buf, at)?).ok()?;
            let end = at.checked_add(len).filter(|e| *e <= buf.len())?;
            let v = Wire::Len(&buf[*at..end]);
            *at = end;
            v
        }
        _ => return None,
    };
    Some((number, value))
}

/// The fields of an encoded message, in wire order.
fn fields(buf: &[u8]) -> Option<Vec<(u32, Wire<'_>)>> {
    let mut at = 0;
    let mut out = Vec::with_capacity(8);
    while at < buf.len() {
        out.push(next_field(buf, &mut at)?);
    }
    Some(out)
}

fn zigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// Writes JSON for messages of `descriptors` into `out`.
pub(super) struct Writer<'a> {
    pub(super) descriptors: &'a Descriptors,
    pub(super) out: &'a mut Vec<u8>,
}

/// Whether `s` can be written between quotes as it is: no control characters, quotes or
/// backslashes (what JSON requires escaped; serde_json escapes nothing else either).
fn plain(s: &str) -> bool {
    // No early exit: the compiler vectorizes the whole scan.
    !s.bytes().fold(false, |bad, b| {
        bad | (b < 0x20) | (b == b'"') | (b == b'\\')
    })
}

impl<'a> Writer<'a> {
    fn string(&mut self, s: &str) {
        // Names, keys and most values need no escaping: copied at once. Otherwise serde_json's
        // escaping (writing into a Vec cannot fail).
        if plain(s) {
            self.out.reserve(s.len() + 2);
            self.out.push(b'"');
            self.out.extend_from_slice(s.as_bytes());
            self.out.push(b'"');
        } else {
            let _ = serde_json::to_writer(&mut *self.out, s);
        }
    }

    /// The descriptor of message `name`, borrowed from the descriptors (not from `self`).
    fn message(&self, name: &str) -> Option<&'a MessageDesc> {
        let descriptors: &'a Descriptors = self.descriptors;
        descriptors.message_desc(name).map(|d| &**d)
    }

    fn key(&mut self, first: &mut bool, name: &str) {
        if !*first {
            self.out.push(b',');
        }
        *first = false;
        self.string(name);
        self.out.push(b':');
    }

    /// A message as a JSON object (or as the JSON its well-known type stands for).
    pub(super) fn object(
        &mut self,
        desc: &MessageDesc,
        bytes: &[u8],
        type_meta: Option<(&str, &str)>,
        depth: usize,
    ) -> Result<(), EncodeError> {
        if depth > MAX_DEPTH {
            return Err(malformed(desc, "nested too deeply"));
        }
        let mut wire = fields(bytes).ok_or_else(|| malformed(desc, "invalid wire format"))?;
        match desc.full_name.as_str() {
            ".google.protobuf.Timestamp"
            | ".k8s.io.apimachinery.pkg.apis.meta.v1.Time"
            | ".k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime" => return self.timestamp(&wire),
            // Kubernetes' protobuf (`apimachinery`'s): a Quantity is its string, an
            // IntOrString its int or its string.
            ".k8s.io.apimachinery.pkg.api.resource.Quantity" => {
                let text = wire.iter().rev().find_map(|(n, v)| match (n, v) {
                    (1, Wire::Len(b)) => std::str::from_utf8(b).ok(),
                    _ => None,
                });
                self.string(text.unwrap_or(""));
                return Ok(());
            }
            ".k8s.io.apimachinery.pkg.util.intstr.IntOrString" => {
                let ty = wire.iter().rev().find_map(|(n, v)| match (n, v) {
                    (1, Wire::Varint(t)) => Some(*t),
                    _ => None,
                });
                if ty == Some(1) {
                    let text = wire.iter().rev().find_map(|(n, v)| match (n, v) {
                        (3, Wire::Len(b)) => std::str::from_utf8(b).ok(),
                        _ => None,
                    });
                    self.string(text.unwrap_or(""));
                } else {
                    let n = wire.iter().rev().find_map(|(n, v)| match (n, v) {
                        (2, Wire::Varint(i)) => Some(*i as i32),
                        _ => None,
                    });
                    write_num(self.out, n.unwrap_or(0));
                }
                return Ok(());
            }
            // kubestore's own IntOrString (`core.v1`): its int or its string.
            ".core.v1.IntOrString" => {
                match wire.iter().rev().find(|(n, _)| *n == 1 || *n == 2) {
                    Some((2, Wire::Len(b))) => {
                        let text = std::str::from_utf8(b)
                            .map_err(|_| malformed(desc, "a string that is not UTF-8"))?;
                        self.string(text);
                    }
                    Some((1, Wire::Varint(n))) => write_num(self.out, *n as i32),
                    _ => write_num(self.out, 0),
                }
                return Ok(());
            }
            ".google.protobuf.Struct" => return self.structure(desc, &wire, depth),
            ".google.protobuf.Value" => return self.value(desc, &wire, depth),
            ".google.protobuf.ListValue" => return self.list_value(desc, &wire, depth),
            _ => {}
        }
        // prost writes fields in number order; sort anyway (stable: repeated values keep
        // their order) so that every field's values are together.
        wire.sort_by_key(|(n, _)| *n);
        self.out.push(b'{');
        let mut first = true;
        if let Some((api_version, kind)) = type_meta {
            self.key(&mut first, "kind");
            self.string(kind);
            self.key(&mut first, "apiVersion");
            self.string(api_version);
        }
        self.members(desc, &wire, &mut first, depth)?;
        self.out.push(b'}');
        Ok(())
    }

    /// A message's fields, as members of the object being written (`wire` sorted by number).
    fn members(
        &mut self,
        desc: &MessageDesc,
        wire: &[(u32, Wire<'_>)],
        first: &mut bool,
        depth: usize,
    ) -> Result<(), EncodeError> {
        let mut at = 0;
        for field in &desc.fields {
            while at < wire.len() && wire[at].0 < field.number {
                at += 1;
            }
            let start = at;
            while at < wire.len() && wire[at].0 == field.number {
                at += 1;
            }
            self.field(field, &wire[start..at], first, depth)?;
        }
        Ok(())
    }

    /// An embedded message's fields as its parent's (the `inline` rule).
    fn inline(
        &mut self,
        field: &FieldDesc,
        v: Wire<'_>,
        first: &mut bool,
        depth: usize,
    ) -> Result<(), EncodeError> {
        let (FieldType::Message(m), Wire::Len(bytes)) = (&field.ty, v) else {
            return Err(self.bad(field, "wire type"));
        };
        if depth > MAX_DEPTH {
            return Err(self.bad(field, "nesting"));
        }
        let desc = self
            .message(m)
            .ok_or_else(|| EncodeError::UnknownType(m.clone()))?;
        let mut wire = fields(bytes).ok_or_else(|| malformed(desc, "invalid wire format"))?;
        wire.sort_by_key(|(n, _)| *n);
        self.members(desc, &wire, first, depth + 1)
    }

    fn field(
        &mut self,
        field: &FieldDesc,
        values: &[(u32, Wire<'_>)],
        first: &mut bool,
        depth: usize,
    ) -> Result<(), EncodeError> {
        if field.repeated {
            if values.is_empty() && !field.rule.always {
                return Ok(());
            }
            // Looked up only for fields present: most repeated fields of an object are empty.
            let map_entry = match &field.ty {
                FieldType::Message(m) => self.message(m).filter(|d| d.map_entry),
                _ => None,
            };
            if values.is_empty() {
                if field.rule.always {
                    self.key(first, &field.json_name);
                    self.out
                        .extend_from_slice(if map_entry.is_some() { b"{}" } else { b"[]" });
                }
                return Ok(());
            }
            self.key(first, &field.json_name);
            if let Some(entry) = map_entry {
                return self.map(entry, values, depth);
            }
            self.out.push(b'[');
            let mut first_item = true;
            for (_, v) in values {
                // Packed scalars: one length-delimited run of values.
                if let (Wire::Len(run), true) = (v, is_packable(&field.ty)) {
                    let mut at = 0;
                    while at < run.len() {
                        let item = match &field.ty {
                            FieldType::Double | FieldType::Fixed64 | FieldType::Sfixed64 => {
                                let b: [u8; 8] = run
                                    .get(at..at + 8)
                                    .and_then(|s| s.try_into().ok())
                                    .ok_or_else(|| self.bad(field, "packed run"))?;
                                at += 8;
                                Wire::Fixed64(u64::from_le_bytes(b))
                            }
                            FieldType::Float | FieldType::Fixed32 | FieldType::Sfixed32 => {
                                let b: [u8; 4] = run
                                    .get(at..at + 4)
                                    .and_then(|s| s.try_into().ok())
                                    .ok_or_else(|| self.bad(field, "packed run"))?;
                                at += 4;
                                Wire::Fixed32(u32::from_le_bytes(b))
                            }
                            _ => Wire::Varint(
                                varint(run, &mut at)
                                    .ok_or_else(|| self.bad(field, "packed run"))?,
                            ),
                        };
                        if !first_item {
                            self.out.push(b',');
                        }
                        first_item = false;
                        self.scalar_or_message(field, item, depth)?;
                    }
                    continue;
                }
                if !first_item {
                    self.out.push(b',');
                }
                first_item = false;
                self.scalar_or_message(field, *v, depth)?;
            }
            self.out.push(b']');
            return Ok(());
        }
        if field.rule.inline
            && let Some((_, v)) = values.last()
        {
            return self.inline(field, *v, first, depth);
        }
        let Some((_, v)) = values.last() else {
            if field.rule.always {
                self.key(first, &field.json_name);
                self.zero(field);
            }
            return Ok(());
        };
        if !field.explicit_presence && !field.rule.always && is_zero(&field.ty, *v) {
            return Ok(());
        }
        self.key(first, &field.json_name);
        self.scalar_or_message(field, *v, depth)
    }

    /// What upstream writes for an empty field without `omitempty`.
    fn zero(&mut self, field: &FieldDesc) {
        let text: &[u8] = match &field.ty {
            FieldType::Message(m) if m == ".google.protobuf.Timestamp" => b"null",
            FieldType::Message(_) => b"{}",
            // A Go pointer without omitempty (`TypedLocalObjectReference.apiGroup`): nil is null.
            _ if field.explicit_presence => b"null",
            FieldType::String | FieldType::Bytes => b"\"\"",
            FieldType::Bool => b"false",
            FieldType::Enum(_) => b"\"\"",
            _ => b"0",
        };
        self.out.extend_from_slice(text);
    }

    fn bad(&self, field: &FieldDesc, what: &str) -> EncodeError {
        EncodeError::Malformed {
            message: field.full_name.clone(),
            detail: format!("invalid {what}"),
        }
    }

    fn map(
        &mut self,
        entry: &MessageDesc,
        values: &[(u32, Wire<'_>)],
        depth: usize,
    ) -> Result<(), EncodeError> {
        let (Some(key_field), Some(value_field)) = (entry.field(1), entry.field(2)) else {
            return Err(malformed(entry, "map entry without key or value"));
        };
        self.out.push(b'{');
        let mut first = true;
        for (_, v) in values {
            let Wire::Len(bytes) = v else {
                return Err(malformed(entry, "map entry is not length-delimited"));
            };
            // An entry's key and value, the last of each winning (as `fields` would give them,
            // without collecting them).
            let (mut key, mut value) = (None, None);
            let mut at = 0;
            while at < bytes.len() {
                let (n, w) = next_field(bytes, &mut at)
                    .ok_or_else(|| malformed(entry, "invalid map entry"))?;
                match n {
                    1 => key = Some(w),
                    2 => value = Some(w),
                    _ => {}
                }
            }
            match key {
                Some(Wire::Len(k)) => {
                    let k = std::str::from_utf8(k)
                        .map_err(|_| malformed(entry, "map key is not UTF-8"))?;
                    self.key(&mut first, k);
                }
                Some(Wire::Varint(k)) => {
                    let text = match key_field.ty {
                        FieldType::Bool => (k != 0).to_string(),
                        FieldType::Sint32 | FieldType::Sint64 => zigzag(k).to_string(),
                        FieldType::Uint32 | FieldType::Uint64 => k.to_string(),
                        _ => (k as i64).to_string(),
                    };
                    self.key(&mut first, &text);
                }
                Some(_) => return Err(malformed(entry, "unsupported map key")),
                None => self.key(&mut first, ""),
            }
            match value {
                Some(v) => self.scalar_or_message(value_field, v, depth)?,
                None => self.zero(value_field),
            }
        }
        self.out.push(b'}');
        Ok(())
    }

    fn scalar_or_message(
        &mut self,
        field: &FieldDesc,
        v: Wire<'_>,
        depth: usize,
    ) -> Result<(), EncodeError> {
        let out = &mut *self.out;
        match (&field.ty, v) {
            (FieldType::Int64, Wire::Varint(n)) => write_num(out, n as i64),
            (FieldType::Int32, Wire::Varint(n)) => write_num(out, n as i32),
            (FieldType::Uint64, Wire::Varint(n)) => write_num(out, n),
            (FieldType::Uint32, Wire::Varint(n)) => write_num(out, n as u32),
            (FieldType::Sint64, Wire::Varint(n)) => write_num(out, zigzag(n)),
            (FieldType::Sint32, Wire::Varint(n)) => write_num(out, zigzag(n) as i32),
            (FieldType::Bool, Wire::Varint(n)) => {
                out.extend_from_slice(if n != 0 { b"true" } else { b"false" })
            }
            (FieldType::Fixed64, Wire::Fixed64(n)) => write_num(out, n),
            (FieldType::Sfixed64, Wire::Fixed64(n)) => write_num(out, n as i64),
            (FieldType::Fixed32, Wire::Fixed32(n)) => write_num(out, n),
            (FieldType::Sfixed32, Wire::Fixed32(n)) => write_num(out, n as i32),
            (FieldType::Double, Wire::Fixed64(n)) => write_float(out, f64::from_bits(n)),
            (FieldType::Float, Wire::Fixed32(n)) => write_float(out, f64::from(f32::from_bits(n))),
            (FieldType::String, Wire::Len(s)) if field.rule.json => {
                // JSON text: the value it holds (checked, and written compact).
                let value: serde_json::Value =
                    serde_json::from_slice(s).map_err(|_| self.bad(field, "JSON text"))?;
                serde_json::to_writer(&mut *self.out, &value)
                    .map_err(|_| self.bad(field, "JSON text"))?;
            }
            (FieldType::String, Wire::Len(s)) => {
                let s = std::str::from_utf8(s).map_err(|_| self.bad(field, "UTF-8 string"))?;
                self.string(s);
            }
            (FieldType::Bytes, Wire::Len(b)) => {
                let text = base64::engine::general_purpose::STANDARD.encode(b);
                self.string(&text);
            }
            (FieldType::Enum(e), Wire::Varint(n)) => {
                let name = self
                    .descriptors
                    .enum_desc(e)
                    .and_then(|d| d.values.get(&(n as i32)).cloned());
                match name {
                    Some(name) => self.string(&name),
                    None => write_num(out, n as i32),
                }
            }
            (FieldType::Message(m), Wire::Len(b)) => {
                let desc = self
                    .message(m)
                    .ok_or_else(|| EncodeError::UnknownType(m.clone()))?;
                self.object(desc, b, None, depth + 1)?;
            }
            _ => return Err(self.bad(field, "wire type")),
        }
        Ok(())
    }

    fn timestamp(&mut self, wire: &[(u32, Wire<'_>)]) -> Result<(), EncodeError> {
        let mut seconds = 0i64;
        let mut nanos = 0i32;
        for (n, v) in wire {
            match (n, v) {
                (1, Wire::Varint(s)) => seconds = *s as i64,
                (2, Wire::Varint(ns)) => nanos = *ns as i32,
                _ => {}
            }
        }
        let text = crate::time::format(seconds, nanos);
        self.string(&text);
        Ok(())
    }

    fn structure(
        &mut self,
        desc: &MessageDesc,
        wire: &[(u32, Wire<'_>)],
        depth: usize,
    ) -> Result<(), EncodeError> {
        let Some(fields_field) = desc.field(1) else {
            return Err(malformed(desc, "Struct without fields"));
        };
        let FieldType::Message(entry) = &fields_field.ty else {
            return Err(malformed(desc, "Struct.fields is not a map"));
        };
        let entry = self
            .message(entry)
            .ok_or_else(|| EncodeError::UnknownType(entry.clone()))?;
        let values: Vec<(u32, Wire<'_>)> = wire.iter().filter(|(n, _)| *n == 1).copied().collect();
        self.map(entry, &values, depth)
    }

    fn value(
        &mut self,
        desc: &MessageDesc,
        wire: &[(u32, Wire<'_>)],
        depth: usize,
    ) -> Result<(), EncodeError> {
        // A oneof: the last kind on the wire wins.
        let Some((n, v)) = wire.last() else {
            self.out.extend_from_slice(b"null");
            return Ok(());
        };
        let field = desc
            .field(*n)
            .ok_or_else(|| malformed(desc, "unknown Value kind"))?
            .clone();
        match n {
            1 => self.out.extend_from_slice(b"null"),
            _ => self.scalar_or_message(&field, *v, depth)?,
        }
        Ok(())
    }

    fn list_value(
        &mut self,
        desc: &MessageDesc,
        wire: &[(u32, Wire<'_>)],
        depth: usize,
    ) -> Result<(), EncodeError> {
        let field = desc
            .field(1)
            .ok_or_else(|| malformed(desc, "ListValue without values"))?
            .clone();
        self.out.push(b'[');
        let mut first = true;
        for (_, v) in wire.iter().filter(|(n, _)| *n == 1) {
            if !first {
                self.out.push(b',');
            }
            first = false;
            self.scalar_or_message(&field, *v, depth)?;
        }
        self.out.push(b']');
        Ok(())
    }
}

fn is_packable(ty: &FieldType) -> bool {
    !matches!(
        ty,
        FieldType::String | FieldType::Bytes | FieldType::Message(_)
    )
}

fn is_zero(ty: &FieldType, v: Wire<'_>) -> bool {
    match (ty, v) {
        (FieldType::Message(_), _) => false,
        (_, Wire::Varint(n)) => n == 0,
        (_, Wire::Fixed64(n)) => n == 0,
        (_, Wire::Fixed32(n)) => n == 0,
        (_, Wire::Len(b)) => b.is_empty(),
    }
}

fn write_num(out: &mut Vec<u8>, n: impl std::fmt::Display) {
    let _ = write!(out, "{n}");
}

/// A double as upstream writes a number: integral values without a fraction (a schema's
/// `maxItems: 10` held in a `Struct` comes back as `10`, not `10.0`).
fn write_float(out: &mut Vec<u8>, f: f64) {
    if !f.is_finite() {
        out.extend_from_slice(b"null");
    } else if f.fract() == 0.0 && f.abs() < 9.007_199_254_740_992e15 {
        write_num(out, f as i64);
    } else {
        let _ = serde_json::to_writer(out, &f);
    }
}
