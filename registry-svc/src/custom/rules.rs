//! `x-kubernetes-validations`: CEL rules of a custom kind's schema (upstream's
//! `pkg/apiserver/schema/cel`), compiled once per served version with the `cel` crate and
//! evaluated on every write, with `self` the value at the rule's node and `oldSelf` its value
//! before an update (transition rules, which are skipped on create).
//!
//! **Cost bound.** The `cel` crate counts no cost, so we bound it ourselves, before evaluating:
//! a rule's cost is estimated as `n^(k+1)`, where `n` is the number of JSON nodes in `self`
//! (and `oldSelf`) and `k` the number of comprehension macros in the rule (`all`, `exists`,
//! `exists_one`, `map`, `filter`: each may walk `self` once per element of an enclosing one).
//! A rule whose estimate passes [`PER_CALL_LIMIT`] is not run and fails the write; all rules of
//! one write share [`PER_REQUEST_BUDGET`], upstream's two figures. Evaluation is otherwise
//! linear in what it reads (Rust's `regex` for `matches()` runs in linear time), so no rule can
//! stall the service. Rules themselves are at most [`MAX_RULE_BYTES`] long.

use std::sync::Arc;

use serde_json::Value;

/// Upstream's per-call CEL cost limit.
pub const PER_CALL_LIMIT: u64 = 1_000_000;
/// Upstream's per-request budget (`RuntimeCELCostBudget`).
pub const PER_REQUEST_BUDGET: u64 = 10_000_000;
/// Longest rule or message expression accepted.
pub const MAX_RULE_BYTES: usize = 4096;

/// One compiled rule.
pub struct Rule {
    /// The expression, as written.
    pub rule: String,
    /// `message`.
    pub message: Option<String>,
    /// `fieldPath`, a path below the rule's node (`.spec.x`).
    pub field_path: Option<String>,
    /// `reason`: FieldValueInvalid (default), FieldValueForbidden, FieldValueRequired,
    /// FieldValueDuplicate.
    pub reason: Option<String>,
    program: cel::Program,
    message_program: Option<cel::Program>,
    transition: bool,
    comprehensions: u32,
}

impl Rule {
    /// Whether the rule reads `oldSelf` (a transition rule: run only on updates, and never
    /// ratcheted).
    pub fn transition(&self) -> bool {
        self.transition
    }
}

impl std::fmt::Debug for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rule").field("rule", &self.rule).finish()
    }
}

/// The cost left for one write's rules.
#[derive(Debug)]
pub struct Budget {
    left: u64,
}

impl Default for Budget {
    fn default() -> Self {
        Self {
            left: PER_REQUEST_BUDGET,
        }
    }
}

fn comprehensions(source: &str) -> u32 {
    ["all(", "exists(", "exists_one(", "map(", "filter("]
        .iter()
        .map(|m| source.matches(&format!(".{m}")).count() as u32)
        .sum()
}

fn compile_one(source: &str) -> Result<cel::Program, String> {
    if source.len() > MAX_RULE_BYTES {
        return Err(format!("must be at most {MAX_RULE_BYTES} bytes"));
    }
    // The parser may panic on some inputs it does not expect; a definition must never take
    // the service down.
    let source = source.to_string();
    std::panic::catch_unwind(move || cel::Program::compile(&source))
        .map_err(|_| "compilation failed".to_string())?
        .map_err(|e| format!("compilation failed: {e}"))
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
        let program = match compile_one(&rule) {
            Ok(p) => p,
            Err(e) => {
                problems.push((i, "rule", format!("Invalid value: {rule:?}: {e}")));
                continue;
            }
        };
        let message_program = match text("messageExpression") {
            Some(m) => match compile_one(&m) {
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
        let transition = program.references().has_variable("oldSelf");
        out.push(Arc::new(Rule {
            comprehensions: comprehensions(&rule),
            message: text("message"),
            field_path: text("fieldPath"),
            reason: text("reason"),
            rule,
            program,
            message_program,
            transition,
        }));
    }
    if problems.is_empty() {
        Ok(out)
    } else {
        Err(problems)
    }
}

/// A JSON value as CEL sees it (integers as `int`, as Kubernetes' CEL does).
fn to_cel(v: &Value) -> cel::Value {
    match v {
        Value::Null => cel::Value::Null,
        Value::Bool(b) => cel::Value::Bool(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => cel::Value::Int(i),
            None => cel::Value::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => cel::Value::String(Arc::new(s.clone())),
        Value::Array(a) => cel::Value::List(Arc::new(a.iter().map(to_cel).collect())),
        Value::Object(m) => {
            let map: std::collections::HashMap<cel::objects::Key, cel::Value> = m
                .iter()
                .map(|(k, v)| (cel::objects::Key::String(Arc::new(k.clone())), to_cel(v)))
                .collect();
            cel::Value::Map(cel::objects::Map { map: Arc::new(map) })
        }
    }
}

fn nodes(v: &Value) -> u64 {
    match v {
        Value::Array(a) => 1 + a.iter().map(nodes).sum::<u64>(),
        Value::Object(m) => 1 + m.values().map(nodes).sum::<u64>(),
        _ => 1,
    }
}

/// How a rule went.
#[derive(Debug, PartialEq)]
pub enum Outcome {
    /// It held (or was skipped: a transition rule on create).
    Pass,
    /// It failed: the violation's path suffix (from `fieldPath`) and description.
    Fail(String, String),
}

/// Evaluates `rule` with `self_value` (and `old`, for transition rules), charging `budget`.
pub fn evaluate(
    rule: &Rule,
    self_value: &Value,
    old: Option<&Value>,
    budget: &mut Budget,
) -> Outcome {
    if rule.transition && old.is_none() {
        return Outcome::Pass;
    }
    let size = nodes(self_value) + old.map_or(0, nodes);
    let cost = size.saturating_pow(rule.comprehensions + 1);
    let ty = crate::custom::object::type_name(self_value);
    if cost > PER_CALL_LIMIT {
        return Outcome::Fail(
            String::new(),
            format!(
                "Forbidden: operation cancelled: actual cost limit exceeded (rule {:?})",
                rule.rule
            ),
        );
    }
    if cost > budget.left {
        budget.left = 0;
        return Outcome::Fail(
            String::new(),
            "Forbidden: validation failed due to running out of cost budget, no further validation rules will be run".into(),
        );
    }
    budget.left -= cost;
    let mut ctx = cel::Context::default();
    ctx.add_variable_from_value("self", to_cel(self_value));
    if let Some(o) = old {
        ctx.add_variable_from_value("oldSelf", to_cel(o));
    }
    let result =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| rule.program.execute(&ctx)));
    match result {
        Ok(Ok(cel::Value::Bool(true))) => Outcome::Pass,
        Ok(Ok(cel::Value::Bool(false))) => {
            let message = rule
                .message_program
                .as_ref()
                .and_then(|p| match p.execute(&ctx) {
                    Ok(cel::Value::String(s)) if !s.is_empty() => Some(s.to_string()),
                    _ => None,
                })
                .or_else(|| rule.message.clone())
                .unwrap_or_else(|| format!("failed rule: {}", rule.rule));
            let described = match rule.reason.as_deref() {
                Some("FieldValueForbidden") => format!("Forbidden: {message}"),
                Some("FieldValueRequired") => format!("Required value: {message}"),
                Some("FieldValueDuplicate") => format!("Duplicate value: {message}"),
                _ => format!("Invalid value: {ty:?}: {message}"),
            };
            Outcome::Fail(rule.field_path.clone().unwrap_or_default(), described)
        }
        Ok(Ok(other)) => Outcome::Fail(
            String::new(),
            format!(
                "Invalid value: {ty:?}: rule {:?} did not evaluate to a boolean: {other:?}",
                rule.rule
            ),
        ),
        Ok(Err(e)) => Outcome::Fail(
            String::new(),
            format!(
                "Invalid value: {ty:?}: {:?}: error evaluating the rule: {e}",
                rule.rule
            ),
        ),
        Err(_) => Outcome::Fail(
            String::new(),
            format!(
                "Invalid value: {ty:?}: {:?}: the rule could not be evaluated",
                rule.rule
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rule(r: Value) -> Arc<Rule> {
        compile(&[r]).expect("compiles").remove(0)
    }

    #[test]
    fn rules_see_self_and_old_self() {
        let mut b = Budget::default();
        let r = rule(
            json!({"rule": "self.minReplicas <= self.replicas && self.replicas <= self.maxReplicas"}),
        );
        assert_eq!(
            evaluate(
                &r,
                &json!({"minReplicas": 1, "replicas": 3, "maxReplicas": 5}),
                None,
                &mut b
            ),
            Outcome::Pass
        );
        assert_eq!(
            evaluate(&r, &json!({"minReplicas": 4, "replicas": 3, "maxReplicas": 5}), None, &mut b),
            Outcome::Fail(
                String::new(),
                "Invalid value: \"object\": failed rule: self.minReplicas <= self.replicas && self.replicas <= self.maxReplicas".into()
            )
        );
        let immutable = rule(json!({"rule": "self == oldSelf", "message": "Value is immutable"}));
        assert_eq!(
            evaluate(&immutable, &json!("a"), None, &mut b),
            Outcome::Pass,
            "skipped on create"
        );
        assert_eq!(
            evaluate(&immutable, &json!("a"), Some(&json!("b")), &mut b),
            Outcome::Fail(
                String::new(),
                "Invalid value: \"string\": Value is immutable".into()
            )
        );
        let names = rule(
            json!({"rule": "self.all(x, x.matches('^[a-z]+$'))", "messageExpression": "'bad names: ' + string(size(self))", "reason": "FieldValueForbidden", "fieldPath": ".names"}),
        );
        assert_eq!(
            evaluate(&names, &json!(["ab", "cd"]), None, &mut b),
            Outcome::Pass
        );
        assert_eq!(
            evaluate(&names, &json!(["ab", "C"]), None, &mut b),
            Outcome::Fail(".names".into(), "Forbidden: bad names: 2".into())
        );
        let has = rule(json!({"rule": "has(self.foo) && size(self) <= 3"}));
        assert_eq!(
            evaluate(&has, &json!({"foo": 1}), None, &mut b),
            Outcome::Pass
        );
        assert!(matches!(
            evaluate(&has, &json!({"bar": 1}), None, &mut b),
            Outcome::Fail(..)
        ));
    }

    #[test]
    fn bad_rules_are_refused_and_costs_bounded() {
        let problems = compile(&[json!({"rule": "self.x ==="}), json!({"message": "no rule"})])
            .expect_err("invalid");
        assert_eq!(problems.len(), 2);
        assert!(problems[0].2.contains("compilation failed"), "{problems:?}");
        assert_eq!(problems[1].2, "Required value");
        let nested = rule(json!({"rule": "self.all(x, self.all(y, self.all(z, x + y + z >= 0)))"}));
        let big = Value::Array((0..200).map(|i| json!(i)).collect());
        let mut b = Budget::default();
        match evaluate(&nested, &big, None, &mut b) {
            Outcome::Fail(_, m) => assert!(m.contains("cost limit exceeded"), "{m}"),
            Outcome::Pass => panic!("a rule of 200^4 cost must not run"),
        }
        let once = rule(json!({"rule": "self.all(x, x >= 0)"}));
        let mut b = Budget::default();
        let large = Value::Array((0..900).map(|i| json!(i)).collect());
        let mut ran = 0;
        while evaluate(&once, &large, None, &mut b) == Outcome::Pass {
            ran += 1;
            assert!(ran < 100, "the request budget ends it");
        }
        assert!(ran >= 10, "{ran}");
    }
}
