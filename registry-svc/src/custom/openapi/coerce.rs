//! What a schema changes in an object before it is validated, in upstream's order: pruning
//! of unknown fields (`pruning.PruneWithOptions`), then of nulls that can only be errors
//! (`defaulting.PruneNonNullableNullsWithoutDefaults`), then defaulting (`defaulting.Default`).
//! Applied to what clients send, and to what is read from storage (a field removed from the
//! schema is no longer served; a new default is).

use serde_json::{Map, Value};

use super::{Additional, Node};

/// Drops the fields `node` does not know, below `v` (`pruning.prune`).
pub(super) fn prune_unknown(node: &Node, v: &mut Value) {
    match v {
        Value::Object(m) => {
            if node.int_or_string {
                return;
            }
            prune_object(node, m, false)
        }
        Value::Array(items) => {
            if let Some(item) = &node.items {
                for i in items {
                    prune_unknown(item, i);
                }
            }
        }
        _ => {}
    }
}

/// Prunes `m` by `node` (`root`: the resource's root, whose apiVersion, kind and metadata
/// stay).
pub(super) fn prune_object(node: &Node, m: &mut Map<String, Value>, root: bool) {
    let keep_unknown = node.preserve_unknown;
    let embedded = root || node.embedded;
    let additional = match &node.additional {
        Some(Additional::Schema(s)) => Some(s.as_ref()),
        _ => None,
    };
    m.retain(|k, v| {
        // A resource's apiVersion, kind and metadata are the API's, whatever the schema says of
        // them: generated schemas (kubebuilder's) declare `metadata: {type: object}` with no
        // properties, and pruning by it would drop the object's name. Upstream skips them too
        // (`pruning.prune` on an embedded resource; ObjectMeta has its own coercion).
        if embedded && (k == "apiVersion" || k == "kind" || k == "metadata") {
            return true;
        }
        if let Some(child) = node.properties.get(k) {
            prune_unknown(child, v);
            return true;
        }
        if let Some(s) = additional {
            prune_unknown(s, v);
            return true;
        }
        keep_unknown
    });
}

/// Drops every field whose value is null where its schema is neither nullable nor has a
/// default (`PruneNonNullableNullsWithoutDefaults`): such a null could only be refused, and
/// upstream takes it as "unset". A non-nullable null with a default is left for [`default`].
/// Items of lists are not dropped (a null item stays an error, as upstream).
pub(super) fn prune_nulls(node: &Node, v: &mut Value) {
    match v {
        Value::Object(m) => m.retain(|k, x| {
            let Some(s) = super::correlate::field(node, k) else {
                return true;
            };
            if x.is_null() {
                return s.nullable || s.default.is_some();
            }
            prune_nulls(s, x);
            true
        }),
        Value::Array(items) => {
            if let Some(item) = &node.items {
                for x in items {
                    prune_nulls(item, x);
                }
            }
        }
        _ => {}
    }
}

/// Fills defaults below `v` (whose own default, if absent, its parent filled): an absent
/// field, or a null one whose schema is not nullable, takes its default (`defaulting.Default`).
pub(super) fn default(node: &Node, v: &mut Value) {
    let null_to_default = |s: &Node, x: &mut Value| {
        if x.is_null()
            && !s.nullable
            && let Some(d) = &s.default
        {
            *x = d.clone();
        }
    };
    match v {
        Value::Object(m) => {
            for (k, child) in &node.properties {
                if let Some(d) = &child.default
                    && !m.contains_key(k)
                {
                    m.insert(k.clone(), d.clone());
                }
            }
            for (k, x) in m.iter_mut() {
                let Some(s) = super::correlate::field(node, k) else {
                    continue;
                };
                null_to_default(s, x);
                default(s, x);
            }
        }
        Value::Array(items) => {
            if let Some(item) = &node.items {
                for x in items {
                    null_to_default(item, x);
                    default(item, x);
                }
            }
        }
        _ => {}
    }
}
