//! kubectl's `-o jsonpath=TEMPLATE` and `-o custom-columns=HEADER:PATH,...`, on objects in
//! Kubernetes' JSON shape.
//!
//! The JSONPath subset kubectl documents: text with `{...}` expressions; `.field`,
//! `['field.with.dots']`, `[n]` (negative from the end), `[*]` and `.*`, `..field` (recursive
//! descent), `[?(@.path == "x")]` filters (`==`, `!=`, `<`, `<=`, `>`, `>=`, or existence),
//! `{range EXPR}...{end}`, and quoted literals such as `{"\n"}`. Several results of one
//! expression print space-separated; strings print bare, anything else as JSON. A template
//! without braces is taken as one expression, as kubectl relaxes `-o jsonpath=.metadata.name`.
//! Slices (`[1:3]`) and functions are not supported: a clear error says so.

use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
enum Step {
    Field(String),
    Index(i64),
    All,
    Descend(Option<String>),
    Filter(Vec<Step>, Option<(String, Value)>),
}

#[derive(Debug, Clone, PartialEq)]
enum Node {
    Text(String),
    Expr(Vec<Step>),
    Range(Vec<Step>, Vec<Node>),
}

/// A parsed template.
#[derive(Debug, Clone, PartialEq)]
pub struct Template(Vec<Node>);

impl Template {
    /// Parses `template`.
    pub fn parse(template: &str) -> Result<Self, String> {
        let template = if template.contains('{') {
            template.to_string()
        } else {
            format!("{{{template}}}")
        };
        let mut pieces = Vec::new();
        let mut rest = template.as_str();
        while let Some(open) = rest.find('{') {
            if open > 0 {
                pieces.push((false, rest[..open].to_string()));
            }
            let close = closing(&rest[open..])
                .ok_or_else(|| format!("unclosed {{ in template {template:?}"))?;
            pieces.push((true, rest[open + 1..open + close].trim().to_string()));
            rest = &rest[open + close + 1..];
        }
        if !rest.is_empty() {
            pieces.push((false, rest.to_string()));
        }
        let mut it = pieces.into_iter();
        let nodes = nodes(&mut it, false)?;
        Ok(Self(nodes))
    }

    /// The template's text for `value`.
    pub fn render(&self, value: &Value) -> Result<String, String> {
        let mut out = String::new();
        render(&self.0, value, &mut out)?;
        Ok(out)
    }
}

/// The index of the `}` closing the `{` at 0, skipping quoted strings.
fn closing(s: &str) -> Option<usize> {
    let mut quote = None;
    for (i, c) in s.char_indices().skip(1) {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '}') => return Some(i),
            _ => {}
        }
    }
    None
}

fn nodes(
    it: &mut impl Iterator<Item = (bool, String)>,
    in_range: bool,
) -> Result<Vec<Node>, String> {
    let mut out = Vec::new();
    while let Some((expr, text)) = it.next() {
        if !expr {
            out.push(Node::Text(text));
        } else if text == "end" {
            return if in_range {
                Ok(out)
            } else {
                Err("{end} without {range}".into())
            };
        } else if let Some(r) = text.strip_prefix("range ") {
            let body = nodes(it, true)?;
            out.push(Node::Range(path(r.trim())?, body));
        } else if let Some(lit) = literal(&text) {
            out.push(Node::Text(lit));
        } else {
            out.push(Node::Expr(path(&text)?));
        }
    }
    if in_range {
        Err("{range} without {end}".into())
    } else {
        Ok(out)
    }
}

/// `"..."` or `'...'` with `\n`, `\t` and `\\` escapes.
fn literal(s: &str) -> Option<String> {
    let q = s.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    let inner = s.strip_prefix(q)?.strip_suffix(q)?;
    Some(
        inner
            .replace("\\n", "\n")
            .replace("\\t", "\t")
            .replace("\\\\", "\\"),
    )
}

fn path(s: &str) -> Result<Vec<Step>, String> {
    let s = s.strip_prefix('$').unwrap_or(s);
    let s = s.strip_prefix('@').unwrap_or(s);
    let b = s.as_bytes();
    let mut steps = Vec::new();
    let mut i = 0;
    let name_end = |from: usize| s[from..].find(['.', '[']).map_or(s.len(), |n| from + n);
    while i < b.len() {
        match b[i] {
            b'.' if b.get(i + 1) == Some(&b'.') => {
                let end = name_end(i + 2);
                let name = &s[i + 2..end];
                steps.push(Step::Descend(
                    (!name.is_empty() && name != "*").then(|| name.to_string()),
                ));
                i = end;
            }
            b'.' => {
                let end = name_end(i + 1);
                match &s[i + 1..end] {
                    "" => {}
                    "*" => steps.push(Step::All),
                    name => steps.push(Step::Field(name.to_string())),
                }
                i = end;
            }
            b'[' => {
                let close = bracket_end(s, i).ok_or_else(|| format!("unclosed [ in {s:?}"))?;
                steps.push(bracket(&s[i + 1..close])?);
                i = close + 1;
            }
            _ => {
                // A bare first name (`metadata.name` inside a filter or custom column).
                let end = name_end(i);
                steps.push(Step::Field(s[i..end].to_string()));
                i = end;
            }
        }
    }
    Ok(steps)
}

fn bracket_end(s: &str, open: usize) -> Option<usize> {
    let mut depth = 0;
    let mut quote = None;
    for (i, c) in s[open..].char_indices() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '[') => depth += 1,
            (None, ']') => {
                depth -= 1;
                if depth == 0 {
                    return Some(open + i);
                }
            }
            _ => {}
        }
    }
    None
}

fn bracket(inner: &str) -> Result<Step, String> {
    let inner = inner.trim();
    if inner == "*" {
        return Ok(Step::All);
    }
    if let Some(name) = literal(inner) {
        return Ok(Step::Field(name));
    }
    if let Some(f) = inner.strip_prefix("?(").and_then(|f| f.strip_suffix(')')) {
        return filter(f.trim());
    }
    if inner.contains(':') {
        return Err(format!("slices ([{inner}]) are not supported"));
    }
    inner
        .parse()
        .map(Step::Index)
        .map_err(|_| format!("unsupported subscript [{inner}]"))
}

const OPERATORS: [&str; 6] = ["==", "!=", "<=", ">=", "<", ">"];

fn filter(f: &str) -> Result<Step, String> {
    for op in OPERATORS {
        if let Some((l, r)) = f.split_once(op) {
            let r = r.trim();
            let value = literal(r)
                .map(Value::String)
                .or_else(|| serde_json::from_str(r).ok())
                .ok_or_else(|| format!("cannot read {r:?} in filter {f:?}"))?;
            return Ok(Step::Filter(path(l.trim())?, Some((op.to_string(), value))));
        }
    }
    Ok(Step::Filter(path(f)?, None))
}

fn select<'a>(steps: &[Step], root: &'a Value) -> Vec<&'a Value> {
    let mut current = vec![root];
    for step in steps {
        let mut next = Vec::new();
        for v in current {
            match step {
                Step::Field(name) => next.extend(v.get(name)),
                Step::Index(i) => {
                    if let Value::Array(a) = v {
                        let i = if *i < 0 { a.len() as i64 + i } else { *i };
                        next.extend(usize::try_from(i).ok().and_then(|i| a.get(i)));
                    }
                }
                Step::All => match v {
                    Value::Array(a) => next.extend(a),
                    Value::Object(m) => next.extend(m.values()),
                    _ => {}
                },
                Step::Descend(name) => descend(v, name.as_deref(), &mut next),
                Step::Filter(p, test) => {
                    let items: Vec<&Value> = match v {
                        Value::Array(a) => a.iter().collect(),
                        other => vec![other],
                    };
                    next.extend(items.into_iter().filter(|item| {
                        let found = select(p, item);
                        match test {
                            None => !found.is_empty(),
                            Some((op, want)) => found.iter().any(|got| compare(got, op, want)),
                        }
                    }));
                }
            }
        }
        current = next;
    }
    current
}

fn descend<'a>(v: &'a Value, name: Option<&str>, out: &mut Vec<&'a Value>) {
    let children: Vec<&Value> = match v {
        Value::Object(m) => {
            for (k, c) in m {
                if name.is_none_or(|n| n == k) {
                    out.push(c);
                }
            }
            m.values().collect()
        }
        Value::Array(a) => {
            if name.is_none() {
                out.extend(a);
            }
            a.iter().collect()
        }
        _ => Vec::new(),
    };
    for c in children {
        descend(c, name, out);
    }
}

fn compare(got: &Value, op: &str, want: &Value) -> bool {
    use std::cmp::Ordering;
    let order = match (got, want) {
        (Value::Number(a), Value::Number(b)) => a.as_f64().partial_cmp(&b.as_f64()),
        (Value::String(a), Value::String(b)) => Some(a.cmp(b)),
        (a, b) => (a == b).then_some(Ordering::Equal),
    };
    match op {
        "==" => order == Some(Ordering::Equal),
        "!=" => order != Some(Ordering::Equal),
        "<" => order == Some(Ordering::Less),
        "<=" => matches!(order, Some(Ordering::Less | Ordering::Equal)),
        ">" => order == Some(Ordering::Greater),
        ">=" => matches!(order, Some(Ordering::Greater | Ordering::Equal)),
        _ => false,
    }
}

/// The first value `expr` (a path without braces, as printer columns give them) finds in `v`;
/// None for nothing, or for a path it cannot read.
pub fn first<'a>(expr: &str, v: &'a Value) -> Option<&'a Value> {
    select(&path(expr.trim()).ok()?, v).into_iter().next()
}

/// How a result prints: strings bare, other values as JSON.
pub fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn render(nodes: &[Node], value: &Value, out: &mut String) -> Result<(), String> {
    for n in nodes {
        match n {
            Node::Text(t) => out.push_str(t),
            Node::Expr(p) => {
                let found: Vec<String> = select(p, value).into_iter().map(text).collect();
                out.push_str(&found.join(" "));
            }
            Node::Range(p, body) => {
                for item in select(p, value) {
                    render(body, item, out)?;
                }
            }
        }
    }
    Ok(())
}

/// `-o custom-columns=NAME:.metadata.name,COLOR:.data.color`: the header and one row per
/// object (`<none>` where a path finds nothing; several results joined by commas).
pub fn custom_columns(spec: &str, objects: &[&Value]) -> Result<Vec<Vec<String>>, String> {
    let mut columns = Vec::new();
    for c in spec.split(',') {
        let (header, p) = c.split_once(':').ok_or_else(|| {
            format!("custom column {c:?} is not HEADER:PATH (e.g. NAME:.metadata.name)")
        })?;
        let p = p.trim();
        let p = p
            .strip_prefix('{')
            .and_then(|p| p.strip_suffix('}'))
            .unwrap_or(p);
        columns.push((header.to_string(), path(p)?));
    }
    let mut rows = vec![columns.iter().map(|(h, _)| h.clone()).collect()];
    for o in objects {
        rows.push(
            columns
                .iter()
                .map(|(_, p)| {
                    let found = select(p, o);
                    if found.is_empty() || found.iter().all(|v| v.is_null()) {
                        "<none>".to_string()
                    } else {
                        found.into_iter().map(text).collect::<Vec<_>>().join(",")
                    }
                })
                .collect(),
        );
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn list() -> Value {
        json!({"kind": "List", "items": [
            {"metadata": {"name": "a", "labels": {"app.kubernetes.io/name": "web"}},
             "spec": {"replicas": 3, "containers": [{"name": "c1", "image": "nginx"}]}},
            {"metadata": {"name": "b"},
             "spec": {"replicas": 1, "containers": [{"name": "c2", "image": "redis"}, {"name": "c3", "image": "x"}]}}
        ]})
    }

    fn run(t: &str, v: &Value) -> String {
        Template::parse(t)
            .and_then(|t| t.render(v))
            .unwrap_or_else(|e| panic!("{t}: {e}"))
    }

    #[test]
    fn kubectls_documented_templates_render() {
        let v = list();
        assert_eq!(run("{.items[*].metadata.name}", &v), "a b");
        assert_eq!(run(".items[0].metadata.name", &v), "a");
        assert_eq!(run("{.items[-1].metadata.name}", &v), "b");
        assert_eq!(
            run(
                r#"{range .items[*]}{.metadata.name}{"\t"}{.spec.replicas}{"\n"}{end}"#,
                &v
            ),
            "a\t3\nb\t1\n"
        );
        assert_eq!(
            run("{.items[0].metadata.labels['app.kubernetes.io/name']}", &v),
            "web"
        );
        assert_eq!(run("{..image}", &v), "nginx redis x");
        assert_eq!(
            run(r#"{.items[?(@.spec.replicas>2)].metadata.name}"#, &v),
            "a"
        );
        assert_eq!(
            run(
                r#"{.items[?(@.metadata.name=="b")].spec.containers[*].name}"#,
                &v
            ),
            "c2 c3"
        );
        assert_eq!(run("{.items[?(@.metadata.labels)].metadata.name}", &v), "a");
        assert_eq!(
            run("{.items[0].spec}", &v),
            r#"{"replicas":3,"containers":[{"name":"c1","image":"nginx"}]}"#
        );
        assert_eq!(run("name: {.items[1].metadata.name}!", &v), "name: b!");
        assert_eq!(run("{.nothing}", &v), "");
    }

    #[test]
    fn bad_templates_are_errors_naming_what_is_wrong() {
        assert!(Template::parse("{.items[0]").is_err());
        assert!(Template::parse("{range .items[*]}{.x}").is_err());
        assert!(Template::parse("{end}").is_err());
        let slices = Template::parse("{.items[0:1]}").expect_err("unsupported");
        assert!(slices.contains("slices"), "{slices}");
    }

    #[test]
    fn custom_columns_print_none_for_missing_fields() {
        let v = list();
        let items: Vec<&Value> = v["items"].as_array().expect("items").iter().collect();
        let rows = custom_columns(
            "NAME:.metadata.name,IMAGES:.spec.containers[*].image,APP:{.metadata.labels.app}",
            &items,
        )
        .expect("renders");
        assert_eq!(
            rows,
            [
                ["NAME", "IMAGES", "APP"],
                ["a", "nginx", "<none>"],
                ["b", "redis,x", "<none>"]
            ]
        );
        assert!(custom_columns("NAME", &items).is_err());
    }
}
