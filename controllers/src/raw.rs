//! Calls to any built-in kind's service without its generated types, as upstream's metadata
//! client does: every kind's requests have the same shapes (`{namespace, name}`,
//! `{namespace, options}`, `{namespace, object, dry_run}`), and every object's field 1 is its
//! `meta.v1.ObjectMeta`, so one client reads and writes the metadata of Pods, ConfigMaps,
//! Secrets, Leases and whatever kind is added next, with no code per kind.
//!
//! Objects travel as raw bytes ([`RawCodec`]); an update splices new metadata into the bytes
//! read ([`with_metadata`]) and leaves every other field exactly as the server sent it, so
//! fields this crate has never heard of survive.

use bytes::{Buf, BufMut, Bytes};
use kubestore_proto::meta::v1::{
    DeleteOptions, ListMeta, ListOptions, MetadataOnly, ObjectMeta, WatchEventType,
};
use prost::Message;
use tonic::{
    Status,
    codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder},
};

/// A codec of bytes already encoded (requests) or left encoded (responses).
#[derive(Debug, Default, Clone, Copy)]
pub struct RawCodec;

impl Codec for RawCodec {
    type Encode = Bytes;
    type Decode = Bytes;
    type Encoder = RawCodec;
    type Decoder = RawCodec;
    fn encoder(&mut self) -> Self::Encoder {
        *self
    }
    fn decoder(&mut self) -> Self::Decoder {
        *self
    }
}

impl Encoder for RawCodec {
    type Item = Bytes;
    type Error = Status;
    fn encode(&mut self, item: Bytes, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put(item);
        Ok(())
    }
}

impl Decoder for RawCodec {
    type Item = Bytes;
    type Error = Status;
    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Bytes>, Status> {
        Ok(Some(src.copy_to_bytes(src.remaining())))
    }
}

/// `{namespace, name}`: every kind's Get.
#[derive(Clone, PartialEq, Message)]
pub struct NameRequest {
    /// Namespace ("" for cluster-scoped kinds).
    #[prost(string, tag = "1")]
    pub namespace: String,
    /// Name.
    #[prost(string, tag = "2")]
    pub name: String,
}

/// `{namespace, name, options}`: every kind's Delete.
#[derive(Clone, PartialEq, Message)]
pub struct DeleteRequest {
    /// Namespace.
    #[prost(string, tag = "1")]
    pub namespace: String,
    /// Name.
    #[prost(string, tag = "2")]
    pub name: String,
    /// Preconditions and propagation policy.
    #[prost(message, optional, tag = "3")]
    pub options: Option<DeleteOptions>,
}

/// `{namespace, options}`: every kind's List and Watch.
#[derive(Clone, PartialEq, Message)]
pub struct ListRequest {
    /// Namespace ("": all).
    #[prost(string, tag = "1")]
    pub namespace: String,
    /// Options.
    #[prost(message, optional, tag = "2")]
    pub options: Option<ListOptions>,
}

/// `{namespace, object, dry_run}`: every kind's Update, the object as bytes.
#[derive(Clone, PartialEq, Message)]
pub struct UpdateRequest {
    /// Namespace.
    #[prost(string, tag = "1")]
    pub namespace: String,
    /// The whole object, encoded.
    #[prost(bytes = "bytes", tag = "2")]
    pub object: Bytes,
}

/// Every kind's List response, items seen through their metadata only.
#[derive(Clone, PartialEq, Message)]
pub struct MetaList {
    /// The list's revision and continue token.
    #[prost(message, optional, tag = "1")]
    pub metadata: Option<ListMeta>,
    /// The items' metadata.
    #[prost(message, repeated, tag = "2")]
    pub items: Vec<MetadataOnly>,
}

/// Every kind's watch event, the object seen through its metadata only.
#[derive(Clone, PartialEq, Message)]
pub struct MetaEvent {
    /// ADDED, MODIFIED, DELETED, BOOKMARK.
    #[prost(enumeration = "WatchEventType", tag = "1")]
    pub r#type: i32,
    /// The object's metadata.
    #[prost(message, optional, tag = "2")]
    pub object: Option<MetadataOnly>,
}

/// Every kind's Delete response.
#[derive(Clone, PartialEq, Message)]
pub struct MetaDeleted {
    /// The object as deleted (or as marked for deletion).
    #[prost(message, optional, tag = "1")]
    pub object: Option<MetadataOnly>,
    /// Whether it is gone from storage.
    #[prost(bool, tag = "2")]
    pub deleted: bool,
}

/// `object` (an encoded resource) with its field 1 replaced by `meta`; every other field is
/// kept byte for byte. None when `object` is not a well-formed message.
pub fn with_metadata(object: &[u8], meta: &ObjectMeta) -> Option<Bytes> {
    let mut out = Vec::with_capacity(object.len() + 16);
    prost::encoding::message::encode(1, meta, &mut out);
    let mut buf = object;
    while buf.has_remaining() {
        let start = object.len() - buf.remaining();
        let key = prost::encoding::decode_varint(&mut buf).ok()?;
        let (field, wire) = (key >> 3, key & 7);
        match wire {
            0 => {
                prost::encoding::decode_varint(&mut buf).ok()?;
            }
            1 if buf.remaining() >= 8 => buf.advance(8),
            5 if buf.remaining() >= 4 => buf.advance(4),
            2 => {
                let len = usize::try_from(prost::encoding::decode_varint(&mut buf).ok()?).ok()?;
                if buf.remaining() < len {
                    return None;
                }
                buf.advance(len);
            }
            _ => return None,
        }
        let end = object.len() - buf.remaining();
        if field != 1 {
            out.extend_from_slice(&object[start..end]);
        }
    }
    Some(Bytes::from(out))
}

/// The metadata of an encoded resource.
pub fn metadata_of(object: &[u8]) -> Result<ObjectMeta, Status> {
    MetadataOnly::decode(object)
        .map(|m| m.metadata.unwrap_or_default())
        .map_err(|e| Status::internal(format!("an object registry-svc sent does not decode: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kubestore_proto::core::v1::ConfigMap;

    #[test]
    fn new_metadata_is_spliced_in_and_every_other_field_kept() {
        let cm = ConfigMap {
            metadata: Some(ObjectMeta {
                name: "a".into(),
                finalizers: vec!["x".into()],
                ..Default::default()
            }),
            data: [("k".to_string(), "v".to_string())].into(),
            immutable: Some(true),
        };
        let meta = ObjectMeta {
            name: "a".into(),
            ..Default::default()
        };
        let spliced = with_metadata(&cm.encode_to_vec(), &meta).expect("well formed");
        let back = ConfigMap::decode(spliced).expect("decodes");
        assert_eq!(back.metadata, Some(meta));
        assert_eq!((back.data, back.immutable), (cm.data, cm.immutable));
        assert!(with_metadata(&[0x0a, 0x05], &ObjectMeta::default()).is_none());
    }
}
