//! Upstream's estimates of rules on values of a schema (`TestCostEstimation`), the estimate read
//! on the parsed expression, and rules of published definitions within the limits.

use serde_json::{Value, json};

use super::bound;
use crate::custom::rules::{
    Budget, PER_REQUEST_BUDGET, STATIC_ESTIMATED_COST_LIMIT,
    tests::{eval, rule},
};

/// Upstream's estimate of `rule` on a value of `schema` (not a resource root).
fn estimate(schema: &Value, rule_text: &str) -> u64 {
    let node = crate::custom::openapi::parse_node(schema).expect("a schema");
    rule(json!({ "rule": rule_text }))
        .estimate(&bound(&node, false))
        .0
}

fn with_max(mut schema: Value, key: &str, max: Option<u64>) -> Value {
    if let Some(m) = max {
        schema[key] = json!(m);
    }
    schema
}

fn typed(t: &str) -> Value {
    match t {
        "int-or-string" => json!({"x-kubernetes-int-or-string": true}),
        "duration" | "date" | "date-time" => json!({"type": "string", "format": t}),
        _ => json!({ "type": t }),
    }
}

fn array_of(item: Value) -> impl Fn(Option<u64>) -> Value {
    move |max| with_max(json!({"type": "array", "items": item}), "maxItems", max)
}

fn map_of(item: Value) -> impl Fn(Option<u64>) -> Value {
    move |max| {
        with_max(
            json!({"type": "object", "additionalProperties": item}),
            "maxProperties",
            max,
        )
    }
}

fn string_with(max: Option<u64>) -> Value {
    with_max(json!({"type": "string"}), "maxLength", max)
}

fn object_with_required() -> Value {
    json!({"type": "object", "required": ["required"],
        "properties": {"required": {"type": "string"}, "optional": {"type": "string"}}})
}

/// Upstream's `TestCostEstimation` (apiextensions-apiserver `pkg/apiserver/schema/cel`), the
/// cases the `cel` crate's library can express: the estimate without size limits in the
/// schema, and with the case's limit.
#[test]
fn estimates_are_upstreams() {
    type Gen = Box<dyn Fn(Option<u64>) -> Value>;
    let cases: Vec<(&str, Gen, u64, u64, u64)> = vec![
        (
            "self.all(x, true)",
            Box::new(array_of(typed("number"))),
            4718591,
            10,
            32,
        ),
        (
            "self.all(x, true)",
            Box::new(array_of(typed("string"))),
            3145727,
            20,
            62,
        ),
        (
            "self.all(x, true)",
            Box::new(array_of(typed("boolean"))),
            1887437,
            5,
            17,
        ),
        (
            "self.all(x, true)",
            Box::new(array_of(
                json!({"type": "array", "items": {"type": "number"}}),
            )),
            3145727,
            100,
            302,
        ),
        (
            "self.all(x, true)",
            Box::new(array_of(object_with_required())),
            555128,
            50,
            152,
        ),
        (
            "self.all(x, true)",
            Box::new(map_of(typed("number"))),
            1348169,
            10,
            32,
        ),
        (
            "self.all(x, true)",
            Box::new(map_of(typed("string"))),
            1179647,
            3,
            11,
        ),
        (
            "self.all(x, true)",
            Box::new(map_of(typed("boolean"))),
            943718,
            100,
            302,
        ),
        (
            "self.contains('test')",
            Box::new(string_with),
            314574,
            10,
            5,
        ),
        ("self.startsWith('test')", Box::new(string_with), 2, 15, 2),
        ("self.endsWith('test')", Box::new(string_with), 2, 30, 2),
        (
            "size(self + \"hello\") > size(\"hello\")",
            Box::new(string_with),
            314578,
            4,
            7,
        ),
        (
            "self[1] == 0.0",
            Box::new(array_of(typed("number"))),
            2,
            5000,
            2,
        ),
        (
            "self[1] == self[1]",
            Box::new(array_of(typed("string"))),
            314577,
            8,
            314577,
        ),
        (
            "self.all(x, self.all(y, true))",
            Box::new(array_of(typed("number"))),
            u64::MAX,
            10,
            352,
        ),
        (
            "self.all(x, self.all(y, self.all(z, true)))",
            Box::new(array_of(typed("number"))),
            u64::MAX,
            10,
            3552,
        ),
        ("self.matches(\"x\")", Box::new(string_with), 314574, 50, 22),
        (
            "\"\".matches(\"(((((((((())))))))))[0-9]\")",
            Box::new(string_with),
            7,
            10,
            7,
        ),
        ("self.matches(\"\")", Box::new(string_with), 1, 100, 1),
        (
            "self[3] == 0.0",
            Box::new(array_of(typed("number"))),
            2,
            0,
            2,
        ),
        (
            "self[\"x\"] == 0.0",
            Box::new(map_of(typed("number"))),
            2,
            0,
            2,
        ),
        ("self == \"x\"", Box::new(string_with), 2, 0, 1),
        (
            "self.all(x, x == 0.0)",
            Box::new(array_of(typed("number"))),
            6291454,
            3 * 1024 * 2048,
            25165826,
        ),
        (
            "self.all(x, true)",
            Box::new(array_of(typed("int-or-string"))),
            4718591,
            10,
            32,
        ),
        (
            "self[0] == 5",
            Box::new(array_of(typed("int-or-string"))),
            3,
            10,
            3,
        ),
        (
            "self[0] == false",
            Box::new(array_of(typed("boolean"))),
            2,
            25,
            2,
        ),
        (
            "self[0] == null",
            Box::new(array_of(object_with_required())),
            2,
            422,
            2,
        ),
        (
            "self.all(x, true)",
            Box::new(array_of(typed("duration"))),
            2359295,
            5,
            17,
        ),
        (
            "self.all(x, true)",
            Box::new(array_of(typed("date"))),
            725936,
            15,
            47,
        ),
        (
            "self.all(x, true)",
            Box::new(array_of(typed("date-time"))),
            428963,
            25,
            77,
        ),
        (
            "self.all(x, true)",
            Box::new(map_of(typed("int-or-string"))),
            1348169,
            15,
            47,
        ),
        (
            "self.all(x, true)",
            Box::new(map_of(object_with_required())),
            428963,
            20,
            62,
        ),
        (
            "self.all(x, true)",
            Box::new(map_of(
                json!({"type": "object", "additionalProperties": {"type": "number"}}),
            )),
            1179647,
            10,
            32,
        ),
        (
            "self.all(x, true)",
            Box::new(map_of(
                json!({"type": "array", "items": {"type": "number"}}),
            )),
            1179647,
            25,
            77,
        ),
        (
            "self.all(x, true)",
            Box::new(map_of(typed("duration"))),
            1048577,
            5,
            17,
        ),
        (
            "self.all(x, true)",
            Box::new(map_of(typed("date"))),
            524288,
            10,
            32,
        ),
        (
            "self.all(x, true)",
            Box::new(map_of(typed("date-time"))),
            349526,
            25,
            77,
        ),
        (
            "oldSelf.size() == self.size()",
            Box::new(map_of(typed("integer"))),
            5,
            10,
            5,
        ),
        (
            "self[\"a\"] == self[\"b\"]",
            Box::new(map_of(typed("date-time"))),
            8,
            7,
            8,
        ),
        (
            "self[\"c\"] == self[\"d\"]",
            Box::new(map_of(typed("duration"))),
            8,
            42,
            8,
        ),
        (
            "self.all(x, x.y == 25.2)",
            Box::new(array_of(
                json!({"type": "object", "additionalProperties": {"type": "number"}}),
            )),
            6291452,
            12,
            74,
        ),
        (
            "self[0].x > 2.0",
            Box::new(array_of(
                json!({"type": "object", "additionalProperties": {"type": "number"}}),
            )),
            4,
            3000,
            4,
        ),
        (
            "self.contains('A')",
            Box::new(|max| {
                with_max(
                    json!({"type": "string", "enum": ["A", "B", "C", "LongValue"]}),
                    "maxLength",
                    max,
                )
            }),
            2,
            1000,
            401,
        ),
        (
            "self == b\"x\"",
            Box::new(|max| {
                with_max(
                    json!({"type": "string", "format": "byte"}),
                    "maxLength",
                    max,
                )
            }),
            2,
            0,
            1,
        ),
        // A map whose values bound their strings and the map its entries alike.
        (
            "self.all(x, x.contains(self[x]))",
            Box::new(|max| map_of(with_max(json!({"type": "string"}), "maxLength", max))(max)),
            2752507,
            10,
            72,
        ),
        (
            "self.all(x, x[\"y\"].required == \"z\")",
            Box::new(|max| {
                let values = with_max(object_with_required(), "maxProperties", max);
                array_of(map_of(values)(max))(max)
            }),
            7340027,
            10,
            72,
        ),
        (
            "self.all(x, x[\"y\"].required == \"z\")",
            Box::new(|max| array_of(map_of(object_with_required())(max))(None)),
            7340027,
            10,
            7340027,
        ),
    ];
    for (text, schema, unbounded, max, bounded) in cases {
        let got = estimate(&schema(None), text);
        if unbounded == u64::MAX {
            assert!(got > STATIC_ESTIMATED_COST_LIMIT, "{text}: {got}");
        } else {
            assert_eq!(got, unbounded, "{text} without limits");
        }
        assert_eq!(
            estimate(&schema(Some(max)), text),
            bounded,
            "{text} at {max}"
        );
    }
}

#[test]
fn the_estimate_reads_the_parsed_expression() {
    let ints = json!({"type": "array", "maxItems": 10, "items": {"type": "integer"}});
    // Whitespace before the parenthesis is legal CEL: the macro is the same.
    let spaced = estimate(&ints, "self.all (x, x >= 0)");
    assert_eq!(spaced, estimate(&ints, "self.all(x, x >= 0)"));
    assert_eq!(spaced, 2 + 10 * (2 + 1 + 2));
    // Nested comprehensions multiply, whatever the spacing and the macro.
    let nested = estimate(
        &ints,
        "self.all (x, self.exists ( y, self.map\n(z, z).exists_one(z, x + y + z >= 0)))",
    );
    let unnested = estimate(&ints, "self.all(x, x >= 0)");
    assert!(nested > 100 * unnested, "{nested} vs {unnested}");
    // The schema's bounds: an unbounded list of strings is sized by the request size.
    let names = json!({"type": "array", "items": {"type": "string"}});
    assert!(estimate(&names, "self.all(x, x.contains('a'))") > STATIC_ESTIMATED_COST_LIMIT);
    let bounded =
        json!({"type": "array", "maxItems": 100, "items": {"type": "string", "maxLength": 63}});
    assert!(estimate(&bounded, "self.all(x, x.contains('a'))") < 10_000);
}

/// Rules as published definitions write them (Gateway API's `Gateway` listeners and
/// `HTTPRoute` rules, with their schemas' limits) are within upstream's limits.
#[test]
fn published_rules_are_within_the_limits() {
    let listeners = json!({"type": "array", "maxItems": 64, "items": {"type": "object",
        "required": ["name", "port", "protocol"],
        "properties": {
            "name": {"type": "string", "maxLength": 253, "minLength": 1},
            "hostname": {"type": "string", "maxLength": 253, "minLength": 1},
            "port": {"type": "integer", "minimum": 1, "maximum": 65535},
            "protocol": {"type": "string", "maxLength": 255, "minLength": 1}}}});
    for r in [
        "self.all(l1, self.exists_one(l2, l1.name == l2.name))",
        "self.all(l1, self.exists_one(l2, l1.port == l2.port && l1.protocol == l2.protocol && (has(l1.hostname) && has(l2.hostname) ? l1.hostname == l2.hostname : !has(l1.hostname) && !has(l2.hostname))))",
        "self.all(l, l.protocol == 'HTTP' || l.protocol == 'HTTPS' || l.protocol == 'TLS' || !has(l.hostname))",
    ] {
        let cost = estimate(&listeners, r);
        assert!(cost <= STATIC_ESTIMATED_COST_LIMIT, "{r}: {cost}");
    }
    let matches = json!({"type": "array", "maxItems": 64, "items": {"type": "object",
        "properties": {"path": {"type": "object", "properties": {
            "type": {"type": "string", "enum": ["Exact", "PathPrefix", "RegularExpression"]},
            "value": {"type": "string", "maxLength": 1024}}}}}});
    for r in [
        "self.all(m, !has(m.path) || !has(m.path.value) || m.path.value.startsWith('/'))",
        "self.all(m, !has(m.path) || m.path.type != 'PathPrefix' || !m.path.value.contains('//'))",
        "self.all(m, !has(m.path) || m.path.type != 'Exact' || m.path.value.matches('^(?:[-A-Za-z0-9/._~!$&\\'()*+,;=:@]|[%][0-9a-fA-F]{2})+$'))",
    ] {
        let cost = estimate(&matches, r);
        assert!(cost <= STATIC_ESTIMATED_COST_LIMIT, "{r}: {cost}");
        // And at run time, on a full list of long paths.
        let m = rule(json!({ "rule": r }));
        let value: Value = (0..64)
            .map(|i| json!({"path": {"type": "Exact", "value": format!("/{}", "a".repeat(1000 + i))}}))
            .collect();
        let mut b = Budget::default();
        assert!(eval(&m, &value, None, &mut b).is_empty(), "{r}");
        assert!(b.left() < PER_REQUEST_BUDGET, "charged");
    }
}
