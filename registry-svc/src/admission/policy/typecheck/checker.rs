//! The walk of an expression's tree against [`Vars`]: each node's type as far as the schemas
//! tell, the errors found at their byte offsets, and cel-go's display of them.

use cel::common::ast::{
    CallExpr, ComprehensionExpr, EntryExpr, Expr, IdedExpr, LiteralValue, SourceInfo, operators,
};

use super::{Scalar, Schema, Vars};

/// The most errors listed for one expression and kind (cel-go's `maxErrorsToReport`); the
/// rest are counted in a last line.
const MAX_ERRORS: usize = 100;

/// Longest source line quoted under an error (cel-go's `maxSnippetLength`, in bytes).
const MAX_SNIPPET_BYTES: usize = 16384;

/// The type of an expression as the checker knows it.
#[derive(Debug, Clone)]
pub(super) enum Ty<'v> {
    /// A node of a schema, and the name its object type has in messages (`Deployment.spec`;
    /// empty where it cannot be an object).
    Node(&'v Schema, String),
    /// `variables`: an object of the policy's variables.
    Variables,
}

static ANY: Schema = Schema::Any;
static STRING: Schema = Schema::Scalar(Scalar::String);
static INT: Schema = Schema::Scalar(Scalar::Int);
static UINT: Schema = Schema::Scalar(Scalar::Uint);
static DOUBLE: Schema = Schema::Scalar(Scalar::Double);
static BOOL: Schema = Schema::Scalar(Scalar::Bool);
static BYTES: Schema = Schema::Scalar(Scalar::Bytes);

fn any<'v>() -> Ty<'v> {
    Ty::Node(&ANY, String::new())
}

fn scalar<'v>(s: &'static Schema) -> Ty<'v> {
    Ty::Node(s, String::new())
}

/// The type names an expression may use as values (`type(x) == string`): cel-go's standard
/// ones and the optional type's.
const TYPE_NAMES: &[&str] = &[
    "bool",
    "bytes",
    "double",
    "dyn",
    "int",
    "list",
    "map",
    "null_type",
    "string",
    "type",
    "uint",
    "optional_type",
];

/// The namespaces of functions in upstream's CEL environment (`optional.of(x)`,
/// `math.greatest(a, b)`, `cel.bind(...)`): a call on one of these, when no variable has its
/// name, is a function's, not a method of an undeclared variable.
const NAMESPACES: &[&str] = &[
    "optional",
    "math",
    "strings",
    "base64",
    "sets",
    "lists",
    "format",
    "jsonpatch",
    "cel",
];

/// Calls that take iteration variables when the parser has no macro for them (two-variable
/// `all(i, v, ...)`, `transformList`, ...): their leading identifiers are bound, not read.
const BINDING_CALLS: &[&str] = &[
    "all",
    "exists",
    "exists_one",
    "existsOne",
    "map",
    "filter",
    "transformList",
    "transformMap",
    "transformMapEntry",
    "sortBy",
];

/// cel-go's name of the type of `s`, whose object type is named `name` (`FormatCELType`).
fn type_name(s: &Schema, name: &str) -> String {
    match s {
        Schema::Any => "dyn".into(),
        Schema::Scalar(k) => k.cel_name().into(),
        Schema::List(items) => format!("list({})", type_name(items, &format!("{name}.@idx"))),
        Schema::Map(values) => format!(
            "map(string, {})",
            type_name(values, &format!("{name}.@elem"))
        ),
        Schema::Object(_) => name.into(),
    }
}

fn ty_name(t: &Ty<'_>) -> String {
    match t {
        Ty::Node(s, name) => type_name(s, name),
        Ty::Variables => "kubernetes.variables".into(),
    }
}

/// A list's items or a map's values: what indexing `t` gives.
fn index(t: Ty<'_>) -> Ty<'_> {
    match t {
        Ty::Node(Schema::List(items), name) => Ty::Node(items, format!("{name}.@idx")),
        Ty::Node(Schema::Map(values), name) => Ty::Node(values, format!("{name}.@elem")),
        _ => any(),
    }
}

/// One walk of an expression's tree: the types of its nodes, and the errors found, at their
/// byte offsets in the source.
pub(super) struct Checker<'v, 'a> {
    vars: &'v Vars,
    info: &'a SourceInfo,
    /// The macros' variables in scope, innermost last.
    scopes: Vec<(&'a str, Ty<'v>)>,
    pub(super) issues: Vec<(usize, String)>,
}

impl<'v, 'a> Checker<'v, 'a> {
    pub(super) fn new(vars: &'v Vars, info: &'a SourceInfo) -> Self {
        Self {
            vars,
            info,
            scopes: Vec::new(),
            issues: Vec::new(),
        }
    }

    /// An error at the node `id`.
    fn report(&mut self, id: u64, message: String) {
        let offset = self
            .info
            .offset_for(id)
            .map_or(0, |(start, _)| start as usize);
        self.issues.push((offset, message));
    }

    fn in_scope(&self, name: &str) -> Option<&Ty<'v>> {
        self.scopes
            .iter()
            .rev()
            .find(|(n, _)| *n == name)
            .map(|(_, t)| t)
    }

    pub(super) fn walk(&mut self, e: &'a IdedExpr) -> Ty<'v> {
        match &e.expr {
            Expr::Ident(name) => self.ident(e.id, name),
            Expr::Select(sel) => {
                if !sel.test && self.is_type_name(e) {
                    return any();
                }
                let operand = self.walk(&sel.operand);
                let ty = self.select(e.id, operand, &sel.field);
                if sel.test { scalar(&BOOL) } else { ty }
            }
            Expr::Call(call) => self.call(e.id, call),
            Expr::Comprehension(c) => self.comprehension(c),
            Expr::List(list) => {
                for x in &list.elements {
                    self.walk(x);
                }
                any()
            }
            Expr::Map(map) => {
                self.entries(&map.entries);
                any()
            }
            Expr::Struct(s) => {
                self.entries(&s.entries);
                any()
            }
            Expr::Literal(l) => match l {
                LiteralValue::String(_) => scalar(&STRING),
                LiteralValue::Int(_) => scalar(&INT),
                LiteralValue::UInt(_) => scalar(&UINT),
                LiteralValue::Double(_) => scalar(&DOUBLE),
                LiteralValue::Boolean(_) => scalar(&BOOL),
                LiteralValue::Bytes(_) => scalar(&BYTES),
                LiteralValue::Null => any(),
            },
            Expr::Unspecified => any(),
        }
    }

    fn entries(&mut self, entries: &'a [cel::common::ast::IdedEntryExpr]) {
        for entry in entries {
            match &entry.expr {
                EntryExpr::MapEntry(m) => {
                    self.walk(&m.key);
                    self.walk(&m.value);
                }
                EntryExpr::StructField(f) => {
                    self.walk(&f.value);
                }
            }
        }
    }

    fn ident(&mut self, id: u64, name: &str) -> Ty<'v> {
        if let Some(t) = self.in_scope(name) {
            return t.clone();
        }
        let vars: &'v Vars = self.vars;
        match name {
            "object" | "oldObject" => Ty::Node(&vars.object, vars.kind.clone()),
            "params" if vars.params.is_some() => match &vars.params {
                Some((kind, schema)) => Ty::Node(schema, kind.clone()),
                None => any(),
            },
            "variables" => Ty::Variables,
            "request" | "namespaceObject" | "authorizer" => any(),
            _ if TYPE_NAMES.contains(&name) => any(),
            _ => {
                self.report(
                    id,
                    format!("undeclared reference to '{name}' (in container '')"),
                );
                any()
            }
        }
    }

    /// Whether `e`, a selection, spells a well-known type's name (`google.protobuf.Timestamp`)
    /// that no variable in scope shadows.
    fn is_type_name(&self, e: &IdedExpr) -> bool {
        let mut segments = Vec::new();
        let mut node = e;
        loop {
            match &node.expr {
                Expr::Select(s) if !s.test => {
                    segments.push(s.field.as_str());
                    node = &s.operand;
                }
                Expr::Ident(root) => {
                    segments.push(root.as_str());
                    break;
                }
                _ => return false,
            }
        }
        segments.reverse();
        segments.len() == 3
            && segments[..2] == ["google", "protobuf"]
            && self.in_scope("google").is_none()
    }

    /// `operand.field` (also `has(operand.field)` and `operand.?field`) at the node `id`.
    fn select(&mut self, id: u64, operand: Ty<'v>, field: &str) -> Ty<'v> {
        let vars: &'v Vars = self.vars;
        match operand {
            Ty::Variables => match vars.variables.iter().rev().find(|(n, _)| n == field) {
                Some((_, schema)) => Ty::Node(schema, String::new()),
                None => {
                    self.report(id, format!("undefined field '{field}'"));
                    any()
                }
            },
            Ty::Node(schema, name) => match schema {
                Schema::Object(props) => match props.get(field) {
                    Some(p) => Ty::Node(p, format!("{name}.{field}")),
                    None => {
                        self.report(id, format!("undefined field '{field}'"));
                        any()
                    }
                },
                Schema::Map(values) => Ty::Node(values, format!("{name}.@elem")),
                Schema::Any => any(),
                Schema::List(_) | Schema::Scalar(_) => {
                    self.report(
                        id,
                        format!(
                            "type '{}' does not support field selection",
                            type_name(schema, &name)
                        ),
                    );
                    any()
                }
            },
        }
    }

    fn call(&mut self, id: u64, call: &'a CallExpr) -> Ty<'v> {
        let name = call.func_name.as_str();
        if call.target.is_none() && call.args.len() == 2 {
            if name == operators::OPT_SELECT
                && let Expr::Literal(LiteralValue::String(field)) = &call.args[1].expr
            {
                let operand = self.walk(&call.args[0]);
                return self.select(id, operand, field.inner());
            }
            if name == operators::INDEX || name == operators::OPT_INDEX {
                let target = self.walk(&call.args[0]);
                self.walk(&call.args[1]);
                return index(target);
            }
        }
        if let Some(target) = &call.target {
            if let Expr::Ident(ns) = &target.expr
                && NAMESPACES.contains(&ns.as_str())
                && self.in_scope(ns).is_none()
            {
                // `cel.bind(x, init, body)` binds `x`: its arguments are not checked.
                if ns != "cel" {
                    for a in &call.args {
                        self.walk(a);
                    }
                }
                return any();
            }
            self.walk(target);
            if BINDING_CALLS.contains(&name) {
                let last = call.args.len().saturating_sub(1);
                let bound = call.args[..last]
                    .iter()
                    .take_while(|a| matches!(a.expr, Expr::Ident(_)))
                    .count();
                let depth = self.scopes.len();
                for a in &call.args[..bound] {
                    if let Expr::Ident(n) = &a.expr {
                        self.scopes.push((n.as_str(), any()));
                    }
                }
                for a in &call.args[bound..] {
                    self.walk(a);
                }
                self.scopes.truncate(depth);
                return any();
            }
        }
        for a in &call.args {
            self.walk(a);
        }
        any()
    }

    /// A macro's expansion: its iteration variables typed from what it ranges over.
    fn comprehension(&mut self, c: &'a ComprehensionExpr) -> Ty<'v> {
        let range = self.walk(&c.iter_range);
        let (first, second) = match &range {
            Ty::Node(schema, name) => {
                let schema: &'v Schema = schema;
                match schema {
                    Schema::List(items) => {
                        let item = Ty::Node(items, format!("{name}.@idx"));
                        if c.iter_var2.is_some() {
                            (scalar(&INT), item)
                        } else {
                            (item, any())
                        }
                    }
                    Schema::Map(values) => {
                        (scalar(&STRING), Ty::Node(values, format!("{name}.@elem")))
                    }
                    Schema::Any => (any(), any()),
                    Schema::Object(_) | Schema::Scalar(_) => {
                        self.not_a_range(c, &range);
                        (any(), any())
                    }
                }
            }
            Ty::Variables => {
                self.not_a_range(c, &range);
                (any(), any())
            }
        };
        self.walk(&c.accu_init);
        let depth = self.scopes.len();
        self.scopes.push((c.accu_var.as_str(), any()));
        self.scopes.push((c.iter_var.as_str(), first));
        if let Some(v2) = &c.iter_var2 {
            self.scopes.push((v2.as_str(), second));
        }
        self.walk(&c.loop_cond);
        self.walk(&c.loop_step);
        // The result sees the accumulator, not the iteration variables.
        self.scopes.truncate(depth + 1);
        self.walk(&c.result);
        self.scopes.truncate(depth);
        any()
    }

    fn not_a_range(&mut self, c: &ComprehensionExpr, range: &Ty<'_>) {
        self.report(
            c.iter_range.id,
            format!(
                "expression of type '{}' cannot be range of a comprehension (must be list, map, or dynamic)",
                ty_name(range)
            ),
        );
    }
}

/// `issues` (byte offsets in `source` and messages) displayed as cel-go's
/// `Errors.ToDisplayString` lists them: the first [`MAX_ERRORS`] found, ordered by place
/// (stably), then a count of the rest.
pub(super) fn display_all(source: &str, mut issues: Vec<(usize, String)>) -> Vec<String> {
    let more = issues.len().saturating_sub(MAX_ERRORS);
    issues.truncate(MAX_ERRORS);
    issues.sort_by_key(|(offset, _)| *offset);
    let mut out: Vec<String> = issues
        .iter()
        .map(|(offset, message)| display(source, *offset, message))
        .collect();
    if more > 0 {
        out.push(format!("{more} more errors were truncated"));
    }
    out
}

/// One error as cel-go's `Error.ToDisplayString` writes it: `ERROR: <input>:LINE:COLUMN:
/// MESSAGE`, the line (1-based) and column (1-based, in characters) of the byte `offset` of
/// `source`, then the source line (tabs as spaces) and a line of dots up to a caret under the
/// column; a dot and the caret are full-width (`．`, `＾`) under a character of more than one
/// byte, as cel-go does.
pub fn display(source: &str, offset: usize, message: &str) -> String {
    let mut offset = offset.min(source.len());
    while !source.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &source[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = source[line_start..offset].chars().count();
    let mut out = format!("ERROR: <input>:{line}:{}: {message}", column + 1);
    let snippet = source[line_start..].split('\n').next().unwrap_or_default();
    if snippet.len() <= MAX_SNIPPET_BYTES {
        let snippet = snippet.replace('\t', " ");
        out.push_str("\n | ");
        out.push_str(&snippet);
        out.push_str("\n | ");
        let mut chars = snippet.chars();
        for c in chars.by_ref().take(column) {
            out.push(if c.len_utf8() > 1 { '\u{ff0e}' } else { '.' });
        }
        out.push(match chars.next() {
            Some(c) if c.len_utf8() > 1 => '\u{ff3e}',
            _ => '^',
        });
    }
    out
}
