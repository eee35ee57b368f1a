//! Objects walked with their schema (upstream's `typed` package): the field set an object
//! sets, validation, comparison, merging, and removing or extracting fields.
//!
//! A [`ParseableType`] is a schema and the type of an object's root in it. Values are plain
//! JSON; where upstream tells an absent value (`nil`) from an explicit `null`, the walkers here
//! take `Option<&Value>`.
//!
//! Deviations, all on input upstream rejects earlier anyway: the `String` and `Boolean` scalar
//! messages print the value as JSON (upstream prints Go's `%#v` of its internal value), and
//! [`ParseableType::to_field_set`] skips list items it cannot name (upstream names them with an
//! empty path element that then cannot be serialized).
//!
//! Here: the types, the schema resolution the walks share, and `zip_maps`; the walks live one
//! per concern: `validate` (validation and field sets), `compare`, `merge` and `remove`
//! (removing and extracting fields).

use std::{
    collections::{BTreeMap, BTreeSet},
    fmt,
    sync::Arc,
};

use serde_json::{Map, Value};

mod compare;
mod merge;
mod remove;
mod validate;

use super::{
    path::PathElement,
    schema::{Atom, ElementRelationship, ListType, MapType, ScalarKind, Schema, TypeRef},
    set::Set,
    value::{self, go_quote, go_type_name, is_scalar},
};

/// One validation error: where (a path as [`Path`] prints it; empty for the root) and what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValidationError {
    /// The path of the node at fault (`.spec.containers[name="a"]`).
    pub path: String,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ValidationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

/// Validation errors (upstream's `ValidationErrors`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ValidationErrors(pub Vec<ValidationError>);

impl ValidationErrors {
    /// The errors as `(path, message)` pairs.
    pub fn pairs(&self) -> Vec<(String, String)> {
        self.0
            .iter()
            .map(|e| (e.path.clone(), e.message.clone()))
            .collect()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Display for ValidationErrors {
    /// Upstream's form: the one error, or `errors:` and each indented on its own line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let [one] = self.0.as_slice() {
            return write!(f, "{one}");
        }
        write!(f, "errors:")?;
        for e in &self.0 {
            write!(f, "\n  {e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ValidationErrors {}

/// What changed between two objects (upstream's `typed.Comparison`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Comparison {
    /// Paths set in the left object only.
    pub removed: Set,
    /// Leaves (scalars, atomic lists and maps) set in both, to different values.
    pub modified: Set,
    /// Paths set in the right object only.
    pub added: Set,
}

impl Comparison {
    /// Whether nothing changed.
    pub fn is_same(&self) -> bool {
        self.removed.is_empty() && self.modified.is_empty() && self.added.is_empty()
    }

    /// The comparison without `fields` and everything under them (upstream's `ExcludeFields`).
    pub fn exclude_fields(self, fields: &Set) -> Comparison {
        if fields.is_empty() {
            return self;
        }
        Comparison {
            removed: self.removed.recursive_difference(fields),
            modified: self.modified.recursive_difference(fields),
            added: self.added.recursive_difference(fields),
        }
    }
}

impl fmt::Display for Comparison {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.modified.is_empty() {
            writeln!(f, "- Modified Fields:\n{}", self.modified)?;
        }
        if !self.added.is_empty() {
            writeln!(f, "- Added Fields:\n{}", self.added)?;
        }
        if !self.removed.is_empty() {
            writeln!(f, "- Removed Fields:\n{}", self.removed)?;
        }
        Ok(())
    }
}

/// A schema and the type of objects' roots in it (upstream's `typed.ParseableType`).
#[derive(Clone, Debug)]
pub struct ParseableType {
    /// The named types.
    pub schema: Arc<Schema>,
    /// The root's type.
    pub type_ref: TypeRef,
}

/// What a node is for one value: upstream's `deduceAtom` (the kind the value has, when the
/// atom allows it) then `handleAtom` (map, scalar, list, in that order).
#[derive(Clone, Copy)]
enum Kind<'a> {
    Scalar(ScalarKind),
    List(&'a ListType),
    Map(&'a MapType),
    Invalid,
}

impl Kind<'_> {
    fn same(&self, other: &Kind<'_>) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other)
    }
}

fn deduce<'a>(atom: &'a Atom, v: Option<&Value>) -> Kind<'a> {
    match v {
        Some(v) if is_scalar(v) => {
            if let Some(s) = atom.scalar {
                return Kind::Scalar(s);
            }
        }
        Some(Value::Array(_)) => {
            if let Some(l) = &atom.list {
                return Kind::List(l);
            }
        }
        Some(Value::Object(_)) => {
            if let Some(m) = &atom.map {
                return Kind::Map(m);
            }
        }
        _ => {}
    }
    if let Some(m) = &atom.map {
        Kind::Map(m)
    } else if let Some(s) = atom.scalar {
        Kind::Scalar(s)
    } else if let Some(l) = &atom.list {
        Kind::List(l)
    } else {
        Kind::Invalid
    }
}

fn path_string(path: &[PathElement]) -> String {
    path.iter().map(ToString::to_string).collect()
}

fn push_err(errs: &mut Vec<ValidationError>, path: &[PathElement], message: impl Into<String>) {
    errs.push(ValidationError {
        path: path_string(path),
        message: message.into(),
    });
}

fn invalid_atom(tr: Option<&TypeRef>) -> String {
    match tr {
        Some(TypeRef::Named { name, .. }) => {
            format!("schema error: invalid atom: named type: {name}")
        }
        _ => "schema error: invalid atom: inlined".into(),
    }
}

/// Upstream's `validateScalar`; `None` when `v` fits.
fn validate_scalar(kind: ScalarKind, v: Option<&Value>, prefix: &str) -> Option<String> {
    let v = v?;
    if v.is_null() {
        return None;
    }
    match kind {
        ScalarKind::Numeric if !v.is_number() => Some(format!(
            "{prefix}expected numeric (int or float), got {}",
            go_type_name(v)
        )),
        ScalarKind::String if !v.is_string() => Some(format!("{prefix}expected string, got {v}")),
        ScalarKind::Boolean if !v.is_boolean() => {
            Some(format!("{prefix}expected boolean, got {v}"))
        }
        ScalarKind::Untyped if !is_scalar(v) => {
            Some(format!("{prefix}expected any scalar, got {v}"))
        }
        _ => None,
    }
}

fn as_list(v: Option<&Value>) -> Option<&Vec<Value>> {
    v.and_then(Value::as_array)
}

fn as_map(v: Option<&Value>) -> Option<&Map<String, Value>> {
    v.and_then(Value::as_object)
}

fn field_type<'a>(t: &'a MapType, key: &str) -> Option<&'a TypeRef> {
    t.fields
        .get(key)
        .map(|f| &f.type_ref)
        .or(t.element_type.as_ref())
}

impl ParseableType {
    /// A type of `schema`.
    pub fn new(schema: Arc<Schema>, type_ref: TypeRef) -> Self {
        ParseableType { schema, type_ref }
    }

    /// Upstream's `DeducedParseableType`: objects without a schema, their maps granular, their
    /// lists atomic.
    pub fn deduced() -> Self {
        ParseableType::new(Arc::new(Schema::new()), TypeRef::deduced())
    }

    /// The atom `tr` names; `None` (upstream's empty `TypeRef`) is the empty atom, which no
    /// value fits.
    fn resolve(&self, tr: Option<&TypeRef>) -> Result<Arc<Atom>, String> {
        match tr {
            None => Ok(Arc::new(Atom::default())),
            Some(tr) => self
                .schema
                .resolve(tr)
                .ok_or_else(|| format!("schema error: no type found matching: {}", tr.describe())),
        }
    }

    /// Upstream's `listItemToPathElement`: the element naming an associative list's item.
    fn list_item_pe(&self, t: &ListType, child: &Value) -> Result<PathElement, String> {
        if t.relationship != ElementRelationship::Associative {
            return Err("invalid indexing of non-associative list".into());
        }
        if t.keys.is_empty() {
            return match child {
                Value::Object(_) => {
                    Err("associative list without keys has an element that's a map type".into())
                }
                Value::Array(_) => {
                    Err("not supported: associative list with lists as elements".into())
                }
                Value::Null => Err(
                    "associative list without keys has an element that's an explicit null".into(),
                ),
                v => Ok(PathElement::Value(v.clone())),
            };
        }
        let m = match child {
            Value::Null => {
                return Err("associative list with keys may not have a null element".into());
            }
            Value::Object(m) => m,
            _ => return Err("associative list with keys may not have non-map elements".into()),
        };
        let mut fields = Vec::new();
        for key in &t.keys {
            if let Some(v) = m.get(key) {
                fields.push((key.clone(), v.clone()));
                continue;
            }
            let atom = self.schema.resolve(&t.element_type).ok_or_else(|| {
                format!("couldn't find default value for {key}: invalid elementType for list")
            })?;
            let Some(map) = &atom.map else {
                return Err(format!(
                    "couldn't find default value for {key}: associative list may not have non-map types"
                ));
            };
            if let Some(d) = map.fields.get(key).and_then(|f| f.default.clone()) {
                fields.push((key.clone(), d));
            }
        }
        if fields.is_empty() {
            let keys: Vec<String> = t.keys.iter().map(|k| go_quote(k)).collect();
            return Err(format!(
                "associative list with keys has an element that omits all key fields [{}] (and doesn't have default values for any key fields)",
                keys.join(" ")
            ));
        }
        Ok(PathElement::key(fields))
    }

    // ---------------------------------------------------------------- validate
}

/// The union of two maps' keys with each side's value: the left's keys in its order, then the
/// right's other keys in its order.
fn zip_maps<'a>(
    l: Option<&'a Map<String, Value>>,
    r: Option<&'a Map<String, Value>>,
) -> Vec<(&'a str, Option<&'a Value>, Option<&'a Value>)> {
    let mut out = Vec::new();
    if let Some(l) = l {
        for (k, v) in l {
            out.push((k.as_str(), Some(v), r.and_then(|r| r.get(k))));
        }
    }
    if let Some(r) = r {
        for (k, v) in r {
            if l.is_none_or(|l| !l.contains_key(k)) {
                out.push((k.as_str(), None, Some(v)));
            }
        }
    }
    out
}
