//! Merging two objects, the right one winning (upstream's `merge.go`).

use super::*;

impl ParseableType {
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

    pub(super) fn merge_node(
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

    pub(super) fn merge_kind(
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
    pub(super) fn merge_index<'v>(
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
    pub(super) fn merge_list_items(
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
}
