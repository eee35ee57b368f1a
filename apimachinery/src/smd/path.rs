//! Field paths (upstream's `fieldpath.PathElement` and `fieldpath.Path`): how a field set
//! names one field, list item or map entry of an object.
//!
//! A list item is named by what identifies it under the list's schema, never by its position
//! when that can be helped: an associative list's item by its key fields, a set's item by its
//! value; positions (`Index`) only appear where nothing better exists. That is what lets two
//! managers own different items of the same list, and an item keep its owner when others are
//! inserted before it.

use std::{cmp::Ordering, fmt};

use serde_json::Value;

use super::value;

/// One step of a [`Path`]. The order between elements is upstream's `PathElement.Compare`:
/// field names, then keys, then values, then indexes, each among themselves by their own order
/// (keys field by field, values by [`value::compare`]).
#[derive(Clone, Debug)]
pub enum PathElement {
    /// A field of a map (a struct field or a map's key): `f:<name>` in `FieldsV1`.
    Field(String),
    /// An associative list's item, by its key fields, sorted by field name:
    /// `k:{"name":"nginx"}` in `FieldsV1`.
    Key(Vec<(String, Value)>),
    /// A set-list item (`x-kubernetes-list-type: set`), by its value: `v:"a"` in `FieldsV1`.
    Value(Value),
    /// A list item by its position, where no key names it: `i:0` in `FieldsV1`.
    Index(i64),
}

impl PathElement {
    /// A field name element.
    pub fn field(name: impl Into<String>) -> Self {
        PathElement::Field(name.into())
    }

    /// A key element from `(field, value)` pairs in any order (sorted here, stably, as
    /// upstream's `KeyByFields`).
    pub fn key<S: Into<String>>(fields: impl IntoIterator<Item = (S, Value)>) -> Self {
        let mut fields: Vec<(String, Value)> =
            fields.into_iter().map(|(k, v)| (k.into(), v)).collect();
        fields.sort_by(|a, b| a.0.cmp(&b.0));
        PathElement::Key(fields)
    }

    /// A set item element.
    pub fn value(v: Value) -> Self {
        PathElement::Value(v)
    }

    /// An index element.
    pub fn index(i: i64) -> Self {
        PathElement::Index(i)
    }

    /// The field name, when this element is one.
    pub fn as_field(&self) -> Option<&str> {
        match self {
            PathElement::Field(name) => Some(name),
            _ => None,
        }
    }

    fn rank(&self) -> u8 {
        match self {
            PathElement::Field(_) => 0,
            PathElement::Key(_) => 1,
            PathElement::Value(_) => 2,
            PathElement::Index(_) => 3,
        }
    }
}

/// Upstream's `FieldList.Compare`: field by field (name, then value), the shorter list first.
fn compare_keys(a: &[(String, Value)], b: &[(String, Value)]) -> Ordering {
    for ((an, av), (bn, bv)) in a.iter().zip(b.iter()) {
        let c = an.cmp(bn).then_with(|| value::compare(av, bv));
        if c != Ordering::Equal {
            return c;
        }
    }
    a.len().cmp(&b.len())
}

impl Ord for PathElement {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (PathElement::Field(a), PathElement::Field(b)) => a.cmp(b),
            (PathElement::Key(a), PathElement::Key(b)) => compare_keys(a, b),
            (PathElement::Value(a), PathElement::Value(b)) => value::compare(a, b),
            (PathElement::Index(a), PathElement::Index(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

impl PartialOrd for PathElement {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for PathElement {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for PathElement {}

impl fmt::Display for PathElement {
    /// Upstream's `PathElement.String`: `.name`, `[k1=v1,k2=v2]`, `[=value]`, `[3]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathElement::Field(name) => write!(f, ".{name}"),
            PathElement::Key(fields) => {
                let parts: Vec<String> = fields
                    .iter()
                    .map(|(k, v)| format!("{k}={}", value::to_string(v)))
                    .collect();
                write!(f, "[{}]", parts.join(","))
            }
            PathElement::Value(v) => write!(f, "[={}]", value::to_string(v)),
            PathElement::Index(i) => write!(f, "[{i}]"),
        }
    }
}

impl From<&str> for PathElement {
    fn from(name: &str) -> Self {
        PathElement::Field(name.to_string())
    }
}

impl From<String> for PathElement {
    fn from(name: String) -> Self {
        PathElement::Field(name)
    }
}

/// A field path: the steps from an object's root to one of its fields or items. Paths order
/// element by element, a prefix before the paths it starts (upstream's `Path.Compare`).
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Path(pub Vec<PathElement>);

impl Path {
    /// The empty path (the object itself).
    pub fn new() -> Self {
        Path(Vec::new())
    }

    /// This path with `pe` appended.
    pub fn child(&self, pe: PathElement) -> Path {
        let mut p = self.0.clone();
        p.push(pe);
        Path(p)
    }

    /// The elements.
    pub fn elements(&self) -> &[PathElement] {
        &self.0
    }

    /// Whether this is the empty path.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.0.len()
    }
}

impl fmt::Display for Path {
    /// Upstream's `Path.String`: the elements' forms run together (`.spec.containers[name="a"]`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for pe in &self.0 {
            write!(f, "{pe}")?;
        }
        Ok(())
    }
}

impl From<Vec<PathElement>> for Path {
    fn from(v: Vec<PathElement>) -> Self {
        Path(v)
    }
}

impl std::ops::Deref for Path {
    type Target = [PathElement];
    fn deref(&self) -> &[PathElement] {
        &self.0
    }
}
