//! The kubestore gRPC contract, compiled once for every crate of the workspace.
//!
//! - [`meta::v1`]: `ObjectMeta`, `Preconditions`, `DeleteOptions`, shared by all kinds.
//! - [`storage::v1`]: the resource-agnostic `Storage` service (storage-svc).
//! - [`core::v1`]: the typed resources served by registry-svc (`Pods`, `ConfigMaps`, `Events`).
//!
//! Maps are generated as `BTreeMap` so that encoding is deterministic (see `build.rs`).

#![allow(missing_docs, unreachable_pub, clippy::doc_lazy_continuation)]

/// Object metadata and options shared by every resource kind.
pub mod meta {
    /// Version 1.
    pub mod v1 {
        tonic::include_proto!("meta.v1");
    }
}

/// The storage-svc contract.
pub mod storage {
    /// Version 1.
    pub mod v1 {
        tonic::include_proto!("storage.v1");
    }
}

/// The typed resources of registry-svc.
pub mod core {
    /// Version 1.
    pub mod v1 {
        tonic::include_proto!("core.v1");
    }
}

/// Encoded `FileDescriptorSet` of every kubestore proto, for gRPC server reflection.
pub const FILE_DESCRIPTOR_SET: &[u8] = tonic::include_file_descriptor_set!("kubestore_descriptor");
