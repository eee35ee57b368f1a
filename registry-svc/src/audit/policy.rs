//! `--audit-policy-file`: upstream's `audit.k8s.io/v1` Policy, which says of every request at
//! which [`Level`] it is audited and which [`Stage`]s of it are left out. It is read as
//! upstream's `audit/policy/reader.go` reads it, validated as `apis/audit/validation` validates
//! it, and evaluated as `audit/policy/checker.go` evaluates it: the rules are ordered, the first
//! whose every set field matches the request decides, and a request no rule matches is not
//! audited (upstream's `DefaultAuditLevel`, `None`). The policy-wide `omitStages` are added to
//! every rule's at load (upstream's `unionStages`), and the policy-wide `omitManagedFields` is
//! the default of the rules that do not set their own.
//!
//! The file is YAML or JSON. Where we differ from upstream, deliberately:
//!
//! - Only `audit.k8s.io/v1` is read. Upstream still reads `v1beta1` and `v1alpha1` with a
//!   deprecation warning; their fields are v1's, so a policy only needs its `apiVersion`
//!   changed, and one version means one set of semantics to test.
//! - Unknown fields are refused (upstream's decoder is not strict and drops them): a misspelt
//!   field (`nonResourceURL`, `usergroups`) would otherwise widen a rule without a word, and
//!   an audit policy that silently audits less than its author meant is the worst kind.
//! - The policy-wide `omitStages` are validated as the rules' are (upstream validates only the
//!   rules' and keeps a misspelt policy-wide stage as a stage that never occurs).
//! - An error in a `resources` entry names its index (`rules[0].resources[1].group`; upstream
//!   writes `rules[0].resources.group`).
//! - Stage lists come in the stages' own order with no repeats (upstream's union goes through
//!   a Go map, in any order), so decisions compare equal.

use serde::{Deserialize, Deserializer};
use serde_json::Value;

use crate::{
    authn::UserInfo,
    authz::{Attributes, ResourceAttributes},
};

/// The only `apiVersion` read (see the module's doc).
const API_VERSION: &str = "audit.k8s.io/v1";

/// How much of a request is audited; ordered, each level recording what the one before it
/// does and more (upstream's `audit.Level`, in its spellings).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
pub enum Level {
    /// Not audited.
    None,
    /// The request's metadata (user, verb, resource, response status), no bodies.
    Metadata,
    /// The metadata and the request's body.
    Request,
    /// The metadata and both bodies.
    RequestResponse,
}

/// Every level, in order (the spellings validation lists).
const LEVELS: [Level; 4] = [
    Level::None,
    Level::Metadata,
    Level::Request,
    Level::RequestResponse,
];

impl Level {
    /// Upstream's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::None => "None",
            Level::Metadata => "Metadata",
            Level::Request => "Request",
            Level::RequestResponse => "RequestResponse",
        }
    }

    /// The level spelt `s`, exactly (upstream's levels are case-sensitive).
    fn parse(s: &str) -> Option<Self> {
        LEVELS.into_iter().find(|l| l.as_str() == s)
    }
}

/// A point of a request's life at which an event is written (upstream's `audit.Stage`, in its
/// spellings).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
pub enum Stage {
    /// As soon as the request is received, before anything else is done with it.
    RequestReceived,
    /// Once the response's headers are sent, before its body (long-running requests: watches).
    ResponseStarted,
    /// Once the response is complete.
    ResponseComplete,
    /// When the request's handler panicked.
    Panic,
}

/// Every stage, in the order of a request's life; stage lists are kept in this order.
const STAGES: [Stage; 4] = [
    Stage::RequestReceived,
    Stage::ResponseStarted,
    Stage::ResponseComplete,
    Stage::Panic,
];

impl Stage {
    /// Upstream's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::RequestReceived => "RequestReceived",
            Stage::ResponseStarted => "ResponseStarted",
            Stage::ResponseComplete => "ResponseComplete",
            Stage::Panic => "Panic",
        }
    }

    /// The stage spelt `s`, exactly.
    fn parse(s: &str) -> Option<Self> {
        STAGES.into_iter().find(|st| st.as_str() == s)
    }
}

/// The stages in any of `lists`, in the stages' order, each once (upstream's `unionStages`).
fn union(lists: &[&[Stage]]) -> Vec<Stage> {
    STAGES
        .into_iter()
        .filter(|s| lists.iter().any(|l| l.contains(s)))
        .collect()
}

/// What the policy says of one request (upstream's `RequestAuditConfig`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// The level it is audited at.
    pub level: Level,
    /// The stages at which no event is written for it.
    pub omit_stages: Vec<Stage>,
    /// Whether `metadata.managedFields` is left out of the bodies recorded.
    pub omit_managed_fields: bool,
}

impl Decision {
    /// Whether an event is written for the request at `stage`.
    pub fn emits(&self, stage: Stage) -> bool {
        self.level > Level::None && !self.omit_stages.contains(&stage)
    }
}

/// A loaded, validated audit policy (see the module's doc).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    rules: Vec<Rule>,
    /// The policy-wide stages, what a request no rule matches gets.
    omit_stages: Vec<Stage>,
    /// The policy-wide default of `omitManagedFields`.
    omit_managed_fields: bool,
}

/// One rule, validated, with the policy-wide defaults applied.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Rule {
    level: Level,
    users: Vec<String>,
    user_groups: Vec<String>,
    verbs: Vec<String>,
    resources: Vec<GroupResources>,
    namespaces: Vec<String>,
    non_resource_urls: Vec<String>,
    /// The rule's stages and the policy's.
    omit_stages: Vec<Stage>,
    /// The rule's own value, else the policy's.
    omit_managed_fields: bool,
}

/// Resources of one API group (upstream's `GroupResources`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct GroupResources {
    /// "" is the core group.
    group: String,
    resources: Vec<String>,
    resource_names: Vec<String>,
}

impl Policy {
    /// Reads the file at `path`; an error names it (`--audit-policy-file PATH: ...`).
    pub fn read(path: &std::path::Path) -> Result<Policy, String> {
        let what = format!("--audit-policy-file {}", path.display());
        let text = std::fs::read(path).map_err(|e| format!("{what}: {e}"))?;
        Self::parse(&text, &what)
    }

    /// Parses a policy in YAML or JSON; `what` names where it comes from in errors.
    pub fn parse(text: &[u8], what: &str) -> Result<Policy, String> {
        Self::decode(text).map_err(|e| format!("{what}: {e}"))
    }

    /// The decision for `user` doing `attrs`. `user` is the authenticated user, before
    /// impersonation, as upstream's `WithAudit` (which runs before `WithImpersonation`) sees
    /// it; a request with no user is given one with no name and no groups, which no rule
    /// naming users or groups matches (upstream's nil user).
    pub fn evaluate(&self, user: &UserInfo, attrs: &Attributes) -> Decision {
        match self.rules.iter().find(|r| r.matches(user, attrs)) {
            Some(rule) => Decision {
                level: rule.level,
                omit_stages: rule.omit_stages.clone(),
                omit_managed_fields: rule.omit_managed_fields,
            },
            None => Decision {
                level: Level::None,
                omit_stages: self.omit_stages.clone(),
                omit_managed_fields: self.omit_managed_fields,
            },
        }
    }

    /// The policy of `text`, or why not (without the source's name).
    fn decode(text: &[u8]) -> Result<Policy, String> {
        // JSON is read as JSON (its errors then speak of JSON); anything else as YAML, through
        // the reader whose alias expansion is bounded.
        let first = text.iter().find(|b| !b.is_ascii_whitespace());
        let value = if first == Some(&b'{') {
            serde_json::from_slice::<Value>(text).map_err(|e| format!("failed decoding: {e}"))?
        } else {
            kubestore_apimachinery::yaml::to_json(text)
                .map_err(|e| format!("failed decoding: {e}"))?
        };
        let Value::Object(mut map) = value else {
            return Err(format!(
                "failed decoding: a Policy must be an object with apiVersion {API_VERSION} and kind Policy"
            ));
        };
        match map.remove("apiVersion") {
            Some(Value::String(v)) if v == API_VERSION => {}
            Some(Value::String(v)) => {
                return Err(format!(
                    "unsupported apiVersion {v:?} in policy: only {API_VERSION} is read (upstream's older v1beta1 and v1alpha1 are not: change the apiVersion, their fields are v1's)"
                ));
            }
            _ => return Err(format!("apiVersion is required in policy: {API_VERSION}")),
        }
        match map.remove("kind") {
            Some(Value::String(k)) if k == "Policy" => {}
            Some(Value::String(k)) => {
                return Err(format!("unsupported kind {k:?} in policy: expected Policy"));
            }
            _ => return Err("kind is required in policy: Policy".into()),
        }
        // An object's metadata says nothing of what is audited.
        map.remove("metadata");
        let raw: RawPolicy = serde_json::from_value(Value::Object(map))
            .map_err(|e| format!("failed decoding: {e}"))?;
        Self::build(raw)
    }

    /// Validates `raw` (every error at once, as upstream's `ValidatePolicy`) and applies the
    /// policy-wide defaults to its rules.
    fn build(raw: RawPolicy) -> Result<Policy, String> {
        let mut errors = Vec::new();
        let listed = stages(&raw.omit_stages, "omitStages", &mut errors);
        let omit_stages = union(&[listed.as_slice()]);
        let mut rules = Vec::with_capacity(raw.rules.len());
        for (i, rule) in raw.rules.into_iter().enumerate() {
            let path = format!("rules[{i}]");
            if let Some(rule) = Rule::build(
                rule,
                &path,
                &omit_stages,
                raw.omit_managed_fields,
                &mut errors,
            ) {
                rules.push(rule);
            }
        }
        match errors.len() {
            0 => {}
            // Upstream's aggregate error: one as it is, more in brackets.
            1 => return Err(errors.remove(0)),
            _ => return Err(format!("[{}]", errors.join(", "))),
        }
        if rules.is_empty() {
            return Err("loaded illegal policy with 0 rules".into());
        }
        Ok(Policy {
            rules,
            omit_stages,
            omit_managed_fields: raw.omit_managed_fields,
        })
    }
}

impl Rule {
    /// The rule of `raw`, at `path` in the policy; its problems are added to `errors` (None
    /// when its level is not valid: the other fields are still validated).
    fn build(
        raw: RawRule,
        path: &str,
        policy_stages: &[Stage],
        policy_omit_managed_fields: bool,
        errors: &mut Vec<String>,
    ) -> Option<Rule> {
        // Upstream's order: level, nonResourceURLs, resources, omitStages, then the mix.
        let level = match raw.level.as_str() {
            "" => {
                errors.push(format!("{path}.level: Required value"));
                None
            }
            s => {
                let level = Level::parse(s);
                if level.is_none() {
                    let supported: Vec<String> =
                        LEVELS.iter().map(|l| format!("{:?}", l.as_str())).collect();
                    errors.push(format!(
                        "{path}.level: Unsupported value: {s:?}: supported values: {}",
                        supported.join(", ")
                    ));
                }
                level
            }
        };
        for (j, url) in raw.non_resource_urls.iter().enumerate() {
            if url == "*" {
                continue;
            }
            if !url.starts_with('/') {
                errors.push(format!(
                    "{path}.nonResourceURLs[{j}]: Invalid value: {url:?}: non-resource URL rules must begin with a '/' character"
                ));
            }
            // A '*' anywhere but last (upstream looks at all but the last byte).
            if url
                .char_indices()
                .any(|(i, c)| c == '*' && i + 1 < url.len())
            {
                errors.push(format!(
                    "{path}.nonResourceURLs[{j}]: Invalid value: {url:?}: non-resource URL wildcards '*' must be the final character of the rule"
                ));
            }
        }
        for (j, gr) in raw.resources.iter().enumerate() {
            // "" is the core group; any other must be a group's name, never group/version.
            let problem = match gr.group.as_str() {
                "" => None,
                group => crate::validation::dns1123_subdomain(group),
            };
            if let Some(problem) = problem {
                errors.push(format!(
                    "{path}.resources[{j}].group: Invalid value: {:?}: {problem}",
                    gr.group
                ));
            }
            if !gr.resource_names.is_empty() && gr.resources.is_empty() {
                errors.push(format!(
                    "{path}.resources[{j}].resourceNames: Invalid value: {}: using resourceNames requires at least one resource",
                    list(&gr.resource_names)
                ));
            }
        }
        let own_stages = stages(&raw.omit_stages, &format!("{path}.omitStages"), errors);
        if !raw.non_resource_urls.is_empty()
            && (!raw.resources.is_empty() || !raw.namespaces.is_empty())
        {
            errors.push(format!(
                "{path}.nonResourceURLs: Invalid value: {}: rules cannot apply to both regular resources and non-resource URLs",
                list(&raw.non_resource_urls)
            ));
        }
        Some(Rule {
            level: level?,
            users: raw.users,
            user_groups: raw.user_groups,
            verbs: raw.verbs,
            resources: raw
                .resources
                .into_iter()
                .map(|gr| GroupResources {
                    group: gr.group,
                    resources: gr.resources,
                    resource_names: gr.resource_names,
                })
                .collect(),
            namespaces: raw.namespaces,
            non_resource_urls: raw.non_resource_urls,
            omit_stages: union(&[policy_stages, own_stages.as_slice()]),
            omit_managed_fields: raw
                .omit_managed_fields
                .unwrap_or(policy_omit_managed_fields),
        })
    }

    /// Whether the rule matches `user` doing `attrs` (upstream's `ruleMatches`): every field
    /// the rule sets must match; an empty list matches everything.
    fn matches(&self, user: &UserInfo, attrs: &Attributes) -> bool {
        if !self.users.is_empty() && !self.users.contains(&user.name) {
            return false;
        }
        if !self.user_groups.is_empty() && !user.groups.iter().any(|g| self.user_groups.contains(g))
        {
            return false;
        }
        let verb = match attrs {
            Attributes::Resource(r) => &r.verb,
            Attributes::NonResource { verb, .. } => verb,
        };
        if !self.verbs.is_empty() && !self.verbs.contains(verb) {
            return false;
        }
        // A rule about resources matches no non-resource request, and the other way round; a
        // rule about neither matches both.
        if !self.namespaces.is_empty() || !self.resources.is_empty() {
            return match attrs {
                Attributes::Resource(r) => self.matches_resource(r),
                Attributes::NonResource { .. } => false,
            };
        }
        if !self.non_resource_urls.is_empty() {
            return match attrs {
                Attributes::NonResource { path, .. } => self
                    .non_resource_urls
                    .iter()
                    .any(|spec| path_matches(path, spec)),
                Attributes::Resource(_) => false,
            };
        }
        true
    }

    /// Upstream's `ruleMatchesResource`, for a resource request.
    fn matches_resource(&self, r: &ResourceAttributes) -> bool {
        // A cluster-scoped request's namespace is "", which a rule lists as "".
        if !self.namespaces.is_empty() && !self.namespaces.contains(&r.namespace) {
            return false;
        }
        self.resources.is_empty() || self.resources.iter().any(|gr| gr.matches(r))
    }
}

impl GroupResources {
    /// Whether `r` is of these resources: same group, a matching resource form, and one of the
    /// names when names are listed.
    fn matches(&self, r: &ResourceAttributes) -> bool {
        if self.group != r.group {
            return false;
        }
        if self.resources.is_empty() {
            return true;
        }
        if !self.resource_names.is_empty() && !self.resource_names.contains(&r.name) {
            return false;
        }
        self.resources
            .iter()
            .any(|spec| resource_matches(spec, &r.resource, &r.subresource))
    }
}

/// Whether `spec`, in upstream's forms, names `resource` (and `subresource`, "" for the object
/// itself): `*` everything, subresources included; `res` the resource, none of its
/// subresources (as RBAC reads it); `res/sub` one subresource; `*/sub` that subresource of
/// every resource; `res/*` the resource and all its subresources.
fn resource_matches(spec: &str, resource: &str, subresource: &str) -> bool {
    if spec == "*" {
        return true;
    }
    match spec.split_once('/') {
        None => subresource.is_empty() && spec == resource,
        Some((res, "*")) => res == resource,
        Some(("*", sub)) => !subresource.is_empty() && sub == subresource,
        Some((res, sub)) => !subresource.is_empty() && res == resource && sub == subresource,
    }
}

/// Whether a non-resource `path` matches `spec` (upstream's `pathMatches`): `*` matches every
/// path, a spec ending in `*` every path it prefixes, any other only itself.
fn path_matches(path: &str, spec: &str) -> bool {
    spec == "*"
        || spec == path
        || (spec.ends_with('*') && path.starts_with(spec.trim_end_matches('*')))
}

/// The stages of `raw`; each that is no stage is reported under `path`.
fn stages(raw: &[String], path: &str, errors: &mut Vec<String>) -> Vec<Stage> {
    let mut out = Vec::with_capacity(raw.len());
    for (i, s) in raw.iter().enumerate() {
        match Stage::parse(s) {
            Some(stage) => out.push(stage),
            None => {
                let allowed: Vec<&str> = STAGES.iter().map(|st| st.as_str()).collect();
                errors.push(format!(
                    "{path}[{i}]: Invalid value: {s:?}: allowed stages are {}",
                    allowed.join(",")
                ));
            }
        }
    }
    out
}

/// A list of strings as an error shows it.
fn list(values: &[String]) -> String {
    let quoted: Vec<String> = values.iter().map(|v| format!("{v:?}")).collect();
    format!("[{}]", quoted.join(", "))
}

/// A YAML `null` (a key with nothing after it) as the type's empty value, as Go's decoder
/// reads it.
fn nullable<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// The policy's document, less `apiVersion`, `kind` and `metadata` (checked, or ignored,
/// before).
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawPolicy {
    #[serde(default, deserialize_with = "nullable")]
    rules: Vec<RawRule>,
    #[serde(default, deserialize_with = "nullable")]
    omit_stages: Vec<String>,
    #[serde(default, deserialize_with = "nullable")]
    omit_managed_fields: bool,
}

/// A rule as written; levels and stages are strings until validated, so that an error names
/// the rule.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawRule {
    #[serde(default, deserialize_with = "nullable")]
    level: String,
    #[serde(default, deserialize_with = "nullable")]
    users: Vec<String>,
    #[serde(default, deserialize_with = "nullable")]
    user_groups: Vec<String>,
    #[serde(default, deserialize_with = "nullable")]
    verbs: Vec<String>,
    #[serde(default, deserialize_with = "nullable")]
    resources: Vec<RawGroupResources>,
    #[serde(default, deserialize_with = "nullable")]
    namespaces: Vec<String>,
    #[serde(rename = "nonResourceURLs", default, deserialize_with = "nullable")]
    non_resource_urls: Vec<String>,
    #[serde(default, deserialize_with = "nullable")]
    omit_stages: Vec<String>,
    #[serde(default)]
    omit_managed_fields: Option<bool>,
}

/// A `resources` entry as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct RawGroupResources {
    #[serde(default, deserialize_with = "nullable")]
    group: String,
    #[serde(default, deserialize_with = "nullable")]
    resources: Vec<String>,
    #[serde(default, deserialize_with = "nullable")]
    resource_names: Vec<String>,
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "policy_docs_tests.rs"]
mod docs_tests;
