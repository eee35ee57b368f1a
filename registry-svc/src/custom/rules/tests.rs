//! Rules: evaluation and messages, the bound charged before an evaluation, compiled
//! `matches()` patterns, and the depth limit (the estimates of definitions are in
//! `estimate_tests`).

use std::sync::Arc;

use serde_json::{Value, json};

use super::*;

pub(crate) fn rule(r: Value) -> Arc<Rule> {
    compile(&[r]).expect("compiles").remove(0)
}

pub(crate) fn eval(
    r: &Arc<Rule>,
    v: &Value,
    old: Option<&Value>,
    b: &mut Budget,
) -> Vec<(String, String)> {
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
fn ordinary_rules_run_on_large_and_uneven_lists() {
    // 1,000 items, one of them with a description of 100 KB: every item is bounded by the
    // largest, and the rules still pass.
    let items: Value = (0..1000)
        .map(|i| {
            let description = if i == 7 {
                "d".repeat(100_000)
            } else {
                "short".into()
            };
            json!({"name": format!("item-{i}"), "description": description, "port": 8000 + i})
        })
        .collect();
    for text in [
        "self.all(i, i.name.size() <= 63 && i.description.size() <= 200000)",
        "self.all(i, i.name.matches('^[a-z0-9-]+$') && i.port > 0)",
        "self.map(i, i.port).all(p, p >= 1 && p <= 65535)",
        "size(self.filter(i, i.description.startsWith('d'))) <= 1",
    ] {
        let r = rule(json!({ "rule": text }));
        let mut b = Budget::default();
        assert_eq!(eval(&r, &items, None, &mut b), vec![], "{text}");
    }
    // Pairs of 100 of them (upstream's cost of 1,000 x 1,000 pairs is over the limit too).
    let hundred = Value::Array(items.as_array().expect("a list")[..100].to_vec());
    let unique = rule(json!({"rule": "self.all(i, self.exists_one(j, j.name == i.name))"}));
    assert_eq!(
        eval(&unique, &hundred, None, &mut Budget::default()),
        vec![]
    );
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
    // The deepest chain allowed evaluates where validation runs (`offload::validation`), which
    // overflowed a worker's stack (and aborted the process) at a depth of 100.
    let deepest = rule(json!({ "rule": chain(MAX_DEPTH - 3) }));
    let out =
        crate::offload::validation(|| eval(&deepest, &json!({}), None, &mut Budget::default()));
    assert_eq!(out, Ok(vec![]));
}

#[test]
fn a_deep_policy_expression_is_evaluated_off_the_callers_stack() {
    // Policies are evaluated inside the request, on an async worker (2 MiB of stack): the
    // deepest expression allowed must not overflow it, and runs on a validation thread.
    let deepest = format!("1{} == {}", " + 1".repeat(MAX_DEPTH - 3), MAX_DEPTH - 2);
    let e = super::expression::Expression::compile(&deepest).expect("compiles");
    let out = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || super::expression::evaluate(&e, &[], &mut Budget::default()))
        .expect("thread")
        .join()
        .expect("no overflow");
    assert_eq!(out, Ok(super::expression::Outcome::Bool(true)));
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
    // An error converts its operands into values, and `||` absorbs it: 100 copies of a list of
    // 200,000 items each.
    let value = json!({"l": ints(100), "big": ints(200_000), "m": {}});
    for text in [
        "self.l.all(x, 1 < self.big || true)",
        "self.l.all(x, self.big + 1 == [] || true)",
        "self.l.all(x, self.m[self.big] == 1 || true)",
    ] {
        let r = rule(json!({ "rule": text }));
        let out = eval(&r, &value, None, &mut Budget::default());
        assert!(
            out.len() == 1 && out[0].1.contains("actual cost limit exceeded"),
            "{text}: {out:?}"
        );
    }
    // Operands that fit are not charged for an error: 100 comparisons of two numbers.
    let fit = rule(json!({"rule": "self.l.all(x, x < self.l[0] || x + 1 > 0)"}));
    let mut b = Budget::default();
    assert!(eval(&fit, &value, None, &mut b).is_empty());
    assert!(
        PER_REQUEST_BUDGET - b.left() < 2_000,
        "{}",
        PER_REQUEST_BUDGET - b.left()
    );
    // Deep comparisons read the strings: 100 strings of 10,000 bytes compared pairwise
    // (upstream's model charges a comparison of two lists of one element 1).
    let strings: Value = (0..100)
        .map(|i| json!(format!("{}{i:03}", "x".repeat(10_000))))
        .collect();
    let pairs = rule(json!({"rule": "self.all(x, self.exists_one(y, [x] == [y]))"}));
    let out = eval(&pairs, &strings, None, &mut Budget::default());
    assert!(out[0].1.contains("actual cost limit exceeded"), "{out:?}");
}
