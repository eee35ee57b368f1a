//! The OpenAPI v3 schema engine of custom kinds (upstream's `apiextensions-apiserver`
//! `pkg/apiserver/schema`: structural schemas, validation, pruning, defaulting).
//!
//! A version's `openAPIV3Schema` is checked once, when its definition is written
//! ([`validate_structural`], `structural`), then parsed once per served version into a
//! [`Schema`], a tree of [`Node`]s that every write walks: [`Schema::prune`] drops unknown
//! fields, [`Schema::default`] fills `default`s, [`Schema::validate`] lists every violation
//! with upstream's paths and wording (`validate`).
//!
//! Walks are recursive and bounded: objects nest at most `object::MAX_DEPTH` levels (checked
//! when they arrive), and at most [`MAX_ERRORS`] violations are collected.

mod structural;
mod validate;

use std::collections::BTreeMap;

use serde_json::{Map, Value};

pub use structural::validate_structural;

/// Violations collected per object, at most.
pub const MAX_ERRORS: usize = 100;

/// `additionalProperties`: a schema for every value of a map, or whether other keys are allowed.
#[derive(Debug, Clone)]
pub enum Additional {
    /// Every value follows this schema.
    Schema(Box<Node>),
    /// `false`: no other keys (`true` is the same as absent).
    Forbidden,
}

/// One node of a parsed schema.
#[derive(Debug, Clone, Default)]
pub struct Node {
    /// `type`, "" when unset.
    pub ty: String,
    /// `nullable`.
    pub nullable: bool,
    /// `format`.
    pub format: String,
    /// `properties`.
    pub properties: BTreeMap<String, Node>,
    /// `required`.
    pub required: Vec<String>,
    /// `additionalProperties`.
    pub additional: Option<Additional>,
    /// `items`.
    pub items: Option<Box<Node>>,
    /// `enum`.
    pub enumeration: Option<Vec<Value>>,
    /// `pattern`, compiled.
    pub pattern: Option<(String, regex::Regex)>,
    /// `minimum`, and whether it is exclusive.
    pub minimum: Option<(f64, bool)>,
    /// `maximum`, and whether it is exclusive.
    pub maximum: Option<(f64, bool)>,
    /// `multipleOf`.
    pub multiple_of: Option<f64>,
    /// `minLength`, `maxLength` (characters).
    pub min_length: Option<u64>,
    /// See `min_length`.
    pub max_length: Option<u64>,
    /// `minItems`, `maxItems`.
    pub min_items: Option<u64>,
    /// See `min_items`.
    pub max_items: Option<u64>,
    /// `minProperties`, `maxProperties`.
    pub min_properties: Option<u64>,
    /// See `min_properties`.
    pub max_properties: Option<u64>,
    /// `uniqueItems` (refused by structural validation, kept for completeness).
    pub unique_items: bool,
    /// `default`.
    pub default: Option<Value>,
    /// `x-kubernetes-preserve-unknown-fields`.
    pub preserve_unknown: bool,
    /// `x-kubernetes-int-or-string`.
    pub int_or_string: bool,
    /// `x-kubernetes-embedded-resource`.
    pub embedded: bool,
    /// `x-kubernetes-list-type` (`atomic`, `set`, `map`).
    pub list_type: String,
    /// `x-kubernetes-list-map-keys`.
    pub list_map_keys: Vec<String>,
    /// `allOf`, `anyOf`, `oneOf`, `not`: value validations.
    pub all_of: Vec<Node>,
    /// See `all_of`.
    pub any_of: Vec<Node>,
    /// See `all_of`.
    pub one_of: Vec<Node>,
    /// See `all_of`.
    pub not: Option<Box<Node>>,
    /// `x-kubernetes-validations`, compiled (`custom::rules`).
    pub rules: Vec<std::sync::Arc<crate::custom::rules::Rule>>,
}

/// A parsed, structural schema of one version.
#[derive(Debug, Clone)]
pub struct Schema {
    /// The root (`type: object`).
    pub root: Node,
    defaults: bool,
    rules: bool,
}

impl Schema {
    /// Parses a schema that passed [`validate_structural`]; the problems otherwise.
    pub fn parse(schema: &Value) -> Result<Self, Vec<(String, String)>> {
        let problems = validate_structural(schema, false);
        if !problems.is_empty() {
            return Err(problems);
        }
        let root = Node::parse(schema).map_err(|e| vec![(String::new(), e)])?;
        let defaults = root.has_defaults();
        let rules = root.has_rules();
        Ok(Self {
            root,
            defaults,
            rules,
        })
    }

    /// Every violation of `object` (the whole object, metadata included), with upstream's paths
    /// and wording.
    pub fn validate(&self, object: &Value) -> Vec<(String, String)> {
        self.validate_update(object, None)
    }

    /// [`Self::validate`] for an update from `old`: transition rules (`oldSelf`) run too.
    pub fn validate_update(&self, object: &Value, old: Option<&Value>) -> Vec<(String, String)> {
        let mut errors = self.validate_schema(object);
        // CEL rules run on a value the schema accepted (upstream's order), sharing one budget.
        if errors.is_empty() {
            let mut budget = crate::custom::rules::Budget::default();
            validate::rules(&self.root, object, old, "", &mut errors, &mut budget);
        }
        errors.truncate(MAX_ERRORS);
        errors
    }

    fn validate_schema(&self, object: &Value) -> Vec<(String, String)> {
        let mut errors = Vec::new();
        if let Value::Object(m) = object {
            // The root's apiVersion, kind and metadata are the API's, not the schema's (only
            // metadata.name/generateName may be restricted, see `structural`).
            let mut body = m.clone();
            body.remove("apiVersion");
            body.remove("kind");
            let meta = body.remove("metadata");
            validate::object(&self.root, &Value::Object(body), "", &mut errors, true);
            if let (Some(meta_schema), Some(Value::Object(meta))) =
                (self.root.properties.get("metadata"), meta)
            {
                for field in ["name", "generateName"] {
                    if let (Some(s), Some(v)) = (meta_schema.properties.get(field), meta.get(field))
                    {
                        validate::value(s, v, &format!("metadata.{field}"), &mut errors);
                    }
                }
            }
        }
        errors.truncate(MAX_ERRORS);
        errors
    }

    /// Drops the fields the schema does not know (upstream's structural pruning); the root's
    /// apiVersion, kind and metadata stay.
    pub fn prune(&self, object: &mut Value) {
        if let Value::Object(m) = object {
            prune_object(&self.root, m, true);
        }
    }

    /// Applies the schema's `default`s (upstream's structural defaulting).
    pub fn default(&self, object: &mut Value) {
        if self.defaults {
            default_value(&self.root, object);
        }
    }

    /// Whether any node has a `default`.
    pub fn has_defaults(&self) -> bool {
        self.defaults
    }

    /// Whether any node has `x-kubernetes-validations`.
    pub fn has_rules(&self) -> bool {
        self.rules
    }

    /// The schema node a simple JSONPath (`.spec.replicas`) names, if any.
    pub fn node(&self, json_path: &str) -> Option<&Node> {
        let mut node = &self.root;
        for step in json_path.trim_start_matches('.').split('.') {
            if step.is_empty() {
                return None;
            }
            node = node.properties.get(step)?;
        }
        Some(node)
    }
}

impl Node {
    /// Parses one node (and its children).
    pub fn parse(v: &Value) -> Result<Self, String> {
        let Value::Object(m) = v else {
            return Err("a schema must be an object".into());
        };
        let s = |k: &str| m.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let b = |k: &str| m.get(k).and_then(Value::as_bool).unwrap_or(false);
        let f = |k: &str| m.get(k).and_then(Value::as_f64);
        let u = |k: &str| m.get(k).and_then(Value::as_f64).map(|n| n.max(0.0) as u64);
        let list = |k: &str| -> Result<Vec<Node>, String> {
            match m.get(k) {
                Some(Value::Array(a)) => a.iter().map(Node::parse).collect(),
                _ => Ok(Vec::new()),
            }
        };
        let mut properties = BTreeMap::new();
        if let Some(Value::Object(p)) = m.get("properties") {
            for (k, v) in p {
                properties.insert(k.clone(), Node::parse(v)?);
            }
        }
        let additional = match m.get("additionalProperties") {
            Some(Value::Bool(false)) => Some(Additional::Forbidden),
            Some(v @ Value::Object(_)) => Some(Additional::Schema(Box::new(Node::parse(v)?))),
            _ => None,
        };
        let pattern = match m.get("pattern").and_then(Value::as_str) {
            Some(p) => Some((
                p.to_string(),
                regex::Regex::new(p).map_err(|e| format!("pattern {p:?} does not compile: {e}"))?,
            )),
            None => None,
        };
        Ok(Self {
            ty: s("type"),
            nullable: b("nullable"),
            format: s("format"),
            properties,
            required: match m.get("required") {
                Some(Value::Array(a)) => a
                    .iter()
                    .filter_map(Value::as_str)
                    .map(String::from)
                    .collect(),
                _ => Vec::new(),
            },
            additional,
            items: match m.get("items") {
                Some(v @ Value::Object(_)) => Some(Box::new(Node::parse(v)?)),
                _ => None,
            },
            enumeration: m.get("enum").and_then(Value::as_array).cloned(),
            pattern,
            minimum: f("minimum").map(|n| (n, b("exclusiveMinimum"))),
            maximum: f("maximum").map(|n| (n, b("exclusiveMaximum"))),
            multiple_of: f("multipleOf"),
            min_length: u("minLength"),
            max_length: u("maxLength"),
            min_items: u("minItems"),
            max_items: u("maxItems"),
            min_properties: u("minProperties"),
            max_properties: u("maxProperties"),
            unique_items: b("uniqueItems"),
            default: m.get("default").cloned(),
            preserve_unknown: b("x-kubernetes-preserve-unknown-fields"),
            int_or_string: b("x-kubernetes-int-or-string"),
            embedded: b("x-kubernetes-embedded-resource"),
            list_type: s("x-kubernetes-list-type"),
            list_map_keys: match m.get("x-kubernetes-list-map-keys") {
                Some(Value::Array(a)) => a
                    .iter()
                    .filter_map(Value::as_str)
                    .map(String::from)
                    .collect(),
                _ => Vec::new(),
            },
            all_of: list("allOf")?,
            any_of: list("anyOf")?,
            one_of: list("oneOf")?,
            not: match m.get("not") {
                Some(v @ Value::Object(_)) => Some(Box::new(Node::parse(v)?)),
                _ => None,
            },
            rules: match m.get("x-kubernetes-validations") {
                Some(Value::Array(a)) => crate::custom::rules::compile(a).map_err(|p| {
                    p.into_iter()
                        .map(|(i, f, e)| format!("x-kubernetes-validations[{i}].{f}: {e}"))
                        .collect::<Vec<_>>()
                        .join("; ")
                })?,
                _ => Vec::new(),
            },
        })
    }

    fn has_rules(&self) -> bool {
        !self.rules.is_empty()
            || self.properties.values().any(Node::has_rules)
            || self.items.as_ref().is_some_and(|i| i.has_rules())
            || matches!(&self.additional, Some(Additional::Schema(s)) if s.has_rules())
    }

    fn has_defaults(&self) -> bool {
        self.default.is_some()
            || self.properties.values().any(Node::has_defaults)
            || self.items.as_ref().is_some_and(|i| i.has_defaults())
            || matches!(&self.additional, Some(Additional::Schema(s)) if s.has_defaults())
    }
}

/// Prunes `m` by `node` (`root`: keep apiVersion, kind, metadata).
fn prune_object(node: &Node, m: &mut Map<String, Value>, root: bool) {
    let keep_unknown = node.preserve_unknown;
    let embedded = root || node.embedded;
    let additional = match &node.additional {
        Some(Additional::Schema(s)) => Some(s.as_ref()),
        _ => None,
    };
    m.retain(|k, v| {
        // A resource's apiVersion, kind and metadata are the API's, whatever the schema says of
        // them: generated schemas (kubebuilder's) declare `metadata: {type: object}` with no
        // properties, and pruning by it would drop the object's name. Upstream skips them too
        // (`pruning.prune` on an embedded resource; ObjectMeta has its own coercion).
        if embedded && (k == "apiVersion" || k == "kind" || k == "metadata") {
            return true;
        }
        if let Some(child) = node.properties.get(k) {
            prune_value(child, v);
            return true;
        }
        if let Some(s) = additional {
            prune_value(s, v);
            return true;
        }
        keep_unknown
    });
}

pub(super) fn prune_value(node: &Node, v: &mut Value) {
    match v {
        Value::Object(m) => {
            if node.int_or_string {
                return;
            }
            prune_object(node, m, false)
        }
        Value::Array(items) => {
            if let Some(item) = &node.items {
                for i in items {
                    prune_value(item, i);
                }
            }
        }
        _ => {}
    }
}

/// Fills defaults below `v` (whose own default, if absent, its parent filled).
fn default_value(node: &Node, v: &mut Value) {
    match v {
        Value::Object(m) => {
            for (k, child) in &node.properties {
                match (m.get(k), &child.default) {
                    (None, Some(d)) => {
                        m.insert(k.clone(), d.clone());
                    }
                    (Some(Value::Null), Some(d)) if !child.nullable => {
                        m.insert(k.clone(), d.clone());
                    }
                    _ => {}
                }
                if let Some(c) = m.get_mut(k) {
                    default_value(child, c);
                }
            }
            if let Some(Additional::Schema(s)) = &node.additional {
                for (k, c) in m.iter_mut() {
                    if !node.properties.contains_key(k) {
                        default_value(s, c);
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(item) = &node.items {
                for i in items {
                    if i.is_null()
                        && !item.nullable
                        && let Some(d) = &item.default
                    {
                        *i = d.clone();
                    }
                    default_value(item, i);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests;
