//! The gRPC transports, each over what lies below it and nothing of the others (the REST
//! transport, `crate::rest`, sits beside them on the same catalog):
//!
//! - [`service`]: the typed services (`core.v1.Pods`, ...), the generic [`service::ResourceService`]
//!   over a kind's Store, written per kind by `grpc_service!`;
//! - [`passthrough`]: their List and Watch answered with storage's bytes, framed without
//!   decoding; [`custom_passthrough`]: the same for `apiextensions.v1.CustomObjects/List`;
//! - [`custom`]: `apiextensions.v1.CustomResourceDefinitions`, and `CustomObjects`
//!   (deprecated): an alias of [`generic`]'s handlers for custom kinds, objects as `Struct`s;
//! - [`generic`]: `registry.v1.Resources`, every verb of every resource over the catalog (what
//!   the CLI and the controllers call);
//! - [`identify`]: who a call is (a client certificate, a bearer token), before any service.
//!
//! What a request's deadline is comes from here (`grpc-timeout`, [`service::ctx`]); what a
//! verb does is the catalog's and the Store's.

pub mod admissionregistration;
pub mod custom;
pub mod custom_passthrough;
pub mod generic;
pub mod identify;
pub mod passthrough;
pub mod rbac;
pub mod service;
