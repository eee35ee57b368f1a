//! One strategy per resource kind. Adding a kind: a proto message and service in
//! `proto/core/v1`, a `resource!` line in `resource`, a strategy here, and one registration
//! line in `lib.rs`.
//!
//! Serving a kind in a second version (events.k8s.io/v1's Event, `event_v1`): a message in
//! its own proto package, upstream's conversion as a `catalog::builtin::Version`, a strategy for
//! writes made in that version, and one `Builtin::version` line in `lib.rs`.

pub mod admission_policy;
pub mod admission_policy_status;
pub mod admission_policy_validation;
pub mod configmap;
pub mod event;
pub mod event_v1;
pub mod hugepages;
pub mod image_ref;
pub mod lease;
pub mod namespace;
pub mod pod;
pub mod pod_create;
pub mod pod_defaults;
pub mod pod_printer;
pub mod pod_quantities;
pub mod pod_status;
pub mod pod_validation;
pub mod printers;
pub mod rbac;
pub mod rbac_validation;
pub mod resource_quota;
pub mod secret;
pub mod service_account;
pub mod volume_defaults;
pub mod webhook;
pub mod webhook_validation;

#[cfg(test)]
mod graceful_tests;
