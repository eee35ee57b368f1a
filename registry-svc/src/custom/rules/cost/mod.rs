//! Cost estimation on a rule's parsed expression (cel-go's `checker.Cost` with the Kubernetes
//! library's `CostEstimator`), in upstream's cost units (about 50 ns each).
//!
//! Every node is costed as upstream costs it: an identifier or a selection 1, `has()` 0
//! (Kubernetes' `PresenceTestHasCost(false)`), a literal 0, a list literal 10, a map literal
//! 30, a call 1 unless its cost depends on sizes (string concatenation and comparison a tenth
//! per character, `contains` the product of both lengths, `matches` the string length times
//! the pattern's, `in` the list's length), `&&`, `||` and `?:` only what they evaluate, and a
//! comprehension the cost of its range plus, for every element of the range, the cost of its
//! condition and step (calls are costed in [`calls`]). Sizes come from a [`Shape`]: bounds
//! derived from the schema when a definition is written, the values themselves before an
//! evaluation.
//!
//! [`Mode::Runtime`] adds what the `cel` crate spends beyond cel-go, which upstream's model
//! does not know of: the crate deep-copies a comprehension's elements into its variable, the
//! elements of list and map literals, both operands of a list concatenation and what
//! `optional.of` wraps, compares lists and maps element by element, counts a string's
//! characters for `size()`, hashes a map's key for `in` and `[]`, and converts the operands of
//! an operator they do not fit into values to describe the error. Those are charged by the
//! values' sizes, so that an evaluation's time and memory stay proportional to the cost it was
//! allowed.
//!
//! On the values, a list's items are bounded by the largest of each size among them; a
//! comprehension over a list of the object that this bound makes costly is estimated again
//! item by item, within a bound on the estimator's own work.

mod calls;

use std::{collections::HashMap, sync::Arc};

use cel::common::ast::{ComprehensionExpr, EntryExpr, Expr, IdedExpr, LiteralValue};
use serde_json::Value;

use super::shape::{Bound, factor, json_values, json_weight, kind, union};

/// Which model: upstream's, for the estimate a definition is refused by, or upstream's plus
/// the `cel` crate's copies, for the bound charged before an evaluation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Upstream's estimate (`checker.Cost`).
    Static,
    /// Upstream's estimate with the copies and deep comparisons of the `cel` crate.
    Runtime,
}

/// What the estimator knows of a value: the value itself (a part of `self` or `oldSelf`), or
/// bounds.
#[derive(Clone, Debug)]
pub(crate) enum Shape<'v> {
    /// A part of the object being validated: its sizes are exact.
    Json(&'v Value),
    /// Bounds.
    Bound(Arc<Bound>),
}

/// Estimates expressions with `self` (and `oldSelf`) of known shapes.
pub(crate) struct Estimator<'v> {
    mode: Mode,
    vars: Vec<(String, Shape<'v>)>,
    bounds: HashMap<usize, Arc<Bound>>,
    values: HashMap<usize, u64>,
    weights: HashMap<usize, u64>,
    /// Nodes estimated so far (what refining per item may spend is bounded by it).
    visits: u64,
    /// Whether comprehensions over lists of the object are estimated item by item.
    refining: bool,
}

/// A comprehension over a list of the object whose bound (every item as large as the largest)
/// passes this is estimated again item by item.
const REFINE_ABOVE: u64 = 10_000;
/// Nodes an estimate may visit before it stops refining (the bound it falls back to is the
/// coarser, still sound, one).
const MAX_VISITS: u64 = 100_000;

fn lit_str(e: &IdedExpr) -> Option<&str> {
    match &e.expr {
        Expr::Literal(LiteralValue::String(s)) => Some(s.inner()),
        _ => None,
    }
}

fn add(a: u64, b: u64) -> u64 {
    a.saturating_add(b)
}

fn mul(a: u64, b: u64) -> u64 {
    a.saturating_mul(b)
}

/// A tenth, rounded up: upstream's `StringTraversalCostFactor`, and what each byte the crate
/// copies costs (so that 1,000,000 units allow 10 MB of copies).
fn tenth(x: u64) -> u64 {
    factor(x, 1, 10)
}

/// A hundredth, rounded up: what each byte the crate reads without copying costs (counting
/// characters, hashing, comparing: about half a nanosecond).
fn hundredth(x: u64) -> u64 {
    factor(x, 1, 100)
}

impl<'v> Estimator<'v> {
    /// An estimator of the rules of a schema node whose values `self` (and `oldSelf`) are
    /// bounded by `bound` (upstream's estimate).
    pub(crate) fn of_schema(bound: Arc<Bound>) -> Self {
        let mut e = Self::new(Mode::Static);
        e.vars.push(("self".into(), Shape::Bound(bound.clone())));
        e.vars.push(("oldSelf".into(), Shape::Bound(bound)));
        e
    }

    /// An estimator of the rules evaluated with `self` (and `oldSelf`) these values.
    pub(crate) fn of_values(value: &'v Value, old: Option<&'v Value>) -> Self {
        let mut e = Self::new(Mode::Runtime);
        e.vars.push(("self".into(), Shape::Json(value)));
        if let Some(o) = old {
            e.vars.push(("oldSelf".into(), Shape::Json(o)));
        }
        e
    }

    /// An estimator of expressions evaluated with these variables (admission policies').
    pub(crate) fn of_vars(vars: &[(&str, &'v Value)]) -> Self {
        let mut e = Self::new(Mode::Runtime);
        for (name, value) in vars {
            e.vars.push(((*name).into(), Shape::Json(value)));
        }
        e
    }

    fn new(mode: Mode) -> Self {
        Self {
            mode,
            vars: Vec::new(),
            bounds: HashMap::new(),
            values: HashMap::new(),
            weights: HashMap::new(),
            visits: 0,
            refining: false,
        }
    }

    fn runtime(&self) -> bool {
        self.mode == Mode::Runtime
    }

    /// The cost of evaluating `e`, at most.
    pub(crate) fn cost(&mut self, e: &IdedExpr) -> u64 {
        self.estimate(e).0
    }

    /// [`Self::cost`], with comprehensions over lists of the object that the coarse bound
    /// makes costly estimated again item by item: tighter, and more work (bounded).
    pub(crate) fn refined_cost(&mut self, e: &IdedExpr) -> u64 {
        self.refining = true;
        self.visits = 0;
        let cost = self.estimate(e).0;
        self.refining = false;
        cost
    }

    fn bound(&mut self, s: &Shape<'v>) -> Arc<Bound> {
        match s {
            Shape::Bound(b) => b.clone(),
            Shape::Json(v) => {
                let key = *v as *const Value as usize;
                if let Some(b) = self.bounds.get(&key) {
                    return b.clone();
                }
                let b = Bound::of_json(v);
                self.bounds.insert(key, b.clone());
                b
            }
        }
    }

    fn size(&self, s: &Shape<'v>) -> u64 {
        match s {
            Shape::Json(Value::String(x)) => x.chars().count() as u64,
            Shape::Json(Value::Array(a)) => a.len() as u64,
            Shape::Json(Value::Object(m)) => m.len() as u64,
            Shape::Json(_) => 1,
            Shape::Bound(b) => b.size,
        }
    }

    fn kinds(&self, s: &Shape<'v>) -> u8 {
        match s {
            Shape::Json(Value::String(_)) => kind::STRING,
            Shape::Json(Value::Array(_)) => kind::LIST,
            Shape::Json(Value::Object(_)) => kind::MAP,
            Shape::Json(_) => kind::SCALAR,
            Shape::Bound(b) => b.kinds,
        }
    }

    fn byte_len(&self, s: &Shape<'v>) -> u64 {
        match s {
            Shape::Json(Value::String(x)) => x.len() as u64,
            Shape::Json(_) => 0,
            Shape::Bound(b) => b.bytes,
        }
    }

    /// What a deep comparison of `s` reads, as `Bound::weight` (hundredths of a unit).
    fn weight(&mut self, s: &Shape<'v>) -> u64 {
        match s {
            Shape::Bound(b) => b.weight,
            Shape::Json(v) => {
                let key = *v as *const Value as usize;
                if let Some(n) = self.weights.get(&key) {
                    return *n;
                }
                let n = json_weight(v);
                self.weights.insert(key, n);
                n
            }
        }
    }

    /// What copying `s` costs (the object's strings are borrowed: a box per value).
    fn copy(&mut self, s: &Shape<'v>) -> u64 {
        match s {
            Shape::Bound(b) => b.copy,
            Shape::Json(v) => {
                let key = *v as *const Value as usize;
                if let Some(n) = self.values.get(&key) {
                    return *n;
                }
                let n = json_values(v);
                self.values.insert(key, n);
                n
            }
        }
    }

    /// What converting `s` into a `cel::Value` costs (an error describes its operands so):
    /// a value per node, and its strings' bytes.
    fn converted(&mut self, s: &Shape<'v>) -> u64 {
        add(self.copy(s), hundredth(self.weight(s)))
    }

    fn field(&mut self, s: &Shape<'v>, name: &str) -> Shape<'v> {
        match s {
            Shape::Json(Value::Object(m)) => match m.get(name) {
                Some(v) => Shape::Json(v),
                None => Shape::Bound(Bound::scalar()),
            },
            Shape::Json(_) => Shape::Bound(Bound::scalar()),
            Shape::Bound(b) => Shape::Bound(b.select(name, self.mode == Mode::Static)),
        }
    }

    fn indexed(&mut self, s: &Shape<'v>, key: &IdedExpr) -> Shape<'v> {
        let literal = match &key.expr {
            Expr::Literal(l) => Some(l),
            _ => None,
        };
        match (s, literal) {
            (Shape::Json(Value::Array(a)), Some(LiteralValue::Int(i))) => {
                match usize::try_from(*i.inner()).ok().and_then(|i| a.get(i)) {
                    Some(v) => Shape::Json(v),
                    None => Shape::Bound(Bound::scalar()),
                }
            }
            (Shape::Json(Value::Object(m)), Some(LiteralValue::String(k))) => {
                match m.get(k.inner()) {
                    Some(v) => Shape::Json(v),
                    None => Shape::Bound(Bound::scalar()),
                }
            }
            _ => {
                let b = self.bound(s);
                Shape::Bound(b.indexed(lit_str(key)))
            }
        }
    }

    fn union(&mut self, a: &Shape<'v>, b: &Shape<'v>) -> Shape<'v> {
        if let (Shape::Json(x), Shape::Json(y)) = (a, b)
            && std::ptr::eq(*x, *y)
        {
            return a.clone();
        }
        let (a, b) = (self.bound(a), self.bound(b));
        Shape::Bound(union(&a, &b))
    }

    fn var(&self, name: &str) -> Option<Shape<'v>> {
        self.vars
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, s)| s.clone())
    }

    fn scalar() -> Shape<'v> {
        Shape::Bound(Bound::scalar())
    }

    /// The cost of `e` and the shape of its value.
    fn estimate(&mut self, e: &IdedExpr) -> (u64, Shape<'v>) {
        self.visits += 1;
        match &e.expr {
            Expr::Literal(l) => (0, Shape::Bound(literal(l))),
            Expr::Ident(name) => (1, self.var(name).unwrap_or_else(Self::scalar)),
            Expr::Select(sel) => {
                let (c, operand) = self.estimate(&sel.operand);
                if sel.test {
                    // has(): Kubernetes sets PresenceTestHasCost(false).
                    (c, Self::scalar())
                } else {
                    let f = self.field(&operand, &sel.field);
                    (add(c, 1), f)
                }
            }
            Expr::List(list) => {
                let mut cost = 10u64;
                let mut items: Option<Arc<Bound>> = None;
                for el in &list.elements {
                    let (c, s) = self.estimate(el);
                    cost = add(cost, c);
                    if self.runtime() {
                        // The crate copies each element into the new list.
                        cost = add(cost, self.copy(&s));
                    }
                    let b = self.bound(&s);
                    items = Some(match items {
                        Some(i) => union(&i, &b),
                        None => b,
                    });
                }
                (
                    cost,
                    Shape::Bound(Bound::list(list.elements.len() as u64, items)),
                )
            }
            Expr::Map(map) => {
                let mut cost = 30u64;
                let mut keys: Option<Arc<Bound>> = None;
                let mut values: Option<Arc<Bound>> = None;
                for entry in &map.entries {
                    let EntryExpr::MapEntry(m) = &entry.expr else {
                        continue;
                    };
                    let (ck, k) = self.estimate(&m.key);
                    let (cv, v) = self.estimate(&m.value);
                    cost = add(add(cost, ck), cv);
                    if self.runtime() {
                        // Both are copied into the new map, the key hashed (or, not being a
                        // key, converted for the error).
                        cost = add(cost, add(self.copy(&v), self.copy(&k)));
                        cost = add(cost, hundredth(self.byte_len(&k)));
                        if self.kinds(&k) & (kind::LIST | kind::MAP | kind::BYTES) != 0 {
                            cost = add(cost, self.converted(&k));
                        }
                    }
                    let (k, v) = (self.bound(&k), self.bound(&v));
                    keys = Some(keys.map_or(k.clone(), |x| union(&x, &k)));
                    values = Some(values.map_or(v.clone(), |x| union(&x, &v)));
                }
                let n = map.entries.len() as u64;
                (
                    cost,
                    Shape::Bound(Bound::map(n, keys, values, Default::default(), false)),
                )
            }
            Expr::Struct(s) => {
                let mut cost = 40u64;
                for entry in &s.entries {
                    if let EntryExpr::StructField(f) = &entry.expr {
                        cost = add(cost, self.estimate(&f.value).0);
                    }
                }
                (cost, Self::scalar())
            }
            Expr::Comprehension(c) => self.comprehension(c),
            Expr::Call(call) => self.call(call),
            Expr::Unspecified => (0, Self::scalar()),
        }
    }

    fn comprehension(&mut self, c: &ComprehensionExpr) -> (u64, Shape<'v>) {
        let (c_range, range) = self.estimate(&c.iter_range);
        let (c_init, init) = self.estimate(&c.accu_init);
        let n = self.size(&range);
        let ranged = self.bound(&range);
        let element = ranged.iterated();
        // Copying the elements into the variable, one by one.
        let copies = if !self.runtime() {
            0
        } else {
            match &range {
                Shape::Json(v @ Value::Array(_)) => self.copy(&Shape::Json(v)).saturating_sub(1),
                Shape::Json(Value::Object(m)) => m.len() as u64,
                _ => mul(n, element.copy),
            }
        };
        self.vars.push((c.accu_var.clone(), init.clone()));
        self.vars
            .push((c.iter_var.clone(), Shape::Bound(element.clone())));
        if let Some(v2) = &c.iter_var2 {
            self.vars
                .push((v2.clone(), Shape::Bound(ranged.any_value())));
        }
        let (c_cond, _) = self.estimate(&c.loop_cond);
        let (c_step, step) = self.estimate(&c.loop_step);
        let mut iterations = mul(n, add(c_cond, c_step));
        if self.refining
            && iterations > REFINE_ABOVE
            && c.iter_var2.is_none()
            && let Shape::Json(Value::Array(items)) = &range
            && let Some(refined) = self.per_item(c, items)
        {
            iterations = iterations.min(refined);
        }
        if c.iter_var2.is_some() {
            self.vars.pop();
        }
        self.vars.pop();
        let (c_result, result) = self.estimate(&c.result);
        self.vars.pop();
        let mut cost = add(add(c_range, c_init), c_result);
        cost = add(cost, iterations);
        cost = add(cost, copies);
        let builds_list = matches!(&c.accu_init.expr, Expr::List(l) if l.elements.is_empty());
        if builds_list {
            // map() and filter(): a list of one element per iteration, at most.
            let items = self.bound(&step).items.clone();
            if self.runtime() {
                // The crate copies each appended element once more.
                cost = add(cost, mul(n, items.as_ref().map_or(0, |i| i.copy)));
            }
            (cost, Shape::Bound(Bound::list(n, items)))
        } else {
            (cost, result)
        }
    }
}

impl<'v> Estimator<'v> {
    /// The cost of the iterations of `c` over the object's `items`, each estimated with its own
    /// item (a list of one long string and many short ones is not charged as if all were
    /// long); None when that would take more than [`MAX_VISITS`]. The variable is the last
    /// one bound.
    fn per_item(&mut self, c: &ComprehensionExpr, items: &'v [Value]) -> Option<u64> {
        let var = self.vars.len() - 1;
        let coarse = self.vars[var].1.clone();
        let mut total = 0u64;
        let mut complete = true;
        for item in items {
            if self.visits > MAX_VISITS {
                complete = false;
                break;
            }
            self.vars[var].1 = Shape::Json(item);
            total = add(total, self.estimate(&c.loop_cond).0);
            total = add(total, self.estimate(&c.loop_step).0);
        }
        self.vars[var].1 = coarse;
        complete.then_some(total)
    }
}

/// The shape of a literal.
fn literal(l: &LiteralValue) -> Arc<Bound> {
    match l {
        LiteralValue::String(s) => {
            let s = s.inner();
            Bound::string(s.chars().count() as u64, s.len() as u64, true)
        }
        LiteralValue::Bytes(b) => Bound::bytes(b.inner().len() as u64),
        _ => Bound::scalar(),
    }
}
