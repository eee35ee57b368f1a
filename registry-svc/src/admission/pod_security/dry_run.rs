//! A Namespace's enforce label made stricter: the namespace's existing Pods are checked against
//! the new level, and the client is warned about those that violate it (upstream's
//! `ValidateNamespace` on update and `EvaluatePodsInNamespace`). Nothing is refused: the
//! Pods keep running, and the label applies to what is admitted from now on.
//!
//! As upstream: the Pods are checked only when the enforce policy changed to a level that is
//! not privileged and is not a relaxation at the same version, and the namespace is not exempt;
//! at most [`MAX_PODS`] Pods are checked, within [`TIMEOUT`] (or half of what is left of the
//! request's deadline, when less), and a cut short check says how many it checked. Violations
//! are grouped by their reason, each named after the first Pod by name with a count of the
//! others (`p1 (and 2 other pods): allowPrivilegeEscalation != false ...`).
//!
//! The Pods are listed through [`PodLister`] (the Pods' Store, `kinds::pod`): this runs among
//! the validating plugins that wait, never under a lock. Upstream orders the Pods so that one
//! per controller comes first before it cuts the list at its limit; kubestore checks them by
//! name (a cut happens only beyond [`MAX_PODS`]).

use std::{collections::BTreeMap, time::Duration};

use serde_json::Value;

use super::{
    checks::{self, Level},
    plugin::{PodSecurity, Policy},
};
use crate::{
    admission::{Operation, Request, labels_of},
    error::ApiError,
};

/// Most Pods checked (upstream's `namespaceMaxPodsToCheck`).
pub const MAX_PODS: usize = 3000;
/// Longest a check may take (upstream's `namespacePodCheckTimeout`).
pub const TIMEOUT: Duration = Duration::from_secs(1);

/// Where a namespace's Pods come from.
#[tonic::async_trait]
pub trait PodLister: Send + Sync + 'static {
    /// The Pods of `namespace`, at most `limit` of them, and how many there are in all, read
    /// within `timeout`.
    async fn pods(
        &self,
        namespace: &str,
        limit: usize,
        timeout: Duration,
    ) -> Result<(Vec<Value>, usize), ApiError>;
}

fn labels(o: Option<&Value>) -> BTreeMap<String, String> {
    o.map(labels_of).unwrap_or_default()
}

impl PodSecurity {
    /// Whether `r` may need its namespace's Pods checked (a Namespace's update).
    pub fn dry_run_interested(&self, r: &Request<'_>) -> bool {
        r.group.is_empty()
            && r.resource == "namespaces"
            && r.subresource.is_empty()
            && r.operation == Operation::Update
    }

    /// The new enforce policy the namespace's Pods are checked against, when upstream checks
    /// them: it changed, is not privileged, is not the same version relaxed, and the namespace
    /// is not exempt.
    fn stricter(
        &self,
        r: &Request<'_>,
        object: Option<&Value>,
        old: Option<&Value>,
    ) -> Option<Policy> {
        let new = self.modes(&labels(object));
        let old = self.modes(&labels(old));
        let (n, o) = (new.enforce, old.enforce);
        // New or changed labels that do not parse were refused before this (`plugin.rs`);
        // unchanged ones leave enforce at `restricted`, failing closed, as upstream checks it.
        if n == o
            || n.level == Level::Privileged
            || (n.version == o.version && n.level <= o.level)
            || self.exempt_namespace(r.name)
        {
            return None;
        }
        Some(n)
    }

    /// The warnings of a Namespace's update (`object` replacing `old`) that makes its enforce
    /// label stricter (none otherwise), its Pods read through `pods` within `deadline`.
    pub async fn dry_run(
        &self,
        r: &Request<'_>,
        object: Option<&Value>,
        old: Option<&Value>,
        pods: &dyn PodLister,
        deadline: Option<std::time::Instant>,
    ) -> Vec<String> {
        let Some(enforce) = self.stricter(r, object, old) else {
            return Vec::new();
        };
        let timeout = match deadline {
            Some(d) => TIMEOUT.min(d.saturating_duration_since(std::time::Instant::now()) / 2),
            None => TIMEOUT,
        };
        let started = std::time::Instant::now();
        let listed = tokio::time::timeout(timeout, pods.pods(r.name, MAX_PODS, timeout)).await;
        let (mut items, total) = match listed {
            Ok(Ok(listed)) => listed,
            Ok(Err(e)) => {
                tracing::warn!(namespace = %r.name, error = %e, "PodSecurity: listing pods failed");
                return vec![
                    "failed to list pods while checking new PodSecurity enforce level".into(),
                ];
            }
            Err(_) => {
                tracing::warn!(namespace = %r.name, "PodSecurity: listing pods timed out");
                return vec![
                    "failed to list pods while checking new PodSecurity enforce level".into(),
                ];
            }
        };
        items.sort_by(|a, b| name(a).cmp(name(b)));
        warnings(r.name, enforce, &items, total, || {
            started.elapsed() >= timeout
        })
    }
}

fn name(pod: &Value) -> &str {
    pod.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// Upstream's warnings for `pods` (the first of `total`, in order) against `enforce`;
/// `expired` says when time is up (checked after each Pod, as upstream).
fn warnings(
    namespace: &str,
    enforce: Policy,
    pods: &[Value],
    total: usize,
    expired: impl Fn() -> bool,
) -> Vec<String> {
    let null = Value::Null;
    // Per reason: the first Pod by name, and how many Pods have it; reasons in order met.
    let mut reasons: Vec<String> = Vec::new();
    let mut counts: BTreeMap<String, (String, usize)> = BTreeMap::new();
    let mut checked = pods.len().min(MAX_PODS);
    for (i, pod) in pods.iter().take(MAX_PODS).enumerate() {
        let failures = checks::evaluate(
            enforce.level,
            enforce.version,
            pod.get("metadata").unwrap_or(&null),
            pod.get("spec").unwrap_or(&null),
        );
        if !failures.is_empty() {
            let reason = checks::message(&failures);
            let n = name(pod).to_string();
            match counts.get_mut(&reason) {
                Some((first, count)) => {
                    if n < *first {
                        *first = n;
                    }
                    *count += 1;
                }
                None => {
                    reasons.push(reason.clone());
                    counts.insert(reason, (n, 1));
                }
            }
        }
        if expired() {
            checked = i + 1;
            break;
        }
    }
    let mut out = Vec::new();
    if checked < total {
        out.push(format!(
            "new PodSecurity enforce level only checked against the first {checked} of {total} existing pods"
        ));
    }
    if !reasons.is_empty() {
        out.push(format!(
            "existing pods in namespace {namespace:?} violate the new PodSecurity enforce level {:?}",
            enforce.text()
        ));
    }
    let mut decorated: Vec<String> = reasons
        .iter()
        .map(|reason| {
            let (first, count) = &counts[reason];
            match count {
                1 => format!("{first}: {reason}"),
                2 => format!("{first} (and 1 other pod): {reason}"),
                n => format!("{first} (and {} other pods): {reason}", n - 1),
            }
        })
        .collect();
    decorated.sort();
    out.extend(decorated);
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::admission::pod_security::checks::Version;

    fn privileged(name: &str) -> Value {
        json!({"metadata": {"name": name},
               "spec": {"containers": [{"name": "c", "image": "i",
                                        "securityContext": {"privileged": true}}]}})
    }

    fn plain(name: &str) -> Value {
        json!({"metadata": {"name": name},
               "spec": {"containers": [{"name": "c", "image": "i"}]}})
    }

    fn baseline() -> Policy {
        Policy {
            level: Level::Baseline,
            version: Version::Latest,
        }
    }

    #[test]
    fn violations_are_grouped_by_reason_and_named_after_the_first_pod() {
        let pods = vec![
            privileged("b"),
            plain("ok"),
            privileged("a"),
            privileged("c"),
        ];
        let w = warnings("team", baseline(), &pods, 4, || false);
        assert_eq!(
            w,
            vec![
                "existing pods in namespace \"team\" violate the new PodSecurity enforce level \"baseline:latest\"".to_string(),
                "a (and 2 other pods): privileged (container \"c\" must not set securityContext.privileged=true)".to_string(),
            ]
        );
        let w = warnings("team", baseline(), &pods[..2], 2, || false);
        assert_eq!(
            w[1],
            "b: privileged (container \"c\" must not set securityContext.privileged=true)"
        );
        let two = vec![privileged("x"), privileged("y")];
        let w = warnings("team", baseline(), &two, 2, || false);
        assert!(w[1].starts_with("x (and 1 other pod): "), "{w:?}");
    }

    #[test]
    fn conforming_pods_give_no_warning_and_a_cut_check_says_so() {
        let pods = vec![plain("a"), plain("b")];
        assert!(warnings("team", baseline(), &pods, 2, || false).is_empty());
        assert_eq!(
            warnings("team", baseline(), &pods, 5000, || true),
            vec![
                "new PodSecurity enforce level only checked against the first 1 of 5000 existing pods"
            ]
        );
    }
}
