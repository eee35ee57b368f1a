//! CEL expressions outside a schema: admission policies' validations, match conditions,
//! variables and audit annotations (upstream's `pkg/admission/plugin/cel`). They are compiled
//! as rules are (same parser, size and depth limits, `matches()` compiled once) and evaluated
//! with named JSON variables (`object`, `oldObject`, `params`, `request`, ...) instead of
//! `self`, under the same cost model: each evaluation is bounded on the actual values before
//! it runs, against [`PER_CALL_LIMIT`](super::PER_CALL_LIMIT) and the request's
//! [`Budget`](super::Budget).

use cel::common::types::{CelBool, CelNull, CelString};
use serde_json::Value;

use std::sync::Arc;

use super::{
    Budget, Compiled, PER_CALL_LIMIT, compile_one, cost, eval,
    library::authz::{Check, authorizer},
};
use crate::{authn::UserInfo, authz::ResourceAttributes};

/// A compiled expression.
pub struct Expression {
    /// As written.
    pub source: String,
    compiled: Compiled,
}

impl std::fmt::Debug for Expression {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Expression").field(&self.source).finish()
    }
}

impl Expression {
    /// Compiles `source`; upstream's words for why it does not compile otherwise.
    pub fn compile(source: &str) -> Result<Self, String> {
        Ok(Self {
            source: source.to_string(),
            compiled: compile_one(source)?,
        })
    }

    /// The parsed program: its tree and where each node was written, what policies' type
    /// checking (`admission::policy::typecheck`) walks.
    pub(crate) fn program(&self) -> &cel::Program {
        &self.compiled.program
    }

    /// Whether the expression reads the variable `name`.
    pub fn reads(&self, name: &str) -> bool {
        self.compiled.program.references().has_variable(name)
    }
}

/// What an expression gave.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// A bool.
    Bool(bool),
    /// A string.
    String(String),
    /// `null`.
    Null,
    /// Anything else, as JSON (a variable's value); `None` when it has no JSON form.
    Other(Option<Value>, String),
}

/// What the `authorizer` variable asks (the server's authorizers) and about whom (the
/// request's user); `requestResource` is the request's resource, when it is one.
#[derive(Clone)]
pub struct Authorizing {
    /// The server's authorizers.
    pub checker: Arc<dyn Check>,
    /// The request's user.
    pub user: UserInfo,
    /// The request's resource.
    pub request_resource: Option<ResourceAttributes>,
}

impl std::fmt::Debug for Authorizing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authorizing")
            .field("user", &self.user.name)
            .finish()
    }
}

/// Evaluates `expr` with `vars` bound, charging `budget` its bound first; an error in
/// upstream's words when it may not run or fails.
pub fn evaluate(
    expr: &Expression,
    vars: &[(&str, &Value)],
    budget: &mut Budget,
) -> Result<Outcome, String> {
    evaluate_as(expr, vars, None, budget)
}

/// [`evaluate`], with the `authorizer` variable bound to `authorizing` when the expression
/// reads it (an expression that reads it without one fails: no such variable).
pub fn evaluate_as(
    expr: &Expression,
    vars: &[(&str, &Value)],
    authorizing: Option<&Authorizing>,
    budget: &mut Budget,
) -> Result<Outcome, String> {
    // The estimator and the crate walk an expression recursively: one nested deeper than
    // [`INLINE_DEPTH`] runs where validations run, on a thread with a large stack
    // (`offload::validation`), as a deep expression on a worker's 2 MiB stack would abort the
    // process; the usual shallow ones run in place, without a thread's cost.
    if expr.compiled.depth > INLINE_DEPTH {
        return crate::offload::validation(|| run(expr, vars, authorizing, budget))?;
    }
    run(expr, vars, authorizing, budget)
}

/// Expressions nested at most this deep are evaluated on the caller's stack.
const INLINE_DEPTH: usize = 12;

fn run(
    expr: &Expression,
    vars: &[(&str, &Value)],
    authorizing: Option<&Authorizing>,
    budget: &mut Budget,
) -> Result<Outcome, String> {
    if budget.stopped() {
        return Err("validation failed due to running out of cost budget, no further validation rules will be run".into());
    }
    let mut estimator = cost::Estimator::of_vars(vars);
    let coarse = estimator.cost(expr.compiled.program.expression());
    let bound = if coarse <= PER_CALL_LIMIT.min(budget.left()) {
        coarse
    } else {
        coarse.min(estimator.refined_cost(expr.compiled.program.expression()))
    };
    budget.charge(
        bound,
        "operation cancelled: actual cost limit exceeded".into(),
        "validation failed due to running out of cost budget, no further validation rules will be run",
    )?;
    let mut ctx = cel::Context::with_env(super::ENV.clone());
    for (name, value) in vars {
        ctx.add_variable_as_val(*name, eval::to_val(value));
    }
    if let Some(a) = authorizing.filter(|_| expr.reads("authorizer")) {
        ctx.add_variable_as_val(
            "authorizer",
            authorizer(
                a.checker.clone(),
                a.user.clone(),
                a.request_resource.clone(),
            ),
        );
    }
    eval::register(&mut ctx, &expr.compiled.patterns);
    let ctx = &ctx;
    let e = &expr.compiled.evaluated;
    let result =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(
            || match cel::Value::resolve_val(e, ctx) {
                Ok(v) => {
                    if let Some(b) = v.downcast_ref::<CelBool>() {
                        Ok(Outcome::Bool(*b.inner()))
                    } else if let Some(s) = v.downcast_ref::<CelString<'_>>() {
                        Ok(Outcome::String(s.inner().to_string()))
                    } else if v.downcast_ref::<CelNull>().is_some() {
                        Ok(Outcome::Null)
                    } else {
                        let json = cel::Value::try_from(v.as_ref())
                            .ok()
                            .and_then(|x| to_json(&x));
                        Ok(Outcome::Other(json, v.get_type().name().to_string()))
                    }
                }
                Err(e) => Err(e.to_string()),
            },
        ));
    result.unwrap_or_else(|_| Err("the expression could not be evaluated".into()))
}

/// The JSON form of a CEL value (a variable's, read again by later expressions); `None` for
/// what JSON cannot hold (functions, opaque values, non-finite numbers).
fn to_json(v: &cel::Value) -> Option<Value> {
    use cel::objects::Key;
    Some(match v {
        cel::Value::Null => Value::Null,
        cel::Value::Bool(b) => Value::Bool(*b),
        cel::Value::Int(i) => Value::from(*i),
        cel::Value::UInt(u) => Value::from(*u),
        cel::Value::Float(f) => Value::Number(serde_json::Number::from_f64(*f)?),
        cel::Value::String(s) => Value::String(s.to_string()),
        cel::Value::List(l) => Value::Array(l.iter().map(to_json).collect::<Option<_>>()?),
        cel::Value::Map(m) => Value::Object(
            m.map
                .iter()
                .map(|(k, x)| {
                    let key = match k {
                        Key::String(s) => s.to_string(),
                        Key::Int(i) => i.to_string(),
                        Key::Uint(u) => u.to_string(),
                        Key::Bool(b) => b.to_string(),
                    };
                    Some((key, to_json(x)?))
                })
                .collect::<Option<_>>()?,
        ),
        _ => return None,
    })
}
