//! The resource-agnostic store: Create, Get and Delete on etcd transactions (upstream's
//! `etcd3.store`). GuaranteedUpdate lives in `update`.
//!
//! Every operation validates the key and the object before etcd is touched, runs inside a span
//! named like upstream's (`Create etcd3`, ...) with `key` and `resource` attributes, and records
//! an event at each stage. An object's length is checked before its metadata is decoded, so an
//! oversized request costs no more than its bytes.

use std::time::Duration;

use bytes::Bytes;
use etcd_client::{Compare, CompareOp, PutOptions, Txn, TxnOp, TxnResponse};
use kubestore_proto::{
    limits::{ETCD_MAX_REQUEST_BYTES, etcd_request_bytes},
    meta::v1::Preconditions,
};
use kubestore_telemetry::Deadline;
use tracing::{Instrument, field::Empty};

use std::sync::Arc;

use crate::{
    cache::{
        WatchCache,
        serve::{self, Served},
    },
    error::StorageError,
    etcd::{Etcd, EtcdCall, txn_outcome},
    keylock::{KeyLocks, KeyTurn},
    keys::KeyPrefix,
    lease::{LeaseManager, validate_ttl},
    object::{StoredObject, parse_object, too_large},
    preconditions,
    state::{ObjState, parse_resource_version},
};

/// How long an update may keep its key's turn while it waits for its caller's answer. A caller
/// that is slower (or gone) loses the turn: the updates queued behind it go on, and its own
/// update continues without the queue (its write still compares `mod_revision`).
pub const DEFAULT_TURN_HOLD: Duration = Duration::from_millis(100);

/// How long a read with a resourceVersion ahead of etcd waits for etcd to get there
/// (upstream's `blockTimeout` of `waitUntilFreshAndBlock`).
pub const FRESHNESS_WAIT: Duration = Duration::from_secs(3);
/// How often etcd's revision is read meanwhile.
const FRESHNESS_POLL: Duration = Duration::from_millis(50);

/// Settings of a [`Store`].
#[derive(Clone, Debug)]
pub struct StoreConfig {
    /// Prefix of every etcd key (`--etcd-prefix`).
    pub prefix: String,
    /// GuaranteedUpdate and Delete give up with ABORTED after this many attempts.
    pub max_attempts: u32,
    /// Longest time a request may spend on etcd when the caller sets no shorter deadline.
    pub request_timeout: Duration,
    /// How long an update keeps its key's turn while waiting for its caller.
    pub turn_hold: Duration,
    /// How often a watch that allows bookmarks gets one.
    pub bookmark_interval: Duration,
}

impl Default for StoreConfig {
    fn default() -> Self {
        Self {
            prefix: "/registry".into(),
            max_attempts: 100,
            request_timeout: Duration::from_secs(10),
            turn_hold: DEFAULT_TURN_HOLD,
            bookmark_interval: Duration::from_secs(10),
        }
    }
}

/// A written or read object, as returned to callers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Versioned {
    /// Encoded object with `metadata.resource_version` set (unless `rev` is 0).
    pub object: Bytes,
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
    /// Raised on shutdown: open watches end with UNAVAILABLE.
    pub(crate) stop: tokio::sync::watch::Receiver<bool>,
    /// The watch cache (`--watch-cache`), if on.
    pub(crate) cache: Option<Arc<WatchCache>>,
}

/// The resource of a key, for span attributes: its first segment (`/pods/default/a` ->
/// `pods`), or group and plural for a key under an API group (see `keys::resource_of`).
pub(crate) fn resource_of(key: &str) -> &str {
    crate::keys::resource_of(key).unwrap_or("")
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
    /// A store on `etcd`; `stop` is raised on shutdown.
    pub fn new(etcd: Etcd, config: StoreConfig, stop: tokio::sync::watch::Receiver<bool>) -> Self {
        Self {
            etcd,
            prefix: KeyPrefix::new(&config.prefix),
            leases: LeaseManager::default(),
            locks: KeyLocks::default(),
            config,
            stop,
            cache: None,
        }
    }

    /// Serves reads, watches and suggestions from `cache`.
    pub fn with_cache(mut self, cache: Arc<WatchCache>) -> Self {
        self.cache = Some(cache);
        self
    }

    /// The watch cache's object for `etcd_key`, as an update or delete suggestion: a state etcd
    /// really had (observed), though maybe no longer current.
    pub(crate) fn cached_state(&self, key: &str, etcd_key: &str) -> Option<ObjState> {
        let entry = serve::suggestion(self.cache.as_ref()?, key, etcd_key)?;
        // The entry holds the object as returned: parsing strips resource_version back to the
        // stored form, which the update compares its proposal with.
        let parsed = StoredObject::parse(&entry.value).ok()?;
        let mut meta = parsed.meta;
        meta.resource_version = entry.mod_rev.to_string();
        Some(ObjState {
            rev: entry.mod_rev,
            data: Some(parsed.data),
            meta,
            observed: true,
        })
    }

    /// The deadline of a request that sent `metadata`.
    pub fn deadline(&self, metadata: &tonic::metadata::MetadataMap) -> Deadline {
        Deadline::from_metadata(metadata, self.config.request_timeout)
    }

    /// Waits until etcd's revision reaches `min`, for at most [`FRESHNESS_WAIT`] (and the
    /// deadline): a resourceVersion just ahead of etcd is one a client saw from another replica
    /// a moment ago, or one whose write is still on its way (upstream's cacher waits the same
    /// 3 s in `waitUntilFreshAndBlock` before answering "Too large resource version").
    pub async fn await_revision(
        &self,
        key: &str,
        min: i64,
        deadline: Deadline,
    ) -> Result<(), StorageError> {
        let until = (tokio::time::Instant::now() + FRESHNESS_WAIT).min(deadline.instant());
        let call = EtcdCall { key, deadline };
        loop {
            let current = self
                .etcd
                .current_revision(&call, &self.health_key())
                .await?;
            if current >= min {
                return Ok(());
            }
            if tokio::time::Instant::now() + FRESHNESS_POLL > until {
                return Err(StorageError::Timeout {
                    key: key.to_string(),
                    message: format!(
                        "Too large resource version: {min}, current: {current} (waited {FRESHNESS_WAIT:?})"
                    ),
                });
            }
            tokio::time::sleep(FRESHNESS_POLL).await;
        }
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
        if etcd_request_bytes(etcd_key.len(), data.len()) > ETCD_MAX_REQUEST_BYTES {
            return Err(too_large(key, data.len()));
        }
        Ok(())
    }

    /// Waits for `etcd_key`'s turn (see `keylock`) until the deadline.
    pub(crate) async fn take_turn(
        &self,
        key: &str,
        etcd_key: &str,
        deadline: Deadline,
    ) -> Result<KeyTurn, StorageError> {
        // Counted while waiting, also when the wait is abandoned (the caller went away).
        struct Waiting<'a>(&'a prometheus_client::metrics::gauge::Gauge);
        impl Drop for Waiting<'_> {
            fn drop(&mut self) {
                self.0.dec();
            }
        }
        self.etcd.metrics.updates_waiting.inc();
        let _waiting = Waiting(&self.etcd.metrics.updates_waiting);
        let waited = tokio::time::timeout_at(deadline.instant(), self.locks.turn(etcd_key)).await;
        waited.map_err(|_| StorageError::Timeout {
            key: key.to_string(),
            message: "timed out waiting behind other updates of this key".into(),
        })
    }

    /// `Txn(If(mod_revision(key) == expected) Then(Put [lease]) Else(Get))`. A lease that etcd
    /// no longer knows is forgotten and the txn retried once with a fresh one.
    pub(crate) async fn put_if(
        &self,
        call: &EtcdCall<'_>,
        operation: &'static str,
        etcd_key: &str,
        expected_rev: i64,
        data: &[u8],
        ttl: i64,
    ) -> Result<TxnResponse, StorageError> {
        validate_ttl(call.key, ttl)?;
        // Encryption at rest: what etcd stores (the caller keeps the plaintext).
        let stored = self
            .etcd
            .transformer
            .encrypt(etcd_key.as_bytes(), data)
            .map_err(|m| StorageError::internal(call.key, m))?;
        let mut retried = false;
        loop {
            let lease = if ttl == 0 {
                0
            } else {
                self.leases.lease_for(&self.etcd, call, ttl).await?
            };
            let txn = Txn::new()
                .when([Compare::mod_revision(
                    etcd_key,
                    CompareOp::Equal,
                    expected_rev,
                )])
                .and_then([TxnOp::put(
                    etcd_key,
                    stored.as_ref(),
                    Some(PutOptions::new().with_lease(lease)),
                )])
                .or_else([TxnOp::get(etcd_key, None)]);
            match self.etcd.txn(call, Some(operation), txn).await {
                Err(StorageError::LeaseNotFound { key, .. }) if lease != 0 => {
                    tracing::warn!(lease, "etcd lease not found (revoked?): granting a new one");
                    self.leases.forget(lease).await;
                    if retried {
                        return Err(StorageError::LeaseNotFound { key, lease });
                    }
                    retried = true;
                }
                Ok(resp) => {
                    if resp.succeeded() {
                        self.etcd.transformer.written(etcd_key.as_bytes());
                    }
                    return Ok(resp);
                }
                other => return other,
            }
        }
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
            if let Some(cache) = &self.cache {
                // The first touch of a resource starts its cache, so it is warm for the reads.
                cache.cacher(key, &etcd_key);
            }
            let parsed = parse_object(key, object, "object")?;
            if parse_resource_version(key, &parsed.meta.resource_version)? != 0 {
                return Err(StorageError::invalid(
                    key,
                    "resourceVersion should not be set on objects to be created",
                ));
            }
            validate_ttl(key, ttl)?;
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
                    object: parsed.data.into(),
                    rev: 0,
                });
            }
            let resp = self
                .put_if(&call, "create", &etcd_key, 0, &parsed.data, ttl)
                .await?;
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
            if let Some(cache) = &self.cache
                && let Served::Hit(entry) =
                    serve::get(cache, key, &etcd_key, min_resource_version, min, deadline).await?
            {
                return match entry {
                    None if ignore_not_found => Ok(None),
                    None => Err(StorageError::NotFound {
                        key: key.to_string(),
                    }),
                    Some(e) => Ok(Some(Versioned {
                        object: e.object(key)?,
                        rev: e.mod_rev,
                    })),
                };
            }
            let call = EtcdCall { key, deadline };
            let (mut kv, mut current) = self.etcd.range(&call, &etcd_key).await?;
            if min > current {
                self.await_revision(key, min, deadline).await?;
                (kv, current) = self.etcd.range(&call, &etcd_key).await?;
            }
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
    ///
    /// A delete takes its key's turn like an update (not in a dry run): it starts from the state
    /// the last turn saw when the caller sent none, and leaves "unknown" behind, so that an
    /// update queued after it reads etcd and finds the key gone (NotFound) rather than judging
    /// its preconditions against a state that no longer exists.
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
        let result = self
            .delete_loop(key, pre, dry_run, cached, deadline, &mut attempts)
            .instrument(span.clone())
            .await;
        span.record("attempts", i64::from(attempts));
        if result.is_err() {
            span.record("otel.status_code", "ERROR");
        }
        result
    }

    async fn delete_loop(
        &self,
        key: &str,
        pre: Option<&Preconditions>,
        dry_run: bool,
        cached: Option<&[u8]>,
        deadline: Deadline,
        attempts: &mut u32,
    ) -> Result<Versioned, StorageError> {
        let etcd_key = self.prefix.etcd_key(key)?;
        let call = EtcdCall { key, deadline };
        let cached = match cached {
            Some(c) => Some(ObjState::from_cached(key, c)?),
            None => None,
        };
        // As for updates: a resourceVersion precondition older than the watch cache's copy
        // fails before queueing.
        if let Some(seen) = self.cached_state(key, &etcd_key)
            && preconditions::never_again(pre, seen.rev)
            && let Err(e) = preconditions::check(key, pre, &seen.meta)
        {
            return Err(e);
        }
        let mut turn = if dry_run {
            None
        } else {
            Some(self.take_turn(key, &etcd_key, deadline).await?)
        };
        let suggestion = cached.or_else(|| {
            let remembered = turn.as_ref().and_then(|t| (**t).clone());
            match (remembered, self.cached_state(key, &etcd_key)) {
                (Some(r), Some(c)) => Some(if c.rev > r.rev { c } else { r }),
                (r, c) => r.or(c),
            }
        });
        let (mut state, mut current) = match suggestion {
            Some(s) => (s, false),
            None => (self.current(&call, &etcd_key, false).await?, true),
        };
        let result = loop {
            *attempts += 1;
            if *attempts > self.config.max_attempts {
                break Err(StorageError::conflict(
                    key,
                    format!(
                        "gave up after {} attempts: the key kept changing",
                        self.config.max_attempts
                    ),
                ));
            }
            if let Err(e) = preconditions::check(key, pre, &state.meta) {
                if current || (state.observed && preconditions::never_again(pre, state.rev)) {
                    break Err(e);
                }
                let cached_rev = state.rev;
                state = self.current(&call, &etcd_key, false).await?;
                current = true;
                if state.rev == cached_rev {
                    break Err(e);
                }
                continue;
            }
            if dry_run {
                if !current {
                    state = self.current(&call, &etcd_key, false).await?;
                    current = true;
                    continue;
                }
                break Ok(Versioned {
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
            let resp = self.etcd.txn(&call, Some("delete"), txn).await?;
            let (rev, kv) = self.etcd.txn_outcome(&resp)?;
            if resp.succeeded() {
                tracing::debug!("Txn call succeeded");
                break Ok(Versioned {
                    object: state.object_at(key, rev)?,
                    rev,
                });
            }
            self.etcd.metrics.conflicts.inc();
            tracing::debug!("Txn call failed: conflict");
            state = ObjState::from_kv(key, kv, false)?;
            current = true;
            tracing::debug!("Retry with fresh state");
        };
        // Whatever happened, the next turn reads etcd: the key is gone, or its state unknown.
        if let Some(t) = turn.as_mut() {
            **t = None;
        }
        result
    }
}
