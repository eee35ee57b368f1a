//! Kubernetes JSON for any message of the protos, driven by their descriptors (never per kind):
//! upstream's field names (the protos' JSON names), int64 as JSON numbers, empty fields
//! omitted (unless upstream writes them, `rules`), timestamps in RFC 3339, quantities as
//! strings, `bytes` as base64, `google.protobuf.Struct` as the JSON it holds, and `apiVersion` /
//! `kind` first on top-level objects, as `k8s.io/apimachinery`'s JSON serializer writes them.
//!
//! - [`Codec::encode`]: protobuf bytes (what storage holds, what prost encodes) to JSON text,
//!   walking the wire format: no intermediate structs, so a List can stream its items.
//! - [`Codec::decode`]: a JSON value to protobuf bytes, which the caller decodes into its
//!   message; unknown fields are reported by path (`spec.containers[0].ports`) for
//!   `fieldValidation` (upstream's strict decoding), type errors refused with upstream's words.
//!
//! The proto3 JSON mapping (pbjson, what the CLI printed before) differs in exactly the ways
//! clients notice: int64 as strings, which `kubectl describe`'s typed decoding and the Python
//! client's strict models refuse.

mod decode;
mod encode;

use std::sync::Arc;

pub use decode::DecodeError;
pub(crate) use decode::json_type;

use crate::descriptors::{DescriptorError, Descriptors, MessageDesc};

/// Nesting any object may have here, in messages (a `Struct` counts three per JSON level).
/// Deeper input is refused, stored data included, before recursion could exhaust a stack.
pub const MAX_DEPTH: usize = 512;

/// A message that cannot be written as JSON (stored bytes that do not match their type).
#[derive(Debug, thiserror::Error)]
pub enum EncodeError {
    /// The message type is unknown to the descriptors.
    #[error("no descriptor for message {0}")]
    UnknownType(String),
    /// The bytes are not a valid encoding of the type.
    #[error("malformed {message}: {detail}")]
    Malformed {
        /// The message type.
        message: String,
        /// What is wrong.
        detail: String,
    },
}

/// Kubernetes JSON over a set of descriptors.
#[derive(Debug, Clone)]
pub struct Codec {
    descriptors: Arc<Descriptors>,
}

impl Codec {
    /// A codec over an encoded `FileDescriptorSet`.
    pub fn new(descriptor_set: &[u8]) -> Result<Self, DescriptorError> {
        Ok(Self {
            descriptors: Arc::new(Descriptors::from_set(descriptor_set)?),
        })
    }

    /// A codec over descriptors already indexed.
    pub fn with_descriptors(descriptors: Arc<Descriptors>) -> Self {
        Self { descriptors }
    }

    /// The descriptors.
    pub fn descriptors(&self) -> &Arc<Descriptors> {
        &self.descriptors
    }

    fn desc(&self, message: &str) -> Result<&Arc<MessageDesc>, EncodeError> {
        self.descriptors
            .message_desc(message)
            .ok_or_else(|| EncodeError::UnknownType(message.into()))
    }

    /// Writes `bytes`, an encoded `message` (`.core.v1.Pod`), as a JSON object to `out`, with
    /// `apiVersion` and `kind` first when given (top-level objects).
    pub fn encode(
        &self,
        message: &str,
        bytes: &[u8],
        type_meta: Option<(&str, &str)>,
        out: &mut Vec<u8>,
    ) -> Result<(), EncodeError> {
        let desc = self.desc(message)?;
        encode::Writer {
            descriptors: &self.descriptors,
            out,
        }
        .object(desc, bytes, type_meta, 0)
    }

    /// [`Self::encode`] into a new buffer.
    pub fn encode_to_vec(
        &self,
        message: &str,
        bytes: &[u8],
        type_meta: Option<(&str, &str)>,
    ) -> Result<Vec<u8>, EncodeError> {
        let mut out = Vec::with_capacity(bytes.len() * 2 + 64);
        self.encode(message, bytes, type_meta, &mut out)?;
        Ok(out)
    }

    /// [`Self::encode`] as a JSON value (for patches and tables).
    pub fn encode_to_value(
        &self,
        message: &str,
        bytes: &[u8],
        type_meta: Option<(&str, &str)>,
    ) -> Result<serde_json::Value, EncodeError> {
        let text = self.encode_to_vec(message, bytes, type_meta)?;
        serde_json::from_slice(&text).map_err(|e| EncodeError::Malformed {
            message: message.into(),
            detail: format!("wrote invalid JSON: {e}"),
        })
    }

    /// Encodes `value`, a JSON object of `message`, into protobuf bytes. Keys named in `skip`
    /// at the top level (`apiVersion`, `kind`) are left to the caller; fields the message does
    /// not have are pushed to `unknown` by path and otherwise ignored (upstream's non-strict
    /// decoding drops them too).
    pub fn decode(
        &self,
        message: &str,
        value: &serde_json::Value,
        skip: &[&str],
        unknown: &mut Vec<String>,
    ) -> Result<Vec<u8>, DecodeError> {
        let desc = self.descriptors.message_desc(message).ok_or_else(|| {
            DecodeError::new(String::new(), format!("no descriptor for {message}"))
        })?;
        let mut reader = decode::Reader {
            descriptors: &self.descriptors,
            unknown,
            path: Vec::new(),
        };
        let mut out = Vec::new();
        reader.message(desc, value, skip, &mut out, 0)?;
        Ok(out)
    }
}

/// One step of a JSON path (`spec.containers[0].name`).
#[derive(Debug, Clone)]
enum Step {
    Key(String),
    Index(usize),
}

/// Upstream's path notation: keys joined by dots, list indexes in brackets.
fn path_string(path: &[Step]) -> String {
    let mut s = String::new();
    for step in path {
        match step {
            Step::Key(k) => {
                if !s.is_empty() {
                    s.push('.');
                }
                s.push_str(k);
            }
            Step::Index(i) => {
                s.push('[');
                s.push_str(&i.to_string());
                s.push(']');
            }
        }
    }
    s
}

#[cfg(test)]
mod tests;
