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

use std::{
    cell::RefCell,
    collections::{HashMap, HashSet},
};

use serde_json::{Map, Value};

use super::{Limits, PatchError};
use crate::{
    descriptors::{Descriptors, FieldType, MessageDesc},
    rules::ListStrategy,
};

const PATCH: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const SET_ELEMENT_ORDER: &str = "$setElementOrder/";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList/";
/// Upstream's `ErrBadPatchFormatForRetainKeys`.
const BAD_RETAIN_KEYS: &str = "invalid patch format of retainKeys";

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
    limits: &'a Limits,
    /// Members and items merged so far (the deadline is looked at every few hundred).
    steps: RefCell<usize>,
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
        match patch.shift_remove(PATCH) {
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
        // Upstream's `applyRetainKeysDirective`: a list of keys, which every key the patch
        // sets (not removes) must be among; the original keeps only those.
        let bad_retain = || PatchError::BadRequest(BAD_RETAIN_KEYS.into());
        let retain = match patch.shift_remove(RETAIN_KEYS) {
            None => None,
            Some(Value::Array(keys)) => Some(
                keys.iter()
                    .map(|k| k.as_str().map(String::from).ok_or_else(bad_retain))
                    .collect::<Result<HashSet<_>, _>>()?,
            ),
            Some(_) => return Err(bad_retain()),
        };
        if let Some(retain) = &retain
            && patch.iter().any(|(k, v)| {
                !v.is_null()
                    && !k.starts_with(SET_ELEMENT_ORDER)
                    && !k.starts_with(DELETE_FROM_PRIMITIVE_LIST)
                    && !retain.contains(k)
            })
        {
            return Err(bad_retain());
        }
        let mut orders = Vec::new();
        let mut deletions = Vec::new();
        let mut members = Vec::with_capacity(patch.len());
        for (k, v) in patch {
            if let Some(list) = k.strip_prefix(SET_ELEMENT_ORDER) {
                orders.push((list.to_string(), v));
            } else if let Some(list) = k.strip_prefix(DELETE_FROM_PRIMITIVE_LIST) {
                deletions.push((list.to_string(), v));
            } else {
                members.push((k, v));
            }
        }
        let mut out = original;
        for (list, values) in deletions {
            self.limits.tick(&mut self.steps.borrow_mut())?;
            let Value::Array(values) = values else {
                return Err(PatchError::BadRequest(format!(
                    "{DELETE_FROM_PRIMITIVE_LIST}{list} must be a list"
                )));
            };
            if let Some(Value::Array(items)) = out.get_mut(&list) {
                let gone: HashSet<String> = values.iter().map(identity).collect();
                items.retain(|i| !gone.contains(&identity(i)));
            }
        }
        // Members merge where they stand (the object keeps its order); removed ones leave in
        // one pass at the end, not each with a shift of the members after it.
        let mut removed = HashSet::new();
        for (k, pv) in members {
            self.limits.tick(&mut self.steps.borrow_mut())?;
            if pv.is_null() {
                if out.contains_key(&k) {
                    removed.insert(k);
                }
                continue;
            }
            let field = self.field(schema, &k);
            let current = out.get_mut(&k).map(std::mem::take);
            let merged = match (current, pv) {
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
                        if out.contains_key(&k) {
                            removed.insert(k);
                        }
                        continue;
                    }
                    Value::Object(clean_map(p))
                }
                (_, Value::Array(p)) => Value::Array(clean_list(p)),
                (_, scalar) => scalar,
            };
            match out.get_mut(&k) {
                Some(slot) => *slot = merged,
                None => {
                    out.insert(k, merged);
                }
            }
        }
        if !removed.is_empty() {
            out.retain(|k, _| !removed.contains(k));
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
            out.retain(|k, _| retain.contains(k));
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
                // A union: what the original has, then what the patch adds, each value once
                // more at most (a set of what is there, not a scan per value).
                let mut seen: HashSet<String> = original.iter().map(identity).collect();
                let mut out = original;
                for p in patch {
                    self.limits.tick(&mut self.steps.borrow_mut())?;
                    if seen.insert(identity(&p)) {
                        out.push(p);
                    }
                }
                Ok(Value::Array(out))
            }
            ListStrategy::MergeByKey(key) | ListStrategy::MergeByKeyRetainKeys(key) => {
                self.merge_by_key(original, patch, key, items, depth)
            }
        }
    }

    /// A list merged by `key` (upstream's `mergeSlice` with a merge key): a patch item with
    /// the key of an original item merges into it, a new key is appended, `$patch: delete`
    /// removes every item of its key. Items are found through an index of their keys: one
    /// look-up per patch item, however long the lists.
    fn merge_by_key(
        &self,
        original: Vec<Value>,
        patch: Vec<Value>,
        key: &str,
        items: Option<&'a MessageDesc>,
        depth: usize,
    ) -> Result<Value, PatchError> {
        let schema = items.map_or(Schema::Free, Schema::Message);
        let id_of = |v: &Value| v.as_object().and_then(|m| m.get(key)).map(identity);
        // Slots of the merged list (None: deleted), and where each key's items are.
        let mut out: Vec<Option<Value>> = Vec::with_capacity(original.len() + patch.len());
        let mut at: HashMap<String, Vec<usize>> = HashMap::with_capacity(original.len());
        let mut scalars: HashSet<String> = HashSet::new();
        for (i, o) in original.into_iter().enumerate() {
            match id_of(&o) {
                Some(id) => at.entry(id).or_default().push(i),
                None => {
                    scalars.insert(identity(&o));
                }
            }
            out.push(Some(o));
        }
        for p in patch {
            self.limits.tick(&mut self.steps.borrow_mut())?;
            let Value::Object(mut pm) = p else {
                // Scalars in a list merged by key: union, as upstream does.
                if scalars.insert(identity(&p)) {
                    out.push(Some(p));
                }
                continue;
            };
            let Some(id) = pm.get(key).map(identity) else {
                return Err(PatchError::BadRequest(format!(
                    "map: {} does not contain declared merge key: {key}",
                    Value::Object(pm)
                )));
            };
            if pm.get(PATCH).and_then(Value::as_str) == Some("delete") {
                for i in at.remove(&id).unwrap_or_default() {
                    out[i] = None;
                }
                continue;
            }
            match at.get(&id).and_then(|slots| slots.first()).copied() {
                Some(i) => {
                    let merged = match out[i].take() {
                        Some(Value::Object(om)) => self.merge_map(om, pm, schema, depth + 1)?,
                        _ => Value::Object(clean_map(pm)),
                    };
                    out[i] = Some(merged);
                }
                None => {
                    pm.shift_remove(PATCH);
                    at.entry(id).or_default().push(out.len());
                    out.push(Some(Value::Object(clean_map(pm))));
                }
            }
        }
        Ok(Value::Array(out.into_iter().flatten().collect()))
    }
}

/// A value's identity among a list's items: its compact JSON (what a set of them is keyed
/// by; lists of scalars and merge keys, which are scalars, compare as upstream compares them).
fn identity(v: &Value) -> String {
    match v {
        Value::String(s) => format!("s{s}"),
        other => format!("j{other}"),
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
/// order does not name keep their relative order after those it names. Each item's rank is one
/// look-up in a map of the order.
fn reorder(items: &mut [Value], order: &[Value], key: Option<&str>) {
    let id = |v: &Value| -> String {
        match key {
            Some(k) => v
                .as_object()
                .and_then(|m| m.get(k))
                .map_or_else(|| identity(&Value::Null), identity),
            None => identity(v),
        }
    };
    let mut ranks: HashMap<String, usize> = HashMap::with_capacity(order.len());
    for (i, o) in order.iter().enumerate() {
        ranks.entry(id(o)).or_insert(i);
    }
    items.sort_by_cached_key(|v| ranks.get(&id(v)).copied().unwrap_or(order.len()));
}

/// Applies `patch` to `original`, an object of `message`, as upstream's `StrategicMergePatch`,
/// within `limits`.
pub fn apply(
    descriptors: &Descriptors,
    message: &str,
    original: &Value,
    patch: &Value,
    limits: &Limits,
) -> Result<Value, PatchError> {
    let (Value::Object(o), Value::Object(p)) = (original, patch) else {
        return Err(PatchError::BadRequest(
            "a strategic merge patch must be a JSON object".into(),
        ));
    };
    let walker = Walker {
        descriptors,
        limits,
        steps: RefCell::new(0),
    };
    let schema = walker
        .message(message)
        .map_or(Schema::Free, Schema::Message);
    walker.merge_map(o.clone(), p.clone(), schema, 0)
}

#[cfg(test)]
mod tests;
