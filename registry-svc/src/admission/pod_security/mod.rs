//! Pod Security admission: upstream's `k8s.io/pod-security-admission` checks ([`checks`],
//! with the [`baseline`] and [`restricted`] levels' own) and its admission plugin
//! ([`PodSecurity`], from `plugin`).

pub mod checks;

mod baseline;
mod plugin;
mod restricted;

pub use plugin::PodSecurity;
