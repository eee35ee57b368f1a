//! `x-kubernetes-validations`: CEL rules of a custom kind's schema (upstream's
//! `pkg/apiserver/schema/cel`), compiled once per served version with the `cel` crate and
//! evaluated on every write, with `self` the value at the rule's node and `oldSelf` its value
//! before an update (transition rules, which are skipped on create).
//!
//! **Cost.** Upstream's limits, on upstream's cost model (`cost`, `shape`), computed on the
//! parsed expression (every macro and call, whatever the spacing of the text):
//! - when a definition is written, each rule's estimate from the schema's `maxItems`,
//!   `maxLength` and `maxProperties` (or what fits in a 3 MiB request), times how often its
//!   node can occur, must stay within [`STATIC_ESTIMATED_COST_LIMIT`], and all of them within
//!   [`STATIC_ESTIMATED_CRD_COST_LIMIT`] ([`limits`], with upstream's messages);
//! - before each evaluation, the rule's cost is bounded again on the actual values, sizes of
//!   intermediate results included (a concatenation is as long as its operands, a `map()` as
//!   long as its range); a rule whose bound passes [`PER_CALL_LIMIT`] is not run
//!   ("operation cancelled: actual cost limit exceeded"), and the bounds of one write's rules
//!   are charged to [`PER_REQUEST_BUDGET`].
//!
//! The `cel` crate counts no cost and cannot be interrupted, so the runtime limit is enforced
//! by that bound, *before* evaluating, rather than by counting during the evaluation as cel-go
//! does. The bound is upstream's cost model on the real sizes plus what the crate copies, so a
//! rule allowed to run allocates in proportion to its cost (a tenth of a unit per byte
//! copied), and runs within about the time upstream's limit means. A list's items are bounded
//! by the largest of each size among them; a comprehension this makes costly is bounded again
//! item by item, as far as a bound on the estimator's own work allows: the bound is at least
//! upstream's actual cost, and stricter only where refining gives up.
//!
//! Evaluation runs off the async workers, a bounded number at a time (`crate::offload`); `matches()`
//! patterns are compiled once per rule (`eval`). Rules themselves are at most
//! [`MAX_RULE_BYTES`] long.

mod cost;
mod eval;
pub mod expression;
pub mod library;
pub(crate) mod shape;
#[cfg(test)]
pub(crate) mod tests;

use std::sync::{Arc, LazyLock};

use cel::common::{
    ast::IdedExpr,
    types::{CelBool, CelString},
};
use serde_json::Value;

pub use shape::MAX_REQUEST_SIZE_BYTES;

/// Upstream's per-call CEL cost limit (`PerCallLimit`).
pub const PER_CALL_LIMIT: u64 = 1_000_000;
/// Upstream's per-request budget (`RuntimeCELCostBudget`).
pub const PER_REQUEST_BUDGET: u64 = 10_000_000;
/// Upstream's limit of one rule's estimated cost times its node's cardinality
/// (`StaticEstimatedCostLimit`).
pub const STATIC_ESTIMATED_COST_LIMIT: u64 = 10_000_000;
/// Upstream's limit of the estimated costs of all the rules of a schema
/// (`StaticEstimatedCRDCostLimit`).
pub const STATIC_ESTIMATED_CRD_COST_LIMIT: u64 = 100_000_000;
/// Longest rule or message expression accepted.
pub const MAX_RULE_BYTES: usize = 4096;
/// Deepest expression accepted (upstream's parser's `MaxRecursionDepth`).
pub const MAX_DEPTH: usize = 250;
/// Longest message a `messageExpression` may produce (upstream's
/// `MaxEvaluatedMessageExpressionSizeBytes`).
const MAX_MESSAGE_BYTES: usize = 5 * 1024;

/// The environment every rule and policy expression runs in: the standard library and
/// Kubernetes' libraries ([`library`]), built once.
static ENV: LazyLock<Arc<cel::Env>> = LazyLock::new(|| Arc::new(library::environment()));

/// A compiled expression: its parsed form (what costs are estimated on) and the form it is
/// evaluated in (`matches()` rewritten to compiled patterns).
struct Compiled {
    program: cel::Program,
    evaluated: IdedExpr,
    patterns: Arc<eval::Patterns>,
    /// How deeply the expression nests (what its recursive walks need of the stack).
    depth: usize,
}

/// One compiled rule.
pub struct Rule {
    /// The expression, as written.
    pub rule: String,
    /// `message`.
    pub message: Option<String>,
    /// `messageExpression`, as written.
    pub message_expression: Option<String>,
    /// `fieldPath`, a path below the rule's node (`.spec.x`).
    pub field_path: Option<String>,
    /// `reason`: FieldValueInvalid (default), FieldValueForbidden, FieldValueRequired,
    /// FieldValueDuplicate.
    pub reason: Option<String>,
    compiled: Compiled,
    message_compiled: Option<Compiled>,
    transition: bool,
}

impl std::fmt::Debug for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rule").field("rule", &self.rule).finish()
    }
}

impl Rule {
    /// Whether the rule reads `oldSelf` (a transition rule: run only on updates, and never
    /// ratcheted).
    pub fn transition(&self) -> bool {
        self.transition
    }

    /// The estimated costs of the rule and of its `messageExpression` when `self` is bounded
    /// by `bound` (upstream's estimate, before the node's cardinality).
    pub(crate) fn estimate(&self, bound: &Arc<shape::Bound>) -> (u64, Option<u64>) {
        let mut e = cost::Estimator::of_schema(bound.clone());
        let rule = e.cost(self.compiled.program.expression());
        let message = self.message_compiled.as_ref().map(|m| {
            let mut e = cost::Estimator::of_schema(bound.clone());
            e.cost(m.program.expression())
        });
        (rule, message)
    }

    /// Patterns compiled for the rule's `matches()` calls so far.
    #[cfg(test)]
    pub(crate) fn patterns_compiled(&self) -> u64 {
        self.compiled.patterns.compiled()
    }

    /// What upstream's messages call the rule: its message, else its expression.
    fn described(&self) -> &str {
        match &self.message {
            Some(m) if !m.trim().is_empty() => m.trim(),
            _ => self.rule.trim(),
        }
    }
}

/// The cost left for one write's rules, and whether evaluation has stopped.
#[derive(Debug)]
pub struct Budget {
    left: u64,
    stopped: bool,
}

impl Default for Budget {
    fn default() -> Self {
        Self {
            left: PER_REQUEST_BUDGET,
            stopped: false,
        }
    }
}

impl Budget {
    /// Whether no further rule will be evaluated (a limit was reached).
    pub fn stopped(&self) -> bool {
        self.stopped
    }

    /// The cost left.
    pub fn left(&self) -> u64 {
        self.left
    }

    /// Charges a rule bounded at `cost`, or says why it must not run (and stops evaluation).
    fn charge(&mut self, cost: u64, per_call: String, out_of_budget: &str) -> Result<(), String> {
        // Upstream compares what the evaluation cost with what is left first: one cancelled at
        // the per-call limit is reported as running out of budget when less than that is left.
        let refused = if cost > PER_CALL_LIMIT && self.left >= PER_CALL_LIMIT {
            Some(per_call)
        } else if cost > self.left {
            Some(out_of_budget.to_string())
        } else {
            None
        };
        match refused {
            Some(m) => {
                self.stopped = true;
                Err(m)
            }
            None => {
                self.left -= cost;
                Ok(())
            }
        }
    }
}

fn compile_one(source: &str) -> Result<Compiled, String> {
    if source.len() > MAX_RULE_BYTES {
        return Err(format!("must be at most {MAX_RULE_BYTES} bytes"));
    }
    // The parser may panic on some inputs it does not expect; a definition must never take
    // the service down.
    let text = source.to_string();
    let program = std::panic::catch_unwind(move || cel::Program::compile(&text))
        .map_err(|_| "compilation failed".to_string())?
        .map_err(|e| format!("compilation failed: {e}"))?;
    // Upstream's parser refuses expressions nested deeper than 250 (`MaxRecursionDepth`); the
    // crate's counts parentheses only, so a chain of 1,000 `+` parses into a tree as deep,
    // which evaluation, recursive, could not walk without overflowing its stack.
    let nesting = depth(program.expression());
    if nesting > MAX_DEPTH {
        return Err("compilation failed: max recursion depth exceeded".into());
    }
    let (evaluated, patterns) =
        eval::rewrite(program.expression()).map_err(|e| format!("compilation failed: {e}"))?;
    Ok(Compiled {
        program,
        evaluated,
        patterns: Arc::new(patterns),
        depth: nesting,
    })
}

/// How deeply `e` nests (iteratively: the tree may be deeper than a recursion could go).
fn depth(e: &IdedExpr) -> usize {
    use cel::common::ast::{EntryExpr, Expr};
    let mut deepest = 0;
    let mut todo = vec![(e, 1usize)];
    while let Some((e, d)) = todo.pop() {
        deepest = deepest.max(d);
        let mut children: Vec<&IdedExpr> = Vec::new();
        match &e.expr {
            Expr::Call(c) => {
                children.extend(c.target.iter().map(|t| t.as_ref()));
                children.extend(c.args.iter());
            }
            Expr::Select(s) => children.push(&s.operand),
            Expr::List(l) => children.extend(l.elements.iter()),
            Expr::Map(cel::common::ast::MapExpr { entries })
            | Expr::Struct(cel::common::ast::StructExpr { entries, .. }) => {
                for x in entries {
                    match &x.expr {
                        EntryExpr::MapEntry(x) => children.extend([&x.key, &x.value]),
                        EntryExpr::StructField(f) => children.push(&f.value),
                    }
                }
            }
            Expr::Comprehension(c) => children.extend([
                &c.iter_range,
                &c.accu_init,
                &c.loop_cond,
                &c.loop_step,
                &c.result,
            ]),
            Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
        }
        todo.extend(children.into_iter().map(|x| (x, d + 1)));
    }
    deepest
}

/// A problem of one rule: its index, the field (`rule`, `messageExpression`, `reason`) and the
/// description.
pub type Problem = (usize, &'static str, String);

/// Compiles a node's `x-kubernetes-validations`; the problems otherwise.
pub fn compile(rules: &[Value]) -> Result<Vec<Arc<Rule>>, Vec<Problem>> {
    let mut out = Vec::new();
    let mut problems = Vec::new();
    for (i, r) in rules.iter().enumerate() {
        let text = |k: &str| r.get(k).and_then(Value::as_str).map(String::from);
        let Some(rule) = text("rule").filter(|s| !s.trim().is_empty()) else {
            problems.push((i, "rule", "Required value".into()));
            continue;
        };
        let compiled = match compile_one(&rule) {
            Ok(p) => p,
            Err(e) => {
                problems.push((i, "rule", format!("Invalid value: {rule:?}: {e}")));
                continue;
            }
        };
        let message_expression = text("messageExpression");
        let message_compiled = match &message_expression {
            Some(m) => match compile_one(m) {
                Ok(p) => Some(p),
                Err(e) => {
                    problems.push((i, "messageExpression", format!("Invalid value: {m:?}: {e}")));
                    continue;
                }
            },
            None => None,
        };
        if let Some(reason) = text("reason")
            && !matches!(
                reason.as_str(),
                "FieldValueInvalid"
                    | "FieldValueForbidden"
                    | "FieldValueRequired"
                    | "FieldValueDuplicate"
            )
        {
            problems.push((
                i,
                "reason",
                format!("Unsupported value: {reason:?}: supported values: \"FieldValueDuplicate\", \"FieldValueForbidden\", \"FieldValueInvalid\", \"FieldValueRequired\""),
            ));
            continue;
        }
        let transition = compiled.program.references().has_variable("oldSelf");
        out.push(Arc::new(Rule {
            message: text("message"),
            message_expression,
            field_path: text("fieldPath"),
            reason: text("reason"),
            rule,
            compiled,
            message_compiled,
            transition,
        }));
    }
    if problems.is_empty() {
        Ok(out)
    } else {
        Err(problems)
    }
}

/// The bound charged for evaluating `c`: the coarse one, refined item by item only when it
/// would refuse the evaluation.
fn bound(estimator: &mut cost::Estimator<'_>, c: &Compiled, budget: &Budget) -> u64 {
    let coarse = estimator.cost(c.program.expression());
    if coarse <= PER_CALL_LIMIT.min(budget.left) {
        return coarse;
    }
    coarse.min(estimator.refined_cost(c.program.expression()))
}

/// What an evaluation gave.
enum Evaluated {
    Bool(bool),
    String(String),
    Other(String),
    Error(cel::ExecutionError),
    Panicked,
}

fn run(c: &Compiled, ctx: &mut cel::Context<'_, '_>) -> Evaluated {
    eval::register(ctx, &c.patterns);
    let ctx = &*ctx;
    let expr = &c.evaluated;
    let result =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(
            || match cel::Value::resolve_val(expr, ctx) {
                Ok(v) => {
                    if let Some(b) = v.downcast_ref::<CelBool>() {
                        Evaluated::Bool(*b.inner())
                    } else if let Some(s) = v.downcast_ref::<CelString<'_>>() {
                        Evaluated::String(s.inner().to_string())
                    } else {
                        Evaluated::Other(v.get_type().name().to_string())
                    }
                }
                Err(e) => Evaluated::Error(e),
            },
        ));
    result.unwrap_or(Evaluated::Panicked)
}

/// Evaluates the rules of one node on `value` (and `old`, for transition rules), charging
/// `budget`; the violations as (path suffix from `fieldPath`, description). `ty` is the node's
/// schema type, as upstream's messages name it.
pub fn evaluate(
    rules: &[Arc<Rule>],
    ty: &str,
    value: &Value,
    old: Option<&Value>,
    budget: &mut Budget,
) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut applicable = rules.iter().filter(|r| !r.transition || old.is_some());
    let Some(first) = applicable.next() else {
        return out;
    };
    if budget.stopped {
        return out;
    }
    let value_type = crate::custom::object::type_name(value);
    let out_of_budget = format!(
        "Invalid value: {ty:?}: validation failed due to running out of cost budget, no further validation rules will be run"
    );
    if budget.left == 0 {
        budget.stopped = true;
        out.push((String::new(), out_of_budget));
        return out;
    }
    let deadline = crate::store::deadline();
    let mut ctx = cel::Context::with_env(ENV.clone());
    ctx.add_variable_as_val("self", eval::to_val(value));
    if let Some(o) = old {
        ctx.add_variable_as_val("oldSelf", eval::to_val(o));
    }
    let mut estimator = cost::Estimator::of_values(value, old);
    for rule in std::iter::once(first).chain(applicable) {
        if deadline.is_some_and(|d| std::time::Instant::now() >= d) {
            budget.stopped = true;
            out.push((
                String::new(),
                format!(
                    "Invalid value: {ty:?}: operation interrupted evaluating rule: {}: the request's deadline passed, no further validation rules will be run",
                    rule.described()
                ),
            ));
            break;
        }
        let bound = bound(&mut estimator, &rule.compiled, budget);
        let per_call = format!(
            "Invalid value: {ty:?}: 'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: {}",
            rule.described()
        );
        if let Err(m) = budget.charge(bound, per_call, &out_of_budget) {
            out.push((String::new(), m));
            break;
        }
        match run(&rule.compiled, &mut ctx) {
            Evaluated::Bool(true) => {}
            Evaluated::Bool(false) => {
                let at = rule.field_path.clone().unwrap_or_default();
                let message = match message(rule, &mut ctx, &mut estimator, ty, budget) {
                    Ok(m) => m,
                    Err(e) => {
                        out.push((at, e));
                        break;
                    }
                };
                let described = match rule.reason.as_deref() {
                    Some("FieldValueForbidden") => format!("Forbidden: {message}"),
                    Some("FieldValueRequired") => format!("Required value: {message}"),
                    Some("FieldValueDuplicate") => format!("Duplicate value: {message}"),
                    _ => format!("Invalid value: {value_type:?}: {message}"),
                };
                out.push((at, described));
            }
            Evaluated::String(_) => out.push((
                String::new(),
                format!(
                    "Invalid value: {value_type:?}: rule {:?} did not evaluate to a boolean: string",
                    rule.rule
                ),
            )),
            Evaluated::Other(t) => out.push((
                String::new(),
                format!(
                    "Invalid value: {value_type:?}: rule {:?} did not evaluate to a boolean: {t}",
                    rule.rule
                ),
            )),
            Evaluated::Error(e) => out.push((
                String::new(),
                format!(
                    "Invalid value: {value_type:?}: {:?}: error evaluating the rule: {e}",
                    rule.rule
                ),
            )),
            Evaluated::Panicked => out.push((
                String::new(),
                format!(
                    "Invalid value: {value_type:?}: {:?}: the rule could not be evaluated",
                    rule.rule
                ),
            )),
        }
    }
    out
}

/// The message of a failed rule: its `messageExpression`'s, else its `message`, else
/// upstream's default; an error (which stops evaluation) when the expression may not run.
fn message(
    rule: &Rule,
    ctx: &mut cel::Context<'_, '_>,
    estimator: &mut cost::Estimator<'_>,
    ty: &str,
    budget: &mut Budget,
) -> Result<String, String> {
    let fallback = || {
        rule.message
            .clone()
            .filter(|m| !m.trim().is_empty())
            .unwrap_or_else(|| format!("failed rule: {}", rule.rule))
    };
    let Some(m) = &rule.message_compiled else {
        return Ok(fallback());
    };
    let source = rule.message_expression.as_deref().unwrap_or_default();
    let bound = bound(estimator, m, budget);
    let per_call = format!(
        "Invalid value: {ty:?}: no further validation rules will be run due to call cost exceeds limit for messageExpression: {source:?}"
    );
    let out_of_budget = format!(
        "Invalid value: {ty:?}: messageExpression evaluation failed due to running out of cost budget, no further validation rules will be run"
    );
    budget.charge(bound, per_call, &out_of_budget)?;
    Ok(match run(m, ctx) {
        Evaluated::String(s) => {
            let s = s.trim();
            if s.is_empty() || s.len() > MAX_MESSAGE_BYTES || s.contains(['\n', '\r']) {
                fallback()
            } else {
                s.to_string()
            }
        }
        _ => fallback(),
    })
}
