//! Validation of an object against a structural schema (upstream's kube-openapi validator as
//! apiextensions-apiserver runs it): each violation is a field path (`spec.replicas`,
//! `spec.ports[0].name`, `spec.labels.app`: kube-openapi's `object_validator` names a map
//! value `<map>.<key>`) and upstream's description, e.g.
//! `Invalid value: "string": spec.replicas in body must be of type integer: "string"`.
//!
//! **Ratcheting** (upstream's `RatchetingSchemaValidator`): on an update, each value is walked
//! with the old value it correlates with (`correlate`: the same property or map key, the
//! item of a map list with the same keys; nothing for items of other lists). A value equal to
//! its correlated old value has its violations, and those below it, dropped: the walk returns
//! whether a value is unchanged, computed from its children's answers (upstream's
//! `CachedDeepEqual`), and truncates the violations it collected when it is.
//!
//! The duplicates of `set` and `map` lists are upstream's `listtype` validation, apart from
//! the schema's (`listtype`).

use serde_json::{Map, Value};

use super::{Additional, MAX_ERRORS, Node, correlate};
use crate::custom::object::type_name;

type Errors = Vec<(String, String)>;

/// A value as upstream's messages quote it.
pub(super) fn show(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Null => "\"null\"".into(),
        other => format!("{:?}", type_name(other)),
    }
}

pub(super) fn child(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// How messages name the field (`<path> in body`).
fn body(path: &str) -> String {
    if path.is_empty() {
        "body".into()
    } else {
        format!("{path} in body")
    }
}

pub(super) fn push(errors: &mut Errors, path: &str, message: String) {
    if errors.len() < MAX_ERRORS {
        errors.push((
            if path.is_empty() {
                "<root>".into()
            } else {
                path.into()
            },
            message,
        ));
    }
}

/// Whether `v` is of `ty` (integers may be written as whole doubles).
fn of_type(ty: &str, v: &Value) -> bool {
    match ty {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "number" => v.is_number(),
        "integer" => v.is_i64() || v.is_u64() || v.as_f64().is_some_and(|f| f.fract() == 0.0),
        _ => true,
    }
}

/// Validates the root object's body (apiVersion, kind and metadata taken out by the caller);
/// `old`: the old body; `unchanged`: whether the whole old object equals the new one (the
/// root's own violations ratchet only then).
pub(super) fn root(
    node: &Node,
    body: &Value,
    old: Option<&Value>,
    unchanged: bool,
    errors: &mut Errors,
) {
    let mark = errors.len();
    contents(node, body, old, "", errors);
    if unchanged {
        errors.truncate(mark);
    }
}

/// Validates `v` at `path` against `node`, recursively; `old`: the old value `v` correlates
/// with, on an update. Returns whether `v` is unchanged from it, in which case its violations
/// (and those below it) are dropped.
pub(super) fn value(
    node: &Node,
    v: &Value,
    old: Option<&Value>,
    path: &str,
    errors: &mut Errors,
) -> bool {
    if errors.len() >= MAX_ERRORS {
        return old.is_some_and(|o| correlate::equal(node, o, v));
    }
    let mark = errors.len();
    let unchanged = contents(node, v, old, path, errors);
    if unchanged {
        errors.truncate(mark);
    }
    unchanged
}

/// [`value`] without the ratcheting of `v`'s own violations (the caller decides).
fn contents(node: &Node, v: &Value, old: Option<&Value>, path: &str, errors: &mut Errors) -> bool {
    let unchanged = || old.is_some_and(|o| correlate::equal(node, o, v));
    if v.is_null() {
        if !node.nullable && !node.ty.is_empty() {
            push(
                errors,
                path,
                format!(
                    "Invalid value: \"null\": {} must be of type {}: \"null\"",
                    body(path),
                    node.ty
                ),
            );
        }
        return unchanged();
    }
    if node.int_or_string {
        if !(of_type("integer", v) || v.is_string()) {
            push(
                errors,
                path,
                format!(
                    "Invalid value: {}: {} must be of type int-or-string: {:?}",
                    show(v),
                    body(path),
                    type_name(v)
                ),
            );
            return unchanged();
        }
    } else if !node.ty.is_empty() && !of_type(&node.ty, v) {
        push(
            errors,
            path,
            format!(
                "Invalid value: {:?}: {} must be of type {}: {:?}",
                type_name(v),
                body(path),
                node.ty,
                type_name(v)
            ),
        );
        return unchanged();
    }
    constraints(node, v, old, path, errors);
    match v {
        Value::Object(m) => object_fields(node, m, old.and_then(Value::as_object), path, errors),
        Value::Array(items) => {
            array_items(node, items, old.and_then(Value::as_array), path, errors)
        }
        _ => old == Some(v),
    }
}

/// The checks of one node on one value, without descending (also used for value validations:
/// allOf, anyOf, oneOf, not); `old`: what `v` correlates with (allOf's properties ratchet).
fn constraints(node: &Node, v: &Value, old: Option<&Value>, path: &str, errors: &mut Errors) {
    if let Some(allowed) = &node.enumeration
        && !allowed.contains(v)
    {
        let list: Vec<String> = allowed.iter().map(show).collect();
        push(
            errors,
            path,
            format!(
                "Unsupported value: {}: supported values: {}",
                show(v),
                list.join(", ")
            ),
        );
    }
    match v {
        Value::String(s) => string(node, s, path, errors),
        Value::Number(_) => number(node, v, path, errors),
        Value::Array(items) => {
            let n = items.len() as u64;
            if let Some(max) = node.max_items
                && n > max
            {
                push(
                    errors,
                    path,
                    format!("Too many: {n}: must have at most {max} items"),
                );
            }
            if let Some(min) = node.min_items
                && n < min
            {
                push(
                    errors,
                    path,
                    format!(
                        "Invalid value: {n}: {} should have at least {min} items",
                        body(path)
                    ),
                );
            }
        }
        Value::Object(m) => {
            let n = m.len() as u64;
            if let Some(max) = node.max_properties
                && n > max
            {
                push(
                    errors,
                    path,
                    format!("Too many: {n}: must have at most {max} items"),
                );
            }
            if let Some(min) = node.min_properties
                && n < min
            {
                push(
                    errors,
                    path,
                    format!(
                        "Invalid value: {n}: {} should have at least {min} properties",
                        body(path)
                    ),
                );
            }
            for r in &node.required {
                if !m.contains_key(r) {
                    push(errors, &child(path, r), "Required value".into());
                }
            }
        }
        _ => {}
    }
    for s in &node.all_of {
        deep(s, v, old, path, errors);
    }
    if !node.any_of.is_empty() && !node.any_of.iter().any(|s| passes(s, v, path)) {
        push(
            errors,
            path,
            format!(
                "Invalid value: {}: {} must validate at least one schema (anyOf)",
                show(v),
                body(path)
            ),
        );
    }
    if !node.one_of.is_empty() && node.one_of.iter().filter(|s| passes(s, v, path)).count() != 1 {
        push(
            errors,
            path,
            format!(
                "Invalid value: {}: {} must validate one and only one schema (oneOf)",
                show(v),
                body(path)
            ),
        );
    }
    if let Some(not) = &node.not
        && passes(not, v, path)
    {
        push(
            errors,
            path,
            format!(
                "Invalid value: {}: {} must not validate the schema (not)",
                show(v),
                body(path)
            ),
        );
    }
}

/// A value validation (inside allOf/anyOf/oneOf/not): its own checks and those of its
/// properties and items; a property equal to its correlated old value is not checked
/// (ratcheting follows properties into allOf, as upstream's sub-validators do).
fn deep(node: &Node, v: &Value, old: Option<&Value>, path: &str, errors: &mut Errors) {
    constraints(node, v, old, path, errors);
    match v {
        Value::Object(m) => {
            for (k, c) in &node.properties {
                if let Some(x) = m.get(k) {
                    let was = old.and_then(|o| o.get(k));
                    if was.is_some_and(|o| o == x) {
                        continue;
                    }
                    deep(c, x, was, &child(path, k), errors);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item) = &node.items {
                for (i, x) in items.iter().enumerate() {
                    deep(item, x, None, &format!("{path}[{i}]"), errors);
                }
            }
        }
        _ => {}
    }
}

fn passes(node: &Node, v: &Value, path: &str) -> bool {
    let mut e = Vec::new();
    if !node.ty.is_empty() && !of_type(&node.ty, v) {
        return false;
    }
    deep(node, v, None, path, &mut e);
    e.is_empty()
}

fn string(node: &Node, s: &str, path: &str, errors: &mut Errors) {
    let chars = s.chars().count() as u64;
    if let Some(max) = node.max_length
        && chars > max
    {
        push(
            errors,
            path,
            format!("Too long: may not be more than {max} bytes"),
        );
    }
    if let Some(min) = node.min_length
        && chars < min
    {
        push(
            errors,
            path,
            format!(
                "Invalid value: {s:?}: {} should be at least {min} chars long",
                body(path)
            ),
        );
    }
    if let Some((text, re)) = &node.pattern
        && !re.is_match(s)
    {
        push(
            errors,
            path,
            format!("Invalid value: {s:?}: {} should match '{text}'", body(path)),
        );
    }
    if !node.format.is_empty() && !super::structural::format_ok(&node.format, s) {
        push(
            errors,
            path,
            format!(
                "Invalid value: {s:?}: {} must be of type {}: {s:?}",
                body(path),
                node.format
            ),
        );
    }
}

fn number(node: &Node, v: &Value, path: &str, errors: &mut Errors) {
    let Some(n) = v.as_f64() else { return };
    if node.format == "int32" && (n < f64::from(i32::MIN) || n > f64::from(i32::MAX)) {
        push(
            errors,
            path,
            format!(
                "Invalid value: {}: {} must be of type int32: {}",
                show(v),
                body(path),
                show(v)
            ),
        );
    }
    if let Some((min, exclusive)) = node.minimum {
        let bad = if exclusive { n <= min } else { n < min };
        if bad {
            let rel = if exclusive {
                "greater than"
            } else {
                "greater than or equal to"
            };
            push(
                errors,
                path,
                format!(
                    "Invalid value: {}: {} should be {rel} {}",
                    show(v),
                    body(path),
                    num(min)
                ),
            );
        }
    }
    if let Some((max, exclusive)) = node.maximum {
        let bad = if exclusive { n >= max } else { n > max };
        if bad {
            let rel = if exclusive {
                "less than"
            } else {
                "less than or equal to"
            };
            push(
                errors,
                path,
                format!(
                    "Invalid value: {}: {} should be {rel} {}",
                    show(v),
                    body(path),
                    num(max)
                ),
            );
        }
    }
    if let Some(m) = node.multiple_of
        && m > 0.0
        && (n / m).fract().abs() > 1e-9
    {
        push(
            errors,
            path,
            format!(
                "Invalid value: {}: {} should be a multiple of {}",
                show(v),
                body(path),
                num(m)
            ),
        );
    }
}

/// A schema bound as upstream prints it (whole numbers without a fraction).
fn num(f: f64) -> String {
    if f.fract() == 0.0 && f.abs() < 1e15 {
        format!("{}", f as i64)
    } else {
        f.to_string()
    }
}

/// An object's fields; whether all are unchanged (a field without a schema, or one the old
/// object lacks, is not: upstream cannot correlate it).
fn object_fields(
    node: &Node,
    m: &Map<String, Value>,
    old: Option<&Map<String, Value>>,
    path: &str,
    errors: &mut Errors,
) -> bool {
    let mut unchanged = old.is_some_and(|o| o.len() == m.len());
    for (k, v) in m {
        let was = old.and_then(|o| o.get(k));
        if let Some(c) = node.properties.get(k) {
            unchanged &= value(c, v, was, &child(path, k), errors);
        } else if let Some(Additional::Schema(s)) = &node.additional {
            unchanged &= value(s, v, was, &child(path, k), errors);
        } else {
            if matches!(node.additional, Some(Additional::Forbidden)) && !node.preserve_unknown {
                push(
                    errors,
                    &child(path, k),
                    "Forbidden: may not be specified".into(),
                );
            }
            unchanged = false;
        }
    }
    unchanged
}

/// A list's items; whether the list is unchanged (a map list item by item, by its keys; any
/// other list as a whole: its items correlate with nothing).
fn array_items(
    node: &Node,
    items: &[Value],
    old: Option<&Vec<Value>>,
    path: &str,
    errors: &mut Errors,
) -> bool {
    let as_whole = || old.is_some_and(|o| o.as_slice() == items);
    let Some(item) = &node.items else {
        return as_whole();
    };
    let keyed = old.and_then(|o| correlate::MapList::new(node, o));
    let mut unchanged = old.is_some_and(|o| o.len() == items.len());
    for (i, v) in items.iter().enumerate() {
        let was = keyed.as_ref().and_then(|l| l.get(v));
        unchanged &= value(item, v, was, &format!("{path}[{i}]"), errors);
    }
    if keyed.is_none() {
        unchanged = as_whole();
    }
    if node.unique_items {
        super::listtype::equal_items(items, path, errors);
    }
    unchanged
}
