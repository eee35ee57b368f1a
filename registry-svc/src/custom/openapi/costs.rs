//! The estimated cost limits a definition's rules must meet when it is written (upstream's
//! `ValidateCustomResourceDefinitionOpenAPISchema` and `CELSchemaContext`).
//!
//! The sizes a rule's estimate starts from come from its node's schema ([`bound`]: upstream's
//! `SchemaDeclType`), here, above the CEL rules (`custom::rules`), which know nothing of
//! schemas.
//!
//! Each rule's estimate (`rules::cost`, sizes from its node's schema) is multiplied by its
//! node's cardinality: the product of the `maxItems` and `maxProperties` of the lists and maps
//! above it, or, when one of them has none, how many values of the node's shortest JSON fit
//! in a 3 MiB request. A rule over [`STATIC_ESTIMATED_COST_LIMIT`], or a `messageExpression`
//! whose estimate alone is, is refused; so is a schema whose rules' estimates add up to more
//! than [`STATIC_ESTIMATED_CRD_COST_LIMIT`], naming its four most expensive rules.

use std::{collections::BTreeMap, sync::Arc};

use serde_json::Value;

use super::{Additional, Node};
use crate::custom::rules::{
    MAX_REQUEST_SIZE_BYTES, STATIC_ESTIMATED_COST_LIMIT, STATIC_ESTIMATED_CRD_COST_LIMIT,
    shape::{Bound, kind, max_cardinality},
};

/// The rules of a whole schema, as they add up.
#[derive(Default)]
struct Total {
    sum: u64,
    most_expensive: Vec<(String, u64)>,
}

impl Total {
    /// Upstream's `TotalCost.ObserveExpressionCost`.
    fn observe(&mut self, path: &str, cost: u64) {
        self.sum = self.sum.saturating_add(cost);
        if cost < STATIC_ESTIMATED_CRD_COST_LIMIT / 100 {
            return;
        }
        self.most_expensive.push((path.to_string(), cost));
        self.most_expensive.sort_by_key(|e| std::cmp::Reverse(e.1));
        self.most_expensive.truncate(4);
    }
}

/// Upstream's `getCostErrorMessage`.
pub fn exceeds(what: &str, cost: u64, limit: u64) -> String {
    let f = cost as f64 / limit as f64;
    let factor = if f > 100.0 {
        "more than 100x".to_string()
    } else if f < 1.5 {
        format!("{f:.6}x")
    } else {
        format!("{f:.1}x")
    };
    format!(
        "{what} exceeds budget by factor of {factor} (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
    )
}

fn at(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// The cost problems of the rules of the schema whose root is `root`, with paths below
/// `openAPIV3Schema` ("" for the schema itself). `per_expression`: whether each rule's own
/// limit applies (upstream skips it for a version whose schema did not change, so that a
/// stricter estimate never locks an existing definition).
pub fn check(root: &Node, per_expression: bool) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut total = Total::default();
    walk(
        root,
        "",
        Some(1),
        true,
        per_expression,
        &mut total,
        &mut out,
    );
    if total.sum > STATIC_ESTIMATED_CRD_COST_LIMIT {
        for (path, _) in &total.most_expensive {
            out.push((
                path.clone(),
                "Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema".into(),
            ));
        }
        out.push((
            String::new(),
            format!(
                "Forbidden: {}",
                exceeds(
                    "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
                    total.sum,
                    STATIC_ESTIMATED_CRD_COST_LIMIT
                )
            ),
        ));
    }
    out
}

/// The factor by which `node` multiplies how often its children occur (None: unbounded), as
/// upstream's `extractMaxElements`.
fn multiplies(node: &Node) -> Option<u64> {
    match node.ty.as_str() {
        "object" if node.additional.is_some() => node.max_properties,
        "array" => node.max_items,
        _ => Some(1),
    }
}

fn walk(
    node: &Node,
    path: &str,
    cardinality: Option<u64>,
    resource_root: bool,
    per_expression: bool,
    total: &mut Total,
    out: &mut Vec<(String, String)>,
) {
    if !node.rules.is_empty() {
        let bound: Arc<Bound> = bound(node, resource_root);
        let cardinality =
            cardinality.unwrap_or_else(|| max_cardinality(min_size(node, resource_root)));
        for (i, rule) in node.rules.iter().enumerate() {
            let (cost, message) = rule.estimate(&bound);
            let cost = if cost == 0 {
                0
            } else {
                cost.saturating_mul(cardinality)
            };
            let rule_path = at(path, &format!("x-kubernetes-validations[{i}].rule"));
            if per_expression && cost > STATIC_ESTIMATED_COST_LIMIT {
                out.push((
                    rule_path.clone(),
                    format!(
                        "Forbidden: {}",
                        exceeds("estimated rule cost", cost, STATIC_ESTIMATED_COST_LIMIT)
                    ),
                ));
            }
            total.observe(&rule_path, cost);
            if let Some(m) = message {
                let message_path = at(
                    path,
                    &format!("x-kubernetes-validations[{i}].messageExpression"),
                );
                if per_expression && m > STATIC_ESTIMATED_COST_LIMIT {
                    out.push((
                        message_path.clone(),
                        format!(
                            "Forbidden: {}",
                            exceeds(
                                "estimated messageExpression cost",
                                m,
                                STATIC_ESTIMATED_COST_LIMIT
                            )
                        ),
                    ));
                }
                total.observe(&message_path, m);
            }
        }
    }
    let below = match (cardinality, multiplies(node)) {
        (Some(c), Some(f)) => Some(c.saturating_mul(f)),
        _ => None,
    };
    for (k, child) in &node.properties {
        let p = at(path, &format!("properties[{k}]"));
        walk(child, &p, below, child.embedded, per_expression, total, out);
    }
    if let Some(Additional::Schema(child)) = &node.additional {
        let p = at(path, "additionalProperties");
        walk(child, &p, below, child.embedded, per_expression, total, out);
    }
    if let Some(child) = &node.items {
        let p = at(path, "items");
        walk(child, &p, below, child.embedded, per_expression, total, out);
    }
}

/// The bounds upstream's `SchemaDeclType` gives a value of `node` (`resource_root`: the
/// root of the object or of an embedded resource, where `apiVersion`, `kind`,
/// `metadata.name` and `metadata.generateName` are always declared).
pub(crate) fn bound(node: &Node, resource_root: bool) -> Arc<Bound> {
    const MAX_STRING: u64 = MAX_REQUEST_SIZE_BYTES - 2;
    if node.int_or_string {
        let size = node.max_length.map_or(MAX_STRING, |l| l.saturating_mul(4));
        return Arc::new(Bound::leaf(kind::SCALAR | kind::STRING, size, size, 0));
    }
    match node.ty.as_str() {
        "array" => {
            let Some(items) = &node.items else {
                return Bound::unknown();
            };
            let max = node
                .max_items
                .unwrap_or_else(|| (MAX_STRING) / (min_size(items, items.embedded) + 1));
            Bound::list(max, Some(bound(items, items.embedded)))
        }
        "object" => {
            if let Some(Additional::Schema(values)) = &node.additional {
                let max = node
                    .max_properties
                    .unwrap_or_else(|| (MAX_STRING) / (min_size(values, values.embedded) + 6));
                // Upstream's keys are `StringType`, whose size bound is 0.
                return Bound::map(
                    max,
                    Some(Bound::string(0, 0, false)),
                    Some(bound(values, values.embedded)),
                    BTreeMap::new(),
                    false,
                );
            }
            let mut fields: BTreeMap<String, Arc<Bound>> = node
                .properties
                .iter()
                .map(|(k, p)| (k.clone(), bound(p, p.embedded)))
                .collect();
            if resource_root {
                // Upstream's `WithTypeAndObjectMeta`.
                let string = |n| Bound::string(n, n, false);
                fields.insert("apiVersion".into(), string(MAX_STRING));
                fields.insert("kind".into(), string(MAX_STRING));
                let meta = BTreeMap::from([
                    ("name".to_string(), string(253 * 4)),
                    ("generateName".to_string(), string(252 * 4)),
                ]);
                fields.insert(
                    "metadata".into(),
                    Bound::map(2, Some(string(12)), None, meta, false),
                );
            }
            let longest = fields.keys().map(|k| k.chars().count() as u64).max();
            let mut object = (*Bound::map(
                fields.len() as u64,
                longest.map(|l| Bound::string(l, l, false)),
                None,
                fields,
                node.preserve_unknown,
            ))
            .clone();
            object.size = 0;
            Arc::new(object)
        }
        "string" => {
            let max = string_max(node);
            if node.format == "byte" {
                Bound::bytes(max)
            } else {
                Bound::string(max, max, false)
            }
        }
        // Upstream's size of a scalar or an object of the schema is its `MaxElements`: 0.
        "boolean" | "number" | "integer" => Arc::new(Bound::leaf(kind::SCALAR, 0, 0, 0)),
        _ => Bound::unknown(),
    }
}

/// Upstream's size bound of a string node.
fn string_max(node: &Node) -> u64 {
    const MAX_STRING: u64 = MAX_REQUEST_SIZE_BYTES - 2;
    match node.format.as_str() {
        "byte" => node.max_length.unwrap_or(MAX_STRING),
        "duration" | "date-time" => 32,
        "date" => 12,
        _ => match (node.max_length, &node.enumeration) {
            (Some(l), _) => l.saturating_mul(4),
            (None, Some(values)) if !values.is_empty() => values
                .iter()
                .filter_map(Value::as_str)
                .map(|s| s.len() as u64)
                .max()
                .unwrap_or(0),
            _ => MAX_STRING,
        },
    }
}

/// Upstream's `MinSerializedSize` of a value of `node`: the shortest JSON it can be.
pub(crate) fn min_size(node: &Node, _resource_root: bool) -> u64 {
    if node.int_or_string {
        return 1;
    }
    match node.ty.as_str() {
        "array" => 2,
        "object" => {
            if matches!(node.additional, Some(Additional::Schema(_))) {
                return 2;
            }
            let mut size = 2u64;
            for r in &node.required {
                if let Some(p) = node.properties.get(r)
                    && p.default.is_none()
                {
                    size = size
                        .saturating_add(r.len() as u64)
                        .saturating_add(min_size(p, p.embedded))
                        .saturating_add(4);
                }
            }
            size
        }
        "string" => match node.format.as_str() {
            "duration" => 3,
            "date" => 12,
            "date-time" => 21,
            _ => 2,
        },
        "boolean" => 4,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn problems(schema: Value, per_expression: bool) -> Vec<(String, String)> {
        let node = crate::custom::openapi::parse_node(&schema).expect("a schema");
        check(&node, per_expression)
    }

    const HINT: &str = "(try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)";

    /// The `messageExpression` of upstream's "Validation rules" documentation, a string
    /// concatenated with `string()` of integers, is refused by kube-apiserver too: cel-go
    /// (v0.23, Kubernetes 1.33) gives `string(int)` no size, so the concatenation's estimated
    /// size, and cost, is unbounded (kubernetes/kubernetes#124234 reports these three errors for
    /// `'invalid attempts: ' + string(self.attempts)`, with `minimum` and `maximum` set).
    #[test]
    fn a_message_concatenating_string_of_an_integer_is_refused_as_upstream_refuses_it() {
        for bounds in [
            json!({}),
            json!({"minimum": -2147483648i64, "maximum": 2147483647}),
        ] {
            let mut int = json!({"type": "integer"});
            int.as_object_mut()
                .expect("an object")
                .extend(bounds.as_object().expect("an object").clone());
            let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
                "x-kubernetes-validations": [{"rule": "self.replicas <= self.maxReplicas",
                    "messageExpression": "'replicas ' + string(self.replicas) + ' is above maxReplicas ' + string(self.maxReplicas)"}],
                "properties": {"replicas": int, "maxReplicas": int}}}});
            let at = "properties[spec].x-kubernetes-validations[0].messageExpression";
            assert_eq!(
                problems(schema, true),
                [
                    (
                        at.to_string(),
                        format!("Forbidden: estimated messageExpression cost exceeds budget by factor of more than 100x {HINT}")
                    ),
                    (
                        at.to_string(),
                        "Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema".to_string()
                    ),
                    (
                        String::new(),
                        format!("Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x {HINT}")
                    ),
                ]
            );
        }
        // A message of the values' own strings is bounded by their schema, and accepted.
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
            "x-kubernetes-validations": [{"rule": "self.a == self.b",
                "messageExpression": "'a ' + self.a + ' is not b ' + self.b"}],
            "properties": {"a": {"type": "string", "maxLength": 64}, "b": {"type": "string", "maxLength": 64}}}}});
        assert_eq!(problems(schema, true), []);
    }

    #[test]
    fn a_rule_over_the_limit_is_refused_with_upstreams_message() {
        let items = |max: Option<u64>| {
            let mut l = json!({"type": "array", "items": {"type": "integer"},
                "x-kubernetes-validations": [{"rule": "self.all (x, self.all (y, self.all (z, x + y + z >= 0)))"}]});
            if let Some(m) = max {
                l["maxItems"] = json!(m);
            }
            json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"items": l}}}})
        };
        let p = problems(items(None), true);
        let at = "properties[spec].properties[items].x-kubernetes-validations[0].rule";
        assert_eq!(
            p[0],
            (
                at.to_string(),
                format!(
                    "Forbidden: estimated rule cost exceeds budget by factor of more than 100x {HINT}"
                )
            )
        );
        assert_eq!(p[1], (at.to_string(), "Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema".to_string()));
        assert_eq!(p[2].0, "");
        assert!(p[2].1.starts_with("Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x"), "{p:?}");
        assert_eq!(p.len(), 3);
        // Bounded, the same rule is accepted; unchanged schemas skip the per-rule limit.
        assert_eq!(problems(items(Some(100)), true), vec![]);
        assert_eq!(
            problems(items(None), false).len(),
            2,
            "the total still applies"
        );
    }

    #[test]
    fn a_rule_costs_as_often_as_its_node_can_occur() {
        let schema = |max: Option<u64>| {
            let mut l = json!({"type": "array", "items": {"type": "string", "maxLength": 1000,
                "x-kubernetes-validations": [{"rule": "self.contains('a')",
                    "messageExpression": "self + self"}]}});
            if let Some(m) = max {
                l["maxItems"] = json!(m);
            }
            json!({"type": "object", "properties": {"names": l}})
        };
        // 401 per item: 4000 bytes traversed for one character.
        assert_eq!(problems(schema(Some(1000)), true), vec![]);
        // Unbounded: as many as fit in a request, 3 MiB / (2 + 1).
        // 401 x 1,048,576 = 420,478,976; the messageExpression's 802 is not multiplied.
        let at = "properties[names].items.x-kubernetes-validations[0].rule";
        let p = problems(schema(None), true);
        assert_eq!(
            p,
            vec![
                (
                    at.into(),
                    format!(
                        "Forbidden: estimated rule cost exceeds budget by factor of 42.0x {HINT}"
                    )
                ),
                (at.into(), "Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema".into()),
                (String::new(), format!("Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of 4.2x {HINT}")),
            ]
        );
    }

    #[test]
    fn the_schemas_rules_add_up() {
        // Each rule 2 + 3 x 3,166,666 = 9,500,000: eleven of them pass 100,000,000.
        let rules: Vec<Value> = (0..11)
            .map(|_| json!({"rule": "self.all(x, true)"}))
            .collect();
        let schema = json!({"type": "object", "properties": {"l": {"type": "array",
            "maxItems": 3_166_666, "items": {"type": "integer"}, "x-kubernetes-validations": rules}}});
        let p = problems(schema, true);
        let contributed = "Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema";
        let expected: Vec<(String, String)> = (0..4)
            .map(|i| {
                (
                    format!("properties[l].x-kubernetes-validations[{i}].rule"),
                    contributed.to_string(),
                )
            })
            .chain([(
                String::new(),
                format!("Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of 1.045000x {HINT}"),
            )])
            .collect();
        assert_eq!(p, expected);
    }

    #[test]
    fn factors_are_printed_as_upstream_prints_them() {
        assert!(exceeds("x", 15, 10).contains("factor of 1.5x"));
        assert!(exceeds("x", 11, 10).contains("factor of 1.100000x"));
        assert!(exceeds("x", 1001, 10).contains("factor of more than 100x"));
    }
}

#[cfg(test)]
#[path = "costs_estimate_tests.rs"]
mod estimate_tests;
