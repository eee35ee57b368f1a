//! The `PodSecurity` admission plugin (upstream's `pod-security-admission/admission`), with
//! the configuration of `--admission-control-config-file` (default: `privileged:latest`
//! everywhere, nothing exempt).
//!
//! A Pod's namespace chooses, by label, a level and version per mode
//! (`pod-security.kubernetes.io/enforce`, `-warn`, `-audit`, each with a `-version`; the
//! configuration's defaults where a label is absent; warn follows a stricter enforce that is
//! set without a warn, as upstream's `PolicyToEvaluate`):
//! - **enforce** refuses a Pod that fails its level (403, `pods "p" is forbidden: violates
//!   PodSecurity "baseline:latest": ...`);
//! - **warn** lets it through with a warning (`would violate PodSecurity ...`), unless the
//!   request is refused anyway (upstream adds no warning to a refusal);
//! - **audit** annotates its audit event (`pod-security.kubernetes.io/audit-violations`).
//!
//! Every evaluated Pod's audit event says the enforced policy
//! (`pod-security.kubernetes.io/enforce-policy`), an exempt one why it is exempt
//! (`pod-security.kubernetes.io/exempt`: `namespace`, `user` or `runtimeClass`). A label that
//! does not parse makes enforce `restricted` (and audit and warn `privileged`: upstream fails
//! closed for enforce only), annotates the event (`pod-security.kubernetes.io/error`), and
//! is refused on the Namespace itself (422) when it is set or changed.
//!
//! Checked: Pod creates, and updates that can change what the checks see (upstream's
//! `isSignificantPodUpdate`: another image or container count, another seccomp annotation);
//! every subresource but those upstream ignores (`status`, `binding`, `eviction`, ...).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use super::{
    checks::{self, Level, Version},
    configuration::{Defaults, PodSecurityConfig},
};
use crate::{
    admission::{Objects, Operation, Outcome, Plugin, Request, labels_of, namespaces::Namespaces},
    error::ApiError,
};

/// Upstream's label and annotation names (`pod-security-admission/api/constants.go`).
const LABEL_PREFIX: &str = "pod-security.kubernetes.io/";
const ENFORCE_POLICY: &str = "pod-security.kubernetes.io/enforce-policy";
const AUDIT_VIOLATIONS: &str = "pod-security.kubernetes.io/audit-violations";
const EXEMPT: &str = "pod-security.kubernetes.io/exempt";
const ERROR: &str = "pod-security.kubernetes.io/error";

/// Pod subresources that cannot change a Pod's spec (upstream's `ignoredPodSubresources`).
const IGNORED_SUBRESOURCES: &[&str] = &[
    "attach",
    "binding",
    "eviction",
    "log",
    "portforward",
    "proxy",
    "status",
];

/// A level at a version, as upstream prints it: `baseline:latest`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Policy {
    pub(super) level: Level,
    pub(super) version: Version,
}

impl Policy {
    fn of((level, version): (Level, Version)) -> Self {
        Self { level, version }
    }

    pub(super) fn text(self) -> String {
        format!(
            "{}:{}",
            self.level.as_str(),
            self.version.to_string_upstream()
        )
    }
}

/// The three modes' policies of a namespace, and the labels that did not parse (upstream's
/// field errors, in its words).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Modes {
    pub(super) enforce: Policy,
    audit: Policy,
    warn: Policy,
    pub(super) errors: Vec<String>,
}

impl Modes {
    /// Upstream's `PolicyToEvaluate` of `labels` over `defaults`.
    fn of(labels: &BTreeMap<String, String>, defaults: &Defaults) -> Self {
        let mut m = Self {
            enforce: Policy::of(defaults.enforce),
            audit: Policy::of(defaults.audit),
            warn: Policy::of(defaults.warn),
            errors: Vec::new(),
        };
        if labels.is_empty() {
            return m;
        }
        let label = |mode: &str| labels.get(&format!("{LABEL_PREFIX}{mode}"));
        let mut invalid = |mode: &str, value: &str, why: &str| {
            m.errors.push(format!(
                "metadata.labels[{LABEL_PREFIX}{mode}]: Invalid value: {value:?}: {why}"
            ));
        };
        const LEVELS: &str = "must be one of privileged, baseline, restricted";
        const VERSIONS: &str = "must be \"latest\" or \"v1.x\"";
        let mut enforce = m.enforce;
        let mut audit = m.audit;
        let mut warn = m.warn;
        let mut has_enforce_level = false;
        if let Some(l) = label("enforce") {
            match Level::parse(l) {
                Some(level) => {
                    enforce.level = level;
                    has_enforce_level = true;
                }
                None => {
                    // Fails closed.
                    enforce.level = Level::Restricted;
                    invalid("enforce", l, LEVELS);
                }
            }
        }
        if let Some(v) = label("enforce-version") {
            enforce.version = Version::parse(v).unwrap_or_else(|| {
                invalid("enforce-version", v, VERSIONS);
                Version::Latest
            });
        }
        if let Some(l) = label("audit") {
            audit.level = Level::parse(l).unwrap_or_else(|| {
                // Fails open.
                invalid("audit", l, LEVELS);
                Level::Privileged
            });
        }
        if let Some(v) = label("audit-version") {
            audit.version = Version::parse(v).unwrap_or_else(|| {
                invalid("audit-version", v, VERSIONS);
                Version::Latest
            });
        }
        let has_warn_level = label("warn").is_some();
        if let Some(l) = label("warn") {
            warn.level = Level::parse(l).unwrap_or_else(|| {
                invalid("warn", l, LEVELS);
                Level::Privileged
            });
        }
        let has_warn_version = label("warn-version").is_some();
        if let Some(v) = label("warn-version") {
            warn.version = Version::parse(v).unwrap_or_else(|| {
                invalid("warn-version", v, VERSIONS);
                Version::Latest
            });
        }
        // Warn follows an explicitly stricter enforce.
        if !has_warn_level && has_enforce_level && enforce.level > warn.level {
            warn.level = enforce.level;
            if !has_warn_version {
                warn.version = enforce.version;
            }
        }
        m.enforce = enforce;
        m.audit = audit;
        m.warn = warn;
        m
    }

    fn fully_privileged(&self) -> bool {
        self.errors.is_empty()
            && [self.enforce, self.audit, self.warn]
                .iter()
                .all(|p| p.level == Level::Privileged)
    }

    /// Upstream's aggregate of the errors: one as it is, several in brackets.
    fn error_text(&self) -> String {
        match self.errors.as_slice() {
            [one] => one.clone(),
            many => format!("[{}]", many.join(", ")),
        }
    }
}

/// The plugin.
pub struct PodSecurity {
    namespaces: Arc<Namespaces>,
    config: PodSecurityConfig,
}

impl PodSecurity {
    /// Reading namespaces' labels from `namespaces`, configured by `config`.
    pub fn new(namespaces: Arc<Namespaces>, config: PodSecurityConfig) -> Self {
        Self { namespaces, config }
    }

    pub(super) fn modes(&self, labels: &BTreeMap<String, String>) -> Modes {
        Modes::of(labels, &self.config.defaults)
    }

    pub(super) fn exempt_namespace(&self, ns: &str) -> bool {
        self.config.exemptions.namespaces.iter().any(|n| n == ns)
    }

    /// A Pod's create or update (upstream's `ValidatePod`).
    fn pod(
        &self,
        r: &Request<'_>,
        objects: &Objects<'_>,
        out: &mut Outcome,
    ) -> Result<(), ApiError> {
        if IGNORED_SUBRESOURCES.contains(&r.subresource) {
            return Ok(());
        }
        if self.exempt_namespace(r.namespace) {
            out.annotations.push((EXEMPT.into(), "namespace".into()));
            return Ok(());
        }
        if self.config.exemptions.usernames.contains(&r.user.name) {
            out.annotations.push((EXEMPT.into(), "user".into()));
            return Ok(());
        }
        let modes = self.modes(&self.namespaces.labels(r.namespace));
        if modes.fully_privileged() {
            out.annotations
                .push((ENFORCE_POLICY.into(), "privileged:latest".into()));
            return Ok(());
        }
        let Some(pod) = objects.object()? else {
            return Ok(());
        };
        if r.operation == Operation::Update
            && let Some(old) = objects.old_object()?
            && !significant_update(pod, old)
        {
            return Ok(());
        }
        let null = Value::Null;
        let metadata = pod.get("metadata").unwrap_or(&null);
        let spec = pod.get("spec").unwrap_or(&null);
        // Upstream's `EvaluatePod`: an exempt runtime class first.
        if let Some(rc) = spec.get("runtimeClassName").and_then(Value::as_str)
            && self
                .config
                .exemptions
                .runtime_classes
                .iter()
                .any(|c| c == rc)
        {
            out.annotations.push((EXEMPT.into(), "runtimeClass".into()));
            return Ok(());
        }
        if !modes.errors.is_empty() {
            out.annotations.push((
                ERROR.into(),
                format!("Failed to parse policy: {}", modes.error_text()),
            ));
        }
        let evaluate = |p: Policy| checks::evaluate(p.level, p.version, metadata, spec);
        out.annotations
            .push((ENFORCE_POLICY.into(), modes.enforce.text()));
        let enforced = evaluate(modes.enforce);
        let audited = if modes.audit == modes.enforce {
            enforced.clone()
        } else {
            evaluate(modes.audit)
        };
        if !audited.is_empty() {
            out.annotations.push((
                AUDIT_VIOLATIONS.into(),
                format!(
                    "would violate PodSecurity \"{}\": {}",
                    modes.audit.text(),
                    checks::message(&audited)
                ),
            ));
        }
        if !enforced.is_empty() {
            return Err(ApiError::Forbidden(format!(
                "pods \"{}\" is forbidden: violates PodSecurity \"{}\": {}",
                r.name,
                modes.enforce.text(),
                checks::message(&enforced)
            )));
        }
        let warned = match modes.warn {
            w if w == modes.enforce => enforced,
            w if w == modes.audit => audited,
            w => evaluate(w),
        };
        if !warned.is_empty() {
            out.warnings.push(format!(
                "would violate PodSecurity \"{}\": {}",
                modes.warn.text(),
                checks::message(&warned)
            ));
        }
        Ok(())
    }

    /// A Namespace's create or update (upstream's `ValidateNamespace`): labels that do not
    /// parse are refused when they are new; an exempt namespace given a policy is warned that
    /// it is ignored. A stricter enforce label's check of the namespace's Pods waits
    /// on a list, so it runs among the waiting plugins (`dry_run`).
    fn namespace(
        &self,
        r: &Request<'_>,
        objects: &Objects<'_>,
        out: &mut Outcome,
    ) -> Result<(), ApiError> {
        if !r.subresource.is_empty() {
            return Ok(());
        }
        let labels_of = |o: Option<&Value>| o.map(labels_of).unwrap_or_default();
        let labels = labels_of(objects.object()?);
        if !labels.keys().any(|k| k.starts_with(LABEL_PREFIX)) {
            return Ok(());
        }
        let modes = self.modes(&labels);
        let changed = match r.operation {
            Operation::Update => {
                let old = self.modes(&labels_of(objects.old_object()?));
                old.errors.is_empty() || old.errors != modes.errors
            }
            _ => true,
        };
        if !modes.errors.is_empty() && changed {
            let violations: Vec<(String, String)> = modes
                .errors
                .iter()
                .map(|e| match e.split_once(": ") {
                    Some((field, detail)) => (field.to_string(), detail.to_string()),
                    None => (String::new(), e.clone()),
                })
                .collect();
            return Err(ApiError::invalid("Namespace", r.name, violations));
        }
        if self.exempt_namespace(r.name)
            && !modes.fully_privileged()
            && modes != self.modes(&BTreeMap::new())
        {
            let mut set = Vec::new();
            for (mode, p) in [
                ("enforce", modes.enforce),
                ("audit", modes.audit),
                ("warn", modes.warn),
            ] {
                let labelled = labels.contains_key(&format!("{LABEL_PREFIX}{mode}"))
                    || labels.contains_key(&format!("{LABEL_PREFIX}{mode}-version"));
                if p.level != Level::Privileged && labelled {
                    set.push(format!("{mode}={}", p.text()));
                }
            }
            out.warnings.push(format!(
                "namespace {:?} is exempt from Pod Security, and the policy ({}) will be ignored",
                r.name,
                set.join(", ")
            ));
        }
        Ok(())
    }
}

impl Plugin for PodSecurity {
    fn name(&self) -> &'static str {
        "PodSecurity"
    }

    fn interested(&self, r: &Request<'_>) -> bool {
        r.group.is_empty()
            && r.operation != Operation::Delete
            && match r.resource {
                "pods" => !r.namespace.is_empty(),
                "namespaces" => true,
                _ => false,
            }
    }

    fn validate(
        &self,
        r: &Request<'_>,
        objects: &Objects<'_>,
        outcome: &mut Outcome,
    ) -> Result<(), ApiError> {
        match r.resource {
            "pods" => self.pod(r, objects, outcome),
            _ => self.namespace(r, objects, outcome),
        }
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
#[path = "plugin_tests.rs"]
mod tests;
