//! The controller-manager's Prometheus series, registered on the shared
//! [`kubestore_telemetry::Metrics`] registry (process gauges included) and present from the
//! start, at zero.

use prometheus_client::metrics::{counter::Counter, family::Family, gauge::Gauge};

/// Garbage collector and leader election series.
#[derive(Clone, Default)]
pub struct ControllerMetrics {
    /// Objects waiting for a deletion check.
    pub attempt_to_delete_queue: Gauge,
    /// Owners waiting for their dependents to be orphaned.
    pub attempt_to_orphan_queue: Gauge,
    /// Objects in the owner graph.
    pub graph_nodes: Gauge,
    /// Kinds listed and watched.
    pub monitors: Gauge,
    /// Dependents deleted.
    pub deleted: Counter,
    /// Owner references removed from dependents (orphaned, or dangling beside a live owner).
    pub orphaned: Counter,
    /// Finalizers (`orphan`, `foregroundDeletion`) removed.
    pub finalizers_removed: Counter,
    /// Checks that failed and were queued again.
    pub errors: Counter,
    /// 1 while this process leads, 0 otherwise, by lease name (client-go's series).
    pub leader: Family<Vec<(String, String)>, Gauge>,
}

impl ControllerMetrics {
    /// The series, registered on `registry`.
    pub fn register(registry: &kubestore_telemetry::Metrics) -> Self {
        let m = Self::default();
        registry.register(
            "garbagecollector_attempt_to_delete_queue_length",
            "Objects waiting for the garbage collector's deletion check",
            m.attempt_to_delete_queue.clone(),
        );
        registry.register(
            "garbagecollector_attempt_to_orphan_queue_length",
            "Owners waiting for their dependents to be orphaned",
            m.attempt_to_orphan_queue.clone(),
        );
        registry.register(
            "garbagecollector_graph_nodes",
            "Objects in the garbage collector's owner graph",
            m.graph_nodes.clone(),
        );
        registry.register(
            "garbagecollector_monitors",
            "Kinds the garbage collector lists and watches",
            m.monitors.clone(),
        );
        registry.register(
            "garbagecollector_deleted_dependents",
            "Dependents the garbage collector deleted",
            m.deleted.clone(),
        );
        registry.register(
            "garbagecollector_removed_owner_references",
            "Owner references the garbage collector removed from dependents",
            m.orphaned.clone(),
        );
        registry.register(
            "garbagecollector_removed_finalizers",
            "orphan and foregroundDeletion finalizers the garbage collector removed",
            m.finalizers_removed.clone(),
        );
        registry.register(
            "garbagecollector_errors",
            "Garbage collector checks that failed and were queued again",
            m.errors.clone(),
        );
        registry.register(
            "leader_election_master_status",
            "1 while this process holds the lease, 0 otherwise",
            m.leader.clone(),
        );
        m
    }
}
