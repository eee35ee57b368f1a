//! Removing or extracting a field set's fields from an object (upstream's `remove.go`).

use super::*;

impl ParseableType {
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

    pub(super) fn remove_node(
        &self,
        tr: Option<&TypeRef>,
        v: &Value,
        items: &Set,
        extract: bool,
    ) -> Value {
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
