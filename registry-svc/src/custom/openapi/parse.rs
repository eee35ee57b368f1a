//! A schema's JSON parsed into [`Node`]s, with what only parsing can find out: every
//! `pattern` compiled (`custom::pattern`, once, also inside `allOf`/`anyOf`/`oneOf`/`not`),
//! every `x-kubernetes-validations` rule compiled, and the `default`s checked against the
//! parsed nodes (upstream's `ValidateDefaults`: valid and already pruned). Each problem is
//! reported at its path, so that a definition write refuses exactly what serving the version
//! would fail on: both parse with this code (`Schema::build`).

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::{Additional, Node, RulesBelow, structural::at};

/// The bytes the patterns of one schema may compile to, together (each one is also bounded,
/// `pattern::MAX_PROGRAM_BYTES`): what compiling a schema may cost stays bounded whatever its
/// number of patterns.
pub const MAX_SCHEMA_PATTERN_BYTES: usize = 16 << 20;

/// How deep schema nodes nest at most (structural checks refuse deeper schemas; parsing
/// stops there too, so that no walk of a schema recurses further).
pub const MAX_NESTING: usize = 64;

/// What parsing found.
#[derive(Default)]
pub(super) struct Parse {
    /// Problems, with their paths.
    pub(super) problems: Vec<(String, String)>,
    /// The bytes of the patterns compiled so far.
    pattern_bytes: usize,
}

/// Parses the node `v` at `path` (`depth` nodes below the root) and its children.
pub(super) fn node(v: &Value, path: &str, p: &mut Parse, depth: usize) -> Node {
    let Value::Object(m) = v else {
        return Node::default();
    };
    if depth > MAX_NESTING {
        // Refused by the structural checks; nothing below is parsed.
        return Node::default();
    }
    let s = |k: &str| m.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let b = |k: &str| m.get(k).and_then(Value::as_bool).unwrap_or(false);
    let f = |k: &str| m.get(k).and_then(Value::as_f64);
    let u = |k: &str| m.get(k).and_then(Value::as_f64).map(|n| n.max(0.0) as u64);
    let strings = |k: &str| -> Vec<String> {
        match m.get(k) {
            Some(Value::Array(a)) => a
                .iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect(),
            _ => Vec::new(),
        }
    };
    let child = |key: &str, v: &Value, p: &mut Parse| node(v, &at(path, key), p, depth + 1);
    let mut properties = BTreeMap::new();
    if let Some(Value::Object(props)) = m.get("properties") {
        for (k, v) in props {
            properties.insert(k.clone(), child(&format!("properties[{k}]"), v, p));
        }
    }
    let additional = match m.get("additionalProperties") {
        Some(Value::Bool(false)) => Some(Additional::Forbidden),
        Some(v @ Value::Object(_)) => Some(Additional::Schema(Box::new(child(
            "additionalProperties",
            v,
            p,
        )))),
        _ => None,
    };
    let items = match m.get("items") {
        Some(v @ Value::Object(_)) => Some(Box::new(child("items", v, p))),
        _ => None,
    };
    let list = |k: &str, p: &mut Parse| -> Vec<Node> {
        match m.get(k) {
            Some(Value::Array(a)) => a
                .iter()
                .enumerate()
                .map(|(i, v)| child(&format!("{k}[{i}]"), v, p))
                .collect(),
            _ => Vec::new(),
        }
    };
    let all_of = list("allOf", p);
    let any_of = list("anyOf", p);
    let one_of = list("oneOf", p);
    let not = match m.get("not") {
        Some(v @ Value::Object(_)) => Some(Box::new(child("not", v, p))),
        _ => None,
    };
    let mut n = Node {
        ty: s("type"),
        nullable: b("nullable"),
        format: s("format"),
        properties,
        required: strings("required"),
        additional,
        items,
        enumeration: m.get("enum").and_then(Value::as_array).cloned(),
        pattern: pattern(m, path, p),
        minimum: f("minimum").map(|n| (n, b("exclusiveMinimum"))),
        maximum: f("maximum").map(|n| (n, b("exclusiveMaximum"))),
        multiple_of: f("multipleOf"),
        min_length: u("minLength"),
        max_length: u("maxLength"),
        min_items: u("minItems"),
        max_items: u("maxItems"),
        min_properties: u("minProperties"),
        max_properties: u("maxProperties"),
        unique_items: b("uniqueItems"),
        default: m.get("default").cloned(),
        preserve_unknown: b("x-kubernetes-preserve-unknown-fields"),
        int_or_string: b("x-kubernetes-int-or-string"),
        embedded: b("x-kubernetes-embedded-resource"),
        list_type: s("x-kubernetes-list-type"),
        list_map_keys: strings("x-kubernetes-list-map-keys"),
        all_of,
        any_of,
        one_of,
        not,
        rules: rules(m, path, p),
        rules_below: RulesBelow::default(),
    };
    n.rules_below = rules_below(&n);
    n
}

/// The node's `pattern`, compiled; a problem at `<path>.pattern` otherwise.
fn pattern(m: &Map<String, Value>, path: &str, p: &mut Parse) -> Option<(String, regex::Regex)> {
    let re = m.get("pattern")?.as_str()?;
    let problem = match crate::custom::pattern::compile_sized(re) {
        Ok((compiled, bytes)) => {
            p.pattern_bytes += bytes;
            if p.pattern_bytes <= MAX_SCHEMA_PATTERN_BYTES {
                return Some((re.to_string(), compiled));
            }
            format!(
                "Forbidden: the schema's patterns would take more than {} MiB once compiled",
                MAX_SCHEMA_PATTERN_BYTES >> 20
            )
        }
        Err(e) => {
            format!("Invalid value: {re:?}: must be a valid regular expression, but isn't: {e}")
        }
    };
    p.problems.push((at(path, "pattern"), problem));
    None
}

/// The node's `x-kubernetes-validations`, compiled; a problem per rule that does not compile.
fn rules(
    m: &Map<String, Value>,
    path: &str,
    p: &mut Parse,
) -> Vec<std::sync::Arc<crate::custom::rules::Rule>> {
    let Some(Value::Array(rules)) = m.get("x-kubernetes-validations") else {
        return Vec::new();
    };
    match crate::custom::rules::compile(rules) {
        Ok(compiled) => compiled,
        Err(problems) => {
            for (i, field, e) in problems {
                p.problems.push((
                    at(path, &format!("x-kubernetes-validations[{i}].{field}")),
                    e,
                ));
            }
            Vec::new()
        }
    }
}

/// Which rules the node and its structural children hold.
fn rules_below(n: &Node) -> RulesBelow {
    let mut r = RulesBelow {
        any: !n.rules.is_empty(),
        transition: n.rules.iter().any(|r| r.transition()),
    };
    let children = n
        .properties
        .values()
        .chain(n.items.as_deref())
        .chain(match &n.additional {
            Some(Additional::Schema(s)) => Some(s.as_ref()),
            _ => None,
        });
    for c in children {
        r.any |= c.rules_below.any;
        r.transition |= c.rules_below.transition;
    }
    r
}

/// Checks every `default` of the parsed tree (upstream's `ValidateDefaults`): it must be valid
/// for its node and already pruned.
pub(super) fn defaults(n: &Node, path: &str, problems: &mut Vec<(String, String)>) {
    if let Some(d) = &n.default {
        let mut errors = Vec::new();
        super::validate::value(n, d, None, "", &mut errors);
        for (_, e) in errors {
            problems.push((at(path, "default"), e));
        }
        let mut pruned = d.clone();
        super::coerce::prune_unknown(n, &mut pruned);
        if &pruned != d {
            problems.push((
                at(path, "default"),
                format!("Invalid value: {d}: must not have unknown fields"),
            ));
        }
    }
    for (k, c) in &n.properties {
        defaults(c, &at(path, &format!("properties[{k}]")), problems);
    }
    if let Some(Additional::Schema(s)) = &n.additional {
        defaults(s, &at(path, "additionalProperties"), problems);
    }
    if let Some(i) = &n.items {
        defaults(i, &at(path, "items"), problems);
    }
}
