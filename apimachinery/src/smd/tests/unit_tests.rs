//! Conflicts (upstream's `merge/conflict_test.go`), default keys' errors
//! (`merge/default_keys_test.go`), field sets and validation (`typed/toset_test.go`,
//! `typed/validate_test.go`), set operations, OpenAPI schemas and the apiserver's conflict
//! message.

use std::sync::Arc;

use serde_json::json;

use super::{
    fixture::{TestCase, apply, fld, key, managed, parser, try_run, update, val},
    parsers::port_list,
};
use crate::smd::{
    merge::{Conflicts, MergeError, Updater},
    path::PathElement,
    schema::{ElementRelationship, Schema, TypeRef},
    set::{ManagedFields, Set, VersionedSet},
    typed::ParseableType,
};

fn bob_and_alice() -> ManagedFields {
    let list = || key(&[("key", json!("a")), ("id", json!(2))]);
    managed(vec![
        (
            "Bob",
            "v1",
            vec![vec![fld("key")], vec![fld("list"), list(), fld("id")]],
        ),
        (
            "Alice",
            "v1",
            vec![vec![fld("value")], vec![fld("list"), list(), fld("key")]],
        ),
    ])
}

/// Upstream `TestNewFromSets`.
#[test]
fn new_from_sets() {
    let got = Conflicts::from_managers(&bob_and_alice());
    assert_eq!(
        got.to_string(),
        "conflicts with \"Alice\":\n- .value\n- .list[id=2,key=\"a\"].key\nconflicts with \"Bob\":\n- .key\n- .list[id=2,key=\"a\"].id"
    );
}

/// Upstream `TestToSet`.
#[test]
fn to_set() {
    let list = || key(&[("key", json!("a")), ("id", json!(2))]);
    let expected = Set::from_paths([
        vec![fld("key")],
        vec![fld("value")],
        vec![fld("list"), list(), fld("id")],
        vec![fld("list"), list(), fld("key")],
    ]);
    assert_eq!(
        Conflicts::from_managers(&bob_and_alice()).to_set(),
        expected
    );
}

/// Upstream `TestConflictsFromManagers`.
#[test]
fn conflicts_from_managers() {
    let a = || key(&[("name", json!("a"))]);
    let sets = managed(vec![(
        "Bob",
        "v1",
        vec![
            vec![
                fld("obj"),
                fld("template"),
                fld("obj"),
                fld("list"),
                a(),
                fld("id"),
            ],
            vec![
                fld("obj"),
                fld("template"),
                fld("obj"),
                fld("list"),
                a(),
                fld("key"),
            ],
        ],
    )]);
    assert_eq!(
        Conflicts::from_managers(&sets).to_string(),
        "conflicts with \"Bob\":\n- .obj.template.obj.list[name=\"a\"].id\n- .obj.template.obj.list[name=\"a\"].key"
    );
}

/// Upstream `TestDefaultKeysFlatErrors`: items that only differ in a defaulted key are
/// duplicates.
#[test]
fn default_keys_flat_errors() {
    for object in [
        json!({"containerPorts": [{"port": 80}, {"port": 80}]}),
        json!({"containerPorts": [{"port": 80}, {"port": 80, "protocol": "TCP"}]}),
    ] {
        let tc = TestCase {
            ops: vec![apply("default", "v1", object.clone())],
            object: None,
            managed: None,
        };
        assert!(try_run(&port_list(), &tc).is_err(), "{object}");
    }
}

/// The apiserver's message (`managedfields/internal/conflict.go`), with its manager printer.
#[test]
fn apply_failed_message() {
    let ty = ParseableType::deduced();
    let updater = Updater::new(ty);
    let live = json!({"data": {"key": "a", "other": "b"}});
    let managers = updater
        .update(
            &json!(null),
            &live,
            "v1",
            ManagedFields::new(),
            "kubectl-client-side-apply",
        )
        .expect("update");
    let printer = |m: &str| format!("{m:?} using v1");
    match updater.apply(
        &live,
        &json!({"data": {"key": "x"}}),
        "v1",
        managers.clone(),
        "kubectl",
        false,
    ) {
        Err(MergeError::Conflicts(c)) => assert_eq!(
            c.apply_failed_message(printer),
            "Apply failed with 1 conflict: conflict with \"kubectl-client-side-apply\" using v1: .data.key"
        ),
        other => panic!("{other:?}"),
    }
    match updater.apply(
        &live,
        &json!({"data": {"key": "x", "other": "y"}}),
        "v1",
        managers,
        "kubectl",
        false,
    ) {
        Err(MergeError::Conflicts(c)) => assert_eq!(
            c.apply_failed_message(printer),
            "Apply failed with 2 conflicts: conflicts with \"kubectl-client-side-apply\" using v1:\n- .data.key\n- .data.other"
        ),
        other => panic!("{other:?}"),
    }
}

/// Same values are shared ownership, not conflicts; forcing takes the field; an apply that
/// changes nothing returns the live object as it was.
#[test]
fn shared_ownership_force_and_no_op() {
    let updater = Updater::new(ParseableType::deduced());
    let live = json!({"z": 1, "a": {"k": "v"}});
    let m = updater
        .update(&json!(null), &live, "v1", ManagedFields::new(), "writer")
        .expect("update");
    let (same, m) = updater
        .apply(&live, &json!({"a": {"k": "v"}}), "v1", m, "applier", false)
        .expect("shared");
    assert_eq!(
        serde_json::to_string(&same).ok(),
        serde_json::to_string(&live).ok()
    );
    let path = [fld("a"), fld("k")];
    assert!(m["writer"].set.has(&path) && m["applier"].set.has(&path));
    assert!(m["applier"].applied);
    let (new, m) = updater
        .apply(&same, &json!({"a": {"k": "w"}}), "v1", m, "applier", true)
        .expect("forced");
    assert_eq!(new, json!({"z": 1, "a": {"k": "w"}}));
    assert!(!m["writer"].set.has(&path) && m["applier"].set.has(&path));
}

/// Upstream `typed/toset_test.go`'s "simple pair".
#[test]
fn to_field_set_simple_pair() {
    let ty = parser(
        r#"types:
- name: stringPair
  map:
    fields:
    - name: key
      type:
        scalar: string
    - name: value
      type:
        namedType: __untyped_atomic_
"#,
        "stringPair",
    );
    for (object, paths) in [
        (json!({"key": "foo", "value": 1}), vec!["key", "value"]),
        (
            json!({"key": "foo", "value": {"a": "b"}}),
            vec!["key", "value"],
        ),
        (json!({"key": "foo", "value": null}), vec!["key", "value"]),
        (json!({"key": "foo"}), vec!["key"]),
        (json!({"key": "foo", "value": true}), vec!["key", "value"]),
    ] {
        let expected = Set::from_paths(paths.into_iter().map(|p| vec![fld(p)]));
        assert_eq!(
            ty.to_field_set(&object).expect("valid"),
            expected,
            "{object}"
        );
    }
}

/// A Deployment-like object under an OpenAPI schema: `$ref`/`allOf`, a keyed list, a set, an
/// atomic map, a map of strings, preserved unknown fields.
fn openapi_type() -> ParseableType {
    let components = json!({
        "io.k8s.api.apps.v1.Deployment": {"type": "object", "properties": {
            "apiVersion": {"type": "string"},
            "metadata": {"allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}]},
            "spec": {"type": "object", "properties": {
                "containers": {"type": "array", "items": {"$ref": "#/components/schemas/Container"},
                    "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]},
                "finalizers": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
                "args": {"type": "array", "items": {"type": "string"}},
                "selector": {"allOf": [{"$ref": "#/components/schemas/Selector"}], "x-kubernetes-map-type": "atomic"},
                "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
            }}
        }},
        "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": {"type": "object", "properties": {
            "name": {"type": "string"},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}}
        }},
        "Container": {"type": "object", "properties": {
            "name": {"type": "string"}, "image": {"type": "string"},
            "ports": {"type": "array", "items": {"type": "object", "properties": {
                "containerPort": {"type": "integer"}, "protocol": {"type": "string", "default": "TCP"}}},
                "x-kubernetes-patch-strategy": "merge", "x-kubernetes-patch-merge-key": "containerPort"}
        }},
        "Selector": {"type": "object", "properties": {"matchLabels": {"type": "object", "additionalProperties": {"type": "string"}}}}
    });
    let schema = Schema::from_openapi(components.as_object().expect("object")).expect("schema");
    ParseableType::new(
        Arc::new(schema),
        TypeRef::named("io.k8s.api.apps.v1.Deployment"),
    )
}

#[test]
fn openapi_schema_field_set_and_fields_v1() {
    let ty = openapi_type();
    let object = json!({
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {
            "containers": [{"name": "nginx", "image": "nginx:1", "ports": [{"containerPort": 80}]}],
            "finalizers": ["a", "b"],
            "args": ["x"],
            "selector": {"matchLabels": {"app": "web"}},
            "extra": {"anything": {"goes": 1}}
        }
    });
    ty.validate(&object, false).expect("valid");
    let set = ty.to_field_set(&object).expect("field set");
    assert_eq!(
        set.to_fields_v1(),
        concat!(
            r#"{"f:metadata":{"f:labels":{"f:app":{}},"f:name":{}},"f:spec":{"f:args":{},"#,
            r#""f:containers":{"k:{\"name\":\"nginx\"}":{".":{},"f:image":{},"f:name":{},"f:ports":{"k:{\"containerPort\":80}":{".":{},"f:containerPort":{}}}}},"#,
            r#""f:extra":{"f:anything":{".":{},"f:goes":{}}},"f:finalizers":{"v:\"a\"":{},"v:\"b\"":{}},"f:selector":{}}}"#
        )
    );
    // The atomic override on the `$ref`, and the default of a key field.
    let atom = ty.schema.get("Selector").expect("Selector");
    assert_eq!(
        atom.map.as_ref().map(|m| m.relationship),
        Some(ElementRelationship::Separable)
    );
}

#[test]
fn validation_errors_with_paths() {
    let ty = openapi_type();
    let bad = json!({
        "metadata": "oops",
        "spec": {
            "containers": [{"name": "a"}, {"name": "a"}, {"image": "x"}],
            "unknown": 1
        }
    });
    let errs = ty.validate(&bad, false).expect_err("invalid").pairs();
    assert!(
        errs.contains(&(".metadata".into(), "expected map, got \"oops\"".into())),
        "{errs:?}"
    );
    assert!(
        errs.contains(&(
            ".spec.containers".into(),
            "duplicate entries for key [name=\"a\"]".into()
        )),
        "{errs:?}"
    );
    assert!(
        errs.iter().any(|(p, m)| p == ".spec.containers" && m.starts_with("element 2: associative list with keys has an element that omits all key fields [\"name\"]")),
        "{errs:?}"
    );
    assert!(
        errs.contains(&(
            ".spec.unknown".into(),
            "field not declared in schema".into()
        )),
        "{errs:?}"
    );
}

/// Applying a config that drops a container removes it (the applier owned the item), even
/// when another manager owns a field inside it, as upstream does; an item someone else added
/// stays.
#[test]
fn prune_removes_what_the_applier_stopped_sending() {
    let ty = openapi_type();
    let updater = Updater::new(ty);
    let two =
        json!({"spec": {"containers": [{"name": "a", "image": "1"}, {"name": "b", "image": "2"}]}});
    let (live, m) = updater
        .apply(
            &json!(null),
            &two,
            "v1",
            ManagedFields::new(),
            "applier",
            false,
        )
        .expect("apply");
    let one = json!({"spec": {"containers": [{"name": "a", "image": "1"}]}});
    let (pruned, _) = updater
        .apply(&live, &one, "v1", m.clone(), "applier", false)
        .expect("apply");
    assert_eq!(pruned, one);
    let touched = json!({"spec": {"containers": [
        {"name": "a", "image": "1"}, {"name": "b", "image": "3"}, {"name": "c", "image": "4"}
    ]}});
    let m = updater
        .update(&live, &touched, "v1", m, "editor")
        .expect("update");
    let b_image = [
        fld("spec"),
        fld("containers"),
        key(&[("name", json!("b"))]),
        fld("image"),
    ];
    assert!(m["editor"].set.has(&b_image));
    let (kept, _) = updater
        .apply(&touched, &one, "v1", m, "applier", false)
        .expect("apply");
    assert_eq!(
        kept,
        json!({"spec": {"containers": [{"name": "a", "image": "1"}, {"name": "c", "image": "4"}]}})
    );
}

#[test]
fn set_operations() {
    let a = Set::from_paths([
        vec![fld("a")],
        vec![fld("b"), fld("c")],
        vec![fld("b"), fld("d")],
        vec![fld("l"), val(json!("x"))],
    ]);
    let b = Set::from_paths([vec![fld("b")], vec![fld("b"), fld("c")], vec![fld("e")]]);
    assert_eq!(
        a.union(&b)
            .paths()
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        [".a", ".b", ".e", ".b.c", ".b.d", ".l[=\"x\"]"]
    );
    assert_eq!(
        a.intersection(&b),
        Set::from_paths([vec![fld("b"), fld("c")]])
    );
    assert_eq!(
        a.difference(&b),
        Set::from_paths([
            vec![fld("a")],
            vec![fld("b"), fld("d")],
            vec![fld("l"), val(json!("x"))]
        ])
    );
    assert_eq!(
        a.recursive_difference(&b),
        Set::from_paths([vec![fld("a")], vec![fld("l"), val(json!("x"))]])
    );
    assert_eq!(
        b.leaves(),
        Set::from_paths([vec![fld("e")], vec![fld("b"), fld("c")]])
    );
    assert!(Set::new().is_empty() && !a.is_empty());
    assert_eq!(
        a.with_prefix(&fld("b")).prefix_with(&[fld("b")]),
        Set::from_paths([vec![fld("b"), fld("c")], vec![fld("b"), fld("d")]])
    );
    assert_eq!(a.size(), 4);
}

/// Path element order: fields, keys, values (numbers, strings, booleans, ...), indexes.
#[test]
fn path_element_order() {
    let mut v = vec![
        PathElement::index(0),
        val(json!(true)),
        val(json!("a")),
        val(json!(2)),
        val(json!(1.5)),
        key(&[("name", json!("b"))]),
        key(&[("name", json!("a"))]),
        fld("z"),
        fld("a"),
    ];
    v.sort();
    let s: Vec<String> = v.iter().map(ToString::to_string).collect();
    assert_eq!(
        s,
        [
            ".a",
            ".z",
            "[name=\"a\"]",
            "[name=\"b\"]",
            "[=1.5]",
            "[=2]",
            "[=\"a\"]",
            "[=true]",
            "[0]"
        ]
    );
    assert_eq!(val(json!(1)), val(json!(1.0)));
}

/// An update that changes nothing keeps ownership; one that removes a field takes it from
/// its owner.
#[test]
fn update_moves_changed_fields() {
    let tc = TestCase {
        ops: vec![
            apply("applier", "v1", json!({"a": 1, "b": 2})),
            update("editor", "v1", json!({"a": 1, "b": 3})),
            update("editor", "v1", json!({"b": 3})),
        ],
        object: Some(json!({"b": 3})),
        managed: None,
    };
    let (_, m) = try_run(&ParseableType::deduced(), &tc).expect("run");
    let expected = managed(vec![("editor", "v1", vec![vec![fld("b")]])]);
    assert!(m.difference(&expected).is_empty(), "{m}");
    assert_eq!(m.get("editor").map(|v| v.applied), Some(false));
    let _ = VersionedSet::default();
}
