//! Updates (validation ratcheting, transition rules on correlated list items and map values)
//! and nulls, each against upstream's behaviour (`ratcheting_test.go`,
//! `validation_test.go` of `schema/cel`, `prunenulls_test.go`).

use serde_json::{Value, json};

use super::Schema;

fn schema(spec: Value) -> Schema {
    Schema::parse(&json!({"type": "object", "properties": {"spec": spec}})).expect("structural")
}

fn object(spec: Value) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": spec})
}

/// The object as a client sends it and the Store validates it: pruned, then defaulted.
fn taken_in(s: &Schema, mut o: Value) -> Value {
    s.prune(&mut o);
    s.default(&mut o);
    o
}

/// The paths of `e`, sorted (objects' keys come in no particular order).
fn paths(e: &[(String, String)]) -> Vec<&str> {
    let mut p: Vec<&str> = e.iter().map(|(p, _)| p.as_str()).collect();
    p.sort_unstable();
    p
}

#[test]
fn nulls_become_defaults_or_are_dropped_as_upstream_prunes_them() {
    let s = schema(json!({"type": "object", "properties": {
        "replicas": {"type": "integer", "default": 1},
        "image": {"type": "string"},
        "note": {"type": "string", "nullable": true},
        "labels": {"type": "object", "additionalProperties": {"type": "string", "default": "x"}},
        "sizes": {"type": "object", "additionalProperties": {"type": "integer"}},
        "tags": {"type": "array", "items": {"type": "string", "default": "t"}},
        "inner": {"type": "object", "properties": {"a": {"type": "string"}}},
        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
    }}));
    let o = taken_in(
        &s,
        object(json!({"replicas": null, "image": null, "note": null,
            "labels": {"a": null, "b": "y"}, "sizes": {"s": null, "m": 2},
            "tags": [null, "u"], "inner": {"a": null}, "free": {"kept": null}})),
    );
    assert_eq!(
        o["spec"],
        json!({"replicas": 1, "note": null, "labels": {"a": "x", "b": "y"}, "sizes": {"m": 2},
            "tags": ["t", "u"], "inner": {}, "free": {"kept": null}}),
        "a non-nullable null with a default is the default, without one it is dropped; \
         nullable and unknown (preserved) nulls stay"
    );
    assert_eq!(s.validate(&o), vec![]);
    // A whole object that is null and has no default is dropped too.
    let o = taken_in(&s, object(json!({"inner": null})));
    assert_eq!(o["spec"], json!({"replicas": 1}));
    assert_eq!(s.validate(&o), vec![]);
}

#[test]
fn map_values_are_named_as_upstreams_openapi_validator_names_them() {
    let s = schema(json!({"type": "object", "properties": {
        "labels": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 3}}
    }}));
    let e = s.validate(&object(json!({"labels": {"a": "long", "b.c": 5}})));
    assert_eq!(paths(&e), vec!["spec.labels.a", "spec.labels.b.c"], "{e:?}");
    assert!(
        e[1].1
            .contains("spec.labels.b.c in body must be of type string"),
        "{e:?}"
    );
}

fn ports_schema() -> Schema {
    schema(json!({"type": "object", "properties": {
        "ports": {
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name", "protocol"],
            "items": {"type": "object", "required": ["name", "protocol"],
                "properties": {
                    "name": {"type": "string"},
                    "protocol": {"type": "string"},
                    "port": {"type": "integer", "x-kubernetes-validations": [
                        {"rule": "self == oldSelf", "message": "port is immutable"}]}
                }}
        },
        "envs": {"type": "object", "additionalProperties": {"type": "string",
            "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "env is immutable"}]}},
        "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string",
            "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "never checked"}]}}
    }}))
}

#[test]
fn transition_rules_see_the_item_of_a_map_list_with_the_same_keys() {
    let s = ports_schema();
    let old = object(json!({"ports": [
        {"name": "http", "protocol": "TCP", "port": 80},
        {"name": "dns", "protocol": "UDP", "port": 53}
    ]}));
    // Reordered and one port changed: the item is found by its keys, not its index.
    let new = object(json!({"ports": [
        {"name": "dns", "protocol": "UDP", "port": 5353},
        {"name": "http", "protocol": "TCP", "port": 80},
        {"name": "dns", "protocol": "TCP", "port": 53}
    ]}));
    let e = s.validate_update(&new, Some(&old));
    assert_eq!(
        e,
        vec![(
            "spec.ports[0].port".into(),
            "Invalid value: \"integer\": port is immutable".into()
        )]
    );
    // Map values are correlated by key (a new key has no old value: its rule is skipped).
    let old = object(json!({"envs": {"a": "1"}}));
    let new = object(json!({"envs": {"a": "2", "b": "3"}}));
    assert_eq!(
        paths(&s.validate_update(&new, Some(&old))),
        vec!["spec.envs[a]"],
        "CEL errors keep the [key] form"
    );
    // Items of a set are not correlated (upstream correlates only map lists): no oldSelf.
    let old = object(json!({"tags": ["a"]}));
    let new = object(json!({"tags": ["b"]}));
    assert_eq!(s.validate_update(&new, Some(&old)), vec![]);
}

fn tightened() -> Schema {
    schema(
        json!({"type": "object", "required": ["size"], "properties": {
            "replicas": {"type": "integer", "maximum": 10},
            "size": {"type": "string", "enum": ["S", "M"]},
            "name": {"type": "string", "pattern": "^[a-z]+$",
                "x-kubernetes-validations": [{"rule": "self.size() <= 3", "message": "too long"}]},
            "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "required": ["name"], "properties": {
                    "name": {"type": "string"}, "port": {"type": "integer", "minimum": 1}}}},
            "hosts": {"type": "array", "items": {"type": "string", "maxLength": 3}},
            "counter": {"type": "integer", "x-kubernetes-validations": [
                {"rule": "self > oldSelf", "message": "must grow"}]}
        }}),
    )
}

/// An object written before the schema was tightened: every field now invalid.
fn stored() -> Value {
    object(json!({"replicas": 20, "size": "XL", "name": "Long-Name",
        "ports": [{"name": "a", "port": 0}, {"name": "b", "port": 0}], "hosts": ["toolong"]}))
}

#[test]
fn updates_that_leave_invalid_fields_unchanged_are_accepted() {
    let s = tightened();
    let old = stored();
    assert_eq!(
        s.validate(&old).len(),
        6,
        "{:?}: invalid under the new schema",
        s.validate(&old)
    );
    // Metadata changes (a finalizer removed, a label added) leave the invalid fields as
    // they were: accepted, as upstream's ratcheting accepts them.
    let mut new = old.clone();
    new["metadata"]["labels"] = json!({"a": "b"});
    new["metadata"]["finalizers"] = json!([]);
    assert_eq!(s.validate_update(&new, Some(&old)), vec![]);
    // A changed invalid field is refused; unchanged ones (and a map-list item whose key
    // correlates it) stay accepted; a new item of an atomic list is not correlated.
    let mut new = old.clone();
    new["spec"]["replicas"] = json!(30);
    new["spec"]["ports"] =
        json!([{"name": "b", "port": 0}, {"name": "a", "port": 0}, {"name": "c", "port": 0}]);
    let e = s.validate_update(&new, Some(&old));
    assert_eq!(
        paths(&e),
        vec!["spec.ports[2].port", "spec.replicas"],
        "{e:?}"
    );
    let mut new = old.clone();
    new["spec"]["hosts"] = json!(["toolong", "ok"]);
    assert_eq!(
        paths(&s.validate_update(&new, Some(&old))),
        vec!["spec.hosts[0]"]
    );
    // Creating is never ratcheted.
    assert_eq!(s.validate_update(&old, None).len(), 6);
}

#[test]
fn cel_rules_ratchet_unless_they_use_old_self() {
    let s = tightened();
    let mut old = object(json!({"size": "S", "name": "abcd", "counter": 5}));
    // A rule without oldSelf on an unchanged value is not re-run for the update...
    let mut new = old.clone();
    new["metadata"]["labels"] = json!({"x": "y"});
    new["spec"]["counter"] = json!(6);
    assert_eq!(s.validate_update(&new, Some(&old)), vec![]);
    // ...but it is once the value changes, and a transition rule always is.
    new["spec"]["name"] = json!("abcde");
    new["spec"]["counter"] = json!(5);
    let e = s.validate_update(&new, Some(&old));
    assert_eq!(paths(&e), vec!["spec.counter", "spec.name"], "{e:?}");
    old["spec"]["name"] = json!("ab");
    assert_eq!(
        paths(&s.validate_update(&old.clone(), Some(&old))),
        vec!["spec.counter"],
        "self > oldSelf fails on an unchanged value: transition rules never ratchet"
    );
}

#[test]
fn duplicates_in_sets_and_map_lists_ratchet_on_the_whole_object() {
    let s = schema(json!({"type": "object", "properties": {
        "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        "more": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}
    }}));
    let old = object(json!({"tags": ["a", "a"]}));
    let new = object(json!({"tags": ["a", "a"], "more": ["b", "b"]}));
    assert_eq!(
        s.validate_update(&new, Some(&old)),
        vec![],
        "the old object had duplicates: upstream skips the check"
    );
    let old = object(json!({"tags": ["a"]}));
    assert_eq!(
        paths(&s.validate_update(&new, Some(&old))),
        vec!["spec.more[1]", "spec.tags[1]"]
    );
}
