//! What changed between two objects (upstream's `compare.go`).

use super::*;

impl ParseableType {
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

    pub(super) fn compare_node(
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
    pub(super) fn compare_kind(
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
    pub(super) fn index_items<'v>(
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

    pub(super) fn compare_list_items(
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
}
