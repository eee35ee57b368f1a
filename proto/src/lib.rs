//! The kubestore gRPC contract, compiled once for every crate of the workspace.
//!
//! - [`meta::v1`]: `ObjectMeta`, `Preconditions`, `DeleteOptions`, shared by all kinds.
//! - [`storage::v1`]: the resource-agnostic `Storage` service (storage-svc).
//! - [`core::v1`]: the typed resources served by registry-svc (`Pods`, `ConfigMaps`, `Events`).
//! - [`apiextensions::v1`]: custom kinds (`CustomResourceDefinitions`, `CustomObjects`).
//! - [`coordination::v1`]: `Leases` (leader election).
//! - [`events::v1`]: events.k8s.io's `Event`, a second version of `core.v1.Event` (messages only).
//! - [`rbac::v1`]: `Roles`, `ClusterRoles`, `RoleBindings`, `ClusterRoleBindings` (RBAC).
//! - [`admissionregistration::v1`]: `ValidatingAdmissionPolicies` and their bindings.
//!
//! - [`codec`]: the codec of every generated client and server (malformed = INVALID_ARGUMENT);
//! - [`amplification`]: what a request may decode into, checked before decoding;
//! - [`depth`]: how deeply a message nests, checked before decoding (prost's own recursion
//!   limit is off);
//! - [`limits`]: sizes both services agree on, and bounded error texts;
//! - [`parse_revision`]: a resourceVersion's text, as upstream reads it;
//! - `CustomResourceDefinition::from_manifest`: a definition from upstream's JSON (`manifest`).
//!
//! Maps are generated as `BTreeMap` so that encoding is deterministic (see `build.rs`).

#![allow(missing_docs, unreachable_pub, clippy::doc_lazy_continuation)]

pub mod amplification;
pub mod codec;
pub mod depth;
pub mod limits;
pub mod managed_fields;
mod manifest;
mod meta_rv;

pub use meta_rv::parse_revision;

/// `google.protobuf.Timestamp`, with the proto3 JSON mapping (RFC 3339).
pub use pbjson_types::Timestamp;

/// Object metadata and options shared by every resource kind.
pub mod meta {
    /// Version 1.
    pub mod v1 {
        tonic::include_proto!("meta.v1");
        include!(concat!(env!("OUT_DIR"), "/meta.v1.serde.rs"));

        /// Any resource message seen only through its field 1, `metadata`: what storage and
        /// generic clients need from an encoded object of any kind.
        #[derive(Clone, PartialEq, prost::Message)]
        pub struct MetadataOnly {
            /// Field 1 of every resource message.
            #[prost(message, optional, tag = "1")]
            pub metadata: Option<ObjectMeta>,
        }

        /// `metadata.resource_version` of an encoded resource of any kind ("" if absent or
        /// undecodable).
        pub fn resource_version_of(object: &[u8]) -> String {
            <MetadataOnly as prost::Message>::decode(object)
                .ok()
                .and_then(|e| e.metadata)
                .map(|m| m.resource_version)
                .unwrap_or_default()
        }
    }
}

/// The storage-svc contract.
pub mod storage {
    /// Version 1.
    pub mod v1 {
        tonic::include_proto!("storage.v1");
        include!(concat!(env!("OUT_DIR"), "/storage.v1.serde.rs"));
    }
}

/// The typed resources of registry-svc.
pub mod core {
    /// Version 1.
    pub mod v1 {
        tonic::include_proto!("core.v1");
        include!(concat!(env!("OUT_DIR"), "/core.v1.serde.rs"));
    }
}

/// Custom kinds: `CustomResourceDefinitions` and `CustomObjects` (registry-svc).
pub mod apiextensions {
    /// Version 1.
    pub mod v1 {
        tonic::include_proto!("apiextensions.v1");
        include!(concat!(env!("OUT_DIR"), "/apiextensions.v1.serde.rs"));
    }
}

/// Encoded `FileDescriptorSet` of `storage.v1` and what it imports, for storage-svc's reflection.
pub const STORAGE_DESCRIPTOR_SET: &[u8] = tonic::include_file_descriptor_set!("storage_descriptor");

/// Encoded `FileDescriptorSet` of `core.v1` and `apiextensions.v1` and what they import, for
/// registry-svc's reflection.
pub const CORE_DESCRIPTOR_SET: &[u8] = tonic::include_file_descriptor_set!("core_descriptor");

/// Encoded `FileDescriptorSet` of Kubernetes' own protobuf messages (packages `k8s.io.*`,
/// upstream's field numbers, `k8s/*.proto`), for the REST API's protobuf request bodies.
pub const K8S_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/k8s_descriptor.bin"));

/// The generic API over every resource (`registry.v1.Resources`), objects as Kubernetes JSON.
pub mod registry {
    /// Version 1.
    pub mod v1 {
        tonic::include_proto!("registry.v1");
        include!(concat!(env!("OUT_DIR"), "/registry.v1.serde.rs"));
    }
}

/// Leases (leader election), served by registry-svc.
pub mod coordination {
    /// Version 1.
    pub mod v1 {
        tonic::include_proto!("coordination.v1");
        include!(concat!(env!("OUT_DIR"), "/coordination.v1.serde.rs"));
    }
}

/// events.k8s.io: the `Event` of `core.v1` in its newer version, stored as the core one.
pub mod events {
    /// Version 1.
    pub mod v1 {
        tonic::include_proto!("events.v1");
        include!(concat!(env!("OUT_DIR"), "/events.v1.serde.rs"));
    }
}

/// Role-based access control (rbac.authorization.k8s.io), served by registry-svc.
pub mod rbac {
    /// Version 1.
    pub mod v1 {
        tonic::include_proto!("rbac.v1");
        include!(concat!(env!("OUT_DIR"), "/rbac.v1.serde.rs"));
    }
}

/// Admission policies (admissionregistration.k8s.io), served by registry-svc.
pub mod admissionregistration {
    /// Version 1.
    pub mod v1 {
        tonic::include_proto!("admissionregistration.v1");
        include!(concat!(
            env!("OUT_DIR"),
            "/admissionregistration.v1.serde.rs"
        ));
    }
}
