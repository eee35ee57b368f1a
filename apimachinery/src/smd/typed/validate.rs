//! Validation of an object against its type, and the field set it sets (upstream's
//! `validate.go` and `tofieldset.go`).

use super::*;

impl ParseableType {
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

    pub(super) fn validate_node(
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

    pub(super) fn to_set_node(
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
}
