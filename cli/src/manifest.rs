//! Manifests in Kubernetes' shape (`apiVersion`, `kind`, `metadata`, `spec`; several YAML
//! documents per file) <-> our messages.
//!
//! The proto3 JSON mapping (pbjson, generated in the proto crate) already uses Kubernetes' field
//! names (`nodeName`, `resourceVersion`, `terminationGracePeriodSeconds`), so a manifest is read
//! by removing `apiVersion`/`kind` and deserializing the rest. Two adjustments, as kubectl users
//! expect: scalars in string maps (labels, annotations, ConfigMap data, resource quantities such
//! as `cpu: 1`) become strings, and fields kubestore does not model (`ports`, `env`, ...) are
//! dropped and reported rather than refusing the whole manifest.

use kubestore_proto::{
    apiextensions::v1::CustomResourceDefinition,
    core::v1::{ConfigMap, Event, Pod, Secret},
};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::kinds::Kind;

/// One object of a manifest.
#[derive(Debug, Clone, PartialEq)]
pub enum Object {
    /// A Pod.
    Pod(Pod),
    /// A ConfigMap.
    ConfigMap(ConfigMap),
    /// An Event.
    Event(Event),
    /// A Secret.
    Secret(Secret),
    /// A CustomResourceDefinition (`apiextensions.k8s.io/v1`).
    Definition(Box<CustomResourceDefinition>),
    /// An object of any other `apiVersion` (a custom kind, looked up when applied), as its
    /// JSON.
    Custom(Map<String, Value>),
}

/// A manifest document, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    /// The object.
    pub object: Object,
    /// Paths of fields the manifest set that kubestore does not model (dropped).
    pub ignored: Vec<String>,
}

/// Parses every document of a YAML (or JSON) manifest; the first document that cannot be read
/// is the error.
pub fn parse(text: &str) -> Result<Vec<Parsed>, String> {
    parse_each(text).into_iter().collect()
}

/// Parses each document of a manifest on its own: one it cannot read (a kind kubestore does
/// not serve, bad YAML) is an error in its place, and the others are still read, so that
/// `apply -f` applies them and reports that one (kubectl's behaviour for a file with, say, a
/// Deployment in it).
pub fn parse_each(text: &str) -> Vec<Result<Parsed, String>> {
    let mut out = Vec::new();
    for (i, doc) in serde_yaml_ng::Deserializer::from_str(text).enumerate() {
        let parsed = match Value::deserialize(doc) {
            Ok(Value::Null) => continue,
            Ok(value) => parse_value(value),
            Err(e) => Err(e.to_string()),
        };
        out.push(parsed.map_err(|e| format!("document {}: {e}", i + 1)));
    }
    out
}

/// Reads one object given in Kubernetes' shape (`apiVersion`, `kind`, fields), as a manifest
/// document is read.
pub fn from_value(value: Value) -> Result<Parsed, String> {
    parse_value(value)
}

fn parse_value(value: Value) -> Result<Parsed, String> {
    let Value::Object(mut doc) = value else {
        return Err("not a mapping".into());
    };
    let api_version = doc
        .get("apiVersion")
        .and_then(Value::as_str)
        .map(String::from);
    let kind_name = doc.get("kind").and_then(Value::as_str).map(String::from);
    match (api_version.as_deref(), kind_name.as_deref()) {
        (Some("v1"), _) => {}
        (Some("apiextensions.k8s.io/v1"), Some("CustomResourceDefinition")) => {
            doc.remove("apiVersion");
            doc.remove("kind");
            let crd: CustomResourceDefinition = serde_json::from_value(Value::Object(doc))
                .map_err(|e| format!("CustomResourceDefinition: {e}"))?;
            return Ok(Parsed {
                object: Object::Definition(Box::new(crd)),
                ignored: Vec::new(),
            });
        }
        // Any other group/version: a custom kind, looked up among the definitions when the
        // document is applied (a kind nobody serves fails that document only).
        (Some(api), Some(_)) if api.contains('/') => {
            return Ok(Parsed {
                object: Object::Custom(doc),
                ignored: Vec::new(),
            });
        }
        (other, _) => {
            return Err(format!(
                "unsupported apiVersion {other:?}: kubestore serves core/v1 (apiVersion: v1), \
                 apiextensions.k8s.io/v1 definitions and the custom kinds they define"
            ));
        }
    }
    let api = doc.remove("apiVersion");
    let kind = doc.remove("kind");
    let _ = api;
    let kind = kind.as_ref().and_then(Value::as_str).unwrap_or_default();
    stringify_maps(&mut doc);
    let value = Value::Object(doc);
    Ok(match kind {
        "Pod" => typed::<Pod>(value, Object::Pod)?,
        "ConfigMap" => typed::<ConfigMap>(value, Object::ConfigMap)?,
        "Event" => typed::<Event>(value, Object::Event)?,
        "Secret" => typed::<Secret>(value, Object::Secret)?,
        other => {
            return Err(format!(
                "unsupported kind {other:?}: kubestore serves Pod, ConfigMap, Event and Secret"
            ));
        }
    })
}

fn typed<K: Kind>(value: Value, wrap: fn(K) -> Object) -> Result<Parsed, String> {
    let obj: K = serde_json::from_value(value.clone()).map_err(|e| format!("{}: {e}", K::KIND))?;
    let back = serde_json::to_value(&obj).map_err(|e| e.to_string())?;
    let mut ignored = Vec::new();
    dropped(&value, &back, "", &mut ignored);
    Ok(Parsed {
        object: wrap(obj),
        ignored,
    })
}

/// The paths set in `input` (to something other than a default) that `output` lacks.
fn dropped(input: &Value, output: &Value, path: &str, out: &mut Vec<String>) {
    match (input, output) {
        (Value::Object(i), Value::Object(o)) => {
            for (k, v) in i {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                match o.get(k).or_else(|| o.get(&camel(k))) {
                    Some(ov) => dropped(v, ov, &p, out),
                    None if !is_default(v) => out.push(p),
                    None => {}
                }
            }
        }
        (Value::Array(i), Value::Array(o)) => {
            for (n, (iv, ov)) in i.iter().zip(o).enumerate() {
                dropped(iv, ov, &format!("{path}[{n}]"), out);
            }
        }
        _ => {}
    }
}

fn camel(snake: &str) -> String {
    let mut out = String::new();
    let mut up = false;
    for c in snake.chars() {
        if c == '_' {
            up = true;
        } else if up {
            out.extend(c.to_uppercase());
            up = false;
        } else {
            out.push(c);
        }
    }
    out
}

fn is_default(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
    }
}

/// Scalars in the maps whose values are strings become strings (`cpu: 1` -> `"1"`).
fn stringify_maps(doc: &mut Map<String, Value>) {
    fn strings(v: Option<&mut Value>) {
        if let Some(Value::Object(m)) = v {
            for (_, val) in m.iter_mut() {
                match val {
                    Value::Number(n) => *val = Value::String(n.to_string()),
                    Value::Bool(b) => *val = Value::String(b.to_string()),
                    _ => {}
                }
            }
        }
    }
    if let Some(Value::Object(meta)) = doc.get_mut("metadata") {
        strings(meta.get_mut("labels"));
        strings(meta.get_mut("annotations"));
    }
    strings(doc.get_mut("data"));
    strings(doc.get_mut("stringData"));
    if let Some(Value::Array(containers)) =
        doc.get_mut("spec").and_then(|s| s.get_mut("containers"))
    {
        for c in containers {
            if let Some(r) = c.get_mut("resources") {
                strings(r.get_mut("requests"));
                strings(r.get_mut("limits"));
            }
        }
    }
}

/// An object in Kubernetes' shape: `apiVersion`, `kind`, then its fields.
pub fn to_value<K: Kind>(obj: &K) -> Value {
    let mut doc = Map::new();
    doc.insert("apiVersion".into(), "v1".into());
    doc.insert("kind".into(), K::KIND.into());
    if let Ok(Value::Object(fields)) = serde_json::to_value(obj) {
        doc.extend(fields);
    }
    Value::Object(doc)
}

/// A list in Kubernetes' shape (`kind: List`).
pub fn list_value<K: Kind>(items: &[K], resource_version: &str) -> Value {
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "List",
        "metadata": { "resourceVersion": resource_version },
        "items": items.iter().map(to_value).collect::<Vec<_>>(),
    })
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
  labels:
    app: web
    tier: 1
spec:
  nodeName: node-1
  terminationGracePeriodSeconds: 10
  containers:
  - name: nginx
    image: nginx:1.27
    ports:
    - containerPort: 80
    livenessProbe:
      httpGet:
        path: /
    resources:
      requests:
        cpu: 1
        memory: 64Mi
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  color: blue
  replicas: 3
"#;

    #[test]
    fn kubernetes_manifests_read_as_our_messages() {
        let docs = parse(MANIFEST).expect("parses");
        assert_eq!(docs.len(), 2);
        let Object::Pod(pod) = &docs[0].object else {
            panic!("a pod")
        };
        let spec = pod.spec.clone().expect("spec");
        assert_eq!(spec.node_name, "node-1");
        assert_eq!(spec.termination_grace_period_seconds, Some(10));
        let c = &spec.containers[0];
        assert_eq!(c.resources.clone().expect("resources").requests["cpu"], "1");
        assert_eq!(pod.meta().labels["tier"], "1");
        assert_eq!(c.ports[0].container_port, 80);
        assert_eq!(docs[0].ignored, ["spec.containers[0].livenessProbe"]);
        let Object::ConfigMap(cm) = &docs[1].object else {
            panic!("a configmap")
        };
        assert_eq!(cm.data["replicas"], "3");
        assert!(docs[1].ignored.is_empty());
    }

    #[test]
    fn each_document_is_read_on_its_own() {
        let text = format!(
            "apiVersion: apps/v1beta9\nkind: Deployment\n---\napiVersion: v1\nkind: Widget\n---\n{MANIFEST}"
        );
        let docs = parse_each(&text);
        assert_eq!(docs.len(), 4);
        assert!(matches!(
            &docs[0],
            Ok(Parsed {
                object: Object::Custom(_),
                ..
            })
        ));
        let Err(e) = &docs[1] else {
            panic!("Widget is no kind of ours")
        };
        assert!(
            e.starts_with("document 2: unsupported kind \"Widget\""),
            "{e}"
        );
        assert!(matches!(
            &docs[2],
            Ok(Parsed {
                object: Object::Pod(_),
                ..
            })
        ));
        assert!(matches!(
            &docs[3],
            Ok(Parsed {
                object: Object::ConfigMap(_),
                ..
            })
        ));
        assert!(parse(&text).is_err(), "parse is all or nothing");
    }

    #[test]
    fn secrets_read_base64_data_and_string_data() {
        let docs = parse(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ntype: kubernetes.io/basic-auth\n\
             data:\n  username: YWRtaW4=\nstringData:\n  password: s3cr3t\n  port: 5432\n",
        )
        .expect("parses");
        let Object::Secret(s) = &docs[0].object else {
            panic!("a secret")
        };
        assert_eq!(s.r#type, "kubernetes.io/basic-auth");
        assert_eq!(s.data["username"], b"admin");
        assert_eq!(s.string_data["password"], "s3cr3t");
        assert_eq!(s.string_data["port"], "5432");
        let y = render(&to_value(s), "yaml").expect("yaml");
        assert!(y.contains("username: YWRtaW4="), "{y}");
    }

    #[test]
    fn other_kinds_and_versions_are_refused() {
        // Another group's kind parses as a custom object (looked up when applied).
        let docs = parse("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\n")
            .expect("a custom object");
        assert!(matches!(docs[0].object, Object::Custom(_)));
        for bad in [
            "apiVersion: v1\nkind: Service\n",
            "kind: Pod\n",
            "- a\n- b\n",
            "apiVersion: v1\nkind: Pod\nspec: 3\n",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn objects_render_in_kubernetes_shape() {
        let docs = parse(MANIFEST).expect("parses");
        let Object::ConfigMap(cm) = &docs[1].object else {
            panic!("a configmap")
        };
        let y = render(&to_value(cm), "yaml").expect("yaml");
        assert!(y.starts_with("apiVersion: v1\nkind: ConfigMap\n"), "{y}");
        let back = parse(&y).expect("round trip");
        assert_eq!(back[0].object, Object::ConfigMap(cm.clone()));
        assert!(
            render(&to_value(cm), "json")
                .expect("json")
                .contains("\"kind\": \"ConfigMap\"")
        );
    }
}
