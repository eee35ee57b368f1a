//! Encoded objects, handled without knowing their kind.
//!
//! storage-svc stores whatever protobuf message it is given and reads only field 1
//! (`meta.v1.ObjectMeta metadata`). It works on the wire format rather than decoding and
//! re-encoding a message type, because a decode/encode round trip through a type that does not
//! know the other fields would drop them. Two transformations:
//!
//! - [`StoredObject::parse`]: the caller's bytes -> the stored form, with
//!   `metadata.resource_version` (field 5 of ObjectMeta) removed, as upstream's
//!   `PrepareObjectForStorage` does. For a message encoded by prost (fields in order, metadata
//!   once) every other byte is unchanged, so two equal objects give equal stored bytes and
//!   GuaranteedUpdate can skip writes that change nothing.
//! - [`with_resource_version`]: the stored form -> what callers receive, with
//!   `metadata.resource_version` set to an etcd revision (upstream's `Versioner.UpdateObject`).
//!
//! Selection reads two more things the same way: [`scalar_at`] (a field found by its field
//! numbers, for field selectors) and [`labels_of`] (`metadata.labels`, for label selectors).

use bytes_ops::{Field, fields, put_len_delimited};
use kubestore_proto::{limits::ETCD_MAX_REQUEST_BYTES, meta::v1::ObjectMeta};
use prost::Message;

use crate::error::StorageError;

/// ObjectMeta's field number in every resource message.
const METADATA_FIELD: u32 = 1;
/// `resource_version`'s field number in ObjectMeta.
const RESOURCE_VERSION_FIELD: u32 = 5;

/// An object in its stored form, with its decoded metadata.
#[derive(Debug, Clone)]
pub struct StoredObject {
    /// Stored bytes: the object without `metadata.resource_version`.
    pub data: Vec<u8>,
    /// The decoded metadata (as sent, resource_version included).
    pub meta: ObjectMeta,
}

impl StoredObject {
    /// Validates `object` as a protobuf message whose field 1 is an ObjectMeta, and computes its
    /// stored form. Errors describe what is malformed.
    pub fn parse(object: &[u8]) -> Result<Self, String> {
        let mut meta_payload = Vec::new();
        let mut saw_meta = false;
        let mut rest = Vec::with_capacity(object.len());
        for field in fields(object) {
            let field = field?;
            if field.number == METADATA_FIELD {
                let Some(payload) = field.payload else {
                    return Err("field 1 (metadata) must be a length-delimited message".into());
                };
                // Repeated occurrences of a message field merge: concatenation is exactly that.
                meta_payload.extend_from_slice(payload);
                saw_meta = true;
            } else {
                rest.extend_from_slice(field.raw);
            }
        }
        let meta = ObjectMeta::decode(meta_payload.as_slice())
            .map_err(|e| format!("metadata (field 1) is not a valid meta.v1.ObjectMeta: {e}"))?;
        let mut data = Vec::with_capacity(object.len());
        if saw_meta {
            let stripped = strip_field(&meta_payload, RESOURCE_VERSION_FIELD)?;
            put_len_delimited(&mut data, METADATA_FIELD, &stripped);
        }
        data.extend_from_slice(&rest);
        Ok(Self { data, meta })
    }
}

/// `data` (stored form) with `metadata.resource_version` set to `rev` (left unset for 0).
///
/// The stored form has no resource_version, so rather than decoding and re-encoding ObjectMeta
/// this writes `resource_version` at the end of the one metadata field (its length prefix
/// rewritten): inside one message the last value of a scalar wins, so a resource_version some
/// other writer stored is overridden. There is exactly one field 1 on the wire: protobufjs (what
/// `@grpc/proto-loader` installs) replaces a message field that occurs twice instead of merging
/// it, and lost `metadata.name` when this appended a second one. Several stored occurrences of
/// field 1 (another writer's) are merged into the first, as protobuf does. One copy of the
/// bytes, and the fields are walked, so corrupt stored data is reported here rather than by
/// the caller's decoder.
pub fn with_resource_version(data: &[u8], rev: i64) -> Result<Vec<u8>, String> {
    let mut metas = 0;
    let mut meta_len = 0;
    for field in fields(data) {
        let field = field?;
        if field.number == METADATA_FIELD {
            let Some(payload) = field.payload else {
                return Err("stored metadata is not a message".into());
            };
            metas += 1;
            meta_len += payload.len();
        }
    }
    if rev == 0 {
        return Ok(data.to_vec());
    }
    let rv = rev.to_string();
    let mut rv_field = Vec::with_capacity(rv.len() + 2);
    put_len_delimited(&mut rv_field, RESOURCE_VERSION_FIELD, rv.as_bytes());
    let mut out = Vec::with_capacity(data.len() + rv_field.len() + 8);
    if metas == 0 {
        put_len_delimited(&mut out, METADATA_FIELD, &rv_field);
        out.extend_from_slice(data);
        return Ok(out);
    }
    let mut merged = false;
    for field in fields(data) {
        let field = field?;
        if field.number != METADATA_FIELD {
            out.extend_from_slice(field.raw);
            continue;
        }
        if merged {
            continue;
        }
        merged = true;
        // The first occurrence carries every occurrence's payload, then resource_version.
        prost::encoding::encode_key(
            METADATA_FIELD,
            prost::encoding::WireType::LengthDelimited,
            &mut out,
        );
        prost::encoding::encode_varint((meta_len + rv_field.len()) as u64, &mut out);
        for f in fields(data) {
            let f = f?;
            if f.number == METADATA_FIELD
                && let Some(p) = f.payload
            {
                out.extend_from_slice(p);
            }
        }
        out.extend_from_slice(&rv_field);
    }
    Ok(out)
}

/// The type a selected scalar field is read as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScalarType {
    /// A length-delimited UTF-8 string.
    String,
    /// A varint read as "true"/"false".
    Bool,
    /// A varint read as a signed decimal.
    Int,
}

impl ScalarType {
    pub(crate) fn default_value(self) -> &'static str {
        match self {
            Self::String => "",
            Self::Bool => "false",
            Self::Int => "0",
        }
    }
}

/// The scalar at `path` (field numbers from the root, e.g. `[2, 2]`) of an encoded message, as
/// text; a missing field reads as its type's default, as proto3 does. Embedded messages are
/// merged (all occurrences concatenated), the last occurrence of a scalar wins. `None` when the
/// message or the field is malformed, or the field has another wire type than `ty` needs.
pub fn scalar_at(message: &[u8], path: &[u32], ty: ScalarType) -> Option<String> {
    let (&first, rest) = path.split_first()?;
    if rest.is_empty() {
        let mut last = None;
        for field in fields(message) {
            let field = field.ok()?;
            if field.number == first {
                last = Some(field);
            }
        }
        let Some(field) = last else {
            return Some(ty.default_value().to_string());
        };
        return match (ty, field.payload) {
            (ScalarType::String, Some(p)) => Some(String::from_utf8_lossy(p).into_owned()),
            (ScalarType::Bool, None) => Some((varint_of(field.raw)? != 0).to_string()),
            (ScalarType::Int, None) => Some((varint_of(field.raw)? as i64).to_string()),
            _ => None,
        };
    }
    let mut merged = Vec::new();
    for field in fields(message) {
        let field = field.ok()?;
        if field.number == first {
            merged.extend_from_slice(field.payload?);
        }
    }
    scalar_at(&merged, rest, ty)
}

/// The value of a varint field, from its raw bytes (key then value).
fn varint_of(raw: &[u8]) -> Option<u64> {
    let mut buf = raw;
    prost::encoding::decode_varint(&mut buf).ok()?;
    prost::encoding::decode_varint(&mut buf).ok()
}

/// `metadata.labels` (ObjectMeta field 10, a map) of an encoded object, without decoding the
/// rest of it. A repeated key keeps its last value, as a protobuf map does.
pub fn labels_of(object: &[u8]) -> Result<std::collections::BTreeMap<String, String>, String> {
    const LABELS_FIELD: u32 = 10;
    let mut meta = Vec::new();
    for field in fields(object) {
        let field = field?;
        if field.number == METADATA_FIELD {
            meta.extend_from_slice(field.payload.ok_or("metadata is not a message")?);
        }
    }
    let mut labels = std::collections::BTreeMap::new();
    for field in fields(&meta) {
        let field = field?;
        if field.number != LABELS_FIELD {
            continue;
        }
        let entry = field.payload.ok_or("a label is not a map entry")?;
        let (mut key, mut value) = (String::new(), String::new());
        for part in fields(entry) {
            let part = part?;
            let text = || {
                part.payload
                    .map(|p| String::from_utf8_lossy(p).into_owned())
                    .ok_or("a label key or value is not a string")
            };
            match part.number {
                1 => key = text()?,
                2 => value = text()?,
                _ => {}
            }
        }
        labels.insert(key, value);
    }
    Ok(labels)
}

/// `message` without any occurrence of field `number`.
fn strip_field(message: &[u8], number: u32) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(message.len());
    for field in fields(message) {
        let field: Field<'_> = field?;
        if field.number != number {
            out.extend_from_slice(field.raw);
        }
    }
    Ok(out)
}

/// Minimal protobuf wire-format walking.
mod bytes_ops {
    use prost::encoding::{WireType, decode_varint, encode_key, encode_varint};

    /// One top-level field of a message.
    pub(super) struct Field<'a> {
        pub(super) number: u32,
        /// The whole field: key, length prefix and value.
        pub(super) raw: &'a [u8],
        /// The value of a length-delimited field.
        pub(super) payload: Option<&'a [u8]>,
    }

    /// Iterates the top-level fields of `message`.
    pub(super) fn fields(message: &[u8]) -> impl Iterator<Item = Result<Field<'_>, String>> {
        let mut pos = 0usize;
        let mut failed = false;
        std::iter::from_fn(move || {
            if failed || pos >= message.len() {
                return None;
            }
            let r = next_field(message, pos);
            match &r {
                Ok((_, end)) => pos = *end,
                Err(_) => failed = true,
            }
            Some(r.map(|(f, _)| f))
        })
    }

    fn next_field(message: &[u8], start: usize) -> Result<(Field<'_>, usize), String> {
        let truncated = || format!("truncated field at byte {start}");
        let mut buf = &message[start..];
        let before = buf.len();
        let key = decode_varint(&mut buf).map_err(|_| truncated())?;
        let number =
            u32::try_from(key >> 3).map_err(|_| format!("bad field number at byte {start}"))?;
        if number == 0 {
            return Err(format!("field number 0 at byte {start}"));
        }
        let wire =
            WireType::try_from(key & 7).map_err(|_| format!("bad wire type at byte {start}"))?;
        let mut payload = None;
        let value_len = match wire {
            WireType::Varint => {
                decode_varint(&mut buf).map_err(|_| truncated())?;
                0
            }
            WireType::SixtyFourBit => 8,
            WireType::ThirtyTwoBit => 4,
            WireType::LengthDelimited => {
                let len = decode_varint(&mut buf).map_err(|_| truncated())?;
                usize::try_from(len).map_err(|_| truncated())?
            }
            WireType::StartGroup | WireType::EndGroup => {
                return Err(format!("groups are not supported (field {number})"));
            }
        };
        if buf.len() < value_len {
            return Err(truncated());
        }
        let value_start = start + (before - buf.len());
        let end = value_start + value_len;
        if wire == WireType::LengthDelimited {
            payload = Some(&message[value_start..end]);
        }
        Ok((
            Field {
                number,
                raw: &message[start..end],
                payload,
            },
            end,
        ))
    }

    /// Appends a length-delimited field.
    pub(super) fn put_len_delimited(out: &mut Vec<u8>, number: u32, value: &[u8]) {
        encode_key(number, WireType::LengthDelimited, out);
        encode_varint(value.len() as u64, out);
        out.extend_from_slice(value);
    }
}

/// The object of a request, size-checked before its metadata is decoded.
pub(crate) fn parse_object(
    key: &str,
    object: &[u8],
    what: &str,
) -> Result<StoredObject, StorageError> {
    if object.len() > ETCD_MAX_REQUEST_BYTES {
        return Err(too_large(key, object.len()));
    }
    StoredObject::parse(object)
        .map_err(|e| StorageError::invalid(key, format!("{what} is not a valid message: {e}")))
}

pub(crate) fn too_large(key: &str, len: usize) -> StorageError {
    StorageError::invalid(
        key,
        format!(
            "object is too large: {len} bytes; etcd accepts requests of at most {ETCD_MAX_REQUEST_BYTES} bytes (1.5 MiB) including the key"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubestore_proto::core::v1::{ConfigMap, Pod, PodSpec};

    fn cm(rv: &str) -> ConfigMap {
        ConfigMap {
            metadata: Some(ObjectMeta {
                name: "a".into(),
                namespace: "default".into(),
                uid: "u1".into(),
                resource_version: rv.into(),
                labels: [("k".to_string(), "v".to_string())].into(),
                ..Default::default()
            }),
            data: [
                ("x".to_string(), "1".to_string()),
                ("y".to_string(), "2".to_string()),
            ]
            .into(),
            immutable: Some(true),
            binary_data: Default::default(),
        }
    }

    #[test]
    fn stored_form_has_no_resource_version_and_keeps_every_other_byte() {
        let with_rv = StoredObject::parse(&cm("42").encode_to_vec()).expect("valid");
        let without = StoredObject::parse(&cm("").encode_to_vec()).expect("valid");
        assert_eq!(with_rv.data, without.data);
        assert_eq!(
            without.data,
            cm("").encode_to_vec(),
            "prost encoding is already canonical"
        );
        assert_eq!(with_rv.meta.resource_version, "42");
        assert_eq!(with_rv.meta.uid, "u1");
        let back = ConfigMap::decode(with_rv.data.as_slice()).expect("decodes");
        assert_eq!(back, cm(""));
    }

    #[test]
    fn the_stamped_object_has_one_metadata_field_holding_everything() {
        let stored = StoredObject::parse(&cm("").encode_to_vec()).expect("valid");
        let out = with_resource_version(&stored.data, 77).expect("valid");
        let metas: Vec<_> = fields(&out)
            .map(|f| f.expect("field"))
            .filter(|f| f.number == METADATA_FIELD)
            .collect();
        assert_eq!(metas.len(), 1, "one metadata field on the wire");
        let meta = ObjectMeta::decode(metas[0].payload.expect("message")).expect("meta");
        assert_eq!(
            (meta.name.as_str(), meta.resource_version.as_str()),
            ("a", "77")
        );
        // Two stored occurrences (another writer's) are merged into one, the stamp last.
        let mut twice = Vec::new();
        put_len_delimited(
            &mut twice,
            METADATA_FIELD,
            &ObjectMeta {
                name: "n".into(),
                ..Default::default()
            }
            .encode_to_vec(),
        );
        put_len_delimited(&mut twice, 2, b"x");
        put_len_delimited(
            &mut twice,
            METADATA_FIELD,
            &ObjectMeta {
                uid: "u".into(),
                resource_version: "5".into(),
                ..Default::default()
            }
            .encode_to_vec(),
        );
        let out = with_resource_version(&twice, 9).expect("valid");
        let metas: Vec<_> = fields(&out)
            .map(|f| f.expect("field"))
            .filter(|f| f.number == METADATA_FIELD)
            .collect();
        assert_eq!(metas.len(), 1);
        let meta = ObjectMeta::decode(metas[0].payload.expect("message")).expect("meta");
        assert_eq!(
            (
                meta.name.as_str(),
                meta.uid.as_str(),
                meta.resource_version.as_str()
            ),
            ("n", "u", "9")
        );
        // No metadata at all: one is added.
        let out = with_resource_version(b"", 3).expect("valid");
        assert_eq!(fields(&out).count(), 1);
    }

    #[test]
    fn resource_version_is_stamped_on_the_way_out() {
        let stored = StoredObject::parse(&cm("").encode_to_vec()).expect("valid");
        let out = with_resource_version(&stored.data, 1234).expect("valid");
        assert_eq!(
            ConfigMap::decode(out.as_slice()).expect("decodes"),
            cm("1234")
        );
        // Restamping replaces, never duplicates.
        let again = with_resource_version(&out, 99).expect("valid");
        assert_eq!(
            ConfigMap::decode(again.as_slice()).expect("decodes"),
            cm("99")
        );
        assert_eq!(
            with_resource_version(&stored.data, 0).expect("valid"),
            stored.data
        );
    }

    #[test]
    fn unknown_kinds_and_fields_survive() {
        // A Pod parsed by a store that only knows field 1 keeps its spec byte for byte.
        let pod = Pod {
            metadata: Some(ObjectMeta {
                name: "p".into(),
                resource_version: "7".into(),
                ..Default::default()
            }),
            spec: Some(PodSpec {
                node_name: "n1".into(),
                ..Default::default()
            }),
            status: None,
        };
        let stored = StoredObject::parse(&pod.encode_to_vec()).expect("valid");
        let out = with_resource_version(&stored.data, 8).expect("valid");
        let back = Pod::decode(out.as_slice()).expect("decodes");
        assert_eq!(back.spec, pod.spec);
        assert_eq!(
            back.metadata.map(|m| m.resource_version).as_deref(),
            Some("8")
        );
    }

    #[test]
    fn malformed_messages_are_rejected() {
        for bad in [
            vec![0x0a, 0x05, 0x01],       // metadata claims 5 bytes, has 1
            vec![0x08],                   // varint key without value
            vec![0x08, 0x01],             // field 1 as a varint
            vec![0x0b],                   // start group
            vec![0x00, 0x01],             // field number 0
            vec![0x0a, 0x02, 0x2a, 0x05], // metadata whose resource_version is truncated
        ] {
            assert!(StoredObject::parse(&bad).is_err(), "{bad:?}");
        }
        // An empty message is a valid object with empty metadata.
        assert!(StoredObject::parse(&[]).is_ok());
    }

    #[test]
    fn scalars_are_found_by_field_numbers_without_knowing_the_kind() {
        use kubestore_proto::core::v1::{PodSpec, PodStatus};
        let pod = Pod {
            metadata: Some(ObjectMeta {
                name: "p".into(),
                namespace: "ns".into(),
                labels: [("app".to_string(), "web".to_string())].into(),
                ..Default::default()
            }),
            spec: Some(PodSpec {
                node_name: "n1".into(),
                termination_grace_period_seconds: Some(-5),
                ..Default::default()
            }),
            status: Some(PodStatus {
                phase: "Running".into(),
                ..Default::default()
            }),
        };
        let b = pod.encode_to_vec();
        let s = |path: &[u32]| scalar_at(&b, path, ScalarType::String);
        assert_eq!(s(&[1, 1]).as_deref(), Some("p"));
        assert_eq!(s(&[1, 3]).as_deref(), Some("ns"));
        assert_eq!(s(&[2, 2]).as_deref(), Some("n1"));
        assert_eq!(s(&[3, 1]).as_deref(), Some("Running"));
        // Missing: the default.
        assert_eq!(s(&[2, 4]).as_deref(), Some(""));
        assert_eq!(
            scalar_at(&b, &[2, 9], ScalarType::Bool).as_deref(),
            Some("false")
        );
        assert_eq!(
            scalar_at(&b, &[2, 3], ScalarType::Int).as_deref(),
            Some("-5")
        );
        // A later occurrence of an embedded message merges with the first.
        let mut twice = b.clone();
        twice.extend(
            Pod {
                spec: Some(PodSpec {
                    node_name: "n2".into(),
                    ..Default::default()
                }),
                ..Default::default()
            }
            .encode_to_vec(),
        );
        assert_eq!(
            scalar_at(&twice, &[2, 2], ScalarType::String).as_deref(),
            Some("n2")
        );
        assert_eq!(
            scalar_at(&twice, &[1, 1], ScalarType::String).as_deref(),
            Some("p")
        );
        // A message where a string was expected, and garbage.
        assert_eq!(scalar_at(&b, &[2, 3], ScalarType::String), None);
        assert_eq!(scalar_at(&[0x0a, 0x05], &[1, 1], ScalarType::String), None);
        assert_eq!(
            labels_of(&b).expect("labels"),
            [("app".to_string(), "web".to_string())].into()
        );
        assert!(
            labels_of(&cm("").encode_to_vec())
                .expect("labels")
                .contains_key("k")
        );
    }
}
