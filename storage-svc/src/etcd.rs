//! The etcd client as storage-svc uses it: every call gets a CLIENT span (`db.system=etcd`,
//! `db.operation`), a latency sample (see [`crate::metrics`]), the request's deadline, and one
//! error mapping.
//!
//! etcd operations used: Range (Get, List), Txn (every write, see `store`), LeaseGrant (TTLs,
//! see `lease`), Watch (see `watch`) and Compact (see `compactor`).
//!
//! Every value read here passes through the [`Transformer`] (encryption at rest) before anyone
//! else sees it: Range results, a failed Txn's Get ([`Etcd::txn_outcome`]) and watch events
//! ([`EtcdWatch`]). Writes encrypt in `store::put_if`, the one place objects are written.

use std::{future::Future, time::Duration};

use etcd_client::{
    Client, ConnectOptions, GetOptions, KeyValue, Txn, TxnOpResponse, TxnResponse, WatchOptions,
    WatchResponse, WatchStream,
};
use kubestore_telemetry::Deadline;
use tracing::Instrument;

pub use crate::metrics::StorageMetrics;
use crate::{
    encryption::Transformer,
    error::StorageError,
    keys::is_internal,
    metrics::{RequestLabels, RpcLabels},
};

/// Largest etcd response storage-svc reads: etcd's Go client's default (`math.MaxInt32`), so
/// any response etcd sends is readable. (tonic's default, 4 MiB, made every range over 4 MiB
/// fail: unlimited lists, the watch cache's initial list, catch-up watches.) etcd bounds what it
/// sends by its own `--max-request-bytes` per value and the range asked for.
pub const MAX_RESPONSE_BYTES: usize = i32::MAX as usize;

/// Context of one etcd call: the caller's key (for errors) and the deadline.
#[derive(Clone, Copy, Debug)]
pub struct EtcdCall<'a> {
    /// The caller's key, named in errors.
    pub key: &'a str,
    /// The request's deadline.
    pub deadline: Deadline,
}

/// An etcd connection.
#[derive(Clone)]
pub struct Etcd {
    client: Client,
    /// Metrics of this storage instance.
    pub metrics: StorageMetrics,
    /// Encryption at rest.
    pub transformer: Transformer,
}

impl Etcd {
    /// Connects lazily: an etcd that is down at start-up is not an error; requests fail with
    /// UNAVAILABLE until it answers, and the channel reconnects by itself.
    /// With `tls`, endpoints are https:// and etcd's certificate is checked (and ours
    /// presented, for `etcd --client-cert-auth`).
    pub async fn connect(
        endpoints: &[String],
        tls: Option<etcd_client::TlsOptions>,
        transformer: Transformer,
        metrics: StorageMetrics,
    ) -> Result<Self, etcd_client::Error> {
        let mut options = ConnectOptions::new()
            .with_connect_timeout(Duration::from_secs(2))
            .with_keep_alive(Duration::from_secs(10), Duration::from_secs(5))
            .with_keep_alive_while_idle(true);
        if let Some(tls) = tls {
            options = options.with_tls(tls);
        }
        let client = Client::connect(endpoints, Some(options)).await?;
        Ok(Self {
            client,
            metrics,
            transformer,
        })
    }

    /// A KV client that reads responses up to [`MAX_RESPONSE_BYTES`].
    fn kv(&self) -> etcd_client::KvClient {
        self.client
            .kv_client()
            .max_decoding_message_size(MAX_RESPONSE_BYTES)
    }

    /// Decrypts `kv`'s value in place (and its staleness is remembered); storage's own keys
    /// (fences) pass through.
    fn open(&self, kv: &mut KeyValue) -> Result<(), StorageError> {
        open_value(&self.transformer, &mut kv.0)
    }

    fn open_all(&self, kvs: &mut [KeyValue]) -> Result<(), StorageError> {
        if self.transformer.enabled() {
            for kv in kvs {
                self.open(kv)?;
            }
        }
        Ok(())
    }

    /// The header revision and, for a failed compare whose Else branch was a Get, the key's
    /// current KeyValue (None if it no longer exists), decrypted.
    pub fn txn_outcome(&self, resp: &TxnResponse) -> Result<(i64, Option<KeyValue>), StorageError> {
        let (rev, mut kv) = txn_outcome(resp);
        if let Some(kv) = kv.as_mut()
            && self.transformer.enabled()
        {
            self.open(kv)?;
        }
        Ok((rev, kv))
    }

    /// One etcd round trip of `operation` (the RPC); `request` is upstream's operation name
    /// when the call reads or writes objects for a caller (see the module doc).
    async fn call<T>(
        &self,
        call: &EtcdCall<'_>,
        operation: &'static str,
        request: Option<&'static str>,
        fut: impl Future<Output = Result<T, etcd_client::Error>>,
    ) -> Result<T, StorageError> {
        let span = tracing::info_span!(
            "etcd",
            otel.name = %format_args!("etcd {operation}"),
            otel.kind = "client",
            db.system = "etcd",
            db.operation = operation,
        );
        let start = std::time::Instant::now();
        let result = tokio::time::timeout_at(call.deadline.instant(), fut)
            .instrument(span)
            .await;
        let elapsed = start.elapsed().as_secs_f64();
        self.metrics
            .etcd_rpc_duration
            .get_or_create(&RpcLabels { rpc: operation })
            .observe(elapsed);
        if let Some(request) = request {
            self.metrics
                .etcd_request_duration
                .get_or_create(&RequestLabels {
                    operation: request,
                    r#type: self.metrics.type_label(call.key),
                })
                .observe(elapsed);
        }
        match result {
            Err(_) => Err(StorageError::Timeout {
                key: call.key.to_string(),
                message: format!("etcd {operation} did not answer within the request deadline"),
            }),
            Ok(Err(e)) => Err(map_error(call.key, operation, e)),
            Ok(Ok(v)) => Ok(v),
        }
    }

    /// Linearizable read of one key: its KeyValue (None if absent) and the header revision.
    pub async fn range(
        &self,
        call: &EtcdCall<'_>,
        etcd_key: &str,
    ) -> Result<(Option<KeyValue>, i64), StorageError> {
        let mut kv = self.kv();
        let mut resp = self
            .call(call, "Range", Some("get"), kv.get(etcd_key, None))
            .await?;
        let rev = resp.header().map_or(0, |h| h.revision());
        let mut kvs = resp.take_kvs();
        self.open_all(&mut kvs)?;
        Ok((kvs.into_iter().next(), rev))
    }

    /// One page of a range read: the KeyValues from `start` (inclusive) to `end` (exclusive),
    /// at most `limit` (0 = all), at `revision` (0 = current).
    pub async fn range_page(
        &self,
        call: &EtcdCall<'_>,
        start: &[u8],
        end: &[u8],
        limit: i64,
        revision: i64,
    ) -> Result<RangePage, StorageError> {
        let mut kv = self.kv();
        let mut options = GetOptions::new().with_range(end.to_vec());
        if limit > 0 {
            options = options.with_limit(limit);
        }
        if revision > 0 {
            options = options.with_revision(revision);
        }
        let mut resp = self
            .call(
                call,
                "Range",
                Some("list"),
                kv.get(start.to_vec(), Some(options)),
            )
            .await?;
        let mut kvs = resp.take_kvs();
        self.open_all(&mut kvs)?;
        Ok(RangePage {
            revision: resp.header().map_or(0, |h| h.revision()),
            more: resp.more(),
            count: resp.count(),
            kvs,
        })
    }

    /// One key at `revision` (0 = current): its KeyValue and the header revision.
    pub async fn get_at(
        &self,
        call: &EtcdCall<'_>,
        key: &[u8],
        revision: i64,
    ) -> Result<(Option<KeyValue>, i64), StorageError> {
        let mut kv = self.kv();
        let options = (revision > 0).then(|| GetOptions::new().with_revision(revision));
        let mut resp = self
            .call(call, "Range", Some("get"), kv.get(key.to_vec(), options))
            .await?;
        let rev = resp.header().map_or(0, |h| h.revision());
        let mut kvs = resp.take_kvs();
        self.open_all(&mut kvs)?;
        Ok((kvs.into_iter().next(), rev))
    }

    /// Fails `Expired` when `revision` was compacted out of etcd's history (and `Timeout` when
    /// it is ahead of etcd), by a count-only read of `probe_key` at that revision.
    pub async fn check_revision(
        &self,
        call: &EtcdCall<'_>,
        probe_key: &str,
        revision: i64,
    ) -> Result<(), StorageError> {
        let mut kv = self.kv();
        let options = GetOptions::new().with_count_only().with_revision(revision);
        self.call(call, "Range", None, kv.get(probe_key, Some(options)))
            .await
            .map(drop)
    }

    /// etcd's current revision, by a linearizable count-only read of `probe_key` (upstream's
    /// `GetCurrentResourceVersion`).
    pub async fn current_revision(
        &self,
        call: &EtcdCall<'_>,
        probe_key: &str,
    ) -> Result<i64, StorageError> {
        let mut kv = self.kv();
        let resp = self
            .call(
                call,
                "Range",
                None,
                kv.get(probe_key, Some(GetOptions::new().with_count_only())),
            )
            .await?;
        match resp.header().map(|h| h.revision()) {
            Some(rev) if rev > 0 => Ok(rev),
            _ => Err(StorageError::internal(
                call.key,
                "etcd answered without a revision",
            )),
        }
    }

    /// Opens an etcd watch of `key` (with `range_end`, or one key) from `start_revision`, with
    /// previous values.
    pub async fn watch(
        &self,
        call: &EtcdCall<'_>,
        key: &[u8],
        range_end: Option<&[u8]>,
        start_revision: i64,
    ) -> Result<EtcdWatch, StorageError> {
        let mut w = self
            .client
            .watch_client()
            .max_decoding_message_size(MAX_RESPONSE_BYTES);
        let mut options = WatchOptions::new()
            .with_prev_key()
            .with_start_revision(start_revision);
        if let Some(end) = range_end {
            options = options.with_range(end.to_vec());
        }
        let stream = self
            .call(call, "Watch", None, w.watch(key.to_vec(), Some(options)))
            .await?;
        Ok(EtcdWatch {
            stream,
            transformer: self.transformer.clone(),
        })
    }

    /// Compacts etcd's history up to `revision`.
    pub async fn compact(&self, call: &EtcdCall<'_>, revision: i64) -> Result<(), StorageError> {
        let mut kv = self.kv();
        self.call(call, "Compact", None, kv.compact(revision, None))
            .await
            .map(|_| ())
    }

    /// Runs a transaction; `request` names the object write it is (`create`, `update`,
    /// `delete`) for `etcd_request_duration_seconds`, None for storage's own (fences,
    /// compaction).
    pub async fn txn(
        &self,
        call: &EtcdCall<'_>,
        request: Option<&'static str>,
        txn: Txn,
    ) -> Result<TxnResponse, StorageError> {
        let mut kv = self.kv();
        self.call(call, "Txn", request, kv.txn(txn)).await
    }

    /// Grants a lease of `ttl` seconds.
    pub async fn lease_grant(&self, call: &EtcdCall<'_>, ttl: i64) -> Result<i64, StorageError> {
        let mut lease = self.client.lease_client();
        let resp = self
            .call(call, "LeaseGrant", None, lease.grant(ttl, None))
            .await?;
        self.metrics.lease_grants.inc();
        Ok(resp.id())
    }

    /// Whether etcd can take writes: it answers and has raised no alarm (NOSPACE when its
    /// backend reached `--quota-backend-bytes`, CORRUPT); the reason when it cannot.
    pub async fn writable(&self, timeout: Duration) -> Result<(), String> {
        let mut m = self.client.maintenance_client();
        let resp = tokio::time::timeout(
            timeout,
            m.alarm(
                etcd_client::AlarmAction::Get,
                etcd_client::AlarmType::None,
                None,
            ),
        )
        .await
        .map_err(|_| "etcd did not answer".to_string())?
        .map_err(|e| format!("etcd did not answer: {e}"))?;
        let alarms: Vec<String> = resp
            .alarms()
            .iter()
            .map(|a| format!("{:?}", a.alarm()).to_uppercase())
            .collect();
        if alarms.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "etcd raised the alarm {}: free space (compact, defragment), then disarm it",
                alarms.join(", ")
            ))
        }
    }

    /// Whether etcd answers a linearizable read within `timeout` (which needs a leader and a
    /// quorum).
    pub async fn healthy(&self, probe_key: &str, timeout: Duration) -> bool {
        let mut kv = self.kv();
        matches!(
            tokio::time::timeout(
                timeout,
                kv.get(probe_key, Some(GetOptions::new().with_count_only()))
            )
            .await,
            Ok(Ok(_))
        )
    }
}

/// One page of a range read.
#[derive(Debug)]
pub struct RangePage {
    /// The header revision (the revision the page was read at, for a read at the current one).
    pub revision: i64,
    /// Whether keys remain in the range after this page.
    pub more: bool,
    /// Keys in the range from the page's start, this page included.
    pub count: i64,
    /// The page.
    pub kvs: Vec<KeyValue>,
}

/// Why an [`EtcdWatch`] ended.
#[derive(Debug, thiserror::Error)]
pub enum WatchFailure {
    /// etcd's stream failed (watch again).
    #[error("{0}")]
    Etcd(#[from] etcd_client::Error),
    /// A value in it cannot be decrypted: the error Get and List give for it (INTERNAL, naming
    /// the key and resource); watching again would meet it again.
    #[error("{0}")]
    Value(StorageError),
}

/// An etcd watch whose events carry decrypted values (see [`Etcd::watch`]).
pub struct EtcdWatch {
    stream: WatchStream,
    transformer: Transformer,
}

impl EtcdWatch {
    /// The next response, its values decrypted. A value that cannot be decrypted ends the
    /// watch with an error naming it (never a garbage event).
    pub async fn message(&mut self) -> Result<Option<WatchResponse>, WatchFailure> {
        let Some(mut resp) = self.stream.message().await? else {
            return Ok(None);
        };
        if self.transformer.enabled() {
            for ev in &mut resp.0.events {
                for kv in [ev.kv.as_mut(), ev.prev_kv.as_mut()].into_iter().flatten() {
                    open_value(&self.transformer, kv).map_err(WatchFailure::Value)?;
                }
            }
        }
        Ok(Some(resp))
    }

    /// Asks etcd for a progress notification.
    pub async fn request_progress(&mut self) -> Result<(), etcd_client::Error> {
        self.stream.request_progress().await
    }
}

/// Decrypts one raw KeyValue's value in place; deletions (no value) and storage's own keys
/// pass through.
fn open_value(
    transformer: &Transformer,
    kv: &mut etcd_client::proto::PbKeyValue,
) -> Result<(), StorageError> {
    if kv.value.is_empty() || is_internal(&kv.key) {
        return Ok(());
    }
    match transformer.decrypt(&kv.key, &kv.value, kv.mod_revision) {
        Ok(plain) => {
            kv.value = plain;
            Ok(())
        }
        Err(message) => Err(StorageError::internal(
            &String::from_utf8_lossy(&kv.key),
            message,
        )),
    }
}

/// The header revision and, for a failed compare whose Else branch was a Get, the key's
/// current KeyValue (None if it no longer exists), as stored (see [`Etcd::txn_outcome`] for
/// object keys).
pub fn txn_outcome(resp: &TxnResponse) -> (i64, Option<KeyValue>) {
    let rev = resp.header().map_or(0, |h| h.revision());
    let kv = resp.op_responses().into_iter().find_map(|r| match r {
        TxnOpResponse::Get(mut g) => g.take_kvs().into_iter().next(),
        _ => None,
    });
    (rev, kv)
}

fn map_error(key: &str, operation: &str, e: etcd_client::Error) -> StorageError {
    use tonic::Code;
    let etcd_client::Error::GRpcStatus(s) = e else {
        return StorageError::Unavailable {
            key: key.to_string(),
            message: format!("etcd {operation} failed: {e}"),
        };
    };
    let said = s.message();
    match s.code() {
        // etcd's NOSPACE alarm (ErrGRPCNoSpace): the cluster, not the request, is at fault, and
        // no retry helps until an operator acts.
        Code::ResourceExhausted if said.contains("database space exceeded") => {
            StorageError::StorageFull {
                key: key.to_string(),
                message: format!(
                    "etcd is out of space ({said}): writes fail until its database is compacted, \
                     defragmented and the NOSPACE alarm is disarmed; reads still work"
                ),
            }
        }
        // "etcdserver: too many requests" (ErrGRPCTooManyRequests) and any other overload.
        Code::ResourceExhausted => StorageError::Unavailable {
            key: key.to_string(),
            message: format!("etcd is overloaded: {said}"),
        },
        Code::NotFound if said.contains("lease not found") => StorageError::LeaseNotFound {
            key: key.to_string(),
            lease: 0,
        },
        // ErrCompacted: the revision asked for is gone from etcd's history. (Matched by its
        // words: which code carries it differs between etcd versions and paths.)
        _ if said.contains("required revision has been compacted") => StorageError::Expired {
            key: key.to_string(),
            message: "The resourceVersion for the provided list is too old.".into(),
            continue_token: None,
        },
        // ErrFutureRev: the revision asked for is ahead of etcd (upstream's
        // TooLargeResourceVersion, a Timeout); callers fill in the numbers.
        _ if said.contains("required revision is a future revision") => StorageError::Timeout {
            key: key.to_string(),
            message: "Too large resource version".into(),
        },
        // e.g. "etcdserver: request is too large": the request, not etcd, is at fault.
        Code::InvalidArgument => {
            StorageError::invalid(key, format!("etcd rejected the {operation}: {said}"))
        }
        // OUT_OF_RANGE that is neither of the above (a response larger than the client reads,
        // say) is the server's fault, never the caller's.
        Code::OutOfRange | Code::DataLoss | Code::Unimplemented => {
            StorageError::internal(key, format!("etcd {operation} failed: {said}"))
        }
        Code::DeadlineExceeded => StorageError::Timeout {
            key: key.to_string(),
            message: format!("etcd {operation}: {said}"),
        },
        _ => StorageError::Unavailable {
            key: key.to_string(),
            message: format!("etcd {operation} failed: {said}"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(code: tonic::Code, message: &str) -> etcd_client::Error {
        etcd_client::Error::GRpcStatus(tonic::Status::new(code, message))
    }

    #[test]
    fn etcd_errors_map_to_what_the_caller_should_do() {
        use tonic::Code;
        let e = map_error(
            "/k",
            "Txn",
            status(
                Code::ResourceExhausted,
                "etcdserver: mvcc: database space exceeded",
            ),
        );
        assert_eq!(e.code(), Code::ResourceExhausted);
        assert_eq!(e.reason(), "StorageFull");
        assert!(e.to_string().contains("out of space"), "{e}");
        let e = map_error(
            "/k",
            "Txn",
            status(Code::ResourceExhausted, "etcdserver: too many requests"),
        );
        assert_eq!(
            (e.code(), e.reason()),
            (Code::Unavailable, "ServiceUnavailable")
        );
        let e = map_error(
            "/k",
            "Txn",
            status(Code::NotFound, "etcdserver: requested lease not found"),
        );
        assert!(matches!(e, StorageError::LeaseNotFound { .. }), "{e}");
        let e = map_error(
            "/k",
            "Txn",
            status(Code::InvalidArgument, "etcdserver: request is too large"),
        );
        assert_eq!(e.code(), Code::InvalidArgument);
        let e = map_error(
            "/k",
            "Range",
            status(Code::Unavailable, "connection refused"),
        );
        assert_eq!(e.code(), Code::Unavailable);
        let e = map_error(
            "/k",
            "Range",
            status(
                Code::InvalidArgument,
                "etcdserver: mvcc: required revision has been compacted",
            ),
        );
        assert_eq!((e.code(), e.reason()), (Code::OutOfRange, "Expired"));
        // A response over the client's limit is the server's fault, not the caller's.
        let e = map_error(
            "/k",
            "Range",
            status(
                Code::OutOfRange,
                "Error, decoded message length too large: found 12582912 bytes, the limit is: 4194304 bytes",
            ),
        );
        assert_eq!((e.code(), e.reason()), (Code::Internal, "InternalError"));
    }
}
