//! What a rule is evaluated with: the object's JSON as CEL values that borrow its strings, and
//! `matches()` with patterns compiled once.
//!
//! The `cel` crate's `matches()` compiles its pattern on every call (ten list items with an
//! expensive pattern took seconds). A rule's expression is therefore rewritten when it is
//! compiled: `s.matches('literal')` (and `matches(s, 'literal')`) becomes a call of
//! [`LITERAL`] with the index of the pattern, compiled once with the rule, through
//! `custom::pattern` (so with its size limit; a literal that does not compile refuses the rule,
//! as upstream's `ValidateRegexLiterals`); a pattern known only when the rule runs goes to
//! [`DYNAMIC`], which keeps the last [`CACHED`] patterns of the rule. Both names start with
//! `@`, which no CEL source can spell.

use std::{
    collections::{HashMap, VecDeque},
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
};

use cel::{
    ExecutionError, FunctionContext,
    common::{
        ast::{CallExpr, EntryExpr, Expr, IdedExpr, LiteralValue},
        types::{CelBool, CelDouble, CelInt, CelList, CelMap, CelMapKey, CelNull, CelString},
        value::Val,
    },
};
use serde_json::Value;

/// The function a literal pattern's `matches()` is rewritten to: `@matches(s, index)`.
pub(crate) const LITERAL: &str = "@kubestore_matches";
/// The function a computed pattern's `matches()` is rewritten to: `@matches_dyn(s, pattern)`.
pub(crate) const DYNAMIC: &str = "@kubestore_matches_dyn";
/// Computed patterns kept per rule.
pub(crate) const CACHED: usize = 16;

/// The CEL value of a JSON value, borrowing its strings (integers as `int`, as Kubernetes'
/// CEL does).
pub(crate) fn to_val(v: &Value) -> Box<dyn Val + '_> {
    match v {
        Value::Null => Box::new(CelNull),
        Value::Bool(b) => Box::new(CelBool::from(*b)),
        Value::Number(n) => match n.as_i64() {
            Some(i) => Box::new(CelInt::from(i)),
            None => Box::new(CelDouble::from(n.as_f64().unwrap_or(f64::NAN))),
        },
        Value::String(s) => Box::new(CelString::from(s.as_str())),
        Value::Array(a) => Box::new(CelList::from(
            a.iter().map(to_val).collect::<Vec<Box<dyn Val + '_>>>(),
        )),
        Value::Object(m) => Box::new(CelMap::from(
            m.iter()
                .map(|(k, x)| (CelMapKey::from(k.as_str()), to_val(x)))
                .collect::<HashMap<CelMapKey<'_>, Box<dyn Val + '_>>>(),
        )),
    }
}

/// The compiled patterns of one rule.
#[derive(Debug, Default)]
pub(crate) struct Patterns {
    /// The rule's literal patterns, by index.
    literal: Vec<regex::Regex>,
    /// The last computed patterns, most recent last.
    dynamic: Mutex<VecDeque<(String, Arc<regex::Regex>)>>,
    /// Patterns compiled for the rule so far (tests count the cache's misses with it).
    compiled: AtomicU64,
}

impl Patterns {
    fn compile(&self, pattern: &str) -> Result<regex::Regex, String> {
        self.compiled.fetch_add(1, Ordering::Relaxed);
        crate::custom::pattern::compile(pattern)
    }

    /// Patterns compiled for the rule so far.
    #[cfg(test)]
    pub(crate) fn compiled(&self) -> u64 {
        self.compiled.load(Ordering::Relaxed)
    }

    fn dynamic(&self, pattern: &str) -> Result<Arc<regex::Regex>, String> {
        let mut cache = self.dynamic.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = cache.iter().position(|(p, _)| p == pattern) {
            let hit = cache.remove(i).expect("the position is in range");
            let re = hit.1.clone();
            cache.push_back(hit);
            return Ok(re);
        }
        let re = Arc::new(self.compile(pattern)?);
        if cache.len() >= CACHED {
            cache.pop_front();
        }
        cache.push_back((pattern.to_string(), re.clone()));
        Ok(re)
    }
}

/// `expr` with its `matches()` calls rewritten, and the literal patterns compiled; the
/// problem of a literal that does not compile otherwise.
pub(crate) fn rewrite(expr: &IdedExpr) -> Result<(IdedExpr, Patterns), String> {
    let mut patterns = Patterns::default();
    let mut out = expr.clone();
    let mut literal = Vec::new();
    rewrite_node(&mut out, &patterns, &mut literal)?;
    patterns.literal = literal;
    Ok((out, patterns))
}

fn rewrite_node(
    e: &mut IdedExpr,
    patterns: &Patterns,
    literal: &mut Vec<regex::Regex>,
) -> Result<(), String> {
    match &mut e.expr {
        Expr::Call(call) => {
            if let Some(t) = call.target.as_mut() {
                rewrite_node(t, patterns, literal)?;
            }
            for a in &mut call.args {
                rewrite_node(a, patterns, literal)?;
            }
            // Any other arity is not the standard `matches`: left as written (it fails).
            if call.func_name == "matches" && call.target.iter().count() + call.args.len() == 2 {
                let target = call.target.take();
                let mut operands: Vec<IdedExpr> = target.map(|t| *t).into_iter().collect();
                operands.append(&mut call.args);
                let pattern = match &operands[1].expr {
                    Expr::Literal(LiteralValue::String(p)) => Some(p.inner().to_string()),
                    _ => None,
                };
                *call = match pattern {
                    Some(p) => {
                        let re = patterns
                            .compile(&p)
                            .map_err(|e| format!("invalid matches argument: {e}"))?;
                        literal.push(re);
                        let index = IdedExpr {
                            id: operands[1].id,
                            expr: Expr::Literal(LiteralValue::Int(
                                ((literal.len() - 1) as i64).into(),
                            )),
                        };
                        operands.truncate(1);
                        operands.push(index);
                        CallExpr {
                            func_name: LITERAL.into(),
                            target: None,
                            args: operands,
                        }
                    }
                    None => CallExpr {
                        func_name: DYNAMIC.into(),
                        target: None,
                        args: operands,
                    },
                };
            }
        }
        Expr::Select(s) => rewrite_node(&mut s.operand, patterns, literal)?,
        Expr::List(l) => {
            for x in &mut l.elements {
                rewrite_node(x, patterns, literal)?;
            }
        }
        Expr::Map(m) => {
            for entry in &mut m.entries {
                match &mut entry.expr {
                    EntryExpr::MapEntry(x) => {
                        rewrite_node(&mut x.key, patterns, literal)?;
                        rewrite_node(&mut x.value, patterns, literal)?;
                    }
                    EntryExpr::StructField(f) => rewrite_node(&mut f.value, patterns, literal)?,
                }
            }
        }
        Expr::Struct(s) => {
            for entry in &mut s.entries {
                match &mut entry.expr {
                    EntryExpr::MapEntry(x) => {
                        rewrite_node(&mut x.key, patterns, literal)?;
                        rewrite_node(&mut x.value, patterns, literal)?;
                    }
                    EntryExpr::StructField(f) => rewrite_node(&mut f.value, patterns, literal)?,
                }
            }
        }
        Expr::Comprehension(c) => {
            rewrite_node(&mut c.iter_range, patterns, literal)?;
            rewrite_node(&mut c.accu_init, patterns, literal)?;
            rewrite_node(&mut c.loop_cond, patterns, literal)?;
            rewrite_node(&mut c.loop_step, patterns, literal)?;
            rewrite_node(&mut c.result, patterns, literal)?;
        }
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
    }
    Ok(())
}

fn text<'a>(ftx: &'a FunctionContext<'_, '_>, i: usize) -> Result<&'a str, ExecutionError> {
    let v = ftx
        .args
        .get(i)
        .ok_or_else(|| ExecutionError::invalid_argument_count(2, ftx.args.len()))?;
    v.downcast_ref::<CelString<'_>>()
        .map(|s| s.inner())
        .ok_or_else(|| {
            ExecutionError::no_such_overload(
                "matches",
                ftx.args
                    .iter()
                    .map(|a| a.get_type().name().to_owned())
                    .collect(),
            )
        })
}

/// Registers the rewritten `matches()` of a rule whose patterns are `patterns` in `ctx`.
pub(crate) fn register(ctx: &mut cel::Context<'_, '_>, patterns: &Arc<Patterns>) {
    let p = patterns.clone();
    let literal = move |ftx: &FunctionContext<'_, '_>| -> Result<bool, ExecutionError> {
        let s = text(ftx, 0)?;
        let index = ftx
            .args
            .get(1)
            .and_then(|v| v.downcast_ref::<CelInt>())
            .and_then(|i| usize::try_from(*i.inner()).ok())
            .and_then(|i| p.literal.get(i))
            .ok_or_else(|| ExecutionError::function_error("matches", "no such pattern"))?;
        Ok(index.is_match(s))
    };
    let p = patterns.clone();
    let dynamic = move |ftx: &FunctionContext<'_, '_>| -> Result<bool, ExecutionError> {
        let s = text(ftx, 0)?;
        let pattern = text(ftx, 1)?;
        let re = p.dynamic(pattern).map_err(|e| {
            ExecutionError::function_error("matches", format!("'{pattern}' not a valid regex: {e}"))
        })?;
        Ok(re.is_match(s))
    };
    // Neither name can be an overload of the environment: they cannot be spelt in CEL.
    let _ = ctx.add_function(LITERAL, literal);
    let _ = ctx.add_function(DYNAMIC, dynamic);
}
