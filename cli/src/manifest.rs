//! Manifests in Kubernetes' shape (`apiVersion`, `kind`, `metadata`, ...; several YAML or
//! JSON documents per file) in, and objects out as `-o yaml|json|jsonpath=|custom-columns=`
//! print them.
//!
//! A document is read as JSON and sent as it is: registry-svc decodes it (upstream's field
//! names, int64 as numbers or strings), drops the fields the kind does not have with a warning
//! each, and refuses what does not fit, so the CLI needs no knowledge of any kind. Its
//! `apiVersion` and `kind` are looked up in discovery when it is applied
//! ([`crate::resource::Discovery::for_kind`]).

use serde::Deserialize;
use serde_json::{Map, Value};

/// A manifest document, read.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    /// Its place in the file, from 1 (named in errors).
    pub document: usize,
    /// The object, as written.
    pub object: Map<String, Value>,
}

impl Parsed {
    /// `apiVersion`.
    pub fn api_version(&self) -> &str {
        self.object
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// `kind`.
    pub fn kind(&self) -> &str {
        self.object
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// `metadata.name`.
    pub fn name(&self) -> &str {
        self.object
            .get("metadata")
            .and_then(|m| m.get("name"))
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// `metadata.namespace`, else `default_ns`.
    pub fn namespace_or<'a>(&'a self, default_ns: &'a str) -> &'a str {
        self.object
            .get("metadata")
            .and_then(|m| m.get("namespace"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .unwrap_or(default_ns)
    }
}

/// Parses every document of a YAML (or JSON) manifest; the first document that cannot be read
/// is the error.
pub fn parse(text: &str) -> Result<Vec<Parsed>, String> {
    parse_each(text).into_iter().collect()
}

/// Parses each document of a manifest on its own: one it cannot read (bad YAML, no `kind`) is
/// an error in its place, and the others are still read, so that `apply -f` applies them and
/// reports that one (kubectl's behaviour).
pub fn parse_each(text: &str) -> Vec<Result<Parsed, String>> {
    let mut out = Vec::new();
    for (i, doc) in serde_yaml_ng::Deserializer::from_str(text).enumerate() {
        let parsed = match Value::deserialize(doc) {
            Ok(Value::Null) => continue,
            Ok(value) => from_value(value, i + 1),
            Err(e) => Err(e.to_string()),
        };
        out.push(parsed.map_err(|e| format!("document {}: {e}", i + 1)));
    }
    out
}

/// Reads one object given in Kubernetes' shape: it must be a mapping with an `apiVersion`
/// and a `kind` (upstream's "Object 'Kind' is missing").
pub fn from_value(value: Value, document: usize) -> Result<Parsed, String> {
    let Value::Object(object) = value else {
        return Err("not a mapping".into());
    };
    for field in ["apiVersion", "kind"] {
        if object
            .get(field)
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            return Err(format!("Object '{field}' is missing"));
        }
    }
    Ok(Parsed { document, object })
}

/// Whether `-o format` prints the objects' JSON shape (rendered by [`render`]) rather than a
/// table or names.
pub fn is_structured(format: &str) -> bool {
    format == "yaml"
        || format == "json"
        || format.starts_with("jsonpath=")
        || format.starts_with("custom-columns=")
}

/// Checks an `-o` value before anything is asked of the server.
pub fn check_output(format: &str) -> Result<(), String> {
    if let Some(t) = format.strip_prefix("jsonpath=") {
        return crate::jsonpath::Template::parse(t).map(drop);
    }
    if let Some(spec) = format.strip_prefix("custom-columns=") {
        return crate::jsonpath::custom_columns(spec, &[]).map(drop);
    }
    if ["", "wide", "yaml", "json", "name"].contains(&format) {
        return Ok(());
    }
    Err(format!(
        "unknown output format {format:?}: use wide, yaml, json, name, jsonpath=TEMPLATE or \
         custom-columns=HEADER:PATH,..."
    ))
}

/// Renders a value (an object, or a `kind: List` of them) as YAML, JSON, a JSONPath template
/// (`jsonpath=...`) or custom columns (`custom-columns=...`, a row per item of a list).
pub fn render(value: &Value, format: &str) -> Result<String, String> {
    if let Some(t) = format.strip_prefix("jsonpath=") {
        return crate::jsonpath::Template::parse(t)?.render(value);
    }
    if let Some(spec) = format.strip_prefix("custom-columns=") {
        let objects: Vec<&Value> = match value.get("items") {
            Some(Value::Array(items)) if value["kind"] == "List" => items.iter().collect(),
            _ => vec![value],
        };
        let rows = crate::jsonpath::custom_columns(spec, &objects)?;
        let (header, rows) = rows.split_first().ok_or("no columns")?;
        return Ok(crate::table::render(header, rows));
    }
    match format {
        "json" => serde_json::to_string_pretty(value).map_err(|e| e.to_string()),
        "yaml" => serde_yaml_ng::to_string(value).map_err(|e| e.to_string()),
        other => Err(format!("unknown output format {other:?}: use yaml or json")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MANIFEST: &str = r#"
apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: team-a
  labels:
    app: web
spec:
  terminationGracePeriodSeconds: 10
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  color: blue
"#;

    #[test]
    fn documents_are_read_as_json_as_written() {
        let docs = parse(MANIFEST).expect("parses");
        assert_eq!(docs.len(), 2);
        assert_eq!((docs[0].api_version(), docs[0].kind()), ("v1", "Pod"));
        assert_eq!(
            (docs[0].name(), docs[0].namespace_or("x")),
            ("web", "team-a")
        );
        assert_eq!(
            docs[0].object["spec"]["terminationGracePeriodSeconds"],
            serde_json::json!(10)
        );
        assert_eq!(
            (docs[1].document, docs[1].namespace_or("default")),
            (2, "default")
        );
    }

    #[test]
    fn each_document_is_read_on_its_own() {
        let text = format!("apiVersion: v1\n---\n- a\n---\n{MANIFEST}");
        let docs = parse_each(&text);
        assert_eq!(docs.len(), 4);
        assert_eq!(docs[0], Err("document 1: Object 'kind' is missing".into()));
        assert_eq!(docs[1], Err("document 2: not a mapping".into()));
        assert!(
            docs[2]
                .as_ref()
                .is_ok_and(|d| d.document == 3 && d.kind() == "Pod")
        );
        assert!(parse(&text).is_err(), "parse is all or nothing");
    }

    #[test]
    fn objects_render_as_yaml_json_and_templates() {
        let docs = parse(MANIFEST).expect("parses");
        let cm = Value::Object(docs[1].object.clone());
        let y = render(&cm, "yaml").expect("yaml");
        assert!(y.starts_with("apiVersion: v1\nkind: ConfigMap\n"), "{y}");
        assert_eq!(parse(&y).expect("round trip")[0].object, docs[1].object);
        assert!(
            render(&cm, "json")
                .expect("json")
                .contains("\"kind\": \"ConfigMap\"")
        );
        assert_eq!(
            render(&cm, "jsonpath={.data.color}").expect("jsonpath"),
            "blue"
        );
        assert!(check_output("wide").is_ok() && check_output("toml").is_err());
    }
}
