//! Which old value a new one is "the same field" as, on an update (upstream's
//! `CorrelatedObject` and `MapList`, `k8s.io/apiserver/pkg/cel/common`): a property or a map
//! value by its key, an item of an `x-kubernetes-list-type: map` list by its map keys
//! (wherever it moved). Items of `atomic` and `set` lists correlate with nothing (upstream:
//! "Atomic lists are not correlatable by item"). Validation ratcheting and CEL transition rules
//! (`oldSelf`) both follow this correlation.

use std::collections::HashMap;

use serde_json::Value;

use super::{Additional, Node};

/// The old items of a map list, by their keys.
pub(super) struct MapList<'a> {
    keys: &'a [String],
    items: HashMap<String, &'a Value>,
}

impl<'a> MapList<'a> {
    /// The old `items` of the list `node`, if it is a map list (None otherwise).
    pub(super) fn new(node: &'a Node, items: &'a [Value]) -> Option<Self> {
        if node.list_type != "map" || node.list_map_keys.is_empty() {
            return None;
        }
        let keys = node.list_map_keys.as_slice();
        let mut by_key = HashMap::with_capacity(items.len());
        for item in items {
            if let Some(k) = key(keys, item) {
                // The first item with a key is the one correlated (upstream's `mapListImpl`).
                by_key.entry(k).or_insert(item);
            }
        }
        Some(Self {
            keys,
            items: by_key,
        })
    }

    /// The old item with the same keys as `item`, if any.
    pub(super) fn get(&self, item: &Value) -> Option<&'a Value> {
        self.items.get(&key(self.keys, item)?).copied()
    }
}

/// The composite key of a map-list item: every key present with a scalar value (else the item
/// correlates with nothing), in JSON so that `1` and `"1"` differ.
fn key(keys: &[String], item: &Value) -> Option<String> {
    let m = item.as_object()?;
    let mut out = String::new();
    for k in keys {
        match m.get(k)? {
            v @ (Value::Bool(_) | Value::Number(_) | Value::String(_)) => {
                out.push('\0');
                out.push_str(&v.to_string());
            }
            _ => return None,
        }
    }
    Some(out)
}

/// The schema of field `k` of an object of `node` (a property, else the map's values).
pub(super) fn field<'a>(node: &'a Node, k: &str) -> Option<&'a Node> {
    node.properties.get(k).or(match &node.additional {
        Some(Additional::Schema(s)) => Some(s.as_ref()),
        _ => None,
    })
}

/// Whether `new` is unchanged from `old` (upstream's `CachedDeepEqual`): map lists item by
/// correlated item (so reordering them changes nothing), objects field by field, where a field
/// without a schema counts as changed (it cannot be correlated), anything else as a whole.
pub(super) fn equal(node: &Node, old: &Value, new: &Value) -> bool {
    match (old, new) {
        (Value::Array(o), Value::Array(n)) => {
            if o.len() != n.len() {
                return false;
            }
            match (MapList::new(node, o), node.items.as_deref()) {
                (Some(list), Some(item)) => n
                    .iter()
                    .all(|x| list.get(x).is_some_and(|was| equal(item, was, x))),
                (Some(_), None) => false,
                (None, _) => o == n,
            }
        }
        (Value::Object(o), Value::Object(n)) => {
            o.len() == n.len()
                && n.iter().all(|(k, x)| match (o.get(k), field(node, k)) {
                    (Some(was), Some(s)) => equal(s, was, x),
                    _ => false,
                })
        }
        (Value::Array(_) | Value::Object(_), _) | (_, Value::Array(_) | Value::Object(_)) => false,
        _ => old == new,
    }
}
