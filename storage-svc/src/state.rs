//! Snapshots of a key as an update or delete sees it (upstream's `objState`): the revision, the
//! stored bytes and the decoded metadata, read from etcd or taken from a caller's cached copy.

use etcd_client::KeyValue;
use kubestore_proto::meta::v1::ObjectMeta;

use crate::{
    error::StorageError,
    object::{StoredObject, with_resource_version},
};

/// One observed state of a key.
#[derive(Debug, Clone, Default)]
pub struct ObjState {
    /// etcd mod revision; 0 for a missing key.
    pub rev: i64,
    /// Stored bytes; `None` for a missing key (only with ignore_not_found).
    pub data: Option<Vec<u8>>,
    /// Decoded metadata with `resource_version` = `rev` (empty for a missing key).
    pub meta: ObjectMeta,
    /// Read from etcd or written by us (true), rather than a caller's cached copy (false).
    pub observed: bool,
}

impl ObjState {
    /// State from an etcd KeyValue. A missing key is NotFound unless `ignore_not_found`, which
    /// turns it into the empty object whose write is a create.
    pub fn from_kv(
        key: &str,
        kv: Option<KeyValue>,
        ignore_not_found: bool,
    ) -> Result<Self, StorageError> {
        let Some(kv) = kv else {
            return if ignore_not_found {
                Ok(Self::default())
            } else {
                Err(StorageError::NotFound {
                    key: key.to_string(),
                })
            };
        };
        let rev = kv.mod_revision();
        let parsed = StoredObject::parse(kv.value())
            .map_err(|e| StorageError::internal(key, format!("stored object is corrupt: {e}")))?;
        let mut meta = parsed.meta;
        meta.resource_version = rev.to_string();
        // Upstream compares against the bytes as stored (not re-canonicalised): if they differ
        // from the canonical encoding, the next update writes even if the object is unchanged.
        Ok(Self {
            rev,
            data: Some(kv.value().to_vec()),
            meta,
            observed: true,
        })
    }

    /// State from a caller's cached copy, which must carry a resource version.
    pub fn from_cached(key: &str, object: &[u8]) -> Result<Self, StorageError> {
        let parsed = crate::object::parse_object(key, object, "cached object")?;
        let rev = parse_resource_version(key, &parsed.meta.resource_version)?;
        if rev == 0 {
            return Err(StorageError::invalid(
                key,
                "cached object has no resource_version",
            ));
        }
        Ok(Self {
            rev,
            data: Some(parsed.data),
            meta: parsed.meta,
            observed: false,
        })
    }

    /// Whether the key exists in this state.
    pub fn exists(&self) -> bool {
        self.data.is_some()
    }

    /// The object as callers receive it: resource_version stamped with `rev`.
    pub fn object_at(&self, key: &str, rev: i64) -> Result<bytes::Bytes, StorageError> {
        match &self.data {
            None => Ok(bytes::Bytes::new()),
            Some(d) => with_resource_version(d, rev)
                .map(bytes::Bytes::from)
                .map_err(|e| StorageError::internal(key, format!("stored object is corrupt: {e}"))),
        }
    }

    /// The resource version string ("" for a missing key).
    pub fn resource_version(&self) -> String {
        if self.rev == 0 {
            String::new()
        } else {
            self.rev.to_string()
        }
    }
}

/// Parses a resource version: "" and "0" are 0; anything but a decimal u63 is Invalid.
pub fn parse_resource_version(key: &str, rv: &str) -> Result<i64, StorageError> {
    if rv.is_empty() {
        return Ok(0);
    }
    kubestore_proto::parse_revision(rv).ok_or_else(|| {
        StorageError::invalid(
            key,
            format!("invalid resource version {rv:?}: must be a decimal etcd revision"),
        )
    })
}
