//! The CEL rules (`x-kubernetes-validations`) of a schema, run over an object in upstream's
//! order (`schema/cel` `Validator.validate`: a node's own rules, then its children's), with
//! upstream's correlation and ratcheting on an update:
//!
//! - `oldSelf` is the old value correlated with `self` (`correlate`): a property or map value
//!   by its key, a map-list item by its map keys; where there is none, transition rules (those
//!   reading `oldSelf`) are skipped, as on create.
//! - A rule that does not read `oldSelf` is not run when its value is unchanged from the old
//!   one (or, for a value that correlates with nothing, when its nearest correlated ancestor
//!   is unchanged): upstream runs it and turns a failure into a warning
//!   (`shouldRatchetError`); we have no warnings, so skipping it gives the same answer for
//!   less. Transition rules always run.

use serde_json::Value;

use super::{
    Additional, MAX_ERRORS, Node, correlate,
    validate::{child, push},
};
use crate::custom::rules::{Budget, evaluate};

type Errors = Vec<(String, String)>;

/// Runs the rules of `node` (the root) and below on the whole `object`, `old` before an update.
pub(super) fn root(
    node: &Node,
    object: &Value,
    old: Option<&Value>,
    errors: &mut Errors,
    budget: &mut Budget,
) {
    walk(node, object, old, false, "", true, errors, budget);
}

/// `old`: the value `v` correlates with; `parent_unchanged`: whether the nearest correlated
/// ancestor is unchanged (what ratchets `v` when it correlates with nothing).
#[allow(clippy::too_many_arguments)]
fn walk(
    node: &Node,
    v: &Value,
    old: Option<&Value>,
    parent_unchanged: bool,
    path: &str,
    root: bool,
    errors: &mut Errors,
    budget: &mut Budget,
) {
    // Null values are not visited (upstream's `validateExpressions`), nor anything once a
    // cost limit stopped evaluation.
    if errors.len() >= MAX_ERRORS || !node.rules_below.any || budget.stopped() || v.is_null() {
        return;
    }
    let unchanged = match old {
        Some(o) => correlate::equal(node, o, v),
        None => parent_unchanged,
    };
    if unchanged && !node.rules_below.transition {
        // Every rule here and below would be ratcheted.
        return;
    }
    let run: Vec<_> = node
        .rules
        .iter()
        .filter(|r| !unchanged || r.transition())
        .cloned()
        .collect();
    if !run.is_empty() {
        let old = old.filter(|o| !o.is_null());
        for (suffix, message) in evaluate(&run, &node.ty, v, old, budget) {
            let at = format!("{path}{suffix}");
            push(errors, at.trim_start_matches('.'), message);
        }
    }
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let (c, at) = if let Some(c) = node.properties.get(k) {
                    (c, child(path, k))
                } else if let Some(Additional::Schema(s)) = &node.additional {
                    // CEL errors name map values `[key]` (field.Path's Key).
                    (s.as_ref(), format!("{path}[{k}]"))
                } else {
                    continue;
                };
                // The root's apiVersion and kind correlate with nothing: both versions are
                // converted to the same one (upstream's `ratchetingOptions.key`).
                let type_meta = root && (k == "apiVersion" || k == "kind");
                let was = if type_meta {
                    None
                } else {
                    old.and_then(|o| o.get(k))
                };
                walk(
                    c,
                    x,
                    was,
                    unchanged && !type_meta,
                    &at,
                    false,
                    errors,
                    budget,
                );
            }
        }
        Value::Array(items) => {
            if let Some(item) = &node.items {
                let keyed = old
                    .and_then(Value::as_array)
                    .and_then(|o| correlate::MapList::new(node, o));
                for (i, x) in items.iter().enumerate() {
                    let was = keyed.as_ref().and_then(|l| l.get(x));
                    walk(
                        item,
                        x,
                        was,
                        unchanged,
                        &format!("{path}[{i}]"),
                        false,
                        errors,
                        budget,
                    );
                }
            }
        }
        _ => {}
    }
}
