//! Is a version's `openAPIV3Schema` structural? (upstream's `NewStructural`,
//! `ValidateStructural` and `ValidateCustomResourceDefinitionOpenAPISchema`, what we model of
//! them): the checks of the schema's JSON alone. What needs compiling (patterns, CEL rules)
//! and the defaults are checked where the schema is parsed (`parse`), once. Paths are relative
//! to `openAPIV3Schema`, in upstream's form: `properties[spec].properties[replicas].type`,
//! `items`, `additionalProperties`, `allOf[0]`.

use serde_json::{Map, Value};

type Problems = Vec<(String, String)>;

const TYPES: [&str; 6] = ["array", "boolean", "integer", "number", "object", "string"];

/// Keywords upstream refuses in a CRD schema, and its words for each.
const FORBIDDEN: [(&str, &str); 6] = [
    ("$ref", "$ref is not supported"),
    ("id", "id is not supported"),
    ("definitions", "definitions is not supported"),
    ("dependencies", "dependencies is not supported"),
    ("patternProperties", "patternProperties is not supported"),
    ("additionalItems", "additionalItems is not supported"),
];

/// Root keywords allowed with the status subresource.
const STATUS_ROOT: [&str; 23] = [
    "description",
    "type",
    "format",
    "title",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "multipleOf",
    "required",
    "items",
    "properties",
    "externalDocs",
    "example",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-validations",
    "x-kubernetes-list-type",
];

/// `key` below `path`, in upstream's form (`properties[spec].type`).
pub(super) fn at(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// Every problem of `schema`, or none (`status_subresource`: the version has the status
/// subresource, which restricts the root's keywords).
pub fn validate_structural(schema: &Value, status_subresource: bool) -> Problems {
    let mut p = Problems::new();
    let Value::Object(root) = schema else {
        p.push((String::new(), "Invalid value: must be an object".into()));
        return p;
    };
    match root.get("type").and_then(Value::as_str) {
        Some("object") => {}
        None | Some("") => p.push((
            "type".into(),
            "Required value: must not be empty at the root".into(),
        )),
        Some(t) => p.push((
            "type".into(),
            format!("Invalid value: {t:?}: must be object at the root"),
        )),
    }
    if root.get("nullable").and_then(Value::as_bool) == Some(true) {
        p.push((
            "nullable".into(),
            "Forbidden: nullable cannot be true at the root".into(),
        ));
    }
    if root.contains_key("additionalProperties") {
        p.push((
            "additionalProperties".into(),
            "Forbidden: must not be used at the root".into(),
        ));
    }
    if status_subresource {
        for k in root.keys() {
            if !STATUS_ROOT.contains(&k.as_str()) {
                p.push((
                    k.clone(),
                    "Forbidden: only description, type, format, title, maximum, exclusiveMaximum, minimum, exclusiveMinimum, maxLength, minLength, pattern, maxItems, minItems, uniqueItems, multipleOf, required, items, properties, externalDocs, example, x-kubernetes-preserve-unknown-fields and x-kubernetes-validations fields are allowed at the root of the schema if the status subresource is enabled".into(),
                ));
            }
        }
    }
    if let Some(Value::Object(props)) = root.get("properties")
        && let Some(Value::Object(meta)) = props.get("metadata")
    {
        metadata(meta, &mut p);
    }
    node(root, "", &mut p, 0);
    p.sort_by(|a, b| a.1.cmp(&b.1).then(a.0.cmp(&b.0)));
    p
}

/// The root's `metadata` may only restrict name and generateName.
fn metadata(meta: &Map<String, Value>, p: &mut Problems) {
    let only_names = meta.iter().all(|(k, v)| match k.as_str() {
        "type" => v == "object",
        "properties" => v
            .as_object()
            .is_some_and(|m| m.keys().all(|k| k == "name" || k == "generateName")),
        _ => false,
    });
    if !only_names {
        p.push((
            "properties[metadata]".into(),
            "Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified".into(),
        ));
    }
}

/// Checks one node (`path` relative to the root) and its children.
fn node(m: &Map<String, Value>, path: &str, p: &mut Problems, depth: usize) {
    if depth > 64 {
        p.push((path.into(), "Forbidden: the schema nests too deeply".into()));
        return;
    }
    for (k, why) in FORBIDDEN {
        if m.contains_key(k) {
            p.push((at(path, k), format!("Forbidden: {why}")));
        }
    }
    let preserve = m.get("x-kubernetes-preserve-unknown-fields");
    if preserve == Some(&Value::Bool(false)) {
        p.push((
            at(path, "x-kubernetes-preserve-unknown-fields"),
            "Invalid value: false: must be true or undefined".into(),
        ));
    }
    let int_or_string = m.get("x-kubernetes-int-or-string").and_then(Value::as_bool) == Some(true);
    let untyped_ok = preserve == Some(&Value::Bool(true)) || int_or_string;
    let ty = m.get("type").and_then(Value::as_str).unwrap_or("");
    if int_or_string && preserve == Some(&Value::Bool(true)) {
        p.push((
            at(path, "x-kubernetes-int-or-string"),
            "Forbidden: must be false if x-kubernetes-preserve-unknown-fields is true".into(),
        ));
    }
    if ty == "null" {
        p.push((
            at(path, "type"),
            "Invalid value: \"null\": type cannot be set to null, use nullable as an alternative"
                .into(),
        ));
    } else if !ty.is_empty() && !TYPES.contains(&ty) {
        p.push((
            at(path, "type"),
            format!("Unsupported value: {ty:?}: supported values: \"array\", \"boolean\", \"integer\", \"number\", \"object\", \"string\""),
        ));
    }
    if !path.is_empty() && ty.is_empty() && !untyped_ok {
        let what = if path.ends_with("items") {
            "must not be empty for specified array items"
        } else {
            "must not be empty for specified object fields"
        };
        p.push((at(path, "type"), format!("Required value: {what}")));
    }
    match m.get("items") {
        Some(Value::Array(_)) => p.push((
            at(path, "items"),
            "Forbidden: items must be a schema object and not an array".into(),
        )),
        Some(Value::Object(items)) => node(items, &at(path, "items"), p, depth + 1),
        _ if ty == "array" => p.push((
            at(path, "items"),
            "Required value: must be specified".into(),
        )),
        _ => {}
    }
    if m.get("uniqueItems").and_then(Value::as_bool) == Some(true) {
        p.push((
            at(path, "uniqueItems"),
            "Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic".into(),
        ));
    }
    let props = m.get("properties").and_then(Value::as_object);
    if props.is_some()
        && m.get("additionalProperties")
            .is_some_and(|a| a != &Value::Bool(true))
    {
        p.push((
            at(path, "additionalProperties"),
            "Forbidden: additionalProperties and properties are mutual exclusive".into(),
        ));
    }
    if let Some(props) = props {
        for (k, v) in props {
            match v {
                Value::Object(c) => node(c, &at(path, &format!("properties[{k}]")), p, depth + 1),
                _ => p.push((
                    at(path, &format!("properties[{k}]")),
                    "Invalid value: must be a schema object".into(),
                )),
            }
        }
    }
    if let Some(Value::Object(a)) = m.get("additionalProperties") {
        node(a, &at(path, "additionalProperties"), p, depth + 1);
    }
    list_types(m, path, ty, p);
    for k in ["allOf", "anyOf", "oneOf"] {
        if let Some(Value::Array(subs)) = m.get(k) {
            for (i, s) in subs.iter().enumerate() {
                if let Value::Object(s) = s {
                    value_validation(s, &at(path, &format!("{k}[{i}]")), p, int_or_string);
                }
            }
        }
    }
    if let Some(Value::Object(s)) = m.get("not") {
        value_validation(s, &at(path, "not"), p, false);
    }
}

/// Inside allOf/anyOf/oneOf/not nothing structural may appear (int-or-string's own patterns
/// excepted).
fn value_validation(m: &Map<String, Value>, path: &str, p: &mut Problems, int_or_string: bool) {
    let int_or_string_pattern = int_or_string
        && m.len() == 1
        && matches!(
            m.get("type").and_then(Value::as_str),
            Some("integer" | "string")
        );
    if int_or_string_pattern {
        return;
    }
    for (k, what) in [
        ("type", "must be empty"),
        ("description", "must be empty"),
        ("title", "must be empty"),
    ] {
        if m.contains_key(k) {
            p.push((at(path, k), format!("Forbidden: {what} to be structural")));
        }
    }
    for k in [
        "default",
        "additionalProperties",
        "x-kubernetes-list-type",
        "x-kubernetes-map-type",
    ] {
        if m.contains_key(k) {
            p.push((
                at(path, k),
                "Forbidden: must be undefined to be structural".into(),
            ));
        }
    }
    for k in [
        "nullable",
        "x-kubernetes-preserve-unknown-fields",
        "x-kubernetes-embedded-resource",
        "x-kubernetes-int-or-string",
    ] {
        if m.get(k) == Some(&Value::Bool(true)) {
            p.push((
                at(path, k),
                "Forbidden: must be false to be structural".into(),
            ));
        }
    }
    if m.contains_key("x-kubernetes-validations") {
        p.push((
            at(path, "x-kubernetes-validations"),
            "Forbidden: must be empty to be structural".into(),
        ));
    }
    if let Some(Value::Object(props)) = m.get("properties") {
        for (k, v) in props {
            if let Value::Object(c) = v {
                value_validation(c, &at(path, &format!("properties[{k}]")), p, false);
            }
        }
    }
    if let Some(Value::Object(items)) = m.get("items") {
        value_validation(items, &at(path, "items"), p, false);
    }
}

fn list_types(m: &Map<String, Value>, path: &str, ty: &str, p: &mut Problems) {
    let list_type = m.get("x-kubernetes-list-type").and_then(Value::as_str);
    let keys: Vec<&str> = m
        .get("x-kubernetes-list-map-keys")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if let Some(lt) = list_type {
        if !matches!(lt, "atomic" | "set" | "map") {
            p.push((
                at(path, "x-kubernetes-list-type"),
                format!(
                    "Unsupported value: {lt:?}: supported values: \"atomic\", \"set\", \"map\""
                ),
            ));
        }
        if ty != "array" {
            p.push((
                at(path, "x-kubernetes-list-type"),
                "Invalid value: must only be used for type == array".into(),
            ));
        }
    }
    if let Some(mt) = m.get("x-kubernetes-map-type").and_then(Value::as_str) {
        if !matches!(mt, "atomic" | "granular") {
            p.push((
                at(path, "x-kubernetes-map-type"),
                format!("Unsupported value: {mt:?}: supported values: \"atomic\", \"granular\""),
            ));
        }
        if ty != "object" {
            p.push((
                at(path, "x-kubernetes-map-type"),
                "Invalid value: must only be used for type == object".into(),
            ));
        }
    }
    if !keys.is_empty() && list_type != Some("map") {
        p.push((
            at(path, "x-kubernetes-list-type"),
            "Invalid value: must be map if x-kubernetes-list-map-keys is non-empty".into(),
        ));
    }
    let items = m.get("items").and_then(Value::as_object);
    if list_type == Some("map") {
        if keys.is_empty() {
            p.push((
                at(path, "x-kubernetes-list-map-keys"),
                "Required value: must not be empty if x-kubernetes-list-type is map".into(),
            ));
        }
        let item_type = items.and_then(|i| i.get("type")).and_then(Value::as_str);
        if item_type != Some("object") {
            p.push((
                at(path, "items.type"),
                "Invalid value: must be object if parent array's x-kubernetes-list-type is map"
                    .into(),
            ));
        }
        let item_props = items
            .and_then(|i| i.get("properties"))
            .and_then(Value::as_object);
        let required: Vec<&str> = items
            .and_then(|i| i.get("required"))
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        for k in &keys {
            let prop = item_props
                .and_then(|ps| ps.get(*k))
                .and_then(Value::as_object);
            match prop {
                None => p.push((
                    at(path, "items.properties"),
                    format!("Invalid value: {k:?}: entries in x-kubernetes-list-map-keys must correspond to item properties"),
                )),
                Some(prop) => {
                    let scalar = matches!(
                        prop.get("type").and_then(Value::as_str),
                        Some("string" | "integer" | "number" | "boolean")
                    );
                    if !scalar {
                        p.push((
                            at(path, &format!("items.properties[{k}].type")),
                            "Invalid value: must be a scalar type if parent array's x-kubernetes-list-type is map".into(),
                        ));
                    }
                    if !required.contains(k) && !prop.contains_key("default") {
                        p.push((
                            at(path, &format!("items.properties[{k}]")),
                            "Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property".into(),
                        ));
                    }
                }
            }
        }
    }
    if list_type == Some("set")
        && let Some(items) = items
    {
        let item_type = items.get("type").and_then(Value::as_str).unwrap_or("");
        let atomic = items.get("x-kubernetes-list-type").and_then(Value::as_str) == Some("atomic")
            || items.get("x-kubernetes-map-type").and_then(Value::as_str) == Some("atomic");
        if matches!(item_type, "object" | "array") && !atomic {
            p.push((
                at(path, "items.x-kubernetes-map-type"),
                "Invalid value: must be atomic as item of a list with x-kubernetes-list-type=set"
                    .into(),
            ));
        }
    }
}

/// Whether `s` is a valid `format` (upstream's formats; unknown ones pass, as upstream only
/// warns about them).
pub(super) fn format_ok(format: &str, s: &str) -> bool {
    match format {
        "date-time" | "datetime" => date_time(s),
        "date" => date(s),
        "byte" => {
            use base64::Engine as _;
            base64::engine::general_purpose::STANDARD.decode(s).is_ok()
        }
        "uuid" => {
            let b = s.as_bytes();
            b.len() == 36
                && b.iter().enumerate().all(|(i, c)| match i {
                    8 | 13 | 18 | 23 => *c == b'-',
                    _ => c.is_ascii_hexdigit(),
                })
        }
        "ipv4" => s.parse::<std::net::Ipv4Addr>().is_ok(),
        "ipv6" => s.parse::<std::net::Ipv6Addr>().is_ok(),
        "hostname" => {
            !s.is_empty()
                && s.len() <= 253
                && s.split('.').all(|l| {
                    !l.is_empty()
                        && l.len() <= 63
                        && l.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-')
                        && !l.starts_with('-')
                        && !l.ends_with('-')
                })
        }
        "int32" | "int64" | "double" | "float" | "password" => true,
        _ => true,
    }
}

fn date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
        && (1..=12).contains(&s[5..7].parse::<u32>().unwrap_or(0))
        && (1..=31).contains(&s[8..10].parse::<u32>().unwrap_or(0))
}

fn date_time(s: &str) -> bool {
    if s.len() < 20 || !date(&s[..10]) || !matches!(s.as_bytes()[10], b'T' | b't' | b' ') {
        return false;
    }
    let t = &s[11..];
    let b = t.as_bytes();
    if b.len() < 9 || b[2] != b':' || b[5] != b':' {
        return false;
    }
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    if !(digits(0..2) && digits(3..5) && digits(6..8)) {
        return false;
    }
    let mut rest = &t[8..];
    if let Some(frac) = rest.strip_prefix('.') {
        let n = frac.bytes().take_while(u8::is_ascii_digit).count();
        if n == 0 {
            return false;
        }
        rest = &frac[n..];
    }
    rest == "Z"
        || rest == "z"
        || (rest.len() == 6
            && matches!(rest.as_bytes()[0], b'+' | b'-')
            && rest.as_bytes()[3] == b':'
            && rest[1..3].bytes().all(|c| c.is_ascii_digit())
            && rest[4..6].bytes().all(|c| c.is_ascii_digit()))
}
