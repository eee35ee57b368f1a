//! Pod Security admission: upstream's `k8s.io/pod-security-admission` checks ([`checks`],
//! with the [`baseline`] and [`restricted`] levels' own) and its admission plugin
//! ([`PodSecurity`], from `plugin`) with its [`configuration`], and the check of a namespace's
//! Pods when its enforce label gets stricter ([`dry_run`]).

pub mod checks;
pub mod configuration;
pub mod dry_run;

mod baseline;
mod plugin;
mod restricted;

pub use configuration::PodSecurityConfig;
pub use plugin::PodSecurity;
