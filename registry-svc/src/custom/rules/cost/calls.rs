//! The costs of calls (cel-go's `functionCost` with the Kubernetes library's
//! `EstimateCallCost`), and the shapes of their results.

use std::sync::Arc;

use cel::common::ast::{CallExpr, IdedExpr, operators};

use super::{
    super::shape::{Bound, factor, kind, union},
    Estimator, Shape, add, hundredth, lit_str, mul, tenth,
};

impl<'v> Estimator<'v> {
    pub(super) fn call(&mut self, call: &CallExpr) -> (u64, Shape<'v>) {
        let name = call.func_name.as_str();
        // The operands: the target of a receiver call first.
        let operands: Vec<&IdedExpr> = call
            .target
            .iter()
            .map(|t| t.as_ref())
            .chain(call.args.iter())
            .collect();
        match (name, operands.as_slice()) {
            (operators::LOGICAL_AND | operators::LOGICAL_OR, [a, b]) => {
                let (ca, _) = self.estimate(a);
                let (cb, _) = self.estimate(b);
                return (add(ca, cb), Self::scalar());
            }
            (operators::CONDITIONAL, [c, t, f]) => {
                let (cc, _) = self.estimate(c);
                let (ct, st) = self.estimate(t);
                let (cf, sf) = self.estimate(f);
                let s = self.union(&st, &sf);
                return (add(cc, ct.max(cf)), s);
            }
            _ => {}
        }
        let mut args_cost = 0u64;
        let mut shapes = Vec::with_capacity(operands.len());
        for o in &operands {
            let (c, s) = self.estimate(o);
            args_cost = add(args_cost, c);
            shapes.push(s);
        }
        let (mut own, shape) = self.call_cost(name, call.target.is_some(), &operands, &shapes);
        if self.runtime() {
            own = add(own, self.error_copies(name, &shapes));
        }
        (add(args_cost, own), shape)
    }

    /// What the crate copies to describe an error `name` may raise on these operands: it
    /// converts mismatched operands into values for the message (`1 < self.list`,
    /// `self.list + 1`, a list indexed by a string, a map by a list), and `||`, `&&` or a
    /// comprehension may absorb the error and go on. Nothing when the kinds rule it out.
    fn error_copies(&mut self, name: &str, shapes: &[Shape<'v>]) -> u64 {
        const NOT_A_KEY: u8 = kind::LIST | kind::MAP | kind::BYTES;
        let [a, b] = shapes else {
            return 0;
        };
        let (ka, kb) = (self.kinds(a), self.kinds(b));
        let scalars = (ka | kb) & !kind::SCALAR == 0;
        let same_text = ka == kb && (ka == kind::STRING || ka == kind::BYTES);
        let both = |e: &mut Self| add(e.converted(a), e.converted(b));
        match name {
            operators::ADD if scalars || same_text || (ka == kind::LIST && kb == kind::LIST) => 0,
            operators::ADD
            | operators::SUBSTRACT
            | operators::MULTIPLY
            | operators::DIVIDE
            | operators::MODULO
                if !scalars =>
            {
                both(self)
            }
            operators::LESS
            | operators::LESS_EQUALS
            | operators::GREATER
            | operators::GREATER_EQUALS
                if !scalars && !same_text =>
            {
                both(self)
            }
            operators::INDEX | operators::OPT_INDEX => {
                let mut c = 0;
                if ka & kind::LIST != 0 && kb & !kind::SCALAR != 0 {
                    c = add(c, both(self));
                }
                if ka & kind::MAP != 0 && kb & NOT_A_KEY != 0 {
                    c = add(c, self.converted(b));
                }
                c
            }
            operators::IN if kb & kind::MAP != 0 && ka & NOT_A_KEY != 0 => self.converted(a),
            _ => 0,
        }
    }

    /// The cost of the call itself (its operands aside) and the shape of its result.
    fn call_cost(
        &mut self,
        name: &str,
        receiver: bool,
        operands: &[&IdedExpr],
        shapes: &[Shape<'v>],
    ) -> (u64, Shape<'v>) {
        let runtime = self.runtime();
        match (name, shapes) {
            ("dyn", [x]) if !receiver => (1, x.clone()),
            (operators::ADD, [a, b]) => self.add(a, b),
            (operators::EQUALS | operators::NOT_EQUALS, [a, b]) => {
                let mut cost = tenth(self.size(a).min(self.size(b)));
                if runtime {
                    // The crate compares lists and maps element by element.
                    let n = self.weight(a).min(self.weight(b));
                    cost = add(cost, hundredth(n));
                }
                (cost, Self::scalar())
            }
            (
                operators::LESS
                | operators::LESS_EQUALS
                | operators::GREATER
                | operators::GREATER_EQUALS,
                [a, b],
            ) => {
                // Strings and bytes are compared by a traversal, anything else in one step.
                let kinds = self.kinds(a) | self.kinds(b);
                let mut cost = 0;
                if kinds & (kind::STRING | kind::BYTES) != 0 {
                    cost = tenth(self.size(a).min(self.size(b)));
                }
                if kinds & !(kind::STRING | kind::BYTES) != 0 {
                    cost = cost.max(1);
                }
                (cost, Self::scalar())
            }
            (operators::IN, [x, container]) => {
                let k = self.kinds(container);
                let mut cost = if k & kind::LIST != 0 {
                    self.size(container)
                } else {
                    1
                };
                if runtime && k & kind::LIST != 0 {
                    let each = self.weight(x);
                    let all = self.weight(container);
                    cost = add(cost, hundredth(mul(each, self.size(container)).min(all)));
                }
                if runtime && k & kind::MAP != 0 {
                    // The key is hashed.
                    cost = add(cost, hundredth(self.byte_len(x)));
                }
                (cost, Self::scalar())
            }
            ("matches", [s, p]) => {
                let text = factor(add(self.size(s), 1), 1, 10);
                let pattern = factor(self.size(p), 1, 4);
                let mut cost = mul(text, pattern);
                if runtime && lit_str(operands[1]).is_none() {
                    // A pattern known only now is compiled now.
                    cost = add(cost, self.size(p));
                }
                (cost, Self::scalar())
            }
            ("contains", [s, sub]) if receiver => (
                mul(tenth(self.size(s)), tenth(self.size(sub))),
                Self::scalar(),
            ),
            ("startsWith" | "endsWith", [_, prefix]) if receiver => {
                (tenth(self.size(prefix)), Self::scalar())
            }
            ("string", [x]) => self.conversion_to_string(x),
            ("bytes", [x]) => {
                let k = self.kinds(x);
                if k & kind::STRING != 0 {
                    let size = self.size(x);
                    let bytes = if runtime {
                        self.byte_len(x).min(mul(size, 4))
                    } else {
                        mul(size, 4)
                    };
                    let cost = if runtime { tenth(bytes) } else { tenth(size) };
                    (cost, Shape::Bound(Bound::bytes(bytes)))
                } else {
                    (1, x.clone())
                }
            }
            (
                "size"
                | "int"
                | "uint"
                | "double"
                | "bool"
                | "type"
                | "hasValue"
                | operators::LOGICAL_NOT
                | operators::NEGATE
                | operators::NOT_STRICTLY_FALSE
                | operators::SUBSTRACT
                | operators::MULTIPLY
                | operators::DIVIDE
                | operators::MODULO,
                _,
            ) => {
                let mut cost = 1;
                if runtime
                    && matches!(name, "size" | "int" | "uint" | "double" | "bool")
                    && let [x] = shapes
                    && self.kinds(x) & kind::STRING != 0
                {
                    // Parsing a string, or counting its characters, reads it.
                    cost = add(cost, hundredth(self.byte_len(x)));
                }
                (cost, Self::scalar())
            }
            (operators::INDEX | operators::OPT_INDEX, [container, key]) => {
                let mut cost = 1;
                if runtime && self.kinds(container) & kind::MAP != 0 {
                    // The key is hashed.
                    cost = add(cost, hundredth(self.byte_len(key)));
                }
                (cost, self.indexed(container, operands[1]))
            }
            (operators::OPT_SELECT, [operand, _]) => match lit_str(operands[1]) {
                Some(f) => (1, self.field(operand, f)),
                None => (1, Self::scalar()),
            },
            _ => {
                // Anything else returns one of its operands at most (optional.of, value, or,
                // orValue), or fails: each may be copied into the result.
                let mut out: Option<Shape<'v>> = None;
                let mut cost = 1u64;
                for s in shapes {
                    if runtime {
                        cost = add(cost, self.copy(s));
                    }
                    out = Some(match out {
                        Some(o) => self.union(&o, s),
                        None => s.clone(),
                    });
                }
                (cost, out.unwrap_or_else(Self::scalar))
            }
        }
    }

    /// `a + b`: numbers, strings, bytes or lists, as far as the shapes tell.
    fn add(&mut self, a: &Shape<'v>, b: &Shape<'v>) -> (u64, Shape<'v>) {
        let kinds = self.kinds(a) | self.kinds(b);
        let (sa, sb) = (self.size(a), self.size(b));
        let mut cost = 0u64;
        let mut out: Option<Arc<Bound>> = None;
        let mut join = |b: Arc<Bound>| {
            out = Some(match out.take() {
                Some(o) => union(&o, &b),
                None => b,
            })
        };
        if kinds & (kind::STRING | kind::BYTES) != 0 {
            // Both operands are copied into a new string.
            cost = cost.max(tenth(add(sa, sb)));
            let bytes = add(self.byte_len(a), self.byte_len(b));
            if kinds & kind::STRING != 0 {
                join(Bound::string(add(sa, sb), bytes, true));
            }
            if kinds & kind::BYTES != 0 {
                join(Bound::bytes(bytes));
            }
        }
        if kinds & kind::LIST != 0 {
            let mut c = 1;
            if self.runtime() {
                // The crate copies both lists into a new one.
                c = add(c, add(self.copy(a), self.copy(b)));
            }
            cost = cost.max(c);
            let (ba, bb) = (self.bound(a), self.bound(b));
            let items = match (&ba.items, &bb.items) {
                (Some(x), Some(y)) => Some(union(x, y)),
                (Some(x), None) | (None, Some(x)) => Some(x.clone()),
                (None, None) => None,
            };
            join(Bound::list(add(sa, sb), items));
        }
        if kinds & (kind::SCALAR | kind::MAP) != 0 {
            cost = cost.max(1);
            join(Bound::scalar());
        }
        (cost, Shape::Bound(out.unwrap_or_else(Bound::scalar)))
    }

    /// `string(x)`.
    fn conversion_to_string(&mut self, x: &Shape<'v>) -> (u64, Shape<'v>) {
        let k = self.kinds(x);
        if !self.runtime() {
            // Upstream knows the size of a conversion of bytes only.
            return if k == kind::BYTES {
                (tenth(self.size(x)), x.clone())
            } else if k == kind::STRING {
                (1, x.clone())
            } else {
                (1, Shape::Bound(Bound::unknown()))
            };
        }
        let mut out: Option<Shape<'v>> = None;
        let mut cost = 1u64;
        if k & kind::STRING != 0 {
            // string(s) is s itself.
            out = Some(x.clone());
        }
        if k & kind::BYTES != 0 {
            let n = self.size(x);
            cost = add(cost, tenth(n));
            let s = Shape::Bound(Bound::string(n, n, true));
            out = Some(match out {
                Some(o) => self.union(&o, &s),
                None => s,
            });
        }
        if k & !(kind::STRING | kind::BYTES) != 0 {
            // The longest number Rust prints (a double without exponent) is ~330 characters.
            let s = Shape::Bound(Bound::string(400, 400, true));
            out = Some(match out {
                Some(o) => self.union(&o, &s),
                None => s,
            });
        }
        (cost, out.unwrap_or_else(Self::scalar))
    }
}
