//! Upstream's own cases (`evanphx/json-patch.v4`, `patch_test.go`: `Cases`, `BadCases`,
//! `MutationTestCases`, `TestCases`, `TestAdd`), run through [`apply`], with the copy limit of
//! 100 bytes those tests set; then the apiserver's limits and the deadline.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::*;

fn parse(s: &str) -> Value {
    serde_json::from_str(s).unwrap_or_else(|e| panic!("{s}: {e}"))
}

/// Upstream's tests run with `AccumulatedCopySizeLimit = 100`.
fn limits() -> Limits {
    Limits {
        deadline: None,
        max_copy_bytes: 100,
    }
}

fn patched(doc: &str, patch: &str) -> Result<Value, PatchError> {
    apply(&parse(doc), &parse(patch), &limits())
}

fn a(n: usize) -> String {
    "A".repeat(n)
}

#[test]
fn upstreams_cases_apply() {
    let cases: Vec<(String, &str, String)> = vec![
        (r#"{ "foo": "bar"}"#.into(), r#"[{ "op": "add", "path": "/baz", "value": "qux" }]"#, r#"{"baz": "qux", "foo": "bar"}"#.into()),
        (r#"{ "foo": [ "bar", "baz" ] }"#.into(), r#"[{ "op": "add", "path": "/foo/1", "value": "qux" }]"#, r#"{ "foo": [ "bar", "qux", "baz" ] }"#.into()),
        (r#"{ "foo": [ "bar", "baz" ] }"#.into(), r#"[{ "op": "add", "path": "/foo/-1", "value": "qux" }]"#, r#"{ "foo": [ "bar", "baz", "qux" ] }"#.into()),
        (r#"{ "baz": "qux", "foo": "bar" }"#.into(), r#"[ { "op": "remove", "path": "/baz" } ]"#, r#"{ "foo": "bar" }"#.into()),
        (r#"{ "foo": [ "bar", "qux", "baz" ] }"#.into(), r#"[ { "op": "remove", "path": "/foo/1" } ]"#, r#"{ "foo": [ "bar", "baz" ] }"#.into()),
        (r#"{ "baz": "qux", "foo": "bar" }"#.into(), r#"[ { "op": "replace", "path": "/baz", "value": "boo" } ]"#, r#"{ "baz": "boo", "foo": "bar" }"#.into()),
        (r#"{"foo": {"bar": "baz", "waldo": "fred"}, "qux": {"corge": "grault"}}"#.into(), r#"[ { "op": "move", "from": "/foo/waldo", "path": "/qux/thud" } ]"#, r#"{"foo": {"bar": "baz"}, "qux": {"corge": "grault", "thud": "fred"}}"#.into()),
        (r#"{ "foo": [ "all", "grass", "cows", "eat" ] }"#.into(), r#"[ { "op": "move", "from": "/foo/1", "path": "/foo/3" } ]"#, r#"{ "foo": [ "all", "cows", "eat", "grass" ] }"#.into()),
        (r#"{ "foo": [ "all", "grass", "cows", "eat" ] }"#.into(), r#"[ { "op": "move", "from": "/foo/1", "path": "/foo/2" } ]"#, r#"{ "foo": [ "all", "cows", "grass", "eat" ] }"#.into()),
        (r#"{ "foo": "bar" }"#.into(), r#"[ { "op": "add", "path": "/child", "value": { "grandchild": { } } } ]"#, r#"{ "foo": "bar", "child": { "grandchild": { } } }"#.into()),
        (r#"{ "foo": ["bar"] }"#.into(), r#"[ { "op": "add", "path": "/foo/-", "value": ["abc", "def"] } ]"#, r#"{ "foo": ["bar", ["abc", "def"]] }"#.into()),
        (r#"{ "foo": "bar", "qux": { "baz": 1, "bar": null } }"#.into(), r#"[ { "op": "remove", "path": "/qux/bar" } ]"#, r#"{ "foo": "bar", "qux": { "baz": 1 } }"#.into()),
        (r#"{ "foo": "bar" }"#.into(), r#"[ { "op": "add", "path": "/baz", "value": null } ]"#, r#"{ "baz": null, "foo": "bar" }"#.into()),
        (r#"{ "foo": ["bar"]}"#.into(), r#"[ { "op": "replace", "path": "/foo/0", "value": "baz"}]"#, r#"{ "foo": ["baz"]}"#.into()),
        (r#"{ "foo": ["bar","baz"]}"#.into(), r#"[ { "op": "replace", "path": "/foo/0", "value": "bum"}]"#, r#"{ "foo": ["bum","baz"]}"#.into()),
        (r#"{ "foo": ["bar","qux","baz"]}"#.into(), r#"[ { "op": "replace", "path": "/foo/1", "value": "bum"}]"#, r#"{ "foo": ["bar", "bum","baz"]}"#.into()),
        (r#"[ {"foo": ["bar","qux","baz"]}]"#.into(), r#"[ { "op": "replace", "path": "/0/foo/0", "value": "bum"}]"#, r#"[ {"foo": ["bum","qux","baz"]}]"#.into()),
        (r#"[ {"foo": ["bar","qux","baz"], "bar": ["qux","baz"]}]"#.into(), r#"[ { "op": "copy", "from": "/0/foo/0", "path": "/0/bar/0"}]"#, r#"[ {"foo": ["bar","qux","baz"], "bar": ["bar", "qux", "baz"]}]"#.into()),
        (r#"[ {"foo": ["bar","qux","baz"], "bar": ["qux","baz"]}]"#.into(), r#"[ { "op": "copy", "from": "/0/foo/0", "path": "/0/bar"}]"#, r#"[ {"foo": ["bar","qux","baz"], "bar": "bar"}]"#.into()),
        (r#"[ { "foo": {"bar": ["qux","baz"]}, "baz": {"qux": "bum"}}]"#.into(), r#"[ { "op": "copy", "from": "/0/foo/bar", "path": "/0/baz/bar"}]"#, r#"[ { "baz": {"bar": ["qux","baz"], "qux":"bum"}, "foo": {"bar": ["qux","baz"]}}]"#.into()),
        (r#"{ "foo": ["bar"]}"#.into(), r#"[{"op": "copy", "path": "/foo/0", "from": "/foo"}]"#, r#"{ "foo": [["bar"], "bar"]}"#.into()),
        (r#"{ "foo": ["bar","qux","baz"]}"#.into(), r#"[ { "op": "remove", "path": "/foo/-2"}]"#, r#"{ "foo": ["bar", "baz"]}"#.into()),
        (r#"{ "foo": []}"#.into(), r#"[ { "op": "add", "path": "/foo/-1", "value": "qux"}]"#, r#"{ "foo": ["qux"]}"#.into()),
        (r#"{ "bar": [{"baz": null}]}"#.into(), r#"[ { "op": "replace", "path": "/bar/0/baz", "value": 1 } ]"#, r#"{ "bar": [{"baz": 1}]}"#.into()),
        (r#"{ "bar": [{"baz": 1}]}"#.into(), r#"[ { "op": "replace", "path": "/bar/0/baz", "value": null } ]"#, r#"{ "bar": [{"baz": null}]}"#.into()),
        (r#"{ "bar": [null]}"#.into(), r#"[ { "op": "replace", "path": "/bar/0", "value": 1 } ]"#, r#"{ "bar": [1]}"#.into()),
        (r#"{ "bar": [1]}"#.into(), r#"[ { "op": "replace", "path": "/bar/0", "value": null } ]"#, r#"{ "bar": [null]}"#.into()),
        (
            format!(r#"{{ "foo": ["A", "{}"] }}"#, a(48)),
            // The quotes are counted: each copy adds 50 bytes, 100 in all.
            r#"[ { "op": "copy", "path": "/foo/-", "from": "/foo/1" }, { "op": "copy", "path": "/foo/-", "from": "/foo/1" }]"#,
            format!(r#"{{ "foo": ["A", "{0}", "{0}", "{0}"] }}"#, a(48)),
        ),
        (
            r#"{"id": "00000000-0000-0000-0000-000000000000", "parentID": "00000000-0000-0000-0000-000000000000"}"#.into(),
            r#"[{"op": "test", "path": "", "value": {"id": "00000000-0000-0000-0000-000000000000", "parentID": "00000000-0000-0000-0000-000000000000"}},
                {"op": "replace", "path": "", "value": {"id": "759981e8-ec68-4639-a83e-513225914ecb", "originalID": "bar", "parentID": "00000000-0000-0000-0000-000000000000"}}]"#,
            r#"{"id": "759981e8-ec68-4639-a83e-513225914ecb", "originalID": "bar", "parentID": "00000000-0000-0000-0000-000000000000"}"#.into(),
        ),
    ];
    for (doc, patch, want) in cases {
        let got = patched(&doc, patch).unwrap_or_else(|e| panic!("{patch}: {e}"));
        assert_eq!(got, parse(&want), "{doc} + {patch}");
    }
}

#[test]
fn upstreams_mutation_cases_change_the_document() {
    for (doc, patch, want) in [
        (
            r#"{ "foo": "bar", "qux": { "baz": 1, "bar": null } }"#,
            r#"[ { "op": "remove", "path": "/qux/bar" } ]"#,
            json!({"foo": "bar", "qux": {"baz": 1}}),
        ),
        (
            r#"{ "foo": "bar", "qux": { "baz": 1, "bar": null } }"#,
            r#"[ { "op": "replace", "path": "/qux/baz", "value": null } ]"#,
            json!({"foo": "bar", "qux": {"baz": null, "bar": null}}),
        ),
    ] {
        assert_eq!(patched(doc, patch).expect("applies"), want);
    }
}

#[test]
fn upstreams_bad_cases_fail() {
    let long = format!(r#"{{ "foo": ["A", "{}"] }}"#, a(49));
    let cases: Vec<(&str, &str)> = vec![
        (
            r#"{ "foo": "bar" }"#,
            r#"[ { "op": "add", "path": "/baz/bat", "value": "qux" } ]"#,
        ),
        (
            r#"{ "a": { "b": { "d": 1 } } }"#,
            r#"[ { "op": "remove", "path": "/a/b/c" } ]"#,
        ),
        (
            r#"{ "a": { "b": { "d": 1 } } }"#,
            r#"[ { "op": "move", "from": "/a/b/c", "path": "/a/b/e" } ]"#,
        ),
        (
            r#"{ "a": { "b": [1] } }"#,
            r#"[ { "op": "remove", "path": "/a/b/1" } ]"#,
        ),
        (
            r#"{ "a": { "b": [1] } }"#,
            r#"[ { "op": "move", "from": "/a/b/1", "path": "/a/b/2" } ]"#,
        ),
        (
            r#"{ "foo": "bar" }"#,
            r#"[ { "op": "add", "pathz": "/baz", "value": "qux" } ]"#,
        ),
        (
            r#"{ "foo": "bar" }"#,
            r#"[ { "op": "add", "path": "", "value": "qux" } ]"#,
        ),
        (
            r#"{ "foo": ["bar","baz"]}"#,
            r#"[ { "op": "replace", "path": "/foo/2", "value": "bum"}]"#,
        ),
        (
            r#"{ "foo": ["bar","baz"]}"#,
            r#"[ { "op": "add", "path": "/foo/-4", "value": "bum"}]"#,
        ),
        (
            r#"{ "name":{ "foo": "bat", "qux": "bum"}}"#,
            r#"[ { "op": "replace", "path": "/foo/bar", "value":"baz"}]"#,
        ),
        (
            r#"{ "foo": ["bar"]}"#,
            r#"[ {"op": "add", "path": "/foo/2", "value": "bum"}]"#,
        ),
        (
            r#"{ "foo": []}"#,
            r#"[ {"op": "remove", "path": "/foo/-"}]"#,
        ),
        (
            r#"{ "foo": []}"#,
            r#"[ {"op": "remove", "path": "/foo/-1"}]"#,
        ),
        (
            r#"{ "foo": ["bar"]}"#,
            r#"[ {"op": "remove", "path": "/foo/-2"}]"#,
        ),
        (r#"{}"#, r#"[ {"op":null,"path":""} ]"#),
        (r#"{}"#, r#"[ {"op":"add","path":null} ]"#),
        (r#"{}"#, r#"[ { "op": "copy", "from": null }]"#),
        (
            r#"{ "foo": ["bar"]}"#,
            r#"[{"op": "copy", "path": "/foo/6666666666", "from": "/"}]"#,
        ),
        (
            r#"{ "foo": ["bar"]}"#,
            r#"[{"op": "copy", "path": "/foo/2", "from": "/foo/0"}]"#,
        ),
        // Each copy adds 51 bytes: the second passes the limit of 100.
        (
            &long,
            r#"[ { "op": "copy", "path": "/foo/-", "from": "/foo/1" }, { "op": "copy", "path": "/foo/-", "from": "/foo/1" }]"#,
        ),
        (
            r#"{ "foo": [ "all", "grass", "cows", "eat" ] }"#,
            r#"[ { "op": "move", "from": "/foo/1", "path": "/foo/4" } ]"#,
        ),
    ];
    for (doc, patch) in cases {
        assert!(
            matches!(patched(doc, patch), Err(PatchError::Unprocessable(_))),
            "{doc} + {patch} should fail"
        );
    }
}

#[test]
fn upstreams_test_cases() {
    for (doc, patch, failed_path) in [
        (
            r#"{"baz": "qux", "foo": [ "a", 2, "c" ]}"#,
            r#"[{ "op": "test", "path": "/baz", "value": "qux" }, { "op": "test", "path": "/foo/1", "value": 2 }]"#,
            None,
        ),
        (
            r#"{ "baz": "qux" }"#,
            r#"[ { "op": "test", "path": "/baz", "value": "bar" } ]"#,
            Some("/baz"),
        ),
        (
            r#"{"baz": "qux", "foo": ["a", 2, "c"]}"#,
            r#"[{ "op": "test", "path": "/baz", "value": "qux" }, { "op": "test", "path": "/foo/1", "value": "c" }]"#,
            Some("/foo/1"),
        ),
        (
            r#"{ "baz": "qux" }"#,
            r#"[ { "op": "test", "path": "/foo", "value": 42 } ]"#,
            Some("/foo"),
        ),
        // What kube-rs' `finalizer()` sends for an object without finalizers.
        (
            r#"{ "baz": "qux" }"#,
            r#"[ { "op": "test", "path": "/foo", "value": null } ]"#,
            None,
        ),
        (
            r#"{ "foo": null }"#,
            r#"[ { "op": "test", "path": "/foo", "value": null } ]"#,
            None,
        ),
        (
            r#"{ "foo": {} }"#,
            r#"[ { "op": "test", "path": "/foo", "value": null } ]"#,
            Some("/foo"),
        ),
        (
            r#"{ "foo": [] }"#,
            r#"[ { "op": "test", "path": "/foo", "value": null } ]"#,
            Some("/foo"),
        ),
        (
            r#"{ "baz/foo": "qux" }"#,
            r#"[ { "op": "test", "path": "/baz~1foo", "value": "qux"} ]"#,
            None,
        ),
        (
            r#"{ "foo": [] }"#,
            r#"[ { "op": "test", "path": "/foo"} ]"#,
            Some("/foo"),
        ),
        (
            r#"{ "baz": [] }"#,
            r#"[ { "op": "test", "path": "/foo"} ]"#,
            None,
        ),
    ] {
        match (patched(doc, patch), failed_path) {
            (Ok(_), None) => {}
            (Err(PatchError::Unprocessable(m)), Some(path)) => {
                assert_eq!(m, format!("testing value {path} failed: test failed"));
            }
            (other, _) => panic!("{doc} + {patch}: {other:?}"),
        }
    }
}

#[test]
fn upstreams_add_index_cases() {
    for (key, len, want) in [
        ("0", 0, Ok(0)),
        (
            "1",
            0,
            Err("Unable to access invalid index: 1: invalid index referenced"),
        ),
        ("-1", 0, Ok(0)),
        (
            "-2",
            0,
            Err("Unable to access invalid index: -2: invalid index referenced"),
        ),
    ] {
        assert_eq!(index(key, len, true), want.map_err(String::from), "{key}");
    }
}

#[test]
fn errors_carry_upstreams_words() {
    let e = |doc: &str, patch: &str| match patched(doc, patch) {
        Err(PatchError::Unprocessable(m)) => m,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        e("{}", r#"[{"op": "add", "path": "/a/b", "value": 1}]"#),
        r#"add operation does not apply: doc is missing path: "/a/b": missing value"#
    );
    assert_eq!(
        e("{}", r#"[{"op": "remove", "path": "/a"}]"#),
        "error in remove for path: '/a': Unable to remove nonexistent key: a: missing value"
    );
    assert_eq!(
        e("{}", r#"[{"op": "frobnicate", "path": "/a"}]"#),
        "Unexpected kind: frobnicate"
    );
    assert_eq!(e("{}", r#"[{"path": "/a"}]"#), "Unexpected kind: unknown");
    assert!(matches!(
        apply(&json!({}), &json!({"op": "add"}), &limits()),
        Err(PatchError::BadRequest(_))
    ));
    assert!(matches!(
        apply(&json!({}), &json!([1]), &limits()),
        Err(PatchError::BadRequest(_))
    ));
}

/// v4's quirks that clients meet: `replace` of a missing member adds it; a missing member
/// copies as null; `~0` and `~1` unescape in one pass (`~01` is `~1`).
#[test]
fn upstreams_quirks() {
    assert_eq!(
        patched("{}", r#"[{"op": "replace", "path": "/a", "value": 1}]"#).expect("applies"),
        json!({"a": 1})
    );
    assert_eq!(
        patched(
            r#"{"a": []}"#,
            r#"[{"op": "copy", "from": "/nope", "path": "/a/-"}]"#
        )
        .expect("applies"),
        json!({"a": [null]})
    );
    assert_eq!(
        patched(
            r#"{"~1": 1}"#,
            r#"[{"op": "test", "path": "/~01", "value": 1}]"#
        )
        .expect("applies"),
        json!({"~1": 1})
    );
}

#[test]
fn more_than_ten_thousand_operations_are_too_large() {
    let ops: Vec<Value> = (0..=MAX_OPERATIONS)
        .map(|i| json!({"op": "add", "path": format!("/k{i}"), "value": i}))
        .collect();
    match apply(&json!({}), &Value::Array(ops.clone()), &Limits::default()) {
        Err(PatchError::TooLarge(m)) => assert_eq!(
            m,
            "The allowed maximum operations in a JSON patch is 10000, got 10001"
        ),
        other => panic!("{other:?}"),
    }
    let out = apply(
        &json!({}),
        &Value::Array(ops[..MAX_OPERATIONS].to_vec()),
        &Limits::default(),
    )
    .expect("10,000 apply");
    assert_eq!(
        out.as_object().map(serde_json::Map::len),
        Some(MAX_OPERATIONS)
    );
}

/// The shape of the attack in the issue: a 1 KB patch of `copy` operations, each doubling a
/// value, stops at 3 MiB of copies (it grew registry-svc by ~750 MiB before).
#[test]
fn doubling_copies_stop_at_the_copy_limit() {
    let mut ops = vec![json!({"op": "add", "path": "/a", "value": ["x".repeat(64)]})];
    for _ in 0..40 {
        ops.push(json!({"op": "copy", "from": "/a", "path": "/b"}));
        ops.push(json!({"op": "copy", "from": "/b", "path": "/a/-"}));
    }
    match apply(&json!({}), &Value::Array(ops), &Limits::default()) {
        Err(PatchError::Unprocessable(m)) => {
            assert!(m.starts_with("Unable to complete the copy"), "{m}");
            assert!(
                m.ends_with(&format!("exceeding the limit {MAX_COPY_BYTES}")),
                "{m}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_patch_stops_at_its_deadline() {
    let ops: Vec<Value> = (0..100)
        .map(|i| json!({"op": "add", "path": format!("/k{i}"), "value": i}))
        .collect();
    let past = Limits::until(Some(Instant::now() - Duration::from_millis(1)));
    assert_eq!(
        apply(&json!({}), &Value::Array(ops), &past),
        Err(PatchError::Timeout)
    );
}

/// 10,000 removals from an object of 100,000 members take linear time (an ordered removal
/// each would shift ~50,000 members every time).
#[test]
fn removals_from_a_wide_object_stay_linear() {
    let doc: serde_json::Map<String, Value> =
        (0..100_000).map(|i| (format!("k{i}"), json!(i))).collect();
    let ops: Vec<Value> = (0..MAX_OPERATIONS)
        .map(|i| json!({"op": "remove", "path": format!("/k{}", i * 10)}))
        .collect();
    let out = apply(&Value::Object(doc), &Value::Array(ops), &Limits::default()).expect("applies");
    assert_eq!(out.as_object().map(serde_json::Map::len), Some(90_000));
    assert!(out.get("k0").is_none() && out.get("k99990").is_none() && out.get("k1").is_some());
}
