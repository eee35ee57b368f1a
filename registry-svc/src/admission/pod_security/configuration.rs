//! PodSecurity's configuration (upstream's `pod-security.admission.config.k8s.io/v1`
//! PodSecurityConfiguration, read from `--admission-control-config-file`): the levels of a
//! namespace without labels, and who and what is exempt. Validated as upstream's
//! `ValidatePodSecurityConfiguration`, in its words.

use std::collections::HashSet;

use serde_json::Value;

use super::checks::{Level, Version};
use crate::admission::config::{level, version};

/// A mode's level and version.
pub type Policy = (Level, Version);

/// The policies of a namespace without labels (upstream's default: privileged:latest).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Defaults {
    /// enforce.
    pub enforce: Policy,
    /// audit.
    pub audit: Policy,
    /// warn.
    pub warn: Policy,
}

impl Default for Defaults {
    fn default() -> Self {
        let p = (Level::Privileged, Version::Latest);
        Self {
            enforce: p,
            audit: p,
            warn: p,
        }
    }
}

/// What is never checked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Exemptions {
    /// Requests of these users (the authenticated user, after impersonation).
    pub usernames: Vec<String>,
    /// Pods in these namespaces.
    pub namespaces: Vec<String>,
    /// Pods of these runtime classes (`spec.runtimeClassName`).
    pub runtime_classes: Vec<String>,
}

/// The configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodSecurityConfig {
    /// See [`Defaults`].
    pub defaults: Defaults,
    /// See [`Exemptions`].
    pub exemptions: Exemptions,
}

impl PodSecurityConfig {
    /// The configuration a PodSecurityConfiguration's JSON says, or every mistake in it.
    pub fn from_json(v: &Value) -> Result<Self, String> {
        let api_version = v.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        let kind = v.get("kind").and_then(Value::as_str).unwrap_or("");
        if !matches!(
            api_version,
            "pod-security.admission.config.k8s.io/v1"
                | "pod-security.admission.config.k8s.io/v1beta1"
                | "pod-security.admission.config.k8s.io/v1alpha1"
        ) || kind != "PodSecurityConfiguration"
        {
            return Err(format!(
                "not a PodSecurityConfiguration of pod-security.admission.config.k8s.io/v1 (apiVersion {api_version:?}, kind {kind:?})"
            ));
        }
        let mut errors = Vec::new();
        let defaults = v.get("defaults").cloned().unwrap_or(Value::Null);
        let mut mode = |name: &str| -> Policy {
            let text = |key: &str| {
                defaults
                    .get(key)
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
            };
            let l = text(name).map_or(Ok(Level::Privileged), |t| {
                level(&format!("defaults.{name}"), &t)
            });
            let vkey = format!("{name}-version");
            let ver = text(&vkey).map_or(Ok(Version::Latest), |t| {
                version(&format!("defaults.{vkey}"), &t)
            });
            let l = l.unwrap_or_else(|e| {
                errors.push(e);
                Level::Privileged
            });
            let ver = ver.unwrap_or_else(|e| {
                errors.push(e);
                Version::Latest
            });
            (l, ver)
        };
        let defaults = Defaults {
            enforce: mode("enforce"),
            warn: mode("warn"),
            audit: mode("audit"),
        };
        let exemptions = v.get("exemptions").cloned().unwrap_or(Value::Null);
        let list = |key: &str, check: &dyn Fn(&str) -> Option<String>, errors: &mut Vec<String>| {
            let mut seen = HashSet::new();
            let mut out = Vec::new();
            let items = exemptions
                .get(key)
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            for (i, item) in items.iter().enumerate() {
                let s = item.as_str().unwrap_or("");
                let path = format!("exemptions.{key}[{i}]");
                if let Some(why) = check(s) {
                    errors.push(format!("{path}: Invalid value: {s:?}: {why}"));
                } else if !seen.insert(s.to_string()) {
                    errors.push(format!("{path}: Duplicate value: {s:?}"));
                } else {
                    out.push(s.to_string());
                }
            }
            out
        };
        let namespaces = list("namespaces", &crate::validation::dns1123_label, &mut errors);
        let runtime_classes = list(
            "runtimeClasses",
            &crate::validation::dns1123_subdomain,
            &mut errors,
        );
        let usernames = list(
            "usernames",
            &|s: &str| {
                s.is_empty()
                    .then(|| "username must not be empty".to_string())
            },
            &mut errors,
        );
        if !errors.is_empty() {
            return Err(errors.join(", "));
        }
        Ok(Self {
            defaults,
            exemptions: Exemptions {
                usernames,
                namespaces,
                runtime_classes,
            },
        })
    }
}
