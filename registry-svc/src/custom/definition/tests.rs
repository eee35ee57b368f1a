//! The definitions' validation: selectable fields, and schemas built as they are served.

use super::*;
use serde_json::json;

fn crd(selectable: &str) -> CustomResourceDefinition {
    CustomResourceDefinition::from_manifest(json!({
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "selectableFields": [{"jsonPath": selectable}],
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object",
                    "properties": {"class": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}}}}}}}]}
    }))
    .expect("a definition")
}

fn problems(c: &CustomResourceDefinition) -> Vec<(String, String)> {
    validate_definition(c).iter().cloned().collect()
}

/// A definition of one version whose spec has `fields`.
fn with_fields(description: &str, fields: serde_json::Value) -> CustomResourceDefinition {
    CustomResourceDefinition::from_manifest(json!({
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "description": description,
                    "properties": {"spec": {"type": "object", "properties": fields}}}}}]}
    }))
    .expect("a definition")
}

/// The 1.2 KB schema (20 × `\w{200}`) took 18.6 s and 227 MB to write, its
/// patterns compiled 4-6 times with Unicode classes: now its write, a dry run of it and
/// serving it compile each pattern once, quickly.
#[test]
fn word_patterns_compile_once_per_version_and_promptly() {
    use crate::custom::{openapi::PARSED, pattern::COMPILED};
    let fields: serde_json::Map<String, serde_json::Value> = (0..20)
        .map(|i| {
            (
                format!("f{i}"),
                json!({"type": "string", "pattern": "\\w{200}"}),
            )
        })
        .collect();
    let c = with_fields("compiled once", fields.into());
    let (parsed, compiled) = (PARSED.with(|n| n.get()), COMPILED.with(|n| n.get()));
    let started = std::time::Instant::now();
    assert_eq!(problems(&c), vec![], "the write");
    assert_eq!(
        problems(&c),
        vec![],
        "a dry run of it, or its status updates"
    );
    let served = version_schema(&c.spec.as_ref().expect("spec").versions[0]);
    assert!(matches!(served, Some(Ok(_))), "the version serves");
    // Generous: a debug build on a loaded machine; it was 18.6 s.
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(PARSED.with(|n| n.get()) - parsed, 1, "one schema built");
    assert_eq!(
        COMPILED.with(|n| n.get()) - compiled,
        20,
        "each pattern compiled once"
    );
}

#[test]
fn patterns_that_would_not_serve_are_refused_at_their_paths() {
    // A pattern over the program limit, and patterns in value validations (once accepted
    // here, then failing to build: the version was established but not served).
    let c = with_fields(
        "refused",
        json!({
            "big": {"type": "string", "pattern": "\\pL{100}"},
            "any": {"type": "string", "anyOf": [{"pattern": "(x"}, {"maxLength": 3}]},
            "not": {"type": "string", "not": {"pattern": "a{1001}"}}
        }),
    );
    let p = problems(&c);
    let at = |field: &str, words: &str| {
        let path =
            format!("spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[{field}");
        assert!(
            p.iter()
                .any(|(f, m)| f == &path && m.starts_with("Invalid value: ") && m.contains(words)),
            "{path}: {words:?} in {p:?}"
        );
    };
    at("big].pattern", "expression too large");
    at("any].anyOf[0].pattern", "missing closing )");
    at("not].not.pattern", "invalid repeat count");
    assert_eq!(p.len(), 3, "{p:?}");
    assert!(matches!(
        version_schema(&c.spec.as_ref().expect("spec").versions[0]),
        Some(Err(_))
    ));
}

#[test]
fn selectable_fields_must_name_a_scalar_of_the_schema() {
    assert_eq!(problems(&crd(".spec.class")), vec![]);
    let p = problems(&crd(".spec.nope"));
    assert!(
        p.iter()
            .any(|(_, m)| m.contains("does not refer to a valid field")),
        "{p:?}"
    );
    let p = problems(&crd(".spec.tags"));
    assert!(
        p.iter()
            .any(|(_, m)| m.contains("must point to a field of type string, boolean or integer")),
        "{p:?}"
    );
    let p = problems(&crd(".metadata.name"));
    assert!(
        p.iter()
            .any(|(_, m)| m.contains("must not point to fields in metadata")),
        "{p:?}"
    );
}
