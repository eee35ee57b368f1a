//! Rules: evaluation and messages, upstream's cost estimates (`TestCostEstimation`), the bound
//! charged before an evaluation, and compiled `matches()` patterns.

use std::sync::Arc;

use serde_json::{Value, json};

use super::{shape::Bound, *};
use crate::custom::openapi::Node;

fn rule(r: Value) -> Arc<Rule> {
    compile(&[r]).expect("compiles").remove(0)
}

fn eval(r: &Arc<Rule>, v: &Value, old: Option<&Value>, b: &mut Budget) -> Vec<(String, String)> {
    evaluate(std::slice::from_ref(r), "object", v, old, b)
}

fn passes(r: &Arc<Rule>, v: &Value) -> bool {
    eval(r, v, None, &mut Budget::default()).is_empty()
}

#[test]
fn rules_see_self_and_old_self() {
    let mut b = Budget::default();
    let r = rule(
        json!({"rule": "self.minReplicas <= self.replicas && self.replicas <= self.maxReplicas"}),
    );
    assert!(passes(
        &r,
        &json!({"minReplicas": 1, "replicas": 3, "maxReplicas": 5})
    ));
    assert_eq!(
        eval(&r, &json!({"minReplicas": 4, "replicas": 3, "maxReplicas": 5}), None, &mut b),
        vec![(
            String::new(),
            "Invalid value: \"object\": failed rule: self.minReplicas <= self.replicas && self.replicas <= self.maxReplicas".into()
        )]
    );
    let immutable = rule(json!({"rule": "self == oldSelf", "message": "Value is immutable"}));
    assert!(
        eval(&immutable, &json!("a"), None, &mut b).is_empty(),
        "skipped on create"
    );
    assert_eq!(
        eval(&immutable, &json!("a"), Some(&json!("b")), &mut b),
        vec![(
            String::new(),
            "Invalid value: \"string\": Value is immutable".into()
        )]
    );
    let names = rule(
        json!({"rule": "self.all(x, x.matches('^[a-z]+$'))", "messageExpression": "'bad names: ' + string(size(self))", "reason": "FieldValueForbidden", "fieldPath": ".names"}),
    );
    assert!(passes(&names, &json!(["ab", "cd"])));
    assert_eq!(
        eval(&names, &json!(["ab", "C"]), None, &mut b),
        vec![(".names".into(), "Forbidden: bad names: 2".into())]
    );
    let has = rule(json!({"rule": "has(self.foo) && size(self) <= 3"}));
    assert!(passes(&has, &json!({"foo": 1})));
    assert!(!passes(&has, &json!({"bar": 1})));
    // Values of every JSON type, lists and maps compared by value.
    let all = rule(
        json!({"rule": "self.l == [1, 'a', true, null, 1.5] && self.m == {'k': [2]} && 'k' in self.m && 1.5 in self.l"}),
    );
    assert!(passes(
        &all,
        &json!({"l": [1, "a", true, null, 1.5], "m": {"k": [2]}})
    ));
    assert!(!passes(
        &all,
        &json!({"l": [1, "a", true, null, 1.5], "m": {"k": [3]}})
    ));
}

#[test]
fn bad_rules_are_refused() {
    let problems = compile(&[
        json!({"rule": "self.x ==="}),
        json!({"message": "no rule"}),
        json!({"rule": "self.matches('(')"}),
    ])
    .expect_err("invalid");
    assert_eq!(problems.len(), 3);
    assert!(problems[0].2.contains("compilation failed"), "{problems:?}");
    assert_eq!(problems[1].2, "Required value");
    // A literal pattern is compiled with the rule (upstream's `ValidateRegexLiterals`).
    assert!(
        problems[2].2.contains("invalid matches argument"),
        "{problems:?}"
    );
}

/// Upstream's estimate of `rule` on a value of `schema` (not a resource root).
fn estimate(schema: &Value, rule_text: &str) -> u64 {
    let node = Node::parse(schema).expect("a schema");
    rule(json!({ "rule": rule_text }))
        .estimate(&Bound::of_schema(&node, false))
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

fn ints(n: usize) -> Value {
    Value::Array((0..n).map(|i| json!(i)).collect())
}

#[test]
fn a_rule_too_costly_for_its_values_is_not_run() {
    // The rule: three nested comprehensions written with a space before the
    // parenthesis, which the text-based count saw as none.
    let nested = rule(json!({"rule": "self.all (x, self.all (y, self.all (z, x + y + z >= 0)))"}));
    let mut b = Budget::default();
    let started = std::time::Instant::now();
    let out = eval(&nested, &ints(100), None, &mut b);
    assert_eq!(
        out,
        vec![(String::new(), "Invalid value: \"object\": 'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: self.all (x, self.all (y, self.all (z, x + y + z >= 0)))".into())]
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(1));
    assert!(b.stopped(), "no further rule runs");
    // A rule within the limit runs, and its bound is charged.
    let once = rule(json!({"rule": "self.all (x, x >= 0)"}));
    let mut b = Budget::default();
    assert!(eval(&once, &ints(100), None, &mut b).is_empty());
    let charged = PER_REQUEST_BUDGET - b.left();
    // upstream's 2 + 100 * 5, and the crate's copies of the 100 items into `x`.
    assert_eq!(charged, 2 + 100 * 5 + 100);
}

#[test]
fn the_request_budget_ends_evaluation() {
    let pairs = rule(json!({"rule": "self.all(x, self.all(y, x <= y || x > y))"}));
    let mut b = Budget::default();
    let large = ints(300);
    let mut ran = 0;
    let last = loop {
        let out = eval(&pairs, &large, None, &mut b);
        if !out.is_empty() {
            break out;
        }
        ran += 1;
        assert!(ran < 100, "the request budget ends it");
    };
    assert!((10..30).contains(&ran), "{ran}");
    assert_eq!(
        last,
        vec![(String::new(), "Invalid value: \"object\": validation failed due to running out of cost budget, no further validation rules will be run".into())]
    );
    assert!(eval(&pairs, &ints(1), None, &mut b).is_empty(), "stopped");
}

fn high_water_mark() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace()
        .nth(1)?
        .parse::<u64>()
        .ok()
        .map(|kb| kb * 1024)
}

#[test]
fn sizes_of_intermediate_results_are_charged() {
    // The request: a dry run of 256 KiB that made registry-svc grow by ~486 MB.
    let r = rule(json!({"rule": "self.l.map(x, self.s + self.s).size() > 0"}));
    let value = json!({"l": ints(990), "s": "x".repeat(256 * 1024)});
    let before = high_water_mark();
    let mut b = Budget::default();
    let out = eval(&r, &value, None, &mut b);
    assert_eq!(out.len(), 1, "{out:?}");
    assert!(
        out[0]
            .1
            .contains("'operation cancelled: actual cost limit exceeded'"),
        "{out:?}"
    );
    if let (Some(before), Some(after)) = (before, high_water_mark()) {
        assert!(
            after.saturating_sub(before) < 200 << 20,
            "grew by {} MiB",
            (after - before) >> 20
        );
    }
    // The same rule on small values runs.
    let small = json!({"l": ints(10), "s": "abc"});
    assert!(eval(&r, &small, None, &mut Budget::default()).is_empty());
    // A literal list of copies of a large value is charged by what it copies.
    let copies = rule(json!({"rule": "[self.l, self.l, self.l, self.l].all(x, size(x) > 0)"}));
    let big = json!({"l": ints(300_000)});
    let out = eval(&copies, &big, None, &mut Budget::default());
    assert!(out[0].1.contains("actual cost limit exceeded"), "{out:?}");
}

#[test]
fn matches_patterns_are_compiled_once() {
    let literal = rule(json!({"rule": "self.all(x, x.matches('^[a-z]{1,40}[0-9]*$'))"}));
    assert_eq!(literal.patterns_compiled(), 1);
    let names: Value = (0..1000).map(|i| json!(format!("name{i}"))).collect();
    assert!(eval(&literal, &names, None, &mut Budget::default()).is_empty());
    assert_eq!(
        literal.patterns_compiled(),
        1,
        "compiled with the rule only"
    );
    // A pattern known only at run time is compiled once per distinct pattern.
    let computed = rule(json!({"rule": "self.names.all(x, x.matches(self.pattern))"}));
    let value = json!({"names": names, "pattern": "^name[0-9]+$"});
    assert!(eval(&computed, &value, None, &mut Budget::default()).is_empty());
    assert_eq!(computed.patterns_compiled(), 1);
    let global = rule(json!({"rule": "self.all(x, matches(x, '^name'))"}));
    assert!(eval(&global, &names, None, &mut Budget::default()).is_empty());
    assert!(!passes(&global, &json!(["other"])));
    let bad = rule(json!({"rule": "'a'.matches(self.p)"}));
    let out = eval(&bad, &json!({"p": "("}), None, &mut Budget::default());
    assert!(out[0].1.contains("not a valid regex"), "{out:?}");
}

#[test]
fn message_expressions_are_bounded_too() {
    let r =
        rule(json!({"rule": "false", "messageExpression": "self.l.map(x, self.s + self.s)[0]"}));
    let value = json!({"l": ints(990), "s": "x".repeat(256 * 1024)});
    let mut b = Budget::default();
    let out = eval(&r, &value, None, &mut b);
    assert_eq!(
        out,
        vec![(String::new(), "Invalid value: \"object\": no further validation rules will be run due to call cost exceeds limit for messageExpression: \"self.l.map(x, self.s + self.s)[0]\"".into())]
    );
    assert!(b.stopped());
}

#[test]
fn deep_expressions_are_refused_and_the_deepest_allowed_runs() {
    let chain = |n: usize| format!("1{} == {}", " + 1".repeat(n), n + 1);
    let e = compile(&[json!({ "rule": chain(400) })]).expect_err("too deep");
    assert!(e[0].2.contains("max recursion depth exceeded"), "{e:?}");
    // The deepest chain allowed evaluates where validation runs (`gate::offload`), which
    // overflowed a worker's stack (and aborted the process) at a depth of 100.
    let deepest = rule(json!({ "rule": chain(MAX_DEPTH - 3) }));
    let out = gate::offload(|| eval(&deepest, &json!({}), None, &mut Budget::default()));
    assert_eq!(out, Ok(vec![]));
}

#[test]
fn what_the_crate_reads_is_charged() {
    // The crate's size() counts a string's characters and `in` and `[]` hash a map's key,
    // where upstream's model charges 1: on a list of 100,000 items and a string of 1 MiB, each
    // of these rules would read 100 GiB.
    let value = json!({"l": ints(100_000), "s": "x".repeat(1 << 20), "m": {"k": 1}});
    for text in [
        "self.l.all(x, size(self.s) > 0)",
        "self.l.all(x, !(self.s in self.m))",
        "self.l.all(x, self.m[x >= 0 ? 'k' : self.s] == 1)",
    ] {
        let r = rule(json!({ "rule": text }));
        let started = std::time::Instant::now();
        let out = eval(&r, &value, None, &mut Budget::default());
        assert!(
            out.len() == 1 && out[0].1.contains("actual cost limit exceeded"),
            "{text}: {out:?}"
        );
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "{text}"
        );
    }
    // Deep comparisons read the strings: 100 strings of 10,000 bytes compared pairwise
    // (upstream's model charges a comparison of two lists of one element 1).
    let strings: Value = (0..100)
        .map(|i| json!(format!("{}{i:03}", "x".repeat(10_000))))
        .collect();
    let pairs = rule(json!({"rule": "self.all(x, self.exists_one(y, [x] == [y]))"}));
    let out = eval(&pairs, &strings, None, &mut Budget::default());
    assert!(out[0].1.contains("actual cost limit exceeded"), "{out:?}");
}
