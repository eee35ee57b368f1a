//! One request against every binding in effect (upstream's validating `dispatcher.Dispatch`
//! and `validator.Validate`): match the policy and the binding, collect the parameters, then
//! per parameter evaluate matchConditions, variables, validations (and their
//! messageExpressions) and auditAnnotations; turn each failure into what the binding's
//! `validationActions` say. The first denial, in binding-name order, is the answer; warnings
//! and audit annotations of every binding are kept, as upstream.

use std::{
    collections::{BTreeMap, HashMap},
    sync::Arc,
};

use kubestore_proto::admissionregistration::v1::ValidatingAdmissionPolicyBinding;
use serde_json::{Map, Value, json};

use super::{Policies, compiled, matching};
use crate::{
    admission::{Objects, Outcome, Request, labels_of},
    authz::{Attributes, Decision as AuthzDecision, ResourceAttributes},
    custom::rules::{
        Budget,
        expression::{self, Authorizing, Expression, Outcome as Evaluated},
        library::authz::Check,
    },
    error::ApiError,
};

/// The audit annotation of failures sent to `Audit` (upstream's
/// `ValidationFailureAnnotationKey`).
const VALIDATION_FAILURE: &str = "validation.policy.admission.k8s.io/validation_failure";
/// Longest audit annotation value published (upstream's `maxAuditAnnotationValueLength`).
const MAX_AUDIT_VALUE: usize = 10 * 1024;
/// Failures listed in the audit annotation at most (upstream's `maxValidationFailures`).
const MAX_FAILURES: usize = 50;
/// Longest message a messageExpression may produce (upstream's
/// `MaxEvaluatedMessageExpressionSizeBytes`).
const MAX_MESSAGE_BYTES: usize = 5 * 1024;

/// A decision to refuse: the policy, the binding (none for a policy's own configuration
/// error), the message and the status reason.
struct Denied {
    policy: String,
    binding: Option<String>,
    message: String,
    reason: &'static str,
}

/// What one evaluation of a policy decided, before the binding's actions.
enum Decision {
    /// A check failed (or could not run, under `failurePolicy: Fail`): its message, reason and
    /// the validation's index.
    Fail {
        message: String,
        reason: &'static str,
        index: usize,
        /// The check could not run (failurePolicy Fail), rather than failed.
        error: bool,
    },
    /// Refused whatever the actions (an audit annotation that failed under `Fail`).
    Deny(String),
}

/// Every binding in effect, against `request`.
pub(super) fn dispatch(
    policies: &HashMap<String, Arc<compiled::Policy>>,
    bindings: &BTreeMap<String, Arc<ValidatingAdmissionPolicyBinding>>,
    state: &Policies,
    request: &Request<'_>,
    objects: &Objects<'_>,
    outcome: &mut Outcome,
) -> Result<(), ApiError> {
    let mut denied: Vec<Denied> = Vec::new();
    let mut failures: Vec<Value> = Vec::new();
    let namespaced = !request.namespace.is_empty();
    let ns_labels = if namespaced {
        state.namespaces.labels(request.namespace)
    } else {
        Default::default()
    };
    // The objects' labels and the CEL variables common to every binding, made once, when a
    // first binding's rules match.
    let mut common: Option<Common> = None;
    for (binding_name, binding) in bindings {
        let spec = binding.spec.clone().unwrap_or_default();
        let Some(policy) = policies.get(&spec.policy_name) else {
            // Upstream ignores a binding whose policy does not exist (yet).
            continue;
        };
        // Rules first, without the objects: most requests stop here.
        if !matching::any_rule_matches(&policy.match_constraints.resource_rules, request) {
            continue;
        }
        if common.is_none() {
            common = Some(Common::of(request, objects)?);
        }
        let Some(c) = common.as_ref() else { continue };
        let target = matching::Target {
            request,
            namespaced,
            namespace_labels: &ns_labels,
            object_labels: c.labels.as_ref(),
            old_object_labels: c.old_labels.as_ref(),
        };
        if !matching::matches(&policy.match_constraints, &target) {
            continue;
        }
        let config_error = |denied: &mut Vec<Denied>, binding: Option<&str>, e: String| {
            if policy.fail {
                let what = if binding.is_some() {
                    "binding"
                } else {
                    "policy"
                };
                denied.push(Denied {
                    policy: policy.name.clone(),
                    binding: binding.map(str::to_string),
                    message: format!("failed to configure {what}: {e}"),
                    reason: "Invalid",
                });
            }
        };
        if let Some(m) = &spec.match_resources
            && !matching::matches(m, &target)
        {
            continue;
        }
        let params: Vec<Option<Arc<Value>>> = match (&policy.param_kind, &spec.param_ref) {
            (Some(kind), Some(r)) => match state.params.collect(kind, r, request.namespace) {
                Ok(found) => found.into_iter().map(Some).collect(),
                Err(e) => {
                    config_error(&mut denied, Some(binding_name), e);
                    continue;
                }
            },
            _ => vec![None],
        };
        let mut annotations: BTreeMap<String, String> = BTreeMap::new();
        for param in params {
            let decisions = evaluate(policy, c, &ns_labels, param.as_deref(), &mut annotations);
            for d in decisions {
                match d {
                    Decision::Deny(message) => {
                        state
                            .metrics
                            .policy_check(&policy.name, binding_name, "deny", true);
                        denied.push(Denied {
                            policy: policy.name.clone(),
                            binding: Some(binding_name.clone()),
                            message,
                            reason: "Invalid",
                        });
                    }
                    Decision::Fail {
                        message,
                        reason,
                        index,
                        error,
                    } => {
                        for action in &spec.validation_actions {
                            let counted = match action.as_str() {
                                "Deny" => "deny",
                                "Warn" => "warn",
                                _ => "audit",
                            };
                            state
                                .metrics
                                .policy_check(&policy.name, binding_name, counted, error);
                            match action.as_str() {
                                "Deny" => denied.push(Denied {
                                    policy: policy.name.clone(),
                                    binding: Some(binding_name.clone()),
                                    message: message.clone(),
                                    reason,
                                }),
                                "Warn" => outcome.warnings.push(format!(
                                    "Validation failed for ValidatingAdmissionPolicy '{}' with binding '{binding_name}': {message}",
                                    policy.name
                                )),
                                "Audit" => failures.push(json!({
                                    "message": message,
                                    "policy": spec.policy_name,
                                    "binding": binding_name,
                                    "expressionIndex": index,
                                    "validationActions": spec.validation_actions,
                                })),
                                _ => {}
                            }
                        }
                    }
                }
            }
        }
        for (k, v) in annotations {
            outcome
                .annotations
                .push((format!("{}/{k}", policy.name), v));
        }
    }
    if !failures.is_empty() {
        failures.truncate(MAX_FAILURES);
        outcome.annotations.push((
            VALIDATION_FAILURE.into(),
            Value::Array(failures).to_string(),
        ));
    }
    match denied.into_iter().next() {
        None => Ok(()),
        Some(d) => {
            let message = match &d.binding {
                Some(b) => format!(
                    "ValidatingAdmissionPolicy '{}' with binding '{b}' denied request: {}",
                    d.policy, d.message
                ),
                None => format!(
                    "ValidatingAdmissionPolicy '{}' denied request: {}",
                    d.policy, d.message
                ),
            };
            Err(rejected(request, d.reason, message))
        }
    }
}

/// Upstream's `admission.NewForbidden` with the decision's reason.
fn rejected(request: &Request<'_>, reason: &'static str, message: String) -> ApiError {
    ApiError::Rejected {
        reason,
        group: request.group.to_string(),
        resource: request.resource.to_string(),
        name: request.name.to_string(),
        message,
    }
}

/// What every binding's evaluation shares: the objects and the `request` variable.
struct Common {
    object: Value,
    old_object: Value,
    request: Value,
    labels: Option<BTreeMap<String, String>>,
    old_labels: Option<BTreeMap<String, String>>,
    /// The `authorizer` variable: the request's gate and user.
    authorizing: Option<Authorizing>,
}

/// The `authorizer` variable asks the request's gate (upstream's authorizer of the request).
impl Check for crate::authz::Gate {
    fn check(&self, user: &crate::authn::UserInfo, attrs: &Attributes) -> (AuthzDecision, String) {
        self.decide(user, attrs)
    }
}

impl Common {
    fn of(request: &Request<'_>, objects: &Objects<'_>) -> Result<Self, ApiError> {
        let object = objects.object()?.cloned();
        let old_object = objects.old_object()?.cloned();
        Ok(Self {
            labels: object.as_ref().map(labels_of),
            old_labels: old_object.as_ref().map(labels_of),
            object: object.unwrap_or(Value::Null),
            old_object: old_object.unwrap_or(Value::Null),
            request: request.to_json(&uuid::Uuid::new_v4().to_string()),
            authorizing: request.gate.map(|gate| Authorizing {
                checker: gate.clone(),
                user: request.user.clone(),
                request_resource: Some(ResourceAttributes {
                    verb: String::new(),
                    group: request.group.to_string(),
                    version: request.version.to_string(),
                    resource: request.resource.to_string(),
                    subresource: request.subresource.to_string(),
                    namespace: request.namespace.to_string(),
                    name: request.name.to_string(),
                }),
            }),
        })
    }
}

/// Upstream's words for an expression that failed to evaluate.
fn failed(e: &Expression, why: &str) -> String {
    format!("expression '{}' resulted in error: {why}", e.source)
}

/// Evaluates `policy` once (with one parameter object): the failed checks, and the audit
/// annotations into `annotations`.
fn evaluate(
    policy: &compiled::Policy,
    c: &Common,
    ns_labels: &BTreeMap<String, String>,
    param: Option<&Value>,
    annotations: &mut BTreeMap<String, String>,
) -> Vec<Decision> {
    let error = |message: String| {
        if policy.fail {
            vec![Decision::Fail {
                message,
                reason: "Invalid",
                index: 0,
                error: true,
            }]
        } else {
            Vec::new()
        }
    };
    if let Some(e) = policy.compile_error() {
        return error(e);
    }
    let namespace_object = match c.request.get("namespace").and_then(Value::as_str) {
        Some(ns) if !ns.is_empty() && c.request["resource"]["resource"] != "namespaces" => {
            json!({"metadata": {"name": ns, "labels": ns_labels}})
        }
        _ => Value::Null,
    };
    let null = Value::Null;
    let mut variables = Map::new();
    let mut broken: Vec<(String, String)> = Vec::new();
    let mut budget = Budget::default();
    let run = |e: &Expression, variables: &Map<String, Value>, budget: &mut Budget| {
        let vars_value = Value::Object(variables.clone());
        let vars: [(&str, &Value); 6] = [
            ("object", &c.object),
            ("oldObject", &c.old_object),
            ("params", param.unwrap_or(&null)),
            ("request", &c.request),
            ("namespaceObject", &namespace_object),
            ("variables", &vars_value),
        ];
        expression::evaluate_as(e, &vars, c.authorizing.as_ref(), budget)
    };
    // matchConditions: any false means the policy does not apply; an error counts only when
    // none is false (upstream's `matchconditions.Matcher`).
    let mut match_error: Option<String> = None;
    for (name, e) in &policy.match_conditions {
        let Ok(e) = e else { continue };
        match run(e, &variables, &mut budget) {
            Ok(Evaluated::Bool(true)) => {}
            Ok(Evaluated::Bool(false)) => return Vec::new(),
            Ok(_) => {
                match_error.get_or_insert(format!(
                    "matchConditions[{name}]: {}",
                    failed(e, "must evaluate to bool")
                ));
            }
            Err(why) => {
                match_error.get_or_insert(format!("matchConditions[{name}]: {}", failed(e, &why)));
            }
        }
    }
    if let Some(m) = match_error {
        return error(m);
    }
    // Variables, in order (each may read the ones before it).
    for (name, e) in &policy.variables {
        let Ok(e) = e else { continue };
        match run(e, &variables, &mut budget) {
            Ok(Evaluated::Bool(b)) => {
                variables.insert(name.clone(), Value::Bool(b));
            }
            Ok(Evaluated::String(s)) => {
                variables.insert(name.clone(), Value::String(s));
            }
            Ok(Evaluated::Null) => {
                variables.insert(name.clone(), Value::Null);
            }
            Ok(Evaluated::Other(Some(v), _)) => {
                variables.insert(name.clone(), v);
            }
            Ok(Evaluated::Other(None, ty)) => {
                broken.push((name.clone(), format!("a {ty} cannot be a variable here")))
            }
            Err(why) => broken.push((name.clone(), failed(e, &why))),
        }
    }
    // An expression reading a variable that failed fails with it (upstream evaluates
    // variables lazily, so only their readers see the error).
    let reads_broken = |e: &Expression| {
        broken
            .iter()
            .find(|(name, _)| e.source.contains(&format!("variables.{name}")))
            .map(|(_, why)| why.clone())
    };
    let mut out = Vec::new();
    for (index, v) in policy.validations.iter().enumerate() {
        let Ok(e) = &v.expression else { continue };
        if let Some(why) = reads_broken(e) {
            out.extend(error(why).into_iter().map(|d| with_index(d, index)));
            continue;
        }
        let passed = match run(e, &variables, &mut budget) {
            Ok(Evaluated::Bool(b)) => b,
            Ok(_) => {
                out.extend(
                    error(failed(e, "validation expression must evaluate to bool"))
                        .into_iter()
                        .map(|d| with_index(d, index)),
                );
                continue;
            }
            Err(why) => {
                out.extend(
                    error(failed(e, &why))
                        .into_iter()
                        .map(|d| with_index(d, index)),
                );
                continue;
            }
        };
        if passed {
            continue;
        }
        let from_expression = v
            .message_expression
            .as_ref()
            .and_then(|m| m.as_ref().ok())
            .and_then(|m| match run(m, &variables, &mut budget) {
                Ok(Evaluated::String(s)) => {
                    let s = s.trim().to_string();
                    (!s.is_empty() && s.len() <= MAX_MESSAGE_BYTES && !s.contains('\n'))
                        .then_some(s)
                }
                _ => None,
            });
        let message = from_expression
            .or_else(|| {
                let m = v.message.trim();
                (!m.is_empty()).then(|| m.to_string())
            })
            .unwrap_or_else(|| format!("failed expression: {}", e.source.trim()));
        out.push(Decision::Fail {
            message,
            reason: v.reason,
            index,
            error: false,
        });
    }
    for (key, e) in &policy.audit_annotations {
        let Ok(e) = e else { continue };
        match run(e, &variables, &mut budget) {
            Ok(Evaluated::String(s)) => {
                let mut s = s.trim().to_string();
                if !s.is_empty() {
                    if s.len() > MAX_AUDIT_VALUE {
                        let mut end = MAX_AUDIT_VALUE;
                        while !s.is_char_boundary(end) {
                            end -= 1;
                        }
                        s.truncate(end);
                    }
                    annotations.insert(key.clone(), s);
                }
            }
            Ok(Evaluated::Null) => {}
            Ok(_) => {
                if policy.fail {
                    out.push(Decision::Deny(failed(
                        e,
                        "valueExpression must evaluate to either a string or null",
                    )));
                }
            }
            Err(why) => {
                if policy.fail {
                    out.push(Decision::Deny(failed(e, &why)));
                }
            }
        }
    }
    out
}

fn with_index(d: Decision, index: usize) -> Decision {
    match d {
        Decision::Fail {
            message,
            reason,
            error,
            ..
        } => Decision::Fail {
            message,
            reason,
            index,
            error,
        },
        other => other,
    }
}
