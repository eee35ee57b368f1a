//! A ValidatingAdmissionPolicy as admission holds it: every expression compiled once, when the
//! policy is seen (created, changed, or listed after a restart), not per request. An expression
//! that does not compile (a policy stored by another version, say) is kept as its error, and a
//! request the policy matches is then decided by its failurePolicy, as upstream's
//! `compileError`.

use kubestore_proto::admissionregistration::v1::{MatchResources, ValidatingAdmissionPolicy};

use crate::custom::rules::expression::Expression;

/// An expression, or why it does not compile.
pub type Compiled = Result<Expression, String>;

fn compile(source: &str) -> Compiled {
    Expression::compile(source)
}

/// One `validations` entry.
#[derive(Debug)]
pub struct Validation {
    /// `expression`.
    pub expression: Compiled,
    /// `message`.
    pub message: String,
    /// `messageExpression`, when set.
    pub message_expression: Option<Compiled>,
    /// The status reason of a denial; `Invalid` when unset (upstream's default).
    pub reason: &'static str,
}

/// A policy ready to be evaluated.
#[derive(Debug)]
pub struct Policy {
    /// The policy's name.
    pub name: String,
    /// `paramKind`: (apiVersion, kind).
    pub param_kind: Option<(String, String)>,
    /// `matchConstraints`.
    pub match_constraints: MatchResources,
    /// `failurePolicy: Fail` (the default) rather than `Ignore`.
    pub fail: bool,
    /// `validations`.
    pub validations: Vec<Validation>,
    /// `matchConditions`: (name, expression).
    pub match_conditions: Vec<(String, Compiled)>,
    /// `variables`: (name, expression), in order.
    pub variables: Vec<(String, Compiled)>,
    /// `auditAnnotations`: (key, valueExpression).
    pub audit_annotations: Vec<(String, Compiled)>,
}

/// The status reasons a validation may give (upstream's `supportedValidationPolicyReason`).
fn reason(r: Option<&str>) -> &'static str {
    match r {
        Some("Unauthorized") => "Unauthorized",
        Some("Forbidden") => "Forbidden",
        Some("RequestEntityTooLarge") => "RequestEntityTooLarge",
        _ => "Invalid",
    }
}

impl Policy {
    /// Compiles `p`.
    pub fn of(p: &ValidatingAdmissionPolicy) -> Self {
        let meta = p.metadata.clone().unwrap_or_default();
        let spec = p.spec.clone().unwrap_or_default();
        let named = |items: Vec<(String, String)>| -> Vec<(String, Compiled)> {
            items
                .into_iter()
                .map(|(name, source)| {
                    let c = compile(&source);
                    (name, c)
                })
                .collect()
        };
        Self {
            name: meta.name,
            param_kind: spec.param_kind.map(|k| (k.api_version, k.kind)),
            match_constraints: spec.match_constraints.unwrap_or_default(),
            fail: spec.failure_policy.as_deref() != Some("Ignore"),
            validations: spec
                .validations
                .into_iter()
                .map(|v| Validation {
                    expression: compile(&v.expression),
                    message: v.message,
                    message_expression: (!v.message_expression.is_empty())
                        .then(|| compile(&v.message_expression)),
                    reason: reason(v.reason.as_deref()),
                })
                .collect(),
            match_conditions: named(
                spec.match_conditions
                    .into_iter()
                    .map(|c| (c.name, c.expression))
                    .collect(),
            ),
            variables: named(
                spec.variables
                    .into_iter()
                    .map(|v| (v.name, v.expression))
                    .collect(),
            ),
            audit_annotations: named(
                spec.audit_annotations
                    .into_iter()
                    .map(|a| (a.key, a.value_expression))
                    .collect(),
            ),
        }
    }

    /// Why the policy cannot be evaluated: the first expression that does not compile, in
    /// upstream's words.
    pub fn compile_error(&self) -> Option<String> {
        let named = self
            .match_conditions
            .iter()
            .chain(&self.variables)
            .chain(&self.audit_annotations)
            .map(|(_, c)| c);
        let validations = self
            .validations
            .iter()
            .flat_map(|v| std::iter::once(&v.expression).chain(v.message_expression.as_ref()));
        named
            .chain(validations)
            .find_map(|c| c.as_ref().err())
            .cloned()
    }
}
