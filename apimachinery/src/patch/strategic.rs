//! The strategic merge patch of built-in kinds (upstream's
//! `k8s.io/apimachinery/pkg/util/strategicpatch`, `StrategicMergePatch`), what kubectl's
//! `apply`, `edit` and default `patch` send for built-in kinds.
//!
//! Like a JSON merge patch, except for lists: a list field with upstream's `patchStrategy:
//! merge` (`rules`) is merged item by item, by its `patchMergeKey` (`containers` by `name`),
//! or as a union for scalars (`finalizers`); other lists are replaced. Directives:
//! - `$patch: replace` (a map or list is replaced whole), `$patch: delete` (a map is emptied; a
//!   list item with it removes the item of the same key), `$patch: merge` (the default);
//! - `$retainKeys: [..]`: the map keeps only those keys;
//! - `$setElementOrder/<list>: [..]`: the merged list's order (server-only items follow);
//! - `$deleteFromPrimitiveList/<list>: [..]`: those values leave a list of scalars;
//! - `null`: the key is removed.
//!
//! The field types come from the descriptors; a field the protos do not have (a `Struct`'s
//! contents, or an unknown key) is merged as a JSON merge patch would.

use serde_json::{Map, Value};

use super::PatchError;
use crate::{
    descriptors::{Descriptors, FieldType, MessageDesc},
    rules::ListStrategy,
};

const PATCH: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const SET_ELEMENT_ORDER: &str = "$setElementOrder/";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList/";

/// Nesting walked at most (objects are bounded by `json::MAX_DEPTH` already).
const MAX_DEPTH: usize = 512;

/// What is known of a value's type.
#[derive(Clone, Copy)]
enum Schema<'a> {
    /// A message of the protos.
    Message(&'a MessageDesc),
    /// A proto map whose values are this message (or anything, `None`).
    Map(Option<&'a MessageDesc>),
    /// Anything (a `Struct`, or a field the protos do not have).
    Free,
}

struct Walker<'a> {
    descriptors: &'a Descriptors,
}

/// The schema of a list's items, or a field's value.
enum FieldSchema<'a> {
    /// A list, with its strategy and the schema of its items.
    List(ListStrategy, Option<&'a MessageDesc>),
    /// A message, a map or anything.
    Value(Schema<'a>),
}

impl<'a> Walker<'a> {
    fn message(&self, name: &str) -> Option<&'a MessageDesc> {
        self.descriptors
            .message_desc(name)
            .map(|d| &**d)
            .filter(|d| !d.full_name.starts_with(".google.protobuf."))
    }

    /// What the field `key` of `schema` is.
    fn field(&self, schema: Schema<'a>, key: &str) -> FieldSchema<'a> {
        let desc = match schema {
            Schema::Message(desc) => desc,
            Schema::Map(Some(values)) => return FieldSchema::Value(Schema::Message(values)),
            Schema::Map(None) | Schema::Free => return FieldSchema::Value(Schema::Free),
        };
        let Some(field) = desc.field_by_json(key) else {
            return FieldSchema::Value(Schema::Free);
        };
        let msg = match &field.ty {
            FieldType::Message(m) => self.descriptors.message_desc(m).map(|d| &**d),
            _ => None,
        };
        if let Some(entry) = msg.filter(|d| d.map_entry) {
            let values = match entry.field(2).map(|f| &f.ty) {
                Some(FieldType::Message(m)) => self.message(m),
                _ => None,
            };
            return FieldSchema::Value(Schema::Map(values));
        }
        if field.repeated {
            let strategy = field.rule.list.unwrap_or(ListStrategy::Replace);
            return FieldSchema::List(
                strategy,
                msg.filter(|d| !d.full_name.starts_with(".google.protobuf.")),
            );
        }
        match msg {
            Some(d) if !d.full_name.starts_with(".google.protobuf.") => {
                FieldSchema::Value(Schema::Message(d))
            }
            _ => FieldSchema::Value(Schema::Free),
        }
    }

    fn merge_map(
        &self,
        original: Map<String, Value>,
        mut patch: Map<String, Value>,
        schema: Schema<'a>,
        depth: usize,
    ) -> Result<Value, PatchError> {
        if depth > MAX_DEPTH {
            return Err(PatchError::BadRequest("patch nested too deeply".into()));
        }
        match patch.remove(PATCH) {
            None => {}
            Some(Value::String(d)) if d == "replace" => return Ok(Value::Object(clean_map(patch))),
            Some(Value::String(d)) if d == "delete" => return Ok(Value::Object(Map::new())),
            Some(Value::String(d)) if d == "merge" => {}
            Some(other) => {
                return Err(PatchError::BadRequest(format!(
                    "Unknown patch directive: {other}"
                )));
            }
        }
        let retain = match patch.remove(RETAIN_KEYS) {
            None => None,
            Some(Value::Array(keys)) => Some(
                keys.iter()
                    .map(|k| {
                        k.as_str().map(String::from).ok_or_else(|| {
                            PatchError::BadRequest("$retainKeys must be a list of strings".into())
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()?,
            ),
            Some(_) => {
                return Err(PatchError::BadRequest(
                    "$retainKeys must be a list of strings".into(),
                ));
            }
        };
        let mut orders = Vec::new();
        let mut deletions = Vec::new();
        let keys: Vec<String> = patch.keys().cloned().collect();
        for k in keys {
            if let Some(list) = k.strip_prefix(SET_ELEMENT_ORDER) {
                let v = patch.remove(&k).unwrap_or(Value::Null);
                orders.push((list.to_string(), v));
            } else if let Some(list) = k.strip_prefix(DELETE_FROM_PRIMITIVE_LIST) {
                let v = patch.remove(&k).unwrap_or(Value::Null);
                deletions.push((list.to_string(), v));
            }
        }
        let mut out = original;
        for (list, values) in deletions {
            let Value::Array(values) = values else {
                return Err(PatchError::BadRequest(format!(
                    "{DELETE_FROM_PRIMITIVE_LIST}{list} must be a list"
                )));
            };
            if let Some(Value::Array(items)) = out.get_mut(&list) {
                items.retain(|i| !values.contains(i));
            }
        }
        for (k, pv) in patch {
            if pv.is_null() {
                out.remove(&k);
                continue;
            }
            let field = self.field(schema, &k);
            let merged = match (out.remove(&k), pv) {
                (Some(Value::Object(o)), Value::Object(p)) => {
                    let inner = match field {
                        FieldSchema::Value(s) => s,
                        FieldSchema::List(..) => Schema::Free,
                    };
                    self.merge_map(o, p, inner, depth + 1)?
                }
                (Some(Value::Array(o)), Value::Array(p)) => match field {
                    FieldSchema::List(strategy, items) => {
                        self.merge_list(o, p, strategy, items, depth + 1)?
                    }
                    FieldSchema::Value(_) => Value::Array(clean_list(p)),
                },
                (_, Value::Object(p)) => {
                    // Nothing to merge into: the patch's value, without its directives, and
                    // with a `$patch: delete` map meaning no value at all.
                    if p.get(PATCH).and_then(Value::as_str) == Some("delete") {
                        continue;
                    }
                    Value::Object(clean_map(p))
                }
                (_, Value::Array(p)) => Value::Array(clean_list(p)),
                (_, scalar) => scalar,
            };
            out.insert(k, merged);
        }
        for (list, order) in orders {
            let Value::Array(order) = order else {
                return Err(PatchError::BadRequest(format!(
                    "{SET_ELEMENT_ORDER}{list} must be a list"
                )));
            };
            let key = match self.field(schema, &list) {
                FieldSchema::List(ListStrategy::MergeByKey(k), _)
                | FieldSchema::List(ListStrategy::MergeByKeyRetainKeys(k), _) => Some(k),
                _ => None,
            };
            if let Some(Value::Array(items)) = out.get_mut(&list) {
                reorder(items, &order, key);
            }
        }
        if let Some(retain) = retain {
            out.retain(|k, _| retain.iter().any(|r| r == k));
        }
        Ok(Value::Object(out))
    }

    fn merge_list(
        &self,
        original: Vec<Value>,
        patch: Vec<Value>,
        strategy: ListStrategy,
        items: Option<&'a MessageDesc>,
        depth: usize,
    ) -> Result<Value, PatchError> {
        // `{"$patch": "replace"}` among the items: the other items replace the list.
        let replace = patch.iter().any(|i| {
            i.as_object()
                .is_some_and(|m| m.get(PATCH).and_then(Value::as_str) == Some("replace"))
        });
        if replace {
            let rest = patch
                .into_iter()
                .filter(|i| {
                    i.as_object()
                        .is_none_or(|m| m.get(PATCH).and_then(Value::as_str) != Some("replace"))
                })
                .collect();
            return Ok(Value::Array(clean_list(rest)));
        }
        match strategy {
            ListStrategy::Replace => Ok(Value::Array(clean_list(patch))),
            ListStrategy::MergePrimitives => {
                let mut out = original;
                for p in patch {
                    if !out.contains(&p) {
                        out.push(p);
                    }
                }
                Ok(Value::Array(out))
            }
            ListStrategy::MergeByKey(key) | ListStrategy::MergeByKeyRetainKeys(key) => {
                let schema = items.map_or(Schema::Free, Schema::Message);
                let mut out = original;
                for p in patch {
                    let Value::Object(mut pm) = p else {
                        // Scalars in a list merged by key: union, as upstream does.
                        if !out.contains(&p) {
                            out.push(p);
                        }
                        continue;
                    };
                    let Some(id) = pm.get(key).cloned() else {
                        return Err(PatchError::BadRequest(format!(
                            "map: {} does not contain declared merge key: {key}",
                            Value::Object(pm)
                        )));
                    };
                    let at = out
                        .iter()
                        .position(|o| o.as_object().and_then(|m| m.get(key)) == Some(&id));
                    if pm.get(PATCH).and_then(Value::as_str) == Some("delete") {
                        out.retain(|o| o.as_object().and_then(|m| m.get(key)) != Some(&id));
                        continue;
                    }
                    match at {
                        Some(i) => {
                            let Value::Object(om) = std::mem::take(&mut out[i]) else {
                                out[i] = Value::Object(clean_map(pm));
                                continue;
                            };
                            out[i] = self.merge_map(om, pm, schema, depth + 1)?;
                        }
                        None => {
                            pm.remove(PATCH);
                            out.push(Value::Object(clean_map(pm)));
                        }
                    }
                }
                Ok(Value::Array(out))
            }
        }
    }
}

/// A new value taken from a patch: its directives removed (deleted items and keys dropped).
fn clean_map(m: Map<String, Value>) -> Map<String, Value> {
    m.into_iter()
        .filter(|(k, _)| !k.starts_with('$'))
        .filter(|(_, v)| !v.is_null())
        .map(|(k, v)| (k, clean(v)))
        .collect()
}

fn clean_list(items: Vec<Value>) -> Vec<Value> {
    items
        .into_iter()
        .filter(|i| {
            !i.as_object().is_some_and(|m| {
                matches!(
                    m.get(PATCH).and_then(Value::as_str),
                    Some("delete" | "replace")
                )
            })
        })
        .map(clean)
        .collect()
}

fn clean(v: Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(clean_map(m)),
        Value::Array(a) => Value::Array(clean_list(a)),
        other => other,
    }
}

/// Orders `items` as `order` lists them (by merge key, or by value for scalars); items the
/// order does not name keep their relative order after those it names.
fn reorder(items: &mut [Value], order: &[Value], key: Option<&str>) {
    let id = |v: &Value| -> Value {
        match key {
            Some(k) => v
                .as_object()
                .and_then(|m| m.get(k))
                .cloned()
                .unwrap_or(Value::Null),
            None => v.clone(),
        }
    };
    let rank = |v: &Value| -> usize {
        let i = id(v);
        order.iter().position(|o| id(o) == i).unwrap_or(order.len())
    };
    items.sort_by_key(rank);
}

/// Applies `patch` to `original`, an object of `message`, as upstream's `StrategicMergePatch`.
pub fn apply(
    descriptors: &Descriptors,
    message: &str,
    original: &Value,
    patch: &Value,
) -> Result<Value, PatchError> {
    let (Value::Object(o), Value::Object(p)) = (original, patch) else {
        return Err(PatchError::BadRequest(
            "a strategic merge patch must be a JSON object".into(),
        ));
    };
    let walker = Walker { descriptors };
    let schema = walker
        .message(message)
        .map_or(Schema::Free, Schema::Message);
    walker.merge_map(o.clone(), p.clone(), schema, 0)
}

#[cfg(test)]
mod tests;
