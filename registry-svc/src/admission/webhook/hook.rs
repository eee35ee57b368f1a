//! One webhook of a Mutating- or ValidatingWebhookConfiguration as admission holds it: its
//! rules as a policy's match constraints (so `policy::matching` decides for both, as upstream
//! shares its predicates), its matchConditions compiled once, its limits resolved.

use kubestore_proto::admissionregistration::v1::{
    MatchCondition, MatchResources, MutatingWebhook, NamedRuleWithOperations, RuleWithOperations,
    ValidatingWebhook, WebhookClientConfig,
};

use crate::custom::rules::expression::Expression;

/// Upstream's default and largest `timeoutSeconds`.
const DEFAULT_TIMEOUT_SECONDS: i32 = 10;
const MAX_TIMEOUT_SECONDS: i32 = 30;

/// A webhook ready to be called.
#[derive(Debug)]
pub struct Hook {
    /// The configuration's name.
    pub configuration: String,
    /// The webhook's name (`pod-policy.example.com`).
    pub name: String,
    /// Where it is called (an `https://` URL); None when the configuration has none (a
    /// `service` reference stored by another server): calling it fails.
    pub url: Option<String>,
    /// PEM certificates trusted for it (empty: the system's).
    pub ca_bundle: Vec<u8>,
    /// What it matches.
    pub matches: MatchResources,
    /// `failurePolicy: Fail` (the default) rather than `Ignore`.
    pub fail: bool,
    /// How long a call may take.
    pub timeout: std::time::Duration,
    /// `reinvocationPolicy: IfNeeded` (mutating webhooks).
    pub reinvoke: bool,
    /// matchConditions: (name, compiled expression or why it does not compile).
    pub conditions: Vec<(String, Result<Expression, String>)>,
}

fn rules(rules: &[RuleWithOperations]) -> Vec<NamedRuleWithOperations> {
    rules
        .iter()
        .map(|r| NamedRuleWithOperations {
            resource_names: Vec::new(),
            operations: r.operations.clone(),
            api_groups: r.api_groups.clone(),
            api_versions: r.api_versions.clone(),
            resources: r.resources.clone(),
            scope: r.scope.clone(),
        })
        .collect()
}

fn conditions(list: &[MatchCondition]) -> Vec<(String, Result<Expression, String>)> {
    list.iter()
        .map(|c| (c.name.clone(), Expression::compile(&c.expression)))
        .collect()
}

fn timeout(seconds: Option<i32>) -> std::time::Duration {
    let s = seconds
        .unwrap_or(DEFAULT_TIMEOUT_SECONDS)
        .clamp(1, MAX_TIMEOUT_SECONDS);
    std::time::Duration::from_secs(u64::try_from(s).unwrap_or(10))
}

fn client(c: &Option<WebhookClientConfig>) -> (Option<String>, Vec<u8>) {
    let c = c.clone().unwrap_or_default();
    (c.url.filter(|u| !u.is_empty()), c.ca_bundle)
}

impl Hook {
    /// A mutating webhook of `configuration`.
    pub fn mutating(configuration: &str, w: &MutatingWebhook) -> Self {
        let (url, ca_bundle) = client(&w.client_config);
        Self {
            configuration: configuration.to_string(),
            name: w.name.clone(),
            url,
            ca_bundle,
            matches: MatchResources {
                namespace_selector: w.namespace_selector.clone(),
                object_selector: w.object_selector.clone(),
                resource_rules: rules(&w.rules),
                exclude_resource_rules: Vec::new(),
                match_policy: w.match_policy.clone(),
            },
            fail: w.failure_policy.as_deref() != Some("Ignore"),
            timeout: timeout(w.timeout_seconds),
            reinvoke: w.reinvocation_policy.as_deref() == Some("IfNeeded"),
            conditions: conditions(&w.match_conditions),
        }
    }

    /// A validating webhook of `configuration`.
    pub fn validating(configuration: &str, w: &ValidatingWebhook) -> Self {
        let (url, ca_bundle) = client(&w.client_config);
        Self {
            configuration: configuration.to_string(),
            name: w.name.clone(),
            url,
            ca_bundle,
            matches: MatchResources {
                namespace_selector: w.namespace_selector.clone(),
                object_selector: w.object_selector.clone(),
                resource_rules: rules(&w.rules),
                exclude_resource_rules: Vec::new(),
                match_policy: w.match_policy.clone(),
            },
            fail: w.failure_policy.as_deref() != Some("Ignore"),
            timeout: timeout(w.timeout_seconds),
            reinvoke: false,
            conditions: conditions(&w.match_conditions),
        }
    }
}
