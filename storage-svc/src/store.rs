//! The resource-agnostic store: Create, Get and Delete on etcd transactions (upstream's
//! `etcd3.store`). GuaranteedUpdate lives in `update`.
//!
//! Every operation validates the key and the object before etcd is touched, runs inside a span
//! named like upstream's (`Create etcd3`, ...) with `key` and `resource` attributes, and records
//! an event at each stage.

use std::time::Duration;

use etcd_client::{Compare, CompareOp, PutOptions, Txn, TxnOp};
use kubestore_proto::meta::v1::Preconditions;
use kubestore_telemetry::Deadline;
use tracing::{Instrument, field::Empty};

use crate::{
    error::StorageError,
    etcd::{Etcd, EtcdCall, txn_outcome},
    keylock::KeyLocks,
    keys::KeyPrefix,
    lease::LeaseManager,
    object::StoredObject,
    preconditions,
    state::{ObjState, parse_resource_version},
};

/// etcd's default `--max-request-bytes` (1.5 MiB): a larger txn is refused by etcd.
pub const ETCD_MAX_REQUEST_BYTES: usize = 1536 * 1024;
/// Bytes of a put txn besides the value and (twice) the key: compare, op headers, lease.
const TXN_OVERHEAD_BYTES: usize = 64;

/// Settings of a [`Store`].
#[derive(Clone, Debug)]
pub struct StoreConfig {
    /// Prefix of every etcd key (`--etcd-prefix`).
    pub prefix: String,
    /// GuaranteedUpdate and Delete give up with ABORTED after this many attempts.
    pub max_attempts: u32,
    /// Longest time a request may spend on etcd when the caller sets no shorter deadline.
    pub request_timeout: Duration,
}

impl Default for StoreConfig {
    fn default() -> Self {
        Self {
            prefix: "/registry".into(),
            max_attempts: 100,
            request_timeout: Duration::from_secs(10),
        }
    }
}

/// A written or read object, as returned to callers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Versioned {
    /// Encoded object with `metadata.resource_version` set (unless `rev` is 0).
    pub object: Vec<u8>,
    /// The etcd revision it carries.
    pub rev: i64,
}

impl Versioned {
    /// `rev` as the resource version string ("" for 0).
    pub fn resource_version(&self) -> String {
        if self.rev == 0 {
            String::new()
        } else {
            self.rev.to_string()
        }
    }
}

/// The store.
pub struct Store {
    pub(crate) etcd: Etcd,
    pub(crate) prefix: KeyPrefix,
    pub(crate) leases: LeaseManager,
    pub(crate) locks: KeyLocks,
    pub(crate) config: StoreConfig,
}

/// The resource of a key: its first segment (`/pods/default/a` -> `pods`), for span attributes.
pub(crate) fn resource_of(key: &str) -> &str {
    key.trim_start_matches('/').split('/').next().unwrap_or("")
}

pub(crate) fn op_span(op: &str, key: &str) -> tracing::Span {
    tracing::info_span!(
        "storage",
        otel.name = %format_args!("{op} etcd3"),
        otel.status_code = Empty,
        key = %key,
        resource = %resource_of(key),
        attempts = Empty,
    )
}

impl Store {
    /// A store on `etcd`.
    pub fn new(etcd: Etcd, config: StoreConfig) -> Self {
        Self {
            etcd,
            prefix: KeyPrefix::new(&config.prefix),
            leases: LeaseManager::default(),
            locks: KeyLocks::default(),
            config,
        }
    }

    /// The deadline of a request that sent `metadata`.
    pub fn deadline(&self, metadata: &tonic::metadata::MetadataMap) -> Deadline {
        Deadline::from_metadata(metadata, self.config.request_timeout)
    }

    /// The etcd key probed by health checks.
    pub fn health_key(&self) -> String {
        format!("{}health", self.prefix.as_str())
    }

    /// Rejects objects etcd would refuse, before sending them.
    pub(crate) fn check_size(
        &self,
        key: &str,
        etcd_key: &str,
        data: &[u8],
    ) -> Result<(), StorageError> {
        let request = data.len() + 2 * etcd_key.len() + TXN_OVERHEAD_BYTES;
        if request > ETCD_MAX_REQUEST_BYTES {
            return Err(StorageError::invalid(
                key,
                format!(
                    "object is too large: {} bytes; etcd accepts requests of at most {ETCD_MAX_REQUEST_BYTES} bytes (1.5 MiB) including the key",
                    data.len()
                ),
            ));
        }
        Ok(())
    }

    pub(crate) async fn lease(&self, call: &EtcdCall<'_>, ttl: i64) -> Result<i64, StorageError> {
        if ttl < 0 {
            return Err(StorageError::invalid(
                call.key,
                format!("ttl_seconds must not be negative, got {ttl}"),
            ));
        }
        if ttl == 0 {
            return Ok(0);
        }
        self.leases.lease_for(&self.etcd, call, ttl).await
    }

    /// Reads the current state of `etcd_key`.
    pub(crate) async fn current(
        &self,
        call: &EtcdCall<'_>,
        etcd_key: &str,
        ignore_not_found: bool,
    ) -> Result<ObjState, StorageError> {
        let (kv, _) = self.etcd.range(call, etcd_key).await?;
        ObjState::from_kv(call.key, kv, ignore_not_found)
    }

    /// Create: `Txn(If(mod_revision(key) == 0) Then(Put [with lease]))`.
    pub async fn create(
        &self,
        key: &str,
        object: &[u8],
        ttl: i64,
        dry_run: bool,
        deadline: Deadline,
    ) -> Result<Versioned, StorageError> {
        let span = op_span("Create", key);
        async {
            let etcd_key = self.prefix.etcd_key(key)?;
            let parsed = StoredObject::parse(object).map_err(|e| {
                StorageError::invalid(key, format!("object is not a valid message: {e}"))
            })?;
            if parse_resource_version(key, &parsed.meta.resource_version)? != 0 {
                return Err(StorageError::invalid(
                    key,
                    "resourceVersion should not be set on objects to be created",
                ));
            }
            if ttl < 0 {
                return Err(StorageError::invalid(
                    key,
                    format!("ttl_seconds must not be negative, got {ttl}"),
                ));
            }
            self.check_size(key, &etcd_key, &parsed.data)?;
            tracing::debug!("Encode succeeded");
            let call = EtcdCall { key, deadline };
            if dry_run {
                let (kv, _) = self.etcd.range(&call, &etcd_key).await?;
                if kv.is_some() {
                    return Err(StorageError::AlreadyExists {
                        key: key.to_string(),
                    });
                }
                return Ok(Versioned {
                    object: parsed.data,
                    rev: 0,
                });
            }
            let lease = self.lease(&call, ttl).await?;
            let put = TxnOp::put(
                etcd_key.clone(),
                parsed.data.clone(),
                Some(PutOptions::new().with_lease(lease)),
            );
            let txn = Txn::new()
                .when([Compare::mod_revision(etcd_key, CompareOp::Equal, 0)])
                .and_then([put]);
            let resp = self.etcd.txn(&call, txn).await?;
            if !resp.succeeded() {
                tracing::debug!("Txn call failed: key exists");
                return Err(StorageError::AlreadyExists {
                    key: key.to_string(),
                });
            }
            tracing::debug!("Txn call succeeded");
            let (rev, _) = txn_outcome(&resp);
            let state = ObjState {
                rev,
                data: Some(parsed.data),
                ..Default::default()
            };
            Ok(Versioned {
                object: state.object_at(key, rev)?,
                rev,
            })
        }
        .instrument(span)
        .await
    }

    /// Get: the latest value. `min_resource_version` ("" = none) must not be ahead of etcd.
    /// `Ok(None)` only with `ignore_not_found`.
    pub async fn get(
        &self,
        key: &str,
        ignore_not_found: bool,
        min_resource_version: &str,
        deadline: Deadline,
    ) -> Result<Option<Versioned>, StorageError> {
        let span = op_span("Get", key);
        async {
            let etcd_key = self.prefix.etcd_key(key)?;
            let min = parse_resource_version(key, min_resource_version)?;
            let call = EtcdCall { key, deadline };
            let (kv, current) = self.etcd.range(&call, &etcd_key).await?;
            // Checked before not-found, as upstream's validateMinimumResourceVersion.
            if min > current {
                return Err(StorageError::Timeout {
                    key: key.to_string(),
                    message: format!("Too large resource version: {min}, current: {current}"),
                });
            }
            match kv {
                None if ignore_not_found => Ok(None),
                None => Err(StorageError::NotFound {
                    key: key.to_string(),
                }),
                Some(kv) => {
                    let state = ObjState::from_kv(key, Some(kv), false)?;
                    tracing::debug!("Decode succeeded");
                    Ok(Some(Versioned {
                        object: state.object_at(key, state.rev)?,
                        rev: state.rev,
                    }))
                }
            }
        }
        .instrument(span)
        .await
    }

    /// Delete: preconditions checked against the current state, then
    /// `Txn(If(mod_revision == seen) Then(Delete) Else(Get))`, retried on conflict. Returns the
    /// last state stamped with the revision of the delete (the current revision in a dry run).
    pub async fn delete(
        &self,
        key: &str,
        pre: Option<&Preconditions>,
        dry_run: bool,
        cached: Option<&[u8]>,
        deadline: Deadline,
    ) -> Result<Versioned, StorageError> {
        let span = op_span("Delete", key);
        let mut attempts = 0u32;
        let attempts_ref = &mut attempts;
        let result = async {
            let etcd_key = self.prefix.etcd_key(key)?;
            let call = EtcdCall { key, deadline };
            let (mut state, mut current) = match cached {
                Some(c) => (ObjState::from_cached(key, c)?, false),
                None => (self.current(&call, &etcd_key, false).await?, true),
            };
            loop {
                *attempts_ref += 1;
                if *attempts_ref > self.config.max_attempts {
                    return Err(StorageError::conflict(
                        key,
                        format!(
                            "gave up after {} attempts: the key kept changing",
                            self.config.max_attempts
                        ),
                    ));
                }
                if let Err(e) = preconditions::check(key, pre, &state.meta) {
                    if current || (state.observed && preconditions::never_again(pre, state.rev)) {
                        return Err(e);
                    }
                    let cached_rev = state.rev;
                    state = self.current(&call, &etcd_key, false).await?;
                    current = true;
                    if state.rev == cached_rev {
                        return Err(e);
                    }
                    continue;
                }
                if dry_run {
                    if !current {
                        state = self.current(&call, &etcd_key, false).await?;
                        current = true;
                        continue;
                    }
                    return Ok(Versioned {
                        object: state.object_at(key, state.rev)?,
                        rev: state.rev,
                    });
                }
                let txn = Txn::new()
                    .when([Compare::mod_revision(
                        etcd_key.clone(),
                        CompareOp::Equal,
                        state.rev,
                    )])
                    .and_then([TxnOp::delete(etcd_key.clone(), None)])
                    .or_else([TxnOp::get(etcd_key.clone(), None)]);
                let resp = self.etcd.txn(&call, txn).await?;
                let (rev, kv) = txn_outcome(&resp);
                if resp.succeeded() {
                    tracing::debug!("Txn call succeeded");
                    return Ok(Versioned {
                        object: state.object_at(key, rev)?,
                        rev,
                    });
                }
                self.etcd.metrics.conflicts.inc();
                tracing::debug!("Txn call failed: conflict");
                state = ObjState::from_kv(key, kv, false)?;
                current = true;
                tracing::debug!("Retry with fresh state");
            }
        }
        .instrument(span.clone())
        .await;
        span.record("attempts", attempts);
        if result.is_err() {
            span.record("otel.status_code", "ERROR");
        }
        result
    }
}
