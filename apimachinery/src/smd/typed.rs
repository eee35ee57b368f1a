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

use std::{
    collections::{BTreeMap, BTreeSet},
    fmt,
    sync::Arc,
};

use serde_json::{Map, Value};

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

    /// Upstream's `TypedValue.Validate`: every value fits its schema, undeclared fields have
    /// an element type, associative lists' items have keys (and, unless `allow_duplicates`, no
    /// key twice).
    pub fn validate(&self, v: &Value, allow_duplicates: bool) -> Result<(), ValidationErrors> {
        let mut errs = Vec::new();
        let mut path = Vec::new();
        self.validate_node(
            &mut path,
            Some(&self.type_ref),
            v,
            allow_duplicates,
            &mut errs,
        );
        if errs.is_empty() {
            Ok(())
        } else {
            Err(ValidationErrors(errs))
        }
    }

    fn validate_node(
        &self,
        path: &mut Vec<PathElement>,
        tr: Option<&TypeRef>,
        v: &Value,
        dups: bool,
        errs: &mut Vec<ValidationError>,
    ) {
        let atom = match self.resolve(tr) {
            Ok(a) => a,
            Err(e) => return push_err(errs, path, e),
        };
        match deduce(&atom, Some(v)) {
            Kind::Invalid => push_err(errs, path, invalid_atom(tr)),
            Kind::Scalar(k) => {
                if let Some(e) = validate_scalar(k, Some(v), "") {
                    push_err(errs, path, e);
                }
            }
            Kind::List(t) => {
                let items = match v {
                    Value::Null => return,
                    Value::Array(items) => items,
                    other => return push_err(errs, path, format!("expected list, got {other}")),
                };
                let mut observed = BTreeSet::new();
                for (i, child) in items.iter().enumerate() {
                    let pe = if t.relationship != ElementRelationship::Associative {
                        PathElement::Index(i as i64)
                    } else {
                        match self.list_item_pe(t, child) {
                            Ok(pe) => pe,
                            Err(e) => return push_err(errs, path, format!("element {i}: {e}")),
                        }
                    };
                    if t.relationship == ElementRelationship::Associative {
                        if observed.contains(&pe) && !dups {
                            push_err(errs, path, format!("duplicate entries for key {pe}"));
                        }
                        observed.insert(pe.clone());
                    }
                    path.push(pe);
                    self.validate_node(path, Some(&t.element_type), child, dups, errs);
                    path.pop();
                }
            }
            Kind::Map(t) => {
                let m = match v {
                    Value::Null => return,
                    Value::Object(m) => m,
                    other => return push_err(errs, path, format!("expected map, got {other}")),
                };
                for (key, val) in m {
                    path.push(PathElement::Field(key.clone()));
                    let Some(ft) = field_type(t, key) else {
                        push_err(errs, path, "field not declared in schema");
                        path.pop();
                        return;
                    };
                    self.validate_node(path, Some(ft), val, dups, errs);
                    path.pop();
                }
            }
        }
    }

    // ---------------------------------------------------------------- to_field_set

    /// Upstream's `TypedValue.ToFieldSet`: the paths `v` sets. Scalars, atomic lists and
    /// atomic maps are leaves; every list item is a member (and its fields under it); a map
    /// field is a member when its value is null or an empty map, or when the schema does not
    /// declare it (so that pruning removes the whole undeclared value); a declared field that
    /// holds a non-empty map is implied by what is under it.
    pub fn to_field_set(&self, v: &Value) -> Result<Set, ValidationErrors> {
        let mut set = Set::new();
        let mut errs = Vec::new();
        let mut path = Vec::new();
        self.to_set_node(&mut path, Some(&self.type_ref), v, &mut set, &mut errs);
        if errs.is_empty() {
            Ok(set)
        } else {
            Err(ValidationErrors(errs))
        }
    }

    fn to_set_node(
        &self,
        path: &mut Vec<PathElement>,
        tr: Option<&TypeRef>,
        v: &Value,
        set: &mut Set,
        errs: &mut Vec<ValidationError>,
    ) {
        let atom = match self.resolve(tr) {
            Ok(a) => a,
            Err(e) => return push_err(errs, path, e),
        };
        match deduce(&atom, Some(v)) {
            Kind::Invalid => push_err(errs, path, invalid_atom(tr)),
            Kind::Scalar(_) => set.insert(path),
            Kind::List(t) => {
                if t.relationship == ElementRelationship::Atomic {
                    return set.insert(path);
                }
                let Value::Array(items) = v else { return };
                let pes: Vec<Option<PathElement>> =
                    items.iter().map(|c| self.list_item_pe(t, c).ok()).collect();
                // An item named twice is owned as a whole: its path is a member, nothing
                // under it.
                let mut seen = BTreeSet::new();
                let mut duplicates = BTreeSet::new();
                for pe in pes.iter().flatten() {
                    if !seen.insert(pe.clone()) && duplicates.insert(pe.clone()) {
                        path.push(pe.clone());
                        set.insert(path);
                        path.pop();
                    }
                }
                for (child, pe) in items.iter().zip(pes) {
                    let Some(pe) = pe else { continue };
                    if duplicates.contains(&pe) {
                        continue;
                    }
                    path.push(pe);
                    self.to_set_node(path, Some(&t.element_type), child, set, errs);
                    set.insert(path);
                    path.pop();
                }
            }
            Kind::Map(t) => {
                if t.relationship == ElementRelationship::Atomic {
                    return set.insert(path);
                }
                let Value::Object(m) = v else { return };
                for (key, val) in m {
                    path.push(PathElement::Field(key.clone()));
                    self.to_set_node(path, field_type(t, key), val, set, errs);
                    let empty_map = val.as_object().is_some_and(Map::is_empty);
                    if val.is_null() || empty_map || !t.fields.contains_key(key) {
                        set.insert(path);
                    }
                    path.pop();
                }
            }
        }
    }

    // ---------------------------------------------------------------- compare

    /// Upstream's `TypedValue.Compare`: what was added, modified and removed going from `lhs`
    /// to `rhs` (`Value::Null` for no object).
    pub fn compare(&self, lhs: &Value, rhs: &Value) -> Result<Comparison, ValidationErrors> {
        let mut c = Comparison::default();
        let mut errs = Vec::new();
        let mut path = Vec::new();
        self.compare_node(
            &mut path,
            Some(&self.type_ref),
            Some(lhs),
            Some(rhs),
            &mut c,
            &mut errs,
        );
        if errs.is_empty() {
            Ok(c)
        } else {
            Err(ValidationErrors(errs))
        }
    }

    fn compare_node(
        &self,
        path: &mut Vec<PathElement>,
        tr: Option<&TypeRef>,
        lhs: Option<&Value>,
        rhs: Option<&Value>,
        c: &mut Comparison,
        errs: &mut Vec<ValidationError>,
    ) {
        if lhs.is_none() && rhs.is_none() {
            return push_err(errs, path, "at least one of lhs and rhs must be provided");
        }
        let atom = match self.resolve(tr) {
            Ok(a) => a,
            Err(e) => return push_err(errs, path, e),
        };
        let kl = deduce(&atom, lhs);
        let kr = deduce(&atom, rhs);
        let in_leaf = if rhs.is_none() {
            self.compare_kind(kl, tr, path, lhs, rhs, c, errs)
        } else if lhs.is_none() || kl.same(&kr) {
            self.compare_kind(kr, tr, path, lhs, rhs, c, errs)
        } else {
            self.compare_kind(kl, tr, path, lhs, rhs, c, errs);
            self.compare_kind(kr, tr, path, lhs, rhs, c, errs)
        };
        if !in_leaf {
            if lhs.is_none() {
                c.added.insert(path);
            } else if rhs.is_none() {
                c.removed.insert(path);
            }
        }
    }

    /// Handles one kind; whether the node was a leaf.
    #[allow(clippy::too_many_arguments)]
    fn compare_kind(
        &self,
        kind: Kind<'_>,
        tr: Option<&TypeRef>,
        path: &mut Vec<PathElement>,
        lhs: Option<&Value>,
        rhs: Option<&Value>,
        c: &mut Comparison,
        errs: &mut Vec<ValidationError>,
    ) -> bool {
        let leaf = |c: &mut Comparison, path: &[PathElement]| match (lhs, rhs) {
            (None, _) => c.added.insert(path),
            (_, None) => c.removed.insert(path),
            (Some(l), Some(r)) => {
                if !value::equals(l, r) {
                    c.modified.insert(path);
                }
            }
        };
        match kind {
            Kind::Invalid => {
                push_err(errs, path, invalid_atom(tr));
                false
            }
            Kind::Scalar(k) => {
                let le = validate_scalar(k, lhs, "lhs: ");
                let re = validate_scalar(k, rhs, "rhs: ");
                if let (Some(le), Some(re)) = (le, re) {
                    push_err(errs, path, le);
                    push_err(errs, path, re);
                    return false;
                }
                leaf(c, path);
                true
            }
            Kind::List(t) => {
                let (l, r) = (as_list(lhs), as_list(rhs));
                let empty = l.is_none_or(Vec::is_empty) && r.is_none_or(Vec::is_empty);
                if t.relationship == ElementRelationship::Atomic || empty {
                    leaf(c, path);
                    return true;
                }
                self.compare_list_items(path, t, l, r, c, errs);
                false
            }
            Kind::Map(t) => {
                let (l, r) = (as_map(lhs), as_map(rhs));
                let empty = l.is_none_or(Map::is_empty) && r.is_none_or(Map::is_empty);
                if t.relationship == ElementRelationship::Atomic || empty {
                    leaf(c, path);
                    return true;
                }
                for (key, lv, rv) in zip_maps(l, r) {
                    path.push(PathElement::Field(key.to_string()));
                    self.compare_node(path, field_type(t, key), lv, rv, c, errs);
                    path.pop();
                }
                false
            }
        }
    }

    /// Groups a list's items by the element naming them, in first-seen order; errors for
    /// items that cannot be named.
    fn index_items<'v>(
        &self,
        path: &[PathElement],
        t: &ListType,
        items: Option<&'v Vec<Value>>,
        errs: &mut Vec<ValidationError>,
    ) -> Vec<(PathElement, Vec<&'v Value>)> {
        let mut out: Vec<(PathElement, Vec<&'v Value>)> = Vec::new();
        let mut at: BTreeMap<PathElement, usize> = BTreeMap::new();
        for (i, child) in items.into_iter().flatten().enumerate() {
            match self.list_item_pe(t, child) {
                Ok(pe) => match at.get(&pe) {
                    Some(&j) => out[j].1.push(child),
                    None => {
                        at.insert(pe.clone(), out.len());
                        out.push((pe, vec![child]));
                    }
                },
                Err(e) => push_err(errs, path, format!("element {i}: {e}")),
            }
        }
        out
    }

    fn compare_list_items(
        &self,
        path: &mut Vec<PathElement>,
        t: &ListType,
        lhs: Option<&Vec<Value>>,
        rhs: Option<&Vec<Value>>,
        c: &mut Comparison,
        errs: &mut Vec<ValidationError>,
    ) {
        let l = self.index_items(path, t, lhs, errs);
        let r = self.index_items(path, t, rhs, errs);
        let r_index: BTreeMap<&PathElement, &Vec<&Value>> =
            r.iter().map(|(pe, v)| (pe, v)).collect();
        let l_index: BTreeMap<&PathElement, &Vec<&Value>> =
            l.iter().map(|(pe, v)| (pe, v)).collect();
        let mut all: Vec<&PathElement> = l.iter().map(|(pe, _)| pe).collect();
        all.extend(
            r.iter()
                .map(|(pe, _)| pe)
                .filter(|pe| !l_index.contains_key(pe)),
        );
        let empty = Vec::new();
        for pe in all {
            let ll = l_index.get(pe).copied().unwrap_or(&empty);
            let rl = r_index.get(pe).copied().unwrap_or(&empty);
            path.push(pe.clone());
            match (ll.len(), rl.len()) {
                (0, 0) => {}
                (a, b) if a <= 1 && b <= 1 => {
                    self.compare_node(
                        path,
                        Some(&t.element_type),
                        ll.first().copied(),
                        rl.first().copied(),
                        c,
                        errs,
                    );
                }
                (a, b) if a >= 2 && b >= 2 => {
                    let same = a == b && ll.iter().zip(rl.iter()).all(|(x, y)| value::equals(x, y));
                    if !same {
                        c.modified.insert(path);
                    }
                }
                (a, _) if a >= 2 => {
                    if let Some(r0) = rl.first() {
                        self.compare_node(path, Some(&t.element_type), None, Some(r0), c, errs);
                    }
                    c.removed.insert(path);
                }
                _ => {
                    if let Some(l0) = ll.first() {
                        self.compare_node(path, Some(&t.element_type), Some(l0), None, c, errs);
                    }
                    c.added.insert(path);
                }
            }
            path.pop();
        }
    }

    // ---------------------------------------------------------------- merge

    /// Upstream's `TypedValue.Merge`: `rhs` laid over `lhs`. Leaves (scalars, atomic lists and
    /// maps) take `rhs`'s value where it has one; granular maps merge field by field;
    /// associative lists merge item by item (matched by key or value), keeping `rhs`'s order
    /// for the items it has and `lhs`'s items it lacks where they were relative to the shared
    /// ones.
    pub fn merge(&self, lhs: &Value, rhs: &Value) -> Result<Value, ValidationErrors> {
        let mut errs = Vec::new();
        let mut path = Vec::new();
        let out = self.merge_node(
            &mut path,
            Some(&self.type_ref),
            Some(lhs),
            Some(rhs),
            &mut errs,
        );
        if errs.is_empty() {
            Ok(out.unwrap_or(Value::Null))
        } else {
            Err(ValidationErrors(errs))
        }
    }

    fn merge_node(
        &self,
        path: &mut Vec<PathElement>,
        tr: Option<&TypeRef>,
        lhs: Option<&Value>,
        rhs: Option<&Value>,
        errs: &mut Vec<ValidationError>,
    ) -> Option<Value> {
        if lhs.is_none() && rhs.is_none() {
            push_err(errs, path, "at least one of lhs and rhs must be provided");
            return None;
        }
        let atom = match self.resolve(tr) {
            Ok(a) => a,
            Err(e) => {
                push_err(errs, path, e);
                return None;
            }
        };
        let kl = deduce(&atom, lhs);
        let kr = deduce(&atom, rhs);
        if rhs.is_none() {
            self.merge_kind(kl, tr, path, lhs, rhs, errs)
        } else if lhs.is_none() || kl.same(&kr) {
            self.merge_kind(kr, tr, path, lhs, rhs, errs)
        } else {
            // Upstream walks the left kind too (for its errors), keeping the right's result.
            let _ = self.merge_kind(kl, tr, path, lhs, rhs, errs);
            self.merge_kind(kr, tr, path, lhs, rhs, errs)
        }
    }

    fn merge_kind(
        &self,
        kind: Kind<'_>,
        tr: Option<&TypeRef>,
        path: &mut Vec<PathElement>,
        lhs: Option<&Value>,
        rhs: Option<&Value>,
        errs: &mut Vec<ValidationError>,
    ) -> Option<Value> {
        let leaf = || rhs.or(lhs).cloned();
        match kind {
            Kind::Invalid => {
                push_err(errs, path, invalid_atom(tr));
                None
            }
            Kind::Scalar(k) => {
                let le = validate_scalar(k, lhs, "lhs: ");
                let re = validate_scalar(k, rhs, "rhs: ");
                if let (Some(le), Some(re)) = (le, re) {
                    push_err(errs, path, le);
                    push_err(errs, path, re);
                    return None;
                }
                leaf()
            }
            Kind::List(t) => {
                let (l, r) = (as_list(lhs), as_list(rhs));
                let empty = l.is_none_or(Vec::is_empty) && r.is_none_or(Vec::is_empty);
                if t.relationship == ElementRelationship::Atomic || empty {
                    return leaf();
                }
                let out = self.merge_list_items(path, t, l, r, errs);
                (!out.is_empty()).then_some(Value::Array(out))
            }
            Kind::Map(t) => {
                let (l, r) = (as_map(lhs), as_map(rhs));
                let empty = l.is_none_or(Map::is_empty) && r.is_none_or(Map::is_empty);
                if t.relationship == ElementRelationship::Atomic || empty {
                    return leaf();
                }
                let mut out = Map::new();
                for (key, lv, rv) in zip_maps(l, r) {
                    path.push(PathElement::Field(key.to_string()));
                    if let Some(v) = self.merge_node(path, field_type(t, key), lv, rv, errs) {
                        out.insert(key.to_string(), v);
                    }
                    path.pop();
                }
                (!out.is_empty()).then_some(Value::Object(out))
            }
        }
    }

    /// The elements naming a list's items, in order, and each element's item (an explicit
    /// null for an element named twice, when `allow_duplicates`). Errors for unnamed items
    /// and, unless allowed, duplicates.
    fn merge_index<'v>(
        &self,
        path: &[PathElement],
        t: &ListType,
        items: Option<&'v Vec<Value>>,
        allow_duplicates: bool,
        errs: &mut Vec<ValidationError>,
    ) -> (Vec<PathElement>, BTreeMap<PathElement, &'v Value>) {
        static NULL: Value = Value::Null;
        let mut pes = Vec::new();
        let mut observed: BTreeMap<PathElement, &'v Value> = BTreeMap::new();
        for (i, child) in items.into_iter().flatten().enumerate() {
            let pe = match self.list_item_pe(t, child) {
                Ok(pe) => pe,
                Err(e) => {
                    push_err(errs, path, format!("element {i}: {e}"));
                    continue;
                }
            };
            if observed.contains_key(&pe) {
                if !allow_duplicates {
                    push_err(errs, path, format!("duplicate entries for key {pe}"));
                    continue;
                }
                observed.insert(pe.clone(), &NULL);
            } else {
                observed.insert(pe.clone(), child);
            }
            pes.push(pe);
        }
        (pes, observed)
    }

    /// Upstream's `mergingWalker.visitListItems`: walks both lists together, emitting shared
    /// items in `rhs`'s order, `lhs`-only items where they stood relative to shared ones, and
    /// `rhs`-only items where `rhs` has them.
    fn merge_list_items(
        &self,
        path: &mut Vec<PathElement>,
        t: &ListType,
        lhs: Option<&Vec<Value>>,
        rhs: Option<&Vec<Value>>,
        errs: &mut Vec<ValidationError>,
    ) -> Vec<Value> {
        let before = errs.len();
        let (rhs_pes, observed_rhs) = self.merge_index(path, t, rhs, false, errs);
        let (lhs_pes, observed_lhs) = self.merge_index(path, t, lhs, true, errs);
        if errs.len() > before {
            return Vec::new();
        }
        let mut shared: std::collections::VecDeque<&PathElement> = rhs_pes
            .iter()
            .filter(|pe| observed_lhs.contains_key(pe))
            .collect();
        let mut next_shared = shared.pop_front();
        let mut merged_rhs: BTreeSet<&PathElement> = BTreeSet::new();
        let mut out = Vec::new();
        let (l_len, r_len) = (lhs_pes.len(), rhs_pes.len());
        let (mut li, mut ri) = (0, 0);
        let elem = Some(&t.element_type);
        while li < l_len || ri < r_len {
            if li < l_len && ri < r_len {
                let pe = &lhs_pes[li];
                if *pe == rhs_pes[ri] {
                    merged_rhs.insert(pe);
                    path.push(pe.clone());
                    let lc = observed_lhs.get(pe).copied();
                    let rc = observed_rhs.get(pe).copied();
                    if let Some(v) = self.merge_node(path, elem, lc, rc, errs) {
                        out.push(v);
                    }
                    path.pop();
                    li += 1;
                    ri += 1;
                    next_shared = shared.pop_front();
                    continue;
                }
                if observed_rhs.contains_key(pe) && next_shared.is_some_and(|n| n != pe) {
                    li += 1;
                    continue;
                }
            }
            if li < l_len {
                let pe = &lhs_pes[li];
                if !observed_rhs.contains_key(pe) {
                    path.push(pe.clone());
                    let lc = lhs.and_then(|l| l.get(li));
                    if let Some(v) = self.merge_node(path, elem, lc, None, errs) {
                        out.push(v);
                    }
                    path.pop();
                    li += 1;
                    continue;
                } else if merged_rhs.contains(pe) {
                    li += 1;
                }
            }
            if ri < r_len {
                let pe = &rhs_pes[ri];
                merged_rhs.insert(pe);
                path.push(pe.clone());
                let lc = observed_lhs.get(pe).copied();
                let rc = observed_rhs.get(pe).copied();
                if let Some(v) = self.merge_node(path, elem, lc, rc, errs) {
                    out.push(v);
                }
                path.pop();
                ri += 1;
                if next_shared.is_some_and(|n| n == pe) {
                    next_shared = shared.pop_front();
                }
            }
        }
        out
    }

    // ---------------------------------------------------------------- remove / extract

    /// Upstream's `TypedValue.RemoveItems`: `v` without the paths in `items` (a member removes
    /// the field or item with everything under it). What ends up empty is `null`.
    pub fn remove_items(&self, v: &Value, items: &Set) -> Value {
        self.remove_node(Some(&self.type_ref), v, items, false)
    }

    /// Upstream's `TypedValue.ExtractItems`: only the paths in `items` of `v`. With
    /// `append_key_fields`, an associative list item that is extracted keeps its key fields
    /// (upstream's `WithAppendKeyFields`), so that the result can be applied back.
    pub fn extract_items(&self, v: &Value, items: &Set, append_key_fields: bool) -> Value {
        let mut items = items.clone();
        if append_key_fields && let Ok(present) = self.to_field_set(v) {
            let mut keys = Set::new();
            for path in items.paths() {
                if !present.has(&path) {
                    continue;
                }
                for (i, pe) in path.iter().enumerate() {
                    if let PathElement::Key(fields) = pe {
                        for (name, _) in fields {
                            let mut p: Vec<PathElement> = path[..=i].to_vec();
                            p.push(PathElement::Field(name.clone()));
                            keys.insert(&p);
                        }
                    }
                }
            }
            items = items.union(&keys);
        }
        self.remove_node(Some(&self.type_ref), v, &items, true)
    }

    fn remove_node(&self, tr: Option<&TypeRef>, v: &Value, items: &Set, extract: bool) -> Value {
        let Ok(atom) = self.resolve(tr) else {
            return Value::Null;
        };
        match deduce(&atom, Some(v)) {
            Kind::Invalid => Value::Null,
            Kind::Scalar(_) => v.clone(),
            Kind::List(t) => {
                let Value::Array(list) = v else {
                    return Value::Null;
                };
                if list.is_empty() || t.relationship == ElementRelationship::Atomic {
                    return if extract { v.clone() } else { Value::Null };
                }
                let mut out = Vec::new();
                for item in list {
                    let pe = self.list_item_pe(t, item).ok();
                    let exact = pe
                        .as_ref()
                        .is_some_and(|pe| items.has(std::slice::from_ref(pe)));
                    let sub = pe.as_ref().and_then(|pe| items.child(pe));
                    let prefix = sub.is_some_and(|s| !s.is_empty());
                    let walked = |item: &Value| match sub {
                        Some(s) if prefix => {
                            self.remove_node(Some(&t.element_type), item, s, extract)
                        }
                        _ => item.clone(),
                    };
                    if extract {
                        if exact || prefix {
                            out.push(walked(item));
                        }
                    } else if !exact {
                        out.push(walked(item));
                    }
                }
                if out.is_empty() {
                    Value::Null
                } else {
                    Value::Array(out)
                }
            }
            Kind::Map(t) => {
                let Value::Object(m) = v else {
                    return Value::Null;
                };
                if m.is_empty() || t.relationship == ElementRelationship::Atomic {
                    return if extract { v.clone() } else { Value::Null };
                }
                let mut out = Map::new();
                for (key, val) in m {
                    let pe = PathElement::Field(key.clone());
                    let ft = field_type(t, key);
                    if items.has(std::slice::from_ref(&pe)) {
                        if extract {
                            // As upstream: the whole set is passed down, not its subset.
                            out.insert(key.clone(), self.remove_node(ft, val, items, extract));
                        }
                        continue;
                    }
                    match items.child(&pe) {
                        Some(sub) if !sub.is_empty() => {
                            out.insert(key.clone(), self.remove_node(ft, val, sub, extract));
                        }
                        _ => {
                            if !extract {
                                out.insert(key.clone(), val.clone());
                            }
                        }
                    }
                }
                if out.is_empty() {
                    Value::Null
                } else {
                    Value::Object(out)
                }
            }
        }
    }
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
