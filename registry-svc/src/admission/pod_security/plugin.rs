//! The `PodSecurity` admission plugin (upstream's `pod-security-admission/admission`), with
//! upstream's default configuration: a namespace without labels is `privileged:latest` in every
//! mode, and nothing is exempt.
//!
//! A Pod's namespace chooses, by label, a level and version per mode
//! (`pod-security.kubernetes.io/enforce`, `-warn`, `-audit`, each with a `-version`):
//! - **enforce** refuses a Pod that fails its level (403, `pods "p" is forbidden: violates
//!   PodSecurity "baseline:latest": ...`);
//! - **warn** lets it through with a warning (`would violate PodSecurity ...`), unless the
//!   request is refused anyway (upstream adds no warning to a refusal);
//! - **audit** annotates its audit event (`pod-security.kubernetes.io/audit-violations`).
//!
//! Every evaluated Pod's audit event says the enforced policy
//! (`pod-security.kubernetes.io/enforce-policy`). A label that does not parse makes that mode
//! `restricted:latest` and annotates the event with the error, as upstream fails closed.
//!
//! Checked: Pod creates, and updates that can change what the checks see (upstream's
//! `isSignificantPodUpdate`: another image or container count, another seccomp annotation);
//! the `ephemeralcontainers` subresource is checked, the others (`status`, ...) are not.

use std::sync::Arc;

use serde_json::Value;

use super::checks::{self, Level, Version};
use crate::{
    admission::{Objects, Operation, Outcome, Plugin, Request, namespaces::Namespaces},
    error::ApiError,
};

/// Upstream's label and annotation names (`pod-security-admission/api/constants.go`).
const LABEL_PREFIX: &str = "pod-security.kubernetes.io/";
const ENFORCE_POLICY: &str = "pod-security.kubernetes.io/enforce-policy";
const AUDIT_VIOLATIONS: &str = "pod-security.kubernetes.io/audit-violations";
const ERROR: &str = "pod-security.kubernetes.io/error";

/// A level at a version, as upstream prints it: `baseline:latest`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Policy {
    level: Level,
    version: Version,
}

impl Policy {
    const PRIVILEGED: Self = Self {
        level: Level::Privileged,
        version: Version::Latest,
    };
    const RESTRICTED: Self = Self {
        level: Level::Restricted,
        version: Version::Latest,
    };

    fn text(self) -> String {
        format!(
            "{}:{}",
            self.level.as_str(),
            self.version.to_string_upstream()
        )
    }
}

/// The three modes' policies of a namespace, and what did not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Modes {
    enforce: Policy,
    audit: Policy,
    warn: Policy,
    errors: Vec<String>,
}

impl Modes {
    /// Upstream's `PolicyToEvaluate` with the default configuration.
    fn of(labels: &std::collections::BTreeMap<String, String>) -> Self {
        let mut errors = Vec::new();
        let mut mode = |name: &str| {
            let level_key = format!("{LABEL_PREFIX}{name}");
            let version_key = format!("{level_key}-version");
            let mut policy = Policy::PRIVILEGED;
            if let Some(l) = labels.get(&level_key) {
                match Level::parse(l) {
                    Some(level) => policy.level = level,
                    None => {
                        errors.push(format!(
                            "{level_key}: must be one of privileged, baseline, restricted"
                        ));
                        return Policy::RESTRICTED;
                    }
                }
            }
            if let Some(v) = labels.get(&version_key) {
                match Version::parse(v) {
                    Some(version) => policy.version = version,
                    None => {
                        errors.push(format!("{version_key}: must be \"latest\" or \"v1.x\""));
                        return Policy::RESTRICTED;
                    }
                }
            }
            policy
        };
        let enforce = mode("enforce");
        let audit = mode("audit");
        let warn = mode("warn");
        Self {
            enforce,
            audit,
            warn,
            errors,
        }
    }

    fn fully_privileged(&self) -> bool {
        self.errors.is_empty()
            && [self.enforce, self.audit, self.warn]
                .iter()
                .all(|p| p.level == Level::Privileged)
    }
}

/// The plugin.
pub struct PodSecurity {
    namespaces: Arc<Namespaces>,
}

impl PodSecurity {
    /// Reading namespaces' labels from `namespaces`.
    pub fn new(namespaces: Arc<Namespaces>) -> Self {
        Self { namespaces }
    }
}

impl Plugin for PodSecurity {
    fn name(&self) -> &'static str {
        "PodSecurity"
    }

    fn interested(&self, r: &Request<'_>) -> bool {
        r.group.is_empty()
            && r.resource == "pods"
            && matches!(r.subresource, "" | "ephemeralcontainers")
            && r.operation != Operation::Delete
            && !r.namespace.is_empty()
            && {
                // Most namespaces have no Pod Security label: no policy to parse then.
                let labels = self.namespaces.labels(r.namespace);
                labels.keys().any(|k| k.starts_with(LABEL_PREFIX))
                    && !Modes::of(&labels).fully_privileged()
            }
    }

    fn validate(
        &self,
        r: &Request<'_>,
        objects: Objects<'_>,
        outcome: &mut Outcome,
    ) -> Result<(), ApiError> {
        let Some(pod) = objects.object else {
            return Ok(());
        };
        if r.operation == Operation::Update
            && r.subresource.is_empty()
            && let Some(old) = objects.old_object
            && !significant_update(pod, old)
        {
            return Ok(());
        }
        let modes = Modes::of(&self.namespaces.labels(r.namespace));
        if !modes.errors.is_empty() {
            outcome
                .annotations
                .push((ERROR.into(), modes.errors.join(", ")));
        }
        let null = Value::Null;
        let metadata = pod.get("metadata").unwrap_or(&null);
        let spec = pod.get("spec").unwrap_or(&null);
        let failures = |p: Policy| checks::evaluate(p.level, p.version, metadata, spec);
        outcome
            .annotations
            .push((ENFORCE_POLICY.into(), modes.enforce.text()));
        let enforced = failures(modes.enforce);
        if modes.audit.level != Level::Privileged {
            let audited = if modes.audit == modes.enforce {
                enforced.clone()
            } else {
                failures(modes.audit)
            };
            if !audited.is_empty() {
                outcome.annotations.push((
                    AUDIT_VIOLATIONS.into(),
                    format!(
                        "would violate PodSecurity \"{}\": {}",
                        modes.audit.text(),
                        checks::message(&audited)
                    ),
                ));
            }
        }
        if !enforced.is_empty() {
            return Err(ApiError::Forbidden(format!(
                "pods \"{}\" is forbidden: violates PodSecurity \"{}\": {}",
                r.name,
                modes.enforce.text(),
                checks::message(&enforced)
            )));
        }
        if modes.warn.level != Level::Privileged {
            let warned = failures(modes.warn);
            if !warned.is_empty() {
                outcome.warnings.push(format!(
                    "would violate PodSecurity \"{}\": {}",
                    modes.warn.text(),
                    checks::message(&warned)
                ));
            }
        }
        Ok(())
    }
}

/// Upstream's `isSignificantPodUpdate`: whether an update can change what the checks see
/// (the rest of a Pod's spec cannot change once it is created).
fn significant_update(pod: &Value, old: &Value) -> bool {
    const SECCOMP_POD: &str = "seccomp.security.alpha.kubernetes.io/pod";
    const SECCOMP_CONTAINER: &str = "container.seccomp.security.alpha.kubernetes.io/";
    let annotation = |o: &Value, key: &str| {
        o.pointer("/metadata/annotations")
            .and_then(|a| a.get(key))
            .cloned()
    };
    if annotation(pod, SECCOMP_POD) != annotation(old, SECCOMP_POD) {
        return true;
    }
    let list = |o: &Value, field: &str| -> Vec<Value> {
        o.pointer(&format!("/spec/{field}"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    for field in ["containers", "initContainers", "ephemeralContainers"] {
        let (now, before) = (list(pod, field), list(old, field));
        if now.len() != before.len() {
            return true;
        }
        for (c, o) in now.iter().zip(&before) {
            let key = format!(
                "{SECCOMP_CONTAINER}{}",
                c.get("name").and_then(Value::as_str).unwrap_or("")
            );
            if c.get("image") != o.get("image") || annotation(pod, &key) != annotation(old, &key) {
                return true;
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (format!("{LABEL_PREFIX}{k}"), v.to_string()))
            .collect()
    }

    #[test]
    fn no_labels_is_privileged_everywhere() {
        assert!(Modes::of(&BTreeMap::new()).fully_privileged());
    }

    #[test]
    fn labels_choose_a_level_and_version_per_mode() {
        let m = Modes::of(&labels(&[
            ("enforce", "baseline"),
            ("enforce-version", "v1.25"),
            ("warn", "restricted"),
        ]));
        assert_eq!(m.enforce.text(), "baseline:v1.25");
        assert_eq!(m.warn.text(), "restricted:latest");
        assert_eq!(m.audit.text(), "privileged:latest");
        assert!(m.errors.is_empty());
    }

    #[test]
    fn a_label_that_does_not_parse_fails_closed() {
        let m = Modes::of(&labels(&[("enforce", "strict"), ("audit-version", "1.25")]));
        assert_eq!(m.enforce, Policy::RESTRICTED);
        assert_eq!(m.audit, Policy::RESTRICTED);
        assert_eq!(m.errors.len(), 2, "{:?}", m.errors);
        assert!(!m.fully_privileged());
    }

    #[test]
    fn only_images_container_counts_and_seccomp_annotations_are_significant() {
        let pod = |image: &str, labels: Value| {
            serde_json::json!({"metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": image}]}})
        };
        let old = pod("nginx:1", serde_json::json!({}));
        assert!(!significant_update(
            &pod("nginx:1", serde_json::json!({"a": "b"})),
            &old
        ));
        assert!(significant_update(
            &pod("nginx:2", serde_json::json!({})),
            &old
        ));
        let mut annotated = old.clone();
        annotated["metadata"]["annotations"] = serde_json::json!({
            "container.seccomp.security.alpha.kubernetes.io/c": "unconfined"});
        assert!(significant_update(&annotated, &old));
    }
}
