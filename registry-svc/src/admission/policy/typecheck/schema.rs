//! The part of a kind's schema type checking reads ([`Schema`]), converted from OpenAPI v3 JSON
//! as upstream's `SchemaDeclType` does (see the parent module's doc).

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// What an expression may find at a node of an object: the part of a schema type checking
/// reads.
#[derive(Debug, Clone, PartialEq)]
pub enum Schema {
    /// Anything (`dyn`): nothing below it is checked.
    Any,
    /// An object with these properties, by their names in CEL (escaped).
    Object(BTreeMap<String, Schema>),
    /// A map from strings to values of this schema (`additionalProperties`).
    Map(Box<Schema>),
    /// A list of items of this schema.
    List(Box<Schema>),
    /// A scalar.
    Scalar(Scalar),
}

/// The scalar types, as CEL has them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scalar {
    /// `string`.
    String,
    /// `int` (an `integer`).
    Int,
    /// `uint` (only literals: schemas have no unsigned integers).
    Uint,
    /// `double` (a `number`).
    Double,
    /// `bool` (a `boolean`).
    Bool,
    /// `bytes` (a `byte` string).
    Bytes,
    /// `timestamp` (a `date` or `date-time` string).
    Timestamp,
    /// `duration` (a `duration` string).
    Duration,
}

impl Scalar {
    /// The type's name in cel-go's messages (`FormatCELType`).
    pub(super) fn cel_name(self) -> &'static str {
        match self {
            Scalar::String => "string",
            Scalar::Int => "int",
            Scalar::Uint => "uint",
            Scalar::Double => "double",
            Scalar::Bool => "bool",
            Scalar::Bytes => "bytes",
            Scalar::Timestamp => "timestamp",
            Scalar::Duration => "duration",
        }
    }
}

impl Schema {
    /// The schema of a kind from its OpenAPI v3 schema `schema` (a resource's root), its
    /// `$ref`s (`#/components/schemas/NAME`) resolved in `components` (a document's
    /// `components.schemas`; empty for a definition's `openAPIV3Schema`, which has none).
    pub fn from_openapi(schema: &Value, components: &Map<String, Value>) -> Schema {
        convert(schema, components, true, &mut Vec::new())
    }

    /// The schema of the kind `group`/`version`/`kind` in an OpenAPI v3 document of its group
    /// version (what `/openapi/v3/apis/G/V` serves): the one of `components.schemas` whose
    /// `x-kubernetes-group-version-kind` names it. `None` when the document has none.
    pub fn from_openapi_document(
        document: &Value,
        group: &str,
        version: &str,
        kind: &str,
    ) -> Option<Schema> {
        let components = document.pointer("/components/schemas")?.as_object()?;
        let names = |s: &&Value| {
            s.get("x-kubernetes-group-version-kind")
                .and_then(Value::as_array)
                .is_some_and(|gvks| {
                    gvks.iter().any(|g| {
                        g.get("group").and_then(Value::as_str) == Some(group)
                            && g.get("version").and_then(Value::as_str) == Some(version)
                            && g.get("kind").and_then(Value::as_str) == Some(kind)
                    })
                })
        };
        let schema = components.values().find(names)?;
        Some(Self::from_openapi(schema, components))
    }
}

/// Whether the extension `name` is `true` on `o`.
fn flag(o: &Map<String, Value>, name: &str) -> bool {
    o.get(name).and_then(Value::as_bool) == Some(true)
}

/// One OpenAPI schema node as a [`Schema`]; `root` when it is a resource's root. `seen` holds
/// the references being converted: a recursive one (a JSON schema's own schema) is `Any`
/// where it recurs, instead of an endless tree.
fn convert(
    v: &Value,
    components: &Map<String, Value>,
    root: bool,
    seen: &mut Vec<String>,
) -> Schema {
    let Some(o) = v.as_object() else {
        return Schema::Any;
    };
    // An embedded resource is a resource's root of its own.
    let root = root || flag(o, "x-kubernetes-embedded-resource");
    if let Some(r) = o.get("$ref").and_then(Value::as_str) {
        let name = r.rsplit('/').next().unwrap_or(r);
        let Some(target) = components.get(name) else {
            return Schema::Any;
        };
        if seen.iter().any(|s| s == name) {
            return Schema::Any;
        }
        seen.push(name.to_string());
        let s = convert(target, components, root, seen);
        seen.pop();
        return s;
    }
    // `rest::openapi` writes a reference as `allOf: [{$ref}]`, beside its description.
    if o.get("type").is_none()
        && let Some(first) = o
            .get("allOf")
            .and_then(Value::as_array)
            .and_then(|a| a.first())
    {
        return convert(first, components, root, seen);
    }
    if flag(o, "x-kubernetes-int-or-string") || flag(o, "x-kubernetes-preserve-unknown-fields") {
        return Schema::Any;
    }
    let schema = match o.get("type").and_then(Value::as_str) {
        Some("object") => match o.get("additionalProperties") {
            Some(Value::Bool(true)) => Schema::Map(Box::new(Schema::Any)),
            Some(ap @ Value::Object(_)) => {
                Schema::Map(Box::new(convert(ap, components, false, seen)))
            }
            _ => {
                let mut props = BTreeMap::new();
                if let Some(p) = o.get("properties").and_then(Value::as_object) {
                    for (name, s) in p {
                        if let Some(escaped) = escape(name) {
                            props.insert(escaped, convert(s, components, false, seen));
                        }
                    }
                }
                Schema::Object(props)
            }
        },
        Some("array") => match o.get("items") {
            Some(items) => Schema::List(Box::new(convert(items, components, false, seen))),
            None => Schema::Any,
        },
        Some("string") => match o.get("format").and_then(Value::as_str) {
            Some("byte") => Schema::Scalar(Scalar::Bytes),
            Some("duration") => Schema::Scalar(Scalar::Duration),
            Some("date" | "date-time") => Schema::Scalar(Scalar::Timestamp),
            // `rest::openapi`'s `IntOrString`.
            Some("int-or-string") => Schema::Any,
            _ => Schema::Scalar(Scalar::String),
        },
        Some("integer") => Schema::Scalar(Scalar::Int),
        Some("number") => Schema::Scalar(Scalar::Double),
        Some("boolean") => Schema::Scalar(Scalar::Bool),
        _ => Schema::Any,
    };
    if root {
        with_type_and_object_meta(schema)
    } else {
        schema
    }
}

/// Upstream's `WithTypeAndObjectMeta`: a resource's root always has `kind`, `apiVersion` and
/// `metadata` with `name` and `generateName`, all strings; unless it already has all of them,
/// those three are set to just that (a `metadata` with more properties but not these is
/// replaced too, as upstream does).
fn with_type_and_object_meta(schema: Schema) -> Schema {
    let Schema::Object(mut props) = schema else {
        return schema;
    };
    let string = Schema::Scalar(Scalar::String);
    let is_string = |s: Option<&Schema>| s == Some(&string);
    let complete = is_string(props.get("kind"))
        && is_string(props.get("apiVersion"))
        && matches!(props.get("metadata"), Some(Schema::Object(m))
            if is_string(m.get("name")) && is_string(m.get("generateName")));
    if !complete {
        props.insert("kind".into(), string.clone());
        props.insert("apiVersion".into(), string.clone());
        props.insert(
            "metadata".into(),
            Schema::Object(BTreeMap::from([
                ("name".to_string(), string.clone()),
                ("generateName".to_string(), string),
            ])),
        );
    }
    Schema::Object(props)
}

/// CEL's reserved words, which a property's name is escaped from as `__word__` (upstream's
/// `celReservedSymbols`; `namespace` among them, so `metadata.namespace` is
/// `metadata.__namespace__` to the checker).
const RESERVED: &[&str] = &[
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// A property's name as CEL sees it (upstream's `Escape`): `__` is `__underscores__`, `.`
/// `__dot__`, `-` `__dash__`, `/` `__slash__`; `None` when it cannot be written at all (it
/// starts with a digit, or has other characters than ASCII letters, digits and those).
fn escape(name: &str) -> Option<String> {
    if name.as_bytes().first().is_none_or(u8::is_ascii_digit) {
        return None;
    }
    if RESERVED.contains(&name) {
        return Some(format!("__{name}__"));
    }
    let mut out = String::with_capacity(name.len());
    let mut chars = name.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '_' if chars.peek() == Some(&'_') => {
                chars.next();
                out.push_str("__underscores__");
            }
            '.' => out.push_str("__dot__"),
            '-' => out.push_str("__dash__"),
            '/' => out.push_str("__slash__"),
            c if c.is_ascii_alphanumeric() || c == '_' => out.push(c),
            _ => return None,
        }
    }
    Some(out)
}
