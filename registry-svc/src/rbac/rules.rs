//! What one RBAC rule allows, and what a set of rules covers: upstream's
//! `rbac/v1/evaluation_helpers.go` (`RuleAllows`, `VerbMatches`, `ResourceMatches`, ...),
//! `validation.Covers` (`policy_comparator.go`: the escalation check), the aggregation
//! controller's label-selector matching, and the compact form refusals print a rule in.

use std::collections::BTreeMap;

use kubestore_proto::{meta::v1::LabelSelector, rbac::v1::PolicyRule};

use crate::authz::{Attributes, ResourceAttributes};

const ALL: &str = "*";

fn has(list: &[String], want: &str) -> bool {
    list.iter().any(|x| x == ALL || x == want)
}

/// Whether `rule` allows `attrs` (upstream's `RuleAllows`).
pub fn allows(rule: &PolicyRule, attrs: &Attributes) -> bool {
    match attrs {
        Attributes::Resource(a) => {
            has(&rule.verbs, &a.verb)
                && has(&rule.api_groups, &a.group)
                && resource_matches(rule, a)
                && (rule.resource_names.is_empty() || rule.resource_names.contains(&a.name))
        }
        Attributes::NonResource { verb, path } => {
            has(&rule.verbs, verb) && non_resource_url_matches(&rule.non_resource_urls, path)
        }
    }
}

/// `resources` holds `*`, the resource (`pods`, or `pods/status` for a subresource), or
/// `*/status` for any resource's status (upstream's `ResourceMatches`).
fn resource_matches(rule: &PolicyRule, a: &ResourceAttributes) -> bool {
    let combined = if a.subresource.is_empty() {
        a.resource.clone()
    } else {
        format!("{}/{}", a.resource, a.subresource)
    };
    rule.resources.iter().any(|r| {
        r == ALL
            || *r == combined
            || (!a.subresource.is_empty() && r.strip_prefix("*/") == Some(a.subresource.as_str()))
    })
}

/// A path matches `*`, itself, or a `prefix*` it starts with.
fn non_resource_url_matches(urls: &[String], path: &str) -> bool {
    urls.iter().any(|u| {
        u == ALL
            || u == path
            || u.strip_suffix('*')
                .is_some_and(|prefix| path.starts_with(prefix))
    })
}

/// Whether `owner`'s rules grant everything `requested` does (upstream's `Covers`: each
/// requested rule, broken into single verb/group/resource/name rules, is allowed by some owner
/// rule). The rules not covered are returned, each as one broken-down rule.
pub fn uncovered(owner: &[PolicyRule], requested: &[PolicyRule]) -> Vec<PolicyRule> {
    let mut missing = Vec::new();
    for rule in requested {
        for sub in breakdown(rule) {
            if !owner.iter().any(|o| covers_one(o, &sub)) {
                missing.push(sub);
            }
        }
    }
    missing
}

/// `rule` as rules of one verb, group, resource and name each (upstream's `BreakdownRule`).
fn breakdown(rule: &PolicyRule) -> Vec<PolicyRule> {
    let one = |v: &str| vec![v.to_string()];
    let mut out = Vec::new();
    for group in &rule.api_groups {
        for resource in &rule.resources {
            if rule.resource_names.is_empty() {
                for verb in &rule.verbs {
                    out.push(PolicyRule {
                        api_groups: one(group),
                        resources: one(resource),
                        verbs: one(verb),
                        ..Default::default()
                    });
                }
            }
            for name in &rule.resource_names {
                for verb in &rule.verbs {
                    out.push(PolicyRule {
                        api_groups: one(group),
                        resources: one(resource),
                        verbs: one(verb),
                        resource_names: one(name),
                        ..Default::default()
                    });
                }
            }
        }
    }
    // Non-resource URLs are their own rules.
    for url in &rule.non_resource_urls {
        for verb in &rule.verbs {
            out.push(PolicyRule {
                verbs: one(verb),
                non_resource_urls: one(url),
                ..Default::default()
            });
        }
    }
    out
}

/// Whether `owner` covers `sub`, a broken-down rule (upstream's `ruleCovers`).
fn covers_one(owner: &PolicyRule, sub: &PolicyRule) -> bool {
    let all_in = |have: &[String], want: &[String]| {
        have.iter().any(|h| h == ALL) || want.iter().all(|w| have.contains(w))
    };
    let resources_covered = sub.resources.iter().all(|want| {
        owner.resources.iter().any(|have| {
            have == ALL
                || have == want
                // `*/status` covers any resource's status.
                || have.strip_prefix("*/").is_some_and(|sub_have| {
                    want.split_once('/').is_some_and(|(_, s)| s == sub_have)
                })
        })
    });
    let urls_covered = sub.non_resource_urls.iter().all(|want| {
        owner.non_resource_urls.iter().any(|have| {
            have == ALL
                || have == want
                || have
                    .strip_suffix('*')
                    .is_some_and(|prefix| want.starts_with(prefix))
        })
    });
    all_in(&owner.verbs, &sub.verbs)
        && all_in(&owner.api_groups, &sub.api_groups)
        && resources_covered
        && urls_covered
        && (owner.resource_names.is_empty()
            || sub
                .resource_names
                .iter()
                .all(|n| owner.resource_names.contains(n))
                && !sub.resource_names.is_empty())
}

/// A rule as upstream prints it in refusals (`CompactString`, Go's `%q` of each list):
/// `{APIGroups:["apps"], Resources:["deployments"], Verbs:["get" "list"]}`.
pub fn compact(rule: &PolicyRule) -> String {
    let list = |name: &str, v: &[String]| {
        (!v.is_empty()).then(|| {
            let quoted: Vec<String> = v.iter().map(|s| format!("{s:?}")).collect();
            format!("{name}:[{}]", quoted.join(" "))
        })
    };
    let parts: Vec<String> = [
        list("APIGroups", &rule.api_groups),
        list("Resources", &rule.resources),
        list("NonResourceURLs", &rule.non_resource_urls),
        list("ResourceNames", &rule.resource_names),
        list("Verbs", &rule.verbs),
    ]
    .into_iter()
    .flatten()
    .collect();
    format!("{{{}}}", parts.join(", "))
}

/// Upstream's `CompactRules`: rules of one group and one resource (no names) merged, their
/// verbs together in order; others as they are.
pub fn compacted(rules: Vec<PolicyRule>) -> Vec<PolicyRule> {
    let mut out: Vec<PolicyRule> = Vec::new();
    for rule in rules {
        let simple = rule.resource_names.is_empty()
            && rule.non_resource_urls.is_empty()
            && rule.api_groups.len() == 1
            && rule.resources.len() == 1;
        let same = simple
            .then(|| {
                out.iter_mut().find(|o| {
                    o.resource_names.is_empty()
                        && o.non_resource_urls.is_empty()
                        && o.api_groups == rule.api_groups
                        && o.resources == rule.resources
                })
            })
            .flatten();
        match same {
            Some(o) => {
                for v in rule.verbs {
                    if !o.verbs.contains(&v) {
                        o.verbs.push(v);
                    }
                }
            }
            None => out.push(rule),
        }
    }
    out
}

/// Whether `labels` match `selector` (`metav1.LabelSelectorAsSelector`): every matchLabels
/// pair, and every expression (In, NotIn, Exists, DoesNotExist). An empty selector matches
/// everything.
pub fn selects(selector: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    selector
        .match_labels
        .iter()
        .all(|(k, v)| labels.get(k) == Some(v))
        && selector.match_expressions.iter().all(|e| {
            let value = labels.get(&e.key);
            match e.operator.as_str() {
                "In" => value.is_some_and(|v| e.values.contains(v)),
                "NotIn" => value.is_none_or(|v| !e.values.contains(v)),
                "Exists" => value.is_some(),
                "DoesNotExist" => value.is_none(),
                _ => false,
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(verbs: &[&str], groups: &[&str], resources: &[&str], names: &[&str]) -> PolicyRule {
        let v = |x: &[&str]| x.iter().map(|s| s.to_string()).collect();
        PolicyRule {
            verbs: v(verbs),
            api_groups: v(groups),
            resources: v(resources),
            resource_names: v(names),
            non_resource_urls: Vec::new(),
        }
    }

    fn res(verb: &str, group: &str, resource: &str, sub: &str, name: &str) -> Attributes {
        Attributes::Resource(
            ResourceAttributes::new(verb, group, "v1", resource)
                .subresource(sub)
                .at("ns", name),
        )
    }

    #[test]
    fn rules_allow_as_upstreams_evaluation_helpers() {
        let pods = rule(&["get", "list"], &[""], &["pods"], &[]);
        assert!(allows(&pods, &res("get", "", "pods", "", "x")));
        assert!(!allows(&pods, &res("watch", "", "pods", "", "x")));
        assert!(!allows(&pods, &res("get", "apps", "pods", "", "x")));
        assert!(
            !allows(&pods, &res("get", "", "pods", "status", "x")),
            "a subresource is its own resource"
        );
        let status = rule(&["*"], &["*"], &["*/status"], &[]);
        assert!(allows(&status, &res("update", "", "pods", "status", "x")));
        assert!(!allows(&status, &res("update", "", "pods", "", "x")));
        let named = rule(&["get"], &[""], &["secrets"], &["one"]);
        assert!(allows(&named, &res("get", "", "secrets", "", "one")));
        assert!(!allows(&named, &res("get", "", "secrets", "", "two")));
        assert!(!allows(&named, &res("list", "", "secrets", "", "")));
        let urls = PolicyRule {
            verbs: vec!["get".into()],
            non_resource_urls: vec!["/healthz".into(), "/apis/*".into()],
            ..Default::default()
        };
        let path = |p: &str| Attributes::NonResource {
            verb: "get".into(),
            path: p.into(),
        };
        assert!(allows(&urls, &path("/healthz")));
        assert!(allows(&urls, &path("/apis/apps/v1")));
        assert!(!allows(&urls, &path("/api")));
        assert!(
            !allows(&urls, &res("get", "", "pods", "", "")),
            "URL rules grant no resource"
        );
    }

    #[test]
    fn covers_as_upstreams_policy_comparator() {
        let admin = vec![rule(&["*"], &["*"], &["*"], &[])];
        let want = vec![rule(
            &["get", "list"],
            &["", "apps"],
            &["pods", "deployments"],
            &[],
        )];
        assert!(uncovered(&admin, &want).is_empty());
        let reader = vec![rule(&["get"], &[""], &["pods"], &[])];
        let missing = uncovered(&reader, &[rule(&["get", "delete"], &[""], &["pods"], &[])]);
        assert_eq!(
            missing.iter().map(compact).collect::<Vec<_>>(),
            ["{APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"delete\"]}"]
        );
        let two = uncovered(&[], &[rule(&["get", "list"], &[""], &["pods"], &[])]);
        assert_eq!(
            compacted(two).iter().map(compact).collect::<Vec<_>>(),
            ["{APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"get\" \"list\"]}"]
        );
        // A name-limited owner covers only those names.
        let one = vec![rule(&["get"], &[""], &["secrets"], &["one"])];
        assert!(uncovered(&one, &[rule(&["get"], &[""], &["secrets"], &["one"])]).is_empty());
        assert_eq!(
            uncovered(&one, &[rule(&["get"], &[""], &["secrets"], &[])]).len(),
            1
        );
        let status = vec![rule(&["update"], &[""], &["*/status"], &[])];
        assert!(uncovered(&status, &[rule(&["update"], &[""], &["pods/status"], &[])]).is_empty());
    }

    #[test]
    fn selectors_match_labels() {
        let labels: BTreeMap<String, String> = [(
            "rbac.authorization.k8s.io/aggregate-to-view".into(),
            "true".into(),
        )]
        .into();
        let mut s = LabelSelector::default();
        assert!(selects(&s, &labels));
        s.match_labels.insert(
            "rbac.authorization.k8s.io/aggregate-to-view".into(),
            "true".into(),
        );
        assert!(selects(&s, &labels));
        s.match_labels.insert("other".into(), "x".into());
        assert!(!selects(&s, &labels));
    }
}
