//! The costs of calls (cel-go's `functionCost` with the Kubernetes library's
//! `EstimateCallCost`), and the shapes of their results.

use std::sync::Arc;

use cel::common::ast::{CallExpr, Expr, IdedExpr, operators};

use super::{
    super::shape::{Bound, factor, kind, union},
    Estimator, Shape, add, hundredth, lit_str, mul, tenth,
};

/// The namespaces of the environment's functions (`sets.contains`, ...).
const NAMESPACES: [&str; 3] = ["sets", "ip", "strings"];

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
        // Each operand is estimated once (an estimate per interpretation below would double
        // at each level of nesting).
        let mut costs = Vec::with_capacity(operands.len());
        let mut shapes = Vec::with_capacity(operands.len());
        for o in &operands {
            let (c, s) = self.estimate(o);
            costs.push(c);
            shapes.push(s);
        }
        // `sets.contains(a, b)`, `ip.isCanonical(s)` and `strings.quote(s)` parse as calls on
        // an identifier: the namespace's functions. When a variable (a macro's, say) has that
        // name the crate may call either, the method when one applies to the variable's value
        // and the function otherwise: both are estimated and the dearer one charged.
        if let Some(Expr::Ident(ns)) = call.target.as_deref().map(|t| &t.expr)
            && NAMESPACES.contains(&ns.as_str())
        {
            let qualified = format!("{ns}.{name}");
            let (cf, sf) = self.apply(&qualified, false, &operands[1..], &costs[1..], &shapes[1..]);
            if self.var(ns).is_none() {
                return (cf, sf);
            }
            let (cm, sm) = self.apply(name, true, &operands, &costs, &shapes);
            let shape = self.union(&sf, &sm);
            return (cf.max(cm), shape);
        }
        self.apply(name, call.target.is_some(), &operands, &costs, &shapes)
    }

    /// The cost of calling `name` on operands already estimated (`costs`, `shapes`), theirs
    /// included, and the result's shape.
    fn apply(
        &mut self,
        name: &str,
        receiver: bool,
        operands: &[&IdedExpr],
        costs: &[u64],
        shapes: &[Shape<'v>],
    ) -> (u64, Shape<'v>) {
        let args_cost = costs.iter().fold(0u64, |a, c| add(a, *c));
        let (mut own, shape) = self.call_cost(name, receiver, operands, shapes);
        if self.runtime() {
            own = add(own, self.error_copies(name, shapes));
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
            // Kubernetes' lists library: one traversal of the list (upstream's
            // `traversalCost`).
            ("isSorted" | "sum" | "min" | "max" | "includes", [list, ..]) if receiver => {
                self.list_call(name, list, shapes.get(1))
            }
            ("indexOf" | "lastIndexOf", [target, needle, ..]) if receiver => {
                // A list's (Kubernetes' lists library) or a string's (the strings extension).
                let k = self.kinds(target);
                let mut cost = 0;
                if k & kind::LIST != 0 {
                    cost = self.list_call(name, target, Some(needle)).0;
                }
                if k & kind::STRING != 0 {
                    cost = cost.max(self.string_search(target, needle));
                }
                (cost, Self::scalar())
            }
            // The strings extension.
            ("charAt", [s, _]) if receiver => {
                let cost = if runtime {
                    add(1, tenth(self.size(s)))
                } else {
                    1
                };
                (cost, Self::string_of(1, 4))
            }
            ("lowerAscii" | "upperAscii" | "trim" | "substring" | "reverse", [s, ..])
                if receiver =>
            {
                // A traversal, and a result no longer than the string.
                let (n, b) = (self.size(s), self.byte_len(s));
                let cost = if name == "reverse" && !runtime {
                    1
                } else {
                    tenth(n)
                };
                (cost, Self::string_of(n, b))
            }
            ("replace", [s, from, to, ..]) if receiver => self.replace(operands, s, from, to),
            ("split", [s, _, ..]) if receiver => {
                let (n, b) = (self.size(s), self.byte_len(s));
                // At most a part per character and one more (an empty separator splits
                // between characters), or the literal limit.
                let mut parts = add(n, 1);
                if let Some(limit) = operands.get(2).and_then(|l| lit_int(l))
                    && let Ok(limit) = u64::try_from(limit)
                {
                    parts = parts.min(limit);
                }
                let mut cost = factor(n, 2, 10);
                if runtime {
                    // Each part is copied into a string of its own.
                    cost = add(cost, add(parts, tenth(b)));
                }
                (
                    cost,
                    Shape::Bound(Bound::list(parts, Some(Bound::string(n, b, true)))),
                )
            }
            ("join", [list, sep @ ..]) if receiver => self.join(list, sep.first()),
            ("strings.quote", [s]) if !receiver => {
                let (n, b) = (self.size(s), self.byte_len(s));
                let cost = if runtime { add(1, tenth(b)) } else { 1 };
                (cost, Self::string_of(add(mul(n, 2), 2), add(mul(b, 2), 2)))
            }
            ("format", [f, list]) if receiver => {
                // Each argument is printed once at most: a value in at most ~420 characters
                // (a double with 100 digits of precision), a string's byte in two (`%x`), so
                // in at most 11 times its weight (50 per value, 1 per byte).
                let printed = add(self.byte_len(f), mul(self.weight(list), 11));
                let cost = if runtime {
                    add(tenth(printed), hundredth(self.weight(list)))
                } else {
                    1
                };
                (cost, Self::string_of(printed, printed))
            }
            // Kubernetes' regex library: as `matches`.
            ("find" | "findAll", [s, p, ..]) if receiver => {
                let (n, b) = (self.size(s), self.byte_len(s));
                let text = factor(add(n, 1), 1, 10);
                let pattern = factor(self.size(p), 1, 4);
                let mut cost = mul(text, pattern);
                if runtime {
                    // The pattern may be compiled for the call (the thread keeps a few).
                    cost = add(cost, self.size(p));
                }
                if name == "find" {
                    return (cost, Self::string_of(n, b));
                }
                // A match per character and one more (empty matches), or the literal limit.
                let mut found = add(n, 1);
                if let Some(limit) = operands.get(2).and_then(|l| lit_int(l))
                    && let Ok(limit) = u64::try_from(limit)
                {
                    found = found.min(limit);
                }
                if runtime {
                    cost = add(cost, add(found, tenth(b)));
                }
                (
                    cost,
                    Shape::Bound(Bound::list(found, Some(Bound::string(n, b, true)))),
                )
            }
            // Kubernetes' URL library: parsing is a traversal; a URL is sized as its string,
            // which bounds what its accessors return.
            ("url", [s]) if !receiver => {
                let (n, b) = (self.size(s), self.byte_len(s));
                (tenth(n), Self::string_of(n, b))
            }
            ("getScheme" | "getHost" | "getHostname" | "getPort", [u]) if receiver => {
                let (n, b) = (self.size(u), self.byte_len(u));
                let cost = if runtime { add(1, tenth(b)) } else { 1 };
                (cost, Self::string_of(n, b))
            }
            ("getEscapedPath", [u]) if receiver => {
                // Escaping writes a byte as three characters at most.
                let (n, b) = (mul(self.size(u), 3), mul(self.byte_len(u), 3));
                let cost = if runtime { add(1, tenth(b)) } else { 1 };
                (cost, Self::string_of(n, b))
            }
            ("getQuery", [u]) if receiver => {
                let (n, b) = (self.size(u), self.byte_len(u));
                let cost = if runtime {
                    add(add(1, n), factor(b, 2, 10))
                } else {
                    1
                };
                let text = Bound::string(n, b, true);
                let values = Bound::list(add(n, 1), Some(text.clone()));
                (
                    cost,
                    Shape::Bound(Bound::map(
                        add(n, 1),
                        Some(text),
                        Some(values),
                        Default::default(),
                        false,
                    )),
                )
            }
            // Parsing a string (URLs, quantities, IPs, CIDRs) is a traversal.
            ("isURL" | "quantity" | "isQuantity" | "cidr" | "isIP" | "isCIDR", [s])
                if !receiver =>
            {
                (tenth(self.size(s)), Self::scalar())
            }
            ("ip", [s]) if !receiver => (tenth(self.size(s)), Self::scalar()),
            // Parsing, and comparing the address written again with the string.
            ("ip.isCanonical", [s]) if !receiver => (factor(self.size(s), 2, 10), Self::scalar()),
            // Comparing two addresses of at most 16 bytes, after parsing a string.
            ("containsIP" | "containsCIDR", [_, other]) if receiver => {
                let mut cost = if name == "containsIP" { 4 } else { 7 };
                if self.kinds(other) & kind::STRING != 0 {
                    cost = add(cost, tenth(self.size(other)));
                }
                (cost, Self::scalar())
            }
            // Accessors, quantity arithmetic and the authorizer's builders: nominal.
            (
                "ip"
                | "masked"
                | "prefixLength"
                | "family"
                | "isUnspecified"
                | "isLoopback"
                | "isLinkLocalMulticast"
                | "isLinkLocalUnicast"
                | "isGlobalUnicast"
                | "sign"
                | "asInteger"
                | "isInteger"
                | "asApproximateFloat"
                | "isGreaterThan"
                | "isLessThan"
                | "compareTo"
                | "add"
                | "sub"
                | "allowed"
                | "errored"
                | "error",
                _,
            ) => (1, Self::scalar()),
            // The authorizer's builders copy their strings, and the check they build so far
            // (each is a new value): charged by what they hold, which their result carries
            // on to whatever copies or compares it.
            (
                "serviceAccount" | "path" | "group" | "resource" | "subresource" | "namespace"
                | "name",
                _,
            ) if receiver => {
                let bytes = shapes.iter().fold(0u64, |b, s| add(b, self.byte_len(s)));
                let cost = if runtime { add(1, tenth(bytes)) } else { 1 };
                (cost, Self::string_of(bytes, bytes))
            }
            // What an authorizer gives as its reason: short, whichever authorizer.
            ("reason", _) if receiver => (1, Self::string_of(1024, 4096)),
            // An authorization check: upstream allows two per expression.
            ("check", _) if receiver => (350_000, Self::scalar()),
            // The sets extension: every item of one list looked for in the other.
            ("sets.contains" | "sets.intersects" | "sets.equivalent", [a, b]) if !receiver => {
                let (na, nb) = (self.size(a), self.size(b));
                let mut cost = mul(na, nb);
                if runtime {
                    // Each comparison reads both items.
                    let reads = add(mul(na, self.weight(b)), mul(nb, self.weight(a)));
                    cost = add(cost, hundredth(reads));
                }
                if name == "sets.equivalent" {
                    cost = mul(cost, 2);
                }
                (cost, Self::scalar())
            }
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

    /// A string of at most `chars` characters and `bytes` bytes, owned.
    fn string_of(chars: u64, bytes: u64) -> Shape<'v> {
        Shape::Bound(Bound::string(chars, bytes, true))
    }

    /// Kubernetes' list functions on `list` (and `needle`, for `indexOf`, `lastIndexOf`,
    /// `includes`): upstream's estimate, a step per item and a tenth per character of string
    /// items; on the values, also what comparing the items reads, and the copy `min` and
    /// `max` return.
    fn list_call(
        &mut self,
        name: &str,
        list: &Shape<'v>,
        needle: Option<&Shape<'v>>,
    ) -> (u64, Shape<'v>) {
        let n = self.size(list);
        let item = self.bound(list).item();
        let mut each = 1;
        if item.kinds & (kind::STRING | kind::BYTES) != 0 {
            each = add(each, tenth(item.size));
        }
        let mut cost = mul(n, each);
        if self.runtime() {
            cost = add(cost, hundredth(self.weight(list)));
            if let Some(x) = needle {
                // `includes` on anything else than a list compares it with the needle.
                cost = add(cost, hundredth(self.weight(x)));
            }
            if matches!(name, "min" | "max") {
                cost = add(cost, item.copy);
            }
        }
        let shape = if matches!(name, "min" | "max") {
            Shape::Bound(item)
        } else {
            Self::scalar()
        };
        (cost, shape)
    }

    /// `s.indexOf(sub)` and `s.lastIndexOf(sub)` of the strings extension: upstream's
    /// traversal; on the values, the crate also collects both strings' characters and
    /// compares the substring at every position.
    fn string_search(&mut self, s: &Shape<'v>, sub: &Shape<'v>) -> u64 {
        let (n, m) = (self.size(s), self.size(sub));
        if !self.runtime() {
            return tenth(n);
        }
        add(factor(add(n, m), 4, 10), mul(tenth(n), tenth(m).max(1)))
    }

    /// `s.replace(from, to[, n])`: upstream's cost (two traversals) and result size (as many
    /// replacements as `from`'s shortest length allows, each as long as `to`); on the values,
    /// also building the result.
    fn replace(
        &mut self,
        operands: &[&IdedExpr],
        s: &Shape<'v>,
        from: &Shape<'v>,
        to: &Shape<'v>,
    ) -> (u64, Shape<'v>) {
        let (n, b) = (self.size(s), self.byte_len(s));
        // The shortest `from` may be: known for a literal or a string of the object, else 0.
        let shortest = match (operands.get(1).and_then(|o| lit_str(o)), from) {
            (Some(l), _) => l.chars().count() as u64,
            (None, Shape::Json(serde_json::Value::String(x))) => x.chars().count() as u64,
            _ => 0,
        };
        let mut count = if shortest == 0 {
            // An empty `from` is replaced around every character.
            add(n, 1)
        } else {
            n.div_ceil(shortest)
        };
        if let Some(limit) = operands.get(3).and_then(|l| lit_int(l))
            && let Ok(limit) = u64::try_from(limit)
        {
            count = count.min(limit);
        }
        let chars = add(n, mul(count, self.size(to)));
        let bytes = add(b, mul(count, self.byte_len(to)));
        let mut cost = factor(n, 2, 10);
        if self.runtime() {
            cost = add(cost, tenth(bytes));
        }
        (cost, Self::string_of(chars, bytes))
    }

    /// `list.join([sep])`: upstream's cost and size (the items, and a separator between
    /// each); on the values, reading and copying them.
    fn join(&mut self, list: &Shape<'v>, sep: Option<&Shape<'v>>) -> (u64, Shape<'v>) {
        let n = self.size(list);
        let item = self.bound(list).item();
        let mut chars = mul(n, item.size);
        let mut bytes = mul(n, item.bytes);
        if let Some(sep) = sep {
            let between = n.saturating_sub(1);
            chars = add(chars, mul(between, self.size(sep)));
            bytes = add(bytes, mul(between, self.byte_len(sep)));
        }
        let cost = if self.runtime() {
            add(n, factor(bytes, 2, 10))
        } else {
            tenth(chars)
        };
        (cost, Self::string_of(chars, bytes))
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

/// The value of an int literal.
fn lit_int(e: &IdedExpr) -> Option<i64> {
    match &e.expr {
        Expr::Literal(cel::common::ast::LiteralValue::Int(i)) => Some(*i.inner()),
        _ => None,
    }
}
