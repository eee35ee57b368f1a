//! Why a Terminating namespace is still there, in its `status.conditions`, as upstream's
//! namespace controller writes them (`deletion/status_condition_utils.go`): after each pass over
//! its content, five conditions, each `True` with what is wrong or `False` with upstream's "all
//! is well" words:
//!
//! | type | `True` (reason: message) | `False` reason |
//! |---|---|---|
//! | `NamespaceDeletionDiscoveryFailure` | `DiscoveryFailed`: which groups failed | `ResourcesDiscovered` |
//! | `NamespaceDeletionGroupVersionParsingFailure` | (never: discovery's versions always parse) | `ParsedGroupVersions` |
//! | `NamespaceDeletionContentFailure` | `ContentDeletionFailed`: the deletes that failed | `ContentDeleted` |
//! | `NamespaceContentRemaining` | `SomeResourcesRemain`: `configmaps. has 2 resource instances` | `ContentRemoved` |
//! | `NamespaceFinalizersRemaining` | `SomeFinalizersRemain`: `example.com/f in 1 resource instances` | `ContentHasNoFinalizers` |
//!
//! A condition whose status, reason and message did not change keeps its
//! `lastTransitionTime`.

use std::collections::BTreeMap;

use serde_json::{Value, json};

/// The condition types, in upstream's order.
const TYPES: [&str; 5] = [
    "NamespaceDeletionDiscoveryFailure",
    "NamespaceDeletionGroupVersionParsingFailure",
    "NamespaceDeletionContentFailure",
    "NamespaceContentRemaining",
    "NamespaceFinalizersRemaining",
];

/// Upstream's reason and message of a condition type that reports nothing wrong.
fn ok(kind: &str) -> (&'static str, &'static str) {
    match kind {
        "NamespaceDeletionDiscoveryFailure" => (
            "ResourcesDiscovered",
            "All resources successfully discovered",
        ),
        "NamespaceDeletionGroupVersionParsingFailure" => (
            "ParsedGroupVersions",
            "All legacy kube types successfully parsed",
        ),
        "NamespaceDeletionContentFailure" => (
            "ContentDeleted",
            "All content successfully deleted, may be waiting on finalization",
        ),
        "NamespaceContentRemaining" => ("ContentRemoved", "All content successfully removed"),
        _ => (
            "ContentHasNoFinalizers",
            "All content-preserving finalizers finished",
        ),
    }
}

/// What one pass over a namespace's content found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Totals {
    /// Groups whose discovery failed, with why.
    pub discovery_failures: Vec<String>,
    /// Deletions that failed (`configmaps: why`).
    pub deletion_failures: Vec<String>,
    /// Objects left, by `resource.group` (`configmaps.` for the core group, as upstream).
    pub remaining: BTreeMap<String, usize>,
    /// Objects left holding each finalizer.
    pub finalizers: BTreeMap<String, usize>,
}

impl Totals {
    /// Counts one object left of `resource.group`, with its finalizers.
    pub fn remaining(&mut self, resource: &str, finalizers: &[String]) {
        *self.remaining.entry(resource.to_string()).or_default() += 1;
        for f in finalizers {
            *self.finalizers.entry(f.clone()).or_default() += 1;
        }
    }

    /// The conditions upstream reports for these totals (the problems only).
    fn problems(&self) -> BTreeMap<&'static str, (&'static str, String)> {
        let mut p = BTreeMap::new();
        if !self.discovery_failures.is_empty() {
            p.insert(
                TYPES[0],
                (
                    "DiscoveryFailed",
                    format!(
                        "Discovery failed for some groups, {} failing: {}",
                        self.discovery_failures.len(),
                        self.discovery_failures.join(", ")
                    ),
                ),
            );
        }
        if !self.deletion_failures.is_empty() {
            p.insert(
                TYPES[2],
                (
                    "ContentDeletionFailed",
                    format!(
                        "Failed to delete all resource types, {} remaining: {}",
                        self.deletion_failures.len(),
                        self.deletion_failures.join(", ")
                    ),
                ),
            );
        }
        let remaining: Vec<String> = self
            .remaining
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(r, n)| format!("{r} has {n} resource instances"))
            .collect();
        if !remaining.is_empty() {
            p.insert(
                TYPES[3],
                (
                    "SomeResourcesRemain",
                    format!("Some resources are remaining: {}", remaining.join(", ")),
                ),
            );
        }
        let finalizers: Vec<String> = self
            .finalizers
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(f, n)| format!("{f} in {n} resource instances"))
            .collect();
        if !finalizers.is_empty() {
            p.insert(
                TYPES[4],
                (
                    "SomeFinalizersRemain",
                    format!(
                        "Some content in the namespace has finalizers remaining: {}",
                        finalizers.join(", ")
                    ),
                ),
            );
        }
        p
    }
}

/// The namespace's conditions after a pass that found `totals`, from the conditions it had
/// (`old`, `status.conditions`), at `now` (an RFC 3339 time): upstream's `Update`.
pub fn conditions(old: &[Value], totals: &Totals, now: &str) -> Vec<Value> {
    let problems = totals.problems();
    TYPES
        .iter()
        .map(|kind| {
            let (status, reason, message) = match problems.get(kind) {
                Some((reason, message)) => ("True", *reason, message.clone()),
                None => {
                    let (reason, message) = ok(kind);
                    ("False", reason, message.to_string())
                }
            };
            let same = old.iter().find(|c| {
                c.get("type").and_then(Value::as_str) == Some(kind)
                    && c.get("status").and_then(Value::as_str) == Some(status)
                    && c.get("reason").and_then(Value::as_str) == Some(reason)
                    && c.get("message").and_then(Value::as_str) == Some(message.as_str())
            });
            match same {
                Some(c) => c.clone(),
                None => json!({"type": kind, "status": status, "lastTransitionTime": now,
                               "reason": reason, "message": message}),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_namespace_with_content_left_says_what_and_why() {
        let mut t = Totals::default();
        t.remaining("configmaps.", &["example.com/keep".to_string()]);
        t.remaining("configmaps.", &[]);
        t.remaining(
            "crontabs.stable.example.com",
            &["example.com/keep".to_string()],
        );
        let c = conditions(&[], &t, "2026-01-01T00:00:00Z");
        let by = |k: &str| {
            c.iter()
                .find(|c| c["type"] == k)
                .expect("a condition")
                .clone()
        };
        assert_eq!(
            by("NamespaceContentRemaining"),
            json!({"type": "NamespaceContentRemaining", "status": "True",
                   "lastTransitionTime": "2026-01-01T00:00:00Z", "reason": "SomeResourcesRemain",
                   "message": "Some resources are remaining: configmaps. has 2 resource instances, crontabs.stable.example.com has 1 resource instances"})
        );
        assert_eq!(
            by("NamespaceFinalizersRemaining")["message"],
            "Some content in the namespace has finalizers remaining: example.com/keep in 2 resource instances"
        );
        assert_eq!(by("NamespaceDeletionContentFailure")["status"], "False");
        assert_eq!(
            by("NamespaceDeletionDiscoveryFailure")["reason"],
            "ResourcesDiscovered"
        );
        assert_eq!(c.len(), 5);
    }

    /// Unchanged conditions keep their transition time; changed ones take the new one.
    #[test]
    fn transition_times_move_only_with_the_condition() {
        let mut t = Totals::default();
        t.remaining("configmaps.", &[]);
        let first = conditions(&[], &t, "2026-01-01T00:00:00Z");
        let again = conditions(&first, &t, "2026-01-01T00:01:00Z");
        assert_eq!(first, again);
        let done = conditions(&again, &Totals::default(), "2026-01-01T00:02:00Z");
        let remaining = done
            .iter()
            .find(|c| c["type"] == "NamespaceContentRemaining")
            .expect("a condition");
        assert_eq!(remaining["status"], "False");
        assert_eq!(remaining["message"], "All content successfully removed");
        assert_eq!(remaining["lastTransitionTime"], "2026-01-01T00:02:00Z");
        let parsing = done
            .iter()
            .find(|c| c["type"] == "NamespaceDeletionGroupVersionParsingFailure")
            .expect("a condition");
        assert_eq!(parsing["lastTransitionTime"], "2026-01-01T00:00:00Z");
    }

    #[test]
    fn failed_deletions_and_discovery_are_reported() {
        let t = Totals {
            discovery_failures: vec!["metrics.k8s.io/v1beta1: unavailable".into()],
            deletion_failures: vec!["pods: storage unavailable".into()],
            ..Default::default()
        };
        let c = conditions(&[], &t, "2026-01-01T00:00:00Z");
        assert_eq!(
            c[0]["message"],
            "Discovery failed for some groups, 1 failing: metrics.k8s.io/v1beta1: unavailable"
        );
        assert_eq!(
            c[2]["message"],
            "Failed to delete all resource types, 1 remaining: pods: storage unavailable"
        );
    }
}
