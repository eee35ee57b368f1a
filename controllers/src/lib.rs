//! Controllers over registry-svc's public gRPC API, as upstream's controllers work over the
//! apiserver's: they list, watch and write like any client.
//!
//! - [`informer`]: the one list-watch loop (client-go's reflector) every controller uses;
//! - [`client`]: discovery, and the metadata of every kind, built-in or custom, through the
//!   generic API (`registry.v1.Resources`);
//! - [`gc`]: the garbage collector (background, foreground and orphan propagation);
//! - [`namespace`]: the namespace controller (a deleted namespace's content, then the namespace),
//!   and [`namespace_status`], the conditions that say why a namespace is still Terminating;
//! - [`quota`]: the ResourceQuota controller (each quota's `status.hard` and `status.used`),
//!   recomputing a namespace's quotas when an object they count goes (`quota_replenish`);
//! - [`leader`]: leader election on a `coordination.v1` Lease;
//! - [`manager`]: `kubestore controller-manager` (leader election, then the controllers);
//! - [`events`], [`metrics`]: what they report; [`backoff`]: how refused calls are retried.

pub mod backoff;
pub mod client;
pub mod events;
pub mod gc;
pub mod informer;
pub mod leader;
pub mod manager;
pub mod metrics;
pub mod namespace;
pub mod namespace_status;
pub mod quota;
mod quota_replenish;
pub mod ratelimit;
pub mod serviceaccounts;

use kubestore_telemetry::GrpcTraceService;
use tonic::transport::Channel;

/// The traced channel to registry-svc every controller uses.
pub type Ch = GrpcTraceService<Channel>;
