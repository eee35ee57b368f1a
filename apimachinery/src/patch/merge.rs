//! JSON merge patch (RFC 7386) as upstream applies it (`evanphx/json-patch.v4`'s
//! `MergePatch`): members of the patch replace the document's, objects merge member by member,
//! `null` removes a member, and a value that arrives where there was none (or none that was an
//! object) loses its `null` members, as v4's `pruneNulls` has it (also inside arrays' objects;
//! `null` items of arrays stay).
//!
//! In place and linear: each member of the patch is one map look-up in the document, and the
//! document keeps its members' order.

use serde_json::{Map, Value};

use super::{Limits, PatchError};

/// Applies the merge patch `patch` to `doc`.
pub fn apply(doc: &Value, patch: &Value, limits: &Limits) -> Result<Value, PatchError> {
    let Value::Object(patch) = patch else {
        // v4 answers such a patch itself (pruned); a Kubernetes object cannot be one.
        return Err(PatchError::BadRequest(
            "json: cannot unmarshal merge patch: not an object".into(),
        ));
    };
    let mut doc = doc.clone();
    let mut steps = 0usize;
    merge(&mut doc, patch, limits, &mut steps)?;
    Ok(doc)
}

/// Merges `patch` into `target`.
fn merge(
    target: &mut Value,
    patch: &Map<String, Value>,
    limits: &Limits,
    steps: &mut usize,
) -> Result<(), PatchError> {
    if !target.is_object() {
        let mut fresh = Value::Object(Map::new());
        std::mem::swap(target, &mut fresh);
    }
    let Value::Object(doc) = target else {
        return Ok(());
    };
    // Removed members leave in one pass at the end: removing each where it stands would shift
    // the members after it, quadratic for a wide object.
    let mut removed = std::collections::HashSet::new();
    for (key, value) in patch {
        limits.tick(steps)?;
        if value.is_null() {
            if doc.contains_key(key) {
                removed.insert(key.as_str());
            }
            continue;
        }
        match (doc.get_mut(key), value) {
            (Some(current @ Value::Object(_)), Value::Object(p)) => {
                merge(current, p, limits, steps)?
            }
            (Some(current), _) if !current.is_null() && !current.is_object() => {
                *current = pruned(value.clone());
            }
            // Into an object, a non-object replaces it as it came (v4 prunes nothing then).
            (Some(current), _) if current.is_object() => *current = value.clone(),
            (Some(current), _) => *current = pruned(value.clone()),
            (None, _) => {
                doc.insert(key.clone(), pruned(value.clone()));
            }
        }
    }
    if !removed.is_empty() {
        doc.retain(|k, _| !removed.contains(k.as_str()));
    }
    Ok(())
}

/// `v` without its objects' `null` members (v4's `pruneNulls`).
fn pruned(v: Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, pruned(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.into_iter().map(pruned).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn merged(doc: Value, patch: Value) -> Value {
        apply(&doc, &patch, &Limits::default()).expect("applies")
    }

    /// RFC 7386's appendix A, as v4 applies them to objects.
    #[test]
    fn rfc_7386_examples() {
        for (doc, patch, want) in [
            (json!({"a": "b"}), json!({"a": "c"}), json!({"a": "c"})),
            (
                json!({"a": "b"}),
                json!({"b": "c"}),
                json!({"a": "b", "b": "c"}),
            ),
            (json!({"a": "b"}), json!({"a": null}), json!({})),
            (
                json!({"a": "b", "b": "c"}),
                json!({"a": null}),
                json!({"b": "c"}),
            ),
            (json!({"a": ["b"]}), json!({"a": "c"}), json!({"a": "c"})),
            (json!({"a": "c"}), json!({"a": ["b"]}), json!({"a": ["b"]})),
            (
                json!({"a": {"b": "c"}}),
                json!({"a": {"b": "d", "c": null}}),
                json!({"a": {"b": "d"}}),
            ),
            (
                json!({"a": [{"b": "c"}]}),
                json!({"a": [1]}),
                json!({"a": [1]}),
            ),
            (
                json!({"e": null}),
                json!({"a": 1}),
                json!({"e": null, "a": 1}),
            ),
            (
                json!({}),
                json!({"a": {"bb": {"ccc": null}}}),
                json!({"a": {"bb": {}}}),
            ),
        ] {
            assert_eq!(merged(doc.clone(), patch.clone()), want, "{doc} + {patch}");
        }
    }

    #[test]
    fn new_values_lose_their_null_members_and_keep_null_items() {
        assert_eq!(
            merged(json!({"a": 1}), json!({"b": [{"x": null, "y": 1}, null]})),
            json!({"a": 1, "b": [{"y": 1}, null]})
        );
        // Replacing an object with a non-object prunes nothing (v4's `merge`).
        assert_eq!(
            merged(json!({"a": {"x": 1}}), json!({"a": [{"x": null}]})),
            json!({"a": [{"x": null}]})
        );
    }

    #[test]
    fn members_keep_their_order() {
        let out = merged(
            json!({"a": 1, "b": 2, "c": 3}),
            json!({"b": 20, "a": null, "d": 4}),
        );
        let keys: Vec<&String> = out.as_object().expect("object").keys().collect();
        assert_eq!(keys, ["b", "c", "d"]);
        assert_eq!(out["b"], 20);
    }

    #[test]
    fn a_patch_that_is_not_an_object_is_a_bad_request() {
        assert!(matches!(
            apply(&json!({}), &json!([1]), &Limits::default()),
            Err(PatchError::BadRequest(_))
        ));
    }

    /// 100,000 members merge in linear time (each one map look-up, no shifting).
    #[test]
    fn a_wide_patch_merges_in_linear_time() {
        let n = 100_000;
        let doc: Map<String, Value> = (0..n).map(|i| (format!("k{i}"), json!(i))).collect();
        let patch: Map<String, Value> = (0..n)
            .map(|i| {
                (
                    format!("k{i}"),
                    if i % 2 == 0 { Value::Null } else { json!("v") },
                )
            })
            .collect();
        let out = merged(Value::Object(doc), Value::Object(patch));
        assert_eq!(out.as_object().map(Map::len), Some(n / 2));
    }
}
