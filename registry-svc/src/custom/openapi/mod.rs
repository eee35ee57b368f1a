//! The OpenAPI v3 schema engine of custom kinds (upstream's `apiextensions-apiserver`
//! `pkg/apiserver/schema`: structural schemas, validation, pruning, defaulting).
//!
//! A version's `openAPIV3Schema` becomes a [`Schema`] in one place, [`Schema::build`]: its
//! structural checks (`structural`), then its parsing into a tree of [`Node`]s, which compiles
//! every pattern and CEL rule and checks the defaults (`parse`). A definition's write is
//! validated by building its versions' schemas, and a served version is the schema built the
//! same way (`cache` hands the one its validation built to the watch that serves it): nothing
//! accepted can fail to serve, and each version is compiled once.
//!
//! Every write walks the tree: [`Schema::prune`] drops unknown fields and nulls that could
//! only be refused, [`Schema::default`] fills `default`s (`coerce`), [`Schema::validate`] and
//! [`Schema::validate_update`] list every violation with upstream's paths and wording
//! (`validate`), ratcheting what an update leaves unchanged, then run the CEL rules (`cel`).
//!
//! Walks are recursive and bounded: schemas nest at most `parse::MAX_NESTING` nodes, objects
//! `object::MAX_DEPTH` levels (checked when they arrive), and at most [`MAX_ERRORS`]
//! violations are collected.

mod cache;
mod cel;
mod coerce;
mod correlate;
pub mod costs;
mod listtype;
mod parse;
mod structural;
mod validate;

use std::{collections::BTreeMap, sync::Arc};

use serde_json::Value;

pub use parse::{MAX_NESTING, MAX_SCHEMA_PATTERN_BYTES};
pub use structural::validate_structural;

/// Problems or violations, each a path and its description.
pub type Problems = Vec<(String, String)>;

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
    pub rules: Vec<Arc<crate::custom::rules::Rule>>,
    /// Which rules this node and the nodes below it hold (walks skip subtrees without).
    pub rules_below: RulesBelow,
}

/// Which CEL rules a node and its descendants hold.
#[derive(Debug, Clone, Copy, Default)]
pub struct RulesBelow {
    /// Any rule.
    pub any: bool,
    /// A transition rule (one that reads `oldSelf`).
    pub transition: bool,
}

/// A parsed, structural schema of one version.
#[derive(Debug, Clone)]
pub struct Schema {
    /// The root (`type: object`).
    pub root: Node,
    defaults: bool,
    rules: bool,
    fingerprint: u64,
}

#[cfg(test)]
thread_local! {
    /// Schemas parsed by this thread (tests count them: a definition version is compiled once).
    pub(crate) static PARSED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

impl Schema {
    /// The schema of a version (`status`: it has the status subresource), or every problem
    /// with its path (relative to `openAPIV3Schema`). The one way definitions are validated
    /// and versions served: a schema built lately from the same JSON is reused (`cache`).
    pub fn build(json: &Value, status: bool) -> Result<Arc<Self>, Vec<(String, String)>> {
        let hash = cache::hash(json);
        if let Some(schema) = cache::get(hash, status, json) {
            return Ok(schema);
        }
        let schema = Arc::new(Self::parse_with(json, status, hash)?);
        cache::put(hash, status, json.clone(), schema.clone());
        Ok(schema)
    }

    /// [`Self::build`] without the status subresource and without the cache.
    pub fn parse(json: &Value) -> Result<Self, Vec<(String, String)>> {
        Self::parse_with(json, false, cache::hash(json))
    }

    fn parse_with(json: &Value, status: bool, hash: u64) -> Result<Self, Vec<(String, String)>> {
        #[cfg(test)]
        PARSED.with(|n| n.set(n.get() + 1));
        let mut problems = validate_structural(json, status);
        let mut p = parse::Parse::default();
        let root = parse::node(json, "", &mut p, 0);
        problems.append(&mut p.problems);
        if problems.is_empty() {
            parse::defaults(&root, "", &mut problems);
        }
        if !problems.is_empty() {
            problems.sort_by(|a, b| a.1.cmp(&b.1).then(a.0.cmp(&b.0)));
            return Err(problems);
        }
        let defaults = has_defaults(&root);
        let rules = has_rules(&root);
        Ok(Self {
            root,
            defaults,
            rules,
            // 0 marks objects of unknown schema.
            fingerprint: hash.max(1),
        })
    }

    /// A fingerprint of the schema's JSON (order of keys aside): objects record the schema
    /// they were pruned and defaulted by (`object::CustomObject::schema`).
    pub fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    /// `content`, read from an object last pruned and defaulted by the schema `fingerprint`,
    /// as this schema serves it: pruned and defaulted, unless it already was by this schema.
    pub fn read(&self, fingerprint: u64, content: &mut serde_json::Map<String, Value>) {
        if fingerprint != self.fingerprint {
            self.normalize_map(content);
        }
    }

    /// Every violation of `object` (the whole object, metadata included), with upstream's paths
    /// and wording.
    pub fn validate(&self, object: &Value) -> Vec<(String, String)> {
        self.validate_update(object, None)
    }

    /// [`Self::validate`] for an update from `old`, with upstream's validation ratcheting
    /// (`RatchetingSchemaValidator`, on by default since 1.30): violations of values the
    /// update leaves as they were are not errors, so that an object written under an older
    /// schema can still have its metadata (finalizers, labels, owners) changed. Transition
    /// rules (`oldSelf`) run, on the old value correlated with each new one.
    pub fn validate_update(&self, object: &Value, old: Option<&Value>) -> Vec<(String, String)> {
        let mut errors = self.validate_schema(object, old);
        // List sets and maps: upstream checks them apart, and on update only when the old
        // object had no duplicates (`ValidateListSetsAndMaps`).
        if old.is_none_or(|o| listtype::duplicates_of(&self.root, o).is_empty()) {
            errors.extend(listtype::duplicates_of(&self.root, object));
        }
        // CEL rules run on a value the schema accepted (upstream's order), sharing one budget.
        if errors.is_empty() {
            let mut budget = crate::custom::rules::Budget::default();
            cel::root(&self.root, object, old, &mut errors, &mut budget);
        }
        errors.truncate(MAX_ERRORS);
        errors
    }

    fn validate_schema(&self, object: &Value, old: Option<&Value>) -> Vec<(String, String)> {
        let mut errors = Vec::new();
        let Value::Object(m) = object else {
            return errors;
        };
        // The root's apiVersion, kind and metadata are the API's, not the schema's (only
        // metadata.name/generateName may be restricted, see `structural`).
        let body = |m: &serde_json::Map<String, Value>| {
            let mut body = m.clone();
            body.remove("apiVersion");
            body.remove("kind");
            body.remove("metadata");
            Value::Object(body)
        };
        let old_body = old.map(|o| match o {
            Value::Object(o) => body(o),
            other => other.clone(),
        });
        // The root is unchanged only if the whole object is (metadata included, as upstream
        // compares the whole object): its own violations ratchet only then.
        let root_unchanged = old.is_some_and(|o| correlate::equal(&self.root, o, object));
        validate::root(
            &self.root,
            &body(m),
            old_body.as_ref(),
            root_unchanged,
            &mut errors,
        );
        // Metadata is never ratcheted.
        if let (Some(meta_schema), Some(Value::Object(meta))) =
            (self.root.properties.get("metadata"), m.get("metadata"))
        {
            for field in ["name", "generateName"] {
                if let (Some(s), Some(v)) = (meta_schema.properties.get(field), meta.get(field)) {
                    validate::value(s, v, None, &format!("metadata.{field}"), &mut errors);
                }
            }
        }
        errors.truncate(MAX_ERRORS);
        errors
    }

    /// Drops the fields the schema does not know (upstream's structural pruning), then the
    /// nulls it could only refuse (non-nullable, without a default); the root's apiVersion,
    /// kind and metadata stay.
    pub fn prune(&self, object: &mut Value) {
        if let Value::Object(m) = object {
            coerce::prune_object(&self.root, m, true);
        }
        coerce::prune_nulls(&self.root, object);
    }

    /// [`Self::prune`], then [`Self::default`]: what upstream does to every object it decodes,
    /// from a request or from storage.
    pub fn normalize(&self, object: &mut Value) {
        self.prune(object);
        self.default(object);
    }

    /// [`Self::normalize`] on an object's fields (`content`: the object without its
    /// metadata, or with it).
    pub fn normalize_map(&self, content: &mut serde_json::Map<String, Value>) {
        let mut v = Value::Object(std::mem::take(content));
        self.normalize(&mut v);
        if let Value::Object(m) = v {
            *content = m;
        }
    }

    /// Applies the schema's `default`s (upstream's structural defaulting).
    pub fn default(&self, object: &mut Value) {
        if self.defaults {
            coerce::default(&self.root, object);
        }
    }

    /// Whether any node has a `default`.
    pub fn has_defaults(&self) -> bool {
        self.defaults
    }

    /// Whether any node has `x-kubernetes-validations` (their evaluation is offloaded).
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

fn has_defaults(n: &Node) -> bool {
    n.default.is_some()
        || n.properties.values().any(has_defaults)
        || n.items.as_deref().is_some_and(has_defaults)
        || matches!(&n.additional, Some(Additional::Schema(s)) if has_defaults(s))
}

/// One node parsed on its own (not a resource's root: no structural checks of a root), its
/// patterns and rules compiled; the problems otherwise. For the CEL cost model's tests.
#[cfg(test)]
pub(crate) fn parse_node(json: &Value) -> Result<Node, Vec<(String, String)>> {
    let mut p = parse::Parse::default();
    let node = parse::node(json, "", &mut p, 0);
    if p.problems.is_empty() {
        Ok(node)
    } else {
        Err(p.problems)
    }
}

fn has_rules(n: &Node) -> bool {
    !n.rules.is_empty()
        || n.properties.values().any(has_rules)
        || n.items.as_deref().is_some_and(has_rules)
        || matches!(&n.additional, Some(Additional::Schema(s)) if has_rules(s))
        || n.all_of
            .iter()
            .chain(&n.any_of)
            .chain(&n.one_of)
            .any(has_rules)
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod update_tests;
