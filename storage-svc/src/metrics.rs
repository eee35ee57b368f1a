//! storage-svc's own metrics, and the etcd latency families every etcd call records:
//!
//! - `etcd_request_duration_seconds{operation,type}` is kube-apiserver's (operation `get`,
//!   `list`, `create`, `update`, `delete`; type the resource, `pods` or
//!   `crontabs.stable.example.com`), recorded for the reads and writes of objects as upstream's
//!   `etcd3` store records them, so dashboards written for Kubernetes read it;
//! - `storage_etcd_rpc_duration_seconds{rpc}` counts every etcd round trip by RPC (`Range`,
//!   `Txn`, `LeaseGrant`, `Watch`, `Compact`), internal ones included (the watch cache's fences
//!   and revision probes), which is what tells whether a request touched etcd at all.

use kubestore_telemetry::{
    Metrics,
    metrics::{LatencyFamily, latency_family},
};
use prometheus_client::{
    encoding::EncodeLabelSet,
    metrics::{counter::Counter, gauge::Gauge, histogram::Histogram},
};

/// Labels of an etcd round trip.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RpcLabels {
    /// `Range`, `Txn`, `LeaseGrant`, `Watch` or `Compact`.
    pub rpc: &'static str,
}

/// Labels of kube-apiserver's `etcd_request_duration_seconds`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    /// `get`, `list`, `create`, `update` or `delete`.
    pub operation: &'static str,
    /// The resource, e.g. `pods` (see [`resource_type`]).
    pub r#type: String,
}

/// At most this many distinct `type` labels are kept; further resources are counted as
/// `other`, so a storage client that invents key roots cannot grow the metrics without bound.
pub const MAX_TYPES: usize = 256;

/// The resource a key belongs to, as upstream labels it: `pods` for `/pods/ns/a`, and
/// `plural.group` for a key under a group (`/stable.example.com/crontabs/..` is
/// `crontabs.stable.example.com`); [`resource_of`](crate::keys::resource_of)
/// finds the resource.
pub fn resource_type(key: &str) -> String {
    match crate::keys::resource_of(key) {
        Some(r) => match r.split_once('/') {
            Some((group, plural)) => format!("{plural}.{group}"),
            None => r.to_string(),
        },
        None => String::new(),
    }
}

/// storage-svc's own metrics.
#[derive(Clone)]
pub struct StorageMetrics {
    /// `storage_etcd_rpc_duration_seconds{rpc}`: every etcd round trip.
    pub etcd_rpc_duration: LatencyFamily<RpcLabels>,
    /// `etcd_request_duration_seconds{operation,type}`: kube-apiserver's, for object reads
    /// and writes.
    pub etcd_request_duration: LatencyFamily<RequestLabels>,
    /// The `type` labels in use (at most [`MAX_TYPES`]).
    types: std::sync::Arc<std::sync::Mutex<std::collections::HashSet<String>>>,
    /// `storage_guaranteed_update_attempts`: attempts per GuaranteedUpdate.
    pub update_attempts: Histogram,
    /// `storage_etcd_conflicts_total`: txns that lost a compare.
    pub conflicts: Counter,
    /// `storage_lease_grants_total`: etcd leases granted.
    pub lease_grants: Counter,
    /// `storage_lease_attachments_total`: objects written with a lease.
    pub lease_attachments: Counter,
    /// `storage_guaranteed_updates_waiting`: updates queued behind another update of their key.
    pub updates_waiting: Gauge,
    /// `storage_watches_open`: watch streams being served.
    pub watches_open: Gauge,
    /// `storage_watch_events_sent_total`: events sent to watchers (bookmarks included).
    pub watch_events: Counter,
    /// `storage_watchers_cut_off_total`: watchers cut off because they stopped reading.
    pub watchers_cut_off: Counter,
    /// `storage_list_items_returned_total`: objects returned by lists.
    pub list_items: Counter,
    /// `storage_list_objects_evaluated_total`: objects read and tested against a selector.
    pub list_evaluated: Counter,
    /// `storage_compactions_total`: compactions of etcd's history made by this replica.
    pub compactions: Counter,
}

impl StorageMetrics {
    /// Creates the metrics and registers them in `metrics`.
    pub fn register(metrics: &Metrics) -> Self {
        let me = Self {
            etcd_rpc_duration: latency_family(),
            etcd_request_duration: latency_family(),
            types: Default::default(),
            update_attempts: Histogram::new([
                1.0, 2.0, 3.0, 5.0, 8.0, 13.0, 21.0, 34.0, 55.0, 89.0,
            ]),
            conflicts: Counter::default(),
            lease_grants: Counter::default(),
            lease_attachments: Counter::default(),
            updates_waiting: Gauge::default(),
            watches_open: Gauge::default(),
            watch_events: Counter::default(),
            watchers_cut_off: Counter::default(),
            list_items: Counter::default(),
            list_evaluated: Counter::default(),
            compactions: Counter::default(),
        };
        metrics.register(
            "etcd_request_duration_seconds",
            "etcd request latency in seconds, by operation and resource type (kube-apiserver's)",
            me.etcd_request_duration.clone(),
        );
        metrics.register(
            "storage_etcd_rpc_duration_seconds",
            "etcd round-trip latency in seconds, by RPC (every etcd call, internal ones included)",
            me.etcd_rpc_duration.clone(),
        );
        metrics.register(
            "storage_guaranteed_update_attempts",
            "Attempts (update function calls) per GuaranteedUpdate",
            me.update_attempts.clone(),
        );
        metrics.register(
            "storage_etcd_conflicts",
            "etcd transactions whose compare failed because another writer got there first",
            me.conflicts.clone(),
        );
        metrics.register(
            "storage_lease_grants",
            "etcd leases granted for TTLs",
            me.lease_grants.clone(),
        );
        metrics.register(
            "storage_lease_attachments",
            "Objects written with an etcd lease (TTL)",
            me.lease_attachments.clone(),
        );
        metrics.register(
            "storage_guaranteed_updates_waiting",
            "GuaranteedUpdates waiting for their turn behind another update of the same key",
            me.updates_waiting.clone(),
        );
        metrics.register(
            "storage_watches_open",
            "Watch streams being served",
            me.watches_open.clone(),
        );
        metrics.register(
            "storage_watch_events_sent",
            "Events sent to watchers, bookmarks included",
            me.watch_events.clone(),
        );
        metrics.register(
            "storage_watchers_cut_off",
            "Watchers cut off because they stopped reading and their buffer stayed full",
            me.watchers_cut_off.clone(),
        );
        metrics.register(
            "storage_list_items_returned",
            "Objects returned by lists",
            me.list_items.clone(),
        );
        metrics.register(
            "storage_list_objects_evaluated",
            "Objects lists read from etcd and tested against their selector",
            me.list_evaluated.clone(),
        );
        metrics.register(
            "storage_compactions",
            "Compactions of etcd's history made by this replica",
            me.compactions.clone(),
        );
        me
    }

    /// The `type` label of `key`, or `other` once [`MAX_TYPES`] are in use.
    pub(crate) fn type_label(&self, key: &str) -> String {
        let t = resource_type(key);
        let mut seen = self.types.lock().unwrap_or_else(|p| p.into_inner());
        if seen.contains(&t) {
            return t;
        }
        if seen.len() < MAX_TYPES {
            seen.insert(t.clone());
            return t;
        }
        "other".into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_types_are_resources_as_upstream_names_them() {
        assert_eq!(resource_type("/pods/default/web"), "pods");
        assert_eq!(resource_type("/pods"), "pods");
        assert_eq!(
            resource_type("/stable.example.com/crontabs/default/a"),
            "crontabs.stable.example.com"
        );
        assert_eq!(
            resource_type("/apiextensions.k8s.io/customresourcedefinitions"),
            "customresourcedefinitions.apiextensions.k8s.io"
        );
        let metrics = StorageMetrics::register(&Metrics::new());
        for i in 0..MAX_TYPES {
            assert_eq!(metrics.type_label(&format!("/r{i}/x")), format!("r{i}"));
        }
        assert_eq!(metrics.type_label("/one-too-many/x"), "other");
        assert_eq!(metrics.type_label("/r0/y"), "r0", "known types stay");
    }
}
