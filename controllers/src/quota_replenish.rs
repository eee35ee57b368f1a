//! Quota replenishment (upstream's `pkg/controller/resourcequota/resource_quota_monitor.go`):
//! the resources quotas count are watched, and when one of their objects goes (deleted, or a
//! pod turned Succeeded or Failed, which no longer counts) its namespace's quotas are
//! recomputed at once, so a charge is released within moments of the delete instead of at the
//! next resync.
//!
//! A resource is watched from the first pass that finds a quota counting it, until a pass's
//! discovery no longer lists it (a custom kind deleted, or served at another version), or the
//! controller stops (upstream's monitors follow every quota-able resource discovery lists; here
//! only those some quota has named). Each watch is an informer of its own over the generic API; only its
//! deletes and pod updates are looked at. The namespaces to recompute reach the controller
//! through a bounded channel: when it is full the namespace is dropped, and the resync (every
//! [`QuotaConfig::resync`](super::quota::QuotaConfig)) releases that charge instead.

use std::collections::{BTreeMap, BTreeSet};

use kubestore_proto::registry::v1::ResourceRef;
use serde_json::Value;
use tokio::sync::{mpsc, watch};

use crate::{
    Ch,
    client::Kind,
    informer::{self, Delta},
    namespace::Objects,
};

/// Namespaces waiting for the controller (beyond these, the resync releases).
pub(crate) const QUEUED: usize = 1024;

/// The watches of counted resources, and where they send namespaces.
pub(crate) struct Replenisher {
    ch: Ch,
    /// By `group/version/resource`: what stops each watch.
    watched: BTreeMap<String, watch::Sender<bool>>,
    tx: mpsc::Sender<String>,
}

/// A kind's key among the watches.
fn key(kind: &Kind) -> String {
    format!("{}/{}/{}", kind.group(), kind.version(), kind.resource)
}

impl Drop for Replenisher {
    /// The controller stopped (or lost its lease): every watch stops with it.
    fn drop(&mut self) {
        for stop in self.watched.values() {
            let _ = stop.send(true);
        }
    }
}

impl Replenisher {
    /// Watches nothing yet; namespaces to recompute go to `tx`.
    pub(crate) fn new(ch: Ch, tx: mpsc::Sender<String>) -> Self {
        Self {
            ch,
            watched: BTreeMap::new(),
            tx,
        }
    }

    /// Stops the watches of what `kinds` (a discovery) no longer lists.
    pub(crate) fn retain(&mut self, kinds: &[Kind]) {
        let served: BTreeSet<String> = kinds.iter().map(key).collect();
        self.watched.retain(|k, stop| {
            let keep = served.contains(k);
            if !keep {
                tracing::debug!(resource = %k, "resourcequota controller: no longer watching");
                let _ = stop.send(true);
            }
            keep
        });
    }

    /// Watches `kind` unless it is watched already.
    pub(crate) fn watch(&mut self, kind: &Kind) {
        if self.watched.contains_key(&key(kind)) {
            return;
        }
        let (stop, stopped) = watch::channel(false);
        self.watched.insert(key(kind), stop);
        tracing::debug!(resource = %kind.qualified(), "resourcequota controller: watching");
        let resource = ResourceRef {
            group: kind.group().to_string(),
            version: kind.version().to_string(),
            resource: kind.resource.clone(),
        };
        let pods = kind.group().is_empty() && kind.resource == "pods";
        tokio::spawn(forward(
            self.ch.clone(),
            resource,
            pods,
            self.tx.clone(),
            stopped,
        ));
    }
}

/// Whether a pod's phase is terminal (upstream's quota no longer charges it).
fn terminal(pod: &Value) -> bool {
    matches!(
        pod.pointer("/status/phase").and_then(Value::as_str),
        Some("Succeeded" | "Failed")
    )
}

/// The namespace of an object that stopped counting, if `delta` says one did.
fn released(delta: &Delta<Value>, pods: bool) -> Option<&str> {
    let object = match delta {
        Delta::Delete(o) => o,
        Delta::Upsert(o) if pods && terminal(o) => o,
        _ => return None,
    };
    object
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .filter(|ns| !ns.is_empty())
}

/// Runs an informer of `resource` until `stop`, sending the namespace of each object that
/// stopped counting to `tx`.
async fn forward(
    ch: Ch,
    resource: ResourceRef,
    pods: bool,
    tx: mpsc::Sender<String>,
    stop: watch::Receiver<bool>,
) {
    let (deltas, mut rx) = mpsc::channel(64);
    tokio::spawn(informer::run(Objects(ch, resource), deltas, stop));
    while let Some(delta) = rx.recv().await {
        if let Some(ns) = released(&delta, pods) {
            match tx.try_send(ns.to_string()) {
                Ok(()) | Err(mpsc::error::TrySendError::Full(_)) => {}
                Err(mpsc::error::TrySendError::Closed(_)) => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn deletes_and_pods_turning_terminal_release() {
        let cm = json!({"metadata": {"namespace": "team", "name": "a"}});
        assert_eq!(released(&Delta::Delete(cm.clone()), false), Some("team"));
        assert_eq!(released(&Delta::Upsert(cm.clone()), false), None);
        assert_eq!(released(&Delta::Replace(vec![cm]), false), None);
        let running = json!({"metadata": {"namespace": "team"}, "status": {"phase": "Running"}});
        let done = json!({"metadata": {"namespace": "team"}, "status": {"phase": "Succeeded"}});
        let failed = json!({"metadata": {"namespace": "team"}, "status": {"phase": "Failed"}});
        assert_eq!(released(&Delta::Upsert(running), true), None);
        assert_eq!(released(&Delta::Upsert(done.clone()), true), Some("team"));
        assert_eq!(released(&Delta::Upsert(failed), true), Some("team"));
        // Only pods turn terminal.
        assert_eq!(released(&Delta::Upsert(done), false), None);
        let cluster = json!({"metadata": {"name": "n"}});
        assert_eq!(released(&Delta::Delete(cluster), false), None);
    }
}
