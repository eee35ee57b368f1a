//! The schema model merging needs (upstream's `schema` package): what each node of an object
//! is (scalar, map, list), and, for maps and lists, how their elements relate: whether a map's
//! fields, or a list's items, can be owned one by one (granular, associative) or only as a
//! whole (atomic).
//!
//! An [`Atom`] may allow several kinds at once (upstream's `Atom` with more than one member
//! set): the value's own shape then picks (`__untyped_deduced_`, or an OpenAPI schema without a
//! `type`). Types are referred to by name ([`TypeRef::Named`]) so that recursive schemas (a
//! `JSONSchemaProps`) are finite; [`Schema`] holds the named types.
//!
//! Two constructors: [`Schema::from_openapi`] from OpenAPI v3 `components.schemas` (what the
//! registry serves, with kube-openapi's `schemaconv` rules), and [`Schema::from_smd`] from
//! upstream's own schema format (its `types:` YAML, which its tests are written in).

use std::{
    collections::{BTreeMap, HashMap},
    sync::Arc,
};

use serde_json::{Map, Value};
use thiserror::Error;

/// The name of the type that deduces what a value is from the value: maps are granular (their
/// fields owned one by one, of the same deduced type), lists atomic, scalars untyped.
pub const DEDUCED: &str = "__untyped_deduced_";
/// The name of the type that is anything, owned as a whole.
pub const UNTYPED_ATOMIC: &str = "__untyped_atomic_";

/// Scalar kinds; `Untyped` takes any scalar.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScalarKind {
    /// An integer or a float.
    Numeric,
    /// A string.
    String,
    /// A boolean.
    Boolean,
    /// Any scalar.
    Untyped,
}

/// How a map's fields or a list's items relate to the whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ElementRelationship {
    /// Owned one by one (a map's default; `x-kubernetes-map-type: granular`).
    #[default]
    Separable,
    /// Owned as a whole (`x-kubernetes-map-type: atomic`, `x-kubernetes-list-type: atomic`,
    /// and lists without a list type).
    Atomic,
    /// A list whose items are owned one by one, named by their keys (`map`) or values (`set`).
    Associative,
}

/// A named field of a map.
#[derive(Clone, Debug)]
pub struct StructField {
    /// The field's type.
    pub type_ref: TypeRef,
    /// The field's default, used for an associative list item that omits a key field.
    pub default: Option<Value>,
}

/// A map (an object with declared fields, a map of values, or both).
#[derive(Clone, Debug, Default)]
pub struct MapType {
    /// The declared fields, by name.
    pub fields: BTreeMap<String, StructField>,
    /// The type of fields not declared (`additionalProperties`, preserved unknown fields);
    /// `None`: undeclared fields are invalid.
    pub element_type: Option<TypeRef>,
    /// Whether the fields are owned one by one (separable) or as a whole (atomic).
    pub relationship: ElementRelationship,
}

/// A list.
#[derive(Clone, Debug)]
pub struct ListType {
    /// The items' type.
    pub element_type: TypeRef,
    /// Atomic (owned as a whole) or associative (item by item).
    pub relationship: ElementRelationship,
    /// An associative list's key fields (`x-kubernetes-list-map-keys`); empty for a set.
    pub keys: Vec<String>,
}

/// What a node may be. More than one member: the value's shape picks.
#[derive(Clone, Debug, Default)]
pub struct Atom {
    /// What a scalar value is.
    pub scalar: Option<ScalarKind>,
    /// What a list value is.
    pub list: Option<ListType>,
    /// What a map value is.
    pub map: Option<MapType>,
}

/// A reference to a type: by name (with an optional override of its element relationship, as
/// a `$ref` with `x-kubernetes-map-type` beside it gives), or inline.
#[derive(Clone, Debug)]
pub enum TypeRef {
    /// A named type of the [`Schema`].
    Named {
        /// The type's name.
        name: String,
        /// Overrides the named map's (or list's) element relationship.
        relationship: Option<ElementRelationship>,
    },
    /// A type written in place.
    Inline(Arc<Atom>),
}

impl TypeRef {
    /// A reference to the named type.
    pub fn named(name: impl Into<String>) -> Self {
        TypeRef::Named {
            name: name.into(),
            relationship: None,
        }
    }

    /// The deduced type ([`DEDUCED`]).
    pub fn deduced() -> Self {
        TypeRef::named(DEDUCED)
    }

    /// The atomic untyped type ([`UNTYPED_ATOMIC`]).
    pub fn untyped_atomic() -> Self {
        TypeRef::named(UNTYPED_ATOMIC)
    }

    /// An inline scalar.
    pub fn scalar(kind: ScalarKind) -> Self {
        TypeRef::Inline(Arc::new(Atom {
            scalar: Some(kind),
            ..Atom::default()
        }))
    }

    /// An inline map.
    pub fn map(map: MapType) -> Self {
        TypeRef::Inline(Arc::new(Atom {
            map: Some(map),
            ..Atom::default()
        }))
    }

    /// An inline list.
    pub fn list(list: ListType) -> Self {
        TypeRef::Inline(Arc::new(Atom {
            list: Some(list),
            ..Atom::default()
        }))
    }

    /// An inline atom.
    pub fn inline(atom: Atom) -> Self {
        TypeRef::Inline(Arc::new(atom))
    }

    /// A printable name, for errors.
    pub fn describe(&self) -> String {
        match self {
            TypeRef::Named { name, .. } => name.clone(),
            TypeRef::Inline(_) => "inlined type".into(),
        }
    }
}

impl MapType {
    /// A granular map of the given fields.
    pub fn with_fields<S: Into<String>>(fields: impl IntoIterator<Item = (S, TypeRef)>) -> Self {
        MapType {
            fields: fields
                .into_iter()
                .map(|(n, t)| {
                    (
                        n.into(),
                        StructField {
                            type_ref: t,
                            default: None,
                        },
                    )
                })
                .collect(),
            element_type: None,
            relationship: ElementRelationship::Separable,
        }
    }

    /// A granular map whose values are all of `element`.
    pub fn of(element: TypeRef) -> Self {
        MapType {
            fields: BTreeMap::new(),
            element_type: Some(element),
            relationship: ElementRelationship::Separable,
        }
    }

    /// This map, owned as a whole.
    pub fn atomic(mut self) -> Self {
        self.relationship = ElementRelationship::Atomic;
        self
    }
}

impl ListType {
    /// A list owned as a whole.
    pub fn atomic(element: TypeRef) -> Self {
        ListType {
            element_type: element,
            relationship: ElementRelationship::Atomic,
            keys: Vec::new(),
        }
    }

    /// A set: scalar items, each owned on its own.
    pub fn set(element: TypeRef) -> Self {
        ListType {
            element_type: element,
            relationship: ElementRelationship::Associative,
            keys: Vec::new(),
        }
    }

    /// An associative list keyed by `keys`.
    pub fn associative<S: Into<String>>(
        element: TypeRef,
        keys: impl IntoIterator<Item = S>,
    ) -> Self {
        ListType {
            element_type: element,
            relationship: ElementRelationship::Associative,
            keys: keys.into_iter().map(Into::into).collect(),
        }
    }
}

/// Named types. Always holds [`DEDUCED`] and [`UNTYPED_ATOMIC`].
#[derive(Clone, Debug)]
pub struct Schema {
    types: HashMap<String, Arc<Atom>>,
}

impl Default for Schema {
    fn default() -> Self {
        Schema::new()
    }
}

/// Why a schema could not be built.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{}", .0.join("\n"))]
pub struct SchemaError(pub Vec<String>);

impl Schema {
    /// A schema of only the two built-in untyped types.
    pub fn new() -> Self {
        let mut types = HashMap::new();
        types.insert(
            UNTYPED_ATOMIC.to_string(),
            Arc::new(Atom {
                scalar: Some(ScalarKind::Untyped),
                list: Some(ListType::atomic(TypeRef::untyped_atomic())),
                map: Some(MapType::of(TypeRef::untyped_atomic()).atomic()),
            }),
        );
        types.insert(
            DEDUCED.to_string(),
            Arc::new(Atom {
                scalar: Some(ScalarKind::Untyped),
                list: Some(ListType::atomic(TypeRef::untyped_atomic())),
                map: Some(MapType::of(TypeRef::deduced())),
            }),
        );
        Schema { types }
    }

    /// Adds (or replaces) a named type.
    pub fn insert(&mut self, name: impl Into<String>, atom: Atom) {
        self.types.insert(name.into(), Arc::new(atom));
    }

    /// The named type, as declared.
    pub fn get(&self, name: &str) -> Option<&Arc<Atom>> {
        self.types.get(name)
    }

    /// Upstream's `Schema.Resolve`: the atom a reference names, with its relationship override
    /// applied to its map (or, lacking one, its list). `None` when the name is unknown, or an
    /// override names a scalar.
    pub fn resolve(&self, tr: &TypeRef) -> Option<Arc<Atom>> {
        match tr {
            TypeRef::Inline(a) => Some(a.clone()),
            TypeRef::Named { name, relationship } => {
                let atom = self.types.get(name)?;
                let Some(rel) = relationship else {
                    return Some(atom.clone());
                };
                let mut a = Atom::clone(atom);
                if let Some(m) = a.map.as_mut() {
                    m.relationship = *rel;
                } else if let Some(l) = a.list.as_mut() {
                    l.relationship = *rel;
                } else {
                    return None;
                }
                Some(Arc::new(a))
            }
        }
    }

    /// A schema from OpenAPI v3 `components.schemas` (name to schema), converted as
    /// kube-openapi's `schemaconv.ToSchemaFromOpenAPI` does: `$ref` (alone or as the only
    /// `allOf`) refers to the named type (its last path segment); `x-kubernetes-list-type`
    /// (`atomic`, `set`, `map` with `x-kubernetes-list-map-keys`), falling back to
    /// `x-kubernetes-patch-strategy`/`x-kubernetes-patch-merge-key`, and lists without either
    /// atomic; `x-kubernetes-map-type`; `additionalProperties`;
    /// `x-kubernetes-preserve-unknown-fields` (undeclared fields are deduced); a schema without
    /// `type` may be any kind. Quantity is an untyped scalar, RawExtension untyped atomic.
    pub fn from_openapi(schemas: &Map<String, Value>) -> Result<Schema, SchemaError> {
        let mut out = Schema::new();
        let mut c = OpenApi { errors: Vec::new() };
        for (name, spec) in schemas {
            if spec.get("$ref").is_some() {
                continue;
            }
            let atom = if name == QUANTITY {
                Atom {
                    scalar: Some(ScalarKind::Untyped),
                    ..Atom::default()
                }
            } else if name == RAW_EXTENSION {
                out.types
                    .get(UNTYPED_ATOMIC)
                    .map(|a| Atom::clone(a))
                    .unwrap_or_default()
            } else {
                c.visit(spec, false, name)
            };
            out.insert(name.clone(), atom);
        }
        if c.errors.is_empty() {
            Ok(out)
        } else {
            Err(SchemaError(c.errors))
        }
    }

    /// A type reference for a standalone OpenAPI v3 schema (a definition's `openAPIV3Schema`),
    /// its `$ref`s resolved against this schema's named types.
    pub fn openapi_type_ref(&self, spec: &Value) -> Result<TypeRef, SchemaError> {
        let mut c = OpenApi { errors: Vec::new() };
        let tr = c.type_ref(spec, false, "root");
        if c.errors.is_empty() {
            Ok(tr)
        } else {
            Err(SchemaError(c.errors))
        }
    }

    /// A schema in upstream's own format (`{"types": [{"name": ..., "map"|"list"|"scalar": ...}]}`,
    /// its `schema.Schema` as YAML/JSON).
    pub fn from_smd(doc: &Value) -> Result<Schema, SchemaError> {
        let mut out = Schema::new();
        let mut errors = Vec::new();
        let types = doc.get("types").and_then(Value::as_array);
        for t in types.into_iter().flatten() {
            let Some(name) = t.get("name").and_then(Value::as_str) else {
                errors.push(format!("type without a name: {t}"));
                continue;
            };
            let atom = smd_atom(t, &mut errors);
            out.insert(name, atom);
        }
        if errors.is_empty() {
            Ok(out)
        } else {
            Err(SchemaError(errors))
        }
    }
}

const QUANTITY: &str = "io.k8s.apimachinery.pkg.api.resource.Quantity";
const RAW_EXTENSION: &str = "io.k8s.apimachinery.pkg.runtime.RawExtension";

fn relationship(s: Option<&str>, errors: &mut Vec<String>) -> Option<ElementRelationship> {
    match s? {
        "atomic" => Some(ElementRelationship::Atomic),
        "separable" => Some(ElementRelationship::Separable),
        "associative" => Some(ElementRelationship::Associative),
        other => {
            errors.push(format!("unknown element relationship {other:?}"));
            None
        }
    }
}

fn smd_scalar(s: &str, errors: &mut Vec<String>) -> ScalarKind {
    match s {
        "numeric" => ScalarKind::Numeric,
        "string" => ScalarKind::String,
        "boolean" => ScalarKind::Boolean,
        "untyped" => ScalarKind::Untyped,
        other => {
            errors.push(format!("unknown scalar type {other:?}"));
            ScalarKind::Untyped
        }
    }
}

fn smd_atom(v: &Value, errors: &mut Vec<String>) -> Atom {
    let mut atom = Atom::default();
    if let Some(s) = v.get("scalar").and_then(Value::as_str) {
        atom.scalar = Some(smd_scalar(s, errors));
    }
    if let Some(l) = v.get("list") {
        atom.list = Some(ListType {
            element_type: l
                .get("elementType")
                .map(|t| smd_type_ref(t, errors))
                .unwrap_or_else(|| TypeRef::inline(Atom::default())),
            relationship: relationship(
                l.get("elementRelationship").and_then(Value::as_str),
                errors,
            )
            .unwrap_or(ElementRelationship::Atomic),
            keys: l
                .get("keys")
                .and_then(Value::as_array)
                .map(|ks| {
                    ks.iter()
                        .filter_map(|k| k.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default(),
        });
    }
    if let Some(m) = v.get("map") {
        let mut fields = BTreeMap::new();
        for f in m
            .get("fields")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let Some(name) = f.get("name").and_then(Value::as_str) else {
                errors.push(format!("field without a name: {f}"));
                continue;
            };
            fields.insert(
                name.to_string(),
                StructField {
                    type_ref: f
                        .get("type")
                        .map(|t| smd_type_ref(t, errors))
                        .unwrap_or_else(|| TypeRef::inline(Atom::default())),
                    default: f.get("default").cloned(),
                },
            );
        }
        atom.map = Some(MapType {
            fields,
            element_type: m.get("elementType").map(|t| smd_type_ref(t, errors)),
            relationship: relationship(
                m.get("elementRelationship").and_then(Value::as_str),
                errors,
            )
            .unwrap_or_default(),
        });
    }
    atom
}

fn smd_type_ref(v: &Value, errors: &mut Vec<String>) -> TypeRef {
    if let Some(name) = v.get("namedType").and_then(Value::as_str) {
        return TypeRef::Named {
            name: name.to_string(),
            relationship: relationship(
                v.get("elementRelationship").and_then(Value::as_str),
                errors,
            ),
        };
    }
    TypeRef::inline(smd_atom(v, errors))
}

/// kube-openapi's `schemaconv` conversion state: the errors so far.
struct OpenApi {
    errors: Vec<String>,
}

fn ext_true(spec: &Value, name: &str) -> bool {
    spec.get(name).and_then(Value::as_bool) == Some(true)
}

impl OpenApi {
    /// A named (top-level) schema's atom. `preserve` is inherited from the enclosing schema.
    fn visit(&mut self, spec: &Value, preserve: bool, at: &str) -> Atom {
        let preserve = preserve || ext_true(spec, "x-kubernetes-preserve-unknown-fields");
        self.parse(spec, preserve, at)
    }

    fn parse(&mut self, spec: &Value, preserve: bool, at: &str) -> Atom {
        let typ = match spec.get("type") {
            Some(Value::String(s)) => s.as_str(),
            Some(Value::Array(a)) => a.first().and_then(Value::as_str).unwrap_or(""),
            _ => "",
        };
        match typ {
            "" => Atom {
                scalar: Some(ScalarKind::Untyped),
                list: Some(self.list(spec, preserve, at)),
                map: Some(self.object(spec, preserve, at)),
            },
            "object" => Atom {
                map: Some(self.object(spec, preserve, at)),
                ..Atom::default()
            },
            "array" => Atom {
                list: Some(self.list(spec, preserve, at)),
                ..Atom::default()
            },
            "integer" | "number" => scalar_atom(ScalarKind::Numeric),
            "boolean" => scalar_atom(ScalarKind::Boolean),
            "string" => match spec.get("format").and_then(Value::as_str).unwrap_or("") {
                "" | "byte" => scalar_atom(ScalarKind::String),
                _ => scalar_atom(ScalarKind::Untyped),
            },
            other => {
                self.errors
                    .push(format!("{at}: unrecognized type: '{other}'"));
                scalar_atom(ScalarKind::Untyped)
            }
        }
    }

    /// A property's (or items', or additionalProperties') type: a reference when it is a
    /// `$ref` or an `allOf` of exactly one `$ref`, an inline atom otherwise.
    fn type_ref(&mut self, spec: &Value, preserve: bool, at: &str) -> TypeRef {
        let mut reference = spec.get("$ref").and_then(Value::as_str);
        if reference.is_none()
            && let Some([one]) = spec
                .get("allOf")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
        {
            reference = one.get("$ref").and_then(Value::as_str);
        }
        if let Some(r) = reference {
            let name = r.rsplit('/').next().unwrap_or(r);
            if !name.is_empty() {
                let rel = self.map_relationship(spec, at);
                return TypeRef::Named {
                    name: name.to_string(),
                    relationship: rel,
                };
            }
        }
        TypeRef::inline(self.visit(spec, preserve, at))
    }

    fn map_relationship(&mut self, spec: &Value, at: &str) -> Option<ElementRelationship> {
        match spec.get("x-kubernetes-map-type")? {
            Value::String(s) if s == "atomic" => Some(ElementRelationship::Atomic),
            Value::String(s) if s == "granular" => Some(ElementRelationship::Separable),
            other => {
                self.errors.push(format!("{at}: unknown map type {other}"));
                None
            }
        }
    }

    fn object(&mut self, spec: &Value, preserve: bool, at: &str) -> MapType {
        let mut fields = BTreeMap::new();
        let props = spec.get("properties").and_then(Value::as_object);
        for (name, member) in props.into_iter().flatten() {
            let tr = self.type_ref(member, preserve, &format!("{at}.{name}"));
            fields.insert(
                name.clone(),
                StructField {
                    type_ref: tr,
                    default: member.get("default").cloned(),
                },
            );
        }
        let element_type = match spec.get("additionalProperties") {
            None => {
                if preserve || fields.is_empty() {
                    Some(TypeRef::deduced())
                } else {
                    None
                }
            }
            Some(Value::Bool(true)) => Some(TypeRef::deduced()),
            Some(Value::Bool(false)) => None,
            Some(s @ Value::Object(_)) => Some(self.type_ref(s, preserve, &format!("{at}.*"))),
            Some(other) => {
                self.errors
                    .push(format!("{at}: invalid additionalProperties {other}"));
                None
            }
        };
        MapType {
            fields,
            element_type,
            relationship: self.map_relationship(spec, at).unwrap_or_default(),
        }
    }

    fn list(&mut self, spec: &Value, preserve: bool, at: &str) -> ListType {
        let (relationship, keys) = self.list_relationship(spec, at);
        let element_type = match spec.get("items") {
            Some(items @ Value::Object(_)) => self.type_ref(items, preserve, &format!("{at}[]")),
            Some(Value::Array(items)) if items.len() == 1 => {
                self.type_ref(&items[0], preserve, &format!("{at}[]"))
            }
            Some(_) => {
                self.errors.push(format!(
                    "{at}: structural schema arrays must have exactly one member subtype"
                ));
                TypeRef::deduced()
            }
            None => {
                if spec.get("type").and_then(Value::as_str) == Some("array") {
                    self.errors
                        .push(format!("{at}: `items` must be specified on arrays"));
                }
                TypeRef::untyped_atomic()
            }
        };
        ListType {
            element_type,
            relationship,
            keys,
        }
    }

    fn list_relationship(&mut self, spec: &Value, at: &str) -> (ElementRelationship, Vec<String>) {
        if let Some(t) = spec.get("x-kubernetes-list-type") {
            return match t.as_str() {
                Some("atomic") => (ElementRelationship::Atomic, Vec::new()),
                Some("set") => (ElementRelationship::Associative, Vec::new()),
                Some("map") => match spec.get("x-kubernetes-list-map-keys") {
                    Some(Value::Array(keys)) if keys.iter().all(Value::is_string) => (
                        ElementRelationship::Associative,
                        keys.iter()
                            .filter_map(|k| k.as_str().map(str::to_string))
                            .collect(),
                    ),
                    Some(other) => {
                        self.errors
                            .push(format!("{at}: uninterpreted map keys: {other}"));
                        (ElementRelationship::Associative, Vec::new())
                    }
                    None => {
                        self.errors.push(format!("{at}: missing map keys"));
                        (ElementRelationship::Associative, Vec::new())
                    }
                },
                _ => {
                    self.errors.push(format!("{at}: unknown list type {t}"));
                    (ElementRelationship::Atomic, Vec::new())
                }
            };
        }
        if let Some(strategy) = spec.get("x-kubernetes-patch-strategy") {
            return match strategy.as_str() {
                Some("merge") | Some("merge,retainKeys") => {
                    match spec.get("x-kubernetes-patch-merge-key") {
                        Some(Value::String(k)) => {
                            (ElementRelationship::Associative, vec![k.clone()])
                        }
                        Some(other) => {
                            self.errors
                                .push(format!("{at}: uninterpreted merge key: {other}"));
                            (ElementRelationship::Associative, Vec::new())
                        }
                        None => (ElementRelationship::Associative, Vec::new()),
                    }
                }
                Some("retainKeys") => (ElementRelationship::Atomic, Vec::new()),
                _ => {
                    self.errors
                        .push(format!("{at}: unknown patch strategy {strategy}"));
                    (ElementRelationship::Atomic, Vec::new())
                }
            };
        }
        (ElementRelationship::Atomic, Vec::new())
    }
}

fn scalar_atom(kind: ScalarKind) -> Atom {
    Atom {
        scalar: Some(kind),
        ..Atom::default()
    }
}
