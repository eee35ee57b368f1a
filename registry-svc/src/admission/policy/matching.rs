//! Which writes a ValidatingAdmissionPolicy's `matchConstraints` and a binding's
//! `matchResources` select: upstream's `policy/matching/matching.go` (`Matcher.Matches`) and the
//! webhook predicates it is built on, `predicates/rules/rules.go` (one rule against the request's
//! operation, group, version, resource and scope), `predicates/namespace/matcher.go` and
//! `predicates/object/matcher.go` (the label selectors). The policy and its bindings share this
//! one reading of the rules.
//!
//! Matching decides from what the caller already holds ([`Target`]): the request's attributes,
//! the namespace's labels (`admission::namespaces`) and the objects' labels, so it never reads
//! storage, and a namespace with no Namespace object has no labels where upstream answers 404.
//!
//! Selectors are read as stored, that is defaulted (`kinds::admission_policy`): an unset one,
//! which upstream refuses, matches everything here, as the `{}` defaulting puts there. A selector
//! upstream cannot parse fails the request upstream when the rules match; here it matches
//! nothing (validation refuses it when the policy is written).
//!
//! Only `matchPolicy: Exact` is implemented (a deviation): `Equivalent`, the default, would also
//! match a write made through another group or version of the same resource, and kubestore
//! serves each resource in one version except Event (`v1` and `events.k8s.io/v1`).

use std::collections::BTreeMap;

use kubestore_proto::{
    admissionregistration::v1::{MatchResources, NamedRuleWithOperations},
    meta::v1::LabelSelector,
};

use crate::{
    admission::{Operation, Request},
    rbac::rules::selects,
};

const ALL: &str = "*";

/// What matching needs beyond the request's attributes.
#[derive(Debug, Clone, Copy)]
pub struct Target<'a> {
    /// The write.
    pub request: &'a Request<'a>,
    /// Whether the resource is namespaced (a rule's `scope` decides on it).
    pub namespaced: bool,
    /// The labels of the request's namespace (empty for cluster-scoped requests).
    pub namespace_labels: &'a BTreeMap<String, String>,
    /// Labels of the object to be stored (None on delete).
    pub object_labels: Option<&'a BTreeMap<String, String>>,
    /// Labels of the object it replaces (None on create).
    pub old_object_labels: Option<&'a BTreeMap<String, String>>,
}

impl Target<'_> {
    /// Whether the write is to a Namespace (or one of its subresources): cluster-scoped, yet
    /// namespace selectors and `Cluster` rules apply to it as upstream's `namespaceResource`.
    fn on_namespace(&self) -> bool {
        self.request.group.is_empty() && self.request.resource == "namespaces"
    }
}

/// Whether `constraints` match `target` (upstream's `Matcher.Matches` for a policy's
/// matchConstraints or a binding's matchResources): the namespace selector, the object
/// selector, no excludeResourceRule, and a resourceRule (none listed matches every resource).
pub fn matches(constraints: &MatchResources, target: &Target<'_>) -> bool {
    namespace_selected(constraints.namespace_selector.as_ref(), target)
        && object_selected(constraints.object_selector.as_ref(), target)
        && !constraints
            .exclude_resource_rules
            .iter()
            .any(|r| rule_matches(r, target))
        && (constraints.resource_rules.is_empty()
            || constraints
                .resource_rules
                .iter()
                .any(|r| rule_matches(r, target)))
}

/// Whether one of `rules` matches `request` on its attributes alone (before any object is in
/// JSON, so selectors are not asked): what decides whether a policy or webhook may want a
/// write at all.
pub fn any_rule_matches(rules: &[NamedRuleWithOperations], request: &Request<'_>) -> bool {
    let empty = BTreeMap::new();
    let target = Target {
        request,
        namespaced: !request.namespace.is_empty(),
        namespace_labels: &empty,
        object_labels: None,
        old_object_labels: None,
    };
    rules.iter().any(|r| rule_matches(r, &target))
}

/// One rule against the request (upstream's `rules.Matcher.Matches`, then the rule's
/// resourceNames as `matchesResourceRules` reads them): an empty list of operations, groups,
/// versions or resources matches nothing, `*` anything; `pods/*` is pods and its subresources,
/// `*/status` every status. No resourceNames matches every name, otherwise the request's name
/// must be listed. Upstream's create attributes carry the name the client sent ("" with
/// `generateName`, so such a create matches no named rule), kubestore's the generated one:
/// both leave a generated name unmatchable in practice.
pub fn rule_matches(rule: &NamedRuleWithOperations, target: &Target<'_>) -> bool {
    let r = target.request;
    scope_matches(rule.scope.as_deref(), target)
        && listed(&rule.operations, r.operation.as_str())
        && listed(&rule.api_groups, r.group)
        && listed(&rule.api_versions, r.version)
        && rule
            .resources
            .iter()
            .any(|p| resource_matches(p, r.resource, r.subresource))
        && (rule.resource_names.is_empty() || rule.resource_names.iter().any(|n| n == r.name))
}

fn listed(list: &[String], want: &str) -> bool {
    list.iter().any(|x| x == ALL || x == want)
}

/// `pattern` is `resource` or `resource/subresource`, either part possibly `*`.
fn resource_matches(pattern: &str, resource: &str, subresource: &str) -> bool {
    let (res, sub) = pattern.split_once('/').unwrap_or((pattern, ""));
    (res == ALL || res == resource) && (sub == ALL || sub == subresource)
}

/// A rule's scope: unset or `*` is any; a Namespace counts as cluster-scoped.
fn scope_matches(scope: Option<&str>, target: &Target<'_>) -> bool {
    match scope {
        None | Some(ALL) => true,
        Some("Namespaced") => target.namespaced && !target.on_namespace(),
        Some("Cluster") => !target.namespaced || target.on_namespace(),
        Some(_) => false,
    }
}

/// Upstream's `MatchNamespaceSelector`: a cluster-scoped write other than to a Namespace is
/// never exempted; a write to a Namespace is judged by that Namespace's own labels (the new
/// ones on create and update, the stored ones on delete and subresources, as upstream reads its
/// lister then); any other by its namespace's.
fn namespace_selected(selector: Option<&LabelSelector>, target: &Target<'_>) -> bool {
    let Some(selector) = selector else {
        return true;
    };
    if !target.namespaced && !target.on_namespace() {
        return true;
    }
    let labels = if target.on_namespace() {
        let own = match target.request.operation {
            Operation::Create | Operation::Update if target.request.subresource.is_empty() => {
                target.object_labels
            }
            _ => target.old_object_labels,
        };
        own.unwrap_or(target.namespace_labels)
    } else {
        target.namespace_labels
    };
    well_formed(selector) && selects(selector, labels)
}

/// Upstream's `MatchObjectSelector`: an empty selector matches every write, another one a write
/// whose new or old object it matches (a missing object matches nothing).
fn object_selected(selector: Option<&LabelSelector>, target: &Target<'_>) -> bool {
    let Some(selector) = selector else {
        return true;
    };
    if selector.match_labels.is_empty() && selector.match_expressions.is_empty() {
        return true;
    }
    well_formed(selector)
        && [target.object_labels, target.old_object_labels]
            .into_iter()
            .flatten()
            .any(|labels| selects(selector, labels))
}

/// Whether `LabelSelectorAsSelector` takes `selector`'s expressions: In and NotIn with values,
/// Exists and DoesNotExist without, no other operator (keys and values are validated when the
/// policy is written).
fn well_formed(selector: &LabelSelector) -> bool {
    selector
        .match_expressions
        .iter()
        .all(|e| match e.operator.as_str() {
            "In" | "NotIn" => !e.values.is_empty(),
            "Exists" | "DoesNotExist" => e.values.is_empty(),
            _ => false,
        })
}

#[cfg(test)]
mod tests {
    use std::sync::LazyLock;

    use kubestore_proto::meta::v1::LabelSelectorRequirement;

    use super::*;
    use crate::{
        admission::Operation::{Create, Delete, Update},
        authn::UserInfo,
    };

    type Labels = BTreeMap<String, String>;

    static USER: LazyLock<UserInfo> = LazyLock::new(UserInfo::default);
    static NO_LABELS: Labels = BTreeMap::new();

    fn strings(x: &[&str]) -> Vec<String> {
        x.iter().map(|s| s.to_string()).collect()
    }

    fn labels(level: &str) -> Labels {
        [("runlevel".to_string(), level.to_string())].into()
    }

    /// Upstream's `a` (and `namespacedAttributes`): a create of `name` in namespace `ns`, of
    /// `group/version/resource[/subresource]`.
    fn a(gvr: &'static str) -> Request<'static> {
        let mut parts = gvr.split('/');
        let mut next = || parts.next().unwrap_or_default();
        Request {
            operation: Create,
            group: next(),
            version: next(),
            resource: next(),
            subresource: next(),
            kind: "k",
            namespace: "ns",
            name: "name",
            dry_run: false,
            user: &USER,
            gate: None,
        }
    }

    fn with(operation: Operation, r: Request<'static>) -> Request<'static> {
        Request { operation, ..r }
    }

    /// Upstream's `clusterScopedAttributes`.
    fn cluster(r: Request<'static>) -> Request<'static> {
        Request { namespace: "", ..r }
    }

    fn target<'a>(r: &'a Request<'a>) -> Target<'a> {
        Target {
            request: r,
            namespaced: !r.namespace.is_empty(),
            namespace_labels: &NO_LABELS,
            object_labels: None,
            old_object_labels: None,
        }
    }

    /// A rule matching every write, narrowed by `narrow`.
    fn rule(narrow: impl FnOnce(&mut NamedRuleWithOperations)) -> NamedRuleWithOperations {
        let mut r = NamedRuleWithOperations {
            resource_names: Vec::new(),
            operations: strings(&[ALL]),
            api_groups: strings(&[ALL]),
            api_versions: strings(&[ALL]),
            resources: strings(&["*/*"]),
            scope: None,
        };
        narrow(&mut r);
        r
    }

    /// A rule for `group/version/resource` only.
    fn only(gvr: &str) -> NamedRuleWithOperations {
        let p: Vec<&str> = gvr.split('/').collect();
        rule(|r| {
            r.api_groups = strings(&p[..1]);
            r.api_versions = strings(&p[1..2]);
            r.resources = strings(&p[2..]);
        })
    }

    /// A target with objects labeled `new` and `old`.
    fn objects<'a>(
        r: &'a Request<'a>,
        new: Option<&'a Labels>,
        old: Option<&'a Labels>,
    ) -> Target<'a> {
        Target {
            object_labels: new,
            old_object_labels: old,
            ..target(r)
        }
    }

    #[track_caller]
    fn check(rule: &NamedRuleWithOperations, yes: &[Request<'_>], no: &[Request<'_>]) {
        for r in yes {
            assert!(rule_matches(rule, &target(r)), "should match {r:?}");
        }
        for r in no {
            assert!(!rule_matches(rule, &target(r)), "should not match {r:?}");
        }
    }

    #[test]
    fn test_group() {
        let groups = |g: &[&str]| rule(|r| r.api_groups = strings(g));
        check(&groups(&["*"]), &[a("g/v/r")], &[]);
        let (yes, no) = ([a("g1/v/r"), a("g2/v2/r3")], [a("g3/v/r"), a("g4/v/r")]);
        check(&groups(&["g1", "g2"]), &yes, &no);
        check(&groups(&[]), &[], &yes);
    }

    #[test]
    fn test_version() {
        let versions = |v: &[&str]| rule(|r| r.api_versions = strings(v));
        check(&versions(&["*"]), &[a("g/v/r")], &[]);
        let (yes, no) = ([a("g1/v1/r"), a("g2/v2/r")], [a("g1/v3/r"), a("g2/v4/r")]);
        check(&versions(&["v1", "v2"]), &yes, &no);
        check(&versions(&[]), &[], &yes);
    }

    #[test]
    fn test_operation() {
        // Upstream's CONNECT requests have no kubestore counterpart.
        let ops = |o: &[&str]| rule(|r| r.operations = strings(o));
        let [c, u, d] = [Create, Update, Delete].map(|op| with(op, a("g/v/r")));
        check(&ops(&["*"]), &[c, u, d], &[]);
        check(&ops(&["CREATE"]), &[c], &[u, d]);
        check(&ops(&["UPDATE"]), &[u], &[c, d]);
        check(&ops(&["DELETE"]), &[d], &[c, u]);
        check(&ops(&["CONNECT"]), &[], &[c, u, d]);
        check(&ops(&["UPDATE", "DELETE"]), &[u, d], &[c]);
        check(&ops(&[]), &[], &[c, u, d]);
    }

    #[test]
    fn test_resource() {
        let res = |x: &[&str]| rule(|r| r.resources = strings(x));
        let [r, r_exec, r2, r2_proxy] = ["g/v/r", "g/v/r/exec", "2/v/r2", "2/v/r2/proxy"].map(a);
        let [r3_proxy, r4_scale] = ["2/v/r3/proxy", "2/v/r4/scale"].map(a);
        check(&res(&["*"]), &[r, r2], &[r_exec, r2_proxy]);
        check(&res(&["r/*"]), &[r, r_exec], &[r2, r2_proxy]);
        check(&res(&["r/*", "r2"]), &[r, r_exec, r2], &[r2_proxy]);
        let (yes, no) = ([r_exec, r2_proxy, r3_proxy], [r, r2, r4_scale]);
        check(&res(&["*/proxy", "*/exec"]), &yes, &no);
        check(&res(&["*/*"]), &[r, r_exec, r2_proxy], &[]);
        check(&res(&[]), &[], &[r, r_exec]);
    }

    #[test]
    fn test_scope() {
        // Rules of `*/*` rather than upstream's `*`: the whole rule is checked, and the cases
        // include subresources.
        let scope = |s: &str| rule(|r| r.scope = Some(s.into()));
        let namespaced = [a("g/v/r"), a("g/v/r/exec")];
        let cl = namespaced.map(cluster);
        let ns = [a("/v1/namespaces"), a("/v1/namespaces/finalize")];
        let namespaces = [ns, ns.map(cluster)].concat();
        check(
            &scope("Cluster"),
            &[&cl[..], &namespaces[..]].concat(),
            &namespaced,
        );
        check(
            &scope("Namespaced"),
            &namespaced,
            &[&cl[..], &namespaces[..]].concat(),
        );
        let all = [&namespaced[..], &cl[..], &namespaces[..]].concat();
        check(&scope("*"), &all, &[]);
        check(&rule(|_| ()), &all, &[]);
        check(&scope("Everywhere"), &[], &all);
    }

    fn constraints(rules: &[NamedRuleWithOperations]) -> MatchResources {
        MatchResources {
            namespace_selector: Some(LabelSelector::default()),
            object_selector: Some(LabelSelector::default()),
            resource_rules: rules.to_vec(),
            exclude_resource_rules: Vec::new(),
            match_policy: None,
        }
    }

    fn expression(operator: &str, values: &[&str]) -> Option<LabelSelector> {
        Some(LabelSelector {
            match_labels: BTreeMap::new(),
            match_expressions: vec![LabelSelectorRequirement {
                key: "runlevel".into(),
                operator: operator.into(),
                values: strings(values),
            }],
        })
    }

    #[test]
    fn test_matcher() {
        let deploy = a("apps/v1/deployments");
        let t = target(&deploy);
        let hit = |c: &MatchResources| matches(c, &t);
        let wildcard = constraints(&[rule(|_| ())]);
        assert!(hit(&wildcard), "wildcard rule, match as requested");
        let exact = constraints(&[
            only("extensions/v1/deployments"),
            only("apps/v1beta1/deployments"),
            only("apps/v1/deployments"),
        ]);
        assert!(hit(&exact), "specific rules, prefer exact match");
        let miss = constraints(&[
            only("extensions/v1beta1/deployments"),
            only("apps/v1beta1/deployments"),
        ]);
        assert!(!hit(&miss), "specific rules, match miss");
        let policy = |p: &str| MatchResources {
            match_policy: Some(p.into()),
            ..miss.clone()
        };
        assert!(!hit(&policy("Exact")), "specific rules, exact match miss");
        // Upstream matches through apps/v1beta1 here; kubestore has no such version.
        assert!(
            !hit(&policy("Equivalent")),
            "specific rules, equivalent match"
        );

        let named = |n: &str| {
            let names = strings(&[n]);
            let r = NamedRuleWithOperations {
                resource_names: names,
                ..only("apps/v1/deployments")
            };
            constraints(&[r])
        };
        assert!(hit(&named("name")), "prefer exact match and name match");
        assert!(
            !hit(&named("wrong-name")),
            "prefer exact match and name match miss"
        );

        let excluding = |gvr: &str| MatchResources {
            exclude_resource_rules: vec![only(gvr)],
            ..wildcard.clone()
        };
        let (other, this) = ("extensions/v1beta1/deployments", "apps/v1/deployments");
        assert!(hit(&excluding(other)), "exclude resource match on miss");
        assert!(!hit(&excluding(this)), "exclude resource miss on match");
        let no_rules = MatchResources {
            resource_rules: Vec::new(),
            ..excluding(other)
        };
        assert!(hit(&no_rules), "treat empty ResourceRules as match");
        let blank = constraints(&[NamedRuleWithOperations::default()]);
        assert!(!hit(&blank), "treat non-empty ResourceRules as no match");

        // Upstream fails such a request; here an unparsable selector matches nothing.
        let bad = expression("Within", &["1"]);
        let bad_ns = MatchResources {
            namespace_selector: bad.clone(),
            ..wildcard.clone()
        };
        assert!(
            !hit(&bad_ns),
            "erroring namespace selector on otherwise matching rule"
        );
        let one = labels("1");
        let t = objects(&deploy, Some(&one), None);
        let bad_object = MatchResources {
            object_selector: bad,
            ..wildcard.clone()
        };
        assert!(!matches(&bad_object, &t), "erroring object selector");
        let no_values = MatchResources {
            object_selector: expression("NotIn", &[]),
            ..wildcard
        };
        assert!(!matches(&no_values, &t), "NotIn without values");
    }

    #[test]
    fn test_get_namespace_labels() {
        let (one, two) = (labels("1"), labels("2"));
        let level = |l: &str| MatchResources {
            namespace_selector: Some(LabelSelector {
                match_labels: labels(l),
                ..Default::default()
            }),
            ..constraints(&[rule(|_| ())])
        };
        let namespace = cluster(a("/v1/namespaces"));
        let [create, update, delete] = [Create, Update, Delete].map(|op| with(op, namespace));
        let t = objects(&create, Some(&two), None);
        assert!(matches(&level("2"), &t), "create: its own labels");
        let t = objects(&update, Some(&two), Some(&one));
        assert!(matches(&level("2"), &t), "update: the new labels");
        assert!(!matches(&level("1"), &t), "update: not the old ones");
        let t = objects(&delete, None, Some(&one));
        assert!(matches(&level("1"), &t), "delete: the stored labels");
        let finalize = with(Update, cluster(a("/v1/namespaces/finalize")));
        let t = objects(&finalize, Some(&two), Some(&one));
        assert!(matches(&level("1"), &t), "finalize: the stored labels");
        let pod = a("/v1/pods");
        let t = Target {
            namespace_labels: &one,
            ..objects(&pod, Some(&two), None)
        };
        assert!(matches(&level("1"), &t), "a pod: its namespace's labels");
        assert!(!matches(&level("2"), &t), "a pod: not its own");
    }

    #[test]
    fn test_not_exempt_cluster_scoped_resource() {
        // With a namespace selector that selects nothing, rather than upstream's empty one.
        let node = cluster(a("/v1/nodes"));
        let c = MatchResources {
            namespace_selector: expression("In", &["1"]),
            ..constraints(&[rule(|_| ())])
        };
        assert!(matches(&c, &target(&node)));
    }

    #[test]
    fn test_object_selector() {
        let (one, two) = (labels("1"), labels("2"));
        let c = MatchResources {
            object_selector: expression("NotIn", &["1"]),
            ..constraints(&[rule(|_| ())])
        };
        let [create, delete] = [Create, Delete].map(|op| with(op, cluster(a("/v1/nodes"))));
        let all = constraints(&[rule(|_| ())]);
        assert!(matches(&all, &target(&create)), "empty object selector");
        let yes = [
            objects(&create, Some(&two), None),
            objects(&delete, None, Some(&two)),
            objects(&create, Some(&one), Some(&two)),
        ];
        for t in yes {
            assert!(matches(&c, &t), "matches new or old object: {t:?}");
        }
        let no = [
            objects(&create, Some(&one), None),
            objects(&create, None, Some(&one)),
            target(&create),
        ];
        for t in no {
            assert!(!matches(&c, &t), "matches neither object: {t:?}");
        }
    }
}
