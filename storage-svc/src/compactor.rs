//! Compaction of etcd's history (upstream's `etcd3.compactor`), once per interval for all
//! storage-svc replicas together.
//!
//! Each replica keeps a logical time (`compact_time`) and the revision it saw at its last tick.
//! On every tick it commits
//! `If(Version(compact_rev_key) == compact_time) Then(Put(compact_rev_key, rev)) Else(Get)`:
//! whoever wins the compare compacts to the revision seen at the previous tick (nothing on the
//! first one); the others learn the key's version and skip. History therefore lives between one
//! and two intervals, and several replicas compact once per interval, not once each. The key and
//! the transaction are upstream's, so kube-apiservers sharing the etcd take part in the same
//! schedule.

use std::time::Duration;

use etcd_client::{Compare, CompareOp, Txn, TxnOp};
use kubestore_telemetry::Deadline;

use crate::{
    error::StorageError,
    etcd::{Etcd, EtcdCall, txn_outcome},
};

/// The key whose version is the compaction clock and whose value the last revision compacted to.
pub const COMPACT_REV_KEY: &str = "compact_rev_key";

/// One replica's compaction state.
#[derive(Debug, Default)]
pub struct Compactor {
    /// The version of [`COMPACT_REV_KEY`] this replica expects.
    compact_time: i64,
    /// The revision seen at the previous tick.
    rev: i64,
}

impl Compactor {
    /// One tick: returns the revision compacted to, if this replica compacted.
    pub async fn tick(
        &mut self,
        etcd: &Etcd,
        timeout: Duration,
    ) -> Result<Option<i64>, StorageError> {
        let call = EtcdCall {
            key: COMPACT_REV_KEY,
            deadline: Deadline::after(timeout),
        };
        let txn = Txn::new()
            .when([Compare::version(
                COMPACT_REV_KEY,
                CompareOp::Equal,
                self.compact_time,
            )])
            .and_then([TxnOp::put(COMPACT_REV_KEY, self.rev.to_string(), None)])
            .or_else([TxnOp::get(COMPACT_REV_KEY, None)]);
        let resp = etcd.txn(&call, None, txn).await?;
        let (header_rev, kv) = txn_outcome(&resp);
        let target = self.rev;
        self.rev = header_rev;
        if !resp.succeeded() {
            // Another replica compacted this interval: adopt its clock.
            self.compact_time = kv.map_or(0, |kv| kv.version());
            return Ok(None);
        }
        self.compact_time += 1;
        if target == 0 {
            // No compaction on the first tick: there is no previous revision yet.
            return Ok(None);
        }
        match etcd.compact(&call, target).await {
            Ok(()) => Ok(Some(target)),
            // Someone (an operator, another system) compacted further already.
            Err(StorageError::Expired { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// Runs the compactor every `interval` until `stop` is raised.
pub async fn run(
    etcd: Etcd,
    interval: Duration,
    timeout: Duration,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let mut compactor = Compactor::default();
    loop {
        tokio::select! {
            _ = stop.wait_for(|s| *s) => return,
            () = tokio::time::sleep(interval) => {}
        }
        match compactor.tick(&etcd, timeout).await {
            Ok(Some(rev)) => {
                etcd.metrics.compactions.inc();
                tracing::info!(revision = rev, "compacted etcd history");
            }
            Ok(None) => {}
            Err(e) => tracing::warn!(error = %e, "compaction failed; retrying next interval"),
        }
    }
}
