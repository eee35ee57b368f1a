//! The schema engine on the CronTab example of the Kubernetes docs and on the rules that make
//! a schema structural.

use serde_json::{Value, json};

use super::{Schema, validate_structural};

fn crontab() -> Value {
    json!({
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "cronSpec": {"type": "string", "pattern": "^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$"},
                    "image": {"type": "string"},
                    "replicas": {"type": "integer", "minimum": 1, "maximum": 10, "default": 1},
                    "mode": {"type": "string", "enum": ["a", "b"]},
                    "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set", "maxItems": 3},
                    "ports": {
                        "type": "array",
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["name"],
                        "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "port": {"type": "integer", "format": "int32"}}}
                    },
                    "size": {"x-kubernetes-int-or-string": true},
                    "labels": {"type": "object", "additionalProperties": {"type": "string", "maxLength": 5}},
                    "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    "when": {"type": "string", "format": "date-time"}
                },
                "required": ["cronSpec"]
            }
        }
    })
}

fn errors(obj: Value) -> Vec<(String, String)> {
    Schema::parse(&crontab())
        .expect("structural")
        .validate(&obj)
}

#[test]
fn the_crontab_example_is_structural_and_its_documented_object_valid() {
    assert_eq!(validate_structural(&crontab(), true), vec![]);
    let ok = json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab",
        "metadata": {"name": "my-new-cron-object"},
        "spec": {"cronSpec": "* * * * */5", "image": "my-awesome-cron-image", "replicas": 1}});
    assert_eq!(errors(ok), vec![]);
}

#[test]
fn violations_have_upstreams_paths_and_words() {
    let e = errors(json!({"spec": {"cronSpec": "bad", "replicas": "string"}}));
    assert!(
        e.contains(&(
            "spec.replicas".into(),
            "Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\""
                .into()
        )),
        "{e:?}"
    );
    assert!(
        e.iter()
            .any(|(p, m)| p == "spec.cronSpec" && m.contains("spec.cronSpec in body should match")),
        "{e:?}"
    );
    let e = errors(
        json!({"spec": {"replicas": 11, "mode": "c", "tags": ["x", "x"], "labels": {"a": "toolong"}}}),
    );
    assert!(
        e.contains(&("spec.cronSpec".into(), "Required value".into())),
        "{e:?}"
    );
    assert!(
        e.contains(&(
            "spec.replicas".into(),
            "Invalid value: 11: spec.replicas in body should be less than or equal to 10".into()
        )),
        "{e:?}"
    );
    assert!(
        e.contains(&(
            "spec.mode".into(),
            "Unsupported value: \"c\": supported values: \"a\", \"b\"".into()
        )),
        "{e:?}"
    );
    assert!(
        e.contains(&("spec.tags[1]".into(), "Duplicate value: \"x\"".into())),
        "{e:?}"
    );
    assert!(
        e.contains(&(
            "spec.labels.a".into(),
            "Too long: may not be more than 5 bytes".into()
        )),
        "{e:?}"
    );
    let e = errors(
        json!({"spec": {"cronSpec": "* * * * *", "ports": [{"name": "a"}, {"name": "a"}], "size": true, "when": "yesterday"}}),
    );
    assert!(
        e.iter()
            .any(|(p, m)| p == "spec.ports[1]" && m.starts_with("Duplicate value")),
        "{e:?}"
    );
    assert!(e.iter().any(|(p, _)| p == "spec.size"), "{e:?}");
    assert!(
        e.iter()
            .any(|(p, m)| p == "spec.when" && m.contains("date-time")),
        "{e:?}"
    );
    assert_eq!(
        errors(
            json!({"spec": {"cronSpec": "* * * * *", "size": "50%", "ports": [{"name": "a", "port": 80}]}})
        ),
        vec![]
    );
}

#[test]
fn unknown_fields_are_pruned_and_defaults_filled() {
    let s = Schema::parse(&crontab()).expect("structural");
    let mut o = json!({"apiVersion": "v", "kind": "K", "metadata": {"name": "x"}, "extra": 1,
        "spec": {"cronSpec": "* * * * *", "unknown": 2, "free": {"anything": {"goes": 1}}}});
    s.prune(&mut o);
    s.default(&mut o);
    assert_eq!(
        o,
        json!({"apiVersion": "v", "kind": "K", "metadata": {"name": "x"},
        "spec": {"cronSpec": "* * * * *", "replicas": 1, "free": {"anything": {"goes": 1}}}})
    );
}

#[test]
fn non_structural_schemas_are_refused_with_upstreams_words() {
    let p = validate_structural(
        &json!({"type": "object", "properties": {"spec": {"properties": {"a": {"type": "string"}}}}}),
        false,
    );
    assert!(
        p.contains(&(
            "properties[spec].type".into(),
            "Required value: must not be empty for specified object fields".into()
        )),
        "{p:?}"
    );
    let p = validate_structural(&json!({"type": "string"}), false);
    assert!(
        p.contains(&(
            "type".into(),
            "Invalid value: \"string\": must be object at the root".into()
        )),
        "{p:?}"
    );
    let p = validate_structural(
        &json!({"type": "object", "properties": {"l": {"type": "array"}}}),
        false,
    );
    assert!(
        p.contains(&(
            "properties[l].items".into(),
            "Required value: must be specified".into()
        )),
        "{p:?}"
    );
    let p = validate_structural(
        &json!({"type": "object", "properties": {"a": {"$ref": "#/x"}, "b": {"type": "array", "items": {"type": "string"}, "uniqueItems": true}}}),
        false,
    );
    assert!(
        p.iter()
            .any(|(f, m)| f == "properties[a].$ref" && m.contains("not supported")),
        "{p:?}"
    );
    assert!(
        p.iter()
            .any(|(f, m)| f == "properties[b].uniqueItems" && m.contains("quadratic")),
        "{p:?}"
    );
    let p = validate_structural(
        &json!({"type": "object", "properties": {"a": {"type": "object", "properties": {}, "additionalProperties": {"type": "string"}}}}),
        false,
    );
    assert!(
        p.iter().any(|(_, m)| m.contains("mutual exclusive")),
        "{p:?}"
    );
    let p = validate_structural(
        &json!({"type": "object", "properties": {"a": {"type": "string", "anyOf": [{"type": "string"}]}}}),
        false,
    );
    assert!(
        p.iter().any(|(f, m)| f == "properties[a].anyOf[0].type"
            && m.contains("must be empty to be structural")),
        "{p:?}"
    );
    let p = validate_structural(
        &json!({"type": "object", "properties": {"metadata": {"type": "object", "properties": {"labels": {"type": "object"}}}}}),
        false,
    );
    assert!(p.iter().any(|(f, _)| f == "properties[metadata]"), "{p:?}");
    // What needs the parsed schema (defaults, patterns) is found by parsing it.
    let p = Schema::parse(
        &json!({"type": "object", "properties": {"a": {"type": "integer", "default": "x"}}}),
    )
    .expect_err("an invalid default");
    assert!(p.iter().any(|(f, _)| f == "properties[a].default"), "{p:?}");
    let p = Schema::parse(
        &json!({"type": "object", "properties": {"a": {"type": "string", "pattern": "("}}}),
    )
    .expect_err("a pattern that does not compile");
    assert!(
        p.iter().any(|(f, m)| f == "properties[a].pattern"
            && m.contains("must be a valid regular expression")),
        "{p:?}"
    );
    let p = validate_structural(
        &json!({"type": "object", "properties": {"s": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]}}}),
        false,
    );
    assert_eq!(p, vec![], "int-or-string's own pattern is allowed");
    let p = validate_structural(
        &json!({"type": "object", "additionalProperties": true}),
        true,
    );
    assert!(p.iter().any(|(f, _)| f == "additionalProperties"), "{p:?}");
}

/// The shapes controller-gen writes into real CRDs (an operator's schema, in our own words):
/// a described root with required spec and the status subresource, `metadata: {type: object}`,
/// int-or-string with its anyOf pattern, atomic maps, sets of enums, map lists keyed by a
/// required field, defaults on enum strings.
#[test]
fn controller_gen_shapes_are_structural() {
    let schema = json!({
        "description": "A monitor of services.",
        "type": "object",
        "required": ["spec"],
        "properties": {
            "apiVersion": {"type": "string", "description": "APIVersion"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": {
                "type": "object",
                "required": ["endpoints"],
                "properties": {
                    "endpoints": {"type": "array", "items": {
                        "type": "object",
                        "properties": {
                            "targetPort": {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": true},
                            "factor": {"anyOf": [{"type": "integer"}, {"type": "string"}], "pattern": "^(\\+|-)?[0-9]+$", "x-kubernetes-int-or-string": true},
                            "action": {"type": "string", "default": "replace", "enum": ["replace", "keep"]},
                            "secret": {"type": "object", "required": ["key"], "x-kubernetes-map-type": "atomic",
                                "properties": {"key": {"type": "string"}, "name": {"type": "string", "default": ""}}},
                            "params": {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}}}
                        }
                    }},
                    "protocols": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string", "enum": ["A", "B"]}},
                    "selector": {"type": "object", "x-kubernetes-map-type": "atomic", "properties": {
                        "matchExpressions": {"type": "array", "x-kubernetes-list-type": "atomic", "items": {"type": "object", "required": ["key"], "properties": {"key": {"type": "string"}}}},
                        "matchLabels": {"type": "object", "additionalProperties": {"type": "string"}}
                    }}
                }
            },
            "status": {"type": "object", "properties": {"conditions": {
                "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"],
                "items": {"type": "object", "required": ["type", "lastTransitionTime"], "properties": {
                    "type": {"type": "string", "minLength": 1},
                    "lastTransitionTime": {"type": "string", "format": "date-time"},
                    "observedGeneration": {"type": "integer", "format": "int64"}
                }}
            }}}
        }
    });
    assert_eq!(validate_structural(&schema, true), vec![]);
    let s = Schema::parse(&schema).expect("parses");
    let mut o = json!({"apiVersion": "m/v1", "kind": "M", "metadata": {"name": "a"},
        "spec": {"endpoints": [{"targetPort": 8080, "factor": "-3", "secret": {"key": "k"}}], "protocols": ["A"]},
        "status": {"conditions": [{"type": "Accepted", "lastTransitionTime": "2026-01-02T03:04:05Z"}]}});
    s.prune(&mut o);
    s.default(&mut o);
    // `metadata: {type: object}` declares nothing: the object's metadata is the API's, kept.
    assert_eq!(o["metadata"], json!({"name": "a"}), "{o}");
    assert_eq!(o["apiVersion"], json!("m/v1"));
    assert_eq!(o["spec"]["endpoints"][0]["action"], json!("replace"));
    assert_eq!(o["spec"]["endpoints"][0]["secret"]["name"], json!(""));
    assert_eq!(s.validate(&o), vec![]);
    let bad = json!({"spec": {"endpoints": [{"factor": "x"}], "protocols": ["C"]}});
    let e = s.validate(&bad);
    assert!(
        e.iter().any(|(p, _)| p == "spec.endpoints[0].factor"),
        "{e:?}"
    );
    assert!(e.iter().any(|(p, _)| p == "spec.protocols[0]"), "{e:?}");
}

/// Bounds, lengths, counts, formats and null, each in upstream's words at its own path.
#[test]
fn bounds_lengths_counts_formats_and_null_have_upstreams_words() {
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "n32": {"type": "integer", "format": "int32"},
        "n64": {"type": "integer", "format": "int64"},
        "above": {"type": "number", "minimum": 0, "exclusiveMinimum": true},
        "below": {"type": "number", "maximum": 10, "exclusiveMaximum": true},
        "short": {"type": "string", "minLength": 3},
        "few": {"type": "array", "minItems": 2, "items": {"type": "integer"}},
        "many": {"type": "array", "maxItems": 1, "items": {"type": "integer"}},
        "strict": {"type": "string"},
        "loose": {"type": "string", "nullable": true}
    }}}});
    let s = Schema::parse(&schema).expect("structural");
    let ok = json!({"spec": {"n32": 2_147_483_647i64, "n64": 9_007_199_254_740_991i64, "above": 0.5,
        "below": 9.5, "short": "abc", "few": [1, 2], "many": [1], "strict": "x", "loose": null}});
    assert_eq!(s.validate(&ok), vec![]);
    let bad = json!({"spec": {"n32": 3_000_000_000i64, "above": 0, "below": 10, "short": "ab",
        "few": [1], "many": [1, 2], "strict": null}});
    let e = s.validate(&bad);
    let at = |path: &str, words: &str| {
        assert!(
            e.iter().any(|(p, m)| p == path && m.contains(words)),
            "{path}: {words:?} in {e:?}"
        );
    };
    at("spec.n32", "must be of type int32");
    at("spec.above", "spec.above in body should be greater than 0");
    at("spec.below", "spec.below in body should be less than 10");
    at(
        "spec.short",
        "spec.short in body should be at least 3 chars long",
    );
    at("spec.few", "spec.few in body should have at least 2 items");
    at("spec.many", "Too many: 2: must have at most 1 items");
    at(
        "spec.strict",
        "Invalid value: \"null\": spec.strict in body must be of type string: \"null\"",
    );
    assert_eq!(e.len(), 7, "one violation per field: {e:?}");
}

/// Patterns inside value validations are compiled and checked as any other: a schema that
/// parses is one that serves (issue: a pattern in `anyOf` passed the definition's validation,
/// then failed to build, and the version was silently not served).
#[test]
fn patterns_in_value_validations_are_checked_at_their_paths() {
    for (where_, schema) in [
        (
            "anyOf[1]",
            json!({"anyOf": [{"minLength": 1}, {"pattern": "(x"}]}),
        ),
        ("allOf[0]", json!({"allOf": [{"pattern": "a{1001}"}]})),
        (
            "oneOf[0]",
            json!({"oneOf": [{"pattern": "[z-a]"}, {"maxLength": 2}]}),
        ),
        ("not", json!({"not": {"pattern": "\\8"}})),
        (
            "allOf[0].properties[b]",
            json!({"allOf": [{"properties": {"b": {"pattern": "(?x)"}}}]}),
        ),
    ] {
        let mut field = json!({"type": "object", "properties": {"b": {"type": "string"}}});
        field
            .as_object_mut()
            .expect("object")
            .extend(schema.as_object().expect("object").clone());
        let p = Schema::parse(&json!({"type": "object", "properties": {"a": field}}))
            .expect_err(where_);
        let path = format!("properties[a].{where_}.pattern");
        assert!(
            p.iter().any(|(f, m)| f == &path
                && m.contains(
                    "must be a valid regular expression, but isn't: error parsing regexp"
                )),
            "{path} in {p:?}"
        );
    }
}
