//! Kubernetes' wire forms over kubestore's protos, shared by registry-svc (every transport),
//! the CLI and the controllers: what `k8s.io/apimachinery` is to Kubernetes.
//!
//! - [`descriptors`]: the protos' message descriptors, indexed once;
//! - [`rules`]: upstream's Go struct tags that a `.proto` cannot say (`omitempty`, quantities,
//!   patch strategies and merge keys), as data;
//! - [`json`]: Kubernetes JSON for any message, from the descriptors;
//! - [`jsonpath`]: kubectl's JSONPath (`-o jsonpath=`, `custom-columns`, a definition's
//!   `additionalPrinterColumns`);
//! - [`patch`]: JSON merge, JSON and strategic merge patches;
//! - [`smd`]: structured-merge-diff (field sets, managed fields, server-side apply's merge);
//! - [`quantity`]: resource quantities, exactly; [`quota`]: what objects use as ResourceQuota
//!   counts it (registry-svc's admission charges it, the controller-manager sums it);
//! - [`table`]: `meta.k8s.io/v1` Tables (server-side printing);
//! - [`time`]: `metav1.Time` and `MicroTime` text;
//! - [`yaml`]: YAML bodies as JSON, with alias expansion bounded.

pub mod descriptors;
pub mod gotext;
pub mod json;
pub mod jsonpath;
pub mod patch;
pub mod quantity;
pub mod quota;
pub mod rules;
pub mod smd;
pub mod table;
pub mod time;
pub mod yaml;
