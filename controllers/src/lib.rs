//! Controllers over registry-svc's public gRPC API, as upstream's controllers work over the
//! apiserver's: they list, watch and write like any client.
//!
//! - [`informer`]: the one list-watch loop (client-go's reflector) every controller uses;
//! - [`client`]: the metadata of every kind, built-in or custom, through one client
//!   ([`raw`]: the shared request shapes of built-in kinds, objects left encoded);
//! - [`gc`]: the garbage collector (background, foreground and orphan propagation);
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
pub mod ratelimit;
pub mod raw;

use kubestore_telemetry::GrpcTraceService;
use tonic::transport::Channel;

/// The traced channel to registry-svc every controller uses.
pub type Ch = GrpcTraceService<Channel>;
