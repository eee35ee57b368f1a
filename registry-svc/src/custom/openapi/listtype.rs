//! The duplicates of `x-kubernetes-list-type: set` and `map` lists (upstream's
//! `listtype.ValidateListSetsAndMaps`), checked apart from the schema's validation: on an
//! update, only when the old object had none (`Schema::validate_update`).

use std::collections::BTreeSet;

use serde_json::Value;

use super::{
    Additional, MAX_ERRORS, Node,
    validate::{child, push, show},
};

type Errors = Vec<(String, String)>;

/// The duplicates in `set` and `map` lists of `object` (upstream's
/// `listtype.ValidateListSetsAndMaps`, which names map values `[key]`).
pub(super) fn duplicates_of(root: &Node, object: &Value) -> Errors {
    let mut errors = Vec::new();
    duplicates(root, object, "", &mut errors);
    errors
}

fn duplicates(node: &Node, v: &Value, path: &str, errors: &mut Errors) {
    if errors.len() >= MAX_ERRORS {
        return;
    }
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if let Some(c) = node.properties.get(k) {
                    duplicates(c, x, &child(path, k), errors);
                } else if let Some(Additional::Schema(s)) = &node.additional {
                    duplicates(s, x, &format!("{path}[{k}]"), errors);
                }
            }
        }
        Value::Array(items) => {
            list_duplicates(node, items, path, errors);
            if let Some(item) = &node.items {
                for (i, x) in items.iter().enumerate() {
                    duplicates(item, x, &format!("{path}[{i}]"), errors);
                }
            }
        }
        _ => {}
    }
}

/// `Duplicate value` for each item equal to an earlier one (a `set`, and `uniqueItems`).
pub(super) fn equal_items(items: &[Value], path: &str, errors: &mut Errors) {
    let mut seen = BTreeSet::new();
    for (i, v) in items.iter().enumerate() {
        if !seen.insert(v.to_string()) {
            push(
                errors,
                &format!("{path}[{i}]"),
                format!("Duplicate value: {}", show(v)),
            );
        }
    }
}

fn list_duplicates(node: &Node, items: &[Value], path: &str, errors: &mut Errors) {
    match node.list_type.as_str() {
        "set" => equal_items(items, path, errors),
        "map" if !node.list_map_keys.is_empty() => {
            let mut seen = BTreeSet::new();
            for (i, v) in items.iter().enumerate() {
                let key: Vec<String> = node
                    .list_map_keys
                    .iter()
                    .map(|k| v.get(k).map(Value::to_string).unwrap_or_default())
                    .collect();
                if !seen.insert(key.clone()) {
                    let shown: Vec<String> = node
                        .list_map_keys
                        .iter()
                        .zip(&key)
                        .map(|(k, v)| format!("{k:?}:{v}"))
                        .collect();
                    push(
                        errors,
                        &format!("{path}[{i}]"),
                        format!(
                            "Duplicate value: map[string]interface {{}}{{{}}}",
                            shown.join(", ")
                        ),
                    );
                }
            }
        }
        _ => {}
    }
}
